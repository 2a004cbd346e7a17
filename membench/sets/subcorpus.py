"""A sub-corpus of a built sets folder: the same records over a subset of its items.

``membench pool`` (:mod:`membench.analysis.pool`) decides *which* items a sub-corpus keeps; this
module writes it as an ordinary sets folder (:func:`write_subcorpus`), so that ``membench run
--sets SUB``, ``membench validate --sets SUB`` and every reader treat it like the build's:
``<modality>.jsonl`` (the parent's, byte for byte), ``items.jsonl`` (the parent's lines of the
kept items, in its order), ``coverage.json`` (the parent's), ``stats.json`` (recounted),
``subcorpus.json`` (how the items were chosen, the parent's set sha256s and this folder's;
:func:`read_manifest`) and ``sets.lock.json`` (this folder's lock; :func:`lock_for` makes it
the default lock for a folder holding ``subcorpus.json``; the build's folder is always checked
against the committed lock).

Before anything is written, :func:`check_keep` holds the items :func:`required_items` names,
whatever chose them: every item a record's gold or judgment sets name, every item its
``origin.distractor`` names (an upstream distractor naming no item keeps its holder whole), and
at least one item per holder, with every holder's split unchanged. Reads the parent folder;
writes only the new one. docs/pooling.md ("What every sub-corpus keeps, and why", "The
folder") gives the reasons.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.schema import AnnotationRecord, SourceItem
from ..core.errors import InputError, MembenchError
from ..core.jsonl import check_readable_file, iter_json_lines, parse_model, sha256_file
from ..core.paths import DEFAULT_SETS_DIR, LOCK_PATH
from ..modalities import MODALITIES
from .build import SET_FILES, set_digests, set_stats, source_of, split_holders

MANIFEST = "subcorpus.json"
OWN_LOCK = "sets.lock.json"
#: files a sub-corpus folder holds (a folder holding anything else is never replaced)
FILES = (*SET_FILES, "coverage.json", "stats.json", MANIFEST, OWN_LOCK)


def lock_for(sets_dir: str | os.PathLike, given: str | os.PathLike | None = None) -> Path:
    """The lock a sets folder is checked against: ``given`` when a caller names one
    (``--lock``); else the folder's own ``sets.lock.json`` when it is a sub-corpus (it holds
    ``subcorpus.json``) and not the build's folder; else ``bench/sets.lock.json``."""
    if given is not None:
        return Path(given)
    d = Path(sets_dir)
    if (
        (d / MANIFEST).is_file()
        and (d / OWN_LOCK).is_file()
        and d.resolve() != DEFAULT_SETS_DIR.resolve()
    ):
        return d / OWN_LOCK
    return LOCK_PATH


@dataclass
class Parent:
    """A sets folder read for sub-sampling: its records (both splits), items (in file order)
    and the raw bytes of each item line."""

    path: Path
    records: list[AnnotationRecord]
    items: list[SourceItem]
    item_lines: dict[str, bytes]

    @classmethod
    def read(cls, sets_dir: str | os.PathLike) -> Parent:
        d = Path(sets_dir)
        recs: list[AnnotationRecord] = []
        for m in MODALITIES:
            p = d / f"{m}.jsonl"
            recs += [parse_model(AnnotationRecord, obj, p, no) for no, obj in iter_json_lines(p)]
        p = d / "items.jsonl"
        items = [parse_model(SourceItem, obj, p, no) for no, obj in iter_json_lines(p)]
        with open(check_readable_file(p), "rb") as f:
            raw = f.read().splitlines(keepends=True)
        lines = {it.source_id: line for it, line in zip(items, raw)}
        if len(lines) != len(items):
            raise InputError(
                p,
                None,
                "source_id",
                "an item id twice (membench validate names it)",
                rule="DUPLICATE_SOURCE_ID",
            )
        return cls(d, recs, items, lines)

    def holder_split(self) -> dict[str, str]:
        by_source: dict[str, set[str]] = defaultdict(set)
        for it in self.items:
            by_source[source_of(it.source_id)].add(it.holder)
        return split_holders({k: sorted(v) for k, v in by_source.items()})


