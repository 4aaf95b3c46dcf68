"""ROUGE-1.5.5's ``-m``, worked by hand from the script's rules and the WordNet 2.0 lists (never from the
code under test): the exception lookup, the script's Porter stemmer rule by rule, the option and the
signature. No perl needed (tests/text/test_rouge155_stemmer_oracle.py runs the script)."""
from __future__ import annotations

import itertools

import pytest

from opik_metrics import ROUGE
from opik_metrics.text.rouge.scorer import RougeScorer
from opik_metrics.text.tokenizers.rouge155_porter import script_porter_stem
from opik_metrics.text.tokenizers.rouge155_stemmer import Rouge155Stemmer, exception_database
from opik_metrics.text.tokenizers.wordnet_exceptions import EXCEPTION_FILES

# --- the exception lookup -------------------------------------------------------------------------------


@pytest.mark.parametrize("word, expected", [
    ("went", "go"),              # verb.exc "went go"
    ("children", "child"),       # noun.exc "children child"
    ("mice", "mouse"),           # noun.exc "mice mouse": the base is returned as it is, not stemmed
    ("axes", "ax"),              # noun.exc "axes ax axis": the first base
    ("comics", "comic_strip"),   # noun.exc "comics comic_strip comic": the first base, underscore and all
    ("better", "well"),          # adj.exc "better good well", adv.exc "better well": adv.exc is read later
    ("best", "well"),            # adj.exc "best good", adv.exc "best well"
    ("testes", "testes"),        # noun.exc "testes testis", verb.exc "testes testes": verb.exc is later
    ("offer", "offer"),          # adj.exc "offer off" then "offer offer": the later line
])
def test_words_in_the_exception_lists(word, expected):
    assert Rouge155Stemmer()(word) == expected


def test_a_base_from_the_lists_and_the_stem_of_that_base_can_differ():
    # mice -> mouse (the list), but mouse itself is stemmed: step 5 drops the e of "mouse" since
    # "mous" has m = 1 and is not consonant-vowel-consonant (o, then u) -> mous. So the script does
    # not match "mice" with "mouse".
    stem = Rouge155Stemmer()
    assert (stem("mice"), stem("mouse")) == ("mouse", "mous")


def test_without_the_lists_every_word_is_porter_stemmed():
    stem = Rouge155Stemmer("porter")
    # went: no rule applies (step 4's -ent needs m > 1 in "w"); children: no rule; better: step 4's -er
    # needs m > 1 in "bett" (m = 1); mice: step 5's -e needs m > 1 or m = 1 ("mic" is CVC: kept).
    assert [stem(w) for w in ("went", "children", "better", "mice")] == ["went", "children", "better", "mice"]


def test_the_database_reads_lines_as_the_build_script():
    # split(/\s+/): field 1 under field 0, further fields ignored, a later line replaces an earlier one,
    # a leading blank gives an empty key, a line of one field stores "".
    lists = {"a.exc": "went go\naxes ax axis\nlone\n", "b.exc": "went gone\n lead y\nlast\tone"}
    assert exception_database(lists) == {"went": "gone", "axes": "ax", "lone": "", "": "lead", "last": "one"}


def test_only_three_words_depend_on_the_order_the_lists_are_read():
    # Two lists give best and better (adj.exc good, adv.exc well), testes (noun.exc testis, verb.exc
    # testes) and is (noun.exc is, verb.exc be) different bases: ROUGE-1.5.5's build script reads them in
    # readdir order, so those are what a database built elsewhere may hold differently; "is" has 2
    # letters and is never looked up. Every other entry is the same in all 24 orders.
    databases = [exception_database({name: EXCEPTION_FILES[name] for name in order})
                 for order in itertools.permutations(EXCEPTION_FILES)]
    differing = {word for word in databases[0] if len({db[word] for db in databases}) > 1}
    assert differing == {"best", "better", "testes", "is"}
    assert list(EXCEPTION_FILES) == ["adj.exc", "adv.exc", "noun.exc", "verb.exc"]


def test_the_lists_are_wordnets_four_files():
    lines = {name: text.count("\n") for name, text in EXCEPTION_FILES.items()}
    assert lines == {"adj.exc": 1490, "adv.exc": 7, "noun.exc": 2041, "verb.exc": 2401}
    assert "went go\n" in EXCEPTION_FILES["verb.exc"] and "children child\n" in EXCEPTION_FILES["noun.exc"]


# --- the script's Porter stemmer, rule by rule --------------------------------------------------------


