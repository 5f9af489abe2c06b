"""Lopes' 6-PUS manipulator (robot ``lopes``, family ``hexapod_pus``).

Reference numbers are derived here independently of the code under test: Table 2
of Lopes (seed 001) typed in, finite differences of the IK positions, the generic
closure model (pinocchio frame Jacobians), and Lopes' equations (4), (9), (49-52),
(55) written out again below.
"""

import math

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.description import closure_bias, closure_jacobian, closure_residual
from pkm_control.dynamics.engine import ClosedLoopDynamics
from pkm_control.errors import InvalidInputError, JointLimitError, SingularConfigurationError, UnreachablePoseError
from pkm_control.kinematics import robot_kinematics
from pkm_control.kinematics.task_space import Pose, rpy_to_matrix, so3_exp

N_RANDOM = 200
N_FK = 1000

# Lopes Table 2
R_B, R_P, L, PHI_B, PHI_P = 1.500, 0.750, 1.837, math.radians(15.0), 0.0
M_P, M_A, M_L = 1.430, 0.123, 0.389
I_P = (0.2, 0.2, 0.4)
I_L = (0.0, 0.1, 0.1)
B_CM = 0.918
DEG = math.pi / 180


@pytest.fixture(scope="module")
def kin():
    return robot_kinematics("lopes")


@pytest.fixture(scope="module")
def data(kin):
    return kin.model.create_data()


def sample_poses(kin, n, seed, box_scale=1.0):
    """n random poses of the config workspace box that pass inverse() (all limits)."""
    rng = np.random.default_rng(seed)
    lo = np.array(kin.model.config["workspace"]["lower"], float)
    hi = np.array(kin.model.config["workspace"]["upper"], float)
    mid, half = (lo + hi) / 2, (hi - lo) / 2 * box_scale
    out = []
    while len(out) < n:
        x = mid + half * rng.uniform(-1, 1, 6)
        pose = kin.task.pose(x)
        try:
            kin.inverse(pose)
        except UnreachablePoseError:
            continue
        out.append(pose)
    return out


def lopes_R(psi, theta, phi):
    """Lopes eq. (4), typed in."""
    C, S = math.cos, math.sin
    return np.array([
        [C(psi) * C(theta), C(psi) * S(theta) * S(phi) - S(psi) * C(phi), C(psi) * S(theta) * C(phi) + S(psi) * S(phi)],
        [S(psi) * C(theta), S(psi) * S(theta) * S(phi) + C(psi) * C(phi), S(psi) * S(theta) * C(phi) - C(psi) * S(phi)],
        [-S(theta), C(theta) * S(phi), C(theta) * C(phi)]])


def lopes_JA(psi, theta):
    """Lopes eq. (9), typed in."""
    C, S = math.cos, math.sin
    return np.array([[0, -S(psi), C(theta) * C(psi)], [0, C(psi), C(theta) * S(psi)], [1, 0, -S(theta)]])


def geometry_points():
    """Base / platform points from Table 2 (pairs centred on 0/120/240 deg, -/+ phi/2)."""
    k = np.repeat(np.arange(3), 2) * 2 * math.pi / 3
    s = np.tile([-1.0, 1.0], 3)
    gb, gp = k + s * PHI_B / 2, k + s * PHI_P / 2
    B = np.stack([R_B * np.cos(gb), R_B * np.sin(gb), np.zeros(6)], 1)
    P = np.stack([R_P * np.cos(gp), R_P * np.sin(gp), np.zeros(6)], 1)
    return B, P


