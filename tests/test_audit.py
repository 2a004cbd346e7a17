"""The no-tells audit: features, classifiers (metadata-only, text, joint), named rules, the
audited population and the gates (membench.sets.audit)."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import numpy as np
import pytest

from membench.cli import main
from membench.contract.schema import AnnotationRecord, SourceItem
from membench.core.hashing import stable_hash
from membench.sets.audit import (
    AUC_GATE,
    audit_sets,
    balanced_accuracy,
    features,
    render_audit,
    roc_auc,
)
from membench.sets.select import presentation_order

T = datetime(2024, 1, 1, tzinfo=timezone.utc)
H = timedelta(hours=1)


def item(sid, holder, hours):
    return SourceItem(
        source_id=sid, modality="image", holder=holder, observed_at=T + hours * H, content="x"
    )


def record(qid, holder, as_of, unanswerable=False, question=None, split="dev", origin=None):
    return AnnotationRecord(
        query_id=qid,
        modality="image",
        question=question or f"question {qid}?",
        answer=None if unanswerable else "a",
        answer_format="none" if unanswerable else "str",
        gold=[] if unanswerable else [{"source_id": f"{holder}:0", "region": {}}],
        scope={"holder": holder, "scenario": "s"},
        as_of=as_of,
        unanswerable=unanswerable,
        split=split,
        origin={"dataset": "d", "revision": "r", "item": qid, "license": "L", **(origin or {})},
    )


def test_roc_auc_is_sklearns():
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(1)
    s = rng.integers(0, 5, 300).astype(float)  # many ties
    y = rng.random(300) < 0.3
    assert roc_auc(s, y) == pytest.approx(roc_auc_score(y, s), abs=1e-12)


def test_balanced_accuracy_takes_the_better_direction():
    y = np.array([True, True, False, False])
    assert balanced_accuracy(np.array([True, False, False, False]), y) == 0.75
    assert balanced_accuracy(np.array([False, True, True, True]), y) == 0.75
    assert balanced_accuracy(np.array([True, True, True, True]), y) == 0.5
    assert balanced_accuracy(np.array([True, False]), np.array([True, True])) is None


def test_features_of_hand_made_records():
    items = [item(f"h1:{i}", "h1", i) for i in range(4)] + [item("h2:0", "h2", 0)]
    recs = [
        record("q1", "h1", T + 1.25 * H),
        record("q2", "h1", T + 3.5 * H, question="same?"),
        record("q3", "h2", T + 2 * H, question="same?", unanswerable=True),
        record("q4", "h1", T + 3.75 * H, question="same?"),
    ]
    f = {r["query_id"]: r for r in features(recs, items)}
    q1 = f["q1"]
    assert (q1["visible"], q1["items"], q1["visible_share"]) == (2, 4, 0.5)
    assert q1["gap_prev_s"] == 900 and q1["gap_next_s"] == 2700
    assert q1["slot_fraction"] == 0.25 and (q1["hour"], q1["minute"], q1["second"]) == (1, 15, 0)
    assert q1["as_of_rank"] == 0 and q1["holder_queries"] == 3
    assert np.isnan(f["q2"]["gap_next_s"]) and f["q2"]["visible"] == 4
    assert (f["q2"]["same_holder"], f["q2"]["other_holder"]) == (1, 1)
    assert (f["q3"]["same_holder"], f["q3"]["other_holder"]) == (0, 2)
    # seen_before follows the presentation order: exactly the first "same?" has not been seen
    order = [q for q in presentation_order(["q1", "q2", "q3", "q4"]) if q != "q1"]
    assert [f[q]["seen_before"] for q in order] == [0, 1, 1]


def write_sets(tmp_path, tell: bool):
    """An image set of 40 holders x 10 items, 400 records, a quarter unanswerable. With
    ``tell`` the unanswerable ones are asked before the holder's last item and the answerable
    ones after it; without, every as_of is drawn the same way."""
    d = tmp_path / ("tell" if tell else "fair")
    d.mkdir()
    items = [item(f"h{h}:{i}", f"h{h}", i) for h in range(40) for i in range(10)]
    recs = []
    for k in range(400):
        h = k % 40
        un = stable_hash("u", str(k)) % 4 == 0
        slot = stable_hash("s", str(k)) % 10
        if tell:
            slot = 9 if not un else slot % 9
        as_of = T + slot * H + timedelta(seconds=stable_hash("o", str(k)) % 3600)
        r = record(f"src:{k}", f"h{h}", as_of, unanswerable=un)
        if not un:
            r = r.model_copy(
                update={"gold": [r.gold[0].model_copy(update={"source_id": f"h{h}:0"})]}
            )
        recs.append(r)
    (d / "items.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in items))
    (d / "image.jsonl").write_text(
        "".join(r.model_dump_json(exclude_none=True) + "\n" for r in recs)
    )
    for m in ("pdf", "ui_screenshot", "video", "code", "conversation"):
        (d / f"{m}.jsonl").write_text("")
    return d


def test_a_planted_tell_fails_the_gates_and_a_fair_set_passes(tmp_path, capsys):
    tell = audit_sets(write_sets(tmp_path, True))
    m = tell.modalities["image"]
    assert m.gated and m.n_unanswerable >= 20
    assert m.auc > 0.95 and m.rules["before_last_item"] == 1.0 and not tell.ok
    assert any("before the holder's last item" in x for x in tell.failures())
    fair = audit_sets(write_sets(tmp_path, False))
    f = fair.modalities["image"]
    assert f.auc <= AUC_GATE and f.auc_ci[0] < 0.5 < f.auc_ci[1] and fair.ok, render_audit(fair)
    assert "| image | " in render_audit(fair) and "pass" in render_audit(fair)
    # the command: exit 1 on a tell, 0 without; --json writes every figure
    assert main(["audit", str(tmp_path / "tell")]) == 1
    assert "TELL: image:" in capsys.readouterr().out
    assert main(["audit", str(tmp_path / "fair"), "--json", str(tmp_path / "a.json")]) == 0
    data = json.loads((tmp_path / "a.json").read_text())
    assert data["ok"] and data["modalities"]["image"]["n_unanswerable"] == f.n_unanswerable


def test_small_modalities_are_reported_not_gated(tmp_path):
    d = write_sets(tmp_path, True)
    lines = (d / "image.jsonl").read_text().splitlines()
    keep = [x for x in lines if '"unanswerable":true' in x][:5] + [
        x for x in lines if '"unanswerable":false' in x
    ][:50]
    (d / "image.jsonl").write_text("\n".join(keep) + "\n")
    a = audit_sets(d)
    assert not a.modalities["image"].gated and a.ok
    assert "not gated" in render_audit(a)


def test_text_features_read_questions_speakers_and_file_names():
    items = [
        SourceItem(
            source_id="src:alpha-report.pdf",
            modality="image",
            holder="h1",
            observed_at=T,
            content="x",
            meta={"speakers": ["Caroline"]},
        ),
        SourceItem(
            source_id="src:beta-notes.pdf",
            modality="image",
            holder="h2",
            observed_at=T,
            content="x",
            meta={"speakers": ["Jon"]},
        ),
    ]
    recs = [
        record("q1", "h1", T + H, question="What did Jon say about the beta budget?"),
        record("q2", "h2", T + H, question="What did Jon say about the beta plan?"),
        record("q3", "h1", T + H, question="Where did Caroline go in 2031?"),
        record("q4", "h1", T + H, question="Where did Caroline go in 2020? "),
    ]
    f = {r["query_id"]: r for r in features(recs, items)}
    q1 = f["q1"]
    assert (q1["speaker_own"], q1["speaker_other"]) == (0, 1)
    assert (q1["file_own"], q1["file_other"]) == (0, 1)  # "beta" is h2's file name
    assert q1["nn_other"] == 1 and q1["sim_other"] > q1["sim_own"]
    assert q1["names_own_qs"] == 0 and q1["names_other_qs"] == 1  # "jon": only h2 asks it
    assert f["q3"]["speaker_own"] == 1 and f["q3"]["speaker_other"] == 0
    assert f["q3"]["nn_other"] == 0 and f["q3"]["sim_own"] > 0.5
    assert (f["q3"]["year_after_as_of"], f["q4"]["year_after_as_of"]) == (1, 0)
    assert (f["q3"]["q_space"], f["q4"]["q_space"]) == (0, 1)


def test_a_planted_text_tell_fails_the_text_gate(tmp_path):
    """Unanswerable questions that name another holder's speaker: the timeline gate holds,
    the text gate and the rule 'other_speaker' catch it."""
    d = write_sets(tmp_path, False)
    lines = (d / "items.jsonl").read_text().splitlines()
    items = []
    for x in lines:
        it = json.loads(x)
        it["meta"] = {"speakers": [f"Speaker{it['holder'][1:]}x"]}
        items.append(json.dumps(it))
    (d / "items.jsonl").write_text("\n".join(items) + "\n")
    recs = []
    for x in (d / "image.jsonl").read_text().splitlines():
        r = json.loads(x)
        h = int(r["scope"]["holder"][1:])
        who = (h + 1) % 40 if r["unanswerable"] else h
        r["question"] = f"What did Speaker{who}x say about item {r['query_id']}?"
        recs.append(json.dumps(r))
    (d / "image.jsonl").write_text("\n".join(recs) + "\n")
    a = audit_sets(d)
    m = a.modalities["image"]
    assert m.auc_pass and m.gated and m.auc_text > 0.9 and not a.ok
    assert m.rules["other_speaker"] == 1.0
    assert any("text-and-metadata classifier" in x for x in a.failures())
    assert any("names a speaker of another holder" in x for x in a.failures())


def test_the_sister_and_date_features_of_hand_made_records():
    from membench.sets.audit import date_after, named_dates

    items = [item("h1:0", "h1", 0), item("h2:0", "h2", 0)]
    recs = [
        record("q1", "h1", T + 2 * H, question="What colour is the red kite in the park?"),
        record("q2", "h1", T + 5 * H, question="What colour is the red kite?"),
        record("q3", "h1", T + 9 * H, question="Who sold the old boat?"),
        record("q4", "h2", T + 1 * H, question="Who sold the old boat to Ann?"),
        record("q5", "h1", T + 3 * H, question="What did Ann do on 2 January 2024?"),
    ]
    f = {r["query_id"]: r for r in features(recs, items)}
    # the sister is the nearest question of the same holder, wherever the other holders' are
    assert (f["q1"]["nn_own_later"], f["q2"]["nn_own_later"]) == (1, 0)
    assert f["q3"]["nn_own_later"] == 0  # its nearest (q4) is another holder's
    assert f["q4"]["nn_own_later"] == 0  # h2 has no other question
    # q5 names 2 January 2024, after its as_of (1 January 2024, 03:00)
    assert (f["q5"]["date_after_as_of"], f["q1"]["date_after_as_of"]) == (1, 0)
    assert named_dates("On May 8, 2023, in June 2022 and in 2031?") == [
        (2023, 5, 8),
        (2022, 6, 0),
        (2031, 0, 0),
    ]
    assert named_dates("the 3rd of July, 2023") == [(2023, 7, 3)]
    assert named_dates("Who may 2 people ask?") == []
    t = datetime(2023, 5, 7, 12, tzinfo=timezone.utc)
    assert [
        date_after(q, t)
        for q in (
            "on 8 May 2023",
            "on 7 May 2023",
            "in May 2023",
            "in June 2023",
            "in 2023",
            "in 2024",
        )
    ] == [True, False, False, True, False, True]


def test_the_sister_and_date_rules_are_gated(tmp_path, monkeypatch):
    import membench.sets.audit as audit

    a = audit_sets(write_sets(tmp_path, tell=False))
    x = a.modalities["image"]
    assert set(x.adversary) == set(audit.ADVERSARY_RULES) and a.ok
    assert not set(x.adversary) & set(x.rules)
    assert "sister and date rules" in render_audit(a)
    x.adversary["sister_later"] = 0.99  # over the rule gate: a failure, a TELL finding
    assert not a.ok
    assert a.failures() == [
        "image: rule 'its most similar question of the same holder is "
        "asked at a later as_of (the sister rule)' balanced accuracy 0.990 "
        "> 0.6"
    ]
    assert "sister later 0.99 (over 0.6)" in render_audit(a)
    from membench.sets.validate import audit_findings

    assert [f.rule for f in audit_findings(tmp_path, a)] == ["TELL"]
    monkeypatch.setattr(audit, "ADVERSARY_RULES_GATED", False)  # the flag: reported only
    assert a.ok and not a.failures() and "not gated" in render_audit(a)


def write_sister_sets(tmp_path, tell: bool):
    """40 holders x 10 items, 10 questions each: five topics asked twice (a red and a blue
    one: near-copies, each the other's sister). In half the pairs one question, of either
    colour, is unanswerable. With ``tell`` it is asked early in the timeline and its sister
    late; without, every as_of is drawn alike."""
    d = tmp_path / ("sister" if tell else "nosister")
    d.mkdir()
    items = [item(f"h{h}:{i}", f"h{h}", i) for h in range(40) for i in range(10)]
    recs = []
    for h in range(40):
        for k in range(5):
            topic = ("lamp", "boat", "kite", "drum", "vase")[k]
            un_pair = stable_hash("p", str(h), str(k)) % 2 == 0
            which = stable_hash("w", str(h), str(k)) % 2
            for c, colour in enumerate(("red", "blue")):
                un = un_pair and c == which
                if tell and un_pair:
                    slot = 1 if un else 8
                else:
                    slot = 1 + stable_hash("s", str(h), str(k), colour) % 8
                as_of = (
                    T + slot * H + timedelta(minutes=stable_hash("m", str(h), str(k), colour) % 60)
                )
                q = f"Which shelf holds the {colour} {topic} of room {h}?"
                recs.append(record(f"src:{h}-{k}-{c}", f"h{h}", as_of, unanswerable=un, question=q))
    (d / "items.jsonl").write_text("".join(i.model_dump_json() + "\n" for i in items))
    (d / "image.jsonl").write_text(
        "".join(r.model_dump_json(exclude_none=True) + "\n" for r in recs)
    )
    for m in ("pdf", "ui_screenshot", "video", "code", "conversation"):
        (d / f"{m}.jsonl").write_text("")
    return d


def test_the_joint_classifier_and_the_sister_rule_catch_a_sister_tell(tmp_path):
    from membench.sets.audit import JOINT_EXTRA, features

    a = audit_sets(write_sister_sets(tmp_path, tell=True))
    m = a.modalities["image"]
    assert m.gated and m.ci_unit == "holder" and m.n_holders == 40
    assert m.auc_joint > 0.8 and m.auc_joint_ci[1] >= m.auc_joint >= m.auc_joint_ci[0]
    assert m.adversary["sister_later"] > 0.6 and not a.ok
    assert any("joint classifier" in x for x in a.failures())
    assert any("the sister rule" in x for x in a.failures())
    fair = audit_sets(write_sister_sets(tmp_path, tell=False))
    f = fair.modalities["image"]
    assert f.auc_joint < 0.65 and f.adversary["sister_later"] < 0.6, render_audit(fair)
    rows = features(*_read(tmp_path / "sister"))
    assert all(set(JOINT_EXTRA) <= set(r) for r in rows)


def _read(d):
    from membench.core.jsonl import read_models

    return (
        read_models(d / "image.jsonl", AnnotationRecord),
        read_models(d / "items.jsonl", SourceItem),
    )


def test_the_date_features_of_the_joint_classifier():
    items = [
        item("h1:0", "h1", 0),
        item("h1:1", "h1", 20),
        item("h1:2", "h1", 48),
        item("h2:0", "h2", 0),
    ]
    recs = [
        record("q1", "h1", T + 12 * H, question="What did Ann buy on 3 January 2024?"),
        record("q2", "h1", T + 12 * H, question="What did Ann buy in 2023 and 2024?"),
        record("q3", "h1", T + 30 * H, question="What did Ann buy in 2023?"),
        record("q4", "h2", T + 30 * H, question="Who came?"),
    ]
    f = {r["query_id"]: r for r in features(recs, items)}
    assert f["q1"]["n_dates"] == 1 and f["q1"]["date_lead_days"] == pytest.approx(1.5)
    assert f["q1"]["date_after_as_of"] == 1
    assert f["q2"]["n_dates"] == 2 and f["q2"]["date_lead_days"] == pytest.approx(-0.5)
    assert np.isnan(f["q4"]["date_lead_days"]) and f["q4"]["n_dates"] == 0
    # q1's sister is q2 (the same as_of); q3's is q2 too: earlier, one slot before
    assert f["q1"]["sister_dir"] == 0 and f["q1"]["sister_slot_gap"] == 0
    assert f["q3"]["sister_dir"] == -1 and f["q3"]["sister_slot_gap"] == -1
    assert f["q3"]["sister_gap_s"] == pytest.approx(-np.log1p(18 * 3600))
    assert f["q2"]["near3_later"] == pytest.approx(0.5)  # q1 (same as_of) and q3 (later)
    assert (f["q4"]["sister_dir"], f["q4"]["near3_later"]) == (0, 0)


def test_the_gates_read_the_audited_population_only(tmp_path):
    """Natives of a source with an upstream tell (origin.audited false) that carry a planted
    timeline tell: no gated classifier or rule sees them."""
    d = write_sets(tmp_path, False)
    lines = (d / "image.jsonl").read_text().splitlines()
    extra = []
    for k in range(120):
        h = k % 40
        r = record(
            f"locomo:n{k}", f"h{h}", T + 0.5 * H, unanswerable=True, question=f"question n{k}?"
        )
        assert r.origin.audited is False
        extra.append(r.model_dump_json(exclude_none=True))
    (d / "image.jsonl").write_text("\n".join(lines + extra) + "\n")
    a = audit_sets(d)
    m = a.modalities["image"]
    assert m.n_unanswerable == m.n_audited_unanswerable + 120
    assert m.auc <= AUC_GATE and m.auc_joint <= AUC_GATE and a.ok, render_audit(a)
    assert m.rules["first_item_only"] < 0.6
    assert m.by_kind["native"]["n"] == m.n_unanswerable  # every native, reported beside


def test_intervals_resample_holders_where_there_are_enough(tmp_path):
    from membench.sets.audit import MIN_HOLDERS_CI, auc_with_ci, resampling_unit

    assert resampling_unit(np.array([f"h{i}" for i in range(MIN_HOLDERS_CI)])) == "holder"
    assert resampling_unit(np.array([f"h{i % 3}" for i in range(90)])) == "record"
    assert resampling_unit(None) == "record"
    rng = np.random.default_rng(3)
    # 12 holders whose records share one score and one label: holder resampling sees 12
    # draws, record resampling 600, so the holder interval is much wider
    g = np.repeat(np.arange(12), 50).astype(str)
    y = np.repeat(np.arange(12) % 2 == 0, 50)
    s = np.repeat(rng.random(12), 50)
    auc, (lo_h, hi_h) = auc_with_ci(s, y, "t", g)
    _, (lo_r, hi_r) = auc_with_ci(s, y, "t")
    assert hi_h - lo_h > 2 * (hi_r - lo_r) and lo_h <= auc <= hi_h
    # a modality with fewer holders says so in the table
    d = write_sets(tmp_path, False)
    recs = [json.loads(x) for x in (d / "image.jsonl").read_text().splitlines()]
    for r in recs:
        r["scope"]["holder"] = f"h{int(r['scope']['holder'][1:]) % 5}"
    (d / "image.jsonl").write_text("".join(json.dumps(r) + "\n" for r in recs))
    a = audit_sets(d)
    assert a.modalities["image"].ci_unit == "record"
    assert "of the records in image (5 holders)" in render_audit(a)


def test_the_cache_gives_back_every_figure(tmp_path, monkeypatch):
    import membench.sets.audit as audit

    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    d = write_sets(tmp_path, False)
    first = audit.audit_sets_cached(d)
    assert list((tmp_path / "cache" / "audit").glob("*.audit.json"))

    def recomputed(*_):
        raise AssertionError("the cache was not read")

    monkeypatch.setattr(audit, "audit_sets", recomputed)
    again = audit.audit_sets_cached(d)
    assert json.dumps(again.as_dict(), sort_keys=True) == json.dumps(
        json.loads(json.dumps(first.as_dict())), sort_keys=True
    )
    m = again.modalities["image"]
    assert (
        m.auc_joint is not None
        and m.ci_unit == "holder"
        and set(m.adversary) == {"sister_later", "date_after"}
    )
