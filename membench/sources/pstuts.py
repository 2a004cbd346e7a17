"""PsTuts-VQA (Zhao et al., 2021): narrated Photoshop tutorials with expert questions asked
at a sentence of the transcript. Reads ``pstuts-vqa/{train,dev,test}.json`` under the corpus
root (mirrored from mbudisic/pstuts-rag ``data/``); writes nothing. Start at :func:`load`; the
reasoning behind the mapping is in docs/sets.md ("PsTuts-VQA").
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream: each file a list of videos ``{video_id, title, desc, length: "hh:mm:ss.ss", url,
transcripts: [{sent_id, sent, begin, end}], qa: [{sent_id, q, a}]}`` (seconds; ``a`` a short
knowledge-base string). A wrong type is an :class:`InputError` naming file, position
(``[3].qa[17]``) and field. The kg_*.json files are not mirrored and not used.

Mapping:

* items: ``pstuts:<video_id>@viewer-<k>``, one per video on each shelf holding it; ``content =
  [[begin, end, sentence], ...]`` by time, ``meta = {duration, cues, url, title}``; a sentence
  without a usable span is left out and counted (:data:`KINDS`).
* holders: viewers ``pstuts/viewer-<k>`` (:func:`shelves`): each file's videos dealt (salt
  :data:`OWNER_SALT`) to ``max(1, round(videos / VIDEOS_PER_OWNER))`` owners in file order, a
  shelf filled up to :data:`SHELF_SIZE` with other videos in hash order (:data:`SHELF_SALT`).
* records: ``pstuts:<video_id>:<qa index>``, asked of the video's owner; gold ``{"t_start":
  begin, "t_end": end}`` on the owner's copy; answer verbatim; as_of None; observed_at
  synthetic; ``origin.item = <file>#<video_id>/qa[<index>]``, ``origin.notes = sent_id=<n>``;
  ``judgments.same_question`` every span on the shelf where upstream asked the same question
  (:func:`question_key`) with the same answer.
* not covered, in this order: ``sent_id`` not in the transcript, no usable span, a verbatim
  repeat within the video, an empty question; a near-twin (:func:`twin_key`) kept at another
  video first in hash order (``TWIN_SALT:<key>``, :data:`NOT_TWIN`); more than
  :data:`PER_SENTENCE` kept rows of its sentence (:data:`PARAPHRASE_SALT`,
  :data:`NOT_PARAPHRASE`). The build also applies ``derive.ASK_DERIVABLE`` and
  ``derive.CLUSTER_BY_REGION`` to PsTuts.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import snowballstemmer

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from ..core.errors import InputError
from ..core.hashing import hash_order
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

KEY = "pstuts"
SPEC = BY_KEY[KEY]
MODALITY = "video"
SCENARIO = "instructional-video-qa"
DATASET = "mbudisic/pstuts-rag"
LICENSE = "CC BY-NC 4.0"
SPLIT_FILES = ("train.json", "dev.json", "test.json")
#: videos per owning viewer within one upstream file (54 train, 11 dev, 11 test videos ->
#: 30 + 6 + 6 = 42 viewers, each owning 1 or 2 videos)
VIDEOS_PER_OWNER = 1.8
#: videos on every viewer's shelf (its own, then others in hash order)
SHELF_SIZE = 30
OWNER_SALT = "pstuts-owners"
SHELF_SALT = "pstuts-shelf"
#: a near-twin key asked at several videos is kept at the first of them in hash order of
#: the video ids, salted with this and the key
TWIN_SALT = "pstuts-twin"
#: of the kept rows at one sentence, the first in hash order of query_id keeps its question
PARAPHRASE_SALT = "pstuts-paraphrase"
#: questions kept per gold sentence (experts wrote 6 to 10): they are asked and derived
#: together (membench.sets.derive.CLUSTER_BY_REGION)
PER_SENTENCE = 3
#: words left out of a near-twin key (lower case, matched before stemming)
TWIN_STOPWORDS = frozenset(
    """
    a an the to do does did doing done you your i me my we our he his she her they their it its
    how what is are was were be been of in on at by for from and or with can could should would
    will this that these those there so
