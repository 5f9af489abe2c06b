"""The compiled palida simulation step (ReducedSimulator -> jourdain.Formulation.rk4_step) against the
generic ReducedSimulator (engine forward dynamics, the same state and RK4 stages): single steps at
random states, 1 s at dt = 0.5 ms under two force profiles, the actuated-joint readout, fallbacks
and errors."""

from __future__ import annotations

import math

import numpy as np
import pytest
from conftest import home

from pkm_control.control.feedforward import FeedforwardModel
from pkm_control.control.safety import ForceLimits, SafeBehaviour
from pkm_control.dynamics import ClosedLoopDynamics, robot_dynamics
from pkm_control.dynamics.jourdain import Formulation
from pkm_control.dynamics.simulation import ReducedSimulator, SimState
from pkm_control.errors import InvalidInputError, InvalidModelError, SingularConfigurationError
from pkm_control.kinematics.task_space import Pose
from pkm_control.kinematics.workspace import random_poses
from pkm_control.trajectory.spec import palida_benchmark_circle

DT = 5e-4
EPS = 2e-3          # hardware.simulated.DEFAULT_SIGN_EPS
N_STEPS = 2000      # 1 s


@pytest.fixture(scope="module")
def dyn():
    return ClosedLoopDynamics(robot_dynamics("palida").kin, sign_eps=EPS)


@pytest.fixture(scope="module")
def sims(dyn):
    return ReducedSimulator(dyn), ReducedSimulator(dyn, compiled=False)


def test_the_compiled_path_is_picked_for_palida_only(dyn, sims):
    fast, generic = sims
    assert fast.compiled and not generic.compiled
    assert ReducedSimulator(dyn, friction=False).compiled
    stewart = robot_dynamics("stewart")
    assert not ReducedSimulator(stewart).compiled
    with pytest.raises(InvalidModelError, match="stewart"):
        ReducedSimulator(stewart, compiled=True)
    from pkm_control.hardware import SimulatedRobot
    assert SimulatedRobot(robot_dynamics("palida"), DT).sim.compiled


@pytest.mark.parametrize("friction", [True, False])
def test_single_steps_at_random_states(dyn, sims, friction):
    """60 random reachable states (all orientations of the workspace), random twists and forces, half of
    them slow (joint rates ~ eps): one step of each path, and the actuated readout."""
    fast, generic = ReducedSimulator(dyn, friction=friction), ReducedSimulator(dyn, friction=friction,
                                                                              compiled=False)
    rng = np.random.default_rng(8)
    for k, pose in enumerate(random_poses(dyn.kin, 60, rng)):
        twist = np.r_[0.5 * rng.standard_normal(3), rng.standard_normal(3)] * (1.0 if k % 2 else 5e-3)
        tau = 300.0 * rng.standard_normal(6)
        s = fast.state(pose, twist)
        a, b = fast.step(s, DT, tau), generic.step(s, DT, tau)
        np.testing.assert_allclose(a.coords, b.coords, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a.twist, b.twist, rtol=0, atol=1e-11)
        q, qd = fast.actuated(a)
        qg, qdg = generic.actuated(a)
        np.testing.assert_allclose(q, qg, rtol=0, atol=1e-14)
        np.testing.assert_allclose(qd, qdg, rtol=0, atol=1e-13)
        p = fast.pose(a)
        np.testing.assert_allclose(q, dyn.kin.actuated(p), rtol=0, atol=1e-14)
        np.testing.assert_allclose(qd, dyn.kin.jacobian(p) @ a.twist, rtol=0, atol=1e-13)


def _hold_and_sine(dyn):
    """Gravity compensation + joint-space PD holding home (the simulated robot's 'hold' gains) + a
    sinusoid of 7.5 % of the force limit at 2 Hz, a phase per leg: tau(k, q_a, qd_a)."""
    hold = SafeBehaviour.for_model("hold", FeedforwardModel(dyn, "rigid"))
    target = hold.capture(dyn.kin.actuated(home(dyn)), home(dyn))
    amp = 0.075 * ForceLimits.from_config(dyn.model).limits

    def tau(k, q, qd):
        return hold.command(target, q, qd) + amp * np.sin(2 * np.pi * 2.0 * k * DT + np.arange(6))
    return (home(dyn), np.array([0.05, -0.03, 0.04, 0.1, -0.1, 0.05])), tau


