"""``score``'s options for every metric at once (issue 57): ``--multi-reference MODE`` (each metric
with a choice of rule for several references, a metric's own option winning, a mode a metric lacks
an error naming the metric and its modes), ``--lowercase`` (every metric scores lowercased text:
the values of scoring lowercased files, a signature that says so, a comparison that shows the
difference) and ``--split-sentences nltk`` (ROUGE's sentences by Punkt: rouge-score's numbers on
the split text). Values come from scoring the prepared text directly, with the metrics or with the
reference libraries (sacrebleu, rouge-score)."""
from __future__ import annotations

import json
import random

import pytest
import sacrebleu

from opik_metrics.cli import main
from opik_metrics.cli.main import build_parser
from opik_metrics.cli.options import metric_kwargs
from opik_metrics.streams import read_metadata
from tests.corpus import realistic_pairs
from tests.streams.records import write_jsonl


def _run(capsys, *args):
    status = main(["score", *args, "--no-progress"])
    out = capsys.readouterr()
    return status, out.out, out.err


def _files(tmp_path, outputs, references, tag=""):
    """A predictions file and one references file per reference column."""
    preds = tmp_path / f"p{tag}.txt"
    preds.write_text("".join(o + "\n" for o in outputs), encoding="utf-8")
    args = ["-p", str(preds)]
    for k in range(len(references[0])):
        path = tmp_path / f"r{tag}{k}.txt"
        path.write_text("".join(refs[k] + "\n" for refs in references), encoding="utf-8")
        args += ["-r", str(path)]
    return args


def _json(capsys, *args):
    status, out, err = _run(capsys, *args, "--format", "json")
    assert status == 0, err
    return json.loads(out)


def _three_references(count=60, seed=3):
    outputs, first = realistic_pairs(count, seed=seed)
    return outputs, [[a, b, c] for a, b, c in zip(first, realistic_pairs(count, seed=seed + 1)[1],
                                                   realistic_pairs(count, seed=seed + 2)[1])]


# -- --multi-reference ----------------------------------------------------------------------

def test_multi_reference_mean_gives_each_metric_the_mean_of_its_single_reference_scores(tmp_path, capsys):
    outputs, references = _three_references()
    got = _json(capsys, *_files(tmp_path, outputs, references), "-m", "bleu", "-m", "chrf",
                "--multi-reference", "mean")
    chrf = sacrebleu.CHRF()
    for output, refs, item in zip(outputs, references, got["items"]):
        bleu = [sacrebleu.sentence_bleu(output, [r]).score / 100 for r in refs]
        assert item["bleu"] == pytest.approx(sum(bleu) / 3, abs=1e-12)
        each = [chrf.sentence_score(output, [r]).score / 100 for r in refs]
        assert item["chrf"] == pytest.approx(sum(each) / 3, abs=1e-12)
    from opik_metrics import BLEU, CHRF
    assert got["aggregate"]["corpus_bleu"] == BLEU(multi_reference="mean", track=False).corpus_score(
        outputs, references).value
    assert got["aggregate"]["corpus_chrf"] == CHRF(multi_reference="mean", track=False).corpus_score(
        outputs, references).value
    assert got["signatures"]["bleu"].endswith("|multi:mean") and got["signatures"]["corpus_chrf"].endswith("|multi:mean")
    plain = _json(capsys, *_files(tmp_path, outputs, references), "-m", "bleu", "-m", "chrf")
    assert "multi" not in plain["signatures"]["bleu"] and plain["items"] != got["items"]
    named = _json(capsys, *_files(tmp_path, outputs, references), "-m", "chrf", "--multi-reference", "best")
    assert [i["chrf"] for i in named["items"]] == [i["chrf"] for i in plain["items"]]
    assert named["signatures"]["chrf"] == plain["signatures"]["chrf"]       # the default, named: as before


def test_multi_reference_reaches_rouge_and_meteor(tmp_path, capsys):
    """The one flag sets ROUGE's own multi_reference (its engine's modes) and METEOR's."""
    pytest.importorskip("pycocoevalcap", reason="METEOR's tables come with the meteor extra")
    from opik_metrics import METEOR, ROUGE
    outputs, references = _three_references(15, seed=4)
    got = _json(capsys, *_files(tmp_path, outputs, references), "-m", "rouge", "-m", "meteor",
                "--multi-reference", "mean")
    rouge = ROUGE(multi_reference="mean", track=False).score_batch(outputs, references)
    meteor = METEOR(multi_reference="mean", track=False).score_batch(outputs, references)
    assert [i["rouge1_f1"] for i in got["items"]] == [r[2].value for r in rouge]
    assert [i["meteor"] for i in got["items"]] == [r[0].value for r in meteor]
    assert "multi:mean" in got["signatures"]["rouge"] and got["signatures"]["meteor"].endswith("|multi:mean")


