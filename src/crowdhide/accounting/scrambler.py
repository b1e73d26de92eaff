"""Accounting for communication-pattern countermeasures: sampling, dummies and scramblers.

Seed 000 (Ladjel, Anciaux, Bellet, Scerri, "Mitigating leakage from data dependent
communications in decentralized computing using differential privacy") hides *whom* a
source talks to with three countermeasures:

* **local target sampling** (rate σ): with probability σ the source sends to a target drawn
  uniformly among *all* T targets (convention U of Sections III–IV; Theorem 3 uses the
  "lie" convention σ_L = σ(T−1)/T, converted where needed);
* **flooding** with ``d`` dummy messages, either locally (the local randomizer R_σ^d,
  Theorem 2) or at a **scrambler** that collects ``n`` sampled messages, adds ``d`` dummies
  uniform over the targets and shuffles (A_σ^{n,d}, Theorem 4; the capped variant Ã_σ^{n,d}
  never gives a target more than ``n`` messages, Theorem 3).

The adversary sees the number of messages each target receives. This module turns
(T, σ, n, d) into (ε, δ) with clearly named evaluators:

=====================  ==========  ==========================================================
method                 kind        what it is
=====================  ==========  ==========================================================
``exact``              exact       sup over all neighbouring inputs of the hockey-stick
                                   divergence, by exhaustive enumeration (small T, n, d only)
``lemma2-exact``       certificate Lemma 2 with ``E[Σ L_i]_+`` computed exactly (note §4.5)
``bennett``            certificate Lemma 2 + Bennett, re-derived (the printed form is wrong)
``hoeffding``          certificate Theorem 4 with the sign of ``a`` fixed (``a = e^ε − 1``)
``local``              certificate post-processing of the local randomizer (ε0 of sampling)
``montecarlo``         estimate    Algorithm 2 (R samples), with a confidence interval
``bennett-published``  NOT valid   Lemma 3 as printed (extra factor ``1/(aN)``); figures only
``theorem3-published`` NOT valid   Theorem 3 (capped) as printed; understates ε (note §4.2)
``lower-bound``        lower bound exact δ of one neighbouring pair (n − 1 common messages at a
                                   third target): the true ε is at least this (T >= 3)
=====================  ==========  ==========================================================

``best`` is the smallest ε among the certificates that apply. Everything is in convention U.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.optimize import brentq
from scipy.special import gammaln

from crowdhide._validation import (
    as_rng,
    check_bool,
    check_int,
    check_probability,
    check_real,
)
from crowdhide.accounting import _scrambler_bounds as bounds
from crowdhide.accounting import _scrambler_bruteforce as brute
from crowdhide.accounting.curves import DiscretePairCurve
from crowdhide.accounting.logmath import logsumexp

__all__ = [
    "CAPPED_METHODS",
    "CERTIFICATE_METHODS",
    "UNCAPPED_METHODS",
    "CountermeasureCalibration",
    "CountermeasureCosts",
    "CountermeasureResult",
    "GenericScramblerResult",
    "calibrate_countermeasures",
    "capped_exact_pure_epsilon",
    "countermeasure_costs",
    "generic_scrambler_epsilon",
    "local_randomizer_delta",
    "local_randomizer_epsilon",
    "sampling_epsilon",
    "scrambler_delta",
    "scrambler_epsilon",
    "scrambler_epsilon_all",
    "sigma_lie_from_uniform",
    "theorem3_published_epsilon",
]

#: Evaluators of the uncapped scrambler A_σ^{n,d}, in the order ``all`` reports them.
UNCAPPED_METHODS: tuple[str, ...] = (
    "exact",
    "lemma2-exact",
    "bennett",
    "hoeffding",
    "local",
    "montecarlo",
    "bennett-published",
    "lower-bound",
)
#: Evaluators of the capped scrambler Ã_σ^{n,d}.
CAPPED_METHODS: tuple[str, ...] = ("exact", "exact-pure", "local", "theorem3-published")
#: Methods whose ε is a valid guarantee (``valid=True``).
CERTIFICATE_METHODS: frozenset[str] = frozenset(
    {"exact", "exact-pure", "lemma2-exact", "bennett", "hoeffding", "local"}
)

#: Budget (array cells × messages × pairs) above which brute-force enumeration is refused.
_BRUTE_FORCE_BUDGET = 4.0e8
#: Search ceiling for ε when σ = 0 (no finite local ε0).
_EPS_CEILING = 60.0
#: Largest n + d for the third-target pair lower bound (its arrays grow like (n + d) · m).
_PAIR_MAX_MESSAGES = 30_000
_LOG_ZERO = -1.0e4


# --------------------------------------------------------------------------- validation


def _check_common(targets: Any, sigma: Any, n: Any, dummies: Any) -> tuple[int, float, int, int]:
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0)
    return T, s, nn, d


def _log_tail_for(delta: float) -> float:
    """Truncation level of binomial windows: far below the target δ, never below e^-740."""
    return max(math.log(delta) - 25.0, -690.0)


# --------------------------------------------------------------------------- local (Thm 2)


def local_randomizer_epsilon(*, targets: int, sigma: float, dummies: int = 0) -> float:
    """Pure ε of the local randomizer R_σ^d (sampling + ``d`` local dummies), Theorem 2.

    ``ε = ln(1 + (1 − σ) T / (σ (d + 1)))`` for ``0 <= d <= T − 2`` (exact: it is the
    largest log-ratio, checked by brute force, d = 0 included); ``d = T − 1`` is a broadcast
    (ε = 0); ``σ = 0`` with ``d < T − 1`` gives ε = inf. The source must send its d + 1
    messages in random order (the observable is the *set* of targets).

    Parameters
    ----------
    targets
        Number of targets T >= 1.
    sigma
        Sampling rate in [0, 1] (convention U).
    dummies
        Local dummies d, ``0 <= d <= T − 1``.

    Examples
    --------
    >>> round(local_randomizer_epsilon(targets=20, sigma=0.5, dummies=3), 6)
    1.791759
    >>> local_randomizer_epsilon(targets=20, sigma=0.0)
    inf
    """
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    d = check_int("dummies", dummies, low=0, high=max(T - 1, 0))
    if T == 1 or d == T - 1 or s == 1.0:
        return 0.0
    if s == 0.0:
        return math.inf
    return math.log1p((1.0 - s) * T / (s * (d + 1)))


def sampling_epsilon(*, targets: int, sigma: float) -> float:
    """ε0 of sampling alone (R_σ = R_σ^0, T-ary randomized response): ln(1 + (1−σ)T/σ)."""
    return local_randomizer_epsilon(targets=targets, sigma=sigma, dummies=0)


def local_randomizer_delta(*, targets: int, sigma: float, epsilon: float) -> float:
    """Exact δ(ε) of sampling alone: ``max(0, 1 − σ − σ (e^ε − 1)/T)``.

    The scrambler post-processes the sampled messages, so this is also a valid δ(ε) for
    A_σ^{n,d} and Ã_σ^{n,d} (the ``local`` evaluator).
    """
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma)
    eps = check_real("epsilon", epsilon, low=0.0, allow_inf=True)
    if T == 1 or math.isinf(eps):
        return 0.0
    return max(0.0, 1.0 - s - s * math.expm1(eps) / T)


def sigma_lie_from_uniform(*, targets: int, sigma: float) -> float:
    """Convert σ from convention U (Sections III–IV) to Theorem 3's convention L."""
    T = check_int("targets", targets, low=1)
    return check_probability("sigma", sigma) * (T - 1) / T


