"""The leaderboard's ranking: :func:`leaderboard` reads a result store and makes the
:class:`Leaderboard` (one long row per size class, judgment set, scope, entry and measure: the
best of each column, the gates' verdicts, the paired tests against the best with Holm's
correction over each table), the labels of its rows (:func:`entry_label`, :func:`ran_text`,
the baselines: :func:`is_baseline`, and among them the content-free floors: :func:`is_floor`),
the best per headline measure
(:func:`best_rows`) and why the rows are ordered as they are (:func:`rank_reason`). The rules
are in :mod:`membench.analysis.leaderboard`.

Reads a store folder (:func:`membench.analysis.leaderboard.store.read_store`) and its
``membench verify`` results (:func:`membench.analysis.verify.read_verifications`); writes
nothing.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ...core import progress
from ...core.errors import MembenchError
from ...core.paths import resolve_user_path
from ...metrics import abstention
from ...metrics.bootstrap import SEED, check_resamples
from ...metrics.measures import (
    ALL_SILENT,
    BY_NAME,
    MAX_FALSE_RECALL,
    ORDERING_MEASURES,
    never_best,
    silence_of,
)
from ...metrics.measures import MEASURES as MEASURES_REGISTRY
from ...modalities import MODALITIES
from ...systems.cards import size_class

# verify imports the store inside its functions only, so this import is no circle
from ..verify import read_verifications, verify_text
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
    _num,
    cell_text,
)
from .store import read_store

#: what a baseline's label says after its name (:func:`is_baseline`)
BASELINE_MARK = " (baseline)"
#: what a content-free floor's label says after its name (:func:`is_floor`), in place of
#: :data:`BASELINE_MARK`
FLOOR_MARK = " (content-free floor)"


def is_baseline(e: dict[str, Any]) -> bool:
    """An entry of a baseline (``nothing``, no memory; ``echo``, question-word overlap over the
    memory with an empty cartridge: a registered test double that
    carries a card and sees no gold; the others carry none and are refused). Its row is shown
    under the ranked ones, as the floor every figure is read against; it is never the best of
    a column and never tested against it."""
    return (e.get("identity") or {}).get("kind") == "test double"


def is_floor(e: dict[str, Any]) -> bool:
    """A baseline that is a content-free floor (``random``, ``newest``, ``oldest``:
    :data:`membench.systems.doubles.CONTENT_FREE`, by its card's name): it ranks by a seeded
    order or by observed_at alone and reads no content. Shown as a baseline is (never the best,
    never tested), labelled :data:`FLOOR_MARK`, under the other baselines."""
    from ...systems.doubles import CONTENT_FREE

    return is_baseline(e) and (e.get("card") or {}).get("name") in CONTENT_FREE


def unmarked(label: str) -> str:
    """A row's label without its baseline or floor mark."""
    return label.removesuffix(BASELINE_MARK).removesuffix(FLOOR_MARK)


def _mark(e: dict[str, Any]) -> str:
    return FLOOR_MARK if is_floor(e) else BASELINE_MARK if is_baseline(e) else ""


def ran_text(e: dict[str, Any]) -> str:
    """What an entry's row says ran: its identity's kind (``reference``, ``registered
    package NAME VERSION``, ``user module MODULE:CLASS``, ``HTTP service URL``, ...) and
    whether the run was sealed (the system answered over HTTP, from another process than the
    one holding the sets)."""
    ident = e.get("identity") or {}
    kind = ident.get("kind") or "unknown"
    d = ident.get("distribution") or {}
    if kind == "registered package":
        what = f"registered package {d.get('name', '?')} {d.get('version', '?')}"
    elif kind == "user module":
        what = f"user module {ident.get('class') or ident.get('spec')}"
    elif kind == "HTTP service":
        what = f"HTTP service {ident.get('spec')}"
    elif kind == "library adapter":
        what = f"library adapter ({ident.get('spec') or e.get('system')})"
    else:
        what = kind
    return f"{what} · {'sealed' if e.get('sealed') else 'not sealed'}"


def entry_label(e: dict[str, Any], all_entries: list[dict[str, Any]]) -> str:
    """``system (card)``; where one system and card appear in several entries (another config
    or code revision), with the run directory's name, and the entry id if that is shared too."""
    card = e["card"]["name"]
    base = e["system"] if card == e["system"] else f"{e['system']} ({card})"
    twins = [x for x in all_entries if x["system"] == e["system"] and x["card"]["name"] == card]
    if len(twins) > 1:
        run = Path(str(e.get("run_dir") or "")).name
        base += f" [{run}]"
        if sum(1 for x in twins if Path(str(x.get("run_dir") or "")).name == run) > 1:
            base += f" #{e['id'][:6]}"
    return base


@dataclass
class Leaderboard:
    store: dict[str, Any]
    entries: list[dict[str, Any]]
    labels: dict[str, str]  # entry id -> label
    rows: Any  # long DataFrame (see leaderboard())
    rank_by: str = RANK_BY
    notes: list[str] = field(default_factory=list)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)  # entry id -> verify

    def units(self, size: str | None = None) -> str:
        """How the paired tests against the best resampled, per scope (of ``size``, or
        every size class): ``"all: by holder (26 to 30 holders); image: by record (3
        holders, under 10)"``; the abstention-order statistics always by record."""
        from ..paired import unit_span

        r = self.rows
        if r is None or not len(r) or "unit" not in r:
            return ""
        r = r[
            r["unit"].notna()
            & ~r["measure"].isin(list(ORDERING_MEASURES))
            & ((r["size_class"] == size) if size is not None else True)
        ]
        return "; ".join(
            f"{scope}: "
            + ", ".join(
                unit_span(u, *((int(h.min()), int(h.max())) if len(h) else (None, None)))
                for u, h in (
                    (u, g[g["unit"] == u]["holders"].dropna()) for u in ("holder", "record")
                )
                if (g["unit"] == u).any()
            )
            for scope, g in r.groupby("scope", sort=False)
        )

    def verify_text(self, eid: str) -> str:
        """The entry's last ``membench verify`` result, as a row shows it."""
        return verify_text(self.verified.get(eid))

    def ran(self, eid: str) -> str:
        return ran_text(next(e for e in self.entries if e["id"] == eid))

    @property
    def tells(self) -> dict[str, float | None]:
        """source -> the ROC AUC of its upstream tell (the audit of the store's sets, which
        every entry shares): the label of the natives' false-recall column."""
        return dict(self.entries[0]["native_tells"]) if self.entries else {}

    @property
    def size_classes(self) -> list[str]:
        return [c for c in ("<=1B", ">1B") if c in set(self.rows["size_class"])]

    @property
    def judgment_sets(self) -> list[str]:
        seen = list(dict.fromkeys(self.rows["judgment_set"]))
        return [PRIMARY, *sorted(s for s in seen if s != PRIMARY)] if PRIMARY in seen else seen

    def rank_measure(self, family: str | None) -> str:
        """What a table of ``family`` is ranked by: :attr:`rank_by` when it is one of the
        family's measures, else the family's default (``recall@1000`` for relevance,
        :data:`CARTRIDGE_RANK_BY` for the cartridge and scope table, on which silence scores
        0); the answer table (``"answer"``) always by :data:`ANSWER_RANK_BY`, the answer
        within the token budget."""
        if family == "answer":
            return ANSWER_RANK_BY
        if family == "other":
            return (
                self.rank_by
                if self.rank_by in OTHER and self.rank_by not in ANSWER_COLUMNS
                else CARTRIDGE_RANK_BY
            )
        return self.rank_by if self.rank_by in RELEVANCE else RANK_BY

    def table(
        self, size: str, judgment_set: str, scope: str | None = None, family: str | None = None
    ):
        """The long rows of one size class and judgment set (``family``: ``relevance``, the
        measures that follow the set, or ``other``, under ``gold`` only; ``scope``: one)."""
        r = self.rows
        r = r[(r["size_class"] == size) & (r["judgment_set"] == judgment_set)]
        if family is not None:
            r = r[r["family"] == family]
        return r if scope is None else r[r["scope"] == scope]

    def wide(self, size: str, judgment_set: str, *, digits: int = 3):
        """One row per (scope, system), one text cell per measure: value [95% CI], n, the
        gate's verdict, and the comparison with the best (``best``, ``= best`` when not
        significantly different after Holm, else the difference and Holm p)."""
        import pandas as pd

        t = self.table(size, judgment_set)
        out = []
        scopes = [s for s in [*MODALITIES, "all"] if s in set(t["scope"])]
        for scope in scopes:
            g = t[t["scope"] == scope]
            order = g[g["measure"] == self.rank_by].sort_values(
                ["baseline", "floor", "value", "system"],
                ascending=[True, True, BY_NAME[self.rank_by].direction == "lower", True],
                na_position="last",
            )["entry"]
            for eid in order:
                row: dict[str, Any] = {
                    "scope": scope,
                    "system": self.labels[eid],
                    "ran": self.ran(eid),
                    "verified": self.verify_text(eid),
                }
                cells = g[g["entry"] == eid].set_index("measure")
                card = next(e["card"] for e in self.entries if e["id"] == eid)
                row["parameters"] = card["parameter_count"]
                for m in [*MEASURES, SHOWN_LATENCY, *SHOWN_CONTEXT]:
                    if m not in cells.index:
                        continue
                    c = cells.loc[m]
                    row[m] = cell_text(
                        c, digits=1 if m.startswith(("latency", "context")) else digits
                    )
                out.append(row)
        return pd.DataFrame(out)


