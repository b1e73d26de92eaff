"""One self-contained HTML page for a run of every reproduction.

Each target gets a section: its summary and description (the paper's setting, from the run
function's docstring), its figures embedded as PNG data URIs, the comparison lines and the
claim table with verdicts; the page starts with the run's provenance (crowdhide version, seed,
mode, time) and a table of every claim. Nothing is fetched when the page is opened.
"""

from __future__ import annotations

import base64
import html
import inspect
import json
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from crowdhide.errors import InvalidParameterError
from crowdhide.experiments.claims import HOLDS, MAGNITUDE, NOT_HOLD, Verdict
from crowdhide.experiments.errata import ERRATA, Erratum
from crowdhide.experiments.registry import Experiment, ExperimentResult

__all__ = [
    "TargetRun",
    "claim_table_markdown",
    "splice_claim_table",
    "write_claim_table",
    "write_report",
]

_COLOURS = {HOLDS: "#1a7f37", MAGNITUDE: "#9a6700", NOT_HOLD: "#cf222e"}
_STYLE = """
body { font-family: sans-serif; max-width: 1200px; margin: 1em auto; color: #1f2328; }
table { border-collapse: collapse; margin: 0.5em 0; font-size: 0.9em; }
td, th { border: 1px solid #d0d7de; padding: 3px 6px; vertical-align: top; text-align: left; }
th { background: #f6f8fa; }
section { border-top: 2px solid #d0d7de; margin-top: 1.5em; }
img { max-width: 100%; border: 1px solid #eee; }
.fig { display: flex; gap: 1em; align-items: flex-start; }
.fig > div { flex: 1; }
pre { white-space: pre-wrap; font-size: 0.8em; background: #f6f8fa; padding: 0.5em; }
.verdict { font-weight: bold; }
"""


@dataclass(frozen=True)
class TargetRun:
    """One target's run: the experiment, its result (``None`` if it failed), the failure
    message and the seconds it took."""

    experiment: Experiment
    result: ExperimentResult | None
    error: str = ""
    seconds: float = 0.0


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _verdict_cell(v: Verdict) -> str:
    colour = _COLOURS[v.outcome]
    return f'<td class="verdict" style="color:{colour}">{_esc(v.outcome)}</td>'


def _claim_rows(name: str, verdicts: Sequence[Verdict]) -> str:
    return "".join(
        f"<tr><td>{_esc(name)}</td><td>{_esc(v.claim.paper)}, {_esc(v.claim.section)}</td>"
        f"<td>{_esc(v.claim.text)}</td><td>{_esc(v.measured)}</td><td>{_esc(v.tolerance)}</td>"
        f"{_verdict_cell(v)}<td>{_esc(v.reason)}</td></tr>"
        for v in verdicts
    )


_CLAIM_HEAD = (
    "<tr><th>target</th><th>paper, where</th><th>claim</th><th>crowdhide's number</th>"
    "<th>tolerance</th><th>verdict</th><th>why it differs</th></tr>"
)


def _images(files: Sequence[Path]) -> str:
    parts = []
    for path in files:
        if path.suffix.lower() == ".png" and path.exists():
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            parts.append(f'<img alt="{_esc(path.name)}" src="data:image/png;base64,{data}">')
    return "".join(parts) or "<p>(no figure)</p>"


def _section(run: TargetRun) -> str:
    exp = run.experiment
    doc = inspect.getdoc(exp.run) or ""
    head = f'<section id="{_esc(exp.name)}"><h2>{_esc(exp.name)}</h2><p>{_esc(exp.summary)}</p>'
    if run.result is None:
        return head + f"<p><b>failed</b>: {_esc(run.error)}</p></section>"
    res = run.result
    claims = (
        f"<table>{_CLAIM_HEAD}{_claim_rows(exp.name, res.verdicts)}</table>"
        if res.verdicts
        else "<p>(no claim judged)</p>"
    )
    return (
        head
        + f'<div class="fig"><div>{_images(res.files)}</div>'
        + f"<div><h3>What the paper describes</h3><pre>{_esc(doc)}</pre>"
        + f"<p>{run.seconds:.1f} s</p></div></div>"
        + f"<h3>Claims</h3>{claims}"
        + f"<h3>Comparison</h3><pre>{_esc(chr(10).join(res.comparison))}</pre></section>"
    )


def _errata(entries: Sequence[Erratum]) -> str:
    """The "Errata and deviations" section: one row per entry, errata first."""
    ordered = sorted(entries, key=lambda e: (e.kind != "erratum", e.paper))
    rows = "".join(
        f"<tr><td>{_esc(e.kind)}</td><td>{_esc(e.paper)}, {_esc(e.where)}</td>"
        f"<td>{_esc(e.text)}</td><td>{_esc(e.why)}</td><td>{_esc(e.target)}</td></tr>"
        for e in ordered
    )
    head = "<tr><th>kind</th><th>paper, where</th><th>what</th><th>why</th><th>target</th></tr>"
    return (
        '<h2 id="errata">Errata and deviations</h2><p>Errata: what is wrong in a paper. '
        "Deviations: where a reproduction does not do what the paper did, and why.</p>"
        f"<table>{head}{rows}</table>"
    )


