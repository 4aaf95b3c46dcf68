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
