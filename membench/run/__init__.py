"""Stage 2, sets -> run directories: the system protocol (:mod:`.protocol`), the systems
(:mod:`.systems`: reference systems, cartridge policy, test doubles, registry), what the
reference systems read (:mod:`.content`), the resumable runner (:mod:`.runner`), importing a
TREC run (:mod:`.importer`) and the run files' readers (:mod:`.files`). Writes RUN_DIR."""
