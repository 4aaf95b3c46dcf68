"""Where the Opik server is, read as opik's ``OpikConfig`` reads it (environment ``OPIK_*``, then
the ``[opik]`` section of ``OPIK_CONFIG_PATH`` or ``~/.opik.config``) but without importing opik:
``import opik`` takes 6 s idle and 20-30 s on a loaded machine, and a local run or an error
must not wait for it. Opik's own config is used whenever it is free (opik already imported) or
needed (an API key without a URL: the key may carry the cloud URL, which only opik decodes).
"""
from __future__ import annotations

import configparser
import os
import pathlib
import sys
from dataclasses import dataclass, field
from typing import Any

OPIK_URL_CLOUD = "https://www.comet.com/opik/api/"       # opik.config.OPIK_URL_CLOUD
CONFIG_FILE_PATH_DEFAULT = "~/.opik.config"               # opik.config.CONFIG_FILE_PATH_DEFAULT
_FIELDS = ("url_override", "api_key", "workspace")


@dataclass(frozen=True)
class OpikSettings:
    """The part of opik's configuration that says which server: the attributes ``OpikConfig``
    has under the same names, so either serves ``opik_server.configured_by``."""

    url_override: str = OPIK_URL_CLOUD
    api_key: str | None = None
    workspace: str | None = None
    model_fields_set: frozenset[str] = field(default_factory=frozenset)
    config_file_fullpath: pathlib.Path = pathlib.Path(CONFIG_FILE_PATH_DEFAULT).expanduser()

    @property
    def config_file_exists(self) -> bool:
        return self.config_file_fullpath.exists()


def nothing_configured(settings: Any) -> bool:
    """Opik's cloud URL with no API key: what opik's ``check_for_known_misconfigurations`` calls
    misconfigured for the cloud, so its tracked metrics send nothing (``OPIK_TRACK_DISABLE`` aside)."""
    return settings.api_key is None and settings.url_override.rstrip("/") == OPIK_URL_CLOUD.rstrip("/")


def config_file_path() -> pathlib.Path:
    """``OPIK_CONFIG_PATH`` when set and not blank, else ``~/.opik.config`` (as opik resolves it)."""
    raw = os.environ.get("OPIK_CONFIG_PATH")
    return pathlib.Path(raw.strip() if raw and raw.strip() else CONFIG_FILE_PATH_DEFAULT).expanduser()


def _environment() -> dict[str, str]:
    """``OPIK_URL_OVERRIDE`` ... as pydantic-settings reads them: the prefix and name in any case."""
    found: dict[str, str] = {}
    for key, value in os.environ.items():
        name = key.lower()
        if name.startswith("opik_") and name[5:] in _FIELDS:
            found[name[5:]] = value
    return found


def _config_file(path: pathlib.Path) -> dict[str, str]:
    """The ``[opik]`` section of the config file (empty when there is none, as for opik)."""
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(path, encoding="utf-8")
    except (configparser.Error, UnicodeDecodeError) as exc:
        raise ValueError(f"the Opik config file {path} cannot be read ({type(exc).__name__}): fix or remove it, "
                         "or run `opik configure`") from None
    return {k: v for k, v in parser.items("opik") if k in _FIELDS} if parser.has_section("opik") else {}


def opik_settings() -> Any:
    """Opik's server settings: opik's own ``OpikConfig`` when opik is already imported (it also sees
    ``opik.configure``'s session values) or an API key leaves the URL to opik; else OpikSettings,
    read from the same places in the same order, with no import."""
    if "opik.config" in sys.modules:
        return _opik_config()
    path = config_file_path()
    values = {**_config_file(path), **_environment()}           # the environment wins, as in opik
    if values.get("api_key") is not None and "url_override" not in values:
        return _opik_config()
    return OpikSettings(url_override=values.get("url_override", OPIK_URL_CLOUD), api_key=values.get("api_key"),
                        workspace=values.get("workspace"), model_fields_set=frozenset(values),
                        config_file_fullpath=path)


def _opik_config() -> Any:
    import opik.config

    return opik.config.OpikConfig()
