"""``membench trec-eval`` against pytrec_eval (trec_eval), line by line: graded qrels, grade-0
judgments, queries without hits, run queries without judgments, tied scores (equal, and equal
only as 32-bit floats); and the documented difference of membench's tie rule."""

from __future__ import annotations

import random
from pathlib import Path

import numpy as np
import pytest

from membench.cli import main
from membench.core.errors import MembenchError
from membench.trec.evaluate import _scan_run
from membench.trec.trec_eval import IllegalMeasure, parse_measures, trec_eval, trec_eval_values

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = [
    "num_q",
    "num_ret",
    "num_rel",
    "num_rel_ret",
    "map",
    "recip_rank",
    "P.5,10",
    "recall.5,10,100",
    "ndcg_cut.3,10",
]
NAMES = parse_measures(MEASURES)
COUNTS = {"num_q", "num_ret", "num_rel", "num_rel_ret"}


def trec_line(name: str, qid: str, value: float) -> str:
    """trec_eval's printf: ``%-22s\\t%s\\t%6.4f`` (``%ld`` for counts)."""
    if name in COUNTS:
        return "%-22s\t%s\t%d" % (name, qid, int(value))
    return "%-22s\t%s\t%6.4f" % (name, qid, value)


def world(seed: int, tmp_path):
    """A run and qrels with everything the brief lists; returns their paths and the run as
    pytrec_eval's dicts."""
    rng = random.Random(seed)
    run_lines, qrels_lines = [], []
    for i in range(40):
        qid = f"q{i}"
        docs = [f"d{j}" for j in rng.sample(range(200), rng.randint(0, 60))]
        kind = i % 8
        if kind != 7:  # q7, q15, ...: judged, never retrieved
            for rank, d in enumerate(docs, 1):
                if kind == 3:  # exact ties
                    s = float(rng.randrange(4))
                elif kind == 5:  # distinct doubles, equal as float32
                    s = 1.0 + rng.randrange(3) * 1e-9
                else:
                    s = round(rng.uniform(0, 50), 6)
                run_lines.append(f"{qid} Q0 {d} {rank} {s!r} tag\n")
        if kind == 6:  # retrieved, judged with grade 0 only
            judged = {d: 0 for d in docs[:3]} or {"nothing": 0}
        else:
            pool = docs + [f"x{j}" for j in range(5)]
            judged = {
                d: rng.choice([0, 1, 1, 2, 3])
                for d in rng.sample(pool, min(len(pool), rng.randint(1, 12)))
            }
        qrels_lines += [f"{qid} 0 {d} {r}\n" for d, r in judged.items()]
    run_lines += [f"zz{k} Q0 d{k} 1 1.0 tag\n" for k in range(3)]  # not in the qrels
    rng.shuffle(run_lines) if seed % 2 else None  # interleaved queries too
    run_p, qrels_p = tmp_path / "run.trec", tmp_path / "qrels.trec"
    run_p.write_text("".join(run_lines))
    qrels_p.write_text("".join(qrels_lines))
    return run_p, qrels_p


