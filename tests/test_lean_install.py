"""The core install, as a user gets it: the wheel installed by pip into a fresh venv with no extra.
It brings no torch, transformers, matplotlib or pyarrow and stays under 1 GB; it scores ROUGE, BLEU,
chrF, TER and CIDEr-D as their reference libraries do (run here, in the dev venv), in Python and in
the CLI, and gates two JSON Lines record files; everything that needs an extra says which, in one
line, before any work. And the extras the code names (opik_metrics/core/extras.py) are the ones
pyproject.toml declares."""
from __future__ import annotations

import importlib.metadata
import json
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from opik_metrics.core.extras import EXTRAS
from tests.fresh_install import ROOT, build, clean_env, fresh_venv, installed, site_size, source_copy

pytestmark = pytest.mark.xdist_group("lean_install")      # one wheel and one fresh venv for the module

HEAVY = {"torch", "transformers", "bert-score", "matplotlib", "pyarrow", "pillow", "pycocoevalcap", "ray"}
PAIRS = [("the cat sat on the mat today", "a cat was sitting on the mat"),
         ("the quick brown fox jumps over the lazy dog", "the quick brown fox jumped over the lazy dog"),
         ("A red bus drives down a busy street!", "a red bus drives down a busy city street"),
         ("two kids build a sandcastle", "two children build a sandcastle near the water")]

SCRIPT = """
import json, sys
from opik_metrics import BLEU, CHRF, CIDEr, ROUGE, TER

pairs = json.loads(sys.argv[1])
outs, refs = [p[0] for p in pairs], [[p[1]] for p in pairs]
values = {"rouge": [], "bleu": [], "chrf": [], "ter": []}
rouge, bleu, chrf, ter = ROUGE(track=False), BLEU(track=False), CHRF(track=False), TER(track=False)
for out, ref in pairs:
    values["rouge"].append({r.name: r.value for r in rouge.score(out, ref)})
    values["bleu"].append(bleu.score(out, ref)[0].value)
    values["chrf"].append(chrf.score(out, ref)[0].value)
    values["ter"].append(ter.score(out, ref)[0].value)
values["corpus_bleu"] = bleu.corpus_score(outs, refs).value
cider = CIDEr(df_references=refs, track=False)
values["cider"] = [r[0].value for r in cider.score_batch(outs, refs)]
print(json.dumps(values))
"""


@pytest.fixture(scope="module")
def core(tmp_path_factory) -> Path:
    """A fresh venv holding the wheel and the core dependencies pip resolves for it, nothing more."""
    out = tmp_path_factory.mktemp("wheel")
    build(source_copy(tmp_path_factory.mktemp("source") / "opik-metrics"), out, "--wheel")
    (wheel,) = out.glob("*.whl")
    return fresh_venv(tmp_path_factory.mktemp("core"), str(wheel))


def command(venv: Path, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "opik-metrics"), *args], cwd=cwd, env=clean_env(), capture_output=True,
                          text=True, timeout=300)


def python(venv: Path, code: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(venv / "bin" / "python"), "-c", code, *args], cwd=cwd, env=clean_env(),
                          capture_output=True, text=True, timeout=300)


def test_the_core_brings_no_torch_transformers_matplotlib_or_pyarrow_and_stays_under_a_gigabyte(core):
    names = installed(core)
    assert "opik-metrics" in names and {"opik", "sacrebleu", "nltk", "numpy"} <= names
    assert not names & HEAVY, sorted(names & HEAVY)
    assert not [n for n in names if n.startswith("nvidia-")]
    assert site_size(core) < 1 << 30


