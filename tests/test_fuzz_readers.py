"""Property-based fuzzing (hypothesis) of every reader of a file someone else may have written:
set files (records, items), coverage.json, atoms.jsonl, run.jsonl lines, meta.json, TREC runs
and qrels, cartridge files, calibration files, PROVENANCE.jsonl, the manifest and the lock,
the numeric flags of every command, plus two whole paths that read several files
(``validate_sets`` over a sets folder, ``metrics_for_run_dir`` over a run directory).

The invariant: a reader returns a value or raises :class:`MembenchError` (``InputError``: file,
line, field); never any other exception. The vectorised TREC reader
(:func:`membench.trec.read_trec_run`) must moreover agree with the plain line-by-line parse
(:func:`membench.run.importer.read_trec_lines` and the ranking rule) on every line's rank, or
both must fail with a located error.

Inputs are drawn three ways: bytes mutated from a valid example (bit flips, cuts, inserted
tokens such as ``NaN``, ``\\xff``, a NUL, a 5,000-digit integer, 50,000 open brackets, a BOM,
a repeated key), valid examples with one field replaced by an arbitrary JSON value (or removed,
or an extra one added), and arbitrary bytes. Profiles: ``ci`` (the default, derandomised so CI
is repeatable) and ``long`` (10x the examples, random; ``make fuzz`` or ``MEMBENCH_FUZZ=long``).
Figures are in docs/robustness.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path

import minisets as ms
import pytest
from hostile_world import write_world
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench.core.errors import InputError, MembenchError
from membench.core.jsonl import dumps, iter_json_lines, parse_model
from membench.core.paths import BENCH_DIR, MANIFEST_PATH

PROFILE = os.environ.get("MEMBENCH_FUZZ", "ci")
SCALE = {"ci": 1, "long": 10}[PROFILE]
FIX_RUN = Path(__file__).parent / "fixtures" / "metrics" / "run_small"


def fuzz(n: int):
    """Settings for a fuzz test of ``n`` examples in the ci profile (10 n in long)."""
    return settings(
        max_examples=n * SCALE,
        deadline=None,
        derandomize=PROFILE == "ci",
        database=None,
        suppress_health_check=list(HealthCheck),
    )


# --------------------------------------------------------------------------- inputs

TRICKY: list[bytes] = [
    b"NaN",
    b"Infinity",
    b"-Infinity",
    b"1e400",
    b"-0",
    b"9" * 5000,
    b"[" * 50_000,
    b"{" * 3000,
    b"\xff",
    b"\xfe\xff",
    b"\x00",
    b"\xef\xbb\xbf",
    b"\xc3",
    b"\xed\xa0\x80",
    b'"a":1,"a":2',
    b"\r",
    b"\n",
    b"\n\n",
    b'"',
    b"\\",
    b"\\ud800",
    b"\\u0000",
    b"true",
    b"[]",
    b"{}",
    b"null",
    b" ",
    b"\t",
    b"\x0b",
    b"\x1c",
    b"\xc2\xa0",
    b"\xe2\x80\xa8",
    str(2**64).encode(),
    str(-(2**63) - 1).encode(),
    b"1e308",
    b"4e-324",
    b"..",
    b"../../../../etc/passwd",
    b"/etc/passwd",
    b"\xf0\x9f\x92\xa9",
]

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "dev",
            "test",
            "pdf",
            "code",
            "2024-01-01T00:00:00+00:00",
            "2024-01-01T00:00:00",
            "../x",
            "/etc/passwd",
            "x" * 300,
        ]
    ),
)
json_values = st.recursive(
    json_scalars,
    lambda ch: st.one_of(
        st.lists(ch, max_size=4), st.dictionaries(st.text(max_size=8), ch, max_size=4)
    ),
    max_leaves=10,
)


@st.composite
def mutated_bytes(draw, lines: list[bytes]) -> bytes:
    """A valid file's bytes, with a few byte-level edits."""
    data = bytearray(b"".join(lines))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "cut", "dup"]))
        at = draw(st.integers(0, max(len(data), 1) - 1)) if data else 0
        if op == "flip" and data:
            data[at] ^= 1 << draw(st.integers(0, 7))
        elif op == "insert":
            data[at:at] = draw(st.sampled_from(TRICKY))
        elif op == "delete" and data:
            del data[at : at + draw(st.integers(1, 40))]
        elif op == "cut":
            del data[at:]
        elif op == "dup" and lines:
            data += draw(st.sampled_from(lines))
    return bytes(data)


