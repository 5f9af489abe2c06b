"""DELTA robot (Codourey 1998, seed 002): analytic kinematics against independent references.

References used here, none of them the code under test:
* central finite differences of the IK positions (J, G, Jdot, joint rates and accelerations);
* the generic closure model of the loader (pinocchio frame Jacobians, closure residual/bias);
* the generic Newton forward kinematics;
* central finite differences of the closed-form direct geometric model (Codourey eq. 26-27);
* geometry written out in the test (elbow points, stretched-arm singular pose).
"""

import numpy as np
import pytest

from pkm_control.description import closure_bias, closure_jacobian, closure_residual
from pkm_control.errors import InvalidInputError, JointLimitError, UnreachablePoseError
from pkm_control.kinematics import Pose, robot_kinematics
from pkm_control.kinematics.forward import forward_kinematics
from pkm_control.kinematics.workspace import random_poses

I3 = np.eye(3)


@pytest.fixture(scope="module")
def kin():
    return robot_kinematics("delta")


@pytest.fixture(scope="module")
def poses(kin):
    return random_poses(kin, 200, np.random.default_rng(2))


def P(x):
    return Pose(np.asarray(x, float), I3)


def q_at(kin, x):
    return kin.inverse(P(x), check_limits=False).q


def rel_err(a, b):
    return np.abs(a - b).max() / max(1.0, np.abs(b).max())


def elbows(kin, theta):
    """Elbow points moved in by R_B (Codourey eq. 30), written out independently."""
    g = kin.model.config["geometry"]
    R, LA = g["base_radius"] - g["plate_radius"], g["arm_length"]
    out = []
    for az, q in zip(g["arm_azimuths"], theta):
        e = R + LA * np.cos(q)
        out.append([np.cos(az) * e, np.sin(az) * e, -LA * np.sin(q)])
    return np.array(out)


# ---------------------------------------------------------------- model and config
def test_model_structure(kin):
    clm = kin.model
    assert clm.actuated_joints == ("leg1_arm", "leg2_arm", "leg3_arm")
    assert clm.platform_joints == ("platform_x", "platform_y", "platform_z")
    assert clm.model.nv == 12 and clm.n_constraints == 9 and clm.dof == 3
    for i in (1, 2, 3):
        for j in ("arm", "elbow1", "elbow2"):
            assert f"leg{i}_{j}" in clm.joint_index
    # forearm: one uniform bar of the forearm mass (Codourey's bar, eq. 10-13)
    cfg = clm.config
    fa = cfg["bodies"]["forearm"]
    LB = cfg["geometry"]["forearm_length"]
    assert fa["com"][2] == pytest.approx(-LB / 2)
    assert fa["inertia"][0] == pytest.approx(fa["mass"] * LB ** 2 / 12) and fa["inertia"][2] == 0.0
    for key in ("home", "demo_poses", "workspace", "sources", "friction", "actuators", "gravity"):
        assert key in cfg


def test_codourey_mass_matrix_slices_reachable(kin):
    """Fig. 4-5: z = -230 mm and -350 mm, x, y in +-250 mm on a 26 x 26 grid."""
    g = np.linspace(-0.25, 0.25, 26)
    for z in (-0.23, -0.35):
        X, Y = np.meshgrid(g, g)
        Pts = np.column_stack([X.ravel(), Y.ravel(), np.full(X.size, z)])
        _, ok = kin.inverse_batch(Pts, np.broadcast_to(I3, (len(Pts), 3, 3)))
        assert ok.all(), Pts[~ok]
        for p in Pts[::25]:
            Jx, Jq = kin.jacobian_xq(P(p))
            s = np.linalg.svd(Jq, compute_uv=False)
            assert s[-1] / s[0] > 1e-2


def test_home_and_demo_poses(kin):
    cfg = kin.model.config
    for x in [cfg["home"]] + list(cfg["demo_poses"]):
        kin.inverse(P(x))


