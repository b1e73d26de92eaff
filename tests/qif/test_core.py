"""Core QIF: validation, vulnerability, leakage, hypers, capacity, cascade, DPI."""

from __future__ import annotations

from fractions import Fraction as Fr

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crowdhide.qif.core import (
    Channel,
    Gain,
    Prior,
    additive_leakage,
    bayes_capacity,
    cascade,
    hyper,
    joint,
    multiplicative_leakage,
    posterior_vulnerability,
    prior_vulnerability,
)

# ------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("matrix", "error", "match"),
    [
        ([[0.5, 0.4]], ValueError, "must sum to 1"),
        ([[1.5, -0.5]], ValueError, "non-negative"),
        ([[float("nan"), 1.0]], ValueError, "finite"),
        ([[float("inf"), 0.0]], ValueError, "finite"),
        ([0.5, 0.5], ValueError, "2-dimensional"),
        ([], ValueError, "empty"),
        ([["a", "b"]], TypeError, "real numbers"),
        ([[True, False]], TypeError, "real numbers"),
        ([[Fr(1, 3), Fr(1, 3)]], ValueError, "must sum to 1"),
    ],
)
def test_invalid_channels_are_refused(matrix: object, error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        Channel(matrix)


def test_channel_labels_checked() -> None:
    with pytest.raises(ValueError, match="must have 2 labels"):
        Channel([[1.0], [1.0]], inputs=("a",))
    with pytest.raises(ValueError, match="distinct"):
        Channel([[1.0], [1.0]], inputs=("a", "a"))


@pytest.mark.parametrize(
    ("probs", "match"),
    [([0.5, 0.6], "must sum to 1"), ([-0.5, 1.5], "non-negative"), ([[0.5, 0.5]], "1-dim")],
)
def test_invalid_priors_are_refused(probs: object, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        Prior(probs)


def test_prior_constructors() -> None:
    assert Prior.uniform(("a", "b", "c"), exact=True).probability("b") == Fr(1, 3)
    assert Prior.point(("a", "b"), "b").probability("b") == 1
    with pytest.raises(ValueError, match="one of the labels"):
        Prior.point(("a", "b"), "c")
    with pytest.raises(ValueError, match="empty"):
        Prior.uniform(())


def test_negative_gain_refused() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        Gain([[1, -1]])


def test_label_mismatches() -> None:
    c = Channel([[1.0, 0.0], [0.0, 1.0]], inputs=("a", "b"))
    with pytest.raises(ValueError, match="prior labels"):
        posterior_vulnerability(Prior.uniform(("x", "y")), c)
    with pytest.raises(ValueError, match="gain secrets"):
        posterior_vulnerability(Prior.uniform(("a", "b")), c, Gain.identity(("x", "y")))
    with pytest.raises(ValueError, match="cascade"):
        cascade(c, Channel([[1.0]]))


def test_multiplicative_leakage_needs_positive_prior_vulnerability() -> None:
    zero = Gain([[0, 0]])
    with pytest.raises(ValueError, match="positive prior vulnerability"):
        multiplicative_leakage(Prior([0.5, 0.5]), Channel([[1.0], [1.0]]), zero)


# --------------------------------------------------------------- definitions


def _rr() -> Channel:
    return Channel([[Fr(3, 4), Fr(1, 4)], [Fr(1, 4), Fr(3, 4)]], inputs=("a", "b"))


def test_bayes_vulnerability_of_randomized_response_exact() -> None:
    pi = Prior([Fr(1, 3), Fr(2, 3)], labels=("a", "b"))
    assert prior_vulnerability(pi) == Fr(2, 3)
    # Σ_y max_x π_x C_xy = max(1/4, 1/6) + max(1/12, 1/2)
    assert posterior_vulnerability(pi, _rr()) == Fr(3, 4)
    assert multiplicative_leakage(pi, _rr()) == Fr(9, 8)
    assert additive_leakage(pi, _rr()) == Fr(1, 12)
    assert joint(pi, _rr()).tolist() == [[Fr(1, 4), Fr(1, 12)], [Fr(1, 6), Fr(1, 2)]]


def test_libqif_style_reference_values() -> None:
    # Identity channel on 10 secrets: capacity 10 (libqif test suite value).
    assert bayes_capacity(Channel(np.eye(10))) == 10.0
    # A channel whose columns are all equal leaks nothing.
    flat = Channel([[Fr(1, 2), Fr(1, 2)]] * 3)
    pi = Prior([Fr(1, 6), Fr(1, 3), Fr(1, 2)])
    assert posterior_vulnerability(pi, flat) == prior_vulnerability(pi) == Fr(1, 2)
    assert bayes_capacity(flat) == 1


def test_gain_functions() -> None:
    secrets = ("a", "b", "c")
    pi = Prior([Fr(1, 2), Fr(1, 4), Fr(1, 4)], labels=secrets)
    assert prior_vulnerability(pi, Gain.identity(secrets)) == prior_vulnerability(pi) == Fr(1, 2)
    # User-defined: guess whether the secret is "a" (two actions).
    g = Gain.from_function(
        secrets, ("is-a", "not-a"), lambda w, x: int((x == "a") == (w == "is-a"))
    )
    assert prior_vulnerability(pi, g) == Fr(1, 2)
    perfect = Channel([[1, 0], [0, 1], [0, 1]], inputs=secrets)
    assert posterior_vulnerability(pi, perfect, g) == 1
    # Single-target gain on datasets: guess the first coordinate.
    data = [(0, 0), (0, 1), (1, 0), (1, 1)]
    st_gain = Gain.single_target(data)
    assert st_gain.actions == (0, 1)
    assert st_gain.matrix.tolist() == [[1, 1, 0, 0], [0, 0, 1, 1]]
    with pytest.raises(ValueError, match="target must be"):
        Gain.single_target(data, target=2)


def test_hyper_distribution_merges_equal_posteriors() -> None:
    secrets = ("a", "b")
    c = Channel([[Fr(1, 2), Fr(1, 4), Fr(1, 4)], [Fr(1, 2), Fr(1, 4), Fr(1, 4)]], inputs=secrets)
    h = hyper(Prior.uniform(secrets, exact=True), c)
    assert h.outer.tolist() == [1]
    assert h.outputs == ((0, 1, 2),)
    h2 = hyper(Prior.uniform(secrets, exact=True), _rr())
    assert h2.outer.tolist() == [Fr(1, 2), Fr(1, 2)]
    assert h2.inners[:, 0].tolist() == [Fr(3, 4), Fr(1, 4)]
    assert h2.posterior_vulnerability() == Fr(3, 4)


def test_reduced_channel_is_equivalent() -> None:
    c = Channel([[0.2, 0.4, 0.0, 0.4], [0.1, 0.2, 0.0, 0.7]])
    r = c.reduced()
    assert r.n_outputs == 2  # columns 0 and 1 are proportional, column 2 is zero
    rng = np.random.default_rng(1)
    for _ in range(5):
        pi = Prior(rng.dirichlet(np.ones(2)))
        g = Gain(rng.random((3, 2)))
        assert posterior_vulnerability(pi, c, g) == pytest.approx(posterior_vulnerability(pi, r, g))


def test_cascade_and_equality() -> None:
    c = _rr()
    d = Channel([[Fr(1), Fr(0)], [Fr(1, 2), Fr(1, 2)]])
    cd = cascade(_rr(), d)
    assert cd.matrix.tolist() == [[Fr(7, 8), Fr(1, 8)], [Fr(5, 8), Fr(3, 8)]]
    assert (c @ d).equals(cd)
    expected = Channel(np.array([[7 / 8, 1 / 8], [5 / 8, 3 / 8]]), inputs=("a", "b"))
    assert cd.to_float().equals(expected)
    assert not cd.equals(c @ Channel([[Fr(1), Fr(0)], [Fr(0), Fr(1)]]))


# ---------------------------------------------------- data-processing (Thm 4)


@st.composite
def _channels(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    nx = draw(st.integers(2, 5))
    ny = draw(st.integers(1, 5))
    nz = draw(st.integers(1, 5))
    nw = draw(st.integers(1, 4))
    weights = st.floats(0.0, 1.0, allow_nan=False)

    def stochastic(rows: int, cols: int) -> np.ndarray:
        m = np.array(draw(st.lists(weights, min_size=rows * cols, max_size=rows * cols)))
        m = m.reshape(rows, cols) + 1e-3
        return m / m.sum(axis=1, keepdims=True)

    prior = stochastic(1, nx)[0]
    gain = np.array(draw(st.lists(weights, min_size=nw * nx, max_size=nw * nx))).reshape(nw, nx)
    return prior, stochastic(nx, ny), stochastic(ny, nz), gain


@settings(max_examples=60, deadline=None)
@given(_channels())
def test_data_processing_inequality(case: tuple[np.ndarray, ...]) -> None:
    prior, c, r, gain = case
    pi, ch, post = Prior(prior), Channel(c), Channel(r)
    g = Gain(gain)
    v_c = posterior_vulnerability(pi, ch, g)
    v_cr = posterior_vulnerability(pi, ch @ post, g)
    assert v_cr <= v_c + 1e-12
    # ... and the prior vulnerability is a lower bound of both.
    assert prior_vulnerability(pi, g) <= v_cr + 1e-12
    # Miracle theorem: multiplicative g-leakage <= Bayes capacity (non-negative g).
    if prior_vulnerability(pi, g) > 1e-9:
        assert multiplicative_leakage(pi, ch, g) <= bayes_capacity(ch) + 1e-9


def test_data_processing_check_can_fail() -> None:
    # Sanity of the property test itself: a channel that *adds* information is caught.
    pi = Prior([0.5, 0.5])
    noisy = Channel([[0.5, 0.5], [0.5, 0.5]])
    identity = Channel(np.eye(2))
    assert posterior_vulnerability(pi, identity) > posterior_vulnerability(pi, noisy) + 0.4


def test_hyper_test_vector_of_the_note() -> None:
    # Hand-computed: n = 2, k = 2, p = 3/4, N S^r, uniform prior on (aa, ab, ba, bb).
    from crowdhide.qif.channels import shuffled_krr_channel

    ns = shuffled_krr_channel(n=2, k=2, keep_probability=Fr(3, 4), reduced=True)
    h = hyper(Prior.uniform(ns.inputs, exact=True), ns)
    assert h.outer.tolist() == [Fr(1, 4), Fr(1, 2), Fr(1, 4)]
    assert h.inners.T.tolist() == [
        [Fr(9, 16), Fr(3, 16), Fr(3, 16), Fr(1, 16)],
        [Fr(3, 16), Fr(5, 16), Fr(5, 16), Fr(3, 16)],
        [Fr(1, 16), Fr(3, 16), Fr(3, 16), Fr(9, 16)],
    ]
    assert h.posterior_vulnerability(Gain.single_target(ns.inputs)) == Fr(5, 8)


@pytest.mark.parametrize("n", [2, 3])
def test_intro_example_same_epsilon_different_uninformed_leakage(n: int) -> None:
    # Paper intro (Jurado et al. §I): M1 reports the last bit through RR(p); M2 does the same if
    # the XOR of the other bits is 0 and inverts the probabilities otherwise. Both are
    # exactly ln 3-DP at p = 3/4; the uninformed adversary learns nothing from M2.
    import itertools

    p = Fr(3, 4)
    data = list(itertools.product((0, 1), repeat=n))

    def row(x: tuple[int, ...], xor: bool) -> list[Fr]:
        keep = p if not (xor and sum(x[:-1]) % 2) else 1 - p
        return [keep, 1 - keep] if x[-1] == 0 else [1 - keep, keep]

    m1 = Channel([row(x, False) for x in data], inputs=data)
    m2 = Channel([row(x, True) for x in data], inputs=data)
    last = Gain.single_target(data, target=n - 1)
    uniform = Prior.uniform(data, exact=True)
    assert posterior_vulnerability(uniform, m1, last) == Fr(3, 4)
    assert posterior_vulnerability(uniform, m2, last) == Fr(1, 2)
    # All-but-one adversary (knows the other bits): both give p.
    for others in itertools.product((0, 1), repeat=n - 1):
        support = [(*others, v) for v in (0, 1)]
        rows = [data.index(x) for x in support]
        gain = Gain.single_target(support, target=n - 1)
        for m in (m1, m2):
            sub = Channel(m.matrix[rows], inputs=support)
            assert posterior_vulnerability(Prior.uniform(support, exact=True), sub, gain) == p


def test_refinement_characterization() -> None:
    from crowdhide.qif.channels import krr_dataset_channel, shuffle_channel, shuffled_krr_channel
    from crowdhide.qif.core import refines

    rng = np.random.default_rng(5)
    c = Channel(rng.dirichlet(np.ones(4), size=3))
    r = Channel(rng.dirichlet(np.ones(2), size=4))
    assert refines(c, c @ r)
    # Thm 4 in action on the shuffle model: NS = N·S = S·N refines both N and S ...
    n_only = krr_dataset_channel(n=2, k=2, eps0=1.0)
    s_only = shuffle_channel(n=2, k=2)
    ns = shuffled_krr_channel(n=2, k=2, eps0=1.0)
    assert refines(n_only, ns)
    assert refines(s_only, ns)
    # ... but neither N nor S is a post-processing of NS, nor of each other.
    assert not refines(ns, n_only)
    assert not refines(ns, s_only)
    assert not refines(s_only, n_only)
    with pytest.raises(ValueError, match="same inputs"):
        refines(c, Channel(np.eye(2)))
