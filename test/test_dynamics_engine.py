"""The generic closed-loop dynamics engine on every robot and variant.

Each check compares two independent routes: projection by virtual power against
the Lagrange-multiplier tree equations, inverse against forward dynamics, the
regressor against the inverse dynamics, friction against the derivative of its
dissipation function (computed from pinocchio frame velocities), energy along
simulated motion.
"""

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import closure_jacobian
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.parameters import base_parameters, sample_states, share_across_legs
from pkm_control.dynamics.simulation import ReducedSimulator, constrained_forward_dynamics, simulate_constrained
from pkm_control.errors import InvalidInputError
from pkm_control.kinematics.workspace import workspace_box

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]
N_STATES = 200


@pytest.fixture(params=ROBOTS, ids=IDS, scope="module")
def dyn(request):
    return robot_dynamics(*request.param)


@pytest.fixture(scope="module")
def states(dyn):
    return sample_states(dyn, N_STATES, np.random.default_rng(11))


def rel(a, b):
    return np.abs(np.asarray(a) - np.asarray(b)).max() / max(np.abs(b).max(), 1e-12)


def test_forward_inverse_round_trip(dyn, states):
    """FD(pose, twist, ID(pose, twist, accel)) == accel, with friction and an external wrench."""
    rng = np.random.default_rng(1)
    worst = 0.0
    for pose, twist, accel in states:
        w = 10 * rng.standard_normal(6)
        tau = dyn.inverse_dynamics(pose, twist, accel, wrench=w).tau
        xdd = dyn.forward_dynamics(pose, twist, tau, wrench=w)
        worst = max(worst, np.abs(xdd - accel).max())
    assert worst <= 1e-8


def test_projection_agrees_with_lagrange_multipliers(dyn, states):
    """The tree with closure multipliers, driven by the ID forces, accelerates as the IK says.

    constrained_forward_dynamics solves [M K^T; K 0] (no projection, no analytic G);
    the IK acceleration a = G xddot + Gdot xdot is the analytic family's.
    """
    worst = 0.0
    for pose, twist, accel in states[:50]:
        res = dyn.inverse_dynamics(pose, twist, accel, friction=False)
        tau_tree = np.zeros(dyn.pin_model.nv)
        tau_tree[dyn.model.actuated_idx] = res.tau
        a, _ = constrained_forward_dynamics(dyn, res.q, res.v, tau_tree)
        worst = max(worst, rel(a, res.a))
    assert worst <= 1e-8


def test_closure_forces_balance_the_tree(dyn, states):
    """K^T lambda = tau_tree - S^T tau: solvable exactly only if tau is right (range(K^T) = null(G^T))."""
    for pose, twist, accel in states[:30]:
        res = dyn.inverse_dynamics(pose, twist, accel, closure_forces=True)
        d = dyn.pin_model.createData()
        rhs = pin.rnea(dyn.pin_model, d, res.q, res.v, res.a) + dyn.friction.torque(d, res.q, res.v)
        rhs[dyn.model.actuated_idx] -= res.tau
        K = closure_jacobian(dyn.model, d, res.q)
        assert rel(K.T @ res.closure_forces, rhs) <= 1e-9


def test_regressor_and_base_parameters(dyn, states):
    names, p = dyn.parameters()
    assert len(names) == len(p) and len(set(names)) == len(names)
    bp = base_parameters(dyn, 40, np.random.default_rng(2), group=share_across_legs)
    for pose, twist, accel in states[:40]:
        omega = dyn.regressor(pose, twist, accel)
        res = dyn.inverse_dynamics(pose, twist, accel)
        assert rel(omega @ p, res.generalized) <= 1e-9
        assert rel(bp.reduce(omega) @ bp.base_values, res.generalized) <= 1e-9
        if not dyn.redundant:
            assert rel(dyn.actuator_regressor(pose, twist, accel) @ p, res.tau) <= 1e-9
    assert 0 < bp.rank < len(bp.names)


