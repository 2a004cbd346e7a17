"""Tables and badges a person can read, for the notebooks and the report pages.

:func:`show` turns any of the analysis tables (pandas DataFrames) into compact HTML:

* an interval in one cell: a column ``x`` with ``x_lo`` / ``x_hi`` (or ``value`` with
  ``ci95_lo`` / ``ci95_hi``, or ``diff`` with ``diff_ci95_lo`` / ``diff_ci95_hi``) becomes
  ``0.810 [0.790, 0.830]`` under the header ``x [95% CI]``;
* numbers with three decimals (p-values under 0.001 as ``<0.001``), integers as they are,
  0/0 (NaN, None) as ``n/a``;
* verdict columns (``result``, ``pass``, ``match``, ``significant_0.05``, ``gate_failures``,
  ``worst_margin``, ``worst_metric``, ``level``) first, PASS / FAIL (and True / False in a
  verdict column) coloured;
* a table longer than ``max_rows`` shows its first rows and keeps the rest in a collapsed
  ``<details>`` block, so nothing is dropped; one of more than :data:`WIDE_COLUMNS` columns is
  set a point smaller.

Every header and cell goes through :func:`membench.report.escape.esc`. The result is an object
with ``_repr_html_`` (JupyterLab and nbconvert show it as HTML). :func:`gate_badges` renders the
gates of a ``metrics.json`` as pass/fail badges with value, interval and n; the report pages put
them at the top; :func:`floors_grid` puts a run's recall@10 beside the content-free floors'.
Touches nothing.
"""

from __future__ import annotations

import math
from typing import Any

from ..analysis.tell_columns import AUDITED, NATIVE, label, tell_note
from ..metrics.answer_layer import ANSWER_BUDGETED
from .escape import esc

VERDICTS = (
    "result",
    "pass",
    "match",
    "significant_0.05",
    "gate_failures",
    "worst_margin",
    "worst_metric",
    "level",
    "status",
)

CSS = """<style>
.mb-t{border-collapse:collapse;font:12px/1.35 system-ui,sans-serif;margin:4px 0 10px 0;
  max-width:100%}
.mb-t th,.mb-t td{padding:2px 5px;border-bottom:1px solid #e2e2e2;text-align:right;
  vertical-align:top}
.mb-t th{background:#f3f3f3;text-align:center;font-weight:600}
.mb-t th small,.mb-t td small{color:#555;font-size:11px}
.mb-t td.mb-s{text-align:left;white-space:nowrap}
.mb-t tr.mb-baseline td{background:#f5f5f5;color:#444}
.mb-t tr.mb-floor td{background:#f7f4ec;color:#444}
.mb-t td.mb-l{text-align:left;min-width:7em;max-width:17em;overflow-wrap:anywhere}
.mb-t td.mb-n{white-space:nowrap;font-variant-numeric:tabular-nums}
.mb-t td.mb-pass{background:#dff3df;color:#135c13;font-weight:600}
.mb-t td.mb-fail{background:#fbe0e0;color:#8a1010;font-weight:600}
.mb-t td.mb-na{color:#777}
.mb-t caption{caption-side:top;text-align:left;color:#444;padding:2px 0}
.mb-t td small.mb-wrap{white-space:normal;display:inline-block;max-width:17em}
.mb-t.mb-wide{font-size:11px}
.mb-t.mb-wide th small,.mb-t.mb-wide td small{font-size:10px}
details.mb-more>summary{cursor:pointer;color:#1a4d8f;font:12px system-ui,sans-serif}
.mb-badges{display:flex;flex-wrap:wrap;gap:3px;margin:1px 0}
.mb-badge{display:inline-block;border-radius:4px;padding:1px 6px;font:12px/1.4 system-ui,
  sans-serif;white-space:nowrap}
.mb-badge.mb-pass{background:#dff3df;color:#135c13;border:1px solid #9fd49f}
.mb-badge.mb-fail{background:#fbe0e0;color:#8a1010;border:1px solid #e6a1a1}
.mb-badge.mb-na{background:#eee;color:#555;border:1px solid #ccc}
</style>"""


def th(text: Any) -> str:
    """A column header: escaped, breakable after ``_`` and ``@`` so long names wrap."""
    return esc(text).replace("_", "_<wbr>")


