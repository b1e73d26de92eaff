"""``crowdhide plan PLAN.toml``: show plan, clusters, chosen parameters and certificate."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import AllowUnmetFlag, finish_target
from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``plan`` command to ``app``."""

    @app.command("plan")
    def plan(
        plan_file: Annotated[Path, typer.Argument(help="PLAN.toml (data, query, privacy).")],
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
            prepared = prepare(spec, progress=progress)
        summary = prepared.summary()
        summary["inputs"] = {"plan": str(plan_file)}
        if as_json:
            emit(summary, as_json=True)
        else:
            _print(summary, spec.name, spec.epsilon, spec.delta)
        finish_target(
            prepared.target_met(),
            prepared.target_text(),
            allow_unmet=allow_unmet,
            as_json=as_json,
        )


def _print(summary: dict[str, Any], name: str, epsilon: float | None, delta: float) -> None:
    emit(
        summary["routes"],
        as_json=False,
        title=f"{name}: routes of the protected plan",
        columns=[
            "route",
            "sender",
            "receiver",
            "kind",
            "senders",
            "targets",
            "sigma",
            "n",
            "d",
            "scramblers",
        ],
    )
    privacy = summary["privacy"]
    emit(
        privacy["clusters"],
        as_json=False,
        title="clusters (Definition 4) and certificates",
        columns=["cluster", "targets", "parallel_clusters", "epsilon", "delta", "method"],
        notes=list(privacy["notes"]),
    )
    emit(
        [
            {
                "origin": p["origin"],
                "epsilon": p["epsilon"],
                "delta": p["delta"],
                "clusters": " + ".join(p["clusters"]),
            }
            for p in privacy["paths"]
        ],
        as_json=False,
        title="Theorem 1: end-to-end (ε, δ) per data path",
    )
    emit(
        [
            {
                "route": k,
                "sigma": v["sigma"],
                "local_dummies": v["local_dummies"],
                "n": v["n"],
                "d": v["d"],
                "epsilon_cluster": v["epsilon_cluster"],
                "method": v["method"],
                "overhead": v["costs"]["overhead"],
                "channels_per_scrambler": v["costs"]["channels_per_scrambler"],
                "extra_consents": v["costs"]["extra_consents"],
            }
            for k, v in summary["countermeasures"].items()
        ],
        as_json=False,
        title=f"countermeasures ({summary['mode']})",
        notes=[
            f"plan: epsilon={privacy['epsilon']:.4g}, delta={privacy['delta']:.3g} "
            f"(target epsilon={epsilon}, delta={delta:g}; target met: "
            f"{summary['target_met']})"
        ],
    )
