"""Multiple-testing corrections against hand-worked values and against Holm's definition as a closed
test (every intersection of hypotheses tested with Bonferroni), computed by brute force."""
import itertools
import math
import random

import pytest

from opik_metrics.compare.statistics.corrections import CORRECTIONS, adjust, correction_label


def test_holm_and_bonferroni_hand_worked():
    # sorted: 0.005 (x4 = 0.02), 0.01 (x3 = 0.03), 0.03 (x2 = 0.06), 0.04 (x1 = 0.04, raised to 0.06)
    assert adjust([0.01, 0.04, 0.03, 0.005], "holm") == pytest.approx([0.03, 0.06, 0.06, 0.02], abs=1e-15)
    assert adjust([0.01, 0.04, 0.03, 0.005], "bonferroni") == pytest.approx([0.04, 0.16, 0.12, 0.02], abs=1e-15)
    assert adjust([0.01, 0.04, 0.03, 0.005], "none") == [0.01, 0.04, 0.03, 0.005]


def test_ties_get_one_adjusted_value():
    # 0.02 x3 = 0.06, 0.02 x2 = 0.04 raised to 0.06, 0.5 x1
    assert adjust([0.02, 0.5, 0.02], "holm") == pytest.approx([0.06, 0.5, 0.06], abs=1e-15)
    assert adjust([0.2, 0.2, 0.2, 0.2], "holm") == pytest.approx([0.8] * 4, abs=1e-15)


def test_capped_at_one():
    assert adjust([0.6, 0.7], "holm") == [1.0, 1.0]
    assert adjust([0.3, 0.4], "holm") == pytest.approx([0.6, 0.6], abs=1e-15)
    assert adjust([0.6, 0.01], "bonferroni") == [1.0, 0.02]


def test_missing_p_values_are_left_out_of_the_family():
    # m = 2: 0.01 x2 = 0.02; 0.04 x1 = 0.04
    for method, expected in (("holm", [0.02, None, None, 0.04]), ("bonferroni", [0.02, None, None, 0.08]),
                             ("none", [0.01, None, None, 0.04])):
        got = adjust([0.01, None, math.nan, 0.04], method)
        assert [g is None for g in got] == [e is None for e in expected]
        assert [g for g in got if g is not None] == pytest.approx([e for e in expected if e is not None], abs=1e-15)
    assert adjust([None, None], "holm") == [None, None]
    assert adjust([], "holm") == []


def _closed_bonferroni(p):
    """Holm's adjusted p-values by definition: H_i's adjusted p is the largest p-value of any
    intersection hypothesis containing i, each tested by Bonferroni (|S| * min over S, capped at 1)."""
    m = len(p)
    out = []
    for i in range(m):
        worst = 0.0
        for size in range(1, m + 1):
            for subset in itertools.combinations(range(m), size):
                if i in subset:
                    worst = max(worst, min(1.0, size * min(p[j] for j in subset)))
        out.append(worst)
    return out


@pytest.mark.parametrize("seed", range(30))
def test_holm_equals_the_closed_test_and_sits_between_raw_and_bonferroni(seed):
    rng = random.Random(seed)
    m = rng.randint(1, 6)
    p = [rng.choice([rng.random() * 0.1, rng.random(), 0.05]) for _ in range(m)]   # ties (0.05) now and then
    holm, bonf = adjust(p, "holm"), adjust(p, "bonferroni")
    assert holm == pytest.approx(_closed_bonferroni(p), abs=1e-12)
    for raw, h, b in zip(p, holm, bonf):
        assert raw <= h <= b <= 1.0
    for i, j in itertools.permutations(range(m), 2):          # the adjusted order keeps the raw order
        if p[i] <= p[j]:
            assert holm[i] <= holm[j]


@pytest.mark.parametrize("bad, position", [([0.1, -0.01], 1), ([1.5], 0), ([0.1, "0.2"], 1), ([True], 0),
                                           ([0.2, 0.1, math.inf], 2)])
def test_bad_p_values_are_named(bad, position):
    with pytest.raises(ValueError, match=rf"p_values\[{position}\]"):
        adjust(bad, "holm")


def test_unknown_method_and_labels():
    with pytest.raises(ValueError, match="correction must be one of holm, bonferroni, none; got 'fdr'"):
        adjust([0.1], "fdr")
    assert CORRECTIONS[0] == "holm"
    assert [correction_label(c) for c in CORRECTIONS] == ["Holm", "Bonferroni", "uncorrected"]
