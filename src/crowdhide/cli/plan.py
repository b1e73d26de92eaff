"""``crowdhide plan PLAN.toml``: show plan, clusters, chosen parameters and certificate."""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import AllowUnmetFlag, finish_target
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli.run import PlanFileArgument

if TYPE_CHECKING:
    from crowdhide.plans.run_report import PlanReport

__all__ = ["plan_command", "register"]


def plan_command(
    plan_file: PlanFileArgument,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Build and certify the protected plan without running it.

    Exit code 3 if the certificate is weaker than [privacy] (unless --allow-unmet).
    """
    from crowdhide.plans.runner import prepare
    from crowdhide.plans.spec import load_spec

    spec = load_spec(plan_file)
    with stage_progress(not as_json) as progress:
        report = prepare(spec, progress=progress).report()
    if as_json:
        emit({**report.to_dict(), "inputs": {"plan": str(plan_file)}}, as_json=True)
    else:
        _print(report)
    finish_target(report.target_met, report.target_text(), allow_unmet=allow_unmet, as_json=as_json)


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""
    app.command("plan")(plan_command)


def _print(report: PlanReport) -> None:
    from rich.console import Console

    from crowdhide.report.terminal import render_plan

    render_plan(report, Console())
