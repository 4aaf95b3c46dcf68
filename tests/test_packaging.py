"""What a user installs: `python -m build` gives an sdist and a wheel that pass `twine check`, and the
wheel, installed into a fresh virtual environment with no repository on the path, imports, scores
ROUGE, BLEU and CIDEr-D as the reference libraries do and runs `opik-metrics --help`.

Offline: the build runs without isolation (the dev venv's setuptools), the wheel installs with
``--no-deps --no-index``, and its dependencies come from the dev venv's site-packages, listed as a
plain path in a ``.pth`` file of the fresh venv (so the dev venv's own ``.pth`` files, the editable
install's finder among them, are not run there).
"""
from __future__ import annotations

import json
import sys
import sysconfig
import tarfile
import zipfile
from pathlib import Path

import pytest

from tests.fresh_install import ROOT, build, clean_env, run, source_copy

pytestmark = pytest.mark.xdist_group("packaging")      # one build and one fresh venv, where loadgroup works

PACKAGE = "opik_metrics"

# One item per metric; plain lower-case words, which pycocoevalcap's PTB tokenisation leaves as they are.
ROUGE_PAIR = ("the cat sat on the mat today", "a cat was sitting on the mat")
BLEU_PAIR = ("the quick brown fox jumps over the lazy dog", "the quick brown fox jumped over the lazy dog")
CIDER_CANDIDATES = ["a dog runs on grass", "a cat sleeps on the bed", "two men riding horses"]
CIDER_REFERENCES = [["a dog runs on the grass", "a brown dog running in a field"],
                    ["a cat sleeps on a bed", "a cat lying on a bed"],
                    ["two men ride horses", "two people on horseback"]]

SCRIPT = """
import json, sys
import opik_metrics
from opik_metrics import BLEU, CIDEr, ROUGE
import opik_metrics.pipelines
import opik_metrics.pipelines.captioning, opik_metrics.pipelines.distillation

rouge_pair, bleu_pair, candidates, references = json.loads(sys.argv[1])
rouge = ROUGE(rouge_types=["rouge1", "rouge2", "rougeL"], track=False).score(*rouge_pair)
bleu = BLEU(track=False).score(*bleu_pair)
cider = CIDEr(df_references=references, track=False).score(candidates[0], references[0])
modules = {name: getattr(module, "__file__", None) for name, module in list(sys.modules.items())
           if name == "opik_metrics" or name.startswith("opik_metrics.")}
print(json.dumps({
    "file": opik_metrics.__file__, "version": opik_metrics.__version__, "sys_path": sys.path,
    "modules": modules,
    "rouge": {r.name: r.value for r in rouge}, "bleu": bleu[0].value, "cider": cider[0].value,
}))
"""


@pytest.fixture(scope="module")
def dists(tmp_path_factory) -> dict[str, Path]:
    """The sdist, then the wheel built from that sdist (so the sdist is shown to be complete)."""
    out = tmp_path_factory.mktemp("dist")
    source = source_copy(tmp_path_factory.mktemp("source") / "opik-metrics")
    build(source, out)
    sdists, wheels = sorted(out.glob("*.tar.gz")), sorted(out.glob("*.whl"))
    assert len(sdists) == 1 and len(wheels) == 1, sorted(p.name for p in out.iterdir())
    return {"sdist": sdists[0], "wheel": wheels[0]}


@pytest.fixture(scope="module")
def venv(dists, tmp_path_factory) -> Path:
    """A fresh venv holding the wheel alone; the dependencies come from the dev venv's site-packages."""
    home = tmp_path_factory.mktemp("clean")
    venv = home / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=home, env=clean_env())
    python = venv / "bin" / "python"
    run([sys.executable, "-m", "pip", "--python", python, "install", "--no-deps", "--no-index", dists["wheel"]],
        cwd=home, env=clean_env())
    site = Path(run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                    cwd=home, env=clean_env()).stdout.strip())
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "_dev_dependencies.pth").write_text("".join(f"{path}\n" for path in ours), encoding="utf-8")
    return venv


def test_build_gives_an_sdist_and_a_wheel_that_pass_twine_check(dists):
    result = run([sys.executable, "-m", "twine", "check", "--strict", dists["sdist"], dists["wheel"]],
                 env=clean_env())
    assert result.stdout.count("PASSED") == 2, result.stdout


