"""judged@10 (ir_measures' Judged@10 on atoms): hand-computed cases with ties, short and empty
hit lists, judgment sets and unanswerable items; and per query against ir_measures itself, on
seeded runs and on a real dev run (qrels and run written at the atom level, the judged atoms
found with the one-pair hit rule, not the scorer's vectorised one)."""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from membench.contract.protocol import rank_order
from membench.metrics import compute_metrics, score_items
from membench.metrics.measures import BY_NAME, JUDGMENT_MEASURES, RANKED_HEADLINE
from membench.modalities import region_hit

T1 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T2 = datetime(2024, 2, 1, tzinfo=timezone.utc)
A = "pdfh/alice"
J = "judged@10"


def item(sid):
    return {
        "source_id": sid,
        "modality": "pdf",
        "holder": A,
        "observed_at": T1.isoformat(),
        "content": "x",
    }


def atom(aid, sid, p):
    return {
        "atom_id": aid,
        "source_id": sid,
        "modality": "pdf",
        "holder": A,
        "observed_at": T1.isoformat(),
        "extent": {"page": p},
    }


def page(p, sid="pdfh:doc1", **more):
    return {"source_id": sid, "region": {"page": p}, **more}


def rec(qid, gold, **over):
    r = {
        "query_id": qid,
        "modality": "pdf",
        "question": "q?",
        "answer": "x" if gold else None,
        "answer_format": "str" if gold else "none",
        "gold": gold,
        "scope": {"holder": A, "session": None, "scenario": "s"},
        "as_of": T2.isoformat(),
        "unanswerable": not gold,
        "origin": {"dataset": "e/x", "revision": "r", "item": qid, "license": "L"},
        "split": "dev",
    }
    r.update(over)
    return r


ITEMS = [item("pdfh:doc1"), item("pdfh:doc2")]
ATOMS = (
    [atom(f"p{i}", "pdfh:doc1", i) for i in (1, 2, 3)]
    + [atom(f"x{i}", "pdfh:doc1", 10 + i) for i in range(1, 13)]
    + [atom("d1", "pdfh:doc2", 1)]
)
RECORDS = [
    # gold p2; x2 judged by the set "other", p3 by "same_question"
    rec("pdfh:q1", [page(2)], judgments={"same_question": [page(3)], "other": [page(12)]}),
    # the judged atom is the 11th of an eleven-way tie: outside the top 10
    rec("pdfh:q2", [page(1)]),
    # 12 hits, judged at ranks 1 and 10 (a tie decides rank 10): over 10, not 12
    rec("pdfh:q3", [page(1)], judgments={"other": [page(19)]}),
    rec("pdfh:q4", [page(1)]),  # a run line without hits
    rec("pdfh:q5", [page(1)]),  # no run line
    # one atom hitting two judged regions (gold and a set) counts once; doc2 page 1 is
    # judged with grade 0 (judged non-relevant): judged all the same
    rec("pdfh:q6", [page(3)], judgments={"other": [page(3), page(1, "pdfh:doc2", grade=0)]}),
    rec("pdfh:u1", []),  # unanswerable: nothing judged
]
RUN = [
    # ties at 0.9 keep the system's order: p2, x2, p3, x3, x1 -> judged p2, x2, p3: 3 of 5
    {
        "query_id": "pdfh:q1",
        "hits": [["x1", 0.5], ["p2", 0.9], ["x2", 0.9], ["p3", 0.9], ["x3", 0.7]],
        "cartridge": [],
        "latency_ms": 1,
    },
    {
        "query_id": "pdfh:q2",
        "hits": [[f"x{i}", 1.0] for i in range(1, 11)] + [["p1", 1.0]],
        "cartridge": [],
        "latency_ms": 1,
    },
    # order: p1 (2.0), x1..x8 (1.0, as returned), x9 (1.0, 10th; page 19: judged by "other"),
    # x10, x11 (1.0, 11th and 12th)
    {
        "query_id": "pdfh:q3",
        "hits": [[f"x{i}", 1.0] for i in range(1, 12)] + [["p1", 2.0]],
        "cartridge": [],
        "latency_ms": 1,
    },
    {"query_id": "pdfh:q4", "hits": [], "cartridge": [], "latency_ms": 1},
    # p3 (gold and "other"), d1 (grade 0 in "other"), x1 (not judged): 2 of 3
    {
        "query_id": "pdfh:q6",
        "hits": [["p3", 3.0], ["d1", 2.0], ["x1", 1.0]],
        "cartridge": [],
        "latency_ms": 1,
    },
    {"query_id": "pdfh:u1", "hits": [["p1", 1.0]], "cartridge": [], "latency_ms": 1},
]
BY_HAND = {
    "pdfh:q1": 3 / 5,
    "pdfh:q2": 0.0,
    "pdfh:q3": 2 / 10,
    "pdfh:q4": 0.0,
    "pdfh:q5": 0.0,
    "pdfh:q6": 2 / 3,
}