def _benchmark_circle(dyn):
    """Abdellatif's benchmark circle (30 deg, 1 m/s, r = 0.15 m) by computed-force control: the
    Jourdain feedforward with friction + joint-space PD (the 'hold' gains) on the reference."""
    kin = dyn.kin
    hold = SafeBehaviour.for_model("hold", FeedforwardModel(dyn, "rigid"))
    form = Formulation(dyn)
    traj = palida_benchmark_circle(kin, 0.15)
    P, R, V, A = traj.sample_many(np.arange(N_STEPS) * DT)
    ref = []
    for k in range(N_STEPS):
        pose = Pose(P[k], R[k])
        ref.append((kin.actuated(pose), kin.jacobian(pose) @ V[k], form.inverse_dynamics(pose, V[k], A[k])))

    def tau(k, q, qd):
        q_ref, qd_ref, ff = ref[k]
        return ff + hold.kp * (q_ref - q) + hold.kd * (qd_ref - qd)
    return (Pose(P[0], R[0]), V[0]), tau


@pytest.mark.parametrize("profile", [_hold_and_sine, _benchmark_circle])
def test_one_second_agrees_with_the_generic_simulator(dyn, sims, profile):
    """2000 steps of 0.5 ms with friction (eps 2e-3), each path closing its own loop through
    ``actuated``: platform coordinates and twists agree to 1e-9 (m, rad, m/s, rad/s) at every step."""
    start, tau_fn = profile(dyn)
    runs = {}
    for sim in sims:
        s = sim.state(*start)
        rows = []
        for k in range(N_STEPS):
            q, qd = sim.actuated(s)
            s = sim.step(s, DT, tau_fn(k, q, qd))
            rows.append(np.r_[s.coords, s.twist, q, qd])
        runs[sim.compiled] = np.array(rows)
    diff = np.abs(runs[True] - runs[False])
    print(f"{profile.__name__}: max |diff| coords {diff[:, :6].max():.2e}, twist {diff[:, 6:12].max():.2e}, "
          f"q_a {diff[:, 12:18].max():.2e}, qd_a {diff[:, 18:].max():.2e}")
    assert diff.max() <= 1e-9
    # a real motion, inside the joint limits all along
    h = runs[True]
    assert np.abs(h[:, 6:9]).max() > 0.05 and np.ptp(h[:, :3], axis=0).max() > 2e-3
    task = dyn.kin.task
    poses = [task.pose_from_platform_joints(c) for c in h[:, :6]]
    _, valid = dyn.kin.inverse_batch(np.array([p.position for p in poses]), np.array([p.rotation for p in poses]))
    assert valid.all()


def test_a_wrench_uses_the_generic_path(dyn, sims):
    fast, generic = sims
    s = fast.state(home(dyn), np.full(6, 0.1))
    tau, w = np.full(6, -60.0), np.array([5.0, -3.0, 20.0, 1.0, 0.5, -0.2])
    np.testing.assert_array_equal(fast.step(s, DT, tau, w).twist, generic.step(s, DT, tau, w).twist)
    assert np.abs(fast.step(s, DT, tau, w).twist - fast.step(s, DT, tau).twist).max() > 1e-4


