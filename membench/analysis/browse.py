"""Step through a run's failures, one case at a time, with the source region shown as it is.

Three kinds of case (SPEC sections 7 and 8):

* ``"false_recall"``: an unanswerable item whose cartridge is not empty, marked with its kind
  (``origin.kind``) and whether it is audited (``origin.audited``); it shows the committed
  atoms and, for a derived item, the gold of the query it derives from (read from the record's
  ``origin.distractor``, since a derived query replaces its original);
* ``"miss"``: an answerable item none of whose gold regions is hit by the top
  :data:`MISS_DEPTH` atoms (recall@10 is 0); it shows the gold and what ranked instead;
* ``"scope_leak"``: any item that returned, at any depth or in its cartridge, an atom of
  another holder or one observed after its ``as_of``; it shows those atoms and where the
  highest sits.

Cases come from the run's own per-item scores (:meth:`membench.metrics.rundir.RunDir.scores`):
nothing is recomputed, so the counts agree with ``metrics.json``; an item with no run line is a
miss when answerable and never a false recall. Cases are ordered by modality
(:data:`membench.modalities.MODALITIES`), then query id. Reads the run directory, the sets and
the corpus mirror (to show regions); writes nothing. Start at :func:`cases`; then
:func:`counts_frame`, :func:`render_case_html`, :func:`static_cases_html`,
:func:`static_browser_html` (page 04's kernel-free stepper), :class:`Browser` (ipywidgets).

Why one file: a case and its HTML are read together: what a case holds is chosen for what
page 04's stepper and the notebook's browser show, and both take their cases from the same
per-item scores so that their counts agree with metrics.json.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from .. import modalities
from ..contract.protocol import rank_order
from ..contract.schema import AnnotationRecord, Gold
from ..core.bounds import bound
from ..core.errors import MembenchError
from ..core.links import esc as e
from ..core.paths import corpus_root as _corpus_root
from ..metrics.rundir import RunDir
from ..modalities import MODALITIES, RenderContext, RenderUnavailable, region_hit
from ..modalities.base import missing_html, short_json
from ..run.files import AtomRow, RunRow
from .frames import TELL_NATIVE

KINDS: dict[str, str] = {
    "false_recall": "false recalls (unanswerable, cartridge not empty; each marked audited or "
    "a native with an upstream tell)",
    "miss": "answerable misses (no gold region in the top 10)",
    "scope_leak": "scope leaks (returned atoms of another holder or observed after as_of)",
}
MISS_DEPTH = 10
TEXT_CHARS = 1500  # atom text shown per atom
#: the cartridge's context cost a case shows (per-item arrays of ``ItemScores.values``)
COST_SHOWN = ("context_tokens", "context_area", "context_seconds")
REGION_RENDERS_TOP = 3  # misses with an empty cartridge: render the regions of this many top hits
LEAKS_SHOWN = 10  # out-of-scope atoms listed per scope-leak case (all are counted)


# --------------------------------------------------------------------------- data


@dataclass
class CaseAtom:
    """One atom of a case as the system returned it, with what the harness knows about it."""

    atom_id: str
    rank: int | None  # 1-based rank in the ranked hit list; None if not ranked
    score: float | None  # its score in the hits; None if not ranked
    source_id: str
    modality: str
    extent: dict[str, Any]
    text: str  # what the system indexed ("" when it kept none)
    holder: str
    observed_at: str
    in_cartridge: bool
    foreign_holder: bool  # belongs to another holder than the query's scope.holder
    after_as_of: bool  # observed after the query's as_of
    hits_gold: bool = False  # overlaps a gold region of the item
    hits_original: bool = False  # overlaps a gold region of the item it derives from
    known: bool = True  # present in atoms.jsonl


@dataclass
class Case:
    kind: str  # "false_recall" | "miss" | "scope_leak"
    query_id: str
    modality: str
    question: str
    answer: Any
    scope: dict[str, Any]  # {holder, session, scenario}
    as_of: str
    derivation: str  # origin.derivation, or "native"
    derived_from: str | None
    split: str
    unanswerable: bool
    cartridge: list[CaseAtom]  # in the system's cartridge order
    top_hits: list[CaseAtom]  # the top MISS_DEPTH ranked hits
    gold: list[dict[str, Any]]  # [{source_id, region[, grade]}]; empty for unanswerable items
    original: dict[str, Any] | None = None  # the query it derives from: query_id, holder, gold
    distractor: list[Any] | None = None  # native unanswerables: upstream evidence ids
    notes: str | None = None
    has_run: bool = True  # the run has a line for this query
    n_hits: int = 0  # distinct ranked atoms
    sources: dict[str, dict[str, Any]] = field(default_factory=dict)  # items.jsonl rows
    leaks: list[CaseAtom] = field(default_factory=list)  # first LEAKS_SHOWN out-of-scope atoms
    n_foreign: int = 0  # distinct returned atoms of another holder
    n_future: int = 0  # distinct returned atoms observed after as_of
    n_leaks: int = 0  # distinct returned atoms out of scope (either reason)
    audited: bool = True  # origin.audited of an unanswerable item (False: a native with
    #                             an upstream tell, counted in false_recall_native only)
    # what the cartridge hands over (membench.metrics.answer_layer: context_tokens, and
    # context_area / context_seconds where the modality has them); {} when not read
    cost: dict[str, float] = field(default_factory=dict)

    @property
    def original_gold(self) -> list[dict[str, Any]]:
        return list(self.original["gold"]) if self.original else []


@dataclass
class RunCases:
    """Everything :func:`cases` needs, loaded once: both kinds of case and the denominators."""

    run_dir: Path
    sets_dir: Path
    meta: dict[str, Any]
    false_recalls: list[Case]
    misses: list[Case]
    denominators: list[dict[str, Any]]  # one row per evaluated item: modality, derivation, ...
    scope_leaks: list[Case] = field(default_factory=list)

    def of(self, kind: str, modality: str | None = None) -> list[Case]:
        if kind not in KINDS:
            raise MembenchError(f"unknown case kind {kind!r}; choose from {', '.join(KINDS)}")
        out = {
            "false_recall": self.false_recalls,
            "miss": self.misses,
            "scope_leak": self.scope_leaks,
        }[kind]
        if modality and modality != "all":
            out = [c for c in out if c.modality == modality]
        return out


def _ts(v: Any) -> datetime:
    return v if isinstance(v, datetime) else datetime.fromisoformat(str(v))


def _gold_rows(golds) -> list[dict[str, Any]]:
    out = []
    for g in golds:
        row = {"source_id": g.source_id, "region": dict(g.region)}
        if g.grade is not None:
            row["grade"] = g.grade
        out.append(row)
    return out


def _hits_any(modality: str, atom: AtomRow | CaseAtom, golds: Sequence[dict]) -> bool:
    return atom.modality == modality and any(
        g["source_id"] == atom.source_id and region_hit(modality, atom.extent, g["region"])
        for g in golds
    )


def load_run_cases(
    run_dir: str | os.PathLike | RunDir, sets_dir: str | os.PathLike | None = None
) -> RunCases:
    """Open a run directory (:class:`~membench.metrics.rundir.RunDir`) and build both kinds of
    case (cached per files' modification times, so a notebook's several calls read the run
    once)."""
    rd = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir, sets_dir)
    files = [
        rd.path / "meta.json",
        rd.path / "run.jsonl",
        rd.path / "atoms.jsonl",
        rd.sets_dir / "items.jsonl",
        *(rd.sets_dir / f"{m}.jsonl" for m in MODALITIES),
    ]
    key = (
        str(rd.path.resolve()),
        str(rd.sets_dir.resolve()),
        tuple(f.stat().st_mtime_ns if f.exists() else None for f in files),
    )
    hit = _CACHE.get(key)
    if hit is None:
        hit = _load(rd)
        _CACHE.clear()  # keep one run: a browser session looks at one run at a time
        _CACHE[key] = hit
    return hit


_CACHE: dict[tuple, RunCases] = {}


def _load(rd: RunDir) -> RunCases:
    """Every kind of case, selected from the run's per-item scores (:meth:`RunDir.scores`):
    a false recall is an unanswerable item with ``false_recall_rate`` 1 (audited) or
    ``false_recall_native`` 1 (a native with an upstream tell), a miss an answerable item with
    ``recall@10`` 0, a scope leak any item with ``holder_correctness`` or
    ``temporal_correctness`` 0."""
    scores = rd.scores()
    recall10 = scores.values["recall@10"]
    false_recall = np.where(
        scores.audited, scores.values["false_recall_rate"], scores.values["false_recall_native"]
    )
    leaked = (scores.values["holder_correctness"] == 0.0) | (
        scores.values["temporal_correctness"] == 0.0
    )
    raw_items = rd.item_rows()
    atoms = {a.atom_id: a for a in rd.atoms}
    rows = rd.row_by_query

    index = {q: i for i, q in enumerate(scores.query_id)}
    false_recalls: list[Case] = []
    misses: list[Case] = []
    scope_leaks: list[Case] = []
    denominators: list[dict[str, Any]] = []
    for i, r in enumerate(rd.records):
        assert scores.query_id[i] == r.query_id
        failed = bool(false_recall[i] == 1.0) if r.unanswerable else bool(recall10[i] == 0.0)
        leak = bool(leaked[i])
        audited = bool(scores.audited[i])
        derivation = (r.origin.derivation or "native") if audited else TELL_NATIVE
        denominators.append(
            {
                "query_id": r.query_id,
                "modality": r.modality,
                "derivation": derivation,
                "answerable": not r.unanswerable,
                "audited": audited,
                "failed": failed,
                "leak": leak,
                "abstained": bool(scores.cartridge_size[i] == 0),
            }
        )
        if failed:
            case = _make_case(r, rows.get(r.query_id), atoms, raw_items, audited=audited)
            (false_recalls if r.unanswerable else misses).append(case)
        if leak:
            scope_leaks.append(
                _make_case(
                    r, rows.get(r.query_id), atoms, raw_items, kind="scope_leak", audited=audited
                )
            )

    for c in (*false_recalls, *misses, *scope_leaks):
        i = index[c.query_id]
        c.cost = {
            k: float(scores.values[k][i])
            for k in COST_SHOWN
            if k in scores.values and not np.isnan(scores.values[k][i])
        }
    order = {m: i for i, m in enumerate(MODALITIES)}
    key = lambda c: (order.get(c.modality, len(order)), c.query_id)
    return RunCases(
        rd.path,
        rd.sets_dir,
        rd.meta,
        sorted(false_recalls, key=key),
        sorted(misses, key=key),
        denominators,
        sorted(scope_leaks, key=key),
    )


def _make_case(
    r: AnnotationRecord,
    row: RunRow | None,
    atoms: dict[str, AtomRow],
    raw_items: dict[str, dict],
    kind: str | None = None,
    audited: bool = True,
) -> Case:
    # Long: one case, field after field, in the order render_case_html reads them
    ranked = rank_order(row.hit_ids, row.scores) if row is not None else []
    cart_ids = list(dict.fromkeys(row.cartridge)) if row is not None else []
    gold = _gold_rows(r.gold)
    scores: dict[str, float] = {}
    if row is not None:
        for a, s in row.hits:
            scores.setdefault(a, float(s))  # a duplicate keeps its first score
    rank = {a: i + 1 for i, a in enumerate(ranked)}
    original = None
    if r.origin.derived_from:
        # the original is withdrawn from the sets; its gold is the derived record's distractor
        ogold = [
            g
            for g in (r.origin.distractor or [])
            if isinstance(g, dict)
            and isinstance(g.get("source_id"), str)
            and isinstance(g.get("region"), dict)
        ]
        holders = sorted(
            {raw_items[g["source_id"]]["holder"] for g in ogold if g["source_id"] in raw_items}
        )
        original = {
            "query_id": r.origin.derived_from,
            "found": bool(ogold),
            "question": r.question,
            "holder": ", ".join(holders) or None,
            "gold": _gold_rows([Gold(**g) for g in ogold]),
        }
    as_of = r.as_of
    cart_set = set(cart_ids)

    def case_atom(a: str) -> CaseAtom:
        obj = atoms.get(a)
        if obj is None:
            return CaseAtom(
                a,
                rank.get(a),
                scores.get(a),
                "?",
                r.modality,
                {},
                "",
                "?",
                "?",
                a in cart_set,
                False,
                False,
                known=False,
            )
        it = raw_items.get(obj.source_id)
        holder = it["holder"] if it else obj.holder  # items.jsonl is the truth
        observed = _ts(it["observed_at"]) if it else obj.observed_at
        ca = CaseAtom(
            a,
            rank.get(a),
            scores.get(a),
            obj.source_id,
            obj.modality,
            dict(obj.extent),
            obj.text or "",
            holder,
            observed.isoformat(),
            a in cart_set,
            holder != r.scope.holder,
            observed > as_of,
        )
        ca.hits_gold = _hits_any(r.modality, obj, gold)
        ca.hits_original = bool(original) and _hits_any(r.modality, obj, original["gold"])
        return ca

    cartridge = [case_atom(a) for a in cart_ids]
    top = [case_atom(a) for a in ranked[:MISS_DEPTH]]
    leaks: list[CaseAtom] = []
    n_foreign = n_future = n_leaks = 0
    if kind == "scope_leak":
        # every distinct returned atom, ranked ones first in rank order, then cartridge-only
        for a in list(dict.fromkeys([*ranked, *cart_ids])):
            ca = case_atom(a)
            if ca.foreign_holder or ca.after_as_of:
                n_leaks += 1
                n_foreign += ca.foreign_holder
                n_future += ca.after_as_of
                if len(leaks) < LEAKS_SHOWN:
                    leaks.append(ca)
    srcs = {a.source_id for a in cartridge + top + leaks if a.known}
    srcs |= {g["source_id"] for g in gold}
    if original:
        srcs |= {g["source_id"] for g in original["gold"]}
    sources = {s: raw_items[s] for s in sorted(srcs) if s in raw_items}  # shared, read-only
    return Case(
        kind=kind or ("false_recall" if r.unanswerable else "miss"),
        query_id=r.query_id,
        modality=r.modality,
        question=r.question,
        answer=r.answer,
        scope=r.scope.model_dump(),
        as_of=as_of.isoformat(),
        derivation=r.origin.derivation or "native",
        derived_from=r.origin.derived_from,
        split=r.split,
        unanswerable=r.unanswerable,
        cartridge=cartridge,
        top_hits=top,
        gold=gold,
        original=original,
        distractor=r.origin.distractor,
        notes=r.origin.notes,
        has_run=row is not None,
        n_hits=len(ranked),
        sources=sources,
        leaks=leaks,
        n_foreign=n_foreign,
        n_future=n_future,
        n_leaks=n_leaks,
        audited=audited,
    )


def cases(
    run_dir: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    kind: str = "false_recall",
    modality: str | None = None,
) -> list[Case]:
    """The run's failures of ``kind`` (``"false_recall"``, ``"miss"`` or ``"scope_leak"``),
    ordered by modality then query id; ``modality`` keeps one modality."""
    return load_run_cases(run_dir, sets_dir).of(kind, modality)


def counts_frame(
    run_dir: str | os.PathLike | RunCases,
    sets_dir: str | os.PathLike | None = None,
    by: str = "modality",
):
    """Per ``by`` (``"modality"`` or ``"derivation"``: the natives with an upstream tell are
    their own derivation, :data:`membench.analysis.frames.TELL_NATIVE`) and overall: false
    recalls out of the audited unanswerable items, beside them those of the natives with an
    upstream tell (never pooled) and the abstentions out of the answerable items (a
    false-recall rate bought by abstaining everywhere is no success), misses out of the
    answerable items and scope leaks out of all items, with rates."""
    import pandas as pd

    data = run_dir if isinstance(run_dir, RunCases) else load_run_cases(run_dir, sets_dir)
    if by not in ("modality", "derivation"):
        raise MembenchError("by must be 'modality' or 'derivation'")
    df = pd.DataFrame(
        data.denominators,
        columns=[
            "query_id",
            "modality",
            "derivation",
            "answerable",
            "audited",
            "failed",
            "leak",
            "abstained",
        ],
    )
    keys = (
        [m for m in MODALITIES if m in set(df["modality"])]
        if by == "modality"
        else sorted(set(df["derivation"]))
    )
    rows = []
    for k, part in [*((k, df[df[by] == k]) for k in keys), ("all", df)]:
        un, an = part[~part["answerable"]], part[part["answerable"]]
        un, tell = un[un["audited"]], un[~un["audited"]]
        fr, mi = int(un["failed"].sum()), int(an["failed"].sum())
        frn = int(tell["failed"].sum())
        ab = int(an["abstained"].sum())
        sl = int(part["leak"].sum())
        rows.append(
            {
                by: k,
                "items": len(part),
                "false recalls, audited": f"{fr} / {len(un)}",
                "false-recall rate, audited": fr / len(un) if len(un) else float("nan"),
                "false recalls, natives with a tell": f"{frn} / {len(tell)}",
                "false-recall rate, natives with a tell": frn / len(tell)
                if len(tell)
                else float("nan"),
                "abstentions on answerable": f"{ab} / {len(an)}",
                "abstention rate (answerable)": ab / len(an) if len(an) else float("nan"),
                "misses (no gold in top 10)": f"{mi} / {len(an)}",
                "miss rate": mi / len(an) if len(an) else float("nan"),
                "scope leaks (any returned atom out of scope)": f"{sl} / {len(part)}",
                "scope-leak rate": sl / len(part) if len(part) else float("nan"),
            }
        )
    return pd.DataFrame(rows).set_index(by)


# --------------------------------------------------------------------------- HTML

_CSS = """
<style>
.mb-case{border:1px solid #bbb;border-radius:6px;padding:10px 14px;margin:12px 0;
  font-family:system-ui,sans-serif;font-size:13px;line-height:1.35}
