"""ptb_tokenize equals pycocoevalcap's PTBTokenizer (the Stanford jar) token for token: on tricky
hand-written captions, realistic ones and random mixes of tricky fragments and characters (one JVM
run for the module), and on long runs without spaces, which take time linear in their length; plus
outputs worked out against the jar, pinned here for machines without Java."""
import random
import time

import pytest

from opik_metrics.text.tokenizers.ptb import ptb_tokenize, ptb_tokenize_all
from tests.corpus import realistic_pairs

TRICKY = [
    # lower-casing (Java's, Unicode-aware) and plain captions
    "A man riding a wave on top of a surfboard.", "TWO DOGS PLAYING", "İstanbul at night", "ΟΔΟΣ ΣΟΦΟΣ", "A Straße in Köln",
    "", " ", "   ", ".", "...", "!?!", "- -- ---", "\" ' ` ''", "( )", "a", "A.",
    # punctuation
    "Hello, world! How are you? Fine; thanks: bye.", "dog,cat;bird:fish", "end.", "end..", "end....", "end......",
    "wait... what", "wait…what", "so . . . here", ". . .5", "a.b", "Dog.The cat", "dogs!cats", "who?me",
    # double quotes, single quotes, apostrophes, curly quotes
    'He said "hello" to them', '"Quoted" and "x"', "'single' quotes", "‘curly’ “double” quotes", "„low“ ‚x‘ «guillemets» ‹a›",
    "''double single''", "``latex''", "it’s John’s", "&quot;entity&quot; &apos;s", "“““triple”””",
    # contractions and possessives
    "I can't, won't, don't, isn't, ain't", "it's they're we'll I'd you've I'm", "CAN'T WON'T IT'S THEY'RE",
    "cannot Cannot CANNOT cannot's", "gonna gotta wanna lemme gimme", "gonna's wannabe", "o'clock at 5 o'clock",
    "the '90s and '80s", "in '90 and ’90", "'tis 'twas 'em 'cause 'til", "y'all c'mon ol' nor'easter s'mores li'l",
    "cont'd cont'd. rock'n'roll rock 'n' roll", "O'Neill D'Angelo l'amour n'est", "dogs' bones James' car children's toys",
    "Ma'am ma'am", "don’t ’s", "it's.", "don't.",
    # hyphens and dashes
    "a well-known black-and-white photo", "e-mail x-ray co-op re-use", "pro- and anti- groups",
    "a - b -- c --- d ---- e ----- f", "a—b – c — d", "a-b-c-d-e", "well-", "-start", "5-year-old", "U.S.-based", "x--y",
    "self‐made non‑breaking",
    # numbers
    "3.5 1,000 10% $5 1/2 ½ ¼ ¾ ⅓ ⅕ 3:30 2nd 1st 100", "-5 +5 .5 5. 1990s 12/25/2020 1-2-2003", "1 1/2 cups and 3-1/2 miles",
    "US$5 €5 £3 ¥4 ¢5 C$10", "555-1234 (650) 555-1234 +1 650 555 1234 650.555.1234", "pi is 3.14159.", "1.000.000,5",
    "²³ x₂ 10⁻³", "٣٤ ३४ ３４",
    # abbreviations and acronyms, mid-sentence and at the end
    "U.S. The", "the u.s. and the U.S.A.", "e.g. this, i.e. that", "at 5 a.m. and 6 p.m.", "at 5 p.m.", "Mr. Smith and mr. smith",
    "Dr. Who St. Louis Mt. Fuji", "etc. etc", "and so on, etc.", "Apple Inc. and Co. Ltd.", "Pty. Ltd and co. lim",
    "No. 5 and no. 5 no.5 fig. 3 Fig.3", "vitamin C. The end", "vitamin C. the end", "I. The end", "He is 6 ft. tall",
    "Jan. 5 Sept. 3 Mon. Tues.", "Calif. Wash. wash. Az. az. Miss. miss.", "Ph.D. a.k.a. vs. Jr. Sr. Bros.",
    "a.k.a.v. x", "Washington D.C. is", "non-U.S. firms", "U.S.-U.K. talks", "the letter X.", "x. y",
    # brackets of every kind
    "A (red) [blue] {green} <b>bold</b> dog", "(parenthetical)", "f(x) = y", "[citation needed]", "-LRB- -lrb-",
    # slashes and symbols
    "a/b and/or either/or 1/2/3 w/o", "AT&T at&t S&P S&P-500 R&D &amp; & &lt; &gt;", "@user #tag #1 @ # ## __ **",
    "a*b 2+2=4 x<y z>w << >> | \\ ~ ^ %", "c++ C# f# F#", "© ® ™ ° § ¶ × ÷ → ∞ ★ ♥ ☺",
    # URLs and e-mails
    "see http://example.com/a?b=c. now", "https://x.org/path, and www.google.com!", "google.com Google.com my-site.org",
    "mail me@x.com or first.last@sub.domain.co.uk.", "HTTP://X.COM WWW.X.COM", "file.jpg 1.jpg image.PNG a.b.c.txt",
    "https://x.org-\u00a0.",
    # emoticons and emoji
    ":) :-) :( ;) :D :P =) :o :-/ <3", "^_^ (^-^) x_x -_- (x_x) ^.^", "😀 a 🐶 dog 👍🏽 ok", "a😀b", "𝐀𝐁𝐂 bold",
    # accented and non-Latin letters
    "café naïve résumé niño façade", "Ελληνικά Σ σ ς ΑΣ-Β ΑΣ5", "Москва Россия", "東京 中文 日本語 ひらがな カタカナ",
    "한국어 עברית العربية हिन्दी ไทย", "ǅ ǈ ǋ ß ẞ æ œ ø", "caf&eacute; na&iuml;ve", "Ⱟ ꞡ", "\u00ad soft\u00adhyphen",
    # spaces and line breaks
    "a\u00a0b", "non\u00a0breaking", "tab\tseparated\twords", "multiple    spaces", "  leading and trailing  ",
    "ideographic\u3000space", "em\u2003space", "zero\u200bwidth", "\ufeffbom", "a\x7fb", "a\x00b", "\u00a0google.com",
    "x \u00a0google.com", "new\nline", "carriage\rreturn", "line\u2028separator", "vertical\x0btab", "next\x85line",
    # British spellings are kept (the command line does not americanize)
    "The colour of the harbour", "I realise the theatre is grey", "centre, favourite, organise",
    # SGML-ish
    "<p>para</p>", "<br/> <br /> <!-- c -->", "a < b > c", "<a href='x'>link</a>",
]

