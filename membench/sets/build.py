"""``membench build``: corpus mirror -> frozen annotation sets (SPEC section 5).

Reads every registered source present under the corpus root with its adapter, then, all
deterministically:

1. **split** each source's holders by hash: holders in ``sha256("split", holder)`` order, the
   first half (rounded up) ``dev``, the rest ``test``; so no holder spans both splits and every
   source with >= 1 holder has dev items;
2. sets **as_of** of a native query to the latest ``observed_at`` of its holder's items (the
   question is asked once the holder's memory is complete; so every gold item is in the past),
   unless the adapter carries an upstream question time;
3. derives transactive and temporal **unanswerables** (:mod:`membench.sets.derive`);
4. writes ``<modality>.jsonl`` for all six modalities, ``items.jsonl``, ``coverage.json`` and
   ``stats.json`` to the output folder, and compares each file's sha256 with the committed lock
   (``bench/sets.lock.json``).
"""

from __future__ import annotations

import json
import math
from collections import Counter, defaultdict
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from ..core import progress
from ..core.errors import MembenchError
from ..core.hashing import hash_order
from ..core.jsonl import sha256_file, write_jsonl
from ..modalities import MODALITIES
from .derive import derive
from .schema import AnnotationRecord, SourceItem
from .sources import SOURCES
from .sources.base import Coverage

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


def collect(root: Path, only: set[str] | None = None):
    """Run the adapters of the sources present under ``root``."""
    items: dict[str, SourceItem] = {}
    drafts = []
    texts: dict[str, str] = {}
    coverage: list[Coverage] = []
    specs = [spec for spec in SOURCES if not only or spec.key in only]
    with progress.step("build", total=len(specs), unit="source") as bar:
        for spec in specs:
            bar.note(spec.key)
            _collect_one(root, spec, items, drafts, texts, coverage, bar)
            bar.advance()
    return items, drafts, texts, coverage


def _collect_one(root: Path, spec, items: dict, drafts: list, texts: dict,
                 coverage: list, bar: progress.Step) -> None:
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
        items[it.source_id] = it
    drafts.extend(res.drafts)
    texts.update(res.texts)
    coverage.append(res.coverage)
    bar.count("questions", len(res.drafts))


def source_of(id_: str) -> str:
    return id_.split(":", 1)[0]


def build_sets(root: Path, out: Path, only: set[str] | None = None) -> BuildResult:
    items, drafts, texts, coverage = collect(root, only)

    holders_by_source: dict[str, set[str]] = defaultdict(set)
    holder_last: dict[str, datetime] = {}
    for it in items.values():
        holders_by_source[source_of(it.source_id)].add(it.holder)
        if it.holder not in holder_last or it.observed_at > holder_last[it.holder]:
            holder_last[it.holder] = it.observed_at
    holder_split = split_holders({k: sorted(v) for k, v in holders_by_source.items()})

    natives: dict[str, list[AnnotationRecord]] = defaultdict(list)
    seen: set[str] = set()
    for d in drafts:
        if d.query_id in seen:
            raise MembenchError(f"duplicate query_id from adapters: {d.query_id}")
        seen.add(d.query_id)
        h = d.scope.holder
        if h not in holder_split:
            raise MembenchError(f"{d.query_id}: holder {h!r} owns no source item")
        # an adapter may carry the upstream question time (LongMemEval's question_date)
        rec = AnnotationRecord(**{**d.model_dump(), "as_of": d.as_of or holder_last[h],
                                  "split": holder_split[h]})
        natives[source_of(d.query_id)].append(rec)

    records: list[AnnotationRecord] = []
    derive_stats = {}
    for source in sorted(natives):
        recs = natives[source]
        derived, st = derive(source, recs, items, texts, holder_split, holder_last)
        records.extend(recs)
        records.extend(derived)
        derive_stats[source] = asdict(st)
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
    (out / "coverage.json").write_text(
        json.dumps([c.as_dict() for c in coverage], indent=2, sort_keys=True) + "\n")
    (out / "stats.json").write_text(json.dumps(stats, indent=2, sort_keys=True) + "\n")
    digests = {f: sha256_file(out / f) for f in SET_FILES}
    return BuildResult(out, records, item_list, coverage, stats, digests)


