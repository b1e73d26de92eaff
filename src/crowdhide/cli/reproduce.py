"""``crowdhide reproduce NAME``: figure and table reproductions."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._engine_progress import spinner
from crowdhide.cli._options import check_output_dir, output_path, seed_option
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError

__all__ = ["register", "reproduce_command"]


def reproduce_command(
    name: Annotated[
        str,
        typer.Argument(
            help="Experiment name, 'list' to list them, or 'all' to run every one and write "
            "report.html."
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="Output directory.", parser=output_path)
    ] = Path("results"),
    seed: Annotated[int, seed_option()] = 0,
    quick: Annotated[
        bool, typer.Option("--quick", help="Reduced-size run (minutes → seconds).")
    ] = False,
    as_json: JsonFlag = False,
) -> None:
    """Reproduce a paper's figure or table: writes CSV/JSON + PNG and compares."""
    from crowdhide._extras import require
    from crowdhide.experiments.registry import discover, resolve, run_experiment

    if name == "list":
        given = {"--out": out != Path("results"), "--seed": seed != 0, "--quick": quick}
        for option, value in (("--out", str(out)), ("--seed", seed), ("--quick", quick)):
            if given[option]:  # 'list' runs nothing: the option would be dropped
                raise InvalidParameterError(
                    f"{option} does not apply to 'reproduce list', got {value!r}",
                    parameter=option,
                    value=value,
                )
        rows = [{"name": e.name, "summary": e.summary} for e in discover().values()]
        emit(rows, as_json=as_json, title="Reproducible experiments")
        return
    if name == "all":
        _run_all(out, seed=seed, quick=quick, as_json=as_json)
        return
    try:
        found = resolve(name)  # former names (e.g. seed000-fig3) still run, unlisted
    except ValueError:
        known = ", ".join(discover())
        raise InvalidParameterError(
            f"NAME must be 'list', 'all' or one of {known}, got {name!r}",
            parameter="NAME",
            value=name,
        ) from None
    check_output_dir(out / name)
    # Every reproduction draws its figures: a missing matplotlib is reported before the work.
    require("matplotlib", purpose="crowdhide reproduce")
    with spinner(not as_json, f"reproducing {found.name}{' (quick)' if quick else ''}"):
        result = run_experiment(name, out / name, seed=seed, quick=quick)
    record = {
        "experiment": found.name,
        "out": str(out / name),
        "seed": seed,
        "quick": quick,
        "files": [str(f) for f in result.files],
        "comparison": list(result.comparison),
        "verdicts": [v.record() for v in result.verdicts],
        "data": result.data,
    }
    if as_json:
        emit(record, as_json=True)
        return
    emit(
        [{"file": str(f)} for f in result.files],
        as_json=False,
        title=f"{found.name}: files written",
        notes=[*result.comparison, *result.verdict_lines()],
    )


def _run_all(out: Path, *, seed: int, quick: bool, as_json: bool) -> None:
    """Every target in turn (progress on stderr), then ``out/report.html`` and the claim
    table ``out/claims.md``; exit 1 if one failed (the others still run and the page says
    which)."""
    import datetime
    import time

    from crowdhide import __version__
    from crowdhide.experiments.registry import discover, run_experiment
    from crowdhide.experiments.report import TargetRun, write_claim_table, write_report

    check_output_dir(out)
    started = datetime.datetime.now(datetime.UTC)
    registry = discover()
    runs = []
    for i, exp in enumerate(registry.values(), start=1):
        text = f"[{i}/{len(registry)}] reproducing {exp.name}{' (quick)' if quick else ''}"
        clock = time.perf_counter()
        with spinner(not as_json, text):
            try:
                result = run_experiment(exp.name, out / exp.name, seed=seed, quick=quick)
            except Exception as exc:  # one failing target must not hide the others
                runs.append(TargetRun(exp, None, f"{type(exc).__name__}: {exc}"))
                continue
        runs.append(TargetRun(exp, result, seconds=time.perf_counter() - clock))
    provenance = {
        "crowdhide version": __version__,
        "seed": str(seed),
        "mode": "quick" if quick else "full",
        "started (UTC)": started.isoformat(timespec="seconds"),
        "finished (UTC)": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
    }
    page = write_report(out / "report.html", runs, provenance=provenance)
    write_claim_table(out / "claims.md", runs)
    rows = [
        {
            "experiment": r.experiment.name,
            "seconds": round(r.seconds, 1),
            "claims": len(r.result.verdicts) if r.result else 0,
            "holds": sum(v.outcome == "holds" for v in r.result.verdicts) if r.result else 0,
            "error": r.error,
        }
        for r in runs
    ]
    emit(
        {"report": str(page), "provenance": provenance, "targets": rows} if as_json else rows,
        as_json=as_json,
        title=f"reproduce all: {page}",
    )
    if any(r.result is None for r in runs):
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the ``reproduce`` command to ``app``."""
    app.command("reproduce")(reproduce_command)
