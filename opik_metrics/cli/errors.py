"""The CLI's one error path: a user-facing error is one line on stderr and exit status 2; an
unexpected one (a bug) is one line naming a log file that holds its traceback, exit status 70;
Ctrl-C says what was kept and exits 130; a reader that stops reading (``| head``) ends it quietly
with 141. Every sub-command runs through ``run_command``; docs/command-line.md has the table."""
from __future__ import annotations

import argparse
import errno
import os
import sys
import warnings
from contextlib import contextmanager
from typing import Callable, Iterator, Sequence

# 128 + SIGPIPE: what the shell reports for git, cat or grep cut off by `| head`, so scripts
# (`set -o pipefail` ones too) see us as they see those tools; sacrebleu's plain Python gives a traceback.
BROKEN_PIPE_STATUS = 141
USAGE_ERROR = 2
# sysexits.h's EX_SOFTWARE, "an internal software error": never 1, which means a regression (the gate)
INTERNAL_ERROR = 70
DEBUG_ENV = "OPIK_METRICS_DEBUG"


class CLIError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def fail(message: str, status: int = USAGE_ERROR) -> int:
    """Print ``message`` as one line (a newline in a file name it quotes is written as \\n)."""
    from opik_metrics.core.table import one_line

    print(f"opik-metrics: error: {one_line(message)}", file=sys.stderr)
    return status


@contextmanager
def plugin_warnings_in_one_line() -> Iterator[None]:
    """Inside it, a ``PluginWarning`` (a plugin metric or option left out of the catalog, as the
    parser is built) prints as one line, ``opik-metrics: warning: ...``; other warnings as usual."""
    from opik_metrics.core.table import one_line
    from opik_metrics.metric_kit.card import PluginWarning

    with warnings.catch_warnings(record=True) as caught:
        try:
            yield
        finally:
            for shown in caught:
                if issubclass(shown.category, PluginWarning):
                    print(f"opik-metrics: warning: {one_line(str(shown.message))}", file=sys.stderr)
                else:
                    warnings.showwarning(shown.message, shown.category, shown.filename, shown.lineno, shown.file,
                                         shown.line)


def user_errors() -> tuple[type[BaseException], ...]:
    """Errors whose message is the whole story: printed as one line, no traceback."""
    from opik_metrics.core.extras import MissingExtra
    from opik_metrics.core.inputs import MetricInputError
    from opik_metrics.distributed.cluster import ClusterError
    from opik_metrics.experiments.opik_server import OpikServerUnavailable
    from opik_metrics.experiments.store import StoreError
    from opik_metrics.neural.models.registry import ModelNotAvailableError
    from opik_metrics.pipelines.captioning.conceptual_captions import DatasetSourceError
    from opik_metrics.traces.lease import ScoringLocked

    light = (CLIError, OpikServerUnavailable, StoreError, MetricInputError, ModelNotAvailableError,
             DatasetSourceError, ClusterError, MissingExtra, ScoringLocked, ValueError)
    # Meteor's tables module imports numpy: it is loaded whenever it could have raised, so its
    # error is looked up, never imported here (a usage error stays light)
    meteor = sys.modules.get("opik_metrics.text.meteor.resources")
    return (*light, meteor.MeteorDataError) if meteor is not None else light


def check_arguments(argv: Sequence[str]) -> None:
    """Raise a CLIError for a command-line argument that is not UTF-8: Python hands its bytes over
    as lone surrogates (``surrogateescape``), which no tokenizer, file or store takes."""
    from opik_metrics.core.inputs import utf8_problem

    for k, arg in enumerate(argv):
        if utf8_problem(arg) is None:
            continue
        after = f", the value of {argv[k - 1]}," if k and argv[k - 1].startswith("-") else ""
        try:
            raw = os.fsencode(arg)                 # the bytes the shell passed
            raw.decode("utf-8")
        except UnicodeEncodeError:                 # a surrogate that stands for no byte (a caller's str)
            raw, why = arg.encode("utf-8", "backslashreplace"), utf8_problem(arg)
        except UnicodeDecodeError as exc:
            why = f"{exc.reason} at byte {exc.start}"
        else:
            why = utf8_problem(arg)
        shown = raw.decode("utf-8", "backslashreplace")
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise CLIError(f"command-line argument {k + 1}{after} is not UTF-8 text ({why}): \"{shown}\"")


