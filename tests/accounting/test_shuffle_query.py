"""``accounting.shuffle.query``: one dispatcher; rounds, sampling and the relation compose for
every mechanism (its own clone pair), checked against exact enumeration at tiny n.

Soundness: for tiny n the exact law of the shuffled (optionally Poisson-subsampled) reports
of a mechanism is enumerated for *every* dataset of the other users and every neighbouring
pair; ``rounds`` rounds are composed exactly (privacy losses added, probabilities
multiplied, no grid). The dispatcher's certificate must stay above at every ε of a grid,
and the exact composition must exceed the *one-round* certificate somewhere — so a
dispatcher that dropped ``rounds`` (the bug of issue #28) fails here.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from crowdhide.accounting.shuffle.query import shuffle_delta, shuffle_epsilon
from crowdhide.errors import InvalidParameterError
from tests.accounting._rounds_oracles import product_loss_delta

#: One user's report law: ``law(v)`` is a vector over a finite output set.
Law = Callable[[int], np.ndarray]


def _krr(d: int, eps0: float) -> Law:
    e = math.exp(eps0)

    def law(v: int) -> np.ndarray:
        out = np.full(d, 1.0 / (e + d - 1))
        out[v] = e / (e + d - 1)
        return out

    return law


def _bits(d: int, p_own: float, p_other: float) -> Law:
    """Unary encodings: bit v set w.p. ``p_own``, every other bit w.p. ``p_other``."""
    words = list(itertools.product((0, 1), repeat=d))

    def law(v: int) -> np.ndarray:
        probs = []
        for w in words:
            prob = 1.0
            for j, bit in enumerate(w):
                p = p_own if j == v else p_other
                prob *= p if bit else 1.0 - p
            probs.append(prob)
        return np.array(probs)

    return law


def _oue(d: int, eps0: float) -> Law:
    return _bits(d, 0.5, 1.0 / (math.exp(eps0) + 1.0))


def _rappor(d: int, eps0: float) -> Law:
    t = math.exp(eps0 / 2.0)
    return _bits(d, t / (t + 1.0), 1.0 / (t + 1.0))


def _subset(d: int, eps0: float, k: int) -> Law:
    sets = list(itertools.combinations(range(d), k))
    e = math.exp(eps0)

    def law(v: int) -> np.ndarray:
        w = np.array([e if v in chosen else 1.0 for chosen in sets])
        return np.asarray(w / w.sum())

    return law


def _hadamard(d: int, eps0: float) -> Law:
    size = 1
    while size <= d:
        size *= 2
    rows = np.array([[(-1) ** bin(r & c).count("1") for c in range(size)] for r in range(size)])
    e = math.exp(eps0)

    def law(v: int) -> np.ndarray:
        on = rows[v + 1] > 0
        return np.where(on, 2.0 * e / ((e + 1.0) * size), 2.0 / ((e + 1.0) * size))

    return law


def _piecewise(eps0: float) -> tuple[Law, int]:
    """Inputs -1, 0, 1 (indices 0, 1, 2); outputs: the pieces of [-C, C] on which every
    input's density is constant (counts per piece are sufficient: within a piece the
    position is uniform whatever the input)."""
    t = math.exp(eps0 / 2.0)
    c = (t + 1.0) / (t - 1.0)
    p = t * (t - 1.0) / (2.0 * (t + 1.0))
    inputs = (-1.0, 0.0, 1.0)
    left = [(c + 1.0) * x / 2.0 - (c - 1.0) / 2.0 for x in inputs]
    cuts = sorted({-c, c, *left, *(lo + c - 1.0 for lo in left)})
    pieces = list(itertools.pairwise(cuts))

    def law(v: int) -> np.ndarray:
        lo = left[v]
        dens = [p if lo <= (a + b) / 2.0 <= lo + c - 1.0 else p / math.exp(eps0) for a, b in pieces]
        return np.array([dn * (b - a) for dn, (a, b) in zip(dens, pieces, strict=True)])

    return law, 3


def _shuffled(laws: list[np.ndarray], gamma: float) -> dict[tuple[int, ...], float]:
    """Exact law of the histogram of the sampled users' reports (absent users: nothing)."""
    size = laws[0].size
    dist: dict[tuple[int, ...], float] = {(0,) * size: 1.0}
    for probs in laws:
        new: dict[tuple[int, ...], float] = {}
        for hist, mass in dist.items():
            if gamma < 1.0:
                new[hist] = new.get(hist, 0.0) + mass * (1.0 - gamma)
            for y in np.flatnonzero(probs):
                key = list(hist)
                key[y] += 1
                new[tuple(key)] = new.get(tuple(key), 0.0) + mass * gamma * float(probs[y])
        dist = new
    return dist


def _losses(
    a: dict[tuple[int, ...], float], b: dict[tuple[int, ...], float]
) -> list[tuple[np.ndarray, np.ndarray]]:
    keys = sorted(set(a) | set(b))
    pa = np.array([a.get(h, 0.0) for h in keys])
    pb = np.array([b.get(h, 0.0) for h in keys])
    out = []
    for x, y in ((pa, pb), (pb, pa)):
        live = x > 0
        with np.errstate(divide="ignore"):
            out.append((np.log(x[live]) - np.log(y[live]), x[live]))
    return out


def _exact_worst(
    law: Law, values: int, n: int, gamma: float, relation: str, rounds: int, eps: np.ndarray
) -> np.ndarray:
    """Largest exact composed δ(ε) over every dataset of the others and every pair."""
    worst = np.zeros(eps.size)
    for others in itertools.combinations_with_replacement(range(values), n - 1):
        base = [law(v) for v in others]
        for x, x2 in itertools.permutations(range(values), 2):
            with_x = _shuffled([*base, law(x)], gamma)
            if relation == "substitute":
                other = _shuffled([*base, law(x2)], gamma)
            else:
                other = _shuffled(base, gamma)
            for loss, prob in _losses(with_x, other):
                worst = np.maximum(worst, product_loss_delta(loss, prob, rounds, eps))
            if relation == "add_remove":
                break  # x2 plays no part
    return worst


