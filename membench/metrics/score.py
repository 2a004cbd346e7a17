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

from ..core.errors import InputError
from ..core.jsonl import parse_model
from ..run.files import AtomRow, RunRow, parse_atom, parse_run_row, to_us
from ..contract.protocol import rank_order
from ..sets.judgments import PRIMARY
from ..contract.schema import AnnotationRecord, SourceItem
from ..contract.tells import audited as _audited
from . import cartridge as cart_mod
from .abstention import abstention_score
from .atom_level import ATOM_MEASURES, atom_measures, relevant_atoms
from .answer_layer import ANSWER_AT
from .answer_layer import KEYS as CONTENT_KEYS
from .answer_layer import ContentTexts, item_figures
from .answer_layer import note as content_note
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
    answerable: np.ndarray          # bool
    # bool: in the audited population (every answerable item, and an unanswerable one whose
    # origin.audited is true: membench.contract.tells.audited); False: a native unanswerable with
    # an upstream tell, counted by false_recall_native only (SPEC section 5)
    audited: np.ndarray
    has_run: np.ndarray             # bool
    n_gold: np.ndarray              # int
    n_hits: np.ndarray              # int, distinct ranked atoms
    cartridge_size: np.ndarray      # int, distinct cartridge atoms
    n_future: np.ndarray            # int, returned atoms observed after as_of
    n_foreign: np.ndarray           # int, returned atoms of another holder
    latency_ms: np.ndarray          # float, NaN without a run line
    values: dict[str, np.ndarray]   # measure -> per item, NaN outside its denominator
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
                "query_id": self.query_id[i], "modality": self.modality[i],
                "source": self.source[i], "holder": self.holder[i], "as_of": self.as_of[i],
                "derivation": self.derivation[i], "answerable": bool(self.answerable[i]),
                "audited": bool(self.audited[i]), "has_run": bool(self.has_run[i]),
                "n_gold": int(self.n_gold[i]),
                "n_hits": int(self.n_hits[i]), "cartridge_size": int(self.cartridge_size[i]),
                "n_future": int(self.n_future[i]), "n_foreign": int(self.n_foreign[i]),
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
        out.append(r if isinstance(r, AnnotationRecord) else
                   parse_model(AnnotationRecord, dict(r), "<records>", i + 1))
    return out


def _items(items: Iterable[SourceItem | Mapping]) -> list[SourceItem]:
    return [it if isinstance(it, SourceItem)
            else parse_model(SourceItem, dict(it), "<items>", i + 1) for i, it in enumerate(items)]


def _prepare_gold(golds, rec: AnnotationRecord, uni: Universe, where: tuple[str, int | None],
                  field_name: str) -> list[GoldRef]:
    out = []
    for j, g in enumerate(golds):
        it = uni.items.get(g.source_id)
        if it is None:
            raise InputError(where[0], where[1], f"{field_name}[{j}].source_id",
                             f"{rec.query_id}: gold source {g.source_id!r} is not a source item",
                             rule="GOLD_SOURCE")
        if it.modality != rec.modality:
            raise InputError(where[0], where[1], f"{field_name}[{j}].source_id",
                             f"{rec.query_id}: gold source {g.source_id} is {it.modality!r}, the "
                             f"record is {rec.modality!r}", rule="GOLD_SOURCE")
        out.append(GoldRef(uni.source_index[g.source_id], rec.modality, g.region))
    return out


def _check_atoms(row: RunRow, table: AtomTable) -> None:
    idx = table.index
    if not set(row.hit_ids).union(row.cartridge).difference(idx):   # dict lookups, in C
        return
    for name, ids in (("hits", row.hit_ids), ("cartridge", row.cartridge)):
        for a in ids:
            if a not in idx:
                raise InputError(row.file, row.line, name,
                                 f"{row.query_id}: atom {a!r} is not in atoms.jsonl",
                                 rule="RUN_ATOM")


def _ranked_indices(row: RunRow, table: AtomTable) -> tuple[np.ndarray, np.ndarray]:
    """Ranked, de-duplicated hit atoms and the distinct cartridge atoms, as table indices."""
    get = table.index.__getitem__
    ranked_ids = rank_order(row.hit_ids, row.scores)
    ranked = np.array(list(map(get, ranked_ids)), dtype=np.int64)
    cart = np.unique(np.array(list(map(get, row.cartridge)), dtype=np.int64))
    return ranked, cart


