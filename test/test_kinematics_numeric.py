"""The numeric kinematics family (kinematics/numeric.py) on every shipped robot.

Two independent references: each robot's analytic family (closed forms written per robot, sharing
nothing with the numeric family but the pose conventions) and central finite differences of the
numeric IK itself. Mobility is checked against counts known from the mechanisms' structure.
"""

import numpy as np
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import load_model, load_robot, robot_config, robot_urdf
from pkm_control.errors import InvalidInputError, JointLimitError, UnreachablePoseError
from pkm_control.kinematics import make_kinematics, robot_kinematics
from pkm_control.kinematics.analysis import singularity
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.numeric import Kinematics
from pkm_control.kinematics.task_space import Pose
from pkm_control.kinematics.workspace import coords_to_arrays, random_poses

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


@pytest.fixture(params=ROBOTS, ids=IDS, scope="module")
def pair(request):
    """(analytic, numeric) kinematics of one robot and variant."""
    return robot_kinematics(*request.param), Kinematics(load_robot(*request.param))


def _close(a, b, what, tol=1e-9):
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    err = float(np.abs(np.asarray(a) - np.asarray(b)).max(initial=0.0))
    assert err <= tol * scale, f"{what}: |numeric - reference| = {err:.3g} > {tol:g} * {scale:.3g}"


def test_agrees_with_the_analytic_family(pair):
    """Tree positions, rates and accelerations, J, G, Jdot and Taghirad's J_q^-1 J_x to 1e-9 at random poses."""
    an, nu = pair
    rng = np.random.default_rng(5)
    for pose in random_poses(an, 6, rng):
        twist = rng.normal(scale=0.3, size=an.task.dim)
        accel = rng.normal(size=an.task.dim)
        ma = an.inverse(pose, twist, accel, jacobian=True)
        mn = nu.inverse(pose, twist, accel, jacobian=True)
        _close(mn.q, ma.q, "q")
        _close(mn.v, ma.v, "qdot")
        _close(mn.a, ma.a, "qddot")
        _close(mn.jacobian, ma.jacobian, "J")
        _close(nu.jacobian(pose), an.jacobian(pose), "J")
        _close(nu.joint_jacobian(pose), an.joint_jacobian(pose), "G")
        _close(nu.jacobian_dot(pose, twist), an.jacobian_dot(pose, twist), "Jdot")
        _close(nu.actuated(pose), an.actuated(pose), "q_a")
        Jx, Jq = nu.jacobian_xq(pose)
        _close(np.linalg.lstsq(Jq, Jx, rcond=None)[0], ma.jacobian, "J_q^-1 J_x")


def test_forward_kinematics_recovers_the_pose(pair):
    """FK (the family's own projection, through forward_kinematics) from the analytic IK's actuated positions,
    started 0.02 (m, rad) away: the pose to 1e-9, J there as the analytic one."""
    an, nu = pair
    rng = np.random.default_rng(6)
    for pose in random_poses(an, 4, rng):
        qa = an.actuated(pose)
        guess = an.task.retract(pose, np.full(an.task.dim, 0.02))
        fk = forward_kinematics(nu, qa, guess)
        _close(fk.pose.position, pose.position, "FK position")
        _close(fk.pose.rotation, pose.rotation, "FK rotation")
        _close(fk.jacobian, an.jacobian(pose), "J at the FK solution")
        assert fk.residual <= 1e-12


def test_maps_against_finite_differences(pair):
    """G = dq/dxdot, J its actuated rows and Gdot = dG/dt along the twist, by central differences of the numeric
    IK on the pose manifold (TaskSpace.retract moves the pose with velocity dx). Step 1e-4: truncation ~h^2 = 1e-8,
    the IK's rounding (positions to ~1e-13) over 2h ~1e-9; tolerance 1e-6 relative."""
    an, nu = pair
    task = nu.task
    rng = np.random.default_rng(7)
    h = 1e-4
    for pose in random_poses(an, 3, rng):
        G = nu.joint_jacobian(pose)
        fd = np.column_stack([(nu.inverse(task.retract(pose, h * e), check_limits=False).q
                               - nu.inverse(task.retract(pose, -h * e), check_limits=False).q) / (2 * h)
                              for e in np.eye(task.dim)])
        _close(G, fd, "G against finite differences", tol=1e-6)
        _close(nu.jacobian(pose), fd[nu.model.actuated_idx], "J against finite differences", tol=1e-6)
        twist = rng.normal(scale=0.5, size=task.dim)
        Gd = nu.joint_jacobian_dot(pose, twist)
        fd_dot = (nu.joint_jacobian(task.retract(pose, h * twist))
                  - nu.joint_jacobian(task.retract(pose, -h * twist))) / (2 * h)
        _close(Gd, fd_dot, "Gdot against finite differences", tol=1e-6)
        _close(nu.jacobian_dot(pose, twist), fd_dot[nu.model.actuated_idx], "Jdot against finite differences",
               tol=1e-6)


