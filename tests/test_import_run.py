"""An external system scored from a TREC run plus an atoms file, without Python."""

from __future__ import annotations

import json

import pytest

from membench.cli import main
from membench.core.errors import InputError
from membench.metrics import metrics_for_run_dir
from membench.run.runner import load_split, run_system
from membench.systems import make_system


@pytest.fixture(scope="module")
def native(built, corpus_root, tmp_path_factory):
    d = tmp_path_factory.mktemp("native")
    run_system(make_system("random"), built.out, "dev", d, corpus_root)  # the whole split
    return d


def to_trec(run_dir, path, reverse_lines=False):
    lines = []
    for l in (run_dir / "run.jsonl").read_text().splitlines():
        r = json.loads(l)
        lines += [f"{r['query_id']} Q0 {a} {i} {s} ext" for i, (a, s) in enumerate(r["hits"], 1)]
    path.write_text("\n".join(reversed(lines) if reverse_lines else lines) + "\n")


def test_imported_run_scores_like_the_native_one(native, built, tmp_path):
    trec = tmp_path / "run.trec"
    to_trec(native, trec, reverse_lines=True)  # line order must not matter: scores rank
    out = tmp_path / "imported"
    args = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(native / "atoms.jsonl"),
        "--name",
        "ext",
        "--out",
        str(out),
        "--sets",
        str(built.out),
        "--cartridge-top",
        "1",
    ]
    assert main(args) == 0
    a = metrics_for_run_dir(native)["all"]
    b = metrics_for_run_dir(out)["all"]
    for k in (
        "recall@10",
        "recall@100",
        "mrr",
        "ndcg@10",
        "false_recall_rate",
        "holder_correctness",
        "temporal_correctness",
        "cartridge_recall",
    ):
        assert b[k]["value"] == a[k]["value"], k
    assert b["latency_p50_ms"]["n"] == 0 and b["latency_p50_ms"]["value"] is None
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["cartridge"] == "top 1 hits"


def test_import_errors_name_file_and_line(native, built, tmp_path, capsys):
    trec = tmp_path / "bad.trec"
    trec.write_text("pdf-nope Q0 x 1 1.0 t\n")
    args = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(native / "atoms.jsonl"),
        "--name",
        "ext",
        "--out",
        str(tmp_path / "o"),
        "--sets",
        str(built.out),
        "--cartridge-top",
        "1",
    ]
    assert main(args) == 2
    assert f"{trec}:1: TREC: field qid: 'pdf-nope' is not a dev query" in capsys.readouterr().err


def test_import_needs_a_cartridge_policy(native, built, tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["import-run", "--trec", "x", "--atoms", "y", "--name", "n", "--out", "o"])
    assert "--cartridge" in capsys.readouterr().err


def test_a_cartridge_file_may_carry_the_confidence(native, built, tmp_path, capsys):
    """A cartridge line's optional confidence goes into the run line, where the abstention
    measures read it; a bad one is refused at its line."""
    trec = tmp_path / "run.trec"
    to_trec(native, trec)
    rows = [json.loads(x) for x in (native / "run.jsonl").read_text().splitlines()]
    cart = tmp_path / "cart.jsonl"
    cart.write_text(
        "".join(
            json.dumps(
                {
                    "query_id": r["query_id"],
                    "cartridge": r["cartridge"],
                    **({"confidence": 0.5} if i % 2 else {}),
                }
            )
            + "\n"
            for i, r in enumerate(rows)
        )
    )
    out = tmp_path / "imported"
    args = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(native / "atoms.jsonl"),
        "--name",
        "ext",
        "--out",
        str(out),
        "--sets",
        str(built.out),
        "--cartridge",
        str(cart),
    ]
    assert main(args) == 0
    lines = {
        json.loads(x)["query_id"]: json.loads(x)
        for x in (out / "run.jsonl").read_text().splitlines()
    }
    for i, r in enumerate(rows):
        assert lines[r["query_id"]].get("confidence") == (0.5 if i % 2 else None)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(
        json.dumps({"query_id": rows[0]["query_id"], "cartridge": [], "confidence": "high"}) + "\n"
    )
    assert main([*args[:-1], str(bad), "--force"]) == 2
    assert (
        f"{bad}:1: CARTRIDGE: field confidence: must be a finite number or null"
        in capsys.readouterr().err
    )


# --------------------------------------------------------------------------- coverage


def _native_lines(native) -> list[dict]:
    return [json.loads(l) for l in (native / "run.jsonl").read_text().splitlines()]


