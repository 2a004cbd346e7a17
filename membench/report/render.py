"""``membench report``: execute the notebooks with papermill and render them to HTML pages a
person can read, safely.

Layout: one folder per run (``<out>/<label>/01_validate_sets.html`` … ``04_false_recalls.html``,
every run of the call gets all four), one for the comparison when the call names more than one
run (``<out>/compare-<a>-vs-<b>/05_compare_systems.html``) and ``<out>/index.html`` listing
every run with its headline figures and gate verdicts. A label is the run directory's name with
anything but ``[A-Za-z0-9._-]`` replaced by ``_``; two runs whose labels collide get ``-2``,
``-3`` … (in the order given), so no page overwrites another. A folder that already holds pages
is refused unless ``force=True`` (``--force``).

Each notebook goes through the same fixed sequence (as papermill's engines do): parameters ->
execute (papermill, kernel ``python3``, cwd = repository root) -> attach provenance to the
notebook metadata -> export HTML -> write. The export (template
``membench/report/templates/membench``, JupyterLab's with nothing loaded from the network)
hides every code cell and prompt, titles the page with the run's label, puts a navigation bar
(back to the index, the run's other pages) and the summary (gate badges, what to look at next:
:mod:`membench.report.summary`) at the top and the provenance at the bottom. The executed
``.ipynb`` keeps its code for JupyterLab. A notebook that fails is still rendered
(``<name>.FAILED.html``, with its code shown so the failing cell can be found) and the error names
the notebook and cell.

Safety (every page):

* every string that comes from data is escaped (:mod:`membench.report.escape`); links are
  relative paths inside the report tree only; a URL that data names (a video's ``meta.url``)
  is shown as text. ``live_links=True`` (``membench report --live-links``, off by default)
  makes such a URL a link on page 04 when it is ``https`` to a host named by the corpus
  manifest's source entries (:mod:`membench.core.links`), and nowhere else; every page records
  which in its provenance (``external_links``, in the footer and a ``membench:`` meta tag);
* a Content-Security-Policy ``<meta>``: ``default-src 'none'``; images and fonts from ``data:``
  only; inline styles allowed (pandas and matplotlib style inline); **scripts only by
  sha256**, and the only script a page carries is membench's own case stepper (page 04:
  ``static/stepper.js``, plain DOM calls, no ``eval``; ``script-src 'none'`` elsewhere). So a
  ``<script>`` or an ``onerror=`` that slipped through from data would not run, and nothing
  can be fetched from another machine, with or without live links: the policy names no host
  at all (a policy cannot govern where a clicked link goes: ``navigate-to`` was dropped from
  CSP and no browser enforces it, so that is the links' own rule above);
* a live widget (page 04's case browser, ipywidgets) cannot work without a kernel: the page
  shows, in its place, a note with the command that opens the executed notebook in JupyterLab
  (:func:`live_note_html`), and loads no widget manager. The ``.ipynb`` beside the page keeps
  the widget for JupyterLab. Nothing on a page loads a font or any other file, so the policy
  and the page agree (a browser logs no error: ``browser_check --dom`` fails a page that
  does).

Touches: writes under ``out`` only; reads the runs, the sets and the notebooks.
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..analysis.tell_columns import AUDITED, NATIVE, sets_tells, tell_note
from ..core import progress
from ..core.atomic import atomic_write_text
from ..core.errors import MembenchError
from ..core.paths import REPO_ROOT
from ..metrics.rundir import RunDir
from .escape import UnsafeLink, esc, href
from .provenance import provenance
from .summary import (best_block_html, compare_summary_html, sets_summary_html,
                      summary_html)
from .tables import CSS as TABLE_CSS
from .tables import fmt_num, gate_rows, interval_html, th

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
RUN_NOTEBOOKS = ("01_validate_sets", "02_run_dev", "03_slice_failures", "04_false_recalls")
SETS_NOTEBOOK = "01_validate_sets"      # rendered once per sets content, linked from each run
COMPARE_NOTEBOOK = "05_compare_systems"
Q2D_NOTEBOOK = "07_q2d_pooling"
LEADERBOARD_NOTEBOOK = "06_leaderboard"
PAGE_TITLES = {"01_validate_sets": "01 · sets and rules", "02_run_dev": "02 · metrics and gates",
               "03_slice_failures": "03 · where it fails (slices)",
               "04_false_recalls": "04 · false recalls, misses and scope leaks, case by case",
               "05_compare_systems": "05 · comparing systems",
               "06_leaderboard": "06 · leaderboard (size classes, judgment sets)",
               "07_q2d_pooling": "07 · sub-corpus evaluation (Q2D-Web)"}
SHORT_TITLES = {"01_validate_sets": "01 sets", "02_run_dev": "02 metrics", "03_slice_failures":
                "03 slices", "04_false_recalls": "04 cases", "05_compare_systems": "05 compare",
                "06_leaderboard": "06 leaderboard", "07_q2d_pooling": "07 q2d"}
STATIC = Path(__file__).parent / "static"
TEMPLATES = Path(__file__).parent / "templates"
STEPPER_JS = STATIC / "stepper.js"
REPORT_JSON = "report.json"

SUMMARY_CSS = """.mb-summary{font:13px system-ui,sans-serif;background:#fafafa;border:1px solid #e3e3e3;
  border-radius:6px;padding:6px 14px;margin:8px 0 14px 0}
