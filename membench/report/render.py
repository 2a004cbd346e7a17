"""``membench report``: execute the notebooks with papermill and render them to HTML pages a
person can read, safely.

Layout under ``out``: one folder per run (``<label>/02_run_dev.html`` … ``04_false_recalls.html``),
one per distinct sets content (``sets-<digest>/``, :func:`sets_label`: page 01 and the sets'
Croissant card), one for the comparison when the call names more than one run
(``compare-<a>-vs-<b>/05_compare_systems.html``), the leaderboard's and the Q2D pages when asked,
and ``index.html`` listing every run with its headline figures and gate verdicts. A label is the
run directory's name with anything but ``[A-Za-z0-9._-]`` replaced by ``_`` (:func:`safe_label`);
colliding labels get ``-2``, ``-3`` … in the order given. A folder that already holds pages is
refused unless ``force=True``.

Each notebook: parameters -> execute (papermill, kernel ``python3``, cwd = repository root) ->
provenance into its metadata -> HTML export -> write; a failing notebook is still rendered
(``<name>.FAILED.html``, code shown) and the error names the notebook and cell. Every page
escapes data (:mod:`membench.report.escape`), links only inside the report (a URL from data is
text unless ``live_links=True``: :func:`external_links`, :mod:`membench.core.links`), carries a
Content-Security-Policy that loads nothing from any host, and shows the JupyterLab command in
place of a live widget (:func:`live_note_html`).

The parts: :mod:`membench.report.export` (one page's HTML), :mod:`membench.report.notebooks`
(executing them, many at once), :mod:`membench.report.index` (``report.json``, ``index.html``);
what they hold is importable from here. Start at :func:`report`: it opens the runs, plans the
pages and names the folders. Reads the runs, the sets and the notebooks; writes under ``out``
only. How a page is made and why it is safe: docs/reports.md, docs/trust.md.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from ..analysis.floors import is_floor_run
from ..analysis.tell_columns import sets_tells
from ..core import progress
from ..core.errors import MembenchError
from ..metrics.rundir import RunDir
from .escape import esc
from .export import (
    COMPARE_NOTEBOOK,
    LEADERBOARD_NOTEBOOK,
    PAGE_CSS,
    PAGE_TITLES,
    Q2D_NOTEBOOK,
    RUN_NOTEBOOKS,
    SETS_NOTEBOOK,
    SHORT_TITLES,
    STATIC,
    STEPPER_JS,
    SUMMARY_CSS,
    TEMPLATES,
    WIDGET_VIEW,
    Page,
    csp,
    live_note_html,
    static_copy,
    stepper_js,
    to_html,
)
from .index import REPORT_JSON, _record, _write_record, write_index
from .notebooks import (
    KERNEL_QUIET,
    NOTEBOOK_DIR,
    Job,
    Rendered,
    check_jobs,
    declared_parameters,
    default_jobs,
    kernel_config,
    render_jobs,
    render_notebook,
    render_shared,
    shared_groups,
)
from .provenance import provenance
from .summary import compare_summary_html, sets_summary_html, summary_html
from .tables import fmt_num, interval_html, th

# ------------------------------------------------------------------------------ labels


def safe_label(name: str) -> str:
    """A folder name from a run directory's name: ``[A-Za-z0-9._-]`` kept, the rest ``_``;
    never empty, never starting with ``.`` or ``-``."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "_", name).lstrip(".-") or "run"
    return s[:80]


def unique_labels(run_dirs: list[Path]) -> list[str]:
    """One label per run, unique within the call (``-2``, ``-3`` … after a collision)."""
    out: list[str] = []
    for d in run_dirs:
        base = safe_label(Path(d).name)
        lab, k = base, 2
        while lab in out:
            lab, k = f"{base}-{k}", k + 1
        out.append(lab)
    return out


def run_label(run_dir: Path) -> str:
    """A report folder is named after its run directory (``runs/bm25-dev`` -> ``bm25-dev``)."""
    return safe_label(Path(run_dir).name)


# ------------------------------------------------------------------------------ report


def _metrics(rd: RunDir) -> tuple[dict[str, Any] | None, str]:
    from ..analysis.summaries import load_metrics

    try:
        return load_metrics(rd), ""
    except MembenchError as e:
        return None, str(e)


