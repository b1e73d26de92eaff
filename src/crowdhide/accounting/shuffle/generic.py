"""Privacy amplification by shuffling: what (ε, δ) do n shuffled ε0-LDP reports give?

n users each apply an ε0-LDP local randomizer and a trusted shuffler releases the multiset of
reports. Neighbouring datasets differ in one user's value (*substitute* relation, n fixed).
Every function answers for that relation.

Bounds (:data:`SHUFFLE_BOUNDS`) and what they promise
-------------------------------------------------------

``erlingsson2019``
    Erlingsson et al. (SODA 2019): ``ε = 12 ε0 sqrt(ln(1/δ)/n)``; certificate for any ε0-LDP
    randomizer when ε0 <= 1/2, n >= 1000, δ <= 0.01.
``balle2019_hoeffding``, ``balle2019_bennett``
    Balle, Bell, Gascón, Nissim (CRYPTO 2019), privacy blanket with Hoeffding resp. Bennett
    concentration; generic ε0-LDP parameters without ``k``, k-RR parameters with ``k``.
``feldman2021_closed``
    Feldman, McMillan, Talwar (FOCS 2021) closed form, with ``ln(4/δ)`` in both the bound and
    its validity condition ``ε0 <= ln(n / (16 ln(4/δ)))`` (the paper prints ``ln(2/δ)``; the
    authors' code and apple/ml-shuffling-amplification issue #1 use 4/δ, the conservative
    choice). Any ε0-LDP randomizer.
``feldman2021``
    Exact hockey-stick divergence of the FMT21 clone pair (``C ~ Bin(n−1, e^{−ε0})``); the
    authors' "numerical" bound without their block discretisation. Any ε0-LDP randomizer.
``feldman2023``
    Exact divergence of the stronger clone pair of Feldman, McMillan, Talwar (SODA 2023):
    ``C ~ Bin(n−1, 2/(e^{ε0}+1))``. The clone decomposition behind it needs every report
    distribution to dominate the average of any two others: ``R(x)(y) + R(x')(y) <=
    (e^{ε0}+1) R(v)(y)`` for all x, x', v, y (the erratum of arXiv 2208.04591 restricts the
    general theorems to such randomizers). k-RR and binary RR satisfy it (with equality on
    the reported value), so with ``k`` it is a certificate; for an unspecified ε0-LDP
    randomizer (``k=None``) it does not apply (``conditions_met=False``; e.g. ε0-LDP
    Laplace on [0, 1] violates the condition).
``variation_ratio``
    Any ε0-LDP randomizer: the split clone system (informative clones at rate 2μ/(e^{ε0}+1),
    uninformative ones at (1−μ)e^{−ε0}, μ the pair's total variation over tanh(ε0/2)),
    maximised over μ in cells (:mod:`crowdhide.accounting.shuffle.variation_ratio`). It certifies
    the FMT23 pair's value — the one Wang et al. (VLDB 2024) give for every ε0-LDP
    randomizer — to within 0.1–0.8 % in ε, without FMT23's condition. ``best`` without k.
``krr_clone``
    k-RR / binary RR only: crowdhide's k-RR clone reduction, a certificate for every
    dataset. Each other user's report law is ``2r (K(x)+K(x'))/2 + (1−2r) R_v`` with
    ``r = 1/(e^{ε0}+1)`` and ``R_v >= 0`` for every value v; revealing who is a clone and
    the residual reports gives the exact divergence of ``(C, histogram of the target's and
    the clones' k-RR reports)``, ``C ~ Bin(n−1, 2r)`` — FMT23's decomposition without
    discarding the clones' k-RR noise. Evaluated on rigorous blocks of clone counts and of
    reports on {x, x'} (:mod:`crowdhide.accounting.shuffle._krr_fast`): O(1) work in n, within
    ~0.1–0.5 % in ε of the unblocked sum. For k = 2 it is the FMT23 pair.
``binary_rr_blocks``
    binary RR only, any n: datasets in blocks, each block's pairs a post-processing of one
    core dataset (:mod:`crowdhide.accounting.shuffle.binary_rr`), each core evaluated by tilted
    contour integrals with every tail and rounding error bounded
    (:mod:`crowdhide.accounting.shuffle.binary_rr_contour`); within ~0.4–0.6 % in ε of the lower
    bound at n p q >= 64, tens of milliseconds per query up to n = 1e9.
``exact``
    k-RR / binary RR only: the exact worst-case curve, ``max`` over *every* dataset of the
    other users of the exact hockey-stick divergence of the two output-histogram
    distributions: exhaustive enumeration of dataset classes for ``n <= EXHAUSTIVE_MAX_N``
    (k = 3: ``n <= 300``, ``_krr_small``; k = 4: ``n <= 50``, ``_krr4_small``, pruned
    searches), and for k = 2 all n datasets, each exactly, for ``n <= BINARY_EXACT_MAX_N``;
    outside that range it does not apply. The worst dataset depends on ε: no "worst pair".
``krr_lower``
    k-RR only: a rigorous *lower bound* (``kind="lower"``) from canonical datasets (all
    others on one third value z; all others on x'), O(1) in n beyond n = 1000.
``ldp_lower``
    Without ``k``: a lower bound over all ε0-LDP randomizers (3-RR and binary RR are such
    randomizers).

The bounds are :class:`ShuffleBound` objects in :data:`SHUFFLE_REGISTRY`, a
:class:`~crowdhide.accounting.registry.Registry` over :class:`ShuffleParams`; every answer is
a :class:`~crowdhide.accounting.statement.PrivacyStatement` (``source`` names the bound,
``inputs`` holds ε0, n, k) and also carries the lower bound's statement in ``lower``.
``best`` is the smallest certificate (``kind`` "upper" or "exact" with its conditions met).
Bounds whose conditions fail answer with ``conditions_met=False`` and the reason in ``notes``.

Examples
--------
>>> r = shuffle_epsilon(eps0=4.0, n=100_000, delta=1e-6, bound="feldman2021")
>>> round(r.epsilon, 4), r.conditions_met
(0.1698, True)
>>> best = shuffle_epsilon(eps0=2.0, n=100_000, delta=1e-6, k=4)
>>> best.source, best.is_certificate, best.lower.source
('krr_clone', True, 'krr_lower')
"""

