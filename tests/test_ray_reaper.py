"""The Ray reaper (membench/run/ray_reaper.py) finds a cluster's processes by the tree they
were born in, not only by what they name: a process that names nothing of the cluster (as
Ray's agents after they retitle themselves) and whose parent died is still reaped when the
driver's pipe closes. No Ray here: a tagged parent and an untagged child stand in for the
raylet and an agent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REAPER = Path(__file__).resolve().parents[1] / "membench" / "run" / "ray_reaper.py"
HANG_GUARD = 60


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except OSError:
        return False


def test_a_retitled_orphan_of_the_cluster_is_reaped(tmp_path):
    folder = tmp_path / "mbray-test"
    folder.mkdir()
    child_pid = tmp_path / "child.pid"
    reaper = subprocess.Popen(
        [sys.executable, str(REAPER)], stdin=subprocess.PIPE, start_new_session=True
    )
    reaper.stdin.write(f"{folder}\n".encode())
    reaper.stdin.flush()
    # the "raylet": names the folder on its command line; its child names nothing
    code = (
        "import subprocess, sys, time\n"
        "c = subprocess.Popen(['sleep', '300'], env={}, start_new_session=True)\n"
        "open(sys.argv[1], 'w').write(str(c.pid))\n"
        "time.sleep(300)\n"
    )
    parent = subprocess.Popen([sys.executable, "-c", code, str(child_pid), str(folder)])
    child = None
    try:
        deadline = time.time() + HANG_GUARD
        while not child_pid.exists() or not child_pid.read_text():
            assert time.time() < deadline
            time.sleep(0.05)
        child = int(child_pid.read_text())
        assert str(folder).encode() not in Path(f"/proc/{child}/cmdline").read_bytes()
        assert str(folder).encode() not in Path(f"/proc/{child}/environ").read_bytes()
        time.sleep(1.5)  # the reaper has seen the tree (every 0.5 s)
        parent.kill()  # the "raylet" dies first: its child is orphaned
        parent.wait(HANG_GUARD)
        assert _alive(child)
        reaper.stdin.close()  # the driver is gone
        reaper.wait(HANG_GUARD)
        deadline = time.time() + HANG_GUARD
        while _alive(child) and time.time() < deadline:
            time.sleep(0.1)
        assert not _alive(child), "the orphaned child of the cluster outlived the reaper"
        assert not folder.exists()
    finally:
        for p in (parent, reaper):
            if p.poll() is None:
                p.kill()
        if child is not None and _alive(child):
            os.kill(child, signal.SIGKILL)
