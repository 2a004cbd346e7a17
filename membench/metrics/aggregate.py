"""From per-item scores to ``metrics.json``: slices, n / denominator, bootstrap intervals,
gates and alternative judgment sets (SPEC section 7).

Output shape (the file contract)::

    {
      "<modality>": {metric: {"value", "n", "denominator", "ci95": [lo, hi]}, ...},  # each present
      "all": {...},
      "by_source": {"<source key>": {metric: {...}}},     # source key = query_id before ':'
      "gates": [{"metric", "scope", "op", "threshold", "value", "pass"}, ...],
      "judgment_sets": {"<name>": {"<modality>" | "all": {metric: {...}}}},
      "tie_breaking": "...",
      "definitions": {metric: "..."},
    }

``denominator`` is the number of annotated items the metric is defined over in that slice
(answerable items for recall, MRR, nDCG, abstention and cartridge recall; unanswerable items for
false recall; all items for temporal/holder correctness and latency). ``n`` is the number of
items the value is computed from: equal to the denominator for every mean (an item without a
run line counts, as a miss), and the number of items with a run line for latency. When the
denominator is 0 the value and the interval are null, never a made-up 0; a gate on a null
value has ``"pass": null``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import progress
from ..modalities import MODALITIES
from ..run.protocol import TIE_BREAKING
from .bootstrap import N_RESAMPLES, SEED, bootstrap_ci
from .latency import percentile
from .measures import (
    BY_NAME,
    GATES,
    JUDGMENT_MEASURES,
    LATENCY_PERCENTILES,
    MEAN_MEASURES,
    METRICS,
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
    "not one to one (docs/runs.md).")


def _entry(value: float | None, n: int, denominator: int,
           ci: tuple[float | None, float | None]) -> dict[str, Any]:
    return {"value": value, "n": int(n), "denominator": int(denominator), "ci95": [ci[0], ci[1]]}


def mean_entry(values: np.ndarray, key: str, *, seed: int = SEED,
               n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """A mean metric over the non-NaN entries of ``values`` (NaN = outside the denominator)."""
    v = values[~np.isnan(values)]
    if v.size == 0:
        return _entry(None, 0, 0, (None, None))
    return _entry(float(v.mean()), v.size, v.size,
                  bootstrap_ci(v, key, seed=seed, n_resamples=n_resamples))


def latency_entry(latency: np.ndarray, q: float, key: str, *, seed: int = SEED,
                  n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    v = latency[~np.isnan(latency)]
    return _entry(percentile(v, q), v.size, latency.size,
                  bootstrap_ci(v, key, statistic=q, seed=seed, n_resamples=n_resamples))


def slice_metrics(scores: ItemScores, mask: np.ndarray, name: str, *, seed: int = SEED,
                  n_resamples: int = N_RESAMPLES) -> dict[str, dict[str, Any]]:
    """All twelve metrics over the items selected by ``mask``."""
    out = {m: mean_entry(scores.values[m][mask], f"{name}|{m}", seed=seed, n_resamples=n_resamples)
           for m in MEAN_MEASURES}
    for m, q in LATENCY_PERCENTILES.items():
        out[m] = latency_entry(scores.latency_ms[mask], q, f"{name}|{m}", seed=seed,
                               n_resamples=n_resamples)
    return out


def judgment_entries(scores: ItemScores, name: str, mask: np.ndarray, scope: str, *,
                     seed: int = SEED, n_resamples: int = N_RESAMPLES) -> dict[str, dict]:
    """Every measure computed per judgment set, under alternative set ``name``, over the items
    of ``mask`` the set judges (NaN elsewhere), keyed ``judgments:<name>:<scope>|<metric>``
    for the bootstrap: ``metrics.json["judgment_sets"][name][scope]``."""
    vals = scores.judgments[name]
    return {m: mean_entry(vals[m][mask], f"judgments:{name}:{scope}|{m}", seed=seed,
                          n_resamples=n_resamples) for m in JUDGMENT_MEASURES}


def _modalities(present: list[str]) -> list[str]:
    return [m for m in MODALITIES if m in set(present)] + sorted(set(present) - set(MODALITIES))


def evaluate_gates(result: dict[str, Any], scopes: list[str]) -> list[dict[str, Any]]:
    """Every gate of the measure registry, per scope: value, PASS / FAIL, or ``None`` when the
    value is null (no items)."""
    gates = []
    for scope in scopes:
        for metric, op, threshold in GATES:
            value = result[scope][metric]["value"]
            gates.append({"metric": metric, "scope": scope, "op": op, "threshold": threshold,
                          "value": value, "pass": BY_NAME[metric].gate.passes(value)})
    return gates


def aggregate(scores: ItemScores, *, seed: int = SEED,
              n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
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
    n_slices = len(present) + 1 + len(sources) + sum(
        len(_modalities(list(mods[c]))) + 1 for c in judged.values())
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
    result["tie_breaking"] = TIE_BREAKING
    result["definitions"] = dict(DEFINITIONS)
    return result


def atom_level_block(scores: ItemScores, *, seed: int = SEED,
                     n_resamples: int = N_RESAMPLES) -> dict[str, Any]:
    """``metrics.json["atom_level"]``: the atom-level measures (:mod:`.atom_level`) per
    modality and over all items, each over the answerable items, with n, denominator and a
    bootstrap interval, and what the view is."""
    if not scores.atom_level:
        return {}
    mods = np.asarray(scores.modality, dtype=object)
    out: dict[str, Any] = {"about": ATOM_LEVEL_ABOUT}
    for scope in [*_modalities(list(scores.modality)), "all"]:
        mask = np.ones(len(scores), dtype=bool) if scope == "all" else mods == scope
        out[scope] = {m: mean_entry(v[mask], f"atom_level:{scope}|{m}", seed=seed,
                                    n_resamples=n_resamples)
                      for m, v in scores.atom_level.items()}
    return out


def _fmt(v: float | None, metric: str) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.2f}" if metric.startswith("latency") else f"{v:.4f}"


def submission_banner(metrics: dict[str, Any]) -> list[str]:
    """The lines that head every display of a run's figures that are not a valid submission
    (the system saw the gold; the run is read PARTIAL); ``[]`` for a valid one."""
    sub = metrics.get("submission") or {}
    if sub.get("valid", True):
        return []
    return ["NOT A VALID SUBMISSION" + (f" ({sub['label']})" if sub.get("label") else "") + ":",
            *(f"  {r}" for r in sub.get("reasons", [])), ""]


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
            verdict = {True: "PASS", False: "FAIL", None: "n/a (no items)"}[g["pass"]]
            lines.append(f"  {g['scope']:<16} {g['metric']:<{w}} {g['op']} {g['threshold']:<5} "
                         f"value {_fmt(g['value'], g['metric']):>8}  {verdict}")
    return "\n".join(lines).rstrip() + "\n"
