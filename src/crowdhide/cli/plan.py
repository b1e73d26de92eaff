"""``crowdhide plan PLAN.toml``: show plan, clusters, chosen parameters and certificate."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import AllowUnmetFlag, finish_target
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli.run import PlanFileArgument

if TYPE_CHECKING:
    from crowdhide.plans.planner import CountermeasureChoice
    from crowdhide.plans.run_report import PlanReport

__all__ = ["plan_command", "register"]

_ROUTE_COLUMNS = ["route", "sender", "receiver", "kind", "senders", "targets", "sigma", "n", "d"]


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


def _choice_row(route: str, choice: CountermeasureChoice) -> dict[str, Any]:
    record = choice.to_dict()
    keys = ("sigma", "local_dummies", "n", "d", "epsilon_cluster", "method")
    costs = ("overhead", "channels_per_scrambler", "extra_consents")
    return {
        "route": route,
        **{k: record[k] for k in keys},
        **{k: record["costs"][k] for k in costs},
    }


def _print(report: PlanReport) -> None:
    emit(
        list(report.routes),
        as_json=False,
        title=f"{report.name}: routes of the protected plan",
        columns=[*_ROUTE_COLUMNS, "scramblers"],
    )
    emit(
        [h.to_dict() for h in report.hops],
        as_json=False,
        title="clusters (Definition 4) and certificates",
        columns=["cluster", "targets", "parallel_clusters", "epsilon", "delta", "method"],
        notes=list(report.privacy.notes),
    )
    emit(
        [{**p.to_dict(), "clusters": " + ".join(p.clusters)} for p in report.paths],
        as_json=False,
        title="Theorem 1: end-to-end (ε, δ) per data path",
    )
    privacy = report.privacy
    emit(
        [_choice_row(k, v) for k, v in report.countermeasures.items()],
        as_json=False,
        title=f"countermeasures ({report.mode})",
        notes=[
            f"plan: epsilon={privacy.epsilon:.4g}, delta={privacy.delta:.3g} "
            f"(target epsilon={report.target_epsilon}, delta={report.target_delta:g}; "
            f"target met: {report.target_met})"
        ],
    )
