"""The periodic runner of the real-time loop (pkm_control.control.realtime), on a simulated clock.

Nothing here reads the wall clock: the runner takes its clock and sleep as parameters, and the test's
clock advances only by what the runner sleeps, what each cycle is given to cost, and one microsecond
per reading (so the runner's spin on the clock ends).
"""

import numpy as np
import pytest

from pkm_control.control.realtime import (LatencyHistogram, PeriodicRunner, RealtimeSetup, SlicedWork,
                                          hold_wakeup_latency, release_realtime)

PERIOD = 500_000        # ns: 2 kHz
US = 1_000


class SimulatedClock:
    def __init__(self):
        self.t = 10**12

    def clock(self):
        self.t += US
        return self.t

    def sleep(self, seconds):
        assert seconds >= 0
        self.t += int(seconds * 1e9)


@pytest.mark.parametrize("seed", range(5))
def test_histogram_percentiles_bound_the_exact_ones_within_a_bin(seed):
    rng = np.random.default_rng(seed)
    x = np.concatenate([rng.exponential(60.0, 1001), rng.uniform(0, 3000, 50)])
    h = LatencyHistogram(top_us=20_000)
    for v in x:
        h.add(v)
    assert h.n == len(x) and h.max == x.max()
    qs = (50, 90, 99)
    for q, at_once in zip(qs, h.percentiles(*qs)):
        exact = np.percentile(x, q, method="inverted_cdf")        # the smallest sample with >= q % at or below it
        assert exact < h.percentile(q) <= exact + 1
        assert at_once == h.percentile(q)


def test_histogram_beyond_its_top_reports_the_max_and_clears():
    h = LatencyHistogram(top_us=100)
    for v in (5.0, 7.0, 250.0, 900.5):
        h.add(v)
    assert h.percentile(50) == 8.0 and h.percentile(99) == 900.5 and h.max == 900.5
    assert h.percentiles(50, 99) == (8.0, 900.5)
    h.clear()
    assert h.n == 0 and np.isnan(h.percentile(50)) and np.isnan(h.max) and all(map(np.isnan, h.percentiles(50, 99)))


def test_runner_keeps_absolute_deadlines_and_skips_the_periods_an_overrun_lost():
    sim = SimulatedClock()
    seen = []

    def cycle(k):
        seen.append((k, sim.t))
        sim.t += (1_200 if k == 3 else 100) * US          # period 3 overruns by 2.4 periods

    runner = PeriodicRunner(PERIOD, clock=sim.clock, sleep=sim.sleep)
    st = runner.run(cycle, cycles=10)
    ks = [k for k, _ in seen]
    assert ks == [0, 1, 2, 3, 6, 7, 8, 9, 10, 11]              # periods 4 and 5 were lost, not run late
    assert st.cycles == 10 and st.misses == 2                  # two deadlines passed without their cycle
    t0 = seen[0][1]
    for k, t in seen:                                      # every start within a few us of t0 + k * period
        assert 0 <= t - (t0 + k * PERIOD) <= 3 * US
    # a cycle measures its cost + one clock reading (101 us, 1201 us): the upper edges of their 1 us bins
    assert st.summary() == {"cycles": 10, "deadline_misses": 2, "deadline_miss_percent": 100 * 2 / 12,
                            "jitter_median_us": 2.0,
                            "jitter_p99_us": 2.0, "jitter_max_us": 1.0, "compute_median_us": 102.0,
                            "compute_p99_us": 1202.0}


def test_background_work_fills_the_slack_and_never_delays_a_period():
    """After a 100 us cycle, items of 150 us of background work run while more than 200 us remain before the
    next deadline: two per period; the next period starts on time."""
    sim = SimulatedClock()
    items = []
    starts = []

    def cycle(k):
        starts.append(sim.t)
        sim.t += 100 * US

    def background():
        items.append(len(starts))
        sim.t += 150 * US
        return True

    runner = PeriodicRunner(PERIOD, clock=sim.clock, sleep=sim.sleep)
    st = runner.run(cycle, cycles=20, background=background, background_budget_ns=200 * US)
    assert st.misses == 0 and st.summary()["jitter_max_us"] == 1.0
    assert [items.count(k) for k in range(1, 21)] == [2] * 20
    assert set(np.diff(starts)) == {PERIOD}


def test_background_stops_when_nothing_is_waiting():
    sim = SimulatedClock()
    calls = []
    runner = PeriodicRunner(PERIOD, clock=sim.clock, sleep=sim.sleep)
    runner.run(lambda k: None, cycles=5, background=lambda: calls.append(1) and False, background_budget_ns=0)
    assert len(calls) == 5                                 # one look per period, nothing found


def test_the_warm_up_runs_once_in_the_spin_before_each_period_and_never_delays_it():
    """``warm`` runs after the sleep, once before each cycle, within the spin (the runner sleeps until 100 us before
    the deadline); a 30 us warm-up leaves the period on time. Where less than half the spin is left (a cycle that
    ended ~40 us before the next deadline) there is no warm-up: the period is not put at risk."""
    sim = SimulatedClock()
    events = []

    def cycle(k):
        events.append(("cycle", sim.t))
        sim.t += (460 if k == 2 else 100) * US              # period 2 ends ~40 us before the next deadline

    def warm():
        events.append(("warm", sim.t))
        sim.t += 30 * US

    runner = PeriodicRunner(PERIOD, clock=sim.clock, sleep=sim.sleep)
    st = runner.run(cycle, cycles=6, warm=warm)
    assert st.misses == 0 and st.summary()["jitter_max_us"] == 1.0
    kinds = [kind for kind, _ in events]
    assert kinds == ["warm", "cycle", "warm", "cycle", "warm", "cycle", "cycle", "warm", "cycle", "warm", "cycle"]
    for (kind, t), (_, t_next) in zip(events, events[1:]):
        if kind == "warm":                                   # in the spin: at most 100 us before its cycle
            assert 30 * US < t_next - t <= 100 * US


