"""Cartridge measures (SPEC section 7): false recall, abstention, cartridge recall.

The cartridge is the set of atoms a system commits to hand to an answerer; empty means
"I abstain". An item without a run line has an empty cartridge.

* ``false_recall_rate``: over *audited unanswerable* items, the share whose cartridge is
  non-empty; ``false_recall_native`` the same over the natives with an upstream tell
  (:func:`membench.contract.tells.audited` false), in their own column (SPEC section 5).
* ``abstain_rate_answerable``: over *answerable* items, the share whose cartridge is empty.
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
