"""Validation of metric inputs, for the Opik adapters and the engines alike: every error names the
item and the field (or the position), never a deep traceback.

Adapters raise ``MetricInputError`` ("item 3, field 'output': expected a string, got int"); the
engines word their errors as the libraries they equal do (sacrebleu, rouge-score: a TypeError or
ValueError naming ``references[3]``), so that their users meet the messages they know."""
from __future__ import annotations

import itertools
from typing import Any, Optional, Sequence


class MetricInputError(ValueError, TypeError):
    """Bad input to a metric; the message names the item (when known) and the field. A ValueError
    (and a TypeError, for callers that catch wrong types as such)."""


def _where(field: str, item: int | None) -> str:
    return f"item {item}, field {field!r}" if item is not None else f"field {field!r}"


def utf8_problem(text: str) -> str | None:
    """Why ``text`` cannot be encoded as UTF-8, or None when it can. Only a surrogate code point
    can stop it: a lone half of a pair, e.g. an LLM reply cut mid-emoji ("\\ud83d"), or bytes that
    were not UTF-8 kept by Python's ``surrogateescape``. Tokenizers reject such text with an
    error naming neither item nor field."""
    if text.isascii():
        return None
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return (f"lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}: "
                "the text cannot be encoded as UTF-8")
    return None


#: The longest text a metric of the pack scores, in characters (about 170,000 English words):
#: past it an item fails with a reason at once, instead of running for minutes (ROUGE's LCS on a
#: 2M-word text takes 90 s, a model's windows over it far longer).
MAX_TEXT_CHARS = 1_000_000


def _too_long(text: str, field: str, item: int | None) -> MetricInputError:
    return MetricInputError(f"{_where(field, item)}: {len(text):,} characters, more than the {MAX_TEXT_CHARS:,} "
                            "a metric of opik-metrics scores (MAX_TEXT_CHARS); split the text into items")


def require_text(value: Any, field: str, item: int | None = None) -> str:
    """Return ``value`` if it is a string that can be encoded as UTF-8 (every tokenizer's input) and
    is at most ``MAX_TEXT_CHARS`` long, else raise a MetricInputError saying where and what."""
    if isinstance(value, str):
        if len(value) > MAX_TEXT_CHARS:
            raise _too_long(value, field, item)
        problem = utf8_problem(value)
        if problem is not None:
            raise MetricInputError(f"{_where(field, item)}: {problem}")
        return value
    if value is None:
        raise MetricInputError(f"{_where(field, item)}: expected a string, got None")
    raise MetricInputError(f"{_where(field, item)}: expected a string, got {type(value).__name__}")


def require_references(value: Any, field: str = "reference", item: int | None = None) -> list[str]:
    """Normalise a reference (a string or a non-empty list of strings) to a list of strings."""
    if isinstance(value, str):
        return [require_text(value, field, item)]
    if value is None:
        raise MetricInputError(f"{_where(field, item)}: expected a string or a list of strings, got None")
    if isinstance(value, (list, tuple)):
        if not value:
            raise MetricInputError(f"{_where(field, item)}: the list of references is empty")
        return [require_text(v, f"{field}[{k}]", item) for k, v in enumerate(value)]
    raise MetricInputError(
        f"{_where(field, item)}: expected a string or a list of strings, got {type(value).__name__}"
    )


def _all_plain_text(values: Sequence) -> bool:
    """Whether every value is a str that encodes as UTF-8, checked for the whole batch in a few C
    passes (the common case); when not, the item-by-item checks find the culprit and say where."""
    return (all(map(isinstance, values, itertools.repeat(str))) and max(map(len, values), default=0) <= MAX_TEXT_CHARS
            and utf8_problem("".join(values)) is None)


def require_batch(outputs: Any, references: Any | None) -> tuple[list[str], list[list[str]] | None]:
    """Validate a batch: same lengths, every output a string, every reference a string or list."""
    if isinstance(outputs, str) or not isinstance(outputs, Sequence):
        raise MetricInputError("outputs: expected a list of strings")
    if _all_plain_text(outputs):
        outs = list(outputs)
    else:
        outs = [require_text(o, "output", i) for i, o in enumerate(outputs)]
    if references is None:
        return outs, None
    if isinstance(references, str) or not isinstance(references, Sequence):
        raise MetricInputError("references: expected a list (one entry per output)")
    if len(references) != len(outs):
        raise MetricInputError(
            f"got {len(outs)} outputs but {len(references)} references; they must pair up one to one"
        )
    if _all_plain_text(references):                 # one reference string per item
        return outs, [[r] for r in references]
    return outs, [require_references(r, "reference", i) for i, r in enumerate(references)]


# -- the engines' checks, worded as sacrebleu and rouge-score word theirs ---------------------------


def check_text(value: Any, where: str) -> str:
    """``value`` itself if it is a str, else TypeError naming ``where``."""
    if not isinstance(value, str):
        raise TypeError(f"{where} must be a str, got {type(value).__name__}")
    return value


def reference_list(references: Any, metric: str, index: Optional[int] = None, *, drop_none: bool = True) -> list[str]:
    """One item's references as a non-empty list of str: a lone str is one reference, and ``None``
    entries are dropped (sacrebleu's padding for a variable number of references) unless
    ``drop_none`` is False (rouge-score has no such padding).

    ``index`` is the item's position in a corpus, for the error messages.
    """
    if isinstance(references, str):
        return [references]
    where = "references" if index is None else f"references[{index}]"
    if references is None or isinstance(references, (bytes, dict)) or not hasattr(references, "__iter__"):
        raise TypeError(f"{where} must be a str or a sequence of str, got {type(references).__name__}")
    refs = []
    for j, ref in enumerate(references):
        if ref is None and drop_none:
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


def text_batch(texts: Any, references: Any, metric: str, *, drop_none: bool = True,
               names: tuple[str, str] = ("predictions", "references")) -> tuple[list[str], list[list[str]]]:
    """A batch of texts and their references (``references[k]``: a str or a non-empty sequence of
    str), refused as ``corpus_lists`` refuses it. The common case, lists of str, is checked in a
    few passes at C speed and kept as it is; otherwise the items are checked one by one."""
    text_name, reference_name = names
    for value, where in ((texts, text_name), (references, reference_name)):
        if isinstance(value, str) or value is None or not hasattr(value, "__iter__"):
            raise TypeError(f"{where} must be a sequence, got {type(value).__name__}")
    texts, references = as_list(texts, text_name), as_list(references, reference_name)
    if len(texts) != len(references):
        raise ValueError(f"{len(texts)} {text_name} but {len(references)} {reference_name}: lengths must match")
    if not all(map(isinstance, texts, itertools.repeat(str))):
        texts = [check_text(t, f"{text_name}[{k}]") for k, t in enumerate(texts)]
    plain = (all(map(isinstance, references, itertools.repeat(list))) and all(references)
             and all(map(isinstance, itertools.chain.from_iterable(references), itertools.repeat(str))))
    if plain:
        return texts, references
    return texts, [reference_list(r, metric, k, drop_none=drop_none) for k, r in enumerate(references)]


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


def printable(text: str) -> str:
    """``text`` with any lone surrogate (from the item's own text) written as ``\\udXXX``, so
    that every output format can hold it."""
    return text if text.isascii() else text.encode("utf-8", "backslashreplace").decode("utf-8")
