"""crowdhide's certificates in the accountants people already use.

* :func:`dp_accounting_pld` — the privacy-loss distribution (PLD) of shuffled rounds as a
  ``dp_accounting`` object, to compose with any other ``dp_accounting`` PLD (a Gaussian
  step, a subsampled mechanism) in that library's own accountant;
  :func:`to_dp_accounting` does the same for a crowdhide statement, pair curve or PLD curve.
* :func:`privacy_profile` — any crowdhide curve as an OpenDP-style privacy profile: a plain
  callable ε ↦ δ (safe side, validated), and :func:`opendp_profile` the same as an OpenDP
  ``PrivacyProfile`` object (extra ``opendp``).
* :func:`flower_shuffled_epsilon` — the question a federated-learning deployment with
  client-side DP asks: n clients each applying an ε0-LDP randomizer per round, a shuffler
  between them and the server, R rounds; what central (ε, δ) does each client get?

Every export is pessimistic: the PLD dominates the shuffled rounds, and δ(ε) is an upper
bound. One caveat carried over from upstream: ``dp_accounting``'s ``PLDAccountant``
ignores ``count`` for ``RandomizedResponseDpEvent`` (dp-accounting 0.6.0: ten compositions
of ε0 = 2 give ε = 2.0, not 20); compose randomized response by calling ``compose`` once per
step, or through crowdhide (:func:`~crowdhide.accounting.compose_curves`), which uses only
the PLD layer and is not affected.

Examples
--------
>>> pld = dp_accounting_pld(eps0=4.0, n=10_000, k=2)
>>> round(float(pld.get_delta_for_epsilon(0.1)), 4)
0.0092
>>> profile = privacy_profile(to_dp_accounting_curve(pld))
>>> round(profile(0.1), 4)
0.0092
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from crowdhide._extras import require
from crowdhide._validation import check_int, check_probability, check_real
from crowdhide.accounting.composition import PldCurve, to_pld
from crowdhide.accounting.curves import DiscretePairCurve, PrivacyCurve
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError

__all__ = [
    "SAMPLINGS",
    "dp_accounting_pld",
    "flower_shuffled_epsilon",
    "opendp_profile",
    "privacy_profile",
    "to_dp_accounting",
    "to_dp_accounting_curve",
]

#: How a federated round picks its clients (see :func:`flower_shuffled_epsilon`).
SAMPLINGS: tuple[str, ...] = ("fixed", "poisson")

_SHUFFLER_NOTE = (
    "valid only with a shuffler between the clients and the server (the server sees the "
    "multiset of the round's updates, not who sent which) and if each client's update is "
    "eps0-LDP on its data in each round (pure, delta0 = 0, e.g. Laplace noise on a clipped "
    "update)"
)


def dp_accounting_pld(
    *,
    eps0: float,
    n: int,
    k: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
    value_discretization_interval: float = 1e-4,
    pair: str = "clone",
) -> Any:
    """The ``dp_accounting`` PLD of ``rounds`` shuffles of n ε0-LDP reports.

    The PLD is that of the clone pair (Feldman, McMillan, Talwar: FMT23 with ``k``, FMT21
    without) rounded pessimistically, so it dominates the shuffled rounds and composes with
    any other ``dp_accounting`` PLD. crowdhide's ``best`` answer can be tighter: for one
    round (:func:`crowdhide.shuffle_epsilon`) it also knows bounds that are not PLDs, and
    for composed rounds of a generic randomizer it also composes the profile pair of the
    single-round certificate (``docs/proofs/profile-pair.md``): ``pair="profile_pair"``
    exports that one (``k=None``, substitute, no sampling), composed ``rounds`` times; it
    was the smaller of the two in every measured setting where it is below its cap R·ε0
    (``composed_shuffle`` and ``shuffle_curve`` name the winner of a given query).

    Parameters
    ----------
    eps0 : float
        Local ε0 of each report, ``0 < eps0 <= 50``.
    n : int
        Users per shuffle (with ``sample_rate`` < 1: the population each round samples).
    k : int or None
        k-ary randomized response (the FMT23 pair); ``None``: any ε0-LDP randomizer.
    rounds : int
        Shuffles composed (default 1).
    sample_rate : float
        Poisson sampling rate of users per round (default 1: everyone).
    relation : str
        ``"substitute"`` (default) or ``"add_remove"``.
    value_discretization_interval : float
        The PLD's loss grid (default 1e-4; the profile pair has its own lattice).
    pair : str
        ``"clone"`` (default) or ``"profile_pair"``.

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Compose it with ``.compose(other)``; read it with ``get_epsilon_for_delta``.

    Raises
    ------
    InvalidParameterError
        An unknown ``pair``, or ``"profile_pair"`` where it does not apply.

    See Also
    --------
    to_dp_accounting : the same for a statement or curve crowdhide already computed.

    Examples
    --------
    >>> from dp_accounting.pld import privacy_loss_distribution as pld_lib
    >>> shuffled = dp_accounting_pld(eps0=2.0, n=10_000, k=4)
    >>> gaussian = pld_lib.from_gaussian_mechanism(5.0, value_discretization_interval=1e-4)
    >>> round(float(shuffled.compose(gaussian).get_epsilon_for_delta(1e-6)), 3)
    0.845
    """
    from crowdhide.accounting.shuffle.composition import shuffle_pld

    if pair not in ("clone", "profile_pair"):
        raise InvalidParameterError(
            f"pair must be 'clone' or 'profile_pair'; got {pair!r}", parameter="pair", value=pair
        )
    if pair == "profile_pair":
        from crowdhide.accounting.shuffle.profile_pair import composed_profile_pld

        return composed_profile_pld(
            eps0=eps0, n=n, k=k, rounds=rounds, sample_rate=sample_rate, relation=relation
        ).to_dp_accounting()
    return shuffle_pld(
        eps0=eps0,
        n=n,
        k=k,
        rounds=rounds,
        sample_rate=sample_rate,
        relation=relation,
        value_discretization_interval=value_discretization_interval,
    ).to_dp_accounting()  # composed rounds: their rounding allowance at +inf


def to_dp_accounting(
    source: PrivacyStatement | DiscretePairCurve | PldCurve,
    *,
    value_discretization_interval: float = 1e-4,
) -> Any:
    """A crowdhide certificate or curve as a ``dp_accounting`` PLD.

    Parameters
    ----------
    source : PrivacyStatement, DiscretePairCurve or PldCurve
        A certificate (its worst-case (ε, δ) pair), an exact pair of output distributions
        (losses rounded up to the grid) or a PLD curve (its PLD, with a composed curve's
        rounding allowance added to the mass at +inf).
    value_discretization_interval : float
        The loss grid for a statement or a pair (default 1e-4).

    Returns
    -------
    dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        A PLD that dominates ``source``.

    Raises
    ------
    ValueError
        ``source`` is a statement that is not a certificate (a lower bound, an estimate,
        conditions not met).

    See Also
    --------
    crowdhide.accounting.to_pld : the same, kept as a crowdhide :class:`PldCurve`.

    Examples
    --------
    >>> from crowdhide import PrivacyStatement
    >>> pld = to_dp_accounting(PrivacyStatement(epsilon=1.0, delta=1e-6))
    >>> round(pld.get_epsilon_for_delta(1e-6), 6)
    1.0
    """
    curve = to_pld(source, value_discretization_interval=value_discretization_interval)
    return curve.to_dp_accounting()  # a composed curve's rounding allowance included


def to_dp_accounting_curve(pld: Any) -> PldCurve:
    """A ``dp_accounting`` PLD as a crowdhide curve (safe-side δ(ε) and ε(δ)).

    Parameters
    ----------
    pld : dp_accounting.pld.privacy_loss_distribution.PrivacyLossDistribution
        Any PLD, e.g. a composition built in ``dp_accounting``.

    Returns
    -------
    PldCurve
        Its δ(ε) carries crowdhide's allowance for the PLD's floating-point sum.

    See Also
    --------
    privacy_profile : the curve as a callable ε ↦ δ.

    Examples
    --------
    >>> from dp_accounting.pld import privacy_loss_distribution as pld_lib
    >>> curve = to_dp_accounting_curve(pld_lib.from_laplace_mechanism(1.0))
    >>> curve.delta(1.0) <= 1e-9
    True
    """
    return PldCurve(pld)


def privacy_profile(curve: PrivacyCurve) -> Callable[[float], float]:
    """``curve`` as a privacy profile: a function ε ↦ δ(ε), the form OpenDP and others take.

    Parameters
    ----------
    curve : PrivacyCurve
        Any crowdhide curve (a shuffle bound, a PLD, an exact pair).

    Returns
    -------
    Callable[[float], float]
        ``profile(epsilon)``: δ(ε) in [0, 1], an upper bound on the true curve whenever
        ``curve`` is one; a negative or NaN ε raises
        :class:`~crowdhide.errors.InvalidParameterError`.

    See Also
    --------
    opendp_profile : the same as an OpenDP ``PrivacyProfile``.

    Examples
    --------
    >>> from crowdhide.accounting.shuffle.generic import shuffle_bound_curve
    >>> profile = privacy_profile(shuffle_bound_curve(bound="feldman2023", eps0=4.0, n=10_000, k=2))
    >>> round(profile(0.1), 6)
    0.009209
    >>> profile(-1.0)
    Traceback (most recent call last):
    ...
    crowdhide.errors.InvalidParameterError: epsilon must be >= 0..., got -1.0
    """

    def profile(epsilon: float) -> float:
        eps = check_real("epsilon", epsilon, low=0.0)
        return min(max(float(curve.delta(eps)), 0.0), 1.0)

    return profile


def opendp_profile(curve: PrivacyCurve) -> Any:
    """``curve`` as an OpenDP ``PrivacyProfile`` (``.delta(epsilon)``, ``.epsilon(delta)``).

    Enables OpenDP's ``contrib`` and ``honest-but-curious`` features in this process:
    OpenDP asks for them because it cannot check a profile it did not compute. The
    profile is :func:`privacy_profile`'s callable, so it is as valid as ``curve``.

    Parameters
    ----------
    curve : PrivacyCurve
        Any crowdhide curve.

    Returns
    -------
    opendp.mod.PrivacyProfile
        Usable as the output of an OpenDP measurement's privacy map under
        ``smoothed_max_divergence``.

    Raises
    ------
    MissingExtraError
        OpenDP is not installed (``pip install 'crowdhide[opendp]'``).

    See Also
    --------
    privacy_profile : the plain callable, with no OpenDP dependency.
    """
    dp = require("opendp.prelude", purpose="an OpenDP privacy profile")
    dp.enable_features("contrib", "honest-but-curious")
    return dp.new_privacy_profile(privacy_profile(curve))


def _clients_per_round(clients: int, fraction: float, sampling: str) -> int:
    if sampling == "poisson":
        return clients
    per_round = math.floor(clients * fraction)
    if per_round < 1:
        raise InvalidParameterError(
            f"fraction must leave at least one client per round: floor({clients} * "
            f"{fraction!r}) = 0"
        )
    return per_round


def flower_shuffled_epsilon(
    *,
    clients: int,
    eps0: float,
    rounds: int,
    delta: float,
    fraction: float = 1.0,
    sampling: str = "fixed",
    k: int | None = None,
) -> PrivacyStatement:
    """What shuffling gives federated clients: the central ε of R rounds of ε0-LDP updates.

    Each round, some clients each send one update that is ε0-LDP on their data (for Flower:
    client-side DP such as ``LocalDpMod`` with δ = 0, i.e. Laplace noise on a clipped
    update), a shuffler mixes the round's updates, and the server sees them in random order.
    The answer is valid **only with that shuffler**: without it each client has local DP
    only, ε = ``rounds`` · ε0 (given in ``notes``).

    Parameters
    ----------
    clients : int
        Clients available (``num_available`` in Flower), ``clients >= 1``.
    eps0 : float
        Each client's local ε0 per round, ``0 < eps0 <= 50``.
    rounds : int
        Rounds of training, ``rounds >= 1``.
    delta : float
        Target δ, ``0 < delta < 1``.
    fraction : float
        Fraction of clients asked per round (``fraction_fit``), ``0 < fraction <= 1``.
    sampling : {"fixed", "poisson"}
        ``"fixed"`` (Flower's default: ``floor(clients · fraction)`` clients drawn each
        round): no amplification by sampling is claimed; each client is assumed to take
        part in every round, and each shuffle hides it among that many clients.
        ``"poisson"``: each client takes part independently with probability ``fraction``
        (a custom client manager), and the rounds are composed as Poisson-subsampled
        shuffles of ``clients``.
    k : int or None
        The update is k-ary randomized response (tighter bounds); ``None``: any ε0-LDP
        randomizer.

    Returns
    -------
    PrivacyStatement
        The central (ε, δ) per client over all rounds; ``inputs`` echo these parameters
        and the clients per shuffle; ``notes`` say what it assumes.

    Raises
    ------
    InvalidParameterError
        A parameter is out of range, or ``sampling`` is not one of :data:`SAMPLINGS`.

    See Also
    --------
    crowdhide.shuffle_epsilon : the accountant this calls.

    Examples
    --------
    >>> r = flower_shuffled_epsilon(clients=1_000, eps0=2.0, rounds=1, delta=1e-6)
    >>> r.epsilon < 2.0, r.inputs["clients_per_shuffle"]
    (True, 1000)
    """
    from crowdhide.accounting.shuffle.query import shuffle_epsilon

    n = check_int("clients", clients, low=1)
    count = check_int("rounds", rounds, low=1)
    rate = check_probability("fraction", fraction, allow_zero=False)
    if sampling not in SAMPLINGS:
        raise InvalidParameterError(f"sampling must be one of {SAMPLINGS}, got {sampling!r}")
    per_shuffle = _clients_per_round(n, rate, sampling)
    answer = shuffle_epsilon(
        eps0=eps0,
        n=per_shuffle,
        delta=delta,
        k=k,
        rounds=count,
        sample_rate=rate if sampling == "poisson" else 1.0,
    )
    inputs = {
        "clients": n,
        "eps0": eps0,
        "rounds": count,
        "delta": delta,
        "fraction": rate,
        "sampling": sampling,
        "k": k,
        "clients_per_shuffle": per_shuffle,
    }
    local_only = f"without the shuffler (local DP only): epsilon = rounds * eps0 = {count * eps0:g}"
    assumption = (
        "fixed sampling: every client assumed in every round (no amplification by sampling)"
        if sampling == "fixed"
        else "poisson sampling: each client takes part in a round with probability fraction"
    )
    return replace(answer, inputs=inputs).with_notes(_SHUFFLER_NOTE, assumption, local_only)
