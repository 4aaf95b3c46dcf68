"""The Ray engine on a real local cluster (started as the engine starts one, no mocks): the rows
and the aggregates of a run equal the single-process run's (BERTScore within 1e-6), from files and
from a ``ray.data.Dataset``; the CLI's ``--engine ray`` writes the same output file; the cluster
listens on loopback only. Ray is imported by the engine, as in the CLI: not by this module."""
from __future__ import annotations

import importlib.util
import json
from typing import Any

import pytest

from opik_metrics.cli import main
from opik_metrics.distributed import RayEngine, aggregate_dataset, score_dataset
from opik_metrics.metrics.catalog import MetricRecipe
from opik_metrics.streams import FieldMap, read_rows, score_file
from tests.streams.records import generate_items, write_csv, write_jsonl, write_parquet

pytestmark = [pytest.mark.xdist_group("ray"),      # one local cluster, in one test process
              pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="needs ray")]

ITEMS = generate_items(600, seed=5)
TEXT = MetricRecipe.of([("rouge", {"rouge_types": ("rouge1", "rouge2", "rougeL"), "use_stemmer": True,
                                   "track": False}),
                        ("bleu", {"track": False})])


@pytest.fixture(scope="module", autouse=True)
def cluster():
    from opik_metrics.distributed.ray_engine import ensure_ray

    ensure_ray(None, 2)
    import ray
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory) -> str:
    from tests.neural.tiny_models import build_bert
    return str(build_bert(tmp_path_factory.mktemp("tiny_bert")))


@pytest.mark.parametrize("writer,fields", [
    (write_jsonl, None),
    (write_parquet, None),
    (write_csv, FieldMap({"output": ("pred",), "reference": ("ref",)})),
])
@pytest.mark.parametrize("actors", [False, True])
def test_text_metrics_on_ray_equal_the_local_run(tmp_path, writer, fields, actors):
    suffix = {"write_jsonl": "jsonl", "write_parquet": "parquet", "write_csv": "csv"}[writer.__name__]
    path = str(writer(tmp_path / f"in.{suffix}", ITEMS))
    local = score_file(path, TEXT(), fields=fields, output=str(tmp_path / "local.parquet"), chunk_size=50,
                       progress=False)
    on_ray = score_file(path, output=str(tmp_path / "ray.parquet"), fields=fields, chunk_size=50, progress=False,
                        engine=RayEngine(TEXT, workers=2, actors=actors))
    assert list(read_rows(str(tmp_path / "ray.parquet"))) == list(read_rows(str(tmp_path / "local.parquet")))
    assert on_ray.aggregate == local.aggregate and on_ray.counts == local.counts
    assert on_ray.signatures == local.signatures


@pytest.mark.parametrize("actors", [False, True])
def test_ids_and_kept_columns_on_ray_equal_the_local_run(tmp_path, actors):
    items = [{"id": 1000 + k, "note": {"k": k}, **item} for k, item in enumerate(ITEMS[:300])]
    path = str(write_jsonl(tmp_path / "in.jsonl", items))
    fields = FieldMap(keep=("note",))
    local = score_file(path, TEXT(), fields=fields, output=str(tmp_path / "local.parquet"), chunk_size=50,
                       progress=False)
    on_ray = score_file(path, output=str(tmp_path / "ray.parquet"), fields=fields, chunk_size=50, progress=False,
                        engine=RayEngine(TEXT, workers=2, actors=actors))
    rows = list(read_rows(str(tmp_path / "ray.parquet")))
    assert rows == list(read_rows(str(tmp_path / "local.parquet"))) and on_ray.aggregate == local.aggregate
    assert [(r["id"], json.loads(r["note"])) for r in rows] == [(str(i["id"]), i["note"]) for i in items]


def test_bertscore_on_an_actor_pool_equals_the_local_run(tmp_path, tiny_bert):
    recipe = MetricRecipe.of([("bertscore", {"model": tiny_bert, "num_layers": 2, "track": False})])
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:300]))
    local = score_file(path, recipe(), chunk_size=64, progress=False)
    on_ray = score_file(path, chunk_size=64, progress=False, engine=RayEngine(recipe, workers=2, actors=True))
    assert len(on_ray.rows) == 300
    for a, b in zip(on_ray.rows, local.rows):
        assert a["index"] == b["index"] and a["reason"] == b["reason"]
        for name in ("BERTPrecision", "BERTRecall", "BERTF1"):
            assert a[name] == pytest.approx(b[name], abs=1e-6)
    for name, value in local.aggregate.items():
        assert on_ray.aggregate[name] == pytest.approx(value, abs=1e-6)