def rel_err(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


# ------------------------------------------------------------------ paper numbers and conventions


def test_table2_parameters_in_config_and_model(kin):
    cfg = kin.model.config
    g = cfg["geometry"]
    assert (g["base_radius"], g["platform_radius"], g["link_length"]) == (R_B, R_P, L)
    assert (g["base_pair_angle_deg"], g["platform_pair_angle_deg"]) == (15.0, 0.0)
    B, P = geometry_points()
    np.testing.assert_allclose(kin.base_points.T, B, atol=1e-12)
    np.testing.assert_allclose(kin.platform_points.T, P, atol=1e-12)
    m = kin.model.model
    plat = m.inertias[m.getJointId("platform_roll")]
    assert plat.mass == pytest.approx(M_P, abs=1e-15)
    np.testing.assert_allclose(np.diag(plat.inertia), I_P, atol=1e-15)
    for i in range(1, 7):
        act = m.inertias[m.getJointId(f"leg{i}_prismatic")]
        link = m.inertias[m.getJointId(f"leg{i}_u2")]
        assert act.mass == pytest.approx(M_A, abs=1e-15)
        assert link.mass == pytest.approx(M_L, abs=1e-15)
        np.testing.assert_allclose(link.lever, [L - B_CM, 0, 0], atol=1e-12)  # b_cm from the platform point
        np.testing.assert_allclose(link.inertia, np.diag(I_L), atol=1e-15)
        assert m.inertias[m.getJointId(f"leg{i}_u1")].mass == 0.0                 # massless U cross


def test_lopes_euler_convention_is_our_zyx(kin):
    rng = np.random.default_rng(3)
    for _ in range(20):
        psi, theta, phi = rng.uniform(-1, 1, 3)
        np.testing.assert_allclose(rpy_to_matrix(phi, theta, psi), lopes_R(psi, theta, phi), atol=1e-15)
        pose = kin.pose_from_lopes([0.1, 0.2, 2.0, psi, theta, phi])
        np.testing.assert_allclose(pose.rotation, lopes_R(psi, theta, phi), atol=1e-15)
        np.testing.assert_allclose(kin.lopes_coordinates(pose), [0.1, 0.2, 2.0, psi, theta, phi], atol=1e-12)
        np.testing.assert_allclose(kin.euler_rate_map(pose), lopes_JA(psi, theta), atol=1e-15)
        # J_A maps Euler rates to omega: check against R' R^T by central differences
        rates = rng.normal(size=3)
        h = 1e-6
        Rp = lopes_R(*(np.array([psi, theta, phi]) + h * rates))
        Rm = lopes_R(*(np.array([psi, theta, phi]) - h * rates))
        W = (Rp - Rm) / (2 * h) @ lopes_R(psi, theta, phi).T
        omega = np.array([W[2, 1], W[0, 2], W[1, 0]])
        np.testing.assert_allclose(lopes_JA(psi, theta) @ rates, omega, atol=1e-8)


def test_P1_P2_reachable_and_P1_symmetric(kin):
    cfg = kin.model.config
    P1 = kin.task.pose([0, 0, 2.0, 0, 0, 0])
    # P2 = [-100, -200, 2500 mm, psi 15, theta -15, phi 15 deg] -> our [x y z roll pitch yaw]
    P2 = Pose(np.array([-0.1, -0.2, 2.5]), lopes_R(15 * DEG, -15 * DEG, 15 * DEG))
    np.testing.assert_allclose(kin.task.pose(cfg["home"]).rotation, P1.rotation)
    np.testing.assert_allclose(kin.task.pose(cfg["demo_poses"][0]).rotation, P2.rotation, atol=1e-15)
    q1 = kin.inverse(P1).q[kin.idx_prismatic]
    kin.inverse(P2)
    rho2 = R_B**2 + R_P**2 - 2 * R_B * R_P * math.cos(PHI_B / 2)
    np.testing.assert_allclose(q1, 2.0 - math.sqrt(L**2 - rho2), atol=1e-12)
    # the straight segment P1 -> P2 (Lopes' test motion passes through it) is reachable everywhere
    s = np.linspace(0, 1, 101)
    P = (1 - s)[:, None] * P1.position + s[:, None] * P2.position
    w = pin.log3(P2.rotation)
    R = np.stack([so3_exp(si * w) for si in s])
    _, ok = kin.inverse_batch(P, R)
    assert ok.all()


def test_link_frame_is_lopes_L_frame_and_link_angular_velocity_eq55(kin, data):
    """Link body frame = {L_i} of eqs. (49-52); its angular velocity vs eq. (55).

    With y_L always horizontal (eq. 51) the link does spin about its own axis
    (rate u1' a_z / L, the vertical U axis has a component along the link);
    eq. (55) drops that spin. Its part perpendicular to the link is exact, and
    the spin does not matter for the dynamics since I_Lxx = 0 (Table 2).
    """
    m = kin.model.model
    rng = np.random.default_rng(5)
    B, P = geometry_points()
    for pose in sample_poses(kin, 30, 11):
        tw = rng.normal(size=6)
        jm = kin.inverse(pose, tw)
        pin.forwardKinematics(m, data, jm.q, jm.v)
        pin.updateFramePlacements(m, data)
        r = (pose.rotation @ P.T).T
        for i in range(6):
            l = jm.q[kin.idx_prismatic[i]]
            a = pose.position + r[i] - B[i] - l * np.array([0, 0, 1.0])
            assert np.linalg.norm(a) == pytest.approx(L, abs=1e-12)
            xL = a / L
            yL = np.array([-a[1], a[0], 0]) / math.hypot(a[0], a[1])
            zL = np.cross(xL, yL)
            assert zL[2] > 0
            fid = m.getFrameId(f"leg{i + 1}_link")
            np.testing.assert_allclose(data.oMf[fid].rotation, np.column_stack([xL, yL, zL]), atol=1e-12)
            ld = jm.v[kin.idx_prismatic[i]]
            wL = np.cross(a, tw[:3] + np.cross(tw[3:], r[i]) - ld * np.array([0, 0, 1.0])) / L**2
            vel = pin.getFrameVelocity(m, data, fid, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED)
            assert abs(wL @ a) < 1e-12
            w_perp = vel.angular - (vel.angular @ xL) * xL
            np.testing.assert_allclose(w_perp, wL, atol=1e-12)
            spin = jm.v[kin.idx_u1[i]] * a[2] / L
            assert vel.angular @ xL == pytest.approx(spin, abs=1e-12)
            I_B = data.oMf[fid].rotation @ np.diag(I_L) @ data.oMf[fid].rotation.T   # eq. (48)
            np.testing.assert_allclose(I_B @ vel.angular, I_B @ wL, atol=1e-12)         # same momentum H_L


def test_jacobian_euler_against_fd_and_relation(kin):
    rng = np.random.default_rng(7)
    for pose in sample_poses(kin, N_RANDOM, 13):
        x = kin.lopes_coordinates(pose)
        JE = kin.jacobian_euler(pose)
        JC = kin.jacobian(pose)
        JA = kin.euler_rate_map(pose)
        T = np.zeros((6, 6))
        T[:3, :3] = np.eye(3)
        T[3:, 3:] = JA
        np.testing.assert_allclose(JE, JC @ T, atol=1e-12)                      # J_E = J_C T (eqs. 5, 6, 8, 23)
        np.testing.assert_allclose(JA, lopes_JA(x[3], x[4]), atol=1e-14)
        h = 1e-6
        fd = np.empty((6, 6))
        for k in range(6):
            e = np.zeros(6)
            e[k] = h
            qp = kin.actuated(Pose((x + e)[:3], lopes_R(*(x + e)[3:])))
            qm = kin.actuated(Pose((x - e)[:3], lopes_R(*(x - e)[3:])))
            fd[:, k] = (qp - qm) / (2 * h)
        assert rel_err(JE, fd) < 1e-6
        xd = rng.normal(size=6)
        tw = np.concatenate([xd[:3], JA @ xd[3:]])
        np.testing.assert_allclose(JE @ xd, kin.inverse(pose, tw).v[kin.idx_prismatic], atol=1e-10)


# ------------------------------------------------------------------ IK, Jacobians, closures


def test_ik_closure_and_constraint_jacobian(kin, data):
    clm = kin.model
    for pose in sample_poses(kin, N_RANDOM, 17):
        jm = kin.inverse(pose, jacobian=True)
        assert np.abs(closure_residual(clm, data, jm.q)).max() <= 1e-12
        G = kin.joint_jacobian(pose)
        Gc = kin.constraint_joint_jacobian(jm.q, data)
        assert np.abs(G - Gc).max() <= 1e-9
        assert np.abs(jm.jacobian - Gc[clm.actuated_idx]).max() <= 1e-9
        np.testing.assert_allclose(kin.jacobian(pose), jm.jacobian, atol=1e-14)
        Jx, Jq = kin.jacobian_xq(pose)
        np.testing.assert_allclose(np.linalg.solve(Jq, Jx), jm.jacobian, atol=1e-12)
        np.testing.assert_allclose(kin.actuated(pose), jm.q[clm.actuated_idx], atol=0)
        jm0 = kin.inverse(pose, np.zeros(6), jacobian=True)      # the rates path computes q and J separately
        np.testing.assert_allclose(jm0.q, jm.q, atol=1e-14)
        np.testing.assert_allclose(jm0.jacobian, jm.jacobian, atol=1e-13)


def test_rates_accelerations_and_jacobians_against_finite_differences(kin, data):
    clm = kin.model
    rng = np.random.default_rng(19)
    task = kin.task
    for pose in sample_poses(kin, N_RANDOM, 23):
        tw = rng.normal(size=6) * [0.3, 0.3, 0.3, 0.5, 0.5, 0.5]
        ac = rng.normal(size=6)
        jm = kin.inverse(pose, tw, ac)

        def motion(t):   # p(t) = p + v t + p'' t^2/2, R(t) = exp(w t + w' t^2/2) R: omega(0) = w, omega'(0) = w'
            return Pose(pose.position + tw[:3] * t + 0.5 * ac[:3] * t * t,
                        so3_exp(tw[3:] * t + 0.5 * ac[3:] * t * t) @ pose.rotation)

        def q_at(t):
            return kin.inverse(motion(t), check_limits=False).q

        h1, h2 = 1e-5, 1e-4
        v_fd = (q_at(h1) - q_at(-h1)) / (2 * h1)
        a_fd = (q_at(h2) - 2 * q_at(0.0) + q_at(-h2)) / h2**2
        assert rel_err(jm.v, v_fd) < 1e-6
        assert rel_err(jm.a, a_fd) < 1e-6
        # G column by column (every joint) and J
        G = kin.joint_jacobian(pose)
        G_fd = np.empty_like(G)
        for k in range(6):
            e = np.zeros(6)
            e[k] = h1
            G_fd[:, k] = (kin.inverse(task.retract(pose, e), check_limits=False).q
                          - kin.inverse(task.retract(pose, -e), check_limits=False).q) / (2 * h1)
        assert rel_err(G, G_fd) < 1e-6
        np.testing.assert_allclose(G @ tw, jm.v, atol=1e-12)
        # Jdot: d/dt J along the motion, and qddot_a = J xddot + Jdot xdot
        Jd = kin.jacobian_dot(pose, tw)
        Jd_fd = (kin.jacobian(motion(h1)) - kin.jacobian(motion(-h1))) / (2 * h1)
        assert rel_err(Jd, Jd_fd) < 1e-6
        J = kin.jacobian(pose)
        np.testing.assert_allclose(J @ ac + Jd @ tw, jm.a[clm.actuated_idx], atol=1e-10)
        # closures at velocity and acceleration level
        K = closure_jacobian(clm, data, jm.q)
        assert np.abs(K @ jm.v).max() <= 1e-10
        assert np.abs(K @ jm.a + closure_bias(clm, data, jm.q, jm.v)).max() <= 1e-9


def test_ik_fk_round_trip(kin):
    from pkm_control.kinematics.forward import forward_kinematics
    rng = np.random.default_rng(29)
    task = kin.task
    worst = 0.0
    for pose in sample_poses(kin, N_FK, 31):
        qa = kin.actuated(pose)
        dx = np.concatenate([rng.uniform(-3e-3, 3e-3, 3), rng.uniform(-2, 2, 3) * DEG])
        res = forward_kinematics(kin, qa, task.retract(pose, dx))
        worst = max(worst, np.abs(task.difference(res.pose, pose)).max())
    assert worst <= 1e-10


def test_inverse_batch_agrees_with_inverse(kin):
    rng = np.random.default_rng(37)
    lo = np.array(kin.model.config["workspace"]["lower"], float)
    hi = np.array(kin.model.config["workspace"]["upper"], float)
    mid, half = (lo + hi) / 2, (hi - lo) / 2
    X = mid + 1.6 * half * rng.uniform(-1, 1, (600, 6))   # well beyond the box: many invalid samples
    X[:, 4] = np.clip(X[:, 4], -1.2, 1.2)
    poses = [kin.task.pose(x) for x in X]
    q, ok = kin.inverse_batch(np.stack([p.position for p in poses]), np.stack([p.rotation for p in poses]))
    assert 50 < ok.sum() < len(ok) - 50
    for pose, qi, oki in zip(poses, q, ok):
        if oki:
            np.testing.assert_allclose(kin.inverse(pose).q, qi, atol=1e-12)
        else:
            with pytest.raises(UnreachablePoseError):
                kin.inverse(pose)
    P = np.array([[0, 0, 2.0], [np.nan, 0, 2.0]])
    _, ok = kin.inverse_batch(P, np.stack([np.eye(3)] * 2))
    assert ok.tolist() == [True, False]
    with pytest.raises(InvalidInputError):
        kin.inverse_batch(np.zeros((3, 2)), np.stack([np.eye(3)] * 3))


# ------------------------------------------------------------------ errors and singularities


def test_errors_name_the_quantity(kin):
    task = kin.task
    with pytest.raises(UnreachablePoseError, match=r"leg \d: horizontal distance rho = .* link length L = 1.837"):
        kin.inverse(task.pose([1.5, 0, 2.0, 0, 0, 0]))
    with pytest.raises(JointLimitError, match=r"leg\d_prismatic.*outside its range \[0, 1.5\]"):
        kin.inverse(task.pose([0, 0, 4.0, 0, 0, 0]))
    with pytest.raises(JointLimitError, match=r"spherical joint of leg \d: cone angle .* limit 55 deg"):
        kin.inverse(task.pose([0, 0, 2.0, 0.6, 0, 0]))
    kin.inverse(task.pose([0, 0, 2.0, 0.6, 0, 0]), check_limits=False)   # geometrically fine
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0, np.nan, 2.0]), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0, 0.0]), np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0, 0, 2.0]), 1.01 * np.eye(3)))
    with pytest.raises(InvalidInputError):
        kin.inverse(task.pose([0, 0, 2.0, 0, 0, 0]), twist=np.zeros(5))
    with pytest.raises(InvalidInputError):
        kin.inverse(task.pose([0, 0, 2.0, 0, 0, 0]), twist=np.zeros(6), accel=[0, 0, 0, 0, np.inf, 0])


