"""ROUGE-1.5.5.pl's own Porter stemmer (its ``stem`` sub), rule for rule: what ``-m`` runs on a word
the WordNet exception lists do not hold.

It is Martin Porter's Perl "Release 1" of Porter (1980) with his two departures (step 2's ``-bli`` ->
``-ble`` and ``-logi`` -> ``-log``) and Chin-Yew Lin's change to step 4 (2004-02-14): step 4 is
three rules tried one after the other, each on what the one before left, instead of one::

    -al -ance -ence -er -ic -able -ible -ant -ement -ou -ism -ate -iti -ous -ive -ize   (m > 1)
    then -ment                                                                          (m > 1)
    then -ent, or else -sion / -tion -> -s / -t                                          (m > 1)

so ``fundamental`` -> ``fundament`` -> ``fundam`` and ``agreement`` -> ``agreem``. No nltk mode
does this: nltk's ``ORIGINAL_ALGORITHM`` differs from the script on 817 of 248,615 words (0.33%;
``agreement``, ``accidental``, ``aerology``), its default ``NLTK_EXTENSIONS`` on 1,641 (``abbey``:
script ``abbei``, and ``says``: ``sai``). The regular expressions below are the script's, in its
order; Perl's and Python's engines find the same leftmost match for each of them.
"""
from __future__ import annotations

import re

__all__ = ["script_porter_stem"]

_c = "[^aeiou]"            # consonant (an initial y is made Y first, so it is one)
_v = "[aeiouy]"            # vowel
_C = f"{_c}[^aeiouy]*"     # consonant sequence
_V = f"{_v}[aeiou]*"       # vowel sequence
_MGR0 = re.compile(f"^({_C})?{_V}{_C}")               # [C]VC... : m > 0
_MEQ1 = re.compile(f"^({_C})?{_V}{_C}({_V})?$")       # [C]VC[V] : m = 1
_MGR1 = re.compile(f"^({_C})?{_V}{_C}{_V}{_C}")       # [C]VCVC... : m > 1
_VOWEL_IN = re.compile(f"^({_C})?{_v}")               # a vowel in the stem
_CVC = re.compile(f"^{_C}{_v}[^aeiouwxy]$")          # the whole stem is consonants, a vowel, a consonant

_STEP1A_IES = re.compile(r"(ss|i)es$")
_STEP1A_S = re.compile(r"([^s])s$")
_EED = re.compile(r"eed$")
_ED_ING = re.compile(r"(ed|ing)$")
_AT_BL_IZ = re.compile(r"(at|bl|iz)$")
_DOUBLE = re.compile(r"([^aeiouylsz])\1$")
_Y = re.compile(r"y$")
_STEP2 = re.compile(r"(ational|tional|enci|anci|izer|bli|alli|entli|eli|ousli|ization|ation|ator|alism|iveness"
                    r"|fulness|ousness|aliti|iviti|biliti|logi)$")
_STEP2_TO = {"ational": "ate", "tional": "tion", "enci": "ence", "anci": "ance", "izer": "ize", "bli": "ble",
             "alli": "al", "entli": "ent", "eli": "e", "ousli": "ous", "ization": "ize", "ation": "ate",
             "ator": "ate", "alism": "al", "iveness": "ive", "fulness": "ful", "ousness": "ous", "aliti": "al",
             "iviti": "ive", "biliti": "ble", "logi": "log"}
_STEP3 = re.compile(r"(icate|ative|alize|iciti|ical|ful|ness)$")
_STEP3_TO = {"icate": "ic", "ative": "", "alize": "al", "iciti": "ic", "ical": "ic", "ful": "", "ness": ""}
_STEP4 = re.compile(r"(al|ance|ence|er|ic|able|ible|ant|ement|ou|ism|ate|iti|ous|ive|ize)$")
_MENT = re.compile(r"ment$")
_ENT = re.compile(r"ent$")
_SION_TION = re.compile(r"(s|t)(ion)$")
_E = re.compile(r"e$")
_LL = re.compile(r"ll$")


def script_porter_stem(word: str) -> str:
    """The script's ``stem($word)`` (a lowercase word; shorter than 3 characters: unchanged)."""
    if len(word) < 3:
        return word
    initial_y = word[0] == "y"
    w = "Y" + word[1:] if initial_y else word
    # Step 1a
    match = _STEP1A_IES.search(w)
    if match:
        w = w[:match.start()] + match.group(1)
    else:
        match = _STEP1A_S.search(w)
        if match:
            w = w[:match.start()] + match.group(1)
    # Step 1b
    match = _EED.search(w)
    if match:
        if _MGR0.search(w[:match.start()]):
            w = w[:-1]
    else:
        match = _ED_ING.search(w)
        if match:
            stem = w[:match.start()]
            if _VOWEL_IN.search(stem):
                w = stem
                if _AT_BL_IZ.search(w):
                    w += "e"
                elif _DOUBLE.search(w):
                    w = w[:-1]
                elif _CVC.search(w):
                    w += "e"
    # Step 1c
    match = _Y.search(w)
    if match:
        stem = w[:match.start()]
        if _VOWEL_IN.search(stem):
            w = stem + "i"
    # Step 2
    match = _STEP2.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR0.search(stem):
            w = stem + _STEP2_TO[match.group(1)]
    # Step 3
    match = _STEP3.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR0.search(stem):
            w = stem + _STEP3_TO[match.group(1)]
    # Step 4, as the script changed it: three rules in a row
    match = _STEP4.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR1.search(stem):
            w = stem
    match = _MENT.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR1.search(stem):
            w = stem
    match = _ENT.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR1.search(stem):
            w = stem
    else:
        match = _SION_TION.search(w)
        if match:
            stem = w[:match.start()] + match.group(1)
            if _MGR1.search(stem):
                w = stem
    # Step 5
    match = _E.search(w)
    if match:
        stem = w[:match.start()]
        if _MGR1.search(stem) or (_MEQ1.search(stem) and not _CVC.search(stem)):
            w = stem
    if _LL.search(w) and _MGR1.search(w):
        w = w[:-1]
    if initial_y:
        w = "y" + w[1:]
    return w