def test_multi_reference_on_records_signs_the_header(tmp_path, capsys):
    outputs, references = _three_references(20)
    path = write_jsonl(tmp_path / "in.jsonl", [{"id": k, "output": o, "reference": r}
                                               for k, (o, r) in enumerate(zip(outputs, references))])
    out = tmp_path / "o.jsonl"
    status, _, err = _run(capsys, "-i", str(path), "-o", str(out), "-m", "bleu", "--multi-reference", "mean")
    assert status == 0, err
    header = read_metadata(str(out))
    assert header["signatures"]["bleu"].endswith("|multi:mean")
    from opik_metrics.streams import read_rows
    from opik_metrics import BLEU
    expected = BLEU(multi_reference="mean", track=False).score_batch(outputs, references)
    assert [row["bleu"] for row in read_rows(str(out))] == [r[0].value for r in expected]


def _parsed(*argv):
    return build_parser("score").parse_args(["score", *argv])


def test_a_metrics_own_option_wins_over_multi_reference():
    """Given on the line, even at its default value, a metric's own option is what it gets."""
    args = _parsed("-p", "x", "--multi-reference", "max", "--bartscore-multi-reference", "mean")
    assert metric_kwargs("bartscore", args)["multi_reference"] == "mean"
    args = _parsed("-p", "x", "--multi-reference", "mean", "--bartscore-multi-reference", "max")
    assert metric_kwargs("bartscore", args)["multi_reference"] == "max"
    assert metric_kwargs("bleu", args)["multi_reference"] == "mean"
    args = _parsed("-p", "x", "--multi-reference", "max")
    assert metric_kwargs("bartscore", args)["multi_reference"] == "max"
    assert metric_kwargs("bertscore", args)["multi_reference"] == "max"
    assert "multi_reference" not in metric_kwargs("perplexity", args)    # scores the output alone
    assert metric_kwargs("bartscore", _parsed("-p", "x"))["multi_reference"] == "mean"    # its own default
    assert "multi_reference" not in metric_kwargs("bleu", _parsed("-p", "x"))


@pytest.mark.parametrize("argv, message", [
    (["-m", "bleu", "--multi-reference", "best"], "--multi-reference best: bleu takes pooled (default), mean"),
    (["-m", "rouge", "-m", "chrf", "--multi-reference", "pooled"], "--multi-reference pooled: rouge takes best (default)"),
    (["-m", "chrf", "--multi-reference", "avg"], "--multi-reference avg: chrf takes best (default), mean"),
    (["-m", "bleu", "-m", "ter", "--multi-reference", "mean"],
     "--multi-reference mean: ter has no choice of rule for several references"),
    (["-m", "cider", "--multi-reference", "mean"], "--multi-reference mean: cider has no choice of rule"),
    (["-m", "rouge", "--split-sentences", "nltk", "--multi-reference", "max"], "rouge takes best (default)"),
])
def test_a_mode_a_metric_lacks_is_one_line_naming_the_metric_and_its_modes(tmp_path, capsys, argv, message):
    outputs, references = _three_references(3)
    status, out, err = _run(capsys, *_files(tmp_path, outputs, references), *argv)
    assert status == 2 and message in err and len(err.strip().splitlines()) == 1 and not out


# -- --lowercase ----------------------------------------------------------------------------

def _lowered(references):
    return [[r.lower() for r in refs] for refs in references]


@pytest.mark.parametrize("chosen", [["-m", "rouge", "-m", "bleu", "-m", "chrf"],
                                    ["-m", "meteor", "-m", "ter", "--ter-case-sensitive"],
                                    ["-m", "rouge", "--rouge-tokenizer", "unicode", "-m", "cider"]],
                         ids=["rouge-bleu-chrf", "meteor-ter", "unicode-rouge-cider"])
