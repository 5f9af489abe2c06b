"""The fast paths of the generic engine against their reference paths, on every shipped robot (issue 21 par. 7).

* forward dynamics by pinocchio's constraintDynamics against the reduced M xddot = f (the engine's own
  projection), with friction and an external wrench, to 1e-9 at random states;
* the tree accelerations (constraintDynamics, or the KKT forwardDynamics with our K for planar closures) against the
  equations they solve, checked with the closures' own K, Kdot v and G: G^T (M a + h - tau) = 0, K a + Kdot v = 0;
* the friction torque from per-joint coefficients against the regressor times the parameters;
* one assembly for (q, v, a) and G against the separate IK and G;
* the task-space maps from platform joints back to the task (the pose and the simulator's platform-joint rates)
  against platform_joint_motion and the Euler-rate matrix;
* the simulator's tree-coordinate RK4 step against its reduced-coordinate step (the same ODE, both 4th order), and
  its compiled step (one call) against its Python stages on pinocchio's dynamics over 2000 periods.
No timing here: the speed is measured by ``pkm bench dynamics`` / ``pkm bench kinematics``.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import closure_bias, closure_jacobian, closure_residual, load_robot
from pkm_control.dynamics import ClosedLoopDynamics, robot_dynamics
from pkm_control.dynamics.parameters import sample_states
from pkm_control.dynamics.simulation import ReducedSimulator
from pkm_control.kinematics.numeric import Kinematics as Numeric
from pkm_control.kinematics.task_space import euler_rate_matrix

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


def _close(a, b, what, tol=1e-9):
    scale = max(1.0, float(np.abs(b).max(initial=0.0)))
    err = float(np.abs(np.asarray(a) - np.asarray(b)).max(initial=0.0))
    assert err <= tol * scale, f"{what}: |fast - reference| = {err:.3g} > {tol:g} * {scale:.3g}"


@pytest.fixture(params=ROBOTS, ids=IDS, scope="module")
def case(request):
    dyn = robot_dynamics(*request.param)
    dyn = ClosedLoopDynamics(dyn.kin, sign_eps=1e-3)     # smooth friction: a differentiable force
    return dyn, sample_states(dyn, 6, np.random.default_rng(11))


def test_constraint_dynamics_is_used_exactly_where_pinocchio_holds_the_closures(case):
    dyn, _ = case
    assert dyn.uses_constraint_dynamics == all(c.contact_type is not None for c in dyn.model.closures)


def test_forward_dynamics_agrees_with_the_reduced_path(case):
    dyn, states = case
    rng = np.random.default_rng(3)
    for pose, twist, accel in states:
        tau = dyn.inverse_dynamics(pose, twist, accel).tau + rng.normal(size=dyn.model.n_actuated)
        wrench = rng.normal(scale=5.0, size=6)
        fast = dyn.forward_dynamics(pose, twist, tau, wrench)
        _close(fast, dyn._forward_dynamics_reduced(pose, twist, tau, wrench, True, None), "xddot")


def test_tree_accelerations_solve_the_closed_loop_equations(case):
    dyn, states = case
    m, d = dyn.pin_model, dyn.pin_model.createData()
    rng = np.random.default_rng(4)
    for pose, twist, _ in states:
        motion = dyn.kin.inverse(pose, twist, check_limits=False)
        q, v = motion.q, motion.v
        tau = rng.normal(size=dyn.model.n_actuated)
        a = dyn.tree_accelerations(q, v, tau)
        applied = np.zeros(m.nv)
        applied[dyn.model.actuated_idx] = tau
        applied -= dyn.friction.regressor(d, q, v, dyn.sign_eps) @ dyn.friction.values
        M = pin.crba(m, d, q)
        M = np.triu(M) + np.triu(M, 1).T
        G = dyn.kin.joint_jacobian(pose)
        force = M @ a + pin.nonLinearEffects(m, d, q, v) - applied
        _close(G.T @ force, np.zeros(dyn.n), "G^T (M a + h - tau)", 1e-9 * max(1.0, np.abs(applied).max()))
        K = closure_jacobian(dyn.model, d, q)
        _close(K @ a + closure_bias(dyn.model, d, q, v), np.zeros(len(K)), "K a + Kdot v",
               1e-9 * max(1.0, np.abs(a).max()))


def test_friction_torque_is_the_regressor_times_the_parameters(case):
    dyn, states = case
    d = dyn.pin_model.createData()
    rng = np.random.default_rng(5)
    for pose, twist, _ in states:
        q = dyn.kin.inverse(pose, check_limits=False).q
        v = rng.normal(size=dyn.pin_model.nv)
        for eps in (0.0, 1e-3):
            _close(dyn.friction.torque(d, q, v, eps), dyn.friction.regressor(d, q, v, eps) @ dyn.friction.values,
                   "friction torque")


@pytest.mark.parametrize("numeric", [False, True], ids=["family", "numeric"])
def test_one_assembly_gives_the_ik_and_g(case, numeric):
    dyn, states = case
    kin = Numeric(load_robot(dyn.model.name, dyn.model.variant)) if numeric else dyn.kin
    for pose, twist, accel in states:
        motion, G = kin.motion_and_joint_jacobian(pose, twist, accel)
        ref = kin.inverse(pose, twist, accel, check_limits=False)
        for name in ("q", "v", "a"):
            _close(getattr(motion, name), getattr(ref, name), name)
        _close(G, kin.joint_jacobian(pose), "G")


def test_task_maps_invert_the_platform_joint_motion(case):
    dyn, states = case
    task, rng = dyn.kin.task, np.random.default_rng(6)
    for pose, twist, accel in states:
        qp, vp, ap = task.platform_joint_motion(pose, twist, accel)
        _close(task.task_velocity(qp, vp), twist, "xdot")
        _close(task.task_acceleration(qp, vp, ap), accel, "xddot")
        f = rng.normal(size=task.dim)
        _close(task.platform_rate_matrix(pose).T @ task.platform_joint_force(qp, f), f, "B^T tau_p")
        # the simulator's stage: the pose back from the platform joints and their rates (spatial: one compiled call),
        # against the task's own pose and the Euler rates omega = E [yaw' pitch' roll'] (task_space.euler_rate_matrix)
        back, rates = task.platform_pose_and_rates(qp, twist)
        _close(back.position, pose.position, "p of the platform joints")
        _close(back.rotation, pose.rotation, "R of the platform joints")
        _close(task.pose_from_platform_joints(qp).rotation, pose.rotation, "R of pose_from_platform_joints")
        if task.kind == "spatial":
            _close(rates[:3], twist[:3], "v")
            _close(euler_rate_matrix(qp[3], qp[4]) @ rates[3:], twist[3:], "E (Euler rates)")
        else:
            _close(rates, twist, "platform-joint rates")


NUMERIC = [r for r, v in ROBOTS if load_robot(r, v).config.get("kinematics") == "numeric"]


@pytest.mark.parametrize("robot", NUMERIC)
def test_tree_step_agrees_with_the_reduced_step(robot):
    """100 steps of 0.5 ms from a moving start with a varying force: both RK4 integrators of the same ODE agree far
    below their own truncation error's effect on a control loop (1e-8), and the tree state stays on the closures."""
    base = robot_dynamics(robot)
    dyn = ClosedLoopDynamics(base.kin, sign_eps=2e-3)
    home = dyn.kin.task.pose(np.asarray(dyn.model.config["home"], float))
    hold = dyn.inverse_dynamics(home, np.zeros(dyn.n), np.zeros(dyn.n)).tau
    tree, reduced = ReducedSimulator(dyn), ReducedSimulator(dyn, tree=False)
    assert tree.tree and not reduced.tree
    a = b = tree.state(home, np.full(dyn.n, 0.05))
    for k in range(100):
        tau = hold * (1.0 + 0.1 * np.sin(0.05 * k))
        a, b = tree.step(a, 5e-4, tau), reduced.step(b, 5e-4, tau)
    _close(a.coords, b.coords, "platform joints", 1e-8)
    _close(a.twist, b.twist, "twist", 1e-8)
    q, v = a.tree
    assert np.abs(closure_residual(dyn.model, dyn.pin_model.createData(), q)).max() <= 1e-11
    qa, qda = tree.actuated(a)
    ref_q, ref_qd = reduced.actuated(b)
    _close(qa, ref_q, "actuated positions", 1e-8)
    _close(qda, ref_qd, "actuated velocities", 1e-8)


