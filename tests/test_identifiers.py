"""Identifiers that cannot inject (membench.core.ids), wherever they enter: the sets (query ids),
atoms files and run lines, a system's atoms and answers in process and over HTTP, TREC files
given to import-run, system names, cards and the result store. And an atom listed twice in one
query's list is refused on every path, naming the query, the atom and both ranks; export
announces exactly what it writes.

The case that found it: a newline inside an atom id was accepted by ``metrics``, and
``export`` then wrote injected lines into run.trec (more written than announced) that ranked
other queries' gold first."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from hostile_world import cli_args, write_world

from membench.cli import main
from membench.contract.wire import ShapeError, atom_from_row, check_query_answer
from membench.core.errors import InputError
from membench.core.ids import MAX_ID_CHARS, id_problem, ids_problem, text_problem
from membench.run.runner import ProtocolError

FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


@pytest.fixture(autouse=True)
def _quiet_progress(monkeypatch):
    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")


@pytest.fixture
def world(tmp_path):
    return write_world(tmp_path / "w")


def _fixture_run(tmp_path) -> Path:
    d = tmp_path / "run"
    shutil.copytree(FIX_RUN, d)
    meta = json.loads((d / "meta.json").read_text())
    meta["sets_dir"] = str(FIX_RUN / "sets")
    (d / "meta.json").write_text(json.dumps(meta))
    return d


def _rewrite(path: Path, fn) -> None:
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [fn(r) for r in rows]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))


# --------------------------------------------------------------------------- the grammar


@pytest.mark.parametrize(
    "value",
    [
        "a\nb",
        "a b",
        "a\tb",
        "a\rb",
        "\x00",
        "a\u00a0b",
        "a\u2028b",
        "\u202eabc",
        "a\u200bb",
        "\ufeffa",
        "",
        "x" * (MAX_ID_CHARS + 1),
        "\ud800",
        7,
        None,
    ],
)
def test_not_identifiers(value):
    assert id_problem(value)
    if isinstance(value, str):
        assert ids_problem(["ok", value]) is not None and ids_problem(["ok", value])[0] == 1


@pytest.mark.parametrize(
    "value",
    [
        "a",
        "pdfh:q1",
        "mmlongbench:PH_2016.06.08_Economy-Final.pdf:0",
        "é-ü/x",
        "a" * MAX_ID_CHARS,
        "日本語",
        "a\"b'c",
    ],
)
def test_identifiers(value):
    assert id_problem(value) is None and ids_problem([value, "b"]) is None


def test_text_takes_spaces_but_no_line_breaks():
    assert text_problem("Apache-2.0 (model); MIT") is None
    assert text_problem("a\nb") and text_problem("a\tb") and text_problem("x" * 20_000)


# --------------------------------------------------------------------------- the found case


def test_a_newline_in_an_atom_id_is_refused_by_metrics_and_export(tmp_path, capsys):
    d = _fixture_run(tmp_path)
    bad = "p1\nQ1 Q0 x2 1 99 membench"  # what an injected TREC line would be
    _rewrite(d / "atoms.jsonl", lambda a: {**a, "atom_id": bad} if a["atom_id"] == "p1" else a)
    _rewrite(
        d / "run.jsonl",
        lambda r: {**r, "hits": [[bad if h[0] == "p1" else h[0], h[1]] for h in r["hits"]]},
    )
    assert main(["metrics", str(d)]) == 2
    err = capsys.readouterr().err
    assert f"{d / 'run.jsonl'}:2: ID: field hits[1][0]:" in err and "U+000A" in err
    (d / "run.jsonl").write_text((FIX_RUN / "run.jsonl").read_text())
    assert main(["metrics", str(d)]) == 2
    err = capsys.readouterr().err
    assert f"{d / 'atoms.jsonl'}:1: ID: field atom_id:" in err and "U+000A" in err
    out = tmp_path / "exp"
    assert main(["export", str(d), "--out", str(out)]) == 2
    assert not out.exists()


def test_export_announces_what_it_writes(tmp_path, capsys):
    d = _fixture_run(tmp_path)
    out = tmp_path / "exp"
    assert main(["export", str(d), "--out", str(out)]) == 0
    said = capsys.readouterr().out
    run_lines = (out / "run.trec").read_text().splitlines()
    qrels_lines = (out / "qrels.trec").read_text().splitlines()
    assert f"run.trec ({len(run_lines)} lines)" in said
    assert f"qrels.trec ({len(qrels_lines)} lines)" in said
    assert all(len(line.split()) == 6 for line in run_lines)
    assert all(len(line.split()) == 4 for line in qrels_lines)


def test_query_ids_in_the_sets_and_run_lines(world, tmp_path, capsys):
    sets = world["sets"]
    _rewrite(
        sets / "pdf.jsonl",
        lambda r: {**r, "query_id": r["query_id"] + " x"} if r["query_id"].endswith("q0") else r,
    )
    assert (
        main(
            [
                "validate",
                "--sets",
                str(sets),
                "--manifest",
                str(world["manifest"]),
                "--no-lock",
                "--corpus",
                str(world["corpus"]),
                "--no-audit",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert f"{sets / 'pdf.jsonl'}:1: SCHEMA: field query_id: 'pdfsrc:q0 x' holds whitespace" in out
    d = _fixture_run(tmp_path)
    _rewrite(
        d / "run.jsonl", lambda r: {**r, "cartridge": ["p3\r"]} if r["query_id"] == "pdfh:q3" else r
    )
    assert main(["metrics", str(d)]) == 2
    assert f"{d / 'run.jsonl'}:3: ID: field cartridge[0]:" in capsys.readouterr().err


def test_a_system_with_a_newline_in_an_atom_id(world, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(
            [
                "run",
                "--system",
                "hostile_world:NewlineIds",
                *cli_args(world),
                "--out",
                str(out),
                "--config",
                "x=1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "system newline-ids: atom #0: atom_id" in err and "U+000A" in err
    assert not (out / "atoms.jsonl").exists()


def test_system_names(world, tmp_path, capsys, monkeypatch):
    from hostile_world import Gated

    import membench.systems as systems

    class Spaced(Gated):
        name = "my system"

    real = systems.make_system
    monkeypatch.setattr(
        systems, "make_system", lambda n, cfg=None: Spaced() if n == "spaced" else real(n, cfg)
    )
    assert main(["run", "--system", "spaced", *cli_args(world), "--out", str(tmp_path / "r")]) == 2
    assert "system name: 'my system' holds whitespace" in capsys.readouterr().err
    assert (
        main(
            [
                "import-run",
                "--trec",
                "x",
                "--atoms",
                "y",
                "--name",
                "a\nb",
                *cli_args(world),
                "--out",
                str(tmp_path / "i"),
                "--cartridge-top",
                "1",
            ]
        )
        == 2
    )
    assert "--name: 'a\\nb' holds whitespace" in capsys.readouterr().err


def test_the_http_wire_takes_identifiers_only():
    with pytest.raises(ShapeError, match=r"hits\[0\]\[0\]: 'a\\nb' holds whitespace"):
        check_query_answer({"hits": [["a\nb", 1.0]], "cartridge": []})
    with pytest.raises(ShapeError, match=r"cartridge\[0\]"):
        check_query_answer({"hits": [], "cartridge": ["a b"]})
    row = {
        "atom_id": "a\tb",
        "source_id": "s:1",
        "modality": "pdf",
        "holder": "h",
        "observed_at": "2024-01-01T00:00:00+00:00",
        "extent": {"page": 1},
    }
    with pytest.raises(ShapeError, match=r"atoms\[0\]\.atom_id"):
        atom_from_row(row, "atoms[0]")


def test_card_fields(tmp_path):
    from membench.systems.cards import read_card

    cards = Path(__file__).parents[1] / "bench" / "cards"
    for name, field, value, msg in (
        ("bm25", "notes", "one\n| injected | row |", "U+000A"),
        ("bm25", "license", "MIT\r", "U+000D"),
        ("all-minilm-l6-v2", "model", "a model", "holds whitespace"),
        ("hybrid", "components", ["bm 25"], "components.0"),
    ):
        card = json.loads((cards / f"{name}.json").read_text())
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps({**card, field: value}, indent=1))
        with pytest.raises(InputError, match="CARD") as e:
            read_card(p)
        assert msg in str(e.value) and field in str(e.value)


# --------------------------------------------------------------------------- repeated atoms


def test_a_repeated_atom_in_process_names_query_atom_and_ranks(world, tmp_path, capsys):
    out = tmp_path / "run"
    assert (
        main(["run", "--system", "hostile_world:Repeats", *cli_args(world), "--out", str(out)]) == 2
    )
    err = capsys.readouterr().err.strip()
    assert "system repeats:" in err and "at ranks 1 and 3: an atom is listed once per query" in err
    assert "\n" not in err


def test_a_repeated_atom_in_a_run_line(tmp_path, capsys):
    d = _fixture_run(tmp_path)
    _rewrite(
        d / "run.jsonl",
        lambda r: (
            {**r, "hits": [["x1", 0.9], ["p1", 0.8], ["x1", 0.7]]}
            if r["query_id"] == "pdfh:q2"
            else r
        ),
    )
    assert main(["metrics", str(d)]) == 2
    err = capsys.readouterr().err
    assert (
        f"{d / 'run.jsonl'}:2: DUPLICATE_HIT: field hits: pdfh:q2: atom 'x1' at ranks 1 and 3"
    ) in err
    _rewrite(
        d / "run.jsonl",
        lambda r: (
            {**r, "hits": [["x1", 0.9], ["p1", 0.7]], "cartridge": ["p1", "p1"]}
            if r["query_id"] == "pdfh:q2"
            else r
        ),
    )
    assert main(["metrics", str(d)]) == 2
    assert "field cartridge: pdfh:q2: atom 'p1' at positions 1 and 2" in capsys.readouterr().err


def _trec_inputs(world, tmp_path):
    native = tmp_path / "native"
    assert main(["run", "--system", "random", *cli_args(world), "--out", str(native)]) == 0
    rows = [json.loads(line) for line in (native / "run.jsonl").read_text().splitlines()]
    return rows, native / "atoms.jsonl"


def test_a_repeated_atom_in_a_trec_file_or_cartridge(world, tmp_path, capsys):
    rows, atoms = _trec_inputs(world, tmp_path)
    r = next(r for r in rows if len(r["hits"]) >= 2)
    (a, _), (b, _) = r["hits"][:2]
    trec = tmp_path / "run.trec"
    trec.write_text(
        f"{r['query_id']} Q0 {a} 1 2.0 t\n{r['query_id']} Q0 {b} 2 1.5 t\n"
        f"{r['query_id']} Q0 {a} 3 1.0 t\n"
    )
    base = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(atoms),
        "--name",
        "ext",
        *cli_args(world),
        "--out",
        str(tmp_path / "imp"),
    ]
    capsys.readouterr()
    assert main([*base, "--cartridge-top", "1"]) == 2
    err = capsys.readouterr().err
    assert (
        f"{trec}:3: DUPLICATE_HIT: field docid: {r['query_id']}: atom {a!r} at rank 3 here "
        "and at rank 1 on line 1"
    ) in err
    trec.write_text(f"{r['query_id']} Q0 {a} 1 2.0 t\n")
    cart = tmp_path / "cart.jsonl"
    cart.write_text(json.dumps({"query_id": r["query_id"], "cartridge": [a, a]}) + "\n")
    assert main([*base, "--cartridge", str(cart)]) == 2
    assert (
        f"{cart}:1: DUPLICATE_HIT: field cartridge: {r['query_id']}: atom {a!r} at "
        "positions 1 and 2"
    ) in capsys.readouterr().err
    assert not (tmp_path / "imp").exists()


def test_the_wire_answer_goes_through_the_same_check():
    """Over HTTP the client turns the answer into a Result, which the runner checks as any
    system's: the same refusal."""
    from membench.run.runner import _answer_parts, _check_hits

    res = check_query_answer({"hits": [["a1", 1.0], ["a1", 0.5]], "cartridge": []})
    cart, hits = _answer_parts("http", "q", res, {"a1"})
    with pytest.raises(ProtocolError, match="hit 'a1' at ranks 1 and 2"):
        _check_hits("http", "q", hits, {"a1"})


