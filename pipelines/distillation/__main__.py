"""``python -m opik_metrics.pipelines.distillation``: the distillation pipeline from the command line."""
import sys

from opik_metrics.pipelines.distillation.command import main

if __name__ == "__main__":
    sys.exit(main())
