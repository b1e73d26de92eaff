"""Composed shuffled rounds and the Poisson-subsampled shuffle, by privacy-loss distributions.

A single shuffled round of n ε0-LDP reports is dominated by the *clone pair* of Feldman,
McMillan and Talwar (see :mod:`crowdhide.accounting.shuffle.generic`): every other user's report is,
with probability β, a "clone" drawn from ``(R(x) + R(x'))/2`` and otherwise from a residual
law independent of the target's value, so the shuffled output is a post-processing of

    P = α·(A + 1, C − A) + (1 − α)·(A, C − A + 1),   Q = the same with the components swapped,

``C ~ Bin(n − 1, β)``, ``A | C ~ Bin(C, 1/2)``, ``α = e^{ε0}/(e^{ε0} + 1)``; ``β = e^{−ε0}``
(FMT21, any ε0-LDP randomizer) or ``β = 2/(e^{ε0} + 1)`` (FMT23, randomizers with
``R(x) + R(x') <= (e^{ε0} + 1) R(v)``, e.g. k-RR). Because the pair dominates *every*
neighbouring pair of one round, ``rounds`` adaptively composed shuffles are dominated by the
``rounds``-fold product of the pair; its privacy-loss distribution (PLD) is composed by FFT in
``dp_accounting`` with pessimistic rounding, so the result is a certificate.

Poisson subsampling (rate γ, each user independently; ``sample_rate``): each other user is
absent (1 − γ), a clone (γβ) or a sampled residual (γ(1 − β)). The adversary is given the
number ``s`` of sampled residuals and their reports (independent of the target's value); of
the other ``n − 1 − s`` users each is a clone with probability ``β' = γβ/(1 − γ(1 − β))``, so
``C | s ~ Bin(n − 1 − s, β')``, and the target is present with probability γ. Beyond s the
adversary sees only the counts ``(a, b)`` — ``a + b = C + 1`` when the target is present and
``C`` otherwise, so C is *not* revealed. (Revealing s is needed: s and C are dependent, and
the shuffled output is a post-processing of ``(s, residual reports, a, b)``, not of
``(a, b)`` alone; the exhaustive test catches the difference.) With ``N = a + b``,
``w = Bin(·; n − 1 − s, β')`` and ``B_N(a) = Bin(a; N, 1/2)``:

* target present with value x: ``w(N − 1) B_N(a) (2/N) (α a + (1 − α)(N − a))``;
* target present with value x': the same with ``a`` and ``N − a`` swapped;
* target absent: ``w(N) B_N(a)``.

``relation="substitute"`` compares ``γ·present(x) + (1 − γ)·absent`` with
``γ·present(x') + (1 − γ)·absent`` (n fixed, one value changed); ``relation="add_remove"``
compares ``γ·present(x) + (1 − γ)·absent`` with ``absent`` (both directions). Without
subsampling (γ = 1) the substitute pair is the clone pair above. The pair with fewer
candidates dominates the pair with more (an extra candidate is an independent
post-processing), so values of s are merged in blocks that keep the block's largest s.

**A mechanism's own pair.** A mechanism with the three-point parameters of
:mod:`crowdhide.accounting.shuffle.mechanisms` (clone probability ρ, informative share μ =
β/κ, worst pair over cells) is dominated by the same system with a clone rate ρ in place of
β, whose clones and target are informative (a ``±`` report) with probability μ and
uninformative otherwise. The adversary is given the clone count C (n fixed: the counts of
all Q-space reports reveal it anyway); given C it is the subsampled pair above with C
candidates, clone rate μ and "presence" μ (uninformative = absent, counted in C). Poisson
sampling at rate γ under ``substitute`` is the shuffle of the randomizer "report R(x) with
probability γ, else ⊥" (n is known, so the number of ⊥ is the number of missing reports):
its ρ is unchanged (⊥ has ratio 1/2 >= ρ) and its μ is γμ. Under ``add_remove`` μ is
taken as 1 (the pair with μ < 1 is a garbling of it: ``±`` sent to 0 unit by unit).

The pair is built on windows of C and of A (each tail ``<= e^{log_tail}``, a rigorous
Chernoff/Bernstein bound); the mass outside the windows is put on an outcome of infinite
privacy loss (pessimistic). For γ = 1 and many clone counts, counts are merged in blocks that
take the block's smallest count (the pair with c clones dominates the pair with c + 1: adding
a clone is a post-processing), as :mod:`crowdhide.accounting.shuffle._pairs` does.
These outcomes are built in :mod:`crowdhide.accounting.shuffle._clone_counts`.

Reference values (DPBayes/numerical-shuffler-experiments, Koskela et al.; dp_accounting on the
FMT23 pair): n = 1e4, ε0 = 4: δ(0.1) = 0.009209, 0.02177, 0.03288, 0.04279 for 1–4 rounds and
ε(1e-6) = 0.4109, 0.5910, 0.7327, 0.8541; n = 1e5, γ = 0.01, ε0 = 3, δ = 1e-5: ε = 0.005113 …
5.114 (substitute) and 0.005011 … 5.021 (add/remove) for 10 … 10^4 rounds — those grow
exactly like ``rounds × 5.12e-4`` (one grid step per round, a discretisation artifact) and are
3x below even a lower bound of the pair's composition at 10 rounds; here: 0.01551 … 0.6793
(substitute), 0.01150 … 0.4963 (add/remove), default grids.

Examples
--------
>>> r = composed_shuffle_delta(eps0=4.0, n=10_000, epsilon=0.1, rounds=2, k=2)
>>> round(r.delta, 4), r.source, r.is_certificate
(0.0218, 'feldman2023', True)
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, NotRequired, TypedDict, Unpack, cast

import numpy as np
import numpy.typing as npt

from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.composition import LEAST_COMPOSITION_ERROR, PldCurve, to_pld
from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
from crowdhide.accounting.logmath import product_up
from crowdhide.accounting.registry import Registry, best_of
from crowdhide.accounting.shuffle._clone_counts import (
    MAX_PAIR_POINTS,
    _beta,
    _counts_pair,
    _mixture_pair,
    _with_errors,
    _with_rest,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement
from crowdhide.errors import InvalidParameterError, ResourceLimitError

__all__ = [
    "CLONE_PAIRS",
    "CLONE_PAIR_REGISTRY",
    "MAX_PAIR_POINTS",
    "PROFILE_PAIR",
    "RELATIONS",
    "ClonePairBound",
    "ComposedShuffleCurve",
    "ComposedShuffleOptions",
    "ComposedShuffleParams",
    "clone_pair_distributions",
    "composed_shuffle",
    "composed_shuffle_delta",
    "composed_shuffle_epsilon",
    "shuffle_pld",
]

FloatArray = npt.NDArray[np.float64]

#: Neighbouring relations.
RELATIONS: tuple[str, ...] = ("substitute", "add_remove")
_MAX_ROUNDS = 10**6
_MAX_N = 10**9
_MAX_EPS0 = 50.0


def clone_pair_distributions(
    *,
    eps0: float,
    n: int,
    pair: str = "feldman2023",
    sample_rate: float = 1.0,
    relation: str = "substitute",
    log_tail: float = -50.0,
) -> tuple[FloatArray, FloatArray]:
    """Log-probabilities ``(log_p, log_q)`` of the (subsampled) clone pair on a common support.

    The last two outcomes carry the mass outside the windows (an outcome only P can produce
    and one only Q can produce: infinite privacy loss, pessimistic; absent when the windows
    leave no mass out). See the module docstring
    for the pair; with subsampling the number ``s`` of sampled residual users is part of the
    outcome, and ``s`` values are merged in blocks that keep the block's *largest* s (fewer
    candidate clones: the pair with more candidates is a post-processing of it).

    Examples
    --------
    >>> lp, lq = clone_pair_distributions(eps0=1.0, n=50)
    >>> bool(abs(np.exp(lp).sum() - 1) < 1e-9 and abs(np.exp(lq).sum() - 1) < 1e-9)
    True
    """
    log_p, log_q, _, _ = _clone_pair(
        eps0=eps0, n=n, pair=pair, sample_rate=sample_rate, relation=relation, log_tail=log_tail
    )
    return log_p, log_q


def _clone_pair(
    *,
    eps0: float,
    n: int,
    pair: str,
    sample_rate: float,
    relation: str,
    log_tail: float,
    rate: float | None = None,
    informative: float = 1.0,
) -> tuple[FloatArray, FloatArray, float, FloatArray]:
    """:func:`clone_pair_distributions`, a bound on the absolute rounding error of every
    log-probability and one on every outcome's loss (twice that, 0 where the loss is exact):
    :func:`~crowdhide.accounting.composition.to_pld`'s ``log_error`` and ``loss_error``.

    ``rate`` (a mechanism's clone probability ρ, replacing the pair's β) and ``informative``
    (its μ): see the module docstring, "A mechanism's own pair"."""
    e0 = check_real("eps0", eps0, low=0.0, low_open=True, high=_MAX_EPS0)
    nn = check_int("n", n, low=1, high=_MAX_N)
    gamma = check_probability("sample_rate", sample_rate, allow_zero=False)
    if rate is None and pair not in CLONE_PAIRS:
        raise InvalidParameterError(
            f"pair must be one of {', '.join(CLONE_PAIRS)}; got {pair!r}",
            parameter="pair",
            value=pair,
        )
    if relation not in RELATIONS:
        raise InvalidParameterError(
            f"relation must be one of {', '.join(RELATIONS)}; got {relation!r}",
            parameter="relation",
            value=relation,
        )
    beta = _beta(pair, e0) if rate is None else rate
    alpha = 1.0 / (1.0 + math.exp(-e0))
    too_large = _too_large(n, sample_rate)
    if informative < 1.0 and relation == "substitute":
        # A mechanism with μ < 1 (module docstring): the clone count C ~ Bin(n − 1, ρ) is
        # revealed, each clone is informative with probability γμ, the target with γμ.
        mu = gamma * informative
        return _mixture_pair(nn - 1, 1.0 - beta, mu, mu, alpha, (relation, log_tail, too_large))
    try:
        if gamma >= 1.0 and relation == "substitute":
            log_p, log_q, bound, error, exact = _counts_pair(
                nn - 1, beta, 1.0, relation, alpha, log_tail
            )
            return _with_errors(*_with_rest(log_p, log_q, bound, exact), error)
        # Residual (non-clone) sampled users are revealed: s ~ Bin(n − 1, γ(1 − β)); each of
        # the n − 1 − s others is a clone with probability γβ / (1 − γ(1 − β)).
        res_rate = gamma * (1.0 - beta)
        clone_rate = min(1.0, gamma * beta / (1.0 - res_rate)) if res_rate < 1.0 else 0.0
    except ValueError as exc:
        raise ResourceLimitError(too_large, parameter="n", value=n) from exc
    setting = (relation, log_tail, too_large)
    return _mixture_pair(nn - 1, res_rate, clone_rate, gamma, alpha, setting)


def _too_large(n: int, sample_rate: float) -> str:
    """The message of a pair too large to build (every error its windows raise)."""
    return (
        f"n and sample_rate give a reduced pair too large for composition (n={n!r}, "
        f"sample_rate={sample_rate!r}; at most {MAX_PAIR_POINTS} outcomes): use a smaller n "
        "or sample_rate, or one round without sampling"
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class ComposedShuffleParams:
    """``rounds`` composed shuffles of n ε0-LDP reports, each with Poisson sampling of users.

    ``discretization`` is the PLD's loss grid; ``log_tail`` the log of the mass the summation
    windows may leave out (added to δ, so smaller is tighter and slower).

    Examples
    --------
    >>> ComposedShuffleParams(eps0=4.0, n=10_000, k=2).relation
    'substitute'
    """

    eps0: float
    n: int
    k: int | None = None
    rounds: int = 1
    sample_rate: float = 1.0
    relation: str = "substitute"
    discretization: float = 1e-4
    log_tail: float = -50.0
    #: A mechanism's clone probability ρ and informative share μ (None, 1: the pair's own).
    clone_rate: float | None = None
    informative: float = 1.0

    def __post_init__(self) -> None:
        e0 = check_real("eps0", self.eps0, low=0.0, low_open=True, high=_MAX_EPS0)
        object.__setattr__(self, "eps0", e0)
        object.__setattr__(self, "n", check_int("n", self.n, low=1, high=_MAX_N))
        if self.k is not None:
            object.__setattr__(self, "k", check_int("k", self.k, low=2))
        rounds = check_int("rounds", self.rounds, low=1, high=_MAX_ROUNDS)
        object.__setattr__(self, "rounds", rounds)
        rate = check_probability("sample_rate", self.sample_rate, allow_zero=False)
        object.__setattr__(self, "sample_rate", rate)
        if self.relation not in RELATIONS:
            raise InvalidParameterError(
                f"relation must be one of {', '.join(RELATIONS)}; got {self.relation!r}",
                parameter="relation",
                value=self.relation,
            )
        interval = check_real(
            "value_discretization_interval", self.discretization, low=0.0, low_open=True
        )
        object.__setattr__(self, "discretization", interval)
        if self.clone_rate is not None:
            rho = check_probability("clone_rate", self.clone_rate, allow_zero=False)
            object.__setattr__(self, "clone_rate", rho)
        mu = check_probability("informative", self.informative, allow_zero=False)
        object.__setattr__(self, "informative", mu)


class ComposedShuffleCurve(PrivacyCurve):
    """The PLD curve of the composed clone pair, capped by basic composition.

    For the substitute relation each round is ε0-DP (a changed value), so ``rounds · ε0``
    caps ε and δ(ε) = 0 from there on.
    """

    def __init__(self, pld: PldCurve | None, cap: float, notes: tuple[str, ...] = ()) -> None:
        # pld None: δ = 1 everywhere below the cap (a pair without finite losses)
        self.pld, self._cap, self._notes = pld, cap, notes

    @property
    def notes(self) -> tuple[str, ...]:
        # the PLD's own note: the composition's error allowance, below which δ falls back
        # to the cap
        return self._notes + (() if self.pld is None else self.pld.notes)

    def log_delta(self, epsilon: float) -> float:
        if epsilon >= self._cap:
            return -math.inf
        return 0.0 if self.pld is None else self.pld.log_delta(epsilon)

    def delta(self, epsilon: float) -> float:
        eps = check_real("epsilon", epsilon, low=0.0)
        if eps >= self._cap:
            return 0.0
        return 1.0 if self.pld is None else min(self.pld.delta(eps), 1.0)

    def epsilon(self, delta: float) -> float:
        if self.pld is None:
            check_probability("delta", delta, allow_zero=False, allow_one=False)
            return self._cap
        return min(self.pld.epsilon(delta), self._cap)


#: Below this mass of outcomes with a finite privacy loss the composed pair is reported as
#: δ = 1 (dp_accounting needs finite losses above its tail truncation, 1e-15).
_MIN_FINITE_MASS = 1e-9


def _finite_mass(log_p: FloatArray, log_q: FloatArray) -> float:
    """The smaller of P's mass where Q > 0 and Q's mass where P > 0."""
    both = (log_p > -np.inf) & (log_q > -np.inf)
    return float(min(np.exp(log_p[both]).sum(), np.exp(log_q[both]).sum()))


@dataclass(frozen=True, slots=True)
class ClonePairBound:
    """The composition of one clone pair (a :class:`~crowdhide.accounting.registry.Bound`
    over :class:`ComposedShuffleParams`)."""

    name: str
    citation: str
    certificate_without_k: bool
    kind: Kind = "upper"
    #: The δ asked (a δ query), or None: where it is at or below
    #: :data:`~crowdhide.accounting.composition.LEAST_COMPOSITION_ERROR` and rounds > 1, the
    #: composed PLD would answer ``inf`` (its allowance is at least that), so ε is the cap
    #: R·ε0 and the composition is skipped (the pair is still built: same errors raised).
    query_delta: float | None = None

    def applies(self, params: ComposedShuffleParams) -> str | None:
        if not self.certificate_without_k and params.k is None:
            return f"{self.name} is not a certificate for every eps0-LDP randomizer (give k)"
        if params.relation == "add_remove" and params.sample_rate >= 1.0:
            return (
                "add_remove without subsampling: the shuffled output shows the number of "
                "reports, so delta = 1 at every epsilon (use sample_rate < 1 or substitute)"
            )
        return None

    def curve(self, params: ComposedShuffleParams) -> ComposedShuffleCurve:
        if _capped_by_tails(self.name, self.query_delta, params):
            cap = product_up(params.rounds, params.eps0)  # substitute (checked there)
            return ComposedShuffleCurve(None, cap, (_TAILS_NOTE,))
        log_p, log_q, error, loss_error = _clone_pair(
            eps0=params.eps0,
            n=params.n,
            pair=self.name,
            sample_rate=params.sample_rate,
            relation=params.relation,
            log_tail=params.log_tail,
            rate=params.clone_rate,
            informative=params.informative,
        )
        # R·ε0 rounds to nearest; the cap says δ = 0 from there on, so it must not be low
        cap = (
            product_up(params.rounds, params.eps0) if params.relation == "substitute" else math.inf
        )
        if _finite_mass(log_p, log_q) < _MIN_FINITE_MASS:
            # (almost) every outcome tells the datasets apart; dp_accounting cannot hold a
            # PLD without finite losses, and δ <= 1 is the (trivial, valid) answer
            return ComposedShuffleCurve(None, cap)
        if _uncertifiable(self.query_delta, params.rounds):
            return ComposedShuffleCurve(None, cap, (_SKIPPED_NOTE,))
        interval, notes = _composable_interval(log_p, log_q, params)
        pld = to_pld(
            DiscretePairCurve(log_p, log_q),
            value_discretization_interval=interval,
            log_error=error,
            loss_error=loss_error,
        )
        if params.rounds > 1:
            pld = pld.self_compose(params.rounds)
        return ComposedShuffleCurve(pld, cap, notes)


_SKIPPED_NOTE = (
    f"not composed: no composed PLD certifies a delta <= {LEAST_COMPOSITION_ERROR:.3g} (its "
    "FFT error allowance is at least that), so epsilon is the cap rounds * eps0"
)


_TAILS_NOTE = (
    "not composed: the mass its windows leave out (an outcome of infinite privacy loss) is "
    "above the delta asked, so epsilon is the cap eps0"
)


def _capped_by_tails(name: str, delta: float | None, params: ComposedShuffleParams) -> bool:
    """Whether one round of the (unsampled, substitute) pair answers ``delta`` with its cap
    ε0 whatever the rest of it: its PLD (:func:`~crowdhide.accounting.composition.to_pld`)
    puts the windows' left-out mass ``e^{log_bound}`` on +inf in both directions, where
    ``log_bound = logaddexp(clone window's log_tail, rows' tails) >= the clone window's
    log_tail``; dp_accounting's ε search returns ``inf`` when the +inf mass exceeds its
    target (<= δ), so ε = min(inf, cap) = cap, the float the full build reports. The clone
    window (:func:`~._clone_counts.clone_window`) is the pair's first step and raises what it
    raises; 1 nat of room covers the floats (e^{-1} ≪ 1 − any rounding). One round only:
    more rounds ask ``log_tail <= log δ − 30`` below e^{-90} and a composed allowance (the
    rule would never fire); a mechanism's own pair is never asked with a δ here."""
    from crowdhide.accounting.shuffle._clone_counts import clone_window

    plain = params.sample_rate >= 1.0 and params.relation == "substitute"
    if delta is None or params.rounds != 1 or not plain or params.informative < 1.0:
        return False
    beta = _beta(name, params.eps0) if params.clone_rate is None else params.clone_rate
    try:
        win = clone_window(params.n - 1, beta, params.log_tail)[0]
    except ValueError as exc:  # as _clone_pair converts it (the same message)
        too_large = _too_large(params.n, params.sample_rate)
        raise ResourceLimitError(too_large, parameter="n", value=params.n) from exc
    return win.log_tail > math.log(delta) + 1.0


