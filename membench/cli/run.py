"""``membench run`` and ``membench import-run``: the two ways a run directory comes to be.

``run`` makes a system (:func:`membench.systems.make_system`) and runs it over a split
(:func:`membench.run.runner.run_system`, or :func:`membench.run.ray_engine.run_system_ray` with
``--engine ray``), then optionally scores it as ``membench metrics`` does; ``import-run`` turns a
TREC run and an atoms file into a run directory (:func:`membench.run.importer.import_trec`)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..core.errors import MembenchError
from ..core.paths import DEFAULT_SETS_DIR, MANIFEST_PATH, corpus_root
from .common import (
    CONTENT_HELP,
    CORPUS_HELP,
    FMT,
    SETS_HELP,
    TRUST,
    _content,
    _parse_config,
    positive_int,
    positive_seconds,
    seed_number,
    worker_count,
)


def _run_cmd(a: argparse.Namespace) -> int:
    from ..run.runner import run_system, scope_line
    from ..sets.subcorpus import lock_for
    from ..systems import make_system

    if a.engine == "local" and (a.address or a.workers or a.connect_timeout is not None):
        raise MembenchError("--address, --workers and --connect-timeout go with --engine ray")
    if a.engine == "ray":
        from ..run.ray_engine import import_ray

        import_ray()  # one line on how to install it, before anything else
    _content(a.content)
    system = make_system(a.system, _parse_config(a.config))
    out = Path(a.out) if a.out else Path("runs") / f"{system.name}-{a.split}"
    t0 = time.time()
    kw = dict(
        modalities=a.modality,
        limit=a.limit,
        final=a.final,
        lock=None if a.no_lock else lock_for(a.sets, a.lock),
        manifest=Path(a.manifest),
        sample_seed=a.sample_seed,
    )
    if a.ingested:
        if a.engine == "ray":
            raise MembenchError("--ingested goes with --engine local")
        kw["ingested"] = Path(a.ingested)
    if a.engine == "ray":
        from ..run.ray_engine import run_system_ray

        meta = run_system_ray(
            a.system,
            _parse_config(a.config),
            Path(a.sets),
            a.split,
            out,
            corpus_root(a.corpus),
            address=a.address,
            workers=a.workers,
            **kw,
            **({} if a.connect_timeout is None else {"connect_timeout": a.connect_timeout}),
        )
    else:
        meta = run_system(system, Path(a.sets), a.split, out, corpus_root(a.corpus), **kw)
    print(
        f"{system.name} on {a.split}: {meta['queries']} queries, {meta['atoms']} atoms, "
        f"ingest {meta['ingest_seconds']:.1f} s, total {time.time() - t0:.1f} s -> {out}"
    )
    code = 0
    if a.metrics:
        from .metrics import _metrics_cmd  # looked up now: `membench metrics` as it is

        code = _metrics_cmd(
            argparse.Namespace(
                run_dir=str(out),
                sets=a.sets,
                json=False,
                partial=False,
                final=a.final,
                brief=a.brief,
            )
        )
    if a.strict_scope and scope_line(system.name, meta.get("scope") or {}):
        return 1  # (the run ended with the one line that says why)
    return code


def _import_cmd(a: argparse.Namespace) -> int:
    from ..run.importer import import_trec
    from ..sets.subcorpus import lock_for

    meta = import_trec(
        Path(a.trec),
        Path(a.atoms),
        Path(a.sets),
        a.split,
        Path(a.out),
        a.name,
        cartridge_file=Path(a.cartridge) if a.cartridge else None,
        cartridge_top=a.cartridge_top,
        final=a.final,
        force=a.force,
        corpus_root=corpus_root(a.corpus),
        manifest=Path(a.manifest),
        lock=None if a.no_lock else lock_for(a.sets, a.lock),
        modalities=a.modality,
        limit=a.limit,
        partial=a.partial,
        card=Path(a.card) if a.card else None,
    )
    part = meta.get("partial")
    what = (
        f"PARTIAL: {part['covered']} of {part['asked']} {a.split} queries (read it with --partial)"
        if part
        else f"{meta['queries']} {a.split} queries"
    )
    print(f"imported {a.trec}: {what}, {meta['atoms']} atoms -> {a.out}")
    return 0


def _add_run(sub) -> None:
    r = sub.add_parser(
        "run",
        help="run a memory system over a split (resumes a partial run)",
        formatter_class=FMT,
        epilog=TRUST,
        description="""\
