"""Progress of the long steps (membench.core.progress): lines every few percent in a log, a
heartbeat while one item takes long, a summary line per step, a bar on a terminal, silence with
--quiet; and, from a captured log of a cold run of the command line on the fixture corpus,
every long step (corpus check, validate, build per source, OCR, content, embedding, ingest,
queries, scoring, bootstrap) shows progress and ends with its summary line."""

from __future__ import annotations

import io
import json
import re

import pytest
from minicorpus import freeze, make_corpus, membench

from membench.core import progress


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def log():
    buf = io.StringIO()
    progress.configure("lines", stream=buf, min_interval=0)
    yield buf
    progress.configure(None)


def lines(buf: io.StringIO) -> list[str]:
    return buf.getvalue().splitlines()


def test_lines_every_five_percent_and_a_summary(log):
    clock = Clock()
    s = progress.Step("ocr", total=40, unit="image", cached=True, clock=clock, thread=False)
    s.advance(10, cache_hit=True)
    for _ in range(30):
        clock.t += 1
        s.advance()
    s.close()
    out = lines(log)
    assert out[0] == "[membench] ocr: started (40 images)"
    assert out[1] == "[membench] ocr: 10/40 images (25%), 10 cache hits, 0.0 s"  # no rate yet
    # the time left comes from the items that cost work: 10 in 10 s, 20 to go
    assert "[membench] ocr: 20/40 images (50%), 10 cache hits, 10.0 s, about 20.0 s left" in out
    pct = [int(m.group(1)) for m in map(re.compile(r".*\((\d+)%\)").match, out) if m]
    assert pct == [25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100]
    assert out[-1] == "[membench] ocr done: 40 images, 10 cache hits, 30.0 s"


def test_min_interval_keeps_a_fast_step_to_start_and_summary():
    buf = io.StringIO()
    progress.configure("lines", stream=buf)  # the default min_interval of 1 s
    try:
        clock = Clock()
        s = progress.Step("queries", total=100, unit="query", clock=clock, thread=False)
        for _ in range(100):
            s.advance()
        s.close()
    finally:
        progress.configure(None)
    assert lines(buf) == [
        "[membench] queries: started (100 queries)",
        "[membench] queries done: 100 queries, 0.0 s",
    ]


def test_heartbeat_prints_while_one_item_takes_long(log):
    clock = Clock()
    s = progress.Step("embed", total=4, unit="text", cached=True, clock=clock, thread=False)
    s.note("batch of 1024")
    clock.t += 19.5
    assert not s.tick()  # the last line is not yet 20 s old
    clock.t += 0.5
    assert s.tick()
    assert lines(log)[-1] == (
        "[membench] embed: 0/4 texts (0%), 0 cache hits, 20.0 s (still working: batch of 1024)"
    )
    assert not s.tick()  # the heartbeat line restarts the wait
    clock.t += 20
    assert s.tick()
    s.close()
    assert not s.tick()  # a closed step is silent


def test_heartbeat_thread_runs_on_its_own(log):
    progress.configure("lines", stream=log, heartbeat=0.05, min_interval=0)
    import time

    with progress.step("build", total=3, unit="source") as s:
        s.note("mmlongbench")
        deadline = time.monotonic() + 30
        while "still working" not in log.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert "[membench] build: 0/3 sources (0%), " in log.getvalue()
    assert "(still working: mmlongbench)" in log.getvalue()


