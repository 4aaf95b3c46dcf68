"""MeteorScorer equals pycocoevalcap's ``Meteor`` (meteor-1.5.jar, ``-l en -norm``) per segment and
for the corpus, to 1e-6, on generated captions that reach every module; and its sufficient
statistics equal the jar's, number for number. One JVM serves the whole module."""
import shutil

import pytest

from opik_metrics.text.meteor import MeteorDataError, MeteorScorer
from tests.mixed_scripts import PAIRS as MIXED_SCRIPTS
from tests.text.meteor.meteor_cases import paraphrase_pairs, segments, synonym_pairs

TOL = 1e-6

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="java not found on PATH: the oracle is a jar")


@pytest.fixture(scope="module")
def jar():
    """pycocoevalcap's Meteor: one JVM (and one load of its paraphrase table) for the module."""
    pytest.importorskip("pycocoevalcap")
    from pycocoevalcap.meteor.meteor import Meteor
    meteor = Meteor()
    yield meteor
    del meteor


@pytest.fixture(scope="module")
def scorer():
    try:
        return MeteorScorer()
    except MeteorDataError as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def pairs(scorer):
    """WordNet synonym pairs and table paraphrase pairs to plant in the captions."""
    return synonym_pairs(str(scorer.tables.paths.jar)), paraphrase_pairs(scorer.tables, 2000, seed=5)


@pytest.fixture(scope="module")
def jar_stdio(scorer):
    """The jar driven through its own command line (``-stdio``, as pycocoevalcap starts it): its
    ``SCORE`` answer is the segment's statistics, which pycocoevalcap does not hand back."""
    import subprocess
    jar_path = scorer.tables.paths.jar
    proc = subprocess.Popen(["java", "-jar", "-Xmx2G", str(jar_path), "-", "-", "-stdio", "-l", "en", "-norm"],
                            cwd=str(jar_path.parent), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, text=True, encoding="utf-8")
    yield proc
    proc.stdin.close()
    proc.kill()
    proc.wait()


def _jar_statistics(jar_stdio, output, references):
    """The jar's SCORE answer for one segment (the line pycocoevalcap sends, the same clean-up)."""
    output = output.replace("|||", "").replace("  ", " ")
    jar_stdio.stdin.write(" ||| ".join(("SCORE", " ||| ".join(references), output)) + "\n")
    jar_stdio.stdin.flush()
    return jar_stdio.stdout.readline().strip()


def _jar_scores(jar, outputs, references):
    gts = {k: refs for k, refs in enumerate(references)}
    res = {k: [out] for k, out in enumerate(outputs)}
    return jar.compute_score(gts, res)


@pytest.mark.parametrize("count, seed", [(900, 1), (900, 2), (900, 3)])
def test_generated_captions_equal_the_jar(jar, scorer, pairs, count, seed):
    outputs, references = segments(count, seed, *pairs)
    final, per_segment = _jar_scores(jar, outputs, references)
    ours = scorer.score_batch(outputs, references)
    assert [s.score for s in ours] == pytest.approx(per_segment, abs=TOL)
    assert scorer.corpus_score(ours) == pytest.approx(final, abs=TOL)
    # the generated sets do reach every module
    assert all(sum(s.matches[m] for s in ours) > 0 for m in range(4))


def test_statistics_equal_the_jars_number_for_number(jar_stdio, scorer, pairs):
    outputs, references = segments(400, 11, *pairs)
    ours = scorer.score_batch(outputs, references)
    jar_lines = [_jar_statistics(jar_stdio, out, refs) for out, refs in zip(outputs, references)]
    assert [s.statistics.jar_line() for s in ours] == jar_lines


EDGE_CASES = [
    ("", ["a cat on a mat"]),                                   # empty output
    ("a cat", [""]),                                            # empty reference
    ("", [""]),
    ("cat", ["a cat sits on the mat", "cat"]),                  # one word; the best reference is the second
    ("a dog", ["a dog", "a dog"]),                              # a tie keeps the first
    ("car", ["automobile"]),                                    # synonym and paraphrase tie: nothing matched
    ("the the the the", ["the cat the dog the end"]),           # repeats
    ("A Man, riding a HORSE!", ["a man rides a horse ."]),       # case and punctuation
    ("Mr. Smith's café in the U.S.-based Москва ... 3,000 e.g. rock'n'roll", ["mr. smith's cafe in moscow"]),
    ("“quoted” ‘text’ – dash -- here", ['" quoted " \' text \' - dash - here']),
    ("he is in front of the house", ["he is before the house", "he stands before a house"]),
    ("the dogs were running quickly", ["a dog runs fast", "the dog ran quickly"]),
    ("😀 emoji and 日本語 text", ["emoji and text 😀"]),
    ("\x01control\x1f chars", ["control chars"]),
    *((output, [reference]) for output, reference in MIXED_SCRIPTS if output.strip("\x00")),   # scripts, NUL
]


def test_edge_cases_equal_the_jar(jar, jar_stdio, scorer):
    outputs = [o for o, _ in EDGE_CASES]
    references = [r for _, r in EDGE_CASES]
    final, per_segment = _jar_scores(jar, outputs, references)
    ours = scorer.score_batch(outputs, references)
    assert [s.score for s in ours] == pytest.approx(per_segment, abs=TOL)
    assert scorer.corpus_score(ours) == pytest.approx(final, abs=TOL)
    assert [s.statistics.jar_line() for s in ours] == [_jar_statistics(jar_stdio, o, r)
                                                       for o, r in zip(outputs, references)]


def _ambiguous(count, seed, words=60):
    import random
    rng = random.Random(seed)
    small = ["the", "a", "man", "men", "dog", "dogs", "run", "running", "runs", "big", "large", "car",
             "automobile", "in", "front", "of", "before", "is", "on", "street"]
    return [" ".join(rng.choice(small) for _ in range(words)) for _ in range(count)]


def test_pathological_segments_within_the_bound_equal_the_jar(jar_stdio, scorer):
    """Words repeated hundreds of times and long, highly ambiguous sentences: scored within the
    pack's bound on one segment's work (tests/text/meteor/test_meteor_pathological.py checks the
    bound), with the jar's statistics, number for number."""
    outputs = ["dog " * 199 + "dog", "the " * 200, "dogs " * 119 + "dogs", *_ambiguous(30, 1)]
    references = [["dog " * 199 + "dog"], ["a the " * 100], ["dog " * 120 + "cat"],
                  *([r] for r in _ambiguous(30, 2))]
    ours = scorer.score_batch(outputs, references)
    assert [s.statistics.jar_line() for s in ours] == [_jar_statistics(jar_stdio, o, r)
                                                       for o, r in zip(outputs, references)]