def test_a_ray_run_resumes_what_a_local_run_kept(tmp_path):
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS))
    out = str(tmp_path / "o.jsonl")
    clean = score_file(path, TEXT(), chunk_size=50, progress=False)
    from opik_metrics.streams import LocalEngine, open_source
    from opik_metrics.streams.run import StreamRun

    class Stops(LocalEngine):
        def rows(self, source, fields, refs):
            for k, batch in enumerate(super().rows(source, fields, refs)):
                if k == 5:
                    raise KeyboardInterrupt
                yield batch

    with pytest.raises(KeyboardInterrupt):
        StreamRun(open_source(path), FieldMap(), Stops(TEXT()), output=out, chunk_size=50, progress=False,
                  flush_rows=50).execute()
    resumed = score_file(path, output=out, chunk_size=50, progress=False, engine=RayEngine(TEXT, workers=2,
                                                                                            actors=False))
    assert resumed.resumed_from == 250
    assert [r["bleu"] for r in read_rows(out)] == [r["bleu"] for r in clean.rows]
    assert resumed.aggregate == clean.aggregate


def test_a_dataset_the_user_has_is_scored_and_aggregated_as_a_file_is(tmp_path, cluster):
    ds = cluster.data.from_items([{"id": k, "pred": i["output"],
                               "refs": i["reference"] if isinstance(i["reference"], list) else [i["reference"]]}
                              for k, i in enumerate(ITEMS)])
    fields = FieldMap({"output": ("pred",), "reference": ("refs",)})
    scored = score_dataset(ds, TEXT, fields=fields, workers=2, batch_size=100)
    rows = sorted(scored.take_all(), key=lambda r: r["id"])
    local = score_file(str(write_jsonl(tmp_path / "in.jsonl", ITEMS)), TEXT(), progress=False)
    assert [r["rouge1_f1"] for r in rows] == [r["rouge1_f1"] for r in local.rows]
    assert [r["bleu"] for r in rows] == [r["bleu"] for r in local.rows]
    assert rows[0]["pred"] == ITEMS[0]["output"]               # the user's columns stay
    totals = aggregate_dataset(scored.sort("id"), [m.facts for m in TEXT()])
    assert totals.aggregate["corpus_bleu"] == pytest.approx(local.aggregate["corpus_bleu"], abs=1e-12)
    assert totals.aggregate["rougeL_f1"] == pytest.approx(local.aggregate["rougeL_f1"], abs=1e-12)


def test_the_cli_on_ray_writes_the_local_output(tmp_path, capsys):
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS))
    args = ["score", "--input", path, "-m", "rouge", "-m", "bleu", "-m", "cider", "--no-progress", "--format", "json"]
    assert main([*args, "--output", str(tmp_path / "local.parquet")]) == 0
    local = json.loads(capsys.readouterr().out)
    assert main([*args, "--output", str(tmp_path / "ray.parquet"), "--engine", "ray", "--workers", "2"]) == 0
    on_ray = json.loads(capsys.readouterr().out)
    assert on_ray["aggregate"] == local["aggregate"] and on_ray["signatures"] == local["signatures"]
    assert list(read_rows(str(tmp_path / "ray.parquet"))) == list(read_rows(str(tmp_path / "local.parquet")))


def test_bad_worker_counts_are_refused():
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        RayEngine(TEXT, workers=0)


def test_text_facts_are_made_in_the_driver_and_model_facts_in_a_worker(monkeypatch, tiny_bert):
    """A recipe of text metrics gives its facts without a Ray task (the same anywhere); a
    model-backed one asks a worker, whose device and dtype are the ones that score."""
    from opik_metrics.core import facts_of
    from opik_metrics.distributed import ray_engine

    asked = []
    real = ray_engine.ensure_ray
    monkeypatch.setattr(ray_engine, "ensure_ray", lambda *a: (asked.append(a), real(*a)))
    assert RayEngine(TEXT, workers=2).facts() == [facts_of(m) for m in TEXT()]
    assert asked == []
    bert = MetricRecipe.of([("bertscore", {"model": tiny_bert, "num_layers": 2, "track": False})])
    assert [str(f.signature) for f in RayEngine(bert, workers=2).facts()] == [str(m.facts.signature) for m in bert()]
    assert asked


