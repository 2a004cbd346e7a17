"""Per-item answer and context figures: what the scorer reads from the content for a run
(docs/metrics.md, "Past the anchors", defines each and says why).

Start at :func:`item_figures`, which :func:`membench.metrics.score.score_items` calls for every
item when it is given a :class:`ContentTexts` (:meth:`membench.metrics.rundir.RunDir.scores`
gives one whenever the corpus is there). Per item: ``answer_bearing`` (answerable items; each
needle of :func:`membench.metrics.answers.needles` in one of the gold regions' texts, needles
may be in different regions), ``answer@cartridge``, ``answer@10``, ``grounded_answer@10`` (the
top-10 atoms that hit gold: ``hits_gold``) and ``answer@cartridge_1024tok``
(:data:`ANSWER_BUDGET`; 0 for a cartridge past it), NaN outside the answer-bearing items;
``context_tokens``, ``context_tokens_committed``, ``context_area``, ``context_seconds``
(:func:`membench.metrics.context.cartridge_cost`); ``recall@<B>tok`` (answerable items, B in
:data:`membench.metrics.context.BUDGETS`, the prefix :func:`membench.metrics.context.taken`
takes).

Reads texts through :class:`membench.metrics.extent_text.ExtentText` (never what a system
reports), each read and normalised once per scoring; the answer is looked for in the *answer
text*, tokens count the whole text. An item whose content cannot be read without running OCR or
a PDF's text extraction (:meth:`ExtentText.available` false), or whose file is missing, is
*unread*: every record that needs its text gets NaN for every figure and is counted in
:attr:`ContentTexts.unread_records` (``metrics.json["answer_context"]``), never a silent 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from .answers import needles as answer_needles
from .answers import normalise
from .context import AREA, BUDGETS, SECONDS, CostAtom, cartridge_cost, count_tokens, taken

#: per-item arrays of ``ItemScores.values`` the layer fills (beside the means of its measures)
COST_KEYS = ("context_tokens", "context_tokens_committed", "context_area", "context_seconds")
#: the token budget a cartridge must fit for the ranked answer figure (one of the budgets of
#: recall@<B>tok, its tokens counted the same way)
ANSWER_BUDGET = 1024
#: the ranked answer figure: the answer handed over by a cartridge of at most ANSWER_BUDGET
#: tokens
ANSWER_BUDGETED = f"answer@cartridge_{ANSWER_BUDGET}tok"
ANSWER_KEYS = (
    "answer_bearing",
    "answer@cartridge",
    ANSWER_BUDGETED,
    "answer@10",
    "grounded_answer@10",
)
BUDGET_KEYS = tuple(f"recall@{b}tok" for b in BUDGETS)
KEYS = ANSWER_KEYS + BUDGET_KEYS + COST_KEYS
#: the cut of answer@10
ANSWER_AT = 10
assert ANSWER_BUDGET in BUDGETS


#: the content readers :meth:`ContentTexts.open` keeps per process (one per sets folder,
#: corpus, OCR cache and chunking settings: a test session's few, make all's one)
SHARED_READERS = 4
_SHARED: dict[tuple, tuple[Any, tuple[dict, dict]]] = {}


class Unread(Exception):
    """An item's text cannot be read here (no OCR run at scoring time, a missing file)."""


