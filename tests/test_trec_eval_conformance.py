"""trec_eval's own test files, with their expected outputs, as conformance tests of
``membench trec-eval``.

The files are trec_eval's (NIST's; not in this repository): its ``test/`` folder is found by
``bench/trec_eval_c.py`` (``$MEMBENCH_TREC_EVAL_SRC``: a trec_eval source tree or release
archive; a tree unpacked into ``$MEMBENCH_CACHE/trec_eval`` before; or pytrec_eval's source
distribution from the package index, when it bundles trec_eval). When none is there the tests
are skipped and say why (on this project's machines: the source distributions bundle no
trec_eval sources, their setup.py downloads them at build time).

Each case of trec_eval's ``make quicktest`` (its Makefile) whose options membench has is run
with ``--ties trec_eval --trec-eval-compat`` (trec_eval's ranking and reading), and every line
of trec_eval's expected output for a measure membench computes (num_q, num_ret, num_rel,
num_rel_ret, map, recip_rank, P_k, recall_k, ndcg_cut_k) must be printed, the same text:
``-q``, ``-c`` (on ``results.trunc``: queries missing from the run, 9 fields a line), measure
parameters, and the comment files of trec_eval 10. Cases needing options membench does not
have (``-M``, ``-l``, ``-R``, ``-Z``) are listed and skipped.

``test_the_harness_catches_a_difference`` runs the same comparison on a folder laid out as
trec_eval's, whose expected outputs are pytrec_eval's (trec_eval's C code), and checks that a
changed value is caught: the harness can fail.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from membench.cli import main
from membench.metrics.trec_eval import COUNTS, parse_measures

ROOT = Path(__file__).resolve().parents[1]
MEMBENCH_MEASURES = re.compile(r"^(num_q|num_ret|num_rel|num_rel_ret|map|recip_rank|"
                               r"P_\d+|recall_\d+|ndcg_cut_\d+)$")

# (expected output, qrels, run, trec_eval's options, membench's -m list): the quicktest lines
CASES = [
    ("out.test", "qrels.test", "results.test", [], None),
    ("out.test.a", "qrels.test", "results.test", ["-m", "all_trec"], None),
    ("out.test.aq", "qrels.test", "results.test", ["-m", "all_trec", "-q"], None),
    ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"], None),
    ("out.test.meas_params", "qrels.test", "results.test", ["-q"],
     ["P.5,7,3", "recall.20,2000", "ndcg_cut.10,20"]),
    ("out.comment.test", "qrels.comment.test", "results.comment.test", [], None),
]
NOT_RUN = {
    "out.test.aqcM": "-M100 (a cap on documents per topic): membench has no -M",
    "out.test.aql": "-l2 (relevance level) and relstring: membench has no -l",
    "out.test.prefs": "-R prefs: preference judgments",
    "out.test.qrels_prefs": "-R qrels_prefs: preference measures",
    "out.test.qrels_jg": "-R qrels_jg: judgment groups",
    "out.test.aqZ": "-Z: z-scores",
}


def _helper():
    spec = importlib.util.spec_from_file_location("trec_eval_c", ROOT / "bench" / "trec_eval_c.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def test_dir() -> Path:
    tree, why = _helper().source_tree()
    if tree is None:
        pytest.skip(f"trec_eval's test files are not available: {why}")
    if not (tree / "test").is_dir():
        pytest.skip(f"{tree} has no test/ folder")
    return tree / "test"


def expected_lines(path: Path) -> dict[tuple[str, str], str]:
    """(measure, qid) -> the value as trec_eval printed it, for membench's measures."""
    out = {}
    for line in path.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) != 3:
            continue
        name = parts[0].strip()
        if MEMBENCH_MEASURES.match(name):
            out[(name, parts[1])] = parts[2]
    return out


def membench_lines(capsys, qrels: Path, run: Path, opts: list[str],
                   measures: list[str] | None, names: set[str]) -> dict[tuple[str, str], str]:
    if measures is None:
        measures = sorted({re.sub(r"_(\d+)$", r".\1", n) if not n.startswith("num_")
                           else n for n in names})
    args = ["trec-eval", str(qrels), str(run), "--ties", "trec_eval", "--trec-eval-compat"]
    args += [o for o in opts if o in ("-q", "-c")]
    for m in measures:
        args += ["-m", m]
    assert main(args) == 0, capsys.readouterr().err
    out = {}
    for line in capsys.readouterr().out.splitlines():
        name, qid, value = line.split("\t")
        out[(name.strip(), qid)] = value
    return out


def compare(capsys, folder: Path, case) -> int:
    """membench's lines against the expected ones of ``case``; returns how many were
    compared (an assertion names the first difference)."""
    out, qrels, run, opts, measures = case
    want = expected_lines(folder / out)
    assert want, f"{out}: no line of a membench measure"
    if measures is not None:
        mine = set(parse_measures(measures))
        want = {k: v for k, v in want.items() if k[0] in mine}
    got = membench_lines(capsys, folder / qrels, folder / run, opts, measures,
                         {k[0] for k in want})
    missing = sorted(set(want) - set(got))
    assert not missing, f"{out}: membench printed no line for {missing[:5]}"
    wrong = [(k, want[k], got[k]) for k in want if got[k] != want[k]]
    assert not wrong, f"{out}: {len(wrong)} lines differ, first: {wrong[:5]}"
    # no extra per-query lines (a query trec_eval does not evaluate)
    extra = sorted(k for k in set(got) - set(want) if k[0] in {n for n, _ in want})
    assert not extra, f"{out}: lines trec_eval does not print: {extra[:5]}"
    return len(want)


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_trec_eval_test_files(test_dir, capsys, case):
    needed = [case[0], case[1], case[2]]
    absent = [n for n in needed if not (test_dir / n).is_file()]
    if absent:
        pytest.skip(f"this trec_eval version has no {', '.join(absent)}")
    assert compare(capsys, test_dir, case) > 0


