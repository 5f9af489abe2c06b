"""Streaming a goal ahead of the loop (trajectory/streaming.py): sample buffers and the goal scheduler.

Generated hostile goals (specs, text, clocks) are the goals campaign of pkm_control.fuzz (test_fuzz).
"""

import numpy as np
import pytest

from pkm_control.errors import InvalidInputError, UnreachablePoseError
from pkm_control.kinematics import robot_kinematics
from pkm_control.trajectory import trajectory_from_spec
from pkm_control.control import kernels
from pkm_control.trajectory.streaming import (MAX_GOAL_BYTES, REOFFER_AFTER, GoalScheduler, ReofferPolicy, SampleBuffer,
                                             parse_goal)

DT = 500_000                 # ns: 2 kHz
CHUNK = 100                  # 50 ms


@pytest.fixture(scope="module")
def kin():
    return robot_kinematics("palida")


def scheduler(kin, **kw):
    home = kin.task.pose(kin.model.config["home"])
    return GoalScheduler(kin, home, DT, CHUNK, 10_000_000, **kw)


def test_sample_buffer_splice_interpolation_and_hold():
    b = SampleBuffer(keep_ns=10)
    b.add([0, 10, 20], [[0.0], [1.0], [2.0]])
    assert b.at(10)[0] == 1.0 and b.at(15)[0] == pytest.approx(1.5) and b.at(25) is None and b.at(-1) is None
    assert b.covers(0) and b.covers(20) and not b.covers(21)
    b.add([15, 25], [[9.0], [9.5]])              # splice: replaces 20, keeps 0 and 10
    assert b.times == [0, 10, 15, 25] and b.at(20)[0] == pytest.approx(9.25)
    assert b.hold(30, 5)[0] == 9.5 and b.hold(31, 5) is None      # ran dry for at most max_age
    b.prune(25)
    assert b.times == [10, 15, 25]               # one kept before now - keep_ns for interpolation


