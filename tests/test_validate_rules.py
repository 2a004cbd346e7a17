"""One test per validator rule: seed the violation into a valid mini set, assert it is caught
with the rule's name, the right file and line; and the clean set passes."""

from __future__ import annotations

import minisets as ms
import pytest

from membench.cli import main
from membench.core.jsonl import sha256_file
from membench.sets.validate import validate_sets


def run(paths, lock=True, corpus=None):
    return validate_sets(
        paths["sets"], paths["manifest"], lock=paths["lock"] if lock else None, corpus=corpus
    )


def mutate(tmp_path, fn, relock=True):
    """Write the mini sets, then apply ``fn(sets: dict)`` before writing (and re-locking)."""
    sets = {**{f"{m}.jsonl": ms.records(m) for m in ms.REGIONS}, "items.jsonl": ms.items()}
    fn(sets)
    return ms.write(tmp_path / "sets", sets)


def _judge(sets, i, gold, m="conversation", name="session"):
    """Give record ``i`` of ``m`` a judgment set ``name`` holding ``gold``."""
    sets[f"{m}.jsonl"][i]["judgments"] = {name: [gold]}


def rules(findings, level="error"):
    return {(f.rule, f.file.rsplit("/", 1)[-1], f.line) for f in findings if f.level == level}


def test_clean_set_passes(tmp_path):
    assert run(ms.write(tmp_path / "sets")) == []


def test_cli_exit_codes(tmp_path, capsys):
    p = ms.write(tmp_path / "sets")
    args = [
        "validate",
        "--sets",
        str(p["sets"]),
        "--manifest",
        str(p["manifest"]),
        "--lock",
        str(p["lock"]),
        "--no-corpus",
    ]
    assert main(args) == 0
    with open(p["sets"] / "pdf.jsonl", "a") as f:
        f.write("{not json\n")
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "pdf.jsonl:6: JSON: not valid JSON" in out


