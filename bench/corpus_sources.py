"""The registry of every source membench knows (SPEC section 4), printed as a table.

The registry itself lives in ``membench/sources/__init__.py`` (so that the installed package
has it); this script is its view from the ``bench/`` folder:

    python bench/corpus_sources.py [--corpus DIR]
"""

import sys

from membench.cli import main

if __name__ == "__main__":
    sys.exit(main(["sources", *sys.argv[1:]]))
