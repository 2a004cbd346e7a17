"""The documentation site's generated tables (:mod:`.blocks`) and its mkdocs hook (:mod:`.hooks`).

The top layer, with the CLI: the tables read every layer below (the sets, the metrics
registry, the result stores) and the CLI reference reads the argparse parser itself.
"""
