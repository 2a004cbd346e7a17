"""Render report pages in a real browser (headless Chromium) and check what a reader gets.

    python -m membench.report.browser_check reports/bm25-dev/02_run_dev.html [--png out.png]
    python -m membench.report.browser_check --dom reports/index.html reports/*/*.html

Needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it).

* :func:`check` (screenshot): the page is loaded from disk with the network-related background
  services off, screenshotted, and the PNG is checked: enough non-white pixels and more than a
  handful of distinct colours (text, tables and plots), i.e. the page rendered rather than an
  empty or error page.
* :func:`dom_check` (needs the ``playwright`` package, which drives the same chromium through
  ``executable_path``; its own browser download is never used): each page at a 1,280 px wide
  viewport, and from the DOM: every table's scroll width and right edge against the viewport
  (no column cut off), code cells (none expected), summary badges, the page title, the visible
  text, whether a marker script from data ran (``window.__membench_pwned``), JavaScript
  errors, the console's errors (``console_errors``: e.g. a font or script the page's own
  policy blocked), dialogs, and every request the page made (any that is not
  ``file:``/``data:`` would leave the machine). ``--dom`` fails a page with any of them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(
    page: Path, png: Path, width: int = 1280, height: int = 2400, timeout: int = 120
) -> Path:
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [
            exe,
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={width},{height}",
            f"--screenshot={png}",
            page.resolve().as_uri(),
        ]
        subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    return png


def blank_stats(png: Path) -> dict:
    import numpy as np
    from PIL import Image

    im = Image.open(png).convert("RGB")
    px = np.asarray(im.resize((im.width // 4, im.height // 4))).reshape(-1, 3).astype(int)
    non_white = float((px.sum(axis=1) < 720).mean())
    colours = len(np.unique(px, axis=0))
    return {"size": im.size, "non_white_share": non_white, "distinct_colours": colours}


def check(page: Path, png: Path | None = None) -> dict:
    png = png or Path(tempfile.mkstemp(suffix=".png")[1])
    screenshot(page, png)
    st = blank_stats(png)
    st["png"] = str(png)
    st["ok"] = st["non_white_share"] > 0.01 and st["distinct_colours"] > 20
    return st


LOCAL_SCHEMES = ("file:", "data:", "about:", "blob:", "chrome-error:")
PW_FLAGS = [f for f in FLAGS if f != "--headless"]

_DOM_JS = """() => {
  const vw = document.documentElement.clientWidth;
  const tables = Array.from(document.querySelectorAll('table')).map((t, i) => {
    const r = t.getBoundingClientRect();
    const visible = r.width > 0 || r.height > 0;
    return {index: i, scrollWidth: t.scrollWidth, right: Math.round(r.right), visible,
            head: (t.querySelector('tr') || {innerText: ''}).innerText.slice(0, 60)};
  });
  const js = Array.from(document.querySelectorAll('script')).filter(
    s => !s.type || /javascript|module/i.test(s.type));
  return {
    title: document.title, viewport: vw,
    docScrollWidth: document.documentElement.scrollWidth,
    tables: tables,
    codeCells: document.querySelectorAll('.jp-CodeCell .jp-InputArea, .jp-InputPrompt, .jp-CodeMirrorEditor, .jp-CodeCell .highlight').length,
    badges: document.querySelectorAll('.mb-badge').length,
    summary: !!document.getElementById('membench-summary'),
    indexLink: !!document.querySelector('a[href="../index.html"]'),
    text: document.body ? document.body.innerText : '',
    pwned: window.__membench_pwned === true,
    scripts: js.map(s => s.id || (s.src ? 'src:' + s.src : 'inline')),
    widgets: document.querySelectorAll('.widget-button, .jupyter-widgets button').length,
    steppers: document.querySelectorAll('.mb-step-bar').length,
  };
}"""


def dom_check(
    pages: list[Path], *, width: int = 1280, height: int = 900, wait_ms: int = 1500
) -> list[dict]:
    """Open each page in headless Chromium (Playwright) and report what the DOM shows (see the
    module docstring). ``cut_off``: visible tables wider than the viewport or reaching past
    its right edge; ``external``: requests that would leave the machine."""
    from playwright.sync_api import sync_playwright

    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install chromium")
    out = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=exe, args=PW_FLAGS)
        try:
            ctx = browser.new_context(viewport={"width": width, "height": height})
            for page in pages:
                pg = ctx.new_page()
                requests: list[str] = []
                errors: list[str] = []
                dialogs: list[str] = []
                console: list[str] = []
                pg.on("request", lambda r, acc=requests: acc.append(r.url))
                pg.on("pageerror", lambda e, acc=errors: acc.append(str(e)))
                pg.on("console", lambda m, acc=console: acc.append(f"{m.type}: {m.text}"))
                pg.on("dialog", lambda d, acc=dialogs: (acc.append(d.message), d.dismiss()))
                pg.goto(Path(page).resolve().as_uri(), wait_until="load")
                pg.wait_for_timeout(wait_ms)
                info = pg.evaluate(_DOM_JS)
                info["page"] = str(page)
                info["requests"] = requests
                info["external"] = [u for u in requests if not u.startswith(LOCAL_SCHEMES)]
                info["errors"], info["dialogs"], info["console"] = errors, dialogs, console
                info["console_errors"] = [c for c in console if c.startswith("error:")]
                vw = info["viewport"]
                info["cut_off"] = [
                    t
                    for t in info["tables"]
                    if t["visible"] and (t["scrollWidth"] > vw or t["right"] > vw)
                ]
                out.append(info)
                pg.close()
        finally:
            browser.close()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pages", type=Path, nargs="+")
    ap.add_argument("--png", type=Path, help="screenshot check: write the PNG here")
    ap.add_argument(
        "--dom",
        action="store_true",
        help="check the DOM of every page instead (needs the playwright package)",
    )
    a = ap.parse_args(argv)
    if not a.dom:
        st = check(a.pages[0], a.png)
        print(st)
        return 0 if st["ok"] else 1
    bad = 0
    for info in dom_check(a.pages):
        problems = []
        if info["cut_off"]:
            problems.append(f"{len(info['cut_off'])} table(s) wider than {info['viewport']} px")
        if info["codeCells"]:
            problems.append(f"{info['codeCells']} code cell element(s)")
        if info["external"]:
            problems.append(f"requests leaving the machine: {info['external'][:3]}")
        if info["pwned"] or info["dialogs"]:
            problems.append("a script from data ran")
        if info["errors"]:
            problems.append(f"{len(info['errors'])} JavaScript error(s): {info['errors'][:2]}")
        if info["console_errors"]:
            problems.append(
                f"{len(info['console_errors'])} console error(s) (e.g. something "
                f"the page's policy blocked): {info['console_errors'][:2]}"
            )
        bad += bool(problems)
        print(
            f"{info['page']}: {info['title']!r}, {info['badges']} badges, "
            f"{len(info['tables'])} tables: " + ("; ".join(problems) or "ok")
        )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
