"""Node daemons in network namespaces, captured on the bridge: what the wire shows per round.

A :class:`Session` builds a bridge with ``nodes`` daemon namespaces and one coordinator
namespace (:class:`tests.net.netns.Bridge`), enrols them (:func:`tests.net._deploy.enrol`),
starts the daemons (``python -m tests.net._daemon_rounds serve ...``: ``crowdhide node
serve`` with the test programs of :mod:`tests.net._programs` registered), captures the bridge
with ``tcpdump`` (whole packets), and runs cases with ``python -m tests.net._daemon_rounds
coordinate`` inside the coordinator's namespace: a :class:`Coordinator` per case, its
report as JSON. :func:`round_features` cuts the capture into rounds — the observer's view
only: addresses, ports, TLS record lengths and times:

* ``span``: first data frame of a round (on any link between daemons) to its last ACK;
* ``period``: first data frame of a round to the first of the next;
* ``reply``: per daemon and request of the coordinator sent between two rounds' ACKs and
  bursts (a ``Run``), the time to the daemon's first record back (its ``Ran``).

:func:`compare` is the two-sample test on one feature. Everything started is stopped by pid
and every namespace deleted (:meth:`Session.close`).
"""

from __future__ import annotations

import itertools
import json
import math
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tests.net._deploy import Deployment, _env, enrol
from tests.net._pcap import Record, tls_records
from tests.net.netns import Bridge

PORT = 7000
ROOT = Path(__file__).resolve().parents[2]


# -- runs in the coordinator's namespace -----------------------------------------------------
def chain_plan(sigma: float, *, per_message: float, iterations: int | None = None) -> Any:
    """The rounds plan of :mod:`tests.net._wire_netns` (equal frame counts for every σ; real
    fraction 1 − σ + σ/20), its compute nodes busy ``per_message`` s per real message;
    ``iterations`` (default that module's): 2 · iterations − 1 rounds."""
    from crowdhide.engine.library import named
    from crowdhide.engine.plan import PlanBuilder
    from crowdhide.plans.semantics import protect
    from tests.net._wire_netns import CHAIN, ITERATIONS, TARGETS

    iterations = ITERATIONS if iterations is None else iterations
    b = PlanBuilder()
    g = np.arange(CHAIN) % TARGETS
    for i in range(iterations):
        b.sources(f"src@{i}", {"g": g}, device="S")
        b.compute(
            f"C@{i}",
            size=TARGETS,
            process=named("test.busy", route=f"src@{i}->C@{i}", per_message=per_message),
        )
        b.route(f"src@{i}", f"C@{i}", by=named("route.column", column="g"), name=f"src@{i}->C@{i}")
        if i + 1 < iterations:
            b.route(f"C@{i}", f"src@{i + 1}", kind="fanout")
    return protect(b.build(), sigma=sigma)


def _coordinate(config: Path, out: Path) -> None:
    """Run every case of ``config`` with a :class:`Coordinator`; write what each reported."""
    import tests.net._programs  # noqa: F401  (the test programs, by name)
    from crowdhide.backends import execute
    from crowdhide.backends.tls.coordinator import Coordinator

    class Unfixed(Coordinator):
        """Fixed-length rounds disabled (test hook): frames leave when processing ends."""

        def open(self, job: Any) -> None:
            super().open(job)
            self.ledger.rounds = None  # the schedule lives in the ledger
            self.round_seconds = None

    spec = json.loads(config.read_text(encoding="utf-8"))
    results = []
    for case in spec["cases"]:
        plan = _plan(case)
        kind = Coordinator if case.get("fixed", True) else Unfixed
        backend = kind(
            directory=Path(spec["directory"]),
            ca=Path(spec["ca"]),
            state=Path(spec["state"]),
            round_seconds=case.get("round_seconds"),
        )
        began = time.time()
        try:
            execute(plan, rng=case.get("rng", 1), backend=backend, block_size=case["block"])
        finally:
            backend.close()
        results.append(
            {
                **case,
                "began": began,
                "ended": time.time(),
                "frame": backend.frame,
                "round_seconds": backend.round_seconds,
                "epochs": backend.ledger.epoch,
                "delivered": {f"{a}->{b}": n for (a, b), n in backend.ledger.delivered.items()},
                "lateness": backend.lateness,
                "missing": backend.missing.to_dict(),
            }
        )
    out.write_text(json.dumps(results), encoding="utf-8")


