"""REALTALK (danny911kr/REALTALK, Lee et al., 2025): ten real 21-day chats between two people,
mapped to sessions (items), one holder per conversation, and questions with evidence turns
(records). Reads ``realtalk/*.json`` under the mirror root; writes nothing. Start at
:func:`load` (the registry names it); docs/sets.md ("REALTALK") says why one holder.
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream (``realtalk/Chat_<n>_<a>_<b>.json``, LoCoMo's layout): ``name = {speaker_1,
speaker_2}``; ``session_<k>`` a list of turns ``{clean_text, speaker, date_time: "29.12.2023,
22:42:04", dia_id: "D<d>:<t>", img_file, img_url, blip_caption?}``; ``session_<k>_date_time``;
``events_session_<k>`` (not used); ``qa`` a list of ``{question, answer, evidence: ["D<d>:<t>",
...], category: 1|2|3}``. The ``D<d>`` of a dia_id does not follow the session key, and the
numbering skips messages the cleaned turns omit (photos and others).

Mapping:

* holder ``realtalk/<file stem>``; ``scope.session`` is ``None``.
* item per session, ``realtalk:<file stem>:session_<k>``, inline ``content`` = the turns in list
  order ``[{"turn": t, "speaker", "text": clean_text, "dia_id", "date_time",
  "image_caption"?}]`` (``blip_caption``); ``meta = {"turns", "date_time", "speakers"}``; a
  session with no turns gives no item (counted). In-chat names are kept verbatim.
* ``t`` is the 1-based position in the session; evidence is resolved by dia_id over the whole
  conversation (a dia_id two turns share, or an unreadable one, is counted and never evidence).
* observed_at: ``session_<k>_date_time`` as ``"%d.%m.%Y, %H:%M:%S"``, UTC; else the first
  turn's time, else a neighbour's +/- 1 minute (:func:`locomo.fill_times`; both counted).
* records: one per ``qa`` entry, ``realtalk:<file stem>:<qa index>`` (0-based),
  ``origin.item = <file stem>/qa/<index>``, ``origin.revision`` the file's commit
  (``PROVENANCE.jsonl``), ``origin.notes = "category <c>"`` (all answerable);
  answer verbatim; gold ``{"turn": t}`` per evidence turn (deduplicated, upstream order);
  ``judgments.session`` the whole sessions holding gold; ``as_of`` ``None``.
* evidence strings: LoCoMo's repairs (:func:`locomo.normalise_evidence`) plus ``D5:3.``,
  ``D 2:18``, ``23:29`` and ranges ``D12:3-D12:5``, each counted (``evidence: <kind>``);
  unreadable ids are dropped and counted.

Not covered (counted by reason): a question whose evidence is only omitted messages, with no
evidence, with a dia_id as answer, an unknown category, an empty question or a non-object
entry. Gold on a photo turn is that turn (its text and caption). Unreadable input (wrong
types, ``name`` without two speakers) is an :class:`InputError` naming file and field.
"""

from __future__ import annotations

import re
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
    json_answer_format,
    norm_space,
    open_upstream,
    read_json,
)
from .locomo import SESSION, evidence_text, fill_times, normalise_evidence, parse_date_time

KEY = "realtalk"
SPEC = BY_KEY[KEY]
DATASET = "danny911kr/REALTALK"
FILES = "Chat_*.json"
DATE_FORMAT = "%d.%m.%Y, %H:%M:%S"
CATEGORIES = (1, 2, 3)
#: the reason a question whose evidence names only messages the turns omit is not covered
PHOTOS = "evidence only in messages the turns omit (photos and others; not mirrored)"

_SESSION = re.compile(r"session_(\d+)")
_DIA = re.compile(r"D(\d+):(\d+)")
_BARE = re.compile(r"\d+:\d+")
_SPACE_AFTER_D = re.compile(r"\b([Dd])\s+(?=\d)")


