"""Pure-Python ROUGE: rouge-score 0.1.2's numbers (ROUGE-N, L, Lsum) several times faster, plus
ROUGE-1.5.5's W, S and SU, its alpha/beta F-measure, stopword removal and model averaging.

Two entry points: ``score`` for one item and ``score_batch`` for many. An item is scored by the
per-item path (``per_item.py``); a large batch by the batch path (``batch.py``: ROUGE-N and L on
arrays), with identical numbers. ``rouge155=True`` gives instead the numbers the ROUGE-1.5.5 perl
script prints for each pair (``rouge155.py``).

Usage::

    scorer = RougeScorer(("rouge1", "rouge2", "rougeL"), use_stemmer=True)
    scorer.score("the prediction", ["a reference", "another reference"])["rougeL"].fmeasure

Several references (``multi_reference``): ``"best"``, the reference with the highest F (rouge-score's
``score_multi``); ``"average"``, match counts and totals added over the references, then divided
(ROUGE-1.5.5's ``-f A``); ``"mean"``, the arithmetic mean over the references of each one's P, R
and F (the F of a reference from its own P and R, not the F of the mean P and R), what BARTScore's
and SummEval's code report.
"""
from __future__ import annotations

import pickle
from array import array
from itertools import chain
from typing import TYPE_CHECKING, Any, Callable, Literal, Mapping, Sequence, overload

from opik_metrics.text.rouge.compiled import CompiledRouge, compiled_version
from opik_metrics.text.rouge.counts import FMeasure, Score, resolve_alpha
from opik_metrics.text.rouge.per_item import ItemScorer, build_measure
from opik_metrics.text.rouge.rouge155 import Rouge155Engine
from opik_metrics.text.rouge.types import LCS, NGRAM, RougeType, parse_rouge_type
from opik_metrics.text.tokenizers.rouge155_stemmer import ROUGE155_STEMMERS
from opik_metrics.text.tokenizers.rouge155 import Rouge155Tokenizer
from opik_metrics.text.tokenizers.words import make_tokenizer
from opik_metrics.core.inputs import check_bool, check_text, reference_list, text_batch
from opik_metrics.core.signature import Signature
from opik_metrics.core.versions import ours as _package_version

if TYPE_CHECKING:
    from opik_metrics.text.rouge.batch import BatchScorer

__all__ = ["RougeScorer", "RougeKernel", "RougeType", "Score", "parse_rouge_type", "MULTI_REFERENCE_MODES"]

MULTI_REFERENCE_MODES = ("best", "average", "mean")
ENGINES = ("auto", "python", "compiled")
DEFAULT_TYPES = ("rouge1", "rouge2", "rougeL")
ROUGE155_DEFAULT_TYPES = ("rouge1", "rouge2", "rougeLsum")    # the script's ROUGE-L is rougeLsum
BATCH_MIN_ITEMS = 100    # below it, item by item: the arrays' fixed cost a call is more than they save (docs/speed.md)


