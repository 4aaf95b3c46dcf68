"""UniEval as an Opik metric: one score in [0, 1] per dimension (a T5 evaluator's p(Yes) to a Boolean question)."""
from __future__ import annotations

from typing import Any, Sequence

from opik_metrics.core import MetricInputError, ScoreFacts, ours, require_text
from opik_metrics.metric_kit.base import ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.collector import collector_paused
from opik_metrics.metric_kit.conditioned import ConditionedMetric
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.metric_kit.source_input import DEFAULT_SOURCE_FIELD, read_source

TASKS = ("summarization", "dialogue", "data2text", "fact")


class UniEval(ConditionedMetric):
    """UniEval (Zhong et al., EMNLP 2022) as maszhongming/UniEval computes it: each dimension is a Boolean
    question (``utils.add_question``) put to a T5 evaluator, scored p(Yes) / (p(Yes) + p(No)) at the first
    decoder step; consistency and fluency are averaged over the output's sentences, dialogue engagingness
    summed over them, as ``metric/evaluator.py`` does. Results ``unieval_<dimension>`` and, with several
    dimensions, ``unieval_overall`` (their mean, the released evaluators' default).

    Args:
        model: the evaluator: ``MingZhong/unieval-sum`` (summarization, data-to-text), ``-dialog``,
            ``-fact``; None takes the task's own. A hub id or a local folder.
        task: summarization, dialogue, data2text or fact.
        dimensions: which to score (default: all of the task's).
        source_field: the scoring input holding the source (the document, the dialogue history).
        context_field: the scoring input holding a dialogue's fact.
        max_length: tokens per question (the released code's 1,024).

    Sentences are split with nltk's ``sent_tokenize`` when its English Punkt model is installed
    (``python -m nltk.downloader punkt_tab``), else with untrained Punkt; the signature says which.

    Examples:
        >>> from opik_metrics import UniEval
        >>> metric = UniEval(dimensions=["coherence"])   # MingZhong/unieval-sum  # doctest: +SKIP

        The question the evaluator is asked (no model: no T5 weights ship on PyPI):

        >>> from opik_metrics.neural.seq2seq.unieval import question
        >>> question("summarization", "coherence", "A cat sat.", {"source": "The cat sat on the mat."})
        'question: Is this a coherent summary to the document? </s> summary: A cat sat. </s> document: The cat sat on the mat.'
    """

    card = MetricCard(
        "unieval", "UniEval: a T5 evaluator's p(Yes) per dimension (coherence, consistency, fluency, relevance...)",
        needs_reference=False, loads_model=True, extra="neural", group="unieval options", options=(
            Option("--unieval-model", "model", help="T5 evaluator: hub id or local folder (default: the task's)"),
            Option("--unieval-task", "task", choices=TASKS, help="the task's questions (default %(default)s)"),
            Option("--unieval-dimension", "dimensions", action="append",
                   help="a dimension to score (repeatable; default: all of the task's)"),
            DEVICE, DTYPE,
        ))

    default_name = "unieval"

    def __init__(
        self,
        model: str | None = None,
        task: str = "summarization",
        dimensions: Sequence[str] | None = None,
        source_field: str = DEFAULT_SOURCE_FIELD,
        context_field: str = "context",
        max_length: int | None = None,
        batch_size: int | None = None,
        device: str | None = None,
        dtype: str | None = None,
        name: str = "unieval",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        from opik_metrics.neural.models.seq2seq_lm import Seq2SeqLM, load_seq2seq_lm
        from opik_metrics.neural.seq2seq.unieval import CHECKPOINTS, DIMENSIONS, UniEvalEngine, inputs_needed

        if task not in DIMENSIONS:
            raise ValueError(f"task: expected one of {', '.join(TASKS)}, got {task!r}")
        dims = tuple(DIMENSIONS[task]) if dimensions is None else (
            (dimensions,) if isinstance(dimensions, str) else tuple(dict.fromkeys(dimensions)))
        unknown = [d for d in dims if d not in DIMENSIONS[task]]
        if not dims or unknown:
            raise ValueError(f"dimensions: {task} has {', '.join(DIMENSIONS[task])}; got {list(dims)}")
        self.task, self.dimensions = task, dims
        self.needed = inputs_needed(task, dims)
        if not isinstance(context_field, str) or not context_field:
            raise ValueError(f"context_field must be a non-empty string, got {context_field!r}")
        self.context_field = context_field
        lm = model if isinstance(model, Seq2SeqLM) else load_seq2seq_lm(
            model or CHECKPOINTS[task], device=device, dtype=dtype, max_length=max_length)
        self.engine = UniEvalEngine(lm, task, dims, batch_size=batch_size)
        self.model_name = lm.name
        self.signature = self.engine.signature.extended(**{"opik-metrics": ours()})
        self._set_source_field(source_field)
        if "context" in self.needed:
            self.batch_fields = {**getattr(self, "batch_fields", {}), "contexts": context_field}
        super().__init__(name=name, track=track, project_name=project_name)

    @property
    def needs_source(self) -> bool:
        return "source" in self.needed

    @property
    def needs_reference(self) -> bool:
        return "reference" in self.needed

    def _names(self) -> list[str]:
        names = [f"unieval_{d}" for d in self.dimensions] + (["unieval_overall"] if len(self.dimensions) > 1 else [])
        return [self._scored_name(n) for n in names]

    def _main_scores(self) -> list[str]:
        return self._names()

    def _score_facts(self) -> list[ScoreFacts]:
        upper = {d: (None if d == "engagingness" else 1.0) for d in self.dimensions}   # a sum over sentences
        bound = None if "engagingness" in self.dimensions else 1.0
        return [ScoreFacts(n, bounds=(0.0, upper[d] if d in upper else bound))
                for n, d in zip(self._names(), [*self.dimensions, "overall"])]

    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output; a dialogue's fact comes from the ``context_field`` input."""
        out = require_text(output, "output")
        source = read_source(self.name, ignored_kwargs, self.source_field) if self.needs_source else None
        refs = self._references(reference)
        context = [self._read_context(ignored_kwargs.get(self.context_field))] if "context" in self.needed else None
        return self._storable(self._run([out], None if refs is None else [refs], None if source is None else [source],
                                        context, progress=False))[0]

    def score_batch(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                    sources: Sequence[Any] | None = None,
                    contexts: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """Score many items; ``contexts[i]``: item i's fact (dialogue engagingness and groundedness)."""
        outs, refs, srcs = self._validated(outputs, references, sources)
        context = None
        if "context" in self.needed:
            if contexts is None or isinstance(contexts, str) or len(contexts) != len(outs):
                raise MetricInputError(f"field {self.context_field!r}: {self.name}'s {self.task} dimensions "
                                       f"{', '.join(self.dimensions)} need one fact per output (contexts=[...])")
            context = [self._read_context(c, k) for k, c in enumerate(contexts)]
        if not outs:
            return []
        with collector_paused():
            return self._storable(self._run(outs, refs, srcs, context, progress=None))

    def _read_context(self, value: Any, item: int | None = None) -> str:
        if value is None:
            where = f"item {item}, " if item is not None else ""
            raise MetricInputError(f"{where}field {self.context_field!r}: missing; {self.name} needs a dialogue's fact")
        return require_text(value, self.context_field, item)

    def _score(self, outputs: list[str], references: list[list[str]] | None, sources: list[str] | None,
               progress: bool | None) -> list[list[ScoreResult]]:
        if "context" in self.needed:     # the corpus score of an experiment: its facts are not at hand here
            raise MetricInputError(f"{self.name}: {', '.join(self.dimensions)} need each item's fact: score with "
                                   "score_batch(..., contexts=[...])")
        return self._run(outputs, references, sources, None, progress)

    def _run(self, outputs: list[str], references: list[list[str]] | None, sources: list[str] | None,
             contexts: list[str] | None, progress: bool | None) -> list[list[ScoreResult]]:
        parts = []
        for k in range(len(outputs)):
            item: dict[str, str] = {}
            if sources is not None:
                item["source"] = sources[k]
            if references is not None:
                item["reference"] = references[k][0]
            if contexts is not None:
                item["context"] = contexts[k]
            parts.append(item)
        scored = self.engine.score(outputs, parts, progress=progress)
        out = []
        for s in scored:
            values = [s.scores[d] for d in self.dimensions]
            if len(values) > 1:
                values.append(sum(values) / len(values))
            metadata = {"signature": self.signature, "model": self.model_name, "sentences": s.sentences}
            notes = []
            if references is not None and any(len(r) > 1 for r in references):
                notes.append("UniEval asks about one reference: the first was used")
            if s.truncated:
                notes.append(f"the question of {', '.join(s.truncated)} was cut at the model's "
                             f"{self.engine.lm.max_length} tokens (as the released code cuts it)")
            reason = "; ".join(notes) or None
            out.append([ScoreResult(name=n, value=v, reason=reason, metadata=metadata)
                        for n, v in zip(self._names(), values)])
        return out
