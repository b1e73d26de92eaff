"""The best shuffle certificate as one curve ε ↦ δ, to hand to another accountant.

:func:`shuffle_curve` takes the question :func:`crowdhide.shuffle_epsilon` takes (minus the
point asked) and returns a :class:`ShuffleCertificate`: at every ε its δ is the smallest
δ of every certificate that applies, so ``curve.epsilon(δ)`` equals ``shuffle_epsilon(...,
bound="best")`` for a single round. It exports as a ``dp_accounting`` privacy-loss
distribution (:meth:`ShuffleCertificate.to_pld`) and as a privacy profile
(:meth:`ShuffleCertificate.privacy_profile`).

Unlike :func:`crowdhide.accounting.shuffle.generic.krr_shuffle_curve` (exact on two canonical data
sets, a *lower* bound for n > 14), every value here is a certificate.

This module only assembles curves the shuffle family owns (the registry's bounds, the
mechanisms' certificates, the clone pair's PLD); it computes no bound of its own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.curves import PrivacyCurve
from crowdhide.accounting.shuffle._settle import settled_delta_query
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError, ResourceLimitError

__all__ = ["ShuffleCertificate", "shuffle_curve"]


class ShuffleCertificate(PrivacyCurve):
    """The tightest certificate crowdhide has for a shuffle, as a whole curve ε ↦ δ.

    δ(ε) is the smallest δ(ε) of every certificate that applies (each is an upper bound on
    the true curve, so their least is one too, point by point), and ε(δ) the smallest
    ε(δ): at every point it is the answer of ``shuffle_delta`` / ``shuffle_epsilon`` with
    ``bound="best"``. A member whose validity depends on the point asked (e.g. "needs
    δ <= 0.01") is skipped there, which only makes the curve larger (δ = 1 is always true).

    Hand it to another accountant as :meth:`to_pld` (a ``dp_accounting`` privacy-loss
    distribution of a dominating pair: composable, a certificate, possibly looser than the
    curve itself) or as :meth:`privacy_profile` (the function ε ↦ δ, e.g. for OpenDP's
    privacy-profile measures).
    """

    def __init__(
        self,
        members: dict[str, PrivacyCurve],
        *,
        inputs: dict[str, Any],
        pld: Callable[[float], PldCurve] | None,
    ) -> None:
        self._members = members
        self._pld = pld
        self.inputs = inputs

    is_certificate = True

    @property
    def members(self) -> tuple[str, ...]:
        """Names of the certificates this curve is the least of."""
        return tuple(self._members)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v}" for k, v in self.inputs.items() if v is not None)
        return f"<ShuffleCertificate({shown}): least of {', '.join(self.members)}>"

    def _each(self, evaluate: Callable[[PrivacyCurve], float], trivial: float) -> list[float]:
        values = []
        for curve in self._members.values():
            try:
                values.append(evaluate(curve))
            except ValueError:  # a condition on the point asked: this member says nothing
                values.append(trivial)
        return values

    def log_delta(self, epsilon: float) -> float:
        with settled_delta_query():  # as shuffle_delta (docs/proofs/profile-pair.md §17)
            return min(0.0, *self._each(lambda c: c.log_delta(epsilon), 0.0))

    def delta(self, epsilon: float) -> float:
        """The least member δ(ε), each member's own (safe-side) value: no round trip
        through ``exp(log_delta)``, which could land an ulp below it. Asked as
        :func:`~crowdhide.accounting.shuffle.query.shuffle_delta` asks it, so at an ε this
        curve returned for some δ it is at most that δ."""
        eps = check_real("epsilon", epsilon, low=0.0)
        with settled_delta_query():
            return min(1.0, *self._each(lambda c: c.delta(eps), 1.0))

    def epsilon(self, delta: float) -> float:
        check_probability("delta", delta, allow_zero=False, allow_one=False)
        return min(self._each(lambda c: c.epsilon(delta), math.inf))

    def epsilon_upper_hint(self) -> float:
        return max(c.epsilon_upper_hint() for c in self._members.values())

    def statement(self, delta: float) -> PrivacyStatement:
        """``(ε(delta), delta)`` naming the member that gives it (``source="best:NAME"``)."""
        values = self._each(lambda c: c.epsilon(delta), math.inf)
        name = self.members[values.index(min(values))]
        return PrivacyStatement(
            epsilon=min(values), delta=float(delta), source=f"best:{name}", inputs=self.inputs
        )

    def privacy_profile(self) -> Callable[[float], float]:
        """The function ε ↦ δ(ε) (an upper bound on the mechanism's privacy profile)."""
        return self.delta

    def to_pld(self, value_discretization_interval: float = 1e-4) -> Any:
        """A ``dp_accounting`` PLD that dominates the shuffle (compose it there).

        It is the PLD of the FMT21 / FMT23 clone pair (rounds, sampling and relation
        included), rounded pessimistically; its δ(ε) is at least this curve's where the
        curve's least member is another bound.

        Raises
        ------
        InvalidParameterError
            For a named ``mechanism`` (its own pair has no public PLD yet).
        """
        if self._pld is None:
            raise InvalidParameterError(
                "to_pld: no privacy-loss distribution for a named mechanism's pair yet; "
                "use the generic randomizer (mechanism=None) or k-RR (k=...)",
                parameter="mechanism",
                value=self.inputs.get("mechanism"),
            )
        # to_dp_accounting, not .pld: a composed PLD's δ(ε) is only an upper bound once the
        # FFT compositions' rounding allowance is added (at +inf mass, where dp_accounting
        # keeps it through its own compositions)
        return self._pld(value_discretization_interval).to_dp_accounting()


def shuffle_curve(
    *,
    eps0: float,
    n: int,
    k: int | None = None,
    mechanism: str | None = None,
    d: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
) -> ShuffleCertificate:
    """The best certificate of n shuffled ε0-LDP reports as a curve ε ↦ δ.

    The same randomizer and setting as :func:`crowdhide.shuffle_epsilon`: any ε0-LDP
    randomizer, k-RR (``k``) or a named ``mechanism`` (``d``); ``rounds``, ``sample_rate``
    and ``relation`` other than (1, 1, substitute) are answered by the composed PLD of a
    dominating pair (a mechanism: one round only).

    Parameters
    ----------
    eps0, n
        Local ε0 (``0 < eps0 <= 50``) of each report; users (``1 <= n <= 1e9``).
    k, mechanism, d
        The randomizer: any ε0-LDP one (all None), k-ary randomized response (``k``), or a
        named mechanism (``mechanism`` with domain size ``d``).
    rounds, sample_rate, relation
        Adaptively composed shuffles, Poisson sampling rate of users per round and the
        neighbouring relation (``"substitute"`` or ``"add_remove"``).

    Returns
    -------
    ShuffleCertificate
        The curve: ``epsilon(delta)``, ``delta(epsilon)``, ``statement(delta)`` and
        ``to_pld()``, each the smallest valid bound at that point.

    See Also
    --------
    crowdhide.shuffle_epsilon : One point of the curve, ε at a given δ.
    crowdhide.interop.dp_accounting_pld : The shuffle as a dp_accounting PLD.

    Examples
    --------
    >>> import crowdhide
    >>> curve = crowdhide.shuffle_curve(eps0=1.0, n=10_000, k=2)
    >>> best = crowdhide.shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6, k=2)
    >>> curve.epsilon(1e-6) == best.epsilon
    True
    >>> curve.statement(1e-6).source, curve.is_certificate
    ('best:binary_rr_blocks', True)
    >>> pld = curve.to_pld()  # a dp_accounting PrivacyLossDistribution, composable there
    >>> pld.self_compose(10).get_epsilon_for_delta(1e-6) > curve.epsilon(1e-6)
    True
    """
    given = _question(
        eps0=eps0, n=n, k=k, mechanism=mechanism, d=d, rounds=rounds,
        sample_rate=sample_rate, relation=relation,
    )  # fmt: skip
    single = given["rounds"] == 1 and given["sample_rate"] >= 1.0
    single = single and given["relation"] == "substitute"
    if given["mechanism"] is not None:
        return ShuffleCertificate(_mechanism_members(given, single), inputs=given, pld=None)
    pld = _clone_pair_pld(given)
    if not single:
        return ShuffleCertificate(_composed_members(given, pld), inputs=given, pld=pld)
    from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY, ShuffleBound, ShuffleParams

    params = ShuffleParams(eps0=given["eps0"], n=given["n"], k=given["k"])
    members = {
        b.name: b.curve(params)
        for b in SHUFFLE_REGISTRY
        if isinstance(b, ShuffleBound) and b.kind != "lower" and b.listed_for(params.k)
        and b.in_best(params) and b.applies(params) is None
    }  # fmt: skip
    return ShuffleCertificate(members, inputs=given, pld=pld)


def _composed_members(
    given: dict[str, Any], pld: Callable[[float], PldCurve]
) -> dict[str, PrivacyCurve]:
    """The certificates of composed or sampled rounds: the clone pair's PLD, the profile pair,
    the rounds apart. A clone pair too large to compose (n = 10^9: ``ResourceLimitError``)
    is left out where another member answers, as ``composed_shuffle``'s ``best`` does; its
    :meth:`ShuffleCertificate.to_pld` still raises that error."""
    grid = min(1e-4, max(2e-6, 1e-2 / given["rounds"]))
    others = {**_profile_pair_member(given, grid), **_rounds_apart_member(given)}
    try:
        return {"clone_pair_pld": pld(grid), **others}
    except ResourceLimitError:
        if not others:
            raise
        return others


def _profile_pair_member(given: dict[str, Any], grid: float) -> dict[str, PrivacyCurve]:
    """The composed profile pair of the single-round certificate (any ε0-LDP randomizer,
    substitute, no sampling: docs/proofs/profile-pair.md), where it applies: a second
    certificate, so the curve is the least of it and the clone pair's, point by point."""
    from crowdhide.accounting.shuffle.composition import ComposedShuffleParams
    from crowdhide.accounting.shuffle.profile_pair import ProfilePairBound

    params = ComposedShuffleParams(
        eps0=given["eps0"], n=given["n"], k=given["k"], rounds=given["rounds"],
        sample_rate=given["sample_rate"], relation=given["relation"], discretization=grid,
    )  # fmt: skip
    bound = ProfilePairBound()
    if bound.applies(params) is not None:
        return {}
    return {bound.name: bound.curve(params)}


def _rounds_apart_member(given: dict[str, Any]) -> dict[str, PrivacyCurve]:
    """The rounds certified one at a time (n users every round, substitute), as
    ``composed_shuffle``'s ``best`` asks them: basic composition of the FMT21 single-round
    certificate (docs/proofs/profile-pair.md §19) and advanced composition of it (§20). The
    third member of ``best`` there, basic composition of ``best``'s own single-round answer
    (§20), is not a member of the curve: each of its points is a single-round ``best`` query
    (0.1-0.5 s), so the curve can be looser than ``best``'s statement where it wins."""
    from crowdhide.accounting.shuffle._advanced_rounds import AdvancedRoundsCurve
    from crowdhide.accounting.shuffle._rounds_apart import rounds_apart_curve

    if given["sample_rate"] < 1.0 or given["relation"] != "substitute":
        return {}
    eps0, n, rounds = given["eps0"], given["n"], given["rounds"]
    curve = rounds_apart_curve(eps0, n, rounds)
    if curve is None:
        return {}
    return {
        "rounds_apart": curve,
        "advanced_rounds": AdvancedRoundsCurve(curve.one, eps0, n, rounds),
    }


def _question(**given: Any) -> dict[str, Any]:
    """The inputs checked as :func:`crowdhide.shuffle_epsilon` checks them (same messages)."""
    from crowdhide.accounting.shuffle.query import _randomizer, _setting

    _randomizer(given["mechanism"], given["d"], given["k"])
    given["eps0"] = check_real("eps0", given["eps0"], low=0.0, low_open=True, high=50.0)
    given["n"] = check_int("n", given["n"], low=1, high=10**9)
    if given["k"] is not None:
        given["k"] = check_int("k", given["k"], low=2 if given["mechanism"] is None else 1)
    rounds, rate, relation = _setting(given["rounds"], given["sample_rate"], given["relation"])
    return given | {"rounds": rounds, "sample_rate": rate, "relation": relation}


def _clone_pair_pld(given: dict[str, Any]) -> Callable[[float], PldCurve]:
    """The PLD of the clone pair of this setting, on a loss grid given later."""
    from crowdhide.accounting.shuffle.composition import shuffle_pld

    def build(interval: float) -> PldCurve:
        return shuffle_pld(
            eps0=given["eps0"], n=given["n"], k=given["k"], rounds=given["rounds"],
            sample_rate=given["sample_rate"], relation=given["relation"],
            value_discretization_interval=interval,
        )  # fmt: skip

    return build


def _mechanism_members(given: dict[str, Any], single: bool) -> dict[str, PrivacyCurve]:
    """A mechanism's own certificate (and, where the dispatcher asks it too, the generic
    variation-ratio bound: see :mod:`crowdhide.accounting.shuffle.query`)."""
    from crowdhide.accounting.shuffle.generic import SHUFFLE_REGISTRY, ShuffleParams
    from crowdhide.accounting.shuffle.mechanisms import mechanism_curve
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    name = given["mechanism"]
    if not single:
        raise InvalidParameterError(
            f"shuffle_curve with mechanism={name!r} is one round only (rounds=1, "
            "sample_rate=1, relation='substitute'); shuffle_epsilon/shuffle_delta answer "
            f"the composed question, got rounds={given['rounds']}, "
            f"sample_rate={given['sample_rate']}, relation={given['relation']!r}",
            parameter="mechanism",
            value=name,
        )
    members: dict[str, PrivacyCurve] = {
        f"mechanism:{name}": mechanism_curve(
            mechanism=name, eps0=given["eps0"], n=given["n"], d=given["d"], k=given["k"]
        )
    }
    known = MECHANISMS[name]
    if known.split is None and not known.variation_capped:
        params = ShuffleParams(eps0=given["eps0"], n=given["n"], k=None)
        generic = SHUFFLE_REGISTRY["variation_ratio"]
        if generic.applies(params) is None:
            members["variation_ratio"] = generic.curve(params)
    return members
