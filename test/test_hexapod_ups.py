"""6-UPS hexapods (family hexapod_ups): stewart 6-6 / 3-6 (Taghirad) and palida (Abdellatif).

Reference values are computed here from the config numbers and the papers' formulas, or by
finite differences / pinocchio, never taken from the code under test:

* Taghirad's J = [s_i^T, (b_i x s_i)^T] (ch. Jacobian), J_q = I, J_x = J;
* Abdellatif eq. 29-31 (l, alpha, beta from the strut vector in the strut's MDH base frame);
* rates / accelerations / J / Jdot / G by central finite differences of IK positions along
  p(t) = p + v t + a t^2 / 2, R(t) = exp([w t + wd t^2 / 2]) R (twist (v, w), accel (a, wd) at t = 0);
* G and J against the generic closure model (pinocchio frame Jacobians), closure residual,
  K v = 0 and K a + Kdot v = 0;
* singular pose: the platform turned +-90 deg about z from the symmetric home (Fichter's
  singularity of symmetric 6-6 and 3-6 platforms; inside the stewart reach by design).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

from pkm_control.description import closure_bias, closure_jacobian, closure_residual, load_robot
from pkm_control.errors import ConvergenceError, InvalidInputError, JointLimitError, UnreachablePoseError
from pkm_control.kinematics import Pose, robot_kinematics
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.workspace import random_poses

CASES = [("stewart", "6-6"), ("stewart", "3-6"), ("palida", None)]
IDS = ["stewart-6-6", "stewart-3-6", "palida"]


def _rot(rpy):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (URDF rpy) via scipy: extrinsic x-y-z."""
    return Rotation.from_euler("xyz", rpy).as_matrix()


def _pose(x):
    return Pose(np.array(x[:3], float), _rot(x[3:]))


@pytest.fixture(scope="module", params=CASES, ids=IDS)
def case(request):
    robot, variant = request.param
    kin = robot_kinematics(robot, variant)
    poses = random_poses(kin, 200, np.random.default_rng(7))
    return kin, poses


def _geometry(kin):
    cfg = kin.model.config
    A = np.array(cfg["base"]["anchors"], float)
    Bp = np.array(cfg["platform"]["anchors"], float)
    RS = np.stack([_rot(r) for r in cfg["base"]["leg_frame_rpy"]])
    return A, Bp, RS


def taghirad_jacobian(kin, pose):
    """J rows [s_i^T, (b_i x s_i)^T], b_i = R b_i^B (from O_B, base coordinates)."""
    A, Bp, _ = _geometry(kin)
    b = Bp @ pose.rotation.T
    d = pose.position + b - A
    s = d / np.linalg.norm(d, axis=1)[:, None]
    return np.hstack([s, np.cross(b, s)])


def _motion(pose, v, w, a, wd, t):
    p = pose.position + v * t + 0.5 * a * t * t
    R = Rotation.from_rotvec(w * t + 0.5 * wd * t * t).as_matrix() @ pose.rotation
    return Pose(p, R)


def _close(x, ref, rtol, what):
    err = np.abs(np.asarray(x) - np.asarray(ref)).max()
    scale = max(1.0, np.abs(ref).max())
    assert err <= rtol * scale, f"{what}: max error {err:.3g} > {rtol:g} * {scale:.3g}"


# ---------------------------------------------------------------------------- derivatives vs FD