#: why a measure orders the leaderboard's rows, for the measures that have been chosen to
#: (page 06 says it beside the ranking; :func:`rank_reason`)
RANK_REASONS: dict[str, str] = {
    "recall@1000": "a first-stage measure: is the evidence retrieved at all, at a depth a "
    "reranker or a cartridge could still use it? It orders the systems by what "
    "they can find, the question Q2D-Web's leaderboard ranks by. Whether the "
    "evidence is at the top is recall@10's question (the gated one) and nDCG@10's",
    ANSWER_RANK_BY: "the answer handed over within a stated token budget: a cartridge past "
    "1,024 tokens scores 0, so a system cannot raise it by committing more "
    "atoms, as it can raise the uncut answer@cartridge shown beside it with "
    "the committed tokens",
    abstention.KEPT: "the false-recall gate read as an operating point: how much of the "
    "answerable items a system still answers when held to a false recall of "
    "at most 0.10. A system that always abstains scores 0 on it, so silence "
    "cannot head the cartridge table, as it would ranked by false recall alone",
}


def rank_reason(rank_by: str) -> str:
    """Why the rows are ordered by ``rank_by``, and how to read the other columns: the
    measure's definition and citation from the registry, the reason it was chosen
    (:data:`RANK_REASONS`, where there is one) and the gated headline measures beside it."""
    m = BY_NAME[rank_by]
    gated = [x.name for x in MEASURES_REGISTRY if x.headline and x.gate and x.name != rank_by]
    why = RANK_REASONS.get(rank_by)
    first = m.definition.split(". ")[0].rstrip(".")  # its first sentence
    text = f"Rows are ordered by {rank_by} ({first}; {m.citation})" + (f": {why}." if why else ".")
    text += f" It is gated ({m.gate.op} {m.gate.threshold:g})." if m.gate else " It is not gated."
    if gated:
        text += (
            f" The gated measures ({', '.join(gated)}) are columns beside it: each "
            "column marks its own best system and tests every other one against it, so a "
            "system can head the order and still fail a gate. Read the column of the "
            "question you have (the best per headline measure is listed above the tables)."
        )
    return text


