"""``multi_reference="mean"`` (issue 57): BLEU, chrF, METEOR and BERTScore against the mean of
their single-reference scores, each single-reference score computed by the reference library here
(sacrebleu's sentence_bleu / CHRF with one reference, the Meteor jar through pycocoevalcap,
bert_score with one reference) and averaged in the test; the corpus score under "mean" is the
metric's formula of the summed reference-averaged statistics (the reference library's own formula
fed those averages: sacrebleu's ``compute_bleu``, CHRF's F-score, the jar's EVAL of statistics
lines), the contract ``corpus_score == from_statistics(sum(statistics))`` holds, defaults and their
signatures are untouched, and an unknown mode is refused naming the option and its choices."""
from __future__ import annotations

import json
import math
import random
import re
import shutil

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU as SacreBLEU
from sacrebleu.metrics import CHRF as SacreCHRF

from opik_metrics import BLEU, CHRF
from opik_metrics.core import MetricFacts, Statistics
from tests.corpus import realistic_pairs
from tests.text.chrf_ter_inputs import items as chrf_items

TOL = 1e-12          # the text metrics: the same float operations as sacrebleu's, then one mean


def _many_references(count: int, seed: int) -> tuple[list[str], list[list[str]]]:
    """Realistic outputs with 1 to 4 references each (paraphrase-like edits, some copies, some
    with an empty reference), so that the mean differs from the default rule."""
    rng = random.Random(seed)
    outputs, first = realistic_pairs(count, seed=seed)
    others = [realistic_pairs(count, seed=seed + k)[1] for k in (1, 2, 3)]
    references = []
    for k in range(count):
        refs = [first[k], *(o[k] for o in others)][:rng.randint(1, 4)]
        if k % 9 == 4:
            refs.append("")
        if k % 7 == 3:
            refs.append(outputs[k])
        references.append(refs)
    return outputs, references


def _grouped_mean(values: list[float], references: list[list[str]]) -> list[float]:
    out, at = [], 0
    for refs in references:
        out.append(sum(values[at:at + len(refs)]) / len(refs))
        at += len(refs)
    return out


def _assert_rows(got, expected, tol):
    """Statistics rows equal, field by field, to ``tol``."""
    assert len(got) == len(expected)
    for k, (a, b) in enumerate(zip(got, expected)):
        assert len(a) == len(b) and all(math.isclose(x, y, rel_tol=0, abs_tol=tol) for x, y in zip(a, b)), (k, a, b)


def _pairs(outputs, references):
    return [o for o, refs in zip(outputs, references) for _ in refs], [r for refs in references for r in refs]


# -- BLEU --------------------------------------------------------------------------------------

class _Length(float):
    """A reference-averaged length for sacrebleu's ``compute_bleu``: its arithmetic is the float's;
    only its verbose text, which formats lengths as integers, gets the rounded number."""

    def __format__(self, spec: str) -> str:
        return format(round(self), spec) if spec.endswith("d") else float.__format__(self, spec)


def test_bleu_mean_is_the_mean_of_single_reference_sentence_bleus():
    outputs, references = _many_references(150, seed=31)
    results = BLEU(multi_reference="mean", track=False).score_batch(outputs, references)
    for output, refs, (result,) in zip(outputs, references, results):
        expected = sum(sacrebleu.sentence_bleu(output, [r]).score / 100 for r in refs) / len(refs)
        assert result.value == pytest.approx(expected, abs=TOL)
        assert result.metadata["references"] == pytest.approx(
            [sacrebleu.sentence_bleu(output, [r]).score / 100 for r in refs], abs=TOL)
    pooled = BLEU(track=False).score_batch(outputs, references)
    assert sum(abs(a[0].value - b[0].value) for a, b in zip(results, pooled)) > 1.0   # it is another rule


@pytest.mark.parametrize("options", [{}, dict(tokenize="char", lowercase=True, smooth_method="floor"),
                                     dict(max_ngram_order=2, corpus_smooth_method="add-k")])
def test_bleu_mean_corpus_is_sacrebleus_formula_of_the_averaged_statistics(options):
    """Each item's statistics: the mean of sacrebleu's single-reference statistics; the corpus
    score: sacrebleu's ``compute_bleu`` of their sum, with the corpus smoothing."""
    outputs, references = _many_references(120, seed=5)
    metric = BLEU(multi_reference="mean", track=False, **options)
    order = options.get("max_ngram_order", 4)
    oracle = SacreBLEU(tokenize=options.get("tokenize"), lowercase=options.get("lowercase", False),
                       max_ngram_order=order)
    rows = []
    for output, refs in zip(outputs, references):
        single = [oracle.corpus_score([output], [[r]]) for r in refs]
        stats = [[*s.counts, *s.totals, s.sys_len, s.ref_len] for s in single]
        rows.append([sum(c) / len(refs) for c in zip(*stats)])
    _assert_rows([s.values for s in metric.statistics(outputs, references)], rows, 1e-12)
    total = [sum(c) for c in zip(*rows)]
    smooth = options.get("corpus_smooth_method", "exp")
    expected = SacreBLEU.compute_bleu(total[:order], total[order:2 * order], _Length(total[2 * order]),
                                      _Length(total[2 * order + 1]),
                                      smooth_method=smooth, smooth_value=1 if smooth == "add-k" else None,
                                      effective_order=False, max_ngram_order=order).score / 100
    corpus = metric.corpus_score(outputs, references)
    assert corpus.value == pytest.approx(expected, abs=TOL)
    assert corpus.metadata["signature"].fields["multi"] == "mean"
    assert corpus.metadata["signature"].fields["nrefs"] == "var"