class RougeScorer:
    """Scores predictions against references for a fixed set of ROUGE types and options.

    ``rouge_types`` None: rouge1, rouge2 and rougeL; with ``rouge155=True`` rouge1, rouge2 and rougeLsum.

    ``rouge155=True``: each item's numbers as the ROUGE-1.5.5 perl script prints them (its
    tokenisation for ``tokenizer="default"``; ``multi_reference`` "average" = ``-f A``, "best" =
    ``-f B``, "mean" = the mean of the script's number for each reference alone; ``alpha``/``beta``
    = ``-p``; ``wlcs_weight`` = ``-w``; ``use_stemmer`` = ``-m``); see ``rouge155.py``. Its ROUGE-L
    is ``rougeLsum``: ``rougeL`` is refused. ``rouge155_stemmer``, only with ``rouge155=True``,
    ``use_stemmer=True`` and the default tokenizer: ``"wordnet+porter"`` (the default: ``-m`` with
    WordNet's exception lists) or ``"porter"`` (``-m`` with an empty exception database).

    ``engine``: ``"auto"`` scores on rouge-score-rs where it computes the options (see
    ``compiled.py``; the same bits), else here; ``"python"`` always here; ``"compiled"`` requires
    options it computes (a batch with several references an item under ``"average"`` or ``"mean"``
    still scores here: rouge-score-rs only keeps the best reference).
    """

    def __init__(self, rouge_types: str | Sequence[str] | None = None, *,
                 use_stemmer: bool = False, remove_stopwords: bool = False,
                 tokenizer: str | Callable[[str], list[str]] = "default", alpha: float | None = None,
                 beta: float | None = None, wlcs_weight: float = 1.2, multi_reference: str = "best",
                 rouge155: bool = False, rouge155_stemmer: str | None = None, engine: str = "auto") -> None:
        rouge155 = check_bool(rouge155, "rouge155")
        if engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(map(repr, ENGINES))}, got {engine!r}")
        if rouge_types is None:
            rouge_types = ROUGE155_DEFAULT_TYPES if rouge155 else DEFAULT_TYPES
        if isinstance(rouge_types, str):
            rouge_types = (rouge_types,)
        parsed = [parse_rouge_type(name) for name in rouge_types]
        if not parsed:
            raise ValueError("rouge_types is empty: give at least one ROUGE type")
        unique = list({rouge_type.name: rouge_type for rouge_type in parsed}.values())
        if isinstance(wlcs_weight, bool) or not isinstance(wlcs_weight, (int, float)) \
                or not wlcs_weight > 1 or wlcs_weight == float("inf"):
            raise ValueError(f"wlcs_weight must be a finite number > 1, got {wlcs_weight!r}")
        use_stemmer = check_bool(use_stemmer, "use_stemmer")        # "yes" or "no" would both be truthy
        remove_stopwords = check_bool(remove_stopwords, "remove_stopwords")
        if rouge155 and any(t.kind == LCS for t in unique):
            raise ValueError("rouge155=True has no rougeL (ROUGE-L of the text on one line, which no paper reports): "
                             "ask for rougeLsum, the script's ROUGE-L (sentence by sentence, one per line)")
        script_tokens = rouge155 and isinstance(tokenizer, str) and tokenizer == "default"
        self._stemmer = self._script_stemmer(rouge155_stemmer, script_tokens and use_stemmer)
        if multi_reference not in MULTI_REFERENCE_MODES:
            raise ValueError(
                f"multi_reference must be one of {', '.join(map(repr, MULTI_REFERENCE_MODES))}, "
                f"got {multi_reference!r}"
            )
        self._alpha = resolve_alpha(alpha, beta)
        self._alpha_text = self._describe_f(alpha, beta)
        if script_tokens:  # "default" is the script's own tokenisation here
            self._tokenizer = Rouge155Tokenizer(use_stemmer, remove_stopwords, self._stemmer or "wordnet+porter")
        else:
            self._tokenizer = make_tokenizer(tokenizer, use_stemmer=bool(use_stemmer),
                                             remove_stopwords=bool(remove_stopwords))
        self.rouge_types: tuple = tuple(rouge_type.name for rouge_type in unique)
        self.use_stemmer = bool(use_stemmer)
        self.remove_stopwords = bool(remove_stopwords)
        self.wlcs_weight = float(wlcs_weight)
        self.multi_reference = multi_reference
        self._fmeasure = FMeasure(self._alpha)
        self.rouge155 = rouge155
        self.parsed_types: tuple = tuple(unique)
        self._items = ItemScorer([build_measure(t, self.wlcs_weight) for t in unique], self._tokenizer,
                                 self._fmeasure, multi_reference)
        self._batch: BatchScorer | None = None
        self._compiled = None if engine == "python" else CompiledRouge.of(
            self.rouge_types, use_stemmer=self.use_stemmer, remove_stopwords=self.remove_stopwords,
            tokenizer=tokenizer, alpha=self._alpha, multi_reference=multi_reference, rouge155=rouge155)
        if engine == "compiled" and self._compiled is None:
            raise ValueError(
                "engine='compiled' needs rouge-score-rs installed (pip install rouge-score-rs) and options it "
                "computes: rouge1..9, rougeL, rougeLsum, the default tokenizer, no stopword removal, F1 (no "
                "alpha/beta), not rouge155" if compiled_version() is not None else
                "engine='compiled' needs rouge-score-rs: pip install rouge-score-rs")
        self.engine = "compiled" if self._compiled is not None else "python"
        self._rouge155 = None
        if rouge155:
            self._rouge155 = Rouge155Engine(
                unique, self._tokenizer, alpha=0.5 if self._alpha is None else self._alpha,
                weight=self.wlcs_weight, multi_reference=multi_reference)

    @staticmethod
    def _script_stemmer(rouge155_stemmer: str | None, applies: bool) -> str | None:
        """The ROUGE-1.5.5 stemmer's name when the script's tokenisation stems, else None;
        ValueError for a ``rouge155_stemmer`` that is unknown or would change nothing."""
        if rouge155_stemmer is not None and rouge155_stemmer not in ROUGE155_STEMMERS:
            raise ValueError(f"rouge155_stemmer must be one of {', '.join(map(repr, ROUGE155_STEMMERS))}, "
                             f"got {rouge155_stemmer!r}")
        if rouge155_stemmer is not None and not applies:
            raise ValueError(f"rouge155_stemmer={rouge155_stemmer!r} needs rouge155=True, use_stemmer=True and "
                             "tokenizer='default' (it is the ROUGE-1.5.5 script's -m)")
        return (rouge155_stemmer or ROUGE155_STEMMERS[0]) if applies else None

    def _describe_f(self, alpha, beta) -> str:
        if self._alpha is None:
            return "1"
        return f"alpha={alpha:g}" if alpha is not None else f"beta={beta:g}"

    def score(self, prediction: str, references: str | Sequence[str]) -> dict[str, Score]:
        """``{rouge type: Score}`` of ``prediction`` against one reference or several (combined per
        ``multi_reference``)."""
        prediction, references = check_text(prediction, "prediction"), _references(references)
        if self._rouge155 is not None:
            return self._rouge155.score(prediction, references)
        if self._compiled is not None and self._compiled.handles([references]):
            return self._as_scores(self._compiled.flat_values([prediction], [references]))
        return self._as_scores(self._items.values(prediction, references))

    @overload
    def score_batch(self, predictions: Sequence[str], references: Sequence[str | Sequence[str]],
                    *, flat: Literal[False] = ...) -> list[dict[str, Score]]: ...

    @overload
    def score_batch(self, predictions: Sequence[str], references: Sequence[str | Sequence[str]],
                    *, flat: Literal[True]) -> list[float]: ...

    def score_batch(self, predictions, references, *, flat=False):
        """``score`` of each (prediction, references) pair; the two sequences have equal length.

        ``flat=True`` gives the same numbers as one list of floats, P, R and F of each type in
        ``rouge_types`` order, item after item: what adapters build results from, with no object
        per score. A large batch is counted on arrays (same numbers, faster).
        """
        checked, lists = text_batch(predictions, references, "ROUGE", drop_none=False)
        values = self._flat_values(checked, lists)
        if flat:
            return values
        width = 3 * len(self.rouge_types)
        return [self._as_scores(values[k:k + width]) for k in range(0, len(values), width)]

    def handled_by_compiled(self, references: Sequence[Sequence[str]]) -> bool:
        """Whether rouge-score-rs scores a batch with these references (else our engine does)."""
        return self._compiled is not None and self._compiled.handles(references)

    def _flat_values(self, predictions: list[str], references: list[list[str]]) -> list[float]:
        if self._rouge155 is not None:
            return [x for prediction, refs in zip(predictions, references)
                    for score in self._rouge155.score(prediction, refs).values() for x in score]
        if self._compiled is not None and self._compiled.handles(references):
            return self._compiled.flat_values(predictions, references)
        if not self._on_arrays(len(predictions)):
            return list(chain.from_iterable(map(self._items.values, predictions, references)))
        if self._batch is None:
            from opik_metrics.text.rouge.batch import BatchScorer     # numpy: only for a large batch

            self._batch = BatchScorer(self.parsed_types, self._tokenizer, self._fmeasure, self.multi_reference,
                                      self.wlcs_weight)
        return self._batch.values(predictions, references).ravel().tolist()

    def _on_arrays(self, items: int) -> bool:
        """Whether a batch of ``items`` is counted on arrays: large enough, with a ROUGE-N or ROUGE-L
        type among the ones asked for (the arrays count nothing else)."""
        return items >= BATCH_MIN_ITEMS and any(t.kind in (NGRAM, LCS) for t in self.parsed_types)

    def _as_scores(self, values: list[float]) -> dict[str, Score]:
        """``{rouge type: Score}`` from one item's flat P, R, F values."""
        return {name: Score(*values[3 * k:3 * k + 3]) for k, name in enumerate(self.rouge_types)}

    @property
    def tokenizer(self) -> Callable[[str], list]:
        """The tokenizer scoring uses (``text -> list[str]``; no tokens: the text scores 0 against anything)."""
        return self._tokenizer

    @property
    def alpha(self) -> float | None:
        """The F-measure's alpha; None for rouge-score's balanced F1."""
        return self._alpha

    def signature(self) -> Signature:
        """Everything that determines the numbers, e.g. for experiment metadata and reproducibility.

        The ROUGE-1.5.5 mode adds ``mode:rouge155`` after the metric (the default mode has no
        ``mode`` field, so its signatures are unchanged). Where the script's tokenisation stems,
        ``stem`` names its stemmer (``wordnet+porter`` or ``porter``) instead of ``yes``, the nltk
        Porter stemmer of records made before it.
        """
        mode = {"mode": "rouge155"} if self.rouge155 else {}
        stem = self._stemmer or ("yes" if self.use_stemmer else "no")
        compiled = {"rouge_score_rs": compiled_version()} if self._compiled is not None else {}
        return Signature({
            "metric": "rouge", **mode, "types": ",".join(self.rouge_types), "tok": self._tokenizer.name,
            "stem": stem, "stop": "yes" if self.remove_stopwords else "no",
            "f": self._alpha_text, "multi": self.multi_reference, "w": f"{self.wlcs_weight:g}",
            "version": _package_version(), **compiled,
        }, formats={"metric": "{}"})

    def __repr__(self) -> str:
        return f"RougeScorer({self.signature()!r})"


