"""The ``membench`` command line. Every subcommand is a thin layer over a library function.

One module per command or group of commands, each adding its own subparser(s) (``register``)
and holding its handler(s) (``_<name>_cmd``); :data:`COMMANDS` lists every subcommand in the
order ``membench --help`` shows them and the module that holds it. :mod:`.common` has what the
command modules share (argument types, help texts, ``--config`` parsing, output files).

No traceback for anything a user can cause: :func:`main` is the one top-level handler, turning
bad input, refused arguments, file-system refusals, a full disk and Ctrl-C into one located
line on stderr and the exit status documented in :mod:`membench.core.errors` (and in
``membench --help``). What was written before the failure stays intact: run files are replaced
atomically or appended line by line, and a run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import errno
import os
import sys
from types import ModuleType

from ..core import progress, stop
from ..core.errors import (
    EXIT_BAD_INPUT,
    EXIT_DISK_FULL,
    EXIT_FILESYSTEM,
    EXIT_INTERRUPTED,
    MembenchError,
)
from ..core.version import __version__
from . import compare, corpus, leaderboard, metrics, pool, report, run, serve, sets, trec_eval
from .serve import _serve_cmd

DESCRIPTION = """\
membench: a benchmark and analysis suite for memory systems (holder- and time-scoped
retrieval over PDFs, images, UI screenshots, video, code and conversations). Build and
validate the sets, run a system, score it, report. `membench COMMAND --help` for each
command; README.md and docs/ for the definitions."""

EXIT_STATUS = """\
exit status:
  0    done
  1    a check ran and failed (validate findings, corpus drift, a build differing from the lock)
  2    bad input or arguments (one line: file:line: RULE: field: message), a run directory
       locked by another membench command
  3    the file system refused (permission denied, read-only folder, a file where a folder
       was expected)
  4    disk full
  130  interrupted (Ctrl-C, SIGINT or SIGTERM; within a few seconds, whatever is running)
Whatever failed, what was already written is intact: files are replaced atomically, run lines
are appended one by one, and re-running the same `membench run` resumes it."""

# every subcommand, in the order `membench --help` lists them, and the module that adds it
COMMANDS: tuple[tuple[str, ModuleType], ...] = (
    ("corpus", corpus),
    ("sources", corpus),
    ("build", sets),
    ("validate", sets),
    ("audit", sets),
    ("synth", sets),
    ("sets-card", sets),
    ("run", run),
    ("serve", serve),
    ("import-run", run),
    ("report", report),
    ("calibrate", compare),
    ("compare", compare),
    ("agreement", compare),
    ("export", metrics),
    ("trec-eval", trec_eval),
    ("topics", sets),
    ("pool", pool),
    ("q2d", pool),
    ("leaderboard", leaderboard),
    ("verify", leaderboard),
    ("metrics", metrics),
)


def parser() -> argparse.ArgumentParser:
    """The ``membench`` parser: the global options, then each subcommand from its module."""
    p = argparse.ArgumentParser(
        prog="membench",
        description=DESCRIPTION,
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "--version",
        action="version",
        version=f"membench {__version__}",
        help="print the version and exit",
    )
    p.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="no progress bars or progress lines (results and errors still print)",
    )
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    for name, module in COMMANDS:
        module.register(sub, name)
    for name, sp in sub.choices.items():  # also after the subcommand, without resetting it
        flags = ("--quiet",) if name == "trec-eval" else ("-q", "--quiet")  # -q: per query
        sp.add_argument(
            *flags,
            action="store_true",
            default=argparse.SUPPRESS,
            help="no progress bars or progress lines",
        )
    return p


_DISK_FULL = {errno.ENOSPC, errno.EDQUOT}


def _os_error_line(e: OSError) -> tuple[int, str]:
    """The exit status and the one line for a file-system error (which path, what happened)."""
    where = e.filename2 or e.filename
    what = e.strerror or type(e).__name__
    if e.errno in _DISK_FULL:
        return EXIT_DISK_FULL, (
            f"{where}: disk full ({what}); what was written before is "
            "intact: free some space and re-run the same command (a run "
            "resumes where it stopped)"
        )
    hint = {
        errno.EACCES: "permission denied",
        errno.EPERM: "not permitted",
        errno.EROFS: "a read-only file system",
        errno.EISDIR: "a folder, not a file",
        errno.ENOTDIR: "a file where a folder was expected",
        errno.EEXIST: "already exists",
    }.get(e.errno)
    return EXIT_FILESYSTEM, (
        f"{where if where is not None else '(no path)'}: {what}"
        + (f" ({hint})" if hint and hint not in what.lower() else "")
    )


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; every expected failure becomes one line on stderr
    and its exit status (see :data:`EXIT_STATUS`), never a traceback. ``--quiet`` silences
    the progress lines (:mod:`membench.core.progress`); ``$MEMBENCH_PROGRESS`` (quiet, lines,
    bar, auto) chooses them otherwise. SIGINT and SIGTERM stop the command within
    :data:`membench.core.stop.STOP_SECONDS` (one line, status 130: :mod:`membench.core.stop`)."""
    from ..content.config import content_scope

    with stop.handling_stops(), content_scope():  # --content holds for this call only
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        a = parser().parse_args(argv)
        mode = "quiet" if a.quiet else os.environ.get("MEMBENCH_PROGRESS") or "auto"
        if mode not in progress.MODES:
            raise MembenchError(
                f"$MEMBENCH_PROGRESS={mode[:40]!r}: expected one of "
                f"{', '.join(progress.MODES)} (or unset)"
            )
        # the call's mode, not the process's from now on; its steps timed under its name
        # a server waits for requests on purpose: no "still working" lines from it
        with (
            progress.configured(mode),
            progress.command(list(argv or sys.argv[1:]), heartbeat=a.func is not _serve_cmd),
        ):
            return a.func(a)
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as e:  # Ctrl-C, SIGINT or SIGTERM (core.stop): one line
        stop.announce(getattr(e, "signum", None) or stop.stopped_by())
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `membench sources | head`
        sys.stderr.close()
        return 0
    except OSError as e:
        code, line = _os_error_line(e)
        print(f"membench: {line}", file=sys.stderr)
        return code
    except RecursionError:  # the readers name the file; this is the last guard
        print("membench: input nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT
