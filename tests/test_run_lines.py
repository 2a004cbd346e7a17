"""The runner's run.jsonl lines are byte for byte what ``json.dumps`` gave before orjson wrote
them: on every code point, on floats over the whole double range (orjson and Python differ in
notation for magnitudes in [1e-9, 1e-4)), on odd hit lists a system may return, and on the
lines of a real bm25 dev run."""

from __future__ import annotations

import json
import math
import random
import struct
from collections import namedtuple
from dataclasses import dataclass

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from membench.contract.protocol import Result
from membench.core.jsonl import dumps
from membench.run.runner import ProtocolError, _check_hits, _fast_line, run_line

KNOWN = {"a1", "a2", "a3", "é-ü", "x\u2028y", "tab\there", *(f"b{j}" for j in range(500))}

try:
    from membench.run._hitcheck import plain_pairs as c_plain_pairs
except ImportError:  # no C compiler at install: test_the_extension_is_built says so
    c_plain_pairs = None


@pytest.fixture(autouse=True, params=["c", "python"])
def hit_check(request, monkeypatch):
    """Every test here runs with the runner's one-pass C test of the hits and again with its
    Python fallback: both must write the same bytes."""
    from membench.run import runner

    if request.param == "c":
        if c_plain_pairs is None:
            pytest.skip("membench.run._hitcheck was not built")
        monkeypatch.setattr(runner, "plain_pairs", c_plain_pairs)
    else:
        monkeypatch.setattr(runner, "plain_pairs", runner._plain_pairs_py)
    return request.param


def reference_line(qid, hits, cart, latency) -> bytes:
    """The line the runner wrote before orjson: the per-hit loop, then json.dumps."""
    out = []
    for atom_id, score in hits:
        if atom_id not in KNOWN:
            raise ProtocolError("never reported at ingest")
        score = float(score)
        if not math.isfinite(score):
            raise ProtocolError("non-finite score")
        out.append([atom_id, score])
    return (
        json.dumps(
            {"query_id": qid, "hits": out, "cartridge": cart, "latency_ms": latency},
            ensure_ascii=False,
            sort_keys=True,
            separators=(",", ":"),
        )
        + "\n"
    ).encode("utf-8")


def runner_line(qid, hits, cart, latency) -> bytes:
    """What the runner's loop writes for one answer (runner._answer)."""
    row = {"cartridge": cart, "hits": hits, "latency_ms": latency, "query_id": qid}
    line = _fast_line(row, KNOWN)
    if line is None:
        row["hits"] = _check_hits("s", qid, hits, KNOWN)
        line = run_line(row)
    return line


def same(qid, hits, cart=(), latency=1.25):
    exp = reference_line(qid, hits, list(cart), latency)
    assert runner_line(qid, hits, list(cart), latency) == exp
    return exp


def test_every_code_point_is_escaped_as_json_dumps_does():
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    assert orjson.dumps(text) == json.dumps(text, ensure_ascii=False).encode("utf-8")
    row = {"cartridge": [text], "hits": [], "latency_ms": 0.5, "query_id": text}
    assert run_line(row) == (dumps(row) + "\n").encode("utf-8")


def test_a_lone_surrogate_fails_as_before():
    row = {"cartridge": [], "hits": [], "latency_ms": 0.5, "query_id": "q\ud800"}
    with pytest.raises(UnicodeEncodeError):
        run_line(row)
    with pytest.raises(UnicodeEncodeError):
        (dumps(row) + "\n").encode("utf-8")


def _every_binade(rng: random.Random) -> list[float]:
    """A few random mantissas in every binary exponent, subnormals included, both signs."""
    out = [0.0, -0.0, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308]
    for e in range(0, 2047):
        for _ in range(3):
            bits = (e << 52) | rng.getrandbits(52)
            x = struct.unpack("<d", struct.pack("<Q", bits))[0]
            if math.isfinite(x):
                out += [x, -x]
    for b in (1e-9, 1e-5, 1e-4, 1e15, 1e16, 1e17, 1e21, 1e22):
        out += [b, -b, math.nextafter(b, 0), math.nextafter(b, math.inf)]
    return out