@pytest.mark.parametrize("robot", NUMERIC)
def test_compiled_tree_step_is_the_python_step(robot):
    """The tree-coordinate step in one compiled call (numeric_kernels.tree_plant_step: the compiled tree's rnea, crba
    and closure rows) against its Python stages (pinocchio's constraintDynamics, or forwardDynamics with the closures'
    K and Kdot v, and the projection on pinocchio's closure rows), one step from each state of a 2000-period run of
    the Python stages (1 s at 0.5 ms) with friction, a damped push of the drives that runs the machine into its end
    stops and holds it there, and a constant wrench on the platform: the same step to 1e-9 (measured ~1e-14).
    Step by step, not two whole runs: in the stops a run amplifies a rounding difference ~1e10 within 0.1 s (two runs
    of the Python stages alone, one with its first force changed by 2 ulp, part by 1e-4 on planar_3rrr)."""
    from pkm_control.control.safety import ForceLimits
    from pkm_control.dynamics.end_stops import EndStops

    base = robot_dynamics(robot)
    dyn = ClosedLoopDynamics(base.kin, gravity=base.gravity, sign_eps=2e-3)
    stops = EndStops.from_config(dyn)
    fast, slow = ReducedSimulator(dyn, end_stops=stops), ReducedSimulator(dyn, compiled=False, end_stops=stops)
    assert fast.tree_compiled and not slow.tree_compiled and fast.tree and slow.tree
    lim = ForceLimits.from_config(dyn.model).limits
    push = np.resize([0.5, -0.2, 0.1], dyn.model.n_actuated) * lim
    wrench = np.array([2.0, -1.0, 1.5, 0.0, 0.0, 0.02])
    s = fast.state(dyn.kin.home_pose(), np.zeros(dyn.n))
    pressed = 0
    for _ in range(2000):
        tau = np.clip(push - 0.2 * lim * slow.actuated(s)[1], -lim, lim)
        a, s = fast.step(s, 5e-4, tau, wrench), slow.step(s, 5e-4, tau, wrench)
        _close(a.tree[0], s.tree[0], "tree positions")
        _close(a.tree[1], s.tree[1], "tree velocities")
        _close(a.twist, s.twist, "twist")
        pressed += stops.penetration(s.tree[0]).max() > 0
    assert pressed >= 100, f"the end stops engaged in {pressed} periods only"
    assert np.abs(closure_residual(dyn.model, dyn.pin_model.createData(), a.tree[0])).max() <= 1e-11