def test_a_step_that_waits_on_its_sub_steps_says_on_what(log):
    """The outermost open step speaks for the steps opened inside it: while it waits at 0%,
    its heartbeat names each sub-step's own count; the sub-steps do not beat on their own,
    and a line of a sub-step resets the wait."""
    clock = Clock()
    outer = progress.Step("ingest (dense)", total=1590, unit="item", clock=clock, thread=False)
    ocr = progress.Step("ocr", total=1111, unit="image", cached=True, clock=clock, thread=False)
    embed = progress.Step(
        "embed (while OCR runs)", total=20089, unit="text", clock=clock, thread=False
    )
    try:
        ocr.advance(340)
        embed.advance(8000)
        embed.note("batch of 1024")
        clock.t += 20
        assert not ocr.tick() and not embed.tick()  # the outer step speaks for them
        assert outer.tick()
        line = lines(log)[-1]
        assert line.startswith(
            "[membench] ingest (dense): 0/1590 items (0%), 20.0 s (waiting "
            "on: ocr 340/1111 images (31%); embed (while OCR runs) "
            "8000/20089 texts (40%), batch of 1024)"
        ), line
        clock.t += 15
        embed._line("embed: a line of its own")  # news of the sub-step ...
        clock.t += 10
        assert not outer.tick()  # ... so the outer step waits again
        clock.t += 10
        assert outer.tick()
    finally:
        embed.close()
        ocr.close()
    clock.t += 20
    assert outer.tick() and lines(log)[-1].endswith("(still working)")  # nothing to wait on
    outer.close()


def test_a_command_beats_between_steps(log, monkeypatch):
    """A membench command that prints nothing outside any step (imports, reading files) still
    prints a line every heartbeat; not a server (heartbeat=False)."""
    import time

    progress.configure("lines", stream=log, heartbeat=0.1, min_interval=0)
    with progress.command(["run", "--system", "dense"]):
        deadline = time.monotonic() + 30
        while "still working" not in log.getvalue() and time.monotonic() < deadline:
            time.sleep(0.05)
    assert re.search(
        r"\[membench\] run --system dense: still working, [\d.]+ s \(between "
        r"steps\)",
        log.getvalue(),
    )
    quiet = io.StringIO()
    progress.configure("lines", stream=quiet, heartbeat=0.1, min_interval=0)
    with progress.command(["serve", "--system", "bm25"], heartbeat=False):
        time.sleep(0.5)
    assert quiet.getvalue() == ""


def test_the_step_table_ends_with_the_wall_time_and_the_load(tmp_path):
    """steptimes: a terminal table, commands in the order they started and their steps
    parents first, the setup's row, the kernels' steps folded into one block, and a total
    that is the wall time from make's start row (with the load)."""
    from membench.core.steptimes import main as steptimes
    from membench.core.steptimes import read, table

    t0 = 1_000_000.0
    rows = [
        {"kind": "start", "t": t0, "load": 8.2, "cpus": 2},
        {
            "kind": "command",
            "tool": "setup",
            "command": "setup: pip install -e .[test]",
            "seconds": 201.0,
            "ok": True,
            "t": t0 + 201,
            "load": 9.0,
            "pid": 1,
        },
        {
            "kind": "step",
            "step": "ocr",
            "depth": 1,
            "seconds": 50.0,
            "done": 10,
            "cache_hits": 4,
            "ok": True,
            "pid": 2,
            "command": "run --system dense",
            "t": t0 + 290,
            "load": 10.0,
        },
        {
            "kind": "step",
            "step": "ingest (dense)",
            "depth": 0,
            "seconds": 80.0,
            "done": 12,
            "cache_hits": None,
            "ok": True,
            "pid": 2,
            "command": "run --system dense",
            "t": t0 + 300,
            "load": 10.0,
        },
        {
            "kind": "command",
            "command": "run --system dense",
            "seconds": 95.0,
            "ok": True,
            "pid": 2,
            "t": t0 + 305,
            "load": 10.4,
        },
        *(
            {
                "kind": "step",
                "step": "validate",
                "depth": 0,
                "seconds": 2.0,
                "done": 1,
                "cache_hits": None,
                "ok": True,
                "pid": p,
                "command": "",
                "t": t0 + 330,
            }
            for p in (7, 8)
        ),
    ]
    f = tmp_path / "make.jsonl"
    f.write_text("\n".join(json.dumps(r) for r in rows) + "\nnot json\n")
    out = table(read(f), now=t0 + 340).splitlines()
    assert out[0].split() == [
        "command",
        "/",
        "step",
        "wall",
        "items",
        "from",
        "cache",
        "first-time",
    ]
    assert not [ln for ln in out if "|" in ln or "&nbsp;" in ln]
    names = [re.match(r"^(\s*\S.*?)(?:\s{2,}|$)", ln).group(1) for ln in out[2:]]
    assert names[:4] == [
        "setup: pip install -e .[test]",
        "membench run --system dense",
        "  ingest (dense)",
        "    ocr",
    ]
    assert "notebook kernels of the report (2 processes)" in names
    assert any(ln.strip().startswith("validate (x2)") and " 4.0 s" in ln for ln in out)
    assert "all commands above, one after the other" in out[-3] and "4:56.0" in out[-3]
    assert out[-2] == (
        "wall time, from the start to now: 5:40.0 (setup, make and the shell "
        "between the commands: 44.0 s)"
    )
    assert out[-1].startswith(
        "load average (1 min): 8.2 at the start, 9.0-10.4 as the commands ended, on 2 CPUs"
    )
    assert steptimes([str(f), "--finish"]) == 0
    end = json.loads(f.read_text().splitlines()[-1])
    assert end["kind"] == "end" and end["wall"] > 340


