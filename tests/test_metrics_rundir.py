"""metrics_for_run_dir on a run directory in the runner's format, and every input error it
must name with file and line."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from membench.core.errors import InputError
from membench.core.jsonl import dumps
from membench.metrics import compute_metrics, metrics_for_run_dir

FIX = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


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
    assert result["pdf"]["recall@10"]["denominator"] == 5      # the test-split record is out
    assert result["all"]["temporal_correctness"]["denominator"] == 10
    recs = [r for f in ("pdf", "conversation") for r in _lines(run_dir / "sets" / f"{f}.jsonl")
            if r["split"] == "dev"]
    direct = compute_metrics(recs, _lines(run_dir / "sets" / "items.jsonl"),
                             [{k: v for k, v in a.items() if k != "text"}
                              for a in _lines(run_dir / "atoms.jsonl")],
                             _lines(run_dir / "run.jsonl"))
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


@pytest.mark.parametrize("change,rule", [
    ({"source_id": "pdfh:nope"}, "ATOM_SOURCE"),
    ({"modality": "image", "extent": {}}, "ATOM_SOURCE"),
    ({"extent": {"page": 0}}, "ATOM_EXTENT"),
    ({"extent": {"page": 1, "block": 1, "x": 2}}, "ATOM_EXTENT"),
    ({"observed_at": "2024-01-01T00:00:00"}, "ATOM_SCHEMA"),         # no timezone
    ({"color": "red"}, "ATOM_SCHEMA"),
    ({"atom_id": "p1"}, "DUPLICATE_ATOM"),
])
def test_bad_atoms(run_dir, change, rule):
    _edit(run_dir / "atoms.jsonl", 4, **change)
    _expect(run_dir, "atoms.jsonl", 4, rule)


@pytest.mark.parametrize("change,rule,text", [
    ({"hits": [["nope", 1.0]]}, "RUN_ATOM", "'nope'"),
    ({"cartridge": ["nope"]}, "RUN_ATOM", "'nope'"),
    ({"query_id": "pdfh:zzz"}, "RUN_QUERY", "not an annotated item"),
    ({"query_id": "pdfh:t1"}, "RUN_QUERY", ""),                       # a test-split query
    ({"query_id": "pdfh:q1"}, "DUPLICATE_QUERY_ID", "first at line 1"),
    ({"hits": [[f"x{i % 12 + 1}", 1.0] for i in range(1001)]}, "RUN_DEPTH", "1001"),
    ({"hits": [["x1", float("nan")]]}, "JSON", "NaN is not a JSON number"),  # not JSON at all
    ({"hits": [["x1", True]]}, "RUN_SCHEMA", ""),
    ({"hits": [["x1"]]}, "RUN_SCHEMA", ""),
    ({"latency_ms": -1}, "RUN_SCHEMA", ""),
    ({"extra": 1}, "RUN_SCHEMA", "unknown"),
])
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
