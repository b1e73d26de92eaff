"""Alg. 4 of Cyffers & Bellet (2022) for many settings at once (reproduction helper).

:func:`crowdhide.netdp.sgd.complete_sgd` vectorizes independent walks of *one* setting (σ, η,
what a user does past the cap). Fig. 2 trains 10 settings × 7 step sizes, and each call pays
the per-step Python overhead of 20000 sequential steps: 80 calls took most of the target's
time. Here every row of the batch has its own σ, η and over-cap rule, so the whole step-size
search is one pass over T steps and the final runs another. A batch whose rows share one
setting draws exactly what ``complete_sgd`` draws (same holders, same noise) and returns the
same models; ``tests/experiments/test_sgd_batch.py`` checks both that and a scalar re-run of
every row.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from crowdhide.netdp.sgd import GradientFunction

__all__ = ["BatchRun", "batched_sgd", "sgd_rows"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
#: Progress: ``(parts, report)``; ``report(step)`` is called ``parts`` times over the T steps.
Tick = tuple[int, Callable[[int], None]] | None


@dataclass(frozen=True)
class BatchRun:
    """Final models ``(R, d)``, the steps recorded and the iterates there ``(records, R, d)``."""

    models: FloatArray
    history_steps: IntArray
    history: FloatArray


def batched_sgd(
    *,
    gradient: GradientFunction,
    n: int,
    dim: int,
    steps: int,
    sigma: npt.ArrayLike,
    step_size: npt.ArrayLike,
    forward: npt.ArrayLike,
    cap: int,
    clip: float,
    rng: np.random.Generator,
    record_every: int = 0,
    tick: Tick = None,
) -> BatchRun:
    """Noisy SGD on a uniform walk over n users, one row per (σ, η, over-cap rule).

    Every row draws its own walk; ``forward[r]`` makes a user past ``cap`` contributions
    forward the token untouched (local DP), otherwise it adds noise only (network / central
    DP), as ``complete_sgd(over_cap=...)``. Draw order: all holders ``(T, R)`` first, then
    one ``(R, d)`` standard normal block per step (none when every σ is 0).
    """
    sig = np.asarray(sigma, dtype=np.float64)
    rows = sig.size
    holders = rng.integers(0, n, size=(steps, rows))

    def noise(_: int) -> FloatArray:
        if not np.any(sig > 0):
            return np.zeros((rows, dim))
        return np.asarray(rng.normal(0.0, 1.0, (rows, dim)), dtype=np.float64) * sig[:, None]

    return sgd_rows(
        gradient=gradient,
        holders=holders,
        noise=noise,
        n=n,
        dim=dim,
        step_size=step_size,
        forward=forward,
        cap=cap,
        clip=clip,
        record_every=record_every,
        tick=tick,
    )


def sgd_rows(
    *,
    gradient: GradientFunction,
    holders: IntArray,
    noise: Callable[[int], FloatArray],
    n: int,
    dim: int,
    step_size: npt.ArrayLike,
    forward: npt.ArrayLike,
    cap: int,
    clip: float,
    record_every: int = 0,
    tick: Tick = None,
) -> BatchRun:
    """The update loop of :func:`batched_sgd` for given holders ``(T, R)`` and a noise
    function ``noise(t) -> (R, d)`` (kept apart so a test can replay the same draws)."""
    steps, rows = holders.shape
    eta = np.broadcast_to(np.asarray(step_size, dtype=np.float64), (rows,))[:, None]
    fwd = np.broadcast_to(np.asarray(forward, dtype=np.bool_), (rows,))
    counts = np.zeros((rows, n), dtype=np.int64)
    index = np.arange(rows)
    w = np.zeros((rows, dim))
    recorded: list[int] = []
    history: list[FloatArray] = []
    parts, report = tick if tick is not None else (0, None)
    for t in range(steps):
        users = holders[t]
        real = counts[index, users] < cap
        counts[index, users] += 1
        g = gradient(w, users)
        norm = np.linalg.norm(g, axis=1, keepdims=True)
        g = g * np.minimum(1.0, clip / np.maximum(norm, 1e-300))  # clip to the Lipschitz bound
        update = np.where(real[:, None], g, 0.0) + noise(t)
        # past the cap: forwarding users add nothing, the others add their noise only
        active = real | ~fwd
        w = w - eta * np.where(active[:, None], update, 0.0)
        if record_every and ((t + 1) % record_every == 0 or t + 1 == steps):
            recorded.append(t + 1)
            history.append(w.copy())
        if report is not None and (t + 1) * parts // steps > t * parts // steps:
            report(t + 1)
    return BatchRun(
        models=w,
        history_steps=np.asarray(recorded, dtype=np.int64),
        history=np.asarray(history) if history else np.empty((0, rows, dim)),
    )
