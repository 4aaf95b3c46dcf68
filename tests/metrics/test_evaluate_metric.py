"""EvaluateMetric: any Hugging Face ``evaluate`` module as an Opik metric.

Local metric scripts written here stand in for hub modules (no hub on these machines). Oracles:
sacrebleu itself (sentence and corpus BLEU) and the module's own ``compute``; then hand-made
cases (keys, names, facts, signature, references), errors, concurrency (16 threads, and inside
``opik.evaluate_on_dict_items``'s 16 scoring threads), the offline hub name, and a comparison of
two stored experiments."""
from __future__ import annotations

import hashlib
import inspect
import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
import sacrebleu

evaluate = pytest.importorskip("evaluate")

from opik_metrics.core import MetricFacts, MetricInputError  # noqa: E402
from opik_metrics.metric_kit.base import StatisticsMetric, WholeSetMetric  # noqa: E402
from opik_metrics.metrics.evaluate_module import EvaluateMetric, module_lock  # noqa: E402
from opik_metrics.neural.models.evaluate_loading import (EvaluateModuleNotAvailable,  # noqa: E402
                                                         is_local_spec)

ROOT = Path(__file__).resolve().parents[2]

_HEAD = """\
import datasets
import evaluate
import numpy as np

def _features(references):
    return datasets.Features({"predictions": datasets.Value("string"), "references": references})

def _info(features):
    return evaluate.MetricInfo(description="test module", citation="", inputs_description="", features=features)
"""

SCRIPTS = {
    # one reference per item, checked to be a string; ignore_case is a compute keyword
    "exact_match": """
class ExactMatch(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references, ignore_case=False):
        for r in references:
            if not isinstance(r, str):
                raise TypeError(f"expected one string reference, got {r!r}")
        norm = str.lower if ignore_case else (lambda s: s)
        hits = sum(norm(p) == norm(r) for p, r in zip(predictions, references))
        return {"exact_match": hits / len(predictions), "count": len(predictions)}
""",
    # evaluate's sacrebleu module (0.4.6 form): a list of references or one string per item
    "sbleu": """
import sacrebleu as scb

class Sbleu(evaluate.Metric):
    def _info(self):
        return _info([_features(datasets.Sequence(datasets.Value("string", id="sequence"), id="references")),
                      _features(datasets.Value("string", id="sequence"))])

    def _compute(self, predictions, references, smooth_method="exp", smooth_value=None, force=False,
                 lowercase=False, tokenize=None, use_effective_order=False):
        if isinstance(references[0], str):
            references = [[ref] for ref in references]
        n = len(references[0])
        if any(len(refs) != n for refs in references):
            raise ValueError("Sacrebleu requires the same number of references for each prediction")
        transformed = [[refs[i] for refs in references] for i in range(n)]
        out = scb.corpus_bleu(predictions, transformed, smooth_method=smooth_method, smooth_value=smooth_value,
                              force=force, lowercase=lowercase, use_effective_order=use_effective_order,
                              **(dict(tokenize=tokenize) if tokenize else {}))
        return {"score": out.score, "counts": out.counts, "totals": out.totals, "precisions": out.precisions,
                "bp": out.bp, "sys_len": out.sys_len, "ref_len": out.ref_len}
""",
    # numeric scalars of several kinds, and values that are not numeric scalars
    "multikey": """
class Multikey(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        ratio = sum(len(p) for p in predictions) / max(1, sum(len(r) for r in references))
        shared = [len(set(p.split()) & set(r.split())) for p, r in zip(predictions, references)]
        return {"length_ratio": np.float32(ratio), "overlap": np.array(float(np.mean(shared))),
                "items": len(predictions), "all_same": all(p == r for p, r in zip(predictions, references)),
                "label": "fine", "per_item": shared}
""",
    # a verdict as text next to a number
    "verdict": """
class Verdict(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        good = sum(p == r for p, r in zip(predictions, references)) / len(predictions)
        return {"verdict": "good" if good > 0.5 else "poor", "confidence": good}
""",
    "words_only": """
class WordsOnly(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        return {"verdict": "fine"}
""",
    "fussy": """
class Fussy(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        if any(not p for p in predictions):
            raise ValueError("an empty prediction")
        return {"length": float(sum(len(p) for p in predictions))}
""",
    "undefined": """
class Undefined(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        return {"ratio": float("nan") if not any(predictions) else 1.0}
""",
    # sacrebleu again, with compute overridden: scored through compute (the Arrow path)
    "sbleu_compute": """
import sacrebleu as scb

class SbleuCompute(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Sequence(datasets.Value("string"))))

    def compute(self, **kwargs):
        "evaluate appends the inputs description to this docstring: an override needs one."
        return evaluate.Metric.compute(self, **kwargs)

    def _compute(self, predictions, references):
        out = scb.corpus_bleu(predictions, [list(refs) for refs in zip(*references)])
        return {"score": out.score}
""",
    "huge": """
class Huge(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        return {"score": 10 ** 400}
""",
    "no_class": """
X = 1
""",
    "raises": """
raise RuntimeError("the script's own bug")
""",
    "probe_fails": """
class ProbeFails(evaluate.Metric):
    def _info(self):
        return _info(_features(datasets.Value("string")))

    def _compute(self, predictions, references):
        raise KeyError("always")
""",
    "labels": """
class Labels(evaluate.Metric):
    def _info(self):
        return _info(datasets.Features({"predictions": datasets.Value("int32"),
                                        "references": datasets.Value("int32")}))

    def _compute(self, predictions, references):
        return {"accuracy": sum(p == r for p, r in zip(predictions, references)) / len(predictions)}
""",
    "comet_like": """
class CometLike(evaluate.Metric):
    def _info(self):
        return _info(datasets.Features({"sources": datasets.Value("string"), "predictions": datasets.Value("string"),
                                        "references": datasets.Value("string")}))

    def _compute(self, sources, predictions, references):
        return {"score": 0.0}
""",
}