@st.composite
def mutated_objects(draw, objs: list[dict], nested: bool = True) -> bytes:
    """Valid JSON objects, one (or a nested one) with a field replaced, removed or added."""
    objs = json.loads(json.dumps(objs))
    i = draw(st.integers(0, len(objs) - 1))
    target = objs[i]
    if nested:  # maybe go one level down
        subs = [k for k, v in target.items() if isinstance(v, dict)]
        lists = [
            k for k, v in target.items() if isinstance(v, list) and v and isinstance(v[0], dict)
        ]
        pick = draw(
            st.sampled_from(["top", *(["sub"] if subs else []), *(["list"] if lists else [])])
        )
        if pick == "sub":
            target = target[draw(st.sampled_from(subs))]
        elif pick == "list":
            target = target[draw(st.sampled_from(lists))][0]
    op = draw(st.sampled_from(["replace", "replace", "remove", "add"]))
    keys = sorted(target)
    if op == "replace" and keys:
        target[draw(st.sampled_from(keys))] = draw(json_values)
    elif op == "remove" and keys:
        del target[draw(st.sampled_from(keys))]
    else:
        target[draw(st.text(max_size=8))] = draw(json_values)
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def inputs(lines: list[bytes], objs: list[dict] | None = None):
    """Every way of drawing a file for a reader whose valid examples are ``lines``."""
    ways = [mutated_bytes(lines), st.binary(max_size=300)]
    if objs:
        ways.append(mutated_objects(objs))
    return st.one_of(*ways)


def _jsonl(rows: list[dict]) -> list[bytes]:
    return [dumps(r).encode() + b"\n" for r in rows]


def check(reader: Callable[[], object]) -> None:
    """The invariant: a value or a MembenchError (an InputError names a file)."""
    try:
        reader()
    except InputError as e:
        assert e.file and str(e)
    except MembenchError as e:
        assert str(e)


@pytest.fixture(scope="module")
def scratch():
    d = Path(tempfile.mkdtemp(prefix="membench-fuzz-"))
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _file(scratch: Path, name: str, data: bytes) -> Path:
    p = scratch / name
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(data)
    return p


# --------------------------------------------------------------------------- examples

RECORDS = [r for m in ms.REGIONS for r in ms.records(m)[:2]]
ITEMS = ms.items()
ATOMS = [json.loads(l) for l in (FIX_RUN / "atoms.jsonl").read_text().splitlines()]
RUN_LINES = [json.loads(l) for l in (FIX_RUN / "run.jsonl").read_text().splitlines()]
META = json.loads((FIX_RUN / "meta.json").read_text())
MANIFEST = [
    {**e, "files": e["files"][:6]}
    for e in (json.loads(l) for l in MANIFEST_PATH.read_text().splitlines()[:2])
]
PROVENANCE = [f for f in MANIFEST[0]["files"] if "commit" in f][:4]
CALIBRATION = json.loads((BENCH_DIR / "calibration" / "bm25.json").read_text())
COVERAGE = [
    {
        "source": "x",
        "mirrored": True,
        "upstream_items": 5,
        "covered": 3,
        "not_covered": {"missing": 2},
        "normalised": {"fixed": 1},
        "notes": ["n"],
    },
    {
        "source": "y",
        "mirrored": False,
        "upstream_items": 0,
        "covered": 0,
        "not_covered": {},
        "normalised": {},
        "notes": [],
    },
]
CARTRIDGES = [
    {"query_id": "pdfh:q1", "cartridge": ["p1", "p2"]},
    {"query_id": "pdfh:q2", "cartridge": []},
]


