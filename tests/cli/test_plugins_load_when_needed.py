"""Plugins (entry points of ``opik_metrics.metrics``) load only when a command names a metric the
built-ins lack (issue 56): a plugin whose import takes 30 s cost 30 s for ``score --help``,
``experiments list`` / ``show`` and ``traces score`` before. Each case runs the real command in a
subprocess with a fake installed plugin whose import leaves a mark."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest


@pytest.fixture()
def marking_plugin(tmp_path) -> tuple[dict, Path]:
    """An installed plugin (a dist-info with an entry point on PYTHONPATH) whose import leaves a mark."""
    site = tmp_path / "site"
    (site / "marking_plugin-1.0.dist-info").mkdir(parents=True)
    (site / "marking_plugin-1.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: marking-plugin\nVersion: 1.0\n", encoding="utf-8")
    (site / "marking_plugin-1.0.dist-info" / "entry_points.txt").write_text(
        "[opik_metrics.metrics]\nmarking = marking_plugin:Metric\n", encoding="utf-8")
    mark = tmp_path / "imported"
    (site / "marking_plugin.py").write_text(f"open({str(mark)!r}, 'a').write('imported\\n')\n", encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
    return env, mark


def _cli(env: dict, cwd: Path, *args: object) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "opik_metrics", *map(str, args)], env=env, capture_output=True,
                          text=True, timeout=120, cwd=cwd)


def test_no_plugin_loads_for_help_listings_or_built_in_metrics(marking_plugin, tmp_path):
    env, mark = marking_plugin
    store = tmp_path / "store.sqlite"
    text = tmp_path / "p.txt"
    text.write_text("a cat sat\n", encoding="utf-8")
    for args in (["score", "--help"], ["experiments", "--help"], ["experiments", "list", "--store", store],
                 ["experiments", "show", "nosuch", "--store", store], ["experiments", "rescore", "--help"],
                 ["traces", "score", "--help"], ["score", "-p", text, "-r", text, "-m", "bleu", "--format", "json"]):
        done = _cli(env, tmp_path, *args)
        assert not mark.exists(), f"{args} imported the plugin"
        assert done.returncode == (2 if "show" in args else 0), (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_a_metric_the_built_ins_lack_loads_the_plugins(marking_plugin, tmp_path):
    env, mark = marking_plugin
    done = _cli(env, tmp_path, "score", "-m", "marking", "--help")
    assert mark.exists()                     # loaded, and left out (not a metric class), said in one line each
    assert done.returncode == 2 and done.stderr.splitlines()[-1].startswith(
        "opik-metrics: error: unknown metric 'marking' (known: bartscore,")
    assert "plugin metric 'marking' (marking = marking_plugin:Metric, from distribution marking-plugin 1.0) is " \
           "left out" in done.stderr
