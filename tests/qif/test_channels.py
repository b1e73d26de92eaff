"""Shuffle-model channels: commutation, full-vs-reduced equivalence, Tables I-V, capacities."""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import numpy as np
import pytest

from crowdhide.qif.channels import (
    krr_channel,
    krr_dataset_channel,
    krr_keep_probability,
    local_randomizer_channel,
    product_channel,
    reduced_krr_channel,
    reduced_product_channel,
    reduced_shuffle_channel,
    shuffle_channel,
    shuffled_krr_channel,
)
from crowdhide.qif.combinatorics import datasets, histograms, multinomial, n_histograms
from crowdhide.qif.core import Channel, Gain, Prior, bayes_capacity, posterior_vulnerability

P34 = Fr(3, 4)


def test_keep_probability() -> None:
    assert krr_keep_probability(k=2, eps0=math.log(3)) == pytest.approx(0.75)
    assert krr_keep_probability(k=5, eps0=math.inf) == 1.0
    assert krr_keep_probability(k=5, eps0=0.0) == pytest.approx(0.2)
    assert krr_keep_probability(k=3, eps0=1e6) == 1.0
    assert krr_keep_probability(k=3, keep_probability=Fr(1, 2)) == Fr(1, 2)
    with pytest.raises(ValueError, match="exactly one"):
        krr_keep_probability(k=3)
    with pytest.raises(ValueError, match="exactly one"):
        krr_keep_probability(k=3, eps0=1.0, keep_probability=0.5)
    with pytest.raises(ValueError, match="eps0 must be >= 0"):
        krr_keep_probability(k=3, eps0=-1.0)
    with pytest.raises(ValueError, match=r"\[1/k, 1\]"):
        krr_keep_probability(k=3, keep_probability=Fr(1, 4))
    with pytest.raises(ValueError, match=r"\[1/k, 1\]"):
        krr_keep_probability(k=3, keep_probability=1.5)
    with pytest.raises(ValueError, match="k must be >= 2"):
        krr_keep_probability(k=1, eps0=1.0)


def test_combinatorics() -> None:
    assert histograms(n=6, k=3).shape == (28, 3)  # the paper's App. B count
    assert n_histograms(n=100, k=5) == 4_598_126
    assert multinomial(3, (2, 1)) == 3
    assert datasets(n=3, k=2).shape == (8, 3)
    with pytest.raises(ValueError, match="limit"):
        datasets(n=30, k=2)
    with pytest.raises(ValueError, match="sum to n"):
        multinomial(3, (1, 1))


def test_table_one_full_krr_n3() -> None:
    p = P34
    n_mat = krr_dataset_channel(n=3, k=2, keep_probability=p)
    row = dict(zip(n_mat.outputs, n_mat.matrix[0], strict=True))  # input aaa
    assert row[(0, 0, 0)] == p**3
    assert row[(0, 0, 1)] == p**2 * (1 - p)
    assert row[(0, 1, 1)] == p * (1 - p) ** 2
    assert row[(1, 1, 1)] == (1 - p) ** 3
    # N is symmetric and a Kronecker power.
    assert np.all(n_mat.matrix == n_mat.matrix.T)


def test_table_one_shuffle_n3() -> None:
    s = shuffle_channel(n=3, k=2, exact=True)
    row = dict(zip(s.outputs, s.matrix[1], strict=True))  # input aab
    assert row[(0, 0, 1)] == row[(0, 1, 0)] == row[(1, 0, 0)] == Fr(1, 3)
    assert row[(0, 1, 1)] == 0
    assert s.matrix[0, 0] == 1  # aaa -> aaa
    sr = reduced_shuffle_channel(n=3, k=2, exact=True)
    assert sr.outputs == ((3, 0), (2, 1), (1, 2), (0, 3))
    assert set(sr.matrix.ravel().tolist()) == {0, 1}


def test_table_four_reduced_krr_n3() -> None:
    p = P34
    b = 1 - p
    nr = reduced_krr_channel(n=3, k=2, keep_probability=p)
    expected = [
        [p**3, 3 * p**2 * b, 3 * p * b**2, b**3],
        [p**2 * b, p**3 + 2 * p * b**2, 2 * p**2 * b + b**3, p * b**2],
        [p * b**2, 2 * p**2 * b + b**3, p**3 + 2 * p * b**2, p**2 * b],
        [b**3, 3 * p * b**2, 3 * p**2 * b, p**3],
    ]
    assert nr.matrix.tolist() == expected