def _uncertifiable(delta: float | None, rounds: int) -> bool:
    """Whether the composed pair's ε at ``delta`` is ``inf`` whatever the pair: several rounds
    (a composition: allowance >= :data:`~crowdhide.accounting.composition.LEAST_COMPOSITION_ERROR`,
    proof there) and ``delta`` at or below it. One round has no allowance: FMT21 may answer."""
    return delta is not None and rounds > 1 and delta <= LEAST_COMPOSITION_ERROR


#: Most grid points of a composed PLD's loss support: dp_accounting composes by FFT, then
#: walks the support in Python for every ε query (about 2 s per 10^7 points here).
MAX_COMPOSED_POINTS = 10**7


def _composable_interval(
    log_p: FloatArray, log_q: FloatArray, params: ComposedShuffleParams
) -> tuple[float, tuple[str, ...]]:
    """The loss grid's interval: the one asked for, widened where the composed loss support
    would exceed :data:`MAX_COMPOSED_POINTS` grid points (a coarser grid still rounds
    pessimistically: a valid, looser bound), with a note saying so.

    The support of ``rounds`` composed losses is about ``rounds |μ| + 12 √rounds σ`` (μ, σ:
    mean and spread of one round's finite loss under P; tails beyond are truncated) plus one
    round's range.
    """
    both = (log_p > -np.inf) & (log_q > -np.inf)
    if not both.any():
        return params.discretization, ()
    loss, weight = log_p[both] - log_q[both], np.exp(log_p[both])
    weight = weight / weight.sum()
    mean = float(weight @ loss)
    spread = math.sqrt(max(float(weight @ (loss - mean) ** 2), 0.0))
    rounds = params.rounds
    support = rounds * abs(mean) + 12.0 * math.sqrt(rounds) * spread
    support += 2.0 * float(np.abs(loss).max())
    wanted = params.discretization
    interval = max(wanted, support / MAX_COMPOSED_POINTS)
    if interval <= wanted:
        return wanted, ()
    return interval, (
        f"loss grid widened from {wanted:g} to {interval:.3g} to keep the composition of "
        f"{rounds} rounds within {MAX_COMPOSED_POINTS:.0e} grid points (a valid, looser bound)",
    )


