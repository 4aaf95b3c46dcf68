"""``opik-metrics explain``: BERTScore of one pair with its token similarity heatmap as a PNG."""
from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from opik_metrics.cli.errors import CLIError
from opik_metrics.core.extras import require_extra
from opik_metrics.core.table import format_table
from opik_metrics.metrics.catalog import metric_card


def add_bertscore_options(group: Any) -> None:
    """BERTScore's model options, as its card declares them for ``score``."""
    for option in metric_card("bertscore").options:
        if option.argument in ("model", "num_layers", "lang", "device"):
            group.add_argument(option.flag, **option.argparse_settings())


def _check_explain_arguments(args: argparse.Namespace) -> None:
    """What would fail after the model has loaded, found before it loads: an empty text, a PNG
    path that cannot be written."""
    for option, text in (("--output", args.output), ("--reference", args.reference)):
        if not text.strip():
            raise CLIError(f"explain: {option} is empty; there are no tokens to align")
    png = Path(args.png)
    if png.is_dir():
        raise CLIError(f"explain: --png {args.png} is a directory; give the path of a .png file")
    if not png.parent.is_dir():
        raise CLIError(f"explain: cannot write --png {args.png}: folder {png.parent} does not exist")


def cmd_explain(args: argparse.Namespace) -> int:
    from opik_metrics.metrics.bertscore import BERTScore

    _check_explain_arguments(args)
    require_extra("neural", "opik-metrics explain")
    require_extra("report", "opik-metrics explain's heatmap")     # before the model loads, not after it scored
    metric = BERTScore(model=args.bertscore_model, num_layers=args.num_layers, lang=args.lang,
                       device=args.device, track=False)
    results = {r.name: r.value for r in metric.score(args.output, args.reference)}
    try:
        path = metric.save_heatmap(args.output, args.reference, args.png)
    except OSError as exc:
        raise CLIError(f"explain: cannot write the heatmap to {args.png}: {exc.strerror or exc}") from None
    print(format_table(["score", "value"], list(results.items())))
    print(f"\nheatmap: {path}\n{metric.signature}")
    return 0


COMMAND = "explain"
HELP = "BERTScore of one pair, with its token similarity heatmap as a PNG"


def register(sub: Any) -> None:
    """Add ``explain`` to the main parser's sub-commands."""
    explain = sub.add_parser("explain", help=HELP)
    explain.add_argument("--candidate", "-c", "--output", dest="output", required=True,
                         help="the candidate text (the system's output)")
    explain.add_argument("--reference", "-r", required=True, help="the reference text")
    explain.add_argument("--png", required=True, help="where to write the heatmap")
    add_bertscore_options(explain)
    explain.set_defaults(func=cmd_explain)
