"""Record headers are checked, not trusted (issue 56): a hand-edited corpus formula or option is a data
error naming the file, the metric and the field (exit 2, one line), and a score whose header lost
its signature is not gated as comparable unless --allow-different-options. Each edit below made
`compare --fail-on worse` compute a wrong verdict or crash (exit 1) before."""
from __future__ import annotations

import importlib
import json
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.reading.checked_facts import PACK_FORMULAS, RecordedFactsError, check_recorded_facts
from opik_metrics.core import MetricFacts, facts_of

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "ci"


def _score(folder: Path, name: str, *options: str) -> Path:
    source = folder / f"{name}.jsonl"
    if not source.exists():
        shutil.copy(EXAMPLES / f"{name}.jsonl", source)
    out = folder / f"{name}{''.join(options).replace('-', '')}.scores.jsonl"
    assert main(["score", "-i", str(source), "-o", str(out), *options, "--field", "output=caption",
                 "--no-progress", "--format", "json"]) == 0
    return out


@pytest.fixture(scope="module")
def scored(tmp_path_factory) -> dict[str, Path]:
    """The CI example's baseline and candidate scored with BLEU and chrF, and the baseline with ROUGE
    stemmed and plain."""
    folder = tmp_path_factory.mktemp("headers")
    return {"baseline": _score(folder, "baseline", "-m", "bleu", "-m", "chrf"),
            "candidate": _score(folder, "candidate", "-m", "bleu", "-m", "chrf"),
            "plain": _score(folder, "baseline", "-m", "rouge"),
            "stemmed": _score(folder, "baseline", "-m", "rouge", "--use-stemmer")}


def _edited(source: Path, target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """``source`` with its header's metrics edited by ``edit``, written to ``target``."""
    lines = source.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    edit(head["opik_metrics.records"])
    target.write_text("\n".join([json.dumps(head), *lines[1:]]) + "\n", encoding="utf-8")
    return target


def _compare(capsys, *args: str) -> tuple[int, list[str]]:
    capsys.readouterr()
    code = main(["compare", *args])
    return code, capsys.readouterr().err.strip().splitlines()


def _bleu_corpus(header: dict[str, Any]) -> dict[str, Any]:
    return header["metrics"]["bleu"]["corpus"]


EDITS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "chrf-formula": (lambda h: _bleu_corpus(h).update(formula=h["metrics"]["chrf"]["corpus"]["formula"]),
                     "field 'formula' is 'opik_metrics.text.chrf.scorer:chrf_from_statistics'"),
    "mean-formula": (lambda h: _bleu_corpus(h).update(formula="opik_metrics.core.statistics:mean_formula",
                                                      options={"field": 0}),
                     "field 'formula' is 'opik_metrics.core.statistics:mean_formula'"),
    "order-9": (lambda h: _bleu_corpus(h)["options"].update(max_ngram_order=9), "field 'fields' lists 10 statistics"),
    "order-four": (lambda h: _bleu_corpus(h)["options"].update(max_ngram_order="four"),
                   "field 'options.max_ngram_order' is 'four'"),
    "unknown-option": (lambda h: _bleu_corpus(h)["options"].update(order=4), "field 'options' (unknown 'order')"),
    "chrf-order": (lambda h: h["metrics"]["chrf"]["corpus"]["options"].update(char_order=5),
                   "field 'fields' lists 18 statistics"),
}


@pytest.mark.parametrize("edit", list(EDITS))
def test_an_edited_corpus_formula_or_option_is_a_data_error_naming_file_metric_and_field(scored, tmp_path, capsys,
                                                                                         edit):
    change, words = EDITS[edit]
    edited = _edited(scored["candidate"], tmp_path / "edited.jsonl", change)
    code, err = _compare(capsys, str(scored["baseline"]), str(edited), "--fail-on", "worse")
    assert code == 2 and len(err) == 1, err
    metric = "chrf" if edit == "chrf-order" else "bleu"
    assert err[0].startswith(f"opik-metrics: error: {edited}: metric {metric!r}, corpus score 'corpus_{metric}': "
                             f"{words}"), err[0]


def test_the_unedited_files_still_gate(scored, capsys):
    code, err = _compare(capsys, str(scored["baseline"]), str(scored["candidate"]), "--fail-on", "worse")
    assert code == 1 and err[-1].startswith("gate failed: ")