PREDS = ["the cat sat on the mat", "a quick brown fox jumps over the dog", "hello there general kenobi",
         "on our way to ankh morpork", "", "the product was good . i enjoyed it"]
REFS = ["the cat is on the mat", "the quick brown fox jumped over the lazy dog", "hello there general kenobi",
        "goodbye ankh morpork", "an empty output", "the product was very good"]
REFS2 = ["there is a cat on the mat", "a fast brown fox leaps over a dog", "hello there !", "ankh morpork",
         "nothing", "i enjoyed the product"]


@pytest.fixture(scope="module")
def scripts(tmp_path_factory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("evaluate_scripts")
    paths = {}
    for name, body in SCRIPTS.items():
        (folder / name).mkdir()
        path = folder / name / f"{name}.py"
        path.write_text(_HEAD + textwrap.dedent(body), encoding="utf-8")
        paths[name] = str(path)
    return paths


@pytest.fixture(scope="module")
def sbleu(scripts):
    return EvaluateMetric(scripts["sbleu"], keys=["score"], track=False)


def _values(results):
    return {r.name: r.value for r in results}


def _transposed(refs):
    return [list(column) for column in zip(*refs)]


# ---- oracle: sacrebleu, and the module's own compute ------------------------------------------

def test_items_and_corpus_equal_sacrebleu_through_the_module(scripts, sbleu):
    items = sbleu.score_batch(PREDS, REFS)
    for p, r, results in zip(PREDS, REFS, items):
        (result,) = results
        # the module's per-item compute is sacrebleu's corpus BLEU of one segment (no effective order)
        assert result.value == pytest.approx(sacrebleu.corpus_bleu([p], [[r]]).score, abs=1e-9)
    corpus = sbleu.corpus_score(PREDS, REFS)
    assert corpus.name == "corpus_evaluate_sbleu"
    assert corpus.value == pytest.approx(sacrebleu.corpus_bleu(PREDS, [REFS]).score, abs=1e-9)
    assert corpus.metadata["module_output"]["counts"] == sacrebleu.corpus_bleu(PREDS, [REFS]).counts


def test_effective_order_gives_sentence_bleu_per_item_with_several_references(scripts):
    metric = EvaluateMetric(scripts["sbleu"], keys="score", compute_kwargs={"use_effective_order": True},
                            track=False)
    refs = [[a, b] for a, b in zip(REFS, REFS2)]
    for p, r, results in zip(PREDS, refs, metric.score_batch(PREDS, refs)):
        assert results[0].value == pytest.approx(sacrebleu.sentence_bleu(p, r).score, abs=1e-9)
        assert results[0].metadata["n_references"] == 2
    corpus = metric.corpus_score(PREDS, refs)
    assert corpus.value == pytest.approx(
        sacrebleu.corpus_bleu(PREDS, _transposed(refs), use_effective_order=True).score, abs=1e-9)
    assert metric.score(PREDS[0], refs[0])[0].value == pytest.approx(sacrebleu.sentence_bleu(PREDS[0], refs[0]).score,
                                                                     abs=1e-9)


@pytest.mark.parametrize("name, keys", [("sbleu", None), ("exact_match", None), ("multikey", None),
                                        ("sbleu_compute", None)])
def test_item_scores_equal_the_modules_own_compute(scripts, name, keys):
    """Item scores come from ``_compute`` on the item's lists where compute's Arrow round trip
    cannot change them: the same numbers as calling ``compute`` on the item."""
    module = evaluate.load(scripts[name])
    metric = EvaluateMetric(module, keys=keys, track=False)
    refs = [[r] for r in REFS] if metric.multi_reference else REFS      # what the module takes
    for p, r, results in zip(PREDS, refs, metric.score_batch(PREDS, REFS)):
        want = module.compute(predictions=[p], references=[r])
        assert _values(results) == {metric._result_names[k]: float(want[k]) for k in metric.keys}
    corpus = metric.corpus_score(PREDS, REFS)
    made = corpus if isinstance(corpus, list) else [corpus]
    want = module.compute(predictions=PREDS, references=refs)
    assert {c.name: c.value for c in made} == {f"corpus_{metric._result_names[k]}": float(want[k]) for k in metric.keys}


def test_a_module_that_overrides_compute_is_scored_through_compute(scripts, monkeypatch):
    metric = EvaluateMetric(scripts["sbleu_compute"], track=False)
    monkeypatch.setattr(metric.module, "_compute", lambda **kw: pytest.fail("compute was bypassed"), raising=False)
    called = []
    monkeypatch.setattr(metric.module, "compute", lambda **kw: called.append(kw) or {"score": 1.0})
    assert metric.score("a b", "a b")[0].value == 1.0
    assert called == [{"predictions": ["a b"], "references": [["a b"]]}]


# ---- keys, names, facts, signature ------------------------------------------------------------

def test_default_keys_are_the_numeric_scalars_in_the_modules_order(scripts):
    metric = EvaluateMetric(scripts["multikey"], track=False)
    assert metric.keys == ["length_ratio", "overlap", "items"]          # bool, str and list left out
    results = metric.score("the cat sat", "the cat ran")
    assert [r.name for r in results] == ["evaluate_multikey_length_ratio", "evaluate_multikey_overlap",
                                         "evaluate_multikey_items"]
    assert _values(results)["evaluate_multikey_overlap"] == 2.0 and all(type(r.value) is float for r in results)
    assert results[0].metadata["module_output"]["per_item"] == [2]        # the whole output, as JSON values
    json.dumps(results[0].metadata)
    bleu_keys = EvaluateMetric(scripts["sbleu"], track=False).keys
    assert bleu_keys == ["score", "bp", "sys_len", "ref_len"]


def test_names_one_key_takes_the_metric_name_several_are_prefixed(scripts):
    one = EvaluateMetric(scripts["exact_match"], keys=["exact_match"], track=False)
    assert [r.name for r in one.score("a", "a")] == ["evaluate_exact_match"]
    renamed = EvaluateMetric(scripts["exact_match"], name="em", track=False)
    assert [r.name for r in renamed.score("a", "a")] == ["em_exact_match", "em_count"]
    made = renamed.corpus_score(["a", "b"], ["a", "c"])
    assert [(r.name, r.value) for r in made] == [("corpus_em_exact_match", 0.5), ("corpus_em_count", 2.0)]
    assert one.corpus_score(["a"], ["a"]).name == "corpus_evaluate_exact_match"


def test_facts_state_directions_bounds_and_whole_set_corpus_scores(scripts):
    metric = EvaluateMetric(scripts["sbleu"], keys=["score", "bp", "sys_len"], bounds={"score": (0, 100)},
                            higher_is_better={"sys_len": False}, track=False)
    facts = metric.facts
    assert [(s.name, s.higher_is_better, s.bounds) for s in facts.scores] == [
        ("evaluate_sbleu_score", True, (0.0, 100.0)), ("evaluate_sbleu_bp", True, (None, None)),
        ("evaluate_sbleu_sys_len", False, (None, None))]
    assert facts.corpus is None and facts.own_corpus is None              # no summable statistics
    assert [s.name for s in facts.whole_set_corpora] == ["corpus_evaluate_sbleu_score", "corpus_evaluate_sbleu_bp",
                                                         "corpus_evaluate_sbleu_sys_len"]
    assert facts.score("corpus_evaluate_sbleu_sys_len").higher_is_better is False
    assert MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))).as_dict() == facts.as_dict()
    lower = EvaluateMetric(scripts["exact_match"], keys="exact_match", higher_is_better=False, bounds=(0, 1),
                           track=False)
    assert lower.higher_is_better is False and lower.facts.higher_is_better is False
    assert lower.facts.whole_set_corpora[0].bounds == (0.0, 1.0)


