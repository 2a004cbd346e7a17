"""The worked example of docs/systems.md ("Your own system in 20 lines"); run in CI by
tests/test_systems_library.py, which also checks that it is the code the page shows."""

from membench.run.content import chunk
from membench.run.protocol import Result


class Overlap:
    """Ranks a holder's atoms observed by as_of by the words they share with the question."""
    name = "overlap"
    network_policy = "block"         # the run refuses (and counts) any network attempt

    def config(self):                # everything that determines the output (in meta.json)
        return {"system": self.name, "score": "distinct lowercase words shared"}

    def ingest(self, items, corpus_root):
        self.atoms = chunk(items, corpus_root)      # or read item.path yourself
        return self.atoms

    def query(self, question, scope, as_of):
        words = set(question.lower().split())
        hits = [(a.atom_id, float(len(words & set(a.text.lower().split())))) for a in self.atoms
                if a.holder == scope.holder and a.observed_at <= as_of]
        hits = sorted([h for h in hits if h[1] > 0], key=lambda h: -h[1])[:1000]
        return Result(hits=hits, cartridge=[a for a, s in hits[:1] if s >= 3])
