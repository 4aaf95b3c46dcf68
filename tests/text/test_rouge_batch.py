"""ROUGE of many items at once (``RougeScorer.score_batch``: ROUGE-N and L counted on
token-id arrays) equals rouge-score exactly, and equals the per-item engine for every option; the
array counts equal the per-pair Python counts; a small case worked by hand."""
from __future__ import annotations

import itertools
import random

import numpy as np
import pytest
from rouge_score import rouge_scorer

from opik_metrics.text.rouge import arrays, batch
from opik_metrics.text.rouge.arrays import Ragged, pair_counts
from opik_metrics.text.rouge.lcs import lcs_length
from opik_metrics.text.rouge.per_item import clipped_overlap, ngram_counts
from opik_metrics.text.rouge.scorer import BATCH_MIN_ITEMS, RougeScorer
from tests.corpus import realistic_pairs
from tests.text.test_rouge_oracle import EDGE_CASES, ORACLE_TYPES, _random_pairs, _sentences_on_lines


def _ragged(sequences: list) -> Ragged:
    return Ragged.of(np.fromiter(itertools.chain.from_iterable(sequences), dtype=np.int64),
                     np.array([len(s) for s in sequences], dtype=np.int64))


def test_hand_worked_counts():
    # prediction 1 2 1 3, reference 1 1 2: unigrams min(2,2) for 1 + min(1,1) for 2 = 3; bigrams
    # (1,2) (2,1) (1,3) against (1,1) (1,2): 1; LCS "1 2" or "1 1": 2. Second pair: nothing shared.
    counts = pair_counts(_ragged([[1, 2, 1, 3], [4]]), _ragged([[1, 1, 2], [5, 5]]), (1, 2), True)
    assert counts[1].tolist() == [3, 0] and counts[2].tolist() == [1, 0] and counts["lcs"].tolist() == [2, 0]


@pytest.mark.parametrize("seed", range(6))
def test_array_counts_equal_python_counts(seed):
    """Every length class: one 64-bit word and several (63/64/65/130/256 tokens), empty sides,
    tiny and large vocabularies, ids of any size, n up to 9 (codes renumbered when keys would
    overflow), and more pairs than one block."""
    rng = random.Random(seed)
    pairs = rng.choice([1, 7, 40, arrays.BLOCK_PAIRS + 3])
    vocabulary = rng.choice([1, 3, 30, 5000])
    spread = rng.choice([1, 2 ** 40 + 7, -(2 ** 50) - 3])     # ids of any size and sign: renumbered pair by pair
    longest = rng.choice([0, 3, 63, 64, 65, 130, arrays.LONGEST])
    predictions = [[rng.randrange(vocabulary) for _ in range(rng.randint(0, longest))] for _ in range(pairs)]
    references = [[rng.randrange(vocabulary) for _ in range(rng.randint(0, longest))] for _ in range(pairs)]
    counts = pair_counts(_ragged([[spread * t for t in p] for p in predictions]),
                         _ragged([[spread * t for t in r] for r in references]), (1, 2, 3, 9), True)
    for n in (1, 2, 3, 9):
        assert counts[n].tolist() == [clipped_overlap(ngram_counts(p, n), ngram_counts(r, n))
                                      for p, r in zip(predictions, references)], n
    assert counts["lcs"].tolist() == [lcs_length(p, r) for p, r in zip(predictions, references)]


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_score_batch_equals_oracle(use_stemmer):
    """Realistic, random and edge-case pairs in one batch (long texts go to the per-item engine)."""
    predictions, references = realistic_pairs(400, seed=17)
    pairs = [(_sentences_on_lines(p), _sentences_on_lines(r)) for p, r in zip(predictions, references)]
    pairs += _random_pairs(300, seed=23) + EDGE_CASES + [(r, p) for p, r in EDGE_CASES]
    oracle = rouge_scorer.RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer)
    scored = RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer).score_batch([p for p, _ in pairs],
                                                                          [r for _, r in pairs])
    for (prediction, reference), ours in zip(pairs, scored):
        theirs = oracle.score(reference, prediction)
        for rouge_type in ORACLE_TYPES:
            assert tuple(ours[rouge_type]) == tuple(theirs[rouge_type]), (rouge_type, prediction, reference)


