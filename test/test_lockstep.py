"""The lockstep handshake's watchdog (pkm_control.control.lockstep), ROS-free: a fake clock drives it, nothing waits;
and how `pkm bringup --exit-when-done` reads a stall from the nodes' diagnostics (graph.bringup.stalled)."""

import heapq

import pytest
from hypothesis import given, settings, strategies as st

from pkm_control.control.lockstep import (ERROR, OK, STALL_ERROR, WARN, CommandStamps, LockstepWatch,
                                          unmatched)
from pkm_control.errors import InvalidInputError
from pkm_control.graph import bringup
from pkm_control.graph.bringup import stalled


def test_a_lost_answer_is_resent_after_the_stated_idle_time_and_only_then():
    w = LockstepWatch(now=100.0, resend_after=0.5, warn_after=10.0, error_after=45.0)
    assert not w.resend_due(200.0)                      # nothing sent: nothing to re-send
    w.sent(100.0)
    assert not w.resend_due(100.49)
    assert w.resend_due(100.5)
    assert not w.resend_due(100.9)                      # the re-send restarts the wait
    assert w.resend_due(101.0)
    assert w.resends == 2
    w.progress(101.2)                                   # the answer came: nothing awaits one
    assert not w.resend_due(105.0)
    w.sent(105.0)
    assert w.resend_due(105.5) and w.resends == 3


def test_resends_per_wait_are_bounded_and_the_bound_restarts_with_progress():
    w = LockstepWatch(now=0.0, resend_after=1.0, warn_after=10.0, error_after=45.0, max_resends=3)
    w.sent(0.0)
    due = [w.resend_due(float(t)) for t in range(1, 10)]
    assert due == [True] * 3 + [False] * 6
    w.progress(10.0)
    w.sent(10.0)
    assert w.resend_due(11.0) and w.resends == 4


def _handshake(delays, commands, robot_resend=0.25, controller_resend=0.5, tick=0.05, filtered=True):
    """The lockstep handshake as the graph runs it (nodes/hardware.py and joint_controller's on_repeated_state),
    events in wall time: the robot publishes state k and waits for its command, re-sending state k every
    ``robot_resend`` s without one; the controller answers a new state with ``commands[k]`` and a state it answered
    with the same command again once its command is ``controller_resend`` s old. Each message takes the next of
    ``delays`` (s, cycled) in flight, in order per direction (a reliable writer); a command carries the stamp of the
    state it answers. Returns the (stamp, command) the robot applied, state by state, and its CommandStamps."""
    robot, controller = LockstepWatch(0.0, robot_resend), LockstepWatch(0.0, controller_resend)
    repeats = CommandStamps()
    events, arrival, seq, n = [], {"state": 0.0, "command": 0.0}, [0], [0]
    applied, k, handled = [], 0, None

    def send(now, kind, value):
        delay = delays[n[0] % len(delays)]
        n[0] += 1
        arrival[kind] = max(arrival[kind], now + delay)      # in order: never before the one sent earlier
        seq[0] += 1
        heapq.heappush(events, (arrival[kind], seq[0], kind, value))

    send(0.0, "state", 0)
    robot.sent(0.0)
    t, ticks = 0.0, 1
    while k < len(commands) and t < 1000.0:
        if events and events[0][0] <= ticks * tick:
            t, _, kind, value = heapq.heappop(events)
        else:
            t, kind = ticks * tick, "tick"
            ticks += 1
        if kind == "tick":
            if robot.resend_due(t):
                send(t, "state", k)
        elif kind == "state":
            if handled is None or value > handled:
                handled = value
                send(t, "command", (value, commands[value]))
                controller.sent(t)
            elif value == handled and controller.resend_due(t):
                send(t, "command", (value, commands[value]))
        elif not (filtered and repeats.copy(value[0])):
            repeats.applied(value[0])
            applied.append(value)
            k += 1
            robot.progress(t)
            send(t, "state", k)
            robot.sent(t)
    return applied, repeats


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from([0.001, 0.01, 0.1, 0.3, 0.6, 1.2, 2.5]), min_size=1, max_size=20),
       st.lists(st.integers(0, 2), min_size=5, max_size=30))
def test_a_command_slower_than_the_resend_is_applied_once_and_every_state_gets_its_own(delays, commands):
    """Messages slower than the re-send (a loaded machine: a command 0.6-2.5 s in flight) make the controller send
    a command twice; the robot applies exactly one command per state, the one computed for it, in order, and the
    handshake always ends, also when the next command equals the last (commands drawn from three values: a robot
    at rest)."""
    applied, _ = _handshake(delays, commands)
    assert applied == list(enumerate(commands))


def test_without_the_copy_taken_once_a_slow_command_steps_the_robot_twice():
    """The failure CommandStamps removes (test_nodes' flood test under load: the flooded run's trajectory left
    the calm one's at period 21 by 1.6e-8 m): a command 0.6 s in flight is re-sent, and both copies step the robot."""
    applied, _ = _handshake([0.001, 0.6], list(range(6)), filtered=False)
    assert applied != list(enumerate(range(6)))
    applied, repeats = _handshake([0.001, 0.6], list(range(6)))
    assert applied == list(enumerate(range(6))) and repeats.copies > 0


