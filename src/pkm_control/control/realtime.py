"""Running a periodic task on the wall clock: absolute deadlines, real-time scheduling where permitted.

``PeriodicRunner.run(cycle)`` calls ``cycle(k)`` at t0 + k * period on the monotonic clock, the way
a controller manager's real-time thread does:

* absolute deadlines (no drift from the cycle's own cost): sleep until ``deadline - spin_ns`` (the
  kernel's timer slack is lowered to 1 us with prctl where Linux allows it), then spin on the clock
  for the last ``spin_ns`` (default 100 us: the thread starts on time without the scheduler's
  wake-up latency, and the rest of the period leaves the core to the other processes);
* a cycle that ends after the next deadline overran: the runner skips the periods it lost (their
  deadlines passed without their cycle starting) instead of running them back to back, and counts
  each of them as a deadline miss;
* ``prepare_realtime()`` asks for what helps and says what it got: SCHED_FIFO (needs CAP_SYS_NICE or
  an rtprio limit, e.g. ``@realtime - rtprio 98`` in /etc/security/limits.conf), a CPU of its own
  (``cpu``), ``gc.freeze()`` with the collector disabled during the run (no collector pause
  inside a period), a short GIL switch interval so another Python thread (the ROS executor)
  hands the interpreter back within ~50 us when the period starts, and the CPUs' wake-up latency
  held at 0 us while the loop runs (``CPU_DMA_LATENCY``, the PM QoS request cyclictest makes: an
  idle CPU polls instead of entering a deeper idle state, which a thread waking from its sleep pays
  for at its period's start). Each step falls back cleanly.

Just before a period, in the spin, the runner can call ``warm()`` (the control loop's ``rehearse``: the last period's
compiled call once more on its inputs, into scratch arrays): the sleep empties the CPU's caches (measured on this
KVM guest by `pkm bench loop`'s compute floor: direct_force's period cost 1.4-2.1 times as much on the runner as back
to back without the warm-up, docs/force-control.md), and the period that follows the warm-up finds its code and data
in them. The spin burns that time anyway.

Between two periods the runner can do background work (``background``: e.g. take the next chunk
of a streamed reference), one item at a time while at least ``background_budget_ns`` remain before
the next deadline, so the work shares the thread with the periods instead of competing for it.

Statistics (``RunStats``): wake-up jitter (actual start - deadline), compute time of each cycle,
deadline misses; all in microseconds, in ``LatencyHistogram``s (1 us bins: constant memory, O(1)
per sample, no allocation in the loop; the percentiles of an hour cost the same as a second's).
The clock and the sleep are parameters, so a test drives the runner on a simulated clock.
"""

from __future__ import annotations

import collections
import ctypes
import gc
import os
import struct
import sys
import time
from dataclasses import dataclass

import numpy as np

PR_SET_TIMERSLACK = 29
#: the kernel's PM QoS interface for the CPUs' wake-up latency: a request holds while its file stays open
#: (Documentation/power/pm_qos_interface.rst). Measured here (KVM guest, cpuidle haltpoll, which halts the vCPU at
#: once: guest_halt_poll_ns=0) in docs/force-control.md, "The CPUs' idle latency"
CPU_DMA_LATENCY = "/dev/cpu_dma_latency"
#: the runner spins on the clock for this long before each deadline (ns)
SPIN_NS = 100_000


@dataclass
class RealtimeSetup:
    """What prepare_realtime obtained (reported in diagnostics and by ``pkm bench loop``)."""

    sched_fifo: bool
    priority: int
    cpu: int | None
    timer_slack_ns: int | None
    gc_frozen: bool
    notes: tuple
    wakeup_latency: int | None = None     # the open CPU_DMA_LATENCY request (its descriptor), None: not held

    def summary(self) -> str:
        return (f"SCHED_FIFO {'priority ' + str(self.priority) if self.sched_fifo else 'not permitted'}, "
                f"CPU {self.cpu if self.cpu is not None else 'any'}, timer slack "
                f"{self.timer_slack_ns if self.timer_slack_ns is not None else 'default'} ns, "
                f"gc {'frozen' if self.gc_frozen else 'on'}, CPU wake-up latency "
                f"{'0 us' if self.wakeup_latency is not None else 'default'}")