def test_a_whole_set_metric_has_no_statistics_to_call(sbleu):
    """Its corpus score is the module's compute over the whole set: it is a WholeSetMetric, whose
    facts name no summable corpus score, and it offers no statistics methods that could only fail."""
    assert isinstance(sbleu, WholeSetMetric) and not isinstance(sbleu, StatisticsMetric)
    assert not any(hasattr(sbleu, name) for name in ("statistics", "item_statistics", "from_statistics",
                                                     "corpus_value"))
    assert sbleu.facts.corpus is None and sbleu.facts.whole_set_corpora


def test_signature_names_module_config_hash_kwargs_and_versions(scripts):
    module = evaluate.load(scripts["sbleu"])
    metric = EvaluateMetric(module, keys="score", compute_kwargs={"tokenize": "intl", "lowercase": True}, track=False)
    fields = metric.signature.fields
    code = hashlib.sha256(Path(inspect.getsourcefile(type(module))).read_bytes()).hexdigest()
    assert fields == {"evaluate": "sbleu", "config": "default", "type": "metric", "hash": f"source-{code}",
                      "refs": "multi", "kwargs": {"lowercase": True, "tokenize": "intl"},
                      "version": evaluate.__version__}
    assert str(metric.signature).startswith(f"evaluate:sbleu|config:default|type:metric|hash:source-{code[:5]}")
    result = metric.score("The cat.", "the cat .")[0]
    assert result.metadata["signature"] == metric.signature
    assert result.value == pytest.approx(sacrebleu.corpus_bleu(["The cat."], [["the cat ."]], tokenize="intl",
                                                               lowercase=True).score, abs=1e-9)
    assert metric.facts.signature == metric.signature