def test_rates_accelerations_jacobians_vs_finite_differences(case):
    kin, poses = case
    rng = np.random.default_rng(11)
    ia = kin.model.actuated_idx
    h = 1e-4
    for pose in poses:
        v, w, a, wd = (rng.normal(size=3) * s for s in (0.3, 0.5, 2.0, 3.0))
        twist, accel = np.r_[v, w], np.r_[a, wd]
        m = kin.inverse(pose, twist, accel, jacobian=True)
        qp = kin.inverse(_motion(pose, v, w, a, wd, h), check_limits=False).q
        qm = kin.inverse(_motion(pose, v, w, a, wd, -h), check_limits=False).q
        vd = (qp - qm) / (2 * h)
        ad = (qp - 2 * m.q + qm) / h**2
        _close(m.v, vd, 1e-6, "joint rates")
        _close(m.a, ad, 1e-6, "joint accelerations")
        J = kin.jacobian(pose)
        _close(m.jacobian, J, 1e-14, "inverse(jacobian=True) vs jacobian()")
        _close(J @ twist, vd[ia], 1e-6, "J xdot")
        G = kin.joint_jacobian(pose)
        _close(G @ twist, vd, 1e-6, "G xdot")
        _close(J @ accel + kin.jacobian_dot(pose, twist) @ twist, ad[ia], 1e-6, "J xddot + Jdot xdot")
        # Jdot as d/dt of J along the motion (only the twist matters at t = 0)
        Jd = (kin.jacobian(_motion(pose, v, w, a, wd, h)) - kin.jacobian(_motion(pose, v, w, a, wd, -h))) / (2 * h)
        _close(kin.jacobian_dot(pose, twist), Jd, 1e-6, "Jdot")


def test_joint_jacobian_columns_vs_finite_differences(case):
    """Every column of G (all joints, platform joints too) by central differences of the IK."""
    kin, poses = case
    h = 1e-5
    for pose in poses[:50]:
        G = kin.joint_jacobian(pose)
        for k in range(6):
            e = np.zeros(3)
            e[k % 3] = 1.0
            lin, ang = (e, np.zeros(3)) if k < 3 else (np.zeros(3), e)
            z = np.zeros(3)
            qp = kin.inverse(_motion(pose, lin, ang, z, z, h), check_limits=False).q
            qm = kin.inverse(_motion(pose, lin, ang, z, z, -h), check_limits=False).q
            _close(G[:, k], (qp - qm) / (2 * h), 1e-6, f"G column {k}")


# ---------------------------------------------------------------------------- generic closure model


def test_closures_and_constraint_jacobian(case):
    kin, poses = case
    clm = kin.model
    data = clm.create_data()
    rng = np.random.default_rng(5)
    for pose in poses:
        twist = rng.normal(size=6) * 0.4
        accel = rng.normal(size=6) * 2.0
        m = kin.inverse(pose, twist, accel, jacobian=True)
        res = closure_residual(clm, data, m.q)
        assert np.abs(res).max() <= 1e-12, f"closure residual {np.abs(res).max():.3g} m at the IK solution"
        Gc = kin.constraint_joint_jacobian(m.q, data)
        _close(kin.joint_jacobian(pose), Gc, 1e-9, "G vs constraint_joint_jacobian")
        _close(kin.jacobian(pose), Gc[clm.actuated_idx], 1e-9, "J vs constraint_joint_jacobian actuated rows")
        K = closure_jacobian(clm, data, m.q)
        kv = K @ m.v
        assert np.abs(kv).max() <= 1e-10 * max(1.0, np.abs(m.v).max()), f"K v = {np.abs(kv).max():.3g}"
        ka = K @ m.a + closure_bias(clm, data, m.q, m.v)
        assert np.abs(ka).max() <= 1e-9 * max(1.0, np.abs(m.a).max()), f"K a + Kdot v = {np.abs(ka).max():.3g}"


# ---------------------------------------------------------------------------- paper checks


@pytest.mark.parametrize("variant", ["6-6", "3-6"])
def test_stewart_taghirad_jacobian(variant):
    kin = robot_kinematics("stewart", variant)
    clm = kin.model
    data = clm.create_data()
    for pose in random_poses(kin, 200, np.random.default_rng(3)):
        JT = taghirad_jacobian(kin, pose)
        _close(kin.jacobian(pose), JT, 1e-9, "J vs Taghirad")
        q = kin.inverse(pose).q
        _close(kin.constraint_joint_jacobian(q, data)[clm.actuated_idx], JT, 1e-9, "constraint J vs Taghirad")
        Jx, Jq = kin.jacobian_xq(pose)
        _close(Jx, JT, 1e-9, "J_x vs Taghirad")
        assert np.array_equal(Jq, np.eye(6)), "J_q must be the identity for prismatic legs"