def test_lowercase_equals_scoring_lowercased_files(tmp_path, capsys, chosen):
    metrics = chosen
    if "meteor" in metrics:
        pytest.importorskip("pycocoevalcap", reason="METEOR's tables come with the meteor extra")
    outputs, references = _three_references(40, seed=9)
    outputs = [o.upper() if k % 3 == 0 else o for k, o in enumerate(outputs)]       # case that matters
    references = [[r.upper() if (k + j) % 4 == 0 else r for j, r in enumerate(refs)] for k, refs in enumerate(references)]
    got = _json(capsys, *_files(tmp_path, outputs, references), *chosen, "--lowercase")
    lowered = _json(capsys, *_files(tmp_path, [o.lower() for o in outputs], _lowered(references), "l"), *chosen)
    assert got["items"] == lowered["items"] and got["aggregate"] == lowered["aggregate"]
    plain = _json(capsys, *_files(tmp_path, outputs, references), *chosen)
    assert plain["items"] != got["items"] or "ter" not in metrics      # TER lowercases unless case-sensitive
    for name, signature in got["signatures"].items():
        if name.endswith(("bleu", "chrf")):
            assert "case:lc" in signature and "lowercase" not in signature      # sacrebleu's own -lc
        else:
            assert signature.endswith("|lowercase:yes") and signature == f"{lowered['signatures'][name]}|lowercase:yes"


def test_lowercase_prepares_the_corpus_context_too(tmp_path, capsys):
    """BERTScore's idf weights (every reference, read first) come from the lowercased references:
    a cased RoBERTa tokeniser makes them differ."""
    pytest.importorskip("torch")
    from tests.neural.tiny_models import build_roberta
    model = str(build_roberta(tmp_path / "roberta"))
    outputs, references = _three_references(12, seed=21)
    outputs = [o.upper() if k % 2 else o for k, o in enumerate(outputs)]
    options = ["-m", "bertscore", "--bertscore-model", model, "--num-layers", "2", "--idf"]
    got = _json(capsys, *_files(tmp_path, outputs, references), *options, "--lowercase")
    lowered = _json(capsys, *_files(tmp_path, [o.lower() for o in outputs], _lowered(references), "l"), *options)
    assert [i["BERTF1"] for i in got["items"]] == pytest.approx([i["BERTF1"] for i in lowered["items"]], abs=1e-6)
    assert got["signatures"]["bertscore"].endswith("|lowercase:yes")


