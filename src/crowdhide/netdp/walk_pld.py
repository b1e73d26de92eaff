"""Privacy-loss distributions of walk cycles and their per-observer composition.

Every per-cycle privacy profile of :mod:`crowdhide.netdp.cycle_privacy` is turned into a
privacy-loss distribution (:class:`~crowdhide.accounting.composition.PldCurve`)
on a common loss lattice ``k h`` by "connecting the dots" (Doroshenko, Ghazi, Kamath, Kumar,
Manurangsi 2022): its hockey-stick curve equals the profile at lattice points and lies above it
in between (a profile is convex in e^ε), so it dominates the cycle under composition. Observer
v's loss is the composition of the PLDs of its cycles; :func:`observer_epsilons` gives ε at δ
for every observer.

Two ways of composing the *same* PLDs are offered:

* ``accelerated=False`` — :class:`~crowdhide.accounting.composition.PldCurve`'s ``compose`` /
  ``self_compose`` / ``epsilon`` (dp_accounting's algorithms; observers with equal cycle
  counts share one composition). This is
  the reference path; it costs one chain of FFT convolutions per distinct observer.
* ``accelerated=True`` (default) — the same convolutions for all observers at once: the
  spectrum of every cycle PLD is computed once, and an observer costs one row of a matrix
  product, one complex exponential and one inverse FFT on a window of ±12 standard deviations;
  mass that could alias around that window is bounded by a Chernoff bound with the exact
  moment generating functions and added to δ, as is a bound on the FFTs' rounding error
  (:func:`_rounding_allowance`), tails are moved pessimistically (up to +inf,
  down to the window's edge), and ε is rounded *up* to the lattice. It never returns less than
  the reference path (tested on a grid). It is kept because every observer's cycle counts
  differ on realistic walks, so observers cannot share compositions: composing is ~70× faster
  than the reference path (``benchmarks/bench_netdp_pld.py``: n = 1000, T = 1e5: 6.3 s
  instead of 446 s; 8-14× end to end with the PLD construction).
"""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
from scipy import sparse

from crowdhide._validation import check_probability
from crowdhide.accounting.binomial_rows import rowwise_logsumexp
from crowdhide.accounting.composition import PldCurve, fft_relative_error
from crowdhide.accounting.pld_pmf import DensePmf, LossDistribution, to_dense
from crowdhide.errors import InvalidParameterError
from crowdhide.netdp.cycle_privacy import CycleMechanism, FloatArray, IntArray, cycle_profile

__all__ = ["cycle_plds", "observer_epsilons", "pld_from_profile"]


def _symmetric_connect_dots(d: FloatArray, step: float) -> tuple[FloatArray, float]:
    """Lattice masses (k = −K..K) and +inf mass of the dominating PLD of profile ``d``.

    Positive side: ``a_{j+1} = g_j − e^{−h} g_{j+1}`` with ``g_j = (δ_j − δ_{j+1})/(1 − e^{−h})``.
    Negative side: the mirror image imposed by symmetry, ``a_{−k} = a_k e^{−k h}`` — the same
    masses as ``dp_accounting``'s ``create_pmf_pessimistic_connect_dots`` on the symmetric
    extension of the profile, but without its cancellation (δ(−kh) ≈ 1 − e^{−kh} there costs
    ~1e-10 of total mass). Remaining mass sits at 0; ``d[K]`` becomes mass at +inf.
    """
    big_k = d.size - 1
    inf_mass = float(d[-1])
    finite = np.append(np.maximum(d - inf_mass, 0.0), 0.0)
    g = np.append((finite[:-1] - finite[1:]) / -math.expm1(-step), 0.0)
    positive = np.maximum(g[:-1] - math.exp(-step) * g[1:], 0.0)[:big_k]  # a_1..a_K
    negative = positive * np.exp(-np.arange(1, big_k + 1) * step)  # a_{−k}
    zero = max(0.0, 1.0 - inf_mass - float(positive.sum() + negative.sum()))
    return np.concatenate([negative[::-1], [zero], positive]), inf_mass


