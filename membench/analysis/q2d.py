"""``membench q2d``: Q2D-Web's sub-sampling experiment on membench's own data.

For a spec (:func:`read_spec`: systems, modalities, shares, seeds, depth, ``rrf_k``) it runs
every system on the full sets (``OUT/full/<label>``), makes per share the sub-corpora
``rrf``, ``loo-<label>``, ``lfo-<family>`` and ``random-<seed>`` (:func:`pool_plans`,
:func:`membench.analysis.pool.pool`; ``OUT/pools/share-<F>/``), checks each against
``membench validate``'s hard rules (:func:`check_pooled_sets`), runs each system on the
sub-corpora it is evaluated on (``OUT/runs/share-<F>/<pool>/<label>``) and computes per share,
method and measure the inflation and Kendall's tau-b with paired bootstrap intervals
(:func:`evaluate`, :func:`compare_conditions`, :func:`collect`) into ``OUT/q2d.json``.

Reads the sets folder, the corpus mirror and its own runs; writes only under ``OUT`` (every
run resumes). Start at :func:`run_experiment`. docs/pooling.md ("``membench q2d``: the
experiment") describes each pool, each figure and why, and Q2D-Web's own figures.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..core import progress
from ..core.atomic import atomic_write_json
from ..core.errors import InputError, MembenchError
from ..core.hashing import keyed_rng
from ..core.jsonl import read_json_file
from ..core.paths import MANIFEST_PATH
from ..metrics.rundir import RunDir, run_status
from ..sets.subcorpus import lock_for
from .pool import DEFAULT_DEPTH, RRF_K, PoolInput, PoolParams, make_pool, read_input

MEASURES = ("recall@1000", "recall@100", "recall@10", "ndcg@10")
METHODS = ("rrf", "loo", "lfo", "random")
SEED = 20240101


# ------------------------------------------------------------------------------ the spec


@dataclass(frozen=True)
class SystemSpec:
    label: str
    system: str
    config: dict[str, Any]


@dataclass(frozen=True)
class Spec:
    systems: tuple[SystemSpec, ...]
    modalities: tuple[str, ...]
    shares: tuple[float, ...]
    seeds: int
    split: str = "dev"
    depth: int = DEFAULT_DEPTH
    rrf_k: int = RRF_K
    headline: str = "recall@100"


_LABEL_OK = set("abcdefghijklmnopqrstuvwxyz0123456789-_.")


def read_spec(path: str | os.PathLike) -> Spec:
    """The experiment's JSON spec (``bench/q2d.json``): ``systems`` (``label``, ``system``,
    ``config``), ``modalities``, ``shares``, ``seeds`` and optionally ``depth``, ``rrf_k``,
    ``headline``; anything else, or a wrong type, is an :class:`InputError` naming the field."""
    from ..sets.select import check_modalities

    p = Path(path)
    data = read_json_file(p, dict, "an experiment spec (a JSON object)")
    allowed = {
        "about",
        "systems",
        "modalities",
        "shares",
        "seeds",
        "depth",
        "rrf_k",
        "headline",
        "split",
    }
    for k in data:
        if k not in allowed:
            raise InputError(
                p, None, k, f"unknown field (allowed: {', '.join(sorted(allowed))})", rule="SPEC"
            )

    def need(k: str, typ, what: str):
        v = data.get(k)
        if not isinstance(v, typ) or isinstance(v, bool):
            raise InputError(p, None, k, f"must be {what}", rule="SPEC")
        return v

    systems = []
    for i, s in enumerate(need("systems", list, "a list of {label, system, config}")):
        f = f"systems[{i}]"
        if (
            not isinstance(s, dict)
            or set(s) - {"label", "system", "config"}
            or not isinstance(s.get("label"), str)
            or not isinstance(s.get("system"), str)
            or not isinstance(s.get("config", {}), dict)
        ):
            raise InputError(
                p, None, f, "must be {label: str, system: str, config: object}", rule="SPEC"
            )
        if not s["label"] or set(s["label"]) - _LABEL_OK:
            raise InputError(
                p, None, f"{f}.label", "lower-case letters, digits, '-', '_', '.'", rule="SPEC"
            )
        systems.append(SystemSpec(s["label"], s["system"], dict(s.get("config", {}))))
    labels = [s.label for s in systems]
    if len(set(labels)) != len(labels):
        raise InputError(p, None, "systems", "a label twice", rule="SPEC")
    if len(systems) < 3:
        raise InputError(
            p, None, "systems", "at least 3 systems (a ranking of 2 says little)", rule="SPEC"
        )
    if len({s.system for s in systems}) < 2:
        raise InputError(
            p,
            None,
            "systems",
            "at least 2 families (reference systems): a pool "
            "without a system's family needs another family's runs",
            rule="SPEC",
        )
    mods = need("modalities", list, "a list of modality names")
    try:
        mods = check_modalities(mods)
    except MembenchError as e:
        raise InputError(p, None, "modalities", str(e), rule="SPEC") from None
    shares = need("shares", list, "a list of shares in (0, 1)")
    for i, s in enumerate(shares):
        if isinstance(s, bool) or not isinstance(s, (int, float)) or not 0 < s < 1:
            raise InputError(p, None, f"shares[{i}]", "must be a number in (0, 1)", rule="SPEC")
    seeds = need("seeds", int, "an integer >= 2 (random sub-corpora per share)")
    if seeds < 2:
        raise InputError(
            p, None, "seeds", "must be >= 2 (an interval over seeds needs two)", rule="SPEC"
        )
    headline = data.get("headline", "recall@100")
    if headline not in MEASURES:
        raise InputError(p, None, "headline", f"one of {', '.join(MEASURES)}", rule="SPEC")
    split = data.get("split", "dev")
    if split != "dev":
        raise InputError(
            p,
            None,
            "split",
            "the experiment runs on dev only (the test split is frozen)",
            rule="SPEC",
        )
    spec = Spec(
        tuple(systems),
        tuple(mods),
        tuple(float(s) for s in shares),
        seeds,
        depth=data.get("depth", DEFAULT_DEPTH),
        rrf_k=data.get("rrf_k", RRF_K),
        headline=headline,
    )
    PoolParams(share=0.5, depth=spec.depth, rrf_k=spec.rrf_k)  # range checks
    return spec


# ------------------------------------------------------------------------------ layout


def share_dir(share: float) -> str:
    return f"share-{share:.2f}"


@dataclass
class Layout:
    out: Path

    def full(self, label: str) -> Path:
        return self.out / "full" / label

    def pool(self, share: float, name: str) -> Path:
        return self.out / "pools" / share_dir(share) / name

    def run(self, share: float, name: str, label: str) -> Path:
        return self.out / "runs" / share_dir(share) / name / label


@dataclass(frozen=True)
class PoolPlan:
    """One sub-corpus of a share: its name, the systems whose runs it leaves out, the systems
    evaluated on it, its seed, and whether it is random."""

    name: str
    left_out: frozenset[str]
    evaluated: tuple[str, ...]
    seed: int = 0
    random: bool = False


def family(s: SystemSpec) -> str:
    """A system's family: the reference system it configures (``bm25``, ``dense``, ...)."""
    return s.system


