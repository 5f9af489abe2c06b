"""Wu et al.'s pivotal-point virtual-work dynamics (planar_redundant) against independent numbers.

* the generic engine (pinocchio RNEA on the spanning tree + virtual power), 200 random states
  per variant: Omega p == J^T tau, the (weighted) minimum-norm tau, Omega column by column
  against the engine's standard-parameter regressor, M and G;
* Lagrange's equations with the kinetic and potential energy of the tree bodies (pinocchio,
  body by body) differentiated numerically;
* hand numbers from Wu's Table 2: the vertical gravity force and vertical inertia at rest;
* Wu's J (eq. 21-25) against finite differences of eq. 20 written out here.
"""

import math

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.formulations import formulation
from pkm_control.dynamics.pivotal_virtual_work import Formulation
from pkm_control.errors import InvalidInputError, InvalidModelError, UnreachablePoseError
from pkm_control.kinematics.task_space import Pose, rot_z
from pkm_control.kinematics.workspace import random_poses

VARIANTS = ("redundant", "nonredundant")
G0 = 9.81
# Wu Table 2 (kg)
M_N, M_SLIDER, M_LINK, M_UPPER, M_LOWER, M_CW = 150.0, 120.0, 220.0, 60.0, 20.0, 495.0


def _pose(x, y, alpha):
    """Wu's (x, y, alpha), alpha clockwise: R = Rz(-alpha)."""
    return Pose(np.array([x, y, 0.0]), rot_z(-alpha))


def _states(kin, n, seed):
    rng = np.random.default_rng(seed)
    poses = random_poses(kin, n, rng)
    tw = rng.normal(size=(n, 3)) * [0.5, 0.5, 1.0]
    ac = rng.normal(size=(n, 3)) * [5.0, 5.0, 10.0]
    return poses, tw, ac


@pytest.fixture(scope="module", params=VARIANTS)
def case(request):
    dyn = robot_dynamics("planar_redundant", request.param)
    return request.param, dyn, Formulation(dyn)


def _close(mine, ref, rtol=1e-9):
    np.testing.assert_allclose(mine, ref, rtol=rtol, atol=rtol * np.abs(ref).max())


def test_engine_agreement_200_states(case):
    variant, dyn, F = case
    poses, tw, ac = _states(dyn.kin, 200, 11)
    worst_f = worst_t = 0.0
    for pose, t, a in zip(poses, tw, ac):
        ref = dyn.inverse_dynamics(pose, t, a, friction=False)
        f = F.generalized_force(pose, t, a)
        tau = F.inverse_dynamics(pose, t, a)
        _close(f, ref.generalized)
        _close(tau, ref.tau)
        worst_f = max(worst_f, np.abs(f - ref.generalized).max() / np.abs(ref.generalized).max())
        worst_t = max(worst_t, np.abs(tau - ref.tau).max() / np.abs(ref.tau).max())
        # Omega p through the observation matrix itself (eq. 16)
        Om, names = F.observation_matrix(pose, t, a)
        _close(Om @ F.parameters(), ref.generalized)
        # J^T tau = Omega p
        _close(F.jacobian(pose).T @ tau, f)
    assert worst_f < 1e-12 and worst_t < 1e-12, (worst_f, worst_t)


def test_weighted_minimum_norm_and_gravity_switch(case):
    variant, dyn, F = case
    poses, tw, ac = _states(dyn.kin, 40, 12)
    rng = np.random.default_rng(3)
    dyn0 = dyn.with_gravity(np.zeros(3))
    for pose, t, a in zip(poses, tw, ac):
        _close(F.inverse_dynamics(pose, t, a, gravity=np.zeros(3)),
               dyn0.inverse_dynamics(pose, t, a, friction=False).tau)
        if not F.redundant:
            continue
        w = rng.uniform(0.2, 5.0, size=4)
        ref = dyn.inverse_dynamics(pose, t, a, friction=False, weights=w)
        tau = F.inverse_dynamics(pose, t, a, weights=w)
        _close(tau, ref.tau)
        # the same as a matrix, and a non-diagonal W: KKT of min tau^T W tau s.t. J^T tau = f
        _close(F.inverse_dynamics(pose, t, a, weights=np.diag(w)), ref.tau)
        A = rng.normal(size=(4, 4))
        W = A @ A.T + 4 * np.eye(4)
        tw_ = F.inverse_dynamics(pose, t, a, weights=W)
        J = F.jacobian(pose)
        _close(J.T @ tw_, ref.generalized)
        N = F.null_space(pose)
        assert abs(float(N[:, 0] @ W @ tw_)) < 1e-9 * np.abs(W @ tw_).max()


