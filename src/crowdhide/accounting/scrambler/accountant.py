"""Accounting for communication-pattern countermeasures: sampling, dummies and scramblers.

Ladjel, Anciaux, Bellet and Scerri ("Mitigating leakage from data dependent communications
in decentralized computing using differential privacy") hide *whom* a source talks to with
three countermeasures:

* **local target sampling** (rate σ): with probability σ the source sends to a target drawn
  uniformly among *all* T targets (convention U of Sections III–IV; Theorem 3 uses the
  "lie" convention σ_L = σ(T−1)/T, converted where needed);
* **flooding** with ``d`` dummy messages, either locally (the local randomizer R_σ^d,
  Theorem 2) or at a **scrambler** that collects ``n`` sampled messages, adds ``d`` dummies
  uniform over the targets and shuffles (A_σ^{n,d}, Theorem 4; the capped variant Ã_σ^{n,d}
  never gives a target more than ``n`` messages, Theorem 3).

The adversary sees the number of messages each target receives. Every evaluator is a
:class:`~crowdhide.accounting.registry.Bound` of :data:`SCRAMBLER_BOUNDS` over
:class:`ScramblerParams`; each answer is a
:class:`~crowdhide.accounting.statement.PrivacyStatement` whose ``source`` names the
evaluator:

=====================  ========  ==============================================================
source                 kind      what it is
=====================  ========  ==============================================================
``exact``              exact     sup over all neighbouring inputs of the hockey-stick
                                 divergence, by exhaustive enumeration (small T, n, d only)
``exact-pure``         exact     pure ε by exhaustive enumeration (capped scrambler)
``lemma2-exact``       upper     Lemma 2 with ``E[Σ L_i]_+`` computed exactly (uncapped)
``bennett``            upper     Lemma 2 + Bennett, re-derived (the printed form is wrong)
``hoeffding``          upper     Theorem 4 with the sign of ``a`` fixed (``a = e^ε − 1``)
``local``              upper     the exact curve of sampling alone (post-processing)
``montecarlo``         estimate  Algorithm 2 (R samples), with a confidence interval in notes
``bennett-published``  estimate  Lemma 3 as printed (extra factor ``1/(aN)``): NOT a bound
``theorem3-published`` estimate  Theorem 3 (capped) as printed; understates ε
``lower-bound``        lower     exact δ of one neighbouring pair (n − 1 common messages at a
                                 third target): the true ε is at least this (T >= 3)
=====================  ========  ==============================================================

``best`` is the smallest certificate among the certified evaluators that apply. Certified
bounds are capped at the local ε0 (the scrambler post-processes the sampled messages).
Everything is in convention U.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from crowdhide._validation import (
    as_rng,
    check_bool,
    check_int,
    check_probability,
    check_real,
)
from crowdhide.accounting.curves import PrivacyCurve, RoundedCurve
from crowdhide.accounting.logmath import (
    MACHINE_EPSILON,
    loss_allowance,
    probability_loss_allowance,
    pure_cap_up,
)
from crowdhide.accounting.registry import Registry, best_certificate
from crowdhide.accounting.scrambler import bounds
from crowdhide.accounting.scrambler import enumeration as brute
from crowdhide.accounting.scrambler.curves import (
    BoundCurve,
    PureCurve,
    per_tail,
)
from crowdhide.accounting.scrambler.local import (
    _check_common,
    local_randomizer_delta,
    sampling_epsilon,
    sigma_lie_from_uniform,
    theorem3_published_epsilon,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "BEST_CAPPED",
    "BEST_UNCAPPED",
    "CAPPED_METHODS",
    "SCRAMBLER_BOUNDS",
    "UNCAPPED_METHODS",
    "ScramblerParams",
    "montecarlo_epsilon_interval",
    "scrambler_delta",
    "scrambler_delta_all",
    "scrambler_epsilon",
    "scrambler_epsilon_all",
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
#: The certified evaluators ``best`` chooses from, in order of preference on ties.
BEST_UNCAPPED: tuple[str, ...] = ("exact", "lemma2-exact", "bennett", "hoeffding", "local")
BEST_CAPPED: tuple[str, ...] = ("exact", "exact-pure", "local")

#: Largest n + d for the third-target pair lower bound (its arrays grow like (n + d) · m).
_PAIR_MAX_MESSAGES = 30_000
_UNAVAILABLE = "unavailable: instance too large for exhaustive enumeration"


# --------------------------------------------------------------------------- enumeration


#: Relative allowance on the enumerated δ (its probabilities' relative errors are ~1e-14).
_EXACT_RELATIVE_MARGIN = 1e-9


def _enumeration_loss_error(params: ScramblerParams) -> float:
    """Loss allowance of the enumeration (:mod:`scrambler_enumeration`): every probability
    is built from ``n + d`` messages, each step a sum of at most T positive products (capped:
    times an indicator and an inverse), so it is within ``(n + d)(T + 3)`` roundings."""
    steps = (params.n + params.dummies) * (params.targets + 3.0)
    return probability_loss_allowance(steps * MACHINE_EPSILON)


def _safe_eps0(eps0: float) -> float:
    """The local ε0 for :func:`loss_allowance` (σ = 0: no finite ε0, no loss near it)."""
    return eps0 if math.isfinite(eps0) else 0.0


# --------------------------------------------------------------------------- parameters


@dataclass(frozen=True, slots=True, kw_only=True)
class ScramblerParams:
    """One scrambler configuration: T targets, sampling σ (convention U), n sources per
    scrambler, d dummies; ``capped`` for Ã_σ^{n,d}. ``samples`` and ``rng`` are used by the
    Monte-Carlo estimate only.

    Examples
    --------
    >>> p = ScramblerParams(targets=20, sigma=0.2, n=100, dummies=50)
    >>> round(p.eps0, 4), p.trivial
    (4.3944, False)
    >>> ScramblerParams(targets=2, sigma=0.5, n=3, dummies=10, capped=True)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: dummies must satisfy n + d <= n * targets for the \
