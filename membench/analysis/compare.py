"""Comparing systems on the same items (SPEC section 8: "compare systems").

:func:`compare_runs` loads several run directories, checks that they are comparable (same
split, same set files by sha256, same evaluated query ids: a clear :class:`ComparisonError`
otherwise) and returns a :class:`Comparison`:

* ``summary``: per scope (each modality, then ``all``), system and metric: value, n,
  denominator, 95% interval (:func:`membench.metrics.aggregate.slice_metrics`, the numbers of
  each run's metrics.json);
* ``pairs``: paired tests for every pair of systems, per scope, on recall@10, ndcg@10, mrr and
  false_recall_rate (:func:`paired_test`: mean difference, paired bootstrap interval and p,
  sign-flip p, by holder from ``MIN_HOLDERS_CI`` holders, ``p_perm_holm`` over the table); the
  abstention-order statistics come from :func:`membench.metrics.abstention.paired_difference`;
* ``first_stage``: recall@1000 against nDCG@10 per system and modality, as in Q2D-Web.

``judgment_set`` reads everything under one judgment set (``"gold"`` by default): the measures
computed per judgment set are that set's, over the items it judges, and the paired-test keys
are prefixed ``judgments:<name>:``. :func:`best_systems` names the best system per measure.
Reads run directories and the sets folder only; writes nothing. docs/metrics.md ("Paired tests:
resampled by holder") says how the tests resample and are seeded, and why.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from ..core import progress
from ..core.errors import MembenchError
from ..core.paths import resolve_user_path
from ..metrics import METRICS, SEED, abstention
from ..metrics.aggregate import judgment_entries, slice_metrics
from ..metrics.bootstrap import check_resamples
from ..metrics.measures import (
    ALL_SILENT,
    HEADLINE,
    JUDGMENT_MEASURES,
    MAX_FALSE_RECALL,
    ORDERING_MEASURES,
    PAIRED_METRICS,
    RANKED_HEADLINE,
    never_best,
    silence_of,
)
from ..metrics.rundir import RunDir, read_meta
from ..metrics.score import PRIMARY
from ..modalities import MODALITIES
from ..sets.audit import MIN_HOLDERS_CI
from .frames import item_frame, judgment_sets, judgment_view, metric_values
from .paired import (  # noqa: F401
    N_PAIRED_RESAMPLES,
    _paired_test,
    holder_codes,
    holm,
    ordering_difference,
    paired_test,
    unit_note,
    unit_span,
)

#: resamples of an abstention-order difference in :func:`best_systems` (as compare_runs'
#: default ``ordering_resamples``: each draw re-sorts every system's items)
N_ORDERING_RESAMPLES = 2_000


class ComparisonError(MembenchError):
    """Runs that cannot be compared item by item."""


@dataclass
class Comparison:
    labels: list[str]
    run_dirs: list[str]
    runs: list[RunDir] = field(repr=False)
    items: dict[str, Any] = field(repr=False)  # label -> item frame
    summary: Any = None  # long DataFrame
    pairs: Any = None  # DataFrame
    first_stage: Any = None  # DataFrame
    judgment_set: str = PRIMARY  # the set relevance is read under
    base_items: dict[str, Any] = field(default_factory=dict, repr=False)  # frames under gold

    def table(
        self,
        metrics: list[str] | tuple[str, ...] | None = None,
        *,
        ci: bool = True,
        digits: int = 4,
    ):
        """Side by side: one row per (scope, metric), per system ``value`` (rounded to
        ``digits``) and ``n/den`` (and the 95% interval when ``ci``)."""
        import pandas as pd

        s = self.summary
        if metrics:
            s = s[s["metric"].isin(list(metrics))]
        cols: dict[tuple[str, str], Any] = {}
        for lab in self.labels:
            g = s[s["system"] == lab].set_index(["scope", "metric"])
            cols[(lab, "value")] = g["value"].astype(float).round(digits)
            cols[(lab, "n/den")] = g["n"].astype(str) + "/" + g["denominator"].astype(str)
            if ci:
                cols[(lab, "ci95")] = [
                    _fmt_ci(lo, hi) for lo, hi in zip(g["ci95_lo"], g["ci95_hi"])
                ]
        out = pd.DataFrame(cols)
        order = {m: i for i, m in enumerate(METRICS)}
        scopes = {m: i for i, m in enumerate([*MODALITIES, "all"])}
        idx = sorted(out.index, key=lambda k: (scopes.get(k[0], 99), order.get(k[1], 99)))
        return out.loc[idx]


def _fmt_ci(lo, hi) -> str:
    if lo is None or hi is None or (isinstance(lo, float) and np.isnan(lo)):
        return "-"
    return f"[{lo:.3f}, {hi:.3f}]"


def _labels(runs: list[RunDir]) -> list[str]:
    """Each run's :attr:`RunDir.label` (so NOT A VALID SUBMISSION and PARTIAL show in every
    table), with its directory's name where two runs share a system."""
    names = [r.system for r in runs]
    labels = []
    for i, r in enumerate(runs):
        lab = r.label if names.count(r.system) == 1 else f"{r.label}@{r.path.name}"
        while lab in labels:
            lab = f"{lab}#{i}"
        labels.append(lab)
    return labels


