"""ROUGE-1.5.5 mode equals the ROUGE-1.5.5 perl script, to its printed 5 decimals (==), on held-out sets.

Each set is scored by one or two script runs (tests/text/rouge155_oracle.py): one config file lists
every item. The script dies on a reference with no tokens in ROUGE-W (division by zero), so the sets
keep only items whose references have tokens (we score such a reference 0: test_rouge155_handworked).
"""
from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest

try:
    from tests.corpus import realistic_pairs
except ModuleNotFoundError:  # plain `pytest` from elsewhere: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.corpus import realistic_pairs

from opik_metrics.text.rouge.scorer import RougeScorer
from opik_metrics.text.tokenizers.stopwords import ENGLISH_STOPWORDS, SMART_COMMON_WORDS
from tests.text.rouge155_oracle import release_dir, require_rouge155, run_script, script_rouge

ALL_TYPES = ["rouge1", "rouge2", "rougeLsum", "rougeW", "rougeS4", "rougeSU4", "rougeS", "rougeSU"]


@pytest.fixture(scope="module", autouse=True)
def _script():
    require_rouge155()


def _on_lines(text: str) -> str:
    """One sentence per line, as the script's SPL input (and rougeLsum) expects."""
    return text.replace(". ", ".\n").replace("! ", "!\n").replace("? ", "?\n")


def _keep_scorable(items, **options):
    """Items whose every reference has tokens (the script dies on an empty one in ROUGE-W)."""
    tokenize = RougeScorer(rouge155=True, **options).tokenizer
    return [(p, refs) for p, refs in items if all(tokenize(r) for r in refs)]


def _assert_equal_to_script(items, types=ALL_TYPES, **options):
    expected = script_rouge(items, types, multi_reference=options.get("multi_reference", "best"),
                            remove_stopwords=options.get("remove_stopwords", False), **_script_spelling(options))
    ours = RougeScorer(types, rouge155=True, **options)
    for (prediction, references), want in zip(items, expected):
        got = ours.score(prediction, references)
        for rouge_type in types:
            score = got[rouge_type]
            assert (score.precision, score.recall, score.fmeasure) == want[rouge_type], (
                rouge_type, prediction, references)


def _script_spelling(options) -> dict:
    """Our alpha / beta / wlcs_weight as the script's -p / -w strings."""
    spelled = {}
    if "alpha" in options:
        spelled["alpha"] = str(options["alpha"])
    if "beta" in options:
        spelled["alpha"] = repr(1 / (1 + options["beta"] ** 2))
    if "wlcs_weight" in options:
        spelled["wlcs_weight"] = str(options["wlcs_weight"])
    return spelled


def test_single_reference_realistic_pairs():
    predictions, references = realistic_pairs(160, seed=101)
    items = [(p, [r]) for p, r in zip(predictions, references)]
    _assert_equal_to_script(items, ALL_TYPES + ["rouge3", "rouge4"])


def test_multi_sentence_pairs():
    """L and W sentence by sentence (union LCS); N, S, SU over the whole text."""
    predictions, references = realistic_pairs(400, seed=202)
    items = [(_on_lines(p), [_on_lines(r)]) for p, r in zip(predictions, references)]
    items = [(p, refs) for p, refs in items if "\n" in p or "\n" in refs[0]][:100]
    assert len(items) == 100 and sum(p.count("\n") >= 2 for p, _ in items) > 30
    _assert_equal_to_script(items)


def test_stopwords_removed():
    predictions, references = realistic_pairs(150, seed=303)
    items = _keep_scorable([(_on_lines(p), [_on_lines(r)]) for p, r in zip(predictions, references)],
                           remove_stopwords=True)
    assert len(items) > 140
    _assert_equal_to_script(items, remove_stopwords=True)


@pytest.mark.parametrize("multi_reference", ["average", "best"])
def test_three_references(multi_reference):
    """-f A adds the counts over the references; -f B keeps the reference with the best recall."""
    predictions, references = realistic_pairs(80, seed=404)
    items = [(p, [references[i], references[(i + 7) % 80], predictions[(i + 31) % 80]])
             for i, p in enumerate(predictions)]
    _assert_equal_to_script(items, multi_reference=multi_reference)


_VOCAB = "the a cat cats dog dogs run running ran it's don't e-mail U.S.A. $5 3.14 2024 x y mat sat on is".split()
_ODD = ["Café", "naïve", "日本語", "Straße", "İstanbul", "\u212a", "ÉCOLE", "—", "...", "!!", "(", ")", "\t",
        "\r\n", "\n", "\n\n", "-", "--", "'", "A-B", "THE", "The", "Reuters", "Jan.", "x86_64", "C++"]


