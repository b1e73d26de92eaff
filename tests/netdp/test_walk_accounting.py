"""Tests of crowdhide.netdp.walk_accounting: per-pair accounting of realised walks against
brute-force enumeration, the dp_accounting reference path and the closed-form theorems."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy.stats import binom

from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.netdp.cycle_privacy import CycleMechanism
from crowdhide.netdp.guarantees import complete_sum_guarantee
from crowdhide.netdp.views import network_dp_curve
from crowdhide.netdp.walk_accounting import (
    RealisedWalkReport,
    account_sampled_walk,
    account_walk,
    account_walk_known_peers,
    authors_code_pair_losses,
    observer_epsilon_reference,
)
from crowdhide.netdp.walks import complete_walk

GAUSS = CycleMechanism(kind="gaussian", noise_multiplier=3.0)


def _rr_one(x: int, eps0: float) -> float:
    return math.exp(eps0) / (1 + math.exp(eps0)) if x == 1 else 1 / (1 + math.exp(eps0))


def _brute_force_view(cycles: list[int], x_u: int, x_w: int, eps0: float) -> dict[tuple, float]:
    """n = 3 (v = 0, u = 1, w = 2): v's view = number of ones added in each cycle."""
    total: dict[tuple, float] = {}
    r_all = sum(cycles)
    for holders in itertools.product([1, 2], repeat=r_all):
        for outs in itertools.product([0, 1], repeat=r_all):
            prob = 0.5**r_all
            for h, o in zip(holders, outs, strict=True):
                p1 = _rr_one(x_u if h == 1 else x_w, eps0)
                prob *= p1 if o == 1 else 1 - p1
            view, pos = [], 0
            for r in cycles:
                view.append(sum(outs[pos : pos + r]))
                pos += r
            total[tuple(view)] = total.get(tuple(view), 0.0) + prob
    return total


def test_per_pair_accountant_matches_and_bounds_brute_force() -> None:
    eps0 = 1.0
    cycles = [2, 2, 1]
    brute = network_dp_curve(
        _brute_force_view(cycles, 0, 1, eps0), _brute_force_view(cycles, 1, 1, eps0)
    )
    # decomposition into independent cycles (binomial pairs) matches brute force
    parts = []
    for r in cycles:
        pi0 = 0.5 * (_rr_one(0, eps0) + _rr_one(1, eps0))
        pi1 = 0.5 * (_rr_one(1, eps0) + _rr_one(1, eps0))
        ks = np.arange(r + 1)
        parts.append((DiscretePairCurve(binom.logpmf(ks, r, pi0), binom.logpmf(ks, r, pi1)), 1))
    composed = compose_curves(parts, value_discretization_interval=1e-5)
    for delta in (1e-2, 1e-3):
        assert composed.epsilon(delta) == pytest.approx(brute.epsilon(delta), abs=2e-3)
    # the certified accountant is an upper bound on the realised-walk ground truth
    walk = np.array([1, 2, 0, 2, 1, 0, 1, 0])  # v = 0 visits at steps 3, 6, 8 -> r = 2, 2, 1
    res = account_walk(walk, n=3, mechanism=CycleMechanism(kind="krr", eps0=eps0), delta=1e-3)
    assert res.observer_epsilon[0] >= brute.epsilon(1e-3) - 1e-9


def test_audit_sum_network_beats_local_and_respects_colluders() -> None:
    walk = complete_walk(n=30, steps=1500, rng=5)
    mech = CycleMechanism(kind="gaussian", noise_multiplier=30.0)
    single = account_walk(walk, n=30, mechanism=mech, delta=1e-6)
    pair = account_walk(walk, n=30, mechanism=mech, delta=1e-6, colluders=2)
    assert single.summary["network_worst"] < single.summary["local_best"]
    assert single.summary["network_worst"] <= single.summary["network_advanced_best"]
    assert pair.colluders == 2
    assert 0 < pair.summary["network_mean"] < pair.summary["local_best"]


def test_complete_sum_guarantee_bounds_realised_walk_accounting() -> None:
    n, t, eps0, d = 100, 5_000, 0.5, 1e-6
    thm = complete_sum_guarantee(n=n, steps=t, eps0=eps0, delta0=d, delta_slack=d, delta_hat=d)
    sigma = math.sqrt(2 * math.log(1.25 / d)) / eps0
    res = account_walk(
        complete_walk(n=n, steps=t, rng=6),
        n=n,
        delta=thm.privacy.delta,
        mechanism=CycleMechanism(kind="gaussian", noise_multiplier=sigma),
    )
    assert res.summary["network_worst"] <= thm.privacy.epsilon


def test_fft_composition_matches_grouped_compose_curves() -> None:
    walk = complete_walk(n=12, steps=240, rng=7)
    mech = CycleMechanism(kind="gaussian", noise_multiplier=5.0)
    res = account_walk(walk, n=12, mechanism=mech, delta=1e-6)
    step = res.details["lattice_step"]
    for v in (0, 5):
        ref = observer_epsilon_reference(
            walk, n=12, observer=v, mechanism=mech, delta=1e-6, step=step
        )
        assert res.observer_epsilon[v] == pytest.approx(ref, abs=3 * step + 1e-3)