@dataclass
class _Conv:
    """One upstream file as read: its stem, speakers, sessions ``(k, raw date_time, turns)``
    in k order and ``qa`` list."""

    name: str
    path: Path
    speakers: list[str]
    sessions: list[tuple[int, Any, list[dict]]]
    qa: list


# --------------------------------------------------------------------------- load


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/realtalk``, map it to items and records, account for every qa
    entry."""
    up = open_upstream(corpus_root, SPEC, folder="the REALTALK folder", provenance=True)
    cov = Coverage(source=KEY)
    convs = _read(up)
    revisions = {c.name: up.revision(c.path.name, cov) for c in convs}
    made = _map(convs, revisions)
    _account(cov, made)
    return made.result(cov)


def _read(up: Upstream) -> list[_Conv]:
    """Every ``Chat_*.json`` of the folder, in name order, checked for the fields the mapping
    reads; raises InputError naming the file and field otherwise."""
    paths = sorted(up.folder.glob(FILES))
    if not paths:
        raise InputError(
            up.folder / FILES, None, None, "no REALTALK conversation file", rule="MISSING_FILE"
        )
    return [_read_conv(p) for p in paths]


def _read_conv(p: Path) -> _Conv:
    data = read_json(p, dict, "a LoCoMo-format conversation object")
    name = data.get("name")
    speakers = [name.get(k) for k in ("speaker_1", "speaker_2")] if isinstance(name, dict) else []
    if len(speakers) != 2 or not all(isinstance(s, str) for s in speakers):
        raise InputError(p, None, "name", "missing, or without speaker_1 and speaker_2 strings")
    qa = data.get("qa")
    if not isinstance(qa, list):
        raise InputError(p, None, "qa", "missing or not a list")
    sessions = []
    for k in sorted(int(m.group(1)) for key in data if (m := _SESSION.fullmatch(key))):
        where = f"session_{k}"
        turns = data[where]
        if not isinstance(turns, list):
            raise InputError(p, None, where, "not a list of turns")
        for i, tr in enumerate(turns):
            if not isinstance(tr, dict):
                raise InputError(p, None, f"{where}[{i}]", "not a turn object")
            for f in ("clean_text", "speaker"):
                if not isinstance(tr.get(f), str):
                    raise InputError(p, None, f"{where}[{i}].{f}", "missing or not a string")
            if not isinstance(tr.get("img_file", []), list):
                raise InputError(p, None, f"{where}[{i}].img_file", "not a list")
        sessions.append((k, data.get(f"{where}_date_time"), turns))
    return _Conv(name=p.stem, path=p, speakers=speakers, sessions=sessions, qa=qa)


# --------------------------------------------------------------------------- map


@dataclass
class _Made(Mapped):
    photo_turns: int = 0  # turns that carry img_file (photos, not mirrored)
    photo_gold: int = 0  # gold turns among them


@dataclass
class _Index:
    """One conversation's turns by dia_id: ``(d, t) -> (source_id, turn, has photo)``, the
    dia_ids two turns share, and each session item's number of turns."""

    at: dict[tuple[int, int], tuple[str, int, bool]] = field(default_factory=dict)
    shared: set[tuple[int, int]] = field(default_factory=set)
    turns: dict[str, int] = field(default_factory=dict)


def _map(convs: list[_Conv], revisions: dict[str, str]) -> _Made:
    """Per conversation (in file name order): one item per session, one outcome per qa
    entry."""
    made = _Made()
    for conv in convs:
        holder = f"{KEY}/{conv.name}"
        index = _sessions(conv, holder, made)
        for idx, qa in enumerate(conv.qa):
            made.outcomes.append(
                _record(conv.name, idx, qa, index, holder, revisions[conv.name], made)
            )
    made.texts = dict(sorted(made.texts.items()))
    return made


def _session_time(raw: Any, turns: list[dict], made: _Made) -> tuple[Any, Any]:
    """(parsed time or None, the raw string it came from) of one session."""
    when = parse_date_time(raw, DATE_FORMAT)
    if when is None and turns:
        first = turns[0].get("date_time")
        when = parse_date_time(first, DATE_FORMAT)
        if when is not None:
            made.fix("date_time: session time from its first turn")
            return when, first
    return when, raw


