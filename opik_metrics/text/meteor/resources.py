"""Meteor's English data, read from where pycocoevalcap installs it (or from paths given): the
function words, WordNet synonyms and nonbreaking prefixes inside ``meteor-1.5.jar``, and the
paraphrase table ``data/paraphrase-en.gz`` beside it. Nothing is ever downloaded.

Parsed tables are cached on disk (``$OPIK_METRICS_METEOR_CACHE``, else
``$XDG_CACHE_HOME/opik-metrics/meteor``, else ``~/.cache/opik-metrics/meteor``), keyed by the
sources' sizes and modification times and the cache format, and kept per process once loaded."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import threading
import warnings
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Union

import numpy as np

from opik_metrics.text.meteor import cache
from opik_metrics.text.meteor.normalize import parse_prefixes
from opik_metrics.text.meteor.paraphrases import ParaphraseTable
from opik_metrics.text.meteor.synonyms import SynonymTable

CACHE_FORMAT = 1
JAR_NAME = "meteor-1.5.jar"
PARAPHRASE_NAME = "paraphrase-en.gz"
JAR_ENTRIES = {
    "function_words": "function/english.words",
    "synsets": "synonym/english.synsets",
    "exceptions": "synonym/english.exceptions",
    "prefixes": "nonbreaking/english.prefixes",
}
HOW_TO_GET = ("install pycocoevalcap (`pip install pycocoevalcap`, which ships meteor-1.5.jar and "
              "meteor/data/paraphrase-en.gz), or pass their location: MeteorScorer(data=<folder or MeteorDataPaths>)")


class MeteorDataError(FileNotFoundError):
    """Meteor's data (the jar's word lists, the paraphrase table) is missing or unreadable; the
    message names the file and how to get it."""


@dataclass(frozen=True)
class MeteorDataPaths:
    """Where the two source files are: pycocoevalcap's ``meteor-1.5.jar`` and ``paraphrase-en.gz``."""

    jar: Path
    paraphrase: Path

    @classmethod
    def locate(cls, data: "DataSource" = None) -> "MeteorDataPaths":
        """The files of ``data``: None for pycocoevalcap's installed copy, a folder holding
        ``meteor-1.5.jar`` and ``paraphrase-en.gz`` (directly or in ``data/``), or paths as they are."""
        elsewhere = ""                              # the other place looked in, for the error
        if isinstance(data, MeteorDataPaths):
            paths = data
        elif data is None:
            spec = importlib.util.find_spec("pycocoevalcap")
            if spec is None or not spec.submodule_search_locations:
                raise MeteorDataError(f"Meteor's data was not found: pycocoevalcap is not installed; {HOW_TO_GET}")
            folder = Path(list(spec.submodule_search_locations)[0]) / "meteor"
            paths = cls(folder / JAR_NAME, folder / "data" / PARAPHRASE_NAME)
        else:
            folder = Path(data)
            paraphrase = folder / PARAPHRASE_NAME
            if not paraphrase.exists() and (folder / "data" / PARAPHRASE_NAME).exists():
                paraphrase = folder / "data" / PARAPHRASE_NAME
            paths = cls(folder / JAR_NAME, paraphrase)
            elsewhere = f" (nor {folder / 'data' / PARAPHRASE_NAME})"
        if not Path(paths.jar).is_file():
            raise MeteorDataError(f"the Meteor 1.5 jar is missing: {paths.jar} does not exist; {HOW_TO_GET}")
        if not Path(paths.paraphrase).is_file():
            raise MeteorDataError(f"the English paraphrase table is missing: {paths.paraphrase} does not exist"
                                  f"{elsewhere}; {HOW_TO_GET}")
        return cls(Path(paths.jar).resolve(), Path(paths.paraphrase).resolve())

    def identity(self) -> dict:
        """What the cache is keyed by: the format and each source's size and modification time."""
        identity: dict = {"format": CACHE_FORMAT}
        for name, path in (("jar", self.jar), ("paraphrase", self.paraphrase)):
            stat = path.stat()
            identity[name] = [stat.st_size, stat.st_mtime_ns]
        return identity


DataSource = Union[None, str, os.PathLike, MeteorDataPaths]


@dataclass(frozen=True)
class MeteorTables:
    """Everything the aligner and normaliser consult, parsed."""

    paths: MeteorDataPaths
    function_words: frozenset[str]
    prefixes: dict[str, int]
    synonyms: SynonymTable
    paraphrases: ParaphraseTable