capped scrambler, got 10
    """

    targets: int
    sigma: float
    n: int
    dummies: int
    capped: bool = False
    samples: int = 5000
    rng: Any = field(default=0, compare=False, repr=False)

    def __post_init__(self) -> None:
        T, s, nn, d = _check_common(self.targets, self.sigma, self.n, self.dummies)
        capped = check_bool("capped", self.capped)
        if capped and nn + d > nn * T:
            raise InvalidParameterError(
                f"dummies must satisfy n + d <= n * targets for the capped scrambler, got {d}"
            )
        for name, value in (("targets", T), ("sigma", s), ("n", nn), ("dummies", d)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "capped", capped)
        object.__setattr__(self, "samples", check_int("samples", self.samples, low=2))

    @property
    def eps0(self) -> float:
        """Pure ε0 of sampling alone (``inf`` when σ = 0)."""
        return sampling_epsilon(targets=self.targets, sigma=self.sigma)

    @property
    def eps0_cap(self) -> float:
        """:attr:`eps0` raised to at least its exact value: ``log1p`` of a rounded ratio can
        be an ulp low, and a certificate reports δ = 0 from its cap on."""
        return pure_cap_up(self.eps0)

    @property
    def trivial(self) -> bool:
        """Whether the output does not depend on the input (T = 1 or σ = 1)."""
        return self.targets == 1 or self.sigma == 1.0


def _scrambler_inputs(params: ScramblerParams) -> Mapping[str, Any]:
    return {
        "targets": params.targets,
        "sigma": params.sigma,
        "n": params.n,
        "dummies": params.dummies,
        "capped": params.capped,
    }


# --------------------------------------------------------------------------- bounds

_Variant = Literal["uncapped", "capped", "both"]


@dataclass(frozen=True)
class _ScramblerBound:
    """Common parts of the scrambler bounds: name, kind, citation, which variant."""

    name: str
    kind: Kind
    citation: str
    variant: _Variant = "uncapped"

    def applies(self, params: ScramblerParams) -> str | None:
        if self.variant == "uncapped" and params.capped:
            return f"{self.name} is for the uncapped scrambler only"
        if self.variant == "capped" and not params.capped:
            return f"{self.name} is for the capped scrambler only"
        return None if params.trivial else self.applies_nontrivial(params)

    def applies_nontrivial(self, params: ScramblerParams) -> str | None:
        return None

    def curve(self, params: ScramblerParams) -> PrivacyCurve:
        if params.trivial:
            return PureCurve(0.0)
        return self.nontrivial_curve(params)

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        raise NotImplementedError

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        """Remarks on a statement this bound produced (after the registry evaluated it)."""
        return ("output independent of the input",) if params.trivial else ()


class _Lemma2Exact(_ScramblerBound):
    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        T, s, n, d = params.targets, params.sigma, params.n, params.dummies
        curve = BoundCurve(
            eps0=params.eps0_cap,
            point=per_tail(
                lambda tail: bounds.Lemma2Exact(targets=T, sigma=s, n=n, dummies=d, log_tail=tail)
            ),
        )
        # Its sum L = σ(1 − e^ε) + (1 − σ)T(…) cancels near ε0 (issue 28); the evaluator
        # already adds a relative margin, the threshold error needs the loss allowance.
        return RoundedCurve(
            curve,
            relative=0.0,
            loss_error=loss_allowance(_safe_eps0(params.eps0)),
            lower=False,
            cap=params.eps0_cap,
        )


class _Concentration(_ScramblerBound):
    """Hoeffding, Bennett and the printed Bennett: vectorised, not monotone in ε."""

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        fn = {
            "bennett": bounds.bennett_delta,
            "hoeffding": bounds.hoeffding_delta,
            "bennett-published": bounds.bennett_published_delta,
        }[self.name]
        T, s, n, d = params.targets, params.sigma, params.n, params.dummies

        def vector(eps: npt.NDArray[np.float64], tail: float) -> npt.NDArray[np.float64]:
            return fn(targets=T, sigma=s, n=n, dummies=d, epsilon=eps, log_tail=tail)

        return BoundCurve(eps0=params.eps0_cap, vector=vector)

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        if self.name == "bennett-published":
            return ("printed Lemma 3 (extra 1/(aN)): NOT a valid bound, reproduction only",)
        return super().notes(params, statement)


class _Local(_ScramblerBound):
    """Exact curve of sampling alone, valid for the scrambler by post-processing."""

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        T, s = params.targets, params.sigma
        return BoundCurve(
            eps0=params.eps0,
            point=lambda eps, _tail: local_randomizer_delta(targets=T, sigma=s, epsilon=eps),
            cap=False,
        )

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        return (*super().notes(params, statement), "sampling alone (Theorem 2, d = 0), exact")


class _Exact(_ScramblerBound):
    """Exhaustive enumeration of every neighbouring input (small instances)."""

    def applies_nontrivial(self, params: ScramblerParams) -> str | None:
        if brute.exact_available(params.targets, params.n, params.dummies):
            return None
        return _UNAVAILABLE

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        cap = params.n if params.capped else None
        worst = brute.worst_pair_curve(params.targets, params.sigma, params.n, params.dummies, cap)
        loss_error = _enumeration_loss_error(params)
        if self.name == "exact-pure":
            if params.capped:
                return PureCurve(
                    brute.capped_exact_pure_epsilon(
                        targets=params.targets,
                        sigma=params.sigma,
                        n=params.n,
                        dummies=params.dummies,
                    )
                    + loss_error
                )
            return PureCurve(worst.max_loss + loss_error)
        return RoundedCurve(
            worst, relative=_EXACT_RELATIVE_MARGIN, loss_error=loss_error, lower=False
        )

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        if params.trivial:
            return super().notes(params, statement)
        if self.name == "exact-pure":
            return ("pure ε (δ = 0 suffices)",)
        return ("exhaustive over all neighbouring inputs",)


class _Theorem3Published(_ScramblerBound):
    """Theorem 3 (capped) as printed: understates the exact pure ε."""

    def applies_nontrivial(self, params: ScramblerParams) -> str | None:
        if params.dummies == 0 or params.dummies >= params.n:
            return "Theorem 3 needs 1 <= d <= n-1"
        return None

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        return PureCurve(self.printed(params))

    @staticmethod
    def printed(params: ScramblerParams) -> float:
        sigma_lie = sigma_lie_from_uniform(targets=params.targets, sigma=params.sigma)
        return theorem3_published_epsilon(
            targets=params.targets, sigma_lie=sigma_lie, n=params.n, dummies=params.dummies
        )

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        if params.trivial:
            return super().notes(params, statement)
        note = "Theorem 3 as printed (σ converted to convention L): NOT a certified bound"
        if brute.exact_available(params.targets, params.n, params.dummies):
            true_eps = brute.capped_exact_pure_epsilon(
                targets=params.targets, sigma=params.sigma, n=params.n, dummies=params.dummies
            )
            if true_eps > self.printed(params) + 1e-12:
                note += f"; UNDERSTATES the exact pure ε {true_eps:.6g}"
        return (note,)


class _PairLowerBound(_ScramblerBound):
    """Exact curve of one neighbouring pair: a lower bound on the scrambler's curve."""

    def applies_nontrivial(self, params: ScramblerParams) -> str | None:
        if params.targets < 3 or params.n + params.dummies > _PAIR_MAX_MESSAGES:
            return f"unavailable: needs targets >= 3 and n + d <= {_PAIR_MAX_MESSAGES}"
        return None

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        T, s, n, d = params.targets, params.sigma, params.n, params.dummies
        curve = BoundCurve(
            eps0=params.eps0,
            point=per_tail(
                lambda tail: bounds.ThirdTargetPair(
                    targets=T, sigma=s, n=n, dummies=d, log_tail=tail
                )
            ),
            lower_side=True,
        )
        return RoundedCurve(
            curve,
            relative=_EXACT_RELATIVE_MARGIN,
            loss_error=loss_allowance(_safe_eps0(params.eps0)),
            lower=True,
            cap=params.eps0,
        )

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        return (
            "LOWER bound: exact ε(δ) of one neighbouring pair (n−1 common messages at a "
            "third target); the true ε lies between this and lemma2-exact",
        )