def test_a_failed_step_says_stopped(log):
    with pytest.raises(RuntimeError):
        with progress.step("queries (bm25)", total=10, unit="query") as s:
            s.advance(3)
            raise RuntimeError("boom")
    assert re.match(r"\[membench\] queries \(bm25\) stopped: 3 queries, [\d.]+ s$", lines(log)[-1])


def test_quiet_prints_nothing_but_counts():
    buf = io.StringIO()
    progress.configure("quiet", stream=buf)
    try:
        with progress.step("ocr", total=3, cached=True) as s:
            s.advance(2, cache_hit=True)
            s.advance()
        progress.emit("plan")
    finally:
        progress.configure(None)
    assert buf.getvalue() == ""
    assert (s.done, s.cache_hits) == (3, 2)


def test_default_is_quiet_unless_the_environment_asks(monkeypatch):
    progress.configure(None)
    monkeypatch.delenv("MEMBENCH_PROGRESS", raising=False)
    assert progress.current_mode() == "quiet"
    monkeypatch.setenv("MEMBENCH_PROGRESS", "lines")
    assert progress.current_mode() == "lines"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_auto_is_a_bar_on_a_terminal_and_lines_elsewhere():
    tty = Tty()
    progress.configure("auto", stream=tty)
    try:
        assert progress.current_mode() == "bar"
        with progress.step("ocr", total=5, unit="image", cached=True) as s:
            s.advance(5, cache_hit=True)
        out = tty.getvalue()
        assert "\r" in out and "5/5" in out  # tqdm drew its bar
        assert out.rstrip().endswith(
            "ocr done: 5 images, 5 cache hits, " + out.rstrip().rsplit(", ", 1)[1]
        )
        progress.configure("auto", stream=io.StringIO())
        assert progress.current_mode() == "lines"
    finally:
        progress.configure(None)


def test_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="progress mode"):
        progress.configure("loud")


# ----------------------------------------------------------------------------- the CLI

SUMMARY = re.compile(
    r"^\[membench\] (.+?) done: (\d+) (\w+)(?:, (\d+) cache hits)?(.*), "
    r"[\d.]+ (?:s|min)$"
)


def summaries(stderr: str) -> dict[str, tuple[int, int | None]]:
    out = {}
    for ln in stderr.splitlines():
        m = SUMMARY.match(ln)
        if m:
            out[m.group(1)] = (int(m.group(2)), None if m.group(4) is None else int(m.group(4)))
    return out


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    root = tmp_path_factory.mktemp("tiny")
    corpus = make_corpus(root)
    env = {"MEMBENCH_CACHE": str(root / "cache")}
    return root, corpus, env, freeze(corpus, root, env)