def test_the_wheel_holds_the_package_and_nothing_else(dists):
    with zipfile.ZipFile(dists["wheel"]) as wheel:
        names = set(wheel.namelist())
        metadata = wheel.read(next(n for n in names if n.endswith(".dist-info/METADATA"))).decode()
        entry_points = wheel.read(next(n for n in names if n.endswith(".dist-info/entry_points.txt"))).decode()
    dist_info = {n.split("/")[0] for n in names if ".dist-info/" in n}
    assert len(dist_info) == 1
    assert {n.split("/")[0] for n in names} == {PACKAGE} | dist_info
    assert not [n for n in names if {"tests", "bench", "examples", "notebooks", "__pycache__"} & set(n.split("/"))]
    # Every file of the package, Python or data, is in the wheel; pipelines/ as opik_metrics/pipelines/.
    expected = {f"{PACKAGE}/{p.relative_to(ROOT / PACKAGE).as_posix()}" for p in files_of(ROOT / PACKAGE)}
    expected |= {f"{PACKAGE}/pipelines/{p.relative_to(ROOT / 'pipelines').as_posix()}"
                 for p in files_of(ROOT / "pipelines")}
    missing = sorted(expected - names)
    assert not missing, f"not in the wheel: {missing}"
    assert "\nName: opik-metrics\n" in metadata and "\nLicense-Expression: Apache-2.0\n" in metadata
    assert "\nDescription-Content-Type: text/markdown\n" in metadata
    assert "opik-metrics = opik_metrics.cli:main" in entry_points
    assert f"{PACKAGE}/py.typed" in names        # PEP 561: type checkers read the package's annotations


def files_of(folder: Path) -> list[Path]:
    return [p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
            and not p.name.startswith(".") and p.suffix not in {".pyc", ".pyo"}]


def test_the_sdist_holds_the_sources_and_no_tests(dists):
    with tarfile.open(dists["sdist"]) as sdist:
        names = {n.split("/", 1)[1] for n in sdist.getnames() if "/" in n}
    assert {"pyproject.toml", "setup.py", "README.md", "PKG-INFO", f"{PACKAGE}/__init__.py",
            "pipelines/__init__.py", f"{PACKAGE}/py.typed"} <= names
    assert not [n for n in names if n.split("/")[0] in {"tests", "bench", "examples", "notebooks", "docs"}]


def test_the_installed_wheel_imports_and_scores_as_the_reference_libraries(dists, venv, tmp_path):
    python = venv / "bin" / "python"
    script = tmp_path / "score.py"
    script.write_text(SCRIPT, encoding="utf-8")
    inputs = json.dumps([ROUGE_PAIR, BLEU_PAIR, CIDER_CANDIDATES, CIDER_REFERENCES])
    out = json.loads(run([python, script, inputs], cwd=tmp_path, env=clean_env()).stdout.strip().splitlines()[-1])

    # The package and every module of it come from the fresh venv, none from the repository.
    site = venv.resolve()
    assert Path(out["file"]).resolve().is_relative_to(site), out["file"]
    assert "opik_metrics.pipelines" in out["modules"] and "opik_metrics.metrics.cider" in out["modules"]
    strays = {n: f for n, f in out["modules"].items() if f is None or not Path(f).resolve().is_relative_to(site)}
    assert not strays, strays
    assert not [p for p in out["sys_path"] if p and Path(p).resolve() == ROOT]
    assert out["version"] == dists["wheel"].name.split("-")[1]      # the wheel's own metadata, not the dev venv's

    # The numbers, against the reference libraries run here (the dev venv).
    from pycocoevalcap.cider.cider import Cider
    from rouge_score.rouge_scorer import RougeScorer
    from sacrebleu import sentence_bleu

    reference = RougeScorer(["rouge1", "rouge2", "rougeL"]).score(ROUGE_PAIR[1], ROUGE_PAIR[0])
    for rtype, s in reference.items():
        for part, value in (("precision", s.precision), ("recall", s.recall), ("f1", s.fmeasure)):
            assert out["rouge"][f"{rtype}_{part}"] == pytest.approx(value, abs=1e-12), (rtype, part)
    assert out["bleu"] == pytest.approx(sentence_bleu(BLEU_PAIR[0], [BLEU_PAIR[1]]).score / 100, abs=1e-12)
    _, per_item = Cider().compute_score({i: refs for i, refs in enumerate(CIDER_REFERENCES)},
                                        {i: [c] for i, c in enumerate(CIDER_CANDIDATES)})
    assert out["cider"] == pytest.approx(float(per_item[0]), abs=1e-9)
    assert 0.0 < out["bleu"] < 1.0 and out["cider"] > 0.0


def test_the_installed_console_script_runs(venv, tmp_path):
    script = venv / "bin" / "opik-metrics"
    assert script.read_text(encoding="utf-8").splitlines()[0] == f"#!{venv / 'bin' / 'python'}"
    result = run([script, "--help"], cwd=tmp_path, env=clean_env())
    assert result.stdout.startswith("usage: opik-metrics")
    for command in ("score", "caption", "experiments", "compare"):
        assert command in result.stdout