def test_score_batch_multi_reference_equals_score_multi():
    rng = random.Random(5)
    predictions, references = realistic_pairs(200, seed=19)
    lists = []
    for k, prediction in enumerate(predictions):
        refs = [references[k]] + rng.sample(references, rng.randint(0, 3))
        if rng.random() < 0.2:
            refs.append(prediction)
        if rng.random() < 0.1:
            refs.insert(0, refs[-1])                 # a tie: the first is kept
        lists.append(refs)
    oracle = rouge_scorer.RougeScorer(ORACLE_TYPES)
    for prediction, refs, ours in zip(predictions, lists, RougeScorer(ORACLE_TYPES).score_batch(predictions, lists)):
        theirs = oracle.score_multi(refs, prediction)
        assert all(tuple(ours[t]) == tuple(theirs[t]) for t in ORACLE_TYPES), (prediction, refs)


_WORDS = "the a cat dog sat on mat running runs ran quickly The CAT, dog's é naïve 42 4-2 x\ny the\n and and".split(" ")


def _text(rng: random.Random, most: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(0, most)))
    return text + "\x00" if rng.random() < 0.01 else text   # the fast path's separator inside a text


@pytest.mark.parametrize("options", [
    {}, {"use_stemmer": True}, {"remove_stopwords": True}, {"use_stemmer": True, "remove_stopwords": True},
    {"tokenizer": "unicode"}, {"tokenizer": str.split}, {"alpha": 0.2}, {"beta": 0}, {"alpha": 1.0},
    {"multi_reference": "average"}, {"rouge155": True}, {"use_stemmer": True, "multi_reference": "average"},
    {"multi_reference": "mean"}, {"use_stemmer": True, "multi_reference": "mean"},
    {"rouge155": True, "use_stemmer": True, "multi_reference": "mean"},
    {"rouge155": True, "use_stemmer": True, "rouge155_stemmer": "porter", "multi_reference": "average"},
], ids=repr)
def test_batch_equals_item_by_item(options):
    """Every option and every type, mixed lengths (some above ``LONGEST``), one to three references,
    texts that are not ASCII: the batch rows are the per-item values, bit for bit."""
    rng = random.Random(repr(options))
    for types in [("rouge1", "rouge2", "rougeL"), ("rouge3", "rougeLsum", "rougeW", "rougeSU4", "rouge1"),
                  ("rougeL",), ("rouge9", "rougeS")]:
        if options.get("rouge155"):             # no rougeL there: the script's ROUGE-L is rougeLsum
            types = tuple("rougeLsum" if t == "rougeL" else t for t in types)
        scorer = RougeScorer(types, **options)
        for most in (3, 30, arrays.LONGEST + 40):
            items = BATCH_MIN_ITEMS if most > 30 else rng.choice([BATCH_MIN_ITEMS, 120])
            predictions = [_text(rng, most) for _ in range(items)]
            references = [[_text(rng, most) for _ in range(rng.choice([1, 1, 1, 2, 3]))] for _ in range(items)]
            got = scorer.score_batch(predictions, references, flat=True)
            assert got == _item_by_item(scorer, predictions, references), (types, most)


def _item_by_item(scorer: RougeScorer, predictions: list, references: list) -> list:
    """``score`` of each item, flattened: P, R, F of each type, item after item."""
    return [x for p, r in zip(predictions, references) for name in scorer.rouge_types for x in scorer.score(p, r)[name]]


def test_batch_across_chunks(monkeypatch):
    """Chunks are cut by pairs: an item with many references counts for each (and a chunk holds at
    least one item, however many references it has)."""
    monkeypatch.setattr(batch, "CHUNK_PAIRS", 64)
    predictions, references = realistic_pairs(300, seed=29)
    scorer = RougeScorer(("rouge1", "rouge2", "rougeL"), use_stemmer=True)
    lists = [[r] if k % 7 else references[k:k + 1 + k % 90] for k, r in enumerate(references)]
    lists[3] = references[:100]                  # more references than a chunk's pairs
    assert scorer.score_batch(predictions, lists, flat=True) == _item_by_item(scorer, predictions, lists)
    mean = RougeScorer(("rouge1", "rouge2", "rougeL"), use_stemmer=True, multi_reference="mean")
    assert mean.score_batch(predictions, lists, flat=True) == _item_by_item(mean, predictions, lists)


def test_batch_checks_its_input():
    scorer = RougeScorer(("rouge1",))
    for count in (1, 150):                      # item by item and on arrays alike
        with pytest.raises(ValueError, match=r"references\[0\] is empty"):
            scorer.score_batch(["a b"] * count, [[]] + [["a b"]] * (count - 1))
        with pytest.raises(ValueError, match="lengths must match"):
            scorer.score_batch(["a b"] * count, [["a b"]] * (count + 1))