def check_metas(metas: list[tuple[Path, dict]]) -> None:
    """Before any scoring: the runs' meta.json agree on the split and the set files'
    sha256; :class:`ComparisonError` naming the runs and the difference."""
    if len(metas) < 2:
        raise ComparisonError("compare needs at least two run directories")
    ref_dir, ref = metas[0]
    for d, m in metas[1:]:
        if m.get("split") != ref.get("split"):
            raise ComparisonError(
                f"different splits: {ref_dir} is {ref.get('split')!r}, {d} is {m.get('split')!r}"
            )
        a, b = ref.get("set_sha256"), m.get("set_sha256")
        if a and b and a != b:
            diff = sorted(f for f in set(a) | set(b) if a.get(f) != b.get(f))
            raise ComparisonError(
                f"different set files: {ref_dir} and {d} were run on sets "
                f"whose sha256 differ ({', '.join(diff)})"
            )


def check_comparable(runs: list[RunDir]) -> None:
    """Same split, same set files (sha256, as recorded by each run; each run's sets as read
    now were checked against its record by :meth:`RunDir.open`), same evaluated query ids;
    :class:`ComparisonError` naming the runs and the difference."""
    check_metas([(r.path, r.meta) for r in runs])
    ref = runs[0]
    ref_ids = set(ref.scores().query_id)
    for r in runs[1:]:
        ids = set(r.scores().query_id)
        if ids != ref_ids:
            only_a = sorted(ref_ids - ids)
            only_b = sorted(ids - ref_ids)
            raise ComparisonError(
                f"different items: {ref.path} evaluates {len(ref_ids)} queries, {r.path} "
                f"{len(ids)}; {len(only_a)} only in the first (e.g. {only_a[:3]}), "
                f"{len(only_b)} only in the second (e.g. {only_b[:3]}); compare runs made "
                "with the same --modality / --limit"
            )


def load_runs(
    run_dirs: list[str | os.PathLike],
    sets_dir: str | os.PathLike | None = None,
    *,
    partial: bool = False,
    final: bool = False,
) -> tuple[list[str], list[RunDir], dict[str, Any]]:
    """Open and check runs for an item-by-item comparison (:func:`check_metas`,
    :func:`check_comparable`): their labels, :class:`RunDir` objects and item frames, every
    frame in the first run's item order."""
    if isinstance(run_dirs, (str, os.PathLike)):
        raise ComparisonError("run_dirs must be a list of run directories")
    paths = [resolve_user_path(d) for d in run_dirs]
    check_metas([(p, read_meta(p)) for p in paths])
    runs = [RunDir.open(p, sets_dir, partial=partial, final=final) for p in paths]
    check_comparable(runs)
    labels = _labels(runs)
    frames = {lab: item_frame(r) for lab, r in zip(labels, runs)}
    order = list(frames[labels[0]]["query_id"])
    for lab in labels[1:]:  # align every frame to the first run's item order
        frames[lab] = frames[lab].set_index("query_id").loc[order].reset_index()
    return labels, runs, frames


def common_judgment_sets(frames: dict[str, Any]) -> list[str]:
    """The judgment sets every compared run can be read under (``"gold"`` first)."""
    sets = [judgment_sets(f) for f in frames.values()]
    return [s for s in sets[0] if all(s in o for o in sets[1:])]