def test_a_module_object_a_script_and_its_folder_score_alike(scripts):
    by_object = EvaluateMetric(evaluate.load(scripts["sbleu"]), keys="score", track=False)
    by_folder = EvaluateMetric(str(Path(scripts["sbleu"]).parent), keys="score", track=False)
    by_script = EvaluateMetric(scripts["sbleu"], keys="score", track=False)
    want = [_values(r) for r in by_script.score_batch(PREDS, REFS)]
    assert [_values(r) for r in by_object.score_batch(PREDS, REFS)] == want
    assert [_values(r) for r in by_folder.score_batch(PREDS, REFS)] == want


# ---- references --------------------------------------------------------------------------------

def test_a_single_reference_module_gets_the_string(scripts):
    metric = EvaluateMetric(scripts["exact_match"], keys="exact_match", compute_kwargs={"ignore_case": True},
                            track=False)
    assert metric.multi_reference is False
    assert [r[0].value for r in metric.score_batch(["A", "b"], [["a"], "c"])] == [1.0, 0.0]
    assert metric.corpus_score(["A", "b"], [["a"], "b"]).value == 1.0
    with pytest.raises(MetricInputError, match=r"item 1, field 'reference': the evaluate module 'exact_match' "
                                               r"takes one reference per item, got 2"):
        metric.score_batch(["a", "b"], ["a", ["b", "c"]])