def _stdout_closed() -> bool:
    """Whether the reader of our stdout has gone (poll reports an error on the pipe); True when
    that cannot be told, as a BrokenPipeError then most likely came from stdout."""
    try:
        import select

        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0))
    except (AttributeError, OSError, ValueError):    # no poll (Windows), no real file (captured)
        return True


def _quiet_broken_pipe() -> int:
    """Exit quietly once the reader is gone, as Python's docs advise (signal.html, "Note on
    SIGPIPE"): stdout goes to devnull so the final flush at exit cannot fail again."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (AttributeError, OSError, ValueError):    # no real file descriptor (captured output)
        pass
    return BROKEN_PIPE_STATUS


def parse_arguments(parser: argparse.ArgumentParser, argv: Sequence[str]) -> argparse.Namespace:
    """``parser.parse_args`` whose ``--help`` into a closed pipe also ends quietly (141)."""
    try:
        try:
            return parser.parse_args(argv)
        finally:
            sys.stdout.flush()      # --help and usage errors exit; flush while we can still catch
    except BrokenPipeError:
        if not _stdout_closed():
            raise
        raise SystemExit(_quiet_broken_pipe()) from None


def interrupted_message(args: argparse.Namespace) -> str:
    """What Ctrl-C leaves behind, for the command that was running."""
    resume = "; run the same command again to resume"
    if getattr(args, "command", None) == "score":
        output = getattr(args, "output", None)
        return f"interrupted: the rows scored so far are kept in {output}.parts{resume}" if output else "interrupted"
    if getattr(args, "command", None) in ("caption", "experiments"):
        store = getattr(args, "store", None)
        return "interrupted: every item finished so far is kept in the local store" + (f" {store}" if store else "") \
            + resume
    if getattr(args, "command", None) == "traces":
        return "interrupted: the scores sent so far are kept on the server" + resume + " (what has its scores is skipped)"
    return "interrupted"


# out of disk or quota, read-only storage, too many open files: the machine's limits, not a bug
_RESOURCE_ERRORS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EMFILE, errno.ENFILE}


def debugging(argv: Sequence[str] = ()) -> bool:
    """Whether an internal error shows its traceback: ``--debug`` or ``OPIK_METRICS_DEBUG=1``."""
    return "--debug" in argv or os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes")


def internal_error(exc: BaseException, debug: bool) -> int:
    """A bug's one line (its type and message, and where its traceback is), exit status 70; with
    ``debug`` the traceback itself goes to stderr first."""
    import tempfile
    import traceback

    from opik_metrics.core.table import one_line

    text = "".join(traceback.format_exception(exc))
    if debug:
        sys.stderr.write(text)
        where = "the traceback is above"
    else:
        try:
            with tempfile.NamedTemporaryFile("w", prefix="opik-metrics-error-", suffix=".log", delete=False,
                                             encoding="utf-8", errors="backslashreplace") as log:
                log.write(f"opik-metrics {' '.join(sys.argv[1:])}\n{text}")
            where = f"the traceback is in {log.name}; --debug shows it"
        except OSError:
            where = "--debug shows the traceback"
    print(one_line(f"opik-metrics: internal error: {type(exc).__name__}: {exc} (a bug: {where})"), file=sys.stderr)
    return INTERNAL_ERROR


def run_command(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run one sub-command: known errors become one clear line (exit 2), Ctrl-C exits 130, a
    closed stdout (``| head -1``) exits 141 without a word, anything else is a bug (exit 70)."""
    try:
        return _run_known(command, args)
    except Exception as exc:                 # noqa: BLE001 - the one place a bug is reported
        return internal_error(exc, bool(getattr(args, "debug", False)) or debugging())


def _run_known(command: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    try:
        status = command(args)
        sys.stdout.flush()          # a reader gone before the last buffered write shows up here
        return status
    except BrokenPipeError:
        if not _stdout_closed():    # a pipe of our own (a socket, a worker) broke: not the reader
            raise
        return _quiet_broken_pipe()
    except KeyboardInterrupt:
        print("\n" + interrupted_message(args), file=sys.stderr)
        return 130
    except user_errors() as exc:
        return fail(str(exc))
    except OSError as exc:
        if exc.errno not in _RESOURCE_ERRORS:
            raise
        where = f" ({exc.filename})" if exc.filename else ""
        return fail(f"{exc.strerror or exc}{where}: nothing written so far is lost; free the resource and run "
                    "the same command again to go on where it stopped")
