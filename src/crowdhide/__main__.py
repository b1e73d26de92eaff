"""``python -m crowdhide`` runs the command line."""

from crowdhide.cli import entry

entry()