#: The clone pairs that can be composed, as bounds over :class:`ComposedShuffleParams`.
CLONE_PAIR_REGISTRY: Registry[ComposedShuffleParams] = Registry(
    [
        ClonePairBound("feldman2021", "Feldman, McMillan, Talwar, FOCS 2021", True),
        ClonePairBound("feldman2023", "Feldman, McMillan, Talwar, SODA 2023", False),
    ],
    what="pair",
)
#: Clone pairs that can be composed (see :mod:`crowdhide.accounting.shuffle.generic`).
CLONE_PAIRS: tuple[str, ...] = CLONE_PAIR_REGISTRY.names
#: The pair built from the single-round certificate's profile
#: (:mod:`crowdhide.accounting.shuffle.profile_pair`; any ε0-LDP randomizer, no sampling,
#: substitute). ``pair="best"`` reports the smaller of it and FMT21 where it applies.
PROFILE_PAIR = "profile_pair"
#: Above this many rounds ``pair="best"`` composes the FMT21 pair only when the profile pair
#: is capped at R·ε0 or does not apply: the profile pair was the smaller in every measured
#: setting below its cap (docs/proofs/profile-pair.md), and FMT21's FFT composition of
#: 10^4 rounds takes up to ~40 s against ~1 s.
FMT21_ROUNDS_MAX = 99


