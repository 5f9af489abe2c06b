"""Lopes' generalized-momentum dynamics (seed 001) and the trigonometric-spline profile.

Reference numbers never come from the code under test: the generic engine (pinocchio RNEA on
the spanning tree, virtual power), its parameter-linear form split by body, Newton-Euler of the
platform written here, the actuator accelerations of the kinematics, finite differences.
"""

import math
import types

import numpy as np
import pytest

from pkm_control.description import parse_spec
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.formulations import formulation
from pkm_control.dynamics.generalized_momentum import Formulation
from pkm_control.errors import InvalidInputError, InvalidModelError, SingularConfigurationError, UnreachablePoseError
from pkm_control.kinematics.task_space import Pose, euler_rate_matrix, so3_exp
from pkm_control.kinematics.workspace import random_poses
from pkm_control.trajectory import WaypointTrajectory, trig_spline3
from pkm_control.trajectory.profiles import trig_spline3_peaks

N_STATES = 200


@pytest.fixture(scope="module")
def dyn():
    return robot_dynamics("lopes")


@pytest.fixture(scope="module")
def gm(dyn):
    return Formulation(dyn)


@pytest.fixture(scope="module")
def states(dyn):
    rng = np.random.default_rng(20261122)
    out = []
    for pose in random_poses(dyn.kin, N_STATES, rng):
        twist = np.concatenate([0.5 * rng.normal(size=3) / math.sqrt(3), 1.0 * rng.normal(size=3) / math.sqrt(3)])
        accel = np.concatenate([5.0 * rng.normal(size=3) / math.sqrt(3), 10.0 * rng.normal(size=3) / math.sqrt(3)])
        out.append((pose, twist, accel))
    return out


def close(mine, ref, rtol=1e-9):
    np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


def _euler_T(pose):
    """T = diag(I, J_A) of Lopes eq. (23), J_A written from eq. (9) (psi = yaw, theta = pitch)."""
    R = pose.rotation
    psi, theta = math.atan2(R[1, 0], R[0, 0]), math.asin(-R[2, 0])
    T = np.eye(6)
    T[3:, 3:] = [[0, -math.sin(psi), math.cos(theta) * math.cos(psi)],
                 [0, math.cos(psi), math.cos(theta) * math.sin(psi)],
                 [1, 0, -math.sin(theta)]]
    return T


# ---------------------------------------------------------------- agreement with the engine
def test_registered(dyn):
    assert isinstance(formulation("generalized_momentum", dyn), Formulation)
    with pytest.raises(InvalidInputError):
        formulation("generalized_momentum", robot_dynamics("delta"))


def test_inverse_dynamics_matches_engine(dyn, gm, states):
    worst = 0.0
    for pose, twist, accel in states:
        ref = dyn.inverse_dynamics(pose, twist, accel, friction=False).tau
        tau = gm.inverse_dynamics(pose, twist, accel)
        close(tau, ref)
        worst = max(worst, np.abs(tau - ref).max() / np.abs(ref).max())
    assert worst < 1e-12


def test_inverse_dynamics_without_gravity(dyn, gm, states):
    dyn0 = dyn.with_gravity(np.zeros(3))
    for pose, twist, accel in states[:50]:
        close(gm.inverse_dynamics(pose, twist, accel, gravity=np.zeros(3)),
              dyn0.inverse_dynamics(pose, twist, accel, friction=False).tau)


