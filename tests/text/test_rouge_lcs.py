"""LCS algorithms: bit-parallel length equals the DP, and the DP backtracking picks rouge-score's LCS."""
from __future__ import annotations

import random

from rouge_score.rouge_scorer import lcs_ind

from opik_metrics.text.rouge.lcs import lcs_length, lcs_length_dp, lcs_positions, weighted_lcs


def _random_sequences(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        alphabet = "abcdefghij"[: rng.randint(1, 10)]
        yield (rng.choices(alphabet, k=rng.choice([0, 1, 2, 7, 31, 63, 64, 65, rng.randint(0, 200)])),
               rng.choices(alphabet, k=rng.choice([0, 1, 5, 64, 129, rng.randint(0, 200)])))


def test_bit_parallel_lcs_equals_dp():
    for a, b in _random_sequences(1, 600):
        expected = lcs_length_dp(a, b)
        assert lcs_length(a, b) == expected
        assert lcs_length(b, a) == expected


def test_dp_lcs_known_values():
    assert lcs_length_dp("ABCBDAB", "BDCABA") == 4  # CLRS: BCBA
    assert lcs_length_dp("", "abc") == 0
    assert lcs_length_dp("abc", "abc") == 3
    assert lcs_length("ABCBDAB", "BDCABA") == 4


def test_lcs_positions_are_rouge_scores_choice():
    for a, b in _random_sequences(2, 300):
        a, b = a[:60], b[:60]
        positions = lcs_positions(a, b)
        assert positions == lcs_ind(a, b)
        assert len(positions) == lcs_length_dp(a, b)


def test_weighted_lcs_lin_examples():
    x = "ABCDEFG"
    assert weighted_lcs(x, "ABCDHIK", 2) == 16  # one run of 4: f(4)
    assert weighted_lcs(x, "AHBKCID", 2) == 4   # four runs of 1
    assert weighted_lcs("abc", "xyz", 2) == 0


# --- union LCS (ROUGE-Lsum) from the bit-parallel rows, against a plain DP written here ------------

def _dp_lcs_positions(reference, candidate):
    """rouge-score's ``lcs_ind`` spelled out: the full DP table, then the walk back from the corner
    (a match goes diagonally, else left only when the left cell is strictly larger, else up)."""
    table = [[0] * (len(candidate) + 1) for _ in range(len(reference) + 1)]
    for i in range(1, len(reference) + 1):
        for j in range(1, len(candidate) + 1):
            if reference[i - 1] == candidate[j - 1]:
                table[i][j] = table[i - 1][j - 1] + 1
            else:
                table[i][j] = max(table[i - 1][j], table[i][j - 1])
    positions, i, j = [], len(reference), len(candidate)
    while i > 0 and j > 0:
        if reference[i - 1] == candidate[j - 1]:
            positions.insert(0, i - 1)
            i, j = i - 1, j - 1
        elif table[i][j - 1] > table[i - 1][j]:
            j -= 1
        else:
            i -= 1
    return positions


def _dp_union(reference, candidates):
    return sorted(set().union(*(_dp_lcs_positions(reference, c) for c in candidates)))


def _dp_summary_hits(references, candidates):
    """rouge-score's ``_summary_level_lcs`` hit count: union-LCS tokens, each credited while both
    summaries still have an uncredited copy."""
    from collections import Counter

    left_r = Counter(t for s in references for t in s)
    left_c = Counter(t for s in candidates for t in s)
    hits = 0
    for sentence in references:
        for position in _dp_union(sentence, candidates):
            token = sentence[position]
            if left_c[token] > 0 and left_r[token] > 0:
                hits += 1
                left_c[token] -= 1
                left_r[token] -= 1
    return hits


# lengths around Python's 30-bit int digits and 64-bit words, where carries cross a digit
_LENGTHS = [0, 1, 2, 3, 5, 8, 13, 29, 30, 31, 59, 60, 61, 63, 64, 65]


def _random_summary(rng: random.Random, alphabet: str) -> list:
    return [rng.choices(alphabet, k=rng.choice(_LENGTHS + [rng.randint(0, 40)]))
            for _ in range(rng.choice([0, 1, 1, 2, 3, 4, 6, 9]))]


def _random_summaries(seed: int, count: int):
    rng = random.Random(seed)
    for _ in range(count):
        alphabet = "abcdefghijklmnopqrst"[: rng.choice([1, 2, 3, 4, 6, 10, 20])]  # few letters: many repeats
        yield _random_summary(rng, alphabet), _random_summary(rng, alphabet)


def test_union_lcs_positions_equal_the_dp_walk():
    from opik_metrics.text.rouge.lcs import sentence_masks, union_lcs_positions_with_masks
    from opik_metrics.text.rouge.lcs import union_lcs_positions

    checked = 0
    for references, candidates in _random_summaries(16, 700):
        masks = sentence_masks(candidates)
        for sentence in references:
            expected = _dp_union(sentence, candidates)
            assert union_lcs_positions_with_masks(masks, sentence) == expected, (sentence, candidates)
            assert union_lcs_positions(sentence, candidates) == expected
            checked += 1
    assert checked > 1500


def test_lcs_positions_of_one_pair_equal_the_dp_walk():
    for a, b in _random_sequences(3, 500):
        assert lcs_positions(a, b) == _dp_lcs_positions(a, b), (a, b)


def test_summary_lcs_hits_equal_rouge_scores_counting():
    from opik_metrics.text.rouge.lcs import sentence_masks
    from opik_metrics.text.rouge.lcs import summary_lcs_hits

    for references, candidates in _random_summaries(17, 700):
        expected = _dp_summary_hits(references, candidates)
        assert summary_lcs_hits(references, candidates) == expected, (references, candidates)
        assert summary_lcs_hits(references, candidates, sentence_masks(candidates)) == expected


def test_union_lcs_lin_example_and_degenerate_inputs():
    from opik_metrics.text.rouge.lcs import sentence_masks, union_lcs_positions_with_masks

    # Lin (2004) 3.2: r = w1..w5, c1 = w1 w2 w6 w7 w8, c2 = w1 w3 w8 w9 w5: union w1 w2 w3 w5.
    r = ["w1", "w2", "w3", "w4", "w5"]
    c = [["w1", "w2", "w6", "w7", "w8"], ["w1", "w3", "w8", "w9", "w5"]]
    assert union_lcs_positions_with_masks(sentence_masks(c), r) == [0, 1, 2, 4]
    assert union_lcs_positions_with_masks(sentence_masks([]), r) == []
    assert union_lcs_positions_with_masks(sentence_masks([[], ["w5"], []]), r) == [4]
    assert union_lcs_positions_with_masks(sentence_masks(c), []) == []
    assert lcs_positions(["x"] * 70, ["x"] * 3) == [67, 68, 69]   # rouge-score keeps the last matches