def hold_wakeup_latency(path: str = CPU_DMA_LATENCY) -> tuple:
    """A PM QoS request of 0 us wake-up latency on every CPU (``path``: the kernel's CPU_DMA_LATENCY file), held
    until its descriptor is closed (``release_realtime``): (the descriptor, '') or (None, why not); never raises."""
    try:
        fd = os.open(path, os.O_WRONLY)
    except OSError as exc:
        return None, f"CPU wake-up latency not held ({exc})"
    try:
        os.write(fd, struct.pack("i", 0))
    except OSError as exc:
        os.close(fd)
        return None, f"CPU wake-up latency not held ({exc})"
    return fd, ""


def fifo_priority(priority: int, whole_process: bool = False) -> str:
    """SCHED_FIFO at ``priority`` for the calling thread, or for every thread of the process (``whole_process``:
    Linux, /proc/self/task); '' when set, else why not (never raises). Threads created later inherit it."""
    tids = [0]
    if whole_process:
        try:
            tids = [int(t) for t in os.listdir("/proc/self/task")]
        except OSError as exc:
            return f"SCHED_FIFO not set for the process's threads ({exc})"
    try:
        for tid in tids:
            os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(int(priority)))
        return ""
    except (PermissionError, OSError, AttributeError) as exc:
        return f"SCHED_FIFO not set ({type(exc).__name__}: {exc}); running with the default scheduler"


