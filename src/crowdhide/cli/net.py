"""``crowdhide net pki --hosts H --out DIR``: credentials of a run over mutual TLS."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from crowdhide.cli._options import check_output_dir, int_option
from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``net`` group to ``app``."""
    net_app = typer.Typer(help="Real runs over mutual TLS: credentials.", no_args_is_help=True)
    app.add_typer(net_app, name="net")

    @net_app.command("pki")
    def pki(
        hosts: Annotated[int, int_option("--hosts", "Number of node hosts.", low=1, high=256)] = 3,
        out: Annotated[Path, typer.Option("--out", help="Directory to write.")] = Path("pki"),
        days: Annotated[int, int_option("--days", "Validity in days.", low=1, high=3650)] = 365,
        as_json: JsonFlag = False,
    ) -> None:
        """Write a CA and one ECDSA P-256 certificate per node host (keys mode 0600)."""
        from crowdhide.backends.tls.pki import make_pki

        result = make_pki(hosts=hosts, out=check_output_dir(out), days=days)
        emit(
            {
                "ca": str(result.ca_cert),
                "hosts": [h.name for h in result.hosts],
                "certificates": [str(h.cert) for h in result.hosts],
                "keys": [str(h.key) for h in result.hosts],
                "out": str(out),
            },
            as_json=as_json,
            title="PKI written (private keys mode 0600)",
        )