# ---------------------------------------------------------------- IK, Jacobians, rates
def test_closure_and_generic_jacobian(kin, poses):
    clm = kin.model
    data = clm.create_data()
    rng = np.random.default_rng(3)
    for pose in poses:
        xd, xdd = rng.normal(size=3), rng.normal(size=3) * 10
        m = kin.inverse(pose, twist=xd, accel=xdd, jacobian=True)
        assert np.abs(closure_residual(clm, data, m.q)).max() <= 1e-12
        K = closure_jacobian(clm, data, m.q)
        assert np.abs(K @ m.v).max() <= 1e-12 * max(1.0, np.abs(m.v).max())
        assert np.abs(K @ m.a + closure_bias(clm, data, m.q, m.v)).max() <= 1e-10 * max(1.0, np.abs(m.a).max())
        Gc = kin.constraint_joint_jacobian(m.q, data)
        G = kin.joint_jacobian(pose)
        assert np.abs(G - Gc).max() <= 1e-9
        assert np.abs(m.jacobian - Gc[clm.actuated_idx]).max() <= 1e-9
        assert np.allclose(m.v, G @ xd, rtol=0, atol=1e-12 * max(1.0, np.abs(m.v).max()))


def test_jacobians_against_finite_differences(kin, poses):
    rng = np.random.default_rng(4)
    h = 1e-6
    act = kin.model.actuated_idx
    for pose in poses:
        x = pose.position
        Gfd = np.column_stack([(q_at(kin, x + h * e) - q_at(kin, x - h * e)) / (2 * h) for e in I3])
        G = kin.joint_jacobian(pose)
        assert rel_err(G, Gfd) <= 1e-6
        assert rel_err(kin.jacobian(pose), Gfd[act]) <= 1e-6
        # Jdot: d/dt J(x + t xd) by central differences
        xd = rng.normal(size=3)
        hj = 1e-5
        Jdfd = (kin.jacobian(P(x + hj * xd)) - kin.jacobian(P(x - hj * xd))) / (2 * hj)
        assert rel_err(kin.jacobian_dot(pose, xd), Jdfd) <= 1e-6


def test_joint_rates_and_accelerations_against_finite_differences(kin, poses):
    rng = np.random.default_rng(5)
    for pose in poses:
        x, xd, xdd = pose.position, rng.normal(size=3) * 0.5, rng.normal(size=3) * 5
        m = kin.inverse(pose, twist=xd, accel=xdd)

        def path(t):
            return q_at(kin, x + xd * t + 0.5 * xdd * t * t)

        h = 1e-5
        vfd = (path(h) - path(-h)) / (2 * h)
        assert rel_err(m.v, vfd) <= 1e-6
        def second(h):
            return (path(h) - 2 * path(0.0) + path(-h)) / h ** 2

        afd = (4 * second(1e-4) - second(2e-4)) / 3          # central, Richardson-extrapolated: O(h^4)
        assert rel_err(m.a, afd) <= 1e-6
        # qdd_a = J xdd + Jdot xd
        J = kin.jacobian(pose)
        qa = kin.model.actuated_idx
        assert np.allclose(m.a[qa], J @ xdd + kin.jacobian_dot(pose, xd) @ xd, rtol=1e-10, atol=1e-10)


def test_jacobian_xq(kin, poses):
    for pose in poses[:50]:
        Jx, Jq = kin.jacobian_xq(pose)
        assert np.allclose(np.linalg.solve(Jq, Jx), kin.jacobian(pose), rtol=1e-12, atol=1e-12)


def test_ik_fk_round_trip(kin):
    poses = random_poses(kin, 1000, np.random.default_rng(6))
    rng = np.random.default_rng(7)
    worst = 0.0
    for pose in poses:
        qa = kin.actuated(pose)
        guess = P(pose.position + rng.uniform(-0.005, 0.005, 3))
        res = forward_kinematics(kin, qa, guess)
        worst = max(worst, np.abs(res.pose.position - pose.position).max())
    assert worst <= 1e-10


