"""WMT's DARR Kendall-like tau (issue 57, item 5): hand-worked counts (a tie in the metric is
discordant), an oracle written from the WMT17-19 definition, the bootstrap over pairs or over
segments against a direct loop on the same draws, and ``agreement --pairs`` on a scored table (pairs
naming ids) and on one file with --system (pairs naming a segment and two systems, as WMT's DArr
files do); bad pairs are one line naming the pairs file, the row and the field."""
from __future__ import annotations

import json

import numpy as np
import pytest

from opik_metrics.cli.main import main
from opik_metrics.compare.statistics.bootstrap import percentile_interval, resample_indices
from opik_metrics.meta_evaluation.darr import DARR_RULE, DarrSettings, darr_agreement, darr_tau


def wmt_tau(metric: dict, pairs: list[tuple[str, str]]) -> float:
    """WMT17-19 segment-level DARR: Concordant if metric(better) > metric(worse), else Discordant
    (ties included); tau = (C - D) / (C + D)."""
    concordant = discordant = 0
    for better, worse in pairs:
        if metric[better] > metric[worse]:
            concordant += 1
        else:
            discordant += 1
    return (concordant - discordant) / (concordant + discordant)


def test_hand_worked_counts_with_a_tie():
    # pairs (better, worse): 0.9>0.1 C, 0.5>0.4 C, 0.3<0.7 D, 0.6=0.6 tie -> D, 0.8>0.2 C
    better, worse = [0.9, 0.5, 0.3, 0.6, 0.8], [0.1, 0.4, 0.7, 0.6, 0.2]
    assert darr_tau(better, worse) == (pytest.approx(0.2), 3, 2, 1)        # (3 - 2) / 5
    lower = darr_agreement({"ter": better}, {"ter": worse}, DarrSettings(resamples=20), lower_is_better={"ter"})
    m = lower.metrics[0]
    # negated: 3 pairs flip to discordant, the bad one concordant, the tie stays discordant: (1 - 4) / 5
    assert (m.tau, m.concordant, m.discordant, m.ties, m.oriented) == (pytest.approx(-0.6), 1, 4, 1, True)


def test_equal_to_the_wmt_definition_on_random_pairs():
    rng = np.random.default_rng(5)
    items = [f"t{k}" for k in range(60)]
    metric = {i: float(v) for i, v in zip(items, np.round(rng.random(60), 1))}     # rounded: many ties
    pairs = [tuple(rng.choice(items, 2, replace=False)) for _ in range(400)]
    result = darr_agreement({"m": [metric[b] for b, _ in pairs]}, {"m": [metric[w] for _, w in pairs]},
                            DarrSettings(resamples=20))
    assert result.metrics[0].tau == pytest.approx(wmt_tau(metric, pairs), abs=1e-15)
    assert result.metrics[0].ties > 0


@pytest.mark.parametrize("by_segment", [False, True])
def test_the_interval_is_the_percentile_bootstrap_of_the_same_draws(by_segment):
    rng = np.random.default_rng(2)
    n = 90
    segments = [f"s{k // 3}" for k in range(n)]
    better, worse = rng.normal(0.3, 1, n), rng.normal(0, 1, n)
    settings = DarrSettings(resamples=200, seed=4)
    got = darr_agreement({"m": better}, {"m": worse}, settings, units=segments if by_segment else None).metrics[0]
    concordant = (better > worse).astype(float)
    unit = np.array([int(s[1:]) for s in segments]) if by_segment else np.arange(n)
    draws = resample_indices(int(unit.max()) + 1, 200, 4)
    values = []
    for row in draws:                     # a resample: each drawn unit's pairs, as many times as it is drawn
        picked = np.concatenate([np.flatnonzero(unit == u) for u in row])
        values.append(2 * concordant[picked].mean() - 1)
    expected = percentile_interval(2 * concordant.mean() - 1, np.array(values), 0.95)
    assert (got.low, got.high) == (pytest.approx(expected.low), pytest.approx(expected.high))
    assert got.low <= got.tau <= got.high


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return str(path)


