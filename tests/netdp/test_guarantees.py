"""Tests of crowdhide.netdp.guarantees and sgd_guarantees: corrected bounds above exact values,
published forms below what they claim, conditions enforced, calibration round trips."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from crowdhide.accounting import DiscretePairCurve, compose_curves
from crowdhide.accounting.composition import advanced_composition
from crowdhide.accounting.gaussian import gaussian_epsilon
from crowdhide.accounting.logmath import product_up
from crowdhide.netdp import guarantees as g
from crowdhide.netdp.guarantees import (
    HISTOGRAM_CYCLE_CONSTANT,
    WalkBound,
    central_sum_std,
    complete_histogram_guarantee,
    complete_sum_guarantee,
    compose_advanced,
    ldp_baseline,
    ring_histogram_guarantee,
    visit_bound,
)
from crowdhide.netdp.sgd_guarantees import (
    code_sigmas,
    complete_sgd_guarantee,
    sgd_calibrate_sigma,
    sgd_network_epsilon,
    sgd_network_rdp,
    sgd_utility_bound,
    spotted_contributions_guarantee,
)


def test_ring_sum_guarantee_upper_bounds_exact_ring_loss() -> None:
    # ring: each lap, u's contribution is hidden by one σ_loc noise -> exact Gaussian
    # composition of K mechanisms with shift Δ/σ_loc; Theorem 1 must be above it.
    for eps0, k in ((0.5, 10), (0.1, 100), (0.9, 3)):
        delta0 = 1e-6
        sigma = math.sqrt(2 * math.log(1.25 / delta0)) / eps0
        thm = g.ring_sum_guarantee(n=50, rounds=k, eps0=eps0, delta0=delta0, delta_slack=1e-6)
        exact = gaussian_epsilon(mu=math.sqrt(k) / sigma, delta=thm.privacy.delta)
        assert thm.privacy.epsilon >= exact


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
    assert published.privacy.epsilon < adv
    assert corrected.privacy.epsilon == pytest.approx(min(adv, k * ec))
    # Lemma 2 without the factor 2 is below the advanced composition it claims
    l_pub = spotted_contributions_guarantee(
        n=2000, contributions=30.36, eps0=0.1, delta_slack=1e-6, delta_tilde=1e-6, form="published"
    )
    ks = l_pub.details["spotted_bound"]
    assert l_pub.privacy.epsilon < math.sqrt(2 * ks * math.log(1e6)) * 0.1 + ks * 0.1 * math.expm1(
        0.1
    )
    # Theorem 6: constant 21 is below the pre-simplification per-cycle bound for some m
    d0, eps, n = 1e-6, 1.0, 10**5
    m = np.arange(math.ceil(196 * math.log(4 / d0)), n + 1)
    x = 14 * np.sqrt(math.log(4 / d0) / m) * eps
    pre = 1.5 * m / n * np.expm1(x)
    assert np.any(21 * np.sqrt(math.log(4 / d0) * m) / n * eps < pre)
    assert np.all(
        g.HISTOGRAM_CYCLE_CONSTANT * np.sqrt(math.log(4 / d0) / n) * eps
        >= np.log1p(m / n * np.expm1(x))
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
    t2c = g.ring_histogram_guarantee(
        n=10**4, rounds=5, epsilon=0.1, delta=1e-6, delta_slack=1e-6, domain_size=10
    )
    assert t2p.details["gamma"] > 0.995 > t2c.details["gamma"]
    assert not t2p.privacy.conditions_met


def test_conditions_enforced() -> None:
    with pytest.raises(ValueError, match="steps must be >= 3 n ln"):
        g.visit_bound(steps=20000, n=2000, delta_hat=1e-6, method="chernoff")
    assert g.visit_bound(steps=20000, n=2000, delta_hat=1e-6)[1] == "binomial"
    t4 = complete_sgd_guarantee(n=100, steps=100, eps0=0.9, delta=0.6, delta_hat=1e-3)
    assert not t4.privacy.conditions_met
    with pytest.raises(ValueError, match="not robust to collusion"):
        g.ring_sum_guarantee(n=10, rounds=2, eps0=0.1, delta0=1e-6, delta_slack=1e-6, colluders=2)
    with pytest.raises(ValueError, match="sigma must be >="):
        sgd_network_rdp(alpha=10, contributions=1, n=10, lipschitz=1, sigma=1)
    six = g.complete_histogram_guarantee(
        n=1000, steps=10**5, eps0=1.0, delta0=1e-6, delta_slack=1e-6, delta_hat=1e-6
    )
    assert not six.privacy.conditions_met
    assert any("196" in v for v in six.privacy.notes)
    col = g.complete_sum_guarantee(
        n=10**4, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7, colluders=10
    )
    alone = g.complete_sum_guarantee(
        n=10**3, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7
    )
    assert col.privacy.epsilon == pytest.approx(alone.privacy.epsilon)


def test_sgd_calibration_roundtrip_and_anchor() -> None:
    sigma = sgd_calibrate_sigma(n=2000, contributions=12, epsilon=1.0, delta=1e-6)
    eps, alpha = sgd_network_epsilon(
        n=2000, contributions=12, sigma=sigma, lipschitz=1.0, delta=1e-6
    )
    assert eps <= 1.0
    assert eps == pytest.approx(1.0, rel=1e-6)
    assert alpha > 1
    code = code_sigmas(n=2000, steps=20000, epsilon=1.0, delta=1e-6)
    assert code["local"] == pytest.approx(117.2, abs=0.05)
    assert code["network"] == pytest.approx(27.46, abs=0.01)
    assert code["central"] == pytest.approx(17.42, abs=0.01)


def test_ring_histogram_per_receipt_above_exact_shuffled_rr() -> None:
    # one lap of the ring hides u's RR output among n − 1 others (dataset: others all 0);
    # the exact count distribution is a lower bound on the worst case, Theorem 2's per-receipt
    # ε must be above it.
    from scipy.stats import binom

    n, eps, delta = 1200, 0.2, 1e-3
    thm = g.ring_histogram_guarantee(
        n=n, rounds=1, epsilon=eps, delta=delta, delta_slack=1e-9, domain_size=2
    )
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
    assert thm.privacy.conditions_met
    assert eps >= exact


def test_sgd_numeric_never_above_closed_form() -> None:
    # Remark 5: the numerical α-optimisation can only improve on the closed form (Eq. 7)
    for n, t, eps0 in ((1000, 10**7, 0.5), (2000, 4 * 10**6, 0.9)):
        thm = complete_sgd_guarantee(n=n, steps=t, eps0=eps0, delta=1e-6, delta_hat=1e-6)
        sigma = math.sqrt(8 * math.log(1.25 / 1e-6)) / eps0
        numeric, _ = sgd_network_epsilon(
            n=n, contributions=thm.details["visit_bound"], sigma=sigma, lipschitz=1.0, delta=1e-6
        )
        assert numeric <= thm.privacy.epsilon + 1e-9


def test_walk_bound_holds_a_privacy_statement() -> None:
    b = complete_sum_guarantee(
        n=10**4, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7
    )
    assert isinstance(b, WalkBound)
    assert b.privacy.is_certificate
    assert b.privacy.source == "complete_sum"
    record = b.to_dict()
    assert record["theorem"] == "theorem3"
    assert record["conditions_met"] is True
    assert record["cycles"] == b.details["cycles"]
    pub = complete_sum_guarantee(
        n=10**4, steps=10**6, eps0=0.1, delta0=1e-7, delta_slack=1e-7, delta_hat=1e-7,
        form="published",
    )  # fmt: skip
    assert pub.privacy.kind == "estimate"
    assert not pub.privacy.is_certificate
    assert pub.privacy.source == "complete_sum_published"


@pytest.mark.parametrize(("eps", "k"), [(0.1, 100), (0.5, 7), (0.01, 10**4)])
def test_compose_advanced_matches_the_accounting_composition(eps: float, k: int) -> None:
    ref = advanced_composition(epsilon=eps, delta=0.0, count=k, delta_slack=1e-6)
    assert compose_advanced(epsilon=eps, count=k, delta_slack=1e-6) == pytest.approx(ref.epsilon)


@pytest.mark.parametrize(("steps", "n", "delta_hat"), [(10**5, 1000, 1e-6), (20000, 2000, 1e-6),
                                                       (500, 50, 1e-3)])  # fmt: skip
def test_visit_bound_is_a_high_probability_bound(steps: int, n: int, delta_hat: float) -> None:
    bound, _ = visit_bound(steps=steps, n=n, delta_hat=delta_hat)
    # P(T_v >= N) <= δ̂ for T_v ~ B(T, 1/n), exactly
    assert stats.binom.sf(math.ceil(bound) - 1, steps, 1 / n) <= delta_hat


@pytest.mark.parametrize("eps0", [0.1, 0.5, 1.0])
def test_ldp_baseline_above_exact_composition_of_rr(eps0: float) -> None:
    p = math.exp(eps0) / (1 + math.exp(eps0))
    rr = DiscretePairCurve.from_probabilities([p, 1 - p], [1 - p, p])
    count = 40
    exact = compose_curves([(rr, count)]).epsilon(1e-6)
    base = ldp_baseline(contributions=count, eps0=eps0, delta0=0.0, delta_slack=1e-6)
    assert base.privacy.epsilon >= exact


def test_spotted_bound_above_the_binomial_quantile() -> None:
    for n, nu, dt in ((100, 5000.0, 1e-3), (50, 2000.0, 1e-6), (2000, 30.36, 1e-6)):
        b = spotted_contributions_guarantee(
            n=n, contributions=nu, eps0=0.1, delta_slack=1e-6, delta_tilde=dt
        )
        # P(B(N_u, 2/n) > k_s) <= δ̃ where the Chernoff condition holds; where it does not
        # (the last case: the exact quantile is 2 > k_s = 1.15) the bound is flagged
        exact = stats.binom.isf(dt, math.ceil(nu), 2 / n)
        assert (b.details["spotted_bound"] >= exact) == b.privacy.conditions_met


def test_sgd_network_rdp_formula_and_condition() -> None:
    value = sgd_network_rdp(alpha=3.0, contributions=10, n=101, lipschitz=2.0, sigma=30.0)
    assert value == pytest.approx(4 * 10 * 3.0 * 4.0 * math.log(101) / (900.0 * 100))
    pub = sgd_network_rdp(
        alpha=3.0, contributions=10, n=101, lipschitz=2.0, sigma=30.0, form="published"
    )
    assert pub < value


def test_sgd_network_epsilon_is_the_minimum_over_alpha() -> None:
    n, tu, sigma, lip, d = 500, 20, 15.0, 1.0, 1e-6
    eps, alpha = sgd_network_epsilon(n=n, contributions=tu, sigma=sigma, lipschitz=lip, delta=d)
    a_max = 0.5 * (1 + math.sqrt(1 + 2 * (sigma / lip) ** 2))
    grid = np.linspace(1.0001, a_max, 20001)
    values = [
        sgd_network_rdp(alpha=a, contributions=tu, n=n, lipschitz=lip, sigma=sigma)
        + math.log(1 / d) / (a - 1)
        for a in grid
    ]
    assert eps <= min(values) + 1e-9
    assert eps >= min(values) - 1e-3
    assert 1 < alpha <= a_max


def test_sgd_utility_bound_formula() -> None:
    r = sgd_utility_bound(dim=4, lipschitz=2.0, diameter=3.0, steps=100, eps0=0.5, delta=1e-5)
    g_ = math.sqrt(4 + 8 * 4 * 4 * math.log(1.25e5) / 0.25)
    assert r["G"] == pytest.approx(g_)
    assert r["bound"] == pytest.approx(2 * 3 * g_ * (2 + math.log(100)) / 10)
    assert r["eta1"] == pytest.approx(3 / g_)


def test_central_sum_std_orders_the_trust_models() -> None:
    s = central_sum_std(n=10, rounds=3, eps0=0.5, delta0=1e-6)
    assert s["central_std"] == pytest.approx(s["sigma_loc"] * math.sqrt(3))
    assert s["ring_std"] == pytest.approx(s["sigma_loc"] * 2.0)  # ⌈30/9⌉ = 4 noises
    assert s["ldp_std"] == pytest.approx(s["sigma_loc"] * math.sqrt(30))


def test_complete_sgd_guarantee_closed_form() -> None:
    b = complete_sgd_guarantee(n=2000, steps=20000, eps0=0.5, delta=1e-6, delta_hat=1e-6)
    nu = b.details["visit_bound"]
    q = max(2 * nu * math.log(2000) / 1999, 2 * math.log(1e6))
    assert b.privacy.epsilon == pytest.approx(
        math.sqrt(2 * q * math.log(1e6)) * 0.5 / math.sqrt(math.log(1.25e6))
    )


def test_complete_histogram_guarantee_uses_the_corrected_constant() -> None:
    b = complete_histogram_guarantee(
        n=10**5, steps=10**7, eps0=0.5, delta0=1e-6, delta_slack=1e-6, delta_hat=1e-6
    )
    assert b.details["constant"] == HISTOGRAM_CYCLE_CONSTANT
    assert b.details["eps_cycle"] == pytest.approx(
        HISTOGRAM_CYCLE_CONSTANT * math.sqrt(math.log(4e6) / 1e5) * 0.5
    )
    assert b.privacy.conditions_met


def test_ring_histogram_guarantee_gamma() -> None:
    b = ring_histogram_guarantee(
        n=10**4, rounds=10, epsilon=0.1, delta=1e-6, delta_slack=1e-6, domain_size=10
    )
    eps0 = 0.1 * math.sqrt(1e4 / math.log(1e6)) / 12
    assert b.details["eps0"] == pytest.approx(eps0)
    assert b.details["gamma"] == pytest.approx(10 / (math.exp(eps0) + 9))


def test_invalid_guarantee_inputs() -> None:
    with pytest.raises(ValueError, match="n must be"):
        complete_sum_guarantee(n=1, steps=10, eps0=0.1, delta0=0.1, delta_slack=0.1, delta_hat=0.1)
    with pytest.raises(ValueError, match="form"):
        complete_sum_guarantee(
            n=10, steps=10, eps0=0.1, delta0=0.1, delta_slack=0.1, delta_hat=0.1,
            form="printed",  # type: ignore[arg-type]
        )  # fmt: skip
    with pytest.raises(ValueError, match="per_cycle"):
        complete_sum_guarantee(
            n=10, steps=10, eps0=0.1, delta0=0.1, delta_slack=0.1, delta_hat=0.1,
            per_cycle="loose",  # type: ignore[arg-type]
        )  # fmt: skip


@pytest.mark.parametrize("eps", [math.log(2.0), 5.0, 710.0, 1e6])
def test_compose_advanced_beyond_ln2_is_basic_composition(eps: float) -> None:
    # e^ε − 1 >= 1 there, so the drift term alone is k ε (rounded up: 7 ln 2 rounds an ulp
    # low in floats); e^ε overflowed beyond 709.
    assert compose_advanced(epsilon=eps, count=7, delta_slack=1e-6) == product_up(7, eps)
    ref = advanced_composition(epsilon=eps, delta=0.0, count=7, delta_slack=1e-6)
    assert ref.epsilon == product_up(7, eps) >= 7 * eps


def test_authors_code_sigmas_without_a_finite_local_epsilon_are_infinite() -> None:
    # ε = 1e-9 over ~6e11 contributions: the authors' per-contribution ε0 rounds to 0.
    code = code_sigmas(n=2, steps=10**12, epsilon=1e-9, delta=0.5)
    assert math.isinf(code["local"])
    assert math.isinf(code["network"])
    assert math.isfinite(code["central"])
