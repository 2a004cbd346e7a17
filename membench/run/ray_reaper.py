"""The local Ray cluster's reaper: what is left of it dies with the driver that started it.

:func:`membench.run.ray_engine.cluster` starts this script (standard library only, so it
starts in milliseconds) as a child in its own session, writes the cluster's folder on its
standard input and keeps the pipe open for as long as the cluster should live. When the pipe
closes, because the driver shut the cluster down or because the driver died (killed with
SIGKILL, out of memory: no ``finally`` runs), the reaper kills every process whose command
line or environment names the folder (every process of the cluster has its ``PYTHONPATH``
entry under it: the GCS, the raylet, the dashboard's agents, the runtime-env agent, the
workers) and removes the folder, then exits. Ray's own fate-sharing leaves its agents alive
for longer than 15 s after a killed driver; this does not wait for them.
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


def reap(folder: str, skip: set[int], quiet_s: float = 5.0, limit_s: float = 12.0) -> int:
    """Kill what names ``folder`` in rounds until none has been seen for ``quiet_s`` (a dying
    raylet or agent may start one more process, later on a loaded machine: a full test run
    saw one start more than 1 s after the last kill, and with 2.5 s of quiet the Dashboard and
    RuntimeEnv agents still outlived a killed driver in 2 of 4 runs here), for at most
    ``limit_s``; remove the folder; returns how many processes were killed."""
    killed = 0
    start = last_seen = time.monotonic()
    while True:
        now = time.monotonic()
        pids = session_pids(folder.encode(), skip)
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
    for sig in (signal.SIGINT, signal.SIGHUP):      # Ctrl-C is the driver's to handle
        signal.signal(sig, signal.SIG_IGN)
    folder = sys.stdin.readline().strip()
    parent = os.getppid()
    if not folder:
        return 2
    sys.stdin.read()                    # blocks until the driver closes the pipe, or dies
    skip = {os.getpid()}
    if os.getppid() == parent:          # the driver is alive (a normal shutdown): spare it
        skip.add(parent)
    reap(folder, skip)
    return 0


if __name__ == "__main__":
    sys.exit(main())
