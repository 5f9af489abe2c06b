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
