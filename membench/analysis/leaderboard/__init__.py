"""The leaderboard: a result store of runs, and tables per size class and judgment set.

**The store** (``membench leaderboard --runs RUN... --out DIR``) is a folder::

    DIR/store.json              what every entry shares: split, set files' sha256, the queries
    DIR/entries/<id>.json       one run's figures, keyed by its identity, sealed by its sha256

An entry's identity (its ``key``, and ``id`` = the first 16 hex digits of the key's sha256) is
(system card sha256, config sha256, code revision, set files' sha256, sha256 of what ran:
meta.json ``identity``, and whether the run was ``sealed``): the same system with the same card
and config, run by the same code on the same sets, is one entry (adding it again replaces it
with the same figures); anything else is another entry. Each row says what ran
(:func:`ran_text`: reference, library adapter, registered package, user module, HTTP service,
imported; sealed or not) and its last ``membench verify`` (:mod:`membench.analysis.verify`:
verified, differs, not re-runnable, or not verified). Figures are computed from
the run's files through :class:`membench.metrics.rundir.RunDir` (never from a metrics.json
that could have been edited): for every judgment set the run's records carry (``gold`` and
each alternative set of :attr:`membench.metrics.score.ItemScores.judgments`, whatever their
names) and every scope (each modality, and ``all``), each measure's value, n, denominator and
95% bootstrap interval (:func:`membench.metrics.aggregate.mean_entry`, the numbers of
metrics.json), and the per-item values the paired tests need. Relevance measures (the
registry's ``per_judgment_set``) take the judgment set's values; ``judged@10``, beside
recall@10 in every set's table, reads every set at once and is shown over the items the set
judges (never ranked or tested); the others (false recall, abstention, holder and temporal
correctness, latency) do not depend on it and are the same under every set.

**Entries check themselves.** Each entry carries ``sha256``: the sha256 of its canonical JSON
without that field (figures, per-item values, identity, card). Reading a store
(:func:`read_store`) recomputes it, and recomputes every mean figure from the entry's per-item
values; an entry whose digest or figures do not hold (edited after it was written, or
corrupted) is refused with a located ``STORE_TAMPERED`` error naming its file, so a tampered
figure is never shown as a result. The digest detects edits, it does not sign: whoever can
write the store can rewrite an entry consistently; re-adding the runs recomputes every figure
from the run files. Identifiers in an entry (system, card, query ids, judgment set names) must
be identifiers (:mod:`membench.core.ids`).

**What is refused**, with one line per run and nothing written (never mixed):

* a run :meth:`RunDir.open` refuses (an incomplete run, ``INCOMPLETE_RUN``: the store takes no
  partial runs; drifted sets; a test-split run without ``final``);
* a run whose system saw the gold (a registered test double, meta.json ``sees_gold``), and the
  other doubles but the baselines and the content-free floors (they carry no card, below);
* a run without a model card (meta.json ``card``, which the runner takes from what the system
  is, never from its name), a run that does not say what ran (no ``identity``), and a run
  whose card takes a registry card's name on a system that is not membench's;
* a run on other set files (sha256) than the store's, on another split, or over other queries
  (another ``--modality`` / ``--limit`` selection): a store compares systems on the same items.

**The tables** (:func:`leaderboard`): one per (size class, judgment set), with one block per
scope (each modality, then all). Per measure, the best system of the block (highest, or lowest
for a "lower is better" measure) is marked, and every other system is tested against it on the
same items (:func:`membench.analysis.compare.paired_test`: paired bootstrap interval of the
difference, sign-flip permutation p), with Holm's correction over every test of the table;
a system is "not worse than the best" when the corrected p is >= 0.05. Gates (the measure
registry's) are marked pass/fail on each value; the false-recall gate is ``FAIL (silent)``
for a system that abstains on more than half of the answerable items
(:data:`membench.metrics.measures.MAX_SILENT_ABSTENTION`). Size classes are the cards'
(``<=1B``, ``>1B``); a hybrid's or a library's parameters are those of its components.

**The natives with an upstream tell** (``origin.audited`` false) are outside the audited false
recall and the abstention-order statistics; their own column (``false_recall_native``) is
shown, labelled with the tell's ROC AUC from the audit of the runs' sets (an entry's
``native_tells``), and never ranked or tested (SPEC section 5).

**The baselines** (``nothing``, no memory, and ``echo``, question-word overlap over the memory
with an empty cartridge, :mod:`membench.systems.doubles`: registered test doubles that see no
gold and carry a card, :func:`is_baseline`) are entries too: their rows are shown under the
ranked ones of every block, labelled "baseline", as the floor every figure is read against
(what silence, or echoing the question into the memory, scores). They are never the best of a column and never tested against it;
``format_brief`` lists them after the tests. **The content-free floors** (``random``, ``newest``,
``oldest``: :data:`membench.systems.doubles.CONTENT_FREE`, :func:`is_floor`) carry a card too and
are shown the same way, labelled "content-free floor" and listed under the baselines: they rank
by a seeded order or by observed_at alone and read no content, so their figures are what
position alone reaches. The other doubles carry no card and are refused.

**Silence cannot win.** The cartridge table (false recall, with the answerable abstention
beside it, the answerable share kept at false recall <= 0.10 and the abstention AUC:
:mod:`membench.metrics.abstention`) is ranked by ``answerable_kept@fr0.10``
(:data:`CARTRIDGE_RANK_BY`), on which a system that always abstains scores 0. Those two
statistics have no per-item values: an entry keeps each item's abstention score and whether
its cartridge was empty (``items.abstention``), and their tests against the best are paired
bootstraps of the statistic (:func:`membench.metrics.abstention.paired_difference`), whose
p Holm reads in place of the permutation p.

**The modules.** :mod:`.columns` (the measures an entry holds and a table shows, the text of
one cell; touches nothing), :mod:`.store` (entries, their seal, reading and adding to a store:
reads run directories and the store, writes the store), :mod:`.ranking` (the
:class:`Leaderboard`: best, gates, paired tests; reads the store and its ``membench verify``
results) and :mod:`.tables` (the text and Markdown tables; touches nothing). Each imports the
ones before it directly; :mod:`membench.analysis.verify` imports :mod:`.store` only, and
:mod:`.ranking` imports verify. This package re-exports their names.
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
__all__ = ["ANSWER_COLUMNS", "ANSWER_RANK_BY", "BASELINE_MARK", "CARTRIDGE_RANK_BY", "ENTRIES", "FLOOR_MARK", "FORMAT", "MEASURES",
           "ORDERING_RESAMPLES", "OTHER", "PRIMARY", "RANK_BY", "RANK_REASONS", "RELEVANCE",
           "SHOWN_CONTEXT", "SHOWN_LATENCY", "STORE_FILE", "UNCALIBRATED_HIDDEN", "Added",
           "Leaderboard", "Refused", "add_runs", "best_rows", "cell_text", "entry_from_run",
           "entry_label", "entry_sha256", "format_brief", "format_leaderboard", "format_markdown",
           "gate_text", "is_baseline", "is_floor", "leaderboard", "ran_text", "rank_reason", "read_store",
           "run_card", "sealed", "tampered", "unmarked", "verify_text"]
