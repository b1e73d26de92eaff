"""User errors are typed: no module of the package raises a plain ``ValueError`` /
``TypeError`` (an ``ast`` scan), and the typed ones still are ``ValueError`` / ``TypeError``
so that ``except ValueError`` callers keep working."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import crowdhide
from crowdhide import errors

SRC = Path(__file__).resolve().parents[1] / "src" / "crowdhide"

PLAIN = ("ValueError", "TypeError")


def plain_raises(source: str) -> list[int]:
    """Lines of ``raise ValueError(...)`` / ``raise TypeError(...)`` (or the bare class)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Raise) and node.exc is not None:
            target = node.exc.func if isinstance(node.exc, ast.Call) else node.exc
            if isinstance(target, ast.Name) and target.id in PLAIN:
                lines.append(node.lineno)
    return sorted(lines)


def _modules() -> list[Path]:
    """Every module of the package: there is no allow-list (issue #29)."""
    return sorted(SRC.rglob("*.py"))


def test_the_converted_packages_raise_no_plain_value_or_type_error() -> None:
    modules = _modules()
    assert len(modules) > 80  # the scan sees the packages (not an empty glob)
    assert all(p.is_file() for p in modules)
    scanned = {p.relative_to(SRC).as_posix() for p in modules}
    # the last modules converted are in the scan (a narrowed scan would let them regress)
    for name in ("accounting/shuffle/composition.py", "backends/tls/daemon.py", "_output.py"):
        assert name in scanned
    found = {
        str(p.relative_to(SRC)): lines
        for p in modules
        if (lines := plain_raises(p.read_text(encoding="utf-8")))
    }
    assert found == {}, "raise a crowdhide.errors class (e.g. InvalidParameterError) instead"


def test_the_scan_can_fail() -> None:
    source = "def f(x):\n    if x:\n        raise ValueError('x')\n    raise TypeError\n"
    assert plain_raises(source) == [3, 4]
    assert plain_raises("raise errors.InvalidParameterError('x')\n") == []


@pytest.mark.parametrize(
    ("cls", "builtin"),
    [
        (errors.InvalidParameterError, ValueError),
        (errors.DataError, ValueError),
        (errors.ParameterTypeError, TypeError),
        (errors.DataTypeError, TypeError),
    ],
)
def test_typed_errors_are_still_the_builtin_ones(cls: type[Exception], builtin: type) -> None:
    assert issubclass(cls, crowdhide.CrowdhideError)
    assert issubclass(cls, builtin)


def test_a_converted_raise_is_caught_both_ways() -> None:
    from crowdhide.qif.core import Channel

    with pytest.raises(crowdhide.CrowdhideError):
        Channel([[0.5, 0.4]])
    with pytest.raises(ValueError, match="row-stochastic"):
        Channel([[0.5, 0.4]])


def test_a_cli_refusal_names_the_option_and_the_value() -> None:
    from crowdhide.backends import make_backend
    from crowdhide.cli.run import _network

    with pytest.raises(errors.InvalidParameterError) as caught:
        make_backend("nope")
    assert (caught.value.parameter, caught.value.value) == ("name", "nope")
    with pytest.raises(errors.InvalidParameterError) as caught:
        _network("tls", None, "maybe", None, None)
    assert (caught.value.parameter, caught.value.value) == ("--on-missing", "maybe")
