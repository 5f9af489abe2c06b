"""State estimator (control/estimator.py) on every shipped robot and variant.

Ground truth is the plant's own model: a reachable pose (inside the workspace box, every joint
limit respected) and a random twist give the measured actuated joints by the analytic IK
(``kin.inverse(pose, twist)``); the estimate must give back that pose and twist. The joints of
``joints=True`` are checked against ``kin.inverse`` and, independently of it, against the URDF
closure model (closure residual and K v = 0). No test depends on wall-clock timing.

Assembly modes: a parallel robot may have several platform poses for one q_a. The correct
estimate is the one continuous with the previous estimate, so the warm-started states are
taken near the guess (a few mm / mrad, or the previous sample of a path); the jump tests use
poses whose true assembly is the one inside the joint limits nearest the previous pose, and
test_nearest_assembly_wins_after_a_jump shows what happens when it is not.
"""

import numpy as np
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.control import StateEstimate, StateEstimator
from pkm_control.description import closure_jacobian, closure_residual
from pkm_control.errors import ConvergenceError, InvalidInputError, SingularConfigurationError
from pkm_control.kinematics import Pose, make_kinematics, robot_kinematics
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.workspace import random_poses, workspace_box

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]
TOL = 1e-9


@pytest.fixture(params=ROBOTS, ids=IDS)
def kin(request):
    return robot_kinematics(*request.param)


def _key(kin):
    return f"{kin.model.name}-{kin.model.variant}" if kin.model.variant else kin.model.name


def _measure(kin, pose, twist):
    """What the drives read at this platform motion: actuated positions and velocities (the plant's IK)."""
    m = kin.inverse(pose, twist)
    act = kin.model.actuated_idx
    return m.q[act], m.v[act]


def _assert_pose(pose, truth, tol=TOL):
    np.testing.assert_allclose(pose.position, truth.position, rtol=0, atol=tol)
    np.testing.assert_allclose(pose.rotation, truth.rotation, rtol=0, atol=tol)


def _named_poses(kin):
    cfg = kin.model.config
    home = kin.task.pose(np.asarray(cfg["home"], float))
    return home, [kin.task.pose(np.asarray(x, float)) for x in cfg["demo_poses"]]


def _distance(kin, a, b):
    return float(np.linalg.norm(kin.task.difference(a, b)))


def test_random_states_warm_started_nearby(kin):
    """200 random reachable states, each warm-started 3 mm / 3 mrad away: pose, twist and every joint."""
    rng = np.random.default_rng(11)
    est = StateEstimator(kin)
    clm = kin.model
    data = clm.create_data()
    n = kin.task.dim
    for pose in random_poses(kin, 200, rng):
        twist = rng.uniform(-1.0, 1.0, n)              # m/s and rad/s
        qa, qd = _measure(kin, pose, twist)
        d = rng.standard_normal(n)
        guess = kin.task.retract(pose, 3e-3 * d / np.linalg.norm(d))
        e = est.estimate(qa, qd, guess)
        assert isinstance(e, StateEstimate) and not e.recovered and e.q is None and e.v is None
        _assert_pose(e.pose, pose)
        np.testing.assert_allclose(e.twist, twist, rtol=0, atol=TOL)
        assert e.residual <= 1e-12 and e.iterations <= 4 and e.rcond > 1e-6
        ej = est.estimate(qa, qd, guess, joints=True)
        # the same solve twice: the same bits, but for the numeric family, whose Newton iteration starts from its
        # last solution (kinematics/numeric.py: the result depends on that start within the solver tolerance)
        again = 0 if kin.family != "numeric" else 1e-12
        _assert_pose(ej.pose, e.pose, tol=again)
        np.testing.assert_allclose(ej.twist, e.twist, rtol=0, atol=again)
        truth = kin.inverse(pose, twist)
        np.testing.assert_allclose(ej.q, truth.q, rtol=0, atol=TOL)
        np.testing.assert_allclose(ej.v, truth.v, rtol=0, atol=TOL)
        # independent of the analytic IK: the joints close every loop of the URDF and move with it
        assert np.abs(closure_residual(clm, data, ej.q)).max() <= TOL
        assert np.abs(closure_jacobian(clm, data, ej.q) @ ej.v).max() <= TOL
        np.testing.assert_allclose(ej.q[clm.actuated_idx], qa, rtol=0, atol=TOL)
        np.testing.assert_allclose(ej.v[clm.actuated_idx], qd, rtol=0, atol=TOL)


