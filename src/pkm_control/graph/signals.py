"""Stopping on a signal: SIGINT, SIGTERM and SIGHUP raise ``Stopped`` in the main thread of `pkm bringup` and
`pkm record`, and the loops check a ``StopRequest`` every iteration, so that no broad ``except`` on the way loses it.
``die_with_parent``: the processes `pkm bringup` starts end with it, even when it is killed with SIGKILL."""

from __future__ import annotations

import contextlib
import os
import signal
import sys

PR_SET_PDEATHSIG = 1        # prctl(2)


class Stopped(BaseException):
    """A signal asked the graph to stop (its name in args[0]). A BaseException, as KeyboardInterrupt is, so that no
    ``except Exception`` on the way (in a library the main thread runs when the signal comes) takes it for an
    error; StopRequest.check() raises it again if one is caught all the same."""

    def __str__(self):
        return "Ctrl-C" if self.args[0] == "SIGINT" else self.args[0]


class StopRequest:
    """The signal that asked to stop (``signal``: its name, None before one came). The handler raises Stopped where
    the main thread is; the loops also call ``check()`` every iteration, which raises it again when the first was
    caught on the way (an ``except`` in a library the main thread was running when the signal came)."""

    def __init__(self):
        self.signal = None

    def on_signal(self, signum, _frame):
        self.signal = signal.Signals(signum).name
        raise Stopped(self.signal)

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
    old = {s: signal.signal(s, request.on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
    try:
        yield request
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def die_with_parent():
    """A ``preexec_fn`` for subprocess.Popen: the child gets SIGTERM (a node's clean stop) when the THREAD that
    started it ends, which a SIGKILL of the parent does too (Linux prctl PR_SET_PDEATHSIG; so start the children
    from a thread that lives as long as they should: the main thread). A parent that died between the fork and
    the prctl is not signalled: the child then sees another parent (os.getppid) and exits at once. None where
    there is no prctl (not Linux): the children then outlive a killed parent."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    prctl = ctypes.CDLL(None, use_errno=True).prctl      # resolved here: no dynamic loading in the forked child
    parent = os.getpid()

    def preexec():
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return preexec
