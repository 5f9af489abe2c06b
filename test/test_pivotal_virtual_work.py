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


@pytest.fixture(scope="module")
def reproduction(tmp_path_factory):
    from pkm_control.benchmarks.reproduce import planar_redundant as rep
    out_dir = tmp_path_factory.mktemp("planar_redundant")
    return rep, out_dir, rep.run(out_dir, progress=False)


def test_reproduction_planar_redundant(reproduction):
    rep, tmp_path, out = reproduction
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


def test_sensitivity_summary_and_shipped_ratio_from_the_engine(reproduction):
    """The study's F1/F2 measures for the shipped inputs, recomputed here from the generic engine on a
    trajectory built here (trapezoidal profile, duration and samples from the summary)."""
    from pkm_control.trajectory.profiles import trapezoidal
    rep, tmp_path, out = reproduction
    sens = out["sensitivity"]
    for key in ("thresholds", "samples_per_motion", "baseline", "baseline_engine", "identity", "sweeps", "readings",
                "joint_search", "why"):
        assert key in sens, key
    for name in ("link_izz_factor", "strut_izz_factor", "platform_izz_factor", "link_com_m", "platform_com_m",
                 "duration_s", "ramp_fraction", "column_offset_m_column1_left", "column_offset_m_column1_right"):
        sw = sens["sweeps"][name]
        assert len(sw["values"]) == len(sw["ratio_r"]) == len(sw["diff_r"]) == len(sw["ratio_n"]) > 3
    assert set(out["paper_observations"]) >= {"redundant_F1_close_to_F2", "nonredundant_F1_much_bigger_than_F2"}
    T, n = out["motion"]["duration_s"], sens["samples_per_motion"]
    t = np.linspace(0.0, T, n)
    s, ds, dds = trapezoidal(t, T, T / 4)
    x0, x1 = np.array([0.3, 3.2, math.pi / 3]), np.array([0.9, 2.3, 0.0])      # Wu sec. 5
    mine = {}
    for variant, tag in (("redundant", "r"), ("nonredundant", "n")):
        dyn = robot_dynamics("planar_redundant", variant)
        i1, i2 = (dyn.model.actuated_joints.index(f"slider{i}") for i in (1, 2))
        tau = np.array([dyn.inverse_dynamics(_pose(*(x0 + si * (x1 - x0))), dsi * (x1 - x0), ddsi * (x1 - x0),
                                             friction=False).tau for si, dsi, ddsi in zip(s, ds, dds)])
        f1, f2 = tau[:, i1], tau[:, i2]
        rms = lambda v: math.sqrt(np.mean(v ** 2))                                 # noqa: E731
        mine[f"ratio_{tag}"] = rms(f1) / rms(f2)
        if tag == "r":
            r12 = math.sqrt(0.5 * (rms(f1) ** 2 + rms(f2) ** 2))
            mine["diff_r"], mine["sum_r"] = rms(f1 - f2) / r12, rms(f1 + f2) / r12
    assert set(mine) == set(sens["baseline"])
    for k, v in mine.items():
        assert abs(sens["baseline"][k] - v) < 1e-9 * abs(v), (k, sens["baseline"][k], v)
        assert abs(sens["baseline_engine"][k] - v) < 1e-9 * abs(v)
    assert out["paper_observations"]["nonredundant_F1_much_bigger_than_F2"]["ratio_n"] == sens["baseline"]["ratio_n"]


def test_sensitivity_findings(reproduction):
    """The study's answer, as numbers: what would make any of these fail changes the README's answer."""
    from pkm_control.benchmarks.reproduce.planar_redundant_sensitivity import DIFF_MAX, RATIO_MIN
    _, _, out = reproduction
    sens = out["sensitivity"]
    b, rd, js = sens["baseline"], sens["readings"], sens["joint_search"]["readings"]
    # shipped: F2 dominates in both robots (slider 2 travels 1.27 m, slider 1 0.53 m)
    assert b["ratio_r"] < 0.5 and b["ratio_n"] < 0.5 and b["diff_r"] > 1.0
    # gravity alone: F1 = -F2 in the redundant robot (Table 2's counterweights balance the weight)
    assert abs(rd["gravity only (quasi-static)"]["diff_r"] - 2.0) < 1e-9
    # sliders carrying the weight: observation 1 but not 2
    cw = rd["counterweights move with sliders"]
    assert cw["diff_r"] < DIFF_MAX + 0.05 and cw["ratio_n"] < 1.0
    assert js["counterweights move with sliders"]["eq21_signs"]["fraction_obs1"] > 0.1
    # F1 >> F2 only with column 1 on the right in fast motions, and then in both robots alike
    right = sens["sweeps"]["column_offset_m_column1_right"]
    i0 = right["values"].index(0.0)
    assert right["ratio_r"][i0] > RATIO_MIN and right["ratio_n"][i0] > RATIO_MIN
    am = js["as modelled"]
    assert am["obs2_column1"] == ["right"] and am["obs2_max_duration_s"] <= 3.0 and am["min_ratio_r_where_obs2"] > 1.0
    # F2 sign flipped: observation 1 at rest, observation 2 never with it in the box
    assert am["F2_sign_flipped"]["fraction_obs1"] > 0.1 and am["F2_sign_flipped"]["max_ratio_n_where_obs1"] < RATIO_MIN
    # inertias up to 1000 x: both ratios stay below 1
    for name in ("link_izz_factor", "strut_izz_factor", "platform_izz_factor"):
        assert max(sens["sweeps"][name]["ratio_n"]) < 1.0 and max(sens["sweeps"][name]["ratio_r"]) < 1.0
    # nowhere in the plausible box both observations
    for name, j in js.items():
        assert j["eq21_signs"]["fraction_both"] == 0.0 and j["F2_sign_flipped"]["fraction_both"] == 0.0, name
    assert len(sens["why"]) >= 5


