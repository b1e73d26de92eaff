"""Traffic analysis of the captured wire of node daemons running the main job (diabetes).

Two neighbouring data sets differ in one user's row: user 0's age range is ``KEYS[0]`` in
x and ``KEYS[1]`` in x', owned by compute nodes on different daemons. Three daemons in
network namespaces (:class:`tests.net._daemon_rounds.Session`) serve x while three more, on
a second bridge, serve x' (the same deployment otherwise); each trio runs the job ``runs``
times with the planner's countermeasures (the certificate's, fixed-length rounds) and
``contrast_runs`` times without any, its bridge captured.

What the observer takes from the capture: per link between daemons, frame-length records
towards the listener minus those back (welcome/welcome and ``END``/``ACK`` cancel: the data
frames, :func:`crowdhide.audit.wire_link_counts`' rule), and the rounds' periods
(:func:`tests.net._daemon_rounds.round_features`). Knowing the placement (public, in the
signed plan), it scores a run by the frames on the link into the daemon of x's target minus
those into the daemon of x''s, from the daemon that sends user 0's message on that hop (the
source's daemon, or the scrambler's); and by the mean round period. Both scores are audited
with :func:`crowdhide.audit.audit_scores` (a held-out threshold, Clopper–Pearson bounds:
a lower bound on ε that holds with 95 % confidence).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np

from tests.net._daemon_rounds import PORT, Session, round_features, split_rows
from tests.net._pcap import Record, tls_records

ROWS, BLOCK, NODES = 300, 5, 3
#: Round length (an option, the same for every run; 1.2 s overran once on a loaded machine).
ROUND = 2.0
#: Age-range codes of user 0 in x and x' (compute nodes 0 and 5 of group C0: two blocks of
#: 5 nodes, on two daemons).
KEYS = (0, 5)
EXAMPLE = Path(__file__).resolve().parents[2] / "src/crowdhide/examples/diabetes.toml"


def spec_path(root: Path) -> Path:
    text = EXAMPLE.read_text(encoding="utf-8").replace("rows = 20000", f"rows = {ROWS}")
    assert f"rows = {ROWS}" in text
    path = root / "diabetes.toml"
    path.write_text(text, encoding="utf-8")
    return path


@functools.cache
def _prepared(path: str) -> Any:
    from crowdhide.plans.runner import prepare
    from crowdhide.plans.spec import load_spec

    return prepare(load_spec(Path(path)))


def audit_plan(case: Mapping[str, Any]) -> Any:
    """The main job's plan, with the certificate's countermeasures or none."""
    from crowdhide.plans.query import load_query
    from crowdhide.plans.spec import load_spec

    if case["protected"]:
        return _prepared(case["spec"]).plan
    return load_query(load_spec(Path(case["spec"]))).plan


def neighbours(plan: Any, root: Path) -> tuple[list[Path], list[Path]]:
    """Row files of x and x' (user 0's ``__key0`` set to ``KEYS[0]`` / ``KEYS[1]``)."""
    out = []
    for tag, key in zip(("x", "y"), KEYS, strict=True):
        groups = []
        for g in plan.groups:
            if g.role == "source":
                data = {c: np.array(v, copy=True) for c, v in (g.data or {}).items()}
                data["__key0"][0] = key
                groups.append(SimpleNamespace(name=g.name, role=g.role, size=g.size, data=data))
        out.append(split_rows(SimpleNamespace(groups=groups), root, NODES, BLOCK, tag))
    return out[0], out[1]


def link_counts(records: list[Record], case: dict[str, Any], daemons: list[str]) -> np.ndarray:
    """Data frames per link between daemons in the case's window (module docstring)."""
    frame = int(case["frame"]) + 17
    index = {ip: i for i, ip in enumerate(daemons)}
    out = np.zeros((len(daemons), len(daemons)), dtype=np.int64)
    for r in records:
        if not case["began"] <= r.time <= case["ended"]:  # the run's window (same clock)
            continue
        if r.kind != 23 or r.length != frame or r.src_ip not in index or r.dst_ip not in index:
            continue
        if r.dst == PORT:
            out[index[r.src_ip], index[r.dst_ip]] += 1
        elif r.src == PORT:
            out[index[r.dst_ip], index[r.src_ip]] -= 1
    return out


