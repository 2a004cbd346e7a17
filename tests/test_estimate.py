"""What make says a target will cost (membench.core.estimate) and the setup's progress
(membench.core.install_progress): both run with the standard library only (before the
virtualenv exists); the estimate scales the quiet figures by the load, adds the setup when it
is still to be done, says whether the cache is warm, quotes the last make all of this machine
and writes the start row of the step table; the setup prints pip's phases, its counts and a
heartbeat, and on failure pip's last lines and status."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from membench.core import estimate
from membench.core.paths import REPO_ROOT


def test_the_slowdown_fits_the_measured_runs():
    assert estimate.slowdown(0.0, 2) == 1.0 == estimate.slowdown(estimate.QUIET_LOAD, 2)
    for load, ratio in estimate.MEASURED:  # the rule is near what was measured
        assert 0.7 < estimate.slowdown(load, 2) / ratio < 1.4, (load, ratio)
    assert estimate.slowdown(10.0, 2) > estimate.slowdown(10.0, 8) > 1.0


def test_the_estimate_scales_adds_the_setup_and_reads_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMBENCH_CACHE", str(tmp_path / "cache"))
    quiet = estimate.lines("all", ["bm25", "dense", "hybrid"], load=0.5, n_cpus=2, setup=False)
    cold_s, warm_s = estimate.QUIET["all"]
    assert (
        f"cold {estimate.fmt(cold_s)}, warm {estimate.fmt(warm_s)}" in quiet[0]
        and "quiet" in quiet[1]
    )
    assert "Expect cold: the cache is empty" in quiet[2]
    busy = estimate.lines("all", ["bm25", "dense", "hybrid"], load=8.0, n_cpus=2, setup=True)
    k = estimate.slowdown(8.0, 2)
    assert f"expect about {k:.1f}x" in busy[1] and "with the setup" in busy[1]
    cold = estimate.QUIET["all"][0] * k + estimate.SETUP[0]
    assert f"cold about {estimate.fmt(cold)}" in busy[1]
    assert "virtualenv's setup, needed now" in busy[0]
    (tmp_path / "cache" / "ocr").mkdir(parents=True)
    (tmp_path / "cache" / "ocr" / "x.json").write_text("{}")
    assert "Expect warm" in estimate.lines("all", ["bm25"], load=0, n_cpus=2)[2]
    # bm25 alone pays the OCR dense would have done; a system not measured is named
    runs = estimate.lines("runs", ["bm25", "mem0"], load=0, n_cpus=2)[0]
    assert estimate.fmt(estimate.QUIET["bm25"][0] + estimate.OCR_COLD) in runs
    assert "without mem0: not measured" in runs


def test_the_last_make_all_here_is_quoted_and_the_start_row_written(tmp_path):
    tdir = tmp_path / "timings"
    tdir.mkdir()
    (tdir / "make-1.jsonl").write_text(
        json.dumps({"kind": "start", "t": 1.0, "load": 9.5, "cpus": 2})
        + "\n"
        + json.dumps({"kind": "end", "t": 2000.0, "wall": 2358.0})
        + "\n"
    )
    (tdir / "make-2.jsonl").write_text(json.dumps({"kind": "start", "t": 5.0}) + "\n")  # unfinished
    out = estimate.lines("all", ["bm25", "dense", "hybrid"], load=1, n_cpus=2, timings_dir=tdir)
    assert out[-1].startswith("   The last make all here took 39.3 min at load 9.5")
    # standard library only (-S: no site-packages), from the repository root
    t = tdir / "make-3.jsonl"
    r = subprocess.run(
        [
            sys.executable,
            "-S",
            "-m",
            "membench.core.estimate",
            "all",
            "--timings",
            str(t),
            "--setup",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("   Quiet machine") and "setup, needed now" in r.stdout
    row = json.loads(t.read_text())
    assert row["kind"] == "start" and row["cpus"] >= 1 and "load" in row
    bad = subprocess.run(
        [sys.executable, "-S", "-m", "membench.core.estimate", "everything"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


PIP_LIKE = r"""
import sys, time
for i in range(3):
    print(f"Collecting pkg{i}")
    print(f"  Downloading pkg{i}-1.0-py3-none-any.whl (1.{i} MB)")
    sys.stdout.flush(); time.sleep(0.3)
