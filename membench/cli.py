"""The ``membench`` command line. Every subcommand is a thin layer over a library function.

No traceback for anything a user can cause: :func:`main` is the one top-level handler, turning
bad input, refused arguments, file-system refusals, a full disk and Ctrl-C into one located
line on stderr and the exit status documented in :mod:`membench.core.errors` (and in
``membench --help``). What was written before the failure stays intact: run files are replaced
atomically or appended line by line, and a run resumes where it stopped.
"""

from __future__ import annotations

import argparse
import errno
import json
import os
import sys
import time
from pathlib import Path

from . import __version__
from .core import progress, stop
from .core.atomic import atomic_write_text
from .core.errors import (
    EXIT_BAD_INPUT,
    EXIT_DISK_FULL,
    EXIT_FILESYSTEM,
    EXIT_INTERRUPTED,
    InputError,
    MembenchError,
)
from .core.jsonl import loads
from .core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH, corpus_root


def _corpus_cmd(a: argparse.Namespace) -> int:
    from .sets.corpus import check_corpus, write_manifest

    root = corpus_root(a.corpus)
    manifest = Path(a.manifest)
    if a.action == "manifest":
        from .sets.corpus import check_corpus_root, folders_near
        from .sets.sources import SOURCES

        folders = {s.folder for s in SOURCES}
        if not any((root / f).is_dir() for f in folders) and (
                folders_near(root, folders) is not None
                or not any(p.is_dir() for p in root.iterdir())):
            check_corpus_root(root, folders)  # one level off, or empty: never an empty manifest
        entries = write_manifest(root, manifest)
        print(f"wrote {manifest}: {len(entries)} sources, "
              f"{sum(len(e.files) for e in entries)} files")
        return 0
    res = check_corpus(root, manifest)
    for p in res.problems:
        print(p)
    print(f"corpus check: {res.checked} files against {manifest}: "
          f"{'OK' if res.ok else f'{len(res.problems)} problem(s) ' + _drift_counts(res)}")
    return 0 if res.ok else 1


def _drift_counts(res) -> str:
    """``(1 added, 2 removed, 3 altered)`` from a corpus check's problems."""
    c = res.counts()
    parts = [f"{c.get('ADDED_FILE', 0)} added", f"{c.get('MISSING_FILE', 0)} removed",
             f"{c.get('DIGEST_DRIFT', 0)} altered"]
    if c.get("PATH_OUTSIDE_CORPUS"):
        parts.append(f"{c['PATH_OUTSIDE_CORPUS']} outside the root")
    return "(" + ", ".join(parts) + ")"


def _check_corpus_before_build(root: Path, manifest: Path, only: set[str] | None) -> None:
    """Every build path checks the corpus first (the sources it builds, against the
    manifest): drift is refused with its first problems and counts, before anything is read."""
    from .sets.corpus import check_corpus

    res = check_corpus(root, manifest, sources=only)
    if not res.ok:
        for p in res.problems[:20]:
            print(p, file=sys.stderr)
        more = " (the first 20 above)" if len(res.problems) > 20 else ""
        raise MembenchError(f"{root}: the corpus differs from {manifest}: "
                            f"{len(res.problems)} problem(s) {_drift_counts(res)}{more}; "
                            "`membench corpus check` lists them; the sets are built only from "
                            "the mirror the manifest freezes")


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
    from .sets.build import (
        build_sets,
        check_lock,
        coverage_rows,
        render_counts,
        render_coverage,
        render_derivation,
    )

    root = corpus_root(a.corpus)
    out = Path(a.out)
    _check_corpus_before_build(root, Path(a.manifest), set(a.source) if a.source else None)
    t0 = time.time()
    res = build_sets(root, out, only=set(a.source) if a.source else None)
    print(f"built {len(res.records)} records over {len(res.items)} items into {out} "
          f"in {time.time() - t0:.1f} s" + ("" if a.brief else "\n"))
    if a.brief:
        print(f"  the counts, coverage and derived-query tables: {out / 'coverage.json'}, "
              "report page 01, or `membench build` without --brief")
    else:
        print(render_counts(res.stats))
        print()
        print(render_coverage([c.as_dict() for c in res.coverage]))
        print()
        print(render_derivation(coverage_rows(res.coverage, res.stats["derivation"])))
        print()
        for f, d in res.digests.items():
            print(f"{d}  {out / f}")
    verdict = check_lock(res.digests, Path(a.lock), update=a.update_lock, partial=bool(a.source))
    print(("" if a.brief else "\n") + "\n".join(verdict.lines))
    return 0 if verdict.ok else 1


def _validate_cmd(a: argparse.Namespace) -> int:
    from .sets.validate import validate_sets

    corpus = corpus_root(a.corpus) if (a.corpus or not a.no_corpus) else None
    from .sets.subcorpus import lock_for

    findings = validate_sets(Path(a.sets), Path(a.manifest),
                             lock=None if a.no_lock else lock_for(a.sets, a.lock), corpus=corpus,
                             audit=not a.no_audit)
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        print(f)
    if a.json:
        _write_output(a.json, json.dumps([f.__dict__ for f in findings], indent=1) + "\n",
                      "--json")
    print(f"validate {a.sets}: {len(errors)} error(s), {len(findings) - len(errors)} warning(s)")
    return 1 if errors else 0


def _audit_cmd(a: argparse.Namespace) -> int:
    from .sets.audit import audit_sets, render_audit

    result = audit_sets(Path(a.sets))
    print(render_audit(result))
    for line in result.failures():
        print(f"TELL: {line}")
    if a.json:
        _write_output(a.json, json.dumps(result.as_dict(), indent=1) + "\n", "--json")
        print(f"wrote {a.json}")
    print(f"audit {a.sets}: {'every gate holds' if result.ok else 'a gate fails'}")
    return 0 if result.ok else 1


def _parse_config(pairs: list[str] | None) -> dict:
    cfg = {}
    for p in pairs or []:
        k, sep, v = p.partition("=")
        if not sep:
            raise MembenchError(f"--config {p!r}: expected KEY=VALUE")
        try:
            cfg[k] = loads(v)
        except json.JSONDecodeError:
            cfg[k] = v                      # not JSON: the text itself (e.g. gate=rrf)
        except (ValueError, RecursionError) as e:
            raise MembenchError(f"--config {k}=...: not a usable JSON value ({e})"[:200]) from None
    return cfg


