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
        as_json: JsonFlag = False,
        backend: Annotated[
            str | None,
            typer.Option(
                "--backend", help="local | ray | tls (default: [run] backend, else local)."
            ),
        ] = None,
        shards: Annotated[
            int | None,
            typer.Option("--shards", help="Shards (Ray: actors, ~1 per core). Same result."),
        ] = None,
        address: Annotated[
            str | None,
            typer.Option("--address", help="Existing Ray cluster (HOST:PORT); default: local."),
        ] = None,
        hosts: Annotated[int, typer.Option("--hosts", help="tls: node-host processes.")] = 3,
        on_missing: Annotated[
            str, typer.Option("--on-missing", help="tls: fail | report lost contributions.")
        ] = "fail",
        pki: Annotated[
            Path | None, typer.Option("--pki", help="tls: directory from `crowdhide net pki`.")
        ] = None,
        block_size: Annotated[
            int | None,
            typer.Option("--block-size", help="Nodes per block (default: [run] block_size)."),
        ] = None,
    ) -> None:
        """Run a decentralized query with DP countermeasures; write result, transcript, plots."""
        from crowdhide.plans.runner import run_spec
        from crowdhide.plans.spec import load_spec

        network = _network(backend, hosts, on_missing, pki)
        if network is not None:
            backend = None  # the tls backend is chosen by `network`
        spec = load_spec(plan_file)
        out_dir = out if out is not None else Path("results") / spec.name
        with stage_progress(not as_json) as progress:
            report = run_spec(
                spec,
                out_dir,
                progress=progress,
                backend=backend,
                shards=shards,
                address=address,
                network=network,
                block_size=block_size,
            )
        report["inputs"] = {"plan": str(plan_file), "out": str(out_dir)}
        if as_json:
            emit(report, as_json=True)
            return
        _print(report)


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
    if "network" in report:
        emit(_flat(report["network"]), as_json=False, title="network (tls backend)")
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
