"""``crowdhide run PLAN.toml``: execute a protected plan and report result, privacy, costs."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from crowdhide.cli._engine_progress import stage_progress
from crowdhide.cli._options import (
    AllowUnmetFlag,
    check_output_dir,
    check_output_file,
    finish_target,
    int_option,
    output_path,
    real_option,
)
from crowdhide.cli._output import COMMAND_LINE, JsonFlag, emit
from crowdhide.cli._values import MAX_EPSILON
from crowdhide.errors import InvalidParameterError

if TYPE_CHECKING:
    from crowdhide.plans.run_report import RunReport

__all__ = ["PlanFileArgument", "register", "run_command"]

#: The plan file argument of ``crowdhide plan`` and ``crowdhide run``.
PlanFileArgument = Annotated[
    Path,
    typer.Argument(
        help="PLAN.toml (data, query, privacy), or example:NAME (crowdhide examples list)."
    ),
]
OutOption = Annotated[
    Path | None,
    typer.Option("--out", help="Output directory (default: results/<name>).", parser=output_path),
]
LedgerOption = Annotated[
    Path | None,
    typer.Option(
        "--ledger",
        help="Privacy ledger (JSON): record this run's certificate.",
        parser=output_path,
    ),
]
BudgetEpsilonOption = Annotated[
    float | None,
    real_option(
        "--budget-epsilon",
        "Budget ε of the population (with --ledger).",
        low=0.0,
        high=MAX_EPSILON,
        low_open=True,
    ),
]
BudgetDeltaOption = Annotated[
    float | None,
    real_option(
        "--budget-delta",
        "Budget δ of the population (with --ledger).",
        low=0.0,
        high=1.0,
        high_open=True,
    ),
]
PopulationOption = Annotated[
    str | None,
    typer.Option("--population", help="Ledger key (default: the data file/generator)."),
]
BackendOption = Annotated[
    str | None,
    typer.Option("--backend", help="local | ray | tls (default: [run] backend, else local)."),
]
ShardsOption = Annotated[
    int | None,
    int_option("--shards", "Shards (Ray: actors, ~1 per core). Same result.", low=1, high=4096),
]
AddressOption = Annotated[
    str | None,
    typer.Option("--address", help="Existing Ray cluster (HOST:PORT); default: local."),
]
HostsOption = Annotated[
    int | None, int_option("--hosts", "tls: node-host processes (default 3).", low=1, high=256)
]
OnMissingOption = Annotated[
    str | None,
    typer.Option("--on-missing", help="tls: fail | report lost contributions (default fail)."),
]
RoundSecondsOption = Annotated[
    float | None,
    real_option(
        "--round-seconds",
        "tls: fixed length of every round (default: [run] round_seconds, else each round's "
        "own length, from the plan's worst-case work).",
        low=0.05,
        high=3600.0,
    ),
]
PkiOption = Annotated[
    Path | None, typer.Option("--pki", help="tls: directory from `crowdhide net pki`.")
]
PlacementOption = Annotated[
    str | None,
    typer.Option(
        "--placement", help="tls: spread (default: small groups on different hosts) | modulo."
    ),
]
SharedSeedFlag = Annotated[
    bool,
    typer.Option(
        "--shared-seed",
        help="tls: hosts key their randomness by the seed, as local does (reproducible; "
        "every host can replay the others' dummies). Default: each host's own secret.",
    ),
]
DirectoryOption = Annotated[
    Path | None,
    typer.Option(
        "--directory",
        help="tls: run on the node daemons of this signed directory (with --ca, --state).",
    ),
]
CaOption = Annotated[
    Path | None, typer.Option("--ca", help="tls with --directory: the CA certificate.")
]
StateOption = Annotated[
    Path | None,
    typer.Option("--state", help="tls with --directory: the coordinator's enrolled folder."),
]
BlockSizeOption = Annotated[
    int | None,
    int_option("--block-size", "Nodes per block (default: [run] block_size).", low=1, high=10**9),
]


def run_command(
    ctx: typer.Context,
    plan_file: PlanFileArgument,
    out: OutOption = None,
    ledger: LedgerOption = None,
    budget_epsilon: BudgetEpsilonOption = None,
    budget_delta: BudgetDeltaOption = None,
    population: PopulationOption = None,
    allow_unmet: AllowUnmetFlag = False,
    as_json: JsonFlag = False,
    backend: BackendOption = None,
    shards: ShardsOption = None,
    address: AddressOption = None,
    hosts: HostsOption = None,
    on_missing: OnMissingOption = None,
    pki: PkiOption = None,
    placement: PlacementOption = None,
    block_size: BlockSizeOption = None,
    round_seconds: RoundSecondsOption = None,
    shared_seed: SharedSeedFlag = False,
    directory: DirectoryOption = None,
    ca: CaOption = None,
    state: StateOption = None,
) -> None:
    """Run a decentralized query with DP countermeasures; write result, transcript, plots.

    With --ledger the run is charged to its population before anything is sent and
    refused (exit 2) if the composed budget would be exceeded. A plan whose certificate
    is weaker than [privacy] is not run (exit code 3) unless --allow-unmet is given.
    """
    from dataclasses import replace

    from crowdhide.cli._budget import budget_hook
    from crowdhide.plans.spec import load_spec
    from crowdhide.report.html import run_with_html

    network = _network(backend, hosts, on_missing, pki, placement)
    network = _daemons(network, backend, hosts, pki, directory=directory, ca=ca, state=state)
    if round_seconds is not None:
        if network is None:
            raise InvalidParameterError(
                f"--round-seconds applies to --backend tls only, got {round_seconds}",
                parameter="--round-seconds",
                value=round_seconds,
            )
        network["round_seconds"] = round_seconds
    if shared_seed:
        _shared_seed(network)
    if ledger is not None:
        check_output_file(ledger, option="--ledger")
    spec = load_spec(plan_file)
    out_dir = check_output_dir(out if out is not None else Path("results") / spec.name)
    budget = {"budget_epsilon": budget_epsilon, "budget_delta": budget_delta}
    with (
        budget_hook(
            spec, ledger=ledger, population=population, plan_file=plan_file, **budget
        ) as before_send,
        stage_progress(not as_json) as progress,
    ):
        report = run_with_html(
            spec,
            out_dir,
            progress=progress,
            before_send=before_send,
            backend=None if network is not None else backend,  # tls: chosen by `network`
            shards=shards,
            address=address,
            network=network,
            block_size=block_size,
            allow_unmet=allow_unmet,
            command=COMMAND_LINE.get(),
        )
    report = replace(report, inputs={"plan": str(plan_file), "out": str(out_dir)})
    _show(report, ctx.params, as_json=as_json)
    # An unmet plan only runs with --allow-unmet (checked before anything was sent).
    finish_target(
        report.privacy.meets_target,
        report.plan.target_text(),
        allow_unmet=True,
        as_json=as_json,
    )


def register(app: typer.Typer) -> None:
    """Add the ``run`` command to ``app``."""
    app.command("run")(run_command)


def _network(
    backend: str | None,
    hosts: int | None,
    on_missing: str | None,
    pki: Path | None,
    placement: str | None,
) -> dict[str, Any] | None:
    """Options of the tls backend, or ``None`` for the engine's own backends (which refuse
    the tls options rather than ignore them)."""
    if backend not in (None, "local", "ray", "tls"):
        raise InvalidParameterError(
            f"backend must be one of ('local', 'ray', 'tls'), got {backend!r}",
            parameter="--backend",
            value=backend,
        )
    if on_missing not in (None, "fail", "report"):
        raise InvalidParameterError(
            f"--on-missing must be 'fail' or 'report', got {on_missing!r}",
            parameter="--on-missing",
            value=on_missing,
        )
    if placement is not None and placement not in ("spread", "modulo"):
        raise InvalidParameterError(
            f"--placement must be 'spread' or 'modulo', got {placement!r}",
            parameter="--placement",
            value=placement,
        )
    if backend != "tls":
        given = {
            "--hosts": hosts,
            "--on-missing": on_missing,
            "--pki": pki,
            "--placement": placement,
        }
        for option, value in given.items():
            if value is not None:
                used = f"--backend {backend}" if backend else "the plan file's [run] backend"
                raise InvalidParameterError(
                    f"{option} {value} applies to --backend tls only, not {used}",
                    parameter=option,
                    value=value,
                )
        return None
    hosts = 3 if hosts is None else hosts
    on_missing = "fail" if on_missing is None else on_missing
    if not 1 <= hosts <= 256:
        raise InvalidParameterError(
            f"--hosts must be in [1, 256], got {hosts}", parameter="--hosts", value=hosts
        )
    if pki is not None and not (pki / "ca.pem").is_file():
        raise InvalidParameterError(
            f"--pki must be a directory written by `crowdhide net pki`, got {pki}",
            parameter="--pki",
            value=str(pki),
        )
    return {"hosts": hosts, "on_missing": on_missing, "pki": pki, "placement": placement}


def _daemons(
    network: dict[str, Any] | None,
    backend: str | None,
    hosts: int | None,
    pki: Path | None,
    **given: Path | None,
) -> dict[str, Any] | None:
    """The tls options of a run on running node daemons (``--directory``, ``--ca``,
    ``--state``: all three or none), which replace ``--hosts`` and ``--pki``."""
    named = {f"--{k}": v for k, v in given.items()}
    if all(v is None for v in named.values()):
        return network
    if network is None:
        option, value = next((k, v) for k, v in named.items() if v is not None)
        raise InvalidParameterError(
            f"{option} {value} applies to --backend tls only, got {backend!r}",
            parameter=option,
            value=value,
        )
    lacking = [k for k, v in named.items() if v is None]
    if lacking:
        raise InvalidParameterError(
            f"{lacking[0]} is needed with {', '.join(k for k in named if k not in lacking)}",
            parameter=lacking[0],
            value=None,
        )
    spawn: dict[str, object] = {"--hosts": hosts, "--pki": pki}
    for flag, setting in spawn.items():
        if setting is not None:
            raise InvalidParameterError(
                f"{flag} {setting} does not apply to a run on node daemons (--directory): "
                f"the directory lists them and each holds its own keys",
                parameter=flag,
                value=setting,
            )
    for option, path in named.items():
        assert path is not None
        if not path.exists():
            raise InvalidParameterError(
                f"{option} does not exist, got {str(path)!r}", parameter=option, value=str(path)
            )
    settings = {k: v for k, v in network.items() if k not in ("hosts", "pki")}
    return {**settings, **given}


def _shared_seed(network: dict[str, Any] | None) -> None:
    """``--shared-seed``: tls hosts spawned by this run only (node daemons always draw their
    own secret randomness; the in-process backends always use the seed)."""
    if network is None:
        raise InvalidParameterError(
            "--shared-seed applies to --backend tls only", parameter="--shared-seed", value=True
        )
    if "directory" in network:
        raise InvalidParameterError(
            "--shared-seed does not apply to a run on node daemons (--directory): "
            "each daemon keys its blocks with its own secret randomness",
            parameter="--shared-seed",
            value=True,
        )
    network["shared_seed"] = True


#: Parameters of ``run`` that are not echoed on the ``inputs:`` line (shown elsewhere).
_NOT_ECHOED = frozenset({"plan_file", "out", "as_json"})


def _inputs_line(params: dict[str, Any]) -> str:
    """The options of a run as one line under its table: a changed option that leaves the
    printed result the same (``--shards``, ``--ledger`` without a budget, ``--allow-unmet``
    with the target met) is still seen (issue 28: no option silently ignored).

    Examples
    --------
    >>> _inputs_line({"allow_unmet": False, "shards": 2, "ledger": None, "shared_seed": True})
    'inputs: --allow-unmet=no, --shards=2, --shared-seed=yes'
    """
    shown = [
        f"--{key.replace('_', '-')}="
        + (("yes" if value else "no") if isinstance(value, bool) else str(value))
        for key, value in params.items()
        if key not in _NOT_ECHOED
        and value is not None
        and (value is not False or key == "allow_unmet")  # an unset flag: only this one
    ]
    return "inputs: " + ", ".join(shown)


def _show(report: RunReport, params: dict[str, Any], *, as_json: bool) -> None:
    """The report as JSON (``inputs`` with ``allow_unmet``) or tables and the inputs line."""
    if as_json:
        inputs = {**report.inputs, "allow_unmet": params["allow_unmet"]}
        emit({**report.to_dict(), "inputs": inputs}, as_json=True)
        return
    _print(report)
    typer.echo(_inputs_line(params))


def _print(report: RunReport) -> None:
    from rich.console import Console

    from crowdhide.report.terminal import flatten, render_run

    render_run(report, Console())
    if report.network is not None:
        emit(flatten(report.network), as_json=False, title="network (tls backend)")
