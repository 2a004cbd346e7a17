"""Live JupyterLab, checked for real: JupyterLab runs headless on 127.0.0.1, headless Chromium
(Debian's, driven by Playwright) opens notebook 04, and notebook 00 (start here), on dev runs of
the fixture corpus (leaky's first), runs every cell from the Run menu, and the failure browser
widget is clicked: Next shows the second false recall, Prev the first again, each read from the
rendered DOM and checked against the cases membench computes (same order, same query ids)."""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import time
import urllib.request

import nbformat
import pytest
from minicorpus import freeze, make_corpus

from membench.analysis.browse import load_run_cases
from membench.core.paths import REPO_ROOT
from membench.report.browser_check import PW_FLAGS, chromium
from membench.run.runner import run_system
from membench.systems import make_system

pytestmark = pytest.mark.skipif(
    chromium() is None, reason="chromium not installed (apt-get install chromium)"
)
playwright = pytest.importorskip("playwright.sync_api")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    root = tmp_path_factory.mktemp("lab")
    corpus = make_corpus(root)
    frozen = freeze(corpus, root, {"MEMBENCH_CACHE": str(root / "cache")})
    run = root / "leaky-dev"
    for name in ("leaky", "random"):  # 00 shows both; leaky-dev, the first, is browsed
        run_system(
            make_system(name),
            frozen["sets"],
            "dev",
            root / f"{name}-dev",
            corpus,
            manifest=frozen["manifest"],
            lock=frozen["lock"],
        )
    work = root / "work"
    work.mkdir()
    for name, extra in (
        ("04_false_recalls", f"run_dir = {str(run)!r}\nn_static = 1\nstatic_spread = True\n"),
        ("00_start_here", f"runs_dir = {str(root)!r}\nn_resamples = 200\n"),
    ):
        nb = nbformat.read(REPO_ROOT / "notebooks" / f"{name}.ipynb", as_version=4)
        params = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
        params.source += f"\n{extra}sets_dir = {str(frozen['sets'])!r}\ncorpus = {str(corpus)!r}\n"
        nbformat.write(nb, work / f"{name[:2]}.ipynb")
    port, token = free_port(), secrets.token_hex(16)
    home = root / "home"
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO_ROOT),
        "HOME": str(home),
        "JUPYTER_CONFIG_DIR": str(home / "config"),
        "JUPYTER_DATA_DIR": str(home / "data"),
        "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
        "IPYTHONDIR": str(home / "ipython"),
        "JUPYTERLAB_SETTINGS_DIR": str(home / "settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(home / "workspaces"),
        "MEMBENCH_CACHE": str(root / "cache"),
        "JUPYTER_PLATFORM_DIRS": "1",
    }
    log = open(root / "lab.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "jupyterlab",
            "--no-browser",
            "--allow-root",
            "--ip=127.0.0.1",
            f"--port={port}",
            f"--IdentityProvider.token={token}",
            f"--ServerApp.root_dir={work}",
            "--LabApp.news_url=",
            "--LabApp.extension_manager=readonly",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        ],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=work,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 180
        while True:
            try:
                with urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=5) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                log.flush()
                raise RuntimeError(
                    "JupyterLab did not start:\n" + (root / "lab.log").read_text()[-3000:]
                )
            time.sleep(1)
        yield url, token, run, frozen["sets"]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


@pytest.mark.parametrize("notebook", ["04.ipynb", "00.ipynb"])
def test_next_and_prev_in_the_failure_browser(lab, notebook):
    url, token, run, sets = lab
    expected = [c.query_id for c in load_run_cases(run, sets).of("false_recall", "all")]
    assert len(expected) >= 2
    with playwright.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium(), args=PW_FLAGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 1000})
            page.set_default_timeout(180_000)
            # reset: the workspace the server kept from the notebook opened before is dropped,
            # so the only widgets on the page are this notebook's
            page.goto(f"{url}/lab/tree/{notebook}?reset&token={token}")
            page.wait_for_selector(".jp-NotebookPanel .jp-Notebook .jp-Cell")
            # the kernel is up once the toolbar names it and the status is idle
            page.wait_for_selector(".jp-NotebookPanel-toolbar .jp-KernelName", state="visible")
            page.wait_for_function(
                "() => /Python/.test((document.querySelector('.jp-NotebookPanel-toolbar "
                ".jp-KernelName') || {}).innerText || '') && document.querySelector("
                "'.jp-Notebook-ExecutionIndicator[data-status=\"idle\"]')"
            )
            nxt = page.locator("button.widget-button", has_text="Next")
            prev = page.locator("button.widget-button", has_text="Prev")
            try:
                page.get_by_role("menuitem", name="Run", exact=True).click()
                page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
                nxt.wait_for()
            except playwright.Error:
                page.screenshot(path=str(run.parent / f"lab-{notebook}.png"))
                dialog = page.locator(".jp-Dialog")
                if dialog.count():
                    raise AssertionError(
                        "JupyterLab dialog: " + dialog.first.inner_text()
                    ) from None
                raise
            label = page.locator("div.widget-label").first

            def shown() -> tuple[str, str]:
                case = page.locator(".widget-html-content [data-query-id]").first
                return label.inner_text(), case.get_attribute("data-query-id")

            page.wait_for_function(
                "() => /^1 \\/ \\d+/.test((document.querySelector("
                "'div.widget-label') || {}).innerText || '')"
            )
            first_label, first = shown()
            assert first_label.startswith(f"1 / {len(expected)} false recalls")
            assert first == expected[0]
            nxt.click()
            # the label and the case are two widgets: wait for both to leave the first case
            page.wait_for_function(
                "first => /^2 \\/ /.test(document.querySelector('div.widget-label').innerText)"
                " && (document.querySelector('.widget-html-content [data-query-id]') || {})"
                ".getAttribute?.('data-query-id') !== first",
                arg=first,
            )
            second_label, second = shown()
            assert second == expected[1] and f" · {expected[1]}" in second_label
            prev.click()
            page.wait_for_function(
                "second => /^1 \\/ /.test(document.querySelector('div.widget-label').innerText)"
                " && (document.querySelector('.widget-html-content [data-query-id]') || {})"
                ".getAttribute?.('data-query-id') !== second",
                arg=second,
            )
            assert shown() == (first_label, first)
        finally:
            browser.close()
