"""Per-item scoring: every measure of SPEC section 7 for every annotated item.

:func:`score_items` joins records, source items, atoms and run lines and returns
:class:`ItemScores`: one value per item and measure, NaN where the item is outside that
measure's denominator (e.g. recall on an unanswerable item). An unanswerable item is in
``false_recall_rate``'s denominator when it is audited (``origin.audited``:
:func:`membench.contract.tells.audited`), else in ``false_recall_native``'s: SPEC section 5,
"Upstream natives that fail this audit keep their text but are reported in their own column,
never in a gated or headline false recall" (``ItemScores.audited`` says which, per item).
Aggregation, intervals and gates are in :mod:`membench.metrics.aggregate`; slicing code can use
``ItemScores.rows()``.

Join rules: the denominator is the annotated items, never the hits. A run directory's reader
(:class:`membench.metrics.rundir.RunDir`) never passes an item without a run line: it refuses
an incomplete run, or with ``--partial`` leaves the unanswered items out, so a missing line is
never scored as an abstention. A direct caller that passes one gets the item scored as
returning nothing (recall, MRR, nDCG and cartridge recall 0; an empty cartridge; no latency). A run line for a query that is not an
annotated item of the evaluated set, a second line for the same query, or an atom id that the
run never reported in ``atoms.jsonl`` are errors with file:line.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..contract.protocol import rank_order
from ..contract.schema import AnnotationRecord, SourceItem
from ..contract.tells import audited as _audited
from ..core.errors import InputError
from ..core.jsonl import parse_model
from ..run.files import AtomRow, RunRow, parse_atom, parse_run_row, to_us
from ..sets.judgments import PRIMARY
from . import cartridge as cart_mod
from .abstention import abstention_score
from .answer_layer import ANSWER_AT, ContentTexts, item_figures
from .answer_layer import KEYS as CONTENT_KEYS
from .answer_layer import note as content_note
from .atom_level import ATOM_MEASURES, atom_measures, relevant_atoms
from .judged import JUDGED, judged_at_k
from .measures import COST_ARRAYS, MEAN_MEASURES, SILENCE
from .ranking import FirstHits, graded_gain, rank_measures
from .resolve import AtomTable, GoldRef, Universe, build_atom_table, index_items
from .scope import check_scope

__all__ = ["PRIMARY", "ItemScores", "score_items", "source_key"]


def source_key(query_id: str) -> str:
    """The source a query belongs to: its id's prefix before the first ':'."""
    return query_id.split(":", 1)[0]


@dataclass
class ItemScores:
    """Per-item results, aligned lists/arrays (one entry per annotated item)."""

    query_id: list[str]
    modality: list[str]
    source: list[str]
    holder: list[str]
    as_of: list[str]
    derivation: list[str | None]
    answerable: np.ndarray  # bool
    # bool: in the audited population (every answerable item, and an unanswerable one whose
    # origin.audited is true: membench.contract.tells.audited); False: a native unanswerable with
    # an upstream tell, counted by false_recall_native only (SPEC section 5)
    audited: np.ndarray
    has_run: np.ndarray  # bool
    n_gold: np.ndarray  # int
    n_hits: np.ndarray  # int, distinct ranked atoms
    cartridge_size: np.ndarray  # int, distinct cartridge atoms
    n_future: np.ndarray  # int, returned atoms observed after as_of
    n_foreign: np.ndarray  # int, returned atoms of another holder
    latency_ms: np.ndarray  # float, NaN without a run line
    values: dict[str, np.ndarray]  # measure -> per item, NaN outside its denominator
    # the abstention score (membench.metrics.abstention): the reported confidence, else the
    # top-1 hit score, else -inf
    abstention_score: np.ndarray = field(default_factory=lambda: np.zeros(0))
    judgments: dict[str, dict[str, np.ndarray]] = field(default_factory=dict)
    # the atom-level view (membench.metrics.atom_level): measure -> per item (NaN outside the
    # answerable items), and per item the relevant atoms (atom id -> grade)
    atom_level: dict[str, np.ndarray] = field(default_factory=dict)
    atom_qrels: list[dict[str, int]] = field(default_factory=list)
    # what was read for the answer layer and the context cost (membench.metrics.answer_layer):
    # metrics.json["answer_context"]
    content: dict[str, Any] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.query_id)

    def rows(self) -> list[dict[str, Any]]:
        """One plain dict per item (e.g. for ``pandas.DataFrame(scores.rows())``); NaN
        becomes None."""
        out = []
        for i in range(len(self)):
            r: dict[str, Any] = {
                "query_id": self.query_id[i],
                "modality": self.modality[i],
                "source": self.source[i],
                "holder": self.holder[i],
                "as_of": self.as_of[i],
                "derivation": self.derivation[i],
                "answerable": bool(self.answerable[i]),
                "audited": bool(self.audited[i]),
                "has_run": bool(self.has_run[i]),
                "n_gold": int(self.n_gold[i]),
                "n_hits": int(self.n_hits[i]),
                "cartridge_size": int(self.cartridge_size[i]),
                "n_future": int(self.n_future[i]),
                "n_foreign": int(self.n_foreign[i]),
                "latency_ms": _opt(self.latency_ms[i]),
                "abstention_score": float(self.abstention_score[i]),
            }
            for k, v in self.values.items():
                r[k] = _opt(v[i])
            for name, vals in self.judgments.items():
                for k, v in vals.items():
                    r[f"{name}/{k}"] = _opt(v[i])
            out.append(r)
        return out