def write_report(path: Path, runs: Sequence[TargetRun], *, provenance: dict[str, str]) -> Path:
    """Write the page for ``runs`` to ``path``; ``provenance`` (version, seed, mode, time...)
    heads it. Returns ``path``."""
    verdicts = [(r.experiment.name, v) for r in runs if r.result for v in r.result.verdicts]
    counts = {o: sum(v.outcome == o for _, v in verdicts) for o in (HOLDS, MAGNITUDE, NOT_HOLD)}
    summary = ", ".join(f"{k} {o}" for o, k in counts.items())
    failed = [r.experiment.name for r in runs if r.result is None]
    prov = "".join(f"<tr><th>{_esc(k)}</th><td>{_esc(v)}</td></tr>" for k, v in provenance.items())
    table = "".join(_claim_rows(name, [v]) for name, v in verdicts)
    index = " · ".join(
        f'<a href="#{_esc(r.experiment.name)}">{_esc(r.experiment.name)}</a>' for r in runs
    )
    body = (
        "<h1>crowdhide: paper reproductions</h1>"
        f"<table>{prov}</table>"
        f"<p>{len(runs)} targets, {len(verdicts)} claims: {_esc(summary)}"
        + (f"; failed: {_esc(', '.join(failed))}" if failed else "")
        + f"</p><p>{index}</p>"
        f"<h2>All claims</h2><table>{_CLAIM_HEAD}{table}</table>"
        + _errata(ERRATA)
        + "".join(_section(r) for r in runs)
    )
    page = (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>crowdhide reproductions</title><style>{_STYLE}</style></head>"
        f"<body>{body}</body></html>\n"
    )
    path.write_text(page, encoding="utf-8")
    return path


#: The markers between which :func:`splice_claim_table` writes the table in a document.
TABLE_BEGIN = "<!-- claim table: generated by python -m crowdhide.experiments.report -->"
TABLE_END = "<!-- end of claim table -->"


def _md(text: object) -> str:
    """A markdown table cell: pipes escaped, line breaks flattened."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _context(record: Mapping[str, str], keys: Sequence[tuple[str, str, str]]) -> str:
    """For a claim judged more than once (per ε, data set, accounting...), the setting that
    tells its rows apart: the measured line up to its first colon."""
    if keys.count((record["paper"], record["section"], record["claim"])) < 2:
        return ""
    setting = record.get("measured", "").split(":")[0].strip()
    return f" ({setting})" if setting else ""


def claim_table_markdown(records: Sequence[Mapping[str, str]]) -> str:
    """The claim table (paper | claim | paper's number | crowdhide's | verdict | target) of
    verdict records (:meth:`Verdict.record` plus ``target``), sorted by paper, stable.

    Examples
    --------
    >>> rec = {"paper": "P 2020", "section": "Fig. 1", "claim": "a | b", "verdict": "holds",
    ...        "paper_value": "2", "crowdhide_value": "2.01", "target": "p-fig1"}
    >>> print(claim_table_markdown([rec]).splitlines()[2])
    | P 2020 | Fig. 1: a \\| b | 2 | 2.01 | holds | p-fig1 |
    """
    keys = [(r["paper"], r["section"], r["claim"]) for r in records]
    head = [
        "| paper | claim | paper's number | crowdhide's | verdict | target |",
        "|---|---|---|---|---|---|",
    ]
    rows = [
        "| "
        + " | ".join(
            _md(c)
            for c in (
                r["paper"],
                f"{r['section']}: {r['claim']}" + _context(r, keys),
                r.get("paper_value", ""),
                r.get("crowdhide_value", ""),
                r["verdict"],
                r.get("target", ""),
            )
        )
        + " |"
        for r in sorted(records, key=lambda r: r["paper"])
    ]
    return "\n".join(head + rows) + "\n"


def write_claim_table(path: Path, runs: Sequence[TargetRun]) -> Path:
    """Write the markdown claim table of ``runs`` to ``path`` (``claims.md`` of ``reproduce
    all``); returns ``path``."""
    records = [
        {**v.record(), "target": r.experiment.name}
        for r in runs
        if r.result
        for v in r.result.verdicts
    ]
    path.write_text(claim_table_markdown(records), encoding="utf-8")
    return path


def _collect(run_dir: Path) -> list[dict[str, str]]:
    """Every ``NAME/claims.json`` under a ``reproduce all`` output folder, with its target."""
    records = []
    for path in sorted(run_dir.glob("*/claims.json")):
        for rec in json.loads(path.read_text(encoding="utf-8")):
            records.append({**rec, "target": path.parent.name})
    return records


def splice_claim_table(document: Path, table: str) -> None:
    """Replace the text between :data:`TABLE_BEGIN` and :data:`TABLE_END` in ``document``."""
    text = document.read_text(encoding="utf-8")
    start, end = text.find(TABLE_BEGIN), text.find(TABLE_END)
    if start < 0 or end < start:
        raise InvalidParameterError(f"{document.name} lacks the claim-table markers")
    head = text[: start + len(TABLE_BEGIN)]
    document.write_text(head + "\n\n" + table + "\n" + text[end:], encoding="utf-8")


def main(argv: Sequence[str]) -> int:
    """``python -m crowdhide.experiments.report RUN_DIR [DOCUMENT]``: print the claim table of
    a ``reproduce all`` run, or write it into DOCUMENT between the markers."""
    if len(argv) not in (1, 2):
        print("usage: python -m crowdhide.experiments.report RUN_DIR [DOCUMENT]", file=sys.stderr)
        return 2
    records = _collect(Path(argv[0]))
    if not records:
        print(f"no */claims.json under {argv[0]}", file=sys.stderr)
        return 2
    table = claim_table_markdown(records)
    if len(argv) == 2:
        splice_claim_table(Path(argv[1]), table)
    else:
        print(table, end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
