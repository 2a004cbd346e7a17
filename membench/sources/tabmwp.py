"""TabMWP (test1k): math word problems over one table image each. Reads ``tabmwp/`` under the
corpus root (lupantech/PromptPG ``data/tabmwp/problems_test1k.json``, ``{pid: {question,
choices, answer, unit, table_title, table, ques_type, ans_type, ...}}``, and
``tables/<pid>.png``); writes nothing. Start at :func:`load`.

* Items: one per distinct image content (by sha256), ``tabmwp:<pid>.png`` for the smallest pid
  in numeric order, the other pids in ``meta["aliases"]`` (each counted as a fix); ``meta``
  ``{width, height, sha256}``; every question's gold points at the canonical item.
* Holders: ``base.hash_groups(canonical source ids, 10, "tabmwp-holders")`` ->
  ``tabmwp/roll-<k:02d>``. observed_at: synthetic (:func:`base.synthetic_timeline`, UTC).
* Records: ``tabmwp:<pid>``; question and answer verbatim (strings; "4,656" and "3/10" stay
  as written); ``answer_format`` from ``ans_type`` (integer_number -> int, decimal_number ->
  float, the text types -> str); ``choices`` and ``unit`` go untouched into ``origin.notes``
  (JSON, keys only when present), with ``"upstream_image"`` when the question's image was
  merged into another pid's item. Gold ``[Gold(source_id, {})]`` (whole image).
* texts: ``table`` (after ``table_title`` when there is one), for the derivation's guards only,
  never a system's input.

The image helpers here (:func:`image_meta`, :func:`read_images`, :func:`group_identical`,
:func:`alias_lists`) are shared with the FinChart and VisRAG adapters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from ..core import content_guard as guard
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    hash_groups,
    open_upstream,
    read_json,
    rel,
    synthetic_timeline,
)

KEY = "tabmwp"
SPEC = BY_KEY[KEY]
FOLDER = SPEC.folder
DATASET = "lupantech/PromptPG"
ANNOTATION = "problems_test1k.json"
TABLES = "tables"
N_HOLDERS = 10
HOLDER_SALT = "tabmwp-holders"

ANS_FORMAT = {
    "integer_number": "int",
    "decimal_number": "float",
    "boolean_text": "str",
    "extractive_text": "str",
    "other_text": "str",
}

MERGED = "byte-identical duplicate image merged"


# --------------------------------------------------------------------------- shared helpers


def image_meta(p: Path) -> dict[str, Any] | None:
    """``{width, height, sha256}`` of an image file, or ``None`` when the content layer's door
    refuses it (:mod:`membench.core.content_guard`: a header Pillow cannot read, a file that
    ends early or does not decode, a size past ``image_pixels``, a file past
    ``content_file_bytes``): the caller counts it as not covered, so the build goes on."""
    try:
        data = guard.read_bytes(p)
        with guard.open_image(p, load=True) as im:
            w, h = im.size
    except guard.ContentError:
        return None
    return {"width": int(w), "height": int(h), "sha256": hashlib.sha256(data).hexdigest()}


def read_images(
    paths: Iterable[Path], key: Callable[[Path], str]
) -> tuple[dict[str, dict[str, Any]], set[str]]:
    """:func:`image_meta` of every file by ``key(file)``, and the keys of the files Pillow
    cannot read. Reads the files, writes nothing."""
    metas: dict[str, dict[str, Any]] = {}
    unreadable: set[str] = set()
    for p in paths:
        m = image_meta(p)
        if m is None:
            unreadable.add(key(p))
        else:
            metas[key(p)] = m
    return metas, unreadable


def group_identical(
    metas: dict[str, dict[str, Any]], order: Callable[[str], Any]
) -> dict[str, str]:
    """Map every name to its canonical name: names whose images share a sha256 collapse onto
    the one that sorts first under ``order``."""
    by_hash: dict[str, list[str]] = {}
    for name, m in metas.items():
        by_hash.setdefault(m["sha256"], []).append(name)
    canon: dict[str, str] = {}
    for names in by_hash.values():
        first = min(names, key=order)
        for n in names:
            canon[n] = first
    return canon


def alias_lists(canon: dict[str, str], order: Callable[[str], Any]) -> dict[str, list[str]]:
    """Canonical name -> the other names merged onto it, sorted under ``order`` (only canonical
    names that have any)."""
    aliases: dict[str, list[str]] = {}
    for name, c in canon.items():
        if name != c:
            aliases.setdefault(c, []).append(name)
    return {c: sorted(names, key=order) for c, names in aliases.items()}


def notes_json(d: dict[str, Any]) -> str | None:
    d = {k: v for k, v in d.items() if v is not None}
    return json.dumps(d, ensure_ascii=False, sort_keys=True) if d else None


def _pid_order(pid: str) -> tuple:
    return (0, int(pid), pid) if pid.isdigit() else (1, 0, pid)


def _sid(pid: str) -> str:
    return f"{KEY}:{pid}.png"


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/tabmwp``, map it to items and records, account for every problem."""
    up = open_upstream(corpus_root, SPEC, files={ANNOTATION: "TabMWP annotation file"})
    cov = Coverage(source=KEY)
    revision = up.revision(ANNOTATION, cov)
    rows = _read(up)
    made = _map(up, rows, revision)
    _account(cov, made)
    return made.result(cov)