# --------------------------------------------------------------------------- Theorem 3


def theorem3_published_epsilon(*, targets: int, sigma_lie: float, n: int, dummies: int) -> float:
    """Theorem 3 **as printed** (capped scrambler Ã_σ^{n,d}); NOT a certified bound.

    The derivation assumes a worst case it does not prove and drops the cap-dependent dummy
    probabilities; exhaustive enumeration shows the true pure ε of the capped scrambler is
    larger (see :func:`capped_exact_pure_epsilon`). Kept to reproduce Figs. 5 and 7.
    Evaluated in log space (``R = σ_L/(T − 1)``, weights ``C(d,k)C(n−1,k)((1−σ_L)/R)^k``).

    Parameters
    ----------
    sigma_lie
        σ in Theorem 3's convention L (``1 − σ_L`` on the true target, ``σ_L/(T−1)`` on
        each other); use :func:`sigma_lie_from_uniform` to convert.
    dummies
        ``0 <= d <= n − 1`` (the theorem states 1..n−1; d = 0 gives the local ε0).

    Examples
    --------
    >>> round(theorem3_published_epsilon(targets=20, sigma_lie=0.2, n=100, dummies=50), 4)
    3.8387
    """
    T = check_int("targets", targets, low=2)
    s = check_probability("sigma_lie", sigma_lie)
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0, high=nn - 1)
    if s == 0.0 or s >= 1.0:
        return math.inf
    R = s / (T - 1)
    keep = 1.0 - s
    k = np.arange(0, min(d, nn - 1) + 1, dtype=float)
    log_w = (
        gammaln(d + 1)
        - gammaln(k + 1)
        - gammaln(d - k + 1)
        + gammaln(nn)
        - gammaln(k + 1)
        - gammaln(nn - k)
        + k * (math.log(keep) - math.log(R))
    )
    num = logsumexp(log_w + np.log(keep + k * R * R / keep))
    den = logsumexp(log_w + np.log(R + k * R * R / keep))
    return float(num - den)


# --------------------------------------------------------------------------- brute force


def _brute_force_cost(T: int, n: int, d: int) -> float:
    cells = float(n + d + 1) ** T
    pairs = (
        len(brute.input_histograms(T, n - 1)) if cells * (n + d) * T <= _BRUTE_FORCE_BUDGET else 1e9
    )
    return 2.0 * pairs * cells * (n + d) * T


def _exact_available(T: int, n: int, d: int) -> bool:
    if T < 2:
        return False
    # Compare in log space: (n + d + 1) ** T is a huge integer (minutes) for T near 1e7.
    if T * math.log(n + d + 1) > math.log(brute.MAX_CELLS):
        return False
    return (n + d + 1) ** T <= brute.MAX_CELLS and _brute_force_cost(T, n, d) <= _BRUTE_FORCE_BUDGET


