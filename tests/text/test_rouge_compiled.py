"""ROUGE on rouge-score-rs (``text/rouge/compiled.py``) gives our engine's bits: the same floats
(==) on the oracle tests' random, edge and realistic inputs, one or several references, stemmer
on and off; the options it does not compute stay on ours; the signature names it as a version."""
from __future__ import annotations

import importlib.metadata
import random
import sys

import pytest

pytest.importorskip("rouge_score_rs")

from opik_metrics import ROUGE  # noqa: E402
from opik_metrics.text.rouge.scorer import RougeScorer  # noqa: E402
from tests.corpus import realistic_pairs  # noqa: E402
from tests.text.test_rouge_oracle import EDGE_CASES, _random_pairs, _sentences_on_lines  # noqa: E402

COMPILED_TYPES = ["rouge1", "rouge2", "rouge4", "rouge9", "rougeL", "rougeLsum"]


def _items(seed: int) -> tuple[list[str], list[list[str]]]:
    """Random, edge and realistic texts, each item with one to four references."""
    rng = random.Random(seed)
    pairs = _random_pairs(600, seed) + EDGE_CASES
    pairs += [(_sentences_on_lines(a), _sentences_on_lines(b)) for a, b in zip(*realistic_pairs(150, seed=seed))]
    texts = [text for pair in pairs for text in pair]
    predictions = [p for p, _ in pairs]
    references = [[r] + [rng.choice(texts) for _ in range(rng.choice([0, 0, 1, 3]))] for _, r in pairs]
    return predictions, references


@pytest.mark.parametrize("use_stemmer", [False, True])
@pytest.mark.parametrize("multi_reference", ["best", "average", "mean"])
def test_the_compiled_engine_gives_our_bits(use_stemmer, multi_reference):
    predictions, references = _items(seed=11)
    compiled = RougeScorer(COMPILED_TYPES, use_stemmer=use_stemmer, multi_reference=multi_reference,
                           engine="compiled")
    python = RougeScorer(COMPILED_TYPES, use_stemmer=use_stemmer, multi_reference=multi_reference, engine="python")
    assert compiled.engine == "compiled" and python.engine == "python"
    assert compiled.score_batch(predictions, references, flat=True) == python.score_batch(predictions, references,
                                                                                           flat=True)
    for p, refs in list(zip(predictions, references))[::25]:
        assert compiled.score(p, refs) == python.score(p, refs)


def test_several_references_take_the_first_of_the_best():
    """Two references scoring the same F: the first one's P and R (as per_item._best, rouge-score)."""
    scorer = RougeScorer(["rouge1"], engine="compiled")
    # "a b" vs "a c": P = R = 1/2; "a b c d" vs "a c": P = 1/2, R = 1, F = 2/3 beats both.
    [first] = scorer.score_batch(["a c"], [["a b", "a x", "a b c d"]])
    assert tuple(first["rouge1"]) == (1.0, 0.5, 2 / 3)
    # "a b" vs "a": P = 1/2, R = 1; vs "a b c d": P = 1, R = 1/2; both F = 2/3: the first reference's.
    first_tie, second_tie = scorer.score_batch(["a b", "a b"], [["a", "a b c d"], ["a b c d", "a"]])
    assert tuple(first_tie["rouge1"]) == (0.5, 1.0, 2 / 3) and tuple(second_tie["rouge1"]) == (1.0, 0.5, 2 / 3)


@pytest.mark.parametrize("options", [
    {"rouge_types": ["rouge1", "rougeW"]}, {"rouge_types": ["rougeSU4"]}, {"remove_stopwords": True},
    {"tokenizer": "unicode"}, {"alpha": 0.3}, {"beta": 2.0}, {"rouge155": True},
])
def test_options_it_does_not_compute_stay_on_ours(options):
    options = dict(options)
    types = options.pop("rouge_types", ["rouge1", "rouge2"])
    assert RougeScorer(types, **options).engine == "python"
    assert "rouge_score_rs" not in RougeScorer(types, **options).signature().fields
    with pytest.raises(ValueError, match="engine='compiled' needs"):
        RougeScorer(types, engine="compiled", **options)


def test_an_unknown_engine_is_refused():
    with pytest.raises(ValueError, match="engine must be one of 'auto', 'python', 'compiled', got 'rust'"):
        RougeScorer(engine="rust")


def test_the_signature_names_the_engine_as_a_version_so_records_compare_as_equal():
    compiled, python = RougeScorer(engine="auto").signature(), RougeScorer(engine="python").signature()
    assert compiled.fields["rouge_score_rs"] == importlib.metadata.version("rouge-score-rs")
    assert "rouge_score_rs" in compiled.versions
    assert compiled.options() == python.options()


def test_the_metric_scores_a_large_batch_in_process_on_the_compiled_engine():
    """rouge-score-rs spreads a batch over every core itself: no worker processes on top."""
    metric = ROUGE(track=False)
    assert metric._scorer.engine == "compiled" and metric._batch_kernel([["a b"]]) is None
    assert ROUGE(rouge_types=["rougeW"], track=False)._batch_kernel([["a b"]]) is not None
    predictions, references = _items(seed=3)
    ours = ROUGE(track=False)
    on_python = ROUGE(track=False)
    on_python._scorer = RougeScorer(on_python.rouge_types, engine="python")
    got = [[r.value for r in item] for item in ours.score_batch(predictions, references)]
    want = [[r.value for r in item] for item in on_python.score_batch(predictions, references)]
    assert got == want


def test_a_multi_reference_mean_that_our_engine_scores_still_goes_to_worker_processes():
    """rouge-score-rs keeps only the best reference: a mean over several goes to ours, and so do
    the worker processes of ``workers``; one reference each stays on rouge-score-rs, in process."""
    metric = ROUGE(multi_reference="mean", track=False)
    assert metric._scorer.engine == "compiled"
    assert metric._batch_kernel([["a b", "a c"], ["a"]]) is not None and metric._batch_kernel([["a"], ["b"]]) is None
    predictions, references = _items(seed=5)
    several = [[ref, prediction[::-1]] for prediction, ref in zip(predictions, (r[0] for r in references))]
    spread = metric.score_batch(predictions[:400], several[:400], workers=2)
    alone = metric.score_batch(predictions[:400], several[:400], workers=1)
    assert [[r.value for r in item] for item in spread] == [[r.value for r in item] for item in alone]


@pytest.mark.parametrize("broken", ["not installed", "does not import"])
def test_without_a_loadable_rouge_score_rs_auto_falls_back_to_ours(monkeypatch, broken):
    from opik_metrics.text.rouge import compiled

    if broken == "not installed":
        monkeypatch.setattr(compiled, "compiled_version", lambda: None)
    else:
        monkeypatch.setitem(sys.modules, "rouge_score_rs", None)      # its metadata there, the import fails
    scorer = RougeScorer(["rouge1", "rougeL"], engine="auto")
    assert scorer.engine == "python" and "rouge_score_rs" not in scorer.signature().fields
    assert scorer.score("a b c", "a b d")["rouge1"].fmeasure == 2 / 3
    with pytest.raises(ValueError, match="engine='compiled' needs rouge-score-rs"):
        RougeScorer(["rouge1"], engine="compiled")
