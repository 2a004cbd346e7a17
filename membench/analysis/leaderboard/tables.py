"""The leaderboard as text: a few lines for a log (:func:`format_brief`), the command line's
tables (:func:`format_leaderboard`) and the README's Markdown table (:func:`format_markdown`),
all from a :class:`membench.analysis.leaderboard.ranking.Leaderboard`. One cell's text is
:func:`membench.analysis.leaderboard.columns.cell_text`.

Reads and writes nothing: strings from a Leaderboard already made.
"""

from __future__ import annotations

import numpy as np

from ...metrics.answer_layer import ANSWER_BUDGETED
from ...metrics.measures import BY_NAME
from ..tell_columns import label
from .columns import JUDGED, PRIMARY, RELEVANCE, gate_text
from .ranking import Leaderboard, best_rows


def _p(p: float | None) -> str:
    return "-" if p is None else ("<0.001" if p < 0.001 else f"{p:.3f}")


def format_brief(lb: Leaderboard) -> str:
    """A few lines for a log: per size class, the best system per headline measure over all
    items (gold), and each other system as ``= best`` (not significantly different after
    Holm) or its difference and Holm p; then, never tested, the baselines' values (``no
    memory:``) and the content-free floors' (``content-free floors:``). Page 06 has every
    table."""
    lines = [
        (
            f"{len(lb.entries)} entries, {lb.store['split']} split, "
            f"{lb.store['selection']['queries']} queries; best per headline measure over "
            "all items (gold judgments; paired tests against the best, Holm):"
        )
    ]
    for size in lb.size_classes:
        lines.append(f"  size {size} (tests resampled {lb.units(size) or 'by record'})")
        for b in best_rows(lb, size):
            digits = 1 if b["measure"].startswith("latency") else 3
            rest = ", ".join(
                f"{o['system']} "
                + (
                    f"{o['value']:.{digits}f} FAIL (silent)"
                    if o.get("silent")
                    else f"{o['diff']:+.{digits}f} (p_holm {_p(o['p_holm'])})"
                    if o["significant"]
                    else f"= best (p_holm {_p(o['p_holm'])})"
                    if o["p_holm"] is not None
                    else "not tested"
                )
                for o in b["others"]
            )
            v = (
                ""
                if b.get("all_silent")
                else "n/a"
                if b["value"] is None
                else f"{b['value']:.{digits}f}"
            )
            base, floor = (
                ", ".join(
                    f"{f['system']} "
                    + ("n/a" if f["value"] is None else f"{f['value']:.{digits}f}")
                    for f in b[k]
                )
                for k in ("baselines", "floors")
            )
            lines.append(
                f"    {b['measure']:<24} {b['best']}"
                + ("" if b.get("all_silent") else f" {v} (n={b['n']})")
                + (f"; {rest}" if rest else "")
                + (f"; no memory: {base}" if base else "")
                + (f"; content-free floors: {floor}" if floor else "")
            )
    lines += [f"note: {n}" for n in lb.notes]
    return "\n".join(lines) + "\n"


def format_leaderboard(
    lb: Leaderboard,
    *,
    scopes: tuple[str, ...] = ("all",),
    measures: tuple[str, ...] = (
        "recall@1000",
        "recall@10",
        JUDGED,
        "ndcg@10",
        "answerable_kept@fr0.10",
        "false_recall_rate",
        "false_recall_native",
        "abstain_rate_answerable",
        ANSWER_BUDGETED,
        "answer@cartridge",
        "context_tokens_committed_p50",
    ),
) -> str:
    """Plain text for the command line: per size class and judgment set, the chosen scopes'
    rows with value [CI] n and the comparison with the best (the two false recalls named as
    :func:`membench.analysis.tell_columns.label`: audited, and the natives with a tell with
    the tell's ROC AUC; the ranked answer figure, within its token budget, beside the uncut
    answer@cartridge and the median tokens of a committed cartridge)."""
    lines = [
        f"{len(lb.entries)} entries; {lb.store['split']} split, "
        f"{lb.store['selection']['queries']} queries; ranked by {lb.rank_by}; paired tests "
        "against the best of each column, Holm over each table; resampled "
        + (lb.units() or "by record")
    ]
    for size in lb.size_classes:
        for js in lb.judgment_sets:
            w = lb.wide(size, js)
            if w.empty:
                continue
            w = w[w["scope"].isin(scopes)]
            lines.append(f"\n== size {size}, judgment set {js}")
            for r in w.to_dict("records"):
                lines.append(f"  {r['scope']:<13} {r['system']}  [{r['ran']}; {r['verified']}]")
                for m in measures:
                    if m in r and isinstance(r[m], str):
                        lines.append(f"      {label(m, lb.tells):<20} {r[m]}")
    lines += [f"note: {n}" for n in lb.notes]
    return "\n".join(lines) + "\n"


