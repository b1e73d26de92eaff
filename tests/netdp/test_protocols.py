"""Tests of crowdhide.netdp.protocols and crowdhide.netdp.sgd: unbiasedness, noise, caps,
SGD, debiasing."""

from __future__ import annotations

import math

import numpy as np
import pytest

from crowdhide.netdp.protocols import (
    WalkHistogramRun,
    WalkSumRun,
    complete_histogram,
    complete_sum,
    debias_histogram,
    debias_published,
    ring_histogram,
    ring_noise_additions,
    ring_sum,
)
from crowdhide.netdp.sgd import SgdRun, complete_sgd, logistic_gradients


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


def test_ring_noise_additions_is_the_ceiling() -> None:
    for n, k in ((10, 3), (5, 4), (100, 99), (2, 1)):
        # a noise every n − 1 hops over K n hops: ⌈K n / (n − 1)⌉ (checked by counting)
        hops = k * n
        assert ring_noise_additions(n=n, rounds=k) == len(range(0, hops, n - 1))


def test_run_types() -> None:
    s = ring_sum(values=np.ones((2, 3)), sigma=1.0, rng=0)
    h = complete_histogram(values=np.zeros(4, int), domain_size=2, steps=10, gamma=0.5, rng=0)
    assert isinstance(s, WalkSumRun)
    assert isinstance(h, WalkHistogramRun)
    assert h.estimate.shape == (2,)


def test_debias_histogram_inverts_the_expectation() -> None:
    # E[τ] = (1 − γ) h + γ N/L + N_u/L, computed independently
    h = np.array([5.0, 2.0, 1.0])
    gamma, items, uniform = 0.4, 8, 3
    tau = (1 - gamma) * h + gamma * items / 3 + uniform / 3
    got = debias_histogram(tau, gamma=gamma, randomized_items=items, uniform_items=uniform)
    assert np.allclose(got, h)
    assert not np.allclose(debias_published(tau, gamma=gamma), h)


def test_logistic_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 3, 2))
    y = rng.choice([-1.0, 1.0], size=(4, 3))
    grad = logistic_gradients(x, y)
    w = rng.normal(size=(2, 2))
    users = np.array([1, 3])
    g = grad(w, users)
    for row, u in enumerate(users):

        def loss(v: np.ndarray, u: int = int(u)) -> float:
            return float(np.mean(np.log1p(np.exp(-y[u] * (x[u] @ v)))))

        for k in range(2):
            e = np.zeros(2)
            e[k] = 1e-6
            fd = (loss(w[row] + e) - loss(w[row] - e)) / 2e-6
            assert g[row, k] == pytest.approx(fd, abs=1e-6)
    with pytest.raises(ValueError, match="labels"):
        logistic_gradients(x, np.zeros((4, 3)))


def test_complete_sgd_cap_clip_and_projection() -> None:
    grad = logistic_gradients(np.ones((3, 2, 1)), np.ones((3, 2)))
    out = complete_sgd(
        gradient=grad, n=3, dim=1, steps=60, sigma=0.0, step_size=1.0, rng=0, runs=4, cap=5,
        clip=0.1, radius=0.3, record_every=20, record=True,
    )  # fmt: skip
    assert isinstance(out, SgdRun)
    assert np.all(out.contributions <= 15)  # 3 users × cap 5
    assert np.all(out.contributions + out.fake_contributions == 60)
    assert np.all(np.abs(out.models) <= 0.3 + 1e-12)  # projected on the ball
    assert out.history_steps.tolist() == [20, 40, 60]
    assert out.transcript is not None
    assert out.transcript.steps == 60
    # a clipped step moves the model by at most η × clip
    one = complete_sgd(gradient=grad, n=3, dim=1, steps=1, sigma=0.0, step_size=1.0, clip=0.1)
    assert abs(float(one.models[0, 0])) == pytest.approx(0.1)
    fwd = complete_sgd(
        gradient=grad, n=3, dim=1, steps=60, sigma=5.0, step_size=1.0, rng=0, cap=0,
        over_cap="forward",
    )  # fmt: skip
    assert float(fwd.models[0, 0]) == 0.0  # every holder is over the cap and forwards


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
    ],
)
def test_invalid_inputs(call, match: str) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises((ValueError, TypeError), match=match):
        call()
