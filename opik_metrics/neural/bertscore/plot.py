"""A PNG heatmap of an :class:`Explanation`'s similarity matrix (like bert_score's plot_example):
candidate tokens down, reference tokens across, each cell annotated, best matches outlined.
"""
from __future__ import annotations

import os

from opik_metrics.neural.bertscore.explain import Explanation


def save_heatmap(explanation: Explanation, path: str | os.PathLike, rescaled: bool | None = None,
                 keep_special: bool = False) -> str:
    """Write the heatmap to ``path`` (PNG) and return the path; special tokens are left out unless
    ``keep_special``; ``rescaled`` (default: when the engine rescales) applies the F baseline."""
    import numpy as np
    from matplotlib.figure import Figure  # no pyplot: no global backend, safe in threads
    from matplotlib.patches import Rectangle

    sim = np.asarray(explanation.similarity, dtype=float)
    rows = [i for i, s in enumerate(explanation.candidate_special) if keep_special or not s]
    cols = [j for j, s in enumerate(explanation.reference_special) if keep_special or not s]
    if not rows or not cols:
        raise ValueError("save_heatmap: nothing to draw (no tokens besides special tokens)")
    sim = sim[np.ix_(rows, cols)]
    b = explanation.baseline_f1
    if rescaled is None:
        rescaled = b is not None
    if rescaled:
        if b is None:
            raise ValueError("save_heatmap(rescaled=True) needs an explanation from a rescaling engine")
        sim = (sim - b) / (1 - b)
    c_tok = [explanation.candidate_tokens[i] for i in rows]
    r_tok = [explanation.reference_tokens[j] for j in cols]
    best = {(rows.index(i), cols.index(m.index)) for i, m in enumerate(explanation.candidate_matches)
            if i in rows and m.index in cols}

    fig = Figure(figsize=(max(4.0, 0.6 * len(r_tok) + 2), max(3.0, 0.45 * len(c_tok) + 1.5)))
    ax = fig.add_subplot()
    image = ax.imshow(sim, cmap="Blues", vmin=min(0.0, float(sim.min())), vmax=1.0)
    ax.set_xticks(range(len(r_tok)), labels=r_tok, rotation=45, ha="right", rotation_mode="anchor")
    ax.set_yticks(range(len(c_tok)), labels=c_tok)
    ax.set_xlabel("Reference (tokenized)")
    ax.set_ylabel("Candidate (tokenized)")
    title = "BERTScore similarity matrix" + (" (rescaled)" if rescaled else "")
    ax.set_title(f"{title}\nP={explanation.precision:.3f} R={explanation.recall:.3f} "
                 f"F1={explanation.f1:.3f} (raw)", fontsize=10)
    if len(c_tok) * len(r_tok) <= 900:
        for i in range(len(c_tok)):
            for j in range(len(r_tok)):
                ax.text(j, i, f"{sim[i, j]:.2f}", ha="center", va="center", fontsize=7,
                        color="w" if sim[i, j] >= 0.5 else "k")
    for i, j in best:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor="orange", lw=1.5))
    fig.colorbar(image, ax=ax, fraction=0.03, pad=0.02)
    fig.tight_layout()
    fig.savefig(path, dpi=100, format="png")
    return os.fspath(path)