@pytest.mark.parametrize("omega", [2.0, 6.7, 40.0])
def test_sample_buffer_hermite_between_samples_of_a_slower_stream(omega):
    """References streamed at 500 Hz, read at 2 kHz: q and qd within the cubic Hermite error bound
    h^4 max|f^(4)| / 384 of the exact motion, qdd within the linear bound h^2 max|f^(2)| / 8 (f = sin(omega t)
    per joint, amplitudes 0.1 and 0.2); exact (bitwise) on the samples; the same numbers as scipy's
    CubicHermiteSpline, a second formulation."""
    from scipy.interpolate import CubicHermiteSpline

    n, h_ns = 2, 2_000_000
    amp = np.array([0.1, 0.2])

    def motion(t):
        s, c = np.sin(omega * t)[:, None], np.cos(omega * t)[:, None]
        return np.hstack([amp * s, amp * omega * c, -amp * omega ** 2 * s])

    t_stream = np.arange(0, 101) * h_ns
    rows = motion(t_stream * 1e-9)
    b = SampleBuffer(interpolate=kernels.hermite)      # as ControlLoop reads its references
    b.add(t_stream, rows)
    t_loop = np.arange(0, 400) * 500_000
    got = np.array([b.at(int(t)) for t in t_loop])
    exact = motion(t_loop * 1e-9)
    h = h_ns * 1e-9
    bound_q = h ** 4 * omega ** 4 * amp / 384
    bound_qd = h ** 4 * omega ** 5 * amp / 384
    bound_qdd = h ** 2 * omega ** 4 * amp / 8
    assert np.all(np.abs(got[:, :n] - exact[:, :n]) <= bound_q * (1 + 1e-6) + 1e-16)
    assert np.all(np.abs(got[:, n:2 * n] - exact[:, n:2 * n]) <= bound_qd * (1 + 1e-6) + 1e-15)
    assert np.all(np.abs(got[:, 2 * n:] - exact[:, 2 * n:]) <= bound_qdd * (1 + 1e-6) + 1e-14)
    on_grid = t_loop % h_ns == 0
    np.testing.assert_array_equal(got[on_grid], rows[t_loop[on_grid] // h_ns])
    for block in (0, 1):          # q from (q, qd); qd from (qd, qdd)
        spline = CubicHermiteSpline(t_stream * 1e-9, rows[:, block * n:(block + 1) * n],
                                    rows[:, (block + 1) * n:(block + 2) * n])
        np.testing.assert_allclose(got[:, block * n:(block + 1) * n], spline(t_loop * 1e-9), rtol=1e-9,
                                   atol=1e-14 * omega ** block)
    # linear between samples where there is no derivative (the feedforward buffer)
    lin = SampleBuffer()
    lin.add(t_stream, rows)
    np.testing.assert_allclose(lin.at(1_000_000), 0.5 * (rows[0] + rows[1]), rtol=1e-15)


def test_a_chunk_has_passed_when_its_last_sample_is_before_now(kin):
    s = scheduler(kin)
    chunks, _ = s.advance(0)
    c = chunks[0]
    end = int(c.times_ns[-1])
    assert not c.passed(0) and not c.passed(end) and c.passed(end + 1)


def test_chunks_stay_two_lookaheads_ahead_on_the_grid(kin):
    s = scheduler(kin)
    for now in (0, 7 * DT + 123, 190 * DT):
        chunks, _ = s.advance(now)
        assert s.published_until - now >= CHUNK * DT
        for c in chunks:
            assert np.all(c.times_ns % DT == 0) and np.all(np.diff(c.times_ns) == DT) and len(c.times_ns) == CHUNK
    assert s.advance(190 * DT)[0] == []          # nothing new while time stands


def test_goal_starts_on_the_grid_after_the_delay_and_finishes(kin):
    s = scheduler(kin)
    traj, approach = s.load({"type": "point_to_point", "goal": [0.02, 0, -0.85, 0, 0, 0], "duration": 0.2})
    assert approach == 0.0 and s.start() is None and s.pending        # no clock yet: starts at the first one
    chunks, events = s.advance(0)
    (kind, motion), = events
    assert kind == "started" and motion.start_ns == 10_000_000 and motion.end_ns == 210_000_000
    t = np.concatenate([c.times_ns for c in chunks])
    P = np.concatenate([c.positions for c in chunks])
    expect = traj.sample_many(np.clip((t - motion.start_ns) * 1e-9, 0, traj.duration))[0]
    assert np.allclose(P[t >= motion.start_ns], expect[t >= motion.start_ns], atol=1e-15)
    assert np.allclose(P[t < motion.start_ns], s.hold.position)
    events = []
    for now in range(0, 500 * DT, 20 * DT):
        events += s.advance(now)[1]
    assert [e[0] for e in events] == ["finished"] and s.active is None
    assert np.allclose(s.hold.position, [0.02, 0, -0.85], atol=1e-12)


def test_a_change_never_rewrites_a_published_sample(kin):
    """Start and stop take effect after what was published (the lockstep loop may have used it)."""
    s = scheduler(kin)
    s.advance(0)
    published = s.published_until
    s.load({"type": "point_to_point", "goal": [0.02, 0, -0.85, 0, 0, 0], "duration": 0.2})
    motion = s.start()
    assert motion.start_ns == published + DT
    s.advance(motion.start_ns // 2)
    s.advance(motion.start_ns + 20 * DT)
    published = s.published_until
    t_stop = s.stop()
    assert t_stop == max(s.next_grid(s.now_ns + 10_000_000), published + DT) == published + DT


def test_approach_move_in_front_of_a_distant_start(kin):
    s = scheduler(kin)
    traj, approach = s.load({"type": "point_to_point", "start": [0.05, 0, -0.85, 0, 0, 0],
                             "goal": [0.05, 0.02, -0.85, 0, 0, 0], "duration": 0.5})
    assert approach == pytest.approx(max(0.2, 1.875 * 0.05 / 0.1))
    assert traj.duration == pytest.approx(approach + 0.5)


def test_bad_goals_are_refused_and_the_robot_keeps_holding(kin):
    s = scheduler(kin)
    hold = s.hold
    for text in ("[" * 100000 + "]" * 100000, "{a: " * 20000 + "}" * 20000, "x" * (MAX_GOAL_BYTES + 1), "- 1\n- 2",
                 "{type: ptp", ":"):
        with pytest.raises(InvalidInputError):
            parse_goal(text)
    with pytest.raises(UnreachablePoseError):
        s.load({"type": "point_to_point", "goal": [2.0, 0, -0.85, 0, 0, 0], "duration": 1.0})
    assert s.loaded is None and s.hold is hold
    s.load({"type": "point_to_point", "goal": [0.0, 0, -0.84, 0, 0, 0], "duration": 0.1})
    s.advance(0)
    s.start()
    with pytest.raises(InvalidInputError, match="running"):
        s.load({"type": "point_to_point", "goal": [0.0, 0, -0.85, 0, 0, 0], "duration": 0.1})


def test_reoffer_repeats_the_same_samples(kin):
    s = scheduler(kin)
    s.load({"type": "circle", "radius": 0.02, "normal": [0, 0, 1], "speed": 0.1, "laps": 1, "ramp_time": 0.2})
    s.start()
    first = s.advance(0)[0]
    again = s.reoffer()
    assert again[0].times_ns[0] == first[0].times_ns[0]
    assert np.array_equal(np.concatenate([c.positions for c in again]), np.concatenate([c.positions for c in first]))


def test_clock_going_back_restarts_the_publication(kin):
    s = scheduler(kin)
    s.advance(500 * DT)
    chunks, _ = s.advance(0)
    assert chunks[0].times_ns[0] == 0


def test_benchmark_circle_spec_matches_the_trajectory(kin):
    spec = {"type": "benchmark_circle", "radius": 0.15, "speed": 1.0, "laps": 1, "ramp_time": 0.4}
    s = GoalScheduler(kin, trajectory_from_spec(kin, spec).start_pose, DT, CHUNK, 10_000_000)
    traj, approach = s.load(spec)
    assert approach == 0.0


def test_no_approach_to_a_start_within_the_measurement_resolution(kin):
    """The held pose is the start measured by 1 um encoders (every actuated joint off by up to half an increment, the
    pose from the state estimator's forward kinematics): no approach within approach_tolerance; beyond it, or with a
    tolerance of 0, the quintic approach of at least 0.2 s as before."""
    from pkm_control.control import StateEstimator

    spec = {"type": "benchmark_circle", "radius": 0.15, "speed": 1.0, "laps": 1, "ramp_time": 0.4}
    start = trajectory_from_spec(kin, spec).start_pose
    q = kin.actuated(start)
    est = StateEstimator(kin)

    def measured(offset):
        pose = est.estimate(q + offset, np.zeros_like(q), start).pose
        assert np.abs(kin.actuated(pose) - (q + offset)).max() < 1e-12          # the pose of those joints
        return pose

    half_increment = 0.5e-6 * np.array([1, -1, 1, 1, -1, 1])[:len(q)]
    quantized = measured(half_increment)
    assert np.linalg.norm(kin.task.difference(start, quantized)) > 1e-9        # not the start itself
    assert GoalScheduler(kin, quantized, DT, CHUNK, 0).load(spec)[1] == 0.0
    assert GoalScheduler(kin, quantized, DT, CHUNK, 0, approach_tolerance=0.0).load(spec)[1] == 0.2
    beyond = measured(np.full(len(q), 2e-5))
    assert GoalScheduler(kin, beyond, DT, CHUNK, 0, approach_tolerance=1e-5).load(spec)[1] == 0.2
    assert GoalScheduler(kin, beyond, DT, CHUNK, 0, approach_tolerance=3e-5).load(spec)[1] == 0.0
    with pytest.raises(InvalidInputError, match="approach_tolerance"):
        GoalScheduler(kin, start, DT, CHUNK, 0, approach_tolerance=float("nan"))


def test_a_spoofed_clock_is_refused(kin):
    """Back to the start is a reset; back elsewhere or a jump of more than MAX_CLOCK_STEP_NS ahead is refused and
    changes nothing (trajectory.trust.ClockGuard)."""
    from pkm_control.trajectory.trust import MAX_CLOCK_STEP_NS

    s = scheduler(kin)
    s.load({"type": "circle", "radius": 0.02, "normal": [0, 0, 1], "speed": 0.1, "laps": 3, "ramp_time": 0.2})
    s.start()
    s.advance(0)
    s.advance(150 * DT)
    s.advance(300 * DT)
    published = s.published_until
    for t in (MAX_CLOCK_STEP_NS + DT, 300 * DT + MAX_CLOCK_STEP_NS + DT, 2**31 - 1, 10**15):
        with pytest.raises(InvalidInputError, match="clock"):
            s.advance(t)
        assert s.now_ns == 300 * DT and s.published_until == published and s.active is not None
    s.advance(300 * DT + MAX_CLOCK_STEP_NS)              # the largest step ahead is accepted
    chunks, _ = s.advance(0)                             # a reset of the time source
    assert chunks[0].times_ns[0] == 0


def test_a_clock_that_confirms_its_jump_is_followed_from_now(kin):
    """A consumer that stalled for longer than MAX_CLOCK_STEP_NS (real time on an overloaded machine) sees the clock
    jump: refused once, accepted when the next clock follows it; the chunks then start at now, none in the past."""
    from pkm_control.trajectory.trust import MAX_CLOCK_STEP_NS

    s = scheduler(kin)
    s.advance(0)
    late = 3 * MAX_CLOCK_STEP_NS + 7 * DT
    with pytest.raises(InvalidInputError, match="accepted if the next time follows"):
        s.advance(late)
    assert s.now_ns == 0
    chunks, _ = s.advance(late + 10 * DT)
    assert s.now_ns == late + 10 * DT
    t = np.concatenate([c.times_ns for c in chunks])
    assert t[0] == late + 10 * DT and np.all(np.diff(t) == DT) and s.published_until - s.now_ns >= CHUNK * DT


def test_a_real_time_start_counts_from_the_callers_estimate_of_now(kin):
    """A real-time caller busy for a while (a long reachability check) passes its estimate of now: the motion
    starts start_delay after it, on the grid, never in the past of a loop that ran on meanwhile; without one
    (lockstep) it starts after the last clock seen, as before."""
    late = 1_000 * DT + 3                        # 1000 periods of wall time passed during the check
    grid_after = -(-(late + 10_000_000) // DT) * DT          # the first grid time start_delay (10 ms) after it
    for not_before in (None, late):
        s = scheduler(kin)
        s.advance(0)
        published = s.published_until
        s.load({"type": "point_to_point", "goal": [0.02, 0, -0.85, 0, 0, 0], "duration": 0.2})
        motion = s.start(not_before)
        assert motion.start_ns == (published + DT if not_before is None else grid_after)
    s = scheduler(kin)                           # before any clock: fixed at the first advance, not before it
    s.load({"type": "point_to_point", "goal": [0.02, 0, -0.85, 0, 0, 0], "duration": 0.2})
    assert s.start(late) is None and s.pending
    (kind, motion), = s.advance(0)[1]
    assert kind == "started" and motion.start_ns == grid_after


def test_a_hybrid_goal_carries_its_force_references_in_the_chunks(kin):
    """A `type: hybrid` goal (far from the held pose: an approach move in front): the chunks carry no force
    reference before it (a motion goal: None), none selected during the approach, the spec's F_d and selection
    (HybridTrajectory.force of the goal's time) from the goal's start, the last phase's after its end; the next
    non-hybrid goal's chunks carry none again."""
    from pkm_control.trajectory.spec import hybrid_from_spec

    spec = {"type": "hybrid", "start": [0.01, 0, -0.85, 0, 0, 0], "phases": [
        {"phase": "contact", "force": [0, 0, -30, 0, 0, 0], "selection": ["z"], "duration": 0.1},
        {"phase": "follow", "goal": [0.02, 0, -0.85, 0, 0, 0], "duration": 0.1}]}
    s = scheduler(kin)
    assert all(c.forces is None for c in s.advance(0)[0])
    traj, approach = s.load(spec)
    motion = s.start()
    assert approach > 0 and motion.goal_start_ns > motion.start_ns
    chunks = []
    for now in range(DT, 2 * motion.end_ns, 20 * DT):
        chunks += s.advance(now)[0]
    t = np.concatenate([c.times_ns for c in chunks])
    F = np.concatenate([c.forces for c in chunks])
    hybrid = hybrid_from_spec(kin, spec)
    for k in range(len(t)):
        tau = (t[k] - motion.goal_start_ns) * 1e-9
        f, sel = hybrid.force(tau) if tau >= 0 else (np.zeros(6), np.zeros(6, bool))
        assert np.array_equal(F[k, :6], f) and np.array_equal(F[k, 6:], sel.astype(float)), (t[k], F[k])
    assert F[-1, 2] == -30 and F[-1, 8] == 1.0                 # after the end: the last phase's
    s.load({"type": "point_to_point", "goal": [0.0, 0, -0.85, 0, 0, 0], "duration": 0.1})
    s.start()
    assert all(c.forces is None for c in s.advance(2 * motion.end_ns)[0])


def test_a_goal_is_bounded_as_a_users_yaml_file(tmp_path):
    """parse_goal and read_user_yaml share description.paths.bounded_yaml: the same refusals, each named for what
    was given; the size is counted in UTF-8 bytes (fewer characters than the limit can be more bytes)."""
    from pkm_control.description.paths import read_user_yaml

    deep = "[" * 40 + "]" * 40
    (tmp_path / "deep.yaml").write_text(deep)
    with pytest.raises(InvalidInputError, match=r"^goal nests 40 brackets deep \(limit 32\)"):
        parse_goal(deep)
    with pytest.raises(InvalidInputError, match=r"^parameter set '.*deep.yaml' nests 40 brackets deep \(limit 32\)"):
        read_user_yaml(tmp_path / "deep.yaml", "parameter set")
    with pytest.raises(InvalidInputError, match=f"^goal has more than {MAX_GOAL_BYTES} bytes"):
        parse_goal("\u00e9" * (MAX_GOAL_BYTES // 2 + 1))       # 2 bytes a character
    with pytest.raises(InvalidInputError, match="^goal is not valid YAML/JSON"):
        parse_goal("{type: ptp")


def _reoffers(policy, steps_s, poll_s=0.25, cost_s=0.0):
    """Re-offers of ``policy`` polled every ``poll_s`` (the node's timer) over clock steps that take ``steps_s`` of
    wall time each, plus ``cost_s`` for every re-offer made during the step (the lookahead computed again)."""
    count, wall = 0, 0.0
    policy.clock_step(wall)
    for step in steps_s:
        end, tick = wall + step, wall
        while tick + poll_s <= end:
            tick += poll_s
            if policy.due(tick):
                count += 1
                end += cost_s
        wall = end
        policy.clock_step(wall)
    return count


def test_a_stall_is_judged_against_the_graphs_own_pace():
    """Sim time that stands still is a stall after REOFFER_AFTER on a graph whose clock steps quickly (a consumer
    missed chunks), then again REOFFER_AFTER after each re-offer; on a loaded machine whose clock steps take 0.8 s of
    wall time by themselves, only after 4 times that."""
    quick = ReofferPolicy()
    for k in range(20):
        quick.clock_step(0.01 * k)
    assert quick.patience() == REOFFER_AFTER
    assert not quick.due(0.19 + 0.45) and quick.due(0.19 + 0.55)
    assert not quick.due(0.19 + 1.0) and quick.due(0.19 + 1.1)
    slow = ReofferPolicy()
    for k in range(20):
        slow.clock_step(0.8 * k)
    assert slow.patience() == pytest.approx(3.2)
    assert not slow.due(15.2 + 3.1) and slow.due(15.2 + 3.3)
    assert not ReofferPolicy().due(100.0)                # no clock yet: nothing to re-offer
    with pytest.raises(InvalidInputError):
        ReofferPolicy(after_s=0.0)


def test_slow_clock_steps_draw_no_reoffer_storm():
    """A lockstep graph on a loaded machine: each clock step takes 0.8 s of wall time, and a re-offer costs the step
    0.3 s more (inverse_kinematics and computed_force compute the lookahead again; at more than REOFFER_AFTER the
    step never ends). Judged against REOFFER_AFTER alone (factor 0: the generator's rule before) every step draws
    two re-offers, the second drawn by the first; judged against the pace, the first slow step (no pace known yet)
    draws two as well, then none."""
    steps = [0.8] * 100
    assert _reoffers(ReofferPolicy(factor=0.0), steps, cost_s=0.3) == 200
    assert _reoffers(ReofferPolicy(), steps, cost_s=0.3) == 2
    # a consumer that missed chunks: the clock stands until a re-offer; then it steps again
    assert 19 <= _reoffers(ReofferPolicy(), [0.01] * 50 + [10.0]) <= 20      # every REOFFER_AFTER of the 10 s