def test_lemma30_binary_formula() -> None:
    p = Fr(2, 3)
    n = 5
    nr = reduced_krr_channel(n=n, k=2, keep_probability=p)
    for i, (na, nb) in enumerate(nr.inputs):
        for j, (ma, mb) in enumerate(nr.outputs):
            lemma = sum(
                (
                    math.comb(na, t)
                    * math.comb(nb, mb - na + t)
                    * p ** (2 * t + mb - na)
                    * (1 - p) ** (n - 2 * t - mb + na)
                    for t in range(max(0, na - mb), min(na, ma) + 1)
                ),
                Fr(0),
            )
            assert nr.matrix[i, j] == lemma


@pytest.mark.parametrize(("n", "k"), [(1, 2), (2, 2), (3, 2), (4, 2), (1, 3), (2, 3), (3, 3)])
@pytest.mark.parametrize("p", [Fr(1), P34, Fr(2, 3), Fr(9, 10)])
def test_commutation_and_equivalences_exact(n: int, k: int, p: Fr) -> None:
    if p < Fr(1, k):
        pytest.skip("p below 1/k")
    ns = shuffled_krr_channel(n=n, k=k, keep_probability=p, order="noise-first")
    sn = shuffled_krr_channel(n=n, k=k, keep_probability=p, order="shuffle-first")
    assert ns.equals(sn)  # Prop. 11: NS = SN, identical matrices
    nsr = shuffled_krr_channel(n=n, k=k, keep_probability=p, reduced=True)
    srnr = shuffled_krr_channel(n=n, k=k, keep_probability=p, reduced=True, order="shuffle-first")
    assert nsr.equals(srnr)  # Prop. 26: N S^r = S^r N^r
    # Prop. 12: NS ≡ NS^r — reducing NS merges its identical columns into N S^r.
    assert ns.reduced().n_outputs == nsr.reduced().n_outputs
    # (NS)_{x,y} = (NS^r)_{x,hist(y)} / |[y]|.
    col = {h: j for j, h in enumerate(nsr.outputs)}
    for j, y in enumerate(ns.outputs):
        h = tuple(int(sum(1 for v in y if v == u)) for u in range(k))
        assert np.all(ns.matrix[:, j] * multinomial(n, h) == nsr.matrix[:, col[h]])


@pytest.mark.parametrize(("n", "k"), [(3, 2), (2, 3)])
def test_equivalence_under_random_priors_and_gains(n: int, k: int) -> None:
    rng = np.random.default_rng(7)
    ns = shuffled_krr_channel(n=n, k=k, eps0=0.8)
    nsr = shuffled_krr_channel(n=n, k=k, eps0=0.8, reduced=True)
    s = shuffle_channel(n=n, k=k)
    sr = reduced_shuffle_channel(n=n, k=k)
    labels = ns.inputs
    for _ in range(5):
        pi = Prior(rng.dirichlet(np.ones(len(labels))), labels=labels)
        g = Gain(rng.random((4, len(labels))), secrets=labels)
        v_ns = posterior_vulnerability(pi, ns, g)
        assert v_ns == pytest.approx(posterior_vulnerability(pi, nsr, g), abs=1e-12)
        assert posterior_vulnerability(pi, s, g) == pytest.approx(
            posterior_vulnerability(pi, sr, g), abs=1e-12
        )
        n_only = krr_dataset_channel(n=n, k=k, eps0=0.8)
        assert v_ns <= posterior_vulnerability(pi, n_only, g) + 1e-12
        assert v_ns <= posterior_vulnerability(pi, s, g) + 1e-12


def test_any_iid_local_randomizer_commutes_with_shuffle() -> None:
    # NS = SN for any local K (here 2 inputs -> 3 outputs).
    rng = np.random.default_rng(3)
    local = Channel(rng.dirichlet(np.ones(3), size=2))
    n = 3
    big = product_channel(local, n=n)
    s_in = shuffle_channel(n=n, k=2)
    s_out = shuffle_channel(n=n, k=3)
    ns = big @ Channel(s_out.matrix, inputs=big.outputs, outputs=s_out.outputs)
    sn = Channel(s_in.matrix, inputs=big.inputs, outputs=s_in.outputs) @ big
    assert np.allclose(ns.matrix, sn.matrix, atol=1e-15)
    # And the reduced product channel is the histogram of the product channel's output.
    red = reduced_product_channel(local, n=n)
    assert red.n_inputs == 4
    assert red.n_outputs == 10


