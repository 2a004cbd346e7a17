"""The leaderboard: a result store of runs, and tables per size class and judgment set.

**The store** (``membench leaderboard --runs RUN... --out DIR``) is a folder::

    DIR/store.json              what every entry shares: split, set files' sha256, the queries
    DIR/entries/<id>.json       one run's figures, keyed by its identity, sealed by its sha256
    DIR/verify/<id>.json        the entry's last ``membench verify`` (membench.analysis.verify)

An entry's figures are computed from the run's files (:class:`membench.metrics.rundir.RunDir`),
never from its metrics.json; reading a store (:func:`read_store`) recomputes each entry's
digest and mean figures and refuses one that does not hold (``STORE_TAMPERED``). A run that
cannot be compared (incomplete, no card, saw the gold, other sets or queries) is refused with
one line and nothing is written. :func:`leaderboard` makes the tables: per size class and
judgment set, the best system of each block and every other one tested against it (Holm).
docs/cards.md, "The leaderboard", says what an entry holds, what is refused and what the
tables show.

**The modules.** :mod:`.columns` (the measures an entry holds and a table shows, the text of
one cell; touches nothing), :mod:`.store` (entries, their seal, reading and adding to a store:
reads run directories and the store, writes the store), :mod:`.ranking` (the
:class:`Leaderboard`: best, gates, paired tests; reads the store and its ``membench verify``
results) and :mod:`.tables` (the text and Markdown tables; touches nothing). Each imports the
ones before it directly; :mod:`membench.analysis.verify` imports :mod:`.store` only, and
:mod:`.ranking` imports verify. This package re-exports their names. Start at
:func:`leaderboard` (tables) or :func:`add_runs` (the store).
"""

from __future__ import annotations

from ..verify import verify_text
from .columns import (
    ANSWER_COLUMNS,
    ANSWER_RANK_BY,
    CARTRIDGE_RANK_BY,
    MEASURES,
    OTHER,
    PRIMARY,
    RANK_BY,
    RELEVANCE,
    SHOWN_CONTEXT,
    SHOWN_LATENCY,
    cell_text,
    gate_text,
)
from .ranking import (
    BASELINE_MARK,
    FLOOR_MARK,
    ORDERING_RESAMPLES,
    RANK_REASONS,
    UNCALIBRATED_HIDDEN,
    Leaderboard,
    best_rows,
    entry_label,
    is_baseline,
    is_floor,
    leaderboard,
    ran_text,
    rank_reason,
    unmarked,
)
from .store import (
    ENTRIES,
    FORMAT,
    STORE_FILE,
    Added,
    Refused,
    _sha,  # noqa: F401 - the tests compute entry ids with it
    add_runs,
    entry_from_run,
    entry_sha256,
    read_store,
    run_card,
    sealed,
    tampered,
)
from .tables import format_brief, format_leaderboard, format_markdown

#: every public name the module membench/analysis/leaderboard.py had (before the split)
__all__ = [
    "ANSWER_COLUMNS",
    "ANSWER_RANK_BY",
    "BASELINE_MARK",
    "CARTRIDGE_RANK_BY",
    "ENTRIES",
    "FLOOR_MARK",
    "FORMAT",
    "MEASURES",
    "ORDERING_RESAMPLES",
    "OTHER",
    "PRIMARY",
    "RANK_BY",
    "RANK_REASONS",
    "RELEVANCE",
    "SHOWN_CONTEXT",
    "SHOWN_LATENCY",
    "STORE_FILE",
    "UNCALIBRATED_HIDDEN",
    "Added",
    "Leaderboard",
    "Refused",
    "add_runs",
    "best_rows",
    "cell_text",
    "entry_from_run",
    "entry_label",
    "entry_sha256",
    "format_brief",
    "format_leaderboard",
    "format_markdown",
    "gate_text",
    "is_baseline",
    "is_floor",
    "leaderboard",
    "ran_text",
    "rank_reason",
    "read_store",
    "run_card",
    "sealed",
    "tampered",
    "unmarked",
    "verify_text",
]
