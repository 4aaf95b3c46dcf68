"""The paired permutation test: sacrebleu's paired-ar p-values reproduced under its rule (same
draws, same counting), the calibrated rule worked by hand, and the swaps drawn as one stream."""
from __future__ import annotations

import numpy as np
import pytest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.significance import PairedTest

from opik_metrics.compare.statistics.bootstrap import CorpusStatistic, MeanStatistic, ResampledOnce
from opik_metrics.compare.statistics.permutation import paired_permutation, shuffled_differences, swap_blocks
from opik_metrics.text.bleu import BLEUScorer, bleu_from_statistics
from tests.corpus import realistic_pairs


def _drop(texts, seed, share):
    rng = np.random.default_rng(seed)
    return [" ".join(w for w in t.split() if rng.random() > share) or t.split()[0] for t in texts]


@pytest.mark.parametrize("seed, share", [(0, 0.08), (1, 0.03), (2, 0.01), (3, 0.15)])
def test_corpus_bleu_permutation_equals_sacrebleus_paired_ar(monkeypatch, seed, share):
    outputs, refs = realistic_pairs(70, seed)
    baseline, system = outputs, _drop(outputs, seed, share)
    monkeypatch.setenv("SACREBLEU_SEED", str(100 + seed))
    _, scores = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": SacreBLEU()}, [refs],
                           test_type="ar", n_samples=2000)()
    sacre_system = scores["BLEU"][1]
    scorer = BLEUScorer()
    ours = [CorpusStatistic(scorer.segment_statistics(texts, [[r] for r in refs]), bleu_from_statistics)
            for texts in (baseline, system)]
    sacre = paired_permutation(*ours, permutations=2000, seed=100 + seed, p_value="sacrebleu")
    assert sacre.p_value == pytest.approx(sacre_system.p_value, abs=1e-12)
    calibrated = paired_permutation(*ours, permutations=2000, seed=100 + seed)
    assert calibrated.p_value >= sacre.p_value          # ">=" counts the ties sacrebleu's ">" leaves out
    assert calibrated.p_one_sided <= calibrated.p_value


def test_the_swaps_are_one_stream_whatever_the_block():
    whole = np.random.default_rng(9).integers(2, size=(3000, 37), dtype=bool)
    assert np.array_equal(np.vstack(list(swap_blocks(37, 3000, 9))), whole)


def test_mean_permutation_worked_by_hand():
    """Three items, gains [1, 2, 3]: the observed mean gain 2; a shuffle flips the sign of each swapped
    item's gain, so its mean gain is (sum of signed gains) / 3."""
    base, system = MeanStatistic([0.0, 0.0, 0.0]), MeanStatistic([1.0, 2.0, 3.0])
    swaps = np.vstack(list(swap_blocks(3, 400, 4)))
    expected = np.where(swaps, -1.0, 1.0) @ np.array([1.0, 2.0, 3.0]) / 3
    got = shuffled_differences(base, ResampledOnce(system), 400, 4)
    assert np.allclose(got, expected, atol=1e-15)
    result = paired_permutation(base, system, 400, 4)
    assert result.p_value == (np.count_nonzero(np.abs(expected) >= 2 - 1e-12) + 1) / 401
    assert result.p_one_sided == (np.count_nonzero(expected >= 2 - 1e-12) + 1) / 401


def test_no_difference_is_never_significant_and_bad_arguments_are_refused():
    values = MeanStatistic([0.2, 0.4, 0.9])
    assert paired_permutation(values, values, 100).p_value == 1.0
    with pytest.raises(ValueError, match="permutations must be an integer >= 1"):
        paired_permutation(values, values, 0)
    with pytest.raises(ValueError, match="same items"):
        paired_permutation(values, MeanStatistic([0.1, 0.2]), 10)
