"""The reference systems' dev figures table (see membench/expected.py)."""

import sys

from membench.analysis.expected import main

if __name__ == "__main__":
    sys.exit(main())