def _pair_name(pair: Any, k: int | None) -> str:
    """``"best"`` is FMT23 with ``k`` (k-RR) and FMT21 without."""
    name = ("feldman2023" if k is not None else "feldman2021") if pair == "best" else pair
    if name not in CLONE_PAIRS:
        raise InvalidParameterError(
            f"pair must be 'best' or one of {', '.join(CLONE_PAIRS)}; got {pair!r}",
            parameter="pair",
            value=pair,
        )
    return str(name)


def shuffle_pld(
    *,
    eps0: float,
    n: int,
    k: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
    pair: str = "best",
    value_discretization_interval: float = 1e-4,
    log_tail: float = -50.0,
) -> PldCurve:
    """Pessimistic PLD of ``rounds`` composed (subsampled) shuffles (``dp_accounting``).

    ``pair="best"`` is FMT23 with ``k`` (k-RR) and FMT21 without. The PLD's δ(ε) is an upper
    bound on the composition of the clone pair, hence on the shuffled rounds.

    Examples
    --------
    >>> pld = shuffle_pld(eps0=4.0, n=10_000, k=2)
    >>> round(pld.delta(0.1), 4)   # exact divergence of the pair: 0.0092092
    0.0092
    """
    params = ComposedShuffleParams(
        eps0=eps0,
        n=n,
        k=k,
        rounds=rounds,
        sample_rate=sample_rate,
        relation=relation,
        discretization=value_discretization_interval,
        log_tail=log_tail,
    )
    bound = cast(ClonePairBound, CLONE_PAIR_REGISTRY[_pair_name(pair, params.k)])
    reason = bound.applies(params)
    if reason is not None:
        raise InvalidParameterError(reason, parameter="pair", value=pair)
    pld = bound.curve(params).pld
    if pld is None:
        raise InvalidParameterError(
            f"the pair has almost no outcomes with a finite privacy loss (eps0={eps0!r}, "
            f"n={n!r}, sample_rate={sample_rate!r}): delta = 1, no PLD to return",
            parameter="eps0",
            value=eps0,
        )
    return pld