def test_inverse_batch_agrees(kin):
    rng = np.random.default_rng(8)
    N = 400
    pts = np.column_stack([rng.uniform(-0.5, 0.5, N), rng.uniform(-0.5, 0.5, N), rng.uniform(-0.9, 0.0, N)])
    q, ok = kin.inverse_batch(pts, np.broadcast_to(I3, (N, 3, 3)))
    assert 0.1 < ok.mean() < 0.9
    LB = kin.model.config["geometry"]["forearm_length"]
    for i in range(N):
        if ok[i]:
            assert np.allclose(kin.inverse(P(pts[i])).q, q[i], rtol=0, atol=1e-13)
            # independent of the compiled pass both share: the plate is L_B from each elbow (eq. 28-30)
            np.testing.assert_allclose(np.linalg.norm(pts[i] - elbows(kin, q[i, kin._ia]), axis=1), LB, rtol=1e-12)
        else:
            with pytest.raises(UnreachablePoseError):      # JointLimitError is a subclass
                kin.inverse(P(pts[i]))
    # a rotated plate and a NaN are flagged, not raised
    Rz = np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])
    pts2 = np.array([[0, 0, -0.3], [0, 0, -0.3], [np.nan, 0, -0.3]])
    _, ok2 = kin.inverse_batch(pts2, np.stack([I3, Rz, I3]))
    assert ok2.tolist() == [True, False, False]
    with pytest.raises(InvalidInputError):
        kin.inverse_batch(np.zeros((3, 2)), np.broadcast_to(I3, (3, 3, 3)))
    with pytest.raises(InvalidInputError):
        kin.inverse_batch(np.zeros((3, 3)), np.broadcast_to(I3, (2, 3, 3)))


# ---------------------------------------------------------------- Codourey's models
def test_direct_geometric_model_and_eq36(kin, poses):
    """Closed-form DGM = Newton FK = the IK input; eq. 36 = d DGM / d q (eq. 26-27, central)."""
    LB = kin.model.config["geometry"]["forearm_length"]
    home = P(kin.model.config["home"])
    h = 1e-6
    for pose in poses:
        theta = kin.actuated(pose)
        x = kin.direct_geometric_model(theta)
        assert np.abs(x - pose.position).max() <= 1e-12
        # independent: the plate centre is L_B from each (moved-in) elbow
        assert np.allclose(np.linalg.norm(x - elbows(kin, theta), axis=1), LB, rtol=0, atol=1e-12)
        fk = forward_kinematics(kin, theta, home).pose.position
        assert np.abs(fk - x).max() <= 1e-10
        Jfd = np.column_stack([(kin.direct_geometric_model(theta + h * e) - kin.direct_geometric_model(theta - h * e))
                               / (2 * h) for e in I3])
        Jc = kin.forward_jacobian(pose)                       # eq. 36
        assert rel_err(Jc, Jfd) <= 1e-6
        assert np.allclose(Jc @ kin.jacobian(pose), I3, atol=1e-9)


def test_acceleration_relation_eq37(kin, poses):
    """eq. 37: xdd = J_c qdd + Jdot_c qd; Jdot_c against d/dt J_c(q + t qd) through the DGM."""
    rng = np.random.default_rng(9)
    h = 1e-5
    for pose in poses[:100]:
        theta, qd = kin.actuated(pose), rng.normal(size=3)

        def Jc_at(t):
            return kin.forward_jacobian(P(kin.direct_geometric_model(theta + t * qd)))

        Jcd = kin.forward_jacobian_dot(pose, qd)
        assert rel_err(Jcd, (Jc_at(h) - Jc_at(-h)) / (2 * h)) <= 1e-6
        # consistent with the interface: Jdot = -J Jdot_c J along xd = J_c qd
        J, Jc = kin.jacobian(pose), kin.forward_jacobian(pose)
        assert np.allclose(kin.jacobian_dot(pose, Jc @ qd), -J @ Jcd @ J, rtol=1e-9, atol=1e-9)


