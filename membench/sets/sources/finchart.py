"""FinChart-Bench adapter: question-answer pairs over one financial chart image each.

Upstream: Tizzzzy/FinChart-Bench ``QA_data.json`` (a list of ``{image, question, reasoning,
answer}``; 2,285 rows) and ``QA_images/``. Mirror folder ``finchart-bench/``: the annotation is
complete, but only the first 320 of 1,154 images (by sorted name) are mirrored.

* Record ``image`` names carry a ``_qN`` suffix that the file names lack
  (``1243210261_13_crop_0_q1.jpg`` -> ``QA_images/1243210261_13_crop_0.jpg``): the suffix is
  stripped before the extension and counted with ``coverage.fix``. Rows whose image is not in
  the mirror are counted ``miss("image not in mirror")``.
* Items: every image file of ``QA_images/``, one per distinct *content*: byte-identical
  duplicates collapse onto the name that sorts first (others in ``meta["aliases"]``, counted
  with ``coverage.fix("byte-identical duplicate image merged")``); gold of every question
  points at the canonical item. ``source_id`` ``finchart:<file name>``, ``meta``
  ``{width, height, sha256}``.
* Holders: ``base.hash_groups(canonical source ids, 6, "finchart-holders")`` ->
  ``finchart/roll-<k>``.
* observed_at: no time structure upstream, so a synthetic timeline
  (``base.synthetic_timeline``) over the sorted canonical source ids, in UTC.
* Records: ``query_id`` ``finchart:<0-based row index>``, ``origin.item``
  ``QA_data.json#<row>``; question and answer verbatim; ``answer_format`` from the answer's JSON
  type (int, float, str, list). The upstream ``reasoning`` is a model-style rationale, not
  evidence: it is not used. Gold ``[Gold(source_id, {})]`` (whole image).
* texts: none (there is no upstream text for the charts).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from ..schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    annotation_revision,
    hash_groups,
    json_answer_format,
    rel,
    synthetic_timeline,
)
from .tabmwp import MERGED, group_identical, image_meta, notes_json

KEY = "finchart"
FOLDER = "finchart-bench"
DATASET = "Tizzzzy/FinChart-Bench"
ANNOTATION = "QA_data.json"
IMAGES = "QA_images"
IMAGE_EXT = {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp"}

_Q_SUFFIX = re.compile(r"_q\d+(?=\.[^./\\]+$)")
STRIPPED = "_qN suffix stripped from image name"


def file_name(image: str) -> str:
    """The mirror file name of a record's ``image`` (``_qN`` removed before the extension)."""
    return _Q_SUFFIX.sub("", image)


def _sid(name: str) -> str:
    return f"{KEY}:{name}"


def load(corpus_root: Path) -> AdapterResult:
    corpus_root = Path(corpus_root)
    spec = BY_KEY[KEY]
    folder = corpus_root / FOLDER
    ann = folder / ANNOTATION
    if not ann.is_file():
        raise InputError(ann, None, None, "FinChart-Bench annotation file is missing",
                         rule="MISSING_FILE")
    cov = Coverage(source=KEY)
    revision = annotation_revision(folder, ANNOTATION, cov)
    try:
        rows = json.loads(ann.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(ann, e.lineno, None, f"not JSON: {e.msg}", rule="SCHEMA") from e
    if not isinstance(rows, list):
        raise InputError(ann, None, None, "expected a list of QA records", rule="SCHEMA")

    # ---- images present in the mirror
    img_dir = folder / IMAGES
    metas: dict[str, dict[str, Any]] = {}
    unreadable: set[str] = set()
    if img_dir.is_dir():
        for p in sorted(img_dir.iterdir()):
            if not p.is_file() or p.name.startswith(".") or p.suffix.lower() not in IMAGE_EXT:
                continue
            m = image_meta(p)
            if m is None:
                unreadable.add(p.name)
            else:
                metas[p.name] = m
    canon = group_identical(metas, lambda n: n)
    aliases: dict[str, list[str]] = {}
    for name, c in canon.items():
        if name != c:
            aliases.setdefault(c, []).append(name)
    n_merged = sum(len(v) for v in aliases.values())
    if n_merged:
        cov.fix(MERGED, n_merged)

    canon_ids = sorted({_sid(c) for c in canon.values()})
    groups = hash_groups(canon_ids, 6, "finchart-holders")
    observed = synthetic_timeline(canon_ids)
    items: list[SourceItem] = []
    for c in sorted(set(canon.values())):
        sid = _sid(c)
        meta: dict[str, Any] = {"width": metas[c]["width"], "height": metas[c]["height"],
                                "sha256": metas[c]["sha256"]}
        if c in aliases:
            meta["aliases"] = sorted(aliases[c])
        items.append(SourceItem(
            source_id=sid, modality="image", holder=f"{KEY}/roll-{groups[sid]}",
            observed_at=observed[sid], path=rel(corpus_root, img_dir / c), meta=meta))
    items.sort(key=lambda it: it.source_id)
    holder_of = {it.source_id: it.holder for it in items}

    # ---- records, one per row
    drafts: list[RecordDraft] = []
    for i, row in enumerate(rows):
        cov.upstream_items += 1
        if not isinstance(row, dict) or not isinstance(row.get("image"), str):
            cov.miss("malformed record")
            continue
        question = row.get("question")
        if not isinstance(question, str) or not question.strip():
            cov.miss("empty question")
            continue
        answer = row.get("answer")
        # an empty answer string is no answer
        fmt = None if isinstance(answer, str) and not answer.strip() else json_answer_format(answer)
        if fmt is None:
            cov.miss("unsupported answer type")
            continue
        name = file_name(row["image"])
        if name != row["image"]:
            cov.fix(STRIPPED)
        if name in unreadable:
            cov.miss("image unreadable")
            continue
        if name not in canon:
            cov.miss("image not in mirror")
            continue
        c = canon[name]
        sid = _sid(c)
        drafts.append(RecordDraft(
            query_id=f"{KEY}:{i}", modality="image", question=question, answer=answer,
            answer_format=fmt, gold=[Gold(source_id=sid, region={})],
            scope=Scope(holder=holder_of[sid], session=None, scenario=spec.scenario),
            unanswerable=False,
            origin=Origin(dataset=DATASET, revision=revision, item=f"{ANNOTATION}#{i}",
                          license=spec.license,
                          notes=notes_json({"upstream_image": f"{IMAGES}/{name}"
                                            if name != c else None}))))
        cov.covered += 1

    cov.notes.append("rows are 0-based: finchart:<i> is QA_data.json[i]")
    cov.notes.append("image names: r'_q\\d+' stripped before the extension to find the file")
    referenced = {file_name(r["image"]) for r in rows
                  if isinstance(r, dict) and isinstance(r.get("image"), str)}
    cov.notes.append(f"mirror holds {len(metas) + len(unreadable)} images; upstream rows "
                     f"reference {len(referenced)} distinct images")
    drafts.sort(key=lambda d: d.query_id)
    return AdapterResult(items=items, drafts=drafts, coverage=cov, texts={})