def test_bleu_with_one_reference_each_mean_is_the_default():
    outputs, refs = realistic_pairs(80, seed=8)
    mean, pooled = BLEU(multi_reference="mean", track=False), BLEU(track=False)
    assert [r[0].value for r in mean.score_batch(outputs, refs)] == [r[0].value for r in pooled.score_batch(outputs, refs)]
    assert mean.corpus_score(outputs, refs).value == pooled.corpus_score(outputs, refs).value


# -- chrF --------------------------------------------------------------------------------------

@pytest.mark.parametrize("options", [{}, dict(word_order=2), dict(lowercase=True, whitespace=True, char_order=4),
                                     dict(word_order=2, eps_smoothing=True, beta=1)])
def test_chrf_mean_is_the_mean_of_single_reference_chrfs(options):
    outputs, references = _many_references(100, seed=17)
    hyps, refs = chrf_items(len(options) + 3, 60, 3)        # odd text: accents, CJK, empty strings
    outputs, references = outputs + hyps, references + refs
    oracle = SacreCHRF(**options)
    metric = CHRF(multi_reference="mean", track=False, **options)
    results = metric.score_batch(outputs, references)
    for output, item, (result,) in zip(outputs, references, results):
        each = [oracle.sentence_score(output, [r]).score / 100 for r in item]
        assert result.value == pytest.approx(sum(each) / len(each), abs=TOL)
        assert result.metadata["references"] == pytest.approx(each, abs=TOL)
        assert "best_reference" not in result.metadata
    rows = []
    for output, item in zip(outputs, references):
        stats = [oracle._extract_corpus_statistics([output], [[r]])[0] for r in item]
        rows.append([sum(c) / len(item) for c in zip(*stats)])
    _assert_rows([r[0].metadata["statistics"] for r in results], rows, 1e-12)
    total = [sum(c) for c in zip(*rows)]
    corpus = metric.corpus_score(outputs, references)
    assert corpus.value == pytest.approx(oracle._compute_f_score(total) / 100, abs=TOL)


def test_chrf_with_one_reference_each_mean_is_the_default():
    outputs, refs = realistic_pairs(80, seed=9)
    mean, best = CHRF(multi_reference="mean", track=False), CHRF(track=False)
    assert [r[0].value for r in mean.score_batch(outputs, refs)] == [r[0].value for r in best.score_batch(outputs, refs)]
    assert mean.corpus_score(outputs, refs).value == best.corpus_score(outputs, refs).value


# -- the contract under "mean", the signatures, bad modes ----------------------------------------

CONTRACT_OUTPUTS = ["a dog runs on the beach", "two cats sleep", "", "a red bus in the city at night", "pasta",
                    "the same words", "an output"]
CONTRACT_REFERENCES = [["a dog running on a beach", "dogs run"], ["two cats are sleeping", "cats sleep", ""],
                       ["an empty one"], ["the red bus in a city"], ["a plate of pasta", "pasta", "pasta!"],
                       ["the same words", "the same words"], ["", ""]]


def _mean_metric(key):
    """The text metric ``key`` under "mean" (METEOR: skipped when its extra is not installed)."""
    if key == "bleu":
        return BLEU(multi_reference="mean", track=False)
    if key == "chrf":
        return CHRF(multi_reference="mean", track=False)
    pytest.importorskip("pycocoevalcap", reason="METEOR's tables come with the meteor extra")
    from opik_metrics import METEOR
    return METEOR(multi_reference="mean", track=False)


@pytest.mark.parametrize("key", ["bleu", "chrf", "meteor"])
def test_the_contract_holds_under_mean(key):
    metric = _mean_metric(key)
    facts = metric.facts
    assert MetricFacts.from_dict(json.loads(json.dumps(facts.as_dict()))).as_dict() == facts.as_dict()
    assert facts.signature.fields["multi"] == "mean" and "multi:mean" in str(metric.signature)
    stats = metric.statistics(CONTRACT_OUTPUTS, CONTRACT_REFERENCES)
    assert all(isinstance(s, Statistics) for s in stats) and len(stats) == len(CONTRACT_OUTPUTS)
    results = metric.score_batch(CONTRACT_OUTPUTS, CONTRACT_REFERENCES)
    assert [metric.item_statistics(r).values for r in results] == [s.values for s in stats]
    whole = metric.corpus_score(CONTRACT_OUTPUTS, CONTRACT_REFERENCES)
    assert whole.name == facts.corpus.name and whole.value == metric.from_statistics(sum(stats)).value
    for split in (1, 3, 5):
        parts = sum(stats[:split]) + sum(stats[split:])
        assert math.isclose(metric.from_statistics(parts).value, whole.value, rel_tol=1e-12)
    assert math.isclose(metric.from_statistics(sum(reversed(stats))).value, whole.value, rel_tol=1e-12)
    for result in (r[0] for r in results):
        assert 0.0 <= result.value <= 1.0 and math.isfinite(result.value)
        stated = re.search(r"is (0|1) by definition", result.reason or "")
        if stated:
            assert result.value == float(stated.group(1)), (result.value, result.reason)
    # the items whose references are partly empty say so, and score those references 0
    assert "references 2 have no" in results[1][0].reason
    assert results[6][0].value == 0.0 and results[6][0].reason


