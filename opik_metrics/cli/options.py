"""The one place where command-line options become metric arguments."""
from __future__ import annotations

import argparse
import dataclasses
import inspect
import warnings
from typing import Any, Sequence

from opik_metrics.cli.errors import CLIError
from opik_metrics.metric_kit.card import OptionsError, PluginWarning
from opik_metrics.metrics.catalog import MetricRecipe, metric_card, metric_class, metric_classes

#: The input name under which records (``--field source=COLUMN``), ``--source FILE`` and traces
#: (``--field source=input.document``) give a metric the item's source text.
SOURCE = "source"


#: Where the parsed options keep the ``dest`` of each metric option given on the command line that
#: a command-wide option would otherwise set (``--bartscore-multi-reference`` beside ``--multi-reference``).
GIVEN = "given_metric_options"

#: The metrics that read sentences, one a line (ROUGE's rougeLsum and --rouge155): what
#: ``--split-sentences`` prepares the texts of.
SENTENCE_METRICS = ("rouge",)


class _MarkGiven(argparse.Action):
    """Stores the value, as a plain option does, and notes that the option was given."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any,
                 option_string: str | None = None) -> None:
        setattr(namespace, self.dest, values)
        setattr(namespace, GIVEN, {*getattr(namespace, GIVEN, ()), self.dest})


def add_metric_options(parser: argparse.ArgumentParser, own: Sequence[str] = ()) -> None:
    """Every catalog metric's options, one group a metric (an option two metrics share, once). An
    option argparse refuses (a plugin metric's flag that the command uses itself) is left out with
    a ``PluginWarning``, and the command goes on; ``own``: flags the command declares itself, with
    the same ``dest`` (``score``'s ``--lowercase``), left out silently."""
    added: set[str] = set(own)
    for card in map(metric_card, metric_classes()):
        fresh = [o for o in card.options if o.flag not in added]
        if not fresh:
            continue
        group = parser.add_argument_group(card.group or f"{card.name} options")
        for option in fresh:
            settings = option.argparse_settings()
            if option.argument == "multi_reference" and option.action is None:
                settings["action"] = _MarkGiven
            try:
                group.add_argument(option.flag, **settings)
            except (argparse.ArgumentError, TypeError, ValueError) as exc:
                warnings.warn(f"the option {option.flag} of metric {card.name!r} is left out: {exc}", PluginWarning,
                              stacklevel=2)
                continue
            added.add(option.flag)


def metric_kwargs(name: str, args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None) -> dict[str, Any]:
    """Constructor arguments of catalog metric ``name`` from the command's options; ``source_input``: the
    input a command hands the item's source over as (files and traces: ``SOURCE``; a stored experiment
    keeps its dataset's ``input``, the metric's default). A command-wide ``--multi-reference MODE``
    sets ``multi_reference`` unless the metric's own option for it was given (that one wins)."""
    card = metric_card(name)
    try:
        kwargs = card.arguments(vars(args), references)
    except OptionsError as exc:
        raise CLIError(str(exc)) from None
    mode = getattr(args, "multi_reference", None)
    if mode is not None:
        own = {o.dest for o in card.options if o.argument == "multi_reference"}
        if not own & set(getattr(args, GIVEN, ())):
            kwargs.update(_multi_reference(card.name, card.needs_reference, mode))
    if source_input is not None and "source_field" in inspect.signature(metric_class(name)).parameters:
        kwargs.setdefault("source_field", source_input)
    return kwargs


def multi_reference_modes(name: str) -> tuple[str, ...] | None:
    """The rules for several references metric ``name`` takes as ``multi_reference`` (its default
    first where it says so), or None when it takes no such argument. Its class's
    ``multi_reference_modes``, else the choices of its own option for it (BARTScore's), else ROUGE's
    engine's; a metric that takes the argument without saying its modes gets () (any mode is
    passed on, for the metric to check)."""
    cls = metric_class(name)
    if "multi_reference" not in inspect.signature(cls).parameters:
        return None
    declared = getattr(cls, "multi_reference_modes", None)
    if declared:
        return tuple(declared)
    for option in metric_card(name).options:
        if option.argument == "multi_reference" and option.choices:
            return tuple(option.choices)
    if cls.__module__ == "opik_metrics.metrics.rouge":
        from opik_metrics.text.rouge import MULTI_REFERENCE_MODES
        return tuple(MULTI_REFERENCE_MODES)
    return ()


def _multi_reference(name: str, needs_reference: bool, mode: str) -> dict[str, Any]:
    """``{"multi_reference": mode}`` for metric ``name``; a mode it does not take, or a
    reference-based metric with no choice of rule, is a one-line error naming the metric and its
    modes (a metric of the output alone is left as it is)."""
    modes = multi_reference_modes(name)
    if modes is None:
        if needs_reference:
            raise CLIError(f"--multi-reference {mode}: {name} has no choice of rule for several references; "
                           f"score it in a run without --multi-reference")
        return {}
    if modes and mode not in modes:
        default = inspect.signature(metric_class(name)).parameters["multi_reference"].default
        shown = ", ".join(f"{m} (default)" if m == default else m for m in modes)
        raise CLIError(f"--multi-reference {mode}: {name} takes {shown}")
    return {"multi_reference": mode}


def preparation(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """What ``score``'s ``--lowercase`` and ``--split-sentences`` ask of metric ``name``, as
    ``metric_kit.preprocessed.build``'s arguments (empty: nothing). A metric with its own
    ``--lowercase`` option (BLEU, chrF: sacrebleu's, ``case:lc`` in its signature) lowercases
    itself; every other is given lowercased text. Sentences are split for ROUGE only."""
    steps: dict[str, Any] = {}
    if getattr(args, "lowercase", False) and not any(o.flag == "--lowercase" for o in metric_card(name).options):
        steps["lowercase"] = True
    if getattr(args, "split_sentences", None) == "nltk" and name in SENTENCE_METRICS:
        steps["split_sentences"] = "nltk"
    return steps


def wants_every_reference(names: Sequence[str], args: argparse.Namespace) -> bool:
    """Whether any of the named metrics is built with every reference of the input (read first)."""
    return any(metric_card(name).wants_every_reference(vars(args)) for name in names)


def build_metrics(names: Sequence[str], args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None, *, preprocess: bool = False, **common: Any) -> list[Any]:
    """The named catalog metrics, built from the options (``common`` goes to each, e.g. track=False)."""
    return metric_recipe(names, args, references, source_input, preprocess=preprocess, **common)()


def metric_recipe(names: Sequence[str], args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None, *, preprocess: bool = False, **common: Any) -> MetricRecipe:
    """How to build the named catalog metrics from the options, in this process or a worker.
    ``preprocess``: the command has ``score``'s text options (``preparation``); a metric they
    prepare texts for is built as ``metric_kit.preprocessed.Preprocessed`` around it, its
    corpus context (``references``) prepared alike."""
    cards = [metric_card(n) for n in names]
    steps = {card.name: preparation(card.name, args) if preprocess else {} for card in cards}
    splitting = preprocess and getattr(args, "split_sentences", None) == "nltk"
    if splitting and not any(s.get("split_sentences") for s in steps.values()):
        raise CLIError(f"--split-sentences nltk: only {', '.join(SENTENCE_METRICS)} reads sentences (rougeLsum, "
                       "--rouge155); add -m rouge or drop --split-sentences")
    recipe = MetricRecipe.of([(card.name, {**common, **metric_kwargs(
        card.name, args, _prepared(references, steps[card.name]) if card.wants_every_reference(vars(args))
        else references, source_input)}) for card in cards])
    if not any(steps.values()):
        return recipe
    from opik_metrics.metric_kit.preprocessed import BUILD_TARGET
    named = tuple((name, BUILD_TARGET, {"target": target, "arguments": kwargs, **steps[name]}) if steps[name]
                  else (name, target, kwargs) for name, target, kwargs in recipe.named)
    return dataclasses.replace(recipe, named=named)


def _prepared(references: list[list[str]] | None, steps: dict[str, Any]) -> list[list[str]] | None:
    """Every reference of the input (a corpus context) prepared as the metric's texts will be."""
    if references is None or not steps:
        return references
    from opik_metrics.metric_kit.preprocessed import Preparation
    return Preparation(**steps).texts(references)


def aggregate_label(name: str, corpus_names: Any, mean_corpora: dict[str, str]) -> str:
    """How a score of ``score``'s table is aggregated; a corpus score that is by definition the
    mean of an item score (CIDEr-D's) says so, else its row looks like a repeat of that mean."""
    if name in mean_corpora:
        return f"corpus statistics: the mean of {mean_corpora[name]}, by the metric's definition"
    return "corpus statistics" if name in corpus_names else "mean over items"


def add_store_argument(parser: argparse._ActionsContainer) -> None:  # a parser or an argument group: their base
    parser.add_argument("--store", metavar="PATH",
                        help="local experiment store (SQLite); default $OPIK_METRICS_STORE or "
                             "~/.local/share/opik-metrics/experiments.sqlite")


def check_work_bounds(args: argparse.Namespace) -> None:
    """A ``--resamples`` or ``--permutations`` beyond its documented bound (or below 1) is a usage
    error, said in one line before any work."""
    from opik_metrics.compare.statistics.defaults import MAX_PERMUTATIONS, MAX_RESAMPLES, bounded_count

    for flag, bound in (("--resamples", MAX_RESAMPLES), ("--permutations", MAX_PERMUTATIONS)):
        value = getattr(args, flag[2:], None)
        problem = None if value is None else bounded_count(flag, value, bound)
        if problem is not None:
            raise CLIError(problem)
