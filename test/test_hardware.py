"""Simulated robot: what its drives measure and its ground truth (every joint), energy, friction power,
saturation, command timeout, RK4 stability with the smoothed friction, lockstep time."""

import numpy as np
import pytest
from conftest import home

from pkm_control.description.loader import closure_residual
from pkm_control.errors import InvalidInputError
from pkm_control.hardware import DEFAULT_SIGN_EPS, HardwareInterface, RobotState, SimulatedRobot
from pkm_control.hardware.simulated import RK4_REAL_AXIS_LIMIT
from pkm_control.kinematics.task_space import Pose

DT = 5e-4




def test_ground_truth_of_the_tree_coordinate_step_is_its_state_and_the_ik_of_its_pose():
    """A data-only robot's plant steps in tree coordinates and its ground truth is the tree state it carries (no
    inverse kinematics per sample): every joint as the IK of the platform pose and twist gives it (a second
    formulation, the numeric family's Newton solve), to the step's projection tolerance."""
    from pkm_control.dynamics import robot_dynamics

    dyn = robot_dynamics("orthoglide")
    robot = SimulatedRobot(dyn, DT)
    assert robot.sim.tree
    robot.reset(dyn.kin.home_pose())
    for _ in range(40):
        robot.write(np.array([40.0, -25.0, 30.0]))
        robot.step()
    st = robot.ground_truth()
    assert robot.snapshot()[1].tree is not None
    ik = dyn.kin.inverse(st.platform_pose, st.platform_twist, check_limits=False)
    assert np.abs(st.velocity).max() > 1e-3                    # it moves
    assert st.position == pytest.approx(ik.q, abs=1e-9)
    assert st.velocity == pytest.approx(ik.v, abs=1e-9)
    st.position[:] = 0.0                                       # a copy: the plant's state is not changed
    assert robot.ground_truth().position == pytest.approx(ik.q, abs=1e-9)


def test_state_has_every_joint_and_closes_the_loops(palida):
    robot = SimulatedRobot(palida, DT)
    assert isinstance(robot, HardwareInterface)
    twist = np.array([0.1, -0.05, 0.2, 0.3, 0.1, -0.2])
    robot.reset(home(palida), twist, time=2.0)
    st = robot.ground_truth()
    assert isinstance(st, RobotState) and st.time == 2.0
    clm = palida.model
    assert st.names == clm.joint_names and len(st.position) == len(st.velocity) == len(st.effort) == clm.nq
    # the platform joints carry the pose (x y z yaw pitch roll), the velocities are G xdot
    assert st.position[clm.platform_idx] == pytest.approx(palida.kin.task.platform_joint_motion(home(palida))[0])
    assert st.velocity == pytest.approx(palida.kin.joint_jacobian(home(palida)) @ twist, abs=1e-12)
    for _ in range(5):
        robot.write(np.full(6, 100.0))
        robot.step()
        st = robot.ground_truth()
    assert np.abs(closure_residual(clm, clm.create_data(), st.position)).max() < 1e-12
    assert st.effort[clm.actuated_idx].tolist() == [100.0] * 6
    assert np.delete(st.effort, clm.actuated_idx).tolist() == [0.0] * (clm.nq - 6)
    assert st.time == 2.0 + 5 * DT
    # the drives' view: the actuated joints only, as the ground truth has them, effort = the applied force
    meas = robot.read()
    assert meas.time == st.time and robot.read() is meas
    assert meas.position == pytest.approx(st.position[clm.actuated_idx], abs=1e-14)
    assert meas.velocity == pytest.approx(st.velocity[clm.actuated_idx], abs=1e-13)
    assert meas.effort.tolist() == [100.0] * 6


