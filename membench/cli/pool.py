"""Sub-corpora: ``membench pool`` and ``membench q2d``.

``pool`` writes a sub-corpus chosen by Reciprocal Rank Fusion over runs' rankings (or at
random) as a sets folder (:func:`membench.analysis.pool.pool`); ``q2d`` runs the Q2D-Web
sub-sampling experiment (:func:`membench.analysis.q2d.run_experiment`)."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..core.paths import DEFAULT_SETS_DIR, corpus_root
from .common import (
    CORPUS_HELP,
    FMT,
    SETS_HELP,
    TRUST,
    count_or_zero,
    positive_int,
    resample_count,
    seed_number,
    share_fraction,
)


def _pool_cmd(a: argparse.Namespace) -> int:
    from ..analysis.pool import PoolParams, format_pool, pool

    res = pool(
        a.runs,
        Path(a.sets),
        Path(a.out),
        PoolParams(share=a.share, seed=a.seed, depth=a.depth, rrf_k=a.rrf_k, random=a.random),
        force=a.force,
    )
    print(format_pool(res))
    print(
        f"{'unchanged' if res.written.unchanged else 'wrote'} {res.written.out}: "
        f"{res.written.kept} of {res.written.items} items; runs on it: membench run --sets "
        f"{res.written.out} ... (its own lock: {res.written.out / 'sets.lock.json'})"
    )
    return 0


def _q2d_cmd(a: argparse.Namespace) -> int:
    from ..analysis.q2d import format_table, run_experiment

    res = run_experiment(
        Path(a.spec),
        Path(a.out),
        Path(a.sets),
        corpus_root(a.corpus),
        shares=a.share,
        seeds=a.seeds,
        resamples=a.resamples,
    )
    print(format_table(res))
    print(f"wrote {Path(a.out) / 'q2d.json'}")
    return 0


def _add_pool(sub) -> None:
    po = sub.add_parser(
        "pool",
        help="a sub-corpus of items chosen by Reciprocal Rank Fusion "
        "over runs' rankings (or at random, --random), written as a sets folder",
        formatter_class=FMT,
        description="""\
Per holder of the runs' split and modalities, keep every item named by a record's gold,
judgments or distractors, then the items the runs rank first (RRF over each run's top --depth
items per query; an item's best position in any query's fused list), until the holder holds
max(required, ceil(share * items)) items. --random fills the same size at random (seeded).
Other splits and modalities are kept whole; the records do not change. The folder holds its
own lock (sets.lock.json) and subcorpus.json; `membench run --sets OUT` and `membench
validate --sets OUT` check it against that lock. docs/pooling.md has the method.""",
    )
    po.add_argument(
        "--runs",
        nargs="+",
        required=True,
        metavar="RUN_DIR",
        help="complete dev runs on --sets (not --limit runs, not test doubles that "
        "saw the gold), all over the same queries",
    )
    po.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=SETS_HELP)
    po.add_argument(
        "--share",
        type=share_fraction,
        required=True,
        metavar="F",
        help="share of each holder's items to keep, in (0, 1] (at least its required items)",
    )
    po.add_argument(
        "--seed",
        type=seed_number,
        default=0,
        metavar="N",
        help="seed of ties and of the random fill (default 0)",
    )
    po.add_argument(
        "--depth",
        type=positive_int,
        default=100,
        metavar="D",
        help="items of each run's ranking that enter the fusion (default 100)",
    )
    po.add_argument(
        "--rrf-k",
        type=count_or_zero,
        default=60,
        metavar="K",
        help="RRF constant: 1 / (K + rank) (default 60)",
    )
    po.add_argument(
        "--random",
        action="store_true",
        help="a random sub-corpus of the same size per holder (the baseline)",
    )
    po.add_argument("--out", required=True, help="the sub-corpus folder to write")
    po.add_argument(
        "--force", action="store_true", help="replace another sub-corpus already in --out"
    )
    po.set_defaults(func=_pool_cmd)


def _add_q2d(sub) -> None:
    qd = sub.add_parser(
        "q2d",
        help="the Q2D-Web sub-sampling experiment: full corpus vs RRF "
        "pool vs random sub-corpus, recall inflation and Kendall's tau",
        formatter_class=FMT,
        epilog=TRUST,
        description="""\
Run every system of --spec on the full dev sets (its modalities), pool sub-corpora from those
runs at each share (RRF, RRF leaving out the system evaluated, random with several seeds),
run every system on them, and write OUT/q2d.json: per share and method the mean inflation of
recall@1000, recall@100, recall@10 and nDCG@10 over the full corpus and Kendall's tau of the
system ranking, with bootstrap intervals over queries (and over seeds for random). Every run
is an ordinary run directory under OUT; re-running resumes. docs/pooling.md has the design.""",
    )
    qd.add_argument(
        "--spec",
        required=True,
        help="the experiment's JSON spec (systems with "
        "their config, modalities, shares, seeds; e.g. bench/q2d.json)",
    )
    qd.add_argument("--out", required=True, help="experiment folder (runs, sub-corpora, q2d.json)")
    qd.add_argument("--sets", default=str(DEFAULT_SETS_DIR), help=SETS_HELP)
    qd.add_argument("--corpus", help=CORPUS_HELP)
    qd.add_argument(
        "--share",
        type=share_fraction,
        action="append",
        metavar="F",
        help="only this share (repeatable; default: the spec's)",
    )
    qd.add_argument(
        "--seeds",
        type=positive_int,
        metavar="N",
        help="random sub-corpora per share (default: the spec's)",
    )
    qd.add_argument(
        "--resamples", type=resample_count, default=2000, help="bootstrap resamples (default 2000)"
    )
    qd.set_defaults(func=_q2d_cmd)


COMMANDS = {"pool": _add_pool, "q2d": _add_q2d}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