class _MonteCarlo(_ScramblerBound):
    """Algorithm 2: an estimate of the Lemma 2 sum (common random numbers for every ε)."""

    def nontrivial_curve(self, params: ScramblerParams) -> PrivacyCurve:
        return _montecarlo_curves(params, (0.0,))[0]

    def notes(self, params: ScramblerParams, statement: PrivacyStatement) -> tuple[str, ...]:
        return (
            f"Monte-Carlo ESTIMATE (Algorithm 2, R={params.samples} per m), not a "
            "certificate; montecarlo_epsilon_interval gives its 95% confidence interval",
        )


def _montecarlo_curves(params: ScramblerParams, zs: Iterable[float]) -> list[BoundCurve]:
    """Curves of the Monte-Carlo estimate shifted by ``z`` standard errors, one sample set."""
    mc = bounds.MonteCarloLemma2(
        targets=params.targets,
        sigma=params.sigma,
        n=params.n,
        dummies=params.dummies,
        samples=params.samples,
        rng=as_rng(params.rng),
    )

    def shifted(z: float) -> BoundCurve:
        def point(eps: float, _tail: float) -> float:
            est, se = mc.delta(eps)
            return est + z * se

        return BoundCurve(eps0=params.eps0_cap, point=point)

    return [shifted(z) for z in zs]


