"""How long ``make``'s targets take: the figures measured on a quiet machine, scaled by the load
now, plus the setup, and what the last ``make all`` on this machine took (docs/speed.md, "What
`make` says it will take, and what it took", says how and why).

    python -m membench.core.estimate TARGET [--systems "bm25 dense hybrid"] [--timings FILE]

Start at :func:`main` and :func:`lines`. ``TARGET`` is ``all``, ``setup``, ``sets``, ``runs``
or ``reports``; it prints a few lines that start with three spaces (under the target's ``==``
line). ``test`` and ``test-fast`` print what that target took when last measured
(:func:`test_lines`: ``bench/results/testsuite.json``, from ``bench/bench_testsuite.py
--save``) and the load now. For ``all`` with ``--timings`` it also appends the ``start`` row
(Unix time, 1-minute load average, CPUs) to the timings file, from which the step table
(:mod:`membench.core.steptimes`) takes the wall time.

The quiet figures (:data:`QUIET`) are the record of ``make bench-cold`` in
``bench/results/mainjob.json`` (:func:`read_record`), on a 2-core machine at a low load;
:func:`slowdown` scales them by ``1 + a x (load - 0.9) / CPUs``, ``load`` the other work running
now (:func:`load_now`: the runnable processes of ``/proc/stat``, else the 1-minute load
average) and ``a`` the least-squares fit to the measured ``make all`` runs (:data:`MEASURED`).
The cold figures apply when the derived-data cache is empty (its presence is reported); a
finished ``make all``'s wall time and load under ``runs/timings`` are quoted too.

Standard library only: it runs with the system's ``python3`` before the virtualenv exists.
Touches: appends one line to ``--timings`` (``all`` only); reads the records, the cache
folder's listing and ``runs/timings``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

#: the record of ``make bench-cold`` that the docs' tables print too (``bench/bench_mainjob.py
#: --save``): per part of ``make all`` its cold and warm seconds, and the dense run's OCR
RECORD = Path(__file__).resolve().parents[2] / "bench" / "results" / "mainjob.json"
#: the record of ``bench/bench_testsuite.py --save``: what ``make test`` and ``make
#: test-fast`` took, with the load they met
TEST_RECORD = RECORD.with_name("testsuite.json")


#: the order in which an unmeasured instruction-set class borrows a measured path's figures:
#: its own, else the nearest slower one (an estimate that errs long), else any
FALLBACK = {
    "amx": ("amx", "avx512-bf16", "avx512", "avx2"),
    "avx512-bf16": ("avx512-bf16", "avx512", "avx2"),
    "avx512": ("avx512", "avx2"),
    "avx2": ("avx2",),
    "baseline": ("avx2",),
    "unknown": ("avx2",),
}


def read_path(path: Path = RECORD, isa: str | None = None) -> tuple[dict, str | None]:
    """``(record, path name)`` of the record of ``make bench-cold`` that applies to the
    instruction-set class ``isa`` (default: this process's, :func:`membench.core.isa.
    isa_class`): the path measured on it, else the nearest slower one (:data:`FALLBACK`);
    ``({}, None)`` when the file cannot be read."""
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}, None
    paths = d.get("paths") if isinstance(d, dict) and d.get("format") == 2 else None
    if not isinstance(paths, dict) or not paths:
        return {}, None
    if isa is None:
        from .isa import isa_class

        isa = isa_class()
    for name in FALLBACK.get(isa, ("avx2",)) + tuple(sorted(paths)):
        if isinstance(paths.get(name), dict):
            return paths[name], name
    return {}, None


def read_record(
    path: Path = RECORD, isa: str | None = None
) -> tuple[dict[str, tuple[float, float]], float]:
    """``(QUIET, OCR_COLD)`` of the record that applies here (:func:`read_path`): quiet-machine
    seconds (cold, warm) per part of ``make all`` (``sets``, ``dense``, ``bm25``, ``hybrid``, ``beside``,
    ``leaderboard``, ``reports``, and ``all``, make all's wall time), and of dense's cold
    figure the OCR's seconds (bm25 and hybrid pay it when they run cold without dense before
    them). Empty when the record cannot be read."""
    d, _ = read_path(path, isa)
    try:
        cold, warm = d["cold"], d["warm"]
        quiet = {p: (float(v), float(warm["parts"].get(p, 0.0))) for p, v in cold["parts"].items()}
        quiet["all"] = (float(cold["seconds"]), float(warm["seconds"]))
        return quiet, float((cold.get("ocr") or {}).get("seconds") or 0.0)
    except (KeyError, TypeError, AttributeError, ValueError):
        return {}, 0.0


QUIET, OCR_COLD = read_record()
RECORD_PATH = read_path()[1]
RECORD_CPUS = int(read_path()[0].get("cpus") or 2)
#: the virtualenv's setup (``python3 -m venv`` and ``pip install -e .[test]``, downloads
#: included): seconds and the load average it was measured at, on a fresh clone
SETUP: tuple[float, float] = (201, 10.0)
#: the load average the quiet figures were measured at (0.3-1.5 before each run)
QUIET_LOAD = 0.9
#: the whole of ``make all`` measured cold without the setup under load, on 2 CPUs, as (load
#: average from other work, its wall time over the quiet cold figure of the same code then):
#: make bench-cold at 1.0-1.7, 798 s against 544 s (docs/speed.md); a fresh clone at load
#: about 10 during the run, about 8 of it other work, 2157 s against 544 s (39:18 with a 3:21
#: setup). Both before the image-only decks; the ratio is what carries over
MEASURED: tuple[tuple[float, float], ...] = ((1.35, 798 / 544), (8.0, 2157 / 544))
MEASURED_CPUS = 2


def _fit() -> float:
    """``a`` of :func:`slowdown`: least squares through the origin of (slowdown - 1) against
    (load - QUIET_LOAD) / CPUs over :data:`MEASURED`."""
    xs = [(load - QUIET_LOAD) / MEASURED_CPUS for load, _ in MEASURED]
    ys = [ratio - 1 for _, ratio in MEASURED]
    return sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs)


SLOPE = round(_fit(), 2)

PARTS = {
    "sets": ("sets",),
    "runs": ("dense", "bm25", "hybrid", "beside"),
    "reports": ("leaderboard", "reports"),
}


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def running_now(samples: int = 5, gap: float = 0.02) -> float | None:
    """Other work's runnable processes right now: the mean of ``procs_running`` in
    ``/proc/stat`` over a few samples, less this process; None where it cannot be read."""
    vals = []
    for i in range(samples):
        try:
            with open("/proc/stat", encoding="ascii") as f:
                for line in f:
                    if line.startswith("procs_running"):
                        vals.append(int(line.split()[1]))
                        break
        except (OSError, ValueError):
            return None
        if i + 1 < samples:
            time.sleep(gap)
    return max(0.0, sum(vals) / len(vals) - 1) if vals else None


def load_now() -> float:
    """The load a job starting now meets: the other work running now (:func:`running_now`,
    which does not lag as the 1-minute load average does: right after a job ends the average
    still counts it for a minute), at least the quiet machine's, else the 1-minute load
    average."""
    now = running_now()
    if now is not None:
        return max(now, QUIET_LOAD) if now > 0.5 else now
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


def slowdown(load: float, n_cpus: int) -> float:
    """How many times the quiet figures a job takes at ``load`` (the other work's 1-minute
    load average) on ``n_cpus`` CPUs: ``1 + SLOPE x (load - QUIET_LOAD) / CPUs``, at least 1."""
    return 1.0 + SLOPE * max(0.0, load - QUIET_LOAD) / max(1, n_cpus)


def cpu_factor(n_cpus: int, record_cpus: int | None = None) -> float:
    """How many times the record's figures the job takes for want of CPUs: ``make all``
    keeps 2 CPUs busy (2 OCR workers, dense's streams, two runs side by side) where the record
    had 2, so with 1 CPU it takes about twice as long; more CPUs than the record's are not
    used by the parts that dominate (the OCR runs in 2 workers), so they count as the
    record's."""
    rec = record_cpus or RECORD_CPUS
    return max(1.0, rec / max(1, min(n_cpus, rec)))


def fmt(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    return f"{seconds / 60:.1f} min" if seconds < 5400 else f"{seconds / 3600:.1f} h"


def cache_warm() -> tuple[bool, Path]:
    """Whether the derived-data cache holds OCR or embeddings (then the warm figures apply)."""
    base = Path(os.environ.get("MEMBENCH_CACHE") or Path.home() / ".cache" / "membench")
    for kind in ("ocr", "emb"):
        d = base / kind
        try:
            if d.is_dir() and any(d.iterdir()):
                return True, base
        except OSError:
            continue
    return False, base


def last_make_all(timings_dir: Path) -> dict | None:
    """The newest timings file under ``timings_dir`` with an ``end`` row (a finished
    ``make all``): its wall time and load."""
    try:
        files = sorted(
            timings_dir.glob("make-*.jsonl"), key=lambda p: p.stat().st_mtime, reverse=True
        )
    except OSError:
        return None
    for f in files[:20]:
        try:
            lines = f.read_text(encoding="utf-8").splitlines()
        except OSError:
            continue
        rows = []
        for line in lines:
            try:
                rows.append(json.loads(line))
            except ValueError:
                continue
        end = next(
            (
                r
                for r in reversed(rows)
                if isinstance(r, dict) and r.get("kind") == "end" and r.get("wall")
            ),
            None,
        )
        start = next((r for r in rows if isinstance(r, dict) and r.get("kind") == "start"), None)
        if end and start:
            return {
                "file": str(f),
                "wall": float(end["wall"]),
                "load": start.get("load"),
                "systems": start.get("systems"),
            }
    return None


def _quiet(parts: list[str]) -> tuple[float, float]:
    cold = sum(QUIET[p][0] for p in parts)
    warm = sum(QUIET[p][1] for p in parts)
    return cold, warm


def lines(
    target: str,
    systems: list[str],
    *,
    load: float,
    n_cpus: int,
    timings_dir: Path | None = None,
    setup: bool = True,
) -> list[str]:
    """What :func:`main` prints for ``target`` (see the module docstring)."""
    if not QUIET and target != "setup":
        return [f"   No estimate: {RECORD} (the record of make bench-cold) cannot be read."]
    k = slowdown(load, n_cpus) * cpu_factor(n_cpus)
    warm, cache = cache_warm()
    busy = (
        f"now: load {load:.1f} on {n_cpus} CPUs, so expect about {k:.1f}x"
        if k >= 1.15
        else f"now: load {load:.1f} on {n_cpus} CPUs (quiet)"
    )
    if cpu_factor(n_cpus) > 1:
        busy += (
            f" ({cpu_factor(n_cpus):.1f}x of it for {n_cpus} CPU(s) against the record's"
            f" {RECORD_CPUS})"
        )
    if target == "setup":
        secs, at = SETUP
        return [
            (
                f"   First time only: create the virtualenv and pip install membench with "
                f"its test extra (torch, JupyterLab, Ray, ...): {fmt(secs)} measured at load "
                f"{at:.0f} on a fresh clone, mostly downloads; pip's progress follows."
            )
        ]
    if target == "all":
        parts = [
            "sets",
            *[s for s in ("dense", "bm25", "hybrid") if s in systems],
            "leaderboard",
            "reports",
        ]
    else:
        parts = [p for p in PARTS[target] if p in QUIET and (target != "runs" or p in systems)]
    cold, warm_s = _quiet(parts)
    if target == "all" and set(systems) == {"bm25", "dense", "hybrid"}:
        cold, warm_s = QUIET["all"]
    if target in ("all", "runs") and "dense" not in systems and {"bm25", "hybrid"} & set(systems):
        cold += OCR_COLD  # the first of them does the OCR dense would have
    # the setup is added unscaled (mostly downloads), when it is still to be done
    extra = SETUP[0] if target == "all" and setup else 0.0
    other = [s for s in systems if s not in QUIET] if target in ("all", "runs") else []
    unmeasured = f" (without {', '.join(other)}: not measured)" if other else ""
    which = "warm: the cache holds OCR and embeddings" if warm else "cold: the cache is empty"
    if target != "all":
        scaled = (
            f"cold about {fmt(cold * k)}, warm about {fmt(warm_s * k)} at load "
            f"{load:.1f} on {n_cpus} CPUs ({k:.1f}x the quiet machine's {fmt(cold)} / "
            f"{fmt(warm_s)})"
            if k >= 1.15
            else f"cold about {fmt(cold)}, warm about {fmt(warm_s)} (a quiet machine)"
        )
        return [f"   Cold/warm: {scaled}{unmeasured}; expect {which}."]
    from .isa import isa_class

    here = isa_class()
    measured = (
        f"measured on the {RECORD_PATH} path"
        if RECORD_PATH == here
        else f"this CPU computes on the {here} path; figures of the {RECORD_PATH} path"
    )
    out = [
        f"   Quiet machine (make bench-cold, load < 2, {RECORD_CPUS} CPUs; {measured}): "
        f"cold {fmt(cold)}, warm {fmt(warm_s)}{unmeasured}"
        + (
            f"; plus the virtualenv's setup, needed now (about {fmt(SETUP[0])} at load "
            f"{SETUP[1]:.0f})."
            if setup
            else "; the virtualenv is set up."
        )
    ]
    if k >= 1.15 or extra:
        out.append(
            f"   {busy}: cold about {fmt(cold * k + extra)}, warm about "
            f"{fmt(warm_s * k + extra)}" + (" with the setup" if extra else "") + " "
            f"(1 + {SLOPE} x (load - {QUIET_LOAD}) / CPUs, fitted to the runs measured "
            f"at load {' and '.join(f'{x:g}' for x, _ in MEASURED)}; a rough guide)."
        )
    else:
        out.append(f"   {busy}.")
    out.append(f"   Expect {which} ({cache}).")
    if timings_dir is not None:
        last = last_make_all(timings_dir)
        if last:
            at = f" at load {float(last['load']):.1f}" if last.get("load") is not None else ""
            out.append(f"   The last make all here took {fmt(last['wall'])}{at} ({last['file']}).")
    return out


def mmss(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}:{s % 60:02d}"


def test_record(target: str, path: Path = TEST_RECORD) -> dict | None:
    """The measured record of ``make TARGET`` (``test`` or ``test-fast``), or None when the
    file cannot be read or has none."""
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
        rec = d["targets"][target]
        for k in ("seconds", "load_before", "load_during", "workers", "cpus"):
            float(rec[k])
        return rec
    except (OSError, ValueError, KeyError, TypeError):
        return None


def test_summary(rec: dict) -> str:
    """One record of :data:`TEST_RECORD` in words: pytest's wall time, its counts, its
    workers, the load before and during the run, the date and commit."""
    c = rec.get("counts") or {}
    counts = ", ".join(
        f"{c[k]:,} {k}" for k in ("passed", "skipped", "xfailed", "deselected") if c.get(k)
    )
    return (
        f"{mmss(float(rec['seconds']))} of pytest ({counts}) in {rec.get('workers')} "
        f"workers on {rec.get('cpus')} CPUs, at load average "
        f"{float(rec['load_before']):.1f} before and {float(rec['load_during']):.1f} during "
        f"the run (other work and its own workers), {rec.get('measured')}, commit "
        f"{rec.get('commit')}"
    )


def test_lines(target: str, *, load: float, n_cpus: int, path: Path = TEST_RECORD) -> list[str]:
    """What ``make test`` / ``make test-fast`` prints first: the last measure
    (:func:`test_summary`) and the load now."""
    rec = test_record(target, path)
    now = f"now: load {load:.1f} on {n_cpus} CPUs (a higher load is a slower run)."
    if rec is None:
        return [f"   Not measured yet ({path}: bench/bench_testsuite.py --save); {now}"]
    return [f"   Last measured: {test_summary(rec)};", f"   {now}"]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "target", choices=["all", "setup", "sets", "runs", "reports", "test", "test-fast"]
    )
    ap.add_argument(
        "--systems", default="bm25 dense hybrid", help="the systems make runs (SYSTEMS)"
    )
    ap.add_argument(
        "--timings",
        help="the timings file of this make call (all: the start "
        "row is appended to it; its folder holds earlier calls' files)",
    )
    ap.add_argument(
        "--setup",
        action="store_true",
        help="all: the virtualenv is still to be set up (its time is added)",
    )
    a = ap.parse_args(argv)
    systems = a.systems.split()
    load, n = load_now(), cpus()
    tdir = Path(a.timings).parent if a.timings else None
    if a.target in ("test", "test-fast"):
        print("\n".join(test_lines(a.target, load=load, n_cpus=n)), flush=True)
        return 0
    for line in lines(a.target, systems, load=load, n_cpus=n, timings_dir=tdir, setup=a.setup):
        print(line)
    if a.target == "all" and a.timings:
        try:
            Path(a.timings).parent.mkdir(parents=True, exist_ok=True)
            with open(a.timings, "a", encoding="utf-8") as f:
                f.write(
                    json.dumps(
                        {
                            "kind": "start",
                            "t": round(time.time(), 3),
                            "load": round(load, 2),
                            "cpus": n,
                            "systems": systems,
                        }
                    )
                    + "\n"
                )
        except OSError as e:
            print(f"   (timings not recorded: {e})", file=sys.stderr)
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