def _interval_for(rounds: int, value: float | None) -> float:
    """The loss grid: given, or ``1e-2/rounds`` clipped to [2e-6, 1e-4]."""
    if value is None:
        return min(1e-4, max(2e-6, 1e-2 / rounds))
    return check_real("value_discretization_interval", value, low=0.0, low_open=True)


def _log_tail_for(delta: float) -> float:
    """Windows' tail: far below δ (the outside mass is added to δ), not beyond e^-120 (composed
    tails are truncated near 1e-15 anyway: far smaller δ fall back to the basic-composition cap)."""
    return max(-120.0, min(-50.0, math.log(delta) - 30.0))


class ComposedShuffleOptions(TypedDict):
    """Keyword arguments of :func:`composed_shuffle` besides the query (``delta``/``epsilon``)."""

    eps0: float
    n: int
    rounds: NotRequired[int]
    sample_rate: NotRequired[float]
    k: NotRequired[int | None]
    relation: NotRequired[str]
    pair: NotRequired[str]
    value_discretization_interval: NotRequired[float | None]
    #: A mechanism's own pair instead of ``pair``: ``(source, clone rate ρ, informative μ)``.
    mechanism_pair: NotRequired[tuple[str, float, float] | None]


def composed_shuffle(
    *,
    delta: float | None = None,
    epsilon: float | None = None,
    **options: Unpack[ComposedShuffleOptions],
) -> PrivacyStatement:
    """ε at ``delta`` or δ at ``epsilon`` (exactly one) of ``rounds`` composed shuffles of n
    ε0-LDP reports, each round with Poisson sampling of users at ``sample_rate``.

    Parameters
    ----------
    delta, epsilon
        The query: target δ (``0 < delta < 1``) or ε (``>= 0``).
    eps0, n
        Local ε0 (``0 < eps0 <= 50``), users.
    rounds
        Number of adaptively composed shuffles, ``1 <= rounds <= 1e6`` (default 1).
    sample_rate
        Probability that a user takes part in a round, ``0 < sample_rate <= 1`` (default 1).
    k
        k-RR domain size (enables the FMT23 pair); ``None``: any ε0-LDP randomizer (FMT21).
    relation
        ``"substitute"`` (default) or ``"add_remove"``.
    pair
        ``"best"`` (default), ``"feldman2021"``, ``"feldman2023"`` or ``"profile_pair"``.
        ``"best"`` without ``k`` (no sampling, substitute) is the smaller of FMT21 and the
        profile pair (the last note gives both); ``"profile_pair"`` alone skips FMT21's
        composition, which dominates the time at many rounds (44 s against 0.3 s at
        10^4 rounds, ε0 = 1, n = 1e4).
    value_discretization_interval
        The FMT21/FMT23 pairs' loss grid (smaller: tighter, slower; the profile pair's is its
        own, its answer says so). Default ``1e-2/rounds`` clipped to ``[2e-6, 1e-4]``: a round
        costs up to a step (a fixed 1e-4 is 60 % looser at 1e4 rounds, n = 1e5, γ = 0.01, ε0 = 3).

    Returns
    -------
    PrivacyStatement
        ``source`` is the pair; ``inputs`` holds every parameter, the grid as
        ``discretization``. A pair that does not dominate the randomizer (FMT23 without
        ``k``) gives ``conditions_met=False`` and the reason in ``notes``.
    """
    if (delta is None) == (epsilon is None):
        raise InvalidParameterError(
            f"give exactly one of delta and epsilon, got {delta!r}, {epsilon!r}",
            parameter="delta, epsilon",
            value=(delta, epsilon),
        )
    from crowdhide.accounting.shuffle._settle import settled_delta_query

    with settled_delta_query() if epsilon is not None else contextlib.nullcontext():
        result = _composed_shuffle(delta, epsilon, options)  # δ at an ε answer <= its δ (§17)
    grid = options.get("value_discretization_interval")
    if grid is None or result.source != PROFILE_PAIR:
        return result
    from crowdhide.accounting.shuffle.profile_pair import echo_unused_grid  # ~90 ms to import

    return echo_unused_grid(result, grid)


