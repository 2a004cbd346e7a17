"""The leaderboard's tables as HTML (notebook 06 and the page's summary).

One table per size class and judgment set (:meth:`membench.analysis.leaderboard.Leaderboard.
table`), one block of rows per scope (each modality, then all), one row per system ranked by
the leaderboard's ranking measure (each row says what ran, whether the run was sealed, and its
last ``membench verify``), one column per measure. A cell is the value with its 95%
interval and n; the best system of the block is marked **best**; every other system carries its
difference from the best with the Holm-corrected p of the paired test (``= best`` when it is
not significantly different); a measure with a gate is coloured pass / fail. Every string goes
through :func:`membench.report.escape.esc`. Touches nothing.
"""

from __future__ import annotations

import math
from typing import Any

from ..analysis.leaderboard import ANSWER_COLUMNS, ANSWER_RANK_BY
from ..analysis.tell_columns import label
from ..metrics.measures import BY_NAME
from ..modalities import MODALITIES
from ..sets.audit import MIN_HOLDERS_CI
from .escape import esc
from .tables import Table, fmt_num, interval_html, is_missing, th

#: a leaderboard table of this many measures or more is set a point smaller (``mb-wide``)
WIDE_MEASURES = 8
#: the context column of the relevance tables: the median tokens of a committed cartridge
CONTEXT_COLUMN = "context_tokens_committed_p50"

LEGEND = (
    "value [95% bootstrap interval], n = items in the measure's denominator; "
    "<b>best</b> = the best system of the block; otherwise the difference from the best "
    "on the same items (paired bootstrap) and the permutation p corrected by Holm over "
    "every test of the table (<i>= best</i>: not significantly different at 0.05; the "
    "answerable share kept at false recall &lt;= 0.10 and the abstention AUC have a "
    "bootstrap p). The tests resample by holder where a block's items come from at "
    f"least {MIN_HOLDERS_CI} holders (a holder's differences flip together, a drawn holder brings all "
    "its items), else by record: each table's caption says which; a coloured cell is a gated measure (green: the gate passes, red: it "
    "fails; <i>FAIL (silent)</i>: a false-recall rate bought by abstaining on more than "
    "half of the answerable items). judged@10, beside recall@10, is the share of the "
    "top 10 atoms whose relevance was judged at all (the gold or any judgment set; "
    "ir_measures' Judged@10): shown, never tested; where it is low, recall is a lower "
    "bound. The cartridge table is ranked by the answerable "
    "share kept at false recall &lt;= 0.10, on which a system that always abstains "
    "scores 0, beside the random committer's (the share a committer with the same "
    "abstention keeps by chance). False recall counts the audited unanswerable items; the natives with an "
    "upstream tell have their own column, labelled with the tell's ROC AUC from the set "
    "audit, never ranked or tested. The context column is the median tokens of a "
    "committed (non-empty) cartridge. The answer table is ranked by "
    f"{ANSWER_RANK_BY}: the answer handed over by a cartridge within 1,024 tokens (a "
    "cartridge past them scores 0), so volume buys nothing; the uncut answer@cartridge "
    "and the committed tokens stand beside it, never tested. Rows marked <i>baseline</i> (the registered "
    "doubles nothing, with no memory, and echo, question-word overlap over the memory "
    "with an empty cartridge) are the floor every figure is read "
    "against: listed under the ranked rows, never the best, never tested. Rows marked "
    "<i>content-free floor</i> (the registered doubles random, newest and oldest: they "
    "rank the holder's in-scope atoms by a seeded order or by observed_at alone and read "
    "no content) are what position alone reaches, listed under the baselines, likewise "
    "never the best, never tested."
)


