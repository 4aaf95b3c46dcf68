"""``python -m opik_metrics`` runs the CLI."""
import sys

from opik_metrics.cli.main import main

sys.exit(main())
