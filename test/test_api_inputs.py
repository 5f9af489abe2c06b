"""The public Python API under generated hostile inputs: a finite answer or one of the project's errors.

For every robot and every public kinematics, analysis, workspace and dynamics function, generated poses,
twists, accelerations, wrenches and batches (near home, huge but finite, NaN and inf, wrong sizes, wrong
types) give either outputs whose every number is finite or a PkmError (errors.py: InvalidInputError for a
malformed or out-of-bound argument, UnreachablePoseError / JointLimitError / SingularConfigurationError /
ConvergenceError for a pose the mechanism cannot take or a computation that has no answer there). Any
other exception (ValueError, TypeError, IndexError, LinAlgError, ZeroDivisionError, MemoryError) fails.
The number of examples is the active hypothesis profile's (conftest.py).
"""

import dataclasses
from functools import partial

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.formulations import formulation, methods_for
from pkm_control.errors import MAGNITUDE_LIMIT, PkmError
from pkm_control.kinematics import Pose
from pkm_control.kinematics.analysis import compliance, dexterity, singularity, stiffness
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.workspace import coords_to_arrays, sample_workspace

ROBOTS = ("palida", "stewart", "lopes", "delta", "planar_redundant")
FIXTURE_OK = settings(suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

#: numbers a caller might pass: ordinary ones and the hostile ones of issue 9
HOSTILE = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([1e300, -1e308, 1e200, 1e155, 1.1 * MAGNITUDE_LIMIT, MAGNITUDE_LIMIT, 1e-300,
                                     0.0, float("nan"), float("inf")]))
SMALL = st.floats(-0.05, 0.05)


def assert_finite(value, what="result"):
    """Every number in value (arrays, floats, tuples, dicts, dataclasses; None allowed) is finite."""
    if value is None or isinstance(value, (str, bool)):
        return
    if dataclasses.is_dataclass(value):
        for f in dataclasses.fields(value):
            assert_finite(getattr(value, f.name), f"{what}.{f.name}")
    elif isinstance(value, dict):
        for k, v in value.items():
            assert_finite(v, f"{what}[{k}]")
    elif isinstance(value, (tuple, list)):
        for i, v in enumerate(value):
            assert_finite(v, f"{what}[{i}]")
    elif isinstance(value, Pose):
        assert_finite((value.position, value.rotation), what)
    else:
        arr = np.asarray(value)
        if arr.dtype.kind in "fc":
            assert np.isfinite(arr).all(), f"{what} is not finite: {arr}"


def finite_or_project_error(fn, *args, **kwargs):
    """fn(*args, **kwargs) is finite or raises a PkmError; returns the result (None after an error)."""
    try:
        out = fn(*args, **kwargs)
    except PkmError:
        return None
    assert_finite(out, getattr(fn, "__name__", "result"))
    return out


@st.composite
def vectors(draw, size):
    """A vector of ``size`` near zero (reachable motions), up to the bound MAGNITUDE_LIMIT (which must still give
    finite outputs), with a hostile component, of a wrong size, or junk."""
    kind = draw(st.sampled_from(["small", "small", "small", "large", "large", "hostile", "size", "junk"]))
    if kind in ("small", "large"):
        x = SMALL if kind == "small" else st.floats(-MAGNITUDE_LIMIT, MAGNITUDE_LIMIT)
        return np.array(draw(st.lists(x, min_size=size, max_size=size)))
    if kind == "hostile":
        v = np.array(draw(st.lists(SMALL, min_size=size, max_size=size)))
        v[draw(st.integers(0, size - 1))] = draw(HOSTILE)
        return v
    if kind == "size":
        n = draw(st.sampled_from([0, size - 1, size + 1]))
        return [0.0] * n
    return draw(st.sampled_from(["abc", None, [[1.0, 2.0], [3.0]], {"x": 1}, [object()] * size]))


