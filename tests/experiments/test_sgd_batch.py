"""The batched DP-SGD of ``cyffers-fig2`` against ``complete_sgd`` and a scalar re-run."""

from __future__ import annotations

from typing import Any, Literal

import numpy as np
import pytest

from crowdhide.experiments._sgd_batch import batched_sgd, sgd_rows
from crowdhide.netdp.sgd import complete_sgd, logistic_gradients


def _data(n: int = 30, b: int = 4, d: int = 3) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(11)
    x = rng.normal(size=(n, b, d))
    x /= np.linalg.norm(x, axis=2, keepdims=True)
    y = np.where(x @ np.array([1.0, -2.0, 0.5]) > 0, 1.0, -1.0)
    return x, y


@pytest.mark.parametrize("over_cap", ["forward", "noise"])
def test_one_setting_draws_and_returns_what_complete_sgd_does(
    over_cap: Literal["forward", "noise"],
) -> None:
    x, y = _data()
    grad = logistic_gradients(x, y)
    common: dict[str, Any] = {
        "gradient": grad,
        "n": 30,
        "dim": 3,
        "steps": 300,
        "cap": 4,
        "record_every": 50,
    }
    ref = complete_sgd(
        **common, sigma=1.5, step_size=0.2, rng=np.random.default_rng(3), runs=5, clip=0.5,
        over_cap=over_cap,
    )  # fmt: skip
    got = batched_sgd(
        **common, sigma=np.full(5, 1.5), step_size=0.2, forward=over_cap == "forward",
        clip=0.5, rng=np.random.default_rng(3),
    )  # fmt: skip
    assert np.array_equal(got.models, ref.models)
    assert np.array_equal(got.history, ref.history)
    assert np.array_equal(got.history_steps, ref.history_steps)


def _scalar_sgd(
    x: np.ndarray,
    y: np.ndarray,
    holders: np.ndarray,
    noise: np.ndarray,
    eta: float,
    forward: bool,
    cap: int,
    clip: float,
) -> np.ndarray:
    """One walk, one step at a time, written from Alg. 4 (independent of the batch code)."""
    w = np.zeros(x.shape[2])
    seen: dict[int, int] = {}
    for t, u in enumerate(holders):
        seen[u] = seen.get(u, 0) + 1
        real = seen[u] <= cap
        if not real and forward:
            continue
        g = np.zeros_like(w)
        if real:
            for xj, yj in zip(x[u], y[u], strict=True):
                g -= yj * xj / (1.0 + np.exp(yj * (xj @ w)))
            g /= len(y[u])
            g *= min(1.0, clip / max(float(np.linalg.norm(g)), 1e-300))
        w = w - eta * (g + noise[t])
    return w


def test_every_row_follows_its_own_setting() -> None:
    x, y = _data()
    rng = np.random.default_rng(7)
    steps, rows = 200, 6
    holders = rng.integers(0, 30, size=(steps, rows))
    sigma = np.array([0.0, 0.5, 2.0, 0.5, 3.0, 1.0])
    eta = np.array([0.5, 0.1, 0.01, 0.3, 0.05, 0.2])
    forward = np.array([True, False, True, True, False, False])
    noise = rng.normal(size=(steps, rows, 3)) * sigma[None, :, None]
    out = sgd_rows(
        gradient=logistic_gradients(x, y), holders=holders, noise=lambda t: noise[t], n=30,
        dim=3, step_size=eta, forward=forward, cap=5, clip=0.3,
    )  # fmt: skip
    for r in range(rows):
        want = _scalar_sgd(x, y, holders[:, r], noise[:, r], eta[r], forward[r], cap=5, clip=0.3)
        assert out.models[r] == pytest.approx(want, rel=1e-10, abs=1e-12)


def test_progress_is_reported_the_asked_number_of_times() -> None:
    x, y = _data()
    seen: list[int] = []
    batched_sgd(
        gradient=logistic_gradients(x, y), n=30, dim=3, steps=103, sigma=[1.0, 0.0],
        step_size=0.1, forward=[True, False], cap=3, clip=1.0, rng=np.random.default_rng(0),
        tick=(10, seen.append),
    )  # fmt: skip
    assert len(seen) == 10
    assert seen[-1] == 103
