"""Writing a metric: state set in any order around ``super().__init__`` (facts are stated on first
use), scores named after ``default_name``, a whole-set metric with no statistics, the one
``experiment_score`` of every metric, and card options whose defaults are the constructor's."""
from __future__ import annotations

import inspect
from types import SimpleNamespace

import pytest

from opik_metrics.core import CorpusFacts, MetricInputError, ScoreFacts, Signature, corpus_facts, mean_formula
from opik_metrics.metric_kit.base import (ReferenceInputs, ReferenceMetric, ScoreResult, StatisticsMetric,
                                       WholeSetMetric)
from opik_metrics.metric_kit.card import MetricCard, Option, with_constructor_defaults
from opik_metrics.metrics.catalog import metric_classes
from opik_metrics.metrics.evaluate_module import EvaluateMetric


class Overlap(ReferenceMetric):
    """Shared words over output words (``overlap``) and over reference words (``coverage``), the
    corpus score their mean; ``late=True`` sets its state after ``super().__init__``."""

    default_name = "overlap"

    def __init__(self, lowercase: bool = False, late: bool = False, name: str = "overlap",
                 track: bool = False) -> None:
        if late:
            super().__init__(name=name, track=track)
        self.lowercase = lowercase
        self.signature = Signature({"metric": "overlap", "case": "lc" if lowercase else "mixed"})
        if not late:
            super().__init__(name=name, track=track)

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self._scored_name("overlap"), bounds=(0.0, 1.0)),
                ScoreFacts(self._scored_name("coverage"), bounds=(0.0, 1.0), part=True)]

    def _corpus_facts(self) -> CorpusFacts:
        fields = [self._scored_name("overlap"), self._scored_name("coverage")]
        return corpus_facts(f"corpus_{fields[0]}", fields[0], [*fields, "items"], mean_formula, {"field": 0},
                            bounds=(0.0, 1.0), is_mean=True)

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        results = []
        for output, refs in zip(outputs, references):
            out, ref = (set((t.lower() if self.lowercase else t).split()) for t in (output, refs[0]))
            shared = len(out & ref)
            results.append([ScoreResult(name=n, value=shared / max(1, len(words)), metadata={"signature": self.signature})
                            for n, words in ((self._scored_name("overlap"), out), (self._scored_name("coverage"), ref))])
        return results


class WordRatio(ReferenceInputs, WholeSetMetric):
    """Output words over reference words, counted over the whole set (no per-item statistics)."""

    default_name = "ratio"

    def __init__(self, name: str = "ratio", track: bool = False) -> None:
        super().__init__(name=name, track=track)
        self.signature = Signature({"metric": "ratio"})

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self.name, bounds=(0.0, None))]

    def _whole_set_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(f"corpus_{self.name}", bounds=(0.0, None))]

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        return [[ScoreResult(name=self.name, value=len(o.split()) / max(1, len(r[0].split())))]
                for o, r in zip(outputs, references)]

    def corpus_score(self, outputs, references=None) -> ScoreResult:
        words, ref_words = sum(len(o.split()) for o in outputs), sum(len(r[0].split()) for r in references)
        return ScoreResult(name=f"corpus_{self.name}", value=words / ref_words)


def _test_result(output, reference, score_results=()):
    case = SimpleNamespace(mapped_scoring_inputs={"output": output, "reference": reference})
    return SimpleNamespace(test_case=case, score_results=list(score_results))


def test_state_set_before_or_after_super_init_states_the_same_facts():
    for lowercase in (False, True):
        early, late = Overlap(lowercase=lowercase), Overlap(lowercase=lowercase, late=True)
        assert late.facts == early.facts and late.facts.signature == late.signature
        assert late.facts.signature.fields["case"] == ("lc" if lowercase else "mixed")
        assert late.score("The cat", "the cat sat") == early.score("The cat", "the cat sat")


def test_scores_keep_plain_names_under_the_class_default_name_only():
    assert [s.name for s in Overlap().facts.scores] == ["overlap", "coverage"]
    assert [s.name for s in Overlap(name="mine").facts.scores] == ["mine_overlap", "mine_coverage"]
    assert [r.name for r in Overlap(name="mine").score("a b", "a c")] == ["mine_overlap", "mine_coverage"]


