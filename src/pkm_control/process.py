"""A process that ends with its parent (Linux prctl PR_SET_PDEATHSIG): the nodes, whoever starts them (launch 3.7 ends
on SIGTERM without stopping the nodes it started; `pkm bringup` may be killed with SIGKILL), get SIGTERM, their clean
stop, when the THREAD that started them ends. Nothing elsewhere than Linux: there the children outlive a killed
parent."""

from __future__ import annotations

import os
import signal
import sys

PR_SET_PDEATHSIG = 1        # prctl(2)


def _prctl():
    """libc's prctl, or None where there is none (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    return ctypes.CDLL(None, use_errno=True).prctl


def end_with_parent() -> None:
    """This process gets SIGTERM when its parent dies; a parent gone before the call is not signalled: the process
    signals itself."""
    prctl = _prctl()
    if prctl is None:
        return
    parent = os.getppid()
    prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os.kill(os.getpid(), signal.SIGTERM)


def die_with_parent():
    """A ``preexec_fn`` for subprocess.Popen: the child gets SIGTERM when the thread that started it ends, which a
    SIGKILL of the parent does too (so start the children from a thread that lives as long as they should: the main
    thread). A parent that died between the fork and the prctl: the child sees another parent and exits at once. None
    where there is no prctl."""
    prctl = _prctl()                     # resolved here: no dynamic loading in the forked child
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec():
        prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
        if os.getppid() != parent:
            os._exit(1)

    return preexec