def check_targets(out: Path, labels: list[str], force: bool) -> None:
    """Refuse to write into report folders that already hold pages, unless ``force``."""
    busy = [out / lab for lab in labels if (out / lab).is_dir() and any((out / lab).glob("*.html"))]
    if busy and not force:
        raise MembenchError(
            f"{busy[0]}: already holds a report ({len(busy)} folder(s) would "
            "be overwritten); pass --force to replace, or choose another --out"
        )


def sets_label(set_sha256: dict[str, str] | None) -> str:
    """The folder of the sets page (01) of one sets content: ``sets-`` and the first 12 hex
    digits of the sha256 of the set files' sha256s (sorted by file name)."""
    body = json.dumps(sorted((set_sha256 or {}).items()), separators=(",", ":"))
    return "sets-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]


def sets_card(sets_dir: Path, folder: Path, corpus: Path | None) -> dict[str, Any]:
    """Write the Croissant card of ``sets_dir`` into ``folder``; what the sets folder's record
    keeps of it: ``card`` (file name and sha256), or ``card_error`` (why there is none: sets
    of sources the manifest does not list, a corpus without the licence notes, ...), which the
    index shows instead of a link."""
    from ..core.paths import MANIFEST_PATH, corpus_root
    from ..sets.card import CARD_FILE, write_card

    try:
        folder.mkdir(parents=True, exist_ok=True)
        _, digest = write_card(sets_dir, folder / CARD_FILE, MANIFEST_PATH, corpus_root(corpus))
    except MembenchError as e:
        (folder / CARD_FILE).unlink(missing_ok=True)
        return {"card": None, "card_error": str(e)}
    return {"card": {"file": CARD_FILE, "sha256": digest}, "card_error": None}


def _remove_page(folder: Path, name: str) -> None:
    """A page a folder no longer holds (page 01 of a run, from before it moved to its sets'
    folder): its HTML, failed HTML and executed notebook."""
    for suffix in (".html", ".FAILED.html", ".ipynb"):
        (folder / f"{name}{suffix}").unlink(missing_ok=True)


