"""The report's pages: one :class:`PageSpec` record per page in :data:`PAGES`, in the report's
order (its notebook, its title, its short title for the index, and its ``role``: what the page
is drawn for, which says where ``membench report`` renders it).

Adding a page is one record here (with ``notebooks/<notebook>.ipynb``) plus a test;
:mod:`.export` derives the names its callers read (``RUN_NOTEBOOKS``, ``SETS_NOTEBOOK``,
``COMPARE_NOTEBOOK``, ``LEADERBOARD_NOTEBOOK``, ``Q2D_NOTEBOOK``, ``PAGE_TITLES``,
``SHORT_TITLES``) from it. Touches: nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

#: what a page is drawn for: the sets (once per sets content, linked from each run's pages,
#: so one of a run's pages too), one run, a comparison of runs, the leaderboard, a Q2D store
ROLES = ("sets", "run", "compare", "leaderboard", "q2d")
#: the roles whose pages a run's folder lists (:data:`membench.report.export.RUN_NOTEBOOKS`)
RUN_ROLES = ("sets", "run")


@dataclass(frozen=True)
class PageSpec:
    """One page of the report: ``notebook`` (the stem of ``notebooks/<notebook>.ipynb`` and of
    the page's ``.html``), ``title`` (its navigation and ``<title>``), ``short`` (its link in
    the index) and ``role`` (:data:`ROLES`)."""

    notebook: str
    title: str
    short: str
    role: str


PAGES: tuple[PageSpec, ...] = (
    PageSpec("01_validate_sets", "01 · sets and rules", "01 sets", "sets"),
    PageSpec("02_run_dev", "02 · metrics and gates", "02 metrics", "run"),
    PageSpec("03_slice_failures", "03 · where it fails (slices)", "03 slices", "run"),
    PageSpec(
        "04_false_recalls",
        "04 · false recalls, misses and scope leaks, case by case",
        "04 cases",
        "run",
    ),
    PageSpec("05_compare_systems", "05 · comparing systems", "05 compare", "compare"),
    PageSpec(
        "06_leaderboard",
        "06 · leaderboard (size classes, judgment sets)",
        "06 leaderboard",
        "leaderboard",
    ),
    PageSpec("07_q2d_pooling", "07 · sub-corpus evaluation (Q2D-Web)", "07 q2d", "q2d"),
)


def page_of(role: str) -> str:
    """The notebook of the one page drawn for ``role`` (``compare``, ``leaderboard``, ...)."""
    (only,) = (p.notebook for p in PAGES if p.role == role)
    return only


__all__ = ["PAGES", "ROLES", "RUN_ROLES", "PageSpec", "page_of"]
