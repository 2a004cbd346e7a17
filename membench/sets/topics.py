"""Topics: what a system is asked, written down for systems that are not Python.

``membench topics --split dev --out FILE`` (and ``membench export``) write one JSON line per
query, in presentation order (:func:`membench.sets.select.presentation_order`)::

    {"qid": "t3f9c0e1a2b4d5c6e", "question": "...", "scope": {"holder": ..., "session": ...,
     "scenario": ...}, "as_of": "2024-01-03T05:17:42+00:00"}

No gold, no answer, no answerability, no origin. The ``qid`` is opaque (:func:`topic_id`): the
sets' own query ids would give derived unanswerables away (a ``~temporal`` suffix, or a
transactive query's id naming another holder's document). A TREC run written against these
topics uses the same qids; ``membench import-run`` maps them back (it also accepts the sets'
query ids).

:class:`Topic` is one such line as an object: all that ``membench run`` holds of a query in
the process that runs a system (the records themselves stay in the run's keeper process,
:mod:`membench.run.keeper`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path

from pydantic import Field

from ..contract.schema import AnnotationRecord, Scope, Strict, Timestamp
from ..core.jsonl import write_jsonl
from .select import presentation_order, select_records


def topic_id(query_id: str) -> str:
    """The opaque id of a query in topics and exported TREC files: ``"t"`` and the first 16
    hex digits of ``sha256("topic\\x1f" + query_id)``."""
    return "t" + hashlib.sha256(f"topic\x1f{query_id}".encode()).hexdigest()[:16]


def topic(r: AnnotationRecord) -> dict:
    """One topic line: opaque qid, question, scope and as_of of a record."""
    d = r.model_dump(mode="json", include={"scope", "as_of"})  # as the sets write them
    return {
        "qid": topic_id(r.query_id),
        "question": r.question,
        "scope": d["scope"],
        "as_of": d["as_of"],
    }


class Topic(Strict):
    """A query as a system is asked it: opaque ``qid`` (:func:`topic_id`), ``question``,
    ``scope``, ``as_of``; parsed from a :func:`topic` line, its scope and as_of equal the
    record's (the same pydantic types)."""

    qid: str = Field(pattern=r"^t[0-9a-f]{16}$")
    question: str
    scope: Scope
    as_of: Timestamp


def ordered(records: Iterable[AnnotationRecord]) -> list[AnnotationRecord]:
    """``records`` in presentation order."""
    by = {r.query_id: r for r in records}
    return [by[q] for q in presentation_order(by)]


def topics(
    sets_dir: str | Path,
    split: str,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
) -> list[dict]:
    """The topics of a split (and modalities, ``limit`` per modality), in presentation order:
    the queries ``membench run`` would ask, as it would ask them."""
    recs, _ = select_records(sets_dir, split, modalities, limit)
    return [topic(r) for r in ordered(recs)]


def write_topics(path: str | Path, rows: list[dict]) -> int:
    """Write topic lines (one JSON object each); returns how many."""
    return write_jsonl(path, rows)