def _cell(c: dict[str, Any], digits: int, stacked: bool = False) -> str:
    """One cell; ``stacked``: the interval on its own line (a table with many columns)."""
    if is_missing(c["value"]):
        return f'<td class="mb-n mb-na">n/a<br><small>n={esc(int(c["n"]))}</small></td>'
    cls = "mb-n"
    if c.get("gate"):
        cls += " mb-pass" if c.get("gate_pass") else " mb-fail"
    v = interval_html(c["value"], c["ci95_lo"], c["ci95_hi"], digits, stacked=stacked)
    extra = ""
    if c.get("is_best"):
        extra = "<b>best</b>"
    elif not is_missing(c.get("p_holm")):
        p = fmt_num(c["p_holm"], 3, p_value=True)
        diff = format(c["diff"], f"+.{digits}f")
        extra = (
            f"{esc(diff)} (p {esc(p)})" if c.get("significant") else f"<i>= best</i> (p {esc(p)})"
        )
    gate = ""
    if c.get("gate"):
        why = c.get("gate_why") or ""
        gate = (
            f"<br><small>gate {esc(c['gate'])}"
            + (f' <b title="{esc(why)}">FAIL (silent)</b>' if why else "")
            + "</small>"
        )
    floor = (
        ""
        if is_missing(c.get("random_kept"))
        else f"<br><small>random committer {esc(fmt_num(c['random_kept'], digits))}</small>"
    )
    return (
        f'<td class="{cls}">{v}<br><small>n={esc(int(c["n"]))}</small>'
        f"{'<br><small>' + extra + '</small>' if extra else ''}{gate}{floor}</td>"
    )


def leaderboard_table(
    lb,
    size: str,
    judgment_set: str,
    family: str = "relevance",
    *,
    measures: tuple[str, ...] | None = None,
    digits: int = 3,
    scopes: tuple[str, ...] | None = None,
) -> Table:
    """The HTML table of one size class and judgment set: the measures that follow the set
    (``family="relevance"``), or the others (``"other"``: false recall, holder and temporal
    correctness, latency, the answer layer and the context cost; the same under every set, so
    shown once, with ``gold``)."""
    t = lb.table(size, judgment_set, family=None if measures else family)
    names = [
        m
        for m in dict.fromkeys(measures or t["measure"])
        if m in set(t["measure"]) and (measures or m not in ANSWER_COLUMNS)
    ]  # those: context_table
    # the relevance table's context column: what a committed cartridge costs (gold's figures)
    ctx = None
    if family == "relevance" and not measures:
        ctx = lb.table(size, "gold", family="other")
        ctx = ctx[ctx["measure"] == CONTEXT_COLUMN]
        if ctx.empty:
            ctx = None
        else:
            names.append(CONTEXT_COLUMN)
    head = (
        "<tr><th>scope</th><th>system</th><th>parameters</th>"
        + "".join(f"<th>{th(label(m, lb.tells))}</th>" for m in names)
        + "</tr>"
    )
    rows = []
    cards = {e["id"]: e["card"] for e in lb.entries}
    for scope in [
        s for s in [*MODALITIES, "all"] if s in set(t["scope"]) and (scopes is None or s in scopes)
    ]:
        g = t[t["scope"] == scope]
        by = lb.rank_measure(
            "answer" if measures == ANSWER_COLUMNS else None if measures else family
        )
        rank = lb.table(size, judgment_set, scope)
        rank = rank[rank["measure"] == by]
        hi = BY_NAME[by].direction == "higher"
        order = sorted(
            rank.to_dict("records"),
            key=lambda r: (
                bool(r.get("baseline")),
                bool(r.get("floor")),
                math.inf if is_missing(r["value"]) else (-r["value"] if hi else r["value"]),
                r["system"],
            ),
        )
        for i, r in enumerate(order):
            cells = {c["measure"]: c for c in g[g["entry"] == r["entry"]].to_dict("records")}
            if ctx is not None:
                cells.update(
                    {
                        c["measure"]: c
                        for c in ctx[
                            (ctx["scope"] == scope) & (ctx["entry"] == r["entry"])
                        ].to_dict("records")
                    }
                )
            card = cards[r["entry"]]
            rows.append(
                (
                    '<tr class="mb-baseline mb-floor">'
                    if r.get("floor")
                    else '<tr class="mb-baseline">'
                    if r.get("baseline")
                    else "<tr>"
                )
                + (
                    f'<td class="mb-s" rowspan="{len(order)}"><b>{esc(scope)}</b></td>'
                    if i == 0
                    else ""
                )
                + f'<td class="mb-l">{esc(r["system"])}<br><small>{esc(lb.ran(r["entry"]))}'
                f" · {esc(lb.verify_text(r['entry']))}</small></td>"
                + f'<td class="mb-n">{esc(format(int(card["parameter_count"]), ","))}</td>'
                + "".join(
                    _cell(
                        cells[m],
                        1 if m.startswith(("latency", "context")) else digits,
                        stacked=len(names) > 5,
                    )
                    if m in cells
                    else '<td class="mb-na">-</td>'
                    for m in names
                )
                + "</tr>"
            )
    what = (
        f"judgment set {esc(judgment_set)}"
        if family == "relevance" or measures
        else "every judgment set (these measures do not depend on it)"
    )
    units = lb.units(size) if hasattr(lb, "units") else ""
    cap = f"size {esc(size)} · {what} · ranked by {esc(by)}" + (
        f" · tests resampled {esc(units)}" if units else ""
    )
    # the answer table (budgeted, uncut, tokens, grounded) and a table of as many measures as
    # the abstention one are set a point smaller (mb-wide, as a slice table of many columns)
    # to fit a 1280 px page with every interval
    cls = "mb-t mb-wide" if measures == ANSWER_COLUMNS or len(names) >= WIDE_MEASURES else "mb-t"
    html = (
        f'<table class="{cls}"><caption>{cap}</caption><thead>{head}</thead><tbody>'
        + "".join(rows)
        + "</tbody></table>"
    )
    return Table(html, len(rows), ["scope", "system", "parameters", *names])