def test_slider_forces_sum_is_the_vertical_generalized_force(case):
    """Eq. 21-22: the Y column of J is 1 for the sliders and 0 for the struts, so F1 + F2 = (Omega p)_Y."""
    variant, dyn, F = case
    poses, tw, ac = _states(dyn.kin, 30, 15)
    i1, i2 = (F.actuated_joints.index(f"slider{i}") for i in (1, 2))
    for pose, t, a in zip(poses, tw, ac):
        J = F.jacobian(pose)
        col = np.zeros(F.n_actuated)
        col[[i1, i2]] = 1.0
        np.testing.assert_allclose(J[:, 1], col, atol=1e-12)
        tau = dyn.inverse_dynamics(pose, t, a, friction=False).tau
        f = F.generalized_force(pose, t, a)
        assert abs(tau[i1] + tau[i2] - f[1]) < 1e-9 * np.abs(f).max()


def test_sensitivity_column_placement_paths():
    """Study.path maps Wu's motion on columns at (c0, c0 + d) or (c0 + d, c0) to the shipped model; the slider
    positions there equal eq. 20a-b written with those columns, and the linear maps at another duration equal
    the formulation's own inverse dynamics."""
    from pkm_control.benchmarks.reproduce.planar_redundant_sensitivity import Motion, Study
    from pkm_control.trajectory.profiles import trapezoidal
    dyn = robot_dynamics("planar_redundant", "redundant")
    F = Formulation(dyn)
    x0, x1 = np.array([0.3, 3.2, math.pi / 3]), np.array([0.9, 2.3, 0.0])             # Wu sec. 5
    st = Study({"redundant": F}, x0, x1, n=21)
    link, l5, d = 1.2, 0.25, 1.2                                                      # Table 1: l, l5, d
    W = x0 + np.outer(trapezoidal(np.linspace(0.0, 1.0, 21), 1.0, 0.25)[0], x1 - x0)  # Wu's frame
    T = 3.7
    for c0, side in ((0.0, "left"), (0.2, "left"), (-0.1, "right"), (0.25, "right")):
        motion = Motion(0.25, c0, side)
        X, Xd, Xdd = st.path(motion)
        cols = (c0, c0 + d) if side == "left" else (c0 + d, c0)
        for xm, xw in zip(X, W):
            q = dyn.kin.actuated(_pose(*xm))[:2]
            ref = [xw[1] - l5 - math.sqrt(link ** 2 - (xw[0] - c) ** 2) for c in cols]     # eq. 20a-b, '-' root
            np.testing.assert_allclose(q, ref, atol=1e-12)
            assert xm[2] == (xw[2] if side == "left" else -xw[2])
        f = st.forces(motion, st.params("redundant")[:, None], T, "redundant")[:, :, 0]
        for k in (3, 10, 17):
            tau = F.inverse_dynamics(_pose(*X[k]), Xd[k] / T, Xdd[k] / T ** 2)
            np.testing.assert_allclose(f[k], tau[:2], rtol=1e-10, atol=1e-9)


def test_config_sources_state_the_numbers_used():
    """sources.limits / sources.workspace in config/planar_redundant.yaml quote the limits and the box used."""
    import re
    from pkm_control.description.robots import robot_config
    cfg = robot_config("planar_redundant")
    src = cfg["sources"]
    ranges = {(float(a), float(b)) for a, b in re.findall(r"(-?[0-9.]+)-([0-9.]+) m\b", src["limits"])}
    for key in ("slider", "strut", "counterweight"):
        assert tuple(cfg["limits"][key]) in ranges, key
    assert f"+-{math.degrees(cfg['limits']['link_beta'][1]):.0f} deg" in src["limits"]
    boxes = [(float(a), float(b)) for a, b in re.findall(r"in \[(-?[0-9.]+), (-?[0-9.]+)\]", src["workspace"])]
    assert boxes == list(zip(cfg["workspace"]["lower"], cfg["workspace"]["upper"]))


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
