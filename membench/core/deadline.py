"""A deadline over a whole exchange on a socket, not a timeout per read.

A socket timeout bounds each ``recv``: a peer that sends one byte a second never trips a
3 s timeout and holds the caller for as long as it likes (a slow-drip answer, a slowloris
request). :class:`Watchdog` bounds the exchange: :meth:`Watchdog.arm` gives it the socket
and a deadline (``time.monotonic()`` seconds); if the deadline passes before
:meth:`Watchdog.disarm`, it shuts the socket down (``shutdown(SHUT_RDWR)``), which wakes
whatever read or write is blocked on it at once (it returns end of file or raises), and
:meth:`Watchdog.disarm` then says it fired, so the caller reports a deadline rather than
a lost connection.

One thread per watchdog, started on the first :meth:`arm`, waiting on a condition (no polling)
until the armed deadline, and ending after ``idle`` seconds without an armed socket (or at
:meth:`close`). Arming and disarming take a lock and nothing else: the thread is woken only
when a deadline comes earlier than its current wait ends, so calls back to back do not switch
threads (``bench/bench_http_deadline.py`` measures the cost per call).
The HTTP client (:mod:`membench.systems.remote`) and server
(:mod:`membench.serve.server`) use one each per connection.
"""

from __future__ import annotations

import math
import socket
import threading
import time


class Watchdog:
    """Shuts a socket down when its deadline passes (module docstring)."""

    def __init__(self, name: str = "deadline", idle: float = 30.0):
        self.name = name
        self.idle = idle
        self._cond = threading.Condition()
        self._sock: socket.socket | None = None
        self._deadline = 0.0
        self._fired = False
        self._closed = False
        self._thread: threading.Thread | None = None
        self._wake_at = math.inf  # when the thread's current wait ends

    def arm(self, sock: socket.socket, deadline: float) -> None:
        """Watch ``sock`` until :meth:`disarm`; shut it down at ``deadline`` (monotonic s)."""
        with self._cond:
            self._sock, self._deadline, self._fired = sock, deadline, False
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
                self._thread.start()
            elif deadline < self._wake_at:
                self._cond.notify()  # else the thread wakes by then anyway: no switch
                # of threads per call (calls back to back cost none)

    def disarm(self) -> bool:
        """Stop watching; True when the deadline passed and the socket was shut down."""
        with self._cond:
            self._sock = None
            return self._fired

    def close(self) -> None:
        with self._cond:
            self._closed, self._sock = True, None
            self._cond.notify()

    def _run(self) -> None:
        with self._cond:
            while not self._closed:
                now = time.monotonic()
                if self._sock is None:
                    self._wake_at = now + self.idle
                    self._cond.wait(self.idle)
                    if self._sock is None and time.monotonic() >= self._wake_at:
                        break  # idle: the next arm starts a new thread
                    continue
                left = self._deadline - now
                if left > 0:
                    self._wake_at = now + left
                    self._cond.wait(left)
                    continue
                try:
                    self._sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass  # already closed: nothing to wake
                self._fired, self._sock = True, None
            self._thread, self._wake_at = None, math.inf


__all__ = ["Watchdog"]