def test_multi_reference_follows_the_features_or_the_users_word(scripts):
    as_strings = EvaluateMetric(scripts["sbleu"], keys="score", multi_reference=False, track=False)
    assert as_strings.multi_reference is False and as_strings.signature.fields["refs"] == "single"
    assert as_strings.score(PREDS[0], REFS[0])[0].value == pytest.approx(
        sacrebleu.corpus_bleu([PREDS[0]], [[REFS[0]]]).score, abs=1e-9)
    with pytest.raises(ValueError, match="multi_reference=True: the evaluate module 'exact_match' takes only one"):
        EvaluateMetric(scripts["exact_match"], multi_reference=True, track=False)
    with pytest.raises(ValueError, match="multi_reference=False: the evaluate module 'sbleu_compute' takes only a"):
        EvaluateMetric(scripts["sbleu_compute"], multi_reference=False, track=False)


# ---- errors --------------------------------------------------------------------------------------

def test_a_string_for_a_requested_key_names_module_key_and_item(scripts):
    metric = EvaluateMetric(scripts["verdict"], keys=["confidence", "verdict"], track=False)
    with pytest.raises(MetricInputError, match=r"the evaluate module 'verdict' returned str 'poor' for key 'verdict' "
                                               r"on item 0, not a number"):
        metric.score_batch(["x", "y"], ["a", "y"])
    with pytest.raises(MetricInputError, match=r"key 'verdict' on the item with output 'y', not a number"):
        metric.score("y", "y")
    assert EvaluateMetric(scripts["verdict"], track=False).keys == ["confidence"]
    with pytest.raises(MetricInputError, match="'words_only' returns no numeric scalar .keys: verdict."):
        EvaluateMetric(scripts["words_only"], track=False)
    missing = EvaluateMetric(scripts["verdict"], keys=["score"], track=False)
    with pytest.raises(MetricInputError, match=r"returned no key 'score' on item 0 \(its keys: verdict, confidence\)"):
        missing.score_batch(["a"], ["a"])


def test_non_string_inputs_name_item_and_field(sbleu):
    with pytest.raises(MetricInputError, match=r"item 1, field 'output': expected a string, got int"):
        sbleu.score_batch(["a", 5], ["a", "b"])
    with pytest.raises(MetricInputError, match=r"item 0, field 'reference\[1\]': expected a string, got None"):
        sbleu.score_batch(["a"], [["a", None]])
    with pytest.raises(MetricInputError, match=r"field 'reference': expected a string or a list of strings, got None"):
        sbleu.score("a")
    with pytest.raises(MetricInputError, match="needs references"):
        sbleu.score_batch(["a"])
    with pytest.raises(MetricInputError, match="needs at least one item"):
        sbleu.corpus_score([], [])


def test_a_module_error_names_the_module_and_the_item(scripts):
    metric = EvaluateMetric(scripts["fussy"], track=False)
    with pytest.raises(MetricInputError, match=r"the evaluate module 'fussy' failed on item 2: ValueError: an empty "
                                               "prediction"):
        metric.score_batch(["a", "b", ""], ["a", "b", "c"])
    with pytest.raises(MetricInputError, match=r"failed on the corpus of 3 items: ValueError"):
        metric.corpus_score(["a", "b", ""], ["a", "b", "c"])


def test_a_value_that_is_not_finite_is_kept_with_a_reason(scripts):
    metric = EvaluateMetric(scripts["undefined"], track=False)
    defined, undefined = metric.score_batch(["a", ""], ["a", "b"])
    assert defined[0].value == 1.0 and defined[0].reason is None
    assert undefined[0].metadata["unsent_value"] == "nan"                   # NaN, as the module says,
    assert undefined[0].scoring_failed and undefined[0].value == 0.0        # failed: no Opik server stores it
    assert undefined[0].reason.startswith("the evaluate module 'undefined' returned nan for 'ratio'; the metric computed "
                                          "no number (nan)")


