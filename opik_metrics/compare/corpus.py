"""Corpus-level scores recomputed from per-item sufficient statistics, so that the bootstrap can
resample them: corpus BLEU (summed n-gram counts) and corpus perplexity (pooled NLL over tokens).
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from ..text.bleu import BLEUScorer
from ..text.bleu_types import BLEUStats
from .records import ExperimentRecords, ItemRecord

SENTENCE_BLEU = "bleu"
CORPUS_BLEU = "corpus_bleu"
PERPLEXITY = "perplexity"
CORPUS_PERPLEXITY = "corpus_perplexity"


def parse_bleu_signature(signature: str) -> dict[str, Any]:
    """BLEUScorer options from a BLEU signature (``nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|...``)."""
    fields = dict(part.split(":", 1) for part in signature.split("|") if ":" in part)
    options: dict[str, Any] = {}
    if "tok" in fields:
        options["tokenize"] = fields["tok"]
    if "case" in fields:
        options["lowercase"] = fields["case"] == "lc"
    if "eff" in fields:
        options["effective_order"] = fields["eff"] == "yes"
    if "smooth" in fields:
        method, _, value = fields["smooth"].partition("[")
        options["smooth_method"] = method
        if value:
            options["smooth_value"] = float(value.rstrip("]"))
    if "order" in fields:
        options["max_ngram_order"] = int(fields["order"])
    if "w" in fields:
        options["weights"] = [float(w) for w in fields["w"].split("/")]
    return options


def corpus_bleu_scorer(experiment: ExperimentRecords) -> tuple[BLEUScorer, str | None]:
    """The scorer that made the experiment's corpus BLEU, and a note when it had to be assumed.

    The stored corpus signature gives every option; without one (Opik keeps no score metadata),
    the sentence signature gives tokeniser, case, order and weights, and corpus BLEU's defaults
    (``exp`` smoothing, no effective order, as ``sacrebleu.corpus_bleu``) the rest.
    """
    stored = experiment.experiment_score_metadata.get(CORPUS_BLEU, {}).get("signature")
    if stored:
        return BLEUScorer(**parse_bleu_signature(str(stored))), None
    sentence = str(experiment.config.get("metrics", {}).get(SENTENCE_BLEU) or "")
    options = {k: v for k, v in parse_bleu_signature(sentence).items()
               if k in ("tokenize", "lowercase", "max_ngram_order", "weights")}
    note = (f"{experiment.name}: no corpus BLEU signature recorded; corpus BLEU recomputed with "
            f"sacrebleu's corpus defaults (smooth exp, no effective order) and {options or 'default options'}")
    return BLEUScorer(**options), note


def bleu_stats(metadata: dict | None) -> BLEUStats | None:
    """Sentence BLEU's sufficient statistics from its score metadata (None when absent)."""
    if not metadata or not all(k in metadata for k in ("counts", "totals", "sys_len", "ref_len")):
        return None
    return BLEUStats(tuple(int(c) for c in metadata["counts"]), tuple(int(t) for t in metadata["totals"]),
                     int(metadata["sys_len"]), int(metadata["ref_len"]))


def bleu_metadata_from_texts(scorer: BLEUScorer, output: str, references: Sequence[str]) -> dict[str, Any]:
    """Sufficient statistics recomputed from the texts, in the shape sentence BLEU's metadata has."""
    stats = scorer.stats(output, list(references))
    return {"counts": list(stats.correct), "totals": list(stats.total), "sys_len": stats.sys_len,
            "ref_len": stats.ref_len}


def perplexity_sums(metadata: dict | None) -> tuple[float, float] | None:
    """(NLL sum, token count) of one item's perplexity, when its metadata carries them."""
    if not metadata or "nll_sum" not in metadata or "n_tokens" not in metadata:
        return None
    return float(metadata["nll_sum"]), float(metadata["n_tokens"])


class PooledPerplexity:
    """exp(sum of NLL / sum of tokens) over items: corpus perplexity, resampled by item."""

    def __init__(self, sums: Sequence[tuple[float, float]]) -> None:
        if not sums:
            raise ValueError("corpus perplexity needs at least one item with NLL and token counts")
        self._nll = np.array([s[0] for s in sums], dtype=np.float64)
        self._tokens = np.array([s[1] for s in sums], dtype=np.float64)
        self.n_items = len(sums)
        self.value = _pooled(self._nll.sum(), self._tokens.sum())

    def resampled(self, idx: np.ndarray) -> np.ndarray:
        if idx.ndim != 2 or idx.shape[1] != self.n_items:
            raise ValueError(f"idx: expected shape (resamples, {self.n_items}), got {idx.shape}")
        nll = self._nll[idx].sum(axis=1)
        tokens = self._tokens[idx].sum(axis=1)
        return np.array([_pooled(a, b) for a, b in zip(nll, tokens)])


def _pooled(nll: float, tokens: float) -> float:
    if tokens <= 0:
        return 1.0  # no token to score: perplexity 1 by the pack's convention
    mean = nll / tokens
    return math.exp(mean) if mean < 709 else math.inf


def item_bleu_stats(item: ItemRecord) -> BLEUStats | None:
    return bleu_stats(item.metadata.get(SENTENCE_BLEU)) if SENTENCE_BLEU in item.scores else None


def item_perplexity_sums(item: ItemRecord) -> tuple[float, float] | None:
    return perplexity_sums(item.metadata.get(PERPLEXITY)) if PERPLEXITY in item.scores else None