def _opt(x: float) -> float | None:
    return None if np.isnan(x) else float(x)


def _records(records: Iterable[AnnotationRecord | Mapping]) -> list[AnnotationRecord]:
    out = []
    for i, r in enumerate(records):
        out.append(
            r
            if isinstance(r, AnnotationRecord)
            else parse_model(AnnotationRecord, dict(r), "<records>", i + 1)
        )
    return out


def _items(items: Iterable[SourceItem | Mapping]) -> list[SourceItem]:
    return [
        it if isinstance(it, SourceItem) else parse_model(SourceItem, dict(it), "<items>", i + 1)
        for i, it in enumerate(items)
    ]


def _prepare_gold(
    golds, rec: AnnotationRecord, uni: Universe, where: tuple[str, int | None], field_name: str
) -> list[GoldRef]:
    out = []
    for j, g in enumerate(golds):
        it = uni.items.get(g.source_id)
        if it is None:
            raise InputError(
                where[0],
                where[1],
                f"{field_name}[{j}].source_id",
                f"{rec.query_id}: gold source {g.source_id!r} is not a source item",
                rule="GOLD_SOURCE",
            )
        if it.modality != rec.modality:
            raise InputError(
                where[0],
                where[1],
                f"{field_name}[{j}].source_id",
                f"{rec.query_id}: gold source {g.source_id} is {it.modality!r}, the "
                f"record is {rec.modality!r}",
                rule="GOLD_SOURCE",
            )
        out.append(GoldRef(uni.source_index[g.source_id], rec.modality, g.region))
    return out


def _check_atoms(row: RunRow, table: AtomTable) -> None:
    idx = table.index
    if not set(row.hit_ids).union(row.cartridge).difference(idx):  # dict lookups, in C
        return
    for name, ids in (("hits", row.hit_ids), ("cartridge", row.cartridge)):
        for a in ids:
            if a not in idx:
                raise InputError(
                    row.file,
                    row.line,
                    name,
                    f"{row.query_id}: atom {a!r} is not in atoms.jsonl",
                    rule="RUN_ATOM",
                )


def _ranked_indices(row: RunRow, table: AtomTable) -> tuple[np.ndarray, np.ndarray]:
    """Ranked, de-duplicated hit atoms and the distinct cartridge atoms, as table indices."""
    get = table.index.__getitem__
    ranked_ids = rank_order(row.hit_ids, row.scores)
    ranked = np.array(list(map(get, ranked_ids)), dtype=np.int64)
    cart = np.unique(np.array(list(map(get, row.cartridge)), dtype=np.int64))
    return ranked, cart


