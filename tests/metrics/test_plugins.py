"""Metrics from other packages: two small distributions, built here and installed with pip into a
fresh venv, offer metrics through the ``opik_metrics.metrics`` entry point group. The good one's
metrics are in ``score --help`` and score record files in this process and in worker processes,
with values worked out by hand; each of the broken one's entry points is left out with one warning
line naming it, and the built-in metrics stay as they are.

Offline: pip installs with ``--no-index --no-build-isolation --no-deps`` (setuptools from the dev
venv builds the plugins); the fresh venv reaches the dev venv's packages through a ``.pth`` file,
and this checkout's opik_metrics comes first through PYTHONPATH (the dev venv's editable install
may point at another checkout)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import warnings
from pathlib import Path

import pytest

from opik_metrics.metric_kit.card import MetricCard, NameTaken, PluginWarning, register, registered, unregister
from opik_metrics.metrics.catalog import metric_class
from tests.cli.test_arguments_before_imports import HEAVY, PROBE
from tests.streams.records import write_jsonl

pytestmark = pytest.mark.xdist_group("plugins")     # one fresh venv for the module

ROOT = Path(__file__).resolve().parents[2]

GOOD_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "opik-metrics-toy-plugin"
version = "0.1"

[project.entry-points."opik_metrics.metrics"]
toy_words = "toy_plugin:WordCount"
toy_exact = "toy_plugin:ExactMatch"

[tool.setuptools]
py-modules = ["toy_plugin"]
"""

GOOD_MODULE = '''
"""Two plugin metrics: the words of the output, and whether the output is one of its references."""
import os

from opik_metrics.core import ScoreFacts, Signature
from opik_metrics.metric_kit.base import ReferenceFreeMetric, ReferenceMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option


def _note_process():
    """Append this process's id to $TOY_PLUGIN_PIDS: the test learns which processes scored."""
    if os.environ.get("TOY_PLUGIN_PIDS"):
        with open(os.environ["TOY_PLUGIN_PIDS"], "a") as f:
            f.write(f"{os.getpid()}\\n")


class WordCount(ReferenceFreeMetric):
    card = MetricCard("toy_words", "words of the output", needs_reference=False)

    def __init__(self, name="toy_words", track=True, project_name=None):
        self.signature = Signature({"metric": "toy_words"})
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self):
        return [ScoreFacts(self.name, bounds=(0.0, None))]

    def _score_items(self, outputs):
        _note_process()
        return [[ScoreResult(name=self.name, value=float(len(o.split())))] for o in outputs]


class ExactMatch(ReferenceMetric):
    # loads_model: the file engine's workers are then started by forkserver, so they import this
    # module afresh to build the metric (fork would hand them the parent's copy)
    card = MetricCard("toy_exact", "1 if the output is one of its references, else 0", group="toy_exact options",
                      loads_model=True,
                      options=(Option("--toy-exact-lowercase", "lowercase", action="store_true",
                                      help="compare lowercased texts"),))

    def __init__(self, lowercase=False, name="toy_exact", track=True, project_name=None):
        self.lowercase = lowercase
        self.signature = Signature({"metric": "toy_exact", "lowercase": str(lowercase).lower()})
        super().__init__(name=name, track=track, project_name=project_name)

    def _score_facts(self):
        return [ScoreFacts(self.name, bounds=(0.0, 1.0))]

    def _score_items(self, outputs, references):
        _note_process()
        fold = str.lower if self.lowercase else str
        return [[ScoreResult(name=self.name, value=float(fold(o) in {fold(r) for r in refs}))]
                for o, refs in zip(outputs, references)]
'''

BROKEN_PYPROJECT = """
[build-system]
requires = ["setuptools>=61"]
build-backend = "setuptools.build_meta"

[project]
name = "opik-metrics-broken-plugin"
version = "0.2"

[project.entry-points."opik_metrics.metrics"]
toy_missing = "broken_plugin.missing:Thing"
toy_function = "broken_plugin.things:helper"
toy_alias = "broken_plugin.things:Renamed"
bleu = "broken_plugin.clash:FakeBleu"
toy_lowercase = "broken_plugin.things:OwnLowercase"
toy_workers = "broken_plugin.things:Workers"

[tool.setuptools]
packages = ["broken_plugin"]
"""