def pool_plans(spec: Spec) -> list[PoolPlan]:
    """Every sub-corpus of a share (module docstring): ``rrf``, ``loo-<label>``,
    ``lfo-<family>`` and ``random-<seed>``."""
    labels = tuple(s.label for s in spec.systems)
    plans = [PoolPlan("rrf", frozenset(), labels)]
    plans += [PoolPlan(f"loo-{s.label}", frozenset({s.label}), (s.label,)) for s in spec.systems]
    for fam in dict.fromkeys(family(s) for s in spec.systems):
        members = tuple(s.label for s in spec.systems if family(s) == fam)
        plans.append(PoolPlan(f"lfo-{_safe(fam)}", frozenset(members), members))
    plans += [PoolPlan(f"random-{k}", frozenset(), labels, k, True) for k in range(spec.seeds)]
    return plans


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)[:60]


def pool_of(plans: list[PoolPlan], method: str, label: str) -> list[str]:
    """The sub-corpora on which ``label`` is evaluated under ``method``."""
    pick = {
        "rrf": lambda p: p.name == "rrf",
        "random": lambda p: p.random,
        "loo": lambda p: p.name.startswith("loo-"),
        "lfo": lambda p: p.name.startswith("lfo-"),
    }[method]
    return [p.name for p in plans if pick(p) and label in p.evaluated]


# ------------------------------------------------------------------------------ running


