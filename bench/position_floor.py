"""The content-free floors of recall: where the gold sits on the holder's timeline, measured.

    .venv/bin/python bench/position_floor.py            # dev, every modality (about 3 min)

runs the registered doubles that read no content, ``random``, ``newest`` (the holder's in-scope
atoms newest first) and ``oldest``, over the whole dev split of the built sets
(``bench/sets``) through the real runner and metrics, and writes per modality and over all items
their recall@10 and recall@1000 (value, n) with the sets' sha256 to ``--json`` (default
``bench/results/position-floor.json``). docs/sets.md's ``position-floor`` block is printed from
that file (:mod:`membench.docsite.blocks`); tests/test_position_floor.py holds the file to the
locked sets and the gate the sets must meet (a position ranker within +0.05 of random).
The test split is not run: it is frozen, and its runs are logged final runs. ``positions``
reads both splits' set files instead, at the item level (no system runs): the median items a
query sees, and how often the gold is the newest or the holder's first item against chance.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

SYSTEMS = ("random", "newest", "oldest")
FIGURES = ("recall@10", "recall@1000")


def floors(sets: Path, corpus: Path, limit: int | None = None) -> dict:
    """``{system: {scope: {figure: {"value", "n"}}}}`` for :data:`SYSTEMS` on dev."""
    from membench.metrics import metrics_for_run_dir
    from membench.modalities import MODALITIES
    from membench.run.runner import run_system
    from membench.systems import make_system

    out: dict = {}
    with tempfile.TemporaryDirectory(prefix="position-floor-") as tmp:
        for name in SYSTEMS:
            d = Path(tmp) / name
            run_system(make_system(name), sets, "dev", d, corpus, limit=limit)
            m = metrics_for_run_dir(d)
            out[name] = {
                s: {f: {"value": m[s][f]["value"], "n": m[s][f]["n"]} for f in FIGURES}
                for s in (*MODALITIES, "all")
                if s in m
            }
    return out


def positions(sets: Path) -> dict:
    """``{split: {modality: {...}}}`` read from the set files alone, for dev and test (no system
    runs, so the frozen test split is only read): over the answerable records, the median
    number of items the holder has seen at as_of, and the recall at one item of ranking by time
    alone: the share of a record's gold items that the newest item seen is (``newest``) or that
    the holder's first item is (``oldest``), against a random item's (``chance``: the mean of
    1 / items seen)."""
    import bisect
    import statistics
    from collections import defaultdict
    from datetime import datetime

    from membench.modalities import MODALITIES

    times: dict[str, list] = defaultdict(list)
    when: dict[str, datetime] = {}
    with open(sets / "items.jsonl", encoding="utf-8") as f:
        for line in f:
            it = json.loads(line)
            t = datetime.fromisoformat(it["observed_at"])
            times[it["holder"]].append(t)
            when[it["source_id"]] = t
    for ts in times.values():
        ts.sort()
    rows: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for m in MODALITIES:
        path = sets / f"{m}.jsonl"
        if not path.exists():
            continue
        with open(path, encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                if r["unanswerable"]:
                    continue
                ts = times[r["scope"]["holder"]]
                seen = bisect.bisect_right(ts, datetime.fromisoformat(r["as_of"]))
                g = {when[x["source_id"]] for x in r["gold"]}
                k = len({x["source_id"] for x in r["gold"]})
                rows[r["split"]][m].append((seen, (ts[seen - 1] in g) / k, (ts[0] in g) / k))
    return {
        split: {
            m: {
                "n": len(v),
                "median_seen": statistics.median(x[0] for x in v),
                "newest": sum(x[1] for x in v) / len(v),
                "oldest": sum(x[2] for x in v) / len(v),
                "chance": sum(1 / x[0] for x in v) / len(v),
            }
            for m, v in sorted(by.items())
        }
        for split, by in sorted(rows.items())
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--corpus", default=None, help="corpus root (default: ../shared/corpus)")
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "position-floor.json"))
    a = ap.parse_args(argv)

    from membench.core.paths import corpus_root
    from membench.sets.build import set_digests

    sets = Path(a.sets)
    corpus = Path(a.corpus) if a.corpus else corpus_root()
    result = {
        "split": "dev",
        "set_sha256": set_digests(sets),
        "systems": floors(sets, corpus),
        "positions": positions(sets),
    }
    Path(a.json).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
