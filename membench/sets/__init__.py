"""Sources -> sets: the corpus manifest and its check (:mod:`.corpus`), the build with
its derived unanswerables and lock (:mod:`.build`, :mod:`.derive`), the hard rules
(:mod:`.validate`), the no-tells audit (:mod:`.audit`) and which records a run is about
(:mod:`.select`, :mod:`.topics`). Reads the corpus mirror through the adapters of
:mod:`membench.sources`; writes ``bench/sets/`` and ``bench/sets.lock.json``. The records'
shapes are :mod:`membench.contract.schema`."""
