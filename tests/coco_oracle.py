"""pycocoevalcap's own PTB tokenisation (the Stanford jar, run by Java) as a test oracle.

The jar reads and writes UTF-8 whatever the locale (PTBTokenizer's -encoding defaults to utf-8), so
no environment is set here.
"""
from __future__ import annotations

import re
import shutil

from tests.required_tool import require_tool

# The jar breaks lines at these as well as at "\n" (which pycocoevalcap replaces by a space): a caption
# holding one would shift every later caption onto the wrong image. They count as spaces here, as in
# opik_metrics.text.tokenizers.ptb.
_LINE_BREAKS = re.compile("[\n\r\u2028\u2029\x0b\x0c]")
# A caption's tokens can depend on the next line: "C." before a line starting "The" gives "c" (else
# "c."), "no." before one starting with a digit keeps its period, and the file's last line (no newline
# after it) loses ":)" and "'90" as tokens. Each caption is followed by this neutral line, so that its
# tokens are its own (ours are defined so).
_SEPARATOR = "zz"


def java_path() -> str | None:
    """The ``java`` on PATH (the command pycocoevalcap runs), or None."""
    return shutil.which("java")


def require_java() -> str:
    """Java's path; fails the test when OPIK_METRICS_REQUIRE_JAVA=1 and none is found, else skips."""
    return require_tool(java_path(), "OPIK_METRICS_REQUIRE_JAVA",
                        "java not found on PATH; pycocoevalcap's PTB tokenizer is a Stanford CoreNLP jar")


def jar_tokenize(captions: list[str]) -> list[str]:
    """Each caption as pycocoevalcap's ``PTBTokenizer().tokenize`` gives it (one JVM run for all).

    Every caption is keyed under an image id of its own and followed by a neutral separator caption,
    so that no caption's tokens depend on its neighbour; line breaks other than "\\n" become spaces.
    """
    require_java()
    from pycocoevalcap.tokenizer.ptbtokenizer import PTBTokenizer

    data = {}
    for i, caption in enumerate(captions):
        data[2 * i] = [{"caption": _LINE_BREAKS.sub(" ", caption)}]
        data[2 * i + 1] = [{"caption": _SEPARATOR}]
    out = PTBTokenizer().tokenize(data)
    if any(out[2 * i + 1] != [_SEPARATOR] for i in range(len(captions))):
        raise AssertionError("the jar's lines no longer pair with the captions")
    return [out[2 * i][0] for i in range(len(captions))]
