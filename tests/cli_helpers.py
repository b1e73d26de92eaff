"""Helpers to run the command line in-process from tests."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from crowdhide.cli import main


@dataclass
class CliResult:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> CliResult:
    """Run ``crowdhide *args`` and capture its exit code and output."""
    code = main(list(args))
    captured = capsys.readouterr()
    return CliResult(code=code, out=captured.out, err=captured.err)