def test_errors(dyn, sims):
    fast, _ = sims
    s = fast.state(home(dyn), np.zeros(6))
    tau = np.zeros(6)
    for bad_tau, match in (([np.nan] + [0.0] * 5, "actuator forces must be finite"), (np.zeros(5), "shape")):
        with pytest.raises(InvalidInputError, match=match):
            fast.step(s, DT, bad_tau)
    with pytest.raises(InvalidInputError, match="dt must be finite"):
        fast.step(s, float("nan"), tau)
    with pytest.raises(InvalidInputError, match="twist must be finite"):
        fast.step(SimState(s.coords, np.full(6, np.inf)), DT, tau)
    with pytest.raises(InvalidInputError, match="shape"):
        fast.actuated(SimState(s.coords[:5], s.twist))
    with pytest.raises(InvalidInputError, match="diverged"):
        fast.step(s, DT, np.full(6, 1e300))
    tilted = SimState(np.r_[s.coords[:4], math.pi / 2, 0.0], s.twist)      # pitch = pi / 2
    with pytest.raises(SingularConfigurationError, match="Euler"):
        fast.step(tilted, DT, tau)
    for compiled in (None, False):          # both paths refuse a negative smoothing
        with pytest.raises(InvalidInputError, match="sign_eps"):
            ReducedSimulator(ClosedLoopDynamics(dyn.kin, sign_eps=-1.0), compiled=compiled)


def _environment():
    """config/environment.yaml's palida table and part, and a tilted box with friction, the friction's slope
    bounded as the simulated robot bounds it (contact.friction_limited)."""
    from pkm_control.hardware.contact import Box, ContactEnvironment, load_environment
    from pkm_control.kinematics.task_space import rpy_to_matrix

    env = load_environment("palida")[0]
    tilted = Box(4e5, 300.0, 0.5, 2e-3, center=[-0.08, 0.05, -0.9], half_extents=[0.03, 0.05, 0.02],
                 rotation=rpy_to_matrix(0.3, -0.2, 0.7))
    return ContactEnvironment(env.tool_point, env.surfaces + (tilted,), max_slope=2.0e4)


def _near_surfaces(env, rng, n):
    """n platform poses (home orientation tilted by up to 0.1 rad) with the tool point within +-2 mm of a face of
    one of the surfaces, and platform twists of up to ~0.3 m/s, 1 rad/s."""
    from pkm_control.kinematics.task_space import rpy_to_matrix

    out = []
    for k in range(n):
        s = env.surfaces[k % len(env.surfaces)]
        if hasattr(s, "normal"):
            p = s.point + np.r_[0.05 * rng.standard_normal(2), 0] + s.normal * rng.uniform(-2e-3, 2e-3)
        else:
            axis, sign = rng.integers(3), rng.choice([-1.0, 1.0])
            local = rng.uniform(-0.9, 0.9, 3) * s.half_extents
            local[axis] = sign * (s.half_extents[axis] + rng.uniform(-2e-3, 2e-3))
            p = s.center + s.rotation @ local
        R = rpy_to_matrix(*(0.1 * rng.uniform(-1, 1, 3)))
        twist = np.r_[0.3 * rng.standard_normal(3), rng.standard_normal(3)] * (1.0 if k % 3 else 1e-3)
        out.append((Pose(p - R @ env.tool_point, R), twist))
    return out


def _contact_wrench_by_numpy(env, pose, twist):
    """[f; r x f] of ``env`` written out with numpy from hardware/contact.py's module docstring, apart from the
    kernel: each surface's penetration (Surface.penetration), Kelvin-Voigt without pulling, tanh-regularized
    Coulomb friction with eps = max(slip_speed, mu f_n / max_slope)."""
    r = pose.rotation @ env.tool_point
    p, v = pose.position + r, twist[:3] + np.cross(twist[3:], r)
    f = np.zeros(3)
    for s in env.surfaces:
        d, n = s.penetration(p)
        if d <= 0:
            continue
        fn = max(0.0, s.stiffness * d - s.damping * (n @ v))
        f += fn * n
        vt = v - (n @ v) * n
        speed = np.linalg.norm(vt)
        if s.friction and fn > 0 and speed > 0:
            eps = max(s.slip_speed, s.friction * fn / env.max_slope)
            f -= s.friction * fn * np.tanh(speed / eps) / speed * vt
    return np.r_[f, np.cross(r, f)]


