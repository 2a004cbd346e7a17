"""Is a Ray run the single-process run? Run one system both ways on the same sets and compare.

    .venv/bin/python bench/ray_identity.py --system bm25 [--modality M ...] [--limit N]
        [--workers 2] [--out /tmp/ray-identity] [--sets bench/sets]

Runs ``membench run`` (local engine) and ``membench run --engine ray --workers N`` into
OUT/<system>-local and OUT/<system>-ray (each resumes if it exists), then compares atoms.jsonl
byte for byte and run.jsonl line by line with ``latency_ms`` removed (same order), and prints
one JSON line: system, modalities, lines compared, atoms compared, equal or not, wall seconds,
and what the local cluster listened on (``ray_listening``: its sockets, all loopback, or the
run would have stopped). Exit 1 when they differ. Outputs stay under OUT (default under /tmp).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def run(args: list[str]) -> float:
    t = time.time()
    subprocess.run(
        [sys.executable, "-m", "membench", "--quiet", "run", *args], cwd=REPO, check=True
    )
    return round(time.time() - t, 1)


def lines(p: Path) -> list[dict]:
    out = []
    for x in (p / "run.jsonl").read_text().splitlines():
        row = json.loads(x)
        row.pop("latency_ms")
        out.append(row)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="bm25")
    ap.add_argument("--modality", action="append")
    ap.add_argument("--limit", type=int)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--out", default="/tmp/ray-identity")
    a = ap.parse_args()
    common = ["--system", a.system, "--sets", a.sets]
    for m in a.modality or []:
        common += ["--modality", m]
    if a.limit:
        common += ["--limit", str(a.limit)]
    tag = (
        a.system
        + ("-" + "-".join(a.modality) if a.modality else "")
        + (f"-limit{a.limit}" if a.limit else "")
    )
    local, ray = Path(a.out) / f"{tag}-local", Path(a.out) / f"{tag}-ray"
    t_local = run([*common, "--out", str(local)])
    t_ray = run([*common, "--out", str(ray), "--engine", "ray", "--workers", str(a.workers)])
    same_atoms = (local / "atoms.jsonl").read_bytes() == (ray / "atoms.jsonl").read_bytes()
    la, lb = lines(local), lines(ray)
    n_atoms = len((local / "atoms.jsonl").read_text().splitlines())
    meta = json.loads((ray / "meta.json").read_text())
    print(
        json.dumps(
            {
                "system": a.system,
                "modalities": meta["modalities"],
                "limit": a.limit,
                "workers": a.workers,
                "run_lines_compared": len(la),
                "run_lines_equal": la == lb,
                "atoms_compared": n_atoms,
                "atoms_byte_identical": same_atoms,
                "local_seconds": t_local,
                "ray_seconds": t_ray,
                "ray_engine": meta["engine"],
                "ray_listening": meta["engine"].get("listening"),
            }
        )
    )
    return 0 if la == lb and same_atoms and la else 1


if __name__ == "__main__":
    sys.exit(main())
