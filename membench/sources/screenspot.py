"""ScreenSpot-v2 (OS-Atlas re-annotation of SeeClick's ScreenSpot): GUI grounding boxes. Reads
``screenspot-v2/`` under the corpus root; writes nothing. Start at :func:`load`.

* ``screenspot_{desktop,mobile,web}_v2.json``: lists of ``{img_filename, bbox, instruction,
  data_type, data_source}``, ``bbox = [left, top, width, height]`` in pixels;
* ``screenspotv2_image/<img_filename>``: the screenshots (the mirror holds 6 of the 730, see
  ``PROVENANCE.jsonl``; an instruction whose screenshot is absent is not covered);
* ``with_image_size/`` (optional, microsoft/GUI-Actor): the same rows with xyxy boxes and
  ``img_size``, used only to cross-check the box conversion and image sizes.

Items: one per mirrored screenshot, ``screenspot:<img_filename>``, the PNG's path, meta
``{width, height, platform}`` (size read by Pillow). Holders: one per platform folder
(``screenspot/desktop``, ``/mobile``, ``/web``). observed_at: synthetic
(:func:`base.synthetic_timeline`, hash order, one hour apart, UTC).

Records: one per instruction whose screenshot is mirrored, ``screenspot:<platform>:<row>``
(0-based row in its file); gold ``{"bbox": [l, t, l + w, t + h]}`` (pixels); a box off the image
by at most 1 px is clipped (counted as a fix), worse is not covered. No textual answer
(``answer`` None, ``"none"``): the box is the answer. texts: the upstream instructions written
over each screenshot (file and row order, one a line), read only by the build's anchor guard
(:mod:`membench.sets.derive`), never by a system, never gold.
"""

from __future__ import annotations

from dataclasses import dataclass, field
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
    open_upstream,
    read_json,
    rel,
    synthetic_timeline,
)

KEY = "screenspot"
SPEC = BY_KEY[KEY]
FOLDER = "screenspot-v2"
MODALITY = "ui_screenshot"
SCENARIO = "gui-grounding"
DATASET = "OS-Copilot/ScreenSpot-v2"
LICENSE = "Apache-2.0 (dataset card)"
PLATFORMS = ("desktop", "mobile", "web")
# file-name prefix of a screenshot -> platform (screenshot folder)
PREFIX = {"pc": "desktop", "mobile": "mobile", "web": "web"}
IMAGE_DIR = "screenspotv2_image"
SIZED_DIR = "with_image_size"
CLIP_TOLERANCE_PX = 1


def _ann_name(platform: str) -> str:
    return f"screenspot_{platform}_v2.json"


def _load_json_list(p: Path) -> list:
    return read_json(p, list, "a JSON list of records")


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _xyxy(bbox: Any) -> list[float] | None:
    """[left, top, width, height] -> [x0, y0, x1, y1]; None when not 4 numbers."""
    if not (isinstance(bbox, list) and len(bbox) == 4 and all(_num(x) for x in bbox)):
        return None
    left, top, w, h = bbox
    return [left, top, left + w, top + h]


