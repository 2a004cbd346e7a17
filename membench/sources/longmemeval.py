"""LongMemEval (xiaowu0162/LongMemEval, Wu et al., ICLR 2025): chat-assistant memory. Not in the
corpus mirror: reads the upstream release under ``<root>/longmemeval/`` (tested on
``tests/fixtures/longmemeval/``); writes nothing. Start at :func:`load`.
Why longer: the upstream format and its mapping are this adapter's contract.

Upstream (README "Dataset Format"): ``longmemeval_s.json``, ``_m`` and ``_oracle`` each list the
same 500 instances ``{question_id, question_type, question, answer, question_date,
haystack_session_ids[], haystack_dates[], haystack_sessions[[{role, content, has_answer?}]],
answer_session_ids[]}`` over different haystacks; exactly one is read (``_s``, else ``_m``, else
``_oracle``; the others noted). Dates look like ``"2023/05/20 (Sat) 02:21"``; a ``question_id``
ending in ``_abs`` is unanswerable; ``has_answer: true`` marks evidence turns.

Mapping:

* holder: one per instance, ``longmemeval/<question_id>``; ``scope.session`` is ``None``.
* item per haystack session, ``longmemeval:<question_id>:<session_id>`` (a repeated id gets
  ``#<n>``, counted), ``content = [{"turn": t, "speaker": role, "text"}]`` (never
  ``has_answer``), ``meta = {"turns", "date_time", "speakers"}``; ``t`` is the 1-based position,
  as upstream's turn ids (``<session_id>_<i_turn + 1>``).
* observed_at: ``haystack_dates[i]`` as ``"%Y/%m/%d (%a) %H:%M"`` or ``"%Y/%m/%d"``, UTC;
  unparseable: a neighbour's +/- 1 minute, else the synthetic epoch (counted).
* records: ``longmemeval:<question_id>``, ``origin.item = <question_id>``; gold the
  ``has_answer`` turns of the ``answer_session_ids`` sessions (other cases counted, no gold);
  ``judgments.session`` every listed answer session as ``{"turn_start": 1, "turn_end": n}``.
  An answerable question with no gold turn is not covered (its sessions stay items); a
  malformed instance is not covered and makes no items.
* ``_abs``: unanswerable, no answer or gold, ``answer_session_ids`` to ``origin.distractor``,
  the upstream answer to ``origin.notes``; others answer verbatim (``"int"`` / ``"str"``).
  ``origin.notes`` also keeps ``question_type`` and the raw ``question_date``.
* origin.revision: the chosen file's ``commit`` in ``PROVENANCE.jsonl``, else ``"unknown"``
  (noted; :func:`base.annotation_revision`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timezone
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
    open_upstream,
    read_json,
)
from .locomo import fill_times

KEY = "longmemeval"
SPEC = BY_KEY[KEY]
FOLDER = SPEC.folder
FILES = ("longmemeval_s.json", "longmemeval_m.json", "longmemeval_oracle.json")
DATASET = "xiaowu0162/LongMemEval"
_FORMATS = ("%Y/%m/%d (%a) %H:%M", "%Y/%m/%d %H:%M", "%Y/%m/%d")
_LIST_KEYS = ("haystack_session_ids", "haystack_dates", "haystack_sessions")


def parse_date(raw: Any) -> datetime | None:
    """``"2023/05/20 (Sat) 02:21"`` -> aware UTC datetime; ``None`` when it does not parse."""
    if not isinstance(raw, str):
        return None
    s = re.sub(r"\s+", " ", raw).strip()
    for fmt in _FORMATS:
        try:
            return datetime.strptime(s, fmt).replace(tzinfo=timezone.utc)
        except ValueError:
            continue
    return None


def load(corpus_root: Path) -> AdapterResult:
    """Read one release file of ``<corpus_root>/longmemeval``, map it to items and records,
    account for every instance."""
    up = open_upstream(corpus_root, SPEC, folder="LongMemEval folder")
    rows = _read(up)
    cov = Coverage(source=KEY)
    revision = up.revision(rows.name, cov)
    made = _map(rows, revision)
    _account(cov, rows, made)
    return made.result(cov)


@dataclass
class _Rows:
    name: str  # the release file read (the first of FILES present)
    ignored: list[str]  # the other release files present (same questions)
    data: Any  # its JSON, as upstream


def _read(up: Upstream) -> _Rows:
    """The first of FILES present, parsed. Raises InputError when none is present or the file is
    not JSON (naming the line)."""
    present = [f for f in FILES if (up.folder / f).is_file()]
    if not present:
        raise InputError(
            up.folder / FILES[0],
            None,
            None,
            f"none of {', '.join(FILES)} is present",
            rule="MISSING_FILE",
        )
    path = up.folder / present[0]
    data = read_json(path)
    return _Rows(present[0], present[1:], data)


def _map(rows: _Rows, revision: str) -> Mapped:
    """One outcome per instance; the haystack sessions of every well-formed instance as items
    of its holder (also when the instance is not covered)."""
    made = Mapped()
    seen_qids: set[str] = set()
    for inst in rows.data if isinstance(rows.data, list) else []:
        made.outcomes.append(_checked(inst, seen_qids, revision, made))
    made.texts = dict(sorted(made.texts.items()))
    return made


def _checked(inst: Any, seen_qids: set[str], revision: str, made: Mapped) -> RecordDraft | str:
    """Why a malformed instance is not covered (it emits no items), else :func:`_instance`."""
    if (
        not isinstance(inst, dict)
        or not isinstance(inst.get("question_id"), str)
        or not inst["question_id"]
    ):
        return "instance without question_id"
    qid = inst["question_id"]
    if qid in seen_qids:
        return "duplicate question_id"
    seen_qids.add(qid)
    lists = [inst.get(k) for k in _LIST_KEYS]
    if not all(isinstance(x, list) for x in lists) or len({len(x) for x in lists}) != 1:
        return "haystack lists missing or of different lengths"
    question = inst.get("question")
    if not isinstance(question, str) or not question.strip():
        return "empty question"
    return _instance(inst, qid, question, revision, made)


def _account(cov: Coverage, rows: _Rows, made: Mapped) -> None:
    """Coverage: every instance's outcome and the repairs (:func:`base.book`), then the notes,
    the file read first. Writes only ``cov``."""
    book(cov, made)
    cov.notes.insert(
        0,
        f"read {rows.name}"
        + (f"; ignored {', '.join(rows.ignored)} (same questions)" if rows.ignored else ""),
    )
    cov.notes.append(
        "turns are 1-based list positions per session (upstream turn ids "
        "<session_id>_<i+1>); haystack_dates have no zone upstream: read as UTC"
    )
    if not isinstance(rows.data, list):
        cov.notes.append(f"{rows.name} is not a JSON list: nothing read")


def _instance(
    inst: dict, qid: str, question: str, revision: str, made: Mapped
) -> RecordDraft | str:
    """The items (and texts) of one instance's haystack, added to ``made``, and its record, or
    why it is not covered; repairs are counted in ``made``."""
    holder = f"{KEY}/{qid}"
    answer_ids = [str(x) for x in (inst.get("answer_session_ids") or [])]
    answer_set = set(answer_ids)
    abstain = qid.endswith("_abs")

    copies: dict[str, int] = {}
    gold: list[Gold] = []
    sessions: list[Gold] = []  # judgments.session: every answer session of the haystack
    found_answer_sessions: set[str] = set()
    parsed = [parse_date(x) for x in inst["haystack_dates"]]
    if None in parsed:
        made.fix("haystack date unparseable (neighbouring session +/- 1 min)", parsed.count(None))
    times = fill_times(parsed)
    for raw_sid, raw_date, when, session in zip(
        inst["haystack_session_ids"], inst["haystack_dates"], times, inst["haystack_sessions"]
    ):
        sid = str(raw_sid)
        copies[sid] = copies.get(sid, 0) + 1
        item_sid = sid if copies[sid] == 1 else f"{sid}#{copies[sid]}"
        if copies[sid] > 1:
            made.fix("session id repeated in one haystack (later copy suffixed #n)")
        source_id = f"{KEY}:{qid}:{item_sid}"
        turns, evidence, speakers = [], [], []
        for t, turn in enumerate(session if isinstance(session, list) else [], start=1):
            turn = turn if isinstance(turn, dict) else {}
            role, text = turn.get("role"), turn.get("content")
            turns.append({"turn": t, "speaker": role, "text": text})
            if role not in speakers:
                speakers.append(role)
            if turn.get("has_answer") is True:
                evidence.append(t)
        if not isinstance(session, list):
            made.fix("haystack session is not a list (empty item)")
        made.items.append(
            SourceItem(
                source_id=source_id,
                modality="conversation",
                holder=holder,
                observed_at=when,
                content=turns,
                meta={"turns": len(turns), "date_time": raw_date, "speakers": speakers},
            )
        )
        made.texts[source_id] = "\n".join(f"{x['speaker']}: {x['text']}" for x in turns)
        if sid in answer_set:
            found_answer_sessions.add(sid)
            if not abstain:
                if not evidence:
                    made.fix("answer session without a has_answer turn (no gold from it)")
                gold.extend(Gold(source_id=source_id, region={"turn": t}) for t in evidence)
                if turns:
                    sessions.append(
                        Gold(source_id=source_id, region={"turn_start": 1, "turn_end": len(turns)})
                    )
                else:
                    made.fix("answer session without turns (no session judgment from it)")
        elif evidence and not abstain:
            made.fix("has_answer turn outside answer_session_ids (ignored)", len(evidence))

    missing = [s for s in answer_ids if s not in found_answer_sessions]
    if missing and not abstain:
        made.fix("answer_session_id not in the haystack", len(missing))

    qtype = inst.get("question_type")
    notes = f"question_type: {qtype}; question_date: {inst.get('question_date')}"
    scope = Scope(holder=holder, session=None, scenario=SPEC.scenario)
    if abstain:
        return RecordDraft(
            query_id=f"{KEY}:{qid}",
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
                item=qid,
                license=SPEC.license,
                distractor=answer_ids or None,
                notes=notes + f"; abstention answer: {inst.get('answer')!r}",
            ),
        )
    answer = inst.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        return "answerable without an answer"
    if not gold:
        return "answerable, no has_answer turn in its answer sessions"
    return RecordDraft(
        query_id=f"{KEY}:{qid}",
        modality="conversation",
        question=question,
        answer=answer,
        answer_format=json_answer_format(answer) or "str",
        gold=gold,
        judgments={"session": sessions},
        scope=scope,
        unanswerable=False,
        origin=Origin(
            dataset=DATASET, revision=revision, item=qid, license=SPEC.license, notes=notes
        ),
    )
