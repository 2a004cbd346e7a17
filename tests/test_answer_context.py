"""The answer layer and the context cost as scored: answer@cartridge, answer@10 (answer-bearing
items only, non-extractive answers never counted, ties as the ranking breaks them), the
cartridge's tokens, recall within a token budget (a coarse-atom system wins recall@10 and loses
recall@1024tok), unread content never a silent 0, and what metrics.json carries."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

from membench.metrics import score_items
from membench.metrics.aggregate import aggregate
from membench.metrics.answer_layer import ContentTexts
from membench.metrics.extent_text import ExtentText
from membench.metrics.measures import BY_NAME, HEADLINE

T1 = datetime(2024, 1, 1, tzinfo=timezone.utc)
T2 = datetime(2024, 2, 1, tzinfo=timezone.utc)
H = "pdfh/alice"
WORDS = lambda n, w="filler": " ".join([w] * n)


def item(sid, m="pdf", holder=H, **kw):
    return {
        "source_id": sid,
        "modality": m,
        "holder": holder,
        "observed_at": T1.isoformat(),
        "content": kw.pop("content", "x"),
        **kw,
    }


def atom(aid, sid, extent, m="pdf", holder=H):
    return {
        "atom_id": aid,
        "source_id": sid,
        "modality": m,
        "holder": holder,
        "observed_at": T1.isoformat(),
        "extent": extent,
    }


def rec(qid, gold, answer=None, fmt="str", m="pdf", holder=H):
    return {
        "query_id": qid,
        "modality": m,
        "question": "q?",
        "answer": answer if gold else None,
        "answer_format": fmt if gold else "none",
        "gold": gold,
        "scope": {"holder": holder, "session": None, "scenario": "s"},
        "as_of": T2.isoformat(),
        "unanswerable": not gold,
        "origin": {"dataset": "e/x", "revision": "r", "item": qid, "license": "L"},
        "split": "dev",
    }


def region(page, block=None, sid="pdfh:doc"):
    return {
        "source_id": sid,
        "region": {"page": page} if block is None else {"page": page, "block": block},
    }


class Fake:
    """Texts by (source id, page[, block]); items in ``unread`` cannot be read."""

    def __init__(self, texts, unread=()):
        self.texts, self.unread = texts, set(unread)

    def available(self, sid):
        return sid not in self.unread

    def text(self, sid, extent):
        return self.texts.get((sid, extent["page"], extent.get("block")), "")


def lines(run):
    return [{"latency_ms": 1.0, **r} for r in run]


def score(records, items, atoms, run, texts, **kw):
    return score_items(records, items, atoms, lines(run), content=ContentTexts(Fake(texts, **kw)))


def value(s, metric, qid):
    return s.values[metric][s.query_id.index(qid)]


# ---------------------------------------------------------------- the coarse-atom case


def coarse_and_fine():
    """Gold: block 0 of page 1 and block 3 of page 2. The coarse system returns the two whole
    pages (2,000 words each) at ranks 1 and 2; the fine system returns 50-word blocks, the first
    gold block at rank 1 and the second at rank 12."""
    doc = "pdfh:doc"
    texts = {(doc, 1, None): WORDS(2000), (doc, 2, None): WORDS(2000)}
    blocks = [(1, 0)] + [(5, b) for b in range(10)] + [(2, 3)]
    texts.update({(doc, p, b): WORDS(50) for p, b in blocks})
    atoms = [atom("page1", doc, {"page": 1}), atom("page2", doc, {"page": 2})] + [
        atom(f"b{p}.{b}", doc, {"page": p, "block": b}) for p, b in blocks
    ]
    records = [rec("pdfh:q", [region(1, 0), region(2, 3)], answer="lorem")]
    coarse = [
        {
            "query_id": "pdfh:q",
            "hits": [["page1", 2.0], ["page2", 1.0]],
            "cartridge": ["page1", "page2"],
        }
    ]
    fine = [
        {
            "query_id": "pdfh:q",
            "hits": [[f"b{p}.{b}", 100.0 - i] for i, (p, b) in enumerate(blocks)],
            "cartridge": ["b1.0", "b2.3"],
        }
    ]
    return records, [item(doc)], atoms, coarse, fine, texts


def test_coarse_atoms_win_recall_at_10_and_lose_recall_at_1024_tokens():
    records, items, atoms, coarse, fine, texts = coarse_and_fine()
    c = score(records, items, atoms, coarse, texts)
    f = score(records, items, atoms, fine, texts)
    assert value(c, "recall@10", "pdfh:q") == 1.0 > value(f, "recall@10", "pdfh:q") == 0.5
    # the coarse system's first atom alone passes every budget below 2,000 words
    assert value(c, "recall@256tok", "pdfh:q") == value(c, "recall@1024tok", "pdfh:q") == 0.0
    assert value(c, "recall@4096tok", "pdfh:q") == 1.0
    # twelve 50-word blocks: 5 fit in 256 (one gold), all 12 (600 words) in 1024
    assert value(f, "recall@256tok", "pdfh:q") == 0.5
    assert value(f, "recall@1024tok", "pdfh:q") == 1.0 > value(c, "recall@1024tok", "pdfh:q")
    # what each hands over
    assert value(c, "context_tokens", "pdfh:q") == 4000
    assert value(f, "context_tokens", "pdfh:q") == 100
    m = aggregate(c, n_resamples=50)
    assert m["all"]["context_tokens_p50"]["value"] == 4000
    assert m["all"]["recall@1024tok"]["denominator"] == 1


def test_budget_prefix_stops_at_the_first_atom_that_does_not_fit():
    doc = "pdfh:doc"
    texts = {(doc, 1, None): WORDS(300), (doc, 2, None): WORDS(10)}
    atoms = [atom("big", doc, {"page": 1}), atom("small", doc, {"page": 2})]
    run = [{"query_id": "pdfh:q", "hits": [["big", 2.0], ["small", 1.0]], "cartridge": []}]
    s = score([rec("pdfh:q", [region(2)], answer="lorem")], [item(doc)], atoms, run, texts)
    # the 10-word gold page is ranked below a 300-word page: not within 256 (no skipping)
    assert value(s, "recall@256tok", "pdfh:q") == 0.0
    assert value(s, "recall@1024tok", "pdfh:q") == 1.0
    assert value(s, "context_tokens", "pdfh:q") == 0  # an empty cartridge costs nothing


# ---------------------------------------------------------------- answer@cartridge, answer@10

DOC = "pdfh:doc"
ANSWER_TEXTS = {
    (DOC, 1, None): "Revenue was 1200 units in 2019 and the colour was red.",
    (DOC, 2, None): "The other colour was Blue; yes, really.",
    (DOC, 3, None): "Nothing relevant: purple elephants.",
    **{(DOC, p, None): f"page {p} text" for p in range(10, 22)},
}
ANSWER_ATOMS = [atom(f"p{p}", DOC, {"page": p}) for p in (1, 2, 3, *range(10, 22))]
ANSWER_RECORDS = [
    rec("pdfh:num", [region(1)], answer="1,200"),  # thousands comma normalised
    rec("pdfh:list", [region(1), region(2)], answer="['red', 'blue']", fmt="list"),
    rec("pdfh:yes", [region(2)], answer="Yes"),  # not extractive
    rec("pdfh:absent", [region(3)], answer="giraffe"),  # not in its gold
    rec("pdfh:tie10", [region(1)], answer="red"),
    rec("pdfh:tie11", [region(1)], answer="red"),
    rec("pdfh:u", []),
]
TIES = [[f"p{p}", 1.0] for p in range(10, 19)]  # nine tied non-answer atoms
ANSWER_RUN = [
    {"query_id": "pdfh:num", "hits": [["p3", 2.0], ["p1", 1.0]], "cartridge": ["p3"]},
    {"query_id": "pdfh:list", "hits": [["p1", 1.0]], "cartridge": ["p1", "p2"]},
    {"query_id": "pdfh:yes", "hits": [["p2", 1.0]], "cartridge": ["p2"]},
    {"query_id": "pdfh:absent", "hits": [["p3", 1.0]], "cartridge": ["p3", "p1"]},
    # an eleven-way tie keeps the system's order: p1 10th, then 11th
    {"query_id": "pdfh:tie10", "hits": TIES + [["p1", 1.0], ["p19", 1.0]], "cartridge": []},
    {"query_id": "pdfh:tie11", "hits": TIES + [["p19", 1.0], ["p1", 1.0]], "cartridge": []},
    {"query_id": "pdfh:u", "hits": [["p1", 1.0]], "cartridge": ["p1", "p2"]},
]


@pytest.fixture(scope="module")
def answered():
    return score(ANSWER_RECORDS, [item(DOC)], ANSWER_ATOMS, ANSWER_RUN, ANSWER_TEXTS)


def test_answer_at_cartridge_and_at_10_by_hand(answered):
    s = answered
    g = lambda m, q: value(s, m, q)
    assert g("answer_bearing", "pdfh:num") == 1
    assert g("answer@cartridge", "pdfh:num") == 0 and g("answer@10", "pdfh:num") == 1
    # a list is there when all of it is, each element in some atom's text
    assert g("answer_bearing", "pdfh:list") == 1
    assert g("answer@cartridge", "pdfh:list") == 1 and g("answer@10", "pdfh:list") == 0
    assert g("answer@10", "pdfh:tie10") == 1 and g("answer@10", "pdfh:tie11") == 0


def test_non_extractive_and_absent_answers_never_count(answered):
    s = answered
    for q in ("pdfh:yes", "pdfh:absent"):
        # outside the denominator: neither a 0 nor a 1, though "yes" is in the cartridge
        assert value(s, "answer_bearing", q) == 0
        assert math.isnan(value(s, "answer@cartridge", q))
        assert math.isnan(value(s, "answer@10", q))
    for m in ("answer_bearing", "answer@cartridge", "answer@10", "recall@256tok"):
        assert math.isnan(value(s, m, "pdfh:u"))  # unanswerable: no answer layer
    assert value(s, "context_tokens", "pdfh:u") == 11 + 7  # but its cartridge costs


def test_metrics_json_carries_the_answer_and_context_entries(answered):
    m = json.loads(json.dumps(aggregate(answered, n_resamples=50), allow_nan=False))
    pdf = m["pdf"]
    assert pdf["answer_bearing"]["n"] == pdf["answer_bearing"]["denominator"] == 6
    assert pdf["answer_bearing"]["value"] == pytest.approx(4 / 6)
    for k, v in (("answer@cartridge", 1 / 4), ("answer@10", 2 / 4)):
        assert pdf[k]["value"] == pytest.approx(v)
        assert pdf[k]["n"] == pdf[k]["denominator"] == 4
        assert BY_NAME[k].denominator == "answer-bearing"
    assert pdf["context_tokens_p50"]["n"] == pdf["context_tokens_p50"]["denominator"] == 7
    assert pdf["context_tokens_p95"]["value"] is not None
    assert pdf["context_area_p50"] == {
        "value": None,
        "n": 0,
        "denominator": 0,
        "ci95": [None, None],
    }
    for b in (256, 1024, 4096):
        assert pdf[f"recall@{b}tok"]["denominator"] == 6
    assert m["answer_context"]["read"] is True and m["answer_context"]["unread_records"] == 0
    for k in (
        "answer@cartridge",
        "answer@10",
        "answer_bearing",
        "recall@1024tok",
        "context_tokens_p50",
    ):
        assert k in m["definitions"] and k not in HEADLINE and BY_NAME[k].gate is None


def test_committed_tokens_are_over_the_non_empty_cartridges(answered):
    """context_tokens_committed_*: the cartridge's tokens over the items that committed one
    (n = denominator = those items), never the zeros of the abstentions."""
    m = aggregate(answered, n_resamples=50)
    tok = np.asarray(answered.values["context_tokens"], dtype=float)
    size = np.asarray(answered.cartridge_size)
    committed = tok[(size > 0) & ~np.isnan(tok)]
    assert 0 < committed.size < np.count_nonzero(~np.isnan(tok))  # some abstained
    e = m["all"]["context_tokens_committed_p50"]
    assert e["n"] == e["denominator"] == committed.size
    assert e["value"] == pytest.approx(np.median(committed))
    assert e["value"] > 0 and m["all"]["context_tokens_committed_p95"]["value"] >= e["value"]


# ---------------------------------------------------------------- unread content, no content


def test_unread_content_is_null_and_counted_never_zero():
    s = score(ANSWER_RECORDS, [item(DOC)], ANSWER_ATOMS, ANSWER_RUN, ANSWER_TEXTS, unread=[DOC])
    for m in ("answer_bearing", "answer@cartridge", "answer@10", "recall@256tok", "context_tokens"):
        assert all(math.isnan(v) for v in s.values[m])
    assert s.content["unread_records"] == 7 and DOC in s.content["unread_items"]
    m = aggregate(s, n_resamples=50)
    assert m["pdf"]["answer@cartridge"]["value"] is None
    assert m["answer_context"]["unread_records"] == 7


def test_without_a_content_reader_the_figures_are_null_with_a_reason():
    s = score_items(ANSWER_RECORDS, [item(DOC)], ANSWER_ATOMS, lines(ANSWER_RUN))
    m = aggregate(s, n_resamples=50)
    assert m["all"]["answer@10"]["value"] is None and m["all"]["answer@10"]["n"] == 0
    assert m["all"]["context_tokens_p50"]["value"] is None
    assert m["answer_context"]["read"] is False and m["answer_context"]["reason"]
    # the headline figures do not move
    assert (
        m["all"]["recall@10"]["value"]
        == aggregate(
            score(ANSWER_RECORDS, [item(DOC)], ANSWER_ATOMS, ANSWER_RUN, ANSWER_TEXTS),
            n_resamples=50,
        )["all"]["recall@10"]["value"]
    )


# ---------------------------------------------------------------- the real content layer


def test_conversation_turns_through_extent_text(tmp_path):
    sid = "convh:s1"
    turns = [
        {"turn": 1, "speaker": "Ann", "text": "We met in 2019."},
        {"turn": 2, "speaker": "Bo", "text": "I moved to Lisbon last spring."},
        {"turn": 3, "speaker": "Ann", "text": "Nice."},
    ]
    items = [item(sid, "conversation", holder="convh/ann", content=turns)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    atoms = [
        atom("t12", sid, {"turn_start": 1, "turn_end": 2}, "conversation", "convh/ann"),
        atom("t3", sid, {"turn_start": 3, "turn_end": 3}, "conversation", "convh/ann"),
    ]
    records = [
        rec(
            "convh:q",
            [{"source_id": sid, "region": {"turn": 2}}],
            answer="Lisbon",
            m="conversation",
            holder="convh/ann",
        )
    ]
    run = [{"query_id": "convh:q", "hits": [["t3", 2.0], ["t12", 1.0]], "cartridge": ["t3"]}]
    s = score_items(
        records, items, atoms, lines(run), content=ContentTexts(ExtentText(tmp_path, tmp_path))
    )
    assert value(s, "answer_bearing", "convh:q") == 1
    assert value(s, "answer@cartridge", "convh:q") == 0
    assert value(s, "answer@10", "convh:q") == 1
    assert value(s, "context_tokens", "convh:q") == 2  # "Ann: Nice."


# ---------------------------------------------------------------- the committed figures


def test_the_committed_figures_carry_the_no_memory_floor():
    from membench.core.paths import REPO_ROOT
    from membench.report.tables import ANSWER_CONTEXT_ROWS

    d = json.loads((REPO_ROOT / "bench" / "results" / "answer-context.json").read_text())
    runs = {r["system"]: r for r in d["runs"]}
    assert {"bm25", "dense", "hybrid", "nothing", "echo"} <= set(runs)
    for r in runs.values():
        assert r["answer_context"]["read"] and r["answer_context"]["unread_records"] == 0
        assert set(r["figures"]["all"]) == set(ANSWER_CONTEXT_ROWS)
        n = r["figures"]["all"]["answer@cartridge"]["n"]
        assert n == r["figures"]["all"]["answer@cartridge"]["denominator"] > 0
    for floor in ("nothing", "echo"):  # no cartridge: no answer handed over, no cost
        a = runs[floor]["figures"]["all"]
        assert a["answer@cartridge"]["value"] == 0 and a["context_tokens_p95"]["value"] == 0
    assert runs["nothing"]["figures"]["all"]["recall@1024tok"]["value"] == 0
    for ref in ("bm25", "dense", "hybrid"):
        a = runs[ref]["figures"]["all"]
        assert a["answer@cartridge"]["value"] > 0 and a["context_tokens_p95"]["value"] > 0


def test_area_and_seconds_of_a_cartridge():
    class Blank:
        def available(self, sid):
            return True

        def text(self, sid, extent):
            return "two words"

    items = [
        item("uih:s", "ui_screenshot", holder="uih/a", meta={"width": 100, "height": 100}),
        item("uih:bare", "ui_screenshot", holder="uih/a"),
        item("vidh:v", "video", holder="vidh/a"),
    ]
    box = lambda *b: {"bbox": list(b)}
    atoms = [
        atom("s1", "uih:s", box(0, 0, 50, 50), "ui_screenshot", "uih/a"),
        atom("s2", "uih:s", box(25, 25, 75, 75), "ui_screenshot", "uih/a"),
        atom("n1", "uih:bare", box(0, 0, 10, 10), "ui_screenshot", "uih/a"),
        atom("v1", "vidh:v", {"t_start": 0, "t_end": 30}, "video", "vidh/a"),
        atom("v2", "vidh:v", {"t_start": 20, "t_end": 50}, "video", "vidh/a"),
    ]
    records = [
        rec(
            "uih:q",
            [{"source_id": "uih:s", "region": box(10, 10, 20, 20)}],
            "x y",
            m="ui_screenshot",
            holder="uih/a",
        ),
        rec(
            "uih:b",
            [{"source_id": "uih:bare", "region": box(1, 1, 2, 2)}],
            "x y",
            m="ui_screenshot",
            holder="uih/a",
        ),
        rec(
            "vidh:q",
            [{"source_id": "vidh:v", "region": {"t_start": 5, "t_end": 6}}],
            "x y",
            m="video",
            holder="vidh/a",
        ),
    ]
    run = lines(
        [
            {"query_id": "uih:q", "hits": [["s1", 1.0]], "cartridge": ["s1", "s2"]},
            {"query_id": "uih:b", "hits": [], "cartridge": ["n1"]},
            {"query_id": "vidh:q", "hits": [], "cartridge": ["v1", "v2"]},
        ]
    )
    s = score_items(records, items, atoms, run, content=ContentTexts(Blank()))
    assert value(s, "context_area", "uih:q") == pytest.approx((2500 + 2500 - 625) / 10000)
    assert value(s, "context_seconds", "vidh:q") == 50
    assert math.isnan(value(s, "context_seconds", "uih:q"))
    assert math.isnan(value(s, "context_area", "vidh:q"))
    # a screenshot without its size has no area (never a made-up one); its tokens still count
    assert math.isnan(value(s, "context_area", "uih:b"))
    assert value(s, "context_tokens", "uih:b") == 2
    m = aggregate(s, n_resamples=50)
    assert m["ui_screenshot"]["context_area_p50"]["n"] == 1
    assert m["ui_screenshot"]["context_area_p50"]["denominator"] == 2
    assert m["video"]["context_seconds_p95"]["value"] == 50


# ---------------------------------------------------------------- the answer within the budget,
# the grounded answer@10, stuffing

BUDGET_DOC = "pdfh:bud"
#: page 1 holds the answer (10 words); pages 2-4 are 500-word fillers; page 5 holds the answer
#: too but is no gold region of the record (the same words elsewhere)
BUDGET_TEXTS = {
    (BUDGET_DOC, 1, None): "the meeting was moved to Boston " + WORDS(4),
    (BUDGET_DOC, 2, None): WORDS(500),
    (BUDGET_DOC, 3, None): WORDS(500),
    (BUDGET_DOC, 4, None): WORDS(14),
    (BUDGET_DOC, 5, None): "a trip to Boston " + WORDS(6),
}
BUDGET_ATOMS = [atom(f"q{p}", BUDGET_DOC, {"page": p}) for p in range(1, 6)]


def budget_rec(qid):
    return rec(qid, [region(1, sid=BUDGET_DOC)], answer="Boston")


#: cartridges by hand (tokens: q1 10, q2 500, q3 500, q4 14, q5 10):
#: fits    [q1]              10 tokens          answer in gold atom  -> 1 (uncut 1)
#: edge    [q1, q2, q3, q4]  1,024 exactly      fits                 -> 1 (uncut 1)
#: over    [q1, q2, q3, q4, q5] 1,034 > 1,024   past the budget      -> 0 (uncut 1)
#: empty   []                                   abstains             -> 0 (uncut 0)
#: elsewhere [q5]            10                 answer, not in gold  -> 1 (answer text, not a hit)
BUDGET_CARTS = {
    "fits": ["q1"],
    "edge": ["q1", "q2", "q3", "q4"],
    "over": ["q1", "q2", "q3", "q4", "q5"],
    "empty": [],
    "elsewhere": ["q5"],
}
#: rankings: "elsewhere" ranks the non-gold Boston page first and the gold page 11th (tied
#: scores kept in the system's order), so answer@10 is 1 and grounded_answer@10 0; "fits"
#: ranks a tie of q5 then q1 at the top: both count for answer@10, only q1 for the grounded one
BUDGET_HITS = {
    "fits": [["q5", 1.0], ["q1", 1.0]],
    "edge": [["q2", 3.0], ["q1", 2.0]],
    "over": [["q3", 1.0]],
    "empty": [["q1", 1.0]],
    "elsewhere": [["q5", 5.0], ["q2", 1.0], ["q3", 1.0]],
}


@pytest.fixture(scope="module")
def budgeted():
    records = [budget_rec(f"pdfh:{k}") for k in BUDGET_CARTS]
    run = [
        {"query_id": f"pdfh:{k}", "hits": BUDGET_HITS[k], "cartridge": c}
        for k, c in BUDGET_CARTS.items()
    ]
    return score(records, [item(BUDGET_DOC)], BUDGET_ATOMS, run, BUDGET_TEXTS)


def test_answer_within_the_budget_by_hand(budgeted):
    s = budgeted
    g = lambda m, q: value(s, m, f"pdfh:{q}")
    assert [g("context_tokens", q) for q in BUDGET_CARTS] == [10, 1024, 1034, 0, 10]
    assert [g("answer@cartridge", q) for q in BUDGET_CARTS] == [1, 1, 1, 0, 1]
    # a cartridge of exactly 1,024 tokens fits; one of 1,034 scores 0 whatever it holds
    assert [g("answer@cartridge_1024tok", q) for q in BUDGET_CARTS] == [1, 1, 0, 0, 1]
    m = aggregate(s, n_resamples=50)["pdf"]
    assert m["answer@cartridge_1024tok"]["value"] == pytest.approx(3 / 5)
    assert m["answer@cartridge"]["value"] == pytest.approx(4 / 5)
    assert m["answer@cartridge_1024tok"]["n"] == m["answer@cartridge_1024tok"]["denominator"] == 5


def test_grounded_answer_at_10_counts_only_gold_hitting_atoms(budgeted):
    g = lambda m, q: value(budgeted, m, f"pdfh:{q}")
    # the tie q5, q1: both within 10; the answer is in q1, which hits the gold page
    assert g("answer@10", "fits") == g("grounded_answer@10", "fits") == 1
    # only the non-gold Boston page is in the top 10: answered by coincidence
    assert g("answer@10", "elsewhere") == 1 and g("grounded_answer@10", "elsewhere") == 0
    assert g("answer@10", "over") == g("grounded_answer@10", "over") == 0
    assert g("answer@10", "edge") == g("grounded_answer@10", "edge") == 1
    m = aggregate(budgeted, n_resamples=50)["pdf"]
    assert m["answer@10"]["value"] == pytest.approx(4 / 5)
    assert m["grounded_answer@10"]["value"] == pytest.approx(3 / 5)
    for k in ("answer@cartridge_1024tok", "grounded_answer@10"):
        assert k in aggregate(budgeted, n_resamples=50)["definitions"]
        assert BY_NAME[k].denominator == "answer-bearing" and BY_NAME[k].gate is None
    assert BY_NAME["answer@cartridge_1024tok"].ranked and not BY_NAME["answer@cartridge"].ranked


def _independent(records, run, texts, atoms, budget=1024):
    """The two new figures re-implemented from the definitions alone (no membench scoring
    code but the answer normaliser): per answer-bearing record, whether the cartridge fits the
    budget and holds the answer, and whether the gold-hitting top-10 atoms hold it."""
    from membench.metrics.answers import needles, normalise

    page = {a["atom_id"]: (a["source_id"], a["extent"]["page"]) for a in atoms}
    text = lambda aid: f" {normalise(texts[(page[aid][0], page[aid][1], None)])} "
    holds = lambda ns, aids: all(any(f" {n} " in text(a) for a in aids) for n in ns)
    out = {}
    for r, line in zip(records, run):
        ns = needles(r["answer"], r["answer_format"])
        gold = {(g["source_id"], g["region"]["page"]) for g in r["gold"]}
        if ns is None or not holds_gold(ns, gold, texts):
            continue
        cart = line["cartridge"]
        fits = sum(len(texts[(page[a][0], page[a][1], None)].split()) for a in cart) <= budget
        order = sorted(range(len(line["hits"])), key=lambda i: -line["hits"][i][1])
        top = [line["hits"][i][0] for i in order][:10]
        out[r["query_id"]] = (
            float(fits and holds(ns, cart)),
            float(holds(ns, [a for a in top if page[a] in gold])),
        )
    return out


def holds_gold(ns, gold, texts):
    from membench.metrics.answers import normalise

    return all(any(f" {n} " in f" {normalise(texts[(s, p, None)])} " for s, p in gold) for n in ns)


def test_the_new_figures_match_an_independent_implementation():
    """Random cartridges and rankings over the budget fixture's pages, scored by membench and
    by :func:`_independent`."""
    rng = np.random.default_rng(7)
    records, run = [], []
    pages = [f"q{p}" for p in range(1, 6)]
    for i in range(150):
        gold_page = int(rng.integers(1, 6))
        r = rec(
            f"pdfh:r{i}",
            [region(gold_page, sid=BUDGET_DOC)],
            answer=str(rng.choice(["Boston", "filler", "meeting", "trip Boston"])),
        )
        order = [str(a) for a in rng.permutation(pages)][: int(rng.integers(1, 6))]
        hits = [[a, float(rng.integers(0, 3))] for a in order]  # ties on purpose
        cart = [str(a) for a in rng.choice(pages, size=int(rng.integers(0, 6)), replace=False)]
        records.append(r)
        run.append({"query_id": r["query_id"], "hits": hits, "cartridge": cart})
    s = score(records, [item(BUDGET_DOC)], BUDGET_ATOMS, run, BUDGET_TEXTS)
    want = _independent(records, run, BUDGET_TEXTS, BUDGET_ATOMS)
    assert len(want) > 40
    for j in (0, 1):  # both values occur for both figures
        assert {v[j] for v in want.values()} == {0.0, 1.0}
    for q in s.query_id:
        got = (value(s, "answer@cartridge_1024tok", q), value(s, "grounded_answer@10", q))
        if q in want:
            assert got == want[q], q
        else:
            assert all(math.isnan(v) for v in got), q


def test_stuffing_the_cartridge_buys_nothing_within_the_budget():
    """The ``stuffed`` double on a hand-built memory: it keeps the wrapped system's ranking and
    commit decision and commits its top 100 atoms. The uncut answer@cartridge rises; the
    ranked answer figure does not."""
    from membench.contract.schema import Scope, SourceItem
    from membench.systems import make_system

    t0 = datetime(2024, 1, 1, tzinfo=timezone.utc)
    # one holder, 40 sessions of 3 turns, ~30 words a turn: the answer to session k's
    # question is in session k; bm25 commits its best 3-turn window when it clears its
    # threshold, the stuffed one its top 100 windows
    items, records = [], []
    for k in range(40):
        turns = [
            {
                "turn": t,
                "speaker": "A",
                "text": f"session{k} topic{k} place{k} name{k} "
                + (f"the code is zx{k}q " if t == 2 else "")
                + WORDS(28, f"w{t}"),
            }
            for t in (1, 2, 3)
        ]
        sid = f"convh:s{k}"
        items.append(
            SourceItem(
                source_id=sid,
                modality="conversation",
                holder="convh/a",
                observed_at=t0,
                content=turns,
                path=None,
                meta={},
            )
        )
        records.append(
            rec(
                f"convh:q{k}",
                [{"source_id": sid, "region": {"turn": 2}}],
                answer=f"zx{k}q",
                m="conversation",
                holder="convh/a",
            )
        )
    scope = Scope(holder="convh/a", scenario="s")
    figures = {}
    for name, cfg in (("bm25", {}), ("stuffed", {"system": "bm25"})):
        system = make_system(name, cfg)
        atoms = system.ingest(items, Path("."))
        run = []
        for k, r in enumerate(records):
            # every fourth question is about a session the memory does not hold (bm25
            # abstains); every fourth names its session once and the next one three times
            # (bm25 commits the next session's window: the answer is further down)
            j = k + 100 if k % 4 == 0 else k
            o = (k + 1) % 40 if k % 4 == 1 else j
            res = system.query(
                f"what is the code of session{j} topic{o} place{o} name{o}?", scope, T2
            )
            run.append(
                {
                    "query_id": r["query_id"],
                    "hits": [list(h) for h in res.hits],
                    "cartridge": res.cartridge,
                }
            )
        atom_rows = [
            {
                "atom_id": a.atom_id,
                "source_id": a.source_id,
                "modality": a.modality,
                "holder": a.holder,
                "observed_at": a.observed_at.isoformat(),
                "extent": a.extent,
            }
            for a in atoms
        ]
        texts = ContentTexts(_ItemsText(items))
        s = score_items(
            records,
            [i.model_dump(mode="json") for i in items],
            atom_rows,
            lines(run),
            content=texts,
        )
        figures[name] = aggregate(s, n_resamples=50)["all"]
        figures[name]["run"] = run
    plain, stuffed = figures["bm25"], figures["stuffed"]
    # the same commit decision, the same ranking; some commits and some abstentions
    committed = [bool(x["cartridge"]) for x in plain["run"]]
    assert committed == [bool(x["cartridge"]) for x in stuffed["run"]]
    assert 0 < sum(committed) < len(committed)
    assert [x["hits"] for x in plain["run"]] == [x["hits"] for x in stuffed["run"]]
    assert any(
        len(x["cartridge"]) > len(y["cartridge"]) for x, y in zip(stuffed["run"], plain["run"])
    )
    assert stuffed["context_tokens_committed_p50"]["value"] > 1024
    # volume buys the uncut figure ...
    assert stuffed["answer@cartridge"]["value"] > plain["answer@cartridge"]["value"] + 0.1
    # ... and nothing of the ranked one
    assert (
        stuffed["answer@cartridge_1024tok"]["value"]
        <= plain["answer@cartridge_1024tok"]["value"] + 0.005
    )


class _ItemsText:
    """The content text of conversation items held in memory (as ExtentText reads turns)."""

    def __init__(self, items):
        from membench.content import ChunkConfig
        from membench.metrics.extent_text import READERS

        self.docs = {
            it.source_id: READERS["conversation"](it, Path("."), ChunkConfig()) for it in items
        }

    def available(self, sid):
        return True

    def text(self, sid, extent):
        return self.docs[sid].text(extent)

    def answer_text(self, sid, extent):
        return self.docs[sid].answer_text(extent)


def test_generated_captions_are_never_answer_text(tmp_path):
    """A turn's shared-image caption is generated (extent_text.GENERATED): handed over, and
    counted in the tokens, but never where an answer is looked for."""
    from membench.metrics.extent_text import GENERATED

    assert "image_caption" in GENERATED["conversation"]
    sid = "convh:cap"
    turns = [
        {
            "turn": 1,
            "speaker": "Ann",
            "text": "Look at this.",
            "image_caption": "a photography of a red bicycle",
        },
        {"turn": 2, "speaker": "Bo", "text": "My bicycle is blue."},
    ]
    items = [item(sid, "conversation", holder="convh/ann", content=turns)]
    (tmp_path / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    et = ExtentText(tmp_path, tmp_path)
    ext = {"turn_start": 1, "turn_end": 2}
    assert "photography" in et.text(sid, ext) and "photography" not in et.answer_text(sid, ext)
    atoms = [atom("t12", sid, ext, "conversation", "convh/ann")]
    records = [
        rec(
            "convh:red",
            [{"source_id": sid, "region": {"turn": 1}}],
            answer="red",
            m="conversation",
            holder="convh/ann",
        ),
        rec(
            "convh:blue",
            [{"source_id": sid, "region": {"turn": 2}}],
            answer="blue",
            m="conversation",
            holder="convh/ann",
        ),
    ]
    run = [
        {"query_id": q, "hits": [["t12", 1.0]], "cartridge": ["t12"]}
        for q in ("convh:red", "convh:blue")
    ]
    s = score_items(
        records, items, atoms, lines(run), content=ContentTexts(ExtentText(tmp_path, tmp_path))
    )
    # "red" is only in the generated caption: the record is not answer-bearing
    assert value(s, "answer_bearing", "convh:red") == 0
    assert math.isnan(value(s, "answer@cartridge", "convh:red"))
    assert value(s, "answer@cartridge", "convh:blue") == 1
    # the caption is handed over: its words are counted
    assert value(s, "context_tokens", "convh:blue") == len(et.text(sid, ext).split())
