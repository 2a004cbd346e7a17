"""Sliding windows over a sequence of positions (shared by code, conversation and video)."""

from __future__ import annotations


def spans(n: int, size: int, stride: int, start: int = 0) -> list[tuple[int, int]]:
    """Half-open windows ``[s, e)`` over ``start .. start+n``: width ``size``, step ``stride``,
    the last one ending exactly at the end. Together they cover every position; empty when
    ``n <= 0``."""
    if n <= 0:
        return []
    out = []
    s = start
    end = start + n
    while True:
        e = min(end, s + size)
        out.append((s, e))
        if e >= end:
            return out
        s += stride