_CITATION = "Ladjel, Anciaux, Bellet, Scerri (scramblers)"
_LOWER_CITATION = "this library: exact curve of one neighbouring pair (lower bound)"

#: Every scrambler evaluator, in the order ``all`` reports them.
SCRAMBLER_BOUNDS: Registry[ScramblerParams] = Registry(
    [
        _Exact("exact", "exact", "exhaustive enumeration", "both"),
        _Exact("exact-pure", "exact", "exhaustive enumeration (pure ε)", "both"),
        _Lemma2Exact("lemma2-exact", "upper", _CITATION + ", Lemma 2, exact expectation"),
        _Concentration("bennett", "upper", _CITATION + ", Lemma 2 + Bennett (re-derived)"),
        _Concentration("hoeffding", "upper", _CITATION + ", Theorem 4 (sign fixed)"),
        _Local("local", "upper", _CITATION + ", Theorem 2 (post-processing)", "both"),
        _MonteCarlo("montecarlo", "estimate", _CITATION + ", Algorithm 2"),
        _Concentration("bennett-published", "estimate", _CITATION + ", Lemma 3 as printed"),
        _Theorem3Published(
            "theorem3-published", "estimate", _CITATION + ", Theorem 3 as printed", "capped"
        ),
        _PairLowerBound("lower-bound", "lower", _LOWER_CITATION),
    ],
    what="method",
    inputs=_scrambler_inputs,
)


