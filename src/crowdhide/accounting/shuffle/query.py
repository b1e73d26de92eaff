"""One place that decides which accountant answers a shuffle question.

``shuffle_epsilon`` (ε at δ) and ``shuffle_delta`` (δ at ε) take the randomizer — any
ε0-LDP one, ``k``-ary randomized response (``k=``) or a named mechanism (``mechanism=``,
``d=``) — and the setting — ``rounds``, ``sample_rate``, ``relation`` — and call exactly
one path:

* one round, no sampling, ``substitute``: the single-round bounds
  (:mod:`crowdhide.accounting.shuffle.generic`, or the mechanism's own certificate in
  :mod:`crowdhide.accounting.shuffle.mechanisms`);
* otherwise the PLD composition of a dominating pair
  (:mod:`crowdhide.accounting.shuffle.composition`): the FMT21/FMT23 clone pair for a
  generic randomizer or k-RR, the mechanism's own pair (its clone rate ρ and informative
  share μ) for a mechanism.

An input that does not apply to the question (``d`` without ``mechanism``, ``k`` with a
mechanism other than ``subset``, a ``bound`` the chosen path does not have) is refused
with an :class:`~crowdhide.errors.InvalidParameterError` naming it, never dropped; every
answer's ``inputs`` echo every input (``None`` where not given).

A mechanism's single-round answer evaluates its own certificate and lower bound only: its
three-point system is at most the generic variation-ratio certificate (same or larger
clone rates at its μ; the piecewise mechanism includes the restricted one), so the generic
bounds cannot win — except for Laplace, whose one-rate cells are not ordered against it
(measured: ε0 = 8, n = 1e5, δ = 1e-6 gives 1.196 against 1.186), so Laplace also asks
``variation_ratio`` (one generic bound, not all of them). Below δ = 1e-280
(:data:`UNDERFLOW_DELTA`) the blocked certificates stop at their rounding floor, and
``best`` also asks the FMT21 pair (``feldman2021``), which has none — unless one evaluation
of its curve shows its ε above the mechanism's own (the same answer, without its search).

Examples
--------
>>> r = shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, mechanism="oue", d=8, rounds=3)
>>> r.source, r.inputs["rounds"], r.inputs["mechanism"], r.is_certificate
('mechanism:oue', 3, 'oue', True)
>>> one = shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, mechanism="oue", d=8)
>>> one.epsilon < r.epsilon
True
>>> shuffle_epsilon(eps0=1.0, n=1000, delta=1e-6, d=8)  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
crowdhide.errors.InvalidParameterError: d applies only with mechanism (...), got d=8
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.registry import best_of
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = [
    "RELATIONS",
    "UNDERFLOW_DELTA",
    "mechanism_pair_rates",
    "shuffle_all",
    "shuffle_delta",
    "shuffle_epsilon",
]

#: Neighbouring relations: one user's value changed (n fixed), or one user added/removed.
RELATIONS: tuple[str, ...] = ("substitute", "add_remove")
_MAX_ROUNDS = 10**6
#: ``progress(bound, done, total)`` before each bound of :func:`shuffle_all`.
Progress = Callable[[str, int, int], None]
#: Below this δ a mechanism's blocked certificate cannot answer: each binomial tail it sums
#: carries an absolute allowance of 1e-300 (``binomial_tails.BETAINC_ATOL``), so its δ never
#: falls below a few times that and its ε is ε0 (measured: OUE, n = 1e6, ε0 = 1, δ = 1e-300
#: answered 1 against a lower bound of 0.028). There ``best`` also asks the FMT21 clone pair,
#: a certificate for every ε0-LDP randomizer whose evaluator has no such floor.
UNDERFLOW_DELTA = 1e-280
#: Relative allowance on a mechanism's ρ (down) and μ (up): both are a few float operations.
_RATE_ULPS = 1e-14


def mechanism_pair_rates(
    *, mechanism: str, eps0: float, d: int | None, k: int | None
) -> tuple[float, float]:
    """``(ρ, μ)`` of a mechanism's dominating pair for composition: the smallest clone rate
    and the largest informative share over its certificate cells (a smaller ρ or a larger μ
    is a post-processing, so this pair dominates every cell), rounded to the safe side.

    Examples
    --------
    >>> rho, mu = mechanism_pair_rates(mechanism="oue", eps0=1.0, d=8, k=None)
    >>> round(rho, 6), round(mu, 6)   # 1/e, 1/2
    (0.367879, 0.5)
    """
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS, certificate_cells

    known = MECHANISMS[mechanism]
    cells = certificate_cells(known, eps0, d or 0, k or 1)
    rho = min(r for _, r in cells) * (1.0 - _RATE_ULPS)
    mu = min(1.0, max(m for m, _ in cells) * (1.0 + _RATE_ULPS))
    return max(rho, math.exp(-eps0) * (1.0 - _RATE_ULPS)), mu


def _randomizer(mechanism: Any, d: Any, k: Any) -> None:
    """Refuse a domain option that does not apply to the chosen randomizer."""
    if mechanism is None:
        if d is not None:
            raise InvalidParameterError(
                f"d applies only with mechanism (the domain size of a named mechanism), got d={d!r}"
            )
        return
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    if mechanism not in MECHANISMS:
        raise InvalidParameterError(
            f"mechanism must be one of {', '.join(MECHANISMS)}; got {mechanism!r}"
        )
    known = MECHANISMS[mechanism]
    if k is not None and not known.needs_k:
        raise InvalidParameterError(
            f"k does not apply to mechanism {mechanism!r} (k is the subset size of 'subset'; "
            f"give the domain size as d), got k={k!r}"
        )
    if known.needs_d and d is None:
        raise InvalidParameterError(
            f"d (the domain size) is needed by mechanism {mechanism!r}, got none", parameter="d"
        )
    if not known.needs_d and d is not None:
        raise InvalidParameterError(
            f"d does not apply to mechanism {mechanism!r} (input in [-1, 1]), got d={d!r}"
        )
    if known.needs_k and k is None:
        raise InvalidParameterError(f"mechanism {mechanism!r} needs k (the subset size), got none")


def _setting(rounds: Any, sample_rate: Any, relation: Any) -> tuple[int, float, str]:
    count = check_int("rounds", rounds, low=1, high=_MAX_ROUNDS)
    rate = check_probability("sample_rate", sample_rate, allow_zero=False)
    if relation not in RELATIONS:
        raise InvalidParameterError(
            f"relation must be one of {', '.join(RELATIONS)}; got {relation!r}"
        )
    return count, rate, str(relation)


def _mechanism_single(
    mechanism: str, params: dict[str, Any], query: dict[str, float], bound: str
) -> PrivacyStatement:
    """One round of a mechanism: its certificate and lower bound (and, for Laplace, the
    generic variation-ratio certificate: see the module docstring)."""
    from crowdhide.accounting.shuffle import generic
    from crowdhide.accounting.shuffle.mechanisms import MECHANISM_REGISTRY, MechanismParams
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    own = f"mechanism:{mechanism}"
    if bound not in ("best", own):
        raise InvalidParameterError(f"bound must be best or {own} with mechanism, got {bound!r}")
    known = MECHANISMS[mechanism]
    mp = MechanismParams(eps0=params["eps0"], n=params["n"], d=params["d"], k=params["k"])
    reason = MECHANISM_REGISTRY[own].applies(mp)
    if reason is not None:
        raise InvalidParameterError(reason)
    names = [own]
    if MECHANISM_REGISTRY[f"mechanism_lower:{mechanism}"].applies(mp) is None:
        names.append(f"mechanism_lower:{mechanism}")
    rows = list(MECHANISM_REGISTRY.all(mp, names=names, **query))
    generic_bounds = []
    if bound == "best" and known.split is None and not known.variation_capped:
        generic_bounds.append("variation_ratio")
    if bound == "best" and query.get("delta", 1.0) < UNDERFLOW_DELTA:
        generic_bounds.append("feldman2021")
    for name in generic_bounds:
        if name == "variation_ratio" and _cannot_win(rows[0], params, query):
            continue
        if name == "feldman2021" and _fmt21_cannot_win(rows[0], params, query):
            continue
        kw = {"eps0": params["eps0"], "n": params["n"], "bound": name}
        if "delta" in query:
            rows.append(generic.shuffle_epsilon(**kw, delta=query["delta"], lower=False))
        else:
            rows.append(generic.shuffle_delta(**kw, epsilon=query["epsilon"], lower=False))
    return best_of(rows, by="epsilon" if "delta" in query else "delta")


def _cannot_win(own: PrivacyStatement, params: dict[str, Any], query: dict[str, float]) -> bool:
    """Whether ``variation_ratio``'s ε at the asked δ is certainly not below the mechanism's
    own certificate ``own``, from the start of its search alone (issue 32: Laplace queries
    spent 250-460 ms of CPU on a generic bound that did not win).

    Its search returns its start's ε or more (:class:`~crowdhide.accounting.shuffle.curves.
    BracketedCurve`), and both answers pass through the same safe-side rounding (a
    non-decreasing map of the raw ε, the inner δ lowered alike), so the start's rounded ε is
    at most the bound's; where it is not below ``own``, ``best_of`` keeps ``own`` (the first
    of equals). The answer is the one evaluating the bound gives, bit for bit."""
    from crowdhide.accounting.shuffle.curves import VARIATION_RATIO_MIN_DELTA

    delta = query.get("delta")
    if delta is None or delta < VARIATION_RATIO_MIN_DELTA or not own.is_certificate:
        return False
    if _variation_start_above(params["eps0"], params["n"], delta, own.epsilon):
        return True  # the start's ε is above own's: the same decision, one evaluation
    return _variation_start_epsilon(params["eps0"], params["n"], delta) >= own.epsilon


def _variation_start_above(eps0: float, n: int, delta: float, epsilon: float) -> bool:
    """Whether the start of ``variation_ratio``'s search at ``delta`` (rounded as its answer
    is) is certainly above ``epsilon``, told by one evaluation of its curve
    (:func:`~crowdhide.accounting.shuffle._best.epsilon_above`; False: not known). Where it
    is, :func:`_variation_start_epsilon` (a root search of 10-14 evaluations, 10-20 ms of
    each Laplace query at δ >= 1e-10; issue 32) is above ``epsilon`` too, so
    :func:`_cannot_win` decides as before (docs/proofs/mechanism-certificates.md, section
    1v)."""
    from crowdhide.accounting.shuffle._best import epsilon_above
    from crowdhide.accounting.shuffle._bound_curves import variation_ratio_start
    from crowdhide.accounting.shuffle.generic import SafeSideCurve

    if not math.isfinite(epsilon):
        return False
    curve = SafeSideCurve(variation_ratio_start(n, eps0), eps0, lower=False)
    return epsilon_above(curve, delta, epsilon)


def _fmt21_cannot_win(
    own: PrivacyStatement, params: dict[str, Any], query: dict[str, float]
) -> bool:
    """Whether ``feldman2021``'s ε at the asked δ is certainly above the mechanism's own
    certificate ``own``, told by one evaluation of its curve
    (:func:`~crowdhide.accounting.shuffle._best.epsilon_above`, as ``best`` skips krr_clone).
    Issue 32: below :data:`UNDERFLOW_DELTA` every mechanism query also solved the FMT21 pair
    (20-80 ms at n >= 1e4, δ = 1e-300) and it won no cell of the table: the mechanism's
    three-point system is a post-processing of it. A skipped bound's ε is strictly above
    ``own``'s, so ``best_of`` (which keeps ``own``) returns the same statement, bit for bit."""
    from crowdhide.accounting.shuffle._best import epsilon_above
    from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY, ShuffleParams

    delta = query.get("delta")
    if delta is None or not own.is_certificate or not math.isfinite(own.epsilon):
        return False
    shuffle_params = ShuffleParams(eps0=params["eps0"], n=params["n"])
    bound = SHUFFLE_REGISTRY["feldman2021"]
    if bound.applies(shuffle_params) is not None:
        return False
    return epsilon_above(bound.curve(shuffle_params), delta, own.epsilon)


def _variation_start_epsilon(eps0: float, n: int, delta: float) -> float:
    """The start of ``variation_ratio``'s search at ``delta``, rounded as its answer is."""
    from crowdhide.accounting.shuffle._bound_curves import variation_ratio_start
    from crowdhide.accounting.shuffle.generic import SafeSideCurve

    return SafeSideCurve(variation_ratio_start(n, eps0), eps0, lower=False).epsilon(delta)


def _composed(params: dict[str, Any], query: dict[str, float], bound: str) -> PrivacyStatement:
    """Rounds, sampling or add/remove: the PLD of a dominating pair, composed."""
    from crowdhide.accounting.shuffle.composition import (
        CLONE_PAIRS,
        PROFILE_PAIR,
        composed_shuffle,
    )

    mechanism = params["mechanism"]
    common: dict[str, Any] = {
        "eps0": params["eps0"],
        "n": params["n"],
        "rounds": params["rounds"],
        "sample_rate": params["sample_rate"],
        "relation": params["relation"],
    }
    if mechanism is None:
        if bound not in ("best", *CLONE_PAIRS, PROFILE_PAIR):
            raise InvalidParameterError(
                f"bound must be best or one of {', '.join((*CLONE_PAIRS, PROFILE_PAIR))} "
                "with rounds > 1, "
                f"sample_rate < 1 or relation add_remove, got {bound!r}"
            )
        asked: dict[str, Any] = {"delta": query.get("delta"), "epsilon": query.get("epsilon")}
        return composed_shuffle(**common, **asked, k=params["k"], pair=bound)
    own = f"mechanism:{mechanism}"
    if bound not in ("best", own):
        raise InvalidParameterError(f"bound must be best or {own} with mechanism, got {bound!r}")
    _mechanism_single_applies(params)
    rho, mu = mechanism_pair_rates(
        mechanism=mechanism, eps0=params["eps0"], d=params["d"], k=params["k"]
    )
    asked = {"delta": query.get("delta"), "epsilon": query.get("epsilon")}
    result = composed_shuffle(**common, **asked, mechanism_pair=(own, rho, mu))
    if params["relation"] == "add_remove" and mu < 1.0:
        result = result.with_notes(
            f"add_remove: the pair counts every report as informative (mu = 1, not {mu:.4g}); "
            "valid, looser"
        )
    return result


def _mechanism_single_applies(params: dict[str, Any]) -> None:
    """The mechanism's own conditions (e.g. subset needs d >= 3), as an input error."""
    from crowdhide.accounting.shuffle.mechanisms import MECHANISM_REGISTRY, MechanismParams

    name = params["mechanism"]
    mp = MechanismParams(eps0=params["eps0"], n=params["n"], d=params["d"], k=params["k"])
    reason = MECHANISM_REGISTRY[f"mechanism:{name}"].applies(mp)
    if reason is not None:
        raise InvalidParameterError(reason)


def _ask(query: dict[str, float], **given: Any) -> PrivacyStatement:
    """Validate every input, call the one path that answers, echo every input."""
    bound = given.pop("bound")
    if not isinstance(bound, str):
        raise InvalidParameterError(f"bound must be a string, got {bound!r}")
    _randomizer(given["mechanism"], given["d"], given["k"])
    given["eps0"] = check_real("eps0", given["eps0"], low=0.0, low_open=True, high=50.0)
    given["n"] = check_int("n", given["n"], low=1, high=10**9)
    if given["k"] is not None:
        given["k"] = check_int("k", given["k"], low=2 if given["mechanism"] is None else 1)
    rounds, rate, relation = _setting(given["rounds"], given["sample_rate"], given["relation"])
    given |= {"rounds": rounds, "sample_rate": rate, "relation": relation}
    single = rounds == 1 and rate >= 1.0 and relation == "substitute"
    if "delta" in query:
        return _answer(query, given, bound, single)
    from crowdhide.accounting.shuffle._settle import settled_delta_query

    with settled_delta_query():  # δ at an ε query's answer is at most its δ (§17)
        return _answer(query, given, bound, single)


def _answer(
    query: dict[str, float], given: dict[str, Any], bound: str, single: bool
) -> PrivacyStatement:
    """The one path that answers (:func:`_ask`), its inputs echoed."""
    if not single:
        result = _composed(given, query, bound)
    elif given["mechanism"] is not None:
        result = _mechanism_single(given["mechanism"], given, query, bound)
    else:
        from crowdhide.accounting.shuffle import generic

        kw: dict[str, Any] = {"eps0": given["eps0"], "n": given["n"], "k": given["k"]}
        if "delta" in query:
            result = generic.shuffle_epsilon(**kw, bound=bound, delta=query["delta"])
        else:
            result = generic.shuffle_delta(**kw, bound=bound, epsilon=query["epsilon"])
    echoed = {**dict(result.inputs), **given, "bound": bound, **query}
    return replace(result, inputs=echoed)


def shuffle_epsilon(
    *,
    eps0: float,
    n: int,
    delta: float,
    k: int | None = None,
    mechanism: str | None = None,
    d: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
    bound: str = "best",
) -> PrivacyStatement:
    """ε at ``delta`` of n shuffled reports, for every randomizer and setting.

    Parameters
    ----------
    eps0, n
        Local ε0 (``0 < eps0 <= 50``) of each report; users (``1 <= n <= 1e9``).
    delta
        Target δ, ``0 < delta < 1``.
    k, mechanism, d
        The randomizer: any ε0-LDP one (all None), k-ary randomized response (``k``), or a
        named mechanism (``mechanism`` with domain size ``d``; ``k`` is the subset size of
        ``"subset"`` only). See :data:`~crowdhide.accounting.shuffle.randomizers.MECHANISMS`.
    rounds, sample_rate, relation
        Adaptively composed shuffles (``1 <= rounds <= 1e6``), Poisson sampling rate of
        users per round (``0 < sample_rate <= 1``) and the neighbouring relation
        (``"substitute"`` or ``"add_remove"``); anything but (1, 1, substitute) is answered
        by PLD composition of a dominating pair.
    bound
        ``"best"`` or one bound of the chosen path (a single-round bound name, a clone pair
        when composed, ``mechanism:NAME`` with a mechanism).

    Returns
    -------
    PrivacyStatement
        ``inputs`` echo every input above (and the path's own, e.g. the loss grid). Its ε is
        one at which :func:`shuffle_delta` with the same inputs answers at most ``delta``
        (checked on the issue-32 table, ``benchmarks/bench_roundtrip.py``; see the
        limitations in docs/proofs/profile-pair.md §17).

    See Also
    --------
    shuffle_delta : The inverse question, δ at a given ε.
    crowdhide.shuffle_curve : The whole curve, exportable to dp_accounting and OpenDP.
    crowdhide.calibrate : The largest ε0 or the fewest users for a target.

    Examples
    --------
    >>> survey = shuffle_epsilon(eps0=2.0, n=10_000, delta=1e-6, k=4)
    >>> survey.is_certificate, survey.epsilon < 2.0, survey.inputs["k"]
    (True, True, 4)
    """
    d_ = check_probability("delta", delta, allow_zero=False, allow_one=False)
    return _ask(
        {"delta": d_}, eps0=eps0, n=n, k=k, mechanism=mechanism, d=d, rounds=rounds,
        sample_rate=sample_rate, relation=relation, bound=bound,
    )  # fmt: skip


def shuffle_delta(
    *,
    eps0: float,
    n: int,
    epsilon: float,
    k: int | None = None,
    mechanism: str | None = None,
    d: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
    bound: str = "best",
) -> PrivacyStatement:
    """δ at ``epsilon`` (``>= 0``) of n shuffled reports (see :func:`shuffle_epsilon`).

    Parameters
    ----------
    eps0, n
        Local ε0 (``0 < eps0 <= 50``) of each report; users (``1 <= n <= 1e9``).
    epsilon
        The ε at which δ is wanted, ``>= 0``.
    k, mechanism, d
        The randomizer, as for :func:`shuffle_epsilon`.
    rounds, sample_rate, relation
        Composition, Poisson sampling and neighbouring relation, as for
        :func:`shuffle_epsilon`.
    bound
        ``"best"`` (the smallest valid δ) or the name of one bound of the chosen path.

    Returns
    -------
    PrivacyStatement
        δ at ``epsilon``, an upper bound; ``inputs`` echo every input above. It is the
        least of the bounds it evaluates, among them those :func:`shuffle_epsilon` at that
        δ certifies with, so at an ε that :func:`shuffle_epsilon` returned for some δ it is
        at most that δ (docs/proofs/profile-pair.md §17).

    See Also
    --------
    shuffle_epsilon : The inverse question, ε at a given δ.
    crowdhide.shuffle_curve : The whole curve ε ↦ δ.

    Examples
    --------
    >>> r = shuffle_delta(eps0=2.0, n=500, epsilon=0.5, mechanism="krr", d=4, sample_rate=0.5)
    >>> r.inputs["sample_rate"], r.source
    (0.5, 'mechanism:krr')
    """
    eps = check_real("epsilon", epsilon, low=0.0)
    return _ask(
        {"epsilon": eps}, eps0=eps0, n=n, k=k, mechanism=mechanism, d=d, rounds=rounds,
        sample_rate=sample_rate, relation=relation, bound=bound,
    )  # fmt: skip


def shuffle_all(
    *,
    eps0: float,
    n: int,
    delta: float | None = None,
    epsilon: float | None = None,
    k: int | None = None,
    mechanism: str | None = None,
    d: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
    progress: Progress | None = None,
) -> list[PrivacyStatement]:
    """Every single-round bound's statement (``bound="all"``): ε at ``delta`` or δ at
    ``epsilon``. The other inputs are accepted so that one that does not apply to this
    question (a mechanism, rounds, sampling, add/remove) is refused by name, not dropped.

    Examples
    --------
    >>> rows = shuffle_all(eps0=1.0, n=1000, delta=1e-6, k=2)
    >>> len(rows) > 3 and all(r.inputs["rounds"] == 1 for r in rows)
    True
    >>> shuffle_all(eps0=1.0, n=1000, delta=1e-6, rounds=2)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: bound 'all' lists the single-round bounds; ...
    """
    from crowdhide.accounting.shuffle import generic

    _randomizer(mechanism, d, k)
    count, rate, rel = _setting(rounds, sample_rate, relation)
    given = {"mechanism": mechanism, "rounds": count, "sample_rate": rate, "relation": rel}
    for name, value, default in (
        ("mechanism", mechanism, None),
        ("rounds", count, 1),
        ("sample_rate", rate, 1.0),
        ("relation", rel, "substitute"),
    ):
        if value != default:
            raise InvalidParameterError(
                f"bound 'all' lists the single-round bounds; it does not apply with "
                f"{name}={value!r}"
            )
    if (delta is None) == (epsilon is None):
        raise InvalidParameterError(
            f"give exactly one of delta and epsilon, got delta={delta!r}, epsilon={epsilon!r}"
        )
    if delta is not None:
        rows = generic.shuffle_epsilon_all(eps0=eps0, n=n, k=k, delta=delta, progress=progress)
    else:
        assert epsilon is not None
        rows = generic.shuffle_delta_all(eps0=eps0, n=n, k=k, epsilon=epsilon, progress=progress)
    extra = {**given, "d": d, "bound": "all"}
    return [replace(r, inputs={**dict(r.inputs), **extra}) for r in rows]