def best_rows(
    lb: Leaderboard, size: str, *, judgment_set: str = PRIMARY, scope: str = "all"
) -> list[dict[str, Any]]:
    """Per headline measure of the registry that the table shows: the best system with its
    value, 95% interval and n, and every other system's difference from it with the Holm
    p and whether it is significant (the leaderboard's own tests); beside them, never tested,
    the values of the baselines (``baselines``) and of the content-free floors (``floors``)."""
    from ...metrics.measures import HEADLINE

    t = lb.table(size, judgment_set, scope)
    out = []
    for m in HEADLINE:
        g = t[t["measure"] == m]
        if g.empty or not g["is_best"].any():
            silent = g[~g["baseline"] & g["value"].notna()] if not g.empty else g
            if len(silent) and (silent["gate_why"] != "").all():  # never_best: all silent
                out.append(_all_silent(m, silent, g[g["baseline"]]))
            continue
        b = g[g["is_best"]].iloc[0]
        others, base, floor = [], [], []
        for r in g[~g["is_best"]].sort_values("system").to_dict("records"):
            if r.get("baseline"):  # shown beside, never tested (is_baseline)
                (floor if r.get("floor") else base).append(
                    {"system": unmarked(r["system"]), "value": _num(r["value"])}
                )
                continue
            p = r.get("p_holm")
            others.append(
                {
                    "system": r["system"],
                    "value": _num(r["value"]),
                    "diff": _num(r.get("diff")),
                    "p_holm": None if p is None or np.isnan(p) else float(p),
                    "significant": bool(r.get("significant")),
                }
            )
        out.append(
            {
                "measure": m,
                "direction": BY_NAME[m].direction,
                "best": b["system"],
                "value": _num(b["value"]),
                "ci95": [_num(b["ci95_lo"]), _num(b["ci95_hi"])],
                "n": int(b["n"]),
                "others": others,
                "baselines": base,
                "floors": floor,
            }
        )
    return out


