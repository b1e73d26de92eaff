"""A dominating pair built from the single-round certificate's own privacy profile (issue 32).

One shuffled round of n ε0-LDP reports is certified by the variation-ratio / split-clone
certificate (:func:`crowdhide.accounting.shuffle.certificate.shuffle_curve`): an upper bound
``δ̄(ε)`` on ``sup H_{e^ε}(M(D) ‖ M(D'))`` over neighbouring (substitute) data sets. This
module turns that profile, read on a finite grid ``0 = ε_0 < ε_1 < … < ε_m`` (``ε_m >= ε0``,
where ``δ = 0``), into a finite symmetric pair (P, Q) that dominates every round, so the
``rounds``-fold product of the pair certifies ``rounds`` adaptively composed rounds. Proof
and measurements: docs/proofs/profile-pair.md.

**The pair.** In ``t = e^ε`` every profile is convex (a supremum of the affine maps
``t ↦ P(S) − t Q(S)``). The grid values, their mirror images ``(1/t, 1 − 1/t + δ/t)`` (the
profile at ``−ε`` of a symmetric relation) and ``(0, 1)`` are replaced by their lower convex
hull; on ``t >= 1`` the hull has vertices ``t_j = e^{ε_j}`` and slopes ``−S_j``. The pair has,
for each vertex, an outcome with ``Q = q_j = S_j − S_{j+1}`` and ``P = q_j t_j`` (loss
``ε_j``), its mirror (``P = q_j``, ``Q = q_j t_j``) and one outcome of loss 0 carrying the
rest of the mass. Its profile ``Σ_{ε_j > ε} q_j (t_j − e^ε)`` is the hull: at a grid point it
is at most ``δ̄`` (the hull lies below the points) and it is *checked* to be at least
``δ̄`` there (:func:`profile_pair`), i.e. no grid value was cut by the hull. Between grid
points it is linear in t, above the true (convex) profile's chord. So ``H_α(M(D)‖M(D')) <=
H_α(P‖Q)`` for every ``α >= 1``, and by symmetry for ``α < 1`` too: (P, Q) is a dominating
pair (Zhu, Dong, Wang 2022), and dominating pairs compose adaptively.

**Rounding.** Losses are integer multiples of :data:`PROFILE_STEP` (the grid is chosen on
them), so the PLD needs no loss rounding; the masses handed to ``dp_accounting`` are the
exact pair's rounded up (a PLD with larger masses has a larger δ, also after composition).

**The grid.** Where the grid points go and the certificate's values there
(:func:`certified_profile`) live in :mod:`crowdhide.accounting.shuffle._profile_grid`.
"""

from __future__ import annotations

import functools
import itertools
import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.logmath import MACHINE_EPSILON, product_up
from crowdhide.accounting.pld_pmf import LossDistribution, create_pmf
from crowdhide.accounting.registry import Registry
from crowdhide.accounting.roots import safe_root
from crowdhide.accounting.shuffle._far_mixture import (
    FarMixture,
    far_mixture,
    far_split,
    mixture_depth,
    mixture_lambda,
    spread_ratio,
)
from crowdhide.accounting.shuffle._profile_grid import (
    COARSE_EVALUATIONS,
    FINE_LEVELS,
    FLOOR,
    PROFILE_STEP,
    _certificate,
    certified_profile,
)
from crowdhide.accounting.shuffle._settle import settling
from crowdhide.accounting.shuffle._tilted_pld import (
    TiltedPld,
    chernoff_lambda,
    split_top,
    tilted_composition,
    without_top,
)
from crowdhide.accounting.shuffle.composition import (
    PROFILE_PAIR,
    ComposedShuffleCurve,
    ComposedShuffleParams,
)
from crowdhide.accounting.statement import Kind, PrivacyStatement, format_bound
from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.accounting.shuffle.certificate import ShuffleCertificate