def test_floats_over_the_whole_range_match_json_dumps():
    values = _every_binade(random.Random(12))
    for i in range(0, len(values), 500):
        chunk = values[i : i + 500]
        hits = [(f"b{j}", x) for j, x in enumerate(chunk)]  # (each atom once per query)
        same("q", hits, latency=abs(chunk[0]))
        same("q", hits[:1], latency=1.0)


def test_orjson_differs_from_repr_only_below_1e4_and_the_writer_knows_it():
    """The fact run_line rests on: orjson and repr agree on plain-notation floats, and differ
    in [1e-9, 1e-4) (so those lines go to json.dumps)."""
    for x in _every_binade(random.Random(5)):
        if orjson.dumps(x) != repr(x).encode():
            assert 1e-9 <= abs(x) < 1e-4, x
    assert orjson.dumps(1e-05) == b"0.00001" and repr(1e-05) == "1e-05"
    line = same("q", [("a1", 1e-05), ("a2", 3.0)])
    assert b"1e-05" in line


@settings(
    max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(
        st.tuples(st.sampled_from(sorted(KNOWN)), st.floats(allow_nan=False, allow_infinity=False)),
        max_size=30,
        unique_by=lambda h: h[0],
    ),
    st.floats(min_value=0, max_value=1e7, allow_nan=False),
    st.text(min_size=1, max_size=12),
)
def test_random_lines_match_json_dumps(hits, latency, qid):
    if any(0xD800 <= ord(c) <= 0xDFFF for c in qid):
        return
    same(qid, hits, cart=[h[0] for h in hits[:2]], latency=round(latency, 3))


Pair = namedtuple("Pair", "atom_id score")


@dataclass
class DataPair:
    atom_id: str
    score: float

    def __len__(self):
        return 2

    def __getitem__(self, i):
        return (self.atom_id, self.score)[i]

    def __iter__(self):
        return iter((self.atom_id, self.score))


class Sub(str):
    pass


@pytest.mark.parametrize(
    "hits",
    [
        [],
        [("a1", 2.5), ["a2", 1.0]],  # tuples and lists
        (("a1", 2.5), ("a2", 1.0)),  # a tuple of pairs
        [("a1", 3), ("a2", True)],  # ints and bools: written as floats
        [("a1", np.float32(0.1)), ("a2", np.float64(2.0))],
        [np.array(["a1", 2.5], dtype=object)],  # pairs as numpy arrays
        [Pair("a1", 2.5)],
        [DataPair("a1", 2.5)],
        [(Sub("a1"), 2.5)],
        [("a1", 1e-7), ("a2", -0.0), ("a3", -2.5)],
        [("a1", 2e16), ("a2", 1e300)],
    ],
)
def test_odd_hit_lists_are_written_as_before(hits):
    same("q", hits)


@pytest.mark.parametrize(
    "hits",
    [
        [("a1", 1e308), ("a2", 1e308)]  # the sum overflows; each is finite
    ],
)
def test_edge_hits_are_written_as_before(hits):
    same("q", hits)


