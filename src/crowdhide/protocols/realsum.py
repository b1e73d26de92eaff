"""Shuffled sums of bounded reals.

* **Multi-message** protocol of Cheu et al. (EUROCRYPT 2019, Algorithms 5–6): each user maps
  ``x ∈ [lower, upper]`` to ``u = (x − lower)/(upper − lower) ∈ [0, 1]``, rounds ``u·r`` at
  random to ``x̄ ∈ {⌊ur⌋, ⌈ur⌉}`` (unbiased), and sends the r bits ``1^{x̄} 0^{r − x̄}``, each
  through the bit-sum randomizer R⁰_λ; all n·r bits go through one shuffle. Analyzer:
  ``(1/r) · (Σ y − p N/2)/(1 − p)`` (N = n·r, p = λ/n), rescaled to the original units.
  Privacy: the single shuffle is a post-processing of r separately shuffled bit sums (Lemma
  3.6), and the encoder's randomness is a mixture (joint convexity), so the protocol is at
  least as private as the r-fold composition of the certified shuffled binary-RR guarantee.
  The per-bit budget is chosen by the better of basic and advanced composition.
* **Single-message blanket** protocol of Balle, Bell, Gascón, Nissim (CRYPTO 2019, §4):
  each user rounds ``u·m`` at random to ``x̄ ∈ {0 … m}`` and sends it through (m+1)-ary
  randomized response; the analyzer debiases ``Σ y/m``. Privacy: the shared accountant's
  certificate for shuffled k-RR with k = m + 1.

Both report the estimate, its standard error (exact for the given data up to the realized
rounding), and the certificate; the number of messages r (multi) or levels m (single) is
chosen to minimize the predicted error unless given.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._validation import as_rng, check_bool, check_int, check_probability, check_real
from crowdhide.accounting import PrivacyStatement, advanced_composition, calibrate
from crowdhide.errors import InvalidParameterError
from crowdhide.mechanisms import KaryRandomizedResponse
from crowdhide.mechanisms.arrays import as_real_array
from crowdhide.protocols import krr_accounting
from crowdhide.protocols.bitsum import (
    BitSumRandomizer,
    eps0_from_lambda,
    lambda_from_eps0,
    lemma48_lambda,
)
from crowdhide.protocols.results import SumRun, central_sum_baseline
from crowdhide.protocols.shuffler import Shuffler

__all__ = [
    "MAX_MESSAGES",
    "randomized_rounding",
    "run_real_sum",
    "run_single_message_sum",
    "simulate_real_sum",
    "simulate_single_message_sum",
    "unary_encode",
]

#: Largest number of messages a single run materializes: the CSPRNG shuffle needs ~25 bytes
#: per message at its peak (keys, permutation, tie check), ~1.25 GB here.
MAX_MESSAGES = 50_000_000


def randomized_rounding(
    values: npt.ArrayLike, *, levels: int, rng: Any = None
) -> npt.NDArray[np.int64]:
    """Round ``u·levels`` (u ∈ [0, 1]) to ``⌊u·levels⌋ + Bernoulli(frac)``: unbiased.

    Examples
    --------
    >>> randomized_rounding([0.0, 1.0, 0.5], levels=4, rng=0).tolist()
    [0, 4, 2]
    """
    u = as_real_array("values", values)
    m = check_int("levels", levels, low=1)
    if u.size and (u.min() < 0.0 or u.max() > 1.0):
        raise InvalidParameterError(
            f"values must lie in [0, 1], got range [{u.min()!r}, {u.max()!r}]"
        )
    scaled = u * m
    base = np.floor(scaled)
    frac = np.clip(scaled - base, 0.0, 1.0)
    up = as_rng(rng).random(u.shape) < frac
    return np.minimum(base.astype(np.int64) + up, m)


def unary_encode(levels_used: npt.ArrayLike, *, r: int) -> npt.NDArray[np.uint8]:
    """Rows ``1^{x̄} 0^{r − x̄}`` for each ``x̄ ∈ {0 … r}`` (Algorithm 5's output).

    Examples
    --------
    >>> unary_encode([0, 2, 3], r=3).tolist()
    [[0, 0, 0], [1, 1, 0], [1, 1, 1]]
    """
    x = np.asarray(levels_used, dtype=np.int64)
    rr = check_int("r", r, low=1)
    return (np.arange(rr)[None, :] < x[:, None]).astype(np.uint8)


def _to_unit(values: npt.ArrayLike, lower: float, upper: float) -> npt.NDArray[np.float64]:
    lo, hi = check_real("lower", lower), check_real("upper", upper)
    if not hi > lo:
        raise InvalidParameterError(f"upper must be > lower, got lower={lo!r}, upper={hi!r}")
    x = as_real_array("values", values).ravel()
    if x.size and (x.min() < lo or x.max() > hi):
        raise InvalidParameterError(
            f"values must lie in the declared bounds [{lo:g}, {hi:g}], got range "
            f"[{x.min():g}, {x.max():g}]"
        )
    return np.clip((x - lo) / (hi - lo), 0.0, 1.0)


# ---- multi-message (Cheu et al.) ------------------------------------------------------------


def _per_bit_budget(epsilon: float, delta: float, r: int) -> tuple[float, float, bool]:
    """Per-bit ``(ε_b, δ_b, advanced)`` whose r-fold composition is (ε, δ): the larger ε_b of
    basic composition (ε/r, δ/r) and advanced composition (δ' = δ/2, δ_b = δ/(2r)).

    δ_b is rounded down until the composed δ, computed in floating point, is at most δ (at
    δ = 1e-5, r = 5, ``5 · (δ/5)`` is one ulp above δ), so the composed statement meets a
    δ target exactly.
    """
    basic_delta = _below(lambda b: r * b <= delta, delta / r)
    if r == 1:
        return epsilon, basic_delta, False
    slack = delta / 2.0
    advanced_delta = _below(lambda b: r * b + slack <= delta, delta / (2.0 * r))

    def composed_within(eps_b: float) -> bool:
        total = advanced_composition(epsilon=eps_b, delta=0.0, count=r, delta_slack=slack)
        return bool(total.epsilon <= epsilon)

    # Largest ε_b whose advanced composition stays within ε (monotone in ε_b).
    advanced = calibrate(
        composed_within, low=0.0, high=epsilon, increasing=False, rtol=1e-15, what="per-bit epsilon"
    )
    if advanced > epsilon / r:
        return advanced, advanced_delta, True
    return epsilon / r, basic_delta, False


def _below(holds: Callable[[float], bool], value: float) -> float:
    """``value``, moved down by ulps until ``holds`` (a rounding correction: a few steps)."""
    for _ in range(64):
        if holds(value):
            return value
        value = math.nextafter(value, 0.0)
    raise ArithmeticError(f"no float near {value!r} passes the rounding check")


def _multi_parameters(
    *, n: int, r: int, epsilon: float, delta: float, calibration: str
) -> tuple[float, PrivacyStatement]:
    """λ for r messages per user and the statement of the composed protocol."""
    eps_b, delta_b, use_advanced = _per_bit_budget(epsilon, delta, r)
    if calibration == "exact":
        eps0 = krr_accounting.calibrate_krr_eps0(epsilon=eps_b, delta=delta_b, n=n, k=2)
        lam = lambda_from_eps0(n=n, eps0=eps0)
    elif calibration == "paper":
        lam = lemma48_lambda(n=n, epsilon=eps_b, delta=delta_b)
    else:
        raise InvalidParameterError(f"calibration must be 'exact' or 'paper', got {calibration!r}")
    eps0 = eps0_from_lambda(n=n, lam=lam)
    per_bit, bound = krr_accounting.certify_krr(eps0=eps0, n=n, k=2, delta=delta_b)
    per_bit = min(per_bit, eps0)
    if r == 1:
        total_eps, total_delta = per_bit, delta_b
    elif use_advanced:
        total = advanced_composition(
            epsilon=per_bit, delta=delta_b, count=r, delta_slack=delta / 2.0
        )
        total_eps, total_delta = float(total.epsilon), float(total.delta)
    else:
        total_eps, total_delta = r * per_bit, min(1.0, r * delta_b)
    statement = PrivacyStatement(
        epsilon=total_eps,
        delta=total_delta,
        kind="upper",
        source=bound + ", composed over bit positions",
        inputs={"eps0": eps0, "n": n, "k": 2, "messages_per_user": r},
    )
    return lam, statement.with_target(epsilon=epsilon, delta=delta)


def simulate_real_sum(
    unit_values: npt.ArrayLike, *, r: int, lam: float, rng: Any = None, engine: bool = False
) -> tuple[float, float, int]:
    """Run the multi-message protocol with given (r, λ) on values in [0, 1].

    Returns ``(estimate of Σu, its standard error, number of messages)``. The standard error
    is exact for the data up to the rounding part, which uses the realized fractions
    ``f(1 − f)`` of ``u·r``. ``engine=True`` runs it as users → shuffler → analyzer on the
    engine (same result for the same ``rng``).
    """
    estimate, sd, count, _ = _real_sum_data_path(
        unit_values, r=r, lam=lam, rng=rng, engine=check_bool("engine", engine)
    )
    return estimate, sd, count


def _real_sum_data_path(
    unit_values: npt.ArrayLike, *, r: int, lam: float, rng: Any, engine: bool
) -> tuple[float, float, int, dict[str, Any] | None]:
    """:func:`simulate_real_sum`, directly or on the engine (then also the traffic)."""
    u = as_real_array("unit_values", unit_values).ravel()
    n = check_int("number of users", u.size, low=2)
    rr = check_int("r", r, low=1)
    if n * rr > MAX_MESSAGES:
        raise InvalidParameterError(f"messages * n must be <= {MAX_MESSAGES}, got {n * rr}")
    gen = as_rng(rng)
    randomizer = BitSumRandomizer(n=n, lam=lam)
    p = randomizer.replace_probability

    def randomize(unit: npt.NDArray[np.float64]) -> npt.NDArray[np.uint8]:
        rounded = randomized_rounding(unit, levels=rr, rng=gen)
        bits = randomizer.randomize(unary_encode(rounded, r=rr).ravel(), rng=gen)
        return bits.reshape(unit.size, rr)  # row i: user i's r messages

    def analyze(messages: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        count = int(messages.shape[0])
        ones = float(np.count_nonzero(messages))
        value = (ones - p * count / 2.0) / (1.0 - p) / rr
        return {"estimate": np.array([value]), "messages": np.array([count])}

    traffic: dict[str, Any] | None = None
    if engine:
        from crowdhide.protocols.engine_plan import run_on_engine

        run = run_on_engine(
            {"unit": u},
            randomize=lambda users: randomize(users["unit"]),
            analyze=analyze,
            messages_per_user=rr,
        )
        result = run.result
        traffic = run.traffic()
    else:
        shuffler = Shuffler()
        shuffler.submit(randomize(u).ravel())
        result = analyze(shuffler.release().messages)
    count = int(result["messages"][0])
    frac = u * rr - np.floor(u * rr)
    noise_var = count * (p / 2) * (1 - p / 2) / (1 - p) ** 2
    sd = math.sqrt(noise_var + float(np.sum(frac * (1 - frac)))) / rr
    return float(result["estimate"][0]), sd, count, traffic


def _multi_predicted_sd(n: int, r: int, lam: float) -> float:
    p = lam / n
    noise = n * r * (p / 2) * (1 - p / 2) / (1 - p) ** 2
    rounding = n / 4.0  # Σ f(1 − f) <= n/4, in units of x̄
    return math.sqrt(noise + rounding) / r


def run_real_sum(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    messages: int | None = None,
    calibration: str = "exact",
    rng: Any = None,
    engine: bool = False,
) -> SumRun:
    """Cheu et al.'s multi-message real-sum protocol, end to end.

    Parameters
    ----------
    values
        One real value per user, inside ``[lower, upper]`` (checked, never clipped here).
    lower, upper
        Declared, data-independent bounds.
    epsilon, delta
        Target guarantee.
    messages
        Messages per user r (= rounding precision); default: the r among 1, 2, 4, …, 64
        with the smallest predicted standard error (searched upwards, stopping once the
        prediction is 5 % past its minimum — each candidate costs one calibration).
    calibration
        ``"exact"`` (shared accountant) or ``"paper"`` (Lemma 4.8 per bit).
    rng
        Randomness of the users' randomizers (the shuffler uses the OS CSPRNG).
    engine
        Run users → shuffler → analyzer on the engine
        (:func:`crowdhide.protocols.engine_plan.run_on_engine`, r messages per user shuffled
        individually); same estimate as the direct path for the same ``rng``, plus the
        per-hop ``traffic``.

    Returns
    -------
    SumRun
        The estimate, the exact sum, the standard error, the certificate composed over the bit
        positions and the central baseline.

    See Also
    --------
    run_single_message_sum : One message per user instead of r.
    run_bit_sum : The protocol applied to every bit position.
    """
    use_engine = check_bool("engine", engine)
    u = _to_unit(values, lower, upper)
    n = check_int("number of users", u.size, low=2)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    gen = as_rng(rng)
    if messages is None:
        r, lam, privacy = _choose_messages(n=n, epsilon=eps, delta=d, calibration=calibration)
    else:
        r = check_int("messages", messages, low=1)
        if n * r > MAX_MESSAGES:
            raise InvalidParameterError(f"messages * n must be <= {MAX_MESSAGES}, got {n * r}")
        lam, privacy = _multi_parameters(n=n, r=r, epsilon=eps, delta=d, calibration=calibration)
    unit_run = _real_sum_data_path(u, r=r, lam=lam, rng=gen, engine=use_engine)
    return _sum_run(
        "real",
        unit_run,
        values=values,
        lower=lower,
        upper=upper,
        privacy=privacy,
        parameters={"calibration": calibration, "messages_per_user": r, "lambda": lam},
        rng=gen,
    )


def _choose_messages(
    *, n: int, epsilon: float, delta: float, calibration: str
) -> tuple[int, float, PrivacyStatement]:
    """``(r, λ, statement)`` for the r among 1, 2, 4, …, 64 with the smallest predicted error."""
    best: tuple[float, int, float, PrivacyStatement] | None = None
    for r_try in (1, 2, 4, 8, 16, 32, 64):
        if n * r_try > MAX_MESSAGES:
            break
        try:
            lam_try, privacy_try = _multi_parameters(
                n=n, r=r_try, epsilon=epsilon, delta=delta, calibration=calibration
            )
        except ValueError:
            continue  # e.g. outside Lemma 4.8's range for this r
        sd = _multi_predicted_sd(n, r_try, lam_try)
        if best is None or sd < best[0]:
            best = (sd, r_try, lam_try, privacy_try)
        elif sd > 1.05 * best[0]:
            break  # the predicted error is unimodal in r: stop past the minimum
    if best is None:
        raise InvalidParameterError(
            f"no feasible number of messages for n={n}, epsilon={epsilon}, delta={delta} with "
            f"calibration={calibration!r}"
        )
    return best[1], best[2], best[3]


def _sum_run(
    protocol: str,
    unit_run: tuple[float, float, int, dict[str, Any] | None],
    *,
    values: npt.ArrayLike,
    lower: float,
    upper: float,
    privacy: PrivacyStatement,
    parameters: dict[str, Any],
    rng: np.random.Generator,
) -> SumRun:
    """A real-sum run from its data path's ``(Σu estimate, sd, messages, traffic)``: back to
    the original units, with the central baseline at the same (ε, δ) (drawn after the data
    path from the same generator)."""
    unit_estimate, sd_unit, message_count, traffic = unit_run
    scale = float(upper) - float(lower)
    exact = float(as_real_array("values", values).sum())
    n = int(np.asarray(values).size)
    assert privacy.target is not None
    central = central_sum_baseline(
        exact=exact,
        sensitivity=scale,
        epsilon=privacy.target.epsilon,
        delta=privacy.target.delta,
        rng=rng,
    )
    return SumRun(
        protocol=protocol,
        n=n,
        estimate=unit_estimate * scale + n * float(lower),
        exact=exact,
        std_error=sd_unit * scale,
        privacy=privacy,
        messages=message_count,
        central=central,
        parameters=parameters,
        traffic=traffic,
    )


# ---- single message (Balle et al. privacy blanket) -------------------------------------------


def simulate_single_message_sum(
    unit_values: npt.ArrayLike,
    *,
    levels: int,
    eps0: float,
    rng: Any = None,
    engine: bool = False,
) -> tuple[float, float, int]:
    """Run the single-message protocol with m = ``levels`` and (m+1)-RR at ``eps0``.

    Returns ``(estimate of Σu, its standard error, number of messages)``. Unbiased:
    ``E[y/m] = (1 − γ) x̄/m + γ/2`` and ``E[x̄/m] = u``. ``engine=True`` runs it as
    users → shuffler → analyzer on the engine (same result for the same ``rng``).
    """
    estimate, sd, count, _ = _single_sum_data_path(
        unit_values, levels=levels, eps0=eps0, rng=rng, engine=check_bool("engine", engine)
    )
    return estimate, sd, count


def _single_sum_data_path(
    unit_values: npt.ArrayLike, *, levels: int, eps0: float, rng: Any, engine: bool
) -> tuple[float, float, int, dict[str, Any] | None]:
    """:func:`simulate_single_message_sum`, directly or on the engine (then the traffic)."""
    u = as_real_array("unit_values", unit_values).ravel()
    m = check_int("levels", levels, low=1)
    gen = as_rng(rng)
    krr = KaryRandomizedResponse(k=m + 1, eps0=eps0)
    gamma = krr.blanket_probability
    rounded = randomized_rounding(u, levels=m, rng=gen)

    def analyze(messages: npt.NDArray[Any]) -> dict[str, npt.NDArray[Any]]:
        total = float(messages.sum()) / m
        value = (total - messages.shape[0] * gamma / 2.0) / (1.0 - gamma)
        return {"estimate": np.array([value]), "messages": np.array([messages.shape[0]])}

    traffic: dict[str, Any] | None = None
    if engine:
        from crowdhide.protocols.engine_plan import run_on_engine

        run = run_on_engine(
            {"level": rounded},
            randomize=lambda users: krr.randomize(users["level"], rng=gen),
            analyze=analyze,
        )
        result = run.result
        traffic = run.traffic()
    else:
        shuffler = Shuffler()
        shuffler.submit(krr.randomize(rounded, rng=gen))
        result = analyze(shuffler.release().messages)
    # Var(y/m | x̄) = γ(m+2)/(12m) + γ(1−γ)(x̄/m − ½)², plus (1−γ)² times the rounding variance.
    frac = u * m - np.floor(u * m)
    centred = rounded / m - 0.5
    var = float(np.sum(gamma * (m + 2) / (12.0 * m) + gamma * (1 - gamma) * centred**2))
    var += (1 - gamma) ** 2 * float(np.sum(frac * (1 - frac))) / m**2
    sd = math.sqrt(var) / (1 - gamma)
    return float(result["estimate"][0]), sd, int(result["messages"][0]), traffic


def _single_predicted_sd(n: int, m: int, gamma: float) -> float:
    per_user = (1 - gamma) / (4.0 * m * m) + gamma * (m + 2) / (12.0 * m) + gamma * (1 - gamma) / 4
    return math.sqrt(n * per_user) / (1 - gamma)


def run_single_message_sum(
    values: npt.ArrayLike,
    *,
    lower: float,
    upper: float,
    epsilon: float,
    delta: float,
    levels: int | None = None,
    rng: Any = None,
    engine: bool = False,
) -> SumRun:
    """Balle et al.'s single-message real sum (randomized rounding + (m+1)-ary RR).

    ``levels`` m: rounding precision; default: the m among 1, 2, 4, …, 256 with the smallest
    predicted standard error after exact calibration of ε0 for k = m + 1. ``engine=True``:
    run users → shuffler → analyzer on the engine (same estimate for the same ``rng``, plus
    the per-hop ``traffic``).

    Parameters
    ----------
    values
        One real value per user, inside ``[lower, upper]``.
    lower, upper
        Declared, data-independent bounds.
    epsilon, delta
        The target guarantee.
    levels
        The rounding precision m (default: chosen as above).
    rng
        Randomness of the users' randomizers (the shuffler uses the OS CSPRNG).
    engine
        Run as a plan on the engine (see above).

    Returns
    -------
    SumRun
        The estimate, the exact sum, the standard error, the certificate and the central
        baseline.

    See Also
    --------
    run_real_sum : The multi-message protocol.
    """
    use_engine = check_bool("engine", engine)
    u = _to_unit(values, lower, upper)
    n = check_int("number of users", u.size, low=2)
    eps = check_real("epsilon", epsilon, low=0.0, low_open=True)
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    gen = as_rng(rng)
    m, eps0 = _choose_levels(n=n, epsilon=eps, delta=d, levels=levels)
    privacy = krr_accounting.krr_privacy(eps0=eps0, n=n, k=m + 1, delta=d, target_epsilon=eps)
    unit_run = _single_sum_data_path(u, levels=m, eps0=eps0, rng=gen, engine=use_engine)
    blanket = KaryRandomizedResponse(k=m + 1, eps0=eps0).blanket_probability
    return _sum_run(
        "single",
        unit_run,
        values=values,
        lower=lower,
        upper=upper,
        privacy=privacy,
        parameters={"levels": m, "blanket_probability": blanket},
        rng=gen,
    )


def _choose_levels(
    *, n: int, epsilon: float, delta: float, levels: int | None
) -> tuple[int, float]:
    """``(m, ε0)``: the m among 1, 2, 4, …, 256 (or the given one) with the smallest predicted
    error, and the largest ε0 the accountant certifies for (m+1)-RR at (ε, δ)."""
    candidates = (
        (1, 2, 4, 8, 16, 32, 64, 128, 256)
        if levels is None
        else (check_int("levels", levels, low=1),)
    )
    best: tuple[float, int, float] | None = None
    for m in candidates:
        # The search uses the fast certificates; the chosen m is recalibrated with the best.
        eps0 = krr_accounting.calibrate_krr_eps0(
            epsilon=epsilon, delta=delta, n=n, k=m + 1, fast=True
        )
        gamma = KaryRandomizedResponse(k=m + 1, eps0=eps0).blanket_probability
        sd = _single_predicted_sd(n, m, gamma)
        if best is None or sd < best[0]:
            best = (sd, m, eps0)
        elif sd > 1.05 * best[0]:
            break  # past the minimum of the (unimodal) predicted error
    assert best is not None
    _, m, eps0 = best
    best_eps0 = krr_accounting.calibrate_krr_eps0(epsilon=epsilon, delta=delta, n=n, k=m + 1)
    return m, max(eps0, best_eps0)
