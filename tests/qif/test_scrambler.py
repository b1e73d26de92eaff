"""Scrambler countermeasure as a channel: formulas vs the explicit channel (exact)."""

from __future__ import annotations

import math
from fractions import Fraction as Fr

import numpy as np
import pytest

from crowdhide.qif.core import Channel, Gain, Prior, posterior_vulnerability
from crowdhide.qif.scrambler import (
    scrambler_channel,
    scrambler_keep_probability,
    scrambler_local_epsilon,
    scrambler_vulnerability,
)
from crowdhide.qif.shuffle import shuffle_vulnerability


def _brute(channel: Channel, others: tuple[int, ...] | None, targets: int) -> Fr | float:
    if others is None:
        support = list(channel.inputs)
        sub = channel
    else:
        support = [(v, *others) for v in range(targets)]
        rows = [channel.inputs.index(x) for x in support]
        sub = Channel(channel.matrix[rows], inputs=support, outputs=channel.outputs)
    return posterior_vulnerability(
        Prior.uniform(support, exact=True), sub, Gain.single_target(support)
    )


CASES = [(2, 1, 0), (2, 2, 1), (2, 3, 2), (3, 2, 0), (3, 2, 2), (3, 3, 1), (4, 2, 1)]


@pytest.mark.parametrize(("targets", "n", "dummies"), CASES)
@pytest.mark.parametrize("sigma", [Fr(0), Fr(1, 5), Fr(1, 2), Fr(1)])
def test_scrambler_formulas_match_explicit_channel(
    targets: int, n: int, dummies: int, sigma: Fr
) -> None:
    c = scrambler_channel(targets=targets, sigma=sigma, n=n, dummies=dummies)
    un = scrambler_vulnerability(targets=targets, sigma=sigma, n=n, dummies=dummies)
    assert un.vulnerability == _brute(c, None, targets)
    for others in {(0,) * (n - 1), tuple(i % targets for i in range(n - 1))}:
        hist = tuple(others.count(t) for t in range(targets))
        inf = scrambler_vulnerability(
            targets=targets, sigma=sigma, n=n, dummies=dummies, adversary="informed", others=hist
        )
        assert inf.vulnerability == _brute(c, others, targets)
        fast = scrambler_vulnerability(
            targets=targets,
            sigma=float(sigma),
            n=n,
            dummies=dummies,
            adversary="informed",
            others=hist,
        )
        assert fast.vulnerability == pytest.approx(float(inf.vulnerability), abs=1e-12)


def test_dummies_matter_even_without_sampling() -> None:
    # σ = 0, no dummies: the informed adversary wins; dummies alone lower her odds.
    assert (
        scrambler_vulnerability(targets=5, sigma=0.0, n=10, adversary="informed").vulnerability
        == 1.0
    )
    v = [
        scrambler_vulnerability(
            targets=5, sigma=0.0, n=10, dummies=d, adversary="informed"
        ).vulnerability
        for d in (0, 5, 50, 500)
    ]
    assert v == sorted(v, reverse=True)
    assert v[-1] < 0.5
    # Uninformed: exactly q + (p − q) V[S](n + d, T).
    r = scrambler_vulnerability(targets=20, sigma=0.3, n=100, dummies=40)
    p, q = 1 - 0.3 + 0.3 / 20, 0.3 / 20
    assert r.vulnerability == pytest.approx(q + (p - q) * shuffle_vulnerability(n=140, k=20))


def test_local_epsilon_and_keep_probability() -> None:
    assert scrambler_keep_probability(targets=4, sigma=0.2) == pytest.approx(0.85)
    assert scrambler_local_epsilon(targets=20, sigma=0.9) == pytest.approx(
        math.log((1 - 0.9) * 20 / 0.9 + 1)
    )
    assert scrambler_local_epsilon(targets=20, sigma=0.0) == math.inf
    r = scrambler_vulnerability(targets=20, sigma=0.9, n=50, dummies=10)
    # ε0 of the sampling randomizer is the ε0 of T-RR with keep probability p.
    p = float(r.keep_probability)
    assert math.log(p / ((1 - p) / 19)) == pytest.approx(r.local_epsilon)
    rec = r.as_record()
    assert {
        "vulnerability",
        "prior_vulnerability",
        "leakage",
        "targets",
        "sigma",
        "n",
        "dummies",
        "local_epsilon",
    } <= set(rec)


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"targets": 1, "sigma": 0.5, "n": 3}, ValueError, "targets must be >= 2"),
        ({"targets": 3, "sigma": 1.5, "n": 3}, ValueError, "sigma must be <= 1"),
        ({"targets": 3, "sigma": Fr(3, 2), "n": 3}, ValueError, "sigma must be in"),
        ({"targets": 3, "sigma": 0.5, "n": 0}, ValueError, "n must be >= 1"),
        ({"targets": 3, "sigma": 0.5, "n": 3, "dummies": -1}, ValueError, "dummies must be"),
        ({"targets": 3, "sigma": 0.5, "n": 3, "adversary": "x"}, ValueError, "adversary"),
        (
            {"targets": 3, "sigma": 0.5, "n": 3, "adversary": "informed", "others": (1, 1)},
            ValueError,
            "others must be",
        ),
    ],
)
def test_invalid_inputs(kwargs: dict[str, object], error: type, match: str) -> None:
    with pytest.raises(error, match=match):
        scrambler_vulnerability(**kwargs)  # type: ignore[arg-type]


def test_many_dummies_without_sampling_stay_finite() -> None:
    # Found by the CLI fuzz: an FFT convolution's round-off widened the window of counts to
    # the far tails, and the max-load table overflowed (NaN, then a crash).
    d = [26_422, 5_000, 500]
    v = [
        scrambler_vulnerability(
            targets=3, sigma=0.0, n=433, dummies=dummies, adversary="informed"
        ).vulnerability
        for dummies in d
    ]
    assert all(math.isfinite(x) and 1 / 3 <= x <= 1.0 for x in v)
    assert v == sorted(v)  # fewer dummies, easier guess


def test_pmf_convolution_keeps_far_tails_exactly_zero() -> None:
    from scipy.stats import binom

    from crowdhide.qif.shuffle import _convolve

    a = binom.pmf(np.arange(30_001), 30_000, 2 / 3)
    b = binom.pmf(np.arange(501), 500, 0.1)
    fast = _convolve(a, b)
    direct = np.convolve(a, b)
    assert fast.shape == direct.shape
    assert np.max(np.abs(fast - direct)) <= 1e-15 * direct.max()
    # Where the true convolution is below 1e-60 of its peak, nothing (no round-off) appears.
    assert np.all(fast[direct < 1e-60 * direct.max()] == 0.0)
