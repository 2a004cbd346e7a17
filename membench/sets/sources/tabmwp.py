"""TabMWP (test1k) adapter: math word problems over one table image each.

Upstream: lupantech/PromptPG ``data/tabmwp/problems_test1k.json`` (``{pid: {question, choices,
answer, unit, table_title, table, table_for_pd, ques_type, ans_type, ...}}``) and
``tables/<pid>.png``. Mirror folder ``tabmwp/``.

* Items: one per distinct image *content*. Images are grouped by sha256; byte-identical
  duplicates collapse into one item whose canonical name is the smallest pid in numeric order;
  the other pids are listed in ``meta["aliases"]`` and each is counted with
  ``coverage.fix("byte-identical duplicate image merged")``. Every question's gold points at
  the canonical item. ``source_id`` ``tabmwp:<pid>.png``, ``meta`` ``{width, height, sha256}``.
* Holders: photo rolls, ``base.hash_groups(canonical source ids, 10, "tabmwp-holders")`` ->
  ``tabmwp/roll-<k:02d>``.
* observed_at: no time structure upstream, so a synthetic timeline
  (``base.synthetic_timeline``) over the sorted canonical source ids, in UTC.
* Records: ``query_id`` ``tabmwp:<pid>``; question and answer verbatim (answers are strings
  upstream, kept as strings); ``answer_format`` from ``ans_type``: integer_number -> int,
  decimal_number -> float, boolean_text / extractive_text / other_text -> str. Some "int"
  answers carry thousands separators ("4,656") and some "float" answers are fractions ("3/10");
  they stay verbatim (a scorer must parse them). Multiple-choice options and the answer unit
  are not part of the question text upstream: they go, untouched, into ``origin.notes`` as a
  JSON object ``{"choices": [...], "unit": "..."}`` (keys only when present), together with
  ``"upstream_image"`` when the question's own image was merged into another pid's item.
  The question text itself is never altered. Gold ``[Gold(source_id, {})]`` (whole image).
* texts: the upstream ``table`` field (prefixed by ``table_title`` when there is one), used
  only for re-scoping decisions, never as a system's input.

The small image helpers here (:func:`image_meta`, :func:`group_identical`) are shared with the
FinChart and VisRAG adapters.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PIL import Image

from ...core.errors import InputError
from ..schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    annotation_revision,
    hash_groups,
    rel,
    synthetic_timeline,
)

KEY = "tabmwp"
FOLDER = "tabmwp"
DATASET = "lupantech/PromptPG"
ANNOTATION = "problems_test1k.json"

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
    """``{width, height, sha256}`` of an image file, or ``None`` when Pillow cannot read its
    header."""
    data = p.read_bytes()
    try:
        with Image.open(p) as im:
            w, h = im.size
    except Exception:  # noqa: BLE001 - any unreadable image is counted by the caller
        return None
    return {"width": int(w), "height": int(h), "sha256": hashlib.sha256(data).hexdigest()}


def group_identical(metas: dict[str, dict[str, Any]],
                    order: Callable[[str], Any]) -> dict[str, str]:
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


def notes_json(d: dict[str, Any]) -> str | None:
    d = {k: v for k, v in d.items() if v is not None}
    return json.dumps(d, ensure_ascii=False, sort_keys=True) if d else None


def _pid_order(pid: str) -> tuple:
    return (0, int(pid), pid) if pid.isdigit() else (1, 0, pid)


def _sid(pid: str) -> str:
    return f"{KEY}:{pid}.png"


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    corpus_root = Path(corpus_root)
    spec = BY_KEY[KEY]
    folder = corpus_root / FOLDER
    ann = folder / ANNOTATION
    if not ann.is_file():
        raise InputError(ann, None, None, "TabMWP annotation file is missing", rule="MISSING_FILE")
    cov = Coverage(source=KEY)
    revision = annotation_revision(folder, ANNOTATION, cov)

    try:
        problems = json.loads(ann.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(ann, e.lineno, None, f"not JSON: {e.msg}", rule="SCHEMA") from e
    if not isinstance(problems, dict):
        raise InputError(ann, None, None, "expected an object {pid: problem}", rule="SCHEMA")

    # ---- images: every tables/<pid>.png present, read once
    tables = folder / "tables"
    metas: dict[str, dict[str, Any]] = {}
    unreadable: set[str] = set()
    if tables.is_dir():
        for p in sorted(tables.glob("*.png")):
            m = image_meta(p)
            if m is None:
                unreadable.add(p.stem)
            else:
                metas[p.stem] = m
    canon = group_identical(metas, _pid_order)
    aliases: dict[str, list[str]] = {}
    for pid, c in canon.items():
        if pid != c:
            aliases.setdefault(c, []).append(pid)
    for names in aliases.values():
        names.sort(key=_pid_order)
    n_merged = sum(len(v) for v in aliases.values())
    if n_merged:
        cov.fix(MERGED, n_merged)

    canon_ids = sorted({_sid(c) for c in canon.values()})
    groups = hash_groups(canon_ids, 10, "tabmwp-holders")
    observed = synthetic_timeline(canon_ids)
    items: list[SourceItem] = []
    for c in sorted(set(canon.values()), key=_sid):
        sid = _sid(c)
        meta = {"width": metas[c]["width"], "height": metas[c]["height"],
                "sha256": metas[c]["sha256"]}
        if c in aliases:
            meta["aliases"] = [f"{a}.png" for a in aliases[c]]
        items.append(SourceItem(
            source_id=sid, modality="image", holder=f"{KEY}/roll-{groups[sid]:02d}",
            observed_at=observed[sid], path=rel(corpus_root, tables / f"{c}.png"), meta=meta))
    holder_of = {it.source_id: it.holder for it in items}

    # ---- records
    drafts: list[RecordDraft] = []
    texts: dict[str, str] = {}
    for pid in sorted(problems, key=_pid_order):
        cov.upstream_items += 1
        prob = problems[pid]
        if not isinstance(prob, dict):
            cov.miss("malformed problem")
            continue
        question = prob.get("question")
        if not isinstance(question, str) or not question.strip():
            cov.miss("empty question")
            continue
        fmt = ANS_FORMAT.get(prob.get("ans_type"))  # type: ignore[arg-type]
        if fmt is None:
            cov.miss("unknown ans_type")
            continue
        answer = prob.get("answer")
        if not isinstance(answer, str) or not answer.strip():
            cov.miss("missing answer")
            continue
        if pid in unreadable:
            cov.miss("image unreadable")
            continue
        if pid not in canon:
            cov.miss("image not in mirror")
            continue
        c = canon[pid]
        sid = _sid(c)
        choices = prob.get("choices")
        notes = notes_json({
            "choices": choices if choices else None,
            "unit": prob.get("unit") or None,
            "upstream_image": f"tables/{pid}.png" if pid != c else None,
        })
        drafts.append(RecordDraft(
            query_id=f"{KEY}:{pid}", modality="image", question=question, answer=answer,
            answer_format=fmt, gold=[Gold(source_id=sid, region={})],
            scope=Scope(holder=holder_of[sid], session=None, scenario=spec.scenario),
            unanswerable=False,
            origin=Origin(dataset=DATASET, revision=revision, item=f"{ANNOTATION}#{pid}",
                          license=spec.license, notes=notes)))
        cov.covered += 1
        table = prob.get("table")
        if pid == c and isinstance(table, str) and table.strip():
            title = prob.get("table_title")
            texts[sid] = f"{title}\n{table}" if isinstance(title, str) and title else table

    cov.notes.append("one question per table image; gold = the whole canonical image (region {})")
    cov.notes.append("answers kept verbatim as upstream strings; answer_format from ans_type")
    cov.notes.append("choices/unit are not in the question text upstream: kept in origin.notes "
                     "as JSON, question unchanged")
    drafts.sort(key=lambda d: d.query_id)
    return AdapterResult(items=items, drafts=drafts, coverage=cov,
                         texts=dict(sorted(texts.items())))
