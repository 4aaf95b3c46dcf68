"""CLIPScore engine (Hessel et al. 2021, as their released code computes it): CLIP-S and RefCLIP-S
of captions against images, with the prompt "A photo depicts ", on any CLIP checkpoint."""
from opik_metrics.neural.clip.embed import ClipEmbedder, TextTokens
from opik_metrics.neural.clip.engine import (DEFAULT_MODEL, DEFAULT_PROMPT, DEFAULT_WEIGHT, ClipScore,
                                             ClipScoreEngine)
from opik_metrics.neural.clip.formulas import (best_reference, clip_s, harmonic_mean, ref_clip_s,
                                               ref_clip_s_bound)
from opik_metrics.neural.clip.keys import image_key
from opik_metrics.neural.clip.model import LoadedClip, clear_cache, load_clip

__all__ = ["DEFAULT_MODEL", "DEFAULT_PROMPT", "DEFAULT_WEIGHT", "ClipEmbedder", "ClipScore", "ClipScoreEngine",
           "LoadedClip", "TextTokens", "best_reference", "clear_cache", "clip_s", "harmonic_mean", "image_key",
           "load_clip", "ref_clip_s", "ref_clip_s_bound"]
