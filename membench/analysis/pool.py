"""``membench pool``: a sub-corpus of items chosen by Reciprocal Rank Fusion over the pools of
runs (Q2D-Web's sub-sampling), or at random with the same size per holder (its baseline).

Reads the runs' directories and the parent sets folder; writes the new sets folder through
:mod:`membench.sets.subcorpus` (which writes and checks it). Per query, each run's ranked atoms
become a ranking of items (:func:`item_ranking`), the first ``depth`` of every run are fused by
RRF (:func:`fuse`), and each holder of the runs' split and modalities keeps its required items
then the others in order of their best fused position (:func:`priorities`) up to
:func:`target_size`, filling at random when the pools run out; ``random=True`` fills the same
target at random. Other holders and every record are kept whole; runs that cannot be pooled
together are refused with one line each (:func:`open_runs`). Deterministic: the same runs,
parameters and seed give the same bytes.

Start at :func:`pool` (or :func:`read_input` then :func:`make_pool`). docs/pooling.md,
"``membench pool``", gives each rule, its reason and Q2D-Web's figures.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ..contract.protocol import rank_order
from ..core.errors import InputError, MembenchError
from ..core.hashing import hash_order, stable_hash
from ..core.jsonl import sha256_file, sha256_text
from ..core.version import __version__
from ..metrics.rundir import RunDir
from ..sets.subcorpus import Parent, Required, Written, required_items, write_subcorpus

RRF_K = 60
DEFAULT_DEPTH = 100


@dataclass(frozen=True)
class PoolParams:
    """How a sub-corpus is chosen (module docstring)."""

    share: float
    seed: int = 0
    depth: int = DEFAULT_DEPTH
    rrf_k: int = RRF_K
    random: bool = False

    def __post_init__(self) -> None:
        if (
            isinstance(self.share, bool)
            or not isinstance(self.share, (int, float))
            or not math.isfinite(self.share)
            or not 0 < self.share <= 1
        ):
            raise MembenchError(f"--share must be a number in (0, 1], got {self.share!r}")
        for name, lo in (("seed", 0), ("depth", 1), ("rrf_k", 0)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < lo:
                raise MembenchError(
                    f"--{name.replace('_', '-')} must be an integer >= {lo}, got {v!r}"
                )

    @property
    def method(self) -> str:
        return "random" if self.random else "rrf"


@dataclass
class PoolRun:
    """One run as the pool reads it: its identity and, per query, its ranking of items."""

    system: str
    identity: dict[str, Any]
    items_by_query: dict[str, list[str]]


def _identity(rd: RunDir) -> dict[str, Any]:
    cfg = json.dumps(rd.meta.get("config"), sort_keys=True, default=str)
    return {
        "system": rd.system,
        "config_sha256": sha256_text(cfg),
        "run_sha256": sha256_file(rd.path / "run.jsonl"),
        "atoms_sha256": sha256_file(rd.path / "atoms.jsonl"),
    }


def item_ranking(hit_ids: Sequence[str], scores, source_of: dict[str, str]) -> list[str]:
    """A run line's ranking of items: its atoms in the protocol's order, each item at the rank
    of its first atom."""
    return list(dict.fromkeys(source_of[a] for a in rank_order(list(hit_ids), scores)))


def open_runs(
    run_dirs: Sequence[str | os.PathLike], sets_dir: str | os.PathLike
) -> tuple[list[RunDir], str, list[str]]:
    """Open the runs a pool is made from, refusing what the module docstring lists; returns
    them with their split and modalities."""
    if not run_dirs:
        raise MembenchError("pool: no run given (--runs RUN_DIR ...)")
    opened: list[RunDir] = []
    for p in run_dirs:
        rd = RunDir.open(p, sets_dir)  # SET_DRIFT, INCOMPLETE_RUN, TEST_SPLIT
        meta = rd.path / "meta.json"
        if not rd.meta.get("set_sha256"):
            raise InputError(
                meta,
                None,
                "set_sha256",
                "the run records no set sha256s, so it cannot be shown to be a run on these sets",
                rule="RUN_META",
            )
        if rd.meta.get("sees_gold"):
            raise InputError(
                meta,
                None,
                "sees_gold",
                f"{rd.system} saw the gold (a test double): its ranking would pool the gold",
                rule="SEES_GOLD",
            )
        if rd.limit is not None:
            raise InputError(
                meta,
                None,
                "limit",
                f"a --limit {rd.limit} run answered a "
                "hash-chosen subset of queries: the other queries' candidates "
                "would be missing from the pool; pool full runs",
                rule="RUN_META",
            )
        rd.scores()  # every reader's refusals: atoms past the caps, unknown atom ids
        opened.append(rd)
    first = opened[0]
    mods = sorted({r.modality for r in first.records})
    qids = sorted(r.query_id for r in first.records)
    for rd in opened[1:]:
        for what, a, b in (
            ("split", first.split, rd.split),
            ("modalities", mods, sorted({r.modality for r in rd.records})),
            ("queries", qids, sorted(r.query_id for r in rd.records)),
        ):
            if a != b:
                detail = f"{a} vs {b}" if what != "queries" else f"{len(a)} vs {len(b)} ids"
                raise InputError(
                    rd.path / "meta.json",
                    None,
                    what,
                    f"{rd.path} and "
                    f"{first.path} differ in {what} ({detail}): a pool fuses runs "
                    "over the same queries",
                    rule="RUN_MISMATCH",
                )
    return opened, first.split, mods


def read_pool_run(rd: RunDir) -> PoolRun:
    """A run's ranking of items per query (:func:`item_ranking`)."""
    source_of = {a.atom_id: a.source_id for a in rd.atoms}
    by_q = {row.query_id: item_ranking(row.hit_ids, row.scores, source_of) for row in rd.rows}
    return PoolRun(rd.system, _identity(rd), by_q)


def fuse(
    rankings: Sequence[Sequence[str]], depth: int = DEFAULT_DEPTH, rrf_k: int = RRF_K
) -> list[tuple[str, float]]:
    """Reciprocal Rank Fusion of item rankings, each cut at ``depth``: ``(item, score)`` by
    score descending, then best rank, then item id."""
    score: dict[str, float] = defaultdict(float)
    best: dict[str, int] = {}
    for ranking in rankings:
        for r, item in enumerate(ranking[:depth], 1):
            score[item] += 1.0 / (rrf_k + r)
            best[item] = min(best.get(item, r), r)
    return sorted(score.items(), key=lambda kv: (-kv[1], best[kv[0]], kv[0]))


def priorities(fused_by_query: dict[str, list[tuple[str, float]]]) -> dict[str, tuple[int, float]]:
    """Each item's best ``(position, -score)`` over the queries' fused lists (1-based)."""
    out: dict[str, tuple[int, float]] = {}
    for fused in fused_by_query.values():
        for pos, (item, s) in enumerate(fused, 1):
            key = (pos, -s)
            if item not in out or key < out[item]:
                out[item] = key
    return out


def target_size(share: float, n_items: int, n_required: int) -> int:
    """``max(required, ceil(share * items))`` (the product rounded to 9 places first, so that
    0.3 * 10 is 3, not 4)."""
    return max(n_required, min(n_items, math.ceil(round(share * n_items, 9))))


@dataclass
class PoolResult:
    written: Written
    description: dict[str, Any]
    holders: dict[str, dict[str, Any]] = field(default_factory=dict)


