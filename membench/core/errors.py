"""Errors that name the file, line and field they are about, and the exit codes they map to.

Anything a user can cause with bad input raises :class:`InputError` (or, when no file is
involved, :class:`MembenchError`); the command line prints its one-line ``str()`` and exits with
status 2 instead of showing a traceback. The exit statuses of ``membench`` (README, "What bad
input gets"):

====  =====================================================================================
0     done
1     a check ran and failed (``validate`` findings, ``corpus check`` drift, a build that
      differs from the lock)
2     bad input or arguments: a located ``file:line: RULE: field ...: message`` line, a
      refused argument, a run directory locked by another process
3     the file system refused (permission denied, read-only folder, a file where a folder
      was expected, ...)
4     disk full (no space left, quota exceeded)
130   interrupted (Ctrl-C, SIGINT or SIGTERM: :mod:`membench.core.stop`); what was already
      written is intact and a run resumes
====  =====================================================================================
"""

from __future__ import annotations

from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_BAD_INPUT = 2
EXIT_FILESYSTEM = 3
EXIT_DISK_FULL = 4
EXIT_INTERRUPTED = 130


class MembenchError(Exception):
    """Base class for errors the CLI reports without a traceback."""


class InputError(MembenchError):
    """Bad input at a place: ``file`` (and ``line``, ``field`` when known) breaks ``rule``."""

    def __init__(
        self,
        file: str | Path,
        line: int | None,
        field: str | None,
        message: str,
        rule: str = "SCHEMA",
    ):
        self.file = str(file)
        self.line = line
        self.field = field
        self.message = message
        self.rule = rule
        super().__init__(str(self))

    def __reduce__(self):  # picklable (an error raised in a worker process reaches the caller)
        return (type(self), (self.file, self.line, self.field, self.message, self.rule))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        what = f"field {self.field}: " if self.field else ""
        return f"{where}: {self.rule}: {what}{self.message}"
