"""Exhaustive enumeration of the scrambler's output laws (small T, n, d only).

These are the *independent* oracles the scrambler accountant is tested against: the law of
the count vector observed by the adversary is computed by adding one message at a time to a
dense array indexed by count vectors (shape ``(n + d + 1,) * T``), without any of the algebra
used by the fast evaluators. They are also used by
:mod:`crowdhide.accounting.scrambler.accountant` as the ``exact`` evaluator of the *capped*
scrambler, where no closed form is known: :func:`exact_available` says whether an instance
fits the budget, :func:`worst_pair_curve` and :func:`capped_exact_pure_epsilon` evaluate it.

Conventions (Ladjel, Anciaux, Bellet, Scerri, Sections III–IV): a real message to target
``t`` goes to ``t`` with probability ``1 − σ`` and to a uniform target among all ``T``
otherwise (convention U);
uncapped dummies are uniform over the ``T`` targets with replacement; capped dummies are
uniform over the targets that hold fewer than ``n`` messages at that moment (Algorithm 1 with
``B = True``).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.curves import DiscretePairCurve
from crowdhide.accounting.scrambler.curves import WorstPairCurve
from crowdhide.accounting.scrambler.local import _check_common
from crowdhide.errors import InvalidParameterError

__all__ = [
    "BRUTE_FORCE_BUDGET",
    "MAX_CELLS",
    "capped_exact_pure_epsilon",
    "count_distribution",
    "exact_available",
    "input_histograms",
    "local_randomizer_output_probabilities",
    "pair_distributions",
    "worst_pair_curve",
    "worst_pair_delta",
    "worst_pair_pure_epsilon",
]

FloatArray = npt.NDArray[np.float64]

#: Refuse dense arrays above this many cells (the oracle is for small instances only).
MAX_CELLS = 3_000_000


def _shift(arr: FloatArray, axis: int) -> FloatArray:
    """Add one message at target ``axis``: move mass from count c to c + 1 on that axis."""
    out = np.zeros_like(arr)
    src = [slice(None)] * arr.ndim
    dst = [slice(None)] * arr.ndim
    src[axis] = slice(0, arr.shape[axis] - 1)
    dst[axis] = slice(1, None)
    out[tuple(dst)] = arr[tuple(src)]
    return out


def count_distribution(
    *, targets: int, sigma: float, inputs: list[int], dummies: int, cap: int | None = None
) -> FloatArray:
    """Law of the scrambler's per-target count vector, as a dense array.

    Parameters
    ----------
    targets
        Number of targets ``T``.
    sigma
        Sampling rate (convention U).
    inputs
        True target of each real message.
    dummies
        Number of dummies ``d`` added by the scrambler.
    cap
        ``None`` for the uncapped scrambler; otherwise the per-target cap (``n``).

    Returns
    -------
    numpy.ndarray
        ``P[count vector = c]`` at index ``c`` (shape ``(len(inputs) + dummies + 1,) * T``).
    """
    total = len(inputs) + dummies
    size = (total + 1) ** targets
    if size > MAX_CELLS:
        raise InvalidParameterError(
            f"instance too large for brute force: {size} cells > {MAX_CELLS}"
        )
    base = total + 1
    # Flat C-order layout: one more message at target j moves mass by stride_j = base^(T−1−j)
    # (counts never exceed ``total``, so no carry into the next axis can occur).
    strides = [base ** (targets - 1 - j) for j in range(targets)]
    flat = np.zeros(base**targets)
    flat[0] = 1.0

    def add_ball(arr: FloatArray, probs: list[float]) -> FloatArray:
        out = np.zeros_like(arr)
        for stride, p in zip(strides, probs, strict=True):
            if p > 0:
                out[stride:] += p * arr[:-stride]
        return out

    for t in inputs:
        flat = add_ball(
            flat, [sigma / targets + (1.0 - sigma if j == t else 0.0) for j in range(targets)]
        )
    if cap is None:
        for _ in range(dummies):
            flat = add_ball(flat, [1.0 / targets] * targets)
        return flat.reshape((base,) * targets)
    arr = flat.reshape((base,) * targets)
    grids = np.indices(arr.shape)
    for _ in range(dummies):
        open_targets = [grids[j] < cap for j in range(targets)]
        n_open = sum(o.astype(float) for o in open_targets)
        if np.any((n_open == 0) & (arr > 0)):
            raise InvalidParameterError("capped scrambler ran out of targets: need n + d <= n T")
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = np.where(n_open > 0, 1.0 / n_open, 0.0)
        arr = sum(
            (_shift(arr * open_targets[j] * inv, j) for j in range(targets)), np.zeros_like(arr)
        )
    return arr


def pair_distributions(
    *,
    targets: int,
    sigma: float,
    common: list[int],
    dummies: int,
    cap: int | None = None,
    t: int = 0,
    t_prime: int = 1,
) -> tuple[FloatArray, FloatArray]:
    """Flattened output laws for the neighbours ``common + [t]`` and ``common + [t']``."""
    p = count_distribution(
        targets=targets, sigma=sigma, inputs=[*common, t], dummies=dummies, cap=cap
    )
    q = count_distribution(
        targets=targets, sigma=sigma, inputs=[*common, t_prime], dummies=dummies, cap=cap
    )
    return p.ravel(), q.ravel()


def input_histograms(targets: int, common: int) -> list[list[int]]:
    """Every multiset of ``common`` input targets, up to the symmetries fixing t=0, t'=1.

    Targets ``2..T−1`` are interchangeable, so their counts are taken non-increasing; the
    swap of t and t' is not used (both directions of the divergence are evaluated anyway).
    """
    result: list[list[int]] = []
    for counts in itertools.product(range(common + 1), repeat=min(targets, 2)):
        rest = common - sum(counts)
        if rest < 0:
            continue
        if targets <= 2:
            if rest == 0:
                result.append([0] * counts[0] + [1] * counts[1])
            continue
        for part in _partitions(rest, targets - 2):
            msgs = [0] * counts[0] + [1] * counts[1]
            for offset, c in enumerate(part):
                msgs += [2 + offset] * c
            result.append(msgs)
    return result


def _partitions(total: int, parts: int) -> list[tuple[int, ...]]:
    """Non-increasing tuples of ``parts`` non-negative integers summing to ``total``."""
    if parts == 1:
        return [(total,)]
    out: list[tuple[int, ...]] = []
    for first in range(total, -1, -1):
        for tail in _partitions(total - first, parts - 1):
            if tail[0] <= first:
                out.append((first, *tail))
    return out


def worst_pair_delta(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilons: npt.ArrayLike,
    cap: int | None = None,
) -> tuple[FloatArray, list[list[int]]]:
    """Exact δ(ε) = max over all neighbouring inputs of the hockey-stick divergence.

    Returns the δ values and, for each ε, the common input histogram that attains it.
    """
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    best = np.full(eps.shape, -1.0)
    argbest: list[list[int]] = [[] for _ in eps]
    for common in input_histograms(targets, n - 1):
        p, q = pair_distributions(
            targets=targets, sigma=sigma, common=common, dummies=dummies, cap=cap
        )
        curve = DiscretePairCurve.from_probabilities(p, q)
        for i, e in enumerate(eps):
            value = curve.delta(float(e))
            if value > best[i]:
                best[i], argbest[i] = value, common
    return best, argbest


def worst_pair_pure_epsilon(
    *, targets: int, sigma: float, n: int, dummies: int, cap: int | None = None
) -> tuple[float, list[int]]:
    """Exact pure ε = max over neighbouring inputs and outputs of |ln P/Q|."""
    worst, arg = -1.0, []
    for common in input_histograms(targets, n - 1):
        p, q = pair_distributions(
            targets=targets, sigma=sigma, common=common, dummies=dummies, cap=cap
        )
        support = (p > 0) | (q > 0)
        if np.any(support & ((p == 0) | (q == 0))):
            return math.inf, common
        ratio = float(np.max(np.abs(np.log(p[support]) - np.log(q[support]))))
        if ratio > worst:
            worst, arg = ratio, common
    return worst, arg


def local_randomizer_output_probabilities(
    *, targets: int, sigma: float, dummies: int, true_target: int
) -> dict[frozenset[int], float]:
    """Law of the *set* of targets sent by the local randomizer R_σ^d (Section III-A).

    First message: true target w.p. ``1 − σ + σ/T``, any other w.p. ``σ/T``; then ``d``
    further targets uniformly without replacement among the remaining ``T − 1``.
    """
    out: dict[frozenset[int], float] = {}
    for first in range(targets):
        p_first = sigma / targets + (1.0 - sigma if first == true_target else 0.0)
        others = [j for j in range(targets) if j != first]
        n_sets = math.comb(targets - 1, dummies)
        for extra in itertools.combinations(others, dummies):
            key = frozenset((first, *extra))
            out[key] = out.get(key, 0.0) + p_first / n_sets
    return out


# --------------------------------------------------------------------------- budget

#: Budget (array cells × messages × pairs) above which brute-force enumeration is refused.
BRUTE_FORCE_BUDGET = 4.0e8


def _brute_force_cost(T: int, n: int, d: int) -> float:
    cells = float(n + d + 1) ** T
    pairs = len(input_histograms(T, n - 1)) if cells * (n + d) * T <= BRUTE_FORCE_BUDGET else 1e9
    return 2.0 * pairs * cells * (n + d) * T


def exact_available(T: int, n: int, d: int) -> bool:
    """Whether the enumeration of ``T`` targets, ``n`` sources and ``d`` dummies fits
    :data:`MAX_CELLS` and :data:`BRUTE_FORCE_BUDGET`."""
    if T < 2:
        return False
    # Compare in log space: (n + d + 1) ** T is a huge integer (minutes) for T near 1e7.
    if T * math.log(n + d + 1) > math.log(MAX_CELLS):
        return False
    return (n + d + 1) ** T <= MAX_CELLS and _brute_force_cost(T, n, d) <= BRUTE_FORCE_BUDGET


def worst_pair_curve(T: int, sigma: float, n: int, d: int, cap: int | None) -> WorstPairCurve:
    """The exact curve of the worst neighbouring pair, over every common input histogram
    (``cap``: the capped scrambler's cap; ``None``: uncapped)."""
    curves = []
    for common in input_histograms(T, n - 1):
        p, q = pair_distributions(targets=T, sigma=sigma, common=common, dummies=d, cap=cap)
        curves.append(DiscretePairCurve.from_probabilities(p, q))
    return WorstPairCurve(curves)


def capped_exact_pure_epsilon(*, targets: int, sigma: float, n: int, dummies: int) -> float:
    """Exact pure ε of the capped scrambler Ã_σ^{n,d}, by exhaustive enumeration.

    Maximum of ``|ln P/Q|`` over every neighbouring input pair and every output count
    vector (small T, n, d only; raises ``ValueError`` beyond the brute-force budget).

    Examples
    --------
    >>> round(capped_exact_pure_epsilon(targets=3, sigma=0.3, n=3, dummies=1), 4)
    2.0310
    """
    T, s, nn, d = _check_common(targets, sigma, n, dummies)
    if nn + d > nn * T:
        raise InvalidParameterError(
            f"dummies must satisfy n + d <= n T for the capped scrambler, got {d}"
        )
    if not exact_available(T, nn, d):
        raise InvalidParameterError(
            f"instance too large for exhaustive enumeration (targets={T}, n={nn}, dummies={d})"
        )
    value, _ = worst_pair_pure_epsilon(targets=T, sigma=s, n=nn, dummies=d, cap=nn)
    return value
