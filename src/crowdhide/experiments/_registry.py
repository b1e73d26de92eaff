"""Registry of reproducible experiments (internal)."""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["Experiment", "ExperimentResult", "discover", "experiment"]


@dataclass(frozen=True)
class ExperimentResult:
    """What an experiment produced.

    Attributes
    ----------
    files
        Paths written (CSV/JSON data and PNG figures).
    comparison
        Human-readable lines comparing the numbers with the paper.
    data
        JSON-serialisable key numbers, echoed by ``--json``.
    """

    files: tuple[Path, ...]
    comparison: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)


ExperimentFunction = Callable[..., ExperimentResult]


@dataclass(frozen=True)
class Experiment:
    """A registered reproduction: name, one-line summary, and the function that runs it.

    The function is called as ``run(out_dir, rng=Generator, quick=bool)``; ``quick`` asks for
    a reduced-size run (used by the test suite).
    """

    name: str
    summary: str
    run: ExperimentFunction


_REGISTRY: dict[str, Experiment] = {}


def experiment(name: str, summary: str) -> Callable[[ExperimentFunction], ExperimentFunction]:
    """Decorator registering ``run(out_dir, *, rng, quick)`` under ``name``."""

    def register(func: ExperimentFunction) -> ExperimentFunction:
        if name in _REGISTRY and _REGISTRY[name].run is not func:
            raise ValueError(f"experiment name already registered: {name!r}")
        _REGISTRY[name] = Experiment(name=name, summary=summary, run=func)
        return func

    return register


def discover() -> dict[str, Experiment]:
    """Import every experiment module and return the registry, sorted by name."""
    package = importlib.import_module("crowdhide.experiments")
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"crowdhide.experiments.{module.name}")
    return dict(sorted(_REGISTRY.items()))


def run_experiment(
    name: str, out_dir: Path, *, seed: int | None = 0, quick: bool = False
) -> ExperimentResult:
    """Run the experiment ``name``, writing its files under ``out_dir``."""
    registry = discover()
    if name not in registry:
        known = ", ".join(registry) or "(none)"
        raise ValueError(f"name must be a known experiment ({known}), got {name!r}")
    out_dir.mkdir(parents=True, exist_ok=True)
    return registry[name].run(out_dir, rng=np.random.default_rng(seed), quick=quick)