def _run_cmd(a: argparse.Namespace) -> int:
    from .run.runner import run_system, scope_line
    from .run.systems import make_system
    from .sets.subcorpus import lock_for

    if a.engine == "local" and (a.address or a.workers or a.connect_timeout is not None):
        raise MembenchError("--address, --workers and --connect-timeout go with --engine ray")
    if a.engine == "ray":
        from .run.ray_engine import import_ray

        import_ray()                  # one line on how to install it, before anything else
    _content(a.content)
    system = make_system(a.system, _parse_config(a.config))
    out = Path(a.out) if a.out else Path("runs") / f"{system.name}-{a.split}"
    t0 = time.time()
    kw = dict(modalities=a.modality, limit=a.limit, final=a.final,
              lock=None if a.no_lock else lock_for(a.sets, a.lock), manifest=Path(a.manifest),
              sample_seed=a.sample_seed)
    if a.ingested:
        if a.engine == "ray":
            raise MembenchError("--ingested goes with --engine local")
        kw["ingested"] = Path(a.ingested)
    if a.engine == "ray":
        from .run.ray_engine import run_system_ray

        meta = run_system_ray(a.system, _parse_config(a.config), Path(a.sets), a.split, out,
                              corpus_root(a.corpus), address=a.address, workers=a.workers,
                              **kw, **({} if a.connect_timeout is None else
                                       {"connect_timeout": a.connect_timeout}))
    else:
        meta = run_system(system, Path(a.sets), a.split, out, corpus_root(a.corpus), **kw)
    print(f"{system.name} on {a.split}: {meta['queries']} queries, {meta['atoms']} atoms, "
          f"ingest {meta['ingest_seconds']:.1f} s, total {time.time() - t0:.1f} s -> {out}")
    code = 0
    if a.metrics:
        code = _metrics_cmd(argparse.Namespace(run_dir=str(out), sets=a.sets, json=False,
                                               partial=False, final=a.final, brief=a.brief))
    if a.strict_scope and scope_line(system.name, meta.get("scope") or {}):
        return 1            # (the run ended with the one line that says why)
    return code


def _content(pairs: list[str] | None) -> None:
    """``--content KEY=VALUE``: the content layer's settings for this process and the ones it
    starts (membench.run.content.config.CONTENT_KEYS), never a system's config."""
    if pairs:
        from .run.content.config import set_content_settings

        set_content_settings(_parse_config(pairs))


def _serve_cmd(a: argparse.Namespace) -> int:
    from .run.remote.server import serve

    _content(a.content)
    serve(a.system, _parse_config(a.config), a.host, a.port, corpus_root(a.corpus))
    return 0


def _synth_cmd(a: argparse.Namespace) -> int:
    from .sets.synth import generate

    c = generate(Path(a.out), a.atoms, a.queries, a.seed)
    print(f"synth -> {a.out}: {c['dev_atoms']} dev atoms, {c['dev_queries']} dev queries, "
          f"{c['dev_holders']} dev holders ({c['dev_items']} sessions); run it with "
          f"--sets {a.out}/sets --corpus {a.out}/corpus --manifest {a.out}/manifest.jsonl "
          "--no-lock")
    return 0


def _import_cmd(a: argparse.Namespace) -> int:
    from .run.importer import import_trec

    from .sets.subcorpus import lock_for

    meta = import_trec(Path(a.trec), Path(a.atoms), Path(a.sets), a.split, Path(a.out), a.name,
                       cartridge_file=Path(a.cartridge) if a.cartridge else None,
                       cartridge_top=a.cartridge_top, final=a.final, force=a.force,
                       corpus_root=corpus_root(a.corpus), manifest=Path(a.manifest),
                       lock=None if a.no_lock else lock_for(a.sets, a.lock),
                       modalities=a.modality, limit=a.limit, partial=a.partial,
                       card=Path(a.card) if a.card else None)
    part = meta.get("partial")
    what = (f"PARTIAL: {part['covered']} of {part['asked']} {a.split} queries (read it with "
            "--partial)" if part else f"{meta['queries']} {a.split} queries")
    print(f"imported {a.trec}: {what}, {meta['atoms']} atoms -> {a.out}")
    return 0


def _verify_cmd(a: argparse.Namespace) -> int:
    from .analysis.verify import format_verification, verify_store

    results = verify_store(Path(a.store), per_modality=a.sample, seed=a.seed,
                           entries=a.entry, corpus=corpus_root(a.corpus) if a.corpus else None,
                           manifest=Path(a.manifest) if a.manifest else None,
                           sets_dir=Path(a.sets) if a.sets else None)
    print(format_verification(results))
    return 1 if any(r["status"] == "differs" for r in results) else 0


def _report_cmd(a: argparse.Namespace) -> int:
    from .report.render import report

    t0 = time.time()
    done = report([Path(r) for r in a.run or []], Path(a.out), Path(a.sets) if a.sets else None,
                  compare=[Path(r) for r in a.compare or []],
                  corpus=corpus_root(a.corpus) if a.corpus else None,
                  partial=a.partial, final=a.final, force=a.force,
                  q2d=Path(a.q2d) if a.q2d else None,
                  leaderboard=Path(a.leaderboard) if a.leaderboard else None, jobs=a.jobs,
                  live_links=a.live_links)
    if not a.brief:
        for r in done:
            print(f"  {r.html}")
    print(f"{len(done)} report page(s) in {time.time() - t0:.0f} s; open {Path(a.out) / 'index.html'}")
    return 0


