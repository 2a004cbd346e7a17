"""Word-overlap memory, standard library only: the atoms and the ranking that the HTTP server
(http_server.py) and the TREC writer (trec_overlap.py) share. Conversations only: one atom per
window of 3 turns every 2 (the last window ends at the session's last turn), its text exactly
what membench's content layer gives a conversation atom (docs/your-system.md, "The atom text")."""

import re
from datetime import datetime


def words(text):
    return set(re.findall(r"\w+", text.lower()))


def turn_line(turn):
    text = " ".join(str(turn.get("text") or "").split())
    line = f"{turn['speaker']}: {text}" if turn.get("speaker") else text
    if turn.get("image_caption"):
        line += f" [image: {' '.join(str(turn['image_caption']).split())}]"
    return line


def atoms_of(items):
    atoms = []
    for item in items:
        if item["modality"] != "conversation":
            continue
        turns = sorted(item["content"], key=lambda t: t["turn"])
        header = f"[{item['meta']['date_time']}]\n" if item["meta"].get("date_time") else ""
        start = 0
        while True:
            win = turns[start : start + 3]
            atoms.append(
                {
                    "atom_id": f"{item['source_id']}#{win[0]['turn']}",
                    "text": header + "\n".join(turn_line(t) for t in win),
                    "source_id": item["source_id"],
                    "modality": "conversation",
                    "holder": item["holder"],
                    "observed_at": item["observed_at"],
                    "extent": {"turn_start": win[0]["turn"], "turn_end": win[-1]["turn"]},
                }
            )
            if start + 3 >= len(turns):
                break
            start += 2
    return atoms


def rank(atoms, question, holder, as_of):
    """In-scope atoms (the holder's, observed by as_of) by the share of the question's words
    they hold; ties keep the atoms' order. Returns (hits, cartridge)."""
    asked, when = words(question), datetime.fromisoformat(as_of)
    mine = [
        a
        for a in atoms
        if a["holder"] == holder and datetime.fromisoformat(a["observed_at"]) <= when
    ]
    hits = sorted(
        ((a["atom_id"], len(asked & words(a["text"])) / (1 + len(asked))) for a in mine),
        key=lambda h: -h[1],
    )[:1000]
    return hits, [a for a, s in hits[:3] if s > 0.5]