_CHECKED: set[str] = set()


def check_pooled_sets(
    sets_dir: Path, corpus: Path, modalities: Sequence[str], manifest: Path = MANIFEST_PATH
) -> None:
    """Every hard rule of ``membench validate`` on a sub-corpus folder, with the corpus and its
    own lock; the audit (TELL) when a pooled modality has a gated number of unanswerable
    records (module docstring). The first error is raised as a located :class:`InputError`."""
    from ..sets.audit import MIN_UNANSWERABLE
    from ..sets.select import select_records
    from ..sets.validate import validate_sets

    key = str(sets_dir.resolve())
    if key in _CHECKED:
        return
    recs = []
    for split in ("dev", "test"):
        recs += select_records(sets_dir, split, list(modalities))[0]
    gated = any(
        sum(r.unanswerable for r in recs if r.modality == m) >= MIN_UNANSWERABLE for m in modalities
    )
    errors = [
        f
        for f in validate_sets(
            sets_dir, manifest, lock=lock_for(sets_dir), corpus=corpus, audit=gated
        )
        if f.level == "error"
    ]
    if errors:
        e = errors[0]
        raise InputError(
            e.file,
            e.line,
            None,
            f"{e.message} ({len(errors)} error(s); membench validate --sets {sets_dir} lists them)",
            rule=e.rule,
        )
    _CHECKED.add(key)


def _run_index(inp: PoolInput, run_dir: Path) -> int:
    """The position of a run in a pool input (its runs are sorted by identity)."""
    from ..core.jsonl import sha256_file

    digest = sha256_file(Path(run_dir) / "run.jsonl")
    hits = [i for i, r in enumerate(inp.runs) if r.identity["run_sha256"] == digest]
    if len(hits) != 1:
        raise MembenchError(
            f"{run_dir}: its run.jsonl is {'in no' if not hits else 'in two'} "
            "of the pool's runs (two systems with identical runs cannot be "
            "left out one at a time)"
        )
    return hits[0]


def _ensure_run(
    spec: Spec,
    s: SystemSpec,
    sets_dir: Path,
    out: Path,
    corpus: Path,
    *,
    pooled: bool,
    manifest: Path = MANIFEST_PATH,
    lock: Path | None = None,
) -> None:
    from ..run.runner import run_system
    from ..sets.build import set_digests
    from ..systems import make_system

    if run_status(out) == "complete":
        meta = read_json_file(out / "meta.json", dict)
        if meta.get("set_sha256") != set_digests(sets_dir):
            raise MembenchError(
                f"{out}: made on other sets than {sets_dir} holds now (the "
                "sub-corpus changed since); delete it and run again"
            )
        return
    system = make_system(s.system, s.config)
    if pooled:
        check_pooled_sets(sets_dir, corpus, spec.modalities, manifest)
    run_system(
        system,
        sets_dir,
        spec.split,
        out,
        corpus,
        modalities=list(spec.modalities),
        lock=lock or lock_for(sets_dir),
        manifest=manifest,
        check_sets=not pooled,
    )


@dataclass
class Experiment:
    spec: Spec
    layout: Layout
    sets_dir: Path
    figures: dict[str, Any] = field(default_factory=dict)


