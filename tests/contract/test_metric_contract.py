"""One contract, run over every metric of the catalog: facts declared, ``name`` honoured, the
corpus score made from summable statistics and the same however the items are partitioned,
signatures with fields. A metric added to the catalog fails here until it has a factory below."""
from __future__ import annotations

import json
import math
import re

import pytest
from PIL import Image

from opik_metrics.core import MetricFacts, Signature, Statistics, facts_of
from opik_metrics.metrics.catalog import metric_card, metric_classes
from tests.neural.lm_fixtures import build_gpt2, one_torch_thread  # noqa: F401
from tests.neural.tiny_clip import build_tiny_clip
from tests.neural.tiny_models import build_bert
from tests.neural.tiny_seq2seq import build_bart, build_t5

SHIPPED = {name: cls for name, cls in metric_classes().items() if cls.__module__.startswith("opik_metrics.")}
OUTPUTS = ["a dog runs on the beach", "two cats sleep", "", "a red bus in the city at night", "pasta"]
IMAGES = [Image.new("RGB", (24 + 8 * k, 32), (40 * k, 200 - 30 * k, 90)) for k in range(5)]
REFERENCES = [["a dog running on a beach"], ["two cats are sleeping", "cats sleep"], ["an empty one"],
              ["the red bus in a city"], ["a plate of pasta"]]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return {"bert": str(build_bert(tmp_path_factory.mktemp("bert"))),
            "gpt2": str(build_gpt2(tmp_path_factory.mktemp("gpt2"))),
            "student": str(build_gpt2(tmp_path_factory.mktemp("student"), seed=5, layers=1)),
            "clip": str(build_tiny_clip(tmp_path_factory.mktemp("clip"))),
            "bart": str(build_bart(tmp_path_factory.mktemp("bart"))),
            "t5": str(build_t5(tmp_path_factory.mktemp("t5")))}


def _options(key: str, models: dict) -> dict:
    return {"rouge": {}, "bleu": {}, "chrf": {}, "ter": {}, "cider": {}, "coco": {}, "meteor": {},
            "bertscore": {"model": models["bert"], "num_layers": 2},
            "perplexity": {"model": models["gpt2"]}, "clipscore": {"model": models["clip"]},
            "distillation_kl": {"teacher": models["gpt2"], "student": models["student"]},
            "bartscore": {"model": models["bart"]},      # the source-reading configurations: their own tests
            "unieval": {"model": models["t5"], "dimensions": ["fluency", "relevance"]},
            "gptscore": {"model": models["gpt2"], "template": "A caption:"}}[key]


def test_every_catalog_metric_has_a_factory_here():
    assert set(SHIPPED) == {"rouge", "bleu", "chrf", "ter", "bertscore", "cider", "coco", "clipscore",
                            "perplexity", "distillation_kl", "meteor", "bartscore", "unieval", "gptscore"}


@pytest.fixture(scope="module", params=sorted(SHIPPED))
def pair(request, models):
    """The catalog metric under its default name and under another name."""
    spec, cls = metric_card(request.param), SHIPPED[request.param]
    options = _options(request.param, models)
    return spec, cls(track=False, **options), cls(track=False, name="other", **options)


def _refs(spec):
    """References for every metric: reference-free ones ignore them, CLIPScore adds RefCLIP-S."""
    return REFERENCES


def _more(spec, count=len(OUTPUTS)):
    """Other inputs a metric scores (CLIPScore's images), for the first ``count`` items."""
    return {"images": IMAGES[:count]} if spec.needs_image else {}


def test_facts_are_declared_and_round_trip(pair):
    spec, metric, _ = pair
    facts = facts_of(metric)
    assert isinstance(facts, MetricFacts) and facts.metric == metric.name and facts.scores
    assert isinstance(facts.higher_is_better, bool) and facts.main.higher_is_better == facts.higher_is_better
    assert all(s.scale in ("linear", "log") for s in facts.scores)
    assert MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))).as_dict() == facts.as_dict()
    emitted = [r.name for r in metric.score_batch(OUTPUTS[:2], _refs(spec) and REFERENCES[:2], **_more(spec, 2))[0]]
    assert sorted(emitted) == sorted(s.name for s in facts.scores)     # what it emits is what it declares


@pytest.mark.filterwarnings("ignore:.*CIDEr-D of a single item")   # one item alone: CIDEr warns, as it should
def test_name_is_honoured(pair):
    spec, metric, renamed = pair
    default = [r.name for r in metric.score_batch(OUTPUTS[:1], _refs(spec) and REFERENCES[:1], **_more(spec, 1))[0]]
    other = [r.name for r in renamed.score_batch(OUTPUTS[:1], _refs(spec) and REFERENCES[:1], **_more(spec, 1))[0]]
    assert not set(default) & set(other)                                # two instances never collide
    if len(default) == 1:
        assert other == ["other"] and renamed.facts.corpus.name == "corpus_other"
    else:
        assert other == [f"other_{name}" for name in default]
    assert renamed.facts.corpus.name != metric.facts.corpus.name


def _corpus(metric, made):
    """The corpus result the facts name (COCOCaption returns one result per key)."""
    if isinstance(made, list):
        (made,) = [r for r in made if r.name == metric.facts.corpus.name]
    return made


def test_corpus_score_is_summed_statistics_and_partition_invariant(pair):
    spec, metric, _ = pair
    stats = metric.statistics(OUTPUTS, _refs(spec), **_more(spec))
    assert len(stats) == len(OUTPUTS) and all(isinstance(s, Statistics) for s in stats)
    whole = _corpus(metric, metric.corpus_score(OUTPUTS, _refs(spec), **_more(spec)))
    assert whole.name == metric.facts.corpus.name
    assert whole.value == _corpus(metric, metric.from_statistics(sum(stats))).value
    for split in (1, 2, 4):                                             # a worker per part, then reduced
        parts = [sum(stats[:split]), sum(stats[split:])]
        assert math.isclose(_corpus(metric, metric.from_statistics(parts[0] + parts[1])).value, whole.value, rel_tol=1e-12)
    reversed_sum = sum(reversed(stats))
    assert math.isclose(_corpus(metric, metric.from_statistics(reversed_sum)).value, whole.value, rel_tol=1e-12)


def test_signature_has_fields_without_scoring(pair):
    _, metric, _ = pair
    assert isinstance(metric.signature, Signature) and metric.signature.fields
    assert str(metric.signature) and metric.facts.signature == metric.signature
    assert all(f"{v}" in str(metric.signature) for v in metric.signature.fields.values() if isinstance(v, str))


def test_the_catalog_says_which_metrics_need_every_reference_first(pair):
    """The CLI reads the references of a record file first for exactly these (a corpus context)."""
    spec, metric, _ = pair
    assert spec.wants_every_reference({}) == metric.corpus_pending      # with no option given


@pytest.mark.parametrize("output, references", [("", [""]), ("", ["a dog runs"]), ("a dog runs", [""])],
                         ids=["empty/empty", "empty/text", "text/empty"])
def test_defined_values_agree_with_their_reasons(pair, output, references):
    """Empty text gets a defined value, and a reason that says it; never a value the reason denies,
    and never NaN or infinity without a reason."""
    spec, metric, _ = pair
    for result in metric.score_batch([output], [references], **_more(spec, 1))[0]:
        assert math.isfinite(result.value) or result.reason, (result.name, result.value)
        stated = re.search(r"is (0|1) by definition", result.reason or "")
        if stated:
            assert result.value == float(stated.group(1)), (result.name, result.value, result.reason)