def test_stewart_3_6_shares_platform_anchors():
    cfg = load_robot("stewart", "3-6").config
    B = np.array(cfg["platform"]["anchors"])
    assert len({tuple(b) for b in B}) == 3
    assert np.allclose(B[0::2], B[1::2])
    assert len({tuple(b) for b in np.array(load_robot("stewart", "6-6").config["platform"]["anchors"])}) == 6


def test_palida_strut_ik_eq_29_31():
    kin = robot_kinematics("palida")
    A, Bp, RS = _geometry(kin)
    ji = kin.model.joint_index
    for pose in random_poses(kin, 300, np.random.default_rng(4)):
        q = kin.inverse(pose).q
        for j in range(6):
            x, y, z = RS[j].T @ (pose.position + pose.rotation @ Bp[j] - A[j])   # eq. 1 in the MDH base frame
            r = np.sqrt(x * x + z * z)
            assert z < 0, "PaLiDA struts hang along -z of their base frame"
            assert abs(q[ji[f"leg{j + 1}_prismatic"]] - np.sqrt(x * x + y * y + z * z)) <= 1e-12      # eq. 29
            assert abs(q[ji[f"leg{j + 1}_alpha"]] - np.arctan(x / -z)) <= 1e-12                       # eq. 30
            assert abs(q[ji[f"leg{j + 1}_beta"]] - np.arctan(y / r)) <= 1e-12                          # eq. 31


def test_palida_bodies_and_friction_parameters():
    clm = load_robot("palida")
    masses = [clm.model.inertias[j].mass for j in range(1, clm.model.njoints)]
    assert sum(m > 0 for m in masses) == 19, "platform + 6 x (cardan ring, stator, slider)"
    fr = clm.config["friction"]
    n = len(fr["prismatic"]["coulomb"]) + len(fr["prismatic"]["viscous"]) + len(fr["alpha"]) + len(fr["beta"])
    assert n == 14 and set(fr["alpha"]) == set(fr["beta"]) == {"coulomb"}   # eq. 32 + sec. IV-A: dry only
    stew = load_robot("stewart")
    assert sum(stew.model.inertias[j].mass > 0 for j in range(1, stew.model.njoints)) == 13   # massless U-cross


def test_palida_benchmark_circle_reachable():
    """Sec. V: circle tilted 30 deg about x (the other reading of the inclination) stays reachable too."""
    kin = robot_kinematics("palida")
    home = np.array(kin.model.config["home"])
    t = np.linspace(0, 2 * np.pi, 361)
    c, s = np.cos(np.radians(30)), np.sin(np.radians(30))
    for radius in (0.1, 0.15, 0.2):
        P = home[:3] + radius * np.stack([np.cos(t), np.sin(t) * c, np.sin(t) * s], axis=1)
        _, ok = kin.inverse_batch(P, np.broadcast_to(np.eye(3), (len(t), 3, 3)))
        assert ok.all(), f"benchmark circle of radius {radius} m leaves the reach"


# ---------------------------------------------------------------------------- FK round trip, batch


@pytest.mark.parametrize("robot,variant", CASES, ids=IDS)
def test_ik_fk_round_trip(robot, variant):
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(21)
    worst = 0.0
    for pose in random_poses(kin, 1000, rng):
        guess = Pose(pose.position + rng.uniform(-0.005, 0.005, 3),
                     Rotation.from_rotvec(rng.uniform(-0.05, 0.05, 3)).as_matrix() @ pose.rotation)
        fk = forward_kinematics(kin, kin.actuated(pose), guess)
        dp = np.abs(fk.pose.position - pose.position).max()
        dr = np.abs(Rotation.from_matrix(fk.pose.rotation @ pose.rotation.T).as_rotvec()).max()
        worst = max(worst, dp, dr)
    assert worst <= 1e-10, f"IK -> FK pose error {worst:.3g}"


