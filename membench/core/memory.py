"""This process's peak resident memory.

Touches: reads ``/proc/self/status`` only.
"""

from __future__ import annotations


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MB: ``VmHWM`` of ``/proc/self/status`` on Linux
    (the high-water mark of this program's own memory since it started). Not ``ru_maxrss``
    where ``VmHWM`` exists: Linux carries ``ru_maxrss`` over ``exec`` from the forking parent,
    so a child started by a big parent reports the parent's peak. Elsewhere ``ru_maxrss``
    (KiB on Linux, bytes on macOS)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0  # kB
    except OSError:
        pass
    import resource
    import sys

    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / (1024.0 * 1024.0) if sys.platform == "darwin" else rss / 1024.0


__all__ = ["peak_rss_mb"]