GRID = np.linspace(0.0, 2.5, 11)

_SLOW = pytest.mark.slow
CASES = [
    # (mechanism, d, k, law, values, eps0, n, gamma, relation, rounds)
    pytest.param("krr", 3, None, _krr(3, 1.5), 3, 1.5, 4, 1.0, "substitute", 2, marks=_SLOW),
    pytest.param("oue", 3, None, _oue(3, 1.0), 3, 1.0, 3, 1.0, "substitute", 2),
    pytest.param("krr", 3, None, _krr(3, 1.0), 3, 1.0, 3, 1.0, "substitute", 3, marks=_SLOW),
    pytest.param("rappor", 3, None, _rappor(3, 1.0), 3, 1.0, 3, 1.0, "substitute", 2),
    pytest.param("subset", 4, 2, _subset(4, 1.0, 2), 4, 1.0, 3, 1.0, "substitute", 2, marks=_SLOW),
    pytest.param("hadamard", 3, None, _hadamard(3, 1.5), 3, 1.5, 4, 1.0, "substitute", 2),
    pytest.param("piecewise", None, None, _piecewise(1.5)[0], 3, 1.5, 3, 1.0, "substitute", 2),
    pytest.param("oue", 3, None, _oue(3, 1.5), 3, 1.5, 3, 0.5, "substitute", 2),
    pytest.param("krr", 3, None, _krr(3, 2.0), 3, 2.0, 4, 0.4, "substitute", 2, marks=_SLOW),
    pytest.param("oue", 3, None, _oue(3, 1.5), 3, 1.5, 3, 0.5, "add_remove", 2, marks=_SLOW),
    pytest.param("hadamard", 3, None, _hadamard(3, 2.0), 3, 2.0, 3, 0.3, "add_remove", 3),
]


@pytest.mark.parametrize(
    ("mechanism", "d", "k", "law", "values", "eps0", "n", "gamma", "relation", "rounds"),
    CASES,
    ids=[f"{c.values[0]}-{c.values[8]}-g{c.values[7]}-R{c.values[9]}" for c in CASES],
)
def test_composed_mechanism_certificate_above_exact_enumeration(
    mechanism: str,
    d: int | None,
    k: int | None,
    law: Law,
    values: int,
    eps0: float,
    n: int,
    gamma: float,
    relation: str,
    rounds: int,
) -> None:
    exact = _exact_worst(law, values, n, gamma, relation, rounds, GRID)
    kw: dict[str, Any] = {"eps0": eps0, "n": n, "mechanism": mechanism, "d": d, "k": k}
    setting: dict[str, Any] = {"rounds": rounds, "sample_rate": gamma, "relation": relation}
    cert = np.array([shuffle_delta(**kw, **setting, epsilon=float(e)).delta for e in GRID])
    assert np.all(cert >= exact - 1e-12), (GRID[cert < exact], cert[cert < exact])
    # sharpness: had the rounds been dropped, the one-round answer would be below the truth
    once = {**setting, "rounds": 1}
    one = np.array([shuffle_delta(**kw, **once, epsilon=float(e)).delta for e in GRID])
    assert np.any(exact > one + 1e-9), (one, exact)


def test_every_input_is_echoed() -> None:
    r = shuffle_epsilon(eps0=1.0, n=500, delta=1e-6, mechanism="subset", d=6, k=2, rounds=2)
    for key, value in {
        "eps0": 1.0, "n": 500, "delta": 1e-6, "mechanism": "subset", "d": 6, "k": 2,
        "rounds": 2, "sample_rate": 1.0, "relation": "substitute", "bound": "best",
    }.items():  # fmt: skip
        assert r.inputs[key] == value, key


def test_rounds_and_sampling_change_every_mechanism_answer() -> None:
    base: dict[str, Any] = {"eps0": 1.0, "n": 300, "delta": 1e-6}
    for name, d in (("krr", 4), ("oue", 8), ("rappor", 8), ("olh", 8), ("hadamard", 8)):
        one = shuffle_epsilon(**base, mechanism=name, d=d).epsilon
        two = shuffle_epsilon(**base, mechanism=name, d=d, rounds=2).epsilon
        half = shuffle_epsilon(**base, mechanism=name, d=d, sample_rate=0.5).epsilon
        assert two > one > half, (name, one, two, half)


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [
        ({"d": 4}, "d applies only with mechanism"),
        ({"mechanism": "krr", "d": 4, "k": 8}, "k does not apply to mechanism 'krr'"),
        ({"mechanism": "laplace", "d": 4}, "d does not apply to mechanism 'laplace'"),
        ({"mechanism": "oue"}, "is needed by mechanism"),
        ({"mechanism": "subset", "d": 8}, "needs k"),
        ({"mechanism": "nope", "d": 8}, "mechanism must be one of"),
        ({"mechanism": "oue", "d": 8, "bound": "exact"}, "bound must be best or mechanism:oue"),
        ({"k": 2, "rounds": 2, "bound": "exact"}, "bound must be best or one of"),
        ({"relation": "replace"}, "relation must be one of"),
    ],
)
def test_inputs_that_do_not_apply_are_refused(kwargs: dict[str, object], needle: str) -> None:
    with pytest.raises(InvalidParameterError, match=needle):
        shuffle_epsilon(eps0=1.0, n=100, delta=1e-6, **kwargs)  # type: ignore[arg-type]