def test_path_warm_started_from_the_previous_estimate(kin):
    """As in the control loop: each sample of a smooth path is warm-started from the previous estimate.

    pose(t) = retract(home, s(t) d) with s = sin(2 pi t) and a fixed d (rotation about a fixed
    base axis), so the twist is exactly s'(t) d.
    """
    est = StateEstimator(kin)
    home, _ = _named_poses(kin)
    lo, hi = workspace_box(kin)
    d = 0.1 * (hi - lo) / 2 * np.resize([1.0, -1.0, 1.0], kin.task.dim)
    guess = home
    for t in np.linspace(0.0, 1.0, 100, endpoint=False):
        pose = kin.task.retract(home, np.sin(2 * np.pi * t) * d)
        twist = 2 * np.pi * np.cos(2 * np.pi * t) * d
        qa, qd = _measure(kin, pose, twist)            # raises if the path left the reachable set
        e = est.estimate(qa, qd, guess)
        assert not e.recovered and e.iterations <= 3
        _assert_pose(e.pose, pose)
        np.testing.assert_allclose(e.twist, twist, rtol=0, atol=TOL)
        guess = e.pose


def test_recovery_after_a_jump_between_home_and_demo_poses(kin):
    """The measurements jump from home to each demo pose and back, the guess being the pose before the jump.

    Each jump is longer than max_step, so the warm start is not trusted and the recovery search
    runs (``recovered``); for these configured poses the true assembly is the one inside the
    joint limits nearest the previous pose.
    """
    est = StateEstimator(kin)
    home, demos = _named_poses(kin)
    rng = np.random.default_rng(5)
    for demo in demos:
        for before, after in ((home, demo), (demo, home)):
            assert _distance(kin, after, before) > est.max_step
            twist = rng.uniform(-1.0, 1.0, kin.task.dim)
            qa, qd = _measure(kin, after, twist)
            e = est.estimate(qa, qd, before)
            assert e.recovered
            _assert_pose(e.pose, after)
            np.testing.assert_allclose(e.twist, twist, rtol=0, atol=TOL)


def _mirror(pose):
    """Reflection through the base plane z = 0: for a 6-UPS hexapod whose base and platform anchors lie
    in z = 0 (stewart, palida) the mirror assembly has exactly the same strut lengths."""
    M = np.diag([1.0, 1.0, -1.0])
    return Pose(M @ pose.position, M @ pose.rotation @ M)


def _bad_warm_starts(kin):
    """(guess, truth, what the warm-started FK alone does): poor guesses for each robot."""
    home, demos = _named_poses(kin)
    key = _key(kin)
    if key in ("stewart-6-6", "stewart-3-6", "palida"):
        # the warm start converges to the mirror assembly (same q_a), outside the joint limits
        return [(_mirror(home), d, "mirror") for d in demos]
    if key in ("delta", "lopes", "planar_3rrr", "five_bar", "orthoglide", "tsai_3upu"):
        # 5 m off the base: no leg reaches, the guess is not an assembly (the delta's mirror guess, above the
        # motors' plane, is a good start for some poses since its arm angles are continuous there); the 3-UPU's
        # legs are strokes without a range in the FK: from 5 m off it may still assemble, from 50 m it does not
        off = 50.0 if key == "tsai_3upu" else 5.0
        return [(Pose(home.position + [off, 0.0, 0.0], home.rotation), d, "fails") for d in demos]
    if key == "planar_redundant-redundant":
        # from a workspace corner the least squares end in a local minimum (misfit 0.3 m)
        return [(kin.task.pose([1.15, 2.0, -1.2]), demos[0], "misfit")]
    # planar_redundant-nonredundant: another assembly inside the joint limits (alpha -0.63 instead
    # of -0.5), farther from the guess
    return [(demos[1], demos[2], "elsewhere")]


