"""``crowdhide run PLAN.toml``: execute a protected plan and report result, privacy, costs."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import (
    MAX_EPSILON,
    AllowUnmetFlag,
    check_output_dir,
    finish_target,
    int_option,
    real_option,
)
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
            real_option(
                "--budget-epsilon",
                "Budget ε of the population (with --ledger).",
                low=0.0,
                high=MAX_EPSILON,
                low_open=True,
            ),
        ] = None,
        budget_delta: Annotated[
            float | None,
            real_option(
                "--budget-delta",
                "Budget δ of the population (with --ledger).",
                low=0.0,
                high=1.0,
                high_open=True,
            ),
        ] = None,
        population: Annotated[
            str | None,
            typer.Option("--population", help="Ledger key (default: the data file/generator)."),
        ] = None,
        allow_unmet: AllowUnmetFlag = False,
        as_json: JsonFlag = False,
        backend: Annotated[
            str | None,
            typer.Option(
                "--backend", help="local | ray | tls (default: [run] backend, else local)."
            ),
        ] = None,
        shards: Annotated[
            int | None,
            int_option(
                "--shards", "Shards (Ray: actors, ~1 per core). Same result.", low=1, high=4096
            ),
        ] = None,
        address: Annotated[
            str | None,
            typer.Option("--address", help="Existing Ray cluster (HOST:PORT); default: local."),
        ] = None,
        hosts: Annotated[
            int, int_option("--hosts", "tls: node-host processes.", low=1, high=256)
        ] = 3,
        on_missing: Annotated[
            str, typer.Option("--on-missing", help="tls: fail | report lost contributions.")
        ] = "fail",
        pki: Annotated[
            Path | None, typer.Option("--pki", help="tls: directory from `crowdhide net pki`.")
        ] = None,
        block_size: Annotated[
            int | None,
            int_option(
                "--block-size", "Nodes per block (default: [run] block_size).", low=1, high=10**9
            ),
        ] = None,
    ) -> None:
        """Run a decentralized query with DP countermeasures; write result, transcript, plots.

        With --ledger the run is charged to its population before anything is sent and
        refused (exit 2) if the composed budget would be exceeded. A plan whose certificate
        is weaker than [privacy] is not run (exit code 3) unless --allow-unmet is given.
        """
        from crowdhide.cli._budget import budget_hook
        from crowdhide.plans.runner import run_spec
        from crowdhide.plans.spec import load_spec

        network = _network(backend, hosts, on_missing, pki)
        if network is not None:
            backend = None  # the tls backend is chosen by `network`
        spec = load_spec(plan_file)
        out_dir = check_output_dir(out if out is not None else Path("results") / spec.name)
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
                network=network,
                block_size=block_size,
                allow_unmet=allow_unmet,
            )
        from crowdhide.report.html import write_html

        report["files"]["html"] = str(write_html(report, out_dir))
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


def _network(
    backend: str | None, hosts: int, on_missing: str, pki: Path | None
) -> dict[str, Any] | None:
    """Options of the tls backend, or ``None`` for the engine's own backends."""
    if backend not in (None, "local", "ray", "tls"):
        raise ValueError(f"backend must be one of ('local', 'ray', 'tls'), got {backend!r}")
    if on_missing not in ("fail", "report"):
        raise ValueError(f"--on-missing must be 'fail' or 'report', got {on_missing!r}")
    if backend != "tls":
        return None
    if not 1 <= hosts <= 256:
        raise ValueError(f"--hosts must be in [1, 256], got {hosts}")
    if pki is not None and not (pki / "ca.pem").is_file():
        raise ValueError(f"--pki must be a directory written by `crowdhide net pki`, got {pki}")
    return {"hosts": hosts, "on_missing": on_missing, "pki": pki}


def _print(report: dict[str, Any]) -> None:
    from rich.console import Console

    from crowdhide.report.terminal import flatten, render_run

    render_run(report, Console())
    if "network" in report:
        emit(flatten(report["network"]), as_json=False, title="network (tls backend)")