def compare_runs(
    run_dirs: list[str | os.PathLike],
    sets_dir: str | os.PathLike | None = None,
    *,
    metrics: tuple[str, ...] | list[str] = PAIRED_METRICS,
    n_resamples: int = N_PAIRED_RESAMPLES,
    seed: int = SEED,
    ci_resamples: int = 1000,
    partial: bool = False,
    final: bool = False,
    judgment_set: str | None = None,
    ordering_resamples: int | None = None,
) -> Comparison:
    """Load, check and compare runs (see the module docstring). ``n_resamples`` is used by
    the paired tests of per-item measures, ``ordering_resamples`` (default
    ``min(n_resamples, 2000)``: each draw re-orders every stratum) by those of the
    abstention-order statistics (listed in ``metrics`` or not, they are tested unless
    ``ordering_resamples`` is 0); ``ci_resamples`` by the per-system intervals (1000, as
    metrics.json);
    ``partial`` and ``final`` as :meth:`membench.metrics.rundir.RunDir.open`;
    ``judgment_set`` names the set relevance is read under (default: gold)."""
    # Long: ten options and one pass over the measures; each step is a helper already
    import pandas as pd

    check_resamples(n_resamples, "--resamples")
    check_resamples(ci_resamples, "ci_resamples")
    labels, runs, frames = load_runs(run_dirs, sets_dir, partial=partial, final=final)
    js = judgment_set or PRIMARY
    if js not in common_judgment_sets(frames):
        raise ComparisonError(
            f"judgment set {js!r} is not carried by every compared run's "
            f"sets; they share {', '.join(common_judgment_sets(frames))}"
        )
    alt = js != PRIMARY
    base = frames
    frames = {lab: judgment_view(f, js) for lab, f in frames.items()}
    mods = [m for m in MODALITIES if m in set(frames[labels[0]]["modality"])]
    scopes = [*mods, "all"]

    summary = pd.DataFrame(_summary_rows(labels, runs, scopes, js, seed, ci_resamples))
    prefix = f"judgments:{js}:" if alt else ""

    prow = []
    base_mod = frames[labels[0]]["modality"].to_numpy()
    holders = frames[labels[0]]["holder"].to_numpy(dtype=object)
    pairs_of = list(combinations(labels, 2))
    if ordering_resamples is None:
        ordering_resamples = min(n_resamples, 2000)
    if ordering_resamples:  # (0: the abstention statistics are not tested)
        check_resamples(ordering_resamples, "ordering_resamples")
    ordering = list(ORDERING_MEASURES) if ordering_resamples else []
    metrics = [m for m in metrics if m not in ORDERING_MEASURES]
    with progress.step(
        "paired tests",
        total=len(scopes) * (len(metrics) + len(ordering)) * len(pairs_of),
        unit="test",
    ) as bar:
        for scope in scopes:
            mask = np.ones(len(base_mod), bool) if scope == "all" else base_mod == scope
            bar.note(scope)
            for m in metrics:
                for la, lb in pairs_of:
                    va = metric_values(frames[la], m)[mask]
                    vb = metric_values(frames[lb], m)[mask]
                    key = f"{prefix}{scope}|{m}" if m in JUDGMENT_MEASURES else f"{scope}|{m}"
                    t = paired_test(
                        va, vb, key, groups=holders[mask], n_resamples=n_resamples, seed=seed
                    )
                    prow.append(
                        {
                            "scope": scope,
                            "metric": m,
                            "system_a": la,
                            "system_b": lb,
                            "denominator": int((~np.isnan(va)).sum()),
                            **t,
                        }
                    )
                    bar.advance()
            orders = {lab: _ordering(frames[lab], mask) for lab in labels} if ordering else {}
            for m in ordering:
                for la, lb in pairs_of:
                    t = ordering_difference(
                        orders[la],
                        orders[lb],
                        m,
                        f"{scope}|{m}",
                        max_false_recall=MAX_FALSE_RECALL,
                        n_resamples=ordering_resamples,
                        seed=seed,
                    )
                    f = frames[la][mask]
                    den = (
                        int(f["answerable"].sum())
                        if m == abstention.KEPT
                        else int(f["audited"].sum())
                    )
                    prow.append(
                        {
                            "scope": scope,
                            "metric": m,
                            "system_a": la,
                            "system_b": lb,
                            "denominator": den,
                            "unit": "record",
                            "holders": None,
                            **t,
                        }
                    )
                    bar.advance()
    pairs = pd.DataFrame(prow)
    if len(pairs):
        # the abstention-order rows have a bootstrap p only: Holm reads it for them
        pairs["p_perm_holm"] = holm(pairs["p_permutation"].fillna(pairs["p_bootstrap"]).to_numpy())
        pairs["significant_0.05"] = (pairs["p_perm_holm"] < 0.05) & (pairs["p_bootstrap"] < 0.05)
        pairs["n_resamples"] = n_resamples
    return Comparison(
        labels=labels,
        run_dirs=[str(r.path) for r in runs],
        runs=runs,
        items=frames,
        summary=summary,
        pairs=pairs,
        first_stage=_first_stage(summary, labels),
        judgment_set=js,
        base_items=base,
    )