def record_items(rec: AnnotationRecord) -> tuple[set[str], bool]:
    """The items a record names (gold, every judgment set, ``{"source_id"}`` distractors), and
    whether it also has an upstream distractor that names no item."""
    names = {g.source_id for g in rec.gold}
    for golds in (rec.judgments or {}).values():
        names |= {g.source_id for g in golds}
    unresolved = False
    for d in rec.origin.distractor or []:
        if isinstance(d, dict) and isinstance(d.get("source_id"), str):
            names.add(d["source_id"])
        else:
            unresolved = True
    return names, unresolved


@dataclass
class Required:
    """What every sub-corpus of a parent keeps (module docstring, rules 1 and 2)."""

    items: set[str]
    whole_holders: dict[str, int]  # holder -> records with an unresolved distractor
    by_reason: dict[str, int]  # "gold or judged" / "distractor" -> items

    def holder_kept_whole(self, holder: str) -> bool:
        return holder in self.whole_holders


def required_items(parent: Parent) -> Required:
    """Every item named by a record's gold, judgments or distractors (both splits), and the
    holders kept whole because a distractor names no item (module docstring)."""
    known = {it.source_id for it in parent.items}
    judged: set[str] = set()
    distract: set[str] = set()
    whole: dict[str, int] = defaultdict(int)
    for r in parent.records:
        judged |= {g.source_id for g in r.gold}
        for golds in (r.judgments or {}).values():
            judged |= {g.source_id for g in golds}
        names, unresolved = record_items(r)
        distract |= names
        if unresolved:
            whole[r.scope.holder] += 1
    distract = (distract - judged) & known
    judged &= known
    return Required(
        judged | distract,
        dict(sorted(whole.items())),
        {"gold or judged": len(judged), "distractor": len(distract)},
    )


def check_keep(parent: Parent, keep: set[str], required: Required | None = None) -> None:
    """Refuse a selection that breaks a rule of the module docstring (a
    :class:`MembenchError` naming the first item or holder and how many)."""
    required = required if required is not None else required_items(parent)
    by_holder: dict[str, list[str]] = defaultdict(list)
    for it in parent.items:
        by_holder[it.holder].append(it.source_id)
    unknown = sorted(keep - set(parent.item_lines))
    if unknown:
        raise MembenchError(
            f"sub-corpus: {len(unknown)} kept item(s) are not items of "
            f"{parent.path} (e.g. {unknown[0]})"
        )
    missing = sorted(required.items - keep)
    if missing:
        raise MembenchError(
            f"sub-corpus: {len(missing)} item(s) named by a record's gold, "
            f"judgments or distractors would be dropped (e.g. {missing[0]})"
        )
    for h, n in required.whole_holders.items():
        if not set(by_holder.get(h, [])) <= keep:
            raise MembenchError(
                f"sub-corpus: holder {h} must be kept whole ({n} record(s) "
                "name an upstream distractor that is no item)"
            )
    empty = sorted(h for h, ids in by_holder.items() if not keep.intersection(ids))
    if empty:
        raise MembenchError(
            f"sub-corpus: {len(empty)} holder(s) would own no item (e.g. "
            f"{empty[0]}): splits are drawn over the holders that own items"
        )