class _Columns:
    """The per-item columns :func:`score_items` fills, one record at a time (``n`` items)."""

    def __init__(self, n: int):
        self.n = n
        self.answerable = np.zeros(n, dtype=bool)
        self.audited = np.ones(n, dtype=bool)
        self.has_run = np.zeros(n, dtype=bool)
        self.n_gold = np.zeros(n, dtype=np.int64)
        self.n_hits = np.zeros(n, dtype=np.int64)
        self.cart_size = np.zeros(n, dtype=np.int64)
        self.n_future = np.zeros(n, dtype=np.int64)
        self.n_foreign = np.zeros(n, dtype=np.int64)
        self.latency = np.full(n, np.nan)
        self.abst = np.full(n, -np.inf)
        nan = self.nan
        self.false_recall, self.false_native = nan(), nan()
        self.abstain, self.cart_recall = nan(), nan()
        self.judged = nan()
        self.atom_level = {m: nan() for m in ATOM_MEASURES}
        self.atom_qrels: list[dict[str, int]] = []
        self.first_ranks: list[list[int]] = []
        self.gains: list[list[float]] = []
        # name -> {"ranks": [], "gains": [], "n_gold": [], "cart": array}
        self.alt: dict[str, dict[str, Any]] = {}
        self.layer = {k: nan() for k in CONTENT_KEYS}

    def nan(self) -> np.ndarray:
        return np.full(self.n, np.nan)


def _query_index(
    recs: list[AnnotationRecord], locs: list[tuple[str, int | None]]
) -> dict[str, int]:
    """query id -> its record's position; a second record of one query id is an error."""
    by_qid: dict[str, int] = {}
    for i, r in enumerate(recs):
        if r.query_id in by_qid:
            raise InputError(
                locs[i][0],
                locs[i][1],
                "query_id",
                f"duplicate query_id {r.query_id!r}",
                rule="DUPLICATE_QUERY_ID",
            )
        by_qid[r.query_id] = i
    return by_qid


def _runs_by_query(
    run_rows: Iterable[RunRow | Mapping], by_qid: dict[str, int], table: AtomTable
) -> dict[str, RunRow]:
    """query id -> its run line: one per annotated item at most, every atom reported."""
    runs: dict[str, RunRow] = {}
    for j, row in enumerate(run_rows):
        if not isinstance(row, RunRow):
            row = parse_run_row(row, "<run>", j + 1)
        if row.query_id not in by_qid:
            raise InputError(
                row.file,
                row.line,
                "query_id",
                f"{row.query_id!r} is not an annotated item of the evaluated set",
                rule="RUN_QUERY",
            )
        if row.query_id in runs:
            raise InputError(
                row.file,
                row.line,
                "query_id",
                f"{row.query_id!r} has a second run line (first at line {runs[row.query_id].line})",
                rule="DUPLICATE_QUERY_ID",
            )
        _check_atoms(row, table)
        runs[row.query_id] = row
    return runs


def _score_gold(
    cols: _Columns,
    i: int,
    rec: AnnotationRecord,
    gold: list[GoldRef],
    ranked: np.ndarray,
    cart: np.ndarray,
    table: AtomTable,
    empty: np.ndarray,
) -> np.ndarray:
    """Record ``i``'s measures against its primary gold; the first positions of its gold
    regions in ``ranked`` (``empty`` for an unanswerable record)."""
    if cols.answerable[i]:
        cols.n_gold[i] = len(gold)
        first = table.first_positions(gold, ranked)
        cols.first_ranks.append(list(first + 1))
        cols.gains.append([graded_gain(g.grade) for g in rec.gold])
        cols.cart_recall[i] = cart_mod.cartridge_recall(table, gold, cart)
        cols.abstain[i] = cart_mod.abstained(len(cart))
        rel = relevant_atoms(table, gold, [g.grade for g in rec.gold])
        for m, v in atom_measures(ranked, rel).items():
            cols.atom_level[m][i] = v
        cols.atom_qrels.append({table.atom_ids[a]: g for a, g in sorted(rel.items())})
    else:
        cols.first_ranks.append([])
        cols.gains.append([])
        cols.audited[i] = _audited(rec)
        (cols.false_recall if cols.audited[i] else cols.false_native)[i] = cart_mod.false_recall(
            len(cart)
        )
        cols.atom_qrels.append({})
        first = empty
    return first


