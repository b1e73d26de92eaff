"""Network-DP guarantees of Cyffers & Bellet (2022), corrected, with validity conditions.

Every bound returns a :class:`WalkBound`: its ``privacy`` is a
:class:`~crowdhide.accounting.PrivacyStatement` whose ``source`` names the bound and its form
(``"corrected"`` — the default — or ``"published"``, kept only to reproduce figures and to show
the defects), whose ``conditions_met`` says whether every condition of the paper's result holds
(``notes`` lists the failed ones; the numbers are still returned so that figures can be drawn),
and ``details`` holds the intermediate quantities (per-cycle ε, number of cycles, γ, …).

Corrections to the paper (each one tested):

* advanced composition is ``√(2k ln(1/δ')) ε_c + k ε_c (e^{ε_c} − 1)`` (the published
  second term of the complete-graph sum and histogram theorems, ``√k ε (e^{ε_c} − 1)``, is
  mis-transcribed; the spotted-contributions lemma lacks the 2);
* the number of cycles ``k = N_v + T/n`` is rounded up (``⌈N_v⌉ − 1 + ⌊T/n⌋ + 1``);
* the ring histogram's γ uses ε0 = ε√(n/ln(1/δ))/12 (the printed γ is inverted);
* the complete-graph histogram's per-cycle constant 21 relies on ``e^x − 1 <= x`` (false);
  the corrected constant is 14(e − 1) ≈ 24.05 (with ``1 − (1 − 1/n)^m <= m/n`` and
  ``e^x − 1 <= (e − 1)x``);
* the Chernoff bound ``N_v = T/n + √(3 (T/n) ln(1/δ̂))`` needs ``T >= 3 n ln(1/δ̂)``; outside it
  the exact binomial quantile is used (``visits="auto"``);
* network DP-SGD's corrections are listed in :mod:`crowdhide.netdp.sgd_guarantees`, which
  holds that half of the paper (Lemma 1, Theorem 4, σ calibration).

Collusions: the complete-graph guarantees with c colluders are those of ``n/c`` users; the ring
protocols have none (``colluders > 1`` raises).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.composition import advanced_epsilon
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError
from crowdhide.netdp.noise import classic_gaussian_sigma

__all__ = [
    "HISTOGRAM_CYCLE_CONSTANT",
    "WalkBound",
    "central_sum_std",
    "complete_histogram_guarantee",
    "complete_sum_guarantee",
    "compose_advanced",
    "ldp_baseline",
    "ring_histogram_guarantee",
    "ring_sum_guarantee",
    "visit_bound",
]

Form = Literal["corrected", "published"]

#: Where every bound of this module comes from.
CITATION = "Cyffers & Bellet, Privacy amplification by decentralization, AISTATS 2022"


@dataclass(frozen=True)
class WalkBound:
    """A network-DP bound of a token walk: a privacy statement and how it was obtained.

    Attributes
    ----------
    privacy
        The (ε, δ) statement (for every ordered pair u ≠ v, or every coalition of
        ``colluders``): ``source`` names the bound (``"complete_sum"``, ``"ldp"``, … with a
        ``"_published"`` suffix for the printed form), ``conditions_met`` whether every
        condition holds and the form is the corrected one, ``notes`` the failed conditions.
    theorem
        The result of the paper it implements (``"theorem3"``, ``"lemma2"``, ``"ldp"``).
    form
        ``"corrected"`` or ``"published"``.
    details
        Intermediate quantities (per-cycle ε, number of cycles, γ, …).
    """

    privacy: PrivacyStatement
    theorem: str
    form: str
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Flat JSON-ready record: the statement's fields, the paper's result and details."""
        p = self.privacy
        return {
            "epsilon": p.epsilon,
            "delta": p.delta,
            "kind": p.kind,
            "source": p.source,
            "theorem": self.theorem,
            "form": self.form,
            "conditions_met": p.conditions_met,
            "notes": list(p.notes),
            **self.details,
        }


def _bound(
    *,
    epsilon: float,
    delta: float,
    source: str,
    theorem: str,
    form: Form = "corrected",
    violations: list[str] | tuple[str, ...] = (),
    details: dict[str, Any] | None = None,
    inputs: dict[str, Any] | None = None,
) -> WalkBound:
    """The :class:`WalkBound` of one computed (ε, δ): a certificate ("upper") only in the
    corrected form with every condition met; the published form is an "estimate"."""
    notes = tuple(violations)
    if form == "published":
        notes += ("published form: reproduces the printed formula, not a valid bound",)
    privacy = PrivacyStatement(
        epsilon=epsilon,
        delta=delta,
        kind="upper" if form == "corrected" else "estimate",
        source=source if form == "corrected" else f"{source}_published",
        conditions_met=not violations and form == "corrected",
        notes=notes,
        inputs=inputs or {},
    )
    return WalkBound(
        privacy=privacy,
        theorem=theorem,
        form=form,
        details=MappingProxyType(dict(details or {})),
    )