def is_missing(v: Any) -> bool:
    return (
        v is None
        or (isinstance(v, float) and math.isnan(v))
        or (hasattr(v, "__class__") and v.__class__.__name__ in ("NAType", "NaTType"))
    )


def fmt_num(v: Any, digits: int = 3, *, p_value: bool = False) -> str:
    """One number for a cell: ``n/a`` for a missing value (0/0), integers as they are, floats
    with ``digits`` decimals (``<0.001`` for a tiny p-value)."""
    if is_missing(v):
        return "n/a"
    if isinstance(v, bool):
        return str(v)
    try:
        import numpy as np

        if isinstance(v, np.bool_):
            return str(bool(v))
        if isinstance(v, np.integer):
            return str(int(v))
    except ImportError:  # pragma: no cover
        pass
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float) or hasattr(v, "__float__"):
        f = float(v)
        if p_value and 0 <= f < 10**-digits:
            return f"<{10**-digits:.{digits}f}"
        return f"{f:.{digits}f}"
    return str(v)


def fmt_interval(v: Any, lo: Any, hi: Any, digits: int = 3) -> str:
    """``0.810 [0.790, 0.830]``; ``n/a`` when the value is missing; the value alone when the
    interval is."""
    if is_missing(v):
        return "n/a"
    if is_missing(lo) or is_missing(hi):
        return fmt_num(v, digits)
    return f"{fmt_num(v, digits)} [{fmt_num(lo, digits)}, {fmt_num(hi, digits)}]"


def _interval_columns(cols: list[str]) -> list[tuple[str, str, str]]:
    out = []
    for c in cols:
        for lo, hi in ((f"{c}_lo", f"{c}_hi"), (f"{c}_ci95_lo", f"{c}_ci95_hi")):
            if lo in cols and hi in cols:
                out.append((c, lo, hi))
                break
        else:
            if c == "value" and "ci95_lo" in cols and "ci95_hi" in cols:
                out.append((c, "ci95_lo", "ci95_hi"))
    return out


def _verdict_class(col: str, v: Any) -> str:
    if is_missing(v):
        return "mb-na"
    s = str(v)
    if s in ("PASS", "pass", "OK", "ok", "yes") or (col != "gate_failures" and v is True):
        return "mb-pass"
    if s.startswith("n/a"):
        return "mb-na"
    if (
        s in ("FAIL", "fail", "error", "ERROR", "no", "MISMATCH")
        or s.startswith("FAIL (")
        or v is False
    ):
        return "mb-fail"
    try:
        import numpy as np

        if isinstance(v, np.bool_):
            return "mb-pass" if bool(v) else "mb-fail"
    except ImportError:  # pragma: no cover
        pass
    if col == "gate_failures" and isinstance(v, (int, float)) and not is_missing(v):
        return "mb-fail" if v > 0 else "mb-pass"
    if col == "worst_margin" and isinstance(v, (int, float)) and not is_missing(v):
        return "mb-fail" if v < 0 else "mb-pass"
    return ""


class Table:
    """HTML for a notebook output (``_repr_html_``) and for a page (:attr:`html`)."""

    def __init__(self, html: str, rows: int, columns: list[str]):
        self.html, self.rows, self.columns = html, rows, columns

    def _repr_html_(self) -> str:
        return CSS + self.html

    def __str__(self) -> str:
        return self.html


SHORT_TEXT = 24  # longer text cells wrap
#: a table of more columns than this is set a point smaller (``mb-wide``): a slice table with
#: both false recalls, their denominators and every interval still fits a 1280 px page
WIDE_COLUMNS = 13


def interval_html(v: Any, lo: Any, hi: Any, digits: int = 3, *, stacked: bool = False) -> str:
    """An interval cell's HTML (escaped): ``0.810 [0.790, 0.830]`` on one line, or with the
    interval on a second, smaller line when ``stacked`` (wide tables)."""
    txt = fmt_interval(v, lo, hi, digits)
    if not stacked or txt == "n/a" or " [" not in txt:
        return esc(txt)
    val, ci = txt.split(" ", 1)
    return f"{esc(val)}<br><small>{esc(ci)}</small>"