# --------------------------------------------------------------------------- single readers


@fuzz(120)
@given(data=inputs(_jsonl(RECORDS), RECORDS))
def test_records(scratch, data):
    from membench.contract.schema import AnnotationRecord

    p = _file(scratch, "records.jsonl", data)
    check(lambda: [parse_model(AnnotationRecord, o, p, n) for n, o in iter_json_lines(p)])


@fuzz(100)
@given(data=inputs(_jsonl(ITEMS), ITEMS))
def test_items(scratch, data):
    from membench.contract.schema import SourceItem

    p = _file(scratch, "items.jsonl", data)
    check(lambda: [parse_model(SourceItem, o, p, n) for n, o in iter_json_lines(p)])


@fuzz(100)
@given(
    data=inputs([json.dumps(COVERAGE).encode()], None)
    | mutated_objects(COVERAGE).map(lambda b: b"[" + b",".join(b.splitlines()) + b"]")
)
def test_coverage(scratch, data):
    from membench.sets.coverage import read_coverage

    check(lambda: read_coverage(_file(scratch, "coverage.json", data)))


@fuzz(120)
@given(data=inputs(_jsonl(ATOMS), ATOMS))
def test_atoms(scratch, data):
    from membench.run.files import read_atoms

    check(lambda: read_atoms(_file(scratch, "atoms.jsonl", data)))


@fuzz(120)
@given(data=inputs(_jsonl(RUN_LINES), RUN_LINES))
def test_run_lines(scratch, data):
    from membench.run.files import read_run

    check(lambda: read_run(_file(scratch, "run.jsonl", data)))


@fuzz(100)
@given(data=inputs([json.dumps(META).encode()], None) | mutated_objects([META], nested=False))
def test_meta(scratch, data):
    from membench.run.files import read_meta

    _file(scratch, "rd/meta.json", data)
    check(lambda: read_meta(scratch / "rd"))


@fuzz(80)
@given(data=inputs(_jsonl(CARTRIDGES), CARTRIDGES))
def test_cartridges(scratch, data):
    from membench.run.importer import read_cartridges

    p = _file(scratch, "cart.jsonl", data)
    check(lambda: read_cartridges(p, {"pdfh:q1", "pdfh:q2"}, {"p1", "p2", "p3"}))


@fuzz(80)
@given(data=inputs([json.dumps(CALIBRATION).encode()], None) | mutated_objects([CALIBRATION]))
def test_calibration(scratch, data):
    from membench.systems.reference import read_calibration

    check(lambda: read_calibration(_file(scratch, "cal.json", data)))


@fuzz(80)
@given(data=inputs(_jsonl(PROVENANCE), PROVENANCE))
def test_provenance(scratch, data):
    from membench.sets.corpus import _provenance
    from membench.sources.base import read_provenance

    _file(scratch, "src/PROVENANCE.jsonl", data)
    check(lambda: read_provenance(scratch / "src"))
    check(lambda: _provenance(scratch / "src"))


@fuzz(80)
@given(data=inputs(_jsonl(MANIFEST), MANIFEST))
def test_manifest(scratch, data):
    from membench.sets.corpus import check_corpus, load_manifest, revisions_by_source

    p = _file(scratch, "manifest.jsonl", data)
    check(lambda: load_manifest(p))
    check(lambda: revisions_by_source(p))
    (scratch / "root" / "codesearchnet").mkdir(parents=True, exist_ok=True)
    check(lambda: check_corpus(scratch / "root", p))


@fuzz(60)
@given(
    data=inputs(
        [json.dumps({"about": "x", "files": {"pdf.jsonl": "0" * 64}}).encode()],
        [{"about": "x", "files": {"pdf.jsonl": "0" * 64}}],
    )
)
def test_lock(scratch, data):
    from membench.sets.build import read_lock

    check(lambda: read_lock(_file(scratch, "sets.lock.json", data)))


# --------------------------------------------------------------------------- TREC