@pytest.mark.parametrize("key", ["bleu", "chrf", "meteor"])
def test_defaults_are_the_reference_librarys_rule_and_sign_as_before(key):
    default = type(_mean_metric(key))
    plain = default(track=False)
    assert plain.multi_reference == plain.multi_reference_modes[0]
    assert "multi" not in plain.signature.fields
    named = default(multi_reference=plain.multi_reference_modes[0], track=False)
    assert named.signature == plain.signature and named.facts.as_dict() == plain.facts.as_dict()


@pytest.mark.parametrize("cls, modes", [(BLEU, "pooled, mean"), (CHRF, "best, mean")])
@pytest.mark.parametrize("bad", ["avg", "MEAN", "", None, 1])
def test_an_unknown_mode_names_the_option_and_the_choices(cls, modes, bad):
    with pytest.raises(ValueError, match=re.escape(f"multi_reference: expected one of {modes}, got {bad!r}")):
        cls(multi_reference=bad, track=False)


# -- METEOR (the jar) ---------------------------------------------------------------------------

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="java not found on PATH: the oracle is a jar")


@pytest.fixture(scope="module")
def meteor():
    from opik_metrics import METEOR
    from opik_metrics.text.meteor import MeteorDataError
    try:
        return METEOR(multi_reference="mean", track=False)
    except MeteorDataError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def jar():
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.meteor.meteor import Meteor
    made = Meteor()
    yield made
    del made


def _jar_lines(jar, pairs):
    """The jar's statistics line of each (output, [reference]) pair (its SCORE answer)."""
    return [[float(v) for v in jar._stat(output, [reference]).split()] for output, reference in pairs]


def _jar_eval(jar, lines):
    """The jar's final score of statistics lines (as pycocoevalcap's compute_score sends them)."""
    text = "EVAL" + "".join(" ||| " + " ".join(repr(float(v)) for v in line) for line in lines)
    with jar.lock:
        jar.meteor_p.stdin.write(f"{text}\n".encode())
        jar.meteor_p.stdin.flush()
        for _ in lines:
            jar.meteor_p.stdout.readline()
        return float(jar.meteor_p.stdout.readline().strip())


def _flat(line):
    """The jar's statistics line as the pack's summable row: a segment matched whole in one chunk
    adds no chunk (the jar's own rule when it sums lines)."""
    n_modules = 4
    test_len, ref_len = line[0], line[1]
    content = line[4:4 + 4 * n_modules]
    test_total = sum(content[4 * m] + content[4 * m + 2] for m in range(n_modules))
    ref_total = sum(content[4 * m + 1] + content[4 * m + 3] for m in range(n_modules))
    chunks = line[-3]
    whole = test_total == test_len and ref_total == ref_len and chunks == 1
    return [*line[:-3], 0.0 if whole else chunks, *line[-2:]]


@needs_java
def test_meteor_mean_equals_the_mean_of_the_jars_single_reference_scores(meteor, jar):
    outputs, references = _many_references(90, seed=41)
    flat_outputs, flat_refs = _pairs(outputs, references)
    _, per_pair = jar.compute_score({k: [r] for k, r in enumerate(flat_refs)},
                                    {k: [o] for k, o in enumerate(flat_outputs)})
    results = meteor.score_batch(outputs, references)
    assert [r[0].value for r in results] == pytest.approx(_grouped_mean(list(per_pair), references), abs=1e-6)
    # the corpus: the jar's EVAL of the reference-averaged statistics lines
    lines = [_flat(line) for line in _jar_lines(jar, zip(flat_outputs, flat_refs))]
    averaged, at = [], 0
    for refs in references:
        averaged.append([sum(c) / len(refs) for c in zip(*lines[at:at + len(refs)])])
        at += len(refs)
    _assert_rows([r[0].metadata["statistics"] for r in results], averaged, 1e-9)
    corpus = meteor.corpus_score(outputs, references)
    assert corpus.value == pytest.approx(_jar_eval(jar, averaged), abs=1e-6)
    assert corpus.value == meteor.from_statistics(sum(meteor.statistics(outputs, references))).value


def test_meteor_unknown_mode_is_refused_before_loading_tables():
    from opik_metrics import METEOR
    with pytest.raises(ValueError, match=re.escape("multi_reference: expected one of best, mean, got 'max'")):
        METEOR(multi_reference="max", track=False)