def _exact_curves(
    T: int, sigma: float, n: int, d: int, cap: int | None
) -> list[tuple[list[int], DiscretePairCurve]]:
    out = []
    for common in brute.input_histograms(T, n - 1):
        p, q = brute.pair_distributions(targets=T, sigma=sigma, common=common, dummies=d, cap=cap)
        out.append((common, DiscretePairCurve.from_probabilities(p, q)))
    return out


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
        raise ValueError(f"dummies must satisfy n + d <= n T for the capped scrambler, got {d}")
    if not _exact_available(T, nn, d):
        raise ValueError(
            f"instance too large for exhaustive enumeration (targets={T}, n={nn}, dummies={d})"
        )
    value, _ = brute.worst_pair_pure_epsilon(targets=T, sigma=s, n=nn, dummies=d, cap=nn)
    return value


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class CountermeasureResult:
    """An (ε, δ) statement about the scrambler A_σ^{n,d} (or Ã_σ^{n,d} if ``capped``).

    Attributes
    ----------
    epsilon, delta
        The statement. ``epsilon`` is ``inf`` when the method certifies no finite ε.
    method
        Evaluator name (see the module docstring).
    valid
        True iff the statement is a certified guarantee (never for ``montecarlo`` or the
        ``*-published`` forms).
    targets, sigma, n, dummies, capped
        Inputs (σ in convention U).
    note
        Why the value is what it is (fallbacks, impossibility, estimate caveats).
    ci_low, ci_high
        For ``montecarlo`` only: the values obtained from the lower/upper ends of the
        95% confidence interval of the estimated δ.
    """

    epsilon: float
    delta: float
    method: str
    valid: bool
    targets: int
    sigma: float
    n: int
    dummies: int
    note: str = ""
    capped: bool = False
    ci_low: float | None = None
    ci_high: float | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form with stable keys (for JSON)."""
        return asdict(self)


# --------------------------------------------------------------------------- ε search


def _monotone_search(log_delta: Callable[[float], float], log_target: float, hi: float) -> float:
    """Smallest ε in [0, hi] with ``log_delta(ε) <= log_target`` for a non-increasing
    evaluator; ``inf`` if even ``hi`` fails. The result always satisfies the bound."""
    if log_delta(0.0) <= log_target:
        return 0.0
    if log_delta(hi) > log_target:
        return math.inf

    def gap(eps: float) -> float:
        return max(log_delta(eps), _LOG_ZERO) - log_target

    root = float(brentq(gap, 0.0, hi, xtol=1e-10, rtol=1e-12, maxiter=200))
    step = max(1e-12, root * 1e-12)
    while gap(root) > 0.0 and root < hi:
        root = min(hi, root + step)
        step *= 2.0
    return root


def _grid_search(
    delta_fn: Callable[[npt.NDArray[np.float64]], npt.NDArray[np.float64]],
    target: float,
    hi: float,
    points: int = 240,
) -> float:
    """Smallest passing ε on a geometric grid in (0, hi], refined by bisection between the
    last failing and the first passing grid point. Valid for bounds that are NOT monotone
    in ε (Hoeffding, Bennett): every ε it returns satisfies ``bound(ε) <= target``."""
    grid = np.geomspace(1e-6, hi, points)
    values = delta_fn(grid)
    passing = np.nonzero(values <= target)[0]
    if passing.size == 0:
        return math.inf
    i = int(passing[0])
    if i == 0:
        return float(grid[0])
    lo, up = float(grid[i - 1]), float(grid[i])
    for _ in range(60):
        mid = 0.5 * (lo + up)
        if float(delta_fn(np.array([mid]))[0]) <= target:
            up = mid
        else:
            lo = mid
        if up - lo <= 1e-10 * up:
            break
    return up


def _finish(
    eps: float,
    *,
    method: str,
    delta: float,
    T: int,
    s: float,
    n: int,
    d: int,
    eps0: float,
    note: str = "",
    capped: bool = False,
    valid: bool | None = None,
    ci: tuple[float | None, float | None] = (None, None),
) -> CountermeasureResult:
    notes = [note] if note else []
    if valid is None:
        valid = method in CERTIFICATE_METHODS
    if valid and eps > eps0:
        notes.append(
            "bound gives no ε below the local ε0; capped at ε0 (the scrambler post-processes "
            "the sampled messages)"
        )
        eps = eps0
    if math.isinf(eps) and s == 0.0 and T > 1 and not capped:
        floor = (1.0 - 1.0 / T) ** d
        if delta < floor:
            need = math.ceil(math.log(delta) / math.log1p(-1.0 / T))
            notes.append(
                f"impossible: with sigma=0 no ε achieves δ < (1−1/T)^d = {floor:.4g}; "
                f"needs dummies >= ln δ / ln(1−1/T) = {need}"
            )
    return CountermeasureResult(
        epsilon=float(eps),
        delta=delta,
        method=method,
        valid=bool(valid),
        targets=T,
        sigma=s,
        n=n,
        dummies=d,
        note="; ".join(notes),
        capped=capped,
        ci_low=ci[0],
        ci_high=ci[1],
    )


def _uncapped_epsilon(
    method: str,
    T: int,
    s: float,
    n: int,
    d: int,
    delta: float,
    *,
    samples: int,
    rng: np.random.Generator,
) -> CountermeasureResult:
    eps0 = sampling_epsilon(targets=T, sigma=s)
    hi = eps0 if math.isfinite(eps0) else _EPS_CEILING
    log_target = math.log(delta)
    log_tail = _log_tail_for(delta)
    kw: dict[str, Any] = {"T": T, "s": s, "n": n, "d": d, "eps0": eps0, "delta": delta}
    if T == 1 or s == 1.0:
        return _finish(0.0, method=method, note="output independent of the input", **kw)
    if method == "local":
        return _finish(eps0, method=method, note="pure ε0 of sampling (Theorem 2, d=0)", **kw)
    if method == "exact":
        if not _exact_available(T, n, d):
            return _finish(
                math.inf,
                method=method,
                valid=False,
                note="unavailable: instance too large for exhaustive enumeration",
                **kw,
            )
        curves = _exact_curves(T, s, n, d, None)
        eps = max(curve.epsilon(delta) for _, curve in curves)
        return _finish(eps, method=method, note="exhaustive over all neighbouring inputs", **kw)
    if method == "lemma2-exact":
        ev = bounds.Lemma2Exact(targets=T, sigma=s, n=n, dummies=d, log_tail=log_tail)

        def log_delta(e: float) -> float:
            v = ev.delta(e)
            return math.log(v) if v > 0 else -math.inf

        return _finish(_monotone_search(log_delta, log_target, hi), method=method, **kw)
    if method in ("bennett", "hoeffding", "bennett-published"):
        fn = {
            "bennett": bounds.bennett_delta,
            "hoeffding": bounds.hoeffding_delta,
            "bennett-published": bounds.bennett_published_delta,
        }[method]

        def vec(e: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
            return fn(targets=T, sigma=s, n=n, dummies=d, epsilon=e, log_tail=log_tail)

        eps = _grid_search(vec, delta, hi)
        note = (
            "printed Lemma 3 (extra 1/(aN)): NOT a valid bound, reproduction only"
            if method == "bennett-published"
            else ""
        )
        if method == "bennett-published":
            return _finish(min(eps, eps0), method=method, note=note, valid=False, **kw)
        return _finish(eps, method=method, note=note, **kw)
    if method == "lower-bound":
        if T < 3 or n + d > _PAIR_MAX_MESSAGES:
            return _finish(
                math.inf,
                method=method,
                valid=False,
                note=f"unavailable: needs targets >= 3 and n + d <= {_PAIR_MAX_MESSAGES}",
                **kw,
            )
        pair = bounds.ThirdTargetPair(targets=T, sigma=s, n=n, dummies=d, log_tail=log_tail)

        def log_pair(e: float) -> float:
            v = pair.delta(e)
            return math.log(v) if v > 0 else -math.inf

        return _finish(
            min(_monotone_search(log_pair, log_target, hi), eps0),
            method=method,
            valid=False,
            note="LOWER bound: exact ε(δ) of one neighbouring pair (n−1 common messages at a "
            "third target); the true ε lies between this and lemma2-exact",
            **kw,
        )
    if method == "montecarlo":
        mc = bounds.MonteCarloLemma2(targets=T, sigma=s, n=n, dummies=d, samples=samples, rng=rng)

        def make(z: float) -> Callable[[float], float]:
            def log_delta(e: float) -> float:
                est, se = mc.delta(e)
                v = est + z * se
                return math.log(v) if v > 0 else -math.inf

            return log_delta

        point = min(_monotone_search(make(0.0), log_target, hi), eps0)
        low = min(_monotone_search(make(-1.96), log_target, hi), eps0)
        high = min(_monotone_search(make(1.96), log_target, hi), eps0)
        return _finish(
            point,
            method=method,
            valid=False,
            note=f"Monte-Carlo ESTIMATE (Algorithm 2, R={samples} per m), not a certificate; "
            "ci_low/ci_high from the 95% CI of δ",
            ci=(low, high),
            **kw,
        )
    raise ValueError(
        f"method must be one of {', '.join(UNCAPPED_METHODS)}, best or all, got {method!r}"
    )


def _capped_epsilon(
    method: str, T: int, s: float, n: int, d: int, delta: float
) -> CountermeasureResult:
    eps0 = sampling_epsilon(targets=T, sigma=s)
    kw: dict[str, Any] = {
        "T": T,
        "s": s,
        "n": n,
        "d": d,
        "eps0": eps0,
        "delta": delta,
        "capped": True,
    }
    if n + d > n * T:
        raise ValueError(
            f"dummies must satisfy n + d <= n * targets for the capped scrambler, got {d}"
        )
    if T == 1 or s == 1.0:
        return _finish(0.0, method=method, note="output independent of the input", **kw)
    if method == "local":
        return _finish(eps0, method=method, note="pure ε0 of sampling (post-processing)", **kw)
    if method == "theorem3-published":
        if d == 0 or d >= n:
            return _finish(
                math.inf, method=method, valid=False, note="Theorem 3 needs 1 <= d <= n-1", **kw
            )
        eps = theorem3_published_epsilon(
            targets=T, sigma_lie=sigma_lie_from_uniform(targets=T, sigma=s), n=n, dummies=d
        )
        note = "Theorem 3 as printed (σ converted to convention L): NOT a certified bound"
        if _exact_available(T, n, d):
            true_eps = capped_exact_pure_epsilon(targets=T, sigma=s, n=n, dummies=d)
            if true_eps > eps + 1e-12:
                note += f"; UNDERSTATES the exact pure ε {true_eps:.6g}"
        return _finish(eps, method=method, valid=False, note=note, **kw)
    if method in ("exact", "exact-pure"):
        if not _exact_available(T, n, d):
            return _finish(
                math.inf,
                method=method,
                valid=False,
                note="unavailable: instance too large for exhaustive enumeration",
                **kw,
            )
        if method == "exact-pure":
            eps = capped_exact_pure_epsilon(targets=T, sigma=s, n=n, dummies=d)
            return _finish(eps, method=method, note="pure ε (δ = 0 suffices)", **kw)
        curves = _exact_curves(T, s, n, d, n)
        eps = max(curve.epsilon(delta) for _, curve in curves)
        return _finish(eps, method=method, note="exhaustive over all neighbouring inputs", **kw)
    raise ValueError(
        f"method must be one of {', '.join(CAPPED_METHODS)}, best or all, got {method!r}"
    )


def scrambler_epsilon_all(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    delta: float,
    capped: bool = False,
    samples: int = 5000,
    rng: Any = 0,
) -> list[CountermeasureResult]:
    """Every evaluator's ε at ``delta`` (same parameters as :func:`scrambler_epsilon`)."""
    T, s, nn, d = _check_common(targets, sigma, n, dummies)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    cap = check_bool("capped", capped)
    if cap:
        return [_capped_epsilon(m, T, s, nn, d, dl) for m in CAPPED_METHODS]
    R = check_int("samples", samples, low=2)
    gen = as_rng(rng)
    return [_uncapped_epsilon(m, T, s, nn, d, dl, samples=R, rng=gen) for m in UNCAPPED_METHODS]


