"""Recorded metric facts are checked, not trusted: a corpus score's formula, options and fields must
be those the named metric states (the pack's own metrics, from the table below of what each
states), or fit a registered plugin's formula, so that an edited record header or experiment config
never runs one metric's formula on another's statistics, nor crashes a formula with options it
cannot take. Anything else is a ``RecordedFactsError`` naming where, the metric and the field.
"""
from __future__ import annotations

import importlib
import inspect
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from opik_metrics.core import CorpusFacts, MetricFacts, resolve_formula

_MEAN = "opik_metrics.core.statistics:mean_formula"
_BLEU = "opik_metrics.text.bleu.scorer:bleu_from_statistics"
_CHRF = "opik_metrics.text.chrf.scorer:chrf_from_statistics"
_TER = "opik_metrics.text.ter.scorer:ter_from_statistics"
_COCO = "opik_metrics.text.coco.suite:coco_from_statistics"
_COCO_BLEU = "opik_metrics.text.coco.bleu:coco_bleu_from_statistics"
_METEOR = "opik_metrics.text.meteor.corpus:meteor_from_statistics"
_PERPLEXITY = "opik_metrics.neural.lm.formulas:perplexity_from_statistics"
_KL = "opik_metrics.neural.lm.formulas:kl_from_statistics"

#: The corpus formulas each of the pack's metrics states (a pack metric naming another is refused).
PACK_FORMULAS: dict[str, frozenset[str]] = {
    **{f"opik_metrics.metrics.{kind}": frozenset({_MEAN}) for kind in (
        "rouge.ROUGE", "bertscore.BERTScore", "cider.CIDEr", "clipscore.CLIPScore", "bartscore.BARTScore",
        "gptscore.GPTScore", "unieval.UniEval")},
    "opik_metrics.metrics.bleu.BLEU": frozenset({_BLEU}),
    "opik_metrics.metrics.chrf.CHRF": frozenset({_CHRF}),
    "opik_metrics.metrics.ter.TER": frozenset({_TER}),
    "opik_metrics.metrics.meteor.METEOR": frozenset({_METEOR}),
    "opik_metrics.metrics.coco.COCOCaption": frozenset({_COCO}),
    "opik_metrics.metrics.perplexity.Perplexity": frozenset({_PERPLEXITY}),
    "opik_metrics.metrics.distillation.DistillationKL": frozenset({_KL}),
}


class RecordedFactsError(ValueError):
    """Recorded facts that are not what the named metric states (an edited or damaged header)."""


def _whole(low: int, high: int | None = None) -> Callable[[Any], bool]:
    return lambda v: (isinstance(v, int) and not isinstance(v, bool) and v >= low
                      and (high is None or v <= high))


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _one_of(*values: str) -> Callable[[Any], bool]:
    return lambda v: isinstance(v, str) and v in values


def _is_bool(v: Any) -> bool:
    return isinstance(v, bool)


def _attribute(path: str) -> Any:
    module, _, name = path.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class _Rule:
    """What one of the pack's formulas takes: each option with the values it accepts (in words), and
    the statistics fields it reads given the options (None: the mean's, checked on their own)."""

    options: Mapping[str, tuple[Callable[[Any], bool], str]]
    fields: Callable[[Mapping[str, Any]], tuple[str, ...]] | None