def test_inverse_singularity_link_horizontal(kin):
    """J_q = diag(a_iz) is singular when link 1 is horizontal: rho_1 = L.

    Pose: R = I, platform moved horizontally along d1 = p_1 - b_1 until |d1| = L
    (p_xy = (L - |d1|) d1 / |d1|), z = 2 m; the other five links still reach.
    """
    B, P = geometry_points()
    d1 = (P[0] - B[0])[:2]
    n1 = np.linalg.norm(d1)
    p = np.array([*((L - n1) * d1 / n1), 2.0])
    pose = Pose(p, np.eye(3))
    a_z = np.sqrt(np.maximum(L**2 - np.sum((p[:2] + P[:, :2] - B[:, :2]) ** 2, axis=1), 0.0))
    assert a_z[0] < 1e-6 and a_z[1:].min() > 0.05
    Jx, Jq = kin.jacobian_xq(pose)
    np.testing.assert_allclose(np.diag(Jq), a_z, atol=1e-7)
    s = np.linalg.svd(Jq, compute_uv=False)
    assert s[-1] / s[0] < 1e-6
    s_home = np.linalg.svd(kin.jacobian_xq(kin.task.pose(kin.model.config["home"]))[1], compute_uv=False)
    assert s_home[-1] / s_home[0] > 1e-3
    # approaching it, the actuator rate for a unit platform velocity blows up like 1/a_z
    for eps in (1e-2, 1e-4):
        near = Pose(p - np.array([*(eps * d1 / n1), 0.0]), np.eye(3))
        J = kin.jacobian(near)
        assert np.abs(J[0]).max() > 0.5 / math.sqrt(2 * L * eps)


