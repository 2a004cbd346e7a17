"""A memory system in 20 lines: word overlap, scoped to the holder and to as_of."""

import re

from membench import Result, chunk


def words(text):
    return set(re.findall(r"\w+", text.lower()))


class WordOverlap:
    name = "overlap"

    def __init__(self, top=3):
        self.top = top  # --config top=5

    def config(self):
        return {"top": self.top}

    def ingest(self, items, corpus_root):
        self.atoms = chunk(items, corpus_root)  # membench's content layer: the atom texts
        self.words = {a.atom_id: words(a.text) for a in self.atoms}
        return self.atoms

    def query(self, question, scope, as_of):
        q = words(question)
        mine = [a for a in self.atoms if a.holder == scope.holder and a.observed_at <= as_of]
        hits = sorted(
            ((a.atom_id, len(q & self.words[a.atom_id]) / (1 + len(q))) for a in mine),
            key=lambda h: -h[1],
        )[:1000]
        return Result(hits=hits, cartridge=[a for a, s in hits[: self.top] if s > 0.5])