def test_a_system_name_in_meta_json(tmp_path, capsys):
    """A run directory from elsewhere whose meta.json names the system with a line break:
    every reader refuses it (metrics, the result store, reports), naming the field."""
    d = _fixture_run(tmp_path)
    meta = json.loads((d / "meta.json").read_text())
    (d / "meta.json").write_text(json.dumps({**meta, "system": "bm25\n| x | 1.0 |"}))
    assert main(["metrics", str(d)]) == 2
    err = capsys.readouterr().err
    assert f"{d / 'meta.json'}: SCHEMA: field system:" in err and "U+000A" in err


# --------------------------------------------------------------------------- sets validate refuses


def _dup_gold_world(tmp_path):
    from hostile_world import relock, rewrite

    w = write_world(tmp_path / "w")
    rows = [json.loads(line) for line in (w["sets"] / "pdf.jsonl").read_text().splitlines()]
    rows[0]["gold"] = rows[0]["gold"] * 2  # the same region twice
    rewrite(w["sets"] / "pdf.jsonl", rows)
    relock(w)
    return w


def test_a_gold_region_listed_twice_is_refused_everywhere(tmp_path, capsys):
    """It passed validate and counted twice in recall's denominator (recall@10 moved for the
    same hits); now validate names it, run refuses the sets, and a scorer reading them
    refuses the record."""
    from membench.metrics.rundir import RunDir

    w = _dup_gold_world(tmp_path)
    located = f"{w['sets'] / 'pdf.jsonl'}:1: DUPLICATE_GOLD: field gold.1: repeats gold.0"
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
                "--no-audit",
            ]
        )
        == 1
    )
    assert located in capsys.readouterr().out
    assert main(["run", "--system", "random", *cli_args(w), "--out", str(tmp_path / "r")]) == 2
    assert located in capsys.readouterr().err
    d = _fixture_run(tmp_path)  # a run scored against such sets
    sets = tmp_path / "dupsets"
    shutil.copytree(FIX_RUN / "sets", sets)
    rows = [json.loads(line) for line in (sets / "pdf.jsonl").read_text().splitlines()]
    rows[0]["gold"] = rows[0]["gold"] + rows[0]["gold"][:1]
    (sets / "pdf.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.raises(InputError, match="repeats gold\\[0\\]"):
        RunDir.open(d, sets, partial=True).scores()


def test_import_run_refuses_sets_that_fail_validate(tmp_path, capsys):
    w = _dup_gold_world(tmp_path)
    good = write_world(tmp_path / "good")
    rows, atoms = _trec_inputs(good, tmp_path)
    trec = tmp_path / "run.trec"
    trec.write_text(
        "".join(
            f"{r['query_id']} Q0 {a} {i} {s} x\n"
            for r in rows
            for i, (a, s) in enumerate(r["hits"], 1)
        )
    )
    out = tmp_path / "imp"
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(atoms),
                "--name",
                "ext",
                *cli_args(w),
                "--out",
                str(out),
                "--cartridge-top",
                "1",
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert f"{w['sets'] / 'pdf.jsonl'}:1: DUPLICATE_GOLD:" in err
    assert "a run needs sets that pass every hard rule" in err
    assert not out.exists()
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(atoms),
                "--name",
                "ext",
                *cli_args(good),
                "--out",
                str(out),
                "--cartridge-top",
                "1",
            ]
        )
        == 0
    )