def scrambler_epsilon(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    delta: float,
    method: str = "best",
    capped: bool = False,
    samples: int = 5000,
    rng: Any = 0,
) -> CountermeasureResult:
    """ε(δ) of the scrambler A_σ^{n,d} (or the capped Ã_σ^{n,d}), per evaluator.

    Parameters
    ----------
    targets
        Number of targets T >= 1.
    sigma
        Sampling rate σ in [0, 1], convention U (uniform among all T targets).
    n
        Sources per scrambler, n >= 1.
    dummies
        Dummies d >= 0 added by each scrambler.
    delta
        Target δ in (0, 1).
    method
        ``best`` (smallest certificate), or one name of :data:`UNCAPPED_METHODS`
        (:data:`CAPPED_METHODS` when ``capped``).
    capped
        Analyse Ã_σ^{n,d} (at most n messages per target; needs ``n + d <= n T``).
    samples, rng
        Monte-Carlo samples per mixture component and random generator (``montecarlo``).

    Returns
    -------
    CountermeasureResult
        ``epsilon`` is the smallest ε the method certifies (capped at the local ε0 for
        certificates); ``inf`` with an explanatory note when impossible.

    Examples
    --------
    >>> r = scrambler_epsilon(targets=20, sigma=0.2, n=100, dummies=50, delta=1e-4)
    >>> r.method, round(r.epsilon, 4), r.valid
    ('lemma2-exact', 2.3268, True)
    >>> print(scrambler_epsilon(targets=20, sigma=0.0, n=500, dummies=50, delta=1e-4).note)
    impossible: with sigma=0 no ε achieves δ < (1−1/T)^d = 0.07694; needs dummies >= ln δ /
    ln(1−1/T) = 180
    """
    T, s, nn, d = _check_common(targets, sigma, n, dummies)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    cap = check_bool("capped", capped)
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {method!r}")
    if method != "best":
        if cap:
            return _capped_epsilon(method, T, s, nn, d, dl)
        R = check_int("samples", samples, low=2)
        return _uncapped_epsilon(method, T, s, nn, d, dl, samples=R, rng=as_rng(rng))
    if cap:
        names = ["exact", "exact-pure", "local"]
        results = [_capped_epsilon(m, T, s, nn, d, dl) for m in names]
    else:
        names = ["exact", "lemma2-exact", "bennett", "hoeffding", "local"]
        gen = as_rng(rng)
        results = [
            _uncapped_epsilon(m, T, s, nn, d, dl, samples=2, rng=gen)
            for m in names
            if m != "exact" or _exact_available(T, nn, d)
        ]
    valid = [r for r in results if r.valid]
    return min(valid, key=lambda r: (r.epsilon, names.index(r.method)))


