"""The power table: how small a difference between two systems the dev split can tell.

    .venv/bin/python bench/power.py            # about 2 min (the runs' scores, then simulations)

reads the built sets (``--sets``, default ``bench/sets``) and every complete dev run under
``--runs`` (default ``runs/``) made on those set files that is not a test double (the systems
the report's "which system is best" compares), and writes per modality and over all items:
dev holders, records, answerable records and audited unanswerable records (from the set
files), and the minimum detectable difference at 80% power, two-sided alpha 0.05, of the paired
test for recall@10 and for false recall (audited), for a typical pair of those runs
(:func:`membench.analysis.power.typical_pair`). It then checks the normal approximation against
membench's own paired test by simulation (:func:`membench.analysis.power.simulate_power`) on
the modality with the most answerable records read by record, and over all items by holder.
Writes ``--json`` (default ``bench/results/power.json``); docs/sets.md's ``power`` block is
printed from it (:mod:`membench.docsite.blocks`). The method: docs/sets.md, "How small a
difference the dev split can tell".
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SPLIT = "dev"


def set_counts(sets: Path, split: str = SPLIT) -> tuple[dict, set[str]]:
    """``{scope: {holders, records, answerable, audited_unanswerable}}`` of ``split`` from the
    set files (each modality present, then ``all``), and the split's query ids."""
    from membench.contract.schema import AnnotationRecord
    from membench.contract.tells import audited
    from membench.core.jsonl import read_models
    from membench.modalities import MODALITIES

    out: dict = {}
    ids: set[str] = set()
    every: dict = {"holders": set(), "records": 0, "answerable": 0, "audited_unanswerable": 0}
    for m in MODALITIES:
        path = sets / f"{m}.jsonl"
        if not path.exists():
            continue
        recs = [r for r in read_models(path, AnnotationRecord) if r.split == split]
        if not recs:
            continue
        ids |= {r.query_id for r in recs}
        c = {
            "holders": {r.scope.holder for r in recs},
            "records": len(recs),
            "answerable": sum(not r.unanswerable for r in recs),
            "audited_unanswerable": sum(r.unanswerable and audited(r) for r in recs),
        }
        for k in every:
            every[k] = every[k] | c[k] if k == "holders" else every[k] + c[k]
        out[m] = c
    out["all"] = every
    return {s: {**c, "holders": len(c["holders"])} for s, c in out.items()}, ids


def find_runs(runs: Path, sets: Path, split: str = SPLIT) -> list[Path]:
    """The run directories under ``runs`` of ``split``, complete, made on ``sets``' files
    (sha256) and not test doubles, by name."""
    from membench.metrics.rundir import read_meta
    from membench.sets.build import set_digests

    digests = set_digests(sets)
    out = []
    for d in sorted(p for p in runs.iterdir() if (p / "meta.json").is_file()):
        meta = read_meta(d)
        if meta.get("split") != split or (meta.get("identity") or {}).get("kind") == "test double":
            continue
        if meta.get("limit") or meta.get("status") not in (None, "complete"):
            continue
        rec = meta.get("set_sha256") or {}
        if any(digests.get(f) != h for f, h in rec.items()):
            print(f"{d}: made on other set files, left out", file=sys.stderr)
            continue
        out.append(d)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--runs", default=str(REPO / "runs"))
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "power.json"))
    ap.add_argument("--sims", type=int, default=400, help="simulated comparisons per check")
    a = ap.parse_args(argv)

    from membench.analysis.power import differences, power_table, simulate_power
    from membench.core.errors import MembenchError
    from membench.metrics.rundir import RunDir
    from membench.sets.build import set_digests

    sets, runs = Path(a.sets), Path(a.runs)
    counts, ids = set_counts(sets)
    dirs = find_runs(runs, sets)
    if len(dirs) < 2:
        raise MembenchError(
            f"{runs}: fewer than two complete {SPLIT} runs of systems on "
            f"{sets}'s set files (found {[d.name for d in dirs]})"
        )
    scores = {}
    for d in dirs:
        rd = RunDir.open(d, sets)
        sc = rd.scores()
        if set(sc.query_id) != ids:
            raise MembenchError(
                f"{d}: evaluates {len(sc.query_id)} queries, not the "
                f"{len(ids)} {SPLIT} records of {sets}"
            )
        scores[rd.meta.get("system") or d.name] = sc
    table = power_table(scores)

    sims = []
    rows = [
        (s, r["recall@10"])
        for s, r in table.items()
        if s != "all" and r["recall@10"]["unit"] == "records" and r["recall@10"]["mdd"]
    ]
    checks = []
    if rows:
        checks.append(max(rows, key=lambda x: x[1]["n"]))
    if table["all"]["recall@10"]["mdd"]:
        checks.append(("all", table["all"]["recall@10"]))
    for scope, row in checks:
        pa, pb = row["median_pair"].split(" vs ")
        d, h = differences(scores, "recall@10", scope, pa, pb)
        groups = h if row["unit"] == "holders" else None
        for delta in (row["mdd"], 0.0):
            r = simulate_power(d, delta, groups=groups, n_sims=a.sims, seed=20240101)
            sims.append(
                {
                    "scope": scope,
                    "measure": "recall@10",
                    "pair": row["median_pair"],
                    "n": int(d.size),
                    "unit": row["unit"],
                    **r,
                }
            )
            print(
                f"simulated {scope} recall@10 by {r['by']}: delta {delta:.4f} -> "
                f"{r['rate']:.3f} significant",
                file=sys.stderr,
            )

    result = {
        "split": SPLIT,
        "set_sha256": set_digests(sets),
        "runs": {lab: d.name for lab, d in zip(scores, dirs)},
        "counts": counts,
        "power": table,
        "simulations": sims,
    }
    Path(a.json).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    from membench.core.errors import MembenchError

    try:
        raise SystemExit(main())
    except MembenchError as e:
        print(f"error: {e}", file=sys.stderr)
        raise SystemExit(2) from None