def reference(run_p, qrels_p, complete: bool = False):
    with open(qrels_p) as f:
        qr = pytrec_eval.parse_qrel(f)
    with open(run_p) as f:
        rn = pytrec_eval.parse_run(f)
    trec_names = [n for n in NAMES if n != "num_q"]
    per = pytrec_eval.RelevanceEvaluator(qr, set(trec_names)).evaluate(rn)
    assert per, "pytrec_eval evaluated nothing"
    if complete:
        # trec_eval -c (trec_eval.c): a qrels query missing from the run is evaluated against
        # an empty ranking: every measure 0 but num_rel, its relevant documents
        for q, docs in qr.items():
            if q not in per:
                per[q] = {n: 0.0 for n in trec_names}
                per[q]["num_rel"] = sum(1 for r in docs.values() if r >= 1)
    lines = [trec_line(n, q, per[q][n]) for q in sorted(per) for n in trec_names]
    n = len(per)
    for name in NAMES:
        if name == "num_q":
            lines.append(trec_line(name, "all", n))
        elif name in COUNTS:
            lines.append(trec_line(name, "all", sum(per[q][name] for q in per)))
        else:
            lines.append(trec_line(name, "all", sum(per[q][name] for q in per) / n))
    return per, lines


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_equals_trec_eval_line_by_line_with_its_tie_rule(tmp_path, seed):
    run_p, qrels_p = world(seed, tmp_path)
    per, want = reference(run_p, qrels_p)
    # pytrec_eval bundles trec_eval 9.0.8: scores compared as 32-bit floats, a qrels query
    # missing from the run left out (trec_eval 10.0 refuses it: --lenient)
    got = list(trec_eval(qrels_p, run_p, MEASURES, per_query=True, ties="trec_eval9", lenient=True))
    assert got == want
    _, rows, _ = trec_eval_values(qrels_p, run_p, MEASURES, ties="trec_eval9", lenient=True)
    assert set(rows) == set(per)
    for q, values in rows.items():
        for name, v in values.items():
            assert v == pytest.approx(per[q][name], abs=1e-12), (q, name)
    # what the world must exercise
    assert any(values["num_rel"] == 0 and values["num_ret"] > 0 for values in rows.values())
    assert "q7" not in rows and "zz0" not in rows
    complete = list(
        trec_eval(qrels_p, run_p, MEASURES, per_query=True, complete=True, ties="trec_eval9")
    )
    want_c = reference(run_p, qrels_p, complete=True)[1]
    assert complete == want_c
    assert any(line.startswith("num_ret") and "\tq7\t0" in line for line in complete)


def test_membench_tie_rule_differs_where_documented(tmp_path):
    """Two documents tie at 1.0; the system wrote "a" first (rank 1), "b" is relevant.
    membench keeps the system's order (b at rank 2: recip_rank 0.5); trec_eval orders the tie
    by docid descending (b first: 1.0), and so does ``trec-eval`` by default."""
    (tmp_path / "qrels").write_text("q 0 b 1\n")
    (tmp_path / "run").write_text("q Q0 a 1 1.0 t\nq Q0 b 2 1.0 t\n")
    ours = list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"], ties="membench"))
    theirs = list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"]))
    assert ours == ["recip_rank            \tall\t0.5000"]
    assert theirs == ["recip_rank            \tall\t1.0000"]
    # equal as 32-bit floats only: trec_eval 10.0 (doubles) and membench see 1.0000000001 >
    # 1.0; trec_eval 9 and pytrec_eval (floats) a tie
    (tmp_path / "run").write_text("q Q0 a 1 1.0000000001 t\nq Q0 b 2 1.0 t\n")
    assert (
        list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"], ties="trec_eval9"))
        == theirs
    )
    assert list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"])) == ours
    assert (
        list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"], ties="membench"))
        == ours
    )


def test_membench_ties_equal_trec_eval_on_tie_free_runs(tmp_path):
    rng = random.Random(5)
    run = "".join(
        f"q{i} Q0 d{j} {r} {1000 - r * 1.5} t\n"
        for i in range(10)
        for r, j in enumerate(rng.sample(range(100), 30), 1)
    )
    qrels = "".join(
        f"q{i} 0 d{j} {rng.choice([0, 1, 2])}\n"
        for i in range(12)
        for j in rng.sample(range(100), 8)
    )
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text(qrels)
    assert (
        list(
            trec_eval(
                tmp_path / "qrels",
                tmp_path / "run",
                MEASURES,
                per_query=True,
                ties="membench",
                lenient=True,
            )
        )
        == reference(tmp_path / "run", tmp_path / "qrels")[1]
    )


