"""The C hit check's cost per hit (membench/run/_hitcheck.c, ``plain_pairs``), this checkout's
against another revision's, side by side.

    .venv/bin/python bench/bench_hitcheck.py [--against REV] [--repeats 5]

Builds ``membench/run/_hitcheck.c`` of this checkout and of ``REV`` (``git show``; default
``HEAD~1``) into two scratch folders with the compiler and flags setup.py uses, then times
``plain_pairs`` on the same hit lists (150 lists of 200, 600 and 1,000 distinct atoms drawn
from 20,000 known ids, scores in plain notation: what the reference systems return) in child
processes, alternating the two builds, ``--repeats`` times. CPU time per hit (nanoseconds),
min / median / max over the repeats, and the load average. Nothing here is asserted by tests.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE = "membench/run/_hitcheck.c"

TIMER = r"""
import random, sys, time
sys.path.insert(0, sys.argv[1])
from _hitcheck import plain_pairs
rng = random.Random(1)
known = {f"a{rng.getrandbits(64):016x}" for _ in range(20000)}
ids = list(known)
lists = [[(a, rng.uniform(0.5, 30.0)) for a in rng.sample(ids, n)]
         for n in (200, 600, 1000) for _ in range(50)]
hits = sum(map(len, lists))
assert all(plain_pairs(l, known) for l in lists)
t0 = time.process_time()
for _ in range(20):
    for l in lists:
        plain_pairs(l, known)
print((time.process_time() - t0) / (20 * hits) * 1e9)
"""


def build(source: str, where: Path) -> Path:
    """Compile ``source`` into ``where`` as the extension module ``_hitcheck``."""
    where.mkdir(parents=True, exist_ok=True)
    (where / "_hitcheck.c").write_text(source)
    cc = sysconfig.get_config_var("CC") or "cc"
    out = where / f"_hitcheck{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(
        [
            *cc.split(),
            "-O3",
            "-fPIC",
            "-shared",
            f"-I{sysconfig.get_paths()['include']}",
            str(where / "_hitcheck.c"),
            "-o",
            str(out),
        ],
        check=True,
    )
    return where


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--against", default="HEAD~1", help="the other revision (default HEAD~1)")
    ap.add_argument("--repeats", type=int, default=5)
    a = ap.parse_args()
    other = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{a.against}:{SOURCE}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    tmp = Path(tempfile.mkdtemp(prefix="membench-hitcheck-"))
    builds = {
        a.against: build(other, tmp / "other"),
        "this checkout": build((REPO / SOURCE).read_text(), tmp / "this"),
    }
    load0 = os.getloadavg()[0]
    ns: dict[str, list[float]] = {k: [] for k in builds}
    for _ in range(a.repeats):
        for name, d in builds.items():
            r = subprocess.run(
                [sys.executable, "-c", TIMER, str(d)], capture_output=True, text=True, check=True
            )
            ns[name].append(float(r.stdout))
    load1 = os.getloadavg()[0]
    for name, v in ns.items():
        print(
            f"{name:>16}: {min(v):.1f} / {statistics.median(v):.1f} / {max(v):.1f} ns a hit "
            f"(min / median / max of {a.repeats})"
        )
    print(f"load average {load0:.1f} -> {load1:.1f}")


if __name__ == "__main__":
    main()