Run a memory system over one split into RUN_DIR. Before ingesting anything the sets are
checked against every hard rule, the corpus against the manifest and the set files against
the lock (seconds); RUN_DIR is locked for the whole run (a second writer is refused, naming
this one). Re-running the same command resumes an interrupted run.""",
    )
    r.add_argument(
        "--system",
        required=True,
        help="bm25, dense, hybrid, oracle, leaky, random, newest, oldest, "
        "metadata, nothing, echo, a real memory library (mem0, mempalace, llamaindex, "
        "llamaindex-bm25: optional extras, docs/systems.md), "
        "an entry point in the membench.systems group, module:Class (imported "
        "and run: see 'trust' below), or http://HOST:PORT for a system served over "
        "HTTP (membench-http/1: docs/systems.md; --config then sets the client's "
        "timeouts and retries)",
    )
    r.add_argument(
        "--config",
        action="append",
        metavar="KEY=VALUE",
        help="system parameter (JSON value), repeatable",
    )
    r.add_argument("--content", action="append", metavar="KEY=VALUE", help=CONTENT_HELP)
    r.add_argument(
        "--split",
        default="dev",
        choices=["dev", "test"],
        help="dev (default) or test (needs --final)",
    )
    r.add_argument("--final", action="store_true", help="allow the frozen test split (logged)")
    r.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=SETS_HELP)
    r.add_argument("--corpus", help=CORPUS_HELP)
    r.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest (default: bench/corpus/manifest.jsonl)",
    )
    r.add_argument(
        "--lock",
        help="the sets must match this lock (default: "
        "bench/sets.lock.json; a sub-corpus folder written by membench pool: its "
        "own sets.lock.json)",
    )
    r.add_argument(
        "--no-lock",
        action="store_true",
        help="run on sets that differ from the lock (the hard rules are still checked)",
    )
    r.add_argument("--out", help="RUN_DIR (default runs/<system>-<split>)")
    r.add_argument("--modality", action="append", help="only this modality (repeatable)")
    r.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="at most N >= 1 queries per modality (hash-chosen)",
    )
    r.add_argument(
        "--sample-seed",
        type=seed_number,
        metavar="S",
        help="with --limit: draw the N "
        "queries per modality by another hash, sha256('limit', S, id) (what "
        "`membench verify` uses; recorded in meta.json)",
    )
    r.add_argument("--metrics", action="store_true", help="compute metrics when done")
    r.add_argument(
        "--ingested",
        metavar="FILE",
        help="create FILE (empty) once ingest is done, "
        "before the queries (make runs starts the other systems then)",
    )
    r.add_argument(
        "--brief",
        action="store_true",
        help="with --metrics: print the gates and "
        "the headline figures in a few lines instead of the full table (metrics.json "
        "and `membench metrics RUN_DIR` have every figure)",
    )
    r.add_argument(
        "--strict-scope",
        action="store_true",
        help="exit 1 when the system "
        "returned another holder's atoms or atoms observed after as_of (the run "
        "ends with one line saying so either way)",
    )
    r.add_argument(
        "--engine",
        choices=["local", "ray"],
        default="local",
        help="local (default: one process) or ray: holders sharded over Ray "
        "workers, the same files (docs/ray.md; pip install 'membench[ray]')",
    )
    r.add_argument(
        "--address", help="with --engine ray: join this Ray cluster (default: start a local one)"
    )
    r.add_argument(
        "--workers",
        type=worker_count,
        metavar="N",
        help="with --engine ray: shards (default: the cluster's CPUs, at most 4)",
    )
    r.add_argument(
        "--connect-timeout",
        type=positive_seconds,
        metavar="S",
        help="with --engine ray --address: the cluster must answer within S seconds (default 30)",
    )
    r.set_defaults(func=_run_cmd)


def _add_import_run(sub) -> None:
    im = sub.add_parser(
        "import-run",
        help="turn a TREC run + atoms file into a RUN_DIR",
        description="Import a TREC run (qid Q0 atom_id rank score tag, qids "
        "from `membench topics`) and an atoms file into a scored RUN_DIR. The "
        "file must cover every query of the selection (the split, or the part "
        "--modality / --limit name): a file that covers less is refused with "
        "how many queries are missing, unless --partial. No empty answer is "
        "ever invented.",
    )
    im.add_argument("--trec", required=True, help="TREC run: qid Q0 atom_id rank score tag")
    im.add_argument("--atoms", required=True, help="atoms.jsonl (see docs/runs.md)")
    im.add_argument("--name", required=True, help="the system's name, for reports")
    im.add_argument(
        "--out", required=True, help="RUN_DIR to write (refused if it holds a run, unless --force)"
    )
    im.add_argument("--force", action="store_true", help="replace the run already in --out")
    im.add_argument(
        "--split",
        default="dev",
        choices=["dev", "test"],
        help="dev (default) or test (needs --final)",
    )
    im.add_argument("--final", action="store_true", help="allow the frozen test split (logged)")
    im.add_argument(
        "--sets",
        default=str(DEFAULT_SETS_DIR),
        help=SETS_HELP + "; checked against every hard rule first, as `run` does",
    )
    im.add_argument("--corpus", help=CORPUS_HELP)
    im.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest (default: bench/corpus/manifest.jsonl)",
    )
    im.add_argument("--lock", help="the sets must match this lock (default: as `run`)")
    im.add_argument(
        "--no-lock",
        action="store_true",
        help="import on sets that differ from the lock (the hard rules are still checked)",
    )
    im.add_argument(
        "--modality",
        action="append",
        help="the file answers only this modality (repeatable; as membench topics takes it)",
    )
    im.add_argument(
        "--limit",
        type=positive_int,
        metavar="N",
        help="the file answers N queries per modality (as `membench topics --limit N` chose them)",
    )
    im.add_argument(
        "--partial",
        action="store_true",
        help="accept a file that covers only "
        "part of the selected queries: lines for the covered ones only, the run "
        "marked PARTIAL everywhere (readers need --partial)",
    )
    im.add_argument(
        "--card",
        metavar="FILE",
        help="the system's model card (a card file, "
        "docs/cards.md); the leaderboard takes no run without one",
    )
    cg = im.add_mutually_exclusive_group(required=True)
    cg.add_argument(
        "--cartridge",
        help="JSON lines {query_id, cartridge: [atom_id, ...]}, one line per query at most",
    )
    cg.add_argument(
        "--cartridge-top", type=positive_int, metavar="K", help="cartridge = top K >= 1 hits"
    )
    im.set_defaults(func=_import_cmd)


COMMANDS = {"run": _add_run, "import-run": _add_import_run}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