# ---------------------------------------------------------------- errors and singularities
def test_unreachable_and_limits(kin):
    with pytest.raises(UnreachablePoseError, match=r"leg\d.*reach ratio"):
        kin.inverse(P([0.0, 0.0, -1.2]))                      # below the stretched arms
    with pytest.raises(UnreachablePoseError, match=r"leg1.*reach ratio"):
        kin.inverse(P([1.0, 0.0, -0.3]))
    with pytest.raises(UnreachablePoseError, match="only translates"):
        kin.inverse(Pose(np.array([0.0, 0.0, -0.3]), np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]])))
    LB = kin.model.config["geometry"]["forearm_length"]
    # leg 1 (azimuth 0): the rod's angle out of the plane normal to the elbow axis is asin(y / L_B)
    with pytest.raises(JointLimitError, match="leg1: plate ball joint cone angle"):
        kin.inverse(P([0.0, LB * np.sin(np.radians(47.0)), -0.35]))      # 45 deg < 47 < 50 deg
    with pytest.raises(JointLimitError, match="leg1_elbow2"):
        kin.inverse(P([0.0, LB * np.sin(np.radians(52.0)), -0.35]))
    with pytest.raises(JointLimitError, match="leg1_arm"):
        kin.inverse(P([0.3, 0.0, -0.1]))                      # arm 1 would point up by 105 deg
    kin.inverse(P([0.3, 0.0, -0.1]), check_limits=False)
    # the batch: a pose that only breaks a limit or a cone keeps its joints, one out of reach is NaN
    pts = np.array([[0.0, LB * np.sin(np.radians(47.0)), -0.35], [0.3, 0.0, -0.1], [1.0, 0.0, -0.3], [0.0, 0.0, -0.3]])
    q, ok = kin.inverse_batch(pts, np.broadcast_to(I3, (4, 3, 3)))
    assert ok.tolist() == [False, False, False, True]
    for i in (0, 1, 3):
        np.testing.assert_allclose(q[i], kin.inverse(P(pts[i]), check_limits=False).q, rtol=0, atol=1e-13)
    assert np.isnan(q[2]).all()


def test_dynamics_gets_the_kinematics_errors(kin):
    """The dynamics' inner calls (tree_state, tree_motion_into: the compiled pass with its input checks) raise
    what the IK raises: the arm out of reach, a rotated plate, malformed input."""
    from pkm_control.dynamics import robot_dynamics

    dyn = robot_dynamics("delta")
    zero = np.zeros(3)
    far = P([1.0, 0.0, -0.3])
    rotated = Pose(np.array([0.0, 0.0, -0.3]), np.array([[0.0, -1, 0], [1, 0, 0], [0, 0, 1]]))
    for fn in (lambda p, t: dyn.inverse_dynamics(p, t, zero), lambda p, t: dyn.forward_dynamics(p, t, zero)):
        with pytest.raises(UnreachablePoseError, match=r"leg1.*reach ratio"):
            fn(far, zero)
        with pytest.raises(UnreachablePoseError, match="only translates"):
            fn(rotated, zero)
        with pytest.raises(InvalidInputError, match="twist"):
            fn(P([0.0, 0.0, -0.3]), np.array([0.0, np.nan, 0.0]))
        with pytest.raises(InvalidInputError, match="twist"):
            fn(P([0.0, 0.0, -0.3]), [0.0, 1.0])