def choose_items(
    parent: Parent,
    required: Required,
    params: PoolParams,
    split: str,
    modalities: Sequence[str],
    runs: Sequence[PoolRun],
) -> tuple[set[str], dict[str, dict[str, Any]], int]:
    """The kept items (module docstring), per-holder counts, and how many items were not
    pooled (kept whole: other split or modality)."""
    hsplit = parent.holder_split()
    mods = set(modalities)
    by_holder: dict[str, list[str]] = defaultdict(list)
    keep: set[str] = set()
    for it in parent.items:
        if hsplit.get(it.holder) == split and it.modality in mods:
            by_holder[it.holder].append(it.source_id)
        else:
            keep.add(it.source_id)
    not_pooled = len(keep)
    prio: dict[str, tuple[int, float]] = {}
    if not params.random:
        queries = sorted({q for run in runs for q in run.items_by_query})
        fused = {
            q: fuse([run.items_by_query.get(q, []) for run in runs], params.depth, params.rrf_k)
            for q in queries
        }
        prio = priorities(fused)
    report: dict[str, dict[str, Any]] = {}
    for h in sorted(by_holder):
        ids = by_holder[h]
        whole = required.holder_kept_whole(h)
        req = set(ids) if whole else required.items.intersection(ids)
        target = target_size(params.share, len(ids), len(req))
        rest = [i for i in ids if i not in req]
        if params.random:
            chosen = hash_order(rest, f"pool-random:{params.seed}:{h}")[: target - len(req)]
            from_pool, filled = 0, len(chosen)
            candidates = 0
        else:
            ranked = sorted(
                (i for i in rest if i in prio),
                key=lambda i: (*prio[i], stable_hash(str(params.seed), i), i),
            )
            candidates = len(ranked)
            chosen = ranked[: target - len(req)]
            from_pool = len(chosen)
            if len(chosen) < target - len(req):
                unranked = [i for i in rest if i not in prio]
                extra = hash_order(unranked, f"pool-fill:{params.seed}:{h}")
                chosen += extra[: target - len(req) - len(chosen)]
            filled = len(chosen) - from_pool
        keep |= req
        keep |= set(chosen)
        report[h] = {
            "items": len(ids),
            "required": len(req),
            "target": target,
            "kept": len(req) + len(chosen),
            "from_pool": from_pool,
            "pool_candidates": candidates,
            "filled_at_random": filled,
            "kept_whole": whole,
            "share_kept": round((len(req) + len(chosen)) / len(ids), 6),
        }
    return keep, report, not_pooled


@dataclass
class PoolInput:
    """What a pool is made from, read once: the runs' item rankings (sorted by identity, so the
    order they are named in does not matter), their split and modalities, the parent sets and
    what every sub-corpus of it keeps."""

    runs: list[PoolRun]
    split: str
    modalities: list[str]
    parent: Parent
    required: Required

    def without(self, indices: int | set[int]) -> PoolInput:
        """The same input without some runs (a leave-one-out pool)."""
        drop = {indices} if isinstance(indices, int) else set(indices)
        return PoolInput(
            [r for i, r in enumerate(self.runs) if i not in drop],
            self.split,
            self.modalities,
            self.parent,
            self.required,
        )


def read_input(run_dirs: Sequence[str | os.PathLike], sets_dir: str | os.PathLike) -> PoolInput:
    """Open and check the runs (:func:`open_runs`), read their rankings and the parent sets."""
    opened, split, mods = open_runs(run_dirs, sets_dir)
    runs = sorted(
        (read_pool_run(rd) for rd in opened),
        key=lambda r: (r.identity["system"], r.identity["config_sha256"], r.identity["run_sha256"]),
    )
    parent = Parent.read(sets_dir)
    return PoolInput(runs, split, mods, parent, required_items(parent))