def _composed_shuffle(
    delta: float | None, epsilon: float | None, options: ComposedShuffleOptions
) -> PrivacyStatement:
    """:func:`composed_shuffle` once its query is known to be one of the two."""
    if delta is not None:
        query = {"delta": check_probability("delta", delta, allow_zero=False, allow_one=False)}
        log_tail = _log_tail_for(query["delta"])
    else:
        query, log_tail = {"epsilon": check_real("epsilon", epsilon, low=0.0)}, -50.0
    count = check_int("rounds", options.get("rounds", 1), low=1, high=_MAX_ROUNDS)
    params = ComposedShuffleParams(
        eps0=options["eps0"],
        n=options["n"],
        k=options.get("k"),
        rounds=count,
        sample_rate=options.get("sample_rate", 1.0),
        relation=options.get("relation", "substitute"),
        discretization=_interval_for(count, options.get("value_discretization_interval")),
        log_tail=log_tail,
    )
    own = options.get("mechanism_pair")
    single_setting = params.sample_rate >= 1.0 and params.relation == "substitute"
    if own is not None:
        source, rho, mu = own
        bound = ClonePairBound(source, "the mechanism's clone pair (module docstring)", True)
        mine = replace(params, clone_rate=rho, informative=mu)
        registry = Registry([bound], what="pair")
        if not single_setting:
            return registry.statement(source, mine, **query)
        return _with_rounds_apart(lambda: registry.statement(source, mine, **query), params, query)
    if options.get("pair") == PROFILE_PAIR:  # that pair alone (fast: no FMT21 composition)
        from crowdhide.accounting.shuffle import profile_pair as profile

        return profile.PROFILE_PAIR_REGISTRY.statement(PROFILE_PAIR, params, **query)
    name = _pair_name(options.get("pair", "best"), params.k)
    if options.get("pair", "best") != "best" or not single_setting:
        return CLONE_PAIR_REGISTRY.statement(name, params, **query)
    if params.k is None:
        from crowdhide.accounting.shuffle._profile_floor import rounds_apart_first

        first = rounds_apart_first(params, query)  # the profile pair certainly loses
        if first is not None:
            return first
        return _with_rounds_apart(lambda: _best_of_pairs(name, params, query), params, query)
    return _with_rounds_apart(
        lambda: CLONE_PAIR_REGISTRY.statement(name, params, **query), params, query
    )