def _rows_html(
    df,
    cols: list[str],
    kinds: dict[str, str],
    digits: int,
    intervals: dict[str, tuple[str, str, str]],
    stacked: bool,
) -> list[str]:
    out = []
    for _, rec in df.iterrows():
        cells = []
        for c in cols:
            kind = kinds[c]
            if kind == "interval":
                v, lo, hi = (rec[x] for x in intervals[c])
                body = interval_html(v, lo, hi, digits, stacked=stacked)
                cls = "mb-n" + (" mb-na" if body == "n/a" else "")
                cells.append(f'<td class="{cls}">{body}</td>')
                continue
            v = rec[c]
            if kind == "num":
                cls = "mb-n"
                text = fmt_num(v, digits, p_value=c.startswith("p_"))
            else:
                text = "n/a" if is_missing(v) else str(v)
                cls = "mb-s" if len(text) <= SHORT_TEXT else "mb-l"
            if c in VERDICTS:
                cls = f"{cls} {_verdict_class(c, v)}".strip()
            if text == "n/a" and "mb-na" not in cls:
                cls += " mb-na"
            cells.append(f'<td class="{cls}">{esc(text)}</td>')
        out.append("<tr>" + "".join(cells) + "</tr>")
    return out


def show(
    df,
    *,
    max_rows: int = 25,
    digits: int = 3,
    index: bool | None = None,
    caption: str | None = None,
    verdicts: tuple[str, ...] | None = None,
) -> Table:
    """A DataFrame as a compact HTML table (see the module docstring). ``index``: keep the
    index as the first column(s) (default: when it is named or not a plain range)."""
    import pandas as pd

    t = df.copy()
    if isinstance(t.columns, pd.MultiIndex):
        t.columns = [" · ".join(str(x) for x in c if str(x)) for c in t.columns]
    t.columns = [str(c) for c in t.columns]
    keep_index = (
        index
        if index is not None
        else (any(n is not None for n in t.index.names) or not isinstance(t.index, pd.RangeIndex))
    )
    if keep_index:
        names = [n if n is not None else "" for n in t.index.names]
        t.index = t.index.set_names([n or f"_i{i}" for i, n in enumerate(names)])
        t = t.reset_index()
        t.columns = [("" if c.startswith("_i") and c[2:].isdigit() else c) for c in t.columns]
    cols = list(t.columns)
    kinds: dict[str, str] = {}
    intervals: dict[str, tuple[str, str, str]] = {}
    for c, lo, hi in _interval_columns(cols):
        new = f"{c} [95% CI]"
        intervals[new] = (c, lo, hi)
        pos = cols.index(c)
        cols = [x for x in cols if x not in (c, lo, hi)]
        cols.insert(min(pos, len(cols)), new)
        kinds[new] = "interval"
    for c in cols:
        if c in kinds:
            continue
        s = t[c]
        kinds[c] = (
            "num"
            if pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s)
            else "str"
        )
    verdict_cols = [c for c in (verdicts or VERDICTS) if c in cols]
    cols = verdict_cols + [c for c in cols if c not in verdict_cols]
    head = (
        "<tr>"
        + "".join(
            f"<th>{th(c[:-9])}<br><small>[95% CI]</small></th>"
            if c in intervals
            else f"<th>{th(c)}</th>"
            for c in cols
        )
        + "</tr>"
    )
    rows = _rows_html(t, cols, kinds, digits, intervals, stacked=len(intervals) > 2)
    cap = f"<caption>{esc(caption)}</caption>" if caption else ""
    cls = "mb-t mb-wide" if len(cols) > WIDE_COLUMNS else "mb-t"
    html = (
        f'<table class="{cls}">{cap}<thead>{head}</thead><tbody>'
        + "".join(rows[:max_rows])
        + "</tbody></table>"
    )
    if len(rows) > max_rows:
        html += (
            f'<details class="mb-more"><summary>show the other {len(rows) - max_rows} of '
            f'{len(rows)} rows</summary><table class="{cls}"><thead>{head}</thead><tbody>'
            + "".join(rows[max_rows:])
            + "</tbody></table></details>"
        )
    return Table(html, len(rows), cols)