def test_a_fresh_run_takes_model_facts_from_its_workers_and_probes_only_to_resume(tmp_path, tiny_bert, monkeypatch):
    """A fresh run's facts come with the workers' first scored batch (no task loads the model
    once more just to describe it); a run that resumes an output asks a probe first."""
    recipe = MetricRecipe.of([("bertscore", {"model": tiny_bert, "num_layers": 2, "track": False})])
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:200]))
    probes = []
    real = RayEngine._probe
    monkeypatch.setattr(RayEngine, "_probe", lambda self: (probes.append(1), real(self))[1])
    out = str(tmp_path / "o.parquet")
    fresh = score_file(path, output=out, chunk_size=64, progress=False, engine=RayEngine(recipe, workers=2))
    assert probes == []
    assert fresh.signatures == {m.name: str(m.facts.signature) for m in recipe()}
    again = score_file(path, output=out, chunk_size=64, progress=False, engine=RayEngine(recipe, workers=2))
    assert probes == [1] and again.resumed_from == 200 and again.aggregate == fresh.aggregate


def test_an_actor_that_loads_first_leaves_its_neighbours_group_alone(tmp_path):
    """Both actors of a 2-worker pool score at once though one loads 3 s later: the first does
    not queue its neighbour's group (one group an actor in flight), which would take it twice as long."""
    from functools import partial

    from tests.distributed.rendezvous import rendezvous_metrics
    from opik_metrics.streams import open_source

    folder = tmp_path / "pids"
    for sub in ("born", "scored"):
        (folder / sub).mkdir(parents=True)
    # built 1st by the probe, 2nd by the first actor; the second actor loads 3 s later
    engine = RayEngine(partial(rendezvous_metrics, str(folder), expected=2, slow_after=2), workers=2)
    engine.facts()
    source = open_source(str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:20])))
    rows = [row for table in engine.rows(source, FieldMap(), source.plan(10)) for row in table.to_pylist()]
    assert [r["index"] for r in rows] == list(range(20)) and all(r["reason"] is None for r in rows)
    assert len({r["worker_pid"] for r in rows}) == 2


def test_a_model_that_cannot_be_built_fails_with_its_own_error_and_overwrite_keeps_the_old_output(tmp_path):
    """The workers start before the facts are known; a metric they cannot build still fails with
    the metric's own error (not Ray's "actor died"), and ``overwrite`` removes nothing until a run
    has its metrics."""
    from opik_metrics.neural.models.registry import ModelNotAvailableError

    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:50]))
    out = tmp_path / "o.parquet"
    score_file(path, TEXT(), output=str(out), progress=False)
    before = out.read_bytes()
    missing = MetricRecipe.of([("bertscore", {"model": str(tmp_path / "no-such-model"), "track": False})])
    assert RayEngine(missing, workers=2).facts_from_rows and not RayEngine(TEXT, workers=2).facts_from_rows
    with pytest.raises(ModelNotAvailableError, match="does not exist"):
        score_file(path, output=str(out), overwrite=True, progress=False, engine=RayEngine(missing, workers=2))
    assert out.read_bytes() == before


def _listening_addresses(process) -> dict[str, set[str]]:
    """The addresses on which ``process`` and all its descendants listen (TCP and UDP), each with
    the names of the processes that hold them."""
    import psutil

    found: dict[str, set[str]] = {}
    for p in [process, *process.children(recursive=True)]:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN or (c.type == 2 and not c.raddr):   # 2: SOCK_DGRAM
                    found.setdefault(c.laddr.ip, set()).add(p.name())
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def test_the_local_cluster_listens_on_loopback_only(cluster):
    """Ray has no authentication: every server of the cluster the engine started (GCS, raylet,
    workers, agents) listens on loopback, none on another interface."""
    import psutil

    from opik_metrics.distributed.cluster import is_loopback

    @cluster.remote
    def pid() -> int:
        return psutil.Process().pid
    cluster.get([pid.remote() for _ in range(4)])          # workers up, their servers too
    found = _listening_addresses(psutil.Process())
    holders = set().union(*found.values())
    assert {"gcs_server", "raylet"} <= holders, found        # the cluster's servers were seen
    assert {ip: names for ip, names in found.items() if not is_loopback(ip)} == {}
    assert cluster.util.get_node_ip_address() == "127.0.0.1"