def report(
    runs: list[Path],
    out: Path,
    sets_dir: Path | None = None,
    compare: list[Path] | None = None,
    corpus: Path | None = None,
    notebooks: tuple[str, ...] = RUN_NOTEBOOKS,
    extra: dict[str, Any] | None = None,
    partial: bool = False,
    final: bool = False,
    force: bool = False,
    q2d: Path | None = None,
    leaderboard: Path | None = None,
    jobs: int | None = None,
    live_links: bool = False,
) -> list[Rendered]:
    """Render the run notebooks for every run (``runs + compare``), and the comparison when
    there is more than one. Every run is opened and scored first (:meth:`RunDir.open` refuses
    an incomplete run unless ``partial``, a test-split run unless ``final``, drifted sets,
    atoms past the caps, ...), so every refusal comes before any page is rendered, and the
    notebooks get ``partial`` and ``final`` as parameters. Page 01 (the sets) is rendered once
    per sets content, into ``<out>/sets-<digest>/`` (:func:`sets_label`), and every run made
    on those set files links to it. The comparison's summary and record carry the best system
    per headline measure (:func:`membench.analysis.compare.best_systems`), which the index
    shows. Returns what was rendered (in the order: each sets page, each run's pages, the
    comparison, the leaderboard, the Q2D page); raises if any notebook failed, after rendering
    all of them. Refuses folders that already hold pages unless ``force``. ``leaderboard``:
    also page 06 for that result store (:func:`render_leaderboard`), read and checked before
    anything is rendered. ``jobs``: how many notebooks run at once (default
    :func:`default_jobs`; the pages are the same either way). ``live_links``: URLs that the
    data names are links on page 04 when ``https`` to a host of the corpus manifest's source
    entries (default: text); recorded in every page's provenance (:func:`external_links`).
    Page 02 of every run shows the recall@10 of the content-free floors among ``runs +
    compare`` (``random``, ``newest``, ``oldest``) beside the run's, on the same items; when
    the call names none, those beside the run's directory
    (:func:`membench.analysis.floors.floor_runs`)."""
    jobs = default_jobs() if jobs is None else check_jobs(jobs)
    out = Path(out)
    all_paths = [Path(r).resolve() for r in [*runs, *(compare or [])]]
    if not all_paths and q2d is None and leaderboard is None:
        raise MembenchError("report: no run directory given (--run RUN_DIR)")
    q2d_page = _q2d_page(q2d) if q2d is not None else None
    board = _leaderboard_page(leaderboard) if leaderboard is not None else None
    flags = {"partial": partial, "final": final}
    opened = [RunDir.open(p, sets_dir, **flags) for p in all_paths]  # the run's own sets
    for rd in opened:  # every refusal (atoms, lines, gold) comes before any rendering
        rd.scores()
    labels = unique_labels([rd.path for rd in opened])
    cmp_label = safe_label("compare-" + "-vs-".join(labels)) if len(opened) > 1 else None
    sets_page = SETS_NOTEBOOK in notebooks
    run_pages = tuple(n for n in notebooks if n != SETS_NOTEBOOK)
    provs = [provenance(rd) for rd in opened]
    set_labels = [sets_label(pv.get("set_sha256")) for pv in provs]
    check_targets(
        out,
        labels
        + (list(dict.fromkeys(set_labels)) if sets_page else [])
        + ([cmp_label] if cmp_label else [])
        + ([q2d_page[0]] if q2d_page else [])
        + ([board[0]] if board else []),
        force,
    )
    sets = str(Path(sets_dir).resolve()) if sets_dir else None
    root = str(Path(corpus).resolve()) if corpus else None
    links = external_links(live_links)
    # page 02 shows the content-free floors' recall@10 beside each run's: those of this call,
    # else the notebook finds them beside the run (membench.analysis.floors)
    floor_dirs = [str(rd.path) for rd in opened if is_floor_run(rd.meta)] or None
    per_run: list[tuple[str, dict[str, Any] | None]] = []
    todo: list[Job] = []
    sets_jobs: dict[str, Job] = {}
    for rd, label, prov, slab in zip(opened, labels, provs, set_labels):
        prov["external_links"] = links
        metrics, why = _metrics(rd)
        tells = sets_tells(rd.sets_dir)
        per_run.append((label, metrics))
        page_links = {SETS_NOTEBOOK: f"../{slab}/{SETS_NOTEBOOK}.html"} if sets_page else {}
        page = Page(
            label,
            tuple(notebooks),
            summary_html(metrics, label, missing=why, meta=rd.meta, tells=tells),
            page_links,
        )
        params = {
            "run_dir": str(rd.path),
            "sets_dir": str(rd.sets_dir.resolve()),
            "corpus": root,
            "live_links": bool(live_links),
            "floor_dirs": floor_dirs,
            **flags,
            **(extra or {}),
        }
        record = _record(label, rd, metrics, list(run_pages), native_tells=tells)
        if sets_page:
            record["links"] = {SETS_NOTEBOOK: f"{slab}/{SETS_NOTEBOOK}.html"}
            _remove_page(out / label, SETS_NOTEBOOK)
            _add_sets_job(sets_jobs, slab, label, rd.sets_dir, params, out, links)
        todo += [Job(name, params, out / label, prov, page, record) for name in run_pages]
        if not run_pages:
            _write_record(out / label, record)
    for slab, job in sets_jobs.items():
        job.page.summary = sets_summary_html(slab, job.record["used_by"], job.record["sets"])
        job.record.update(sets_card(Path(job.parameters["sets_dir"]), out / slab, corpus))
    todo = [*sets_jobs.values(), *todo]
    if cmp_label:
        todo.append(_compare_job(opened, labels, per_run, out, cmp_label, links, sets, flags))
    if board:
        todo.append(leaderboard_job(board, out))
    if q2d_page:
        todo.append(_q2d_job(q2d_page, out))
    with progress.step("report", total=len(todo), unit="page") as bar:
        done = render_jobs(todo, jobs, bar)
    write_index(out)
    failed = [r for r in done if not r.ok]
    if failed:
        raise MembenchError("; ".join(r.error for r in failed))
    return done


