"""The compiled parts of membench, everything else is in pyproject.toml:

* the run writer's one-pass hit check (membench/run/_hitcheck.c). ``optional=True``: where no
  C compiler is found the install goes on without it, and the runner uses the same check in
  Python (membench.run.runner._plain_pairs_py), which writes the same bytes, more slowly;
* the TREC reader's inner loops (membench/trec/_trecscan.c: a run's pieces parsed, their
  docids hashed, trec_eval's ranking order). Optional too: without it membench.trec.parse
  reads with numpy and pyarrow, to the same values, more slowly, and ``membench trec-eval``
  says so in one line on stderr;
* the CPUID mask that makes a process compute as on an AVX2-only CPU
  (membench/core/_cpuidmask.c, loaded through LD_PRELOAD by ``python -m membench.core.isa
  avx2``; a measuring instrument, never imported). Linux x86-64 only, and optional too.
"""

import platform
import sys

from setuptools import Extension, setup

ext = [
    Extension("membench.run._hitcheck", ["membench/run/_hitcheck.c"], optional=True),
    Extension("membench.trec._trecscan", ["membench/trec/_trecscan.c"], optional=True),
]
if sys.platform == "linux" and platform.machine() == "x86_64":
    ext.append(Extension("membench.core._cpuidmask", ["membench/core/_cpuidmask.c"], optional=True))

setup(ext_modules=ext)