def collapsed(title: str, inner: Any, *, open_: bool = False) -> Table:
    """``inner`` (a :class:`Table` or anything with ``_repr_html_``) inside ``<details>``
    whose summary is ``title`` (escaped)."""
    body = inner.html if isinstance(inner, Table) else inner._repr_html_()
    return Table(
        f'<details class="mb-more"{" open" if open_ else ""}><summary>{esc(title)}'
        f"</summary>{body}</details>",
        getattr(inner, "rows", 0),
        getattr(inner, "columns", []),
    )


# ---------------------------------------------------------------------------- metrics


def metrics_grid(
    metrics: dict[str, Any],
    metric_names: list[str] | None = None,
    digits: int = 3,
    tells: dict[str, float | None] | None = None,
) -> Table:
    """metrics.json side by side: one row per metric, one column per scope; each cell
    ``value [lo, hi]`` and, under it, ``n/denominator`` (``n/a`` where the denominator is 0).
    The two false recalls carry their label under their name
    (:func:`membench.analysis.tell_columns.label`: audited; the natives with a tell, with the
    tell's ROC AUC from ``tells``, :func:`~membench.analysis.tell_columns.sets_tells`, or a
    pointer to docs/sets.md when it is ``None``)."""
    from ..modalities import MODALITIES

    scopes = [s for s in (*MODALITIES, "all") if s in metrics]
    names = metric_names or list(metrics.get("all", {}))
    head = "<tr><th>metric</th>" + "".join(f"<th>{esc(s)}</th>" for s in scopes) + "</tr>"
    rows = []
    for m in names:
        cells = [_metric_cell(m, tells)]
        for s in scopes:
            e = metrics[s].get(m)
            if e is None:
                cells.append('<td class="mb-n mb-na">n/a</td>')
                continue
            cells.append(_figure_cell(e, digits if not m.startswith(("latency", "context")) else 1))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return Table(
        f'<table class="mb-t"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>',
        len(rows),
        ["metric", *scopes],
    )


#: the rows of :func:`answer_context_grid`: the answer layer (first the ranked figure, the
#: answer within the token budget, then the uncut answer@cartridge with the committed tokens
#: beside it, answer@10 and its grounded part), recall at 10 beside recall within each token
#: budget, then the context cost
ANSWER_CONTEXT_ROWS: tuple[str, ...] = (
    "answer_bearing",
    ANSWER_BUDGETED,
    "answer@cartridge",
    "context_tokens_committed_p50",
    "answer@10",
    "grounded_answer@10",
    "recall@10",
    "recall@256tok",
    "recall@1024tok",
    "recall@4096tok",
    "context_tokens_p50",
    "context_tokens_p95",
    "context_tokens_committed_p95",
    "context_area_p50",
    "context_area_p95",
    "context_seconds_p50",
    "context_seconds_p95",
)


def answer_context_grid(metrics: dict[str, Any], digits: int = 3) -> Table:
    """The judge-free answer layer and the context cost of a ``metrics.json``
    (:data:`ANSWER_CONTEXT_ROWS`, as :func:`metrics_grid`): over the answer-bearing items
    (their n), the answer handed over by a cartridge within the token budget (the ranked
    figure), the uncut answer@cartridge with the committed tokens beside it, answer@10 and
    grounded_answer@10, the share of answerable items that are answer-bearing,
    recall within 256, 1024 and 4096 tokens beside recall@10, and the cartridge's tokens, area
    and seconds (median, p95)."""
    rows = [m for m in ANSWER_CONTEXT_ROWS if m in metrics.get("all", {})]
    return metrics_grid(metrics, rows, digits)


def answer_context_note(metrics: dict[str, Any]) -> str:
    """One line on what the answer layer read (``metrics.json["answer_context"]``): the
    corpus, or why the figures are null, and the records left out because an item's text could
    not be read (Markdown)."""
    note = metrics.get("answer_context") or {}
    if not note.get("read"):
        return (
            "**The answer and context figures are null**: "
            + (note.get("reason") or "this metrics.json has no answer_context entry")
            + "."
        )
    unread = note.get("unread_records") or 0
    if not unread:
        return "Every text was read from the content layer (none left out)."
    items = note.get("n_unread_items", len(note.get("unread_items") or {}))
    return (
        f"**{unread} records left out** of the answer and context figures: the text of "
        f"{items} item(s) could not be read without running OCR (or their file is "
        "missing); their denominators are smaller by as much, never a 0."
    )


