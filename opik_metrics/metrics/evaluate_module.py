"""Any Hugging Face ``evaluate`` module as an Opik metric: the module's ``compute`` on each item
gives the item scores, its ``compute`` over every item gives the corpus scores.

An ``evaluate`` module states no direction and no bounds, and its corpus score is whatever its
``compute`` makes of the whole set (not a sum of per-item statistics): the user states the
direction and bounds, and the facts say that the corpus scores are whole-set scores, which a
comparison reports as recorded but cannot resample.
"""
from __future__ import annotations

import functools
import hashlib
import inspect
import math
import numbers
import sys
import threading
import weakref
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from opik_metrics.core import (MetricInputError, ScoreFacts, Signature, package_version, require_batch, require_references,
                               require_text)
from opik_metrics.metric_kit.base import ReferenceInputs, ScoreResult, WholeSetMetric
from opik_metrics.metric_kit.server_range import mark_unstorable
from opik_metrics.neural.models.evaluate_loading import (EvaluateModuleNotAvailable, EvaluateScriptError,
                                                          load_evaluate_module)

Bounds = tuple[float | None, float | None]

#: The item ``compute`` runs on, when ``keys`` is not given, to learn which keys the module returns.
PROBE_TEXT = "the cat sat on the mat"

_LOCKS: "weakref.WeakKeyDictionary[Any, threading.Lock]" = weakref.WeakKeyDictionary()
_LOCKS_GUARD = threading.Lock()


def module_lock(module: Any) -> threading.Lock:
    """The one lock of ``module``: shared by every metric that wraps the same module object.
    ``evaluate`` modules are not thread-safe (their ``compute`` keeps its inputs in the module
    while it runs: from several threads at once it fails with Arrow errors such as "Tried reading
    schema message, was null or length 0"), and ``opik.evaluate`` scores from up to 16 threads."""
    with _LOCKS_GUARD:
        try:
            return _LOCKS.setdefault(module, threading.Lock())
        except TypeError:     # not weak-referenceable or not hashable: a lock for this metric alone
            return threading.Lock()


