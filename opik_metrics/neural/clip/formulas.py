"""CLIPScore's arithmetic as its authors define it (Hessel et al. 2021): pure functions of cosines.

CLIP-S = w * max(cos(image, caption), 0) and RefCLIP-S = harmonic mean of CLIP-S and
r = max(max over references of cos(caption, reference), 0); the harmonic mean of two zeros is 0.
"""
from __future__ import annotations

import math
from typing import Sequence


def clip_s(cosine: float, weight: float = 2.5) -> float:
    """CLIP-S of one image-caption cosine: ``weight * max(cosine, 0)``."""
    return weight * max(cosine, 0.0)


def best_reference(cosines: Sequence[float]) -> tuple[int, float]:
    """Index and value of the highest caption-reference cosine (the first one on ties)."""
    if not cosines:
        raise ValueError("best_reference needs at least one cosine")
    k = max(range(len(cosines)), key=lambda i: (cosines[i], -i))
    return k, cosines[k]


def harmonic_mean(a: float, b: float) -> float:
    """``2ab / (a + b)`` of two non-negative numbers; 0 when both are 0 (never NaN)."""
    if a < 0 or b < 0:
        raise ValueError(f"harmonic_mean takes non-negative numbers, got {a} and {b}")
    total = a + b
    return 0.0 if total == 0 else 2.0 * a * b / total


def ref_clip_s(clip_score: float, reference_cosine: float) -> float:
    """RefCLIP-S: the harmonic mean of CLIP-S and ``max(reference_cosine, 0)``."""
    return harmonic_mean(clip_score, max(reference_cosine, 0.0))


def ref_clip_s_bound(weight: float = 2.5) -> float:
    """The largest RefCLIP-S can be: ``2w / (w + 1)`` (CLIP-S = w and r = 1; 10/7 for w = 2.5),
    since the harmonic mean grows with both arguments and a cosine is at most 1."""
    return harmonic_mean(weight, 1.0)


def check_weight(weight: object) -> float:
    """``weight`` as a float, or a ValueError: a positive, finite number."""
    if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not math.isfinite(weight) or weight <= 0:
        raise ValueError(f"weight must be a positive number (CLIPScore's w, 2.5 by default), got {weight!r}")
    return float(weight)
