"""The metric contract every metric of the pack follows, on top of Opik's ``BaseMetric``:
``score`` / ``score_batch`` give ScoreResults; ``facts`` states direction, scale, bounds, corpus
score and signature; ``corpus_score`` and ``experiment_score`` (for ``opik.evaluate``) give the
corpus score, from summable per-item statistics (``StatisticsMetric``: ``statistics`` /
``from_statistics``) or from the whole set at once (``WholeSetMetric``).
"""
from __future__ import annotations

import abc
import functools
import inspect
from typing import TYPE_CHECKING, Any, ClassVar, Mapping, NamedTuple, Sequence

import _opik   # Opik's own lightweight BaseMetric and ScoreResult: the full ``opik`` is imported only to track

from opik_metrics.core import (CorpusFacts, MetricFacts, MetricInputError, ScoreFacts, Signature, Statistics,
                               require_batch, require_references, require_text, resolve_formula)
from opik_metrics.core.extras import require_extra
from opik_metrics.metric_kit.card import MetricCard, register, with_constructor_defaults
from opik_metrics.metric_kit.collector import collector_paused
from opik_metrics.metric_kit.opik_results import scoring_inputs
from opik_metrics.metric_kit.server_range import SCORE_LIMIT, mark_unstorable, unsent, value_of

if TYPE_CHECKING:
    from opik_metrics.execution.kernels import Kernel

ScoreResult = _opik.ScoreResult      # the very class ``opik.evaluation.metrics.score_result`` exports


def _within_server_range(bounds: tuple[Any, Any]) -> bool:
    """Whether declared ``bounds`` keep every value within what an Opik server stores."""
    return all(isinstance(b, (int, float)) and abs(b) <= SCORE_LIMIT for b in bounds)


def _length(items: Any) -> int:
    """``len(items)``, 0 for what has none (``require_batch`` then says what is wrong)."""
    try:
        return len(items)
    except TypeError:
        return 0


class ExperimentItems(NamedTuple):
    """The test results of an experiment that give a metric its inputs: their positions, the
    inputs in the form ``statistics`` / ``corpus_score`` take them, and why each other one was left out."""

    positions: list[int]
    outputs: list[str]
    references: Any
    left_out: list[str]


_RESTORING = "_opik_metrics_restoring"     # __new__'s keyword for copy and pickle: no constructor call, no check


def _constructor_arguments(cls: type, args: tuple, kwargs: dict[str, Any]) -> dict[str, Any]:
    """The constructor arguments of a call, by name (a ``**kwargs`` constructor's own included), for
    ``check_installed``; a call the constructor cannot bind gives its keywords (the constructor says what is wrong)."""
    signature = inspect.signature(getattr(cls, "__init__"))      # the unbound function: self first
    try:
        bound = signature.bind_partial(None, *args, **kwargs).arguments
    except TypeError:
        return dict(kwargs)
    arguments: dict[str, Any] = {}
    for name, value in bound.items():
        kind = signature.parameters[name].kind
        if kind is inspect.Parameter.VAR_KEYWORD:
            arguments.update(value)
        elif kind is not inspect.Parameter.VAR_POSITIONAL:
            arguments[name] = value
    return arguments