def _all_silent(m: str, rows, floor) -> dict[str, Any]:
    """:func:`best_rows`' row of a measure on which every system's gate is ``FAIL (silent)``
    (:func:`membench.metrics.measures.never_best`): no best, each system's value shown."""
    return {
        "measure": m,
        "direction": BY_NAME[m].direction,
        "best": ALL_SILENT,
        "all_silent": True,
        "value": None,
        "ci95": [None, None],
        "n": 0,
        "others": [
            {
                "system": r["system"],
                "value": _num(r["value"]),
                "diff": None,
                "p_holm": None,
                "significant": False,
                "silent": True,
            }
            for r in rows.sort_values("system").to_dict("records")
        ],
        "baselines": [
            {"system": unmarked(r["system"]), "value": _num(r["value"])}
            for r in floor.sort_values("system").to_dict("records")
            if not r.get("floor")
        ],
        "floors": [
            {"system": unmarked(r["system"]), "value": _num(r["value"])}
            for r in floor.sort_values("system").to_dict("records")
            if r.get("floor")
        ],
    }


def leaderboard(
    store_dir: str | os.PathLike,
    *,
    rank_by: str = RANK_BY,
    n_resamples: int = 10_000,
    seed: int = SEED,
) -> Leaderboard:
    """The leaderboard of a result store (see :mod:`membench.analysis.leaderboard`).

    ``rows`` has one row per (size class, judgment set, scope, entry, measure): ``value``,
    ``n``, ``denominator``, ``ci95_lo`` / ``ci95_hi``, ``gate`` (e.g. ``">= 0.9"``) and
    ``gate_pass``, ``is_best``, ``best`` (the best entry's id), and against the best ``diff``
    (this minus best, on the items both define), ``diff_ci95_lo`` / ``diff_ci95_hi`` (paired
    bootstrap), ``p_permutation``, ``p_holm`` (Holm over every test of one table) and
    ``significant`` (``p_holm < 0.05`` and the bootstrap p < 0.05); ``baseline`` and
    ``floor`` mark the rows of :func:`is_baseline` and :func:`is_floor`. ``unit`` is how the
    test resampled (``holder``: the scope's items come from at least
    :data:`membench.sets.audit.MIN_HOLDERS_CI` holders, whose differences flip and are drawn
    together; ``record``: fewer, or an abstention-order statistic) and ``holders`` their
    number (:meth:`Leaderboard.units` says it per scope). ``family`` is
    ``relevance`` for the measures that follow the judgment set (one table per size class and
    set) and ``other`` for the rest (false recall, holder and temporal correctness, latency:
    one table per size class, listed under ``gold``)."""
    with progress.step("leaderboard: paired tests against the best", unit="table") as bar:
        return _leaderboard(store_dir, rank_by, n_resamples, seed, bar)


