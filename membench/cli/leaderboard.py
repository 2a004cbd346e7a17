"""The result store: ``membench leaderboard`` and ``membench verify``.

``leaderboard`` adds runs to a result store and prints the leaderboard
(:func:`membench.analysis.leaderboard.add_runs`, :func:`membench.analysis.leaderboard.leaderboard`);
``verify`` re-runs each entry's system on a sample and compares it with the stored run
(:func:`membench.analysis.verify.verify_store`)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..core.errors import EXIT_BAD_INPUT
from ..core.paths import corpus_root
from .common import CORPUS_HELP, FMT, positive_int, resample_count, seed_number


def _leaderboard_cmd(a: argparse.Namespace) -> int:
    from ..analysis.leaderboard import Refused, add_runs, format_leaderboard, leaderboard

    if a.runs:
        try:
            added = add_runs(a.runs, Path(a.out), Path(a.sets) if a.sets else None, final=a.final)
        except Refused as e:
            for line in e.lines:
                print(f"membench: {line}", file=sys.stderr)
            print(
                f"membench: nothing written to {a.out} ({len(e.lines)} run(s) refused)",
                file=sys.stderr,
            )
            return EXIT_BAD_INPUT
        for r in added.added:
            print(
                f"{'replaced' if r['replaced'] else 'added'} {r['id']}: {r['system']} "
                f"({r['run_dir']})"
            )
        print(f"{added.out}: {added.entries} entries")
    if a.verify:
        from ..analysis.verify import format_verification, verify_store

        print(format_verification(verify_store(Path(a.out), per_modality=a.sample)))
    lbd = leaderboard(Path(a.out), rank_by=a.rank_by, n_resamples=a.resamples)
    if a.markdown:
        from ..analysis.leaderboard import format_markdown

        print(format_markdown(lbd))
    elif a.brief:
        from ..analysis.leaderboard import format_brief

        print(format_brief(lbd), end="")
    else:
        print(format_leaderboard(lbd), end="")
    return 0


def _verify_cmd(a: argparse.Namespace) -> int:
    from ..analysis.verify import format_verification, verify_store

    results = verify_store(
        Path(a.store),
        per_modality=a.sample,
        seed=a.seed,
        entries=a.entry,
        corpus=corpus_root(a.corpus) if a.corpus else None,
        manifest=Path(a.manifest) if a.manifest else None,
        sets_dir=Path(a.sets) if a.sets else None,
    )
    print(format_verification(results))
    return 1 if any(r["status"] == "differs" for r in results) else 0


def _add_leaderboard(sub) -> None:
    lb = sub.add_parser(
        "leaderboard",
        help="add runs to a result store and print the "
        "leaderboard (per size class and judgment set, paired tests against "
        "the best)",
        formatter_class=FMT,
        description="""\
Add each run to the result store --out (DIR/entries/<id>.json, keyed by the system's card
sha256, its config, the code revision and the set files' sha256), computing its figures from
the run's files, then print the leaderboard. Refused, one line each and nothing written: a
partial run, a run whose system saw the gold, a run without a model card, a run on other set
files or over other queries than the store's. Without --runs, prints the store's leaderboard.
`membench report --leaderboard DIR` renders it (page 06). docs/cards.md has the design.""",
    )
    lb.add_argument("--runs", nargs="+", metavar="RUN_DIR", help="complete runs to add")
    lb.add_argument("--out", required=True, metavar="DIR", help="the result store (created if new)")
    lb.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    lb.add_argument(
        "--rank-by",
        default="recall@1000",
        metavar="MEASURE",
        help="the measure rows are ranked by (default recall@1000)",
    )
    lb.add_argument(
        "--resamples",
        type=resample_count,
        default=10_000,
        help="paired bootstrap / permutation resamples (default 10000)",
    )
    lb.add_argument(
        "--final", action="store_true", help="read runs on the frozen test split (logged)"
    )
    lb.add_argument(
        "--markdown",
        action="store_true",
        help="print the table over all items as Markdown (the results page's)",
    )
    lb.add_argument(
        "--brief",
        action="store_true",
        help="print only the best system per "
        "headline measure over all items, with the others' paired tests (page 06 "
        "has every table)",
    )
    lb.add_argument(
        "--verify",
        action="store_true",
        help="first re-run every entry's system on a sample and compare (`membench verify`)",
    )
    lb.add_argument(
        "--sample",
        type=positive_int,
        default=50,
        metavar="N",
        help="with --verify: queries per modality (default 50)",
    )
    lb.set_defaults(func=_leaderboard_cmd)


def _add_verify(sub) -> None:
    vf = sub.add_parser(
        "verify",
        help="re-run each leaderboard entry's system in a fresh "
        "process on a sample and compare with its stored run",
        formatter_class=FMT,
        description="""\
For each entry of the result store STORE: make its system again from what the run recorded
(meta.json identity: the --system spec and --config values, the package and version, the
source digest), run it in a fresh process on a hash-chosen sample of the entry's queries
(--sample per modality, drawn with --seed, random by default and printed), and compare hits
(atom ids in order, scores to 1e-6) and cartridges with the stored run.jsonl, which must also
still have the sha256 the run recorded. Each entry comes out verified, differs (with the first
differing query) or not re-runnable (an HTTP service, an imported run, a package that is not
installed, code that changed); the leaderboard shows it. Exit 1 when an entry differs.""",
    )
    vf.add_argument(
        "store", metavar="STORE", help="a result store (what membench leaderboard --out wrote)"
    )
    vf.add_argument(
        "--sample",
        type=positive_int,
        default=50,
        metavar="N",
        help="queries per modality (default 50; an entry over fewer is re-run whole)",
    )
    vf.add_argument(
        "--seed", type=seed_number, help="the sample's seed (default: a random one, printed)"
    )
    vf.add_argument("--entry", action="append", metavar="ID", help="only this entry (repeatable)")
    vf.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    vf.add_argument("--corpus", help=CORPUS_HELP)
    vf.add_argument(
        "--manifest",
        help="manifest the corpus is checked against (default: bench/corpus/manifest.jsonl)",
    )
    vf.set_defaults(func=_verify_cmd)


COMMANDS = {"leaderboard": _add_leaderboard, "verify": _add_verify}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
