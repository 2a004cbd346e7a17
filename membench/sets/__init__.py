"""Stage 1, sources -> sets: the schema (:mod:`.schema`), the upstream adapters
(:mod:`.sources`), the corpus manifest and its check (:mod:`.corpus`), the build with its
derived unanswerables and lock (:mod:`.build`, :mod:`.derive`), the hard rules
(:mod:`.validate`) and which records a run is about (:mod:`.select`). Reads the corpus mirror;
writes ``bench/sets/`` and ``bench/sets.lock.json``."""
