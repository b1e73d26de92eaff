"""A self-contained HTML page per run (``report.html``): inline CSS, images as data URIs.

It shows the result against DuckDB's exact answer with 95 % intervals, the privacy
certificate of each data path and what it means in words, the costs, the privacy/load
trade-off plot of the run, and the communication pattern an observer sees (messages per
compute node with and without countermeasures). Nothing is loaded from the network.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Mapping, Sequence
from functools import singledispatch
from pathlib import Path
from typing import Any

from crowdhide._extras import require
from crowdhide.errors import MissingExtraError
from crowdhide.plans.query import NO_EXACT, AggregateAnswer, Answer
from crowdhide.plans.run_report import PROTECTION, PlanReport, RunReport
from crowdhide.plans.spec import RunSpec
from crowdhide.report.words import (
    cluster_words,
    cost_words,
    fmt_count,
    fmt_num,
    fmt_up,
    interval_cell,
    path_meaning,
    route_words,
)

__all__ = ["render_html", "run_with_html", "write_html"]

_CSS = """
body{font-family:system-ui,-apple-system,'DejaVu Sans',sans-serif;margin:2em auto;
max-width:1240px;color:#1d2330;background:#fff;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.25em;margin-top:1.6em;
border-bottom:2px solid #d8dde6;padding-bottom:.2em}
.lead{color:#4a5568}.big{font-size:1.4em;font-weight:600}
table{border-collapse:collapse;margin:.6em 0;font-size:.88em}
th,td{border:1px solid #d8dde6;padding:.25em .5em;text-align:right;vertical-align:top;
white-space:nowrap}td.k,th{white-space:normal}
th{background:#f1f4f9}td.k,th.k{text-align:left}caption{text-align:left;
font-weight:600;padding:.3em 0;color:#2d3748}
.cards{display:flex;flex-wrap:wrap;gap:1em}.card{border:1px solid #d8dde6;
border-radius:8px;padding:.8em 1.1em;background:#f8fafc;min-width:12em}
.ok{color:#1f7a3a}.bad{color:#b42318}img{max-width:100%;border:1px solid #e2e8f0}
.figs{display:flex;flex-wrap:wrap;gap:1em}.figs figure{margin:0;flex:1 1 480px}
figcaption{font-size:.9em;color:#4a5568}.figs figure.wide{flex-basis:100%}
.scroll{overflow-x:auto;max-width:100%}
"""


def write_html(report: RunReport, out_dir: Path) -> Path:
    """Write ``report.html`` into ``out_dir`` and return its path."""
    path = Path(out_dir) / "report.html"
    path.write_text(render_html(report, Path(out_dir)), encoding="utf-8")
    return path


def run_with_html(spec: RunSpec, out_dir: Path, **options: Any) -> RunReport:
    """:func:`~crowdhide.plans.runner.run_spec` that also writes ``report.html``.

    ``options`` are those of ``run_spec``; ``report.json`` lists ``report.html`` under
    ``files`` (as ``html``).
    """
    from crowdhide.plans.runner import run_spec

    return run_spec(spec, out_dir, pages={"html": write_html}, **options)


def render_html(report: RunReport, out_dir: Path) -> str:
    """The page as a string (images of ``out_dir`` embedded)."""
    e = html.escape
    name = e(report.plan.name)
    parts = [
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>",
        f"<title>crowdhide run: {name}</title><style>{_CSS}</style></head><body>",
        f"<h1>Run report: {name}</h1>",
        f"<p class='lead'>{e(_query_text(report.plan))}</p>",
        _summary(report),
        _protection_section(),
        _answer_section(report.answer),
        _privacy_section(report.plan),
        _costs_section(report),
        _figures(report, out_dir),
        _provenance_section(report),
        "</body></html>",
    ]
    return "\n".join(parts)


def _query_text(plan: PlanReport) -> str:
    q = plan.query
    what = q.get("sql") or f"K-means, k={q.get('k')}, {q.get('iterations')} iterations"
    return f"{what} — data: {plan.data_source or '?'}, {fmt_count(plan.rows)} tuples"


def _summary(report: RunReport) -> str:
    p = report.privacy
    c = report.costs
    target = report.plan.target_epsilon
    verdict = (
        "<span class='bad'>target NOT met</span>"
        if p.meets_target is False
        else "<span class='ok'>target met</span>"
    )
    if report.network is not None and report.network.get("complete") is False:
        # A lossy tls run (--on-missing report): never a green verdict over it.
        note = next((n for n in report.notes if n.startswith("INCOMPLETE")), "INCOMPLETE RUN")
        verdict = f"<span class='bad'>{html.escape(note)}</span>"
    goal = f"target ε ≤ {fmt_num(target)}" if target is not None else ""
    return (
        "<div class='cards'>"
        f"<div class='card'>privacy of the traffic<div class='big' id='epsilon'>ε = "
        f"{fmt_up(p.epsilon)}</div>δ = {fmt_up(p.delta)}; {html.escape(goal)} {verdict}</div>"
        f"<div class='card'>network load<div class='big'>{c.overhead:.2f} ×</div>"
        f"{fmt_count(c.messages)} messages instead of {fmt_count(c.unprotected_messages)}"
        "</div></div>"
    )


def _protection_section() -> str:
    """Which numbers ε protects (the traffic) and which it does not (the values)."""
    rows = "".join(
        f"<tr><td class='k'>{html.escape(k)}</td><td class='k'>{html.escape(v)}</td></tr>"
        for k, v in PROTECTION.items()
    )
    return (
        "<div class='scroll'><table id='protection'><caption>What ε protects, and what it "
        f"does not</caption>{rows}</table></div>"
    )


def _provenance_section(report: RunReport) -> str:
    """crowdhide's version, the seed, the backend and the command line of the run."""
    p = report.provenance
    if p is None:
        return ""
    items = [
        ("crowdhide", p.crowdhide),
        ("command", p.command_text()),
        ("seed", str(p.seed)),
        ("backend", p.backend),
        ("created (UTC)", p.created_utc),
        ("Python", p.python),
        *((name, version) for name, version in p.dependencies.items()),
    ]
    rows = "".join(
        f"<tr><td class='k'>{html.escape(k)}</td><td class='k'>{html.escape(v)}</td></tr>"
        for k, v in items
    )
    return f"<h2>Provenance</h2><table id='provenance'>{rows}</table>"


@singledispatch
def _answer_section(answer: Answer) -> str:
    """Any query's answer: its result and utility as key / value tables."""
    record = answer.to_dict()
    return _kv_table("Result", record["result"]) + "\n" + _kv_table("Utility", record["utility"])


def _set_html(answer: AggregateAnswer, g: int) -> str:
    """The table of grouping set ``g``: estimate, 95 % interval and exact per aggregate."""
    known = answer.exact is not None
    theirs = [
        r
        for r in (answer.estimates if answer.exact is None else answer.exact)
        if r["grouping_set"] == g
    ]
    keys = list(answer.query.grouping_sets[g])
    by_key = {tuple(r.get(k) for k in keys): r for r in answer.estimates if r["grouping_set"] == g}
    head = ["<tr>", f"<th class='k'>{html.escape(' / '.join(keys))}</th><th>tuples used</th>"]
    for a in answer.aggregates:
        exact = "<th>exact</th>" if known else ""
        if a.split("(")[0] in ("min", "max"):
            head.append(f"<th>{html.escape(a)} of used</th>{exact}")
        else:
            head.append(f"<th>{html.escape(a)} estimate</th><th>95 % interval</th>{exact}")
    head.append("</tr>")
    body = []
    for ref in theirs:
        key = tuple(ref.get(k) for k in keys)
        est = by_key.get(key, {})
        cells = [f"<td class='k'>{html.escape(' / '.join(str(v).strip() for v in key))}</td>"]
        cells.append(f"<td>{fmt_count(est.get('tuples_used', 0))}</td>")
        for a in answer.aggregates:
            fmt = fmt_count if a.startswith("count") else fmt_num
            cells.append(f"<td>{fmt(est.get(a))}</td>")
            if a.split("(")[0] not in ("min", "max"):
                interval = interval_cell(est, a, fmt) if est else "-"
                cells.append(f"<td>{html.escape(interval)}</td>")
            if known:
                cells.append(f"<td>{fmt(ref[a])}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    pis = list(answer.inclusion_probability.values())
    pi = pis[g] if g < len(pis) else 1.0
    used = answer.utility.tuples_used_per_grouping_set
    caption = (
        f"{' / '.join(keys)}: from {fmt_count(used[g])} of {fmt_count(answer.utility.tuples)} "
        f"tuples (each kept with probability {pi:.3g})"
    )
    return (
        f"<div class='scroll'><table><caption>{html.escape(caption)}</caption>"
        f"{''.join(head)}{''.join(body)}</table></div>"
    )


@_answer_section.register
def _result_section(answer: AggregateAnswer) -> str:
    out = [
        "<h2>Result vs exact answer</h2>",
        "<p>Counts and sums are estimates of the full-population answer: target sampling "
        "keeps each tuple with a known probability, so the raw counts of the tuples that "
        "reached the compute nodes are scaled up by its inverse. Intervals are 95 %. "
        "<em>exact</em> is DuckDB on all tuples. Min and max are those of the tuples used "
        "(they cannot be corrected for sampling).</p>",
    ]
    if answer.exact is None:
        out[0] = "<h2>Result</h2>"
        out.append(f"<p><strong>{html.escape(NO_EXACT)}</strong>: no comparison is made.</p>")
    reference = answer.exact if answer.exact is not None else answer.estimates
    out += [_set_html(answer, g) for g in sorted({int(r["grouping_set"]) for r in reference})]
    return "\n".join(out)


def _privacy_section(plan: PlanReport) -> str:
    out = ["<h2>Privacy certificate</h2>", "<table><caption>Per data path</caption>"]
    out.append(
        "<tr><th class='k'>data path</th><th>ε</th><th>δ</th><th class='k'>meaning</th></tr>"
    )
    for p in plan.paths:
        out.append(
            f"<tr><td class='k'>a user's tuple ({html.escape(p.origin)}) through "
            f"{len(p.clusters)} steps</td><td>{fmt_up(p.privacy.epsilon)}</td>"
            f"<td>{fmt_up(p.privacy.delta)}</td><td class='k'>"
            f"{html.escape(path_meaning(p.privacy.epsilon, p.privacy.delta))}</td></tr>"
        )
    out.append("</table><table><caption>Per data-dependent hop</caption>")
    out.append("<tr><th class='k'>hop (countermeasures; certificate)</th><th>ε</th><th>δ</th></tr>")
    for h in plan.hops:
        if not h.data_dependent:
            continue
        words = cluster_words(h, plan.route_names, plan.countermeasures)
        out.append(
            f"<tr><td class='k'>{html.escape(words)}</td>"
            f"<td>{fmt_up(h.privacy.epsilon)}</td><td>{fmt_up(h.privacy.delta)}</td></tr>"
        )
    out.append("</table>")
    out += [f"<p>Note: {html.escape(n)}</p>" for n in plan.privacy.notes]
    return "\n".join(out)


def _costs_section(report: RunReport) -> str:
    basics, peers, consents = cost_words(report)
    rows = "".join(
        f"<tr><td class='k'>{html.escape(k)}</td><td>{html.escape(v)}</td></tr>"
        for k, v in basics + consents + peers
    )
    return f"<h2>Costs</h2><table><caption>What the protection costs</caption>{rows}</table>"


def _kv_table(title: str, record: Any) -> str:
    items = record.items() if isinstance(record, Mapping) else [("value", record)]
    cells = []
    for k, v in items:
        text = fmt_num(v) if isinstance(v, float | int) else str(v)
        cells.append(
            f"<tr><td class='k'>{html.escape(str(k))}</td><td>{html.escape(text)}</td></tr>"
        )
    return f"<h2>{html.escape(title)}</h2><table>{''.join(cells)}</table>"


def _data_uri(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


@singledispatch
def _traffic(answer: Answer) -> Sequence[Mapping[str, Any]]:
    """Messages per compute node with and without countermeasures (none by default)."""
    del answer
    return []


@_traffic.register
def _aggregate_traffic(answer: AggregateAnswer) -> Sequence[Mapping[str, Any]]:
    return answer.traffic


def _figures(report: RunReport, out_dir: Path) -> str:
    out = ["<h2>Pictures</h2><div class='figs'>"]
    traffic = _traffic(report.answer)
    png = b""
    if traffic:
        try:
            png = _traffic_png(traffic, report.plan.route_names)
        except MissingExtraError as exc:  # matplotlib is the optional `plot` extra
            out.append(f"<p>No pictures: {html.escape(str(exc))}.</p>")
    if png:
        out.append(
            f"<figure class='wide'><img alt='messages per compute node' src='{_data_uri(png)}'>"
            "<figcaption>What an observer sees: messages received by each compute node. "
            "Without countermeasures the bars are the data's histogram; with them, dummies "
            "and sampling flatten it.</figcaption></figure>"
        )
    for name, caption in (
        ("privacy_vs_network_load.png", "Privacy against network load around the chosen setting."),
        ("privacy_vs_individual_load.png", "Privacy against the peers one node must talk to."),
    ):
        path = Path(out_dir) / name
        if path.exists():
            out.append(
                f"<figure><img alt='{html.escape(caption)}' src='{_data_uri(path.read_bytes())}'>"
                f"<figcaption>{html.escape(caption)}</figcaption></figure>"
            )
    out.append("</div>")
    return "\n".join(out)


def _traffic_png(traffic: Sequence[Mapping[str, Any]], names: Mapping[str, str]) -> bytes:
    require("matplotlib", purpose="the pictures of report.html").use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    cols = min(2, len(traffic))
    rows = -(-len(traffic) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(5.5 * cols, 3.6 * rows), squeeze=False)
    for ax in axes.ravel()[len(traffic) :]:
        ax.set_visible(False)
    for ax, t in zip(axes.ravel(), traffic, strict=False):
        x = np.arange(len(t["unprotected"]))
        ax.bar(x - 0.2, t["unprotected"], width=0.4, label="without countermeasures")
        ax.bar(x + 0.2, t["protected"], width=0.4, label="with countermeasures")
        ax.set_xlabel("compute node")
        ax.set_ylabel("messages received")
        ax.set_title(route_words(str(t["route"]), names), fontsize=9, wrap=True)
        ax.set_xticks(x)
        # Head room so the legend never hides a bar.
        ax.set_ylim(0, 1.3 * max([1, *t["unprotected"], *t["protected"]]))
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return buffer.getvalue()
