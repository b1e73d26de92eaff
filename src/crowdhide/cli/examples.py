"""``crowdhide examples list|show``: the example plans shipped with crowdhide.

Run one by name with ``crowdhide run example:NAME`` (or ``crowdhide plan example:NAME``);
``crowdhide examples show NAME > my.toml`` gives a copy to edit.
"""

from __future__ import annotations

from typing import Annotated

import typer

from crowdhide.cli._output import JsonFlag, emit

__all__ = ["register"]


def register(app: typer.Typer) -> None:
    """Add the ``examples`` command group to ``app``."""
    group = typer.Typer(
        help="Example plans shipped with crowdhide (run them: crowdhide run example:NAME).",
        no_args_is_help=True,
    )

    @group.command("list")
    def list_command(as_json: JsonFlag = False) -> None:
        """List the shipped example plans: name, what they run, where the file is."""
        from crowdhide.plans.examples import example_names, example_path, example_summary

        rows = [
            {
                "name": name,
                "run": f"crowdhide run example:{name}",
                "summary": example_summary(name),
                "file": str(example_path(name)),
            }
            for name in example_names()
        ]
        emit(rows, as_json=as_json, title="Example plans", columns=["name", "run", "summary"])

    @group.command("show")
    def show_command(
        name: Annotated[str, typer.Argument(help="Example name (crowdhide examples list).")],
    ) -> None:
        """Print an example plan's TOML (redirect it to a file to edit your own)."""
        from crowdhide.plans.examples import example_path

        typer.echo(example_path(name).read_text(encoding="utf-8"), nl=False)

    app.add_typer(group, name="examples")