def test_link_horizontal_and_vertical_raise_on_every_path(kin):
    """A horizontal link (h = a_z = 0: J_q singular) and a vertical one (rho = 0: the universal joint's u1 and its
    rates undefined), built from Table 2's geometry: the positions stay defined (u2 = 0, pi/2 by the module
    docstring's u2 = atan2(h, rho)), every call that needs J, the rates or G raises SingularConfigurationError naming
    the leg, the dynamics' compiled paths as the kinematics'."""
    dyn = ClosedLoopDynamics(kin)
    B, P = geometry_points()
    d1 = (P[0] - B[0])[:2]
    n1 = np.linalg.norm(d1)
    u2_leg1 = kin.idx_u2[0]
    zero = np.zeros(6)
    # |d_1| = L (1 + 1e-14): within the reach tolerance, h = 0
    horizontal = Pose(np.array([*((L * (1 + 1e-14) - n1) * d1 / n1), 2.0]), np.eye(3))
    # P_1 straight above b_1: rho_1 = 0
    vertical = Pose(np.array([*(B[0, :2] - P[0, :2]), 2.0]), np.eye(3))
    for pose, u2, what in ((horizontal, 0.0, "link horizontal"), (vertical, math.pi / 2, "link vertical")):
        assert kin.inverse(pose, check_limits=False).q[u2_leg1] == pytest.approx(u2, abs=1e-12)
        calls = [lambda: kin.inverse(pose, zero, check_limits=False), lambda: kin.joint_jacobian(pose),
                 lambda: kin.motion_and_joint_jacobian(pose, zero), lambda: dyn.forward_dynamics(pose, zero, zero),
                 lambda: dyn.inverse_dynamics(pose, zero, zero), lambda: dyn.state(pose, zero)]
        if what == "link horizontal":
            calls += [lambda: kin.inverse(pose, jacobian=True, check_limits=False), lambda: kin.actuated(pose),
                      lambda: kin.jacobian(pose)]
        else:     # J is defined (h = L)
            np.testing.assert_allclose(kin.jacobian(pose)[0], [0, 0, 1, P[0, 1], -P[0, 0], 0], atol=1e-12)
        for call in calls:
            with pytest.raises(SingularConfigurationError, match=f"leg 1: {what}"):
                call()