def _fit(box: list[float], width: int, height: int) -> tuple[list[float] | None, bool]:
    """Check ``box`` against the image. Returns (box or None if out of bounds, clipped?)."""
    x0, y0, x1, y1 = box
    if not (x0 < x1 and y0 < y1):
        return None, False
    if 0 <= x0 and x1 <= width and 0 <= y0 and y1 <= height:
        return box, False
    tol = CLIP_TOLERANCE_PX
    if x0 >= -tol and y0 >= -tol and x1 <= width + tol and y1 <= height + tol:
        c = [max(x0, 0), max(y0, 0), min(x1, width), min(y1, height)]
        if c[0] < c[2] and c[1] < c[3]:
            return c, True
    return None, False


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/screenspot-v2``, map it to items and records, account for every
    instruction."""
    up = open_upstream(
        corpus_root,
        SPEC,
        provenance=True,
        files={_ann_name(p): "ScreenSpot-v2 annotation file" for p in PLATFORMS},
    )
    cov = Coverage(source=KEY)
    revisions = {p: up.revision(_ann_name(p), cov, required=True) for p in PLATFORMS}
    rows = _read(up)
    made = _map(up, rows, revisions)
    _account(cov, rows, made)
    return made.result(cov)


@dataclass
class _Rows:
    ann: dict[str, list]  # platform -> screenspot_<platform>_v2.json, as upstream
    sized: dict[str, list]  # platform -> with_image_size/ copy (when present)
    files: list[str]  # screenshot file names in the mirror, sorted
    sizes: dict[str, tuple[int, int]]  # screenshot -> (width, height) read by Pillow
    unreadable: list[str]  # screenshots Pillow cannot read


def _read(up: Upstream) -> _Rows:
    """The three annotation files, the optional xyxy copies and the mirrored screenshots'
    sizes. Raises InputError on an annotation file that is not a JSON list."""
    ann = {p: _load_json_list(up.folder / _ann_name(p)) for p in PLATFORMS}
    sized: dict[str, list] = {}
    for platform in PLATFORMS:
        q = up.folder / SIZED_DIR / _ann_name(platform)
        if q.is_file():
            sized[platform] = _load_json_list(q)
    img_dir = up.folder / IMAGE_DIR
    files = sorted(q.name for q in img_dir.glob("*.png")) if img_dir.is_dir() else []
    sizes: dict[str, tuple[int, int]] = {}
    unreadable: list[str] = []
    for name in files:
        try:
            with guard.open_image(img_dir / name, load=True) as im:
                sizes[name] = (int(im.width), int(im.height))
        except guard.ContentError:  # the content layer's door refuses it: not covered
            unreadable.append(name)
    return _Rows(ann, sized, files, sizes, unreadable)


@dataclass
class _Made(Mapped):
    # for the notes
    referenced: int = 0  # distinct screenshots named upstream
    no_platform: list[str] = field(default_factory=list)  # readable, platform unknown: no item
    content_matched: int = 0  # items not proven byte-identical
    per_kind: dict[str, int] = field(
        default_factory=lambda: {"byte-identical": 0, "content-matched": 0}
    )
    xcheck: dict[str, Any] = field(
        default_factory=lambda: {
            "rows": 0,
            "row_count": 0,
            "identity": 0,
            "bbox": 0,
            "size_vs_png": 0,
            "type_source": 0,
            "oob_upstream": [],
        }
    )


def _map(up: Upstream, rows: _Rows, revisions: dict[str, str]) -> _Made:
    """Items (one per readable screenshot with a platform), one outcome per instruction, and
    the cross-check against with_image_size/."""
    made = _Made()
    referenced: dict[str, str] = {}  # img_filename -> platform of the json that names it
    for platform in PLATFORMS:
        for row in rows.ann[platform]:
            if isinstance(row, dict) and isinstance(row.get("img_filename"), str):
                referenced.setdefault(row["img_filename"], platform)
    made.referenced = len(referenced)

    def platform_of(name: str) -> str | None:
        return referenced.get(name) or PREFIX.get(name.split("_", 1)[0])

    item_names = [n for n in rows.files if n in rows.sizes and platform_of(n)]
    made.no_platform = [n for n in rows.files if n in rows.sizes and not platform_of(n)]
    sid = {n: f"{KEY}:{n}" for n in item_names}
    times = synthetic_timeline(sid.values())
    for n in item_names:
        made.items.append(
            SourceItem(
                source_id=sid[n],
                modality=MODALITY,
                holder=f"{KEY}/{platform_of(n)}",
                observed_at=times[sid[n]],
                path=rel(up.root, up.folder / IMAGE_DIR / n),
                meta={
                    "width": rows.sizes[n][0],
                    "height": rows.sizes[n][1],
                    "platform": platform_of(n),
                },
            )
        )
    holder_of = {n: it.holder for n, it in zip(item_names, made.items)}

    mirrored_note = {
        n: (up.provenance.get(f"{IMAGE_DIR}/{n}") or {}).get("note") or "" for n in item_names
    }
    content_matched = {
        n
        for n, note in mirrored_note.items()
        if "byte-identical" not in note or "not proven" in note
    }
    made.content_matched = len(content_matched)
    for platform in PLATFORMS:
        fname = _ann_name(platform)
        ann = rows.ann[platform]
        other = rows.sized.get(platform)
        if other is not None and len(other) != len(ann):
            made.xcheck["row_count"] += 1
        for i, row in enumerate(ann):
            if (
                isinstance(row, dict)
                and other is not None
                and i < len(other)
                and isinstance(other[i], dict)
            ):
                _cross_check(made.xcheck, other[i], row, f"{fname}#{i}", rows.sizes)
            made.outcomes.append(
                _record(
                    platform,
                    i,
                    row,
                    rows,
                    holder_of,
                    mirrored_note,
                    content_matched,
                    revisions[platform],
                    made,
                )
            )
    asked: dict[str, list[str]] = {}
    for o in made.drafts:
        asked.setdefault(o.gold[0].source_id, []).append(o.question)
    made.texts = {k: "\n".join(v) for k, v in sorted(asked.items())}
    return made


def _cross_check(
    xcheck: dict[str, Any], o: dict, row: dict, where: str, sizes: dict[str, tuple[int, int]]
) -> None:
    """Count the disagreements of one row with its with_image_size/ copy ``o`` in ``xcheck``."""
    img = row.get("img_filename")
    box = _xyxy(row.get("bbox"))
    xcheck["rows"] += 1
    if o.get("img_filename") != img or o.get("instruction") != row.get("instruction"):
        xcheck["identity"] += 1
    if box is not None and o.get("bbox") != box:
        xcheck["bbox"] += 1
    if (o.get("ui_type"), o.get("platform")) != (row.get("data_type"), row.get("data_source")):
        xcheck["type_source"] += 1
    osz = o.get("img_size")
    if isinstance(osz, list) and len(osz) == 2 and box is not None:
        W, H = osz
        if not (0 <= box[0] < box[2] <= W and 0 <= box[1] < box[3] <= H):
            xcheck["oob_upstream"].append(where)
        if img in sizes and tuple(osz) != sizes[img]:
            xcheck["size_vs_png"] += 1


def _record(
    platform: str,
    i: int,
    row: Any,
    rows: _Rows,
    holder_of: dict[str, str],
    mirrored_note: dict[str, str],
    content_matched: set[str],
    revision: str,
    made: _Made,
) -> RecordDraft | str:
    """The record of row ``i`` of a platform's file, or why it is not covered; a clipped box
    is counted in ``made``."""
    if not isinstance(row, dict):
        return "unparseable annotation row"
    img = row.get("img_filename")
    instr = row.get("instruction")
    box = _xyxy(row.get("bbox"))
    if not isinstance(img, str) or not img:
        return "unparseable annotation row"
    if img in rows.unreadable:
        return "screenshot unreadable"
    if img not in holder_of:
        return "screenshot not in mirror"
    if not isinstance(instr, str) or not instr.strip():
        return "empty instruction"
    if box is None:
        return "unparseable bbox"
    if not (box[0] < box[2] and box[1] < box[3]):
        return "degenerate bbox (zero or negative size)"
    w, h = rows.sizes[img]
    fitted, clipped = _fit(box, w, h)
    if fitted is None:
        return "bbox outside image"
    if clipped:
        made.fix("bbox clipped to image bounds (<= 1 px)")
    note = mirrored_note.get(img, "")
    kind = "content-matched" if img in content_matched else "byte-identical"
    made.per_kind[kind] += 1
    notes = (
        f"data_type={row.get('data_type')}; data_source={row.get('data_source')}; "
        f"screenshot: {note or 'see PROVENANCE.jsonl'}"
    )
    fname = _ann_name(platform)
    return RecordDraft(
        query_id=f"{KEY}:{platform}:{i}",
        modality=MODALITY,
        question=instr,
        answer=None,
        answer_format="none",
        gold=[Gold(source_id=f"{KEY}:{img}", region={"bbox": fitted})],
        scope=Scope(holder=holder_of[img], scenario=SCENARIO),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET, revision=revision, item=f"{fname}#{i}", license=LICENSE, notes=notes
        ),
    )


def _account(cov: Coverage, rows: _Rows, made: _Made) -> None:
    """Coverage: every instruction's outcome and the repairs (:func:`base.book`), then the
    notes. Writes only ``cov``."""
    book(cov, made)
    if rows.unreadable:
        cov.notes.append(
            f"{len(rows.unreadable)} mirrored screenshot(s) unreadable by Pillow: "
            f"{', '.join(rows.unreadable)}"
        )
    for n in made.no_platform:
        cov.notes.append(
            f"screenshot {n} has no platform (unreferenced, unknown prefix): not emitted"
        )
    cov.notes.append(
        f"{len(made.items)} of {made.referenced} screenshots mirrored; instructions on the "
        "others are not covered (screenshot not in mirror)"
    )
    cov.notes.append(
        f"screenshots: {len(made.items) - made.content_matched} byte-identical"
        f", {made.content_matched} matched by content and size, not proven "
        f"byte-identical (PROVENANCE.jsonl); records on them: "
        f"{made.per_kind['byte-identical']} byte-identical, "
        f"{made.per_kind['content-matched']} content-matched"
    )
    cov.notes.append(
        "bbox [left, top, width, height] -> region [l, t, l+w, t+h] in PNG pixels; "
        f"boxes off the image by <= {CLIP_TOLERANCE_PX} px are clipped"
    )
    if rows.sized:
        xcheck = made.xcheck
        oob = xcheck["oob_upstream"]
        cov.notes.append(
            f"cross-check with {SIZED_DIR}/ (GUI-Actor): {xcheck['rows']} rows compared; "
            f"disagreements: row order/identity {xcheck['identity']}, xyxy box "
            f"{xcheck['bbox']}, ui_type/platform {xcheck['type_source']}, image size vs mirrored "
            f"PNG {xcheck['size_vs_png']}, file length {xcheck['row_count']}; upstream boxes "
            f"outside their stated image size: {len(oob)}" + (f" ({', '.join(oob)})" if oob else "")
        )
    else:
        cov.notes.append(f"{SIZED_DIR}/ absent: no cross-check of box conversion and sizes")
