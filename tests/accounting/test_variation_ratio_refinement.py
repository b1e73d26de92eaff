"""The refinement of the ``variation_ratio`` certificate (issue 32 (a), (c)).

* soundness and sharpness at small n: the certificate is above the exact split clone system
  (enumerated outcome by outcome, ``test_variation_ratio.split_system_delta``) on a grid of
  μ, within 1 % of it, and a 1 % lower top / mixture bound (the bound every cell near μ = 1
  rests on) falls below it;
* tightness: within 0.1 % in ε of the FMT23 pair (the value Wang et al. give) on a grid,
  and never below it;
* no state: the answers are the same bit for bit whatever the order of the queries and the
  state of the caches.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle import _split_clone
from crowdhide.accounting.shuffle import variation_ratio as module
from crowdhide.accounting.shuffle.generic import shuffle_bound_curve, shuffle_epsilon
from crowdhide.accounting.shuffle.variation_ratio import (
    VariationRatio,
    clone_rates,
    variation_ratio_log_delta,
)
from tests.accounting.test_variation_ratio import split_system_delta

#: (n, ε0, ε/ε0) of the small-n comparisons.
SMALL = [(8, 1.5, 0.5), (20, 0.5, 0.5), (40, 1.0, 0.2), (60, 1.5, 0.3)]
#: μ near the top, where the supremum is (the exact system is maximal at μ = 1 here).
MUS = (0.9, 0.98, 0.99, 0.995, 0.999, 1.0)


def exact_supremum(n: int, eps0: float, eps: float) -> float:
    return max(split_system_delta(n, eps0, mu, *clone_rates(mu, eps0), eps) for mu in MUS)


def clear_caches() -> None:
    module._clear_caches()
    _split_clone._layout.cache_clear()


@pytest.mark.parametrize(("n", "eps0", "frac"), SMALL)
def test_within_a_per_cent_of_the_exact_split_system(n: int, eps0: float, frac: float) -> None:
    eps = frac * eps0
    worst = exact_supremum(n, eps0, eps)
    cert = math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0))
    assert worst <= cert * (1 + 1e-9)
    assert cert <= 1.01 * worst  # measured 1.0004-1.004


@pytest.mark.parametrize(("n", "eps0", "frac"), SMALL)
def test_a_top_bound_one_per_cent_lower_is_caught(
    n: int, eps0: float, frac: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The one-rate top system (the top cell, and the mixture bound of every cell) lowered
    by 1 % in δ gives a value below the exact system: the comparison above can fail."""
    eps = frac * eps0
    worst = exact_supremum(n, eps0, eps)
    top = module._top_log_delta
    monkeypatch.setattr(module, "_top_log_delta", lambda *a: top(*a) + math.log(0.99))
    module._supremum.cache_clear()  # values computed with the true bound (the patch
    # wraps the cached top system, whose own values stay right)
    try:
        assert math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0)) < worst
    finally:
        module._supremum.cache_clear()  # no perturbed value outlives the patch


@pytest.mark.parametrize(
    ("eps0", "n", "delta"),
    [
        *((e, n, d) for e in (0.5, 1.0, 4.0) for n in (1000, 10**9) for d in (1e-6, 1e-10)),
        (6.0, 10**4, 1e-10),  # 1.0027x with MAX_EVALUATIONS = 96, 1.0004x at 160
    ],
)
def test_within_a_tenth_of_a_per_cent_of_the_fmt23_value(eps0: float, n: int, delta: float) -> None:
    """Issue 32 (a): the refinement spends its evaluations where the supremum is (was
    1.0008-1.0077x with a fixed cap of 96 evaluations; now at most 1.0006x measured)."""
    got = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    beta = 2.0 / (math.exp(eps0) + 1.0)
    fmt23_at_got = pairs.clone_pair_log_delta(n, eps0, beta, got.epsilon, math.log(delta) - 40)
    assert math.exp(fmt23_at_got) <= delta * (1 + 1e-6)  # never below the FMT23 pair ...
    ref = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="feldman2023", k=2, lower=False)
    assert got.epsilon <= 1.001 * ref.epsilon  # ... and within 0.1 % of it


