"""LongMemEval (xiaowu0162/LongMemEval, Wu et al., ICLR 2025): chat-assistant memory.

Not in this project's corpus mirror: the adapter reads the real upstream release format and is
tested on a fixture (``tests/fixtures/longmemeval/``).

Upstream format (README "Dataset Format" and ``src/retrieval/run_retrieval.py``):
``longmemeval_s.json``, ``longmemeval_m.json`` and ``longmemeval_oracle.json`` are each a JSON
list of 500 instances ``{question_id, question_type, question, answer, question_date,
haystack_session_ids[], haystack_dates[], haystack_sessions[[{role, content, has_answer?}]],
answer_session_ids[]}``. Dates look like ``"2023/05/20 (Sat) 02:21"`` (strftime
``"%Y/%m/%d (%a) %H:%M"`` in upstream's history compiler). A ``question_id`` ending in ``_abs``
is an abstention (unanswerable) question. ``has_answer: true`` marks the evidence turns.

The three files hold the same 500 questions over different haystacks, so exactly one is read:
``longmemeval_s.json`` if present, else ``_m``, else ``_oracle`` (the others are named in
``coverage.notes``).

Mapping:

* holder: one per instance, ``longmemeval/<question_id>`` (each question has its own chat
  history); ``scope.session`` is ``None``.
* source item: one per haystack session, ``longmemeval:<question_id>:<session_id>``, inline
  ``content = [{"turn": t, "speaker": role, "text": content}]`` (``has_answer`` is never copied
  into content), ``meta = {"turns": n, "date_time": <raw>, "speakers": [roles in order of
  appearance]}``. A session id repeated inside one haystack gets ``#<n>`` (n = 2, 3, ...) on its
  later copies (counted).
* **turn numbering**: 1-based list position inside the session, the same numbering upstream's
  turn-level retrieval ids use (``<session_id>_<i_turn + 1>``).
* observed_at: ``haystack_dates[i]`` parsed as ``"%Y/%m/%d (%a) %H:%M"`` (or a bare
  ``"%Y/%m/%d"``); upstream has no zone: read as **UTC**. Unparseable -> previous session + 1
  minute (next session - 1 minute for a first one; synthetic epoch if none parses), counted.
* records: one per instance, ``query_id = longmemeval:<question_id>``, ``origin.item =
  <question_id>``. Gold = the turns with ``has_answer: true`` inside the sessions listed in
  ``answer_session_ids`` (an answer session without such a turn, a listed id missing from the
  haystack, and ``has_answer`` turns outside answer sessions are counted and contribute no
  gold). An answerable question with no gold turn is not covered (its sessions are still
  emitted as items of its holder); a malformed instance (haystack lists missing or of different
  lengths, duplicate or missing question_id) is not covered and emits no items.
* ``_abs`` -> ``unanswerable``, answer ``None``, ``answer_format "none"``, no gold; upstream
  ``answer_session_ids`` go to ``origin.distractor``, the upstream answer (the abstention
  explanation) to ``origin.notes``. Others: answer verbatim (``int`` -> ``"int"``, strings ->
  ``"str"``). ``origin.notes`` carries ``question_type`` and the raw ``question_date`` (the
  build sets ``as_of``; upstream's own question time is kept here for reference).
* origin.revision: the ``commit`` of the chosen file in ``<root>/longmemeval/PROVENANCE.jsonl``
  when present, else ``"unknown"`` (noted).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...core.errors import InputError
from ..schema import Gold, Origin, RecordDraft, Scope, SourceItem
from . import BY_KEY
from .base import AdapterResult, Coverage, json_answer_format, provenance_commits
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
    folder = Path(corpus_root) / FOLDER
    if not folder.is_dir():
        raise InputError(folder, None, None, "LongMemEval folder is missing", rule="MISSING_FILE")
    present = [f for f in FILES if (folder / f).is_file()]
    if not present:
        raise InputError(folder / FILES[0], None, None,
                         f"none of {', '.join(FILES)} is present", rule="MISSING_FILE")
    name = present[0]
    data = json.loads((folder / name).read_text(encoding="utf-8"))
    cov = Coverage(source=KEY)
    cov.notes.append(f"read {name}" + (f"; ignored {', '.join(present[1:])} (same questions)"
                                       if present[1:] else ""))
    revision = provenance_commits(folder).get(name)
    if revision is None:
        cov.notes.append(f"no PROVENANCE.jsonl commit for {name}: origin.revision = 'unknown'")
        revision = "unknown"
    cov.notes.append("turns are 1-based list positions per session (upstream turn ids "
                     "<session_id>_<i+1>); haystack_dates have no zone upstream: read as UTC")

    items: list[SourceItem] = []
    drafts: list[RecordDraft] = []
    texts: dict[str, str] = {}
    instances = data if isinstance(data, list) else []
    if not isinstance(data, list):
        cov.notes.append(f"{name} is not a JSON list: nothing read")

    seen_qids: set[str] = set()
    for inst in instances:
        cov.upstream_items += 1
        if not isinstance(inst, dict) or not isinstance(inst.get("question_id"), str) \
                or not inst["question_id"]:
            cov.miss("instance without question_id")
            continue
        qid = inst["question_id"]
        if qid in seen_qids:
            cov.miss("duplicate question_id")
            continue
        seen_qids.add(qid)
        lists = [inst.get(k) for k in _LIST_KEYS]
        if not all(isinstance(x, list) for x in lists) or len({len(x) for x in lists}) != 1:
            cov.miss("haystack lists missing or of different lengths")
            continue
        question = inst.get("question")
        if not isinstance(question, str) or not question.strip():
            cov.miss("empty question")
            continue
        draft = _instance(inst, qid, question, revision, cov, items, texts)
        if draft is not None:
            drafts.append(draft)
            cov.covered += 1

    items.sort(key=lambda i: i.source_id)
    drafts.sort(key=lambda d: d.query_id)
    return AdapterResult(items=items, drafts=drafts, coverage=cov, texts=dict(sorted(texts.items())))


def _instance(inst: dict, qid: str, question: str, revision: str, cov: Coverage,
              items: list[SourceItem], texts: dict[str, str]) -> RecordDraft | None:
    holder = f"{KEY}/{qid}"
    answer_ids = [str(x) for x in (inst.get("answer_session_ids") or [])]
    answer_set = set(answer_ids)
    abstain = qid.endswith("_abs")

    copies: dict[str, int] = {}
    gold: list[Gold] = []
    found_answer_sessions: set[str] = set()
    parsed = [parse_date(x) for x in inst["haystack_dates"]]
    if None in parsed:
        cov.fix("haystack date unparseable (neighbouring session +/- 1 min)", parsed.count(None))
    times = fill_times(parsed)
    for raw_sid, raw_date, when, session in zip(inst["haystack_session_ids"], inst["haystack_dates"],
                                                times, inst["haystack_sessions"]):
        sid = str(raw_sid)
        copies[sid] = copies.get(sid, 0) + 1
        item_sid = sid if copies[sid] == 1 else f"{sid}#{copies[sid]}"
        if copies[sid] > 1:
            cov.fix("session id repeated in one haystack (later copy suffixed #n)")
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
            cov.fix("haystack session is not a list (empty item)")
        items.append(SourceItem(
            source_id=source_id, modality="conversation", holder=holder, observed_at=when,
            content=turns, meta={"turns": len(turns), "date_time": raw_date, "speakers": speakers}))
        texts[source_id] = "\n".join(f"{x['speaker']}: {x['text']}" for x in turns)
        if sid in answer_set:
            found_answer_sessions.add(sid)
            if not abstain:
                if not evidence:
                    cov.fix("answer session without a has_answer turn (no gold from it)")
                gold.extend(Gold(source_id=source_id, region={"turn": t}) for t in evidence)
        elif evidence and not abstain:
            cov.fix("has_answer turn outside answer_session_ids (ignored)", len(evidence))

    missing = [s for s in answer_ids if s not in found_answer_sessions]
    if missing and not abstain:
        cov.fix("answer_session_id not in the haystack", len(missing))

    qtype = inst.get("question_type")
    notes = f"question_type: {qtype}; question_date: {inst.get('question_date')}"
    scope = Scope(holder=holder, session=None, scenario=SPEC.scenario)
    if abstain:
        return RecordDraft(
            query_id=f"{KEY}:{qid}", modality="conversation", question=question, answer=None,
            answer_format="none", gold=[], scope=scope, unanswerable=True,
            origin=Origin(dataset=DATASET, revision=revision, item=qid, license=SPEC.license,
                          distractor=answer_ids or None,
                          notes=notes + f"; abstention answer: {inst.get('answer')!r}"))
    answer = inst.get("answer")
    if answer is None or (isinstance(answer, str) and not answer.strip()):
        cov.miss("answerable without an answer")
        return None
    if not gold:
        cov.miss("answerable, no has_answer turn in its answer sessions")
        return None
    return RecordDraft(
        query_id=f"{KEY}:{qid}", modality="conversation", question=question, answer=answer,
        answer_format=json_answer_format(answer) or "str", gold=gold, scope=scope, unanswerable=False,
        origin=Origin(dataset=DATASET, revision=revision, item=qid, license=SPEC.license,
                      notes=notes))