def test_a_cold_run_logs_every_step_with_a_summary(tiny):
    root, corpus, env, frozen = tiny
    env = {**env, "MEMBENCH_CACHE": str(root / "cold-cache")}  # nothing cached yet
    b = membench(
        "build",
        "--corpus",
        str(corpus),
        "--out",
        str(root / "s2"),
        "--lock",
        str(frozen["lock"]),
        "--manifest",
        str(frozen["manifest"]),
        env=env,
    )
    from membench.sources import SOURCES  # every registered source, mirrored or not

    assert f"[membench] build: started ({len(SOURCES)} sources)" in b.stderr
    assert summaries(b.stderr)["build"][0] == len(SOURCES)
    v = membench(
        "validate",
        "--sets",
        str(frozen["sets"]),
        "--corpus",
        str(corpus),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        env=env,
    )
    assert summaries(v.stderr)["corpus check"][0] == 24 and "validate" in summaries(v.stderr)
    r = membench(
        "run",
        "--system",
        "hybrid",
        "--sets",
        str(frozen["sets"]),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        "--corpus",
        str(corpus),
        "--out",
        str(root / "runs" / "hybrid-dev"),
        "--metrics",
        env=env,
    )
    got = summaries(r.stderr)
    assert got["ocr"] == (2, 0)  # two dev screenshots, cold: no cache hit
    # items without OCR, then the images and screenshots once their OCR is there
    assert got["content"][0] + got["content (OCR text)"][0] == got["ingest (hybrid)"][0] > 0
    assert got["content (OCR text)"][0] == 2
    assert got["embed"][1] == 0 and got["embed"][0] > 0
    assert got["queries (hybrid)"][0] > 0
    assert "score (hybrid-dev)" in got and got["bootstrap"][0] > 0
    for step in got:  # every step announced its start
        assert f"[membench] {step}: started" in r.stderr, step
    # warm: the same run again (into a new folder) reads OCR and embeddings from the cache
    w = membench(
        "run",
        "--system",
        "hybrid",
        "--sets",
        str(frozen["sets"]),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        "--corpus",
        str(corpus),
        "--out",
        str(root / "runs" / "warm"),
        env=env,
    )
    warm = summaries(w.stderr)
    assert warm["ocr"] == (2, 2)
    assert warm["embed"][1] == warm["embed"][0] > 0


def test_ocr_workers_overlap_the_embedding_and_the_steps_are_timed(tiny):
    """With OCR workers, the dense engine embeds the atoms that need no OCR while they run
    ("embed (while OCR runs)"), and the atoms are byte for byte those of an in-process run;
    every step lands in $MEMBENCH_TIMINGS, and the table of membench.core.steptimes shows it."""
    root, corpus, env, frozen = tiny
    timings = root / "timings.jsonl"
    env = {**env, "MEMBENCH_CACHE": str(root / "overlap-cache"), "MEMBENCH_TIMINGS": str(timings)}
    args = [
        "--system",
        "dense",
        "--sets",
        str(frozen["sets"]),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        "--corpus",
        str(corpus),
    ]
    r = membench(
        "run",
        *args,
        "--out",
        str(root / "runs" / "overlap"),
        "--config",
        "ocr_processes=2",
        env=env,
    )
    got = summaries(r.stderr)
    assert got["ocr"] == (2, 0)
    n_plain = got["content"][0]
    assert got["embed (while OCR runs)"][1] == 0 and got["embed (while OCR runs)"][0] > 0
    assert got["embed"][1] == got["embed (while OCR runs)"][0]  # index() found them cached
    one = membench(
        "run",
        *args,
        "--out",
        str(root / "runs" / "in-process"),
        env={**env, "MEMBENCH_CACHE": str(root / "in-process-cache")},
    )
    assert "embed (while OCR runs)" not in summaries(one.stderr)  # OCR in process: no overlap
    assert (root / "runs" / "overlap" / "atoms.jsonl").read_bytes() == (
        root / "runs" / "in-process" / "atoms.jsonl"
    ).read_bytes()
    rows = [json.loads(x) for x in timings.read_text().splitlines()]
    steps = {r_["step"] for r_ in rows if r_["kind"] == "step"}
    assert {
        "ingest (dense)",
        "ocr",
        "content",
        "content (OCR text)",
        "embed",
        "queries (dense)",
    } <= steps
    cmds = [r_ for r_ in rows if r_["kind"] == "command"]
    assert len(cmds) == 2 and all(c["ok"] and c["command"] == "run --system dense" for c in cmds)
    ocr_row = next(r_ for r_ in rows if r_.get("step") == "ocr")
    assert ocr_row["depth"] == 1 and ocr_row["done"] == 2 and ocr_row["cache_hits"] == 0
    from membench.core.steptimes import main as steptimes
    from membench.core.steptimes import read, table

    out = table(read(timings)).splitlines()
    assert not [ln for ln in out if "|" in ln or "&nbsp;" in ln]  # a terminal table
    cmd = [i for i, ln in enumerate(out) if ln.startswith("membench run --system dense ")]
    assert len(cmd) == 2
    first = out[cmd[0] : cmd[1]]  # the first run's rows, as they were opened
    names = [re.match(r"^(\s*\S.*?)(?:\s{2,}|$)", ln).group(1) for ln in first]
    ingest = next(i for i, ln in enumerate(first) if ln.startswith("  ingest (dense) "))
    ocr = next(i for i, ln in enumerate(first) if ln.startswith("    ocr "))
    assert ingest < ocr, first  # the parent before its sub-steps
    content = next(ln for ln in first if ln.strip().startswith("content "))
    assert f" {n_plain} " in content + " ", (content, names)
    assert any(ln.startswith("wall time, from the first command's start") for ln in out)
    assert any(ln.startswith("load average (1 min): ") for ln in out)
    assert steptimes([str(root / "missing.jsonl")]) == 1


