"""How captions become tokens before CIDEr-D and the COCO suite: pycocoevalcap's PTB
tokenisation (``"ptb"``, the published numbers) or whitespace splitting of captions that are
already tokenised (``"none"``: runs of whitespace count as one separator, as pycocoevalcap's
BLEU and CIDEr split; its ROUGE_L splits on single spaces, so give it single-spaced text)."""
from __future__ import annotations

from typing import Callable, Sequence

TOKENIZERS = ("ptb", "none")


def check_tokenize(tokenize: str) -> str:
    if tokenize not in TOKENIZERS:
        raise ValueError(f"tokenize: expected one of {TOKENIZERS}, got {tokenize!r}")
    return tokenize


def caption_tokenizer(tokenize: str) -> Callable[[str], str]:
    """A function from a raw caption to its tokens joined by single spaces."""
    if check_tokenize(tokenize) == "none":
        return lambda text: " ".join(text.split())
    from opik_metrics.text.tokenizers.ptb import ptb_tokenize
    return ptb_tokenize


def tokenize_all(texts: Sequence[str], tokenize: str) -> dict[str, str]:
    """Each distinct text once: raw caption -> tokenised caption."""
    tok = caption_tokenizer(tokenize)
    return {t: tok(t) for t in dict.fromkeys(texts)}