def context_table(lb, size: str, digits: int = 3) -> Table:
    """The answer table of one size class (:data:`membench.analysis.leaderboard.
    ANSWER_COLUMNS`; the same under every judgment set, shown with ``gold``), as
    :func:`leaderboard_table`, ranked by the answer within the token budget
    (:data:`~membench.analysis.leaderboard.ANSWER_RANK_BY`, tested against the best), with
    what is shown beside it, never tested: the uncut answer@cartridge and the median tokens of
    a committed cartridge, answer@10 and its grounded part, recall@1024tok."""
    return leaderboard_table(lb, size, "gold", measures=ANSWER_COLUMNS, digits=digits)


def cards_table(lb) -> Table:
    """Every entry's identity: card, its settings, package, code revision and entry id."""
    head = (
        "<tr><th>system</th><th>card · size class · parameters</th>"
        "<th>model · weights sha256 / revision</th><th>max input tokens: card (applied)</th>"
        "<th>prefixes (query / document) · pooling · normalisation</th>"
        "<th>license · package</th><th>what ran · sealed</th><th>verify</th>"
        "<th>code revision · entry</th></tr>"
    )
    rows = []
    for e in lb.entries:
        c = e["card"]
        tr = e.get("truncation") or {}
        applied = tr.get("applied_tokens")
        cut = (
            f"; {tr['texts_truncated']:,} of {tr['texts']:,} texts cut"
            if isinstance(tr.get("texts_truncated"), int) and isinstance(tr.get("texts"), int)
            else ""
        )
        sp = c.get("source_package") or {}
        ident = (
            (c["weights_sha256"][:16] + "…")
            if c.get("weights_sha256")
            else (c.get("revision") or "")
        )
        cells = (
            lb.labels[e["id"]],
            f"{c['name']} · {c['size_class']} · {int(c['parameter_count']):,}",
            f"{c.get('model') or '—'} · {ident}",
            f"{c.get('max_input_tokens') or 'none'} ({applied or 'none'}{cut})",
            f"{c.get('query_prefix')!r} / {c.get('document_prefix')!r} · {c['pooling']} · "
            f"{c['normalisation']}",
            f"{c['license']} · " + (f"{sp.get('name')}=={sp.get('version')}" if sp else "—"),
            lb.ran(e["id"]),
            lb.verify_text(e["id"]),
            f"{str(e['key']['code_revision'])[:12]} · {e['id']}",
        )
        rows.append("<tr>" + "".join(f'<td class="mb-l">{esc(x)}</td>' for x in cells) + "</tr>")
    return Table(
        f'<table class="mb-t"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>',
        len(rows),
        [],
    )


__all__ = ["LEGEND", "cards_table", "context_table", "leaderboard_table"]