def pld_from_profile(profile: npt.ArrayLike, *, step: float) -> PldCurve:
    """Dominating PLD of a symmetric profile given at ε = 0, h, …, K h.

    The PLD's δ equals the profile at every lattice point and lies above it in between.
    Negative masses from round-off are clipped and any shortfall at a lattice point is added to
    the +inf mass, so the result dominates the profile everywhere.

    Examples
    --------
    >>> from crowdhide.accounting.gaussian import gaussian_log_delta
    >>> prof = np.exp(gaussian_log_delta(np.arange(0, 400) * 0.01, mu=0.1))
    >>> curve = pld_from_profile(prof, step=0.01)
    >>> bool(curve.delta(0.5) >= float(np.exp(gaussian_log_delta(0.5, mu=0.1))))
    True
    """
    d = np.minimum(np.asarray(profile, dtype=np.float64), 1.0)
    masses, inf_mass = _symmetric_connect_dots(d, step)
    big_k = d.size - 1

    def build(infinite: float) -> LossDistribution:
        return LossDistribution(DensePmf(step, -big_k, masses, min(1.0, infinite), True))

    # δ of the lattice PLD at ε = jh, j = 0..K (tail sums, vectorized): clipping round-off may
    # leave it a hair below the profile, and the shortfall then goes to the +inf mass.
    losses = np.arange(-big_k, big_k + 1) * step
    tail1 = np.append(np.cumsum(masses[::-1])[::-1][1:], 0.0)[big_k:]
    tail2 = np.append(np.cumsum((masses * np.exp(losses[-1] - losses))[::-1])[::-1][1:], 0.0)
    achieved = tail1 - np.exp(losses[big_k:] - losses[-1]) * tail2[big_k:] + inf_mass
    shortfall = max(0.0, float(np.max(d - achieved)))
    return PldCurve(build(inf_mass + shortfall))


#: (step, lattice indices, masses, +inf mass, carried ℓ1 error) of one PLD.
_Lattice = tuple[float, IntArray, FloatArray, float, float]


def _lattice(curve: PldCurve) -> _Lattice:
    """(step, lattice indices, masses, +inf mass, ℓ1 error carried from a composition) of
    a symmetric PLD (its remove PMF in dense form), for the accelerated composition."""
    pmf = to_dense(curve.loss_distribution.remove)
    probs = np.asarray(pmf.probs, dtype=np.float64)
    k = np.arange(probs.size, dtype=np.int64) + int(pmf.lower)
    return (
        float(pmf.step),
        k,
        probs,
        float(pmf.infinity_mass),
        curve.composition_error,
    )


def _as_counts(counts: npt.ArrayLike | sparse.spmatrix, bins: int) -> sparse.csr_matrix:
    dense = None if sparse.issparse(counts) else np.asarray(counts, dtype=np.float64)
    shape = counts.shape if dense is None else dense.shape  # type: ignore[union-attr]
    if len(shape) != 2 or shape[1] != bins:
        raise InvalidParameterError(f"counts must have shape (observers, {bins}), got {shape}")
    # Sparse rows: an observer has few cycle groups out of many, and the products below cost
    # O(non-zeros) instead of O(observers × groups).
    return sparse.csr_matrix(counts if dense is None else dense, dtype=np.float64)


def observer_epsilons(
    counts: npt.ArrayLike | sparse.spmatrix,
    plds: list[PldCurve],
    *,
    delta: float,
    accelerated: bool = True,
) -> FloatArray:
    """ε at ``delta`` of the composition, for each row v, of ``counts[v, b]`` copies of
    ``plds[b]`` (PLDs from :func:`pld_from_profile` on one lattice; ``counts`` dense or
    scipy-sparse). ``accelerated`` selects the batched FFT composition (see the module).

    Examples
    --------
    >>> from crowdhide.accounting.gaussian import gaussian_epsilon, gaussian_log_delta
    >>> prof = np.exp(gaussian_log_delta(np.arange(0, 400) * 0.01, mu=0.1))
    >>> pld = pld_from_profile(prof, step=0.01)
    >>> eps = observer_epsilons([[100]], [pld], delta=1e-5)
    >>> exact = gaussian_epsilon(mu=1.0, delta=1e-5)   # 100 Gaussians of shift 0.1
    >>> bool(exact <= eps[0] < exact + 0.05)
    True
    """
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    c = _as_counts(counts, len(plds))
    if not plds:
        return np.zeros(c.shape[0])
    if accelerated:
        return _compose_fft(c, [_lattice(q) for q in plds], d)
    return _compose_dp_accounting(c, plds, d)


