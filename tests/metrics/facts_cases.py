"""Metric configurations whose stated facts and command-line options must not change when the way a
metric is written changes: ``test_facts_unchanged.py`` compares them with ``facts_before.json``.

``facts_before.json`` was written once by running this file as a script with the package (and the
test helpers) of the code before the metric base classes were reworked (lazy facts, a class-level
default name, statistics and whole-set metrics apart, option defaults from the constructor), so the
expected values come from that code, not from the code under test::

    PYTHONPATH=<checkout of that code> python tests/metrics/facts_cases.py "<which code>" > facts_before.json

Model paths (temporary folders) are written as ``<bert>``, ``<gpt2>``, ... so the records compare
across runs; package versions in signatures are compared only for their keys (see ``stable``). An
option's help is recorded as ``--help`` shows it.
"""
from __future__ import annotations

import json
import re
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any, Callable, Iterable

REFERENCES = [["a dog runs on the beach"], ["two cats are sleeping", "cats sleep"], ["a red bus in the city"]]

#: A local ``evaluate`` metric script (no hub here): one reference per item, two numeric keys.
EVALUATE_SCRIPT = textwrap.dedent('''\
    import datasets
    import evaluate


    class FactsMatch(evaluate.Metric):
        def _info(self):
            return evaluate.MetricInfo(description="facts test module", citation="", inputs_description="",
                                       features=datasets.Features({"predictions": datasets.Value("string"),
                                                                   "references": datasets.Value("string")}))

        def _compute(self, predictions, references):
            hits = sum(p == r for p, r in zip(predictions, references))
            return {"exact": hits / len(predictions), "count": len(predictions)}
    ''')


def build_models(folder: Path) -> dict[str, str]:
    """The tiny models the model-backed metrics load (built from configs, no hub)."""
    from tests.neural.lm_fixtures import build_gpt2
    from tests.neural.tiny_clip import build_tiny_clip
    from tests.neural.tiny_models import build_bert
    from tests.neural.tiny_seq2seq import build_bart, build_t5

    script = folder / "facts_match" / "facts_match.py"
    script.parent.mkdir(parents=True)
    script.write_text(EVALUATE_SCRIPT, encoding="utf-8")
    return {"bert": str(build_bert(folder / "bert")), "gpt2": str(build_gpt2(folder / "gpt2")),
            "student": str(build_gpt2(folder / "student", seed=5, layers=1)),
            "clip": str(build_tiny_clip(folder / "clip")), "evaluate": str(script.parent),
            "bart": str(build_bart(folder / "bart")), "t5": str(build_t5(folder / "t5"))}


def cases(models: dict[str, str]) -> dict[str, Callable[[], Any]]:
    """Case name -> a function building the metric (and, for some, fitting its corpus context).
    The ``evaluate_*`` cases need Hugging Face ``evaluate`` (an extra)."""
    from opik_metrics import (BARTScore, BERTScore, BLEU, CHRF, CIDEr, CLIPScore, COCOCaption, DistillationKL,
                              EvaluateMetric, GPTScore, METEOR, Perplexity, ROUGE, TER, UniEval)

    def fitted(metric: Any) -> Any:
        metric.fit_corpus(REFERENCES)
        return metric

    lms = {"teacher": models["gpt2"], "student": models["student"]}
    return {
        "rouge": lambda: ROUGE(track=False),
        "rouge_other": lambda: ROUGE(name="other", track=False),
        "rouge_types": lambda: ROUGE(rouge_types=["rougeLsum", "rougeW", "rougeSU4"], use_stemmer=True,
                                     rouge155=True, track=False),
        "bleu": lambda: BLEU(track=False),
        "bleu_other": lambda: BLEU(name="sacre", track=False),
        "bleu_options": lambda: BLEU(max_ngram_order=2, smooth_method="floor", corpus_effective_order=True,
                                     weights=[0.5, 0.5], lowercase=True, tokenize="intl", track=False),
        "chrf": lambda: CHRF(track=False),
        "chrf_pp": lambda: CHRF(word_order=2, name="chrfpp", track=False),
        "ter": lambda: TER(track=False),
        "ter_options": lambda: TER(case_sensitive=True, normalized=True, name="t", track=False),
        "meteor": lambda: METEOR(track=False),
        "meteor_other": lambda: METEOR(name="m", track=False),
        "cider": lambda: CIDEr(track=False),
        "cider_df": lambda: CIDEr(df_references=REFERENCES, track=False),
        "cider_fitted": lambda: fitted(CIDEr(name="c", track=False)),
        "coco": lambda: COCOCaption(track=False),
        "coco_no_meteor": lambda: COCOCaption(meteor=False, name="cc", track=False),
        "coco_fitted": lambda: fitted(COCOCaption(meteor=False, track=False)),
        "bertscore": lambda: BERTScore(model=models["bert"], num_layers=2, track=False),
        "bertscore_other": lambda: BERTScore(model=models["bert"], num_layers=2, name="minilm", track=False),
        "perplexity": lambda: Perplexity(model=models["gpt2"], track=False),
        "perplexity_other": lambda: Perplexity(model=models["gpt2"], name="ppl", text_field="text", track=False),
        "distillation_kl": lambda: DistillationKL(**lms, track=False),
        "distillation_kl_sum": lambda: DistillationKL(**lms, reduction="sum", temperature=2.0, name="kl",
                                                      track=False),
        "clipscore": lambda: CLIPScore(model=models["clip"], track=False),
        "clipscore_other": lambda: CLIPScore(model=models["clip"], weight=2.0, name="b16", track=False),
        "bartscore": lambda: BARTScore(model=models["bart"], track=False),
        "bartscore_faithfulness": lambda: BARTScore(model=models["bart"], direction=["faithfulness", "f"],
                                                    prompt=["To summarize", "In short"], name="bs", track=False),
        "unieval": lambda: UniEval(model=models["t5"], track=False),
        "unieval_dialogue": lambda: UniEval(model=models["t5"], task="dialogue", dimensions=["groundedness"],
                                            name="ue", track=False),
        "gptscore": lambda: GPTScore(model=models["gpt2"], track=False),
        "gptscore_other": lambda: GPTScore(model=models["gpt2"], aspect="fluency", name="gs", track=False),
        "evaluate": lambda: EvaluateMetric(models["evaluate"], track=False),
        "evaluate_options": lambda: EvaluateMetric(models["evaluate"], keys=["exact"], higher_is_better=False,
                                                   bounds=(0, 1), name="em", track=False),
    }


