"""Mechanism-specific shuffle certificates: randomizers whose privacy loss is three-valued.

For a neighbouring pair (x, x') of the target write ``π = (P0 + P1)/2`` and
``D = (P0 − P1)/(P0 + P1)`` for the two report laws. The mechanisms here all have
``D ∈ {−κ, 0, +κ}`` with ``κ = tanh(ε0/2)`` — every report either carries the full ε0 of
evidence or none. Three parameters describe them (the analogue of the variation-ratio triple
of Wang et al., VLDB 2024, in the form this derivation needs):

``κ``
    the evidence of an informative report (``p = e^{ε0} = (1+κ)/(1−κ)`` its likelihood ratio);
``mu2``
    the probability under π that a report is informative, ``π(D ≠ 0)`` (each sign half of it);
    ``β = κ · mu2`` is the total variation ``TV(P0, P1)``;
``rho``
    the clone probability ``2r`` with ``r = min R(v)(y) / (P0(y) + P1(y))`` over every
    input v of another user, every pair and every report y (the "blanket ratio").

**Certificate.** Every other user's law is ``2r · π + (1 − 2r) W_v`` with ``W_v >= 0``.
Revealing who is a clone and the residual reports (independent of the target's value) can only
help the adversary; given C clones, the target and the clones report i.i.d. from π up to the
factor ``P_b = π (1 ± D)``, so the likelihood ratio of the multiset is ``(m + κ(a − b))/(m −
κ(a − b))`` with m = C + 1 and a, b the counts of ``+κ`` and ``−κ`` reports — exactly the
``krr_clone`` structure, evaluated by
:func:`crowdhide.accounting._krr_fast.clone_noise_log_delta` (blocked, O(1) in n).

**Lower bound.** All other users on one value z outside {x, x'}: the counts (a, b) are a
post-processing of the output, their law is the α-pair mixture of
:func:`crowdhide.accounting._krr_fast.third_marginal_lower_log_delta` with the target's
``P0(D = +κ)``, ``P0(D = −κ)`` and the others' ``R(z)(D ≠ 0)``.

Parameters per mechanism (ε0, domain size d; e = e^{ε0}) — each checked by brute force on
small domains in ``tests/accounting/test_shuffle_mechanisms.py``:

``krr`` (k-ary randomized response, k = d)
    informative reports: y ∈ {x, x'}; ``mu2 = (e+1)/(e+d−1)``; the binding blanket ratio is
    at y = x for v ∉ {x, x'}: ``q/(p+q) = 1/(e+1)``, so ``rho = 2/(e+1)``.
``oue`` (optimized unary encoding: bit x set w.p. 1/2, every other bit w.p. 1/(e+1))
    D depends on the bits (x, x') only: (1, 0) → ratio e, (0, 1) → 1/e, equal bits → 1;
    ``mu2 = P0(1,0) + P1(1,0) = 1/2``; for v ∉ {x, x'} the bit of v differs too: at bits
    (x, x', v) = (1, 1, 0) the ratio is ``q² (1/2) / (q (1−q))`` = ``1/(2e)`` (the minimum;
    (1, 0, 0) gives q, (0, 0, 0) gives 1/2, v = x gives 1/(e+1)) → ``rho = 1/e``.
``rappor`` (symmetric unary encoding, each bit kept w.p. t/(t+1), t = e^{ε0/2})
    same D pattern; ``mu2 = (t² + 1)/(t + 1)²``; with the bit of v unset (factor 1/t) the
    blanket ratios are ``1/(2e)`` (bits (1, 1)), ``1/(e+1)`` (bits (1, 0)), ``1/2`` (bits
    (0, 0)) → ``rho = 1/e``.
``subset`` (k-subset selection: a k-subset S, P(S | x) ∝ e if x ∈ S else 1)
    informative: S contains exactly one of x, x'; with ``Z = C(d−1, k−1) e + C(d−1, k)``,
    ``mu2 = C(d−2, k−1)(e+1)/Z``; blanket ratio ``1/(2e)`` on sets containing both x and x'
    but not v (k >= 2), ``1/(e+1)`` otherwise → ``rho = 1/e`` for k >= 2.
``olh`` (local hashing into g = d buckets with a random hash function from a family with
collision probability 1/g, then g-RR; the input domain has at least 3 values)
    informative: ``h(x) ≠ h(x')`` and y ∈ {h(x), h(x')}; ``mu2 = (1 − 1/g)(e+1)/(e+g−1)``;
    blanket ratio ``1/(2e)`` at a collision ``h(x) = h(x') = y ≠ h(v)`` → ``rho = 1/e``.

Hadamard response, Laplace and the piecewise mechanism have privacy losses that are not
three-valued (or continuous); they are not covered (generic certificates apply to them).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting import _krr_fast
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.registry import Registry, best_of
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle import SafeSideCurve
from crowdhide.accounting.statement import Kind, PrivacyStatement

__all__ = [
    "MECHANISMS",
    "MECHANISM_REGISTRY",
    "Mechanism",
    "MechanismBound",
    "MechanismParams",
    "mechanism_curve",
    "mechanism_delta",
    "mechanism_epsilon",
    "mechanism_lower_curve",
]


@dataclass(frozen=True, slots=True)
class Mechanism:
    """A randomizer with three-valued privacy loss (see the module docstring).

    ``params(eps0, d, k)`` returns ``(kappa, mu2, rho, p_plus, p_minus, nu)``: evidence,
    informative probability under π, clone probability, the target's probabilities of a
    ``+κ`` / ``−κ`` report, and the informative probability of a third-value user.
    """

    name: str
    citation: str
    params: Callable[[float, int, int], tuple[float, float, float, float, float, float]]
    needs_k: bool = False


def _krr(eps0: float, d: int, k: int) -> tuple[float, float, float, float, float, float]:
    e = math.exp(eps0)
    p, q = e / (e + d - 1.0), 1.0 / (e + d - 1.0)
    return math.tanh(eps0 / 2.0), p + q, 2.0 / (e + 1.0), p, q, 2.0 * q


def _oue(eps0: float, d: int, k: int) -> tuple[float, float, float, float, float, float]:
    q = 1.0 / (math.exp(eps0) + 1.0)
    # target on x: bits (x, x') = (1, 0) w.p. (1−q)/2, (0, 1) w.p. q/2; third value: q(1−q) each
    rho = math.exp(-eps0)
    return math.tanh(eps0 / 2.0), 0.5, rho, 0.5 * (1.0 - q), 0.5 * q, 2.0 * q * (1.0 - q)


def _rappor(eps0: float, d: int, k: int) -> tuple[float, float, float, float, float, float]:
    t = math.exp(eps0 / 2.0)
    keep, flip = t / (t + 1.0), 1.0 / (t + 1.0)
    mu2 = keep * keep + flip * flip
    rho = math.exp(-eps0)
    return math.tanh(eps0 / 2.0), mu2, rho, keep * keep, flip * flip, 2.0 * keep * flip


def _subset(eps0: float, d: int, k: int) -> tuple[float, float, float, float, float, float]:
    e = math.exp(eps0)
    z = math.comb(d - 1, k - 1) * e + math.comb(d - 1, k)
    one = math.comb(d - 2, k - 1)  # sets with x and not x'
    rho = 1.0 / e if k >= 2 else 2.0 / (e + 1.0)
    # third value v: sets with exactly one of x, x' have weight e if v in S else 1
    v_in, v_out = math.comb(d - 3, k - 2) if k >= 2 else 0, math.comb(d - 3, k - 1)
    nu = 2.0 * (v_in * e + v_out) / z
    return math.tanh(eps0 / 2.0), one * (e + 1.0) / z, rho, one * e / z, one / z, nu


def _olh(eps0: float, d: int, k: int) -> tuple[float, float, float, float, float, float]:
    e, g = math.exp(eps0), float(d)
    p, q = e / (e + g - 1.0), 1.0 / (e + g - 1.0)
    apart = 1.0 - 1.0 / g  # P(h(x) != h(x'))
    # third value v: its reported bucket is h(x) or h(x') (apart) w.p. 2q, or p+q if h(v) hits
    nu = apart * ((1.0 - 2.0 / g) * 2.0 * q + (2.0 / g) * (p + q))
    return math.tanh(eps0 / 2.0), apart * (p + q), 1.0 / e, apart * p, apart * q, nu


#: The mechanisms with a specific certificate (``--mechanism NAME``).
MECHANISMS: dict[str, Mechanism] = {
    m.name: m
    for m in (
        Mechanism("krr", "k-ary randomized response (Warner 1965; Kairouz et al. 2016)", _krr),
        Mechanism("oue", "optimized unary encoding (Wang et al., USENIX Security 2017)", _oue),
        Mechanism("rappor", "basic one-time RAPPOR (Erlingsson et al., CCS 2014)", _rappor),
        Mechanism("subset", "k-subset selection (Ye & Barg 2018; Wang et al. 2016)", _subset, True),
        Mechanism("olh", "local hashing (Wang et al., USENIX Security 2017)", _olh),
    )
}


class _Curve(PrivacyCurve):
    def __init__(self, fn: Callable[[float, float], float], eps0: float, *, lower: bool) -> None:
        self._fn, self._eps0, self._lower = fn, eps0, lower

    def log_delta(self, epsilon: float) -> float:
        return min(self._fn(epsilon, -60.0), 0.0)

    def epsilon(self, delta: float) -> float:
        target = math.log(check_probability("delta", delta, allow_zero=False, allow_one=False))
        tail = min(-40.0, target - 40.0)  # windows' tails far below the target

        def curve(eps: float) -> float:
            return min(self._fn(eps, tail), 0.0)

        if curve(0.0) <= target:
            return 0.0
        xtol = max(1e-13, 1e-10 * self._eps0)
        return safe_root(curve, target, 0.0, self._eps0, xtol=xtol, lower_side=self._lower)

    def epsilon_upper_hint(self) -> float:
        return self._eps0


@dataclass(frozen=True, slots=True, kw_only=True)
class MechanismParams:
    """n shuffled reports of a mechanism with domain size ``d`` (and subset size ``k``).

    Examples
    --------
    >>> MechanismParams(eps0=2.0, n=1000, d=8)
    MechanismParams(eps0=2.0, n=1000, d=8, k=None)
    """

    eps0: float
    n: int
    d: int
    k: int | None = None

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "eps0", check_real("eps0", self.eps0, low=0.0, low_open=True, high=50.0)
        )
        object.__setattr__(self, "n", check_int("n", self.n, low=1, high=10**9))
        object.__setattr__(self, "d", check_int("d", self.d, low=2, high=10**6))
        if self.k is not None:
            object.__setattr__(self, "k", check_int("k", self.k, low=1, high=self.d - 1))


@dataclass(frozen=True, slots=True)
class MechanismBound:
    """A mechanism's certificate (``kind="upper"``, name ``mechanism:NAME``) or lower bound
    (``kind="lower"``, ``mechanism_lower:NAME``): a :class:`~crowdhide.accounting.registry.Bound`
    over :class:`MechanismParams`."""

    mechanism: Mechanism
    kind: Kind

    @property
    def name(self) -> str:
        prefix = "mechanism" if self.kind == "upper" else "mechanism_lower"
        return f"{prefix}:{self.mechanism.name}"

    @property
    def citation(self) -> str:
        return self.mechanism.citation

    def applies(self, params: MechanismParams) -> str | None:
        if self.mechanism.name == "subset" and params.d < 3:
            return f"mechanism 'subset' needs d >= 3, got d={params.d}"
        if self.mechanism.needs_k and params.k is None:
            return f"mechanism {self.mechanism.name!r} needs k (the subset size), got None"
        return None

    def curve(self, params: MechanismParams) -> PrivacyCurve:
        n, eps0 = params.n, params.eps0
        kappa, mu2, rho, p_plus, p_minus, nu = self.mechanism.params(eps0, params.d, params.k or 1)
        if self.kind == "upper":
            raw = _Curve(
                lambda e, t: _krr_fast.clone_noise_log_delta(n, kappa, mu2, rho, e, t),
                eps0,
                lower=False,
            )
        else:
            raw = _Curve(
                lambda e, t: _krr_fast.third_marginal_lower_log_delta(
                    n, p_plus, p_minus, nu, eps0, e
                ),
                eps0,
                lower=True,
            )
        return SafeSideCurve(raw, eps0, lower=self.kind == "lower")


#: The certificate and the lower bound of every mechanism in :data:`MECHANISMS`.
MECHANISM_REGISTRY: Registry[MechanismParams] = Registry(
    [MechanismBound(m, kind) for kind in ("upper", "lower") for m in MECHANISMS.values()],
    what="mechanism bound",
)


def _params(name: str, eps0: float, n: int, d: int, k: int | None) -> MechanismParams:
    """Validated parameters for mechanism ``name`` (a mechanism that does not apply is an
    input error here, not a statement)."""
    if name not in MECHANISMS:
        raise ValueError(f"mechanism must be one of {', '.join(MECHANISMS)}; got {name!r}")
    params = MechanismParams(eps0=eps0, n=n, d=d, k=k if MECHANISMS[name].needs_k else None)
    reason = MECHANISM_REGISTRY[f"mechanism:{name}"].applies(params)
    if reason is not None:
        raise ValueError(reason)
    return params


def mechanism_curve(
    *, mechanism: str, eps0: float, n: int, d: int, k: int | None = None
) -> PrivacyCurve:
    """Certificate curve of n shuffled reports of ``mechanism`` (module docstring), rounded a
    relative 1e-9 to the safe side.

    Examples
    --------
    >>> c = mechanism_curve(mechanism="oue", eps0=2.0, n=10_000, d=8)
    >>> 0.0 < c.epsilon(1e-6) < 0.11
    True
    """
    params = _params(mechanism, eps0, n, d, k)
    return MECHANISM_REGISTRY[f"mechanism:{mechanism}"].curve(params)


def mechanism_lower_curve(
    *, mechanism: str, eps0: float, n: int, d: int, k: int | None = None
) -> PrivacyCurve:
    """Lower-bound curve: the exact counts of informative reports, all others on one value."""
    params = _params(mechanism, eps0, n, d, k)
    return MECHANISM_REGISTRY[f"mechanism_lower:{mechanism}"].curve(params)


def _mechanism_statement(
    mechanism: str, eps0: float, n: int, d: int, k: int | None, query: dict[str, float]
) -> PrivacyStatement:
    """The smaller of the mechanism's certificate and the best generic one (the mechanism's
    first, so it wins ties), with the mechanism's lower bound attached."""
    from crowdhide.accounting.shuffle import shuffle_delta, shuffle_epsilon

    params = _params(mechanism, eps0, n, d, k)
    own = MECHANISM_REGISTRY.all(
        params, names=(f"mechanism:{mechanism}", f"mechanism_lower:{mechanism}"), **query
    )
    if "delta" in query:
        generic = shuffle_epsilon(eps0=eps0, n=n, delta=query["delta"], lower=False)
    else:
        generic = shuffle_delta(eps0=eps0, n=n, epsilon=query["epsilon"], lower=False)
    return best_of([*own, generic], by="epsilon" if "delta" in query else "delta")


def mechanism_epsilon(
    *, mechanism: str, eps0: float, n: int, delta: float, d: int, k: int | None = None
) -> PrivacyStatement:
    """ε at ``delta`` of n shuffled reports of ``mechanism``: the smaller of its specific
    certificate and the best generic one, with the mechanism's lower bound attached.

    Examples
    --------
    >>> r = mechanism_epsilon(mechanism="rappor", eps0=2.0, n=10**5, delta=1e-6, d=32)
    >>> r.source, r.lower.source, r.lower.epsilon <= r.epsilon
    ('mechanism:rappor', 'mechanism_lower:rappor', True)
    """
    d_ = check_probability("delta", delta, allow_zero=False, allow_one=False)
    return _mechanism_statement(mechanism, eps0, n, d, k, {"delta": d_})


def mechanism_delta(
    *, mechanism: str, eps0: float, n: int, epsilon: float, d: int, k: int | None = None
) -> PrivacyStatement:
    """δ at ``epsilon`` of n shuffled reports of ``mechanism`` (see :func:`mechanism_epsilon`)."""
    eps = check_real("epsilon", epsilon, low=0.0)
    return _mechanism_statement(mechanism, eps0, n, d, k, {"epsilon": eps})
