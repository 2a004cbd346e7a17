"""The table of what each step cost, from a timings file (``$MEMBENCH_TIMINGS``, written by
:mod:`membench.core.progress`): ``make all`` prints it at the end.

    python -m membench.core.steptimes FILE [--finish]

A plain-text table for a terminal: one row per command (its wall time) and, under it, one per
step it ran, indented as they were opened (``ocr`` inside ``ingest (dense)``) and in the order
they started, with the items done, how many came from a cache, and so how many were first-time
work. Besides the membench commands: the virtualenv's setup (the ``tool`` rows
:mod:`membench.core.install_progress` writes), and the steps the report's notebook kernels ran,
folded into one block (one row per step name, summed over the kernels). Steps that overlap (the
``ocr`` workers run while ``content`` and ``embed`` work in the main process) each show their
own wall time, so nested times need not add up.

The last lines: the sum of the commands, and the **wall time** of the whole call, from the
``start`` row ``make`` writes before its first step (:mod:`membench.core.estimate`) to now (to
the last row without one), with the 1-minute load average at its start and over its commands,
and the machine's CPUs. ``--finish`` appends an ``end`` row with that wall time, so the next
``make all`` on this machine can quote it. Reads the file only (``--finish``: appends one line);
a line that is not a JSON object is skipped.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

KINDS = ("step", "command", "start", "end")


def _fmt(seconds: float) -> str:
    """``12.3 s`` under a minute, else ``m:ss.s`` (rounded to a tenth first, so 179.96 s is
    ``3:00.0``, never ``2:60.0``)."""
    tenths = round(float(seconds) * 10)
    m, t = divmod(tenths, 600)
    return f"{m}:{t // 10:02d}.{t % 10}" if m else f"{t / 10:.1f} s"


def read(path: str | Path) -> list[dict]:
    rows = []
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError:
        return rows
    for line in text.splitlines():
        try:
            row = json.loads(line)
        except ValueError:
            continue
        if isinstance(row, dict) and row.get("kind") in KINDS:
            rows.append(row)
    return rows


def _num(v, default: float = 0.0) -> float:
    try:
        return float(v)
    except (TypeError, ValueError):
        return default


def _began(r: dict) -> float | None:
    """When a row's step or command started (Unix seconds), if the row says when it ended."""
    if r.get("t") is None:
        return None
    return _num(r["t"]) - _num(r.get("seconds"))


def _render(cells: list[tuple[str, str, str, str, str]]) -> list[str]:
    head = ("command / step", "wall", "items", "from cache", "first-time")
    w = [max(len(c[i]) for c in [head, *cells]) for i in range(5)]

    def line(c):
        return (
            f"{c[0]:<{w[0]}}  {c[1]:>{w[1]}}  {c[2]:>{w[2]}}  {c[3]:>{w[3]}}  {c[4]:>{w[4]}}"
        ).rstrip()

    rule = "-" * len(line(("x" * w[0], "x" * w[1], "x" * w[2], "x" * w[3], "x" * w[4])))
    return [line(head), rule, *(line(c) if c[0] != "-" else rule for c in cells)]


def _step_cells(group: list[dict], indent: int) -> list[tuple[str, str, str, str, str]]:
    steps = [r for r in group if r["kind"] == "step"]
    if all(_began(r) is not None for r in steps):  # parents before their sub-steps
        steps.sort(key=lambda r: (_began(r), int(r.get("depth") or 0)))
    out = []
    for r in steps:
        done, hits = int(r.get("done") or 0), r.get("cache_hits")
        pad = "  " * (indent + int(r.get("depth") or 0))
        fail = "" if r.get("ok", True) else " (stopped)"
        first = "" if hits is None else str(done - int(hits))
        out.append(
            (
                f"{pad}{r.get('step')}{fail}",
                _fmt(_num(r.get("seconds"))),
                str(done),
                "" if hits is None else str(hits),
                first,
            )
        )
    return out


def _kernel_cells(rows: list[dict]) -> list[tuple[str, str, str, str, str]]:
    """Steps run outside any command (the report's notebook kernels): one row per step name,
    summed over the processes."""
    pids = {r.get("pid") for r in rows}
    by: dict[str, list[dict]] = {}
    for r in rows:
        by.setdefault(str(r.get("step")), []).append(r)
    out = [(f"notebook kernels of the report ({len(pids)} processes)", "", "", "", "")]
    for name, rs in by.items():
        secs = sum(_num(r.get("seconds")) for r in rs)
        done = sum(int(r.get("done") or 0) for r in rs)
        times = f" (x{len(rs)})" if len(rs) > 1 else ""
        out.append((f"  {name}{times}", _fmt(secs), str(done), "", ""))
    return out


