"""Abdellatif's Jourdain / virtual-power dynamics of PaLiDA (dynamics/jourdain.py).

Independent references: the generic engine (pinocchio RNEA on the URDF tree, projected by
virtual power), the engine's own regressor mapped into the MDH frames, hand-evaluated Table I
numbers from config/palida.yaml, and the compiled kernel against its pure-Python source.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.linalg

from pkm_control.dynamics import ClosedLoopDynamics, robot_dynamics
from pkm_control.dynamics.end_stops import EndStops
from pkm_control.dynamics.formulations import formulation
from pkm_control.dynamics.jourdain import (MDH_AXES, Formulation, _id_kernel, id_kernel_python,
                                           mdh_to_link_map)
from pkm_control.errors import (InvalidInputError, InvalidModelError, SingularConfigurationError,
                                UnreachablePoseError)
from pkm_control.kinematics.task_space import Pose, rpy_to_matrix
from pkm_control.kinematics.workspace import random_poses

N_STATES = 200


@pytest.fixture(scope="module")
def dyn():
    return robot_dynamics("palida")


@pytest.fixture(scope="module")
def form(dyn):
    return Formulation(dyn)


def _close(mine, ref):
    np.testing.assert_allclose(mine, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


@pytest.fixture(scope="module")
def states(dyn):
    """200 random (pose, twist, accel); every joint velocity away from zero (friction sign)."""
    rng = np.random.default_rng(20260)
    out = []
    poses = random_poses(dyn.kin, 2 * N_STATES, rng)
    for pose in poses:
        tw = np.r_[0.5 * rng.standard_normal(3), rng.standard_normal(3)]
        ac = np.r_[5.0 * rng.standard_normal(3), 10.0 * rng.standard_normal(3)]
        v = dyn.kin.inverse(pose, tw, ac).v
        passive = np.setdiff1d(np.arange(len(v)), dyn.model.platform_idx)
        if np.abs(v[passive]).min() > 1e-4:
            out.append((pose, tw, ac))
        if len(out) == N_STATES:
            return out
    raise AssertionError("not enough states with all joint velocities away from zero")


@pytest.fixture(scope="module")
def engine_tau(dyn, states):
    return [(dyn.inverse_dynamics(p, t, a, friction=False).tau, dyn.inverse_dynamics(p, t, a, friction=True).tau)
            for p, t, a in states]


# ---------------------------------------------------------------------------- agreement with the engine
def test_registered(dyn):
    assert isinstance(formulation("jourdain", dyn), Formulation)
    with pytest.raises(InvalidModelError):
        Formulation(robot_dynamics("stewart"))


def test_inverse_dynamics_vs_engine(form, states, engine_tau):
    """Reference path (eq. 14, 13, 12), with and without friction, 200 states."""
    worst = 0.0
    for (p, t, a), (ref0, ref1) in zip(states, engine_tau):
        for fric, ref in ((False, ref0), (True, ref1)):
            mine = form.inverse_dynamics_reference(p, t, a, friction=fric)
            _close(mine, ref)
            worst = max(worst, np.abs(mine - ref).max() / np.abs(ref).max())
    print(f"jourdain reference vs engine: max rel. error {worst:.2e}")


def test_fast_and_batch_vs_engine(form, states, engine_tau):
    """Compiled base-parameter kernel, single and batched, vs the engine (200 states)."""
    P = np.array([s[0].position for s in states])
    R = np.array([s[0].rotation for s in states])
    T = np.array([s[1] for s in states])
    A = np.array([s[2] for s in states])
    for fric in (False, True):
        ref = np.array([e[int(fric)] for e in engine_tau])
        batch, valid = form.inverse_dynamics_batch(P, R, T, A, friction=fric, return_valid=True)
        assert valid.all()
        for k, (p, t, a) in enumerate(states):
            _close(form.inverse_dynamics(p, t, a, friction=fric), ref[k])
            _close(batch[k], ref[k])


def test_gravity_off(dyn, states):
    form0 = Formulation(dyn, gravity=np.zeros(3))
    dyn0 = dyn.with_gravity(np.zeros(3))
    for p, t, a in states[:20]:
        ref = dyn0.inverse_dynamics(p, t, a, friction=True).tau
        _close(form0.inverse_dynamics_reference(p, t, a), ref)
        _close(form0.inverse_dynamics(p, t, a), ref)
    # static, no gravity, no friction: nothing to balance
    p = states[0][0]
    assert np.abs(form0.inverse_dynamics(p, np.zeros(6), np.zeros(6), friction=False)).max() < 1e-12


def test_mass_matrix_and_gravity_vs_engine(dyn, form, states):
    for p, _, _ in states[:30]:
        M = form.mass_matrix(p)
        ref = dyn.mass_matrix(p)
        _close(M, ref)
        _close(form.mass_matrix_reference(p), ref)
        assert np.allclose(M, M.T, atol=1e-12) and np.linalg.eigvalsh(M).min() > 0
        _close(form.gravity_vector(p), dyn.gravity_vector(p))


def test_check_limits_off(dyn, form):
    """Outside the joint limits but reachable: raises by default, matches the engine without limits."""
    rng = np.random.default_rng(5)
    lo, hi = (np.array(v, float) for v in (dyn.model.config["workspace"]["lower"],
                                           dyn.model.config["workspace"]["upper"]))
    found = 0
    while found < 5:
        x = lo - 0.6 * (hi - lo) + 2.2 * (hi - lo) * rng.random(6)
        pose = dyn.kin.task.pose(x)
        try:
            dyn.kin.inverse(pose)
            continue
        except UnreachablePoseError:
            pass
        try:
            dyn.kin.inverse(pose, check_limits=False)
        except UnreachablePoseError:
            continue
        s = np.linalg.svd(dyn.kin.jacobian(pose), compute_uv=False)
        if s[-1] < 1e-3 * s[0]:
            continue
        found += 1
        t, a = rng.standard_normal(6), 5 * rng.standard_normal(6)
        with pytest.raises(UnreachablePoseError):
            form.inverse_dynamics(pose, t, a)
        ref = dyn.inverse_dynamics(pose, t, a).tau
        _close(form.inverse_dynamics(pose, t, a, check_limits=False), ref)
        _close(form.inverse_dynamics_reference(pose, t, a, check_limits=False), ref)
        out, valid = form.inverse_dynamics_batch(pose.position[None], pose.rotation[None], t[None], a[None],
                                                 return_valid=True)
        assert not valid[0]
        _close(form.inverse_dynamics_batch(pose.position[None], pose.rotation[None], t[None], a[None],
                                           check_limits=False)[0], ref)


def test_compiled_kernel_matches_python_source(form, states):
    for p, t, a in states[:10]:
        for fric in (False, True):
            o1, o2 = np.empty(6), np.empty(6)
            args = (p.position, p.rotation, t, a, form._geo, form._cos_cone, form._kparams, form.gravity,
                    form.friction_values, fric, 0.0, True)
            assert id_kernel_python(*args, o1) == 0
            assert _id_kernel is id_kernel_python
            from pkm_control.dynamics import jourdain
            assert jourdain._KERNEL(*args, o2) == 0
            np.testing.assert_allclose(o2, o1, rtol=1e-12, atol=1e-12 * np.abs(o1).max())
            # the standard parameters (the fallback when Table I's assumptions fail) give the same forces
            o3 = np.empty(6)
            std = (*args[:6], form._kernel_parameters(), *args[7:])
            assert jourdain._KERNEL(*std, o3) == 0
            _close(o3, o1)


# ---------------------------------------------------------------------------- forward dynamics
@pytest.mark.parametrize("eps", [2e-3, 0.0])
def test_forward_dynamics_vs_engine(dyn, form, states, eps):
    """Compiled xddot = M^-1 (J^T tau - h) against the engine's forward dynamics with the same sign_eps
    (tanh(qdot / eps); eps = 0: sign), with and without friction, 200 states, 1e-10 relative. Half the
    states move slowly (joint rates ~ eps: the tanh far from +-1)."""
    engine = ClosedLoopDynamics(dyn.kin, sign_eps=eps)
    rng = np.random.default_rng(11)
    worst = {False: 0.0, True: 0.0}
    for k, (pose, twist, _) in enumerate(states):
        twist = twist * (1.0 if k % 2 or eps == 0.0 else 5e-3)
        tau = 300.0 * rng.standard_normal(6)
        for fric in (False, True):
            ref = engine.forward_dynamics(pose, twist, tau, friction=fric)
            mine = form.forward_dynamics(pose, twist, tau, friction=fric, sign_eps=eps)
            worst[fric] = max(worst[fric], np.abs(mine - ref).max() / np.abs(ref).max())
    print(f"compiled forward dynamics vs engine (eps {eps}): max rel. error {worst}")
    assert max(worst.values()) <= 1e-10
    if eps:         # the smoothing matters in the slow states: sign instead of tanh differs
        pose, twist, _ = states[0]
        slow = 5e-3 * twist
        assert np.abs(form.forward_dynamics(pose, slow, np.zeros(6), sign_eps=eps)
                      - form.forward_dynamics(pose, slow, np.zeros(6))).max() > 1.0


def test_compiled_forward_kernels_match_python_source(form, states):
    """_FD, _RK4 (with an external wrench, a contact) and _ACTUATED against their plain-Python source (numba
    semantics = Python's)."""
    from pkm_control.dynamics import jourdain, point_contact

    args = (form._geo_free, form._kparams, form.gravity, form.friction_values, True, 2e-3,
            form.end_stop_table(EndStops.from_config(form.dyn)))
    for k, (p, t, _) in enumerate(states[:5]):
        tau = np.linspace(-200.0, 300.0, 6)
        # a plane through the tool point (0.05 m below the platform) with a tilted normal: the tool 1 mm inside
        n = np.array([0.3, -0.2, 1.0]) / np.linalg.norm([0.3, -0.2, 1.0])
        tool = np.array([0.0, 0.0, -0.05])
        contact = (tool, point_contact.plane_row(1e6, 800.0, 0.3, 1e-3, p.position + p.rotation @ tool + 1e-3 * n,
                                                 n)[None, :], 1e5 if k % 2 else np.inf)
        o1, o2 = np.empty(6), np.empty(6)
        w = np.linspace(-40.0, 30.0, 6)
        assert jourdain._fd_kernel(p.position, p.rotation, t, tau, w, *args, o1) == 0
        assert jourdain._FD(p.position, p.rotation, t, tau, w, *args, o2) == 0
        np.testing.assert_allclose(o2, o1, rtol=1e-12, atol=1e-12 * np.abs(o1).max())
        c = form.kin.task.platform_joint_motion(p)[0]
        outs = [np.empty(6) for _ in range(4)]
        assert jourdain._rk4_kernel(c, t, 5e-4, tau, *args, *contact, *outs[:2]) == 0
        assert jourdain._RK4(c, t, 5e-4, tau, *args, *contact, *outs[2:]) == 0
        np.testing.assert_allclose(outs[2], outs[0], rtol=0, atol=1e-14)
        np.testing.assert_allclose(outs[3], outs[1], rtol=0, atol=1e-12)
        assert jourdain._actuated_kernel(c, t, form._geo_free, *outs[:2]) == 0
        assert jourdain._ACTUATED(c, t, form._geo_free, *outs[2:]) == 0
        np.testing.assert_allclose(outs[2:], outs[:2], rtol=0, atol=1e-14)


def test_forward_dynamics_bad_input(form, dyn):
    home = dyn.kin.task.pose(dyn.model.config["home"])
    z = np.zeros(6)
    for args, kwargs in (((home, None, z), {}), ((home, z, z[:5]), {}), ((home, z, [np.nan] + [0.0] * 5), {}),
                         ((home, z, z), {"sign_eps": -1e-3}), ((home, z, z), {"sign_eps": np.inf})):
        with pytest.raises(InvalidInputError):
            form.forward_dynamics(*args, **kwargs)
    with pytest.raises(UnreachablePoseError):       # the strut through its universal joint's gimbal lock
        A = form._A[0]
        form.forward_dynamics(Pose(A - home.rotation @ form._Bp[0] + [0.0, 0.0, 1e-12], home.rotation), z, z)


# ---------------------------------------------------------------------------- parameter-linear form
def test_regressor_times_parameters(form, states, engine_tau):
    """(a) Y p == inverse dynamics; per-leg columns sum to the shared ones."""
    names, p = form.parameters()
    assert len(names) == 54 and names[:3] == ("I_xx1", "I_xy1", "I_xz1") and names[39] == "m_E"
    for (pose, t, a), (ref0, ref1) in list(zip(states, engine_tau))[:50]:
        Y = form.regressor(pose, t, a)
        _close(Y @ p, ref1)
        _close(form.regressor(pose, t, a, friction=False) @ p, ref0)
    Yl = form.regressor(pose, t, a, per_leg=True)
    assert Yl.shape == (6, 204)
    np.testing.assert_allclose(Yl[:, :180].reshape(6, 6, 30).sum(axis=1), Y[:, :30], atol=1e-12 * np.abs(Y).max())


def test_regressor_columns_vs_engine_regressor(dyn, form, states):
    """Every column of Y equals the engine's URDF-frame regressor mapped into the MDH frames:
    Y_b = sum_legs Y_engine[leg_b] T_b (T_b: MDH parameters -> link-frame parameters)."""
    names, _ = dyn.parameters()
    idx = {n: i for i, n in enumerate(names)}
    links = {"1": "ring", "2": "cylinder", "3": "piston"}
    keys = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
    for pose, t, a in states[:15]:
        Ye = dyn.actuator_regressor(pose, t, a)
        Y = form.regressor(pose, t, a)
        for k, b in enumerate("123"):
            mapped = sum(Ye[:, [idx[f"leg{j}_{links[b]}.{q}"] for q in keys]] for j in range(1, 7)) \
                @ mdh_to_link_map(MDH_AXES[b])
            np.testing.assert_allclose(Y[:, 10 * k:10 * k + 10], mapped, atol=1e-9 * np.abs(Ye).max())
        mapped = Ye[:, [idx[f"platform.{q}"] for q in keys]] @ mdh_to_link_map(np.eye(3))
        np.testing.assert_allclose(Y[:, 30:40], mapped, atol=1e-9 * np.abs(Ye).max())
        np.testing.assert_allclose(Y[:, 40:], Ye[:, -14:], atol=1e-9 * np.abs(Ye).max())


def test_table_i_values_from_config(form, dyn):
    """Table I evaluated by hand from config/palida.yaml (frames: module docstring)."""
    cfg = dyn.model.config
    ring, cyl, pis = (cfg["legs"][k]["inertial"] for k in ("ring", "cylinder", "piston"))
    m2, c2 = cyl["mass"], cyl["com"][2]          # stator com on -z_U (down the strut)
    m3, c3 = pis["mass"], pis["com"][2]          # slider com on +z_U (back up the strut from B)
    ixx2, iyy2, izz2 = cyl["inertia"][:3]
    ixx3, iyy3, izz3 = pis["inertia"][:3]
    # about the frame origins: Steiner along z_U
    XX2, YY2, ZZ2 = iyy2 + m2 * c2 ** 2, izz2, ixx2 + m2 * c2 ** 2     # x2 = -y_U, y2 = -z_U, z2 = x_U
    XX3, YY3, ZZ3 = iyy3 + m3 * c3 ** 2, ixx3 + m3 * c3 ** 2, izz3     # x3 = -y_U, y3 = -x_U, z3 = -z_U
    ZZ1 = ring["inertia"][1]                                           # z1 = -y_U, com at A
    pl = cfg["platform"]["inertial"]
    mE, cE = pl["mass"], np.array(pl["com"])
    B = np.array(cfg["platform"]["anchors"])
    IE = np.array(pl["inertia"][:3]) + mE * (cE @ cE - cE ** 2)
    expect = [ZZ1 + YY2 + ZZ3, XX2 + XX3 - YY2 - ZZ3, ZZ2 + YY3, -m2 * c2, -m3 * c3,
              IE[0] + m3 * np.sum(B[:, 1] ** 2 + B[:, 2] ** 2), IE[1] + m3 * np.sum(B[:, 0] ** 2 + B[:, 2] ** 2),
              IE[2] + m3 * np.sum(B[:, 0] ** 2 + B[:, 1] ** 2), mE * cE[2] + m3 * B[:, 2].sum(), mE + 6 * m3]
    names, formulas, values = form.base_parameters()
    assert len(names) == 24 and formulas[0] == "I_zz1 + I_yy2 + I_zz3"
    np.testing.assert_allclose(values[:10], expect, rtol=1e-12)
    fr = cfg["friction"]
    np.testing.assert_array_equal(values[10:], list(fr["prismatic"]["coulomb"]) + list(fr["prismatic"]["viscous"])
                                  + [fr["alpha"]["coulomb"], fr["beta"]["coulomb"]])
    assert form.table_i_exact and max(form.assumption_residuals.values()) < 1e-11
    # the config's numbers (representative values, sources: in config/palida.yaml)
    np.testing.assert_allclose(values[:10], [0.0088, 0.6877166666670, 0.6956166666670, 1.2, -0.7,
                                             0.3688, 0.3688, 0.73, -0.16, 20.0], rtol=1e-9)


def test_base_regressor(form, states, engine_tau):
    """(b) Y_base p_base (Table I from the config) == inverse dynamics."""
    _, _, pb = form.base_parameters()
    for (pose, t, a), (_, ref1) in list(zip(states, engine_tau))[:50]:
        Yb = form.base_regressor(pose, t, a)
        assert Yb.shape == (6, 24)
        _close(Yb @ pb, ref1)


def test_qr_rank_and_table_i_groupings(form, states):
    """(c) QR with column pivoting (Gautier & Khalil) over 100 states: rank 24 = 10 + 14 for the
    parameters the paper's assumptions leave free, and the dependent columns are exactly Table I's
    groupings (coefficients from the printed formulas)."""
    names, _ = form.parameters()
    free = ["I_zz1", "I_xx2", "I_yy2", "I_zz2", "s_y2", "I_xx3", "I_yy3", "I_zz3", "s_z3", "m_3",
            "I_xxE", "I_yyE", "I_zzE", "s_zE", "m_E"] + list(names[40:])
    # parameters with a structurally zero column whatever their value (fixed axis / fixed point)
    zero = ["I_xx1", "I_xy1", "I_xz1", "I_yy1", "I_yz1", "s_z1", "m_1", "m_2"]
    cols = [names.index(n) for n in free]
    Ys = [form.regressor(p, t, a) for p, t, a in states[:100]]
    W = np.vstack(Ys)
    assert np.abs(W[:, [names.index(n) for n in zero]]).max() < 1e-10 * np.abs(W).max()
    Wf = W[:, cols]
    Wn = Wf / np.linalg.norm(Wf, axis=0)
    _, Rq, _ = scipy.linalg.qr(Wn, mode="economic", pivoting=True)
    d = np.abs(np.diag(Rq))
    rank = int(np.sum(d > 1e-8 * d[0]))
    assert rank == 24
    assert d[23] > 1e-6 * d[0]          # a clear gap, not a tolerance artefact
    # dependencies predicted by Table I
    c = {n: W[:, names.index(n)] for n in free}
    B = form._Bp
    sc = np.abs(W).max()
    np.testing.assert_allclose(c["I_yy2"], c["I_zz1"] - c["I_xx2"], atol=1e-9 * sc)
    np.testing.assert_allclose(c["I_zz3"], c["I_zz1"] - c["I_xx2"], atol=1e-9 * sc)
    np.testing.assert_allclose(c["I_xx3"], c["I_xx2"], atol=1e-9 * sc)
    np.testing.assert_allclose(c["I_yy3"], c["I_zz2"], atol=1e-9 * sc)
    m3col = (np.sum(B[:, 1] ** 2 + B[:, 2] ** 2) * c["I_xxE"] + np.sum(B[:, 0] ** 2 + B[:, 2] ** 2) * c["I_yyE"]
             + np.sum(B[:, 0] ** 2 + B[:, 1] ** 2) * c["I_zzE"] + B[:, 2].sum() * c["s_zE"] + 6 * c["m_E"])
    np.testing.assert_allclose(c["m_3"], m3col, atol=1e-9 * sc)
    # the 24 base columns alone have full rank
    Wb = np.vstack([form.base_regressor(p, t, a) for p, t, a in states[:100]])
    assert np.linalg.matrix_rank(Wb / np.linalg.norm(Wb, axis=0), tol=1e-8) == 24


# ---------------------------------------------------------------------------- errors
def test_bad_input(form, dyn):
    home = dyn.kin.task.pose(dyn.model.config["home"])
    z = np.zeros(6)
    for fn in (form.inverse_dynamics, form.inverse_dynamics_reference):
        with pytest.raises(InvalidInputError, match="twist"):
            fn(home, np.r_[np.nan, z[1:]], z)
        with pytest.raises(InvalidInputError, match="twist"):
            fn(home, np.zeros(5), z)
        with pytest.raises(InvalidInputError, match="acceleration"):
            fn(home, z, np.r_[z[1:], np.inf])
        with pytest.raises(InvalidInputError, match="rotation"):
            fn(Pose(home.position, 2 * home.rotation), z, z)
        with pytest.raises(UnreachablePoseError):                 # far below the stroke
            fn(Pose(np.array([0.0, 0.0, -3.0]), np.eye(3)), z, z)
        with pytest.raises(UnreachablePoseError):                 # joint limit (yaw 90 deg)
            fn(Pose(home.position, rpy_to_matrix(0, 0, math.pi / 2)), z, z)
    with pytest.raises(InvalidInputError, match="positions"):
        form.inverse_dynamics_batch(np.zeros((3, 2)), np.zeros((3, 3, 3)), np.zeros((3, 6)), np.zeros((3, 6)))
    with pytest.raises(InvalidInputError, match="twists"):
        form.inverse_dynamics_batch(np.zeros((2, 3)), np.stack([np.eye(3)] * 2), np.full((2, 6), np.nan),
                                    np.zeros((2, 6)))
    with pytest.raises(InvalidInputError, match="rotations"):
        form.inverse_dynamics_batch(np.zeros((2, 3)), np.zeros((2, 3, 3)), np.zeros((2, 6)), np.zeros((2, 6)))
    # batch: an unreachable row is NaN, the others are computed
    P = np.array([home.position, [0.0, 0.0, -3.0]])
    out, valid = form.inverse_dynamics_batch(P, np.stack([np.eye(3)] * 2), np.zeros((2, 6)), np.zeros((2, 6)),
                                             return_valid=True)
    assert valid.tolist() == [True, False] and np.isnan(out[1]).all()
    _close(out[0], dyn.inverse_dynamics(home, z, z).tau)


def test_singular_configuration(form, dyn):
    """Fichter's singularity (home turned 90 deg about z), with the limits lifted: both paths raise."""
    home = np.array(dyn.model.config["home"], float)
    pose = dyn.kin.task.pose(np.r_[home[:5], math.pi / 2])
    J = dyn.kin.jacobian(pose)
    with pytest.raises(SingularConfigurationError, match="singular"):
        form._solve(J, np.ones(6))
    geo = form._geo.copy()
    geo[:, 18:24] = [-10, 10, -10, 10, 0, 10]
    out = np.empty(6)
    status = id_kernel_python(pose.position, pose.rotation, np.zeros(6), np.zeros(6), geo, -1.0, form._kparams,
                              form.gravity, form.friction_values, True, 0.0, True, out)
    assert status == 3


# ---------------------------------------------------------------------------- reproduction
def test_reproduction_table_i(tmp_path):
    """`pkm reproduce palida-base-parameters`: from the engine's regressor, rank 24 and Table I."""
    from pkm_control.benchmarks.reproduce.palida_base_parameters import run

    s = run(tmp_path, progress=False)
    assert s["rank_table_i_assumptions"] == 24 and s["all_agree"] and s["max_coef_diff"] < 1e-9
    assert s["rank_all_parameters"] > 24           # the assumptions are what brings it down to 24
    assert s["base_model_vs_engine_rel"] < 1e-9
    for f in ("palida_base_parameters.csv", "palida_base_parameters.md", "palida_base_parameters.png",
              "palida_qr_diagonal.csv"):
        assert (tmp_path / f).stat().st_size > 0