def _calibrate_cmd(a: argparse.Namespace) -> int:
    from .analysis.calibrate import calibrate_run
    from .run.systems.reference import calibration_path

    cal = calibrate_run(Path(a.run_dir), Path(a.sets) if a.sets else None)
    out = Path(a.out) if a.out else calibration_path(cal["system"])
    _write_output(out, json.dumps(cal, indent=2, sort_keys=True) + "\n", "--out")

    def kept(half: dict, kind: str) -> str:      # "0.640 (332)"; "n/a (0)" without queries
        v = half[kind + "_kept"]
        return ("n/a" if v is None else f"{v:.3f}") + f" ({half['n_' + kind]})"

    for m, c in cal["modalities"].items():
        fit, held = c["fit"], c["held_out"]
        print(f"{m:14s} threshold {c['threshold']:.6g}  by {c['split']['by']}: "
              f"fit answerable kept {kept(fit, 'answerable')}, unanswerable kept "
              f"{kept(fit, 'unanswerable')}; held out answerable kept "
              f"{kept(held, 'answerable')}, unanswerable kept {kept(held, 'unanswerable')}"
              f"{'' if c['within_gate'] else '  (gate not reachable on the fit half)'}")
    for m, why in cal.get("not_calibrated", {}).items():
        print(f"{m:14s} not calibrated: {why}")
    print(f"wrote {out}")
    return 0


def _metrics_cmd(a: argparse.Namespace) -> int:
    from .metrics import format_brief, format_table, metrics_for_run_dir

    m = metrics_for_run_dir(Path(a.run_dir), Path(a.sets) if a.sets else None,
                            partial=a.partial, final=a.final)
    if a.json:
        print(json.dumps(m, indent=1))
    elif getattr(a, "brief", False):
        print(format_brief(m, Path(a.run_dir).name, where=str(a.run_dir)), end="")
    else:
        print(format_table(m))
    return 0


def _export_cmd(a: argparse.Namespace) -> int:
    from .metrics.export import export_run

    done = export_run(Path(a.run_dir), Path(a.out), Path(a.sets) if a.sets else None,
                      partial=a.partial, final=a.final)
    print(f"{done['label']}: {done['queries']} queries ({done['answerable']} answerable) -> "
          f"{done['out']}: run.trec ({done['run_lines']} lines), qrels.trec "
          f"({done['qrels_lines']} lines), topics.jsonl")
    return 0


def _trec_eval_cmd(a: argparse.Namespace) -> int:
    from .metrics.trec_eval import run_command

    return run_command(a)


def _topics_cmd(a: argparse.Namespace) -> int:
    from .sets.topics import topics, write_topics

    if a.split == "test":
        if not a.final:
            raise MembenchError("the test split is frozen: its topics are a final access; "
                                "pass --final (it is logged)")
        from .run.runner import code_revision, log_test_access

        log_test_access("topics", Path(a.out), code_revision(), action="topics")
    rows = topics(Path(a.sets), a.split, a.modality, a.limit)
    n = write_topics(Path(a.out), rows)
    print(f"wrote {n} {a.split} topics to {a.out} (presentation order; opaque qids)")
    return 0


def _compare_cmd(a: argparse.Namespace) -> int:
    from .analysis.compare import compare_runs, format_comparison

    comp = compare_runs(a.run_dirs, Path(a.sets) if a.sets else None,
                        n_resamples=a.resamples, partial=a.partial, final=a.final,
                        judgment_set=a.judgments, **paired_metrics(a.metric))
    print(format_comparison(comp, metrics=a.metric or None))
    if a.json:
        _write_output(a.json, comp.pairs.to_json(orient="records", indent=1) + "\n", "--json")
        print(f"wrote the paired tests to {a.json}")
    return 0


def paired_metrics(names: list[str] | None) -> dict:
    """``--metric`` names that are per-item means are also the measures tested pairwise."""
    from .metrics.measures import MEAN_MEASURES

    chosen = [m for m in names or [] if m in MEAN_MEASURES]
    return {"metrics": chosen} if chosen else {}


def _agreement_cmd(a: argparse.Namespace) -> int:
    from .analysis.agreement import AGREEMENT_METRICS, format_agreement, rank_agreement

    ag = rank_agreement(a.run_dirs, Path(a.sets) if a.sets else None,
                        metrics=a.metric or AGREEMENT_METRICS, n_resamples=a.resamples,
                        partial=a.partial, final=a.final)
    print(format_agreement(ag))
    if a.json:
        _write_output(a.json, ag.tau.to_json(orient="records", indent=1) + "\n", "--json")
        print(f"wrote the rank agreement to {a.json}")
    return 0


def _pool_cmd(a: argparse.Namespace) -> int:
    from .analysis.pool import PoolParams, format_pool, pool

    res = pool(a.runs, Path(a.sets), Path(a.out), PoolParams(
        share=a.share, seed=a.seed, depth=a.depth, rrf_k=a.rrf_k, random=a.random),
        force=a.force)
    print(format_pool(res))
    print(f"{'unchanged' if res.written.unchanged else 'wrote'} {res.written.out}: "
          f"{res.written.kept} of {res.written.items} items; runs on it: membench run --sets "
          f"{res.written.out} ... (its own lock: {res.written.out / 'sets.lock.json'})")
    return 0


def _q2d_cmd(a: argparse.Namespace) -> int:
    from .analysis.q2d import format_table, run_experiment

    res = run_experiment(Path(a.spec), Path(a.out), Path(a.sets), corpus_root(a.corpus),
                         shares=a.share, seeds=a.seeds, resamples=a.resamples)
    print(format_table(res))
    print(f"wrote {Path(a.out) / 'q2d.json'}")
    return 0


def _leaderboard_cmd(a: argparse.Namespace) -> int:
    from .analysis.leaderboard import Refused, add_runs, format_leaderboard, leaderboard

    if a.runs:
        try:
            added = add_runs(a.runs, Path(a.out), Path(a.sets) if a.sets else None,
                             final=a.final)
        except Refused as e:
            for line in e.lines:
                print(f"membench: {line}", file=sys.stderr)
            print(f"membench: nothing written to {a.out} ({len(e.lines)} run(s) refused)",
                  file=sys.stderr)
            return EXIT_BAD_INPUT
        for r in added.added:
            print(f"{'replaced' if r['replaced'] else 'added'} {r['id']}: {r['system']} "
                  f"({r['run_dir']})")
        print(f"{added.out}: {added.entries} entries")
    if a.verify:
        from .analysis.verify import format_verification, verify_store

        print(format_verification(verify_store(Path(a.out), per_modality=a.sample)))
    lbd = leaderboard(Path(a.out), rank_by=a.rank_by, n_resamples=a.resamples)
    if a.markdown:
        from .analysis.leaderboard import format_markdown

        print(format_markdown(lbd))
    elif a.brief:
        from .analysis.leaderboard import format_brief

        print(format_brief(lbd), end="")
    else:
        print(format_leaderboard(lbd), end="")
    return 0


