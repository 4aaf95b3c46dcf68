"""Reproducibility signature of a BLEU configuration, in sacrebleu's format plus our extras."""
from __future__ import annotations

from typing import Optional, Sequence, Union


from opik_metrics.core import Signature

from opik_metrics.core.versions import ours as package_version, package_version as version_of
from opik_metrics.text.bleu.formula import SMOOTH_DEFAULTS


def bleu_signature(
    *,
    nrefs: Union[int, str, None],
    lowercase: bool,
    effective_order: bool,
    tokenizer_signature: str,
    smooth_method: str,
    smooth_value: Optional[float],
    max_ngram_order: int,
    weights: Optional[Sequence[float]],
) -> Signature:
    """sacrebleu's BLEU signature (``nrefs`` left out when None: the metric before it sees data) (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0``)
    then ``|order:N`` if N != 4, ``|w:...`` for non-uniform weights, ``|opik_metrics:<version>``."""
    smooth = smooth_method
    default = SMOOTH_DEFAULTS[smooth_method]
    if default is not None:
        smooth += f"[{(default if smooth_value is None else smooth_value):.2f}]"
    fields: dict = {} if nrefs is None else {"nrefs": str(nrefs)}
    fields.update({"case": "lc" if lowercase else "mixed", "eff": "yes" if effective_order else "no",
                   "tok": tokenizer_signature, "smooth": smooth, "version": version_of("sacrebleu")})
    if max_ngram_order != 4:  # sacrebleu leaves the order out of its signature
        fields["order"] = str(max_ngram_order)
    if weights is not None:
        fields["w"] = "/".join(f"{w:g}" for w in weights)
    fields["opik_metrics"] = package_version()
    return Signature(fields)