class _GenericFK:
    """The kinematics without its own ``forward``: forward_kinematics runs its Python iteration on it."""

    def __init__(self, kin):
        self._kin = kin

    def __getattr__(self, name):
        if name == "forward":
            raise AttributeError(name)
        return getattr(self._kin, name)


@pytest.mark.parametrize("robot,variant", CASES, ids=IDS)
def test_compiled_fk_is_the_python_iteration(robot, variant):
    """kinematics.forward (ups_forward, one compiled call) against forward_kinematics' Python iteration
    on the same guesses: the same iterations, pose and J to 1e-12, the same errors; forward_state's twist and rcond
    against J^-1 qdot_a by LAPACK and 1 / (|J|_1 |J^-1|_1) by numpy, its distance to the guess against the task's
    difference."""
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(5)
    for k, pose in enumerate(random_poses(kin, 200, rng)):
        step = (1e-4, 3e-3, 3e-2)[k % 3]            # a control period, a jump, far (the line search halves)
        guess = kin.task.retract(pose, rng.uniform(-step, step, 6))
        qa = kin.actuated(pose)
        a = forward_kinematics(kin, qa, guess, check_limits=False)
        b = forward_kinematics(_GenericFK(kin), qa, guess, check_limits=False)
        assert a.iterations == b.iterations
        np.testing.assert_allclose(a.pose.position, b.pose.position, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.pose.rotation, b.pose.rotation, rtol=0, atol=1e-12)
        np.testing.assert_allclose(a.jacobian, b.jacobian, rtol=0, atol=1e-12)
        assert a.residual <= 1e-12 and b.residual <= 1e-12
        qd = rng.uniform(-0.1, 0.1, len(qa))
        pose_s, _, _, J, xd, rcond, dist = kin.forward_state(qa, qd, guess)
        np.testing.assert_allclose(xd, np.linalg.solve(J, qd), rtol=1e-12, atol=1e-13)
        exact = 1.0 / (np.linalg.norm(J, 1) * np.linalg.norm(np.linalg.inv(J), 1))
        assert rcond == pytest.approx(exact, rel=1e-10)
        assert dist == pytest.approx(np.linalg.norm(kin.task.difference(pose_s, guess)), rel=1e-6, abs=1e-9)
    home = kin.home_pose()
    qa = kin.actuated(home)
    for q_bad, max_iter in ((qa * 0.1, 50), (qa + 0.01, 1)):      # out of reach: stalls; one iteration too few
        with pytest.raises(ConvergenceError) as compiled:
            forward_kinematics(kin, q_bad, home, max_iter=max_iter, check_limits=False)
        with pytest.raises(ConvergenceError) as python:
            forward_kinematics(_GenericFK(kin), q_bad, home, max_iter=max_iter, check_limits=False)
        assert str(compiled.value) == str(python.value)
    assert kin.forward_state(list(qa), np.zeros(len(qa)), home) is None            # not arrays: the checked path
    assert kin.forward_state(qa * np.nan, np.zeros(len(qa)), home) is None