def test_answers_do_not_depend_on_query_order_or_cache_state() -> None:
    """Issue 32 (c): one curve asked in two orders, the first from cold caches and the
    second from the caches the first left, gives the same floats bit for bit (the former
    code started each evaluation from the previous one's cells: δ(0.1) after δ(0.3) was
    0.0061993 against 0.0062761 first, n = 200, ε0 = 1); so do evaluations of one
    :class:`VariationRatio` at jumping ε against fresh objects."""
    n, eps0 = 200, 1.0
    epsilons = [0.3, 0.1, 0.45, 0.3]
    deltas = [1e-6, 1e-9, 1e-6]

    def ask(order: list[float], deltas: list[float]) -> tuple[dict[float, float], ...]:
        curve = shuffle_bound_curve(bound="variation_ratio", eps0=eps0, n=n)
        return {e: curve.delta(e) for e in order}, {d: curve.epsilon(d) for d in deltas}

    clear_caches()
    first = ask(epsilons, deltas)
    second = ask(epsilons[::-1], deltas[::-1])
    assert first == second
    clear_caches()
    shared = VariationRatio(n, eps0)
    jumping = [shared(e, -60.0) for e in epsilons]
    clear_caches()
    fresh = [VariationRatio(n, eps0)(e, -60.0) for e in reversed(epsilons)][::-1]
    assert jumping == fresh
    assert np.all(np.isfinite(jumping))


def _supremum(n: int, eps0: float, eps: float, log_tail: float) -> tuple[float, dict[int, int]]:
    """The refinement's value from cold caches, and its cell evaluations per tier."""
    clear_caches()
    counts: dict[int, int] = {}
    inner = module._cells_log_delta

    def counting(
        n: int,
        eps0: float,
        requests: list[tuple[tuple[float, float], int]],
        *rest: float,
        **named: float,
    ) -> list[float]:
        for _, tier in requests:  # the cells of a batched round, each at its tier
            counts[tier] = counts.get(tier, 0) + 1
        return inner(n, eps0, requests, *rest, **named)

    module._cells_log_delta = counting  # type: ignore[assignment]
    try:
        return module._supremum(n, eps0, 1.0, eps, log_tail)[0], counts
    finally:
        module._cells_log_delta = inner
        clear_caches()


#: (n, ε0, δ) where initial cells are kept one tier coarser, and where a margin of 1 % in δ
#: above the reference changes the result (measured: +7.5e-4 and +8.4e-4 in log δ).
COARSE_CASES = [(10**4, 1.0, 1e-6), (10**6, 6.0, 1e-6)]


@pytest.mark.parametrize(("n", "eps0", "delta"), COARSE_CASES)
def test_cells_kept_coarse_do_not_change_the_value(
    n: int, eps0: float, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 item 1: initial cells tried one tier coarser first and kept there when at
    most the reference (``COARSE_MARGIN = 0``) give the value the finer tiers give, bit for
    bit, with fewer finest-tier evaluations; kept up to 1 % in δ above the reference, they
    raise it (so the equality can fail)."""
    eps = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="feldman2023", k=2, lower=False)
    args = (n, eps0, eps.epsilon, math.log(delta) - 40.0)
    value, counts = _supremum(*args)
    with monkeypatch.context() as patch:
        patch.setattr(module, "_coarse_first", lambda *a, **k: False)
        finest, finest_counts = _supremum(*args)
    assert value == finest
    top = len(module.SPLIT_TIERS) - 1
    assert counts.get(top, 0) < finest_counts[top]
    with monkeypatch.context() as patch:
        patch.setattr(module, "COARSE_MARGIN", math.log(1.01))
        assert _supremum(*args)[0] > finest


@pytest.mark.parametrize(("eps0", "n", "delta"), [(2.0, 10**4, 1e-50), (1.0, 10**6, 1e-100)])
def test_the_slack_at_small_delta_costs_at_most_eps_rtol(
    eps0: float, n: int, delta: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 32 (s34-tiny): below δ ~ 1e-20 the level sits the fall of log δ over a relative
    step EPS_RTOL in ε above the reference (0.16 at δ = 1e-100 here), no longer clipped to
    0.03. The answer is still a passing point above the FMT23 pair, and at most EPS_RTOL of ε
    above the answer with the old clip (here +2.1e-4 and +2.0e-4). With the slack thirty times
    the fall the refinement stops earlier and this fails (checked by hand: +5.9e-3 at
    (2, 1e4, 1e-50); ten times gives +3.5e-4, still within)."""
    got = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    assert module._slack(n, eps0, 1.0, got.epsilon, math.log(delta) - 40)[0] > 0.03
    beta = 2.0 / (math.exp(eps0) + 1.0)
    fmt23_at_got = pairs.clone_pair_log_delta(n, eps0, beta, got.epsilon, math.log(delta) - 40)
    assert math.exp(fmt23_at_got) <= delta * (1 + 1e-6)
    monkeypatch.setattr(module, "SLACK_CAP", module.SLACK_RANGE[1])
    module._clear_caches()
    try:
        clipped = shuffle_epsilon(eps0=eps0, n=n, delta=delta, bound="variation_ratio", lower=False)
    finally:
        module._clear_caches()
    assert got.epsilon <= clipped.epsilon * (1.0 + module.EPS_RTOL)