# --------------------------------------------------------------------------- evaluation

#: Upper bounds that can give nothing better than the local ε0 (their curves stop there).
_CAPPED_AT_EPS0 = frozenset({"lemma2-exact", "bennett", "hoeffding"})


def _params(
    targets: Any, sigma: Any, n: Any, dummies: Any, capped: Any, samples: Any, rng: Any
) -> ScramblerParams:
    return ScramblerParams(
        targets=targets,
        sigma=sigma,
        n=n,
        dummies=dummies,
        capped=capped,
        samples=samples,
        rng=rng,
    )


def _method_names(method: Any, capped: bool) -> tuple[str, ...]:
    """The evaluators ``method`` stands for (``best``: the certified ones)."""
    if not isinstance(method, str):
        raise ParameterTypeError(f"method must be a string, got {method!r}")
    names = CAPPED_METHODS if capped else UNCAPPED_METHODS
    if method == "best":
        return BEST_CAPPED if capped else BEST_UNCAPPED
    if method == "all":
        return names
    if method not in names:
        raise InvalidParameterError(
            f"method must be one of {', '.join(names)}, best or all, got {method!r}"
        )
    return (method,)


def _evaluate(
    name: str, params: ScramblerParams, *, delta: float | None, epsilon: float | None
) -> PrivacyStatement:
    """One evaluator's statement, with the remarks that explain its number."""
    statement = SCRAMBLER_BOUNDS.statement(name, params, delta=delta, epsilon=epsilon)
    if not statement.conditions_met:
        return statement
    bound = SCRAMBLER_BOUNDS[name]
    assert isinstance(bound, _ScramblerBound)
    notes = list(bound.notes(params, statement))
    eps, eps0 = statement.epsilon, params.eps0
    if delta is not None and name in _CAPPED_AT_EPS0 and math.isfinite(eps0) and eps >= eps0:
        notes.append(
            "bound gives no ε below the local ε0; capped at ε0 (the scrambler post-processes "
            "the sampled messages)"
        )
    if delta is not None and math.isinf(eps) and params.sigma == 0.0 and not params.capped:
        T, d = params.targets, params.dummies
        floor = (1.0 - 1.0 / T) ** d
        if T > 1 and delta < floor:
            need = math.ceil(math.log(delta) / math.log1p(-1.0 / T))
            notes.append(
                f"impossible: with sigma=0 no ε achieves δ < (1−1/T)^d = {floor:.4g}; "
                f"needs dummies >= ln δ / ln(1−1/T) = {need}"
            )
    return statement.with_notes(*notes)


def _best(
    params: ScramblerParams, names: tuple[str, ...], *, delta: float | None, epsilon: float | None
) -> PrivacyStatement:
    """The smallest certificate among ``names`` (the first applicable one if none is)."""
    return best_certificate(
        lambda m: _evaluate(m, params, delta=delta, epsilon=epsilon),
        names,
        by="epsilon" if delta is not None else "delta",
    )


def _query(
    params: ScramblerParams, method: Any, delta: float | None, epsilon: float | None
) -> PrivacyStatement:
    """ε at ``delta`` or δ at ``epsilon`` of one evaluator, or the best certificate."""
    names = _method_names(method, params.capped)
    if method == "best":
        return _best(params, names, delta=delta, epsilon=epsilon)
    if method == "all":
        raise InvalidParameterError("method must name one evaluator here, got 'all'")
    return _evaluate(names[0], params, delta=delta, epsilon=epsilon)


