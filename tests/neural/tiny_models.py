"""Tiny random BERT and RoBERTa checkpoints built from configs and saved with save_pretrained,
so tests load them through the real from_pretrained path (no hub, under a second each).
"""
from __future__ import annotations

import json
import string
from pathlib import Path

import torch

from tests.corpus import realistic_pairs

MAX_LEN = 64  # tokenizer limit: long texts get truncated, exercising that path


def _corpus() -> list[str]:
    preds, refs = realistic_pairs(200, seed=7)
    return preds + refs


def build_bert(folder: Path, seed: int = 0, layers: int = 3) -> Path:
    """A 3-layer BERT (hidden 32) with a WordPiece vocab of the benchmark corpus' words."""
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    words = sorted({w.strip(string.punctuation).lower() for t in _corpus() for w in t.split()} - {""})
    chars = sorted(set(string.ascii_lowercase + string.digits + string.punctuation))
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + chars + ["##" + c for c in chars] + words
    (folder / "vocab.txt").write_text("\n".join(dict.fromkeys(vocab)) + "\n", encoding="utf-8")
    tok = BertTokenizer(vocab=str(folder / "vocab.txt"), model_max_length=MAX_LEN)
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=MAX_LEN, pad_token_id=tok.pad_token_id)
    BertModel(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_roberta(folder: Path, seed: int = 0, layers: int = 3, add_prefix_space: bool = True) -> Path:
    """A 3-layer RoBERTa (hidden 32) with a byte-level BPE trained on the benchmark corpus.

    ``add_prefix_space=True`` is saved in the tokenizer so that bert_score under transformers 5
    (which drops the call-time flag) tokenises as bert_score intends, like our engine.
    """
    from tokenizers import ByteLevelBPETokenizer
    from transformers import RobertaConfig, RobertaModel, RobertaTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(_corpus(), vocab_size=700, min_frequency=2, show_progress=False,
                            special_tokens=["<s>", "<pad>", "</s>", "<unk>", "<mask>"])
    model = json.loads(bpe._tokenizer.to_str())["model"]
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    tok = RobertaTokenizer(vocab=model["vocab"], merges=merges, model_max_length=MAX_LEN,
                           add_prefix_space=add_prefix_space)
    torch.manual_seed(seed)
    config = RobertaConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                           intermediate_size=64, max_position_embeddings=MAX_LEN + 2, type_vocab_size=1,
                           pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id,
                           eos_token_id=tok.sep_token_id)
    RobertaModel(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def write_baseline(path: Path, layers: int, values: tuple[float, float, float] = (0.3, 0.25, 0.28)) -> Path:
    """A baseline file in bert_score's format with distinct numbers per layer."""
    rows = ["LAYER,P,R,F"] + [f"{k},{values[0] + 0.01 * k},{values[1] + 0.01 * k},{values[2] + 0.01 * k}"
                              for k in range(layers + 1)]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path
