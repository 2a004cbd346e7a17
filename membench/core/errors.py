"""Errors that name the file, line and field they are about.

Anything a user can cause with bad input raises :class:`InputError`; the command line prints
its one-line ``str()`` and exits with status 2 instead of showing a traceback.
"""

from __future__ import annotations

from pathlib import Path


class MembenchError(Exception):
    """Base class for errors the CLI reports without a traceback."""


class InputError(MembenchError):
    def __init__(self, file: str | Path, line: int | None, field: str | None, message: str,
                 rule: str = "SCHEMA"):
        self.file = str(file)
        self.line = line
        self.field = field
        self.message = message
        self.rule = rule
        super().__init__(str(self))

    def __str__(self) -> str:
        where = self.file if self.line is None else f"{self.file}:{self.line}"
        what = f"field {self.field}: " if self.field else ""
        return f"{where}: {self.rule}: {what}{self.message}"
