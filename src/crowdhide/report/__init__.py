"""Readable run reports: terminal tables that fit, a self-contained HTML page, a budget ledger.

This package sits above :mod:`crowdhide.plans` (it renders the typed
:class:`~crowdhide.plans.run_report.RunReport` the runner returns)
and below the CLI.
"""

from __future__ import annotations

__all__: list[str] = []
