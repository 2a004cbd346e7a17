"""The virtualenv's setup with progress: run a ``pip install`` (or any command), keep its whole
output in a log file, and print a short line as it goes.

    python3 -m membench.core.install_progress --log .venv/pip-install.log \\
        [--timings FILE] [--label TEXT] -- .venv/bin/pip install -e ".[test]"

``pip --quiet`` prints nothing for minutes; pip without it prints hundreds of lines. This
prints, prefixed ``[setup]``: a line when pip moves to another phase (collecting, building,
installing), the packages collected so far and the file being downloaded at most every
``--every`` seconds (10), a "still working" line whenever nothing was printed for
``--heartbeat`` seconds (20: the install itself is one long silent step of pip's), and one
summary line at the end (packages installed, wall time, where the log is). On failure it
prints the last 30 lines of the log to standard error and exits with pip's status. With
``--timings`` it appends one ``{"kind": "command", "tool": "setup", ...}`` row (seconds, ok,
time, load average), so the step table of ``make all`` shows the setup.

Standard library only: it runs with the system's ``python3`` before the virtualenv exists.
Touches: the log file (written anew) and the timings file (one line appended).
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

PREFIX = "[setup]"


def _n(n: int, what: str = "package") -> str:
    return f"{n} {what}{'' if n == 1 else 's'}"


def _fmt(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 90 else f"{int(seconds // 60)}:{int(seconds % 60):02d}"


class Tracker:
    """pip's state, from its output lines."""

    def __init__(self) -> None:
        self.collected = 0
        self.downloading = ""
        self.phase = "starting"
        self.installed: int | None = None
        self.last = ""

    def feed(self, line: str) -> str | None:
        """Take one line; return a phase message when pip moved to another phase."""
        s = line.strip()
        if s:
            self.last = s[:120]
        if s.startswith(("Collecting ", "Obtaining ")):
            self.collected += 1
            if self.phase != "collecting":
                self.phase = "collecting"
                return "resolving and downloading the packages"
        elif s.startswith("Downloading "):
            m = re.match(r"Downloading (\S+)(?:\s+\(([^)]*)\))?", s)
            if m:
                name = m.group(1).rsplit("/", 1)[-1]
                self.downloading = name + (f" ({m.group(2)})" if m.group(2) else "")
        elif s.startswith(("Building wheel", "Building editable", "Building wheels")):
            if self.phase != "building":
                self.phase = "building"
                return "building (membench's C extension, and any package without a wheel)"
        elif s.startswith("Installing collected packages:"):
            n = len([p for p in s.split(":", 1)[1].split(",") if p.strip()])
            self.phase = "installing"
            return (
                f"installing {_n(n)} (unpacking and compiling them: pip prints "
                "nothing until it is done)"
            )
        elif s.startswith("Successfully installed"):
            self.installed = len(s.split()) - 2
        return None

    def status(self) -> str:
        if self.phase == "collecting":
            return f"{_n(self.collected)} collected" + (
                f" (latest download: {self.downloading})" if self.downloading else ""
            )
        if self.phase in ("building", "installing"):
            return f"{self.phase} ({_n(self.collected)} collected)"
        return self.phase


def run(
    cmd: list[str],
    log: Path,
    *,
    label: str,
    every: float = 10.0,
    heartbeat: float = 20.0,
    out=sys.stdout,
) -> tuple[int, float, Tracker]:
    """Run ``cmd`` (see the module docstring); returns its status, the seconds it took and
    what was seen."""
    t0 = time.monotonic()
    log.parent.mkdir(parents=True, exist_ok=True)
    tr = Tracker()
    last_print = t0
    last_status = t0

    def say(text: str) -> None:
        nonlocal last_print
        print(f"{PREFIX} {label}: {text}", file=out, flush=True)
        last_print = time.monotonic()

    shown = " ".join(" ".join(cmd).split())
    say(
        f"started ({shown if len(shown) <= 90 else shown[:87] + '...'}; its whole output "
        f"goes to {log})"
    )
    lines: queue.Queue = queue.Queue()
    with open(log, "w", encoding="utf-8") as f:
        try:
            proc = subprocess.Popen(
                cmd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
                bufsize=1,
            )
        except OSError as e:
            f.write(f"{cmd[0]}: {e}\n")
            say(f"could not start {cmd[0]}: {e}")
            return 127, time.monotonic() - t0, tr

        def pump() -> None:
            assert proc.stdout is not None
            for ln in proc.stdout:
                lines.put(ln)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        while True:
            try:
                ln = lines.get(timeout=1.0)
            except queue.Empty:
                ln = ""
            if ln is None:
                break
            if ln:
                f.write(ln)
                f.flush()
                msg = tr.feed(ln)
                if msg:
                    say(msg)
                    last_status = time.monotonic()
                    continue
            now = time.monotonic()
            if tr.phase == "collecting" and now - last_status >= every and ln:
                say(tr.status())
                last_status = now
            elif now - last_print >= heartbeat:
                say(f"still working, {_fmt(now - t0)} ({tr.status()}; last: {tr.last})")
        rc = proc.wait()
    secs = time.monotonic() - t0
    if rc == 0:
        what = f": {_n(tr.installed)} installed" if tr.installed is not None else ""
        say(f"done{what}, {_fmt(secs)} (log: {log})")
    else:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-30:]
        for t in tail:
            print(t, file=sys.stderr)
        print(
            f"{PREFIX} {label}: failed (exit {rc}) after {_fmt(secs)}; the whole output is "
            f"in {log}",
            file=sys.stderr,
            flush=True,
        )
    return rc, secs, tr


def record(timings: str, label: str, secs: float, ok: bool) -> None:
    """One ``command`` row for the step table (:mod:`membench.core.steptimes`)."""
    try:
        load = round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        load = None
    row = {
        "kind": "command",
        "tool": "setup",
        "command": f"setup: {label}",
        "seconds": round(secs, 3),
        "ok": ok,
        "pid": os.getpid(),
        "t": round(time.time(), 3),
        "load": load,
    }
    try:
        Path(timings).parent.mkdir(parents=True, exist_ok=True)
        with open(timings, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    except OSError:
        pass


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if "--" not in args:
        print(
            "usage: python3 -m membench.core.install_progress --log FILE [--timings FILE] "
            "[--label TEXT] -- COMMAND ...",
            file=sys.stderr,
        )
        return 2
    i = args.index("--")
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--log", required=True, help="where the command's whole output goes")
    ap.add_argument("--timings", help="append the setup's row to this timings file")
    ap.add_argument("--label", default="pip", help="the name on each line")
    ap.add_argument("--every", type=float, default=10.0, help="seconds between count lines")
    ap.add_argument(
        "--heartbeat", type=float, default=20.0, help="a line at least this often (seconds)"
    )
    a = ap.parse_args(args[:i])
    cmd = args[i + 1 :]
    if not cmd:
        print("install_progress: no command after --", file=sys.stderr)
        return 2
    rc, secs, _ = run(cmd, Path(a.log), label=a.label, every=a.every, heartbeat=a.heartbeat)
    if a.timings:
        record(a.timings, a.label, secs, rc == 0)
    return rc


if __name__ == "__main__":
    raise SystemExit(main())
