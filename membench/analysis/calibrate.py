"""``membench calibrate RUN_DIR``: per-modality cartridge thresholds from a dev run, fitted on
one half of dev and reported on the other.

Per modality it counts the run's answerable queries and its audited unanswerable ones
(:func:`membench.contract.tells.audited`; the others are counted in ``unaudited_left_out``),
splits the modality's holders into a fit half and a held-out half by
``hash_order(holders, "calibrate")`` (:func:`split_halves`; by query instead, and said so in
``split.by`` and ``split.why``, where holders cannot give each half both kinds), picks the
threshold on the fit half (:func:`membench.analysis.operating_point.choose_threshold`) and
applies it to the held-out half.

Reads the run directory and its sets (dev split only); writes
``bench/calibration/<system>.json``, which the reference systems read
(:func:`membench.systems.reference.read_calibration`). Per modality the file keeps the earlier
keys (``threshold``, ``answerable_kept``, ``unanswerable_kept``, ``within_gate``,
``n_answerable``, ``n_unanswerable``: the fit half's) and adds ``split``, ``fit``, ``held_out``
and ``unaudited_left_out``; a modality with no operating point is listed under
``not_calibrated`` with its reason. docs/results.md ("Operating points") says why the halves
are by holder and which figures are honest.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from typing import Any

from ..contract.tells import audited
from ..core.errors import MembenchError
from ..core.hashing import hash_order
from ..metrics.measures import MAX_FALSE_RECALL
from ..metrics.rundir import RunDir
from .operating_point import choose_threshold

#: the salt of the fit / held-out split (:func:`split_halves`)
SALT = "calibrate"

RULE = (
    "per modality: fitted on the fit half, the top-1 score threshold maximising (answerable "
    "kept - audited unanswerable kept) with audited unanswerable kept <= max_false_recall "
    "where achievable; ties -> higher threshold; the same threshold then measured on the "
    "held-out half"
)
SPLIT_RULE = (
    "per modality, the holders of the answerable and audited unanswerable dev queries "
    "in membench.core.hashing.hash_order(holders, 'calibrate') order (sha256 of "
    "'calibrate' + '\\x1f' + holder); the first half, rounded up, fits the threshold, "
    "the rest is held out. Where that leaves a half without an answerable or an "
    "audited unanswerable query (fewer than 2 holders, say), the answerable and the "
    "audited unanswerable query ids are each split that way instead (split.by = "
    "'query', split.why says why)"
)
UNANSWERABLES = (
    "audited only (origin.audited, membench.contract.tells.audited): upstream natives "
    "with a tell of their own are neither fitted on nor reported "
    "(unaudited_left_out counts them)"
)


def _first_half(keys: Iterable[str]) -> tuple[list[str], list[str]]:
    order = hash_order(keys, SALT)
    k = (len(order) + 1) // 2
    return order[:k], order[k:]


def split_halves(records: Sequence[Any]) -> dict[str, Any]:
    """The fit / held-out split of one modality's calibration records (answerable and audited
    unanswerable; each with ``query_id``, ``scope.holder`` and ``unanswerable``), by the rule
    of the module docstring: ``{"by": "holder" | "query", "why": str | None, "fit": [query
    ids], "held_out": [query ids], "fit_holders": [...], "held_out_holders": [...]}``, holders
    in hash order (by holder) or sorted (by query). Deterministic: the same records, in any
    order, give the same halves."""
    holders = hash_order({r.scope.holder for r in records}, SALT)
    fit_h, held_h = _first_half(holders)

    def kinds(hs: set[str]) -> tuple[bool, bool]:
        rs = [r for r in records if r.scope.holder in hs]
        return any(not r.unanswerable for r in rs), any(r.unanswerable for r in rs)

    why = None
    if len(holders) < 2:
        why = f"{len(holders)} dev holder{'' if len(holders) == 1 else 's'}"
    else:
        for name, hs in (("fit", fit_h), ("held-out", held_h)):
            has_pos, has_neg = kinds(set(hs))
            if not (has_pos and has_neg):
                lacks = "an answerable" if not has_pos else "an audited unanswerable"
                why = (
                    f"the holder split ({len(holders)} holders) leaves the {name} half "
                    f"without {lacks} query"
                )
                break
    if why is None:
        fs = set(fit_h)
        return {
            "by": "holder",
            "why": None,
            "fit": sorted(r.query_id for r in records if r.scope.holder in fs),
            "held_out": sorted(r.query_id for r in records if r.scope.holder not in fs),
            "fit_holders": fit_h,
            "held_out_holders": held_h,
        }
    fit: list[str] = []
    held: list[str] = []
    for unans in (False, True):
        f, h = _first_half(r.query_id for r in records if r.unanswerable == unans)
        fit += f
        held += h
    holder_of = {r.query_id: r.scope.holder for r in records}
    return {
        "by": "query",
        "why": why,
        "fit": sorted(fit),
        "held_out": sorted(held),
        "fit_holders": sorted({holder_of[q] for q in fit}),
        "held_out_holders": sorted({holder_of[q] for q in held}),
    }


def _kept(scores: list[float | None], t: float) -> float | None:
    if not scores:
        return None
    return round(sum(s is not None and s >= t for s in scores) / len(scores), 6)


def calibrate_modality(
    records: Sequence[Any],
    top1: dict[str, float | None],
    max_false_recall: float = MAX_FALSE_RECALL,
) -> dict[str, Any] | str:
    """One modality's entry of the calibration file (module docstring), or the reason it has
    no operating point (a string). ``records`` are the run's records of the modality (each
    with ``query_id``, ``scope.holder``, ``unanswerable``, ``origin``), ``top1`` maps a query
    id to its top-1 score (``None``: no hits)."""
    used = [r for r in records if not r.unanswerable or audited(r)]
    left_out = len(records) - len(used)
    n_pos = sum(not r.unanswerable for r in used)
    n_neg = len(used) - n_pos
    note = f" ({left_out} unaudited native unanswerable left out)" if left_out else ""
    if not n_pos or not n_neg:  # every threshold would look free of false recalls (or hits)
        return (
            f"{n_pos} answerable and {n_neg} audited unanswerable dev queries{note}: no "
            "operating point to choose"
        )
    sp = split_halves(used)
    by_id = {r.query_id: r for r in used}

    def scores(qids: list[str], unans: bool) -> list[float | None]:
        return [top1.get(q) for q in qids if by_id[q].unanswerable == unans]

    fit_pos, fit_neg = scores(sp["fit"], False), scores(sp["fit"], True)
    if not fit_pos or not fit_neg:
        return (
            f"the fit half has {len(fit_pos)} answerable and {len(fit_neg)} audited "
            f"unanswerable queries{note}: no operating point to choose"
        )
    if not any(s is not None for s in fit_pos + fit_neg):
        return f"no query of the fit half has a hit{note}: no score to threshold"
    c = choose_threshold(fit_pos, fit_neg, max_false_recall)
    held_pos, held_neg = scores(sp["held_out"], False), scores(sp["held_out"], True)

    def half(holders: list[str], pos: list, neg: list) -> dict[str, Any]:
        return {
            "holders": holders,
            "answerable_kept": _kept(pos, c.threshold),
            "n_answerable": len(pos),
            "unanswerable_kept": _kept(neg, c.threshold),
            "n_unanswerable": len(neg),
        }

    return {
        "threshold": c.threshold,
        # the fit half's figures (in sample), under the earlier format's keys
        "answerable_kept": round(c.tpr, 6),
        "unanswerable_kept": round(c.fpr, 6),
        "within_gate": c.constrained,
        "n_answerable": c.n_answerable,
        "n_unanswerable": c.n_unanswerable,
        "split": {"by": sp["by"], "why": sp["why"]},
        "fit": half(sp["fit_holders"], fit_pos, fit_neg),
        "held_out": half(sp["held_out_holders"], held_pos, held_neg),
        "unaudited_left_out": left_out,
    }


def calibrate_run(
    run_dir: str | os.PathLike | RunDir, sets_dir: str | os.PathLike | None = None
) -> dict[str, Any]:
    rd = run_dir if isinstance(run_dir, RunDir) else RunDir.open(run_dir, sets_dir)
    if rd.split != "dev":
        raise MembenchError(f"{rd.path}: calibrate on the dev split only (this run is {rd.split})")
    gate = (rd.meta.get("config") or {}).get("cartridge", {}).get("gate", "")
    if gate and "RRF" not in gate:
        raise MembenchError(
            f"{rd.path}: this system gates its cartridge on {gate!r}, not on "
            "its hit scores; calibrate the run whose scores it uses (e.g. dense)"
        )
    recs = rd.records
    top1: dict[str, float | None] = {}
    for row in rd.rows:
        # hits rank by score descending, so the top-1 score is the largest one
        top1[row.query_id] = float(row.scores.max()) if row.scores.size else None
    out: dict[str, Any] = {
        "system": rd.meta["system"],
        "run_dir": str(rd.path),
        "split": "dev",
        "set_sha256": rd.meta.get("set_sha256"),
        "max_false_recall": MAX_FALSE_RECALL,
        "rule": RULE,
        "split_rule": SPLIT_RULE,
        "unanswerables": UNANSWERABLES,
        "modalities": {},
        "not_calibrated": {},
    }
    for m in sorted({r.modality for r in recs}):
        mrecs = [r for r in recs if r.modality == m]
        if not any(top1.get(r.query_id) is not None for r in mrecs):
            continue  # no hits at all: nothing was scored here
        entry = calibrate_modality(mrecs, top1)
        if isinstance(entry, str):
            out["not_calibrated"][m] = entry
        else:
            out["modalities"][m] = entry
    return out
