"""The main job cold, then warm: `make all` (sets, bm25, dense and hybrid on dev, the reports)
with a fresh, empty derived-data cache, then again with that cache filled, each step timed.

    .venv/bin/python bench/bench_mainjob.py [--out DIR] [--systems "bm25 dense hybrid"]
                                            [--limit N] [--config "KEY=VALUE ..."] [--keep]
                                            [--isa avx2] [--repeats N]
                                            [--save bench/results/mainjob.json]
    make bench-cold [ISA=avx2] [REPEATS=3]            # the same, with the defaults

``--isa avx2`` runs ``make all`` under ``python -m membench.core.isa avx2``: every process of
it (make, membench, the OCR workers, the notebook kernels) sees an x86-64-v3 CPU (AVX2, no
AVX-512, VNNI or AMX), the path of an ordinary laptop or cloud VM, whatever this CPU has.
``--repeats N`` makes N cold-then-warm pairs, each cold one with a new empty cache.

Everything goes under ``--out`` (default: a new folder under /tmp): ``cache/`` (the
``$MEMBENCH_CACHE`` of both runs: OCR, PDF text, embeddings, perceptual hashes, audit;
empty at the start, so nothing cached by earlier work is used), ``cold/`` and ``warm/``
(each with its own ``sets/``, ``runs/``, ``reports/``), and ``cold.jsonl`` / ``warm.jsonl``
(every step's time, ``$MEMBENCH_TIMINGS``). The warm run builds the sets, runs and reports
again into new folders (runs resume, so a warm run into the cold run's folders would run
nothing); only the cache is shared. The venv is the checkout's (``make setup`` first; its
install is not timed). Prints, for each run, the wall time, the load average before and after
(the machine is shared: a busy machine is slower) and the table of
:mod:`membench.core.steptimes`; writes ``summary.json``. ``--keep`` keeps the folder
(default: the cache and run folders are deleted at the end, the timings and summary kept).

``--save FILE`` (the defaults only: every system, no limit, no config) writes the published
record (:func:`record`: per run the wall time, the load, each command's and the OCR's time)
under the instruction-set path it was measured on (``avx2``, or the CPU's class, e.g.
``amx``), with the median run of the repeats as its cold and warm figures;
``bench/results/mainjob.json`` is the one the docs' tables
(``python -m membench.docsite.blocks README.md docs/speed.md``) and ``make``'s estimates
(:mod:`membench.core.estimate`) read.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
# the content layer's settings (make CONTENT=..., membench run --content)
CONTENT_KEYS = {"ocr_processes", "ocr_overlap", "ocr_engine", "pdf_ocr_dpi"}
# run settings of the dense engine (bm25 has none of them)
DENSE_KEYS = {
    "runtime",
    "precision",
    "batch_size",
    "chunk_size",
    "torch_threads",
    "streams",
    "max_tokens",
}


def one(
    name: str,
    out: Path,
    systems: str,
    limit: int | None,
    config: str,
    extra: list[str] = (),
    isa: str | None = None,
    cache: str = "cache",
) -> dict:
    from membench.core.steptimes import read, table

    d = out / name
    timings = out / f"{name}.jsonl"
    env = dict(os.environ, MEMBENCH_CACHE=str(out / cache), MEMBENCH_PROGRESS="lines")
    launch = [sys.executable, "-m", "membench.core.isa", isa, "--"] if isa else []
    cmd = [
        *launch,
        "make",
        "-C",
        str(REPO),
        "all",
        f"SETS={d / 'sets'}",
        f"RUNS={d / 'runs'}",
        f"REPORTS={d / 'reports'}",
        f"TIMINGS={timings}",
        f"SYSTEMS={systems}",
        *extra,
    ]
    if limit:
        cmd.append(f"LIMIT={limit}")
    if config:  # dense's keys go to dense and hybrid only (DENSECONFIG)
        dense = [kv for kv in config.split() if kv.split("=", 1)[0] in DENSE_KEYS]
        rest = [kv for kv in config.split() if kv not in dense]
        content = [kv for kv in rest if kv.split("=", 1)[0] in CONTENT_KEYS]
        rest = [kv for kv in rest if kv not in content]
        cmd.append("CONTENT=" + " ".join(f"--content {kv}" for kv in ["ocr_processes=2", *content]))
        cmd.append("RUNCONFIG=" + " ".join(f"--config {kv}" for kv in rest))
        cmd.append("DENSECONFIG=" + " ".join(f"--config {kv}" for kv in dense))
    load0 = os.getloadavg()
    t0 = time.monotonic()
    with open(out / f"{name}.log", "w") as log:
        proc = subprocess.run(cmd, env=env, stdout=log, stderr=subprocess.STDOUT)
    secs = time.monotonic() - t0
    load1 = os.getloadavg()
    if proc.returncode:
        raise SystemExit(f"{name}: make all failed ({proc.returncode}); see {out / name}.log")
    rows = read(timings)
    estimate = printed_estimate(
        (out / f"{name}.log").read_text(errors="replace"),
        "warm" if name.startswith("warm") else "cold",
    )
    print(
        f"\n## {name}{' on the ' + isa + ' path' if isa else ''}: {secs / 60:.1f} min wall "
        f"({secs:.0f} s); load average "
        f"{load0[0]:.1f} before, {load1[0]:.1f} after, on {os.cpu_count()} cores\n"
    )
    print(table(rows))
    if estimate:
        print(
            f"make printed {estimate['text']!r} before it: {estimate['seconds'] / secs:.2f}x "
            "what it took"
        )
    return {
        "seconds": round(secs, 1),
        "load_before": load0,
        "load_after": load1,
        "steps": rows,
        "estimate": estimate,
    }


def printed_estimate(log: str, which: str) -> dict | None:
    """What ``make all`` said it would take before its first step (membench.core.estimate:
    the figure scaled to the load, else the quiet machine's), for ``which`` (cold or warm)."""
    import re

    unit = {"s": 1, "min": 60, "h": 3600}
    head = log[: log.find("\n== ", log.find("== make all")) if "== make all" in log else 4000]
    for pat in (rf"{which} about ([\d.]+) (s|min|h)", rf"{which} ([\d.]+) (s|min|h)"):
        m = re.search(pat, head)
        if m:
            return {"text": m.group(0), "seconds": round(float(m.group(1)) * unit[m.group(2)], 1)}
    return None


from membench.systems.doubles import CONTENT_FREE  # noqa: E402  (the floors make all runs)

#: the baselines make all runs beside the systems (the Makefile's BASELINES)
BASELINES = ("nothing", "echo")
# a command of make all -> the part of the record it belongs to
PARTS = (
    ("corpus check", "sets"),
    ("build", "sets"),
    ("validate", "sets"),
    ("run --system dense", "dense"),
    ("run --system bm25", "bm25"),
    ("run --system hybrid", "hybrid"),
    ("leaderboard", "leaderboard"),
    ("report", "reports"),
) + tuple((f"run --system {d}", "beside") for d in (*BASELINES, *CONTENT_FREE))


def _part(command: str) -> str | None:
    return next((part for head, part in PARTS if command.startswith(head)), None)


def record(run: dict) -> dict:
    """What the docs and ``make``'s estimates take from one run (cold or warm) of the summary:
    its wall time and load, the seconds of each part of make all (``sets``: corpus check,
    build and validate; each system's run; the leaderboard; the reports) and of the dense run's
    OCR step with its count."""
    parts: dict[str, float] = {}
    ocr = None
    for r in run["steps"]:
        if r.get("kind") == "command":
            part = _part(str(r.get("command", "")))
            if part:
                parts[part] = round(parts.get(part, 0.0) + float(r["seconds"]), 1)
        elif (
            r.get("kind") == "step"
            and r.get("step") == "ocr"
            and str(r.get("command", "")).startswith("run --system dense")
        ):
            ocr = {
                "seconds": round(float(r["seconds"]), 1),
                "sources": r.get("done"),
                "first_time": (r.get("done") or 0) - (r.get("cache_hits") or 0),
            }
    return {
        "seconds": run["seconds"],
        "load_before": round(run["load_before"][0], 2),
        "load_after": round(run["load_after"][0], 2),
        "parts": parts,
        "ocr": ocr,
        "estimate": run.get("estimate"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None, help="the folder for everything (default: new, /tmp)")
    ap.add_argument("--systems", default="bm25 dense hybrid")
    ap.add_argument("--limit", type=int, default=None)
    ap.add_argument(
        "--config", default="", help='extra run settings, e.g. "ocr_engine=openvino precision=bf16"'
    )
    ap.add_argument("--corpus", default=None, help="another corpus root (with --manifest, --lock)")
    ap.add_argument("--manifest", default=None)
    ap.add_argument("--lock", default=None)
    ap.add_argument("--keep", action="store_true", help="keep the cache, sets, runs, reports")
    ap.add_argument(
        "--isa",
        choices=["avx2"],
        default=None,
        help="run on the AVX2 path (python -m membench.core.isa avx2)",
    )
    ap.add_argument("--repeats", type=int, default=1, help="cold-then-warm pairs (default 1)")
    ap.add_argument(
        "--save", default=None, help="write the published record here (bench/results/mainjob.json)"
    )
    ap.add_argument("--from-summary", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.save and (a.systems != "bm25 dense hybrid" or a.limit or a.config or a.corpus):
        ap.error(
            "--save records the main job as make all runs it: no --systems, --limit, "
            "--config or --corpus"
        )
    if a.from_summary:  # the record of a summary.json written before (--save needed)
        if not a.save:
            ap.error("--from-summary needs --save")
        save(json.loads(Path(a.from_summary).read_text()), Path(a.save))
        return 0
    out = Path(a.out) if a.out else Path(tempfile.mkdtemp(prefix="membench-mainjob-"))
    out.mkdir(parents=True, exist_ok=True)
    from membench.core import isa

    if a.isa:
        why = isa.can_mask()
        if why:
            raise SystemExit(f"--isa {a.isa}: {why}")
    caches = [f"cache{r + 1}" if a.repeats > 1 else "cache" for r in range(a.repeats)]
    for c in caches:
        if (out / c).exists() and any((out / c).iterdir()):
            raise SystemExit(f"{out / c} is not empty: a cold run needs an empty cache")
        (out / c).mkdir(exist_ok=True)
    print(f"main job cold then warm ({a.repeats}x), everything under {out}")
    extra = [
        f"{k.upper()}={Path(v).resolve()}"
        for k, v in (("corpus", a.corpus), ("manifest", a.manifest), ("lock", a.lock))
        if v
    ]
    commit = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    dirty = subprocess.run(
        [
            "git",
            "-C",
            str(REPO),
            "status",
            "--porcelain",
            "--",
            "membench",
            "Makefile",
            "pyproject.toml",
        ],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    desc = isa.describe()
    summary = {
        "commit": (commit + ("+changes" if dirty else "")) or None,
        "systems": a.systems,
        "limit": a.limit,
        "config": a.config,
        "isa": a.isa or desc["cpu_class"],
        "cpu_model": desc["cpu_model"],
        "runs": [],
    }
    for r, c in enumerate(caches):
        tag = f"-{r + 1}" if a.repeats > 1 else ""
        summary["runs"].append(
            {
                "cold": one(f"cold{tag}", out, a.systems, a.limit, a.config, extra, a.isa, c),
                "warm": one(f"warm{tag}", out, a.systems, a.limit, a.config, extra, a.isa, c),
            }
        )
        (out / "summary.json").write_text(json.dumps(summary, indent=1))
        if a.save:  # after each pair: the next pair's estimate reads the runs before it
            save(summary, Path(a.save))
        if not a.keep:
            for sub in (c, f"cold{tag}", f"warm{tag}"):
                shutil.rmtree(out / sub, ignore_errors=True)
    print(
        "\n"
        + "; ".join(
            f"cold {x['cold']['seconds'] / 60:.1f} min, warm {x['warm']['seconds'] / 60:.1f} min"
            for x in summary["runs"]
        )
        + f" ({summary['isa']} path); {out / 'summary.json'}"
    )
    return 0


def _median_run(runs: list[dict], which: str) -> dict:
    """The run of ``runs`` whose ``which`` (cold or warm) wall time is the median (the slower
    middle one of an even count): a measured run, not a mix of runs."""
    ordered = sorted(runs, key=lambda x: x[which]["seconds"])
    return ordered[len(ordered) // 2][which]


def save(summary: dict, path: Path) -> None:
    """Write the published record of ``summary`` into ``path`` under its instruction-set path
    (``paths[avx2]``, ``paths[amx]``, ...; the other paths' records are kept): every run's
    cold and warm :func:`record`, the median run of each as the figures, the machine, the
    date and the commit measured. The path's record it replaces moves, less its runs, to the
    head of the new one's ``earlier`` list (newest first), so no measurement is lost."""
    import datetime

    runs = (
        summary["runs"]
        if "runs" in summary
        else [{"cold": summary["cold"], "warm": summary["warm"]}]
    )
    commit = summary.get("commit")
    first = runs[0]["cold"]["steps"][0] if runs[0]["cold"]["steps"] else {}
    when = datetime.datetime.fromtimestamp(first.get("t", time.time()), datetime.timezone.utc)
    isa = summary.get("isa") or "unknown"
    rec = {
        "command": "make bench-cold"
        + (" ISA=avx2" if isa == "avx2" else "")
        + (f" REPEATS={len(runs)}" if len(runs) > 1 else ""),
        "isa": isa,
        "cpu_model": summary.get("cpu_model"),
        "measured": when.strftime("%Y-%m-%d"),
        "commit": commit,
        "cpus": first.get("cpus", os.cpu_count()),
        "cold": record(_median_run(runs, "cold")),
        "warm": record(_median_run(runs, "warm")),
        "runs": [{"cold": record(x["cold"]), "warm": record(x["warm"])} for x in runs],
    }
    try:
        old = json.loads(path.read_text())
    except (OSError, ValueError):
        old = {}
    paths = old.get("paths", {}) if old.get("format") == 2 else {}
    prev = paths.get(isa)
    if prev:  # the path's earlier records are kept, newest first, without their runs
        earlier = prev.pop("earlier", [])
        prev.pop("runs", None)
        rec["earlier"] = [prev] + earlier
    paths[isa] = rec
    path.write_text(json.dumps({"format": 2, "paths": paths}, indent=1) + "\n")
    print(
        f"the record: {path}, path {isa} (python -m membench.docsite.blocks README.md "
        "docs/speed.md rewrites the tables from it)"
    )


if __name__ == "__main__":
    raise SystemExit(main())
