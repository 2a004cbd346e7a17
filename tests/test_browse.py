"""The failure browser: which cases it picks (agreeing with the metrics), how it shows each
modality's source region, and the widget's callbacks driven without a front end."""

from __future__ import annotations

import base64
import io
import json
import re
from datetime import datetime
from pathlib import Path

import pytest
from PIL import Image

from membench.analysis.browse import Browser, Case, CaseAtom, cases, counts_frame, render_case_html
from membench.contract.schema import SourceItem
from membench.core.errors import MembenchError
from membench.metrics import read_atoms, read_run, score_items
from membench.modalities import MODALITIES
from membench.modalities import render as rr
from membench.modalities.video import fmt_t
from membench.run.runner import load_split, run_system
from membench.sets.select import select_records
from membench.systems import make_system

LIMIT = 30


@pytest.fixture(scope="module")
def leaky_run(built, corpus_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("leaky")
    run_system(make_system("leaky"), built.out, "dev", out, corpus_root, limit=LIMIT)
    return out


@pytest.fixture(scope="module")
def random_run(built, corpus_root, tmp_path_factory):
    out = tmp_path_factory.mktemp("random")
    run_system(make_system("random"), built.out, "dev", out, corpus_root, limit=LIMIT)
    return out


@pytest.fixture(autouse=True)
def _render_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))


def _item_scores(run_dir: Path, sets: Path):
    meta = json.loads((run_dir / "meta.json").read_text())
    recs, _ = select_records(sets, "dev", meta["modalities"], meta["limit"])
    items = [
        SourceItem.model_validate_json(l) for l in (sets / "items.jsonl").read_text().splitlines()
    ]
    return {
        r["query_id"]: r
        for r in score_items(
            recs, items, read_atoms(run_dir / "atoms.jsonl"), read_run(run_dir / "run.jsonl")
        ).rows()
    }


def _order_key(c: Case):
    return (MODALITIES.index(c.modality), c.query_id)


# --------------------------------------------------------------------------- cases() on real runs


def test_false_recalls_of_a_leaky_run_agree_with_the_metrics(leaky_run, built):
    fr = cases(leaky_run, kind="false_recall")
    rows = _item_scores(leaky_run, built.out)
    # audited ones (false_recall_rate) and natives with an upstream tell (false_recall_native)
    expected = sorted(
        q
        for q, r in rows.items()
        if r["false_recall_rate"] == 1.0 or r["false_recall_native"] == 1.0
    )
    assert sorted(c.query_id for c in fr) == expected and expected
    assert fr == sorted(fr, key=_order_key)
    assert all(c.audited == rows[c.query_id]["audited"] for c in fr)
    # each case is marked with its kind and whether it is audited
    for c in [next(c for c in fr if c.audited), *(c for c in fr if not c.audited)][:2]:
        html = render_case_html(c, corpus_root=None)
        assert f'data-audited="{"yes" if c.audited else "no"}"' in html
        assert (
            f"{c.derivation} · audited"
            if c.audited
            else f"{c.derivation} · upstream tell, not audited"
        ) in html
    # leaky never abstains: every modality with unanswerable items has false recalls
    with_unanswerable = {
        r.modality for r in load_split(built.out, "dev", limit=LIMIT).records if r.unanswerable
    }
    assert {c.modality for c in fr} == with_unanswerable
    run_lines = {
        json.loads(l)["query_id"]: json.loads(l)
        for l in (leaky_run / "run.jsonl").read_text().splitlines()
    }
    n_orig = 0
    for c in fr:
        assert c.kind == "false_recall" and c.unanswerable and c.gold == []
        line = run_lines[c.query_id]
        assert [a.atom_id for a in c.cartridge] == line["cartridge"]
        scores = {a: s for a, s in line["hits"]}
        for a in c.cartridge:
            assert a.score == scores[a.atom_id] and a.in_cartridge and a.known
            assert a.foreign_holder == (a.holder != c.scope["holder"])
            assert a.after_as_of == (
                datetime.fromisoformat(a.observed_at) > datetime.fromisoformat(c.as_of)
            )
            assert a.source_id in c.sources
            assert c.derivation in ("native", "transactive", "temporal")
        assert c.audited or c.derivation == "native"  # a derived item is always audited
        if c.derivation != "native":
            # the original is withdrawn from the sets; its gold is the record's distractor
            assert c.derived_from and c.derived_from not in rows
            assert c.original["found"] and c.original_gold
            # leaky returns the gold atoms of the query it derives from first: what it found
            # instead (when that holder's items are in this limited run's memory)
            if c.cartridge[0].hits_original:
                n_orig += 1
                if c.derivation == "transactive":
                    assert c.cartridge[0].foreign_holder
                else:
                    assert c.cartridge[0].after_as_of
        # the metrics count scope violations over hits and cartridge together
        assert rows[c.query_id]["n_foreign"] >= sum(a.foreign_holder for a in c.cartridge)
        assert rows[c.query_id]["n_future"] >= sum(a.after_as_of for a in c.cartridge)
    assert n_orig > 0


