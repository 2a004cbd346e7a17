"""Clean stops: SIGINT and SIGTERM end a ``membench`` command within :data:`STOP_SECONDS`, with
one status line on stderr and exit status 130, whatever the load and whatever the command is
doing; what it wrote stays intact (a run resumes). docs/robustness.md, "Clean stops", says why
and what was measured.

Start at :func:`handling_stops`, around every command of :func:`membench.cli.main`:

1. Both signals get a handler that raises :class:`Stopped` (a ``KeyboardInterrupt``) in the
   main thread, so ``finally`` blocks run, the run directory's lock file is emptied and
   released and ``meta.json`` keeps ``status: running``; installed even when the signal was
   *ignored* when membench started (a background job of a non-interactive shell).
2. A watchdog thread, woken through :func:`signal.set_wakeup_fd` even while the main thread
   sits in native code, ends the process :data:`STOP_SECONDS` after the signal if the command
   has not ended: it empties the lock files this process holds
   (:func:`membench.core.lock.release_for_exit`), prints the status line once and calls
   ``os._exit(130)``.
3. A second SIGINT or SIGTERM while stopping ends the process at once, the same way.

``MEMBENCH_STOP_DEBUG=1`` prints every thread's Python stack (:mod:`faulthandler`) before a
forced end. What it cannot do: native code that holds the GIL and never returns keeps both
threads from running (only SIGKILL ends it; the run still resumes). A forked child does not
inherit the watchdog's pipe (reset after fork). Outside the main thread of the main
interpreter nothing is installed.

Touches: signal handlers, one watchdog thread and pipe, stderr, this process's lock files.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from typing import Any

from .bounds import bound

STOP_SECONDS = bound(
    "stop_seconds",
    5,
    "s",
    "from SIGINT or SIGTERM to the end of a membench command",
    "the process ends anyway: locks emptied, one status line, exit 130",
    "membench.core.stop",
)
SIGNALS = (signal.SIGINT, signal.SIGTERM)
EXIT_STOPPED = 130


class Stopped(KeyboardInterrupt):
    """A stop asked by a signal (``signum``): a ``KeyboardInterrupt``, so code that cleans up
    on Ctrl-C cleans up on SIGTERM too."""

    def __init__(self, signum: int):
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


# signum: the signal the main thread's handler raised for; seen: the first one the watchdog
# read (kept apart: the watchdog may read the byte before the main thread runs its handler)
_state = {"signum": None, "seen": None, "announced": False, "active": 0}
_lock = threading.Lock()


def signal_name(signum: int | None) -> str:
    try:
        return signal.Signals(signum).name
    except (TypeError, ValueError):
        return "SIGINT"


def status_line(signum: int | None = None) -> str:
    """The one line a stopped command prints."""
    name = signal_name(signum if signum is not None else (_state["signum"] or _state["seen"]))
    return (
        f"membench: interrupted ({name}); what was written before is intact (re-running "
        "the same `membench run` resumes it)"
    )


def announce(signum: int | None = None) -> bool:
    """Print :func:`status_line` on stderr unless it was printed already; returns whether this
    call printed it."""
    with _lock:
        if _state["announced"]:
            return False
        _state["announced"] = True
    try:
        print(status_line(signum), file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
    return True


def _handler(signum, frame) -> None:
    if _state["signum"] is not None:
        return  # stopping already: the watchdog ends it (no second raise)
    _state["signum"] = signum
    raise Stopped(signum)


def hard_exit() -> None:
    """End the stopped command now: its lock files emptied, the one status line (once), the
    output flushed, ``os._exit(130)`` (no interpreter teardown); the watchdog's end, and
    ``membench serve``'s while a request thread sits in native code."""
    if os.environ.get("MEMBENCH_STOP_DEBUG"):
        import faulthandler

        faulthandler.dump_traceback(all_threads=True)
    try:
        from .lock import release_for_exit

        release_for_exit()
    finally:
        announce()
        try:
            sys.stdout.flush()
        except (OSError, ValueError):
            pass
        os._exit(EXIT_STOPPED)


