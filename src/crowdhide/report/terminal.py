"""The run report in a terminal of any width (80 columns and up): nothing is ever cut.

Tables too wide for the terminal are split into panels of columns that each repeat the
key column (the way wide data frames are printed), text cells wrap at word boundaries and
numbers never do. Every table is preceded by a one-line caption in plain words; paper
terms appear only in parentheses next to a plain name.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from functools import singledispatch
from typing import Any

from crowdhide.plans.query import NO_EXACT, AggregateAnswer, Answer
from crowdhide.plans.run_report import PROTECTION, PlanReport, RunReport
from crowdhide.report.words import (
    cluster_words,
    cost_words,
    fmt_count,
    fmt_down,
    fmt_num,
    fmt_up,
    interval_cell,
    path_meaning,
)

__all__ = [
    "MAX_GROUP_ROWS",
    "fit_panels",
    "flatten",
    "render_ledger",
    "render_plan",
    "render_run",
]

Console = Any  # rich.console.Console (imported lazily: CLI start-up path)
#: Groups printed per grouping set; the rest are in the CSV files (a terminal is no place
#: for 5,000 rows, and rich lays out every row it is given).
MAX_GROUP_ROWS = 100


def fit_panels(widths: Sequence[int], keys: int, width: int) -> list[list[int]]:
    """Split columns ``keys..`` into panels that fit ``width`` with the key columns repeated.

    A rich table with the default box takes ``Σ (w + 3) + 1`` characters (one space of
    padding each side and one border per column).

    Examples
    --------
    >>> fit_panels([5, 10, 10, 10], keys=1, width=40)
    [[1, 2], [3]]
    """
    base = 1 + sum(w + 3 for w in widths[:keys])
    panels: list[list[int]] = []
    current: list[int] = []
    used = base
    for i in range(keys, len(widths)):
        need = widths[i] + 3
        if current and used + need > width:
            panels.append(current)
            current, used = [], base
        current.append(i)
        used += need
    if current:
        panels.append(current)
    return panels


def _table(
    console: Console,
    caption: str,
    headers: Sequence[str],
    rows: Sequence[Sequence[str]],
    *,
    keys: int = 1,
    wrap: Sequence[int] = (),
) -> None:
    """Print ``rows`` under ``caption``; columns in ``wrap`` are text that may wrap."""
    from rich.table import Table

    widths = [
        max([len(line) for line in h.split("\n")] + [len(r[i]) for r in rows])
        for i, h in enumerate(headers)
    ]
    limit = max(20, console.width)
    # Wrapping text columns give up width, the widest first, until the table fits.
    for i in sorted(wrap, key=lambda j: -widths[j]):
        excess = sum(w + 3 for w in widths) + 1 - limit
        if excess > 0:
            widths[i] = max(12, widths[i] - excess)
    console.print(caption, style="bold", overflow="fold")
    for panel in fit_panels(widths, keys, limit):
        table = Table(show_header=True, header_style="bold", pad_edge=True)
        for i in [*range(keys), *panel]:
            text = i in wrap or (
                i < keys and widths[i] < len(max((r[i] for r in rows), key=len, default=""))
            )
            table.add_column(
                headers[i],
                justify="left" if i < keys or i in wrap else "right",
                no_wrap=not text,
                overflow="fold",
                min_width=None if text else widths[i],
                max_width=widths[i] if text else None,
            )
        for r in rows:
            table.add_row(*[r[i] for i in [*range(keys), *panel]])
        console.print(table)


def _pairs(
    console: Console, caption: str, pairs: Sequence[tuple[str, str]], *, text: bool = False
) -> None:
    """Two columns, what / value; ``text`` values (paths) may wrap too."""
    _table(
        console, caption, ["what", "value"], [list(p) for p in pairs], wrap=(0, 1) if text else (0,)
    )


def render_run(report: RunReport, console: Console) -> None:
    """Print the report of ``crowdhide run`` (the :class:`RunReport` ``run_spec`` returns)."""
    _result(report.answer, report, console)
    _pairs(console, "What ε protects, and what it does not", list(PROTECTION.items()), text=True)
    _privacy(report.plan, console)
    if report.network is not None and report.network.get("complete") is False:
        from rich.text import Text

        note = next((n for n in report.notes if n.startswith("INCOMPLETE")), "INCOMPLETE RUN")
        console.print(Text(note, style="bold red"), overflow="fold")
    _costs(report, console)
    _pairs(console, "Files written", [(k, str(v)) for k, v in report.files.items()], text=True)
    for note in report.notes:  # e.g. plots skipped for a missing extra
        console.print(f"note: {note}", overflow="fold")
    t = report.timings
    console.print(f"total {t.total_s:.2f} s (execution {t.execute_s:.2f} s)")


@singledispatch
def _result(answer: Answer, report: RunReport, console: Console) -> None:
    """Any query's answer: its result and utility as what / value pairs."""
    record = answer.to_dict()
    _pairs(
        console,
        f"{report.plan.name}: result",
        [(k, fmt_num(v)) for k, v in flatten(record["result"]).items()],
    )
    _pairs(
        console,
        "How useful the result is (vs. the same computation without protection)",
        [(k, fmt_num(v)) for k, v in flatten(record["utility"]).items()],
    )