def test_a_false_recall_says_what_its_cartridge_hands_over(leaky_run):
    """Each case carries its cartridge's context cost (the run's scores: context_tokens, and
    area / seconds for pictures and video) and its cartridge heading says it."""
    import numpy as np

    from membench.metrics.rundir import RunDir

    scores = RunDir.open(leaky_run).scores()
    at = {q: i for i, q in enumerate(scores.query_id)}
    fr = cases(leaky_run, kind="false_recall")
    shown = 0
    for c in fr:
        tok = scores.values["context_tokens"][at[c.query_id]]
        if np.isnan(tok):  # content not read here: nothing claimed
            assert "context_tokens" not in c.cost
            continue
        assert c.cost["context_tokens"] == tok > 0
        html = render_case_html(c, corpus_root=None)
        assert f"Cartridge: {len(c.cartridge)} atom(s), {tok:,.0f} tokens" in html
        assert "the system should have abstained" in html
        shown += 1
    assert shown > 0


def test_misses_agree_with_recall_at_10(random_run, built):
    miss = cases(random_run, kind="miss")
    rows = _item_scores(random_run, built.out)
    expected = sorted(q for q, r in rows.items() if r["recall@10"] == 0.0)
    assert sorted(c.query_id for c in miss) == expected and expected
    assert miss == sorted(miss, key=_order_key)
    for c in miss:
        assert not c.unanswerable and c.gold and len(c.top_hits) <= 10
        assert not any(a.hits_gold for a in c.top_hits)
        assert {g["source_id"] for g in c.gold} <= set(c.sources)
    assert cases(random_run, kind="miss", modality="video") == [
        c for c in miss if c.modality == "video"
    ]


def test_scope_leaks_agree_with_holder_and_temporal_correctness(leaky_run, built):
    sl = cases(leaky_run, kind="scope_leak")
    rows = _item_scores(leaky_run, built.out)
    expected = sorted(
        q
        for q, r in rows.items()
        if r["holder_correctness"] == 0.0 or r["temporal_correctness"] == 0.0
    )
    assert sorted(c.query_id for c in sl) == expected and expected
    assert sl == sorted(sl, key=_order_key)
    assert any(not c.unanswerable for c in sl) and any(c.unanswerable for c in sl)
    for c in sl:
        r = rows[c.query_id]
        assert c.kind == "scope_leak"
        # the same distinct atoms the metrics count (hits at any depth and the cartridge)
        assert (c.n_foreign, c.n_future) == (r["n_foreign"], r["n_future"])
        assert max(c.n_foreign, c.n_future) <= c.n_leaks <= c.n_foreign + c.n_future
        assert 0 < len(c.leaks) <= min(c.n_leaks, 10)
        assert all(a.foreign_holder or a.after_as_of for a in c.leaks)
        ranks = [a.rank for a in c.leaks if a.rank is not None]
        assert ranks == sorted(ranks)
        html = render_case_html(c)
        assert "SCOPE LEAK" in html and 'data-kind="scope_leak"' in html
        assert f"Returned out of scope: {c.n_leaks} atom(s)" in html
    df = counts_frame(leaky_run)
    assert (
        df.loc["all", "scope leaks (any returned atom out of scope)"] == f"{len(sl)} / {len(rows)}"
    )
    assert cases(leaky_run, kind="scope_leak", modality="video") == [
        c for c in sl if c.modality == "video"
    ]


def test_a_scope_respecting_run_has_no_scope_leaks(random_run):
    assert cases(random_run, kind="scope_leak") == []
    assert counts_frame(random_run).loc["all", "scope-leak rate"] == 0.0


