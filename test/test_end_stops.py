"""End stops of the simulated robot (dynamics/end_stops.py, issue 9 sec. 3): finite state and the energy
bound under any accepted command on every robot, static penetration under a constant force, zero force
inside the ranges, the compiled palida step against the engine, and the delta kept on its IK branch.

The bound checked is dynamics/end_stops.py ``EnergyBound`` (the one the fuzz campaign "simulated" checks too),
derived from the energy balance, not from the stop code: the stops are passive (storage U = sum_j 1/2 k_j d_j^2,
dissipation >= 0), friction dissipates, so from any start

    U(t)  <=  B(t) = U(0) + W(t) - (E(t) - E(0)),    W(t) = sum_steps tau . (q_a(t_k+1) - q_a(t_k)),

with E the kinetic + potential energy (gravity included) and W the work of the held (zero-order hold)
actuator forces: the drives' work at F_max over the distance actually travelled, plus the kinetic energy
at the start and what gravity released. Every limited joint therefore stays within d_j <= sqrt(2 B / k_j)
of its limit. Slack (EnergyBound's docstring): RK4 does not conserve energy exactly; on an undamped
oscillator its amplification is |R(i h omega)|^2 = 1 - (h omega)^6 / 72 + ..., a loss of 1e-5 of the energy
per step at the stops' h omega = 0.3 (dissipative: it only helps the bound); the other truncation errors are
covered by a slack of 1e-4 of the energy that went through the system (|E(0)| + U(0) + sum |dW|) plus 1e-6 J.
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import home
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pkm_control.dynamics import ClosedLoopDynamics, robot_dynamics
from pkm_control.dynamics.end_stops import BOUND_ABSOLUTE_SLACK, BOUND_RELATIVE_SLACK, EnergyBound
from pkm_control.dynamics.simulation import ReducedSimulator
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.simulated import REFUSE_FACTOR, RK4_REAL_AXIS_LIMIT

DT = 5e-4
ROBOTS = ("palida", "stewart", "lopes", "delta", "planar_redundant")


def run(robot: SimulatedRobot, pieces, check_every: int = 1):
    """Apply (steps, command) pieces; check finiteness and the energy bound (module docstring) on the way.
    Returns the largest tree and cut penetrations seen."""
    bound = robot.energy_bound()
    worst = np.zeros(2)
    n = 0
    for steps, command in pieces:
        for _ in range(steps):
            robot.write(command)
            robot.step()
            assert np.isfinite(robot.state.coords).all() and np.isfinite(robot.state.twist).all()
            robot.update_energy_bound(bound)
            n += 1
            if n % check_every:
                continue
            d, dc = robot.penetrations()
            broken = bound.violation(d, dc)
            assert broken is None, f"t = {robot.time:.4f}: {broken}"
            worst = np.maximum(worst, [d.max(), dc.max(initial=0.0)])
    return worst


@pytest.fixture(scope="module")
def dynamics():
    return {r: robot_dynamics(r) for r in ROBOTS}


# ---------------------------------------------------------------- generated commands, every robot
LEVELS = st.one_of(st.sampled_from([-REFUSE_FACTOR, -1.0, 0.0, 1.0, REFUSE_FACTOR]),
                   st.floats(-REFUSE_FACTOR, REFUSE_FACTOR))


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(ROBOTS), moving=st.booleans(), data=st.data())
def test_any_accepted_command_keeps_the_state_finite_and_within_the_energy_bound(dynamics, name, moving, data):
    """1-3 constant pieces of 10-50 ms, each actuator anywhere up to the refusal limit 2 F_max (saturated
    at F_max; the extremes drawn often), from rest or with a random initial twist (up to 0.5 m/s, 1 rad/s),
    on every robot: no exception, finite state, stop energy <= energy put in (module docstring)."""
    dyn = dynamics[name]
    robot = SimulatedRobot(dyn, DT)
    n, limits = robot.n_actuated, robot.force_limits.limits
    twist = None
    if moving:
        scale = np.where(np.arange(dyn.n) < min(dyn.n, 3), 0.5, 1.0)
        twist = np.array(data.draw(st.lists(st.floats(-1.0, 1.0), min_size=dyn.n, max_size=dyn.n))) * scale
    robot.reset(home(dyn), twist)
    pieces = [(data.draw(st.integers(20, 100)), np.array(data.draw(st.lists(LEVELS, min_size=n, max_size=n))) * limits)
              for _ in range(data.draw(st.integers(1, 3)))]
    run(robot, pieces, check_every=5)


# ---------------------------------------------------------------- full force for long: palida (compiled)
@pytest.mark.parametrize("pattern", ["extend", "retract", "twist"])
def test_palida_full_force_for_two_seconds(dynamics, pattern):
    """The issue's case: references far outside the stroke make the controller saturate; 2 s at 2 F_max
    (saturated at F_max) in the compiled step: finite, within the bound, at rest against the stops."""
    dyn = dynamics["palida"]
    robot = SimulatedRobot(dyn, DT)
    assert robot.sim.compiled
    robot.reset(home(dyn))
    sign = {"extend": np.ones(6), "retract": -np.ones(6), "twist": (-1.0) ** np.arange(6)}[pattern]
    worst = run(robot, [(4000, REFUSE_FACTOR * robot.force_limits.limits * sign)], check_every=20)
    assert worst.max() > 0                                    # the stops were hit
    assert np.abs(robot.state.twist).max() < 1e-6             # and hold the robot


# ---------------------------------------------------------------- static penetration F / k
def _press(dyn, command, seconds, compiled=None):
    robot = SimulatedRobot(dyn, DT)
    if compiled is False:
        robot.sim = ReducedSimulator(robot.dyn, friction=True, compiled=False, end_stops=robot.end_stops)
    robot.reset(home(dyn))
    for _ in range(int(round(seconds / DT))):
        robot.write(command)
        robot.step()
    return robot


@pytest.mark.parametrize("compiled", [None, False])
def test_static_penetration_under_a_constant_force(dynamics, compiled):
    """Every palida strut pressed into its upper stroke stop by F = F_max (compiled step and engine), at
    rest: the stop carries F minus the
    strut's share of gravity, tau_g = J^-T G_x (the force that holds the pose, from the engine's gravity
    vector at the final pose): k d = F - tau_g, and so |d - F / k| <= |tau_g| / k (static equilibrium,
    no friction at rest)."""
    dyn = dynamics["palida"]
    F = dyn.model.config["actuators"]["force_limit"]
    robot = _press(dyn, np.full(6, F), 0.3, compiled)              # at rest after 0.25 s
    assert np.abs(robot.state.twist).max() < 1e-7
    es = robot.end_stops
    act = dyn.model.actuated_idx
    d, dc = robot.penetrations()
    assert np.flatnonzero(d).tolist() == sorted(act.tolist()) and not dc.any()    # only the strokes
    pose = robot.ground_truth().platform_pose
    tau_g = np.linalg.solve(dyn.kin.jacobian(pose).T, dyn.gravity_vector(pose))
    k = es.stiffness[act]
    np.testing.assert_allclose(d[act], (F - tau_g) / k, rtol=1e-6)
    assert (np.abs(d[act] - F / k) <= np.abs(tau_g) / k * (1 + 1e-6)).all()


#: a sign pattern of the actuators that presses passive and cut-joint stops too, and how long (s)
PRESS = {"palida": ([1, -1, 1, -1, 1, -1], 1.0), "stewart": ([1, -1, 1, -1, 1, -1], 0.3),
         "lopes": ([1, 1, -1, -1, 1, 1], 0.3), "delta": ([1, -1, 1], 0.3), "planar_redundant": ([-1, -1, -1, -1], 1.0)}


@pytest.mark.parametrize("name", ROBOTS)
def test_static_equilibrium_against_any_stop(dynamics, name):
    """Actuators at +-F_max until (nearly) at rest against stroke, passive and cut-joint stops: the stops'
    spring forces, computed here from the penetrations and the rate maps (k d along g_j), balance the drives
    and what the engine's inverse dynamics needs at the state (gravity, friction, the last step's
    acceleration): J^T tau + sum_j g_j k_j d_j = f_ID, to 1e-6 of |J^T tau| plus the stop damping c |ddot|
    still acting (a smoothed Coulomb friction lets a residual load creep)."""
    dyn = dynamics[name]
    signs, seconds = PRESS[name]
    robot = _press(dyn, SimulatedRobot(dyn, DT).force_limits.limits * signs, seconds - DT)
    twist0 = robot.state.twist
    robot.write(robot.tau_applied)
    robot.step()
    es, kin = robot.end_stops, dyn.kin
    gt = robot.ground_truth()
    pose, q, twist = gt.platform_pose, gt.position, robot.state.twist
    angles = kin.cut_joint_angles(pose)
    f_tree = es.stiffness * (np.maximum(es.lower - q, 0.0) - np.maximum(q - es.upper, 0.0))
    f_cut = es.cut_stiffness * (np.maximum(es.cut_lower - angles, 0.0) - np.maximum(angles - es.cut_upper, 0.0))
    assert np.abs(f_tree).max() + np.abs(f_cut).max(initial=0.0) > 0
    G, C = kin.joint_jacobian(pose), kin.cut_joint_rows(pose)
    drive = kin.jacobian(pose).T @ robot.tau_applied
    needed = robot.dyn.inverse_dynamics(pose, twist, (twist - twist0) / DT).generalized
    residual = drive + G.T @ f_tree + C.T @ f_cut - needed
    damping = np.abs(G.T) @ (es.damping * np.abs(gt.velocity)) + np.abs(C.T) @ (es.cut_damping * np.abs(C @ twist))
    assert (np.abs(residual) <= 1e-6 * np.abs(drive).max() + damping).all()


# ---------------------------------------------------------------- zero force inside the ranges
@pytest.mark.parametrize("name", ["stewart", "lopes"])
def test_cut_joint_rows_are_the_cone_angle_rates(dynamics, name):
    """The cut-joint rows (the rate map of the cone stops' force; lopes' in closed form, pus_cone_rows) against
    a central difference of the cone angles along the motion with a random twist (the pose moved by +-h xdot with
    task.retract: omega in the base frame), at the demo poses and random workspace poses with an angle >= 0.05 rad."""
    kin = dynamics[name].kin
    spec, rng = kin.model.spec, np.random.default_rng(7)
    poses = [*spec.demo_poses, *rng.uniform(spec.workspace.lower, spec.workspace.upper, (10, kin.task.dim))]
    h = 1e-6
    for x in poses:
        pose = kin.task.pose(np.asarray(x, float))
        twist = rng.normal(size=kin.task.dim)
        angles = kin.cut_joint_angles(pose)
        rate = (kin.cut_joint_angles(kin.task.retract(pose, h * twist))
                - kin.cut_joint_angles(kin.task.retract(pose, -h * twist))) / (2 * h)
        smooth = angles >= 0.05
        assert smooth.any()
        np.testing.assert_allclose((kin.cut_joint_rows(pose) @ twist)[smooth], rate[smooth], rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("name,compiled", [(r, None) for r in ROBOTS] + [("palida", False)])
def test_inside_the_ranges_the_stops_exert_no_force(dynamics, name, compiled):
    """Gravity compensation at home plus a small random command, 100 steps from a moving start: the
    trajectory with end stops equals the one without to 1e-12 (the demos' numbers do not change)."""
    base = dynamics[name]
    dyn = ClosedLoopDynamics(base.kin, sign_eps=2e-3)
    with_stops = SimulatedRobot(dyn, DT).end_stops
    rng = np.random.default_rng(3)
    hold = dyn.inverse_dynamics(home(dyn), np.zeros(dyn.n), np.zeros(dyn.n), friction=False).tau
    commands = hold + rng.normal(0.0, 0.02, (100, len(hold))) * np.abs(hold).max()
    twist = rng.normal(0.0, 0.02, dyn.n)
    states = []
    for stops in (with_stops, None):
        sim = ReducedSimulator(dyn, compiled=compiled, end_stops=stops)
        s = sim.state(home(dyn), twist)
        for tau in commands:
            s = sim.step(s, DT, tau)
            q = dyn.kin.inverse(sim.pose(s), check_limits=False).q
            assert not with_stops.penetration(q).any()
            assert not with_stops.cut_penetration(dyn.kin.cut_joint_angles(sim.pose(s))).any()
        states.append(np.concatenate([s.coords, s.twist]))
    np.testing.assert_allclose(states[0], states[1], rtol=0, atol=1e-12)


# ---------------------------------------------------------------- compiled step against the engine
def test_compiled_palida_step_matches_the_engine_in_the_stops(dynamics):
    """0.4 s (800 steps) pressing into stroke and ball-joint cone stops: the compiled step (analytic cone rate map)
    and the engine (finite-difference rate map of the cone angle) agree."""
    dyn = ClosedLoopDynamics(dynamics["palida"].kin, sign_eps=2e-3)
    es = SimulatedRobot(dyn, DT).end_stops
    tau = 2000.0 * (-1.0) ** np.arange(6)
    fast, slow = ReducedSimulator(dyn, compiled=True, end_stops=es), ReducedSimulator(dyn, compiled=False, end_stops=es)
    a = b = fast.state(home(dyn), np.zeros(6))
    hit = np.zeros(2)
    for _ in range(800):
        a, b = fast.step(a, DT, tau), slow.step(b, DT, tau)
        pose = fast.pose(a)
        hit = np.maximum(hit, [es.penetration(dyn.kin.inverse(pose, check_limits=False).q).max(),
                               es.cut_penetration(dyn.kin.cut_joint_angles(pose)).max()])
    assert (hit > 0).all()
    np.testing.assert_allclose(a.coords, b.coords, rtol=0, atol=1e-9)
    np.testing.assert_allclose(a.twist, b.twist, rtol=0, atol=1e-6)


# ---------------------------------------------------------------- stability against the stops
@pytest.mark.parametrize("name", ROBOTS)
def test_rk4_stays_stable_with_the_stops_engaged(dynamics, name):
    """Linearization of the reduced dynamics (coordinates and twist) at rest pressed into the stops:
    max |lambda| h stays below RK4's real-axis limit 2.785 with margin."""
    dyn = dynamics[name]
    signs, _ = PRESS[name]
    robot = _press(dyn, SimulatedRobot(dyn, DT).force_limits.limits * signs, 0.2)
    sim, s = robot.sim, robot.state
    tau = robot.tau_applied
    n = dyn.n

    def f(z):
        c, t = z[:n], z[n:]
        pose = sim.task.pose_from_platform_joints(c)
        return np.concatenate([sim.task.platform_rate_matrix(pose) @ t,
                               robot.dyn.forward_dynamics(pose, t, tau, end_stops=robot.end_stops)])

    z0 = np.concatenate([s.coords, s.twist])
    A = np.zeros((2 * n, 2 * n))
    for k in range(2 * n):
        e = np.zeros(2 * n)
        e[k] = 1e-9
        A[:, k] = (f(z0 + e) - f(z0 - e)) / 2e-9
    assert np.abs(np.linalg.eigvals(A)).max() * DT < 0.8 * RK4_REAL_AXIS_LIMIT


# ---------------------------------------------------------------- the delta stays on its IK branch
@pytest.mark.parametrize("signs", [(1, 1, 1), (-1, -1, -1), (1, -1, -1), (-1, 1, 1), (1, 1, -1), (-1, -1, 1)])
def test_delta_stops_keep_the_arms_off_the_stretched_and_folded_configurations(dynamics, signs):
    """Every arm torque at +-2 F_max for 0.3 s: the elbow1 stops (-60, 80 deg) hold each leg inside the
    elbow-out branch |elbow1| < 90 deg (s . b = -L_A L_B cos(elbow1) cos(elbow2) away from 0, kinematics/
    delta.py), so the state never reaches the stretched or folded arm where the IK would jump branch."""
    dyn = dynamics["delta"]
    robot = SimulatedRobot(dyn, DT)
    robot.reset(home(dyn))
    kin = dyn.kin
    worst = 0.0
    for _ in range(60):
        run(robot, [(10, REFUSE_FACTOR * robot.force_limits.limits * np.array(signs))], check_every=10)
        gt = robot.ground_truth()
        worst = max(worst, np.abs(gt.position[kin._ie1]).max())
        # |s . b| = |J_q| >= L_A L_B cos(85 deg) cos(45 deg) = 0.0108
        assert np.abs(np.diag(kin.jacobian_xq(gt.platform_pose)[1])).min() > 0.01
    assert worst < np.radians(85.0)


# ---------------------------------------------------------------- the bound itself
def test_energy_bound_names_the_joint_beyond_its_allowed_penetration(dynamics):
    """EnergyBound by hand on palida's stops: 10 J of drive work (100 N over 0.1 m) minus 4 J gained by the
    plant allow sqrt(2 B / k) per stop; one stroke just inside is fine, just beyond names it; two strokes each
    within their own allowance but together holding more than B break the energy."""
    es = SimulatedRobot(dynamics["palida"], DT).end_stops
    act = dynamics["palida"].model.actuated_idx
    zero_tree, zero_cut = np.zeros(len(es.names)), np.zeros(len(es.cut_names))
    bound = EnergyBound(es, 100.0, np.zeros(6), zero_tree, zero_cut)
    bound.update(np.r_[100.0, np.zeros(5)], np.r_[0.1, np.zeros(5)], 104.0)
    slack = BOUND_RELATIVE_SLACK * (100.0 + 10.0) + BOUND_ABSOLUTE_SLACK
    assert bound.budget == pytest.approx(6.0 + slack, rel=1e-12)
    allowed = bound.allowed()[0][act[0]]
    assert allowed == pytest.approx(np.sqrt(2 * bound.budget / es.stiffness[act[0]]), rel=1e-12)
    assert np.isinf(bound.allowed()[0][dynamics["palida"].model.platform_idx]).all()     # no stop there
    d = zero_tree.copy()
    d[act[0]] = 0.999 * allowed
    assert bound.violation(d, zero_cut) is None
    d[act[0]] = 1.001 * allowed
    assert es.names[act[0]] in bound.violation(d, zero_cut)
    d[act[:2]] = 0.9 * bound.allowed()[0][act[:2]]
    assert "stop energy" in bound.violation(d, zero_cut)