.mb-summary h2{font-size:17px;margin:4px 0}.mb-summary h3{font-size:14px;margin:8px 0 4px 0}
.mb-summary ul{margin:2px 0 6px 18px;padding:0}"""

PAGE_CSS = """<style>
body{max-width:1240px;margin:0 auto !important;padding:0 12px !important}
.jp-Cell{padding:2px 0 !important}
.jp-OutputArea-output{overflow-x:visible}
.jp-RenderedHTMLCommon table{font-size:12px}
.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{padding:2px 6px}
.mb-nav{font:13px system-ui,sans-serif;padding:8px 0;border-bottom:1px solid #ddd;
  margin-bottom:6px}
.mb-nav a{margin-right:10px}
""" + SUMMARY_CSS + """
#membench-provenance{font:12px system-ui,sans-serif;margin:2em 0;border-top:1px solid #ddd}
#membench-provenance td,#membench-provenance th{text-align:left;padding:1px 8px;
  vertical-align:top;overflow-wrap:anywhere}
#membench-provenance pre{white-space:pre-wrap;max-width:1100px;font-size:11px}
</style>"""


@dataclass
class Rendered:
    notebook: str
    html: Path
    ok: bool
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


@dataclass
class Page:
    """What a page needs besides the notebook: its folder's label, the sibling pages, the
    summary block (HTML, already escaped), and the pages that live in another folder
    (``links``: page name -> relative href, e.g. page 01 in the folder of its sets)."""
    label: str
    pages: tuple[str, ...]
    summary: str = ""
    links: dict[str, str] = field(default_factory=dict)


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


# ------------------------------------------------------------------------------ HTML

def _head_tags(prov: dict[str, Any]) -> str:
    tags = {
        "membench:manifest_sha256": prov.get("manifest_sha256"),
        "membench:code_revision": prov.get("code_revision"),
        "membench:generated_at": prov.get("generated_at"),
        "membench:system": prov.get("system"),
        "membench:config": json.dumps(prov.get("config"), sort_keys=True)
        if prov.get("config") is not None else None,
        "membench:split": prov.get("split"),
        "membench:external_links": prov.get("external_links"),
    }
    for f, d in (prov.get("set_sha256") or {}).items():
        tags[f"membench:set_sha256:{f}"] = d
    return "".join(f'<meta name="{esc(k)}" content="{esc(v)}">\n'
                   for k, v in tags.items() if v is not None)


def _footer(prov: dict[str, Any]) -> str:
    rows = [("manifest sha256", prov.get("manifest_sha256")),
            *((f"{f} sha256", d) for f, d in (prov.get("set_sha256") or {}).items()),
            ("system", prov.get("system")), ("split", prov.get("split")),
            ("code revision", prov.get("code_revision")),
            ("external links", prov.get("external_links")),
            ("generated at", prov.get("generated_at")),
            ("test-split accesses logged", len(prov.get("test_accesses") or []))]
    body = "".join(f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>"
                   for k, v in rows if v not in (None, "null"))
    cfg = prov.get("config")
    if cfg is not None:
        body += ("<tr><th>config</th><td><details><summary>the system's config ("
                 f"{len(cfg) if isinstance(cfg, dict) else 1} entries)</summary><pre>"
                 f"{esc(json.dumps(cfg, sort_keys=True, indent=1))}</pre></details></td></tr>")
    return ('<footer id="membench-provenance"><h3>Provenance</h3><table>' + body
            + "</table></footer>\n")


def _page_href(target: str) -> str:
    """A link from a page to another page of the report tree: in its own folder, or (one
    leading ``../``) in a sibling folder; anything else is :class:`UnsafeLink`."""
    if target.startswith("../"):
        return "../" + href(target[3:])
    return href(target)


def _nav(page: Page, name: str) -> str:
    links = ['<a href="../index.html">← all reports</a>',
             f"<b>{esc(page.label)}</b>"]
    for p in page.pages:
        t = esc(PAGE_TITLES.get(p, p))
        links.append(f"<span>{t}</span>" if p == name else
                     f'<a href="{esc(_page_href(page.links.get(p, p + ".html")))}">{t}</a>')
    return '<nav class="mb-nav" id="membench-nav">' + " | ".join(links) + "</nav>"


def stepper_js() -> str:
    """The kernel-free stepper of page 04 (``static/stepper.js``), ready to inline."""
    js = STEPPER_JS.read_text(encoding="utf-8")
    if "</script" in js.lower():
        raise MembenchError(f"{STEPPER_JS}: contains '</script', cannot be inlined")
    return js


WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def live_note_html(ipynb: str = "") -> str:
    """What a static page shows where the notebook displayed a live widget (page 04's case
    browser): that it needs a running kernel, and the command that opens the executed
    notebook in JupyterLab."""
    path = ipynb or "notebooks/04_false_recalls.ipynb"
    return ('<div class="mb-live-note" id="membench-live-note" style="font:13px system-ui,'
            'sans-serif;border:1px solid #e0c060;background:#fff8e0;border-radius:6px;'
            'padding:6px 12px;margin:6px 0"><b>Here the notebook shows its live case browser, '
            "which needs a running Python kernel: a static page cannot run it.</b> The stepper "
            "above holds the first cases of each kind. To step through every case, open the "
            f"executed notebook in JupyterLab: <code>.venv/bin/jupyter lab {esc(path)}</code> "
            "(as root, add <code>--allow-root</code>), then Run, Run All Cells.</div>")


def static_copy(nb, ipynb: str = ""):
    """The notebook as a static page shows it: every live widget view replaced by
    :func:`live_note_html` and the saved widget state dropped (no widget manager is loaded:
    nothing on the page would work without a kernel). The notebook itself is not changed."""
    import copy

    out = copy.deepcopy(nb)
    out.metadata.pop("widgets", None)
    for cell in out.cells:
        for o in cell.get("outputs", []):
            if WIDGET_VIEW in (o.get("data") or {}):
                o["data"] = {"text/html": live_note_html(ipynb)}
    return out


def _script_hashes(page_html: str) -> list[str]:
    """sha256 (CSP form) of membench's own inline scripts, found by their ids."""
    out = []
    for m in re.finditer(r'<script id="membench-[a-z-]+">(.*?)</script>', page_html, re.S):
        out.append("'sha256-" + base64.b64encode(hashlib.sha256(
            m.group(1).encode("utf-8")).digest()).decode() + "'")
    return out


