"""The log-likelihood of a target given a source under an encoder-decoder LM: for each (source, target)
pair the summed log-probabilities of the target's tokens (special tokens included, as BARTScore's code
scores them) and their count, summable. Pairs are batched longest first under a token budget and
padded right (the encoder masks its pads, the causal decoder never sees later positions), so a pair's
value never depends on its batch-mates; the log-softmax is float32 whatever the weights' dtype.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import torch
import torch.nn.functional as F

from opik_metrics.core import MetricInputError
from opik_metrics.neural.lm.chunks import validate_max_memory_mb
from opik_metrics.neural.lm.scoring import rows_per_batch
from opik_metrics.neural.models.host_copies import to_device
from opik_metrics.neural.models.length_batches import length_batches, token_budget, validate_count
from opik_metrics.neural.models.seq2seq_lm import Seq2SeqLM
from tqdm.auto import tqdm

IGNORE = -100
CPU_BATCH_PAIRS = 16          # pairs per forward pass on CPU unless told (length-sorted, so little padding)
_LOGIT_BYTES = 12             # per target position per vocabulary entry: the logits, a float32 copy, its softmax


@dataclass(frozen=True)
class Encoded:
    """Token ids of texts, cut to the model's limit as the reference code cuts them (``truncation=True``)."""

    ids: list[list[int]]
    truncated: list[bool]


@dataclass(frozen=True)
class TargetLikelihood:
    """Summed log-probability (nats, <= 0) of a target's ``n_tokens`` tokens given its source."""

    logprob_sum: float
    n_tokens: int

    @property
    def mean(self) -> float:
        """Mean log-probability per target token: BARTScore's value of the pair."""
        return self.logprob_sum / self.n_tokens if self.n_tokens else 0.0


def encode(lm: Seq2SeqLM, texts: Sequence[str]) -> Encoded:
    """Each text's ids with its special tokens, at most ``lm.max_length`` of them. Texts are tokenised
    one token past the limit, so a cut is seen; only those are tokenised again at the limit, which
    gives exactly ``tokenizer(text, max_length=..., truncation=True)``."""
    if not texts:
        return Encoded([], [])
    limit = lm.max_length
    with lm.tokenizer_lock:
        ids = [list(x) for x in lm.tokenizer(list(texts), max_length=limit + 1, truncation=True,
                                             verbose=False)["input_ids"]]
        long = [k for k, x in enumerate(ids) if len(x) > limit]
        if long:
            cut = lm.tokenizer([texts[k] for k in long], max_length=limit, truncation=True,
                               verbose=False)["input_ids"]
            for k, x in zip(long, cut):
                ids[k] = list(x)
    truncated = set(long)
    return Encoded(ids, [k in truncated for k in range(len(ids))])


class ConditionalLikelihood:
    """Scores (source ids, target ids) pairs with one encoder-decoder LM; batching never changes a value.

    ``batch_size``: pairs per forward pass (16 on CPU; on a GPU the token budget alone);
    ``batch_tokens``: padded source + target tokens per pass (16,384 on a GPU); ``max_memory_mb``
    bounds a pass's logits (target tokens x vocabulary, float32) as in the causal scorers.
    """

    def __init__(self, lm: Seq2SeqLM, batch_size: int | None = None, batch_tokens: int | None = None,
                 max_memory_mb: float | None = None) -> None:
        self.lm = lm
        self.batch_size = rows_per_batch(batch_size, lm.device, CPU_BATCH_PAIRS)
        validate_count(batch_tokens, "batch_tokens")
        self.batch_tokens = token_budget(batch_tokens, lm.device)
        budget = validate_max_memory_mb(max_memory_mb) * 2 ** 20
        vocab = int(lm.model.config.vocab_size)
        self.logit_tokens = max(1, int(budget // (vocab * _LOGIT_BYTES)))

    def score(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]], desc: str = "likelihood",
              progress: bool | None = None) -> list[TargetLikelihood]:
        """One TargetLikelihood per pair, in order; a pair whose target has no token is an error."""
        for k, (source, target) in enumerate(pairs):
            if not target or not source:
                raise MetricInputError(f"pair {k}: the {'target' if not target else 'source'} has no token")
        if not pairs:
            return []
        limit = min(self.batch_tokens or self.logit_tokens, self.logit_tokens)
        groups = source_batches(pairs, self.batch_size, limit)
        device = self.lm.device
        totals = torch.zeros(len(pairs), dtype=torch.float64, device=device)
        show = len(groups) > 1 if progress is None else progress
        with torch.inference_mode(), tqdm(total=len(pairs), desc=desc, unit="pair", disable=not show,
                                          leave=False) as bar:
            for group in groups:
                index = to_device(torch.tensor(group, dtype=torch.long), device)
                totals.index_add_(0, index, self._batch([pairs[k] for k in group]))
                bar.update(len(group))
        sums = totals.tolist()
        return [TargetLikelihood(sums[k], len(pairs[k][1])) for k in range(len(pairs))]

    def _batch(self, pairs: Sequence[tuple[Sequence[int], Sequence[int]]]) -> torch.Tensor:
        """Summed target log-probabilities (float64) of a batch of pairs, on the model's device. Each
        distinct source is encoded once (several outputs of one document, one output against several
        references): its encoder states are shared by every pair that has it."""
        from transformers.modeling_outputs import BaseModelOutput

        model, device = self.lm.model, self.lm.device
        rows = len(pairs)
        distinct: dict[tuple[int, ...], int] = {}
        which = [distinct.setdefault(tuple(s), len(distinct)) for s, _ in pairs]
        src_width = max(len(s) for s in distinct)
        tgt_width = max(len(t) for _, t in pairs)
        source = torch.full((len(distinct), src_width), self.lm.pad_id, dtype=torch.long)
        mask = torch.zeros((len(distinct), src_width), dtype=torch.long)
        for b, s in enumerate(distinct):
            source[b, :len(s)] = torch.tensor(s, dtype=torch.long)
            mask[b, :len(s)] = 1
        labels = torch.full((rows, tgt_width), IGNORE, dtype=torch.long)
        for b, (_, t) in enumerate(pairs):
            labels[b, :len(t)] = torch.tensor(t, dtype=torch.long)
        labels = to_device(labels, device)
        decoder_ids = decoder_inputs(model, labels)
        mask = to_device(mask, device)
        states = model.get_encoder()(input_ids=to_device(source, device), attention_mask=mask).last_hidden_state
        if len(distinct) < rows:
            index = to_device(torch.tensor(which, dtype=torch.long), device)
            states, mask = states.index_select(0, index), mask.index_select(0, index)
        logits = model(encoder_outputs=BaseModelOutput(last_hidden_state=states), attention_mask=mask,
                       decoder_input_ids=decoder_ids, use_cache=False).logits
        nll = F.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), labels.reshape(-1),
                              ignore_index=IGNORE, reduction="none").view(rows, tgt_width)
        return -nll.double().sum(dim=1)


