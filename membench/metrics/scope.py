"""Scope safety: temporal and holder correctness (SPEC section 7).

* temporal correctness of an item: none of the atoms it returned (every hit, at any depth,
  and every cartridge atom) was observed after the item's ``as_of``; an atom observed exactly
  at ``as_of`` is fine (``observed_at <= as_of``, the rule the sets obey too).
* holder correctness of an item: none of those atoms belongs to a holder other than the
  item's ``scope.holder``.

An atom's holder and observed_at are its *source item's* (``items.jsonl`` is the truth; an
atom that declares something else is rejected when atoms are read). Both measures are
averaged over *all* items of a slice; an item without a run line returned nothing and is
therefore correct.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .resolve import AtomTable


@dataclass(frozen=True)
class ScopeCheck:
    n_future: int  # returned atoms observed after as_of
    n_foreign: int  # returned atoms of another holder

    @property
    def temporal_ok(self) -> bool:
        return self.n_future == 0

    @property
    def holder_ok(self) -> bool:
        return self.n_foreign == 0


def check_scope(table: AtomTable, returned: np.ndarray, holder: int, as_of_us: int) -> ScopeCheck:
    """Count scope violations among the distinct atom indices ``returned`` (hits and
    cartridge together) for an item scoped to holder index ``holder`` (``-1`` when that holder
    owns no item, so every atom is foreign) at ``as_of_us`` microseconds since the epoch."""
    if len(returned) == 0:
        return ScopeCheck(0, 0)
    return ScopeCheck(
        int(np.count_nonzero(table.observed_us[returned] > as_of_us)),
        int(np.count_nonzero(table.holder[returned] != holder)),
    )
