"""What the HTTP client's per-call deadline costs: the same queries with the deadline's
watchdog (membench.core.deadline.Watchdog: armed and disarmed around every call) and with a
watchdog that does nothing, against one ``membench serve`` (bm25, a subprocess on 127.0.0.1).

    .venv/bin/python bench/bench_http_deadline.py [--reps 5] [--queries 300]
        [--sets bench/sets] [--modality conversation]

Each repetition asks the same queries once with each client, in alternating order; the table
gives the client's CPU time per query (this process's ``time.process_time``, which is the
client's own work: the server is another process) and the wall-clock p50 per query, as
min / median / max over the repetitions, and the CPU-time ratio (with / without). The load
average before and after is printed: this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

from membench.core.paths import DEFAULT_SETS_DIR, corpus_root
from membench.run.runner import load_split
from membench.systems.remote import HttpSystem


class NoWatchdog:
    """The watchdog's interface, doing nothing (no deadline: the code before it)."""

    def arm(self, sock, deadline):
        pass

    def disarm(self) -> bool:
        return False

    def close(self):
        pass


def serve(root: Path):
    p = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "membench",
            "--quiet",
            "serve",
            "--system",
            "bm25",
            "--port",
            "0",
            "--corpus",
            str(root),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    m = re.search(r" on (http://\S+) ", p.stdout.readline())
    if not m:
        p.kill()
        raise SystemExit("membench serve did not start")
    return p, m.group(1)


def one(client: HttpSystem, records) -> tuple[float, float]:
    """(client CPU seconds per query, wall p50 ms) over ``records``."""
    walls = []
    c0 = time.process_time()
    for r in records:
        t = time.perf_counter()
        client.query(r.question, r.scope, r.as_of)
        walls.append((time.perf_counter() - t) * 1000)
    return (time.process_time() - c0) / len(records), statistics.median(walls)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--queries", type=int, default=300)
    ap.add_argument("--modality", default="conversation")
    ap.add_argument("--sets", default=str(DEFAULT_SETS_DIR))
    a = ap.parse_args()
    root = corpus_root()
    data = load_split(Path(a.sets), "dev", [a.modality])
    records = data.records[: a.queries]
    load0 = os.getloadavg()
    proc, url = serve(root)
    try:
        with_dog = HttpSystem(url)
        without = HttpSystem(url)
        without._conn.dog = NoWatchdog()
        for c in (with_dog, without):
            c.ingest(data.items, root)  # the second finds the memory on the server
        one(with_dog, records[:20])  # warm both connections and the server
        one(without, records[:20])
        res: dict[str, list[tuple[float, float]]] = {"with": [], "without": []}
        for rep in range(a.reps):
            order = [("with", with_dog), ("without", without)][:: 1 if rep % 2 == 0 else -1]
            for name, c in order:
                res[name].append(one(c, records))
    finally:
        proc.terminate()
        proc.wait(20)
    load1 = os.getloadavg()

    def mmm(xs, scale=1.0, fmt="{:.3f}"):
        xs = [x * scale for x in xs]
        return " / ".join(fmt.format(v) for v in (min(xs), statistics.median(xs), max(xs)))

    print(
        f"bm25 over HTTP, dev {a.modality}: {len(records)} queries, {a.reps} repetitions "
        f"(min / median / max); load average {load0[0]:.1f} before, {load1[0]:.1f} after, "
        f"on {os.cpu_count()} cores\n"
    )
    print("| client | CPU ms per query | wall p50 ms |")
    print("|---|---|---|")
    for name in ("without", "with"):
        print(
            f"| {name} the deadline's watchdog | {mmm([x[0] for x in res[name]], 1000)} | "
            f"{mmm([x[1] for x in res[name]])} |"
        )
    ratios = [w[0] / o[0] for w, o in zip(res["with"], res["without"])]
    print(f"\nCPU-time ratio with / without, per repetition: {mmm(ratios, fmt='{:.3f}')}")


if __name__ == "__main__":
    main()