def csp(page_html: str) -> str:
    """The Content-Security-Policy of a page (see the module docstring)."""
    hashes = _script_hashes(page_html)
    script = " ".join(hashes) if hashes else "'none'"
    return (f"default-src 'none'; script-src {script}; style-src 'unsafe-inline'; "
            "img-src data:; font-src data:; connect-src 'none'; object-src 'none'; "
            "base-uri 'none'; form-action 'none'; frame-src 'none'")


def to_html(nb, prov: dict[str, Any], page: Page | None = None, name: str = "",
            show_code: bool = False, ipynb: str = "") -> str:
    """The HTML page of an executed notebook (see the module docstring). ``ipynb``: where
    the executed notebook is written (named by the note that replaces a live widget)."""
    from nbconvert import HTMLExporter

    nb.metadata["membench"] = prov
    exporter = HTMLExporter(template_name="membench", extra_template_basedirs=[str(TEMPLATES)],
                            exclude_input=not show_code, exclude_input_prompt=True,
                            exclude_output_prompt=True)
    body, _ = exporter.from_notebook_node(static_copy(nb, ipynb), resources={})
    if "data-membench-stepper" in body:
        body = body.replace("</body>", f'<script id="membench-stepper">{stepper_js()}</script>'
                            "\n</body>", 1)
    label = page.label if page else str(prov.get("system") or "sets")
    title = f"{label} · {PAGE_TITLES.get(name, name)} · membench"
    body = re.sub(r"<title>.*?</title>", lambda _m: f"<title>{esc(title)}</title>", body,
                  count=1, flags=re.S)
    head = (f'<meta http-equiv="Content-Security-Policy" content="{esc(csp(body))}">\n'
            + _head_tags(prov) + PAGE_CSS + TABLE_CSS)
    body = body.replace("<head>", "<head>\n" + head, 1)
    top = (_nav(page, name) + page.summary) if page else ""
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + top, body, count=1)
    return body.replace("</body>", _footer(prov) + "</body>", 1)


