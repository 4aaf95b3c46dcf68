"""Pairs of output and reference in many scripts at once (Latin with combining marks, CJK, Arabic,
Devanagari, emoji sequences joined by U+200D) and with NUL bytes inside, at the edges and alone:
what the break-it round feeds every path (issue 40 item 10)."""
from __future__ import annotations

PAIRS = [
    ("Cafe\u0301 nai\u0308ve 東京タワー قطة الطبيعة नमस्ते दुनिया 🐈\u200d⬛ x\x00y end",
     "Café naïve 東京タワー قطة नमस्ते दुनिया 🐈\u200d⬛ xy end"),
    ("the cat \x00\x00 sat on the mat", "the cat sat on the mat"),
    ("\x00leading and trailing\x00", "leading and trailing"),
    ("漢字のみの文です", "漢字のみの文"),
    ("مرحبا بالعالم hello world", "hello world مرحبا"),
    ("किताब पढ़ना अच्छा है 📚", "किताब पढ़ना 📚 अच्छा है"),
    ("👩\u200d👩\u200d👧 family 👍🏽 ok", "family ok 👍🏽"),
    ("\x00", "a reference"),
]

OUTPUTS = [output for output, _ in PAIRS]
REFERENCES = [reference for _, reference in PAIRS]
