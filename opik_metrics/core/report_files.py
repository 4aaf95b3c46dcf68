"""Writing a report's files into its folder without following links planted there: each file is
written under a fresh temporary name in the folder and renamed into place (``os.replace`` replaces
a link itself, never its target), and a sub-folder that is a link is replaced by a real folder.
"""
from __future__ import annotations

import io
import os
import secrets
from pathlib import Path
from typing import Any


def write_in_place(path: Path, data: str | bytes, *, errors: str = "strict") -> None:
    """Write ``data`` (text as UTF-8) to ``path`` through a temporary file beside it, renamed over
    it: a link at ``path`` is replaced, and the file it pointed to is left as it was."""
    content = data.encode("utf-8", errors) if isinstance(data, str) else data
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(6)}.tmp")
    # O_EXCL: a new file, never through a link; 0o666 less the umask, as open() would make it
    handle = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o666)
    try:
        with os.fdopen(handle, "wb") as f:
            f.write(content)
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def save_figure(figure: Any, path: Path, **options: Any) -> None:
    """Save a matplotlib ``figure`` as a PNG at ``path`` as ``write_in_place`` writes."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", **options)
    write_in_place(path, buffer.getvalue())


def real_folder(path: Path) -> Path:
    """``path`` as a folder of its own (created if missing): a link there is removed (its target
    untouched) and a real folder made; anything else that is not a folder is refused."""
    if path.is_symlink():
        path.unlink()
    if path.exists() and not path.is_dir():
        raise NotADirectoryError(f"{path} exists and is not a folder")
    path.mkdir(parents=True, exist_ok=True)
    return path


def remove_file(path: Path) -> None:
    """Remove ``path`` if it is there (a link: the link itself, even one to nothing)."""
    if path.is_symlink() or path.exists():
        path.unlink()