def scrambler_delta(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: float,
    method: str = "best",
    capped: bool = False,
    samples: int = 5000,
    rng: Any = 0,
) -> CountermeasureResult:
    """δ(ε) of the scrambler per evaluator (``best`` = smallest certified δ).

    For the non-monotone concentration bounds the reported δ is ``min_{ε' <= ε}
    bound(ε')`` over a grid plus ε itself ((ε', δ)-DP implies (ε, δ)-DP for ε >= ε').

    Examples
    --------
    >>> r = scrambler_delta(targets=4, sigma=0.2, n=20, dummies=20, epsilon=1.0,
    ...                     method="lemma2-exact")
    >>> round(r.delta, 6)
    0.005818
    """
    T, s, nn, d = _check_common(targets, sigma, n, dummies)
    eps = check_real("epsilon", epsilon, low=0.0)
    cap = check_bool("capped", capped)
    if not isinstance(method, str):
        raise TypeError(f"method must be a string, got {method!r}")
    eps0 = sampling_epsilon(targets=T, sigma=s)

    def result(
        value: float, m: str, note: str = "", valid: bool | None = None
    ) -> CountermeasureResult:
        return CountermeasureResult(
            epsilon=eps,
            delta=float(min(max(value, 0.0), 1.0)),
            method=m,
            valid=(m in CERTIFICATE_METHODS) if valid is None else valid,
            targets=T,
            sigma=s,
            n=nn,
            dummies=d,
            note=note,
            capped=cap,
        )

    def one(m: str) -> CountermeasureResult:
        if m == "local":
            return result(local_randomizer_delta(targets=T, sigma=s, epsilon=eps), m)
        if T == 1 or s == 1.0:
            return result(0.0, m, "output independent of the input")
        if m in ("exact", "exact-pure"):
            if not _exact_available(T, nn, d):
                return result(
                    1.0, m, "unavailable: instance too large for exhaustive enumeration", False
                )
            if m == "exact-pure":
                pure = (
                    capped_exact_pure_epsilon(targets=T, sigma=s, n=nn, dummies=d)
                    if cap
                    else max(c.max_loss for _, c in _exact_curves(T, s, nn, d, None))
                )
                return result(0.0 if eps >= pure else 1.0, m, f"pure ε = {pure:.6g}")
            curves = _exact_curves(T, s, nn, d, nn if cap else None)
            return result(
                max(c.delta(eps) for _, c in curves), m, "exhaustive over all neighbouring inputs"
            )
        if cap:
            raise ValueError(
                f"method must be one of exact, exact-pure, local or best for capped, got {m!r}"
            )
        if m == "lemma2-exact":
            ev = bounds.Lemma2Exact(targets=T, sigma=s, n=nn, dummies=d)
            value = ev.delta(eps)
            if 0 < value < 1e-20:
                ev = bounds.Lemma2Exact(
                    targets=T, sigma=s, n=nn, dummies=d, log_tail=_log_tail_for(value)
                )
                value = ev.delta(eps)
            return result(value, m)
        if m in ("bennett", "hoeffding", "bennett-published"):
            fn = {
                "bennett": bounds.bennett_delta,
                "hoeffding": bounds.hoeffding_delta,
                "bennett-published": bounds.bennett_published_delta,
            }[m]
            grid = (
                np.append(np.geomspace(1e-6, max(eps, 1e-6), 200), eps)
                if eps > 0
                else np.array([0.0])
            )
            with np.errstate(divide="ignore", invalid="ignore"):
                vals = fn(targets=T, sigma=s, n=nn, dummies=d, epsilon=grid)
            vals = np.where(np.isnan(vals), 1.0, vals)
            value = float(np.min(vals))
            if m == "bennett-published":
                return result(value, m, "printed Lemma 3: NOT a valid bound", False)
            return result(value, m)
        if m == "lower-bound":
            if T < 3 or nn + d > _PAIR_MAX_MESSAGES:
                return result(
                    0.0,
                    m,
                    f"unavailable: needs targets >= 3 and n + d <= {_PAIR_MAX_MESSAGES}",
                    False,
                )
            pair = bounds.ThirdTargetPair(targets=T, sigma=s, n=nn, dummies=d)
            return result(
                pair.delta(eps), m, "LOWER bound: exact δ of one neighbouring pair", False
            )
        if m == "montecarlo":
            mc = bounds.MonteCarloLemma2(
                targets=T,
                sigma=s,
                n=nn,
                dummies=d,
                samples=check_int("samples", samples, low=2),
                rng=as_rng(rng),
            )
            est, se = mc.delta(eps)
            return result(
                est, m, f"Monte-Carlo ESTIMATE ± {1.96 * se:.3g} (95%), not a certificate", False
            )
        raise ValueError(f"method must be one of {', '.join(UNCAPPED_METHODS)} or best, got {m!r}")

    if method != "best":
        return one(method)
    names = (
        ["exact", "exact-pure", "local"]
        if cap
        else ["exact", "lemma2-exact", "bennett", "hoeffding", "local"]
    )
    res = [one(m) for m in names if not m.startswith("exact") or _exact_available(T, nn, d)]
    del eps0
    return min((r for r in res if r.valid), key=lambda r: r.delta)


# --------------------------------------------------------------------------- generic (Thm 5)


