"""`opik-metrics compare A.jsonl B.parquet`: two record files written by `score --output` are
compared by themselves, with no store, no server and no `opik` import, as the library compares
them; mixing them with stored experiments, or publishing them, is a clear error."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.analysis import CompareSettings, compare_experiments
from opik_metrics.compare.reading.sources import from_records
from tests.compare.systems import store_with
from tests.compare.test_compare_oracle import _systems

RUN = """
import sys
from opik_metrics.cli.main import main
status = main(sys.argv[1:])
print("opik imported:", "opik" in sys.modules, "status:", status)
"""


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """A baseline and a system's records, scored by the command line into JSONL and Parquet."""
    folder = tmp_path_factory.mktemp("records")
    refs, systems = _systems(2, n=40)
    for name, suffix in (("baseline", "jsonl"), ("system", "parquet")):
        path = folder / f"{name}.input.jsonl"
        path.write_text("".join(json.dumps({"id": f"q{k}", "output": o, "reference": r}) + "\n"
                                for k, (o, r) in reversed(list(enumerate(zip(systems[name], refs))))))
        assert main(["score", "-i", str(path), "-o", str(folder / f"{name}.{suffix}"), "-m", "bleu", "-m", "rouge",
                     "--keep", "output", "--no-progress"]) == 0
    return folder / "baseline.jsonl", folder / "system.parquet"


def test_compares_record_files_with_no_store_no_server_and_no_opik(files, tmp_path):
    base, new = files
    env = {**os.environ, "PYTHONPATH": os.getcwd(), "HOME": str(tmp_path / "home"),
           "OPIK_URL_OVERRIDE": "http://127.0.0.1:9/api", "OPIK_METRICS_STORE": str(tmp_path / "nowhere.sqlite")}
    (tmp_path / "home").mkdir()
    proc = subprocess.run([sys.executable, "-c", RUN, "compare", str(base), str(new), "-o", str(tmp_path / "out"),
                           "--resamples", "200", "--seed", "4"], capture_output=True, text=True, env=env,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "opik imported: False status: 0" in proc.stdout
    assert f"{new} vs {base} (baseline), 40 shared items" in proc.stdout and "corpus_bleu" in proc.stdout
    assert not any((tmp_path / "home").rglob("*.sqlite")) and not (tmp_path / "nowhere.sqlite").exists()
    data = json.loads((tmp_path / "out" / "comparison.json").read_text(encoding="utf-8"))
    expected = compare_experiments([from_records(str(base)), from_records(str(new))],
                                   CompareSettings(resamples=200, seed=4), source="record files",
                                   created_at=data["created_at"])
    assert data == expected.to_dict()


def test_record_files_are_not_mixed_with_stored_experiments_nor_published(files, tmp_path, capsys):
    base, new = files
    refs, systems = _systems(2, n=5)
    store = store_with(tmp_path / "s.sqlite", refs, {"stored": systems["system"]})
    assert main(["compare", str(base), "stored", "--store", str(store), "-o", str(tmp_path / "o")]) == 2
    assert "'stored' is not a record file" in capsys.readouterr().err
    assert main(["compare", str(base), str(new), "--dry-run"]) == 2
    assert f"{base} is a record file" in capsys.readouterr().err


def test_a_record_file_without_ids_is_a_one_line_error(files, tmp_path, capsys):
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps({"output": "a b c", "reference": "a b d"}) + "\n")
    assert main(["score", "-i", str(path), "-o", str(tmp_path / "a.jsonl"), "-m", "bleu", "--no-progress"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a.jsonl"), str(files[0]), "-o", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert "a.jsonl has no record ids" in err and len(err.strip().splitlines()) == 1


def test_the_help_says_which_names_are_record_files(capsys):
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "An existing .jsonl or .parquet file is a record file written by `score --input ... --output`" in out
