"""Absurd goals as the trajectory generator reads them (issue 22 §3), ROS-free: the goal text through ``parse_goal``
and ``GoalScheduler.load`` (what the node's ``load`` does), with numpy's warnings turned into errors: a refusal is an
InvalidInputError naming the field, before any arithmetic could overflow; and 10,000 waypoints sampled in one pass
over their segments (``Waypoints._motion``), equal to the generic per-segment ``Sequence._motion``."""

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from pkm_control.errors import InvalidInputError, PkmError
from pkm_control.kinematics import robot_kinematics
from pkm_control.kinematics.task_space import Pose
from pkm_control.trajectory import trajectory_from_spec
from pkm_control.trajectory.paths import CHECK_SEGMENT_SAMPLES, PointToPoint, Sequence, Waypoints
from pkm_control.trajectory.spec import check_reachable, home_pose
from pkm_control.trajectory.streaming import GoalScheduler, parse_goal

KIN = robot_kinematics("palida")


def load(text):
    """The generator's path for a goal message: parse, build, check (warnings are errors)."""
    sched = GoalScheduler(KIN, home_pose(KIN), 500_000, 10, 10_000_000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return sched.load(parse_goal(text))


@pytest.mark.parametrize("text, field", [
    ("{type: benchmark_circle, radius: 0.1, inclination_deg: 1e308}", "inclination_deg"),
    ("{type: circle, radius: 0.1, start_angle: 1e300}", "start_angle"),
    ("{type: circle, radius: 0.1, speed: 1e300}", "speed"),
    ("{type: circle, radius: 0.1, speed: -1e300}", "speed"),
    ("{type: circle, radius: 1e300}", "radius"),
    ("{type: point_to_point, goal: [0, 0, -0.85, 0, 0, 0], duration: 1e300}", "duration"),
])
def test_the_issues_absurd_goals_are_refused_naming_the_field(text, field):
    with pytest.raises(InvalidInputError, match=field):
        load(text)


@pytest.mark.parametrize("where", ["radius", "speed", "duration", "goal: [0, 0, -0.85, 0, 0, {}]"])
def test_an_integer_of_5000_digits_is_a_project_error(where):
    """Python refuses to read an int of more than 4300 digits (ValueError); the goal is refused as a project error."""
    digits = "7" * 5000
    text = f"{{type: point_to_point, goal: [0, 0, -0.85, 0, 0, 0], duration: 1, {where}: {digits}}}" \
        if "{}" not in where else "{type: point_to_point, duration: 1, " + where.format(digits) + "}"
    with pytest.raises(InvalidInputError, match="4300 digits"):
        load(text)


def test_a_date_that_does_not_exist_is_a_project_error():
    with pytest.raises(InvalidInputError, match="YAML cannot read"):
        parse_goal("{type: circle, radius: 0.1, speed: 2020-13-45}")


@given(field=st.sampled_from(["radius", "speed", "laps", "ramp_time", "start_angle"]),
       value=st.one_of(st.floats(allow_nan=False), st.integers(min_value=-10 ** 300, max_value=10 ** 300),
                       st.sampled_from(["1e999", "-.inf", ".nan", "1e-320"])))
@settings(deadline=None, max_examples=60)
def test_a_circle_with_any_number_is_accepted_or_refused_without_a_warning(field, value):
    """No numpy warning on the way (warnings are errors in ``load``): either a checked goal or a project error."""
    try:
        traj, _ = load(f"{{type: circle, radius: 0.05, {field}: {value}}}")
    except PkmError:
        return
    assert math.isfinite(traj.duration) and traj.duration > 0


# ----------------------------------------------------------------------------- many waypoints

def _poses(n, seed=0):
    rng = np.random.default_rng(seed)
    x = np.zeros((n, 6))
    x[:, :2] = rng.uniform(-0.02, 0.02, (n, 2))
    x[:, 2] = -0.85 + rng.uniform(-0.02, 0.02, n)
    x[:, 3:] = rng.uniform(-0.05, 0.05, (n, 3))
    return x


@pytest.mark.parametrize("profile", ["quintic", "trapezoidal", "sine_on_ramp", "trig_spline3", "parabolic"])
def test_waypoints_sampled_at_once_equal_the_segments_one_by_one(profile):
    """Waypoints._motion (every segment in one pass) against Sequence._motion of the same segments (each
    PointToPoint sampled on its own), at random times, the segment boundaries and outside [0, duration]; the check
    times equal Sequence.check_times."""
    rng = np.random.default_rng(3)
    n = 60
    durations = rng.choice([0.05, 0.1, 0.25], n - 1)
    traj = Waypoints(KIN.task, [KIN.task.pose(x) for x in _poses(n)], durations, profile)
    t = np.r_[-0.1, np.sort(rng.uniform(0, traj.duration, 2000)), traj.times, traj.duration + 0.1]
    for mine, generic in zip(traj._motion(t), Sequence._motion(traj, t)):
        assert np.allclose(mine, generic, rtol=0, atol=1e-12)
    assert np.allclose(traj.check_times(), Sequence.check_times(traj), rtol=0, atol=1e-12)
    # every segment is a PointToPoint of its two poses (the formulas Waypoints vectorizes)
    seg = traj.segments[7]
    alone = PointToPoint(KIN.task, traj.poses[7], traj.poses[8], durations[7], profile)
    ts = np.linspace(0, durations[7], 50)
    for a, b in zip(seg._motion(ts), alone._motion(ts)):
        assert np.array_equal(a, b)


def test_10000_waypoints_are_checked_with_a_bounded_number_of_samples_and_profile_calls(monkeypatch):
    """10,000 waypoints (the issue's > 60 s): the reachability check samples each segment CHECK_SEGMENT_SAMPLES times
    and evaluates the profile once per distinct duration and sampling (not once per segment). Speed is measured,
    not asserted: docs/security.md has the figures."""
    n = 10_000
    spec = {"type": "waypoints", "poses": _poses(n, 1).tolist(), "durations": [0.05, 0.1] * (n // 2)}
    traj = trajectory_from_spec(KIN, spec)
    assert isinstance(traj, Waypoints) and len(traj.segments) == n       # from the start pose to each of n
    assert traj.check_times().size == n * CHECK_SEGMENT_SAMPLES
    calls = []
    f = traj._f
    monkeypatch.setattr(traj, "_f", lambda t, T: (calls.append(np.size(t)), f(t, T))[1])
    ts, q = check_reachable(KIN, traj)
    assert ts.size == n * CHECK_SEGMENT_SAMPLES and np.isfinite(q).all()
    assert len(calls) == 3 * 2                      # sample_many x 3 (poses, and -h, +h for the velocities) x 2 T
    assert sum(calls) == 3 * ts.size


def test_an_unreachable_waypoint_among_10000_is_named():
    x = _poses(10_000, 2)
    x[6543, 2] = -5.0
    with pytest.raises(PkmError, match="leaves the workspace"):
        check_reachable(KIN, trajectory_from_spec(KIN, {"type": "waypoints", "poses": x.tolist(),
                                                         "durations": 0.05 * np.ones(len(x))}))
    with pytest.raises(InvalidInputError, match="waypoint 0"):
        Waypoints(KIN.task, [Pose(np.zeros(3), 2 * np.eye(3)), home_pose(KIN)], [1.0])