def cache_dir() -> Path:
    """The folder of the on-disk cache (see the module docstring)."""
    explicit = os.environ.get("OPIK_METRICS_METEOR_CACHE")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "opik-metrics" / "meteor"


def cache_file(identity: dict, folder: Path | None = None) -> Path:
    """The cache file for sources of this identity."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]
    return (folder or cache_dir()) / f"meteor-en-v{CACHE_FORMAT}-{digest}.bin"


_loaded: dict[tuple, MeteorTables] = {}
_lock = threading.Lock()


def unload() -> None:
    """Forget the tables this process loaded (the next load reads the disk cache again)."""
    with _lock:
        _loaded.clear()


def load_tables(data: DataSource = None, cache_folder: Path | None = None) -> MeteorTables:
    """The parsed tables for ``data`` (see ``MeteorDataPaths.locate``): from this process's memory,
    else from the disk cache, else parsed from the sources (then cached)."""
    paths = MeteorDataPaths.locate(data)
    identity = paths.identity()
    key = (str(paths.jar), str(paths.paraphrase), json.dumps(identity, sort_keys=True))
    with _lock:
        tables = _loaded.get(key)
        if tables is None:
            tables = _load(paths, identity, cache_file(identity, cache_folder))
            _loaded.clear()                     # one set of tables per process is plenty
            _loaded[key] = tables
        return tables


def _load(paths: MeteorDataPaths, identity: dict, where: Path) -> MeteorTables:
    sections = cache.read(where, identity)
    if sections is not None:
        try:
            return _tables(paths, sections)
        except (KeyError, IndexError, ValueError, TypeError):
            pass                                # a damaged cache: rebuilt from the sources below
    sections = _parse_sources(paths)
    try:
        cache.write(where, identity, sections)
    except OSError as exc:
        warnings.warn(f"Meteor tables not cached ({where}: {exc}); the next process will parse them again",
                      RuntimeWarning, stacklevel=4)
    return _tables(paths, sections)


def _tables(paths: MeteorDataPaths, sections: dict[str, bytes | np.ndarray]) -> MeteorTables:
    """The tables from the cache's sections."""
    def text(name: str) -> str:
        value = sections[name]
        if not isinstance(value, bytes):
            raise TypeError(f"section {name} is not text")
        return value.decode("utf-8")

    def numbers(name: str) -> np.ndarray:
        value = sections[name]
        if not isinstance(value, np.ndarray):
            raise TypeError(f"section {name} is not an array")
        return value

    paraphrases = ParaphraseTable(text("phrases").split("\n"), numbers("offsets"), numbers("targets"),
                                  int(numbers("max_length")[0]))
    return MeteorTables(
        paths=paths,
        function_words=frozenset(_lines(text("function_words"))),
        prefixes=parse_prefixes(text("prefixes")),
        synonyms=SynonymTable(text("synsets"), text("exceptions")),
        paraphrases=paraphrases,
    )


def _parse_sources(paths: MeteorDataPaths) -> dict[str, bytes | np.ndarray]:
    """The sections of the cache, from the jar and the paraphrase table."""
    sections: dict[str, bytes | np.ndarray] = {}
    try:
        with zipfile.ZipFile(paths.jar) as jar:
            names = set(jar.namelist())
            for name, entry in JAR_ENTRIES.items():
                if entry in names:
                    sections[name] = jar.read(entry)
    except (zipfile.BadZipFile, OSError, zlib.error) as exc:
        raise MeteorDataError(f"the Meteor 1.5 jar cannot be read ({paths.jar}: {exc}); {HOW_TO_GET}") from exc
    for name, entry in JAR_ENTRIES.items():
        if name not in sections:
            raise MeteorDataError(f"{paths.jar} has no {entry}: it is not the Meteor 1.5 jar; {HOW_TO_GET}")
    try:
        phrases, offsets, targets, max_length = ParaphraseTable.read(paths.paraphrase)
    except (OSError, EOFError, zlib.error) as exc:
        raise MeteorDataError(f"the English paraphrase table cannot be read ({paths.paraphrase}: {exc}); "
                              f"{HOW_TO_GET}") from exc
    sections["phrases"] = "\n".join(phrases).encode("utf-8")
    sections["offsets"] = offsets
    sections["targets"] = targets
    sections["max_length"] = np.array([max_length], dtype=np.int64)
    return sections


def _lines(text: str) -> list[str]:
    """Lines as Java's ``readLine`` gives them (no final empty line)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines
