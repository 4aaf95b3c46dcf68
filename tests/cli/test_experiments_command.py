"""``experiments show`` prints a config a person can read: a line a setting, each metric by its
signature, nested values indented; ``--format json`` keeps all of it."""
from __future__ import annotations

import json

from opik_metrics import BLEU, ROUGE
from opik_metrics.cli import main
from tests.compare.systems import store_with


def test_show_prints_the_config_a_line_a_setting(tmp_path, capsys):
    path = store_with(tmp_path / "s.sqlite", ["a dog runs", "a red bus"], {"sys": ["a dog", "a bus"]},
                      metrics=[ROUGE(), BLEU()])
    assert main(["experiments", "show", "sys", "--store", str(path)]) == 0
    out = capsys.readouterr().out
    config = out[out.index("config"):out.index("\n\n", out.index("config"))].splitlines()
    assert max(map(len, config)) < 200
    rouge = next(line for line in config if line.startswith("    rouge: "))
    assert "types:rouge1,rouge2,rougeL" in rouge and "{" not in rouge
    assert any(line.startswith("    bleu: ") and "tok:13a" in line for line in config)
    assert main(["experiments", "show", "sys", "--store", str(path), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["config"]["metrics"]["rouge"]["scores"]          # every fact is still there
