"""CLIPScore as an Opik metric: ``clip_score`` (CLIP-S) per item and ``ref_clip_score``
(RefCLIP-S) when references are given, as Hessel et al.'s released code computes them, with
concurrent ``score`` calls gathered into batched passes.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Sequence

from opik_metrics.core import (CorpusFacts, MetricInputError, ScoreFacts, Statistics, corpus_facts, mean_formula,
                               require_batch, require_references, require_text)
from opik_metrics.metric_kit.base import ScoreResult, StatisticsMetric
from opik_metrics.metric_kit.card import MetricCard, Option
from opik_metrics.metric_kit.shared_options import DEVICE, DTYPE
from opik_metrics.metric_kit.collector import collector_paused
from opik_metrics.metric_kit.microbatch import MicroBatcher
from opik_metrics.metric_kit.opik_results import scoring_inputs

if TYPE_CHECKING:
    from opik_metrics.neural.clip import ClipScore

_MISSING_IMAGE = ("field 'image': missing. CLIPScore scores an output against its image: map the dataset "
                  "field that holds the image (a path, URL, bytes or PIL image) to 'image', e.g. "
                  "opik.evaluate(..., scoring_key_mapping={\"image\": \"image_url\"})")


class _ImagesFor(NamedTuple):
    """The images (and references) of items whose corpus statistics must still be computed;
    what ``_experiment_inputs`` hands to ``statistics`` in place of references."""

    images: list[Any]
    references: list[Any] | None


class CLIPScore(StatisticsMetric):
    """CLIPScore (Hessel et al. 2021): how well a caption fits an image under CLIP, as the
    authors' released code computes it: CLIP-S = ``weight * max(cos(image, "A photo depicts " +
    caption), 0)``; with references, RefCLIP-S = harmonic mean of CLIP-S and the best
    caption-reference cosine (floored at 0).

    Emits ``clip_score`` (0 to ``weight``) and, when the item has a reference, ``ref_clip_score``
    (0 to ``2 * weight / (weight + 1)``, 10/7 for the default weight); a ``name`` other than
    ``clipscore`` prefixes them (``CLIPScore(name="b16")`` gives ``b16_clip_score``). The corpus
    score ``corpus_clip_score`` is the mean CLIP-S over items, as the authors report it.
    Every result's metadata holds the signature, the raw cosine(s), ``best_reference`` and
    ``n_references``; a truncated caption or reference, or a value clipped to 0, says so in
    ``reason``.

    Args:
        model: A CLIP checkpoint: hub id, local directory (``save_pretrained``) or packaged alias.
        prompt: Text put before every caption and reference ("A photo depicts ", the authors').
        weight: CLIP-S's rescaling ``w`` (2.5, the authors').
        batch_size: Images or texts per forward pass; also the most ``score`` calls gathered.
        device: "cpu", "cuda", "cuda:1"...; None: CUDA when present.
        dtype: "float32" (default), or "float16"/"bfloat16" on a GPU.
        name: Metric name; results are prefixed with it unless it is "clipscore".
        track: Whether Opik tracks ``score`` calls as spans.
        project_name: Opik project for the tracked spans.
        max_wait_ms: How long the first of several concurrent ``score`` calls waits for others
            to join its batch.

    Examples:
        >>> import opik
        >>> from opik_metrics import CLIPScore
        >>> metric = CLIPScore()   # openai/clip-vit-base-patch32 from the hub  # doctest: +SKIP
        >>> [r.name for r in metric.score(output="a dog on a beach", image="dog.jpg",  # doctest: +SKIP
        ...                               reference="a dog runs along the sea")]
        ['clip_score', 'ref_clip_score']
        >>> opik.evaluate(dataset=dataset, task=caption_task,  # doctest: +SKIP
        ...               scoring_metrics=[CLIPScore()],
        ...               scoring_key_mapping={"image": "image_url"})

        The arithmetic on the cosines (no model: no CLIP weights ship on PyPI), for a caption at
        cosine 0.3 to its image and a best reference at cosine 0.6 to the caption:

        >>> from opik_metrics.neural.clip.formulas import clip_s, ref_clip_s
        >>> clip_s(0.3), round(ref_clip_s(clip_s(0.3), 0.6), 4)   # 2.5 * 0.3; 2 * 0.75 * 0.6 / 1.35
        (0.75, 0.6667)
    """

    card = MetricCard(
        "clipscore", "CLIP-S per item (RefCLIP-S with references), Hessel et al.'s numbers",
        needs_reference=False, needs_image=True, loads_model=True, extra="images", group="clipscore options", options=(
            Option("--clip-model", "model", help="CLIP model: hub id or local path (default "
                   "%(default)s, the paper's ViT-B/32)"),
            Option("--clip-prompt", "prompt", help="text put before each caption (default %(default)r, "
                   "the paper's)"),
            DEVICE, DTYPE,
        ))

    #: ``score_batch`` keyword arguments the experiment runner fills from the scoring inputs.
    batch_fields = {"images": "image"}
    default_name = "clipscore"

    def __init__(
        self,
        model: str = "openai/clip-vit-base-patch32",
        prompt: str = "A photo depicts ",
        weight: float = 2.5,
        batch_size: int = 64,
        device: str | None = None,
        dtype: str | None = None,
        name: str = "clipscore",
        track: bool = True,
        project_name: str | None = None,
        max_wait_ms: float = 5.0,
    ) -> None:
        # torch: only when a metric is built
        from opik_metrics.neural.clip import ClipScoreEngine
        self.engine = ClipScoreEngine(model=model, prompt=prompt, weight=weight, batch_size=batch_size,
                                      device=device, dtype=dtype)
        self.signature = self.engine.signature
        self._metadata = {"signature": self.signature, **self.engine.settings()}
        self._batcher: MicroBatcher[tuple[str, Any, list[str] | None], list[ScoreResult]] = MicroBatcher(
            self._score_requests, max_batch=batch_size, max_wait_s=max_wait_ms / 1000.0)
        super().__init__(name=name, track=track, project_name=project_name)
        self._clip_name = self._scored_name("clip_score")
        self._ref_name = self._scored_name("ref_clip_score")

    # -- facts -------------------------------------------------------------------------------
    def _score_facts(self) -> list[ScoreFacts]:
        from opik_metrics.neural.clip import ref_clip_s_bound
        w = self.engine.weight
        return [ScoreFacts(self._scored_name("clip_score"), bounds=(0.0, w)),
                ScoreFacts(self._scored_name("ref_clip_score"), bounds=(0.0, ref_clip_s_bound(w)))]

    def _corpus_facts(self) -> CorpusFacts:
        clip = self._scored_name("clip_score")
        return corpus_facts(f"corpus_{clip}", clip, [clip, "items"], mean_formula, {"field": 0},
                            bounds=(0.0, self.engine.weight), is_mean=True)

    # -- scoring -----------------------------------------------------------------------------
    def score(self, output: str, image: Any = None, reference: str | Sequence[str] | None = None,
              **ignored_kwargs: Any) -> list[ScoreResult]:
        """Score one output against its image (and reference(s), if given); concurrent calls
        share forward passes."""
        from opik_metrics.images import check_image_input
        out = require_text(output, "output")
        if image is None:
            raise MetricInputError(_MISSING_IMAGE)
        check_image_input(image, "image")
        refs = None if reference is None else require_references(reference, "reference")
        return self._batcher.submit((out, image, refs))

    def score_batch(self, outputs: Sequence[str], references: Sequence[str | Sequence[str]] | None = None, *,
                    images: Sequence[Any] | None = None) -> list[list[ScoreResult]]:
        """Score many items at once; ``images[i]`` is the image of ``outputs[i]`` (a path, URL,
        bytes or PIL image) and ``references[i]`` a string or a list of strings."""
        outs, refs = require_batch(outputs, references)
        if images is None or isinstance(images, (str, bytes)) or not isinstance(images, Sequence):
            raise MetricInputError("images: expected a list with one image per output")
        if len(images) != len(outs):
            raise MetricInputError(f"got {len(outs)} outputs but {len(images)} images; they must pair up one to one")
        if not outs:
            return []
        with collector_paused():
            return self._results(self.engine.score(outs, list(images), refs), refs)

    def _score_requests(self, requests: list[tuple[str, Any, list[str] | None]]) -> list[list[ScoreResult]]:
        refs = [r[2] for r in requests]
        scored = self.engine.score([r[0] for r in requests], [r[1] for r in requests], refs,
                                   items=[None] * len(requests), progress=False)  # small batches: no bars
        return self._results(scored, refs)

    def _results(self, scored: list[ClipScore], refs: Sequence[list[str] | None] | None) -> list[list[ScoreResult]]:
        out = []
        for k, s in enumerate(scored):
            metadata = {**self._metadata, "cosine": s.cosine, "ref_cosine": s.ref_cosine,
                        "best_reference": s.best_reference, "n_references": s.n_references}
            results = [ScoreResult(name=self._clip_name, value=s.clip_score, reason=s.reason, metadata=metadata)]
            if s.ref_clip_score is not None:
                results.append(ScoreResult(name=self._ref_name, value=s.ref_clip_score, reason=s.ref_reason,
                                           metadata=metadata))
            out.append(results)
        return out

    # -- statistics and the corpus score -------------------------------------------------------
    def statistics(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                   images: Sequence[Any] | None = None) -> list[Statistics]:
        """One summable statistics object per item (CLIP-S and a count of 1)."""
        if isinstance(references, _ImagesFor) and images is None:
            images, references = references.images, references.references
        if images is None:
            raise MetricInputError(f"{self.name}: statistics need the items' images: pass images=[...]")
        return [self.item_statistics(results) for results in self.score_batch(outputs, references, images=images)]

    def corpus_score(self, outputs: Sequence[str], references: Sequence[Any] | None = None, *,
                     images: Sequence[Any] | None = None) -> ScoreResult:
        """Mean CLIP-S over the items: exactly ``from_statistics(sum(statistics(...)))``."""
        stats = self.statistics(outputs, references, images=images)
        if not stats:
            raise MetricInputError(f"the corpus score of {self.name} needs at least one item")
        return self.from_statistics(sum(stats[1:], stats[0]))

    def _experiment_inputs(self, test_results: Sequence[Any], positions: Sequence[int]) -> tuple[list[str], Any]:
        """Outputs and images of the items Opik logged no CLIP-S for (references are not needed:
        the corpus score is the mean CLIP-S)."""
        outputs, images = [], []
        for k, tr in zip(positions, test_results):
            inputs = scoring_inputs(tr)
            outputs.append(require_text(inputs.get("output"), "output", k))
            if inputs.get("image") is None:
                raise MetricInputError(f"item {k}, {_MISSING_IMAGE}")
            images.append(inputs["image"])
        return outputs, _ImagesFor(images, None)