def _leaderboard(
    store_dir: str | os.PathLike, rank_by: str, n_resamples: int, seed: int, bar: progress.Step
) -> Leaderboard:
    import pandas as pd

    check_resamples(n_resamples, "--resamples")
    store, entries = read_store(store_dir)
    if store is None or not entries:
        raise MembenchError(
            f"{resolve_user_path(store_dir)}: an empty result store; add runs "
            "with `membench leaderboard --runs RUN_DIR ... --out DIR`"
        )
    rankable = [m for m in MEASURES if BY_NAME[m].ranked]
    if rank_by not in rankable:
        raise MembenchError(f"--rank-by {rank_by!r}: one of {', '.join(rankable)}")
    labels = {e["id"]: entry_label(e, entries) + _mark(e) for e in entries}
    board = _Board.of(entries, labels, n_resamples, seed)
    notes = []
    for e in entries:
        if _calibration_run(e):
            notes.append(
                f"{labels[e['id']]}: its cartridge is at the uncalibrated default "
                "threshold (a calibration run, or no calibration file): no cartridge "
                "figures shown"
            )
    sets = sorted(
        {js for e in entries for js in e["judgment_sets"]}, key=lambda s: (s != PRIMARY, s)
    )
    rows: list[dict[str, Any]] = []
    bar.set_total(len(sets) * len({size_class(int(e["card"]["parameter_count"])) for e in entries}))
    for size in ("<=1B", ">1B"):
        members = [e for e in entries if size_class(int(e["card"]["parameter_count"])) == size]
        if not members:
            continue
        for js in sets:
            bar.note(f"size {size}, judgment set {js}")
            have = [e for e in members if js in e["judgment_sets"]]
            if len(have) < len(members):
                notes.append(
                    f"{size}, {js}: {len(members) - len(have)} entr(y/ies) carry no "
                    f"{js} judgments and are left out of its table"
                )
            start = len(rows)
            board.table(rows, size, js, have)
            _holm_table(rows[start:])
            bar.advance()
    df = pd.DataFrame(rows)
    return Leaderboard(
        store, entries, labels, df, rank_by, notes, read_verifications(store_dir, entries)
    )


