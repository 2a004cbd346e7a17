"""From per-item scores to ``metrics.json``: slices, n / denominator, bootstrap intervals,
gates and alternative judgment sets (SPEC section 7).

Output shape (the file contract)::

    {
      "<modality>": {metric: {"value", "n", "denominator", "ci95": [lo, hi]}, ...},  # each present
      "all": {...},
      "by_source": {"<source key>": {metric: {...}}},     # source key = query_id before ':'
      "gates": [{"metric", "scope", "op", "threshold", "value", "pass", "silent", "why", ...}],
      "judgment_sets": {"<name>": {"<modality>" | "all": {metric: {...}}}},
      "atom_level": {...},
      "answer_context": {"read", "reason", "unread_records", "unread_items", ...},
      "tie_breaking": "...",
      "definitions": {metric: "..."},
    }

``denominator``: the items a metric is defined over in the slice (the measure's own, in
:mod:`membench.metrics.measures`); ``n``: the items the value is computed from (the
denominator for a mean, where an item without a run line counts as a miss; the items with a run
line for latency; see :mod:`membench.metrics.abstention` for its two). A denominator of 0 gives a
null value and interval, and a gate on it ``"pass": null``. A false-recall gate is not passed by
silence (``silent``, ``why``; ``companion`` the scope's abstention, over
:data:`membench.metrics.measures.MAX_SILENT_ABSTENTION`). docs/metrics.md says what each
denominator is and why. Touches nothing: scores in, a dict out.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..contract.protocol import TIE_BREAKING
from ..core import progress
from ..modalities import MODALITIES
from . import abstention
from .bootstrap import N_RESAMPLES, SEED, bootstrap_ci
from .latency import percentile
from .measures import (
    BY_NAME,
    COST_PERCENTILES,
    GATES,
    JUDGMENT_MEASURES,
    LATENCY_PERCENTILES,
    MAX_FALSE_RECALL,
    MEAN_MEASURES,
    METRICS,
    ORDERING_MEASURES,
    definitions,
)
from .score import ItemScores

DEFINITIONS: dict[str, str] = definitions()
ATOM_LEVEL_ABOUT = (
    "trec_eval's view of the run (membench export: run.trec, qrels.trec): an atom is a "
    "document, relevant (with the highest grade of the gold regions it hits) when it hits a "
    "gold region; recall@k = relevant atoms in the top k / relevant atoms, mrr = recip_rank, "
    "ndcg@10 = ndcg_cut_10 with graded gains; every answerable item counts, one without a "
    "relevant atom as 0. Differs from the region-level figures when atoms and gold regions are "
    "not one to one (docs/runs.md)."
)


def _entry(
    value: float | None, n: int, denominator: int, ci: tuple[float | None, float | None]
) -> dict[str, Any]:
    return {"value": value, "n": int(n), "denominator": int(denominator), "ci95": [ci[0], ci[1]]}


def mean_entry(
    values: np.ndarray, key: str, *, seed: int = SEED, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """A mean metric over the non-NaN entries of ``values`` (NaN = outside the denominator)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return _entry(None, 0, 0, (None, None))
    return _entry(
        float(v.mean()), v.size, v.size, bootstrap_ci(v, key, seed=seed, n_resamples=n_resamples)
    )