_RULES: dict[str, _Rule] = {
    _MEAN: _Rule({"field": (_whole(0), "a whole number from 0")}, None),
    _BLEU: _Rule({"max_ngram_order": (_whole(1, 100), "a whole number from 1 to 100"),
                  "smooth_method": (_one_of("exp", "floor", "add-k", "none"), "exp, floor, add-k or none"),
                  "smooth_value": (lambda v: v is None or _number(v), "a number or null"),
                  "effective_order": (_is_bool, "true or false"),
                  "weights": (lambda v: v is None or (isinstance(v, list) and all(map(_number, v))),
                              "a list of numbers or null")},
                 lambda o: _attribute("opik_metrics.text.bleu.scorer:statistics_fields")(o["max_ngram_order"])),
    _CHRF: _Rule({"char_order": (_whole(0, 100), "a whole number from 0 to 100"),
                  "word_order": (_whole(0, 100), "a whole number from 0 to 100"),
                  "beta": (lambda v: _number(v) and v > 0, "a number above 0"),
                  "eps_smoothing": (_is_bool, "true or false")},
                 lambda o: _attribute("opik_metrics.text.chrf.scorer:statistics_fields")(o["char_order"],
                                                                                        o["word_order"])),
    _TER: _Rule({}, lambda o: tuple(_attribute("opik_metrics.text.ter.scorer:STATISTICS_FIELDS"))),
    _COCO: _Rule({"key": (_one_of("Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "METEOR", "ROUGE_L", "CIDEr"),
                          "one of pycocoevalcap's keys (Bleu_1..4, METEOR, ROUGE_L, CIDEr)")},
                 lambda o: tuple(_attribute("opik_metrics.text.coco.suite:FIELDS"))),
    _COCO_BLEU: _Rule({"order": (_whole(1, 100), "a whole number from 1 to 100"),
                       "n": (_whole(1, 100), "a whole number from 1 to 100")},
                      lambda o: _attribute("opik_metrics.text.coco.bleu:bleu_fields")(o["n"])),
    _METEOR: _Rule({}, lambda o: tuple(_attribute("opik_metrics.text.meteor.corpus:FIELDS"))),
    _PERPLEXITY: _Rule({}, lambda o: tuple(_attribute("opik_metrics.neural.lm.formulas:PERPLEXITY_FIELDS"))),
    _KL: _Rule({"reduction": (_one_of("mean", "sum"), "mean or sum")},
               lambda o: tuple(_attribute("opik_metrics.neural.lm.formulas:KL_FIELDS"))),
}


def check_recorded_facts(where: str, name: str, facts: MetricFacts) -> None:
    """Refuse (``RecordedFactsError`` naming ``where``, the metric and the field) corpus facts that
    are not what metric ``name`` states: a pack metric's formula must be its own, and every formula
    of the pack's its own options and fields; a plugin's formula takes the options it names."""
    scores = {s.name for s in facts.scores}
    own = PACK_FORMULAS.get(facts.kind) if facts.kind.startswith("opik_metrics.") else None
    for corpus in facts.corpora:
        at = f"{where}: metric {name!r}, corpus score {corpus.name!r}"
        if facts.kind.startswith("opik_metrics.") and (own is None or corpus.formula not in own):
            stated = " or ".join(sorted(own)) if own else "no corpus formula"
            raise RecordedFactsError(f"{at}: field 'formula' is {corpus.formula!r}, but {facts.kind} states "
                                     f"{stated}; the record was edited or damaged (score it again)")
        if (scores or own is not None) and corpus.carrier not in scores:     # a user's metric may state no scores
            raise RecordedFactsError(f"{at}: field 'carrier' is {corpus.carrier!r}, which is not one of the "
                                     f"metric's scores ({', '.join(sorted(scores)) or 'none'})")
        rule = _RULES.get(corpus.formula)
        if rule is None:
            _check_plugin_options(at, corpus)
            continue
        _check_options(at, corpus, rule)
        _check_together(at, corpus)
        expected = rule.fields(corpus.options) if rule.fields is not None else _mean_fields(at, corpus, scores)
        if tuple(corpus.fields) != tuple(expected):
            raise RecordedFactsError(f"{at}: field 'fields' lists {len(corpus.fields)} statistics, but "
                                     f"{corpus.formula} with options {dict(corpus.options)} reads "
                                     f"{len(expected)} ({_listed(expected)}); the record was edited or damaged")
        _check_signature(at, facts, corpus)


def _listed(names: Any) -> str:
    names = list(names)
    return ", ".join(names if len(names) <= 6 else [*names[:3], "...", *names[-2:]])


def _check_options(at: str, corpus: CorpusFacts, rule: _Rule) -> None:
    options = dict(corpus.options)
    unknown = [k for k in options if k not in rule.options]
    missing = [k for k in rule.options if k not in options]
    if unknown or missing:
        said = "; ".join(part for part in (f"unknown {', '.join(map(repr, unknown))}" if unknown else "",
                                           f"missing {', '.join(map(repr, missing))}" if missing else "") if part)
        raise RecordedFactsError(f"{at}: field 'options' ({said}) is not what {corpus.formula} takes "
                                 f"({', '.join(rule.options) or 'no options'})")
    for key, (valid, words) in rule.options.items():
        if not valid(options[key]):
            raise RecordedFactsError(f"{at}: field 'options.{key}' is {options[key]!r}; it must be {words}")


def _check_together(at: str, corpus: CorpusFacts) -> None:
    """Options that must agree with each other: BLEU's weights, one per order; chrF, some order."""
    options = corpus.options
    if corpus.formula == _BLEU and options["weights"] is not None \
            and len(options["weights"]) != options["max_ngram_order"]:
        raise RecordedFactsError(f"{at}: field 'options.weights' has {len(options['weights'])} weights for "
                                 f"max_ngram_order {options['max_ngram_order']}")
    if corpus.formula == _CHRF and options["char_order"] + options["word_order"] == 0:
        raise RecordedFactsError(f"{at}: fields 'options.char_order' and 'options.word_order' are both 0")
    if corpus.formula == _COCO_BLEU and options["order"] > options["n"]:
        raise RecordedFactsError(f"{at}: field 'options.order' is {options['order']}, above n {options['n']}")


def _mean_fields(at: str, corpus: CorpusFacts, scores: set[str]) -> tuple[str, ...]:
    """A mean's fields: scores of the metric, then the item count; ``field`` names the carrier."""
    fields, position = tuple(corpus.fields), corpus.options["field"]
    if not fields or fields[-1] != "items" or not set(fields[:-1]) <= scores:
        raise RecordedFactsError(f"{at}: field 'fields' must list the metric's scores and then 'items', "
                                 f"got {list(fields)}")
    if position >= len(fields) - 1 or fields[position] != corpus.carrier:
        raise RecordedFactsError(f"{at}: field 'options.field' is {position}, which is not the position of its "
                                 f"carrier {corpus.carrier!r} in {list(fields[:-1])}")
    return fields


def _check_signature(at: str, facts: MetricFacts, corpus: CorpusFacts) -> None:
    """The options a signature records too must agree with it (chrF's character and word orders)."""
    if facts.signature is None or corpus.formula != _CHRF:
        return
    for field, option in (("nc", "char_order"), ("nw", "word_order")):
        signed = facts.signature.fields.get(field)
        if signed is not None and str(signed) != str(corpus.options[option]):
            raise RecordedFactsError(f"{at}: field 'options.{option}' is {corpus.options[option]!r}, but the "
                                     f"metric's signature records {field}:{signed}")


def _check_plugin_options(at: str, corpus: CorpusFacts) -> None:
    """A plugin's formula (registered, resolved already) takes every option recorded as a keyword."""
    try:
        parameters = inspect.signature(resolve_formula(corpus.formula)).parameters
    except (TypeError, ValueError):
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    takes = {n for n, p in parameters.items() if p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)}
    unknown = [k for k in corpus.options if k not in takes]
    if unknown:
        raise RecordedFactsError(f"{at}: field 'options' names {', '.join(map(repr, unknown))}, which "
                                 f"{corpus.formula} does not take")