DESCRIPTION = """\
membench: a benchmark and analysis suite for memory systems (holder- and time-scoped
retrieval over PDFs, images, UI screenshots, video, code and conversations). Build and
validate the sets, run a system, score it, report. `membench COMMAND --help` for each
command; README.md and docs/ for the definitions."""


def _read_flags(p: argparse.ArgumentParser) -> None:
    """--partial and --final: what a reader of run directories may be asked to accept."""
    p.add_argument("--partial", action="store_true", help="score an incomplete run on the "
                   "queries it answered (marked PARTIAL everywhere)")
    p.add_argument("--final", action="store_true", help="read a run on the frozen test split "
                   "(logged in bench/test_access.jsonl)")

EXIT_STATUS = """\
exit status:
  0    done
  1    a check ran and failed (validate findings, corpus drift, a build differing from the lock)
  2    bad input or arguments (one line: file:line: RULE: field: message), a run directory
       locked by another membench command
  3    the file system refused (permission denied, read-only folder, a file where a folder
       was expected)
  4    disk full
  130  interrupted (Ctrl-C, SIGINT or SIGTERM; within a few seconds, whatever is running)
Whatever failed, what was already written is intact: files are replaced atomically, run lines
are appended one by one, and re-running the same `membench run` resumes it."""

TRUST = """\
trust: --system module:Class (and a system registered under the membench.systems entry-point
group) imports and calls that code with your permissions, by design: it is how your system
runs. Run only code you trust. --config values are passed to it as keyword arguments. Data
files (sets, items, run directories, TREC runs from others) are only read and checked: they
cannot run code, and every corpus path they name must resolve inside the corpus root."""


CONTENT_HELP = ("a setting of the shared content layer (JSON value), repeatable, for every "
                "system that reads content through it: ocr_processes (OCR workers; the output "
                "does not depend on it), ocr_overlap, ocr_engine (openvino or onnxruntime), "
                "pdf_ocr_dpi; recorded in meta.json as content, never passed to the system")


def positive_int(text: str) -> int:
    """An argparse type: an integer >= 1 (0 or a negative count is refused, not guessed)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {v}")
    return v


def resample_count(text: str) -> int:
    """An argparse type: a resample count, 1 to the bound ``resamples``
    (:data:`membench.metrics.bootstrap.MAX_RESAMPLES`)."""
    from .metrics.bootstrap import MAX_RESAMPLES

    v = positive_int(text)
    if v > MAX_RESAMPLES:
        raise argparse.ArgumentTypeError(f"at most {MAX_RESAMPLES:,} (bound resamples), got "
                                         f"{v:,}")
    return v


def positive_seconds(text: str) -> float:
    """An argparse type: a finite number of seconds > 0."""
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not 0 < v < float("inf"):
        raise argparse.ArgumentTypeError(f"must be > 0 and finite, got {text}")
    return v


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 to 65535 (0: the system picks a free one)."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a port number, got {text!r}") from None
    if not 0 <= v <= 65535:
        raise argparse.ArgumentTypeError(f"a port is 0 to 65535, got {v}")
    return v


def _write_output(path: str | Path, text: str, flag: str) -> Path:
    """Write an output file named by ``flag`` atomically; a folder there is an InputError and
    a missing parent folder is created."""
    p = Path(path)
    if p.is_dir():
        raise InputError(p, None, None, f"is a folder; {flag} names a file to write",
                         rule="ARGUMENT")
    p.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(p, text)
    return p


def parser() -> argparse.ArgumentParser:
    fmt = argparse.RawDescriptionHelpFormatter
    p = argparse.ArgumentParser(prog="membench", description=DESCRIPTION, epilog=EXIT_STATUS,
                                formatter_class=fmt)
    p.add_argument("--version", action="version", version=f"membench {__version__}",
                   help="print the version and exit")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress bars or progress lines (results and errors still print)")
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")
    corpus_help = "corpus root (default: $MEMBENCH_CORPUS, else ../shared/corpus)"
    sets_help = "sets folder (default: bench/sets)"

    c = sub.add_parser("corpus", help="check the corpus mirror against the manifest, or "
                       "rewrite the manifest", formatter_class=fmt, description="""\
check     every manifest file under the corpus root: present, same bytes (sha256), and no
          file the manifest does not list (added, removed and altered files are reported;
          exit 1 on any).
