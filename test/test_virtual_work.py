"""Codourey's virtual-work dynamics of the DELTA (seed 002) against independent references.

References, none of them the code under test:
* the generic engine (pinocchio RNEA/CRBA on the URDF tree, projected by the family's G):
  full model (eq. 47, 57) to 1e-9 at 200 random states;
* the engine on a lumped-mass DELTA written here (forearm mass moved 1/3 to the plate and
  2/3 to the elbows): the inertial part of the simplified model (eq. 50, 58);
* pinocchio's kinetic energy of the tree (eq. 4), and its potential energy differentiated
  along a symmetric vertical motion whose geometry is solved here by hand (gravity, eq. 54-59);
* central finite differences of the family's direct geometric model (Codourey's J, eq. 26-27).
"""

import copy

import numpy as np
import pinocchio as pin
import pytest
import yaml
from scipy.optimize import brentq

from pkm_control.description import load_model
from pkm_control.description.robots import robot_config
from pkm_control.dynamics import ClosedLoopDynamics, robot_dynamics
from pkm_control.dynamics.formulations import formulation
from pkm_control.dynamics.virtual_work import Formulation, format_simplification_error, simplification_error
from pkm_control.errors import InvalidInputError, InvalidModelError, SingularConfigurationError, UnreachablePoseError
from pkm_control.kinematics import Pose, make_kinematics
from pkm_control.kinematics.workspace import random_poses
from pkm_control.description.paths import urdf_xacro_path

I3 = np.eye(3)
ZERO = np.zeros(3)


def P(x):
    return Pose(np.asarray(x, float), I3)


def close(mine, ref, rtol=1e-9):
    ref = np.asarray(ref)
    np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


@pytest.fixture(scope="module")
def dyn():
    return robot_dynamics("delta")


@pytest.fixture(scope="module")
def form(dyn):
    return Formulation(dyn)


@pytest.fixture(scope="module")
def states(dyn):
    rng = np.random.default_rng(7)
    poses = random_poses(dyn.kin, 200, rng)
    # |v| ~ 0.5 m/s, |a| ~ 5 m/s^2 (and a few fast DELTA states: |v| ~ 3 m/s, |a| ~ 100 m/s^2)
    v = rng.normal(size=(200, 3)) * 0.5 / np.sqrt(3)
    a = rng.normal(size=(200, 3)) * 5.0 / np.sqrt(3)
    v[:20] *= 6.0
    a[:20] *= 20.0
    return list(zip(poses, v, a))


def build(tmp_path, bodies_update):
    """ClosedLoopDynamics of the DELTA with some bodies of config/delta.yaml replaced."""
    import xacro
    cfg = copy.deepcopy(robot_config("delta"))
    cfg.pop("variant")
    for name, b in bodies_update.items():
        cfg["bodies"][name] = b
    path = tmp_path / "delta_mod.yaml"
    path.write_text(yaml.safe_dump(cfg))
    urdf = xacro.process_file(str(urdf_xacro_path("delta")), mappings={"config": str(path)}).toxml()
    kin = make_kinematics(load_model(urdf, cfg, name="delta"))
    return ClosedLoopDynamics(kin)


# ---------------------------------------------------------------- the config is Codourey's model
def test_config_is_codoureys_bar_model(form):
    """The config's bodies are exactly Codourey's: uniform bars (m L^2/12 across, 0 along), point elbow."""
    b = form.kin.model.config["bodies"]
    g = form.kin.model.config["geometry"]
    LA, LB = g["arm_length"], g["forearm_length"]
    fa = b["forearm"]
    assert fa["com"] == (0.0, 0.0, -LB / 2)
    assert fa["inertia"][0] == pytest.approx(fa["mass"] * LB ** 2 / 12, rel=1e-15)
    assert fa["inertia"][2] == 0.0
    # eq. 41 by hand: I_m + L_A^2 (m_b / 3 + m_c)
    I_b = b["rotor"]["inertia"][1] + LA ** 2 * (b["arm"]["mass"] / 3 + b["elbow"]["mass"])
    assert form.I_b == pytest.approx(I_b, rel=1e-14)
    assert form.I_m == b["rotor"]["inertia"][1]
    assert form.mr_Gb == pytest.approx(LA * (b["arm"]["mass"] / 2 + b["elbow"]["mass"]), rel=1e-14)


