"""``membench report``: execute the notebooks with papermill and render them to HTML.

One folder per run (``<out>/<run name>/01_validate_sets.html`` … ``04_false_recalls.html``), one
per comparison (``<out>/compare-<a>-vs-<b>/05_compare_systems.html``) and ``<out>/index.html``.

Each notebook goes through the same fixed sequence (as papermill's engines do):
parameters -> execute (papermill, kernel ``python3``, cwd = repository root) -> attach
provenance to the notebook metadata -> export HTML (nbconvert) -> add provenance to the HTML
head and a visible footer -> write. The executed ``.ipynb`` is kept next to the HTML; a notebook
that fails is still rendered (``<name>.FAILED.html``, showing the failing cell) and the error
names the notebook and cell. Temporary files are removed in ``finally``.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.errors import MembenchError
from ..core.paths import REPO_ROOT
from ..metrics.rundir import RunDir
from .provenance import provenance

NOTEBOOK_DIR = REPO_ROOT / "notebooks"
RUN_NOTEBOOKS = ("01_validate_sets", "02_run_dev", "03_slice_failures", "04_false_recalls")
COMPARE_NOTEBOOK = "05_compare_systems"


@dataclass
class Rendered:
    notebook: str
    html: Path
    ok: bool
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


def _head_tags(prov: dict[str, Any]) -> str:
    tags = {
        "membench:manifest_sha256": prov.get("manifest_sha256"),
        "membench:code_revision": prov.get("code_revision"),
        "membench:generated_at": prov.get("generated_at"),
        "membench:system": prov.get("system"),
        "membench:config": json.dumps(prov.get("config"), sort_keys=True)
        if prov.get("config") is not None else None,
        "membench:split": prov.get("split"),
    }
    for f, d in (prov.get("set_sha256") or {}).items():
        tags[f"membench:set_sha256:{f}"] = d
    return "".join(f'<meta name="{html.escape(k)}" content="{html.escape(str(v))}">\n'
                   for k, v in tags.items() if v is not None)


def _footer(prov: dict[str, Any]) -> str:
    rows = [("manifest sha256", prov.get("manifest_sha256")),
            *((f"{f} sha256", d) for f, d in (prov.get("set_sha256") or {}).items()),
            ("system", prov.get("system")), ("config", json.dumps(prov.get("config"),
                                                                  sort_keys=True)),
            ("split", prov.get("split")), ("code revision", prov.get("code_revision")),
            ("generated at", prov.get("generated_at")),
            ("test-split accesses logged", len(prov.get("test_accesses") or []))]
    body = "".join(f"<tr><th>{html.escape(k)}</th><td><code>{html.escape(str(v))}</code></td></tr>"
                   for k, v in rows if v not in (None, "null"))
    return ('<footer id="membench-provenance" style="margin:2em;font-size:12px">'
            "<h3>Provenance</h3><table>" + body + "</table></footer>\n")


def to_html(nb, prov: dict[str, Any]) -> str:
    from nbconvert import HTMLExporter

    nb.metadata["membench"] = prov
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(nb)
    body = body.replace("<head>", "<head>\n" + _head_tags(prov), 1)
    return body.replace("</body>", _footer(prov) + "</body>", 1)


def render_notebook(name: str, parameters: dict[str, Any], out_dir: Path,
                    prov: dict[str, Any], timeout: int = 3600) -> Rendered:
    import nbformat
    import papermill as pm

    src = NOTEBOOK_DIR / f"{name}.ipynb"
    if not src.exists():
        raise MembenchError(f"{src}: notebook not found")
    declared = pm.inspect_notebook(str(src))
    parameters = {k: v for k, v in parameters.items() if k in declared}
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / f"{name}.ipynb"
    tmp = out_dir / f".{name}.running.ipynb"
    error = None
    try:
        try:
            pm.execute_notebook(str(src), str(tmp), parameters=parameters, kernel_name="python3",
                                cwd=str(REPO_ROOT), progress_bar=False, log_output=False,
                                execution_timeout=timeout)
        except pm.PapermillExecutionError as e:
            error = (f"{src}: cell {e.cell_index} (execution {e.exec_count}) raised "
                     f"{e.ename}: {e.evalue}")
        nb = nbformat.read(str(tmp), as_version=4)
        html_path = out_dir / (f"{name}.html" if error is None else f"{name}.FAILED.html")
        html_path.write_text(to_html(nb, prov), encoding="utf-8")
        nbformat.write(nb, str(executed))  # with metadata.membench, as to_html set it
        stale = out_dir / (f"{name}.FAILED.html" if error is None else f"{name}.html")
        stale.unlink(missing_ok=True)
    finally:
        tmp.unlink(missing_ok=True)
    return Rendered(name, html_path, error is None, error, prov)


def run_label(run_dir: Path) -> str:
    """A report folder is named after its run directory (``runs/bm25-dev`` -> ``bm25-dev``)."""
    return Path(run_dir).name


def report(runs: list[Path], out: Path, sets_dir: Path | None = None,
           compare: list[Path] | None = None, corpus: Path | None = None,
           notebooks: tuple[str, ...] = RUN_NOTEBOOKS, extra: dict[str, Any] | None = None,
           partial: bool = False, final: bool = False) -> list[Rendered]:
    """Render the run notebooks for each run, and the comparison when more than one run is
    given (``runs + compare``). Every run is opened first (:meth:`RunDir.open` refuses an
    incomplete run unless ``partial``, a test-split run unless ``final``, drifted sets, ...),
    and the notebooks get ``partial`` and ``final`` as parameters. Returns what was rendered;
    raises if any notebook failed, after rendering all of them."""
    out = Path(out)
    done: list[Rendered] = []
    sets = str(Path(sets_dir).resolve()) if sets_dir else None
    root = str(Path(corpus).resolve()) if corpus else None
    flags = {"partial": partial, "final": final}
    opened = [RunDir.open(Path(r).resolve(), sets_dir, **flags)
              for r in [*runs, *(compare or [])]]
    for rd in opened:       # every refusal (atoms, lines, gold) comes before any rendering
        rd.scores()
    for rd in opened[:len(runs)]:
        prov = provenance(rd)
        for name in notebooks:
            params = {"run_dir": str(rd.path), "sets_dir": str(rd.sets_dir.resolve()),
                      "corpus": root, **flags, **(extra or {})}
            done.append(render_notebook(name, params, out / run_label(rd.path), prov))
    all_runs = [Path(r).resolve() for r in [*runs, *(compare or [])]]
    if len(all_runs) > 1:
        label = "compare-" + "-vs-".join(run_label(r) for r in all_runs)
        prov = provenance(opened[0])
        prov["compared_runs"] = [str(r) for r in all_runs]
        prov["system"] = " vs ".join(rd.label for rd in opened)
        prov["config"] = {run_label(rd.path): provenance(rd).get("config") for rd in opened}
        done.append(render_notebook(COMPARE_NOTEBOOK, {"run_dirs": [str(r) for r in all_runs],
                                                       "sets_dir": sets, **flags},
                                    out / label, prov))
    write_index(out)
    failed = [r for r in done if not r.ok]
    if failed:
        raise MembenchError("; ".join(r.error for r in failed))
    return done


def write_index(out: Path) -> Path:
    """``<out>/index.html``: every report folder under ``out`` with its pages and provenance."""
    rows = []
    for d in sorted(p for p in out.iterdir() if p.is_dir()):
        pages = sorted(d.glob("*.html"))
        if not pages:
            continue
        prov = _read_prov(d)
        links = " · ".join(f'<a href="{html.escape(d.name)}/{html.escape(p.name)}">'
                           f'{html.escape(p.stem)}</a>' for p in pages)
        rows.append(f"<tr><td>{html.escape(d.name)}</td><td>{links}</td>"
                    f"<td><code>{html.escape(str(prov.get('code_revision', '')))[:20]}</code></td>"
                    f"<td><code>{html.escape(str(prov.get('manifest_sha256', '')))[:16]}…</code>"
                    f"</td><td>{html.escape(str(prov.get('generated_at', '')))}</td></tr>")
    page = ("<!doctype html><html><head><meta charset='utf-8'><title>membench reports</title>"
            "<style>body{font-family:sans-serif;margin:2em}td,th{padding:4px 10px;"
            "border-bottom:1px solid #ddd;text-align:left}</style></head><body>"
            "<h1>membench reports</h1><table><tr><th>report</th><th>pages</th>"
            "<th>code revision</th><th>manifest sha256</th><th>generated</th></tr>"
            + "".join(rows) + "</table></body></html>\n")
    path = out / "index.html"
    path.write_text(page, encoding="utf-8")
    return path


def _read_prov(d: Path) -> dict:
    import nbformat

    for nb in sorted(d.glob("*.ipynb")):
        try:
            return dict(nbformat.read(str(nb), as_version=4).metadata.get("membench", {}))
        except (OSError, ValueError):
            continue
    return {}


__all__ = ["report", "render_notebook", "write_index", "to_html", "RUN_NOTEBOOKS",
           "COMPARE_NOTEBOOK"]