def _add_sets_job(
    sets_jobs: dict[str, Job],
    slab: str,
    label: str,
    sets_dir: Path,
    params: dict[str, Any],
    out: Path,
    links: str,
) -> None:
    """Page 01 of the sets ``slab`` into ``sets_jobs`` (once per sets content), used by the
    run ``label``."""
    if slab not in sets_jobs:
        sprov = provenance(sets_dir=sets_dir)
        sprov["external_links"] = links
        sets_jobs[slab] = Job(
            SETS_NOTEBOOK,
            params,
            out / slab,
            sprov,
            Page(slab, (SETS_NOTEBOOK,)),
            _record(slab, None, None, [SETS_NOTEBOOK], sets=sprov["set_sha256"], used_by=[]),
        )
    sets_jobs[slab].record["used_by"].append(label)


def _compare_job(
    opened: list[RunDir],
    labels: list[str],
    per_run: list[tuple[str, dict[str, Any] | None]],
    out: Path,
    cmp_label: str,
    links: str,
    sets: str | None,
    flags: dict[str, bool],
) -> Job:
    """The comparison page ``cmp_label`` of the runs ``opened``, its summary and record
    naming the best system per headline measure among the runs that are not test doubles."""
    from ..analysis.compare import ComparisonError, best_systems, verdict
    from ..analysis.power import POWER_MEASURES, power_sentence, typical_pair

    prov = provenance(opened[0])
    prov["external_links"] = links
    prov["compared_runs"] = [str(rd.path) for rd in opened]
    prov["system"] = " vs ".join(rd.label for rd in opened)
    prov["config"] = {lab: rd.meta.get("config") for lab, rd in zip(labels, opened)}
    # the test doubles (the baselines nothing and echo, the content-free floors random, newest
    # and oldest among them) are the floor, never "best":
    # nothing's false recall is 0 by silence (left out while two other runs remain)
    doubles = [
        lab
        for lab, rd in zip(labels, opened)
        if (rd.meta.get("identity") or {}).get("kind") == "test double"
    ]
    contenders = [lab for lab in labels if lab not in doubles]
    if len(contenders) < 2:
        contenders, doubles = list(labels), []
    power_said = ""
    try:
        best = best_systems(
            {lab: rd.scores() for lab, rd in zip(labels, opened) if lab in contenders}
        )
        best_note = ""
        # how small a lead these items can resolve (docs/sets.md, power)
        power_said = power_sentence(
            {
                m: typical_pair(
                    {lab: rd.scores() for lab, rd in zip(labels, opened) if lab in contenders}, m
                )
                for m in POWER_MEASURES
            },
            opened[0].meta.get("split"),
        )
    except ComparisonError as e:
        best, best_note = [], str(e)
    said = verdict(best) if best else ""
    if said and doubles:
        said += (
            f" ({', '.join(doubles)}: test doubles, the floor the others are read "
            "against, never best; their figures are in the tables below.)"
        )
    return Job(
        COMPARE_NOTEBOOK,
        {"run_dirs": [str(rd.path) for rd in opened], "sets_dir": sets, **flags},
        out / cmp_label,
        prov,
        Page(
            cmp_label,
            (COMPARE_NOTEBOOK,),
            compare_summary_html(
                per_run, best, said, best_note, sets_tells(opened[0].sets_dir), power=power_said
            ),
        ),
        _record(
            cmp_label,
            None,
            None,
            [COMPARE_NOTEBOOK],
            compared=labels,
            best=best,
            verdict=said,
            best_note=best_note,
            power=power_said,
        ),
    )


def external_links(live: bool) -> str:
    """What a page's provenance says of URLs from the data (``external_links``)."""
    if not live:
        return "text: URLs from set and run files are shown as text, never links"
    from ..core.links import manifest_link_hosts
    from ..core.paths import MANIFEST_PATH

    hosts = sorted(manifest_link_hosts(MANIFEST_PATH))
    return (
        "live (--live-links): https URLs to "
        + (", ".join(hosts) or "no host")
        + " (the corpus manifest's sources) are links on page 04; any other URL is text"
    )


def _q2d_page(q2d_dir: Path) -> tuple[str, Path, dict[str, Any]]:
    """The label, folder and result of a ``membench q2d`` experiment (its ``q2d.json`` read and
    checked before anything is rendered)."""
    from ..analysis.q2d import load_result
    from ..core.paths import resolve_user_path

    path = resolve_user_path(q2d_dir)
    return safe_label("q2d-" + path.name), path, load_result(path)