def prepare_realtime(priority: int = 80, cpu: int | None = None, switch_interval_s: float = 5e-5,
                     wakeup_latency_path: str = CPU_DMA_LATENCY) -> RealtimeSetup:
    """Real-time settings for the calling thread (module docstring); never raises for a missing privilege. The
    wake-up latency request holds until ``release_realtime`` (``wakeup_latency_path``: its file).

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
    wakeup, why = hold_wakeup_latency(wakeup_latency_path)
    if why:
        notes.append(why)
    gc.collect()
    gc.freeze()
    gc.disable()
    sys.setswitchinterval(switch_interval_s)
    return RealtimeSetup(fifo, int(priority) if fifo else 0, got_cpu, slack, True, tuple(notes), wakeup)


def release_realtime(setup: RealtimeSetup) -> None:
    """Undo the process-wide parts of prepare_realtime (the collector, the wake-up latency request)."""
    gc.enable()
    gc.unfreeze()
    if setup.wakeup_latency is not None:
        os.close(setup.wakeup_latency)


class LatencyHistogram:
    """Durations in 1 us bins from 0 to ``top_us`` (the last bin holds everything longer) and the exact max.

    ``percentile(q)`` is the upper edge of the bin where the cumulative count reaches q % of the samples:
    an upper bound, at most 1 us above the exact value (below ``top_us``). ``add`` may run in one thread
    while another reads (a torn read is off by one sample).
    """

    def __init__(self, top_us: int = 20_000):
        self.top = int(top_us)
        self.counts = np.zeros(self.top + 1, np.int64)
        self.n = 0
        self.max = float("nan")

    def add(self, us: float) -> None:
        self.counts[min(max(int(us), 0), self.top)] += 1
        self.n += 1
        if not us <= self.max:
            self.max = float(us)

    def clear(self) -> None:
        self.counts[:] = 0
        self.n = 0
        self.max = float("nan")

    def percentile(self, q: float) -> float:
        return self.percentiles(q)[0]

    def percentiles(self, *qs: float) -> tuple:
        """``percentile`` of each of ``qs``, the bins summed once."""
        if self.n == 0:
            return (float("nan"),) * len(qs)
        cum = np.cumsum(self.counts)
        found = np.searchsorted(cum, np.array(qs, float) / 100.0 * cum[-1])
        return tuple(float(i + 1) if i < self.top else self.max for i in found.tolist())


class SlicedWork:
    """Background jobs cut into slices, done one slice at a time between two periods (``PeriodicRunner``'s
    ``background``), oldest job first.

    A job is a generator: its code up to each ``yield`` is one slice, short enough to fit the slack of a
    period. ``step()`` runs one slice (True) or finds nothing to do (False); ``finish()`` runs every job to
    its end (lockstep: the work of a period is done before the next one). At most ``max_jobs`` wait: beyond
    that the oldest is dropped (``dropped`` counts them). A job that raises is removed, and the exception
    passes to the caller.
    """

    def __init__(self, max_jobs: int = 64):
        self.jobs = collections.deque()
        self.max_jobs = int(max_jobs)
        self.dropped = 0

    def add(self, job) -> None:
        if len(self.jobs) >= self.max_jobs:
            self.jobs.popleft().close()
            self.dropped += 1
        self.jobs.append(job)

    def step(self) -> bool:
        if not self.jobs:
            return False
        try:
            next(self.jobs[0])              # a slice; the job's last one ends in StopIteration
        except StopIteration:
            self.jobs.popleft()
        except BaseException:
            self.jobs.popleft()
            raise
        return True

    def finish(self) -> None:
        while self.step():
            pass

    def clear(self) -> None:
        while self.jobs:
            self.jobs.popleft().close()


@dataclass(frozen=True)
class RunStats:
    """Figures of a periodic run (us)."""

    cycles: int
    misses: int
    jitter: LatencyHistogram      # start - deadline of each cycle
    compute: LatencyHistogram     # duration of each cycle

    @property
    def miss_percent(self) -> float:
        """Periods skipped, in percent of all periods of the run (run + skipped)."""
        return 100.0 * self.misses / max(self.cycles + self.misses, 1)

    def summary(self) -> dict:
        jitter, compute = self.jitter.percentiles(50, 99), self.compute.percentiles(50, 99)
        return {"cycles": self.cycles, "deadline_misses": self.misses, "deadline_miss_percent": self.miss_percent,
                "jitter_median_us": jitter[0], "jitter_p99_us": jitter[1], "jitter_max_us": self.jitter.max,
                "compute_median_us": compute[0], "compute_p99_us": compute[1]}


class PeriodicRunner:
    """Calls ``cycle(k)`` every ``period_ns`` on ``clock`` (ns) until ``stop()`` or ``cycles``.

    ``stats()`` may be called from another thread while it runs. ``clock`` and ``sleep`` (s) default to
    the monotonic clock and time.sleep.
    """

    def __init__(self, period_ns: int, spin_ns: int | None = None, clock=time.monotonic_ns, sleep=time.sleep):
        if period_ns <= 0:
            raise ValueError(f"period must be > 0 ns, got {period_ns}")
        self.period_ns = int(period_ns)
        # spin the last 100 us by default (at most half the period): measured here under load with SCHED_FIFO, a
        # thread woken at the deadline started 32 us late at the median, 57 us at p99; woken 100 us early and
        # spinning, 1 us at p99, at 0.55 of a core for a 2 kHz loop (spinning half the period: 0.82)
        self.spin_ns = int(min(SPIN_NS, period_ns // 2) if spin_ns is None else min(spin_ns, period_ns))
        self.clock, self.sleep = clock, sleep
        self._stop = False
        self.jitter = LatencyHistogram()
        self.compute = LatencyHistogram()
        self.cycles = 0             # live counters
        self.misses = 0

    def stop(self) -> None:
        self._stop = True

    def stats(self) -> RunStats:
        return RunStats(self.cycles, self.misses, self.jitter, self.compute)

    def restart_stats(self) -> None:
        """Count from now on (called from the cycle: the run's figures without a warm-up)."""
        self.cycles = self.misses = 0
        self.jitter.clear()
        self.compute.clear()

    def run(self, cycle, cycles: int | None = None, background=None, background_budget_ns: int = 0,
            warm=None) -> RunStats:
        """``background()`` (optional) does one item of background work and returns whether it found any; it is
        called after a cycle while more than ``background_budget_ns`` remain before the next deadline. ``warm()``
        (optional, never raises) is called once before each cycle, after the sleep, when more than half the spin is
        left before the deadline (module docstring)."""
        n_max = np.inf if cycles is None else int(cycles)
        jitter, compute = self.jitter, self.compute
        period, spin, clock, sleep = self.period_ns, self.spin_ns, self.clock, self.sleep
        k = 0
        self.restart_stats()
        self._stop = False
        deadline = clock() + period
        while not self._stop and self.cycles < n_max:
            now = clock()
            if deadline - now > spin:
                sleep((deadline - now - spin) * 1e-9)
            if warm is not None and deadline - clock() > spin // 2:
                warm()
            while clock() < deadline:
                pass
            start = clock()
            cycle(k)
            end = clock()
            jitter.add((start - deadline) * 1e-3)
            compute.add((end - start) * 1e-3)
            self.cycles += 1
            deadline += period
            k += 1
            if end > deadline:                     # the cycle overran its period: skip the periods it lost
                lost = (end - deadline) // period + 1
                self.misses += lost
                deadline += lost * period
                k += lost
            elif background is not None:
                while deadline - clock() > background_budget_ns and background():
                    pass
        return self.stats()