def _write_trec(rows, path, qid=lambda r: r["query_id"], first=None):
    lines = []
    for r in rows:
        hits = ([[first, 9.0]] if first else []) + r["hits"]
        lines += [f"{qid(r)} Q0 {a} {i} {s} ext" for i, (a, s) in enumerate(hits, 1)]
    path.write_text("\n".join(lines) + "\n")


def _import(native, built, trec, out, *extra):
    return main(
        [
            "import-run",
            "--trec",
            str(trec),
            "--atoms",
            str(native / "atoms.jsonl"),
            "--name",
            "ext",
            "--out",
            str(out),
            "--sets",
            str(built.out),
            "--cartridge-top",
            "1",
            *extra,
        ]
    )


def test_a_file_for_part_of_the_split_is_refused_and_says_what_to_do(
    native, built, tmp_path, capsys
):
    """The issue's case: a TREC file for 40 queries is not padded into a complete run."""
    from membench.sets.topics import topic_id

    rows = [r for r in _native_lines(native) if r["hits"]][:40]
    trec = tmp_path / "part.trec"
    _write_trec(rows, trec, qid=lambda r: topic_id(r["query_id"]))
    out = tmp_path / "o"
    assert _import(native, built, trec, out) == 2
    # progress lines ("[membench] ... still working", printed when a step outlasts its
    # threshold, as on a loaded machine) are not the refusal: the refusal is one line
    err = "\n".join(
        ln for ln in capsys.readouterr().err.strip().splitlines() if not ln.startswith("[membench]")
    )
    n = len(load_split(built.out, "dev").records)
    assert err.startswith(
        f"membench: {trec}: INCOMPLETE_RUN: covers 40 of the {n:,} dev "
        f"queries of the whole split: {n - 40:,} have no line (e.g. t"
    )
    named = err.split("(e.g. ", 1)[1].split(")", 1)[0].split(", ")
    assert len(named) == 3 and all(q.startswith("t") and len(q) == 17 for q in named)
    assert "never invents an empty answer" in err and "--modality M, --limit N" in err
    assert "--partial" in err and "\n" not in err
    assert not (out / "meta.json").exists()


def test_the_part_is_accepted_when_named(native, built, tmp_path):
    from membench.sets.topics import topics

    by_qid = {r["query_id"]: r for r in _native_lines(native)}
    # --limit: the queries `membench topics --limit 7` gives, by their opaque qids
    tops = topics(built.out, "dev", limit=7)
    recs = load_split(built.out, "dev", limit=7).records
    from membench.sets.topics import topic_id

    rows = [by_qid[r.query_id] for r in recs]
    assert {topic_id(r["query_id"]) for r in rows} == {t["qid"] for t in tops}
    carts = tmp_path / "carts.jsonl"  # every query named, even one without hits
    carts.write_text(
        "".join(
            json.dumps({"qid": topic_id(r["query_id"]), "cartridge": r["cartridge"]}) + "\n"
            for r in rows
        )
    )
    trec = tmp_path / "limit.trec"
    _write_trec(rows, trec, qid=lambda r: topic_id(r["query_id"]))
    out = tmp_path / "limit"
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(native / "atoms.jsonl"),
                "--name",
                "ext",
                "--out",
                str(out),
                "--sets",
                str(built.out),
                "--cartridge",
                str(carts),
                "--limit",
                "7",
            ]
        )
        == 0
    )
    meta = json.loads((out / "meta.json").read_text())
    assert meta["limit"] == 7 and meta["status"] == "complete" and "partial" not in meta
    m = metrics_for_run_dir(out, write=False)
    assert m["all"]["recall@10"]["n"] == sum(not r.unanswerable for r in recs)
    # --modality: the pdf queries, all of them
    pdf = [r for r in recs if r.modality == "pdf"]
    assert pdf
    rows = [by_qid[r.query_id] for r in load_split(built.out, "dev", ["pdf"]).records]
    trec = tmp_path / "pdf.trec"
    _write_trec([r for r in rows if r["hits"]], trec)
    carts.write_text(
        "".join(
            json.dumps({"query_id": r["query_id"], "cartridge": r["cartridge"]}) + "\n"
            for r in rows
        )
    )
    out = tmp_path / "pdf"
    assert (
        main(
            [
                "import-run",
                "--trec",
                str(trec),
                "--atoms",
                str(native / "atoms.jsonl"),
                "--name",
                "ext",
                "--out",
                str(out),
                "--sets",
                str(built.out),
                "--cartridge",
                str(carts),
                "--modality",
                "pdf",
            ]
        )
        == 0
    )
    assert metrics_for_run_dir(out, write=False)["pdf"]["recall@10"]["denominator"] == sum(
        not r.unanswerable for r in load_split(built.out, "dev", ["pdf"]).records
    )