@pytest.mark.parametrize("host,loopback", [
    ("127.0.0.1", True), ("127.3.0.9", True), ("::1", True), ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False), ("::", False), ("192.0.2.2", False), ("::ffff:192.0.2.2", False), ("fe80::1%eth0", False),
    ("localhost", False),   # a name, not an address: not taken on trust
])
def test_loopback_addresses(host, loopback):
    from opik_metrics.distributed.cluster import is_loopback
    assert is_loopback(host) is loopback


def test_a_ray_imported_first_is_refused_a_local_cluster_open_to_the_network(tmp_path):
    """Where the user imported Ray before the pack (so it would give a new node this machine's
    network address), the CLI refuses to start a cluster, in one line, and starts nothing."""
    import subprocess
    import sys

    from tests.streams.records import write_jsonl as write
    path = write(tmp_path / "in.jsonl", ITEMS[:5])
    script = ("import ray, sys\n"
              "from opik_metrics.distributed.cluster import is_loopback\n"
              "if is_loopback(ray.util.get_node_ip_address()): sys.exit(99)\n"
              "from opik_metrics.cli import main\n"
              f"status = main(['score', '--input', {str(path)!r}, '-m', 'bleu', '--engine', 'ray', '--no-progress'])\n"
              "sys.exit(status if not ray.is_initialized() else 3)\n")
    env = {k: v for k, v in __import__("os").environ.items() if k != "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env)
    if done.returncode == 99:
        pytest.skip("this machine has no network address: Ray's node would be on loopback anyway")
    assert done.returncode == 2, done.stderr      # 3: a cluster was started
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "open to the network" in lines[0] and "ray.init()" in lines[0], done.stderr


def _cli(args: list[str], env: dict[str, str] | None = None) -> Any:
    """The CLI in a process of its own (a driver apart from this module's)."""
    import os
    import subprocess
    import sys
    run = "import sys; from opik_metrics.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", run, *args], capture_output=True, text=True,
                          timeout=180, env={**os.environ, **(env or {})})


def test_address_joins_a_running_cluster_and_scores_as_the_local_run(tmp_path, cluster):
    """``--address`` joins a cluster (this module's, on loopback, with Ray's token authentication,
    whose mode this process's environment carries) and writes what a local run writes."""
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:100]))
    args = ["score", "--input", path, "-m", "rouge", "-m", "bleu", "--no-progress", "--format", "json"]
    local = _cli([*args, "--output", str(tmp_path / "local.parquet")])
    address = cluster.get_runtime_context().gcs_address
    assert address.startswith("127.0.0.1:")
    joined = _cli([*args, "--output", str(tmp_path / "ray.parquet"), "--engine", "ray", "--address", address])
    assert joined.returncode == 0, joined.stderr
    assert json.loads(joined.stdout)["aggregate"] == json.loads(local.stdout)["aggregate"]
    assert list(read_rows(str(tmp_path / "ray.parquet"))) == list(read_rows(str(tmp_path / "local.parquet")))


def test_an_address_where_no_cluster_answers_is_one_line_at_once(tmp_path):
    import socket
    import time
    with socket.socket() as s:          # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:5]))
    start = time.monotonic()
    done = _cli(["score", "--input", path, "-m", "bleu", "--engine", "ray", "--address", f"127.0.0.1:{port}",
                 "--no-progress"])
    assert time.monotonic() - start < 60                     # Ray alone retries for minutes
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"opik-metrics: error: no Ray cluster answers at 127.0.0.1:{port}: "
                                                "Connection refused"]


def test_a_cluster_that_refuses_our_token_is_one_line(tmp_path, cluster):
    """Ray's token authentication turned off on our side: the cluster refuses the driver, and the
    CLI says so in one line naming the address and Ray's reason."""
    path = str(write_jsonl(tmp_path / "in.jsonl", ITEMS[:5]))
    address = cluster.get_runtime_context().gcs_address
    done = _cli(["score", "--input", path, "-m", "bleu", "--engine", "ray", "--address", address, "--no-progress"],
                env={"RAY_AUTH_MODE": "disabled", "RAY_gcs_server_port_wait_time_s": "2"})
    assert done.returncode == 2, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith(f"opik-metrics: error: could not join the Ray cluster at {address}: "), done.stderr
    assert "token" in last.lower()
    assert "Traceback" not in done.stderr
