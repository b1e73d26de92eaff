"""The privacy ledger: composition against exact enumeration and dp_accounting, refusal,
crash safety and concurrent writers."""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
from pathlib import Path

import numpy as np
import pytest

from crowdhide.accounting import PrivacyStatement
from crowdhide.accounting.ledger import BudgetExceededError, Ledger, spent


def _worst_pair(eps: float, delta: float) -> tuple[np.ndarray, np.ndarray]:
    """The (ε, δ)-DP pair that dominates every (ε, δ)-DP mechanism (Kairouz et al.)."""
    a = math.exp(eps) / (1 + math.exp(eps))
    p = np.array([delta, (1 - delta) * a, (1 - delta) * (1 - a)])
    q = np.array([0.0, (1 - delta) * (1 - a), (1 - delta) * a])
    return p, q


def _exact_epsilon(gs: list[tuple[float, float]], delta: float) -> float:
    """Optimal composition by enumerating the product of the worst pairs (3^k outcomes)."""
    pairs = [_worst_pair(e, d) for e, d in gs]
    P = np.array(
        [
            math.prod(pq[0][i] for pq, i in zip(pairs, c, strict=True))
            for c in itertools.product(range(3), repeat=len(gs))
        ]
    )
    Q = np.array(
        [
            math.prod(pq[1][i] for pq, i in zip(pairs, c, strict=True))
            for c in itertools.product(range(3), repeat=len(gs))
        ]
    )

    def hockey(e: float) -> float:
        return float(np.maximum(P - math.exp(e) * Q, 0.0).sum())

    if hockey(0.0) <= delta:
        return 0.0
    lo, hi = 0.0, sum(e for e, _ in gs) + 1.0
    if hockey(hi) > delta:
        return math.inf
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if hockey(mid) > delta else (lo, mid)
    return hi


CASES = [
    [(1.0, 0.0)] * 3,
    [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-5)],
    [(0.3, 0.0)] * 6,
    [(1.93, 1e-4), (1.93, 1e-4)],
    [(0.1, 1e-7), (3.0, 0.0), (0.7, 1e-6), (0.2, 0.0)],
]


@pytest.mark.parametrize("gs", CASES)
@pytest.mark.parametrize("delta_budget", [1e-3, 1e-5])
def test_spent_is_sound_and_tight_vs_enumeration(
    gs: list[tuple[float, float]], delta_budget: float
) -> None:
    exact = _exact_epsilon(gs, delta_budget)
    got = spent([PrivacyStatement(epsilon=e, delta=d) for e, d in gs], delta=delta_budget)
    if math.isinf(exact):
        assert math.isinf(got.epsilon)
        return
    assert got.epsilon >= exact - 1e-9  # never below the truth
    assert got.epsilon <= exact + 0.02  # and close to it
    assert got.epsilon <= got.bounds["basic"]


def test_pld_matches_dp_accounting_directly() -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld

    gs = [(0.5, 1e-6), (1.0, 1e-6), (2.0, 1e-5), (1.0, 1e-6)]
    ours = spent([PrivacyStatement(epsilon=e, delta=d) for e, d in gs], delta=1e-4)
    total = None
    for e, d in gs:
        params = pld.common.DifferentialPrivacyParameters(e, d)
        one = pld.from_privacy_parameters(params, value_discretization_interval=1e-3)
        total = one if total is None else total.compose(one)
    assert total is not None
    assert ours.bounds["pld"] == pytest.approx(total.get_epsilon_for_delta(1e-4), abs=1e-9)


def test_refusal_records_nothing(tmp_path: Path) -> None:
    book = Ledger(tmp_path / "ledger.json")
    g = PrivacyStatement(epsilon=1.0, delta=0.0)
    for i in range(5):
        book.charge("pop", g, run=f"r{i}", budget=(5.0, 1e-9) if i == 0 else None)
    before = (tmp_path / "ledger.json").read_bytes()
    with pytest.raises(BudgetExceededError, match=r"refused.*nothing was sent"):
        book.charge("pop", g, run="r5")
    assert (tmp_path / "ledger.json").read_bytes() == before
    # Another population has its own budget.
    book.charge("other", g, run="x", budget=(1.0, 1e-9))
    rows = {r["population"]: r for r in book.summary()}
    assert rows["pop"]["runs"] == 5
    assert rows["pop"]["epsilon_spent"] == pytest.approx(5.0, abs=1e-3)
    assert rows["other"]["epsilon_left"] == pytest.approx(0.0, abs=1e-3)


def test_crash_during_write_keeps_old_ledger(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.json"
    book = Ledger(path)
    book.charge("pop", PrivacyStatement(epsilon=1.0, delta=0.0), run="a")
    before = path.read_bytes()

    def crash(src: str, dst: str) -> None:
        raise OSError("simulated crash before the rename")

    monkeypatch.setattr("crowdhide.accounting.ledger.os.replace", crash)
    with pytest.raises(OSError, match="simulated"):
        book.charge("pop", PrivacyStatement(epsilon=1.0, delta=0.0), run="b")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ledger.json", "ledger.json.lock"]


def _writer(path: str, worker: int, tries: int, accepted: multiprocessing.Queue) -> None:  # type: ignore[type-arg]
    book = Ledger(path)
    ok = 0
    for i in range(tries):
        try:
            book.charge("pop", PrivacyStatement(epsilon=1.0, delta=0.0), run=f"w{worker}-{i}")
            ok += 1
        except BudgetExceededError:
            pass
    accepted.put(ok)


def test_concurrent_writers_never_exceed_budget(tmp_path: Path) -> None:
    path = tmp_path / "ledger.json"
    Ledger(path).charge(
        "pop", PrivacyStatement(epsilon=1.0, delta=0.0), run="first", budget=(7.0, 1e-9)
    )
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_writer, args=(str(path), w, 4, queue)) for w in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
        assert p.exitcode == 0
    accepted = sum(queue.get(timeout=10) for _ in procs)
    state = json.loads(path.read_text())
    runs = state["populations"]["pop"]["runs"]
    assert accepted == 6  # budget 7 at ε = 1 each, one run already charged
    assert len(runs) == 7
    assert len({r["run"] for r in runs}) == 7


def test_a_file_that_is_not_a_ledger_is_a_data_error(tmp_path: Path) -> None:
    from crowdhide.errors import DataError

    binary = tmp_path / "new.parquet"
    binary.write_bytes(bytes(range(256)))  # found by the CLI fuzz: not UTF-8 at all
    with pytest.raises(DataError, match="is not valid JSON"):
        Ledger(binary).summary()
