"""Our ROUGE-N / L / Lsum equal rouge-score 0.1.2's numbers exactly (==), on many inputs, on both
engines: ours (``engine="python"``) and rouge-score-rs (``engine="compiled"``)."""
from __future__ import annotations

import functools
import random
import sys
from pathlib import Path

import pytest
from rouge_score import rouge_scorer, tokenizers

from opik_metrics.text.rouge import scorer as scorer_module
from opik_metrics.text.rouge.scorer import Score
from opik_metrics.text.tokenizers.words import DefaultTokenizer

try:
    from tests.corpus import realistic_pairs
except ModuleNotFoundError:  # plain `pytest` from elsewhere: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.corpus import realistic_pairs

RougeScorer = scorer_module.RougeScorer


@pytest.fixture(autouse=True, params=["python", "compiled"])
def engine(request, monkeypatch):
    """Every test here runs on each engine: ``RougeScorer`` below is the one with that engine."""
    if request.param == "compiled":
        pytest.importorskip("rouge_score_rs")
    monkeypatch.setitem(globals(), "RougeScorer", functools.partial(scorer_module.RougeScorer, engine=request.param))
    return request.param


ORACLE_TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]

_VOCAB = (
    "the a cat cats dog dogs run running runs ran study studies studying studied happy "
    "happily happiness sat on mat is was be being been 42 2024 x y"
).split()
_ODD = ["Café", "naïve", "日本語", "Straße", "İstanbul", "\u212a", "ÉCOLE", "don't", "e-mail",
        "3.14", "U.S.A.", "—", "...", "!!", "(", ")", "\t", "\r\n", "\n", "\n\n"]


def _random_text(rng: random.Random) -> str:
    words = []
    for _ in range(rng.choice([0, 1, 2, 3, 5, 8, 13, 21, 40, 70])):
        roll = rng.random()
        if roll < 0.12:
            words.append(rng.choice(_ODD))
        else:
            word = rng.choice(_VOCAB)
            words.append(word.upper() if roll > 0.95 else word.capitalize() if roll > 0.85 else word)
        if rng.random() < 0.1:
            words.append(rng.choice([".", ",", "!", "?", ".\n"]))
    return " ".join(words)


def _random_pairs(count: int, seed: int) -> list:
    rng = random.Random(seed)
    return [(_random_text(rng), _random_text(rng)) for _ in range(count)]


def _sentences_on_lines(text: str) -> str:
    """Realistic text with one sentence per line, as rougeLsum expects."""
    return text.replace(". ", ".\n").replace("! ", "!\n").replace("? ", "?\n")


EDGE_CASES = [
    ("", ""),
    ("", "the cat"),
    ("the cat", ""),
    ("   \n\t ", "the cat"),
    ("!!! ... ??? ---", "the cat sat"),
    ("!!! ... ???", "!!!"),
    ("a", "a"),
    ("a", "b"),
    ("the the the the", "the"),
    ("the", "the the the the"),
    ("cat cat dog cat dog dog", "dog cat dog cat cat cat"),
    ("Café naïve résumé", "cafe naive resume"),
    ("日本語のテキスト", "日本語のテキスト"),
    ("Привет мир", "Привет мир"),
    ("İstanbul STRASSE Straße", "istanbul strasse"),
    ("\u212a-9 units", "k 9 units"),
    ("running runs ran", "run run run"),
    ("studies studying", "study studied"),
    ("a\n\nb\n\n\nc", "c\nb\na"),
    ("first line\r\nsecond line", "second line\nfirst line"),
    ("one two three\n!!!\nfour five", "one three five\nfour two"),
    ("x " * 300 + "y", "y " + "x " * 250),
    (" ".join(str(i % 37) for i in range(400)), " ".join(str(i % 41) for i in range(380))),
    ("word", "word " * 120),
]


def _as_tuple(score: Score) -> tuple:
    return (score.precision, score.recall, score.fmeasure)


def _assert_same(ours: dict, theirs: dict, types, context) -> None:
    for rouge_type in types:
        assert _as_tuple(ours[rouge_type]) == tuple(theirs[rouge_type]), (rouge_type, context)


def _check_pairs(pairs, use_stemmer: bool, types=ORACLE_TYPES) -> None:
    oracle = rouge_scorer.RougeScorer(list(types), use_stemmer=use_stemmer)
    ours = RougeScorer(tuple(types), use_stemmer=use_stemmer)
    for prediction, reference in pairs:
        _assert_same(ours.score(prediction, reference), oracle.score(reference, prediction),
                     types, (prediction, reference))


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_realistic_pairs_equal_oracle(use_stemmer):
    predictions, references = realistic_pairs(520, seed=11)
    pairs = [(_sentences_on_lines(p), _sentences_on_lines(r)) for p, r in zip(predictions, references)]
    assert sum("\n" in p for p, _ in pairs) > 100  # rougeLsum really sees several sentences
    _check_pairs(pairs, use_stemmer)


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_random_pairs_equal_oracle(use_stemmer):
    _check_pairs(_random_pairs(500, seed=5 + use_stemmer), use_stemmer)


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_edge_cases_equal_oracle(use_stemmer):
    _check_pairs(EDGE_CASES + [(r, p) for p, r in EDGE_CASES], use_stemmer)


def test_all_ngram_orders_equal_oracle():
    types = [f"rouge{n}" for n in range(1, 10)]
    predictions, references = realistic_pairs(150, seed=3)
    _check_pairs(list(zip(predictions, references)) + _random_pairs(150, seed=9), True, types)


