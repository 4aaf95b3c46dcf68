"""A tiny random CLIP built from a config and saved with ``save_pretrained`` (model, byte-level BPE
tokenizer, 32 px image processor), so tests load it through the real ``from_pretrained`` path with
no hub, in about a second. Its numbers are random; the oracle tests compare against a direct
transformers computation on the same checkpoint.

Use the fixtures from a test module: ``from tests.neural.tiny_clip import tiny_clip  # noqa: F401``.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

# Words that get whole-word BPE merges (others stay byte by byte, like rare words in real CLIP).
MERGED_WORDS = ("a photo depicts the dog cat car red blue green sky field house on in of with sitting "
                "street tree white black picture").split()
WINDOW = 77  # CLIP's text window (special tokens included)


def _bytes_to_unicode() -> dict[int, str]:
    """GPT-2 / CLIP's reversible map from the 256 byte values to printable characters."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    chars = keep[:]
    n = 0
    for b in range(256):
        if b not in keep:
            keep.append(b)
            chars.append(256 + n)
            n += 1
    return dict(zip(keep, (chr(c) for c in chars)))


def vocabulary() -> tuple[dict[str, int], list[str]]:
    """CLIP's vocabulary layout in small: the byte characters, each also with ``</w>``, the tokens
    of a few word merges, then ``<|startoftext|>`` and ``<|endoftext|>`` (highest id, as in CLIP)."""
    byte_chars = list(_bytes_to_unicode().values())
    tokens = byte_chars + [c + "</w>" for c in byte_chars] + ["</w>"]
    merges: list[str] = []
    for word in MERGED_WORDS:
        symbols = list(word[:-1]) + [word[-1] + "</w>"]
        while len(symbols) > 1:
            merged = symbols[0] + symbols[1]
            merges.append(f"{symbols[0]} {symbols[1]}")
            tokens.append(merged)
            symbols = [merged] + symbols[2:]
    tokens = list(dict.fromkeys(tokens)) + ["<|startoftext|>", "<|endoftext|>"]
    return {t: k for k, t in enumerate(tokens)}, list(dict.fromkeys(merges))


def build_tiny_clip(folder: str | Path, seed: int = 0) -> Path:
    """A CLIP with 2-layer, 32-wide text and vision towers (32x32 images, 8 px patches, 16-d
    projections) and its processor, saved in ``folder``; about a second."""
    import torch
    from transformers import CLIPConfig, CLIPImageProcessorPil, CLIPModel, CLIPProcessor, CLIPTokenizer

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    vocab, merges = vocabulary()
    (folder / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (folder / "merges.txt").write_text("#version: 0.2\n" + "\n".join(merges) + "\n", encoding="utf-8")
    tokenizer = CLIPTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"),
                              model_max_length=WINDOW)
    images = CLIPImageProcessorPil(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32})
    processor = CLIPProcessor(image_processor=images, tokenizer=tokenizer)
    text = dict(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                num_attention_heads=2, max_position_embeddings=WINDOW, bos_token_id=tokenizer.bos_token_id,
                eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)
    vision = dict(hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  image_size=32, patch_size=8)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = CLIPModel(CLIPConfig(text_config=text, vision_config=vision, projection_dim=16))
    model.eval().save_pretrained(folder)
    processor.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def tiny_clip(tmp_path_factory) -> str:
    """Folder of a tiny random CLIP checkpoint (built once per session). Seed 2 gives the tests'
    image-caption pairs cosines of both signs (half of them negative), so both sides of
    ``max(cos, 0)`` are exercised."""
    return str(build_tiny_clip(tmp_path_factory.mktemp("tiny-clip"), seed=2))