@st.composite
def poses(draw, kin):
    """A pose near home (task coordinates), with a hostile coordinate, with a non-rotation, or not a Pose."""
    home = np.asarray(kin.model.config["home"], float)
    kind = draw(st.sampled_from(["near", "near", "near", "hostile", "matrix", "junk"]))
    x = home + np.array(draw(st.lists(st.floats(-0.3, 0.3), min_size=len(home), max_size=len(home))))
    if kind == "near":
        return kin.task.pose(x)
    if kind == "hostile":
        x[draw(st.integers(0, len(x) - 1))] = draw(HOSTILE)
        p, R = coords_to_arrays(kin.task, np.nan_to_num(x[None, :], nan=0.0, posinf=0.0, neginf=0.0))
        position = p[0]
        position[draw(st.integers(0, 2))] = draw(HOSTILE)
        return Pose(position, R[0])
    if kind == "matrix":
        return Pose(kin.task.pose(x).position, np.array(draw(st.lists(HOSTILE, min_size=9, max_size=9))).reshape(3, 3))
    return draw(st.sampled_from([None, "pose", x, (x[:3], np.eye(3)), Pose([0.0, 0.0], np.eye(3)),
                                 Pose("abc", np.eye(3))]))


@pytest.mark.parametrize("robot", ROBOTS)
@FIXTURE_OK
@given(data=st.data())
def test_kinematics_and_analysis(robot, data):
    kin = robot_dynamics(robot).kin
    n = kin.task.dim
    pose = data.draw(poses(kin), "pose")
    twist, accel = data.draw(vectors(n), "twist"), data.draw(vectors(n), "accel")
    finite_or_project_error(kin.inverse, pose, twist, accel, jacobian=True)
    finite_or_project_error(kin.inverse, pose, check_limits=False)
    for fn in (kin.actuated, kin.jacobian, kin.joint_jacobian, kin.jacobian_xq, partial(dexterity, kin),
               partial(stiffness, kin), partial(compliance, kin)):
        finite_or_project_error(fn, pose)
    finite_or_project_error(kin.jacobian_dot, pose, twist)
    rep = finite_or_project_error(lambda p: dataclasses.replace(singularity(kin, p), condition_number=0.0), pose)
    if rep is not None:     # kappa is inf only where J is singular (sigma_min 0, or an inverse singularity)
        assert np.isfinite(singularity(kin, pose).condition_number) or rep.singular
    qa = data.draw(vectors(kin.model.n_actuated), "actuated joints")
    finite_or_project_error(forward_kinematics, kin, qa, pose)
    if kin.model.name == "delta":
        finite_or_project_error(kin.direct_geometric_model, qa)
        finite_or_project_error(kin.forward_jacobian, pose)
        finite_or_project_error(kin.forward_jacobian_dot, pose, qa)
    if kin.model.name == "lopes":
        finite_or_project_error(kin.euler_rate_map, pose)
        finite_or_project_error(kin.jacobian_euler, pose)