def test_registered(dyn):
    f = formulation("virtual_work", dyn)
    assert isinstance(f, Formulation)
    with pytest.raises(InvalidInputError):
        formulation("virtual_work", robot_dynamics("lopes"))


# ---------------------------------------------------------------- full model vs the generic engine
def test_full_dynamics_matches_engine(dyn, form, states):
    worst = 0.0
    for pose, v, a in states:
        ref = dyn.inverse_dynamics(pose, v, a, friction=False).tau
        tau = form.inverse_dynamics(pose, v, a, model="full")
        close(tau, ref)
        worst = max(worst, np.abs(tau - ref).max() / np.abs(ref).max())
    print(f"full eq. 57 vs engine, 200 states: max rel error {worst:.2e}")


def test_full_dynamics_matches_engine_without_gravity_and_with_force(dyn, form, states):
    dyn0 = dyn.with_gravity(ZERO)
    rng = np.random.default_rng(3)
    for pose, v, a in states[:100]:
        close(form.inverse_dynamics(pose, v, a, gravity=ZERO), dyn0.inverse_dynamics(pose, v, a, friction=False).tau)
        f = rng.normal(size=3) * 10.0
        ref = dyn.inverse_dynamics(pose, v, a, wrench=np.r_[f, 0.0, 0.0, 0.0], friction=False).tau
        close(form.inverse_dynamics(pose, v, a, wrench=f), ref)


def test_full_mass_matrix_matches_engine(dyn, form, states):
    for pose, v, _ in states:
        M = dyn.mass_matrix(pose)
        close(form.mass_matrix(pose), M)                                   # task space
        Mq = dyn.joint_space(pose, v)[0] if pose is states[0][0] else None
        A = form.mass_matrix(pose, space="joint")
        J = dyn.kin.jacobian(pose)                                         # qdot = J xdot
        close(A, np.linalg.inv(J).T @ M @ np.linalg.inv(J))
        if Mq is not None:
            close(A, Mq)
        np.testing.assert_array_equal(A, A.T)


def test_mass_matrix_is_kinetic_energy(form, states):
    """1/2 qdot^T A qdot = pinocchio's kinetic energy of the tree (eq. 4), full model only."""
    kin = form.kin
    data = kin.model.create_data()
    for pose, v, _ in states[:50]:
        m = kin.inverse(pose, v)
        T = pin.computeKineticEnergy(kin.model.model, data, m.q, m.v)
        qd = m.v[kin.model.actuated_idx]
        A = form.joint_mass_matrix(pose, "full")
        assert 0.5 * qd @ A @ qd == pytest.approx(T, rel=1e-12)
        # the printed eq. 47 (non-symmetric J_u^T J) has the same quadratic form, not the same matrix
        Al = form.joint_mass_matrix(pose, "full", literal=True)
        assert 0.5 * qd @ Al @ qd == pytest.approx(T, rel=1e-12)
        assert np.abs(Al - Al.T).max() > 1e-6 * np.abs(A).max()


# ---------------------------------------------------------------- Codourey's Jacobian and eq. 37
def test_codourey_jacobian_and_acceleration_relation(form, states):
    kin = form.kin
    h = 1e-6
    for pose, v, a in states[:30]:
        q = kin.actuated(pose)
        Jfd = np.column_stack([(kin.direct_geometric_model(q + h * e) - kin.direct_geometric_model(q - h * e)) / (2 * h)
                               for e in I3])                                # eq. 26-27, central
        Jc = form.codourey_jacobian(pose)
        np.testing.assert_allclose(Jc, Jfd, atol=1e-7 * np.abs(Jfd).max())
        # eq. 37 against the family's joint accelerations (its own derivation)
        m = kin.inverse(pose, v, a)
        q_, qd, qdd = form.joint_motion(pose, v, a)
        close(qd, m.v[kin.model.actuated_idx], 1e-12)
        close(qdd, m.a[kin.model.actuated_idx], 1e-10)