class ContentTexts:
    """The normalised text and the tokens of extents, read once each through
    :class:`~membench.metrics.extent_text.ExtentText` (or any object with ``text(source_id,
    extent)`` and ``available(source_id)``)."""

    def __init__(
        self, extent_text: Any, *, label: str = "", shared: tuple[dict, dict] | None = None
    ) -> None:
        self.et = extent_text
        self.label = label
        # texts read and items found readable: shared by the readers of one sets folder and
        # corpus in this process (:meth:`open`); what could not be read is never shared
        self._text: dict[tuple[str, str], tuple[str, int]]
        self._ok: dict[str, bool]
        self._text, self._readable = shared if shared is not None else ({}, {})
        self._ok = dict(self._readable)
        self._why: dict[str, str] = {}
        self.unread_records = 0

    @classmethod
    def open(cls, sets_dir: str | Path, corpus_root: str | Path) -> ContentTexts:
        """A reader of the content of ``sets_dir``'s items under ``corpus_root``. Within a
        process, readers of the same items file (path, size, mtime), corpus, OCR cache and
        chunking settings share what they read (the last :data:`SHARED_READERS` such keys):
        scoring a run again, or another run on the same sets, reads no text twice."""
        from ..core.paths import cache_dir
        from .extent_text import ExtentText

        items = Path(sets_dir) / "items.jsonl"
        try:
            st = items.stat()
            stamp = (st.st_size, st.st_mtime_ns)
        except OSError:
            stamp = None
        et = ExtentText(sets_dir, corpus_root)
        if stamp is None:
            return cls(et, label=str(corpus_root))
        key = (
            str(items.resolve()),
            stamp,
            str(Path(corpus_root).resolve()),
            str(cache_dir("ocr")),
            repr(et.config),
        )
        hit = _SHARED.pop(key, None)
        if hit is None:
            hit = (et, ({}, {}))
        _SHARED[key] = hit  # most recent last
        while len(_SHARED) > SHARED_READERS:
            _SHARED.pop(next(iter(_SHARED)))
        return cls(hit[0], label=str(corpus_root), shared=hit[1])

    def readable(self, source_id: str) -> bool:
        ok = self._ok.get(source_id)
        if ok is None:
            try:
                ok = bool(self.et.available(source_id))
                if not ok:
                    self._why[source_id] = "not in the content cache (OCR or PDF text layer)"
            except Exception as e:  # a missing or unreadable file  # noqa: BLE001
                ok, self._why[source_id] = False, f"{type(e).__name__}: {e}"
            self._ok[source_id] = ok
            if ok:
                self._readable[source_id] = True
        return ok

    def read(self, source_id: str, extent: dict[str, Any]) -> tuple[str, int]:
        """``(normalised answer text, tokens)`` of an extent: the answer text (``answer_text``
        of the reader, when it has one, else its ``text``) normalised, and the tokens of the
        whole text (:func:`~membench.metrics.context.count_tokens`); :class:`Unread` when the
        item cannot be read."""
        key = (source_id, repr(sorted(extent.items())))
        got = self._text.get(key)
        if got is None:
            if not self.readable(source_id):
                raise Unread(source_id)
            answer_text = getattr(self.et, "answer_text", None)
            try:
                raw = self.et.text(source_id, extent)
                ans = raw if answer_text is None else answer_text(source_id, extent)
            except Exception as e:  # noqa: BLE001
                self._ok[source_id], self._why[source_id] = False, f"{type(e).__name__}: {e}"
                raise Unread(source_id) from None
            got = self._text[key] = (f" {normalise(ans)} ", count_tokens(raw))
        return got

    @property
    def unread_items(self) -> dict[str, str]:
        """The items whose text could not be read, and why."""
        return dict(sorted(self._why.items()))


def _holds(needles: list[str], hays: list[str]) -> bool:
    """Each needle occurs (on token boundaries) in one of the normalised texts ``hays``."""
    return all(any(f" {n} " in h for h in hays) for n in needles)


