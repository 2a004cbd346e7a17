"""VisRAG retrieval test sets (not in this mirror; tested on a fixture). Reads
``visrag/<Set>/`` under the corpus root; writes nothing. Start at :func:`load`.
Why longer: the upstream format, the mirror layout and the mapping are this adapter's contract.

Upstream: the Hugging Face datasets ``openbmb/VisRAG-Ret-Test-{ArxivQA, ChartQA, MP-DocVQA,
InfoVQA, PlotQA, SlideVQA}``, three parquet configs each (split ``train``): corpus
``corpus-id``, ``image``; queries ``query-id``, ``query``, ``answer``, ``options`` (ArxivQA),
``is_numerical``; qrels ``query-id``, ``corpus-id``, ``score`` (as OpenBMB/VisRAG's
``scripts/generate/generate.py`` reads them).

Mirror layout, ``visrag/<Set>/`` (``ChartQA`` or ``VisRAG-Ret-Test-ChartQA``, ...):

* queries: ``queries.jsonl`` in BEIR form (``_id``, ``text``; the other fields top level or
  under ``metadata``; parquet column names accepted), else ``queries/*.parquet`` if pyarrow
  is importable (it is not a dependency);
* qrels: ``qrels/test.tsv`` (``query-id<TAB>corpus-id<TAB>score``, header optional; else other
  ``qrels/*.tsv``), else ``qrels/*.parquet``; text forms win over parquet;
* corpus: image files in ``corpus/`` named by corpus-id (or its stem); ids without a file are
  "not in mirror";
* ``visrag/PROVENANCE.jsonl`` gives ``origin.dataset`` and ``origin.revision`` (qrels file's
  commit, else the queries file's); without it ``openbmb/VisRAG-Ret-Test-<Set>`` and
  ``unknown`` (noted). A malformed line is an error (:func:`base.read_provenance`).

Mapping: one holder per set (``visrag/<set lowercased>``); an item per corpus image file
(``visrag:<set>/<file name>``, meta ``{width, height, sha256}``; byte-identical images are not
merged, their count is noted); one record per query (``visrag:<set>:<query-id>``), gold every
qrels row with score > 0, region ``{}``. A query with no positive qrels or a missing or
unreadable gold image is not covered. Question and answer verbatim, ``answer_format`` from the
answer's JSON type (``none`` without one), ``options`` / ``is_numerical`` into ``origin.notes``.
observed_at: synthetic, hash order, UTC. No texts.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from ..core.errors import InputError
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    json_answer_format,
    open_upstream,
    rel,
    synthetic_timeline,
)
from .tabmwp import notes_json, read_images

KEY = "visrag"
SPEC = BY_KEY[KEY]
FOLDER = SPEC.folder
PREFIX = "VisRAG-Ret-Test-"
KNOWN_SETS = {
    n.lower(): n for n in ("ArxivQA", "ChartQA", "MP-DocVQA", "InfoVQA", "PlotQA", "SlideVQA")
}
IMAGE_EXT = {".png", ".jpg", ".jpeg", ".gif", ".bmp", ".webp", ".tif", ".tiff"}


def _have_pyarrow() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def _read_parquet(files: list[Path]) -> list[dict[str, Any]]:
    import pyarrow.parquet as pq  # optional; callers check _have_pyarrow()

    rows: list[dict[str, Any]] = []
    for f in files:
        rows.extend(pq.read_table(f).to_pylist())
    return rows


def _set_name(dirname: str) -> str:
    base = dirname.removeprefix(PREFIX)
    return KNOWN_SETS.get(base.lower(), base)


# --------------------------------------------------------------------------- readers


def _queries(set_dir: Path) -> tuple[list[tuple[str | None, dict]], Path]:
    """``[(query id or None when malformed, row)]`` in file order, and the file read (the
    first parquet file when the rows come from parquet)."""
    jl = set_dir / "queries.jsonl"
    if jl.is_file():
        out: list[tuple[str | None, dict]] = []
        for line in jl.read_text(encoding="utf-8").splitlines():
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError:
                out.append((None, {}))
                continue
            if not isinstance(obj, dict):
                out.append((None, {}))
                continue
            meta = obj.get("metadata") if isinstance(obj.get("metadata"), dict) else {}
            qid = obj.get("_id", obj.get("query-id"))
            row = {"query": obj.get("text", obj.get("query"))}
            for k in ("answer", "options", "is_numerical"):
                row[k] = obj[k] if k in obj else meta.get(k)
            out.append((str(qid) if qid is not None and str(qid) != "" else None, row))
        return out, jl
    pq_files = sorted((set_dir / "queries").glob("*.parquet"))
    if pq_files:
        if not _have_pyarrow():
            raise InputError(
                set_dir / "queries.jsonl",
                None,
                None,
                "only parquet queries found and pyarrow is not importable: "
                "install pyarrow or provide queries.jsonl",
                rule="MISSING_FILE",
            )
        out = []
        for r in _read_parquet(pq_files):
            qid = r.get("query-id")
            out.append(
                (
                    str(qid) if qid is not None and str(qid) != "" else None,
                    {k: r.get(k) for k in ("query", "answer", "options", "is_numerical")},
                )
            )
        return out, pq_files[0]
    raise InputError(
        set_dir / "queries.jsonl",
        None,
        None,
        "no queries.jsonl or queries/*.parquet in this VisRAG test set",
        rule="MISSING_FILE",
    )


def _qrels(set_dir: Path) -> tuple[list[tuple[str, str, int]], Path, int]:
    """``[(query id, corpus id, score)]`` in file order, the file read (the first parquet file
    when the rows come from parquet) and how many malformed rows were ignored."""
    qdir = set_dir / "qrels"
    test = qdir / "test.tsv"
    tsvs = [test] if test.is_file() else sorted(qdir.glob("*.tsv"))
    rows: list[tuple[str, str, int]] = []
    malformed = 0
    if tsvs:
        for f in tsvs:
            reader = csv.reader(io.StringIO(f.read_text(encoding="utf-8")), delimiter="\t")
            for n, rec in enumerate(reader):
                rec = [c.strip() for c in rec]
                if not any(rec):
                    continue
                if n == 0 and rec[:2] == ["query-id", "corpus-id"]:
                    continue
                if len(rec) == 4:  # TREC form: qid 0 docid rel
                    rec = [rec[0], rec[2], rec[3]]
                try:
                    qid, cid, score = rec[0], rec[1], int(float(rec[2]))
                    if not qid or not cid:
                        raise ValueError
                except (IndexError, ValueError):
                    malformed += 1
                    continue
                rows.append((qid, cid, score))
        return rows, tsvs[0], malformed
    pq_files = sorted(qdir.glob("*.parquet"))
    if pq_files:
        if not _have_pyarrow():
            raise InputError(
                test,
                None,
                None,
                "only parquet qrels found and pyarrow is not "
                "importable: install pyarrow or provide qrels/test.tsv",
                rule="MISSING_FILE",
            )
        for r in _read_parquet(pq_files):
            try:
                qid, cid, score = str(r["query-id"]), str(r["corpus-id"]), int(r["score"])
            except (KeyError, TypeError, ValueError):
                malformed += 1
                continue
            rows.append((qid, cid, score))
        return rows, pq_files[0], malformed
    raise InputError(
        test,
        None,
        None,
        "no qrels/test.tsv or qrels/*.parquet in this VisRAG test set",
        rule="MISSING_FILE",
    )


def _resolve(cid: str, by_name: dict[str, str], by_stem: dict[str, list[str]]) -> str | None | bool:
    """File name for a corpus-id (exact name, else unique stem); None when absent; False when
    ambiguous."""
    if cid in by_name:
        return by_name[cid]
    cands = by_stem.get(cid, [])
    if len(cands) == 1:
        return cands[0]
    return False if cands else None


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    """Read every test set under ``<corpus_root>/visrag``, map them to items and records,
    account for every query."""
    up = open_upstream(corpus_root, SPEC, folder="VisRAG folder")
    sets = _read(up)
    cov = Coverage(source=KEY)
    revisions = {
        st.key: up.revision(
            [_mirror_path(up, st.qrels_file), _mirror_path(up, st.queries_file)], cov
        )
        for st in sets
    }
    made = _map(up, sets, revisions)
    _account(cov, sets, made)
    return made.result(cov)


@dataclass
class _Set:
    dir: Path
    name: str  # ChartQA, ...
    key: str  # lower-cased name: holder and ids
    queries: list[tuple[str | None, dict]]  # see _queries
    queries_file: Path
    qrels: list[tuple[str, str, int]]  # see _qrels
    qrels_file: Path
    malformed_qrels: int
    images: list[Path]  # corpus image files, sorted
    metas: dict[str, dict[str, Any]]  # file name -> {width, height, sha256}
    unreadable: set[str]  # file names Pillow cannot read


def _read(up: Upstream) -> list[_Set]:
    """Every test set folder: its queries, qrels and corpus images. Raises InputError when
    there is no set, two folders name the same set, or a set lacks queries or qrels."""
    set_dirs = sorted(p for p in up.folder.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not set_dirs:
        raise InputError(up.folder, None, None, "no VisRAG test set folders", rule="MISSING_FILE")
    sets: list[_Set] = []
    seen_sets: dict[str, str] = {}
    for set_dir in set_dirs:
        name = _set_name(set_dir.name)
        skey = name.lower()
        if skey in seen_sets:
            raise InputError(
                set_dir,
                None,
                None,
                f"two folders for test set {name!r} ({seen_sets[skey]} and {set_dir.name})",
                rule="DUPLICATE",
            )
        seen_sets[skey] = set_dir.name
        queries, qfile = _queries(set_dir)
        qrels, rfile, malformed = _qrels(set_dir)
        cdir = set_dir / "corpus"
        files = (
            sorted(
                p
                for p in cdir.iterdir()
                if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXT
            )
            if cdir.is_dir()
            else []
        )
        metas, unreadable = read_images(files, lambda p: p.name)
        sets.append(
            _Set(
                set_dir,
                name,
                skey,
                queries,
                qfile,
                qrels,
                rfile,
                malformed,
                files,
                metas,
                unreadable,
            )
        )
    return sets


def _mirror_path(up: Upstream, f: Path) -> str:
    """A file's path under visrag/, as PROVENANCE.jsonl names it."""
    return f.relative_to(up.folder).as_posix()


