"""A privacy budget across runs: a crash-safe, multi-writer ledger of certificates.

Every run on the same population spends privacy: k runs that are (ε_i, δ_i)-DP together
are only as private as their composition. The ledger (a JSON file) records each run's
certificate under its population and answers "how much has been spent at δ_B?" with the
tightest of three valid bounds (each an upper bound, so their minimum is one too):

* **PLD** — each (ε_i, δ_i) certificate is dominated by the worst (ε_i, δ_i)-DP pair; the
  privacy-loss distributions of those pairs are composed numerically as ``dp_accounting``
  does (pessimistic rounding; :mod:`crowdhide.accounting.pld_pmf`, the same floats). This
  *is* the optimal composition of the recorded guarantees (Kairouz, Oh, Viswanath 2015),
  computed rather than bounded;
* **advanced** — :func:`~crowdhide.accounting.composition.heterogeneous_advanced_composition`
  with the slack δ̃ that fills δ_B;
* **basic** — Σ ε_i, valid when Σ δ_i ≤ δ_B.

Durability: writers take an exclusive ``fcntl.flock`` on ``FILE.lock`` (not on the file
itself, whose inode :func:`os.replace` swaps), read, modify, write a temporary file in the
same directory, ``fsync`` it and ``os.replace`` it over the ledger — a crash leaves either
the old or the new ledger, never a torn one. :meth:`Ledger.charge` checks the budget and
records the run in one locked step *before* the run sends anything, so two concurrent runs
can never both slip under the budget; a run that then fails stays charged (it may have sent
messages).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from crowdhide._tables import Rows
from crowdhide._validation import check_probability, check_real
from crowdhide.accounting.statement import PrivacyStatement, format_bound
from crowdhide.errors import BudgetExceededError, DataError, InvalidParameterError

__all__ = ["BudgetExceededError", "Ledger", "Spent", "spent"]

_VERSION = 1


@dataclass(frozen=True)
class Spent:
    """Privacy spent by a list of certificates at ``delta``.

    Attributes
    ----------
    epsilon
        The tightest valid ε at ``delta`` (``inf`` when no bound reaches that δ).
    delta
        The δ the ε is quoted at.
    method
        ``"pld"``, ``"advanced"`` or ``"basic"``: which bound gave ``epsilon``.
    bounds
        ε of every method (``inf`` where it does not apply).
    """

    epsilon: float
    delta: float
    method: str
    bounds: dict[str, float]


def spent(
    guarantees: Sequence[PrivacyStatement], *, delta: float, discretization: float = 1e-3
) -> Spent:
    """Tightest valid ε of the composition of ``guarantees`` at total δ = ``delta``.

    Examples
    --------
    >>> s = spent([PrivacyStatement(epsilon=1.0, delta=1e-6)] * 4, delta=1e-4)
    >>> s.bounds["basic"], s.method, s.epsilon < 4.0
    (4.0, 'pld', True)
    >>> spent([], delta=1e-4).epsilon
    0.0
    """
    d = check_probability("delta", delta, allow_zero=False, allow_one=False)
    if not guarantees:
        return Spent(0.0, d, "none", {})
    # a statement whose bound does not apply promises nothing (its asked number may be finite)
    if any(math.isinf(g.epsilon) or not g.conditions_met for g in guarantees):
        inf = math.inf
        return Spent(inf, d, "unprotected", {"pld": inf, "advanced": inf, "basic": inf})
    bounds = {
        "pld": _pld_epsilon(guarantees, d, discretization),
        "advanced": _advanced_epsilon(guarantees, d),
        "basic": _basic_epsilon(guarantees, d),
    }
    method = min(bounds, key=lambda m: bounds[m])
    return Spent(bounds[method], d, method, bounds)


def _basic_epsilon(guarantees: Sequence[PrivacyStatement], delta: float) -> float:
    from crowdhide.accounting.logmath import sum_up  # numpy and scipy: not at start-up

    total = sum_up(g.delta for g in guarantees)  # both rounded up: certificates
    return sum_up(g.epsilon for g in guarantees) if total <= delta else math.inf


def _advanced_epsilon(guarantees: Sequence[PrivacyStatement], delta: float) -> float:
    from crowdhide.accounting.composition import heterogeneous_advanced_composition
    from crowdhide.accounting.logmath import MACHINE_EPSILON

    # 1 − (1 − δ̃) Π (1 − δ_i) = δ  ⇔  δ̃ = 1 − (1 − δ) / Π (1 − δ_i), lowered by 32 units of
    # δ so that the composed δ, rounded up by a few units, still lands at or below δ
    if any(g.delta >= 1.0 for g in guarantees):
        return math.inf
    log_keep = math.fsum(math.log1p(-g.delta) for g in guarantees)
    slack = -math.expm1(math.log1p(-delta) - log_keep) - 32.0 * MACHINE_EPSILON * delta
    if not 0.0 < slack < 1.0:
        return math.inf
    result = heterogeneous_advanced_composition(list(guarantees), delta_slack=slack)
    return result.epsilon if result.delta <= delta else math.inf  # its own δ, rounded up


def _pld_epsilon(
    guarantees: Sequence[PrivacyStatement], delta: float, discretization: float
) -> float:
    from crowdhide.accounting.composition import compose_curves

    counts: dict[tuple[float, float], int] = {}
    for g in guarantees:
        counts[(g.epsilon, g.delta)] = counts.get((g.epsilon, g.delta), 0) + 1
    parts: list[Any] = [(_statement(e, dl), k) for (e, dl), k in counts.items()]
    curve = compose_curves(parts, value_discretization_interval=discretization)
    return curve.epsilon(delta)  # inf when the infinite-loss mass alone exceeds δ


def _statement(epsilon: float, delta: float) -> PrivacyStatement:
    """A recorded run's certificate."""
    return PrivacyStatement(epsilon=epsilon, delta=delta, source="ledger")


