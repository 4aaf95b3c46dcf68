"""ROUGE as an Opik metric: precision, recall and F for every requested ROUGE type."""
from __future__ import annotations

from array import array
from itertools import chain, cycle
from typing import Any, Callable, Iterator, Sequence

from opik_metrics.core import CorpusFacts, ScoreFacts, corpus_facts, mean_formula
from opik_metrics.core.versions import package_version
from opik_metrics.metric_kit import positional_results
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.base import ReferenceMetric, ScoreResult
from opik_metrics.metric_kit.shared_metadata import SharedMetadata
from opik_metrics.text.rouge.scorer import RougeKernel, RougeScorer

_PARTS = (("precision", "precision"), ("recall", "recall"), ("f1", "fmeasure"))


class ROUGE(ReferenceMetric):
    """ROUGE-N (1..9), L, Lsum, W, S and SU with rouge-score's options and ROUGE-1.5.5's extras.

    Returns ``<type>_precision``, ``<type>_recall`` and ``<type>_f1`` for each rouge type
    (e.g. ``rouge1_f1``); numbers equal rouge-score's for rouge1..9, rougeL and rougeLsum. A
    ``name`` other than ``rouge`` prefixes every score (``ROUGE(name="stem")`` gives
    ``stem_rouge1_f1``), so that two configurations can score one experiment. The corpus score
    is the mean over items (``corpus_<first type>_f1``, every mean in its metadata). An item's
    ``metadata`` (signature, ``n_references``, ``rouge_type``) is a read-only dict shared by the
    results of every item alike (``SharedMetadata``): assign a copy to change it.

    ``rouge155=True`` gives instead, per item, the numbers the ROUGE-1.5.5 perl script prints for
    the pair (``-n N -w 1.2 -2 d -u -c 95 -r 1 -p 0.5 -t 0``, ``-f A`` for
    ``multi_reference="average"``, ``-f B`` for ``"best"``, ``-s`` for ``remove_stopwords``, ``-m``
    for ``use_stemmer``): its
    tokenisation (ASCII lowercase, ``[a-z0-9]`` runs), one sentence per line, rougeLsum = its
    ROUGE-L (union LCS by sentence), rougeW by sentence with the reference length weighted twice
    in the recall, rougeSU without the last token's unigram, R and P rounded to 5 decimals and F
    from the rounded values, and ``use_stemmer`` is the script's ``-m`` (WordNet 2.0's exception
    lists, then its own Porter stemmer; ``rouge155_stemmer="porter"``: without the lists, as a run
    whose exception database is empty). Its ROUGE-L is ``rougeLsum`` (the default types there are
    rouge1, rouge2 and rougeLsum; ``rougeL`` is refused). The default mode follows rouge-score (N,
    L, Lsum) and Lin (2004) (W, S, SU). Where they differ, reference "police killed the gunman", prediction "police kill the gunman", w = 2:
    the WLCS hits are f(1) + f(2) = 5 (runs "police", "the gunman"); default rougeW P = R =
    sqrt(5/16) = 0.559, 1.5.5 rougeW P = 0.55902 but R = sqrt(5 / f(f(4))) = sqrt(5/256) = 0.13975;
    rougeSU: default (3 + 3) / (6 + 4) = 0.6, 1.5.5 (3 + 2) / (6 + 3) = 0.55556 (unigrams of
    "police killed the" only). See ``opik_metrics.text.rouge.rouge155``.

    ``multi_reference`` with several references: ``"best"`` (the highest F, as rouge-score),
    ``"average"`` (counts added over the references, ROUGE-1.5.5's ``-f A``) or ``"mean"`` (the mean
    over the references of each one's P, R and F, as BARTScore's and SummEval's code). The corpus
    score is the mean over items of the item's value, whatever the mode.

    ``engine``: ``"auto"`` (rouge-score-rs where it computes the options, the same bits, every core
    in this process), ``"python"`` (ours, spread over worker processes by ``workers``) or ``"compiled"``.

    Examples:
        >>> from opik_metrics import ROUGE
        >>> [(r.name, round(r.value, 4)) for r in ROUGE(rouge_types=["rouge1"], track=False).score("a cat", "a cat sat")]
        [('rouge1_precision', 1.0), ('rouge1_recall', 0.6667), ('rouge1_f1', 0.8)]
        >>> m = ROUGE(rouge_types=["rougeSU"], rouge155=True, track=False)
        >>> [r.value for r in m.score("police kill the gunman", "police killed the gunman")]
        [0.55556, 0.55556, 0.55556]
    """

    card = MetricCard(
        "rouge", "ROUGE-N/L/Lsum/W/S/SU precision, recall, F", group="ROUGE options", options=(
            Option("--rouge-type", "rouge_types", action="append",
                   help="rouge1..rouge9, rougeL, rougeLsum, rougeW, rougeS4, rougeSU4, rougeS, rougeSU "
                        "(repeatable; default rouge1 rouge2 rougeL, with --rouge155 rouge1 rouge2 rougeLsum)"),
            Option("--use-stemmer", "use_stemmer", action="store_true", help="Porter stemming, as rouge-score (with --rouge155: the script's -m)"),
            Option("--remove-stopwords", "remove_stopwords", action="store_true",
                   help="remove ROUGE-1.5.5's SMART stopwords (-s)"),
            Option("--rouge155", "rouge155", action="store_true",
                   help="the ROUGE-1.5.5 perl script's numbers (its tokens, W and SU, sentences on lines, "
                        "5-decimal rounding) instead of rouge-score's and Lin (2004)'s"),
            Option("--rouge155-stemmer", "rouge155_stemmer", choices=("wordnet+porter", "porter"),
                   help="with --rouge155 --use-stemmer: wordnet+porter is the script's -m (WordNet 2.0's exception "
                        "lists, then its Porter stemmer; the default), porter the same without the lists"),
            Option("--rouge-tokenizer", "tokenizer", choices=("default", "unicode"),
                   help="default: rouge-score's [a-z0-9] words (other letters dropped); unicode: words of any "
                   "script, each CJK character a token"),
        ))
    default_name = "rouge"

    def __init__(
        self,
        rouge_types: Sequence[str] | None = None,
        use_stemmer: bool = False,
        remove_stopwords: bool = False,
        tokenizer: str | Callable[[str], list[str]] = "default",
        alpha: float | None = None,
        beta: float | None = None,
        wlcs_weight: float = 1.2,
        multi_reference: str = "best",
        rouge155: bool = False,
        rouge155_stemmer: str | None = None,
        engine: str = "auto",
        name: str = "rouge",
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        if isinstance(rouge_types, str):
            rouge_types = (rouge_types,)
        options: dict[str, Any] = dict(use_stemmer=use_stemmer, remove_stopwords=remove_stopwords, tokenizer=tokenizer,
                       alpha=alpha, beta=beta, wlcs_weight=wlcs_weight, multi_reference=multi_reference,
                       rouge155=rouge155, rouge155_stemmer=rouge155_stemmer, engine=engine)
        self._scorer = RougeScorer(None if rouge_types is None else tuple(rouge_types), **options)
        self._kernel = RougeKernel.of(self._scorer.rouge_types, options)
        self.rouge_types = self._scorer.rouge_types
        self.signature = self._scorer.signature().extended(nltk=package_version("nltk"))
        super().__init__(name=name, track=track, project_name=project_name)
        self._flat_names = [self._scored_name(f"{rtype}_{label}") for rtype in self.rouge_types
                            for label, _ in _PARTS]
        self._shared_metadata: dict[int, list[SharedMetadata]] = {}

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self._scored_name(f"{t}_{label}"), bounds=(0.0, 1.0), part=label != "f1")
                for t in self.rouge_types for label, _ in _PARTS]            # the order results come in

    def _corpus_facts(self) -> CorpusFacts:
        fields = [self._scored_name(f"{t}_{label}") for t in self.rouge_types for label, _ in _PARTS]
        main = self._scored_name(f"{self.rouge_types[0]}_f1")
        return corpus_facts(f"corpus_{main}", main, [*fields, "items"], mean_formula,
                            {"field": fields.index(main)}, bounds=(0.0, 1.0), is_mean=True)

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        return self._results(outputs, references, self._scorer.score_batch(outputs, references, flat=True))

    def _batch_kernel(self, references: list[list[str]]) -> RougeKernel | None:
        """None for a batch rouge-score-rs scores: it spreads it over every core itself, in this
        process (one it leaves to our engine, a multi-reference mean, goes to worker processes)."""
        return None if self._scorer.handled_by_compiled(references) else self._kernel

    def _results_from_kernel(self, outputs: list[str], references: list[list[str]], values: array) -> list:
        """``values``: the kernel's ``score_batch(..., flat=True)``, as an array."""
        return self._results(outputs, references, values.tolist())

    def _results(self, outputs: list[str], references: list[list[str]],
                 flat: list[float]) -> list[list[ScoreResult]]:
        """Three results a type for each item, from all items' P, R, F values in one flat list.

        Built in one pass over the flat values (``positional_results``), with shared metadata."""
        width = len(self._flat_names)
        counts = set(map(len, references))
        metadata: Iterator[SharedMetadata]
        if len(counts) == 1:
            metadata = cycle(self._metadata_of(counts.pop()))
        else:
            metadata = chain.from_iterable(map(self._metadata_of, map(len, references)))
        built = positional_results.results(cycle(self._flat_names), flat, metadata)
        items = [built[k:k + width] for k in range(0, len(built), width)]
        self._explain_zeros(outputs, references, flat, items)
        return items

    def _explain_zeros(self, outputs: list[str], references: list[list[str]], flat: list[float],
                       items: list[list[ScoreResult]]) -> None:
        """Give the results of an item that scores 0 because a text has no tokens the reason why.
        Only items with an F of 0 are looked at; one reference scoring above 0 anywhere has tokens,
        and so has the output, so a single-reference item needs every F at 0 to be looked at."""
        f_values, types = flat[2::3], len(self.rouge_types)
        seen, at = -1, -1
        while True:
            try:
                at = f_values.index(0.0, at + 1)
            except ValueError:
                return
            k = at // types
            if k == seen:
                continue
            seen = k
            zeros = f_values[k * types:(k + 1) * types].count(0.0)
            if zeros == types or len(references[k]) > 1:
                reason = self._empty_reason(outputs[k], references[k])
                if reason is not None:
                    for result in items[k]:
                        result.reason = reason

    def _empty_reason(self, output: str, references: list[str]) -> str | None:
        """Why an all-zero item is zero, when the cause is text with no tokens."""
        if not self._scorer.tokenizer(output):
            return "output has no tokens after tokenisation: ROUGE is 0 by definition"
        empty = [k for k, ref in enumerate(references) if not self._scorer.tokenizer(ref)]
        if len(empty) == len(references):
            return "reference has no tokens after tokenisation: ROUGE is 0 by definition"
        if empty:
            return f"references {empty} have no tokens after tokenisation and score 0"
        return None

    def _metadata_of(self, n_references: int) -> list[SharedMetadata]:
        """The metadata of each result of an item with ``n_references`` (P, R and F of a type share
        one): read-only dicts shared by every such item, where a dict per item would be a third of
        the objects the metric adds to its engine."""
        shared = self._shared_metadata.get(n_references)
        if shared is None:
            if len(self._shared_metadata) >= 64:       # distinct reference counts are few; never grow without end
                self._shared_metadata.clear()
            shared = self._shared_metadata[n_references] = [
                meta for rtype in self.rouge_types
                for meta in [SharedMetadata(signature=self.signature, n_references=n_references,
                                            rouge_type=rtype)] * 3]
        return shared