@dataclass
class _Made(Mapped):
    n_dup_images: int = 0  # corpus images byte-identical to another of the same set (notes)


def _map(up: Upstream, sets: list[_Set], revisions: dict[str, str]) -> _Made:
    """Items (every readable corpus image; one holder per set) and one outcome per query."""
    made = _Made()
    pending: list[tuple[str, str, str, dict[str, Any]]] = []  # (source_id, holder, path, meta)
    for st in sets:
        holder = f"{KEY}/{st.key}"
        rprov = up.provenance.get(_mirror_path(up, st.qrels_file), {})
        qprov = up.provenance.get(_mirror_path(up, st.queries_file), {})
        dataset = (
            rprov.get("upstream_repo") or qprov.get("upstream_repo") or f"openbmb/{PREFIX}{st.name}"
        )

        # ---- corpus images
        by_name: dict[str, str] = {}
        by_stem: dict[str, list[str]] = {}
        hashes: dict[str, int] = {}
        for p in st.images:
            by_name[p.name] = p.name
            by_stem.setdefault(p.stem, []).append(p.name)
            if p.name in st.metas:
                m = st.metas[p.name]
                hashes[m["sha256"]] = hashes.get(m["sha256"], 0) + 1
                pending.append((f"{KEY}:{st.key}/{p.name}", holder, rel(up.root, p), m))
        made.n_dup_images += sum(n - 1 for n in hashes.values())

        # ---- qrels by query
        known = {q for q, _ in st.queries if q is not None}
        positives: dict[str, dict[str, int]] = {}
        judged: set[str] = set()
        for qid, cid, score in st.qrels:
            if qid not in known:
                made.fix(f"{st.key}: qrels row for unknown query ignored")
                continue
            judged.add(qid)
            if score > 0:
                prev = positives.setdefault(qid, {}).get(cid)
                if prev is not None:
                    made.fix(f"{st.key}: duplicate qrels row merged")
                positives[qid][cid] = max(score, prev or 0)

        # ---- records
        seen: set[str] = set()
        for qid, row in st.queries:
            made.outcomes.append(
                _record(
                    st,
                    qid,
                    row,
                    seen,
                    positives,
                    judged,
                    by_name,
                    by_stem,
                    str(dataset),
                    revisions[st.key],
                )
            )

    # ---- observed_at: synthetic timeline in hash order of the source ids
    observed = synthetic_timeline(sid for sid, _, _, _ in pending)
    made.items = [
        SourceItem(
            source_id=sid, modality="image", holder=h, observed_at=observed[sid], path=path, meta=m
        )
        for sid, h, path, m in sorted(pending)
    ]
    return made


