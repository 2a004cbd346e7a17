"""Writes that are all or nothing: a reader (or a crash, a full disk, Ctrl-C) sees either the
old file or the whole new one, never a torn one.

The text goes to a temporary file in the same folder (``mkstemp``: a unique name, so two writers
never share it), is flushed and ``fsync``-ed, then ``os.replace``-d over the target (atomic on
POSIX within one file system). On any failure the temporary file is removed and the target is
untouched. Touches only the target and its temporary sibling.

Confinement: membench never writes through a symlink, into a FIFO or onto a device. A target
that exists and is not a regular file is refused before anything is written
(:func:`refuse_special`: one :class:`~membench.core.errors.InputError`, rule ``NOT_A_FILE``,
saying what is there). The race that remains (something swapped in after the check) cannot
reach outside either: ``rename`` replaces a symlink itself, never the file it points to, and
``mkstemp`` creates with ``O_EXCL``. Files written in place (``run.jsonl`` appended to and cut
on resume, the run directory's lock) are opened by :func:`open_regular`: ``O_NOFOLLOW`` (a
symlink fails to open), ``O_NONBLOCK`` (a FIFO never blocks the open) and a check of what was
opened (``fstat``: a regular file, else refused), so there is no window between check and use.
"""

from __future__ import annotations

import errno
import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from .errors import InputError

# mkstemp makes 0600 files; the result gets the mode a plain open() would give it
_UMASK = os.umask(0)
os.umask(_UMASK)


def _what(path: Path, mode: int | None) -> str:
    if mode is None or stat.S_ISLNK(mode):
        try:
            to = f" (to {os.readlink(path)})"
        except OSError:
            to = ""
        return (
            f"is a symlink{to}: membench does not write through symlinks; remove it (or "
            "give another output)"
        )
    kind = (
        "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a folder"
        if stat.S_ISDIR(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    return f"is {kind}, where membench writes a regular file; remove it (or give another output)"


def refuse_special(path: str | os.PathLike) -> None:
    """Nothing when ``path`` is absent or a regular file (not a symlink); else an
    :class:`InputError` (rule ``NOT_A_FILE``) naming what is there: a symlink (and where it
    points), a FIFO, a folder, a device, a socket."""
    path = Path(path)
    try:
        st = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return
    if not stat.S_ISREG(st.st_mode):
        raise InputError(path, None, None, _what(path, st.st_mode), rule="NOT_A_FILE")


def open_regular(path: str | os.PathLike, flags: int, mode: int = 0o666) -> int:
    """``os.open(path, flags)`` for a regular file only, race-free: ``O_NOFOLLOW`` (a symlink
    is refused by the kernel), ``O_NONBLOCK`` while opening (a FIFO cannot block it) and
    ``fstat`` of what was opened. Anything but a regular file is an :class:`InputError` (rule
    ``NOT_A_FILE``); other failures are the ``OSError`` they are. Returns a blocking fd."""
    path = Path(path)
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, mode)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise InputError(path, None, None, _what(path, None), rule="NOT_A_FILE") from None
        if e.errno in (errno.ENXIO, errno.EISDIR):  # a FIFO without reader; a folder
            try:
                m = os.lstat(path).st_mode
            except OSError:
                raise e from None
            raise InputError(path, None, None, _what(path, m), rule="NOT_A_FILE") from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(path, None, None, _what(path, st.st_mode), rule="NOT_A_FILE")
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETFL, fcntl.fcntl(fd, fcntl.F_GETFL) & ~os.O_NONBLOCK)
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_append(path: str | os.PathLike, text: bool = False):
    """``path`` opened to append (created if absent) through :func:`open_regular`: a file
    object (binary, or UTF-8 text with ``text``)."""
    fd = open_regular(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
    return os.fdopen(fd, "a", encoding="utf-8") if text else os.fdopen(fd, "ab")


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (the parent folder must exist); a ``path``
    that is a symlink, a FIFO, a folder or a device is refused (:func:`refuse_special`)."""
    path = Path(path)
    refuse_special(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            os.fchmod(f.fileno(), 0o666 & ~_UMASK)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(e, OSError) and e.filename is None:  # say which file (a full disk)
            raise OSError(e.errno, e.strerror, str(path)) from e
        raise


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Replace ``path`` with UTF-8 ``text`` atomically."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: str | os.PathLike, obj: Any, **dump_kwargs: Any) -> None:
    """Replace ``path`` with ``json.dumps(obj, **dump_kwargs)`` and a final newline, atomically
    (the object is serialised before the file is touched)."""
    atomic_write_text(path, json.dumps(obj, **dump_kwargs) + "\n")
