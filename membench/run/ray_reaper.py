"""The local Ray cluster's reaper: what is left of it dies with the driver that started it.

:func:`membench.run.ray_engine.cluster` starts this script (standard library only, so it
starts in milliseconds) as a child in its own session, writes the cluster's folder on its
standard input and keeps the pipe open for as long as the cluster should live. When the pipe
closes, because the driver shut the cluster down or because the driver died (killed with
SIGKILL, out of memory: no ``finally`` runs), the reaper kills the cluster's processes and
removes the folder, then exits. Ray's own fate-sharing leaves its agents alive for longer than
15 s after a killed driver; this does not wait for them.

The cluster's processes are found two ways: by what they name (the command line or the
environment holds the folder: every process of the cluster has its ``PYTHONPATH`` entry under
it), and by the **process tree**: while the pipe is open, every half second, the reaper
records each tagged process's descendants with their start time (``/proc/PID/stat`` field 22,
so a reused PID is never taken for one). A process that retitles itself (Ray's Dashboard and
RuntimeEnv agents do, and a title written over ``argv`` also overwrites what
``/proc/PID/environ`` shows) is still known by where it was born, even once its parent has
died and it has been handed to init.
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path


def session_pids(tag: bytes, skip: set[int]) -> list[int]:
    """Processes (not in ``skip``) whose command line or environment contains ``tag``."""
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) in skip:
            continue
        for f in ("cmdline", "environ"):
            try:
                if tag in (d / f).read_bytes():
                    out.append(int(d.name))
                    break
            except OSError:
                pass
    return out


def _stat(pid: int) -> tuple[int, int] | None:
    """``(ppid, start time in clock ticks)`` of a live process, else None."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    rest = raw[raw.rfind(b")") + 2 :].split()  # after "pid (comm) ": state is field 3
    try:
        return int(rest[1]), int(rest[19])
    except (IndexError, ValueError):
        return None


def tree(tag: bytes, skip: set[int]) -> dict[int, int]:
    """The processes naming ``tag`` (:func:`session_pids`) and all their descendants, as
    ``{pid: start time}`` (``skip`` and its descendants left out)."""
    stats = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            st = _stat(int(d.name))
            if st is not None:
                stats[int(d.name)] = st
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in stats.items():
        children.setdefault(ppid, []).append(pid)
    out: dict[int, int] = {}
    todo = [p for p in session_pids(tag, skip) if p in stats]
    while todo:
        pid = todo.pop()
        if pid in out or pid in skip:
            continue
        out[pid] = stats[pid][1]
        todo += children.get(pid, [])
    return out


def _alive_as(pid: int, start: int) -> bool:
    st = _stat(pid)
    return st is not None and st[1] == start


def reap(
    folder: str,
    skip: set[int],
    quiet_s: float = 5.0,
    limit_s: float = 12.0,
    known: dict[int, int] | None = None,
) -> int:
    """Kill what names ``folder`` in rounds until none has been seen for ``quiet_s`` (a dying
    raylet or agent may start one more process, later on a loaded machine: a full test run
    saw one start more than 1 s after the last kill, and with 2.5 s of quiet the Dashboard and
    RuntimeEnv agents still outlived a killed driver in 2 of 4 runs here), for at most
    ``limit_s``; remove the folder; returns how many processes were killed. ``known``: the
    processes seen in the cluster's tree while it lived (``{pid: start time}``), killed too
    where the same process still runs."""
    killed = 0
    known = dict(known or {})
    start = last_seen = time.monotonic()
    while True:
        now = time.monotonic()
        found = tree(folder.encode(), skip)
        known.update(found)
        pids = sorted(p for p, t in known.items() if p not in skip and _alive_as(p, t))
        if pids:
            last_seen = now
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                    killed += 1
                except OSError:
                    pass
        elif now - last_seen >= quiet_s or now - start >= limit_s:
            break
        time.sleep(0.1)
    shutil.rmtree(folder, ignore_errors=True)
    return killed


def main() -> int:
    for sig in (signal.SIGINT, signal.SIGHUP):  # Ctrl-C is the driver's to handle
        signal.signal(sig, signal.SIG_IGN)
    folder = sys.stdin.readline().strip()
    parent = os.getppid()
    if not folder:
        return 2
    known = watch(folder, {os.getpid(), parent})  # until the driver closes the pipe, or dies
    skip = {os.getpid()}
    if os.getppid() == parent:  # the driver is alive (a normal shutdown): spare it
        skip.add(parent)
    reap(folder, skip, known=known)
    return 0


def watch(folder: str, skip: set[int], every_s: float = 0.5) -> dict[int, int]:
    """Record the cluster's process tree (:func:`tree`) every ``every_s`` until standard input
    closes; returns every process seen, ``{pid: start time}``."""
    import select

    known: dict[int, int] = {}
    fd = sys.stdin.fileno()
    while True:
        known.update(tree(folder.encode(), skip))
        ready, _, _ = select.select([fd], [], [], every_s)
        if ready and not os.read(fd, 65536):
            return known


if __name__ == "__main__":
    sys.exit(main())