def item_figures(
    content: ContentTexts,
    *,
    modality: str,
    answer: Any,
    answer_format: str,
    answerable: bool,
    has_run: bool,
    gold: list[tuple[str, dict]],
    first_positions: np.ndarray,
    ranked: Sequence[int],
    cartridge: Sequence[int],
    place: Callable[[int], tuple[str, str, dict]],
    meta_of: Callable[[str], dict],
    grounded: Sequence[bool] | None = None,
) -> dict[str, float]:
    """One item's figures (module docstring), keyed as :data:`KEYS`; NaN outside a figure's
    denominator; every figure NaN when a needed text is unread. ``gold``: (source id, region);
    ``first_positions``: per gold region the 0-based position of its first hitting atom in
    ``ranked`` (-1: none); ``ranked`` and ``cartridge``: atoms in rank order / the distinct
    cartridge atoms in any order, each placed by ``place(atom)`` = (source id, modality,
    extent); ``meta_of(source_id)``: the item's ``meta``; ``grounded``:
    per atom of ``ranked[:ANSWER_AT]``, whether it hits one of the item's gold regions (needed
    for ``grounded_answer@10`` on an answerable item; None: NaN)."""
    out = dict.fromkeys(KEYS, math.nan)
    try:
        cartridge = [place(a) for a in cartridge]
        cart = [content.read(s, e) for s, _, e in cartridge]
        if has_run:
            out["context_tokens"] = float(sum(t for _, t in cart))
            if cart:
                out["context_tokens_committed"] = out["context_tokens"]
            if modality in AREA or modality in SECONDS:
                try:
                    cost = cartridge_cost(
                        [CostAtom(s, m, e, meta=meta_of(s)) for s, m, e in cartridge]
                    )
                except ValueError:  # a screenshot without meta.width / height: no area
                    pass
                else:
                    if modality in AREA:
                        out["context_area"] = cost.area
                    if modality in SECONDS:
                        out["context_seconds"] = cost.seconds
        if not answerable:
            return out
        # the ranked prefix the largest budget can take (no atom past it is read)
        tokens: list[int] = []
        total = 0
        for a in ranked:
            s, _, e = place(a)
            t = content.read(s, e)[1]
            tokens.append(t)
            total += t
            if total > max(BUDGETS):
                break
        for b, k in zip(BUDGETS, BUDGET_KEYS):
            cut = taken(tokens, b)
            out[k] = (
                float(np.mean((first_positions >= 0) & (first_positions < cut)))
                if len(first_positions)
                else math.nan
            )
        ns = answer_needles(answer, answer_format)
        bearing = ns is not None and _holds(ns, [content.read(s, r)[0] for s, r in gold])
        out["answer_bearing"] = float(bearing)
        if bearing:
            hays = [h for h, _ in cart]
            out["answer@cartridge"] = float(_holds(ns, hays))
            fits = sum(t for _, t in cart) <= ANSWER_BUDGET
            out[ANSWER_BUDGETED] = float(fits and _holds(ns, hays))
            top = [content.read(s, e)[0] for s, _, e in map(place, ranked[:ANSWER_AT])]
            out["answer@10"] = float(_holds(ns, top))
            if grounded is not None:
                if len(grounded) != len(top):
                    raise ValueError(
                        f"grounded: {len(grounded)} flags for the {len(top)} "
                        f"atoms ranked <= {ANSWER_AT}"
                    )
                out["grounded_answer@10"] = float(
                    _holds(ns, [h for h, g in zip(top, grounded) if g])
                )
    except Unread:
        content.unread_records += 1
        return dict.fromkeys(KEYS, math.nan)
    return out


def note(content: ContentTexts | None, reason: str = "") -> dict[str, Any]:
    """What ``metrics.json["answer_context"]`` says about the content read: whether it was,
    from where, and the records and items left out because their text could not be read."""
    if content is None:
        return {
            "read": False,
            "reason": reason or "no content reader: the answer and context figures are null",
            "unread_records": None,
            "unread_items": {},
        }
    items = content.unread_items
    return {
        "read": True,
        "corpus": content.label,
        "reason": "",
        "unread_records": int(content.unread_records),
        "unread_items": dict(list(items.items())[:20]),
        "n_unread_items": len(items),
    }


__all__ = [
    "ANSWER_AT",
    "ANSWER_BUDGET",
    "ANSWER_BUDGETED",
    "ANSWER_KEYS",
    "BUDGET_KEYS",
    "COST_KEYS",
    "KEYS",
    "ContentTexts",
    "Unread",
    "item_figures",
    "note",
]