BROKEN_THINGS = '''
from opik_metrics.core import ScoreFacts, Signature
from opik_metrics.metric_kit.base import ReferenceFreeMetric, ScoreResult
from opik_metrics.metric_kit.card import MetricCard, Option


def helper():
    return 1


class Constant(ReferenceFreeMetric):
    def __init__(self, workers=1, name=None, track=True, project_name=None):
        self.workers = workers
        self.signature = Signature({"metric": name})
        super().__init__(name=name or self.card.name, track=track, project_name=project_name)

    def _score_facts(self):
        return [ScoreFacts(self.name)]

    def _score_items(self, outputs):
        return [[ScoreResult(name=self.name, value=7.0)] for _ in outputs]


class Renamed(Constant):
    card = MetricCard("toy_renamed", "an entry point that calls it otherwise", needs_reference=False)


class OwnLowercase(Constant):
    card = MetricCard("toy_lowercase", "--lowercase taking a number", needs_reference=False,
                      options=(Option("--lowercase", "workers", kind=int),))


class Workers(Constant):
    card = MetricCard("toy_workers", "an option the score command has itself", needs_reference=False,
                      options=(Option("--workers", "workers", kind=int),))
'''

BROKEN_CLASH = '''
from opik_metrics.metric_kit.base import ReferenceMetric
from opik_metrics.metric_kit.card import MetricCard


class FakeBleu(ReferenceMetric):
    card = MetricCard("bleu", "not the real BLEU")

    def _score_items(self, outputs, references):
        return [[] for _ in outputs]
'''

# What each broken entry point is told, after "plugin metric NAME (NAME = TARGET, from distribution
# opik-metrics-broken-plugin 0.2) is left out: "; one line each, in entry point name order.
LEFT_OUT = {
    "bleu": "broken_plugin.clash:FakeBleu cannot be called 'bleu': the built-in metric "
            "opik_metrics.metrics.bleu:BLEU has that name",
    "toy_alias": "its card is named 'toy_renamed'; the entry point must carry the card's name",
    "toy_function": "it is a function, not a metric class (a subclass of opik_metrics.metric_kit.base.PackMetric)",
    "toy_lowercase": "the metric 'bleu' declares --lowercase too, taking another value (an option two metrics "
                     "share is added once, so both must take it alike)",
    "toy_missing": "importing it failed: ModuleNotFoundError: No module named 'broken_plugin.missing'",
}
TARGETS = {"toy_missing": "broken_plugin.missing:Thing", "toy_function": "broken_plugin.things:helper",
           "toy_alias": "broken_plugin.things:Renamed", "bleu": "broken_plugin.clash:FakeBleu",
           "toy_lowercase": "broken_plugin.things:OwnLowercase"}
WARNINGS = [f"opik-metrics: warning: plugin metric {name!r} ({name} = {TARGETS[name]}, from distribution "
            f"opik-metrics-broken-plugin 0.2) is left out: {why}" for name, why in sorted(LEFT_OUT.items())] + [
    "opik-metrics: warning: the option --workers of metric 'toy_workers' is left out: "
    "argument --workers: conflicting option string: --workers"]


def _env(**more: str) -> dict[str, str]:
    """This checkout's opik_metrics first on the path; nothing of the user's site."""
    env = {k: v for k, v in os.environ.items() if k not in {"PYTHONHOME", "PYTHONSTARTUP", "VIRTUAL_ENV"}}
    env.update(PYTHONPATH=str(ROOT), PYTHONNOUSERSITE="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1",
               OPIK_ANALYTICS_ENABLE="false", OPIK_SENTRY_ENABLE="false", PIP_DISABLE_PIP_VERSION_CHECK="1",
               PIP_NO_INPUT="1", **more)
    return env