@pytest.mark.parametrize("robot", ROBOTS)
@FIXTURE_OK
@given(data=st.data())
def test_batch_and_workspace(robot, data):
    kin = robot_dynamics(robot).kin
    home = np.asarray(kin.model.config["home"], float)
    N = data.draw(st.integers(0, 6), "samples")
    X = home + np.array(data.draw(st.lists(st.floats(-0.3, 0.3), min_size=N * len(home),
                                           max_size=N * len(home)))).reshape(N, len(home))
    P, R = coords_to_arrays(kin.task, X)
    kind = data.draw(st.sampled_from(["plain", "hostile position", "hostile rotation", "shape", "junk"]), "kind")
    if kind == "hostile position" and N:
        P[data.draw(st.integers(0, N - 1)), data.draw(st.integers(0, 2))] = data.draw(HOSTILE)
    elif kind == "hostile rotation" and N:
        R[data.draw(st.integers(0, N - 1))].flat[data.draw(st.integers(0, 8))] = data.draw(HOSTILE)
    elif kind == "shape":
        P = P[:, :2] if data.draw(st.booleans()) else P[:-1]
    elif kind == "junk":
        P = data.draw(st.sampled_from(["abc", None, [[1.0, 2.0], [3.0]]]))
    try:
        q, valid = kin.inverse_batch(P, R)
    except PkmError:
        pass
    else:
        assert valid.shape == (N,) and np.isfinite(q[valid]).all()
        for i in np.flatnonzero(valid):    # a valid sample is a pose the single-pose IK accepts
            kin.inverse(Pose(P[i], R[i]))
    names = list(kin.task.names)
    vary = data.draw(st.one_of(st.lists(st.sampled_from(names + ["w"]), min_size=0, max_size=4),
                               st.sampled_from(["xy", None, [["x"]], ("x", 1)])), "vary")
    fixed = data.draw(st.one_of(st.just(home), vectors(len(home))), "fixed")
    resolution = data.draw(st.one_of(st.integers(-1, 4), st.sampled_from([10 ** 6, np.int64(10 ** 7), 2.5, "3", True])),
                           "resolution")
    scale = data.draw(st.one_of(st.floats(0.5, 2.0), HOSTILE, st.just("x")), "scale")
    try:
        res = sample_workspace(kin, vary, fixed, resolution, scale=scale)
    except PkmError:
        return
    # WorkspaceResult.dexterity marks the unreachable samples with NaN (blank in the plot): finite elsewhere
    assert_finite((res.grids, res.coords, res.dexterity[res.reachable], res.dexterity_stats()), "workspace")


@pytest.mark.parametrize("robot", ROBOTS)
@FIXTURE_OK
@given(data=st.data())
def test_dynamics(robot, data):
    dyn = robot_dynamics(robot)
    kin = dyn.kin
    n = kin.task.dim
    pose = data.draw(poses(kin), "pose")
    twist, accel = data.draw(vectors(n), "twist"), data.draw(vectors(n), "accel")
    wrench = data.draw(st.one_of(st.none(), vectors(6)), "wrench")
    weights = data.draw(st.one_of(st.none(), vectors(kin.model.n_actuated)), "weights") if dyn.redundant else None
    result = finite_or_project_error(dyn.inverse_dynamics, pose, twist, accel, wrench=wrench,
                                     closure_forces=data.draw(st.booleans()), weights=weights)
    if result is not None:       # the issue's example: tau of a 1e200 twist was NaN; now bounded or refused
        assert np.isfinite(result.tau).all()
    for fn in (dyn.mass_matrix, dyn.gravity_vector):
        finite_or_project_error(fn, pose)
    for fn in (dyn.coriolis_matrix, dyn.energy, dyn.joint_space):
        finite_or_project_error(fn, pose, twist)
    finite_or_project_error(dyn.forward_dynamics, pose, twist, data.draw(vectors(kin.model.n_actuated), "tau"))
    finite_or_project_error(dyn.regressor, pose, twist, accel)
    for method in methods_for(robot):
        finite_or_project_error(formulation(method, dyn).inverse_dynamics, pose, twist, accel)


@pytest.mark.parametrize("robot", ROBOTS)
def test_examples_from_the_issue(robot):
    """inverse_dynamics(home, [1e200] * n, 0) was NaN; it is now refused by name."""
    dyn = robot_dynamics(robot)
    home = dyn.kin.task.pose(dyn.model.config["home"])
    zero = np.zeros(dyn.n)
    with pytest.raises(PkmError, match="twist"):
        dyn.inverse_dynamics(home, [1e200] * dyn.n, zero)
    with pytest.raises(PkmError, match="acceleration"):
        dyn.inverse_dynamics(home, zero, [1e308] * dyn.n)
    assert np.isfinite(dyn.inverse_dynamics(home, zero, zero).tau).all()


@pytest.mark.parametrize("robot", ROBOTS)
def test_forward_dynamics_refuses_an_empty_twist_array(robot):
    """An empty float64 twist passed the compiled pass's shape check (length 0 is its "no twist") and left
    the tree rates unwritten: palida's forward dynamics returned an acceleration of uninitialized memory."""
    from pkm_control.errors import InvalidInputError

    dyn = robot_dynamics(robot)
    home = dyn.kin.home_pose()
    with pytest.raises(InvalidInputError, match="twist"):
        dyn.forward_dynamics(home, np.empty(0), np.zeros(dyn.model.n_actuated))


