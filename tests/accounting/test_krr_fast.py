"""Light blocks of the blocked shuffle sums (``_krr_fast.heavy_blocks``): blocks whose joint
mass is far below the summation tail skip their incomplete betas and are bounded like
outcomes outside a window. That bound must keep every evaluator an upper bound of its
fully evaluated sum, and cost next to nothing."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from crowdhide.accounting.shuffle import _krr_fast as fast
from crowdhide.accounting.shuffle._split_clone import split_clone_log_delta
from crowdhide.accounting.shuffle.variation_ratio import clone_rates


def _split(n: int, eps0: float, eps: float, log_tail: float) -> float:
    c_inf, c_zero = clone_rates(0.6, eps0)
    return split_clone_log_delta(n, math.tanh(eps0 / 2.0), 0.6, c_inf, c_zero, eps, log_tail)


EVALUATORS: dict[str, Callable[[int, float, float, float], float]] = {
    "krr_clone": lambda n, e0, e, t: fast.krr_clone_fast_log_delta(n, 4, e0, e, t),
    "krr_blanket": lambda n, e0, e, t: fast.krr_blanket_log_delta(n, 10, e0, e, t),
    "split_clone": _split,
}


@pytest.mark.parametrize("name", sorted(EVALUATORS))
@pytest.mark.parametrize(
    ("n", "eps0", "eps"), [(300, 1.0, 0.3), (5000, 2.0, 0.25), (10**6, 1.0, 0.01)]
)
def test_light_blocks_keep_the_bound_above_the_full_sum(
    name: str, n: int, eps0: float, eps: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A summation tail only 5 nats below δ makes the light blocks' share visible: bounded
    by their mass they keep the value at or above the full evaluation (dropping them would
    not), and within 1e-3 of it."""
    evaluate = EVALUATORS[name]
    log_tail = evaluate(n, eps0, eps, -60.0) - 5.0
    skipped = evaluate(n, eps0, eps, log_tail)
    monkeypatch.setattr(fast, "LIGHT_MARGIN", math.inf)
    full = evaluate(n, eps0, eps, log_tail)
    assert full - 1e-12 <= skipped <= full + 1e-3, (name, n, skipped, full)


def test_light_blocks_are_most_blocks() -> None:
    """The point of the rule: at n = 1000 most blocks of a split-clone layout are light."""
    import numpy as np

    from crowdhide.accounting.shuffle._split_clone import _layout

    c_inf, c_zero = clone_rates(0.9, 1.0)
    log_tail = math.log(1e-6) - 40.0
    log_w, _, _, log_mass, _, _ = _layout(1000, 0.9, c_inf, c_zero, log_tail, 64, 192)
    heavy = fast.heavy_blocks(log_w[:, None] + log_mass, log_tail)
    assert 0.2 < float(np.mean(heavy)) < 0.7


def test_third_marginal_floor_memo_returns_the_computed_floats() -> None:
    # The floor is kept by value (lru_cache): a kept value must be the one a fresh
    # evaluation gives, and nearby arguments must not share an entry.
    floor = fast.krr_third_marginal_lower_log_delta
    for eps in (0.0, 0.05, 0.1177, 0.11770001, 0.5):
        fresh = floor.__wrapped__(1000, 4, 1.0, eps)
        assert floor(1000, 4, 1.0, eps) == fresh
        assert floor(1000, 4, 1.0, eps) == fresh  # from the memo
    assert floor(1000, 4, 1.0, 0.1) != floor(1000, 5, 1.0, 0.1)
    assert floor(1000, 4, 1.0, 0.1) != floor(1000, 4, 1.0, 0.1 + 1e-9)
