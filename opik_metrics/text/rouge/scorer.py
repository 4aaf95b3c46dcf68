"""Pure-Python ROUGE: rouge-score 0.1.2's numbers (ROUGE-N, L, Lsum) several times faster, plus
ROUGE-1.5.5's W, S and SU, its alpha/beta F-measure, stopword removal and model averaging.

``rouge155=True`` gives instead the numbers the ROUGE-1.5.5 perl script prints for each pair (its
tokenisation, sentence-level L and W, its SU and W definitions, 5-decimal rounding): see
``opik_metrics.text.rouge.rouge155``.

Usage::

    scorer = RougeScorer(("rouge1", "rouge2", "rougeL"), use_stemmer=True)
    scorer.score("the prediction", ["a reference", "another reference"])["rougeL"].fmeasure
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Sequence

from opik_metrics.text.rouge.counts import FMeasure, Score, counts_to_score, counts_to_values, pool, resolve_alpha
from opik_metrics.text.rouge.measures import build_measure
from opik_metrics.text.rouge.prepared import PreparedText
from opik_metrics.text.rouge.rouge155 import Rouge155Engine
from opik_metrics.text.rouge.types import LCS, NGRAM, RougeType, parse_rouge_type
from opik_metrics.text.tokenizers.rouge155 import Rouge155Tokenizer
from opik_metrics.text.tokenizers.words import make_tokenizer
from opik_metrics.core.signature import Signature
from opik_metrics.core.versions import ours as _package_version

if TYPE_CHECKING:
    import numpy as np

__all__ = ["RougeScorer", "RougeType", "Score", "parse_rouge_type", "MULTI_REFERENCE_MODES"]

MULTI_REFERENCE_MODES = ("best", "average")
BATCH_MIN_ITEMS = 100    # below it, item by item: the arrays' fixed cost a call is more than they save (docs/speed.md)


def _require_str(value, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}")
    return value


def _reference_list(references) -> list:
    """One reference string or a non-empty sequence of them, as a list; TypeError / ValueError otherwise."""
    if isinstance(references, str):
        return [references]
    if isinstance(references, (bytes, bytearray)) or not isinstance(references, Sequence):
        raise TypeError(
            f"references must be a str or a sequence of str, got {type(references).__name__}"
        )
    if len(references) == 0:
        raise ValueError("references is empty: give at least one reference text")
    for index, reference in enumerate(references):
        _require_str(reference, f"references[{index}]")
    return list(references)


class RougeScorer:
    """Scores predictions against references for a fixed set of ROUGE types and options.

    ``rouge155=True``: each item's numbers as the ROUGE-1.5.5 perl script prints them (its
    tokenisation for ``tokenizer="default"``; ``multi_reference`` "average" = ``-f A``, "best" =
    ``-f B``; ``alpha``/``beta`` = ``-p``; ``wlcs_weight`` = ``-w``); see ``rouge155.py``.
    """

    def __init__(self, rouge_types=("rouge1", "rouge2", "rougeL"), *, use_stemmer=False,
                 remove_stopwords=False, tokenizer="default", alpha=None, beta=None,
                 wlcs_weight=1.2, multi_reference="best", rouge155=False):
        if isinstance(rouge_types, str):
            rouge_types = (rouge_types,)
        parsed = [parse_rouge_type(name) for name in rouge_types]
        if not parsed:
            raise ValueError("rouge_types is empty: give at least one ROUGE type")
        unique = list({rouge_type.name: rouge_type for rouge_type in parsed}.values())
        if isinstance(wlcs_weight, bool) or not isinstance(wlcs_weight, (int, float)) \
                or not wlcs_weight > 1 or wlcs_weight == float("inf"):
            raise ValueError(f"wlcs_weight must be a finite number > 1, got {wlcs_weight!r}")
        for option, value in (("use_stemmer", use_stemmer), ("remove_stopwords", remove_stopwords),
                              ("rouge155", rouge155)):
            if not isinstance(value, bool):      # "yes" or "no" would both be truthy
                raise ValueError(f"{option} must be True or False, got {value!r}")
        if multi_reference not in MULTI_REFERENCE_MODES:
            raise ValueError(
                f"multi_reference must be one of {', '.join(map(repr, MULTI_REFERENCE_MODES))}, "
                f"got {multi_reference!r}"
            )
        self._alpha = resolve_alpha(alpha, beta)
        self._alpha_text = self._describe_f(alpha, beta)
        if rouge155 and tokenizer == "default":  # "default" is the script's own tokenisation here
            self._tokenizer = Rouge155Tokenizer(use_stemmer, remove_stopwords)
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
        self.measures: list = [(rouge_type.name, *build_measure(rouge_type, self.wlcs_weight))
                               for rouge_type in unique]
        self._batch = None
        self._rouge155 = None
        if rouge155:
            self._rouge155 = Rouge155Engine(
                unique, self._tokenizer, alpha=0.5 if self._alpha is None else self._alpha,
                weight=self.wlcs_weight, multi_reference=multi_reference)

    def _describe_f(self, alpha, beta) -> str:
        if self._alpha is None:
            return "1"
        return f"alpha={alpha:g}" if alpha is not None else f"beta={beta:g}"

    def tokenize(self, text: str) -> list:
        """The tokens scoring uses for ``text`` (empty list: the text scores 0 against anything)."""
        return self._tokenizer(_require_str(text, "text"))

    def score(self, prediction: str, references) -> dict:
        """Scores of ``prediction`` against one reference or several (combined per ``multi_reference``)."""
        if self._rouge155 is not None:
            return self._rouge155.score(_require_str(prediction, "prediction"), _reference_list(references))
        return self._as_scores(self.item_values(_require_str(prediction, "prediction"),
                                                _reference_list(references), self.measures))

    def score_batch(self, predictions: Sequence[str], references: Sequence) -> list:
        """``score`` for each (prediction, references) pair; the two sequences must have equal length.
        Large batches are counted together on arrays (``values_many``): same numbers, faster."""
        if isinstance(predictions, str) or isinstance(references, str):
            raise TypeError("score_batch takes sequences: a list of predictions and one of references")
        if len(predictions) != len(references):
            raise ValueError(
                f"{len(predictions)} predictions but {len(references)} references: lengths must match"
            )
        checked = [_require_str(p, f"predictions[{k}]") for k, p in enumerate(predictions)]
        lists = [_reference_list(refs) for refs in references]
        return list(map(self._as_scores, self.rows_many(checked, lists)))

    def _as_scores(self, values: list) -> dict:
        """``{rouge type: Score}`` from one item's flat P, R, F values."""
        return {name: Score(*values[3 * k:3 * k + 3]) for k, name in enumerate(self.rouge_types)}

    def score_values(self, prediction: str, references: list) -> list:
        """``score`` as flat floats, P, R and F of each type in ``rouge_types`` order, for checked
        input (a str and a non-empty list of str): what the Opik metric builds its results from,
        without a Score object per type."""
        if self._rouge155 is None:
            return self.item_values(prediction, references, self.measures)
        scores = self.score(prediction, references)
        return [x for name in self.rouge_types for s in (scores[name],) for x in (s.precision, s.recall, s.fmeasure)]

    def values_many(self, predictions: list, references: list) -> "np.ndarray":
        """``score_values`` of many items as one float64 array, a row per item, identical values:
        ROUGE-N and ROUGE-L counted for all items together on token-id arrays (``batch.py``)."""
        import numpy as np

        if len(predictions) != len(references):
            raise ValueError(f"{len(predictions)} predictions but {len(references)} reference lists: lengths must match")
        if not all(references):
            empty = next(k for k, refs in enumerate(references) if not refs)
            raise ValueError(f"references[{empty}] is empty: give at least one reference text")
        if not self._on_arrays(len(predictions)):
            return np.array(self._item_by_item(predictions, references), dtype=np.float64).reshape(
                len(predictions), 3 * len(self.rouge_types))
        if self._batch is None:
            from opik_metrics.text.rouge.batch import BatchScorer

            self._batch = BatchScorer(self)
        return self._batch.values(predictions, references)

    def rows_many(self, predictions: list, references: list) -> list:
        """``values_many`` as a list of rows (lists of float); a small batch never imports numpy
        (what a short command-line run would pay for nothing)."""
        if not self._on_arrays(len(predictions)):
            return self._item_by_item(predictions, references)
        return self.values_many(predictions, references).tolist()

    def _on_arrays(self, items: int) -> bool:
        """Whether a batch of ``items`` is counted on arrays: large enough, in the default mode, with a
        ROUGE-N or ROUGE-L type among the ones asked for (the arrays count nothing else)."""
        return (self._rouge155 is None and items >= BATCH_MIN_ITEMS
                and any(t.kind in (NGRAM, LCS) for t in self.parsed_types))

    def _item_by_item(self, predictions: list, references: list) -> list:
        return [self.score_values(prediction, refs) for prediction, refs in zip(predictions, references)]

    def item_values(self, prediction: str, references: list, measures: list) -> list:
        """P, R, F of each of ``measures`` (``self.measures`` entries) for one checked item, in the
        default mode."""
        tokenize, fmeasure = self._tokenizer, self._fmeasure
        prepared = PreparedText(prediction, tokenize)
        values: list = []
        if len(references) == 1:
            reference = PreparedText(references[0], tokenize)
            for _, measure, root in measures:
                values += counts_to_values(measure(prepared, reference), fmeasure, root)
            return values
        others = [PreparedText(reference, tokenize) for reference in references]
        for _, measure, root in measures:
            all_counts = [measure(prepared, reference) for reference in others]
            if self.multi_reference == "average":
                values += counts_to_values(pool(all_counts), fmeasure, root)
            else:
                best = _best(counts_to_score(c, fmeasure, root) for c in all_counts)
                values += (best.precision, best.recall, best.fmeasure)
        return values

    @property
    def tokenizer(self):
        """The tokenizer scoring uses (a callable ``text -> list[str]``)."""
        return self._tokenizer

    @property
    def alpha(self):
        """The F-measure's alpha; None for rouge-score's balanced F1."""
        return self._alpha

    def signature(self) -> Signature:
        """Everything that determines the numbers, e.g. for experiment metadata and reproducibility.

        The ROUGE-1.5.5 mode adds ``mode:rouge155`` after the metric (the default mode has no
        ``mode`` field, so its signatures are unchanged).
        """
        mode = {"mode": "rouge155"} if self.rouge155 else {}
        return Signature({
            "metric": "rouge", **mode, "types": ",".join(self.rouge_types), "tok": self._tokenizer.name,
            "stem": "yes" if self.use_stemmer else "no", "stop": "yes" if self.remove_stopwords else "no",
            "f": self._alpha_text, "multi": self.multi_reference, "w": f"{self.wlcs_weight:g}",
            "version": _package_version(),
        }, formats={"metric": "{}"})

    def __repr__(self) -> str:
        return f"RougeScorer({self.signature()!r})"


def _best(scores) -> Score:
    """Highest F-measure, the first one on ties (rouge-score's ``score_multi`` / numpy argmax)."""
    best = None
    for score in scores:
        if best is None or score.fmeasure > best.fmeasure:
            best = score
    return best