def set_stats(records: list[AnnotationRecord], items: list[SourceItem],
              holder_split: dict[str, str]) -> dict:
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
            "queries": c["queries"], "answerable": c["answerable"],
            "native_unanswerable": c["native_unanswerable"],
            "derived_transactive": c["derived_transactive"],
            "derived_temporal": c["derived_temporal"],
            "unanswerable_share": round(unans / c["queries"], 4) if c["queries"] else None,
            "holders": len(holders[m]),
            "dev_holders": sum(1 for h in holders[m] if holder_split.get(h) == "dev"),
            "dev": c["dev"], "test": c["test"], "items": c["items"],
        }
    return {"modalities": table}


# --------------------------------------------------------------------------- lock


def set_digests(sets_dir: str | Path) -> dict[str, str]:
    """sha256 of every set file present in ``sets_dir`` (what runs record and locks freeze)."""
    d = Path(sets_dir)
    return {f: sha256_file(d / f) for f in SET_FILES if (d / f).exists()}


def read_lock(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    try:
        return json.loads(path.read_text())["files"]
    except (json.JSONDecodeError, KeyError, TypeError) as e:
        raise MembenchError(f"{path}: not a membench lock file ({e})") from None


def write_lock(path: Path, digests: dict[str, str]) -> None:
    path.write_text(json.dumps({
        "about": "sha256 of every built set file; `membench build` must reproduce these bytes, "
                 "`membench validate` fails on drift. Update with `membench build --update-lock` "
                 "only when a change to the sets is intended.",
        "files": dict(sorted(digests.items())),
    }, indent=2) + "\n")


def lock_drift(lock: dict[str, str], digests: dict[str, str]) -> list[str]:
    return [f"{f}: built {digests.get(f, 'missing')[:12]}…, lock has {lock.get(f, 'nothing')[:12]}…"
            for f in sorted(set(lock) | set(digests)) if lock.get(f) != digests.get(f)]


@dataclass
class LockVerdict:
    """What a build means against the lock: ``ok`` and the lines to print."""

    ok: bool
    lines: list[str]


def check_lock(digests: dict[str, str], lock: Path, *, update: bool = False,
               partial: bool = False) -> LockVerdict:
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
        return LockVerdict(False, [f"no lock at {lock}: run with --update-lock to freeze these "
                                   "sets"])
    drift = lock_drift(frozen, digests)
    if drift:
        return LockVerdict(False, [f"DIGEST_DRIFT: the build differs from {lock}:",
                                   *("  " + d for d in drift)])
    return LockVerdict(True, [f"all {len(digests)} set files match {lock}"])


def render_counts(stats: dict) -> str:
    rows = ["| modality | queries | answerable | native unanswerable | derived transactive | "
            "derived temporal | unanswerable share | holders (dev) | dev | test |",
            "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for m, s in stats["modalities"].items():
        share = "—" if s["unanswerable_share"] is None else f"{s['unanswerable_share']:.1%}"
        rows.append(f"| {m} | {s['queries']} | {s['answerable']} | {s['native_unanswerable']} | "
                    f"{s['derived_transactive']} | {s['derived_temporal']} | {share} | "
                    f"{s['holders']} ({s['dev_holders']}) | {s['dev']} | {s['test']} |")
    return "\n".join(rows)


def render_coverage(coverage: list[dict]) -> str:
    rows = ["| source | mirrored | upstream items | covered | not covered (why) | repaired |",
            "|---|---|---:|---:|---|---|"]
    for c in coverage:
        why = "; ".join(f"{k}: {v}" for k, v in c["not_covered"].items()) or "—"
        fixed = "; ".join(f"{k}: {v}" for k, v in c["normalised"].items()) or "—"
        up = c["upstream_items"] if c["mirrored"] else "—"
        cov = c["covered"] if c["mirrored"] else "not mirrored"
        rows.append(f"| {c['source']} | {'yes' if c['mirrored'] else 'no'} | {up} | {cov} | "
                    f"{why} | {fixed} |")
    return "\n".join(rows)


__all__ = ["build_sets", "read_lock", "write_lock", "lock_drift", "render_counts",
           "render_coverage", "SET_FILES"]
