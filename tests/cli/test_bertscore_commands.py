"""`opik-metrics score --metric bertscore` and `opik-metrics explain` on the packaged MiniLM."""
import json

import pytest

from opik_metrics.cli.main import main
from opik_metrics.metrics.bertscore import BERTScore

PREDS = ["a man is riding a horse on the beach", "two dogs play in the snow"]
REFS = ["a person rides a horse along the shore", "dogs playing in snow"]


def test_score_bertscore_equals_the_metric(tmp_path, capsys):
    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    p.write_text("\n".join(PREDS) + "\n")
    r.write_text("\n".join(REFS) + "\n")
    assert main(["score", "-p", str(p), "-r", str(r), "-m", "bertscore", "--bertscore-model", "packaged:minilm",
                 "--format", "json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    metric = BERTScore(model="packaged:minilm", track=False)
    for item, pred, ref in zip(out["items"], PREDS, REFS):
        want = {s.name: s.value for s in metric.score(pred, ref)}
        assert item["BERTF1"] == pytest.approx(want["BERTF1"], abs=1e-6)
        assert item["BERTPrecision"] == pytest.approx(want["BERTPrecision"], abs=1e-6)
    assert out["signatures"]["bertscore"].startswith("bertscore:sentence-transformers/all-MiniLM-L6-v2|L6")


def test_explain_writes_a_heatmap_png(tmp_path, capsys):
    png = tmp_path / "pair.png"
    assert main(["explain", "-c", PREDS[0], "-r", REFS[0], "--png", str(png),
                 "--bertscore-model", "packaged:minilm"]) == 0
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5_000
    assert "BERTF1" in capsys.readouterr().out


def test_bertscore_model_that_cannot_load_offline_is_a_clear_error(tmp_path, capsys):
    p = tmp_path / "p.txt"
    p.write_text("x\n")
    assert main(["score", "-p", str(p), "-r", str(p), "-m", "bertscore", "--bertscore-model",
                 "no-such-org/no-such-model", "--num-layers", "3"]) == 2
    err = capsys.readouterr().err
    assert "no-such-org/no-such-model" in err and "packaged:minilm" in err


@pytest.mark.parametrize("flag", [["--no-progress"], []])
def test_no_progress_also_hides_the_model_loading_bar(tmp_path, flag):
    """``--no-progress`` means no bar at all: transformers' "Loading weights" one included."""
    import os
    import subprocess
    import sys

    p, r = tmp_path / "p.txt", tmp_path / "r.txt"
    p.write_text("\n".join(PREDS) + "\n")
    r.write_text("\n".join(REFS) + "\n")
    env = {k: v for k, v in os.environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    done = subprocess.run([sys.executable, "-m", "opik_metrics", "score", "-p", str(p), "-r", str(r), "-m", "bertscore",
                           "--bertscore-model", "packaged:minilm", *flag], capture_output=True, text=True, env=env,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert ("Loading weights" in done.stderr) is not bool(flag)