def latency_entry(
    latency: np.ndarray, q: float, key: str, *, seed: int = SEED, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    v = latency[~np.isnan(latency)]
    return _entry(
        percentile(v, q),
        v.size,
        latency.size,
        bootstrap_ci(v, key, statistic=q, seed=seed, n_resamples=n_resamples),
    )


def cost_entry(
    values: np.ndarray,
    q: float,
    key: str,
    denominator: int,
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, Any]:
    """A context-cost percentile (as :func:`latency_entry`) over the non-NaN entries of
    ``values``, with the slice's count of items the cost is defined for as denominator."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return _entry(None, 0, denominator, (None, None))
    return _entry(
        percentile(v, q),
        v.size,
        denominator,
        bootstrap_ci(v, key, statistic=q, seed=seed, n_resamples=n_resamples),
    )


#: which items of a slice a context cost is defined for, by its denominator
_COST_ITEMS = {
    "all": None,
    "pictures": ("image", "ui_screenshot"),
    "videos": ("video",),
    "committed": None,
}


def _cost_denominator(scores: ItemScores, mask: np.ndarray, metric: str) -> int:
    den = BY_NAME[metric].denominator
    if den == "committed":
        return int((mask & (np.asarray(scores.cartridge_size) > 0)).sum())
    mods = _COST_ITEMS[den]
    if mods is None:
        return int(mask.sum())
    return int(sum(1 for i in np.flatnonzero(mask) if scores.modality[i] in mods))


def ordering_entries(
    scores: ItemScores,
    mask: np.ndarray,
    name: str,
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, dict[str, Any]]:
    """The abstention-order statistics (:mod:`membench.metrics.abstention`) over the audited
    items of ``mask`` (``ItemScores.audited``: the natives with an upstream tell are outside
    their denominators, as outside false_recall_rate's), compared within each modality, keyed
    ``<name>|<measure>``."""
    mask = mask & scores.audited
    mods = np.asarray(scores.modality, dtype=object)[mask]
    return abstention.entries(
        scores.abstention_score[mask],
        scores.cartridge_size[mask] > 0,
        scores.answerable[mask],
        mods,
        name,
        max_false_recall=MAX_FALSE_RECALL,
        seed=seed,
        n_resamples=n_resamples,
    )


def slice_metrics(
    scores: ItemScores,
    mask: np.ndarray,
    name: str,
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, dict[str, Any]]:
    """Every measure of the registry over the items selected by ``mask``, in its order."""
    out = {
        m: mean_entry(scores.values[m][mask], f"{name}|{m}", seed=seed, n_resamples=n_resamples)
        for m in MEAN_MEASURES
    }
    out.update(ordering_entries(scores, mask, name, seed=seed, n_resamples=n_resamples))
    for m, q in LATENCY_PERCENTILES.items():
        out[m] = latency_entry(
            scores.latency_ms[mask], q, f"{name}|{m}", seed=seed, n_resamples=n_resamples
        )
    for m, (per_item, q) in COST_PERCENTILES.items():
        out[m] = cost_entry(
            scores.values[per_item][mask],
            q,
            f"{name}|{m}",
            _cost_denominator(scores, mask, m),
            seed=seed,
            n_resamples=n_resamples,
        )
    return {m: out[m] for m in METRICS}


def judgment_entries(
    scores: ItemScores,
    name: str,
    mask: np.ndarray,
    scope: str,
    *,
    seed: int = SEED,
    n_resamples: int = N_RESAMPLES,
) -> dict[str, dict]:
    """Every measure computed per judgment set, under alternative set ``name``, over the items
    of ``mask`` the set judges (NaN elsewhere), keyed ``judgments:<name>:<scope>|<metric>``
    for the bootstrap: ``metrics.json["judgment_sets"][name][scope]``."""
    vals = scores.judgments[name]
    return {
        m: mean_entry(
            vals[m][mask], f"judgments:{name}:{scope}|{m}", seed=seed, n_resamples=n_resamples
        )
        for m in JUDGMENT_MEASURES
    }


def _modalities(present: list[str]) -> list[str]:
    return [m for m in MODALITIES if m in set(present)] + sorted(set(present) - set(MODALITIES))


def gate_entry(metric: str, scope: str, block: dict[str, Any]) -> dict[str, Any]:
    """One gate of the registry on one scope's figures ``block`` (``metrics.json[scope]``):
    value, ``pass`` (PASS / FAIL, ``None`` when the value is null: no items), and for a gate
    silence would pass, ``silent``, ``why`` and the ``companion`` value it was judged with."""
    g = BY_NAME[metric].gate
    value = block[metric]["value"]
    row = {"metric": metric, "scope": scope, "op": g.op, "threshold": g.threshold, "value": value}
    if g.silent_if is None:
        row["pass"] = g.passes(value)
        return row
    companion = (block.get(g.silent_if[0]) or {}).get("value")
    ok, why = g.verdict(value, companion)
    row.update(
        {
            "pass": ok,
            "silent": bool(why),
            "why": why,
            "companion": {"metric": g.silent_if[0], "value": companion, "bound": g.silent_if[1]},
        }
    )
    return row


def evaluate_gates(result: dict[str, Any], scopes: list[str]) -> list[dict[str, Any]]:
    """Every gate of the measure registry, per scope (:func:`gate_entry`)."""
    return [gate_entry(metric, scope, result[scope]) for scope in scopes for metric, _, _ in GATES]


def verdict_text(g: dict[str, Any]) -> str:
    """``PASS``, ``FAIL``, ``FAIL (silent)`` or ``n/a`` for a gate entry of metrics.json."""
    if g.get("silent"):
        return "FAIL (silent)"
    return {True: "PASS", False: "FAIL", None: "n/a"}[g["pass"]]


def aggregate(
    scores: ItemScores, *, seed: int = SEED, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """The ``metrics.json`` object for per-item ``scores`` (the slices' bootstrap reports as
    the ``bootstrap`` progress step)."""
    mods = np.asarray(scores.modality, dtype=object)
    srcs = np.asarray(scores.source, dtype=object)
    everything = np.ones(len(scores), dtype=bool)
    present = _modalities(list(scores.modality))
    kw = {"seed": seed, "n_resamples": n_resamples}
    result: dict[str, Any] = {}
    sources = sorted(set(scores.source))
    judged = {name: ~np.isnan(vals["recall@10"]) for name, vals in scores.judgments.items()}
    n_slices = (
        len(present)
        + 1
        + len(sources)
        + sum(len(_modalities(list(mods[c]))) + 1 for c in judged.values())
    )
    with progress.step("bootstrap", total=n_slices, unit="slice") as bar:
        for m in present:
            bar.note(m)
            result[m] = slice_metrics(scores, mods == m, m, **kw)
            bar.advance()
        result["all"] = slice_metrics(scores, everything, "all", **kw)
        bar.advance()
        result["by_source"] = {}
        for s in sources:
            bar.note(f"source {s}")
            result["by_source"][s] = slice_metrics(scores, srcs == s, f"source:{s}", **kw)
            bar.advance()
        result["gates"] = evaluate_gates(result, [*present, "all"])
        js: dict[str, Any] = {}
        for name in sorted(scores.judgments):
            carried = judged[name]
            block: dict[str, Any] = {}
            for scope in [*_modalities(list(mods[carried])), "all"]:
                mask = carried if scope == "all" else carried & (mods == scope)
                block[scope] = judgment_entries(scores, name, mask, scope, **kw)
                bar.advance()
            js[name] = block
    result["judgment_sets"] = js
    result["atom_level"] = atom_level_block(scores, seed=seed, n_resamples=n_resamples)
    result["answer_context"] = dict(scores.content) or {
        "read": False,
        "reason": "scored without a content reader: the answer and context figures are null",
        "unread_records": None,
        "unread_items": {},
    }
    result["tie_breaking"] = TIE_BREAKING
    result["definitions"] = dict(DEFINITIONS)
    return result


def atom_level_block(
    scores: ItemScores, *, seed: int = SEED, n_resamples: int = N_RESAMPLES
) -> dict[str, Any]:
    """``metrics.json["atom_level"]``: the atom-level measures (:mod:`.atom_level`) per
    modality and over all items, each over the answerable items, with n, denominator and a
    bootstrap interval, and what the view is."""
    if not scores.atom_level:
        return {}
    mods = np.asarray(scores.modality, dtype=object)
    out: dict[str, Any] = {"about": ATOM_LEVEL_ABOUT}
    for scope in [*_modalities(list(scores.modality)), "all"]:
        mask = np.ones(len(scores), dtype=bool) if scope == "all" else mods == scope
        out[scope] = {
            m: mean_entry(v[mask], f"atom_level:{scope}|{m}", seed=seed, n_resamples=n_resamples)
            for m, v in scores.atom_level.items()
        }
    return out


def _fmt(v: float | None, metric: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.2f}" if metric.startswith(("latency", "context")) else f"{v:.4f}"


def submission_banner(metrics: dict[str, Any]) -> list[str]:
    """The lines that head every display of a run's figures that are not a valid submission
    (the system saw the gold; the run is read PARTIAL); ``[]`` for a valid one."""
    sub = metrics.get("submission") or {}
    if sub.get("valid", True):
        return []
    return [
        "NOT A VALID SUBMISSION" + (f" ({sub['label']})" if sub.get("label") else "") + ":",
        *(f"  {r}" for r in sub.get("reasons", [])),
        "",
    ]


def format_brief(metrics: dict[str, Any], label: str, *, where: str = "") -> str:
    """A few lines for a log (``make all``): the gates passed and the failing ones, the
    headline figures over all items, and where the full table is (``where``: the run
    directory). :func:`format_table` is the full table."""
    from .measures import HEADLINE

    lines = submission_banner(metrics)
    gates = metrics.get("gates", [])
    fail = [g for g in gates if g["pass"] is False]
    na = sum(1 for g in gates if g["pass"] is None)
    head = (
        f"{label}: {sum(1 for g in gates if g['pass'])} of {len(gates)} gates pass"
        + (f", {len(fail)} fail" if fail else "")
        + (f", {na} n/a" if na else "")
    )
    if fail:
        shown = "; ".join(
            f"{g['scope']} {g['metric']} {_fmt(g['value'], g['metric'])} "
            f"(gate {g['op']} {g['threshold']})"
            for g in fail[:4]
        )
        head += f": {shown}" + (f"; and {len(fail) - 4} more" if len(fail) > 4 else "")
    lines.append(head)
    block = metrics.get("all", {})
    figs = [
        f"{m} {_fmt(e['value'], m)} (n={e['n']})"
        for m in HEADLINE
        if (e := block.get(m)) is not None
    ]
    if figs:
        lines.append("  over all items: " + ", ".join(figs))
    if where:
        lines.append(
            f"  every figure with its 95% interval: membench metrics {where} "
            f"(and {where}/metrics.json, report page 02)"
        )
    return "\n".join(lines) + "\n"


def _figure_line(label: str, m: str, e: dict[str, Any], w: int) -> str:
    """One figure of a ``metrics.json`` as a line of :func:`format_table`."""
    lo, hi = e["ci95"]
    ci = "-" if lo is None else f"[{_fmt(lo, m)}, {_fmt(hi, m)}]"
    nd = f"{e['n']}/{e['denominator']}"
    return f"{label:<20} {m:<{w}} {_fmt(e['value'], m):>10} {nd:>14}  {ci}"


def format_table(metrics: dict[str, Any], *, by_source: bool = False) -> str:
    """A plain-text table: one block per scope (each modality, then all), one row per metric
    with value, n/denominator and the 95% interval; then the gates."""
    scopes = [k for k in metrics if k in MODALITIES] + ["all"]
    blocks: list[tuple[str, dict]] = [(s, metrics[s]) for s in scopes if s in metrics]
    if by_source:
        blocks += [(f"source {k}", v) for k, v in metrics.get("by_source", {}).items()]
    w = max([len("metric")] + [len(m) for m in METRICS])
    lines = submission_banner(metrics)
    lines.append(f"{'scope':<20} {'metric':<{w}} {'value':>10} {'n/denominator':>14}  ci95")
    for scope, block in blocks:
        for m in METRICS:
            e = block.get(m)
            if e is not None:
                lines.append(_figure_line(scope, m, e, w))
        lines.append("")
    js = metrics.get("judgment_sets") or {}
    if js:
        lines.append("judgment sets (the items each set judges; n = those items)")
        for name, block in js.items():
            for scope, entries in block.items():
                for m in METRICS:
                    e = entries.get(m)
                    if e is not None:
                        lines.append(_figure_line(f"{name}:{scope}", m, e, w))
            lines.append("")
    gates = metrics.get("gates", [])
    if gates:
        lines.append("gates")
        for g in gates:
            verdict = verdict_text(g).replace("n/a", "n/a (no items)")
            comp = g.get("companion")
            beside = f"  ({comp['metric']} {_fmt(comp['value'], comp['metric'])})" if comp else ""
            lines.append(
                f"  {g['scope']:<16} {g['metric']:<{w}} {g['op']} {g['threshold']:<5} "
                f"value {_fmt(g['value'], g['metric']):>8}  {verdict}{beside}"
            )
            if g.get("why"):
                lines.append(f"  {'':<16} {g['why']}")
    return "\n".join(lines).rstrip() + "\n"


# the abstention module's names are the registry's (its kept share is read at the gate)
assert set(ORDERING_MEASURES) == {abstention.AUC, abstention.KEPT}, ORDERING_MEASURES
assert abstention.KEPT == f"answerable_kept@fr{MAX_FALSE_RECALL:.2f}", MAX_FALSE_RECALL
