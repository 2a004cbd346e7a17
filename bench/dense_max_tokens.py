"""How much of an atom the dense reference system should read: whole dev runs of dense at
several input limits, their ranking figures and the CPU time they took.

    .venv/bin/python bench/dense_max_tokens.py [--limits 128,256] [--out DIR]
                                               [--save bench/results/dense-max-tokens.json]
    .venv/bin/python bench/dense_max_tokens.py --from-runs 128=RUN_DIR 256=RUN_DIR --save ...

Each limit runs ``membench run --system dense --split dev --config max_tokens=N`` in a fresh
process with an embedding cache of its own (``--config cache_path=...``: every atom is
embedded, nothing is read from an earlier run; OCR and PDF text come from the shared cache), and
its CPU time (the process and its children, ``RUSAGE_CHILDREN``) is taken. The ranking
figures (recall@10, MRR, nDCG@10, recall@1000) do not depend on the cartridge calibration.
``--from-runs`` records runs made before (their CPU time as measured then, in
``--cpu N=SECONDS``). docs/speed.md and docs/cards.md print the record (block
``dense-max-tokens``).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
KEYS = ("recall@10", "mrr", "ndcg@10", "recall@1000")


def figures(run_dir: Path) -> dict:
    from membench.metrics import metrics_for_run_dir

    m = metrics_for_run_dir(run_dir, write=False)
    return {
        mod: {k: {"value": m[mod][k]["value"], "n": m[mod][k]["n"]} for k in KEYS}
        for mod, v in m.items()
        if isinstance(v, dict) and isinstance(v.get("recall@10"), dict)
    }


def run(limit: int, out: Path) -> tuple[Path, float]:
    d = out / f"max{limit}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    cmd = [
        sys.executable,
        "-m",
        "membench",
        "--quiet",
        "run",
        "--system",
        "dense",
        "--split",
        "dev",
        "--out",
        str(d / "run"),
        "--config",
        f"max_tokens={limit}",
        "--config",
        f"cache_path={d / 'emb.sqlite3'}",
    ]
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    if p.returncode:
        raise SystemExit(p.stderr[-3000:])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return d / "run", (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--limits", default="128,256")
    ap.add_argument("--out", default=None)
    ap.add_argument("--from-runs", nargs="*", default=None, metavar="N=RUN_DIR")
    ap.add_argument("--cpu", nargs="*", default=[], metavar="N=SECONDS")
    ap.add_argument("--save", default=None)
    a = ap.parse_args(argv)
    from membench.core import isa

    rows = {}
    if a.from_runs:
        cpu = {int(k): float(v) for k, v in (x.split("=", 1) for x in a.cpu)}
        for item in a.from_runs:
            k, v = item.split("=", 1)
            rows[int(k)] = {"figures": figures(Path(v)), "cpu_seconds": cpu.get(int(k))}
    else:
        out = Path(a.out or tempfile.mkdtemp(prefix="dense-max-tokens-"))
        for limit in (int(x) for x in a.limits.split(",")):
            rd, secs = run(limit, out)
            rows[limit] = {"figures": figures(rd), "cpu_seconds": round(secs, 1)}
            print(
                f"max_tokens={limit}: recall@10 {rows[limit]['figures']['all']['recall@10']}"
                f" in {secs:.0f} CPU s",
                file=sys.stderr,
            )
    d = isa.describe()
    rec = {
        "command": "bench/dense_max_tokens.py",
        "date": time.strftime("%Y-%m-%d"),
        "path": d["isa"],
        "cpu": d["cpu_model"],
        "limits": {str(k): v for k, v in sorted(rows.items())},
    }
    print(json.dumps(rec, indent=1))
    if a.save:
        Path(a.save).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
