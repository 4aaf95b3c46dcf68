"""Headless chromium for report tests: screenshots and the DOM after load, with no network and no profile."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.required_tool import require_tool

TIMEOUT_S = 60
_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
          "--disable-background-networking", "--disable-component-update", "--disable-sync",
          "--hide-scrollbars"]


def find_chromium() -> str | None:
    """Debian's /usr/bin/chromium, or a chromium / chrome on PATH."""
    if os.access("/usr/bin/chromium", os.X_OK):
        return "/usr/bin/chromium"
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def require_chromium() -> str:
    """The browser's path; fails the test when OPIK_METRICS_REQUIRE_BROWSER=1 and none is found, else skips."""
    return require_tool(find_chromium(), "OPIK_METRICS_REQUIRE_BROWSER",
                        "chromium not found (/usr/bin/chromium or on PATH); it renders the HTML report")


def _run(arguments: list[str]) -> subprocess.CompletedProcess:
    """Run chromium with a fresh profile folder, removed afterwards."""
    browser = require_chromium()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = [browser, *_FLAGS, f"--user-data-dir={profile}", *arguments]
        result = subprocess.run(command, capture_output=True, text=True, timeout=TIMEOUT_S)
    if result.returncode != 0:
        raise AssertionError(f"chromium failed ({result.returncode}): {result.stderr[-2000:]}")
    return result


def screenshot(html_path: str | Path, png_path: str | Path, width: int = 1280, height: int = 2400) -> Path:
    """A PNG of the page's first ``width`` x ``height`` pixels."""
    png_path = Path(png_path).resolve()
    _run([f"--screenshot={png_path}", f"--window-size={width},{height}", Path(html_path).resolve().as_uri()])
    if not png_path.is_file():
        raise AssertionError(f"chromium wrote no screenshot at {png_path}")
    return png_path


def dump_dom(html_path: str | Path, width: int = 1280, height: int = 2400) -> str:
    """The page's DOM serialised after it loaded in a ``width`` x ``height`` window (scripts of the
    page have run)."""
    return _run(["--dump-dom", f"--window-size={width},{height}", Path(html_path).resolve().as_uri()]).stdout