def test_cut_joint_angles_are_the_cones_between_link_and_platform_normal(kin):
    """The spherical joints' cone angles (the end stops' cut joints), written out from Table 2's geometry: the link
    a_i = (d_x, d_y, sqrt(L^2 - d_x^2 - d_y^2)), d = p + R p_i - b_i, against the platform normal R e_z."""
    B, P = geometry_points()
    for pose in sample_poses(kin, 50, 41, box_scale=1.3):
        d = pose.position + P @ pose.rotation.T - B
        a = np.column_stack([d[:, :2], np.sqrt(L**2 - (d[:, :2] ** 2).sum(1))])
        expected = np.arccos(np.clip(a @ pose.rotation[:, 2] / L, -1, 1))
        np.testing.assert_allclose(kin.cut_joint_angles(pose), expected, atol=1e-12)
    with pytest.raises(UnreachablePoseError, match="link length"):
        kin.cut_joint_angles(kin.task.pose([1.5, 0, 2.0, 0, 0, 0]))


def test_forward_dynamics_refuses_an_empty_twist(kin):
    """pus_motion takes a twist of length 0 as none (no rates written): the forward dynamics' compiled path must
    send an empty twist array to the full validation, not return an acceleration from unwritten rates."""
    dyn = ClosedLoopDynamics(kin)
    with pytest.raises(InvalidInputError, match="twist"):
        dyn.forward_dynamics(kin.home_pose(), np.empty(0), np.zeros(6))


def test_home_demo_poses_and_workspace(kin):
    cfg = kin.model.config
    for x in [cfg["home"], *cfg["demo_poses"]]:
        kin.inverse(kin.task.pose(x))
    lo, hi = np.array(cfg["workspace"]["lower"]), np.array(cfg["workspace"]["upper"])
    X = lo + (hi - lo) * np.random.default_rng(41).random((2000, 6))
    poses = [kin.task.pose(x) for x in X]
    _, ok = kin.inverse_batch(np.stack([p.position for p in poses]), np.stack([p.rotation for p in poses]))
    assert ok.mean() > 0.6          # most of the box is reachable


def test_urdf_bodies_have_geometry(kin):
    import xml.etree.ElementTree as ET
    root = ET.fromstring(kin.model.urdf)
    links = {ln.get("name"): ln for ln in root.findall("link")}
    moving = ["platform"] + [f"leg{i}_{b}" for i in range(1, 7) for b in ("actuator", "cross", "link")]
    for name in moving:
        assert links[name].find("visual") is not None and links[name].find("collision") is not None, name
    assert all(j.get("type") != "continuous" for j in root.findall("joint"))
