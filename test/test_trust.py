"""Which messages a consumer believes (trajectory/trust.py; issue 22 §1, §2), without ROS: generated publishers,
graphs, clocks and chunks. The attacks on a running graph are in test_nodes.py (graph/peers.py)."""

import numpy as np
import pytest
from hypothesis import given, strategies as st

from pkm_control.control.loop import ControlLoop
from pkm_control.control.settings import make_controller
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.trajectory.streaming import SampleBuffer
from pkm_control.trajectory.trust import MAX_CLOCK_STEP_NS, ClockGuard, SourceBinding, sources_setting

GIDS = [bytes([k]) * 16 for k in range(1, 6)]
NAMES = ["trajectory_generator", "inverse_kinematics", "peer", "trajectory_generator", "bag_player"]


@given(st.lists(st.integers(0, len(GIDS) - 1), min_size=1, max_size=60))
def test_the_first_publisher_binds_and_every_other_is_refused_and_counted(senders):
    b = SourceBinding("/platform_trajectory")
    graph = dict(zip(GIDS, NAMES))
    admitted = [b.admit(GIDS[k], lambda: graph, float(i)) for i, k in enumerate(senders)]
    first = senders[0]
    assert admitted == [k == first for k in senders]
    assert b.refused == sum(k != first for k in senders)
    counts = {g: c for g, (_, c) in b.refused_by.items()}
    assert counts == {GIDS[k]: senders.count(k) for k in set(senders) if k != first}
    for g, (name, _) in b.refused_by.items():     # named from the graph, once looked up
        assert name == graph[g]


@given(st.lists(st.integers(0, len(GIDS) - 1), min_size=1, max_size=60))
def test_a_named_node_binds_whenever_it_comes_and_no_other_does(senders):
    b = SourceBinding("/clock", "/inverse_kinematics")     # GIDS[1]
    graph = dict(zip(GIDS, NAMES))
    admitted = [b.admit(GIDS[k], lambda: graph, 0.0) for k in senders]
    assert admitted == [k == 1 for k in senders]


def test_a_publisher_not_yet_known_by_name_waits_while_a_named_node_is_awaited():
    graph = {GIDS[0]: "_NODE_NAME_UNKNOWN_"}
    b = SourceBinding("/joint_states", "hardware")
    assert b.admit(GIDS[0], lambda: graph, 0.0) is None and b.refused == 0 and b.unidentified == 1
    graph[GIDS[0]] = "hardware"                       # discovery completed
    assert b.admit(GIDS[0], lambda: graph, 0.0) is True
    graph[GIDS[1]] = "_NODE_NAME_UNKNOWN_"            # once bound, any other publisher is refused
    assert b.admit(GIDS[1], lambda: graph, 0.0) is False


def test_a_second_node_of_the_trusted_name_is_refused_once_the_first_is_bound():
    b = SourceBinding("/platform_trajectory", "trajectory_generator")    # GIDS[0] and GIDS[3] carry the name
    graph = dict(zip(GIDS, NAMES))
    assert b.admit(GIDS[0], lambda: graph, 0.0)
    assert not b.admit(GIDS[3], lambda: graph, 0.0)
    assert "trajectory_generator" in b.summary() and b.refused == 1


def test_the_binding_moves_at_a_reset_or_when_the_bound_publisher_left_the_graph():
    graph = dict(zip(GIDS, NAMES))
    calls = []

    def publishers():
        calls.append(1)
        return graph

    b = SourceBinding("/platform_trajectory", recheck_s=1.0)
    assert b.admit(GIDS[0], publishers, 0.0) and not calls            # the first of a run: no graph look-up
    assert not b.admit(GIDS[2], publishers, 0.0) and len(calls) == 1
    for t in (0.1, 0.5, 0.99):                                        # a refused one: the graph again after 1 s only
        assert not b.admit(GIDS[2], publishers, t)
    assert len(calls) == 1
    del graph[GIDS[0]]                                                # the trusted node restarts: its old gid is gone
    assert b.admit(GIDS[2], publishers, 1.0) and b.bound == GIDS[2]
    assert not b.admit(GIDS[0], publishers, 1.0)
    b.reset()
    assert b.admit(GIDS[4], publishers, 1.0) and not b.admit(GIDS[2], publishers, 1.0)


def test_the_sources_parameter():
    assert sources_setting("") == {}
    assert sources_setting(" /clock=/joint_controller, /platform_trajectory = trajectory_generator ") == {
        "/clock": "joint_controller", "/platform_trajectory": "trajectory_generator"}
    for bad in ("clock=joint_controller", "/clock", "/clock=", "=x"):
        with pytest.raises(InvalidInputError, match="sources"):
            sources_setting(bad)


TIMES = st.one_of(st.integers(0, 3 * MAX_CLOCK_STEP_NS), st.integers(0, 2**63 - 1),
                  st.sampled_from([0, (2**31 - 1) * 10**9, 1, MAX_CLOCK_STEP_NS, MAX_CLOCK_STEP_NS + 1]))