@dataclass
class _Board:
    """What every table of :func:`_leaderboard` reads: the entries' per-item values and
    abstention orders aligned on the first entry's items, and how the tests resample."""

    by_id: dict[str, dict[str, Any]]
    labels: dict[str, str]
    baselines: set[str]
    floors: set[str]
    n_items: int
    mods: np.ndarray
    holders: np.ndarray
    values: dict[tuple[str, str, str], np.ndarray]  # (entry, set, measure) -> per item
    abst: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]
    n_resamples: int
    seed: int

    @classmethod
    def of(
        cls, entries: list[dict[str, Any]], labels: dict[str, str], n_resamples: int, seed: int
    ) -> _Board:
        baselines = {e["id"] for e in entries if is_baseline(e)}
        floors = {e["id"] for e in entries if is_floor(e)}
        order = entries[0]["items"]["query_id"]
        pos = {q: i for i, q in enumerate(order)}
        mods = np.asarray(entries[0]["items"]["modality"], dtype=object)
        holders = np.asarray(entries[0]["items"]["holder"], dtype=object)
        values: dict[tuple[str, str, str], np.ndarray] = {}
        abst: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = {}
        for e in entries:
            idx = np.array([pos[q] for q in e["items"]["query_id"]])
            for js, per in e["items"]["values"].items():
                for m, vals in per.items():
                    arr = np.full(len(order), np.nan)
                    arr[idx] = np.array([np.nan if v is None else v for v in vals], dtype=float)
                    values[(e["id"], js, m)] = arr
            ab = e["items"]["abstention"]
            score = np.full(len(order), -np.inf)
            score[idx] = [-np.inf if v is None else float(v) for v in ab["score"]]
            kept = np.zeros(len(order), bool)
            kept[idx] = [not x for x in ab["abstained"]]
            ans = np.zeros(len(order), bool)
            ans[idx] = ab["answerable"]
            aud = np.zeros(len(order), bool)
            aud[idx] = ab["audited"]
            abst[e["id"]] = (score, kept, ans, aud)
        return cls(
            by_id={e["id"]: e for e in entries},
            labels=labels,
            baselines=baselines,
            floors=floors,
            n_items=len(order),
            mods=mods,
            holders=holders,
            values=values,
            abst=abst,
            n_resamples=n_resamples,
            seed=seed,
        )

    def ordering(self, eid: str, mask: np.ndarray) -> abstention.Ordering:
        score, kept, ans, aud = self.abst[eid]
        keep = mask & aud  # the audited items only
        return abstention.Ordering(score[keep], kept[keep], ans[keep], self.mods[keep])

    def silence(self, eid: str, scope: str, m: str) -> float | None:
        """The value the silence check of ``m``'s gate reads (None: no such check)."""
        comp = silence_of(m)
        return (
            None
            if comp is None
            else (self.by_id[eid]["figures"][PRIMARY].get(scope, {}).get(comp) or {}).get("value")
        )

    def table(
        self, rows: list[dict[str, Any]], size: str, js: str, have: list[dict[str, Any]]
    ) -> None:
        """The rows of one table (size class ``size``, judgment set ``js``, its entries
        ``have``), appended to ``rows``: per scope and measure shown, one row per entry."""
        shown = [*RELEVANCE, *(OTHER if js == PRIMARY else ())]
        for scope in [*[m for m in MODALITIES if m in set(self.mods)], "all"]:
            mask = np.ones(self.n_items, bool) if scope == "all" else self.mods == scope
            for m in shown:
                figs = {
                    e["id"]: None
                    if m in UNCALIBRATED_HIDDEN and _calibration_run(e)
                    else e["figures"][js].get(scope, {}).get(m)
                    for e in have
                }
                best = self.best(m, scope, figs)
                for e in have:
                    f = figs[e["id"]]
                    if f is None:
                        continue
                    row = self.row(size, js, scope, m, e["id"], f, best, mask)
                    if (
                        best is not None
                        and best != e["id"]
                        and f["value"] is not None
                        and e["id"] not in self.baselines
                    ):
                        self.test(row, js, scope, m, e["id"], best, mask)
                    rows.append(row)

    def best(self, m: str, scope: str, figs: dict[str, Any]) -> str | None:
        """The best entry of measure ``m`` over ``scope`` (no baseline, none silent; ties go
        to the first label), of the entries' figures ``figs``."""
        meas = BY_NAME[m]
        if m in MEASURES and meas.ranked:
            cand = [
                (figs[i]["value"], self.labels[i], i)
                for i in figs
                if figs[i]
                and figs[i]["value"] is not None
                and i not in self.baselines
                and not never_best(m, self.silence(i, scope, m))
            ]
            if cand:
                hi = meas.direction == "higher"
                return sorted(cand, key=lambda c: (-c[0] if hi else c[0], c[1]))[0][2]
        return None

    def row(
        self,
        size: str,
        js: str,
        scope: str,
        m: str,
        eid: str,
        f: dict[str, Any],
        best: str | None,
        mask: np.ndarray,
    ) -> dict[str, Any]:
        """Entry ``eid``'s row of measure ``m`` (its figure ``f``), untested."""
        g = BY_NAME[m].gate
        verdict, why = (None, "")
        if g:
            verdict, why = g.verdict(f["value"], self.silence(eid, scope, m))
        return {
            "size_class": size,
            "judgment_set": js,
            "scope": scope,
            "family": "relevance" if m in RELEVANCE else "other",
            "entry": eid,
            "system": self.labels[eid],
            "measure": m,
            "baseline": eid in self.baselines,
            "floor": eid in self.floors,
            "value": f["value"],
            "n": f["n"],
            "denominator": f["denominator"],
            "ci95_lo": f["ci95"][0],
            "ci95_hi": f["ci95"][1],
            "gate": f"{g.op} {g.threshold:g}" if g else "",
            "gate_pass": verdict,
            "gate_why": why,
            "is_best": best == eid,
            "best": best,
            "diff": np.nan,
            "diff_ci95_lo": np.nan,
            "diff_ci95_hi": np.nan,
            "p_bootstrap": np.nan,
            "p_permutation": np.nan,
            "unit": None,
            "holders": None,
            "random_kept": _num(self.ordering(eid, mask).random_kept(MAX_FALSE_RECALL))
            if m == abstention.KEPT
            else None,
        }

    def test(
        self,
        row: dict[str, Any],
        js: str,
        scope: str,
        m: str,
        eid: str,
        best: str,
        mask: np.ndarray,
    ) -> None:
        """The paired test of entry ``eid`` against the ``best``, into its ``row``."""
        from ..paired import ordering_difference, paired_test

        if m in ORDERING_MEASURES:
            t = ordering_difference(
                self.ordering(eid, mask),
                self.ordering(best, mask),
                m,
                f"leaderboard|{scope}|{m}",
                max_false_recall=MAX_FALSE_RECALL,
                n_resamples=min(self.n_resamples, ORDERING_RESAMPLES),
                seed=self.seed,
            )
        else:
            t = paired_test(
                self.values[(eid, js, m)][mask],
                self.values[(best, js, m)][mask],
                f"leaderboard|{js}|{scope}|{m}",
                groups=self.holders[mask],
                n_resamples=self.n_resamples,
                seed=self.seed,
            )
        row.update(
            {
                k: t[k]
                for k in ("diff", "diff_ci95_lo", "diff_ci95_hi", "p_bootstrap", "p_permutation")
            }
        )
        # (an abstention-order statistic: its bootstrap draws items)
        row["unit"] = t.get("unit", "record")
        row["holders"] = t.get("holders")
        row["paired_n"] = t["n"]


