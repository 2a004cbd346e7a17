"""bench/same_outputs.py, the check that two checkouts' ``make all`` give the same outputs, on
two small trees: the same (but for times and latencies), and then one change at a time."""

from __future__ import annotations

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("same_outputs", ROOT / "bench" / "same_outputs.py")
same = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(same)


def tree(root: Path, latency: float, when: str) -> Path:
    (root / "bench" / "sets").mkdir(parents=True)
    (root / "bench" / "sets" / "pdf.jsonl").write_text('{"query_id": "q1"}\n')
    (root / "bench" / "sets.lock.json").write_text('{"pdf.jsonl": "abc"}\n')
    run = root / "runs" / "bm25-dev"
    run.mkdir(parents=True)
    (run / "atoms.jsonl").write_text('{"atom_id": "a1"}\n')
    (run / "run.jsonl").write_text(
        json.dumps({"query_id": "q1", "hits": [["a1", 1.0]], "latency_ms": latency}) + "\n"
    )
    (run / "metrics.json").write_text(
        json.dumps(
            {
                "recall@10": 0.5,
                "latency_p50_ms": latency,
                "generated_at": when,
                "definitions": {"x": f"see {root.name}.module"},
            }
        )
    )
    (root / "reports" / "bm25-dev").mkdir(parents=True)
    (root / "reports" / "bm25-dev" / "02.html").write_text(
        f"<p>generated {when} in {root}</p><table><tr><th>system</th><th>v</th></tr>"
        "<tr><td>a</td><td>1</td></tr><tr><td>b</td><td>2</td></tr></table>"
    )
    return root


@pytest.fixture
def trees(tmp_path):
    return (
        tree(tmp_path / "before", 1.5, "2026-01-01T00:00:00"),
        tree(tmp_path / "after", 2.5, "2026-01-02T00:00:00"),
    )


def test_the_same_outputs_but_for_times_are_the_same(trees, capsys):
    assert same.main(*trees) == 0
    out = capsys.readouterr().out
    assert out.rstrip().endswith("SAME") and "where code lives, .definitions: differs" in out


@pytest.mark.parametrize("change", ["set", "lock", "atoms", "run line", "figure"])
def test_one_changed_output_is_different(trees, change, capsys):
    a, b = trees
    run = b / "runs" / "bm25-dev"
    if change == "set":
        (b / "bench" / "sets" / "pdf.jsonl").write_text('{"query_id": "q2"}\n')
    elif change == "lock":
        (b / "bench" / "sets.lock.json").write_text('{"pdf.jsonl": "abd"}\n')
    elif change == "atoms":
        (run / "atoms.jsonl").write_text('{"atom_id": "a2"}\n')
    elif change == "run line":
        (run / "run.jsonl").write_text(
            json.dumps({"query_id": "q1", "hits": [["a1", 0.9]], "latency_ms": 1.5}) + "\n"
        )
    else:
        m = json.loads((run / "metrics.json").read_text())
        (run / "metrics.json").write_text(json.dumps({**m, "recall@10": 0.51}))
    assert same.main(a, b) == 1
    assert capsys.readouterr().out.rstrip().endswith("DIFFERENT")


def test_report_rows_in_another_order_are_counted_and_a_changed_row_is_shown(trees, capsys):
    a, b = trees
    page = b / "reports" / "bm25-dev" / "02.html"
    page.write_text(
        page.read_text().replace(
            "<tr><td>a</td><td>1</td></tr><tr><td>b</td><td>2</td></tr>",
            "<tr><td>b</td><td>2</td></tr><tr><td>a</td><td>1</td></tr>",
        )
    )
    assert same.main(a, b) == 0
    assert "the same rows in another order: 1" in capsys.readouterr().out
    page.write_text(page.read_text().replace("<td>2</td>", "<td>two</td>"))
    same.main(a, b)
    assert "'two'" in capsys.readouterr().out
    shutil.rmtree(b / "reports" / "bm25-dev")
    assert same.main(a, b) == 1
    assert (
        "the same names on both sides: False (on one side only: bm25-dev/02.html)"
        in capsys.readouterr().out
    )