def _set_table(
    answer: AggregateAnswer, g: int, keys: Sequence[str]
) -> tuple[list[str], list[list[str]]]:
    """Headers and the first :data:`MAX_GROUP_ROWS` rows of grouping set ``g``: estimate,
    95 % interval, exact (no exact column when there is no exact answer)."""
    by_key = {tuple(r.get(k) for k in keys): r for r in answer.estimates if r["grouping_set"] == g}
    known = answer.exact is not None
    headers = [" / ".join(keys), "tuples\nused"]
    for a in answer.aggregates:
        if a.split("(")[0] in ("min", "max"):
            headers += [f"{a}\nof used", *[f"{a}\nexact"] * known]
        else:
            headers += [f"{a}\nestimate", f"{a}\n95 % interval", *[f"{a}\nexact"] * known]
    table: list[list[str]] = []
    theirs = (r for r in _reference(answer) if r["grouping_set"] == g)
    for ref in itertools.islice(theirs, MAX_GROUP_ROWS):  # only the rows printed
        key = tuple(ref.get(k) for k in keys)
        est = by_key.get(key)
        cells = [" / ".join(str(v).strip() for v in key)]
        cells.append(fmt_count(est["tuples_used"]) if est else "0")
        for a in answer.aggregates:
            kind = a.split("(")[0]
            fmt = fmt_count if kind == "count" else fmt_num
            cells.append(fmt(est.get(a)) if est else "-")
            if kind not in ("min", "max"):
                cells.append(interval_cell(est, a, fmt) if est else "-")
            if known:
                cells.append(fmt(ref[a]))
        table.append(cells)
    return headers, table


def _reference(answer: AggregateAnswer) -> list[dict[str, Any]]:
    """The rows that list the groups: the exact answer's, else (the coordinator of node
    daemons holds no data) the estimates'."""
    return answer.exact if answer.exact is not None else answer.estimates


@_result.register
def _answer(answer: AggregateAnswer, report: RunReport, console: Console) -> None:
    """One table per grouping set: estimate, 95 % interval and exact value per aggregate."""
    total = answer.utility.tuples
    used = answer.utility.tuples_used_per_grouping_set
    exact, rows = _reference(answer), answer.estimates
    sets = sorted({int(r["grouping_set"]) for r in exact} | {int(r["grouping_set"]) for r in rows})
    pis = list(answer.inclusion_probability.values())
    versus = ", vs exact" if answer.exact is not None else f"; {NO_EXACT}"
    for g in sets:
        theirs = [r for r in exact if r["grouping_set"] == g]
        keys = list(answer.query.grouping_sets[g])
        headers, table = _set_table(answer, g, keys)
        p = pis[g] if len(pis) > g else 1.0
        _table(
            console,
            f"By {' / '.join(keys)}: full-population estimates from {fmt_count(used[g])} of "
            f"{fmt_count(total)} tuples{versus}",
            headers,
            table,
        )
        if len(theirs) > MAX_GROUP_ROWS:
            where = report.files.get("estimates", "estimates.csv")
            console.print(
                f"(the first {MAX_GROUP_ROWS} of {fmt_count(len(theirs))} groups; every group "
                f"is in {where} and result.csv)",
                overflow="fold",
            )
        console.print(
            f"(sampling kept each tuple with probability {p:.3g}: counts and sums are "
            "divided by it; 95 % intervals; "
            + ("exact = DuckDB on all tuples)" if answer.exact is not None else f"{NO_EXACT})"),
            overflow="fold",
        )
    _accuracy(answer, console)