def test_mobility_of_the_shipped_robots(pair):
    """Every shipped mechanism moves only with its platform: dof = task dimension, no idle motion; as many
    actuators as dof except planar_redundant's redundant variant (one more)."""
    an, nu = pair
    mob = nu.mobility()
    assert mob.idle == () and mob.dof == mob.moving == nu.task.dim
    extra = 1 if nu.model.name == "planar_redundant" and nu.model.variant == "redundant" else 0
    assert nu.model.n_actuated == mob.dof + extra


def test_idle_motions_are_named():
    """palida with leg 6's closure cut: leg 6 hangs free. Its two cardan angles move neither an actuator nor the
    platform (two idle motions, named by their joints); its drive and the platform's 6 motions are the others:
    dof = 24 joints - 15 closure rows = 9."""
    cfg = dict(robot_config("palida"))
    cfg["closures"] = [c for c in cfg["closures"] if c["name"] != "leg6"]
    nu = Kinematics(load_model(robot_urdf("palida"), cfg, name="palida_leg6_free"))
    mob = nu.mobility()
    assert mob.dof == 9 and sorted(mob.idle) == ["leg6_alpha", "leg6_beta"] and mob.moving == 7


def test_selected_by_the_config_and_the_branch_follows_the_guess():
    """``kinematics: numeric`` in a config selects the family; an explicit guess picks the IK start."""
    cfg = dict(robot_config("delta"), kinematics="numeric")
    kin = make_kinematics(load_model(robot_urdf("delta"), cfg, name="delta"))
    assert isinstance(kin, Kinematics) and kin.family == "numeric"
    pose = kin.task.pose(np.asarray(cfg["home"], float))
    q = kin.inverse(pose).q
    np.testing.assert_allclose(kin.inverse(pose, guess=q + 0.01).q, q, atol=1e-12)
    with pytest.raises(InvalidInputError, match="guess"):
        kin.inverse(pose, guess=np.zeros(3))


def test_errors_as_the_analytic_family():
    """The same exception types as the analytic family for: a pose out of reach (DELTA 2 m below its base),
    a DELTA pose with a rotated plate (off its translation task space), a strut beyond its stroke (palida)."""
    delta_an, delta_nu = robot_kinematics("delta"), Kinematics(load_robot("delta"))
    far = Pose(np.array([0.0, 0.0, -2.0]), np.eye(3))
    tilted = Pose(np.array([0.0, 0.0, -0.29]), np.array([[1.0, 0, 0], [0, np.cos(0.1), -np.sin(0.1)],
                                                          [0, np.sin(0.1), np.cos(0.1)]]))
    pal_an, pal_nu = robot_kinematics("palida"), Kinematics(load_robot("palida"))
    stretched = pal_an.task.pose([0.0, 0.0, -1.25, 0.0, 0.0, 0.0])
    for an, nu, pose, error in ((delta_an, delta_nu, far, UnreachablePoseError),
                                (delta_an, delta_nu, tilted, UnreachablePoseError),
                                (pal_an, pal_nu, stretched, JointLimitError)):
        for kin in (an, nu):
            with pytest.raises(error):
                kin.inverse(pose)
    with pytest.raises(JointLimitError, match="leg1_prismatic"):
        pal_nu.inverse(stretched)


def test_batch_and_singularity_classification():
    """inverse_batch matches inverse and flags what is out of reach; Fichter's singular pose of the Stewart
    platform (config singular_pose) is classified as by the analytic family."""
    an, nu = robot_kinematics("palida"), Kinematics(load_robot("palida"))
    X = np.array([[0.0, 0.0, -0.85, 0.0, 0.0, 0.0], [0.1, 0.05, -0.8, 0.1, 0.0, 0.2], [0.0, 0.0, -1.25, 0, 0, 0]])
    P, R = coords_to_arrays(nu.task, X)
    q, ok = nu.inverse_batch(P, R)
    qa, oka = an.inverse_batch(P, R)
    assert ok.tolist() == oka.tolist() == [True, True, False]
    _close(q[ok], qa[ok], "batch q")
    st_an, st_nu = robot_kinematics("stewart"), Kinematics(load_robot("stewart"))
    for coords in (st_an.model.config["singular_pose"], st_an.model.config["home"]):
        pose = st_an.task.pose(np.asarray(coords, float))
        assert singularity(st_nu, pose).classification == singularity(st_an, pose).classification
    assert singularity(st_nu, st_nu.task.pose(np.asarray(st_an.model.config["singular_pose"], float))).singular


def test_the_engine_runs_on_the_numeric_family():
    """ClosedLoopDynamics needs only the family interface: its inverse dynamics (friction included) and task-space
    mass matrix on the numeric family equal those on the analytic one (palida, delta)."""
    from pkm_control.dynamics.engine import ClosedLoopDynamics

    rng = np.random.default_rng(8)
    for robot in ("palida", "delta"):
        an = robot_kinematics(robot)
        da, dn = ClosedLoopDynamics(an), ClosedLoopDynamics(Kinematics(load_robot(robot)))
        for pose in random_poses(an, 2, rng):
            twist, accel = rng.normal(scale=0.3, size=an.task.dim), rng.normal(size=an.task.dim)
            _close(dn.inverse_dynamics(pose, twist, accel).tau, da.inverse_dynamics(pose, twist, accel).tau, "tau")
            _close(dn.mass_matrix(pose), da.mass_matrix(pose), "M")