def _run(args: list, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    done = subprocess.run([str(a) for a in args], capture_output=True, text=True, timeout=300, cwd=cwd, env=_env(**env))
    assert done.returncode == 0, f"{args} exited {done.returncode}\n{done.stdout}\n{done.stderr}"
    return done


def _write(folder: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


def venv_beside_dev(home: Path) -> Path:
    """A fresh venv's python under ``home`` that reaches the dev venv's packages, this checkout's
    opik_metrics first (what pip needs to install a plugin offline into it)."""
    venv = home / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], home)
    python = venv / "bin" / "python"
    site = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"], home).stdout.strip())
    # addsitedir, not a plain path: the dev venv's own .pth files run too (its editable install maps
    # opik_metrics.pipelines); PYTHONPATH still puts this checkout's opik_metrics before it
    ours = dict.fromkeys([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")])
    (site / "_dev_venv.pth").write_text("".join(f"import site; site.addsitedir({p!r})\n" for p in ours),
                                        encoding="utf-8")
    found = _run([python, "-c", "import opik_metrics, setuptools, pip; print(opik_metrics.__file__)"], home)
    assert Path(found.stdout.strip()) == ROOT / "opik_metrics" / "__init__.py"
    return python


@pytest.fixture(scope="module")
def python(tmp_path_factory) -> Path:
    """A fresh venv's python, with both plugin distributions installed by pip."""
    home = tmp_path_factory.mktemp("plugins")
    python = venv_beside_dev(home)
    good = _write(home / "good", {"pyproject.toml": GOOD_PYPROJECT, "toy_plugin.py": GOOD_MODULE})
    broken = _write(home / "broken", {"pyproject.toml": BROKEN_PYPROJECT, "broken_plugin/__init__.py": "",
                                      "broken_plugin/things.py": BROKEN_THINGS,
                                      "broken_plugin/clash.py": BROKEN_CLASH})
    _run([python, "-m", "pip", "install", "--no-deps", "--no-build-isolation", "--no-index", "-q", good, broken], home)
    return python


def _cli(python: Path, args: list, cwd: Path, **env: str) -> subprocess.CompletedProcess:
    """``opik-metrics ARGS`` in the venv; its stderr holds the broken plugin's warnings and nothing else."""
    done = _run([python, "-m", "opik_metrics", *args], cwd, **env)
    assert done.stderr.splitlines() == WARNINGS
    return done


def test_help_lists_the_plugin_metrics_and_their_options(python, tmp_path):
    """Once a plugin metric is named (plain ``score --help`` loads none: below)."""
    shown = _cli(python, ["score", "-m", "toy_words", "--help"], tmp_path).stdout
    choices = shown[shown.index("--metric {") + len("--metric {"):].split("}")[0].replace("\n", "").replace(" ", "")
    assert choices.split(",") == ["bartscore", "bertscore", "bleu", "chrf", "cider", "clipscore", "coco", "distillation_kl",
                                  "gptscore", "meteor", "perplexity", "rouge", "ter", "toy_exact", "toy_words", "toy_workers", "unieval"]
    assert "toy_exact options:" in shown and "--toy-exact-lowercase" in shown and "compare lowercased texts" in shown
    top = _run([python, "-m", "opik_metrics", "--help"], tmp_path)     # lists the commands, loads no plugin
    assert "usage: opik-metrics" in top.stdout and top.stderr == ""
    plain = _run([python, "-m", "opik_metrics", "score", "--help"], tmp_path)   # the built-ins, no plugin loaded
    assert "toy_words" not in plain.stdout and "--toy-exact-lowercase" not in plain.stdout and plain.stderr == ""


def test_the_plugins_load_when_the_catalog_is_asked_and_help_stays_light(python, tmp_path):
    script = ("import sys\nimport opik_metrics.cli.main, opik_metrics.metrics.catalog as catalog\n"
              "before = 'toy_plugin' in sys.modules\ncatalog.metric_classes(plugins=True)\n"
              "print(before, 'toy_plugin' in sys.modules, catalog.metric_class('toy_words').__module__)")
    assert _run([python, "-W", "ignore", "-c", script], tmp_path).stdout.split() == ["False", "True", "toy_plugin"]
    probe = PROBE.format(argv=["opik-metrics", "score", "--help"], module="opik_metrics", heavy=HEAVY)
    done = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env=_env())
    assert done.stderr.splitlines()[:-1] == []          # no plugin loads for help (issue 56)
    assert json.loads(done.stderr.splitlines()[-1]) == {"code": 0, "heavy": []}


ITEMS = [{"output": "The cat sat", "reference": ["the cat sat", "a cat sat"]},     # words 3; exact 0, lowercased 1
         {"output": "a dog", "reference": "a dog"},                                 # 2; 1, 1
         {"output": "", "reference": "nothing"},                                    # 0; 0, 0
         {"output": "Yes  yes", "reference": ["no", "YES YES"]}]                    # 2; 0, 0 (two spaces)


def test_score_runs_the_plugin_metrics_in_this_process(python, tmp_path):
    path = write_jsonl(tmp_path / "in.jsonl", ITEMS)
    done = _cli(python, ["score", "-i", path, "-m", "toy_words", "-m", "toy_exact", "--format", "json",
                         "--no-progress", "--workers", "1"], tmp_path)
    out = json.loads(done.stdout)
    assert [item["toy_words"] for item in out["items"]] == [3.0, 2.0, 0.0, 2.0]
    assert [item["toy_exact"] for item in out["items"]] == [0.0, 1.0, 0.0, 0.0]
    assert out["aggregate"]["toy_words"] == pytest.approx(7 / 4) and out["aggregate"]["toy_exact"] == 0.25
    lowered = json.loads(_cli(python, ["score", "-i", path, "-m", "toy_exact", "--toy-exact-lowercase", "--format",
                                       "json", "--no-progress"], tmp_path).stdout)
    assert [item["toy_exact"] for item in lowered["items"]] == [1.0, 1.0, 0.0, 0.0]


def test_score_builds_the_plugin_metrics_in_worker_processes(python, tmp_path):
    items = [ITEMS[k % 4] for k in range(40)]
    path = write_jsonl(tmp_path / "in.jsonl", items)
    pids = tmp_path / "pids"
    command = [python, "-m", "opik_metrics", "score", "-i", path, "-m", "toy_words", "-m", "toy_exact",
               "--toy-exact-lowercase", "--workers", "2", "--chunk-size", "4", "--format", "json", "--no-progress"]
    with subprocess.Popen([str(a) for a in command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          cwd=tmp_path, env=_env(TOY_PLUGIN_PIDS=str(pids))) as process:
        stdout, stderr = process.communicate(timeout=300)
    assert process.returncode == 0, stderr
    assert stderr.splitlines() == WARNINGS
    out = json.loads(stdout)
    assert [item["toy_words"] for item in out["items"]] == [[3.0, 2.0, 0.0, 2.0][k % 4] for k in range(40)]
    assert [item["toy_exact"] for item in out["items"]] == [[1.0, 1.0, 0.0, 0.0][k % 4] for k in range(40)]
    scorers = set(pids.read_text().split())
    assert scorers and str(process.pid) not in scorers       # every chunk was scored by a worker


def test_a_built_in_metric_takes_its_name_back_from_an_outside_class():
    """Whatever the order of imports: an outside class that took a built-in's name first loses it."""
    bleu = metric_class("bleu")

    class Impostor:
        card = MetricCard("bleu", "not BLEU")

    with pytest.raises(NameTaken, match=r"cannot be called 'bleu': the built-in metric opik_metrics.metrics.bleu:BLEU"):
        register(Impostor)
    try:
        unregister("bleu")
        register(Impostor)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            register(bleu)
        assert [str(w.message) for w in caught if w.category is PluginWarning] == [
            f"{__name__}:{Impostor.__qualname__} is left out of the catalog: 'bleu' is the name of the built-in "
            "metric opik_metrics.metrics.bleu:BLEU"]
    finally:
        unregister("bleu")
        register(bleu)
    assert registered()["bleu"] is bleu
