"""One writer per run directory: an exclusive lock held for the life of a command that writes
RUN_DIR (``membench run``, ``import-run``, ``metrics``).

How it works. ``RUN_DIR/.membench.lock`` is opened (created if absent, never truncated on
open) and locked with ``flock(LOCK_EX | LOCK_NB)``. The holder then writes who it is into the
file: ``{"pid", "host", "command", "since"}``. A second writer finds the lock taken and fails at
once with :class:`RunDirLocked`, whose one-line message names the holder (pid, host, command,
since when). On release the holder empties the file and unlocks it; the file itself stays (an
empty lock file means "free"; unlinking it would let two processes lock two different files).

Stale locks. The kernel drops an ``flock`` when its process dies, however it dies (kill -9,
out of memory, power loss of a client on NFS, whose lock manager does the same), so a lock is
never held by a dead process. What a dead holder leaves is its holder line in the file: the next
writer acquires the lock, finds that line, reports on stderr that it takes over from that
process (pid, host, command, since), and overwrites it.

The lock file is opened by :func:`membench.core.atomic.open_regular`: a symlink, a FIFO or
anything else but a regular file there is one located error (``NOT_A_FILE``), never followed
(truncating a symlinked lock would empty the file it points to) and never waited on.

Within one process the lock is re-entrant (``run --metrics`` scores what it just wrote). POSIX
only (``fcntl``). Touches only ``RUN_DIR/.membench.lock`` (and creates RUN_DIR).
"""

from __future__ import annotations

import json
import os
import shlex
import socket
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from .atomic import open_regular
from .errors import InputError, MembenchError

LOCK_NAME = ".membench.lock"

_held: dict[str, int] = {}  # resolved RUN_DIR -> nesting depth (this process)
_fds: dict[str, int] = {}  # resolved RUN_DIR -> the locked file's descriptor


def release_for_exit() -> None:
    """Empty every lock file this process holds (an empty lock file reads as released): for a
    process about to end without unwinding (:mod:`membench.core.stop`'s watchdog); the kernel
    drops the locks themselves when the process ends."""
    for fd in list(_fds.values()):
        try:
            os.ftruncate(fd, 0)
        except OSError:
            pass


class RunDirLocked(MembenchError):
    """Another live process holds the run directory's lock."""

    def __init__(self, run_dir: Path, holder: dict[str, Any] | None):
        self.run_dir, self.holder = run_dir, holder or {}
        super().__init__(str(self))

    def __str__(self) -> str:
        h = self.holder
        who = (
            (
                f"pid {h.get('pid', '?')} on {h.get('host', '?')}, running "
                f"`{h.get('command', '?')}` since {h.get('since', '?')}"
            )
            if h
            else "another process (it has not written its name yet)"
        )
        return (
            f"{self.run_dir}: RUN_DIR_LOCKED: another membench command is writing this run "
            f"directory: {who}; wait for it to finish or stop it (a lock left by a process "
            f"that died is taken over automatically)"
        )


def command_line() -> str:
    """This process's command line, as a user would type it."""
    argv = list(sys.argv)
    if argv and (
        argv[0].endswith("membench") or argv[0].endswith(os.path.join("membench", "__main__.py"))
    ):
        argv[0] = "membench"
    return " ".join(shlex.quote(a) for a in argv)


def _read_holder(fd: int) -> dict[str, Any] | None:
    raw = os.pread(fd, 4096, 0)
    if not raw.strip():
        return None
    try:
        h = json.loads(raw.decode("utf-8", errors="replace"))
    except (ValueError, RecursionError):
        return {"command": "(unreadable lock file)"}
    return h if isinstance(h, dict) else {"command": "(unreadable lock file)"}


def prepare_run_dir(run_dir: str | os.PathLike, create: bool = True) -> Path:
    """``run_dir`` as a folder ready to write: created if absent (unless ``create`` is false:
    only checked); a path that exists and is not a folder is an :class:`InputError` naming
    it."""
    p = Path(run_dir)
    if p.exists() and not p.is_dir():
        raise InputError(
            p,
            None,
            None,
            "exists and is not a folder (RUN_DIR must be a folder; give another --out)",
            rule="RUN_DIR",
        )
    if create:
        p.mkdir(parents=True, exist_ok=True)
    return p


def raise_if_locked(run_dir: str | os.PathLike) -> None:
    """:class:`RunDirLocked` when another live process holds RUN_DIR's lock (a reader asks
    before it refuses an unfinished run, so the message names the writer); nothing to do when
    there is no lock file or this process holds it."""
    import fcntl

    p = Path(run_dir)
    lock = p / LOCK_NAME
    if str(p.resolve()) in _held or not os.path.lexists(lock):
        return
    fd = open_regular(lock, os.O_RDONLY)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirLocked(p, _read_holder(fd)) from None
        fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


@contextmanager
def run_dir_lock(run_dir: str | os.PathLike, command: str | None = None) -> Iterator[Path]:
    """Hold RUN_DIR's exclusive lock for the ``with`` block (see the module docstring); yields
    the run directory (created if absent). Raises :class:`RunDirLocked` when another process
    holds it."""
    import fcntl

    p = prepare_run_dir(run_dir)
    key = str(p.resolve())
    if key in _held:
        _held[key] += 1
        try:
            yield p
        finally:
            _held[key] -= 1
        return
    fd = open_regular(p / LOCK_NAME, os.O_RDWR | os.O_CREAT)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise RunDirLocked(p, _read_holder(fd)) from None
        stale = _read_holder(fd)
        if stale is not None:
            print(
                f"membench: {p}: taking over the lock left by pid {stale.get('pid', '?')} on "
                f"{stale.get('host', '?')} (`{stale.get('command', '?')}`, since "
                f"{stale.get('since', '?')}): that process ended without releasing it",
                file=sys.stderr,
            )
        me = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "command": command or command_line(),
            "since": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(me) + "\n").encode("utf-8"), 0)
        os.fsync(fd)
        _held[key] = 1
        _fds[key] = fd
        try:
            yield p
        finally:
            del _held[key]
            _fds.pop(key, None)
            try:
                os.ftruncate(fd, 0)  # an empty lock file: released cleanly
            except OSError:
                pass
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