def _holm_table(table: list[dict[str, Any]]) -> None:
    """Holm over the tests of one table's rows, one family per ``family``, into each row
    (``p_holm``, ``significant``)."""
    from ..paired import holm

    for fam in ("relevance", "other"):  # one Holm family per table shown
        block = [r for r in table if r["family"] == fam]
        # the abstention-order statistics have a bootstrap p only (package docstring)
        p = np.array(
            [
                r["p_bootstrap"] if r["measure"] in ORDERING_MEASURES else r["p_permutation"]
                for r in block
            ],
            dtype=float,
        )
        for r, a in zip(block, holm(p)):
            r["p_holm"] = float(a)
            r["significant"] = (
                bool(a < 0.05 and r["p_bootstrap"] < 0.05) if not np.isnan(a) else None
            )


#: paired bootstrap draws for the abstention-order statistics' tests against the best (each
#: draw re-orders every stratum: cheaper than 10,000, and enough for a 95% interval)
ORDERING_RESAMPLES = 2000


#: measures that depend on the cartridge thresholds: not shown for a calibration run
UNCALIBRATED_HIDDEN: tuple[str, ...] = tuple(
    m for m in MEASURES if BY_NAME[m].family == "cartridge"
)


def _calibration_run(entry: dict[str, Any]) -> bool:
    """A run whose cartridge is at the uncalibrated default threshold: made with ``--config
    calibration=none`` (what ``membench calibrate`` reads), or a system without a calibration
    file (its config says ``none (no calibration file)``)."""
    cfg = entry.get("config") or {}
    return isinstance(cfg, dict) and str(cfg.get("calibration", "")).startswith("none")


__all__ = [
    "BASELINE_MARK",
    "FLOOR_MARK",
    "ORDERING_RESAMPLES",
    "RANK_REASONS",
    "UNCALIBRATED_HIDDEN",
    "Leaderboard",
    "best_rows",
    "entry_label",
    "is_baseline",
    "is_floor",
    "leaderboard",
    "ran_text",
    "rank_reason",
    "unmarked",
]