def test_singular_stewart_pose_gets_no_forces():
    """At Fichter's singularity (config singular_pose, yaw 90 deg) J^-T f was 1e18 N; now every force
    computation refuses the pose, with the threshold of the singularity analysis."""
    from pkm_control.errors import SingularConfigurationError

    dyn = robot_dynamics("stewart")
    pose = dyn.kin.task.pose(dyn.model.config["singular_pose"])
    zero = np.zeros(6)
    assert singularity(dyn.kin, pose).singular
    for fn in [dyn.inverse_dynamics] + [formulation(m, dyn).inverse_dynamics for m in methods_for("stewart")]:
        with pytest.raises(SingularConfigurationError, match="sigma_min / sigma_max"):
            fn(pose, zero, zero)


#: non-string robot ids, as a caller might pass them by mistake
NOT_A_NAME = st.one_of(st.lists(st.sampled_from(ROBOTS), max_size=2), st.integers(), st.floats(allow_nan=True),
                       st.dictionaries(st.text(max_size=3), st.integers()), st.none(),
                       st.tuples(st.sampled_from(ROBOTS)))


@given(robot=NOT_A_NAME)
def test_a_robot_id_that_is_not_a_string_is_refused_by_name(robot):
    """robot_kinematics and robot_dynamics check their arguments before their cache hashes them: a list or a dict
    gets InvalidInputError naming the robot argument, never lru_cache's TypeError (unhashable type)."""
    from pkm_control.errors import InvalidInputError
    from pkm_control.kinematics import robot_kinematics

    for build in (robot_kinematics, robot_dynamics):
        with pytest.raises(InvalidInputError, match="robot must be a robot id"):
            build(robot)
    with pytest.raises(InvalidInputError, match="variant must be"):
        robot_kinematics("palida", ["default"])


@given(value=st.one_of(HOSTILE, st.integers(min_value=10 ** 400, max_value=10 ** 6000),
                       st.sampled_from([1e300, 1e308, -1e300, 7.0, 2 ** 31 - 1])))
@settings(deadline=None)
def test_a_goal_with_absurd_numbers_is_refused_before_any_arithmetic(value):
    """Angles, speeds and lengths of a goal beyond their stated bounds (|inclination| <= 90 deg, |start_angle| <=
    2 pi, lengths and speeds <= MAGNITUDE_LIMIT) and integers of thousands of digits are refused with
    InvalidInputError naming the field, with no numpy warning on the way (warnings are errors here)."""
    import math
    import warnings

    from pkm_control.errors import InvalidInputError
    from pkm_control.kinematics import robot_kinematics
    from pkm_control.trajectory import trajectory_from_spec

    kin = robot_kinematics("palida")
    specs = [({"type": "benchmark_circle", "radius": 0.1, "inclination_deg": value}, "inclination_deg",
              lambda x: abs(x) <= 90),
             ({"type": "circle", "radius": 0.05, "start_angle": value}, "start_angle", lambda x: abs(x) <= 2 * math.pi),
             ({"type": "circle", "radius": 0.05, "speed": value}, "speed", lambda x: 0 < x <= MAGNITUDE_LIMIT),
             ({"type": "circle", "radius": 0.05, "laps": value}, "laps", lambda x: 0 <= x <= MAGNITUDE_LIMIT)]
    for spec, field, inside in specs:
        try:
            number = float(value)
        except OverflowError:
            number = math.inf
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            if math.isfinite(number) and inside(number):
                try:
                    trajectory_from_spec(kin, spec)
                except PkmError:      # e.g. too long a motion, or a circle leaving the workspace: named errors
                    pass
            else:
                with pytest.raises(InvalidInputError, match=field):
                    trajectory_from_spec(kin, spec)