def test_energy_is_conserved_without_friction_gravity_and_actuation(palida):
    """Gravity off, no friction, zero force, the platform coasting with a twist: E = T constant
    (RK4 at 0.5 ms: relative drift < 1e-9 over 0.1 s)."""
    robot = SimulatedRobot(palida.with_gravity([0.0, 0.0, 0.0]), DT, friction=False, force_limits=None)
    robot.reset(home(palida), np.array([0.3, -0.2, 0.1, 0.5, -0.4, 0.6]))
    e0 = robot.energy()
    energies = []
    for _ in range(200):
        robot.write(np.zeros(6))
        robot.step()
        energies.append(robot.energy())
    assert e0 > 1.0
    assert np.abs(np.array(energies) - e0).max() < 1e-9 * e0
    # with gravity the sum of kinetic and potential energy is conserved as well
    robot = SimulatedRobot(palida, DT, friction=False, force_limits=None)
    robot.reset(home(palida), np.array([0.1, 0.0, 0.2, 0.0, 0.3, 0.0]))
    e0 = robot.energy()
    for _ in range(100):
        robot.write(np.zeros(6))
        robot.step()
    assert abs(robot.energy() - e0) < 1e-9 * max(1.0, abs(e0))


def test_friction_dissipates_as_its_power(palida):
    """Gravity off, zero force: E decreases every step, and the loss equals the integral of the
    friction power xdot^T G^T tau_f (trapezoid on the recorded states) to 1e-3."""
    dyn = palida.with_gravity([0.0, 0.0, 0.0])
    robot = SimulatedRobot(dyn, DT, force_limits=None)
    robot.reset(home(palida), np.array([0.3, -0.2, 0.2, 0.5, -0.4, 0.6]))
    st = robot.ground_truth()
    plant = robot.dyn
    data = plant.pin_model.createData()

    def power(s):
        return float(s.velocity @ plant.friction.torque(data, s.position, s.velocity, robot.sign_eps))

    energies, powers = [robot.energy()], [power(st)]
    for _ in range(100):
        robot.write(np.zeros(6))
        robot.step()
        st = robot.ground_truth()
        energies.append(robot.energy())
        powers.append(power(st))
    energies, powers = np.array(energies), np.array(powers)
    assert (np.diff(energies) < 0).all()
    assert (powers > 0).all()
    loss = energies[0] - energies[-1]
    integral = np.sum(0.5 * (powers[1:] + powers[:-1])) * DT
    assert loss > 0.05 * energies[0]
    assert loss == pytest.approx(integral, rel=1e-3)


def test_force_saturation(palida):
    robot = SimulatedRobot(palida, DT)
    robot.reset(home(palida))
    robot.write([3000.0, -3000.0, 100.0, 0.0, 2000.0, -2500.0])
    robot.step()
    st = robot.ground_truth()
    assert robot.tau_applied.tolist() == [2000.0, -2000.0, 100.0, 0.0, 2000.0, -2000.0]
    assert robot.saturated.tolist() == [True, True, False, False, False, True]
    assert st.effort[palida.model.actuated_idx].tolist() == robot.tau_applied.tolist()
    custom = SimulatedRobot(palida, DT, force_limits=[10.0] * 6)
    custom.reset(home(palida))
    custom.write(np.full(6, 15.0))
    custom.step()
    assert custom.tau_applied.tolist() == [10.0] * 6


def test_bad_commands_are_rejected(palida):
    robot = SimulatedRobot(palida, DT)
    with pytest.raises(InvalidInputError, match="reset"):
        robot.read()
    robot.reset(home(palida))
    robot.write(np.full(6, 1.0))
    for bad, match in (([np.nan] * 6, "finite"), ([1.0] * 5, "shape"), ([np.inf] + [0.0] * 5, "finite")):
        with pytest.raises(InvalidInputError, match=match):
            robot.write(bad)
    robot.step()
    assert robot.tau_applied.tolist() == [1.0] * 6          # the last valid command stays
    for kwargs, match in (({"dt": 0.0}, "dt"), ({"dt": DT, "substeps": 0}, "substeps"),
                          ({"dt": DT, "sign_eps": 0.0}, "sign_eps"), ({"dt": DT, "safe_behaviour": "brake"}, "one of"),
                          ({"dt": DT, "command_timeout": -1.0}, "command_timeout")):
        with pytest.raises(InvalidInputError, match=match):
            SimulatedRobot(palida, **kwargs)