def _every(
    params: ScramblerParams, delta: float | None, epsilon: float | None
) -> tuple[PrivacyStatement, ...]:
    names = _method_names("all", params.capped)
    return tuple(_evaluate(m, params, delta=delta, epsilon=epsilon) for m in names)


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
) -> PrivacyStatement:
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
    PrivacyStatement
        ``epsilon`` is the smallest ε the evaluator (``source``) gives at ``delta``;
        ``inf`` with an explanatory note when impossible. Certificates are capped at the
        local ε0.

    See Also
    --------
    scrambler_delta : the same curves read the other way, δ at a given ε.
    scrambler_epsilon_all : every evaluator's ε, not only the best.
    crowdhide.calibrate : the countermeasures (σ, n, d) that meet a target.

    Examples
    --------
    >>> r = scrambler_epsilon(targets=20, sigma=0.2, n=100, dummies=50, delta=1e-4)
    >>> r.source, round(r.epsilon, 4), r.is_certificate
    ('lemma2-exact', 2.3268, True)
    >>> print(scrambler_epsilon(targets=20, sigma=0.0, n=500, dummies=50, delta=1e-4).notes[1])
    impossible: with sigma=0 no ε achieves δ < (1−1/T)^d = 0.07694; needs dummies >= ln δ /
    ln(1−1/T) = 180
    """
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    return _query(_params(targets, sigma, n, dummies, capped, samples, rng), method, dl, None)


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
) -> tuple[PrivacyStatement, ...]:
    """Every evaluator's ε at ``delta`` (same parameters as :func:`scrambler_epsilon`)."""
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    return _every(_params(targets, sigma, n, dummies, capped, samples, rng), dl, None)


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
) -> PrivacyStatement:
    """δ(ε) of the scrambler per evaluator (``best`` = smallest certified δ).

    The same curves as :func:`scrambler_epsilon`: for the non-monotone concentration bounds
    the δ reported is ``min_{ε' <= ε} bound(ε')`` over a grid plus ε itself ((ε', δ)-DP
    implies (ε, δ)-DP for ε >= ε').

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
    epsilon
        The ε >= 0 at which δ is read.
    method
        ``best`` (smallest certified δ), or one name of :data:`UNCAPPED_METHODS`
        (:data:`CAPPED_METHODS` when ``capped``).
    capped
        Analyse Ã_σ^{n,d} (at most n messages per target; needs ``n + d <= n T``).
    samples, rng
        Monte-Carlo samples per mixture component and random generator (``montecarlo``).

    Returns
    -------
    PrivacyStatement
        ``delta`` is the δ the evaluator (``source``) certifies at ``epsilon``, rounded to
        the safe side; the statement carries the evaluator's notes.

    See Also
    --------
    scrambler_epsilon : the same curves read the other way, ε at a given δ.
    scrambler_delta_all : every evaluator's δ, not only the best.

    Examples
    --------
    >>> r = scrambler_delta(targets=4, sigma=0.2, n=20, dummies=20, epsilon=1.0,
    ...                     method="lemma2-exact")
    >>> round(r.delta, 6)
    0.005818
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    return _query(_params(targets, sigma, n, dummies, capped, samples, rng), method, None, eps)


def scrambler_delta_all(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    epsilon: float,
    capped: bool = False,
    samples: int = 5000,
    rng: Any = 0,
) -> tuple[PrivacyStatement, ...]:
    """Every evaluator's δ at ``epsilon`` (same parameters as :func:`scrambler_delta`)."""
    eps = check_real("epsilon", epsilon, low=0.0)
    return _every(_params(targets, sigma, n, dummies, capped, samples, rng), None, eps)


def montecarlo_epsilon_interval(
    *,
    targets: int,
    sigma: float,
    n: int,
    dummies: int,
    delta: float,
    samples: int = 5000,
    rng: Any = 0,
) -> tuple[float, float]:
    """ε(δ) of the Monte-Carlo estimate at the two ends of the 95% confidence interval of δ.

    The samples are the same as those of ``scrambler_epsilon(method="montecarlo")`` when
    ``rng`` is a seed. An estimate, not a certificate.

    Examples
    --------
    >>> low, high = montecarlo_epsilon_interval(targets=20, sigma=0.2, n=100, dummies=50,
    ...                                         delta=1e-2, samples=200)
    >>> low <= high
    True
    """
    params = _params(targets, sigma, n, dummies, False, samples, rng)
    dl = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if params.trivial:
        return 0.0, 0.0
    # +1.96 standard errors on δ gives the larger ε, −1.96 the smaller one.
    low_curve, high_curve = _montecarlo_curves(params, (-1.96, 1.96))
    return low_curve.epsilon(dl), high_curve.epsilon(dl)
