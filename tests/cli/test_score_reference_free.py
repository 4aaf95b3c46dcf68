"""`opik-metrics score` with reference-free metrics (perplexity, distillation KL) on tiny models."""
import json
import math

from opik_metrics.cli.main import main
from tests.neural.lm_fixtures import gpt2_dir, one_torch_thread  # noqa: F401


def test_perplexity_needs_no_references_and_adds_corpus_perplexity(tmp_path, gpt2_dir, capsys):
    p = tmp_path / "p.txt"
    p.write_text("the cat sat on the mat\na longer line of text to score here\n")
    assert main(["score", "-p", str(p), "-m", "perplexity", "--perplexity-model", str(gpt2_dir),
                 "--format", "json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    ppl = [item["perplexity"] for item in out["items"]]
    assert len(ppl) == 2 and all(math.isfinite(v) and v > 1 for v in ppl)
    # corpus perplexity is token-weighted: it lies between the two per-item values
    assert min(ppl) <= out["aggregate"]["corpus_perplexity"] <= max(ppl)
    assert "perplexity" in out["signatures"]


def test_distillation_kl_of_a_model_with_itself_is_zero(tmp_path, gpt2_dir, capsys):
    p = tmp_path / "p.txt"
    p.write_text("some words here\n")
    assert main(["score", "-p", str(p), "-m", "distillation_kl", "--teacher", str(gpt2_dir),
                 "--student", str(gpt2_dir), "--format", "json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert abs(out["items"][0]["kl_divergence"]) < 1e-9


def test_reference_metrics_without_references_and_unloadable_model_are_clear_errors(tmp_path, capsys):
    p = tmp_path / "p.txt"
    p.write_text("x\n")
    assert main(["score", "-p", str(p), "-m", "rouge"]) == 2
    assert "rouge need --references" in capsys.readouterr().err
    assert main(["score", "-p", str(p), "-m", "perplexity", "--perplexity-model", str(tmp_path / "nope")]) == 2
    assert "does not exist" in capsys.readouterr().err