manifest  REWRITE bench/corpus/manifest.jsonl (a committed file) from every mirrored
          folder's PROVENANCE.jsonl, keeping the retrieved_at dates already in it. Do this
          only when the mirror is meant to change, and commit the result.""")
    c.add_argument("action", choices=["check", "manifest"], help="check or manifest (above)")
    c.add_argument("--corpus", help=corpus_help)
    c.add_argument("--manifest", default=str(MANIFEST_PATH),
                   help="manifest file (default: bench/corpus/manifest.jsonl)")
    c.set_defaults(func=_corpus_cmd)

    s = sub.add_parser("sources", help="list every registered source, mirrored or not")
    s.add_argument("--corpus", help=corpus_help)
    s.set_defaults(func=_sources_cmd)

    b = sub.add_parser("build", help="build the annotation sets from the corpus mirror",
                       description="Check the corpus against the manifest (the sources built), "
                       "then build the sets and compare them with the lock.")
    b.add_argument("--corpus", help=corpus_help)
    b.add_argument("--out", default=str(DEFAULT_SETS_DIR), help="sets folder to write "
                   "(default: bench/sets)")
    b.add_argument("--source", action="append", help="only this source key (repeatable; a "
                   "partial build is not compared with the lock)")
    b.add_argument("--manifest", default=str(MANIFEST_PATH),
                   help="manifest the corpus is checked against (default: "
                   "bench/corpus/manifest.jsonl)")
    b.add_argument("--lock", default=str(LOCK_PATH), help="lock file (default: "
                   "bench/sets.lock.json)")
    b.add_argument("--update-lock", action="store_true", help="freeze this build's sha256s")
    b.add_argument("--brief", action="store_true", help="one line for the build and the lock's "
                   "verdict, not the counts, coverage and derivation tables")
    b.set_defaults(func=_build_cmd)

    v = sub.add_parser("validate", help="check built sets against every hard rule")
    v.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=sets_help)
    v.add_argument("--corpus", help=corpus_help)
    v.add_argument("--no-corpus", action="store_true", help="skip corpus file checks")
    v.add_argument("--manifest", default=str(MANIFEST_PATH),
                   help="manifest (default: bench/corpus/manifest.jsonl)")
    v.add_argument("--lock", help="lock file (default: bench/sets.lock.json; a sub-corpus "
                   "folder written by membench pool: its own sets.lock.json)")
    v.add_argument("--no-lock", action="store_true", help="skip the set-file digest check")
    v.add_argument("--no-audit", action="store_true", help="skip the metadata-only audit (TELL)")
    v.add_argument("--json", help="also write the findings as JSON here")
    v.set_defaults(func=_validate_cmd)

    au = sub.add_parser("audit", help="can metadata alone (as_of, timelines, repetition, order) "
                        "tell unanswerable queries apart? classifier AUC and named rules")
    au.add_argument("sets", nargs="?", default=str(DEFAULT_SETS_DIR), metavar="SETS",
                    help="sets folder (default: bench/sets)")
    au.add_argument("--json", help="also write the audit as JSON here")
    au.set_defaults(func=_audit_cmd)

    sy = sub.add_parser("synth", help="write synthetic sets shaped like the real dev sets "
                        "(growth benchmarks; docs/ray.md)")
    sy.add_argument("--out", required=True, help="folder for sets/, manifest.jsonl, corpus/")
    sy.add_argument("--atoms", type=positive_int, required=True,
                    help="dev atoms (as the reference chunker makes them) to reach")
    sy.add_argument("--queries", type=positive_int, required=True, help="dev queries")
    sy.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    sy.set_defaults(func=_synth_cmd)

    r = sub.add_parser("run", help="run a memory system over a split (resumes a partial run)",
                       formatter_class=fmt, epilog=TRUST, description="""\
Run a memory system over one split into RUN_DIR. Before ingesting anything the sets are
checked against every hard rule, the corpus against the manifest and the set files against
the lock (seconds); RUN_DIR is locked for the whole run (a second writer is refused, naming
this one). Re-running the same command resumes an interrupted run.""")
    r.add_argument("--system", required=True, help="bm25, dense, hybrid, oracle, leaky, random, "
                   "metadata, nothing, echo, a real memory library (mem0, mempalace, llamaindex, "
                   "llamaindex-bm25: optional extras, docs/systems.md), "
                   "an entry point in the membench.systems group, module:Class (imported "
                   "and run: see 'trust' below), or http://HOST:PORT for a system served over "
                   "HTTP (membench-http/1: docs/systems.md; --config then sets the client's "
                   "timeouts and retries)")
    r.add_argument("--config", action="append", metavar="KEY=VALUE",
                   help="system parameter (JSON value), repeatable")
    r.add_argument("--content", action="append", metavar="KEY=VALUE", help=CONTENT_HELP)
    r.add_argument("--split", default="dev", choices=["dev", "test"], help="dev (default) or "
                   "test (needs --final)")
    r.add_argument("--final", action="store_true", help="allow the frozen test split (logged)")
    r.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=sets_help)
    r.add_argument("--corpus", help=corpus_help)
    r.add_argument("--manifest", default=str(MANIFEST_PATH),
                   help="manifest (default: bench/corpus/manifest.jsonl)")
    r.add_argument("--lock", help="the sets must match this lock (default: "
                   "bench/sets.lock.json; a sub-corpus folder written by membench pool: its "
                   "own sets.lock.json)")
    r.add_argument("--no-lock", action="store_true", help="run on sets that differ from the "
                   "lock (the hard rules are still checked)")
    r.add_argument("--out", help="RUN_DIR (default runs/<system>-<split>)")
    r.add_argument("--modality", action="append", help="only this modality (repeatable)")
    r.add_argument("--limit", type=positive_int, metavar="N",
                   help="at most N >= 1 queries per modality (hash-chosen)")
    r.add_argument("--sample-seed", type=int, metavar="S", help="with --limit: draw the N "
                   "queries per modality by another hash, sha256('limit', S, id) (what "
                   "`membench verify` uses; recorded in meta.json)")
    r.add_argument("--metrics", action="store_true", help="compute metrics when done")
    r.add_argument("--ingested", metavar="FILE", help="create FILE (empty) once ingest is done, "
                   "before the queries (make runs starts the other systems then)")
    r.add_argument("--brief", action="store_true", help="with --metrics: print the gates and "
                   "the headline figures in a few lines instead of the full table (metrics.json "
                   "and `membench metrics RUN_DIR` have every figure)")
    r.add_argument("--strict-scope", action="store_true", help="exit 1 when the system "
                   "returned another holder's atoms or atoms observed after as_of (the run "
                   "ends with one line saying so either way)")
    r.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="local (default: one process) or ray: holders sharded over Ray "
                   "workers, the same files (docs/ray.md; pip install 'membench[ray]')")
    r.add_argument("--address", help="with --engine ray: join this Ray cluster (default: "
                   "start a local one)")
    r.add_argument("--workers", type=positive_int, metavar="N", help="with --engine ray: "
                   "shards (default: the cluster's CPUs, at most 4)")
    r.add_argument("--connect-timeout", type=positive_seconds, metavar="S", help="with --engine "
                   "ray --address: the cluster must answer within S seconds (default 30)")
    r.set_defaults(func=_run_cmd)

    sv = sub.add_parser("serve", help="serve a Python memory system over HTTP (membench-http/1) "
                        "for `membench run --system http://HOST:PORT`", formatter_class=fmt,
                        epilog=TRUST, description="""\
