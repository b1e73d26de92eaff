"""Small workloads shared by the shard-equality tests (local and Ray): diabetes, K-means and
a shuffle-model protocol plan, each reduced to comparable, JSON-able numbers."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._json import jsonable as _jsonable
from crowdhide.backends import execute
from crowdhide.engine import Execution, Transcript

BLOCK = 997  # small blocks: every source group spans several blocks and shards
SEED = 5


def _example(name: str, tmp: Path, **run: Any) -> dict[str, Any]:
    """``crowdhide run example:<name>`` (smaller population) through ``run_spec``."""
    from crowdhide.plans.runner import run_spec
    from crowdhide.plans.spec import load_spec

    spec = load_spec(f"example:{name}")
    rows = {"diabetes": 6000, "kmeans": 3000}[name]
    spec = replace(
        spec,
        data=replace(spec.data, rows=rows),
        query=replace(spec.query, iterations=min(spec.query.iterations, 3)),
        plots=False,
        transcript_csv_max_rows=0,
        block_size=BLOCK,
    )
    out_dir = tmp / f"{name}-{run.get('backend', 'local')}-{run['shards']}"
    report = run_spec(spec, out_dir, **run).to_dict()
    transcript = Transcript.load(Path(report["files"]["transcript"]))
    keep = ("result", "utility", "privacy", "countermeasures", "costs", "routes")
    out = {key: report[key] for key in keep}
    out["execution"] = {k: report["execution"][k] for k in ("block_size", "seed")}
    out["round_target_counts"] = _round_target(transcript)
    out["transcript_digest"] = _digest(transcript)
    if name == "kmeans":
        out["centroids"] = np.load(report["files"]["result"]).tolist()
    return json.loads(json.dumps(_jsonable(out)))


def diabetes(tmp: Path, **run: Any) -> dict[str, Any]:
    return _example("diabetes", tmp, **run)


def kmeans(tmp: Path, **run: Any) -> dict[str, Any]:
    return _example("kmeans", tmp, **run)


def protocol(tmp: Path, **run: Any) -> dict[str, Any]:
    from crowdhide.protocols.engine_plan import shuffle_plan

    users = {"bit": (np.arange(2500) * 7919) % 3 == 0}
    plan = shuffle_plan(
        users,
        randomize=lambda cols: np.asarray(cols["bit"], dtype=np.int64),
        analyze=lambda reports: {"sum": np.array([int(reports.sum())]), "order": reports[:50]},
        shuffle_rng=11,
    )
    out = execute(plan, rng=SEED, block_size=BLOCK, **run)
    del tmp
    result = out.states["analyzer"]
    return {
        "rows": [int(result["sum"][0]), result["order"].tolist()],
        "utility": int(result["sum"][0]) == int(users["bit"].sum()),
        **_traffic(out),
    }


def _round_target(t: Transcript) -> list[list[int]]:
    keys, counts = np.unique(
        np.stack([t.round.astype(np.int64), t.target.astype(np.int64)]), axis=1, return_counts=True
    )
    return [keys[0].tolist(), keys[1].tolist(), counts.tolist()]


def _digest(t: Transcript) -> list[int]:
    """Order-sensitive checksums of the transcript columns (identical transcripts only)."""
    out = []
    for column in (t.round, t.source, t.target, t.size, t.order):
        values = column.astype(np.int64)
        out.append(int((values * (np.arange(len(values)) % 1009 + 1)).sum()))
    return out


def _traffic(out: Execution) -> dict[str, Any]:
    return {
        "routes": {
            k: [v.messages, v.real_delivered, v.dummies, v.senders] for k, v in out.routes.items()
        },
        "round_target_counts": _round_target(out.transcript),
        "transcript_digest": _digest(out.transcript),
    }


WORKLOADS = {"diabetes": diabetes, "kmeans": kmeans, "protocol": protocol}
