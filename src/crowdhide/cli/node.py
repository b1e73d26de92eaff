"""``crowdhide node init``: a node's own keys and its enrolment card."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._options import int_option
from crowdhide.cli._output import JsonFlag, emit

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
        as_json: JsonFlag = False,
    ) -> None:
        """Create this node's TLS and sealing keys in --state (mode 0600, never copied out)
        and write card.json (id, address, certificate request, sealing public key) for the
        CA operator (`crowdhide net ca sign`)."""
        from crowdhide.backends.tls.enrol import node_init

        if state.exists() and not state.is_dir():
            raise ValueError(f"--state must be a directory, got the file {str(state)!r}")
        card = node_init(state, node=node, address=address)
        emit(
            {"card": str(card), "keys": [str(state / "tls.key"), str(state / "sealing.key")]},
            as_json=as_json,
            title="node keys ready (mode 0600); hand card.json to the CA operator",
        )
