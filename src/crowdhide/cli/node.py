"""``crowdhide node init`` (a node's own keys and enrolment card), ``crowdhide node rows`` (a
data owner's own table as the daemon's data file) and ``crowdhide node serve`` (the node
daemon)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crowdhide.cli._options import check_output_file, int_option, output_path
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import DataError, InvalidParameterError

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``node`` group to ``app``."""
    node_app = typer.Typer(help="A node of a deployment: its own keys.", no_args_is_help=True)
    app.add_typer(node_app, name="node")

    @node_app.command("init")
    def init(
        node: Annotated[int, int_option("--id", "This node's id in the directory.", low=0)],
        address: Annotated[str, typer.Option("--address", help="IP:PORT peers reach it at.")],
        state: Annotated[
            Path, typer.Option("--state", help="Folder for the node's keys (created 0700).")
        ] = Path("node-state"),
        role: Annotated[
            str,
            typer.Option("--role", help="node (a daemon serving blocks) | coordinator (runs)."),
        ] = "node",
        as_json: JsonFlag = False,
    ) -> None:
        """Create this node's TLS and sealing keys in --state (mode 0600, never copied out)
        and write card.json (id, address, certificate request, sealing public key) for the
        CA operator (`crowdhide net ca sign`)."""
        from crowdhide.backends.tls.enrol import node_init

        if state.exists() and not state.is_dir():
            raise InvalidParameterError(
                f"--state must be a directory, got the file {str(state)!r}",
                parameter="--state",
                value=str(state),
            )
        if role not in ("node", "coordinator"):
            raise InvalidParameterError(
                f"--role must be 'node' or 'coordinator', got {role!r}",
                parameter="--role",
                value=role,
            )
        card = node_init(state, node=node, address=address, role=role)
        emit(
            {"card": str(card), "keys": [str(state / "tls.key"), str(state / "sealing.key")]},
            as_json=as_json,
            title="node keys ready (mode 0600); hand card.json to the CA operator",
        )

    node_app.command("rows")(rows_command)
    node_app.command("serve")(serve_command)


def rows_command(
    plan: Annotated[
        Path,
        typer.Option("--plan", help='The coordinator\'s plan ([data] held_by = "nodes").'),
    ],
    table: Annotated[
        Path, typer.Option("--csv", help="This owner's rows: CSV (or Parquet) with a header.")
    ],
    first: Annotated[
        int,
        int_option(
            "--first",
            "Global index of this owner's first row (the owners' rows tile the plan's).",
            low=0,
        ),
    ],
    out: Annotated[
        Path, typer.Option("--out", help="The daemon's data file (.npz).", parser=output_path)
    ] = Path("rows.npz"),
    as_json: JsonFlag = False,
) -> None:
    """Code this owner's table for the coordinator's plan and write the daemon's data file
    (`node serve --data`). Checks what the daemon checks at job load: every column of
    [data] columns present, every grouping value in [query] domains, every aggregated value
    a finite number; a refusal names the column and counts the rows, never a value."""
    from crowdhide.plans.owner_rows import owner_rows
    from crowdhide.plans.spec import load_spec

    for option, path in (("--plan", plan), ("--csv", table)):
        if not path.is_file():
            raise InvalidParameterError(
                f"{option} must be an existing file, got {str(path)!r}",
                parameter=option,
                value=str(path),
            )
    check_output_file(out, option="--out", suffixes=(".npz",))
    spec = load_spec(plan)
    if spec.data.held_by is None:
        raise InvalidParameterError(
            f"--plan must be the coordinator's plan (data.held_by = 'nodes', written by `net "
            f"split --coordinator-plan`), got {str(plan)!r}, whose [data] makes its own rows",
            parameter="--plan",
            value=str(plan),
        )
    where = f"--csv {str(table)!r}"
    rows = owner_rows(spec, _read_table(table, where), where=where)
    if first + rows.rows > spec.data.rows:
        raise InvalidParameterError(
            f"--first {first} with the {rows.rows} rows of {where} ends at row "
            f"{first + rows.rows - 1}, past the plan's data.rows = {spec.data.rows}",
            parameter="--first",
            value=first,
        )
    written = _write_checked(out, first, rows, spec)
    emit(
        {
            "out": str(written),
            "rows": f"{first}..{first + rows.rows - 1}",
            "count": rows.rows,
            "columns": sorted(c for cols in rows.columns.values() for c in cols),
            "plan": str(plan),
            "csv": str(table),
        },
        as_json=as_json,
        title="rows written for the node daemon (node serve --data)",
    )


def _read_table(path: Path, where: str) -> dict[str, Any]:
    """The owner's table; a file DuckDB cannot read is the owner's error, named by option."""
    from crowdhide.plans.data import load_table

    try:
        return dict(load_table(path))
    except DataError as exc:
        raise DataError(f"{where}: {exc}") from None


def _write_checked(out: Path, first: int, rows: Any, spec: Any) -> Path:
    """Write the file, then load it back as a daemon does and run the daemon's own check
    of the plan's routes (codes in their universes, over the plan's domains; finite
    aggregated values): a file this writes is one a daemon accepts."""
    from crowdhide.backends.tls.node_rows import NodeRows, check_domains, write_rows
    from crowdhide.engine.document import plan_document
    from crowdhide.plans.query import load_query

    path = write_rows(out, first=first, columns=rows.columns, digests=rows.digests)
    held = NodeRows.load(path)
    document = plan_document(load_query(spec, backend="tls").plan)
    check_domains(document, {g: {first: c} for g, c in held.columns.items()}, held.digests)
    return path


def serve_command(
    listen: Annotated[
        str,
        typer.Option(
            "--listen",
            help="IP:PORT to listen on (its directory address, or e.g. 0.0.0.0:PORT).",
        ),
    ],
    data: Annotated[Path, typer.Option("--data", help="This node's rows (`crowdhide net split`).")],
    directory: Annotated[
        Path, typer.Option("--directory", help="The CA-signed directory of the nodes.")
    ],
    ca: Annotated[Path, typer.Option("--ca", help="The CA certificate (ca.pem).")],
    state: Annotated[
        Path, typer.Option("--state", help="This node's folder (node init + cert.pem).")
    ] = Path("node-state"),
    idle_grace: Annotated[
        float,
        typer.Option(
            "--idle-grace",
            help="Least seconds past the time a coordinator's next message is due (from the "
            "run's schedule and its waits) before dropping its run as stopped or stuck; the "
            "grace is at least the longest round.",
        ),
    ] = 30.0,
) -> None:
    """Serve runs until SIGTERM or Ctrl-C: authenticate the coordinator and every peer
    against the signed directory, run this node's part of a signed plan on its own
    rows, tell the coordinator only frame counts and released outputs. Prints one line
    once listening."""
    import sys

    from crowdhide.backends.tls.daemon import serve as run_daemon

    for option, path in (("--data", data), ("--directory", directory), ("--ca", ca)):
        if not path.is_file():
            raise InvalidParameterError(
                f"{option} must be an existing file, got {str(path)!r}",
                parameter=option,
                value=str(path),
            )

    def ready(line: str) -> None:
        sys.stdout.write(line + "\n")
        sys.stdout.flush()

    run_daemon(
        listen=listen,
        state=state,
        data=data,
        directory=directory,
        ca=ca,
        ready=ready,
        idle_grace=idle_grace,
    )