def source_batches(pairs: Sequence[tuple[Sequence[int], Sequence[int]]], batch_size: int | None,
                   max_tokens: int) -> list[list[int]]:
    """Pair indices grouped into forward passes, longest source first and the pairs of one source
    together (so it is encoded once), at most ``batch_size`` pairs and ``max_tokens`` padded source +
    target tokens a pass (a pair over the budget makes a pass of its own)."""
    group: dict[tuple[int, ...], int] = {}
    keys = [group.setdefault(tuple(s), len(group)) for s, _ in pairs]
    order = sorted(range(len(pairs)), key=lambda k: (-len(pairs[k][0]), keys[k], -len(pairs[k][1]), k))
    batches: list[list[int]] = []
    current: list[int] = []
    widths = (0, 0)
    for k in order:
        wide = (max(widths[0], len(pairs[k][0])), max(widths[1], len(pairs[k][1])))
        full = batch_size is not None and len(current) == batch_size
        if current and (full or (len(current) + 1) * (wide[0] + wide[1]) > max_tokens):
            batches.append(current)
            current, wide = [], (len(pairs[k][0]), len(pairs[k][1]))
        current.append(k)
        widths = wide
    if current:
        batches.append(current)
    return batches


def decoder_inputs(model: Any, labels: torch.Tensor) -> torch.Tensor:
    """The decoder's inputs for ``labels``: shifted right behind the model's start token, -100 as pad
    (what the model does itself when given ``labels``, without the loss it would also compute)."""
    return model.prepare_decoder_input_ids_from_labels(labels=labels)


def first_step_probabilities(lm: Seq2SeqLM, sources: Sequence[Sequence[int]], token_ids: Sequence[int],
                             batch_size: int | None = None, desc: str = "first step",
                             progress: bool | None = None) -> list[list[float]]:
    """For each source, the softmax (float32) at the first decoder step over the whole vocabulary, read at
    ``token_ids``: UniEval's p(Yes) and p(No)."""
    if not sources:
        return []
    for k, s in enumerate(sources):
        if not s:
            raise MetricInputError(f"input {k} has no token")
    model, device = lm.model, lm.device
    rows = rows_per_batch(batch_size, device, CPU_BATCH_PAIRS)
    groups = length_batches([len(s) for s in sources], rows, token_budget(None, device))
    start = model.config.decoder_start_token_id
    wanted = torch.tensor(list(token_ids), dtype=torch.long, device=device)
    out: list[list[float]] = [[] for _ in sources]
    show = len(groups) > 1 if progress is None else progress
    with torch.inference_mode(), tqdm(total=len(sources), desc=desc, unit="input", disable=not show,
                                      leave=False) as bar:
        for group in groups:
            width = max(len(sources[k]) for k in group)
            ids = torch.full((len(group), width), lm.pad_id, dtype=torch.long)
            mask = torch.zeros((len(group), width), dtype=torch.long)
            for b, k in enumerate(group):
                ids[b, :len(sources[k])] = torch.tensor(sources[k], dtype=torch.long)
                mask[b, :len(sources[k])] = 1
            decoder = torch.full((len(group), 1), start, dtype=torch.long, device=device)
            logits = model(input_ids=to_device(ids, device), attention_mask=to_device(mask, device),
                           decoder_input_ids=decoder, use_cache=False).logits[:, 0, :]
            probs = torch.softmax(logits.float(), dim=-1)[:, wanted].tolist()
            for b, k in enumerate(group):
                out[k] = probs[b]
            bar.update(len(group))
    return out
