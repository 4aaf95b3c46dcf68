"""What a metric class says about itself to the catalog and the command line: its catalog name, a
one-line summary, the inputs it needs, and its command-line options with the constructor argument
each one sets. A class with a ``card`` is registered when it is defined; an option's default is
its constructor argument's default unless the option gives one."""
from __future__ import annotations

import dataclasses
import inspect
import warnings
from dataclasses import dataclass
from typing import Any, Callable, Mapping, Sequence


class OptionsError(ValueError):
    """Command-line options that cannot build the metric (one line, naming the options)."""


class _ConstructorDefault:
    """What an ``Option`` that gives no default holds until its card is bound to its class."""

    def __repr__(self) -> str:
        return "CONSTRUCTOR_DEFAULT"


#: An option's default until its card is bound to its class: then its constructor argument's default.
CONSTRUCTOR_DEFAULT: Any = _ConstructorDefault()


@dataclass(frozen=True)
class Option:
    """One command-line option: ``flag`` sets the constructor argument ``argument``; the rest is
    argparse's (``kind`` is its ``type``). An option two metrics share (``--lowercase``) is
    declared alike by both and added once.

    ``default``: left out, the constructor's default of ``argument`` (see
    ``with_constructor_defaults``); None: no default (the constructor's applies when the option
    is not given). ``help`` may show it as ``%(default)s``, as argparse's help does.
    """

    flag: str
    argument: str
    help: str | None = None
    kind: Callable[[str], Any] | None = None
    default: Any = CONSTRUCTOR_DEFAULT
    choices: tuple | None = None
    action: str | None = None
    required: bool = False          # the metric cannot be built without it
    implies: tuple[tuple[str, Any], ...] = ()    # more constructor arguments set when it is given

    @property
    def dest(self) -> str:
        """Where argparse keeps its value."""
        return self.flag.lstrip("-").replace("-", "_")

    def argparse_settings(self) -> dict[str, Any]:
        settings: dict[str, Any] = {"help": self.help, "dest": self.dest}
        if self.action is not None:
            settings["action"] = self.action
        if self.kind is not None:
            settings["type"] = self.kind
        if self.default is not None and self.default is not CONSTRUCTOR_DEFAULT:
            settings["default"] = self.default
        if self.choices is not None:
            settings["choices"] = list(self.choices)
        return settings


@dataclass(frozen=True)
class MetricCard:
    """A metric's entry in the catalog.

    ``every_reference``: the constructor argument that receives every reference of the input
    before scoring starts (CIDEr-D's document frequencies), if any; with ``every_reference_if``,
    only when that option is given (BERTScore's ``--idf``). ``extra``: the optional dependencies it
    needs (``"neural"``), checked before it is built (``PackMetric.check_installed``).
    """

    name: str
    summary: str
    options: tuple[Option, ...] = ()
    group: str | None = None                    # the title of its options in --help
    needs_reference: bool = True
    needs_image: bool = False
    loads_model: bool = False                   # a worker should build it once and keep it
    every_reference: str | None = None
    every_reference_if: str | None = None
    extra: str | None = None                    # the pyproject extra it needs (core.extras), if any

    def wants_every_reference(self, values: Mapping[str, Any]) -> bool:
        """Whether, with these option values, the metric is built with every reference of the input."""
        return self.every_reference is not None and (
            self.every_reference_if is None or bool(values.get(self.every_reference_if)))

    def arguments(self, values: Mapping[str, Any], references: Sequence[Any] | None = None) -> dict[str, Any]:
        """Constructor arguments from parsed option values (by ``Option.dest``): an option left at
        None keeps the constructor's default; a missing required one is an ``OptionsError``."""
        missing = [o.flag for o in self.options if o.required and values.get(o.dest) is None]
        if missing:
            raise OptionsError(f"--metric {self.name} needs {' and '.join(missing)}")
        kwargs: dict[str, Any] = {}
        for option in self.options:
            if values.get(option.dest) is not None:
                kwargs[option.argument] = values[option.dest]
                if values[option.dest] is not False:
                    kwargs.update(option.implies)
        if self.every_reference is not None and self.wants_every_reference(values):
            kwargs[self.every_reference] = references
        return kwargs


def with_constructor_defaults(card: MetricCard, metric_class: type) -> MetricCard:
    """``card`` with every option that gives no default given its argument's default in
    ``metric_class``'s constructor, so that a default is written once, in the constructor. A flag
    (an option with an ``action``), a required option, one that ``implies`` other arguments and an
    argument without a default get none; an argument the constructor does not take is an error."""
    parameters = inspect.signature(metric_class).parameters
    open_ended = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values())
    options = []
    for option in card.options:
        parameter = parameters.get(option.argument)
        if parameter is None and not open_ended:
            raise ValueError(f"{metric_class.__qualname__}: option {option.flag} sets {option.argument!r}, "
                             "which its constructor does not take")
        if option.default is CONSTRUCTOR_DEFAULT:
            default = None if parameter is None else parameter.default
            takes = (default is not inspect.Parameter.empty and option.action is None and not option.required
                     and not option.implies)
            option = dataclasses.replace(option, default=default if takes else None)
        options.append(option)
    return dataclasses.replace(card, options=tuple(options))


_registered: dict[str, type] = {}


class NameTaken(ValueError):
    """A metric class asks for a catalog name another class holds."""


class PluginWarning(UserWarning):
    """A metric from another package left out of the catalog (the message says which, and why)."""


def register(metric_class: type) -> None:
    """Enter a class with a ``card`` in the catalog (``PackMetric`` does it for every subclass).

    A name already taken stays with its holder (``NameTaken``), unless the newcomer is the same
    class defined again, or a built-in metric (defined in ``opik_metrics``) whose name an outside
    class took first: the built-in gets it back and a ``PluginWarning`` names the outsider. So no
    order of imports lets another package replace a built-in metric."""
    card: MetricCard = metric_class.__dict__["card"]
    held = _registered.get(card.name)
    if held is not None and target_of(held) != target_of(metric_class):
        if is_built_in(held) or not is_built_in(metric_class):
            whose = "the built-in metric" if is_built_in(held) else "the metric"
            raise NameTaken(f"{target_of(metric_class)} cannot be called {card.name!r}: "
                            f"{whose} {target_of(held)} has that name")
        warnings.warn(f"{target_of(held)} is left out of the catalog: {card.name!r} is the name of the built-in "
                      f"metric {target_of(metric_class)}", PluginWarning, stacklevel=2)
    _registered[card.name] = metric_class


def is_built_in(metric_class: type) -> bool:
    """Whether the class is one of this pack's own metrics."""
    return metric_class.__module__.partition(".")[0] == "opik_metrics"


def target_of(metric_class: type) -> str:
    """``module:qualname``: where another process imports the class from."""
    return f"{metric_class.__module__}:{metric_class.__qualname__}"


def registered() -> dict[str, type]:
    """Every class registered so far, by catalog name."""
    return dict(_registered)


def unregister(name: str) -> None:
    """Take a metric out of the catalog (a test's toy metric, when the test ends)."""
    _registered.pop(name, None)