@dataclass
class _Rows:
    problems: dict[str, Any]  # problems_test1k.json: pid -> problem, as upstream
    images: dict[str, dict[str, Any]]  # tables/<pid>.png: pid -> {width, height, sha256}
    unreadable: set[str]  # pids whose png Pillow cannot read


def _read(up: Upstream) -> _Rows:
    """problems_test1k.json (an object ``{pid: problem}``) and every ``tables/*.png``, each
    read once. Raises InputError (SCHEMA) on a file that is not such an object."""
    ann = up.folder / ANNOTATION
    problems = read_json(ann, dict, "an object {pid: problem}")
    tables = up.folder / TABLES
    pngs = sorted(tables.glob("*.png")) if tables.is_dir() else []
    images, unreadable = read_images(pngs, lambda p: p.stem)
    return _Rows(problems, images, unreadable)


def _map(up: Upstream, rows: _Rows, revision: str) -> Mapped:
    """Items (one per distinct image, aliases merged), one outcome per problem in pid order,
    and the table texts of the covered problems' own images."""
    made = Mapped()
    canon = group_identical(rows.images, _pid_order)
    aliases = alias_lists(canon, _pid_order)
    n_merged = sum(len(v) for v in aliases.values())
    if n_merged:
        made.fix(MERGED, n_merged)

    canon_ids = sorted({_sid(c) for c in canon.values()})
    groups = hash_groups(canon_ids, N_HOLDERS, HOLDER_SALT)
    observed = synthetic_timeline(canon_ids)
    for c in sorted(set(canon.values()), key=_sid):
        sid = _sid(c)
        m = rows.images[c]
        meta = {"width": m["width"], "height": m["height"], "sha256": m["sha256"]}
        if c in aliases:
            meta["aliases"] = [f"{a}.png" for a in aliases[c]]
        made.items.append(
            SourceItem(
                source_id=sid,
                modality="image",
                holder=f"{KEY}/roll-{groups[sid]:02d}",
                observed_at=observed[sid],
                path=rel(up.root, up.folder / TABLES / f"{c}.png"),
                meta=meta,
            )
        )
    holder_of = {it.source_id: it.holder for it in made.items}

    texts: dict[str, str] = {}
    for pid in sorted(rows.problems, key=_pid_order):
        prob = rows.problems[pid]
        out = _record(pid, prob, rows, canon, holder_of, revision)
        made.outcomes.append(out)
        if isinstance(out, str):
            continue
        table = prob.get("table")
        if pid == canon[pid] and isinstance(table, str) and table.strip():
            title = prob.get("table_title")
            texts[_sid(pid)] = f"{title}\n{table}" if isinstance(title, str) and title else table
    made.texts = dict(sorted(texts.items()))
    return made


def _record(
    pid: str,
    prob: Any,
    rows: _Rows,
    canon: dict[str, str],
    holder_of: dict[str, str],
    revision: str,
) -> RecordDraft | str:
    """The record of one problem, or why it is not covered."""
    if not isinstance(prob, dict):
        return "malformed problem"
    question = prob.get("question")
    if not isinstance(question, str) or not question.strip():
        return "empty question"
    fmt = ANS_FORMAT.get(prob.get("ans_type"))  # type: ignore[arg-type]
    if fmt is None:
        return "unknown ans_type"
    answer = prob.get("answer")
    if not isinstance(answer, str) or not answer.strip():
        return "missing answer"
    if pid in rows.unreadable:
        return "image unreadable"
    if pid not in canon:
        return "image not in mirror"
    c = canon[pid]
    sid = _sid(c)
    choices = prob.get("choices")
    notes = notes_json(
        {
            "choices": choices if choices else None,
            "unit": prob.get("unit") or None,
            "upstream_image": f"{TABLES}/{pid}.png" if pid != c else None,
        }
    )
    return RecordDraft(
        query_id=f"{KEY}:{pid}",
        modality="image",
        question=question,
        answer=answer,
        answer_format=fmt,
        gold=[Gold(source_id=sid, region={})],
        scope=Scope(holder=holder_of[sid], session=None, scenario=SPEC.scenario),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revision,
            item=f"{ANNOTATION}#{pid}",
            license=SPEC.license,
            notes=notes,
        ),
    )


def _account(cov: Coverage, made: Mapped) -> None:
    """Coverage: every problem's outcome and the merges (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes.append("one question per table image; gold = the whole canonical image (region {})")
    cov.notes.append("answers kept verbatim as upstream strings; answer_format from ans_type")
    cov.notes.append(
        "choices/unit are not in the question text upstream: kept in origin.notes "
        "as JSON, question unchanged"
    )
