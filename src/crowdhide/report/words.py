"""Plain words and number formats shared by the terminal and the HTML report."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crowdhide.plans.planner import CountermeasureChoice
    from crowdhide.plans.run_report import HopReport, RunReport

__all__ = [
    "METHODS",
    "cluster_words",
    "cost_words",
    "fmt_count",
    "fmt_down",
    "fmt_interval",
    "fmt_num",
    "fmt_up",
    "group_words",
    "interval_cell",
    "path_meaning",
    "route_words",
]

#: Certificate methods in plain words (paper names in parentheses).
METHODS = {
    "lemma2-exact": "scrambler bound (Lemma 2, exact E)",
    "lemma2-bennett": "scrambler bound (Lemma 2, Bennett)",
    "lemma2-hoeffding": "scrambler bound (Lemma 2, Hoeffding)",
    "theorem2": "sampling + flooding bound (Theorem 2)",
    "local-randomizer": "each message locally randomized (local bound)",
    "unprotected": "unprotected: destinations reveal the data",
    "data-independent": "destinations do not depend on the data",
}


def fmt_count(value: Any) -> str:
    """A count with thousands separators (``-`` for missing).

    Examples
    --------
    >>> fmt_count(10771.4), fmt_count(None)
    ('10,771', '-')
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float) and math.isinf(value):
        return "∞" if value > 0 else "-∞"
    return f"{round(float(value)):,}"


def fmt_up(value: float | None) -> str:
    """A certified ε or δ (or ε spent) to 4 significant digits rounded *up*: a report never
    shows a certificate below the computed one.

    Examples
    --------
    >>> fmt_up(1.930201882), fmt_up(1.9309), fmt_up(5e-05), fmt_up(0.0), fmt_up(float("inf"))
    ('1.931', '1.931', '5e-05', '0', '∞')
    """
    return _fmt_bound(value, up=True)


def fmt_down(value: float | None) -> str:
    """A lower bound or a budget left, to 4 significant digits rounded *down*.

    Examples
    --------
    >>> fmt_down(0.1304228), fmt_down(1.999)
    ('0.1304', '1.999')
    """
    return _fmt_bound(value, up=False)


def _fmt_bound(value: float | None, *, up: bool) -> str:
    from crowdhide.accounting.statement import format_bound

    if value is None:
        return "-"
    if not math.isfinite(value):
        return "∞" if value > 0 else "-∞"
    return format_bound(value, up=up)


def fmt_num(value: Any) -> str:
    """A measurement: 4 significant digits, thousands separators, never scientific below 1e9.

    Examples
    --------
    >>> fmt_num(65.66260268), fmt_num(1.930201882), fmt_num(123456.7), fmt_num(float("inf"))
    ('65.66', '1.930', '123,457', '∞')
    >>> fmt_num(784)
    '784'

    """
    if value is None:
        return "-"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    x = float(value)
    if math.isnan(x):
        return "-"
    if math.isinf(x):
        return "∞" if x > 0 else "-∞"
    if x == 0:
        return "0"
    if abs(x) >= 1e9 or abs(x) < 1e-3:
        return f"{x:.3e}"
    digits = max(0, 3 - math.floor(math.log10(abs(x))))
    return f"{x:,.{digits}f}"


#: What a report prints instead of a sum/avg interval resting on too few sampled tuples.
TOO_FEW = "too few tuples"


def interval_cell(row: Mapping[str, Any], label: str, fmt: Callable[[Any], str]) -> str:
    """The interval of aggregate ``label`` in estimate ``row``, or "too few tuples".

    >>> row = {"avg(x) low": float("nan"), "avg(x) high": float("nan"), "too_few_tuples": True}
    >>> interval_cell(row, "avg(x)", fmt_num)
    'too few tuples'
    >>> interval_cell({**row, "count(*) low": 1.0, "count(*) high": 2.0}, "count(*)", fmt_count)
    '1 – 2'
    """
    if row.get("too_few_tuples") and not label.startswith("count"):
        return TOO_FEW
    return fmt_interval(row.get(f"{label} low"), row.get(f"{label} high"), fmt)