def _shown_path(path: Path) -> str:
    """A path as a command in the repository's root would name it (relative there when it
    is inside)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(Path(path).resolve())


def render_notebook(name: str, parameters: dict[str, Any], out_dir: Path,
                    prov: dict[str, Any], timeout: int = 3600,
                    page: Page | None = None) -> Rendered:
    """Execute notebook ``name`` with ``parameters`` and write its page into ``out_dir``."""
    return render_shared(name, parameters, [(out_dir, prov, page)], timeout)[0]


def kernel_config(socket_dir: str | Path):
    """The notebook kernel talks to membench over local IPC sockets (files under
    ``socket_dir``, a fresh private folder per execution, so kernels running at once never
    share one) rather than TCP on 127.0.0.1: nothing listens on a port, and ipykernel has no
    reason to warn, once per kernel, that its traffic is unencrypted."""
    from traitlets.config import Config

    c = Config()
    c.KernelManager.transport = "ipc"
    c.KernelManager.ip = str(Path(socket_dir) / "kernel")
    return c


#: the kernel's own log lines off: whatever the transport, ipykernel may log, when it is shut
#: down, an "ERROR | KeyboardInterrupt" of its own, which
#: says anything about the page (a cell's error is in the executed notebook, and a kernel that
#: dies is papermill's DeadKernelError)
KERNEL_QUIET = ["--IPKernelApp.log_level=CRITICAL"]


def declared_parameters(name: str) -> set[str]:
    """The parameters notebook ``name`` declares (its ``parameters`` cell)."""
    import papermill as pm

    src = NOTEBOOK_DIR / f"{name}.ipynb"
    if not src.exists():
        raise MembenchError(f"{src}: notebook not found")
    return set(pm.inspect_notebook(str(src)))


def render_shared(name: str, parameters: dict[str, Any],
                  dests: list[tuple[Path, dict[str, Any], Page | None]],
                  timeout: int = 3600) -> list[Rendered]:
    """Execute notebook ``name`` once with ``parameters`` and write its page into every
    ``(out_dir, provenance, page)`` of ``dests``: the executed cells are the same for all of
    them (they depend on the parameters only), each page gets its own provenance, navigation
    and summary. Returns one :class:`Rendered` per destination, in order."""
    import copy

    import nbformat
    import papermill as pm

    src = NOTEBOOK_DIR / f"{name}.ipynb"
    declared = declared_parameters(name)
    parameters = {k: v for k, v in parameters.items() if k in declared}
    first = dests[0][0]
    first.mkdir(parents=True, exist_ok=True)
    tmp = first / f".{name}.running.ipynb"
    error = None
    out: list[Rendered] = []
    try:
        try:
            with tempfile.TemporaryDirectory(prefix="membench-kernel-") as sockets:
                pm.execute_notebook(str(src), str(tmp), parameters=parameters,
                                    kernel_name="python3", cwd=str(REPO_ROOT),
                                    progress_bar=False, log_output=False,
                                    execution_timeout=timeout, config=kernel_config(sockets),
                                    extra_arguments=KERNEL_QUIET)
        except pm.PapermillExecutionError as e:
            error = (f"{src}: cell {e.cell_index} (execution {e.exec_count}) raised "
                     f"{e.ename}: {e.evalue}")
        executed_nb = nbformat.read(str(tmp), as_version=4)
        for out_dir, prov, page in dests:
            nb = copy.deepcopy(executed_nb) if len(dests) > 1 else executed_nb
            out_dir.mkdir(parents=True, exist_ok=True)
            html_path = out_dir / (f"{name}.html" if error is None else f"{name}.FAILED.html")
            atomic_write_text(html_path, to_html(nb, prov, page, name,
                                                 show_code=error is not None,
                                                 ipynb=_shown_path(out_dir / f"{name}.ipynb")))
            atomic_write_text(out_dir / f"{name}.ipynb", nbformat.writes(nb))  # metadata.membench
            stale = out_dir / (f"{name}.FAILED.html" if error is None else f"{name}.html")
            stale.unlink(missing_ok=True)
            out.append(Rendered(name, html_path, error is None, error, prov))
    finally:
        tmp.unlink(missing_ok=True)
    return out


# ------------------------------------------------------------------------------ report

def _metrics(rd: RunDir) -> tuple[dict[str, Any] | None, str]:
    from ..analysis.summaries import load_metrics

    try:
        return load_metrics(rd), ""
    except MembenchError as e:
        return None, str(e)


def _record(label: str, rd: RunDir | None, metrics: dict[str, Any] | None,
            pages: list[str], **extra) -> dict[str, Any]:
    """What the index shows of one report folder (written as ``report.json``); ``extra`` holds,
    for a run, the strength of its sets' upstream tells (``native_tells``: source -> ROC AUC,
    :func:`membench.analysis.tell_columns.sets_tells`: the label of its natives' false
    recall)."""
    from ..metrics.measures import HEADLINE

    rec: dict[str, Any] = {"label": label, "pages": pages, **extra}
    if rd is not None:
        rec.update({"run_dir": str(rd.path), "system": rd.meta.get("system"),
                    "split": rd.meta.get("split"), "limit": rd.meta.get("limit"),
                    "queries": rd.meta.get("queries"), "status": rd.meta.get("status"),
                    "sealed": bool(rd.meta.get("sealed")),
                    "ran": (rd.meta.get("identity") or {}).get("kind")})
    if metrics is not None:
        rec["headline"] = {m: metrics["all"][m] for m in HEADLINE if m in metrics.get("all", {})}
        rec["gates"] = gate_rows(metrics)
    return rec


def check_targets(out: Path, labels: list[str], force: bool) -> None:
    """Refuse to write into report folders that already hold pages, unless ``force``."""
    busy = [out / lab for lab in labels
            if (out / lab).is_dir() and any((out / lab).glob("*.html"))]
    if busy and not force:
        raise MembenchError(f"{busy[0]}: already holds a report ({len(busy)} folder(s) would "
                            "be overwritten); pass --force to replace, or choose another --out")


@dataclass
class Job:
    """One page to render: :func:`render_notebook`'s arguments, and the ``report.json`` record
    its folder gets once every page of the folder is done."""
    name: str
    parameters: dict[str, Any]
    out_dir: Path
    prov: dict[str, Any]
    page: Page
    record: dict[str, Any] | None = None


def default_jobs() -> int:
    """How many notebooks run at once by default: one per CPU this process may use (its
    affinity mask), at most 4."""
    import os

    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(4, n))


def _render_group(group: list[Job]) -> list[Rendered]:
    """Render jobs that share one execution (:func:`shared_groups`): one per page."""
    return render_shared(group[0].name, group[0].parameters,
                         [(j.out_dir, j.prov, j.page) for j in group])


def shared_groups(jobs: list[Job]) -> list[list[int]]:
    """The jobs as groups of indices that need one notebook execution each: the same notebook
    with the same values of the parameters it declares (page 01 of every run on the same sets
    and corpus, say) is executed once and written into each page's folder. In the order of
    each group's first job."""
    declared: dict[str, set[str]] = {}
    groups: dict[str, list[int]] = {}
    for i, job in enumerate(jobs):
        if job.name not in declared:
            declared[job.name] = declared_parameters(job.name)
        params = {k: v for k, v in job.parameters.items() if k in declared[job.name]}
        key = job.name + "\0" + json.dumps(params, sort_keys=True, default=str)
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def render_jobs(jobs: list[Job], workers: int, bar=None) -> list[Rendered]:
    """Render every job, ``workers`` at a time, and return what was rendered in the order of
    ``jobs``. Each notebook runs in its own kernel either way; with ``workers`` > 1 the
    execution and export of up to ``workers`` pages overlap (one process each, started fresh,
    so nothing of this process is shared with them). A page folder's ``report.json`` is
    written when its last page is done. A worker that dies is an error naming the page. Pages
    that need the same execution (:func:`shared_groups`) get it once."""
    done: list[Rendered | None] = [None] * len(jobs)
    left: dict[Path, int] = {}          # pages of each folder not done yet
    for job in jobs:
        left[job.out_dir] = left.get(job.out_dir, 0) + 1
    records = {job.out_dir: job.record for job in jobs if job.record is not None}

    def finish(i: int, r: Rendered) -> None:
        done[i] = r
        left[jobs[i].out_dir] -= 1
        if left[jobs[i].out_dir] == 0 and jobs[i].out_dir in records:
            _write_record(jobs[i].out_dir, records[jobs[i].out_dir])
        if bar is not None:
            bar.note(f"{jobs[i].page.label}/{jobs[i].name}")
            bar.advance()

    groups = shared_groups(jobs)
    if workers <= 1 or len(groups) <= 1:
        for g in groups:
            for i, r in zip(g, _render_group([jobs[i] for i in g]), strict=True):
                finish(i, r)
        return done  # type: ignore[return-value]
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor, as_completed
    from concurrent.futures.process import BrokenProcessPool

    with ProcessPoolExecutor(max_workers=min(workers, len(groups)),
                             mp_context=mp.get_context("spawn")) as pool:
        # the comparison page is the longest: started first, it does not trail the rest
        order = sorted(groups, key=lambda g: jobs[g[0]].name != COMPARE_NOTEBOOK)
        futures = {pool.submit(_render_group, [jobs[i] for i in g]): g for g in order}
        for fut in as_completed(futures):
            g = futures[fut]
            try:
                rs = fut.result()
            except BaseException as e:      # no page is started after a failure
                for f in futures:
                    f.cancel()
                if not isinstance(e, BrokenProcessPool):
                    raise
                raise MembenchError(f"report: the process rendering {jobs[g[0]].out_dir}/"
                                    f"{jobs[g[0]].name} died (out of memory?); the pages done "
                                    "so far are kept; run the command again") from None
            for i, r in zip(g, rs, strict=True):
                finish(i, r)
    return done  # type: ignore[return-value]