@pytest.mark.parametrize("mode", ["hold", "zero"])
def test_command_timeout_engages_the_safe_behaviour_within_two_periods(palida, mode):
    robot = SimulatedRobot(palida, DT, command_timeout=1.5 * DT, safe_behaviour=mode)
    robot.reset(home(palida))
    st = robot.ground_truth()
    hold_tau = robot.safe_behaviour.model.gravity(home(palida)) if mode == "hold" else np.zeros(6)
    tau_g = palida.inverse_dynamics(home(palida), np.zeros(6), np.zeros(6)).tau
    for _ in range(3):                      # commanded: gravity compensation
        robot.write(tau_g, st.time)
        robot.step()
        st = robot.ground_truth()
        assert robot.mode == "command" and not robot.safe_active
    last = st.time
    robot.step()                       # first period without a command: the last one is held
    st = robot.ground_truth()
    assert robot.mode == "command" and robot.tau_applied == pytest.approx(tau_g)
    robot.step()                       # second period: the safe behaviour
    st = robot.ground_truth()
    assert robot.mode == mode and robot.safe_active and st.time - last == pytest.approx(2 * DT)
    if mode == "hold":
        assert robot.tau_applied == pytest.approx(hold_tau, abs=1e-3 * np.abs(hold_tau).max() + 1.0)
    else:
        assert robot.tau_applied.tolist() == [0.0] * 6
    for _ in range(200):
        robot.step()
        st = robot.ground_truth()
    drop = home(palida).position[2] - st.platform_pose.position[2]
    if mode == "hold":
        assert abs(drop) < 1e-4
    else:
        assert drop > 5e-3
    robot.write(tau_g, st.time)             # a new command ends it
    assert robot.mode == "command"
    # before the first command after a reset the safe behaviour holds from the first period
    robot.reset(home(palida), np.array([0.05, 0.0, 0.0, 0.0, 0.0, 0.0]))
    st = robot.ground_truth()
    robot.step()
    assert robot.mode == mode
    if mode == "hold":
        for _ in range(100):
            robot.step()
            st = robot.ground_truth()
        assert np.abs(st.platform_pose.position - home(palida).position).max() < 1e-3


def test_default_friction_smoothing_is_stable_at_half_a_millisecond(palida):
    robot = SimulatedRobot(palida, DT)
    robot.reset(home(palida))
    assert robot.sign_eps == DEFAULT_SIGN_EPS
    f = robot.stability_factor()
    assert 1.0 < f < 0.7 * RK4_REAL_AXIS_LIMIT
    # ten times sharper friction: unstable with one substep, stable with enough substeps
    sharp = SimulatedRobot(palida, DT, sign_eps=DEFAULT_SIGN_EPS / 10)
    sharp.reset(home(palida))
    assert sharp.stability_factor() == pytest.approx(10 * f, rel=0.05)
    assert sharp.stability_factor() > RK4_REAL_AXIS_LIMIT
    fine = SimulatedRobot(palida, DT, sign_eps=DEFAULT_SIGN_EPS / 10, substeps=8)
    fine.reset(home(palida))
    assert fine.stability_factor() < RK4_REAL_AXIS_LIMIT


def test_substeps_converge_and_costs_are_recorded(palida):
    """Same force, 20 periods with 1, 2, 4 RK4 substeps against 16: the error falls by more than
    8x per halving (RK4 is 4th order) and one substep is within 1e-6 m of the converged platform
    position (the fast friction mode is the rough part, see the module docstring)."""
    tau = palida.inverse_dynamics(home(palida), np.zeros(6), np.zeros(6)).tau + 50.0
    out = {}
    for sub in (1, 2, 4, 16):
        robot = SimulatedRobot(palida, DT, substeps=sub)
        robot.reset(home(palida), np.array([0.2, 0.1, 0.25, 0.3, -0.2, 0.5]))
        for _ in range(20):
            robot.write(tau)
            robot.step()
            st = robot.ground_truth()
        out[sub] = (st.platform_pose.position, np.concatenate([st.position, st.velocity]))
        costs = robot.step_cost_us()
        assert len(costs) == 20 and (costs > 0).all()
    err = [np.abs(out[s][1] - out[16][1]).max() for s in (1, 2, 4)]
    assert err[0] > 8 * err[1] > 64 * err[2] > 0
    assert np.abs(out[1][0] - out[16][0]).max() < 1e-6


