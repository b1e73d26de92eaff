"""Token protocols of Cyffers & Bellet (2022), vectorized, with transcripts.

* :func:`ring_sum` — Alg. 1 (noise once every n−1 hops) and the distributed-noise variant of
  Remark 1;
* :func:`ring_histogram` — Alg. 2 (L-ary randomized response, γn initial random items);
* :func:`complete_sum` — Alg. 3 (random walk on the complete graph, every contribution
  perturbed);
* :func:`complete_histogram` — Alg. 5.

Alg. 4 (projected noisy SGD on the token) is :func:`crowdhide.netdp.sgd.complete_sgd`.

Corrections implemented: the histogram debiasing counts the blanket items
(``(τ_l − γ N_items/L − N_uniform/L)/(1 − γ)``, the published ``(τ_l − γ/L)/(1 − γ)`` is
:func:`debias_published`, biased); Alg. 1 adds noise ⌈Kn/(n−1)⌉ times (not ⌊·⌋); the
distributed variant uses σ/√(n−1) per user so each cycle keeps a full σ of hiding noise (the
published σ/√n is ``noise="distributed_published"``).

Contributions are independent of the token for sums and histograms, so the whole walk is
simulated at once (``cumsum`` of the increments).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_int, check_probability, check_real
from crowdhide.errors import InvalidParameterError, ParameterTypeError
from crowdhide.netdp.noise import gaussian_noise, laplace_noise
from crowdhide.netdp.views import WalkTranscript
from crowdhide.netdp.walks import complete_walk, contribution_rank, ring_walk

__all__ = [
    "WalkHistogramRun",
    "WalkSumRun",
    "complete_histogram",
    "complete_sum",
    "debias_histogram",
    "debias_published",
    "ring_histogram",
    "ring_noise_additions",
    "ring_sum",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class WalkSumRun:
    """Result of a real-summation protocol.

    Parameters
    ----------
    estimate
        The final token (unbiased estimate of ``target``).
    target
        Sum of the contributions actually made.
    noise_std
        Standard deviation of ``estimate − target`` implied by the noise that was added.
    noise_additions
        Number of noisy steps.
    fake_contributions
        Steps where a capped user added noise only.
    transcript
        The messages (``None`` if ``record=False``).

    See Also
    --------
    ring_sum, complete_sum : Produce it.
    """

    estimate: float
    target: float
    noise_std: float
    noise_additions: int
    fake_contributions: int
    transcript: WalkTranscript | None


@dataclass(frozen=True)
class WalkHistogramRun:
    """Result of a histogram protocol.

    Parameters
    ----------
    estimate
        Unbiased estimate of ``target`` (corrected debiasing).
    target
        True histogram of the contributions actually made.
    raw
        The final token (counts of randomized items, including blanket items).
    gamma
        Blanket probability of the randomizer.
    randomized_items
        Number of items passed through RR_γ.
    uniform_items
        Number of purely random items (initialisation of Alg. 2, noise-only fallback).
    transcript
        The messages (``None`` if ``record=False``).

    See Also
    --------
    ring_histogram, complete_histogram : Produce it.
    """

    estimate: FloatArray
    target: FloatArray
    raw: FloatArray
    gamma: float
    randomized_items: int
    uniform_items: int
    transcript: WalkTranscript | None


def _noise(
    mechanism: str, rng: np.random.Generator, std: float | FloatArray, size: int | tuple[int, ...]
) -> FloatArray:
    if mechanism == "gaussian":
        return gaussian_noise(rng, std, size)
    if mechanism == "laplace":
        return laplace_noise(rng, std, size)
    raise InvalidParameterError(f"mechanism must be 'gaussian' or 'laplace', got {mechanism!r}")


def ring_noise_additions(*, n: int, rounds: int) -> int:
    """Number of noisy steps of Alg. 1: ⌈Kn/(n−1)⌉ (the paper's ⌊·⌋ is wrong).

    Parameters
    ----------
    n
        Number of users.
    rounds
        Laps K.

    Returns
    -------
    int
        ⌈Kn/(n−1)⌉.

    See Also
    --------
    ring_sum : The protocol that adds them.

    Examples
    --------
    >>> [ring_noise_additions(n=n, rounds=k) for n, k in [(3, 1), (10, 3), (100, 10), (5, 4)]]
    [2, 4, 11, 5]
    """
    n = check_int("n", n, low=2)
    k = check_int("rounds", rounds, low=1)
    return -(-(k * n) // (n - 1))


def _as_stream(values: npt.ArrayLike, n: int | None, name: str) -> FloatArray:
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[0] < 1:
        raise InvalidParameterError(
            f"{name} must have shape (n,) or (n, K), got {np.shape(values)}"
        )
    if n is not None and arr.shape[0] != n:
        raise InvalidParameterError(
            f"{name} must have one row per user (n={n}), got {arr.shape[0]}"
        )
    if not np.isfinite(arr).all():
        raise InvalidParameterError(f"{name} must be finite")
    return arr


def ring_sum(
    *,
    values: npt.ArrayLike,
    sigma: float,
    rng: object = None,
    mechanism: Literal["gaussian", "laplace"] = "gaussian",
    noise: Literal["every_n_minus_1", "distributed", "distributed_published"] = "every_n_minus_1",
    record: bool = True,
) -> WalkSumRun:
    """Private real summation on the directed ring (Alg. 1 / Remark 1).

    Parameters
    ----------
    values
        Contributions, shape ``(K, n)``: ``values[k, u]`` is ``x_u^{k+1}``.
    sigma
        σ_loc, the noise std that makes one contribution (ε, δ)-LDP.
    rng
        Generator or seed.
    mechanism
        Noise distribution.
    noise
        ``"every_n_minus_1"`` (Alg. 1: σ_loc at steps 0, n−1, 2(n−1), …), ``"distributed"``
        (Remark 1 corrected: σ_loc for the first contribution, σ_loc/√(n−1) for all others, so
        the n−1 other users of a lap add a full σ_loc² of variance) or
        ``"distributed_published"`` (σ_loc/√n as printed: only (n−1)/n of σ_loc² per lap).
    record
        Keep the transcript.

    Returns
    -------
    WalkSumRun
        The final token (the estimate), the true sum and the noise's standard deviation.

    See Also
    --------
    complete_sum : The same on the complete graph.
    ring_noise_additions : How many noisy steps Alg. 1 takes.

    Examples
    --------
    >>> run = ring_sum(values=np.ones((3, 10)), sigma=1.0, rng=0)
    >>> run.target, run.noise_additions, round(run.noise_std ** 2, 6)
    (30.0, 4, 4.0)
    """
    x = np.asarray(values, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise InvalidParameterError(f"values must have shape (K, n) with n >= 2, got {x.shape}")
    if not np.isfinite(x).all():
        raise InvalidParameterError("values must be finite")
    rounds, n = x.shape
    s = check_real("sigma", sigma, low=0.0)
    gen = as_rng(rng)
    steps = rounds * n
    if noise == "every_n_minus_1":
        std = np.where(np.arange(steps) % (n - 1) == 0, s, 0.0)
    elif noise in ("distributed", "distributed_published"):
        per_user = s / math.sqrt(n - 1 if noise == "distributed" else n)
        std = np.full(steps, per_user)
        std[0] = s
    else:
        raise InvalidParameterError(
            "noise must be 'every_n_minus_1', 'distributed' or 'distributed_published', "
            f"got {noise!r}"
        )
    increments = x.ravel() + _noise(mechanism, gen, std, steps)
    tokens = np.cumsum(increments)
    transcript = None
    if record:
        received = np.r_[0.0, tokens[:-1]]
        transcript = WalkTranscript(
            n=n,
            holders=ring_walk(n=n, rounds=rounds),
            received=received,
            final=np.asarray(tokens[-1]),
            topology="ring",
        )
    return WalkSumRun(
        estimate=float(tokens[-1]),
        target=float(math.fsum(x.ravel())),
        noise_std=float(math.sqrt(float(np.sum(std**2)))),
        noise_additions=int(np.count_nonzero(std)),
        fake_contributions=0,
        transcript=transcript,
    )


def _randomize_items(
    items: IntArray, *, domain_size: int, gamma: float, rng: np.random.Generator
) -> IntArray:
    """RR_γ: keep the item with probability 1 − γ, else replace it by a uniform item."""
    blanket = rng.random(items.size) < gamma
    out = items.copy()
    out[blanket] = rng.integers(0, domain_size, int(blanket.sum()))
    return out


def debias_histogram(
    raw: npt.ArrayLike, *, gamma: float, randomized_items: int, uniform_items: int = 0
) -> FloatArray:
    """Unbiased counts from a token of RR_γ items (corrected debiasing).

    ``E[τ_l] = (1 − γ) h_l + γ N/L + N_u/L`` with N randomized and ``N_u`` uniform items, so
    ``ĥ_l = (τ_l − γ N/L − N_u/L)/(1 − γ)``.

    Parameters
    ----------
    raw
        The final token: counts of the L values.
    gamma
        Blanket probability γ.
    randomized_items
        N, the number of items that went through RR_γ.
    uniform_items
        ``N_u``, the number of purely uniform items.

    Returns
    -------
    numpy.ndarray
        The unbiased counts ``ĥ``.

    See Also
    --------
    debias_published : The biased formula as printed, for comparison.

    Examples
    --------
    >>> debias_histogram([6.0, 4.0], gamma=0.5, randomized_items=8, uniform_items=2).tolist()
    [6.0, 2.0]
    """
    t = np.asarray(raw, dtype=np.float64)
    g = check_probability("gamma", gamma, allow_one=False)
    n_items = check_int("randomized_items", randomized_items, low=0)
    n_uniform = check_int("uniform_items", uniform_items, low=0)
    size = t.shape[-1]
    return np.asarray((t - g * n_items / size - n_uniform / size) / (1.0 - g), dtype=np.float64)


def debias_published(raw: npt.ArrayLike, *, gamma: float) -> FloatArray:
    """The debiasing printed in Alg. 2 and 5, ``(τ_l − γ/L)/(1 − γ)`` — **biased for counts**.

    Kept only to show the defect; use :func:`debias_histogram`.

    Parameters
    ----------
    raw
        The final token: counts of the L values.
    gamma
        Blanket probability γ.

    Returns
    -------
    numpy.ndarray
        The published (biased) estimate.

    See Also
    --------
    debias_histogram : The corrected, unbiased estimate.
    """
    t = np.asarray(raw, dtype=np.float64)
    g = check_probability("gamma", gamma, allow_one=False)
    return np.asarray((t - g / t.shape[-1]) / (1.0 - g), dtype=np.float64)


def _check_items(values: npt.ArrayLike, domain_size: int, name: str) -> IntArray:
    arr = np.asarray(values)
    if (
        arr.size
        and not np.issubdtype(arr.dtype, np.integer)
        and (not np.all(np.isfinite(arr)) or not np.all(np.asarray(arr, float) % 1 == 0))
    ):
        raise ParameterTypeError(f"{name} must contain integers in [0, L), got dtype {arr.dtype}")
    items = arr.astype(np.int64)
    if items.size and (items.min() < 0 or items.max() >= domain_size):
        raise InvalidParameterError(
            f"{name} must lie in [0, domain_size) = [0, {domain_size}), "
            f"got {items.min()}..{items.max()}"
        )
    return items


def _histogram_tokens(
    start: FloatArray, outputs: IntArray, domain_size: int, record: bool
) -> tuple[FloatArray, FloatArray | None]:
    final = start + np.bincount(outputs, minlength=domain_size).astype(np.float64)
    if not record:
        return final, None
    onehot = np.zeros((outputs.size, domain_size), dtype=np.float64)
    onehot[np.arange(outputs.size), outputs] = 1.0
    received = start + np.cumsum(onehot, axis=0) - onehot
    return final, received


def ring_histogram(
    *,
    values: npt.ArrayLike,
    domain_size: int,
    gamma: float,
    rng: object = None,
    record: bool = True,
) -> WalkHistogramRun:
    """Private histogram on the ring (Alg. 2), values indexed ``0..L−1``.

    The token starts with ⌈γn⌉ uniform items (rounding up is conservative for privacy) and
    every contribution goes through RR_γ. The estimate uses the corrected debiasing
    ``(τ_l − γKn/L − ⌈γn⌉/L)/(1 − γ)``.

    Parameters
    ----------
    values
        Shape ``(K, n)``: ``values[k, u]`` is u's value in ``0..L−1`` on lap k + 1.
    domain_size
        L, the number of values.
    gamma
        Blanket probability γ of RR_γ.
    rng
        Generator or seed.
    record
        Keep the transcript.

    Returns
    -------
    WalkHistogramRun
        The estimate, the true histogram and the raw token.

    See Also
    --------
    complete_histogram : The same on the complete graph.

    Examples
    --------
    >>> run = ring_histogram(values=np.zeros((2, 5), int), domain_size=3, gamma=0.0, rng=0)
    >>> run.estimate.tolist(), run.uniform_items
    ([10.0, 0.0, 0.0], 0)
    """
    size = check_int("domain_size", domain_size, low=2)
    g = check_probability("gamma", gamma, allow_one=False)
    items = _check_items(values, size, "values")
    if items.ndim != 2 or items.shape[1] < 2:
        raise InvalidParameterError(f"values must have shape (K, n) with n >= 2, got {items.shape}")
    rounds, n = items.shape
    gen = as_rng(rng)
    n_init = math.ceil(g * n - 1e-12)
    start = np.bincount(gen.integers(0, size, n_init), minlength=size).astype(np.float64)
    outputs = _randomize_items(items.ravel(), domain_size=size, gamma=g, rng=gen)
    final, received = _histogram_tokens(start, outputs, size, record)
    transcript = None
    if received is not None:
        transcript = WalkTranscript(
            n=n,
            holders=ring_walk(n=n, rounds=rounds),
            received=received,
            final=final,
            topology="ring",
        )
    return WalkHistogramRun(
        estimate=debias_histogram(
            final, gamma=g, randomized_items=items.size, uniform_items=n_init
        ),
        target=np.bincount(items.ravel(), minlength=size).astype(np.float64),
        raw=final,
        gamma=g,
        randomized_items=int(items.size),
        uniform_items=n_init,
        transcript=transcript,
    )


def _walk_contributions(
    n: int, steps: int, stream_length: int, cap: int | None, gen: np.random.Generator
) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_]]:
    holders = complete_walk(n=n, steps=steps, rng=gen)
    rank = contribution_rank(holders)
    limit = stream_length if cap is None else min(stream_length, cap)
    return holders, rank, rank < limit


def complete_sum(
    *,
    values: npt.ArrayLike,
    steps: int,
    sigma: float,
    rng: object = None,
    cap: int | None = None,
    over_cap: Literal["noise", "forward"] = "noise",
    mechanism: Literal["gaussian", "laplace"] = "gaussian",
    record: bool = True,
) -> WalkSumRun:
    """Private summation on the complete graph (Alg. 3).

    Parameters
    ----------
    values
        ``(n,)`` (same value at every visit) or ``(n, K)`` (``values[u, k]`` is u's
        (k+1)-th contribution).
    steps
        Walk length T.
    sigma
        σ_loc added to every contribution.
    cap
        Maximum number of contributions per user (Section 5.2); also implied by a stream
        of length K. Past it the holder adds noise only (``over_cap="noise"``, required by
        network DP since other users rely on that noise) or just forwards (``"forward"``).
    rng
        Generator or seed.
    over_cap
        Past the cap: ``"noise"`` or ``"forward"`` (see ``cap``).
    mechanism
        Noise distribution, ``"gaussian"`` or ``"laplace"``.
    record
        Keep the transcript.

    Returns
    -------
    WalkSumRun
        The final token (the estimate), the true sum and the noise's standard deviation.

    See Also
    --------
    ring_sum : The same on the ring.

    Examples
    --------
    >>> run = complete_sum(values=np.ones(4), steps=100, sigma=0.0, rng=1)
    >>> run.estimate == run.target == 100.0
    True
    """
    x = _as_stream(values, None, "values")
    n = x.shape[0]
    if n < 2:
        raise InvalidParameterError(f"values must describe at least n=2 users, got {n}")
    t = check_int("steps", steps, low=1)
    s = check_real("sigma", sigma, low=0.0)
    if cap is not None:
        cap = check_int("cap", cap, low=0)
    if over_cap not in ("noise", "forward"):
        raise InvalidParameterError(f"over_cap must be 'noise' or 'forward', got {over_cap!r}")
    gen = as_rng(rng)
    stream = t if np.ndim(values) == 1 else x.shape[1]
    holders, rank, real = _walk_contributions(n, t, stream, cap, gen)
    contrib = np.where(real, x[holders, np.minimum(rank, x.shape[1] - 1)], 0.0)
    noisy = np.ones(t, dtype=bool) if over_cap == "noise" else real
    increments = contrib + np.where(noisy, _noise(mechanism, gen, s, t), 0.0)
    tokens = np.cumsum(increments)
    transcript = None
    if record:
        transcript = WalkTranscript(
            n=n,
            holders=holders,
            received=np.r_[0.0, tokens[:-1]],
            final=np.asarray(tokens[-1]),
            topology="complete",
        )
    n_noisy = int(noisy.sum()) if s > 0 else 0
    return WalkSumRun(
        estimate=float(tokens[-1]),
        target=float(math.fsum(contrib)),
        noise_std=s * math.sqrt(n_noisy),
        noise_additions=n_noisy,
        fake_contributions=int((~real & noisy).sum()),
        transcript=transcript,
    )


def complete_histogram(
    *,
    values: npt.ArrayLike,
    domain_size: int,
    steps: int,
    gamma: float,
    rng: object = None,
    cap: int | None = None,
    over_cap: Literal["noise", "forward"] = "noise",
    record: bool = True,
) -> WalkHistogramRun:
    """Private histogram on the complete graph (Alg. 5), values indexed ``0..L−1``.

    Over the cap a holder adds a uniform random item ("noise only") or forwards. The estimate
    uses the corrected debiasing ``(τ_l − γN/L − N_u/L)/(1 − γ)``.

    Parameters
    ----------
    values
        One value in ``0..L−1`` per user (shape ``(n,)``) or a stream per user ``(n, K)``.
    domain_size
        L, the number of values.
    steps
        Walk length T.
    gamma
        Blanket probability γ of RR_γ.
    rng
        Generator or seed.

    cap
        Maximum number of contributions per user (``None``: no cap).
    over_cap
        Past the cap: ``"noise"`` (add noise only, which network DP needs) or ``"forward"``.
    record
        Keep the transcript.

    Returns
    -------
    WalkHistogramRun
        The estimate, the true histogram and the raw token.

    See Also
    --------
    ring_histogram : The same on the ring.
    debias_histogram : The estimator it uses.

    Examples
    --------
    >>> run = complete_histogram(values=np.zeros(3, int), domain_size=2, steps=50, gamma=0.0,
    ...                          rng=0)
    >>> run.estimate.tolist()
    [50.0, 0.0]
    """
    size = check_int("domain_size", domain_size, low=2)
    g = check_probability("gamma", gamma, allow_one=False)
    items = _check_items(values, size, "values")
    if items.ndim == 1:
        items = items[:, None]
    if items.ndim != 2 or items.shape[0] < 2:
        raise InvalidParameterError(
            f"values must have shape (n,) or (n, K) with n >= 2, got {items.shape}"
        )
    n = items.shape[0]
    t = check_int("steps", steps, low=1)
    if cap is not None:
        cap = check_int("cap", cap, low=0)
    if over_cap not in ("noise", "forward"):
        raise InvalidParameterError(f"over_cap must be 'noise' or 'forward', got {over_cap!r}")
    gen = as_rng(rng)
    stream = t if np.ndim(values) == 1 else items.shape[1]
    holders, rank, real = _walk_contributions(n, t, stream, cap, gen)
    true_items = items[holders, np.minimum(rank, items.shape[1] - 1)]
    outputs = _randomize_items(true_items, domain_size=size, gamma=g, rng=gen)
    uniform = ~real & (over_cap == "noise")
    outputs = np.where(uniform, gen.integers(0, size, t), outputs)
    kept = real | uniform
    final, received = _histogram_tokens(np.zeros(size), outputs[kept], size, False)
    transcript = None
    if record:
        onehot = np.zeros((t, size))
        onehot[np.flatnonzero(kept), outputs[kept]] = 1.0
        received = np.cumsum(onehot, axis=0) - onehot
        transcript = WalkTranscript(
            n=n, holders=holders, received=received, final=final, topology="complete"
        )
    n_real = int(real.sum())
    n_uniform = int(uniform.sum())
    return WalkHistogramRun(
        estimate=debias_histogram(final, gamma=g, randomized_items=n_real, uniform_items=n_uniform),
        target=np.bincount(true_items[real], minlength=size).astype(np.float64),
        raw=final,
        gamma=g,
        randomized_items=n_real,
        uniform_items=n_uniform,
        transcript=transcript,
    )
