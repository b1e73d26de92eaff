"""Per-pair network-DP accounting of a realised token walk (Cyffers & Bellet 2022, Fig. 1b / 3).

Fix a realised walk on the complete graph with a hidden path. What observer v (or a coalition
C) learns about user u ∉ C is the sequence of token increments between its receipts. Cut the
walk at v's receipts: cycle i has length ``m_i`` and contains ``r_i = m_i − 1`` contributions
of other users (plus v's own, which v knows). Given what v sees, those ``r_i`` holders are
i.i.d. uniform over the ``n − c`` non-observers, so u appears ``J_i ~ B(r_i, 1/(n − c))`` times,
independently across cycles. Hence the loss of every pair (u, v) depends only on v's cycle
lengths: all ``n − 1`` pairs ``(·, v)`` share one composition, and cycles of equal length share
one PLD (they are grouped with counts).

Each cycle's certificate is :func:`~crowdhide.netdp.cycle_privacy.cycle_profile`; its PLD and
the per-observer composition are :mod:`crowdhide.netdp.walk_pld` (PLDs composed as
dp_accounting does).
Heterogeneous advanced composition (Kairouz et al. 2015) of per-cycle (ε_i, δ_i) points is
reported for comparison. Local-DP baseline: v sees every contribution of u: exact composition
of u's contributions (Gaussian: closed form; k-RR: grouped ``compose_curves``).

Every result is a :class:`RealisedWalkReport` whose ``privacy`` is the worst pair's statement.

Length grouping (``group_ratio > 0``): lengths above 64 are grouped in geometric bins of this
relative width, and a bin is certified by the profile with the participation of its largest
length and the noise of its smallest (:func:`~crowdhide.netdp.cycle_privacy.cycle_profile`
with ``noise_terms``), which dominates the profile of every length in the bin — so the result
is still a certificate, slightly looser (n = 1000, T = 1e5: mean ε +0.09 % at 0.002, +0.7 % at
0.01, +3.9 % at 0.05) and much faster on long walks (n = 1e4, T = 1e6: 812 bins at 0.01
instead of 51 370 lengths).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy import sparse

from crowdhide._validation import as_rng, check_int, check_probability, check_real
from crowdhide.accounting.composition import PldCurve
from crowdhide.accounting.statement import PrivacyStatement
from crowdhide.errors import InvalidParameterError
from crowdhide.netdp.cycle_privacy import CycleMechanism, FloatArray, IntArray
from crowdhide.netdp.walk_pld import cycle_plds, observer_epsilons
from crowdhide.netdp.walks import VisitIndex, complete_walk, visit_index

__all__ = [
    "RealisedWalkReport",
    "account_sampled_walk",
    "account_walk",
    "account_walk_known_peers",
    "authors_code_pair_losses",
    "observer_epsilon_reference",
]


@dataclass(frozen=True)
class RealisedWalkReport:
    """Per-pair accounting of a realised walk.

    Attributes
    ----------
    privacy
        The worst ordered pair's certificate at ``delta`` (``source`` names the accountant).
    n, steps, colluders
        Walk size and coalition size (observers are single users when 1).
    delta
        Target δ of every per-pair guarantee.
    observer_epsilon
        ε of every observer v (shared by all pairs (u, v), u ≠ v) — optimal composition.
    observer_epsilon_advanced
        Same cycles, heterogeneous advanced composition (comparison).
    local_epsilon
        Local-DP ε of every user u (v sees all of u's contributions).
    summary
        Mean / worst / best over ordered pairs for each of the three.
    details
        Parameters of the computation.
    """

    privacy: PrivacyStatement
    n: int
    steps: int
    colluders: int
    delta: float
    observer_epsilon: FloatArray
    observer_epsilon_advanced: FloatArray
    local_epsilon: FloatArray
    summary: dict[str, float]
    details: dict[str, Any] = field(default_factory=dict)


def _summary(values: FloatArray, prefix: str) -> dict[str, float]:
    return {
        f"{prefix}_mean": float(np.mean(values)),
        f"{prefix}_worst": float(np.max(values)),
        f"{prefix}_best": float(np.min(values)),
    }


def _report(
    source: str,
    *,
    steps: int,
    n: int,
    colluders: int,
    delta: float,
    observer: FloatArray,
    advanced: FloatArray,
    local: FloatArray,
    summary: dict[str, float],
    details: dict[str, Any],
) -> RealisedWalkReport:
    """The report, with the worst ordered pair's certificate as ``privacy``."""
    privacy = PrivacyStatement(
        epsilon=summary["network_worst"],
        delta=delta,
        kind="upper",
        source=source,
        notes=("worst ordered pair (u, v) of the realised walk",),
        inputs={"n": n, "steps": steps, "colluders": colluders},
    )
    return RealisedWalkReport(
        privacy=privacy,
        n=n,
        steps=steps,
        colluders=colluders,
        delta=delta,
        observer_epsilon=observer,
        observer_epsilon_advanced=advanced,
        local_epsilon=local,
        summary=summary,
        details=details,
    )


def _local_epsilons(idx: VisitIndex, mechanism: CycleMechanism, delta: float) -> FloatArray:
    contributions = idx.counts()
    local = np.zeros(idx.counts().size)
    for value in np.unique(contributions):
        local[contributions == value] = mechanism.local_epsilon(
            contributions=int(value), delta=delta
        )
    return local


def _group_lengths(distinct: IntArray, ratio: float) -> IntArray:
    """Group ids for intermediate counts: exact below 64, geometric bins of ``ratio`` above
    (every count its own group when ``ratio`` is 0)."""
    if ratio == 0.0:
        return distinct
    r = np.maximum(distinct, 1).astype(np.float64)
    geo = np.floor(np.log(r / 64.0) / math.log1p(ratio)).astype(np.int64) + 64
    return np.where(distinct < 64, distinct, geo)


def _grouped_specs(r: IntArray, ratio: float) -> tuple[IntArray, list[dict[str, int] | None]]:
    """Group of every cycle and a dominating profile spec per group.

    Each group's profile dominates every length in it (participation of its largest length,
    noise of its smallest): the per-pair results are certificates for any group ratio.
    """
    distinct, inverse = np.unique(r, return_inverse=True)
    groups, group_of_distinct = np.unique(_group_lengths(distinct, ratio), return_inverse=True)
    r_min = np.full(groups.size, np.iinfo(np.int64).max)
    np.minimum.at(r_min, group_of_distinct, distinct)
    r_max = np.zeros(groups.size, dtype=np.int64)
    np.maximum.at(r_max, group_of_distinct, distinct)
    specs: list[dict[str, int] | None] = [
        {"intermediates": int(hi), "noise_terms": max(int(lo), 1)} if hi > 0 else None
        for lo, hi in zip(r_min, r_max, strict=True)
    ]
    return group_of_distinct[inverse.ravel()], specs


def _advanced_comparison(
    owner: IntArray, cycle_group: IntArray, plds: list[PldCurve], n: int, d: float
) -> tuple[FloatArray, float]:
    """Heterogeneous advanced composition of every observer's per-cycle (ε, δ_c) points, with
    δ_c = δ / (4 × the largest number of cycles); returns the ε's and δ_c."""
    cd = d / (4.0 * max(int(np.bincount(owner, minlength=n).max()), 1))
    eps_group = np.array([q.epsilon(cd) for q in plds])
    n_cycles = np.bincount(owner, minlength=n)
    eps_cycle = eps_group[cycle_group]
    sum_eps = np.bincount(owner, weights=eps_cycle, minlength=n).astype(np.float64)
    sum_sq = np.bincount(owner, weights=eps_cycle**2, minlength=n).astype(np.float64)
    drift = np.bincount(owner, weights=eps_cycle * np.tanh(eps_cycle / 2), minlength=n)
    spent = -np.expm1(n_cycles * math.log1p(-cd))
    slack = np.maximum(d - spent, 1e-300)
    advanced = _kov_vec(sum_eps, sum_sq, drift.astype(np.float64), slack)
    return np.where(n_cycles > 0, advanced, 0.0), cd


def account_walk(
    holders: npt.ArrayLike,
    *,
    n: int,
    mechanism: CycleMechanism,
    delta: float,
    colluders: int = 1,
    resolution: int = 4,
    group_ratio: float = 0.0,
) -> RealisedWalkReport:
    """Per-pair network-DP accounting of a realised walk (hidden path, time counter known).

    Parameters
    ----------
    holders
        The walk (``holders[t]`` holds the token at step t).
    n
        Number of users.
    mechanism
        The per-contribution randomizer.
    delta
        δ of the reported per-pair guarantees.
    colluders
        c: observers are the n coalitions ``{v, v+1, …, v+c−1 mod n}`` acting as one node
        (collusion model of Cyffers & Bellet); the protected user is any u outside it.
    resolution
        Lattice steps per typical per-cycle loss (larger = tighter and slower).
    group_ratio
        0 (default): every distinct cycle length gets its own certificate; > 0: lengths
        above 64 share geometric bins of this relative width, each certified by a dominating
        profile (see "Length grouping" in the module docstring). Results carry
        ``details["length_grouping"]`` (``"exact"`` or ``"dominating"``).

    Examples
    --------
    >>> walk = complete_walk(n=20, steps=1000, rng=0)
    >>> mech = CycleMechanism(kind="gaussian", noise_multiplier=20.0)
    >>> res = account_walk(walk, n=20, mechanism=mech, delta=1e-6)
    >>> bool(res.summary["network_worst"] < res.summary["local_best"])
    True
    >>> res.privacy.epsilon == res.summary["network_worst"], res.privacy.is_certificate
    (True, True)
    """
    h_arr = np.asarray(holders, dtype=np.int64)
    n = check_int("n", n, low=2)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    c = check_int("colluders", colluders, low=1, high=n - 1)
    res = check_int("resolution", resolution, low=1)
    ratio = check_real("group_ratio", group_ratio, low=0.0)
    idx = visit_index(h_arr, n=n)
    owner, m = _observer_cycles(idx, n, c)
    cycle_group, specs = _grouped_specs(m - 1, ratio)
    weights = np.bincount(cycle_group, minlength=len(specs)).astype(np.float64)
    step, plds = cycle_plds(specs, weights, p=1.0 / (n - c), mechanism=mechanism, resolution=res)
    counts = sparse.csr_matrix((np.ones(owner.size), (owner, cycle_group)), shape=(n, len(specs)))
    network = observer_epsilons(counts, plds, delta=d)
    advanced, cd = _advanced_comparison(owner, cycle_group, plds, n, d)
    local = _local_epsilons(idx, mechanism, d)
    summary = _summary(network, "network") | _summary(advanced, "network_advanced")
    return _report(
        "realised_walk_hidden_path",
        steps=int(h_arr.size),
        n=n,
        colluders=c,
        delta=d,
        observer=network,
        advanced=advanced,
        local=local,
        summary=summary | _summary(local, "local"),
        details={
            "lattice_step": step,
            "curve_groups": len(specs),
            "distinct_cycle_lengths": int(np.unique(m).size),
            "cycle_delta": cd,
            "length_grouping": "exact" if ratio == 0.0 else "dominating",
        },
    )


def _kov_vec(
    sum_eps: FloatArray, sum_sq: FloatArray, drift: FloatArray, slack: FloatArray
) -> FloatArray:
    a = drift + np.sqrt(2.0 * sum_sq * np.log(1.0 / slack))
    b = drift + np.sqrt(2.0 * sum_sq * np.log(math.e + np.sqrt(sum_sq) / slack))
    return np.minimum(sum_eps, np.minimum(a, b))


def _observer_cycles(idx: VisitIndex, n: int, c: int) -> tuple[IntArray, IntArray]:
    """(observer, cycle length) of every cycle: single users, or the n coalitions."""
    if c == 1:
        return idx.cycle_lengths()
    member_of = np.repeat(np.arange(n, dtype=np.int64), idx.counts())
    return _coalition_cycles(member_of, idx.times, n, c)


def _coalition_cycles(
    member_of: IntArray, times: IntArray, n: int, c: int
) -> tuple[IntArray, IntArray]:
    """Cycle lengths of the n coalitions {g, …, g+c−1 mod n} (union of visit times)."""
    owners = []
    lengths = []
    for shift in range(c):
        owners.append((member_of - shift) % n)
        lengths.append(times)
    group = np.concatenate(owners)
    t = np.concatenate(lengths)
    order = np.lexsort((t, group))
    g_sorted, t_sorted = group[order], t[order]
    prev = np.r_[0, t_sorted[:-1]]
    first = np.r_[True, g_sorted[1:] != g_sorted[:-1]]
    prev[first] = 0
    return g_sorted, t_sorted - prev


def account_sampled_walk(
    *,
    n: int,
    steps: int,
    mechanism: CycleMechanism,
    delta: float,
    rng: object = None,
    colluders: int = 1,
    resolution: int = 4,
    known_peers: bool = False,
    group_ratio: float = 0.0,
) -> RealisedWalkReport:
    """Sample a complete-graph walk with ``rng`` and audit it (:func:`account_walk`, or
    :func:`account_walk_known_peers` when ``known_peers``; then ``colluders`` must be 1).
    Needs n >= 3: with two users every other contribution of a cycle is u's own (the
    subsampling probability is 1) and the observer is u's only peer."""
    n = check_int("n", n, low=3)
    walk = complete_walk(n=n, steps=steps, rng=as_rng(rng))
    if known_peers:
        if colluders != 1:
            raise InvalidParameterError(f"colluders must be 1 with known_peers, got {colluders}")
        return account_walk_known_peers(
            walk,
            n=n,
            mechanism=mechanism,
            delta=delta,
            resolution=resolution,
            group_ratio=group_ratio,
        )
    return account_walk(
        walk,
        n=n,
        mechanism=mechanism,
        delta=delta,
        colluders=colluders,
        resolution=resolution,
        group_ratio=group_ratio,
    )


def authors_code_pair_losses(
    holders: npt.ArrayLike,
    *,
    n: int,
    eps0: float,
    delta: float,
    cycle_mass: Callable[[IntArray], FloatArray] | None = None,
) -> tuple[FloatArray, FloatArray]:
    """Per-pair losses exactly as the authors' Fig. 1b code computes them (reproduction only).

    Known peers (a cycle is *flagged* once for the previous holder and once for the user v sent
    the token to at its previous visit, both initialised to user 0), cycle lengths counted from
    the last visit (initialised to step 0, no cap), per-cycle ε = Eq. 10 with ``ε0/√m``
    (flag 0), ``ε0/√m`` (flag 1), ``2ε0/√m`` (flag >= 2), Kairouz composition with
    ``δ̃ = k δ``; LDP: advanced composition over each user's contributions. ``cycle_mass``
    maps the cycle lengths m to the per-cycle ε in place of ``ε0/√m`` (Gaussian sums; their
    Fig. 3 code uses shuffle bounds for histograms). Not a certificate
    (Eq. 10's δ and the flagged cases are not justified); returns ``(pair_losses, local)`` with
    ``pair_losses[v, u]`` (diagonal NaN).

    The walk is taken as ``holders[0] = 0`` followed by ``T − 1`` uniform steps, as in the
    code; pass ``np.r_[0, complete_walk(...)]``.
    """
    h = np.asarray(holders, dtype=np.int64)
    n = check_int("n", n, low=2)
    e0 = check_real("eps0", eps0, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    steps = h.size
    last_time = np.zeros(n, dtype=np.int64)
    last_send = np.zeros(n, dtype=np.int64)
    observer = h[1:]
    prev_holder = h[:-1]
    # vectorized "last time" and "last send": process in time order with per-user arrays
    m = np.empty(steps - 1, dtype=np.int64)
    sendto = np.empty(steps - 1, dtype=np.int64)
    for i in range(1, steps):  # O(T) scalar loop; only used for small reproductions
        v = h[i]
        m[i - 1] = i - last_time[v]
        sendto[i - 1] = last_send[v]
        last_send[h[i - 1]] = v
        last_time[v] = i
    mass = e0 / np.sqrt(m) if cycle_mass is None else np.asarray(cycle_mass(m), np.float64)
    sub = np.log1p(-np.expm1(m * math.log1p(-1.0 / n)) * np.expm1(mass))
    base_sum = np.bincount(observer, weights=sub, minlength=n)
    base_sq = np.bincount(observer, weights=sub**2, minlength=n)
    base_drift = np.bincount(observer, weights=sub * np.tanh(sub / 2), minlength=n)
    k = np.bincount(observer, minlength=n).astype(np.float64)
    s = np.tile(base_sum[:, None], (1, n))
    sq = np.tile(base_sq[:, None], (1, n))
    dr = np.tile(base_drift[:, None], (1, n))
    # flag counts per (cycle, partner): partner = sendto and partner = prev_holder
    cyc = np.arange(steps - 1)
    partners = np.concatenate([sendto, prev_holder])
    cyc2 = np.concatenate([cyc, cyc])
    key = cyc2 * n + partners
    uniq, cnt = np.unique(key, return_counts=True)
    cyc_u = uniq // n
    part_u = uniq % n
    flagged_eps = np.where(cnt == 1, mass[cyc_u], 2 * mass[cyc_u])
    old = sub[cyc_u]
    obs_u = observer[cyc_u]
    np.add.at(s, (obs_u, part_u), flagged_eps - old)
    np.add.at(sq, (obs_u, part_u), flagged_eps**2 - old**2)
    np.add.at(dr, (obs_u, part_u), flagged_eps * np.tanh(flagged_eps / 2) - old * np.tanh(old / 2))
    new_delta = np.maximum(k * d, 1e-300)[:, None]
    use_log = math.e + np.sqrt(sq) / new_delta > 1.0 / new_delta
    second = np.where(
        use_log,
        np.sqrt(2 * sq * np.log(1 / new_delta)),
        np.sqrt(2 * sq * np.log(math.e + np.sqrt(sq) / new_delta)),
    )
    total = np.minimum(dr + second, s)
    total = np.where(k[:, None] > 0, total, 0.0)
    np.fill_diagonal(total, np.nan)
    contrib = np.bincount(h[1:], minlength=n)  # the code counts receipts (relation_eps[v][0])
    local = np.sqrt(2 * contrib * math.log(1 / d)) * e0 + contrib * e0 * math.expm1(e0)
    return total, local


def observer_epsilon_reference(
    holders: npt.ArrayLike,
    *,
    n: int,
    observer: int,
    mechanism: CycleMechanism,
    delta: float,
    step: float,
) -> float:
    """ε of every pair (·, ``observer``) through the plain PLD composition (reference).

    Same per-cycle certificates as :func:`account_walk` (one PLD per distinct cycle length, no
    grouping of lengths, lattice ``step``), composed by :class:`PldCurve`
    (:func:`~crowdhide.netdp.walk_pld.observer_epsilons` with ``accelerated=False``) — cycles
    of equal length are one part with a count. Used to cross-check the accelerated path.
    """
    from crowdhide.netdp.cycle_privacy import cycle_profile
    from crowdhide.netdp.walk_pld import pld_from_profile

    v = check_int("observer", observer, low=0, high=check_int("n", n, low=2) - 1)
    idx = visit_index(np.asarray(holders, dtype=np.int64), n=n)
    owner, m = idx.cycle_lengths()
    r = m[owner == v] - 1
    r = r[r > 0]
    if r.size == 0:
        return 0.0
    lengths, counts = np.unique(r, return_counts=True)
    plds = []
    for length in lengths:
        size = 64
        while True:
            grid = np.arange(size + 1) * step
            prof = cycle_profile(
                grid, intermediates=int(length), p=1.0 / (n - 1), mechanism=mechanism
            )
            if prof[-1] < 1e-30 or size > 2**15:
                break
            size *= 2
        plds.append(pld_from_profile(prof, step=step))
    row = counts.astype(np.float64)[None, :]
    return float(observer_epsilons(row, plds, delta=delta, accelerated=False)[0])


def _known_peer_bins(h_arr: IntArray, idx: VisitIndex, n: int, ratio: float) -> dict[str, Any]:
    """Cycles binned by (length group, known positions, u's certain positions).

    In each cycle v knows who sent it the token (the last intermediate) and to whom it sent
    the token at its previous visit (the first intermediate, except in the first cycle).
    """
    owner, m = idx.cycle_lengths()
    end = idx.times  # 1-based receipt times
    start = end - m  # previous receipt (0 for the first cycle)
    r = m - 1
    live = r >= 1
    owner, r, end, start = owner[live], r[live], end[live], start[live]
    kp = 1 + ((r >= 2) & (start > 0)).astype(np.int64)
    group = _group_lengths(r, ratio)
    cyc = np.arange(r.size)
    two = kp == 2
    ent_c = np.concatenate([cyc, cyc[two]])
    ent_u = np.concatenate([h_arr[end - 2], h_arr[start[two]]])
    ukey, f_count = np.unique(ent_c * n + ent_u, return_counts=True)
    e_cyc, e_u = ukey // n, ukey % n
    base_keys = np.stack([group, kp, np.zeros_like(kp)], axis=1)
    adj_keys = np.stack([group[e_cyc], kp[e_cyc], f_count], axis=1)
    all_keys, inv = np.unique(np.concatenate([base_keys, adj_keys]), axis=0, return_inverse=True)
    inv = inv.ravel()
    # Dominating profile per bin: largest length (participation), smallest (noise).
    specs: list[dict[str, int] | None] = []
    for key in all_keys:
        members = r[(group == key[0]) & (kp == key[1])]
        lo, hi = int(members.min()), int(members.max())
        specs.append(
            {
                "intermediates": hi,
                "hidden": hi - int(key[1]),
                "certain": int(key[2]),
                "noise_terms": lo,
            }
        )
    return {
        "owner": owner,
        "cycles": r.size,
        "e_cyc": e_cyc,
        "e_u": e_u,
        "base_bin": inv[: r.size],
        "adj_bin": inv[r.size :],
        "specs": specs,
    }


def _known_peer_counts(bins: dict[str, Any], n: int) -> tuple[FloatArray, IntArray, FloatArray]:
    """Bin counts of every observer's base row and of every adjacent pair's own row."""
    owner, e_cyc, e_u = bins["owner"], bins["e_cyc"], bins["e_u"]
    base_bin, adj_bin = bins["base_bin"], bins["adj_bin"]
    base_counts = np.zeros((n, len(bins["specs"])))
    np.add.at(base_counts, (owner, base_bin), 1.0)
    pairs, pair_row = np.unique(owner[e_cyc] * n + e_u, return_inverse=True)
    pair_counts = base_counts[pairs // n].copy()
    np.add.at(pair_counts, (pair_row, base_bin[e_cyc]), -1.0)
    np.add.at(pair_counts, (pair_row, adj_bin), 1.0)
    return base_counts, pairs, pair_counts


def _known_peer_summary(
    base_eps: FloatArray, pairs: IntArray, pair_eps: FloatArray, n: int
) -> dict[str, float]:
    plain_pairs = (n - 1) - np.bincount(pairs // n, minlength=n)
    has_plain = plain_pairs > 0  # an observer with none adds nothing (its ε may be inf: 0·inf)
    plain = float(np.sum(base_eps[has_plain] * plain_pairs[has_plain]))
    mean = (plain + float(pair_eps.sum())) / (n * (n - 1))
    candidates_worst = [float(base_eps[has_plain].max())] if has_plain.any() else [0.0]
    candidates_best = [float(base_eps[has_plain].min())] if has_plain.any() else [math.inf]
    if pair_eps.size:
        candidates_worst.append(float(pair_eps.max()))
        candidates_best.append(float(pair_eps.min()))
    return {
        "network_mean": mean,
        "network_worst": max(candidates_worst),
        "network_best": min(candidates_best),
    }


def account_walk_known_peers(
    holders: npt.ArrayLike,
    *,
    n: int,
    mechanism: CycleMechanism,
    delta: float,
    resolution: int = 4,
    group_ratio: float = 0.0,
) -> RealisedWalkReport:
    """Per-pair accounting when peers are known (the view of Eq. 1 / App. G of Cyffers &
    Bellet), realised walk.

    In each cycle v knows who sent it the token (the last intermediate) and to whom it sent
    the token at its previous visit (the first intermediate, except in the first cycle). For
    the pair (u, v), a cycle where u holds ``f`` of these known positions costs the mixture
    ``Σ_j P(B(hidden, p) = j) δ_{M, f + j}`` (no subsampling credit for the sure
    participations); a cycle where u holds none keeps the subsampling bound over the
    ``hidden`` unknown positions. Pairs never adjacent share v's base composition; each
    adjacent pair (O(T) of them) gets its own row, so this is meant for moderate n.
    ``observer_epsilon`` is v's base value; ``details["adjacent_pairs"]`` holds
    ``(v, u, ε)`` of the adjacent pairs; the summary covers all ordered pairs.

    Examples
    --------
    >>> walk = complete_walk(n=15, steps=600, rng=1)
    >>> mech = CycleMechanism(kind="gaussian", noise_multiplier=20.0)
    >>> hidden = account_walk(walk, n=15, mechanism=mech, delta=1e-6)
    >>> known = account_walk_known_peers(walk, n=15, mechanism=mech, delta=1e-6)
    >>> bool(known.summary["network_worst"] >= hidden.summary["network_worst"])
    True
    """
    h_arr = np.asarray(holders, dtype=np.int64)
    n = check_int("n", n, low=3)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    res = check_int("resolution", resolution, low=1)
    ratio = check_real("group_ratio", group_ratio, low=0.0)
    idx = visit_index(h_arr, n=n)
    bins = _known_peer_bins(h_arr, idx, n, ratio)
    weights = np.bincount(
        np.concatenate([bins["base_bin"], bins["adj_bin"]]), minlength=len(bins["specs"])
    )
    step, plds = cycle_plds(
        bins["specs"],
        weights.astype(np.float64),
        p=1.0 / (n - 1),
        mechanism=mechanism,
        resolution=res,
    )
    base_counts, pairs, pair_counts = _known_peer_counts(bins, n)
    eps_all = observer_epsilons(np.vstack([base_counts, pair_counts]), plds, delta=d)
    base_eps, pair_eps = eps_all[:n], eps_all[n:]
    local = _local_epsilons(idx, mechanism, d)
    summary = {**_known_peer_summary(base_eps, pairs, pair_eps, n), **_summary(local, "local")}
    return _report(
        "realised_walk_known_peers",
        steps=int(h_arr.size),
        n=n,
        colluders=1,
        delta=d,
        observer=base_eps,
        advanced=np.full(n, np.nan),
        local=local,
        summary=summary,
        details={
            "lattice_step": step,
            "curve_groups": len(bins["specs"]),
            "adjacent_pairs": np.stack([pairs // n, pairs % n, pair_eps], axis=1),
            "known_peers": True,
            "length_grouping": "exact" if ratio == 0.0 else "dominating",
        },
    )