def test_friction_is_the_gradient_of_its_dissipation(dyn, states):
    """Generalized friction force = d/dxdot of sum(r1 |qdot| + r2 qdot^2 / 2) over tree joints and
    cut joints, the cut-joint rates taken from pinocchio frame velocities (central differences)."""
    if not len(dyn.friction):
        pytest.skip("robot has no friction parameters")
    clm, m = dyn.model, dyn.pin_model
    d = m.createData()
    spec = clm.config["friction"]
    from pkm_control.dynamics.friction import joint_role

    platform = set(clm.platform_idx.tolist())
    roles = {}
    for j, name in enumerate(clm.joint_names):
        if j not in platform:
            roles.setdefault(joint_role(name), []).append(j)
    r1, r2 = np.zeros(m.nv), np.zeros(m.nv)
    for role, members in roles.items():
        if role in spec:
            r1[members] = np.broadcast_to(np.asarray(spec[role].get("coulomb", 0.0), float), (len(members),))
            r2[members] = np.broadcast_to(np.asarray(spec[role].get("viscous", 0.0), float), (len(members),))
    cut = spec.get("cut_joints", {})

    def dissipation(pose, xdot):
        q, v, _, _ = dyn.state(pose, xdot)
        total = float(r1 @ np.abs(v) + 0.5 * r2 @ v ** 2)
        pin.forwardKinematics(m, d, q, v)
        pin.updateFramePlacements(m, d)
        for cl in clm.closures:
            if cut and cl.type == "point":
                wa, wb = (pin.getFrameVelocity(m, d, f, pin.ReferenceFrame.LOCAL_WORLD_ALIGNED).angular
                          for f in cl.frame_ids)
                w = np.linalg.norm(wa - wb)
                total += cut.get("coulomb", 0.0) * w + 0.5 * cut.get("viscous", 0.0) * w * w
        return total

    h = 1e-7
    for pose, twist, accel in states[:20]:
        with_f = dyn.inverse_dynamics(pose, twist, accel).generalized
        without = dyn.inverse_dynamics(pose, twist, accel, friction=False).generalized
        grad = np.array([(dissipation(pose, twist + h * e) - dissipation(pose, twist - h * e)) / (2 * h)
                         for e in np.eye(dyn.n)])
        np.testing.assert_allclose(with_f - without, grad, rtol=1e-5, atol=1e-6 * np.abs(grad).max())


def test_energy_conserved_without_friction_and_actuation(dyn):
    """Gravity off, no actuation, no friction: kinetic energy over 2 s at dt = 2 ms (RK4)."""
    free = dyn.with_gravity(np.zeros(3))
    sim = ReducedSimulator(free, friction=False)
    home = free.kin.task.pose(np.asarray(free.model.config["home"], float))
    rng = np.random.default_rng(3)
    lo, hi = workspace_box(free.kin)
    # a drift of about 10 % of the workspace box in 2 s: nonlinear motion that stays reachable
    s = sim.state(home, 0.1 * (hi - lo) / 2 / 2 * rng.uniform(-1, 1, free.n))
    e0 = sim.energy(s)
    worst = 0.0
    for _ in range(1000):
        s = sim.step(s, 2e-3, np.zeros(free.model.n_actuated))
        worst = max(worst, abs(sim.energy(s) - e0))
    assert worst <= 1e-6 * e0
    # the platform really moved
    assert np.abs(free.kin.task.difference(sim.pose(s), home)).max() > 0.01 * np.abs(hi - lo).max()


def test_energy_with_gravity_and_constant_forces(dyn):
    """Gravity on, constant actuator forces tau0 (potential -tau0 . q_a): T + V - tau0 . q_a conserved."""
    sim = ReducedSimulator(dyn, friction=False)
    kin = dyn.kin
    home = kin.task.pose(np.asarray(dyn.model.config["home"], float))
    tau0 = dyn.inverse_dynamics(home, np.zeros(dyn.n), np.zeros(dyn.n), friction=False).tau
    s = sim.state(home, 0.05 * np.random.default_rng(4).standard_normal(dyn.n))

    def total(s):
        return sim.energy(s) - tau0 @ kin.actuated(sim.pose(s))
    e0, t0 = total(s), dyn.energy(home, s.twist)[0]
    for _ in range(250):
        s = sim.step(s, 2e-3, tau0)
        assert abs(total(s) - e0) <= 1e-6 * t0


def test_baumgarte_keeps_closure_drift_bounded(dyn):
    free = dyn.with_gravity(np.zeros(3))
    kin = free.kin
    home = kin.task.pose(np.asarray(free.model.config["home"], float))
    m = kin.inverse(home, 0.1 * np.ones(free.n), check_limits=False)
    _, _, drift = simulate_constrained(free, m.q, m.v, 0.3, 1e-3)
    assert drift.max() <= 1e-5


