"""Stopping on a signal: the first SIGINT, SIGTERM or SIGHUP raises ``Stopped`` in the main thread of `pkm bringup`
and `pkm record`, and the loops check a ``StopRequest`` every iteration, so that no broad ``except`` on the way loses
it. Every later signal, and every signal once the stop has begun (``StopRequest.stopping``), raises nothing: it calls
the request's ``escalate`` (`pkm bringup`: SIGKILL to every node still running), so that a stop routine is never cut
by a traceback halfway. ``StopRequest.held()``: a section no signal interrupts (a node started and known to the
stop); the signal takes effect at its end.
"""

from __future__ import annotations

import contextlib
import signal

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stopped(BaseException):
    """A signal asked the graph to stop (its name in args[0]). A BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way (in a library the main thread runs when the signal comes) takes it for an
    error; StopRequest.check() raises it again if one is caught all the same."""

    def __str__(self):
        return "Ctrl-C" if self.args[0] == "SIGINT" else self.args[0]


class StopRequest:
    """The signal that asked to stop (``signal``: its name, None before one came). The handler raises Stopped where
    the main thread is; the loops also call ``check()`` every iteration, which raises it again when the first was
    caught on the way (an ``except`` in a library the main thread was running when the signal came).

    A signal after the first, or once ``stopping`` is set (the stop began for another reason: a node exited, the
    goal finished), raises nothing: it is counted in ``again`` and handed to ``escalate(name)`` when one is set. The
    handler runs in the main thread between two bytecodes, possibly inside a lock the main thread holds: escalate
    must take no lock (send signals, set flags)."""

    def __init__(self):
        self.signal = None
        self.stopping = False
        self.again = 0
        self.escalate = None
        self._held = False

    def on_signal(self, signum, _frame):
        name = signal.Signals(signum).name
        if self.signal is not None or self.stopping:
            self.again += 1
            if self.escalate is not None:
                self.escalate(name)
            return
        self.signal = name
        if not self._held:
            raise Stopped(name)

    @contextlib.contextmanager
    def held(self):
        """A section the first signal does not interrupt: it is noted, and Stopped raised at the section's end.
        (Python runs the handler in the main thread between two bytecodes, whichever thread the kernel chose:
        blocking the signals in the main thread alone would not hold it back.)"""
        self._held = True
        try:
            yield
        finally:
            self._held = False
        self.check()

    def check(self) -> None:
        if self.signal is not None:
            raise Stopped(self.signal)


@contextlib.contextmanager
def signals_raise_stopped():
    """SIGINT, SIGTERM and SIGHUP raise Stopped in the main thread (while the graph runs, or `pkm record` records);
    yields the StopRequest whose ``check()`` the loops call. SIGINT too is installed explicitly: a process started
    as a background job of a non-interactive shell inherits SIGINT ignored, and Python then leaves it ignored (no
    KeyboardInterrupt), so a `kill -INT` would leave the graph running."""
    request = StopRequest()
    old = {s: signal.signal(s, request.on_signal) for s in STOP_SIGNALS}
    try:
        yield request
    finally:
        for s, h in old.items():
            signal.signal(s, h)
