"""Metrics from other installed packages: a package names each of its metric classes in the entry
point group ``opik_metrics.metrics`` (``word_count = "my_package.metrics:WordCount"``, the entry
point's name being the card's), and the catalog loads them once, when first asked, after the
built-in metrics. A plugin that cannot join is left out with one ``PluginWarning`` naming its
distribution and entry point: the rest of the catalog is never lost to it."""
from __future__ import annotations

import contextlib
import sys
import warnings
from importlib.metadata import EntryPoint, entry_points
from typing import Any

from opik_metrics.core.table import one_line
from opik_metrics.metric_kit.card import MetricCard, NameTaken, Option, PluginWarning, register, registered, unregister

GROUP = "opik_metrics.metrics"


class PluginRefused(Exception):
    """Why one entry point's metric cannot join the catalog."""


def load_plugins() -> list[str]:
    """Register the metric class of every entry point of the group (in name order, so that of two
    claims on one name the same one wins every time); the names that joined."""
    joined = []
    for point in sorted(entry_points(group=GROUP), key=lambda p: (p.name, p.value, _distribution(p))):
        try:
            joined.append(_join(point))
        except PluginRefused as exc:
            warnings.warn(one_line(f"plugin metric {point.name!r} ({point.name} = {point.value}, from "
                                   f"{_distribution(point)}) is left out: {exc}"), PluginWarning, stacklevel=2)
    return joined


def _distribution(point: EntryPoint) -> str:
    dist = point.dist
    return f"distribution {dist.name} {dist.version}" if dist is not None else "an unnamed distribution"


def _join(point: EntryPoint) -> str:
    """Import the entry point's class, check it, register it; its catalog name."""
    try:
        with contextlib.redirect_stdout(sys.stderr):   # what it prints never mixes with a command's JSON
            found = point.load()
    except NameTaken as exc:                      # a PackMetric subclass registers itself as it is defined
        raise PluginRefused(str(exc)) from None
    except (Exception, SystemExit) as exc:        # whatever its import raises or exits with, the catalog goes on,
        # and the exit status stays the command's own (a plugin's sys.exit(0) must not pass a failed gate);
        # KeyboardInterrupt is the user's Ctrl-C and goes through
        raise PluginRefused(f"importing it failed: {type(exc).__name__}: {exc}") from None
    card = _card_of(found)
    try:
        if card.name != point.name:
            raise PluginRefused(f"its card is named {card.name!r}; the entry point must carry the card's name")
        _check_options(found, card)
        register(found)
    except (PluginRefused, NameTaken) as exc:
        if registered().get(card.name) is found:  # it registered itself on import: take it out again
            unregister(card.name)
        raise PluginRefused(str(exc)) from None
    return card.name


def _card_of(found: Any) -> MetricCard:
    """The card of a metric class of the pack's contract, or why ``found`` is none."""
    from opik_metrics.metric_kit.base import PackMetric   # the built-in metrics have imported it already

    if not (isinstance(found, type) and issubclass(found, PackMetric)):
        raise PluginRefused(f"it is {_described(found)}, not a metric class (a subclass of "
                            "opik_metrics.metric_kit.base.PackMetric)")
    card = vars(found).get("card")
    if not isinstance(card, MetricCard):
        raise PluginRefused(f"{found.__qualname__} declares no card of its own (card = MetricCard(...))")
    return card


def _described(found: Any) -> str:
    if isinstance(found, type):
        return f"the class {found.__module__}.{found.__qualname__}"
    return f"a {type(found).__name__}"


def _check_options(metric_class: type, card: MetricCard) -> None:
    """An option flag another metric declares too is added once: the two must agree on what it takes."""
    for option in card.options:
        for name, other in registered().items():
            if other is metric_class:
                continue
            for theirs in vars(other)["card"].options:
                if theirs.flag == option.flag and _takes(theirs) != _takes(option):
                    raise PluginRefused(f"the metric {name!r} declares {option.flag} too, taking another value "
                                        "(an option two metrics share is added once, so both must take it alike)")


def _takes(option: Option) -> tuple:
    """What the command line does with an option's value (not its help, nor which argument it sets)."""
    return option.kind, option.default, option.choices, option.action