def _with_rounds_apart(
    compose: Callable[[], PrivacyStatement],
    params: ComposedShuffleParams,
    query: dict[str, float],
) -> PrivacyStatement:
    """``best`` (n users every round, substitute): the composed pair's answer (``compose``)
    and the rounds certified one at a time, basic composition of the FMT21 single-round
    certificate (:mod:`._rounds_apart`), the smaller. The latter wins where the composed
    pair's allowance or profile floor leaves it near ε0 or the cap (δ = 1e-300 and 10
    rounds: the cap R·ε0 in every cell of issue 32's table), and answers alone where the
    pair is too large to compose (k-RR's and a mechanism's at n = 1e6: ResourceLimitError)."""
    from crowdhide.accounting.shuffle._rounds_apart import rounds_apart

    try:
        result = compose()
    except ResourceLimitError as exc:
        apart = rounds_apart(params.eps0, params.n, params.rounds, query, None)
        if apart is None:
            raise
        return apart.with_notes(f"the composed pair is not made: {exc}")
    apart = rounds_apart(params.eps0, params.n, params.rounds, query, result)
    if apart is None:
        return result
    return best_of([result, apart], by="delta" if "epsilon" in query else "epsilon")


def _best_of_pairs(
    name: str, params: ComposedShuffleParams, query: dict[str, float]
) -> PrivacyStatement:
    """``pair="best"`` for any ε0-LDP randomizer, no sampling, substitute: the smaller of
    FMT21 (``name``) and the profile pair of the single-round certificate
    (profile_pair.py), both certificates; the smaller is reported and named."""
    # From FMT21_ROUNDS_MAX rounds on, FMT21's composition (up
    # to ~40 s at 10^4 rounds) runs only if the profile pair is capped or unavailable.
    from crowdhide.accounting.shuffle import profile_pair as profile

    other = profile.PROFILE_PAIR_REGISTRY.statement(PROFILE_PAIR, params, **query)
    if params.rounds > FMT21_ROUNDS_MAX and not profile.capped(other, params):
        return other.with_notes(
            f"{name} not composed: above {FMT21_ROUNDS_MAX} rounds it is composed only "
            f"when the profile pair is capped or does not apply (pair='{name}' asks for it)"
        )
    if other.conditions_met and _uncertifiable(query.get("delta"), params.rounds):
        # FMT21's ε would be its cap R·ε0 (ClonePairBound.curve, query_delta), the
        # profile pair's cap too, so it is never below the pair's: not even built
        return other.with_notes(
            f"{name} not composed: at delta <= {LEAST_COMPOSITION_ERROR:.3g} its epsilon "
            "is the cap rounds * eps0 (no composed PLD certifies less), never below the "
            "profile pair's"
        )
    if "delta" in query and _fmt21_loses(other, params, query["delta"]):
        return other.with_notes(
            f"{name} not composed: a proven lower bound on its delta at {PROFILE_PAIR}'s "
            f"epsilon {other.epsilon:.6g} is above the delta asked, so its epsilon is larger "
            "(_fmt21_floor.py)"
        )
    fmt = cast(ClonePairBound, CLONE_PAIR_REGISTRY[name])
    if "delta" in query:  # below the FFT allowance's floor: cap, no composition
        fmt = replace(fmt, query_delta=query["delta"])
    try:
        result = Registry([fmt], what="pair").statement(name, params, **query)
    except ResourceLimitError as exc:  # n = 1e9: FMT21's pair is too large to compose
        if not other.conditions_met:
            raise
        return other.with_notes(f"{name} not composed: {exc}")
    return profile.smaller(result, other, key="epsilon" if "delta" in query else "delta")


