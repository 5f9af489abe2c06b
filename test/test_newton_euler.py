"""Taghirad's Newton-Euler dynamics of the Stewart-Gough platform (dynamics/newton_euler.py).

Checked against independent numbers only: the generic engine (pinocchio RNEA/CRBA on the spanning
tree), the kinetic and potential energy summed body by body from pinocchio's link velocities and
centre-of-mass positions, finite differences of M (skew symmetry, Christoffel symbols) and of the
potential energy, and the book's joint-space relations evaluated with the kinematics' J and Jdot.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.description import parse_spec
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.formulations import formulation
from pkm_control.dynamics.newton_euler import Formulation
from pkm_control.errors import (InvalidInputError, InvalidModelError, PkmError, SingularConfigurationError)
from pkm_control.kinematics.task_space import Pose, euler_rate_matrix, euler_rate_matrix_dot, so3_exp
from pkm_control.kinematics.workspace import random_poses
from body_energy import kinetic_energy_bodies

VARIANTS = ("6-6", "3-6")
N_STATES = 200


def _close(mine, ref, rtol=1e-9):
    ref = np.asarray(ref)
    np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol * max(np.abs(ref).max(), 1e-300))


def _states(kin, n, seed):
    rng = np.random.default_rng(seed)
    out = []
    for pose in random_poses(kin, n, rng):
        twist = np.concatenate([rng.normal(size=3) * 0.5 / np.sqrt(3), rng.normal(size=3) / np.sqrt(3)])
        accel = np.concatenate([rng.normal(size=3) * 5 / np.sqrt(3), rng.normal(size=3) * 10 / np.sqrt(3)])
        out.append((pose, twist, accel))
    return out


@pytest.fixture(scope="module", params=VARIANTS)
def setup(request):
    dyn = robot_dynamics("stewart", request.param)
    return dyn, Formulation(dyn), _states(dyn.kin, N_STATES, 7 if request.param == "6-6" else 8)



def _potential_energy_bodies(kin, pose, g):
    model = kin.model.model
    data = model.createData()
    pin.forwardKinematics(model, data, kin.inverse(pose, check_limits=False).q)
    return -sum(model.inertias[j].mass * g @ data.oMi[j].act(model.inertias[j].lever)
                for j in range(1, model.njoints))


# ---------------------------------------------------------------------------- engine agreement
def test_agreement_with_engine(setup):
    """tau, J^T tau, M, C xdot, G and the joint-space M_q, C_q qdot, G_q at 200 random states: rel 1e-9."""
    dyn, ne, states = setup
    worst = 0.0
    for pose, twist, accel in states:
        ref = dyn.inverse_dynamics(pose, twist, accel, friction=False)
        tau = ne.inverse_dynamics(pose, twist, accel)
        _close(tau, ref.tau)
        _close(ne.generalized_force(pose, twist, accel), ref.generalized)
        M, Mg = ne.mass_matrix(pose), dyn.mass_matrix(pose)
        _close(M, Mg)
        Cx, Cxg = ne.coriolis_matrix(pose, twist) @ twist, dyn.coriolis_matrix(pose, twist) @ twist
        _close(Cx, Cxg)
        _close(ne.coriolis_matrix(pose, twist, form="book") @ twist, Cxg)
        # both C are the Christoffel matrix (unique for a given M): the whole matrix agrees
        _close(ne.coriolis_matrix(pose, twist), dyn.coriolis_matrix(pose, twist))
        G, Gg = ne.gravity_vector(pose), dyn.gravity_vector(pose)
        _close(G, Gg)
        Mq, Cq, Gq = ne.joint_space(pose, twist)
        Mqg, Cqg, Gqg = dyn.joint_space(pose, twist)
        qd = dyn.kin.jacobian(pose) @ twist
        _close(Mq, Mqg)
        _close(Cq @ qd, Cqg @ qd)
        _close(Gq, Gqg)
        worst = max(worst, np.abs(tau - ref.tau).max() / np.abs(ref.tau).max(),
                    np.abs(M - Mg).max() / np.abs(Mg).max(), np.abs(Cx - Cxg).max() / np.abs(Cxg).max(),
                    np.abs(G - Gg).max() / np.abs(Gg).max())
    assert worst < 1e-12          # measured ~1e-15: the formulation is exact for the URDF model


def test_wrench_and_gravity_switch(setup):
    dyn, ne, states = setup
    rng = np.random.default_rng(3)
    for pose, twist, accel in states[:20]:
        w = rng.normal(size=6) * 100
        _close(ne.inverse_dynamics(pose, twist, accel, wrench=w),
               dyn.inverse_dynamics(pose, twist, accel, wrench=w, friction=False).tau)
        g0 = dyn.with_gravity(np.zeros(3))
        _close(ne.inverse_dynamics(pose, twist, accel, gravity=np.zeros(3)),
               g0.inverse_dynamics(pose, twist, accel, friction=False).tau)
    # a ClosedLoopDynamics built with another gravity passes it on
    g2 = dyn.with_gravity(np.array([0.0, 1.0, -3.0]))
    pose, twist, accel = states[0]
    _close(Formulation(g2).inverse_dynamics(pose, twist, accel),
           g2.inverse_dynamics(pose, twist, accel, friction=False).tau)


# ---------------------------------------------------------------------------- structure of M and C
def test_mass_matrix_kinetic_energy_body_by_body(setup):
    """1/2 xdot^T M xdot == sum over bodies of 1/2 m v_c^2 + 1/2 w^T I w (limb spin included)."""
    dyn, ne, states = setup
    rng = np.random.default_rng(11)
    for pose, _, _ in states[:60]:
        M = ne.mass_matrix(pose)
        np.testing.assert_allclose(M, M.T, rtol=0, atol=1e-12 * np.abs(M).max())
        assert np.linalg.eigvalsh(M).min() > 0.0
        for _ in range(3):
            twist = rng.normal(size=6)
            T = kinetic_energy_bodies(dyn.kin, pose, twist)
            assert abs(0.5 * twist @ M @ twist - T) <= 1e-10 * T


def test_gravity_is_potential_gradient(setup):
    """G = dV/dX: V summed body by body (pinocchio com positions), central differences along each twist axis."""
    dyn, ne, states = setup
    g = ne.gravity
    h = 1e-6
    for pose, _, _ in states[:10]:
        G = ne.gravity_vector(pose)
        fd = np.empty(6)
        for k in range(6):
            d = np.zeros(6)
            d[k] = h
            plus = Pose(pose.position + d[:3], so3_exp(d[3:]) @ pose.rotation)
            minus = Pose(pose.position - d[:3], so3_exp(-d[3:]) @ pose.rotation)
            fd[k] = (_potential_energy_bodies(dyn.kin, plus, g) - _potential_energy_bodies(dyn.kin, minus, g)) / (2 * h)
        np.testing.assert_allclose(G, fd, rtol=0, atol=1e-7 * np.abs(G).max())


def _moved(pose, twist, t):
    return Pose(pose.position + t * twist[:3], so3_exp(t * twist[3:]) @ pose.rotation)


def test_mdot_minus_2c_skew(setup):
    """Mdot - 2C skew-symmetric for the Christoffel-form C; Mdot by central differences along the motion.
    The book's literal C (omega_x I_p, the whole l' term on s_x^2) has the same C xdot but is not skew."""
    _, ne, states = setup
    h = 1e-6
    book_asym = []
    for pose, twist, _ in states[:20]:
        Md = (ne.mass_matrix(_moved(pose, twist, h)) - ne.mass_matrix(_moved(pose, twist, -h))) / (2 * h)
        S = Md - 2 * ne.coriolis_matrix(pose, twist)
        assert np.abs(S + S.T).max() <= 1e-6 * np.abs(Md).max()
        Sb = Md - 2 * ne.coriolis_matrix(pose, twist, form="book")
        book_asym.append(np.abs(Sb + Sb.T).max() / np.abs(Md).max())
    assert min(book_asym) > 1e-3


def _euler(pose):
    """e = (x, y, z, yaw, pitch, roll) and T = blockdiag(I, E(yaw, pitch)) with twist = T edot."""
    p, R = pose.position, pose.rotation
    yaw, pitch, roll = np.arctan2(R[1, 0], R[0, 0]), np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0])), \
        np.arctan2(R[2, 1], R[2, 2])
    return np.array([p[0], p[1], p[2], yaw, pitch, roll])


def _T(e):
    T = np.eye(6)
    T[3:, 3:] = euler_rate_matrix(e[3], e[4])
    return T


def _pose_e(kin, e):
    return kin.task.pose([e[0], e[1], e[2], e[5], e[4], e[3]])


def test_coriolis_is_christoffel_in_euler_coordinates(setup):
    """C_e = T^T C T + T^T M Tdot equals the Christoffel matrix of M_e(e) = T^T M T (central differences)."""
    dyn, ne, states = setup
    h = 1e-5
    for pose, twist, _ in states[:8]:
        e = _euler(pose)
        T = _T(e)
        ed = np.linalg.solve(T, twist)
        Td = np.zeros((6, 6))
        Td[3:, 3:] = euler_rate_matrix_dot(e[3], e[4], ed[3], ed[4])
        Ce = T.T @ ne.coriolis_matrix(pose, twist) @ T + T.T @ ne.mass_matrix(pose) @ Td
        dM = np.empty((6, 6, 6))
        for i in range(6):
            de = np.zeros(6)
            de[i] = h
            Mp, Mm = (_T(e + s * de).T @ ne.mass_matrix(_pose_e(dyn.kin, e + s * de)) @ _T(e + s * de)
                      for s in (1, -1))
            dM[i] = (Mp - Mm) / (2 * h)
        chris = 0.5 * (np.einsum("ikj,i->kj", dM, ed) + np.einsum("jki,i->kj", dM, ed)
                       - np.einsum("kij,i->kj", dM, ed))
        np.testing.assert_allclose(Ce, chris, rtol=0, atol=1e-6 * np.abs(chris).max())


def test_joint_space_relation(setup):
    """tau = M_q qddot + C_q qdot + G_q with qdot = J xdot, qddot = J xddot + Jdot xdot (kinematics' J, Jdot)."""
    dyn, ne, states = setup
    kin = dyn.kin
    for pose, twist, accel in states[:30]:
        J, Jd = kin.jacobian(pose), kin.jacobian_dot(pose, twist)
        _close(ne.jacobian(pose), J, 1e-12)
        _close(ne.jacobian_dot(pose, twist), Jd, 1e-12)
        Mq, Cq, Gq = ne.joint_space(pose, twist)
        qd, qdd = J @ twist, J @ accel + Jd @ twist
        _close(Mq @ qdd + Cq @ qd + Gq, ne.inverse_dynamics(pose, twist, accel))
        np.testing.assert_allclose(Mq, Mq.T, rtol=0, atol=1e-12 * np.abs(Mq).max())


def test_limb_terms_closed_form(setup):
    """Taghirad's limb terms at one limb, against hand-derived numbers for the no-spin parts:
    M_i s = m_i2 s, M_i u = I_A/l^2 u + I_zz w (w.u) for u normal to s; G_i . s = -m_i2 g.s."""
    dyn, ne, states = setup
    cfg = dyn.model.config
    m1, m2 = cfg["legs"]["cylinder"]["inertial"]["mass"], cfg["legs"]["piston"]["inertial"]["mass"]
    c1, c2 = -cfg["legs"]["cylinder"]["inertial"]["com"][2], cfg["legs"]["piston"]["inertial"]["com"][2]
    It = cfg["legs"]["cylinder"]["inertial"]["inertia"][0] + cfg["legs"]["piston"]["inertial"]["inertia"][0]
    pose = states[0][0]
    Mi, Ci, Gi = ne.limb_terms(pose)
    assert Ci is None
    b = pose.rotation @ np.array(cfg["platform"]["anchors"], float).T
    d = (pose.position[:, None] + b).T - np.array(cfg["base"]["anchors"], float)
    l = np.linalg.norm(d, axis=1)
    s = d / l[:, None]
    g = np.array(cfg["gravity"], float)
    for i in range(6):
        np.testing.assert_allclose(Mi[i] @ s[i], m2 * s[i], rtol=1e-12)
        u = np.cross(s[i], [0.3, -0.2, 0.9])
        u /= np.linalg.norm(u)
        I_A = It + m1 * c1 ** 2 + m2 * (l[i] - c2) ** 2
        assert u @ Mi[i] @ u >= I_A / l[i] ** 2 * (1 - 1e-12)          # plus the spin inertia
        np.testing.assert_allclose(Gi[i] @ s[i], -m2 * g @ s[i], rtol=1e-12)
        # transverse gravity: m_ge = (m1 c1 + m2 (l - c2)) / l
        m_ge = (m1 * c1 + m2 * (l[i] - c2)) / l[i]
        np.testing.assert_allclose(Gi[i] - (Gi[i] @ s[i]) * s[i], -m_ge * (g - (g @ s[i]) * s[i]), rtol=1e-12)


def test_static_symmetry():
    """Home pose at rest: both designs are symmetric under the 120 deg turn and the mirror that swap the
    legs, so all six actuator forces are equal; and the platform weight is carried exactly
    (vertical balance of the platform-only part of G: G_p = (0, 0, m g, 0, 0, 0))."""
    for variant in VARIANTS:
        dyn = robot_dynamics("stewart", variant)
        ne = Formulation(dyn)
        pose = dyn.kin.task.pose(dyn.model.config["home"])
        tau = ne.inverse_dynamics(pose, np.zeros(6), np.zeros(6))
        np.testing.assert_allclose(tau, tau[0], rtol=1e-12)
        assert tau[0] > 0
        m = dyn.model.config["platform"]["inertial"]["mass"]
        Mp, Cp, Gp = ne.platform_terms(pose, np.zeros(6))
        np.testing.assert_allclose(Gp, [0, 0, m * 9.81, 0, 0, 0], rtol=1e-15, atol=1e-12)
        np.testing.assert_allclose(np.diag(Mp)[:3], m)


# ---------------------------------------------------------------------------- errors, registry
def test_registry_and_errors():
    dyn = robot_dynamics("stewart", "3-6")
    ne = formulation("newton_euler", dyn)
    assert isinstance(ne, Formulation)
    with pytest.raises(InvalidInputError):
        formulation("newton_euler", robot_dynamics("delta"))
    pose = dyn.kin.task.pose(dyn.model.config["home"])
    z = np.zeros(6)
    with pytest.raises(InvalidInputError, match="twist"):
        ne.inverse_dynamics(pose, np.zeros(5), z)
    with pytest.raises(InvalidInputError, match="acceleration"):
        ne.inverse_dynamics(pose, z, np.array([0, 0, np.nan, 0, 0, 0]))
    with pytest.raises(InvalidInputError, match="rotation"):
        ne.mass_matrix(Pose(pose.position, 2 * pose.rotation))
    with pytest.raises(InvalidInputError, match="friction"):
        ne.inverse_dynamics(pose, z, z, friction=True)
    with pytest.raises(InvalidInputError, match="wrench"):
        ne.inverse_dynamics(pose, z, z, wrench=np.ones(3))
    with pytest.raises(InvalidInputError, match="gravity"):
        ne.inverse_dynamics(pose, z, z, gravity=[0, 0])
    with pytest.raises(InvalidInputError, match="form"):
        ne.coriolis_matrix(pose, z, form="lagrange")
    singular = dyn.kin.task.pose(dyn.model.config["singular_pose"])
    with pytest.raises(SingularConfigurationError, match="singular"):
        ne.inverse_dynamics(singular, z, z)
    with pytest.raises(SingularConfigurationError):
        ne.joint_space(singular, z)
    # a limb with a massive universal-joint cross (PaLiDA) is outside Taghirad's two-body limb
    with pytest.raises(InvalidModelError, match="massless"):
        Formulation(robot_dynamics("palida"))
    assert not ne._A.flags.writeable
    assert issubclass(SingularConfigurationError, PkmError)


def _plain(x):
    from collections.abc import Mapping
    if isinstance(x, Mapping):
        return {k: _plain(v) for k, v in x.items()}
    return [_plain(v) for v in x] if isinstance(x, (list, tuple)) else x


def test_platform_com_offset():
    """Platform centre of mass off P and a full inertia tensor (generalizing the book's M_p, C_p, G_p):
    the scalar Newton-Euler inverse dynamics equals the assembled J^-T (M X'' + C X' + G), and the
    platform's 1/2 X'^T M_p X' is the hand formula 1/2 m |v + omega x r_c|^2 + 1/2 omega^T R I_c R^T omega."""
    from types import SimpleNamespace

    dyn = robot_dynamics("stewart", "6-6")
    kin = dyn.kin
    cfg = _plain(kin.model.config)
    rcB = [0.01, -0.02, 0.03]
    IcB = [1.2, 1.5, 2.9, 0.05, -0.04, 0.03]            # ixx iyy izz ixy ixz iyz
    cfg["platform"]["inertial"] = {"mass": 20.0, "com": rcB, "inertia": IcB}
    fake = SimpleNamespace(model=SimpleNamespace(spec=parse_spec(cfg), name="stewart", n_actuated=6),
                           validate=kin.validate)
    ne = Formulation(fake)
    I_b = np.array([[1.2, 0.05, -0.04], [0.05, 1.5, 0.03], [-0.04, 0.03, 2.9]])
    for pose, twist, accel in _states(kin, 20, 9):
        tau = ne.inverse_dynamics(pose, twist, accel)
        _close(tau, np.linalg.solve(ne.jacobian(pose).T, ne.generalized_force(pose, twist, accel)), 1e-12)
        Mp, Cp, Gp = ne.platform_terms(pose, twist)
        R = pose.rotation
        rc = R @ rcB
        vc = twist[:3] + np.cross(twist[3:], rc)
        T = 0.5 * 20.0 * vc @ vc + 0.5 * twist[3:] @ R @ I_b @ R.T @ twist[3:]
        np.testing.assert_allclose(0.5 * twist @ Mp @ twist, T, rtol=1e-13)
        np.testing.assert_allclose(Gp, -20.0 * np.concatenate([ne.gravity, np.cross(rc, ne.gravity)]), rtol=1e-13)
        # the limbs are unchanged: the difference to the stock model is the platform alone
        ref = Formulation(dyn)
        dF = ne.generalized_force(pose, twist, accel) - ref.generalized_force(pose, twist, accel)
        Mp0, Cp0, Gp0 = ref.platform_terms(pose, twist)
        _close(dF, (Mp - Mp0) @ accel + (Cp - Cp0) @ twist + Gp - Gp0, 1e-10)


def test_model_outside_taghirad_assumptions():
    """A limb part that is not symmetric about the limb axis (com off the axis, Ixx != Iyy) is refused."""
    from collections.abc import Mapping
    from types import SimpleNamespace

    def plain(x):
        if isinstance(x, Mapping):
            return {k: plain(v) for k, v in x.items()}
        return [plain(v) for v in x] if isinstance(x, (list, tuple)) else x

    kin = robot_dynamics("stewart", "6-6").kin
    for key, value in (("com", [0.01, 0.0, -0.3]), ("inertia", [0.17, 0.16, 0.0032, 0.0, 0.0, 0.0])):
        cfg = plain(kin.model.config)
        cfg["legs"]["cylinder"]["inertial"][key] = value
        fake = SimpleNamespace(model=SimpleNamespace(spec=parse_spec(cfg), name="stewart", n_actuated=6),
                               validate=kin.validate)
        with pytest.raises(InvalidModelError, match="symmetric about the limb axis"):
            Formulation(fake)
    # the unmodified config builds (and reads its numbers from the config, not the URDF)
    cfg = plain(kin.model.config)
    Formulation(SimpleNamespace(model=SimpleNamespace(spec=parse_spec(cfg), name="stewart", n_actuated=6),
                                validate=kin.validate))
