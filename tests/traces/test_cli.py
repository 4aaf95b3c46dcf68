"""``opik-metrics traces score`` against the stand-in: JSON out, the summary, the window comparison,
exit 3 naming what the server lacks, a field mapping that cannot be used refused in one line."""
from __future__ import annotations

import json
from datetime import datetime, timezone

from opik_metrics.cli.main import main
from opik_metrics.traces import compare_windows

PROJECT = "weeks"


def _log(client):
    """Week 1 (Nov 2-8) and week 2 (Nov 9-15): 8 captions each, week 2 closer to its references."""
    for week, day in ((1, 3), (2, 10)):
        for k in range(8):
            words = ["a", "cat", "sits", "on", "the", "red", "mat", str(k)]
            kept = 8 - k % 3 if week == 2 else 4 - k % 2        # week 2 keeps more of the reference
            caption = " ".join(words[:kept] + ["blue", "rug", "now", "here"][: 8 - kept])
            client.trace(name="caption", output={"caption": caption}, metadata={"ref": " ".join(words)},
                         start_time=datetime(2026, 11, day, 12, k, tzinfo=timezone.utc), project_name=PROJECT)
    client.flush()


def test_score_a_week_and_compare_it_with_the_week_before(server, client, capsys):
    _log(client)
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--field", "output=output.caption",
                 "--field", "reference=metadata.ref", "--since", "2026-11-09", "--until", "2026-11-16",
                 "--compare-window", "2026-11-02/2026-11-09", "--no-progress", "--format", "json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["selected"] == 8 and out["complete"] and out["sent_scores"] == 8
    assert out["compare_window"]["report"]["selected"] == 8
    week1 = [s["value"] for (_, tid), scores in server.feedback_scores.items() for s in scores.values()
             if server.traces[tid]["start_time"].startswith("2026-11-03")]
    week2 = [s["value"] for (_, tid), scores in server.feedback_scores.items() for s in scores.values()
             if server.traces[tid]["start_time"].startswith("2026-11-10")]
    expected = compare_windows("bleu", week1, week2)
    got = out["compare_window"]["scores"]["bleu"]
    assert (got["delta"], got["low"], got["high"]) == (expected.delta, expected.low, expected.high)
    assert got["significant"] and got["delta"] > 0


def test_exit_3_names_what_the_server_lacks(server, client, capsys):
    _log(client)
    server.fail_next("PUT", r"/traces/feedback-scores$", 400)
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--field", "output=output.caption",
                 "--field", "reference=metadata.ref", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 3 and "lacks scores that were sent" in err and "bleu (" in err
    assert main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--field", "output=output.caption",
                 "--field", "reference=metadata.ref", "--no-progress"]) == 0


def test_a_field_path_outside_a_trace_is_refused(capsys):
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--field", "output=caption"])
    err = capsys.readouterr().err
    assert code == 2 and "a path starts at one of input, output, metadata" in err


def test_a_filter_or_date_that_cannot_be_read_is_one_line(server, capsys):
    server.project(PROJECT)
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--filter", "tags resembles x",
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "filter 'tags resembles x'" in err and len(err.strip().splitlines()) == 1
    code = main(["traces", "score", "--project", PROJECT, "-m", "bleu", "--since", "last tuesday", "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and "since: expected a date" in err