def test_a_query_outside_the_named_part_is_refused(native, built, tmp_path, capsys):
    rows = _native_lines(native)
    pdf = {r.query_id for r in load_split(built.out, "dev", ["pdf"]).records}
    other = next(r for r in rows if r["query_id"] not in pdf and r["hits"])
    trec = tmp_path / "mixed.trec"
    _write_trec([other], trec)
    assert _import(native, built, trec, tmp_path / "o", "--modality", "pdf") == 2
    assert (
        f"{trec}:1: TREC: field qid: {other['query_id']!r} is a dev query outside the "
        "selected part (--modality pdf)"
    ) in capsys.readouterr().err


def test_partial_writes_only_what_the_file_answers_and_is_marked(native, built, tmp_path, capsys):
    """--partial: no invented line; readers refuse it without --partial and mark it PARTIAL
    with it; another holder's atom at rank 1 on every imported query is holder correctness 0
    over the covered queries (padding had made it 0.98)."""
    from membench.metrics.rundir import RunDir

    rows = [r for r in _native_lines(native) if r["hits"]][:40]
    items = {
        json.loads(l)["atom_id"]: json.loads(l)
        for l in (native / "atoms.jsonl").read_text().splitlines()
    }
    holders = {r.query_id: r.scope.holder for r in load_split(built.out, "dev").records}
    foreign = {
        h: next(a for a, x in items.items() if x["holder"] != h) for h in set(holders.values())
    }
    trec = tmp_path / "part.trec"
    lines = []
    for r in rows:
        hits = [[foreign[holders[r["query_id"]]], 9.0]] + r["hits"]
        lines += [f"{r['query_id']} Q0 {a} {i} {s} ext" for i, (a, s) in enumerate(hits, 1)]
    trec.write_text("\n".join(lines) + "\n")
    out = tmp_path / "part"
    assert _import(native, built, trec, out, "--partial") == 0
    assert "PARTIAL: 40 of" in capsys.readouterr().out
    assert len((out / "run.jsonl").read_text().splitlines()) == 40
    meta = json.loads((out / "meta.json").read_text())
    assert meta["status"] == "partial" and meta["partial"]["covered"] == 40
    with pytest.raises(InputError, match="INCOMPLETE_RUN: field status: an import of part"):
        RunDir.open(out)
    rd = RunDir.open(out, partial=True)
    assert rd.label.endswith(f"[PARTIAL 40/{rd.asked}]") and not rd.submission["valid"]
    m = rd.metrics(write=False)
    assert m["all"]["holder_correctness"]["value"] == 0.0
    assert m["all"]["holder_correctness"]["n"] == 40


def test_an_imported_run_takes_the_card_it_is_given_never_one_by_name(
    native, built, tmp_path, capsys
):
    from membench.systems.cards import CARDS_DIR

    rows = _native_lines(native)
    trec = tmp_path / "all.trec"
    _write_trec([r for r in rows if r["hits"]], trec)
    carts = tmp_path / "carts.jsonl"
    carts.write_text(
        "".join(
            json.dumps({"query_id": r["query_id"], "cartridge": r["cartridge"]}) + "\n"
            for r in rows
        )
    )
    base = [
        "import-run",
        "--trec",
        str(trec),
        "--atoms",
        str(native / "atoms.jsonl"),
        "--sets",
        str(built.out),
        "--cartridge",
        str(carts),
    ]
    # named like the reference system: no card found by the name
    assert main([*base, "--name", "bm25", "--out", str(tmp_path / "a")]) == 0
    meta = json.loads((tmp_path / "a" / "meta.json").read_text())
    assert meta["card"] is None and meta["identity"]["kind"] == "imported"
    # a registry card given explicitly: refused
    assert (
        main(
            [
                *base,
                "--name",
                "x",
                "--out",
                str(tmp_path / "b"),
                "--card",
                str(CARDS_DIR / "bm25.json"),
            ]
        )
        == 2
    )
    assert "CARD: field name: card refused: it is named 'bm25'" in capsys.readouterr().err
    # a card of its own: recorded
    own = tmp_path / "ext-lexical.json"
    card = json.loads((CARDS_DIR / "bm25.json").read_text())
    own.write_text(json.dumps({**card, "name": "ext-lexical"}))
    assert main([*base, "--name", "x", "--out", str(tmp_path / "c"), "--card", str(own)]) == 0
    assert json.loads((tmp_path / "c" / "meta.json").read_text())["card"]["name"] == "ext-lexical"


