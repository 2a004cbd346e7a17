"""The annotation sets: ``membench build``, ``validate``, ``audit``, ``synth``, ``topics`` and
``sets-card``.

``build`` checks the corpus against the manifest, then builds the sets and compares them with
the lock (:func:`membench.sets.build.build_sets`, :func:`membench.sets.build.check_lock`);
``validate`` checks built sets against every hard rule
(:func:`membench.sets.validate.validate_sets`); ``audit`` asks whether metadata alone tells
unanswerable queries apart (:func:`membench.sets.audit.audit_sets`); ``synth`` writes synthetic
sets (:func:`membench.sets.synth.generate`); ``topics`` writes a split's queries as a system
sees them (:func:`membench.sets.topics.topics`, :func:`membench.sets.topics.write_topics`);
``sets-card`` writes the sets' Croissant 1.1 dataset card (:func:`membench.sets.card.write_card`).
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from ..core.errors import MembenchError
from ..core.paths import DEFAULT_SETS_DIR, LOCK_PATH, MANIFEST_PATH, corpus_root
from .common import CORPUS_HELP, SETS_HELP, _write_output, positive_int, seed_number, synth_size
from .corpus import _check_corpus_before_build

CARD_FILE = "croissant.json"  # membench.sets.card.CARD_FILE (imported lazily there)


def _build_cmd(a: argparse.Namespace) -> int:
    from ..sets.build import (
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
    print(
        f"built {len(res.records)} records over {len(res.items)} items into {out} "
        f"in {time.time() - t0:.1f} s" + ("" if a.brief else "\n")
    )
    if a.brief:
        print(
            f"  the counts, coverage and derived-query tables: {out / 'coverage.json'}, "
            "report page 01, or `membench build` without --brief"
        )
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
    from ..sets.validate import validate_sets

    corpus = corpus_root(a.corpus) if (a.corpus or not a.no_corpus) else None
    from ..sets.subcorpus import lock_for

    findings = validate_sets(
        Path(a.sets),
        Path(a.manifest),
        lock=None if a.no_lock else lock_for(a.sets, a.lock),
        corpus=corpus,
        audit=not a.no_audit,
    )
    errors = [f for f in findings if f.level == "error"]
    for f in findings:
        print(f)
    if a.json:
        _write_output(a.json, json.dumps([f.__dict__ for f in findings], indent=1) + "\n", "--json")
    print(f"validate {a.sets}: {len(errors)} error(s), {len(findings) - len(errors)} warning(s)")
    if not errors and not a.no_audit:  # the runs on these very inputs need not check again
        from ..run.split import remember_pass

        remember_pass(
            Path(a.sets), corpus, Path(a.manifest), None if a.no_lock else lock_for(a.sets, a.lock)
        )
    return 1 if errors else 0


def _audit_cmd(a: argparse.Namespace) -> int:
    from ..sets.audit import audit_sets, render_audit

    result = audit_sets(Path(a.sets))
    print(render_audit(result))
    for line in result.failures():
        print(f"TELL: {line}")
    if a.json:
        _write_output(a.json, json.dumps(result.as_dict(), indent=1) + "\n", "--json")
        print(f"wrote {a.json}")
    print(f"audit {a.sets}: {'every gate holds' if result.ok else 'a gate fails'}")
    return 0 if result.ok else 1


def _synth_cmd(a: argparse.Namespace) -> int:
    from ..sets.synth import generate

    c = generate(Path(a.out), a.atoms, a.queries, a.seed)
    print(
        f"synth -> {a.out}: {c['dev_atoms']} dev atoms, {c['dev_queries']} dev queries, "
        f"{c['dev_holders']} dev holders ({c['dev_items']} sessions); run it with "
        f"--sets {a.out}/sets --corpus {a.out}/corpus --manifest {a.out}/manifest.jsonl "
        "--no-lock"
    )
    return 0


def _topics_cmd(a: argparse.Namespace) -> int:
    from ..sets.topics import topics, write_topics

    if a.split == "test":
        if not a.final:
            raise MembenchError(
                "the test split is frozen: its topics are a final access; "
                "pass --final (it is logged)"
            )
        from ..run.runner import code_revision, log_test_access

        log_test_access("topics", Path(a.out), code_revision(), action="topics")
    rows = topics(Path(a.sets), a.split, a.modality, a.limit)
    n = write_topics(Path(a.out), rows)
    print(f"wrote {n} {a.split} topics to {a.out} (presentation order; opaque qids)")
    return 0


def _card_cmd(a: argparse.Namespace) -> int:
    from ..sets.card import write_card

    path, digest = write_card(Path(a.sets), Path(a.out), Path(a.manifest), corpus_root(a.corpus))
    print(f"wrote {path} (Croissant 1.1; sha256 {digest})")
    return 0


def _add_build(sub) -> None:
    b = sub.add_parser(
        "build",
        help="build the annotation sets from the corpus mirror",
        description="Check the corpus against the manifest (the sources built), "
        "then build the sets and compare them with the lock.",
    )
    b.add_argument("--corpus", help=CORPUS_HELP)
    b.add_argument(
        "--out", default=str(DEFAULT_SETS_DIR), help="sets folder to write (default: bench/sets)"
    )
    b.add_argument(
        "--source",
        action="append",
        help="only this source key (repeatable; a partial build is not compared with the lock)",
    )
    b.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest the corpus is checked against (default: bench/corpus/manifest.jsonl)",
    )
    b.add_argument(
        "--lock", default=str(LOCK_PATH), help="lock file (default: bench/sets.lock.json)"
    )
    b.add_argument("--update-lock", action="store_true", help="freeze this build's sha256s")
    b.add_argument(
        "--brief",
        action="store_true",
        help="one line for the build and the lock's "
        "verdict, not the counts, coverage and derivation tables",
    )
    b.set_defaults(func=_build_cmd)


def _add_validate(sub) -> None:
    v = sub.add_parser("validate", help="check built sets against every hard rule")
    v.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=SETS_HELP)
    v.add_argument("--corpus", help=CORPUS_HELP)
    v.add_argument("--no-corpus", action="store_true", help="skip corpus file checks")
    v.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest (default: bench/corpus/manifest.jsonl)",
    )
    v.add_argument(
        "--lock",
        help="lock file (default: bench/sets.lock.json; a sub-corpus "
        "folder written by membench pool: its own sets.lock.json)",
    )
    v.add_argument("--no-lock", action="store_true", help="skip the set-file digest check")
    v.add_argument("--no-audit", action="store_true", help="skip the metadata-only audit (TELL)")
    v.add_argument("--json", help="also write the findings as JSON here")
    v.set_defaults(func=_validate_cmd)


def _add_audit(sub) -> None:
    au = sub.add_parser(
        "audit",
        help="can metadata alone (as_of, timelines, repetition, order) "
        "tell unanswerable queries apart? classifier AUC and named rules",
    )
    au.add_argument(
        "sets",
        nargs="?",
        default=str(DEFAULT_SETS_DIR),
        metavar="SETS",
        help="sets folder (default: bench/sets)",
    )
    au.add_argument("--json", help="also write the audit as JSON here")
    au.set_defaults(func=_audit_cmd)


def _add_synth(sub) -> None:
    sy = sub.add_parser(
        "synth",
        help="write synthetic sets shaped like the real dev sets (growth benchmarks; docs/ray.md)",
    )
    sy.add_argument("--out", required=True, help="folder for sets/, manifest.jsonl, corpus/")
    sy.add_argument(
        "--atoms",
        type=synth_size,
        required=True,
        help="dev atoms (as the reference chunker makes them) to reach",
    )
    sy.add_argument("--queries", type=synth_size, required=True, help="dev queries")
    sy.add_argument("--seed", type=seed_number, default=0, help="generator seed (default 0)")
    sy.set_defaults(func=_synth_cmd)


def _add_topics(sub) -> None:
    tp = sub.add_parser(
        "topics",
        help="the queries of a split as a system sees them (JSON "
        "lines: opaque qid, question, scope, as_of), for systems in other languages",
    )
    tp.add_argument(
        "--split", default="dev", choices=["dev", "test"], help="which split (test needs --final)"
    )
    tp.add_argument("--out", required=True, help="the topics file to write (JSON lines)")
    tp.add_argument(
        "--sets", default=str(DEFAULT_SETS_DIR), help="sets folder (default: bench/sets)"
    )
    tp.add_argument("--modality", action="append", help="only this modality (repeatable)")
    tp.add_argument("--limit", type=positive_int, help="at most N queries per modality (as `run`)")
    tp.add_argument("--final", action="store_true", help="the frozen test split (logged)")
    tp.set_defaults(func=_topics_cmd)


def _add_card(sub) -> None:
    cd = sub.add_parser(
        "sets-card",
        help="write the sets' dataset card: Croissant 1.1 JSON-LD "
        "(files and sha256s, record fields, licences, provenance, RAI)",
        description="Describe built sets in Croissant 1.1 (croissant.json), from "
        "the set files, the source registry, the corpus manifest and the "
        "mirror's licence notes (checked against the manifest). The same sets "
        'give the same bytes. docs/sets.md, "The dataset card".',
    )
    cd.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=SETS_HELP)
    cd.add_argument(
        "--out",
        default=CARD_FILE,
        help=f"the card file, or a folder to hold {CARD_FILE} (default: ./{CARD_FILE})",
    )
    cd.add_argument(
        "--manifest",
        default=str(MANIFEST_PATH),
        help="manifest (default: bench/corpus/manifest.jsonl)",
    )
    cd.add_argument("--corpus", help=CORPUS_HELP + ", for the licence notes")
    cd.set_defaults(func=_card_cmd)


COMMANDS = {
    "build": _add_build,
    "validate": _add_validate,
    "audit": _add_audit,
    "synth": _add_synth,
    "topics": _add_topics,
    "sets-card": _add_card,
}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
