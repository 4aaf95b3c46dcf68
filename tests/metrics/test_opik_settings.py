"""Which Opik server is configured, read without importing opik, agrees with opik's own
``OpikConfig`` (the oracle) on every combination of environment and config file."""
from __future__ import annotations

import itertools
import os
import sys

import pytest

from opik_metrics.metric_kit import opik_settings as settings_module
from opik_metrics.metric_kit.opik_settings import OpikSettings, nothing_configured, opik_settings

ENVIRONMENTS = [{}, {"OPIK_URL_OVERRIDE": "http://127.0.0.1:5173/api/"}, {"opik_url_override": "http://127.0.0.1:1/api"},
                {"OPIK_URL_OVERRIDE": "http://127.0.0.1:2/api", "OPIK_WORKSPACE": "team"}]
FILES = [None, "", "[opik]\nurl_override = http://127.0.0.1:3/api/\nworkspace = w\n",
         "[other]\nurl_override = http://127.0.0.1:4/api/\n", "[opik]\nworkspace = only-workspace\n"]


def _isolate(monkeypatch, tmp_path, env: dict, file_text: str | None):
    for key in [k for k in list(os.environ) if k.upper().startswith("OPIK_")]:
        monkeypatch.delenv(key)
    path = tmp_path / "opik.config"
    if file_text is not None:
        path.write_text(file_text, encoding="utf-8")
    monkeypatch.setenv("OPIK_CONFIG_PATH", str(path) if file_text is not None else str(tmp_path / "none.config"))
    for key, value in env.items():
        monkeypatch.setenv(key, value)


@pytest.mark.parametrize("env, file_text", list(itertools.product(ENVIRONMENTS, FILES)))
def test_the_settings_equal_opiks_own(monkeypatch, tmp_path, env, file_text):
    import opik.config

    _isolate(monkeypatch, tmp_path, env, file_text)
    theirs = opik.config.OpikConfig()
    monkeypatch.delitem(sys.modules, "opik.config")           # as in a process that has not imported opik
    ours = opik_settings()
    assert isinstance(ours, OpikSettings)
    assert ours.url_override == theirs.url_override
    assert ours.workspace == (theirs.workspace if "workspace" in theirs.model_fields_set else None)
    assert ours.api_key is None and theirs.api_key is None
    assert ours.model_fields_set == {"url_override", "workspace", "api_key"} & theirs.model_fields_set
    assert ours.config_file_exists == theirs.config_file_exists
    assert nothing_configured(ours) == (theirs.get_misconfiguration_detection_results()[0])


def test_an_api_key_without_a_url_is_left_to_opik(monkeypatch, tmp_path):
    _isolate(monkeypatch, tmp_path, {"OPIK_API_KEY": "key"}, None)
    monkeypatch.delitem(sys.modules, "opik.config", raising=False)
    calls = []
    monkeypatch.setattr(settings_module, "_opik_config", lambda: calls.append(1) or "opik's config")
    assert opik_settings() == "opik's config" and calls == [1]     # the key may carry the cloud URL


def test_with_opik_loaded_its_own_config_is_used(monkeypatch, tmp_path):
    import opik.config  # noqa: F401

    _isolate(monkeypatch, tmp_path, {"OPIK_URL_OVERRIDE": "http://127.0.0.1:5/api/"}, None)
    assert type(opik_settings()).__name__ == "OpikConfig"


def test_an_unreadable_config_file_is_one_line(monkeypatch, tmp_path):
    _isolate(monkeypatch, tmp_path, {}, "[opik\nurl_override = x\n")
    monkeypatch.delitem(sys.modules, "opik.config", raising=False)
    with pytest.raises(ValueError, match=r"the Opik config file .*opik.config cannot be read \(MissingSectionHeader"):
        opik_settings()