""".split()
)
NOT_TWIN = "its near-twin is asked of another video"
NOT_PARAPHRASE = "a paraphrase of a kept question at the same sentence"
#: the judgment set of every span where upstream asked the same question, same answer
SAME_QUESTION = "same_question"

# kinds of sentences without a usable span, in the order they are tested
K_MISSING = "begin or end missing"
K_INVERTED = "ends before it begins"
K_LATE = "ends after the video"
KINDS = (K_MISSING, K_INVERTED, K_LATE)

_LENGTH = re.compile(r"(\d+):([0-5]\d):([0-5]\d(?:\.\d+)?)")
_NON_WORD = re.compile(r"[^0-9a-z]+")
_WORD = re.compile(r"[0-9a-z]+")
_STEMMER = snowballstemmer.stemmer("english")


# --------------------------------------------------------------------------- helpers


def holder_of(k: int) -> str:
    return f"{KEY}/viewer-{k}"


def source_id(video: str, k: int) -> str:
    return f"{KEY}:{video}@viewer-{k}"


def question_key(q: str) -> str:
    """A question as :data:`SAME_QUESTION` compares it: lower case, every run of characters
    other than letters and digits one space."""
    return _NON_WORD.sub(" ", q.lower()).strip()


def twin_key(q: str) -> str:
    """A question's near-twin key: the sorted, distinct Snowball (Porter 2) stems of its words
    (runs of letters and digits, lower case) that are not in :data:`TWIN_STOPWORDS`, joined by
    spaces ("How to create new layer?" and "how do i create a new layer" -> "creat layer
    new"). Two questions with one key are near-twins."""
    return " ".join(
        sorted({_STEMMER.stemWord(w) for w in _WORD.findall(q.lower()) if w not in TWIN_STOPWORDS})
    )


def parse_length(s: str) -> float | None:
    """``"hh:mm:ss.ss"`` in seconds; None when it is not that."""
    m = _LENGTH.fullmatch(s.strip())
    if not m:
        return None
    return int(m.group(1)) * 3600 + int(m.group(2)) * 60 + float(m.group(3))


def shelves(
    videos_by_file: Mapping[str, Sequence[str]],
    shelf_size: int = SHELF_SIZE,
    per_owner: int = VIDEOS_PER_OWNER,
) -> tuple[dict[str, int], list[list[str]]]:
    """The viewers (module docstring): ``(owner viewer of each video, each viewer's shelf)``.
    ``videos_by_file`` lists each upstream file's videos, files in the order viewers are
    numbered; a shelf is sorted by video id."""
    owner: dict[str, int] = {}
    n_viewers = 0
    for name, videos in videos_by_file.items():
        if not videos:
            continue
        n = max(1, round(len(videos) / per_owner))
        for v, g in hash_groups(videos, n, f"{OWNER_SALT}:{name}").items():
            owner[v] = n_viewers + g
        n_viewers += n
    every = sorted(owner)
    out: list[list[str]] = []
    for k in range(n_viewers):
        own = [v for v in every if owner[v] == k]
        others = hash_order([v for v in every if owner[v] != k], f"{SHELF_SALT}:{k}")
        out.append(sorted(own + others[: max(0, shelf_size - len(own))]))
    return owner, out


def _num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


# --------------------------------------------------------------------------- read


@dataclass
class _Sentence:
    sent_id: int
    text: str
    begin: float | None
    end: float | None


@dataclass
class _Video:
    file: str
    video_id: str
    title: str
    url: str | None
    duration: float
    sentences: list[_Sentence]
    qa: list[tuple[int, str, str]]  # (sent_id, q, a) in upstream order


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/pstuts-vqa``, map it to viewers' transcript items and records,
    account for every question."""
    up = open_upstream(
        corpus_root,
        SPEC,
        provenance=True,
        files={name: "PsTuts-VQA split file" for name in SPLIT_FILES},
    )
    cov = Coverage(source=KEY)
    revisions = {name: up.revision(name, cov, required=True) for name in SPLIT_FILES}
    videos = _read(up)
    made = _map(videos, revisions)
    _account(cov, videos, made)
    return made.result(cov)


def _read(up: Upstream) -> list[_Video]:
    """Every video of the three split files, in file and list order. Raises InputError naming
    the file, the position and the field of a value that is not in upstream's format, and of
    a video id that two entries share."""
    out: list[_Video] = []
    seen: dict[str, str] = {}
    for name in SPLIT_FILES:
        p = up.folder / name
        for i, raw in enumerate(read_json(p, list, "a JSON list of videos")):
            v = _video(p, name, i, raw)
            if v.video_id in seen:
                raise InputError(
                    p, None, f"[{i}].video_id", f"video {v.video_id} is also {seen[v.video_id]}"
                )
            seen[v.video_id] = f"{name}[{i}]"
            out.append(v)
    return out


def _video(p: Path, name: str, i: int, raw: Any) -> _Video:
    """One upstream video entry, checked field by field (InputError at ``[i].field``)."""

    def bad(fld: str, msg: str) -> InputError:
        return InputError(p, None, f"[{i}]{fld}", msg)

    if not isinstance(raw, dict):
        raise bad("", f"a video must be an object, got {type(raw).__name__}")
    vid = raw.get("video_id")
    if not (
        (isinstance(vid, int) and not isinstance(vid, bool))
        or (isinstance(vid, str) and vid.strip() and not any(c.isspace() for c in vid))
    ):
        raise bad(".video_id", "missing, or not an integer or a string without spaces")
    length = raw.get("length")
    duration = parse_length(length) if isinstance(length, str) else None
    if duration is None or duration <= 0:
        raise bad(".length", f"expected a positive 'hh:mm:ss.ss', got {length!r}")
    url = raw.get("url")
    if url is not None and not isinstance(url, str):
        raise bad(".url", "not a string")
    title = raw.get("title")
    if title is not None and not isinstance(title, str):
        raise bad(".title", "not a string")
    for fld in ("transcripts", "qa"):
        if not isinstance(raw.get(fld), list):
            raise bad(f".{fld}", "missing or not a list")
    sentences: list[_Sentence] = []
    ids: set[int] = set()
    for j, s in enumerate(raw["transcripts"]):
        at = f".transcripts[{j}]"
        if not isinstance(s, dict):
            raise bad(at, "a sentence must be an object")
        sid = s.get("sent_id")
        if not isinstance(sid, int) or isinstance(sid, bool):
            raise bad(f"{at}.sent_id", "missing or not an integer")
        if sid in ids:
            raise bad(f"{at}.sent_id", f"sent_id {sid} repeats an earlier sentence's")
        ids.add(sid)
        if not isinstance(s.get("sent"), str):
            raise bad(f"{at}.sent", "missing or not a string")
        for t in ("begin", "end"):
            if s.get(t) is not None and not _num(s[t]):
                raise bad(f"{at}.{t}", f"not a number of seconds or null: {s[t]!r}")
        sentences.append(_Sentence(sid, s["sent"], s.get("begin"), s.get("end")))
    qa: list[tuple[int, str, str]] = []
    for j, q in enumerate(raw["qa"]):
        at = f".qa[{j}]"
        if not isinstance(q, dict):
            raise bad(at, "a question must be an object")
        if not isinstance(q.get("sent_id"), int) or isinstance(q.get("sent_id"), bool):
            raise bad(f"{at}.sent_id", "missing or not an integer")
        for fld in ("q", "a"):
            if not isinstance(q.get(fld), str):
                raise bad(f"{at}.{fld}", "missing or not a string")
        qa.append((q["sent_id"], q["q"], q["a"]))
    return _Video(name, str(vid), title or "", url, float(duration), sentences, qa)


# --------------------------------------------------------------------------- map


@dataclass
class _Made(Mapped):
    # for the notes
    owner: dict[str, int] = field(default_factory=dict)
    shelf: list[list[str]] = field(default_factory=list)
    dropped: Counter = field(default_factory=Counter)  # sentences without a usable span
    widened: int = 0  # records whose same_question adds spans
    twin_keys: int = 0  # near-twin keys asked at several videos


def _unusable(s: _Sentence, duration: float) -> str | None:
    """Why a sentence has no usable span (a kind of :data:`KINDS`), or None."""
    if s.begin is None or s.end is None:
        return K_MISSING
    if s.end < s.begin or s.begin < 0:
        return K_INVERTED
    if s.end > duration:
        return K_LATE
    return None


def _map(videos: list[_Video], revisions: dict[str, str]) -> _Made:
    """Viewers' items and one outcome per question."""
    made = _Made()
    by_id = {v.video_id: v for v in videos}
    made.owner, made.shelf = shelves(
        {name: [v.video_id for v in videos if v.file == name] for name in SPLIT_FILES}
    )

    # ---- usable spans and cues per video
    spans: dict[str, dict[int, tuple[float, float] | str]] = {}
    cues: dict[str, list[list]] = {}
    for v in videos:
        spans[v.video_id] = {}
        keep = []
        for s in v.sentences:
            why = _unusable(s, v.duration)
            if why:
                made.dropped[why] += 1
                spans[v.video_id][s.sent_id] = why
                continue
            spans[v.video_id][s.sent_id] = (float(s.begin), float(s.end))
            keep.append([float(s.begin), float(s.end), norm_space(s.text)])
        keep.sort(key=lambda c: (c[0], c[1], c[2]))
        cues[v.video_id] = keep
    for kind in KINDS:
        if made.dropped[kind]:
            made.fix(f"transcript sentence dropped: {kind}", made.dropped[kind])

    # ---- items: one per video on each shelf
    placed = [(v, k) for k, shelf in enumerate(made.shelf) for v in shelf]
    times = synthetic_timeline(source_id(v, k) for v, k in placed)
    for v, k in placed:
        sid = source_id(v, k)
        video = by_id[v]
        made.items.append(
            SourceItem(
                source_id=sid,
                modality=MODALITY,
                holder=holder_of(k),
                observed_at=times[sid],
                content=cues[v],
                meta={
                    "duration": video.duration,
                    "cues": len(cues[v]),
                    "url": video.url,
                    "title": video.title,
                },
            )
        )
        made.texts[sid] = " ".join(c[2] for c in cues[v])

    # ---- where upstream asked each (question, answer): usable spans only
    asked: dict[tuple[str, str], set[tuple[str, int]]] = defaultdict(set)
    for v in videos:
        for sent_id, q, a in v.qa:
            if isinstance(spans[v.video_id].get(sent_id), tuple):
                asked[(question_key(q), a)].add((v.video_id, sent_id))

    # ---- which rows are kept: each row's own checks, then near-twins across videos, then
    # ---- paraphrases at one sentence
    why: dict[tuple[str, int], str] = {}
    for v in videos:
        seen: set[tuple[int, str, str]] = set()
        for idx, row in enumerate(v.qa):
            reason = _check(v, row, seen, spans)
            if reason:
                why[(v.video_id, idx)] = reason
    kept = [(v, idx) for v in videos for idx in range(len(v.qa)) if (v.video_id, idx) not in why]
    asked_at: dict[str, set[str]] = defaultdict(set)
    for v, idx in kept:
        asked_at[twin_key(v.qa[idx][1])].add(v.video_id)
    first = {key: hash_order(at, f"{TWIN_SALT}:{key}")[0] for key, at in asked_at.items()}
    made.twin_keys = sum(1 for at in asked_at.values() if len(at) > 1)
    by_sentence: dict[tuple[str, int], list[str]] = defaultdict(list)
    for v, idx in kept:
        if first[twin_key(v.qa[idx][1])] != v.video_id:
            why[(v.video_id, idx)] = NOT_TWIN
        else:
            by_sentence[(v.video_id, v.qa[idx][0])].append(query_id(v.video_id, idx))
    chosen = {
        q for qids in by_sentence.values() for q in hash_order(qids, PARAPHRASE_SALT)[:PER_SENTENCE]
    }
    for v, idx in kept:
        if (v.video_id, idx) not in why and query_id(v.video_id, idx) not in chosen:
            why[(v.video_id, idx)] = NOT_PARAPHRASE

    # ---- records
    for v in videos:
        for idx, row in enumerate(v.qa):
            made.outcomes.append(
                why.get((v.video_id, idx)) or _record(v, idx, row, spans, asked, made, revisions)
            )
    return made


def _region(span: tuple[float, float]) -> dict:
    return {"t_start": span[0], "t_end": span[1]}


def query_id(video: str, idx: int) -> str:
    return f"{KEY}:{video}:{idx}"


def _check(
    v: _Video, row: tuple[int, str, str], seen: set, spans: dict[str, dict[int, Any]]
) -> str | None:
    """Why row ``row`` of video ``v`` cannot be a record on its own, or None. ``seen`` holds
    the video's earlier rows that passed the span checks."""
    sent_id, q, _ = row
    span = spans[v.video_id].get(sent_id)
    if span is None:
        return "sent_id not in the video's transcript"
    if isinstance(span, str):
        return f"gold sentence {span}"
    if not span[0] < span[1]:
        return "gold sentence of no length"
    if row in seen:
        return "verbatim repeat of an earlier question of its sentence"
    seen.add(row)
    if not q.strip():
        return "empty question"
    return None


def _record(
    v: _Video,
    idx: int,
    row: tuple[int, str, str],
    spans: dict[str, dict[int, Any]],
    asked: dict,
    made: _Made,
    revisions: dict[str, str],
) -> RecordDraft:
    """The record of question ``idx`` of video ``v`` (a kept row)."""
    sent_id, q, a = row
    span = spans[v.video_id][sent_id]
    k = made.owner[v.video_id]
    on_shelf = set(made.shelf[k])
    gold = Gold(source_id=source_id(v.video_id, k), region=_region(span))
    same = sorted(
        (source_id(w, k), spans[w][s])
        for w, s in asked[(question_key(q), a)]
        if w in on_shelf and spans[w][s][0] < spans[w][s][1]
    )
    if len(same) > 1:
        made.widened += 1
    return RecordDraft(
        query_id=query_id(v.video_id, idx),
        modality=MODALITY,
        question=q,
        answer=a,
        answer_format="str",
        gold=[gold],
        judgments={SAME_QUESTION: [Gold(source_id=s, region=_region(sp)) for s, sp in same]},
        scope=Scope(holder=holder_of(k), scenario=SCENARIO),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revisions[v.file],
            item=f"{v.file}#{v.video_id}/qa[{idx}]",
            license=LICENSE,
            notes=f"sent_id={sent_id}",
        ),
    )


