"""The METEOR metric equals pycocoevalcap's ``Meteor`` (the jar) per item and for the corpus, through
``score``, ``score_batch``, ``corpus_score``, ``experiment_score`` and the CLI; its facts, its
reasons hold (its docstring example runs in tests/test_doctests.py)."""
from __future__ import annotations

import json
import shutil
from types import SimpleNamespace

import pytest

from opik_metrics.core import MetricInputError, facts_of
from opik_metrics.text.meteor import MeteorDataError
from tests.text.meteor.meteor_cases import paraphrase_pairs, segments, synonym_pairs

TOL = 1e-6
needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java not found on PATH: the oracle is a jar")


@pytest.fixture(scope="module")
def metric():
    from opik_metrics import METEOR
    try:
        return METEOR(track=False)
    except MeteorDataError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def cases(metric):
    tables = metric.engine.tables
    pairs = synonym_pairs(str(tables.paths.jar)), paraphrase_pairs(tables, 500, seed=11)
    return segments(400, 21, *pairs)


@pytest.fixture(scope="module")
def jar():
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.meteor.meteor import Meteor
    meteor = Meteor()
    yield meteor
    del meteor


def _jar(jar, outputs, references):
    return jar.compute_score({k: r for k, r in enumerate(references)}, {k: [o] for k, o in enumerate(outputs)})


@needs_java
def test_items_and_corpus_equal_the_jar(metric, cases, jar):
    outputs, references = cases
    final, per_item = _jar(jar, outputs, references)
    results = metric.score_batch(outputs, references)
    assert [r[0].value for r in results] == pytest.approx(per_item, abs=TOL)
    assert [metric.score(o, r)[0].value for o, r in zip(outputs[:40], references[:40])] == \
        pytest.approx(per_item[:40], abs=TOL)
    corpus = metric.corpus_score(outputs, references)
    assert corpus.name == "corpus_meteor" and corpus.value == pytest.approx(final, abs=TOL)
    assert abs(corpus.value - sum(per_item) / len(per_item)) > 1e-4       # summed statistics, not a mean


def _test_result(output, reference, score_results=()):
    case = SimpleNamespace(mapped_scoring_inputs={"output": output, "reference": reference},
                           dataset_item_content=None, task_output=None)
    return SimpleNamespace(test_case=case, score_results=list(score_results))


@needs_java
def test_experiment_score_reuses_logged_results_and_leaves_out_a_poison_item(metric, cases, jar):
    outputs, references = (list(x[:60]) for x in cases)
    results = [_test_result(o, r, metric.score(o, r) if k % 2 else []) for k, (o, r) in enumerate(zip(outputs,
                                                                                                   references))]
    corpus = metric.experiment_score(results)
    assert corpus.value == pytest.approx(_jar(jar, outputs, references)[0], abs=TOL)
    results[7] = _test_result(["not", "a", "string"], references[7])
    kept = [k for k in range(60) if k != 7]
    left = metric.experiment_score(results)
    assert left.value == pytest.approx(_jar(jar, [outputs[k] for k in kept], [references[k] for k in kept])[0],
                                       abs=TOL)
    assert left.reason == "1 of 60 test results left out: item 7, field 'output': expected a string, got list"


def test_metadata_and_facts(metric):
    result = metric.score("Two dogs are running on the grass.", ["A dog runs on grass", "two dogs run"])[0]
    meta = result.metadata
    assert meta["best_reference"] == 1 and meta["n_references"] == 2
    assert set(meta["matches"]) == {"exact", "stem", "synonym", "paraphrase"}
    assert sum(meta["matches"].values()) == meta["statistics"][-2]      # output words matched
    stemmed = metric.score("the dogs are running", "the dog is running fast")[0].metadata["matches"]
    assert stemmed == {"exact": 2, "stem": 1, "synonym": 1, "paraphrase": 0}    # dogs/dog; are/is (WordNet)
    assert 0 < meta["precision"] <= 1 and 0 < meta["recall"] <= 1 and meta["chunks"] >= 1
    assert meta["signature"].startswith("meteor-1.5|lang:en|norm:yes|")
    facts = facts_of(metric)
    assert facts.main.bounds == (0.0, 1.0) and facts.corpus.name == "corpus_meteor"
    assert len(facts.corpus.fields) == 23 and facts.corpus.fields[-3] == "corpus_chunks"


@pytest.mark.parametrize("output, reference, why", [
    ("", "a dog", "output has no words"),
    ("a dog", "", "reference has no words"),
    ("", "", "output and reference have no words"),
    ("...", "a dog", None),                    # punctuation is a word to the jar
])
def test_empty_text_scores_zero_with_a_reason(metric, output, reference, why):
    result = metric.score(output, reference)[0]
    if why is None:
        assert result.reason is None
        return
    assert result.value == 0.0 and why in result.reason


def test_bad_inputs_name_the_item_and_field(metric):
    with pytest.raises(MetricInputError, match="output"):
        metric.score(None, "a dog")
    with pytest.raises(MetricInputError, match="1"):
        metric.score_batch(["a", 5], ["a", "b"])


def test_missing_data_is_one_clear_error(tmp_path):
    from opik_metrics import METEOR
    with pytest.raises(MeteorDataError, match="meteor-1.5.jar"):
        METEOR(data=str(tmp_path), track=False)


@needs_java
def test_the_cli_scores_meteor_as_the_jar(tmp_path, cases, jar, capsys):
    from opik_metrics.cli import main
    outputs, references = (list(x[:50]) for x in cases)
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps({"output": o, "reference": r}) + "\n" for o, r in zip(outputs, references)),
                    encoding="utf-8")
    assert main(["score", "--input", str(path), "-m", "meteor", "--no-progress", "--format", "json"]) == 0
    got = json.loads(capsys.readouterr().out)
    final, per_item = _jar(jar, outputs, references)
    assert got["aggregate"]["corpus_meteor"] == pytest.approx(final, abs=TOL)
    assert [item["meteor"] for item in got["items"]] == pytest.approx(per_item, abs=TOL)


def test_the_cli_says_in_one_line_that_meteors_data_is_missing(tmp_path, capsys):
    from opik_metrics.cli import main
    path = tmp_path / "in.jsonl"
    path.write_text('{"output": "a dog", "reference": "a dog runs"}\n', encoding="utf-8")
    assert main(["score", "--input", str(path), "-m", "meteor", "--meteor-data", str(tmp_path / "none"),
                 "--no-progress"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "meteor-1.5.jar" in err[0] and "pycocoevalcap" in err[0]
