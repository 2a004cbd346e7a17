"""Sources that are registered and checked against the manifest, whose questions are read and
counted but not yet mapped into the sets: PrefEval, REALTALK and PsTuts-VQA.

Each ``load_*`` opens the source's folder with :func:`base.open_upstream`, reads its annotation
files in their real upstream format (a file that is not in that format is an
:class:`InputError` naming it) and books every upstream question as *not covered*, with the
reason :data:`PENDING`, so coverage.json and the reports count them and nothing is dropped
silently. It returns no items and no drafts: the sets do not change until a source's mapping
(holders, observed_at, gold regions) lands in its own module and the registry names it.
PrefEval's is written (:mod:`membench.sources.prefeval`) and not yet named.

Upstream formats (read first: each folder's ``LICENSE-NOTES.md``):

* ``prefeval/``: ``explicit_preference/<topic>.json``, ``implicit_preference/choice-based/
  <topic>.json`` and ``implicit_preference/persona-driven/<topic>.json``, each a JSON list of
  ``{preference, question, explanation, ...}`` (one question per preference and form);
  ``mcq_options/<topic>.json`` holds four options per question. ``mcq_options/travel_hotel
  copy.json`` (a near-copy of ``travel_hotel.json``, as upstream ships it) is never read.
* ``realtalk/Chat_<n>_<a>_<b>.json``: LoCoMo's format, ``qa`` a list of ``{question, answer,
  evidence, category}``.
* ``pstuts-vqa/{train,dev,test}.json``: JSON lists of videos ``{video_id, title, transcripts,
  qa}``, ``qa`` a list of ``{sent_id, q, a}``.
"""

from __future__ import annotations

from pathlib import Path

from ..core.errors import InputError
from . import BY_KEY
from .base import AdapterResult, Coverage, open_upstream, read_json

PENDING = "registered; not yet mapped into the sets"

PREFEVAL_FORMS = ("explicit_preference", "implicit_preference/choice-based",
                  "implicit_preference/persona-driven")
PSTUTS_SPLITS = ("train.json", "dev.json", "test.json")


def _questions(path: Path, rows: list, key: str, where: str = "") -> int:
    """How many rows of ``rows`` (read from ``path`` at ``where``) carry a ``key`` string; a row
    that is not an object with one is an InputError naming the file and the row."""
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or not isinstance(row.get(key), str):
            raise InputError(path, None, f"{where}[{i}].{key}", "missing or not a string")
    return len(rows)


def _pending(key: str, n: int, notes: list[str]) -> AdapterResult:
    cov = Coverage(source=key)
    cov.upstream_items = n
    if n:
        cov.miss(PENDING, n)
    cov.notes.extend(notes)
    return AdapterResult(items=[], drafts=[], coverage=cov)


def load_prefeval(corpus_root: Path) -> AdapterResult:
    """Count PrefEval's questions in its three forms (see the module docstring)."""
    up = open_upstream(corpus_root, BY_KEY["prefeval"], folder="the PrefEval folder",
                       provenance=True)
    n = 0
    for form in PREFEVAL_FORMS:
        d = up.folder / form
        if not d.is_dir():
            raise InputError(d, None, None, "PrefEval form folder is missing",
                             rule="MISSING_FILE")
        for p in sorted(d.glob("*.json")):
            n += _questions(p, read_json(p, list, "a JSON list of preferences"), "question")
    return _pending("prefeval", n, [
        "mcq_options/travel_hotel copy.json (a near-copy of travel_hotel.json) is not read"])


def load_realtalk(corpus_root: Path) -> AdapterResult:
    """Count REALTALK's questions over its conversations (see the module docstring)."""
    up = open_upstream(corpus_root, BY_KEY["realtalk"], folder="the REALTALK folder",
                       provenance=True)
    n = 0
    for p in sorted(up.folder.glob("Chat_*.json")):
        conv = read_json(p, dict, "a LoCoMo-format conversation object")
        qa = conv.get("qa")
        if not isinstance(qa, list):
            raise InputError(p, None, "qa", "missing or not a list")
        n += _questions(p, qa, "question", "qa")
    return _pending("realtalk", n, [])


def load_pstuts(corpus_root: Path) -> AdapterResult:
    """Count PsTuts-VQA's questions over its three upstream splits (module docstring)."""
    up = open_upstream(corpus_root, BY_KEY["pstuts"], provenance=True, files={
        name: "PsTuts-VQA split file" for name in PSTUTS_SPLITS})
    n = 0
    for name in PSTUTS_SPLITS:
        p = up.folder / name
        for i, video in enumerate(read_json(p, list, "a JSON list of videos")):
            qas = video.get("qa") if isinstance(video, dict) else None
            if not isinstance(qas, list):
                raise InputError(p, None, f"[{i}].qa", "missing or not a list")
            n += _questions(p, qas, "q", f"[{i}].qa")
    return _pending("pstuts", n, ["the videos are not mirrored (URLs only): read through "
                                  "their transcript cues once mapped"])