def make_pool(
    inp: PoolInput, out: str | os.PathLike, params: PoolParams, *, force: bool = False
) -> PoolResult:
    """Choose the items (:func:`choose_items`) and write the sub-corpus to ``out``
    (:func:`membench.sets.subcorpus.write_subcorpus`)."""
    if not inp.runs and not params.random:
        raise MembenchError("pool: an RRF pool needs at least one run")
    keep, holders, not_pooled = choose_items(
        inp.parent, inp.required, params, inp.split, inp.modalities, inp.runs
    )
    pooled_items = sum(h["items"] for h in holders.values())
    pooled_kept = sum(h["kept"] for h in holders.values())
    description = {
        "about": "A sub-corpus written by membench pool: the parent's records, and the items "
        "chosen as docs/pooling.md says (membench.analysis.pool).",
        "method": params.method,
        "share": params.share,
        "seed": params.seed,
        "depth": params.depth,
        "rrf_k": params.rrf_k,
        "split": inp.split,
        "modalities": inp.modalities,
        "runs": [r.identity for r in inp.runs],
        "runs_used_for": (
            "the split and modalities only (a random sub-corpus reads no ranking)"
            if params.random
            else "the fusion"
        ),
        "required": {**inp.required.by_reason, "holders_kept_whole": inp.required.whole_holders},
        "pooled": {
            "items": pooled_items,
            "kept": pooled_kept,
            "share_kept": round(pooled_kept / pooled_items, 6) if pooled_items else None,
        },
        "not_pooled": {
            "items": not_pooled,
            "why": "the other split and other modalities are kept whole",
        },
        "holders": holders,
        "membench_version": __version__,
    }
    written = write_subcorpus(inp.parent, keep, out, description, force=force)
    return PoolResult(written, description, holders)


def pool(
    run_dirs: Sequence[str | os.PathLike],
    sets_dir: str | os.PathLike,
    out: str | os.PathLike,
    params: PoolParams,
    *,
    force: bool = False,
) -> PoolResult:
    """Make the sub-corpus of ``sets_dir`` that ``params`` describe from the runs ``run_dirs``
    and write it to ``out`` (:func:`read_input`, :func:`make_pool`)."""
    return make_pool(read_input(run_dirs, sets_dir), out, params, force=force)


def judged_shares(sets_dir: str | os.PathLike, split: str = "dev") -> list[dict[str, Any]]:
    """Per modality, over the holders of ``split``: items, the items every sub-corpus keeps
    (:func:`membench.sets.subcorpus.required_items`, holders kept whole included) and their
    share, the smallest share a sub-corpus of that modality can have (``docs/pooling.md``)."""
    parent = Parent.read(sets_dir)
    req = required_items(parent)
    hsplit = parent.holder_split()
    rows: dict[str, dict[str, Any]] = {}
    for it in parent.items:
        if hsplit.get(it.holder) != split:
            continue
        r = rows.setdefault(
            it.modality, {"modality": it.modality, "holders": set(), "items": 0, "required": 0}
        )
        r["holders"].add(it.holder)
        r["items"] += 1
        r["required"] += it.source_id in req.items or req.holder_kept_whole(it.holder)
    out = []
    for r in rows.values():
        out.append(
            {
                **r,
                "holders": len(r["holders"]),
                "required_share": round(r["required"] / r["items"], 4),
            }
        )
    return out


def format_pool(res: PoolResult) -> str:
    """The per-holder table ``membench pool`` prints."""
    d = res.description
    rows = [
        f"{d['method']} sub-corpus, share {d['share']}, seed {d['seed']}, depth "
        f"{d['depth']}, {len(d['runs'])} run(s), {d['split']} {', '.join(d['modalities'])}",
        "| holder | items | required | kept | from the pool | filled at random | share kept |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for h, c in res.holders.items():
        rows.append(
            f"| {h} | {c['items']} | {c['required']} | {c['kept']} | {c['from_pool']} "
            f"| {c['filled_at_random']} | {c['share_kept']:.3f} |"
        )
    p = d["pooled"]
    rows.append(
        f"pooled: {p['kept']} of {p['items']} items kept"
        + (f" ({p['share_kept']:.1%})" if p["share_kept"] is not None else "")
        + f"; {d['not_pooled']['items']} items of other splits or modalities kept whole"
    )
    return "\n".join(rows)


__all__ = [
    "DEFAULT_DEPTH",
    "RRF_K",
    "PoolInput",
    "PoolParams",
    "PoolResult",
    "choose_items",
    "format_pool",
    "fuse",
    "item_ranking",
    "judged_shares",
    "make_pool",
    "open_runs",
    "pool",
    "priorities",
    "read_input",
    "target_size",
]