def _group_keys(row: Mapping[str, Any]) -> list[str]:
    """The grouping columns of an exact row (not the set number, not an aggregate)."""
    return [k for k in row if k != "grouping_set" and "(" not in k]


def _estimates_by_group(answer: AggregateAnswer) -> dict[tuple[Any, ...], Mapping[str, Any]]:
    """``(grouping set, key values) -> estimate row``: one pass, so matching every exact
    group to its estimate is linear (a scan per group made 5,000 groups take minutes)."""
    keys: dict[int, list[str]] = {}
    for ref in answer.exact or []:
        keys.setdefault(int(ref["grouping_set"]), _group_keys(ref))
    index: dict[tuple[Any, ...], Mapping[str, Any]] = {}
    for r in answer.estimates:
        g = int(r["grouping_set"])
        index.setdefault((g, *(r.get(k) for k in keys.get(g, []))), r)
    return index


def _accuracy(answer: AggregateAnswer, console: Console) -> None:
    if answer.exact is None:  # nothing to compare with: say so, never a made-up figure
        _pairs(console, "How close the estimates are to the exact answer", [("exact", NO_EXACT)])
        return
    index = _estimates_by_group(answer)
    cover: list[tuple[str, str]] = []
    for a in answer.aggregates:
        kind = a.split("(")[0]
        if kind in ("min", "max"):
            continue
        inside = total = few = 0
        worst = 0.0
        for ref in answer.exact:
            g = int(ref["grouping_set"])
            est = index.get((g, *(ref[k] for k in _group_keys(ref))))
            total += 1
            if est is None:
                continue
            if kind != "count" and est.get("too_few_tuples"):
                total, few = total - 1, few + 1  # no interval to cover
                continue
            inside += int(est[f"{a} low"] <= ref[a] <= est[f"{a} high"])
            if math.isfinite(est[a]) and ref[a]:
                worst = max(worst, abs(est[a] - ref[a]) / abs(ref[a]))
        cover.append(
            (
                f"{a}: groups whose exact value is inside the 95 % interval",
                f"{inside} of {total}" + (f" ({few} more: too few tuples)" if few else ""),
            )
        )
        cover.append((f"{a}: largest relative error of the estimate", f"{100 * worst:.1f} %"))
    on_used = answer.utility.vs_duckdb_on_used_tuples
    if "max_abs_error" in on_used:
        err = max(on_used["max_abs_error"].values(), default=0.0)
        cover.append(("check: raw result vs DuckDB on exactly the tuples used", f"error {err:.2g}"))
    _pairs(console, "How close the estimates are to the exact answer", cover)


def _privacy(plan: PlanReport, console: Console) -> None:
    privacy = plan.privacy
    rows = [
        [
            f"a user's tuple ({p.origin}) through the {len(p.clusters)} steps of the plan",
            fmt_up(p.privacy.epsilon),
            fmt_up(p.privacy.delta),
        ]
        for p in plan.paths
    ]
    goal = (
        f"target ε ≤ {fmt_num(plan.target_epsilon)}, δ ≤ {plan.target_delta:.2g}"
        if plan.target_epsilon is not None
        else "no target"
    )
    _table(
        console,
        f"Privacy guarantee of each data path ({goal})",
        ["data path", "ε", "δ"],
        rows,
        wrap=(0,),
    )
    console.print(path_meaning(privacy.epsilon, privacy.delta), overflow="fold")
    if privacy.meets_target is False:
        console.print(
            f"TARGET NOT MET: certified ε = {fmt_up(privacy.epsilon)}, δ = "
            f"{fmt_up(privacy.delta)} is weaker than the target ε = {fmt_num(plan.target_epsilon)},"
            f" δ = {plan.target_delta:.2g}",
            style="bold red",
            overflow="fold",
        )
    hops = [
        [
            cluster_words(h, plan.route_names, plan.countermeasures),
            fmt_up(h.privacy.epsilon),
            fmt_up(h.privacy.delta),
        ]
        for h in plan.hops
        if h.data_dependent
    ]
    if hops:
        _table(
            console,
            "What each data-dependent hop reveals (ε, δ of that hop alone)",
            ["hop (countermeasures, certificate)", "ε", "δ"],
            hops,
            wrap=(0,),
        )
    for note in privacy.notes:
        console.print(f"note: {note}", overflow="fold")