def test_counts_frame_has_denominators(leaky_run):
    from membench.analysis.frames import TELL_NATIVE

    df = counts_frame(leaky_run)
    fr = cases(leaky_run)
    audited = [c for c in fr if c.audited]
    tells = [c for c in fr if not c.audited]
    assert df.loc["all", "false recalls, audited"] == f"{len(audited)} / {len(audited)}"
    assert df.loc["all", "false-recall rate, audited"] == 1.0
    assert df.loc["all", "false recalls, natives with a tell"] == f"{len(tells)} / {len(tells)}"
    by = counts_frame(leaky_run, by="derivation")
    assert set(by.index) <= {"native", TELL_NATIVE, "transactive", "temporal", "all"}
    if tells:  # the natives with a tell are their own derivation
        assert (
            by.loc[TELL_NATIVE, "false recalls, natives with a tell"]
            == f"{len(tells)} / {len(tells)}"
        )
        assert by.loc[TELL_NATIVE, "false recalls, audited"] == "0 / 0"


def test_unknown_kind_is_an_error(leaky_run):
    with pytest.raises(Exception, match="kind"):
        cases(leaky_run, kind="nope")


# --------------------------------------------------------------------------- hand-made cases

T0, T1, T2 = "2024-01-01T00:00:00+00:00", "2024-01-02T00:00:00+00:00", "2024-01-03T00:00:00+00:00"


def _rec(qid, holder, gold, unanswerable=False, as_of=T2, **origin):
    return {
        "query_id": qid,
        "modality": "conversation",
        "question": f"<b>{qid}</b>?",
        "answer": None if unanswerable else "x",
        "answer_format": "none" if unanswerable else "str",
        "gold": gold,
        "scope": {"holder": holder, "session": None, "scenario": "s"},
        "as_of": as_of,
        "unanswerable": unanswerable,
        "origin": {"dataset": "d", "revision": "r", "item": qid, "license": "L", **origin},
        "split": "dev",
    }


def _atom(aid, src, holder, t0, t1):
    return {
        "atom_id": aid,
        "source_id": src,
        "modality": "conversation",
        "holder": holder,
        "observed_at": T1,
        "extent": {"turn_start": t0, "turn_end": t1},
        "text": f"text {aid}",
    }


