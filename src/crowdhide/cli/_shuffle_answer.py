"""``shuffle epsilon`` and ``shuffle delta``: the one library call and its output, without
typer (issue 32: these queries start without it, see :mod:`crowdhide.cli._fast`; the Typer
commands in :mod:`crowdhide.cli.shuffle` call the same :func:`answer`).

Every answer is a :class:`~crowdhide.accounting.statement.PrivacyStatement`: ``--json`` prints
its ``to_dict()``; tables show one row per bound (source, kind, conditions, ε, δ, notes).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from crowdhide.cli._emit import emit
from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.accounting.statement import PrivacyStatement

__all__ = ["answer", "statement_row"]


# -- presentation --------------------------------------------------------------------------


def _finite_or_none(value: Any) -> Any:
    return None if isinstance(value, float) and math.isnan(value) else value


def statement_row(s: PrivacyStatement) -> dict[str, Any]:
    """A statement as one flat table row (not applicable: '-')."""
    row: dict[str, Any] = {
        "bound": s.source,
        "kind": s.kind,
        "conditions_met": s.conditions_met,
        "epsilon": _finite_or_none(s.epsilon),
        "delta": _finite_or_none(s.delta),
        "note": "; ".join(s.notes),
    }
    if s.lower is not None:
        row |= {
            "lower_bound": s.lower.source,
            "lower_epsilon": _finite_or_none(s.lower.epsilon),
            "lower_delta": _finite_or_none(s.lower.delta),
        }
    if s.target is not None:
        row["meets_target"] = s.target.met
    # inputs are echoed beside the answer; the answer's own columns keep their meaning
    # (the input ``bound`` is what was asked, the column ``bound`` what answered)
    return row | {key: _finite_or_none(v) for key, v in s.inputs.items() if key not in row}


def _emit_one(s: PrivacyStatement, *, as_json: bool, title: str) -> None:
    emit(s.to_dict() if as_json else statement_row(s), as_json=as_json, title=title)


def _table_notes(rows: list[PrivacyStatement], key: str) -> list[str]:
    from crowdhide.accounting.registry import best_of
    from crowdhide.accounting.statement import format_bound

    best = best_of(rows, by=key)
    if not best.is_certificate:
        return []
    value = getattr(best, key)
    notes = [
        f"best valid upper bound: {best.source} ({key} = {format_bound(value, digits=6)}); "
        "kind 'lower' rows are lower bounds, not guarantees."
    ]
    low = math.nan if best.lower is None else getattr(best.lower, key)
    if math.isfinite(low) and low > 0.0 and best.lower is not None:
        notes.append(
            f"the truth lies in [{format_bound(low, up=False, digits=6)}, "
            f"{format_bound(value, digits=6)}] "
            f"({best.lower.source}; certificate / lower bound = {value / low:.4g})"
        )
    return notes


@contextmanager
def _bound_progress(as_json: bool) -> Iterator[Callable[[str, int, int], None] | None]:
    """A progress bar on stderr over the bounds of ``--bound all`` (tables on a terminal)."""
    from crowdhide.cli._engine_progress import progress_wanted  # --bound all only

    if not progress_wanted(as_json):
        yield None
        return
    from rich.console import Console
    from rich.progress import Progress

    with Progress(console=Console(stderr=True), transient=True) as bar:
        task = bar.add_task("bounds", total=None)

        def advance(name: str, done: int, total: int) -> None:
            bar.update(task, description=name, completed=done, total=total)

        yield advance


# -- one query, ε at δ or δ at ε -----------------------------------------------------------


def _needs_d(mechanism: str) -> bool:
    """Whether a named mechanism needs ``--d`` (its table is imported only for --mechanism)."""
    from crowdhide.accounting.shuffle.randomizers import MECHANISMS

    return mechanism in MECHANISMS and MECHANISMS[mechanism].needs_d


def answer(query: Mapping[str, float], *, as_json: bool, **options: Any) -> None:
    """Make the one library call that answers ``query`` (ε at δ or δ at ε), emit.

    Which accountant answers is decided in :mod:`crowdhide.accounting.shuffle.query`; an
    option that does not apply comes back as an input error naming it (exit 2)."""
    from crowdhide.accounting.shuffle import query as shuffle_query

    what = "epsilon" if "delta" in query else "delta"
    mechanism = options.get("mechanism")
    needs_d = mechanism is not None and _needs_d(mechanism)
    if needs_d and options.get("d") is None:  # name the option the user must add
        raise InvalidParameterError(
            f"--d (the domain size) is needed by --mechanism {mechanism}",
            parameter="--d",
            value=None,
        )
    if options["bound"] == "all":
        options.pop("bound")
        with _bound_progress(as_json) as progress:
            asked: dict[str, Any] = {"delta": query.get("delta"), "epsilon": query.get("epsilon")}
            rows = shuffle_query.shuffle_all(**options, **asked, progress=progress)
        given = ", ".join(f"{key}={value:g}" for key, value in query.items())
        emit(
            [r.to_dict() for r in rows] if as_json else [statement_row(r) for r in rows],
            as_json=as_json,
            title=f"{what} at {given}, eps0={options['eps0']:g}, n={options['n']}, "
            f"k={options['k'] or 'any'}",
            # The queried value is in the title: the table shows the answer only (it fits
            # in 80 columns with every bound's name).
            columns=["bound", "kind", "conditions_met", what, "note"],
            notes=_table_notes(rows, what),
        )
        return
    result = getattr(shuffle_query, f"shuffle_{what}")(**options, **query)
    composed = (options["rounds"], options["sample_rate"], options["relation"]) != (
        1,
        1.0,
        "substitute",
    )
    label = f" ({options['mechanism']})" if options["mechanism"] is not None else ""
    _emit_one(result, as_json=as_json, title=f"{'composed ' * composed}shuffle {what}{label}")
