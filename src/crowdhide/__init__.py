"""crowdhide: differential privacy for decentralized and shuffled computation.

crowdhide runs computations as plans of user-side nodes, hides what their messages and their
communication pattern reveal with DP countermeasures (shuffling, target sampling, dummy
messages, scramblers, randomized response, token walks), and certifies the resulting
(ε, δ) with the tightest valid bound it knows.

The three jobs, from the top level (the same functions the command line calls):

* **shuffle / scrambler accounting** — :func:`shuffle_epsilon`, :func:`shuffle_delta`,
  :func:`scrambler_epsilon`, :func:`scrambler_delta`; the best shuffle certificate as a
  curve to hand to another accountant, :func:`shuffle_curve`; :func:`calibrate` solves for
  ε0, n or the countermeasures that meet a target;
* **plans** — :func:`load_plan`, :func:`certify_plan`, :func:`run_plan`;
* **budgets** — :func:`compose` and the :class:`Ledger`.

Every answer is a :class:`PrivacyStatement`; user errors are :class:`CrowdhideError`.
The import is light: each name (and numpy / scipy behind it) is loaded on first use.

Examples
--------
>>> import crowdhide
>>> crowdhide.shuffle_epsilon(eps0=1.0, n=10_000, delta=1e-6)  # doctest: +ELLIPSIS
PrivacyStatement(ε=0.0..., δ=1e-06, kind='upper', source='...')
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crowdhide._lazy import lazy_names

__version__ = "0.4.0"

#: Top-level name → the module that owns it (imported on first access).
_LAZY: dict[str, str] = {
    "shuffle_epsilon": "crowdhide.accounting.shuffle.query",
    "shuffle_delta": "crowdhide.accounting.shuffle.query",
    "shuffle_curve": "crowdhide.accounting.shuffle.certificate",
    "scrambler_epsilon": "crowdhide.accounting.scrambler.accountant",
    "scrambler_delta": "crowdhide.accounting.scrambler.accountant",
    "load_plan": "crowdhide.api",
    "certify_plan": "crowdhide.api",
    "run_plan": "crowdhide.api",
    "compose": "crowdhide.api",
    "calibrate": "crowdhide.api",
    "Calibration": "crowdhide.api",
    "Ledger": "crowdhide.accounting.ledger",
    "PrivacyStatement": "crowdhide.accounting.statement",
    "CrowdhideError": "crowdhide.errors",
    "InvalidParameterError": "crowdhide.errors",
    "ParameterTypeError": "crowdhide.errors",
    "ResourceLimitError": "crowdhide.errors",
    "DataError": "crowdhide.errors",
    "DataTypeError": "crowdhide.errors",
    "OutputPathError": "crowdhide.errors",
    "MissingExtraError": "crowdhide.errors",
    "UnmetTargetError": "crowdhide.errors",
    "BudgetExceededError": "crowdhide.errors",
}

__all__ = [
    "BudgetExceededError",
    "Calibration",
    "CrowdhideError",
    "DataError",
    "DataTypeError",
    "InvalidParameterError",
    "Ledger",
    "MissingExtraError",
    "OutputPathError",
    "ParameterTypeError",
    "PrivacyStatement",
    "ResourceLimitError",
    "UnmetTargetError",
    "__version__",
    "calibrate",
    "certify_plan",
    "compose",
    "load_plan",
    "run_plan",
    "scrambler_delta",
    "scrambler_epsilon",
    "shuffle_curve",
    "shuffle_delta",
    "shuffle_epsilon",
]

if TYPE_CHECKING:  # what mypy and IDEs see; at run time __getattr__ loads them
    from crowdhide.accounting.ledger import Ledger
    from crowdhide.accounting.scrambler.accountant import scrambler_delta, scrambler_epsilon
    from crowdhide.accounting.shuffle.certificate import shuffle_curve
    from crowdhide.accounting.shuffle.query import shuffle_delta, shuffle_epsilon
    from crowdhide.accounting.statement import PrivacyStatement
    from crowdhide.api import Calibration, calibrate, certify_plan, compose, load_plan, run_plan
    from crowdhide.errors import (
        BudgetExceededError,
        CrowdhideError,
        DataError,
        DataTypeError,
        InvalidParameterError,
        MissingExtraError,
        OutputPathError,
        ParameterTypeError,
        ResourceLimitError,
        UnmetTargetError,
    )


__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals())
