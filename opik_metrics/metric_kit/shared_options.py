"""Command-line options that several metrics declare alike (the command line adds each once)."""
from __future__ import annotations

from opik_metrics.metric_kit.card import Option

LOWERCASE = Option("--lowercase", "lowercase", action="store_true", help="lowercase before scoring (BLEU, chrF)")
CAPTION_TOKENIZE = Option("--caption-tokenize", "tokenize", choices=("ptb", "none"),
                          help="ptb: pycocoevalcap's PTB tokenisation (default); none: text is already tokenised")
DEVICE = Option("--device", "device", help="cpu, cuda, ... (default: GPU when present)")
DTYPE = Option("--dtype", "dtype", choices=("float32", "bfloat16", "float16"),
               help="model weights' dtype (default float32); half precision is faster on a GPU and changes "
                    "scores slightly (docs/metrics.md); float16 needs a GPU")