# --------------------------------------------------------------------------- bounds of the files


@pytest.fixture
def small(tmp_path, monkeypatch):
    """A native run on the small hostile world and its TREC file: what an import reads (no
    progress lines: the tests read stderr's one error line)."""
    from hostile_world import write_world

    monkeypatch.setenv("MEMBENCH_PROGRESS", "quiet")

    w = write_world(tmp_path / "w")
    native = tmp_path / "native"
    assert main(["run", "--system", "random", *_world_args(w), "--out", str(native)]) == 0
    trec = tmp_path / "run.trec"
    to_trec(native, trec)
    return w, native, trec


def _world_args(w) -> list[str]:
    from hostile_world import cli_args

    return cli_args(w)


def _import_small(small, out, atoms=None) -> int:
    w, native, trec = small
    return main(
        [
            "import-run",
            "--trec",
            str(trec),
            "--atoms",
            str(atoms or native / "atoms.jsonl"),
            "--name",
            "ext",
            *_world_args(w),
            "--out",
            str(out),
            "--cartridge-top",
            "1",
        ]
    )


def _one_line(capsys) -> str:
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    return err


def test_an_atoms_file_past_its_bytes_bound_is_refused_unread(small, tmp_path, monkeypatch, capsys):
    atoms = small[1] / "atoms.jsonl"
    size = atoms.stat().st_size
    monkeypatch.setattr("membench.run.importer.MAX_IMPORT_ATOM_BYTES", size)
    assert _import_small(small, tmp_path / "ok") == 0  # the bound itself is taken
    capsys.readouterr()
    monkeypatch.setattr("membench.run.importer.MAX_IMPORT_ATOM_BYTES", size - 1)
    assert _import_small(small, tmp_path / "o") == 2
    err = _one_line(capsys)
    assert f"{atoms}: TOO_LARGE: {size:,} bytes" in err and "bound import_atom_bytes" in err
    assert not (tmp_path / "o").exists()


def test_an_atoms_file_past_its_atoms_bound_is_refused_at_the_line(
    small, tmp_path, monkeypatch, capsys
):
    atoms = small[1] / "atoms.jsonl"
    n = len(atoms.read_text().splitlines())
    monkeypatch.setattr("membench.run.importer.MAX_IMPORT_ATOMS", n - 1)
    assert _import_small(small, tmp_path / "o") == 2
    err = _one_line(capsys)
    assert f"{atoms}:{n}: TOO_LARGE: more than {n - 1:,} atoms" in err, err
    assert "bound import_atoms" in err and not (tmp_path / "o").exists()


def test_a_query_past_its_trec_lines_bound_is_refused_at_the_line(
    small, tmp_path, monkeypatch, capsys
):
    trec = small[2]
    rows = [line.split() for line in trec.read_text().splitlines()]
    per_query: dict[str, int] = {}
    for r in rows:
        per_query[r[0]] = per_query.get(r[0], 0) + 1
    most = max(per_query.values())
    assert most >= 2
    monkeypatch.setattr("membench.run.importer.MAX_IMPORT_QUERY_LINES", most)
    assert _import_small(small, tmp_path / "ok") == 0  # the bound itself is taken
    capsys.readouterr()
    monkeypatch.setattr("membench.run.importer.MAX_IMPORT_QUERY_LINES", most - 1)
    qid = next(q for q, k in per_query.items() if k == most)
    line = [i for i, r in enumerate(rows, 1) if r[0] == qid][most - 1]
    assert _import_small(small, tmp_path / "o") == 2
    err = _one_line(capsys)
    assert (
        f"{trec}:{line}: TOO_LARGE: field qid: query {qid}: more than {most - 1:,} lines" in err
    ), err
    assert "bound import_query_lines" in err and not (tmp_path / "o").exists()


def test_an_imported_atom_whose_text_is_not_a_string_is_refused(small, tmp_path, capsys):
    rows = [json.loads(x) for x in (small[1] / "atoms.jsonl").read_text().splitlines()]
    rows[1]["text"] = 12
    atoms = tmp_path / "atoms.jsonl"
    atoms.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert _import_small(small, tmp_path / "o", atoms) == 2
    assert f"{atoms}:2: ATOM_SCHEMA: field text: must be a string" in _one_line(capsys)