def test_observation_matrix_columns_equal_engine_regressor(case):
    """Omega's column of each of Wu's parameters equals the engine's regressor column of the
    same standard parameter (about the same link-frame origin); the engine's other columns
    (out-of-plane moments and inertias) do no work in the plane."""
    variant, dyn, F = case
    names, values = dyn.parameters()
    poses, tw, ac = _states(dyn.kin, 20, 13)
    for pose, t, a in zip(poses, tw, ac):
        Y = dyn.regressor(pose, t, a, friction=False)
        Om, mine = F.observation_matrix(pose, t, a)
        idx = [names.index(n) for n in mine]
        _close(Om, Y[:, idx])
        rest = np.setdiff1d(np.arange(Y.shape[1]), idx)
        assert np.abs(Y[:, rest]).max() <= 1e-12 * np.abs(Y).max()
    idx = [names.index(n) for n in F.parameter_names]
    _close(F.parameters(), values[idx], rtol=1e-15)


def test_mass_matrix_and_gravity_vector(case):
    variant, dyn, F = case
    poses, _, _ = _states(dyn.kin, 30, 14)
    for pose in poses:
        M = F.mass_matrix(pose)
        _close(M, dyn.mass_matrix(pose))
        _close(M, M.T, rtol=1e-12)
        assert np.linalg.eigvalsh(M).min() > 0
        _close(F.gravity_vector(pose), dyn.gravity_vector(pose))


def test_table2_hand_numbers(case):
    """Lift the platform rigidly (xdot = alphadot = 0): every part rises with y except the two
    counterweights (ratio -1). Gravity: Q_y = g (sum m - 2 m_cw); inertia M_yy = sum m + 2 m_cw."""
    variant, dyn, F = case
    n_struts = 2 if variant == "redundant" else 1
    moving = M_N + 2 * (M_SLIDER + M_LINK) + n_struts * (M_UPPER + M_LOWER)
    q_y = G0 * (moving - 2 * M_CW)          # redundant: exactly 0 (Wu's counterweights balance it)
    m_yy = moving + 2 * M_CW
    for X in ([0.6, 2.75, 0.0], [0.3, 3.2, math.pi / 3], [0.9, 2.3, 0.0], [0.45, 2.5, -0.5]):
        pose = _pose(*X)
        g = F.gravity_vector(pose)
        assert abs(g[1] - q_y) < 1e-9 * 2000 * G0, (X, g)
        f = F.generalized_force(pose, np.zeros(3), np.array([0.0, 1.0, 0.0]), gravity=np.zeros(3))
        assert abs(f[1] - m_yy) < 1e-9 * m_yy
        assert abs(F.mass_matrix(pose)[1, 1] - m_yy) < 1e-9 * m_yy
    # redundant: 4 driving forces at rest; nonredundant: sliders carry -784.8 N net
    assert (abs(q_y) < 1e-9) == (variant == "redundant")


def _energies(dyn, X, Xd):
    kin = dyn.kin
    m = kin.inverse(_pose(*X), np.asarray(Xd, float))
    model = dyn.pin_model
    data = model.createData()
    return pin.computeKineticEnergy(model, data, m.q, m.v), pin.computePotentialEnergy(model, data, m.q)