def test_a_period_must_be_positive():
    with pytest.raises(ValueError, match="period"):
        PeriodicRunner(0)


def test_sliced_work_runs_one_slice_per_step_oldest_job_first():
    done = []

    def job(name, slices):
        for i in range(slices):
            done.append((name, i))
            if i < slices - 1:
                yield

    work = SlicedWork(max_jobs=3)
    work.add(job("a", 2))
    work.add(job("b", 1))
    assert work.step() and done == [("a", 0)]
    assert work.step() and done == [("a", 0), ("a", 1)]            # a's last slice
    assert work.step() and done[-1] == ("b", 0)
    assert not work.step() and not work.jobs


def test_sliced_work_drops_the_oldest_beyond_its_bound_and_passes_failures_on():
    work = SlicedWork(max_jobs=2)
    ran = []

    def job(name):
        ran.append(name)
        yield

    def failing():
        raise RuntimeError("broken job")
        yield

    for name in "abc":
        work.add(job(name))
    assert work.dropped == 1
    work.finish()
    assert ran == ["b", "c"]
    work.add(failing())
    work.add(job("d"))
    with pytest.raises(RuntimeError, match="broken job"):
        work.step()
    work.finish()                                          # the failed job is gone, the next one runs
    assert ran == ["b", "c", "d"]


def test_restarted_statistics_count_from_the_cycle_that_restarted_them():
    """A warm-up (here an overrun in period 1) is not in the figures once the cycle of period 4 restarts them."""
    sim = SimulatedClock()
    runner = PeriodicRunner(PERIOD, clock=sim.clock, sleep=sim.sleep)

    def cycle(k):
        if k == 4:
            runner.restart_stats()
        sim.t += (900 if k == 1 else 50) * US

    st = runner.run(cycle, cycles=10)
    assert st.misses == 0 and st.cycles == 10 and st.compute.n == 10 and st.compute.max < 100


def test_the_wakeup_latency_request_holds_until_released(tmp_path):
    """hold_wakeup_latency writes the 0 us request as the kernel's PM QoS file reads it (a native 32-bit int) and keeps
    the file open until release_realtime closes it; a file it cannot open is said, not raised."""
    import os
    import struct

    request = tmp_path / "cpu_dma_latency"
    request.write_bytes(b"")
    fd, why = hold_wakeup_latency(str(request))
    assert why == "" and request.read_bytes() == struct.pack("i", 0)
    os.fstat(fd)                                                   # held: open
    release_realtime(RealtimeSetup(False, 0, None, None, True, (), fd))
    with pytest.raises(OSError):
        os.fstat(fd)
    fd, why = hold_wakeup_latency(str(tmp_path / "absent"))
    assert fd is None and why.startswith("CPU wake-up latency not held")


class _Diag:
    def __init__(self):
        self.extra = {}


def test_a_chunks_cost_is_reported_beside_the_sim_time_it_covers():
    from pkm_control.ros.runtime import ChunkCost

    diag = _Diag()
    cost = ChunkCost(diag)
    times = 2_000_000 * np.arange(10)             # 10 samples at 500 Hz: 20 ms of the stream
    for cpu in (1_000_000, 3_000_000):
        cost.add(cpu, times)
    assert diag.extra == {"chunk_cpu_mean_us": "2000", "chunk_cpu_max_us": "3000", "chunk_span_ms": "20.0"}


STAGE_PROBE = """
import os, sys
from pkm_control.ros.runtime import stream_stage_priority

class Node:
    def get_logger(self):
        class L:
            def info(self, text): pass
        return L()

class Diag:
    extra = {}

def threads():
    return {(os.sched_getscheduler(int(t)), os.sched_getparam(int(t)).sched_priority)
            for t in os.listdir("/proc/self/task")}

for lockstep, priority in ((True, 55), (False, 0), (False, 55)):
    d = Diag()
    stream_stage_priority(Node(), {"lockstep": lockstep, "stream_priority": priority}, d)
    print(repr((d.extra["realtime"], sorted(threads()))))
"""


def test_stream_stages_run_at_fifo_in_real_time_only():
    """ros.runtime.stream_stage_priority, in a process of its own (it sets every thread's scheduler): lockstep and
    priority 0 keep the default scheduler; real time gives every thread SCHED_FIFO at the priority, or says why not."""
    import ast
    import os
    import subprocess
    import sys

    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # the probe starts at the default scheduler: a child inherits its parent thread's, and this process's may be
    # SCHED_FIFO after an in-process real-time test (joint_controller's loop thread is the main thread there)
    out = subprocess.run([sys.executable, "-c", STAGE_PROBE], capture_output=True, text=True, env=env, timeout=120,
                         check=True, preexec_fn=lambda: os.sched_setscheduler(0, os.SCHED_OTHER, os.sched_param(0))
                         ).stdout.splitlines()
    (lock_said, lock_threads), (zero_said, zero_threads), (rt_said, rt_threads) = map(ast.literal_eval, out)
    default = {(os.SCHED_OTHER, 0)}
    assert lock_said == zero_said == "default scheduler" and set(lock_threads) == set(zero_threads) == default
    if rt_said == "SCHED_FIFO priority 55":
        assert set(rt_threads) == {(os.SCHED_FIFO, 55)}
    else:                                         # not permitted here: it says why and changes nothing
        assert rt_said.startswith("SCHED_FIFO not set") and set(rt_threads) == default
