"""Local backend: protected plans answer like DuckDB, dummies never reach a result,
and the emitted traffic follows exactly the certified mechanisms."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.accounting import DiscretePairCurve
from crowdhide.accounting.scrambler.local import local_randomizer_epsilon
from crowdhide.backends import LocalBackend, execute
from crowdhide.engine import Inbox, Transcript
from crowdhide.plans import PlanBuilder, protect
from crowdhide.plans.aggregate import AggregateQuery, aggregate_plan, compare, exact_answer
from crowdhide.plans.data import synth_aggregate

SQL = (
    "SELECT g1, g2, AVG(v), COUNT(*), SUM(v), MIN(v), MAX(v) FROM D "
    "GROUP BY GROUPING SETS ((g1), (g2), (g1, g2))"
)


@pytest.mark.parametrize(
    "countermeasures",
    [
        {},
        {"sigma": 0.3},
        {"sigma": 0.2, "local_dummies": 3},
        {"sigma": 0.4, "per_scrambler": 50, "dummies": 20},
        {"sigma": 0.1, "per_scrambler": 64, "dummies": 30, "cap": True},
        {"sigma": 0.0, "per_scrambler": 100, "dummies": 200},
    ],
)
def test_protected_plan_equals_duckdb_on_the_tuples_it_used(countermeasures) -> None:  # type: ignore[no-untyped-def]
    table = synth_aggregate(rows=3000, attributes=2, intervals=7, distribution="skewed", rng=1)
    query = AggregateQuery.from_sql(SQL)
    setup = aggregate_plan(table, query, compute_nodes=5)
    plan = protect(setup.plan, **countermeasures) if countermeasures else setup.plan
    run = execute(plan, rng=2)
    rows = setup.result_rows(run.states["R"])
    masks = [run.used[r] for r in setup.routes]
    check = compare(rows, exact_answer(table, query, masks=masks), query)
    assert check["groups_missing"] == 0
    assert check["groups_extra"] == 0
    assert max(check["max_rel_error"].values()) < 1e-12
    sigma = countermeasures.get("sigma", 0.0)
    for mask in masks:  # real tuples kept w.p. 1 - σ + σ/T (footnote 5)
        assert 0.0 < mask.mean() <= 1.0
        if sigma == 0.0:
            assert mask.all()
    if not countermeasures:
        full = compare(rows, exact_answer(table, query), query)
        assert max(full["max_rel_error"].values()) < 1e-12


def test_dummies_never_reach_a_result() -> None:
    S, T = 4000, 6
    true = np.arange(S) % T
    seen: dict[str, np.ndarray] = {}

    def record(inbox: Inbox, rng: np.random.Generator) -> dict[str, np.ndarray]:
        d = inbox.only("S->C")
        seen["payload"], seen["target"] = d.payload, d.target
        return {}

    for cm in (
        {"sigma": 0.5, "local_dummies": 2},
        {"sigma": 0.5, "per_scrambler": 40, "dummies": 25},
    ):
        b = PlanBuilder().sources("S", {"t": true}).compute("C", size=T, process=record)
        b.route("S", "C", by=lambda s: s["t"])
        run = execute(protect(b.build(), **cm), rng=3)
        assert (seen["payload"] >= 0).all()
        assert np.array_equal(true[seen["payload"]], seen["target"])  # real data, right node
        assert len(np.unique(seen["payload"])) == len(seen["payload"])
        stats = run.routes["S->C"]
        assert stats.real_delivered == len(seen["payload"])
        assert stats.messages == len(run.transcript)
        assert stats.dummies > 0
        assert stats.messages == stats.real_delivered + stats.dummies + (
            S if "per_scrambler" in cm else 0
        )


def test_all_messages_of_a_route_have_the_same_size() -> None:
    table = synth_aggregate(rows=500, attributes=1, intervals=5, rng=0)
    setup = aggregate_plan(
        table,
        AggregateQuery.from_sql("SELECT g1, AVG(v) FROM D GROUP BY g1"),
        compute_nodes=5,
        message_size=96,
    )
    run = execute(protect(setup.plan, sigma=0.3, per_scrambler=50, dummies=10), rng=0)
    assert set(run.transcript.size.tolist()) == {96}


def _set_distribution(T: int, sigma: float, d: int, t: int) -> dict[tuple[int, ...], float]:
    """Exact law of R_σ^d(t) as a set of d+1 targets, by enumerating the algorithm."""
    law: dict[tuple[int, ...], float] = {}
    for first in range(T):
        p_first = (1 - sigma) * (first == t) + sigma / T
        others = [x for x in range(T) if x != first]
        subsets = list(itertools.combinations(others, d))
        for extra in subsets:
            key = tuple(sorted((first, *extra)))
            law[key] = law.get(key, 0.0) + p_first / len(subsets)
    return law


@pytest.mark.parametrize("T", [2, 3, 4, 5, 6])
@pytest.mark.parametrize("sigma", [0.1, 0.5, 0.9])
def test_theorem2_is_the_exact_epsilon_of_the_local_randomizer(T: int, sigma: float) -> None:
    for d in range(T - 1):
        p = _set_distribution(T, sigma, d, 0)
        q = _set_distribution(T, sigma, d, 1)
        keys = sorted(p)
        curve = DiscretePairCurve.from_probabilities([p[k] for k in keys], [q[k] for k in keys])
        assert local_randomizer_epsilon(targets=T, sigma=sigma, dummies=d) == pytest.approx(
            curve.max_loss, rel=1e-9
        )
        # A deliberately wrong variant (d instead of d+1 in the denominator) must fail.
        if d > 0:
            wrong = math.log1p((1 - sigma) * T / (sigma * d))
            assert wrong != pytest.approx(curve.max_loss, rel=1e-6)


def test_engine_emits_exactly_the_certified_local_randomizer() -> None:
    # Sources with the same true target: the multiset of observed target sets follows R_σ^d.
    S, T, sigma, d = 30_000, 4, 0.3, 1
    b = PlanBuilder().sources("S", {"t": np.zeros(S, dtype=np.int64)})
    b.compute("C", size=T, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["t"])
    run = execute(protect(b.build(), sigma=sigma, local_dummies=d), rng=5)
    src, dst = run.transcript.between("S", "C")
    order = np.lexsort((dst, src))
    pairs = dst[order].reshape(S, d + 1)
    assert (pairs[:, 0] != pairs[:, 1]).all()  # distinct targets
    law = _set_distribution(T, sigma, d, 0)
    for key, p in law.items():
        observed = np.mean((pairs[:, 0] == key[0]) & (pairs[:, 1] == key[1]))
        assert abs(observed - p) < 5 * math.sqrt(p * (1 - p) / S)
    # Send order is uniform: the real message is first about half the time.
    first = run.transcript.order[run.transcript.target == run.transcript.groups["C"][0]]
    assert 0.4 < np.mean(first == 0) < 0.6


def test_scrambler_outputs_are_shuffled_counts_with_uniform_dummies() -> None:
    S, T, n, d = 20_000, 5, 100, 40
    b = PlanBuilder().sources("S", {"t": np.zeros(S, dtype=np.int64)})
    b.compute("C", size=T, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["t"])
    run = execute(protect(b.build(), sigma=0.0, per_scrambler=n, dummies=d), rng=7)
    t = run.transcript
    src, dst = t.between("S", "S->C#scramblers")
    assert np.array_equal(dst, src // n)  # data-independent assignment
    src, dst = t.between("S->C#scramblers", "C")
    counts = np.bincount(dst, minlength=T)
    # every real message goes to target 0; dummies uniform: E[count_j] = (S/n) d / T, j > 0
    expected = S // n * d / T
    assert counts[0] == pytest.approx(S + expected, rel=0.05)
    assert counts[1:] == pytest.approx(np.full(T - 1, expected), rel=0.1)
    orders = t.order[(t.source >= t.groups["S->C#scramblers"][0])]
    assert orders.max() == n + d - 1


def test_capped_scrambler_respects_the_cap_and_feasibility() -> None:
    S, T, n, d = 400, 3, 20, 30
    b = PlanBuilder().sources("S", {"t": np.zeros(S, dtype=np.int64)})
    b.compute("C", size=T, process=lambda inbox, rng: {})
    b.route("S", "C", by=lambda s: s["t"])
    run = execute(protect(b.build(), per_scrambler=n, dummies=d, cap=True), rng=0)
    src, dst = run.transcript.between("S->C#scramblers", "C")
    per = np.zeros((S // n, T), dtype=int)
    np.add.at(per, (src, dst), 1)
    assert per.max() <= n
    assert (per.sum(axis=1) == n + d).all()
    with pytest.raises(ValueError, match="capped scrambler cannot place dummy"):
        execute(protect(b.build(), per_scrambler=n, dummies=n * T, cap=True), rng=0)


def test_transcript_roundtrip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    table = synth_aggregate(rows=100, attributes=1, intervals=3, rng=0)
    setup = aggregate_plan(
        table, AggregateQuery.from_sql("SELECT g1, COUNT(*) FROM D GROUP BY g1"), compute_nodes=3
    )
    run = execute(setup.plan, rng=0, backend=LocalBackend())
    path = run.transcript.save(tmp_path / "t.npz")
    back = Transcript.load(path)
    assert np.array_equal(back.target, run.transcript.target)
    assert back.groups == run.transcript.groups
    csv = run.transcript.save(tmp_path / "t.csv")
    assert csv.read_text().splitlines()[0] == "round,source,target,size,order"
    assert len(csv.read_text().splitlines()) == len(run.transcript) + 1
    assert run.transcript.group_of(np.array([0, 100])).tolist() == ["S", "C0"]


def test_execution_is_reproducible_under_a_seed() -> None:
    table = synth_aggregate(rows=1000, attributes=2, intervals=4, rng=0)
    setup = aggregate_plan(table, AggregateQuery.from_sql(SQL), compute_nodes=3)
    plan = protect(setup.plan, sigma=0.3, per_scrambler=100, dummies=5)
    a, b = execute(plan, rng=11), execute(plan, rng=11)
    assert np.array_equal(a.transcript.target, b.transcript.target)
    assert np.array_equal(a.transcript.order, b.transcript.order)


def test_declared_domains_strings_and_count_of_a_text_column() -> None:
    table = {
        "city": np.array(["lyon", "paris", "paris", "nice"], dtype=object),
        "note": np.array(["a", "b", "c", "d"], dtype=object),
        "x": np.array([1.0, 2.0, 3.0, 4.0]),
    }
    q = AggregateQuery.from_sql("SELECT city, COUNT(note), SUM(x) FROM T GROUP BY city")
    setup = aggregate_plan(
        table, q, compute_nodes=2, domains={"city": ["lyon", "nice", "paris", "rome"]}
    )
    assert setup.plan.group("C0").size == 2
    run = execute(setup.plan, rng=0)
    rows = {r["city"]: r for r in setup.result_rows(run.states["R"])}
    assert rows["paris"]["count(note)"] == 2.0
    assert rows["paris"]["sum(x)"] == 5.0
    assert compare(list(rows.values()), exact_answer(table, q), q)["groups_missing"] == 0
    with pytest.raises(ValueError, match="values outside its declared domain"):
        aggregate_plan(table, q, compute_nodes=2, domains={"city": ["lyon", "paris"]})
    with pytest.raises(ValueError, match="must be numeric"):
        aggregate_plan(
            table,
            AggregateQuery.from_sql("SELECT city, SUM(note) FROM T GROUP BY city"),
            compute_nodes=2,
        )
    with pytest.raises(ValueError, match="no column"):
        aggregate_plan(
            table,
            AggregateQuery.from_sql("SELECT age, SUM(x) FROM T GROUP BY age"),
            compute_nodes=2,
        )


@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELECT A, AVG(I) FROM D WHERE I > 3 GROUP BY A", "WHERE/HAVING"),
        ("SELECT A, MEDIAN(I) FROM D GROUP BY A", "count/sum/avg/min/max"),
        ("SELECT A, B, AVG(I) FROM D GROUP BY A", "outside GROUP BY"),
        ("SELECT A, COUNT(DISTINCT I) FROM D GROUP BY A", "DISTINCT"),
        ("SELECT AVG(I) FROM D", "GROUP BY at least one column"),
        ("SELECT A FROM D GROUP BY A", "at least one aggregate"),
        ("SELECT 1; SELECT 2", "single SELECT"),
    ],
)
def test_unsupported_sql_is_a_clear_error(sql: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        AggregateQuery.from_sql(sql)


class _ListBackend:
    """A minimal independent implementation of the backend contract (three methods):
    blocks run in reverse order and every batch travels as flat arrays (a frame)."""

    name = "list"

    def open(self, job):  # type: ignore[no-untyped-def]
        self.job, self.mail = job, {}
        self.offsets = job.plan.node_offsets()

    def run_group(self, group):  # type: ignore[no-untyped-def]
        from crowdhide.engine import MessageBatch, split, step
        from crowdhide.engine.backend import report_of

        reports = []
        for block in reversed(self.job.blocks(group)):
            frames = self.mail.pop((group, block.index), [])
            inbox = [MessageBatch.from_arrays(f) for f in reversed(frames)]
            result = step(self.job.plan, block, inbox, seed=self.job.seed)
            for batch in result.batches:
                size = self.job.plan.group(batch.receiver).size
                for index, part in split(batch, size, self.job.block_size):
                    self.mail.setdefault((batch.receiver, index), []).append(part.to_arrays())
            reports.append(report_of(self.job, result, self.offsets))
        return reports

    def close(self):  # type: ignore[no-untyped-def]
        self.mail = {}


def test_backend_contract_is_enough_for_another_backend() -> None:
    from crowdhide.engine import Backend

    table = synth_aggregate(rows=2000, attributes=2, intervals=5, rng=0)
    setup = aggregate_plan(table, AggregateQuery.from_sql(SQL), compute_nodes=4)
    plan = protect(setup.plan, sigma=0.2, per_scrambler=50, dummies=10)
    backend = _ListBackend()
    assert isinstance(backend, Backend)
    ours = execute(plan, rng=4, backend=backend, block_size=300)
    local = execute(plan, rng=4, block_size=300)
    assert setup.result_rows(ours.states["R"]) == setup.result_rows(local.states["R"])
    for field in ("round", "source", "target", "size", "order"):
        assert np.array_equal(getattr(ours.transcript, field), getattr(local.transcript, field))