class PackMetric(_opik.BaseMetric, abc.ABC):
    """A metric of this pack: Opik's ``BaseMetric`` plus the facts it states and its corpus score.

    It subclasses the lightweight ``BaseMetric`` the opik wheel ships (``_opik``, the base of
    ``opik.evaluation.metrics.BaseMetric``) so that scoring text never pays ``import opik`` (6 s);
    ``track=True`` adds what Opik's full class adds (see ``metric_kit/tracking.py``).

    A metric's corpus score comes either from summable per-item statistics (``StatisticsMetric``,
    the base of ``ReferenceMetric`` and ``ReferenceFreeMetric``) or from the whole set at once
    (``WholeSetMetric``). Subclasses set ``self.signature`` and say which scores they emit
    (``_score_facts``); ``facts`` is stated from these on first use, so a subclass may set its
    state before or after calling ``__init__``.
    """

    #: Direction of the main score; every score's own direction is in ``facts``.
    higher_is_better: bool = True
    #: Its entry in the catalog and its command-line options; a class with one registers itself.
    #: An option that gives no default takes the constructor's (``card.with_constructor_defaults``).
    card: ClassVar[MetricCard | None] = None
    #: The constructor's default ``name``: under it a multi-score metric's scores keep their plain
    #: names (``BERTF1``); under any other they are prefixed with it (``_scored_name``).
    default_name: ClassVar[str | None] = None
    signature: Signature

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        card = cls.__dict__.get("card")
        if card is not None:
            cls.card = with_constructor_defaults(card, cls)
            register(cls)

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # before any constructor body: a missing extra is one line, not a ModuleNotFoundError from an engine;
        # a copy or an unpickled metric (``__getnewargs_ex__``) was checked when it was built
        if kwargs.pop(_RESTORING, False) is not True:
            cls.check_installed(_constructor_arguments(cls, args, kwargs))
        return super().__new__(cls)

    def __getnewargs_ex__(self) -> tuple[tuple, dict[str, Any]]:
        return (), {_RESTORING: True}

    @classmethod
    def check_installed(cls, arguments: Mapping[str, Any]) -> None:
        """Raise ``MissingExtra`` (one line naming the extra) when the metric, built with these constructor
        arguments, needs an extra that is not installed: its card's ``extra``. The command line calls it
        before a run; a metric whose need depends on its arguments (METEOR's ``data=``) overrides it."""
        card = cls.card
        if card is not None and card.extra is not None:
            require_extra(card.extra, cls.__name__)

    def __init__(self, name: str, track: bool = True, project_name: str | None = None) -> None:
        if not isinstance(name, str) or not name.strip():
            raise ValueError(f"name: expected a non-empty string, got {name!r}")
        if not track and project_name is not None:
            raise ValueError("project_name can be set only when `track` is set to True")
        super().__init__(name=name, track=track, project_name=project_name)
        if track:
            from opik_metrics.metric_kit.tracking import track_scoring
            track_scoring(self, project_name, PackMetric)

    # -- what the metric states -------------------------------------------------------------

    @functools.cached_property
    def facts(self) -> MetricFacts:
        """Everything the metric states (direction, scale, bounds, corpus score, signature), made on
        first use from ``name``, ``signature`` and the ``_score_facts`` / corpus hooks."""
        return MetricFacts(metric=self.name, kind=f"{type(self).__module__}.{type(self).__qualname__}",
                           scores=tuple(self._score_facts()), higher_is_better=self.higher_is_better,
                           signature=self.signature, **self._corpus_facts_fields())

    @functools.cached_property
    def _range_checked(self) -> bool:
        """Whether results need a look against the server's range: not when the facts bound every
        score within it."""
        return not all(_within_server_range(f.bounds) for f in self.facts.scores)

    def _restate_facts(self) -> None:
        """Forget the facts so that they are stated again on next use (a metric whose signature
        changed: a corpus context fitted after it was built)."""
        for made in ("facts", "_range_checked"):
            self.__dict__.pop(made, None)

    @abc.abstractmethod
    def _score_facts(self) -> Sequence[ScoreFacts]:
        """The scores ``score`` emits, in the order it emits them (parts flagged ``part=True``)."""

    @abc.abstractmethod
    def _corpus_facts_fields(self) -> dict[str, Any]:
        """The corpus scores' part of ``facts``, as ``MetricFacts`` keyword arguments."""

    def _scored_name(self, default: str) -> str:
        """A score's name: ``default`` under the default metric name, else prefixed with ``name``
        so that two instances of one multi-score metric in one experiment stay apart."""
        return default if self.name == self.default_name else f"{self.name}_{default}"

    # -- scoring ----------------------------------------------------------------------------

    @abc.abstractmethod
    def score_batch(self, outputs: Sequence[str],
                    references: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """One ``list[ScoreResult]`` per item, in order."""

    def _storable(self, items: list[list[ScoreResult]]) -> list[list[ScoreResult]]:
        """``items`` with every result an Opik server cannot store marked failed (``server_range``);
        a metric whose facts bound all its scores within the server's range needs no look."""
        if self._range_checked:
            for results in items:
                mark_unstorable(results)
        return items

    # -- the corpus context ------------------------------------------------------------------

    @property
    def corpus_pending(self) -> bool:
        """Whether item scores still need a context fitted on the whole set first (CIDEr-D's
        document frequencies when not given); whoever scores a set in chunks then calls ``fit_corpus``."""
        return False

    def fit_corpus(self, references: Sequence[Any]) -> None:
        """Fit the corpus context on every reference of the set (one entry per item)."""
        raise MetricInputError(f"{self.name} has no corpus context to fit")

    # -- the corpus score --------------------------------------------------------------------

    @abc.abstractmethod
    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[Any] | None = None) -> ScoreResult | list[ScoreResult]:
        """The corpus score of aligned outputs and references (a list for a metric with several)."""

    def experiment_score(self, test_results: Sequence[Any]) -> ScoreResult | list[ScoreResult]:
        """The corpus score for ``opik.evaluate(experiment_scoring_functions=[...])``, made by
        ``_experiment_corpus``. A test result that cannot give the metric its inputs is left out,
        and the reason says which."""
        if not test_results:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one test result")
        made, left_out = self._experiment_corpus(test_results)
        if made is None:
            raise MetricInputError(f"the corpus score of {self.name}: no test result could be scored ({left_out[0]})")
        return self._noting(made, left_out, len(test_results))

    @abc.abstractmethod
    def _experiment_corpus(self, test_results: Sequence[Any]) -> tuple[ScoreResult | list[ScoreResult] | None,
                                                                       list[str]]:
        """The corpus score of ``test_results`` (None when none could be scored) and why each test
        result left out was (``_experiment_items`` finds both)."""

    def _experiment_items(self, test_results: Sequence[Any], positions: Sequence[int]) -> ExperimentItems:
        """The inputs of the test results at ``positions`` that give this metric its inputs."""
        kept, left_out = self._usable(test_results, positions)
        if not kept:
            return ExperimentItems([], [], None, left_out)
        outputs, references = self._experiment_inputs([test_results[k] for k in kept], kept)
        return ExperimentItems(kept, outputs, references, left_out)

    def _usable(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[int], list[str]]:
        """The positions whose test result gives this metric its inputs, and why each other one does not."""
        kept, left_out = [], []
        for k in positions:
            try:
                self._experiment_inputs([test_results[k]], [k])
            except MetricInputError as exc:
                left_out.append(str(exc))
            else:
                kept.append(k)
        return kept, left_out

    @staticmethod
    def _noting(made: ScoreResult | list[ScoreResult], left_out: Sequence[str],
                total: int) -> ScoreResult | list[ScoreResult]:
        """A corpus score whose reason says which test results were left out and why."""
        if left_out:
            shown = "; ".join(left_out[:3]) + ("; ..." if len(left_out) > 3 else "")
            note = f"{len(left_out)} of {total} test results left out: {shown}"
            for result in made if isinstance(made, list) else [made]:
                result.reason = f"{result.reason}; {note}" if result.reason else note
        return made

    @abc.abstractmethod
    def _experiment_inputs(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[str], Any]:
        """The outputs and references (or what stands for them) of test results, validated; a
        MetricInputError names the item (its position) and the field."""