# ---------------------------------------------------------------- gravity by hand
def test_gravity_symmetric_pose_by_hand(form):
    """Plate on the axis (0, 0, z): all arms at the same q; virtual work of a symmetric dq.

    z(q) = -L_A sin q - sqrt(L_B^2 - (R + L_A cos q)^2) (elbow-out branch) and the static
    torque of each arm is tau = dV/dq / 3 with V = (m_n + 3 m_ab / 2) g z + 3 (m_b / 2 + m_c + m_ab / 2) g (-L_A sin q).
    Both the full (eq. 57) and the simplified (eq. 58) models must give it.
    """
    cfg = form.kin.model.config
    g_ = 9.81
    geo, b = cfg["geometry"], cfg["bodies"]
    R, LA, LB = geo["base_radius"] - geo["plate_radius"], geo["arm_length"], geo["forearm_length"]
    mn, mb, mc, mab = (b[k]["mass"] for k in ("plate", "arm", "elbow", "forearm"))

    def z_of(q):
        return -LA * np.sin(q) - np.sqrt(LB ** 2 - (R + LA * np.cos(q)) ** 2)

    def V(q):
        return (mn + 1.5 * mab) * g_ * z_of(q) + 3 * (mb / 2 + mc + mab / 2) * g_ * (-LA * np.sin(q))

    for z in (-0.23, -0.29, -0.35, -0.40):
        q = brentq(lambda t: z_of(t) - z, -0.5, 1.2)
        assert form.kin.actuated(P([0, 0, z])) == pytest.approx([q] * 3, abs=1e-12)
        h = 1e-5
        tau_hand = (V(q + h) - V(q - h)) / (2 * h) / 3
        for model in ("full", "simplified"):
            tau = form.inverse_dynamics(P([0, 0, z]), ZERO, ZERO, model=model)
            np.testing.assert_allclose(tau, [tau_hand] * 3, rtol=1e-8)


def test_gravity_is_potential_gradient(form, states):
    """Static torque = dV/dq of pinocchio's potential energy along the direct geometric model."""
    kin = form.kin
    data = kin.model.create_data()

    def V(q):
        x = kin.direct_geometric_model(q)
        return pin.computePotentialEnergy(kin.model.model, data, kin.inverse(P(x), check_limits=False).q)

    h = 1e-6
    for pose, _, _ in states[:10]:
        q = kin.actuated(pose)
        grad = np.array([(V(q + h * e) - V(q - h * e)) / (2 * h) for e in I3])
        for model in ("full", "simplified"):
            np.testing.assert_allclose(form.inverse_dynamics(pose, ZERO, ZERO, model=model), grad,
                                       rtol=1e-6, atol=1e-7 * np.abs(grad).max())


# ---------------------------------------------------------------- simplified model
def test_simplified_is_lumped_mass_model(tmp_path, form, states):
    """Eq. 50 and the inertial part of eq. 58 are the tree with 1/3 of each forearm on the plate and 2/3 at its
    elbow."""
    b = form.kin.model.config["bodies"]
    mab = b["forearm"]["mass"]
    plate = dict(b["plate"], mass=b["plate"]["mass"] + mab)
    elbow = dict(b["elbow"], mass=b["elbow"]["mass"] + 2 * mab / 3)
    forearm = dict(b["forearm"], mass=0.0, inertia=[0.0] * 6)
    lumped = build(tmp_path, {"plate": plate, "elbow": elbow, "forearm": forearm})
    lumped0 = lumped.with_gravity(ZERO)
    for pose, v, a in states[:100]:
        close(form.mass_matrix(pose, "simplified"), lumped.mass_matrix(pose))
        close(form.inverse_dynamics(pose, v, a, "simplified", gravity=ZERO),
              lumped0.inverse_dynamics(pose, v, a, friction=False).tau)