class EvaluateMetric(ReferenceInputs, WholeSetMetric):
    """A Hugging Face ``evaluate`` module as an Opik metric.

    Item scores: the module's ``compute`` with the item's prediction and reference(s) alone; one
    ScoreResult per selected key of the dict it returns. Corpus scores: the module's ``compute``
    over every item (``corpus_score(outputs, references)``, and ``experiment_score`` for
    ``opik.evaluate(experiment_scoring_functions=[...])``), which for most modules is not the mean
    of the item scores (corpus BLEU pools n-gram counts): a ``WholeSetMetric``, with no ``statistics``.

    Names: with one key, the item score is named ``name`` (default ``evaluate_<module name>``),
    as every single-score metric of the pack; with several, ``<name>_<key>`` (so
    ``EvaluateMetric("sacrebleu", keys=["score", "bp"])`` gives ``evaluate_sacrebleu_score`` and
    ``evaluate_sacrebleu_bp``). Each corpus score is ``corpus_`` + its item score's name. Every
    result's metadata holds the signature and the module's whole output (``module_output``).

    Args:
        module: An ``evaluate.EvaluationModule``, the path of a local metric script (a ``.py``
            file or a folder holding ``<folder>.py``), or a hub name (``"sacrebleu"``,
            ``"meteor"``, ``"namespace/name"``). Loading a hub name without network access fails
            at once (in seconds) naming the module, unless evaluate cached it in an online run.
        keys: Keys of ``compute``'s dict that become scores. Default: every numeric scalar key
            that ``compute`` returns on a probe item (run once when the metric is built).
        compute_kwargs: Keyword arguments passed to every ``compute`` (e.g. sacrebleu's
            ``{"tokenize": "intl"}``); recorded in the signature.
        higher_is_better: Direction of every key (True), or a dict ``{key: bool}`` (keys it
            leaves out are higher-is-better). ``evaluate`` modules state no direction.
        bounds: ``(low, high)`` of every key, or a dict ``{key: (low, high)}``; None: unbounded.
        multi_reference: Pass each item's references as a list (True) or as one string (False).
            Default: a list when the module's features accept one (sacrebleu, bleu, ...). A
            single-reference module given a one-element list gets the string; more references
            are an error naming the item.
        prediction_input: The module's input (feature) that takes the outputs ("predictions").
        reference_input: The module's input (feature) that takes the references ("references").
        config_name: The module's configuration, when loading it by path or name.
        name: Metric name; default ``evaluate_<module name>``.
        track: Whether Opik tracks ``score`` calls as spans.
        project_name: Opik project for the tracked spans.

    Item scores come from the module's public ``compute``, one call an item. Calls into one module
    are serialised by a lock (see ``module_lock``).

    Examples:
        >>> from opik_metrics import EvaluateMetric
        >>> metric = EvaluateMetric("sacrebleu", keys=["score"], bounds=(0, 100))  # doctest: +SKIP
        >>> metric.score("the cat sat on the mat", "the cat sat on a mat")[0].name  # doctest: +SKIP
        'evaluate_sacrebleu'

        Offline, a module written in place (``evaluate``'s documented ``_info``/``_compute`` hooks):

        >>> import datasets, evaluate, sacrebleu
        >>> class CorpusBleu(evaluate.Metric):
        ...     def _info(self):
        ...         texts = datasets.Sequence(datasets.Value("string"))
        ...         return evaluate.MetricInfo(description="sacrebleu's corpus BLEU", citation="",
        ...             features=datasets.Features({"predictions": datasets.Value("string"), "references": texts}))
        ...     def _compute(self, predictions, references):
        ...         return {"score": sacrebleu.corpus_bleu(predictions, list(zip(*references))).score}
        >>> metric = EvaluateMetric(CorpusBleu(), bounds=(0, 100), track=False)
        >>> result = metric.score("the cat sat on the mat", "the cat sat on a mat")[0]
        >>> result.name, round(result.value, 2)
        ('evaluate_corpus_bleu', 53.73)
        >>> round(metric.corpus_score(["the cat sat on the mat", "a dog runs"],
        ...                           ["the cat sat on a mat", "a dog is running"]).value, 2)
        44.15
    """

    def __init__(
        self,
        module: Any,
        keys: Sequence[str] | str | None = None,
        compute_kwargs: Mapping[str, Any] | None = None,
        higher_is_better: bool | Mapping[str, bool] = True,
        bounds: Bounds | Mapping[str, Bounds] | None = None,
        multi_reference: bool | None = None,
        prediction_input: str = "predictions",
        reference_input: str = "references",
        config_name: str | None = None,
        name: str | None = None,
        track: bool = True,
        project_name: str | None = None,
    ) -> None:
        evaluate = _import_evaluate()
        self.module = _resolve_module(evaluate, module, config_name)
        self.module_name = str(self.module.name)
        self.compute_kwargs = _check_kwargs(compute_kwargs, (prediction_input, reference_input))
        self.prediction_input, self.reference_input = prediction_input, reference_input
        self.multi_reference = _reference_mode(self.module, prediction_input, reference_input, multi_reference)
        self._lock = module_lock(self.module)
        self.keys = _check_keys(keys) if keys is not None else self._probe_keys()
        self._directions = _per_key("higher_is_better", higher_is_better, self.keys, _check_direction, True)
        self._bounds = _per_key("bounds", bounds, self.keys, _check_bounds, (None, None))
        self.higher_is_better = self._directions[self.keys[0]]
        name = f"evaluate_{self.module_name}" if name is None else name
        self._result_names = {k: (name if len(self.keys) == 1 else f"{name}_{k}") for k in self.keys}
        self.signature = self._signature(evaluate)
        super().__init__(name=name, track=track, project_name=project_name)

    # -- facts -------------------------------------------------------------------------------

    def _score_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(self._result_names[k], self._directions[k], bounds=self._bounds[k]) for k in self.keys]

    def _whole_set_facts(self) -> list[ScoreFacts]:
        return [ScoreFacts(f"corpus_{self._result_names[k]}", self._directions[k], bounds=self._bounds[k])
                for k in self.keys]

    @functools.cached_property
    def _range_checked(self) -> bool:
        """Always: its values come from the module, whatever bounds were declared."""
        return True

    def _signature(self, evaluate: Any) -> Signature:
        info = self.module.info
        fields = {"evaluate": self.module_name, "config": self.module.config_name,
                  "type": getattr(info, "module_type", "metric"), "hash": _source_hash(self.module),
                  "refs": "multi" if self.multi_reference else "single",
                  "kwargs": dict(sorted(self.compute_kwargs.items())), "version": package_version("evaluate")}
        if getattr(info, "version", None):
            fields["module_version"] = str(info.version)
        return Signature(fields, {"hash": "hash:{:.12}"})

    # -- scoring -----------------------------------------------------------------------------

    def score(self, output: str, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output against its reference(s)."""
        out = require_text(output, "output")
        refs = require_references(reference, "reference")
        return self._storable(self._scored([out], [refs], [None]))[0]

    def _score_items(self, outputs: list[str], references: list[list[str]]) -> list[list[ScoreResult]]:
        return self._scored(outputs, references, range(len(outputs)))

    def _scored(self, outputs: list[str], references: list[list[str]],
                positions: Sequence[int | None]) -> list[list[ScoreResult]]:
        args = [self._reference_argument(refs, k) for refs, k in zip(references, positions)]
        results = []
        with self._lock:
            raws = [self._call([out], [arg], _where(k, out)) for out, arg, k in zip(outputs, args, positions)]
        for out, refs, raw, k in zip(outputs, references, raws, positions):
            metadata = {"signature": self.signature, "module_output": _jsonable(raw), "n_references": len(refs)}
            results.append([self._result(self._result_names[key], raw, key, _where(k, out), metadata)
                            for key in self.keys])
        return results

    def _reference_argument(self, refs: list[str], k: int | None) -> str | list[str]:
        if self.multi_reference:
            return refs
        if len(refs) != 1:
            where = f"item {k}, field 'reference'" if k is not None else "field 'reference'"
            raise MetricInputError(
                f"{where}: the evaluate module {self.module_name!r} takes one reference per item, got "
                f"{len(refs)} (its features accept no list of references; multi_reference=True only "
                "suits a module that does)")
        return refs[0]

    def _call(self, predictions: list[str], references: list[Any], where: str) -> Mapping[str, Any]:
        """The module's ``compute``, with its input errors turned into MetricInputErrors naming the
        module and the item; other errors keep their type, with a note naming both."""
        try:
            raw = self.module.compute(**{self.prediction_input: predictions, self.reference_input: references},
                                      **self.compute_kwargs)
        except MetricInputError:
            raise
        except (ValueError, TypeError, KeyError, IndexError, ArithmeticError) as exc:
            raise MetricInputError(f"the evaluate module {self.module_name!r} failed on {where}: "
                                   f"{type(exc).__name__}: {exc}") from exc
        except Exception as exc:
            if sys.version_info >= (3, 11):
                exc.add_note(f"(in the evaluate module {self.module_name!r}, on {where})")
            raise
        if not isinstance(raw, Mapping):
            raise MetricInputError(f"the evaluate module {self.module_name!r} returned {type(raw).__name__} on "
                                   f"{where}, not a dict of scores")
        return raw

    def _result(self, name: str, raw: Mapping[str, Any], key: str, where: str, metadata: dict) -> ScoreResult:
        if key not in raw:
            raise MetricInputError(f"the evaluate module {self.module_name!r} returned no key {key!r} on {where} "
                                   f"(its keys: {', '.join(map(str, raw))})")
        value = _as_number(raw[key])
        if value is None:
            shown = repr(raw[key])
            shown = shown if len(shown) <= 60 else shown[:57] + "..."
            raise MetricInputError(f"the evaluate module {self.module_name!r} returned {type(raw[key]).__name__} "
                                   f"{shown} for key {key!r} on {where}, not a number")
        reason = None if math.isfinite(value) else (
            f"the evaluate module {self.module_name!r} returned {_shown_number(raw[key])} for {key!r}")
        return ScoreResult(name=name, value=value, reason=reason, metadata=metadata)

    def _probe_keys(self) -> list[str]:
        """Every numeric scalar key ``compute`` returns on a probe item, in the module's order."""
        reference = [PROBE_TEXT] if self.multi_reference else PROBE_TEXT
        try:
            with self._lock:
                raw = self._call([PROBE_TEXT], [reference], f"a probe item ({PROBE_TEXT!r})")
        except Exception as exc:
            raise EvaluateScriptError(
                f"could not learn which keys the evaluate module {self.module_name!r} returns: its compute on a "
                f"probe item failed ({type(exc).__name__}: {exc}); pass keys=[...]") from exc
        keys = [str(k) for k, v in raw.items() if _as_number(v) is not None]
        if not keys:
            raise MetricInputError(f"the evaluate module {self.module_name!r} returns no numeric scalar "
                                   f"(keys: {', '.join(map(str, raw))}); pass keys=[...] naming numeric ones")
        return keys

    # -- the corpus scores: the module's compute over the whole set ----------------------------

    def corpus_score(self, outputs: Sequence[str],
                     references: Sequence[str | Sequence[str]] | None = None) -> ScoreResult | list[ScoreResult]:
        """The module's ``compute`` over every item: one ScoreResult per key (a list with several
        keys), named ``corpus_`` + the item score's name."""
        outs, refs = require_batch(outputs, references)
        if refs is None:
            raise MetricInputError(f"{self.name} needs references: pass references=[...]")
        if not outs:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        args = [self._reference_argument(r, k) for k, r in enumerate(refs)]
        with self._lock:
            raw = self._call(outs, args, f"the corpus of {len(outs)} items")
        metadata = {"signature": self.signature, "module_output": _jsonable(raw), "n_items": len(outs)}
        made = mark_unstorable([self._result(f"corpus_{self._result_names[k]}", raw, k,
                                             f"the corpus of {len(outs)} items", metadata) for k in self.keys])
        return made[0] if len(made) == 1 else made


# -- the module ---------------------------------------------------------------------------------

def _import_evaluate() -> Any:
    try:
        import evaluate
    except ImportError as exc:  # pragma: no cover - depends on the evaluate extra
        raise EvaluateModuleNotAvailable(
            "EvaluateMetric needs Hugging Face evaluate: pip install 'opik-metrics[evaluate]'") from exc
    return evaluate


def _resolve_module(evaluate: Any, module: Any, config_name: str | None) -> Any:
    if isinstance(module, evaluate.EvaluationModule):
        if config_name is not None and config_name != module.config_name:
            raise ValueError(f"config_name={config_name!r} applies when loading a module by path or name; the "
                             f"module given has config {module.config_name!r}")
        return module
    if isinstance(module, str):
        return load_evaluate_module(module, config_name=config_name)
    raise ValueError("module: expected an evaluate.EvaluationModule, a metric script path or a hub name, got "
                     f"{type(module).__name__}")


def _string_kind(feature: Any) -> str | None:
    """"text" for a string feature, "list" for a list of strings, None for anything else."""
    from datasets import Value

    if isinstance(feature, Value):
        return "text" if feature.dtype in ("string", "large_string") else None
    inner = feature[0] if isinstance(feature, list) and len(feature) == 1 else getattr(feature, "feature", None)
    if inner is not None and type(feature).__name__ in ("list", "List", "Sequence", "LargeList"):
        return "list" if _string_kind(inner) == "text" else None
    return None


def _reference_mode(module: Any, prediction_input: str, reference_input: str, multi: bool | None) -> bool:
    """Whether references go to the module as lists, from its features (or the user's word)."""
    options = module.features if isinstance(module.features, list) else [module.features]
    name = module.name
    inputs = {prediction_input, reference_input}
    if prediction_input == reference_input:
        raise ValueError("prediction_input and reference_input must differ")
    for option in options:
        if set(option) != inputs:
            raise ValueError(f"the evaluate module {name!r} takes the inputs {sorted(option)}; EvaluateMetric gives "
                             f"it an output and its reference(s) as {prediction_input!r} and {reference_input!r} "
                             "(name them with prediction_input= and reference_input=)")
    kinds = [(_string_kind(o[prediction_input]), _string_kind(o[reference_input])) for o in options]
    accepts = {ref for pred, ref in kinds if pred == "text" and ref is not None}
    if not accepts:
        shown = "; ".join(str(dict(o)) for o in options)
        raise ValueError(f"the evaluate module {name!r} does not score text against text reference(s): its "
                         f"features are {shown}")
    if multi is None:
        return "list" in accepts
    if not isinstance(multi, bool):
        raise ValueError(f"multi_reference: expected True, False or None, got {multi!r}")
    if ("list" if multi else "text") not in accepts:
        raise ValueError(f"multi_reference={multi}: the evaluate module {name!r} takes "
                         f"{'only one reference per item' if multi else 'only a list of references'}")
    return multi


# -- options ------------------------------------------------------------------------------------

def _check_kwargs(kwargs: Mapping[str, Any] | None, inputs: tuple[str, str]) -> dict[str, Any]:
    if kwargs is None:
        return {}
    if not isinstance(kwargs, Mapping) or not all(isinstance(k, str) for k in kwargs):
        raise ValueError(f"compute_kwargs: expected a dict of keyword arguments, got {kwargs!r}")
    clash = sorted(set(kwargs) & set(inputs))
    if clash:
        raise ValueError(f"compute_kwargs: {', '.join(clash)} are the module's inputs, filled from each item")
    return dict(kwargs)


def _check_keys(keys: Sequence[str] | str) -> list[str]:
    chosen = [keys] if isinstance(keys, str) else list(keys) if isinstance(keys, (list, tuple)) else None
    if not chosen or not all(isinstance(k, str) and k for k in chosen):
        raise ValueError(f"keys: expected a non-empty list of key names, got {keys!r}")
    repeated = sorted({k for k in chosen if chosen.count(k) > 1})
    if repeated:
        raise ValueError(f"keys: {', '.join(repeated)} named more than once")
    return chosen


def _check_direction(value: Any, where: str) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"{where}: expected True or False, got {value!r}")
    return value


