"""metrics_for_run_dir on a run directory in the runner's format, and every input error it
must name with file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from membench.core.errors import InputError
from membench.core.jsonl import dumps
from membench.core.paths import corpus_root as _corpus_root
from membench.metrics import compute_metrics, metrics_for_run_dir
from membench.metrics.answer_layer import ContentTexts

FIX = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    """These tests read stderr's one error line: no progress lines beside it."""
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def run_dir(tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(FIX, d)
    return d


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines()]


def _write(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(dumps(r) + "\n" for r in rows))


def test_writes_metrics_json(run_dir):
    result = metrics_for_run_dir(run_dir)
    on_disk = json.loads((run_dir / "metrics.json").read_text())
    assert on_disk == result
    assert result["pdf"]["recall@10"]["value"] == 0.6
    assert result["pdf"]["recall@10"]["denominator"] == 5  # the test-split record is out
    assert result["all"]["temporal_correctness"]["denominator"] == 10
    recs = [
        r
        for f in ("pdf", "conversation")
        for r in _lines(run_dir / "sets" / f"{f}.jsonl")
        if r["split"] == "dev"
    ]
    direct = compute_metrics(
        recs,
        _lines(run_dir / "sets" / "items.jsonl"),
        [{k: v for k, v in a.items() if k != "text"} for a in _lines(run_dir / "atoms.jsonl")],
        _lines(run_dir / "run.jsonl"),
        content=ContentTexts.open(run_dir / "sets", _corpus_root()),
    )
    assert result.pop("submission") == {
        "valid": True,
        "reasons": [],
        "sees_gold": False,
        "partial": False,
        "answered": 10,
        "asked": 10,
        "system": "hand",
        "label": "hand",
    }
    assert direct == result


def test_sets_dir_argument_and_absolute_meta(run_dir, tmp_path):
    sets = tmp_path / "elsewhere"
    shutil.move(run_dir / "sets", sets)
    with pytest.raises(InputError, match="sets folder not found"):
        metrics_for_run_dir(run_dir)
    assert metrics_for_run_dir(run_dir, sets)["pdf"]["recall@10"]["value"] == 0.6
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["sets_dir"] = str(sets)
    (run_dir / "meta.json").write_text(json.dumps(meta))
    assert metrics_for_run_dir(run_dir, write=False)["pdf"]["recall@10"]["value"] == 0.6


def _expect(run_dir, file: str, line: int | None, rule: str, text: str = ""):
    with pytest.raises(InputError) as e:
        metrics_for_run_dir(run_dir, write=False)
    err = e.value
    assert Path(err.file).name == file and err.line == line and err.rule == rule, str(err)
    assert text in str(err)
    assert not (run_dir / "metrics.json").exists()


def _edit(path: Path, line: int, **change) -> None:
    rows = _lines(path)
    rows[line - 1].update(change)
    _write(path, rows)


def test_atom_holder_disagreeing_with_item(run_dir):
    _edit(run_dir / "atoms.jsonl", 3, holder="pdfh/bob")
    _expect(run_dir, "atoms.jsonl", 3, "ATOM_HOLDER", "belongs to 'pdfh/alice'")


def test_atom_observed_at_disagreeing_with_item(run_dir):
    _edit(run_dir / "atoms.jsonl", 2, observed_at="2024-01-01T00:00:01+00:00")
    _expect(run_dir, "atoms.jsonl", 2, "ATOM_OBSERVED_AT")


def test_atom_observed_at_same_instant_other_offset_is_fine(run_dir):
    _edit(run_dir / "atoms.jsonl", 2, observed_at="2024-01-01T02:00:00+02:00")
    assert metrics_for_run_dir(run_dir)["pdf"]["recall@10"]["value"] == 0.6


@pytest.mark.parametrize(
    "change,rule",
    [
        ({"source_id": "pdfh:nope"}, "ATOM_SOURCE"),
        ({"modality": "image", "extent": {}}, "ATOM_SOURCE"),
        ({"extent": {"page": 0}}, "ATOM_EXTENT"),
        ({"extent": {"page": 1, "block": 1, "x": 2}}, "ATOM_EXTENT"),
        ({"observed_at": "2024-01-01T00:00:00"}, "ATOM_SCHEMA"),  # no timezone
        ({"color": "red"}, "ATOM_SCHEMA"),
        ({"atom_id": "p1"}, "DUPLICATE_ATOM"),
        ({"text": 7}, "ATOM_SCHEMA"),
        ({"text": None}, "ATOM_SCHEMA"),
        ({"text": ["a"]}, "ATOM_SCHEMA"),
    ],
)
def test_bad_atoms(run_dir, change, rule):
    _edit(run_dir / "atoms.jsonl", 4, **change)
    _expect(run_dir, "atoms.jsonl", 4, rule)