def _record(
    st: _Set,
    qid: str | None,
    row: dict,
    seen: set[str],
    positives: dict[str, dict[str, int]],
    judged: set[str],
    by_name: dict[str, str],
    by_stem: dict[str, list[str]],
    dataset: str,
    revision: str,
) -> RecordDraft | str:
    """The record of one query of a test set, or why it is not covered."""
    if qid is None:
        return "malformed query"
    if qid in seen:
        return "duplicate query-id"
    seen.add(qid)
    question = row.get("query")
    if not isinstance(question, str) or not question.strip():
        return "empty query"
    answer = row.get("answer")
    fmt = "none" if answer is None else json_answer_format(answer)
    if fmt is None:
        return "unsupported answer type"
    pos = positives.get(qid)
    if not pos:
        return "no positive qrels" if qid in judged else "no qrels"
    gold: list[Gold] = []
    for cid in sorted(pos):
        f = _resolve(cid, by_name, by_stem)
        if f is False:
            return "ambiguous corpus image"
        if f is None:
            return "gold image not in mirror"
        if f in st.unreadable:
            return "gold image unreadable"
        gold.append(Gold(source_id=f"{KEY}:{st.key}/{f}", region={}))
    options = row.get("options")
    return RecordDraft(
        query_id=f"{KEY}:{st.key}:{qid}",
        modality="image",
        question=question,
        answer=answer,
        answer_format=fmt,
        gold=sorted(gold, key=lambda g: g.source_id),
        scope=Scope(holder=f"{KEY}/{st.key}", session=None, scenario=SPEC.scenario),
        unanswerable=False,
        origin=Origin(
            dataset=dataset,
            revision=revision,
            item=f"query-id:{qid}",
            license=SPEC.license,
            notes=notes_json(
                {
                    "options": list(options) if options else None,
                    "is_numerical": row.get("is_numerical"),
                }
            ),
        ),
    )


def _account(cov: Coverage, sets: list[_Set], made: _Made) -> None:
    """Coverage: every query's outcome and the repairs (:func:`base.book`), what reading found
    per set, then the notes. Writes only ``cov``."""
    book(cov, made)
    for st in sets:
        if st.malformed_qrels:
            cov.fix(f"{st.key}: malformed qrels row ignored", st.malformed_qrels)
        if st.queries_file.suffix == ".parquet":
            cov.notes.append(f"{st.dir.name}: queries read from parquet")
        if st.qrels_file.suffix == ".parquet":
            cov.notes.append(f"{st.dir.name}: qrels read from parquet")
        if st.unreadable:
            cov.notes.append(
                f"{st.key}: {len(st.unreadable)} corpus image(s) unreadable, not items"
            )
    if len(sets) < 2:
        cov.notes.append("only one test set: one holder (derived unanswerables need two)")
    if made.n_dup_images:
        cov.notes.append(
            f"{made.n_dup_images} corpus image(s) byte-identical to another of the "
            "same set (kept: corpus ids are upstream identity)"
        )
    cov.notes.append("gold = qrels score > 0, whole image; texts: none")
