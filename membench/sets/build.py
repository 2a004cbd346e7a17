"""``membench build``: corpus mirror -> frozen annotation sets (SPEC section 5).

Reads every registered source present under the corpus root with its adapter, then, all
deterministically:

1. **split** each source's holders by hash: holders in ``sha256("split", holder)`` order, the
   first half (rounded up) ``dev``, the rest ``test``; so no holder spans both splits and every
   source with >= 1 holder has dev items;
2. derives transactive and temporal **unanswerables**, which replace the queries they come
   from, and draws every record's **as_of** on its holder's timeline so that it tells nothing
   (:mod:`membench.sets.derive`, :mod:`membench.sets.timeline`), unless the adapter carries
   an upstream question time;
3. writes ``<modality>.jsonl`` for all six modalities, ``items.jsonl``, ``coverage.json`` (with
   each source's derivations and the ones its guards skipped, and why) and ``stats.json`` to
   the output folder, and compares each file's sha256 with the committed lock
   (``bench/sets.lock.json``).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path

from .. import modalities
from ..contract.schema import AnnotationRecord, RecordDraft, SourceItem
from ..core import progress
from ..core.atomic import atomic_write_json, atomic_write_text
from ..core.errors import InputError, MembenchError
from ..core.hashing import hash_order
from ..core.jsonl import read_json_file, sha256_file, write_jsonl
from ..core.paths import confine
from ..modalities import MODALITIES
from ..sources import SOURCES
from ..sources.base import Coverage
from .derive import derive, policy
from .neardup import NearDupIndex, image_hashes
from .timeline import build_timelines

SET_FILES = tuple(f"{m}.jsonl" for m in MODALITIES) + ("items.jsonl",)
DEV_SHARE = 0.5


@dataclass
class BuildResult:
    out: Path
    records: list[AnnotationRecord]
    items: list[SourceItem]
    coverage: list[Coverage]
    stats: dict
    digests: dict[str, str] = field(default_factory=dict)


def split_holders(holders_by_source: dict[str, list[str]]) -> dict[str, str]:
    split: dict[str, str] = {}
    for source, holders in sorted(holders_by_source.items()):
        order = hash_order(holders, f"split:{source}")
        n_dev = math.ceil(DEV_SHARE * len(order))
        for i, h in enumerate(order):
            split[h] = "dev" if i < n_dev else "test"
    return split


def collect(root: Path, only: set[str] | None = None, topics: dict[str, str] | None = None):
    """Run the adapters of the sources present under ``root`` (``topics``, when given, gets
    the adapters' item topics: :attr:`membench.sources.base.AdapterResult.topics`)."""
    items: dict[str, SourceItem] = {}
    drafts = []
    texts: dict[str, str] = {}
    coverage: list[Coverage] = []
    specs = [spec for spec in SOURCES if not only or spec.key in only]
    with progress.step("build", total=len(specs), unit="source") as bar:
        for spec in specs:
            bar.note(spec.key)
            _collect_one(
                root, spec, items, drafts, texts, coverage, bar, {} if topics is None else topics
            )
            bar.advance()
    return items, drafts, texts, coverage


def _collect_one(
    root: Path,
    spec,
    items: dict,
    drafts: list,
    texts: dict,
    coverage: list,
    bar: progress.Step,
    topics: dict,
) -> None:
    """Load one source into the accumulators (``bar`` counts the records)."""
    if not spec.available(root):
        coverage.append(spec.not_mirrored())
        return
    res = spec.load(root)
    if not res.coverage.balanced():
        raise MembenchError(f"{spec.key}: coverage does not add up: {res.coverage.as_dict()}")
    for it in res.items:
        if it.source_id in items:
            raise MembenchError(f"{spec.key}: duplicate source_id {it.source_id}")
        if it.path is not None:  # every item file stays inside the corpus root
            confine(root, it.path, file=f"{spec.key} adapter", field=f"{it.source_id}.path")
        items[it.source_id] = it
    drafts.extend(res.drafts)
    texts.update(res.texts)
    topics.update(res.topics)
    coverage.append(res.coverage)
    bar.count("questions", len(res.drafts))


def source_of(id_: str) -> str:
    return id_.split(":", 1)[0]


def neardup_index(
    source_items: list[SourceItem], texts: dict[str, str], root: Path
) -> NearDupIndex:
    """The near-duplicate fingerprints of one source's items: perceptual hashes of the files of
    a picture modality, else the items' upstream texts (:mod:`membench.sets.neardup`)."""
    pictures = {
        it.source_id: root / it.path
        for it in source_items
        if it.path and modalities.get(it.modality).near_duplicate == "phash"
    }
    digests = {
        it.source_id: it.meta["sha256"]
        for it in source_items
        if it.source_id in pictures and isinstance(it.meta.get("sha256"), str)
    }
    phash = image_hashes(pictures, digests) if pictures else {}
    return NearDupIndex({it.source_id: texts.get(it.source_id, "") for it in source_items}, phash)


def build_sets(root: Path, out: Path, only: set[str] | None = None) -> BuildResult:
    topics: dict[str, str] = {}
    items, drafts, texts, coverage = collect(root, only, topics)

    holders_by_source: dict[str, set[str]] = defaultdict(set)
    items_by_source: dict[str, list[SourceItem]] = defaultdict(list)
    for it in items.values():
        holders_by_source[source_of(it.source_id)].add(it.holder)
        items_by_source[source_of(it.source_id)].append(it)
    holder_split = split_holders({k: sorted(v) for k, v in holders_by_source.items()})
    timelines = build_timelines(
        (source_of(it.source_id), it.holder, it.observed_at) for it in items.values()
    )

    natives: dict[str, list[RecordDraft]] = defaultdict(list)
    seen: set[str] = set()
    for d in drafts:
        if d.query_id in seen:
            raise MembenchError(f"duplicate query_id from adapters: {d.query_id}")
        seen.add(d.query_id)
        if d.scope.holder not in holder_split:
            raise MembenchError(f"{d.query_id}: holder {d.scope.holder!r} owns no source item")
        natives[source_of(d.query_id)].append(d)

    records: list[AnnotationRecord] = []
    derive_stats = {}
    for source in sorted(natives):
        index = (
            neardup_index(items_by_source[source], texts, root)
            if any(policy(source).values())
            else None
        )
        recs, st = derive(
            source, natives[source], items, texts, holder_split, timelines, index, topics
        )
        records.extend(recs)
        derive_stats[source] = st.as_dict()
    records.sort(key=lambda r: r.query_id)
    item_list = sorted(items.values(), key=lambda i: i.source_id)

    out.mkdir(parents=True, exist_ok=True)
    by_mod: dict[str, list[AnnotationRecord]] = {m: [] for m in MODALITIES}
    for r in records:
        by_mod[r.modality].append(r)
    for m in MODALITIES:
        write_jsonl(out / f"{m}.jsonl", by_mod[m])
    write_jsonl(out / "items.jsonl", item_list)

    stats = set_stats(records, item_list, holder_split)
    stats["derivation"] = derive_stats
    atomic_write_json(
        out / "coverage.json", coverage_rows(coverage, derive_stats), indent=2, sort_keys=True
    )
    atomic_write_json(out / "stats.json", stats, indent=2, sort_keys=True)
    digests = {f: sha256_file(out / f) for f in SET_FILES}
    return BuildResult(out, records, item_list, coverage, stats, digests)


def coverage_rows(coverage: list[Coverage], derive_stats: dict[str, dict]) -> list[dict]:
    """``coverage.json``: each source's coverage, with its derivations (``derived``: how many
    of each kind, and the derivations the guards skipped, by reason) where it has records."""
    return [
        {**c.as_dict(), **({"derived": derive_stats[c.source]} if c.source in derive_stats else {})}
        for c in coverage
    ]


def set_stats(
    records: list[AnnotationRecord], items: list[SourceItem], holder_split: dict[str, str]
) -> dict:
    per: dict[str, Counter] = {m: Counter() for m in MODALITIES}
    holders: dict[str, set[str]] = {m: set() for m in MODALITIES}
    for r in records:
        c = per[r.modality]
        c["queries"] += 1
        if not r.unanswerable:
            c["answerable"] += 1
        elif r.origin.derivation:
            c[f"derived_{r.origin.derivation}"] += 1
        else:
            c["native_unanswerable"] += 1
        c[r.split] += 1
    for it in items:
        holders[it.modality].add(it.holder)
        per[it.modality]["items"] += 1
    table = {}
    for m in MODALITIES:
        c = per[m]
        unans = c["queries"] - c["answerable"]
        table[m] = {
            "queries": c["queries"],
            "answerable": c["answerable"],
            "native_unanswerable": c["native_unanswerable"],
            "derived_transactive": c["derived_transactive"],
            "derived_temporal": c["derived_temporal"],
            "unanswerable_share": round(unans / c["queries"], 4) if c["queries"] else None,
            "holders": len(holders[m]),
            "dev_holders": sum(1 for h in holders[m] if holder_split.get(h) == "dev"),
            "dev": c["dev"],
            "test": c["test"],
            "items": c["items"],
        }
    return {"modalities": table}


# --------------------------------------------------------------------------- lock


def set_digests(sets_dir: str | Path) -> dict[str, str]:
    """sha256 of every set file present in ``sets_dir`` (what runs record and locks freeze)."""
    d = Path(sets_dir)
    return {f: sha256_file(d / f) for f in SET_FILES if (d / f).is_file()}


def read_lock(path: Path) -> dict[str, str]:
    """The lock's ``{set file: sha256}`` (``{}`` when there is no lock file); anything else
    than ``{"files": {name: sha256, ...}, ...}`` is an :class:`InputError` naming the file."""
    if not path.exists():
        return {}
    files = read_json_file(path, dict, "a membench lock file (a JSON object)").get("files")
    if not isinstance(files, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in files.items()
    ):
        raise InputError(path, None, "files", "must be an object {set file: sha256}", rule="LOCK")
    return files


def write_lock(path: Path, digests: dict[str, str]) -> None:
    atomic_write_text(
        path,
        json.dumps(
            {
                "about": "sha256 of every built set file; `membench build` must reproduce these bytes, "
                "`membench validate` fails on drift. Update with `membench build --update-lock` "
                "only when a change to the sets is intended.",
                "files": dict(sorted(digests.items())),
            },
            indent=2,
        )
        + "\n",
    )


def lock_drift(lock: dict[str, str], digests: dict[str, str]) -> list[str]:
    return [
        f"{f}: built {digests.get(f, 'missing')[:12]}…, lock has {lock.get(f, 'nothing')[:12]}…"
        for f in sorted(set(lock) | set(digests))
        if lock.get(f) != digests.get(f)
    ]


@dataclass
class LockVerdict:
    """What a build means against the lock: ``ok`` and the lines to print."""

    ok: bool
    lines: list[str]


def check_lock(
    digests: dict[str, str], lock: Path, *, update: bool = False, partial: bool = False
) -> LockVerdict:
    """The lock rule of ``membench build``: a partial build (``--source``) is not compared;
    ``update`` freezes these digests; otherwise the build must match the lock byte for byte
    (DIGEST_DRIFT names every file that differs), and a missing lock is a failure that says
    how to make one."""
    if partial:
        return LockVerdict(True, ["(partial build: lock not compared)"])
    if update:
        write_lock(lock, digests)
        return LockVerdict(True, [f"wrote {lock}"])
    frozen = read_lock(lock)
    if not frozen:
        return LockVerdict(
            False, [f"no lock at {lock}: run with --update-lock to freeze these sets"]
        )
    drift = lock_drift(frozen, digests)
    if drift:
        return LockVerdict(
            False, [f"DIGEST_DRIFT: the build differs from {lock}:", *("  " + d for d in drift)]
        )
    return LockVerdict(True, [f"all {len(digests)} set files match {lock}"])


def render_counts(stats: dict) -> str:
    rows = [
        "| modality | queries | answerable | native unanswerable | derived transactive | "
        "derived temporal | unanswerable share | holders (dev) | dev | test |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    from ..modalities import MODALITIES

    order = {m: i for i, m in enumerate(MODALITIES)}
    for m, s in sorted(stats["modalities"].items(), key=lambda kv: order.get(kv[0], 99)):
        share = "—" if s["unanswerable_share"] is None else f"{s['unanswerable_share']:.1%}"
        rows.append(
            f"| {m} | {s['queries']} | {s['answerable']} | {s['native_unanswerable']} | "
            f"{s['derived_transactive']} | {s['derived_temporal']} | {share} | "
            f"{s['holders']} ({s['dev_holders']}) | {s['dev']} | {s['test']} |"
        )
    return "\n".join(rows)


def render_coverage(coverage: list[dict]) -> str:
    rows = [
        "| source | mirrored | upstream items | covered | not covered (why) | repaired |",
        "|---|---|---:|---:|---|---|",
    ]
    for c in coverage:
        why = "; ".join(f"{k}: {v}" for k, v in c["not_covered"].items()) or "—"
        fixed = "; ".join(f"{k}: {v}" for k, v in c["normalised"].items()) or "—"
        up = c["upstream_items"] if c["mirrored"] else "—"
        cov = c["covered"] if c["mirrored"] else "not mirrored"
        rows.append(
            f"| {c['source']} | {'yes' if c['mirrored'] else 'no'} | {up} | {cov} | "
            f"{why} | {fixed} |"
        )
    return "\n".join(rows)


def render_derivation(coverage: list[dict]) -> str:
    """Per source with records: its answerable candidates, the late pool (questions not kept
    answerable, :mod:`membench.sets.timeline`) and how many of it were not asked, the derived
    unanswerables of each kind, the candidates the guards skipped (by reason) and the kinds a
    source never derives (and why)."""
    rows = [
        "| source | answerable candidates | late pool | not asked | transactive | temporal | "
        "skipped by a guard (why) | not derived (why) |",
        "|---|---:|---:|---:|---:|---:|---|---|",
    ]
    for c in coverage:
        d = c.get("derived")
        if not d:
            continue
        skipped = "; ".join(f"{k}: {v}" for k, v in d["skipped"].items()) or "—"
        never = "; ".join(f"{k}: {v}" for k, v in d["not_derived"].items()) or "—"
        rows.append(
            f"| {c['source']} | {d['candidates']} | {d.get('late', '—')} | "
            f"{d.get('not_asked', '—')} | {d['transactive']} | {d['temporal']} | "
            f"{skipped} | {never} |"
        )
    return "\n".join(rows)


def derivation_frame(coverage: list[dict]):
    """:func:`render_derivation` as a pandas DataFrame (one row per source with records), for
    reports, where every cell is escaped when shown."""
    import pandas as pd

    rows = []
    for c in coverage:
        d = c.get("derived")
        if not d:
            continue
        rows.append(
            {
                "source": c["source"],
                "answerable candidates": d["candidates"],
                "late pool": d.get("late"),
                "not asked": d.get("not_asked"),
                "transactive": d["transactive"],
                "temporal": d["temporal"],
                "skipped by a guard (why)": "; ".join(f"{k}: {v}" for k, v in d["skipped"].items())
                or "—",
                "not derived (why)": "; ".join(f"{k}: {v}" for k, v in d["not_derived"].items())
                or "—",
            }
        )
    return pd.DataFrame(rows).set_index("source") if rows else pd.DataFrame(rows)


__all__ = [
    "build_sets",
    "read_lock",
    "write_lock",
    "lock_drift",
    "render_counts",
    "render_coverage",
    "render_derivation",
    "derivation_frame",
    "SET_FILES",
]
