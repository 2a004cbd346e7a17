"""How long a ``membench run`` takes to stop after SIGINT or SIGTERM (membench/core/stop.py).

    .venv/bin/python bench/bench_stop.py [--repeats 6] [--signal SIGTERM] [--ignore-sigint]
                                         [--system hostile_world:Gated] [--timeout 30]

Each repeat starts a run of the test system ``hostile_world:Gated`` (tests/hostile_world.py: a
small world, an ingest that waits on a gate file) on a fresh world, waits until it is
ingesting, sends the signal and measures the wall time to its exit, with its status and its
one stderr line. ``--ignore-sigint`` starts the run with SIGINT ignored, as a background job of
a non-interactive shell starts (what made a run ignore SIGINT before membench handled it);
``--system hostile_world:Stubborn`` swallows the interrupt (the watchdog ends it). Prints each
repeat, then min / median / max and the load average before and after (the machine is shared:
load other work puts on it shows here). A repeat that does not exit within ``--timeout`` is
killed and reported as such.
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))

from hostile_world import cli_args, membench_cmd, subprocess_env, write_world  # noqa: E402


def one(sig: int, ignore: bool, system: str, timeout: float) -> tuple[float | None, int, str]:
    tmp = Path(tempfile.mkdtemp(prefix="membench-stop-"))
    world = write_world(tmp / "w")
    pre = (lambda: signal.signal(signal.SIGINT, signal.SIG_IGN)) if ignore else None
    p = subprocess.Popen(
        membench_cmd("run", "--system", system, *cli_args(world), "--out", str(tmp / "run")),
        env={**subprocess_env(), "MEMBENCH_TEST_GATE": str(tmp / "gate")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=pre,
    )
    while not (tmp / "ingesting").exists():
        if p.poll() is not None:
            raise SystemExit(f"the run ended before ingesting: {p.communicate()}")
        time.sleep(0.02)
    p.send_signal(sig)
    t0 = time.monotonic()
    try:
        _, err = p.communicate(timeout=timeout)
        took: float | None = time.monotonic() - t0
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
        took = None
    (tmp / "gate").write_text("go")
    return took, p.returncode, err.strip().splitlines()[-1] if err.strip() else ""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=6)
    ap.add_argument("--signal", default="SIGINT", choices=["SIGINT", "SIGTERM"])
    ap.add_argument("--ignore-sigint", action="store_true")
    ap.add_argument("--system", default="hostile_world:Gated")
    ap.add_argument("--timeout", type=float, default=30.0)
    a = ap.parse_args()
    sig = getattr(signal, a.signal)
    load0 = os.getloadavg()[0]
    times = []
    for i in range(a.repeats):
        took, code, line = one(sig, a.ignore_sigint, a.system, a.timeout)
        print(
            f"#{i}: {'no exit within %gs' % a.timeout if took is None else f'{took:.2f} s'}, "
            f"status {code}: {line[:100]}",
            flush=True,
        )
        if took is not None:
            times.append(took)
    load1 = os.getloadavg()[0]
    if times:
        print(
            f"{a.signal}{' (SIGINT ignored at start)' if a.ignore_sigint else ''}, "
            f"{a.system}: {len(times)}/{a.repeats} exited; signal to exit min "
            f"{min(times):.2f} s, median {statistics.median(times):.2f} s, max "
            f"{max(times):.2f} s; load average {load0:.1f} -> {load1:.1f}"
        )
    else:
        print(f"no repeat exited within {a.timeout:g} s; load average {load0:.1f} -> {load1:.1f}")


if __name__ == "__main__":
    main()
