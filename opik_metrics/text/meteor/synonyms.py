"""WordNet synonym sets as Meteor 1.5 uses them: a word matches another when their synset numbers
intersect, a word's sets being its own plus those of its base form (an irregular form from the
exceptions list, else the first regular detachment of a suffix that names a known word)."""
from __future__ import annotations

from opik_metrics.text.meteor.normalize import java_tokens

# (suffix, ending) pairs tried in this order: nouns, then verbs, then adjectives (WordNet's morphy).
DETACHMENTS = (
    ("s", ""), ("ses", "s"), ("xes", "x"), ("zes", "z"), ("ches", "ch"), ("shes", "sh"), ("men", "man"),
    ("ies", "y"),
    ("s", ""), ("ies", "y"), ("es", "e"), ("es", ""), ("ed", "e"), ("ed", ""), ("ing", "e"), ("ing", ""),
    ("er", ""), ("est", ""), ("er", "e"), ("est", "e"),
)
EMPTY: frozenset[int] = frozenset()


def _pairs(text: str) -> list[tuple[str, str]]:
    """A file of two-line records as (first line, second line) pairs."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if len(lines) % 2:
        lines.append("")
    return [(lines[k].rstrip("\r"), lines[k + 1].rstrip("\r")) for k in range(0, len(lines), 2)]


class SynonymTable:
    """Word -> synset numbers, and irregular form -> base forms; ``sets(word)`` is what matching
    compares (memoised: caption vocabularies are small)."""

    def __init__(self, synsets_text: str, exceptions_text: str) -> None:
        self.synsets: dict[str, frozenset[int]] = {
            word: frozenset(int(n) for n in java_tokens(numbers)) for word, numbers in _pairs(synsets_text)
        }
        bases: dict[str, list[str]] = {}
        for base, forms in _pairs(exceptions_text):
            for form in java_tokens(forms):
                bases.setdefault(form, []).append(base)
        self.bases = {form: tuple(b) for form, b in bases.items()}
        self._memo: dict[str, frozenset[int]] = {}

    def base_form(self, word: str) -> str:
        """The first suffix detachment giving a known word ('' when none; the word itself when it
        ends in 'ss' or has at most two letters)."""
        if word.endswith("ss") or len(word) <= 2:
            return word
        for suffix, ending in DETACHMENTS:
            if word.endswith(suffix):
                candidate = word[: len(word) - len(suffix)] + ending
                if candidate in self.synsets:
                    return candidate
        return ""

    def sets(self, word: str) -> frozenset[int]:
        """Synset numbers of ``word`` and of its base form(s)."""
        found = self._memo.get(word)
        if found is None:
            own = self.synsets.get(word, EMPTY)
            bases = self.bases.get(word)
            if bases is not None:
                extra = frozenset().union(*(self.synsets.get(b, EMPTY) for b in bases))
            else:
                extra = self.synsets.get(self.base_form(word), EMPTY)
            found = own | extra
            if len(self._memo) > 500_000:
                self._memo.clear()
            self._memo[word] = found
        return found
