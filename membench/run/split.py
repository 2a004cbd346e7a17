"""The split a run answers, and the check of the sets before it.

:func:`select_split` / :func:`load_split`: the records of one split in presentation order and
the items its holders' systems ingest; :func:`check_sets_before_run`: every hard rule of the
sets (with the corpus and the lock when given) before anything is ingested, once for
unchanged inputs and code (a pass is remembered in ``cache_dir("validate")``, so the runs and
report kernels of one ``make all`` check the sets once); :func:`check_limit`: ``--limit``'s
bound; :func:`read_items`: every item of ``items.jsonl`` (a process that turned
:data:`KEEP_ITEMS` on, as the test suite does, parses an unchanged file once). The runner
(:mod:`membench.run.runner`), the run's keeper process (:mod:`membench.run.keeper`), the
importer and scoring read these. Reads the sets, the manifest, the lock and the corpus; writes
only the pass markers under ``cache_dir("validate")``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from ..contract.schema import AnnotationRecord, SourceItem
from ..core.errors import InputError, MembenchError
from ..core.jsonl import read_models, sha256_file
from ..core.paths import MANIFEST_PATH
from ..sets.build import set_digests, split_holders
from ..sets.select import check_modalities, presentation_order, select_records


@dataclass
class SplitData:
    records: list[AnnotationRecord]
    items: list[SourceItem]


def load_split(
    sets_dir: Path,
    split: str,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    sample_seed: int | None = None,
) -> SplitData:
    """Records and items of one split: the records :func:`membench.sets.select.select_records`
    picks (``limit``: N queries per modality, hash-chosen; ``sample_seed``: another hash) in
    presentation order (:func:`membench.sets.select.presentation_order`), and the items of the
    split's holders in the selected modalities (with ``limit``: only of the holders those
    records are asked of). Scoring reads this, and the run's keeper process
    (:mod:`membench.run.keeper`); the process that runs a system does not (it gets topics)."""
    recs, positions, items_all = select_split(sets_dir, split, modalities, limit, sample_seed)
    return SplitData(recs, [items_all[i] for i in positions])


#: keep the items of the last ``items.jsonl`` read in this process (:func:`read_items`); off
#: by default: a run reads them once, and a kept copy would only hold their memory
KEEP_ITEMS = False
_KEPT: dict[tuple, list[SourceItem]] = {}


def _copy_json(v):
    """A copy of a JSON value (dicts and lists copied, all the way down)."""
    if isinstance(v, dict):
        return {k: _copy_json(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_copy_json(x) for x in v]
    return v


def read_items(sets_dir: Path) -> list[SourceItem]:
    """Every item of ``sets_dir/items.jsonl``, validated, in file order. With
    :data:`KEEP_ITEMS`, the parse is kept for the process under the file's resolved path and
    sha256 (a file written again is read again, however quickly), and every call gets items of
    its own (copies, ``meta`` included: a caller may change what it got)."""
    p = Path(sets_dir) / "items.jsonl"
    if not KEEP_ITEMS:
        return read_models(p, SourceItem)
    key = (str(p.resolve()), sha256_file(p))
    kept = _KEPT.get(key)
    if kept is None:
        kept = read_models(p, SourceItem)
        if sha256_file(p) == key[1]:  # not changed while it was read
            _KEPT.clear()  # the last file read only
            _KEPT[key] = kept
    return [it.model_copy(update={"meta": _copy_json(it.meta)}) for it in kept]


def select_split(
    sets_dir: Path,
    split: str,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    sample_seed: int | None = None,
) -> tuple[list[AnnotationRecord], list[int], list[SourceItem]]:
    """:func:`load_split`'s selection: the records in presentation order, the positions in
    ``items.jsonl`` (0-based) of the items a system ingests, and every item of the file."""
    sets_dir = Path(sets_dir)
    mods = check_modalities(modalities)
    items_all = read_items(sets_dir)
    by_source: dict[str, set[str]] = {}
    for it in items_all:
        by_source.setdefault(it.source_id.split(":", 1)[0], set()).add(it.holder)
    hsplit = split_holders({k: sorted(v) for k, v in by_source.items()})
    positions = [
        i for i, it in enumerate(items_all) if hsplit[it.holder] == split and it.modality in mods
    ]
    recs, locs = select_records(sets_dir, split, mods, limit, sample_seed)
    for r, (f, no) in zip(recs, locs):
        if hsplit.get(r.scope.holder) != split:
            raise InputError(
                f,
                no,
                "scope.holder",
                f"{r.query_id}: split {split} but holder "
                f"{r.scope.holder} is {hsplit.get(r.scope.holder)}",
                rule="SPLIT_LEAK",
            )
    if limit is not None:
        asked = {r.scope.holder for r in recs}
        positions = [i for i in positions if items_all[i].holder in asked]
    rank = {q: i for i, q in enumerate(presentation_order(r.query_id for r in recs))}
    return sorted(recs, key=lambda r: rank[r.query_id]), positions, items_all


_PASSED: set[tuple] = set()  # inputs that passed check_sets_before_run in this process


def _fingerprint(
    sets_dir: Path, corpus_root: Path | None, manifest: Path, lock: Path | None
) -> tuple:
    """What the check depends on: the set files' and manifest's and lock's sha256, and every
    corpus file's (path, size, mtime, inode). Any change means checking again."""

    def digest(p: Path | None) -> str | None:
        return sha256_file(p) if p is not None and Path(p).is_file() else None

    corpus: list[tuple] = []
    if corpus_root is not None:
        for dirpath, dirnames, filenames in os.walk(corpus_root):
            for n in sorted(filenames + dirnames):
                st = os.lstat(os.path.join(dirpath, n))
                corpus.append((dirpath, n, st.st_size, st.st_mtime_ns, st.st_ino, st.st_mode))
    return (
        str(Path(sets_dir).resolve()),
        tuple(sorted(set_digests(sets_dir).items())),
        digest(manifest),
        digest(lock),
        str(corpus_root),
        tuple(sorted(corpus)),
    )


