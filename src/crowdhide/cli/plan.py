"""``crowdhide plan PLAN.toml``: show plan, clusters, chosen parameters and certificate."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import AllowUnmetFlag, finish_target
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.cli.run import PlanFileArgument

if TYPE_CHECKING:
    from crowdhide.plans.run_report import PlanReport
    from crowdhide.plans.spec import RunSpec

__all__ = ["plan_command", "plan_inputs", "register"]


def plan_command(
    plan_file: PlanFileArgument,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
) -> None:
    """Build and certify the protected plan without running it.

    Exit code 3 if the certificate is weaker than [privacy] (unless --allow-unmet).
    The plan-file keys only `crowdhide run` uses (run.seed, run.backend, ...) are echoed.
    """
    from crowdhide.plans.runner import prepare
    from crowdhide.plans.spec import load_spec

    spec = load_spec(plan_file)
    with stage_progress(not as_json) as progress:
        report = prepare(spec, progress=progress).report()
    inputs = plan_inputs(spec, plan_file, allow_unmet=allow_unmet)
    if as_json:
        emit({**report.to_dict(), "inputs": inputs}, as_json=True)
    else:
        _print(report, inputs)
    finish_target(report.target_met, report.target_text(), allow_unmet=allow_unmet, as_json=as_json)


def plan_inputs(spec: RunSpec, plan_file: Path, *, allow_unmet: bool) -> dict[str, Any]:
    """What ``plan`` echoes besides the report: the flag, and the plan-file keys that do not
    change the certificate (the data seed, the compute nodes of a K-means plan) or that only
    ``crowdhide run`` reads: a changed key always changes the output, never silently nothing.

    Examples
    --------
    >>> from crowdhide.plans.spec import parse_spec
    >>> spec = parse_spec({"query": {"kind": "kmeans"}, "privacy": {"epsilon": 1}})
    >>> echo = plan_inputs(spec, Path("p.toml"), allow_unmet=False)
    >>> echo["data"]["seed"], echo["run"]["seed"], echo["run"]["backend"]
    (0, 0, 'local')
    """
    return {
        "plan": str(plan_file),
        "allow_unmet": allow_unmet,
        "data": _data_inputs(spec),
        "query": {"compute_nodes": spec.query.compute_nodes},
        "run": {
            "seed": spec.seed,
            "backend": spec.backend,
            "shards": spec.shards,
            "address": spec.address,
            "block_size": spec.block_size,
            "round_seconds": spec.round_seconds,
            "shared_seed": spec.shared_seed,
            "plots": spec.plots,
            "transcript_csv_max_rows": spec.transcript_csv_max_rows,
        },
    }


def _data_inputs(spec: RunSpec) -> dict[str, Any]:
    """The ``[data]`` keys as read: the seed always; a generator's parameters too, since some
    shape only what the terminal does not show (``intervals`` sets the message size)."""
    data = spec.data
    if data.generator is None:
        return {"seed": data.seed}
    return {
        "seed": data.seed,
        "generator": data.generator,
        "rows": data.rows,
        "distribution": data.distribution,
        "skew": data.skew,
        "attributes": data.attributes,
        "intervals": data.intervals,
    }


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""
    app.command("plan")(plan_command)


def _word(value: Any) -> str:
    """A setting as the terminal shows it: ``-`` for none, yes/no for a flag."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _print(report: PlanReport, inputs: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.markup import escape

    from crowdhide.report.terminal import render_plan

    console = Console()
    render_plan(report, console)
    settings = ", ".join(f"run.{key}={_word(value)}" for key, value in inputs["run"].items())
    line = (
        f"inputs: --allow-unmet={'yes' if inputs['allow_unmet'] else 'no'}, "
        + "".join(f"data.{key}={_word(value)}, " for key, value in inputs["data"].items())
        + f"query.compute_nodes={inputs['query']['compute_nodes']}, {settings}"
    )
    console.print(escape(line), overflow="fold")
