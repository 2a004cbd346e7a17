"""Video-MME (Fu et al., 2024): expert multiple-choice questions over YouTube videos. Not in the
corpus mirror; reads the Hugging Face dataset ``lmms-lab/Video-MME``'s layout under
``video-mme/``; writes nothing. Start at :func:`load`.

* ``videomme/test-00000-of-00001.parquet``: one row per question, ``video_id`` ("001"),
  ``duration`` ("short" | "medium" | "long"), ``domain``, ``sub_category``, ``url``,
  ``videoID`` (YouTube id), ``question_id`` ("001-1"), ``task_type``, ``question``,
  ``options`` ("A. ..."), ``answer`` (a letter). Parquet needs pyarrow, which membench does not
  depend on, so the same rows are read from ``videomme/test-*.jsonl`` / ``test-*.json`` (JSON
  lines, a list of rows, or the datasets-server ``/rows`` answer; shards in name order), and
  from parquet only when pyarrow is importable;
* ``subtitle/<videoID>.srt`` (upstream ``subtitle.zip``): SubRip subtitles.

Items: one per video with a parseable ``.srt``, ``videomme:<videoID>``, ``content = [[start,
end, text], ...]`` (seconds, sorted), meta ``{cues, url, video_id, duration_category, domain,
sub_category, subtitle_end}`` (no ``duration``: ``subtitle_end`` is a lower bound). Holders
``videomme/viewer-<k>`` (``base.hash_groups(all videoIDs, 5, "videomme-holders")``);
observed_at synthetic (:func:`base.synthetic_timeline`, UTC).

Records: none. Upstream gives no temporal span, and a whole video is not a region (SPEC
section 9), so every question is counted not covered ("no temporal gold span upstream").
"""

from __future__ import annotations

import importlib.util
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract.schema import SourceItem
from ..core.errors import InputError
from . import BY_KEY
from .base import (
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    hash_groups,
    norm_space,
    open_upstream,
    synthetic_timeline,
)

KEY = "videomme"
SPEC = BY_KEY[KEY]
FOLDER = "video-mme"
MODALITY = "video"
ANN_DIR = "videomme"
SUB_DIR = "subtitle"
N_HOLDERS = 5
HOLDER_SALT = "videomme-holders"
REQUIRED = ("video_id", "videoID", "question_id", "question", "options", "answer")
NO_GOLD = "no temporal gold span upstream"

_TIME = r"(\d+):(\d{1,2}):(\d{1,2})(?:[,.](\d{1,3}))?"
_ARROW = re.compile(r"^\s*" + _TIME + r"\s*-->\s*" + _TIME)
_TAG = re.compile(r"<[^>]*>|\{\\[^}]*\}")


# --------------------------------------------------------------------------- SRT


def _secs(h: str, m: str, s: str, ms: str | None) -> float:
    frac = int((ms or "0").ljust(3, "0")) / 1000
    return int(h) * 3600 + int(m) * 60 + int(s) + frac