def test_simplification_error_is_reported(form):
    rep = simplification_error(100, np.random.default_rng(5), form)
    text = format_simplification_error(rep)
    print(text)
    assert rep["n_states"] == 100
    assert rep["tau_gravity"]["max"] < 1e-12                  # the gravity lumping is exact (sec. 4.6)
    # the inertial simplification is not exact, and the report says so
    assert 1e-3 < rep["mass_matrix"]["rms"] < 0.5
    assert 1e-3 < rep["tau_inertial"]["rms"] < 0.5
    assert rep["mass_matrix"]["max"] >= rep["mass_matrix"]["rms"]
    assert "eq. 50" in text and "eq. 58" in text


def test_simplified_mass_matrix_by_hand(form, states):
    """Eq. 50 written out: diag(I_m + L_A^2 (m_b/3 + m_c + 2/3 m_ab)) + (m_n + m_ab) J^T J, J from eq. 26-27 FD."""
    cfg = form.kin.model.config
    b, LA = cfg["bodies"], cfg["geometry"]["arm_length"]
    Ibt = b["rotor"]["inertia"][1] + LA ** 2 * (b["arm"]["mass"] / 3 + b["elbow"]["mass"]
                                                + 2 * b["forearm"]["mass"] / 3)
    mnt = b["plate"]["mass"] + b["forearm"]["mass"]
    kin, h = form.kin, 1e-6
    for pose, _, _ in states[:10]:
        q = kin.actuated(pose)
        J = np.column_stack([(kin.direct_geometric_model(q + h * e) - kin.direct_geometric_model(q - h * e)) / (2 * h)
                             for e in I3])
        np.testing.assert_allclose(form.joint_mass_matrix(pose, "simplified"), Ibt * I3 + mnt * J.T @ J, rtol=1e-7)


# ---------------------------------------------------------------- errors and immutability
def test_bad_input(form):
    pose = P([0.05, 0.02, -0.3])
    with pytest.raises(InvalidInputError, match="twist"):
        form.inverse_dynamics(pose, [0.1, 0.2], ZERO)
    with pytest.raises(InvalidInputError, match="acceleration"):
        form.inverse_dynamics(pose, ZERO, [np.nan, 0, 0])
    with pytest.raises(InvalidInputError):
        form.inverse_dynamics(Pose(np.array([np.nan, 0, -0.3]), I3), ZERO, ZERO)
    with pytest.raises(InvalidInputError, match="model"):
        form.mass_matrix(pose, model="approximate")
    with pytest.raises(InvalidInputError, match="friction"):
        form.inverse_dynamics(pose, ZERO, ZERO, friction=True)
    with pytest.raises(InvalidInputError, match="wrench"):
        form.inverse_dynamics(pose, ZERO, ZERO, wrench=[1.0, 2.0])
    with pytest.raises(UnreachablePoseError):
        form.inverse_dynamics(P([0, 0, -1.2]), ZERO, ZERO)
    with pytest.raises(AttributeError):
        form.m_n = 1.0
    with pytest.raises(ValueError):
        form.gravity[2] = 0.0


def test_singular_state_raises(form):
    """Arm 1 and its forearm aligned (s_1 . b_1 = 0, the stretched arm, as in test_delta)."""
    g = form.kin.model.config["geometry"]
    R, LA, LB = g["base_radius"] - g["plate_radius"], g["arm_length"], g["forearm_length"]
    q0 = np.radians(105.0)
    x = np.array([R + (LA + LB) * np.cos(q0), 0.0, -(LA + LB) * np.sin(q0)])
    with pytest.raises(SingularConfigurationError, match="leg1"):
        form.inverse_dynamics(P(x), ZERO, ZERO)
    with pytest.raises(SingularConfigurationError, match="leg1"):
        form.mass_matrix(P(x))


