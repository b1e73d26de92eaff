"""Private SGD on a random walk over the complete graph (Cyffers & Bellet 2022, Alg. 4).

:func:`complete_sgd` runs projected noisy SGD on the token for a gradient oracle such as
:func:`logistic_gradients` (the logistic loss of Section 5.2), with the contribution cap and
the "noise-only" fallback of Section 5.2. SGD is sequential in t, so it is vectorized over
independent runs instead (the sums and histograms of :mod:`crowdhide.netdp.protocols`
simulate a whole walk at once). Its guarantee is in :mod:`crowdhide.netdp.sgd_guarantees`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int, check_real
from crowdhide.errors import InvalidParameterError
from crowdhide.netdp.noise import gaussian_noise
from crowdhide.netdp.views import WalkTranscript

__all__ = ["SgdRun", "complete_sgd", "logistic_gradients"]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class SgdRun:
    """Result of :func:`complete_sgd` (``runs`` independent walks).

    Parameters
    ----------
    models
        Final iterates, shape ``(runs, d)``.
    history_steps
        Steps at which ``history`` was recorded.
    history
        Iterates at those steps, shape ``(len(history_steps), runs, d)``.
    contributions
        Real (gradient) contributions per run.
    fake_contributions
        Noise-only (or forwarded) steps per run.
    transcript
        Messages of run 0 (``None`` unless ``record=True``).

    See Also
    --------
    complete_sgd : Produces it.
    """

    models: FloatArray
    history_steps: IntArray
    history: FloatArray
    contributions: IntArray
    fake_contributions: IntArray
    transcript: WalkTranscript | None = field(default=None)


GradientFunction = Callable[[FloatArray, IntArray], FloatArray]


def logistic_gradients(features: npt.ArrayLike, labels: npt.ArrayLike) -> GradientFunction:
    """Gradient oracle of ``f(w; D_u) = (1/|D_u|) Σ ln(1 + exp(−y wᵀx))`` (Section 5.2).

    ``features`` has shape ``(n, b, d)`` (b points per user), ``labels`` shape ``(n, b)`` in
    {−1, +1}. The returned function maps models ``(R, d)`` and users ``(R,)`` to gradients.

    Parameters
    ----------
    features
        Shape ``(n, b, d)``.
    labels
        Shape ``(n, b)``, in {−1, +1}.

    Returns
    -------
    callable
        The gradient oracle for :func:`complete_sgd`.

    See Also
    --------
    complete_sgd : Uses it.
    """
    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if x.ndim != 3 or y.shape != x.shape[:2]:
        raise InvalidParameterError(
            f"features must be (n, b, d) and labels (n, b), got {x.shape}, {y.shape}"
        )
    if not np.isin(y, (-1.0, 1.0)).all():
        raise InvalidParameterError("labels must be -1 or +1")

    def gradient(models: FloatArray, users: IntArray) -> FloatArray:
        xb = x[users]  # (R, b, d)
        yb = y[users]  # (R, b)
        margin = yb * np.einsum("rbd,rd->rb", xb, models)
        weight = -yb * 0.5 * (1.0 - np.tanh(0.5 * margin))  # −y σ(−margin), overflow-free
        return np.asarray(np.einsum("rb,rbd->rd", weight, xb) / xb.shape[1], dtype=np.float64)

    return gradient


def complete_sgd(
    *,
    gradient: GradientFunction,
    n: int,
    dim: int,
    steps: int,
    sigma: float,
    step_size: float | Callable[[int], float],
    rng: object = None,
    runs: int = 1,
    cap: int | None = None,
    over_cap: Literal["noise", "forward"] = "noise",
    clip: float | None = None,
    radius: float | None = None,
    record_every: int = 0,
    record: bool = False,
) -> SgdRun:
    """Private SGD on the complete graph (Alg. 4), vectorized over ``runs`` walks.

    At step t the holder u computes ``g = clip(∇f(τ; D_u))`` (clipping to norm ``clip``
    enforces the Lipschitz constant the privacy analysis assumes), then
    ``τ ← Π_W(τ − η_t (g + Z))``, ``Z ~ N(0, σ² I_d)``, where Π_W projects on the ball of
    ``radius`` (W = ℝ^d if None). Past the contribution ``cap`` the holder adds noise only
    (``over_cap="noise"``, network DP) or forwards the token (``"forward"``, local DP).

    Parameters
    ----------
    gradient
        Gradient oracle, e.g. :func:`logistic_gradients`.
    n
        Number of users.
    dim
        Model dimension d.
    steps
        Walk length T.
    sigma
        σ of the Gaussian noise added to every gradient.
    step_size
        η, or a function of the step t giving η_t.
    rng
        Generator or seed.
    runs
        Independent walks, vectorized.

    cap
        Maximum number of contributions per user (``None``: no cap).
    over_cap
        Past the cap: ``"noise"`` (add noise only, which network DP needs) or ``"forward"``.
    clip
        Gradient norm bound (``None``: no clipping).
    radius
        Radius of the ball W (``None``: W = ℝ^d).
    record_every
        Record the iterates every this many steps (0: never).
    record
        Keep the transcript of run 0.

    Returns
    -------
    SgdRun
        The final models, the recorded iterates and the contribution counts.

    See Also
    --------
    logistic_gradients : A gradient oracle.
    crowdhide.netdp.guarantees.sgd_network_epsilon : Its network-DP guarantee.

    Examples
    --------
    >>> grad = logistic_gradients(np.ones((3, 2, 1)), np.ones((3, 2)))
    >>> out = complete_sgd(gradient=grad, n=3, dim=1, steps=200, sigma=0.0, step_size=1.0,
    ...                    rng=0)
    >>> bool(out.models[0, 0] > 2.0)
    True
    """
    n = check_int("n", n, low=2)
    d = check_int("dim", dim, low=1)
    t_total = check_int("steps", steps, low=1)
    s = check_real("sigma", sigma, low=0.0)
    r = check_int("runs", runs, low=1)
    every = check_int("record_every", record_every, low=0)
    if cap is not None:
        cap = check_int("cap", cap, low=0)
    if over_cap not in ("noise", "forward"):
        raise InvalidParameterError(f"over_cap must be 'noise' or 'forward', got {over_cap!r}")
    clip_norm = None if clip is None else check_real("clip", clip, low=0.0, low_open=True)
    rad = None if radius is None else check_real("radius", radius, low=0.0, low_open=True)
    eta_of = _step_sizes(step_size)
    gen = as_rng(rng)
    holders = gen.integers(0, n, size=(t_total, r))
    counts = np.zeros((r, n), dtype=np.int64)
    w = np.zeros((r, d))
    history_steps: list[int] = []
    history: list[FloatArray] = []
    received = np.empty((t_total, d)) if record else None
    real_total = np.zeros(r, dtype=np.int64)
    rows = np.arange(r)
    for t in range(t_total):
        users = holders[t]
        if received is not None:
            received[t] = w[0]
        real = np.ones(r, dtype=bool) if cap is None else counts[rows, users] < cap
        counts[rows, users] += 1
        g = np.where(real[:, None], _clipped(gradient(w, users), clip_norm), 0.0)
        z = gaussian_noise(gen, s, (r, d)) if s > 0 else np.zeros((r, d))
        active = real | (over_cap == "noise")
        w = _project(w - eta_of(t + 1) * np.where(active[:, None], g + z, 0.0), rad)
        real_total += real
        if every and ((t + 1) % every == 0 or t + 1 == t_total):
            history_steps.append(t + 1)
            history.append(w.copy())
    return SgdRun(
        models=w,
        history_steps=np.asarray(history_steps, dtype=np.int64),
        history=np.asarray(history) if history else np.empty((0, r, d)),
        contributions=real_total,
        fake_contributions=t_total - real_total,
        transcript=None if received is None else _sgd_transcript(n, holders, received, w),
    )


def _sgd_transcript(
    n: int, holders: IntArray, received: FloatArray, models: FloatArray
) -> WalkTranscript:
    """Transcript of the first run of :func:`complete_sgd`."""
    return WalkTranscript(
        n=n,
        holders=holders[:, 0].astype(np.int64),
        received=received,
        final=models[0].copy(),
        topology="complete",
    )


def _step_sizes(step_size: float | Callable[[int], float]) -> Callable[[int], float]:
    if callable(step_size):
        return step_size
    eta = check_real("step_size", step_size, low=0.0, low_open=True)

    def eta_of(_: int) -> float:
        return eta

    return eta_of


def _clipped(g: FloatArray, clip_norm: float | None) -> FloatArray:
    """Rows of ``g`` scaled down to norm at most ``clip_norm`` (unchanged when None)."""
    if clip_norm is None:
        return g
    norm = np.linalg.norm(g, axis=1, keepdims=True)
    return np.asarray(g * np.minimum(1.0, clip_norm / np.maximum(norm, 1e-300)), np.float64)


def _project(w: FloatArray, radius: float | None) -> FloatArray:
    """Projection of the rows of ``w`` on the ball of ``radius`` (ℝ^d when None)."""
    if radius is None:
        return w
    norm = np.linalg.norm(w, axis=1, keepdims=True)
    return np.asarray(w * np.minimum(1.0, radius / np.maximum(norm, 1e-300)), np.float64)