def parse_srt(text: str) -> tuple[list[list], dict[str, int]]:
    """SubRip text -> (cues [[start, end, text], ...] sorted by time, dropped blocks by kind)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").lstrip("\ufeff")
    cues: list[list] = []
    dropped: dict[str, int] = {}

    def drop(kind: str) -> None:
        dropped[kind] = dropped.get(kind, 0) + 1

    for block in re.split(r"\n[ \t]*\n", text):
        lines = [ln for ln in block.split("\n") if ln.strip()]
        if not lines:
            continue
        at = next((i for i, ln in enumerate(lines[:2]) if "-->" in ln), None)
        m = _ARROW.match(lines[at]) if at is not None else None
        if m is None:
            drop("unparseable block")
            continue
        g = m.groups()
        start, end = _secs(*g[:4]), _secs(*g[4:])
        body = norm_space(_TAG.sub("", " ".join(lines[at + 1 :])))
        if not body:
            drop("empty text")
        elif end < start:
            drop("end before start")
        else:
            cues.append([start, end, body])
    cues.sort(key=lambda c: (c[0], c[1], c[2]))
    return cues, dropped


# --------------------------------------------------------------------------- rows


def _rows_from_json(p: Path) -> list[Any]:
    text = p.read_text(encoding="utf-8-sig")
    stripped = text.strip()
    if not stripped:
        return []
    try:
        data = json.loads(stripped)
    except json.JSONDecodeError:
        data = None
    if data is None or (isinstance(data, dict) and "rows" not in data):
        # JSON lines (datasets' to_json default); a single-line file parses as one dict above
        rows = []
        for n, line in enumerate(text.splitlines(), 1):
            if line.strip():
                try:
                    rows.append(json.loads(line))
                except json.JSONDecodeError as e:
                    raise InputError(p, n, None, f"not valid JSON lines: {e.msg}") from e
        return rows
    if isinstance(data, list):
        return data
    rows = data["rows"]
    if not isinstance(rows, list):
        raise InputError(p, None, "rows", "datasets-server answer: rows must be a list")
    return [r.get("row") if isinstance(r, dict) and "row" in r else r for r in rows]


def _rows_from_parquet(p: Path) -> list[Any]:
    import pyarrow.parquet as pq  # optional; only called when importable

    return pq.read_table(p).to_pylist()


def _have_pyarrow() -> bool:
    return importlib.util.find_spec("pyarrow") is not None


def _annotation_rows(folder: Path) -> tuple[list[Any], list[str]]:
    """The question rows of every annotation shard (parquet with pyarrow, else the JSON export),
    and notes on what was read. Raises InputError when there is nothing readable."""
    notes: list[str] = []
    ann = folder / ANN_DIR
    parquet = sorted(ann.glob("test-*.parquet")) if ann.is_dir() else []
    jsons = (
        sorted(q for q in ann.glob("test-*") if q.suffix in (".json", ".jsonl"))
        if ann.is_dir()
        else []
    )
    have_pyarrow = _have_pyarrow()
    if parquet and have_pyarrow:
        files, reader, form = parquet, _rows_from_parquet, "parquet"
    elif jsons:
        files, reader, form = jsons, _rows_from_json, "JSON"
        if parquet:
            notes.append(
                "pyarrow not importable: rows read from the JSON export, the "
                "parquet file is not read"
            )
    elif parquet:
        raise InputError(
            parquet[0],
            None,
            None,
            "reading parquet needs pyarrow (not a membench "
            "dependency): install it or put the same rows as JSON lines next to it "
            f"({ANN_DIR}/test-00000-of-00001.jsonl)",
            rule="MISSING_FILE",
        )
    else:
        raise InputError(
            ann / "test-00000-of-00001.parquet",
            None,
            None,
            "Video-MME annotation file missing (parquet, or its JSON / JSON lines export)",
            rule="MISSING_FILE",
        )
    rows: list[Any] = []
    for f in files:
        rows += reader(f)
    notes.append(f"rows read from {', '.join(f'{ANN_DIR}/{f.name}' for f in files)} ({form})")
    return rows, notes


def _well_formed(r: Any) -> bool:
    return (
        isinstance(r, dict)
        and all(r.get(k) not in (None, "") for k in REQUIRED)
        and isinstance(r["videoID"], str)
        and isinstance(r["question_id"], str)
        and isinstance(r["question"], str)
    )


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/video-mme``, map it to caption items (no records: see the module
    docstring), account for every question."""
    up = open_upstream(corpus_root, SPEC, folder="Video-MME folder")
    rows = _read(up)
    cov = Coverage(source=KEY)
    made = _map(rows)
    _account(cov, rows, made)
    return made.result(cov)


@dataclass
class _Rows:
    questions: list[Any]  # annotation rows, as upstream
    notes: list[str]  # what was read (for the coverage notes)
    subtitles: dict[str, tuple[list[list], dict[str, int]]]  # videoID -> parse_srt(its .srt)
    not_utf8: set[str]  # videoIDs whose .srt was decoded as cp1252