def _summary_rows(
    labels: list[str], runs: list[RunDir], scopes: list[str], js: str, seed: int, ci_resamples: int
) -> list[dict[str, Any]]:
    """:attr:`Comparison.summary`'s rows: per system, scope and measure its figure and
    interval (under judgment set ``js``, its measures too)."""
    alt = js != PRIMARY
    rows = []
    for lab, r in zip(labels, runs):
        mod_arr = np.asarray(r.scores().modality, dtype=object)
        for scope in scopes:
            mask = np.ones(len(mod_arr), bool) if scope == "all" else mod_arr == scope
            entries = slice_metrics(r.scores(), mask, scope, seed=seed, n_resamples=ci_resamples)
            if alt:
                entries.update(
                    judgment_entries(
                        r.scores(), js, mask, scope, seed=seed, n_resamples=ci_resamples
                    )
                )
            for m, e in entries.items():
                rows.append(
                    {
                        "scope": scope,
                        "system": lab,
                        "metric": m,
                        "value": e["value"],
                        "n": e["n"],
                        "denominator": e["denominator"],
                        "ci95_lo": e["ci95"][0],
                        "ci95_hi": e["ci95"][1],
                    }
                )
    return rows


def _first_stage(summary, labels: list[str]):
    """:attr:`Comparison.first_stage`: recall@1000 and nDCG@10 per system and modality, from
    the ``summary``."""
    fs = summary[summary["metric"].isin(["recall@1000", "ndcg@10"]) & (summary["scope"] != "all")]
    first = fs.pivot_table(
        index=["system", "scope"],
        columns="metric",
        values=["value", "n", "ci95_lo", "ci95_hi"],
        aggfunc="first",
    )
    first.columns = [f"{m}" if v == "value" else f"{m}_{v}" for v, m in first.columns]
    first = first.reset_index().rename(columns={"scope": "modality"})
    first = first[
        [
            "system",
            "modality",
            "recall@1000",
            "recall@1000_ci95_lo",
            "recall@1000_ci95_hi",
            "ndcg@10",
            "ndcg@10_ci95_lo",
            "ndcg@10_ci95_hi",
            "ndcg@10_n",
        ]
    ].rename(columns={"ndcg@10_n": "n_answerable"})
    first["n_answerable"] = first["n_answerable"].astype(int)
    rank_sys = {lab: i for i, lab in enumerate(labels)}
    rank_mod = {m: i for i, m in enumerate(MODALITIES)}
    return first.sort_values(
        ["system", "modality"], key=lambda c: c.map(rank_sys if c.name == "system" else rank_mod)
    ).reset_index(drop=True)


def _ordering(frame, mask: np.ndarray) -> abstention.Ordering:
    """The abstention order of an item frame's audited items under ``mask`` (the natives with
    an upstream tell are outside its denominators), within modalities."""
    g = frame[mask & frame["audited"].to_numpy(dtype=bool)]
    return abstention.Ordering(
        g["abstention_score"].to_numpy(dtype=float),
        ~g["abstained"].to_numpy(dtype=bool),
        g["answerable"].to_numpy(dtype=bool),
        g["modality"].to_numpy(dtype=object),
    )