def test_an_atom_text_that_is_not_a_string_is_refused_at_the_command_line(run_dir, capsys):
    _edit(run_dir / "atoms.jsonl", 4, text=12)
    code, err = _cli(["metrics", str(run_dir)], capsys)
    assert code == 2 and len(err.splitlines()) == 1
    assert "atoms.jsonl:4: ATOM_SCHEMA: field text: must be a string" in err, err
    assert not (run_dir / "metrics.json").exists()


@pytest.mark.parametrize(
    "change,rule,text",
    [
        ({"hits": [["nope", 1.0]]}, "RUN_ATOM", "'nope'"),
        ({"cartridge": ["nope"]}, "RUN_ATOM", "'nope'"),
        ({"query_id": "pdfh:zzz"}, "RUN_QUERY", "not an annotated item"),
        ({"query_id": "pdfh:t1"}, "RUN_QUERY", ""),  # a test-split query
        ({"query_id": "pdfh:q1"}, "DUPLICATE_QUERY_ID", "first at line 1"),
        ({"hits": [[f"x{i % 12 + 1}", 1.0] for i in range(1001)]}, "RUN_DEPTH", "1001"),
        ({"hits": [["x1", float("nan")]]}, "JSON", "NaN is not a JSON number"),  # not JSON at all
        ({"hits": [["x1", True]]}, "RUN_SCHEMA", ""),
        ({"hits": [["x1"]]}, "RUN_SCHEMA", ""),
        ({"latency_ms": -1}, "RUN_SCHEMA", ""),
        ({"extra": 1}, "RUN_SCHEMA", "unknown"),
    ],
)
def test_bad_run_lines(run_dir, change, rule, text):
    _edit(run_dir / "run.jsonl", 2, **change)
    _expect(run_dir, "run.jsonl", 2, rule, text)


def test_gold_pointing_at_missing_item(run_dir):
    rows = _lines(run_dir / "sets" / "pdf.jsonl")
    rows[2]["gold"][0]["source_id"] = "pdfh:gone"
    _write(run_dir / "sets" / "pdf.jsonl", rows)
    _expect(run_dir, "pdf.jsonl", 3, "GOLD_SOURCE", "pdfh:gone")


def test_meta_query_count_must_match_the_selection(run_dir):
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["queries"] = 11
    (run_dir / "meta.json").write_text(json.dumps(meta))
    _expect(run_dir, "meta.json", None, "RUN_META", "sets changed")


def test_limited_run_selects_like_the_runner(run_dir):
    from membench.core.hashing import stable_hash

    meta = json.loads((run_dir / "meta.json").read_text())
    meta.update(limit=2, modalities=["pdf"], queries=2)
    (run_dir / "meta.json").write_text(json.dumps(meta))
    pdf = [r["query_id"] for r in _lines(run_dir / "sets" / "pdf.jsonl") if r["split"] == "dev"]
    chosen = sorted(pdf, key=lambda q: (stable_hash("limit", q), q))[:2]
    kept = [r for r in _lines(run_dir / "run.jsonl") if r["query_id"] in chosen]
    _write(run_dir / "run.jsonl", kept)
    m = metrics_for_run_dir(run_dir)
    assert list(m)[:2] == ["pdf", "all"]
    assert m["all"]["temporal_correctness"]["denominator"] == 2


def test_missing_files(run_dir):
    (run_dir / "run.jsonl").unlink()
    _expect(run_dir, "run.jsonl", None, "MISSING_FILE")


# --------------------------------------------------------------------------- what it refuses


def _cli(args, capsys):
    from membench.cli import main

    code = main(args)
    err = capsys.readouterr().err.strip()
    return code, err


