"""Sets + a system -> RUN_DIR: the resumable runner (:mod:`.runner`), the run's keeper
process that holds the gold and writes the lines (:mod:`.keeper`), the split a run answers and
the check of the sets before it (:mod:`.split`), the line file (:mod:`.lines`), the Ray engine
(:mod:`.ray_engine`, :mod:`.ray_reaper`), importing a TREC run (:mod:`.importer`) and the run
files' readers (:mod:`.files`). Writes RUN_DIR.

What it runs lives below it: the contract (:mod:`membench.contract`), what a system is shown
of an item (:mod:`membench.content`) and the systems (:mod:`membench.systems`).
"""