# --------------------------------------------------------------------------- account


def _account(cov: Coverage, videos: list[_Video], made: _Made) -> None:
    """Coverage: every question's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    owned = Counter(made.owner.values())
    pools = [
        f"{name} {sum(1 for v in videos if v.file == name)} videos -> "
        f"{len({made.owner[v.video_id] for v in videos if v.file == name})} owner(s)"
        for name in SPLIT_FILES
    ]
    sizes = sorted(len(s) for s in made.shelf)
    cov.notes += [
        (
            "videos are not mirrored (the files hold their URLs): items are the transcript "
            "sentences as caption cues, one item per video on each viewer's shelf"
        ),
        (
            f"viewers: {len(made.shelf)}; {'; '.join(pools)}; videos owned per viewer "
            f"{min(owned.values(), default=0)}..{max(owned.values(), default=0)}; items per "
            f"viewer {sizes[0] if sizes else 0}..{sizes[-1] if sizes else 0} "
            f"({len(made.items)} items for {len(videos)} videos)"
        ),
        (
            "every question of a video is asked of its owner, and a near-twin key asked at "
            "several videos is kept at one of them, so near-identical questions never sit in both "
            f"splits (near-twin keys asked at several videos: {made.twin_keys}); up to "
            f"{PER_SENTENCE} questions are kept per gold sentence"
        ),
        (
            f"judgments.{SAME_QUESTION}: {made.widened} records have more spans than their gold "
            "(the same question and answer asked elsewhere on the holder's shelf)"
        ),
    ]
