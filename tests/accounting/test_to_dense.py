"""s31-rounds: a sparse PMF made dense by index (``pld_pmf.to_dense``, s35-pmf: moved from
``composition._to_dense``) is dp_accounting's ``to_dense_pmf``, float for float, and so is
every PLD composed through it."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf

from crowdhide.accounting import pld_pmf as own_pmf
from crowdhide.accounting.pld_pmf import DensePmf, Pmf, SparsePmf, to_dense
from crowdhide.accounting.shuffle.composition import shuffle_pld


def _fields(pmf: pld_pmf.DensePLDPmf | DensePmf) -> tuple[object, ...]:
    if isinstance(pmf, DensePmf):
        return (
            pmf.step,
            pmf.lower,
            pmf.infinity_mass,
            pmf.pessimistic,
            pmf.probs.dtype,
            pmf.probs.shape,
        )
    return (
        pmf._discretization,
        pmf._lower_loss,
        pmf._infinity_mass,
        pmf._pessimistic_estimate,
        pmf._probs.dtype,
        pmf._probs.shape,
    )


def _own(pmf: pld_pmf.SparsePLDPmf) -> SparsePmf:
    return SparsePmf(
        pmf._discretization, dict(pmf._loss_probs), pmf._infinity_mass, pmf._pessimistic_estimate
    )


def _by_loop(pmf: Pmf) -> DensePmf:
    """dp_accounting's way: a Python loop over every index of the range."""
    if isinstance(pmf, DensePmf):
        return pmf
    low, high = min(pmf.masses), max(pmf.masses)
    probs = np.array([pmf.masses.get(i, 0) for i in range(low, high + 1)])
    return DensePmf(pmf.step, low, probs, pmf.infinity_mass, pmf.pessimistic)


@pytest.mark.parametrize("seed", range(6))
def test_sparse_pmfs_become_the_same_dense_pmf(seed: int) -> None:
    rng = np.random.default_rng(seed)
    keys = rng.choice(np.arange(-5000, 5000), size=300, replace=False)
    values = rng.random(300) * rng.choice([1e-300, 1e-20, 1.0], 300)
    masses = {
        int(k): (float(v) if i % 2 else np.float64(v))
        for i, (k, v) in enumerate(zip(keys, values, strict=True))
    }
    masses[int(keys[0])] = -0.0  # a signed zero keeps its sign either way
    pmf = pld_pmf.SparsePLDPmf(masses, 1e-4, 1e-9 * seed, bool(seed % 2))
    want, got = pmf.to_dense_pmf(), to_dense(_own(pmf))
    assert _fields(got) == _fields(want)
    assert np.array_equal(got.probs, want._probs)
    assert np.array_equal(np.signbit(got.probs), np.signbit(want._probs))
    # the comparison is sharp: one mass 1 % larger is another array
    masses[int(keys[1])] *= 1.01
    assert not np.array_equal(to_dense(SparsePmf(1e-4, masses, 0.0, True)).probs, want._probs)


def test_dense_and_single_atom_pmfs() -> None:
    dense = DensePmf(1e-3, -2, np.array([0.25, 0.5, 0.25]), 0.0, True)
    assert to_dense(dense) is dense
    one = pld_pmf.SparsePLDPmf({7: 1.0}, 1e-3, 0.0, False)
    assert _fields(to_dense(_own(one))) == _fields(one.to_dense_pmf())


def test_a_composed_fmt21_pld_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # the FMT21 pair (sparse, both adjacencies) over 10 rounds, as composed_shuffle does
    kw = {"eps0": 8.0, "n": 1000, "rounds": 10, "value_discretization_interval": 1e-3}
    fast = shuffle_pld(pair="feldman2021", log_tail=-30.0, **kw)
    monkeypatch.setattr(own_pmf, "to_dense", _by_loop)
    slow = shuffle_pld(pair="feldman2021", log_tail=-30.0, **kw)
    for name in ("_pmf_remove", "_pmf_add"):
        a, b = getattr(fast.pld, name), getattr(slow.pld, name)
        assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
        assert np.array_equal(a._probs, b._probs)
    assert fast.composition_error == slow.composition_error
    assert fast.epsilon(1e-6) == slow.epsilon(1e-6)