def _sessions(conv: _Conv, holder: str, made: _Made) -> _Index:
    """One item (and its text) per non-empty session of one conversation, added to ``made``;
    returns the conversation's dia_id index."""
    index = _Index()
    kept = []
    for k, raw_dt, turns in conv.sessions:
        if not turns:
            made.fix("session without turns (no item)")
            continue
        when, shown = _session_time(raw_dt, turns, made)
        kept.append((k, when, shown, turns))
    parsed = [w for _, w, _, _ in kept]
    if None in parsed:
        made.fix("date_time: unparseable (neighbouring session +/- 1 min)", parsed.count(None))
    for (k, _, shown, raw_turns), when in zip(kept, fill_times(parsed)):
        sid = f"{KEY}:{conv.name}:session_{k}"
        content = []
        for t, tr in enumerate(raw_turns, 1):
            turn = {
                "turn": t,
                "speaker": tr["speaker"],
                "text": tr["clean_text"],
                "dia_id": tr.get("dia_id"),
                "date_time": tr.get("date_time"),
            }
            if tr.get("blip_caption"):
                turn["image_caption"] = tr["blip_caption"]
            photo = bool(tr.get("img_file"))
            made.photo_turns += photo
            content.append(turn)
            m = _DIA.fullmatch(tr["dia_id"]) if isinstance(tr.get("dia_id"), str) else None
            if m is None:
                made.fix("dia_id: unreadable (the turn cannot be evidence)")
                continue
            key = (int(m.group(1)), int(m.group(2)))
            if key in index.at:
                made.fix("dia_id: held by two turns (evidence on it is dropped)")
                index.shared.add(key)
            index.at.setdefault(key, (sid, t, photo))
        made.items.append(
            SourceItem(
                source_id=sid,
                modality=SPEC.modality,
                holder=holder,
                observed_at=when,
                content=content,
                meta={"turns": len(content), "date_time": shown, "speakers": list(conv.speakers)},
            )
        )
        made.texts[sid] = "\n".join(_line(t) for t in content)
        index.turns[sid] = len(content)
    return index


def _line(turn: dict) -> str:
    """One line per turn (newlines inside a message flattened), as the modality reads text."""
    line = f"{turn['speaker']}: {norm_space(turn['text'])}"
    if turn.get("image_caption"):
        line += f" [image: {norm_space(str(turn['image_caption']))}]"
    return line


def evidence_ids(raw: Any, made: Mapped) -> list[tuple[int, int, int] | str]:
    """One upstream evidence entry as ``(d, first t, last t)`` spans of dia_ids (a single id:
    first == last), or a string naming why a piece cannot be read. Repairs are counted in
    ``made`` (``evidence: <kind>``); LoCoMo's single-id repairs come from
    :func:`locomo.normalise_evidence`."""
    s = evidence_text(raw, made)
    if isinstance(s, list):
        return s
    if _SPACE_AFTER_D.search(s):
        made.fix("evidence: space after D")
        s = _SPACE_AFTER_D.sub(r"\1", s)
    pieces = [p for p in re.split(r"[;,\s]+", s) if p]
    if len(pieces) > 1:
        made.fix("evidence: several ids in one string")
    out: list[tuple[int, int, int] | str] = []
    for p in pieces:
        if p.endswith("."):
            made.fix("evidence: trailing full stop")
            p = p.rstrip(".")
        ends = p.split("-")
        if len(ends) > 2:
            out.append("unparseable id")
            continue
        got = []
        for e in ends:
            if _BARE.fullmatch(e):
                made.fix("evidence: missing D")
                e = "D" + e
            got.extend(normalise_evidence(e, made))
        if any(isinstance(g, str) for g in got):
            out.append(next(g for g in got if isinstance(g, str)))
        elif len(got) == 1:
            out.append((got[0][0], got[0][1], got[0][1]))
        elif got[0][0] == got[1][0] and got[0][1] <= got[1][1]:
            made.fix("evidence: range of ids (the turns it spans)")
            out.append((got[0][0], got[0][1], got[1][1]))
        else:
            out.append("unparseable range")
    return out