def _references(references: Any, index: int | None = None) -> list[str]:
    """One item's references (a str or a non-empty sequence of str) as a list."""
    return reference_list(references, "ROUGE", index, drop_none=False)


class RougeKernel:
    """A picklable recipe of a ``RougeScorer``: what worker processes run on slices of a large batch
    (each builds the scorer once and hands back ``score_batch(..., flat=True)``, as an array)."""

    def __init__(self, rouge_types: Sequence[str], options: Mapping[str, Any]) -> None:
        self.rouge_types, self.options = tuple(rouge_types), dict(options)
        self._scorer: RougeScorer | None = None

    @classmethod
    def of(cls, rouge_types: Sequence[str], options: Mapping[str, Any]) -> "RougeKernel | None":
        """The kernel, or None when its options cannot travel to another process (a custom
        tokenizer that does not pickle, such as a lambda)."""
        kernel = cls(rouge_types, options)
        try:
            pickle.dumps(kernel)
        except Exception:  # any pickling failure: the batch stays in this process
            return None
        return kernel

    def __reduce__(self) -> tuple:
        return (RougeKernel, (self.rouge_types, self.options))

    def __call__(self, outputs: Sequence[str], references: Sequence[list[str]]) -> array:
        """The slice's flat values as an ``array("d")``: it crosses the process boundary as one buffer."""
        if self._scorer is None:
            self._scorer = RougeScorer(self.rouge_types, **self.options)
        return array("d", self._scorer.score_batch(outputs, references, flat=True))
