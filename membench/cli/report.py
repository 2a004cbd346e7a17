"""``membench report``: execute the notebooks and render the HTML report pages of runs (and of a
q2d experiment or a leaderboard store) through :func:`membench.report.render.report`."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from ..core.estimate import cpus
from ..core.paths import corpus_root
from .common import CORPUS_HELP, _read_flags, positive_int


def report_jobs(text: str) -> int:
    """An argparse type: ``--jobs``, an integer from 1 to twice the CPUs this process may use
    (:func:`membench.report.notebooks.check_jobs`)."""
    from ..core.errors import MembenchError
    from ..report.notebooks import check_jobs

    try:
        return check_jobs(positive_int(text))
    except MembenchError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("report: ")) from None


report_jobs.range = (1, 2 * cpus())  # type: ignore[attr-defined]  (what check_jobs takes)


def _report_cmd(a: argparse.Namespace) -> int:
    from ..report.render import report

    t0 = time.time()
    done = report(
        [Path(r) for r in a.run or []],
        Path(a.out),
        Path(a.sets) if a.sets else None,
        compare=[Path(r) for r in a.compare or []],
        corpus=corpus_root(a.corpus) if a.corpus else None,
        partial=a.partial,
        final=a.final,
        force=a.force,
        q2d=Path(a.q2d) if a.q2d else None,
        leaderboard=Path(a.leaderboard) if a.leaderboard else None,
        jobs=a.jobs,
        live_links=a.live_links,
    )
    if not a.brief:
        for r in done:
            print(f"  {r.html}")
    print(
        f"{len(done)} report page(s) in {time.time() - t0:.0f} s; open {Path(a.out) / 'index.html'}"
    )
    return 0


def _add_report(sub) -> None:
    rp = sub.add_parser("report", help="execute the notebooks and render HTML reports")
    rp.add_argument(
        "--run",
        action="append",
        metavar="RUN_DIR",
        help="a run directory (repeatable): pages 01-04 for each, and page 05 "
        "comparing them when there are several (required unless --q2d or "
        "--leaderboard)",
    )
    rp.add_argument(
        "--q2d",
        metavar="DIR",
        help="also render page 07 for the experiment folder `membench q2d` wrote (its q2d.json)",
    )
    rp.add_argument(
        "--leaderboard",
        metavar="DIR",
        help="also render page 06 for the result store `membench leaderboard` wrote",
    )
    rp.add_argument(
        "--compare",
        action="append",
        metavar="RUN_DIR",
        help="more runs (repeatable): the same as --run; with two or more runs "
        "in all, the comparison (notebook 05) is rendered too",
    )
    rp.add_argument(
        "--force", action="store_true", help="replace report folders that already hold pages"
    )
    rp.add_argument("--out", default="reports", help="reports folder (default: reports)")
    rp.add_argument(
        "--brief",
        action="store_true",
        help="print the count of pages and the index, not every page's path",
    )
    rp.add_argument(
        "--jobs",
        type=report_jobs,
        metavar="N",
        help="notebooks executed at once, "
        "1 to twice the CPUs (default: one per CPU, at most 4); the pages are the "
        "same either way",
    )
    rp.add_argument("--sets", help="sets folder (default: the one each run recorded)")
    rp.add_argument("--corpus", help=CORPUS_HELP + ", for the pictures of source regions")
    rp.add_argument(
        "--live-links",
        action="store_true",
        help="make URLs that the sets name "
        "(a video's URL) links on page 04 when they are https to a host the corpus "
        "manifest's sources name; default: shown as text (set files can come from "
        "someone else). Recorded in each page's provenance",
    )
    _read_flags(rp)
    rp.set_defaults(func=_report_cmd)


COMMANDS = {"report": _add_report}


def register(sub, name: str) -> None:
    """Add the subcommand ``name`` (a key of :data:`COMMANDS`) to the subparsers ``sub``."""
    COMMANDS[name](sub)