def test_joint_space_relations(dyn, states):
    """M_q qdd_a + C_q qd_a + G_q = tau for actuated-joint motion (Taghirad's joint-space form)."""
    if dyn.redundant:
        pytest.skip("joint space of a redundant robot is rank-deficient (pseudo-inverse form)")
    for pose, twist, accel in states[:20]:
        Mq, Cq, Gq = dyn.joint_space(pose, twist)
        J, Jd = dyn.kin.jacobian(pose), dyn.kin.jacobian_dot(pose, twist)
        qd, qdd = J @ twist, J @ accel + Jd @ twist
        tau = dyn.inverse_dynamics(pose, twist, accel, friction=False).tau
        assert rel(Mq @ qdd + Cq @ qd + Gq, tau) <= 1e-9
        assert np.allclose(Mq, Mq.T, rtol=1e-12, atol=1e-12 * np.abs(Mq).max())
        assert np.linalg.eigvalsh(Mq).min() > 0


def test_inverse_dynamics_from_joint_motion(dyn, states):
    pose, twist, accel = states[0]
    J, Jd = dyn.kin.jacobian(pose), dyn.kin.jacobian_dot(pose, twist)
    ref = dyn.inverse_dynamics(pose, twist, accel)
    guess = dyn.kin.task.retract(pose, np.full(dyn.n, 2e-3))
    res = dyn.inverse_dynamics_joint(dyn.kin.actuated(pose), J @ twist, J @ accel + Jd @ twist, guess)
    assert rel(res.tau, ref.tau) <= 1e-8


def test_redundant_minimum_norm_and_internal_forces():
    dyn = robot_dynamics("planar_redundant", "redundant")
    for pose, twist, accel in sample_states(dyn, 20, np.random.default_rng(5)):
        res = dyn.inverse_dynamics(pose, twist, accel)
        J = dyn.kin.jacobian(pose)
        N = res.internal_forces
        assert N.shape == (4, 1) and np.abs(J.T @ N).max() <= 1e-10
        assert rel(J.T @ res.tau, res.generalized) <= 1e-10
        # minimum norm: no component along the internal forces; any other solution is longer
        assert abs(N[:, 0] @ res.tau) <= 1e-9 * np.linalg.norm(res.tau)
        assert np.linalg.norm(res.tau + 50 * N[:, 0]) > np.linalg.norm(res.tau)
        # internal forces do not change the motion
        xdd = dyn.forward_dynamics(pose, twist, res.tau + 100 * N[:, 0])
        assert np.abs(xdd - accel).max() <= 1e-8
        # weighted minimum norm minimizes tau^T W tau
        W = np.array([1.0, 4.0, 1.0, 9.0])
        tw = dyn.inverse_dynamics(pose, twist, accel, weights=W).tau
        assert rel(J.T @ tw, res.generalized) <= 1e-10
        assert abs(N[:, 0] @ (W * tw)) <= 1e-9 * np.linalg.norm(W * tw)


def test_gravity_is_configurable():
    dyn = robot_dynamics("palida")
    pose = dyn.kin.task.pose(np.asarray(dyn.model.config["home"], float))
    z = np.zeros(6)
    with_g = dyn.inverse_dynamics(pose, z, z, friction=False).generalized
    without = dyn.with_gravity(np.zeros(3)).inverse_dynamics(pose, z, z, friction=False).generalized
    assert np.abs(without).max() <= 1e-12
    assert rel(with_g, dyn.gravity_vector(pose)) <= 1e-12
    # static: the vertical force on the platform holds the weight of everything it carries
    assert with_g[2] > 0


def test_bad_input_raises(dyn):
    pose = dyn.kin.task.pose(np.asarray(dyn.model.config["home"], float))
    z = np.zeros(dyn.n)
    with pytest.raises(InvalidInputError):
        dyn.inverse_dynamics(pose, np.full(dyn.n, np.nan), z)
    with pytest.raises(InvalidInputError):
        dyn.inverse_dynamics(pose, z, np.zeros(dyn.n + 1))
    with pytest.raises(InvalidInputError):
        dyn.inverse_dynamics(pose, z, z, wrench=np.zeros(5))
    with pytest.raises(InvalidInputError):
        dyn.forward_dynamics(pose, z, np.zeros(dyn.model.n_actuated + 1))
    with pytest.raises(InvalidInputError):
        dyn.forward_dynamics(pose, z, np.full(dyn.model.n_actuated, np.inf))


def test_task_space_matrices_reproduce_inverse_dynamics(dyn, states):
    """M xddot + C xdot + G_x == G^T RNEA (friction off); M symmetric positive definite."""
    for pose, twist, accel in states[:30]:
        M = dyn.mass_matrix(pose)
        f = dyn.inverse_dynamics(pose, twist, accel, friction=False).generalized
        assert rel(M @ accel + dyn.coriolis_matrix(pose, twist) @ twist + dyn.gravity_vector(pose), f) <= 1e-9
        assert np.abs(M - M.T).max() <= 1e-12 * np.abs(M).max() and np.linalg.eigvalsh(M).min() > 0