def _generated_text(rng: random.Random, shortest: int) -> str:
    words = []
    for _ in range(rng.choice([shortest, 1, 2, 3, 5, 8, 13, 21, 40])):
        roll = rng.random()
        if roll < 0.15:
            words.append(rng.choice(_ODD))
        else:
            word = rng.choice(_VOCAB)
            words.append(word.upper() if roll > 0.95 else word.capitalize() if roll > 0.85 else word)
        if rng.random() < 0.1:
            words.append(rng.choice([".", ",", "!", "?", ".\n"]))
    return " ".join(words)


def _generated_items(count: int, seed: int) -> list:
    rng = random.Random(seed)
    items = [(_generated_text(rng, 0), [_generated_text(rng, 1) for _ in range(rng.choice([1, 1, 2, 3]))])
             for _ in range(count)]
    return _keep_scorable(items)


@pytest.mark.parametrize("multi_reference", ["average", "best"])
def test_generated_text_punctuation_numbers_case(multi_reference):
    """Empty predictions, punctuation, digits, capitals, hyphens, non-ASCII, CRLF and blank lines."""
    items = _generated_items(200, seed=505)
    assert sum(not RougeScorer(rouge155=True).tokenizer(p) for p, _ in items) >= 5
    _assert_equal_to_script(items, ALL_TYPES + ["rougeS0", "rougeSU0"], multi_reference=multi_reference)


def test_generated_text_with_stopwords_removed():
    items = _keep_scorable(_generated_items(200, seed=606), remove_stopwords=True)
    _assert_equal_to_script(items, ["rouge1", "rouge2", "rougeLsum", "rougeW", "rougeSU4"], remove_stopwords=True)


def _repetitive_items(count: int, seed: int) -> list:
    """Few distinct words, several lines: union LCS marks more copies than the clip allows."""
    rng = random.Random(seed)

    def text(shortest):
        return "\n".join(" ".join(rng.choices("abcd", k=rng.randint(shortest, 7))) for _ in range(rng.randint(1, 4)))

    return [(text(0), [text(1) for _ in range(rng.choice([1, 2, 3]))]) for _ in range(count)]


@pytest.mark.parametrize("options", [
    {"multi_reference": "average"},
    {"multi_reference": "best"},
    {"multi_reference": "average", "beta": 2, "wlcs_weight": 2},
    {"multi_reference": "best", "alpha": 0.9, "wlcs_weight": 1.5},
])
def test_repeated_words_across_sentences(options):
    """W's clipped runs, L's clip, B's choice per measure, -p alpha and -w weight."""
    _assert_equal_to_script(_repetitive_items(200, seed=707), ["rouge1", "rouge2", "rougeLsum", "rougeW",
                                                               "rougeS2", "rougeSU2"], **options)


def test_upper_u_gives_the_same_su_as_lower_u():
    """The helper runs -U (S and SU in one run); the brief's command line has -u."""
    items = _generated_items(60, seed=808)
    with_u = run_script(items, ["-x", "-2", "4", "-u"])
    with_upper = run_script(items, ["-x", "-2", "4", "-U"])
    assert [row["ROUGE-SU4"] for row in with_u] == [row["ROUGE-SU4"] for row in with_upper]
    assert all("ROUGE-S4" in row and "ROUGE-S4" not in lower for row, lower in zip(with_upper, with_u))


def test_stopword_list_is_the_scripts_file():
    lines = (release_dir() / "data" / "smart_common_words.txt").read_text("ascii").split("\n")
    words = [line for line in lines if line]
    assert len(words) == 598 and len(set(words)) == 596
    assert ENGLISH_STOPWORDS == frozenset(words)
    assert list(SMART_COMMON_WORDS) == list(dict.fromkeys(words))


@pytest.mark.parametrize("use_stemmer", [False, True])
def test_mean_over_references_is_the_mean_of_the_scripts_single_reference_scores(use_stemmer):
    """multi_reference="mean": the script run on each (prediction, reference) pair alone, its P, R
    and F averaged over the references (what BARTScore's and SummEval's code report)."""
    predictions, references = realistic_pairs(60, seed=909)
    items = [(_on_lines(p), [_on_lines(references[i]), _on_lines(references[(i + 5) % 60]),
                             _on_lines(predictions[(i + 17) % 60])][:1 + i % 3]) for i, p in enumerate(predictions)]
    types = ["rouge1", "rouge2", "rougeLsum", "rougeW", "rougeSU4"]
    pairs = [(p, [r]) for p, refs in items for r in refs]
    alone = iter(script_rouge(pairs, types, use_stemmer=use_stemmer))
    ours = RougeScorer(types, rouge155=True, multi_reference="mean", use_stemmer=use_stemmer)
    for prediction, refs in items:
        per_reference = [next(alone) for _ in refs]
        got = ours.score(prediction, refs)
        for rouge_type in types:
            want = tuple(sum(row[rouge_type][part] for row in per_reference) / len(refs) for part in range(3))
            assert tuple(got[rouge_type]) == want, (rouge_type, prediction, refs)