def test_the_cases_not_run_are_the_options_membench_lacks(test_dir):
    for name, why in NOT_RUN.items():
        assert why
    assert {c[0] for c in CASES}.isdisjoint(NOT_RUN)


def test_the_harness_catches_a_difference(tmp_path, capsys):
    """The comparison on a trec_eval-like folder whose expected output is pytrec_eval's
    (trec_eval 9.0.8's C code), with trec_eval's printf formats; then one value changed."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    import random
    rng = random.Random(3)
    qrels_lines, run_lines = [], []
    qrels: dict[str, dict[str, int]] = {}
    for i in range(12):
        q = f"{300 + i}"
        docs = [f"D{rng.randrange(400)}-{j}" for j in range(rng.randint(5, 60))]
        judged = {d: rng.choice([0, 1, 1, 2]) for d in rng.sample(docs, min(len(docs), 8))}
        judged[f"X{i}"] = 1                                  # relevant, never retrieved
        qrels[q] = judged
        qrels_lines += [f"{q} 0 {d} {r}\n" for d, r in judged.items()]
        if i == 11:
            continue                                         # judged, missing from the run
        for rank, d in enumerate(docs, 1):
            score = round(rng.uniform(0, 20), 3) if i % 3 else float(rng.randrange(4))
            run_lines.append(f"{q}\tQ0\t{d}\t{rank}\t{score}\tSTANDARD extra field\n")
    (tmp_path / "qrels.test").write_text("".join(qrels_lines))
    (tmp_path / "results.trunc").write_text("".join(run_lines))
    run = pytrec_eval.parse_run(" ".join(x.split()[:6]) + "\n" for x in run_lines)
    names = ["num_ret", "num_rel", "num_rel_ret", "map", "recip_rank", "P_5", "P_10",
             "recall_10", "recall_100", "ndcg_cut_10"]
    per = pytrec_eval.RelevanceEvaluator(qrels, set(names)).evaluate(run)
    for q, judged in qrels.items():                          # -c: the empty ranking
        per.setdefault(q, {n: 0.0 for n in names})["num_rel"] = \
            sum(1 for r in judged.values() if r >= 1)

    def fmt(name, qid, v):
        return f"{name:<22}\t{qid}\t{int(v)}" if name in COUNTS else \
            f"{name:<22}\t{qid}\t{v:6.4f}"

    lines = [fmt(n, q, per[q][n]) for q in sorted(per) for n in names]
    lines += [fmt("num_q", "all", len(per))]
    lines += [fmt(n, "all", sum(per[q][n] for q in per) / (1 if n in COUNTS else len(per)))
              for n in names]
    (tmp_path / "out.test.aqc").write_text("\n".join(lines) + "\n")
    case = ("out.test.aqc", "qrels.test", "results.trunc", ["-m", "all_trec", "-q", "-c"],
            None)
    assert compare(capsys, tmp_path, case) == len(lines)
    changed = lines[:]
    changed[3] = changed[3][:-1] + ("1" if changed[3][-1] != "1" else "2")
    (tmp_path / "out.test.aqc").write_text("\n".join(changed) + "\n")
    with pytest.raises(AssertionError, match="lines differ"):
        compare(capsys, tmp_path, case)


def test_the_binary_is_built_once_from_given_sources(tmp_path, monkeypatch):
    """bench/trec_eval_c.py builds trec_eval with the sources' own Makefile, from a tree or
    a release archive, into $MEMBENCH_CACHE (keyed by the sources), and says why when it
    cannot (a path that is no trec_eval tree)."""
    import shutil
    import subprocess
    import tarfile
    if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))):
        pytest.skip("no make or C compiler")
    helper = _helper()
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MEMBENCH_TREC_EVAL_SRC", raising=False)
    monkeypatch.delenv("MEMBENCH_TREC_EVAL", raising=False)
    tree = tmp_path / "trec_eval-0.0"
    (tree / "test").mkdir(parents=True)
    (tree / "trec_eval.c").write_text('#include <stdio.h>\nint main(void) '
                                      '{ puts("stand-in"); return 0; }\n')
    (tree / "Makefile").write_text("trec_eval: trec_eval.c\n\tcc -o trec_eval trec_eval.c\n")
    archive = tmp_path / "trec_eval-0.0.tar.gz"
    with tarfile.open(archive, "w:gz") as t:
        t.add(tree, arcname="trec_eval-0.0")
    exe, why = helper.binary(src=str(archive))
    assert exe is not None, why
    assert str(exe).startswith(str(tmp_path / "cache")) and "built from" in why
    assert subprocess.run([exe], capture_output=True, text=True).stdout == "stand-in\n"
    again, why2 = helper.binary(src=str(archive))
    assert again == exe and exe.stat().st_mtime_ns == again.stat().st_mtime_ns
    found, _ = helper.source_tree(use_index=False)            # unpacked before: found again
    assert found is not None and (found / "test").is_dir()
    (tmp_path / "empty").mkdir()
    none, why3 = helper.binary(src=str(tmp_path / "empty"))   # a folder without trec_eval.c
    assert none is None and "no trec_eval source tree" in why3