@pytest.mark.parametrize(
    "hits, message",
    [
        ([("zz", 1.0)], "hit 'zz' was never reported at ingest"),
        ([("a1", float("nan"))], "non-finite score for 'a1'"),
        ([("a1", float("inf"))], "non-finite score for 'a1'"),
        ([("a1", 1.0, "extra")], "hit #0 must be a pair (atom_id, score), got tuple ('a1', 1.0, "),
        ([("a1", 2.0), ("a1",)], "hit #1 must be a pair (atom_id, score), got tuple ('a1',)"),
        ([None], "hit #0 must be a pair (atom_id, score), got NoneType None"),
        ([{"a1": 1, 2.5: 2}], "hit #0 must be a pair (atom_id, score), got dict"),  # keys unpack
        (["a1"], "hit #0 must be a pair (atom_id, score), got str 'a1'"),
        ([iter(["a1", 2.0])], "hit #0 must be a pair (atom_id, score), got list_iterator"),
        ([{0: "a1", 1: 2.0}], "hit #0 must be a pair (atom_id, score), got dict"),
        ([["a1", [1.0]]], "hit #0 ('a1'): the score must be a number, got list [1.0]"),
        ([("a1", "2.5")], "hit #0 ('a1'): the score must be a number, got str '2.5'"),
        ([("a1", None)], "hit #0 ('a1'): the score must be a number, got NoneType None"),
        ([[["a1"], 1.0]], "hit #0: the atom id must be a string, got list ['a1']"),
        ([(7, 1.0)], "hit #0: the atom id must be a string, got int 7"),
        # an atom listed twice in one query's list: the atom and both ranks, whichever path
        (
            [("a1", 2.0), ("a2", 1.5), ("a1", 1.0)],
            "hit 'a1' at ranks 1 and 3: an atom is listed once per query",
        ),
        ([["a2", 2.0], ["a2", 2.0]], "hit 'a2' at ranks 1 and 2"),
        ([("a1", 1e-7), ("a1", 5.0)], "hit 'a1' at ranks 1 and 2"),  # (not the fast path)
        ((("a3", 1.0), ("a3", 0.5)), "hit 'a3' at ranks 1 and 2"),
    ],
)
def test_bad_hits_are_one_clear_protocol_error(hits, message):
    # what the old per-hit loop let through (a dict's keys, a numeric string, an iterator) or
    # raised as a bare ValueError / TypeError (a traceback) is now a ProtocolError naming the
    # system, the query, the hit and what is wrong with it
    with pytest.raises(ProtocolError) as e:
        runner_line("q", hits, [], 1.0)
    assert str(e.value).startswith("system s: q: ") and message in str(e.value), str(e.value)


@pytest.mark.parametrize(
    "res, message",
    [
        (None, "query returned None, not a Result with hits and a cartridge"),
        (Result(hits=None, cartridge=[]), "not a Result with hits and a cartridge"),
        (
            Result(hits=(h for h in [("a1", 1.0)]), cartridge=[]),
            "hits must be a list of (atom_id, score) pairs, got generator",
        ),
        (Result(hits=[], cartridge="a1"), "the cartridge must be a list of atom ids, got str 'a1'"),
        (
            Result(hits=[], cartridge=[["a1"]]),
            "cartridge entry #0 must be an atom id (a string), got list ['a1']",
        ),
        (
            Result(hits=[], cartridge=["a2", "a1", "a2"]),
            "cartridge atom 'a2' at positions 1 and 3: an atom is listed once per query",
        ),
        (Result(hits=[], cartridge=["zz"]), "cartridge atom 'zz' was never reported at ingest"),
    ],
)
def test_a_bad_answer_is_one_clear_protocol_error(res, message):
    import pickle

    from membench.run.runner import _answer_parts, answer_for_sending, check_answer

    with pytest.raises(ProtocolError) as e:
        _answer_parts("s", "q", res, KNOWN)
    assert str(e.value).startswith("system s: q: ") and message in str(e.value), str(e.value)
    # on Ray the worker sends the answer's parts (pickled) and the driver checks them: the
    # same line
    sent = pickle.loads(pickle.dumps(answer_for_sending(res)))  # hits, cartridge, confidence
    with pytest.raises(ProtocolError) as e2:
        check_answer("s", "q", *sent[:2], KNOWN)
    assert str(e2.value) == str(e.value)
    cart, hits = _answer_parts("s", "q", Result(hits=[("a1", 1.0)], cartridge=("a1",)), KNOWN)
    assert cart == ["a1"] and hits == [("a1", 1.0)]


def test_the_fast_path_takes_what_the_reference_systems_return():
    row = {
        "cartridge": ["a1"],
        "hits": [("a1", 17.32197380065918), ("a2", 0.000983)],
        "latency_ms": 0.412,
        "query_id": "locomo:conv-26:0",
    }
    assert _fast_line(row, KNOWN) == (dumps(row) + "\n").encode("utf-8")
    assert _fast_line({**row, "hits": [("a1", 5e-5)]}, KNOWN) is None
    assert _fast_line({**row, "hits": [("a1", 5)]}, KNOWN) is None


def test_real_bm25_run_lines_are_what_json_dumps_writes(bm25_dev):
    """Every line of a real bm25 dev run (written by the runner) equals json.dumps of its own
    parsed content, floats included."""
    run_dir, _ = bm25_dev
    n = 0
    with open(run_dir / "run.jsonl", "rb") as f:
        for raw in f:
            obj = json.loads(raw)
            assert raw == (dumps(obj) + "\n").encode("utf-8")
            assert run_line(obj) == raw
            n += 1
    assert n > 1500


def test_the_extension_is_built_where_a_compiler_is(hit_check):
    """The runner uses the C test wherever the install found a C compiler (CI has one)."""
    import shutil
    import sysconfig

    from membench.run import runner

    cc = (sysconfig.get_config_var("CC") or "cc").split()[0]
    if shutil.which(cc) is None:
        pytest.skip(f"no C compiler ({cc}) here: the Python fallback runs")
    assert c_plain_pairs is not None, runner.HIT_CHECK_MISSING


_ODD_ITEMS = st.one_of(
    st.sampled_from(sorted(KNOWN)),
    st.just("zz"),
    st.just(Sub("a1")),
    st.none(),
    st.integers(-3, 3),
    st.booleans(),
    st.floats(),
    st.floats(min_value=-1e-3, max_value=1e-3),
    st.sampled_from(
        [
            1e16,
            -1e16,
            9.999999999999998e15,
            1e-4,
            9.99999e-5,
            0.0,
            -0.0,
            float("nan"),
            float("inf"),
            5e-324,
        ]
    ),
    st.builds(np.float64, st.floats(0.1, 10)),
)
_ODD_HITS = st.one_of(
    st.tuples(_ODD_ITEMS, _ODD_ITEMS),
    st.tuples(_ODD_ITEMS, _ODD_ITEMS).map(list),
    st.tuples(st.sampled_from(sorted(KNOWN)), st.floats(1e-4, 1e6)),
    st.lists(_ODD_ITEMS, max_size=3),
    st.lists(_ODD_ITEMS, max_size=3).map(tuple),
    st.builds(Pair, _ODD_ITEMS, _ODD_ITEMS),
    st.sampled_from(["a1", b"a1", {"a1": 1, "b": 2}, {0: "a1", 1: 2.0}, None, 3.0]),
)


@settings(
    max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(hits=st.lists(_ODD_HITS, max_size=6), as_tuple=st.booleans())
def test_the_c_test_takes_no_more_than_the_python_one_and_both_write_json_dumps_bytes(
    hits, as_tuple, hit_check
):
    """On odd hits of every kind: where the C test says yes, so does the Python one, and the
    hits are pairs of a known atom id and a plain finite float; and the runner's line is
    json.dumps's bytes (or the one clear error) with either test."""
    from membench.run import runner

    if hit_check != "c":
        pytest.skip("compares the C test with the Python one")
    hits = tuple(hits) if as_tuple else hits
    try:
        py = runner._plain_pairs_py(hits, KNOWN)
    except (TypeError, KeyError, IndexError, ValueError):
        py = False
    c = c_plain_pairs(hits, KNOWN)
    if c:
        assert py
        assert all(
            type(h) in (tuple, list)
            and len(h) == 2
            and type(h[0]) is str
            and h[0] in KNOWN
            and type(h[1]) is float
            and math.isfinite(h[1])
            and (h[1] == 0 or 1e-4 <= abs(h[1]) < 1e16)
            for h in hits
        )
    lines = []
    for impl in (c_plain_pairs, runner._plain_pairs_py):
        runner.plain_pairs = impl  # (the fixture puts it back)
        try:
            lines.append(runner_line("q", hits, [], 1.25))
        except ProtocolError as e:
            lines.append(str(e))
    assert lines[0] == lines[1]
    try:
        expected = reference_line("q", [tuple(h) for h in hits], [], 1.25)
    except (TypeError, ValueError, ProtocolError):
        return  # the reference loop refuses it too
    if isinstance(lines[0], bytes):
        assert lines[0] == expected


def test_the_c_test_refuses_wrong_arguments(hit_check):
    if hit_check != "c":
        pytest.skip("the C test's own argument checks")
    with pytest.raises(TypeError):
        c_plain_pairs([], ["a1"])  # known must be a set
    with pytest.raises(TypeError):
        c_plain_pairs([])
    assert c_plain_pairs(iter([]), KNOWN) is False  # not a list or tuple
    assert c_plain_pairs([], frozenset()) is True


def test_the_c_test_finds_a_repeated_atom_whatever_the_list(hit_check):
    """The C test's table of atoms seen: an equal string that is another object, lists on the
    stack table (up to 1,024 hits) and on the heap (longer), the repeat first or last."""
    if hit_check != "c":
        pytest.skip("the C test's own table")
    ids = [f"id{j}" for j in range(3000)]
    known = set(ids)
    for n in (2, 1024, 1025, 3000):
        hits = [(a, 1.0) for a in ids[:n]]
        assert c_plain_pairs(hits, known) is True
        copy = "".join(list(ids[0]))  # equal, not the same object
        assert copy is not ids[0]
        assert c_plain_pairs([*hits, (copy, 0.5)], known) is False
        assert c_plain_pairs([(ids[n - 1], 2.0), *hits], known) is False
        assert c_plain_pairs(hits[:-1] + [hits[0]], known) is (n == 1)


@pytest.mark.parametrize("conf", [0.73, 0, -2.5, 17, 5e-5, 3e20, np.float32(0.5), np.float64(0.1)])
def test_a_reported_confidence_is_written_as_json_dumps_does(conf):
    from membench.run.runner import check_confidence

    value = check_confidence("s", "q", conf)
    assert value == float(conf) and type(value) is float
    row = {
        "cartridge": ["a1"],
        "hits": [("a1", 1.5)],
        "latency_ms": 0.412,
        "query_id": "q",
        "confidence": value,
    }
    want = (dumps(row) + "\n").encode("utf-8")
    fast = _fast_line(row, KNOWN)
    assert fast in (None, want)  # orjson only where the digits cannot differ
    assert run_line(row) == want
    assert json.loads(want)["confidence"] == value


@pytest.mark.parametrize(
    "conf, shown",
    [
        ("high", "str 'high'"),
        (float("nan"), "float nan"),
        (float("inf"), "float inf"),
        (True, "bool True"),
        (10**400, "int 1000"),
        ([0.5], "list [0.5]"),
    ],
)
def test_a_bad_confidence_is_one_clear_protocol_error(conf, shown):
    import pickle

    from membench.run.runner import answer_for_sending, check_confidence

    with pytest.raises(ProtocolError) as e:
        check_confidence("s", "q", conf)
    msg = str(e.value)
    assert msg.startswith("system s: q: confidence must be a finite number or None, got ")
    assert shown in msg, msg
    # on Ray the worker sends it (pickled) with the answer, the driver checks it: same line
    sent = pickle.loads(pickle.dumps(answer_for_sending(Result([], [], confidence=conf))))
    with pytest.raises(ProtocolError) as e2:
        check_confidence("s", "q", sent[2])
    assert str(e2.value) == msg
    assert answer_for_sending(Result([], []))[2] is None
