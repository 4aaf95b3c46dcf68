"""Speed of CIDEr-D through the Opik metric (``CIDEr.score_batch``: per-item values, document
frequencies fitted on the set) against pycocoevalcap's ``Cider().compute_score`` on 5,000 images
x 5 references: first on captions tokenised beforehand (tokenisation excluded from both), then
from raw captions (pycocoevalcap's PTBTokenizer runs its Java jar; ours needs no JVM). A last row
times ``COCOCaption.experiment_score`` given the results ``score_batch`` logged (no df_references, so
CIDEr-D is refitted on every item's references) against ``corpus_score`` scoring the set again: the
logged BLEU, METEOR and ROUGE_L statistics are reused (target: at most a tenth of the rescoring time).
"""
from __future__ import annotations

import contextlib
import io
import shutil
import time
from typing import Callable

from pycocoevalcap.cider.cider import Cider
from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

from opik_metrics import CIDEr
from opik_metrics.text.tokenizers.ptb import ptb_tokenize_all
from tests.captions import caption_sets

TARGET = 5.0
TOLERANCE = 1e-9
REUSE_TARGET = 0.1       # experiment_score given logged results / scoring the set again


def _best(run: Callable[[], object], repeats: int) -> tuple[float, object]:
    best, out = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        best = min(best, time.perf_counter() - start)
    return best, out


def _theirs_tokenised(cands: list[str], refs: list[list[str]]) -> list[float]:
    gts = {i: r for i, r in enumerate(refs)}
    res = {i: [c] for i, c in enumerate(cands)}
    return [float(x) for x in Cider().compute_score(gts, res)[1]]


def _theirs_raw(cands: list[str], refs: list[list[str]]) -> list[float]:
    tokenizer = PTBTokenizer()
    with contextlib.redirect_stdout(io.StringIO()):
        gts = tokenizer.tokenize({i: [{"caption": r} for r in rs] for i, rs in enumerate(refs)})
        res = tokenizer.tokenize({i: [{"caption": c}] for i, c in enumerate(cands)})
    return [float(x) for x in Cider().compute_score(gts, res)[1]]


def _row(name: str, n: int, ours_s: float, ref_s: float, ours: list, theirs: list) -> dict:
    identical = len(ours) == len(theirs) and max(abs(a - b) for a, b in zip(ours, theirs)) <= TOLERANCE
    row = {"benchmark": name, "ours_per_s": n / ours_s, "reference_per_s": n / ref_s, "ratio": ref_s / ours_s,
           "target": TARGET, "identical": identical}
    print(f"{name:28s} ours {row['ours_per_s']:8.0f} images/s  pycocoevalcap {row['reference_per_s']:8.0f} "
          f"images/s  ratio {row['ratio']:.2f}x (target {TARGET}x)  equal to {TOLERANCE:g}: {identical}")
    return row


def main(n: int = 5000, repeats: int = 3) -> list[dict]:
    """CIDEr-D on ``n`` images with 5 references each; one row per setting."""
    cands, refs = caption_sets(n, 5, seed=0)
    tok_cands = ptb_tokenize_all(cands)
    tok_refs = [ptb_tokenize_all(rs) for rs in refs]
    tokenised = CIDEr(tokenize="none", track=False)
    ours_s, ours = _best(lambda: [r[0].value for r in tokenised.score_batch(tok_cands, tok_refs)], repeats)
    ref_s, theirs = _best(lambda: _theirs_tokenised(tok_cands, tok_refs), repeats)
    rows = [_row("CIDEr-D, tokenised", n, ours_s, ref_s, ours, theirs)]
    if shutil.which("java"):
        from opik_metrics.text.tokenizers import ptb
        raw = CIDEr(track=False)

        def ours_raw() -> list[float]:
            ptb.ptb_tokenize.cache_clear()           # tokenise from scratch, as pycocoevalcap's jar does
            return [r[0].value for r in raw.score_batch(cands, refs)]
        ours_s, ours = _best(ours_raw, repeats)
        ref_s, theirs = _best(lambda: _theirs_raw(cands, refs), 1)
        rows.append(_row("CIDEr-D, from raw captions", n, ours_s, ref_s, ours, theirs))
    else:
        print("no java: the row with pycocoevalcap's tokenisation (its jar) is skipped")
    rows.append(_coco_reuse(cands, refs))
    return rows


def _coco_reuse(cands: list[str], refs: list[list[str]]) -> dict:
    """``COCOCaption.experiment_score`` on logged results against ``corpus_score`` from scratch."""
    from types import SimpleNamespace

    from opik_metrics import COCOCaption

    coco = COCOCaption(track=False)
    logged = coco.score_batch(cands, refs)
    results = [SimpleNamespace(test_case=SimpleNamespace(mapped_scoring_inputs={"output": c, "reference": r},
                                                         dataset_item_content=None, task_output=None),
                               score_results=s) for c, r, s in zip(cands, refs, logged)]
    ours_s, ours = _best(lambda: coco.experiment_score(results), 3)
    again_s, again = _best(lambda: coco.corpus_score(cands, refs), 1)
    identical = max(abs(a.value - b.value) for a, b in zip(ours, again)) <= 1e-12
    n = len(cands)
    print(f"COCOCaption.experiment_score, logged: {ours_s:.2f} s  scoring again {again_s:.2f} s  ratio "
          f"{ours_s / again_s:.3f} (target <= {REUSE_TARGET})  equal to 1e-12: {identical}")
    return {"benchmark": f"COCO experiment_score, logged {n:,} x 5 / rescoring", "ours_per_s": n / ours_s,
            "reference_per_s": n / again_s, "ratio": ours_s / again_s, "target": REUSE_TARGET,
            "identical": identical, "lower_is_better": True}


if __name__ == "__main__":
    main()
