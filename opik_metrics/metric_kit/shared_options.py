"""Command-line options that several metrics declare alike (the command line adds each once)."""
from __future__ import annotations

from opik_metrics.metric_kit.card import Option

LOWERCASE = Option("--lowercase", "lowercase", action="store_true", help="lowercase before scoring (BLEU, chrF)")
CAPTION_TOKENIZE = Option("--caption-tokenize", "tokenize", choices=("ptb", "none"),
                          help="ptb: pycocoevalcap's PTB tokenisation (default); none: text is already tokenised")
