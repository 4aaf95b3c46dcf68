"""The gate's statistics, run on this repo's paired bootstrap: its error rate under the null (with
and without correction), its power on real losses, lower-is-better scores, and corpus BLEU's gate
against sacrebleu's paired bootstrap.

Data. Real BLEU statistics, ROUGE-1 F1 and TER from our engines on token sequences: each item's
reference (tests.corpus) and a bank of baseline outputs, each the reference with 30% of its words
replaced at random. A regressed system is each baseline output with a further small share of its
words replaced (1% costs one corpus-BLEU point, 1.5% one ROUGE-1 F1 point: measured below), the way a
model version that got slightly worse everywhere behaves. Other scores are simulated per item
(vectorised). Two systems "from the same distribution" draw their outputs independently from the
bank. Fixed seeds, so the counts are reproducible; bounds are binomial, computed here.
"""
from __future__ import annotations

import dataclasses
import functools
import math
import random

import numpy as np
import pytest
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.significance import PairedTest

from opik_metrics.compare.statistics.bootstrap import CorpusStatistic, MeanStatistic, paired_bootstrap, resample_indices
from opik_metrics.compare.gate.decision import GateRow, decide
from opik_metrics.text.bleu import BLEUScorer, bleu_from_statistics
from opik_metrics.text.rouge import RougeScorer
from opik_metrics.text.ter.scorer import TERScorer, ter_from_statistics
from tests.corpus import realistic_pairs

ALPHA = 0.05
VARIANTS = 6          # baseline outputs per item in the bank
BASE_NOISE = 0.30     # share of a reference's words a baseline output replaces
BLEU_LOSS = 0.010     # extra share of words replaced: about one corpus-BLEU point (checked below)
ROUGE_LOSS = 0.015    # extra share: about one ROUGE-1 F1 point (checked below)
RESAMPLES = 200       # per test: p-values down to 1/201, below Holm's first threshold for 5 scores (0.01)


def binomial_upper(n: int, p: float, level: float = 0.999) -> int:
    """The smallest k with P(Binomial(n, p) <= k) >= level."""
    total = 0.0
    for k in range(n + 1):
        total += math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                          + k * math.log(p) + (n - k) * math.log1p(-p))
        if total >= level:
            return k
    return n


def binomial_lower(n: int, p: float, level: float = 0.999) -> int:
    """The largest k with P(Binomial(n, p) >= k) >= level."""
    return n - binomial_upper(n, 1 - p, level)


def _corrupt(text: str, rng: random.Random, share: float, vocab: list[str]) -> str:
    return " ".join(rng.choice(vocab) if rng.random() < share else w for w in text.split())


class Bank:
    """References, baseline outputs (``VARIANTS`` per item) and each one's regressed version, with
    every output's real per-item statistics: BLEU counts, ROUGE-1 F1, TER counts."""

    def __init__(self, n: int, extra: float, seed: int, ter: bool = False) -> None:
        _, self.refs = realistic_pairs(n, seed)
        vocab = sorted({w for r in self.refs for w in r.split()})
        rng = random.Random(seed)
        self.base = [[_corrupt(r, rng, BASE_NOISE, vocab) for _ in range(VARIANTS)] for r in self.refs]
        self.new = [[_corrupt(b, rng, extra, vocab) for b in bs] for bs in self.base]
        self.n = n
        self.stats = {side: self._statistics(getattr(self, side), ter) for side in ("base", "new")}

    def _statistics(self, bank: list[list[str]], ter: bool) -> dict[str, np.ndarray]:
        flat = [h for hs in bank for h in hs]
        refs = [r for r in self.refs for _ in range(VARIANTS)]
        shape = (self.n, VARIANTS)
        out = {"bleu": np.array(BLEUScorer().segment_statistics(flat, [[r] for r in refs]), float).reshape(*shape, -1),
               "rouge1_f1": np.array([s["rouge1"].fmeasure for s in RougeScorer(["rouge1"]).score_batch(flat, refs)]
                                     ).reshape(shape)}
        if ter:
            out["ter"] = np.array([r.statistics for r in TERScorer().batch(flat, [[r] for r in refs])],
                                  float).reshape(*shape, -1)
        return out

    def pick(self, side: str, score: str, choice: np.ndarray) -> np.ndarray:
        """Item i's statistics for its output number ``choice[i]``."""
        return self.stats[side][score][np.arange(self.n), choice]


