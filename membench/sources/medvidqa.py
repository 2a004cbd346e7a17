"""MedVidQA (Gupta et al., 2022, NLM): medical instructional videos with expert answer spans.
Reads ``medvidqa/`` under the corpus root; writes nothing. Start at :func:`load`.
Why longer: the upstream format, its damage and the mapping are this adapter's contract.

Upstream:

* ``val.json`` / ``test.json``: lists of ``{sample_id, question, answer_start, answer_end,
  answer_start_second, answer_end_second, video_length, video_id, video_url}``;
* ``captions/test_merged_clean.csv`` (QiLong25/MedVidQA-2023, cp1252): one row per test
  question, ``video_id, question, timestamp, answer, subtitles, subtitle_timestamps``, the last
  a Python dict repr ``{'(start, end)': text}`` of the video's YouTube captions.

Damage, each kind handled and counted: a video id turned into ``#NAME?`` (:data:`MANGLED_IDS`)
is recovered from the row's question and timestamp; a caption text that lost its closing quote
is read key by key with ``ast.literal_eval`` (never ``eval``) and the stray quote dropped; a cue
is dropped (:data:`KINDS`) when empty, inverted, repeated within its video, shared identically
with another video without being in chronological position in exactly one of them, out of
chronological order (not on the longest non-decreasing run of starts) or starting after
``video_length``; ends past ``video_length`` are clipped.

Mapping: items are the caption cue lists of videos with usable captions (the videos are not
mirrored), ``medvidqa:<video_id>``, ``content = [[start, end, text], ...]`` by time, meta
``{duration: video_length, cues, url}``; holders ``medvidqa/viewer-<k>``
(``base.hash_groups(all upstream video ids, 5, "medvidqa-holders")``); observed_at synthetic
(:func:`base.synthetic_timeline`, UTC). Records ``medvidqa:<sample_id>``, gold ``{"t_start",
"t_end"}`` in seconds; the answer *is* the span, so ``answer`` is None (``"none"``). A question
whose video has no usable captions is not covered.
"""

from __future__ import annotations

import ast
import bisect
import csv
import io
import re
from collections import Counter, defaultdict
from dataclasses import dataclass, field
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
    hash_groups,
    norm_space,
    open_upstream,
    read_json,
    synthetic_timeline,
)

KEY = "medvidqa"
SPEC = BY_KEY[KEY]
FOLDER = "medvidqa"
MODALITY = "video"
SCENARIO = "instructional-video-qa"
DATASET = "deepaknlp/MedVidQACL"
LICENSE = "not stated upstream; research evaluation only"
ANNOTATION_FILES = ("val.json", "test.json")
CAPTIONS = "captions/test_merged_clean.csv"
N_HOLDERS = 5
HOLDER_SALT = "medvidqa-holders"
MANGLED_IDS = {"#NAME?", "#VALUE!", "#REF!"}
# A video's captions are usable when at least this many cues survive cleaning.
MIN_CUES = 1

# kinds of dropped cues, in the order they are tested
K_EMPTY = "empty text"
K_INVERTED = "end before start"
K_REPEAT = "repeated within video"
K_SHARED = "duplicated across videos"
K_ORDER = "out of chronological order"
K_LATE = "starts after video end"
KINDS = (K_EMPTY, K_INVERTED, K_REPEAT, K_SHARED, K_ORDER, K_LATE)

_NUM = r"-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?"
_KEY = re.compile(r"""(['"])\(\s*(""" + _NUM + r""")\s*,\s*(""" + _NUM + r""")\s*\)\1\s*:\s*""")


# --------------------------------------------------------------------------- helpers


def parse_cue_dict(s: str) -> tuple[list[tuple[float, float, str]], int]:
    """Parse a ``{'(start, end)': text, ...}`` repr into cues in dict order.

    Returns (cues, repaired) where ``repaired`` counts values whose quoting was broken and was
    repaired. Raises ValueError when ``s`` is not a dict repr with ``'(start, end)'`` keys.
    Duplicate keys are kept (``ast.literal_eval`` of the whole dict would silently keep the last).
    """
    s = s.strip()
    if not (s.startswith("{") and s.endswith("}")):
        raise ValueError("not a dict repr")
    body = s[1:-1].strip()
    if not body:
        return [], 0
    keys = list(_KEY.finditer(body))
    if not keys or keys[0].start() != 0:
        raise ValueError("does not start with a '(start, end)' key")
    cues: list[tuple[float, float, str]] = []
    repaired = 0
    for i, m in enumerate(keys):
        end = keys[i + 1].start() if i + 1 < len(keys) else len(body)
        frag = body[m.end() : end].strip()
        if frag.endswith(","):
            frag = frag[:-1].rstrip()
        try:
            text = ast.literal_eval(frag)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            text = None
        if not isinstance(text, str):
            repaired += 1
            text = frag
            if text[:1] in ("'", '"'):
                q, text = text[0], text[1:]
                if text.endswith(q):
                    text = text[:-1]
        cues.append((float(m.group(2)), float(m.group(3)), norm_space(text)))
    return cues, repaired