class Ledger:
    """The privacy ledger stored at ``path`` (created on first write).

    Parameters
    ----------
    path
        The JSON file that holds the ledger.

    See Also
    --------
    crowdhide.compose : The composition rule the ledger charges with.
    crowdhide.errors.BudgetExceededError : Raised when a charge would exceed the budget.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> book = Ledger(pathlib.Path(tempfile.mkdtemp()) / "ledger.json")
    >>> _ = book.charge("clinic", PrivacyStatement(epsilon=1.0, delta=1e-6), run="a",
    ...                 budget=(3.0, 1e-5))
    >>> _ = book.charge("clinic", PrivacyStatement(epsilon=1.0, delta=1e-6), run="b")
    >>> book.charge("clinic", PrivacyStatement(epsilon=2.0, delta=1e-6), run="c")
    Traceback (most recent call last):
    ...
    crowdhide.errors.BudgetExceededError: run 'c' refused: population 'clinic' ...
    >>> [r["run"] for r in book.runs("clinic")]
    ['a', 'b']
    >>> book.summary().to_pandas()[["population", "runs", "epsilon_spent"]]
      population  runs  epsilon_spent
    0     clinic     2            2.0
    """

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)

    @contextlib.contextmanager
    def _locked(self) -> Iterator[dict[str, Any]]:
        import fcntl

        self.path.parent.mkdir(parents=True, exist_ok=True)
        lock = self.path.with_name(self.path.name + ".lock")
        with lock.open("a") as handle:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
            try:
                state = self._read()
                before = json.dumps(state, sort_keys=True)
                yield state
                if json.dumps(state, sort_keys=True) != before:
                    self._write(state)
            finally:
                fcntl.flock(handle.fileno(), fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        if not self.path.exists():
            return {"version": _VERSION, "populations": {}}
        try:
            state = json.loads(self.path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:  # e.g. a binary file
            raise DataError(f"ledger {self.path} is not valid JSON: {exc}") from exc
        if not isinstance(state, dict) or state.get("version") != _VERSION:
            raise DataError(f"ledger {self.path} is not a crowdhide ledger (version 1)")
        return state

    def _write(self, state: dict[str, Any]) -> None:
        fd, tmp = tempfile.mkstemp(prefix=self.path.name + ".", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(state, handle, indent=2, allow_nan=False)
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        with contextlib.suppress(OSError):  # make the rename itself durable
            dir_fd = os.open(self.path.parent, os.O_RDONLY)
            try:
                os.fsync(dir_fd)
            finally:
                os.close(dir_fd)

    def charge(
        self,
        population: str,
        guarantee: PrivacyStatement,
        *,
        run: str,
        budget: tuple[float, float] | None = None,
        details: dict[str, Any] | None = None,
    ) -> Spent | None:
        """Check ``guarantee`` against the population's budget and record it, atomically.

        ``budget`` (ε_B, δ_B) is stored for the population (later runs use it); without
        any budget the run is recorded and nothing is refused. Returns the spending
        including this run (``None`` without budget); raises
        :class:`BudgetExceededError` — recording nothing — if it would exceed the budget.
        """
        if not guarantee.conditions_met:  # its ε may be the asked one: no promise
            raise InvalidParameterError(
                f"run {run!r}: a statement whose bound does not apply cannot be charged"
            )
        if not math.isfinite(guarantee.epsilon):
            raise InvalidParameterError(
                f"run {run!r}: an unprotected run (ε = inf) cannot be charged"
            )
        if budget is not None:
            check_real("budget epsilon", budget[0], low=0.0, low_open=True)
            check_probability("budget delta", budget[1], allow_zero=False, allow_one=False)
        with self._locked() as state:
            entry = state["populations"].setdefault(population, {"budget": None, "runs": []})
            if budget is not None:
                entry["budget"] = {"epsilon": float(budget[0]), "delta": float(budget[1])}
            limit = entry["budget"]
            result: Spent | None = None
            if limit is not None:
                past = [_statement(r["epsilon"], r["delta"]) for r in entry["runs"]]
                result = spent([*past, guarantee], delta=limit["delta"])
                if result.epsilon > limit["epsilon"]:
                    before = spent(past, delta=limit["delta"]).epsilon
                    raise BudgetExceededError(
                        f"run {run!r} refused: population {population!r} has spent ε = "
                        f"{format_bound(before)} of its budget ε = {limit['epsilon']:g} at δ = "
                        f"{limit['delta']:g}; this run (ε = {format_bound(guarantee.epsilon)}, "
                        f"δ = {format_bound(guarantee.delta, digits=3)}) would bring it to "
                        f"ε = {format_bound(result.epsilon)} "
                        f"({result.method}); nothing was sent"
                    )
            entry["runs"].append(
                {
                    "run": run,
                    "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                    "epsilon": float(guarantee.epsilon),
                    "delta": float(guarantee.delta),
                    "status": "charged",
                    **(details or {}),
                }
            )
            return result

    def mark(self, population: str, run: str, status: str) -> None:
        """Set the status of the last run named ``run`` (e.g. ``"done"``, ``"failed"``)."""
        with self._locked() as state:
            runs = state["populations"].get(population, {}).get("runs", [])
            for record in reversed(runs):
                if record["run"] == run:
                    record["status"] = status
                    break

    def runs(self, population: str) -> Rows:
        """Recorded runs of ``population`` (oldest first; ``.to_pandas()`` for a frame)."""
        with self._locked() as state:
            return Rows(state["populations"].get(population, {}).get("runs", []))

    def summary(self) -> Rows:
        """Per population: runs, budget and the ε spent at the budget's δ (or at Σ δ_i);
        a list of dicts with ``.to_pandas()``."""
        with self._locked() as state:
            populations = dict(state["populations"])
        rows = Rows()
        for name, entry in sorted(populations.items()):
            gs = [_statement(r["epsilon"], r["delta"]) for r in entry["runs"]]
            budget = entry.get("budget")
            at = budget["delta"] if budget else min(0.5, math.fsum(g.delta for g in gs) or 1e-6)
            s = spent(gs, delta=at)
            rows.append(
                {
                    "population": name,
                    "runs": len(gs),
                    "epsilon_spent": s.epsilon,
                    "at_delta": at,
                    "method": s.method,
                    "budget_epsilon": budget["epsilon"] if budget else None,
                    "budget_delta": budget["delta"] if budget else None,
                    "epsilon_left": (budget["epsilon"] - s.epsilon) if budget else None,
                    "basic_epsilon": s.bounds.get("basic", 0.0),
                }
            )
        return rows