@pytest.mark.parametrize(
    ("n", "k", "eps0", "shuffled", "unshuffled"),
    [
        (2, 2, math.log(3), 1.75, 2.25),
        (3, 2, math.log(3), 1.875, 3.375),
        (2, 3, math.log(3), 2.28, 3.24),
        (4, 2, 1.0, 1.857385, 4.570131),
    ],
)
def test_bayes_capacity_reference_values(
    n: int, k: int, eps0: float, shuffled: float, unshuffled: float
) -> None:
    # anchors/accounting.md, Reference numbers item 12 and §14.
    nsr = shuffled_krr_channel(n=n, k=k, eps0=eps0, reduced=True)
    assert bayes_capacity(nsr) == pytest.approx(shuffled, abs=1e-6)
    assert bayes_capacity(krr_dataset_channel(n=n, k=k, eps0=eps0)) == pytest.approx(
        unshuffled, abs=1e-6
    )


def test_bayes_capacity_exact_note_values() -> None:
    # ML(N S^r) at p = 3/4 (hand-computed).
    for (n, k), value in {
        (2, 2): Fr(7, 4),
        (3, 2): Fr(15, 8),
        (4, 2): Fr(31, 16),
        (3, 3): Fr(563, 128),
    }.items():
        nsr = shuffled_krr_channel(n=n, k=k, keep_probability=P34, reduced=True)
        assert bayes_capacity(nsr) == value
    assert bayes_capacity(krr_dataset_channel(n=3, k=2, keep_probability=P34)) == Fr(27, 8)
    assert bayes_capacity(reduced_shuffle_channel(n=4, k=3)) == math.comb(6, 2)


class _DuckRR:
    """Stand-in with the agreed ``crowdhide.mechanisms`` randomizer API."""

    eps0 = math.log(3)

    def channel(self) -> np.ndarray:
        return np.array([[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]])


def test_local_randomizer_adapter() -> None:
    c = local_randomizer_channel(_DuckRR())
    assert c.equals(krr_channel(k=3, eps0=math.log(3)))
    with pytest.raises(TypeError, match="finite output set"):
        local_randomizer_channel(object())


def test_order_and_size_validation() -> None:
    with pytest.raises(ValueError, match="order must be"):
        shuffled_krr_channel(n=2, k=2, eps0=1.0, order="sideways")
    with pytest.raises(ValueError, match="limit"):
        shuffle_channel(n=13, k=2)


def test_mechanisms_randomizers_as_channels() -> None:
    from crowdhide.mechanisms import (
        BinaryRandomizedResponse,
        KaryRandomizedResponse,
        LaplaceMechanism,
    )
    from crowdhide.qif.channels import shuffled_product_channel
    from crowdhide.qif.shuffle import uninformed_vulnerability

    kary = local_randomizer_channel(KaryRandomizedResponse(k=3, eps0=1.0))
    assert kary.equals(krr_channel(k=3, eps0=1.0))
    binary = local_randomizer_channel(BinaryRandomizedResponse(eps0=math.log(3)))
    assert binary.equals(krr_channel(k=2, keep_probability=0.75))
    with pytest.raises(TypeError, match="finite output set"):
        local_randomizer_channel(LaplaceMechanism(eps0=1.0, sensitivity=1.0))
    # The generic shuffled channel of the mechanism equals N S^r and gives the closed form.
    ns = shuffled_product_channel(kary, n=3)
    assert np.allclose(ns.matrix, shuffled_krr_channel(n=3, k=3, eps0=1.0, reduced=True).matrix)
    labels = ns.inputs
    v = posterior_vulnerability(Prior.uniform(labels), ns, Gain.single_target(labels))
    assert v == pytest.approx(uninformed_vulnerability(n=3, k=3, eps0=1.0).vulnerability)


def test_shuffled_product_channel_exact() -> None:
    local = krr_channel(k=2, keep_probability=P34)
    from crowdhide.qif.channels import shuffled_product_channel

    assert shuffled_product_channel(local, n=3).equals(
        shuffled_krr_channel(n=3, k=2, keep_probability=P34, reduced=True)
    )
