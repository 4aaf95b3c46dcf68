"""``python -m opik_metrics`` runs the CLI."""
import sys

from .cli import main

sys.exit(main())
