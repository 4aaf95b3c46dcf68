"""File names the file system can hold, checked before any work: a name (one part of a path) has
at most NAME_MAX bytes (255 on Linux's file systems), and a file we write keeps siblings with
longer names (``<output>.run.json.tmp``, SQLite's ``<store>-journal``). A name too long for them
fails at once, naming the file, instead of after the scoring (or as a traceback)."""
from __future__ import annotations

import os
from pathlib import Path

DEFAULT_NAME_MAX = 255      # ext4, xfs, btrfs, tmpfs; where the file system cannot be asked


def name_max(path: str | os.PathLike) -> int:
    """The longest name, in bytes, the file system under ``path`` (or its nearest existing folder) takes."""
    folder = Path(path)
    while True:
        try:
            return int(os.pathconf(folder, "PC_NAME_MAX"))
        except (OSError, ValueError, AttributeError):   # missing or too long: ask the folder above it
            if folder.parent == folder:
                return DEFAULT_NAME_MAX
            folder = folder.parent


def name_too_long(path: str | os.PathLike, sibling_suffix: str = "") -> str | None:
    """Why ``path`` cannot be written, with a sibling named ``<path><sibling_suffix>`` beside it, on
    account of a name's length; None when every part of it fits."""
    parts = Path(path).parts
    limit = name_max(Path(path).parent)
    for k, part in enumerate(parts):
        last = k == len(parts) - 1
        size = _bytes(part + (sibling_suffix if last else ""))
        if size > limit:
            what = "its file name" if last else f"the folder name {part[:40]}{'...' if len(part) > 40 else ''}"
            beside = f" (with the {sibling_suffix} we write beside it)" if last and sibling_suffix else ""
            return (f"{what} is {size} bytes{beside}, more than the {limit} a name may have on this file "
                    "system; choose a shorter name")
    return None


def _bytes(name: str) -> int:
    """The length of ``name`` as the file system receives it (a lone surrogate counted as UTF-8 would)."""
    try:
        return len(os.fsencode(name))
    except UnicodeEncodeError:
        return len(name.encode("utf-8", "surrogatepass"))
