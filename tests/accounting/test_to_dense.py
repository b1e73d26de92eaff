"""s31-rounds: a sparse PMF made dense by index (``composition._to_dense``) is dp_accounting's
``to_dense_pmf``, float for float, and so is every PLD composed through it."""

from __future__ import annotations

import numpy as np
import pytest
from dp_accounting.pld import pld_pmf

from crowdhide.accounting import composition
from crowdhide.accounting.composition import _to_dense
from crowdhide.accounting.shuffle.composition import shuffle_pld


def _fields(pmf: pld_pmf.DensePLDPmf) -> tuple[object, ...]:
    return (
        pmf._discretization,
        pmf._lower_loss,
        pmf._infinity_mass,
        pmf._pessimistic_estimate,
        pmf._probs.dtype,
        pmf._probs.shape,
    )


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
    want, got = pmf.to_dense_pmf(), _to_dense(pmf)
    assert _fields(got) == _fields(want)
    assert np.array_equal(got._probs, want._probs)
    assert np.array_equal(np.signbit(got._probs), np.signbit(want._probs))
    # the comparison is sharp: one mass 1 % larger is another array
    masses[int(keys[1])] *= 1.01
    assert not np.array_equal(
        _to_dense(pld_pmf.SparsePLDPmf(masses, 1e-4, 0.0, True))._probs, want._probs
    )


def test_dense_and_single_atom_pmfs() -> None:
    dense = pld_pmf.DensePLDPmf(1e-3, -2, np.array([0.25, 0.5, 0.25]), 0.0, True)
    assert _to_dense(dense) is dense
    one = pld_pmf.SparsePLDPmf({7: 1.0}, 1e-3, 0.0, False)
    assert _fields(_to_dense(one)) == _fields(one.to_dense_pmf())


def test_a_composed_fmt21_pld_is_unchanged(monkeypatch: pytest.MonkeyPatch) -> None:
    # the FMT21 pair (sparse, both adjacencies) over 10 rounds, as composed_shuffle does
    kw = {"eps0": 8.0, "n": 1000, "rounds": 10, "value_discretization_interval": 1e-3}
    fast = shuffle_pld(pair="feldman2021", log_tail=-30.0, **kw)
    monkeypatch.setattr(composition, "_to_dense", lambda pmf: pmf.to_dense_pmf())
    slow = shuffle_pld(pair="feldman2021", log_tail=-30.0, **kw)
    for name in ("_pmf_remove", "_pmf_add"):
        a, b = getattr(fast.pld, name), getattr(slow.pld, name)
        assert (a._lower_loss, a._infinity_mass) == (b._lower_loss, b._infinity_mass)
        assert np.array_equal(a._probs, b._probs)
    assert fast.composition_error == slow.composition_error
    assert fast.epsilon(1e-6) == slow.epsilon(1e-6)
