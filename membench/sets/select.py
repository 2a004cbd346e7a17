"""Which records a run is about: a split, some modalities, an optional ``--limit`` subset.

One rule, used by the runner (what it asks) and by every reader of a run directory (what is
scored), so the two always agree:

* the records of ``split`` from ``SETS/<modality>.jsonl``, for each selected modality (all
  registered modalities by default), in file order; a missing set file of a selected modality
  is an error (``MISSING_FILE``), never an empty modality;
* with ``limit``: the ``limit`` records of each modality that come first in
  ``stable_hash("limit", query_id)`` order (:func:`membench.core.hashing.limit_subset`), kept
  in file order; a hash-chosen subset mixes answerable and unanswerable items and is stable.
  With ``sample_seed`` as well, the order is ``stable_hash("limit", str(sample_seed),
  query_id)``: another sample of the same size (``membench verify`` draws one a submitter
  cannot know in advance).

The order in which a run *presents* the selected queries to a system is
:func:`presentation_order`: a seeded shuffle of the whole selection (modalities interleaved),
the same for every subset, so a ``--limit`` or ``--modality`` run keeps the full run's relative
order and nothing about a query can be read from its neighbours (SPEC section 6).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from ..contract.schema import AnnotationRecord
from ..core.errors import MembenchError
from ..core.hashing import hash_order, limit_subset
from ..core.jsonl import iter_json_lines, parse_model
from ..modalities import MODALITIES

Loc = tuple[str, int]

#: the seed of the presentation order of ``membench run`` (recorded in meta.json)
ORDER_SEED = 0
ORDER_RULE = "query ids ascending by sha256('order:<seed>', query_id) (membench.sets.select)"


def presentation_order(query_ids: Iterable[str], seed: int = ORDER_SEED) -> list[str]:
    """The query ids in the order a run presents them: ``stable_hash("order:<seed>", id)``
    ascending, a shuffle that depends only on the seed and each id (so any subset keeps the
    relative order of the whole)."""
    return hash_order(query_ids, f"order:{seed}")


def check_modalities(modalities: Iterable[str] | None) -> list[str]:
    """The selected modalities in registry order (all when ``None``); an unknown name is an
    error naming the choices."""
    if not modalities:
        return list(MODALITIES)
    chosen = list(dict.fromkeys(modalities))
    for m in chosen:
        if m not in MODALITIES:
            raise MembenchError(f"unknown modality {m!r}; choose from {', '.join(MODALITIES)}")
    return [m for m in MODALITIES if m in chosen]


def select_records(
    sets_dir: str | Path,
    split: str,
    modalities: Iterable[str] | None = None,
    limit: int | None = None,
    sample_seed: int | None = None,
) -> tuple[list[AnnotationRecord], list[Loc]]:
    """Records of ``split`` (and their file and line), modality by modality, in file order
    (see the module docstring for the rule)."""
    sets_dir = Path(sets_dir)
    recs: list[AnnotationRecord] = []
    locs: list[Loc] = []
    for m in check_modalities(modalities):
        path = sets_dir / f"{m}.jsonl"
        chosen = []
        for no, obj in iter_json_lines(path):
            r = parse_model(AnnotationRecord, obj, path, no)
            if r.split == split:
                chosen.append((r, (str(path), no)))
        if limit is not None:
            chosen = sorted(
                limit_subset(chosen, limit, lambda x: x[0].query_id, sample_seed),
                key=lambda x: x[1][1],
            )
        for r, loc in chosen:
            recs.append(r)
            locs.append(loc)
    return recs, locs
