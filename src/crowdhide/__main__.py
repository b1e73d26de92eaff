"""``python -m crowdhide`` runs the command line."""

import sys

from crowdhide.cli import main

sys.exit(main())
