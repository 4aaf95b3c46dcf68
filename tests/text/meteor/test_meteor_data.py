"""Meteor's data: a clear error naming the missing file, the on-disk cache (a second process reads
it; a damaged file is rebuilt, not trusted), and input checks. A tiny jar and paraphrase table
made here stand in for pycocoevalcap's, so nothing needs Java or the real 60 MB table."""
import gzip
import pickle
import zipfile

import pytest

from opik_metrics.core.inputs import MetricInputError
from opik_metrics.text.meteor import MeteorDataError, MeteorScorer, load_tables
from opik_metrics.text.meteor import cache, resources
from opik_metrics.text.meteor.paraphrases import ParaphraseTable

ENTRIES = {
    "function/english.words": "the\na\nis\nof\nin\n",
    "synonym/english.synsets": ("car\n02958343\nautomobile\n02958343\nmachine\n02958343 03699975\n"
                                "dog\n02084071\nmouse\n02330245\n"),
    "synonym/english.exceptions": "mouse\nmice\n",
    "synonym/english.relations": "",
    "nonbreaking/english.prefixes": "# comment\nMr\nNo #NUMERIC_ONLY#\n",
}
PARAPHRASES = "0.5\nin front of\nbefore\n0.2\nbefore\nin front of\n0.1\nbig\nlarge\n"


def make_data(folder, paraphrases=PARAPHRASES):
    folder.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(folder / "meteor-1.5.jar", "w") as jar:
        for name, text in ENTRIES.items():
            jar.writestr(name, text)
    (folder / "data").mkdir(exist_ok=True)
    with gzip.open(folder / "data" / "paraphrase-en.gz", "wt", encoding="utf-8") as out:
        out.write(paraphrases)
    return folder


@pytest.fixture
def data(tmp_path, monkeypatch):
    monkeypatch.setenv("OPIK_METRICS_METEOR_CACHE", str(tmp_path / "cache"))
    resources.unload()
    yield make_data(tmp_path / "meteor")
    resources.unload()


def test_an_empty_folder_names_the_missing_jar_and_how_to_get_it(tmp_path):
    with pytest.raises(MeteorDataError, match=r"meteor-1\.5\.jar does not exist.*pip install 'opik-metrics\[meteor\]'"):
        MeteorScorer(data=tmp_path)


def test_a_missing_paraphrase_table_is_named(data):
    (data / "data" / "paraphrase-en.gz").unlink()
    with pytest.raises(MeteorDataError, match=r"paraphrase table is missing: .*paraphrase-en\.gz"):
        MeteorScorer(data=data)


def test_a_jar_without_the_word_lists_is_refused(data):
    with zipfile.ZipFile(data / "meteor-1.5.jar", "w") as jar:
        jar.writestr("other.txt", "")
    with pytest.raises(MeteorDataError, match="has no function/english.words"):
        MeteorScorer(data=data)


def test_the_small_tables_align_as_the_real_ones_would(data):
    scorer = MeteorScorer(data=data)
    seg = scorer.score("he is in front of the house", ["he is before the house"])
    assert seg.matches == (4, 0, 0, 3) and seg.chunks == 1              # "in front of" ~ "before"
    assert scorer.score("the mice", ["the mouse"]).matches == (1, 0, 1, 0)    # synonym via an exception


def _reads(monkeypatch):
    calls = []
    original = ParaphraseTable.read

    def counting(path):
        calls.append(path)
        return original(path)
    monkeypatch.setattr(ParaphraseTable, "read", staticmethod(counting))
    return calls