@given(st.lists(st.one_of(TIMES, st.integers(1, MAX_CLOCK_STEP_NS)), min_size=1, max_size=80))
def test_the_clock_moves_forward_in_bounded_steps_and_back_only_to_the_start(deltas):
    """Each input is a time or (small) a step forward from the last time believed; whatever comes, every change of
    the believed time is a step forward of at most MAX_CLOCK_STEP_NS, one that the time before it (refused) confirms,
    or a reset to within MAX_CLOCK_STEP_NS of zero; a refused time changes nothing."""
    g = ClockGuard()
    refused_before = None
    for k, d in enumerate(deltas):
        t = d if k % 2 == 0 or g.now_ns is None else g.now_ns + d
        before = g.now_ns
        try:
            reset = g.admit(t)
        except InvalidInputError:
            assert g.now_ns == before
            refused_before = t
            continue
        if before is not None and g.now_ns != before:
            step = g.now_ns - before
            if reset:
                assert step < 0 and g.now_ns <= MAX_CLOCK_STEP_NS
            else:
                assert 0 < step <= MAX_CLOCK_STEP_NS or (
                    refused_before is not None and 0 <= g.now_ns - refused_before <= MAX_CLOCK_STEP_NS)
        refused_before = None


def test_the_clock_attacks_of_issue_22_are_refused():
    g = ClockGuard()
    for t in range(0, 2_000_000_000, 5_000_000):            # 2 s of a 200 Hz clock
        assert not g.admit(t)
    now = g.now_ns
    for t in (0 + MAX_CLOCK_STEP_NS + 1, (2**31 - 1) * 10**9, now + MAX_CLOCK_STEP_NS + 1, now - 5_000_000):
        with pytest.raises(InvalidInputError):
            g.admit(t)
    assert g.now_ns == now and g.admit(0) is True          # back to the start: the reset
    stamps = ClockGuard(reset_window_ns=0, what="joint_states stamp")
    stamps.admit(10**9)
    with pytest.raises(InvalidInputError, match="joint_states stamp went back"):
        stamps.admit(1)
    assert stamps.admit(0) is True


@given(st.integers(1, 40), st.integers(0, 60), st.integers(1, 40), st.booleans())
def test_a_chunk_never_rewrites_a_used_sample_and_a_repeat_never_deletes_one(n_buffered, used, n_chunk, repeat):
    """A buffer of samples t = 0..n-1 (value t), the consumer's last read at ``used`` (held past the end beyond it);
    a chunk from every start: a repeat (the buffered values, then new ones) or other values. It is refused exactly
    when its first new sample would replace one that was read; afterwards every sample read is as it was, and a
    repeat kept every buffered sample."""
    times = np.arange(n_buffered)
    read = min(used, n_buffered - 1)                   # the last buffered sample the reads came from
    for first in range(0, n_buffered + 3):
        b = SampleBuffer()
        b.add(times, times[:, None] * 1.0)
        for t in range(used + 1):
            b.use(t, max_age_ns=100)
        assert b.used_ns == read
        t = first + np.arange(n_chunk)
        rows = (t * 1.0 if repeat else t + 0.5)[:, None]
        rows[t >= n_buffered] = -1.0                   # beyond the buffer: new samples
        new = first if not repeat else min(n_buffered, first + n_chunk)      # its first new sample
        try:
            part = b.fresh(t, rows)
        except InvalidInputError:
            assert first < n_buffered and new <= read
            continue
        assert new > read or new >= first + n_chunk or first >= n_buffered
        b.add(*part)
        for k in range(read + 1):
            assert b.at(k)[0] == k
        if repeat:
            assert b.end >= n_buffered - 1


def test_a_repeat_is_judged_by_rounding_at_the_rows_scale():
    """A recomputed sample differs from the buffered one in the last bits of its largest term (the same inputs, a
    vectorized sin/cos of another length): a force of 100 N beside one that crosses zero. That is a repeat, even
    where the small component changed by far more than its own size; a change of a micro-unit in a used sample is
    not."""
    b = SampleBuffer()
    b.add([0, 1, 2], [[100.0, 1e-14], [100.0, 2e-14], [100.0, 3e-14]])
    b.use(2, 0)
    eps = 100.0 * np.finfo(float).eps
    times, rows = b.fresh([1, 2, 3], [[100.0 + eps, 3e-12], [100.0, -5e-12], [7.0, 7.0]])
    assert list(times) == [3] and np.array_equal(rows, [[7.0, 7.0]])
    with pytest.raises(InvalidInputError, match="already used"):
        b.fresh([1, 2, 3], [[100.0, 1e-6], [100.0, 3e-14], [7.0, 7.0]])


def test_the_samples_read_are_those_the_row_comes_from():
    """use(t): exact on the grid it reads the sample at t, between two samples both (the later one is the last
    read), past the end the last one (held); before the buffer nothing. Peeking (at, hold) reads nothing."""
    b = SampleBuffer()
    b.add([10, 20, 30], [[1.0], [2.0], [3.0]])
    assert b.hold(25, 0)[0] == 2.5 and b.at(30)[0] == 3.0 and b.used_ns is None
    assert b.use(5, 100) is None and b.used_ns is None
    assert b.use(10, 0)[0] == 1.0 and b.used_ns == 10
    assert b.use(15, 0)[0] == 1.5 and b.used_ns == 20
    assert b.use(37, 10)[0] == 3.0 and b.used_ns == 30
    b.clear()
    assert b.used_ns is None


