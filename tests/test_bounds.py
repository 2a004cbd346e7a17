"""Every input has a stated bound (membench.core.bounds), the docs' table is the registry's, and
each bound found broken by the adversarial pass now gives a located error, not a traceback:
timestamps near year 1 or 9999 (OverflowError in validate, audit and run), resample counts
(745 GiB asked for by --resamples 10^11), lines and JSON files past their length."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
from hostile_world import cli_args, runnable_sets, write_world

from membench.cli import main
from membench.core import jsonl
from membench.core.errors import InputError, MembenchError
from membench.docsite import bounds

REPO = Path(__file__).parents[1]
FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


# --------------------------------------------------------------------------- the registry


def test_the_docs_carry_the_bounds_table():
    text = (REPO / "docs" / "robustness.md").read_text()
    m = re.search(r"<!-- bounds:start -->\n(.*?)\n<!-- bounds:end -->", text, re.S)
    assert m, "docs/robustness.md has no <!-- bounds:start --> ... <!-- bounds:end --> block"
    assert m.group(1).strip() == bounds.markdown_table().strip(), (
        "the bounds table differs from the registry: paste "
        "`python -c 'from membench.docsite.bounds import markdown_table; print(markdown_table())'`"
    )


def test_every_bound_is_imported_where_it_is_enforced():
    """Each registered bound names its module, which is in the registry's module list (so the
    table holds it whatever was imported before)."""
    for b in bounds.all_bounds():
        assert b.where in bounds.MODULES, b
        assert b.what and b.past and b.unit is not None


# --------------------------------------------------------------------------- timestamps


@pytest.mark.parametrize(
    "value",
    [
        "9999-12-31T23:00:00-05:00",
        "0001-01-01T00:00:00+05:00",
        "9999-12-31T23:59:59+00:00",
        "1899-12-31T23:59:59+00:00",
        "2200-01-01T00:00:00+00:00",
    ],
)
@pytest.mark.parametrize("where", ["as_of", "observed_at"])
def test_timestamps_out_of_range_are_located_errors(tmp_path, capsys, value, where):
    sets = runnable_sets()
    if where == "as_of":
        sets["pdf.jsonl"][0]["as_of"] = value
        file, line = "pdf.jsonl", 1
    else:
        sets["items.jsonl"][0]["observed_at"] = value
        file, line = "items.jsonl", 1
    w = write_world(tmp_path / "w", sets)
    located = f"{w['sets'] / file}:{line}: SCHEMA: field {where}:"
    assert (
        main(
            [
                "validate",
                "--sets",
                str(w["sets"]),
                "--manifest",
                str(w["manifest"]),
                "--lock",
                str(w["lock"]),
                "--corpus",
                str(w["corpus"]),
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert located in out and "outside the range membench reads" in out
    assert main(["audit", str(w["sets"])]) == 2
    assert located in capsys.readouterr().err
    assert main(["run", "--system", "random", *cli_args(w), "--out", str(tmp_path / "r")]) == 2
    assert located in capsys.readouterr().err


def test_an_atom_observed_out_of_range(tmp_path, capsys):
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    meta = json.loads((d / "meta.json").read_text())
    (d / "meta.json").write_text(json.dumps({**meta, "sets_dir": str(FIX_RUN / "sets")}))
    rows = (d / "atoms.jsonl").read_text().splitlines()
    a = json.loads(rows[0])
    rows[0] = json.dumps({**a, "observed_at": "9999-12-31T23:59:59-12:00"})
    (d / "atoms.jsonl").write_text("\n".join(rows) + "\n")
    assert main(["metrics", str(d)]) == 2
    assert f"{d / 'atoms.jsonl'}:1: TIMESTAMP_RANGE: field observed_at:" in capsys.readouterr().err


def test_a_query_over_http_out_of_range():
    from membench.contract.wire import ShapeError, parse_query

    with pytest.raises(ShapeError, match="as_of.*outside the range"):
        parse_query(
            {
                "question": "q",
                "scope": {"holder": "h", "scenario": "s"},
                "as_of": "9999-12-31T23:00:00-05:00",
            }
        )


# --------------------------------------------------------------------------- resamples


@pytest.mark.parametrize(
    "command",
    [
        ["compare", "a", "b"],
        ["agreement", "a", "b"],
        ["leaderboard", "--out", "s"],
        ["q2d", "--spec", "x", "--out", "o"],
    ],
)
def test_resamples_past_the_bound_are_refused_at_the_command_line(command, capsys):
    with pytest.raises(SystemExit) as e:
        main([*command, "--resamples", "100000000000"])
    assert e.value.code == 2
    assert "at most 100,000 (bound resamples)" in capsys.readouterr().err


def test_resamples_past_the_bound_are_refused_before_any_work(tmp_path):
    from membench.analysis.agreement import bootstrap_tau, rank_agreement
    from membench.analysis.compare import compare_runs, paired_test
    from membench.analysis.leaderboard import add_runs, leaderboard
    from membench.metrics.bootstrap import bootstrap_ci

    huge = 10**11
    missing = [tmp_path / "nope1", tmp_path / "nope2"]  # never opened: refused first
    for call in (
        lambda: compare_runs(missing, n_resamples=huge),
        lambda: rank_agreement(missing, n_resamples=huge),
        lambda: leaderboard(tmp_path / "nope", n_resamples=huge),
        lambda: add_runs(missing, tmp_path / "s", n_resamples=huge),
        lambda: bootstrap_ci([1.0, 2.0], "k", n_resamples=huge),
        lambda: paired_test([1.0], [2.0], "k", n_resamples=huge),
        lambda: bootstrap_tau([[1.0]], [[1.0]], "k", n_resamples=huge),
        lambda: bootstrap_ci([1.0], "k", n_resamples=0),
        lambda: bootstrap_ci([1.0], "k", n_resamples=True),
    ):
        with pytest.raises(MembenchError, match="bound resamples"):
            call()
    assert not (tmp_path / "s").exists()


# --------------------------------------------------------------------------- lengths


def test_a_line_past_the_bound_is_located_and_never_held(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 1024)
    p = tmp_path / "x.jsonl"
    p.write_bytes(b'{"a":1}\n' + b'{"b":"' + b"x" * 5000 + b'"}\n' + b'{"c":3}\n')
    with pytest.raises(InputError, match=r"x\.jsonl:2: LINE_TOO_LONG: longer than 1,024 bytes"):
        list(jsonl.iter_json_lines(p))
    seen = []
    got = list(jsonl.iter_json_lines(p, seen.append))  # the validator's way: go on
    assert [o for _, o in got] == [{"a": 1}, {"c": 3}] and seen[0].line == 2
    with open(p, "rb") as f:  # the long line: None, not bytes
        assert [(n, raw if raw is None else len(raw)) for n, raw in jsonl.bounded_lines(f, p)] == [
            (1, 8),
            (2, None),
            (3, 8),
        ]
    q = tmp_path / "y.jsonl"  # exactly at the bound: read
    q.write_bytes(b'{"d":"' + b"y" * (1024 - 8) + b'"}\n')
    assert [o for _, o in jsonl.iter_json_lines(q)] == [{"d": "y" * 1016}]


def test_a_long_line_in_a_set_file_and_a_trec_file(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(jsonl, "MAX_LINE_BYTES", 4096)
    w = write_world(tmp_path / "w")
    pdf = w["sets"] / "pdf.jsonl"
    lines = pdf.read_text().splitlines()
    r = json.loads(lines[1])
    lines[1] = json.dumps({**r, "question": "?" * 10_000})
    pdf.write_text("\n".join(lines) + "\n")
    assert (
        main(
            [
                "validate",
                "--sets",
                str(w["sets"]),
                "--manifest",
                str(w["manifest"]),
                "--no-lock",
                "--no-corpus",
                "--no-audit",
            ]
        )
        == 1
    )
    assert f"{pdf}:2: LINE_TOO_LONG:" in capsys.readouterr().out
    from membench.core import textfiles
    from membench.run.files import trec_fields

    monkeypatch.setattr(textfiles, "MAX_TREC_LINE", 4096)  # TREC files: trec_line_bytes
    t = tmp_path / "run.trec"
    t.write_text("q Q0 a 1 1.0 t\n" + "q Q0 " + "b" * 9000 + " 2 0.5 t\n")
    with pytest.raises(InputError, match=r"run\.trec:2: LINE_TOO_LONG"):
        list(trec_fields(t, "qid Q0 docid rank score tag"))


def test_a_json_file_past_the_bound(tmp_path, monkeypatch):
    monkeypatch.setattr(jsonl, "MAX_JSON_FILE_BYTES", 100)
    p = tmp_path / "meta.json"
    p.write_text(json.dumps({"split": "dev", "pad": "x" * 200}))
    with pytest.raises(InputError, match="FILE_TOO_LONG"):
        jsonl.read_json_file(p, dict)