def test_contributions_by_body_match_engine_regressor(dyn, gm, states):
    """Each body's share = the engine's parameter-linear form with only that body's parameters."""
    names, p = dyn.parameters()
    groups = {"platform": [n.startswith("platform.") for n in names],
              "actuators": [n.split(".")[0].endswith("_actuator") for n in names],
              "links": [n.split(".")[0].endswith("_link") for n in names]}
    masks = {k: np.array(v) for k, v in groups.items()}
    assert sum(m.sum() for m in masks.values()) == 10 * 13      # platform + 6 actuators + 6 links
    for pose, twist, accel in states[:60]:
        Y = dyn.actuator_regressor(pose, twist, accel, friction=False)
        c = gm.contributions(pose, twist, accel)
        for k, m in masks.items():
            close(c[k], Y[:, m] @ p[m], rtol=1e-9)
        np.testing.assert_allclose(c["platform"] + c["actuators"] + c["links"], c["total"], rtol=0, atol=1e-12)
        close(c["total"], Y @ p)
        for k in ("platform", "actuators", "links"):
            np.testing.assert_allclose(c[f"{k}_kinetic"] + c[f"{k}_gravity"], c[k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(c["links_translation"] + c["links_rotation"], c["links_kinetic"],
                                   rtol=0, atol=1e-12)


def test_platform_and_actuator_shares_by_hand(dyn, gm, states):
    """Platform: Newton-Euler wrench through J_C^-T; actuators: m_A (l'' - g_z) (eq. 29-32)."""
    cfg = dyn.model.config
    mP = cfg["bodies"]["platform"]["mass"]
    mA = cfg["bodies"]["actuator"]["mass"]
    Ix, Iy, Iz = cfg["bodies"]["platform"]["inertia"][:3]
    g = np.array(cfg["gravity"], float)
    act = dyn.model.actuated_idx
    for pose, twist, accel in states[:40]:
        R = pose.rotation
        Ib = R @ np.diag([Ix, Iy, Iz]) @ R.T
        w, wd = twist[3:], accel[3:]
        wrench = np.concatenate([mP * (accel[:3] - g), Ib @ wd + np.cross(w, Ib @ w)])
        J = dyn.kin.jacobian(pose)
        c = gm.contributions(pose, twist, accel)
        close(c["platform"], np.linalg.solve(J.T, wrench))
        lddot = dyn.kin.inverse(pose, twist, accel).a[act]
        close(c["actuators"], mA * (lddot - g[2]))
        close(c["actuators_gravity"], -mA * g[2] * np.ones(6))


# ---------------------------------------------------------------- I, V, G of eq. (1)
def test_lopes_matrices_vs_engine(dyn, gm, states):
    """I = M T, V xdot_E = M Tdot xdot_E + C xi, G = G_x; M = I T^-1 symmetric positive definite."""
    for pose, twist, accel in states[:40]:
        T = _euler_T(pose)
        M = dyn.mass_matrix(pose)
        C = dyn.coriolis_matrix(pose, twist)
        lm = gm.lopes_model(pose, twist)
        np.testing.assert_allclose(lm.T, T, rtol=0, atol=1e-14)
        close(lm.I, M @ T)
        xd = np.linalg.solve(T, twist)
        np.testing.assert_allclose(lm.euler_rates, xd, rtol=1e-12, atol=1e-12)
        # Tdot by central differences of T along the motion (Euler angles advance by xd)
        h = 1e-6
        Rp = so3_exp(twist[3:] * h) @ pose.rotation          # R' = [omega]x R
        Rm = so3_exp(-twist[3:] * h) @ pose.rotation
        Td = (_euler_T(Pose(pose.position, Rp)) - _euler_T(Pose(pose.position, Rm))) / (2 * h)
        np.testing.assert_allclose(lm.Tdot, Td, rtol=0, atol=1e-7 * max(1.0, np.abs(Td).max()))
        close(lm.V @ xd, M @ lm.Tdot @ xd + C @ twist)
        close(lm.G, dyn.gravity_vector(pose))
        Mg = gm.mass_matrix(pose)
        close(Mg, M)
        np.testing.assert_allclose(Mg, Mg.T, rtol=0, atol=1e-12 * np.abs(Mg).max())
        assert np.linalg.eigvalsh(0.5 * (Mg + Mg.T)).min() > 0.0
        close(gm.inertia_matrix(pose), M @ T)
        close(gm.gravity_vector(pose), dyn.gravity_vector(pose))


def test_lopes_form_is_not_symmetric_and_V_differs(dyn, gm, states):
    """The paper's remark after eq. (28): I(x) and V are not inertia / Coriolis matrices proper."""
    pose, twist, _ = states[3]
    lm = gm.lopes_model(pose, twist)
    assert np.abs(lm.I - lm.I.T).max() > 1e-3 * np.abs(lm.I).max()
    T = lm.T
    C = dyn.coriolis_matrix(pose, twist)
    M = dyn.mass_matrix(pose)
    assert np.abs(lm.V - (M @ lm.Tdot + C @ T)).max() > 1e-6 * np.abs(lm.V).max()


def test_euler_form_input(dyn, gm, states):
    """inverse_dynamics_euler with Lopes' [x y z psi theta phi] and their rates = twist form."""
    for pose, twist, accel in states[:20]:
        xd, xdd = gm.euler_rates(pose, twist, accel)
        R = pose.rotation
        xE = np.array([*pose.position, math.atan2(R[1, 0], R[0, 0]), math.asin(-R[2, 0]),
                       math.atan2(R[2, 1], R[2, 2])])
        # xdd_E from the ZYX rate matrix of the kinematics module (independent of Lopes' J_A)
        E = euler_rate_matrix(xE[3], xE[4])          # omega = E [yaw' pitch' roll']
        np.testing.assert_allclose(E @ xd[3:], twist[3:], rtol=1e-12, atol=1e-12)
        close(gm.inverse_dynamics_euler(xE, xd, xdd),
              dyn.inverse_dynamics(pose, twist, accel, friction=False).tau)


def test_gravity_is_potential_gradient(dyn, gm):
    """G of eq. (64)-(67): dP/dx_E by central differences of the engine's potential, then eq. (67)."""
    kin = dyn.kin
    xE = np.array([0.05, -0.1, 2.3, 0.2, -0.15, 0.1])
    pose = kin.pose_from_lopes(xE)
    h = 1e-6
    grad = np.zeros(6)
    for k in range(6):
        e = np.zeros(6)
        e[k] = h
        grad[k] = (dyn.energy(kin.pose_from_lopes(xE + e), np.zeros(6))[1]
                   - dyn.energy(kin.pose_from_lopes(xE - e), np.zeros(6))[1]) / (2 * h)
    T = _euler_T(pose)
    np.testing.assert_allclose(gm.gravity_vector(pose), np.linalg.solve(T.T, grad), rtol=1e-7, atol=1e-8)


def test_table2_parameters_read_from_config(gm):
    assert gm.m_P == 1.430 and gm.m_A == 0.123 and gm.m_L == 0.389
    assert gm.L == 1.837 and abs(gm.b_cm - 0.918) < 1e-12
    np.testing.assert_array_equal(np.diag(gm.I_P), [0.2, 0.2, 0.4])
    np.testing.assert_array_equal(np.diag(gm.I_L), [0.0, 0.1, 0.1])
    np.testing.assert_allclose(np.hypot(*gm.base_points[:, :2].T), 1.5)
    np.testing.assert_allclose(np.hypot(*gm.platform_points[:, :2].T), 0.75)


# ---------------------------------------------------------------- errors
def test_bad_input_raises(gm, states):
    pose, twist, accel = states[0]
    with pytest.raises(InvalidInputError, match="twist"):
        gm.inverse_dynamics(pose, np.full(6, np.nan), accel)
    with pytest.raises(InvalidInputError, match="acceleration"):
        gm.inverse_dynamics(pose, twist, np.zeros(5))
    with pytest.raises(InvalidInputError, match="position"):
        gm.inverse_dynamics(Pose(np.array([0.0, np.inf, 2.0]), np.eye(3)), twist, accel)
    with pytest.raises(InvalidInputError, match="friction"):
        gm.inverse_dynamics(pose, twist, accel, friction=True)
    with pytest.raises(InvalidInputError, match="gravity"):
        gm.inverse_dynamics(pose, twist, accel, gravity=[0, 0])
    with pytest.raises(UnreachablePoseError, match="link length"):
        gm.inverse_dynamics(Pose(np.array([3.0, 0.0, 2.0]), np.eye(3)), twist, accel)
    # theta = 90 deg: Lopes' J_A (eq. 9) is singular
    R = np.array([[0.0, 0.0, 1.0], [0.0, 1.0, 0.0], [-1.0, 0.0, 0.0]])
    with pytest.raises(SingularConfigurationError, match="J_A"):
        gm.inverse_dynamics(Pose(np.array([0.0, 0.0, 2.0]), R), twist, accel)


def test_link_horizontal_is_singular(gm):
    # leg 1: base point at angle -7.5 deg, r_B = 1.5; platform point (0.75, 0, 0) at the origin:
    # put the platform so that rho_1 = L exactly (link horizontal)
    b = gm.base_points[0]
    d = np.array([0.75, 0.0]) - b[:2]
    u = d / np.linalg.norm(d)
    shift = (gm.L - np.linalg.norm(d)) * u
    pose = Pose(np.array([shift[0], shift[1], 2.0]), np.eye(3))
    with pytest.raises(SingularConfigurationError, match="horizontal"):
        gm.inverse_dynamics(pose, np.zeros(6), np.zeros(6))


def test_model_assumptions_checked(dyn):
    def fake(link=None, platform=None):
        cfg = dict(dyn.model.config)
        bodies = {k: dict(v) for k, v in cfg["bodies"].items()}
        if link:
            bodies["link"].update(link)
        if platform:
            bodies["platform"].update(platform)
        cfg["bodies"] = bodies
        model = types.SimpleNamespace(name="lopes", spec=parse_spec(cfg), actuated_joints=dyn.model.actuated_joints)
        return types.SimpleNamespace(model=model, validate=dyn.kin.validate)
    Formulation(fake())                                        # the shipped values pass
    with pytest.raises(InvalidModelError, match="spin"):
        Formulation(fake(link={"inertia": [0.01, 0.1, 0.1, 0, 0, 0]}))
    with pytest.raises(InvalidModelError, match="spin"):
        Formulation(fake(link={"inertia": [0.0, 0.1, 0.2, 0, 0, 0]}))
    with pytest.raises(InvalidModelError, match="axis"):
        Formulation(fake(link={"com": [0.919, 0.01, 0.0]}))
    with pytest.raises(InvalidModelError, match="origin"):
        Formulation(fake(platform={"com": [0.0, 0.0, 0.01]}))
    with pytest.raises(InvalidModelError):
        Formulation("stewart")


# ---------------------------------------------------------------- the trigonometric spline
def test_trig_spline3_boundary_and_closed_form():
    for T in (0.5, 2.0, 3.7):
        s0, v0, a0 = trig_spline3(0.0, T)
        s1, v1, a1 = trig_spline3(T, T)
        assert (s0, s1) == pytest.approx((0.0, 1.0), abs=1e-15)
        assert (v0, v1, a0, a1) == pytest.approx((0.0, 0.0, 0.0, 0.0), abs=1e-14)
        sm, vm, am = trig_spline3(T / 2, T)
        assert sm == pytest.approx(0.5, abs=1e-15)
        assert vm == pytest.approx(3 * math.pi / (4 * T), rel=1e-14)     # 9/16 + 3/16 at theta = pi/2
        assert am == pytest.approx(0.0, abs=1e-12)
        # a trigonometric polynomial of order 3: 7 samples of 1, cos k th, sin k th fit it exactly
        th = np.linspace(0.1, 3.0, 15)
        s = trig_spline3(th * T / math.pi, T)[0]
        B = np.column_stack([np.ones_like(th)] + [f(k * th) for k in (1, 2, 3) for f in (np.cos, np.sin)])
        coef = np.linalg.lstsq(B, s, rcond=None)[0]
        np.testing.assert_allclose(coef, [0.5, -9 / 16, 0, 0, 0, 1 / 16, 0], atol=1e-13)
        vmax, amax = trig_spline3_peaks(T)
        t = np.linspace(0.0, T, 100001)
        _, v, a = trig_spline3(t, T)
        assert np.abs(v).max() == pytest.approx(vmax, rel=1e-9)
        assert np.abs(a).max() == pytest.approx(amax, rel=1e-8)


def test_trig_spline3_finite_differences():
    T = 1.3
    t = np.linspace(0.01, T - 0.01, 57)
    h = 1e-5
    s, v, a = trig_spline3(t, T)
    sp, vp, _ = trig_spline3(t + h, T)
    sm, vm, _ = trig_spline3(t - h, T)
    np.testing.assert_allclose(v, (sp - sm) / (2 * h), rtol=0, atol=1e-9)
    np.testing.assert_allclose(a, (vp - vm) / (2 * h), rtol=0, atol=1e-8)
    # outside [0, T] the profile rests
    assert trig_spline3(-1.0, T) == (0.0, 0.0, 0.0)
    assert trig_spline3(T + 1.0, T) == (1.0, 0.0, 0.0)
    with pytest.raises(InvalidInputError):
        trig_spline3(0.5, 0.0)
    with pytest.raises(InvalidInputError):
        trig_spline3(np.nan, 1.0)


def test_waypoint_trajectory_c2_and_derivatives():
    P1 = [0, 0, 2.0, 0, 0, 0]
    P2 = [-0.1, -0.2, 2.5, 0.26, -0.26, 0.26]
    traj = WaypointTrajectory([P1, P2, P1], [2.0, 1.5])
    assert traj.duration == 3.5
    x, xd, xdd = traj.evaluate(np.array([0.0, 2.0, 3.5]))
    np.testing.assert_allclose(x, [P1, P2, P1], atol=1e-15)
    np.testing.assert_allclose(xd, 0.0, atol=1e-14)
    np.testing.assert_allclose(xdd, 0.0, atol=1e-12)
    # continuity across the via point and finite differences inside
    eps = 1e-9
    for q_l, q_r in zip(traj.evaluate(2.0 - eps), traj.evaluate(2.0 + eps)):
        np.testing.assert_allclose(q_l, q_r, atol=1e-7)
    t = np.linspace(0.05, 3.45, 41)
    h = 1e-5
    x, xd, xdd = traj.evaluate(t)
    xp, xdp, _ = traj.evaluate(t + h)
    xm, xdm, _ = traj.evaluate(t - h)
    np.testing.assert_allclose(xd, (xp - xm) / (2 * h), atol=1e-8)
    np.testing.assert_allclose(xdd, (xdp - xdm) / (2 * h), atol=1e-7)
    # straight line in the coordinates: x - P1 parallel to P2 - P1 on the first segment
    u = np.subtract(P2, P1)
    seg = t < 2.0
    resid = (x[seg] - P1) - np.outer((x[seg] - P1) @ u / (u @ u), u)
    np.testing.assert_allclose(resid, 0.0, atol=1e-14)
    with pytest.raises(InvalidInputError):
        WaypointTrajectory([P1, P2], [1.0, 2.0])
    with pytest.raises(InvalidInputError):
        WaypointTrajectory([P1, P2], [-1.0])


# ---------------------------------------------------------------- the reproduction
def test_reproduction_lopes(tmp_path, dyn, gm):
    import csv

    from pkm_control.benchmarks.reproduce import lopes

    s = lopes.run(tmp_path, progress=False)
    for name in ("fig3_actuators", "fig4_forces", "fig5_platform", "fig6_links", "fig7_actuators"):
        assert (tmp_path / f"lopes_{name}.png").stat().st_size > 10_000
        assert (tmp_path / f"lopes_{name}.csv").exists()

    def load(name):
        with open(tmp_path / f"lopes_{name}.csv") as fh:
            rows = list(csv.reader(fh))
        return rows[0], np.array(rows[1:], float)

    _, traj = load("trajectory")
    _, a = load("fig3_actuators")
    _, f4 = load("fig4_forces")
    _, f5 = load("fig5_platform")
    _, f6 = load("fig6_links")
    _, f7 = load("fig7_actuators")
    t = a[:, 0]
    assert t[-1] == pytest.approx(4.0) and s["max_relative_difference_vs_engine"] < 1e-12
    # P1 at 0 and 4 s, P2 at 2 s (Lopes sec. 5, mm / deg)
    k2 = int(np.argmin(np.abs(t - 2.0)))
    np.testing.assert_allclose(traj[0, 1:], [0, 0, 2.0, 0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(traj[k2, 1:], [-0.1, -0.2, 2.5, *np.radians([15, -15, 15])], atol=1e-12)
    np.testing.assert_allclose(traj[-1, 1:], traj[0, 1:], atol=1e-12)
    # Fig. 3: positions from the IK at the samples; rates vanish at the rest points
    kin = dyn.kin
    for k in (0, k2, len(t) // 3):
        np.testing.assert_allclose(a[k, 1:7], kin.actuated(kin.pose_from_lopes(traj[k, 1:])), atol=1e-9)
    np.testing.assert_allclose(a[[0, k2, -1], 7:], 0.0, atol=1e-12)
    # velocity: central differences of the CSV positions (dt = 2 ms, O(dt^2))
    dt = t[1] - t[0]
    np.testing.assert_allclose(a[1:-1, 7:13], (a[2:, 1:7] - a[:-2, 1:7]) / (2 * dt), atol=2e-5)
    np.testing.assert_allclose(a[1:-1, 13:19], (a[2:, 7:13] - a[:-2, 7:13]) / (2 * dt), atol=1e-4)
    # Fig. 4 = Fig. 5 + Fig. 6 + Fig. 7; Fig. 7 = m_A (l'' + g) (eq. 32 with gravity)
    np.testing.assert_allclose(f5[:, 1:7] + f6[:, 1:7] + f7[:, 1:7], f4[:, 1:], atol=1e-7)
    np.testing.assert_allclose(f7[:, 1:7], 0.123 * (a[:, 13:19] + 9.81), atol=1e-8)
    # at rest at P1 every share is static: platform weight m_P g shared by six symmetric legs
    Jc = kin.jacobian(kin.pose_from_lopes(traj[0, 1:]))
    np.testing.assert_allclose(f5[0, 1:7], np.linalg.solve(Jc.T, [0, 0, 1.430 * 9.81, 0, 0, 0]), atol=1e-8)
    np.testing.assert_allclose(f5[0, 1:7], f5[0, 1], rtol=1e-9)
    # within the config limits: stroke, actuator velocity and force
    lo, hi = dyn.model.config["limits"]["actuator_stroke"]
    assert lo <= a[:, 1:7].min() and a[:, 1:7].max() <= hi
    assert np.abs(a[:, 7:13]).max() < dyn.model.config["limits"]["actuator_velocity"]
    assert np.abs(f4[:, 1:]).max() < dyn.model.config["actuators"]["force_limit"]
    # the paper's claim: platform and link contributions are equivalent in magnitude
    assert 0.5 < s["links_to_platform_peak_ratio"] < 2.0
