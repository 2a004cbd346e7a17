"""The HTML export of one executed notebook: the page a person reads (``membench report``).

Holds the report's page names and titles (:data:`PAGE_TITLES`: views of the page registry,
:data:`membench.report.pages.PAGES`), the page's CSS, the :class:`Page` a page needs besides
its notebook (label, sibling pages, summary, links), the navigation bar and provenance footer,
the Content-Security-Policy (:func:`csp`: scripts only by sha256), the kernel-free stepper of
page 04 (``static/stepper.js``), the note that replaces a live widget (:func:`live_note_html`),
and :func:`to_html`, which exports a notebook with the nbconvert template
``templates/membench``. The safety rules are in the docstring of :mod:`membench.report.render`.

Touches: reads ``static/stepper.js`` and the template; writes nothing (returns HTML).
"""

from __future__ import annotations

import base64
import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import MembenchError
from .escape import esc, href
from .pages import PAGES, RUN_ROLES, page_of
from .tables import CSS as TABLE_CSS

# views of the page registry (membench/report/pages.py) for the callers that read them
RUN_NOTEBOOKS = tuple(p.notebook for p in PAGES if p.role in RUN_ROLES)
SETS_NOTEBOOK = page_of("sets")  # rendered once per sets content, linked from each run
COMPARE_NOTEBOOK = page_of("compare")
Q2D_NOTEBOOK = page_of("q2d")
LEADERBOARD_NOTEBOOK = page_of("leaderboard")
PAGE_TITLES = {p.notebook: p.title for p in PAGES}
SHORT_TITLES = {p.notebook: p.short for p in PAGES}
STATIC = Path(__file__).parent / "static"
TEMPLATES = Path(__file__).parent / "templates"
STEPPER_JS = STATIC / "stepper.js"

SUMMARY_CSS = """.mb-summary{font:13px system-ui,sans-serif;background:#fafafa;border:1px solid #e3e3e3;
  border-radius:6px;padding:6px 14px;margin:8px 0 14px 0}
.mb-summary h2{font-size:17px;margin:4px 0}.mb-summary h3{font-size:14px;margin:8px 0 4px 0}
.mb-summary ul{margin:2px 0 6px 18px;padding:0}"""

PAGE_CSS = (
    """<style>
body{max-width:1240px;margin:0 auto !important;padding:0 12px !important}
.jp-Cell{padding:2px 0 !important}
.jp-OutputArea-output{overflow-x:visible}
.jp-RenderedHTMLCommon table{font-size:12px}
.jp-RenderedHTMLCommon td,.jp-RenderedHTMLCommon th{padding:2px 6px}
.mb-nav{font:13px system-ui,sans-serif;padding:8px 0;border-bottom:1px solid #ddd;
  margin-bottom:6px}
.mb-nav a{margin-right:10px}
"""
    + SUMMARY_CSS
    + """
#membench-provenance{font:12px system-ui,sans-serif;margin:2em 0;border-top:1px solid #ddd}
#membench-provenance td,#membench-provenance th{text-align:left;padding:1px 8px;
  vertical-align:top;overflow-wrap:anywhere}
#membench-provenance pre{white-space:pre-wrap;max-width:1100px;font-size:11px}
</style>"""
)


@dataclass
class Page:
    """What a page needs besides the notebook: its folder's label, the sibling pages, the
    summary block (HTML, already escaped), and the pages that live in another folder
    (``links``: page name -> relative href, e.g. page 01 in the folder of its sets)."""

    label: str
    pages: tuple[str, ...]
    summary: str = ""
    links: dict[str, str] = field(default_factory=dict)


# ------------------------------------------------------------------------------ HTML


def _head_tags(prov: dict[str, Any]) -> str:
    tags = {
        "membench:manifest_sha256": prov.get("manifest_sha256"),
        "membench:code_revision": prov.get("code_revision"),
        "membench:generated_at": prov.get("generated_at"),
        "membench:system": prov.get("system"),
        "membench:config": json.dumps(prov.get("config"), sort_keys=True)
        if prov.get("config") is not None
        else None,
        "membench:split": prov.get("split"),
        "membench:external_links": prov.get("external_links"),
    }
    for f, d in (prov.get("set_sha256") or {}).items():
        tags[f"membench:set_sha256:{f}"] = d
    return "".join(
        f'<meta name="{esc(k)}" content="{esc(v)}">\n' for k, v in tags.items() if v is not None
    )