def _check_form(form: str) -> Form:
    if form not in ("corrected", "published"):
        raise InvalidParameterError(f"form must be 'corrected' or 'published', got {form!r}")
    return "corrected" if form == "corrected" else "published"


def compose_advanced(*, epsilon: float, count: float, delta_slack: float) -> float:
    """``min(k ε, √(2k ln(1/δ')) ε + k ε (e^ε − 1))`` for a real count k (Dwork et al. 2010).

    Examples
    --------
    >>> round(compose_advanced(epsilon=0.1, count=100, delta_slack=1e-6), 4)
    6.3082
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    k = check_real("count", count, low=0.0)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    return advanced_epsilon(eps, k, slack)


def visit_bound(
    *,
    steps: int,
    n: float,
    delta_hat: float,
    method: Literal["auto", "chernoff", "binomial", "code"] = "auto",
) -> tuple[float, str]:
    """High-probability bound N with ``P(T_v >= N) <= δ̂``, ``T_v ~ B(T, 1/n)``.

    ``"chernoff"``: ``T/n + √(3 (T/n) ln(1/δ̂))`` (App. D), valid only if
    ``T >= 3 n ln(1/δ̂)`` (raises otherwise); ``"binomial"``: ``1 + `` the exact
    (1 − δ̂)-quantile; ``"auto"``: Chernoff when valid, else binomial; ``"code"``: the authors'
    Fig. 1a code ``T/n + √(3T/2 ln(1/δ̂))`` (not a bound of the paper; reproduction only).
    ``n`` may be real (``n/c`` for c colluders).

    Examples
    --------
    >>> round(visit_bound(steps=10**6, n=10**4, delta_hat=1e-7)[0], 2)
    169.54
    >>> visit_bound(steps=20000, n=2000, delta_hat=1e-6)[1]
    'binomial'
    """
    t = check_int("steps", steps, low=1)
    nn = check_real("n", n, low=1.0)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    mean = t / nn
    log_inv = math.log(1.0 / dh)
    chernoff_ok = t >= 3.0 * nn * log_inv
    if method == "code":
        return mean + math.sqrt(1.5 * t * log_inv), "code"
    if method == "chernoff" or (method == "auto" and chernoff_ok):
        if not chernoff_ok:
            raise InvalidParameterError(
                f"steps must be >= 3 n ln(1/delta_hat) = {3 * nn * log_inv:.6g} for the Chernoff "
                f"bound (alpha <= 1), got {t}"
            )
        return mean + math.sqrt(3.0 * mean * log_inv), "chernoff"
    if method not in ("auto", "binomial"):
        raise InvalidParameterError(
            f"method must be 'auto', 'chernoff', 'binomial' or 'code', got {method!r}"
        )
    from scipy import stats

    quantile = float(stats.binom.isf(dh, t, 1.0 / nn))  # smallest q with P(T_v > q) <= δ̂
    return quantile + 1.0, "binomial"


def _check_colluders(colluders: int, n: int) -> int:
    c = check_int("colluders", colluders, low=1)
    if c >= n:
        raise InvalidParameterError(f"colluders must be < n = {n}, got {c}")
    return c


def ring_sum_guarantee(
    *, n: int, rounds: int, eps0: float, delta0: float, delta_slack: float, colluders: int = 1
) -> WalkBound:
    """Ring, real summation (Alg. 1; Theorem 1 of Cyffers & Bellet).

    Each of v's K receipts is (ε0, δ0)-DP w.r.t. u (one contribution of u, at least one noise
    of std σ_loc from another user); advanced composition over K receipts.
    Utility: std ``√⌈Kn/(n−1)⌉ σ_loc`` (``details["noise_additions"]``).

    Examples
    --------
    >>> g = ring_sum_guarantee(n=100, rounds=10, eps0=0.5, delta0=1e-6, delta_slack=1e-6)
    >>> round(g.privacy.epsilon, 4), g.privacy.delta, g.details["noise_additions"]  # basic wins
    (5.0, 1.1e-05, 11)
    >>> g = ring_sum_guarantee(n=100, rounds=100, eps0=0.1, delta0=1e-6, delta_slack=1e-6)
    >>> round(g.privacy.epsilon, 4)
    6.3082
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d0 = check_probability("delta0", delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    if _check_colluders(colluders, n) > 1:
        raise InvalidParameterError(
            f"colluders must be 1 on the ring: Alg. 1 is not robust to collusion, got {colluders}"
        )
    eps = compose_advanced(epsilon=e0, count=k, delta_slack=slack)
    adds = -(-(k * n) // (n - 1))
    return _bound(
        epsilon=eps,
        delta=min(1.0, k * d0 + slack),
        source="ring_sum",
        theorem="theorem1",
        details={
            "noise_additions": adds,
            "std_over_sigma": math.sqrt(adds),
            "ldp_std_over_sigma": math.sqrt(k * n),
        },
    )


def ring_histogram_guarantee(
    *,
    n: int,
    rounds: int,
    epsilon: float,
    delta: float,
    delta_slack: float,
    domain_size: int,
    form: Form = "corrected",
) -> WalkBound:
    """Ring, histogram (Alg. 2; Theorem 2 of Cyffers & Bellet) with γ corrected.

    Target per-receipt level ``ε`` (< 1/2). Corrected: the randomizer is ε0-LDP with
    ``ε0 = ε √(n/ln(1/δ)) / 12`` so that Erlingsson et al.'s Cor. 9 gives ε per receipt;
    requires ``ε0 < 1/2`` (i.e. ``ε < 6√(ln(1/δ)/n)``), ``δ < 1/100``, ``n > 1000``. Published:
    ``ε0 = 12 ε √(ln(1/δ)/n)`` (inverted; γ → 1). ``details["gamma"]`` is
    ``L/(e^{ε0} + L − 1)`` and the expected number of random responses is ``γ n (K + 1)``.

    Examples
    --------
    >>> g = ring_histogram_guarantee(n=10**4, rounds=10, epsilon=0.1, delta=1e-6, delta_slack=1e-6,
    ...              domain_size=10)
    >>> round(g.details["eps0"], 4), round(g.details["gamma"], 5), g.privacy.conditions_met
    (0.2242, 0.97548, True)
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    size = check_int("domain_size", domain_size, low=2)
    form = _check_form(form)
    log_inv = math.log(1.0 / d)
    if form == "corrected":
        eps0 = eps * math.sqrt(n / log_inv) / 12.0
    else:
        eps0 = 12.0 * eps * math.sqrt(log_inv / n)
    gamma = size / (math.exp(min(eps0, 700.0)) + size - 1)
    violations = []
    if not eps < 0.5:
        violations.append("epsilon < 1/2")
    if form == "corrected" and not eps0 < 0.5:
        violations.append("eps0 < 1/2 (Erlingsson Cor. 9)")
    if not d < 0.01:
        violations.append("delta < 1/100")
    if not n > 1000:
        violations.append("n > 1000")
    return _bound(
        epsilon=compose_advanced(epsilon=eps, count=k, delta_slack=slack),
        delta=min(1.0, k * d + slack),
        source="ring_histogram",
        theorem="theorem2",
        form=form,
        violations=violations,
        details={"eps0": eps0, "gamma": gamma, "random_responses": gamma * n * (k + 1)},
    )


def _compose_cycles(
    *, eps_cycle: float, cycles: float, slack: float, eps0: float, form: Form
) -> float:
    """Advanced composition of the per-cycle ε over ``cycles`` cycles (Theorems 3 and 6).

    ``corrected``: :func:`compose_advanced`. ``published``: the paper's mis-transcribed drift
    term ``√k ε0 (e^{ε_c} − 1)`` in place of ``k ε_c (e^{ε_c} − 1)`` (kept to reproduce it).
    """
    if form == "corrected":
        return compose_advanced(epsilon=eps_cycle, count=cycles, delta_slack=slack)
    first = math.sqrt(2.0 * cycles * math.log(1.0 / slack)) * eps_cycle
    drift = math.expm1(eps_cycle) if eps_cycle < 709.0 else math.inf
    return first + math.sqrt(cycles) * eps0 * drift


def _cycles(visits: float, steps: int, n_eff: float, integer: bool) -> float:
    if integer:
        return float(math.ceil(visits - 1e-12) - 1 + math.floor(steps / n_eff) + 1)
    return visits + steps / n_eff


@dataclass(frozen=True)
class _CompleteWalk:
    """Validated inputs of a complete-graph cycle bound and its number of cycles."""

    steps: int
    eps0: float
    delta0: float
    slack: float
    delta_hat: float
    form: Form
    n_eff: float
    visits: float
    visit_method: str
    cycles: float


def _complete_walk(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta0: float,
    delta_slack: float,
    delta_hat: float,
    colluders: int,
    form: str,
    visits: Literal["auto", "chernoff", "binomial", "code"],
    integer_cycles: bool,
    allow_zero_delta0: bool,
) -> _CompleteWalk:
    n = check_int("n", n, low=2)
    t = check_int("steps", steps, low=1)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d0 = check_probability("delta0", delta0, allow_zero=allow_zero_delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    dh = check_probability("delta_hat", delta_hat, allow_zero=False, allow_one=False)
    n_eff = n / _check_colluders(colluders, n)
    checked_form = _check_form(form)
    nv, method = visit_bound(steps=t, n=n_eff, delta_hat=dh, method=visits)
    k = _cycles(nv, t, n_eff, integer_cycles)
    return _CompleteWalk(t, e0, d0, slack, dh, checked_form, n_eff, nv, method, k)


def _cycle_bound(
    walk: _CompleteWalk,
    *,
    eps_cycle: float,
    violations: list[str],
    source: str,
    theorem: str,
    extra: dict[str, Any],
) -> WalkBound:
    """Compose ``walk.cycles`` cycles of ``eps_cycle`` into the complete-graph bound."""
    eps = _compose_cycles(
        eps_cycle=eps_cycle,
        cycles=walk.cycles,
        slack=walk.slack,
        eps0=walk.eps0,
        form=walk.form,
    )
    if walk.visit_method == "code":
        violations.append("visit bound from the authors' code is not a valid bound")
    return _bound(
        epsilon=eps,
        delta=min(1.0, walk.cycles * walk.delta0 + walk.slack + walk.delta_hat),
        source=source,
        theorem=theorem,
        form=walk.form,
        violations=violations,
        details={
            "eps_cycle": eps_cycle,
            "cycles": walk.cycles,
            "visit_bound": walk.visits,
            "visit_method": walk.visit_method,
            "n_effective": walk.n_eff,
            **extra,
        },
    )


def complete_sum_guarantee(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta0: float,
    delta_slack: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    per_cycle: Literal["paper", "sharp"] = "paper",
    visits: Literal["auto", "chernoff", "binomial", "code"] = "auto",
    integer_cycles: bool = True,
) -> WalkBound:
    """Complete graph, Gaussian real summation (Alg. 3; Theorem 3 of Cyffers & Bellet).

    Per cycle ``ε_c = 3 ε0/√n`` (``per_cycle="paper"``) or ``(e − 1) ε0/√n`` (``"sharp"``,
    Bernoulli + ``e^x − 1 <= (e − 1)x``); ``k = N_v + T/n`` cycles; corrected advanced
    composition ``√(2k ln(1/δ')) ε_c + k ε_c (e^{ε_c} − 1)``. Published form: second term
    ``√k ε0 (e^{ε_c} − 1)``. δ = ``k δ0 + δ' + δ̂``. Requires ε0 < 1 (Gaussian mechanism).
    With c colluders n is replaced by n/c.

    Caveat: the paper's per-cycle δ (``δ_cycle <= δ0``) ignores the group-privacy terms of
    Balle et al.'s with-replacement subsampling theorem; the realised-walk accountant
    (:mod:`crowdhide.netdp.walk_accounting`) accounts for them exactly.

    Examples
    --------
    >>> g = complete_sum_guarantee(n=100, steps=10**4, eps0=0.5, delta0=1e-7, delta_slack=1e-7,
    ...                            delta_hat=1e-7, integer_cycles=False)
    >>> round(g.privacy.epsilon, 3)
    20.525
    >>> round(complete_sum_guarantee(n=100, steps=10**4, eps0=0.5, delta0=1e-7,
    ...       delta_slack=1e-7, delta_hat=1e-7, integer_cycles=False,
    ...       form="published").privacy.epsilon, 3)
    15.311
    """
    if per_cycle not in ("paper", "sharp"):
        raise InvalidParameterError(f"per_cycle must be 'paper' or 'sharp', got {per_cycle!r}")
    walk = _complete_walk(
        n=n,
        steps=steps,
        eps0=eps0,
        delta0=delta0,
        delta_slack=delta_slack,
        delta_hat=delta_hat,
        colluders=colluders,
        form=form,
        visits=visits,
        integer_cycles=integer_cycles,
        allow_zero_delta0=True,
    )
    const = 3.0 if per_cycle == "paper" else math.e - 1.0
    return _cycle_bound(
        walk,
        eps_cycle=const * walk.eps0 / math.sqrt(walk.n_eff),
        violations=[] if walk.eps0 < 1.0 else ["eps0 < 1"],
        source="complete_sum",
        theorem="theorem3",
        extra={"std_over_sigma": math.sqrt(walk.steps)},
    )


#: 14 (e − 1): valid per-cycle constant of the complete-graph histogram bound (the paper
#: prints 21, derived with the false ``e^x − 1 <= x``).
HISTOGRAM_CYCLE_CONSTANT = 14.0 * (math.e - 1.0)


def complete_histogram_guarantee(
    *,
    n: int,
    steps: int,
    eps0: float,
    delta0: float,
    delta_slack: float,
    delta_hat: float,
    colluders: int = 1,
    form: Form = "corrected",
    visits: Literal["auto", "chernoff", "binomial", "code"] = "auto",
    integer_cycles: bool = True,
) -> WalkBound:
    """Complete graph, histogram (Alg. 5 with γ = L/(e^{ε0} + L − 1); Theorem 6 of
    Cyffers & Bellet).

    Per cycle ``ε_c = C √(ln(4/δ0)/n) ε0`` with the corrected ``C = 14(e − 1) ≈ 24.05``
    (published: 21, derived with the false ``e^x − 1 <= x``); requires ``ε0 <= 1`` and
    ``n >= 196 ln(4/δ0)``. Composition as in :func:`complete_sum_guarantee`.

    Examples
    --------
    >>> g = complete_histogram_guarantee(n=10**5, steps=10**7, eps0=0.5, delta0=1e-6,
    ...     delta_slack=1e-6, delta_hat=1e-6, form="published", integer_cycles=False)
    >>> round(g.details["eps_cycle"], 4), round(g.privacy.epsilon, 2)
    (0.1295, 12.19)
    """
    walk = _complete_walk(
        n=n,
        steps=steps,
        eps0=eps0,
        delta0=delta0,
        delta_slack=delta_slack,
        delta_hat=delta_hat,
        colluders=colluders,
        form=form,
        visits=visits,
        integer_cycles=integer_cycles,
        allow_zero_delta0=False,
    )
    const = HISTOGRAM_CYCLE_CONSTANT if walk.form == "corrected" else 21.0
    log_term = math.log(4.0 / walk.delta0)
    violations = []
    if not walk.eps0 <= 1.0:
        violations.append("eps0 <= 1")
    if not walk.n_eff >= 196.0 * log_term:
        violations.append(f"n >= 196 ln(4/delta) = {196.0 * log_term:.6g}")
    return _cycle_bound(
        walk,
        eps_cycle=const * math.sqrt(log_term / walk.n_eff) * walk.eps0,
        violations=violations,
        source="complete_histogram",
        theorem="theorem6",
        extra={"constant": const},
    )


def ldp_baseline(
    *, contributions: float, eps0: float, delta0: float, delta_slack: float
) -> WalkBound:
    """Local DP of N contributions: advanced composition of (ε0, δ0) (the paper's LDP curves).

    Examples
    --------
    >>> ldp = ldp_baseline(contributions=100, eps0=0.1, delta0=0.0, delta_slack=1e-7)
    >>> round(ldp.privacy.epsilon, 3)
    6.729
    """
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    nv = check_real("contributions", contributions, low=0.0)
    d0 = check_probability("delta0", delta0, allow_one=False)
    slack = check_probability("delta_slack", delta_slack, allow_zero=False, allow_one=False)
    return _bound(
        epsilon=compose_advanced(epsilon=e0, count=nv, delta_slack=slack),
        delta=min(1.0, nv * d0 + slack),
        source="ldp",
        theorem="ldp",
        details={"contributions": nv},
    )


def central_sum_std(
    *, n: int, rounds: int, eps0: float, delta0: float, sensitivity: float = 1.0
) -> dict[str, float]:
    """Noise std of the sum under local DP, a trusted curator and the ring (per unit σ_loc).

    Trusted curator: one Gaussian noise per round (K noises), the same trade-off as Alg. 1;
    LDP: one noise per contribution (Kn noises).
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    sigma = classic_gaussian_sigma(epsilon=eps0, delta=delta0, sensitivity=sensitivity)
    return {
        "sigma_loc": sigma,
        "central_std": sigma * math.sqrt(k),
        "ring_std": sigma * math.sqrt(-(-(k * n) // (n - 1))),
        "ldp_std": sigma * math.sqrt(k * n),
    }