def test_the_core_scores_the_text_metrics_as_their_reference_libraries(core, tmp_path):
    done = python(core, SCRIPT, json.dumps(PAIRS), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])

    from pycocoevalcap.cider.cider import Cider
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu import corpus_bleu, sentence_bleu, sentence_chrf, sentence_ter

    scorer = RougeScorer(["rouge1", "rouge2", "rougeL"])
    for (out, ref), rouge, bleu, chrf, ter in zip(PAIRS, got["rouge"], got["bleu"], got["chrf"], got["ter"]):
        for rtype, s in scorer.score(ref, out).items():
            assert rouge[f"{rtype}_f1"] == pytest.approx(s.fmeasure, abs=1e-12), (out, rtype)
            assert rouge[f"{rtype}_recall"] == pytest.approx(s.recall, abs=1e-12), (out, rtype)
        assert bleu == pytest.approx(sentence_bleu(out, [ref]).score / 100, abs=1e-12), out
        assert chrf == pytest.approx(sentence_chrf(out, [ref]).score / 100, abs=1e-12), out
        assert ter == pytest.approx(sentence_ter(out, [ref]).score / 100, abs=1e-12), out
    outs, refs = [p[0] for p in PAIRS], [p[1] for p in PAIRS]
    assert got["corpus_bleu"] == pytest.approx(corpus_bleu(outs, [refs]).score / 100, abs=1e-12)
    # pycocoevalcap's CIDEr-D on text its PTB tokeniser leaves as it is (lower case, no punctuation)
    plain = [re.sub(r"[^a-z ]", "", o.lower()) for o in outs]
    assert plain[2] != outs[2]
    _, expected = Cider().compute_score({i: [r] for i, r in enumerate(refs)}, {i: [o] for i, o in enumerate(plain)})
    assert [got["cider"][i] for i in (0, 1, 3)] == pytest.approx([float(expected[i]) for i in (0, 1, 3)], abs=1e-9)