def format_markdown(
    lb: Leaderboard,
    *,
    scope: str = "all",
    measures: tuple[str, ...] = (
        "recall@1000",
        "recall@10",
        JUDGED,
        "ndcg@10",
        "answerable_kept@fr0.10",
        "false_recall_rate",
        "false_recall_native",
        "abstain_rate_answerable",
        ANSWER_BUDGETED,
        "answer@cartridge",
        "context_tokens_committed_p50",
    ),
) -> str:
    """A Markdown table (README): one row per size class, judgment set and system over
    ``scope``; each cell value [95% CI], ``best``, or the difference from the best with its
    Holm p (``=`` when not significant), gates as PASS / FAIL. Measures that do not follow the
    judgment set are shown in the ``gold`` rows only. Columns are named as
    :func:`membench.analysis.tell_columns.label`: the audited false recall, and the natives
    with a tell labelled with the tell's ROC AUC (never ranked, never tested)."""

    def cell(c) -> str:
        if (
            c is None
            or c["value"] is None
            or (isinstance(c["value"], float) and np.isnan(c["value"]))
        ):
            return "—"
        s = f"{c['value']:.3f} [{c['ci95_lo']:.3f}, {c['ci95_hi']:.3f}]"
        if c["gate"]:
            s += f" {gate_text(c)}"
        if c["is_best"]:
            return s + " best"
        p = c["p_holm"]
        if p is None or np.isnan(p):  # a report-only measure: never tested
            return s
        ptxt = "<0.001" if p < 0.001 else f"{p:.3f}"
        return s + (f" ({c['diff']:+.3f}, p {ptxt})" if c["significant"] else f" (=, p {ptxt})")

    head = (
        "| size | judgment set | system | ran | verified | parameters | n | "
        + " | ".join(label(m, lb.tells) for m in measures)
        + " |"
    )
    out = [head, "|" + "---|" * (7 + len(measures))]
    for size in lb.size_classes:
        for js in lb.judgment_sets:
            t = lb.table(size, js, scope)
            if t.empty:
                continue
            gold = lb.table(size, PRIMARY, scope)
            rank = t[t["measure"] == lb.rank_by].sort_values(
                ["baseline", "floor", "value", "system"],
                ascending=[True, True, BY_NAME[lb.rank_by].direction == "lower", True],
            )
            for r in rank.to_dict("records"):
                cells = []
                for m in measures:
                    src = t if m in RELEVANCE else (gold if js == PRIMARY else None)
                    row = (
                        None
                        if src is None
                        else src[(src["entry"] == r["entry"]) & (src["measure"] == m)]
                    )
                    cells.append(cell(row.iloc[0]) if row is not None and len(row) else "—")
                card = next(e["card"] for e in lb.entries if e["id"] == r["entry"])
                out.append(
                    f"| {size} | {js} | {r['system']} | {lb.ran(r['entry'])} | "
                    f"{lb.verify_text(r['entry'])} | "
                    f"{int(card['parameter_count']):,} | {int(r['n'])} | "
                    + " | ".join(cells)
                    + " |"
                )
    return "\n".join(out)


__all__ = ["format_brief", "format_leaderboard", "format_markdown"]
