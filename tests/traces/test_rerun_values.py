"""A rerun checks what the server holds against the values the marks say were sent: a server that
keeps another value (here value + 0.5, the reason unchanged) is named and exits 3 again, never
"already scored, skipped" and 0; once it keeps what it is sent, the rerun sends the values again
and they are right. Nothing is scored twice for it (the value comes from the mark)."""
from __future__ import annotations

import json

import pytest

from opik_metrics import BLEU
from opik_metrics.cli.main import main
from opik_metrics.traces.marks import marked_scores, signature_of
from tests.traces.conftest import PROJECT, log_project

ARGS = ["traces", "score", "--project", PROJECT, "-m", "bleu", "--no-progress", "--format", "json"]


def _values(server) -> dict[str, float]:
    return {tid: s["bleu"]["value"] for (kind, tid), s in server.feedback_scores.items() if "bleu" in s}


def test_a_rerun_sends_again_what_the_server_holds_with_another_value(server, client, capsys, monkeypatch):
    log_project(client)
    server.stored_offset = 0.5
    assert main(ARGS) == 3
    first = json.loads(capsys.readouterr().out)
    assert first["sent_scores"] == 17 and first["missing_scores"] == {"bleu": 17}
    wrong = _values(server)

    calls = []
    monkeypatch.setattr(BLEU, "score_batch", lambda self, *a, **k: calls.append(a) or [])
    assert main(ARGS) == 3                    # still held wrong: named again, not skipped as done
    again = json.loads(capsys.readouterr().out)
    assert again["skipped"] == {"bleu": 17} and again["resent"] == {"bleu": 17} and again["sent_scores"] == 17
    assert again["missing_scores"] == {"bleu": 17} and calls == []

    server.stored_offset = 0.0                # the server keeps what it is sent now
    assert main(ARGS) == 0
    fixed = json.loads(capsys.readouterr().out)
    assert fixed["resent"] == {"bleu": 17} and fixed["complete"] and fixed["kept_scores"] == 17
    assert all(_values(server)[tid] == pytest.approx(v - 0.5, abs=1e-9) for tid, v in wrong.items())
    assert main(ARGS) == 0                    # and then there is nothing left to send
    last = json.loads(capsys.readouterr().out)
    assert last["sent_scores"] == 0 and last["resent"] == {} and last["skipped"] == {"bleu": 17}


def test_the_mark_holds_the_value_sent():
    signature = signature_of(BLEU(track=False))
    from opik_metrics.traces.marks import marked
    reason = marked("brevity penalty 1.0", signature, 1, 0.25)
    assert marked_scores([{"name": "bleu", "value": 0.75, "reason": reason}], signature)[0].sent == 0.25
    legacy = f"brevity penalty 1.0 [opik-metrics 1 {signature}]"          # a mark without its value
    assert marked_scores([{"name": "bleu", "value": 0.25, "reason": legacy}], signature) is None