Serve a memory system on the membench-http/1 protocol (docs/systems.md, docs/openapi.json):
health, card, ingest (batched items in, atoms out) and query. The server reads the item files
under the corpus root the client names, which must lie inside --corpus. It listens on
127.0.0.1 unless --host says otherwise (another address prints a warning: there is no
authentication). Ctrl-C stops it.""")
    sv.add_argument("--system", required=True, help="a registered name (bm25, dense, hybrid, "
                    "...), an entry point in the membench.systems group, or module:Class")
    sv.add_argument("--config", action="append", metavar="KEY=VALUE",
                    help="system parameter (JSON value), repeatable")
    sv.add_argument("--content", action="append", metavar="KEY=VALUE", help=CONTENT_HELP)
    sv.add_argument("--host", default="127.0.0.1", help="address to listen on (default "
                    "127.0.0.1; anything but a loopback address is reachable from elsewhere)")
    sv.add_argument("--port", type=port_number, required=True, help="port to listen on (0: a free "
                    "one, printed)")
    sv.add_argument("--corpus", help=corpus_help + "; the only files the server reads")
    sv.set_defaults(func=_serve_cmd)

    im = sub.add_parser("import-run", help="turn a TREC run + atoms file into a RUN_DIR",
                        description="Import a TREC run (qid Q0 atom_id rank score tag, qids "
                        "from `membench topics`) and an atoms file into a scored RUN_DIR. The "
                        "file must cover every query of the selection (the split, or the part "
                        "--modality / --limit name): a file that covers less is refused with "
                        "how many queries are missing, unless --partial. No empty answer is "
                        "ever invented.")
    im.add_argument("--trec", required=True, help="TREC run: qid Q0 atom_id rank score tag")
    im.add_argument("--atoms", required=True, help="atoms.jsonl (see docs/runs.md)")
    im.add_argument("--name", required=True, help="the system's name, for reports")
    im.add_argument("--out", required=True, help="RUN_DIR to write (refused if it holds a "
                    "run, unless --force)")
    im.add_argument("--force", action="store_true", help="replace the run already in --out")
    im.add_argument("--split", default="dev", choices=["dev", "test"], help="dev (default) or "
                    "test (needs --final)")
    im.add_argument("--final", action="store_true", help="allow the frozen test split (logged)")
    im.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=sets_help + "; checked "
                    "against every hard rule first, as `run` does")
    im.add_argument("--corpus", help=corpus_help)
    im.add_argument("--manifest", default=str(MANIFEST_PATH),
                    help="manifest (default: bench/corpus/manifest.jsonl)")
    im.add_argument("--lock", help="the sets must match this lock (default: as `run`)")
    im.add_argument("--no-lock", action="store_true", help="import on sets that differ from "
                    "the lock (the hard rules are still checked)")
    im.add_argument("--modality", action="append", help="the file answers only this modality "
                    "(repeatable; as membench topics takes it)")
    im.add_argument("--limit", type=positive_int, metavar="N", help="the file answers N "
                    "queries per modality (as `membench topics --limit N` chose them)")
    im.add_argument("--partial", action="store_true", help="accept a file that covers only "
                    "part of the selected queries: lines for the covered ones only, the run "
                    "marked PARTIAL everywhere (readers need --partial)")
    im.add_argument("--card", metavar="FILE", help="the system's model card (a card file, "
                    "docs/cards.md); the leaderboard takes no run without one")
    cg = im.add_mutually_exclusive_group(required=True)
    cg.add_argument("--cartridge", help="JSON lines {query_id, cartridge: [atom_id, ...]}, one "
                    "line per query at most")
    cg.add_argument("--cartridge-top", type=positive_int, metavar="K",
                    help="cartridge = top K >= 1 hits")
    im.set_defaults(func=_import_cmd)

    rp = sub.add_parser("report", help="execute the notebooks and render HTML reports")
    rp.add_argument("--run", action="append", metavar="RUN_DIR",
                    help="a run directory (repeatable): pages 01-04 for each, and page 05 "
                    "comparing them when there are several (required unless --q2d or "
                    "--leaderboard)")
    rp.add_argument("--q2d", metavar="DIR", help="also render page 07 for the experiment "
                    "folder `membench q2d` wrote (its q2d.json)")
    rp.add_argument("--leaderboard", metavar="DIR", help="also render page 06 for the result "
                    "store `membench leaderboard` wrote")
    rp.add_argument("--compare", action="append", metavar="RUN_DIR",
                    help="more runs (repeatable): the same as --run; with two or more runs "
                    "in all, the comparison (notebook 05) is rendered too")
    rp.add_argument("--force", action="store_true",
                    help="replace report folders that already hold pages")
    rp.add_argument("--out", default="reports", help="reports folder (default: reports)")
    rp.add_argument("--brief", action="store_true", help="print the count of pages and the "
                    "index, not every page's path")
    rp.add_argument("--jobs", type=positive_int, metavar="N", help="notebooks executed at once "
                    "(default: one per CPU, at most 4); the pages are the same either way")
    rp.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    rp.add_argument("--corpus", help=corpus_help + ", for the pictures of source regions")
    rp.add_argument("--live-links", action="store_true", help="make URLs that the sets name "
                    "(a video's URL) links on page 04 when they are https to a host the corpus "
                    "manifest's sources name; default: shown as text (set files can come from "
                    "someone else). Recorded in each page's provenance")
    _read_flags(rp)
    rp.set_defaults(func=_report_cmd)

    ca = sub.add_parser("calibrate", help="cartridge thresholds per modality from a dev run")
    ca.add_argument("run_dir", metavar="RUN_DIR", help="a dev run directory")
    ca.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    ca.add_argument("--out", help="file to write (default: bench/calibration/<system>.json)")
    ca.set_defaults(func=_calibrate_cmd)

    cp = sub.add_parser("compare", help="compare runs item by item: figures side by side and "
                        "paired tests (bootstrap, permutation, Holm)")
    cp.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run directories")
    cp.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    cp.add_argument("--metric", action="append", help="only this measure (repeatable; shown "
                    "and tested pairwise, Holm over those tests; default: the measures the "
                    "registry compares pairwise)")
    cp.add_argument("--resamples", type=resample_count, default=10_000, help="bootstrap / "
                    "permutation resamples (default 10000)")
    cp.add_argument("--judgments", metavar="SET", help="read relevance under this judgment "
                    "set (default: gold; e.g. all_annotators, graded, session)")
    cp.add_argument("--json", help="also write the paired tests as JSON here")
    _read_flags(cp)
    cp.set_defaults(func=_compare_cmd)

    ag = sub.add_parser("agreement", help="rank the runs' systems under every judgment set "
                        "and measure the agreement (Kendall's tau, bootstrap interval, n)")
    ag.add_argument("run_dirs", nargs="+", metavar="RUN_DIR", help="two or more run directories "
                    "over the same items")
    ag.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    ag.add_argument("--metric", action="append", help="rank by this measure (repeatable; "
                    "default: recall@1000, recall@10, ndcg@10, ndcg_graded@10)")
    ag.add_argument("--resamples", type=resample_count, default=2000, help="bootstrap resamples "
                    "over queries (default 2000)")
    ag.add_argument("--json", help="also write the tau table as JSON here")
    _read_flags(ag)
    ag.set_defaults(func=_agreement_cmd)

    ex = sub.add_parser("export", help="a run as TREC files: run.trec, qrels.trec (atom level) "
                        "and topics.jsonl")
    ex.add_argument("run_dir", help="the run directory to export")
    ex.add_argument("--out", required=True, help="folder for run.trec, qrels.trec, topics.jsonl")
    ex.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    _read_flags(ex)
    ex.set_defaults(func=_export_cmd)

    from .metrics.trec_eval import add_arguments as _trec_eval_arguments

    te = sub.add_parser("trec-eval", help="trec_eval's measures and output on plain TREC files "
                        "(membench's engine; trec_eval 10.0's semantics and options)")
    _trec_eval_arguments(te)
    te.set_defaults(func=_trec_eval_cmd)

    tp = sub.add_parser("topics", help="the queries of a split as a system sees them (JSON "
                        "lines: opaque qid, question, scope, as_of), for systems in other languages")
    tp.add_argument("--split", default="dev", choices=["dev", "test"],
                    help="which split (test needs --final)")
    tp.add_argument("--out", required=True, help="the topics file to write (JSON lines)")
    tp.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help="sets folder (default: "
                    "bench/sets)")
    tp.add_argument("--modality", action="append", help="only this modality (repeatable)")
    tp.add_argument("--limit", type=positive_int, help="at most N queries per modality (as "
                    "`run`)")
    tp.add_argument("--final", action="store_true", help="the frozen test split (logged)")
    tp.set_defaults(func=_topics_cmd)

    po = sub.add_parser("pool", help="a sub-corpus of items chosen by Reciprocal Rank Fusion "
                        "over runs' rankings (or at random, --random), written as a sets folder",
                        formatter_class=fmt, description="""\