def test_commands_far_beyond_the_force_limit_are_refused_not_clipped(palida):
    """Up to twice the limit the force saturates; beyond it (1e308, say) the command is refused and the last
    valid one stays in force."""
    robot = SimulatedRobot(palida, DT)
    robot.reset(home(palida))
    robot.write(np.full(6, 100.0))
    robot.write(np.full(6, 3999.0))                      # < 2 x 2000 N: saturates
    robot.step()
    assert robot.tau_applied.tolist() == [2000.0] * 6 and robot.saturated.all()
    for bad in ([1e308] * 6, [0, 0, -1e308, 0, 0, 0], [4000.1] + [0.0] * 5):
        with pytest.raises(InvalidInputError, match="refused"):
            robot.write(bad)
    robot.step()
    assert robot.tau_applied.tolist() == [2000.0] * 6    # the last valid command (3999 N, saturated)


def test_bench_simulation_runs_the_simulated_robot():
    """`pkm bench simulation` drives the simulated robot from what read() gives (the actuated joints)."""
    from pkm_control.benchmarks.speed import bench_simulation_robot

    r = bench_simulation_robot("palida", None, steps=20, warmup=2)
    assert r["robot_step_compiled"] and np.isfinite(r["robot_step"]).all()


@pytest.mark.parametrize("name,x", [("palida", (2, 1.9e154)), ("stewart", (0, 1e200)), ("lopes", (2, 2.0e10)),
                                    ("delta", (2, 1.9e154)), ("delta", (0, 0.3)), ("planar_redundant", (0, 1e200))])
def test_reset_refuses_a_start_the_machine_cannot_be_in(name, x):
    """Unreachable, a joint beyond its range (the fuzz campaign found z = 1.9e154 accepted, then NaN in the hold
    capture): InvalidInputError naming the cause, the state unchanged; so is a start twist beyond the input bound."""
    from pkm_control.dynamics import robot_dynamics

    dyn = robot_dynamics(name)
    robot = SimulatedRobot(dyn, DT, command_timeout=1.5 * DT)
    robot.reset(home(dyn))
    before = robot.state
    if name == "delta" and x[1] == 0.3:
        start = dyn.kin.task.pose([0.3, 0.0, -0.1])          # arm 1 would point up by 105 deg
    else:                                                     # a raw Pose: the task-space constructor refuses it
        start = Pose(home(dyn).position.copy(), home(dyn).rotation)
        start.position[x[0]] = x[1]                           # (index x[0] is that position coordinate)
    with pytest.raises(InvalidInputError, match="start pose refused: .*(range|reach|must be|beyond the limit)"):
        robot.reset(start)
    with pytest.raises(InvalidInputError, match="start refused: twist .* beyond the limit"):
        robot.reset(home(dyn), np.full(dyn.n, 1e300))
    assert robot.state is before
    robot.step()
    assert np.isfinite(robot.read().position).all() and robot.safe_active


def test_a_start_too_fast_for_the_stops_is_refused_by_step_and_the_state_kept():
    """Started at home at 200 m/s upwards, the delta carries more energy than its stops absorb before the IK ends
    (at 50 m/s they hold it): step() refuses with InvalidInputError, state kept, reset goes on."""
    from pkm_control.dynamics import robot_dynamics

    dyn = robot_dynamics("delta")
    robot = SimulatedRobot(dyn, DT)
    robot.reset(home(dyn), np.array([0.0, 0.0, 50.0]))
    for _ in range(400):
        robot.step()
    robot.reset(home(dyn), np.array([0.0, 0.0, 200.0]))
    with pytest.raises(InvalidInputError, match="left the configurations the machine can be in"):
        for _ in range(400):
            before = robot.state
            robot.step()
    assert robot.state is before and np.isfinite(robot.read().position).all()
    robot.reset(home(dyn))
    robot.step()
