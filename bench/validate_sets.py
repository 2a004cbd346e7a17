"""Validate built annotation sets against every hard rule of SPEC section 5.

    python bench/validate_sets.py [--sets bench/sets] [--corpus DIR]

Same as ``membench validate``; the rules are listed in ``membench/validate.py``.
"""

import sys

from membench.cli import main

if __name__ == "__main__":
    sys.exit(main(["validate", *sys.argv[1:]]))