def test_arm_angle_is_reported_in_minus_pi_pi_and_continuous_through_the_motor_plane(kin):
    """q = atan2(F, E) - acos(k) lies in (-2 pi, pi]; atan2 jumps from pi to -pi where the plate crosses the
    motors' plane (z = 0) on the inner side of a leg (X < 0), so the arm angle read q - 2 pi above it (the
    -6.28 the fuzz campaign found). Reported in (-pi, pi]: the plate 8 cm above the motors (arms 62 deg down,
    forearms up, inside every range) is accepted with the arm angles whose elbows are L_B from the plate,
    by the scalar and the batch IK, and the angle is continuous across z = 0."""
    LB = kin.model.config["geometry"]["forearm_length"]
    x = [0.0, 0.0, 0.08]
    q = kin.inverse(P(x)).q[kin._ia]                         # within the limits (JointLimitError before)
    assert np.all(np.abs(q - 1.0842) < 1e-3)
    np.testing.assert_allclose(np.linalg.norm(elbows(kin, q) - x, axis=1), LB, rtol=1e-12)
    # crossing z = 0 inside leg 1 (X = x - R < 0): a reachable vertical segment
    zs = np.linspace(-0.02, 0.02, 41)
    xs = np.column_stack([np.full_like(zs, -0.4), np.zeros_like(zs), zs])
    qs = np.array([q_at(kin, p)[kin._ia] for p in xs])
    qb, _ = kin.inverse_batch(xs, np.broadcast_to(I3, (len(zs), 3, 3)))
    np.testing.assert_allclose(qb[:, kin._ia], qs, rtol=0, atol=1e-12)
    assert np.all((qs > -np.pi) & (qs <= np.pi)) and np.abs(np.diff(qs, axis=0)).max() < 0.05
    np.testing.assert_allclose([kin.actuated(P(p)) for p in xs], qs, rtol=0, atol=1e-12)


def test_invalid_input(kin):
    with pytest.raises(InvalidInputError):
        kin.inverse(P([np.nan, 0.0, -0.3]))
    with pytest.raises(InvalidInputError):
        kin.inverse(Pose(np.array([0.0, -0.3]), I3))
    with pytest.raises(InvalidInputError):
        kin.inverse(P([0.0, 0.0, -0.3]), twist=[1.0, 2.0])
    with pytest.raises(InvalidInputError):
        kin.inverse(P([0.0, 0.0, -0.3]), twist=[1.0, np.inf, 2.0])
    with pytest.raises(InvalidInputError):
        kin.inverse(P([0.0, 0.0, -0.3]), accel=[1.0, 2.0, 3.0])
    with pytest.raises(InvalidInputError):
        kin.direct_geometric_model([0.1, 0.2])
    with pytest.raises(AttributeError):
        kin.LA = 1.0


def test_stretched_arm_singularity(kin):
    """Arm 1 and its forearm aligned: P = M_1 + (L_A + L_B) [cos q0, 0, -sin q0] in {R_1}.

    With q0 = 105 deg the other two legs still reach P (a point of the geometric
    workspace boundary); s_1 is parallel to the arm, so s_1 . b_1 = 0 and J_q
    loses rank. The elbow1 stop (-60 deg; aligned is -90 deg) keeps it out of
    the joint-limited workspace.
    """
    g = kin.model.config["geometry"]
    R, LA, LB = g["base_radius"] - g["plate_radius"], g["arm_length"], g["forearm_length"]
    q0 = np.radians(105.0)
    x = np.array([R + (LA + LB) * np.cos(q0), 0.0, -(LA + LB) * np.sin(q0)])
    Jx, Jq = kin.jacobian_xq(P(x))
    s = np.linalg.svd(Jq, compute_uv=False)
    assert s[-1] / s[0] < 1e-6
    assert kin.actuated(P(x))[0] == pytest.approx(q0, abs=1e-7)
    with pytest.raises(JointLimitError, match="leg1_elbow1"):
        kin.inverse(P(x))
    with pytest.raises(UnreachablePoseError, match="leg1"):
        kin.inverse(P(x * 1.001), check_limits=False)          # just beyond the stretched arm
    Jx, Jq = kin.jacobian_xq(P(kin.model.config["home"]))
    s = np.linalg.svd(Jq, compute_uv=False)
    assert s[-1] / s[0] > 1e-3
