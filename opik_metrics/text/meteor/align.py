"""Meteor 1.5's aligner: candidate matches from four modules (exact, stem, synonym, paraphrase),
then the jar's beam search for the alignment with the most weighted matches, the fewest chunks
and the least distortion; its quirks are kept, since they change scores:

* candidates are listed per reference position in the jar's order (module, then its own loops),
  and the search sorts paths with a stable sort, so ties resolve as the jar resolves them;
* the beam counts stem, synonym and paraphrase matches at half weight in *integer* fields (a
  one-word stem or synonym match adds nothing to the path's score);
* a path's distance grows by the distance of each match it *could* have taken at a position (the
  jar adds it to the path that skips the position, and to every branch copied after it);
* candidates that are alone on their words are taken before the search starts;
* identical sentences are aligned with exact matches only.

Words are compared as strings; the jar compares ``String.hashCode()`` values, which differs only
for colliding distinct words (ignored here).

The jar bounds its search by its beam alone, so a pathological segment (thousands of words, or a
few words repeated hundreds of times on both sides) takes it minutes. This pack bounds one
alignment instead, deterministically, before it starts: more than ``MAX_WORD_PAIRS`` word pairs
(the modules compare every output word with every reference word), or a search whose work
(``search_work``: beam x candidate matches, scaled by the sentences' length) exceeds
``MAX_SEARCH_WORK``, raises ``MeteorSearchLimit`` with the numbers, never a hang. Below the
bounds the alignment is the jar's, exactly."""
from __future__ import annotations

from operator import itemgetter
from typing import Mapping, NamedTuple

from opik_metrics.text.meteor import stemmer
from opik_metrics.text.meteor.resources import MeteorTables

MODULES = ("exact", "stem", "synonym", "paraphrase")
EXACT, STEM, SYNONYM, PARAPHRASE = range(4)
BEAM_SIZE = 40
#: The weights the jar's search uses (not the scoring weights). With weights 1 and 0.5 the jar's
#: ``(int) (total + words * weight)`` equals ``total + int(words * weight)``, precomputed per match.
SEARCH_WEIGHTS = (1.0, 0.5, 0.5, 0.5)
NO_MATCH = -1
#: Above this many output x reference word pairs an alignment is refused (2,000 x 2,000 words pass).
MAX_WORD_PAIRS = 4_000_000
#: Above this much search work (``search_work``) an alignment is refused: at most about 30 s of
#: our search on this project's 2-core machine under load. 200 repeats of one word against its
#: plural (6.4M units) still pass (docs/speed.md has both times against the jar's).
MAX_SEARCH_WORK = 8_000_000


class MeteorSearchLimit(ValueError):
    """An alignment refused because it would exceed this pack's bound on one segment's work (the
    jar has none and takes minutes on such input); the message says why, with the numbers."""


