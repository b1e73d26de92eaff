"""Small workloads shared by the shard-equality tests (local and Ray): diabetes, K-means and
a shuffle-model protocol plan, each reduced to comparable, JSON-able numbers."""

from __future__ import annotations

from typing import Any

import numpy as np

from crowdhide.engine import Execution, execute

BLOCK = 997  # small blocks: every source group spans several blocks and shards
SEED = 5


def diabetes(**run: Any) -> dict[str, Any]:
    from crowdhide.plans import protect
    from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, compare, exact_answer
    from crowdhide.plans.data import synth_diabetes

    table = synth_diabetes(rows=6000, rng=7)
    query = AggregateQuery.from_sql(
        "SELECT age_range, bmi, AVG(insulin), COUNT(*) FROM D "
        "GROUP BY GROUPING SETS ((age_range), (bmi))"
    )
    setup = aggregate_plan(table, query, compute_nodes=6)
    plan = protect(setup.plan, sigma=0.3, per_scrambler=300, dummies=40)
    out = execute(plan, rng=SEED, block_size=BLOCK, **run)
    rows = setup.result_rows(out.states["R"])
    masks = [out.used[r] for r in setup.routes]
    utility = compare(rows, exact_answer(table, query, masks=masks), query)
    return {"rows": rows, "utility": utility, **_traffic(out)}


def kmeans(**run: Any) -> dict[str, Any]:
    from crowdhide.plans import protect
    from crowdhide.plans.data import synth_kmeans
    from crowdhide.plans.kmeans import kmeans_plan, nearest, rand_index

    X, y = synth_kmeans(rows=3000, dim=4, clusters=4, rng=1)
    setup = kmeans_plan(X, k=4, iterations=3, rng=2, relay_per=500)
    plan = protect(setup.plan, sigma=0.5, per_scrambler=500, dummies=20)
    out = execute(plan, rng=SEED, block_size=BLOCK, **run)
    centroids = setup.centroids(out.states["R"])
    return {
        "rows": centroids.tolist(),
        "utility": rand_index(y, nearest(X, centroids)),
        **_traffic(out),
    }


def protocol(**run: Any) -> dict[str, Any]:
    from crowdhide.protocols.engine_plan import shuffle_plan

    users = {"bit": (np.arange(2500) * 7919) % 3 == 0}
    plan = shuffle_plan(
        users,
        randomize=lambda cols: np.asarray(cols["bit"], dtype=np.int64),
        analyze=lambda reports: {"sum": np.array([int(reports.sum())]), "order": reports[:50]},
        shuffle_rng=11,
    )
    out = execute(plan, rng=SEED, block_size=BLOCK, **run)
    result = out.states["analyzer"]
    return {
        "rows": [int(result["sum"][0]), result["order"].tolist()],
        "utility": int(result["sum"][0]) == int(users["bit"].sum()),
        **_traffic(out),
    }


def _traffic(out: Execution) -> dict[str, Any]:
    t = out.transcript
    per_round_target = np.unique(
        np.stack([t.round.astype(np.int64), t.target.astype(np.int64)]), axis=1, return_counts=True
    )
    return {
        "routes": {
            k: [v.messages, v.real_delivered, v.dummies, v.senders] for k, v in out.routes.items()
        },
        "round_target_counts": [per_round_target[0].tolist(), per_round_target[1].tolist()],
        "transcript_digest": [
            int(c.astype(np.int64).sum() * 31 + (c.astype(np.int64) * np.arange(len(c))).sum())
            for c in (t.round, t.source, t.target, t.size, t.order)
        ],
        "messages": len(t),
    }


WORKLOADS = {"diabetes": diabetes, "kmeans": kmeans, "protocol": protocol}
