"""The ``membench`` command line. Every subcommand is a thin layer over a library function;
errors caused by input print one located line and exit with status 2 (no traceback)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from .core import progress
from .core.errors import MembenchError
from .core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH, corpus_root


def _corpus_cmd(a: argparse.Namespace) -> int:
    from .sets.corpus import check_corpus, write_manifest

    root = corpus_root(a.corpus)
    manifest = Path(a.manifest)
    if a.action == "manifest":
        entries = write_manifest(root, manifest)
        print(f"wrote {manifest}: {len(entries)} sources, "
              f"{sum(len(e.files) for e in entries)} files")
        return 0
    res = check_corpus(root, manifest)
    for p in res.problems:
        print(p)
    print(f"corpus check: {res.checked} files against {manifest}: "
          f"{'OK' if res.ok else f'{len(res.problems)} problem(s)'}")
    return 0 if res.ok else 1


def _sources_cmd(a: argparse.Namespace) -> int:
    from .sets.sources import SOURCES

    root = None
    try:
        root = corpus_root(a.corpus)
    except MembenchError:
        pass
    print("| source | name | modality | in mirror | annotation source | license |")
    print("|---|---|---|---|---|---|")
    for s in SOURCES:
        here = "yes" if root and s.available(root) else "no"
        print(f"| {s.key} | {s.name} | {s.modality} | {here} | {s.annotation_source} | "
              f"{s.license} |")
    return 0


def _build_cmd(a: argparse.Namespace) -> int:
    from .sets.build import build_sets, check_lock, render_counts, render_coverage

    root = corpus_root(a.corpus)
    out = Path(a.out)
    t0 = time.time()
    res = build_sets(root, out, only=set(a.source) if a.source else None)
    print(f"built {len(res.records)} records over {len(res.items)} items into {out} "
          f"in {time.time() - t0:.1f} s\n")
    print(render_counts(res.stats))
    print()
    print(render_coverage([c.as_dict() for c in res.coverage]))
    print()
    for f, d in res.digests.items():
        print(f"{d}  {out / f}")
    verdict = check_lock(res.digests, Path(a.lock), update=a.update_lock, partial=bool(a.source))
    print("\n" + "\n".join(verdict.lines))
    return 0 if verdict.ok else 1


def _validate_cmd(a: argparse.Namespace) -> int:
    from .sets.validate import validate_sets

    corpus = corpus_root(a.corpus) if (a.corpus or not a.no_corpus) else None
    findings = validate_sets(Path(a.sets), Path(a.manifest),
                             lock=None if a.no_lock else Path(a.lock), corpus=corpus)
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        print(f)
    if a.json:
        Path(a.json).write_text(json.dumps([f.__dict__ for f in findings], indent=1))
    print(f"validate {a.sets}: {len(errors)} error(s), {len(findings) - len(errors)} warning(s)")
    return 1 if errors else 0


def _parse_config(pairs: list[str] | None) -> dict:
    cfg = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep:
            raise MembenchError(f"--config {p!r}: expected KEY=VALUE")
        try:
            cfg[k] = json.loads(v)
        except json.JSONDecodeError:
            cfg[k] = v
    return cfg


def _run_cmd(a: argparse.Namespace) -> int:
    from .run.runner import run_system
    from .run.systems import make_system

    system = make_system(a.system, _parse_config(a.config))
    out = Path(a.out) if a.out else Path("runs") / f"{system.name}-{a.split}"
    t0 = time.time()
    meta = run_system(system, Path(a.sets), a.split, out, corpus_root(a.corpus),
                      modalities=a.modality, limit=a.limit, final=a.final)
    print(f"{system.name} on {a.split}: {meta['queries']} queries, {meta['atoms']} atoms, "
          f"ingest {meta['ingest_seconds']:.1f} s, total {time.time() - t0:.1f} s -> {out}")
    if a.metrics:
        return _metrics_cmd(argparse.Namespace(run_dir=str(out), sets=a.sets, json=False))
    return 0


def _import_cmd(a: argparse.Namespace) -> int:
    from .run.importer import import_trec

    meta = import_trec(Path(a.trec), Path(a.atoms), Path(a.sets), a.split, Path(a.out), a.name,
                       cartridge_file=Path(a.cartridge) if a.cartridge else None,
                       cartridge_top=a.cartridge_top, final=a.final)
    print(f"imported {a.trec}: {meta['queries']} {a.split} queries, {meta['atoms']} atoms -> {a.out}")
    return 0


def _report_cmd(a: argparse.Namespace) -> int:
    from .report.render import report

    t0 = time.time()
    done = report([Path(r) for r in a.run], Path(a.out), Path(a.sets) if a.sets else None,
                  compare=[Path(r) for r in a.compare or []],
                  corpus=corpus_root(a.corpus) if a.corpus else None, force=a.force)
    for r in done:
        print(f"  {r.html}")
    print(f"{len(done)} report page(s) in {time.time() - t0:.0f} s; open {Path(a.out) / 'index.html'}")
    return 0


def _calibrate_cmd(a: argparse.Namespace) -> int:
    from .analysis.calibrate import calibrate_run
    from .run.systems.reference import calibration_path

    cal = calibrate_run(Path(a.run_dir), Path(a.sets) if a.sets else None)
    out = Path(a.out) if a.out else calibration_path(cal["system"])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(cal, indent=2, sort_keys=True) + "\n")
    for m, c in cal["modalities"].items():
        print(f"{m:14s} threshold {c['threshold']:.6g}  answerable kept {c['answerable_kept']:.3f} "
              f"({c['n_answerable']})  unanswerable kept {c['unanswerable_kept']:.3f} "
              f"({c['n_unanswerable']}){'' if c['within_gate'] else '  (gate not reachable)'}")
    print(f"wrote {out}")
    return 0


def _metrics_cmd(a: argparse.Namespace) -> int:
    from .metrics import format_table, metrics_for_run_dir

    m = metrics_for_run_dir(Path(a.run_dir), Path(a.sets) if a.sets else None)
    print(json.dumps(m, indent=1) if a.json else format_table(m))
    return 0


def _compare_cmd(a: argparse.Namespace) -> int:
    from .analysis.compare import compare_runs, format_comparison

    comp = compare_runs(a.run_dirs, Path(a.sets) if a.sets else None,
                        n_resamples=a.resamples)
    print(format_comparison(comp, metrics=a.metric or None))
    if a.json:
        comp.pairs.to_json(a.json, orient="records", indent=1)
        print(f"wrote the paired tests to {a.json}")
    return 0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="membench", description=__doc__)
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars or progress lines (results and errors still print)")
    sub = p.add_subparsers(dest="cmd", required=True)

    c = sub.add_parser("corpus", help="freeze or check the corpus mirror against the manifest")
    c.add_argument("action", choices=["check", "manifest"])
    c.add_argument("--corpus", help="corpus root (default: $MEMBENCH_CORPUS or ../shared/corpus)")
    c.add_argument("--manifest", default=str(MANIFEST_PATH))
    c.set_defaults(func=_corpus_cmd)

    s = sub.add_parser("sources", help="list every registered source, mirrored or not")
    s.add_argument("--corpus")
    s.set_defaults(func=_sources_cmd)

    b = sub.add_parser("build", help="build the annotation sets from the corpus mirror")
    b.add_argument("--corpus")
    b.add_argument("--out", default=str(DEFAULT_SETS_DIR))
    b.add_argument("--source", action="append", help="only this source key (repeatable)")
    b.add_argument("--lock", default=str(LOCK_PATH))
    b.add_argument("--update-lock", action="store_true", help="freeze this build's sha256s")
    b.set_defaults(func=_build_cmd)

    v = sub.add_parser("validate", help="check built sets against every hard rule")
    v.add_argument("--sets", default=str(DEFAULT_SETS_DIR))
    v.add_argument("--corpus")
    v.add_argument("--no-corpus", action="store_true", help="skip corpus file checks")
    v.add_argument("--manifest", default=str(MANIFEST_PATH))
    v.add_argument("--lock", default=str(LOCK_PATH))
    v.add_argument("--no-lock", action="store_true", help="skip the set-file digest check")
    v.add_argument("--json", help="also write the findings as JSON here")
    v.set_defaults(func=_validate_cmd)

    r = sub.add_parser("run", help="run a memory system over a split (resumes a partial run)")
    r.add_argument("--system", required=True, help="bm25, dense, hybrid, oracle, leaky, random, "
                   "an entry point in the membench.systems group, or module:Class")
    r.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="system parameter (JSON value), repeatable")
    r.add_argument("--split", default="dev", choices=["dev", "test"])
    r.add_argument("--final", action="store_true", help="allow the frozen test split (logged)")
    r.add_argument("--sets", default=str(DEFAULT_SETS_DIR))
    r.add_argument("--corpus")
    r.add_argument("--out", help="RUN_DIR (default runs/<system>-<split>)")
    r.add_argument("--modality", action="append", help="only this modality (repeatable)")
    r.add_argument("--limit", type=int, help="at most N queries per modality (hash-chosen)")
    r.add_argument("--metrics", action="store_true", help="compute metrics when done")
    r.set_defaults(func=_run_cmd)

    im = sub.add_parser("import-run", help="turn a TREC run + atoms file into a RUN_DIR")
    im.add_argument("--trec", required=True, help="TREC run: qid Q0 atom_id rank score tag")
    im.add_argument("--atoms", required=True, help="atoms.jsonl (see docs/runs.md)")
    im.add_argument("--name", required=True, help="the system's name, for reports")
    im.add_argument("--out", required=True)
    im.add_argument("--split", default="dev", choices=["dev", "test"])
    im.add_argument("--final", action="store_true")
    im.add_argument("--sets", default=str(DEFAULT_SETS_DIR))
    cg = im.add_mutually_exclusive_group(required=True)
    cg.add_argument("--cartridge", help="JSON lines {query_id, cartridge: [atom_id, ...]}")
    cg.add_argument("--cartridge-top", type=int, metavar="K", help="cartridge = top K hits")
    im.set_defaults(func=_import_cmd)

    rp = sub.add_parser("report", help="execute the notebooks and render HTML reports")
    rp.add_argument("--run", action="append", required=True, metavar="RUN_DIR",
                    help="a run directory (repeatable): pages 01-04 for each, and page 05 "
                    "comparing them when there are several")
    rp.add_argument("--compare", action="append", metavar="RUN_DIR",
                    help="more runs (repeatable): the same as --run")
    rp.add_argument("--force", action="store_true",
                    help="replace report folders that already hold pages")
    rp.add_argument("--out", default="reports")
    rp.add_argument("--sets", help="sets folder (default bench/sets)")
    rp.add_argument("--corpus")
    rp.set_defaults(func=_report_cmd)

    ca = sub.add_parser("calibrate", help="cartridge thresholds per modality from a dev run")
    ca.add_argument("run_dir")
    ca.add_argument("--sets")
    ca.add_argument("--out", help="default bench/calibration/<system>.json")
    ca.set_defaults(func=_calibrate_cmd)

    cp = sub.add_parser("compare", help="compare runs item by item: figures side by side and "
                        "paired tests (bootstrap, permutation, Holm)")
    cp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run directories")
    cp.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    cp.add_argument("--metric", action="append", help="only this measure (repeatable; default: "
                    "the measures the registry compares pairwise)")
    cp.add_argument("--resamples", type=int, default=10_000, help="bootstrap / permutation "
                    "resamples (default 10000)")
    cp.add_argument("--json", help="also write the paired tests as JSON here")
    cp.set_defaults(func=_compare_cmd)

    mt = sub.add_parser("metrics", help="score a run directory -> RUN_DIR/metrics.json")
    mt.add_argument("run_dir")
    mt.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    mt.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    mt.set_defaults(func=_metrics_cmd)
    for sp in sub.choices.values():  # also after the subcommand, without resetting the flag
        sp.add_argument("-q", "--quiet", action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars or progress lines")
    return p


def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(argv)
    progress.configure("quiet" if a.quiet else "auto")
    try:
        return a.func(a)
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # e.g. `membench sources | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    sys.exit(main())
