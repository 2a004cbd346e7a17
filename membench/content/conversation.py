"""Conversation items: windows of consecutive turns, extent ``{"turn_start": a, "turn_end": b}``
(the turns' own 1-based numbers, inclusive).

Windows of ``conv_window_turns`` turns every ``conv_stride_turns`` turns (default 3 every 2:
neighbouring windows share one turn), the last one ending at the session's last turn, so every
turn is in some window. Text: with ``conv_date_header`` a first line ``[<session date_time>]``
(the session's own date, what answers "when" questions), then one line per turn
``speaker: text`` followed by `` [image: caption]`` when the turn shared an image.
"""

from __future__ import annotations

from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from .common import dedupe, make_atom
from .config import ChunkConfig
from .windows import spans


def turn_line(turn: dict) -> str:
    speaker = str(turn.get("speaker") or "").strip()
    text = " ".join(str(turn.get("text") or "").split())
    line = f"{speaker}: {text}" if speaker else text
    cap = turn.get("image_caption")
    if cap:
        line += f" [image: {' '.join(str(cap).split())}]"
    return line


def chunk_conversation(item: SourceItem, corpus_root: Path, config: ChunkConfig) -> list[Atom]:
    turns = [t for t in (item.content or []) if isinstance(t, dict)]
    numbered = []
    for i, t in enumerate(turns, 1):
        n = t.get("turn", i)
        numbered.append((n if isinstance(n, int) and not isinstance(n, bool) and n >= 1 else i, t))
    numbered.sort(key=lambda x: x[0])
    header = ""
    if config.conv_date_header and item.meta.get("date_time"):
        header = f"[{item.meta['date_time']}]\n"
    atoms = []
    for s, e in spans(len(numbered), config.conv_window_turns, config.conv_stride_turns):
        win = numbered[s:e]
        if win[-1][0] - win[0][0] + 1 > config.conv_window_turns:  # gaps in numbering
            for n, t in win:
                atoms.append(
                    make_atom(item, {"turn_start": n, "turn_end": n}, header + turn_line(t))
                )
            continue
        atoms.append(
            make_atom(
                item,
                {"turn_start": win[0][0], "turn_end": win[-1][0]},
                header + "\n".join(turn_line(t) for _, t in win),
            )
        )
    return dedupe(atoms)
