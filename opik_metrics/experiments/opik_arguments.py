"""``opik.evaluate``'s arguments in the local store. On a server every argument goes to
``opik.evaluate`` as it is; with no server, each one is carried out as Opik would (the scoring key
mapping, tags and prompts recorded, dataset item ids, a name prefix, ``trial_count``: each item run
that many times, every trial kept) or refused in one line that names it and says why (what only a
server can do: its filter language, its samplers of dataset items, its blueprints)."""
from __future__ import annotations

import warnings
from typing import Any, Callable, Mapping, Union

#: ``opik.evaluate``'s ``scoring_key_mapping``: a metric argument -> a key of the item and the task's
#: output, or a function of them.
ScoringKeyMapping = Mapping[str, Union[str, Callable[[dict], Any]]]

#: Arguments the local store refuses unless they hold their default, and why.
LOCAL_REFUSALS: dict[str, tuple[Any, str]] = {
    "scoring_functions": (None, "Opik's scorer functions run inside opik.evaluate on a server; locally pass "
                                "Opik metrics as scoring_metrics"),
    "dataset_sampler": (None, "a sampler draws Opik dataset items on a server; locally pass the items you want "
                              "(or nb_samples)"),
    "dataset_filter_string": (None, "the filter is Opik's query language, evaluated by the server; locally pass "
                                    "the items you want"),
    "blueprint_id": (None, "blueprints live on an Opik server"),
}


class LocalArgumentRefused(ValueError):
    """An ``opik.evaluate`` argument the local store cannot carry out (the message says which and why)."""


def refuse_server_only(arguments: Mapping[str, Any]) -> None:
    """``LocalArgumentRefused`` for the first argument of ``LOCAL_REFUSALS`` given a value other than its default."""
    for name, (default, why) in LOCAL_REFUSALS.items():
        value = arguments.get(name, default)
        if value is None or value == default or (isinstance(value, (list, tuple)) and not value):
            continue                        # its default, or an empty list of scorer functions
        raise LocalArgumentRefused(f"{name}={value!r} is not supported in the local store: {why}")


def scoring_inputs(item: Mapping[str, Any], output: Mapping[str, Any] | None,
                   mapping: ScoringKeyMapping | None, where: str = "the item") -> dict:
    """What the metrics of one item are called with, as ``opik.evaluate`` makes it: the item and the
    task's output merged, then each mapped argument set from a key of that (or a function of it). A
    key that is not there is left unset with a warning, as Opik does."""
    inputs = {**item, **(output or {})}
    for argument, source in (mapping or {}).items():
        if callable(source):
            inputs[argument] = source(inputs)
        elif source in inputs:
            inputs[argument] = inputs[source]
        else:
            warnings.warn(f"scoring_key_mapping {argument!r}: {source!r} is not a key of {where} or its task "
                          f"output (its keys: {', '.join(sorted(map(str, inputs))) or 'none'})", stacklevel=2)
    return inputs


def recorded_mapping(mapping: ScoringKeyMapping | None) -> dict[str, str] | None:
    """The mapping as the experiment's config records it (a function by its name)."""
    if not mapping:
        return None
    return {str(k): v if isinstance(v, str) else f"<function {getattr(v, '__qualname__', type(v).__name__)}>"
            for k, v in mapping.items()}


def recorded_prompts(prompt: Any = None, prompts: Any = None) -> list[dict] | None:
    """Opik prompts (``prompt``, ``prompts``) as the experiment's config records them: name, commit, text."""
    found = ([prompt] if prompt is not None else []) + list(prompts or [])
    if not found:
        return None
    return [{"name": getattr(p, "name", None), "commit": getattr(p, "commit", None),
             "prompt": getattr(p, "prompt", None) if isinstance(getattr(p, "prompt", None), str) else None}
            for p in found]
