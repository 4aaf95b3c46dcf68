"""Input checks for BLEU calls: clear TypeError/ValueError naming the offending position."""
from __future__ import annotations

from typing import Any, Optional


def check_text(value: Any, where: str) -> str:
    """``value`` itself if it is a str, else TypeError naming ``where``."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, got {type(value).__name__}")
    return value


def reference_list(references: Any, index: Optional[int] = None) -> list[str]:
    """One item's references as a non-empty list of str: a lone str is one reference, and
    ``None`` entries are dropped (sacrebleu's padding for a variable number of references).

    ``index`` is the item's position in a corpus, for the error messages.
    """
    if isinstance(references, str):
        return [references]
    where = "references" if index is None else f"references[{index}]"
    if references is None or not hasattr(references, "__iter__"):
        raise TypeError(
            f"{where} must be a str or a sequence of str, got {type(references).__name__}"
        )
    refs = []
    for j, ref in enumerate(references):
        if ref is None:
            continue
        if not isinstance(ref, str):
            raise TypeError(f"{where}[{j}] must be a str, got {type(ref).__name__}")
        refs.append(ref)
    if not refs:
        raise ValueError(f"{where} is empty: BLEU needs at least one reference per hypothesis")
    return refs


def as_list(values: Any, where: str) -> list:
    """A corpus-level argument as a list; a bare str is refused (it would be read char by char)."""
    if isinstance(values, str) or values is None or not hasattr(values, "__iter__"):
        raise TypeError(f"{where} must be a sequence, got {type(values).__name__}")
    return values if isinstance(values, list) else list(values)
