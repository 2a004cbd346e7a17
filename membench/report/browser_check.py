"""Render a report page in a real browser (headless Chromium) and check it is not blank.

    python -m membench.report.browser_check reports/bm25-dev/02_run_dev.html [--png out.png]

Needs Debian's ``chromium`` (``apt-get install chromium``; ``.ci/run`` installs it). The page is
loaded from disk with the network-related background services off (the machine has no network),
screenshotted, and the PNG is checked: enough non-white pixels and more than a handful of
distinct colours (text, tables and plots), i.e. the page rendered rather than an empty or
error page.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(page: Path, png: Path, width: int = 1280, height: int = 2400,
               timeout: int = 120) -> Path:
    exe = chromium()
    if exe is None:
        raise RuntimeError("chromium not found: apt-get install chromium")
    with tempfile.TemporaryDirectory() as profile:
        cmd = [exe, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}",
               f"--screenshot={png}", page.resolve().as_uri()]
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


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("page", type=Path)
    ap.add_argument("--png", type=Path)
    a = ap.parse_args(argv)
    st = check(a.page, a.png)
    print(st)
    return 0 if st["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