def _q2d_summary(label: str, result: dict[str, Any]) -> str:
    spec = result["spec"]
    m = spec["headline"]
    rows = "".join(
        f"<tr><td>{esc(r['share'])}</td><td>{esc(r['method'])}</td>"
        f"<td>{esc(round(r['share_kept'], 3))}</td>"
        f"<td>{interval_html(r['inflation_points'], *r['inflation_ci95'], 2)}</td>"
        f"<td>{interval_html(r['kendall_tau'], *r['kendall_tau_ci95'], 2)}</td></tr>"
        for r in result["figures"]
        if r["measure"] == m
    )
    return (
        f'<div class="mb-summary"><h2>{esc(label)}</h2><p>{esc(len(spec["systems"]))} '
        f"systems, {esc(result['queries'])} answerable {esc(', '.join(spec['modalities']))} "
        f"queries ({esc(spec['split'])}); headline {esc(m)}: inflation over the full corpus "
        "(points) and Kendall's tau of the system ranking, [95% interval].</p>"
        '<table class="mb-t"><thead><tr><th>share</th><th>method</th><th>share kept</th>'
        f"<th>inflation</th><th>tau</th></tr></thead><tbody>{rows}</tbody></table></div>"
    )


def _q2d_job(page_info: tuple[str, Path, dict[str, Any]], out: Path) -> Job:
    """Notebook 07 for one experiment folder, into ``out/q2d-<name>/``."""
    label, path, result = page_info
    systems = [s["label"] for s in result["spec"]["systems"]]
    prov = provenance(sets_dir=result["sets_dir"])
    prov["system"] = "q2d: " + ", ".join(systems)
    prov["config"] = result["spec"]
    page = Page(label, (Q2D_NOTEBOOK,), _q2d_summary(label, result))
    return Job(
        Q2D_NOTEBOOK,
        {"q2d_dir": str(path)},
        out / label,
        prov,
        page,
        _record(label, None, None, [Q2D_NOTEBOOK], compared=systems),
    )


def _leaderboard_page(store_dir: Path) -> tuple[str, Path, Any]:
    """The label, folder and leaderboard of a result store (read, checked and computed
    before anything is rendered)."""
    from ..analysis.leaderboard import leaderboard
    from ..core.paths import resolve_user_path

    path = resolve_user_path(store_dir)
    name = path.name if path.name.startswith("leaderboard") else "leaderboard-" + path.name
    return safe_label(name), path, leaderboard(path)


def _leaderboard_best_html(lb, size: str) -> str:
    """Per headline measure of the registry the leaderboard tests: the best system over all
    items (gold), its value [95% CI] and n, and every other system as ``= best`` or its
    difference with the Holm p (:func:`membench.analysis.leaderboard.best_rows`); then, never
    tested, the baselines' values and the content-free floors'."""
    from ..analysis.leaderboard import best_rows

    body = []
    for b in best_rows(lb, size):
        digits = 1 if b["measure"].startswith("latency") else 3
        others = "; ".join(
            f"{o['system']}: "
            + (
                f"{fmt_num(o['value'], digits)} FAIL (silent)"
                if o.get("silent")
                else f"{o['diff']:+.{digits}f}, p_holm {fmt_num(o['p_holm'], 3, p_value=True)}"
                if o["significant"]
                else f"= best (p_holm {fmt_num(o['p_holm'], 3, p_value=True)})"
            )
            for o in b["others"]
        )
        beside = " · ".join(
            f"{what}: "
            + ", ".join(f"{f['system']} {fmt_num(f['value'], digits)}" for f in b.get(key) or ())
            for key, what in (("baselines", "baselines"), ("floors", "content-free floors"))
            if b.get(key)
        )
        others = "; ".join(x for x in (others, beside) if x)
        body.append(
            f'<tr><td class="mb-s"><b>{th(b["measure"])}</b><br><small>'
            f"{esc(b['direction'])} is better</small></td>"
            f'<td class="mb-s">{esc(b["best"])}</td>'
            f'<td class="mb-n">{interval_html(b["value"], *b["ci95"], digits)}</td>'
            f'<td class="mb-n">{esc(b["n"] or "—")}</td>'
            f'<td class="mb-l">{esc(others)}</td></tr>'
        )
    if not body:
        return ""
    return (
        '<table class="mb-t mb-best"><thead><tr><th>measure</th><th>best system</th>'
        "<th>value [95% CI]</th><th>n</th><th>the others against the best (difference, "
        "Holm p; = best: not significantly different); the baselines and content-free "
        f"floors, never tested</th></tr></thead><tbody>"
        f"{''.join(body)}</tbody></table>"
    )