def best_systems(
    scores: dict[str, Any],
    *,
    measures: tuple[str, ...] | list[str] = RANKED_HEADLINE,
    n_resamples: int = N_PAIRED_RESAMPLES,
    seed: int = SEED,
    scope: str = "all",
) -> list[dict[str, Any]]:
    """Which system is best on each of ``measures`` (default: the registry's headline
    measures but the report-only ones, ``false_recall_native``), over the items of ``scope``
    (``all`` or a modality), and by how much.

    ``scores``: label -> :class:`membench.metrics.score.ItemScores` of runs over the same items
    (:func:`check_comparable`; aligned here by query id). Per measure, one dict: ``measure``,
    ``direction``, ``best`` (its label), ``value``, ``tied`` (every label whose value equals
    the best's: several when the lead is shared), ``runner_up`` and ``runner_up_value`` (the
    best system outside ``tied``; ``None`` when every system ties), ``diff`` (best minus
    runner-up, on the items both define), ``diff_ci95`` (paired bootstrap), ``n`` (those
    items), ``p_permutation`` (sign-flip, :func:`paired_test`), ``p_holm`` (Holm over the
    measures tested) and ``significant`` (Holm p and bootstrap p below 0.05), or ``tested``
    False with ``note`` (a latency percentile: a median is not a mean, so it is shown without
    a test; every system tied). An abstention-order measure (``answerable_kept@fr0.10``,
    ``abstention_auc``: :mod:`membench.metrics.abstention`) has no per-item values: its
    difference is tested by :func:`membench.metrics.abstention.paired_difference` (paired
    bootstrap over the items; its bootstrap p enters Holm, as on page 05). A measure the runs
    do not carry is left out."""
    from ..metrics.measures import BY_NAME

    labels = list(scores)
    if len(labels) < 2:
        raise ComparisonError("best_systems needs at least two runs")
    ref, order = _aligned(scores, labels)
    mods = np.asarray(scores[labels[0]].modality, dtype=object)
    mask = np.ones(len(ref), bool) if scope == "all" else mods == scope
    hold = getattr(scores[labels[0]], "holder", None)
    holders = None if hold is None else np.asarray(hold, dtype=object)[order[labels[0]]][mask]

    def ordering(lab: str) -> abstention.Ordering:
        sc = scores[lab]
        o = order[lab]
        keep = mask & np.asarray(sc.audited, dtype=bool)[o]  # the audited items only
        return abstention.Ordering(
            np.asarray(sc.abstention_score, dtype=float)[o][keep],
            (np.asarray(sc.cartridge_size) > 0)[o][keep],
            np.asarray(sc.answerable, dtype=bool)[o][keep],
            np.asarray(sc.modality, dtype=object)[o][keep],
        )

    def per_item(lab: str, m: str) -> np.ndarray | None:
        sc = scores[lab]
        if BY_NAME[m].percentile is not None:
            v = np.asarray(sc.latency_ms, dtype=np.float64)
        elif m in sc.values:
            v = np.asarray(sc.values[m], dtype=np.float64)
        else:
            return None
        return v[order[lab]][mask]

    def silence(lab: str, m: str) -> float | None:
        """The value the silence check of ``m``'s gate reads (None: none, or no items)."""
        comp = silence_of(m)
        v = per_item(lab, comp) if comp else None
        return None if v is None or np.isnan(v).all() else float(np.nanmean(v))

    out: list[dict[str, Any]] = []
    orders: dict[str, abstention.Ordering] = {}
    for m in measures:
        meas = BY_NAME.get(m)
        if meas is None:
            continue
        is_order = m in ORDERING_MEASURES
        if is_order:
            if not all(hasattr(scores[lab], "abstention_score") for lab in labels):
                continue
            if not orders:
                orders.update({lab: ordering(lab) for lab in labels})
            summary = {}
            for lab in labels:
                v = float(abstention.statistic(orders[lab], m, MAX_FALSE_RECALL)[0])
                summary[lab] = None if math.isnan(v) else v
            vals = {}
        else:
            vals = {lab: per_item(lab, m) for lab in labels}
            if any(v is None for v in vals.values()):
                continue
            summary = {lab: _summary_value(v, meas.percentile) for lab, v in vals.items()}
        silent = [
            lab for lab in labels if summary[lab] is not None and never_best(m, silence(lab, m))
        ]
        row = _best_row(m, meas, labels, summary, vals, silent, orders if is_order else None)
        if row is not None and not row.get("all_silent"):
            _test_best(
                row,
                meas,
                vals,
                orders if is_order else None,
                holders,
                f"best|{scope}|{m}",
                n_resamples,
                seed,
            )
        if row is not None:
            out.append(row)
    _holm_best(out)
    return out


def _aligned(scores: dict[str, Any], labels: list[str]) -> tuple[list[str], dict[str, np.ndarray]]:
    """The first run's query ids, and per run the order that aligns its items with them (runs
    over different items: :class:`ComparisonError`)."""
    ref = list(scores[labels[0]].query_id)
    pos = {q: i for i, q in enumerate(ref)}
    order: dict[str, np.ndarray] = {}
    for lab in labels:
        ids = list(scores[lab].query_id)
        if set(ids) != set(ref):
            raise ComparisonError(f"{lab} and {labels[0]} evaluate different items")
        order[lab] = np.argsort([pos[q] for q in ids])
    return ref, order


def _summary_value(v: np.ndarray, percentile: float | None) -> float | None:
    """A system's figure of a measure from its per-item values: their mean, or the
    ``percentile`` (a latency percentile); None without a defined value."""
    ok = v[~np.isnan(v)]
    return (
        None
        if not ok.size
        else float(np.percentile(ok, percentile))
        if percentile is not None
        else float(ok.mean())
    )


