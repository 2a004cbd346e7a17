"""ScreenSpot-v2 (OS-Atlas re-annotation of SeeClick's ScreenSpot): GUI grounding boxes.

Upstream format (``screenspot-v2/`` under the corpus root):

* ``screenspot_{desktop,mobile,web}_v2.json``: lists of ``{img_filename, bbox, instruction,
  data_type, data_source}`` with ``bbox = [left, top, width, height]`` in pixels;
* ``screenspotv2_image/<img_filename>``: the screenshots. The mirror holds only 6 of the 730
  (2 byte-identical to the benchmark images, 4 matched by content and exact size, see
  ``PROVENANCE.jsonl``); instructions whose screenshot is absent are counted not covered;
* ``with_image_size/`` (optional, microsoft/GUI-Actor): the same rows with ``[x0, y0, x1, y1]``
  boxes and ``img_size``; used only to cross-check the box conversion and image sizes.

Items: one per mirrored screenshot (``screenspot:<img_filename>``, path to the PNG, meta
``{width, height, platform}`` with the size read from the PNG by Pillow). Holders: one per
screenshot folder = platform (``screenspot/desktop``, ``screenspot/mobile``, ``screenspot/web``).
observed_at: the upstream data has no time structure, so a synthetic ingestion timeline in UTC
(``base.synthetic_timeline`` over sorted source ids, one hour apart).

Records: one per instruction whose screenshot is mirrored. ``query_id`` =
``screenspot:<platform>:<row>`` with ``<row>`` the 0-based index in its json file; gold region
``{"bbox": [l, t, l + w, t + h]}`` (pixels, xyxy). A box off the image by at most 1 px is clipped
(counted as a fix); worse is not covered. There is no textual answer (``answer`` None,
``answer_format`` "none"); the box is the answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from PIL import Image

from ...core.errors import InputError
from ..schema import Gold, Origin, RecordDraft, Scope, SourceItem
from .base import AdapterResult, Coverage, read_provenance, rel, synthetic_timeline

KEY = "screenspot"
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
    try:
        data = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as e:
        raise InputError(p, e.lineno, None, f"not valid JSON: {e.msg}") from e
    if not isinstance(data, list):
        raise InputError(p, None, None, "expected a JSON list of records")
    return data


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
    root = Path(corpus_root)
    folder = root / FOLDER
    cov = Coverage(source=KEY)
    ann: dict[str, list] = {}
    for platform in PLATFORMS:
        p = folder / _ann_name(platform)
        if not p.is_file():
            raise InputError(p, None, None, "ScreenSpot-v2 annotation file missing",
                             rule="MISSING_FILE")
        ann[platform] = _load_json_list(p)
    prov = read_provenance(folder, required=True)

    # ---- screenshots in the mirror
    img_dir = folder / IMAGE_DIR
    files = sorted(q.name for q in img_dir.glob("*.png")) if img_dir.is_dir() else []
    referenced: dict[str, str] = {}  # img_filename -> platform of the json that names it
    for platform in PLATFORMS:
        for row in ann[platform]:
            if isinstance(row, dict) and isinstance(row.get("img_filename"), str):
                referenced.setdefault(row["img_filename"], platform)
    sizes: dict[str, tuple[int, int]] = {}
    unreadable: list[str] = []
    for name in files:
        try:
            with Image.open(img_dir / name) as im:
                sizes[name] = (int(im.width), int(im.height))
        except (OSError, ValueError):
            unreadable.append(name)
    if unreadable:
        cov.notes.append(f"{len(unreadable)} mirrored screenshot(s) unreadable by Pillow: "
                         f"{', '.join(unreadable)}")

    def platform_of(name: str) -> str | None:
        return referenced.get(name) or PREFIX.get(name.split("_", 1)[0])

    item_names = [n for n in files if n in sizes and platform_of(n)]
    for n in files:
        if n in sizes and not platform_of(n):
            cov.notes.append(f"screenshot {n} has no platform (unreferenced, unknown prefix): "
                             "not emitted")
    sid = {n: f"{KEY}:{n}" for n in item_names}
    times = synthetic_timeline(sid.values())
    items = [
        SourceItem(source_id=sid[n], modality=MODALITY, holder=f"{KEY}/{platform_of(n)}",
                   observed_at=times[sid[n]], path=rel(root, img_dir / n),
                   meta={"width": sizes[n][0], "height": sizes[n][1],
                         "platform": platform_of(n)})
        for n in item_names
    ]
    by_name = {n: it for n, it in zip(item_names, items)}

    # ---- optional cross-check against the xyxy + image-size copy
    sized: dict[str, list] = {}
    for platform in PLATFORMS:
        q = folder / SIZED_DIR / _ann_name(platform)
        if q.is_file():
            sized[platform] = _load_json_list(q)

    # ---- records
    drafts: list[RecordDraft] = []
    mirrored_note: dict[str, str] = {}
    for n in item_names:
        note = (prov.get(f"{IMAGE_DIR}/{n}") or {}).get("note") or ""
        mirrored_note[n] = note
    content_matched = {n for n, note in mirrored_note.items() if "byte-identical" not in note
                       or "not proven" in note}
    xcheck = {"rows": 0, "row_count": 0, "identity": 0, "bbox": 0,
              "size_vs_png": 0, "type_source": 0, "oob_upstream": []}
    per_kind = {"byte-identical": 0, "content-matched": 0}

    for platform in PLATFORMS:
        fname = _ann_name(platform)
        revision = (prov.get(fname) or {}).get("commit")
        if not revision:
            raise InputError(folder / "PROVENANCE.jsonl", None, fname,
                             "no upstream commit recorded for this annotation file",
                             rule="MISSING_FILE")
        rows = ann[platform]
        other = sized.get(platform)
        if other is not None and len(other) != len(rows):
            xcheck["row_count"] += 1
        for i, row in enumerate(rows):
            cov.upstream_items += 1
            if not isinstance(row, dict):
                cov.miss("unparseable annotation row")
                continue
            img = row.get("img_filename")
            instr = row.get("instruction")
            box = _xyxy(row.get("bbox"))
            if other is not None and i < len(other) and isinstance(other[i], dict):
                o = other[i]
                xcheck["rows"] += 1
                if o.get("img_filename") != img or o.get("instruction") != instr:
                    xcheck["identity"] += 1
                if box is not None and o.get("bbox") != box:
                    xcheck["bbox"] += 1
                if (o.get("ui_type"), o.get("platform")) != (row.get("data_type"),
                                                             row.get("data_source")):
                    xcheck["type_source"] += 1
                osz = o.get("img_size")
                if isinstance(osz, list) and len(osz) == 2 and box is not None:
                    W, H = osz
                    if not (0 <= box[0] < box[2] <= W and 0 <= box[1] < box[3] <= H):
                        xcheck["oob_upstream"].append(f"{fname}#{i}")
                    if img in sizes and tuple(osz) != sizes[img]:
                        xcheck["size_vs_png"] += 1
            if not isinstance(img, str) or not img:
                cov.miss("unparseable annotation row")
                continue
            if img in unreadable:
                cov.miss("screenshot unreadable")
                continue
            if img not in by_name:
                cov.miss("screenshot not in mirror")
                continue
            if not isinstance(instr, str) or not instr.strip():
                cov.miss("empty instruction")
                continue
            if box is None:
                cov.miss("unparseable bbox")
                continue
            if not (box[0] < box[2] and box[1] < box[3]):
                cov.miss("degenerate bbox (zero or negative size)")
                continue
            w, h = sizes[img]
            fitted, clipped = _fit(box, w, h)
            if fitted is None:
                cov.miss("bbox outside image")
                continue
            if clipped:
                cov.fix("bbox clipped to image bounds (<= 1 px)")
            note = mirrored_note.get(img, "")
            kind = "content-matched" if img in content_matched else "byte-identical"
            per_kind[kind] += 1
            notes = (f"data_type={row.get('data_type')}; data_source={row.get('data_source')}; "
                     f"screenshot: {note or 'see PROVENANCE.jsonl'}")
            drafts.append(RecordDraft(
                query_id=f"{KEY}:{platform}:{i}", modality=MODALITY, question=instr,
                answer=None, answer_format="none",
                gold=[Gold(source_id=sid[img], region={"bbox": fitted})],
                scope=Scope(holder=by_name[img].holder, scenario=SCENARIO),
                unanswerable=False,
                origin=Origin(dataset=DATASET, revision=revision, item=f"{fname}#{i}",
                              license=LICENSE, notes=notes)))
            cov.covered += 1

    drafts.sort(key=lambda d: d.query_id)
    cov.notes.append(
        f"{len(items)} of {len(referenced)} screenshots mirrored; instructions on the others are "
        "not covered (screenshot not in mirror)")
    cov.notes.append(
        f"screenshots: {len(item_names) - len(content_matched & set(item_names))} byte-identical"
        f", {len(content_matched & set(item_names))} matched by content and size, not proven "
        f"byte-identical (PROVENANCE.jsonl); records on them: {per_kind['byte-identical']} "
        f"byte-identical, {per_kind['content-matched']} content-matched")
    cov.notes.append("bbox [left, top, width, height] -> region [l, t, l+w, t+h] in PNG pixels; "
                     f"boxes off the image by <= {CLIP_TOLERANCE_PX} px are clipped")
    if sized:
        oob = xcheck["oob_upstream"]
        cov.notes.append(
            f"cross-check with {SIZED_DIR}/ (GUI-Actor): {xcheck['rows']} rows compared; "
            f"disagreements: row order/identity {xcheck['identity']}, xyxy box "
            f"{xcheck['bbox']}, ui_type/platform {xcheck['type_source']}, image size vs mirrored "
            f"PNG {xcheck['size_vs_png']}, file length {xcheck['row_count']}; upstream boxes "
            f"outside their stated image size: {len(oob)}"
            + (f" ({', '.join(oob)})" if oob else ""))
    else:
        cov.notes.append(f"{SIZED_DIR}/ absent: no cross-check of box conversion and sizes")
    return AdapterResult(items=sorted(items, key=lambda x: x.source_id), drafts=drafts,
                         coverage=cov, texts={})