FRAGMENTS = [
    "dog", "Dog", "DOG", "a", "A", "I", "The", "There", "He", "5", "10", "U.S.", "e.g.", "a.m.", "Mr.", "Dr.", "etc.",
    "Inc.", "Co.", "No.", "fig.", "Jan.", "Calif.", "Az.", "can't", "won't", "it's", "they're", "I'm", "cannot", "gonna",
    "o'clock", "'90s", "'90", "y'all", "O'Neill", "dogs'", "’s", "don’t", "‘", "’", "“", "”", '"', "'", "`", "''", "«",
    "-", "--", "---", "-----", "—", "–", "well-known", "x-ray", "pro-", "3.5", "1,000", "10%", "$5", "€5", "£3", "1/2",
    "½", "3:30", "2nd", "-5", ".5", "12/25/2020", "555-1234", "(650) 555-1234", "1 1/2", "...", "…", ". . .", ".", ",",
    ";", ":", "!", "?", "(", ")", "[", "]", "{", "}", "<", ">", "<b>", "&", "&amp;", "&lt;", "&quot;", "@user", "#tag",
    "*", "+", "=", "/", "and/or", "AT&T", "c++", "http://x.com/a?b=c.", "www.google.com", "me@x.com", "file.jpg",
    ":)", ":-(", ";)", "^_^", "(^-^)", "😀", "café", "Straße", "ΟΔΟΣ", "Москва", "東京", "colour", "\u00a0", "\t",
    "\u3000", "\u200b", "\u00ad", "vs.", "St.", "Ph.D.", "a.k.a.", "Pty. Ltd", "Wash.", "wash.",
]
JOINERS = [" ", " ", " ", "", "  ", ", ", ". ", "-", "'", "."]
CHARS = list("abcXYZ019 .,;:!?'\"`-_()[]{}<>@#$%&*+=/\\|~^") + list(
    "\u00a0\u2003\u3000\u200b\u00ad\x7f\x85\u2026\u2013\u2014\u2018\u2019\u201a\u201c\u201d\u201e\xab\xbb"
    "\u00bd\u2153\u00a2\u00a3\u20ac\u00b2\u2080\u2044éßΣσΩж東한א\u0301\u0660\u058a\u2010\u00b7\u00d7\u2122\u2605\u2160"
    "\uff01\u0130\u0131\u017f\u212a") + ["😀", "n't", "'s", "U.S.", "www.", ".com", "http://", "&amp;", "<b>", "1/2"]


