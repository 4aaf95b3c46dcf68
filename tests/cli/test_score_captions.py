"""`opik-metrics score -m cider -m coco`: pycocoevalcap's numbers for files of captions, document
frequencies fitted on every reference of the files even though scoring runs in chunks."""
import json

import pytest

from opik_metrics.cli.main import main
from tests.captions import caption_sets
from tests.text.cider_oracle import oracle_coco, simple_tokens


def test_cider_and_coco_from_files_equal_pycocoevalcap(tmp_path, capsys, monkeypatch):
    cands, refs = caption_sets(300, 2, seed=23)
    cands, refs = [simple_tokens(c) for c in cands], [[simple_tokens(r) for r in rs] for rs in refs]
    (tmp_path / "p.txt").write_text("\n".join(cands) + "\n")
    for k in range(2):
        (tmp_path / f"r{k}.txt").write_text("\n".join(rs[k] for rs in refs) + "\n")
    import opik_metrics.experiments.batch as batch
    chunked = batch.score_texts.__kwdefaults__["chunk_size"]
    monkeypatch.setitem(batch.score_texts.__kwdefaults__, "chunk_size", 64)   # several chunks, one context
    assert chunked == 256
    assert main(["score", "-p", str(tmp_path / "p.txt"), "-r", str(tmp_path / "r0.txt"), "-r", str(tmp_path / "r1.txt"),
                 "-m", "cider", "-m", "coco", "--caption-tokenize", "none", "--format", "json", "--no-progress"]) == 0
    out = json.loads(capsys.readouterr().out)
    want = oracle_coco(cands, refs)
    assert [item["cider"] for item in out["items"]] == pytest.approx(want["CIDEr"][1], abs=1e-9)
    assert out["aggregate"]["corpus_cider"] == pytest.approx(want["CIDEr"][0], abs=1e-9)
    for key, (corpus, per_item) in want.items():
        assert out["aggregate"][f"corpus_{key}"] == pytest.approx(corpus, abs=1e-9), key
        assert [item[key] for item in out["items"]] == pytest.approx(per_item, abs=1e-9), key
