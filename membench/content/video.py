"""Video items: caption windows, extent ``{"t_start": s, "t_end": e}`` (seconds).

The item's content is its caption cues ``[[start, end, text], ...]``. Windows of
``video_window_s`` seconds start every ``video_stride_s`` seconds from 0 (default 30 s every
15 s, so each moment lies in two windows), the last one clipped at the end of the video
(``meta.duration``, or the last cue's end when that is later or the duration is missing).
A window's text is the text of every cue that overlaps it (a cue of zero length counts when it
lies inside the window), in cue order, one cue a line. Windows that no cue overlaps are not
emitted (they have no text); every moment covered by a cue lies in some emitted window.
"""

from __future__ import annotations

import math
from pathlib import Path

from ..contract.protocol import Atom
from ..contract.schema import SourceItem
from .common import dedupe, make_atom
from .config import ChunkConfig


def _cues(item: SourceItem) -> list[tuple[float, float, str]]:
    out = []
    for c in item.content or []:
        try:
            s, e, text = float(c[0]), float(c[1]), str(c[2])
        except (TypeError, ValueError, IndexError):
            continue
        if math.isfinite(s) and math.isfinite(e) and 0 <= s <= e and text.strip():
            out.append((s, e, text.strip()))
    out.sort(key=lambda c: (c[0], c[1]))
    return out


def chunk_video(item: SourceItem, corpus_root: Path, config: ChunkConfig) -> list[Atom]:
    cues = _cues(item)
    if not cues:
        return []
    end = max(c[1] for c in cues)
    dur = item.meta.get("duration")
    if isinstance(dur, (int, float)) and math.isfinite(dur) and dur > end:
        end = float(dur)
    W, S = config.video_window_s, config.video_stride_s
    atoms = []
    k = 0
    while True:
        ws = round(k * S, 3)
        reach = min(end, ws + W)  # compared unrounded: round(293.34000000000003, 3) < end
        we = round(reach, 3)
        texts = [t for s, e, t in cues if (s < we and e > ws) or (s == e and ws <= s <= we)]
        if texts:
            atoms.append(
                make_atom(item, {"t_start": float(ws), "t_end": float(we)}, "\n".join(texts))
            )
        if reach >= end:
            break
        k += 1
    return dedupe(atoms)
