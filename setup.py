"""The one compiled part of membench: the run writer's one-pass hit check
(membench/run/_hitcheck.c). Everything else is in pyproject.toml. ``optional=True``: where no
C compiler is found the install goes on without it, and the runner uses the same check in
Python (membench.run.runner._plain_pairs_py), which writes the same bytes, more slowly."""

from setuptools import Extension, setup

setup(ext_modules=[Extension("membench.run._hitcheck", ["membench/run/_hitcheck.c"],
                             optional=True)])
