"""ROUGE-1.5.5's ``-m`` equals the perl script's: word by word (the script's own ``stem`` and ``MorphStem``
subs, cut from ROUGE-1.5.5.pl and run by perl on a large real-English vocabulary) and score by score (the
script run with ``-m`` on texts of real English words, with its WordNet exception database and with an
empty one). The databases are built by the release's ``buildExeptionDB.pl`` (tests/text/rouge155_oracle.py).
"""
from __future__ import annotations

import collections
import functools
import importlib.util
import random
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

try:
    from tests.corpus import realistic_pairs
except ModuleNotFoundError:  # plain `pytest` from elsewhere: put the repository root on the path
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    from tests.corpus import realistic_pairs

from opik_metrics.text.rouge.scorer import RougeScorer
from opik_metrics.text.tokenizers.rouge155_porter import script_porter_stem
from opik_metrics.text.tokenizers.rouge155_stemmer import Rouge155Stemmer
from opik_metrics.text.tokenizers.wordnet_exceptions import EXCEPTION_FILES
from tests.text.rouge155_oracle import EXCEPTION_LISTS, data_dir, release_dir, require_rouge155, script_rouge

TYPES = ["rouge1", "rouge2", "rougeLsum", "rougeW", "rougeSU4"]
# Words the script's -m stems unlike nltk's default Porter, or looks up in the exception lists.
_NAMED = ["used", "they", "says", "days", "went", "children", "better", "best", "mice", "mouse", "saying",
          "studies", "agreement", "fundamental", "went", "ran", "men", "women", "feet", "geese", "knew"]
_WORD = re.compile(r"[a-z0-9]+")
# The script's subs, cut from its text and run as they are: stem and initialise (Porter), MorphStem
# (the exception lookup) on a tied database; one word a line in, its stem out.
_PERL = r'''
use DB_File;
my ($script, $database) = @ARGV;
open(my $fh, "<", $script) or die "cannot read $script";
my $source = do { local $/; <$fh> };
my ($porter) = $source =~ /(local %step2list;.*?\n\}\n)\s*sub initialise/s or die "no sub stem";
my ($initialise) = $source =~ /(sub initialise \{.*?\n\}\n)/s or die "no sub initialise";
my ($morph) = $source =~ /(sub MorphStem \{.*?\n\}\n)/s or die "no sub MorphStem";
eval $porter; die $@ if $@;
eval $initialise; die $@ if $@;
eval $morph; die $@ if $@;
initialise();
if ($database ne "") {
  tie %exceptiondb, 'DB_File', $database, O_RDONLY, 0440, $DB_HASH or die "cannot open $database";
}
while (my $w = <STDIN>) { chomp $w; print(($database ne "" ? MorphStem($w) : stem($w)), "\n"); }
'''


@pytest.fixture(scope="module", autouse=True)
def _script():
    require_rouge155()


def _perl_stems(words: list, database: str) -> list:
    """The script's ``MorphStem`` of each word with ``database`` tied, or its ``stem`` when it is ""."""
    script = str(release_dir() / "ROUGE-1.5.5.pl")
    done = subprocess.run(["perl", "-e", _PERL, script, database], input="\n".join(words) + "\n",
                          capture_output=True, text=True, check=True)
    stems = done.stdout.split("\n")[:-1]
    assert len(stems) == len(words)
    return stems


@functools.lru_cache(maxsize=1)
def _exception_lines() -> tuple:
    """(form, first base) of each line of the release's four lists."""
    lines = []
    for name in EXCEPTION_LISTS:
        for line in (release_dir() / "data" / "WordNet-2.0-Exceptions" / name).read_text("ascii").splitlines():
            fields = line.split()
            lines.append((fields[0], fields[1]))
    return tuple(lines)


@functools.lru_cache(maxsize=1)
def _prose_words() -> collections.Counter:
    """Words of real English prose, counted: the Python docs' topics (stdlib ``pydoc_data``), the
    ROUGE release's README, and the test corpus' vocabulary."""
    texts = [(release_dir() / "README.txt").read_text("latin-1"), " ".join(realistic_pairs(200, seed=1)[0])]
    try:
        from pydoc_data.topics import topics
        texts += topics.values()
    except ImportError:  # a Python without its docs' topics: the other texts still serve
        pass
    return collections.Counter(_WORD.findall("\n".join(texts).lower()))


@functools.lru_cache(maxsize=1)
def _vocabulary() -> tuple:
    """Every word (the script's tokens: ``[a-z0-9]`` runs) of the exception lists, the prose above and,
    when pycocoevalcap (a dev dependency) is installed, Meteor's WordNet synonym and function-word
    lists: a large real English vocabulary, inflected forms included (without Meteor's: ~13,000 words)."""
    words = set(_prose_words()) | set(_NAMED)
    for form, base in _exception_lines():
        words.update(_WORD.findall(form + " " + base))
    spec = importlib.util.find_spec("pycocoevalcap.meteor.meteor") if importlib.util.find_spec("pycocoevalcap") else None
    if spec is not None and spec.origin:
        with zipfile.ZipFile(Path(spec.origin).with_name("meteor-1.5.jar")) as archive:
            for entry in ("synonym/english.synsets", "synonym/english.exceptions", "function/english.words"):
                words.update(_WORD.findall(archive.read(entry).decode("latin-1").lower()))
    return tuple(sorted(words))