def target_links(plan: Any, protected: bool) -> tuple[tuple[int, int], tuple[int, int]]:
    """``(sender daemon, daemon of x's target)`` and the same for x' (the placement is
    public)."""
    from crowdhide.backends.tls.placement import Placement
    from crowdhide.engine.backend import Job

    job = Job(plan=plan, seed=0, block_size=BLOCK)
    thirds = [(ROWS * i // NODES, ROWS * (i + 1) // NODES) for i in range(NODES)]
    place = Placement(hosts=NODES, rule="spread", ranges=tuple(thirds))
    route = next(r for r in plan.routes if r.name == "S->C0")
    if protected and route.protection is not None and route.protection.scrambler is not None:
        sender = place.host(job, route.protection.scrambler.group, 0)
    else:
        sender = place.host(job, "S", 0)
    by = route.by
    state = {c: np.asarray(v)[:1] for c, v in (plan.group("S").data or {}).items()}
    hosts = []
    for key in KEYS:
        state["__key0"] = np.array([key])
        node = int(np.asarray(by(state))[0])
        hosts.append(place.host(job, "C0", node // BLOCK))
    return (sender, hosts[0]), (sender, hosts[1])


def _data_set_runs(root: Path, tag: str, rows: list[Path], todo: list[dict[str, Any]]) -> Any:
    """Every case of ``todo`` on data set ``tag``: its own bridge and daemons
    (:class:`Session`, namespaces ``...a<tag>``), captured; each report with its frames per
    link between daemons and its round features; and the bridge's prefix."""
    root.mkdir(parents=True, exist_ok=True)
    with Session(root, NODES, tag=f"a{tag}") as session:
        daemons = session.bridge.addresses[:NODES]
        coordinator = session.bridge.addresses[NODES]
        session.start(rows)
        pcap = root / f"audit-{tag}.pcap"
        session.capture(pcap)
        done = session.run(todo, timeout=60.0 * len(todo) + 300)
        session.stop_capture()
        prefix = session.bridge.prefix
    gaps: list[tuple[str, int, str, int]] = []
    records = tls_records(pcap, gaps)
    if gaps:
        raise RuntimeError(f"the capture lost bytes of the TCP streams {gaps}")
    for report in done:
        report["links"] = link_counts(records, report, daemons).tolist()
        report["features"] = round_features(
            records, report, daemons=daemons, coordinator=coordinator
        )
    return done, prefix


def run_audit(root: Path, *, runs: int, contrast_runs: int | None = None) -> dict[str, Any]:
    """``runs`` captured runs per data set with the countermeasures, ``contrast_runs``
    (default ``runs``) without; the audit of each score (:func:`_audit`).

    The two data sets run at once, each on its own bridge with its own daemons (the runs
    are rounds of fixed length, idle most of the time: 2 x 3 daemons' work fits in them);
    the contrast runs without any countermeasure, fixed-length rounds included (its score
    is the link counts, which the schedule does not change; the rounds would only wait)."""
    counts = {True: runs, False: runs if contrast_runs is None else contrast_runs}
    root.mkdir(parents=True, exist_ok=True)
    spec = spec_path(root)
    certificate = _prepared(str(spec)).certificate.privacy
    plans = {p: audit_plan({"protected": p, "spec": str(spec)}) for p in (True, False)}
    x_rows, y_rows = neighbours(plans[False], root)
    cases = [
        {
            "plan": "audit",
            "protected": p,
            "spec": str(spec),
            "block": BLOCK,
            "fixed": p,
            "round_seconds": ROUND if p else None,
        }
        for p in (True, False)
    ]
    todo = [c for c in cases for _ in range(counts[c["protected"]])]
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            tag: pool.submit(_data_set_runs, root / tag, tag, rows, todo)
            for tag, rows in (("x", x_rows), ("y", y_rows))
        }
    reports = {tag: f.result()[0] for tag, f in futures.items()}
    # Both bridges' names: the same prefix, then the data set's letter.
    (prefix,) = {f.result()[1][:-1] for f in futures.values()}
    out: dict[str, Any] = {
        "certificate": [certificate.epsilon, certificate.delta],
        "prefix": prefix,
    }
    for protected in (True, False):
        key = "protected" if protected else "unprotected"
        out[key] = _job_audit(plans[protected], protected, reports, counts, certificate.delta)
    return out


def _job_audit(
    plan: Any,
    protected: bool,
    reports: dict[str, list[dict[str, Any]]],
    counts: dict[bool, int],
    delta: float,
) -> dict[str, Any]:
    """One job's (with or without countermeasures) scores per data set and their audits."""
    link_x, link_y = target_links(plan, protected)
    scores = {}
    for tag in ("x", "y"):
        mine = [r for r in reports[tag] if r["protected"] == protected]
        scores[tag] = {
            "links": [
                np.asarray(r["links"])[link_x] - np.asarray(r["links"])[link_y] for r in mine
            ],
            "timing": [float(np.mean(r["features"]["period"])) for r in mine],
            "lost": sum(r["missing"]["messages_lost"] for r in mine),
        }
    entry: dict[str, Any] = {"links": [link_x, link_y], "runs": counts[protected]}
    mine = [r for tag in ("x", "y") for r in reports[tag] if r["protected"] == protected]
    entry["wire_mismatch"] = [m for m in map(_mismatch, mine) if m is not None]
    for score in ("links", "timing"):
        sx = np.asarray(scores["x"][score], dtype=float)
        sy = np.asarray(scores["y"][score], dtype=float)
        entry[score] = {**_audit(sx, sy, delta), "x": sx.tolist(), "y": sy.tolist()}
    entry["lost"] = scores["x"]["lost"] + scores["y"]["lost"]
    return entry


def _audit(sx: np.ndarray, sy: np.ndarray, delta: float) -> dict[str, Any]:
    """Held-out accuracy of the attack and, from 20 runs per data set, the lower bound on ε
    (:func:`crowdhide.audit.audit_scores`). Fewer runs (the contrast without
    countermeasures, which only has to show the attack works) give the accuracy alone: the
    first half of each sample picks the threshold (midway between the halves' means) and
    side, the second half is scored."""
    from crowdhide.audit import audit_scores

    if min(len(sx), len(sy)) >= 20:
        result = audit_scores(sx, sy, delta=delta)
        wrong = result.false_positive_rate + result.false_negative_rate
        return {"epsilon_lower": float(result.privacy.epsilon), "accuracy": 1.0 - 0.5 * wrong}
    hx, hy = len(sx) // 2, len(sy) // 2
    if min(hx, hy) < 2:
        raise ValueError(f"a held-out accuracy needs 4 runs per data set, got {len(sx)}, {len(sy)}")
    mx, my = float(np.mean(sx[:hx])), float(np.mean(sy[:hy]))
    side = 1.0 if mx >= my else -1.0
    cut = (mx + my) / 2
    right = np.sum(side * (sx[hx:] - cut) > 0) + np.sum(side * (sy[hy:] - cut) < 0)
    return {"epsilon_lower": None, "accuracy": float(right) / (len(sx) - hx + len(sy) - hy)}


def _mismatch(report: dict[str, Any]) -> dict[str, Any] | None:
    """``None`` if the capture's frames per link between two daemons equal what the
    coordinator counted delivered on that link (links inside one daemon never reach the
    bridge), else both matrices and the run's window, to read in the failure."""
    wire = np.asarray(report["links"])
    counted = np.zeros_like(wire)
    for link, n in report["delivered"].items():
        a, b = (int(v) for v in link.split("->"))
        if a != b:
            counted[a, b] = n
    np.fill_diagonal(wire, 0)
    if np.array_equal(wire, counted):
        return None
    keys = ("began", "ended", "epochs", "lateness")
    return {"wire": wire.tolist(), "counted": counted.tolist(), **{k: report[k] for k in keys}}
