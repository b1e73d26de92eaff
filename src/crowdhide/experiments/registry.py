"""Registry of reproducible experiments: name, summary, run function, and former names.

Every reproduction module registers its runs with :func:`experiment`; :func:`discover` imports
the modules of :mod:`crowdhide.experiments` and returns the registry. An experiment may keep
former names (``aliases``): :func:`resolve` and :func:`run_experiment` accept them, while
:func:`discover` lists each experiment once, under its current name.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from crowdhide._output import write_json
from crowdhide.errors import InvalidParameterError
from crowdhide.experiments.claims import Verdict, verdict_lines

__all__ = [
    "Experiment",
    "ExperimentResult",
    "discover",
    "experiment",
    "resolve",
    "run_experiment",
]


@dataclass(frozen=True)
class ExperimentResult:
    """What an experiment produced.

    Parameters
    ----------
    files
        Paths written (CSV/JSON data and PNG figures).
    comparison
        Human-readable lines comparing the numbers with the paper.
    data
        JSON-serialisable key numbers, echoed by ``--json``.
    verdicts
        The paper's claims this run tests, each judged from the measured numbers.

    See Also
    --------
    Experiment : What produces it.
    """

    files: tuple[Path, ...]
    comparison: tuple[str, ...] = ()
    data: dict[str, Any] = field(default_factory=dict)
    verdicts: tuple[Verdict, ...] = ()

    def verdict_lines(self) -> list[str]:
        """The printable verdicts (a count of outcomes, then one line per claim)."""
        return verdict_lines(self.verdicts)


ExperimentFunction = Callable[..., ExperimentResult]


@dataclass(frozen=True)
class Experiment:
    """A registered reproduction: name, one-line summary, and the function that runs it.

    The function is called as ``run(out_dir, rng=Generator, quick=bool)``; ``quick`` asks for
    a reduced-size run (used by the test suite). ``aliases`` are former names that still run
    it (not listed).

    Parameters
    ----------
    name
        The name it runs by (``crowdhide reproduce NAME``).
    summary
        One line, listed by ``crowdhide reproduce --list``.
    run
        The function that runs it (see above).
    aliases
        Former names that still run it.

    See Also
    --------
    experiment : The decorator that registers one.
    """

    name: str
    summary: str
    run: ExperimentFunction
    aliases: tuple[str, ...] = ()


_REGISTRY: dict[str, Experiment] = {}
_ALIASES: dict[str, str] = {}


def experiment(
    name: str, summary: str, *, aliases: tuple[str, ...] = ()
) -> Callable[[ExperimentFunction], ExperimentFunction]:
    """Decorator registering ``run(out_dir, *, rng, quick)`` under ``name`` (and ``aliases``).

    Parameters
    ----------
    name
        The experiment's name.
    summary
        One line describing it.
    aliases
        Former names that still run it.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    See Also
    --------
    discover : The registry of every experiment.
    """

    def register(func: ExperimentFunction) -> ExperimentFunction:
        for key in (name, *aliases):
            known = _REGISTRY.get(_ALIASES.get(key, key))
            if known is not None and known.run is not func:
                raise InvalidParameterError(f"experiment name already registered: {key!r}")
        _REGISTRY[name] = Experiment(name=name, summary=summary, run=func, aliases=aliases)
        _ALIASES.update(dict.fromkeys(aliases, name))
        return func

    return register


def discover() -> dict[str, Experiment]:
    """Import every experiment module and return the registry, sorted by name.

    Returns
    -------
    dict of str to Experiment
        Every registered experiment by name.

    See Also
    --------
    experiment : How a module registers one.
    """
    package = importlib.import_module("crowdhide.experiments")
    for module in pkgutil.iter_modules(package.__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"crowdhide.experiments.{module.name}")
    return dict(sorted(_REGISTRY.items()))


def resolve(name: str) -> Experiment:
    """The experiment called ``name`` or, for a former name, the one that replaced it.

    Raises
    ------
    ValueError
        When ``name`` is unknown; the message lists the current names.
    """
    registry = discover()
    current = _ALIASES.get(name, name)
    if current not in registry:
        known = ", ".join(registry) or "(none)"
        raise InvalidParameterError(f"name must be a known experiment ({known}), got {name!r}")
    return registry[current]


def run_experiment(
    name: str, out_dir: Path, *, seed: int | None = 0, quick: bool = False
) -> ExperimentResult:
    """Run the experiment ``name`` (or a former name of it), writing its files under
    ``out_dir``, plus ``claims.json`` (its verdicts) when it judges any claim."""
    found = resolve(name)
    out_dir.mkdir(parents=True, exist_ok=True)
    result: ExperimentResult = found.run(out_dir, rng=np.random.default_rng(seed), quick=quick)
    if not result.verdicts:
        return result
    claims = write_json(out_dir / "claims.json", [v.record() for v in result.verdicts])
    return replace(result, files=(*result.files, claims))