def fmt_interval(low: Any, high: Any, fmt: Callable[[Any], str] = fmt_num) -> str:
    """``low – high`` (``-`` when undefined).

    Examples
    --------
    >>> fmt_interval(2757.0, 2852.0, fmt_count)
    '2,757 – 2,852'
    """
    if low is None or high is None:
        return "-"
    if isinstance(low, float) and isinstance(high, float) and (math.isnan(low) or math.isnan(high)):
        return "-"
    return f"{fmt(low)} – {fmt(high)}"


def route_words(route: str, names: Mapping[str, str]) -> str:
    """Plain name of a route (``sources → compute nodes for age_range``), else ``A → B``."""
    return names.get(route, route.replace("->", " → "))


def group_words(group: str, routes: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> str:
    """Plain name of a node group of a plan (paper name in parentheses).

    ``routes`` are the plan's route records (``ExecutionPlan.describe()``) and ``names``
    the plain names of its data routes.

    Examples
    --------
    >>> routes = [{"route": "S->C0", "sender": "S", "receiver": "C0", "kind": "data"}]
    >>> names = {"S->C0": "sources → compute nodes for age"}
    >>> for g in ("S", "C0", "S->C0#scramblers", "R"):
    ...     print(group_words(g, routes, names))
    user devices (S)
    compute nodes for age (C0)
    scramblers of sources → compute nodes for age
    result node (R)
    """
    if group.endswith("#scramblers"):
        return "scramblers of " + route_words(group.removesuffix("#scramblers"), names)
    for r in routes:
        if r.get("kind") != "data":
            continue
        if r["sender"] == group:
            return f"user devices ({group})"
        if r["receiver"] == group and r["route"] in names:
            return f"{names[r['route']].split('→ ', 1)[-1]} ({group})"
    if group == "R":
        return "result node (R)"
    return group


def cluster_words(
    hop: HopReport, names: Mapping[str, str], counter: Mapping[str, CountermeasureChoice]
) -> str:
    """A hop in words with its countermeasures and certificate in parentheses."""
    route = hop.route
    plain = route_words(route, names) if route else hop.cluster
    parts: list[str] = []
    choice = counter.get(route) if route else None
    if choice:
        if choice.sigma:
            parts.append(f"sampling σ = {choice.sigma:g}")
        if choice.n:
            scramblers = choice.costs.scramblers
            of = f"{scramblers} scramblers of " if scramblers else "scramblers of "
            parts.append(f"{of}{choice.n} sources, {choice.d} dummies each")
        elif choice.local_dummies:
            parts.append(f"{choice.local_dummies} dummies per source (flooding)")
    parts.append(f"{hop.targets} destinations")
    method = METHODS.get(hop.method, hop.method)
    return f"{plain} ({', '.join(parts)}; {method})"


def cost_words(
    report: RunReport,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], list[tuple[str, str]]]:
    """What the protection cost, in words: (totals, peers per node, extra users)."""
    costs, plan = report.costs, report.plan
    totals = [
        ("messages sent", fmt_count(costs.messages)),
        ("messages without countermeasures", fmt_count(costs.unprotected_messages)),
        ("messages added for privacy", fmt_count(costs.added_messages)),
        ("network load (× unprotected)", f"{costs.overhead:.2f}"),
        ("bytes on the wire", fmt_count(costs.bytes)),
    ]
    peers = [
        (f"most peers of one node: {group_words(g, plan.routes, plan.route_names)}", fmt_count(n))
        for g, n in costs.max_channels_per_node.items()
    ]
    consents = [
        (f"extra users for the same accuracy: {route_words(r, plan.route_names)}", fmt_count(n))
        for r, n in costs.extra_consents_for_same_utility.items()
    ]
    return totals, peers, consents


def path_meaning(epsilon: float | None, delta: float) -> str:
    """What an (ε, δ) certificate of the traffic means, in one or two sentences.

    Examples
    --------
    >>> print(path_meaning(float("inf"), 0.0))
    The traffic is not protected: where a person's messages go reveals their data.
    """
    if epsilon is None or not math.isfinite(epsilon):
        return "The traffic is not protected: where a person's messages go reveals their data."
    return (
        f"In words: from all the traffic (who sends how many messages to whom), an observer's "
        f"odds on any guess about one person change by at most a factor e^ε = "
        f"{math.exp(min(epsilon, 700.0)):.3g} whether that person's tuple is in the data or "
        f"not, except with probability δ = {delta:.2g}."
    )