print("Building wheels for collected packages: membench"); sys.stdout.flush()
print("Installing collected packages: pkg0, pkg1, pkg2"); sys.stdout.flush()
time.sleep(1.5)
print("Successfully installed pkg0-1.0 pkg1-1.0 pkg2-1.0")
"""


def _install(tmp_path, code: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-S",
            "-m",
            "membench.core.install_progress",
            "--log",
            str(tmp_path / "pip.log"),
            "--timings",
            str(tmp_path / "t.jsonl"),
            "--every",
            "0.2",
            "--heartbeat",
            "0.5",
            *extra,
            "--",
            sys.executable,
            "-c",
            code,
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_setup_shows_pips_phases_counts_and_a_heartbeat(tmp_path):
    r = _install(tmp_path, PIP_LIKE)
    assert r.returncode == 0, r.stderr
    out = r.stdout.splitlines()
    assert all(ln.startswith("[setup] pip: ") for ln in out)
    assert "resolving and downloading the packages" in out[1]
    assert any("packages collected (latest download: pkg" in ln for ln in out)
    assert any("building (membench's C extension" in ln for ln in out)
    assert any(
        ln.endswith(
            "installing 3 packages (unpacking and compiling them: pip prints "
            "nothing until it is done)"
        )
        for ln in out
    )
    assert any("still working" in ln and "installing" in ln for ln in out)  # the long silence
    assert out[-1].startswith("[setup] pip: done: 3 packages installed, ")
    assert "Successfully installed" in (tmp_path / "pip.log").read_text()  # pip's whole output
    row = json.loads((tmp_path / "t.jsonl").read_text())
    assert row["kind"] == "command" and row["tool"] == "setup" and row["ok"]
    assert row["command"] == "setup: pip" and row["seconds"] > 1


def test_a_failed_setup_shows_pips_last_lines_and_status(tmp_path):
    r = _install(
        tmp_path,
        "import sys; print('Collecting x'); print('ERROR: No matching "
        "distribution found for x'); sys.exit(3)",
        "--label",
        "pip install",
    )
    assert r.returncode == 3
    assert "ERROR: No matching distribution found for x" in r.stderr
    assert "[setup] pip install: failed (exit 3)" in r.stderr and "pip.log" in r.stderr
    assert json.loads((tmp_path / "t.jsonl").read_text())["ok"] is False


@pytest.mark.parametrize("args", [[], ["--log", "x"], ["--log", "x", "--"]])
def test_the_setup_wrapper_refuses_a_missing_command(args, tmp_path):
    r = subprocess.run(
        [sys.executable, "-S", "-m", "membench.core.install_progress", *args],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and r.stderr


def test_the_quiet_figures_are_the_published_record(tmp_path):
    """make's estimate and the docs' tables read one record (bench/results/mainjob.json), a
    record per instruction-set path: the estimate takes the path this process computes on,
    every part of make all is there, cold and warm, and the parts add up to at most the wall
    time; a record that cannot be read gives no estimate rather than a made-up one."""
    import json

    from membench.core.isa import isa_class

    paths = json.loads(estimate.RECORD.read_text())["paths"]
    assert "avx2" in paths  # the path of an ordinary CPU is measured
    d, name = estimate.read_path()
    assert name == (isa_class() if isa_class() in paths else "avx2")
    assert estimate.QUIET == estimate.read_record(isa=name)[0]
    parts = {"sets", "dense", "bm25", "hybrid", "leaderboard", "reports", "all"}
    # the baselines and floors are a part of their own in the records made since they ran
    # beside the reference systems; a path's older record has them inside reports
    assert parts <= set(estimate.QUIET) <= parts | {"beside"}
    assert estimate.QUIET["all"] == (d["cold"]["seconds"], d["warm"]["seconds"])
    assert estimate.OCR_COLD == d["cold"]["ocr"]["seconds"] < estimate.QUIET["dense"][0]
    for rec in paths.values():
        q = {p: (v, rec["warm"]["parts"].get(p, 0.0)) for p, v in rec["cold"]["parts"].items()}
        for i, which in ((0, "cold"), (1, "warm")):
            parts = sum(v[i] for v in q.values())
            # dense's queries, bm25 and hybrid run side by side: the parts may add up to more
            # than the wall, which holds at least the parts that run one after the other
            alone = parts - q["bm25"][i] - q["hybrid"][i]
            assert alone <= rec[which]["seconds"] < parts + 60
        assert (
            rec["cold"]["seconds"]
            == sorted(r["cold"]["seconds"] for r in rec["runs"])[len(rec["runs"]) // 2]
        )  # the median run
    assert estimate.read_record(tmp_path / "none.json") == ({}, 0.0)
    (tmp_path / "bad.json").write_text('{"cold": {}}')
    assert estimate.read_record(tmp_path / "bad.json") == ({}, 0.0)


def test_an_unmeasured_path_borrows_the_nearest_slower_one(tmp_path):
    """An AVX-512 CPU without a record of its own gets the AVX2 path's figures (an estimate
    that errs long), an AMX CPU its own; with one CPU the figures double."""
    import json

    rec = {
        "cold": {"seconds": 600.0, "parts": {"dense": 500.0}, "ocr": {"seconds": 300.0}},
        "warm": {"seconds": 100.0, "parts": {"dense": 50.0}},
        "cpus": 2,
    }
    f = tmp_path / "mj.json"
    f.write_text(
        json.dumps(
            {
                "format": 2,
                "paths": {"avx2": rec, "amx": {**rec, "cold": {**rec["cold"], "seconds": 300.0}}},
            }
        )
    )
    assert estimate.read_path(f, "avx512")[1] == "avx2"
    assert estimate.read_path(f, "avx2")[1] == "avx2"
    assert estimate.read_path(f, "amx")[1] == "amx"
    assert estimate.read_record(f, "amx")[0]["all"][0] == 300.0
    assert estimate.read_record(f, "avx512")[0]["all"][0] == 600.0
    assert estimate.cpu_factor(1, 2) == 2.0 and estimate.cpu_factor(2, 2) == 1.0
    assert estimate.cpu_factor(16, 2) == 1.0


def test_the_load_is_the_work_running_now():
    """The load an estimate scales by is sampled from /proc/stat (runnable processes, this one
    left out), not the 1-minute average that still counts a job just finished."""
    now = estimate.running_now()
    assert now is None or now >= 0.0
    assert estimate.load_now() >= 0.0


def test_make_test_quotes_the_suites_last_measure_and_the_load_now(tmp_path):
    rec = {
        "seconds": 1083.4,
        "counts": {"passed": 2332, "skipped": 15, "xfailed": 5},
        "workers": 2,
        "cpus": 2,
        "load_before": 1.26,
        "load_during": 3.44,
        "measured": "2026-12-07",
        "commit": "abc1234",
    }
    path = tmp_path / "testsuite.json"
    path.write_text(json.dumps({"format": 1, "targets": {"test": rec}}))
    got = "\n".join(estimate.test_lines("test", load=4.0, n_cpus=2, path=path))
    assert "18:03 of pytest (2,332 passed, 15 skipped, 5 xfailed) in 2 workers on 2 CPUs" in got
    assert "load average 1.3 before and 3.4 during" in got and "2026-12-07" in got
    assert "now: load 4.0 on 2 CPUs" in got
    # a target without a record, and a record that cannot be read: said, not guessed
    assert "Not measured yet" in estimate.test_lines("test-fast", load=1, n_cpus=2, path=path)[0]
    path.write_text("{torn")
    assert "Not measured yet" in estimate.test_lines("test", load=1, n_cpus=2, path=path)[0]
    r = subprocess.run(
        [sys.executable, "-m", "membench.core.estimate", "test"],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 0 and r.stdout.startswith("   "), r.stderr
