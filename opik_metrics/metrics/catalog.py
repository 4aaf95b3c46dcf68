"""The catalog: every metric class that has a ``card``, by its card's name. The command line and the
pipelines build metrics from it; a metric module enters it by being imported (``discover`` imports
every module of ``opik_metrics.metrics``, which stay light: engines are imported when a metric is built),
then other packages' metrics join through their entry points (``plugins``), loaded only when a name
the built-ins lack is asked for (or the whole catalog is): a plugin's import may be slow or broken."""
from __future__ import annotations

import difflib
import importlib
import pkgutil
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from opik_metrics.metric_kit.card import MetricCard, registered, target_of
from opik_metrics.metrics.plugins import load_plugins

_discovered = False
_plugins_loaded = False


def discover(plugins: bool = True) -> None:
    """Once: import every module of the package, so that each metric class registers itself; with
    ``plugins``, then (once) load the metrics other packages offer (built-ins first: a plugin cannot
    take their names)."""
    global _discovered, _plugins_loaded
    if not _discovered:
        import opik_metrics.metrics as package

        for module in pkgutil.iter_modules(package.__path__, package.__name__ + "."):
            importlib.import_module(module.name)
        _discovered = True
    if plugins and not _plugins_loaded:
        _plugins_loaded = True      # before loading: one that asks for the catalog as it loads gets it
        load_plugins()


def metric_classes(plugins: bool = False) -> dict[str, type]:
    """The metrics known so far, by name, in name order: the built-ins, and the plugins once they are
    loaded (``plugins=True`` loads them: the whole catalog)."""
    discover(plugins)
    return dict(sorted(registered().items()))


def is_known(name: str) -> bool:
    """Whether ``name`` is a metric known without loading any plugin that is not loaded yet."""
    return isinstance(name, str) and name.lower() in metric_classes()


def unknown_metric_message(name: str, known: Sequence[str]) -> str:
    """Why ``name`` is no metric, with the closest names offered first ("did you mean")."""
    close = difflib.get_close_matches(name.lower(), list(known), n=3, cutoff=0.6)
    hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
    return f"unknown metric {name!r}{hint} (known: {', '.join(known)})"


def metric_class(name: str) -> type:
    """The metric class called ``name`` (plugins are loaded when the built-ins lack it); a clear
    error offers the closest names and lists the known ones."""
    key = name.lower() if isinstance(name, str) else name
    classes = metric_classes()
    if key not in classes:
        classes = metric_classes(plugins=True)
    if key not in classes:
        raise ValueError(unknown_metric_message(str(name), list(classes)))
    return classes[key]


def metric_card(name: str) -> MetricCard:
    """The card of the metric called ``name``."""
    card: MetricCard = vars(metric_class(name))["card"]     # registered classes declare their own
    return card


def build_metric(name: str, **kwargs: Any) -> Any:
    """The metric called ``name``, built with ``kwargs``."""
    return metric_class(name)(**kwargs)


@dataclass(frozen=True)
class MetricRecipe:
    """How to build catalog metrics, picklable: another process (a worker, a Ray actor) calls it to
    build the same metrics there, importing each class by its module and name."""

    named: tuple[tuple[str, str, Mapping[str, Any]], ...]       # (name, "module:qualname", kwargs)
    loads_model: bool = False

    @classmethod
    def of(cls, named: Sequence[tuple[str, Mapping[str, Any]]]) -> "MetricRecipe":
        """The recipe of the named metrics; a metric whose extra is not installed is refused here
        (``MissingExtra``), before any worker starts or any item is scored."""
        classes = [(name, metric_class(name), dict(kwargs)) for name, kwargs in named]
        for _, metric, kwargs in classes:
            getattr(metric, "check_installed")(kwargs)       # every catalog class is a PackMetric
        return cls(tuple((name, target_of(c), kwargs) for name, c, kwargs in classes),
                   loads_model=any(metric_card(name).loads_model for name, _, _ in classes))

    def __call__(self) -> list[Any]:
        return [_imported(target)(**kwargs) for _, target, kwargs in self.named]


def _imported(target: str) -> Any:
    module, _, qualname = target.partition(":")
    found: Any = importlib.import_module(module)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found