def test_judged_at_10_by_hand():
    s = score_items(RECORDS, ITEMS, ATOMS, RUN)
    got = dict(zip(s.query_id, s.values[J].tolist()))
    for q, v in BY_HAND.items():
        assert got[q] == pytest.approx(v, abs=1e-15), q
    assert math.isnan(got["pdfh:u1"])  # outside the denominator
    # recall@10 of q3 reads the gold only: p1 at rank 1
    assert s.values["recall@10"][s.query_id.index("pdfh:q3")] == 1


def test_judged_at_10_in_metrics_json():
    m = compute_metrics(RECORDS, ITEMS, ATOMS, RUN)
    mean = sum(BY_HAND.values()) / len(BY_HAND)
    for scope in ("pdf", "all"):
        e = m[scope][J]
        assert e["value"] == pytest.approx(mean, abs=1e-15)
        assert e["n"] == e["denominator"] == len(BY_HAND)  # the answerable items
        assert e["ci95"][0] <= e["value"] <= e["ci95"][1]
    assert list(m["all"]).index(J) == list(m["all"]).index("recall@10") + 1
    assert "judged" in m["definitions"][J] and "min(10, n)" in m["definitions"][J]
    # one figure, over the union of every set: not recomputed per judgment set
    assert all(J not in scope for js in m["judgment_sets"].values() for scope in js.values())
    meas = BY_NAME[J]
    assert not meas.ranked and not meas.per_judgment_set and not meas.headline
    assert J not in JUDGMENT_MEASURES and J not in RANKED_HEADLINE
    assert "ir_measures" in meas.citation


def test_page_02_shows_it_under_recall_at_10():
    """Page 02's grid (``metrics_grid`` over metrics.json's order) has judged@10 on the row
    under recall@10, per scope."""
    from membench.report.tables import metrics_grid

    html = metrics_grid(compute_metrics(RECORDS, ITEMS, ATOMS, RUN)).html
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)
    names = [re.sub(r"<[^>]+>", "", r.split("</td>")[0]).replace("<wbr>", "") for r in rows]
    i = next(k for k, n in enumerate(names) if n.startswith("recall@10"))
    assert names[i + 1].startswith("judged@10")
    assert f"{sum(BY_HAND.values()) / len(BY_HAND):.3f}" in rows[i + 1]


def test_judged_at_10_without_judgment_sets_reads_the_gold():
    """Without ``judgments`` the judged atoms are the gold-hitting ones: judged@10 is then the
    share of the top min(10, n) that hit a gold region (precision at min(10, n))."""
    recs = [{**r, "judgments": None} for r in RECORDS]
    s = score_items(recs, ITEMS, ATOMS, RUN)
    got = dict(zip(s.query_id, s.values[J].tolist()))
    assert got["pdfh:q1"] == pytest.approx(1 / 5) and got["pdfh:q3"] == pytest.approx(1 / 10)
    assert got["pdfh:q6"] == pytest.approx(1 / 3)


# ------------------------------------------------------------------ against ir_measures


def _ir_measures_judged(records, atoms, run_rows, k=10) -> dict[str, float]:
    """Judged@k per query from ir_measures: qrels = per answerable record, every atom of
    ``atoms`` that hits (``membench.modalities.region_hit``, one pair at a time) a region of its
    gold or of any judgment set (relevance 1 for gold, else 0: judged non-relevant); run = each
    run line's hits in membench's order with rank-derived scores (ir_measures breaks score ties
    by document id)."""
    ir_measures = pytest.importorskip("ir_measures")
    by_source: dict[str, list[dict]] = {}
    for a in atoms:
        by_source.setdefault(a["source_id"], []).append(a)
    qrels = []
    for r in records:
        if r["unanswerable"]:
            continue
        rel: dict[str, int] = {}
        regions = [(g, 1) for g in r["gold"]] + [
            (g, 0) for gs in (r.get("judgments") or {}).values() for g in gs
        ]
        for g, level in regions:
            for a in by_source.get(g["source_id"], []):
                if region_hit(a["modality"], a["extent"], g["region"]):
                    rel[a["atom_id"]] = max(rel.get(a["atom_id"], 0), level)
        qrels += [ir_measures.Qrel(r["query_id"], a, v) for a, v in rel.items()]
    run = []
    for row in run_rows:
        ids = [h[0] for h in row["hits"]]
        ranked = rank_order(ids, np.array([h[1] for h in row["hits"]], dtype=np.float64))
        run += [
            ir_measures.ScoredDoc(row["query_id"], a, float(len(ranked) - i))
            for i, a in enumerate(ranked)
        ]
    measure = ir_measures.Judged @ k
    return {m.query_id: m.value for m in ir_measures.iter_calc([measure], qrels, run)}