def _manifest_text(manifest: dict[str, Any]) -> str:
    return (
        json.dumps(manifest, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
    )


def _lock_text(digests: dict[str, str]) -> str:
    return (
        json.dumps(
            {
                "about": "sha256 of every set file of this sub-corpus (membench pool wrote it; "
                "subcorpus.json says how it was chosen). membench run and membench validate "
                "check this folder against it by default.",
                "files": dict(sorted(digests.items())),
            },
            indent=2,
        )
        + "\n"
    )


@dataclass
class Written:
    out: Path
    kept: int
    items: int
    digests: dict[str, str]
    unchanged: bool


def write_subcorpus(
    parent: Parent,
    keep: Iterable[str],
    out: str | os.PathLike,
    description: dict[str, Any],
    *,
    force: bool = False,
) -> Written:
    """Write the sub-corpus of ``parent`` keeping the items ``keep`` into ``out`` (module
    docstring), after :func:`check_keep`. ``description`` goes into ``subcorpus.json`` (with
    ``parent_sha256`` and ``files`` added). The folder is written next to ``out`` and renamed
    into place, so ``out`` never holds half a sub-corpus. If ``out`` already holds exactly these
    bytes nothing is written (``unchanged``); another sub-corpus there is replaced only with
    ``force``; a folder holding anything else is refused."""
    keep = set(keep)
    check_keep(parent, keep)
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise InputError(
            out, None, None, "is a file; --out names a folder to write", rule="ARGUMENT"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=out.parent))
    try:
        for m in MODALITIES:
            shutil.copyfile(parent.path / f"{m}.jsonl", tmp / f"{m}.jsonl")
        kept_items = [it for it in parent.items if it.source_id in keep]
        with open(tmp / "items.jsonl", "wb") as f:
            for it in kept_items:
                line = parent.item_lines[it.source_id]
                f.write(line if line.endswith(b"\n") else line + b"\n")
        if (parent.path / "coverage.json").is_file():
            shutil.copyfile(parent.path / "coverage.json", tmp / "coverage.json")
        hsplit = parent.holder_split()
        sub_split = Parent(tmp, parent.records, kept_items, {}).holder_split()
        moved = sorted(h for h, s in sub_split.items() if hsplit.get(h) != s)
        if moved:  # check_keep keeps every holder: it cannot happen; say so if it does
            raise MembenchError(f"sub-corpus: holder {moved[0]} would change split")
        stats = set_stats(parent.records, kept_items, hsplit)
        (tmp / "stats.json").write_text(
            json.dumps(stats, indent=2, sort_keys=True) + "\n", encoding="utf-8"
        )
        digests = set_digests(tmp)
        manifest = {
            **description,
            "parent_sha256": set_digests(parent.path),
            "files": digests,
            "items": {"parent": len(parent.items), "kept": len(kept_items)},
        }
        (tmp / MANIFEST).write_text(_manifest_text(manifest), encoding="utf-8")
        (tmp / OWN_LOCK).write_text(_lock_text(digests), encoding="utf-8")
        for p in tmp.iterdir():
            os.chmod(p, 0o644)
        if out.is_dir() and any(out.iterdir()):
            names = {p.name for p in out.iterdir()}
            same = names == {p.name for p in tmp.iterdir()} and all(
                sha256_file(out / n) == sha256_file(tmp / n) for n in names
            )
            if same:
                return Written(out, len(kept_items), len(parent.items), digests, True)
            if not (out / MANIFEST).is_file() or names - set(FILES):
                raise InputError(
                    out,
                    None,
                    None,
                    "holds files that are not a sub-corpus "
                    "membench pool wrote; choose another --out",
                    rule="ARGUMENT",
                )
            if not force:
                raise InputError(
                    out,
                    None,
                    None,
                    "already holds another sub-corpus; pass "
                    "--force to replace it, or choose another --out",
                    rule="ARGUMENT",
                )
            shutil.rmtree(out)
        elif out.is_dir():
            out.rmdir()
        os.replace(tmp, out)
        os.chmod(out, 0o755)
        return Written(out, len(kept_items), len(parent.items), digests, False)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def read_manifest(sets_dir: str | os.PathLike) -> dict[str, Any] | None:
    """A sub-corpus folder's ``subcorpus.json`` (``None`` for a folder that is not one)."""
    from ..core.jsonl import read_json_file

    p = Path(sets_dir) / MANIFEST
    return read_json_file(p, dict, "a sub-corpus manifest (a JSON object)") if p.is_file() else None


__all__ = [
    "FILES",
    "MANIFEST",
    "OWN_LOCK",
    "Parent",
    "Required",
    "Written",
    "check_keep",
    "lock_for",
    "read_manifest",
    "record_items",
    "required_items",
    "write_subcorpus",
]
