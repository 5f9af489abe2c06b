"""Generic kinematics services on every shipped robot and variant.

Family-specific derivations are tested in test_<family>.py; here: the pieces
every robot shares (FK behaviour, singularity report, stiffness, workspace,
task-space conversions), each against an independent computation.
"""

import numpy as np
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.errors import ConvergenceError, InvalidInputError
from pkm_control.kinematics import Pose, robot_kinematics
from pkm_control.kinematics.analysis import actuator_stiffness, compliance, singularity, stiffness
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.task_space import TaskSpace, euler_rate_matrix, so3_exp, so3_log
from pkm_control.kinematics.workspace import random_poses, sample_workspace

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


@pytest.fixture(params=ROBOTS, ids=IDS)
def kin(request):
    return robot_kinematics(*request.param)


def test_home_is_reachable_and_regular(kin):
    home = kin.task.pose(np.asarray(kin.model.config["home"], float))
    kin.inverse(home)
    rep = singularity(kin, home)
    assert rep.classification == "regular" and rep.dexterity > 1e-3


def test_stiffness_is_hessian_of_actuator_energy(kin):
    """K = J^T diag(k) J equals the Hessian of V(dx) = 1/2 sum k_i (q_a,i(x + dx) - q_a,i(x))^2.

    The Hessian is taken by central finite differences of the IK alone (no J).
    """
    rng = np.random.default_rng(3)
    k = actuator_stiffness(kin)
    for pose in random_poses(kin, 5, rng):
        qa0 = kin.actuated(pose)

        def V(dx):
            d = kin.actuated(kin.task.retract(pose, dx)) - qa0
            return 0.5 * d @ (k * d)
        n, h = kin.task.dim, 1e-4
        H = np.zeros((n, n))
        E = np.eye(n) * h
        for i in range(n):
            for j in range(n):
                H[i, j] = (V(E[i] + E[j]) - V(E[i] - E[j]) - V(E[j] - E[i]) + V(-E[i] - E[j])) / (4 * h * h)
        K = stiffness(kin, pose)
        # the curvature of q_a(x) enters the Hessian multiplied by q_a(x) - q_a(x) = 0, so it is J^T k J
        np.testing.assert_allclose(K, H, rtol=1e-4, atol=1e-6 * np.abs(K).max())
        np.testing.assert_allclose(compliance(kin, pose) @ K, np.eye(n), atol=1e-8)


def test_fk_warm_start_few_iterations_and_wrong_sizes(kin):
    rng = np.random.default_rng(4)
    for pose in random_poses(kin, 20, rng):
        qa = kin.actuated(pose)
        guess = kin.task.retract(pose, 1e-3 * rng.standard_normal(kin.task.dim))
        res = forward_kinematics(kin, qa, guess)
        assert res.iterations <= 4 and res.residual <= 1e-12
        assert np.linalg.norm(kin.task.difference(res.pose, pose)) <= 1e-10
        np.testing.assert_allclose(res.jacobian, kin.jacobian(res.pose), rtol=0, atol=1e-14)
    with pytest.raises(InvalidInputError, match="actuated joint positions"):
        forward_kinematics(kin, np.zeros(kin.model.n_actuated + 1), guess)
    with pytest.raises(InvalidInputError, match="finite"):
        forward_kinematics(kin, np.full(kin.model.n_actuated, np.nan), guess)


def test_fk_nonconvergence_is_reported(kin):
    pose = kin.task.pose(np.asarray(kin.model.config["home"], float))
    qa = kin.actuated(pose)
    with pytest.raises(ConvergenceError, match="iterations"):
        forward_kinematics(kin, qa, kin.task.retract(pose, np.full(kin.task.dim, 0.05)), max_iter=1)


def test_workspace_slice(kin):
    res = sample_workspace(kin, list(kin.task.names[:2]), np.asarray(kin.model.config["home"], float), 9)
    assert res.coords.shape == (81, kin.task.dim) and 0.2 < res.reachable_fraction <= 1.0
    d = res.dexterity[res.reachable]
    assert np.all((d > 0) & (d <= 1)) and np.all(np.isnan(res.dexterity[~res.reachable]))


def test_bad_pose_inputs(kin):
    home = kin.task.pose(np.asarray(kin.model.config["home"], float))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([np.nan, 0, 0]), home.rotation))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.zeros(2), home.rotation))
    with pytest.raises(InvalidInputError, match="rotation"):
        kin.inverse(Pose(home.position, 2 * home.rotation))
    with pytest.raises(InvalidInputError, match="twist"):
        kin.inverse(home, twist=np.zeros(kin.task.dim + 1))


# ------------------------------------------------------------------ task space, no robot needed

def test_spatial_coordinates_round_trip_and_euler_rates():
    ts = TaskSpace("spatial")
    rng = np.random.default_rng(5)
    for _ in range(50):
        x = np.concatenate([rng.uniform(-1, 1, 3), rng.uniform(-1.4, 1.4, 3)])
        pose = ts.pose(x)
        np.testing.assert_allclose(ts.coordinates(pose), x, atol=1e-12)
        w = rng.standard_normal(3)
        # omega from a central difference of R(t) = exp([w] t) R: the Euler rates must map back to w
        q, v, _ = ts.platform_joint_motion(pose, np.concatenate([np.zeros(3), w]))
        np.testing.assert_allclose(euler_rate_matrix(q[3], q[4]) @ v[3:], w, atol=1e-12)
        np.testing.assert_allclose(ts.platform_rate_matrix(pose)[3:, 3:] @ euler_rate_matrix(q[3], q[4]), np.eye(3),
                                   atol=1e-12)
        h = 1e-6
        qp = ts.platform_joint_motion(Pose(pose.position, so3_exp(w * h) @ pose.rotation))[0]
        qm = ts.platform_joint_motion(Pose(pose.position, so3_exp(-w * h) @ pose.rotation))[0]
        np.testing.assert_allclose((qp - qm) / (2 * h), v, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(so3_log(so3_exp(w)), w, atol=1e-12)


def test_euler_accelerations_against_finite_differences():
    """a = E^-1 (omega_dot - Edot rates): integrate an Euler-angle motion and compare."""
    ts = TaskSpace("spatial")
    rng = np.random.default_rng(6)
    e0, ed, edd = rng.uniform(-1, 1, 3), rng.standard_normal(3), rng.standard_normal(3)

    def omega(t):
        e, r = e0 + ed * t + 0.5 * edd * t * t, ed + edd * t
        return euler_rate_matrix(e[0], e[1]) @ r
    h = 1e-5
    wd = (omega(h) - omega(-h)) / (2 * h)
    pose = ts.pose_from_platform_joints(np.concatenate([np.zeros(3), e0]))
    _, v, a = ts.platform_joint_motion(pose, np.concatenate([np.zeros(3), omega(0)]),
                                       np.concatenate([np.zeros(3), wd]))
    np.testing.assert_allclose(v[3:], ed, atol=1e-12)
    np.testing.assert_allclose(a[3:], edd, atol=1e-7)


def test_planar_alpha_sign():
    for sign in (1.0, -1.0):
        ts = TaskSpace("planar", alpha_sign=sign)
        pose = ts.pose([0.1, 0.2, 0.3])
        np.testing.assert_allclose(pose.rotation[1, 0], sign * np.sin(0.3), atol=1e-15)
        np.testing.assert_allclose(ts.coordinates(pose), [0.1, 0.2, 0.3], atol=1e-15)
        moved = ts.retract(pose, np.array([0.0, 0.0, 0.05]))
        np.testing.assert_allclose(ts.difference(moved, pose), [0, 0, 0.05], atol=1e-14)
