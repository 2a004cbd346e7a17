"""The summary at the top of every report page: the gates per modality as pass/fail badges
(value, 95% interval, n/denominator) and what to look at next.

:func:`next_steps` reads a ``metrics.json`` and names, worst first, the failing gates with the
page that shows why (03 for slices and the threshold sweep, 04 for the cases), the gates that
cannot be judged (0/0: n/a, never a pass), and the scopes whose interval is wide because n is
small. The thresholds come from the measure registry (:mod:`membench.metrics.measures`).
Everything returned is plain text; :func:`summary_html` escapes it. Touches nothing.
"""

from __future__ import annotations

from typing import Any

from .escape import esc
from .tables import fmt_interval, gate_badges, gate_rows

SMALL_N = 30
# which page explains a failing gate
WHERE = {
    "recall@10": "03 (which sources, holders and as_of buckets miss) and 04 (the misses, case "
                 "by case)",
    "false_recall_rate": "04 (the false recalls, case by case) and 03 (the threshold sweep: "
                         "where the cartridge threshold would have to be)",
    "temporal_correctness": "04 (the evidence observed after as_of) and 03 (leakage by "
                            "derivation)",
    "holder_correctness": "04 (the evidence of other holders) and 03 (leakage by derivation)",
    "abstain_rate_answerable": "03 (the threshold sweep and the answerable share kept at false "
                               "recall <= 0.10: what the abstention score allows) and 04 (the "
                               "abstentions on answerable items, case by case)",
}


def _margin(r: dict) -> float:
    """How far a value is from its gate, relative to the gate (negative: failing)."""
    v, t = r["value"], r["threshold"]
    if v is None:
        return float("inf")
    d = (v - t) if r["op"] == ">=" else (t - v)
    return d / max(abs(t), 1e-9)


def next_steps(metrics: dict[str, Any], *, limit: int = 6) -> list[str]:
    """What to look at next, most urgent first (plain text, at most ``limit`` lines)."""
    rows = gate_rows(metrics)
    failing = sorted((r for r in rows if r["result"].startswith("FAIL")),
                     key=lambda r: (not r.get("why"), _margin(r)))
    out = []
    for r in failing:
        if r.get("why"):        # silent: the value passes, the abstention does not
            out.append(f"{r['scope']}: {r['metric']} = "
                       f"{fmt_interval(r['value'], r['lo'], r['hi'])} (n={r['n']}/"
                       f"{r['denominator']}) is FAIL (silent): "
                       f"{r['why'].removeprefix('silent: ')}. See "
                       f"{WHERE['abstain_rate_answerable']}.")
            continue
        out.append(f"{r['scope']}: {r['metric']} = "
                   f"{fmt_interval(r['value'], r['lo'], r['hi'])} (n={r['n']}/"
                   f"{r['denominator']}) misses its gate {r['op']} {r['threshold']}: see "
                   f"{WHERE.get(r['metric'], '03')}.")
    na = [r for r in rows if r["result"] == "n/a"]
    if na:
        out.append("Not judged (0 items in the denominator, n/a, not a pass): "
                   + ", ".join(f"{r['scope']} {r['metric']}" for r in na) + ".")
    small = sorted({(r["scope"], r["denominator"]) for r in rows
                    if r["denominator"] is not None and 0 < r["denominator"] < SMALL_N
                    and r["scope"] != "all"}, key=lambda x: x[1])
    if small:
        out.append("Small denominators, wide intervals (read the interval, not the value): "
                   + ", ".join(f"{s} n={n}" for s, n in small) + ".")
    if not failing:
        out.insert(0, "Every judged gate passes; page 05 (when present) compares systems "
                      "item by item.")
    if len(out) > limit:
        more = len(out) - limit + 1
        out = out[:limit - 1] + [f"… and {more} more (the gates table on page 02 lists all)."]
    return out


def summary_html(metrics: dict[str, Any] | None, label: str, *, missing: str = "") -> str:
    """The page's summary block: gate badges and the next steps, every data string escaped.
    ``metrics=None`` (no metrics.json): says so (``missing``: why)."""
    if metrics is None:
        return (f'<section class="mb-summary" id="membench-summary"><h2>Summary · {esc(label)}'
                f"</h2><p>No metrics for this run{': ' + esc(missing) if missing else ''}."
                "</p></section>")
    rows = gate_rows(metrics)
    n_pass = sum(r["result"] == "PASS" for r in rows)
    n_fail = sum(r["result"].startswith("FAIL") for r in rows)
    n_na = len(rows) - n_pass - n_fail
    steps = "".join(f"<li>{esc(s)}</li>" for s in next_steps(metrics))
    return (f'<section class="mb-summary" id="membench-summary"><h2>Summary · {esc(label)}</h2>'
            f"<p><b>{n_pass} of {len(rows)} gates pass</b>, {n_fail} fail, {n_na} n/a "
            "(value [95% bootstrap interval], n/denominator).</p>"
            + gate_badges(metrics)
            + f"<h3>What to look at next</h3><ul>{steps}</ul></section>")


def compare_summary_html(per_run: list[tuple[str, dict[str, Any] | None]]) -> str:
    """The summary of a comparison page: each run's gate badges, one block per run."""
    parts = ['<section class="mb-summary" id="membench-summary"><h2>Summary · '
             + esc(" vs ".join(lab for lab, _ in per_run)) + "</h2>"]
    for lab, m in per_run:
        if m is None:
            parts.append(f"<p>{esc(lab)}: no metrics.json</p>")
            continue
        rows = gate_rows(m)
        n_pass = sum(r["result"] == "PASS" for r in rows)
        parts.append(f"<h3>{esc(lab)}: {n_pass} of {len(rows)} gates pass</h3>"
                     + gate_badges(m))
    parts.append("<h3>What to look at next</h3><ul><li>The forest plot of paired differences: "
                 "an interval that excludes 0 is a difference the items support; the full "
                 "table of paired tests is in the appendix.</li></ul></section>")
    return "".join(parts)


__all__ = ["compare_summary_html", "next_steps", "summary_html"]
