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

from ..metrics.measures import ALL_SILENT
from .escape import esc
from .tables import fmt_interval, fmt_num, gate_badges, gate_rows, th

SMALL_N = 30
# which page explains a failing gate
WHERE = {
    "recall@10": "03 (which sources, holders and as_of buckets miss) and 04 (the misses, case "
    "by case)",
    "false_recall_rate": "04 (the false recalls, case by case) and 03 (the threshold sweep: "
    "where the cartridge threshold would have to be)",
    "temporal_correctness": "04 (the evidence observed after as_of) and 03 (leakage by derivation)",
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
    failing = sorted(
        (r for r in rows if r["result"].startswith("FAIL")),
        key=lambda r: (not r.get("why"), _margin(r)),
    )
    out = []
    for r in failing:
        if r.get("why"):  # silent: the value passes, the abstention does not
            out.append(
                f"{r['scope']}: {r['metric']} = "
                f"{fmt_interval(r['value'], r['lo'], r['hi'])} (n={r['n']}/"
                f"{r['denominator']}) is FAIL (silent): "
                f"{r['why'].removeprefix('silent: ')}. See "
                f"{WHERE['abstain_rate_answerable']}."
            )
            continue
        out.append(
            f"{r['scope']}: {r['metric']} = "
            f"{fmt_interval(r['value'], r['lo'], r['hi'])} (n={r['n']}/"
            f"{r['denominator']}) misses its gate {r['op']} {r['threshold']}: see "
            f"{WHERE.get(r['metric'], '03')}."
        )
    na = [r for r in rows if r["result"] == "n/a"]
    if na:
        out.append(
            "Not judged (0 items in the denominator, n/a, not a pass): "
            + ", ".join(f"{r['scope']} {r['metric']}" for r in na)
            + "."
        )
    small = sorted(
        {
            (r["scope"], r["denominator"])
            for r in rows
            if r["denominator"] is not None
            and 0 < r["denominator"] < SMALL_N
            and r["scope"] != "all"
        },
        key=lambda x: x[1],
    )
    if small:
        out.append(
            "Small denominators, wide intervals (read the interval, not the value): "
            + ", ".join(f"{s} n={n}" for s, n in small)
            + "."
        )
    if not failing:
        out.insert(
            0, "Every judged gate passes; page 05 (when present) compares systems item by item."
        )
    if len(out) > limit:
        more = len(out) - limit + 1
        out = out[: limit - 1] + [f"… and {more} more (the gates table on page 02 lists all)."]
    return out


def run_badge(meta: dict[str, Any] | None) -> str:
    """What ran and whether the run was sealed, as a badge (HTML, escaped): ``sealed run`` for
    a system that answered over HTTP from another process than the one holding the sets,
    ``in-process run (not sealed)`` otherwise, with the identity's kind (docs/runs.md, "What a
    run proves")."""
    if not meta:
        return ""
    ident = meta.get("identity") if isinstance(meta.get("identity"), dict) else {}
    kind = ident.get("kind") or "unknown (a run made before identities)"
    if kind == "imported":
        what, cls = "imported run (not sealed)", "mb-na"
    elif meta.get("sealed"):
        what, cls = "sealed run", "mb-pass"
    else:
        what, cls = "in-process run (not sealed)", "mb-na"
    return (
        f'<p class="mb-run"><span class="mb-badge {cls}" data-sealed='
        f'"{"yes" if meta.get("sealed") else "no"}">{esc(what)}</span> {esc(kind)}'
        + (
            f" · {esc(ident.get('class') or ident.get('spec'))}"
            if kind in ("user module", "registered package", "HTTP service")
            else ""
        )
        + "</p>"
    )


def summary_html(
    metrics: dict[str, Any] | None,
    label: str,
    *,
    missing: str = "",
    meta: dict[str, Any] | None = None,
    tells: dict[str, float | None] | None = None,
) -> str:
    """The page's summary block: what ran and whether it was sealed (:func:`run_badge`, from
    the run's ``meta``), gate badges (beside false recall, the natives with an upstream tell,
    headed with ``tells``: :func:`membench.report.tables.gate_badges`) and the next steps,
    every data string escaped. ``metrics=None`` (no metrics.json): says so (``missing``:
    why)."""
    if metrics is None:
        return (
            f'<section class="mb-summary" id="membench-summary"><h2>Summary · {esc(label)}'
            f"</h2>{run_badge(meta)}<p>No metrics for this run"
            f"{': ' + esc(missing) if missing else ''}.</p></section>"
        )
    rows = gate_rows(metrics)
    n_pass = sum(r["result"] == "PASS" for r in rows)
    n_fail = sum(r["result"].startswith("FAIL") for r in rows)
    n_na = len(rows) - n_pass - n_fail
    steps = "".join(f"<li>{esc(s)}</li>" for s in next_steps(metrics))
    return (
        f'<section class="mb-summary" id="membench-summary"><h2>Summary · {esc(label)}</h2>'
        + run_badge(meta)
        + f"<p><b>{n_pass} of {len(rows)} gates pass</b>, {n_fail} fail, {n_na} n/a "
        "(value [95% bootstrap interval], n/denominator).</p>"
        + gate_badges(metrics, tells)
        + f"<h3>What to look at next</h3><ul>{steps}</ul></section>"
    )


def best_table_html(rows: list[dict[str, Any]]) -> str:
    """The best system per headline measure (:func:`membench.analysis.compare.best_systems`)
    as a table, every column labelled, every data string escaped; under each p, how the test
    resampled (by holder or by record)."""
    from ..analysis.paired import unit_note

    if not rows:
        return ""
    body = []
    for r in rows:
        digits = 1 if r["measure"].startswith("latency") else 3
        lo, hi = (r.get("diff_ci95") or [None, None])[:2]
        diff = fmt_interval(r["diff"], lo, hi, digits) if r["runner_up"] else "—"
        if r["tested"]:
            sig = "yes" if r["significant"] else "no"
            p = fmt_num(r["p_holm"], 3, p_value=True)
            how = unit_note(r.get("unit"), r.get("holders")) if r.get("unit") else ""
        else:
            sig, p, how = "not tested", "—", ""
        best = (
            ALL_SILENT
            if r.get("all_silent")
            else r["best"]
            if len(r["tied"]) == 1
            else " = ".join(r["tied"]) + " (tie)"
        )
        cls = "mb-pass" if r["significant"] else ""
        body.append(
            f'<tr><td class="mb-s"><b>{th(r["measure"])}</b><br><small>'
            f"{esc('lower is better' if r['direction'] == 'lower' else 'higher is better')}"
            f'</small></td><td class="mb-s {cls}"><b>{esc(best)}</b></td>'
            f'<td class="mb-n">{esc(fmt_num(r["value"], digits))}</td>'
            f'<td class="mb-s">{esc(r["runner_up"] or "—")}</td>'
            f'<td class="mb-n">{esc(fmt_num(r["runner_up_value"], digits))}</td>'
            f'<td class="mb-n">{esc(diff)}</td><td class="mb-n">{esc(r["n"])}</td>'
            f'<td class="mb-n">{esc(p)}'
            + (f"<br><small>{esc(how)}</small>" if how else "")
            + f'</td><td class="mb-l">{esc(sig)}'
            + (f"<br><small>{esc(r['note'])}</small>" if r.get("note") else "")
            + "</td></tr>"
        )
    head = (
        "<tr><th>measure</th><th>best system</th><th>its value</th><th>runner-up</th>"
        "<th>runner-up's value</th><th>difference (best − runner-up) [95% CI]</th>"
        "<th>n (paired items)</th><th>p (permutation, Holm)</th><th>significant at 0.05"
        "</th></tr>"
    )
    return (
        f'<table class="mb-t mb-best"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
    )


def best_block_html(
    rows: list[dict[str, Any]], verdict_text: str, *, note: str = "", power: str = ""
) -> str:
    """The answer to "which system is best": the verdict, how small a lead the items can
    resolve (``power``: :func:`membench.analysis.power.power_sentence`), then the table (or
    why there is none)."""
    if note:
        return f"<h3>Which system is best</h3><p>Not compared item by item: {esc(note)}</p>"
    return (
        "<h3>Which system is best</h3>"
        f'<p class="mb-verdict"><b>{esc(verdict_text)}</b></p>'
        + (f'<p class="mb-power">{esc(power)}</p>' if power else "")
        + best_table_html(rows)
    )


def sets_summary_html(label: str, runs: list[str], set_sha256: dict[str, str]) -> str:
    """The summary of a sets page (01, once per sets content): which runs use these sets."""
    files = ", ".join(f"{f} {d[:12]}…" for f, d in sorted(set_sha256.items()))
    return (
        f'<section class="mb-summary" id="membench-summary"><h2>Summary · {esc(label)}</h2>'
        f"<p>The sets (the set files by sha256: {esc(files)}) of "
        f"{esc(len(runs))} run(s): <b>{esc(', '.join(runs))}</b>. One page per sets "
        "content: every run made on these files links here. What the sets hold, the "
        "metadata-only audit and every hard rule of <code>membench validate</code>.</p>"
        "</section>"
    )


def compare_summary_html(
    per_run: list[tuple[str, dict[str, Any] | None]],
    best: list[dict[str, Any]] | None = None,
    verdict_text: str = "",
    best_note: str = "",
    tells: dict[str, float | None] | None = None,
    power: str = "",
) -> str:
    """The summary of a comparison page: the verdict and the best system per headline measure
    (``best``, :func:`membench.analysis.compare.best_systems`), then each run's gate badges,
    one block per run (``tells`` as :func:`summary_html`: the runs share their sets)."""
    parts = [
        '<section class="mb-summary" id="membench-summary"><h2>Summary · '
        + esc(" vs ".join(lab for lab, _ in per_run))
        + "</h2>"
    ]
    if best or best_note:
        parts.append(best_block_html(best or [], verdict_text, note=best_note, power=power))
    for lab, m in per_run:
        if m is None:
            parts.append(f"<p>{esc(lab)}: no metrics.json</p>")
            continue
        rows = gate_rows(m)
        n_pass = sum(r["result"] == "PASS" for r in rows)
        parts.append(
            f"<h3>{esc(lab)}: {n_pass} of {len(rows)} gates pass</h3>" + gate_badges(m, tells)
        )
    parts.append(
        "<h3>What to look at next</h3><ul><li>The forest plot of paired differences: "
        "an interval that excludes 0 is a difference the items support; the full "
        "table of paired tests is in the appendix.</li></ul></section>"
    )
    return "".join(parts)


__all__ = [
    "best_block_html",
    "best_table_html",
    "compare_summary_html",
    "next_steps",
    "run_badge",
    "sets_summary_html",
    "summary_html",
]