def _plain_ranks(path: Path) -> list[tuple[str, int]]:
    """The plain parse: membench's line-by-line reader, then the ranking rule by hand (score
    descending, rank column, line order; a repeated (qid, docid) ranks only once)."""
    from membench.run.importer import read_trec_lines

    rows = list(read_trec_lines(path))
    order = sorted(range(len(rows)), key=lambda i: (rows[i][1], -rows[i][4], rows[i][3], i))
    rank = [0] * len(rows)
    seen: set[tuple[str, str]] = set()
    n: dict[str, int] = {}
    for i in order:
        _, qid, doc, _, _ = rows[i]
        if (qid, doc) in seen:
            continue
        seen.add((qid, doc))
        n[qid] = n.get(qid, 0) + 1
        rank[i] = n[qid]
    return [(rows[i][1], rank[i]) for i in range(len(rows))]


TOKENS = {
    "qid": st.sampled_from(["q1", "q2", "q3", "é", "q\u00a0", "q" * 30]),
    "doc": st.sampled_from(["d1", "d2", "d3", "d4", "ü", "d" * 17, "a\u3000b"]),
    "rank": st.one_of(
        st.integers(-3, 12).map(str),
        st.sampled_from(["1_0", "+1", "01", "\u0663", "9" * 20, "2147483648", "1.0", ""]),
    ),
    "score": st.one_of(
        st.floats(allow_nan=False, allow_infinity=False, width=64).map(repr),
        st.integers(-5, 5).map(str),
        st.sampled_from(
            [
                "1",
                "1.0",
                "0.5",
                "-0",
                "1e3",
                "1e-400",
                "1e400",
                "nan",
                "inf",
                ".5",
                "5.",
                "1_0",
                "0x1",
                "1e",
                "-",
                "0.30000000000000004",
                "9007199254740993",
                "1E22",
                "1e23",
                "123456789012345678901234567890",
            ]
        ),
    ),
}
SEP = st.sampled_from([" ", " ", " ", "\t", "  ", "\x0b", "\x0c", "\r"])


@st.composite
def trec_files(draw) -> bytes:
    lines = []
    for _ in range(draw(st.integers(0, 12))):
        fields = [
            draw(TOKENS["qid"]),
            "Q0",
            draw(TOKENS["doc"]),
            draw(TOKENS["rank"]),
            draw(TOKENS["score"]),
            "tag",
        ]
        if draw(st.integers(0, 20)) == 0:
            fields = fields[: draw(st.integers(0, 5))]
        lead = draw(st.sampled_from(["", "", " ", "\t"]))
        lines.append(
            lead + "".join(f + draw(SEP) for f in fields[:-1]) + fields[-1] if fields else lead
        )
    ends = draw(st.sampled_from(["\n", "\n", "\r\n"]))
    data = ends.join(lines) + draw(st.sampled_from([ends, ""]))
    raw = data.encode("utf-8")
    if draw(st.integers(0, 5)) == 0:
        raw = draw(mutated_bytes([raw]))
    return raw


@fuzz(250)
@given(data=trec_files(), chunk=st.sampled_from([16, 48, 1 << 21]))
def test_trec_run_vectorised_agrees_with_plain_parse(scratch, data, chunk):
    from membench.trec.evaluate import read_trec_run

    p = _file(scratch, "run.trec", data)
    try:
        plain = _plain_ranks(p)
    except InputError as e:
        plain = e
    try:
        run = read_trec_run(p, chunk_bytes=chunk)
        fast = [(run.qids[q], int(r)) for q, r in zip(run.q.tolist(), run.rank.tolist())]
    except InputError as e:
        assert e.line is not None or e.rule == "MISSING_FILE", str(e)
        fast = e
    if isinstance(plain, InputError) or isinstance(fast, InputError):
        # both fail, or only the vectorised reader (its rank column is 32-bit), each located
        assert isinstance(fast, InputError), (plain, data)
        if not isinstance(plain, InputError):
            assert fast.field == "rank" and "32-bit" in fast.message, (fast, data)
        return
    assert fast == plain, data