def _compose_dp_accounting(c: sparse.csr_matrix, plds: list[PldCurve], d: float) -> FloatArray:
    """Reference path: :class:`PldCurve` composition, one per distinct row of counts."""
    rows, inverse = np.unique(c.toarray(), axis=0, return_inverse=True)
    eps = np.zeros(rows.shape[0])
    for i, row in enumerate(rows):
        parts = [(int(b), int(row[b])) for b in np.nonzero(row)[0]]
        if not parts:
            continue
        total: PldCurve | None = None
        for b, count in parts:
            block = plds[b].self_compose(count) if count > 1 else plds[b]
            total = block if total is None else total.compose(block)
        assert total is not None
        eps[i] = total.epsilon(d)
    return np.asarray(eps[inverse.ravel()], dtype=np.float64)


def _fft_bins(
    lattices: list[_Lattice], c: sparse.csr_matrix
) -> tuple[int, FloatArray, list[FloatArray], list[IntArray]]:
    """FFT size, per-bin +inf mass and normalized masses truncated to the FFT window."""
    mean_b = np.array([float(np.sum(m * k)) for _, k, m, _, _ in lattices])
    var_b = np.array([float(np.sum(m * k**2)) for _, k, m, _, _ in lattices])
    var_b = np.maximum(var_b - mean_b**2, 0.0)
    width = float(np.max(np.abs(c @ mean_b) + 12.0 * np.sqrt(c @ var_b))) + 4.0
    size = 1 << max(6, math.ceil(math.log2(2.0 * width + 4.0)))
    half = size // 2 - 1
    infinite = np.empty(len(lattices))
    norm_masses: list[FloatArray] = []
    ks: list[IntArray] = []
    for b, (_, k, masses, inf_mass, _) in enumerate(lattices):
        m = masses.copy()
        # per-bin cut at ±30 sd (mass above -> +inf, below -> the cut): keeps the moment
        # generating functions of the alias bound finite-tailed; pessimistic both ways
        sd_b = math.sqrt(var_b[b])
        upper = min(half, math.ceil(mean_b[b] + 30.0 * sd_b + 2.0))
        lower = max(-half, math.floor(mean_b[b] - 30.0 * sd_b - 2.0))
        above, below = k > upper, k < lower
        inf_b = min(1.0, inf_mass + float(m[above].sum()))
        inside = ~above & ~below
        m_in, k_in = m[inside], k[inside]
        if below.any():
            m_in[0] += float(m[below].sum())  # k_in[0] == lower
        infinite[b] = inf_b
        norm_masses.append(m_in / max(1.0 - inf_b, 1e-300))
        ks.append(k_in)
    return size, infinite, norm_masses, ks