@functools.lru_cache(maxsize=None)
def bank(n: int, extra: float, seed: int = 11, ter: bool = False) -> Bank:
    return Bank(n, extra, seed, ter)


def _row(name: str, higher: bool, base, new, idx: np.ndarray, rule: str = "calibrated",
         two_sided: bool = False) -> GateRow:
    """The gate's row as ``gating`` builds it (the one-sided p), or with ``two_sided`` the report's p."""
    r = paired_bootstrap(base, new, idx, p_value=rule)
    p = r.p_value if two_sided else r.p_one_sided
    return GateRow(name, higher, r.baseline, r.system, r.delta, r.delta_low, r.delta_high, p, n=base.n_items)


def _corpus_bleu(rows: np.ndarray) -> CorpusStatistic:
    return CorpusStatistic(rows.tolist(), bleu_from_statistics)


def _simulated(rng: np.random.Generator, n: int) -> list[tuple[str, bool, np.ndarray, np.ndarray]]:
    """Three simulated scores per item (a BERTScore-like F1, a judge's 1-5 rating, a latency in seconds,
    lower is better), both systems drawn from one distribution per item."""
    difficulty = rng.beta(2.0, 2.0, n)
    f1 = [np.clip(0.6 + 0.3 * difficulty + rng.normal(0, 0.05, n), 0, 1) for _ in range(2)]
    rating = [np.clip(np.rint(1 + 4 * difficulty + rng.normal(0, 0.8, n)), 1, 5) for _ in range(2)]
    latency = [np.exp(rng.normal(0, 0.3, n)) * (0.5 + difficulty) for _ in range(2)]
    return [("bertscore_f1", True, *f1), ("judge_rating", True, *rating), ("latency_s", False, *latency)]


def _family(b: Bank, seed: int, resamples: int, regressed: bool, **row_options) -> list[GateRow]:
    """The five gated scores of one seed: corpus BLEU and ROUGE-1 F1 from the bank, three simulated.

    Null (``regressed`` False): base and new each pick their outputs independently. Regressed: new is
    the regressed version of base's own output."""
    rng = np.random.default_rng(seed)
    base_choice = rng.integers(0, VARIANTS, b.n)
    new_side, new_choice = ("new", base_choice) if regressed else ("base", rng.integers(0, VARIANTS, b.n))
    idx = resample_indices(b.n, resamples, seed)
    rows = [_row("corpus_bleu", True, _corpus_bleu(b.pick("base", "bleu", base_choice)),
                 _corpus_bleu(b.pick(new_side, "bleu", new_choice)), idx, **row_options),
            _row("rouge1_f1", True, MeanStatistic(b.pick("base", "rouge1_f1", base_choice)),
                 MeanStatistic(b.pick(new_side, "rouge1_f1", new_choice)), idx, **row_options)]
    for name, higher, x, y in _simulated(rng, b.n):
        rows.append(_row(name, higher, MeanStatistic(x), MeanStatistic(y), idx, **row_options))
    return rows


# -- (a) the null: no difference, 300 seeds, 5 gated scores -------------------------------------------


@pytest.fixture(scope="module")
def null_families():
    b = bank(200, BLEU_LOSS)
    return [_family(b, seed, RESAMPLES, regressed=False) for seed in range(300)]


