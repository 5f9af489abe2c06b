"""Running a periodic task on the wall clock: absolute deadlines, real-time scheduling where permitted.

``PeriodicRunner.run(cycle)`` calls ``cycle(k)`` at t0 + k * period on the monotonic clock, the way
a controller manager's real-time thread does:

* absolute deadlines (no drift from the cycle's own cost): sleep until ``deadline - spin_ns`` (the
  kernel's timer slack is lowered to 1 us with prctl where Linux allows it), then spin on the clock
  for the last ``spin_ns`` (default half a period: a core kept busy runs the period faster and wakes
  without the scheduler's latency);
* a period whose cycle ends after the next deadline is a deadline miss; the runner then skips the
  periods it lost instead of running them back to back;
* ``prepare_realtime()`` asks for what helps and says what it got: SCHED_FIFO (needs CAP_SYS_NICE or
  an rtprio limit, e.g. ``@realtime - rtprio 98`` in /etc/security/limits.conf), a CPU of its own
  (``cpu``), ``gc.freeze()`` with the collector disabled during the run (no collector pause
  inside a period), and a short GIL switch interval so another Python thread (the ROS executor)
  hands the interpreter back within ~50 us when the period starts. Each step falls back cleanly.

Statistics (``RunStats``): wake-up jitter (actual start - deadline), compute time of each cycle,
deadline misses; all in microseconds, from preallocated arrays (no allocation in the loop).
"""

from __future__ import annotations

import ctypes
import gc
import os
import sys
import time
from dataclasses import dataclass

import numpy as np

PR_SET_TIMERSLACK = 29


@dataclass
class RealtimeSetup:
    """What prepare_realtime obtained (reported in diagnostics and by ``pkm bench loop``)."""

    sched_fifo: bool
    priority: int
    cpu: int | None
    timer_slack_ns: int | None
    gc_frozen: bool
    notes: tuple

    def summary(self) -> str:
        return (f"SCHED_FIFO {'priority ' + str(self.priority) if self.sched_fifo else 'not permitted'}, "
                f"CPU {self.cpu if self.cpu is not None else 'any'}, timer slack "
                f"{self.timer_slack_ns if self.timer_slack_ns is not None else 'default'} ns, "
                f"gc {'frozen' if self.gc_frozen else 'on'}")


def fifo_priority(priority: int) -> str:
    """SCHED_FIFO at ``priority`` for the calling thread: '' when set, else why not (never raises)."""
    try:
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(int(priority)))
        return ""
    except (PermissionError, OSError, AttributeError) as exc:
        return f"SCHED_FIFO not set ({type(exc).__name__}: {exc}); running with the default scheduler"


def prepare_realtime(priority: int = 80, cpu: int | None = None, switch_interval_s: float = 5e-5) -> RealtimeSetup:
    """Real-time settings for the calling thread (module docstring); never raises for a missing privilege.

    The other Python threads of the process share the interpreter lock with this one: a thread that holds
    it and is preempted by another process stalls the real-time thread (priority inversion through the
    lock). The caller should therefore give them SCHED_FIFO too, below ``priority`` (``fifo_priority``).
    """
    notes = []
    why = fifo_priority(priority)
    fifo = not why
    if why:
        notes.append(why)
    got_cpu = None
    if cpu is not None:
        try:
            os.sched_setaffinity(0, {int(cpu)})
            got_cpu = int(cpu)
        except (OSError, ValueError, AttributeError) as exc:
            notes.append(f"CPU affinity {cpu} not set ({exc})")
    slack = None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(PR_SET_TIMERSLACK, 1000, 0, 0, 0) == 0:
            slack = 1000
    except (OSError, AttributeError) as exc:
        notes.append(f"timer slack not set ({exc})")
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.setswitchinterval(switch_interval_s)
    return RealtimeSetup(fifo, int(priority) if fifo else 0, got_cpu, slack, True, tuple(notes))


def release_realtime() -> None:
    """Undo the process-wide parts of prepare_realtime (the collector)."""
    gc.enable()
    gc.unfreeze()


@dataclass(frozen=True)
class RunStats:
    """Figures of a periodic run (us)."""

    cycles: int
    misses: int
    jitter_us: np.ndarray       # start - deadline of each cycle
    compute_us: np.ndarray      # duration of each cycle

    @property
    def miss_percent(self) -> float:
        return 100.0 * self.misses / max(self.cycles, 1)

    def summary(self) -> dict:
        def pct(a, q):
            return float(np.percentile(a, q)) if len(a) else float("nan")

        return {"cycles": self.cycles, "deadline_misses": self.misses, "deadline_miss_percent": self.miss_percent,
                "jitter_median_us": pct(self.jitter_us, 50), "jitter_p99_us": pct(self.jitter_us, 99),
                "jitter_max_us": float(self.jitter_us.max()) if len(self.jitter_us) else float("nan"),
                "compute_median_us": pct(self.compute_us, 50), "compute_p99_us": pct(self.compute_us, 99)}


class PeriodicRunner:
    """Calls ``cycle(k)`` every ``period_ns`` on the monotonic clock until ``stop()`` or ``cycles``.

    The per-cycle figures of the last ``window`` cycles are kept in preallocated ring buffers;
    ``stats()`` may be called from another thread while it runs.
    """

    def __init__(self, period_ns: int, spin_ns: int | None = None, window: int = 1 << 18):
        if period_ns <= 0:
            raise ValueError(f"period must be > 0 ns, got {period_ns}")
        self.period_ns = int(period_ns)
        # spin the last half period by default: measured here, a loop woken from a sleep ran its period about
        # 1.5x slower than one that kept its core busy, and the wake-up itself adds up to ~100 us
        self.spin_ns = int(period_ns // 2 if spin_ns is None else min(spin_ns, period_ns))
        self._stop = False
        self._jitter = np.zeros(int(window))
        self._compute = np.zeros(int(window))
        self.cycles = 0             # live counters
        self.misses = 0

    def stop(self) -> None:
        self._stop = True

    def stats(self) -> RunStats:
        n = min(self.cycles, len(self._jitter))
        return RunStats(self.cycles, self.misses, self._jitter[:n].copy(), self._compute[:n].copy())

    def run(self, cycle, cycles: int | None = None) -> RunStats:
        n_max = np.inf if cycles is None else int(cycles)
        jitter, compute, size = self._jitter, self._compute, len(self._jitter)
        period, spin = self.period_ns, self.spin_ns
        clock = time.monotonic_ns
        k = 0
        self.cycles = self.misses = 0
        self._stop = False
        deadline = clock() + period
        while not self._stop and self.cycles < n_max:
            now = clock()
            if deadline - now > spin:
                time.sleep((deadline - now - spin) * 1e-9)
            while clock() < deadline:
                pass
            start = clock()
            cycle(k)
            end = clock()
            i = self.cycles % size
            jitter[i] = (start - deadline) * 1e-3
            compute[i] = (end - start) * 1e-3
            self.cycles += 1
            deadline += period
            k += 1
            if end > deadline:                     # the cycle overran its period
                self.misses += 1
                lost = (end - deadline) // period + 1
                deadline += lost * period
                k += lost
        return self.stats()