def _in_order(starts: list[float]) -> set[int]:
    """Indices of one longest non-decreasing subsequence of ``starts`` (deterministic)."""
    tails: list[float] = []
    tail_idx: list[int] = []
    prev = [-1] * len(starts)
    for i, s in enumerate(starts):
        j = bisect.bisect_right(tails, s)
        if j == len(tails):
            tails.append(s)
            tail_idx.append(i)
        else:
            tails[j] = s
            tail_idx[j] = i
        prev[i] = tail_idx[j - 1] if j > 0 else -1
    out: set[int] = set()
    k = tail_idx[-1] if tail_idx else -1
    while k != -1:
        out.add(k)
        k = prev[k]
    return out


def clean_cues(
    raw: dict[str, list[tuple[float, float, str]]], duration: dict[str, float]
) -> tuple[dict[str, list[list]], Counter, int]:
    """Drop broken cues (see module docstring). Returns (clean cues per video sorted by time,
    dropped count per kind, number of cue ends clipped to the video length)."""
    in_order = {v: _in_order([c[0] for c in cues]) for v, cues in raw.items()}
    where: dict[tuple, set[str]] = defaultdict(set)
    ordered_in: dict[tuple, set[str]] = defaultdict(set)
    for v, cues in raw.items():
        for i, c in enumerate(cues):
            where[c].add(v)
            if i in in_order[v]:
                ordered_in[c].add(v)
    dropped: Counter = Counter()
    clipped = 0
    out: dict[str, list[list]] = {}
    for v in sorted(raw):
        seen: set[tuple] = set()
        keep: list[list] = []
        dur = duration[v]
        for i, c in enumerate(raw[v]):
            start, end, text = c
            owners = ordered_in[c]
            if not text:
                kind = K_EMPTY
            elif end < start:
                kind = K_INVERTED
            elif c in seen:
                kind = K_REPEAT
            elif len(where[c]) > 1 and not (len(owners) == 1 and v in owners):
                kind = K_SHARED
            elif i not in in_order[v]:
                kind = K_ORDER
            elif start >= dur:
                kind = K_LATE
            else:
                kind = None
            seen.add(c)
            if kind:
                dropped[kind] += 1
                continue
            if end > dur:
                end = float(dur)
                clipped += 1
            keep.append([start, end, text])
        keep.sort(key=lambda x: (x[0], x[1], x[2]))
        out[v] = keep
    return out, dropped, clipped


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --------------------------------------------------------------------------- adapter


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/medvidqa``, map it to caption items and records, account for every
    question."""
    up = open_upstream(
        corpus_root,
        SPEC,
        provenance=True,
        files={name: "MedVidQA annotation file" for name in ANNOTATION_FILES},
    )
    cov = Coverage(source=KEY)
    revisions = {name: up.revision(name, cov, required=True) for name in ANNOTATION_FILES}
    rows = _read(up)
    made = _map(rows, revisions)
    _account(cov, rows, made)
    return made.result(cov)


@dataclass
class _Rows:
    questions: dict[str, list]  # annotation file -> its JSON list, as upstream
    captions: list[dict] | None  # the caption CSV's rows (None: file absent)
    caption_bytes_replaced: bool  # bytes undefined in cp1252 were replaced


def _read(up: Upstream) -> _Rows:
    """val.json and test.json (JSON lists) and the caption CSV (cp1252) when present. Raises
    InputError naming the file (and line) when they are not in that format."""
    questions: dict[str, list] = {}
    for name in ANNOTATION_FILES:
        p = up.folder / name
        questions[name] = read_json(p, list, "a JSON list of questions")
    p = up.folder / CAPTIONS
    if not p.is_file():
        return _Rows(questions, None, False)
    raw = p.read_bytes()
    replaced = False
    try:
        text = raw.decode("cp1252")
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
        replaced = True
    rows = list(csv.DictReader(io.StringIO(text, newline="")))
    need = {"video_id", "question", "timestamp", "subtitle_timestamps"}
    if rows and not need <= set(rows[0]):
        raise InputError(p, 1, None, f"caption CSV lacks columns {sorted(need - set(rows[0]))}")
    return _Rows(questions, rows, replaced)


def _well_formed(q: Any) -> bool:
    """A question that carries the fields records need (the rest are counted not covered)."""
    return (
        isinstance(q, dict)
        and isinstance(q.get("video_id"), str)
        and q["video_id"]
        and q.get("sample_id") is not None
        and isinstance(q.get("question"), str)
        and q["question"].strip() != ""
    )


@dataclass
class _Made(Mapped):
    # for the notes
    vids_of: dict[str, set[str]] = field(default_factory=dict)  # annotation file -> video ids
    captioned: set[str] = field(default_factory=set)  # videos with a caption row
    n_raw: int = 0  # cues parsed (videos with a length)
    dropped: Counter = field(default_factory=Counter)  # cues dropped, by kind
    clipped: int = 0  # cue ends clipped to video_length
    n_usable: int = 0
    n_broken: int = 0


def _map(rows: _Rows, revisions: dict[str, str]) -> _Made:
    """Caption items of the videos with usable captions and one outcome per question."""
    made = _Made()
    questions = [q for name in ANNOTATION_FILES for q in rows.questions[name] if _well_formed(q)]
    made.vids_of = {
        name: {q["video_id"] for q in rows.questions[name] if _well_formed(q)}
        for name in ANNOTATION_FILES
    }

    # video length and url per video (first question's; disagreements counted)
    duration: dict[str, float] = {}
    url: dict[str, str] = {}
    for q in questions:
        v = q["video_id"]
        if _num(q.get("video_length")) and q["video_length"] > 0:
            if v in duration and duration[v] != q["video_length"]:
                made.fix("video_length differs between questions of one video: first kept")
            duration.setdefault(v, q["video_length"])
        if isinstance(q.get("video_url"), str):
            url.setdefault(v, q["video_url"])

    # ---- captions
    raw_cues: dict[str, list] = {}
    unreadable: set[str] = set()
    if rows.captions is not None:
        raw_cues, unreadable = _caption_cues(rows.captions, questions, made)
    made.captioned = set(raw_cues) | unreadable
    for v in sorted(v for v in raw_cues if v not in duration):
        unreadable.add(v)
        del raw_cues[v]
    clean, made.dropped, made.clipped = clean_cues(raw_cues, duration)
    made.n_raw = sum(len(c) for c in raw_cues.values())
    for kind in KINDS:
        if made.dropped[kind]:
            made.fix(f"caption cue dropped: {kind}", made.dropped[kind])
    if made.clipped:
        made.fix("caption cue end clipped to video_length", made.clipped)
    usable = {v: c for v, c in clean.items() if len(c) >= MIN_CUES}
    broken = (set(clean) - set(usable)) | unreadable
    made.n_usable, made.n_broken = len(usable), len(broken)

    # ---- items
    groups = hash_groups({q["video_id"] for q in questions}, N_HOLDERS, HOLDER_SALT)
    sid = {v: f"{KEY}:{v}" for v in usable}
    times = synthetic_timeline(sid.values())
    made.items = [
        SourceItem(
            source_id=sid[v],
            modality=MODALITY,
            holder=f"{KEY}/viewer-{groups[v]}",
            observed_at=times[sid[v]],
            content=usable[v],
            meta={"duration": duration[v], "cues": len(usable[v]), "url": url.get(v)},
        )
        for v in usable
    ]
    made.texts = {sid[v]: " ".join(c[2] for c in usable[v]) for v in sorted(usable)}

    # ---- records
    seen_ids: set[str] = set()
    for name in ANNOTATION_FILES:
        for q in rows.questions[name]:
            made.outcomes.append(
                _record(name, q, seen_ids, usable, broken, duration, groups, revisions[name])
            )
    return made


def _caption_cues(
    rows: list[dict], questions: list[dict], made: Mapped
) -> tuple[dict[str, list[tuple[float, float, str]]], set[str]]:
    """Caption cues per video id (dict order) and the ids whose caption repr is unreadable,
    from the caption CSV's rows; recovered ids and repairs are counted in ``made``."""
    known = {q["video_id"] for q in questions}
    by_q: dict[tuple[str, str], set[str]] = defaultdict(set)
    for q in questions:
        by_q[(q["question"], f"({q['answer_start_second']}, {q['answer_end_second']})")].add(
            q["video_id"]
        )
    reprs: dict[str, str] = {}
    for row in rows:
        vid = (row.get("video_id") or "").strip()
        if vid not in known:
            cand = by_q.get(((row.get("question") or ""), (row.get("timestamp") or "").strip()))
            if cand and len(cand) == 1:
                new = next(iter(cand))
                why = "spreadsheet error value" if vid in MANGLED_IDS else "unknown id"
                made.fix(f"caption row video_id recovered by question match ({why})")
                vid = new
            else:
                made.fix("caption row ignored: video_id unknown and not recoverable")
                continue
        s = row.get("subtitle_timestamps") or ""
        if vid in reprs:
            if reprs[vid] != s:
                made.fix("caption rows of one video disagree: first row kept")
            continue
        reprs[vid] = s
    cues: dict[str, list[tuple[float, float, str]]] = {}
    unreadable: set[str] = set()
    for vid in sorted(reprs):
        try:
            c, rep = parse_cue_dict(reprs[vid])
        except ValueError:
            unreadable.add(vid)
            continue
        if rep:
            made.fix("caption text with broken quoting repaired", rep)
        cues[vid] = c
    return cues, unreadable