VALIDATE_CACHE_VERSION = "validate-pass-1"


def _pass_marker(fingerprint: tuple) -> Path | None:
    """The file that says these inputs (:func:`_fingerprint`) passed every hard rule under
    this code (membench's own source, :func:`membench.core.hashing.source_digest`, and
    pydantic's version, which reads the records): ``cache_dir("validate")/<sha256>.passed``;
    None when the cache cannot be made."""
    import hashlib
    import importlib.metadata as md

    from ..core.hashing import source_digest
    from ..core.paths import cache_dir

    try:
        pyd = md.version("pydantic")
    except md.PackageNotFoundError:
        pyd = "none"
    h = hashlib.sha256(
        f"{VALIDATE_CACHE_VERSION}\nsource={source_digest()}\n"
        f"pydantic=={pyd}\n{fingerprint!r}".encode("utf-8", "surrogatepass")
    )
    try:
        return cache_dir("validate") / f"{h.hexdigest()}.passed"
    except OSError:
        return None


def check_sets_before_run(
    sets_dir: Path,
    corpus_root: Path | None,
    manifest: Path = MANIFEST_PATH,
    lock: Path | None = None,
) -> None:
    """Refuse sets that break a hard rule (:func:`membench.sets.validate.validate_sets`, with
    the corpus when given and the lock when given): the first error as a located
    :class:`InputError`, with the count of the others. Warnings pass. Inputs that passed once
    (same :func:`_fingerprint`, same code: :func:`_pass_marker`), in this process or another,
    are not checked again. Reads the sets, the manifest, the lock and the corpus; writes the
    pass marker."""
    from ..sets.validate import validate_sets

    if not (Path(sets_dir) / "items.jsonl").is_file():
        what = "does not exist" if not Path(sets_dir).exists() else "holds no items.jsonl"
        raise MembenchError(
            f"{sets_dir}: {what}: the sets are not built; build them with "
            "`membench build` (or `make sets`), then run again"
        )
    key = _fingerprint(Path(sets_dir), corpus_root, Path(manifest), lock)
    if key in _PASSED:
        return
    marker = _pass_marker(key)
    if marker is not None and marker.is_file():
        _PASSED.add(key)
        return
    errors = [
        f
        for f in validate_sets(Path(sets_dir), Path(manifest), lock=lock, corpus=corpus_root)
        if f.level == "error"
    ]
    if not errors:
        _remember(key, marker)
        return
    first = errors[0]
    more = (
        (
            f" (and {len(errors) - 1} more error(s): `membench validate --sets "
            f"{sets_dir}` lists them)"
        )
        if len(errors) > 1
        else ""
    )
    raise InputError(
        first.file,
        first.line,
        None,
        f"{first.message}{more}; a run needs sets that pass every hard rule",
        rule=first.rule,
    )


def _remember(key: tuple, marker: Path | None) -> None:
    _PASSED.add(key)
    if marker is not None:
        try:
            marker.write_text("passed\n", encoding="utf-8")
        except OSError:
            pass  # a read-only cache only costs the check again


def remember_pass(
    sets_dir: Path,
    corpus_root: Path | None,
    manifest: Path = MANIFEST_PATH,
    lock: Path | None = None,
) -> None:
    """Record that these inputs passed every hard rule (``membench validate`` with the audit,
    no error), so :func:`check_sets_before_run` on the same inputs does not check again."""
    key = _fingerprint(Path(sets_dir), corpus_root, Path(manifest), lock)
    _remember(key, _pass_marker(key))


def check_limit(limit: int | None) -> None:
    """``--limit``: ``None`` (every query) or an integer >= 1 (a :class:`MembenchError`
    otherwise: 0 would run nothing and succeed, a negative one would run everything)."""
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise MembenchError(
            f"--limit must be an integer >= 1 (queries per modality), got {limit!r}"
        )
