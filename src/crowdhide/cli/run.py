"""``crowdhide run PLAN.toml``: execute a protected plan and report result, privacy, costs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import AllowUnmetFlag, check_output_dir, finish_target
from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to ``app``."""

    @app.command("run")
    def run(
        plan_file: Annotated[Path, typer.Argument(help="PLAN.toml (data, query, privacy).")],
        out: Annotated[
            Path | None, typer.Option("--out", help="Output directory (default: results/<name>).")
        ] = None,
        allow_unmet: AllowUnmetFlag = False,
        as_json: JsonFlag = False,
    ) -> None:
        """Run a decentralized query with DP countermeasures; write result, transcript, plots.

        A plan whose certificate is weaker than [privacy] is not run (exit code 3) unless
        --allow-unmet is given.
        """
        from crowdhide.plans.runner import run_spec
        from crowdhide.plans.spec import load_spec

        spec = load_spec(plan_file)
        out_dir = check_output_dir(out if out is not None else Path("results") / spec.name)
        with stage_progress(not as_json) as progress:
            report = run_spec(spec, out_dir, progress=progress, allow_unmet=allow_unmet)
        report["inputs"] = {"plan": str(plan_file), "out": str(out_dir)}
        if as_json:
            emit(report, as_json=True)
        else:
            _print(report)
        met = report.get("target_met")
        privacy = report["privacy"]
        finish_target(
            met,
            f"certified epsilon={privacy['epsilon']:.4g}, delta={privacy['delta']:.3g} vs "
            f"target epsilon={report['target']['epsilon']}, delta={report['target']['delta']:g}",
            allow_unmet=True,  # an unmet plan only runs with --allow-unmet (checked before)
            as_json=as_json,
        )


def _print(report: dict[str, Any]) -> None:
    privacy = report["privacy"]
    if isinstance(report["result"], list):
        keys = list(dict.fromkeys(k for row in report["result"] for k in row))
        groups = [k for k in keys if "(" not in k]
        aggregates = [k for k in keys if "(" in k]

        def key(row: dict[str, Any]) -> tuple[Any, ...]:
            return tuple(row.get(k) for k in groups)

        exact = {key(r): r for r in report["exact"]}
        rows = []
        for row in report["result"]:
            merged = dict(row)
            for agg in aggregates:
                merged[f"exact {agg}"] = exact.get(key(row), {}).get(agg)
            rows.append(merged)
        columns = groups + [c for a in aggregates for c in (a, f"exact {a}")]
        emit(
            rows[:40],
            as_json=False,
            title=f"{report['name']}: query result vs DuckDB's exact answer (first 40 rows)",
            columns=columns,
        )
    else:
        emit(report["result"], as_json=False, title=f"{report['name']}: query result")
    emit(_flat(report["utility"]), as_json=False, title="utility (vs DuckDB exact answer)")
    emit(
        [
            {
                "origin": p["origin"],
                "epsilon": p["epsilon"],
                "delta": p["delta"],
                "clusters": len(p["clusters"]),
            }
            for p in privacy["paths"]
        ],
        as_json=False,
        title=f"end-to-end privacy per data path (Theorem 1, accountant: {privacy['accountant']})",
    )
    emit(
        [c for c in privacy["clusters"] if c["method"] != "data-independent"],
        as_json=False,
        title="per-cluster certificates (data-dependent clusters)",
        columns=["cluster", "targets", "parallel_clusters", "epsilon", "delta", "method"],
        notes=list(privacy["notes"]),
    )
    emit(
        [
            {"route": k, **{x: v[x] for x in ("sigma", "local_dummies", "n", "d")}}
            for k, v in report["countermeasures"].items()
        ],
        as_json=False,
        title=f"countermeasures ({report['mode']})",
    )
    emit(_flat(report["costs"]), as_json=False, title="costs")
    emit(
        report["files"],
        as_json=False,
        title="files written",
        notes=[
            f"total {report['timings']['total_s']:.2f} s "
            f"(execute {report['timings']['execute_s']:.2f} s)"
        ],
    )


def _flat(record: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(_flat(value, prefix=f"{name}."))
        elif isinstance(value, list):
            out[name] = ", ".join(str(v) for v in value)
        else:
            out[name] = value
    return out