def _metric_cell(m: str, tells: dict[str, float | None] | None) -> str:
    """A grid's row header: the measure's name, and under it its label where it has one (the
    two false recalls: :func:`membench.analysis.tell_columns.label`)."""
    name = label(m, tells)
    under = f'<br><small class="mb-wrap">{esc(name)}</small>' if name != m else ""
    return f'<td class="mb-s">{esc(m)}{under}</td>'


def _figure_cell(e: dict[str, Any], digits: int) -> str:
    """One figure of a ``metrics.json`` as a table cell: ``value [lo, hi]`` over
    ``n/denominator``."""
    lo, hi = (e.get("ci95") or [None, None])[:2]
    txt = fmt_interval(e.get("value"), lo, hi, digits)
    na = " mb-na" if txt == "n/a" else ""
    return (
        f'<td class="mb-n{na}">{esc(txt)}<br><small>'
        f"{esc(e.get('n'))}/{esc(e.get('denominator'))}</small></td>"
    )


def judgment_sets_grid(metrics: dict[str, Any], scope: str, digits: int = 3) -> Table:
    """One scope of a ``metrics.json`` under every judgment set that judges it: one row per
    measure computed per judgment set, one column per set (gold first), each cell
    ``value [lo, hi]`` and, under it, ``n/denominator`` (the items that set judges)."""
    from ..metrics.measures import JUDGMENT_MEASURES

    sets = {"gold": metrics.get(scope, {})}
    sets.update(
        {
            name: block[scope]
            for name, block in (metrics.get("judgment_sets") or {}).items()
            if scope in block
        }
    )
    head = "<tr><th>metric</th>" + "".join(f"<th>{th(n)}</th>" for n in sets) + "</tr>"
    rows = []
    for m in JUDGMENT_MEASURES:
        cells = [f'<td class="mb-s">{esc(m)}</td>']
        for name, block in sets.items():
            e = block.get(m)
            if e is None:
                cells.append('<td class="mb-n mb-na">n/a</td>')
                continue
            cells.append(_figure_cell(e, digits))
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return Table(
        f'<table class="mb-t"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>',
        len(rows),
        ["metric", *sets],
    )


def gate_rows(metrics: dict[str, Any]) -> list[dict[str, Any]]:
    """The gates of a ``metrics.json`` with value, interval, n and denominator; ``result`` is
    PASS, FAIL, ``FAIL (silent)`` (a false-recall rate bought by abstaining on most answerable
    items: ``why`` says how much) or ``n/a`` (no items in the denominator: never a pass). A
    gate silence would pass also carries its companion (answerable abstention of the scope:
    ``companion``, ``companion_n``, ``companion_denominator``)."""
    from ..metrics.aggregate import verdict_text

    rows = []
    for g in metrics.get("gates", []):
        block = metrics.get(g["scope"], {})
        e = block.get(g["metric"], {})
        lo, hi = (e.get("ci95") or [None, None])[:2]
        row = {
            "scope": g["scope"],
            "metric": g["metric"],
            "op": g["op"],
            "threshold": g["threshold"],
            "value": g["value"],
            "lo": lo,
            "hi": hi,
            "n": e.get("n"),
            "denominator": e.get("denominator"),
            "result": verdict_text(g),
            "why": g.get("why") or "",
        }
        comp = g.get("companion")
        if comp:
            c = block.get(comp["metric"], {})
            row.update(
                {
                    "companion_metric": comp["metric"],
                    "companion": comp["value"],
                    "companion_n": c.get("n"),
                    "companion_denominator": c.get("denominator"),
                    "companion_bound": comp["bound"],
                }
            )
        rows.append(row)
    return rows


SHORT = {
    "recall@10": "recall@10",
    "false_recall_rate": AUDITED,
    "temporal_correctness": "temporal",
    "holder_correctness": "holder",
}
#: the column beside the false-recall gate: the natives with an upstream tell, never gated
BESIDE = "false_recall_native"


