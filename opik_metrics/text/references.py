"""Input checks shared by the BLEU, chrF and TER engines: clear TypeError/ValueError naming the position."""
from __future__ import annotations

from typing import Any, Optional


def check_text(value: Any, where: str) -> str:
    """``value`` itself if it is a str, else TypeError naming ``where``."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, got {type(value).__name__}")
    return value


def reference_list(references: Any, metric: str, index: Optional[int] = None) -> list[str]:
    """One item's references as a non-empty list of str: a lone str is one reference, and ``None``
    entries are dropped (sacrebleu's padding for a variable number of references).

    ``index`` is the item's position in a corpus, for the error messages.
    """
    if isinstance(references, str):
        return [references]
    where = "references" if index is None else f"references[{index}]"
    if references is None or isinstance(references, (bytes, dict)) or not hasattr(references, "__iter__"):
        raise TypeError(f"{where} must be a str or a sequence of str, got {type(references).__name__}")
    refs = []
    for j, ref in enumerate(references):
        if ref is None:
            continue
        if not isinstance(ref, str):
            raise TypeError(f"{where}[{j}] must be a str, got {type(ref).__name__}")
        refs.append(ref)
    if not refs:
        raise ValueError(f"{where} is empty: {metric} needs at least one reference per hypothesis")
    return refs


def corpus_lists(hypotheses: Any, references: Any, metric: str) -> tuple[list[str], list[list[str]]]:
    """Aligned corpus arguments: ``references[i]`` (a str or a list of str) belongs to
    ``hypotheses[i]``. Refuses a bare str (it would be read char by char) and unequal lengths."""
    for value, where in ((hypotheses, "hypotheses"), (references, "references")):
        if isinstance(value, str) or value is None or not hasattr(value, "__iter__"):
            raise TypeError(f"{where} must be a sequence, got {type(value).__name__}")
    hyps = list(hypotheses)
    refs = list(references)
    if len(hyps) != len(refs):
        raise ValueError(f"got {len(hyps)} hypotheses but {len(refs)} reference entries; "
                         "references[i] must hold the reference(s) of hypotheses[i]")
    if not hyps:
        raise ValueError(f"the corpus score of {metric} needs at least one hypothesis")
    for i, hyp in enumerate(hyps):
        check_text(hyp, f"hypotheses[{i}]")
    return hyps, [reference_list(r, metric, i) for i, r in enumerate(refs)]


def check_bool(value: Any, option: str) -> bool:
    """A yes/no option: True or False (not 'yes', not 1.0), else ValueError naming the option."""
    if value is True or value is False:
        return value
    if type(value).__name__ == "bool_":      # numpy.bool_ from a config or a dataframe
        return bool(value)
    raise ValueError(f"{option} must be True or False, got {value!r}")


def as_list(values: Any, where: str) -> list:
    """A corpus-level argument as a list; a bare str is refused (it would be read char by char)."""
    if isinstance(values, str) or values is None or not hasattr(values, "__iter__"):
        raise TypeError(f"{where} must be a sequence, got {type(values).__name__}")
    return values if isinstance(values, list) else list(values)