@pytest.fixture
def wmt_like(tmp_path):
    """Six segments translated by three systems, two metrics (ter lower-is-better), and DArr
    pairs: (segment, better system, worse system)."""
    rng = np.random.default_rng(11)
    rows = [{"seg": f"s{k}", "sys": s, "chrf": round(float(rng.random()), 2), "ter": round(float(rng.random()), 2)}
            for k in range(6) for s in ("A", "B", "C")]
    table = _write(tmp_path / "scores.jsonl", rows)
    pairs = [{"segment": f"s{k}", "better": a, "worse": b} for k in range(6) for a, b in (("A", "B"), ("C", "A"))]
    pairs_file = _write(tmp_path / "darr.jsonl", pairs)
    return table, pairs_file, rows, pairs


def test_pairs_naming_a_segment_and_two_systems(wmt_like, capsys, tmp_path):
    table, pairs_file, rows, pairs = wmt_like
    score = {(r["seg"], r["sys"]): r for r in rows}
    capsys.readouterr()
    args = ["agreement", table, "--pairs", pairs_file, "--id-field", "seg", "--system", "sys", "--metric", "chrf",
            "--metric", "ter", "--lower-is-better", "ter", "--resamples", "40"]
    assert main([*args, "--format", "json", "-o", str(tmp_path / "r")]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rule"] == DARR_RULE and out["n_pairs"] == 12 and out["unit"] == "segment" and out["n_units"] == 6
    assert json.loads((tmp_path / "r" / "darr.json").read_text()) == out
    by_name = {m["metric"]: m for m in out["metrics"]}
    for metric, sign in (("chrf", 1), ("ter", -1)):
        values = {f"{seg}/{sys}": sign * r[metric] for (seg, sys), r in score.items()}
        expected = wmt_tau(values, [(f"{p['segment']}/{p['better']}", f"{p['segment']}/{p['worse']}") for p in pairs])
        assert by_name[metric]["tau"] == pytest.approx(expected, abs=1e-15)
    assert by_name["ter"]["oriented"] is True
    assert main(args) == 0
    printed = capsys.readouterr().out
    assert "a tie in the metric counted as discordant (WMT17-19's segment-level rule)" in printed
    assert "ter lower is better (--lower-is-better)" in printed and "6 segments resampled" in printed


def test_pairs_naming_ids_and_bad_pairs(wmt_like, capsys, tmp_path):
    _, _, rows, pairs = wmt_like
    flat = _write(tmp_path / "flat.jsonl", [dict(r, id=f"{r['seg']}-{r['sys']}") for r in rows])
    by_id = _write(tmp_path / "by_id.jsonl", [{"better": f"{p['segment']}-{p['better']}",
                                                "worse": f"{p['segment']}-{p['worse']}"} for p in pairs])
    capsys.readouterr()
    assert main(["agreement", flat, "--pairs", by_id, "-m", "chrf", "--resamples", "40", "--format", "json"]) == 0
    out = json.loads(capsys.readouterr().out)
    values = {f"{r['seg']}-{r['sys']}": r["chrf"] for r in rows}
    assert out["unit"] == "pair" and out["metrics"][0]["tau"] == pytest.approx(
        wmt_tau(values, [(f"{p['segment']}-{p['better']}", f"{p['segment']}-{p['worse']}") for p in pairs]))

    def error(*args):
        capsys.readouterr()
        assert main(["agreement", *map(str, args), "--resamples", "40"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        return err[0]

    unknown = _write(tmp_path / "unknown.jsonl", [{"better": "s0-A", "worse": "s9-Z"}])
    assert f"{unknown}: row 1: worse 's9-Z' is no item (id) of {flat}" in error(flat, "--pairs", unknown, "-m", "chrf")
    same = _write(tmp_path / "same.jsonl", [{"better": "s0-A", "worse": "s0-A"}])
    assert f"{same}: row 1: better and worse are both 's0-A'" in error(flat, "--pairs", same, "-m", "chrf")
    lacking = _write(tmp_path / "lacking.jsonl", [{"winner": "s0-A", "worse": "s0-B"}])
    assert f"{lacking}: row 1: no 'better' column" in error(flat, "--pairs", lacking, "-m", "chrf")
    assert "--pairs with --human" in error(flat, "--pairs", by_id, "-m", "chrf", "--human", "chrf")
    assert "--pairs with --level" in error(flat, "--pairs", by_id, "-m", "chrf", "--level", "system")
    no_segment = by_id
    assert f"{no_segment}: row 1: no 'segment' column" in error(
        flat, "--pairs", no_segment, "-m", "chrf", "--id-field", "seg", "--system", "sys")