def test_known_peers_accountant_bounds_brute_force() -> None:
    eps0 = 1.0
    # v = 0 receives at steps 4 and 8; cycle 1 = [2, 1, 2] (last known), cycle 2 = [1, 2, 1]
    # (first and last known: both u = 1); hidden: cycle 1 positions 0-1, cycle 2 position 1
    walk = np.array([2, 1, 2, 0, 1, 2, 1, 0])

    def views(x_u: int) -> dict[tuple[int, int], float]:
        out: dict[tuple[int, int], float] = {}
        for hid in itertools.product([1, 2], repeat=3):
            holders = [hid[0], hid[1], 2, 1, hid[2], 1]
            for outs in itertools.product([0, 1], repeat=6):
                prob = 0.5**3
                for h, o in zip(holders, outs, strict=True):
                    p1 = _rr_one(x_u if h == 1 else 1, eps0)
                    prob *= p1 if o == 1 else 1 - p1
                key = (sum(outs[:3]), sum(outs[3:]))
                out[key] = out.get(key, 0.0) + prob
        return out

    brute = network_dp_curve(views(0), views(1)).epsilon(1e-3)
    res = account_walk_known_peers(
        walk, n=3, mechanism=CycleMechanism(kind="krr", eps0=eps0), delta=1e-3
    )
    pairs = res.details["adjacent_pairs"]
    row = pairs[(pairs[:, 0] == 0) & (pairs[:, 1] == 1)]
    assert row.shape[0] == 1
    assert brute > 1.0
    assert row[0, 2] >= brute - 1e-9


def test_grouped_audit_is_a_certificate_close_to_per_length() -> None:
    walk = complete_walk(n=60, steps=6000, rng=3)
    exact = account_walk(walk, n=60, mechanism=GAUSS, delta=1e-6)
    grouped = account_walk(walk, n=60, mechanism=GAUSS, delta=1e-6, group_ratio=0.05)
    assert exact.details["length_grouping"] == "exact"
    assert grouped.details["length_grouping"] == "dominating"
    assert grouped.details["curve_groups"] < exact.details["curve_groups"]
    for key in ("network_mean", "network_worst"):
        assert exact.summary[key] * 0.995 <= grouped.summary[key] <= exact.summary[key] * 1.1


def test_report_holds_the_worst_pair_certificate() -> None:
    res = account_sampled_walk(n=12, steps=300, mechanism=GAUSS, delta=1e-6, rng=4)
    assert isinstance(res, RealisedWalkReport)
    assert res.privacy.epsilon == res.summary["network_worst"] == float(res.observer_epsilon.max())
    assert res.privacy.is_certificate
    assert res.privacy.source == "realised_walk_hidden_path"
    same = account_walk(complete_walk(n=12, steps=300, rng=4), n=12, mechanism=GAUSS, delta=1e-6)
    assert np.array_equal(res.observer_epsilon, same.observer_epsilon)
    known = account_sampled_walk(
        n=12, steps=300, mechanism=GAUSS, delta=1e-6, rng=4, known_peers=True
    )
    assert known.privacy.source == "realised_walk_known_peers"
    with pytest.raises(ValueError, match="colluders must be 1"):
        account_sampled_walk(
            n=12, steps=300, mechanism=GAUSS, delta=1e-6, known_peers=True, colluders=2
        )


def test_invalid_holders() -> None:
    with pytest.raises(ValueError, match="holders"):
        account_walk([0, 5], n=3, mechanism=CycleMechanism(kind="krr", eps0=1.0), delta=1e-3)


def _authors_pair_loss(h: list[int], n: int, eps0: float, delta: float, v: int, u: int) -> float:
    """The authors' Fig. 1b accounting of one pair, written as a plain loop over receipts."""
    last_time, last_send = [0] * n, [0] * n
    terms = []
    for i in range(1, len(h)):
        w = h[i]
        m = i - last_time[w]
        partners = [last_send[w], h[i - 1]]
        last_send[h[i - 1]] = w
        last_time[w] = i
        if w != v:
            continue
        mass = eps0 / math.sqrt(m)
        flags = partners.count(u)
        if flags == 0:
            terms.append(math.log1p(-math.expm1(m * math.log1p(-1 / n)) * math.expm1(mass)))
        else:
            terms.append(mass if flags == 1 else 2 * mass)
    if not terms:
        return 0.0
    e = np.array(terms)
    d_k = max(len(terms) * delta, 1e-300)
    sq = float(np.sum(e**2))
    drift = float(np.sum(e * np.tanh(e / 2)))
    use_log = math.e + math.sqrt(sq) / d_k > 1 / d_k
    second = math.sqrt(2 * sq * math.log(1 / d_k if use_log else math.e + math.sqrt(sq) / d_k))
    return min(drift + second, float(e.sum()))


def test_authors_code_pair_losses_match_a_plain_loop() -> None:
    n, eps0, delta = 6, 0.3, 1e-6
    walk = np.r_[0, complete_walk(n=n, steps=120, rng=2)[1:]]
    pairs, local = authors_code_pair_losses(walk, n=n, eps0=eps0, delta=delta)
    assert pairs.shape == (n, n)
    assert np.all(np.isnan(np.diag(pairs)))
    for v in range(n):
        for u in range(n):
            if u != v:
                ref = _authors_pair_loss(walk.tolist(), n, eps0, delta, v, u)
                assert pairs[v, u] == pytest.approx(ref, rel=1e-9)
    receipts = np.bincount(walk[1:], minlength=n)
    assert np.allclose(
        local,
        np.sqrt(2 * receipts * math.log(1 / delta)) * eps0 + receipts * eps0 * math.expm1(eps0),
    )


def test_audit_needs_three_users() -> None:
    # two users: the subsampling probability is 1 (was a bare "math domain error")
    with pytest.raises(ValueError, match="n must be >= 3, got 2"):
        account_sampled_walk(n=2, steps=50, mechanism=GAUSS, delta=1e-6, rng=0)