def _best_row(
    m: str,
    meas,
    labels: list[str],
    summary: dict[str, float | None],
    vals: dict[str, np.ndarray],
    silent: list[str],
    orders: dict[str, abstention.Ordering] | None,
) -> dict[str, Any] | None:
    """:func:`best_systems`' row of measure ``m`` before its test (``orders``: an
    abstention-order measure's orderings); None when fewer than two systems have a value."""
    ranked = sorted(
        (lab for lab in labels if summary[lab] is not None and lab not in silent),
        key=lambda lab: (
            -summary[lab] if meas.direction == "higher" else summary[lab],
            labels.index(lab),
        ),
    )
    if silent and not ranked:
        return _all_silent_row(m, meas.direction, silent)
    if len(ranked) + len(silent) < 2:
        return None
    best = ranked[0]
    tied = [lab for lab in ranked if abs(summary[lab] - summary[best]) <= 1e-12]
    rest = [lab for lab in ranked if lab not in tied]
    second = rest[0] if rest else None  # the best of the others
    row: dict[str, Any] = {
        "measure": m,
        "direction": meas.direction,
        "best": best,
        "value": summary[best],
        "runner_up": second,
        "runner_up_value": summary[second] if second else None,
        "tied": tied,
        "diff": summary[best] - summary[second] if second else 0.0,
        "diff_ci95": [None, None],
        "n": (
            orders[best].counted(m)
            if orders is not None
            else int((~np.isnan(vals[best]) & ~np.isnan(vals[second or best])).sum())
        ),
        "p_permutation": None,
        "p_bootstrap": None,
        "p_holm": None,
        "significant": False,
        "tested": False,
        "note": "",
        "silent": silent,
        "unit": None,
        "holders": None,
    }
    if len(tied) > 1:
        row["note"] = "a tie: " + ", ".join(tied) + " have the same value"
    if silent and second is None:
        row["note"] = (
            f"the only system not silent: {', '.join(silent)} "
            f"{'is' if len(silent) == 1 else 'are'} FAIL (silent), never best"
        )
    return row


def _test_best(
    row: dict[str, Any],
    meas,
    vals: dict[str, np.ndarray],
    orders: dict[str, abstention.Ordering] | None,
    holders: np.ndarray | None,
    name: str,
    n_resamples: int,
    seed: int,
) -> None:
    """The paired test of a :func:`_best_row` row's best against its runner-up, into the row
    (or the note of why there is none)."""
    m, best, second = row["measure"], row["best"], row["runner_up"]
    if meas.percentile is not None:
        row["note"] = "a percentile, shown without a paired test (the paired tests compare means)"
    elif second is None:
        row["note"] = row["note"] or "every system has the same value"
    else:
        # a tie for the lead: the first of the tied, tested against the next system
        if orders is not None:
            t = ordering_difference(
                orders[best],
                orders[second],
                m,
                name,
                max_false_recall=MAX_FALSE_RECALL,
                n_resamples=min(n_resamples, N_ORDERING_RESAMPLES),
                seed=seed,
            )
            row["note"] = (
                "an abstention-order statistic: paired bootstrap p (no "
                "per-item values to sign-flip), resampled by record"
            )
            row["unit"] = "record"
        else:
            t = paired_test(
                vals[best], vals[second], name, groups=holders, n_resamples=n_resamples, seed=seed
            )
            row["unit"], row["holders"] = t["unit"], t["holders"]
        p_perm = t["p_permutation"]
        row.update(
            {
                "diff": t["diff"],
                "diff_ci95": [t["diff_ci95_lo"], t["diff_ci95_hi"]],
                "n": t["n"],
                "p_bootstrap": t["p_bootstrap"],
                "tested": True,
                "p_permutation": None if p_perm is None or math.isnan(p_perm) else p_perm,
            }
        )


def _holm_best(out: list[dict[str, Any]]) -> None:
    """Holm over :func:`best_systems`' tested rows, into each (``p_holm``, ``significant``)."""
    tested = [r for r in out if r["tested"]]
    # the abstention-order rows have a bootstrap p only: Holm reads it for them (as page 05)
    ps = [
        r["p_permutation"] if r["p_permutation"] is not None else r["p_bootstrap"] for r in tested
    ]
    for r, a in zip(tested, holm(np.array(ps, dtype=float))):
        r["p_holm"] = float(a)
        r["significant"] = bool(a < 0.05 and r["p_bootstrap"] < 0.05)


def _all_silent_row(m: str, direction: str, silent: list[str]) -> dict[str, Any]:
    """:func:`best_systems`' row of a measure on which every system's gate is ``FAIL
    (silent)`` (:func:`membench.metrics.measures.never_best`): no system is named."""
    return {
        "measure": m,
        "direction": direction,
        "best": None,
        "value": None,
        "runner_up": None,
        "runner_up_value": None,
        "tied": [],
        "diff": None,
        "diff_ci95": [None, None],
        "n": 0,
        "p_permutation": None,
        "p_bootstrap": None,
        "p_holm": None,
        "significant": False,
        "tested": False,
        "silent": silent,
        "unit": None,
        "holders": None,
        "all_silent": True,
        "note": f"{ALL_SILENT} ({', '.join(silent)}: FAIL (silent))",
    }