@pytest.mark.parametrize("robot,variant", CASES, ids=IDS)
def test_inverse_batch_matches_inverse(robot, variant):
    kin = robot_kinematics(robot, variant)
    rng = np.random.default_rng(8)
    lo = np.array(kin.model.config["workspace"]["lower"])
    hi = np.array(kin.model.config["workspace"]["upper"])
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    X = mid + 1.6 * half * rng.uniform(-1, 1, (600, 6))          # reaches well outside the box
    P = X[:, :3]
    R = np.stack([_rot(x[3:]) for x in X])
    q, ok = kin.inverse_batch(P, R)
    assert 0 < ok.sum() < len(X), "sample set must contain valid and invalid poses"
    reasons = set()
    for i in range(len(X)):
        pose = Pose(P[i], R[i])
        if ok[i]:
            np.testing.assert_allclose(q[i], kin.inverse(pose).q, rtol=0, atol=1e-12)
        else:
            with pytest.raises(UnreachablePoseError) as exc:
                kin.inverse(pose)
            reasons.add("cone" if "cone" in str(exc.value) else "joint")
            np.testing.assert_allclose(q[i], kin.inverse(pose, check_limits=False).q, rtol=0, atol=1e-12)
    assert "joint" in reasons
    P2, R2 = P[:3].copy(), R[:3].copy()
    P2[1, 0] = np.nan
    _, ok2 = kin.inverse_batch(P2, R2)
    assert not ok2[1]
    with pytest.raises(InvalidInputError):
        kin.inverse_batch(P[:, :2], R)
    with pytest.raises(InvalidInputError):
        kin.inverse_batch(P, R[:-1])


# ---------------------------------------------------------------------------- errors, singularity


@pytest.mark.parametrize("robot,variant", CASES, ids=IDS)
def test_errors(robot, variant):
    kin = robot_kinematics(robot, variant)
    home = _pose(kin.model.config["home"])
    far = Pose(home.position + np.array([0.0, 0.0, 0.6]), home.rotation)
    with pytest.raises(JointLimitError, match=r"leg\d_prismatic.*outside its range"):
        kin.inverse(far)
    # cone limit: tilt the platform until the first pose that is inside every tree-joint range but
    # beyond a spherical-joint cone
    tilted = None
    for ang in np.linspace(0.1, 1.5, 141):
        for axis in np.eye(3):
            pose = Pose(home.position, Rotation.from_rotvec(ang * axis).as_matrix())
            q = kin.inverse(pose, check_limits=False).q
            if kin.within_limits(q):
                try:
                    kin.inverse(pose)
                except JointLimitError as exc:
                    tilted = str(exc)
                    break
        if tilted:
            break
    assert tilted is not None, "no tilt trips the spherical-joint cone limit alone"
    assert "spherical joint cone angle" in tilted and "spherical_joint_max_angle" in tilted
    # gimbal lock: leg 1 along the first universal-joint axis (-y of its base frame)
    A, Bp, RS = _geometry(kin)
    p = A[0] - 1.0 * RS[0][:, 1] - Bp[0]
    with pytest.raises(UnreachablePoseError, match="gimbal lock"):
        kin.inverse(Pose(p, np.eye(3)), check_limits=False)
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([np.nan, 0, 1.0]), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.zeros(2), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(home.position, 2 * np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(home, twist=np.zeros(5))
    with pytest.raises(InvalidInputError):
        kin.inverse(home, twist=np.zeros(6), accel=[np.inf, 0, 0, 0, 0, 0])


@pytest.mark.parametrize("robot,variant", CASES, ids=IDS)
def test_singular_pose_yaw_90(robot, variant):
    """Home turned by +-90 deg about the vertical symmetry axis: J_x = J loses rank (Fichter)."""
    kin = robot_kinematics(robot, variant)
    home = np.array(kin.model.config["home"], float)

    def ratio(J):
        s = np.linalg.svd(J, compute_uv=False)
        return s[-1] / s[0]

    assert ratio(taghirad_jacobian(kin, _pose(home))) > 1e-3
    assert ratio(kin.jacobian(_pose(home))) > 1e-3
    for sign in (1, -1):
        x = home.copy()
        x[5] = sign * np.pi / 2
        pose = _pose(x)
        assert ratio(taghirad_jacobian(kin, pose)) < 1e-6
        assert ratio(kin.jacobian(pose)) < 1e-6
        if robot == "stewart":
            # inside the reach: the IK with every limit succeeds there
            assert np.allclose(kin.model.config["singular_pose"][:5], x[:5])
            kin.inverse(pose)
        # a few degrees away it is regular again
        x[5] = sign * np.radians(80)
        assert ratio(taghirad_jacobian(kin, _pose(x))) > 1e-3