__all__ = [
    "COARSE_EVALUATIONS",
    "FINE_LEVELS",
    "FLOOR",
    "PROFILE_PAIR_REGISTRY",
    "PROFILE_STEP",
    "ProfilePairBound",
    "capped",
    "certified_profile",
    "composed_profile_pld",
    "echo_unused_grid",
    "profile_pair",
    "profile_pair_pld",
    "smaller",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Rounds below this use the fine profile (:data:`FINE_LEVELS` more points); one round
#: is the single-round certificate itself.
FINE_BELOW_ROUNDS = 1000
#: The hull is built on δ̄ raised by this (relative; 1e-6 of δ moves ε by far less): the
#: pair's profile then clears the check (:func:`_covers`) by more than its rounding error,
#: also where the hull is a chord through t = 1 whose ends carry little δ (one binary RR
#: report: the chord's value at t = 1 moves by about ``_RAISE · δ̄`` of its right end).
_RAISE = 1e-6
#: Relative rounding error allowed for a chord (a few operations on non-negative terms).
_CHORD_ERROR = 16.0 * MACHINE_EPSILON
#: Most loss-grid points of the composed PLD (dp_accounting's FFTs; about 4 s for R = 1e4
#: rounds at 1.5e6 points here); beyond, the grid is coarsened (losses rounded up).
MAX_COMPOSED_POINTS = 2**20
#: Composed PLDs kept (:func:`_composed`, per (ε0, n, rounds)): up to 8 MB each at
#: :data:`MAX_COMPOSED_POINTS`; a query at another δ of a kept one costs its ε search only.
COMPOSED_CACHED = 4


def _lower_hull(t: FloatArray, d: FloatArray) -> list[int]:
    """Indices (into the sorted arrays) of the lower convex hull's vertices."""
    hull: list[int] = []
    for i in range(t.size):
        while len(hull) >= 2:
            a, b = hull[-2], hull[-1]
            # drop b when it lies on or above the segment a–i
            if (d[b] - d[a]) * (t[i] - t[a]) >= (d[i] - d[a]) * (t[b] - t[a]):
                hull.pop()
            else:
                break
        hull.append(i)
    return hull


def profile_pair(
    indices: tuple[int, ...], deltas: tuple[float, ...]
) -> tuple[IntArray, FloatArray] | None:
    """The symmetric pair of a profile on the grid (module docstring): loss indices
    ``j >= 1`` of the outcomes and their Q-masses ``q_j`` (the P-mass is ``q_j e^{j h}``,
    the mirror outcome swaps them, the loss-0 outcome takes the rest). ``None`` when the
    check (:func:`_covers`) fails (not expected; the caller then has no profile pair,
    never a wrong one).

    Examples
    --------
    >>> loss, q = profile_pair((0, 5000, 10000), (0.3, 0.1, 0.0))
    >>> loss.tolist(), bool(q.min() > 0)
    ([5000, 10000], True)
    """
    idx = np.asarray(indices, dtype=np.int64)
    deltas_arr = np.asarray(deltas, dtype=np.float64)
    # all points as signed loss indices: the mirror images (t < 1), the grid (t >= 1); the
    # point (t, δ) = (0, 1) as the first, with index None
    signed: list[int | None] = [None, *(-idx[idx > 0])[::-1].tolist(), *idx.tolist()]
    values = [1.0, *(_mirror(deltas_arr * (1.0 + _RAISE), idx))[::-1].tolist()]
    values += (deltas_arr * (1.0 + _RAISE)).tolist()
    tt = np.array([0.0 if s is None else math.exp(s * PROFILE_STEP) for s in signed])
    hull = _lower_hull(tt, np.asarray(values))
    right = [h for h in hull if tt[h] > 1.0]
    slopes = []
    for h in right:
        left = hull[hull.index(h) - 1]
        slopes.append((values[left] - values[h]) / (tt[h] - tt[left]))
    s = np.asarray([*slopes, 0.0])
    q = np.maximum(s[:-1] - s[1:], 0.0)
    loss = np.asarray([signed[h] for h in right], dtype=np.int64)
    # A hull through t = 1 (no loss-0 mass, e.g. one binary RR report) sums to 1 up to
    # rounding: scale into a probability pair (the raise by _RAISE covers the loss).
    total = float((q * np.exp(loss * PROFILE_STEP) + q).sum())
    q = q / max(1.0, total * (1.0 + 8.0 * max(loss.size, 1) * MACHINE_EPSILON))
    neighbours: list[tuple[int | None, int]] = []
    for a, b in itertools.pairwise(hull):
        end = signed[b]
        assert end is not None  # only the first point, (0, 1), has none
        neighbours.append((signed[a], end))
    if loss.size == 0 or not _covers(idx, deltas_arr, loss, q, neighbours):
        return None
    return loss, q


def _mirror(deltas: FloatArray, idx: IntArray) -> FloatArray:
    """The profile at ``−ε`` of a symmetric relation, ``1 − (1 − δ) e^{−ε}``, for ``ε > 0``,
    as a sum of two non-negative terms (no cancellation)."""
    keep = idx > 0
    eps = idx[keep] * PROFILE_STEP
    out: FloatArray = -np.expm1(-eps) + deltas[keep] * np.exp(-eps)
    return out


def _gap(x: int | None, y: int) -> float:
    """``t_y − t_x`` for signed loss indices (``x`` None: ``t_x = 0``), ``t = e^{fl(i h)}``,
    as ``t_x expm1(fl(y h) − fl(x h))`` (the difference one rounding): a few ulps."""
    if x is None:
        return math.exp(y * PROFILE_STEP)
    return math.exp(x * PROFILE_STEP) * math.expm1(y * PROFILE_STEP - x * PROFILE_STEP)


def _chord_bound(
    i: int,
    want: float,
    neighbours: list[tuple[int | None, int]],
    idx: IntArray,
    d: FloatArray,
) -> float:
    """An upper bound on the true profile at grid index ``i``: δ̄ there, or the chord (in
    t) between the hull vertices around it where that is lower (the true profile is convex
    and below δ̄ at both vertices), raised by its relative rounding error."""
    value = {int(k): float(v) for k, v in zip(idx.tolist(), d.tolist(), strict=True)}
    mirrors = dict(zip((-idx[idx > 0]).tolist(), _mirror(d, idx).tolist(), strict=True))
    for a, b in neighbours:
        if (a is None or a < i) and i < b:
            da = 1.0 if a is None else (mirrors[a] if a < 0 else value[a])
            db = value[b] if b >= 0 else mirrors[b]
            chord = db + (da - db) * _gap(i, b) / _gap(a, b)
            top = float(idx.max()) * PROFILE_STEP  # expm1 arguments: see _covers
            return min(want, chord * (1.0 + _CHORD_ERROR + 4.0 * (top + 1.0) * MACHINE_EPSILON))
    return want


def _covers(
    idx: IntArray,
    deltas: FloatArray,
    loss: IntArray,
    q: FloatArray,
    neighbours: list[tuple[int | None, int]],
) -> bool:
    """Whether the pair is a probability pair (mass of the non-zero outcomes at most 1,
    rounded up) whose profile ``Σ_{j > i} q_j e^{i h} expm1((j − i) h)`` is at every grid
    point at least the least of δ̄ and the chord through the hull vertices around it
    (:func:`_chord_bound`). The masses ``q_j`` define the pair (exact floats); each of the m
    non-negative terms takes a few roundings (its ``expm1`` argument is the difference of
    two losses, one rounding) and the sum m more, so the computed profile is within a
    relative ``4 (m + 4) u`` of the pair's, by which it is lowered."""
    p = q * np.exp(loss * PROFILE_STEP)
    if float((p + q).sum()) * (1.0 + 4.0 * loss.size * MACHINE_EPSILON) > 1.0:
        return False
    # The pair's losses are the floats fl(j h) (as dp_accounting reads its grid): each expm1
    # argument is their difference, one rounding (relative u), so a few u per term in all.
    # (an argument x off by a relative u moves expm1(x) by a relative u x e^x/(e^x − 1)
    # <= u (1 + x): the top loss bounds x)
    top = float(idx.max()) * PROFILE_STEP
    slack = (4.0 * (loss.size + 4.0) + 2.0 * (top + 1.0)) * MACHINE_EPSILON
    losses = loss * PROFILE_STEP
    for i, want in zip(idx.tolist(), deltas.tolist(), strict=True):
        above = loss > i
        at = i * PROFILE_STEP
        got = math.exp(at) * float((q[above] * np.expm1(losses[above] - at)).sum())
        bound = _chord_bound(i, want, neighbours, idx, deltas)
        if bound > 0.0 and got * (1.0 - slack) < bound:  # (a profile is never below 0)
            return False
    return True


def _pair_masses(eps0: float, n: int, fine: bool = True) -> dict[int, float] | None:
    """The PLD masses (loss index → P-mass) of :func:`profile_pair` for
    :func:`certified_profile`, each rounded up, or None when no pair was found (a fresh
    dict of :func:`_pair_items`' cached items)."""
    items = _pair_items(eps0, n, fine)
    return None if items is None else dict(items)


@functools.lru_cache(maxsize=64)
def _pair_items(eps0: float, n: int, fine: bool) -> tuple[tuple[int, float], ...] | None:
    """:func:`_pair_masses`' items, cached per ``(eps0, n, fine)`` as the profile is: a query
    asks for them up to ~10 times (applies, the composition, each tilt's grid), and the
    hull and its covering check cost 1-3 ms each time."""
    found = profile_pair(*certified_profile(eps0, n, fine))
    if found is None:
        return None
    loss, q = found
    p = q * np.exp(loss * PROFILE_STEP)
    up = 1.0 + 8.0 * MACHINE_EPSILON
    rest = max(0.0, 1.0 - float((p + q).sum()) * (1.0 - 4.0 * loss.size * MACHINE_EPSILON))
    masses: dict[int, float] = {0: rest * up}
    for j, pj, qj in zip(loss.tolist(), p.tolist(), q.tolist(), strict=True):
        masses[j] = masses.get(j, 0.0) + pj * up
        masses[-j] = masses.get(-j, 0.0) + qj * up
    return tuple(masses.items())


def _coarse_factor(masses: dict[int, float], rounds: int) -> int:
    """How many profile steps one loss-grid step of the composition spans: the pair's own
    lattice (the gcd of its losses: no loss is rounded), or a multiple of it where
    ``rounds`` composed losses (about ``rounds |mean| + 12 √rounds · spread`` plus one
    round's range) would exceed :data:`MAX_COMPOSED_POINTS` grid points."""
    lattice = math.gcd(*masses)
    loss = np.asarray(list(masses), dtype=np.float64) * PROFILE_STEP
    weight = np.asarray(list(masses.values()))
    weight = weight / weight.sum()
    mean = float(weight @ loss)
    spread = math.sqrt(max(float(weight @ (loss - mean) ** 2), 0.0))
    support = rounds * abs(mean) + 12.0 * math.sqrt(rounds) * spread + 2.0 * float(loss.max())
    factor = max(1, math.ceil(support / (MAX_COMPOSED_POINTS * PROFILE_STEP)))
    return lattice * math.ceil(factor / lattice)


def profile_pair_pld(eps0: float, n: int, *, coarse: int = 1, fine: bool = True) -> PldCurve | None:
    """The PLD of :func:`profile_pair` for :func:`certified_profile` (masses
    rounded up), on a loss grid of ``coarse`` profile steps (losses rounded up to it: a
    pessimistic PLD), or None when no pair was found.

    Examples
    --------
    >>> pld = profile_pair_pld(1.0, 10_000)
    >>> round(pld.epsilon(1e-6), 3)     # one round: the certificate's 0.0432, up to the grid
    0.044
    """
    grid = _grid_masses(eps0, n, coarse, fine)
    if grid is None:
        return None
    pmf = create_pmf(grid, coarse * PROFILE_STEP, 0.0, pessimistic=True)
    return PldCurve(LossDistribution(pmf))


def _grid_masses(eps0: float, n: int, coarse: int, fine: bool) -> dict[int, float] | None:
    """:func:`_pair_masses` on a loss grid of ``coarse`` profile steps (grid index → mass,
    every loss rounded up to the grid), or None when no pair was found."""
    masses = _pair_masses(eps0, n, fine)
    if masses is None:
        return None
    grid: dict[int, float] = {}
    for j, mass in masses.items():
        i = -((-j) // coarse)  # ceil(j / coarse): every loss rounded up
        grid[i] = grid.get(i, 0.0) + mass
    return grid


@dataclass(frozen=True, slots=True)
class ProfilePairBound:
    """The composition of the profile pair (a :class:`~crowdhide.accounting.registry.Bound`
    over :class:`~crowdhide.accounting.shuffle.composition.ComposedShuffleParams`): any
    ε0-LDP randomizer, substitute relation, no subsampling."""

    name: str = "profile_pair"
    citation: str = (
        "the single-round variation-ratio certificate's profile as a dominating pair "
        "(docs/proofs/profile-pair.md)"
    )
    kind: Kind = "upper"

    def applies(self, params: ComposedShuffleParams) -> str | None:
        if params.k is not None or params.clone_rate is not None:
            return "profile_pair is for the generic eps0-LDP randomizer (no k, no mechanism)"
        if params.sample_rate < 1.0 or params.relation != "substitute":
            return "profile_pair needs sample_rate=1 and relation='substitute'"
        if params.rounds > 1 and _pair_masses(params.eps0, params.n, _fine(params)) is None:
            return "no pair covers the certificate's profile on its grid"
        return None

    def curve(self, params: ComposedShuffleParams) -> ComposedShuffleCurve:
        if params.rounds == 1:  # nothing to compose: the profile's own certificate
            return _SingleRound(_certificate(params.eps0, params.n), params.eps0)
        pld, coarse = _composed(params.eps0, params.n, params.rounds)
        notes: tuple[str, ...] = ()
        if coarse:
            notes = (
                f"profile pair: loss grid {coarse * PROFILE_STEP:.3g} (losses rounded up) to keep "
                f"{params.rounds} rounds within {MAX_COMPOSED_POINTS:.0e} grid points",
            )
        cap = product_up(params.rounds, params.eps0)
        return _TiltedCurve(pld, cap, notes, (params.eps0, params.n, params.rounds))


def composed_profile_pld(
    *,
    eps0: float,
    n: int,
    k: int | None = None,
    rounds: int = 1,
    sample_rate: float = 1.0,
    relation: str = "substitute",
) -> PldCurve:
    """The PLD of ``rounds`` composed profile pairs (as :class:`ProfilePairBound` composes
    them, one round included: the pair itself), for export.

    Raises
    ------
    InvalidParameterError
        Where the profile pair does not apply (``k``, sampling, add/remove).
    """
    params = ComposedShuffleParams(
        eps0=eps0, n=n, k=k, rounds=rounds, sample_rate=sample_rate, relation=relation
    )
    bound = ProfilePairBound()
    reason = bound.applies(replace(params, rounds=max(rounds, 2)))  # its own pair at R = 1
    if reason is not None:
        raise InvalidParameterError(reason, parameter="pair", value="profile_pair")
    return _composed(eps0, n, rounds)[0]


@functools.lru_cache(maxsize=COMPOSED_CACHED)
def _composed(eps0: float, n: int, rounds: int) -> tuple[PldCurve, int]:
    """The pair's PLD composed ``rounds`` times (one: the pair itself), and the loss grid in
    profile steps where it had to be coarser than the pair's lattice (else 0). It does not
    depend on δ: cached per ``(eps0, n, rounds)`` (:data:`COMPOSED_CACHED`), so the queries
    at further δ of one composition only search its ε (a PldCurve is never modified: its
    compositions and exports make new objects)."""
    fine = rounds < FINE_BELOW_ROUNDS
    masses = _pair_masses(eps0, n, fine)
    assert masses is not None  # the caller checked applies()
    coarse = _coarse_factor(masses, rounds)
    pld = profile_pair_pld(eps0, n, coarse=coarse, fine=fine)
    assert pld is not None
    if rounds > 1:
        pld = pld.self_compose(rounds)
    return pld, coarse if coarse > math.gcd(*masses) else 0


def _fine(params: ComposedShuffleParams) -> bool:
    """Whether a composition uses the fine profile (:func:`certified_profile`)."""
    return params.rounds < FINE_BELOW_ROUNDS


class _SingleRound(ComposedShuffleCurve):
    """One round: the single-round certificate the pair is built from, as is (the pair is
    its hull on a grid, never below it at grid points: the certificate is the tighter)."""

    def __init__(self, certificate: ShuffleCertificate, cap: float) -> None:
        note = "one round: the single-round certificate itself (the profile the pair is built from)"
        super().__init__(None, cap, (note,))
        self._certificate = certificate

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes

    def log_delta(self, epsilon: float) -> float:
        return self._certificate.log_delta(epsilon)

    def delta(self, epsilon: float) -> float:
        return self._certificate.delta(epsilon)

    def epsilon(self, delta: float) -> float:
        return min(self._certificate.epsilon(delta), self._cap)


class _QuietCurve(ComposedShuffleCurve):
    """dp_accounting's ε search divides by ``Σ p_i e^{−l_i}``, which underflows when the
    composed losses are in the hundreds (ε0 = 4, n = 1e3, 10^4 rounds): it overflows to
    ε = inf. There ε is searched here on the safe-side δ(ε) (:meth:`PldCurve.delta`, whose
    terms ``e^{ε − l_i} <= 1`` cannot overflow) from the safe side, up to the cap R·ε0."""

    def epsilon(self, delta: float) -> float:
        with np.errstate(over="ignore", divide="ignore"):
            found = super().epsilon(delta)
        if self.pld is None or (math.isfinite(found) and found < self._cap):
            return found
        pld, target = self.pld, math.log(delta)
        if pld.composition_error >= delta or pld.log_delta(self._cap) > target:
            return found  # the cap (or an allowance above δ): nothing smaller is certified
        return min(found, safe_root(pld.log_delta, target, 0.0, self._cap, xtol=1e-9 * self._cap))


#: The FFT composition's absolute allowance counts (and the tilted composition is also
#: made, :class:`_TiltedCurve`) where it is above this share of the δ in question.
TILT_ABOVE = 0.01
#: Far atoms with ``R a`` up to this share of δ may be left out (``split_top``): ε0 = 4,
#: n = 1e9, 100 rounds, δ = 1e-12 (``R a`` = 4.7e-15): 0.96 with none out, 0.019 with it.
DROP_SHARE = 0.1
#: Far atoms with ``R a`` up to this share of δ are left out from the start of an ε search
#: (``_free_cut``): without them the tilted composition is short (ε0 = 8, n = 1e9, 100
#: rounds: 5,625 FFT points instead of 4.6e6) and the one with them is not made
#: (docs/proofs/profile-pair.md §12).
FREE_SHARE = 0.01
#: ... and lie at least this many times beyond the kept atoms' highest loss (at 100 rounds
#: and δ = 1e-10 the atoms whose all-atom composition settled were within 13 times of it,
#: those where it did not 53-3,333 times beyond).
FAR_RATIO = 32
#: The pass with every atom composes the top atom's draws apart (``_far_mixture``,
#: docs/proofs/profile-pair.md §13) where under its tilt the pair's spread is at least this
#: many times the pair's without the top atom (one composition is then about that many times
#: longer than each of the mixture's; measured: at 1-3.3 times the one composition was the
#: faster, at 9-4,300 times the mixture).
MIX_SPREAD = 8.0
#: A tilted answer is settled (its tilt not chosen again, no far atoms left out) when its
#: error term is below ``e^{_SETTLED} δ`` (it could move ε by about that share of δ only).
_SETTLED = math.log(1e-4)


#: A δ query also tries the second passes of ε searches at δ down to this many times below
#: its own (:meth:`_TiltedCurve._below_passes`), at this many δ spread evenly in log.
BELOW_SPAN = 1e4
BELOW_STEPS = 8
#: A tilted pass: its tilt λ, far atoms left out, top-atom draws composed apart (or None).
_Pass = tuple[float, int, int | None]


class _TiltedCurve(_QuietCurve):
    """The composed pair; where the FFT's absolute allowance is over :data:`TILT_ABOVE` of δ,
    also the composition under a tilt (:mod:`~crowdhide.accounting.shuffle._tilted_pld`,
    error about relative to δ; λ the Rényi conversion's, then the saddle at the ε found):
    the least of the two bounds (both certificates)."""

    def __init__(
        self, pld: PldCurve, cap: float, notes: tuple[str, ...], key: tuple[float, int, int]
    ) -> None:
        super().__init__(pld, cap, notes)
        self._key = key
        # the passes an ε search makes, recorded while a δ query runs it (_as_searched)
        self._passes: list[_Pass] | None = None

    def _material(self, delta: float) -> bool:
        assert self.pld is not None
        return self.pld.composition_error > TILT_ABOVE * delta

    def log_delta(self, epsilon: float) -> float:
        value = self._own_log_delta(epsilon)
        if settling() and epsilon < self._cap:
            value = self._as_searched(epsilon, value)
        return value

    def _as_searched(self, epsilon: float, value: float) -> float:
        """A δ query (docs/proofs/profile-pair.md §17): the least of ``value`` and the
        tilted passes :meth:`epsilon` at the δ found makes (their tilts, far atoms and
        depths depend on that δ and on the ε its first pass finds), once more at the δ they
        give where that moved; each pass is a certificate at every ε."""
        seen: set[_Pass] = set()
        for _ in range(2):
            delta = math.exp(value)
            if not 0.0 < delta < 1.0:
                break
            self._passes = []
            try:
                self.epsilon(delta)
                passes = [p for p in dict.fromkeys(self._passes) if p not in seen]
            finally:
                self._passes = None
            passes += [p for p in self._below_passes(delta, epsilon) if p not in passes]
            passes = [p for p in passes if p not in seen]
            if not passes:
                break
            seen.update(passes)
            value = min(value, *(_pass(self._key, *p).log_delta(epsilon) for p in passes))
        return value

    def _below_passes(self, delta: float, epsilon: float) -> list[_Pass]:
        """The second passes of ε searches at δ below ``delta`` (down to :data:`BELOW_SPAN`
        times less) where the first is the mixture (§13): their tilt is the saddle of its
        dominant term at the ε the first pass finds, which jumps as δ falls, and the search
        whose answer ``epsilon`` is asked at had a δ below the value found (R = 10^4,
        ε0 = 8, n = 1e9, δ = 1e-300: 1655 times)."""
        passes: list[_Pass] = []
        for cut in dict.fromkeys((_free_cut(self._key, delta), 0)):
            lam = _lambda(self._key, cut, delta=delta)
            depth = _depth(self._key, lam, cut, delta)
            if depth is None:  # one composition's saddle: smooth in ε, found at ε itself
                continue
            first = _pass(self._key, lam, cut, depth)
            for step in range(1, BELOW_STEPS + 1):
                lower = delta * BELOW_SPAN ** (-step / BELOW_STEPS)
                found = first.epsilon(lower, self._cap)
                if not epsilon < found < self._cap:
                    continue
                tilt = (_saddle(self._key, cut, depth, found), cut, depth)
                if tilt not in passes and tilt[0] != lam:
                    passes.append(tilt)
        return passes

    def _own_log_delta(self, epsilon: float) -> float:
        """The composed pair's δ and, where its allowance counts, the tilted composition's
        under the saddle tilt at ``epsilon`` (and with far atoms left out where they weigh)."""
        plain = super().log_delta(epsilon)
        if epsilon >= self._cap or not self._material(math.exp(plain)):
            return plain
        tilted = _tilted(*self._key, _lambda(self._key, 0, epsilon=epsilon), 0)
        first = tilted.log_delta(epsilon)
        if tilted.log_error(epsilon) > first + _SETTLED:  # far atoms (module _tilted_pld)
            cut = _cut(self._key, DROP_SHARE * math.exp(first))
            if cut:
                again = _tilted(*self._key, _lambda(self._key, cut, epsilon=epsilon), cut)
                first = min(first, again.log_delta(epsilon))
        return min(plain, first)

    def delta(self, epsilon: float) -> float:
        plain = super().delta(epsilon)
        return min(plain, math.exp(self.log_delta(epsilon)))

    def epsilon(self, delta: float) -> float:
        found = super().epsilon(delta)
        if not self._material(delta) or _log_delta_at_cap_lower(self._key, self._cap) > (
            math.log(delta) + 1.0
        ):
            # the second test: every tilted answer would be the cap, so min(found, cap) is
            # found (docs/proofs/profile-pair.md §8); 1 nat of room for its roundings
            return found
        # far atoms of R a within FREE_SHARE of δ and far beyond the rest left out from the
        # start (with them the composition is long and its error term weighs: §12), else
        # all atoms first; then far atoms up to DROP_SHARE of δ, while the error term weighs
        first = _free_cut(self._key, delta)
        for cut in dict.fromkeys((first, _cut(self._key, DROP_SHARE * delta))):
            found, settled = self._tilted_epsilon(delta, cut, found)
            if settled:
                break
        return found

    def _tilted_epsilon(self, delta: float, cut: int, found: float) -> tuple[float, bool]:
        """The least of ``found`` and the tilted composition's ε (``cut`` far atoms left
        out), and whether its error term is negligible there (:data:`_SETTLED`)."""
        lam = _lambda(self._key, cut, delta=delta)
        depth = _depth(self._key, lam, cut, delta)
        tilted = _pass(self._key, lam, cut, depth)
        found = min(found, tilted.epsilon(delta, min(found, self._cap)))
        if self._passes is not None:  # a δ query's (_as_searched)
            self._passes.append((lam, cut, depth))
        if tilted.log_error(found) < math.log(delta) + _SETTLED:
            return found, True
        again = _saddle(self._key, cut, depth, found)  # the saddle at the ε found
        if self._passes is not None:
            self._passes.append((again, cut, depth))
        if again != lam:
            tilted = _pass(self._key, again, cut, depth)
            found = min(found, tilted.epsilon(delta, found, near=True))
        return found, tilted.log_error(found) < math.log(delta) + _SETTLED


def _log_delta_at_cap_lower(key: tuple[float, int, int], cap: float) -> float:
    """A lower bound on ``log δ(cap)`` of the exact ``R``-fold composition of the pair's
    rounded-up PLD (:func:`_composed_grid`, the masses every composition here bounds from
    above): all R rounds draw the top atom (mass ``p``, loss ``L = top · step > ε0``), so
    ``δ(cap) >= p^R (1 − e^{cap − R L})`` (docs/proofs/profile-pair.md §8). ``-inf`` where
    ``R L`` is not above the cap (after its rounding allowance)."""
    grid, step = _composed_grid(*key)
    top, rounds = max(grid), key[2]
    reach = rounds * (top * step)
    # two roundings in ``reach`` (relative u each) and one in the difference
    gap = reach - cap - 4.0 * MACHINE_EPSILON * (reach + cap)
    if gap <= 0.0 or not grid[top] > 0.0:
        return -math.inf
    return rounds * math.log(grid[top]) + math.log(-math.expm1(-gap))


def _cut(key: tuple[float, int, int], budget: float) -> int:
    """How many far atoms :func:`~crowdhide.accounting.shuffle._tilted_pld.split_top`
    leaves out at ``budget`` (a cache key: the same count, the same composition)."""
    grid = _composed_grid(*key)[0]
    return len(grid) - len(split_top(grid, key[2], budget)[0])


def _free_cut(key: tuple[float, int, int], delta: float) -> int:
    """How many far atoms an ε search leaves out from the start (the composition with all
    atoms then not made): those within :data:`FREE_SHARE` of δ, where they lie at least
    :data:`FAR_RATIO` times beyond the kept atoms' highest loss (there one tilt cannot
    serve both, and the composition with them is that much longer,
    docs/proofs/profile-pair.md §12); else 0 (all atoms first)."""
    cut = _cut(key, FREE_SHARE * delta)
    if not cut:
        return 0
    grid, kept = _composed_grid(*key)[0], _top_split(key, cut)[0]
    reach = max((j for j in kept if j > 0), default=1)
    return cut if max(grid) >= FAR_RATIO * reach else 0


def _top_split(key: tuple[float, int, int], cut: int) -> tuple[dict[int, float], float, float]:
    """The composition's grid masses without its ``cut`` far atoms, their ``R a``, the step."""
    grid, step = _composed_grid(*key)
    return (*without_top(grid, key[2], cut), step)


def _lambda(key: tuple[float, int, int], cut: int, **query: float) -> float:
    """The tilt for a query (:func:`~crowdhide.accounting.shuffle._tilted_pld.chernoff_lambda`)
    on the composition's own loss grid, ``cut`` far atoms left out."""
    kept, _, step = _top_split(key, cut)
    return chernoff_lambda(kept, step, key[2], **query)


def _composed_grid(eps0: float, n: int, rounds: int) -> tuple[dict[int, float], float]:
    """The pair's masses on the loss grid :func:`_composed` composes them on, and its step."""
    fine = rounds < FINE_BELOW_ROUNDS
    masses = _pair_masses(eps0, n, fine)
    assert masses is not None  # the caller checked applies()
    coarse = _coarse_factor(masses, rounds)
    grid = _grid_masses(eps0, n, coarse, fine)
    assert grid is not None
    return grid, coarse * PROFILE_STEP


def _depth(key: tuple[float, int, int], lam: float, cut: int, delta: float) -> int | None:
    """How many draws of the top atom a tilted pass composes apart (the mixture,
    :func:`~crowdhide.accounting.shuffle._far_mixture.mixture_depth` at δ), or None (one
    tilted composition): only with every atom (``cut`` 0), where under λ the top atom widens
    the pair's spread :data:`MIX_SPREAD` times."""
    if cut:
        return None
    grid, step = _composed_grid(*key)
    rest, _, a = far_split(grid)
    if spread_ratio(grid, rest, step, lam) < MIX_SPREAD:
        return None
    return mixture_depth(rest, a, key[2], delta)


def _pass(
    key: tuple[float, int, int], lam: float, cut: int, depth: int | None
) -> TiltedPld | FarMixture:
    """A tilted pass's bound under λ: the mixture where ``depth`` is given, else the
    tilted composition with ``cut`` far atoms left out."""
    return _tilted(*key, lam, cut) if depth is None else _mixture(*key, lam, depth)


def _saddle(key: tuple[float, int, int], cut: int, depth: int | None, epsilon: float) -> float:
    """The tilt of a second pass at the ε found: the pair's saddle, or for the mixture its
    dominant term's (:func:`~crowdhide.accounting.shuffle._far_mixture.mixture_lambda`)."""
    if depth is None:
        return _lambda(key, cut, epsilon=epsilon)
    grid, step = _composed_grid(*key)
    rest, top, a = far_split(grid)
    return mixture_lambda(rest, a, step, top, key[2], depth, epsilon)


@functools.lru_cache(maxsize=2)  # a search's two tilts; each holds J + 1 vectors (~90 MB at most)
def _mixture(eps0: float, n: int, rounds: int, lam: float, depth: int) -> FarMixture:
    """The pair's composition as a mixture over its top atom's draws (``depth`` of them
    composed apart), under the tilt λ, cached per argument (docs/proofs/profile-pair.md §13)."""
    grid, step = _composed_grid(eps0, n, rounds)
    rest, top, a = far_split(grid)
    return far_mixture(rest, top, a, step, rounds, lam, depth)


@functools.lru_cache(maxsize=COMPOSED_CACHED)
def _tilted(eps0: float, n: int, rounds: int, lam: float, cut: int) -> TiltedPld:
    """:func:`_composed`'s composition computed under the tilt λ, its ``cut`` far atoms
    left out (:func:`_top_split`), cached per argument."""
    kept, dropped, step = _top_split((eps0, n, rounds), cut)
    return tilted_composition(kept, step, rounds, lam, dropped)


#: The profile pair as a registry (one bound), for :func:`composed_shuffle`.
PROFILE_PAIR_REGISTRY: Registry[ComposedShuffleParams] = Registry([ProfilePairBound()], what="pair")


def capped(statement: PrivacyStatement, params: ComposedShuffleParams) -> bool:
    """Whether the profile pair's answer says nothing: it does not apply, or its ε reached
    the cap R·ε0 (where another pair may still say more)."""
    if not statement.conditions_met:
        return True
    eps = statement.epsilon
    return eps is not None and eps >= params.rounds * params.eps0 * (1.0 - 1e-9)


def smaller(first: PrivacyStatement, second: PrivacyStatement, *, key: str) -> PrivacyStatement:
    """The smaller of two certificates for the same question by ``key`` (``"epsilon"`` for
    a δ query, ``"delta"`` for an ε query), with a note naming both values and the winner;
    ``first`` (with the reason) when ``second`` does not apply."""
    if not second.conditions_met:
        return first.with_notes(f"profile_pair not used: {'; '.join(second.notes)}")
    if not first.conditions_met:
        return second
    a, b = getattr(first, key), getattr(second, key)
    win = second if b < a else first
    shown = functools.partial(format_bound, up=True, digits=6)  # upper bounds: rounded up
    return win.with_notes(
        f"{key} = {shown(min(a, b))} from {win.source}: the smaller of {first.source} "
        f"({shown(a)}) and {second.source} ({shown(b)}), both certificates"
    )


def echo_unused_grid(statement: PrivacyStatement, interval: float | None) -> PrivacyStatement:
    """``statement`` with a note where the user gave ``value_discretization_interval`` and the
    answer is the profile pair's, which composes on its own grid (multiples of
    ``PROFILE_STEP``): the option set only the FMT21/FMT23 pairs' grid, so it is echoed as
    not applying rather than left silently unused."""
    if interval is None or statement.source != PROFILE_PAIR:
        return statement
    return statement.with_notes(
        f"value_discretization_interval={interval:.3g} does not apply to profile_pair (its "
        f"losses are multiples of {PROFILE_STEP:g}); it sets the FMT21/FMT23 pairs' grid"
    )
