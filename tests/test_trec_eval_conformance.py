"""``membench trec-eval`` against trec_eval 10.0 itself, line for line.

trec_eval's source tree is found by ``bench/trec_eval_c.py`` (``$MEMBENCH_TREC_EVAL_SRC``, else
``../shared/tools/trec_eval`` beside the checkout) and built once into the cache, keyed by
the tree's digest. Nothing here skips: without the sources or a C compiler the tests fail,
saying why (CI has both).

* **trec_eval's own test directory**: every case of its Makefile's ``quicktest`` target, read
  from the Makefile. The C binary must reproduce the expected file (its own quicktest); then
  membench, with the same options, must print the same file, line for line, when it computes
  every measure asked. A case asking for what membench does not compute (``-m all_trec``,
  ``relstring``, ``-R prefs``, ``-Z``, ...) must be refused with one line naming it, and the
  lines of the measures membench does compute must still be the expected ones, in order.
* **a generated run** of 10,000 queries with tied scores (exact, and equal only as 32-bit
  floats), comments, blank lines, extra fields, graded and negative judgments, queries judged
  and never retrieved and retrieved and never judged, under every option membench has
  (``-q``, ``-c``, ``-l``, ``-M``, ``-J`` and their combinations, every measure): the same
  output as the binary, line for line.
* **refusals**: a docid listed twice for a query, an empty run and a qrels query missing from
  the run without ``-c`` are refused by both, membench with a located message.
"""

from __future__ import annotations

import importlib.util
import random
import re
import shlex
import subprocess
from pathlib import Path

import pytest

from membench.cli import main
from membench.trec.trec_eval import MEASURES, NICKNAMES, NOT_IMPLEMENTED, parse_request

ROOT = Path(__file__).resolve().parents[1]


