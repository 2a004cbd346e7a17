"""The table of what each step cost, from a timings file (``$MEMBENCH_TIMINGS``, written by
:mod:`membench.core.progress`): ``make all`` prints it at the end.

    python -m membench.core.steptimes FILE

One row per membench command (its wall time) and, under it, one per step it ran, nested as
they were opened (``ocr`` inside ``ingest (dense)``), with the items done, how many came from a
cache, and so how many were first-time work (steps that a report's notebook kernels run are
listed after it, outside any command). Steps that overlap (the ``ocr`` workers run while
``content`` and ``embed`` work in the main process) each show their own wall time, so nested
times need not add up. Reads the file only; a line that is not a JSON object is skipped.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


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
        if isinstance(row, dict) and row.get("kind") in ("step", "command"):
            rows.append(row)
    return rows


def table(rows: list[dict]) -> str:
    """Markdown table: commands in the order they ended, each followed by its steps."""
    out = ["| command / step | wall | items | from cache | first-time |",
           "|---|---:|---:|---:|---:|"]
    total = 0.0
    by_pid: dict[tuple, list[dict]] = {}
    for r in rows:
        by_pid.setdefault((r.get("pid"), r.get("command")), []).append(r)
    for (_, command), group in by_pid.items():
        cmd = [r for r in group if r["kind"] == "command"]
        secs = sum(float(r.get("seconds") or 0) for r in cmd)
        total += secs
        bad = "" if all(r.get("ok", True) for r in cmd) else " (failed)"
        if command:
            out.append(f"| **membench {command}**{bad} | {_fmt(secs) if cmd else '?'} | | | |")
        else:   # library calls in another process, e.g. a report's notebook kernel
            out.append("| *steps outside a membench command (a notebook kernel of the report "
                       "above, or a library call)* | | | | |")
        for r in group:
            if r["kind"] != "step":
                continue
            done, hits = int(r.get("done") or 0), r.get("cache_hits")
            pad = "&nbsp;&nbsp;" * (1 + int(r.get("depth") or 0))
            fail = "" if r.get("ok", True) else " (stopped)"
            first = "" if hits is None else str(done - int(hits))
            out.append(f"| {pad}{r.get('step')}{fail} | {_fmt(float(r.get('seconds') or 0))} | "
                       f"{done} | {'' if hits is None else hits} | {first} |")
    out.append(f"| **all commands** | {_fmt(total)} | | | |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m membench.core.steptimes TIMINGS_FILE", file=sys.stderr)
        return 2
    rows = read(args[0])
    if not rows:
        print(f"{args[0]}: no timings recorded", file=sys.stderr)
        return 1
    print(table(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
