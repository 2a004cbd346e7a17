"""An external system scored from a TREC run plus an atoms file, without Python."""

from __future__ import annotations

import json

import pytest

from membench.cli import main
from membench.metrics import metrics_for_run_dir
from membench.run.runner import run_system
from membench.run.systems import make_system


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
    args = ["import-run", "--trec", str(trec), "--atoms", str(native / "atoms.jsonl"),
            "--name", "ext", "--out", str(out), "--sets", str(built.out), "--cartridge-top", "1"]
    assert main(args) == 0
    a = metrics_for_run_dir(native)["all"]
    b = metrics_for_run_dir(out)["all"]
    for k in ("recall@10", "recall@100", "mrr", "ndcg@10", "false_recall_rate",
              "holder_correctness", "temporal_correctness", "cartridge_recall"):
        assert b[k]["value"] == a[k]["value"], k
    assert b["latency_p50_ms"]["n"] == 0 and b["latency_p50_ms"]["value"] is None
    meta = json.loads((out / "meta.json").read_text())
    assert meta["config"]["cartridge"] == "top 1 hits"


def test_import_errors_name_file_and_line(native, built, tmp_path, capsys):
    trec = tmp_path / "bad.trec"
    trec.write_text("pdf-nope Q0 x 1 1.0 t\n")
    args = ["import-run", "--trec", str(trec), "--atoms", str(native / "atoms.jsonl"),
            "--name", "ext", "--out", str(tmp_path / "o"), "--sets", str(built.out),
            "--cartridge-top", "1"]
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
    cart.write_text("".join(json.dumps({"query_id": r["query_id"], "cartridge": r["cartridge"],
                                        **({"confidence": 0.5} if i % 2 else {})}) + "\n"
                            for i, r in enumerate(rows)))
    out = tmp_path / "imported"
    args = ["import-run", "--trec", str(trec), "--atoms", str(native / "atoms.jsonl"),
            "--name", "ext", "--out", str(out), "--sets", str(built.out), "--cartridge",
            str(cart)]
    assert main(args) == 0
    lines = {json.loads(x)["query_id"]: json.loads(x)
             for x in (out / "run.jsonl").read_text().splitlines()}
    for i, r in enumerate(rows):
        assert lines[r["query_id"]].get("confidence") == (0.5 if i % 2 else None)
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"query_id": rows[0]["query_id"], "cartridge": [],
                               "confidence": "high"}) + "\n")
    assert main([*args[:-1], str(bad), "--force"]) == 2
    assert f"{bad}:1: CARTRIDGE: field confidence: must be a finite number or null" in \
        capsys.readouterr().err
