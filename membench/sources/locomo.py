"""LoCoMo (snap-research/LoCoMo, ``data/locomo10.json``): very long two-person dialogues. Reads
``locomo/`` under the corpus root; writes nothing. Start at :func:`load`; REALTALK's adapter
reuses :func:`parse_date_time`, :func:`fill_times` and :func:`normalise_evidence`.
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream: a list of 10 conversations ``{sample_id, conversation, qa, ...}``; ``conversation``
holds ``speaker_a``, ``speaker_b``, ``session_<k>`` (turns ``{speaker, dia_id: "D<k>:<t>",
text, [img_url, blip_caption, query, re-download]}``) and ``session_<k>_date_time`` (``"1:56 pm
on 8 May, 2023"``); ``qa`` lists ``{question, answer, evidence: ["D<k>:<t>", ...], category:
1..5, [adversarial_answer]}``. ``observation`` and the summaries are not used.

Mapping:

* holder: one per conversation, ``locomo/<sample_id>``; ``scope.session`` is ``None``.
* item per session, ``locomo:<sample_id>:session_<k>``, ``content = [{"turn": t, "speaker",
  "text", "image_caption"?}]`` sorted by ``t`` (``blip_caption``), ``meta = {"turns",
  "date_time", "speakers"}``.
* ``t`` is the 1-based turn number of the dia_id (the mirror's are ``D<k>:1 .. D<k>:n`` in
  list order, checked; a session that is not is renumbered by position, counted).
* observed_at: ``"%I:%M %p on %d %B, %Y"``, UTC; unparseable: a neighbour's +/- 1 minute, else
  the synthetic epoch (counted).
* records: one per ``qa`` entry, ``locomo:<sample_id>:<qa index>`` (0-based), ``origin.item =
  <sample_id>/qa/<index>``; gold ``{"turn": t}`` per evidence id (deduplicated, upstream order);
  ``judgments.session`` each session holding evidence as ``{"turn_start": 1, "turn_end": n}``.
  Malformed evidence is normalised when unambiguous (``evidence: <kind>``) or dropped
  (``evidence: dropped <kind>``), counted; an answerable question left without gold is not
  covered.
* category 5 (adversarial): unanswerable, no answer or gold, the evidence ids to
  ``origin.distractor``, ``adversarial_answer`` to ``origin.notes``; categories 1-4 answer
  verbatim (``"int"`` / ``"str"``). ``origin.notes`` names the category.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from ..contract.schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import (
    SYNTHETIC_EPOCH,
    AdapterResult,
    Coverage,
    Mapped,
    Upstream,
    book,
    json_answer_format,
    open_upstream,
    read_json,
)

KEY = "locomo"
SPEC = BY_KEY[KEY]
FOLDER = SPEC.folder
ANNOTATION_FILE = "locomo10.json"
DATASET = "snap-research/LoCoMo"
DATE_FORMAT = "%I:%M %p on %d %B, %Y"

_SESSION = re.compile(r"session_(\d+)")
_SESSION_DT = re.compile(r"session_(\d+)_date_time")
_DIA = re.compile(r"D(\d+):(\d+)")
_ANSWERABLE = {1, 2, 3, 4}
#: the session-level judgment set (the whole session holding each evidence turn)
SESSION = "session"


# --------------------------------------------------------------------------- helpers


def parse_date_time(raw: Any, fmt: str = DATE_FORMAT) -> datetime | None:
    """``"1:56 pm on 8 May, 2023"`` (or another strftime ``fmt``: REALTALK's
    ``"29.12.2023, 22:42:04"``) -> aware UTC datetime; ``None`` when it does not parse."""
    if not isinstance(raw, str):
        return None
    s = re.sub(r"\s+", " ", raw).strip()
    try:
        dt = datetime.strptime(s, fmt)
    except ValueError:
        return None
    return dt.replace(tzinfo=timezone.utc)


def fill_times(parsed: list[datetime | None]) -> list[datetime]:
    """Replace unparseable times (``None``) keeping the order: the previous parsed time + 1
    minute per step; before the first parsed time, that time - 1 minute per step; the
    synthetic epoch + 1 minute per step when nothing parsed."""
    out: list[datetime | None] = list(parsed)
    anchor = next((i for i, x in enumerate(out) if x is not None), None)
    if anchor is None:
        return [SYNTHETIC_EPOCH + timedelta(minutes=i) for i in range(len(out))]
    for i in range(anchor - 1, -1, -1):
        out[i] = out[i + 1] - timedelta(minutes=1)  # type: ignore[operator]
    for i in range(anchor + 1, len(out)):
        if out[i] is None:
            out[i] = out[i - 1] + timedelta(minutes=1)  # type: ignore[operator]
    return out  # type: ignore[return-value]


def evidence_text(raw: Any, made: Mapped) -> str | list[str]:
    """One upstream evidence entry as a stripped string (the surrounding whitespace removed is
    counted), or a one-item list naming why it cannot be read (not a string, or empty)."""
    if not isinstance(raw, str):
        return ["non-string id"]
    s = raw
    if s != s.strip():
        made.fix("evidence: surrounding whitespace")
        s = s.strip()
    return s or ["empty id"]


def normalise_evidence(raw: Any, made: Mapped) -> list[tuple[int, int] | str]:
    """Turn one upstream evidence entry into ``(session, turn)`` pairs.

    Unambiguous repairs are counted with ``made.fix("evidence: <kind>")``. Pieces that cannot
    be read come back as a string naming the kind of failure (``"unparseable id"``), for the
    caller to count.
    """
    s = evidence_text(raw, made)
    if isinstance(s, list):
        return s
    pieces = [p for p in re.split(r"[;,\s]+", s) if p]
    if len(pieces) > 1:
        made.fix("evidence: several ids in one string")
    out: list[tuple[int, int] | str] = []
    for p in pieces:
        q = p
        if q[:1] == "d":
            made.fix("evidence: lower-case d")
            q = "D" + q[1:]
        m = re.fullmatch(r"D:(\d+):(\d+)", q)
        if m:
            made.fix("evidence: extra colon after D")
            q = f"D{m.group(1)}:{m.group(2)}"
        m = _DIA.fullmatch(q)
        if not m:
            out.append("unparseable id")
            continue
        if (len(m.group(1)) > 1 and m.group(1)[0] == "0") or (
            len(m.group(2)) > 1 and m.group(2)[0] == "0"
        ):
            made.fix("evidence: leading zero")
        out.append((int(m.group(1)), int(m.group(2))))
    return out


def _turns(sample_id: str, k: int, raw_turns: list, made: Mapped) -> list[dict]:
    """Turns of session k numbered by their dia_id (checked to be 1..n in order); a
    renumbering is counted in ``made``."""
    ts: list[int | None] = []
    for tr in raw_turns:
        m = _DIA.fullmatch(str(tr.get("dia_id", ""))) if isinstance(tr, dict) else None
        ts.append(int(m.group(2)) if m and int(m.group(1)) == k else None)
    n = len(raw_turns)
    if ts != list(range(1, n + 1)):
        if None not in ts and sorted(ts) == list(range(1, n + 1)):  # type: ignore[type-var]
            made.fix("dia_id: session turns out of order (sorted by dia_id)")
        else:
            made.fix("dia_id: session renumbered by list position")
            ts = list(range(1, n + 1))
    out = []
    for t, tr in zip(ts, raw_turns):
        tr = tr if isinstance(tr, dict) else {}
        turn = {"turn": t, "speaker": tr.get("speaker"), "text": tr.get("text")}
        if tr.get("blip_caption"):
            turn["image_caption"] = tr["blip_caption"]
        out.append(turn)
    out.sort(key=lambda x: x["turn"])
    return out


def _session_text(turns: list[dict]) -> str:
    lines = []
    for t in turns:
        line = f"{t['speaker']}: {t['text']}"
        if t.get("image_caption"):
            line += f" [image: {t['image_caption']}]"
        lines.append(line)
    return "\n".join(lines)


# --------------------------------------------------------------------------- load


def load(corpus_root: Path) -> AdapterResult:
    """Read ``<corpus_root>/locomo``, map it to items and records, account for every qa
    entry."""
    up = open_upstream(corpus_root, SPEC, files={ANNOTATION_FILE: "LoCoMo annotation file"})
    cov = Coverage(source=KEY)
    revision = up.revision(ANNOTATION_FILE, cov)
    conversations = _read(up)
    made = _map(conversations, revision)
    _account(cov, made)
    return made.result(cov)


def _read(up: Upstream) -> list:
    """The conversations of locomo10.json as upstream (``[]`` when the file is not a JSON
    list). Raises InputError naming the line when the file is not JSON."""
    path = up.folder / ANNOTATION_FILE
    data = read_json(path)
    return data if isinstance(data, list) else []


@dataclass
class _Made(Mapped):
    # sample_id -> k of session_<k>_date_time keys without session_<k> turns (for the notes)
    orphan_dates: dict[str, list[int]] = field(default_factory=dict)


def _map(conversations: list, revision: str) -> _Made:
    """Per conversation (in sample_id order): one item per session, one outcome per qa entry."""
    made = _Made()
    for conv_row in sorted(conversations, key=lambda c: str(c.get("sample_id"))):
        sample_id = str(conv_row["sample_id"])
        holder = f"{KEY}/{sample_id}"
        conv = conv_row.get("conversation") or {}
        orphans = sorted(
            int(m.group(1))
            for k in conv
            if (m := _SESSION_DT.fullmatch(k)) and f"session_{m.group(1)}" not in conv
        )
        if orphans:
            made.orphan_dates[sample_id] = orphans
        known = _sessions(sample_id, conv, holder, made)
        qas = conv_row.get("qa") or []
        answerable_q = {
            _qkey(qa.get("question"))
            for qa in qas
            if isinstance(qa, dict) and qa.get("category") in _ANSWERABLE
        }
        for idx, qa in enumerate(qas):
            made.outcomes.append(
                _record(sample_id, idx, qa, known, holder, revision, made, answerable_q)
            )
    made.texts = dict(sorted(made.texts.items()))
    return made


def _sessions(sample_id: str, conv: dict, holder: str, made: Mapped) -> dict[int, tuple[str, int]]:
    """One item (and its text) per session of one conversation, added to ``made``; returns
    session k -> (source_id, number of turns)."""
    speakers = [conv.get("speaker_a"), conv.get("speaker_b")]
    sessions = sorted(int(m.group(1)) for k in conv if (m := _SESSION.fullmatch(k)))
    known: dict[int, tuple[str, int]] = {}
    raw_dts = [conv.get(f"session_{k}_date_time") for k in sessions]
    parsed = [parse_date_time(x) for x in raw_dts]
    if None in parsed:
        made.fix("date_time: unparseable (neighbouring session +/- 1 min)", parsed.count(None))
    times = fill_times(parsed)
    for k, raw_dt, when in zip(sessions, raw_dts, times):
        sid = f"{KEY}:{sample_id}:session_{k}"
        turns = _turns(sample_id, k, conv[f"session_{k}"] or [], made)
        known[k] = (sid, len(turns))
        made.items.append(
            SourceItem(
                source_id=sid,
                modality="conversation",
                holder=holder,
                observed_at=when,
                content=turns,
                meta={"turns": len(turns), "date_time": raw_dt, "speakers": speakers},
            )
        )
        made.texts[sid] = _session_text(turns)
    return known


def _account(cov: Coverage, made: _Made) -> None:
    """Coverage: every qa entry's outcome and the repairs (:func:`base.book`), then the notes.
    Writes only ``cov``."""
    book(cov, made)
    for sample_id, ks in made.orphan_dates.items():
        cov.notes.append(
            f"{sample_id}: {len(ks)} session_<k>_date_time keys without session_<k> "
            f"turns (k = {ks[0]}..{ks[-1]}); ignored"
        )
    cov.notes.append(
        "turns are 1-based per session = the <t> of dia_id D<k>:<t>; every session's "
        "dia_ids checked to be D<k>:1..n in order"
    )
    cov.notes.append("session_<k>_date_time has no zone upstream: read as UTC")
    cov.notes.append(
        "gold = the evidence turns; judgments.session = each session holding an "
        "evidence turn, as a turn range 1..n (session-level relevance)"
    )
    cov.notes.append(
        "category 5 (adversarial) -> native unanswerable, upstream evidence kept as "
        "origin.distractor"
    )


def _qkey(question: Any) -> str:
    return " ".join(question.split()).casefold() if isinstance(question, str) else ""


def _record(
    sample_id: str,
    idx: int,
    qa: Any,
    known: dict[int, tuple[str, int]],
    holder: str,
    revision: str,
    made: Mapped,
    answerable_q: set[str],
) -> RecordDraft | str:
    """The record of one qa entry, or why it is not covered; evidence repairs are counted in
    ``made``."""
    if not isinstance(qa, dict):
        return "qa entry is not an object"
    question = qa.get("question")
    if not isinstance(question, str) or not question.strip():
        return "empty question"
    category = qa.get("category")
    if category not in _ANSWERABLE and category != 5:
        return "unknown category"

    # evidence -> resolved (session, turn) in upstream order, deduplicated
    evidence = qa.get("evidence")
    if not isinstance(evidence, list):
        evidence = [evidence] if evidence else []
    resolved: list[tuple[int, int]] = []
    for raw in evidence:
        for piece in normalise_evidence(raw, made):
            if isinstance(piece, str):
                made.fix(f"evidence: dropped {piece}")
                continue
            k, t = piece
            if k not in known:
                made.fix("evidence: dropped id of a session that does not exist")
                continue
            if not 1 <= t <= known[k][1]:
                made.fix("evidence: dropped turn beyond the session's length")
                continue
            if piece in resolved:
                made.fix("evidence: duplicate id")
                continue
            resolved.append(piece)

    scope = Scope(holder=holder, session=None, scenario=SPEC.scenario)
    item = f"{sample_id}/qa/{idx}"
    query_id = f"{KEY}:{sample_id}:{idx}"

    if category == 5:
        if _qkey(question) in answerable_q:
            # the adversarial rewrite kept the answerable question verbatim: a system sees the
            # same (question, holder, as_of) twice with opposite answers, so neither can be kept
            # as unanswerable (conv-30 #95 repeats #61 upstream)
            return "adversarial question identical to an answerable one"
        notes = "category 5 (adversarial)"
        if "adversarial_answer" in qa:
            notes += f"; adversarial_answer: {qa['adversarial_answer']!r}"
        if qa.get("answer") is not None:
            made.fix("category 5 with an upstream answer (kept in origin.notes, answer null)")
            notes += f"; upstream answer: {qa['answer']!r}"
        return RecordDraft(
            query_id=query_id,
            modality="conversation",
            question=question,
            answer=None,
            answer_format="none",
            gold=[],
            scope=scope,
            unanswerable=True,
            origin=Origin(
                dataset=DATASET,
                revision=revision,
                item=item,
                license=SPEC.license,
                distractor=[f"D{k}:{t}" for k, t in resolved],
                notes=notes,
            ),
        )

    answer = qa.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return "answerable without an answer"
    fmt = json_answer_format(answer) or "str"  # a boolean or an object is read as text
    if not evidence:
        return "answerable without upstream evidence"
    if not resolved:
        return "answerable, no resolvable evidence"
    gold = [Gold(source_id=known[k][0], region={"turn": t}) for k, t in resolved]
    sessions = list(dict.fromkeys(k for k, _ in resolved))  # upstream order, once each
    session = [
        Gold(source_id=known[k][0], region={"turn_start": 1, "turn_end": known[k][1]})
        for k in sessions
    ]
    return RecordDraft(
        query_id=query_id,
        modality="conversation",
        question=question,
        answer=answer,
        answer_format=fmt,
        gold=gold,
        judgments={SESSION: session},
        scope=scope,
        unanswerable=False,
        origin=Origin(
            dataset=DATASET,
            revision=revision,
            item=item,
            license=SPEC.license,
            notes=f"category {category}",
        ),
    )