def score_items(records: Iterable[AnnotationRecord | Mapping],
                items: Iterable[SourceItem | Mapping],
                atoms: Iterable[AtomRow | Mapping],
                run_rows: Iterable[RunRow | Mapping],
                *, record_locs: Sequence[tuple[str, int | None]] | None = None,
                content: ContentTexts | None = None, no_content: str = "") -> ItemScores:
    """Score every record (see the module docstring for the join rules).

    ``records``/``items`` may be models or plain dicts; ``atoms``/``run_rows`` may be
    :class:`AtomRow`/:class:`RunRow` or dicts in the file format. ``record_locs`` gives
    (file, line) per record for error messages. ``content`` reads the texts of extents for
    the answer layer and the context cost (:mod:`membench.metrics.answer_layer`); without it
    those figures are NaN and ``ItemScores.content`` says why (``no_content``).
    """
    recs = _records(records)
    uni = index_items(_items(items))
    table = build_atom_table((a if isinstance(a, AtomRow) else parse_atom(a, "<atoms>", i + 1)
                              for i, a in enumerate(atoms)), uni)
    locs = list(record_locs) if record_locs is not None else [("<records>", i + 1)
                                                              for i in range(len(recs))]
    by_qid: dict[str, int] = {}
    for i, r in enumerate(recs):
        if r.query_id in by_qid:
            raise InputError(locs[i][0], locs[i][1], "query_id",
                             f"duplicate query_id {r.query_id!r}", rule="DUPLICATE_QUERY_ID")
        by_qid[r.query_id] = i
    runs: dict[str, RunRow] = {}
    for j, row in enumerate(run_rows):
        if not isinstance(row, RunRow):
            row = parse_run_row(row, "<run>", j + 1)
        if row.query_id not in by_qid:
            raise InputError(row.file, row.line, "query_id",
                             f"{row.query_id!r} is not an annotated item of the evaluated set",
                             rule="RUN_QUERY")
        if row.query_id in runs:
            raise InputError(row.file, row.line, "query_id",
                             f"{row.query_id!r} has a second run line (first at line "
                             f"{runs[row.query_id].line})", rule="DUPLICATE_QUERY_ID")
        _check_atoms(row, table)
        runs[row.query_id] = row

    n = len(recs)
    answerable = np.zeros(n, dtype=bool)
    audited = np.ones(n, dtype=bool)
    has_run = np.zeros(n, dtype=bool)
    n_gold = np.zeros(n, dtype=np.int64)
    n_hits = np.zeros(n, dtype=np.int64)
    cart_size = np.zeros(n, dtype=np.int64)
    n_future = np.zeros(n, dtype=np.int64)
    n_foreign = np.zeros(n, dtype=np.int64)
    latency = np.full(n, np.nan)
    abst = np.full(n, -np.inf)
    nan = lambda: np.full(n, np.nan)
    false_recall, false_native, abstain, cart_recall = nan(), nan(), nan(), nan()
    judged = nan()
    atom_level = {m: nan() for m in ATOM_MEASURES}
    atom_qrels: list[dict[str, int]] = []
    first_ranks: list[list[int]] = []
    gains: list[list[float]] = []
    # name -> {"ranks": [], "gains": [], "n_gold": [], "cart": array}
    alt: dict[str, dict[str, Any]] = {}
    empty = np.zeros(0, dtype=np.int64)
    layer = {k: nan() for k in CONTENT_KEYS}
    sources = sorted(uni.source_index, key=uni.source_index.__getitem__)

    def place(a: int) -> tuple[str, str, dict]:
        return sources[table.source[a]], table.modality[a], table.extents[a]

    def meta_of(source_id: str) -> dict:
        return uni.items[source_id].meta or {}

    for i, rec in enumerate(recs):
        row = runs.get(rec.query_id)
        if row is not None:
            ranked, cart = _ranked_indices(row, table)
            has_run[i] = True
            latency[i] = row.latency_ms
            abst[i] = abstention_score(row.confidence, row.scores)
        else:
            ranked, cart = empty, empty
        n_hits[i], cart_size[i] = len(ranked), len(cart)
        sc = check_scope(table, np.union1d(ranked, cart),
                         uni.holder_index.get(rec.scope.holder, -1), to_us(rec.as_of))
        n_future[i], n_foreign[i] = sc.n_future, sc.n_foreign

        gold = _prepare_gold(rec.gold, rec, uni, locs[i], "gold")
        if rec.unanswerable != (len(gold) == 0):
            raise InputError(locs[i][0], locs[i][1], "gold",
                             f"{rec.query_id}: unanswerable={rec.unanswerable} but {len(gold)} "
                             "gold region(s)", rule="GOLD_ANSWERABLE")
        answerable[i] = not rec.unanswerable
        if answerable[i]:
            n_gold[i] = len(gold)
            first = table.first_positions(gold, ranked)
            first_ranks.append(list(first + 1))
            gains.append([graded_gain(g.grade) for g in rec.gold])
            cart_recall[i] = cart_mod.cartridge_recall(table, gold, cart)
            abstain[i] = cart_mod.abstained(len(cart))
            rel = relevant_atoms(table, gold, [g.grade for g in rec.gold])
            for m, v in atom_measures(ranked, rel).items():
                atom_level[m][i] = v
            atom_qrels.append({table.atom_ids[a]: g for a, g in sorted(rel.items())})
        else:
            first_ranks.append([])
            gains.append([])
            audited[i] = _audited(rec)
            (false_recall if audited[i] else false_native)[i] = \
                cart_mod.false_recall(len(cart))
            atom_qrels.append({})
            first = empty
        if content is not None:
            figs = item_figures(
                content, modality=rec.modality, answer=rec.answer,
                answer_format=rec.answer_format, answerable=bool(answerable[i]),
                has_run=bool(has_run[i]), gold=[(g.source_id, g.region) for g in rec.gold],
                first_positions=first, ranked=ranked, cartridge=cart, place=place,
                meta_of=meta_of,
                grounded=table.hits_any(gold, ranked[:ANSWER_AT]) if answerable[i] else None)
            for k, v in figs.items():
                layer[k][i] = v

        judged_regions = list(gold)     # the gold and every judgment set's regions
        for name, golds in sorted((rec.judgments or {}).items()):
            if name == PRIMARY:
                raise InputError(locs[i][0], locs[i][1], "judgments",
                                 f"{rec.query_id}: judgment set name {PRIMARY!r} is reserved for "
                                 "the primary gold", rule="JUDGMENTS")
            a = alt.get(name)
            if a is None:       # (not setdefault: its default would be built for every record)
                a = alt[name] = {"ranks": [[] for _ in range(n)],
                                 "gains": [[] for _ in range(n)],
                                 "n_gold": np.zeros(n, np.int64), "cart": nan()}
            jg = _prepare_gold(golds, rec, uni, locs[i], f"judgments.{name}")
            if jg and rec.unanswerable:
                raise InputError(locs[i][0], locs[i][1], f"judgments.{name}",
                                 f"{rec.query_id}: an unanswerable record with {len(jg)} "
                                 f"region(s) under judgment set {name!r}",
                                 rule="JUDGMENT_ON_UNANSWERABLE")
            judged_regions.extend(jg)
            if jg:      # answerable under this set = non-empty list
                a["n_gold"][i] = len(jg)
                a["ranks"][i] = list(table.first_positions(jg, ranked) + 1)
                a["gains"][i] = [graded_gain(g.grade) for g in golds]
                a["cart"][i] = cart_mod.cartridge_recall(table, jg, cart)
        if answerable[i]:
            judged[i] = judged_at_k(table, judged_regions, ranked)

    values = rank_measures(FirstHits.from_lists(first_ranks, n_gold, gains), graded=True)
    values[JUDGED] = judged
    values["false_recall_rate"] = false_recall
    values["false_recall_native"] = false_native
    values["temporal_correctness"] = (n_future == 0).astype(np.float64)
    values["holder_correctness"] = (n_foreign == 0).astype(np.float64)
    values["abstain_rate_answerable"] = abstain
    values[SILENCE] = cart_mod.silence_values(abstain, [r.modality for r in recs],
                                     ~answerable & audited)
    values["cartridge_recall"] = cart_recall
    values.update(layer)
    judgments = {}
    for name, a in sorted(alt.items()):
        jv = rank_measures(FirstHits.from_lists(a["ranks"], a["n_gold"], a["gains"]),
                           graded=True)
        jv["cartridge_recall"] = a["cart"]
        judgments[name] = jv

    return ItemScores(
        query_id=[r.query_id for r in recs], modality=[r.modality for r in recs],
        source=[source_key(r.query_id) for r in recs], holder=[r.scope.holder for r in recs],
        as_of=[r.as_of.isoformat() for r in recs],
        derivation=[r.origin.derivation for r in recs], answerable=answerable, audited=audited,
        has_run=has_run,
        n_gold=n_gold, n_hits=n_hits, cartridge_size=cart_size, n_future=n_future,
        n_foreign=n_foreign, latency_ms=latency, values={k: values[k] for k in (*MEAN_MEASURES, *COST_ARRAYS)},
        abstention_score=abst,
        judgments=judgments, atom_level=atom_level, atom_qrels=atom_qrels,
        content=content_note(content, no_content))