def _fmt21_loses(other: PrivacyStatement, params: ComposedShuffleParams, delta: float) -> bool:
    """Whether FMT21's ε at ``delta`` is certainly above the profile pair's (``other``), so
    ``profile.smaller`` would report ``other``: the exact composed FMT21 pair's δ at that ε
    is above ``delta`` (a proven lower bound, :mod:`._fmt21_floor`), so its exact ε, and the
    reported one (a pessimistic PLD's, or the cap R·ε0 above it), is larger. Only below the
    cap: there FMT21 could tie, and a tie names FMT21."""
    from crowdhide.accounting.shuffle import profile_pair as profile
    from crowdhide.accounting.shuffle._fmt21_floor import (
        COARSE,
        FINE,
        fmt21_delta_lower,
        worth_trying,
    )

    eps = other.epsilon
    if profile.capped(other, params) or eps is None or not 0.0 < eps < math.inf:
        return False
    e0, n, rounds = params.eps0, params.n, params.rounds
    if not worth_trying(eps0=e0, n=n, rounds=rounds, delta=delta, log_tail=params.log_tail):
        return False
    # the coarse layout first (3-6x cheaper, and enough nearly everywhere); each is a proven
    # lower bound, so either proving the skip gives the same answer (profile-pair.md §15)
    return any(
        fmt21_delta_lower(eps0=e0, n=n, rounds=rounds, epsilon=eps, delta=delta, res=res) > delta
        for res in (COARSE, FINE)
    )


def composed_shuffle_epsilon(
    *, delta: float, **options: Unpack[ComposedShuffleOptions]
) -> PrivacyStatement:
    """ε at ``delta`` of composed shuffles: :func:`composed_shuffle` with ``delta``.

    Examples
    --------
    >>> r = composed_shuffle_epsilon(eps0=4.0, n=10_000, delta=1e-6, rounds=2, k=2)
    >>> round(r.epsilon, 3), r.source
    (0.591, 'feldman2023')
    """
    return composed_shuffle(delta=delta, **options)


def composed_shuffle_delta(
    *, epsilon: float, **options: Unpack[ComposedShuffleOptions]
) -> PrivacyStatement:
    """δ at ``epsilon`` of composed shuffles: :func:`composed_shuffle` with ``epsilon``.

    Examples
    --------
    >>> r = composed_shuffle_delta(eps0=3.0, n=100_000, epsilon=0.1, rounds=10,
    ...                            sample_rate=0.01, k=2)
    >>> r.delta < 1e-10  # about 3.4e-11: the FFT composition's rounding allowance (see notes)
    True
    """
    return composed_shuffle(epsilon=epsilon, **options)
