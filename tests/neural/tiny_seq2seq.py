"""Tiny random encoder-decoder LMs saved with save_pretrained, so tests load them through the real
from_pretrained path: BART with a byte-level BPE tokenizer trained here (``BartTokenizer`` over
vocab.json/merges.txt, as bart-large's), and T5 with a Unigram (sentencepiece-style) tokenizer
whose vocabulary holds "Yes" and "No" as UniEval's does."""
from __future__ import annotations

import functools
import json
from pathlib import Path

import torch

from tests.neural.lm_fixtures import corpus

BART_SPECIALS = ["<s>", "<pad>", "</s>", "<unk>", "<mask>"]


@functools.lru_cache(maxsize=None)
def _bpe(vocab_size: int) -> tuple[dict, list]:
    from tokenizers import ByteLevelBPETokenizer

    bpe = ByteLevelBPETokenizer()
    bpe.train_from_iterator(corpus(200, seed=5), vocab_size=vocab_size, special_tokens=BART_SPECIALS,
                            show_progress=False)
    model = json.loads(bpe._tokenizer.to_str())["model"]   # noqa: SLF001 - test set-up only, as tiny_models.py
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in model["merges"]]
    return model["vocab"], merges


def build_bart_tokenizer(vocab_size: int = 600):
    """bart-large's tokenizer class over a byte-level BPE trained here (no prefix space, as bart-large's)."""
    from transformers import BartTokenizer

    vocab, merges = _bpe(vocab_size)
    return BartTokenizer(vocab=dict(vocab), merges=list(merges))


def build_bart(folder: Path, seed: int = 0, positions: int = 128, layers: int = 2, d_model: int = 32) -> Path:
    """A random BART (2+2 layers, width 32) saved with its tokenizer; ``positions``: its position table."""
    from transformers import BartConfig, BartForConditionalGeneration

    tok = build_bart_tokenizer()
    torch.manual_seed(seed)
    config = BartConfig(vocab_size=len(tok), d_model=d_model, encoder_layers=layers, decoder_layers=layers,
                        encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=64,
                        decoder_ffn_dim=64, max_position_embeddings=positions, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        decoder_start_token_id=tok.eos_token_id, forced_bos_token_id=None, dropout=0.0)
    model = BartForConditionalGeneration(config).eval()
    with torch.no_grad():      # a non-zero final_logits_bias, so a direct computation that forgot it would differ
        model.final_logits_bias.normal_(0, 0.5)
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def build_t5_tokenizer():
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=400, special_tokens=["<pad>", "</s>", "<unk>"], unk_token="<unk>",
                                      show_progress=False)
    tok.train_from_iterator(corpus(200, seed=7) + ["Yes", "No"] * 50 + ["question: paragraph: document: "] * 20,
                            trainer)
    from tokenizers.processors import TemplateProcessing
    tok.post_processor = TemplateProcessing(single="$A </s>", special_tokens=[("</s>", tok.token_to_id("</s>"))])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>", unk_token="<unk>")


def build_t5(folder: Path, seed: int = 0) -> Path:
    """A random T5 (2+2 layers, width 32) with a Unigram tokenizer that adds ``</s>`` as T5's does."""
    from transformers import T5Config, T5ForConditionalGeneration

    tok = build_t5_tokenizer()
    torch.manual_seed(seed)
    config = T5Config(vocab_size=len(tok), d_model=32, d_kv=16, d_ff=64, num_layers=2, num_decoder_layers=2,
                      num_heads=2, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id,
                      decoder_start_token_id=tok.pad_token_id, dropout_rate=0.0)
    T5ForConditionalGeneration(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder
