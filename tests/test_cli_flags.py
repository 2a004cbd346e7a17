"""Every numeric flag of every command is bounded: its argparse type states a range (the upper
ends are bounds of :mod:`membench.core.bounds`), and a value outside it (huge, negative, zero
where a count starts at 1, NaN and infinities for numbers, a 5,000-digit integer) is refused
while the arguments are parsed: exit status 2 and one ``error:`` line naming the flag and the
range, never a traceback (``--limit 99999999999999999999999`` was a TypeError in the run's
keeper). The walk enumerates the options from the parser itself, so a flag added later with
``type=int`` fails here until it gets a range."""

from __future__ import annotations

import argparse
import contextlib
import io
import math

import pytest

from membench.cli import main, parser
from membench.cli.common import float_in, int_in, resample_count
from membench.metrics.bootstrap import MAX_RESAMPLES

# trec-eval's own options are membench.trec.trec_eval's parser (`membench trec-eval` reaches it
# without the command line package): its refusals are that module's
ELSEWHERE = {("trec-eval", "-l"), ("trec-eval", "-M")}


def numeric_options() -> list[tuple[str, str, object]]:
    """``(command, option, type)`` of every option whose value is converted by a type."""
    subs = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for name, sp in subs.choices.items():
        for a in sp._actions:
            if a.option_strings and a.type is not None and a.type is not str:
                out.append((name, max(a.option_strings, key=len), a.type))
    return out


OPTIONS = [o for o in numeric_options() if o[:2] not in ELSEWHERE]


def _parse(argv: list[str]) -> tuple[int | None, str]:
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            main(argv)
        except SystemExit as e:
            return e.code, err.getvalue()
    return None, err.getvalue()


def _bad_values(kind) -> list[str]:
    lo, hi = kind.range
    bad = [
        str(lo - 1) if isinstance(lo, int) else str(lo),
        str(hi + 1) if isinstance(hi, int) else repr(hi * 2),
        "99999999999999999999999",
        "-99999999999999999999999",
        "9" * 5000,
        "",
        "x",
        "1e3x",
    ]
    if isinstance(lo, float) or isinstance(hi, float):
        bad += ["nan", "inf", "-inf", "1e309"]
    else:
        bad += ["1.5", "nan", "inf"]
    return bad


def test_the_walk_finds_the_flags_it_should():
    names = {(c, o) for c, o, _ in numeric_options()}
    assert {
        ("run", "--limit"),
        ("run", "--workers"),
        ("run", "--sample-seed"),
        ("run", "--connect-timeout"),
        ("serve", "--port"),
        ("pool", "--share"),
        ("pool", "--rrf-k"),
        ("verify", "--seed"),
        ("report", "--jobs"),
        ("synth", "--atoms"),
        ("q2d", "--share"),
    } <= names
    assert ELSEWHERE <= names


@pytest.mark.parametrize("cmd,opt,kind", OPTIONS, ids=[f"{c} {o}" for c, o, _ in OPTIONS])
def test_every_numeric_flag_states_a_range_and_refuses_outside_it(cmd, opt, kind):
    assert hasattr(kind, "range"), f"{cmd} {opt}: type {kind!r} states no range"
    lo, hi = kind.range
    assert math.isfinite(lo) and math.isfinite(hi) and lo <= hi
    for value in _bad_values(kind):
        code, err = _parse([cmd, f"{opt}={value}"])
        lines = err.strip().splitlines()
        assert code == 2, (cmd, opt, value, err)
        assert "Traceback" not in err
        errors = [ln for ln in lines if ": error: " in ln]
        assert len(errors) == 1 and errors[0] == lines[-1], (cmd, opt, value, err)
        assert f"argument {opt}" in errors[0], errors[0]
        assert len(errors[0]) < 300, errors[0]  # a 5,000-digit value is not echoed whole
    for value in {hi} if getattr(kind, "lo_open", False) else {lo, hi}:  # the ends are taken
        assert kind(str(value)) == value


def test_a_refusal_states_the_range_and_the_bound():
    code, err = _parse(["run", "--limit", "99999999999999999999999"])
    assert code == 2
    assert (
        err.strip()
        .splitlines()[-1]
        .endswith(
            "argument --limit: must be 1 to 2,147,483,647 (bound flag_count), got "
            "'99999999999999999999999'"
        )
    )
    code, err = _parse(["run", "--connect-timeout", "nan"])
    assert code == 2 and "must be > 0 and <= 86400 s (bound flag_seconds), got 'nan'" in err


def test_resamples_states_its_bound():
    assert resample_count.range == (1, MAX_RESAMPLES)


def test_the_range_types_on_their_own():
    t = int_in(0, 10, "t")
    assert t("0") == 0 and t(" 10 ") == 10
    for bad in ("-1", "11", "1.0", "x"):
        with pytest.raises(argparse.ArgumentTypeError, match="0 to 10"):
            t(bad)
    f = float_in(0, 1, "f", lo_open=True)
    assert f("1") == 1.0 and f("1e-300") == 1e-300
    for bad in ("0", "1.0000001", "nan", "inf", "-0"):
        with pytest.raises(argparse.ArgumentTypeError, match="> 0 and <= 1"):
            f(bad)