def _footer(prov: dict[str, Any]) -> str:
    rows = [
        ("manifest sha256", prov.get("manifest_sha256")),
        *((f"{f} sha256", d) for f, d in (prov.get("set_sha256") or {}).items()),
        ("system", prov.get("system")),
        ("split", prov.get("split")),
        ("code revision", prov.get("code_revision")),
        ("external links", prov.get("external_links")),
        ("generated at", prov.get("generated_at")),
        ("test-split accesses logged", len(prov.get("test_accesses") or [])),
    ]
    body = "".join(
        f"<tr><th>{esc(k)}</th><td><code>{esc(v)}</code></td></tr>"
        for k, v in rows
        if v not in (None, "null")
    )
    cfg = prov.get("config")
    if cfg is not None:
        body += (
            "<tr><th>config</th><td><details><summary>the system's config ("
            f"{len(cfg) if isinstance(cfg, dict) else 1} entries)</summary><pre>"
            f"{esc(json.dumps(cfg, sort_keys=True, indent=1))}</pre></details></td></tr>"
        )
    return (
        '<footer id="membench-provenance"><h3>Provenance</h3><table>' + body + "</table></footer>\n"
    )


def _page_href(target: str) -> str:
    """A link from a page to another page of the report tree: in its own folder, or (one
    leading ``../``) in a sibling folder; anything else is :class:`UnsafeLink`."""
    if target.startswith("../"):
        return "../" + href(target[3:])
    return href(target)


def _nav(page: Page, name: str) -> str:
    links = ['<a href="../index.html">← all reports</a>', f"<b>{esc(page.label)}</b>"]
    for p in page.pages:
        t = esc(PAGE_TITLES.get(p, p))
        links.append(
            f"<span>{t}</span>"
            if p == name
            else f'<a href="{esc(_page_href(page.links.get(p, p + ".html")))}">{t}</a>'
        )
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
    return (
        '<div class="mb-live-note" id="membench-live-note" style="font:13px system-ui,'
        "sans-serif;border:1px solid #e0c060;background:#fff8e0;border-radius:6px;"
        'padding:6px 12px;margin:6px 0"><b>Here the notebook shows its live case browser, '
        "which needs a running Python kernel: a static page cannot run it.</b> The stepper "
        "above holds the first cases of each kind. To step through every case, open the "
        f"executed notebook in JupyterLab: <code>.venv/bin/jupyter lab {esc(path)}</code> "
        "(as root, add <code>--allow-root</code>), then Run, Run All Cells.</div>"
    )


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
        out.append(
            "'sha256-"
            + base64.b64encode(hashlib.sha256(m.group(1).encode("utf-8")).digest()).decode()
            + "'"
        )
    return out


def csp(page_html: str) -> str:
    """The Content-Security-Policy of a page (see the module docstring)."""
    hashes = _script_hashes(page_html)
    script = " ".join(hashes) if hashes else "'none'"
    return (
        f"default-src 'none'; script-src {script}; style-src 'unsafe-inline'; "
        "img-src data:; font-src data:; connect-src 'none'; object-src 'none'; "
        "base-uri 'none'; form-action 'none'; frame-src 'none'"
    )


def to_html(
    nb,
    prov: dict[str, Any],
    page: Page | None = None,
    name: str = "",
    show_code: bool = False,
    ipynb: str = "",
) -> str:
    """The HTML page of an executed notebook (see the module docstring). ``ipynb``: where
    the executed notebook is written (named by the note that replaces a live widget)."""
    from nbconvert import HTMLExporter

    nb.metadata["membench"] = prov
    exporter = HTMLExporter(
        template_name="membench",
        extra_template_basedirs=[str(TEMPLATES)],
        exclude_input=not show_code,
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    body, _ = exporter.from_notebook_node(static_copy(nb, ipynb), resources={})
    if "data-membench-stepper" in body:
        body = body.replace(
            "</body>", f'<script id="membench-stepper">{stepper_js()}</script>\n</body>', 1
        )
    label = page.label if page else str(prov.get("system") or "sets")
    title = f"{label} · {PAGE_TITLES.get(name, name)} · membench"
    body = re.sub(
        r"<title>.*?</title>", lambda _m: f"<title>{esc(title)}</title>", body, count=1, flags=re.S
    )
    head = (
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp(body))}">\n'
        + _head_tags(prov)
        + PAGE_CSS
        + TABLE_CSS
    )
    body = body.replace("<head>", "<head>\n" + head, 1)
    top = (_nav(page, name) + page.summary) if page else ""
    body = re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + top, body, count=1)
    return body.replace("</body>", _footer(prov) + "</body>", 1)