class StatisticsMetric(PackMetric):
    """A metric whose corpus score is made from summable per-item statistics (sacrebleu's
    ``_extract_corpus_statistics`` / ``_compute_score_from_stats``): ``statistics`` gives one per
    item, ``from_statistics`` the corpus score of their sum, and ``corpus_score`` is exactly
    ``from_statistics(sum(statistics(...)))``. The bootstrap resamples them; Ray reduces them.

    Subclasses say how the corpus score is made (``_corpus_facts``; None: the metric has none).
    """

    def _corpus_facts_fields(self) -> dict[str, Any]:
        return {"corpus": self._corpus_facts(), "more_corpora": tuple(self._more_corpus_facts())}

    def _corpus_facts(self) -> CorpusFacts | None:
        """How the corpus score is made from the items' statistics (None: no corpus score)."""
        return None

    def _more_corpus_facts(self) -> Sequence[CorpusFacts]:
        """Further corpus scores from the same statistics (a suite's: COCO's corpus Bleu_1..3, ...)."""
        return ()

    def _require_corpus(self) -> CorpusFacts:
        if self.facts.corpus is None:
            raise MetricInputError(f"{self.name} has no corpus score")
        return self.facts.corpus

    def _owns(self, result: ScoreResult) -> bool:
        """Whether ``result`` was made by this configuration (its signature), not another metric's."""
        return ((not result.scoring_failed or unsent(result))
                and (result.metadata or {}).get("signature") == self.signature)

    def item_statistics(self, results: Sequence[ScoreResult]) -> Statistics:
        """The statistics of one item from its ScoreResults (as ``score`` returned them, or as Opik
        logged them beside other metrics' results: only this configuration's results count)."""
        corpus = self._require_corpus()
        by_name = {r.name: r for r in results if self._owns(r)}
        if corpus.is_mean:
            return Statistics(corpus.fields, (*(value_of(by_name[f]) for f in corpus.fields[:-1]), 1))
        carrier = by_name.get(corpus.carrier)
        metadata = carrier.metadata if carrier is not None else None
        if metadata is None or "statistics" not in metadata:
            raise MetricInputError(f"{self.name}: no {corpus.carrier!r} result with statistics among {list(by_name)}")
        return Statistics(corpus.fields, tuple(metadata["statistics"]))

    def statistics(self, outputs: Sequence[str], references: Sequence[Any] | None = None) -> list[Statistics]:
        """One summable statistics object per item (sum them for any subset of the corpus). An item
        that failed (METEOR over its bound) has none: a MetricInputError names it and its reason."""
        stats = []
        for k, results in enumerate(self.score_batch(outputs, references)):
            try:
                stats.append(self.item_statistics(results))
            except MetricInputError:
                failed = next((r for r in results if r.scoring_failed and not unsent(r)), None)
                if failed is None:
                    raise
                raise MetricInputError(f"{self.name}: item {k} could not be scored ({failed.reason}); a corpus "
                                       "score needs every item's statistics: leave the item out") from None
        return stats

    def corpus_value(self, total: Statistics) -> float:
        """The corpus score's value from summed statistics (the formula its facts name)."""
        corpus = self._require_corpus()
        if total.fields != corpus.fields:
            raise MetricInputError(f"{self.name}: statistics of fields {total.fields} are not this metric's "
                                   f"({corpus.fields})")
        return resolve_formula(corpus.formula)(total.values, **corpus.options)

    def from_statistics(self, total: Statistics) -> ScoreResult:
        """The corpus ScoreResult from statistics summed over items."""
        corpus = self._require_corpus()
        metadata: dict[str, Any] = {"statistics": list(total.values), "signature": self.signature}
        if corpus.is_mean:
            n = total.values[-1]
            metadata["means"] = {f: v / n for f, v in zip(corpus.fields[:-1], total.values)}
        result = ScoreResult(name=corpus.name, value=self.corpus_value(total), reason=self._corpus_reason(total),
                             metadata=metadata)
        return mark_unstorable([result])[0]

    def _corpus_reason(self, total: Statistics) -> str | None:
        """Why a corpus score takes a defined value instead of a computed one (None: it does not)."""
        return None

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[Any] | None = None) -> ScoreResult | list[ScoreResult]:
        """The corpus score: exactly ``from_statistics(sum(statistics(outputs, references)))`` (a list
        for a metric with one corpus score per key)."""
        stats = self.statistics(outputs, references)
        if not stats:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        return self.from_statistics(sum(stats[1:], stats[0]))

    def _experiment_corpus(self, test_results: Sequence[Any]) -> tuple[ScoreResult | list[ScoreResult] | None,
                                                                       list[str]]:
        """Reuses the item results Opik already logged (same name and signature) and scores only the
        missing ones."""
        stats = [self._logged_statistics(test_result) for test_result in test_results]
        items = self._experiment_items(test_results, [k for k, s in enumerate(stats) if s is None])
        if items.positions:
            for k, item_stats in zip(items.positions, self.statistics(items.outputs, items.references)):
                stats[k] = item_stats
        present = [s for s in stats if s is not None]
        return (self.from_statistics(sum(present[1:], present[0])) if present else None), items.left_out

    def _logged_statistics(self, test_result: Any) -> Statistics | None:
        """The statistics of this configuration's results Opik logged for one test result (None: none)."""
        try:
            return self.item_statistics(test_result.score_results or [])
        except (MetricInputError, KeyError):
            return None