def _costs(report: RunReport, console: Console) -> None:
    basics, channels, consents = cost_words(report)
    _pairs(console, "What the protection costs", basics + channels + consents)


def flatten(record: Any, prefix: str = "") -> dict[str, Any]:
    """Nested mapping → one level, keys joined with dots; lists become comma-separated text."""
    if not isinstance(record, Mapping):
        return {prefix or "value": record}
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flatten(value, prefix=f"{name}."))
        elif isinstance(value, list):
            out[name] = ", ".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def render_ledger(rows: Sequence[Mapping[str, Any]], console: Console) -> None:
    """Print ``crowdhide ledger show``: spent privacy per population."""
    table = [
        [
            str(r["population"]),
            str(r["runs"]),
            fmt_up(r["epsilon_spent"]),
            f"{r['at_delta']:.2g}",
            str(r["method"]),
            fmt_num(r["budget_epsilon"]),
            fmt_down(r["epsilon_left"]),
        ]
        for r in rows
    ]
    _table(
        console,
        "Privacy spent per population (all recorded runs composed)",
        ["population", "runs", "ε spent", "at δ", "how\ncomposed", "budget\nε", "ε left"],
        table,
        wrap=(0,),
    )
    console.print(
        "how composed: pld = optimal composition of the recorded (ε, δ) certificates, computed "
        "on privacy-loss distributions; advanced / basic = composition theorems (the smallest "
        "valid ε is shown)",
        overflow="fold",
    )


def _plain(value: Any, *, certified: bool = False) -> str:
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "-"}[value]
    if isinstance(value, float):
        return fmt_up(value) if certified else f"{value:.6g}"
    return str(value)


def render_plan(report: PlanReport, console: Console) -> None:
    """Print ``crowdhide plan`` in any width: columns that do not fit go to further panels,
    certified ε and δ are rounded up, the target check is said in words."""
    columns = ["route", "sender", "receiver", "kind", "senders", "targets", "sigma", "n", "d"]
    columns.append("scramblers")
    rows = [[_plain(r.get(c)) for c in columns] for r in report.routes]
    _table(console, f"{report.name}: routes of the protected plan", columns, rows)
    hop_columns = ["cluster", "targets", "parallel_clusters", "epsilon", "delta", "method"]
    hops = [h.to_dict() for h in report.hops]
    rows = [
        [_plain(h.get(c), certified=c in ("epsilon", "delta")) for c in hop_columns] for h in hops
    ]
    headers = ["cluster", "targets", "parallel\nclusters", "ε", "δ", "certificate"]
    _table(console, "Clusters (Definition 4) and their certificates", headers, rows)
    for note in report.privacy.notes:
        console.print(f"note: {note}", overflow="fold")
    rows = [
        [p.origin, fmt_up(p.privacy.epsilon), fmt_up(p.privacy.delta), " + ".join(p.clusters)]
        for p in report.paths
    ]
    _table(
        console,
        "End-to-end (ε, δ) of each data path (Theorem 1)",
        ["origin", "ε", "δ", "clusters"],
        rows,
        wrap=(3,),
    )
    keys = ("sigma", "local_dummies", "n", "d", "epsilon_cluster", "method")
    costs = ("overhead", "channels_per_scrambler", "extra_consents")
    rows = []
    for route, choice in report.countermeasures.items():
        record = choice.to_dict()
        cells = [route] + [_plain(record[k], certified=k == "epsilon_cluster") for k in keys]
        rows.append(cells + [_plain(record["costs"][k]) for k in costs])
    headers = ["route", "sigma", "local\ndummies", "n", "d", "ε of\ncluster", "certificate"]
    headers += ["network\nload (×)", "channels per\nscrambler", "extra\nconsents"]
    _table(console, f"Countermeasures ({report.mode})", headers, rows)
    console.print(_target_words(report), overflow="fold")


def _target_words(report: PlanReport) -> str:
    privacy = report.privacy
    certified = f"certified ε = {fmt_up(privacy.epsilon)}, δ = {fmt_up(privacy.delta)}"
    if report.target_epsilon is None:
        return f"plan: {certified} (no target)"
    target = f"target ε ≤ {report.target_epsilon:g}, δ ≤ {report.target_delta:.3g}"
    verdict = "the target is met" if report.target_met else "TARGET NOT MET"
    return f"plan: {certified}; {target}: {verdict}"