Per holder of the runs' split and modalities, keep every item named by a record's gold,
judgments or distractors, then the items the runs rank first (RRF over each run's top --depth
items per query; an item's best position in any query's fused list), until the holder holds
max(required, ceil(share * items)) items. --random fills the same size at random (seeded).
Other splits and modalities are kept whole; the records do not change. The folder holds its
own lock (sets.lock.json) and subcorpus.json; `membench run --sets OUT` and `membench
validate --sets OUT` check it against that lock. docs/pooling.md has the method.""")
    po.add_argument("--runs", nargs="+", required=True, metavar="RUN_DIR",
                    help="complete dev runs on --sets (not --limit runs, not test doubles that "
                    "saw the gold), all over the same queries")
    po.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=sets_help)
    po.add_argument("--share", type=float, required=True, metavar="F",
                    help="share of each holder's items to keep, in (0, 1] (at least its "
                    "required items)")
    po.add_argument("--seed", type=int, default=0, metavar="N",
                    help="seed of ties and of the random fill (default 0)")
    po.add_argument("--depth", type=positive_int, default=100, metavar="D",
                    help="items of each run's ranking that enter the fusion (default 100)")
    po.add_argument("--rrf-k", type=int, default=60, metavar="K",
                    help="RRF constant: 1 / (K + rank) (default 60)")
    po.add_argument("--random", action="store_true",
                    help="a random sub-corpus of the same size per holder (the baseline)")
    po.add_argument("--out", required=True, help="the sub-corpus folder to write")
    po.add_argument("--force", action="store_true",
                    help="replace another sub-corpus already in --out")
    po.set_defaults(func=_pool_cmd)

    qd = sub.add_parser("q2d", help="the Q2D-Web sub-sampling experiment: full corpus vs RRF "
                        "pool vs random sub-corpus, recall inflation and Kendall's tau",
                        formatter_class=fmt, epilog=TRUST, description="""\
Run every system of --spec on the full dev sets (its modalities), pool sub-corpora from those
runs at each share (RRF, RRF leaving out the system evaluated, random with several seeds),
run every system on them, and write OUT/q2d.json: per share and method the mean inflation of
recall@1000, recall@100, recall@10 and nDCG@10 over the full corpus and Kendall's tau of the
system ranking, with bootstrap intervals over queries (and over seeds for random). Every run
is an ordinary run directory under OUT; re-running resumes. docs/pooling.md has the design.""")
    qd.add_argument("--spec", required=True, help="the experiment's JSON spec (systems with "
                    "their config, modalities, shares, seeds; e.g. bench/q2d.json)")
    qd.add_argument("--out", required=True, help="experiment folder (runs, sub-corpora, "
                    "q2d.json)")
    qd.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=sets_help)
    qd.add_argument("--corpus", help=corpus_help)
    qd.add_argument("--share", type=float, action="append", metavar="F",
                    help="only this share (repeatable; default: the spec's)")
    qd.add_argument("--seeds", type=positive_int, metavar="N",
                    help="random sub-corpora per share (default: the spec's)")
    qd.add_argument("--resamples", type=resample_count, default=2000,
                    help="bootstrap resamples (default 2000)")
    qd.set_defaults(func=_q2d_cmd)
    lb = sub.add_parser("leaderboard", help="add runs to a result store and print the "
                        "leaderboard (per size class and judgment set, paired tests against "
                        "the best)", formatter_class=fmt, description="""\