class WholeSetMetric(PackMetric):
    """A metric whose corpus scores are computed over the whole set at once, from no summable
    per-item statistics (a Hugging Face ``evaluate`` module's ``compute`` over every item): it has
    ``corpus_score`` and ``experiment_score`` but no ``statistics``. Its facts name these scores
    (``whole_set_corpora``); a comparison shows their recorded values but cannot resample them.

    Subclasses say which corpus scores they make (``_whole_set_facts``) and make them (``corpus_score``).
    """

    def _corpus_facts_fields(self) -> dict[str, Any]:
        return {"whole_set_corpora": tuple(self._whole_set_facts())}

    @abc.abstractmethod
    def _whole_set_facts(self) -> Sequence[ScoreFacts]:
        """The corpus scores ``corpus_score`` makes, in the order it makes them."""

    def _experiment_corpus(self, test_results: Sequence[Any]) -> tuple[ScoreResult | list[ScoreResult] | None,
                                                                       list[str]]:
        """``corpus_score`` over the inputs of every test result that gives them."""
        items = self._experiment_items(test_results, range(len(test_results)))
        if not items.positions:
            return None, items.left_out
        return self.corpus_score(items.outputs, items.references), items.left_out


class ReferenceInputs(PackMetric):
    """How a metric that compares ``output`` with one or more references takes its items.

    ``score`` follows Opik's convention (extra dataset fields are ignored); ``score_batch``
    scores many items in one call and returns one ``list[ScoreResult]`` per item.
    """

    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output against its reference(s)."""
        out = require_text(output, "output")
        refs = require_references(reference, "reference")
        return self._storable(self._score_items([out], [refs]))[0]

    def score_batch(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]] | None = None, *,
                    workers: int | None = None) -> list[list[ScoreResult]]:
        """Score many items at once; ``references[i]`` is a string or a list of strings.

        ``workers``: processes for a metric with a kernel (ROUGE); None uses every core for a batch
        of at least ``execution.kernels.PARALLEL_MIN_ITEMS`` items. Numbers and order are the same
        either way. The processes are those of the ``with execution.ScoringContext():`` block around
        the call (kept for its later batches), or started for this call alone outside any. As with
        ``multiprocessing``, a script that calls it at top level on a system where processes are
        spawned needs the ``if __name__ == "__main__":`` guard (or ``workers=1``).
        """
        from opik_metrics.execution import kernels

        kernels.check_workers(workers)
        with collector_paused(_length(outputs)):     # the input checks too: they make a list per item
            outs, refs = require_batch(outputs, references)
            if refs is None:
                raise MetricInputError(f"{self.name} needs references: pass references=[...]")
            if not outs:
                return []
            processes = kernels.resolve_workers(workers, len(outs))
            kernel = self._batch_kernel(refs) if processes > 1 else None
            if kernel is not None:
                try:
                    results: list[list[ScoreResult]] = []
                    for start, stop, values in kernels.run_kernel(kernel, outs, refs, processes):
                        results += self._results_from_kernel(outs[start:stop], refs[start:stop], values)
                    return self._storable(results)
                except kernels.StayInProcess:     # nothing of a partial run is kept
                    pass
            return self._storable(self._score_items(outs, refs))

    @abc.abstractmethod
    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        """Score validated items; one list of ScoreResults per item, in order."""

    def _batch_kernel(self, references: list[list[str]]) -> Kernel | None:
        """A picklable ``kernel(outputs, references) -> values`` that worker processes run on slices
        of a large batch with these ``references`` (``_results_from_kernel`` turns its values into
        results); None: no kernel, the batch is scored in this process."""
        return None

    def _results_from_kernel(self, outputs: list[str], references: list[list[str]],
                             values: Any) -> list[list[ScoreResult]]:
        """The results of a slice from its kernel values."""
        raise NotImplementedError(f"{type(self).__name__} has no batch kernel")

    def _experiment_inputs(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[str], Any]:
        outputs, references = [], []
        for k, tr in zip(positions, test_results):
            inputs = scoring_inputs(tr)
            outputs.append(require_text(inputs.get("output"), "output", k))
            references.append(require_references(inputs.get("reference"), "reference", k))
        return outputs, references


class ReferenceFreeInputs(PackMetric):
    """How a metric of ``output`` alone takes its items; extra dataset fields (``reference``, ...)
    are ignored.

    ``text_field`` picks another scoring input to score instead of ``output`` (e.g. ``"text"``
    for the perplexity of a dataset's held-out text rather than of the task's generation).
    """

    def __init__(self, name: str, text_field: str = "output", track: bool = True,
                 project_name: str | None = None) -> None:
        if not isinstance(text_field, str) or not text_field:
            raise ValueError(f"text_field must be a non-empty string, got {text_field!r}")
        self.text_field = text_field
        super().__init__(name=name, track=track, project_name=project_name)

    def score(self, output: str | None = None, **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one text: ``output``, or the ``text_field`` input when one was chosen."""
        if self.text_field == "output":
            value = output
        elif self.text_field in ignored_kwargs:
            value = ignored_kwargs[self.text_field]
        else:
            raise MetricInputError(f"field {self.text_field!r}: missing from the scoring inputs "
                                   f"(got {sorted(['output', *ignored_kwargs])})")
        return self._storable(self._score_items([require_text(value, self.text_field)]))[0]

    def score_batch(self, outputs: Sequence[str],
                    references: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """Score many texts at once; ``references`` is accepted for a uniform call and ignored."""
        outs, _ = require_batch(outputs, None)
        if not outs:
            return []
        return self._storable(self._score_items(outs))

    def _experiment_inputs(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[str], Any]:
        texts = [require_text(scoring_inputs(tr).get(self.text_field), self.text_field, k)
                 for k, tr in zip(positions, test_results)]
        return texts, None

    @abc.abstractmethod
    def _score_items(self, outputs: list[str]) -> list[list[ScoreResult]]:
        """Score validated texts; one list of ScoreResults per text, in order."""


class ReferenceMetric(ReferenceInputs, StatisticsMetric):
    """A metric that compares ``output`` with one or more references, its corpus score made from
    summable per-item statistics (every reference metric of the pack but ``EvaluateMetric``).

    Subclasses set ``self.signature``, declare their scores (``_score_facts``) and, when they have
    one, their corpus score (``_corpus_facts``), and score validated items (``_score_items``).
    """


class ReferenceFreeMetric(ReferenceFreeInputs, StatisticsMetric):
    """A metric of ``output`` alone (or of the ``text_field`` input), its corpus score made from
    summable per-item statistics (perplexity, distillation KL)."""


def _register_with_loaded_opik() -> None:
    from opik_metrics.metric_kit.tracking import register_if_opik_loaded
    register_if_opik_loaded(PackMetric)


_register_with_loaded_opik()
