"""Mechanism-specific shuffle certificates against exact enumeration on small domains.

Every mechanism is written out as an explicit row-stochastic matrix (inputs x reports); the
shuffled output is the multiset of reports, whose exact law is enumerated for every
neighbouring pair and every dataset of the other users (n <= 3). The certificate must
dominate the worst case, the lower bound must stay below it, and a deliberately too-large
clone probability must be caught.
"""

from __future__ import annotations

import itertools
import math
from collections import defaultdict

import numpy as np
import numpy.typing as npt
import pytest

from crowdhide.accounting import DiscretePairCurve
from crowdhide.accounting import _krr_fast as fast
from crowdhide.accounting.shuffle_mechanisms import (
    MECHANISMS,
    mechanism_curve,
    mechanism_lower_curve,
)

Matrix = npt.NDArray[np.float64]


def krr_matrix(eps0: float, d: int) -> Matrix:
    e = math.exp(eps0)
    return (np.full((d, d), 1.0) + np.eye(d) * (e - 1.0)) / (e + d - 1.0)


def unary_matrix(d: int, p_on: float, p_off: float) -> Matrix:
    rows = []
    for x in range(d):
        row = []
        for bits in itertools.product((0, 1), repeat=d):
            prob = 1.0
            for j, b in enumerate(bits):
                pj = p_on if j == x else p_off
                prob *= pj if b else 1.0 - pj
            row.append(prob)
        rows.append(row)
    return np.array(rows)


def subset_matrix(eps0: float, d: int, k: int) -> Matrix:
    sets = list(itertools.combinations(range(d), k))
    r = np.array([[math.exp(eps0) if x in s else 1.0 for s in sets] for x in range(d)])
    return r / r.sum(axis=1, keepdims=True)


def olh_matrix(eps0: float, g: int, inputs: int = 3) -> Matrix:
    e = math.exp(eps0)
    hashes = list(itertools.product(range(g), repeat=inputs))  # every function: collision 1/g
    rows = []
    for x in range(inputs):
        rows.append(
            [
                (e if y == h[x] else 1.0) / (e + g - 1.0) / len(hashes)
                for h in hashes
                for y in range(g)
            ]
        )
    return np.array(rows)


def matrix_for(name: str, eps0: float, d: int, k: int) -> Matrix:
    q = 1.0 / (math.exp(eps0) + 1.0)
    t = math.exp(eps0 / 2.0)
    return {
        "krr": lambda: krr_matrix(eps0, d),
        "oue": lambda: unary_matrix(d, 0.5, q),
        "rappor": lambda: unary_matrix(d, t / (t + 1.0), 1.0 / (t + 1.0)),
        "subset": lambda: subset_matrix(eps0, d, k),
        "olh": lambda: olh_matrix(eps0, d),
    }[name]()


def multiset_law(r: Matrix, values: tuple[int, ...]) -> dict[tuple[int, ...], float]:
    law: dict[tuple[int, ...], float] = defaultdict(float)
    m = r.shape[1]
    for reports in itertools.product(range(m), repeat=len(values)):
        prob = 1.0
        for v, y in zip(values, reports, strict=True):
            prob *= r[v, y]
        if prob > 0.0:
            law[tuple(sorted(reports))] += prob
    return law


def worst_delta(r: Matrix, n: int, eps: float) -> float:
    d = r.shape[0]
    worst = 0.0
    for x, x2 in itertools.combinations(range(d), 2):
        for others in itertools.combinations_with_replacement(range(d), n - 1):
            a, b = multiset_law(r, (*others, x)), multiset_law(r, (*others, x2))
            keys = sorted(set(a) | set(b))
            curve = DiscretePairCurve.from_probabilities(
                [a.get(key, 0.0) for key in keys], [b.get(key, 0.0) for key in keys]
            )
            worst = max(worst, curve.delta(eps))
    return worst


CASES = [("krr", 3, 1), ("oue", 3, 1), ("rappor", 3, 1), ("subset", 4, 2), ("olh", 2, 1)]


@pytest.mark.parametrize(("name", "d", "k"), CASES)
@pytest.mark.parametrize("eps0", [0.7, 2.0])
def test_certificate_and_lower_bound_bracket_the_truth(
    name: str, d: int, k: int, eps0: float
) -> None:
    r = matrix_for(name, eps0, d, k)
    assert np.allclose(r.sum(axis=1), 1.0)
    assert math.log(float((r[:, None, :] / r[None, :, :]).max())) <= eps0 + 1e-12
    assert r.shape[0] >= 3  # a third input exists for the blanket ratio
    kk = k if MECHANISMS[name].needs_k else None
    for n in (2, 3):
        cert = mechanism_curve(mechanism=name, eps0=eps0, n=n, d=d, k=kk)
        low = mechanism_lower_curve(mechanism=name, eps0=eps0, n=n, d=d, k=kk)
        for frac in (0.0, 0.2, 0.5):
            eps = frac * eps0
            truth = worst_delta(r, n, eps)
            assert truth <= cert.delta(eps) * (1 + 1e-9)
            assert low.delta(eps) <= truth * (1 + 1e-9)


def test_a_too_large_clone_probability_is_caught() -> None:
    """The same check fails when OUE's blanket ratio is taken as 1/(e+1) (the ratio without
    the bit of the other user's own value), i.e. rho = 2/(e+1)."""
    eps0, d = 2.0, 3
    r = matrix_for("oue", eps0, d, 1)
    kappa, mu2, _, *_ = MECHANISMS["oue"].params(eps0, d, 1)
    wrong_rho = 2.0 / (math.exp(eps0) + 1.0) * 2.5
    caught = False
    for eps in (0.0, 0.3, 0.8):
        truth = worst_delta(r, 3, eps)
        wrong = math.exp(fast.clone_noise_log_delta(3, kappa, mu2, min(wrong_rho, 1.0), eps, -60))
        caught |= truth > wrong * (1 + 1e-9)
    assert caught


@pytest.mark.parametrize("name", sorted(MECHANISMS))
def test_mechanism_certificate_beats_generic_at_scale(name: str) -> None:
    from crowdhide.accounting.shuffle import shuffle_epsilon

    kk = 4 if MECHANISMS[name].needs_k else None
    cert = mechanism_curve(mechanism=name, eps0=2.0, n=10**6, d=16, k=kk).epsilon(1e-6)
    low = mechanism_lower_curve(mechanism=name, eps0=2.0, n=10**6, d=16, k=kk).epsilon(1e-6)
    generic = shuffle_epsilon(eps0=2.0, n=10**6, delta=1e-6, lower=False).epsilon
    assert low <= cert <= generic


def test_cli_mechanism(capsys: pytest.CaptureFixture[str]) -> None:
    from tests.cli_helpers import run_cli

    args = ("shuffle", "epsilon", "--eps0", "2", "--n", "100000", "--delta", "1e-6")
    result = run_cli(capsys, *args, "--mechanism", "rappor", "--d", "32", "--json")
    assert result.code == 0, result.err
    row = result.json()
    assert row["source"] == "mechanism:rappor"
    assert row["delta"] == 1e-6
    assert 0.0 < row["lower"]["epsilon"] <= row["epsilon"]
    bad = run_cli(capsys, *args, "--mechanism", "rappor")
    assert bad.code == 2
    assert "--d" in bad.err
