"""The contract every room speaks (SPEC sections 3 to 6), as shapes and checks only:

* :mod:`.schema`: the records of a set (source items, annotations, regions, scope);
* :mod:`.protocol`: the system protocol in process (``ingest`` / ``query``, :class:`Atom`,
  :class:`Result`, the tie-breaking rule, the extent caps' check);
* :mod:`.wire`: the same protocol over HTTP (``membench-http/1``): paths, JSON shapes and the
  checks both ends apply.

It reads and writes nothing (old paths of these modules: membench/moved.py).
"""