def _by(rows: list[dict[str, Any]], fmt) -> str:
    by: dict[str, list[str]] = {}
    for r in rows:
        by.setdefault(" = ".join(r["tied"]), []).append(fmt(r))
    return "; ".join(f"{lab} on {', '.join(ms)}" for lab, ms in by.items())


def _margin(r: dict[str, Any]) -> str:
    digits = 1 if r["measure"].startswith("latency") else 3
    return f"{r['measure']} ({r['diff']:+.{digits}f} over {r['runner_up']})"


def _units(rows: list[dict[str, Any]]) -> str:
    """How the tested per-item measures of :func:`best_systems`' rows were resampled."""
    per_item = [
        r for r in rows if r["tested"] and r.get("unit") and r["measure"] not in ORDERING_MEASURES
    ]
    if not per_item:
        return "resampled by record"
    out = []
    for unit in ("holder", "record"):
        if not any(r["unit"] == unit for r in per_item):
            continue
        ks = sorted({r.get("holders") for r in per_item if r["unit"] == unit} - {None})
        out.append("resampled " + unit_span(unit, ks[0] if ks else None, ks[-1] if ks else None))
    return "; ".join(out)


def verdict(rows: list[dict[str, Any]]) -> str:
    """Which system is best, in one or two sentences from :func:`best_systems`: the leads a
    paired test supports, the leads it does not, the ties and what was not tested."""
    if not rows:
        return "No headline measure could be compared."
    hushed = [r["measure"] for r in rows if r.get("all_silent")]
    alone = [
        r for r in rows if not r.get("all_silent") and r.get("silent") and r["runner_up"] is None
    ]
    rows = [r for r in rows if not r.get("all_silent") and r not in alone]
    sig = [r for r in rows if r["significant"]]
    lead = [r for r in rows if r["tested"] and not r["significant"]]
    ties = [r["measure"] for r in rows if not r["tested"] and r["runner_up"] is None]
    untested = [r for r in rows if not r["tested"] and r["runner_up"] is not None]
    parts = []
    if hushed:
        parts.append(
            f"{ALL_SILENT[0].upper()}{ALL_SILENT[1:]} on {', '.join(hushed)} "
            "(a false recall bought by abstaining is never best)."
        )
    if alone:
        parts.append(
            "Best as the only system not silent: " + _by(alone, lambda r: r["measure"]) + "."
        )
    if sig:
        parts.append("Significantly best: " + _by(sig, _margin) + ".")
    if lead:
        parts.append(
            ("Ahead, but not significantly: " if sig else "No lead is significant: ")
            + _by(lead, _margin)
            + "."
        )
    if ties:
        parts.append("Every system the same: " + ", ".join(ties) + ".")
    if untested:
        parts.append("Not tested (a percentile): " + _by(untested, _margin) + ".")
    n = max((r["n"] for r in rows if r["tested"]), default=None)
    parts.append(
        f"(Paired tests of the best against the runner-up on the same items, n up to "
        f"{n}, {_units(rows)}, Holm over {len(sig) + len(lead)} measures.)"
        if n
        else ""
    )
    return " ".join(p for p in parts if p)


def format_comparison(comp: Comparison, *, metrics: list[str] | None = None) -> str:
    """Plain text for ``membench compare``: per scope, each system's value (n/denominator)
    side by side for the headline measures, then the paired differences (diff, interval, Holm
    p) of the compared measures."""
    names = list(metrics) if metrics else list(HEADLINE)
    s = comp.summary[comp.summary["metric"].isin(names)]
    w = max(len(x) for x in [*comp.labels, "metric"]) + 2
    lines = [
        f"{len(comp.labels)} systems: "
        + ", ".join(f"{lab} ({d})" for lab, d in zip(comp.labels, comp.run_dirs))
    ]
    if comp.judgment_set != PRIMARY:
        lines.append(
            f"judgment set: {comp.judgment_set} (recall, MRR, nDCG and cartridge "
            "recall over the items it judges; other measures as under gold)"
        )
    for scope in [*MODALITIES, "all"]:
        g = s[s["scope"] == scope]
        if g.empty:
            continue
        lines.append(f"\n{scope}")
        lines.append(f"  {'metric':<24}" + "".join(f"{lab:>{max(w, 22)}}" for lab in comp.labels))
        for m in names:
            row = g[g["metric"] == m].set_index("system")
            if row.empty:
                continue
            cells = []
            for lab in comp.labels:
                r = row.loc[lab]
                v = (
                    "-"
                    if r["value"] is None
                    or (isinstance(r["value"], float) and math.isnan(r["value"]))
                    else f"{r['value']:.4f}"
                )
                cells.append(f"{v} ({int(r['n'])}/{int(r['denominator'])})")
            lines.append(f"  {m:<24}" + "".join(f"{c:>{max(w, 22)}}" for c in cells))
    p = comp.pairs
    if p is not None and len(p):
        if metrics:
            p = p[p["metric"].isin(names)]
        lines.append(
            "\npaired differences (a - b), 95% bootstrap interval, permutation p "
            "(Holm over all rows); * = significant at 0.05 by both tests; "
            f"resampled by holder where a scope has at least {MIN_HOLDERS_CI} holders "
            "(the sign flips per holder, the bootstrap draws holders), else by record"
        )
        for r in p.to_dict("records"):
            if r["n"] == 0:
                continue
            star = "*" if r["significant_0.05"] else " "
            lines.append(
                f"  {star} {r['scope']:<14} {r['metric']:<18} {r['system_a']} - "
                f"{r['system_b']}: {r['diff']:+.4f} [{r['diff_ci95_lo']:+.4f}, "
                f"{r['diff_ci95_hi']:+.4f}] n={r['n']} p_holm={r['p_perm_holm']:.4f} "
                f"{_unit_tag(r)}"
            )
    return "\n".join(lines) + "\n"