def _score_judgments(
    cols: _Columns,
    i: int,
    rec: AnnotationRecord,
    gold: list[GoldRef],
    ranked: np.ndarray,
    cart: np.ndarray,
    table: AtomTable,
    uni: Universe,
    loc: tuple[str, int | None],
) -> None:
    """Record ``i``'s measures under each of its judgment sets, and its judged@k over the
    gold and every set's regions."""
    n = cols.n
    judged_regions = list(gold)  # the gold and every judgment set's regions
    for name, golds in sorted((rec.judgments or {}).items()):
        if name == PRIMARY:
            raise InputError(
                loc[0],
                loc[1],
                "judgments",
                f"{rec.query_id}: judgment set name {PRIMARY!r} is reserved for the primary gold",
                rule="JUDGMENTS",
            )
        a = cols.alt.get(name)
        if a is None:  # (not setdefault: its default would be built for every record)
            a = cols.alt[name] = {
                "ranks": [[] for _ in range(n)],
                "gains": [[] for _ in range(n)],
                "n_gold": np.zeros(n, np.int64),
                "cart": cols.nan(),
            }
        jg = _prepare_gold(golds, rec, uni, loc, f"judgments.{name}")
        if jg and rec.unanswerable:
            raise InputError(
                loc[0],
                loc[1],
                f"judgments.{name}",
                f"{rec.query_id}: an unanswerable record with {len(jg)} "
                f"region(s) under judgment set {name!r}",
                rule="JUDGMENT_ON_UNANSWERABLE",
            )
        judged_regions.extend(jg)
        if jg:  # answerable under this set = non-empty list
            a["n_gold"][i] = len(jg)
            a["ranks"][i] = list(table.first_positions(jg, ranked) + 1)
            a["gains"][i] = [graded_gain(g.grade) for g in golds]
            a["cart"][i] = cart_mod.cartridge_recall(table, jg, cart)
    if cols.answerable[i]:
        cols.judged[i] = judged_at_k(table, judged_regions, ranked)


def _measure_values(
    cols: _Columns, recs: list[AnnotationRecord]
) -> tuple[dict[str, np.ndarray], dict[str, dict[str, np.ndarray]]]:
    """The per-item values of every measure, and of the judgment sets' measures."""
    values = rank_measures(
        FirstHits.from_lists(cols.first_ranks, cols.n_gold, cols.gains), graded=True
    )
    values[JUDGED] = cols.judged
    values["false_recall_rate"] = cols.false_recall
    values["false_recall_native"] = cols.false_native
    values["temporal_correctness"] = (cols.n_future == 0).astype(np.float64)
    values["holder_correctness"] = (cols.n_foreign == 0).astype(np.float64)
    values["abstain_rate_answerable"] = cols.abstain
    values[SILENCE] = cart_mod.silence_values(
        cols.abstain, [r.modality for r in recs], ~cols.answerable & cols.audited
    )
    values["cartridge_recall"] = cols.cart_recall
    values.update(cols.layer)
    judgments = {}
    for name, a in sorted(cols.alt.items()):
        jv = rank_measures(FirstHits.from_lists(a["ranks"], a["n_gold"], a["gains"]), graded=True)
        jv["cartridge_recall"] = a["cart"]
        judgments[name] = jv
    return values, judgments


