"""A system that cannot be called per query hands membench files instead: the word-overlap
memory of overlap.py over bench/sets/items.jsonl (what to index: no gold there) and a topics
file (`membench topics`: the questions, with their scope and as_of), writing OUT/atoms.jsonl,
OUT/run.trec and OUT/cartridge.jsonl for `membench import-run`. Standard library only.
Run: .venv/bin/python examples/trec_overlap.py bench/sets/items.jsonl TOPICS OUT"""

import json
import sys
from pathlib import Path

from overlap import atoms_of, rank

items_file, topics_file, out = sys.argv[1], sys.argv[2], Path(sys.argv[3])
topics = [json.loads(line) for line in open(topics_file, encoding="utf-8")]
asked = {t["scope"]["holder"] for t in topics}  # index the holders asked about
items = [it for it in map(json.loads, open(items_file, encoding="utf-8")) if it["holder"] in asked]
atoms = atoms_of(items)
out.mkdir(parents=True, exist_ok=True)
with open(out / "atoms.jsonl", "w", encoding="utf-8") as f:
    for a in atoms:
        f.write(json.dumps(a) + "\n")
with open(out / "run.trec", "w") as run, open(out / "cartridge.jsonl", "w") as carts:
    for t in topics:
        hits, cartridge = rank(atoms, t["question"], t["scope"]["holder"], t["as_of"])
        for n, (atom_id, score) in enumerate(hits, 1):
            run.write(f"{t['qid']} Q0 {atom_id} {n} {score!r} overlap\n")
        carts.write(json.dumps({"qid": t["qid"], "cartridge": cartridge}) + "\n")
print(f"{len(atoms)} atoms, {len(topics)} topics -> {out}")