def test_bad_options_fail_when_the_metric_is_built(scripts):
    with pytest.raises(ValueError, match=r"higher_is_better: scor not among the keys scored \(score\)"):
        EvaluateMetric(scripts["sbleu"], keys="score", higher_is_better={"scor": False}, track=False)
    with pytest.raises(ValueError, match=r"higher_is_better\['score'\]: expected True or False"):
        EvaluateMetric(scripts["sbleu"], keys="score", higher_is_better={"score": "yes"}, track=False)
    with pytest.raises(ValueError, match=r"bounds: low 1.0 is above high 0.0"):
        EvaluateMetric(scripts["sbleu"], keys="score", bounds=(1, 0), track=False)
    with pytest.raises(ValueError, match="compute_kwargs: references are the module's inputs"):
        EvaluateMetric(scripts["sbleu"], keys="score", compute_kwargs={"references": []}, track=False)
    with pytest.raises(ValueError, match="keys: score named more than once"):
        EvaluateMetric(scripts["sbleu"], keys=["score", "score"], track=False)
    with pytest.raises(ValueError, match=r"'comet_like' takes the inputs \['predictions', 'references', 'sources'\]"):
        EvaluateMetric(scripts["comet_like"], keys="score", track=False)
    with pytest.raises(ValueError, match="'labels' does not score text against text reference"):
        EvaluateMetric(scripts["labels"], keys="accuracy", track=False)
    with pytest.raises(ValueError, match="module: expected an evaluate.EvaluationModule"):
        EvaluateMetric(42, track=False)
    with pytest.raises(ValueError, match="config_name='other' applies when loading"):
        EvaluateMetric(evaluate.load(scripts["sbleu"]), config_name="other", keys="score", track=False)
    with pytest.raises(EvaluateModuleNotAvailable, match="'./no/such/metric.py': no metric script there"):
        EvaluateMetric("./no/such/metric.py", track=False)


# ---- the hub, offline -----------------------------------------------------------------------------

def test_local_paths_and_hub_names_are_told_apart(tmp_path):
    assert is_local_spec("./metric.py") and is_local_spec("metric.py") and is_local_spec(str(tmp_path))
    assert is_local_spec("a/b/c") and not is_local_spec("sacrebleu") and not is_local_spec("someone/metric")


def test_a_hub_name_offline_is_a_quick_error_naming_the_module():
    cached = Path(evaluate.config.HF_MODULES_CACHE) / "evaluate_modules" / "metrics" / "evaluate-metric--sacrebleu"
    if cached.exists():
        pytest.skip("sacrebleu is in this machine's evaluate cache: it loads offline")
    start = time.monotonic()
    with pytest.raises(EvaluateModuleNotAvailable) as raised:
        EvaluateMetric("sacrebleu", track=False)
    assert time.monotonic() - start < 15
    message = str(raised.value)
    assert "could not load the evaluate module 'sacrebleu'" in message and "HF_HUB_OFFLINE" in message
    assert "local metric script" in message


class _Blackhole:
    """A proxy that accepts connections and never answers: a network that drops packets."""

    def __init__(self) -> None:
        self.server = socket.socket()
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(64)
        self.held: list[socket.socket] = []
        self.stop = threading.Event()
        threading.Thread(target=self._hold, daemon=True).start()

    def _hold(self) -> None:
        self.server.settimeout(0.2)
        while not self.stop.is_set():
            try:
                self.held.append(self.server.accept()[0])
            except OSError:
                continue

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.getsockname()[1]}"

    def close(self) -> None:
        self.stop.set()
        for conn in self.held:
            conn.close()
        self.server.close()