def test_the_level_goes_ok_warn_error_with_idle_time_and_names_what_it_waits_for():
    w = LockstepWatch(now=0.0, resend_after=0.5, warn_after=10.0, error_after=45.0)
    w.waiting_for = "a command on /effort_controller/commands (joint_controller) for sim time 0.0000 s"
    assert w.report(9.99) == (OK, "ok")
    level, message = w.report(10.0)
    assert level == WARN and message == ("no lockstep progress for 10.0 s (wall): waiting for a command on "
                                         "/effort_controller/commands (joint_controller) for sim time 0.0000 s")
    assert w.level(44.9) == WARN and w.level(45.0) == ERROR
    w.sent(44.0)
    assert w.resend_due(45.0) and w.level(45.0) == ERROR      # a re-send is no progress
    w.progress(46.0)
    assert w.level(46.0) == OK and w.idle(50.0) == 4.0


@pytest.mark.parametrize("kw, name", [({"resend_after": 0.0}, "resend_after"), ({"warn_after": 0.0}, "warn_after"),
                                      ({"warn_after": 45.0, "error_after": 45.0}, "error_after"),
                                      ({"max_resends": -1}, "max_resends")])
def test_bad_limits_are_refused_by_name(kw, name):
    with pytest.raises(InvalidInputError, match=name):
        LockstepWatch(now=0.0, **kw)


def test_unmatched_names_the_ends_without_a_peer():
    assert unmatched({"a subscriber on /c": 0, "a publisher on /s": 2}) == ["a subscriber on /c"]
    assert unmatched({"a subscriber on /c": 1}) == []


def test_bringup_reads_the_first_stalled_node_from_the_diagnostics():
    diagnostics = {"trajectory_generator": {"reoffers": "727"},
                   "hardware": {"lockstep_stall": "warn", "lockstep_idle_s": "12.0", "waiting_for": "a command"},
                   "joint_controller": {"lockstep_stall": "ok", "lockstep_idle_s": "0.0", "waiting_for": "x"}}
    assert stalled(diagnostics) is None
    diagnostics["hardware"]["lockstep_stall"] = ERROR
    diagnostics["hardware"]["lockstep_idle_s"] = "45.1"
    assert stalled(diagnostics) == "hardware: no lockstep progress for 45.1 s (wall), waiting for a command"


NODES = ["trajectory_generator", "inverse_kinematics", "computed_force", "joint_controller"]


def test_bringup_gives_up_a_start_up_only_after_its_progress_free_time():
    """`pkm bringup --exit-when-done` at start-up (sim time 0): progress is a node heard from for the first time, a node
    that starts (or waits again), the goal's state, sim time; a start-up as long as a loaded machine makes it is not
    a stall, STARTUP_STALL s (wall) without any of these is, its line naming each node's wait."""
    patience = bringup.STARTUP_STALL
    watch = bringup.StartupWatch(now=0.0)
    gen = {"started": "false", "waiting_for": "the first /platform_pose (inverse_kinematics)"}
    ctl = {"started": "false", "waiting_for": "refs"}
    running = dict(gen, started="true")
    t = 0.0
    for step in ({"trajectory_generator": gen},                                   # a node comes up
                 {"trajectory_generator": gen, "joint_controller": ctl},
                 {"trajectory_generator": running, "joint_controller": ctl}):   # a node starts
        t += patience - 1.0                                # each step just inside the patience: never stalled
        assert watch.stalled(t, NODES) is None
        watch.observe(t, step, 0.0, None)
    assert watch.stalled(t + patience - 0.1, NODES) is None
    watch.observe(t + 1.0, {"trajectory_generator": running, "joint_controller": ctl}, 0.0, None)   # no progress
    assert watch.stalled(t + patience, NODES) is not None
    watch.observe(t + 10.0, {"trajectory_generator": running, "joint_controller": ctl}, 0.0, "accepted")  # the goal
    assert watch.stalled(t + 10.0 + patience - 0.1, NODES) is None
    line = watch.stalled(t + 10.0 + patience, NODES)
    assert line == (f"no start-up progress for {patience:.1f} s (wall), sim time still 0: trajectory_generator: "
                    "running; inverse_kinematics: no /diagnostics yet (still starting its process, or stuck before it "
                    "publishes); computed_force: no /diagnostics yet (still starting its process, or stuck before it "
                    "publishes); joint_controller: waiting for refs")
    with pytest.raises(InvalidInputError, match="patience"):
        bringup.StartupWatch(now=0.0, patience=0.0)


def test_bringup_names_a_node_whose_diagnostics_stopped():
    """A node stuck in a call publishes no stall of its own: its /diagnostics (1 Hz) stop, and STALL_ERROR s (wall)
    after the last one `pkm bringup` names it."""
    heard = {"joint_controller": 100.0, "inverse_kinematics": 130.0}
    assert bringup.silent(heard, 100.0 + STALL_ERROR - 0.1) is None
    assert bringup.silent(heard, 100.0 + STALL_ERROR) == \
        f"joint_controller: no /diagnostics for {STALL_ERROR:.1f} s (wall): stuck"


def test_the_summary_prints_what_each_node_waits_for():
    waits = bringup.waits({"joint_controller": {"started": "true", "lockstep_stall": "error", "waiting_for": "refs"},
                           "computed_force": {"started": "true"}}, ["computed_force", "joint_controller"])
    assert waits == {"computed_force": "running", "joint_controller": "waiting for refs"}
    text = bringup.format_summary({"goal_status": "stalled", "reason": "r", "sim_duration_s": 0.0,
                                   "wall_duration_s": 61.0, "waiting": waits})
    assert text.splitlines()[-2:] == ["computed_force: running", "joint_controller: waiting for refs"]