# Long runs without spaces, as a degenerate caption of one very long "word" may be. From each token of
# such a run, rules look ahead to the run's end (a '.com', an '@', a '-', an extension, a '>' may come
# there): the tokeniser was quadratic in the run's length ("ab'cd-ef.gh,ij" x 4,000 took 14 s). Each is
# (unit, suffix): the unit repeated, then the suffix. The jar, too, scans to the run's end (and is itself
# quadratic on them), with no limit on a token's length (tokens of 300,000 characters come out whole).
LONG_UNITS = [
    ("ab'cd-ef.gh,ij", ""), ("x-1.", ""), ("ab,", ""), ("e.g.9", ".jpg "), ("ab@.", ""), ("a1-b'c.d,e/f@g", ""),
    ("a%b%", "X.com"), ("www.a.b5/", ".ab"), ("ab/", "x.com"), ("<!a", ""), ("ab,ab,", "ab-"),
]


def _long_run(unit: str, suffix: str, length: int) -> str:
    return unit * (length // len(unit)) + suffix


LONG_RUNS = [_long_run(unit, suffix, 2000) for unit, suffix in LONG_UNITS]


def _generated() -> list[str]:
    rng = random.Random(20240611)
    preds, refs = realistic_pairs(150, seed=3)
    fragments = []
    for _ in range(600):
        parts = [rng.choice(FRAGMENTS) + rng.choice(JOINERS) for _ in range(rng.randint(1, 7))]
        fragments.append("".join(parts).rstrip() if rng.random() < 0.8 else "".join(parts))
    chars = ["".join(rng.choice(CHARS) for _ in range(rng.randint(1, 14))) for _ in range(300)]
    return [*preds, *refs, *fragments, *chars]


@pytest.fixture(scope="module")
def oracle():
    """{caption: the jar's string} for the tricky, the generated captions and the long runs, from one JVM run."""
    from tests.coco_oracle import jar_tokenize
    captions = list(dict.fromkeys([*TRICKY, *_generated(), *LONG_RUNS]))
    return dict(zip(captions, jar_tokenize(captions)))


def _mismatches(captions, oracle) -> str:
    lines = [f"{c!r}\n    ours {ptb_tokenize(c)!r}\n    jar  {oracle[c]!r}" for c in captions if ptb_tokenize(c) != oracle[c]]
    return f"{len(lines)} of {len(captions)} captions differ:\n" + "\n".join(lines)


def test_tricky_captions_equal_the_jar(oracle):
    assert all(ptb_tokenize(c) == oracle[c] for c in TRICKY), _mismatches(TRICKY, oracle)


def test_generated_captions_equal_the_jar(oracle):
    captions = _generated()
    assert len(set(captions)) > 1000
    assert all(ptb_tokenize(c) == oracle[c] for c in captions), _mismatches(captions, oracle)


def test_long_runs_equal_the_jar(oracle):
    assert all(ptb_tokenize(c) == oracle[c] for c in LONG_RUNS), _mismatches(LONG_RUNS, oracle)


def _cpu_seconds_per_character(captions: list[str], repeats: int = 3) -> float:
    """The least CPU time per character of tokenising ``captions`` (bypassing ptb_tokenize's cache)."""
    tokenize, best = ptb_tokenize.__wrapped__, float("inf")
    for _ in range(repeats):
        start = time.process_time()
        for caption in captions:
            tokenize(caption)
        best = min(best, time.process_time() - start)
    return best / sum(map(len, captions))


@pytest.mark.parametrize("unit, suffix", [("ab'cd-ef.gh,ij", ""), ("x-1.", ""), ("ab,", ""), ("e.g.9", ""),
                                          ("ab@.", ""), ("a%b%", "X.com"), ("<!a", ""), ("0", ".")])
def test_long_runs_take_time_linear_in_their_length(unit, suffix):
    """A run 40 times as long costs about as much per character as the short one (quadratic code,
    as before, costs 10 to 40 times as much: the bound of 5 leaves room for a loaded machine)."""
    short, long = _long_run(unit, suffix, 200), _long_run(unit, suffix, 8000)
    ratio = _cpu_seconds_per_character([long]) / _cpu_seconds_per_character([short] * 40)
    assert ratio < 5, f"{unit!r}... of {len(long)} characters: {ratio:.1f} times the CPU time per character"


def test_the_next_caption_and_odd_line_breaks_change_pycocoevalcaps_own_batch():
    """Why jar_tokenize separates captions: in one batch a caption's tokens may depend on the next
    line (and on being last), and a carriage return shifts every later caption to the next image."""
    from tests.coco_oracle import require_java
    require_java()
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer
    batch = ["vitamin C.", "The dog", "a \r b", "c", "d", "smile :)"]
    out = PTBTokenizer().tokenize({i: [{"caption": c}] for i, c in enumerate(batch)})
    assert out[0] == ["vitamin c"] and ptb_tokenize("vitamin C.") == "vitamin c."   # "C." before "The"
    assert out[2] == ["a"] and out[3] == ["b"] and out[4] == ["c"]                   # shifted by "\r"
    assert out[5] == ["d"]                                                          # "smile :)" lost
    assert ptb_tokenize("a \r b") == "a b" and ptb_tokenize("smile :)") == "smile :-rrb-"


# Worked out against the jar (Java 17, CoreNLP 3.4.1 as pycocoevalcap ships it).
HANDWORKED = [
    ("A man riding a wave on top of a surfboard.", "a man riding a wave on top of a surfboard"),
    ('He said "hello" to \'them\'', "he said hello to them"),
    ("‘curly’ “double” „low“", "curly double „ low"),                      # „ is no PTB quote
    ("I can't believe it's John's", "i ca n't believe it 's john 's"),
    ("cannot gonna wanna", "can not gon na wan na"),
    ("o'clock in the '90s", "o'clock in the '90s"),
    ("A (red) [blue] {green} dog", "a -lrb- red -rrb- -lsb- blue -rsb- -lcb- green -rcb- dog"),   # lower-cased, kept
    ("a well-known e-mail -- a - b --- c ----- d", "a well-known e-mail a b c ----- d"),
    ("3.5 1,000 10% $5 €5 £3 1/2 ½ 3:30 2nd", "3.5 1,000 10 % $ 5 $ 5 # 3\u00a01/2 1/2 3:30 2nd"),
    ("1 1/2 cups, call (650) 555-1234", "1\u00a01/2 cups call -lrb-650-rrb-\u00a0555-1234"),
    ("U.S. The u.s. e.g. a.m. Mr. etc.", "u.s. the u.s. e.g. a.m. mr. etc."),
    ("vitamin C. The end", "vitamin c the end"),                            # a one-letter acronym before "The"
    ("the letter X.", "the letter x."),
    ("wait... what…", "wait what"),
    ("AT&T &amp; S&P-500 and/or @user #tag", "at&t & s&p-500 and/or @user #tag"),
    ("see http://example.com/a?b=c. or me@x.com.", "see http://example.com/a?b=c or me@x.com"),
    (":) :-( ;) ^_^ :D", ":-rrb- :--lrb- ;-rrb- ^_^ :d"),
    ("a 😀 dog", "a dog"),                                                  # beyond the BMP: dropped
    ("café Straße Ελλάδα ΟΔΟΣ Москва 東京", "café straße ελλάδα οδος москва 東京"),
    ("İstanbul", "i\u0307stanbul"),
    ("colour harbour", "colour harbour"),                                  # not americanized
    ("non\u00a0breaking  \ttabs \u3000 here ", "non breaking tabs here"),
    ("", ""),
    ("- -- ... ; : , ` '' \"", ""),                                         # punctuation only
    (".,;:!?", "!?"),                                                       # "!?" is not in the list
    ("\u00a0google.com", "\u00a0google.com"),
    ("no. 5 and fig. 3 but no.", "no. 5 and fig. 3 but no"),
    ("cont'd. y'all c++ C#", "cont'd. y' all c++ c#"),
    ("<b>bold</b> x < y", "<b> bold </b> x < y"),
]


@pytest.mark.parametrize("caption, expected", HANDWORKED)
def test_handworked(caption, expected):
    assert ptb_tokenize(caption) == expected


# Long runs, also worked out against the jar.
LONG_HANDWORKED = [
    ("ab'cd-ef.gh,ij" * 300, "ab cd-ef gh " + "ijab cd-ef gh " * 299 + "ij"),
    ("x-1." * 1000, " ".join(["x-1"] * 1000)),
    ("e.g.9" * 600, "e.g. " + "9e g. " * 599 + "9"),
    ("e.g.9" * 600 + ".jpg ", ("e.g.9" * 600 + ".jpg").lower()),
    ("ab@." * 750, " ".join(["ab @"] * 750)),
    ("a%b%" * 750 + "X.com", "a % b % " * 750 + "x.com"),
    ("ΑΣ-" * 1000, "ασ-" * 999 + "ας"),                        # one word: its last sigma is final
]


@pytest.mark.parametrize("caption, expected", LONG_HANDWORKED, ids=[repr(c[:12]) for c, _ in LONG_HANDWORKED])
def test_long_runs_handworked(caption, expected):
    assert ptb_tokenize(caption) == expected


def test_tokenize_all_maps_tokenize():
    captions = [*TRICKY, *realistic_pairs(50, seed=1)[0]]
    assert ptb_tokenize_all(captions) == [ptb_tokenize(c) for c in captions]
    assert ptb_tokenize_all(iter(captions[:5])) == [ptb_tokenize(c) for c in captions[:5]]
    assert ptb_tokenize_all([]) == []