@dataclass(frozen=True)
class GenericScramblerResult:
    """(ε, δ) of a scrambler around a generic ε0-LDP randomizer (Theorem 5 / Remark 2)."""

    epsilon: float
    delta: float
    method: str
    valid: bool
    eps0: float
    gamma: float
    n: int
    dummies: int
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form with stable keys (for JSON)."""
        return asdict(self)


def generic_scrambler_epsilon(
    *,
    n: int,
    dummies: int,
    delta: float,
    randomizer: Any = None,
    eps0: float | None = None,
    gamma: float | None = None,
    method: str = "best",
) -> GenericScramblerResult | CountermeasureResult:
    """ε(δ) of ``S_{R,d} ∘ R^n`` for any ε0-LDP local randomizer R (Theorem 5, Remark 2).

    The scrambler must draw its ``d`` dummies i.i.d. from R's *blanket distribution*
    ω_R (Remark 2), otherwise nothing here applies. Either pass ``randomizer`` (any object
    with ``eps0`` and ``blanket_probability``, e.g. from :mod:`crowdhide.mechanisms`) or
    ``eps0`` and ``gamma`` (the total-variation similarity; it must be R's own γ — a smaller
    γ does not make the Lemma 4 constants valid).

    k-ary randomized response (an object with ``k`` and ``eps0`` whose blanket is uniform) is
    exactly the sampling randomizer with ``T = k`` and ``σ = γ``, so it gets the full T-ary
    analysis (:func:`scrambler_epsilon`). Otherwise the methods are ``hoeffding``
    (Theorem 5 with a = e^ε − 1), ``bennett`` (Lemma 2 + Bennett with Lemma 4's constants)
    and ``local`` (ε0); ``best`` is the smallest.

    Examples
    --------
    >>> r = generic_scrambler_epsilon(eps0=1.0, gamma=0.5, n=1000, dummies=100, delta=1e-6)
    >>> r.method in ("hoeffding", "bennett"), r.valid, r.epsilon < 1.0
    (True, True, True)
    """
    nn = check_int("n", n, low=1)
    d = check_int("dummies", dummies, low=0)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if randomizer is not None:
        if not hasattr(randomizer, "eps0") or not hasattr(randomizer, "blanket_probability"):
            raise TypeError(
                "randomizer must expose eps0 and blanket_probability (else pass eps0 and "
                f"gamma), got {type(randomizer).__name__}"
            )
        e0 = check_real("eps0", randomizer.eps0, low=0.0)
        g = check_probability("gamma", randomizer.blanket_probability, allow_zero=False)
        if _is_kary_rr(randomizer):
            # k-RR is the sampling randomizer with T = k and σ = γ: full T-ary analysis.
            return scrambler_epsilon(
                targets=int(randomizer.k), sigma=g, n=nn, dummies=d, delta=dl, method=method
            )
    else:
        if eps0 is None or gamma is None:
            raise ValueError("eps0 and gamma must be given when randomizer is None, got None")
        e0 = check_real("eps0", eps0, low=0.0)
        g = check_probability("gamma", gamma, allow_zero=False)
        if g < math.exp(-e0) - 1e-12:
            raise ValueError(
                f"gamma must be >= exp(-eps0) for an eps0-LDP randomizer (Balle et al.), got {g!r}"
            )
    log_tail = _log_tail_for(dl)

    def run(m: str) -> GenericScramblerResult:
        if m == "local":
            return GenericScramblerResult(
                e0, dl, m, True, e0, g, nn, d, "pure ε0 (post-processing)"
            )
        fn = {
            "hoeffding": bounds.generic_hoeffding_delta,
            "bennett": bounds.generic_bennett_delta,
        }.get(m)
        if fn is None:
            raise ValueError(f"method must be hoeffding, bennett, local or best, got {m!r}")

        def vec(e: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
            with np.errstate(divide="ignore", invalid="ignore"):
                v = fn(eps0=e0, gamma=g, n=nn, dummies=d, epsilon=e, log_tail=log_tail)
            return np.where(np.isnan(v), 1.0, v)

        eps = _grid_search(vec, dl, max(e0, 1e-6))
        note = ""
        if eps > e0:
            eps, note = e0, "bound gives no ε below ε0; capped at ε0"
        return GenericScramblerResult(eps, dl, m, True, e0, g, nn, d, note)

    if method != "best":
        return run(method)
    return min((run(m) for m in ("bennett", "hoeffding", "local")), key=lambda r: r.epsilon)


def _is_kary_rr(randomizer: Any) -> bool:
    """Whether ``randomizer`` behaves as k-ary randomized response (duck-typed)."""
    k = getattr(randomizer, "k", None)
    keep = getattr(randomizer, "keep_probability", None)
    other = getattr(randomizer, "other_probability", None)
    if not isinstance(k, int) or keep is None or other is None:
        return False
    return bool(
        math.isclose(keep + (k - 1) * other, 1.0, rel_tol=1e-9)
        and math.isclose(math.log(keep) - math.log(other), randomizer.eps0, rel_tol=1e-9)
    )


# --------------------------------------------------------------------------- costs


@dataclass(frozen=True)
class CountermeasureCosts:
    """Costs of a countermeasure configuration (Sections II-E, III-C, IV-D, corrected).

    ``sources`` is the number of real tuples the computation must use (the paper's S,
    utility held fixed as in Section V). Because a sampled message still reaches its true
    target with probability ``1 − σ + σ/T`` (footnote 5), ``sources_needed = S/(1−σ+σ/T)``
    (the paper prints ``S/(1−σ)``, kept as ``sources_needed_published``).

    Attributes
    ----------
    utility
        Expected number of real tuples used (= ``sources``).
    real_fraction
        ``1 − σ + σ/T``: probability that a source's real tuple is used.
    sources_needed, sources_needed_published, extra_consents, extra_consents_relative
        Consenting sources needed, and the extra ones relative to S.
    scramblers
        ``ceil(sources_needed / n)`` (0 for the local scheme).
    messages, baseline_messages, overhead
        Messages sent in the cluster (source→scrambler plus scrambler→targets, or
        ``d + 1`` per source for the local scheme), the non-private count S, and the
        relative network overhead ``messages / S − 1``.
    channels_per_scrambler, channels_per_target, channels_per_source, max_channels
        Secure channels per node (individual load): a scrambler talks to its n sources and
        the T targets; a target to every scrambler (or to the sources in the local scheme).
    """

    scheme: str
    sources: int
    targets: int
    sigma: float
    n: int
    dummies: int
    utility: float
    real_fraction: float
    sources_needed: float
    sources_needed_published: float
    extra_consents: float
    extra_consents_relative: float
    scramblers: int
    messages: float
    baseline_messages: int
    overhead: float
    channels_per_scrambler: int
    channels_per_target: float
    channels_per_source: int
    max_channels: float

    def to_dict(self) -> dict[str, Any]:
        """Plain-dict form with stable keys (for JSON)."""
        return asdict(self)


def countermeasure_costs(
    *, sources: int, targets: int, sigma: float, n: int, dummies: int, scheme: str = "scrambler"
) -> CountermeasureCosts:
    """Costs of sampling + dummies, with scramblers (Section IV-D) or locally (III-C).

    Parameters
    ----------
    sources
        Real tuples to use (the paper's S; utility held fixed).
    targets, sigma, n, dummies
        Countermeasure parameters (σ in convention U). For ``scheme="local"`` ``n`` is
        ignored and ``dummies`` is the per-source count (``<= T − 1``).
    scheme
        ``"scrambler"`` (default) or ``"local"``.

    Examples
    --------
    >>> c = countermeasure_costs(sources=10_000, targets=20, sigma=0.1, n=100, dummies=50)
    >>> c.scramblers, round(c.overhead, 3), c.channels_per_scrambler
    (111, 1.762, 120)
    """
    S = check_int("sources", sources, low=1)
    T = check_int("targets", targets, low=1)
    s = check_probability("sigma", sigma, allow_one=False)
    nn = check_int("n", n, low=1)
    if scheme not in ("scrambler", "local"):
        raise ValueError(f"scheme must be 'scrambler' or 'local', got {scheme!r}")
    d = check_int("dummies", dummies, low=0, high=(T - 1) if scheme == "local" else None)
    real = 1.0 - s + s / T
    needed = S / real
    if scheme == "scrambler":
        scramblers = math.ceil(needed / nn - 1e-9)
        messages = needed + needed * (nn + d) / nn
        per_scrambler, per_target, per_source = nn + T, float(scramblers), 1
        max_channels = max(per_scrambler, per_target)
    else:
        scramblers = 0
        messages = needed * (d + 1)
        per_scrambler, per_target, per_source = 0, needed * (d + 1) / T, d + 1
        max_channels = max(per_source, per_target)
    return CountermeasureCosts(
        scheme=scheme,
        sources=S,
        targets=T,
        sigma=s,
        n=nn,
        dummies=d,
        utility=float(S),
        real_fraction=real,
        sources_needed=needed,
        sources_needed_published=S / (1.0 - s),
        extra_consents=needed - S,
        extra_consents_relative=needed / S - 1.0,
        scramblers=scramblers,
        messages=messages,
        baseline_messages=S,
        overhead=messages / S - 1.0,
        channels_per_scrambler=per_scrambler,
        channels_per_target=per_target,
        channels_per_source=per_source,
        max_channels=max_channels,
    )


# --------------------------------------------------------------------------- calibration


@dataclass(frozen=True)
class CountermeasureCalibration:
    """Cheapest configuration meeting a target (ε, δ) under cost constraints.

    ``feasible`` is False when nothing on the search grid meets the target and constraints;
    ``reason`` then explains why (e.g. the σ = 0 δ floor). ``certificate`` and ``costs``
    describe the chosen configuration (``None`` when infeasible).
    """

    feasible: bool
    targets: int
    epsilon: float
    delta: float
    scheme: str | None
    sigma: float | None
    n: int | None
    dummies: int | None
    certificate: CountermeasureResult | None
    costs: CountermeasureCosts | None
    reason: str
    candidates_checked: int

    def to_dict(self) -> dict[str, Any]:
        """Flat dict: parameters, certificate (ε, δ, method) and the main costs."""
        out: dict[str, Any] = {
            "feasible": self.feasible,
            "targets": self.targets,
            "target_epsilon": self.epsilon,
            "target_delta": self.delta,
            "scheme": self.scheme,
            "sigma": self.sigma,
            "n": self.n,
            "dummies": self.dummies,
            "epsilon": self.certificate.epsilon if self.certificate else None,
            "delta": self.certificate.delta if self.certificate else None,
            "method": self.certificate.method if self.certificate else None,
            "valid": self.certificate.valid if self.certificate else False,
            "reason": self.reason,
            "candidates_checked": self.candidates_checked,
        }
        if self.costs is not None:
            c = self.costs
            out.update(
                overhead=c.overhead,
                max_channels=c.max_channels,
                channels_per_scrambler=c.channels_per_scrambler,
                extra_consents_relative=c.extra_consents_relative,
                real_fraction=c.real_fraction,
            )
        return out


_SIGMA_GRID = (0.0, 0.02, 0.05, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95)
_N_GRID = (10, 20, 50, 100, 200, 300, 500, 1000, 2000, 5000, 10000)


def _certified_delta(T: int, s: float, n: int, d: int, eps: float, log_tail: float) -> float:
    """Cheapest certified δ(ε) used by the calibration (lemma2-exact, local)."""
    if T == 1 or s >= 1.0:
        return 0.0
    local = local_randomizer_delta(targets=T, sigma=s, epsilon=eps)
    if local == 0.0:
        return 0.0
    ev = bounds.Lemma2Exact(targets=T, sigma=s, n=n, dummies=d, log_tail=log_tail)
    return min(local, ev.delta(eps))


def calibrate_countermeasures(
    *,
    targets: int,
    epsilon: float,
    delta: float,
    max_channels: float | None = None,
    max_overhead: float | None = None,
    max_consents: float | None = None,
    sources: int = 10_000,
    max_dummies: int = 20_000,
) -> CountermeasureCalibration:
    """Cheapest (σ, n, d) whose certified guarantee meets (ε, δ) under the constraints.

    Candidates: the local scheme (R_σ^d, pure ε, Theorem 2) and the scrambler scheme
    (A_σ^{n,d}, certified with ``lemma2-exact``/``local``) on a grid of σ and n; for each
    (σ, n) the smallest sufficient d is found by bisection (δ is non-increasing in d: extra
    uniform dummies are post-processing). "Cheapest" = smallest relative network overhead,
    then fewest extra consents, then fewest channels per node.

    Parameters
    ----------
    targets
        Number of targets T.
    epsilon, delta
        Target guarantee (per cluster).
    max_channels
        Maximum secure channels per node (scrambler: n + T; targets: number of scramblers).
    max_overhead
        Maximum relative network overhead (messages / S − 1).
    max_consents
        Maximum extra consents relative to S (``sources_needed / S − 1``).
    sources
        Real tuples to keep (S), used for channel counts at targets.
    max_dummies
        Largest d considered.

    Examples
    --------
    >>> cal = calibrate_countermeasures(targets=20, epsilon=1.0, delta=1e-4, max_channels=620)
    >>> cal.feasible, cal.certificate.epsilon <= 1.0, cal.costs.max_channels <= 620
    (True, True, True)
    """
    T = check_int("targets", targets, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    mc = None if max_channels is None else check_real("max_channels", max_channels, low=1.0)
    mo = None if max_overhead is None else check_real("max_overhead", max_overhead, low=0.0)
    mx = None if max_consents is None else check_real("max_consents", max_consents, low=0.0)
    S = check_int("sources", sources, low=1)
    dmax = check_int("max_dummies", max_dummies, low=0)

    def fits(c: CountermeasureCosts) -> bool:
        return (
            (mc is None or c.max_channels <= mc + 1e-9)
            and (mo is None or c.overhead <= mo + 1e-9)
            and (mx is None or c.extra_consents_relative <= mx + 1e-9)
        )

    def key(c: CountermeasureCosts) -> tuple[float, float, float]:
        return (round(c.overhead, 12), round(c.extra_consents_relative, 12), c.max_channels)

    best: tuple[CountermeasureCosts, CountermeasureResult] | None = None
    tail = _log_tail_for(dl)
    checked = 0
    reasons: list[str] = []
    if T == 1:
        costs = countermeasure_costs(
            sources=S, targets=1, sigma=0.0, n=1, dummies=0, scheme="local"
        )
        cert = _finish(
            0.0,
            method="local",
            delta=dl,
            T=1,
            s=0.0,
            n=1,
            d=0,
            eps0=0.0,
            note="a single target: nothing to hide",
        )
        return CountermeasureCalibration(True, 1, eps, dl, "local", 0.0, 1, 0, cert, costs, "", 1)
    # Local scheme: pure ε, d <= T − 1 (Theorem 2).
    for s in _SIGMA_GRID:
        for d in range(T):
            checked += 1
            if local_randomizer_epsilon(targets=T, sigma=s, dummies=d) <= eps:
                costs = countermeasure_costs(
                    sources=S, targets=T, sigma=s, n=1, dummies=d, scheme="local"
                )
                if fits(costs) and (best is None or key(costs) < key(best[0])):
                    cert = _finish(
                        local_randomizer_epsilon(targets=T, sigma=s, dummies=d),
                        method="local",
                        delta=0.0,
                        T=T,
                        s=s,
                        n=1,
                        d=d,
                        eps0=math.inf,
                        note="local randomizer R_σ^d (Theorem 2), pure ε, no scrambler",
                    )
                    best = (costs, cert)
                break
    # Scrambler scheme: large n first (cheapest overhead for a given privacy), so that the
    # first solutions found prune the rest.
    n_grid = set(_N_GRID)
    if mc is not None and mc - T >= 1:
        n_grid.add(int(mc - T))  # the largest scrambler the channel budget allows
    for n in sorted(n_grid, reverse=True):
        if mc is not None and n + T > mc:
            continue
        for s in _SIGMA_GRID:
            checked += 1
            lo_costs = countermeasure_costs(sources=S, targets=T, sigma=s, n=n, dummies=0)
            if not fits(lo_costs):
                # Overhead and consents grow with d and channels do not depend on it.
                continue
            if best is not None and key(lo_costs) >= key(best[0]):
                continue
            # overhead(d) = (2 + d/n)/real − 1: cap d by max_overhead and by the best so far.
            real = lo_costs.real_fraction
            d_cap = float(dmax)
            if mo is not None:
                d_cap = min(d_cap, n * ((mo + 1.0) * real - 2.0))
            if best is not None:
                d_cap = min(d_cap, n * ((best[0].overhead + 1.0) * real - 2.0))
            d_hi = math.floor(d_cap + 1e-9)
            if d_hi < 0 or _certified_delta(T, s, n, d_hi, eps, tail) > dl:
                continue
            lo, hi = -1, d_hi  # invariant: hi passes, lo fails (or is −1)
            while hi - lo > 1:
                mid = (lo + hi) // 2
                checked += 1
                if _certified_delta(T, s, n, mid, eps, tail) <= dl:
                    hi = mid
                else:
                    lo = mid
            costs = countermeasure_costs(sources=S, targets=T, sigma=s, n=n, dummies=hi)
            if fits(costs) and (best is None or key(costs) < key(best[0])):
                cert = scrambler_epsilon(
                    targets=T, sigma=s, n=n, dummies=hi, delta=dl, method="lemma2-exact"
                )
                if cert.epsilon <= eps * (1 + 1e-9):
                    best = (costs, cert)
    if best is None:
        floor_d = math.ceil(math.log(dl) / math.log1p(-1.0 / T))
        reasons.append(
            "no configuration on the grid meets the target under the constraints"
            f" (σ=0 alone needs d >= ln δ/ln(1−1/T) = {floor_d}; smaller ε needs larger σ·n + d,"
            " i.e. more channels, overhead or consents)"
        )
        return CountermeasureCalibration(
            False, T, eps, dl, None, None, None, None, None, None, "; ".join(reasons), checked
        )
    costs, cert = best
    return CountermeasureCalibration(
        True,
        T,
        eps,
        dl,
        costs.scheme,
        costs.sigma,
        costs.n if costs.scheme == "scrambler" else None,
        costs.dummies,
        cert,
        costs,
        "",
        checked,
    )