DT = 500_000        # ns: the control period of the loop tests


def _held_loop(law, n_ref, lead_periods=0):
    """A ControlLoop of palida at rest at home under ``law``, references at rest for periods 0..n_ref-1."""
    dyn = robot_dynamics("palida")
    c = make_controller(dyn, law)
    q = dyn.kin.actuated(dyn.kin.task.pose(dyn.model.config["home"]))

    class Robot:
        def read(self):
            from pkm_control.hardware import JointMeasurement
            return JointMeasurement(0.0, q, np.zeros(len(q)), np.zeros(len(q)))

        def write(self, tau, time=None):
            pass

    loop = ControlLoop(Robot(), c, 3 * DT, lead_periods * DT)
    zeros = np.zeros((n_ref, len(q)))
    loop.offer_references(DT * np.arange(n_ref), np.tile(q, (n_ref, 1)), zeros, zeros)
    return loop, len(q)


def test_the_loop_refuses_a_reference_chunk_stamped_in_the_past():
    """A ControlLoop that ran periods 0..9 of a hold: a chunk from period 5 with other values is refused; the same
    samples again (a re-offer) are taken, the new samples after them too."""
    loop, n = _held_loop("pd", 20)
    for k in range(10):
        loop.cycle(k * DT)
    q = loop.references.at(0)[:n]
    zeros = np.zeros((25, n))
    with pytest.raises(InvalidInputError, match="already used"):
        loop.offer_references(DT * np.arange(5, 15), np.tile(q + 0.005, (10, 1)), zeros[:10], zeros[:10])
    loop.offer_references(DT * np.arange(5, 30), np.tile(q, (25, 1)), zeros, zeros)
    loop.drain()
    assert loop.references.end == 29 * DT and loop.references.times == list(range(0, 30 * DT, DT))


def test_a_late_feedforward_after_its_held_end_is_taken():
    """computed_force behind on a loaded machine: the feedforward ran dry at period 9 and the loop held its last
    sample (within reference_timeout) for periods 10..12. The late chunk (the generator's re-offer: a repeat of
    periods 5..9, then 10..19) rewrites no sample a period read: it is spliced. Checked against the loop's instant it
    was refused, as in test_every_robot_runs_the_graph[delta-pd_acceleration_feedforward] on 2 busy cores ('a chunk
    from 0.055000 s would rewrite the sample at 0.100000 s, already used (up to 0.104500 s)', the feedforward
    buffered up to 0.0995 s)."""
    loop, n = _held_loop("pd_feedforward", 20)
    loop.offer_feedforward(DT * np.arange(10), np.ones((10, n)))
    for k in range(13):
        loop.cycle(k * DT)
    loop.offer_feedforward(DT * np.arange(5, 20), np.ones((15, n)))
    loop.drain()
    assert loop.feedforward.times == list(range(0, 20 * DT, DT))
    assert loop.feedforward.used_ns == 9 * DT and loop.references.used_ns == 12 * DT


def test_the_feedforward_read_at_t_plus_t_m_is_final():
    """pd_feedforward with T_m = 2 periods: the period at t reads the feedforward at t + T_m, so after periods
    0..9 the sample at period 11 is used and a chunk with other values from period 10 is refused (it was taken
    when the loop's own instant was the limit); from period 12 it is spliced."""
    loop, n = _held_loop("pd_feedforward", 20, lead_periods=2)
    loop.offer_feedforward(DT * np.arange(20), np.ones((20, n)))
    for k in range(10):
        loop.cycle(k * DT)
    assert loop.feedforward.used_ns == 11 * DT and loop.references.used_ns == 9 * DT
    with pytest.raises(InvalidInputError, match="rewrite the sample at 0.005000 s, already used"):
        loop.offer_feedforward(DT * np.arange(10, 20), 2 * np.ones((10, n)))
    loop.offer_feedforward(DT * np.arange(12, 20), 2 * np.ones((8, n)))
    loop.drain()
    assert loop.feedforward.at(11 * DT)[0] == 1.0 and loop.feedforward.at(12 * DT)[0] == 2.0


def test_samples_after_a_held_end_rewrite_nothing():
    """A stream that ran dry: the loop held its last sample (period 9) for periods 10..12. The chunk that repeats
    periods 5..9 and brings 10..29 rewrites no sample the loop read: it is spliced (as a chunk starting after the
    buffered end always was)."""
    loop, n = _held_loop("pd", 10)
    for k in range(13):
        loop.cycle(k * DT)
    assert loop.references.used_ns == 9 * DT
    q = loop.references.at(0)[:n]
    zeros = np.zeros((25, n))
    loop.offer_references(DT * np.arange(5, 30), np.tile(q, (25, 1)), zeros, zeros)
    loop.drain()
    assert loop.references.times == list(range(0, 30 * DT, DT))