def test_only_rougeLsum_equals_oracle():
    """rouge-score takes a separate code path when rougeLsum is the only type."""
    predictions, references = realistic_pairs(100, seed=4)
    pairs = [(_sentences_on_lines(p), _sentences_on_lines(r)) for p, r in zip(predictions, references)]
    _check_pairs(pairs, False, ["rougeLsum"])


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_multi_reference_best_equals_score_multi(use_stemmer):
    rng = random.Random(21)
    predictions, references = realistic_pairs(150, seed=8)
    oracle = rouge_scorer.RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer)
    ours = RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer, multi_reference="best")
    for i, prediction in enumerate(predictions):
        refs = [references[i]] + rng.sample(references, rng.randint(0, 3))
        if rng.random() < 0.2:
            refs.append(prediction)  # a perfect reference must win
        if rng.random() < 0.1:
            refs.insert(0, refs[-1])  # tie: the first one is kept
        _assert_same(ours.score(prediction, refs), oracle.score_multi(refs, prediction),
                     ORACLE_TYPES, (prediction, refs))


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_multi_reference_mean_is_the_mean_of_rouge_scores_per_reference(use_stemmer):
    """multi_reference="mean": rouge-score's P, R and F against each reference alone, averaged."""
    rng = random.Random(22)
    predictions, references = realistic_pairs(150, seed=9)
    oracle = rouge_scorer.RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer)
    ours = RougeScorer(ORACLE_TYPES, use_stemmer=use_stemmer, multi_reference="mean")
    lists = [[references[i]] + rng.sample(references, rng.randint(0, 4)) for i in range(len(predictions))]
    got_batch = ours.score_batch(predictions, lists)           # 150 items: the arrays path
    for prediction, refs, batch_row in zip(predictions, lists, got_batch):
        alone = [oracle.score(reference, prediction) for reference in refs]   # rouge-score: (target, prediction)
        want = {t: Score(*(sum(s[t][part] for s in alone) / len(refs) for part in range(3))) for t in ORACLE_TYPES}
        got = ours.score(prediction, refs)
        for rouge_type in ORACLE_TYPES:
            assert got[rouge_type] == want[rouge_type], (rouge_type, prediction, refs)
            assert batch_row[rouge_type] == want[rouge_type], (rouge_type, prediction, refs)


def test_score_batch_equals_score():
    predictions, references = realistic_pairs(50, seed=2)
    ours = RougeScorer(ORACLE_TYPES)
    batch = ours.score_batch(predictions, references)
    assert batch == [ours.score(p, r) for p, r in zip(predictions, references)]


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_tokens_equal_oracle_tokenizer(use_stemmer):
    oracle = tokenizers.DefaultTokenizer(use_stemmer=use_stemmer)
    ours = DefaultTokenizer(use_stemmer=use_stemmer)
    predictions, _ = realistic_pairs(200, seed=6)
    texts = predictions + [t for pair in _random_pairs(200, seed=7) for t in pair]
    texts += [t for pair in EDGE_CASES for t in pair]
    for text in texts:
        assert ours(text) == oracle.tokenize(text), text
    assert RougeScorer(use_stemmer=use_stemmer).tokenizer(texts[0]) == oracle.tokenize(texts[0])


def test_seed_acceptance_means():
    """The brief's acceptance numbers; also 12/17, 2/3 etc. by hand (see the test body)."""
    predictions = ["The quick brown fox jumped over the lazy dog.", "The product was very good. I enjoyed it."]
    references = ["The quick brown dog jumped on the log.", "The product was good."]
    scores = RougeScorer().score_batch(predictions, references)

    def mean(rouge_type):
        return sum(s[rouge_type].fmeasure for s in scores) / len(scores)

    assert mean("rouge1") == 0.6862745098039216
    assert mean("rouge2") == 0.33333333333333337
    assert mean("rougeL") == 0.6274509803921569
    # By hand: rouge1 hits 6 of 9/8 tokens -> F 12/17; pair 2: 4 of 8/4 -> F 2/3.
    assert mean("rouge1") == pytest.approx((12 / 17 + 2 / 3) / 2, abs=1e-15)
    # rouge2: 2 of 8/7 bigrams -> F 4/15; 2 of 7/3 -> F 2/5.  rougeL: LCS 5 of 9/8 -> 10/17; 4 -> 2/3.
    assert mean("rouge2") == pytest.approx((4 / 15 + 2 / 5) / 2, abs=1e-15)
    assert mean("rougeL") == pytest.approx((10 / 17 + 2 / 3) / 2, abs=1e-15)


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_long_multi_sentence_texts_equal_oracle(use_stemmer):
    """rougeLsum (and L) on summaries of 150 to 700 tokens, a sentence per line, with the
    candidate's sentences reordered, dropped or repeated: the union LCS over many lines."""
    rng = random.Random(31 + use_stemmer)
    predictions, references = realistic_pairs(300, seed=13 + use_stemmer)
    pairs, k = [], 0
    for size in (150, 300, 450, 700):
        prediction, reference = [], []
        while sum(len(s.split()) for s in prediction) < size:
            prediction += _sentences_on_lines(predictions[k]).split("\n")
            reference += _sentences_on_lines(references[k]).split("\n")
            k += 1
        shuffled = prediction[:]
        rng.shuffle(shuffled)
        repeated = prediction + rng.sample(prediction, len(prediction) // 3)
        for candidate in (prediction, shuffled, repeated, prediction[::2]):
            pairs.append(("\n".join(candidate), "\n".join(reference)))
    _check_pairs(pairs, use_stemmer, ["rougeL", "rougeLsum"])