def test_a_hub_name_behind_a_silent_network_ends_in_seconds(tmp_path):
    """No offline variable set, and the hub never answers (evaluate alone waits minutes here: up
    to 100 s a request, six requests): the metric is refused within seconds, naming the module."""
    hole = _Blackhole()
    offline = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE", "HF_EVALUATE_OFFLINE", "HF_DATASETS_OFFLINE")
    env = {k: v for k, v in os.environ.items() if k not in (*offline, "NO_PROXY", "no_proxy")}
    env.update(HTTPS_PROXY=hole.url, HTTP_PROXY=hole.url, https_proxy=hole.url, http_proxy=hole.url,
               HF_HOME=str(tmp_path / "hf"))          # an empty cache: nothing loaded online before
    code = textwrap.dedent("""
        import json, time
        import evaluate
        from opik_metrics.metrics.evaluate_module import EvaluateMetric
        start = time.monotonic()
        try:
            EvaluateMetric("sacrebleu", track=False)
            outcome = "loaded"
        except Exception as exc:
            outcome = f"{type(exc).__name__}: {exc}"
        print(json.dumps({"seconds": time.monotonic() - start, "outcome": outcome}))
    """)
    try:
        done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                              timeout=180)
    finally:
        hole.close()
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["outcome"].startswith("EvaluateModuleNotAvailable: could not load the evaluate module 'sacrebleu'")
    assert "did not answer" in report["outcome"], report
    assert report["seconds"] < 20, report


# ---- concurrency ----------------------------------------------------------------------------------

def _hammer(metrics, outputs, references, threads=16, rounds=3):
    """Every thread scores every item with every metric, starting together."""
    gate = threading.Barrier(threads)

    def work(_):
        gate.wait()
        return [[_values(m.score(o, r)) for o, r in zip(outputs, references)] for m in metrics for _ in range(rounds)]

    with ThreadPoolExecutor(threads) as pool:
        return list(pool.map(work, range(threads)))


@pytest.mark.parametrize("name", ["sbleu", "sbleu_compute"])
def test_sixteen_threads_scoring_at_once_get_the_serial_results(scripts, name):
    module = evaluate.load(scripts[name])
    first, second = EvaluateMetric(module, track=False), EvaluateMetric(module, name="again", track=False)
    assert module_lock(module) is first._lock is second._lock          # one lock per module object
    outputs, references = PREDS, REFS
    serial = [[_values(m.score(o, r)) for o, r in zip(outputs, references)] for m in (first, second) for _ in range(2)]
    for got in _hammer([first, second], outputs, references, rounds=2):
        assert got == serial


def test_inside_opik_evaluate_with_sixteen_scoring_threads(scripts, fake_opik_backend):
    import opik

    direct = EvaluateMetric(scripts["sbleu"], keys="score")
    through_compute = EvaluateMetric(scripts["sbleu_compute"], name="bleu_compute")
    preds, refs = PREDS * 8, REFS * 8
    items = [{"pred": p, "reference": r} for p, r in zip(preds, refs)]
    result = opik.evaluate_on_dict_items(items=items, task=lambda item: {"output": item["pred"]},
                                         scoring_metrics=[direct, through_compute], scoring_threads=16)
    assert len(result.test_results) == len(items)
    for tr in result.test_results:
        assert not any(s.scoring_failed for s in tr.score_results), [s.reason for s in tr.score_results]
        got = {s.name: s.value for s in tr.score_results}
        p, r = tr.test_case.task_output["output"], tr.test_case.dataset_item_content["reference"]
        want = sacrebleu.corpus_bleu([p], [[r]]).score
        assert got["evaluate_sbleu"] == pytest.approx(want, abs=1e-9)
        assert got["bleu_compute"] == pytest.approx(want, abs=1e-9)
    outputs = [tr.test_case.task_output["output"] for tr in result.test_results]
    references = [tr.test_case.dataset_item_content["reference"] for tr in result.test_results]
    corpus = direct.experiment_score(result.test_results)
    assert corpus.name == "corpus_evaluate_sbleu"
    assert corpus.value == pytest.approx(sacrebleu.corpus_bleu(outputs, [references]).score, abs=1e-9)
    assert through_compute.experiment_score(result.test_results).value == pytest.approx(corpus.value, abs=1e-9)
    opik.flush_tracker()
    logged = {fs.name for tree in fake_opik_backend.trace_trees for fs in tree.feedback_scores}
    assert {"evaluate_sbleu", "bleu_compute"} <= logged


