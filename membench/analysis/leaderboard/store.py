"""The leaderboard's result store: an entry from a run (:func:`entry_from_run`, refused runs
:class:`Refused`), its seal (:func:`sealed`, :func:`entry_sha256`) and the check that it is
what the store wrote (:func:`tampered`), the shapes of ``store.json`` and of an entry file,
reading a store (:func:`read_store`) and adding runs to it (:func:`add_runs`). The layout, the
identity of an entry and what is refused are in :mod:`membench.analysis.leaderboard`.

Reads run directories (:class:`membench.metrics.rundir.RunDir`: meta.json, run.jsonl, the
sets' audit for the tells) and a store folder (``store.json``, ``entries/<id>.json``); writes
the store (:func:`add_runs` only, atomically).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from dataclasses import dataclass
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

from ...core import progress
from ...core.atomic import atomic_write_json
from ...core.errors import InputError, MembenchError
from ...core.ids import id_problem, ids_problem
from ...core.jsonl import read_json_file, validation_error
from ...core.paths import resolve_user_path
from ...metrics import abstention
from ...metrics.aggregate import cost_entry, latency_entry, mean_entry, ordering_entries
from ...metrics.bootstrap import N_RESAMPLES, SEED, check_resamples
from ...metrics.measures import (
    COST_PERCENTILES,
    JUDGMENT_MEASURES,
    LATENCY_PERCENTILES,
    MAX_FALSE_RECALL,
    MEAN_MEASURES,
    ORDERING_MEASURES,
)
from ...metrics.rundir import RunDir
from ...modalities import MODALITIES
from ...systems.cards import Card
from ..tell_columns import sets_tells
from .columns import JUDGED, MEASURES, PRIMARY, SHOWN_CONTEXT, SHOWN_LATENCY, _num

FORMAT = 10  # 2: entries carry their sha256 (a store of format 1 is re-made); 3: the
#                    abstention beside false recall and the abstention-order statistics;
#                    4: what ran (identity, sealed) in the key; 5: false recall over the
#                    audited unanswerables, the natives with a tell in their own column
#                    (items.abstention.audited, native_tells); 6: the answer layer and the
#                    context cost shown beside latency (SHOWN_CONTEXT); 7: the abstention
#                    the silence check reads (abstain_rate_gated: code's answerables out);
#                    8: the answer within the token budget, ranked and tested with its
#                    per-item values (answer@cartridge_1024tok), grounded_answer@10 shown, and
#                    the answer text without generated captions; 9: judged@10 beside
#                    recall@10 (shown, never tested); 10: each item's holder
#                    (items.holder), so the tests against the best resample by holder
STORE_FILE = "store.json"
ENTRIES = "entries"
_ID = re.compile(r"[0-9a-f]{16}")


class Refused(MembenchError):
    """Runs the store does not take: one line per run (``lines``)."""

    def __init__(self, lines: list[str]):
        self.lines = list(lines)
        super().__init__("; ".join(self.lines))


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)


def _sha(obj: Any) -> str:
    return hashlib.sha256(_canonical(obj).encode("utf-8")).hexdigest()


# ------------------------------------------------------------------------------ entries


def run_card(rd: RunDir) -> tuple[dict[str, Any] | None, str]:
    """The card a run recorded (meta.json ``card``: the runner takes it from what the system
    is, never from its name: :func:`membench.systems.cards.card_for`); ``(None, why)`` when it
    has none, when the run does not say what ran (``identity``), or when its card takes the
    name of one of membench's registry cards and the system is not membench's own (a
    meta.json made so by hand)."""
    from ...systems.cards import registry_claim

    identity = rd.meta.get("identity")
    if not isinstance(identity, dict) or not isinstance(identity.get("kind"), str):
        return None, (
            "meta.json does not say what ran (no identity: a run made before "
            "membench recorded it); run it again"
        )
    rec = rd.meta.get("card")
    if not isinstance(rec, dict):
        why = rd.meta.get("card_refused")
        return None, (
            str(why)
            if why
            else f"no model card: the system ({identity['kind']}) carries none; a card "
            "comes from what a system is, not from its name (docs/cards.md)"
        )
    body = {k: v for k, v in rec.items() if k != "sha256"}
    try:
        card = Card.model_validate(body)
    except Exception as e:  # noqa: BLE001 - pydantic's error, made one line
        return None, f"meta.json card is not a valid card ({str(e).splitlines()[0]})"
    why = registry_claim(card.name, identity["kind"])
    if why:
        return None, why
    return {**card.model_dump(mode="json"), "sha256": card.sha256()}, ""


def _judgment_values(scores, name: str) -> dict[str, np.ndarray]:
    """Per item, every mean measure under judgment set ``name``: the per-set measures its own,
    judged@10 (which reads every set at once) over the items ``name`` judges, so that it stands
    beside recall@10 on the same items; the others as under gold."""
    vals = {m: np.asarray(scores.values[m], dtype=np.float64) for m in MEAN_MEASURES}
    if name != PRIMARY:
        for m in JUDGMENT_MEASURES:
            vals[m] = np.asarray(scores.judgments[name][m], dtype=np.float64)
        vals[JUDGED] = np.where(np.isnan(vals["recall@10"]), np.nan, vals[JUDGED])
    return vals


def _context_entries(scores, mask: np.ndarray, key: str, **kw) -> dict[str, dict[str, Any]]:
    """The figures of :data:`SHOWN_CONTEXT` over the items of ``mask`` (null, n 0, when the
    run was scored without its content: metrics.json's ``answer_context`` says why)."""
    from ...metrics.aggregate import _cost_denominator

    out = {}
    for m in SHOWN_CONTEXT:
        if m in COST_PERCENTILES:
            per_item, q = COST_PERCENTILES[m]
            out[m] = cost_entry(
                np.asarray(scores.values[per_item], dtype=np.float64)[mask],
                q,
                f"{key}|{m}",
                _cost_denominator(scores, mask, m),
                **kw,
            )
        else:
            out[m] = mean_entry(
                np.asarray(scores.values[m], dtype=np.float64)[mask], f"{key}|{m}", **kw
            )
    return out


def _measured(
    scores, sets: list[str], mods: np.ndarray, present: list[str], kw: dict[str, Any]
) -> dict[str, Any]:
    """Every figure of an entry but the latency's, and the per-item values: a function of the
    scores without their latencies, stored with them
    (:func:`membench.metrics.scorecache.derived`)."""
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    items: dict[str, dict[str, list]] = {}
    ordering = {}  # the abstention-order statistics do not depend on the judgment set
    for scope in [*present, "all"]:
        mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
        ordering[scope] = ordering_entries(scores, mask, f"leaderboard:{scope}", **kw)
    for js in sets:
        vals = _judgment_values(scores, js)
        block: dict[str, dict[str, Any]] = {}
        for scope in [*present, "all"]:
            mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
            block[scope] = {
                m: ordering[scope][m]
                if m in ORDERING_MEASURES
                else mean_entry(vals[m][mask], f"leaderboard:{js}:{scope}|{m}", **kw)
                for m in MEASURES
            }
            block[scope].update(_context_entries(scores, mask, f"leaderboard:{js}:{scope}", **kw))
        figures[js] = block
        items[js] = {m: [_num(v) for v in vals[m]] for m in MEASURES if m not in ORDERING_MEASURES}
    return {"figures": figures, "items": items}


def entry_from_run(
    run_dir: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    *,
    final: bool = False,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, Any]:
    """A store entry from a run directory (see :mod:`membench.analysis.leaderboard`), or
    :class:`Refused` with the one-line reason."""
    where = str(run_dir)
    try:
        rd = RunDir.open(run_dir, sets_dir, final=final)
    except MembenchError as e:
        raise Refused([f"{where}: refused: {e}"]) from None
    if rd.meta.get("sees_gold"):
        raise Refused(
            [
                f"{where}: refused: the system saw the gold (a registered test double): "
                "not a valid submission"
            ]
        )
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
    kw = {"seed": seed, "n_resamples": n_resamples}
    from ...metrics import scorecache

    got = scorecache.derived(
        rd._cache.get("scores_key"),
        f"leaderboard-entry-{int(seed)}-{int(n_resamples)}",
        lambda: _measured(scores, sets, mods, present, kw),
    )
    items = got["items"]
    figures: dict[str, dict[str, dict[str, Any]]] = {}
    lat = LATENCY_PERCENTILES[SHOWN_LATENCY]
    latency = np.asarray(scores.latency_ms, dtype=np.float64)
    for js in sets:
        figures[js] = {}
        for scope in [*present, "all"]:
            mask = np.ones(len(mods), bool) if scope == "all" else mods == scope
            rest = got["figures"][js][scope]
            # in the order the entry always had: the measures, the latency, the context costs
            figures[js][scope] = {
                **{m: rest[m] for m in MEASURES},
                SHOWN_LATENCY: latency_entry(
                    latency[mask], lat, f"leaderboard:{js}:{scope}|{SHOWN_LATENCY}", **kw
                ),
                **{k: v for k, v in rest.items() if k not in MEASURES},
            }
    meta = rd.meta
    identity = meta["identity"]
    key = {
        "card_sha256": card["sha256"],
        "config_sha256": _sha(meta.get("config")),
        "code_revision": str(meta.get("code_revision")),
        "set_sha256": dict(sorted((meta.get("set_sha256") or {}).items())),
        "identity_sha256": _sha(identity),
        "sealed": bool(meta.get("sealed")),
    }
    entry_id = _sha(key)[:16]
    from ...core.jsonl import sha256_file

    return sealed(
        {
            "format": FORMAT,
            "id": entry_id,
            "key": key,
            "system": rd.system,
            "card": card,
            "identity": identity,
            "sealed": bool(meta.get("sealed")),
            "run_jsonl_sha256": sha256_file(rd.path / "run.jsonl"),
            "config": meta.get("config"),
            "split": rd.split,
            "selection": {
                "modalities": meta.get("modalities"),
                "limit": meta.get("limit"),
                "queries": len(scores),
            },
            "truncation": meta.get("truncation"),
            "run_dir": str(rd.path),
            "run_started": meta.get("started"),
            "added": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "judgment_sets": sets,
            "figures": figures,
            "items": {
                "query_id": list(scores.query_id),
                "modality": list(scores.modality),
                # the memory's owner: the paired tests resample by holder
                "holder": list(scores.holder),
                "values": items,
                # per item: the abstention score (null for -inf: no score), whether the
                # cartridge was empty and whether the item is audited (the abstention
                # statistics leave the natives with a tell out), for their paired tests
                "abstention": {
                    "score": [_num(v) if np.isfinite(v) else None for v in scores.abstention_score],
                    "abstained": [bool(c == 0) for c in scores.cartridge_size],
                    "answerable": [bool(a) for a in scores.answerable],
                    "audited": [bool(a) for a in scores.audited],
                },
            },
            # the strength of the upstream tells, from the audit of the run's sets: the label of
            # the natives' false-recall column
            "native_tells": sets_tells(rd.sets_dir),
        }
    )


def entry_sha256(entry: dict[str, Any]) -> str:
    """The sha256 of an entry's canonical JSON (sorted keys, no whitespace) without its own
    ``sha256`` field."""
    return _sha({k: v for k, v in entry.items() if k != "sha256"})


def sealed(entry: dict[str, Any]) -> dict[str, Any]:
    """``entry`` with its ``sha256`` (:func:`entry_sha256`), as the store writes it. The
    canonical JSON is of the entry as written and read back (JSON numbers and lists)."""
    body = json.loads(
        json.dumps({k: v for k, v in entry.items() if k != "sha256"}, allow_nan=False)
    )
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
                if (
                    f.get("n") != v.size
                    or (value is None) != (f.get("value") is None)
                    or (
                        value is not None
                        and not np.isclose(f["value"], value, rtol=1e-12, atol=0.0)
                    )
                ):
                    return (
                        f"figures.{js}.{scope}.{m}: value {f.get('value')!r} n "
                        f"{f.get('n')!r}, but its per-item values give {value!r} n "
                        f"{v.size}"
                    )
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
                    mask = (np.ones(len(mods), bool) if scope == "all" else mods == scope) & audited
                    o = abstention.Ordering(score[mask], kept[mask], ans[mask], mods[mask])
                    x = float(abstention.statistic(o, m, MAX_FALSE_RECALL)[0])
                    given[(scope, m)] = (None if np.isnan(x) else x, o.counted(m))
                value, n = given[(scope, m)]
                if (
                    f.get("n") != n
                    or (value is None) != (f.get("value") is None)
                    or (
                        value is not None
                        and not np.isclose(f["value"], value, rtol=1e-12, atol=0.0)
                    )
                ):
                    return (
                        f"figures.{js}.{scope}.{m}: value {f.get('value')!r} n "
                        f"{f.get('n')!r}, but its items' abstention scores give "
                        f"{value!r} n {n}"
                    )
    return None


def _store_record(entry: dict[str, Any]) -> dict[str, Any]:
    ids = entry["items"]["query_id"]
    return {
        "format": FORMAT,
        "split": entry["split"],
        "set_sha256": entry["key"]["set_sha256"],
        "selection": entry["selection"],
        "queries_sha256": hashlib.sha256("\n".join(sorted(ids)).encode()).hexdigest(),
    }


def _mismatch(store: dict[str, Any], rec: dict[str, Any]) -> str | None:
    if rec["split"] != store["split"]:
        return f"a {rec['split']} run, the store holds {store['split']} runs"
    a, b = store["set_sha256"], rec["set_sha256"]
    if a != b:
        diff = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
        return (
            f"made on other set files than the store's ({', '.join(diff)} differ by "
            "sha256): a store holds runs on one version of the sets; use another --out"
        )
    if rec["queries_sha256"] != store["queries_sha256"]:
        s, r = store["selection"], rec["selection"]
        return (
            f"evaluates other queries ({r['queries']}: modalities {r['modalities']}, limit "
            f"{r['limit']}) than the store's ({s['queries']}: modalities {s['modalities']}, "
            f"limit {s['limit']}): systems are compared on the same items; use another "
            "--out"
        )
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


_Num = Annotated[StrictFloat, Field(allow_inf_nan=False)]  # what the store writes


class _Figure(_Open):
    value: _Num | None
    n: StrictInt
    denominator: StrictInt
    ci95: tuple[_Num | None, _Num | None]


class _Abstention(_Open):
    score: list[_Num | None]  # null: -inf (no score)
    abstained: list[StrictBool]
    answerable: list[StrictBool]
    audited: list[StrictBool]  # false: a native with an upstream tell


class _Items(_Open):
    query_id: list[StrictStr]
    modality: list[StrictStr]
    holder: list[StrictStr]
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
    native_tells: dict[StrictStr, _Num | None]  # source -> the tell's ROC AUC
    run_dir: StrictStr | None = None
    config: Any = None


#: what a store of an older format lacks (said when it is refused)
_F8 = (
    "the answer within the 1,024-token budget, ranked and tested "
    "(answer@cartridge_1024tok), grounded_answer@10 shown, and the answer text without "
    "generated image captions (format 8)"
)
_F10 = "each item's holder, so the tests against the best resample by holder (format 10)"
_F9 = _F8 + "; judged@10 beside recall@10, shown, never tested (format 9); " + _F10
_FORMAT_CHANGES: dict[int, str] = {
    4: "false recall over the audited unanswerables only, the natives with a tell in their "
    "own column (format 5); the answer layer and the context cost (format 6); the "
    "abstention the silence check reads (format 7); " + _F9,
    5: "the answer layer and the context cost beside latency (answer@cartridge, answer@10, "
    "recall@1024tok, context_tokens_committed_p50: format 6); the abstention the silence "
    "check reads (abstain_rate_gated: format 7); " + _F9,
    6: "the abstention the false-recall gate's silence check reads, over the modalities with "
    "unanswerable items (abstain_rate_gated: format 7); " + _F9,
    7: _F9,
    8: "judged@10 beside recall@10, shown, never tested (format 9); " + _F10,
    9: _F10,
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
            raise InputError(
                sf,
                None,
                None,
                "entries without store.json: not a store `membench leaderboard` wrote",
                rule="STORE",
            )
        return None, []
    store = read_json_file(sf, dict, "a leaderboard store.json (a JSON object)")
    if "format" in store and store["format"] != FORMAT:
        why = _FORMAT_CHANGES.get(store["format"]) if isinstance(store["format"], int) else None
        raise InputError(
            sf,
            None,
            "format",
            f"{str(store['format'])[:40]}, this membench "
            f"reads {FORMAT} (re-make the store: membench leaderboard --runs ...)"
            + (f"; since then: {why}" if why else ""),
            rule="STORE",
        )
    _shape(_StoreFile, store, sf)
    entries = []
    for p in sorted((d / ENTRIES).glob("*.json")):
        e = read_json_file(p, dict, "a leaderboard entry (a JSON object)")
        _shape(_Entry, e, p)
        if not (_ID.fullmatch(e["id"]) and p.stem == e["id"]):
            raise InputError(
                p, None, "id", f"{e['id'][:40]!r}: an entry's file is named by its id", rule="STORE"
            )
        if _sha(e["key"])[:16] != e["id"]:
            raise InputError(
                p, None, "key", "does not hash to the entry's id (edited?)", rule="STORE"
            )
        for what, v in (
            ("system", e["system"]),
            *((f"judgment_sets[{i}]", js) for i, js in enumerate(e["judgment_sets"])),
        ):
            why = id_problem(v)
            if why:
                raise InputError(p, None, what, why, rule="ID")
        try:
            card = Card.model_validate({k: v for k, v in e["card"].items() if k != "sha256"})
        except Exception as err:  # noqa: BLE001
            raise InputError(p, None, "card", str(err).splitlines()[0], rule="STORE") from None
        if card.sha256() != e["key"]["card_sha256"]:
            raise InputError(
                p, None, "card", "its sha256 is not the key's card_sha256", rule="STORE"
            )
        if _sha(e["identity"]) != e["key"]["identity_sha256"] or e["sealed"] != e["key"]["sealed"]:
            raise InputError(
                p,
                None,
                "identity",
                "the identity or the sealed flag is not the key's (edited?)",
                rule="STORE",
            )
        ids = e["items"]["query_id"]
        if len(ids) != len(e["items"]["modality"]) or len(ids) != len(e["items"]["holder"]):
            raise InputError(
                p, None, "items", "query_id, modality and holder lists differ", rule="STORE"
            )
        bad = ids_problem(ids)
        if bad:
            raise InputError(p, None, f"items.query_id[{bad[0]}]", bad[1], rule="ID")
        if len(set(ids)) != len(ids):
            raise InputError(p, None, "items.query_id", "a query listed twice", rule="STORE")
        for js, per in e["items"]["values"].items():
            for m, vals in per.items():
                if len(vals) != len(ids):
                    raise InputError(
                        p,
                        None,
                        f"items.values.{js}.{m}"[:80],
                        f"{len(vals)} values for {len(ids)} queries",
                        rule="STORE",
                    )
        for k, vals in e["items"]["abstention"].items():
            if len(vals) != len(ids):
                raise InputError(
                    p,
                    None,
                    f"items.abstention.{k}",
                    f"{len(vals)} values for {len(ids)} queries",
                    rule="STORE",
                )
        if set(e["judgment_sets"]) != set(e["figures"]) or set(e["judgment_sets"]) != set(
            e["items"]["values"]
        ):
            raise InputError(
                p,
                None,
                "judgment_sets",
                "figures and per-item values are not given for the same judgment sets",
                rule="STORE",
            )
        why = _mismatch(store, _store_record(e))
        if why:
            raise InputError(p, None, None, f"does not belong to this store: {why}", rule="STORE")
        why = tampered(e)
        if why:
            raise InputError(
                p,
                None,
                None,
                f"tampered: {why}; its figures are not shown: "
                f"delete {p.name} and add its run again (membench leaderboard "
                f"--runs RUN_DIR --out {d})",
                rule="STORE_TAMPERED",
            )
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
    added: list[dict[str, Any]]  # id, system, run_dir, replaced
    entries: int


def add_runs(
    run_dirs: list[str | os.PathLike],
    out: str | os.PathLike,
    sets_dir: str | os.PathLike | None = None,
    *,
    final: bool = False,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> Added:
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
    with progress.step("leaderboard: figures of each run", total=len(run_dirs), unit="run") as bar:
        for r in run_dirs:
            bar.note(str(r))
            try:
                e = entry_from_run(r, sets_dir, final=final, seed=seed, n_resamples=n_resamples)
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
            refused.append(
                f"{r}: refused: the same entry as {seen[e['id']]} (same card, "
                "config, code revision and sets): give it once"
            )
            continue
        seen[e["id"]] = str(r)
        fresh.append(e)
    if refused:
        raise Refused(refused)
    assert store is not None
    (out / ENTRIES).mkdir(parents=True, exist_ok=True)
    old = {e["id"] for e in existing}
    for e in fresh:
        atomic_write_json(
            out / ENTRIES / f"{e['id']}.json", e, indent=1, sort_keys=True, allow_nan=False
        )
    atomic_write_json(out / STORE_FILE, store, indent=1, sort_keys=True)
    return Added(
        out,
        [
            {
                "id": e["id"],
                "system": e["system"],
                "run_dir": e["run_dir"],
                "replaced": e["id"] in old,
            }
            for e in fresh
        ],
        len(old | {e["id"] for e in fresh}),
    )


__all__ = [
    "ENTRIES",
    "FORMAT",
    "STORE_FILE",
    "Added",
    "Refused",
    "add_runs",
    "entry_from_run",
    "entry_sha256",
    "read_store",
    "run_card",
    "sealed",
    "tampered",
]
