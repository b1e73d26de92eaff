"""``crowdhide node init`` (a node's own keys and enrolment card) and ``crowdhide node serve``
(the node daemon)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._options import int_option
from crowdhide.cli._output import JsonFlag, emit
from crowdhide.errors import InvalidParameterError

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

    node_app.command("serve")(serve_command)


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

    run_daemon(listen=listen, state=state, data=data, directory=directory, ca=ca, ready=ready)
