"""Regions no chunker wins by shape (docs/runs.md, "hit"): on the real sets, two half-screen
atoms per screenshot no longer find every gold box (a screenshot atom hits when its centre is
inside the gold box, ScreenSpot's rule), and bm25's video MRR, recomputed here in plain
Python from run.jsonl and atoms.jsonl with "overlap longer than 0 s", is membench's."""

from __future__ import annotations

import json

import pytest

from membench.metrics import compute_metrics, metrics_for_run_dir
from membench.modalities import check_extent, get


def _lines(path):
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def _halves(item: dict, how: str) -> list[dict]:
    w, h = item["meta"]["width"], item["meta"]["height"]
    boxes = (
        [[0, 0, w / 2, h], [w / 2, 0, w, h]]
        if how == "left/right"
        else [[0, 0, w, h / 2], [0, h / 2, w, h]]
    )
    return [
        {
            "atom_id": f"{item['source_id']}#{how}{i}",
            "source_id": item["source_id"],
            "modality": "ui_screenshot",
            "holder": item["holder"],
            "observed_at": item["observed_at"],
            "extent": {"bbox": b},
        }
        for i, b in enumerate(boxes)
    ]


def _touches(a, g) -> bool:
    """The rule before: any intersection of positive area."""
    return min(a[2], g[2]) - max(a[0], g[0]) > 0 and min(a[3], g[3]) - max(a[1], g[1]) > 0


@pytest.mark.parametrize("how", ["left/right", "top/bottom"])
def test_two_half_screen_atoms_no_longer_find_every_gold_box(built, how):
    items = [it for it in _lines(built.out / "items.jsonl") if it["modality"] == "ui_screenshot"]
    records = [r for r in _lines(built.out / "ui_screenshot.jsonl")]
    answerable = [r for r in records if not r["unanswerable"]]
    assert len(answerable) >= 10
    atoms = [a for it in items for a in _halves(it, how)]
    by_source: dict[str, list[dict]] = {}
    for a in atoms:
        assert check_extent("ui_screenshot", a["extent"]) is None
        by_source.setdefault(a["source_id"], []).append(a)
    meta = {it["source_id"]: it["meta"] for it in items}
    for a in atoms:  # within the cap: half the screenshot's area, exactly
        assert get("ui_screenshot").extent_limits(a["extent"], meta[a["source_id"]]) is None
    run = []
    for r in records:
        src = r["gold"][0]["source_id"] if r["gold"] else None
        hits = by_source.get(src, by_source[items[0]["source_id"]])
        run.append(
            {
                "query_id": r["query_id"],
                "hits": [[a["atom_id"], 1.0] for a in hits],
                "cartridge": [],
                "latency_ms": 1,
            }
        )
    # under "any overlap", the two halves found every gold box: recall@10 = 1.0 by shape
    for r in answerable:
        for g in r["gold"]:
            assert any(
                _touches(a["extent"]["bbox"], g["region"]["bbox"])
                for a in by_source[g["source_id"]]
            )
    m = compute_metrics(records, items, atoms, run, n_resamples=50)
    got = m["ui_screenshot"]["recall@10"]
    assert got["n"] == len(answerable)
    assert got["value"] < 0.5, got  # a half-screen centre lands in a UI element by chance


def test_bm25_video_mrr_recomputed_independently(bm25_dev, built):
    """MRR over the answerable dev video items: 1/rank of the first atom of the gold's video
    whose window overlaps a gold span for longer than 0 s; hits ranked by score descending,
    equal scores in the order returned, a repeated atom at its first place."""
    run_dir, _ = bm25_dev
    atoms = {a["atom_id"]: a for a in _lines(run_dir / "atoms.jsonl")}
    lines = {r["query_id"]: r for r in _lines(run_dir / "run.jsonl")}
    recs = [
        r
        for r in _lines(built.out / "video.jsonl")
        if r["split"] == "dev" and not r["unanswerable"]
    ]
    assert len(recs) >= 50
    total = 0.0
    for r in recs:
        hits = lines[r["query_id"]]["hits"]
        order = sorted(range(len(hits)), key=lambda i: -hits[i][1])  # stable
        seen, ranked = set(), []
        for i in order:
            if hits[i][0] not in seen:
                seen.add(hits[i][0])
                ranked.append(hits[i][0])
        rr = 0.0
        for rank, aid in enumerate(ranked, 1):
            a = atoms[aid]
            if any(
                g["source_id"] == a["source_id"]
                and min(a["extent"]["t_end"], g["region"]["t_end"])
                - max(a["extent"]["t_start"], g["region"]["t_start"])
                > 0
                for g in r["gold"]
            ):
                rr = 1.0 / rank
                break
        total += rr
    mine = total / len(recs)
    got = metrics_for_run_dir(run_dir, write=False)["video"]["mrr"]
    assert got["n"] == len(recs)
    assert got["value"] == pytest.approx(mine, abs=1e-6)
