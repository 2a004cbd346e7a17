"""The bottom layer, used by every stage and using none: located errors (:mod:`.errors`), where
things live (:mod:`.paths`), JSON lines and digests (:mod:`.jsonl`), deterministic hashing
(:mod:`.hashing`)."""