def _leaderboard_summary(label: str, lb) -> str:
    from ..analysis.leaderboard import rank_reason

    st = lb.store
    best = "".join(
        f"<h3>Which system is best, size {esc(size)} (all items, gold)</h3>"
        + _leaderboard_best_html(lb, size)
        for size in lb.size_classes
    )
    return (
        f'<div class="mb-summary" id="membench-summary"><h2>{esc(label)}</h2><p>'
        f"{esc(len(lb.entries))} entries "
        f"on the {esc(st['split'])} split ({esc(st['selection']['queries'])} queries); "
        f"judgment sets {esc(', '.join(lb.judgment_sets))}; size classes "
        f"{esc(', '.join(lb.size_classes))}.</p>{best}"
        "<h3>Why the rows are ordered as they are</h3>"
        f'<p id="membench-rank-reason"><b>The relevance tables</b>: '
        f"{esc(rank_reason(lb.rank_measure('relevance')))}</p>"
        f"<p><b>The cartridge and scope table</b>: "
        f"{esc(rank_reason(lb.rank_measure('other')))}</p></div>"
    )


def render_leaderboard(page_info: tuple[str, Path, Any], out: Path) -> Rendered:
    """Notebook 06 for one result store, into ``out/leaderboard-<name>/``."""
    return render_jobs([leaderboard_job(page_info, out)], 1)[0]


def leaderboard_job(page_info: tuple[str, Path, Any], out: Path) -> Job:
    """The :class:`Job` of notebook 06 for one result store (:func:`render_leaderboard`)."""
    label, path, lb = page_info
    prov = provenance(sets_dir=None)
    for k in ("sets_dir", "sets_match_lock"):  # the store's sets, not a folder read now
        prov.pop(k, None)
    prov["store"] = str(path)
    prov["set_sha256"] = lb.store["set_sha256"]
    prov["split"] = lb.store["split"]
    prov["system"] = "leaderboard: " + ", ".join(lb.labels[e["id"]] for e in lb.entries)
    prov["config"] = {lb.labels[e["id"]]: e["key"] for e in lb.entries}
    page = Page(label, (LEADERBOARD_NOTEBOOK,), _leaderboard_summary(label, lb))
    return Job(
        LEADERBOARD_NOTEBOOK,
        {"store_dir": str(path)},
        out / label,
        prov,
        page,
        _record(
            label,
            None,
            None,
            [LEADERBOARD_NOTEBOOK],
            compared=[lb.labels[e["id"]] for e in lb.entries],
        ),
    )


__all__ = [
    "COMPARE_NOTEBOOK",
    "KERNEL_QUIET",
    "LEADERBOARD_NOTEBOOK",
    "NOTEBOOK_DIR",
    "PAGE_CSS",
    "PAGE_TITLES",
    "Q2D_NOTEBOOK",
    "REPORT_JSON",
    "RUN_NOTEBOOKS",
    "SETS_NOTEBOOK",
    "SHORT_TITLES",
    "STATIC",
    "STEPPER_JS",
    "SUMMARY_CSS",
    "TEMPLATES",
    "WIDGET_VIEW",
    "Job",
    "Page",
    "Rendered",
    "check_jobs",
    "check_targets",
    "csp",
    "declared_parameters",
    "default_jobs",
    "external_links",
    "kernel_config",
    "leaderboard_job",
    "live_note_html",
    "render_jobs",
    "render_leaderboard",
    "render_notebook",
    "render_shared",
    "report",
    "run_label",
    "safe_label",
    "sets_label",
    "shared_groups",
    "static_copy",
    "stepper_js",
    "to_html",
    "unique_labels",
    "write_index",
]