def test_jacobi_svd_matches_lapack():
    """The compiled one-sided Jacobi SVD of the engine's actuation solve (dynamics.kernels) against LAPACK's (numpy):
    the same singular values to rounding relative to sigma_max, A = U S V^T, U and V orthonormal, on random square
    and tall matrices, a graded one (sigma 1 ... 1e-9) and a rank-deficient one; and project_and_solve's tau solves
    J^T tau = G^T tau_tree - f or reports the ratio that check_conditioning refuses (the SVD's, near the threshold)."""
    from pkm_control.dynamics.kernels import jacobi_svd, project_and_solve
    from pkm_control.kinematics.analysis import SINGULAR_TOL

    rng = np.random.default_rng(3)
    Q1, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    Q2, _ = np.linalg.qr(rng.standard_normal((6, 6)))
    graded = Q1 @ np.diag(np.logspace(0, -9, 6)) @ Q2
    deficient = rng.standard_normal((6, 6))
    deficient[5] = deficient[0] + 2 * deficient[1]
    for A in [rng.standard_normal((6, 6)) for _ in range(5)] + [rng.standard_normal((9, 6)), graded, deficient]:
        U, s, V = jacobi_svd(A)
        ref = np.linalg.svd(A, compute_uv=False)
        assert np.allclose(np.sort(s)[::-1], ref, rtol=0, atol=1e-13 * ref[0])
        assert np.allclose(U @ np.diag(s) @ V.T, A, rtol=0, atol=1e-13 * ref[0])
        assert np.allclose(V.T @ V, np.eye(6), atol=1e-13)
        Un = U[:, s > 1e-12 * ref[0]]             # the columns of the nonzero singular values
        assert np.allclose(Un.T @ Un, np.eye(Un.shape[1]), atol=1e-12)
    G = rng.standard_normal((14, 6))
    act = np.array([3, 7, 8, 9, 11, 13])
    tau_tree, w = rng.standard_normal(14), rng.standard_normal(6)
    f, tau = np.empty(6), np.empty(6)
    ratio = project_and_solve(G, tau_tree, act, w, SINGULAR_TOL, f, tau)
    assert np.allclose(f, G.T @ tau_tree - w, atol=1e-14)
    assert np.allclose(G[act].T @ tau, f, atol=1e-12)
    s = np.linalg.svd(G[act], compute_uv=False)
    # a well-conditioned J passes on the bound 1 / (|J|_F |J^-1|_F) <= sigma_min / sigma_max (at least twice tol)
    assert 2 * SINGULAR_TOL <= ratio <= s[-1] / s[0] * (1 + 1e-12)
    assert ratio == pytest.approx(1 / (np.linalg.norm(G[act]) * np.linalg.norm(np.linalg.inv(G[act]))), rel=1e-12)
    # near the threshold the SVD decides: sigma_min / sigma_max = 1.5 tol passes (the bound is below 2 tol),
    # 0.5 tol does not
    U, _, Vt = np.linalg.svd(G[act])
    for rel_min, passes in ((1.5, True), (0.5, False)):
        Gs = G.copy()
        Gs[act] = U @ np.diag(np.logspace(0, np.log10(rel_min * SINGULAR_TOL), 6)) @ Vt
        ratio = project_and_solve(Gs, tau_tree, act, w, SINGULAR_TOL, f, tau)
        assert ratio == pytest.approx(rel_min * SINGULAR_TOL, rel=1e-8)
        if passes:
            assert np.allclose(Gs[act].T @ tau, f, rtol=0, atol=1e-9 * np.abs(f).max())
        else:
            assert np.isnan(tau).all()
    G[act[5]] = G[act[0]]
    ratio = project_and_solve(G, tau_tree, act, w, SINGULAR_TOL, f, tau)
    assert ratio < SINGULAR_TOL and np.isnan(tau).all()