def test_an_atom_widened_past_the_cap_is_refused(run_dir, capsys):
    # the conversation cap is 8 turns: a 12-turn atom would cover more than a few turns
    _edit(run_dir / "atoms.jsonl", 7, extent={"turn_start": 1, "turn_end": 12})
    _expect(run_dir, "atoms.jsonl", 7, "ATOM_CAP", "12 turns; cap is 8")
    code, err = _cli(["metrics", str(run_dir)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "ATOM_CAP" in err
    assert not (run_dir / "metrics.json").exists()


def test_sets_that_changed_since_the_run_are_refused(run_dir, capsys):
    from membench.sets.build import set_digests

    meta = json.loads((run_dir / "meta.json").read_text())
    meta["set_sha256"] = set_digests(run_dir / "sets")
    (run_dir / "meta.json").write_text(json.dumps(meta))
    assert metrics_for_run_dir(run_dir, write=False)["pdf"]["recall@10"]["value"] == 0.6
    rows = _lines(run_dir / "sets" / "pdf.jsonl")
    _write(run_dir / "sets" / "pdf.jsonl", list(reversed(rows)))  # same records, new bytes
    _expect(run_dir, "pdf.jsonl", None, "SET_DRIFT", "recorded")
    code, err = _cli(["metrics", str(run_dir)], capsys)
    assert code == 2 and len(err.splitlines()) == 1 and "SET_DRIFT" in err


def test_an_interrupted_run_is_refused_unless_partial(run_dir, capsys):
    from membench.metrics import format_table

    full = metrics_for_run_dir(run_dir, write=False)
    assert full["pdf"]["false_recall_rate"]["value"] == 0.25  # u2 keeps two atoms
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["status"] = "running"
    (run_dir / "meta.json").write_text(json.dumps(meta))
    _expect(run_dir, "meta.json", None, "INCOMPLETE_RUN", "'running'")
    # what an interrupted run looks like: the unanswerable u2's line never got written
    _write(
        run_dir / "run.jsonl",
        [r for r in _lines(run_dir / "run.jsonl") if r["query_id"] != "pdfh:u2"],
    )
    part = metrics_for_run_dir(run_dir, write=False, partial=True)
    fr = part["pdf"]["false_recall_rate"]
    # the missing line is left out, not counted as an abstention (which would give 0/4)
    assert (fr["value"], fr["n"], fr["denominator"]) == (0.0, 3, 3)
    sub = part["submission"]
    assert sub["valid"] is False and sub["partial"] and (sub["answered"], sub["asked"]) == (9, 10)
    assert "PARTIAL: 9 of 10" in format_table(part) and "NOT A VALID" in format_table(part)
    # complete status but a line missing: refused too
    meta["status"] = "complete"
    (run_dir / "meta.json").write_text(json.dumps(meta))
    _expect(run_dir, "run.jsonl", None, "INCOMPLETE_RUN", "1 of 10 queries have no line")
    code, err = _cli(["metrics", str(run_dir)], capsys)
    assert code == 2 and "INCOMPLETE_RUN" in err and len(err.splitlines()) == 1
    code, _ = _cli(["metrics", str(run_dir), "--partial"], capsys)
    assert code == 0
    assert json.loads((run_dir / "metrics.json").read_text())["submission"]["partial"]


def test_a_test_split_run_needs_final_and_is_logged(run_dir, capsys, monkeypatch, tmp_path):
    log = tmp_path / "access.jsonl"
    monkeypatch.setattr("membench.run.runner.TEST_ACCESS_LOG", log)
    for f in ("pdf.jsonl", "conversation.jsonl"):
        rows = _lines(run_dir / "sets" / f)
        for r in rows:
            r["split"] = "test" if r["split"] == "dev" else "dev"
        _write(run_dir / "sets" / f, rows)
    meta = json.loads((run_dir / "meta.json").read_text())
    meta["split"] = "test"
    (run_dir / "meta.json").write_text(json.dumps(meta))
    _expect(run_dir, "meta.json", None, "TEST_SPLIT", "--final")
    assert not log.exists()
    code, err = _cli(["metrics", str(run_dir)], capsys)
    assert code == 2 and "TEST_SPLIT" in err and len(err.splitlines()) == 1
    assert metrics_for_run_dir(run_dir, write=False, final=True)["pdf"]["recall@10"]["n"] == 5
    metrics_for_run_dir(run_dir, write=False, final=True)  # the same day: logged once
    rows = _lines(log)
    assert len(rows) == 1 and rows[0]["action"] == "read" and rows[0]["system"] == "hand"


def test_report_and_compare_refuse_the_same(run_dir, capsys, tmp_path):
    other = tmp_path / "other"
    shutil.copytree(run_dir, other)
    meta = json.loads((other / "meta.json").read_text())
    meta["sets_dir"] = str(run_dir / "sets")
    meta["status"] = "running"
    (other / "meta.json").write_text(json.dumps(meta))
    code, err = _cli(["compare", str(run_dir), str(other), "--resamples", "10"], capsys)
    assert code == 2 and "INCOMPLETE_RUN" in err and len(err.splitlines()) == 1
    out = tmp_path / "reports"
    code, err = _cli(["report", "--run", str(other), "--out", str(out)], capsys)
    assert code == 2 and "INCOMPLETE_RUN" in err and len(err.splitlines()) == 1
    assert not out.exists()  # refused before anything was rendered
    _edit(run_dir / "atoms.jsonl", 7, extent={"turn_start": 1, "turn_end": 12})
    code, err = _cli(
        ["compare", str(run_dir), str(other), "--partial", "--resamples", "10"], capsys
    )
    assert code == 2 and "ATOM_CAP" in err
    code, err = _cli(["report", "--run", str(run_dir), "--out", str(out)], capsys)
    assert code == 2 and "ATOM_CAP" in err and not out.exists()