def _resolve(evidence: list, index: _Index, made: _Made) -> tuple[list[tuple[str, int]], int]:
    """Evidence -> (source_id, turn) in upstream order, deduplicated, and how many ids named a
    message the turns omit."""
    resolved: list[tuple[str, int]] = []
    omitted = 0
    for raw in evidence:
        for piece in evidence_ids(raw, made):
            if isinstance(piece, str):
                made.fix(f"evidence: dropped {piece}")
                continue
            d, a, b = piece
            keys = (
                [(d, a)]
                if a == b
                else [k for k in sorted(index.at) if k[0] == d and a <= k[1] <= b]
            )
            if not keys:
                made.fix("evidence: dropped range holding no turn")
                omitted += 1
                continue
            for key in keys:
                if key in index.shared:
                    made.fix("evidence: dropped id two turns share")
                    continue
                if key not in index.at:
                    made.fix(
                        "evidence: dropped id of a message the turns omit (a photo or "
                        "other, not mirrored)"
                    )
                    omitted += 1
                    continue
                sid, t, photo = index.at[key]
                if (sid, t) in resolved:
                    made.fix("evidence: duplicate id")
                    continue
                made.photo_gold += photo
                resolved.append((sid, t))
    return resolved, omitted


def _record(
    name: str, idx: int, qa: Any, index: _Index, holder: str, revision: str, made: _Made
) -> RecordDraft | str:
    """The record of one qa entry, or why it is not covered; evidence repairs are counted in
    ``made``."""
    if not isinstance(qa, dict):
        return "qa entry is not an object"
    question = qa.get("question")
    if not isinstance(question, str) or not question.strip():
        return "empty question"
    category = qa.get("category")
    if category not in CATEGORIES or isinstance(category, bool):
        return "unknown category"
    answer = qa.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return "answerable without an answer"
    if isinstance(answer, str) and _DIA.fullmatch(answer.strip()):
        return "answer is a dia_id, not an answer"
    evidence = qa.get("evidence")
    if not isinstance(evidence, list):
        evidence = [evidence] if evidence else []
    if not evidence:
        return "answerable without upstream evidence"
    resolved, omitted = _resolve(evidence, index, made)
    if not resolved:
        return PHOTOS if omitted else "answerable, no resolvable evidence"
    gold = [Gold(source_id=sid, region={"turn": t}) for sid, t in resolved]
    session = [
        Gold(source_id=sid, region={"turn_start": 1, "turn_end": index.turns[sid]})
        for sid in dict.fromkeys(sid for sid, _ in resolved)
    ]
    return RecordDraft(
        query_id=f"{KEY}:{name}:{idx}",
        modality=SPEC.modality,
        question=question,
        answer=answer,
        answer_format=json_answer_format(answer) or "str",
        gold=gold,
        judgments={SESSION: session},
        scope=Scope(holder=holder, session=None, scenario=SPEC.scenario),
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revision,
            item=f"{name}/qa/{idx}",
            license=SPEC.license,
            notes=f"category {category}",
        ),
    )


# --------------------------------------------------------------------------- account


def _account(cov: Coverage, made: _Made) -> None:
    """Coverage: every qa entry's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    cov.notes.append(
        "one holder per conversation: both participants saw every turn, so a "
        "participant's view is the whole chat"
    )
    cov.notes.append(
        "turns are 1-based list positions per session; evidence resolved by "
        "dia_id over the conversation, never by session number"
    )
    cov.notes.append(
        f"{made.photo_turns} turns carry photos (img_file, not mirrored): kept as "
        f"their text and blip_caption; {made.photo_gold} gold turns are among them"
    )
    cov.notes.append("session_<k>_date_time has no zone upstream: read as UTC")