# ---- stored experiments, compared -------------------------------------------------------------------

def test_two_experiments_compare_on_item_scores_and_report_the_corpus_score_as_recorded(scripts, tmp_path):
    from opik_metrics.compare.analysis import CompareSettings, compare_experiments
    from opik_metrics.compare.reading.sources import load_experiments
    from opik_metrics.experiments.runner import run_experiment
    from opik_metrics.experiments.store import ExperimentStore
    from tests.compare.systems import answer_with, items_for

    refs = [f"the {a} {b} on the {c}" for a, b, c in zip(["dog", "cat", "bus", "man", "boat", "kid"] * 2,
                                                         ["runs", "sleeps", "stops", "rides", "sails", "plays"] * 2,
                                                         ["beach", "sofa", "road", "bike", "sea", "grass"] * 2)]
    systems = {"poor": [" ".join(r.split()[:2]) for r in refs], "good": [r.replace("the ", "a ", 1) for r in refs]}
    path = tmp_path / "store.sqlite"
    for name, outputs in systems.items():
        metric = EvaluateMetric(scripts["sbleu"], keys="score", bounds=(0, 100), track=False)
        run_experiment(name, items_for(refs), answer_with(outputs), [metric], dataset_name="shared",
                       config={"model": name}, store=path, progress=False)
    with ExperimentStore(path) as store:
        runs = load_experiments(["poor", "good"], store=store)
        config = store.info("good").config
    assert config["metrics"]["evaluate_sbleu"]["whole_set_corpora"][0]["name"] == "corpus_evaluate_sbleu"
    comparison = compare_experiments(runs, CompareSettings(resamples=200, seed=3))
    assert [(m.name, m.kind) for m in comparison.metrics] == [("evaluate_sbleu", "mean")]
    assert comparison.metrics[0].bounds == (0.0, 100.0)
    recorded = {e.name: e.experiment_scores["corpus_evaluate_sbleu"] for e in comparison.experiments}
    for name, outputs in systems.items():
        assert recorded[name] == pytest.approx(sacrebleu.corpus_bleu(outputs, [refs]).score, abs=1e-9)
        mean = sum(sacrebleu.corpus_bleu([o], [[r]]).score for o, r in zip(outputs, refs)) / len(refs)
        assert comparison.scores["evaluate_sbleu"][name].value == pytest.approx(mean, abs=1e-9)
    pair = comparison.pairs[0]
    assert set(pair.metrics) == {"evaluate_sbleu"} and pair.better("evaluate_sbleu") == "good"
    note = next(n for n in comparison.notes if n.startswith("corpus_evaluate_sbleu"))
    assert "no interval and no test" in note
    assert f"good: {recorded['good']:.6g}" in note and f"poor: {recorded['poor']:.6g}" in note


def test_a_modules_own_failures_are_named_as_its_own(scripts):
    """A script that raises, that defines no module class, or whose compute fails on the probe is
    named as the module's failure (not as a module that is not there); an integer beyond a float's
    range is infinite with a reason that says so, and failed with its value kept in the metadata,
    since no Opik server stores it."""
    from opik_metrics.neural.models.evaluate_loading import EvaluateScriptError

    with pytest.raises(EvaluateScriptError, match="defines no module class: its script needs a subclass of evaluate"):
        EvaluateMetric(scripts["no_class"], track=False)
    with pytest.raises(EvaluateScriptError, match="failed to load: its script raised RuntimeError: the script's own"):
        EvaluateMetric(scripts["raises"], track=False)
    with pytest.raises(EvaluateScriptError, match="its compute on a probe item failed"):
        EvaluateMetric(scripts["probe_fails"], track=False)
    (result,) = EvaluateMetric(scripts["huge"], track=False).score("a", "a")
    assert "an integer of about 401 digits, beyond a float's range" in result.reason
    assert result.scoring_failed and result.value == 0.0 and result.metadata["unsent_value"] == "inf"
    assert "not a score an Opik server stores" in result.reason