def test_the_core_cli_scores_files_and_gates_two_jsonl_record_files(core, tmp_path):
    shutil.copytree(ROOT / "examples" / "ci", tmp_path / "ci")
    for name in ("baseline", "candidate"):
        done = command(core, "score", "-i", f"ci/{name}.jsonl", "-o", f"{name}.jsonl", "-m", "rouge", "-m", "bleu",
                       "-m", "chrf", "-m", "ter", "--field", "output=caption", "--no-progress", cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    gate = command(core, "compare", "baseline.jsonl", "candidate.jsonl", "--fail-on", "worse", "--junit", "gate.xml",
                   "-o", "report", cwd=tmp_path)
    assert gate.returncode == 1, gate.stderr
    assert gate.stderr.strip().splitlines()[-1].startswith("gate failed: rouge1_f1 is significantly worse by")
    assert (tmp_path / "gate.xml").is_file() and (tmp_path / "report" / "comparison.json").is_file()
    page = (tmp_path / "report" / "index.html").read_text(encoding="utf-8")
    assert "no plots: they need the report extra (matplotlib): pip install &#x27;opik-metrics[report]&#x27;" in page
    assert "opik-metrics: note: the report has no plots" in gate.stderr
    shutil.copy(tmp_path / "baseline.jsonl", tmp_path / "same.jsonl")
    same = command(core, "compare", "baseline.jsonl", "same.jsonl", "--fail-on", "worse", cwd=tmp_path)
    assert same.returncode == 0, same.stderr

    text = command(core, "score", "-p", "ci/p.txt", "-r", "ci/r.txt", "-m", "cider", "--format", "json", cwd=tmp_path)
    assert text.returncode == 2 and "ci/p.txt" in text.stderr       # a file that is not there: named
    (tmp_path / "p.txt").write_text("a dog runs on the grass\na cat sleeps\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("a dog running on grass\nthe cat is asleep\n", encoding="utf-8")
    text = command(core, "score", "-p", "p.txt", "-r", "r.txt", "-m", "rouge", "-m", "cider", "--format", "json",
                   cwd=tmp_path)
    assert text.returncode == 0, text.stderr
    assert {"rouge1_f1", "cider"} <= set(json.loads(text.stdout)["items"][0])


@pytest.mark.parametrize("construct, extra", [
    ("BERTScore(model='packaged:minilm')", "neural"),
    ("Perplexity(model='packaged:smollm2')", "neural"),
    ("DistillationKL(teacher='a', student='b')", "neural"),
    ("CLIPScore()", "images"),
    ("METEOR()", "meteor"),
    ("COCOCaption()", "meteor"),
    ("distillation_loss(None, None, None)", "neural"),
])
def test_a_metric_whose_extra_is_missing_is_refused_at_construction_naming_it(core, tmp_path, construct, extra):
    code = (f"from opik_metrics import *\nfrom opik_metrics.core.extras import MissingExtra\n"
            f"try:\n    {construct}\nexcept MissingExtra as exc:\n    print(exc)\n")
    done = python(core, code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert f"needs the {extra} extra: pip install 'opik-metrics[{extra}]'" in done.stdout, done.stdout


def test_the_cli_refuses_a_missing_extra_before_any_work_and_lists_every_metric(core, tmp_path):
    (tmp_path / "p.txt").write_text("a dog runs\n", encoding="utf-8")
    (tmp_path / "r.txt").write_text("a dog running\n", encoding="utf-8")
    done = command(core, "score", "-p", "p.txt", "-r", "r.txt", "-m", "rouge", "-m", "bertscore", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.splitlines() == [
        "opik-metrics: error: BERTScore needs the neural extra: pip install 'opik-metrics[neural]' "
        "(torch, transformers, bert_score are not installed)"]
    done = command(core, "score", "-p", "p.txt", "-r", "r.txt", "-m", "coco", cwd=tmp_path)
    assert done.returncode == 2 and "--coco-no-meteor" in done.stderr and "opik-metrics[meteor]" in done.stderr
    done = command(core, "score", "-p", "p.txt", "-r", "r.txt", "-m", "coco", "--coco-no-meteor", "--format", "json",
                   cwd=tmp_path)
    assert done.returncode == 0 and "CIDEr" in json.loads(done.stdout)["items"][0], done.stderr

    (tmp_path / "in.jsonl").write_text('{"id": 1, "output": "a dog runs", "reference": "a dog running"}\n',
                                       encoding="utf-8")
    done = command(core, "score", "-i", "in.jsonl", "-o", "out.parquet", "-m", "rouge", "--no-progress", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "opik-metrics: error: the Parquet file out.parquet needs the parquet extra: pip install "
        "'opik-metrics[parquet]' (pyarrow is not installed); or use JSON Lines (a .jsonl file)"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["in.jsonl", "p.txt", "r.txt"]    # nothing scored, nothing left

    (tmp_path / "cc.tsv").write_text("a dog\thttp://127.0.0.1:9/dog.jpg\n", encoding="utf-8")
    done = command(core, "caption", "--tsv", "cc.tsv", "--model", "blip", "--backend", "local", "--experiment", "e",
                   cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.splitlines() == [
        "opik-metrics: error: opik-metrics caption needs the images extra: pip install 'opik-metrics[images]' "
        "(PIL, torch, transformers are not installed)"]
    done = command(core, "explain", "--candidate", "a cat", "--reference", "the cat", "--png", "x.png", cwd=tmp_path)
    assert done.returncode == 2 and "opik-metrics explain needs the neural extra" in done.stderr, done.stderr

    shown = command(core, "score", "--help", cwd=tmp_path)
    assert shown.returncode == 0
    for name in ("bertscore", "clipscore", "meteor", "perplexity", "distillation_kl", "coco", "cider"):
        assert name in shown.stdout


# -- the extras the code names are pyproject's -------------------------------------------------------------

def _dist(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_each_extra_the_code_names_is_declared_and_brings_its_modules():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = declared["optional-dependencies"]
    providers = {module: {d.lower().replace("_", "-") for d in dists}
                 for module, dists in importlib.metadata.packages_distributions().items()}
    for extra, modules in EXTRAS.items():
        assert extra in extras, extra
        listed = {_dist(r) for r in extras[extra]}
        brought = set(listed)          # and what those require in turn, one level down (evaluate brings datasets)
        for dist in listed:
            brought |= {_dist(r) for r in importlib.metadata.requires(dist) or () if "extra ==" not in r}
        for module in modules:
            assert providers[module] & brought, (extra, module, providers[module])
    core = {_dist(r) for r in declared["dependencies"]}
    assert not core & HEAVY
    everything = extras["all"][0]
    assert set(everything[everything.index("[") + 1:everything.index("]")].split(",")) == set(extras) - {"all", "dev"}


def test_a_metric_built_with_what_it_needs_copies_and_pickles_without_the_check(core, tmp_path):
    code = ("import copy, pickle\nfrom opik_metrics import CHRF, COCOCaption\n"
            "coco = COCOCaption(meteor=False, track=False)\n"
            "print(type(copy.deepcopy(coco)).__name__, type(pickle.loads(pickle.dumps(CHRF(track=False)))).__name__)\n"
            "class Mine(COCOCaption):\n    def __init__(self, **kwargs):\n        super().__init__(**kwargs)\n"
            "print(Mine(meteor=False, track=False).engine.keys[-1])\n")
    done = python(core, code, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["COCOCaption", "CHRF", "CIDEr"]