def test_lagrange_equations(case):
    """Q = d/dt dT/dxdot - dT/dx + dV/dx with T, V summed body by body (pinocchio), central
    differences; Q = Omega p."""
    variant, dyn, F = case
    poses, tw, ac = _states(dyn.kin, 8, 16)
    h = 1e-4

    def T(X, Xd):
        return _energies(dyn, X, Xd)[0]

    def dT_dxd(X, Xd):   # T is quadratic in Xd: central difference with a unit step is exact
        return np.array([(T(X, Xd + e) - T(X, Xd - e)) / 2.0 for e in np.eye(3)])

    for pose, t, a in zip(poses, tw, ac):
        X = dyn.kin.task.coordinates(pose)
        p_plus = dT_dxd(X + h * t + 0.5 * h * h * a, t + h * a)
        p_minus = dT_dxd(X - h * t + 0.5 * h * h * a, t - h * a)
        ddt = (p_plus - p_minus) / (2 * h)
        dTdx = np.array([(T(X + h * e, t) - T(X - h * e, t)) / (2 * h) for e in np.eye(3)])
        dVdx = np.array([(_energies(dyn, X + h * e, t)[1] - _energies(dyn, X - h * e, t)[1]) / (2 * h)
                         for e in np.eye(3)])
        Q = ddt - dTdx + dVdx
        f = F.generalized_force(pose, t, a)
        np.testing.assert_allclose(f, Q, rtol=1e-6, atol=1e-6 * np.abs(Q).max())


def test_wu_jacobian_eq20_finite_differences(case):
    variant, dyn, F = case
    l, l5, l6, d = 1.2, 0.25, 0.25, 1.2            # Wu Table 1; columns at X = 0 and d (config)
    cols = (0.0, d)
    struts = (1, 2) if variant == "redundant" else (2,)

    def act(X):
        x, y, al = X
        q = [y - l5 - math.sqrt(l * l - (x - c) ** 2) for c in cols]          # eq. 20a-b ('-' root)
        ls = [math.hypot(x - l6 * math.sin(al) - cols[s - 1], y - l6 * math.cos(al) - q[s - 1])
              for s in struts]                                                  # eq. 20c-d
        return np.array(q + ls)

    poses, _, _ = _states(dyn.kin, 20, 17)
    h = 1e-6
    for pose in poses:
        X = dyn.kin.task.coordinates(pose)
        Jfd = np.column_stack([(act(X + h * e) - act(X - h * e)) / (2 * h) for e in np.eye(3)])
        np.testing.assert_allclose(F.jacobian(pose), Jfd, rtol=1e-7, atol=1e-7)


def test_parameters_from_config(case):
    variant, dyn, F = case
    p = dict(zip(F.parameter_names, F.parameters()))
    assert p["slider1_body.m"] == M_SLIDER and p["counterweight2_body.m"] == M_CW and p["platform.m"] == M_N
    # link: com at s_i2 = l/2 = 0.6 m on its axis; I about D_i = Izz,com + m s^2
    assert p["link1.m"] == M_LINK and p["link1.my"] == pytest.approx(M_LINK * 0.6, rel=1e-15)
    assert p["link1.Izz"] == pytest.approx(26.664 + M_LINK * 0.36, rel=1e-15)
    assert p["platform.my"] == pytest.approx(-M_N * 0.125, rel=1e-15)
    assert ("strut1_upper.m" in p) == (variant == "redundant")
    assert "strut2_lower.Izz" in p
    assert len(p) == (32 if variant == "redundant" else 24)
    q = F.parameters()
    q[0] = -1.0
    assert F.parameters()[0] == M_SLIDER      # a copy: the formulation stays immutable


def test_registry_and_errors(case):
    variant, dyn, F = case
    assert isinstance(formulation("pivotal_virtual_work", dyn), Formulation)
    pose = _pose(0.6, 2.75, 0.0)
    z = np.zeros(3)
    with pytest.raises(InvalidInputError, match="twist"):
        F.inverse_dynamics(pose, [np.nan, 0, 0], z)
    with pytest.raises(InvalidInputError, match="acceleration"):
        F.inverse_dynamics(pose, z, [0.0, 1.0])
    with pytest.raises(InvalidInputError, match="position"):
        F.inverse_dynamics(Pose(np.array([np.nan, 2.75, 0]), np.eye(3)), z, z)
    with pytest.raises(UnreachablePoseError):
        F.inverse_dynamics(_pose(2.5, 2.75, 0.0), z, z)          # |x - x_D1| > l
    with pytest.raises(InvalidInputError, match="friction"):
        F.inverse_dynamics(pose, z, z, friction=True)
    with pytest.raises(InvalidInputError, match="weights"):
        F.inverse_dynamics(pose, z, z, weights=[1.0, -1.0, 1.0, 1.0][:F.n_actuated])
    with pytest.raises(InvalidModelError):
        Formulation("delta")


