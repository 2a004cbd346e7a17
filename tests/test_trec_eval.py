"""``membench trec-eval`` against pytrec_eval (trec_eval), line by line: graded qrels, grade-0
judgments, queries without hits, run queries without judgments, tied scores (equal, and equal
only as 32-bit floats); and the documented difference of membench's tie rule."""

from __future__ import annotations

import random

import numpy as np
import pytest

from membench.cli import main
from membench.metrics.trec_eval import parse_measures, trec_eval, trec_eval_values

pytrec_eval = pytest.importorskip("pytrec_eval")

MEASURES = ["num_q", "num_ret", "num_rel", "num_rel_ret", "map", "recip_rank", "P.5,10",
            "recall.5,10,100", "ndcg_cut.3,10"]
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
        if kind != 7:                          # q7, q15, ...: judged, never retrieved
            for rank, d in enumerate(docs, 1):
                if kind == 3:                  # exact ties
                    s = float(rng.randrange(4))
                elif kind == 5:                # distinct doubles, equal as float32
                    s = 1.0 + rng.randrange(3) * 1e-9
                else:
                    s = round(rng.uniform(0, 50), 6)
                run_lines.append(f"{qid} Q0 {d} {rank} {s!r} tag\n")
        if kind == 6:                          # retrieved, judged with grade 0 only
            judged = {d: 0 for d in docs[:3]} or {"nothing": 0}
        else:
            pool = docs + [f"x{j}" for j in range(5)]
            judged = {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(pool, min(len(pool),
                                                                                  rng.randint(1, 12)))}
        qrels_lines += [f"{qid} 0 {d} {r}\n" for d, r in judged.items()]
    run_lines += [f"zz{k} Q0 d{k} 1 1.0 tag\n" for k in range(3)]   # not in the qrels
    rng.shuffle(run_lines) if seed % 2 else None                   # interleaved queries too
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
    lines = [trec_line(n, q, per[q][n]) for q in sorted(per) for n in trec_names]
    n = len(qr) if complete else len(per)
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
    got = list(trec_eval(qrels_p, run_p, MEASURES, per_query=True, ties="trec_eval"))
    assert got == want
    _, rows, _ = trec_eval_values(qrels_p, run_p, MEASURES, ties="trec_eval")
    assert set(rows) == set(per)
    for q, values in rows.items():
        for name, v in values.items():
            assert v == pytest.approx(per[q][name], abs=1e-12), (q, name)
    # what the world must exercise
    assert any(values["num_rel"] == 0 and values["num_ret"] > 0 for values in rows.values())
    assert "q7" not in rows and "zz0" not in rows
    complete = list(trec_eval(qrels_p, run_p, MEASURES, complete=True, ties="trec_eval"))
    assert complete == reference(run_p, qrels_p, complete=True)[1][-len(NAMES):]


def test_membench_tie_rule_differs_where_documented(tmp_path):
    """Two documents tie at 1.0; the system wrote "a" first (rank 1), "b" is relevant.
    membench keeps the system's order (b at rank 2: recip_rank 0.5); trec_eval orders the tie
    by docid descending (b first: 1.0), and so does ``--ties trec_eval``."""
    (tmp_path / "qrels").write_text("q 0 b 1\n")
    (tmp_path / "run").write_text("q Q0 a 1 1.0 t\nq Q0 b 2 1.0 t\n")
    ours = list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"]))
    theirs = list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"],
                            ties="trec_eval"))
    assert ours == ["recip_rank            \tall\t0.5000"]
    assert theirs == ["recip_rank            \tall\t1.0000"]
    # equal as 32-bit floats only: membench sees 1.0000000001 > 1.0, trec_eval a tie
    (tmp_path / "run").write_text("q Q0 a 1 1.0000000001 t\nq Q0 b 2 1.0 t\n")
    assert list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"],
                          ties="trec_eval")) == theirs
    assert list(trec_eval(tmp_path / "qrels", tmp_path / "run", ["recip_rank"])) == ours


def test_membench_ties_equal_trec_eval_on_tie_free_runs(tmp_path):
    rng = random.Random(5)
    run = "".join(f"q{i} Q0 d{j} {r} {1000 - r * 1.5} t\n" for i in range(10)
                  for r, j in enumerate(rng.sample(range(100), 30), 1))
    qrels = "".join(f"q{i} 0 d{j} {rng.choice([0, 1, 2])}\n" for i in range(12)
                    for j in rng.sample(range(100), 8))
    (tmp_path / "run").write_text(run)
    (tmp_path / "qrels").write_text(qrels)
    assert list(trec_eval(tmp_path / "qrels", tmp_path / "run", MEASURES, per_query=True)) == \
        reference(tmp_path / "run", tmp_path / "qrels")[1]


def test_measure_names():
    assert parse_measures(["recall.10,100", "map", "recall_10", "P_5"]) == \
        ["recall_10", "recall_100", "map", "P_5"]
    assert parse_measures(["ndcg_cut"])[:2] == ["ndcg_cut_5", "ndcg_cut_10"]


def test_cli(tmp_path, capsys):
    (tmp_path / "qrels").write_text("q1 0 a 1\nq1 0 b 0\nq2 0 c 2\n")
    (tmp_path / "run").write_text("q1 Q0 b 1 2.0 t\nq1 Q0 a 2 1.0 t\nq2 Q0 c 1 5 t\n")
    assert main(["trec-eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m",
                 "recip_rank", "-m", "num_ret", "-q"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == ["recip_rank            \tq1\t0.5000", "num_ret               \tq1\t2",
                   "recip_rank            \tq2\t1.0000", "num_ret               \tq2\t1",
                   "recip_rank            \tall\t0.7500", "num_ret               \tall\t3"]
    assert main(["trec-eval", str(tmp_path / "qrels"), str(tmp_path / "run"), "-m", "bpref"]) == 2
    assert "unknown measure 'bpref'" in capsys.readouterr().err
    (tmp_path / "bad").write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b x 1.0 t\n")
    assert main(["trec-eval", str(tmp_path / "qrels"), str(tmp_path / "bad")]) == 2
    err = capsys.readouterr().err
    assert "bad:2" in err and "rank" in err and "Traceback" not in err


def test_values_are_not_rounded(tmp_path):
    (tmp_path / "qrels").write_text("q 0 a 1\nq 0 b 1\nq 0 c 1\n")
    (tmp_path / "run").write_text("q Q0 x 1 3 t\nq Q0 a 2 2 t\nq Q0 b 3 1 t\n")
    _, rows, total = trec_eval_values(tmp_path / "qrels", tmp_path / "run", ["map", "P.3"])
    assert rows["q"]["map"] == pytest.approx((1 / 2 + 2 / 3) / 3, abs=0)
    assert total["P_3"] == 2 / 3
    assert np.isclose(rows["q"]["P_3"], 2 / 3)
