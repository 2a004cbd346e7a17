"""Does the dense reference system give the same rankings and figures on the AVX2 path as on
the machine's own? Two dev runs, one per path, compared query by query.

    .venv/bin/python bench/dense_isa.py [--system dense] [--modality M ...] [--limit N]
                                        [--out DIR] [--save bench/results/dense-isa.json]

Each path runs ``membench run --system dense --split dev`` in a fresh process with an
embedding cache of its own (``--config cache_path=...``; the OCR and PDF caches are shared:
they do not depend on the instruction set): ``native`` as the CPU offers, ``avx2`` under
``python -m membench.core.isa avx2`` (every library sees an x86-64-v3 CPU). Then, per query,
the ranked atom ids of the two run.jsonl files (order included) and the cartridges are
compared (a cartridge that differs only because two atoms whose scores are within
:data:`TIE` swapped places, so that the token budget admitted the other one, is listed in
``cartridges_differing_by_a_tie``), and so are the figures of the two runs (every modality, every key of the frozen
figures, to the printed 4 decimals and to 1e-12), and every cached vector of one path with
the other's (largest absolute difference). ``--save`` writes the comparison as a record
(docs/speed.md prints it; ``tests/test_dense_isa.py`` holds a live run of part of dev to
the same bar and the record to the frozen figures).
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def run(
    path: str,
    out: Path,
    system: str,
    modalities: list[str],
    limit: int | None,
    sets: Path,
    config: list[str],
) -> float:
    """One dev run on ``path`` into ``out/<path>`` (its embedding cache beside it); seconds."""
    from membench.core import isa

    d = out / path
    cmd = [
        sys.executable,
        "-m",
        "membench",
        "--quiet",
        "run",
        "--system",
        system,
        "--split",
        "dev",
        "--sets",
        str(sets),
        "--out",
        str(d / "run"),
        "--config",
        f"cache_path={d / 'emb.sqlite3'}",
    ]
    for c in config:
        cmd += ["--config", c]
    for m in modalities:
        cmd += ["--modality", m]
    if limit:
        cmd += ["--limit", str(limit)]
    env = dict(os.environ)
    if path == "avx2":
        env = isa.avx2_env(env)
    t = time.perf_counter()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, cwd=REPO)
    if p.returncode:
        raise SystemExit(f"{path} run failed:\n{p.stderr[-3000:]}")
    return time.perf_counter() - t


def lines(run_dir: Path) -> dict[str, dict]:
    out = {}
    with open(run_dir / "run.jsonl", encoding="utf-8") as f:
        for line in f:
            o = json.loads(line)
            out[o["query_id"]] = o
    return out


def vectors(path: Path) -> dict[bytes, bytes]:
    con = sqlite3.connect(path)
    try:
        return {bytes(k): bytes(v) for k, v in con.execute("SELECT key, vec FROM emb")}
    finally:
        con.close()


#: two scores closer than this are a tie the CPU's float noise may order either way
TIE = 1e-5


def compare(out: Path, sets: Path) -> dict:
    import numpy as np

    from membench.analysis.expected import KEYS
    from membench.metrics import metrics_for_run_dir

    a, b = lines(out / "native" / "run"), lines(out / "avx2" / "run")
    if set(a) != set(b):
        raise SystemExit("the two runs hold different queries")
    same_hits = same_order_ids = same_cart = 0
    tie_flips = []  # cartridges that differ only because two tied atoms swapped places
    first = None
    score_gap = 0.0  # the largest difference between the two scores at one rank
    deepest = None  # the highest rank (1-based) at which the two orders differ
    for q in sorted(a):
        ha = [h[0] for h in a[q]["hits"]]
        hb = [h[0] for h in b[q]["hits"]]
        same_order_ids += ha == hb
        same_hits += sorted(ha) == sorted(hb)
        if len(ha) == len(hb):
            score_gap = max(
                [score_gap] + [abs(x[1] - y[1]) for x, y in zip(a[q]["hits"], b[q]["hits"])]
            )
        if ha != hb:
            i = next(i for i, (x, y) in enumerate(zip(ha, hb)) if x != y)
            deepest = i + 1 if deepest is None else min(deepest, i + 1)
        same_cart += a[q]["cartridge"] == b[q]["cartridge"]
        if a[q]["cartridge"] != b[q]["cartridge"]:
            sa = {h[0]: h[1] for h in a[q]["hits"]}
            swaps = [(x, y) for x, y in zip(ha, hb) if x != y]
            if sorted(ha) == sorted(hb) and all(abs(sa[x] - sa[y]) < TIE for x, y in swaps):
                tie_flips.append(q)
        if first is None and (ha != hb or a[q]["cartridge"] != b[q]["cartridge"]):
            first = q
    fa = metrics_for_run_dir(out / "native" / "run", sets, write=False)
    fb = metrics_for_run_dir(out / "avx2" / "run", sets, write=False)
    mods = [
        m for m, v in fa.items() if isinstance(v, dict) and isinstance(v.get("recall@10"), dict)
    ]
    total = printed = exact = 0
    differ = []
    for mod in mods:
        for k in KEYS:
            if k.startswith("latency") or not isinstance(fa[mod].get(k), dict):
                continue
            x, y = fa[mod][k]["value"], fb[mod][k]["value"]
            if x is None or y is None:
                ok4 = ok = x is y
            else:
                ok4, ok = f"{x:.4f}" == f"{y:.4f}", abs(x - y) <= 1e-12
            total += 1
            printed += ok4
            exact += ok
            if not ok:
                differ.append(f"{mod} {k}: {x} / {y}")
    va, vb = vectors(out / "native" / "emb.sqlite3"), vectors(out / "avx2" / "emb.sqlite3")
    common = sorted(set(va) & set(vb))
    diff = max(
        (
            float(np.abs(np.frombuffer(va[k], np.float32) - np.frombuffer(vb[k], np.float32)).max())
            for k in common
        ),
        default=0.0,
    )
    return {
        "queries": len(a),
        "identical_rankings": same_order_ids,
        "largest_score_difference_at_a_rank": score_gap,
        "first_rank_that_differs": deepest,
        "identical_hit_sets": same_hits,
        "identical_cartridges": same_cart,
        "tie": TIE,
        "cartridges_differing_by_a_tie": tie_flips,
        "first_difference": first,
        "figures": total,
        "figures_equal_printed": printed,
        "figures_equal_1e-12": exact,
        "figures_differing": differ,
        "vectors_compared": len(common),
        "largest_vector_difference": diff,
        "all_figures": {
            mod: {
                k: fa[mod][k]["value"]
                for k in KEYS
                if not k.startswith("latency") and isinstance(fa[mod].get(k), dict)
            }
            for mod in mods
        },
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--system", default="dense")
    ap.add_argument("--modality", action="append", default=[])
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--config", action="append", default=[])
    ap.add_argument("--out", default=None)
    ap.add_argument("--save", default=None)
    a = ap.parse_args(argv)
    from membench.core import isa

    why = isa.can_mask()
    if why:
        raise SystemExit(f"cannot force the AVX2 path here: {why}")
    import tempfile

    out = Path(a.out or tempfile.mkdtemp(prefix="dense-isa-"))
    secs = {
        p: run(p, out, a.system, a.modality, a.limit, Path(a.sets), a.config)
        for p in ("native", "avx2")
    }
    res = compare(out, Path(a.sets))
    d = isa.describe()
    res.update(
        {
            "system": a.system,
            "modalities": a.modality or "all",
            "limit": a.limit,
            "config": a.config,
            "seconds": secs,
            "cpu": d["cpu_model"],
            "native_path": d["cpu_class"],
            "date": time.strftime("%Y-%m-%d"),
            "command": "bench/dense_isa.py"
            + "".join(f" --modality {m}" for m in a.modality)
            + (f" --limit {a.limit}" if a.limit else ""),
        }
    )
    print(json.dumps({k: v for k, v in res.items() if k != "all_figures"}, indent=1))
    if a.save:
        Path(a.save).write_text(json.dumps(res, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