def _warm_outcome(kin, est, qa, guess, truth):
    if kin.family == "numeric":      # its FK starts from its last solution: a fresh instance starts from the guess
        kin = make_kinematics(kin.model)
    try:
        res = forward_kinematics(kin, qa, guess, check_limits=False)
    except ConvergenceError:
        return "fails", None
    if res.residual > est.max_residual:
        return "misfit", res
    if _distance(kin, res.pose, truth) <= 1e-9:
        return "truth", res
    return ("mirror" if _distance(kin, res.pose, _mirror(truth)) <= 1e-9 else "elsewhere"), res


def test_recovery_when_the_warm_start_fails_or_converges_elsewhere(kin):
    """Poor guesses: the warm-started FK alone fails or lands on a wrong pose; the estimate is the truth."""
    est = StateEstimator(kin)
    rng = np.random.default_rng(6)
    for guess, truth, expected in _bad_warm_starts(kin):
        twist = rng.uniform(-1.0, 1.0, kin.task.dim)
        qa, qd = _measure(kin, truth, twist)
        outcome, warm = _warm_outcome(kin, est, qa, guess, truth)
        assert outcome == expected
        if outcome == "mirror":
            np.testing.assert_allclose(kin.actuated(_mirror(truth)), qa, rtol=0, atol=1e-12)
        if outcome == "elsewhere":    # a genuine second assembly inside the limits, but farther from the guess
            kin.inverse(warm.pose)
            assert _distance(kin, warm.pose, guess) > _distance(kin, truth, guess)
        e = est.estimate(qa, qd, guess)
        assert e.recovered
        _assert_pose(e.pose, truth)
        np.testing.assert_allclose(e.twist, twist, rtol=0, atol=TOL)


def test_nearest_assembly_wins_after_a_jump():
    """Limitation, stated: after a jump the answer is the assembly inside the limits nearest the guess.

    The non-redundant planar robot (sliders and one strut) has two assemblies inside its joint
    limits for the q_a of the workspace corner (0.05, 2.0, -1.2); from home the other one
    (alpha about -0.99) is nearer, and the measurements cannot tell them apart.
    """
    kin = robot_kinematics("planar_redundant", "nonredundant")
    est = StateEstimator(kin)
    home, _ = _named_poses(kin)
    corner = kin.task.pose([0.05, 2.0, -1.2])
    qa, qd = _measure(kin, corner, np.zeros(3))
    e = est.estimate(qa, qd, home)
    assert e.recovered and _distance(kin, e.pose, corner) > 0.1
    np.testing.assert_allclose(kin.actuated(e.pose), qa, rtol=0, atol=1e-12)
    kin.inverse(e.pose)                                # inside every joint limit
    assert _distance(kin, e.pose, home) < _distance(kin, corner, home)
    # continuity: from a guess near the true corner the estimate follows the true assembly
    e = est.estimate(qa, qd, kin.task.retract(corner, np.full(3, 2e-3)))
    assert not e.recovered
    _assert_pose(e.pose, corner)