def test_quiet_run_prints_no_progress(tiny):
    root, corpus, env, frozen = tiny
    r = membench(
        "run",
        "--system",
        "bm25",
        "--sets",
        str(frozen["sets"]),
        "--manifest",
        str(frozen["manifest"]),
        "--lock",
        str(frozen["lock"]),
        "--corpus",
        str(corpus),
        "--out",
        str(root / "runs" / "quiet"),
        "--quiet",
        env=env,
    )
    assert "[membench]" not in r.stderr and "[membench]" not in r.stdout
    assert "bm25 on dev:" in r.stdout  # the result line still prints
    q = membench("--quiet", "metrics", str(root / "runs" / "quiet"), env=env)
    assert "[membench]" not in q.stderr


def test_a_cli_call_does_not_leave_its_progress_mode_behind(monkeypatch, capsys):
    # `membench --quiet` or $MEMBENCH_PROGRESS choose the mode for that call only: a library
    # call made afterwards in the same process is back to the default (quiet)
    from membench.cli import main

    monkeypatch.delenv("MEMBENCH_PROGRESS", raising=False)
    progress.configure(None)
    assert main(["sources"]) == 0
    capsys.readouterr()
    assert progress.current_mode() == "quiet"
    with progress.step("after", total=1) as bar:
        bar.advance(1)
    assert capsys.readouterr().err == ""


def test_a_bad_progress_mode_in_the_environment_is_one_line(monkeypatch, capsys):
    from membench.cli import main

    monkeypatch.setenv("MEMBENCH_PROGRESS", "log")
    assert main(["sources"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        "membench: $MEMBENCH_PROGRESS='log': expected one of auto, bar, lines, quiet (or unset)"
    ]


def test_step_times_round_before_splitting_minutes():
    from membench.core.steptimes import _fmt

    assert _fmt(179.96) == "3:00.0"  # not 2:60.0
    assert _fmt(59.96) == "1:00.0"
    assert _fmt(59.94) == "59.9 s"
    assert _fmt(61.26) == "1:01.3"
    assert _fmt(0.04) == "0.0 s" and _fmt(754.0) == "12:34.0"


def test_a_unit_of_two_kinds_is_plural_in_both(log):
    """The OCR step counts images and PDF pages: "1111 images or pages", not "image or pages"."""
    s = progress.Step("ocr", total=3, unit="image or page", clock=Clock(), thread=False)
    s.advance()
    s.close()
    out = lines(log)
    assert out[0] == "[membench] ocr: started (3 images or pages)"
    assert out[-1].startswith("[membench] ocr done: 1 image or page")
