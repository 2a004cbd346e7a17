"""The shape floor of conversation recall: a ranker that reads where a turn sits, not what it says.

    .venv/bin/python bench/shape_floor.py            # both splits, a few seconds

For every answerable conversation record of one split, the ranker sees the turns of the items
its holder has seen at as_of, each only as ``(speaker, turns in its session, place in it)``:
no word. It ranks them by how often gold sat at that shape in the *other* split's records of
the same source (cross-fitted: what it learns it never reads back), ties broken by a seeded
hash of the turn, and its recall@10 is set against a random ranker's (``10 / turns seen``,
capped at 1). A source whose gold sits at a shape its other turns rarely have is won without
reading a word (PrefEval: the preference is a one-turn session's only turn, or the third of a
four-turn exchange). Writes ``bench/results/shape-floor.json``; docs/sets.md's ``shape-floor``
block is printed from it.
"""

from __future__ import annotations

import argparse
import bisect
import json
import sys
from collections import Counter, defaultdict
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

K = 10


def _shapes(content: list) -> list[tuple[str, int, int]]:
    n = len(content)
    return [
        (str(t.get("speaker", "")).lower() if isinstance(t, dict) else "", n, i + 1)
        for i, t in enumerate(content)
    ]


def shape_floor(sets: Path) -> dict:
    """``{source: {split: {"n", "shape", "random"}}}`` over the answerable conversation
    records (module docstring)."""
    from membench.core.hashing import stable_hash

    items: dict[str, dict] = {}
    by_holder: dict[str, list[tuple[datetime, str]]] = defaultdict(list)
    with open(sets / "items.jsonl", encoding="utf-8") as f:
        for line in f:
            it = json.loads(line)
            if it["modality"] != "conversation" or not isinstance(it.get("content"), list):
                continue
            items[it["source_id"]] = it
            by_holder[it["holder"]].append(
                (datetime.fromisoformat(it["observed_at"]), it["source_id"])
            )
    for v in by_holder.values():
        v.sort()
    recs: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    with open(sets / "conversation.jsonl", encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            if not r["unanswerable"]:
                recs[r["query_id"].split(":", 1)[0]][r["split"]].append(r)
    out: dict = {}
    for source, splits in sorted(recs.items()):
        prior: dict[str, Counter] = {}
        for split, rows in splits.items():
            c: Counter = Counter()
            for r in rows:
                for g in r["gold"]:
                    it = items.get(g["source_id"])
                    t = g["region"].get("turn")
                    if it and isinstance(t, int) and 1 <= t <= len(it["content"]):
                        c[_shapes(it["content"])[t - 1]] += 1
            prior[split] = c
        out[source] = {}
        for split, rows in sorted(splits.items()):
            learnt = sum((prior[s] for s in prior if s != split), Counter())
            if not learnt:
                continue
            got = rnd = 0.0
            for r in rows:
                seen = by_holder[r["scope"]["holder"]]
                upto = bisect.bisect_right(seen, (datetime.fromisoformat(r["as_of"]), "\uffff"))
                turns = [
                    (sid, i + 1, s)
                    for _, sid in seen[:upto]
                    for i, s in enumerate(_shapes(items[sid]["content"]))
                ]
                if not turns:
                    continue
                ranked = sorted(
                    turns,
                    key=lambda x: (
                        -learnt[x[2]],
                        stable_hash("shape", r["query_id"], x[0], str(x[1])),
                    ),
                )
                top = {(sid, t) for sid, t, _ in ranked[:K]}
                gold = {(g["source_id"], g["region"].get("turn")) for g in r["gold"]}
                got += len(gold & top) / len(gold)
                rnd += min(1.0, K / len(turns))
            out[source][split] = {
                "n": len(rows),
                "shape": round(got / len(rows), 4),
                "random": round(rnd / len(rows), 4),
            }
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sets", default=str(REPO / "bench" / "sets"))
    ap.add_argument("--json", default=str(REPO / "bench" / "results" / "shape-floor.json"))
    a = ap.parse_args(argv)
    from membench.sets.build import set_digests

    sets = Path(a.sets)
    result = {"set_sha256": set_digests(sets), "k": K, "sources": shape_floor(sets)}
    Path(a.json).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    for source, splits in result["sources"].items():
        for split, v in splits.items():
            print(
                f"{source:10s} {split:4s} n={v['n']:5d} shape recall@{K} {v['shape']:.3f} "
                f"random {v['random']:.3f}"
            )
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