def _record(
    name: str,
    q: Any,
    seen_ids: set[str],
    usable: dict[str, list],
    broken: set[str],
    duration: dict[str, float],
    groups: dict[str, int],
    revision: str,
) -> RecordDraft | str:
    """The record of one question of annotation file ``name``, or why it is not covered."""
    if not _well_formed(q):
        return "unparseable question"
    v = q["video_id"]
    qid = f"{KEY}:{q['sample_id']}"
    if qid in seen_ids:
        return "duplicate sample_id"
    seen_ids.add(qid)
    if v in broken:
        return "broken captions"
    if v not in usable:
        return "no captions in mirror"
    s, e = q.get("answer_start_second"), q.get("answer_end_second")
    if not (_num(s) and _num(e)):
        return "unparseable answer span"
    if not (0 <= s <= e <= duration[v]):
        return "answer span outside video"
    return RecordDraft(
        query_id=qid,
        modality=MODALITY,
        question=q["question"],
        answer=None,
        answer_format="none",
        gold=[Gold(source_id=f"{KEY}:{v}", region={"t_start": float(s), "t_end": float(e)})],
        scope=Scope(holder=f"{KEY}/viewer-{groups[v]}", scenario=SCENARIO),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revision,
            item=f"{name}#{q['sample_id']}",
            license=LICENSE,
            notes=f"answer_start={q.get('answer_start')}; answer_end={q.get('answer_end')}",
        ),
    )