def test_under_the_null_holm_keeps_the_family_wise_rate_and_none_inflates_it(null_families):
    seeds = len(null_families)
    holm = sum(not decide(rows, "worse", "holm", ALPHA).passed for rows in null_families)
    bonferroni = sum(not decide(rows, "worse", "bonferroni", ALPHA).passed for rows in null_families)
    none = sum(not decide(rows, "worse", "none", ALPHA).passed for rows in null_families)
    bound = binomial_upper(seeds, ALPHA)                  # 27 of 300 for alpha 0.05 at 99.9%
    assert holm <= bound, f"Holm failed {holm} of {seeds} null seeds (bound {bound})"
    assert bonferroni <= holm                            # Holm is never less powerful than Bonferroni
    # uncorrected, 5 nearly independent scores each at about alpha: about 1 - 0.95**5 = 23% of the seeds
    assert none > bound and none > 2 * holm, (none, holm)
    assert none >= binomial_lower(seeds, 1 - (1 - ALPHA) ** 5), none


def test_the_gate_is_one_sided_at_alpha_and_the_report_two_sided_at_alpha(null_families):
    """Under the null the gate's one-sided p, with the difference on the tested side, falls below alpha
    in about alpha of the scores for each side; the report's two-sided p in about alpha of them all,
    and its verdict's side splits them. sacrebleu's p, read as the report read it before, rejects
    about 2 x alpha: the reason the report no longer uses it."""
    rows = [row for family in null_families for row in family]
    trials = len(rows)                                                 # 1,500 scores
    worse = sum(not decide([row], "worse", "none", ALPHA).passed for row in rows)
    better = sum(decide([row], "not-better", "none", ALPHA).passed for row in rows)
    for count in (worse, better):
        assert binomial_lower(trials, ALPHA) <= count <= binomial_upper(trials, ALPHA), (count, trials)
    b = bank(200, BLEU_LOSS)
    two_sided = [row for seed in range(300) for row in _family(b, seed, RESAMPLES, False, two_sided=True)]
    rejected = sum(row.p_raw < ALPHA for row in two_sided)
    assert binomial_lower(trials, ALPHA) <= rejected <= binomial_upper(trials, ALPHA), (rejected, trials)
    sacrebleu = [row for seed in range(300) for row in _family(b, seed, RESAMPLES, False, rule="sacrebleu")]
    assert sum(row.p_raw < ALPHA for row in sacrebleu) > binomial_upper(trials, ALPHA)


# -- (b) real losses: one corpus-BLEU point, one ROUGE-1 F1 point, 100 seeds -----------------------


@pytest.mark.parametrize("score, extra", [("corpus_bleu", BLEU_LOSS), ("rouge1_f1", ROUGE_LOSS)])
def test_a_one_point_loss_fails_the_gate_and_a_wider_margin_passes_it(score, extra):
    b = bank(500, extra)
    families = [_family(b, 1000 + seed, RESAMPLES, regressed=True) for seed in range(100)]
    losses = [next(r for r in rows if r.name == score).delta for rows in families]
    assert -0.013 < float(np.mean(losses)) < -0.007            # the simulated loss is one point
    failed = 0
    for rows in families:
        result = decide(rows, "worse", "holm", ALPHA)
        outcome = next(o for o in result.outcomes if o.name == score)
        failed += not outcome.passed
        assert result.passed == all(o.passed for o in result.outcomes)
    assert failed >= 95, f"{score}: the one-point loss failed the gate in only {failed} of 100 seeds"
    # the same loss within a margin of two points passes (the interval stays above -0.02) in every seed,
    # and the margin only decides that score
    margined = [decide(rows, "worse", "holm", ALPHA, margins={score: 0.02}) for rows in families]
    assert all(next(o for o in m.outcomes if o.name == score).passed for m in margined)
    # a margin narrower than the loss does not
    narrow = [decide(rows, "worse", "holm", ALPHA, margins={score: 0.002}) for rows in families]
    assert sum(not next(o for o in m.outcomes if o.name == score).passed for m in narrow) >= 95


# -- (c) lower is better: corpus TER and a latency -------------------------------------------------