def search_work(stage: list[list[Match]], n_test: int, n_ref: int) -> int:
    """An upper bound of the beam search's work: every path of the beam tries every candidate at
    each reference position, and each try handles masks of the sentences' length."""
    return BEAM_SIZE * sum(len(c) for c in stage) * (1 + (n_test + n_ref) // 1024)

_rank = itemgetter(0, 1, 2)


class Match(NamedTuple):
    """``length`` reference words from ``start`` matched to ``test_length`` output words from
    ``test_start`` by ``module``."""

    start: int
    length: int
    test_start: int
    test_length: int
    module: int


class Sentence:
    """A normalised sentence with what matching needs, computed once (an output is aligned with
    each of its references)."""

    __slots__ = ("tokens", "positions", "stems", "stem_positions", "synsets", "function", "phrases",
                 "phrase_positions")

    def __init__(self, tokens: list[str], tables: MeteorTables, lexicon: dict[str, tuple[str, frozenset[int]]]) -> None:
        self.tokens = tokens
        self.positions: dict[str, list[int]] = {}
        self.stem_positions: dict[str, list[int]] = {}
        self.stems: list[str] = []
        self.synsets: list[frozenset[int]] = []
        for i, word in enumerate(tokens):
            known = lexicon.get(word)
            if known is None:
                known = lexicon[word] = (stemmer.stem(word), tables.synonyms.sets(word))
            self.stems.append(known[0])
            self.synsets.append(known[1])
            self.positions.setdefault(word, []).append(i)
            self.stem_positions.setdefault(known[0], []).append(i)
        self.function = [word in tables.function_words for word in tokens]
        self.phrases = tables.paraphrases.phrases_in(tokens)
        self.phrase_positions: dict[int, tuple[int, list[int]]] = {}
        for start, length, pid in self.phrases:
            self.phrase_positions.setdefault(pid, (length, []))[1].append(start)


class Alignment(NamedTuple):
    """The chosen matches and what the scorer counts from them. Per module: output (``test``) and
    reference words matched, content and function words apart."""

    matches: tuple[Match, ...]
    test_content: tuple[int, ...]
    reference_content: tuple[int, ...]
    test_function: tuple[int, ...]
    reference_function: tuple[int, ...]
    chunks: int


class Aligner:
    """Aligns an output (the jar's "test", line 1) with a reference (line 2)."""

    def __init__(self, tables: MeteorTables) -> None:
        self.tables = tables
        self._lexicon: dict[str, tuple[str, frozenset[int]]] = {}

    def sentence(self, tokens: list[str]) -> Sentence:
        """Prepare normalised tokens for matching."""
        if len(self._lexicon) > 500_000:
            self._lexicon.clear()
        return Sentence(tokens, self.tables, self._lexicon)

    def align(self, test: Sentence, ref: Sentence) -> Alignment:
        """The jar's alignment of ``test`` against ``ref``; ``MeteorSearchLimit`` above the bounds."""
        n_test, n_ref = len(test.tokens), len(ref.tokens)
        if n_test * n_ref > MAX_WORD_PAIRS:
            raise MeteorSearchLimit(f"{n_test:,} x {n_ref:,} words is over the {MAX_WORD_PAIRS:,} word pairs this "
                                    f"pack aligns in one segment (the jar takes minutes on such segments)")
        stage = self.candidates(test, ref)
        work = search_work(stage, n_test, n_ref)
        if work > MAX_SEARCH_WORK:
            raise MeteorSearchLimit(f"{n_test:,} x {n_ref:,} words with {sum(map(len, stage)):,} candidate matches "
                                    f"need {work:,} units of beam-search work, over the {MAX_SEARCH_WORK:,} this pack "
                                    f"allows one segment (words repeated many times; the jar takes minutes)")
        fixed, used_test, used_ref = _unambiguous(stage, len(test.tokens), len(ref.tokens))
        matches = _search(stage, fixed, used_test, used_ref, len(ref.tokens))
        counts = [[0] * len(MODULES) for _ in range(4)]   # test content, ref content, test function, ref function
        for m in matches:
            if m is None:
                continue
            for i in range(m.test_start, m.test_start + m.test_length):
                counts[2 if test.function[i] else 0][m.module] += 1
            for j in range(m.start, m.start + m.length):
                counts[3 if ref.function[j] else 1][m.module] += 1
        chosen = tuple(m for m in matches if m is not None)
        test_content, ref_content, test_function, ref_function = (tuple(c) for c in counts)
        return Alignment(chosen, test_content, ref_content, test_function, ref_function, _chunks(matches))

    def candidates(self, test: Sentence, ref: Sentence) -> list[list[Match]]:
        """Every candidate match, listed at its first reference word, in the jar's order."""
        n_ref = len(ref.tokens)
        stage: list[list[Match]] = [[] for _ in range(n_ref)]
        for j, word in enumerate(ref.tokens):
            for i in test.positions.get(word, ()):
                stage[j].append(Match(j, 1, i, 1, EXACT))
        if test.tokens == ref.tokens:                   # identical: exact matches only
            return stage
        for j, word in enumerate(ref.tokens):
            for i in test.stem_positions.get(ref.stems[j], ()):
                if test.tokens[i] != word:
                    stage[j].append(Match(j, 1, i, 1, STEM))
        for j, sets in enumerate(ref.synsets):
            if not sets:
                continue
            word = ref.tokens[j]
            for i, other in enumerate(test.synsets):
                if other and not sets.isdisjoint(other) and test.tokens[i] != word:
                    stage[j].append(Match(j, 1, i, 1, SYNONYM))
        self._paraphrases(test, ref, stage)
        return stage

    def _paraphrases(self, test: Sentence, ref: Sentence, stage: list[list[Match]]) -> None:
        """Paraphrases of reference phrases found in the output, then of output phrases found in
        the reference: by start, phrase length and the table's order, then by position."""
        table = self.tables.paraphrases
        for j, length, pid in ref.phrases:
            for _, test_length, starts in _found(table.paraphrases_of(pid), test.phrase_positions):
                for i in starts:
                    stage[j].append(Match(j, length, i, test_length, PARAPHRASE))
        for i, length, pid in test.phrases:
            for _, ref_length, starts in _found(table.paraphrases_of(pid), ref.phrase_positions):
                for j in starts:
                    stage[j].append(Match(j, ref_length, i, length, PARAPHRASE))


def _found(paraphrases: Mapping[int, list[int]],
           positions: dict[int, tuple[int, list[int]]]) -> list[tuple[int, int, list[int]]]:
    """(rank in the table, phrase length, starts) of the paraphrases present in a sentence, by rank."""
    if not paraphrases:
        return []
    hits: list[tuple[int, int, list[int]]] = []
    if len(positions) <= len(paraphrases):
        for pid, (length, starts) in positions.items():
            ranks = paraphrases.get(pid)
            if ranks:
                hits.extend((rank, length, starts) for rank in ranks)
    else:
        for pid, ranks in paraphrases.items():
            at = positions.get(pid)
            if at:
                hits.extend((rank, at[0], at[1]) for rank in ranks)
    hits.sort(key=itemgetter(0))
    return hits


def _unambiguous(stage: list[list[Match]], n_test: int, n_ref: int) -> tuple[list[Match | None], int, int]:
    """Matches that are their position's only candidate and share no word with another: fixed
    before the search, with the words they use (bit masks)."""
    test_cover, ref_cover = [0] * n_test, [0] * n_ref
    for candidates in stage:
        for m in candidates:
            for j in range(m.start, m.start + m.length):
                ref_cover[j] += 1
            for i in range(m.test_start, m.test_start + m.test_length):
                test_cover[i] += 1
    fixed: list[Match | None] = [None] * n_ref
    used_test = used_ref = 0
    for j, candidates in enumerate(stage):
        if len(candidates) != 1:
            continue
        m = candidates[0]
        if all(ref_cover[k] == 1 for k in range(j, j + m.length)) and \
                all(test_cover[k] == 1 for k in range(m.test_start, m.test_start + m.test_length)):
            fixed[j] = m
            used_ref |= ((1 << m.length) - 1) << j
            used_test |= ((1 << m.test_length) - 1) << m.test_start
    return fixed, used_test, used_ref


def _option(m: Match) -> tuple:
    """What the search needs of a match: (match, reference mask, output mask, score gain,
    distance, end in the reference, end in the output, start in the output)."""
    w = SEARCH_WEIGHTS[m.module]
    return (m, ((1 << m.length) - 1) << m.start, ((1 << m.test_length) - 1) << m.test_start,
            int(m.test_length * w) + int(m.length * w), abs(m.start - m.test_start),
            m.start + m.length, m.test_start + m.test_length, m.test_start)


def _search(stage: list[list[Match]], fixed: list[Match | None], used_test: int, used_ref: int,
            n_ref: int) -> list[Match | None]:
    """The jar's beam search, left to right over the reference. A path is a list:
    [-score, chunks, distance, next position, end of last match in the output (or -1),
    output words used, reference words used, chosen matches (a linked list)]. A new branch is kept
    as a tuple (-score, chunks, distance, option, parent) until it ranks within the beam: most
    never do, and the jar's copy of each is what made long, ambiguous segments slow."""
    frontier: list = [[0, 0, 0, 0, NO_MATCH, used_test, used_ref, None]]
    for current in range(n_ref + 1):
        frontier.sort(key=_rank)
        paths = [_branch(p) if type(p) is tuple else p for p in frontier[:BEAM_SIZE]]
        frontier = []
        if current == n_ref:
            for path in paths:
                if path[4] != NO_MATCH:
                    path[1] += 1
                frontier.append(path)
            break
        bit = 1 << current
        options = None
        for path in paths:
            if path[6] & bit:                        # inside a match already taken
                if current < path[3]:
                    frontier.append(path)
                    continue
                m = fixed[path[3]]
                if m is not None:
                    _, _, _, gain, distance, end, test_end, test_start = _option(m)
                    path[0] -= gain
                    if path[4] != NO_MATCH and test_start != path[4]:
                        path[1] += 1
                    path[3], path[4] = end, test_end
                    path[2] += distance
                    frontier.append(path)
                continue
            if options is None:
                options = [_option(m) for m in stage[current]]
            last_end, used_t, used_r = path[4], path[5], path[6]
            score, chunks, spread = path[0], path[1], path[2]
            for option in options:
                if used_r & option[1] or used_t & option[2]:
                    continue
                broken = last_end != NO_MATCH and option[7] != last_end
                frontier.append((score - option[3], chunks + 1 if broken else chunks, spread, option, path))
                spread += option[4]                  # the jar's quirk: charged to the path that skips
            path[2] = spread
            if last_end != NO_MATCH:
                path[1] += 1
                path[4] = NO_MATCH
            path[3] += 1
            frontier.append(path)
        if not frontier:
            frontier.append(paths[0])
    frontier.sort(key=_rank)
    matches = list(fixed)
    link = frontier[0][7]
    while link is not None:
        m, link = link
        matches[m.start] = m
    return matches


def _branch(lazy: tuple) -> list:
    """A branch kept as (-score, chunks, distance, option, parent) made a path (the parent's words
    used and chosen matches do not change after it branches)."""
    score, chunks, spread, option, parent = lazy
    m, ref_mask, test_mask, _, _, end, test_end, _ = option
    return [score, chunks, spread, end, test_end, parent[5] | test_mask, parent[6] | ref_mask, (m, parent[7])]


def _chunks(matches: list[Match | None]) -> int:
    """Runs of matches contiguous and in the same order in both sentences."""
    chunks, idx, last_end = 0, 0, NO_MATCH
    while idx < len(matches):
        m = matches[idx]
        if m is None:
            if last_end != NO_MATCH:
                chunks += 1
                last_end = NO_MATCH
            idx += 1
        else:
            if last_end != NO_MATCH and m.test_start != last_end:
                chunks += 1
            idx = m.start + m.length
            last_end = m.test_start + m.test_length
    return chunks + (last_end != NO_MATCH)
