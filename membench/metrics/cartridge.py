"""Cartridge measures (SPEC section 7): false recall, abstention, cartridge recall.

The cartridge is the set of atoms a system commits to hand to an answerer; empty means
"I abstain". An item without a run line has an empty cartridge.

* ``false_recall_rate``: over *audited unanswerable* items, the share whose cartridge is
  non-empty; ``false_recall_native`` the same over the natives with an upstream tell
  (:func:`membench.contract.tells.audited` false), in their own column (SPEC section 5).
* ``abstain_rate_answerable``: over *answerable* items, the share whose cartridge is empty.
* ``abstain_rate_gated``: ``abstain_rate_answerable`` over the answerable items of the
  modalities that have an audited unanswerable item (:func:`silence_values`): what the
  false-recall gate's silence check reads (code has no unanswerable item, so over all items
  its answerable ones do not dilute the abstention a false recall was bought with).
* ``cartridge_recall``: over answerable items, the share of the item's gold regions hit by
  any cartridge atom (unranked; same resolution as recall@k).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .resolve import AtomTable, GoldRef


def false_recall(cartridge_size: int) -> float:
    """1.0 when an unanswerable item's cartridge is non-empty (a false recall), else 0.0."""
    return 1.0 if cartridge_size > 0 else 0.0


def abstained(cartridge_size: int) -> float:
    """1.0 when an answerable item's cartridge is empty, else 0.0."""
    return 1.0 if cartridge_size == 0 else 0.0


def cartridge_recall(table: AtomTable, gold: Sequence[GoldRef], cartridge: np.ndarray) -> float:
    """Share of ``gold`` regions hit by any atom of ``cartridge`` (NaN when gold is empty)."""
    if not gold:
        return float("nan")
    return float(np.count_nonzero(table.first_positions(gold, cartridge) >= 0)) / len(gold)


def silence_values(
    abstain: np.ndarray, modality: Sequence[str], audited_unanswerable: np.ndarray
) -> np.ndarray:
    """Per item, ``abstain`` (the answerable abstention, NaN off the answerable items) where
    the item's modality has an audited unanswerable item among these items, else NaN."""
    mods = np.asarray(modality, dtype=object)
    gated = np.isin(mods, list(set(mods[np.asarray(audited_unanswerable, dtype=bool)])))
    return np.where(gated, abstain, np.nan)