def test_config_outside_codoureys_assumptions_raises(tmp_path):
    b = robot_config("delta")["bodies"]
    m, LB = b["forearm"]["mass"], 0.5
    r = 0.01                                   # a solid cylinder instead of a bar: not Codourey's eq. 10-13
    cyl = dict(b["forearm"], inertia=[m * (3 * r ** 2 + LB ** 2) / 12] * 2 + [m * r ** 2 / 2, 0.0, 0.0, 0.0])
    with pytest.raises(InvalidModelError, match="forearm"):
        Formulation(build(tmp_path, {"forearm": cyl}))
    with pytest.raises(InvalidModelError, match="elbow"):
        Formulation(build(tmp_path, {"elbow": dict(b["elbow"], com=[0.0, 0.0, 0.02])}))
    with pytest.raises(InvalidModelError, match="(?i)delta only"):
        Formulation(robot_dynamics("lopes"))


# ---------------------------------------------------------------- reproduction (pkm reproduce delta-mass-matrix)
def test_reproduction(tmp_path, dyn):
    import csv
    from pkm_control.benchmarks.reproduce.delta_mass_matrix import run
    s = run(tmp_path, progress=False)
    for f in s["files"]:
        assert (tmp_path / f).stat().st_size > 0
    assert s["slices"]["z230"]["reachable_fraction"] == 1.0 and s["slices"]["z350"]["reachable_fraction"] == 1.0
    with open(tmp_path / "delta_mass_matrix.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 2 * 26 * 26
    # a CSV entry against the engine's joint-space M_q (Taghirad's J^-T M J^-1), and its diagonal ratios
    A11 = {}
    for r in rows:
        if r["z_mm"] == "-230.0":
            A11[(float(r["x_mm"]), float(r["y_mm"]))] = float(r["full_A11"])
    r = next(r for r in rows if r["z_mm"] == "-350.0" and r["x_mm"] == "-250.0" and r["y_mm"] == "90.0")
    Mq = dyn.joint_space(P([-0.25, 0.09, -0.35]), ZERO)[0]
    close(np.array([float(r[f"full_A{i}{j}"]) for i in (1, 2, 3) for j in (1, 2, 3)]), Mq.ravel())
    ratio = max(A11.values()) / min(A11.values())
    assert s["slices"]["z230"]["full eq. 47"]["diag_ratio_max_min"][0] == pytest.approx(ratio, rel=1e-12)
    assert 1.5 < ratio < 3.0                                   # the paper: "about 2"
    assert s["more_variation_at_upper_slice"]                  # the paper: more variation at z = -230 mm
    assert s["simplification_error"]["tau_gravity"]["max"] < 1e-12


def test_mass_matrix_figure_axes_in_mm_each_panel_on_its_own_scale():
    import matplotlib.pyplot as plt

    from pkm_control.benchmarks.reproduce.delta_mass_matrix import matrix_figure
    g = np.linspace(-250.0, 250.0, 6)
    X, Y = np.meshgrid(g, g, indexing="ij")
    A = np.zeros((6, 6, 3, 3))
    A[..., 0, 0] = A[..., 1, 1] = A[..., 2, 2] = 0.05 + 1e-4 * X           # diagonal ~0.05 kg m^2
    A[..., 0, 1] = A[..., 1, 0] = 1e-3 + 1e-6 * Y                           # a coupling 50x smaller
    for surface in (True, False):
        fig = matrix_figure(A, g, "test", surface=surface)
        panels = [ax for ax in fig.axes if ax.get_title()]                  # the colorbars have no title
        assert [ax.get_title() for ax in panels] == [f"A{i}{j}" for i in (1, 2, 3) for j in (1, 2, 3)]
        for ax in panels:
            assert (ax.get_xlabel(), ax.get_ylabel()) == ("x [mm]", "y [mm]")
            assert ax.get_xlim()[0] <= -250.0 and ax.get_xlim()[1] >= 250.0      # mm, not sample numbers
        if surface:
            assert panels[0].get_zlabel() == "A11 [kg m$^2$]"
            lo, hi = panels[1].get_zlim()                                   # A12 on its own z scale
            assert lo > 0.5e-3 and hi < 1.5e-3
        else:
            assert panels[1].images[0].get_clim() == pytest.approx((1e-3 - 2.5e-4, 1e-3 + 2.5e-4))
        plt.close(fig)