def _verdict_mark(result: str) -> tuple[str, str]:
    """(badge class, mark) of a gate's result."""
    if result == "PASS":
        return "mb-pass", "✓ pass"
    if result.startswith("FAIL"):
        return "mb-fail", "✗ " + result.lower()
    return "mb-na", "n/a"


def _native_cell(e: dict[str, Any] | None) -> str:
    """The natives-with-a-tell cell of :func:`gate_badges`: the value, under it the interval
    and n/denominator (a narrow column), no verdict (never gated)."""
    if not e:
        return '<td class="mb-n mb-na">n/a</td>'
    lo, hi = (e.get("ci95") or [None, None])[:2]
    return (
        f'<td class="mb-n" data-beside="{esc(BESIDE)}">'
        f"{interval_html(e.get('value'), lo, hi, stacked=True)}"
        f"<br><small>n={esc(e.get('n'))}/{esc(e.get('denominator'))}</small></td>"
    )


def gate_badges(metrics: dict[str, Any], tells: dict[str, float | None] | None = None) -> str:
    """The gates as a grid: one row per scope (each modality, then all), one column per gated
    measure; each cell a badge with the verdict, value, 95% interval and n/denominator. The
    false-recall badge (the audited unanswerable items) has the answerable abstention of its
    scope beside it (a false-recall rate means nothing without it: the abstention, its
    n/denominator and the bound past which the verdict is ``FAIL (silent)``), and a silent
    badge's title gives the reason in full. Next to it, when the figures carry it, the
    natives with an upstream tell in their own column, never gated, headed with the tell's
    ROC AUC (``tells``: :func:`membench.analysis.tell_columns.sets_tells`; ``None``: a pointer
    to docs/sets.md). HTML, every data string escaped."""
    rows = gate_rows(metrics)
    gated = list(dict.fromkeys(r["metric"] for r in rows))
    spec = {r["metric"]: f"{r['op']} {r['threshold']}" for r in rows}
    by_scope: dict[str, dict[str, dict]] = {}
    for r in rows:
        by_scope.setdefault(r["scope"], {})[r["metric"]] = r
    columns = list(gated)
    if "false_recall_rate" in gated and any(BESIDE in metrics.get(s, {}) for s in by_scope):
        columns.insert(gated.index("false_recall_rate") + 1, BESIDE)
    head = (
        "<tr><th>scope</th>"
        + "".join(
            f"<th>{esc(NATIVE)}<br><small>not gated; {esc(tell_note(tells))}</small></th>"
            if m == BESIDE
            else f"<th>{esc(SHORT.get(m, m))}<br><small>gate {esc(spec[m])}</small></th>"
            for m in columns
        )
        + "</tr>"
    )
    body = []
    for scope, rs in by_scope.items():
        cells = []
        for m in columns:
            if m == BESIDE:
                cells.append(_native_cell(metrics.get(scope, {}).get(BESIDE)))
                continue
            r = rs.get(m)
            if r is None:
                cells.append('<td class="mb-n mb-na">n/a</td>')
                continue
            cls, mark = _verdict_mark(r["result"])
            val = fmt_interval(r["value"], r["lo"], r["hi"])
            title = f' title="{esc(r["why"])}"' if r.get("why") else ""
            beside = ""
            if "companion" in r:
                beside = (
                    f'<br><small class="mb-wrap">abstains on '
                    f"{esc(fmt_num(r['companion']))} of answerable "
                    f"(n={esc(r['companion_n'])}/{esc(r['companion_denominator'])}); "
                    f"silent above {esc(fmt_num(r['companion_bound'], 2))}</small>"
                )
            cells.append(
                f'<td class="mb-s"><span class="mb-badge {cls}" data-gate="{esc(scope)}|'
                f'{esc(m)}" data-result="{esc(r["result"])}"{title}>{mark} {esc(val)} '
                f"n={esc(r['n'])}/{esc(r['denominator'])}</span>{beside}</td>"
            )
        body.append(f'<tr><td class="mb-s"><b>{esc(scope)}</b></td>{"".join(cells)}</tr>')
    return (
        f'<table class="mb-t mb-gates"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'
    )