def sets_label(set_sha256: dict[str, str] | None) -> str:
    """The folder of the sets page (01) of one sets content: ``sets-`` and the first 12 hex
    digits of the sha256 of the set files' sha256s (sorted by file name)."""
    body = json.dumps(sorted((set_sha256 or {}).items()), separators=(",", ":"))
    return "sets-" + hashlib.sha256(body.encode("utf-8")).hexdigest()[:12]


def _remove_page(folder: Path, name: str) -> None:
    """A page a folder no longer holds (page 01 of a run, from before it moved to its sets'
    folder): its HTML, failed HTML and executed notebook."""
    for suffix in (".html", ".FAILED.html", ".ipynb"):
        (folder / f"{name}{suffix}").unlink(missing_ok=True)


def report(runs: list[Path], out: Path, sets_dir: Path | None = None,
           compare: list[Path] | None = None, corpus: Path | None = None,
           notebooks: tuple[str, ...] = RUN_NOTEBOOKS, extra: dict[str, Any] | None = None,
           partial: bool = False, final: bool = False, force: bool = False,
           q2d: Path | None = None, leaderboard: Path | None = None,
           jobs: int | None = None, live_links: bool = False) -> list[Rendered]:
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
    entries (default: text); recorded in every page's provenance (:func:`external_links`)."""
    from ..analysis.compare import ComparisonError, best_systems, verdict

    out = Path(out)
    all_paths = [Path(r).resolve() for r in [*runs, *(compare or [])]]
    if not all_paths and q2d is None and leaderboard is None:
        raise MembenchError("report: no run directory given (--run RUN_DIR)")
    q2d_page = _q2d_page(q2d) if q2d is not None else None
    board = _leaderboard_page(leaderboard) if leaderboard is not None else None
    flags = {"partial": partial, "final": final}
    opened = [RunDir.open(p, sets_dir, **flags) for p in all_paths]   # the run's own sets
    for rd in opened:       # every refusal (atoms, lines, gold) comes before any rendering
        rd.scores()
    labels = unique_labels([rd.path for rd in opened])
    cmp_label = safe_label("compare-" + "-vs-".join(labels)) if len(opened) > 1 else None
    sets_page = SETS_NOTEBOOK in notebooks
    run_pages = tuple(n for n in notebooks if n != SETS_NOTEBOOK)
    provs = [provenance(rd) for rd in opened]
    set_labels = [sets_label(pv.get("set_sha256")) for pv in provs]
    check_targets(out, labels + (list(dict.fromkeys(set_labels)) if sets_page else [])
                  + ([cmp_label] if cmp_label else [])
                  + ([q2d_page[0]] if q2d_page else []) + ([board[0]] if board else []), force)
    sets = str(Path(sets_dir).resolve()) if sets_dir else None
    root = str(Path(corpus).resolve()) if corpus else None
    links = external_links(live_links)
    per_run: list[tuple[str, dict[str, Any] | None]] = []
    todo: list[Job] = []
    sets_jobs: dict[str, Job] = {}
    for rd, label, prov, slab in zip(opened, labels, provs, set_labels):
        prov["external_links"] = links
        metrics, why = _metrics(rd)
        tells = sets_tells(rd.sets_dir)
        per_run.append((label, metrics))
        page_links = {SETS_NOTEBOOK: f"../{slab}/{SETS_NOTEBOOK}.html"} if sets_page else {}
        page = Page(label, tuple(notebooks), summary_html(metrics, label, missing=why,
                                                          meta=rd.meta, tells=tells),
                    page_links)
        params = {"run_dir": str(rd.path), "sets_dir": str(rd.sets_dir.resolve()),
                  "corpus": root, "live_links": bool(live_links), **flags, **(extra or {})}
        record = _record(label, rd, metrics, list(run_pages), native_tells=tells)
        if sets_page:
            record["links"] = {SETS_NOTEBOOK: f"{slab}/{SETS_NOTEBOOK}.html"}
            _remove_page(out / label, SETS_NOTEBOOK)
            if slab not in sets_jobs:
                sprov = provenance(sets_dir=rd.sets_dir)
                sprov["external_links"] = links
                sets_jobs[slab] = Job(SETS_NOTEBOOK, params, out / slab, sprov,
                                      Page(slab, (SETS_NOTEBOOK,)),
                                      _record(slab, None, None, [SETS_NOTEBOOK],
                                              sets=sprov["set_sha256"], used_by=[]))
            sets_jobs[slab].record["used_by"].append(label)
        todo += [Job(name, params, out / label, prov, page, record) for name in run_pages]
        if not run_pages:
            _write_record(out / label, record)
    for slab, job in sets_jobs.items():
        job.page.summary = sets_summary_html(slab, job.record["used_by"], job.record["sets"])
    todo = [*sets_jobs.values(), *todo]
    if cmp_label:
        prov = provenance(opened[0])
        prov["external_links"] = links
        prov["compared_runs"] = [str(rd.path) for rd in opened]
        prov["system"] = " vs ".join(rd.label for rd in opened)
        prov["config"] = {lab: rd.meta.get("config") for lab, rd in zip(labels, opened)}
        # the test doubles (the no-memory baselines among them) are the floor, never "best":
        # nothing's false recall is 0 by silence (left out while two other runs remain)
        doubles = [lab for lab, rd in zip(labels, opened)
                   if (rd.meta.get("identity") or {}).get("kind") == "test double"]
        contenders = [lab for lab in labels if lab not in doubles]
        if len(contenders) < 2:
            contenders, doubles = list(labels), []
        try:
            best = best_systems({lab: rd.scores() for lab, rd in zip(labels, opened)
                                 if lab in contenders})
            best_note = ""
        except ComparisonError as e:
            best, best_note = [], str(e)
        said = verdict(best) if best else ""
        if said and doubles:
            said += (f" ({', '.join(doubles)}: test doubles, the floor the others are read "
                     "against, never best; their figures are in the tables below.)")
        todo.append(Job(COMPARE_NOTEBOOK, {"run_dirs": [str(rd.path) for rd in opened],
                                           "sets_dir": sets, **flags}, out / cmp_label, prov,
                        Page(cmp_label, (COMPARE_NOTEBOOK,),
                             compare_summary_html(per_run, best, said, best_note,
                                                  sets_tells(opened[0].sets_dir))),
                        _record(cmp_label, None, None, [COMPARE_NOTEBOOK], compared=labels,
                                best=best, verdict=said, best_note=best_note)))
    if board:
        todo.append(leaderboard_job(board, out))
    if q2d_page:
        todo.append(_q2d_job(q2d_page, out))
    with progress.step("report", total=len(todo), unit="page") as bar:
        done = render_jobs(todo, default_jobs() if jobs is None else jobs, bar)
    write_index(out)
    failed = [r for r in done if not r.ok]
    if failed:
        raise MembenchError("; ".join(r.error for r in failed))
    return done


