"""BERTScore engine on transformers: greedy cosine matching of contextual token embeddings,
with bert_score's defaults, idf weights, multi-reference max and baseline rescaling.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

import torch

from opik_metrics.core import require_batch, require_text
from opik_metrics.core.signature import Signature
from opik_metrics.core.versions import ours, package_version
from opik_metrics.neural.bertscore.baseline import Baseline, builtin_baseline_path, load_baseline
from opik_metrics.neural.bertscore.embed import Embedder, TextEmbedding
from opik_metrics.neural.bertscore.idf import TokenWeights
from opik_metrics.neural.bertscore.layers import check_layer, default_layer, default_model, table_key
from opik_metrics.neural.bertscore.match import Side, greedy_scores
from opik_metrics.neural.bertscore.tokens import special_token_ids
from opik_metrics.neural.models.encoders import load_encoder
from opik_metrics.neural.models.registry import resolve_model

if TYPE_CHECKING:
    from opik_metrics.neural.bertscore.explain import Explanation


#: Rules for several references: bert_score's maximum, or the mean of single-reference scores.
MULTI_REFERENCE_MODES = ("max", "mean")


@dataclass(frozen=True)
class BertScore:
    """One item's BERTScore (after the max, or mean, over references and any rescaling) and why, if odd."""

    precision: float
    recall: float
    f1: float
    best_reference: int                      # index of the reference with the highest raw F1
    notes: tuple[str, ...] = field(default=())  # reasons: empty text, truncation, weight fallback

    @property
    def reason(self) -> str | None:
        return "; ".join(self.notes) if self.notes else None