def _unsigned(header: dict[str, Any]) -> None:
    header["metrics"]["rouge"]["signature"] = None
    header["signatures"] = {}


@pytest.mark.parametrize("sides", ["one", "both"])
def test_a_score_whose_header_lost_its_signature_is_not_gated_as_comparable(scored, tmp_path, capsys, sides):
    stemmed = _edited(scored["stemmed"], tmp_path / "stemmed.jsonl", _unsigned)
    plain = _edited(scored["plain"], tmp_path / "plain.jsonl", _unsigned) if sides == "both" else scored["plain"]
    code, err = _compare(capsys, str(plain), str(stemmed), "--fail-on", "worse")
    assert code == 2 and len(err) == 1, err
    side = "none recorded" if sides == "both" else "recorded"
    assert "cannot gate scores made with different options" in err[0]
    assert f"rouge1_f1 (signature: {side} vs none recorded)" in err[0]
    code, err = _compare(capsys, str(plain), str(stemmed), "--fail-on", "worse", "--allow-different-options")
    assert code == 0 and err == ["gate passed: no gated score is significantly worse (3 tested scores, Holm)"]


def test_signed_sides_are_refused_by_their_options_as_before(scored, capsys):
    code, err = _compare(capsys, str(scored["plain"]), str(scored["stemmed"]), "--fail-on", "worse")
    assert code == 2 and "stem: no vs yes" in err[0]


def _text_metrics() -> list[Any]:
    from opik_metrics.metrics.bleu import BLEU
    from opik_metrics.metrics.chrf import CHRF
    from opik_metrics.metrics.cider import CIDEr
    from opik_metrics.metrics.rouge import ROUGE
    from opik_metrics.metrics.ter import TER

    return [BLEU(track=False), BLEU(max_ngram_order=2, weights=[0.5, 0.5], corpus_smooth_method="floor", track=False),
            CHRF(track=False), CHRF(word_order=2, track=False), TER(track=False), ROUGE(track=False),
            ROUGE(rouge_types=["rouge2", "rougeLsum"], name="r", track=False), CIDEr(track=False)]


def test_the_facts_each_text_metric_states_pass_the_check():
    for metric in _text_metrics():
        facts = facts_of(metric)
        assert facts.corpora, metric
        check_recorded_facts("here", facts.metric, MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))))


def test_every_pack_kind_in_the_table_is_a_class_of_the_pack():
    for kind in PACK_FORMULAS:
        module, _, name = kind.rpartition(".")
        assert isinstance(getattr(importlib.import_module(module), name), type), kind


def test_a_plugin_formula_takes_only_the_options_it_names():
    from opik_metrics.core import corpus_facts, corpus_formula
    from opik_metrics.core.facts import ScoreFacts

    @corpus_formula
    def plugin_ratio(values, *, scale: float = 1.0) -> float:
        return scale * values[0] / values[1]

    def facts(options: dict[str, Any]) -> MetricFacts:
        return MetricFacts("mine", "my_pack.Mine", (ScoreFacts("mine"),),
                           corpus=corpus_facts("corpus_mine", "mine", ["a", "b"], plugin_ratio, options))

    check_recorded_facts("here", "mine", facts({"scale": 2.0}))
    with pytest.raises(RecordedFactsError, match=r"here: metric 'mine', corpus score 'corpus_mine': field 'options' "
                                                 r"names 'weights'"):
        check_recorded_facts("here", "mine", facts({"weights": [1]}))


def test_the_facts_every_pack_metric_states_pass_the_check():
    """Every configuration tests/metrics/facts_before.json records (model-backed metrics included)."""
    recorded = json.loads((Path(__file__).resolve().parents[1] / "metrics" / "facts_before.json")
                          .read_text(encoding="utf-8"))["facts"]
    kinds = set()
    for case, data in recorded.items():
        facts = MetricFacts.from_dict(data)
        check_recorded_facts(case, facts.metric, facts)
        kinds.add(facts.kind)
    stating = {k for k in kinds if any(MetricFacts.from_dict(d).corpora for d in recorded.values() if d["kind"] == k)}
    assert stating <= set(PACK_FORMULAS), stating - set(PACK_FORMULAS)