def test_redundant_actuation_least_squares_misfit():
    """Inconsistent measurements (4 actuators, 3 dof): the estimate is the least-squares pose.

    To first order in a measurement error dq the pose moves by J^+ dq and the misfit is
    |(I - J J^+) dq|, J at the true pose (numpy's pseudo-inverse).
    """
    kin = robot_kinematics("planar_redundant", "redundant")
    est = StateEstimator(kin)
    home, demos = _named_poses(kin)
    for pose in [home] + demos:
        qa, qd = _measure(kin, pose, np.array([0.2, -0.1, 0.3]))
        J = kin.jacobian(pose)
        Jp = np.linalg.pinv(J)
        dq = 1e-7 * np.array([1.0, -2.0, 0.5, 1.5])
        e = est.estimate(qa + dq, qd, kin.task.retract(pose, np.full(3, 1e-3)))
        assert not e.recovered
        np.testing.assert_allclose(e.residual, np.linalg.norm(dq - J @ Jp @ dq), rtol=1e-5)
        np.testing.assert_allclose(kin.task.difference(e.pose, pose), Jp @ dq, rtol=0, atol=1e-12)
        np.testing.assert_allclose(e.twist, Jp @ qd, rtol=0, atol=1e-6)    # J moved by ~1e-7
    # a misfit above max_residual is no assembly of the robot
    with pytest.raises(ConvergenceError, match="max_residual"):
        est.estimate(qa + 1e3 * dq, qd, pose)


def test_unreachable_joint_values_raise_a_clear_convergence_error(kin):
    """Actuated positions a whole stroke outside their ranges, alternating in sign: no assembly."""
    est = StateEstimator(kin)
    home, _ = _named_poses(kin)
    act = kin.model.actuated_idx
    qa = kin.actuated(home) + 2 * (kin.upper[act] - kin.lower[act]) * (-1.0) ** np.arange(len(act))
    with pytest.raises(ConvergenceError) as info:
        est.estimate(qa, np.zeros(len(act)), home)
    msg = str(info.value)
    # a revolute motor two strokes off may still assemble modulo 2 pi (the five-bar's): then outside the limits
    assert f"'{kin.model.name}'" in msg and (("residual" in msg and "cold start home" in msg)
                                             or "converged outside the joint limits" in msg)
    for name, value in zip(kin.model.actuated_joints, qa):
        assert f"{name} = {value:.6g}" in msg


def test_singular_jacobian_is_reported():
    """At Fichter's singular pose of the stewart platform (config singular_pose) J is singular: no twist."""
    for variant in ("6-6", "3-6"):
        kin = robot_kinematics("stewart", variant)
        pose = kin.task.pose(np.asarray(kin.model.config["singular_pose"], float))
        with pytest.raises(SingularConfigurationError, match="reciprocal condition number"):
            StateEstimator(kin).estimate(kin.actuated(pose), np.ones(6), pose)


def test_bad_inputs(kin):
    est = StateEstimator(kin)
    home, _ = _named_poses(kin)
    qa, qd = _measure(kin, home, np.zeros(kin.task.dim))
    na = len(qa)
    with pytest.raises(InvalidInputError, match="actuated joint positions .* finite"):
        est.estimate(np.full(na, np.nan), qd, home)
    with pytest.raises(InvalidInputError, match=rf"actuated joint positions .* shape \({na},\)"):
        est.estimate(qa[:-1], qd, home)
    with pytest.raises(InvalidInputError, match="actuated joint velocities .* finite"):
        est.estimate(qa, np.full(na, np.inf), home)
    with pytest.raises(InvalidInputError, match=rf"actuated joint velocities .* shape \({na},\)"):
        est.estimate(qa, np.zeros(na + 1), home)
    with pytest.raises(InvalidInputError, match="pose position must be finite"):
        est.estimate(qa, qd, Pose(np.full(3, np.nan), home.rotation))
    with pytest.raises(InvalidInputError, match="not a rotation matrix"):
        est.estimate(qa, qd, Pose(home.position, 2 * home.rotation))
    for kwargs, what in (({"max_step": 0.0}, "max_step"), ({"tol": np.nan}, "tol"), ({"max_iter": 0}, "max_iter"),
                         ({"max_residual": -1.0}, "max_residual"), ({"cold_starts": {}}, "at least one cold start"),
                         ({"cold_starts": {"far": Pose(home.position + 10.0, home.rotation)}}, "cold start 'far'")):
        with pytest.raises(InvalidInputError, match=what):
            StateEstimator(kin, **kwargs)
    with pytest.raises(AttributeError, match="immutable"):
        est.max_step = 1.0
    assert list(StateEstimator(kin, cold_starts={"home": home}).cold_starts) == ["home"]