def test_lowercase_on_records_is_an_option_difference_to_compare(tmp_path, capsys):
    outputs, references = _three_references(30, seed=13)
    outputs = [o.upper() if k % 2 else o for k, o in enumerate(outputs)]
    rows = [{"id": k, "output": o, "reference": r} for k, (o, r) in enumerate(zip(outputs, references))]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    low = write_jsonl(tmp_path / "low.jsonl", [{**r, "output": r["output"].lower(), "reference": _lowered([r["reference"]])[0]}
                                                for r in rows])
    runs = {}
    for tag, source, extra in (("plain", path, []), ("lower", path, ["--lowercase"]), ("direct", low, [])):
        out = tmp_path / f"{tag}.jsonl"
        status, _, err = _run(capsys, "-i", str(source), "-o", str(out), "-m", "rouge", "-m", "bleu", *extra)
        assert status == 0, err
        from opik_metrics.streams import read_rows
        runs[tag] = ([{k: v for k, v in row.items() if k != "index"} for row in read_rows(str(out))],
                     read_metadata(str(out)))
    assert runs["lower"][0] == runs["direct"][0]
    signatures = runs["lower"][1]["signatures"]
    assert signatures["rouge"] == runs["plain"][1]["signatures"]["rouge"] + "|lowercase:yes"
    assert "case:lc" in signatures["bleu"]
    status = main(["compare", str(tmp_path / "plain.jsonl"), str(tmp_path / "lower.jsonl"), "--format", "json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    differences = report["pairs"][0]["option_differences"]
    assert differences["rouge1_f1"]["lowercase"] == [None, True]
    assert differences["bleu"]["case"] == ["mixed", "lc"]


# -- --split-sentences ------------------------------------------------------------------------

def _punkt():
    """The splitter the pack uses: nltk's trained English Punkt when installed, else untrained Punkt."""
    import nltk
    for data in ("tokenizers/punkt_tab/english/", "tokenizers/punkt/english.pickle"):
        try:
            nltk.data.find(data)
            return nltk.sent_tokenize, True
        except LookupError:
            continue
    from nltk.tokenize.punkt import PunktSentenceTokenizer
    return PunktSentenceTokenizer().tokenize, False


def _summaries(count, seed):
    """Lines of two to four sentences (some PTB-tokenised, lowercase with spaced periods)."""
    rng = random.Random(seed)
    preds, refs = realistic_pairs(count * 4, seed=seed)
    outputs, references = [], []
    for k in range(count):
        n = rng.randint(2, 4)
        out, ref = " ".join(preds[4 * k:4 * k + n]), " ".join(refs[4 * k:4 * k + n])
        if k % 3 == 0:
            out = out.lower().replace(".", " .").replace(",", " ,")
        outputs.append(out)
        references.append([ref])
    return outputs, references


@pytest.mark.filterwarnings("ignore:nltk's English Punkt model is not installed")
def test_split_sentences_gives_rouge_scores_numbers_on_the_split_text(tmp_path, capsys):
    from rouge_score import rouge_scorer
    split, trained = _punkt()
    outputs, references = _summaries(40, seed=5)
    got = _json(capsys, *_files(tmp_path, outputs, references), "-m", "rouge", "--rouge-type", "rougeLsum",
                "--rouge-type", "rouge1", "--use-stemmer", "-m", "bleu", "--split-sentences", "nltk")
    oracle = rouge_scorer.RougeScorer(["rougeLsum", "rouge1"], use_stemmer=True)
    unsplit = 0
    for output, refs, item in zip(outputs, references, got["items"]):
        expected = oracle.score("\n".join(split(refs[0])), "\n".join(split(output)))
        assert item["rougeLsum_f1"] == pytest.approx(expected["rougeLsum"].fmeasure, abs=1e-12)
        assert item["rouge1_f1"] == pytest.approx(expected["rouge1"].fmeasure, abs=1e-12)
        unsplit += oracle.score(refs[0], output)["rougeLsum"].fmeasure != expected["rougeLsum"].fmeasure
        if trained:
            with_nltk = rouge_scorer.RougeScorer(["rougeLsum"], use_stemmer=True, split_summaries=True)
            assert item["rougeLsum_f1"] == pytest.approx(with_nltk.score(refs[0], output)["rougeLsum"].fmeasure,
                                                         abs=1e-12)
    assert unsplit > 10                           # the split is what changed the numbers
    assert got["signatures"]["rouge"].endswith("|split:" + ("punkt-english" if trained else "punkt-untrained"))
    plain = _json(capsys, *_files(tmp_path, outputs, references), "-m", "bleu")
    assert [i["bleu"] for i in got["items"]] == [i["bleu"] for i in plain["items"]]     # BLEU reads no sentences
    assert got["signatures"]["bleu"] == plain["signatures"]["bleu"]


@pytest.mark.filterwarnings("ignore:nltk's English Punkt model is not installed")
@pytest.mark.parametrize("extra", [[], ["--rouge155"], ["--lowercase"]])
def test_split_sentences_on_records_equals_records_split_beforehand(tmp_path, capsys, extra):
    split, _ = _punkt()
    outputs, references = _summaries(30, seed=8)
    rows = [{"id": k, "output": o, "reference": r} for k, (o, r) in enumerate(zip(outputs, references))]
    path = write_jsonl(tmp_path / "in.jsonl", rows)
    low = "--lowercase" in extra

    def prepared(text):
        text = "\n".join(split(text))
        return text.lower() if low else text
    ready = write_jsonl(tmp_path / "split.jsonl", [{**r, "output": prepared(r["output"]),
                                                     "reference": [prepared(x) for x in r["reference"]]} for r in rows])
    options = ["-m", "rouge", "--rouge-type", "rougeLsum", "--rouge-type", "rougeW", *[e for e in extra if e != "--lowercase"]]
    got = _json(capsys, "-i", str(path), *options, "--split-sentences", "nltk", *[e for e in extra if e == "--lowercase"])
    direct = _json(capsys, "-i", str(ready), *options)
    assert got["items"] == direct["items"] and got["aggregate"] == direct["aggregate"]
    assert got["signatures"]["rouge"].startswith(direct["signatures"]["rouge"] + "|split:punkt-")
    assert got["signatures"]["rouge"].endswith("|lowercase:yes") == low


def test_split_sentences_newline_is_the_default_and_signs_nothing(tmp_path, capsys):
    outputs, references = _summaries(10, seed=2)
    got = _json(capsys, *_files(tmp_path, outputs, references), "-m", "rouge", "--split-sentences", "newline")
    plain = _json(capsys, *_files(tmp_path, outputs, references), "-m", "rouge")
    assert got == plain


def test_split_sentences_without_rouge_is_one_line(tmp_path, capsys):
    outputs, references = _summaries(3, seed=2)
    status, out, err = _run(capsys, *_files(tmp_path, outputs, references), "-m", "bleu", "--split-sentences", "nltk")
    assert status == 2 and "only rouge reads sentences" in err and len(err.strip().splitlines()) == 1