def run_experiment(
    spec_path: Path,
    out: Path,
    sets_dir: Path,
    corpus: Path,
    *,
    shares: Sequence[float] | None = None,
    seeds: int | None = None,
    resamples: int = 2000,
    manifest: Path = MANIFEST_PATH,
    lock: Path | None = None,
) -> dict[str, Any]:
    """Run the experiment (module docstring) into ``out`` and write ``out/q2d.json``; returns
    its content. Every step resumes: complete runs and identical sub-corpora are kept."""
    from ..metrics.bootstrap import check_resamples

    check_resamples(resamples, "--resamples")
    spec = read_spec(spec_path)
    if shares:
        for s in shares:
            if not 0 < s < 1:
                raise MembenchError(f"--share must be in (0, 1), got {s}")
        spec = Spec(
            spec.systems,
            spec.modalities,
            tuple(shares),
            spec.seeds,
            spec.split,
            spec.depth,
            spec.rrf_k,
            spec.headline,
        )
    if seeds:
        if seeds < 2:
            raise MembenchError("--seeds must be >= 2")
        spec = Spec(
            spec.systems,
            spec.modalities,
            spec.shares,
            seeds,
            spec.split,
            spec.depth,
            spec.rrf_k,
            spec.headline,
        )
    lay = Layout(Path(out))
    plans = pool_plans(spec)
    labels = [s.label for s in spec.systems]
    n_runs = len(labels) + len(spec.shares) * sum(len(p.evaluated) for p in plans)
    by_label = {s.label: s for s in spec.systems}
    with progress.step("q2d runs", total=n_runs, unit="run") as bar:
        for s in spec.systems:
            bar.note(f"full/{s.label}")
            _ensure_run(
                spec,
                s,
                sets_dir,
                lay.full(s.label),
                corpus,
                pooled=False,
                manifest=manifest,
                lock=lock,
            )
            bar.advance()
        inp = read_input([lay.full(lab) for lab in labels], sets_dir)
        index = {lab: _run_index(inp, lay.full(lab)) for lab in labels}
        for share in spec.shares:
            for plan in plans:
                sub = inp.without({index[lab] for lab in plan.left_out})
                make_pool(
                    sub,
                    lay.pool(share, plan.name),
                    PoolParams(
                        share=share,
                        seed=plan.seed,
                        depth=spec.depth,
                        rrf_k=spec.rrf_k,
                        random=plan.random,
                    ),
                    force=True,
                )
                for lab in plan.evaluated:
                    bar.note(f"{share_dir(share)}/{plan.name}/{lab}")
                    _ensure_run(
                        spec,
                        by_label[lab],
                        lay.pool(share, plan.name),
                        lay.run(share, plan.name, lab),
                        corpus,
                        pooled=True,
                        manifest=manifest,
                    )
                    bar.advance()
    result = collect(spec, lay, sets_dir, resamples=resamples)
    result["command"] = (
        f"membench q2d --spec {spec_path} --out {out}"
        + "".join(f" --share {s}" for s in (shares or []))
        + (f" --seeds {seeds}" if seeds else "")
    )
    atomic_write_json(Path(out) / "q2d.json", result, indent=1, sort_keys=True, allow_nan=False)
    return result


# ------------------------------------------------------------------------------ figures


def per_query(run_dir: Path, sets_dir: Path | None = None) -> dict[str, dict[str, float]]:
    """``{measure: {query_id: value}}`` over a run's answerable items (a refused run is
    refused here, as by every reader)."""
    rd = RunDir.open(run_dir, sets_dir)
    sc = rd.scores()
    out: dict[str, dict[str, float]] = {}
    for m in MEASURES:
        v = sc.values[m]
        out[m] = {q: float(v[i]) for i, q in enumerate(sc.query_id) if sc.answerable[i]}
    return out


