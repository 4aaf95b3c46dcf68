"""BERTScore as an Opik metric: BERTPrecision, BERTRecall and BERTF1 per item, equal to
bert_score 0.3.13's numbers, with concurrent ``score`` calls gathered into batched passes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from opik_metrics.metric_kit.microbatch import MicroBatcher
from opik_metrics.metric_kit.multi_reference import MEAN, check_mode
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.core import CorpusFacts, ScoreFacts, corpus_facts, mean_formula
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult
from opik_metrics.core.inputs import require_references, require_text

if TYPE_CHECKING:
    from opik_metrics.neural.bertscore.engine import BertScore

NAMES = ("BERTPrecision", "BERTRecall", "BERTF1")


class BERTScore(ReferenceMetric):
    """BERTScore with bert_score's options and defaults (``model=None``: roberta-large, layer 17,
    for English); ``idf=True`` needs ``idf_references``, e.g. every reference of the dataset.

    Emits ``BERTPrecision``, ``BERTRecall`` and ``BERTF1``; a ``name`` other than ``bertscore``
    prefixes them (``BERTScore(name="minilm")`` gives ``minilm_BERTF1``). The corpus score is
    the mean over items (bert_score's system score), ``corpus_BERTF1``.

    ``multi_reference``: ``"max"`` (default, bert_score's: P, R and F each the highest over the
    references, after which any rescaling) or ``"mean"``: P, R and F each the mean over the
    references of the single-reference value (``bert_score.score([output], [reference])`` for each;
    an empty reference counts its 0), as papers that average over references (BARTScore's SummEval
    rows) report it; the corpus score is then the mean over items of these means, and the signature
    says ``multi:mean``. ``best_reference`` (the reference of the highest F, which ``explain``
    explains) is in the metadata under ``"max"`` only.

    ``dtype="bfloat16"`` (or ``"float16"`` on a GPU) runs the encoder in half precision; matching
    stays in float32 (docs/metrics.md states the difference). Texts are embedded ``batch_size`` at a
    time on CPU; on a GPU each forward pass is filled to ``batch_tokens`` padded tokens (16,384
    unless given; given on CPU, it applies there too).

    Examples:
        >>> from opik_metrics import BERTScore
        >>> metric = BERTScore(model="packaged:minilm", track=False)   # all-MiniLM-L6-v2, offline
        >>> [(r.name, round(r.value, 3)) for r in metric.score("the cat sat on the mat", "a cat was sitting on the mat")]
        [('BERTPrecision', 0.912), ('BERTRecall', 0.894), ('BERTF1', 0.903)]
        >>> BERTScore(lang="en")   # roberta-large from the hub  # doctest: +SKIP
    """

    card = MetricCard(
        "bertscore", "BERTPrecision, BERTRecall, BERTF1 (bert_score's numbers)", group="BERTScore options",
        loads_model=True, extra="neural", every_reference="idf_references", every_reference_if="idf", options=(
            Option("--bertscore-model", "model", help="hub id, local path or packaged:minilm "
                   "(default: bert_score's model for --lang, roberta-large for English)"),
            Option("--num-layers", "num_layers", kind=int,
                   help="layer whose embeddings are used (default: bert_score's table)"),
            Option("--lang", "lang",
                   help="language of the texts: picks bert_score's default model and baseline (default %(default)s)"),
            DEVICE, DTYPE,
            Option("--idf", "idf", action="store_true", help="idf weights from every reference in the files"),
            Option("--rescale-with-baseline", "rescale_with_baseline", action="store_true",
                   help="rescale with bert_score's baseline for --lang and the model"),
            Option("--baseline-path", "baseline_path", implies=(("rescale_with_baseline", True),),
                   help="your own baseline file (LAYER,P,R,F lines); implies rescaling"),
            Option("--batch-size", "batch_size", kind=int,
                   help="sentences embedded at a time (default %(default)s); lower it if the model runs out of memory"),
            Option("--batch-tokens", "batch_tokens", kind=int,
                   help="padded tokens per forward pass instead of --batch-size (default: 16384 on a GPU, unused on CPU)"),
        ))
    default_name = "bertscore"
    #: The rules for several references, the default (bert_score's) first.
    multi_reference_modes = ("max", MEAN)

    def __init__(
        self,
        model: str | None = None,
        model_type: str | None = None,
        num_layers: int | None = None,
        idf: bool = False,
        idf_references: Sequence[str | Sequence[str]] | None = None,
        rescale_with_baseline: bool = False,
        baseline_path: str | None = None,
        lang: str = "en",
        batch_size: int = 64,
        device: str | None = None,
        dtype: str | None = None,
        batch_tokens: int | None = None,
        multi_reference: str = "max",
        name: str = "bertscore",
        track: bool = True,
        project_name: str | None = None,
        max_wait_ms: float = 5.0,
    ) -> None:
        if model is not None and model_type is not None and model != model_type:
            raise ValueError(f"model={model!r} and model_type={model_type!r} disagree; "
                             "model_type is an alias of model, pass one of them")
        self.multi_reference = check_mode(multi_reference, self.multi_reference_modes)
        # torch: only when a metric is built
        from opik_metrics.neural.bertscore.engine import BertScoreEngine
        self.engine = BertScoreEngine(
            model=model if model is not None else model_type, num_layers=num_layers, lang=lang, idf=idf,
            idf_references=idf_references, rescale_with_baseline=rescale_with_baseline,
            baseline_path=baseline_path, batch_size=batch_size, device=device, dtype=dtype,
            batch_tokens=batch_tokens,
        )
        self.signature = self.engine.signature
        if self.multi_reference != "max":
            self.signature = self.signature.extended(multi=self.multi_reference)
        self._metadata = {"signature": self.signature, **self.engine.settings()}
        self._batcher: MicroBatcher[tuple[str, list[str]], list[ScoreResult]] = MicroBatcher(
            self._score_pairs, max_batch=batch_size, max_wait_s=max_wait_ms / 1000.0)
        super().__init__(name=name, track=track, project_name=project_name)
        self._names = [self._scored_name(n) for n in NAMES]

    def _score_facts(self) -> list[ScoreFacts]:
        p, r, f = (self._scored_name(n) for n in NAMES)
        return [ScoreFacts(p, part=True), ScoreFacts(r, part=True), ScoreFacts(f)]   # the order results come in

    def _corpus_facts(self) -> CorpusFacts:
        fields = [self._scored_name(n) for n in NAMES]
        return corpus_facts(f"corpus_{fields[2]}", fields[2], [*fields, "items"], mean_formula, {"field": 2},
                            is_mean=True)

    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output against its reference(s); concurrent calls share one forward pass."""
        out = require_text(output, "output")
        refs = require_references(reference, "reference")
        return self._batcher.submit((out, refs))

    def _score_pairs(self, pairs: list[tuple[str, list[str]]]) -> list[list[ScoreResult]]:
        return self._storable(self._score_items([p[0] for p in pairs], [p[1] for p in pairs]))

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        scored = self.engine.score(outputs, references, self.multi_reference)
        return [self._results(s, len(refs)) for s, refs in zip(scored, references)]

    def _results(self, s: BertScore, n_refs: int) -> list[ScoreResult]:
        metadata = {**self._metadata, "n_references": n_refs}
        if self.multi_reference == "max":
            metadata["best_reference"] = s.best_reference
        return [ScoreResult(name=n, value=v, reason=s.reason, metadata=metadata)
                for n, v in zip(self._names, (s.precision, s.recall, s.f1))]

    def explain(self, output: str, reference: str | Sequence[str]):
        """Tokens, similarity matrix and greedy alignment; with several references, the one
        with the highest F1 is explained (its index is in the explanation's notes)."""
        out = require_text(output, "output")
        refs = require_references(reference, "reference")
        k = 0
        if len(refs) > 1:
            k = self.engine.score([out], [refs])[0].best_reference
        explanation = self.engine.explain(out, refs[k])
        if len(refs) > 1:
            from dataclasses import replace
            explanation = replace(explanation, notes=explanation.notes + (f"explains reference {k} "
                                                                          "(highest F1)",))
        return explanation

    def save_heatmap(self, output: str, reference: str | Sequence[str], path: str) -> str:
        """Write the similarity heatmap of ``output`` vs ``reference`` to a PNG at ``path``."""
        from opik_metrics.neural.bertscore.plot import save_heatmap
        return save_heatmap(self.explain(output, reference), path)
