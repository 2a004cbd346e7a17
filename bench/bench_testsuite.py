"""What the test suite costs: ``make test`` (the whole suite) or ``make test-fast`` (the tests
not marked slow), timed, with the load of the machine before and during the run.

    .venv/bin/python bench/bench_testsuite.py [--target test|test-fast] [--workers auto]
                                              [--log FILE] [--save bench/results/testsuite.json]

Runs pytest as the Makefile's target does (``-n WORKERS --dist loadfile
--no-loadscope-reorder``, and ``-m "not slow"`` for test-fast) from the checkout, with this
interpreter, ``-p no:cacheprovider``, its output into ``--log`` (default: a file under /tmp)
and its JUnit XML beside it. Prints pytest's wall time, its closing
counts and the 1-minute load average before the run and its mean over the run, sampled every
10 s (the machine is shared: a higher load is a slower run; the suite's own workers count in
the mean during it). Exits with pytest's code.

``--save FILE`` (only for a run that passed) writes the record under the target's name,
keeping the other target's, with each test file's seconds (:func:`file_seconds`; the whole
suite's are the order in which tests/conftest.py hands the files to the workers): ``bench/results/testsuite.json`` is the one the docs' lines
(``python -m membench.docsite.blocks README.md docs/index.md docs/speed.md``) and ``make
test``'s own first lines (``python -m membench.core.estimate test``) read.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from datetime import date
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
COUNTS = re.compile(r"(\d+) (passed|failed|skipped|xfailed|xpassed|errors?|deselected)")
FINAL = re.compile(r"^=+ (.*) in ([\d.]+)s")


def pytest_cmd(target: str, workers: str) -> list[str]:
    """The pytest command of the Makefile's target, with the interpreter of this process."""
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-n",
        workers,
        "--dist",
        "loadfile",
        "--no-loadscope-reorder",
        "-p",
        "no:cacheprovider",
    ]
    return cmd + (["-m", "not slow"] if target == "test-fast" else [])


def closing(text: str) -> tuple[dict[str, int], float | None]:
    """pytest's closing counts (``{"passed": 2330, ...}``) and the seconds it states, from the
    last ``=== ... in N s ===`` line of its output."""
    for line in reversed(text.splitlines()):
        m = FINAL.match(line.strip())
        if m:
            counts = {}
            for n, what in COUNTS.findall(m.group(1)):
                counts["errors" if what == "error" else what] = int(n)
            return counts, float(m.group(2))
    return {}, None


def file_seconds(junit: Path) -> dict[str, float]:
    """Seconds per test file (setup, call and teardown of its tests) from pytest's JUnit XML:
    what tests/conftest.py orders the files by, the longest first, under xdist."""
    import xml.etree.ElementTree as ET

    out: dict[str, float] = {}
    try:
        root = ET.parse(junit).getroot()
    except (OSError, ET.ParseError):
        return out
    for case in root.iter("testcase"):
        name = case.get("classname", "").split(".")
        # classname: tests.test_x or tests.test_x.TestClass; the file is its module
        k = next((i for i, x in enumerate(name) if x.startswith("test_")), None)
        if k is not None:
            path = "/".join(name[: k + 1]) + ".py"
            out[path] = out.get(path, 0.0) + float(case.get("time") or 0)
    return {k: round(v, 1) for k, v in sorted(out.items(), key=lambda kv: -kv[1])}


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def commit() -> str | None:
    r = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    )
    return r.stdout.strip() or None if r.returncode == 0 else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", choices=["test", "test-fast"], default="test")
    ap.add_argument(
        "--workers", default="auto", help="pytest-xdist's -n (the Makefile's TEST_WORKERS)"
    )
    ap.add_argument("--log", help="pytest's output (default: a new file under /tmp)")
    ap.add_argument("--save", help="write the record of a passing run into this JSON file")
    a = ap.parse_args(argv)
    log = Path(a.log) if a.log else Path(tempfile.mkstemp(prefix="testsuite-", suffix=".log")[1])
    junit = log.with_suffix(".junit.xml")
    cmd = pytest_cmd(a.target, a.workers) + [f"--junitxml={junit}"]
    loads: list[float] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(10):
            loads.append(os.getloadavg()[0])

    before = os.getloadavg()[0]
    print(f"{' '.join(cmd[1:])}  (load average {before:.2f}; output: {log})", flush=True)
    sampler = threading.Thread(target=sample, daemon=True)
    t0 = time.monotonic()
    sampler.start()
    with open(log, "w") as f:
        code = subprocess.run(cmd, cwd=REPO, stdout=f, stderr=subprocess.STDOUT).returncode
    wall = time.monotonic() - t0
    stop.set()
    text = log.read_text(errors="replace")
    counts, stated = closing(text)
    n = re.search(r"created: (\d+)/\d+ workers|(\d+) workers \[", text)
    workers = int(n.group(1) or n.group(2)) if n else a.workers
    during = sum(loads) / len(loads) if loads else os.getloadavg()[0]
    print(
        f"{a.target} ({workers} workers): {int(wall) // 60}:{int(wall) % 60:02d} wall, "
        f"pytest says {stated} s; {counts}; load average {before:.2f} before, "
        f"{during:.2f} on average during the run; exit {code}"
    )
    if a.save:
        if code != 0:
            print(f"--save: not saved, pytest exited {code}", file=sys.stderr)
            return code
        path = Path(a.save)
        rec = json.loads(path.read_text()) if path.is_file() else {"format": 1, "targets": {}}
        import multiprocessing

        rec["targets"][a.target] = {
            "command": f"make {a.target}",
            "pytest": " ".join(["pytest", *cmd[3:-1]]),
            "seconds": round(wall, 1),
            "counts": counts,
            "workers": workers,
            "cpus": multiprocessing.cpu_count(),
            "cpu_model": cpu_model(),
            "load_before": round(before, 2),
            "load_during": round(during, 2),
            "measured": date.today().isoformat(),
            "commit": commit(),
            "files": file_seconds(junit),
        }
        path.write_text(json.dumps(rec, indent=2) + "\n")
        print(f"saved under {a.target!r} in {path}")
    return code


if __name__ == "__main__":
    raise SystemExit(main())