def kendall_tau_b(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Kendall's tau-b between ``x`` and ``y`` along the last axis (shape ``(..., n)``), with
    ties counted as in Kendall (1945): ``(C - D) / sqrt((P - Tx) * (P - Ty))`` over the
    ``P = n(n-1)/2`` pairs; NaN where either side is constant. Tested against
    ``scipy.stats.kendalltau`` and hand-computed cases."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n = x.shape[-1]
    i, j = np.triu_indices(n, k=1)
    dx = np.sign(x[..., i] - x[..., j])
    dy = np.sign(y[..., i] - y[..., j])
    s = (dx * dy).sum(-1)
    nx = (dx != 0).sum(-1)
    ny = (dy != 0).sum(-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where((nx > 0) & (ny > 0), s / np.sqrt(nx.astype(float) * ny), np.nan)


def _as_cond(full: np.ndarray, cond: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    full = np.asarray(full, dtype=np.float64)
    cond = np.asarray(cond, dtype=np.float64)
    if cond.ndim == 2:
        cond = cond[None]
    if full.ndim != 2 or cond.shape[1:] != full.shape:
        raise MembenchError(f"evaluate: full {full.shape} vs condition {cond.shape}")
    return full, cond


def _points(full: np.ndarray, cond: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per sub-corpus: the inflation (points) and Kendall's tau-b of the systems' means."""
    f_mean = full.mean(-1)  # (S,)
    c_mean = cond.mean(-1)  # (R, S)
    infl = 100.0 * (c_mean - f_mean).mean(-1)  # (R,)
    return infl, kendall_tau_b(np.broadcast_to(f_mean, c_mean.shape), c_mean)


def _replicates(
    full: np.ndarray, cond: np.ndarray, idx: np.ndarray, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap replicates (one per row of ``idx``, the resampled queries) of the inflation and
    of tau, each the mean over ``R`` sub-corpora drawn with replacement from ``cond``'s."""
    r = cond.shape[0]
    b = idx.shape[0]
    pick = rng.integers(0, r, size=(b, r)) if r > 1 else np.zeros((b, 1), int)
    fb = full[:, idx].mean(-1).T  # (B, S)
    cb = np.stack([cond[k][:, idx].mean(-1).T for k in range(r)])  # (R, B, S)
    cb = cb[pick.T, np.arange(b)[None, :], :]  # the drawn sub-corpora
    infl = (100.0 * (cb - fb[None]).mean(-1)).mean(0)  # (B,)
    with warnings.catch_warnings():  # a replicate whose every tau is NaN stays NaN
        warnings.simplefilter("ignore", RuntimeWarning)
        tau = np.nanmean(kendall_tau_b(np.broadcast_to(fb[None], cb.shape), cb), axis=0)
    return infl, tau


def _ci(v: np.ndarray) -> list[float | None]:
    v = np.asarray(v, dtype=np.float64)
    v = v[~np.isnan(v)]
    return (
        [None, None]
        if not v.size
        else [float(np.percentile(v, 2.5)), float(np.percentile(v, 97.5))]
    )


def _mean_or_none(v: np.ndarray) -> float | None:
    v = np.asarray(v, dtype=np.float64)
    return None if np.all(np.isnan(v)) else float(np.nanmean(v))


def evaluate(
    full: np.ndarray, cond: np.ndarray, *, resamples: int = 2000, key: str = ""
) -> dict[str, Any]:
    """Figures of one condition against the full corpus, for one measure.

    ``full``: per system and query, shape ``(S, Q)``. ``cond``: the same on the sub-corpora,
    shape ``(R, S, Q)`` (``R`` = 1, or the random seeds). Returns the inflation (mean over
    systems of cond - full, in points: x100) and Kendall's tau-b of the systems' means, as
    point values (mean over the ``R`` sub-corpora), 95% percentile intervals (a paired
    bootstrap over queries; with ``R > 1`` also over the sub-corpora, drawn with replacement in
    each replicate), and with ``R > 1`` the range over the sub-corpora."""
    full, cond = _as_cond(full, cond)
    r, s, q = cond.shape
    infl, tau = _points(full, cond)
    rng = keyed_rng(SEED, key)
    idx = rng.integers(0, q, size=(resamples, q))
    infl_b, tau_b = _replicates(full, cond, idx, rng)
    out = {
        "inflation_points": float(infl.mean()),
        "inflation_ci95": _ci(infl_b),
        "kendall_tau": _mean_or_none(tau),
        "kendall_tau_ci95": _ci(tau_b),
        "sub_corpora": r,
        "systems": s,
        "queries": q,
    }
    if r > 1:
        out["inflation_range"] = [float(infl.min()), float(infl.max())]
        out["kendall_tau_range"] = (
            [None, None]
            if np.all(np.isnan(tau))
            else [float(np.nanmin(tau)), float(np.nanmax(tau))]
        )
    return out


def compare_conditions(
    full: np.ndarray, a: np.ndarray, b: np.ndarray, *, resamples: int = 2000, key: str = ""
) -> dict[str, Any]:
    """Condition ``b`` against condition ``a`` (e.g. random against the RRF pool), paired on
    the same resampled queries: ``inflation_diff`` = inflation(b) - inflation(a) in points and
    ``tau_diff`` = tau(a) - tau(b) (both positive when ``a`` is the closer to the full
    corpus), each with its 95% interval and the share of replicates at or below 0
    (``p_le_0``, a one-sided bootstrap p-value for "a is closer")."""
    full, a = _as_cond(full, a)
    _, b = _as_cond(full, b)
    q = full.shape[1]
    ia, ta = _points(full, a)
    ib, tb = _points(full, b)
    rng = keyed_rng(SEED, key)
    idx = rng.integers(0, q, size=(resamples, q))
    ia_b, ta_b = _replicates(full, a, idx, rng)
    ib_b, tb_b = _replicates(full, b, idx, rng)
    d_infl = ib_b - ia_b
    d_tau = ta_b - tb_b
    ta_m, tb_m = _mean_or_none(ta), _mean_or_none(tb)

    def p_le_0(v):
        v = v[~np.isnan(v)]
        return float(np.mean(v <= 0)) if v.size else None

    return {
        "inflation_diff": float(ib.mean() - ia.mean()),
        "inflation_diff_ci95": _ci(d_infl),
        "inflation_diff_p_le_0": p_le_0(d_infl),
        "tau_diff": None if ta_m is None or tb_m is None else ta_m - tb_m,
        "tau_diff_ci95": _ci(d_tau),
        "tau_diff_p_le_0": p_le_0(d_tau),
    }


def _matrix(values: list[dict[str, float]], qids: list[str], where: list[Path]) -> np.ndarray:
    for v, p in zip(values, where):
        if set(v) != set(qids):
            raise MembenchError(
                f"{p}: its answerable queries differ from the full runs' ({len(v)} vs {len(qids)})"
            )
    return np.array([[v[q] for q in qids] for v in values])


def collect(spec: Spec, lay: Layout, sets_dir: Path, *, resamples: int = 2000) -> dict[str, Any]:
    """Read every run of the experiment and compute the figures (module docstring)."""
    labels = [s.label for s in spec.systems]
    full = {lab: per_query(lay.full(lab), sets_dir) for lab in labels}
    qids = sorted(full[labels[0]][MEASURES[0]])
    rows: list[dict[str, Any]] = []
    comps: list[dict[str, Any]] = []
    systems: dict[str, dict[str, Any]] = {
        lab: {"full": {m: float(np.mean([full[lab][m][q] for q in qids])) for m in MEASURES}}
        for lab in labels
    }
    for share in spec.shares:
        plans = pool_plans(spec)
        cond_runs: dict[str, list[list[Path]]] = {}
        pools: dict[str, list[Path]] = {}
        for meth in METHODS:
            names = [pool_of(plans, meth, lab) for lab in labels]
            n = len(names[0])
            if any(len(x) != n for x in names):
                raise MembenchError(
                    f"{meth}: systems are evaluated on different numbers of sub-corpora"
                )
            cond_runs[meth] = [
                [lay.run(share, names[i][k], lab) for i, lab in enumerate(labels)] for k in range(n)
            ]
            pools[meth] = [
                lay.pool(share, x) for x in dict.fromkeys(y for row in names for y in row)
            ]
        kept = {
            meth: [read_json_file(p / "subcorpus.json", dict)["pooled"]["share_kept"] for p in ps]
            for meth, ps in pools.items()
        }
        mats: dict[tuple[str, str], np.ndarray] = {}
        for meth in METHODS:
            vals = [[per_query(p) for p in group] for group in cond_runs[meth]]
            for lab_i, lab in enumerate(labels):
                systems[lab].setdefault(share_dir(share), {})[meth] = {
                    m: float(np.mean([np.mean([g[lab_i][m][q] for q in qids]) for g in vals]))
                    for m in MEASURES
                }
            for m in MEASURES:
                f = np.array([[full[lab][m][q] for q in qids] for lab in labels])
                c = np.stack(
                    [
                        _matrix([v[m] for v in g], qids, group)
                        for g, group in zip(vals, cond_runs[meth])
                    ]
                )
                mats[(meth, m)] = c
                fig = evaluate(f, c, resamples=resamples, key=f"{share}:{meth}:{m}")
                rows.append(
                    {
                        "share": share,
                        "method": meth,
                        "measure": m,
                        "share_kept": float(np.mean(kept[meth])),
                        "share_kept_range": [float(min(kept[meth])), float(max(kept[meth]))],
                        **fig,
                    }
                )
        for m in MEASURES:
            f = np.array([[full[lab][m][q] for q in qids] for lab in labels])
            for a, b in (("rrf", "random"), ("loo", "random"), ("lfo", "random")):
                comps.append(
                    {
                        "share": share,
                        "measure": m,
                        "a": a,
                        "b": b,
                        **compare_conditions(
                            f,
                            mats[(a, m)],
                            mats[(b, m)],
                            resamples=resamples,
                            key=f"{share}:{a}-{b}:{m}",
                        ),
                    }
                )
    from ..sets.build import set_digests

    return {
        "about": "membench q2d: Q2D-Web's sub-sampling test on membench's sets "
        "(membench.analysis.q2d; docs/pooling.md)",
        "spec": {
            "systems": [s.__dict__ for s in spec.systems],
            "modalities": list(spec.modalities),
            "shares": list(spec.shares),
            "seeds": spec.seeds,
            "depth": spec.depth,
            "rrf_k": spec.rrf_k,
            "split": spec.split,
            "headline": spec.headline,
        },
        "sets_dir": _shown(sets_dir),
        "set_sha256": set_digests(sets_dir),
        "queries": len(qids),
        "resamples": resamples,
        "figures": rows,
        "comparisons": comps,
        "systems": systems,
    }


def _shown(p: Path) -> str:
    """A path as q2d.json records it: relative to the repository when inside it."""
    from ..core.paths import REPO_ROOT

    try:
        return str(Path(p).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(p)


def _fmt_ci(v: float | None, ci: list, nd: int = 2, sign: str = "+") -> str:
    if v is None:
        return "—"
    lo, hi = ci
    f = f"{{:{sign}.{nd}f}}"
    return f"{f.format(v)} [{f.format(lo)}, {f.format(hi)}]" if lo is not None else f.format(v)


#: the measures of the printed (README) table; q2d.json and notebook 07 hold all of MEASURES
TABLE_MEASURES = ("recall@1000", "recall@100", "ndcg@10")


METHOD_NAMES = {
    "rrf": "RRF pool (all systems)",
    "loo": "RRF pool without the system",
    "lfo": "RRF pool without the system's family",
    "random": "random",
}


def table_rows(
    result: dict[str, Any], measures: Sequence[str] | None = None
) -> list[dict[str, Any]]:
    """The README table's rows: share, method, share kept, per measure the inflation and tau
    with intervals, n."""
    measures = list(measures or TABLE_MEASURES)
    out = []
    by = {(r["share"], r["method"], r["measure"]): r for r in result["figures"]}
    for share in result["spec"]["shares"]:
        for meth in METHODS:
            r0 = by[(share, meth, measures[0])]
            row = {
                "share": share,
                "method": METHOD_NAMES[meth],
                "share kept": r0["share_kept"],
                "sub-corpora": r0["sub_corpora"],
            }
            for m in measures:
                r = by[(share, meth, m)]
                row[f"{m} inflation (points)"] = _fmt_ci(
                    r["inflation_points"], r["inflation_ci95"], 2
                )
                row[f"{m} tau"] = _fmt_ci(r["kendall_tau"], r["kendall_tau_ci95"], 2, "")
            row["n (queries x systems)"] = f"{r0['queries']} x {r0['systems']}"
            out.append(row)
    return out


def format_table(result: dict[str, Any], measures: Sequence[str] | None = None) -> str:
    """:func:`table_rows` as a Markdown table."""
    rows = table_rows(result, measures)
    if not rows:
        return "(no figures)"
    cols = list(rows[0])
    lines = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" for _ in cols) + "|"]
    for r in rows:
        cells = [
            f"{v:.3f}" if isinstance(v, float) and k == "share kept" else str(v)
            for k, v in r.items()
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figures_frame(result: dict[str, Any], measure: str | None = None):
    """The figures as a DataFrame (one row per share, method and measure; interval columns
    as ``membench.report.tables.show`` reads them)."""
    import pandas as pd

    rows = []
    for r in result["figures"]:
        if measure and r["measure"] != measure:
            continue
        rows.append(
            {
                "share": r["share"],
                "method": METHOD_NAMES[r["method"]],
                "measure": r["measure"],
                "share kept": r["share_kept"],
                "inflation (points)": r["inflation_points"],
                "inflation (points)_ci95_lo": r["inflation_ci95"][0],
                "inflation (points)_ci95_hi": r["inflation_ci95"][1],
                "Kendall tau": r["kendall_tau"],
                "Kendall tau_ci95_lo": r["kendall_tau_ci95"][0],
                "Kendall tau_ci95_hi": r["kendall_tau_ci95"][1],
                "sub-corpora": r["sub_corpora"],
                "systems": r["systems"],
                "queries": r["queries"],
            }
        )
    return pd.DataFrame(rows)


def systems_frame(result: dict[str, Any], measure: str):
    """Each system's mean ``measure`` on the full corpus and on each share's sub-corpora (rrf,
    its own leave-one-out pool, the mean over the random ones), with its rank (1 = best)."""
    import pandas as pd

    rows = []
    for lab, d in result["systems"].items():
        row = {"system": lab, "full": d["full"][measure]}
        for share in result["spec"]["shares"]:
            for meth in METHODS:
                row[f"{share:.2f} {meth}"] = d[share_dir(share)][meth][measure]
        rows.append(row)
    df = pd.DataFrame(rows).set_index("system")
    return df.sort_values("full", ascending=False)


def plot_q2d(result: dict[str, Any], measures: Sequence[str] | None = None):
    """Inflation and Kendall's tau against the share kept, per method (error bars: the 95%
    intervals), one column per measure."""
    import matplotlib.pyplot as plt

    measures = list(measures or MEASURES)
    fig, axes = plt.subplots(2, len(measures), figsize=(3.6 * len(measures), 6.2), squeeze=False)
    by = {(r["share"], r["method"], r["measure"]): r for r in result["figures"]}
    shares = result["spec"]["shares"]
    for j, m in enumerate(measures):
        for meth, mark in zip(METHODS, ("o", "s", "D", "^")):
            rs = [by[(s, meth, m)] for s in shares]
            x = [r["share_kept"] for r in rs]
            for i, (key, ci) in enumerate(
                (("inflation_points", "inflation_ci95"), ("kendall_tau", "kendall_tau_ci95"))
            ):
                y = [r[key] if r[key] is not None else float("nan") for r in rs]
                lo = [yy - (r[ci][0] if r[ci][0] is not None else yy) for yy, r in zip(y, rs)]
                hi = [(r[ci][1] if r[ci][1] is not None else yy) - yy for yy, r in zip(y, rs)]
                axes[i][j].errorbar(
                    x, y, yerr=[lo, hi], marker=mark, capsize=3, label=METHOD_NAMES[meth]
                )
        axes[0][j].set_title(m)
        axes[0][j].axhline(0, color="#888", lw=0.8)
        axes[1][j].axhline(1, color="#888", lw=0.8)
        axes[1][j].set_xlabel("share of the pooled items kept")
    axes[0][0].set_ylabel("inflation over the full corpus (points)")
    axes[1][0].set_ylabel("Kendall tau vs the full corpus")
    axes[0][-1].legend(fontsize=8)
    fig.tight_layout()
    return fig


def comparisons_frame(result: dict[str, Any], measure: str | None = None):
    """Random against the RRF pools, paired on the same resampled queries
    (:func:`compare_conditions`): how many more points random inflates, and how much less its
    tau is, with intervals and one-sided bootstrap p-values."""
    import pandas as pd

    rows = []
    for c in result.get("comparisons", []):
        if measure and c["measure"] != measure:
            continue
        rows.append(
            {
                "share": c["share"],
                "measure": c["measure"],
                "compared": f"{METHOD_NAMES[c['b']]} vs {METHOD_NAMES[c['a']]}",
                "extra inflation (points)": c["inflation_diff"],
                "extra inflation (points)_ci95_lo": c["inflation_diff_ci95"][0],
                "extra inflation (points)_ci95_hi": c["inflation_diff_ci95"][1],
                "p (extra <= 0)": c["inflation_diff_p_le_0"],
                "tau lost": c["tau_diff"],
                "tau lost_ci95_lo": c["tau_diff_ci95"][0],
                "tau lost_ci95_hi": c["tau_diff_ci95"][1],
                "p (tau lost <= 0)": c["tau_diff_p_le_0"],
            }
        )
    return pd.DataFrame(rows)


def load_result(out: str | os.PathLike) -> dict[str, Any]:
    """``OUT/q2d.json`` (what the notebook and README table read)."""
    return read_json_file(Path(out) / "q2d.json", dict, "membench q2d's result (q2d.json)")


__all__ = [
    "MEASURES",
    "METHODS",
    "Spec",
    "SystemSpec",
    "collect",
    "compare_conditions",
    "comparisons_frame",
    "evaluate",
    "figures_frame",
    "format_table",
    "kendall_tau_b",
    "load_result",
    "per_query",
    "plot_q2d",
    "read_spec",
    "run_experiment",
    "systems_frame",
    "table_rows",
]