def _watch(read_fd: int, done: threading.Event) -> None:
    """The watchdog: wait for SIGINT/SIGTERM bytes on ``read_fd``; after the first, give the
    command :data:`STOP_SECONDS`, then end the process; a second ends it at once."""
    deadline = None
    while True:
        timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
        import select

        try:
            ready, _, _ = select.select([read_fd], [], [], timeout)
        except (OSError, ValueError):
            return
        if done.is_set():
            return
        if not ready:  # STOP_SECONDS passed
            hard_exit()
        try:
            got = os.read(read_fd, 64)
        except OSError:
            return
        if not got or done.is_set():
            return
        sigs = [b for b in got if b in SIGNALS]
        if not sigs:
            continue
        _state["seen"] = _state["seen"] or sigs[0]
        if deadline is not None or len(sigs) > 1:
            hard_exit()  # a second signal: now
        deadline = time.monotonic() + STOP_SECONDS


def _reset_in_child() -> None:
    """After ``fork``: the child does not share the parent's watchdog pipe, and a forked
    worker (a process pool's) dies of SIGINT and SIGTERM instead of raising :class:`Stopped`:
    a pool worker would catch it as a failed call and wait for the next one, and the command
    would wait on it (the parent handles the stop)."""
    with contextlib.suppress(ValueError, OSError):
        signal.set_wakeup_fd(-1)
    for s in SIGNALS:
        with contextlib.suppress(ValueError, OSError):
            if signal.getsignal(s) is _handler:
                signal.signal(s, signal.SIG_DFL)
    _state.update(signum=None, seen=None, announced=False, active=0)


_fork_hook = [False]


@contextlib.contextmanager
def handling_stops() -> Iterator[None]:
    """SIGINT and SIGTERM handled as the module docstring says, for the ``with`` block (the
    previous handlers and wakeup fd are restored after it). Does nothing outside the main
    thread, or when already active (nested calls)."""
    if threading.current_thread() is not threading.main_thread() or _state["active"]:
        yield
        return
    r, w = os.pipe()
    os.set_blocking(w, False)
    try:
        old_fd = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
    except ValueError:  # not the main interpreter
        os.close(r)
        os.close(w)
        yield
        return
    if not _fork_hook[0]:
        os.register_at_fork(after_in_child=_reset_in_child)
        _fork_hook[0] = True
    old = {s: signal.signal(s, _handler) for s in SIGNALS}
    done = threading.Event()
    t = threading.Thread(target=_watch, args=(r, done), name="membench-stop", daemon=True)
    _state.update(signum=None, seen=None, announced=False, active=1)
    t.start()
    try:
        yield
    finally:
        done.set()
        for s, h in old.items():
            signal.signal(s, h if h is not None else signal.SIG_DFL)
        signal.set_wakeup_fd(old_fd)
        with contextlib.suppress(OSError):
            os.write(w, b"\0")  # wake the watchdog: it sees done
        t.join(timeout=1.0)
        for fd in (r, w):
            with contextlib.suppress(OSError):
                os.close(fd)
        _state["active"] = 0


@contextlib.contextmanager
def process_pool(max_workers: int) -> Iterator[Any]:
    """A ``concurrent.futures.ProcessPoolExecutor`` whose workers end with the command: on any
    exception in the block (a stop included) the calls not yet started are cancelled and the
    workers are terminated (killed after a second) before it propagates, instead of
    ``shutdown(wait=True)`` running every queued call first; a normal exit waits as usual."""
    from concurrent.futures import ProcessPoolExecutor

    ex = ProcessPoolExecutor(max_workers=max_workers)
    try:
        yield ex
    except BaseException:
        procs = list((getattr(ex, "_processes", None) or {}).values())
        for p in procs:
            with contextlib.suppress(Exception):
                p.terminate()
        ex.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            with contextlib.suppress(Exception):
                p.join(timeout=1.0)
                if p.is_alive():
                    p.kill()
        raise
    ex.shutdown(wait=True)


def stopped_by() -> int | None:
    """The signal that stopped the current command (``None``: not stopped by one)."""
    return _state["signum"] or _state["seen"]


__all__ = [
    "EXIT_STOPPED",
    "SIGNALS",
    "STOP_SECONDS",
    "Stopped",
    "announce",
    "handling_stops",
    "hard_exit",
    "process_pool",
    "status_line",
    "stopped_by",
]
