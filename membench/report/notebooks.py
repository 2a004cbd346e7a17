"""Executing the report's notebooks and writing their pages (``membench report``).

Holds the fixed sequence each notebook goes through (papermill's engines do the same):
parameters -> execute (papermill, kernel ``python3`` over local IPC sockets, cwd = repository
root) -> attach provenance -> export HTML (:func:`membench.report.export.to_html`) -> write
(:func:`render_shared`, :func:`render_notebook`); and the scheduling of many pages
(:class:`Job`, :func:`shared_groups`: one execution for pages with the same parameters,
:func:`render_jobs`: ``workers`` at a time, each folder's ``report.json`` written when its last
page is done).

Touches: reads the notebooks under ``notebooks/``; writes the pages (``<name>.html`` or
``<name>.FAILED.html``), the executed ``<name>.ipynb`` and ``report.json`` into each page's
folder, and a ``.<name>.running.ipynb`` there while a notebook runs.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.atomic import atomic_write_text
from ..core.errors import MembenchError
from ..core.paths import REPO_ROOT
from .export import COMPARE_NOTEBOOK, Page, to_html
from .index import _write_record

NOTEBOOK_DIR = REPO_ROOT / "notebooks"


@dataclass
class Rendered:
    notebook: str
    html: Path
    ok: bool
    error: str | None = None
    provenance: dict[str, Any] = field(default_factory=dict)


def _shown_path(path: Path) -> str:
    """A path as a command in the repository's root would name it (relative there when it
    is inside)."""
    try:
        return str(Path(path).resolve().relative_to(REPO_ROOT))
    except ValueError:
        return str(Path(path).resolve())


def render_notebook(
    name: str,
    parameters: dict[str, Any],
    out_dir: Path,
    prov: dict[str, Any],
    timeout: int = 3600,
    page: Page | None = None,
) -> Rendered:
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


def render_shared(
    name: str,
    parameters: dict[str, Any],
    dests: list[tuple[Path, dict[str, Any], Page | None]],
    timeout: int = 3600,
) -> list[Rendered]:
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
                pm.execute_notebook(
                    str(src),
                    str(tmp),
                    parameters=parameters,
                    kernel_name="python3",
                    cwd=str(REPO_ROOT),
                    progress_bar=False,
                    log_output=False,
                    execution_timeout=timeout,
                    config=kernel_config(sockets),
                    extra_arguments=KERNEL_QUIET,
                )
        except pm.PapermillExecutionError as e:
            error = (
                f"{src}: cell {e.cell_index} (execution {e.exec_count}) raised "
                f"{e.ename}: {e.evalue}"
            )
        executed_nb = nbformat.read(str(tmp), as_version=4)
        for out_dir, prov, page in dests:
            nb = copy.deepcopy(executed_nb) if len(dests) > 1 else executed_nb
            out_dir.mkdir(parents=True, exist_ok=True)
            html_path = out_dir / (f"{name}.html" if error is None else f"{name}.FAILED.html")
            atomic_write_text(
                html_path,
                to_html(
                    nb,
                    prov,
                    page,
                    name,
                    show_code=error is not None,
                    ipynb=_shown_path(out_dir / f"{name}.ipynb"),
                ),
            )
            atomic_write_text(out_dir / f"{name}.ipynb", nbformat.writes(nb))  # metadata.membench
            stale = out_dir / (f"{name}.FAILED.html" if error is None else f"{name}.html")
            stale.unlink(missing_ok=True)
            out.append(Rendered(name, html_path, error is None, error, prov))
    finally:
        tmp.unlink(missing_ok=True)
    return out


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


def usable_cpus() -> int:
    """The CPUs this process may use (its affinity mask, else the machine's count)."""
    from ..core.estimate import cpus

    return max(1, cpus())


def default_jobs() -> int:
    """How many notebooks run at once by default: one per CPU this process may use, at most
    4."""
    return max(1, min(4, usable_cpus()))


def max_jobs() -> int:
    """The most notebooks run at once: twice the CPUs this process may use (each is a kernel
    process of its own; more only waits for a CPU and holds memory)."""
    return 2 * usable_cpus()


def check_jobs(jobs: int) -> int:
    """``jobs`` if it is an integer from 1 to :func:`max_jobs`, else a one-line error."""
    top = max_jobs()
    if isinstance(jobs, bool) or not isinstance(jobs, int) or not 1 <= jobs <= top:
        raise MembenchError(
            f"report: jobs must be an integer from 1 to {top} (twice the "
            f"{usable_cpus()} CPUs this process may use), got {jobs!r}"
        )
    return jobs


def _render_group(group: list[Job]) -> list[Rendered]:
    """Render jobs that share one execution (:func:`shared_groups`): one per page."""
    return render_shared(
        group[0].name, group[0].parameters, [(j.out_dir, j.prov, j.page) for j in group]
    )


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
    left: dict[Path, int] = {}  # pages of each folder not done yet
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

    with ProcessPoolExecutor(
        max_workers=min(workers, len(groups)), mp_context=mp.get_context("spawn")
    ) as pool:
        # the comparison page is the longest: started first, it does not trail the rest
        order = sorted(groups, key=lambda g: jobs[g[0]].name != COMPARE_NOTEBOOK)
        futures = {pool.submit(_render_group, [jobs[i] for i in g]): g for g in order}
        for fut in as_completed(futures):
            g = futures[fut]
            try:
                rs = fut.result()
            except BaseException as e:  # no page is started after a failure
                for f in futures:
                    f.cancel()
                if not isinstance(e, BrokenProcessPool):
                    raise
                raise MembenchError(
                    f"report: the process rendering {jobs[g[0]].out_dir}/"
                    f"{jobs[g[0]].name} died (out of memory?); the pages done "
                    "so far are kept; run the command again"
                ) from None
            for i, r in zip(g, rs, strict=True):
                finish(i, r)
    return done  # type: ignore[return-value]