def test_the_shipped_lists_are_the_releases_files():
    folder = release_dir() / "data" / "WordNet-2.0-Exceptions"
    assert list(EXCEPTION_FILES) == list(EXCEPTION_LISTS)
    for name, text in EXCEPTION_FILES.items():
        assert text.encode("ascii") == (folder / name).read_bytes(), name


def test_porter_equals_the_scripts_stem_on_a_large_vocabulary():
    words = list(_vocabulary())
    assert len(words) > 10_000 and {"used", "they", "says", "days", "agreement", "fundamental"} <= set(words)
    expected = _perl_stems(words, "")
    wrong = [(w, want, script_porter_stem(w)) for w, want in zip(words, expected) if script_porter_stem(w) != want]
    assert not wrong, (len(wrong), wrong[:20])


@pytest.mark.parametrize("exceptions, kind", [(True, "wordnet+porter"), (False, "porter")])
def test_each_word_is_stemmed_as_the_scripts_morph_stem(exceptions, kind):
    """With the database built from the lists, and with the empty one."""
    words = [w for w in _vocabulary() if len(w) > 3]              # what the script hands to MorphStem
    expected = _perl_stems(words, str(data_dir(exceptions) / "WordNet-2.0.exc.db"))
    stem = Rouge155Stemmer(kind)
    wrong = [(w, want, stem(w)) for w, want in zip(words, expected) if stem(w) != want]
    assert not wrong, (len(wrong), wrong[:20])
    if exceptions:   # the database was in use: words the lists hold came back as their base
        assert [expected[words.index(w)] for w in ("went", "children", "better", "mice")] == [
            "go", "child", "well", "mouse"]


# --- whole texts: the script run with -m --------------------------------------------------------------


def _stemming_items(count: int, seed: int) -> list:
    """(prediction, references) of real English words where stemming decides matches: words of the
    exception lists (a form in one text, its base in the other), of the prose above, and inflected
    variants; several sentences a text (one a line), one to three references."""
    rng = random.Random(seed)
    pairs = [(f, b) for f, b in _exception_lines() if re.fullmatch(r"[a-z]+", f + b)]
    prose = _prose_words()
    common = [w for w, _ in prose.most_common(3000) if w.isalpha()]
    weights = [prose[w] for w in common]

    def word() -> str:
        roll = rng.random()
        if roll < 0.25:
            return rng.choice(rng.choice(pairs))
        if roll < 0.35:
            return rng.choice(_NAMED)
        return rng.choices(common, weights)[0]

    def variant(w: str) -> str:
        roll = rng.random()
        forms = [b for f, b in pairs if f == w] + [f for f, b in pairs if b == w]
        if forms and roll < 0.6:
            return rng.choice(forms)
        if roll < 0.8:
            return w + rng.choice(["s", "ed", "ing", "ly", "es", "ment", "ness", "al"])
        return word()

    def lines(words: list) -> str:
        out, start = [], 0
        while start < len(words):
            step = rng.randint(4, 14)
            out.append(" ".join(words[start:start + step]) + rng.choice([".", ".", "!", ","]))
            start += step
        return "\n".join(out)

    items = []
    for _ in range(count):
        prediction = [word() for _ in range(rng.randint(5, 45))]
        references = []
        for _ in range(rng.choice([1, 1, 2, 3])):
            reference = [variant(w) if rng.random() < 0.35 else w for w in prediction if rng.random() > 0.1]
            reference += [word() for _ in range(rng.randint(0, 6))]
            references.append(lines(reference or [word()]))
        items.append((lines(prediction), references))
    return items


@pytest.mark.parametrize("exceptions, options", [
    (True, {"multi_reference": "average"}),
    (True, {"multi_reference": "best"}),
    (True, {"multi_reference": "average", "remove_stopwords": True}),
    (False, {"multi_reference": "average"}),
    (False, {"multi_reference": "best"}),
], ids=["lists-A", "lists-B", "lists-A-s", "empty-A", "empty-B"])
def test_stemmed_scores_equal_the_scripts_m(exceptions, options):
    items = _stemming_items(150, seed=1000 + 10 * exceptions + len(options) + (options["multi_reference"] == "best"))
    kind = "wordnet+porter" if exceptions else "porter"
    tokenize = RougeScorer(rouge155=True, use_stemmer=True, rouge155_stemmer=kind, **options).tokenizer
    items = [(p, refs) for p, refs in items if all(tokenize(r) for r in refs)]   # the script dies on an empty one
    expected = script_rouge(items, TYPES, use_stemmer=True, exceptions=exceptions, **options)
    ours = RougeScorer(TYPES, rouge155=True, use_stemmer=True, rouge155_stemmer=kind, **options)
    other = RougeScorer(TYPES, rouge155=True, use_stemmer=True,
                        rouge155_stemmer="porter" if exceptions else "wordnet+porter", **options)
    differ = 0
    for (prediction, references), want in zip(items, expected):
        got = ours.score(prediction, references)
        for rouge_type in TYPES:
            assert tuple(got[rouge_type]) == want[rouge_type], (rouge_type, prediction, references)
        differ += other.score(prediction, references) != got
    # the set can tell the two stemmers apart: the exception lists change most items' scores
    assert len(items) > 140 and differ > len(items) // 2, differ