.mb-case h3{margin:0 0 6px 0;font-size:15px}
.mb-case h4{margin:12px 0 4px 0;font-size:14px}
.mb-case table.mb-kv td{padding:1px 8px 1px 0;vertical-align:top;text-align:left}
.mb-case table.mb-kv td:first-child{color:#555;white-space:nowrap}
.mb-panel{border-left:4px solid #d33;padding:4px 10px;margin:8px 0;background:#fcfcfc}
.mb-panel.mb-gold{border-left-color:#0a0}
.mb-panel.mb-orig{border-left-color:#05f}
.mb-flag{display:inline-block;padding:0 5px;margin-right:4px;border-radius:3px;
  background:#d33;color:#fff;font-size:11px}
.mb-flag.mb-ok{background:#0a0}.mb-flag.mb-orig{background:#05f}
.mb-text{white-space:pre-wrap;background:#f4f4f4;padding:4px 6px;max-height:16em;
  overflow:auto;font-size:12px;margin:4px 0}
.mb-code{font-family:monospace;font-size:12px;background:#f7f7f7;padding:4px;
  white-space:pre;overflow:auto;max-height:30em;margin:4px 0}
.mb-code .mb-ln{color:#888;user-select:none}
.mb-code .mb-hl{background:#dfd;display:inline-block;min-width:100%}
.mb-code .mb-ctx{color:#999}
.mb-cues td,.mb-turns td{padding:1px 8px 1px 0;vertical-align:top;text-align:left}
tr.mb-hl{background:#dfd}
.mb-missing{color:#a00;font-style:italic}
.mb-case img{border:1px solid #ccc;max-width:100%}
.mb-step-bar{position:sticky;top:0;z-index:2;background:#fff;padding:6px 0;
  border-bottom:1px solid #ddd;font:13px system-ui,sans-serif}
.mb-step-button{margin-right:6px;padding:2px 10px;font:13px system-ui,sans-serif}
.mb-step-button.mb-on{font-weight:700;background:#dde6f5}
.mb-step-label{margin-left:6px}
.mb-hits td,.mb-hits th{padding:1px 6px;text-align:left;vertical-align:top;font-size:12px}
.mb-case{box-sizing:border-box;max-width:100%}
.mb-hits td{overflow-wrap:anywhere}
</style>
"""


def _kv(rows: Iterable[tuple[str, Any]]) -> str:
    out = ['<table class="mb-kv">']
    for k, v in rows:
        if v is None or v == "":
            continue
        out.append(f"<tr><td>{e(str(k))}</td><td>{e(str(v))}</td></tr>")
    out.append("</table>")
    return "".join(out)


def _same_source(regions: Sequence[dict], source_id: str) -> list[dict]:
    return [g["region"] for g in regions if g["source_id"] == source_id]


def render_region_html(
    modality: str,
    item: dict | None,
    extent: dict,
    corpus_root: Path | None,
    *,
    kind: str = "atom",
    gold: Sequence[dict] = (),
    original_gold: Sequence[dict] = (),
    others: Sequence[dict] = (),
    link_hosts: frozenset[str] | None = None,
) -> str:
    """The source region ``extent`` of ``item`` (an items.jsonl row) as HTML, by the modality's
    renderer (:meth:`membench.modalities.Modality.render_html`). ``kind`` is ``"atom"`` (an
    atom's extent, drawn red), ``"gold"`` or ``"original"`` (a gold region); ``gold`` /
    ``original_gold`` regions of the same item are marked too (green / blue). ``others`` are
    more atom extents of the same item to outline (screenshots). ``link_hosts``: the hosts a
    URL from the data may be a live link to (None: every URL is text; :mod:`membench.core.links`)."""
    if item is None:
        return missing_html("source item not in items.jsonl")
    sid = item["source_id"]
    if modality not in modalities.REGISTRY:
        return missing_html(f"unknown modality {modality!r}")
    ctx = RenderContext(
        corpus_root,
        kind,
        _same_source(gold, sid),
        _same_source(original_gold, sid),
        tuple(others),
        link_hosts,
    )
    try:
        return modalities.get(modality).render_html(item, extent, ctx)
    except RenderUnavailable as ex:
        return missing_html(f"cannot show {sid}: {ex}")
    except Exception as ex:  # noqa: BLE001  (a broken file must not stop the browser)
        return missing_html(f"cannot show {sid}: {type(ex).__name__}: {ex}")


def _flags(a: CaseAtom, case: Case) -> str:
    out = []
    if not a.known:
        out.append('<span class="mb-flag">NOT IN atoms.jsonl</span>')
    if a.foreign_holder:
        out.append(f'<span class="mb-flag">other holder: {e(a.holder)}</span>')
    if a.after_as_of:
        out.append(f'<span class="mb-flag">observed after as_of: {e(a.observed_at)}</span>')
    if a.hits_gold:
        out.append('<span class="mb-flag mb-ok">hits gold</span>')
    if a.hits_original:
        out.append(
            f'<span class="mb-flag mb-orig">hits the gold of {e(case.derived_from or "")}</span>'
        )
    return "".join(out)


def _atom_text(a: CaseAtom) -> str:
    if not a.text:
        return '<div class="mb-text"><i>(the system kept no text for this atom)</i></div>'
    t = (
        a.text
        if len(a.text) <= TEXT_CHARS
        else (a.text[:TEXT_CHARS] + f"… ({len(a.text) - TEXT_CHARS} more characters)")
    )
    return f'<div class="mb-text">{e(t)}</div>'


def _atom_panel(
    a: CaseAtom,
    n: int,
    case: Case,
    corpus_root: Path | None,
    render: bool,
    others: Sequence[CaseAtom] = (),
    link_hosts: frozenset[str] | None = None,
) -> str:
    score = "—" if a.score is None else f"{a.score:.4g}"
    rank = "not ranked" if a.rank is None else f"rank {a.rank}"
    head = (
        f"<div><b>#{n} {e(a.atom_id)}</b> · {e(rank)} · score {e(score)}"
        f"{' · in cartridge' if a.in_cartridge else ''} {_flags(a, case)}</div>"
        + _kv(
            [
                ("source", a.source_id),
                ("extent", short_json(a.extent)),
                ("holder", a.holder),
                ("observed_at", a.observed_at),
            ]
        )
    )
    body = _atom_text(a)
    if render and a.known:
        # other atoms of the same item (a renderer that can outline them does, e.g. boxes)
        oth = [o.extent for o in others if o.source_id == a.source_id and o.atom_id != a.atom_id]
        body += render_region_html(
            a.modality,
            case.sources.get(a.source_id),
            a.extent,
            corpus_root,
            kind="atom",
            gold=case.gold,
            original_gold=case.original_gold,
            others=oth,
            link_hosts=link_hosts,
        )
    return f'<div class="mb-panel" data-atom-id="{e(a.atom_id)}">{head}{body}</div>'


def _gold_panels(
    golds: Sequence[dict],
    case: Case,
    corpus_root: Path | None,
    cls: str,
    kind: str,
    covered: Sequence[CaseAtom],
    link_hosts: frozenset[str] | None = None,
) -> str:
    out = []
    for j, g in enumerate(golds):
        src, reg = g["source_id"], g["region"]
        hitters = [
            a
            for a in covered
            if a.known and a.source_id == src and region_hit(case.modality, a.extent, reg)
        ]
        head = (
            f"<div><b>{'gold' if kind == 'gold' else 'original gold'} {j + 1}</b> · "
            f"{e(src)} · region {e(short_json(reg))}"
            f"{' · grade ' + e(str(g['grade'])) if g.get('grade') is not None else ''}</div>"
        )
        if hitters:
            ids = ", ".join(a.atom_id for a in hitters)
            out.append(
                f'<div class="mb-panel {cls}">{head}<div>overlapped by returned atom(s) '
                f"{e(ids)}: shown above</div></div>"
            )
            continue
        body = render_region_html(
            case.modality,
            case.sources.get(src),
            reg,
            corpus_root,
            kind=kind,
            gold=case.gold if kind == "gold" else (),
            original_gold=case.original_gold if kind == "original" else (),
            link_hosts=link_hosts,
        )
        out.append(f'<div class="mb-panel {cls}">{head}{body}</div>')
    return "".join(out)


def _hits_table(atoms: Sequence[CaseAtom]) -> str:
    rows = [
        (
            "<tr><th>rank</th><th>score</th><th>atom</th><th>source</th><th>extent</th>"
            "<th>flags</th><th>text</th></tr>"
        )
    ]
    for a in atoms:
        flags = []
        if a.foreign_holder:
            flags.append("other holder")
        if a.after_as_of:
            flags.append("after as_of")
        if a.in_cartridge:
            flags.append("in cartridge")
        text = a.text[:160] + ("…" if len(a.text) > 160 else "")
        rows.append(
            f"<tr><td>{a.rank}</td><td>{'' if a.score is None else f'{a.score:.4g}'}</td>"
            f"<td>{e(a.atom_id)}</td><td>{e(a.source_id)}</td><td>{e(short_json(a.extent))}</td>"
            f"<td>{e(', '.join(flags))}</td><td>{e(text)}</td></tr>"
        )
    return f'<table class="mb-hits">{"".join(rows)}</table>'


def _corpus(corpus_root) -> Path | None:
    if corpus_root is not None:
        return Path(corpus_root)
    try:
        return _corpus_root()
    except MembenchError:
        return None


def unanswerable_text(case: Case) -> str | None:
    """What an unanswerable case is (``None`` for an answerable one): its kind and whether it
    is audited, i.e. which false recall counts it (SPEC section 5)."""
    if not case.unanswerable:
        return None
    if case.audited:
        return f"{case.derivation}, audited: counted in false_recall_rate (gated)"
    return (
        f"{case.derivation}, not audited: its source ({case.query_id.split(':', 1)[0]}) "
        "carries an upstream tell; counted in false_recall_native, its own column, never "
        "in the gated false recall"
    )


def audit_mark(case: Case) -> str:
    """An unanswerable case's kind and audit status in a few words (``native · audited``,
    ``native · upstream tell, not audited``); ``""`` for an answerable one."""
    if not case.unanswerable:
        return ""
    return f"{case.derivation} · " + ("audited" if case.audited else "upstream tell, not audited")


def _audit_flag(case: Case) -> str:
    """The case heading's flag of :func:`audit_mark` (green when audited)."""
    if not case.unanswerable:
        return ""
    return f'<span class="mb-flag{" mb-ok" if case.audited else ""}">{e(audit_mark(case))}</span>'


def cost_text(case: Case) -> str:
    """``, 412 tokens, 0.35 of the picture, 60 s of video``: what the cartridge hands over
    (docs/metrics.md, context_*), empty when the content was not read."""
    c = case.cost
    out = []
    if "context_tokens" in c:
        out.append(f"{c['context_tokens']:,.0f} tokens")
    if "context_area" in c:
        out.append(f"{c['context_area']:.2f} of the picture")
    if "context_seconds" in c:
        out.append(f"{c['context_seconds']:,.0f} s of video")
    return "".join(f", {x}" for x in out)


def render_case_html(
    case: Case,
    corpus_root: str | os.PathLike | None = None,
    css: bool = True,
    link_hosts: frozenset[str] | None = None,
) -> str:
    """One case as a self-contained HTML block: the question, scope, as_of, derivation, the
    cartridge atoms (text, score, flags) and each atom's source region as it is; for a miss
    the gold regions and the top 10 hits; for a derived item the original query's gold. Every
    text is escaped; pictures are embedded as ``data:`` URIs; a URL from the data is text
    unless ``link_hosts`` names its https host (:mod:`membench.core.links`)."""
    root = _corpus(corpus_root)
    lh = link_hosts
    label = {"false_recall": "FALSE RECALL", "miss": "MISS", "scope_leak": "SCOPE LEAK"}.get(
        case.kind, case.kind.upper()
    )
    audited = "" if not case.unanswerable else f' data-audited="{"yes" if case.audited else "no"}"'
    parts = [
        _CSS if css else "",
        f'<div class="mb-case" data-query-id="{e(case.query_id)}" data-kind="{e(case.kind)}"'
        f"{audited}>",
        f"<h3>{label} · {e(case.modality)} · {e(case.query_id)} {_audit_flag(case)}</h3>",
        f'<div style="font-size:14px;margin:4px 0"><b>Q:</b> {e(case.question)}</div>',
        _kv(
            [
                ("answer", None if case.answer is None else short_json(case.answer)),
                ("holder", case.scope.get("holder")),
                ("session", case.scope.get("session")),
                ("scenario", case.scope.get("scenario")),
                ("as_of", case.as_of),
                ("derivation", case.derivation),
                ("unanswerable", unanswerable_text(case)),
                ("derived_from", case.derived_from),
                ("split", case.split),
                (
                    "known distractor (upstream evidence, not gold)",
                    None if not case.distractor or case.original else short_json(case.distractor),
                ),
                ("notes", case.notes),
                ("run line", None if case.has_run else "none: the system returned nothing"),
                ("ranked atoms", case.n_hits),
            ]
        ),
    ]
    o = case.original
    if o:
        if o["found"]:
            parts.append(
                '<div class="mb-panel mb-orig"><b>derived from</b> '
                + _kv(
                    [
                        ("query", o["query_id"]),
                        ("its holder", o["holder"]),
                        ("its gold", f"{len(o['gold'])} region(s), below"),
                    ]
                )
                + "</div>"
            )
        else:
            parts.append(
                missing_html(
                    f"derived_from {o['query_id']}: the record keeps no gold "
                    "of it (origin.distractor)"
                )
            )

    if case.kind == "scope_leak":
        top_rank = min((a.rank for a in case.leaks if a.rank is not None), default=None)
        in_cart = sum(a.in_cartridge for a in case.leaks)
        parts.append(
            f"<h4>Returned out of scope: {case.n_leaks} atom(s) of {case.n_hits} ranked "
            f"({case.n_foreign} of another holder, {case.n_future} observed after as_of); "
            f"highest at rank {e(str(top_rank) if top_rank is not None else 'none (cartridge only)')}"
            f"{f'; {in_cart} in the cartridge' if in_cart else ''}</h4>"
        )
        parts.append(_hits_table(case.leaks))
        if case.n_leaks > len(case.leaks):
            parts.append(f"<div>the first {len(case.leaks)} shown</div>")
        for n, a in enumerate(case.leaks[:REGION_RENDERS_TOP], 1):
            parts.append(_atom_panel(a, n, case, root, True, case.leaks, lh))
    if case.cartridge:
        parts.append(
            f"<h4>Cartridge: {len(case.cartridge)} atom(s){e(cost_text(case))}"
            f"{'; the system should have abstained' if case.kind == 'false_recall' else ''}"
            "</h4>"
        )
        for n, a in enumerate(case.cartridge, 1):
            parts.append(_atom_panel(a, n, case, root, True, case.cartridge, lh))
    else:
        parts.append("<h4>Cartridge: empty (the system abstained)</h4>")

    shown = list(case.cartridge)
    if case.kind == "miss":
        parts.append(f"<h4>Top {MISS_DEPTH} ranked atoms (none hits a gold region)</h4>")
        if case.top_hits:
            parts.append(_hits_table(case.top_hits))
            if not case.cartridge:
                extra = case.top_hits[:REGION_RENDERS_TOP]
                parts.append(f"<div>regions of the top {len(extra)}:</div>")
                for n, a in enumerate(extra, 1):
                    parts.append(_atom_panel(a, n, case, root, True, extra, lh))
                shown += extra
        else:
            parts.append(missing_html("no ranked atoms"))
        parts.append(f"<h4>Gold: {len(case.gold)} region(s)</h4>")
        parts.append(_gold_panels(case.gold, case, root, "mb-gold", "gold", shown, lh))
    if o and o["found"]:
        parts.append(
            f"<h4>Gold of the original query {e(o['query_id'])} (holder {e(str(o['holder']))})</h4>"
        )
        parts.append(_gold_panels(o["gold"], case, root, "mb-orig", "original", shown, lh))
    parts.append("</div>")
    return "".join(parts)


def _choose(all_cases: list[Case], n: int, spread: bool) -> list[Case]:
    """The first ``n`` cases, or (``spread``) round-robin over the modalities."""
    if not spread:
        return all_cases[:n]
    by_mod: dict[str, list[Case]] = {}
    for c in all_cases:
        by_mod.setdefault(c.modality, []).append(c)
    return [c for group in itertools.zip_longest(*by_mod.values()) for c in group if c is not None][
        :n
    ]


#: what :func:`static_browser_html` embeds at most, per kind of case: a case is 60 to 450 kB
#: of HTML with its pictures, so the page stays under about 30 MB
MAX_STATIC_CASES = bound(
    "static_cases",
    60,
    "cases",
    "the cases of each kind page 04 embeds for its kernel-free stepper (n_static)",
    "refused with the bound named; the live browser in JupyterLab steps through all of them",
    "membench.analysis.browse",
)


def static_browser_html(
    run_dir: str | os.PathLike | RunDir,
    sets_dir: str | os.PathLike | None = None,
    corpus_root: str | os.PathLike | None = None,
    n: int = 20,
    spread: bool = True,
    link_hosts: frozenset[str] | None = None,
) -> str:
    """The first ``n`` cases of every kind, for a page read without a kernel: one block
    marked ``data-membench-stepper`` holding, per kind, a ``div.mb-step-kind`` (its title, the
    count of all its cases, the cases embedded). Without a script it reads as a list; the
    report page's own script (``membench/report/static/stepper.js``, allowed by the page's
    policy by its sha256) turns it into a stepper: the kind, Prev / Next, ``i / n``. The live
    :class:`Browser` (JupyterLab) steps through every case. ``spread`` and ``link_hosts`` as
    :func:`static_cases_html`."""
    if not 0 <= n <= MAX_STATIC_CASES:
        raise MembenchError(
            f"n_static={n}: at most {MAX_STATIC_CASES} cases of each kind are "
            "embedded in a page (bound static_cases); the live browser shows all"
        )
    data = load_run_cases(run_dir, sets_dir)
    root = _corpus(corpus_root)
    parts = [
        _CSS,
        '<div class="mb-stepper" data-membench-stepper="1" '
        'style="font-family:system-ui,sans-serif">',
    ]
    for kind, title in KINDS.items():
        all_cases = data.of(kind, None)
        chosen = _choose(all_cases, n, spread)
        short = title.split(" (")[0]
        parts.append(
            f'<div class="mb-step-kind" data-kind="{e(kind)}" data-title="{e(short)}" '
            f'data-total="{len(all_cases)}"><h3>{e(title)}: {len(chosen)} of '
            f"{len(all_cases)} embedded"
            + (" (round-robin over modalities)" if spread and chosen else "")
            + "</h3>"
        )
        if not chosen:
            parts.append(f"<div><i>no {e(short)} in this run</i></div>")
        parts += [render_case_html(c, root, css=False, link_hosts=link_hosts) for c in chosen]
        parts.append("</div>")
    parts.append("</div>")
    return "".join(parts)


def static_cases_html(
    run_dir: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    corpus_root: str | os.PathLike | None = None,
    kind: str = "false_recall",
    n: int = 5,
    modality: str | None = None,
    spread: bool = False,
    link_hosts: frozenset[str] | None = None,
) -> str:
    """The first ``n`` cases of ``kind`` rendered as one HTML block (it shows in static HTML,
    without a kernel). ``spread``: take the cases round-robin over the modalities (the first
    of each modality, then the second of each, ...) so that a few cases show several
    modalities; the first case is the same either way."""
    data = load_run_cases(run_dir, sets_dir)
    all_cases = data.of(kind, modality)
    chosen = _choose(all_cases, n, spread)
    head = (
        f'<div style="font-family:system-ui,sans-serif"><b>{e(KINDS[kind])}</b>'
        f"{' · ' + e(modality) if modality and modality != 'all' else ''}: "
        f"showing {len(chosen)} of {len(all_cases)} "
        f"({'round-robin over modalities' if spread else 'the first ' + str(n)}; "
        f"order: modality, then query id) · run {e(str(data.run_dir))}</div>"
    )
    if not chosen:
        return _CSS + head + f"<div><i>no {e(KINDS[kind])}</i></div>"
    return (
        _CSS
        + head
        + "".join(
            render_case_html(c, corpus_root, css=False, link_hosts=link_hosts) for c in chosen
        )
    )


# --------------------------------------------------------------------------- widget


def _new(change: Any) -> Any:
    if isinstance(change, dict):
        return change.get("new")
    return getattr(change, "new", change)


class Browser:
    """An ipywidgets browser over a run's failures: a kind toggle (false recalls / answerable
    misses / scope leaks), a modality filter, Prev / Next, a position label and the current
    case's HTML.

    The callbacks are plain methods (:meth:`on_next`, :meth:`on_prev`, :meth:`on_kind_change`,
    :meth:`on_modality_change`), so they can be driven without a front end; ``change`` may be a
    traitlets change, a ``{"new": value}`` dict or the value itself.
    """

    def __init__(
        self,
        run_dir: str | os.PathLike,
        sets_dir: str | os.PathLike | None = None,
        corpus_root: str | os.PathLike | None = None,
        kind: str = "false_recall",
        modality: str = "all",
        link_hosts: frozenset[str] | None = None,
    ):
        import ipywidgets as w

        self.link_hosts = link_hosts

        self.data = load_run_cases(run_dir, sets_dir)
        self.corpus_root = _corpus(corpus_root)
        if kind not in KINDS:
            raise MembenchError(f"unknown case kind {kind!r}; choose from {', '.join(KINDS)}")
        self.kind, self.modality, self.pos = kind, modality, 0
        self._html_cache: dict[tuple[str, str], str] = {}
        present = [m for m in MODALITIES if any(d["modality"] == m for d in self.data.denominators)]
        self.kind_toggle = w.ToggleButtons(
            options=[
                ("false recalls", "false_recall"),
                ("answerable misses", "miss"),
                ("scope leaks", "scope_leak"),
            ],
            value=kind,
            description="show",
        )
        self.modality_dropdown = w.Dropdown(
            options=["all", *present],
            value=modality if modality in present else "all",
            description="modality",
        )
        self.modality = self.modality_dropdown.value
        self.prev_button = w.Button(description="◀ Prev", layout=w.Layout(width="90px"))
        self.next_button = w.Button(description="Next ▶", layout=w.Layout(width="90px"))
        self.label = w.Label()
        self.html = w.HTML()
        self.kind_toggle.observe(self.on_kind_change, names="value")
        self.modality_dropdown.observe(self.on_modality_change, names="value")
        self.prev_button.on_click(lambda _b: self.on_prev())
        self.next_button.on_click(lambda _b: self.on_next())
        self.widget = w.VBox(
            [
                w.HBox([self.kind_toggle, self.modality_dropdown]),
                w.HBox([self.prev_button, self.next_button, self.label]),
                self.html,
            ]
        )
        self.refresh()

    @property
    def cases(self) -> list[Case]:
        return self.data.of(self.kind, self.modality)

    @property
    def current(self) -> Case | None:
        cs = self.cases
        return cs[self.pos] if 0 <= self.pos < len(cs) else None

    def refresh(self) -> None:
        cs = self.cases
        self.pos = max(0, min(self.pos, len(cs) - 1))
        what = KINDS[self.kind].split(" (")[0]
        where = "all modalities" if self.modality == "all" else self.modality
        if not cs:
            self.label.value = f"0 / 0 {what} · {where}"
            self.html.value = f"<div><i>no {e(what)} for {e(where)}</i></div>"
        else:
            c = cs[self.pos]
            mark = f" · {audit_mark(c)}" if c.unanswerable else ""
            self.label.value = f"{self.pos + 1} / {len(cs)} {what} · {where} · {c.query_id}{mark}"
            key = (c.kind, c.query_id)
            if key not in self._html_cache:
                self._html_cache[key] = render_case_html(
                    c, self.corpus_root, link_hosts=self.link_hosts
                )
            self.html.value = self._html_cache[key]
        self.prev_button.disabled = self.pos <= 0
        self.next_button.disabled = self.pos >= len(cs) - 1

    def on_next(self, *_: Any) -> None:
        if self.pos < len(self.cases) - 1:
            self.pos += 1
            self.refresh()

    def on_prev(self, *_: Any) -> None:
        if self.pos > 0:
            self.pos -= 1
            self.refresh()

    def go(self, pos: int) -> None:
        self.pos = pos
        self.refresh()

    def on_kind_change(self, change: Any) -> None:
        new = _new(change)
        if new not in KINDS:
            raise MembenchError(f"unknown case kind {new!r}")
        if self.kind_toggle.value != new:
            self.kind_toggle.value = new  # re-enters here through observe; harmless
        self.kind, self.pos = new, 0
        self.refresh()

    def on_modality_change(self, change: Any) -> None:
        new = _new(change) or "all"
        if new not in self.modality_dropdown.options:
            raise MembenchError(f"modality {new!r} is not in this run")
        if self.modality_dropdown.value != new:
            self.modality_dropdown.value = new
        self.modality, self.pos = new, 0
        self.refresh()

    def _repr_mimebundle_(self, **kwargs):
        return self.widget._repr_mimebundle_(**kwargs)
