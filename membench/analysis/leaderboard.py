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
registry's ``per_judgment_set``) take the judgment set's values; the others (false recall,
abstention, holder and temporal correctness, latency) do not depend on it and are the same
under every set.

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
  other doubles but the no-memory baselines (they carry no card, below);
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

**The no-memory baselines** (``nothing`` and ``echo``, :mod:`membench.run.systems.doubles`:
registered test doubles that see no gold and carry a card, :func:`is_baseline`) are entries
too: their rows are shown under the ranked ones of every block, labelled "no-memory
baseline", as the floor every figure is read against (what silence, or echoing the question
into the memory, scores). They are never the best of a column and never tested against it;
``format_brief`` lists them after the tests. The other doubles carry no card and are refused.

**Silence cannot win.** The cartridge table (false recall, with the answerable abstention
beside it, the answerable share kept at false recall <= 0.10 and the abstention AUC:
:mod:`membench.metrics.abstention`) is ranked by ``answerable_kept@fr0.10``
(:data:`CARTRIDGE_RANK_BY`), on which a system that always abstains scores 0. Those two
statistics have no per-item values: an entry keeps each item's abstention score and whether
its cartridge was empty (``items.abstention``), and their tests against the best are paired
bootstraps of the statistic (:func:`membench.metrics.abstention.paired_difference`), whose
p Holm reads in place of the permutation p.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    ValidationError,
)

from ..core import progress
from ..core.atomic import atomic_write_json
from ..core.errors import InputError, MembenchError
from ..core.ids import id_problem, ids_problem
from ..core.jsonl import read_json_file, validation_error
from ..core.paths import resolve_user_path
from ..metrics import abstention
from ..metrics.aggregate import cost_entry, latency_entry, mean_entry, ordering_entries
from ..metrics.bootstrap import N_RESAMPLES, SEED, check_resamples
from ..metrics.measures import (
    BY_NAME,
    COST_PERCENTILES,
    JUDGMENT_MEASURES,
    LATENCY_PERCENTILES,
    MAX_FALSE_RECALL,
    MEAN_MEASURES,
    ORDERING_MEASURES,
)
from ..metrics.measures import MEASURES as MEASURES_REGISTRY
from ..metrics.rundir import RunDir
from ..modalities import MODALITIES
from ..run.cards import Card, card_path, read_card, size_class
from .tell_columns import label, sets_tells

FORMAT = 6         # 2: entries carry their sha256 (a store of format 1 is re-made); 3: the
#                    abstention beside false recall and the abstention-order statistics;
#                    4: what ran (identity, sealed) in the key; 5: false recall over the
#                    audited unanswerables, the natives with a tell in their own column
#                    (items.abstention.audited, native_tells); 6: the answer layer and the
#                    context cost shown beside latency (SHOWN_CONTEXT)
STORE_FILE = "store.json"
ENTRIES = "entries"
PRIMARY = "gold"
#: the measures the leaderboard shows and tests (latency is shown, not tested)
MEASURES: tuple[str, ...] = tuple(
    m for m in ("recall@1000", "recall@10", "mrr", "ndcg@10",
                *[x for x in JUDGMENT_MEASURES if x not in ("recall@1000", "recall@10", "mrr",
                                                          "ndcg@10", "recall@100",
                                                          "cartridge_recall")],
                "answerable_kept@fr0.10", "false_recall_rate", "false_recall_native",
                "abstain_rate_answerable", "abstention_auc", "holder_correctness",
                "temporal_correctness")
    if m in MEAN_MEASURES or m in ORDERING_MEASURES)
SHOWN_LATENCY = "latency_p50_ms"
#: the answer layer and the context cost, shown beside latency (never tested, never ranked
#: unless asked): does the cartridge hand the answer over, recall within 1024 tokens, and the
#: median tokens of a committed (non-empty) cartridge
SHOWN_CONTEXT: tuple[str, ...] = ("answer@cartridge", "answer@10", "recall@1024tok",
                                  "context_tokens_committed_p50")
#: the measures that follow the judgment set (one table per set) ...
RELEVANCE: tuple[str, ...] = tuple(m for m in MEASURES if m in JUDGMENT_MEASURES)
#: ... and the ones that do not (one table per size class, shown under gold)
OTHER: tuple[str, ...] = (*(m for m in MEASURES if m not in JUDGMENT_MEASURES), SHOWN_LATENCY,
                          *SHOWN_CONTEXT)
RANK_BY = "recall@1000"     # Q2D-Web's primary first-stage figure
#: the cartridge table's ranking: silence scores 0 on it
CARTRIDGE_RANK_BY = abstention.KEPT
_ID = re.compile(r"[0-9a-f]{16}")


