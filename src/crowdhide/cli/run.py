"""``crowdhide run PLAN.toml``: execute a protected plan and report result, privacy, costs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
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
        ledger: Annotated[
            Path | None,
            typer.Option("--ledger", help="Privacy ledger (JSON): record this run's certificate."),
        ] = None,
        budget_epsilon: Annotated[
            float | None,
            typer.Option("--budget-epsilon", help="Budget ε of the population (with --ledger)."),
        ] = None,
        budget_delta: Annotated[
            float | None,
            typer.Option("--budget-delta", help="Budget δ of the population (with --ledger)."),
        ] = None,
        population: Annotated[
            str | None,
            typer.Option("--population", help="Ledger key (default: the data file/generator)."),
        ] = None,
        as_json: JsonFlag = False,
        backend: Annotated[
            str | None,
            typer.Option("--backend", help="local | ray (default: [run] backend, else local)."),
        ] = None,
        shards: Annotated[
            int | None,
            typer.Option("--shards", help="Shards (Ray: actors, ~1 per core). Same result."),
        ] = None,
        address: Annotated[
            str | None,
            typer.Option("--address", help="Existing Ray cluster (HOST:PORT); default: local."),
        ] = None,
    ) -> None:
        """Run a decentralized query with DP countermeasures; write result, transcript, plots.

        With --ledger the run is charged to its population before anything is sent and
        refused (exit 2) if the composed budget would be exceeded.
        """
        from crowdhide.cli._budget import budget_hook
        from crowdhide.plans.runner import run_spec
        from crowdhide.plans.spec import load_spec

        spec = load_spec(plan_file)
        out_dir = out if out is not None else Path("results") / spec.name
        with (
            budget_hook(
                spec,
                ledger=ledger,
                budget_epsilon=budget_epsilon,
                budget_delta=budget_delta,
                population=population,
                plan_file=plan_file,
            ) as before_send,
            stage_progress(not as_json) as progress,
        ):
            report = run_spec(
                spec,
                out_dir,
                progress=progress,
                before_send=before_send,
                backend=backend,
                shards=shards,
                address=address,
            )
        from crowdhide.report.html import write_html

        report["files"]["html"] = str(write_html(report, out_dir))
        report["inputs"] = {"plan": str(plan_file), "out": str(out_dir)}
        if as_json:
            emit(report, as_json=True)
            return
        _print(report)


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console

    from crowdhide.report.terminal import render_run

    render_run(report, Console())
