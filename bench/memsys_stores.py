"""The real memory libraries both ways: one store for every holder (a multi-tenant memory, as
``membench run`` runs them by default) and one store per modality (``--config stores=modality``),
so the figures say how a library's query time grows with its store.

    .venv/bin/python bench/memsys_stores.py --systems llamaindex mem0 --limit 20

runs, one after the other, ``membench run --system S --split dev --limit N --config
stores=MODE --config calibration=none --out RUNS/S-MODE-limitN --metrics`` for each system and
both modes (a run resumes; the whole dev memory is ingested either way: a LIMIT run asks N
queries per modality of nearly every dev holder), then writes every run's figures and the
store it was asked of (meta.json ``store``: atoms and holders per store) to ``--json``
(default ``bench/results/memsys-stores.json``). The docs' results page prints its table from
that file (``membench.docsite.blocks``, block ``memsys-stores``). Latency is the runner's, per
query, on this machine at the load it had: the script records the load average before and
after each run.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODES = ("one", "modality")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--systems",
        nargs="+",
        default=["llamaindex", "mem0"],
        help="library adapters (default: llamaindex mem0)",
    )
    ap.add_argument("--limit", type=int, default=20, help="queries per modality (default 20)")
    ap.add_argument("--runs", default="runs/stores", help="where the run folders go")
    ap.add_argument(
        "--json", default="bench/results/memsys-stores.json", help="the figures file to write"
    )
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=MODES)
    a = ap.parse_args(argv)
    from membench.analysis.expected import figures

    out = []
    for system in a.systems:
        for mode in a.modes:
            run = Path(a.runs) / f"{system}-{mode}-limit{a.limit}"
            cmd = [
                sys.executable,
                "-m",
                "membench",
                "run",
                "--system",
                system,
                "--split",
                "dev",
                "--limit",
                str(a.limit),
                "--config",
                f"stores={mode}",
                "--config",
                "calibration=none",
                "--content",
                "ocr_processes=2",
                "--out",
                str(run),
                "--metrics",
            ]
            load0, t0 = os.getloadavg(), time.monotonic()
            done = (run / "meta.json").is_file() and json.loads(
                (run / "meta.json").read_text()
            ).get("status") == "complete"
            if done:  # a complete run is scored again, not run again
                print(f"== {run}: complete; membench metrics", flush=True)
                r = subprocess.run(
                    [sys.executable, "-m", "membench", "metrics", str(run)],
                    cwd=REPO,
                    stdout=subprocess.DEVNULL,
                )
            else:
                print(f"== {' '.join(cmd[2:])}", flush=True)
                r = subprocess.run(cmd, cwd=REPO)
            if r.returncode:
                return r.returncode
            fig = figures(run)
            meta = json.loads((run / "meta.json").read_text())
            fig["command"] = " ".join(["membench", *cmd[3:]])
            fig["mode"] = mode
            fig["measured"] = {
                "wall_seconds": None if done else round(time.monotonic() - t0, 1),
                "ingest_seconds": meta.get("ingest_seconds"),
                "query_seconds": meta.get("query_seconds"),
                # (not known for a run made by an earlier call)
                "load_before": None if done else [round(x, 2) for x in load0],
                "load_after": None if done else [round(x, 2) for x in os.getloadavg()],
                "cpus": os.cpu_count(),
                "code_revision": meta["code_revision"],
            }
            out.append(fig)
    path = Path(a.json)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        json.dumps({"split": "dev", "limit": a.limit, "runs": out}, indent=1, sort_keys=True) + "\n"
    )
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