def _compare(scores, records, atoms, run_rows) -> int:
    """Per answerable query, membench's judged@10 equals ir_measures' Judged@10 (a query
    whose judged regions no atom of the run hits is outside ir_measures' qrels: membench
    scores it 0); returns the number of queries compared with ir_measures."""
    ref = _ir_measures_judged(records, atoms, run_rows)
    got = dict(zip(scores.query_id, scores.values[J].tolist()))
    answerable = {r["query_id"] for r in records if not r["unanswerable"]}
    assert set(ref) <= answerable
    for q in answerable:
        assert got[q] == pytest.approx(ref.get(q, 0.0), abs=1e-12), q
    for q in set(got) - answerable:
        assert math.isnan(got[q])
    return len(ref)


def test_hand_case_equals_ir_measures():
    s = score_items(RECORDS, ITEMS, ATOMS, RUN)
    assert _compare(s, RECORDS, ATOMS, RUN) == len(BY_HAND)


@pytest.mark.parametrize("seed", range(5))
def test_seeded_runs_equal_ir_measures(seed):
    """Random hit lists of 0 to 15 atoms with heavily tied scores, random judgment sets."""
    rng = np.random.default_rng(seed)
    pages = [a["extent"]["page"] for a in ATOMS if a["source_id"] == "pdfh:doc1"]
    recs, run = [], []
    for i in range(60):
        qid = f"pdfh:r{i}"
        if rng.random() < 0.15:
            recs.append(rec(qid, []))
        else:
            gold = [page(int(p)) for p in rng.choice(pages, int(rng.integers(1, 3)), False)]
            js = {
                f"s{j}": [page(int(p)) for p in rng.choice(pages, int(rng.integers(0, 4)), False)]
                for j in range(int(rng.integers(0, 3)))
            }
            recs.append(rec(qid, gold, judgments=js or None))
        if rng.random() < 0.1:
            continue  # no run line
        n = int(rng.integers(0, 16))
        ids = [ATOMS[int(j)]["atom_id"] for j in rng.choice(len(ATOMS), n, False)]
        run.append(
            {
                "query_id": qid,
                "hits": [[a, float(rng.integers(0, 3))] for a in ids],
                "cartridge": [],
                "latency_ms": 1,
            }
        )
    s = score_items(recs, ITEMS, ATOMS, run)
    assert _compare(s, recs, ATOMS, run) > 30


def check_run_dir(run_dir: Path, sets_dir: Path | None = None) -> dict[str, float]:
    """A real run directory against ir_measures, per query; returns membench's judged@10 per
    modality (the mean over its answerable items)."""
    from membench.metrics.rundir import RunDir
    from membench.modalities import MODALITIES

    rd = RunDir.open(run_dir, sets_dir)
    scores = rd.scores()
    wanted = set(scores.query_id)
    records = [
        r
        for m in MODALITIES
        if (Path(rd.sets_dir) / f"{m}.jsonl").is_file()
        for r in map(json.loads, (Path(rd.sets_dir) / f"{m}.jsonl").open())
        if r["query_id"] in wanted
    ]
    assert len(records) == len(wanted)
    atoms = [json.loads(x) for x in (Path(run_dir) / "atoms.jsonl").open()]
    rows = [json.loads(x) for x in (Path(run_dir) / "run.jsonl").open()]
    assert _compare(scores, records, atoms, rows) > 0
    mods = np.asarray(scores.modality)
    return {m: float(np.nanmean(scores.values[J][mods == m])) for m in sorted(set(mods))}


def test_a_dev_run_equals_ir_measures(bm25_dev):
    out, _ = bm25_dev
    figs = check_run_dir(out)
    assert figs and all(0 <= v <= 1 for v in figs.values())
