"""BLEU signatures: sacrebleu's own format, then our extras."""
from __future__ import annotations

import pytest
from sacrebleu.metrics import BLEU

from opik_metrics.text.bleu.scorer import BLEUScorer
from opik_metrics.text.bleu.signature import package_version


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"tokenize": "intl", "lowercase": True},
        {"smooth_method": "floor"},
        {"smooth_method": "floor", "smooth_value": 0.25},
        {"smooth_method": "add-k"},
        {"smooth_method": "add-k", "smooth_value": 3},
        {"smooth_method": "none", "tokenize": "char"},
        {"tokenize": "zh", "effective_order": True},
        {"tokenize": "none", "effective_order": False},
    ],
)
@pytest.mark.parametrize("sentence", [False, True])
def test_prefix_is_sacrebleus_signature(options, sentence):
    ours = BLEUScorer(**options)
    eff = sentence if options.get("effective_order") is None else options["effective_order"]
    oracle = BLEU(**{**options, "effective_order": eff})
    oracle.corpus_score(["a b c"], [["a b c"], ["a b"]])  # sacrebleu learns nrefs from its input
    expected = oracle.get_signature().format()
    signature = ours.signature(sentence=sentence, nrefs=2)
    assert signature == f"{expected}|opik_metrics:{package_version()}"
    assert signature.startswith("nrefs:2|case:")


def test_examples_and_extras():
    assert BLEUScorer().signature(sentence=True) == (
        f"nrefs:1|case:mixed|eff:yes|tok:13a|smooth:exp|version:2.6.0|opik_metrics:{package_version()}"
    )
    assert BLEUScorer().signature(sentence=False, nrefs="var").startswith("nrefs:var|case:mixed|eff:no|")
    weighted = BLEUScorer(weights=(0.5, 0.5, 0, 0)).signature(sentence=True)
    assert weighted.endswith(f"|version:2.6.0|w:0.5/0.5/0/0|opik_metrics:{package_version()}")
    assert "|w:" not in BLEUScorer(weights=(0.25,) * 4).signature(sentence=True)
    assert "|order:2|" in BLEUScorer(max_ngram_order=2).signature(sentence=True)
    assert "order:" not in BLEUScorer().signature(sentence=True)
    assert package_version() not in ("", None)
