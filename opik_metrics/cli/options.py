"""The one place where command-line options become metric arguments."""
from __future__ import annotations

import argparse
import inspect
import warnings
from typing import Any, Sequence

from opik_metrics.cli.errors import CLIError
from opik_metrics.metric_kit.card import OptionsError, PluginWarning
from opik_metrics.metrics.catalog import MetricRecipe, metric_card, metric_class, metric_classes

#: The input name under which records (``--field source=COLUMN``), ``--source FILE`` and traces
#: (``--field source=input.document``) give a metric the item's source text.
SOURCE = "source"


def add_metric_options(parser: argparse.ArgumentParser) -> None:
    """Every catalog metric's options, one group a metric (an option two metrics share, once). An
    option argparse refuses (a plugin metric's flag that the command uses itself) is left out with
    a ``PluginWarning``, and the command goes on."""
    added: set[str] = set()
    for card in map(metric_card, metric_classes()):
        fresh = [o for o in card.options if o.flag not in added]
        if not fresh:
            continue
        group = parser.add_argument_group(card.group or f"{card.name} options")
        for option in fresh:
            try:
                group.add_argument(option.flag, **option.argparse_settings())
            except (argparse.ArgumentError, TypeError, ValueError) as exc:
                warnings.warn(f"the option {option.flag} of metric {card.name!r} is left out: {exc}", PluginWarning,
                              stacklevel=2)
                continue
            added.add(option.flag)


def metric_kwargs(name: str, args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None) -> dict[str, Any]:
    """Constructor arguments of catalog metric ``name`` from the command's options; ``source_input``: the
    input a command hands the item's source over as (files and traces: ``SOURCE``; a stored experiment
    keeps its dataset's ``input``, the metric's default)."""
    try:
        kwargs = metric_card(name).arguments(vars(args), references)
    except OptionsError as exc:
        raise CLIError(str(exc)) from None
    if source_input is not None and "source_field" in inspect.signature(metric_class(name)).parameters:
        kwargs.setdefault("source_field", source_input)
    return kwargs


def wants_every_reference(names: Sequence[str], args: argparse.Namespace) -> bool:
    """Whether any of the named metrics is built with every reference of the input (read first)."""
    return any(metric_card(name).wants_every_reference(vars(args)) for name in names)


def build_metrics(names: Sequence[str], args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None, **common: Any) -> list[Any]:
    """The named catalog metrics, built from the options (``common`` goes to each, e.g. track=False)."""
    return metric_recipe(names, args, references, source_input, **common)()


def metric_recipe(names: Sequence[str], args: argparse.Namespace, references: list[list[str]] | None = None,
                  source_input: str | None = None, **common: Any) -> MetricRecipe:
    """How to build the named catalog metrics from the options, in this process or a worker."""
    cards = [metric_card(n) for n in names]
    return MetricRecipe.of([(card.name, {**common, **metric_kwargs(card.name, args, references, source_input)})
                            for card in cards])


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