@pytest.fixture
def hand_run(tmp_path):
    sets = tmp_path / "sets"
    sets.mkdir()
    turns = [
        {"turn": i, "speaker": "Ann" if i % 2 else "Bob", "text": f"line {i}"} for i in range(1, 31)
    ]
    items = [
        {
            "source_id": f"c:{h}",
            "modality": "conversation",
            "holder": h,
            "observed_at": T1,
            "content": turns,
            "meta": {"date_time": "1 May 2023", "turns": 30},
        }
        for h in ("ha", "hb")
    ]
    (sets / "items.jsonl").write_text("".join(json.dumps(i) + "\n" for i in items))
    gold = [{"source_id": "c:ha", "region": {"turn": 2}}]
    recs = [
        _rec("c:q0", "ha", gold),
        _rec("c:q1", "ha", gold),
        _rec("c:q2", "ha", gold),
        _rec("c:q3", "ha", [], unanswerable=True),
        _rec(
            "c:q5",
            "hb",
            [],
            unanswerable=True,
            as_of=T0,
            derived_from="c:q0",
            derivation="transactive",
            distractor=gold,
        ),
    ]
    (sets / "conversation.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    for m in MODALITIES:
        if m != "conversation":
            (sets / f"{m}.jsonl").write_text("")
    fill = [_atom(f"f{i}", "c:ha", "ha", 10 + 2 * i, 11 + 2 * i) for i in range(10)]
    atoms = [_atom("gold", "c:ha", "ha", 1, 3), *fill]
    run = tmp_path / "run"
    run.mkdir()
    (run / "atoms.jsonl").write_text("".join(json.dumps(a) + "\n" for a in atoms))
    lines = [
        # ties: equal scores keep the system's order, so the gold atom is rank 11: a miss
        {
            "query_id": "c:q0",
            "hits": [[a["atom_id"], 1.0] for a in fill] + [["gold", 1.0]],
            "cartridge": ["f0"],
            "latency_ms": 1.0,
        },
        # rank 10: not a miss
        {
            "query_id": "c:q1",
            "hits": [[a["atom_id"], 0.5] for a in fill[:9]] + [["gold", 0.4]],
            "cartridge": [],
            "latency_ms": 1.0,
        },
        # c:q2 returned nothing: a miss
        {"query_id": "c:q2", "hits": [], "cartridge": [], "latency_ms": 1.0},
        {"query_id": "c:q3", "hits": [["gold", 1.0]], "cartridge": [], "latency_ms": 1.0},
        {
            "query_id": "c:q5",
            "hits": [["gold", 2.0], ["f1", 1.0]],
            "cartridge": ["gold", "f9"],
            "latency_ms": 1.0,
        },
    ]
    (run / "run.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    (run / "meta.json").write_text(
        json.dumps(
            {"split": "dev", "sets_dir": str(sets), "modalities": ["conversation"], "limit": None}
        )
    )
    return run


def test_hand_made_cases(hand_run):
    miss = cases(hand_run, kind="miss")
    assert [c.query_id for c in miss] == ["c:q0", "c:q2"]
    q0, q2 = miss
    assert [a.atom_id for a in q0.top_hits] == [f"f{i}" for i in range(10)]
    assert [a.rank for a in q0.top_hits] == list(range(1, 11))
    assert q0.gold == [{"source_id": "c:ha", "region": {"turn": 2}}]
    assert [a.atom_id for a in q0.cartridge] == ["f0"] and q0.cartridge[0].score == 1.0
    assert q2.has_run and q2.n_hits == 0 and q2.top_hits == [] and q2.cartridge == []

    fr = cases(hand_run, kind="false_recall")
    assert [c.query_id for c in fr] == ["c:q5"]  # c:q3 abstained
    c = fr[0]
    assert c.derivation == "transactive" and c.derived_from == "c:q0"
    assert c.original_gold == [{"source_id": "c:ha", "region": {"turn": 2}}]
    g, f9 = c.cartridge
    assert (g.atom_id, g.score, g.rank, g.text) == ("gold", 2.0, 1, "text gold")
    assert g.foreign_holder and g.holder == "ha" and g.after_as_of and g.hits_original
    assert f9.score is None and f9.rank is None and not f9.hits_original

    html = render_case_html(c, corpus_root=None)
    assert "&lt;b&gt;c:q5&lt;/b&gt;?" in html and "<b>c:q5</b>" not in html  # escaped
    assert "other holder: ha" in html and "observed after as_of" in html
    assert "hits the gold of c:q0" in html and "1 May 2023" in html
    assert "shown above" in html  # the original gold is overlapped by the cartridge atom

    df = counts_frame(hand_run)
    assert df.loc["conversation", "false recalls, audited"] == "1 / 2"
    assert df.loc["conversation", "misses (no gold in top 10)"] == "2 / 3"
    # beside the false recalls, the answerable abstentions (c:q1 and c:q2 have empty cartridges)
    assert df.loc["conversation", "abstentions on answerable"] == "2 / 3"
    assert df.loc["conversation", "abstention rate (answerable)"] == pytest.approx(2 / 3)
    cols = list(df.columns)
    assert (
        cols.index("false recalls, natives with a tell")
        == cols.index("false-recall rate, audited") + 1
    )
    assert (
        cols.index("abstentions on answerable")
        == cols.index("false-recall rate, natives with a tell") + 1
    )


def test_the_static_browser_embeds_the_first_cases_of_every_kind(hand_run):
    """The block page 04's kernel-free stepper works on: per kind its title, the count of
    all its cases and the first n embedded (in the browser's order); n is bounded."""
    from membench.analysis.browse import MAX_STATIC_CASES, static_browser_html
    from membench.core.bounds import REGISTRY

    html = static_browser_html(hand_run, n=1, spread=False)
    assert html.count("data-membench-stepper") == 1
    kinds = re.findall(
        r'<div class="mb-step-kind" data-kind="(\w+)" data-title="([^"]+)" '
        r'data-total="(\d+)">',
        html,
    )
    assert kinds == [
        ("false_recall", "false recalls", "1"),
        ("miss", "answerable misses", "2"),
        ("scope_leak", "scope leaks", "1"),
    ]
    assert re.findall(r'class="mb-case" data-query-id="([^"]+)" data-kind="(\w+)"', html) == [
        ("c:q5", "false_recall"),
        ("c:q0", "miss"),
        ("c:q5", "scope_leak"),
    ]
    assert "1 of 2 embedded" in html
    both = static_browser_html(hand_run, n=5, spread=False)
    assert both.count('data-kind="miss"') == 3  # the kind and its two cases
    assert REGISTRY["static_cases"].value == MAX_STATIC_CASES
    with pytest.raises(MembenchError, match="static_cases"):
        static_browser_html(hand_run, n=MAX_STATIC_CASES + 1)


# --------------------------------------------------------------------------- rendering


def _items(built) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for line in (built.out / "items.jsonl").read_text().splitlines():
        it = json.loads(line)
        out.setdefault(it["modality"], []).append(it)
    return out


def _case(item: dict, extent: dict, gold: list[dict] | None = None, question="q?") -> Case:
    atom = CaseAtom(
        "a1",
        1,
        0.5,
        item["source_id"],
        item["modality"],
        extent,
        "atom <text>",
        item["holder"],
        item["observed_at"],
        True,
        False,
        False,
    )
    return Case(
        kind="miss" if gold else "false_recall",
        query_id="x:1",
        modality=item["modality"],
        question=question,
        answer=None,
        scope={"holder": item["holder"], "session": None, "scenario": "s"},
        as_of="2030-01-01T00:00:00+00:00",
        derivation="native",
        derived_from=None,
        split="dev",
        unanswerable=not gold,
        cartridge=[atom],
        top_hits=[atom],
        gold=gold or [],
        sources={item["source_id"]: item},
    )


def _images(html: str, cls: str | None = None) -> list[tuple[Image.Image, dict]]:
    out = []
    for tag in re.findall(r"<img [^>]*>", html):
        if cls and f'class="{cls}"' not in tag:
            continue
        uri = re.search(r'src="data:image/png;base64,([^"]+)"', tag).group(1)
        attrs = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        out.append((Image.open(io.BytesIO(base64.b64decode(uri))).convert("RGB"), attrs))
    return out


def test_pdf_page_is_rendered_and_cached(built, corpus_root, tmp_path):
    it = _items(built)["pdf"][0]
    html = render_case_html(_case(it, {"page": 2}), corpus_root)
    ((img, _attrs),) = _images(html)
    assert img.width == rr.PDF_WIDTH and img.height > img.width  # a portrait page
    assert "page 2 of" in html and "atom &lt;text&gt;" in html
    cached = list((tmp_path / "cache" / "render").glob("pdf-*-p2-w*.png"))
    assert len(cached) == 1 and it["meta"]["sha256"] in cached[0].name
    assert render_case_html(_case(it, {"page": 2}), corpus_root) == html  # from the cache


def test_image_is_embedded_downscaled(built, corpus_root):
    it = _items(built)["image"][0]
    ((img, _),) = _images(render_case_html(_case(it, {}), corpus_root))
    assert max(img.size) <= rr.IMAGE_MAX_SIDE
    w, h = it["meta"]["width"], it["meta"]["height"]
    assert abs(img.width / img.height - w / h) < 0.02


def test_screenshot_has_the_boxes_drawn(built, corpus_root):
    it = _items(built)["ui_screenshot"][0]
    W, H = it["meta"]["width"], it["meta"]["height"]
    atom_box = [W * 0.1, H * 0.1, W * 0.4, H * 0.3]
    gold_box = [W * 0.5, H * 0.6, W * 0.8, H * 0.9]
    html = render_case_html(
        _case(
            it,
            {"bbox": atom_box},
            gold=[{"source_id": it["source_id"], "region": {"bbox": gold_box}}],
        ),
        corpus_root,
    )
    shots = _images(html, "mb-screen")
    assert len(shots) == 2  # the atom's panel and the gold's panel
    img, attrs = shots[0]
    s = float(attrs["data-scale"])
    assert max(img.size) <= rr.SCREEN_MAX_SIDE

    def at(box, colour):
        x0, y0, x1, y1 = (v * s for v in box)
        ym, xm = int((y0 + y1) / 2), int((x0 + x1) / 2)
        assert img.getpixel((int(x0) + 1, ym)) == colour  # left edge
        assert img.getpixel((xm, int(y0) + 1)) == colour  # top edge
        assert img.getpixel((int(x1) - 2, ym)) == colour  # right edge
        assert img.getpixel((xm, ym)) != colour  # inside: the picture itself

    at(atom_box, rr.ATOM_COLOUR)
    at(gold_box, rr.GOLD_COLOUR)
    assert len(_images(html, "mb-crop")) == 2


def test_video_window_shows_its_cues(built, corpus_root):
    it = next(i for i in _items(built)["video"] if len(i["content"]) > 20)
    cues = it["content"]
    t0, t1 = float(cues[5][0]), float(cues[5][0]) + 10.0
    html = render_case_html(_case(it, {"t_start": t0, "t_end": t1}), corpus_root)
    inside = [c for c in cues if c[0] <= t1 and c[1] >= t0]
    outside = [c for c in cues if c[1] < t0 - 1 and c[2] not in {x[2] for x in inside}]
    import html as h

    for c in inside:
        assert h.escape(c[2]) in html
    assert outside and h.escape(outside[0][2]) not in html
    assert fmt_t(cues[5][0]) in html


def test_code_lines_with_numbers(built, corpus_root):
    it = next(i for i in _items(built)["code"] if i["meta"]["lines"] > 30)
    lines = (corpus_root / it["path"]).read_text(encoding="utf-8", errors="replace").splitlines()
    ext = {"path": it["meta"]["upstream_path"], "line_start": 10, "line_end": 20}
    gold = [{"source_id": it["source_id"], "region": {"path": ext["path"], "line": 15}}]
    html = render_case_html(_case(it, ext, gold=gold), corpus_root)
    import html as h

    for n in range(10, 21):
        assert f'data-line="{n}">{n:>5}</span>' in html
        assert h.escape(lines[n - 1]) in html
    assert 'data-line="25"' not in html.split("gold 1")[0]  # the atom panel stops near 20
    assert '<span class="mb-hl"><span class="mb-ln" data-line="15">' in html


def test_conversation_turns_with_speakers(built, corpus_root):
    it = next(i for i in _items(built)["conversation"] if "date_time" in i["meta"])
    html = render_case_html(_case(it, {"turn_start": 1, "turn_end": 4}), corpus_root)
    import html as h

    for t in it["content"][:4]:
        assert f"<b>{h.escape(t['speaker'])}</b>" in html and h.escape(t["text"]) in html
    assert h.escape(it["meta"]["date_time"]) in html
    assert h.escape(it["content"][5]["text"]) not in html


def test_missing_file_is_shown_not_raised(built, tmp_path):
    it = _items(built)["pdf"][0]
    html = render_case_html(_case(it, {"page": 1}), tmp_path)  # an empty corpus root
    assert "cannot show" in html and "<img" not in html


# --------------------------------------------------------------------------- the widget


def test_browser_callbacks(leaky_run, corpus_root):
    b = Browser(leaky_run, corpus_root=corpus_root)
    n = len(cases(leaky_run))
    assert b.label.value.startswith(f"1 / {n} false recalls")
    first = b.html.value
    assert f'data-query-id="{cases(leaky_run)[0].query_id}"' in first
    assert b.prev_button.disabled and not b.next_button.disabled

    b.on_prev()  # bound at the start
    assert b.pos == 0 and b.html.value == first
    b.on_next()
    assert b.label.value.startswith(f"2 / {n}") and b.html.value != first
    b.next_button.click()  # the button drives the same method
    assert b.label.value.startswith(f"3 / {n}")
    b.on_prev()
    b.on_prev()
    assert b.html.value == first

    b.go(n - 1)
    last = b.html.value
    b.on_next()  # bound at the end
    assert b.pos == n - 1 and b.html.value == last and b.next_button.disabled

    b.on_modality_change({"new": "video"})
    vids = cases(leaky_run, modality="video")
    assert b.modality_dropdown.value == "video" and b.pos == 0
    assert b.label.value.startswith(f"1 / {len(vids)}") and "video" in b.label.value
    assert f'data-query-id="{vids[0].query_id}"' in b.html.value

    b.on_kind_change({"new": "miss"})
    assert b.kind_toggle.value == "miss"
    misses = cases(leaky_run, kind="miss", modality="video")
    if misses:
        assert f'data-query-id="{misses[0].query_id}"' in b.html.value
    else:
        assert b.label.value.startswith("0 / 0") and "no answerable misses" in b.html.value

    b.kind_toggle.value = "false_recall"  # through the widget's observer
    b.modality_dropdown.value = "all"
    assert b.kind == "false_recall" and b.modality == "all" and b.html.value == first