def record(models: dict[str, str], names: Iterable[str] | None = None) -> dict[str, Any]:
    """The facts of every case (or of those ``names``) as ``as_dict`` gives them, model paths
    replaced by their names, and every catalog card's options as argparse gets them."""
    from opik_metrics.core import facts_of
    from opik_metrics.metrics.catalog import metric_card, metric_classes

    facts = {}
    builders = cases(models)
    for name in builders if names is None else names:
        build = builders[name]
        text = json.dumps(facts_of(build()).as_dict(), sort_keys=True)
        for model, path in models.items():
            text = text.replace(json.dumps(path)[1:-1], f"<{model}>")
        facts[name] = json.loads(text)
    options = {card.name: [[o.flag, o.argument, _settings(o.argparse_settings())] for o in card.options]
               for card in map(metric_card, metric_classes()) if metric_classes()[card.name].__module__.startswith(
                   "opik_metrics.")}
    return {"facts": facts, "options": options}


def _settings(settings: dict[str, Any]) -> dict[str, Any]:
    """argparse settings as JSON: ``type`` by its name, ``help`` as ``--help`` shows it (with
    ``%(default)s`` expanded, as argparse expands it)."""
    shown = {k: (getattr(v, "__name__", repr(v)) if k == "type" else v) for k, v in settings.items()}
    if shown.get("help"):
        shown["help"] = shown["help"] % {"default": settings.get("default"), "dest": settings.get("dest")}
    return shown


#: Signature fields whose values follow the installed packages (versions, a model config's hash).
VOLATILE = {"version", "module_version", "opik-metrics", "opik_metrics", "nltk", "transformers", "torch",
            "sacrebleu", "bert_score", "numpy", "rouge_score_rs", "cfg"}


#: ``key:value`` of a volatile field nested in another field's text (a model's signature inside a
#: teacher's or student's), the key not part of a longer name (``version`` in ``module_version``).
_NESTED = re.compile(r"(?<![\w-])(" + "|".join(map(re.escape, sorted(VOLATILE))) + r"):(?!<volatile>)[^|\[\]]+")


def _blanked(value: Any) -> Any:
    return _NESTED.sub(r"\1:<volatile>", value) if isinstance(value, str) else value


def stable(recorded: Any) -> Any:
    """A record with the values of signature fields that follow package versions blanked, in the
    fields and in the text (their keys stay), so that upgrading a package does not read as a change."""
    if isinstance(recorded, dict):
        if isinstance(recorded.get("fields"), dict) and isinstance(recorded.get("text"), str):
            text = recorded["text"]
            for key, value in recorded["fields"].items():
                if key in VOLATILE:
                    text = text.replace(f"{key}:{value}", f"{key}:<volatile>")
            fields = {k: ("<volatile>" if k in VOLATILE else stable(v)) for k, v in recorded["fields"].items()}
            return {**{k: v for k, v in recorded.items() if k != "versions"},   # named since (issue 48): checked apart
                    "fields": {k: _blanked(v) for k, v in fields.items()}, "text": _blanked(text)}
        return {k: stable(v) for k, v in recorded.items()}
    if isinstance(recorded, list):
        return [stable(v) for v in recorded]
    return recorded


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        made = record(build_models(Path(tmp)))
    json.dump({**made, "made_from": " ".join(sys.argv[1:])}, sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
