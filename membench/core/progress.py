"""Progress of the long steps: a tqdm bar on a terminal, a line every few percent in a log, nothing
with ``--quiet``, one summary line when a step ends (docs/speed.md, "What `make` says ...").

Start at :func:`step`, advanced as its items are done::

    with progress.step("ocr", total=len(images), unit="image", cached=True) as s:
        s.advance(n_cached, cache_hit=True)      # items served from the cache
        for image in misses:
            ...
            s.advance()                          # one item done

Modes (:func:`configure`): ``"bar"`` (tqdm, the summary line under it); ``"lines"`` (a start
line, a line each time the done share crosses a multiple of ``every_percent``, 5, unless the
last is under ``min_interval`` s old, 1, and the summary); ``"auto"`` (bar on a terminal, else
lines); ``"quiet"`` (nothing printed, counts kept on the :class:`Step`). Default:
``$MEMBENCH_PROGRESS``, else ``"quiet"``; the ``membench`` command configures ``"auto"`` unless
``--quiet``. A heartbeat thread prints the outermost open step's state (or refreshes the bar)
when no line of it or of a step inside it is ``heartbeat`` s old (20); :meth:`Step.note` says
what it works on, and :func:`command` beats between steps.

Timings: when ``$MEMBENCH_TIMINGS`` names a file, each closed step appends ``{"kind": "step",
"step", "depth", "seconds", "done", "cache_hits", "counters", "ok", "pid", "command", "t",
"load"}``, each command ``{"kind": "command", "seconds", ...}`` (:mod:`membench.core.steptimes`).

Touches: writes only to the stream (stderr by default) and the timings file; thread-safe.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any

MODES = ("auto", "bar", "lines", "quiet")
PREFIX = "[membench]"

_lock = threading.RLock()
_open_steps = 0  # steps open in this process (the depth of a new one)
_open: list[Step] = []  # those steps, in the order they were opened
_last_write = [time.monotonic()]  # when this process last printed a progress line
_command: list[str] = []  # the membench command running (for the timings file)
_config: dict[str, Any] = {
    "mode": None,
    "stream": None,
    "every_percent": 5.0,
    "heartbeat": 20.0,
    "min_interval": 1.0,
}


def configure(
    mode: str | None = None,
    *,
    stream: IO[str] | None = None,
    every_percent: float = 5.0,
    heartbeat: float = 20.0,
    min_interval: float = 1.0,
) -> None:
    """Set how steps report (see the module docstring). ``mode=None`` goes back to the default
    (``$MEMBENCH_PROGRESS`` or quiet). Touches module state only."""
    if mode is not None and mode not in MODES:
        raise ValueError(f"progress mode {mode!r}: expected one of {', '.join(MODES)}")
    if every_percent <= 0 or heartbeat <= 0 or min_interval < 0:
        raise ValueError("every_percent and heartbeat must be positive, min_interval >= 0")
    _config.update(
        mode=mode,
        stream=stream,
        every_percent=float(every_percent),
        heartbeat=float(heartbeat),
        min_interval=float(min_interval),
    )


@contextmanager
def configured(mode: str | None = None, **kw: Any) -> Iterator[None]:
    """:func:`configure` for the duration of a ``with`` block, then the previous settings
    again (a CLI call's mode does not outlive the call). Touches module state only."""
    saved = dict(_config)
    configure(mode, **kw)
    try:
        yield
    finally:
        _config.clear()
        _config.update(saved)


def _stream() -> IO[str]:
    return _config["stream"] or sys.stderr


def current_mode() -> str:
    """The mode in force, with ``"auto"`` resolved to ``"bar"`` or ``"lines"``."""
    mode = _config["mode"] or os.environ.get("MEMBENCH_PROGRESS") or "quiet"
    if mode not in MODES:
        mode = "lines"
    if mode == "auto":
        s = _stream()
        mode = "bar" if getattr(s, "isatty", lambda: False)() else "lines"
    return mode


def emit(text: str) -> None:
    """Print one line (prefixed) unless progress is quiet; for one-off notes such as a
    target's plan."""
    if current_mode() == "quiet":
        return
    _write(f"{PREFIX} {text}")


def _write(line: str) -> None:
    with _lock:
        _last_write[0] = time.monotonic()
        s = _stream()
        if current_mode() == "bar":
            from tqdm import tqdm

            tqdm.write(line, file=s)
        else:
            s.write(line + "\n")
        s.flush()


def _plural(unit: str, n: int) -> str:
    if " or " in unit:  # "image or page": "images or pages"
        return " or ".join(_plural(u, n) for u in unit.split(" or "))
    if n == 1 or unit.endswith("s"):
        return unit
    if unit.endswith("y") and unit[-2:-1] not in tuple("aeiou"):
        return unit[:-1] + "ies"
    return unit + "s"


def _secs(s: float) -> str:
    return f"{s:.1f} s" if s < 600 else f"{s / 60:.1f} min"


class Step:
    """One long step: counts done items and cache hits, prints as the mode says, and prints a
    summary line on :meth:`close`. Made by :func:`step`; ``clock`` and ``thread`` exist so the
    heartbeat can be tested without waiting."""

    def __init__(
        self,
        name: str,
        total: int | None = None,
        unit: str = "item",
        *,
        cached: bool = False,
        clock: Callable[[], float] = time.monotonic,
        thread: bool = True,
    ) -> None:
        self.name, self.unit, self.cached = name, unit, cached
        self.total = total
        self.done = 0
        self.cache_hits = 0
        self.counters: dict[str, int] = {}
        self.detail = ""
        self.lines = 0
        self._clock = clock
        self.started = clock()
        self._last_line = self.started
        self._last_bucket = 0
        self._closed = False
        self.mode = current_mode()
        self._bar = None
        self._stop = threading.Event()
        self._thread = None
        global _open_steps
        with _lock:
            self.depth = _open_steps
            _open_steps += 1
            # the step this one was opened inside (its heartbeat speaks for this one)
            self.parent: Step | None = _open[-1] if _open else None
            _open.append(self)
        if self.mode == "bar":
            from tqdm import tqdm

            self._bar = tqdm(
                total=total,
                desc=name,
                unit=unit,
                file=_stream(),
                leave=True,
                dynamic_ncols=True,
                mininterval=0.5,
            )
        elif self.mode == "lines":
            what = f"{total} {_plural(unit, total)}" if total is not None else "running"
            self._line(f"{name}: started ({what})")
        if thread and self.mode != "quiet":
            self._thread = threading.Thread(target=self._beat, name=f"progress:{name}", daemon=True)
            self._thread.start()

    # -- counting ----------------------------------------------------------------------
    def set_total(self, total: int | None) -> None:
        self.total = total
        if self._bar is not None:
            self._bar.total = total
            self._bar.refresh()

    def note(self, detail: str) -> None:
        """What the step is working on now (shown in heartbeat lines and the bar)."""
        self.detail = detail
        if self._bar is not None:
            self._bar.set_postfix_str(detail, refresh=False)

    def count(self, counter: str, n: int = 1) -> None:
        """A named count shown in the summary (e.g. ``"records"``)."""
        self.counters[counter] = self.counters.get(counter, 0) + n

    def advance(self, n: int = 1, *, cache_hit: bool = False) -> None:
        """``n`` more items done (``cache_hit``: they came from the cache)."""
        if n <= 0:
            return
        with _lock:
            self.done += n
            if cache_hit:
                self.cache_hits += n
            if self._bar is not None:
                self._bar.update(n)
                return
            if self.mode != "lines" or not self.total:
                return
            bucket = int(min(self.done, self.total) * 100 / self.total // _config["every_percent"])
            if bucket > self._last_bucket:
                self._last_bucket = bucket
                if self._clock() - self._last_line >= _config["min_interval"]:
                    self._line(self._status())

    # -- output ------------------------------------------------------------------------
    def _status(self, heartbeat: bool = False) -> str:
        elapsed = self._clock() - self.started
        if self.total:
            pct = 100.0 * min(self.done, self.total) / self.total
            s = (
                f"{self.name}: {self.done}/{self.total} {_plural(self.unit, self.total)} "
                f"({pct:.0f}%)"
            )
        else:
            s = f"{self.name}: {self.done} {_plural(self.unit, self.done)}"
        if self.cached:
            s += f", {self.cache_hits} cache hits"
        s += f", {_secs(elapsed)}"
        worked = self.done - self.cache_hits  # cache hits cost nothing: not in the rate
        if self.total and 0 < worked and self.done < self.total:
            s += f", about {_secs(elapsed / worked * (self.total - self.done))} left"
        if heartbeat:
            waits = self.waiting_on()
            if waits:
                s += " (waiting on: " + "; ".join(waits) + ")"
            else:
                s += " (still working" + (f": {self.detail})" if self.detail else ")")
        return s

    def brief(self) -> str:
        """``name done/total unit (pct%)`` (or ``name done unit``), with the detail noted."""
        if self.total:
            pct = 100.0 * min(self.done, self.total) / self.total
            s = (
                f"{self.name} {self.done}/{self.total} {_plural(self.unit, self.total)} "
                f"({pct:.0f}%)"
            )
        else:
            s = f"{self.name} {self.done} {_plural(self.unit, self.done)}"
        return s + (f", {self.detail}" if self.detail else "")

    def waiting_on(self) -> list[str]:
        """The open steps opened inside this one (at any depth), each as :meth:`brief`."""
        with _lock:
            return [st.brief() for st in _open if st is not self and self._is_ancestor_of(st)]

    def _is_ancestor_of(self, other: Step) -> bool:
        p = other.parent
        while p is not None:
            if p is self:
                return True
            p = p.parent
        return False

    def _line(self, text: str) -> None:
        _write(f"{PREFIX} {text}")
        self._last_line = self._clock()
        self.lines += 1
        p = self.parent  # a line of a sub-step is news of its parents too
        while p is not None:
            p._last_line = p._clock()
            p = p.parent

    def tick(self) -> bool:
        """The heartbeat: print a status line (or refresh the bar) when the last one is older
        than the configured ``heartbeat`` seconds. Returns whether it printed."""
        with _lock:
            if self._closed or self.mode == "quiet":
                return False
            if self.parent is not None and not self.parent._closed:
                return False  # the outermost open step speaks for its sub-steps
            if self._clock() - self._last_line < _config["heartbeat"]:
                return False
            if self._bar is not None:
                waits = self.waiting_on()
                if waits:
                    self._bar.set_postfix_str("waiting on: " + "; ".join(waits), refresh=False)
                self._bar.refresh()
                self._last_line = self._clock()
                return True
            self._line(self._status(heartbeat=True))
            return True

    def _beat(self) -> None:
        while not self._stop.wait(1.0):
            self.tick()

    def summary(self) -> str:
        """``<name> done: N items[, H cache hits][, k counter ...], S s``."""
        s = f"{self.name} done: {self.done} {_plural(self.unit, self.done)}"
        if self.cached:
            s += f", {self.cache_hits} cache hits"
        for k, v in self.counters.items():
            s += f", {v} {k}"
        return s + f", {_secs(self._clock() - self.started)}"

    def close(self, ok: bool = True) -> None:
        """Stop the heartbeat and print the summary line (``ok=False``: the step failed, the
        line says so)."""
        if self._closed:
            return
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        global _open_steps
        with _lock:
            self._closed = True
            _open_steps = max(0, _open_steps - 1)
            if self in _open:
                _open.remove(self)
            _record(
                {
                    "kind": "step",
                    "step": self.name,
                    "depth": self.depth,
                    "seconds": round(self._clock() - self.started, 3),
                    "done": self.done,
                    "cache_hits": self.cache_hits if self.cached else None,
                    "counters": self.counters,
                    "ok": ok,
                }
            )
            if self._bar is not None:
                self._bar.close()
            if self.mode != "quiet":
                text = self.summary()
                if not ok:
                    text = text.replace(" done:", " stopped:", 1)
                self._line(text)

    def __enter__(self) -> Step:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        self.close(ok=exc_type is None)


def _record(row: dict[str, Any]) -> None:
    """Append ``row`` to ``$MEMBENCH_TIMINGS`` when it is set (a write that fails is dropped:
    timings never stop the work)."""
    path = os.environ.get("MEMBENCH_TIMINGS")
    if not path:
        return
    row = {
        **row,
        "pid": os.getpid(),
        "command": " ".join(_command),
        "t": round(time.time(), 3),
        "load": load_average(),
    }
    try:
        with open(path, "a", encoding="utf-8") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    except OSError:
        pass


def load_average() -> float | None:
    """The 1-minute load average (``None`` where the system has none)."""
    try:
        return round(os.getloadavg()[0], 2)
    except (AttributeError, OSError):
        return None


def _command_beat(name: str, t0: float, stop: threading.Event) -> None:
    """While no step is open, a line when nothing was printed for ``heartbeat`` seconds."""
    while not stop.wait(1.0):
        with _lock:
            if _open or current_mode() != "lines":
                continue
            now = time.monotonic()
            if now - _last_write[0] < _config["heartbeat"]:
                continue
            _write(f"{PREFIX} {name}: still working, {_secs(now - t0)} (between steps)")


@contextmanager
def command(argv: list[str], *, heartbeat: bool = True) -> Iterator[None]:
    """The membench command ``argv`` runs inside this block: its steps are recorded under it
    and its wall time is one ``"command"`` line of the timings file; with ``heartbeat`` (not
    for a server, which waits on purpose), a line whenever it printed nothing for the
    heartbeat's seconds outside any step (see the module docstring)."""
    saved = list(_command)
    _command[:] = [a for a in argv if a not in ("--quiet", "-q")][:3]
    t0 = time.monotonic()
    _last_write[0] = t0
    stop = threading.Event()
    beat = None
    if heartbeat and current_mode() == "lines":
        beat = threading.Thread(
            target=_command_beat,
            args=(" ".join(_command), t0, stop),
            name="progress:command",
            daemon=True,
        )
        beat.start()
    ok = False
    try:
        yield
        ok = True
    finally:
        stop.set()
        if beat is not None:
            beat.join(timeout=5)
        _record({"kind": "command", "seconds": round(time.monotonic() - t0, 3), "ok": ok})
        _command[:] = saved


def step(name: str, total: int | None = None, unit: str = "item", *, cached: bool = False) -> Step:
    """Open a step (use it as a context manager so its summary is printed even on error)."""
    return Step(name, total, unit, cached=cached)


__all__ = ["MODES", "Step", "command", "configure", "current_mode", "emit", "load_average", "step"]
