"""The online-rule recipe (examples/online_rules/chrf_rule.py): the pasted code, run as Opik's
rule sandbox runs it (only the standard library and opik), gives sacrebleu's sentence chrF and the
pack's CHRF numbers, so a backfill with ``traces score -m chrf`` agrees with the rule."""
from __future__ import annotations

import runpy
from pathlib import Path

import pytest
import sacrebleu

from opik_metrics import CHRF
from tests.captions import caption_sets

RULE = Path(__file__).resolve().parents[2] / "examples" / "online_rules" / "chrf_rule.py"


def test_the_rule_imports_nothing_the_sandbox_lacks():
    imports = [line for line in RULE.read_text().splitlines() if line.startswith(("import ", "from "))]
    assert imports == ["from collections import Counter", "from typing import Any",
                       "from opik.evaluation.metrics import base_metric, score_result"]


def test_the_rule_equals_sacrebleu_and_the_pack():
    rule = runpy.run_path(str(RULE))["SentenceChrF"]()
    cands, refs = caption_sets(200, 2, seed=3)
    pairs = [*zip(cands, refs), ("", ["a cat"]), ("a cat.", ["a cat"]), ("Ünïcode wörds", ["unicode words"]),
             ("x", ["y z"])]
    ours = CHRF(track=False)
    for output, references in pairs:
        got = rule.score(output=output, reference=references).value
        assert got == pytest.approx(sacrebleu.sentence_chrf(output, references).score / 100, abs=1e-12)
        assert got == pytest.approx(ours.score(output, references)[0].value, abs=1e-12)


def test_the_backfill_with_traces_score_gives_the_rule_numbers(monkeypatch):
    """Traces logged before the rule existed, scored by ``traces score -m chrf``: each feedback score
    is what the rule gives the same trace's output and reference."""
    from opik.api_objects import opik_client

    from opik_metrics.traces import score_traces
    from tests.opik_rest_server import OpikRestServer

    rule = runpy.run_path(str(RULE))["SentenceChrF"]()
    cands, refs = caption_sets(12, 1, seed=5)
    with OpikRestServer() as server:
        monkeypatch.setenv("OPIK_URL_OVERRIDE", server.url)
        opik_client.reset_global_client()
        import opik
        client = opik.Opik(project_name="rules")
        logged = {client.trace(name="caption", output={"output": c}, metadata={"reference": r[0]},
                               project_name="rules").id: (c, r[0]) for c, r in zip(cands, refs)}
        client.flush()
        report = score_traces("rules", [CHRF(track=False)], client=client, progress=False)
        assert report.complete and report.scored == 12
        for trace_id, (output, reference) in logged.items():
            held = server.feedback_scores[("trace", trace_id)]["chrf"]["value"]
            assert held == pytest.approx(rule.score(output=output, reference=reference).value, abs=1e-9)
