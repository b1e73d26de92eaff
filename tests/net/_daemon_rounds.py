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
    spans = [(k, e - s) for k, (s, e) in enumerate(zip(starts, ends, strict=True))]
    spans = [(k, v) for k, v in spans if not math.isnan(v)]
    return {
        "span": [v for _, v in spans],
        "period": [b - a for a, b in itertools.pairwise(starts)],
        "reply": replies,
        # The round index of each span and period: the observer knows it (it counts rounds),
        # so :func:`compare` may compare like rounds with like (``strata``).
        "span_round": [float(k) for k, _ in spans],
        "period_round": [float(k) for k in range(count - 1)],
    }


def compare(
    x: Sequence[float],
    y: Sequence[float],
    *,
    length: float,
    strata: tuple[Sequence[float], Sequence[float]] | None = None,
) -> dict[str, float]:
    """Two-sample test of a feature: means, sds, Mann–Whitney U p-value (two-sided), a
    permutation p-value on the difference of means (20,000 draws, fixed seed), the
    difference of means and its share of the round ``length``.

    ``strata`` (a label per value of ``x`` and of ``y``, e.g. the round index): the labels
    x/y are permuted only among values of one stratum. Under "the wire does not depend on the
    data" the values of a stratum are exchangeable whatever the strata's own levels, so the
    test keeps its level; what the strata differ by (a plan's rounds alternate sends to a
    compute node and its answers) leaves the null distribution, so a difference confined to
    some rounds stands out instead of drowning in the spread between rounds.

    Five rounds of different lengths, ``x`` 0.5 shorter in each: within rounds, the sign
    pattern is the most extreme 2 of the 2⁵ label swaps (p = 1/16); unstratified, the spread
    between rounds hides it.

    >>> x, y, k = [1.0, 2.0, 3.0, 4.0, 5.0], [1.5, 2.5, 3.5, 4.5, 5.5], [0, 1, 2, 3, 4]
    >>> round(compare(x, y, length=1.0, strata=(k, k))["p_permutation"], 2)
    0.06
    >>> compare(x, y, length=1.0)["p_permutation"] > 0.5
    True
    """
    from scipy.stats import mannwhitneyu

    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    diff = float(a.mean() - b.mean())
    both = np.concatenate([a, b])
    if strata is None:
        groups = np.zeros(both.size)
    else:
        groups = np.concatenate([np.asarray(s, dtype=float) for s in strata])
        if groups.shape != both.shape:
            raise ValueError(f"strata: {groups.size} labels for {both.size} values")
    # Sorted by stratum, a draw permutes the x/y labels inside each stratum's slice.
    order = np.argsort(groups, kind="stable")
    both, groups = both[order], groups[order]
    is_x = (order < a.size).astype(float)
    cuts = np.flatnonzero(np.diff(groups)) + 1
    rng = np.random.default_rng(20261129)
    draws, batch, hits = 20_000, 1000, 0
    for _ in range(draws // batch):
        labels = np.concatenate(
            [rng.permuted(np.tile(part, (batch, 1)), axis=1) for part in np.split(is_x, cuts)],
            axis=1,
        )
        d = labels @ both / a.size - (1.0 - labels) @ both / b.size
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


#: Order of the runs of the two real fractions, with fixed-length rounds and without: short
#: runs in alternation (ABBA ABBA), so a drift of the machine's load during the test falls on
#: both fractions alike. Run one after the other (33 rounds each), a drift of 0.7 ms in the
#: daemons' reply latency between the two runs once gave a permutation p = 1.5·10⁻⁴ on
#: ``reply``; and a drift can as well hide the work the runs without fixed rounds must show.
ORDER = ("1.0", "0.05", "0.05", "1.0", "1.0", "0.05", "0.05", "1.0")
#: Iterations of each of those runs (2 · 5 − 1 = 9 rounds: 36 a fraction).
RUN_ITERATIONS = 5


def timing_cases(per_message: float = 5e-4) -> list[dict[str, Any]]:
    """Real fractions 1.0 (σ = 0) and 0.05 (σ = 1), compute nodes busy ``per_message`` s
    per real message, with fixed-length rounds of :data:`ROUND` seconds and, to show the
    test can fail, the same runs without them (test hook); each in alternating short runs
    (:data:`ORDER`: cases of one name are parts of one sample)."""
    sigma = {"1.0": 0.0, "0.05": 1.0}
    base = {"plan": "chain", "per_message": per_message, "block": 20, "iterations": RUN_ITERATIONS}
    return [
        {
            **base,
            "name": f"{'fixed' if fixed else 'unfixed'} real {name}",
            "sigma": sigma[name],
            "fixed": fixed,
            "round_seconds": ROUND if fixed else None,
        }
        for fixed in (True, False)
        for name in ORDER
    ]


def compare_fractions(cases: Mapping[str, Any], kind: str, feature: str) -> dict[str, float]:
    """:func:`compare` of ``feature`` between the real fractions 1.0 and 0.05 of the
    ``kind`` ("fixed" or "unfixed") runs, round by round for ``span`` and ``period``."""
    many, few = (cases[f"{kind} real {r}"]["features"] for r in ("1.0", "0.05"))
    strata = None
    if f"{feature}_round" in many:
        strata = (many[f"{feature}_round"], few[f"{feature}_round"])
    return compare(many[feature], few[feature], length=ROUND, strata=strata)


def merge_parts(reports: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The reports of runs of one name (parts of one sample, :data:`ORDER`) as one
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
            print(feature, compare_fractions(found, "fixed", feature))
    else:
        raise SystemExit(f"unknown command {sys.argv[1]!r}")