class BertScoreEngine:
    """Scores candidates against references as bert_score 0.3.13 does; ``model=None`` means
    bert_score's model for ``lang`` (roberta-large for English) at its tuned layer."""

    def __init__(
        self,
        model: str | None = None,
        num_layers: int | None = None,
        lang: str = "en",
        idf: bool = False,
        idf_references: Sequence[str | Sequence[str]] | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        batch_size: int = 64,
        device: str | torch.device | None = None,
        dtype: str | torch.dtype | None = None,
        cache_mb: float = 256,
        batch_tokens: int | None = None,
    ) -> None:
        self.lang = lang
        self.model_name = model if model is not None else default_model(lang)
        resolved = resolve_model(self.model_name)
        self.model_key = table_key(resolved)
        self.num_layers = check_layer(num_layers) if num_layers is not None else default_layer(resolved)
        _check_idf(idf, idf_references)
        if baseline_path is not None and not rescale_with_baseline:
            raise ValueError("baseline_path is given but rescale_with_baseline=False; "
                             "pass rescale_with_baseline=True to rescale with it")
        self.encoder = load_encoder(self.model_name, self.num_layers, device=device, dtype=dtype)
        self.embedder = Embedder(self.encoder, batch_size=batch_size, cache_mb=cache_mb, batch_tokens=batch_tokens)
        specials = special_token_ids(self.encoder.tokenizer)
        corpus = None
        if idf:
            assert idf_references is not None
            corpus = [t.ids for t in self.embedder.tokenize(_flatten(idf_references))]
        self.weights = TokenWeights(specials, corpus)
        self.baseline = self._baseline(rescale_with_baseline, baseline_path)
        self.signature = self._signature()

    # --- configuration -------------------------------------------------------------------
    def _baseline(self, rescale: bool, path: str | None) -> Baseline | None:
        if not rescale:
            return None
        if path is not None:
            return load_baseline(path, self.num_layers)
        builtin = builtin_baseline_path(self.lang, self.model_key)
        if builtin is None:
            raise ValueError(
                f"bert_score ships no baseline for model {self.model_key or self.model_name!r} and "
                f"lang {self.lang!r}; pass baseline_path= (a 'LAYER,P,R,F' file) or turn rescaling off"
            )
        return load_baseline(builtin, self.num_layers, builtin=True)

    @property
    def idf(self) -> bool:
        return self.weights.idf

    def settings(self) -> dict[str, Any]:
        """What makes a number reproducible, as plain values (goes into ScoreResult metadata)."""
        return {
            "model": self.model_key or self.model_name,
            "model_source": self.encoder.resolved.source,
            "layer": self.num_layers,
            "idf": self.weights.fingerprint() if self.idf else False,
            "rescaled": self.baseline is not None,
            "baseline": self.baseline.label if self.baseline else None,
            "lang": self.lang,
            "max_length": self.encoder.max_length,
            "dtype": str(self.encoder.dtype).removeprefix("torch."),
            "versions": {"transformers": package_version("transformers"), "torch": package_version("torch"),
                         "bert-score": package_version("bert-score"), "opik-metrics": ours()},
        }

    def _signature(self) -> Signature:
        s = self.settings()
        tok = type(self.encoder.tokenizer).__name__ + ("+prefix-space" if self.embedder.prefix_space else "")
        v = s["versions"]
        return Signature({
            "bertscore": s["model"], "layer": s["layer"], "idf": s["idf"] or "no", "rescale": s["baseline"] or "no",
            "tok": tok, "max_len": s["max_length"], "dtype": s["dtype"], "attn": self.encoder.attn_implementation,
            "transformers": v["transformers"], "torch": v["torch"], "opik-metrics": v["opik-metrics"],
        }, formats={"layer": "L{}"})

    # --- scoring ---------------------------------------------------------------------------
    def score(self, candidates: Sequence[str], references: Sequence[str | Sequence[str]],
              multi_reference: str = "max") -> list[BertScore]:
        """One :class:`BertScore` per candidate; ``references[i]`` is a string or a list of strings.

        Several references: ``"max"`` is bert_score's rule (P, R and F each its highest over the
        references); ``"mean"`` each the mean over the references of its single-reference value (a
        reference that cannot be scored, as an empty one, counts its raw 0 as bert_score gives it)."""
        if multi_reference not in MULTI_REFERENCE_MODES:
            raise ValueError(f"multi_reference: expected one of {', '.join(MULTI_REFERENCE_MODES)}, "
                             f"got {multi_reference!r}")
        cands, refs = require_batch(candidates, references)
        assert refs is not None
        emb = self.embedder.embed([t for t in cands if t.strip()] + [r for rs in refs for r in rs if r.strip()])
        pair_c, pair_r, owners = [], [], []
        notes: list[list[str]] = [[] for _ in cands]
        sides: dict[str, tuple[Side | None, str | None]] = {}
        for i, (cand, ref_list) in enumerate(zip(cands, refs)):
            c_side, c_note = self.side(cand, emb, sides)
            if c_side is None:
                notes[i].append(f"output {c_note}: raw BERTScore set to 0 (as bert_score)")
                warnings.warn(f"BERTScore item {i}: output {c_note}; raw scores set to 0", stacklevel=2)
                continue
            if c_note:
                notes[i].append(f"output {c_note}")
            for k, ref in enumerate(ref_list):
                r_side, r_note = self.side(ref, emb, sides)
                label = "reference" if len(ref_list) == 1 else f"reference {k}"
                if r_note:
                    notes[i].append(f"{label} {r_note}" + (": raw BERTScore 0 for it" if r_side is None else ""))
                if r_side is not None:
                    pair_c.append(c_side)
                    pair_r.append(r_side)
                    owners.append((i, k))
        raw = greedy_scores(pair_c, pair_r)
        best = torch.zeros((len(cands), 3), dtype=torch.float64)  # empty text: raw 0, as bert_score
        has_pair = [False] * len(cands)
        best_ref = [0] * len(cands)
        best_f = [float("-inf")] * len(cands)
        mean = multi_reference == "mean"
        for (i, k), row in zip(owners, raw):
            if mean:
                best[i] = best[i] + row        # summed here, over the number of references below
            else:
                best[i] = torch.maximum(best[i], row) if has_pair[i] else row
            has_pair[i] = True
            if row[2].item() > best_f[i]:
                best_f[i], best_ref[i] = row[2].item(), k
        if mean:
            best = best / torch.tensor([[float(len(r))] for r in refs], dtype=torch.float64)
        return [self._result(best[i], best_ref[i], notes[i]) for i in range(len(cands))]

    def _result(self, row: torch.Tensor, best_ref: int, notes: list[str]) -> BertScore:
        p, r, f = (float(v) for v in row)
        if self.baseline is not None:
            p, r, f = self.baseline.rescale(p, r, f)
        return BertScore(p, r, f, best_ref, tuple(dict.fromkeys(notes)))

    def side(self, text: str, emb: dict[str, TextEmbedding],
             memo: dict[str, tuple[Side | None, str | None]]) -> tuple[Side | None, str | None]:
        """The text's vectors and normalised weights, or None and why it cannot be scored."""
        key = text.strip()
        if key in memo:
            return memo[key]
        if not key:
            memo[key] = (None, "is empty")
            return memo[key]
        e = emb[key]
        ids = e.tokens.ids
        w = self.weights.weights(ids).float()
        note = None
        if e.tokens.truncated:
            note = (f"truncated from {e.tokens.original_length} to {len(ids)} tokens "
                    f"(the model maximum)")
        if float(w.sum()) <= 0:
            content = torch.tensor([i not in self.weights.special_ids for i in ids], dtype=torch.float32)
            if float(content.sum()) == 0:
                memo[key] = (None, "has no tokens besides special tokens")
                return memo[key]
            w = content
            why = ("every token has idf 0 (each occurs in every idf reference): uniform weights used"
                   if self.idf else "all token weights are 0: uniform weights used")
            note = f"{note}; {why}" if note else why
        side = Side(e.vectors, w / w.sum())
        memo[key] = (side, note)
        return memo[key]

    def clear_cache(self) -> None:
        """Forget cached embeddings (e.g. to time a cold run)."""
        self.embedder.cache.clear()

    # --- explanation -------------------------------------------------------------------------
    def explain(self, candidate: str, reference: str) -> Explanation:
        """Tokens, the similarity matrix and the greedy alignment behind one pair's score."""
        from opik_metrics.neural.bertscore.explain import explain_pair
        return explain_pair(self, require_text(candidate, "output"), require_text(reference, "reference"))


