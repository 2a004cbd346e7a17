"""The content-free floors of recall: where the gold sits on the holder's timeline, measured.

    .venv/bin/python bench/position_floor.py            # dev, every modality (about 3 min)

runs the registered doubles that read no content, ``random``, ``newest`` (the holder's in-scope
atoms newest first) and ``oldest``, over the whole dev split of the built sets
(``bench/sets``) through the real runner and metrics, and writes per modality and over all items
their recall@10 and recall@1000 (value, n) with the sets' sha256 to ``--json`` (default
``bench/results/position-floor.json``). docs/sets.md's ``position-floor`` block is printed from
that file (:mod:`membench.docsite.blocks`); tests/test_position_floor.py holds the file to the
locked sets and the gate the sets must meet (a position ranker within +0.05 of random).
The test split is not run: it is frozen, and its runs are logged final runs.
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
            out[name] = {s: {f: {"value": m[s][f]["value"], "n": m[s][f]["n"]}
                             for f in FIGURES}
                         for s in (*MODALITIES, "all") if s in m}
    return out


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
    result = {"split": "dev", "set_sha256": set_digests(sets), "systems": floors(sets, corpus)}
    Path(a.json).write_text(json.dumps(result, indent=2, sort_keys=True) + "\n")
    print(f"wrote {a.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
