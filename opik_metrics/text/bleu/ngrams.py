"""Clipped n-gram matching for BLEU: the hot loop, built from C-level set/Counter operations.

Per order, a reference table is a ``set`` when every n-gram occurs once (all counts 1, the usual
case from bigrams up) and a count ``dict`` otherwise. Clipped matches are counted with C-level
``map``/``sum``/intersections; Python-level work is limited to n-grams the hypothesis repeats.
Unigrams are plain strings, longer n-grams tuples made by ``zip`` over shifted token lists.
"""
from __future__ import annotations

from collections import Counter
from typing import Sequence, Union

NgramTable = Union[set, dict]


def ngram_tables(tokens: Sequence[str], max_order: int) -> list[NgramTable]:
    """N-gram tables of orders 1..max_order: a set if no n-gram repeats, else a Counter."""
    length = len(tokens)
    counts = Counter(tokens)
    tables: list[NgramTable] = [set(counts) if len(counts) == length else counts]
    if max_order > 1:
        shifted = [tokens[i:] for i in range(min(max_order, length))]
        for n in range(2, max_order + 1):
            if n > length:
                tables.append(set())
                continue
            grams: NgramTable = set(zip(*shifted[:n]))
            if len(grams) != length - n + 1:  # some n-gram repeats: counts are needed
                grams = Counter(zip(*shifted[:n]))
            tables.append(grams)
    return tables


def reference_tables(references: Sequence[Sequence[str]], max_order: int) -> list[NgramTable]:
    """Per order, the maximum count of each n-gram over the references (the clipping bound)."""
    if len(references) == 1:
        return ngram_tables(references[0], max_order)
    per_reference = [ngram_tables(tokens, max_order) for tokens in references]
    merged: list[NgramTable] = []
    for parts in zip(*per_reference):
        if all(type(part) is set for part in parts):
            merged.append(set().union(*parts))
            continue
        best: dict = {}
        for part in parts:
            if type(part) is set:  # every count is 1: only n-grams not seen yet change
                best.update(dict.fromkeys(part - best.keys(), 1))
            else:
                get = best.get
                best.update({gram: count for gram, count in part.items() if count > get(gram, 0)})
        merged.append(best)
    return merged


def clipped_matches(tokens: Sequence[str], ref_tables: list[NgramTable]) -> list[int]:
    """Per order, the hypothesis n-grams found in the references, each clipped to its reference count.

    Unigrams: count the positions found, then take back what repeated tokens exceed. From the
    first order without a repeated hypothesis n-gram on, counting positions is exact.
    """
    max_order = len(ref_tables)
    length = len(tokens)
    ref = ref_tables[0]
    matched = sum(map(ref.__contains__, tokens))
    if not matched:
        return [0] * max_order
    counts = Counter(tokens)
    distinct = len(counts) == length
    if not distinct:
        for gram, count in counts.items():
            if count > 1 and gram in ref:
                bound = ref[gram] if isinstance(ref, dict) else 1
                if count > bound:
                    matched -= count - bound
    correct = [matched]
    if max_order > 1:
        shifted = [tokens[i:] for i in range(min(max_order, length))]
        for n in range(2, max_order + 1):
            ref = ref_tables[n - 1]
            if not matched or n > length or not ref:  # no (n-1)-gram matched: no n-gram can
                matched = 0
            elif distinct:  # each hypothesis n-gram occurs once: count the positions found
                matched = sum(map(ref.__contains__, zip(*shifted[:n])))
            elif isinstance(ref, set):  # each reference count is 1: count the distinct n-grams found
                matched = len(ref.intersection(zip(*shifted[:n])))
            else:
                grams = Counter(zip(*shifted[:n]))
                common = grams.keys() & ref.keys()
                if len(grams) == length - n + 1:
                    distinct = True
                    matched = len(common)
                else:
                    matched = sum(map(min, map(grams.__getitem__, common), map(ref.__getitem__, common)))
            correct.append(matched)
    return correct


def single_reference_matches(hyp: Sequence[str], ref: Sequence[str], max_order: int) -> list[int]:
    """``clipped_matches(hyp, reference_tables([ref], max_order))`` without the intermediate
    tables: the common one-reference case, built order by order and stopped at the first empty one."""
    hyp_len = len(hyp)
    ref_len = len(ref)
    ref_counts: Counter = Counter(ref)
    matched = sum(map(ref_counts.__contains__, hyp))
    if not matched:
        return [0] * max_order
    hyp_counts = Counter(hyp)
    distinct = len(hyp_counts) == hyp_len
    if not distinct:  # take back what repeated tokens exceed their reference count
        get = ref_counts.get
        for gram, count in hyp_counts.items():
            if count > 1:
                bound = get(gram, 0)
                if count > bound > 0:
                    matched -= count - bound
    correct = [matched]
    hyp_cols = [hyp]
    ref_cols = [ref]
    for n in range(2, max_order + 1):
        if not matched or n > hyp_len or n > ref_len:
            correct.extend([0] * (max_order - n + 1))
            break
        hyp_cols.append(hyp[n - 1:])
        ref_cols.append(ref[n - 1:])
        table = set(zip(*ref_cols))
        if distinct:  # each hypothesis n-gram occurs once: count the positions found
            matched = sum(map(table.__contains__, zip(*hyp_cols)))
        elif len(table) == ref_len - n + 1:  # each reference count is 1: count distinct n-grams found
            matched = len(table.intersection(zip(*hyp_cols)))
        else:  # the reference repeats an n-gram: counts matter only if the hypothesis repeats one too
            grams = Counter(zip(*hyp_cols))
            common = table.intersection(grams)
            if len(grams) == hyp_len - n + 1:
                distinct = True
                matched = len(common)
            else:
                ref_counts = Counter(zip(*ref_cols))
                matched = sum(map(min, map(grams.__getitem__, common), map(ref_counts.__getitem__, common)))
        correct.append(matched)
    return correct


def closest_ref_len(hyp_len: int, ref_lens: Sequence[int]) -> int:
    """The reference length closest to ``hyp_len``; on a tie the shorter one (as sacrebleu)."""
    if len(ref_lens) == 1:
        return ref_lens[0]
    return min(ref_lens, key=lambda ref_len: (abs(ref_len - hyp_len), ref_len))
