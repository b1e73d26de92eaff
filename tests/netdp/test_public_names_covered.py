"""Every public name of every ``crowdhide.netdp`` module is exercised by a test here."""

from __future__ import annotations

import importlib
import pkgutil
import re
from pathlib import Path

import crowdhide.netdp

HERE = Path(__file__).parent


def _public_names() -> dict[str, tuple[str, ...]]:
    names = {}
    for info in pkgutil.iter_modules(crowdhide.netdp.__path__):
        module = importlib.import_module(f"crowdhide.netdp.{info.name}")
        names[info.name] = tuple(getattr(module, "__all__", ()))
    return names


def test_every_module_declares_its_public_names() -> None:
    names = _public_names()
    assert {"walks", "views", "protocols", "sgd", "noise", "guarantees"} <= set(names)
    assert {"cycle_privacy", "walk_pld", "walk_accounting"} <= set(names)
    assert all(names.values())


def test_every_public_name_appears_in_a_test() -> None:
    text = "\n".join(
        p.read_text(encoding="utf-8")
        for p in HERE.glob("test_*.py")
        if p.name != Path(__file__).name
    )
    missing = [
        f"{module}.{name}"
        for module, public in _public_names().items()
        for name in public
        if not re.search(rf"\b{re.escape(name)}\b", text)
    ]
    assert not missing, f"public names of crowdhide.netdp without a test: {missing}"