@fuzz(100)
@given(
    data=st.one_of(
        st.lists(
            st.tuples(
                st.sampled_from(["q1", "q2", "é"]),
                st.sampled_from(["0", "Q0", "x"]),
                st.sampled_from(["d1", "d2", "d3"]),
                st.sampled_from(["0", "1", "2", "-1", "1_0", "\u0661", "1.0", "x"]),
            ),
            max_size=8,
        ).map(lambda rows: "".join(" ".join(r) + "\n" for r in rows).encode()),
        st.binary(max_size=200),
    )
)
def test_trec_qrels(scratch, data):
    from membench.trec import evaluate_trec, read_trec_qrels

    p = _file(scratch, "qrels", data)
    check(lambda: read_trec_qrels(p))
    run = _file(scratch, "run2.trec", b"q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 0.5 t\n")
    check(lambda: evaluate_trec(run, p))


# --------------------------------------------------------------------------- whole paths


@pytest.fixture(scope="module")
def world(scratch):
    return write_world(scratch / "world")


SET_NAMES = [*(f"{m}.jsonl" for m in ms.REGIONS), "items.jsonl"]


@fuzz(60)
@given(name=st.sampled_from(SET_NAMES), data=st.data())
def test_validate_sets_over_a_mutated_folder(world, scratch, name, data):
    from membench.sets.validate import validate_sets

    sets = scratch / "vsets"
    if sets.exists():
        shutil.rmtree(sets)
    shutil.copytree(world["sets"], sets)
    rows = [json.loads(l) for l in (world["sets"] / name).read_text().splitlines()]
    (sets / name).write_bytes(data.draw(inputs(_jsonl(rows), rows)))
    check(
        lambda: validate_sets(sets, world["manifest"], lock=world["lock"], corpus=world["corpus"])
    )


@fuzz(40)
@given(
    name=st.sampled_from(
        ["atoms.jsonl", "run.jsonl", "meta.json", "sets/pdf.jsonl", "sets/items.jsonl"]
    ),
    data=st.data(),
)
def test_metrics_over_a_mutated_run_directory(scratch, name, data):
    from membench.metrics import metrics_for_run_dir

    d = scratch / "mrun"
    if d.exists():
        shutil.rmtree(d)
    shutil.copytree(FIX_RUN, d)
    src = (FIX_RUN / name).read_bytes()
    if name.endswith(".json"):
        new = data.draw(inputs([src], None) | mutated_objects([json.loads(src)], nested=False))
    else:
        rows = [json.loads(l) for l in src.decode().splitlines()]
        new = data.draw(inputs(_jsonl(rows), rows))
    (d / name).write_bytes(new)
    check(lambda: metrics_for_run_dir(d, write=False, n_resamples=20))


# --------------------------------------------------------------------------- command-line flags


def _numeric_flags():
    import argparse

    from membench.cli import parser

    subs = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    return [
        (f"{name} {max(a.option_strings, key=len)}", a.type)
        for name, sp in subs.choices.items()
        for a in sp._actions
        if a.option_strings and hasattr(a.type, "range")
    ]


FLAGS = _numeric_flags()
flag_texts = st.one_of(
    st.text(max_size=30),
    st.integers().map(str),
    st.floats().map(repr),
    st.sampled_from([t.decode("utf-8", "replace") for t in TRICKY]),
    st.integers(min_value=-(2**200), max_value=2**200).map(lambda v: f"{v:_}"),
)


@fuzz(200)
@given(flag=st.sampled_from(FLAGS), text=flag_texts)
def test_numeric_flags_take_a_value_in_range_or_refuse_it(flag, text):
    """Every numeric flag's argparse type (tests/test_cli_flags.py) returns a value inside its
    stated range or refuses the text with an ArgumentTypeError; nothing else."""
    import argparse
    import math

    name, kind = flag
    lo, hi = kind.range
    try:
        v = kind(text)
    except argparse.ArgumentTypeError as e:
        assert "\n" not in str(e) and len(str(e)) < 300, (name, text, e)
        return
    assert math.isfinite(v) and lo <= v <= hi, (name, text, v)
    if getattr(kind, "lo_open", False):
        assert v > lo, (name, text, v)