def _compose_fft(
    c: sparse.csr_matrix,
    lattices: list[_Lattice],
    d: float,
    chunk: int = 256,
) -> FloatArray:
    """Accelerated path: all observers' compositions by one batched FFT (see the module)."""
    step = lattices[0][0]
    if any(abs(h - step) > 1e-15 * step for h, *_ in lattices):
        raise InvalidParameterError("plds must share one lattice step")
    size, infinite, norm_masses, ks = _fft_bins(lattices, c)
    half = size // 2 - 1
    log_keep = c @ np.log1p(-np.minimum(infinite, 1.0 - 1e-16))
    spent = -np.expm1(log_keep)
    support = c @ np.array([int(np.max(np.abs(k))) if k.size else 0 for k in ks])
    log_phi = np.empty((len(lattices), size // 2 + 1), dtype=np.complex128)
    for b, (m, k) in enumerate(zip(norm_masses, ks, strict=True)):
        ring = np.zeros(size)
        np.add.at(ring, k % size, m)
        with np.errstate(divide="ignore"):
            log_phi[b] = np.log(np.fft.rfft(ring))
    log_phi = np.where(np.isfinite(log_phi), log_phi, -800.0)
    mgf_table = _log_mgf_table(norm_masses, ks)
    errors = np.array([error for *_, error in lattices])
    allowance = _rounding_allowance(c, norm_masses, errors, size)
    losses = (np.arange(size // 2, size) - size // 2) * step  # ε >= 0 only
    up, down = np.exp(losses[-1] - losses), np.exp(losses - losses[-1])
    out = np.zeros(c.shape[0])
    for start in range(0, c.shape[0], chunk):
        rows = slice(start, min(start + chunk, c.shape[0]))
        spectrum = np.exp(c[rows] @ log_phi)
        pmf = np.fft.irfft(spectrum, n=size, axis=1)[:, : size // 2]  # losses 0 … (size/2−1)h
        pmf = np.maximum(pmf, 0.0)
        tail1 = np.cumsum(pmf[:, ::-1], axis=1)[:, ::-1]
        tail2 = np.cumsum((pmf * up)[:, ::-1], axis=1)[:, ::-1]
        t1 = np.concatenate([tail1[:, 1:], np.zeros((tail1.shape[0], 1))], axis=1)
        t2 = np.concatenate([tail2[:, 1:], np.zeros((tail2.shape[0], 1))], axis=1)
        hockey = np.maximum(t1 - down[None, :] * t2, 0.0) + allowance[rows, None]
        alias = _alias_bound(c[rows], mgf_table, half)
        alias = np.where(support[rows] <= half, 0.0, alias)
        keep = np.exp(log_keep[rows])
        total = spent[rows][:, None] + keep[:, None] * (hockey + alias[:, None])
        ok = total <= d
        first = np.where(ok.any(axis=1), ok.argmax(axis=1), -1)
        out[rows] = np.where(first >= 0, losses[np.maximum(first, 0)], math.inf)
    return out


_LAMBDAS = np.logspace(-5.0, 0.5, 28)


def _rounding_allowance(
    c: sparse.csr_matrix, masses: list[FloatArray], errors: FloatArray, size: int
) -> FloatArray:
    """Per observer row, a bound on the absolute error of every hockey-stick value of
    :func:`_compose_fft` (added to each, like the alias bound).

    With ``C = Σ_b c_b`` cycles, x_b the normalized masses, ε_F
    (:func:`~crowdhide.accounting.composition.fft_relative_error`) the relative ℓ2 error of
    one transform of length N and η_b ≤ ε_F √N ‖x_b‖₂ the largest error of a spectrum entry:

    * spectra: ``|Π φ̂_b^{c_b} − Π φ_b^{c_b}| <= e^{Cη} Σ c_b |φ̂_b − φ_b|`` entrywise
      (telescoping, every ``|φ| <= 1 + η``), so ``e^{Cη} ε_F √N Σ c_b ‖x_b‖₂`` in ℓ2;
    * ``exp(c @ log φ̂)``: the logs, the sum of B products and the exponential move the
      exponent by at most ``γ_{B+3} Σ c_b |log φ̂_b| <= γ_{B+3} (A + π C)`` with
      ``e^{-A}`` the entry's modulus, so the entry by at most ``1.01 γ_{B+3} (1/e + π C)
      e^{Cη}`` (``A e^{-A} <= 1/e``): ``√N`` times that in ℓ2;
    * the inverse transform: ``1/√N`` of the spectrum's ℓ2 error, plus ε_F of the result;
    * ℓ1 over the N points is at most ``√N`` ℓ2, and a hockey-stick value moves by at most
      the ℓ1 error of the masses above it, plus ``2 N u`` for the two cumulative sums;
    * the inputs: each PMF's own ℓ1 error (rounding of the normalized masses, ``u``, and a
      composed input's carried allowance) counts ``c_b`` times.

    The per-transform ε_F is Higham's radix-2 bound with a factor 2 to spare (N is a power
    of two here); the bound is first order in u, with the factors 1.01 covering the rest
    while ``Cη < 10⁻³`` (else the batched path is refused).
    """
    u = 2.0**-53
    eps_f = fft_relative_error(size)
    l2 = np.array([math.sqrt(float(np.sum(m * m))) for m in masses])
    total = np.asarray(c.sum(axis=1), dtype=np.float64).ravel()
    eta = eps_f * math.sqrt(size) * float(np.max(l2, initial=0.0))
    if float(np.max(total, initial=0.0)) * eta >= 1e-3:
        raise InvalidParameterError(
            f"the batched composition of {int(np.max(total))} cycles is beyond its error "
            f"bound's range (FFT size {size}); use accelerated=False",
            parameter="counts",
        )
    gamma = (len(masses) + 3) * u / (1.0 - (len(masses) + 3) * u)
    spectra = eps_f * math.sqrt(size) * (c @ l2)
    exponent = 1.01 * gamma * (1.0 / math.e + math.pi * total) * math.sqrt(size)
    l2_pmf = (1.01 * (spectra + exponent)) / math.sqrt(size) + 1.01 * eps_f
    inputs = c @ (errors + u)
    return np.asarray(math.sqrt(size) * l2_pmf + 2.0 * size * u + inputs, dtype=np.float64)


def _log_mgf_table(masses: list[FloatArray], ks: list[IntArray]) -> FloatArray:
    """log E[e^{±λX_b}] for every bin b and every λ of ``_LAMBDAS``: shape (2, Λ, bins)."""
    table = np.zeros((2, _LAMBDAS.size, len(masses)))
    for b, (m, k) in enumerate(zip(masses, ks, strict=True)):
        pos = m > 0
        if not pos.any():
            continue
        log_m = np.log(m[pos])
        for i, sign in enumerate((1.0, -1.0)):
            expo = sign * _LAMBDAS[:, None] * k[pos][None, :] + log_m[None, :]
            table[i, :, b] = rowwise_logsumexp(expo)
    return table


def _alias_bound(counts: FloatArray, table: FloatArray, edge: int) -> FloatArray:
    """Chernoff bound on ``P(X > edge) + P(X < −edge)`` with the exact per-bin MGFs."""
    total = np.zeros(counts.shape[0])
    for i in range(2):
        exponents = counts @ table[i].T - _LAMBDAS[None, :] * edge  # (rows, Λ)
        total += np.exp(np.minimum(exponents.min(axis=1), 0.0))
    return np.asarray(np.minimum(total, 1.0), dtype=np.float64)


def _weighted_median(values: FloatArray, weights: FloatArray) -> float:
    order = np.argsort(values)
    cum = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cum, 0.5 * cum[-1])])


def cycle_plds(
    specs: list[dict[str, int] | None],
    weights: FloatArray,
    *,
    p: float,
    mechanism: CycleMechanism,
    resolution: int,
) -> tuple[float, list[PldCurve]]:
    """Dominating PLDs of per-cycle profiles (``cycle_profile(**spec)``; None: no loss), on one
    lattice; returns ``(step, plds)``.

    The lattice step is 2.5/resolution times the cycle-weighted median total variation. Each
    profile is evaluated on ``0, h, …`` and extended (new points only) until it falls below
    1e-30 or only its constant tail is left; the last value becomes mass at +inf.
    """

    def prof(spec: dict[str, int], grid: npt.ArrayLike) -> FloatArray:
        return cycle_profile(grid, p=p, mechanism=mechanism, **spec)

    tv = np.array([float(prof(sp, np.zeros(1))[0]) if sp else 0.0 for sp in specs])
    live = tv > 0
    ref = _weighted_median(tv[live], weights[live]) if live.any() else 1.0
    step = 2.5 * ref / resolution
    plds: list[PldCurve] = []
    for b, spec in enumerate(specs):
        if spec is None or not live[b]:
            plds.append(pld_from_profile(np.zeros(1), step=step))
            continue
        size = 1 << max(5, math.ceil(math.log2(16.0 * resolution * tv[b] / ref)))
        values = prof(spec, np.arange(size + 1) * step)
        while True:
            stalled = values[-1] >= 0.5 * values[size // 2]  # only the constant tail is left
            if values[-1] < 1e-30 or stalled or size > 2**16:
                break
            extra = prof(spec, np.arange(size + 1, 2 * size + 1) * step)
            values = np.concatenate([values, extra])
            size *= 2
        plds.append(pld_from_profile(values, step=step))
    return step, plds