def _loads(rows: list[dict]) -> tuple[float | None, float | None]:
    vals = [_num(r["load"]) for r in rows if r.get("load") is not None]
    return (min(vals), max(vals)) if vals else (None, None)


def table(rows: list[dict], *, now: float | None = None) -> str:
    """The table (see the module docstring): commands in the order they started, each followed
    by its steps; then the notebook kernels' steps; then the sum and the wall time."""
    groups: dict[tuple, list[dict]] = {}
    kernel: list[dict] = []
    for r in rows:
        if r["kind"] not in ("step", "command"):
            continue
        if not r.get("command") and r["kind"] == "step":
            kernel.append(r)
            continue
        groups.setdefault((r.get("pid"), r.get("command")), []).append(r)

    def order(item):
        cmd = [r for r in item[1] if r["kind"] == "command"]
        b = _began(cmd[0]) if cmd else None
        return b if b is not None else float("inf")

    items = list(groups.items())
    if all(order(i) != float("inf") for i in items):
        items.sort(key=order)
    cells: list[tuple[str, str, str, str, str]] = []
    total = 0.0
    for (_, command), group in items:
        cmd = [r for r in group if r["kind"] == "command"]
        secs = sum(_num(r.get("seconds")) for r in cmd)
        total += secs
        bad = "" if all(r.get("ok", True) for r in cmd) else " (failed)"
        name = command if any(r.get("tool") for r in cmd) else f"membench {command}"
        cells.append((f"{name}{bad}", _fmt(secs) if cmd else "?", "", "", ""))
        cells += _step_cells(group, 1)
    if kernel:
        cells += _kernel_cells(kernel)
    cells.append(("-", "", "", "", ""))
    cells.append(("all commands above, one after the other", _fmt(total), "", "", ""))
    start = next((r for r in rows if r["kind"] == "start"), None)
    lo, hi = _loads([r for r in rows if r["kind"] in ("step", "command")])
    cpus = (start or {}).get("cpus") or os.cpu_count()
    if start is not None and start.get("t") is not None:
        wall = (time.time() if now is None else now) - _num(start["t"])
        what = "wall time, from the start to now"
    else:
        began = [b for r in rows if r["kind"] == "command" and (b := _began(r)) is not None]
        ends = [_num(r["t"]) for r in rows if r["kind"] == "command" and r.get("t") is not None]
        wall = (max(ends) - min(began)) if began and ends else None
        what = "wall time, from the first command's start to the last one's end"
    out = _render(cells)
    if wall is not None:
        out.append(
            f"{what}: {_fmt(wall)}"
            + (
                f" (setup, make and the shell between the commands: {_fmt(wall - total)})"
                if wall - total >= 0.05
                else ""
            )
        )
    if lo is not None:
        at = (
            f"{_num(start['load']):.1f} at the start, "
            if start is not None and start.get("load") is not None
            else ""
        )
        out.append(
            f"load average (1 min): {at}{lo:.1f}-{hi:.1f} as the commands ended, on "
            f"{cpus} CPUs (the machine is shared: a higher load is a slower run)"
        )
    return "\n".join(out)


def wall_seconds(rows: list[dict], now: float | None = None) -> float | None:
    """The wall time from the ``start`` row to ``now`` (``None`` without a start row)."""
    start = next((r for r in rows if r["kind"] == "start"), None)
    if start is None or start.get("t") is None:
        return None
    return (time.time() if now is None else now) - _num(start["t"])


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    finish = "--finish" in args
    args = [a for a in args if a != "--finish"]
    if len(args) != 1:
        print("usage: python -m membench.core.steptimes TIMINGS_FILE [--finish]", file=sys.stderr)
        return 2
    rows = read(args[0])
    if not [r for r in rows if r["kind"] in ("step", "command")]:
        print(f"{args[0]}: no timings recorded", file=sys.stderr)
        return 1
    now = time.time()
    print(table(rows, now=now))
    if finish:
        wall = wall_seconds(rows, now)
        try:
            load = round(os.getloadavg()[0], 2)
        except (AttributeError, OSError):
            load = None
        try:
            with open(args[0], "a", encoding="utf-8") as f:
                f.write(
                    json.dumps(
                        {
                            "kind": "end",
                            "t": round(now, 3),
                            "wall": None if wall is None else round(wall, 3),
                            "load": load,
                        }
                    )
                    + "\n"
                )
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