@pytest.mark.parametrize("word, expected", [
    # step 1a "([^s])s$" -> "say"; step 1c: "y" after "sa", which has a vowel -> "sai" (nltk's default: say)
    ("says", "sai"),
    ("days", "dai"),
    # step 1c: "they" -> "thei" (nltk's default keeps y after a vowel: they)
    ("they", "thei"),
    # step 1b: "ed" off, "us" has a vowel; not at/bl/iz, no double consonant, "us" does not start with a
    # consonant (the CVC test is on the whole stem) -> "us" (nltk's default: use)
    ("used", "us"),
    # step 1b: "ing" off -> "hopp"; double consonant -> "hop"
    ("hopping", "hop"),
    # step 1b: "ing" off -> "fil": consonant, vowel, consonant -> add e -> "file"; step 5: "fil" has m = 1
    # and is CVC: the e stays
    ("filing", "file"),
    # step 1a "(ss|i)es$" -> "studi"
    ("studies", "studi"),
    # step 4 as the script changed it, three rules in a row: -al off ("fundament", m = 3), then -ment
    # ("funda", m = 1: kept), then -ent ("fundam", m = 2: off)
    ("fundamental", "fundam"),
    # -ement: "agre" has m = 1 (kept); -ment: "agree" m = 1 (kept); -ent: "agreem" m = 2 -> off.
    # nltk's ORIGINAL_ALGORITHM stops at the first matching suffix: agreement
    ("agreement", "agreem"),
    # step 2 -ational -> -ate ("rel" + "ate"); step 4 -ate needs m > 1 in "rel" (m = 1): kept;
    # step 5: "relat" + e: m("relat") = 2 -> the e goes
    ("relational", "relat"),
    # an initial y is a consonant (Y) throughout and lowercased at the end: "Yell" + ing; ll is not a
    # double that 1b removes; step 5's ll rule needs m > 1 ("Yell": m = 1)
    ("yelling", "yell"),
    # step 1c -> "ecologi"; step 2's departure -logi -> -log, as m("eco") = 1 > 0 (biology stays
    # biologi: m("bio") = 0)
    ("ecology", "ecolog"),
    ("biology", "biologi"),
])
def test_porter_rules(word, expected):
    assert script_porter_stem(word) == expected
    assert Rouge155Stemmer("porter")(word) == expected
    assert Rouge155Stemmer()(word) == expected           # none of them is in the exception lists


# --- in the tokenizer and the scorer ------------------------------------------------------------------


def test_words_of_up_to_3_characters_are_not_looked_up():
    # verb.exc has "ran run" and noun.exc "men man", but the script stems only words longer than 3.
    tokenize = RougeScorer(rouge155=True, use_stemmer=True).tokenizer
    assert tokenize("Men ran; the men went") == ["men", "ran", "the", "men", "go"]


def test_scores_with_and_without_the_lists():
    # prediction "children went", reference "child go": with the lists both tokens match -> 1.0; without
    # them (children, went vs child, go: no rule makes them equal) nothing matches -> 0.
    with_lists = RougeScorer(["rouge1"], rouge155=True, use_stemmer=True)
    without = RougeScorer(["rouge1"], rouge155=True, use_stemmer=True, rouge155_stemmer="porter")
    assert tuple(with_lists.score("children went", "child go")["rouge1"]) == (1.0, 1.0, 1.0)
    assert tuple(without.score("children went", "child go")["rouge1"]) == (0.0, 0.0, 0.0)
    # "says" and "say": sai vs say (3 letters, not stemmed): no match in either; the default mode's nltk
    # Porter stems both to say.
    assert with_lists.score("says", "say")["rouge1"].recall == 0.0
    assert RougeScorer(["rouge1"], use_stemmer=True).score("says", "say")["rouge1"].recall == 1.0


def test_signature_names_the_stemmer():
    def stem(**options):
        return RougeScorer(["rouge1"], **options).signature().fields["stem"]

    assert stem(rouge155=True, use_stemmer=True) == "wordnet+porter"
    assert stem(rouge155=True, use_stemmer=True, rouge155_stemmer="wordnet+porter") == "wordnet+porter"
    assert stem(rouge155=True, use_stemmer=True, rouge155_stemmer="porter") == "porter"
    assert stem(rouge155=True) == "no"
    assert stem(use_stemmer=True) == "yes"                                   # the default mode: nltk's Porter
    assert stem(rouge155=True, use_stemmer=True, tokenizer="unicode") == "yes"   # not the script's tokens
    signature = ROUGE(rouge155=True, use_stemmer=True, track=False).signature
    assert "|stem:wordnet+porter|" in signature and "stem:yes" not in signature


@pytest.mark.parametrize("options, message", [
    ({"rouge155": True, "use_stemmer": True, "rouge155_stemmer": "wordnet"},
     r"rouge155_stemmer must be one of 'wordnet\+porter', 'porter', got 'wordnet'"),
    ({"rouge155": True, "use_stemmer": True, "rouge155_stemmer": True}, r"rouge155_stemmer must be one of"),
    ({"rouge155_stemmer": "porter", "use_stemmer": True}, r"rouge155_stemmer='porter' needs rouge155=True"),
    ({"rouge155": True, "rouge155_stemmer": "porter"}, r"needs rouge155=True, use_stemmer=True"),
    ({"rouge155": True, "use_stemmer": True, "tokenizer": "unicode", "rouge155_stemmer": "porter"},
     r"tokenizer='default'"),
])
def test_bad_stemmer_options_name_the_field(options, message):
    with pytest.raises(ValueError, match=message):
        RougeScorer(["rouge1"], **options)
    with pytest.raises(ValueError, match=message):
        ROUGE(rouge_types=["rouge1"], track=False, **options)