def _unit_tag(r: dict[str, Any]) -> str:
    """A pairs row's resampling unit, short: ``by holder (34)``, ``by record``."""
    h = r.get("holders")
    h = None if h is None or (isinstance(h, float) and math.isnan(h)) else int(h)
    if r.get("unit") == "holder":
        return f"by holder ({h})"
    return "by record" if h is None else f"by record ({h} holders)"


def plot_first_stage(comp: Comparison, *, cols: int = 3):
    """First-stage recall (recall@1000, x) vs early precision (nDCG@10, y), as in Q2D-Web:
    one panel per modality (its title gives n = the answerable items, the same for every
    system), one point per system with its 95% intervals as error bars."""
    import matplotlib.pyplot as plt

    fs = comp.first_stage.dropna(subset=["recall@1000", "ndcg@10"])
    mods = [m for m in MODALITIES if m in set(fs["modality"])]
    if not mods:
        raise ComparisonError("no modality has answerable items: nothing to plot")
    rows = math.ceil(len(mods) / cols)
    fig, axes = plt.subplots(
        rows, min(cols, len(mods)), figsize=(4.2 * min(cols, len(mods)), 3.8 * rows), squeeze=False
    )
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for ax, m in zip(axes.flat, mods):
        g = fs[fs["modality"] == m]
        for k, lab in enumerate(comp.labels):
            r = g[g["system"] == lab]
            if r.empty:
                continue
            r = r.iloc[0]
            x, y = r["recall@1000"], r["ndcg@10"]
            ax.errorbar(
                [x],
                [y],
                xerr=[[x - r["recall@1000_ci95_lo"]], [r["recall@1000_ci95_hi"] - x]],
                yerr=[[y - r["ndcg@10_ci95_lo"]], [r["ndcg@10_ci95_hi"] - y]],
                fmt="osD^v<>"[k % 7],
                markersize=max(4, 10 - 2 * k),
                alpha=0.85,
                color=colors[k % len(colors)],
                capsize=3,
                label=lab,
            )
        ax.plot([0, 1], [0, 1], color="0.85", lw=1, ls=":")
        ax.set_xlim(-0.03, 1.03)
        ax.set_ylim(-0.03, 1.03)
        ax.set_title(f"{m} (n={int(g['n_answerable'].iloc[0])} answerable)", fontsize=10)
        ax.set_xlabel("recall@1000")
        ax.set_ylabel("nDCG@10")
    for ax in list(axes.flat)[len(mods) :]:
        ax.set_visible(False)
    handles, labels = axes.flat[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8)
    fig.suptitle(
        f"first-stage recall vs early precision ({len(comp.labels)} systems, "
        f"{len(comp.items[comp.labels[0]])} items; bars: 95% intervals)"
    )
    fig.tight_layout(rect=(0, 0, 0.9, 0.95))
    return fig


__all__ = [
    "N_PAIRED_RESAMPLES",
    "PAIRED_METRICS",
    "Comparison",
    "ComparisonError",
    "best_systems",
    "check_comparable",
    "check_metas",
    "common_judgment_sets",
    "compare_runs",
    "load_runs",
    "format_comparison",
    "holder_codes",
    "holm",
    "paired_test",
    "plot_first_stage",
    "unit_note",
    "unit_span",
    "verdict",
]
