"""s35-pmf (issue 32): crowdhide's own PLD PMFs (``accounting.pld_pmf``) give dp_accounting's
floats, exactly, for every operation crowdhide uses: composition (direct and FFT), the
R-fold composition by repeated squaring, δ(ε) (scalar and vector), ε(δ), the PMF and
(ε, δ)-pair constructions and the conversions both ways. dp_accounting is imported here only.
"""

from __future__ import annotations

import itertools
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf, privacy_loss_distribution

from crowdhide.accounting import pld_pmf as own
from crowdhide.accounting.composition import repeated_squaring

STEPS = (1e-4, 2e-3, 0.37)
INFINITY = (0.0, 1e-12, 0.3)
TRUNCATION = own.TAIL_MASS_TRUNCATION


def _masses(rng: np.random.Generator, size: int, infinity: float, spread: int) -> dict[int, float]:
    """``size`` grid indices (shuffled order, gaps between them) with masses summing to
    ``1 − infinity``; a few masses far below the tail truncation so that tails get cut."""
    keys = rng.choice(np.arange(-spread, spread), size=size, replace=False)
    values = rng.dirichlet(np.full(size, 0.3)) * (1.0 - infinity)
    if size > 4:
        values[rng.choice(size, size=size // 4, replace=False)] *= 1e-17
    return {int(k): float(v) for k, v in zip(keys, values, strict=True)}


def _pair(masses: dict[int, float], step: float, inf: float, pess: bool, dense: bool) -> tuple:
    """The same PMF as dp_accounting's and as crowdhide's (sparse, or dense over its range)."""
    sparse = own.SparsePmf(step, dict(masses), inf, pess)
    theirs = pld_pmf.SparsePLDPmf(dict(masses), step, inf, pess)
    if dense:
        return own.to_dense(sparse), theirs.to_dense_pmf()
    return sparse, theirs


def _same(ours: own.Pmf, theirs: pld_pmf.PLDPmf) -> None:
    """Field for field, float for float (the mapping's order too)."""
    assert ours.step == theirs._discretization
    assert ours.pessimistic == theirs._pessimistic_estimate
    assert ours.infinity_mass == theirs._infinity_mass
    if isinstance(ours, own.SparsePmf):
        assert isinstance(theirs, pld_pmf.SparsePLDPmf)
        assert list(ours.masses.items()) == list(theirs._loss_probs.items())
    else:
        assert isinstance(theirs, pld_pmf.DensePLDPmf)
        assert ours.lower == theirs._lower_loss
        assert np.array_equal(ours.probs, np.asarray(theirs._probs))


CASES = [
    (seed, size, step, inf, pess, dense)
    for seed, (size, step, inf, pess, dense) in enumerate(
        itertools.product((1, 2, 7, 40, 1200), STEPS, INFINITY, (True, False), (False, True))
    )
]


def _case(seed: int, size: int, step: float, inf: float, pess: bool, dense: bool) -> tuple:
    rng = np.random.default_rng(seed)
    spread = max(2 * size, 10)
    first = _pair(_masses(rng, size, inf, spread), step, inf, pess, dense)
    second_size = max(1, size // 3)
    second = _pair(_masses(rng, second_size, inf / 2, spread), step, inf / 2, pess, dense)
    return first, second


@pytest.mark.parametrize(("seed", "size", "step", "inf", "pess", "dense"), CASES)
def test_composition_is_dp_accountings(
    seed: int, size: int, step: float, inf: float, pess: bool, dense: bool
) -> None:
    (a, a_ref), (b, b_ref) = _case(seed, size, step, inf, pess, dense)
    _same(own.compose_pmfs(a, b), pld_pmf.compose_pmfs(a_ref, b_ref, TRUNCATION))
    _same(own.compose_pmfs(a, a), pld_pmf.compose_pmfs(a_ref, a_ref, TRUNCATION))


@pytest.mark.parametrize("rounds", [1, 2, 3, 10, 1000])
@pytest.mark.parametrize(("seed", "size", "step", "inf", "pess", "dense"), CASES[::7])
def test_repeated_squaring_is_dp_accountings(
    rounds: int, seed: int, size: int, step: float, inf: float, pess: bool, dense: bool
) -> None:
    """The R-fold composition crowdhide makes (:class:`PldCurve.self_compose`: repeated
    squaring) against the same squarings done by dp_accounting's ``compose_pmfs``."""
    if rounds == 1000 and size > 40:
        pytest.skip("long: the 40-point cases cover R = 1000")
    (a, a_ref), _ = _case(seed, size, step, inf, pess, dense)
    try:
        theirs = repeated_squaring(
            a_ref, rounds, lambda x, y: pld_pmf.compose_pmfs(x, y, TRUNCATION)
        )
    except IndexError:  # all finite mass below the truncation (0.7^1000): nothing is kept
        with pytest.raises(IndexError):
            repeated_squaring(a, rounds, own.compose_pmfs)
        return
    ours = repeated_squaring(a, rounds, own.compose_pmfs)
    _same(ours, theirs)
    lib = privacy_loss_distribution.PrivacyLossDistribution
    _check_queries(own.LossDistribution(ours), lib(theirs))


def _epsilons(pld: own.LossDistribution) -> list[float]:
    """ε's below, on and between the grid points, and above the top loss."""
    pmf = own.to_dense(pld.remove)
    top = (pmf.lower + pmf.size - 1) * pmf.step
    grid = [(pmf.lower + i) * pmf.step for i in range(0, pmf.size, max(1, pmf.size // 7))]
    return sorted({0.0, *[max(e, 0.0) for e in grid], top, top * 1.5 + 1.0, 0.01, 0.3, 2.0})


def _outcome(query: Callable[[], object]) -> tuple[str, object]:
    """A query's value (an array as a tuple, NaN as a string) or the type of error it raised.
    Losses up to ~900 overflow ``exp`` in both implementations alike: warnings are ignored
    here and the results compared."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        try:
            value = query()
        except (OverflowError, ValueError, ZeroDivisionError) as error:
            return "raised", type(error).__name__
    if isinstance(value, np.ndarray):
        return "array", tuple("nan" if np.isnan(v) else float(v) for v in value)
    number = float(value)  # type: ignore[arg-type]
    return "value", "nan" if np.isnan(number) else number


def _check_queries(ours: own.LossDistribution, theirs: Any) -> None:
    epsilons = _epsilons(ours)
    for eps in epsilons:
        mine = _outcome(lambda e=eps: ours.delta_for_epsilon(e))
        assert mine == _outcome(lambda e=eps: theirs.get_delta_for_epsilon(e))
    mine = _outcome(lambda: ours.deltas_for_epsilons(epsilons))
    assert mine == _outcome(lambda: theirs.get_delta_for_epsilon(epsilons))
    for delta in (1e-300, 1e-15, 1e-10, 1e-6, 1e-3, 0.1, 0.5, 0.9):
        mine = _outcome(lambda d=delta: ours.epsilon_for_delta(d))
        assert mine == _outcome(lambda d=delta: theirs.get_epsilon_for_delta(d))


@pytest.mark.parametrize(("seed", "size", "step", "inf", "pess", "dense"), CASES)
def test_queries_are_dp_accountings(
    seed: int, size: int, step: float, inf: float, pess: bool, dense: bool
) -> None:
    (a, a_ref), (b, b_ref) = _case(seed, size, step, inf, pess, dense)
    lib = privacy_loss_distribution.PrivacyLossDistribution
    _check_queries(own.LossDistribution(a), lib(a_ref))
    _check_queries(own.LossDistribution(a, b), lib(a_ref, b_ref))  # remove and add differ
    _check_queries(own.LossDistribution(b, a), lib(b_ref, a_ref))


@pytest.mark.parametrize(("seed", "size", "step", "inf", "pess", "dense"), CASES[::5])
def test_conversions_keep_every_float(
    seed: int, size: int, step: float, inf: float, pess: bool, dense: bool
) -> None:
    (a, a_ref), (b, _) = _case(seed, size, step, inf, pess, dense)
    for pld in (own.LossDistribution(a), own.LossDistribution(a, b)):
        exported = own.to_dp_accounting(pld)
        _same(pld.remove, exported._pmf_remove)
        assert exported._symmetric == pld.symmetric
        back = own.from_dp_accounting(exported)
        _same(back.remove, exported._pmf_remove)
        _same(back.add if back.add is not None else back.remove, exported._pmf_add)
    _same(
        own.from_dp_accounting(privacy_loss_distribution.PrivacyLossDistribution(a_ref)).remove,
        a_ref,
    )


@pytest.mark.parametrize("size", [1, 999, 1000, 1001, 3000])
def test_create_pmf_is_dp_accountings(size: int) -> None:
    """Sparse up to 1000 entries, dense above (zeros in the gaps)."""
    masses = _masses(np.random.default_rng(size), size, 0.01, 2 * size + 10)
    ours = own.create_pmf(masses, 1e-4, 0.01, True)
    _same(ours, pld_pmf.create_pmf(masses, 1e-4, 0.01, True))
    assert isinstance(ours, own.SparsePmf) == (size <= 1000)


@pytest.mark.parametrize(("epsilon", "delta"), [(0.0, 0.0), (0.0, 1e-6), (1.0, 1e-6), (3.7, 0.2)])
@pytest.mark.parametrize("step", STEPS)
def test_privacy_parameters_pld_is_dp_accountings(
    epsilon: float, delta: float, step: float
) -> None:
    ours = own.from_privacy_parameters(epsilon, delta, step)
    params = privacy_loss_distribution.common.DifferentialPrivacyParameters(epsilon, delta)
    theirs = privacy_loss_distribution.from_privacy_parameters(params, step)
    assert ours.symmetric
    _same(ours.remove, theirs._pmf_remove)
    _check_queries(ours, theirs)


def test_composition_refuses_pmfs_on_different_grids() -> None:
    a = own.SparsePmf(1e-4, {0: 1.0}, 0.0, True)
    with pytest.raises(ValueError, match="discretization"):
        own.compose_pmfs(a, own.SparsePmf(2e-4, {0: 1.0}, 0.0, True))
    with pytest.raises(ValueError, match="estimation"):
        own.compose_pmfs(a, own.SparsePmf(1e-4, {0: 1.0}, 0.0, False))


def test_a_perturbed_step_order_is_caught() -> None:
    """The comparison can fail: reading a dense PMF's losses as ``index · step`` in the ε search
    (instead of dp_accounting's repeated subtraction) changes some ε by an ulp."""
    rng = np.random.default_rng(7)
    changed = 0
    for _ in range(40):
        masses = _masses(rng, 300, 0.0, 600)
        pmf = own.to_dense(own.SparsePmf(2e-3, masses, 0.0, True))
        ours = own.LossDistribution(pmf).epsilon_for_delta(1e-3)
        as_sparse = own.LossDistribution(own.SparsePmf(2e-3, masses, 0.0, True))
        changed += ours != as_sparse.epsilon_for_delta(1e-3)
    assert changed > 0
