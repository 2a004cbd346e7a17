"""A tiny, hand-written, valid sets folder (all six modalities) for rule tests.

Each validator rule test starts from this folder, seeds one violation and asserts that the
validator names that rule at that file and line.
"""

from __future__ import annotations

import json
from pathlib import Path

from membench.core.jsonl import dumps, sha256_file
from membench.sets.build import SET_FILES, write_lock

REV = "a" * 40
DATASET = "example/dataset"
T0 = "2024-01-01T00:00:00+00:00"
T1 = "2024-01-02T00:00:00+00:00"
T2 = "2024-01-03T00:00:00+00:00"

REGIONS = {
    "pdf": ({"page": 2}, {"pages": 3}),
    "image": ({}, {"width": 10, "height": 10}),
    "ui_screenshot": ({"bbox": [1, 1, 5, 5]}, {"width": 10, "height": 10}),
    "video": ({"t_start": 1.0, "t_end": 4.0}, {"duration": 10}),
    "code": ({"path": "src/a.py", "line": 3}, {"lines": 20, "upstream_path": "src/a.py"}),
    "conversation": ({"turn": 2}, {"turns": 5}),
}


def items() -> list[dict]:
    out = []
    for m, (_, meta) in REGIONS.items():
        for h in ("a", "b"):
            out.append(
                {
                    "source_id": f"{m}src:{h}1",
                    "modality": m,
                    "holder": f"{m}/{h}",
                    "observed_at": T1,
                    "content": "x",
                    "meta": meta,
                }
            )
    return out


def record(
    m: str, n: int, holder: str = "a", split: str = "dev", unanswerable: bool = False, **over
) -> dict:
    region = REGIONS[m][0]
    r = {
        "query_id": f"{m}src:q{n}",
        "modality": m,
        "question": f"question {n}?",
        "answer": None if unanswerable else "x",
        "answer_format": "none" if unanswerable else "str",
        "gold": [] if unanswerable else [{"source_id": f"{m}src:{holder}1", "region": region}],
        "scope": {"holder": f"{m}/{holder}", "session": None, "scenario": "s"},
        "as_of": T2,
        "unanswerable": unanswerable,
        "origin": {"dataset": DATASET, "revision": REV, "item": f"row:{n}", "license": "L"},
        "split": split,
    }
    r.update(over)
    return r


def records(m: str) -> list[dict]:
    return [
        record(m, 0),
        record(m, 1),
        record(m, 2, holder="b", split="test"),
        record(m, 3, unanswerable=True),
        record(m, 4, holder="b", split="test", unanswerable=True),
    ]


def manifest_lines() -> list[dict]:
    return [
        {
            "source": f"{m}src",
            "name": "Example",
            "modality": m,
            "url": "u",
            "revision": REV,
            "revisions": [REV],
            "retrieved_at": "2026-01-01",
            "annotation_source": "a",
            "license": "L",
            "files": [
                {
                    "path": f"example/{m}.json",
                    "sha256": "0" * 64,
                    "bytes": 1,
                    "upstream_repo": DATASET,
                    "commit": REV,
                }
            ],
        }
        for m in REGIONS
    ]


def write(dir: Path, sets: dict[str, list[dict]] | None = None) -> dict[str, Path]:
    """Write the mini sets (or ``sets``: file name -> rows) plus manifest and lock."""
    dir.mkdir(parents=True, exist_ok=True)
    sets = sets or {**{f"{m}.jsonl": records(m) for m in REGIONS}, "items.jsonl": items()}
    for name, rows in sets.items():
        (dir / name).write_text("".join(dumps(r) + "\n" for r in rows))
    manifest = dir.parent / "manifest.jsonl"
    manifest.write_text("".join(json.dumps(m) + "\n" for m in manifest_lines()))
    lock = dir.parent / "sets.lock.json"
    write_lock(lock, {f: sha256_file(dir / f) for f in SET_FILES})
    return {"sets": dir, "manifest": manifest, "lock": lock}