def _check_bounds(value: Any, where: str) -> Bounds:
    if value is None:
        return (None, None)
    if not isinstance(value, (list, tuple)) or len(value) != 2 or not all(
            v is None or isinstance(v, numbers.Real) and not isinstance(v, bool) for v in value):
        raise ValueError(f"{where}: expected (low, high) with numbers or None, got {value!r}")
    low, high = (None if v is None else float(v) for v in value)
    if low is not None and high is not None and low > high:
        raise ValueError(f"{where}: low {low} is above high {high}")
    return (low, high)


def _per_key(option: str, value: Any, keys: list[str], check: Callable[[Any, str], Any], default: Any) -> dict:
    """``{key: value}`` from one value for every key, or from a dict naming some keys."""
    if isinstance(value, Mapping):
        unknown = sorted(set(value) - set(keys))
        if unknown:
            raise ValueError(f"{option}: {', '.join(map(str, unknown))} not among the keys scored "
                             f"({', '.join(keys)})")
        return {k: check(value[k], f"{option}[{k!r}]") if k in value else default for k in keys}
    checked = check(value, option)
    return {k: checked for k in keys}


# -- values -------------------------------------------------------------------------------------

def _as_number(value: Any) -> float | None:
    """A real number (int, float, numpy scalar or 0-d array; not a bool) as a float, else None."""
    if isinstance(value, bool) or type(value).__name__ == "bool_":
        return None
    if isinstance(value, int) and abs(value) > sys.float_info.max:   # beyond a float: infinite, said in the reason
        return math.inf if value > 0 else -math.inf
    if isinstance(value, numbers.Real):
        return float(value)
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):
        return _as_number(value.item())
    return None


def _shown_number(value: Any) -> str:
    """A value as a reason shows it: an integer beyond a float's range by its size, not its digits."""
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2 ** 1023:
        digits = int(abs(value).bit_length() * math.log10(2)) + 1      # str() of a huge int is refused
        return f"an integer of about {digits} digits, beyond a float's range (scored as {'-' if value < 0 else ''}inf)"
    return str(value)


def _jsonable(value: Any) -> Any:
    """The module's output as JSON values (numpy arrays and scalars turned into lists and numbers)."""
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "tolist"):
        return _jsonable(value.tolist())
    return str(value)


def _where(position: int | None, output: str) -> str:
    if position is not None:
        return f"item {position}"
    shown = output if len(output) <= 40 else output[:37] + "..."
    return f"the item with output {shown!r}"


def _source_hash(module: Any) -> str:
    """A hash of the module's code (the file that defines its class, else the class's source)."""
    try:
        path = inspect.getsourcefile(type(module))
        code = Path(path).read_bytes() if path else inspect.getsource(type(module)).encode()
    except (OSError, TypeError):
        return "unknown"
    return "source-" + hashlib.sha256(code).hexdigest()
