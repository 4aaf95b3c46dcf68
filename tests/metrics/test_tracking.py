"""The pack's metrics subclass Opik's lightweight BaseMetric (no ``import opik`` to score text);
built with ``track=True`` they behave as Opik's full BaseMetric: a span per ``score`` call, and
``isinstance`` of ``opik.evaluation.metrics.BaseMetric``."""
from __future__ import annotations

import subprocess
import sys

import _opik
import pytest

from opik_metrics.metrics.bleu import BLEU


def test_a_tracked_score_is_a_span(fake_opik_backend):
    import opik

    metric = BLEU(track=True, project_name="tracking-test")
    assert isinstance(metric, opik.evaluation.metrics.BaseMetric) and isinstance(metric, _opik.BaseMetric)
    result = metric.score(output="the cat sat on the mat", reference="the cat sat on the mat")
    assert result[0].value == 1.0
    opik.flush_tracker()
    names = [t.name for t in fake_opik_backend.trace_trees]
    assert names == ["bleu"]


def test_an_untracked_metric_logs_nothing(fake_opik_backend):
    import opik

    BLEU(track=False).score(output="a b c d", reference="a b c d")
    opik.flush_tracker()
    assert fake_opik_backend.trace_trees == []


def test_results_are_opiks_score_results():
    from opik.evaluation.metrics.score_result import ScoreResult

    assert type(BLEU(track=False).score(output="a", reference="a")[0]) is ScoreResult


def test_project_name_needs_tracking_as_in_opik():
    with pytest.raises(ValueError, match="project_name can be set only when `track` is set to True"):
        BLEU(track=False, project_name="p")


def test_isinstance_holds_once_opik_is_loaded_even_for_untracked_metrics():
    code = ("from opik_metrics.metrics.rouge import ROUGE; m = ROUGE(track=False); import sys; "
            "assert 'opik' not in sys.modules; "
            "import opik; from opik.evaluation.metrics import BaseMetric; "
            "from opik_metrics.metric_kit.base import PackMetric; from opik_metrics.metric_kit.tracking import register_if_opik_loaded; register_if_opik_loaded(PackMetric); "
            "print(isinstance(m, BaseMetric))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "True"