def score_items(
    records: Iterable[AnnotationRecord | Mapping],
    items: Iterable[SourceItem | Mapping],
    atoms: Iterable[AtomRow | Mapping],
    run_rows: Iterable[RunRow | Mapping],
    *,
    record_locs: Sequence[tuple[str, int | None]] | None = None,
    content: ContentTexts | None = None,
    no_content: str = "",
) -> ItemScores:
    """Score every record (see the module docstring for the join rules).

    ``records``/``items`` may be models or plain dicts; ``atoms``/``run_rows`` may be
    :class:`AtomRow`/:class:`RunRow` or dicts in the file format. ``record_locs`` gives
    (file, line) per record for error messages. ``content`` reads the texts of extents for
    the answer layer and the context cost (:mod:`membench.metrics.answer_layer`); without it
    those figures are NaN and ``ItemScores.content`` says why (``no_content``).
    """
    recs = _records(records)
    uni = index_items(_items(items))
    table = build_atom_table(
        (
            a if isinstance(a, AtomRow) else parse_atom(a, "<atoms>", i + 1)
            for i, a in enumerate(atoms)
        ),
        uni,
    )
    locs = (
        list(record_locs)
        if record_locs is not None
        else [("<records>", i + 1) for i in range(len(recs))]
    )
    runs = _runs_by_query(run_rows, _query_index(recs, locs), table)

    n = len(recs)
    cols = _Columns(n)
    empty = np.zeros(0, dtype=np.int64)
    sources = sorted(uni.source_index, key=uni.source_index.__getitem__)

    def place(a: int) -> tuple[str, str, dict]:
        return sources[table.source[a]], table.modality[a], table.extents[a]

    def meta_of(source_id: str) -> dict:
        return uni.items[source_id].meta or {}

    for i, rec in enumerate(recs):
        row = runs.get(rec.query_id)
        if row is not None:
            ranked, cart = _ranked_indices(row, table)
            cols.has_run[i] = True
            cols.latency[i] = row.latency_ms
            cols.abst[i] = abstention_score(row.confidence, row.scores)
        else:
            ranked, cart = empty, empty
        cols.n_hits[i], cols.cart_size[i] = len(ranked), len(cart)
        sc = check_scope(
            table,
            np.union1d(ranked, cart),
            uni.holder_index.get(rec.scope.holder, -1),
            to_us(rec.as_of),
        )
        cols.n_future[i], cols.n_foreign[i] = sc.n_future, sc.n_foreign

        gold = _prepare_gold(rec.gold, rec, uni, locs[i], "gold")
        if rec.unanswerable != (len(gold) == 0):
            raise InputError(
                locs[i][0],
                locs[i][1],
                "gold",
                f"{rec.query_id}: unanswerable={rec.unanswerable} but {len(gold)} gold region(s)",
                rule="GOLD_ANSWERABLE",
            )
        cols.answerable[i] = not rec.unanswerable
        first = _score_gold(cols, i, rec, gold, ranked, cart, table, empty)
        if content is not None:
            figs = item_figures(
                content,
                modality=rec.modality,
                answer=rec.answer,
                answer_format=rec.answer_format,
                answerable=bool(cols.answerable[i]),
                has_run=bool(cols.has_run[i]),
                gold=[(g.source_id, g.region) for g in rec.gold],
                first_positions=first,
                ranked=ranked,
                cartridge=cart,
                place=place,
                meta_of=meta_of,
                grounded=table.hits_any(gold, ranked[:ANSWER_AT]) if cols.answerable[i] else None,
            )
            for k, v in figs.items():
                cols.layer[k][i] = v
        _score_judgments(cols, i, rec, gold, ranked, cart, table, uni, locs[i])

    values, judgments = _measure_values(cols, recs)
    return ItemScores(
        query_id=[r.query_id for r in recs],
        modality=[r.modality for r in recs],
        source=[source_key(r.query_id) for r in recs],
        holder=[r.scope.holder for r in recs],
        as_of=[r.as_of.isoformat() for r in recs],
        derivation=[r.origin.derivation for r in recs],
        answerable=cols.answerable,
        audited=cols.audited,
        has_run=cols.has_run,
        n_gold=cols.n_gold,
        n_hits=cols.n_hits,
        cartridge_size=cols.cart_size,
        n_future=cols.n_future,
        n_foreign=cols.n_foreign,
        latency_ms=cols.latency,
        values={k: values[k] for k in (*MEAN_MEASURES, *COST_ARRAYS)},
        abstention_score=cols.abst,
        judgments=judgments,
        atom_level=cols.atom_level,
        atom_qrels=cols.atom_qrels,
        content=content_note(content, no_content),
    )