class Refused(MembenchError):
    """Runs the store does not take: one line per run (``lines``)."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)
        super().__init__("; ".join(self.lines))


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str)


def _sha(obj: Any) -> str:
    return hashlib.sha256(_canonical(obj).encode("utf-8")).hexdigest()


def _num(v: float) -> float | None:
    return None if v is None or (isinstance(v, float) and np.isnan(v)) else float(v)


# ------------------------------------------------------------------------------ entries

def run_card(rd: RunDir) -> tuple[dict[str, Any] | None, str]:
    """The card a run recorded (meta.json ``card``: the runner takes it from what the system
    is, never from its name: :func:`membench.run.cards.card_for`); ``(None, why)`` when it
    has none, when the run does not say what ran (``identity``), or when its card takes the
    name of one of membench's registry cards and the system is not membench's own (a
    meta.json made so by hand)."""
    from ..run.cards import registry_claim

    identity = rd.meta.get("identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("kind"), str):
        return None, ("meta.json does not say what ran (no identity: a run made before "
                      "membench recorded it); run it again")
    rec = rd.meta.get("card")
    if not isinstance(rec, dict):
        why = rd.meta.get("card_refused")
        return None, (str(why) if why else
                      f"no model card: the system ({identity['kind']}) carries none; a card "
                      "comes from what a system is, not from its name (docs/cards.md)")
    body = {k: v for k, v in rec.items() if k != "sha256"}
    try:
        card = Card.model_validate(body)
    except Exception as e:      # noqa: BLE001 - pydantic's error, made one line
        return None, f"meta.json card is not a valid card ({str(e).splitlines()[0]})"
    why = registry_claim(card.name, identity["kind"])
    if why:
        return None, why
    return {**card.model_dump(mode="json"), "sha256": card.sha256()}, ""


#: what a baseline's label says after its name (:func:`is_baseline`)
BASELINE_MARK = " (no-memory baseline)"


def is_baseline(e: dict[str, Any]) -> bool:
    """An entry of a no-memory baseline (``nothing``, ``echo``: a registered test double that
    carries a card and sees no gold; the others carry none and are refused). Its row is shown
    under the ranked ones, as the floor every figure is read against; it is never the best of
    a column and never tested against it."""
    return (e.get("identity") or {}).get("kind") == "test double"


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


def _judgment_values(scores, name: str) -> dict[str, np.ndarray]:
    vals = {m: np.asarray(scores.values[m], dtype=np.float64) for m in MEAN_MEASURES}
    if name != PRIMARY:
        for m in JUDGMENT_MEASURES:
            vals[m] = np.asarray(scores.judgments[name][m], dtype=np.float64)
    return vals


def _context_entries(scores, mask: np.ndarray, key: str, **kw) -> dict[str, dict[str, Any]]:
    """The figures of :data:`SHOWN_CONTEXT` over the items of ``mask`` (null, n 0, when the
    run was scored without its content: metrics.json's ``answer_context`` says why)."""
    from ..metrics.aggregate import _cost_denominator

    out = {}
    for m in SHOWN_CONTEXT:
        if m in COST_PERCENTILES:
            per_item, q = COST_PERCENTILES[m]
            out[m] = cost_entry(np.asarray(scores.values[per_item], dtype=np.float64)[mask], q,
                                f"{key}|{m}", _cost_denominator(scores, mask, m), **kw)
        else:
            out[m] = mean_entry(np.asarray(scores.values[m], dtype=np.float64)[mask],
                                f"{key}|{m}", **kw)
    return out


def entry_from_run(run_dir: str | os.PathLike, sets_dir: str | os.PathLike | None = None, *,
                   final: bool = False, seed: int = SEED,
                   n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """A store entry from a run directory (see the module docstring), or :class:`Refused`
    with the one-line reason."""
    where = str(run_dir)
    try:
        rd = RunDir.open(run_dir, sets_dir, final=final)
    except MembenchError as e:
        raise Refused([f"{where}: refused: {e}"]) from None
    if rd.meta.get("sees_gold"):
        raise Refused([f"{where}: refused: the system saw the gold (a registered test double): "
                       "not a valid submission"])
    card, why = run_card(rd)
    if card is None:
        raise Refused([f"{where}: refused: {why}"])
    try:
        scores = rd.scores()
    except MembenchError as e:
        raise Refused([f"{where}: refused: {e}"]) from None
    sets = [PRIMARY, *sorted(scores.judgments)]
    mods = np.asarray(scores.modality, dtype=object)
    present = [m for m in MODALITIES if m in set(scores.modality)]
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    items: dict[str, dict[str, list]] = {}
    kw = {"seed": seed, "n_resamples": n_resamples}
    ordering = {}        # the abstention-order statistics do not depend on the judgment set
    for scope in [*present, "all"]:
        mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
        ordering[scope] = ordering_entries(scores, mask, f"leaderboard:{scope}", **kw)
    for js in sets:
        vals = _judgment_values(scores, js)
        block: dict[str, dict[str, Any]] = {}
        for scope in [*present, "all"]:
            mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
            block[scope] = {m: ordering[scope][m] if m in ORDERING_MEASURES else
                            mean_entry(vals[m][mask], f"leaderboard:{js}:{scope}|{m}", **kw)
                            for m in MEASURES}
            lat = LATENCY_PERCENTILES[SHOWN_LATENCY]
            block[scope][SHOWN_LATENCY] = latency_entry(
                np.asarray(scores.latency_ms, dtype=np.float64)[mask], lat,
                f"leaderboard:{js}:{scope}|{SHOWN_LATENCY}", **kw)
            block[scope].update(_context_entries(scores, mask, f"leaderboard:{js}:{scope}",
                                                 **kw))
        figures[js] = block
        items[js] = {m: [_num(v) for v in vals[m]] for m in MEASURES
                     if m not in ORDERING_MEASURES}
    meta = rd.meta
    identity = meta["identity"]
    key = {"card_sha256": card["sha256"], "config_sha256": _sha(meta.get("config")),
           "code_revision": str(meta.get("code_revision")),
           "set_sha256": dict(sorted((meta.get("set_sha256") or {}).items())),
           "identity_sha256": _sha(identity), "sealed": bool(meta.get("sealed"))}
    entry_id = _sha(key)[:16]
    from ..core.jsonl import sha256_file

    return sealed({
        "format": FORMAT, "id": entry_id, "key": key, "system": rd.system, "card": card,
        "identity": identity, "sealed": bool(meta.get("sealed")),
        "run_jsonl_sha256": sha256_file(rd.path / "run.jsonl"),
        "config": meta.get("config"), "split": rd.split,
        "selection": {"modalities": meta.get("modalities"), "limit": meta.get("limit"),
                      "queries": len(scores)},
        "truncation": meta.get("truncation"), "run_dir": str(rd.path),
        "run_started": meta.get("started"), "added": datetime.now(timezone.utc).isoformat(
            timespec="seconds"),
        "judgment_sets": sets, "figures": figures,
        "items": {"query_id": list(scores.query_id), "modality": list(scores.modality),
                  "values": items,
                  # per item: the abstention score (null for -inf: no score), whether the
                  # cartridge was empty and whether the item is audited (the abstention
                  # statistics leave the natives with a tell out), for their paired tests
                  "abstention": {"score": [_num(v) if np.isfinite(v) else None
                                           for v in scores.abstention_score],
                                 "abstained": [bool(c == 0) for c in scores.cartridge_size],
                                 "answerable": [bool(a) for a in scores.answerable],
                                 "audited": [bool(a) for a in scores.audited]}},
        # the strength of the upstream tells, from the audit of the run's sets: the label of
        # the natives' false-recall column
        "native_tells": sets_tells(rd.sets_dir),
    })


def entry_sha256(entry: dict[str, Any]) -> str:
    """The sha256 of an entry's canonical JSON (sorted keys, no whitespace) without its own
    ``sha256`` field."""
    return _sha({k: v for k, v in entry.items() if k != "sha256"})


def sealed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with its ``sha256`` (:func:`entry_sha256`), as the store writes it. The
    canonical JSON is of the entry as written and read back (JSON numbers and lists)."""
    body = json.loads(json.dumps({k: v for k, v in entry.items() if k != "sha256"},
                                 allow_nan=False))
    return {**body, "sha256": entry_sha256(body)}


def tampered(entry: dict[str, Any]) -> str | None:
    """Why ``entry`` is not what the store wrote (``None`` when it is): no or another
    ``sha256`` than its content's, a mean figure that is not the mean of its per-item
    values over its scope (or another n), or an abstention-order figure that its items'
    abstention scores do not give."""
    digest = entry.get("sha256")
    if not isinstance(digest, str):
        return "it carries no sha256 (written by an older membench, or edited)"
    if digest != entry_sha256(entry):
        return "its content does not hash to its sha256 (edited after it was written)"
    items = entry["items"]
    mods = np.asarray(items.get("modality") or [], dtype=object)
    for js, block in (entry.get("figures") or {}).items():
        per = (items.get("values") or {}).get(js) or {}
        for scope, figs in (block or {}).items():
            mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
            for m in MEASURES:
                f = (figs or {}).get(m)
                if f is None or m not in per:
                    continue
                v = np.array([np.nan if x is None else x for x in per[m]], dtype=float)[mask]
                v = v[~np.isnan(v)]
                value = float(v.mean()) if v.size else None
                if f.get("n") != v.size or (value is None) != (f.get("value") is None) or (
                        value is not None and not np.isclose(f["value"], value, rtol=1e-12,
                                                             atol=0.0)):
                    return (f"figures.{js}.{scope}.{m}: value {f.get('value')!r} n "
                            f"{f.get('n')!r}, but its per-item values give {value!r} n "
                            f"{v.size}")
    ab = items["abstention"]
    score = np.array([-np.inf if x is None else x for x in ab["score"]], dtype=float)
    kept, ans = ~np.array(ab["abstained"], dtype=bool), np.array(ab["answerable"], dtype=bool)
    audited = np.array(ab["audited"], dtype=bool)
    given: dict[tuple[str, str], tuple[float | None, int]] = {}
    for js, block in (entry.get("figures") or {}).items():
        for scope, figs in (block or {}).items():
            for m in ORDERING_MEASURES:
                f = (figs or {}).get(m)
                if f is None:
                    continue
                if (scope, m) not in given:
                    mask = (np.ones(len(mods), bool) if scope == "all" else mods == scope) \
                        & audited
                    o = abstention.Ordering(score[mask], kept[mask], ans[mask], mods[mask])
                    x = float(abstention.statistic(o, m, MAX_FALSE_RECALL)[0])
                    given[(scope, m)] = (None if np.isnan(x) else x, o.counted(m))
                value, n = given[(scope, m)]
                if f.get("n") != n or (value is None) != (f.get("value") is None) or (
                        value is not None and not np.isclose(f["value"], value, rtol=1e-12,
                                                             atol=0.0)):
                    return (f"figures.{js}.{scope}.{m}: value {f.get('value')!r} n "
                            f"{f.get('n')!r}, but its items' abstention scores give "
                            f"{value!r} n {n}")
    return None


def _store_record(entry: dict[str, Any]) -> dict[str, Any]:
    ids = entry["items"]["query_id"]
    return {"format": FORMAT, "split": entry["split"],
            "set_sha256": entry["key"]["set_sha256"], "selection": entry["selection"],
            "queries_sha256": hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest()}


def _mismatch(store: dict[str, Any], rec: dict[str, Any]) -> str | None:
    if rec["split"] != store["split"]:
        return f"a {rec['split']} run, the store holds {store['split']} runs"
    a, b = store["set_sha256"], rec["set_sha256"]
    if a != b:
        diff = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
        return (f"made on other set files than the store's ({', '.join(diff)} differ by "
                "sha256): a store holds runs on one version of the sets; use another --out")
    if rec["queries_sha256"] != store["queries_sha256"]:
        s, r = store["selection"], rec["selection"]
        return (f"evaluates other queries ({r['queries']}: modalities {r['modalities']}, limit "
                f"{r['limit']}) than the store's ({s['queries']}: modalities {s['modalities']}, "
                f"limit {s['limit']}): systems are compared on the same items; use another "
                "--out")
    return None


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Selection(_Open):
    modalities: list[StrictStr] | None = None
    limit: StrictInt | None = None
    queries: StrictInt


class _StoreFile(_Open):
    format: StrictInt
    split: StrictStr
    set_sha256: dict[StrictStr, StrictStr]
    selection: _Selection
    queries_sha256: StrictStr


class _Key(_Open):
    card_sha256: StrictStr
    config_sha256: StrictStr
    code_revision: StrictStr
    set_sha256: dict[StrictStr, StrictStr]
    identity_sha256: StrictStr
    sealed: StrictBool


_Num = Annotated[StrictFloat, Field(allow_inf_nan=False)]     # what the store writes


class _Figure(_Open):
    value: _Num | None
    n: StrictInt
    denominator: StrictInt
    ci95: tuple[_Num | None, _Num | None]


class _Abstention(_Open):
    score: list[_Num | None]        # null: -inf (no score)
    abstained: list[StrictBool]
    answerable: list[StrictBool]
    audited: list[StrictBool]       # false: a native with an upstream tell


class _Items(_Open):
    query_id: list[StrictStr]
    modality: list[StrictStr]
    values: dict[StrictStr, dict[StrictStr, list[_Num | None]]]
    abstention: _Abstention


class _Entry(_Open):
    """The shape of an entry file, what :func:`read_store` and :func:`leaderboard` read
    (every other field is kept as written and covered by the entry's sha256)."""

    id: StrictStr
    key: _Key
    system: StrictStr
    card: dict[StrictStr, Any]
    split: StrictStr
    selection: _Selection
    figures: dict[StrictStr, dict[StrictStr, dict[StrictStr, _Figure]]]
    items: _Items
    judgment_sets: list[StrictStr]
    identity: dict[StrictStr, Any]
    sealed: StrictBool
    native_tells: dict[StrictStr, _Num | None]      # source -> the tell's ROC AUC
    run_dir: StrictStr | None = None
    config: Any = None


#: what a store of an older format lacks (said when it is refused)
_FORMAT_CHANGES: dict[int, str] = {
    4: "false recall over the audited unanswerables only, the natives with a tell in their "
       "own column (format 5); the answer layer and the context cost (format 6)",
    5: "the answer layer and the context cost beside latency (answer@cartridge, answer@10, "
       "recall@1024tok, context_tokens_committed_p50: format 6)",
}


def read_store(store_dir: str | os.PathLike) -> tuple[dict[str, Any] | None, list[dict]]:
    """``store.json`` (``None`` for a new store) and every entry, checked: the shape of each
    file (a located ``STORE`` error naming the field), each entry file named by its id, its id
    its key's, its identifiers identifiers, its card valid, its sha256 and figures its own
    (:func:`tampered`: else ``STORE_TAMPERED``), and it agrees with ``store.json``."""
    d = resolve_user_path(store_dir)
    sf = d / STORE_FILE
    if not sf.exists():
        if (d / ENTRIES).is_dir() and any((d / ENTRIES).glob("*.json")):
            raise InputError(sf, None, None, "entries without store.json: not a store "
                             "`membench leaderboard` wrote", rule="STORE")
        return None, []
    store = read_json_file(sf, dict, "a leaderboard store.json (a JSON object)")
    if "format" in store and store["format"] != FORMAT:
        why = _FORMAT_CHANGES.get(store["format"]) if isinstance(store["format"], int) else None
        raise InputError(sf, None, "format", f"{str(store['format'])[:40]}, this membench "
                         f"reads {FORMAT} (re-make the store: membench leaderboard --runs ...)"
                         + (f"; since then: {why}" if why else ""), rule="STORE")
    _shape(_StoreFile, store, sf)
    entries = []
    for p in sorted((d / ENTRIES).glob("*.json")):
        e = read_json_file(p, dict, "a leaderboard entry (a JSON object)")
        _shape(_Entry, e, p)
        if not (_ID.fullmatch(e["id"]) and p.stem == e["id"]):
            raise InputError(p, None, "id", f"{e['id'][:40]!r}: an entry's file is named "
                             "by its id", rule="STORE")
        if _sha(e["key"])[:16] != e["id"]:
            raise InputError(p, None, "key", "does not hash to the entry's id (edited?)",
                             rule="STORE")
        for what, v in (("system", e["system"]),
                        *((f"judgment_sets[{i}]", js) for i, js in enumerate(e["judgment_sets"]))):
            why = id_problem(v)
            if why:
                raise InputError(p, None, what, why, rule="ID")
        try:
            card = Card.model_validate({k: v for k, v in e["card"].items() if k != "sha256"})
        except Exception as err:  # noqa: BLE001
            raise InputError(p, None, "card", str(err).splitlines()[0], rule="STORE") from None
        if card.sha256() != e["key"]["card_sha256"]:
            raise InputError(p, None, "card", "its sha256 is not the key's card_sha256",
                             rule="STORE")
        if _sha(e["identity"]) != e["key"]["identity_sha256"] or \
                e["sealed"] != e["key"]["sealed"]:
            raise InputError(p, None, "identity", "the identity or the sealed flag is not the "
                             "key's (edited?)", rule="STORE")
        ids = e["items"]["query_id"]
        if len(ids) != len(e["items"]["modality"]):
            raise InputError(p, None, "items", "query_id and modality lists differ",
                             rule="STORE")
        bad = ids_problem(ids)
        if bad:
            raise InputError(p, None, f"items.query_id[{bad[0]}]", bad[1], rule="ID")
        if len(set(ids)) != len(ids):
            raise InputError(p, None, "items.query_id", "a query listed twice", rule="STORE")
        for js, per in e["items"]["values"].items():
            for m, vals in per.items():
                if len(vals) != len(ids):
                    raise InputError(p, None, f"items.values.{js}.{m}"[:80],
                                     f"{len(vals)} values for {len(ids)} queries", rule="STORE")
        for k, vals in e["items"]["abstention"].items():
            if len(vals) != len(ids):
                raise InputError(p, None, f"items.abstention.{k}",
                                 f"{len(vals)} values for {len(ids)} queries", rule="STORE")
        if set(e["judgment_sets"]) != set(e["figures"]) or \
                set(e["judgment_sets"]) != set(e["items"]["values"]):
            raise InputError(p, None, "judgment_sets", "figures and per-item values are not "
                             "given for the same judgment sets", rule="STORE")
        why = _mismatch(store, _store_record(e))
        if why:
            raise InputError(p, None, None, f"does not belong to this store: {why}",
                             rule="STORE")
        why = tampered(e)
        if why:
            raise InputError(p, None, None, f"tampered: {why}; its figures are not shown: "
                             f"delete {p.name} and add its run again (membench leaderboard "
                             f"--runs RUN_DIR --out {d})", rule="STORE_TAMPERED")
        entries.append(e)
    return store, entries


def _shape(model: type[BaseModel], obj: dict, path: Path) -> None:
    """``obj`` checked against ``model``: a located ``STORE`` error naming the field."""
    try:
        model.model_validate(obj)
    except ValidationError as err:
        e = validation_error(path, None, err)
        raise InputError(path, None, e.field, e.message, rule="STORE") from None


@dataclass
class Added:
    out: Path
    added: list[dict[str, Any]]            # id, system, run_dir, replaced
    entries: int


def add_runs(run_dirs: list[str | os.PathLike], out: str | os.PathLike,
             sets_dir: str | os.PathLike | None = None, *, final: bool = False,
             seed: int = SEED, n_resamples: int = N_RESAMPLES) -> Added:
    """Add runs to the store ``out`` (created if new). Every run is checked first; if any is
    refused, :class:`Refused` lists them all (one line each) and nothing is written."""
    check_resamples(n_resamples)
    out = resolve_user_path(out)
    if out.exists() and not out.is_dir():
        raise MembenchError(f"{out}: --out must be a folder (the result store)")
    if not run_dirs:
        raise MembenchError("leaderboard: no run directory given (--runs RUN_DIR ...)")
    store, existing = read_store(out)
    refused: list[str] = []
    fresh: list[dict[str, Any]] = []
    made: list[tuple[Any, dict[str, Any]]] = []
    seen: dict[str, str] = {}
    with progress.step("leaderboard: figures of each run", total=len(run_dirs),
                       unit="run") as bar:
        for r in run_dirs:
            bar.note(str(r))
            try:
                e = entry_from_run(r, sets_dir, final=final, seed=seed,
                                   n_resamples=n_resamples)
            except Refused as x:
                refused.extend(x.lines)
                continue
            finally:
                bar.advance()
            made.append((r, e))
    for r, e in made:
        rec = _store_record(e)
        if store is None:
            store = rec
        why = _mismatch(store, rec)
        if why:
            refused.append(f"{r}: refused: {why}")
            continue
        if e["id"] in seen:
            refused.append(f"{r}: refused: the same entry as {seen[e['id']]} (same card, "
                           "config, code revision and sets): give it once")
            continue
        seen[e["id"]] = str(r)
        fresh.append(e)
    if refused:
        raise Refused(refused)
    assert store is not None
    (out / ENTRIES).mkdir(parents=True, exist_ok=True)
    old = {e["id"] for e in existing}
    for e in fresh:
        atomic_write_json(out / ENTRIES / f"{e['id']}.json", e, indent=1, sort_keys=True,
                          allow_nan=False)
    atomic_write_json(out / STORE_FILE, store, indent=1, sort_keys=True)
    return Added(out, [{"id": e["id"], "system": e["system"], "run_dir": e["run_dir"],
                        "replaced": e["id"] in old} for e in fresh],
                 len(old | {e["id"] for e in fresh}))


# ------------------------------------------------------------------------------ tables

def entry_label(e: dict[str, Any], all_entries: list[dict[str, Any]]) -> str:
    """``system (card)``; where one system and card appear in several entries (another config
    or code revision), with the run directory's name, and the entry id if that is shared too."""
    card = e["card"]["name"]
    base = e["system"] if card == e["system"] else f"{e['system']} ({card})"
    twins = [x for x in all_entries if x["system"] == e["system"]
             and x["card"]["name"] == card]
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
    labels: dict[str, str]                  # entry id -> label
    rows: Any                               # long DataFrame (see leaderboard())
    rank_by: str = RANK_BY
    notes: list[str] = field(default_factory=list)
    verified: dict[str, dict[str, Any]] = field(default_factory=dict)  # entry id -> verify

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
        0)."""
        if family == "other":
            return self.rank_by if self.rank_by in OTHER else CARTRIDGE_RANK_BY
        return self.rank_by if self.rank_by in RELEVANCE else RANK_BY

    def table(self, size: str, judgment_set: str, scope: str | None = None,
              family: str | None = None):
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
                ["baseline", "value", "system"],
                ascending=[True, BY_NAME[self.rank_by].direction == "lower", True],
                na_position="last")["entry"]
            for eid in order:
                row: dict[str, Any] = {"scope": scope, "system": self.labels[eid],
                                       "ran": self.ran(eid), "verified": self.verify_text(eid)}
                cells = g[g["entry"] == eid].set_index("measure")
                card = next(e["card"] for e in self.entries if e["id"] == eid)
                row["parameters"] = card["parameter_count"]
                for m in [*MEASURES, SHOWN_LATENCY, *SHOWN_CONTEXT]:
                    if m not in cells.index:
                        continue
                    c = cells.loc[m]
                    row[m] = cell_text(c, digits=1 if m.startswith(("latency", "context"))
                                       else digits)
                out.append(row)
        return pd.DataFrame(out)


def gate_text(c) -> str:
    """A leaderboard cell's gate verdict: ``PASS``, ``FAIL`` or ``FAIL (silent)`` (its
    ``gate_why`` says why)."""
    if c.get("gate_why"):
        return "FAIL (silent)"
    return "PASS" if c["gate_pass"] else "FAIL"


#: why a measure orders the leaderboard's rows, for the measures that have been chosen to
#: (page 06 says it beside the ranking; :func:`rank_reason`)
RANK_REASONS: dict[str, str] = {
    "recall@1000": "a first-stage measure: is the evidence retrieved at all, at a depth a "
                   "reranker or a cartridge could still use it? It orders the systems by what "
                   "they can find, the question Q2D-Web's leaderboard ranks by. Whether the "
                   "evidence is at the top is recall@10's question (the gated one) and nDCG@10's",
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
    first = m.definition.split(". ")[0].rstrip(".")        # its first sentence
    text = (f"Rows are ordered by {rank_by} ({first}; {m.citation})"
            + (f": {why}." if why else "."))
    text += (f" It is gated ({m.gate.op} {m.gate.threshold:g})." if m.gate else
             " It is not gated.")
    if gated:
        text += (f" The gated measures ({', '.join(gated)}) are columns beside it: each "
                 "column marks its own best system and tests every other one against it, so a "
                 "system can head the order and still fail a gate. Read the column of the "
                 "question you have (the best per headline measure is listed above the tables).")
    return text


def best_rows(lb: Leaderboard, size: str, *, judgment_set: str = PRIMARY,
              scope: str = "all") -> list[dict[str, Any]]:
    """Per headline measure of the registry that the table shows: the best system with its
    value, 95% interval and n, and every other system's difference from it with the Holm
    p and whether it is significant (the leaderboard's own tests)."""
    from ..metrics.measures import HEADLINE

    t = lb.table(size, judgment_set, scope)
    out = []
    for m in HEADLINE:
        g = t[t["measure"] == m]
        if g.empty or not g["is_best"].any():
            continue
        b = g[g["is_best"]].iloc[0]
        others = []
        others, floor = [], []
        for r in g[~g["is_best"]].sort_values("system").to_dict("records"):
            if r.get("baseline"):           # shown beside, never tested (is_baseline)
                floor.append({"system": r["system"].removesuffix(BASELINE_MARK),
                              "value": _num(r["value"])})
                continue
            p = r.get("p_holm")
            others.append({"system": r["system"], "value": _num(r["value"]),
                           "diff": _num(r.get("diff")),
                           "p_holm": None if p is None or np.isnan(p) else float(p),
                           "significant": bool(r.get("significant"))})
        out.append({"measure": m, "direction": BY_NAME[m].direction, "best": b["system"],
                    "value": _num(b["value"]), "ci95": [_num(b["ci95_lo"]), _num(b["ci95_hi"])],
                    "n": int(b["n"]), "others": others, "baselines": floor})
    return out


def _p(p: float | None) -> str:
    return "-" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def format_brief(lb: Leaderboard) -> str:
    """A few lines for a log: per size class, the best system per headline measure over all
    items (gold), and each other system as ``= best`` (not significantly different after
    Holm) or its difference and Holm p. Page 06 has every table."""
    lines = [(f"{len(lb.entries)} entries, {lb.store['split']} split, "
              f"{lb.store['selection']['queries']} queries; best per headline measure over "
              "all items (gold judgments; paired tests against the best, Holm):")]
    for size in lb.size_classes:
        lines.append(f"  size {size}")
        for b in best_rows(lb, size):
            digits = 1 if b["measure"].startswith("latency") else 3
            rest = ", ".join(
                f"{o['system']} " + (f"{o['diff']:+.{digits}f} (p_holm {_p(o['p_holm'])})"
                                     if o["significant"] else
                                     f"= best (p_holm {_p(o['p_holm'])})" if o["p_holm"]
                                     is not None else "not tested")
                for o in b["others"])
            v = "n/a" if b["value"] is None else f"{b['value']:.{digits}f}"
            floor = ", ".join(f"{f['system']} " + ("n/a" if f["value"] is None else
                                                   f"{f['value']:.{digits}f}")
                              for f in b["baselines"])
            lines.append(f"    {b['measure']:<24} {b['best']} {v} (n={b['n']})"
                         + (f"; {rest}" if rest else "")
                         + (f"; no memory: {floor}" if floor else ""))
    lines += [f"note: {n}" for n in lb.notes]
    return "\n".join(lines) + "\n"


def verify_text(v: dict[str, Any] | None) -> str:
    """``verified``, ``differs (first: QUERY ...)``, ``not re-runnable (why)`` or ``not
    verified`` (no ``membench verify`` result for the entry)."""
    if not v:
        return "not verified"
    st = v.get("status")
    if st == "verified":
        return f"verified ({v.get('compared', '?')} queries)"
    if st == "differs":
        return f"differs ({v.get('detail', '')})"
    return f"not re-runnable ({v.get('detail', '')})"


def cell_text(c, digits: int = 3) -> str:
    """One leaderboard cell as text (what :meth:`Leaderboard.wide` shows)."""
    def missing(v) -> bool:
        return v is None or (isinstance(v, float) and np.isnan(v))

    def p_text(p: float) -> str:
        return "<0.001" if p < 0.001 else f"{p:.3f}"

    if missing(c["value"]):
        return f"n/a (n={int(c['n'])})"
    s = f"{c['value']:.{digits}f}"
    if not (missing(c["ci95_lo"]) or missing(c["ci95_hi"])):
        s += f" [{c['ci95_lo']:.{digits}f}, {c['ci95_hi']:.{digits}f}]"
    s += f" n={int(c['n'])}"
    if isinstance(c.get("gate"), str) and c["gate"]:
        s += f" gate {c['gate']} {gate_text(c)}"
    if c.get("is_best"):
        s += " · best"
    elif not (c.get("p_holm") is None or np.isnan(c["p_holm"])):
        if c["significant"]:
            s += f" · {c['diff']:+.{digits}f} vs best (p_holm {p_text(c['p_holm'])})"
        else:
            s += f" · = best (p_holm {p_text(c['p_holm'])})"
    return s


def leaderboard(store_dir: str | os.PathLike, *, rank_by: str = RANK_BY,
                n_resamples: int = 10_000, seed: int = SEED) -> Leaderboard:
    """The leaderboard of a result store (see the module docstring).

    ``rows`` has one row per (size class, judgment set, scope, entry, measure): ``value``,
    ``n``, ``denominator``, ``ci95_lo`` / ``ci95_hi``, ``gate`` (e.g. ``">= 0.9"``) and
    ``gate_pass``, ``is_best``, ``best`` (the best entry's id), and against the best ``diff``
    (this minus best, on the items both define), ``diff_ci95_lo`` / ``diff_ci95_hi`` (paired
    bootstrap), ``p_permutation``, ``p_holm`` (Holm over every test of one table) and
    ``significant`` (``p_holm < 0.05`` and the bootstrap p < 0.05). ``family`` is
    ``relevance`` for the measures that follow the judgment set (one table per size class and
    set) and ``other`` for the rest (false recall, holder and temporal correctness, latency:
    one table per size class, listed under ``gold``)."""
    with progress.step("leaderboard: paired tests against the best", unit="table") as bar:
        return _leaderboard(store_dir, rank_by, n_resamples, seed, bar)


def _leaderboard(store_dir: str | os.PathLike, rank_by: str, n_resamples: int, seed: int,
                 bar: progress.Step) -> Leaderboard:
    import pandas as pd

    from .compare import holm, paired_test

    check_resamples(n_resamples, "--resamples")
    store, entries = read_store(store_dir)
    if store is None or not entries:
        raise MembenchError(f"{resolve_user_path(store_dir)}: an empty result store; add runs "
                            "with `membench leaderboard --runs RUN_DIR ... --out DIR`")
    rankable = [m for m in MEASURES if BY_NAME[m].ranked]
    if rank_by not in rankable:
        raise MembenchError(f"--rank-by {rank_by!r}: one of {', '.join(rankable)}")
    labels = {e["id"]: entry_label(e, entries) + (BASELINE_MARK if is_baseline(e) else "")
              for e in entries}
    baselines = {e["id"] for e in entries if is_baseline(e)}
    order = entries[0]["items"]["query_id"]
    pos = {q: i for i, q in enumerate(order)}
    mods = np.asarray(entries[0]["items"]["modality"], dtype=object)
    values: dict[tuple[str, str, str], np.ndarray] = {}
    abst: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
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

    def ordering(eid: str, mask: np.ndarray) -> abstention.Ordering:
        score, kept, ans, aud = abst[eid]
        keep = mask & aud                   # the audited items only
        return abstention.Ordering(score[keep], kept[keep], ans[keep], mods[keep])
    notes = []
    for e in entries:
        if _calibration_run(e):
            notes.append(f"{labels[e['id']]}: its cartridge is at the uncalibrated default "
                         "threshold (a calibration run, or no calibration file): no cartridge "
                         "figures shown")
    sets = sorted({js for e in entries for js in e["judgment_sets"]},
                  key=lambda s: (s != PRIMARY, s))
    rows: list[dict[str, Any]] = []
    bar.set_total(len(sets) * len({size_class(int(e["card"]["parameter_count"]))
                                   for e in entries}))
    for size in ("<=1B", ">1B"):
        members = [e for e in entries if size_class(int(e["card"]["parameter_count"])) == size]
        if not members:
            continue
        for js in sets:
            bar.note(f"size {size}, judgment set {js}")
            have = [e for e in members if js in e["judgment_sets"]]
            if len(have) < len(members):
                notes.append(f"{size}, {js}: {len(members) - len(have)} entr(y/ies) carry no "
                             f"{js} judgments and are left out of its table")
            start = len(rows)
            shown = [*RELEVANCE, *(OTHER if js == PRIMARY else ())]
            for scope in [*[m for m in MODALITIES if m in set(mods)], "all"]:
                mask = np.ones(len(order), bool) if scope == "all" else mods == scope
                for m in shown:
                    meas = BY_NAME[m]
                    figs = {e["id"]: None if m in UNCALIBRATED_HIDDEN and _calibration_run(e)
                            else e["figures"][js].get(scope, {}).get(m) for e in have}
                    best = None
                    if m in MEASURES and meas.ranked:
                        cand = [(figs[i]["value"], labels[i], i) for i in figs
                                if figs[i] and figs[i]["value"] is not None
                                and i not in baselines]
                        if cand:
                            hi = meas.direction == "higher"
                            best = sorted(cand, key=lambda c: (-c[0] if hi else c[0], c[1]))[0][2]
                    for e in have:
                        f = figs[e["id"]]
                        if f is None:
                            continue
                        g = meas.gate
                        verdict, why = (None, "")
                        if g:
                            comp = (e["figures"][PRIMARY].get(scope, {}).get(g.silent_if[0])
                                    or {}).get("value") if g.silent_if else None
                            verdict, why = g.verdict(f["value"], comp)
                        row = {"size_class": size, "judgment_set": js, "scope": scope,
                               "family": "relevance" if m in RELEVANCE else "other",
                               "entry": e["id"], "system": labels[e["id"]], "measure": m,
                               "baseline": e["id"] in baselines,
                               "value": f["value"], "n": f["n"],
                               "denominator": f["denominator"], "ci95_lo": f["ci95"][0],
                               "ci95_hi": f["ci95"][1],
                               "gate": f"{g.op} {g.threshold:g}" if g else "",
                               "gate_pass": verdict, "gate_why": why,
                               "is_best": best == e["id"], "best": best,
                               "diff": np.nan, "diff_ci95_lo": np.nan, "diff_ci95_hi": np.nan,
                               "p_bootstrap": np.nan, "p_permutation": np.nan}
                        if best is not None and best != e["id"] and f["value"] is not None \
                                and e["id"] not in baselines:
                            if m in ORDERING_MEASURES:
                                t = abstention.paired_difference(
                                    ordering(e["id"], mask), ordering(best, mask), m,
                                    f"leaderboard|{scope}|{m}",
                                    max_false_recall=MAX_FALSE_RECALL,
                                    n_resamples=min(n_resamples, ORDERING_RESAMPLES), seed=seed)
                            else:
                                t = paired_test(values[(e["id"], js, m)][mask],
                                                values[(best, js, m)][mask],
                                                f"leaderboard|{js}|{scope}|{m}",
                                                n_resamples=n_resamples, seed=seed)
                            row.update({k: t[k] for k in ("diff", "diff_ci95_lo",
                                                          "diff_ci95_hi", "p_bootstrap",
                                                          "p_permutation")})
                            row["paired_n"] = t["n"]
                        rows.append(row)
            for fam in ("relevance", "other"):       # one Holm family per table shown
                block = [r for r in rows[start:] if r["family"] == fam]
                # the abstention-order statistics have a bootstrap p only (module docstring)
                p = np.array([r["p_bootstrap"] if r["measure"] in ORDERING_MEASURES
                              else r["p_permutation"] for r in block], dtype=float)
                for r, a in zip(block, holm(p)):
                    r["p_holm"] = float(a)
                    r["significant"] = bool(a < 0.05 and r["p_bootstrap"] < 0.05) \
                        if not np.isnan(a) else None
            bar.advance()
    df = pd.DataFrame(rows)
    from .verify import read_verifications

    return Leaderboard(store, entries, labels, df, rank_by, notes,
                       read_verifications(store_dir, entries))


#: paired bootstrap draws for the abstention-order statistics' tests against the best (each
#: draw re-orders every stratum: cheaper than 10,000, and enough for a 95% interval)
ORDERING_RESAMPLES = 2000


#: measures that depend on the cartridge thresholds: not shown for a calibration run
UNCALIBRATED_HIDDEN: tuple[str, ...] = tuple(m for m in MEASURES
                                             if BY_NAME[m].family == "cartridge")


def _calibration_run(entry: dict[str, Any]) -> bool:
    """A run whose cartridge is at the uncalibrated default threshold: made with ``--config
    calibration=none`` (what ``membench calibrate`` reads), or a system without a calibration
    file (its config says ``none (no calibration file)``)."""
    cfg = entry.get("config") or {}
    return isinstance(cfg, dict) and str(cfg.get("calibration", "")).startswith("none")


def format_leaderboard(lb: Leaderboard, *, scopes: tuple[str, ...] = ("all",),
                       measures: tuple[str, ...] = ("recall@1000", "recall@10", "ndcg@10",
                                                    "answerable_kept@fr0.10",
                                                    "false_recall_rate", "false_recall_native",
                                                    "abstain_rate_answerable")) -> str:
    """Plain text for the command line: per size class and judgment set, the chosen scopes'
    rows with value [CI] n and the comparison with the best (the two false recalls named as
    :func:`membench.analysis.tell_columns.label`: audited, and the natives with a tell with
    the tell's ROC AUC)."""
    lines = [f"{len(lb.entries)} entries; {lb.store['split']} split, "
             f"{lb.store['selection']['queries']} queries; ranked by {lb.rank_by}; paired tests "
             "against the best of each column, Holm over each table"]
    for size in lb.size_classes:
        for js in lb.judgment_sets:
            w = lb.wide(size, js)
            if w.empty:
                continue
            w = w[w["scope"].isin(scopes)]
            lines.append(f"\n== size {size}, judgment set {js}")
            for r in w.to_dict("records"):
                lines.append(f"  {r['scope']:<13} {r['system']}  [{r['ran']}; {r['verified']}]")
                for m in measures:
                    if m in r and isinstance(r[m], str):
                        lines.append(f"      {label(m, lb.tells):<20} {r[m]}")
    lines += [f"note: {n}" for n in lb.notes]
    return "\n".join(lines) + "\n"


def format_markdown(lb: Leaderboard, *, scope: str = "all",
                    measures: tuple[str, ...] = ("recall@1000", "recall@10", "ndcg@10",
                                                 "answerable_kept@fr0.10", "false_recall_rate",
                                                 "false_recall_native",
                                                 "abstain_rate_answerable")) -> str:
    """A Markdown table (README): one row per size class, judgment set and system over
    ``scope``; each cell value [95% CI], ``best``, or the difference from the best with its
    Holm p (``=`` when not significant), gates as PASS / FAIL. Measures that do not follow the
    judgment set are shown in the ``gold`` rows only. Columns are named as
    :func:`membench.analysis.tell_columns.label`: the audited false recall, and the natives
    with a tell labelled with the tell's ROC AUC (never ranked, never tested)."""
    def cell(c) -> str:
        if c is None or c["value"] is None or (isinstance(c["value"], float)
                                               and np.isnan(c["value"])):
            return "—"
        s = f"{c['value']:.3f} [{c['ci95_lo']:.3f}, {c['ci95_hi']:.3f}]"
        if c["gate"]:
            s += f" {gate_text(c)}"
        if c["is_best"]:
            return s + " best"
        p = c["p_holm"]
        if p is None or np.isnan(p):        # a report-only measure: never tested
            return s
        ptxt = "<0.001" if p < 0.001 else f"{p:.3f}"
        return s + (f" ({c['diff']:+.3f}, p {ptxt})" if c["significant"] else f" (=, p {ptxt})")

    head = ("| size | judgment set | system | ran | verified | parameters | n | "
            + " | ".join(label(m, lb.tells) for m in measures) + " |")
    out = [head, "|" + "---|" * (7 + len(measures))]
    for size in lb.size_classes:
        for js in lb.judgment_sets:
            t = lb.table(size, js, scope)
            if t.empty:
                continue
            gold = lb.table(size, PRIMARY, scope)
            rank = t[t["measure"] == lb.rank_by].sort_values(
                ["baseline", "value", "system"],
                ascending=[True, BY_NAME[lb.rank_by].direction == "lower", True])
            for r in rank.to_dict("records"):
                cells = []
                for m in measures:
                    src = t if m in RELEVANCE else (gold if js == PRIMARY else None)
                    row = None if src is None else src[(src["entry"] == r["entry"])
                                                       & (src["measure"] == m)]
                    cells.append(cell(row.iloc[0]) if row is not None and len(row) else "—")
                card = next(e["card"] for e in lb.entries if e["id"] == r["entry"])
                out.append(f"| {size} | {js} | {r['system']} | {lb.ran(r['entry'])} | "
                           f"{lb.verify_text(r['entry'])} | "
                           f"{int(card['parameter_count']):,} | {int(r['n'])} | "
                           + " | ".join(cells) + " |")
    return "\n".join(out)


__all__ = ["CARTRIDGE_RANK_BY", "FORMAT", "MEASURES", "RANK_BY", "RANK_REASONS", "Added",
           "Leaderboard", "Refused", "add_runs", "best_rows", "cell_text", "entry_from_run",
           "entry_sha256", "format_brief", "format_leaderboard", "format_markdown", "gate_text",
           "leaderboard", "ran_text", "rank_reason", "read_store", "run_card", "sealed",
           "tampered", "verify_text"]