def test_lower_is_better_scores_gate_in_their_direction():
    b = bank(120, 0.03, seed=5, ter=True)
    for seed in range(5):
        rng = np.random.default_rng(seed)
        choice = rng.integers(0, VARIANTS, b.n)
        idx = resample_indices(b.n, 300, seed)
        ter_base = CorpusStatistic(b.pick("base", "ter", choice).tolist(), ter_from_statistics)
        ter_new = CorpusStatistic(b.pick("new", "ter", choice).tolist(), ter_from_statistics)
        assert ter_new.value > ter_base.value                      # the regressed system makes more edits
        regressed = _row("corpus_ter", False, ter_base, ter_new, idx)
        improved = _row("corpus_ter", False, ter_new, ter_base, idx)
        # the same numbers read as higher-is-better would gate the other way round
        as_if_higher = dataclasses.replace(regressed, higher_is_better=True)
        assert not decide([regressed], "worse").passed
        assert decide([improved], "worse").passed and decide([improved], "not-better").passed
        assert decide([as_if_higher], "worse").passed and decide([as_if_higher], "not-better").passed
        # a margin on a lower-is-better score bounds the interval's high end
        assert decide([regressed], "worse", margins={"corpus_ter": regressed.high + 0.001}).passed
        assert not decide([regressed], "worse", margins={"corpus_ter": regressed.high - 0.001}).passed

        base_latency = np.exp(rng.normal(0, 0.3, b.n))
        slower = MeanStatistic(base_latency * np.exp(rng.normal(0.1, 0.05, b.n)))    # about 10% slower
        faster = MeanStatistic(base_latency * np.exp(rng.normal(-0.1, 0.05, b.n)))
        assert not decide([_row("latency_s", False, MeanStatistic(base_latency), slower, idx)], "worse").passed
        assert decide([_row("latency_s", False, MeanStatistic(base_latency), faster, idx)], "not-better").passed


# -- (d) corpus BLEU's gate against sacrebleu's paired bootstrap -----------------------------------


def _drop(texts, seed, share):
    rng = random.Random(seed)
    return [" ".join(w for w in t.split() if rng.random() > share) or t.split()[0] for t in texts]


@pytest.mark.parametrize("seed, share, swap", [(0, 0.10, False), (1, 0.04, False), (2, 0.01, False),
                                               (3, 0.10, True), (4, 0.0, False)])
def test_corpus_bleu_gate_agrees_with_sacrebleu_paired_bootstrap(monkeypatch, seed, share, swap):
    outputs, refs = realistic_pairs(80, seed)
    baseline, system = outputs, _drop(outputs, seed, share)
    if swap:
        baseline, system = system, baseline
    resamples, rng_seed = 500, 777 + seed
    monkeypatch.setenv("SACREBLEU_SEED", str(rng_seed))
    _, sacre = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": SacreBLEU()}, [refs],
                          test_type="bs", n_samples=resamples)()
    sacre_base, sacre_system = sacre["BLEU"]

    scorer = BLEUScorer()
    ours = [CorpusStatistic(scorer.segment_statistics(texts, [[r] for r in refs]), bleu_from_statistics)
            for texts in (baseline, system)]
    row = _row("corpus_bleu", True, *ours, resample_indices(len(refs), resamples, rng_seed), rule="sacrebleu")
    assert row.delta == pytest.approx((sacre_system.score - sacre_base.score) / 100, abs=1e-12)
    if share == 0.0:     # identical outputs: sacrebleu says 1/(R+1), ours 1.0 (no difference is never significant)
        assert row.p_raw == 1.0 and decide([row], "worse").passed
        return
    assert row.p_raw == pytest.approx(sacre_system.p_value, abs=1e-12)
    sacre_row = GateRow("corpus_bleu", True, sacre_base.score / 100, sacre_system.score / 100,
                        (sacre_system.score - sacre_base.score) / 100, None, None, sacre_system.p_value)
    for mode in ("worse", "not-better"):
        assert decide([row], mode).passed == decide([sacre_row], mode).passed
    if seed in (0, 3):   # both decisions are among the cases: a 10% drop of the words fails, the same as a gain passes
        assert decide([row], "worse").passed == swap