@pytest.mark.parametrize(
    "rule,file,line,fn",
    [
        ("SCHEMA", "pdf.jsonl", 1, lambda s: s["pdf.jsonl"][0].pop("question")),
        (
            "SCHEMA",
            "video.jsonl",
            2,
            lambda s: s["video.jsonl"][1].update(as_of="2024-01-03T00:00:00"),
        ),
        ("SCHEMA", "code.jsonl", 1, lambda s: s["code.jsonl"][0].update(bogus=1)),
        ("SCHEMA", "image.jsonl", 3, lambda s: s["image.jsonl"][2].update(split="train")),
        (
            "MODALITY_MISMATCH",
            "image.jsonl",
            1,
            lambda s: s["image.jsonl"][0].update(modality="pdf"),
        ),
        (
            "MODALITY_MISMATCH",
            "image.jsonl",
            2,
            lambda s: s["image.jsonl"][1].update(modality="audio"),
        ),
        (
            "REGION_SHAPE",
            "pdf.jsonl",
            1,
            lambda s: s["pdf.jsonl"][0]["gold"][0].update(region={"turn": 1}),
        ),
        (
            "REGION_SHAPE",
            "pdf.jsonl",
            2,
            lambda s: s["pdf.jsonl"][1]["gold"][0].update(region={"page": 0}),
        ),
        (
            "REGION_SHAPE",
            "ui_screenshot.jsonl",
            1,
            lambda s: s["ui_screenshot.jsonl"][0]["gold"][0].update(region={"bbox": [5, 5, 1, 1]}),
        ),
        (
            "REGION_SHAPE",
            "video.jsonl",
            1,
            lambda s: s["video.jsonl"][0]["gold"][0].update(region={"t_start": 5.0, "t_end": 1.0}),
        ),
        (
            "REGION_SHAPE",
            "video.jsonl",
            1,  # a span of no length can never be hit
            lambda s: s["video.jsonl"][0]["gold"][0].update(region={"t_start": 2.0, "t_end": 2.0}),
        ),
        (
            "REGION_SHAPE",
            "code.jsonl",
            1,
            lambda s: s["code.jsonl"][0]["gold"][0].update(
                region={"path": "a", "line": 1, "symbol": "f"}
            ),
        ),
        (
            "GOLD_MISSING",
            "conversation.jsonl",
            1,
            lambda s: s["conversation.jsonl"][0].update(gold=[]),
        ),
        (
            "GOLD_ON_UNANSWERABLE",
            "pdf.jsonl",
            4,
            lambda s: s["pdf.jsonl"][3].update(
                gold=[{"source_id": "pdfsrc:a1", "region": {"page": 1}}]
            ),
        ),
        (
            "GOLD_UNKNOWN_ITEM",
            "video.jsonl",
            1,
            lambda s: s["video.jsonl"][0]["gold"][0].update(source_id="videosrc:nope"),
        ),
        (
            "GOLD_MODALITY",
            "image.jsonl",
            1,
            lambda s: s["image.jsonl"][0]["gold"][0].update(source_id="videosrc:a1"),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "pdf.jsonl",
            1,
            lambda s: s["pdf.jsonl"][0]["gold"][0].update(region={"page": 4}),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "ui_screenshot.jsonl",
            1,
            lambda s: s["ui_screenshot.jsonl"][0]["gold"][0].update(region={"bbox": [1, 1, 11, 5]}),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "video.jsonl",
            1,
            lambda s: s["video.jsonl"][0]["gold"][0].update(region={"t_start": 1.0, "t_end": 10.5}),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "code.jsonl",
            1,
            lambda s: s["code.jsonl"][0]["gold"][0].update(region={"path": "src/a.py", "line": 21}),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "conversation.jsonl",
            1,
            lambda s: s["conversation.jsonl"][0]["gold"][0].update(region={"turn": 6}),
        ),
        (
            "HOLDER_MISMATCH",
            "pdf.jsonl",
            1,
            lambda s: s["pdf.jsonl"][0]["gold"][0].update(source_id="pdfsrc:b1"),
        ),
        (
            "HOLDER_UNKNOWN",
            "pdf.jsonl",
            4,
            lambda s: s["pdf.jsonl"][3]["scope"].update(holder="pdf/zz"),
        ),
        ("GOLD_AFTER_AS_OF", "image.jsonl", 1, lambda s: s["image.jsonl"][0].update(as_of=ms.T0)),
        (
            "REVISION_UNKNOWN",
            "code.jsonl",
            2,
            lambda s: s["code.jsonl"][1]["origin"].update(revision="b" * 40),
        ),
        (
            "REVISION_UNKNOWN",
            "code.jsonl",
            3,
            lambda s: s["code.jsonl"][2].update(query_id="othersrc:q2"),
        ),
        (
            "DUPLICATE_QUERY_ID",
            "pdf.jsonl",
            2,
            lambda s: s["pdf.jsonl"][1].update(query_id="pdfsrc:q0"),
        ),
        (
            "DUPLICATE_SOURCE_ID",
            "items.jsonl",
            2,
            lambda s: s["items.jsonl"].insert(1, dict(s["items.jsonl"][0])),
        ),
        (
            "DERIVED_TWIN",
            "pdf.jsonl",
            4,
            lambda s: s["pdf.jsonl"][3]["origin"].update(
                derived_from="pdfsrc:q0", derivation="temporal"
            ),
        ),
        (
            "CONFLICTING_QUERY",
            "pdf.jsonl",
            1,
            lambda s: s["pdf.jsonl"][3].update(question=s["pdf.jsonl"][0]["question"]),
        ),
        ("SPLIT_LEAK", "video.jsonl", 1, lambda s: s["video.jsonl"][1].update(split="test")),
        # judgment sets: the same region, item, holder and as_of rules as gold
        (
            "REGION_SHAPE",
            "conversation.jsonl",
            1,
            lambda s: _judge(
                s,
                0,
                {"source_id": "conversationsrc:a1", "region": {"turn_start": 3, "turn_end": 2}},
            ),
        ),
        (
            "REGION_SHAPE",
            "code.jsonl",
            2,
            lambda s: _judge(s, 1, {"source_id": "codesrc:a1", "region": {"line": 3}}, m="code"),
        ),
        (
            "SCHEMA",
            "code.jsonl",
            1,
            lambda s: _judge(
                s,
                0,
                {"source_id": "codesrc:a1", "region": {"path": "src/a.py", "line": 3}, "grade": -1},
                m="code",
            ),
        ),
        (
            "GOLD_OUT_OF_BOUNDS",
            "conversation.jsonl",
            2,
            lambda s: _judge(
                s,
                1,
                {"source_id": "conversationsrc:a1", "region": {"turn_start": 1, "turn_end": 6}},
            ),
        ),
        (
            "GOLD_UNKNOWN_ITEM",
            "conversation.jsonl",
            1,
            lambda s: _judge(s, 0, {"source_id": "conversationsrc:nope", "region": {"turn": 1}}),
        ),
        (
            "GOLD_MODALITY",
            "conversation.jsonl",
            1,
            lambda s: _judge(s, 0, {"source_id": "pdfsrc:a1", "region": {"turn": 1}}),
        ),
        (
            "HOLDER_MISMATCH",
            "conversation.jsonl",
            1,
            lambda s: _judge(s, 0, {"source_id": "conversationsrc:b1", "region": {"turn": 1}}),
        ),
        (
            "GOLD_AFTER_AS_OF",
            "conversation.jsonl",
            1,
            lambda s: (
                s["items.jsonl"].append(
                    {
                        **s["items.jsonl"][-2],
                        "source_id": "conversationsrc:a2",
                        "observed_at": "2024-01-04T00:00:00+00:00",
                    }
                ),
                _judge(s, 0, {"source_id": "conversationsrc:a2", "region": {"turn": 1}}),
            ),
        ),
        (
            "JUDGMENT_ON_UNANSWERABLE",
            "conversation.jsonl",
            4,
            lambda s: _judge(s, 3, {"source_id": "conversationsrc:a1", "region": {"turn": 1}}),
        ),
        (
            "JUDGMENT_NAME",
            "conversation.jsonl",
            1,
            lambda s: _judge(
                s, 0, {"source_id": "conversationsrc:a1", "region": {"turn": 1}}, name="gold"
            ),
        ),
        # the same region twice in one list: it would count twice in every recall's denominator
        (
            "DUPLICATE_GOLD",
            "pdf.jsonl",
            2,
            lambda s: s["pdf.jsonl"][1]["gold"].append(dict(s["pdf.jsonl"][1]["gold"][0])),
        ),
        (
            "DUPLICATE_GOLD",
            "code.jsonl",
            1,
            lambda s: s["code.jsonl"][0]["gold"].append(
                {**s["code.jsonl"][0]["gold"][0], "grade": 2}
            ),
        ),
        (
            "DUPLICATE_GOLD",
            "conversation.jsonl",
            1,
            lambda s: s["conversation.jsonl"][0].update(
                judgments={
                    "session": [
                        {"source_id": "conversationsrc:a1", "region": {"turn": 1}},
                        {"source_id": "conversationsrc:a1", "region": {"turn": 1}},
                    ]
                }
            ),
        ),
        (
            "JUDGMENT_NAME",
            "conversation.jsonl",
            2,
            lambda s: _judge(
                s, 1, {"source_id": "conversationsrc:a1", "region": {"turn": 1}}, name="turn/level"
            ),
        ),
    ],
)
def test_rule_is_caught(tmp_path, rule, file, line, fn):
    found = rules(run(mutate(tmp_path, fn)))
    assert (rule, file, line) in found, found
    assert all(r[0] == rule for r in found), f"only {rule} expected, got {found}"