def external_links(live: bool) -> str:
    """What a page's provenance says of URLs from the data (``external_links``)."""
    if not live:
        return "text: URLs from set and run files are shown as text, never links"
    from ..core.links import manifest_link_hosts
    from ..core.paths import MANIFEST_PATH

    hosts = sorted(manifest_link_hosts(MANIFEST_PATH))
    return ("live (--live-links): https URLs to " + (", ".join(hosts) or "no host")
            + " (the corpus manifest's sources) are links on page 04; any other URL is text")


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
        for r in result["figures"] if r["measure"] == m)
    return (f'<div class="mb-summary"><h2>{esc(label)}</h2><p>{esc(len(spec["systems"]))} '
            f"systems, {esc(result['queries'])} answerable {esc(', '.join(spec['modalities']))} "
            f"queries ({esc(spec['split'])}); headline {esc(m)}: inflation over the full corpus "
            "(points) and Kendall's tau of the system ranking, [95% interval].</p>"
            '<table class="mb-t"><thead><tr><th>share</th><th>method</th><th>share kept</th>'
            f"<th>inflation</th><th>tau</th></tr></thead><tbody>{rows}</tbody></table></div>")


def _q2d_job(page_info: tuple[str, Path, dict[str, Any]], out: Path) -> Job:
    """Notebook 07 for one experiment folder, into ``out/q2d-<name>/``."""
    label, path, result = page_info
    systems = [s["label"] for s in result["spec"]["systems"]]
    prov = provenance(sets_dir=result["sets_dir"])
    prov["system"] = "q2d: " + ", ".join(systems)
    prov["config"] = result["spec"]
    page = Page(label, (Q2D_NOTEBOOK,), _q2d_summary(label, result))
    return Job(Q2D_NOTEBOOK, {"q2d_dir": str(path)}, out / label, prov, page,
               _record(label, None, None, [Q2D_NOTEBOOK], compared=systems))


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
    difference with the Holm p (:func:`membench.analysis.leaderboard.best_rows`)."""
    from ..analysis.leaderboard import best_rows

    body = []
    for b in best_rows(lb, size):
        digits = 1 if b["measure"].startswith("latency") else 3
        others = "; ".join(
            f"{o['system']}: " + (f"{o['diff']:+.{digits}f}, p_holm "
                                  f"{fmt_num(o['p_holm'], 3, p_value=True)}"
                                  if o["significant"] else
                                  f"= best (p_holm {fmt_num(o['p_holm'], 3, p_value=True)})")
            for o in b["others"])
        body.append(f'<tr><td class="mb-s"><b>{th(b["measure"])}</b><br><small>'
                    f'{esc(b["direction"])} is better</small></td>'
                    f'<td class="mb-s">{esc(b["best"])}</td>'
                    f'<td class="mb-n">{interval_html(b["value"], *b["ci95"], digits)}</td>'
                    f'<td class="mb-n">{esc(b["n"])}</td><td class="mb-l">{esc(others)}</td></tr>')
    if not body:
        return ""
    return ('<table class="mb-t mb-best"><thead><tr><th>measure</th><th>best system</th>'
            "<th>value [95% CI]</th><th>n</th><th>the others against the best (difference, "
            f"Holm p; = best: not significantly different)</th></tr></thead><tbody>"
            f"{''.join(body)}</tbody></table>")


def _leaderboard_summary(label: str, lb) -> str:
    from ..analysis.leaderboard import rank_reason

    st = lb.store
    best = "".join(f"<h3>Which system is best, size {esc(size)} (all items, gold)</h3>"
                   + _leaderboard_best_html(lb, size) for size in lb.size_classes)
    return (f'<div class="mb-summary" id="membench-summary"><h2>{esc(label)}</h2><p>'
            f'{esc(len(lb.entries))} entries '
            f"on the {esc(st['split'])} split ({esc(st['selection']['queries'])} queries); "
            f"judgment sets {esc(', '.join(lb.judgment_sets))}; size classes "
            f"{esc(', '.join(lb.size_classes))}.</p>{best}"
            "<h3>Why the rows are ordered as they are</h3>"
            f'<p id="membench-rank-reason"><b>The relevance tables</b>: '
            f"{esc(rank_reason(lb.rank_measure('relevance')))}</p>"
            f"<p><b>The cartridge and scope table</b>: "
            f"{esc(rank_reason(lb.rank_measure('other')))}</p></div>")


def render_leaderboard(page_info: tuple[str, Path, Any], out: Path) -> Rendered:
    """Notebook 06 for one result store, into ``out/leaderboard-<name>/``."""
    return render_jobs([leaderboard_job(page_info, out)], 1)[0]


def leaderboard_job(page_info: tuple[str, Path, Any], out: Path) -> Job:
    """The :class:`Job` of notebook 06 for one result store (:func:`render_leaderboard`)."""
    label, path, lb = page_info
    prov = provenance(sets_dir=None)
    for k in ("sets_dir", "sets_match_lock"):     # the store's sets, not a folder read now
        prov.pop(k, None)
    prov["store"] = str(path)
    prov["set_sha256"] = lb.store["set_sha256"]
    prov["split"] = lb.store["split"]
    prov["system"] = "leaderboard: " + ", ".join(lb.labels[e["id"]] for e in lb.entries)
    prov["config"] = {lb.labels[e["id"]]: e["key"] for e in lb.entries}
    page = Page(label, (LEADERBOARD_NOTEBOOK,), _leaderboard_summary(label, lb))
    return Job(LEADERBOARD_NOTEBOOK, {"store_dir": str(path)}, out / label, prov, page,
               _record(label, None, None, [LEADERBOARD_NOTEBOOK],
                       compared=[lb.labels[e["id"]] for e in lb.entries]))


def _write_record(folder: Path, rec: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / REPORT_JSON,
                      json.dumps(rec, indent=1, sort_keys=True, default=str) + "\n")


# ------------------------------------------------------------------------------ index

def _verdicts_html(gates: list[dict[str, Any]]) -> str:
    by: dict[str, list[str]] = {}
    for g in gates:
        by.setdefault(g["scope"], []).append(g["result"])
    out = []
    for scope, rs in by.items():
        cls = "mb-fail" if any(r.startswith("FAIL") for r in rs) else (
            "mb-pass" if "PASS" in rs else "mb-na")
        out.append(f'<span class="mb-badge {cls}" title="{esc(scope)}">{esc(scope)} '
                   f'{rs.count("PASS")}/{len(rs)}</span>')
    return '<div class="mb-badges">' + "".join(out) + "</div>"


def _legacy_record(d: Path) -> dict[str, Any]:
    """A folder written before report.json existed: its pages and provenance only."""
    prov = _read_prov(d)
    return {"label": d.name, "pages": [p.stem for p in sorted(d.glob("*.html"))],
            "system": prov.get("system"), "split": prov.get("split")}


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
            f'{esc(SHORT_TITLES.get(n, n))}</a>' for n in sorted(targets))
    except UnsafeLink:                         # a folder made by hand or an old version
        return "<i>folder name not linkable</i>"


def _index_head(m: str) -> str:
    """A headline measure's column header on the index; the two false recalls by their labels
    (:mod:`membench.analysis.tell_columns`): audited and gated, and the natives with an
    upstream tell, not gated, each cell with its sets' tell ROC AUC."""
    if m == "false_recall_rate":
        return f"<th>{esc(AUDITED)}<br><small>gated; [95% CI], n</small></th>"
    if m == "false_recall_native":
        return (f"<th>{esc(NATIVE)}<br><small>not gated; [95% CI], n; the tell's ROC AUC"
                "</small></th>")
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
    tell = (f'<br><small class="mb-wrap">{esc(tell_note(rec.get("native_tells")))}</small>'
            if m == "false_recall_native" else "")
    return f'<td class="mb-n">{v}<br><small>n={esc(e.get("n"))}</small>{tell}</td>'


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
        rec["label"] = d.name                      # the folder on disk decides the links
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
            f'{esc(rec["label"])}</b><br><small>{esc(rec.get("system"))} · '
            f'{esc(rec.get("split"))}{" · limit " + esc(lim) if lim else ""} · '
            f'{esc(rec.get("queries"))} queries</small></td>'
            f'<td class="mb-l">{n_pass} of {len(gates)} pass{_verdicts_html(gates)}</td>'
            f"{cells}<td class=\"mb-s\">{links}</td></tr>")
    best = "".join(
        f'<section class="mb-summary" id="membench-best-{esc(rec["label"])}">'
        + best_block_html(rec.get("best") or [], rec.get("verdict") or "",
                          note=rec.get("best_note") or "").replace(
            "<h3>Which system is best</h3>",
            f"<h2>Which system is best: {esc(', '.join(rec.get('compared') or []))}</h2>"
            "<p>Per headline measure over all items: the best system, its lead over the "
            "runner-up on the same items (paired bootstrap interval), the paired permutation "
            "test corrected by Holm over the measures, and n. The gates of each run are in "
            "the table below.</p>", 1)
        + "</section>"
        for rec, _ in comps if "best" in rec or rec.get("best_note"))
    comp_rows = "".join(
        f'<tr><td class="mb-s"><b>{esc(rec["label"])}</b></td><td class="mb-s">'
        f'{esc(", ".join(rec.get("compared") or []))}</td><td class="mb-s">{links}</td></tr>'
        for rec, links in comps)
    # a sets page is listed with the runs of this folder that link it now; one no run links
    # any more (the runs were made again on other set files) is left out
    linked: dict[str, list[str]] = {}
    for rec, _ in runs:
        target = (rec.get("links") or {}).get(SETS_NOTEBOOK, "")
        linked.setdefault(target.split("/", 1)[0], []).append(rec["label"])
    set_pages = [(rec, links) for rec, links in set_pages if linked.get(rec["label"])]
    set_rows = "".join(
        f'<tr><td class="mb-s"><b>{esc(rec["label"])}</b></td><td class="mb-s">'
        f'{esc(", ".join(linked[rec["label"]]))}</td><td class="mb-s">{links}</td></tr>'
        for rec, links in set_pages)
    policy = csp("")
    page = ("<!doctype html><html><head><meta charset='utf-8'>"
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">'
            "<title>membench reports</title>" + TABLE_CSS +
            "<style>body{font-family:system-ui,sans-serif;margin:1.5em auto;max-width:1240px;"
            "padding:0 12px}#membench-runs tr.mb-run>td:first-child{white-space:normal;min-width:7em;"
            "max-width:11em;overflow-wrap:anywhere}" + SUMMARY_CSS + "</style></head><body>"
            "<h1>membench reports</h1>" + best +
            "<h2>Runs</h2><p>One row per run: its gates (pass / all, per scope) "
            "and headline figures over all items, value [95% bootstrap interval] (n = "
            "denominator). False recall counts the audited unanswerable items; the natives "
            "with an upstream tell have their own column, never gated, with the tell's ROC "
            "AUC from the audit of the run's sets. Open a run's pages for everything else.</p>"
            f'<table class="mb-t" id="membench-runs"><thead><tr><th>run</th><th>gates</th>{head}'
            f"<th>pages</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            + (f'<h2>Comparisons</h2><table class="mb-t"><thead><tr><th>report</th>'
               f"<th>runs</th><th>pages</th></tr></thead><tbody>{comp_rows}</tbody></table>"
               if comps else "")
            + (f'<h2>Sets</h2><p>Page 01, once per sets content (the set files by sha256), '
               "linked from every run made on them.</p>"
               f'<table class="mb-t" id="membench-sets"><thead><tr><th>sets</th>'
               f"<th>used by the runs</th><th>pages</th></tr></thead><tbody>{set_rows}"
               "</tbody></table>" if set_pages else "")
            + "</body></html>\n")
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


__all__ = ["COMPARE_NOTEBOOK", "LEADERBOARD_NOTEBOOK", "Q2D_NOTEBOOK", "RUN_NOTEBOOKS", "Job", "Page", "csp", "default_jobs", "external_links", "render_jobs", "render_notebook", "report",
           "safe_label", "to_html", "unique_labels", "write_index"]