def _flatten(texts: Sequence[str | Sequence[str]]) -> list[str]:
    out: list[str] = []
    for k, t in enumerate(texts):
        if isinstance(t, str):
            out.append(require_text(t, f"idf_references[{k}]"))
        elif isinstance(t, (list, tuple)) and all(isinstance(x, str) for x in t):
            out.extend(require_text(x, f"idf_references[{k}][{j}]") for j, x in enumerate(t))
        else:
            raise ValueError(f"idf_references[{k}]: expected a string or a list of strings, got {type(t).__name__}")
    return out


def _check_idf(idf: bool, idf_references: Any) -> None:
    if not isinstance(idf, bool):
        raise ValueError(f"idf must be True or False, got {idf!r}")
    if idf and idf_references is None:
        raise ValueError(
            "idf=True needs idf_references=[...]: the reference corpus to count document frequencies "
            "over (e.g. every reference of the dataset). Scoring one item at a time cannot supply it; "
            "bert_score with a single reference silently gives recall NaN and F1 0."
        )
    if idf_references is not None:
        if not idf:
            raise ValueError("idf_references is given but idf=False; pass idf=True to weight tokens by idf")
        if isinstance(idf_references, str) or not isinstance(idf_references, Sequence):
            raise ValueError("idf_references must be a list of reference strings (or of lists of strings)")
        if len(idf_references) == 0:
            raise ValueError("idf_references is empty: idf needs at least one reference text")
