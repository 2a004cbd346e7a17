"""The report's index page and the ``report.json`` record of each report folder it reads.

Holds :func:`_record` (what the index shows of one folder: a run's system, split, headline
figures and gate verdicts; a comparison's best system per headline measure; a sets page's
runs), :func:`_write_record`, and :func:`write_index`: ``<out>/index.html``, every folder under
``out`` with its pages (a folder written before ``report.json`` existed: from its notebooks'
provenance); a sets folder's row also links its Croissant card with the card's sha256.

Touches: reads the folders under ``out`` (``report.json``, the page names, the executed
notebooks' metadata); writes ``report.json`` into a folder and ``<out>/index.html``.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ..analysis.tell_columns import AUDITED, NATIVE, tell_note
from ..core.atomic import atomic_write_text
from ..metrics.rundir import RunDir
from .escape import UnsafeLink, esc, href
from .export import PAGE_TITLES, SETS_NOTEBOOK, SHORT_TITLES, SUMMARY_CSS, csp
from .summary import best_block_html
from .tables import CSS as TABLE_CSS
from .tables import gate_rows, interval_html, th

REPORT_JSON = "report.json"


def _record(
    label: str, rd: RunDir | None, metrics: dict[str, Any] | None, pages: list[str], **extra
) -> dict[str, Any]:
    """What the index shows of one report folder (written as ``report.json``); ``extra`` holds,
    for a run, the strength of its sets' upstream tells (``native_tells``: source -> ROC AUC,
    :func:`membench.analysis.tell_columns.sets_tells`: the label of its natives' false
    recall)."""
    from ..metrics.measures import HEADLINE

    rec: dict[str, Any] = {"label": label, "pages": pages, **extra}
    if rd is not None:
        rec.update(
            {
                "run_dir": str(rd.path),
                "system": rd.meta.get("system"),
                "split": rd.meta.get("split"),
                "limit": rd.meta.get("limit"),
                "queries": rd.meta.get("queries"),
                "status": rd.meta.get("status"),
                "sealed": bool(rd.meta.get("sealed")),
                "ran": (rd.meta.get("identity") or {}).get("kind"),
            }
        )
    if metrics is not None:
        rec["headline"] = {m: metrics["all"][m] for m in HEADLINE if m in metrics.get("all", {})}
        rec["gates"] = gate_rows(metrics)
    return rec


def _write_record(folder: Path, rec: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(
        folder / REPORT_JSON, json.dumps(rec, indent=1, sort_keys=True, default=str) + "\n"
    )


# ------------------------------------------------------------------------------ index


def _verdicts_html(gates: list[dict[str, Any]]) -> str:
    by: dict[str, list[str]] = {}
    for g in gates:
        by.setdefault(g["scope"], []).append(g["result"])
    out = []
    for scope, rs in by.items():
        cls = (
            "mb-fail"
            if any(r.startswith("FAIL") for r in rs)
            else ("mb-pass" if "PASS" in rs else "mb-na")
        )
        out.append(
            f'<span class="mb-badge {cls}" title="{esc(scope)}">{esc(scope)} '
            f"{rs.count('PASS')}/{len(rs)}</span>"
        )
    return '<div class="mb-badges">' + "".join(out) + "</div>"


def _legacy_record(d: Path) -> dict[str, Any]:
    """A folder written before report.json existed: its pages and provenance only."""
    prov = _read_prov(d)
    return {
        "label": d.name,
        "pages": [p.stem for p in sorted(d.glob("*.html"))],
        "system": prov.get("system"),
        "split": prov.get("split"),
    }


def _links_html(d: Path, rec: dict[str, Any], pages: list[Path]) -> str:
    """A folder's page links for the index: its own pages and those it links elsewhere
    (``links`` of its record: page 01 in its sets' folder), in page order."""
    targets = {p.stem: f"{d.name}/{p.name}" for p in pages}
    for name, rel in (rec.get("links") or {}).items():
        if name not in targets and (d.parent / rel).exists():
            targets[name] = rel
    try:
        return "<br>".join(
            f'<a href="{esc(href(targets[n]))}" title="{esc(PAGE_TITLES.get(n, n))}">'
            f"{esc(SHORT_TITLES.get(n, n))}</a>"
            for n in sorted(targets)
        )
    except UnsafeLink:  # a folder made by hand or an old version
        return "<i>folder name not linkable</i>"


def _index_head(m: str) -> str:
    """A headline measure's column header on the index; the two false recalls by their labels
    (:mod:`membench.analysis.tell_columns`): audited and gated, and the natives with an
    upstream tell, not gated, each cell with its sets' tell ROC AUC."""
    if m == "false_recall_rate":
        return f"<th>{esc(AUDITED)}<br><small>gated; [95% CI], n</small></th>"
    if m == "false_recall_native":
        return (
            f"<th>{esc(NATIVE)}<br><small>not gated; [95% CI], n; the tell's ROC AUC</small></th>"
        )
    return f"<th>{th(m)}<br><small>[95% CI], n</small></th>"


def _index_cell(m: str, rec: dict[str, Any]) -> str:
    """A run's figure of headline measure ``m`` on the index: value [95% CI] and n (``n/a``
    for a record without it); the natives' false recall also names the tell's ROC AUC of the
    run's sets (the record's ``native_tells``; a record written before it: the pointer to
    docs/sets.md)."""
    e = (rec.get("headline") or {}).get(m)
    if not e:
        return '<td class="mb-n mb-na">n/a</td>'
    lo, hi = (e.get("ci95") or [None, None])[:2]
    v = interval_html(e.get("value"), lo, hi, 1 if m.startswith("latency") else 3, stacked=True)
    tell = (
        f'<br><small class="mb-wrap">{esc(tell_note(rec.get("native_tells")))}</small>'
        if m == "false_recall_native"
        else ""
    )
    return f'<td class="mb-n">{v}<br><small>n={esc(e.get("n"))}</small>{tell}</td>'


def _card_html(out: Path, rec: dict[str, Any]) -> str:
    """A sets folder's dataset card on the index: the link and its sha256, checked against
    the file (a card edited or removed since is not linked); or why there is none."""
    import hashlib

    c = rec.get("card") or {}
    if not c.get("file"):
        return f"<i>no card: {esc(rec.get('card_error') or 'not written')}</i>"
    path = out / rec["label"] / str(c["file"])
    if not path.is_file():
        return f"<i>{esc(c['file'])} is missing</i>"
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    if digest != c.get("sha256"):
        return f"<i>{esc(c['file'])} differs from its record (sha256 {esc(digest[:12])}…)</i>"
    try:
        return (
            f'<a href="{esc(href(rec["label"] + "/" + str(c["file"])))}">{esc(c["file"])}</a>'
            f'<br><small class="mb-wrap">sha256 <code>{esc(digest)}</code></small>'
        )
    except UnsafeLink:
        return "<i>folder name not linkable</i>"


def write_index(out: Path) -> Path:
    """``<out>/index.html``: first, for each comparison, which system is best on each
    headline measure (by how much, paired test, n); then every run folder under ``out`` with
    its system, split, headline figures (all items, value [95% CI] and n) and gate verdicts per
    scope; the sets pages (one per sets content); the comparisons and leaderboards."""
    from ..metrics.measures import HEADLINE

    runs, comps, set_pages = [], [], []
    for d in sorted(p for p in Path(out).iterdir() if p.is_dir()):
        pages = sorted(d.glob("*.html"))
        if not pages:
            continue
        try:
            rec = json.loads((d / REPORT_JSON).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            rec = _legacy_record(d)
        rec["label"] = d.name  # the folder on disk decides the links
        links = _links_html(d, rec, pages)
        if "used_by" in rec:
            set_pages.append((rec, links))
        else:
            (comps if rec.get("compared") else runs).append((rec, links))
    head = "".join(_index_head(m) for m in HEADLINE)
    rows = []
    for rec, links in runs:
        cells = "".join(_index_cell(m, rec) for m in HEADLINE)
        gates = rec.get("gates") or []
        n_pass = sum(g["result"] == "PASS" for g in gates)
        lim = rec.get("limit")
        rows.append(
            f'<tr class="mb-run" data-label="{esc(rec["label"])}"><td class="mb-s"><b>'
            f"{esc(rec['label'])}</b><br><small>{esc(rec.get('system'))} · "
            f"{esc(rec.get('split'))}{' · limit ' + esc(lim) if lim else ''} · "
            f"{esc(rec.get('queries'))} queries</small></td>"
            f'<td class="mb-l">{n_pass} of {len(gates)} pass{_verdicts_html(gates)}</td>'
            f'{cells}<td class="mb-s">{links}</td></tr>'
        )
    best = "".join(
        f'<section class="mb-summary" id="membench-best-{esc(rec["label"])}">'
        + best_block_html(
            rec.get("best") or [],
            rec.get("verdict") or "",
            note=rec.get("best_note") or "",
            power=rec.get("power") or "",
        ).replace(
            "<h3>Which system is best</h3>",
            f"<h2>Which system is best: {esc(', '.join(rec.get('compared') or []))}</h2>"
            "<p>Per headline measure over all items: the best system, its lead over the "
            "runner-up on the same items (paired bootstrap interval), the paired permutation "
            "test corrected by Holm over the measures, and n. The gates of each run are in "
            "the table below.</p>",
            1,
        )
        + "</section>"
        for rec, _ in comps
        if "best" in rec or rec.get("best_note")
    )
    comp_rows = "".join(
        f'<tr><td class="mb-s"><b>{esc(rec["label"])}</b></td><td class="mb-s">'
        f'{esc(", ".join(rec.get("compared") or []))}</td><td class="mb-s">{links}</td></tr>'
        for rec, links in comps
    )
    # a sets page is listed with the runs of this folder that link it now; one no run links
    # any more (the runs were made again on other set files) is left out
    linked: dict[str, list[str]] = {}
    for rec, _ in runs:
        target = (rec.get("links") or {}).get(SETS_NOTEBOOK, "")
        linked.setdefault(target.split("/", 1)[0], []).append(rec["label"])
    set_pages = [(rec, links) for rec, links in set_pages if linked.get(rec["label"])]
    set_rows = "".join(
        f'<tr><td class="mb-s"><b>{esc(rec["label"])}</b></td><td class="mb-s">'
        f'{esc(", ".join(linked[rec["label"]]))}</td><td class="mb-s">{links}</td>'
        f'<td class="mb-s">{_card_html(Path(out), rec)}</td></tr>'
        for rec, links in set_pages
    )
    policy = csp("")
    page = (
        "<!doctype html><html><head><meta charset='utf-8'>"
        f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">'
        "<title>membench reports</title>"
        + TABLE_CSS
        + "<style>body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1240px;"
        "padding:0 12px}#membench-runs tr.mb-run>td:first-child{white-space:normal;min-width:7em;"
        "max-width:11em;overflow-wrap:anywhere}" + SUMMARY_CSS + "</style></head><body>"
        "<h1>membench reports</h1>"
        + best
        + "<h2>Runs</h2><p>One row per run: its gates (pass / all, per scope) "
        "and headline figures over all items, value [95% bootstrap interval] (n = "
        "denominator). False recall counts the audited unanswerable items; the natives "
        "with an upstream tell have their own column, never gated, with the tell's ROC "
        "AUC from the audit of the run's sets. Open a run's pages for everything else.</p>"
        f'<table class="mb-t" id="membench-runs"><thead><tr><th>run</th><th>gates</th>{head}'
        f"<th>pages</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
        + (
            f'<h2>Comparisons</h2><table class="mb-t"><thead><tr><th>report</th>'
            f"<th>runs</th><th>pages</th></tr></thead><tbody>{comp_rows}</tbody></table>"
            if comps
            else ""
        )
        + (
            f"<h2>Sets</h2><p>Page 01, once per sets content (the set files by sha256), "
            "linked from every run made on them. "
            "Each with its dataset card: Croissant 1.1 JSON-LD (files and sha256s, record "
            "fields, licences, provenance, responsible-AI fields; docs/sets.md).</p>"
            f'<table class="mb-t" id="membench-sets"><thead><tr><th>sets</th>'
            f"<th>used by the runs</th><th>pages</th><th>dataset card</th></tr></thead>"
            f"<tbody>{set_rows}"
            "</tbody></table>"
            if set_pages
            else ""
        )
        + "</body></html>\n"
    )
    path = Path(out) / "index.html"
    atomic_write_text(path, page)
    return path


def _read_prov(d: Path) -> dict:
    import nbformat

    for nb in sorted(d.glob("*.ipynb")):
        try:
            return dict(nbformat.read(str(nb), as_version=4).metadata.get("membench", {}))
        except (OSError, ValueError):
            continue
    return {}