def test_trapezoidal_profile():
    from pkm_control.trajectory.profiles import trapezoidal
    T, ta = 2.0, 0.5
    t = np.linspace(0.0, T, 20001)
    s, ds, dds = trapezoidal(t, T, ta)
    v, a = 1.0 / (T - ta), 1.0 / ((T - ta) * ta)            # cruise rate and acceleration by hand
    assert s[0] == 0.0 and abs(s[-1] - 1.0) < 1e-15 and ds[0] == 0.0 and abs(ds[-1]) < 1e-12
    assert np.allclose(ds[(t > ta) & (t < T - ta)], v, rtol=0, atol=1e-15)
    assert np.allclose(dds[t < ta], a) and np.allclose(dds[t > T - ta], -a)
    # ds is the derivative of s, dds of ds (trapezoid rule on a fine grid)
    np.testing.assert_allclose(s[-1], np.trapezoid(ds, t), atol=1e-8)
    np.testing.assert_allclose(np.diff(s) / np.diff(t), 0.5 * (ds[1:] + ds[:-1]), atol=1e-9)
    assert trapezoidal(3.0, T, ta) == (1.0, 0.0, 0.0) and trapezoidal(-1.0, T, ta) == (0.0, 0.0, 0.0)
    with pytest.raises(InvalidInputError, match="ramp"):
        trapezoidal(0.5, T, 1.5)


def test_reproduction_planar_redundant(tmp_path):
    from pkm_control.reproduce import planar_redundant as rep
    out = rep.run(tmp_path, progress=False)
    for f in out["files"]:
        assert (tmp_path / f).stat().st_size > 0
    assert out["table1_mm"]["config"] == {"d": 1200.0, "l": 1200.0, "l5": 250.0, "l6": 250.0}
    assert out["table2_kg"]["config"]["m_i5 (counterweight)"] == M_CW
    m = out["motion"]
    assert m["duration_s"] > 0 and abs(m["accelerate_s"] - m["duration_s"] / 4) < 1e-12
    assert out["redundant"]["engine_max_rel_diff"] < 1e-9 and out["nonredundant"]["engine_max_rel_diff"] < 1e-9
    # quasi-static redundant robot: the counterweights balance the weight (Table 2), so F1 = -F2
    assert out["redundant"]["observation"]["static_max_abs_F1_plus_F2_N"] < 1e-6
    data = np.genfromtxt(tmp_path / "planar_redundant_forces.csv", delimiter=",", names=True)
    assert data.shape == (rep.N_SAMPLES,)
    np.testing.assert_allclose([data["x_m"][0], data["y_m"][0], data["alpha_rad"][0]], [0.3, 3.2, math.pi / 3])
    np.testing.assert_allclose([data["x_m"][-1], data["y_m"][-1], data["alpha_rad"][-1]], [0.9, 2.3, 0.0],
                               atol=1e-12)


def test_singular_jacobian_raises(case):
    from pkm_control.dynamics.pivotal_virtual_work import _solve3
    from pkm_control.errors import SingularConfigurationError
    variant, dyn, F = case
    assert _solve3([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]], [1.0, 2.0, 3.0]) is None
    np.testing.assert_allclose(_solve3([[2.0, 0, 0], [0, 4.0, 1.0], [0, 0, 1.0]], [2.0, 5.0, 1.0]), [1.0, 1.0, 1.0])
    J = np.zeros((F.n_actuated, 3))
    J[:, 0], J[:, 1] = 1.0, np.arange(F.n_actuated)          # rank 2: no force along alpha
    with pytest.raises(SingularConfigurationError, match="singular"):
        F._solve(J, np.ones(3), None)
