"""bench/gpu.py run on tiny models (on the CPU here, as in CI), so the GPU benchmark cannot rot:
every row is there once, in the format ``python -m bench`` reads, its numbers finite and its
agreement checks true. Speeds are not checked (no timed tests: they belong to the bench output).
"""
from __future__ import annotations

import json
import math
import os
from typing import Iterator
from unittest import mock

import pytest
import torch

ROWS = [  # the start of each row's name, in order
    "bertscore vs bert_score on the same model object",
    "bertscore vs the bare forward pass",
    "bertscore bfloat16 vs bert_score float32",
    "perplexity vs the bare forward calls",
    "perplexity vs evaluate's loop",
    "clipscore vs bare CLIP forward passes",
    "caption command vs bare generate loop",
    "caption command vs bare generate loop",
]


@pytest.fixture(scope="module")
def rows() -> Iterator[list[dict]]:
    """The rows of one tiny run; the environment that importing the benchmark sets for itself
    (``bench/offline.py``: ``OPIK_TRACK_DISABLE`` and the rest) is undone for the tests after these."""
    with mock.patch.dict(os.environ):
        from bench import gpu

        yield gpu.main(tiny=True)


def test_every_row_is_there_once_in_order(rows):
    assert [r["benchmark"][:len(start)] for r, start in zip(rows, ROWS)] == ROWS
    assert len(rows) == len(ROWS)
    assert rows[-2]["benchmark"].endswith("start to exit") and rows[-1]["benchmark"].endswith("steady state")


def test_rows_have_the_bench_format_and_survive_json(rows):
    for row in rows:
        assert {"benchmark", "ours_per_s", "reference_per_s", "ratio", "target", "identical", "device",
                "peak_memory_mb"} <= set(row), row["benchmark"]
    assert json.loads(json.dumps(rows)) == rows      # python -m bench reads them back from a child's JSON


def test_numbers_are_finite_and_name_the_card(rows):
    card = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
    for row in rows:
        for key in ("ours_per_s", "reference_per_s", "ratio", "target"):
            assert math.isfinite(row[key]) and row[key] > 0, (row["benchmark"], key, row[key])
        assert row["ratio"] == pytest.approx(row["ours_per_s"] / row["reference_per_s"])
        assert row["device"] == card
        assert len(row["peak_memory_mb"]) == 2
        for mb in row["peak_memory_mb"]:
            if torch.cuda.is_available():
                assert math.isfinite(mb) and mb > 0, row["benchmark"]
            else:
                assert mb is None, row["benchmark"]   # printed "-": no GPU memory to report


def test_agreement_checks_hold(rows):
    from bench import gpu

    assert [r["benchmark"] for r in rows if not r["identical"]] == []
    by_start = {start: r for start, r in zip(ROWS, rows)}
    assert by_start[ROWS[0]]["max_abs_diff"] <= gpu.TOL
    half = by_start["bertscore bfloat16 vs bert_score float32"]["max_abs_f1_diff"]
    # bfloat16 really ran (a float32 run would agree to ~1e-7) and stays close to float32
    assert 1e-5 < half <= gpu.BF16_F1_TOL
    assert f"{half:.1e}" in by_start["bertscore bfloat16 vs bert_score float32"]["benchmark"]
    assert by_start["perplexity vs evaluate's loop"]["max_rel_diff"] < 1e-3


def test_python_m_bench_runs_gpu_only_when_named(monkeypatch, capsys):
    import bench.__main__ as runner

    asked: list[str] = []
    row = {"benchmark": "x", "ours_per_s": 2.0, "reference_per_s": 1.0, "ratio": 2.0, "target": 1.0,
           "identical": True, "device": "NVIDIA H100 80GB HBM3", "peak_memory_mb": [1.0, 2.0]}
    monkeypatch.setattr(runner, "run_one", lambda name, n: asked.append(name) or [row])
    assert runner.main(["--only", "gpu"]) == 0
    assert asked == ["gpu"]
    assert "x [NVIDIA H100 80GB HBM3]" in capsys.readouterr().out
    assert "gpu" not in runner.BENCHMARKS and "bench_gpu" not in runner.BENCHMARKS
