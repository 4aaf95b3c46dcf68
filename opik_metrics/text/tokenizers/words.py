"""Tokenizers for ROUGE: rouge-score's exact tokenisation, a Unicode-aware one, and user callables.

Every tokenizer is a callable ``text -> list[str]``. Stopword removal and Porter stemming are
applied per distinct word through a memo (stemming is the dominant cost of rouge-score).
"""
from __future__ import annotations

import functools
import re
import sys
import unicodedata
from typing import Callable, Iterable, Optional

from opik_metrics.text.tokenizers.stopwords import ENGLISH_STOPWORDS

TOKENIZER_NAMES = ("default", "unicode")

# rouge-score: lowercase, every non-[a-z0-9] character is a separator, keep [a-z0-9]+ tokens.
_ASCII_WORD = re.compile(r"[a-z0-9]+")
_VALID_ASCII_TOKEN = re.compile(r"[a-z0-9]+\Z")
# Same split for all-ASCII text, in C: bytes outside [a-z0-9] become spaces.
_ASCII_SEPARATORS = bytes(c if 48 <= c <= 57 or 97 <= c <= 122 else 32 for c in range(256))
# Between texts in ``DefaultTokenizer.ascii_of_many``: a word of its own that no text can produce.
TEXT_SEPARATOR = "\x00"
_KEEP_SEPARATOR = _ASCII_SEPARATORS[:1].replace(b" ", b"\x00") + _ASCII_SEPARATORS[1:]

# Ideographs, Hiragana and Katakana: each character is a word of its own (no spaces in CJK text).
_CJK_CHARS = (
    "\u3005\u3007"  # iteration mark, ideographic zero
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u31f0-\u31ff"  # Katakana phonetic extensions
    "\u3400-\u4dbf"  # CJK extension A
    "\u4e00-\u9fff"  # CJK unified ideographs
    "\uf900-\ufaff"  # CJK compatibility ideographs
    "\U00020000-\U0003134f"  # CJK extensions B..G
)

_MEMO_LIMIT = 200_000


@functools.lru_cache(maxsize=1)
def _porter_stem() -> Callable[[str], str]:
    """nltk's PorterStemmer in its default NLTK_EXTENSIONS mode, exactly as rouge-score builds it."""
    from nltk.stem import porter

    return porter.PorterStemmer().stem


def _char_ranges(chars: Iterable[int]) -> str:
    """Regex character-class body covering the given sorted code points as ranges."""
    parts = []
    start = prev = None
    for cp in chars:
        if prev is not None and cp == prev + 1:
            prev = cp
            continue
        if start is not None and prev is not None:
            parts.append(_range_text(start, prev))
        start = prev = cp
    if start is not None and prev is not None:
        parts.append(_range_text(start, prev))
    return "".join(parts)


def _range_text(start: int, end: int) -> str:
    first = re.escape(chr(start))
    return first if start == end else f"{first}-{re.escape(chr(end))}"


@functools.lru_cache(maxsize=1)
def _unicode_word_pattern() -> "re.Pattern[str]":
    """Tokens: one CJK/kana character, or a run of letters/digits (combining marks stay attached)."""
    marks = _char_ranges(
        cp for cp in range(min(sys.maxunicode, 0x2FFFF) + 1)
        if unicodedata.category(chr(cp)).startswith("M")
    )
    letter = rf"[^\W_{_CJK_CHARS}]"
    return re.compile(rf"[{_CJK_CHARS}]|{letter}(?:{letter}|[{marks}])*")


class _WordMemo(dict):
    """Memo: raw word -> final token ("" when the word is dropped as a stopword or invalid)."""

    def __init__(self, stem: Optional[Callable[[str], str]], stopwords: frozenset,
                 stemmable: Callable[[str], bool], validate: Optional["re.Pattern[str]"]):
        super().__init__()
        self._stem = stem
        self._stopwords = stopwords
        self._stemmable = stemmable
        self._validate = validate

    def __missing__(self, word: str) -> str:
        if word in self._stopwords:
            token = ""
        elif self._stem is not None and self._stemmable(word):
            token = self._stem(word)
        else:
            token = word
        if self._validate is not None and token and not self._validate.match(token):
            token = ""
        if len(self) >= _MEMO_LIMIT:
            self.clear()
        self[word] = token
        return token

    def normalise(self, words: list) -> list:
        """Map every word through the memo and drop the removed ones."""
        tokens = list(map(self.__getitem__, words))
        if "" in tokens:
            tokens = [t for t in tokens if t]
        return tokens