def _account(cov: Coverage, rows: _Rows, made: _Made) -> None:
    """Coverage: every question's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    if rows.caption_bytes_replaced:
        cov.fix("caption file bytes undefined in cp1252 replaced")
    if rows.captions is None:
        cov.notes.append(f"{CAPTIONS} absent: no video has captions")
    vids_of, captioned = made.vids_of, made.captioned
    shared = vids_of["val.json"] & vids_of["test.json"]
    kinds = ", ".join(f"{k} {made.dropped[k]}" for k in KINDS if made.dropped[k]) or "none"
    cov.notes += [
        (
            "videos are not mirrored (copyright, per the upstream README): items are YouTube "
            "caption cue lists; gold spans are checked against upstream video_length"
        ),
        (
            f"captions ({CAPTIONS}, cp1252) exist for {len(captioned & vids_of['test.json'])} of "
            f"{len(vids_of['test.json'])} test videos and {len(captioned & vids_of['val.json'])} "
            f"of {len(vids_of['val.json'])} val videos; val and test share {len(shared)} videos"
        ),
        (
            f"caption cues: {made.n_raw} parsed, {sum(made.dropped.values())} dropped as broken "
            f"({kinds}), {made.clipped} ends clipped to video_length; {made.n_usable} videos "
            f"usable, {made.n_broken} not"
        ),
        "MedVidQA answers are time spans: answer is null, the span is the gold region",
    ]