def test_redundant_actuation_kernel_against_numpy():
    """The redundant robots' compiled actuation solve (dynamics.kernels.redundant_actuation) against the weighted
    minimum norm written with numpy (Wu eq. 39: tau = W^-1 J (J^T W^-1 J)^-1 f) on random tall J, its null(J^T)
    against numpy's SVD (the same subspace: projectors equal), and both singular cases: a rank-deficient J (the
    conditioning ratio, LAPACK's) and weights that leave J^T W^-1 J singular."""
    from pkm_control.dynamics.kernels import redundant_actuation
    from pkm_control.kinematics.analysis import SINGULAR_TOL

    rng = np.random.default_rng(7)
    for na, n in ((4, 3), (8, 6), (5, 2)):
        G = rng.standard_normal((na + 5, n))
        act = np.sort(rng.choice(na + 5, na, replace=False))
        tau_tree, w = rng.standard_normal(na + 5), rng.standard_normal(n)
        w_inv = 1.0 / rng.uniform(0.5, 5.0, na)
        f, tau, null = np.empty(n), np.empty(na), np.empty((na, na - n))
        ratio, ratio_a = redundant_actuation(G, tau_tree, act, w, w_inv, SINGULAR_TOL, 1e-12, f, tau, null)
        J = G[act]
        s = np.linalg.svd(J, compute_uv=False)
        assert ratio == pytest.approx(s[-1] / s[0], rel=1e-12)
        A = J.T @ (w_inv[:, None] * J)
        sa = np.linalg.svd(A, compute_uv=False)
        assert ratio_a == pytest.approx(sa[-1] / sa[0], rel=1e-10)
        assert np.allclose(f, G.T @ tau_tree - w, atol=1e-13)
        ref = w_inv * (J @ np.linalg.solve(A, f))
        assert np.allclose(tau, ref, rtol=0, atol=1e-12 * np.abs(ref).max())
        Vt = np.linalg.svd(J.T)[2]
        N = Vt[n:].T
        assert np.allclose(null.T @ null, np.eye(na - n), atol=1e-12)
        assert np.allclose(null @ null.T, N @ N.T, atol=1e-12)
        # singular: a repeated actuated row of a 4 x 3 J with rank 2, and weights that see only one row
        if (na, n) == (4, 3):
            Gs = G.copy()
            Gs[act[2]] = Gs[act[0]] + Gs[act[1]]
            Gs[act[3]] = 2.0 * Gs[act[0]]
            ratio, _ = redundant_actuation(Gs, tau_tree, act, w, w_inv, SINGULAR_TOL, 1e-12, f, tau, null)
            assert ratio < SINGULAR_TOL
            one_row = np.array([1.0, 0.0, 0.0, 0.0])
            ratio, ratio_a = redundant_actuation(G, tau_tree, act, w, one_row, SINGULAR_TOL, 1e-12, f, tau, null)
            assert ratio >= SINGULAR_TOL and not ratio_a > 1e-12


def test_plant_forward_dynamics_with_friction_stops_and_wrench(dyn, states):
    """forward_dynamics with friction, end stops (every limited tree joint pressed: ranges narrowed to their middle)
    and a wrench, where it runs the compiled reduced path (kernels.plant_forward_dynamics), against the tree
    accelerations of the same forces by pinocchio's constraint dynamics (KKT forwardDynamics where pinocchio has no
    constraint model) at the same tree state, whose platform rows give xddot."""
    import dataclasses

    from pkm_control.dynamics.end_stops import EndStops

    if dyn._plant_tree is None:
        pytest.skip("no compiled plant path (the numeric family, or a joint beyond the compiled tree)")
    es = EndStops.from_config(dyn)
    limited = np.isfinite(es.lower) & np.isfinite(es.upper)
    middle = 0.5 * (np.where(limited, es.lower, 0.0) + np.where(limited, es.upper, 0.0))
    pressed = dataclasses.replace(es, lower=np.where(limited, middle, es.lower),
                                  upper=np.where(limited, middle, es.upper))
    rng = np.random.default_rng(5)
    S, c = dyn.kin.task.twist_map(), dyn.model.platform_idx
    for pose, twist, _ in states[:20]:
        tau = rng.normal(0.0, 50.0, dyn.model.n_actuated)
        wrench = rng.normal(0.0, 20.0, 6)
        for stops in (None, pressed):
            for friction in (False, True):
                xdd = dyn.forward_dynamics(pose, twist, tau, wrench, friction=friction, end_stops=stops)
                q, v, _, _ = dyn.state(pose, twist)
                force = S.T @ wrench
                if stops is not None:
                    f_cut = stops.cut_force(dyn.kin, pose, twist)
                    force = force if f_cut is None else force + f_cut
                a = dyn.tree_accelerations(q, v, tau, friction, stops, force)
                expected = dyn.kin.task.tree_task_acceleration(q, v, a, c)[0]
                assert rel(xdd, expected) < 1e-9, (stops is not None, friction)
