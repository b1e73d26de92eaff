"""Tests of crowdhide.netdp: protocols, views, guarantees, per-pair accountant."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.netdp import (
    coalition_view,
    complete_histogram,
    complete_sum,
    debias_published,
    ring_histogram,
    ring_noise_additions,
    ring_sum,
    user_view,
    visit_index,
)
from crowdhide.netdp import guarantees as g
from crowdhide.netdp.walk_accounting import (
    CycleMechanism,
    account_walk,
    compose_lattice_plds,
    cycle_profile,
    gaussian_epsilon,
    gaussian_log_delta,
    lattice_pld_from_profile,
)
from crowdhide.netdp.walks import complete_walk, contribution_rank
from tests.cli_helpers import run_cli


# ---------------------------------------------------------------- protocols: unbiasedness
def _mean_err(samples: np.ndarray) -> float:
    return float(np.mean(samples))


@pytest.mark.parametrize("noise", ["every_n_minus_1", "distributed", "distributed_published"])
def test_ring_sum_unbiased_and_noise_std(noise: str) -> None:
    rng = np.random.default_rng(1)
    vals = rng.uniform(0, 1, (3, 10))
    runs = [
        ring_sum(values=vals, sigma=2.0, rng=rng, noise=noise, record=False)  # type: ignore[arg-type]
        for _ in range(2000)
    ]
    err = np.array([r.estimate - r.target for r in runs])
    std = runs[0].noise_std
    assert abs(err.mean()) < 5 * std / math.sqrt(err.size)
    assert abs(err.std() / std - 1) < 0.1
    if noise == "every_n_minus_1":
        assert runs[0].noise_additions == ring_noise_additions(n=10, rounds=3) == 4
        assert math.floor(3 * 10 / 9) == 3  # the paper's ⌊Kn/(n−1)⌋ is wrong


def test_ring_distributed_noise_per_cycle() -> None:
    # corrected Remark 1: the n−1 others of a lap add exactly σ² of variance; published: less
    n, s = 10, 1.0
    assert math.isclose((n - 1) * (s / math.sqrt(n - 1)) ** 2, s**2)
    assert (n - 1) * (s / math.sqrt(n)) ** 2 < s**2


def test_complete_sum_unbiased_with_cap() -> None:
    rng = np.random.default_rng(2)
    vals = rng.uniform(0, 1, (20, 3))
    runs = [
        complete_sum(values=vals, steps=100, sigma=1.0, rng=rng, cap=3, record=False)
        for _ in range(1500)
    ]
    err = np.array([r.estimate - r.target for r in runs])
    assert abs(err.mean()) < 5 * 10 / math.sqrt(err.size)
    assert all(r.noise_additions == 100 for r in runs)
    assert sum(r.fake_contributions for r in runs) > 0


def test_histograms_corrected_debiasing_unbiased_published_biased() -> None:
    rng = np.random.default_rng(3)
    items = rng.integers(0, 3, (4, 12))
    est, pub = [], []
    for _ in range(1500):
        run = ring_histogram(values=items, domain_size=3, gamma=0.6, rng=rng, record=False)
        est.append(run.estimate - run.target)
        pub.append(debias_published(run.raw, gamma=0.6) - run.target)
    est_a, pub_a = np.array(est), np.array(pub)
    se = est_a.std(axis=0) / math.sqrt(len(est))
    assert np.all(np.abs(est_a.mean(axis=0)) < 5 * se)
    assert np.any(np.abs(pub_a.mean(axis=0)) > 20 * se)
    comp = [
        complete_histogram(
            values=items[0], domain_size=3, steps=60, gamma=0.5, rng=rng, cap=4, record=False
        )
        for _ in range(1500)
    ]
    c_err = np.array([r.estimate - r.target for r in comp])
    c_se = c_err.std(axis=0) / math.sqrt(len(comp))
    assert np.all(np.abs(c_err.mean(axis=0)) < 5 * c_se)


def test_views_and_coalitions() -> None:
    run = ring_sum(values=np.ones((3, 4)), sigma=0.0, rng=0)
    assert run.transcript is not None
    view = user_view(run.transcript, 2)
    assert view.received.tolist() == [2.0, 6.0, 10.0]  # K receipts
    assert view.senders is not None
    assert view.senders.tolist() == [1, 1, 1]
    run_c = complete_sum(values=np.ones(5), steps=50, sigma=0.0, rng=0)
    assert run_c.transcript is not None
    hidden = user_view(run_c.transcript, 0)
    assert hidden.senders is None
    assert hidden.receivers is None
    known = coalition_view(run_c.transcript, [0, 1], known_peers=True)
    assert known.senders is not None
    assert set(run_c.transcript.holders[known.times]) <= {0, 1}
    from crowdhide.netdp import check_coalition

    with pytest.raises(ValueError, match="must not contain the protected user"):
        check_coalition([1, 2], n=5, target=2)


def test_walk_statistics() -> None:
    walk = complete_walk(n=50, steps=200_000, rng=4)
    counts = visit_index(walk, n=50).counts()
    assert abs(counts.mean() - 4000) < 1e-9
    assert abs(counts.var() / (200_000 * (1 / 50) * (49 / 50)) - 1) < 0.5
    _owner, m = visit_index(walk, n=50).cycle_lengths()
    assert abs(m[m < 10**6].mean() - 50) < 2.0  # return time ~ G(1/n)
    assert contribution_rank([0, 0, 1, 0]).tolist() == [0, 1, 0, 2]


# ------------------------------------------------------- accountant vs brute force (exact)
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
    from crowdhide.netdp import network_dp_curve

    brute = network_dp_curve(
        _brute_force_view(cycles, 0, 1, eps0), _brute_force_view(cycles, 1, 1, eps0)
    )
    # decomposition into independent cycles (binomial pairs) matches brute force
    parts = []
    for r in cycles:
        from scipy.stats import binom

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


def test_gaussian_cycle_certificate_bounds_exact_mixture() -> None:
    # one cycle, r = 4 intermediates, n = 5 users (p = 1/4), σ/Δ = 2; exact mixture for the
    # dataset (others 0; u: 0 vs 1) computed numerically must be below the certificate.
    from scipy.stats import binom, norm

    r, p, s = 4, 0.25, 2.0 * math.sqrt(4)
    z = np.linspace(-40, 50, 400_001)
    dz = z[1] - z[0]
    q_dens = norm.pdf(z, 0, s)
    p_dens = sum(binom.pmf(j, r, p) * norm.pdf(z, j, s) for j in range(r + 1))
    mech = CycleMechanism(kind="gaussian", noise_multiplier=2.0)
    for eps in (0.0, 0.05, 0.2):
        exact = max(
            np.sum(np.maximum(p_dens - math.exp(eps) * q_dens, 0)) * dz,
            np.sum(np.maximum(q_dens - math.exp(eps) * p_dens, 0)) * dz,
        )
        cert = cycle_profile([eps], intermediates=r, p=p, mechanism=mech)[0]
        assert cert >= exact * (1 - 1e-6)


def test_lattice_composition_matches_dp_accounting() -> None:
    from dp_accounting.pld import privacy_loss_distribution as pld_mod

    step = 0.005
    prof = np.exp(gaussian_log_delta(np.arange(0, 1200) * step, 0.2))
    pld = lattice_pld_from_profile(prof, step=step)
    ours = compose_lattice_plds([[50], [10]], [pld], delta=1e-6)
    for count, value in zip((50, 10), ours, strict=True):
        exact = gaussian_epsilon(mu=0.2 * math.sqrt(count), delta=1e-6)
        ref = pld_mod.from_gaussian_mechanism(1 / 0.2, value_discretization_interval=1e-4)
        ref_eps = ref.self_compose(count).get_epsilon_for_delta(1e-6)
        assert exact - 1e-9 <= value <= exact + 0.03
        assert ref_eps == pytest.approx(value, abs=0.03)


def test_audit_sum_network_beats_local_and_respects_colluders() -> None:
    walk = complete_walk(n=30, steps=1500, rng=5)
    mech = CycleMechanism(kind="gaussian", noise_multiplier=30.0)
    single = account_walk(walk, n=30, mechanism=mech, delta=1e-6)
    pair = account_walk(walk, n=30, mechanism=mech, delta=1e-6, colluders=2)
    assert single.summary["network_worst"] < single.summary["local_best"]
    assert single.summary["network_worst"] <= single.summary["network_advanced_best"]
    assert pair.colluders == 2
    assert 0 < pair.summary["network_mean"] < pair.summary["local_best"]


# ------------------------------------------------------------------------- guarantees
def test_theorem1_upper_bounds_exact_ring_loss() -> None:
    # ring: each lap, u's contribution is hidden by one σ_loc noise -> exact Gaussian
    # composition of K mechanisms with shift Δ/σ_loc; Theorem 1 must be above it.
    for eps0, k in ((0.5, 10), (0.1, 100), (0.9, 3)):
        delta0 = 1e-6
        sigma = math.sqrt(2 * math.log(1.25 / delta0)) / eps0
        thm = g.ring_sum_guarantee(n=50, rounds=k, eps0=eps0, delta0=delta0, delta_slack=1e-6)
        exact = gaussian_epsilon(mu=math.sqrt(k) / sigma, delta=thm.delta)
        assert thm.epsilon >= exact


def test_published_forms_fail() -> None:
    kw = {
        "n": 100,
        "steps": 10**4,
        "eps0": 0.5,
        "delta0": 1e-7,
        "delta_slack": 1e-7,
        "delta_hat": 1e-7,
        "integer_cycles": False,
    }
    corrected = g.complete_sum_guarantee(**kw)  # type: ignore[arg-type]
    published = g.complete_sum_guarantee(form="published", **kw)  # type: ignore[arg-type]
    # the printed second term undercuts advanced composition of its own per-cycle ε
    k = corrected.details["cycles"]
    ec = corrected.details["eps_cycle"]
    adv = math.sqrt(2 * k * math.log(1e7)) * ec + k * ec * math.expm1(ec)
    assert published.epsilon < adv
    assert corrected.epsilon == pytest.approx(min(adv, k * ec))
    # Lemma 2 without the factor 2 is below the advanced composition it claims
    l_pub = g.spotted_contributions_guarantee(
        n=2000, contributions=30.36, eps0=0.1, delta_slack=1e-6, delta_tilde=1e-6, form="published"
    )
    ks = l_pub.details["spotted_bound"]
    assert l_pub.epsilon < math.sqrt(2 * ks * math.log(1e6)) * 0.1 + ks * 0.1 * math.expm1(0.1)
    # Theorem 6: constant 21 is below the pre-simplification per-cycle bound for some m
    d0, eps, n = 1e-6, 1.0, 10**5
    m = np.arange(math.ceil(196 * math.log(4 / d0)), n + 1)
    x = 14 * np.sqrt(math.log(4 / d0) / m) * eps
    pre = 1.5 * m / n * np.expm1(x)
    assert np.any(21 * np.sqrt(math.log(4 / d0) * m) / n * eps < pre)
    assert np.all(
        g.HISTOGRAM_CYCLE_CONSTANT * np.sqrt(math.log(4 / d0) / n) * eps >= np.log1p(m / n * np.expm1(x))
    )
    # Theorem 2: printed γ is inverted (γ -> 1, no utility)
    t2p = g.ring_histogram_guarantee(
        n=10**4,
        rounds=5,
        epsilon=0.1,
        delta=1e-6,
        delta_slack=1e-6,
        domain_size=10,
        form="published",
    )
    t2c = g.ring_histogram_guarantee(n=10**4, rounds=5, epsilon=0.1, delta=1e-6, delta_slack=1e-6, domain_size=10)
    assert t2p.details["gamma"] > 0.995 > t2c.details["gamma"]
    assert not t2p.valid


def test_theorem3_bounds_realised_walk_audit() -> None:
    n, t, eps0, d = 100, 5_000, 0.5, 1e-6
    thm = g.complete_sum_guarantee(n=n, steps=t, eps0=eps0, delta0=d, delta_slack=d, delta_hat=d)
    sigma = math.sqrt(2 * math.log(1.25 / d)) / eps0
    res = account_walk(
        complete_walk(n=n, steps=t, rng=6),
        n=n,
        delta=thm.delta,
        mechanism=CycleMechanism(kind="gaussian", noise_multiplier=sigma),
    )
    assert res.summary["network_worst"] <= thm.epsilon


def test_conditions_enforced() -> None:
    with pytest.raises(ValueError, match="steps must be >= 3 n ln"):
        g.visit_bound(steps=20000, n=2000, delta_hat=1e-6, method="chernoff")
    assert g.visit_bound(steps=20000, n=2000, delta_hat=1e-6)[1] == "binomial"
    t4 = g.complete_sgd_guarantee(n=100, steps=100, eps0=0.9, delta=0.6, delta_hat=1e-3)
    assert not t4.valid
    with pytest.raises(ValueError, match="not robust to collusion"):
        g.ring_sum_guarantee(n=10, rounds=2, eps0=0.1, delta0=1e-6, delta_slack=1e-6, colluders=2)
    with pytest.raises(ValueError, match="sigma must be >="):
        g.sgd_network_rdp(alpha=10, contributions=1, n=10, lipschitz=1, sigma=1)
    six = g.complete_histogram_guarantee(n=1000, steps=10**5, eps0=1.0, delta0=1e-6, delta_slack=1e-6, delta_hat=1e-6)
    assert not six.valid
    assert any("196" in v for v in six.violations)
    col = g.complete_sum_guarantee(
        n=10**4, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7, colluders=10
    )
    alone = g.complete_sum_guarantee(
        n=10**3, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7
    )
    assert col.epsilon == pytest.approx(alone.epsilon)


def test_sgd_calibration_roundtrip_and_anchor() -> None:
    sigma = g.sgd_calibrate_sigma(n=2000, contributions=12, epsilon=1.0, delta=1e-6)
    eps, alpha = g.sgd_network_epsilon(
        n=2000, contributions=12, sigma=sigma, lipschitz=1.0, delta=1e-6
    )
    assert eps <= 1.0
    assert eps == pytest.approx(1.0, rel=1e-6)
    assert alpha > 1
    code = g.code_sigmas(n=2000, steps=20000, epsilon=1.0, delta=1e-6)
    assert code["local"] == pytest.approx(117.2, abs=0.05)
    assert code["network"] == pytest.approx(27.46, abs=0.01)
    assert code["central"] == pytest.approx(17.42, abs=0.01)


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (lambda: ring_sum(values=np.ones((2, 1)), sigma=1.0), "shape"),
        (lambda: ring_sum(values=np.ones((2, 3)), sigma=-1.0), "sigma"),
        (lambda: complete_sum(values=np.ones(3), steps=0, sigma=1.0), "steps"),
        (lambda: ring_histogram(values=np.full((2, 3), 5), domain_size=3, gamma=0.5), "lie in"),
        (
            lambda: complete_histogram(values=np.zeros(3, int), domain_size=2, steps=5, gamma=1.0),
            "gamma",
        ),
        (
            lambda: g.complete_sum_guarantee(n=1, steps=10, eps0=0.1, delta0=0.1, delta_slack=0.1, delta_hat=0.1),
            "n must be",
        ),
        (
            lambda: g.complete_sum_guarantee(
                n=10, steps=10, eps0=0.1, delta0=0.1, delta_slack=0.1, delta_hat=0.1, form="printed"
            ),
            "form",
        ),  # type: ignore[arg-type]
        (lambda: CycleMechanism(kind="laplace"), "kind"),  # type: ignore[arg-type]
        (
            lambda: account_walk(
                [0, 5], n=3, mechanism=CycleMechanism(kind="krr", eps0=1.0), delta=1e-3
            ),
            "holders",
        ),
    ],
)
def test_invalid_inputs(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        call()


# ------------------------------------------------------------------------------- CLI
def test_cli_epsilon_calibrate_audit(capsys: pytest.CaptureFixture[str]) -> None:
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "complete",
        "--task",
        "sum",
        "--n",
        "10000",
        "--steps",
        "1000000",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--json",
    )
    assert res.code == 0
    out = res.json()
    assert out["theorem"] == "theorem3"
    assert out["epsilon"] < out["ldp_epsilon"]
    res = run_cli(
        capsys,
        "netdp",
        "calibrate",
        "--topology",
        "complete",
        "--task",
        "sgd",
        "--n",
        "2000",
        "--steps",
        "20000",
        "--epsilon",
        "1",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert 15 < res.json()["sigma"] < 25
    res = run_cli(
        capsys,
        "netdp",
        "audit",
        "--topology",
        "complete",
        "--n",
        "20",
        "--steps",
        "500",
        "--eps0",
        "0.5",
        "--delta",
        "1e-6",
        "--json",
    )
    assert res.code == 0
    assert res.json()["network_worst"] < res.json()["local_mean"] + 10
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "ring",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
    )
    assert res.code == 2
    assert "rounds" in res.err
    res = run_cli(
        capsys,
        "netdp",
        "epsilon",
        "--topology",
        "torus",
        "--task",
        "sum",
        "--n",
        "10",
        "--eps0",
        "0.1",
        "--delta",
        "1e-7",
        "--rounds",
        "3",
    )
    assert res.code == 2


@pytest.mark.slow
@pytest.mark.parametrize("name", ["seed001-fig1", "seed001-fig2", "seed001-fig3"])
def test_experiments_quick(tmp_path, name: str) -> None:  # type: ignore[no-untyped-def]
    from crowdhide.experiments._registry import run_experiment

    result = run_experiment(name, tmp_path, seed=0, quick=True)
    assert result.files
    assert all(f.exists() for f in result.files)
    assert result.comparison


def test_theorem2_per_receipt_above_exact_shuffled_rr() -> None:
    # one lap of the ring hides u's RR output among n − 1 others (dataset: others all 0);
    # the exact count distribution is a lower bound on the worst case, Theorem 2's per-receipt
    # ε must be above it.
    from scipy.stats import binom

    n, eps, delta = 1200, 0.2, 1e-3
    thm = g.ring_histogram_guarantee(n=n, rounds=1, epsilon=eps, delta=delta, delta_slack=1e-9, domain_size=2)
    gamma = thm.details["gamma"]
    ones = np.arange(n + 1)
    base = binom.pmf(ones[:-1], n - 1, gamma / 2)
    p_one_0, p_one_1 = gamma / 2, 1 - gamma / 2
    p = np.zeros(n + 1)
    q = np.zeros(n + 1)
    p[:-1] += (1 - p_one_0) * base
    p[1:] += p_one_0 * base
    q[:-1] += (1 - p_one_1) * base
    q[1:] += p_one_1 * base
    exact = DiscretePairCurve.from_probabilities(p, q).epsilon(delta)
    assert thm.valid
    assert eps >= exact


def test_sgd_numeric_never_above_closed_form() -> None:
    # Remark 5: the numerical α-optimisation can only improve on the closed form (Eq. 7)
    for n, t, eps0 in ((1000, 10**7, 0.5), (2000, 4 * 10**6, 0.9)):
        thm = g.complete_sgd_guarantee(n=n, steps=t, eps0=eps0, delta=1e-6, delta_hat=1e-6)
        sigma = math.sqrt(8 * math.log(1.25 / 1e-6)) / eps0
        numeric, _ = g.sgd_network_epsilon(
            n=n, contributions=thm.details["visit_bound"], sigma=sigma, lipschitz=1.0, delta=1e-6
        )
        assert numeric <= thm.epsilon + 1e-9


def test_fig2_data_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:  # type: ignore[no-untyped-def]
    from crowdhide.experiments import seed001

    monkeypatch.setattr(seed001, "DATA", tmp_path / "missing.gz")
    x, y, source = seed001.load_houses(np.random.default_rng(0))
    assert x.shape == (20640, 8)
    assert set(np.unique(y)) == {-1.0, 1.0}
    assert "synthetic stand-in" in source
    assert "not found" in source
    assert np.allclose(np.linalg.norm(x, axis=1), 1.0)


def test_fft_composition_matches_grouped_compose_curves() -> None:
    from crowdhide.netdp.walk_accounting import observer_epsilon_reference

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
    from crowdhide.netdp import network_dp_curve
    from crowdhide.netdp.walk_accounting import account_walk_known_peers

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