def test_json_error_keeps_going(tmp_path):
    p = ms.write(tmp_path / "sets")
    path = p["sets"] / "code.jsonl"
    lines = path.read_text().splitlines()
    lines[1] = lines[1][:-5]
    lines.append(lines[0])  # and a duplicate later in the file: still found
    path.write_text("\n".join(lines) + "\n")
    found = rules(run(p, lock=False))
    assert ("JSON", "code.jsonl", 2) in found
    assert ("DUPLICATE_QUERY_ID", "code.jsonl", 6) in found


def test_unanswerable_share_is_a_warning(tmp_path):
    def fn(s):
        s["pdf.jsonl"] = [ms.record("pdf", i) for i in range(7)] + [
            ms.record("pdf", 9, unanswerable=True)
        ]  # 1/8 = 12.5%

    f = run(mutate(tmp_path, fn))
    assert [x.rule for x in f] == ["UNANSWERABLE_SHARE"]
    assert f[0].level == "warning"
    assert "12.5%" in f[0].message


def test_digest_drift_against_lock(tmp_path):
    p = ms.write(tmp_path / "sets")
    path = p["sets"] / "image.jsonl"
    before = sha256_file(path)
    rows = path.read_text().splitlines()
    path.write_text("\n".join(reversed(rows)) + "\n")  # same records, other bytes
    assert sha256_file(path) != before
    found = rules(run(p))
    assert found == {("DIGEST_DRIFT", "image.jsonl", None)}


