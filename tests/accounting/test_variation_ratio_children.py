"""The restricted variation-ratio refinement tries a split's children one tier coarser first
(issue 32, s30-piecewise; docs/proofs/mechanism-certificates.md §1q): a child kept there (at
most the reference) is a valid bound of its cell, the certificate stays above the exact split
system, and the piecewise answers are those without the try."""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from crowdhide.accounting.shuffle import _coarse_children, _split_clone, mechanisms
from crowdhide.accounting.shuffle import variation_ratio as module
from crowdhide.accounting.shuffle.query import shuffle_epsilon
from crowdhide.accounting.shuffle.variation_ratio import clone_rates, variation_ratio_log_delta

from .test_variation_ratio import split_system_delta


def _clear() -> None:
    module._clear_caches()
    _split_clone._layout.cache_clear()
    mechanisms._lower_curve.cache_clear()


def _cap(eps0: float) -> float:
    """The piecewise mechanism's largest μ."""
    t = math.exp(eps0 / 2.0)
    return (t * t + 1.0) / (t * (t + 1.0))


def _kept_counter(kept: list[int]) -> Any:
    """``evaluate_requests`` counting the children kept one tier coarser."""
    inner = _coarse_children.evaluate_requests

    def counting(entry: Any, requests: Sequence[Any], at: Any, coarse: Any) -> Any:
        out = inner(entry, requests, at, coarse)
        if coarse is not None:
            tried = coarse.tried(entry, requests)
            kept.extend(i for i in tried if out[i][1] == requests[i][1] - 1)
        return out

    return counting


@pytest.mark.parametrize(("n", "eps0"), [(12, 0.7), (12, 2.0)])
def test_children_kept_coarse_stay_above_the_exact_split_system(
    n: int, eps0: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the try forced at small n (where the window is narrow and it is not made), the
    restricted certificate keeps children one tier coarser and stays above the exact split
    system (every outcome enumerated) on a grid of μ up to the piecewise cap; with the
    informative clone rate raised 1 % inside the certificate the comparison fails."""
    cap = _cap(eps0)
    kept: list[int] = []
    monkeypatch.setattr(module, "_coarse_first", lambda *a, **k: True)
    monkeypatch.setattr(_coarse_children, "evaluate_requests", _kept_counter(kept))
    eps = 0.25 * eps0
    worst = max(
        split_system_delta(n, eps0, float(mu), *clone_rates(float(mu), eps0), eps)
        for mu in np.linspace(0.01, 1.0, 23) * cap
    )
    _clear()
    try:
        cert = math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0, mu_max=cap))
        assert kept  # the rule was exercised
        assert worst <= cert * (1 + 1e-9) + 1e-15
        assert cert <= 1.25 * worst + 1e-12

        def more_informative(mu: float, e0: float) -> tuple[float, float]:
            c_inf, c_zero = clone_rates(mu, e0)
            return 1.01 * c_inf, c_zero

        with monkeypatch.context() as patch:
            patch.setattr(module, "clone_rates", more_informative)
            _clear()
            raised = math.exp(variation_ratio_log_delta(n, eps0, eps, -60.0, mu_max=cap))
            exact = max(
                split_system_delta(n, eps0, float(mu), *clone_rates(float(mu), eps0), eps)
                for mu in (0.98 * cap, 0.995 * cap, cap)
            )
            assert exact > raised * (1 + 1e-9)
    finally:
        _clear()


def test_the_piecewise_answer_is_the_one_without_the_try(monkeypatch: pytest.MonkeyPatch) -> None:
    """At (ε0, n, δ) = (2, 1e3, 1e-10) the refinement keeps two children one tier coarser
    and the certificate (and the refinement's value) equals the one without the try, bit
    for bit; with the keep threshold (``COARSE_MARGIN``, shared with the initial cells'
    tries) 1 % in δ above the reference, the refinement fails the target at its first ε
    and the answer moves (so the equality can fail)."""
    values: list[float] = []
    inner = module._supremum.__wrapped__

    @functools.lru_cache(maxsize=64)  # _clear_caches empties it
    def recorded(*args: Any) -> Any:
        out = inner(*args)
        values.append(out[0])
        return out

    def answer() -> float:
        _clear()
        values.clear()
        return shuffle_epsilon(eps0=2.0, n=1000, delta=1e-10, mechanism="piecewise").epsilon

    monkeypatch.setattr(module, "_supremum", recorded)
    kept: list[int] = []
    with monkeypatch.context() as patch:
        patch.setattr(_coarse_children, "evaluate_requests", _kept_counter(kept))
        with_try, with_values = answer(), list(values)
    assert len(kept) == 2
    with monkeypatch.context() as patch:
        patch.setattr(_coarse_children.CoarseChildren, "tried", lambda *a: [])
        without, without_values = answer(), list(values)
    assert with_try == without
    assert with_values == without_values
    with monkeypatch.context() as patch:
        patch.setattr(module, "COARSE_MARGIN", math.log(1.01))
        assert answer() > with_try
    _clear()


def test_the_try_is_only_where_the_middle_tier_is_held_at_its_blocks() -> None:
    """Beyond ``COARSE_MAX_CLONES`` clones the restricted search tries coarser first only
    where the window asks the middle resolution for more blocks than it takes: at n = 1e9
    with δ = 1e-300 (a wide window), not at δ = 1e-6; the unrestricted search never."""
    cell = (math.log(0.5), math.log(0.6))
    deep, shallow = math.log(1e-300) - 40.0, math.log(1e-6) - 40.0
    assert module._coarse_first(10**9, 4.0, cell, log_tail=deep, restricted=True)
    assert not module._coarse_first(10**9, 4.0, cell, log_tail=shallow, restricted=True)
    assert not module._coarse_first(10**9, 4.0, cell, log_tail=deep, restricted=False)
    points, _, eta = module.SPLIT_TIERS[1]
    assert points * eta > 0.0


@pytest.mark.slow
def test_a_delta_query_is_the_one_without_the_try(monkeypatch: pytest.MonkeyPatch) -> None:
    """At (ε0, n) = (1, 1e6) and the ε that δ = 1e-300 asks, children are kept coarser above
    every other leaf; settled at their own tier the δ answer equals the one without the try
    to the bit (unsettled it was 1.1862e-300 against 1.1254e-300: the settle is needed).
    With the refinement level held at the former clip (0.03) at every tail level: since
    s34-tiny the level follows the fall of log δ below δ = 1e-20, and no child is kept coarser
    at this point any more (nor at 14 other (ε0, n, δ) tried); the settle is checked where
    the try does keep children, as before."""
    from crowdhide.accounting.shuffle.query import shuffle_delta

    monkeypatch.setattr(module, "DEEP_TAIL", -math.inf)

    def delta() -> float:
        _clear()
        return shuffle_delta(
            eps0=1.0, n=10**6, epsilon=0.04310022533109225, mechanism="piecewise"
        ).delta

    kept: list[int] = []
    with monkeypatch.context() as patch:
        patch.setattr(_coarse_children, "evaluate_requests", _kept_counter(kept))
        settled = delta()
    assert kept
    with monkeypatch.context() as patch:
        patch.setattr(_coarse_children.CoarseChildren, "tried", lambda *a: [])
        assert settled == delta()
    with monkeypatch.context() as patch:
        patch.setattr(_coarse_children.CoarseChildren, "settle", lambda self, e, f: e)
        assert delta() > settled
    _clear()