from __future__ import annotations

import math  # noqa: F401  (the doctests of krr_shuffle_curve and krr_dataset_curve)
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from typing import Any

from crowdhide._validation import check_probability, check_real
from crowdhide.accounting.curves import PrivacyCurve, RoundedCurve
from crowdhide.accounting.logmath import loss_allowance
from crowdhide.accounting.registry import Registry, attach_lower, best_certificate
from crowdhide.accounting.shuffle import _bound_curves
from crowdhide.accounting.shuffle import _pairs as pairs
from crowdhide.accounting.shuffle._best import best_rows
from crowdhide.accounting.shuffle._bound_curves import (
    BINARY_EXACT_MAX_N,
    EXHAUSTIVE_MAX_N,
    ShuffleParams,
    _binary_blocks_condition,
    _binary_blocks_curve,
    _binary_noise,
    _blanket,
    _clone_pair_loss,
    _closed_form,
    _erlingsson_condition,
    _erlingsson_curve,
    _exact_condition,
    _exact_curve,
    _exact_in_best,
    _exact_loss_error,
    _fmt21_closed_condition,
    _fmt21_closed_curve,
    _fmt21_curve,
    _fmt23_curve,
    _krr_blanket_curve,
    _krr_clone_curve,
    _variation_ratio_curve,
)
from crowdhide.accounting.shuffle._settle import settled_delta_query
from crowdhide.accounting.shuffle.closed_forms import (
    _bennett_log_delta,
    _hoeffding_log_delta,
    _NotApplicableError,
)
from crowdhide.accounting.shuffle.curves import (
    KrrShuffleCurve,
    _AdaptiveCurve,
    _krr_lower_curve,
    _ldp_lower_curve,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError, ParameterTypeError

__all__ = [
    "BINARY_EXACT_MAX_N",
    "EXHAUSTIVE_MAX_N",
    "KRR_BLANKET_BEST_MAX_N",
    "KRR_LOWER_MAX_N",
    "SHUFFLE_BOUNDS",
    "SHUFFLE_REGISTRY",
    "SafeSideCurve",
    "ShuffleBound",
    "ShuffleParams",
    "krr_dataset_curve",
    "krr_shuffle_curve",
    "lower_bound_name",
    "shuffle_bound_curve",
    "shuffle_delta",
    "shuffle_delta_all",
    "shuffle_epsilon",
    "shuffle_epsilon_all",
]

# The parameters' limits (calibration checks its own arguments against them).
_MAX_N, _MAX_EPS0 = _bound_curves._MAX_N, _bound_curves._MAX_EPS0
#: Largest n for the exact canonical-dataset curves (:func:`krr_shuffle_curve`,
#: :func:`krr_dataset_curve`: O(n) work).
KRR_LOWER_MAX_N = pairs.KRR_EXACT_MAX_N
#: ``best`` evaluates ``krr_blanket`` (k >= 3) up to this n; beyond, ``krr_clone`` is tighter.
KRR_BLANKET_BEST_MAX_N = 100_000
#: Relative margin by which every reported δ is rounded away from the truth (up for
#: certificates, down for lower bounds) and every ε is solved at a target δ moved the same
#: way. The exact computations (``exact``, clone pairs at n = 1, k-RR at ε = 0) match the
#: truth to ~1e-14 relative; without a margin float error could put them below it.
_ROUNDING_MARGIN = 1e-9


# --------------------------------------------------------------------------------------
# The registry of bounds


class SafeSideCurve(RoundedCurve):
    """A bound's curve as reported (pessimistic rounding, issues 15 and 28): a
    :class:`~crowdhide.accounting.curves.RoundedCurve` with the relative
    :data:`_ROUNDING_MARGIN` on δ and the absolute
    :func:`~crowdhide.accounting.logmath.loss_allowance` on ε (the shuffle evaluators'
    losses and thresholds near ε0). Every shuffle of ε0-LDP reports is ε0-DP, so ε is capped
    at ε0 and δ(ε >= ε0) = 0.
    """

    def __init__(
        self, inner: PrivacyCurve, eps0: float, *, lower: bool, loss_error: float | None = None
    ) -> None:
        super().__init__(
            inner,
            relative=_ROUNDING_MARGIN,
            loss_error=loss_allowance(eps0) if loss_error is None else loss_error,
            lower=lower,
            cap=eps0,
        )
        self._eps0 = eps0

    def epsilon_upper_hint(self) -> float:
        return self._eps0


def _always(params: ShuffleParams) -> bool:
    return True


def _no_condition(params: ShuffleParams) -> str | None:
    return None


@dataclass(frozen=True, slots=True)
class ShuffleBound:
    """One shuffle bound (a :class:`~crowdhide.accounting.registry.Bound` over
    :class:`ShuffleParams`): what it is, where it comes from, when it applies.

    ``scope`` is ``"any"`` (any ε0-LDP randomizer, and k-RR), ``"krr"`` (needs ``k``) or
    ``"generic"`` (only without ``k``: a lower bound over *all* ε0-LDP randomizers is not one
    for k-RR). ``condition(params)`` is the reason its parameter conditions fail (or None),
    ``build(params)`` its raw curve; ``in_best(params)`` says whether ``best`` needs to
    evaluate it (a bound another one dominates is skipped for speed).
    """

    name: str
    kind: Kind
    citation: str
    scope: str
    build: Callable[[ShuffleParams], PrivacyCurve]
    condition: Callable[[ShuffleParams], str | None] = _no_condition
    certificate_without_k: bool = True
    in_best: Callable[[ShuffleParams], bool] = _always
    #: Most grid points :func:`epsilon_vs_n` evaluates this bound at (None: all of them);
    #: for bounds that take a second or more per point.
    plot_points: int | None = None
    #: The absolute loss allowance on ε of its evaluator (None: thresholds computed from
    #: e^ε and e^ε0, :func:`~crowdhide.accounting.logmath.loss_allowance`).
    loss_error: Callable[[ShuffleParams], float] | None = None

    def listed_for(self, k: int | None) -> bool:
        """Whether the bound is listed (``*_all``, ``--bound all``) for this randomizer class."""
        return {"any": True, "krr": k is not None, "generic": k is None}[self.scope]

    def applies(self, params: ShuffleParams) -> str | None:
        """``None`` when the bound's conditions hold for ``params``, else the reason."""
        if self.scope == "krr" and params.k is None:
            return f"{self.name} is for k-ary randomized response: give k"
        if self.scope == "generic" and params.k is not None:
            return f"{self.name} is a lower bound over all eps0-LDP randomizers: omit k"
        if not self.certificate_without_k and params.k is None:
            return "not a certificate for every eps0-LDP randomizer (give k)"
        return self.condition(params)

    def curve(self, params: ShuffleParams) -> PrivacyCurve:
        """The bound's curve as reported (rounded to the safe side, ε capped at ε0)."""
        loss = None if self.loss_error is None else self.loss_error(params)
        return SafeSideCurve(
            self.build(params), params.eps0, lower=self.kind == "lower", loss_error=loss
        )


_BALLE = "Balle, Bell, Gascon, Nissim, CRYPTO 2019"
_FMT23 = "Feldman, McMillan, Talwar (SODA 2023) clone pair; needs R(x)+R(x') <= (e^eps0+1) R(v)"
_BLANKET_EXACT = (
    "privacy blanket of Balle et al., CRYPTO 2019, summed exactly (crowdhide, docs/shuffle.md)"
)
_VARIATION_RATIO = (
    "split clones over the total variation (accounting/shuffle/variation_ratio.py); the value of "
    "Wang et al., VLDB 2024, for any eps0-LDP randomizer"
)
_BOUNDS: tuple[ShuffleBound, ...] = (
        ShuffleBound(
            "erlingsson2019", "upper", "Erlingsson et al., SODA 2019", "any", _erlingsson_curve,
            _erlingsson_condition, in_best=lambda p: _erlingsson_condition(p) is None,
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "balle2019_hoeffding", "upper", _BALLE, "any", _blanket(_hoeffding_log_delta),
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "balle2019_bennett", "upper", _BALLE, "any", _blanket(_bennett_log_delta),
            loss_error=_closed_form,
        ),
        ShuffleBound(
            "feldman2021_closed", "upper", "Feldman, McMillan, Talwar, FOCS 2021 (closed form)",
            "any", _fmt21_closed_curve, _fmt21_closed_condition, loss_error=_closed_form,
        ),
        ShuffleBound(
            "feldman2021", "upper", "Feldman, McMillan, Talwar, FOCS 2021", "any", _fmt21_curve,
            # With k the FMT23 pair (more clones, same mixture) is a post-processing of it.
            in_best=lambda p: p.k is None, loss_error=lambda p: 0.0,
        ),
        ShuffleBound(
            "feldman2023", "upper", _FMT23, "any", _fmt23_curve, certificate_without_k=False,
            # k >= 3: krr_clone is a post-processing of this pair (>= 24 % tighter in ε
            # even at ε0 -> 0), so best skips it there for speed; k = 2: binary_rr_blocks
            # is 11-47 % tighter once the count has some noise (n p q >= 64).
            in_best=lambda p: p.k == 2 and (p.n <= BINARY_EXACT_MAX_N or _binary_noise(p) < 64),
            loss_error=lambda p: 0.0,  # the clone pair: see _clone_pair_loss
        ),
        ShuffleBound(
            "variation_ratio", "upper", _VARIATION_RATIO, "any", _variation_ratio_curve,
            # With k the k-RR bounds are post-processings of the FMT23 pair, which this
            # bound is never below.
            in_best=lambda p: p.k is None, plot_points=8,
        ),
        ShuffleBound(
            "krr_clone", "upper", "crowdhide k-RR clone reduction (docs/shuffle.md)", "krr",
            _krr_clone_curve, in_best=lambda p: p.k != 2,  # k = 2: the same curve as feldman2023
            loss_error=_clone_pair_loss,
        ),
        ShuffleBound(
            "krr_blanket", "upper", _BLANKET_EXACT, "krr", _krr_blanket_curve,
            # k = 2: the same pair as feldman2023; beyond KRR_BLANKET_BEST_MAX_N krr_clone
            # is the tighter one (docs/shuffle.md).
            in_best=lambda p: p.k != 2 and p.n <= KRR_BLANKET_BEST_MAX_N,
            loss_error=_clone_pair_loss,
        ),
        ShuffleBound(
            "binary_rr_blocks", "upper",
            "crowdhide blocks of datasets (accounting/shuffle/binary_rr.py)",
            "krr", _binary_blocks_curve, _binary_blocks_condition,
            # Beyond the exhaustive range, at every n (contour integrals: milliseconds).
            in_best=lambda p: p.k == 2 and p.n > BINARY_EXACT_MAX_N,
        ),
        ShuffleBound(
            "exact", "exact", "exhaustive enumeration of datasets", "krr", _exact_curve,
            _exact_condition, in_best=_exact_in_best,
            loss_error=_exact_loss_error,
        ),
        ShuffleBound(
            "krr_lower", "lower", "canonical k-RR datasets (docs/shuffle.md)", "krr",
            lambda p: _krr_lower_curve(p.eps0, p.n, int(p.k or 2)),
        ),
        ShuffleBound(
            "ldp_lower", "lower", "3-RR and binary RR are eps0-LDP (docs/shuffle.md)", "generic",
            lambda p: _ldp_lower_curve(p.eps0, p.n),
        ),
)  # fmt: skip
#: Every shuffle bound crowdhide knows, in listing order.
SHUFFLE_REGISTRY: Registry[ShuffleParams] = Registry(_BOUNDS, what="bound")
#: Names accepted by ``bound=`` (plus ``"best"``; ``"all"`` in the CLI).
SHUFFLE_BOUNDS: tuple[str, ...] = SHUFFLE_REGISTRY.names
_BY_NAME = {b.name: b for b in _BOUNDS}


def lower_bound_name(k: int | None) -> str:
    """The lower bound attached to every answer: ``krr_lower`` with ``k``, ``ldp_lower``
    without (a lower bound over all ε0-LDP randomizers)."""
    return "krr_lower" if k is not None else "ldp_lower"


def _check_bound(bound: Any, *, allow_best: bool = True) -> str:
    if not isinstance(bound, str):
        raise ParameterTypeError(
            f"bound must be a string, got {bound!r}", parameter="bound", value=bound
        )
    names = (*SHUFFLE_BOUNDS, "best") if allow_best else SHUFFLE_BOUNDS
    if bound not in names:
        raise InvalidParameterError(
            f"bound must be one of {', '.join(names)}; got {bound!r}",
            parameter="bound",
            value=bound,
        )
    return bound


def _query(delta: float | None, epsilon: float | None) -> dict[str, float]:
    """Validated ε query (``delta`` given) or δ query (``epsilon`` given)."""
    if delta is not None:
        return {"delta": check_probability("delta", delta, allow_zero=False, allow_one=False)}
    return {"epsilon": check_real("epsilon", epsilon, low=0.0)}


def _evaluate(name: str, params: ShuffleParams, query: dict[str, float]) -> PrivacyStatement:
    """``SHUFFLE_REGISTRY.statement``, with the conditions that depend on the queried δ."""
    try:
        return SHUFFLE_REGISTRY.statement(name, params, **query)
    except _NotApplicableError as exc:
        return PrivacyStatement.not_applicable(
            source=name,
            reason=str(exc),
            kind=SHUFFLE_REGISTRY[name].kind,
            inputs=asdict(params),
            **query,  # the asked ε or δ, echoed
        )


def _with_lower_of(
    rows: list[PrivacyStatement], params: ShuffleParams, query: dict[str, float]
) -> list[PrivacyStatement]:
    """Attach the lower bound (evaluated once, or found among ``rows``) to every row."""
    return attach_lower(rows, lower_bound_name(params.k), lambda n: _evaluate(n, params, query))


def _answer(
    bound: str, params: ShuffleParams, query: dict[str, float], *, lower: bool
) -> PrivacyStatement:
    """One bound's statement, or with ``bound="best"`` the smallest certificate."""
    if bound != "best":
        if _BY_NAME[bound].scope == "krr" and params.k is None:
            raise InvalidParameterError(f"bound {bound!r} needs k (k-ary randomized response)")
        one = _evaluate(bound, params, query)
        return _with_lower_of([one], params, query)[0] if lower else one
    names = [
        b.name for b in _BOUNDS
        if b.listed_for(params.k) and b.kind != "lower" and b.in_best(params)
    ]  # fmt: skip
    evaluate = partial(_evaluate, params=params, query=query)
    low = lower_bound_name(params.k) if lower else None
    rows = best_rows(names, evaluate, _BY_NAME, params, query.get("delta"), lower=low)
    # With no certificate (e.g. δ = 1 everywhere at ε0 ~ 30) the lower bound is still shown.
    return best_certificate(
        lambda name: rows.get(name) or evaluate(name),
        [name for name in names if name in rows],
        by="epsilon" if "delta" in query else "delta",
        lower=low,
    )


#: ``progress(bound, done, total)``: called before each bound of ``*_all`` is evaluated.
Progress = Callable[[str, int, int], None]


def _all(
    params: ShuffleParams, query: dict[str, float], progress: Progress | None
) -> list[PrivacyStatement]:
    listed = [b.name for b in _BOUNDS if b.listed_for(params.k)]
    rows = []
    for done, name in enumerate(listed):
        if progress is not None:
            progress(name, done, len(listed))
        rows.append(_evaluate(name, params, query))
    return _with_lower_of(rows, params, query)


def shuffle_epsilon_all(
    *, eps0: float, n: int, delta: float, k: int | None = None, progress: Progress | None = None
) -> list[PrivacyStatement]:
    """ε at ``delta`` from every bound listed for ``k`` (those whose conditions fail with
    ``conditions_met=False`` and the reason in ``notes``).

    Every statement carries the lower bound's statement in ``lower``.

    Parameters
    ----------
    eps0, n, k
        See :class:`ShuffleParams`.
    delta
        Target δ, ``0 < delta < 1`` (down to 1e-300).
    progress
        Optional ``progress(bound, done, total)``, called before each bound is evaluated.
    """
    return _all(ShuffleParams(eps0=eps0, n=n, k=k), _query(delta, None), progress)


def shuffle_delta_all(
    *, eps0: float, n: int, epsilon: float, k: int | None = None, progress: Progress | None = None
) -> list[PrivacyStatement]:
    """δ at ``epsilon`` from every listed bound (see :func:`shuffle_epsilon_all`)."""
    return _all(ShuffleParams(eps0=eps0, n=n, k=k), _query(None, epsilon), progress)


def shuffle_epsilon(
    *,
    eps0: float,
    n: int,
    delta: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> PrivacyStatement:
    """ε of n shuffled ε0-LDP reports at ``delta`` from one bound (default: the best).

    ``bound="best"`` returns the smallest ε among certificates. A named bound whose
    conditions fail is returned with ``conditions_met=False`` and the reason in ``notes`` (no
    exception). With ``lower`` (default) the statement also carries ``lower``, the statement
    of the lower bound (``krr_lower`` with ``k``, ``ldp_lower`` without): the truth lies in
    between.

    Examples
    --------
    >>> r = shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, k=2, bound="feldman2023")
    >>> round(r.epsilon, 5), r.lower.epsilon <= r.epsilon
    (0.04321, True)
    """
    name = _check_bound(bound)
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    return _answer(name, params, _query(delta, None), lower=lower)


def shuffle_delta(
    *,
    eps0: float,
    n: int,
    epsilon: float,
    k: int | None = None,
    bound: str = "best",
    lower: bool = True,
) -> PrivacyStatement:
    """δ of n shuffled ε0-LDP reports at ``epsilon`` (see :func:`shuffle_epsilon`); with
    ``lower`` the statement carries the lower bound's δ in ``lower``.

    Examples
    --------
    >>> r = shuffle_delta(eps0=4.0, n=10_000, epsilon=0.1, k=2)
    >>> r.source, round(r.delta, 6)
    ('binary_rr_blocks', 0.003391)
    """
    name = _check_bound(bound)
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    with settled_delta_query():  # δ at an ε query's answer is at most its δ
        return _answer(name, params, _query(None, epsilon), lower=lower)


def shuffle_bound_curve(*, bound: str, eps0: float, n: int, k: int | None = None) -> PrivacyCurve:
    """The :class:`~crowdhide.accounting.PrivacyCurve` of one bound, as reported (rounded a
    relative 1e-9 to the safe side, capped at ε0).

    Raises
    ------
    InvalidParameterError
        If the bound's parameter-level conditions fail (the message says which).

    Examples
    --------
    >>> c = shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2)
    >>> round(c.delta(0.1), 6)
    0.009209
    """
    params = ShuffleParams(eps0=eps0, n=n, k=k)
    entry = SHUFFLE_REGISTRY[_check_bound(bound, allow_best=False)]
    reason = entry.applies(params)
    if reason is not None:
        raise InvalidParameterError(reason)
    return entry.curve(params)


def krr_shuffle_curve(*, eps0: float, n: int, k: int) -> KrrShuffleCurve:
    """Privacy curve of n shuffled k-RR reports (substitute relation).

    For ``n <= EXHAUSTIVE_MAX_N`` it is the exact worst case over all datasets (a
    certificate, tight). For larger n it is the max of the exact curves of the two canonical
    datasets (all other users on one third value; all on x'), which is exact for those
    datasets and a lower bound on the worst case (``curve.is_certificate`` is False); use
    :func:`shuffle_delta` for a certificate.

    Examples
    --------
    >>> c = krr_shuffle_curve(eps0=math.log(13), n=1000, k=4)
    >>> round(c.epsilon(1e-4), 5), c.is_certificate
    (0.38895, False)
    """
    p = ShuffleParams(eps0=eps0, n=n, k=k)
    e0, nn, kk = p.eps0, p.n, int(k)
    if nn > KRR_LOWER_MAX_N:
        raise InvalidParameterError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    return KrrShuffleCurve(eps0=e0, n=nn, k=kk, exhaustive=nn <= EXHAUSTIVE_MAX_N)


def krr_dataset_curve(*, eps0: float, n: int, k: int, others: str) -> PrivacyCurve:
    """Exact curve (both directions) of shuffled k-RR for one canonical dataset.

    ``others="third"``: the other n − 1 users all hold one value z ∉ {x, x'} (k >= 3);
    ``others="same"``: they all hold x' (equivalently x). Exact for that dataset (windows'
    tails are bounded and added, so it is an upper bound for the dataset within ~1e-6
    relative), hence a lower bound on the worst case over datasets. Useful to check
    per-dataset results such as the x0-count δ of Biswas, Jung and Palamidessi (shuffled
    k-RR), which can never exceed the full-histogram curve of the same dataset.

    Examples
    --------
    >>> c = krr_dataset_curve(eps0=math.log(13), n=1000, k=4, others="same")
    >>> round(c.epsilon(1e-4), 5)
    0.30038
    """
    p = ShuffleParams(eps0=eps0, n=n, k=k)
    e0, nn, kk = p.eps0, p.n, int(k)
    if others not in ("third", "same"):
        raise InvalidParameterError(f"others must be 'third' or 'same', got {others!r}")
    if others == "third" and kk < 3:
        raise InvalidParameterError(f"others='third' needs k >= 3, got k={k!r}")
    if nn > KRR_LOWER_MAX_N:
        raise InvalidParameterError(f"n must be <= {KRR_LOWER_MAX_N} for the k-RR curve, got {n!r}")
    fn = pairs.krr_third_log_delta if others == "third" else pairs.krr_same_log_delta
    return _AdaptiveCurve(lambda e, t: fn(nn, kk, e0, e, t), e0)