def floors_grid(
    label: str,
    metrics: dict[str, Any],
    floors: dict[str, dict[str, Any]],
    measure: str = "recall@10",
    digits: int = 3,
) -> Table:
    """``measure`` per scope of a run (``label``, its ``metrics``) with the content-free floors
    beside it (``floors``: label -> metrics, :func:`membench.analysis.floors.floor_metrics`):
    one row for the run, one per floor (``floor: random``, ...), each cell ``value [lo, hi]``
    over ``n/denominator``; then the run's margin over the best floor of each scope, with that
    floor's name (:func:`membench.analysis.floors.margins`). What position alone reaches
    stands under the run's figure."""
    from ..analysis.floors import margins
    from ..modalities import MODALITIES

    scopes = [s for s in (*MODALITIES, "all") if s in metrics and measure in metrics[s]]
    head = (
        "<tr><th>" + th(measure) + "</th>" + "".join(f"<th>{esc(s)}</th>" for s in scopes) + "</tr>"
    )

    def cell(e: dict[str, Any] | None) -> str:  # the interval under the value: 7 columns
        if e is None or is_missing(e.get("value")):
            return '<td class="mb-n mb-na">n/a</td>'
        lo, hi = (e.get("ci95") or [None, None])[:2]
        return (
            f'<td class="mb-n">{interval_html(e["value"], lo, hi, digits, stacked=True)}'
            f"<br><small>{esc(e.get('n'))}/{esc(e.get('denominator'))}</small></td>"
        )

    rows = []
    for name, m, cls in [
        (label, metrics, ""),
        *((f"floor: {f}", fm, ' class="mb-baseline mb-floor"') for f, fm in floors.items()),
    ]:
        cells = [f'<td class="mb-l">{esc(name)}</td>']
        cells += [cell((m.get(s) or {}).get(measure)) for s in scopes]
        rows.append(f"<tr{cls}>" + "".join(cells) + "</tr>")
    if floors:
        marg = margins(metrics, floors, measure)
        cells = ['<td class="mb-l">margin over the best floor</td>']
        for s in scopes:
            d = marg.get(s)
            cells.append(
                '<td class="mb-n mb-na">n/a</td>'
                if d is None
                else f'<td class="mb-n">{esc(format(d[0], f"+.{digits}f"))}<br><small>'
                f"over {esc(d[1])}</small></td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return Table(
        f'<table class="mb-t"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>',
        len(rows),
        [measure, *scopes],
    )


def comparison_grid(
    comp, scope: str, digits: int = 3, tells: dict[str, float | None] | None = None
) -> Table:
    """One scope of a comparison (:class:`membench.analysis.compare.Comparison`) side by side:
    one row per metric, one column per system, each cell ``value [lo, hi]`` and, under it,
    ``n/den`` (items used / denominator); the two false recalls labelled as in
    :func:`metrics_grid` (``tells``)."""
    s = comp.summary[comp.summary["scope"] == scope]
    metrics = list(dict.fromkeys(s["metric"]))
    head = "<tr><th>metric</th>" + "".join(f"<th>{esc(lab)}</th>" for lab in comp.labels) + "</tr>"
    rows = []
    for m in metrics:
        cells = [_metric_cell(m, tells)]
        for lab in comp.labels:
            r = s[(s["metric"] == m) & (s["system"] == lab)]
            if r.empty:
                cells.append('<td class="mb-n mb-na">n/a</td>')
                continue
            r = r.iloc[0]
            d = 1 if m.startswith("latency") else digits
            txt = fmt_interval(r["value"], r["ci95_lo"], r["ci95_hi"], d)
            na = " mb-na" if txt == "n/a" else ""
            cells.append(
                f'<td class="mb-n{na}">{esc(txt)}<br><small>n/den '
                f"{esc(r['n'])}/{esc(r['denominator'])}</small></td>"
            )
        rows.append("<tr>" + "".join(cells) + "</tr>")
    return Table(
        f'<table class="mb-t"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>',
        len(rows),
        ["metric", *comp.labels],
    )


__all__ = [
    "CSS",
    "Table",
    "collapsed",
    "comparison_grid",
    "floors_grid",
    "fmt_interval",
    "fmt_num",
    "gate_badges",
    "gate_rows",
    "interval_html",
    "judgment_sets_grid",
    "metrics_grid",
    "show",
    "th",
]