def _helper():
    spec = importlib.util.spec_from_file_location("trec_eval_c", ROOT / "bench" / "trec_eval_c.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def tree() -> Path:
    tree, why = _helper().source_tree(use_index=False)
    if tree is None or not (tree / "test").is_dir():
        pytest.fail(f"trec_eval's source tree is needed (CI has ../shared/tools/trec_eval): {why}")
    return tree


@pytest.fixture(scope="module")
def binary(tree) -> Path:
    exe, why = _helper().binary(src=str(tree))
    if exe is None:
        pytest.fail(f"trec_eval could not be built: {why}")
    return exe


def quicktest_cases(tree: Path) -> list[tuple[list[str], str]]:
    """(trec_eval's arguments, expected output file) for each line of its quicktest target."""
    text = (tree / "Makefile").read_text()
    body = text.split("\nquicktest:", 1)[1].split("\n\n", 1)[0]
    cases = []
    for line in body.splitlines():
        m = re.match(r"\s*\./trec_eval (.*?)\s*\|\s*diff - (\S+)", line)
        if m:
            cases.append((shlex.split(m.group(1)), m.group(2)))
    return cases


def run_membench(capsys, args: list[str]) -> tuple[int, str, str]:
    code = main(["trec-eval", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def _in_tree(tree: Path, args: list[str]) -> list[str]:
    return [str(tree / a) if a.startswith("test/") else a for a in args]


def _measure_args(args: list[str]) -> list[str]:
    """The -m values of trec_eval's arguments (``-m x`` and ``-mx``)."""
    out, i = [], 0
    while i < len(args):
        if args[i] == "-m":
            out.append(args[i + 1])
            i += 2
            continue
        if args[i].startswith("-m"):
            out.append(args[i][2:])
        i += 1
    return out


def _without_measures(args: list[str]) -> list[str]:
    out, i = [], 0
    while i < len(args):
        if args[i] == "-m":
            i += 2
            continue
        if not args[i].startswith("-m"):
            out.append(args[i])
        i += 1
    return out


def _computed(spec: str) -> list[str]:
    """The part of one -m value membench computes (a nickname: its measures membench has)."""
    name = spec.partition(".")[0]
    if name in NICKNAMES:
        return [m for m in NICKNAMES[name] if m in MEASURES]
    return [spec] if name in MEASURES else []


def _line_measure(line: str) -> str:
    return line.split("\t")[0].strip()


def _base(name: str) -> str:
    for m in MEASURES:
        if name == m or (name.startswith(m + "_") and MEASURES[m].kind != "none"):
            return m
    return name


def test_the_quicktest_cases_are_all_read(tree):
    cases = quicktest_cases(tree)
    assert len(cases) >= 14, cases  # trec_eval 10.0: 15 lines
    assert {c[1] for c in cases} >= {
        "test/out.test",
        "test/out.test.aqc",
        "test/out.test.aql",
        "test/out.test.aqcM",
        "test/out.test.prefs",
    }


@pytest.mark.parametrize("case", range(15), ids=[f"quicktest-{i}" for i in range(15)])
def test_trec_eval_test_directory(tree, binary, capsys, case):
    cases = quicktest_cases(tree)
    if case >= len(cases):
        pytest.fail(
            f"trec_eval's quicktest has {len(cases)} cases; this test expects 15: update the range"
        )
    args, expected = cases[case]
    args = _in_tree(tree, args)
    want = (tree / expected).read_text()
    # the binary reproduces its own expected output (its quicktest)
    got_c = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    assert got_c.returncode == 0 and got_c.stdout == want, f"trec_eval itself: {args}"
    specs = _measure_args(args)
    lacking = [s for s in specs if s.partition(".")[0] not in MEASURES]
    formats = any(a in ("-R", "-Z") for a in args)
    if not lacking and not formats:
        code, out, err = run_membench(capsys, args)
        assert code == 0, err
        assert out == want, f"{expected}: membench differs from trec_eval"
        return
    # refused, in one line naming what membench lacks
    code, out, err = run_membench(capsys, args)
    assert code == 2 and out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    if formats:
        assert "-R" in err or "-Z" in err or "unrecognized" in err, err
        return
    name = lacking[0].partition(".")[0]
    assert name in err, err
    # the measures membench does compute: the expected lines, in trec_eval's order
    keep = [m for s in specs for m in _computed(s)]
    assert keep, f"{expected}: no measure membench computes"
    mine = _without_measures(args) + [x for m in keep for x in ("-m", m)]
    code, out, err = run_membench(capsys, mine)
    assert code == 0, err
    computed = {m.partition(".")[0] for m in keep}
    wanted = [ln for ln in want.splitlines() if _base(_line_measure(ln)) in computed]
    assert wanted, expected
    assert out.splitlines() == wanted, f"{expected}: membench's lines differ"


# --------------------------------------------------------------------------- generated


def generated(tmp_path: Path, n_queries: int = 10_000, seed: int = 7) -> tuple[Path, Path]:
    rng = random.Random(seed)
    run, qrels = [], []
    for i in range(n_queries):
        qid = f"{i:05d}" if i % 3 else f"q{i}"
        kind = i % 11
        docs = [f"D{rng.randrange(3000)}-{j}" for j in range(rng.randint(1, 40))]
        if kind != 4:  # judged, never retrieved
            for r, d in enumerate(docs, 1):
                if kind == 1:  # exact ties
                    s = f"{rng.randrange(4)}"
                elif kind == 2:  # equal as 32-bit floats only
                    s = f"{1.0 + rng.randrange(3) * 1e-9!r}"
                elif kind == 3:
                    s = f"{rng.randrange(5) * 0.5}"
                else:
                    s = f"{rng.uniform(-5, 30):.6f}"
                extra = " extra fields" if kind == 5 else ""
                run.append(f"{qid}\tQ0\t{d}\t{r}\t{s}\trun{kind}{extra}\n")
        if kind == 6:
            continue  # retrieved, never judged
        pool = docs + [f"X{i}-{j}" for j in range(rng.randint(0, 6))]
        for d in rng.sample(pool, min(len(pool), rng.randint(1, 15))):
            qrels.append(f"{qid} 0 {d} {rng.choice([-1, 0, 0, 1, 1, 2, 3])}\n")
    rng.shuffle(run[: len(run) // 3])  # a part interleaved
    run.insert(len(run) // 2, "# a comment\n")
    run.insert(len(run) // 3, "\n")
    rp, qp = tmp_path / "run.gen", tmp_path / "qrels.gen"
    rp.write_text("".join(run))
    qp.write_text("".join(qrels))
    return rp, qp


EVERY = [x for m in MEASURES for x in ("-m", m)]
OPTIONS = [
    ["-c"],
    ["-q", "-c", "-n"],
    ["-q", "-c"],
    ["-c", "-l2"],
    ["-c", "-M", "5"],
    ["-c", "-J"],
    ["-q", "-c", "-J", "-l", "0", "-M", "12"],
    ["-c", "-l3", "-m", "P.1,2,3", "-m", "iprec_at_recall..33,.5,.9"],
]


@pytest.fixture(scope="module")
def gen(tmp_path_factory):
    return generated(tmp_path_factory.mktemp("gen"))


@pytest.mark.parametrize("opts", OPTIONS, ids=[" ".join(o) or "default" for o in OPTIONS])
def test_a_generated_run_under_every_option(binary, gen, capsys, opts):
    rp, qp = gen
    every = "-m" not in opts and opts not in (["-c"], ["-q", "-c", "-n"])
    args = [*opts, *(EVERY if every else []), str(qp), str(rp)]
    want = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    assert want.returncode == 0, want.stderr
    code, out, err = run_membench(capsys, args)
    assert code == 0, err
    a, b = want.stdout.splitlines(), out.splitlines()
    diff = [(x, y) for x, y in zip(a, b) if x != y]
    assert len(a) == len(b) and not diff, f"{len(a)} vs {len(b)} lines; first: {diff[:3]}"
    assert len(a) >= 6


def test_the_generated_run_has_what_it_claims(gen):
    rp, qp = gen
    text = rp.read_text()
    assert "\t0\trun1" in text and "extra fields" in text and "# a comment" in text
    assert " -1\n" in qp.read_text()


# --------------------------------------------------------------------------- refusals


def _both(binary, capsys, qrels: Path, run: Path, *opts) -> tuple[int, int, str]:
    c = subprocess.run(
        [str(binary), *opts, str(qrels), str(run)], capture_output=True, text=True, check=False
    )
    code, out, err = run_membench(capsys, [*opts, str(qrels), str(run)])
    assert "Traceback" not in err
    return c.returncode, code, err


def test_the_three_refusals_match(binary, tmp_path, capsys):
    q = tmp_path / "qrels"
    q.write_text("1 0 a 1\n1 0 b 0\n2 0 c 1\n")
    dup = tmp_path / "dup"
    dup.write_text("1 Q0 a 1 2.0 r\n1 Q0 b 2 1.5 r\n2 Q0 c 1 1 r\n1 Q0 a 3 1.0 r\n")
    c, m, err = _both(binary, capsys, q, dup)
    assert c == m == 4 and "dup:4" in err and "'a'" in err and "line 1" in err
    # -M 2 cuts the ranking before the second copy: neither refuses
    c, m, err = _both(binary, capsys, q, dup, "-M", "2")
    assert c == 0 and m == 0
    empty = tmp_path / "empty"
    empty.write_text("")
    c, m, err = _both(binary, capsys, q, empty)
    assert c == m == 2 and "empty" in err and "no run line" in err
    comments = tmp_path / "comments"
    comments.write_text("# nothing but a comment\n\n")
    c, m, err = _both(binary, capsys, q, comments)
    assert c == m == 4 and "no run line" in err  # its first qrels query is not found
    part = tmp_path / "part"
    part.write_text("1 Q0 a 1 2.0 r\n")
    c, m, err = _both(binary, capsys, q, part)
    assert c == m == 4 and "'2'" in err and "-c" in err
    c, m, err = _both(binary, capsys, q, part, "-c")
    assert c == 0 and m == 0
    # --lenient: membench evaluates all three (trec_eval 9's and pytrec_eval's way)
    for run in (dup, part):
        assert main(["trec-eval", "--lenient", str(q), str(run)]) == 0
    capsys.readouterr()


def test_unimplemented_measures_are_refused_by_name(capsys):
    for name in NOT_IMPLEMENTED[:5]:
        assert main(["trec-eval", "-m", name, "q", "r"]) == 2
        assert name in capsys.readouterr().err
    assert main(["trec-eval", "-m", "all_trec", "q", "r"]) == 2
    err = capsys.readouterr().err
    assert "relstring" in err and "all_trec" in err
    assert parse_request(["P.10,5", "P.1", "map"]).names() == ["map", "P_5", "P_10"]


def test_the_binary_is_built_once_from_given_sources(tmp_path, monkeypatch):
    """bench/trec_eval_c.py builds trec_eval with the sources' own Makefile, from a tree or
    a release archive, into $MEMBENCH_CACHE (keyed by the sources), and says why when it
    cannot (a path that is no trec_eval tree)."""
    import shutil
    import tarfile

    if not (shutil.which("make") and (shutil.which("cc") or shutil.which("gcc"))):
        pytest.fail("no make or C compiler: trec_eval cannot be built")
    helper = _helper()
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("MEMBENCH_TREC_EVAL_SRC", raising=False)
    monkeypatch.delenv("MEMBENCH_TREC_EVAL", raising=False)
    tree = tmp_path / "trec_eval-0.0"
    (tree / "test").mkdir(parents=True)
    (tree / "trec_eval.c").write_text(
        '#include <stdio.h>\nint main(void) { puts("stand-in"); return 0; }\n'
    )
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
    (tmp_path / "empty").mkdir()
    none, why3 = helper.binary(src=str(tmp_path / "empty"))  # a folder without trec_eval.c
    assert none is None and "no trec_eval source tree" in why3


# --------------------------------------------------------------------------- single cases

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 2\n1 0 d 1\n2 0 a 1\n2 0 x 1\n"
RUN = "1 Q0 a 1 3 r\n1 Q0 b 2 2 r\n1 Q0 c 3 1 r\n1 Q0 z 4 0.5 r\n2 Q0 a 1 1 r\n2 Q0 b 2 0.5 r\n"
CASES = {
    # parameterised measures print and use their parameters (set_F_0.5, not set_F)
    "set_F.0.5": (QRELS, RUN, ["-q", "-m", "set_F.0.5"]),
    "set_F twice": (QRELS, RUN, ["-m", "set_F", "-m", "set_F.2,3", "-m", "set_F.9"]),
    "set_F.abc": (QRELS, RUN, ["-m", "set_F.abc"]),
    "cutoffs": (
        QRELS,
        RUN,
        ["-m", "P.5,10", "-m", "ndcg_cut.5", "-m", "success.1", "-m", "recall.2x,1"],
    ),
    "Rprec_mult": (QRELS, RUN, ["-q", "-m", "Rprec_mult", "-m", "Rprec_mult.0.1,0.5,3,-1,x"]),
    "Rprec_mult -M -J": (QRELS, RUN, ["-q", "-M", "1", "-J", "-m", "Rprec_mult.0.7,1.9"]),
    "recall levels by atof": (QRELS, RUN, ["-q", "-m", "iprec_at_recall.1.5,-0.5,abc"]),
    "P_5 is illegal": (QRELS, RUN, ["-m", "P_5"]),
    "set_F_0.5 is illegal": (QRELS, RUN, ["-m", "set_F_0.5"]),
    "duplicate levels": (QRELS, RUN, ["-m", "iprec_at_recall.0.5,.5"]),
    # trec_eval's refusals and their exit statuses
    "illegal measure": (QRELS, RUN, ["-m", "nosuch"]),
    "no parameter": (QRELS, RUN, ["-m", "P."]),
    "empty qrels": ("", RUN, []),
    # a docid repeated in a query without qrels: never evaluated, so never refused
    "duplicate, unjudged query": (QRELS, RUN + "9 Q0 k 1 1 r\n9 Q0 k 2 1 r\n", ["-m", "map"]),
    "duplicate, judged query": (QRELS, RUN + "2 Q0 a 3 0.1 r\n", ["-m", "map"]),
    # relevance as C's atol reads it: 0x10 is 0, 1.5 is 1, 2abc is 2
    "relevance 0x10": (
        "1 0 a 0x10\n1 0 b 1\n",
        "1 Q0 a 1 3 r\n1 Q0 b 2 2 r\n",
        ["-m", "ndcg_cut.5", "-m", "map"],
    ),
    "relevance 1.5": (
        "1 0 a 1.5\n1 0 b 2abc\n1 0 c +3\n1 0 d -\n",
        RUN.replace("z", "d"),
        ["-q", "-m", "ndcg_cut.5", "-m", "map", "-m", "num_rel"],
    ),
    # scores as C's atof reads them; the rank column is never read
    "scores atof": (
        QRELS,
        "1 Q0 a 1 inf r\n1 Q0 b 2 0x1p3 r\n1 Q0 c 3 1.5abc r\n"
        "1 Q0 d x 1e400 r\n2 Q0 a 1 -inf r\n2 Q0 x 2 -1e400 r\n"
        "2 Q0 y 3 .5e r\n2 Q0 z 4 0X.8P1 r\n",
        ["-q", "-m", "recip_rank", "-m", "map", "-m", "P.1,2,3"],
    ),
    # tied scores: docids that are prefixes of each other, past 8 and 64 bytes, not ASCII
    "ties by docid": (
        "1 0 ab 1\n1 0 abcdefgh 1\n1 0 abcdefghi 2\n1 0 %(l)sb 1\n2 0 é 1\n2 0 ~ 1\n",
        "1 Q0 a 1 1 r\n1 Q0 ab 2 1 r\n1 Q0 abcdefgh 3 1 r\n1 Q0 abcdefghi 4 1 r\n"
        "1 Q0 %(l)sa 5 1 r\n1 Q0 %(l)sb 6 1 r\n1 Q0 %(l)s 7 1 r\n2 Q0 é 1 0 r\n"
        "2 Q0 e 2 0 r\n2 Q0 ~ 3 0 r\n2 Q0 z 4 0 r\n" % {"l": "L" * 70},
        ["-q", "-m", "recip_rank", "-m", "ndcg_cut.1,2,3,4,5,6,7"],
    ),
    "scores nan": (
        QRELS,
        "1 Q0 a 1 nan r\n1 Q0 b 2 NaN r\n1 Q0 c 3 1 r\n1 Q0 d 4 2 r\n"
        "1 Q0 e 5 -nan r\n1 Q0 f 6 0.5 r\n1 Q0 g 7 3 r\n2 Q0 a 1 nan r\n"
        "2 Q0 x 2 1 r\n",
        ["-q", "-m", "recip_rank", "-m", "map", "-m", "ndcg_cut.1,2,3,4,5,6,7"],
    ),
}


@pytest.mark.parametrize("name", list(CASES))
def test_single_cases_match(binary, tmp_path, capsys, name):
    """Output and exit status the binary's, case by case."""
    qrels, run, args = CASES[name]
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text(qrels)
    r.write_text(run)
    want = subprocess.run(
        [str(binary), *args, str(q), str(r)], capture_output=True, text=True, check=False
    )
    code, out, err = run_membench(capsys, [*args, str(q), str(r)])
    assert (code, out) == (want.returncode, want.stdout), (err, want.stderr)
    assert "Traceback" not in err and (code == 0) == (err == ""), err


def test_nan_scores_in_a_generated_run(binary, tmp_path, capsys):
    """Queries mixing NaN, tied and distinct scores: trec_eval's comparator takes a NaN for
    equal to every score, so the order is glibc qsort's (a merge sort), repeated exactly."""
    rng = random.Random(11)
    run, qrels = [], []
    for i in range(300):
        docs = rng.sample(range(60), rng.randint(1, 25))
        for r, d in enumerate(docs, 1):
            s = rng.choice(["nan", "-nan", "1", "2", f"{rng.random():.3f}", "inf"])
            run.append(f"q{i} Q0 D{d} {r} {s} t\n")
            if rng.random() < 0.4:
                qrels.append(f"q{i} 0 D{d} {rng.choice([0, 1, 2])}\n")
        qrels.append(f"q{i} 0 X{i} 1\n")
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text("".join(qrels))
    r.write_text("".join(run))
    args = ["-q", "-m", "recip_rank", "-m", "map", "-m", "ndcg_cut.3,10", str(q), str(r)]
    want = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    code, out, err = run_membench(capsys, args)
    assert want.returncode == code == 0, (err, want.stderr)
    assert out == want.stdout


@pytest.mark.parametrize("layout", ["sorted", "shards", "spilled"])
def test_tied_scores_ordered_by_docid_in_every_layout(
    binary, tmp_path, capsys, monkeypatch, layout
):
    """Two-decimal scores (most lines tied) broken by docid descending, as trec_eval does,
    with docids of 1 to 70 bytes sharing long prefixes (one piece holds a docid past 64
    bytes: its docids are read again from the file, the others are ranked from the words
    kept per line), repeated docids in unjudged queries, pieces of 4 KiB; the lines in query
    order, as 4 shards concatenated, and past the held-lines bound (grouped on disk)."""
    import membench.trec.read as read

    rng = random.Random(5)
    lines, qrels = [], []
    for i in range(400):
        docs = set()
        for _ in range(rng.randint(1, 60)):
            n = rng.choice([1, 3, 8, 9, 16, 17, 30]) if i != 123 else 70
            docs.add(("msmarco_passage_" * 5)[: max(0, n - 3)] + f"{rng.randrange(999):03d}")
        for d in docs:
            lines.append((f"q{i}", d, f"{rng.randrange(8) / 4:.2f}"))
            if rng.random() < 0.3:
                qrels.append(f"q{i} 0 {d} {rng.choice([0, 1, 2])}\n")
        qrels.append(f"q{i} 0 none{i} 1\n")
    lines += [("unjudged", "same", "1.00"), ("unjudged", "same", "1.00")]
    if layout == "sorted":
        text = [f"{q} Q0 {d} 1 {s} t\n" for q, d, s in lines]
    else:
        shards = [[], [], [], []]
        for ln in lines:
            shards[rng.randrange(4)].append(ln)
        text = [f"{q} Q0 {d} 1 {s} t\n" for sh in shards for q, d, s in sh]
    q, r = tmp_path / "qrels", tmp_path / "run"
    q.write_text("".join(qrels))
    r.write_text("".join(text))
    monkeypatch.setattr(read, "CHUNK_BYTES", 4096)
    if layout == "spilled":
        monkeypatch.setattr(read, "MAX_HELD_BYTES", 64 << 10)
    args = [
        "-q",
        "-m",
        "recip_rank",
        "-m",
        "map",
        "-m",
        "ndcg_cut.1,3,10",
        "-m",
        "P.1,2",
        str(q),
        str(r),
    ]
    want = subprocess.run([str(binary), *args], capture_output=True, text=True, check=False)
    code, out, err = run_membench(capsys, args)
    assert want.returncode == code == 0, (err, want.stderr)
    assert out == want.stdout