Add each run to the result store --out (DIR/entries/<id>.json, keyed by the system's card
sha256, its config, the code revision and the set files' sha256), computing its figures from
the run's files, then print the leaderboard. Refused, one line each and nothing written: a
partial run, a run whose system saw the gold, a run without a model card, a run on other set
files or over other queries than the store's. Without --runs, prints the store's leaderboard.
`membench report --leaderboard DIR` renders it (page 06). docs/cards.md has the design.""")
    lb.add_argument("--runs", nargs="+", metavar="RUN_DIR", help="complete runs to add")
    lb.add_argument("--out", required=True, metavar="DIR", help="the result store (created "
                    "if new)")
    lb.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    lb.add_argument("--rank-by", default="recall@1000", metavar="MEASURE",
                    help="the measure rows are ranked by (default recall@1000)")
    lb.add_argument("--resamples", type=resample_count, default=10_000,
                    help="paired bootstrap / permutation resamples (default 10000)")
    lb.add_argument("--final", action="store_true", help="read runs on the frozen test split "
                    "(logged)")
    lb.add_argument("--markdown", action="store_true", help="print the table over all items "
                    "as Markdown (the results page's)")
    lb.add_argument("--brief", action="store_true", help="print only the best system per "
                    "headline measure over all items, with the others' paired tests (page 06 "
                    "has every table)")
    lb.add_argument("--verify", action="store_true", help="first re-run every entry's system "
                    "on a sample and compare (`membench verify`)")
    lb.add_argument("--sample", type=positive_int, default=50, metavar="N",
                    help="with --verify: queries per modality (default 50)")
    lb.set_defaults(func=_leaderboard_cmd)

    vf = sub.add_parser("verify", help="re-run each leaderboard entry's system in a fresh "
                        "process on a sample and compare with its stored run",
                        formatter_class=fmt, description="""\
For each entry of the result store STORE: make its system again from what the run recorded
(meta.json identity: the --system spec and --config values, the package and version, the
source digest), run it in a fresh process on a hash-chosen sample of the entry's queries
(--sample per modality, drawn with --seed, random by default and printed), and compare hits
(atom ids in order, scores to 1e-6) and cartridges with the stored run.jsonl, which must also
still have the sha256 the run recorded. Each entry comes out verified, differs (with the first
differing query) or not re-runnable (an HTTP service, an imported run, a package that is not
installed, code that changed); the leaderboard shows it. Exit 1 when an entry differs.""")
    vf.add_argument("store", metavar="STORE", help="a result store (what membench leaderboard --out wrote)")
    vf.add_argument("--sample", type=positive_int, default=50, metavar="N",
                    help="queries per modality (default 50; an entry over fewer is re-run "
                    "whole)")
    vf.add_argument("--seed", type=int, help="the sample's seed (default: a random one, "
                    "printed)")
    vf.add_argument("--entry", action="append", metavar="ID", help="only this entry "
                    "(repeatable)")
    vf.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    vf.add_argument("--corpus", help=corpus_help)
    vf.add_argument("--manifest", help="manifest the corpus is checked against (default: "
                    "bench/corpus/manifest.jsonl)")
    vf.set_defaults(func=_verify_cmd)

    mt = sub.add_parser("metrics", help="score a run directory -> RUN_DIR/metrics.json")
    mt.add_argument("run_dir", metavar="RUN_DIR", help="a run directory")
    mt.add_argument("--sets", help="sets folder (default: the one recorded in meta.json)")
    mt.add_argument("--json", action="store_true", help="print the JSON instead of the table")
    mt.add_argument("--brief", action="store_true", help="the gates and the headline figures "
                    "in a few lines instead of the full table")
    _read_flags(mt)
    mt.set_defaults(func=_metrics_cmd)
    for name, sp in sub.choices.items():  # also after the subcommand, without resetting it
        flags = ("--quiet",) if name == "trec-eval" else ("-q", "--quiet")  # -q: per query
        sp.add_argument(*flags, action="store_true", default=argparse.SUPPRESS,
                        help="no progress bars or progress lines")
    return p


_DISK_FULL = {errno.ENOSPC, errno.EDQUOT}


def _os_error_line(e: OSError) -> tuple[int, str]:
    """The exit status and the one line for a file-system error (which path, what happened)."""
    where = e.filename2 or e.filename
    what = e.strerror or type(e).__name__
    if e.errno in _DISK_FULL:
        return EXIT_DISK_FULL, (f"{where}: disk full ({what}); what was written before is "
                                "intact: free some space and re-run the same command (a run "
                                "resumes where it stopped)")
    hint = {errno.EACCES: "permission denied", errno.EPERM: "not permitted",
            errno.EROFS: "a read-only file system", errno.EISDIR: "a folder, not a file",
            errno.ENOTDIR: "a file where a folder was expected",
            errno.EEXIST: "already exists"}.get(e.errno)
    return EXIT_FILESYSTEM, (f"{where if where is not None else '(no path)'}: {what}"
                             + (f" ({hint})" if hint and hint not in what.lower() else ""))


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run the command; every expected failure becomes one line on stderr
    and its exit status (see :data:`EXIT_STATUS`), never a traceback. ``--quiet`` silences
    the progress lines (:mod:`membench.core.progress`); ``$MEMBENCH_PROGRESS`` (quiet, lines,
    bar, auto) chooses them otherwise. SIGINT and SIGTERM stop the command within
    :data:`membench.core.stop.STOP_SECONDS` (one line, status 130: :mod:`membench.core.stop`)."""
    from .run.content.config import content_scope

    with stop.handling_stops(), content_scope():    # --content holds for this call only
        return _main(argv)


def _main(argv: list[str] | None) -> int:
    try:
        a = parser().parse_args(argv)
        mode = "quiet" if a.quiet else os.environ.get("MEMBENCH_PROGRESS") or "auto"
        if mode not in progress.MODES:
            raise MembenchError(f"$MEMBENCH_PROGRESS={mode[:40]!r}: expected one of "
                                f"{', '.join(progress.MODES)} (or unset)")
        # the call's mode, not the process's from now on; its steps timed under its name
        # a server waits for requests on purpose: no "still working" lines from it
        with progress.configured(mode), progress.command(
                list(argv or sys.argv[1:]), heartbeat=a.func is not _serve_cmd):
            return a.func(a)
    except MembenchError as e:
        print(f"membench: {e}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as e:      # Ctrl-C, SIGINT or SIGTERM (core.stop): one line
        stop.announce(getattr(e, "signum", None) or stop.stopped_by())
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `membench sources | head`
        sys.stderr.close()
        return 0
    except OSError as e:
        code, line = _os_error_line(e)
        print(f"membench: {line}", file=sys.stderr)
        return code
    except RecursionError:   # the readers name the file; this is the last guard
        print("membench: input nested too deeply to read", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
