"""Full-population estimates of an Aggregate query from the tuples a protected run used.

Target sampling (Ladjel, Anciaux, Bellet, Scerri; convention U) drops real messages: with
probability σ a source draws its target uniformly among the T compute nodes of a grouping
set and sends its real tuple only when the draw hits its true target (footnote 5);
otherwise it sends a dummy, which the compute node discards. Flooding dummies and
scramblers only *add* dummies and forward every real message. Hence, independently for
every tuple and every grouping set,

    P(tuple used) = π = (1 − σ) + σ / T,

and the tuples a grouping set uses are a Bernoulli(π) sample of the population. The raw
``count(*)`` of a group is then about π times the true count (for σ = 0.2, T = 8: 82.5 %),
which reads as an error although it is the sampling the privacy certificate relies on.

For a group with true values ``y_1..y_N`` and used tuples ``U``:

* **count** — ``n = |U| ~ Binomial(N, π)``; ``n / π`` is unbiased for ``N``. The interval
  inverts the binomial exactly (Clopper–Pearson style over the integer N), so its coverage
  is at least the nominal level for every N and π.
* **sum** — the Horvitz–Thompson estimator ``Σ_U y / π`` is unbiased for ``Σ y``; its
  variance ``(1 − π)/π² · Σ y²`` is estimated without bias by ``(1 − π)/π² · Σ_U y²`` (the
  compute nodes also add up squares). Normal interval (approximate: CLT over the group).
* **avg** — given n, U is a simple random sample of the group, so ``Σ_U y / n`` is unbiased
  for the group mean (when n ≥ 1); Student-t interval with the finite-population factor
  ``1 − π`` (the expected sampled fraction).
* **too few tuples** — sum and avg intervals rest on the normal approximation, which means
  nothing for a handful of values: a group with fewer than :data:`MIN_TUPLES_FOR_INTERVAL`
  used tuples gets no sum/avg interval (NaN, ``null`` in JSON) and ``too_few_tuples``
  set; the reports print "too few tuples". Its count interval is exact and is kept. (With
  π = 1 nothing is sampled and every interval is the exact answer, whatever the size.)
* **min / max** — reported as observed on the used tuples: no unbiased correction exists
  (the observed min is never below the true min).

With σ = 0 (or no protection) π = 1 and every interval collapses to the exact answer.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from crowdhide._output import write_csv
from crowdhide._tables import Rows
from crowdhide._validation import check_probability
from crowdhide.errors import InvalidParameterError
from crowdhide.plans.aggregate import AggregateQuery, AggregateSetup, _decode, _plain
from crowdhide.plans.model import ExecutionPlan

__all__ = [
    "MIN_TUPLES_FOR_INTERVAL",
    "count_interval",
    "estimate_rows",
    "inclusion_probabilities",
    "inclusion_probability",
    "write_answer",
]

FloatArray = npt.NDArray[np.float64]

#: Fewest used tuples for which a group's sum and avg intervals are reported.
MIN_TUPLES_FOR_INTERVAL = 5


def inclusion_probability(*, sigma: float, targets: int) -> float:
    """Probability that a tuple's real message reaches its compute node: ``1 − σ + σ/T``.

    Examples
    --------
    >>> inclusion_probability(sigma=0.2, targets=8)
    0.825
    >>> inclusion_probability(sigma=0.0, targets=8)
    1.0
    """
    s = check_probability("sigma", sigma)
    if not isinstance(targets, int) or targets < 1:
        raise InvalidParameterError(f"targets must be an integer >= 1, got {targets!r}")
    return 1.0 if s == 0.0 else (1.0 - s) + s / targets


def inclusion_probabilities(plan: ExecutionPlan, routes: tuple[str, ...]) -> dict[str, float]:
    """π per data route of ``plan`` (the protected plan) from its countermeasures."""
    out: dict[str, float] = {}
    for name in routes:
        route = plan.route(name)
        sigma = route.protection.sigma if route.protection is not None else 0.0
        out[name] = inclusion_probability(sigma=sigma, targets=plan.group(route.receiver).size)
    return out


def count_interval(
    used: npt.ArrayLike, pi: float, *, level: float = 0.95
) -> tuple[FloatArray, FloatArray]:
    """Exact confidence bounds on N from ``n ~ Binomial(N, π)`` (vectorized over n).

    ``low`` is the smallest N with ``P(X ≥ n | N) > α/2`` and ``high`` the largest N with
    ``P(X ≤ n | N) > α/2``; both tail probabilities are monotone in N, so integer
    bisection finds them.

    Examples
    --------
    >>> low, high = count_interval([0, 100], 0.5)
    >>> low.tolist(), high.tolist()
    ([0.0, 174.0], [5.0, 230.0])
    >>> [x.tolist() for x in count_interval([7], 1.0)]
    [[7.0], [7.0]]
    """
    from scipy.stats import binom

    n = np.asarray(used, dtype=np.float64)
    p = check_probability("inclusion probability", pi)
    if p == 0.0:
        raise InvalidParameterError("inclusion probability must be > 0")
    if p == 1.0:
        return n.copy(), n.copy()
    tail = (1.0 - level) / 2.0
    # Lower bound: P(X >= n | N) = sf(n - 1) grows with N; search N in [n, n/p + pad].
    lo = n.copy()
    hi = np.ceil(n / p + 10.0 * np.sqrt(n + 1.0) / p + 10.0 / p)
    for _ in range(200):
        if np.all(hi - lo <= 0):
            break
        mid = np.floor((lo + hi) / 2.0)
        ok = binom.sf(n - 1, mid, p) > tail
        hi = np.where(ok, mid, hi)
        lo = np.where(ok, lo, mid + 1)
    low = np.where(n == 0, 0.0, hi)
    # Upper bound: P(X <= n | N) shrinks with N; the largest N where it is still > tail.
    a = n.copy()
    b = np.ceil(n / p + 20.0 * np.sqrt(n + 1.0) / p + 50.0 / p)
    for _ in range(64):  # make sure b is past the bound (bounded doubling)
        grow = binom.cdf(n, b, p) > tail
        if not grow.any():
            break
        b = np.where(grow, 2.0 * b, b)
    for _ in range(200):
        if np.all(b - a <= 0):
            break
        mid = np.ceil((a + b) / 2.0)
        ok = binom.cdf(n, mid, p) > tail
        a = np.where(ok, mid, a)
        b = np.where(ok, b, mid - 1)
    return low.astype(np.float64), a.astype(np.float64)


def _z(level: float) -> float:
    from scipy.stats import norm

    return float(norm.ppf(0.5 + level / 2.0))


def _sum_interval(
    s1: FloatArray, s2: FloatArray, pi: float, level: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    est = s1 / pi
    half = _z(level) * np.sqrt(np.maximum(s2, 0.0) * (1.0 - pi)) / pi
    return est, est - half, est + half


def _avg_interval(
    n: FloatArray, s1: FloatArray, s2: FloatArray, pi: float, level: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    from scipy.stats import t as student

    with np.errstate(divide="ignore", invalid="ignore"):
        mean = np.where(n > 0, s1 / np.maximum(n, 1.0), math.nan)
        var = np.where(n > 1, (s2 - n * mean**2) / np.maximum(n - 1.0, 1.0), math.nan)
        var = np.maximum(var, 0.0)
        q = student.ppf(0.5 + level / 2.0, np.maximum(n - 1.0, 1.0))
        half = q * np.sqrt(var / np.maximum(n, 1.0) * (1.0 - pi))
    half = np.where(n > 0, 0.0, math.nan) if pi == 1.0 else np.where(n > 1, half, math.inf)
    return mean, mean - half, mean + half


def _too_few(n: Any, pi: float) -> Any:
    """Where a sum/avg interval would rest on too few sampled values (array or scalar)."""
    return (n < MIN_TUPLES_FOR_INTERVAL) & (pi < 1.0)


def estimate_rows(
    setup: AggregateSetup,
    result_state: Mapping[str, Any],
    inclusion: Mapping[str, float],
    *,
    level: float = 0.95,
) -> Rows:
    """Estimates with ``level`` intervals, one row per group of every grouping set.

    Each row has ``grouping_set``, the group's columns, ``tuples_used``, ``inclusion``
    (π), ``too_few_tuples`` (fewer than :data:`MIN_TUPLES_FOR_INTERVAL`: no sum/avg
    interval) and per aggregate ``label`` (estimate), ``label low`` and ``label high``.
    """
    rows = Rows()
    query = setup.query
    for g, columns in enumerate(query.grouping_sets):
        pi = float(inclusion[setup.routes[g]])
        part = result_state[f"set{g}"]
        keys = np.asarray(part["key"])
        values = _decode(keys, setup.domains[g])
        n = np.asarray(part["count"], dtype=np.float64)
        cols: dict[str, tuple[FloatArray, FloatArray, FloatArray]] = {}
        for agg in query.aggregates:
            if agg.function == "count":
                low, high = count_interval(n, pi, level=level)
                cols[agg.label] = (n / pi, low, high)
                continue
            s1 = np.asarray(part[f"sum:{agg.column}"], dtype=np.float64)
            s2 = np.asarray(part[f"sumsq:{agg.column}"], dtype=np.float64)
            if agg.function in ("sum", "avg"):
                est, low, high = (
                    _sum_interval(s1, s2, pi, level)
                    if agg.function == "sum"
                    else _avg_interval(n, s1, s2, pi, level)
                )
                few = _too_few(n, pi)
                cols[agg.label] = (est, np.where(few, math.nan, low), np.where(few, math.nan, high))
            else:
                observed = np.asarray(part[f"{agg.function}:{agg.column}"], dtype=np.float64)
                nan = np.full(len(n), math.nan)
                cols[agg.label] = (observed, nan, nan)
        for i in range(len(keys)):
            row: dict[str, Any] = {"grouping_set": g}
            for c, column in enumerate(columns):
                row[column] = _plain(values[c][i])
            row["tuples_used"] = int(n[i])
            row["inclusion"] = pi
            row["too_few_tuples"] = bool(_too_few(n[i], pi))
            for label, (est, low, high) in cols.items():
                row[label] = float(est[i])
                row[f"{label} low"] = float(low[i])
                row[f"{label} high"] = float(high[i])
            rows.append(row)
    return rows


def write_answer(path: Path, rows: Sequence[Mapping[str, Any]], query: AggregateQuery) -> Path:
    """Write ``rows`` as CSV in the SQL's column order, like DuckDB prints GROUPING SETS.

    Columns: the select list in order (a grouping column not in a row's grouping set is
    left empty, DuckDB's NULL), then ``grouping_set`` and, for estimates, ``tuples_used``.
    Counts are written as integers (estimates rounded to whole tuples; the unrounded
    values and the intervals are in ``estimates.csv``); text keys lose stray spaces.
    """
    grouping = list(dict.fromkeys(c for s in query.grouping_sets for c in s))
    labels = [a.label for a in query.aggregates]
    select = list(query.select) or grouping + labels
    select += [c for c in grouping + labels if c not in select]
    counts = {a.label for a in query.aggregates if a.function == "count"}
    extra = ["grouping_set"] + (["tuples_used"] if rows and "tuples_used" in rows[0] else [])
    columns = select + extra
    return write_csv(
        path,
        [{column: _cell(row.get(column), column in counts) for column in columns} for row in rows],
        fieldnames=columns,
    )


def _cell(value: Any, count: bool) -> Any:
    """A CSV cell: NaN and missing empty, counts whole, text keys without stray spaces."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if count:
        return round(float(value))
    if isinstance(value, str):
        return value.strip()
    return value
