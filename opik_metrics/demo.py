"""``make demo``: score the example files with every metric the pack has, as a newcomer would."""
from __future__ import annotations

import sys
from pathlib import Path

from .catalog import METRICS
from .cli import main as cli_main

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"

# Every metric of the catalog, with packaged models so that the demo runs offline. Distillation KL
# needs a teacher and a student: `python -m pipelines.distillation --quick` shows it.
DEMO_OPTIONS: dict[str, list[str]] = {
    "rouge": [],
    "bleu": [],
    "bertscore": ["--bertscore-model", "packaged:minilm"],
    "perplexity": ["--perplexity-model", "packaged:smollm2"],
}


def main() -> int:
    preds, refs = EXAMPLES / "predictions.txt", EXAMPLES / "references.txt"
    print("opik-metrics demo: every metric on examples/predictions.txt vs examples/references.txt\n")
    argv = ["score", "--predictions", str(preds), "--references", str(refs), "--items", "--no-progress"]
    for name in METRICS:
        if name in DEMO_OPTIONS:
            argv += ["--metric", name, *DEMO_OPTIONS[name]]
    print("$ opik-metrics " + " ".join(argv) + "\n")
    return cli_main(argv)


if __name__ == "__main__":
    sys.exit(main())
