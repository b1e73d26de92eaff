"""Readable run reports: terminal tables that fit, a self-contained HTML page, a budget ledger.

This package sits above :mod:`crowdhide.plans` (it renders the dicts the runner returns)
and below the CLI.
"""

from __future__ import annotations

__all__: list[str] = []