def test_missing_set_file(tmp_path):
    p = ms.write(tmp_path / "sets")
    (p["sets"] / "video.jsonl").unlink()
    assert ("MISSING_FILE", "video.jsonl", None) in rules(run(p, lock=False))


def test_item_path_and_corpus_drift(tmp_path):
    corpus = tmp_path / "corpus"
    (corpus / "example").mkdir(parents=True)
    for m in ms.REGIONS:  # 1 byte each, but not the manifest's digest
        (corpus / "example" / f"{m}.json").write_text("x")

    def fn(s):
        s["items.jsonl"][0] = {**s["items.jsonl"][0], "content": None, "path": "example/none.pdf"}

    found = rules(run(mutate(tmp_path, fn), corpus=corpus))
    assert ("ITEM_PATH_MISSING", "items.jsonl", 1) in found
    assert ("DIGEST_DRIFT", "manifest.jsonl", 1) in found


def test_indistinguishable_queries_are_a_warning(tmp_path):
    f = run(mutate(tmp_path, lambda s: s["code.jsonl"][1].update(question="question 0?")))
    assert [(x.rule, x.level, x.line) for x in f] == [("AMBIGUOUS_QUERY", "warning", 1)]
    assert "codesrc:q0 and codesrc:q1" in f[0].message


def test_a_metadata_tell_is_an_error(tmp_path):
    """60 pdf records of one holder: the unanswerable ones asked before its only item, the
    answerable ones after it. The audit's rules see it at once."""

    def fn(s):
        un = [ms.record("pdf", i, unanswerable=True, as_of=ms.T0) for i in range(30)]
        s["pdf.jsonl"] = [ms.record("pdf", 100 + i) for i in range(30)] + un

    f = run(mutate(tmp_path, fn))
    tells = [x for x in f if x.rule == "TELL"]
    assert tells and {x.file.rsplit("/", 1)[-1] for x in tells} == {"pdf.jsonl"}
    assert any("before the holder's last item" in x.message for x in tells)
    assert all(x.level == "error" for x in tells)
    p = mutate(tmp_path / "again", fn)
    assert [
        x
        for x in validate_sets(p["sets"], p["manifest"], lock=p["lock"], audit=False)
        if x.rule == "TELL"
    ] == []


def test_valid_judgment_sets_pass(tmp_path):
    """A session-level turn range and an empty set on an unanswerable record are clean."""

    def fn(s):
        _judge(
            s, 0, {"source_id": "conversationsrc:a1", "region": {"turn_start": 1, "turn_end": 5}}
        )
        s["conversation.jsonl"][3]["judgments"] = {"session": []}
        _judge(
            s,
            0,
            {"source_id": "codesrc:a1", "region": {"path": "src/a.py", "line": 3}, "grade": 1},
            m="code",
            name="graded",
        )

    assert run(mutate(tmp_path, fn)) == []


def test_every_rule_the_validator_emits_is_listed():
    import inspect
    import re

    import membench.sets.corpus as c
    import membench.sets.validate as v

    emitted = set(re.findall(r'"([A-Z][A-Z_]+)"', inspect.getsource(v))) & {
        w for w in re.findall(r"[A-Z][A-Z_]{3,}", inspect.getsource(v))
    }
    emitted -= {"MIN_UNANSWERABLE_SHARE", "RULES"}
    emitted |= set(re.findall(r'"([A-Z][A-Z_]{3,})"', inspect.getsource(c.check_corpus)))
    import membench.core.jsonl as j  # the line reader's rules reach the validator too

    emitted |= set(re.findall(r'rule="([A-Z][A-Z_]{3,})"', inspect.getsource(j)))
    emitted |= {"PATH_OUTSIDE_CORPUS"}  # core.paths.confine
    assert emitted <= set(v.RULES), emitted - set(v.RULES)
    assert len(v.RULES) == 34