def _read(up: Upstream) -> _Rows:
    """The annotation rows and every ``subtitle/<videoID>.srt``, decoded and parsed."""
    questions, notes = _annotation_rows(up.folder)
    subtitles: dict[str, tuple[list[list], dict[str, int]]] = {}
    not_utf8: set[str] = set()
    sub_dir = up.folder / SUB_DIR
    for p in sorted(sub_dir.glob("*.srt")) if sub_dir.is_dir() else []:
        if not p.is_file():
            continue
        raw = p.read_bytes()
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")
            not_utf8.add(p.stem)
        subtitles[p.stem] = parse_srt(text)
    return _Rows(questions, notes, subtitles, not_utf8)


@dataclass
class _Made(Mapped):
    # for the notes
    n_videos: int = 0  # distinct videos of well-formed questions
    n_no_srt: int = 0  # ... without a subtitle file
    no_cue: list[str] = field(default_factory=list)  # videos whose .srt has no parseable cue


def _map(rows: _Rows) -> _Made:
    """One outcome per question (never a record) and a caption item per video with cues."""
    made = _Made()
    videos: dict[str, dict] = {}
    seen: set[str] = set()
    for r in rows.questions:
        if not _well_formed(r):
            made.outcomes.append("unparseable row")
            continue
        if r["question_id"] in seen:
            made.outcomes.append("duplicate question_id")
            continue
        seen.add(r["question_id"])
        videos.setdefault(r["videoID"], r)
        made.outcomes.append(NO_GOLD)
    made.n_videos = len(videos)

    # ---- subtitles -> items
    cues: dict[str, list[list]] = {}
    for vid in sorted(videos):
        if vid not in rows.subtitles:
            made.n_no_srt += 1
            continue
        if vid in rows.not_utf8:
            made.fix("subtitle not UTF-8: decoded as cp1252")
        c, dropped = rows.subtitles[vid]
        for kind, n in sorted(dropped.items()):
            made.fix(f"subtitle block dropped: {kind}", n)
        if c:
            cues[vid] = c
        else:
            made.no_cue.append(vid)

    groups = hash_groups(videos, N_HOLDERS, HOLDER_SALT)
    sid = {v: f"{KEY}:{v}" for v in cues}
    times = synthetic_timeline(sid.values())
    for v in sorted(cues):
        r = videos[v]
        made.items.append(
            SourceItem(
                source_id=sid[v],
                modality=MODALITY,
                holder=f"{KEY}/viewer-{groups[v]}",
                observed_at=times[sid[v]],
                content=cues[v],
                meta={
                    "cues": len(cues[v]),
                    "url": r.get("url"),
                    "video_id": r.get("video_id"),
                    "duration_category": r.get("duration"),
                    "domain": r.get("domain"),
                    "sub_category": r.get("sub_category"),
                    "subtitle_end": max(c[1] for c in cues[v]),
                },
            )
        )
    made.texts = {sid[v]: " ".join(c[2] for c in cues[v]) for v in sorted(cues)}
    return made


def _account(cov: Coverage, rows: _Rows, made: _Made) -> None:
    """Coverage: every question's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes += rows.notes
    cov.notes += [f"{SUB_DIR}/{vid}.srt has no parseable cue: no item" for vid in made.no_cue]
    cov.notes += [
        (
            "Video-MME gives whole-video multiple-choice answers and no temporal span; a whole "
            f"video is not a region, so every question is counted not covered ({NO_GOLD})"
        ),
        (
            f"{len(made.items)} of {made.n_videos} videos have a parseable subtitle/<videoID>.srt "
            f"and become caption items; videos without a subtitle file: {made.n_no_srt}"
        ),
        (
            "videos themselves are not read: meta has no duration in seconds (subtitle_end is a "
            "lower bound)"
        ),
    ]
