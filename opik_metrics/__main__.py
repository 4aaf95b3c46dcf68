"""``python -m opik_metrics`` runs the CLI."""
import sys

from opik_metrics.cli import main

sys.exit(main())
