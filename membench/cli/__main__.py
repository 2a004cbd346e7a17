"""``python -m membench.cli``: the same as ``membench`` (:func:`membench.cli.main`)."""

import sys

from . import main

sys.exit(main())
