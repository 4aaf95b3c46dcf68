"""Meteor's English paraphrase table (``paraphrase-en.gz``: 5.3M phrase pairs) in compact arrays:
every distinct phrase gets an id, and the pairs are grouped by their first phrase in file order,
which is the order in which the jar proposes them to the aligner."""
from __future__ import annotations

import gzip
from array import array
from pathlib import Path
from typing import Mapping

import numpy as np

from opik_metrics.text.meteor.normalize import java_tokens

_IRREGULAR_SPACE = ("  ", "\t", "\x0c")


def _phrase(line: str) -> str:
    """A line of the table as its tokens joined by single spaces."""
    if line.endswith("\n"):
        line = line[:-1]
    if line.startswith(" ") or line.endswith(" ") or any(s in line for s in _IRREGULAR_SPACE):
        line = " ".join(java_tokens(line))
    return line


class ParaphraseTable:
    """Phrase ids (``ids``: phrase text -> id) and, per source phrase, the ids of its paraphrases
    (``targets[offsets[p]:offsets[p + 1]]``, in file order)."""

    def __init__(self, phrases: list[str], offsets: np.ndarray, targets: np.ndarray, max_length: int) -> None:
        self.ids: dict[str, int] = {phrase: k for k, phrase in enumerate(phrases)}
        self.offsets = offsets
        self.targets = targets
        self.max_length = max_length
        self._memo: dict[int, dict[int, list[int]]] = {}
        self._memo_size = 0

    @classmethod
    def read(cls, path: Path) -> tuple[list[str], np.ndarray, np.ndarray, int]:
        """Parse the gzipped table (records of three lines: a probability, a phrase, its paraphrase)
        into (phrases, offsets, targets, longest phrase length)."""
        ids: dict[str, int] = {}
        sources, targets = array("i"), array("i")
        max_length = 0
        with gzip.open(path, "rt", encoding="utf-8", errors="replace") as lines:
            for _probability in lines:
                source, target = _phrase(next(lines, "")), _phrase(next(lines, ""))
                if not source or not target:        # the shipped table has no empty phrase
                    continue
                sources.append(ids.setdefault(source, len(ids)))
                targets.append(ids.setdefault(target, len(ids)))
                max_length = max(max_length, source.count(" ") + 1, target.count(" ") + 1)
        source_ids = np.frombuffer(sources, dtype=np.int32)
        order = np.argsort(source_ids, kind="stable")
        offsets = np.zeros(len(ids) + 1, dtype=np.int64)
        np.cumsum(np.bincount(source_ids, minlength=len(ids)), out=offsets[1:])
        grouped = np.frombuffer(targets, dtype=np.int32)[order]
        return list(ids), offsets, grouped, max_length

    def phrases_in(self, tokens: list[str]) -> list[tuple[int, int, int]]:
        """Every n-gram of ``tokens`` that is a phrase of the table: (start, length, id), by start
        then length (the order in which the jar walks its phrase trie)."""
        ids, longest, n = self.ids, self.max_length, len(tokens)
        found = []
        for start in range(n):
            gram = tokens[start]
            for length in range(1, min(longest, n - start) + 1):
                if length > 1:
                    gram = f"{gram} {tokens[start + length - 1]}"
                pid = ids.get(gram)
                if pid is not None:
                    found.append((start, length, pid))
        return found

    def paraphrases_of(self, pid: int) -> Mapping[int, list[int]]:
        """Paraphrase id -> ranks (file order among ``pid``'s pairs; several if the pair repeats)."""
        found = self._memo.get(pid)
        if found is None:
            lo, hi = int(self.offsets[pid]), int(self.offsets[pid + 1])
            found = {}
            for rank, target in enumerate(self.targets[lo:hi].tolist()):
                ranks = found.get(target)
                if ranks is None:
                    found[target] = [rank]
                else:
                    ranks.append(rank)
            if self._memo_size > 5_000_000:             # bound the memo on endless vocabularies
                self._memo.clear()
                self._memo_size = 0
            self._memo[pid] = found
            self._memo_size += hi - lo + 1
        return found
