"""FinChart-Bench: question-answer pairs over one financial chart image each. Reads
``finchart-bench/`` under the corpus root (Tizzzzy/FinChart-Bench ``QA_data.json``, a list of
``{image, question, reasoning, answer}``, and ``QA_images/``; the mirror holds the whole
annotation and the first 320 of 1,154 images by sorted name); writes nothing. Start at
:func:`load`.

* A record's ``image`` carries a ``_qN`` suffix the file names lack
  (``..._crop_0_q1.jpg`` -> ``QA_images/..._crop_0.jpg``): stripped and counted as a fix; a row
  whose image is not mirrored is counted ``miss("image not in mirror")``.
* Items: every image of ``QA_images/``, one per distinct content (byte-identical duplicates
  collapse onto the name that sorts first, others in ``meta["aliases"]``, counted),
  ``finchart:<file name>``, ``meta`` ``{width, height, sha256}``.
* Holders: ``base.hash_groups(canonical source ids, 6, "finchart-holders")`` ->
  ``finchart/roll-<k>``. observed_at: synthetic (:func:`base.synthetic_timeline`, UTC).
* Records: ``finchart:<0-based row index>``, ``origin.item`` ``QA_data.json#<row>``; question
  and answer verbatim; ``answer_format`` from the answer's JSON type (int, float, str, list);
  ``reasoning`` (a model-style rationale, not evidence) is not used. Gold ``{}`` (whole image).
* texts: the upstream questions written over each image (its rows in order, one a line), read
  only by the build's anchor guard (:mod:`membench.sets.derive`), never system input or gold.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    hash_groups,
    json_answer_format,
    open_upstream,
    read_json,
    rel,
    synthetic_timeline,
)
from .tabmwp import MERGED, alias_lists, group_identical, notes_json, read_images

KEY = "finchart"
SPEC = BY_KEY[KEY]
FOLDER = SPEC.folder
DATASET = "Tizzzzy/FinChart-Bench"
ANNOTATION = "QA_data.json"
IMAGES = "QA_images"
IMAGE_EXT = {".jpg", ".jpeg", ".png", ".gif", ".bmp", ".webp"}
N_HOLDERS = 6
HOLDER_SALT = "finchart-holders"

_Q_SUFFIX = re.compile(r"_q\d+(?=\.[^./\\]+$)")
STRIPPED = "_qN suffix stripped from image name"


def file_name(image: str) -> str:
    """The mirror file name of a record's ``image`` (``_qN`` removed before the extension)."""
    return _Q_SUFFIX.sub("", image)


def _sid(name: str) -> str:
    return f"{KEY}:{name}"


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/finchart-bench``, map it to items and records, account for every
    row."""
    up = open_upstream(corpus_root, SPEC, files={ANNOTATION: "FinChart-Bench annotation file"})
    cov = Coverage(source=KEY)
    revision = up.revision(ANNOTATION, cov)
    rows = _read(up)
    made = _map(up, rows, revision)
    _account(cov, rows, made)
    return made.result(cov)


@dataclass
class _Rows:
    qa: list[Any]  # QA_data.json, as upstream
    images: dict[str, dict[str, Any]]  # QA_images/<name>: name -> {width, height, sha256}
    unreadable: set[str]  # image files Pillow cannot read


def _read(up: Upstream) -> _Rows:
    """QA_data.json (a JSON list) and every image file of QA_images/, each read once. Raises
    InputError (SCHEMA) on an annotation file that is not such a list."""
    ann = up.folder / ANNOTATION
    qa = read_json(ann, list, "a list of QA records")
    img_dir = up.folder / IMAGES
    files = (
        [
            p
            for p in sorted(img_dir.iterdir())
            if p.is_file() and not p.name.startswith(".") and p.suffix.lower() in IMAGE_EXT
        ]
        if img_dir.is_dir()
        else []
    )
    images, unreadable = read_images(files, lambda p: p.name)
    return _Rows(qa, images, unreadable)


def _map(up: Upstream, rows: _Rows, revision: str) -> Mapped:
    """Items (one per distinct image, aliases merged) and one outcome per row."""
    made = Mapped()
    canon = group_identical(rows.images, lambda n: n)
    aliases = alias_lists(canon, lambda n: n)
    n_merged = sum(len(v) for v in aliases.values())
    if n_merged:
        made.fix(MERGED, n_merged)

    canon_ids = sorted({_sid(c) for c in canon.values()})
    groups = hash_groups(canon_ids, N_HOLDERS, HOLDER_SALT)
    observed = synthetic_timeline(canon_ids)
    for c in sorted(set(canon.values())):
        sid = _sid(c)
        m = rows.images[c]
        meta: dict[str, Any] = {"width": m["width"], "height": m["height"], "sha256": m["sha256"]}
        if c in aliases:
            meta["aliases"] = aliases[c]
        made.items.append(
            SourceItem(
                source_id=sid,
                modality="image",
                holder=f"{KEY}/roll-{groups[sid]}",
                observed_at=observed[sid],
                path=rel(up.root, up.folder / IMAGES / c),
                meta=meta,
            )
        )
    holder_of = {it.source_id: it.holder for it in made.items}
    asked: dict[str, list[str]] = {}
    for i, row in enumerate(rows.qa):
        o = _record(i, row, rows, canon, holder_of, revision, made)
        made.outcomes.append(o)
        if not isinstance(o, str):
            asked.setdefault(o.gold[0].source_id, []).append(o.question)
    made.texts = {sid: "\n".join(qs) for sid, qs in sorted(asked.items())}
    return made


def _record(
    i: int,
    row: Any,
    rows: _Rows,
    canon: dict[str, str],
    holder_of: dict[str, str],
    revision: str,
    made: Mapped,
) -> RecordDraft | str:
    """The record of row ``i``, or why it is not covered; a stripped ``_qN`` suffix is counted
    in ``made``."""
    if not isinstance(row, dict) or not isinstance(row.get("image"), str):
        return "malformed record"
    question = row.get("question")
    if not isinstance(question, str) or not question.strip():
        return "empty question"
    answer = row.get("answer")
    # an empty answer string is no answer
    fmt = None if isinstance(answer, str) and not answer.strip() else json_answer_format(answer)
    if fmt is None:
        return "unsupported answer type"
    name = file_name(row["image"])
    if name != row["image"]:
        made.fix(STRIPPED)
    if name in rows.unreadable:
        return "image unreadable"
    if name not in canon:
        return "image not in mirror"
    c = canon[name]
    sid = _sid(c)
    return RecordDraft(
        query_id=f"{KEY}:{i}",
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
            item=f"{ANNOTATION}#{i}",
            license=SPEC.license,
            notes=notes_json({"upstream_image": f"{IMAGES}/{name}" if name != c else None}),
        ),
    )


def _account(cov: Coverage, rows: _Rows, made: Mapped) -> None:
    """Coverage: every row's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes.append("rows are 0-based: finchart:<i> is QA_data.json[i]")
    cov.notes.append("image names: r'_q\\d+' stripped before the extension to find the file")
    referenced = {
        file_name(r["image"])
        for r in rows.qa
        if isinstance(r, dict) and isinstance(r.get("image"), str)
    }
    cov.notes.append(
        f"mirror holds {len(rows.images) + len(rows.unreadable)} images; upstream "
        f"rows reference {len(referenced)} distinct images"
    )