def test_a_second_process_reads_the_cache(data, monkeypatch, tmp_path):
    calls = _reads(monkeypatch)
    first = load_tables(data)
    assert len(calls) == 1
    files = list((tmp_path / "cache").glob("meteor-en-*.bin"))
    assert len(files) == 1
    resources.unload()                               # as a new process would start
    second = load_tables(data)
    assert len(calls) == 1                           # not parsed again
    assert second is not first and second.paraphrases.ids == first.paraphrases.ids
    assert load_tables(data) is second               # and kept in memory


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_damaged_cache_is_rebuilt(data, monkeypatch, tmp_path, capsys, damage):
    load_tables(data)
    (path,) = (tmp_path / "cache").glob("meteor-en-*.bin")
    blob = bytearray(path.read_bytes())
    if damage == "flip":
        blob[-10] ^= 0xFF
    elif damage == "truncate":
        del blob[len(blob) // 2:]
    else:
        blob = bytearray(b"not a cache at all")
    path.write_bytes(bytes(blob))
    resources.unload()
    capsys.readouterr()
    calls = _reads(monkeypatch)
    tables = load_tables(data)
    assert len(calls) == 1                           # rebuilt from the sources, and said so
    expected = {"flip": "damaged (wrong checksum)", "truncate": "truncated", "garbage": "not a METEOR table cache"}[damage]
    assert f"{path} is {expected}" in capsys.readouterr().err
    assert "in front of" in tables.paraphrases.ids
    assert cache.read(path, resources.MeteorDataPaths.locate(data).identity()) is not None   # and rewritten


def test_changed_sources_are_parsed_again(data, monkeypatch):
    load_tables(data)
    make_data(data, PARAPHRASES + "0.3\nsmall\nlittle\n")
    resources.unload()
    calls = _reads(monkeypatch)
    assert "little" in load_tables(data).paraphrases.ids
    assert len(calls) == 1


def test_a_pickled_scorer_reloads_its_tables_from_the_same_files(data):
    scorer = MeteorScorer(data=data)
    copy = pickle.loads(pickle.dumps(scorer))
    assert len(pickle.dumps(scorer)) < 2000
    assert copy.tables.paths == scorer.tables.paths
    assert copy.score("the car", ["the machine"]) == scorer.score("the car", ["the machine"])


def test_inputs_are_checked_with_their_place_named(data):
    scorer = MeteorScorer(data=data)
    with pytest.raises(TypeError, match="output must be a str, got int"):
        scorer.score(3, ["a"])
    with pytest.raises(TypeError, match=r"references\[1\] must be a str, got NoneType"):
        scorer.score("a", ["a", None])
    with pytest.raises(ValueError, match="references is empty"):
        scorer.score("a", [])
    with pytest.raises(TypeError, match=r"references\[1\]\[0\] must be a str, got int"):
        scorer.score_batch(["a", "b"], [["a"], [7]])
    with pytest.raises(ValueError, match="2 outputs but 1 references"):
        scorer.score_batch(["a", "b"], [["a"]])
    with pytest.raises(MetricInputError, match=r"outputs\[0\]: lone surrogate"):
        scorer.score_batch(["\ud83d"], [["a"]])
    with pytest.raises(ValueError, match="at least one segment"):
        scorer.corpus_score([])
    assert scorer.score("a dog", "a dog").score == pytest.approx(1.0)          # a lone str is one reference


def test_building_the_cache_is_said_on_stderr(data, tmp_path, capsys):
    load_tables(data)
    err = capsys.readouterr().err
    assert "building METEOR's tables once (about" in err and str(tmp_path / "cache") in err
    resources.unload()
    load_tables(data)                                # from the cache: nothing said
    assert capsys.readouterr().err == ""


def test_two_installs_keep_one_cache(data, tmp_path, monkeypatch):
    """The same files installed twice (other paths, other modification times) share one cache; other
    sources replace it, so one cache file remains; files that are not ours are never touched."""
    folder = tmp_path / "cache"
    load_tables(data)
    (first,) = folder.glob("meteor-en-*.bin")
    foreign = [folder / "notes.txt", folder / "meteor-en-mine.bin", folder / "meteor-en-v1-0123456789abcdef.bin.x.tmp"]
    for path in foreign:
        path.write_text("not ours to remove")
    (folder / "meteor-en-v1-0123456789abcdef.bin").write_bytes(b"an old format's cache")
    second_install = make_data(tmp_path / "other-venv")          # same content, later mtimes
    resources.unload()
    calls = _reads(monkeypatch)
    load_tables(second_install)
    assert calls == []                                           # the same cache serves it
    changed = make_data(tmp_path / "third-venv", PARAPHRASES + "0.3\nsmall\nlittle\n")
    resources.unload()
    assert "little" in load_tables(changed).paraphrases.ids
    assert len(calls) == 1
    (kept,) = folder.glob("meteor-en-v*-*.bin")                  # the old one and the old format: gone
    assert kept != first
    assert all(path.exists() for path in foreign)                # a recent .tmp may be another writer's


def test_an_abandoned_half_written_cache_is_removed(data, tmp_path):
    import os
    folder = tmp_path / "cache"
    folder.mkdir(parents=True)
    old = folder / "meteor-en-v2-0123456789abcdef.bin.abandoned.tmp"
    old.write_bytes(b"half")
    os.utime(old, (1, 1))
    load_tables(data)
    assert not old.exists()


@pytest.mark.parametrize("what", ["paraphrase", "jar"])
def test_damaged_data_is_one_line_naming_the_file_and_the_fix(data, what):
    path = data / "data" / "paraphrase-en.gz" if what == "paraphrase" else data / "meteor-1.5.jar"
    blob = path.read_bytes()
    path.write_bytes(blob[:len(blob) * 2 // 3])                   # a truncated download or copy
    with pytest.raises(MeteorDataError) as caught:
        MeteorScorer(data=data)
    message = str(caught.value)
    assert "\n" not in message and str(path.resolve()) in message and "is damaged" in message
    assert "pip install --force-reinstall pycocoevalcap" in message