def _built_in() -> list[type]:
    """The pack's own catalog classes (other test modules register toy metrics of theirs)."""
    return [c for c in metric_classes().values() if c.__module__.startswith("opik_metrics.")]


@pytest.mark.parametrize("metric_class", [*_built_in(), EvaluateMetric], ids=lambda c: c.__name__)
def test_a_metrics_default_name_is_its_constructors(metric_class):
    """``default_name`` and the constructor's ``name`` default say the same (EvaluateMetric: None,
    its name is made from the module's)."""
    assert metric_class.default_name == inspect.signature(metric_class).parameters["name"].default


def test_every_catalog_metric_but_whole_set_ones_has_statistics():
    for metric_class in _built_in():
        assert issubclass(metric_class, StatisticsMetric) != issubclass(metric_class, WholeSetMetric), metric_class
    assert issubclass(EvaluateMetric, WholeSetMetric)


def test_a_statistics_metrics_experiment_score_reuses_logged_results_and_notes_what_it_left_out():
    metric = Overlap()
    logged = _test_result("a b c d", "a b x y", metric.score("a b", "a b x y"))    # logged for another output
    made = metric.experiment_score([logged, _test_result("a b", "a b c d"), _test_result(None, "a")])
    # the logged item counts as logged (1.0), the second is scored (1.0): the mean is 1.0
    assert made.name == "corpus_overlap" and made.value == 1.0
    assert made.reason.startswith("1 of 3 test results left out: item 2, field 'output'")
    with pytest.raises(MetricInputError, match=r"^the corpus score of overlap: no test result could be scored "
                                               r"\(item 0, field 'output'"):
        metric.experiment_score([_test_result(None, "a")])
    with pytest.raises(MetricInputError, match="needs at least one test result"):
        metric.experiment_score([])


def test_a_whole_set_metric_scores_the_experiment_with_its_corpus_score():
    metric = WordRatio()
    assert metric.facts.corpus is None and [s.name for s in metric.facts.whole_set_corpora] == ["corpus_ratio"]
    assert not hasattr(metric, "statistics")
    made = metric.experiment_score([_test_result("a b c", "a"), _test_result("d", "e f c"), _test_result("x", None)])
    assert made.name == "corpus_ratio" and made.value == 1.0           # 4 output words over 4 reference words
    assert made.reason.startswith("1 of 3 test results left out: item 2, field 'reference'")
    with pytest.raises(MetricInputError, match="no test result could be scored"):
        metric.experiment_score([_test_result("x", None)])


class _Built:
    def __init__(self, model: str = "small", order: int = 4, weights: tuple = (1, 2), strict: bool = False,
                 teacher: str | None = None, baseline: str | None = None, rescale: bool = False,
                 name: str = "built") -> None:
        pass


def test_an_option_without_a_default_takes_the_constructors():
    card = MetricCard("built", "a card", options=(
        Option("--model", "model", help="model (default %(default)s)"),
        Option("--order", "order", kind=int, default=2),                       # its own default stays
        Option("--no-default", "order", default=None),                         # none: the constructor's applies
        Option("--weight", "weights", action="append"),                        # argparse's own
        Option("--strict", "strict", action="store_true"),
        Option("--teacher", "teacher", required=True),
        Option("--baseline", "baseline", implies=(("rescale", True),)),
    ))
    bound = {o.flag: o.argparse_settings() for o in with_constructor_defaults(card, _Built).options}
    assert bound["--model"]["default"] == "small" and bound["--order"]["default"] == 2
    assert all("default" not in bound[flag] for flag in ("--no-default", "--weight", "--strict", "--teacher",
                                                          "--baseline"))
    assert "default" not in card.options[0].argparse_settings()                # the card itself is unchanged


def test_an_option_for_an_argument_the_constructor_lacks_is_an_error():
    card = MetricCard("built", "a card", options=(Option("--modle", "modle"),))
    with pytest.raises(ValueError, match=r"^_Built: option --modle sets 'modle', which its constructor does not take"):
        with_constructor_defaults(card, _Built)