def _longer_than_3(word: str) -> bool:
    return len(word) > 3


def _ascii_alpha_longer_than_3(word: str) -> bool:
    return len(word) > 3 and word.isascii() and word.isalpha()


def rouge_score_words(text: str) -> list:
    """rouge-score's words before stemming: lowercase, then maximal [a-z0-9] runs."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered.encode("ascii").translate(_ASCII_SEPARATORS).decode("ascii").split()
    return _ASCII_WORD.findall(lowered)


class DefaultTokenizer:
    """rouge-score's tokenizer, token for token: lowercase, [a-z0-9]+ words, Porter stem if > 3 chars."""

    name = "default"

    def __init__(self, use_stemmer: bool = False, stopwords: frozenset = frozenset()):
        self._memo = None
        if use_stemmer or stopwords:
            stem = _porter_stem() if use_stemmer else None
            self._memo = _WordMemo(stem, stopwords, _longer_than_3, _VALID_ASCII_TOKEN)

    def __call__(self, text: str) -> list:
        words = rouge_score_words(text)
        return words if self._memo is None else self._memo.normalise(words)

    @property
    def word_memo(self) -> "_WordMemo | None":
        """Word -> token ("" when dropped) under this tokenizer's stemmer / stopwords; None: words are tokens."""
        return self._memo

    def ascii_of_many(self, texts: list) -> "bytes | None":
        """Every text lowercased with each character outside ``[a-z0-9]`` made a space, texts joined
        with `` TEXT_SEPARATOR `` (a word of its own that no text can produce), in one pass for all of
        them. None when a text is not ASCII once lowercased or holds the separator: tokenise text by
        text then."""
        joined = f" {TEXT_SEPARATOR} ".join(texts).lower()
        if not joined.isascii() or joined.count(TEXT_SEPARATOR) != len(texts) - 1:
            return None
        return joined.encode("ascii").translate(_KEEP_SEPARATOR)


class UnicodeTokenizer:
    """NFKC + casefold; letter/digit runs, each CJK ideograph or kana its own token (any script scores)."""

    name = "unicode"

    def __init__(self, use_stemmer: bool = False, stopwords: frozenset = frozenset()):
        self._pattern = _unicode_word_pattern()
        self._memo = None
        if use_stemmer or stopwords:
            stem = _porter_stem() if use_stemmer else None
            self._memo = _WordMemo(stem, stopwords, _ascii_alpha_longer_than_3, None)

    def __call__(self, text: str) -> list:
        words = self._pattern.findall(unicodedata.normalize("NFKC", text).casefold())
        return words if self._memo is None else self._memo.normalise(words)


class CallableTokenizer:
    """Wraps a user ``text -> list[str]``; stopwords/stemming, if asked, apply to its tokens."""

    def __init__(self, function: Callable[[str], list], use_stemmer: bool = False,
                 stopwords: frozenset = frozenset()):
        self._function = function
        self.name = "callable:" + getattr(function, "__qualname__", type(function).__name__)
        self._memo = None
        if use_stemmer or stopwords:
            stem = _porter_stem() if use_stemmer else None
            self._memo = _WordMemo(stem, stopwords, _ascii_alpha_longer_than_3, None)

    def __call__(self, text: str) -> list:
        tokens = self._function(text)
        if not isinstance(tokens, (list, tuple)) or not all(isinstance(t, str) for t in tokens):
            raise TypeError(
                f"tokenizer {self.name!r} must return a list of str, got {type(tokens).__name__}"
            )
        tokens = [t for t in tokens if t]
        return tokens if self._memo is None else self._memo.normalise(tokens)


def make_tokenizer(tokenizer, *, use_stemmer: bool = False, remove_stopwords: bool = False):
    """Build the tokenizer named ``"default"`` / ``"unicode"``, or wrap a callable; ValueError otherwise."""
    stopwords = ENGLISH_STOPWORDS if remove_stopwords else frozenset()
    if callable(tokenizer):
        return CallableTokenizer(tokenizer, use_stemmer, stopwords)
    if tokenizer == "default":
        return DefaultTokenizer(use_stemmer, stopwords)
    if tokenizer == "unicode":
        return UnicodeTokenizer(use_stemmer, stopwords)
    raise ValueError(
        f"unknown tokenizer {tokenizer!r}: use one of {', '.join(map(repr, TOKENIZER_NAMES))} "
        "or a callable text -> list[str]"
    )
