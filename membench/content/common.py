"""What every modality chunker shares: opaque atom ids, atom construction, file reading."""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from ..core.errors import MembenchError
from ..core.paths import confine


def atom_id(source_id: str, extent: dict[str, Any]) -> str:
    """``"a"`` + the first 16 hex digits of sha256(``source_id|canonical extent JSON``).

    Deterministic, and opaque: the source id never appears in clear. Two atoms of one item
    with the same extent get the same id (chunkers merge those)."""
    key = (
        source_id
        + "|"
        + json.dumps(extent, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    )
    return "a" + hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def make_atom(item: SourceItem, extent: dict[str, Any], text: str) -> Atom:
    return Atom(
        atom_id=atom_id(item.source_id, extent),
        source_id=item.source_id,
        modality=item.modality,
        holder=item.holder,
        observed_at=item.observed_at,
        extent=extent,
        text=text,
    )


def dedupe(atoms: list[Atom]) -> list[Atom]:
    """Keep the first atom of each id; a later atom with the same extent and other text has its
    text appended (so nothing read is lost)."""
    out: dict[str, Atom] = {}
    for a in atoms:
        old = out.get(a.atom_id)
        if old is None:
            out[a.atom_id] = a
        elif a.text and a.text not in old.text:
            out[a.atom_id] = Atom(
                old.atom_id,
                old.source_id,
                old.modality,
                old.holder,
                old.observed_at,
                old.extent,
                (old.text + "\n" + a.text).strip(),
            )
    return list(out.values())


def item_file(item: SourceItem, corpus_root: Path) -> Path:
    """The item's file under the corpus root, confined to it (symlinks resolved: a path that
    leaves the root is an ``InputError``, never read) and present."""
    if item.path is None:
        raise MembenchError(f"{item.source_id}: a {item.modality} item needs a path")
    p = confine(corpus_root, item.path, field=f"{item.source_id}.path")
    if not p.is_file():
        raise MembenchError(f"{item.source_id}: file {p} not found under the corpus root")
    return p


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def write_json_atomic(path: Path, obj: Any) -> None:
    """Write JSON so that a concurrent reader sees either nothing or the whole file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(obj, f, ensure_ascii=False, separators=(",", ":"))
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_json(path: Path) -> Any | None:
    """The cached object, or None when missing or unreadable (a torn or foreign file is treated
    as a cache miss, never as data)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