def test_measure_names():
    # trec_eval's table order, each measure once, its first parameters kept
    assert parse_measures(["recall.10,100", "map", "recall.10", "P.5"]) == [
        "map",
        "P_5",
        "recall_10",
        "recall_100",
    ]
    assert parse_measures(["ndcg_cut"])[:2] == ["ndcg_cut_5", "ndcg_cut_10"]
    # parameters as trec_eval reads them: cutoffs by atol, multiples and levels by atof
    assert parse_measures(["Rprec_mult.2,0.5abc", "iprec_at_recall.1.5,-.25"]) == [
        "iprec_at_recall_-0.25",
        "iprec_at_recall_1.50",
        "Rprec_mult_0.50",
        "Rprec_mult_2.00",
    ]
    assert parse_measures(["set_F.0.5"]) == ["set_F_0.5"]
    # "P_5" is not "P.5" to trec_eval: an illegal measure (exit status 1)
    for bad in ("P_5", "ndcg_cut_10", "set_F_0.5"):
        with pytest.raises(IllegalMeasure, match="illegal measure"):
            parse_measures([bad])


def test_cli(tmp_path, capsys):
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    (tmp_path / "run").write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\nq2 Q0 c 1 5 t\n")
    assert (
        main(
            [
                "trec-eval",
                str(tmp_path / "qrels"),
                str(tmp_path / "run"),
                "-m",
                "recip_rank",
                "-m",
                "num_ret",
                "-q",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out == [
        "num_ret               \tq1\t2",
        "recip_rank            \tq1\t0.5000",
        "num_ret               \tq2\t1",
        "recip_rank            \tq2\t1.0000",
        "num_ret               \tall\t3",
        "recip_rank            \tall\t0.7500",
    ]
    assert main(["trec-eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "infAP"]) == 2
    assert "infAP is not computed by membench" in capsys.readouterr().err
    assert main(["trec-eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "nosuch"]) == 1
    assert "illegal measure 'nosuch'" in capsys.readouterr().err  # trec_eval's status 1
    (tmp_path / "bad").write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b x 1.0 t\n")
    assert main(["trec-eval", "--strict", str(tmp_path / "qrels"), str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "bad:2" in err and "rank" in err and "Traceback" not in err
    # trec_eval never reads the rank column: by default "x" is no refusal
    assert main(["trec-eval", "-c", str(tmp_path / "qrels"), str(tmp_path / "bad")]) == 0
    capsys.readouterr()


def test_values_are_not_rounded(tmp_path):
    (tmp_path / "qrels").write_text("q 0 a 1\nq 0 b 1\nq 0 c 1\n")
    (tmp_path / "run").write_text("q Q0 x 1 3 t\nq Q0 a 2 2 t\nq Q0 b 3 1 t\n")
    _, rows, total = trec_eval_values(tmp_path / "qrels", tmp_path / "run", ["map", "P.3"])
    assert rows["q"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 3, abs=0)
    assert total["P_3"] == 2 / 3
    assert np.isclose(rows["q"]["P_3"], 2 / 3)


def test_complete_counts_the_relevant_documents_of_missing_queries(tmp_path):
    """trec_eval -c evaluates a qrels query missing from the run against an empty ranking:
    its relevant documents count in num_rel (trec_eval's results.trunc test: 561, not the
    484 of the queries in the run), it counts in num_q, and scores 0 on everything else."""
    (tmp_path / "qrels").write_text("a 0 x 1\na 0 y 0\nb 0 u 1\nb 0 v 2\nb 0 w 0\nc 0 z 0\n")
    (tmp_path / "run").write_text("a Q0 x 1 3.0 t\na Q0 k 2 2.0 t\n")
    names = ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "P.1", "recip_rank"]
    _, rows, total = trec_eval_values(tmp_path / "qrels", tmp_path / "run", names, lenient=True)
    assert list(rows) == ["a"] and total["num_rel"] == 1 and total["num_q"] == 1
    with pytest.raises(MembenchError, match="has no line in the run"):
        trec_eval_values(tmp_path / "qrels", tmp_path / "run", names)
    _, rows, total = trec_eval_values(tmp_path / "qrels", tmp_path / "run", names, complete=True)
    assert list(rows) == ["a", "b", "c"]
    assert rows["b"] == {
        "num_ret": 0,
        "num_rel": 2,
        "num_rel_ret": 0,
        "map": 0.0,
        "P_1": 0.0,
        "recip_rank": 0.0,
    }
    assert rows["c"]["num_rel"] == 0
    assert total == {
        "num_q": 3,
        "num_ret": 2,
        "num_rel": 3,
        "num_rel_ret": 1,
        "map": 1 / 3,
        "P_1": 1 / 3,
        "recip_rank": 1 / 3,
    }


def test_trec_eval_compat_reads_what_trec_eval_reads(tmp_path, capsys):
    """trec_eval ignores fields after the sixth (its own results.trunc has 9), skips blank
    lines and, since 10.0, lines starting with '#' (in the qrels: at column 1); membench
    refuses them, located, unless --trec-eval-compat."""
    (tmp_path / "qrels").write_text("# judged by hand\nq1 0 a 1\nq1 0 b 1\nq2 0 c 1\n")
    (tmp_path / "run").write_text(
        "# a comment\nq1 Q0 b 1 2.0 t extra fields 9\n\n  # indented comment\n"
        "q1\tQ0 a 2 1.0 t x\nq2 Q0 c 1 5 t\n"
    )
    clean_q = tmp_path / "qrels.clean"
    clean_q.write_text("q1 0 a 1\nq1 0 b 1\nq2 0 c 1\n")
    clean_r = tmp_path / "run.clean"
    clean_r.write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\nq2 Q0 c 1 5 t\n")
    got = list(
        trec_eval(tmp_path / "qrels", tmp_path / "run", MEASURES, per_query=True, compat=True)
    )
    assert got == list(trec_eval(clean_q, clean_r, MEASURES, per_query=True))
    # the same on the vectorised (arrow) path: a large run, comments inside
    big = "".join(f"q{i} Q0 d{j} {j} {100 - j} t more\n" for i in range(300) for j in range(1, 40))
    (tmp_path / "big").write_text("#c\n" + big + "# end\n")
    (tmp_path / "big.clean").write_text(big.replace(" more\n", "\n"))
    (tmp_path / "bq").write_text("".join(f"q{i} 0 d{i % 39 + 1} 1\n" for i in range(300)))
    assert list(trec_eval(tmp_path / "bq", tmp_path / "big", MEASURES, compat=True)) == list(
        trec_eval(tmp_path / "bq", tmp_path / "big.clean", MEASURES)
    )
    # a comment that arrow would take for a 6-field line (qid "#"): still a comment
    (tmp_path / "big6").write_text("# Q0 d1 1 2.0 t\n" + big.replace(" more\n", "\n"))
    run6 = _scan_run(tmp_path / "big6", tmp_path / "bq", 1 << 20, "membench", False, compat=True)
    assert run6.n_lines == 300 * 39 and "#" not in run6.qids
    # trec_eval's reading by default; --strict: one located error, with the hint
    assert main(["trec-eval", str(clean_q), str(tmp_path / "run"), "-m", "map"]) == 0
    capsys.readouterr()
    assert main(["trec-eval", "--strict", str(clean_q), str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert "run:1" in err and "TREC" in err and "Traceback" not in err
    (tmp_path / "run2").write_text("q1 Q0 b 1 2.0 t extra\nq2 Q0 c 1 5 t\n")
    assert main(["trec-eval", "--strict", str(clean_q), str(tmp_path / "run2")]) == 2
    assert "without --strict" in capsys.readouterr().err
    assert main(["trec-eval", str(clean_q), str(tmp_path / "run2"), "--trec-eval-compat"]) == 0
    capsys.readouterr()
    # compat still refuses what trec_eval refuses: fewer than 6 fields, located
    (tmp_path / "run3").write_text("# c\nq1 Q0 b 1 2.0 t\n\nq1 Q0 a 2\n")
    assert main(["trec-eval", str(clean_q), str(tmp_path / "run3"), "--trec-eval-compat"]) == 2
    assert "run3:4" in capsys.readouterr().err
    # a qrels comment is one only at column 1, and not under --strict
    assert main(["trec-eval", "--strict", str(tmp_path / "qrels"), str(clean_r)]) == 2
    assert "qrels:1" in capsys.readouterr().err


def test_help_says_how_the_tie_rules_differ(capsys):
    with pytest.raises(SystemExit):
        main(["trec-eval", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "docid descending" in out and "rank column" in out and "0.5 by membench" in out
    assert "--strict" in out and "--lenient" in out and "-M" in out and "-l" in out


def test_the_command_on_an_interleaved_run_keeps_pandas_out_and_does_not_crash(tmp_path):
    """``membench trec-eval`` (its own light start: membench.launch) keeps pandas out of the
    process; a run whose queries interleave takes pyarrow's id lookup, which asks for pandas:
    it must go on without it (it once failed there on a None planted in sys.modules) and print
    what trec_eval() prints in process."""
    import subprocess
    import sys

    from test_metrics_trec import _clean_run

    text, _, qrels = _clean_run(random.Random(200), 60)
    lines = text.splitlines(keepends=True)
    random.Random(0).shuffle(lines)  # every query comes back: the interleaved path
    (tmp_path / "run").write_text("".join(lines))
    (tmp_path / "qrels").write_text(
        "".join(f"{q} 0 {d} {r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    code = (
        "import sys; from membench.launch import main; rc = main(sys.argv[1:]); "
        "print('pandas imported:', 'pandas' in sys.modules, file=sys.stderr); sys.exit(rc)"
    )
    p = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "trec-eval",
            "--lenient",
            str(tmp_path / "qrels"),
            str(tmp_path / "run"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr[-2000:]
    assert "pandas imported: False" in p.stderr
    want = list(trec_eval(tmp_path / "qrels", tmp_path / "run", None, lenient=True))
    assert p.stdout.splitlines() == want and len(want) > 20


def test_strict_refuses_what_atof_and_atol_would_read(tmp_path, capsys):
    """By default scores and relevance are read as trec_eval reads them (C's atof, atol);
    --strict refuses such tokens, naming the file, line and field."""
    (tmp_path / "q").write_text("q1 0 a 0x10\nq1 0 b 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 inf t\n")
    assert main(["trec-eval", "-m", "map", str(tmp_path / "q"), str(tmp_path / "r")]) == 0
    assert capsys.readouterr().out == "map                   \tall\t1.0000\n"
    assert main(["trec-eval", "--strict", str(tmp_path / "q"), str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "q:1" in err and "field rel" in err and "atol" in err
    (tmp_path / "q").write_text("q1 0 a 0\nq1 0 b 1\n")
    assert main(["trec-eval", "--strict", str(tmp_path / "q"), str(tmp_path / "r")]) == 2
    err = capsys.readouterr().err
    assert "r:2" in err and "field score" in err and "Traceback" not in err


def test_integer_flags_past_a_c_long_are_clamped_as_trec_eval_reads_them(tmp_path, capsys):
    """-M and -l are C longs in trec_eval: 10^23 means every document (no traceback); a word
    that is not an integer is refused in one argparse line."""
    (tmp_path / "q").write_text("q1 0 a 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 2 t\nq1 Q0 b 2 1 t\n")
    big = "9" * 23
    assert (
        main(["trec-eval", "-m", "P.5", "-M", big, str(tmp_path / "q"), str(tmp_path / "r")]) == 0
    )
    assert capsys.readouterr().out == "P_5                   \tall\t0.2000\n"
    assert (
        main(["trec-eval", "-m", "P.5", "-l", big, str(tmp_path / "q"), str(tmp_path / "r")]) == 0
    )
    assert capsys.readouterr().out == "P_5                   \tall\t0.0000\n"
    with pytest.raises(SystemExit) as e:
        main(["trec-eval", "-M", "1e3", str(tmp_path / "q"), str(tmp_path / "r")])
    assert e.value.code != 0 and "expected an integer" in capsys.readouterr().err


def test_exit_statuses_of_the_command(tmp_path):
    """The installed command (``python -m membench``, as the ``membench`` script): a usage
    error exits 1 as trec_eval's does; a full disk under the output exits 4 with one line
    (trec_eval would exit 0 having lost it)."""
    import os
    import subprocess
    import sys

    (tmp_path / "q").write_text("q1 0 a 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 2 t\n")
    cmd = [sys.executable, "-m", "membench", "trec-eval"]
    files = [str(tmp_path / "q"), str(tmp_path / "r")]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    usage = subprocess.run([*cmd, "-x", *files], capture_output=True, text=True, env=env)
    assert usage.returncode == 1 and "Traceback" not in usage.stderr
    assert subprocess.run([*cmd, *files, "extra"], capture_output=True, env=env).returncode == 1
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [*cmd, "-q", *files], stdout=full, stderr=subprocess.PIPE, text=True, env=env
        )
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "disk full" in done.stderr
    (tmp_path / "x").write_text("q1 Q0 a x 2 t\n")
    strict = subprocess.run(
        [*cmd, "--strict", str(tmp_path / "q"), str(tmp_path / "x")],
        capture_output=True,
        text=True,
        env=env,
    )
    assert (
        strict.returncode == 2
        and "x:1" in strict.stderr
        and "field rank: not an integer: 'x'" in strict.stderr
    ), strict.stderr
    with open("/dev/full", "w") as full:  # through membench's full command line too
        done = subprocess.run(
            [sys.executable, "-m", "membench", "--quiet", "trec-eval", *files],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
    assert done.returncode == 4, done.stderr
    assert done.stderr.count("\n") == 1 and "disk full" in done.stderr


def test_exit_statuses_are_the_documented_constants(tmp_path, monkeypatch, capsys):
    """Every status trec-eval's own entry point returns is one of the named constants of
    docs/runs.md's table, membench's own (done, disk full, interrupted) those of
    membench/core/errors.py."""
    import errno

    from membench.core import errors
    from membench.trec import trec_eval as te

    assert (
        (te.EXIT_OK, te.EXIT_DISK_FULL, te.EXIT_INTERRUPTED)
        == (errors.EXIT_OK, errors.EXIT_DISK_FULL, errors.EXIT_INTERRUPTED)
        == (0, 4, 130)
    )
    (tmp_path / "q").write_text("q1 0 a 1\n")
    (tmp_path / "r").write_text("q1 Q0 a 1 2 t\n")
    files = [str(tmp_path / "q"), str(tmp_path / "r")]
    assert te.main(["-m", "P.5", *files]) == te.EXIT_OK
    capsys.readouterr()
    assert te.main(["-m", "P_5", *files]) == te.EXIT_ILLEGAL_MEASURE == 1
    cases = {
        KeyboardInterrupt(): te.EXIT_INTERRUPTED,
        OSError(errno.ENOSPC, "No space left on device", "/tmp/x"): te.EXIT_DISK_FULL,
        OSError(errno.EDQUOT, "Disk quota exceeded"): te.EXIT_DISK_FULL,
        OSError(errno.EACCES, "Permission denied", "/q"): te.EXIT_CANNOT_READ,
        MembenchError("refused"): te.EXIT_CANNOT_READ,
        BrokenPipeError(): te.EXIT_OK,
    }
    for exc, status in cases.items():

        def fail(a, out, exc=exc):
            raise exc

        monkeypatch.setattr(te, "_run", fail)
        monkeypatch.setattr("sys.stderr", __import__("io").StringIO())
        assert te.main(files) == status, exc
        monkeypatch.undo()