def _plan(case: Mapping[str, Any]) -> Any:
    if case["plan"] == "chain":
        return chain_plan(
            case["sigma"], per_message=case["per_message"], iterations=case.get("iterations")
        )
    from tests.net._daemon_audit import audit_plan

    return audit_plan(case)


# -- runs in the test --------------------------------------------------------------------------
def split_rows(plan: Any, root: Path, nodes: int, block: int, tag: str = "") -> list[Path]:
    """One data file per daemon: contiguous whole blocks of every source group."""
    from crowdhide.backends.tls.node_rows import write_rows

    sizes = {g.size for g in plan.groups if g.role == "source"}
    (rows,) = sizes
    blocks = -(-rows // block)
    out = []
    for i in range(nodes):
        first, stop = blocks * i // nodes * block, min(rows, blocks * (i + 1) // nodes * block)
        columns = {
            g.name: {c: np.asarray(v)[first:stop] for c, v in (g.data or {}).items()}
            for g in plan.groups
            if g.role == "source"
        }
        out.append(write_rows(root / f"rows{tag}-{i}.npz", first=first, columns=columns))
    return out


@dataclass
class Session:
    """A bridge, enrolled daemons and a capture (see the module docstring)."""

    root: Path
    nodes: int
    #: Suffix of the bridge's namespace names (two sessions at once need two).
    tag: str = "r"
    #: Test of the test: seconds per real message the daemons answer late (_leaky_daemons).
    leak: float = 0.0

    def __post_init__(self) -> None:
        self.bridge = Bridge(self.nodes + 1, tag=self.tag)
        self.daemons: list[subprocess.Popen[bytes]] = []
        self.dump: subprocess.Popen[bytes] | None = None
        try:
            addresses = [f"{a}:{PORT}" for a in self.bridge.addresses[: self.nodes]]
            coordinator = f"{self.bridge.addresses[self.nodes]}:9"
            self.deployment: Deployment = enrol(self.root, addresses, coordinator=coordinator)
        except BaseException:
            self.close()
            raise

    def start(self, rows: Sequence[Path]) -> None:
        """Start one daemon per node with its rows (stops the ones running first)."""
        self.stop_daemons()
        dep = self.deployment
        for i, state in enumerate(dep.nodes):
            command = [
                *("ip", "netns", "exec", self.bridge.nodes[i]),
                sys.executable,
                *("-m", "tests.net._daemon_rounds", "serve"),
                *(("--leak", str(self.leak)) if self.leak else ()),
                *("node", "serve"),
                *("--listen", dep.addresses[i], "--state", str(state), "--data", str(rows[i])),
                *("--directory", str(dep.directory), "--ca", str(dep.ca)),
            ]
            with (self.root / f"daemon{i}.log").open("ab") as log:
                proc = subprocess.Popen(
                    command, cwd=ROOT, stdout=subprocess.PIPE, stderr=log, env=_env()
                )
            self.daemons.append(proc)
        for i, proc in enumerate(self.daemons):
            assert proc.stdout is not None
            line = proc.stdout.readline().decode()  # one line once listening, EOF on error
            if "listening on" not in line:
                text = (self.root / f"daemon{i}.log").read_text(errors="replace")
                raise RuntimeError(f"daemon {i} did not start: {text[-2000:]}")

    def capture(self, pcap: Path) -> None:
        self.dump = self.bridge.capture(pcap, snaplen=0)

    def run(self, cases: list[dict[str, Any]], timeout: float = 900.0) -> list[dict[str, Any]]:
        """Run ``cases`` from the coordinator's namespace; their reports."""
        dep = self.deployment
        config, out = self.root / "cases.json", self.root / "report.json"
        spec = {
            "directory": str(dep.directory),
            "ca": str(dep.ca),
            "state": str(dep.coordinator),
            "cases": cases,
        }
        config.write_text(json.dumps(spec), encoding="utf-8")
        command = [
            *("ip", "netns", "exec", self.bridge.nodes[self.nodes]),
            sys.executable,
            *("-m", "tests.net._daemon_rounds", "coordinate", str(config), str(out)),
        ]
        done = subprocess.run(
            command, cwd=ROOT, env=_env(), capture_output=True, text=True, timeout=timeout
        )
        if done.returncode != 0:
            raise RuntimeError(f"coordinator failed: {done.stderr[-3000:]}")
        result: list[dict[str, Any]] = json.loads(out.read_text(encoding="utf-8"))
        return result

    def stop_capture(self) -> None:
        """Stop the capture; a kernel drop is a harness failure (the TLS records past the
        gap cannot be cut), named here rather than as a wrong count later."""
        if self.dump is not None:
            dump, self.dump = self.dump, None
            dropped = self.bridge.stop_capture(dump)
            if dropped:
                raise RuntimeError(f"tcpdump: the kernel dropped {dropped} packets of the capture")

    def stop_daemons(self) -> None:
        for proc in self.daemons:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.daemons:
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
            if proc.stdout is not None:
                proc.stdout.close()
        self.daemons = []

    def close(self) -> None:
        """Stop the capture and the daemons (by pid), delete every namespace."""
        try:
            try:
                self.stop_capture()
            finally:
                self.stop_daemons()  # even when interrupted while stopping the capture
        finally:
            self.bridge.close()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# -- the observer's view ------------------------------------------------------------------------
def _exchanges(
    records: Sequence[Record], daemon: str, coordinator: str
) -> list[tuple[float, float]]:
    """``(request, answer)`` times of the coordinator's control exchanges with ``daemon``:
    a request is the coordinator's first record after the daemon's last answer, the answer
    the daemon's first record after it (each waits for the other)."""
    out: list[tuple[float, float]] = []
    asked: float | None = None
    for r in records:
        if r.src_ip == coordinator and r.dst_ip == daemon and asked is None:
            asked = r.time
        elif r.src_ip == daemon and r.dst_ip == coordinator and asked is not None:
            out.append((asked, r.time))
            asked = None
    return out


def round_features(
    records: Sequence[Record], case: Mapping[str, Any], *, daemons: Sequence[str], coordinator: str
) -> dict[str, list[float]]:
    """``span``, ``period`` and ``reply`` of every round of ``case`` (module docstring),
    from the capture's records between the case's start and end.

    A control exchange with a daemon is a ``Flush`` when the daemon sends frame-length
    records to its peers between request and answer (every round, every link carries at
    least its ``END``), a ``Run`` otherwise; round ``k`` is every daemon's ``k``-th Flush."""
    frame = int(case["frame"]) + 17
    inside = [r for r in records if case["began"] <= r.time <= case["ended"] and r.kind == 23]
    peers, seen = [], set()
    for r in inside:
        if r.length != frame or coordinator in (r.src_ip, r.dst_ip):
            continue
        direction = (r.src_ip, r.src, r.dst_ip, r.dst)
        if direction not in seen:  # each direction's first frame is its link's welcome
            seen.add(direction)
            continue
        peers.append(r)
    control = [r for r in inside if coordinator in (r.src_ip, r.dst_ip)]
    rounds: list[list[tuple[float, float]]] = []
    replies: list[float] = []
    for d in daemons:
        out = np.array([r.time for r in peers if r.src_ip == d and r.dst == PORT])
        acks = np.array([r.time for r in peers if r.dst_ip == d and r.src == PORT])
        mine, runs = [], []
        for asked, answered in _exchanges(control, d, coordinator):
            sent = out[(out > asked) & (out < answered)]
            if sent.size:
                got = acks[(acks > asked) & (acks < answered)]
                mine.append((float(sent[0]), float(got[-1]) if got.size else math.nan))
            elif mine:
                runs.append(answered - asked)
        rounds.append(mine)
        # A Run after the last Flush (the result's) and the setup before the first: left out.
        replies.extend(runs[: max(0, len(mine) - 1)])
    count = min(len(m) for m in rounds)
    starts = [min(m[k][0] for m in rounds) for k in range(count)]
    ends = [max(m[k][1] for m in rounds) for k in range(count)]
    return {
        "span": [e - s for s, e in zip(starts, ends, strict=True) if not math.isnan(e)],
        "period": [b - a for a, b in itertools.pairwise(starts)],
        "reply": replies,
    }


def compare(x: Sequence[float], y: Sequence[float], *, length: float) -> dict[str, float]:
    """Two-sample test of a feature: means, sds, Mann–Whitney U p-value (two-sided), a
    permutation p-value on the difference of means (20,000 draws, fixed seed), the
    difference of means and its share of the round ``length``."""
    from scipy.stats import mannwhitneyu

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    diff = float(a.mean() - b.mean())
    rng = np.random.default_rng(20261129)
    both, draws = np.concatenate([a, b]), 20_000
    hits = 0
    for _ in range(draws // 1000):
        perm = rng.permuted(np.tile(both, (1000, 1)), axis=1)
        d = perm[:, : a.size].mean(axis=1) - perm[:, a.size :].mean(axis=1)
        hits += int(np.sum(np.abs(d) >= abs(diff) - 1e-12))
    se = math.sqrt(a.var(ddof=1) / a.size + b.var(ddof=1) / b.size)
    return {
        "n_x": float(a.size),
        "n_y": float(b.size),
        "mean_x": float(a.mean()),
        "mean_y": float(b.mean()),
        "sd_x": float(a.std(ddof=1)),
        "sd_y": float(b.std(ddof=1)),
        "p_mannwhitney": float(mannwhitneyu(a, b, alternative="two-sided").pvalue),
        "p_permutation": (hits + 1) / (draws + 1),
        "diff": diff,
        "se": se,
        "diff_percent": 100.0 * abs(diff) / length,
    }


#: Round length of the timing cases: one option for both plans (the default is measured on
#: the machine at each run's start, so two runs would get lengths a few % apart).
ROUND = 1.6


#: Order of the fixed-round runs of the two real fractions: short runs in alternation
#: (ABBA ABBA), so a drift of the machine's load during the test falls on both fractions
#: alike. Run one after the other (33 rounds each), a drift of 0.7 ms in the daemons'
#: reply latency between the two runs once gave a permutation p = 1.5·10⁻⁴ on ``reply``.
FIXED_ORDER = ("1.0", "0.05", "0.05", "1.0", "1.0", "0.05", "0.05", "1.0")
#: Iterations of each of those runs (2 · 5 − 1 = 9 rounds: 36 a fraction, as before).
FIXED_ITERATIONS = 5


def timing_cases(per_message: float = 2e-4) -> list[dict[str, Any]]:
    """Real fractions 1.0 (σ = 0) and 0.05 (σ = 1), compute nodes busy ``per_message`` s
    per real message, with fixed-length rounds of :data:`ROUND` seconds in alternating short
    runs (:data:`FIXED_ORDER`: cases of one name are parts of one sample) and, to show the
    test can fail, without them (test hook; one run each)."""
    sigma = {"1.0": 0.0, "0.05": 1.0}
    base = {"plan": "chain", "per_message": per_message, "block": 20}
    cases: list[dict[str, Any]] = [
        {
            **base,
            "name": f"fixed real {name}",
            "sigma": sigma[name],
            "fixed": True,
            "round_seconds": ROUND,
            "iterations": FIXED_ITERATIONS,
        }
        for name in FIXED_ORDER
    ]
    for name in ("1.0", "0.05"):
        cases.append(
            {
                **base,
                "name": f"unfixed real {name}",
                "sigma": sigma[name],
                "fixed": False,
                "round_seconds": None,
            }
        )
    return cases


def merge_parts(reports: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The reports of runs of one name (parts of one sample, :data:`FIXED_ORDER`) as one
    case: features concatenated, every part's report under ``parts``."""
    out: dict[str, dict[str, Any]] = {}
    for report in reports:
        case = out.setdefault(report["name"], {"parts": [], "features": {}})
        case["parts"].append(report)
        for feature, values in report["features"].items():
            case["features"].setdefault(feature, []).extend(values)
    return out


def run_timing(root: Path, *, nodes: int = 3, leak: float = 0.0) -> dict[str, Any]:
    """The timing cases over ``nodes`` daemons, captured; features per case. ``leak``
    (test of the test): daemons answer a ``Run`` that many seconds per real message of
    the round late (:func:`_leaky_daemons`)."""
    root.mkdir(parents=True, exist_ok=True)
    cases = timing_cases()
    plan = chain_plan(0.0, per_message=0.0)  # the rows only
    with Session(root, nodes, leak=leak) as session:
        session.start(split_rows(plan, root, nodes, cases[0]["block"]))
        pcap = root / "rounds.pcap"
        session.capture(pcap)
        reports = session.run(cases)
        session.stop_capture()
        daemons = session.bridge.addresses[:nodes]
        coordinator = session.bridge.addresses[nodes]
        prefix = session.bridge.prefix
    records = tls_records(pcap)
    for report in reports:
        report["features"] = round_features(
            records, report, daemons=daemons, coordinator=coordinator
        )
    return {"cases": merge_parts(reports), "prefix": prefix}


def _leaky_daemons(per_message: float) -> None:
    """Test of the test: a daemon answers a ``Run`` ``per_message`` s per real message its
    busy programs got since the last answer after the scheduled time (a leak the reply
    test must see); patched in this process only (``serve`` with ``--leak``)."""
    import asyncio

    from crowdhide.backends.tls import control as ctl
    from crowdhide.backends.tls.daemon import Daemon
    from tests.net import _programs

    dispatch = Daemon.dispatch

    async def leaky(self: Daemon, message: Any, coordinator: bytes) -> Any:
        reply = await dispatch(self, message, coordinator)
        if isinstance(message, ctl.Run) and isinstance(reply, ctl.Ran):
            real, _programs.REAL[0] = _programs.REAL[0], 0
            await asyncio.sleep(per_message * real)
        return reply

    Daemon.dispatch = leaky  # type: ignore[method-assign]


if __name__ == "__main__":
    if sys.argv[1] == "serve":
        import tests.net._programs  # noqa: F401  (registers the test programs)
        from crowdhide.cli import entry

        if sys.argv[2] == "--leak":
            _leaky_daemons(float(sys.argv[3]))
            del sys.argv[2:4]
        sys.argv = ["crowdhide", *sys.argv[2:]]
        entry()
    elif sys.argv[1] == "coordinate":
        _coordinate(Path(sys.argv[2]), Path(sys.argv[3]))
    elif sys.argv[1] == "leak":  # test of the test: `leak DIR SECONDS_PER_REAL_MESSAGE`
        found = run_timing(Path(sys.argv[2]), leak=float(sys.argv[3]))["cases"]
        for feature in ("span", "period", "reply"):
            many, few = (found[f"fixed real {r}"]["features"][feature] for r in ("1.0", "0.05"))
            print(feature, compare(many, few, length=ROUND))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]!r}")