def test_the_contact_kernel_is_the_contact_law():
    """dynamics/point_contact (the law every plant and ContactEnvironment.wrench use) against the law written out
    with numpy at 600 tool points within 2 mm of a face of a plane, an axis-aligned and a tilted box (inside and
    outside, sliding and almost still), with the friction's slope bounded and not."""
    from pkm_control.hardware.contact import ContactEnvironment

    rng = np.random.default_rng(24)
    bounded = _environment()
    touching = 0
    for env in (bounded, ContactEnvironment(bounded.tool_point, bounded.surfaces)):
        for pose, twist in _near_surfaces(env, rng, 300):
            law = _contact_wrench_by_numpy(env, pose, twist)
            np.testing.assert_allclose(env.wrench(pose, twist), law, rtol=1e-12, atol=1e-9)
            touching += np.abs(law).max() > 0
    assert 200 < touching < 500             # both sides of the faces


def test_single_steps_in_contact_agree_with_the_generic_step(dyn, sims):
    """The compiled step with the contact inside (``contact=``) against the generic step with
    ContactEnvironment.wrench at every stage, one step at 150 states with the tool near a face (as in
    test_single_steps_at_random_states)."""
    fast, generic = sims
    env = _environment()
    form = env.kernel_form()
    rng = np.random.default_rng(5)
    touching = 0
    for pose, twist in _near_surfaces(env, rng, 150):
        tau = 300.0 * rng.standard_normal(6)
        s = fast.state(pose, twist)
        a, b = fast.step(s, DT, tau, contact=form), generic.step(s, DT, tau, env.wrench)
        np.testing.assert_allclose(a.coords, b.coords, rtol=0, atol=1e-13)
        np.testing.assert_allclose(a.twist, b.twist, rtol=0, atol=1e-10)
        touching += np.abs(env.wrench(pose, twist)).max() > 0
    assert touching > 50
    with pytest.raises(InvalidInputError, match="compiled"):
        generic.step(s, DT, tau, contact=form)


def test_pressing_on_the_part_agrees_with_the_generic_simulator(dyn, sims):
    """0.3 s of the tool pressed on the part's face (the deburring task's, config/environment.yaml) and slid along
    it: gravity compensation + a task-space PD towards a point 0.1 mm inside the face, moving along the edge at
    0.1 m/s, each path closing its own loop: the states agree to 1e-9 at every step, and the contact force is the
    spring's (~40 N: the PD and the part's 1e6 N/m in series, less
    the drives' friction) and the part's Coulomb friction."""
    from pkm_control.benchmarks import deburring
    from pkm_control.hardware.contact import load_environment

    env = load_environment("palida")[0]
    t = deburring.task(dyn.kin, env, gap=-1e-4)
    task, ff = dyn.kin.task, FeedforwardModel(dyn, "rigid")
    start = task.pose(np.array(t["start"]))
    kp, kd = np.array([1e6, 3e5, 3e5, 3e4, 3e4, 3e4]), np.array([5e3, 5e3, 5e3, 300, 300, 300])
    runs = {}
    for sim in sims:
        s = sim.state(start, np.zeros(6))
        rows = []
        for k in range(600):
            pose = sim.pose(s)
            target = Pose(start.position + np.array([0.0, 0.1 * k * DT, 0.0]), start.rotation)
            F = kp * task.difference(target, pose) + kd * (np.r_[0.0, 0.1, 0, 0, 0, 0] - s.twist)
            tau = np.linalg.solve(dyn.kin.jacobian(pose).T, F) + ff.gravity(pose)
            s = sim.step(s, DT, tau, contact=env.kernel_form()) if sim.compiled else sim.step(s, DT, tau, env.wrench)
            rows.append(np.r_[s.coords, s.twist, env.wrench(sim.pose(s), s.twist)])
        runs[sim.compiled] = np.array(rows)
    diff = np.abs(runs[True] - runs[False])
    assert diff[:, :12].max() <= 1e-9
    f = runs[True][300:, 12:15]
    assert (f[:, 0] < -20).all()                      # pressed on the face (its normal -x)
    np.testing.assert_allclose(f[:, 1] / f[:, 0], 0.2, rtol=0.02)      # sliding along +y: mu f_n against it
