"""The robots written as data only (issue 21 sections 4 and 6): config/<robot>.yaml with ``kinematics: numeric`` and
urdf/<robot>.urdf.xacro, no Python of their own: a 3-RRR planar manipulator, a five-bar linkage (task space xy),
the Orthoglide, a 3-UPU.

Each gets every layer from its data; the numbers the tests compare with are derived independently of the code under
test: finite differences of the kinematics, the energy of the spanning tree from pinocchio (computeKineticEnergy,
computePotentialEnergy, not the engine), the plant's own inverse dynamics for the identification. A robot given by
the path of its YAML (outside the package) loads like a shipped one.
"""

from __future__ import annotations

import shutil

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.control.settings import load_settings
from pkm_control.description import closure_residual, load_robot
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.end_stops import EndStops
from pkm_control.dynamics.parameters import BaseModel
from pkm_control.dynamics.simulation import ReducedSimulator
from pkm_control.errors import InvalidModelError
from pkm_control.identification.estimation import identify
from pkm_control.kinematics import robot_kinematics
from pkm_control.kinematics.numeric import Mobility
from pkm_control.kinematics.workspace import random_poses, workspace_box

ROBOTS = ("planar_3rrr", "five_bar", "orthoglide", "tsai_3upu")
H = 1e-4            # difference step (m, rad): the numeric IK repeats to ~5e-12, ~5e-8 of a derivative at this step


def poses(kin, n=4, seed=0):
    """Home, the demo poses and n random reachable poses of the workspace box."""
    cfg = kin.model.config
    fixed = [kin.task.pose(x) for x in [cfg["home"], *cfg.get("demo_poses", [])]]
    return fixed + random_poses(kin, n, np.random.default_rng(seed))


def derivative(f):
    """df/dh at 0 by the five-point stencil (truncation ~H^4 f^(5) / 30)."""
    return (8 * (f(H) - f(-H)) - (f(2 * H) - f(-2 * H))) / (12 * H)


def twist_of(kin, rng):
    """A task velocity of the robot's scale: each component ~ half the workspace box width per second."""
    lo, hi = workspace_box(kin)
    return 0.5 * (hi - lo) * rng.normal(size=kin.task.dim)


@pytest.mark.parametrize("robot", ROBOTS)
def test_data_only(robot):
    """The robot is the numeric family on its data: no module of its own."""
    kin = robot_kinematics(robot)
    assert kin.family == "numeric" and type(kin).__module__ == "pkm_control.kinematics.numeric"
    assert kin.model.config["sources"]


@pytest.mark.parametrize("robot", ROBOTS)
def test_closures_close_to_rounding_and_fk_inverts_ik(robot):
    """IK at home, the demo poses and random poses: every closure residual at rounding level (1e-12 m); the FK of
    the actuated joints from a guess 5 mm (mrad) off gives the pose back."""
    kin = robot_kinematics(robot)
    data = kin.model.model.createData()
    rng = np.random.default_rng(7)
    for pose in poses(kin):
        q = kin.inverse(pose).q
        assert np.abs(closure_residual(kin.model, data, q)).max() < 1e-12
        d = rng.normal(size=kin.task.dim)
        fk = kin.forward(q[kin.model.actuated_idx], guess=kin.task.retract(pose, 5e-3 * d / np.linalg.norm(d))).pose
        assert np.abs(kin.task.difference(fk, pose)).max() < 1e-10


@pytest.mark.parametrize("robot", ROBOTS)
def test_mobility_is_the_actuated_count(robot):
    """dim null(K) = the number of actuators at every pose, no idle motion (a universal joint on each bar, no
    spinning rod); Gruebler's count agrees for these non-overconstrained trees."""
    kin = robot_kinematics(robot)
    clm = kin.model
    for pose in poses(kin, n=2):
        assert kin.mobility(kin.inverse(pose).q) == Mobility(dof=clm.n_actuated, idle=())
    assert clm.model.nv - sum(c.dim for c in clm.closures) == clm.n_actuated


@pytest.mark.parametrize("robot", ROBOTS)
def test_jacobians_and_their_rates_against_finite_differences(robot):
    """G (qdot = G xdot, every tree joint) and J (its actuated rows) against five-point differences of the IK along
    each task coordinate; Gdot and Jdot against five-point differences of G and J along the motion."""
    kin = robot_kinematics(robot)
    rng = np.random.default_rng(1)
    act = kin.model.actuated_idx
    for pose in poses(kin, n=2, seed=2):
        G = kin.joint_jacobian(pose)
        fd = np.column_stack([derivative(lambda h: kin.inverse(kin.task.retract(pose, h * e)).q)
                              for e in np.eye(kin.task.dim)])
        assert np.allclose(G, fd, rtol=0, atol=1e-7 * max(1.0, np.abs(G).max()))
        assert np.allclose(kin.jacobian(pose), G[act], rtol=0, atol=1e-10 * np.abs(G).max())
        xd = twist_of(kin, rng)
        Gd = derivative(lambda h: kin.joint_jacobian(kin.task.retract(pose, h * xd)))
        assert np.allclose(kin.joint_jacobian_dot(pose, xd), Gd, rtol=0, atol=1e-6 * max(1.0, np.abs(Gd).max()))
        assert np.allclose(kin.jacobian_dot(pose, xd), Gd[act], rtol=0, atol=1e-6 * max(1.0, np.abs(Gd).max()))


def tree_energy(kin, x, xd):
    """Kinetic + potential energy of the spanning tree at task coordinates x moving at xd: pinocchio's energies of
    the assembled tree (q by IK, v = G xd), no call into the dynamics engine."""
    model = kin.model.model
    data = model.createData()
    pose = kin.task.pose(x)
    q = kin.inverse(pose, check_limits=False).q
    v = kin.joint_jacobian(pose) @ xd
    return pin.computeKineticEnergy(model, data, q, v) + pin.computePotentialEnergy(model, data, q)


@pytest.mark.parametrize("robot", ROBOTS)
def test_inverse_dynamics_balances_the_power_of_the_energy(robot):
    """Euler-Lagrange in power form. The closed chain is the tree with the closures phi(q) = 0 held by cut-joint
    forces K^T lambda; along any motion that keeps phi = 0 these do no work (K qdot = 0), nor do the platform
    joints (no force), so d/dt (T + V) = tau . qdot_a + (friction power, off here). On a motion
    x(t) = x0 + a sin(w t) + b (1 - cos(w t)) through random states, the engine's actuator forces (no friction)
    times J xdot must equal the central difference of the tree's energy E = T + V (tree_energy) at t = 0
    (dE/dt to O(dt^2) ~ 1e-9 relative)."""
    dyn = robot_dynamics(robot)
    kin = dyn.kin
    rng = np.random.default_rng(4)
    w, dt = 3.0, 1e-5
    for pose in poses(kin, n=2, seed=5):
        x0 = kin.task.coordinates(pose)
        a, b = twist_of(kin, rng) / w, twist_of(kin, rng) / w ** 2
        xd0, xdd0 = a * w, b * w ** 2             # x'(0) = a w, x''(0) = b w^2
        tau = dyn.inverse_dynamics(pose, xd0, xdd0, friction=False).tau
        power = tau @ (kin.jacobian(pose) @ xd0)

        def energy(t):
            x = x0 + a * np.sin(w * t) + b * (1 - np.cos(w * t))
            return tree_energy(kin, x, a * w * np.cos(w * t) + b * w * np.sin(w * t))
        dE = (energy(dt) - energy(-dt)) / (2 * dt)
        scale = np.abs(tau).max() * np.abs(kin.jacobian(pose) @ xd0).max() + abs(dE)
        assert abs(power - dE) < 1e-6 * scale, (power, dE)


@pytest.mark.parametrize("robot", ROBOTS)
def test_free_simulation_conserves_energy(robot):
    """The simulator (RK4 on the reduced dynamics) without friction, actuation or stops, from a moving start:
    kinetic + potential energy of the tree (pinocchio, not the engine) stays constant to 1e-7 of the energy that
    moves (kinetic energy at the start plus the change of potential energy)."""
    dyn = robot_dynamics(robot)
    kin = dyn.kin
    sim = ReducedSimulator(dyn, friction=False)
    home = kin.task.pose(kin.model.config["home"])
    s = sim.state(home, 0.3 * twist_of(kin, np.random.default_rng(6)))
    tau = np.zeros(kin.model.n_actuated)
    energies = []
    for _ in range(100):               # 50 ms at 0.5 ms
        energies.append(tree_energy(kin, kin.task.coordinates(sim.pose(s)), s.twist))
        s = sim.step(s, 5e-4, tau)
    moving = tree_energy(kin, kin.task.coordinates(home), sim.state(home, 0.3 * twist_of(
        kin, np.random.default_rng(6))).twist) - tree_energy(kin, kin.task.coordinates(home), np.zeros(kin.task.dim))
    moving += np.ptp(energies)
    assert np.ptp(energies) < 1e-7 * moving, (np.ptp(energies), moving)


@pytest.mark.parametrize("robot", ROBOTS)
def test_end_stops_hold_the_robot_passively(robot):
    """The machine's end stops from its config (dynamics/end_stops.py): a stop on every actuated and limited
    passive joint; the robot thrown at 3 times its workspace speed without friction or drive force runs into
    them, and the stops never make energy: E + U (tree energy + the stops' stored energy 1/2 k d^2) does not grow
    (passivity, end_stops eq. 1)."""
    dyn = robot_dynamics(robot)
    kin = dyn.kin
    stops = EndStops.from_config(dyn)
    limited = np.isfinite(stops.lower) | np.isfinite(stops.upper)
    assert np.all(stops.stiffness[limited] > 0) and np.all(limited[kin.model.actuated_idx])
    sim = ReducedSimulator(dyn, friction=False, end_stops=stops)
    home = kin.task.pose(kin.model.config["home"])
    lo, hi = workspace_box(kin)
    s = sim.state(home, 3.0 * (hi - lo))
    tau = np.zeros(kin.model.n_actuated)
    budget, hit = None, False
    for _ in range(1000):             # 0.5 s at 0.5 ms
        pose = sim.pose(s)
        q = kin.inverse(pose, check_limits=False).q
        d = stops.penetration(q)
        hit |= bool(np.any(d > 0))
        total = tree_energy(kin, kin.task.coordinates(pose), s.twist) + 0.5 * np.sum(stops.stiffness * d ** 2)
        budget = total if budget is None else budget
        assert total <= budget * (1 + 1e-6) + 1e-9
        s = sim.step(s, 5e-4, tau)
    assert hit


@pytest.mark.parametrize("robot", ROBOTS)
def test_identification_recovers_the_base_parameters(robot):
    """A perturbed plant (every body and friction coefficient moved by seeded factors, as test_identification does)
    follows a multi-sine; the identification of its recorded joints and forces recovers every base parameter
    (noise-free), on the base model built from the robot's data: to 1e-6 relative, or to the condition number of
    the observation matrix times 1e-12 where that is larger: the rounding of the second differences at 500 Hz,
    eps / (dt w)^2 ~ 7e-13 of the acceleration for the 2 Hz harmonic, amplified by the condition (the 3-UPU's
    cylinders turn little about their own axes: cond ~3e7)."""
    import test_identification as ti

    dyn = robot_dynamics(robot)
    true_dyn = ti.plant(dyn, ti.load_set(dyn, ti.perturbed_set(dyn, seed=11)))
    base = BaseModel(dyn, "per-body")
    p_true = base.values_of(true_dyn)
    run, states = ti.recorded(true_dyn)
    ident = identify(run, dyn, method="wls", base=base, cutoff=ti.CUTOFF)
    W = np.vstack([base.observation_rows([p], [t], [a])[0] for p, t, a in states[::10]])
    s = np.linalg.norm(W @ p_true) / np.linalg.norm(W, axis=0)
    err = np.abs(ident.values - p_true) / (np.abs(p_true) + s)
    assert err.max() < max(1e-6, 1e-12 * ident.condition_number), (ident.names[int(np.argmax(err))], err.max(),
                                                                    ident.condition_number)


def test_controllers_have_gains_for_every_new_robot():
    """config/controllers.yaml gives each new robot the gains of every law family, one value per actuated joint
    or task coordinate."""
    for robot in ROBOTS:
        kin = robot_kinematics(robot)
        for controller in ("pd_feedforward", "computed_torque", "task_pd"):
            s = load_settings(robot, controller, n_actuated=kin.model.n_actuated, n_task=kin.task.dim)
            assert len(s["kp"]) == (kin.task.dim if controller == "task_pd" else kin.model.n_actuated)


def test_a_robot_outside_the_package_loads_from_its_yaml_path(tmp_path):
    """A robot in a folder of one's own (its YAML and xacro side by side, gains in the YAML): load_robot and the
    controller settings take the YAML's path, its RViz config is the one beside it (if any); a path without a
    description beside it is refused by name."""
    from pkm_control.description.paths import share_dir
    from pkm_control.description.robots import robot_rviz

    root = share_dir()
    cfg = (root / "config" / "tsai_3upu.yaml").read_text() + \
        "gains:\n  pd: {kp: 2.0e+4, kd: 600.0}\n  computed_torque: {kp: 22500.0, kd: 300.0}\n"
    (tmp_path / "mybot.yaml").write_text(cfg)
    shutil.copy(root / "urdf" / "tsai_3upu.urdf.xacro", tmp_path / "mybot.urdf.xacro")
    shutil.copy(root / "urdf" / "ros2_control.xacro", tmp_path / "ros2_control.xacro")
    path = str(tmp_path / "mybot.yaml")
    mine, shipped = load_robot(path), load_robot("tsai_3upu")
    assert mine.joint_names == shipped.joint_names
    kin = robot_kinematics(path)
    q = kin.inverse(kin.task.pose(kin.model.config["home"])).q
    assert np.allclose(q, robot_kinematics("tsai_3upu").inverse(kin.task.pose(kin.model.config["home"])).q,
                       rtol=0, atol=1e-12)
    assert load_settings(path, "pd_feedforward", n_actuated=3)["kp"] == [2.0e4] * 3
    assert robot_rviz(path) is None and robot_rviz("tsai_3upu") == root / "rviz" / "tsai_3upu.rviz"
    shutil.copy(root / "rviz" / "tsai_3upu.rviz", tmp_path / "mybot.rviz")
    assert robot_rviz(path) == tmp_path / "mybot.rviz"
    (tmp_path / "lonely.yaml").write_text(cfg)
    with pytest.raises(InvalidModelError, match="no description beside it"):
        load_robot(str(tmp_path / "lonely.yaml"))


@pytest.mark.ros
@pytest.mark.parametrize("robot", ROBOTS)
def test_a_controlled_motion_through_the_node_graph(robot, monkeypatch):
    """The four nodes in one process, lockstep on sim time, the simulated robot (end stops, friction) inside
    joint_controller, the computed-force controller with the robot's gains from controllers.yaml: a 0.2 s quintic
    move from home a third of the way to the first demo pose ends there (< 0.5 mm or mrad), the actuated joints
    tracked within 1 mm (mrad) of their references, with no rejected message, no saturation and no safe behaviour."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.executors import SingleThreadedExecutor

    import test_nodes as tn

    kin = robot_kinematics(robot)
    cfg = kin.model.config
    home = np.asarray(cfg["home"], float)
    goal_x = home + (np.asarray(cfg["demo_poses"][0], float) - home) / 3
    goal = f"{{type: point_to_point, goal: {goal_x.tolist()}, duration: 0.2, profile: quintic}}"
    monkeypatch.setenv("ROS_DOMAIN_ID", tn.DOMAIN)
    rclpy.init(domain_id=int(tn.DOMAIN))
    ex = SingleThreadedExecutor()
    try:
        gen, ik, cf, ctl = tn.graph(ex, "cf_rb_friction", robot=robot, goal=goal)
        err = tn.trace_errors(ctl, act=kin.model.actuated_idx)
        assert tn.spin_until(ex, lambda: ctl.k >= 800 and gen.sched.active is None), f"only {ctl.k} periods"
        nodes = (gen, ik, cf, ctl)
        assert all(n.diag.rejected == 0 for n in nodes), [(n.get_name(), n.diag.last_reject) for n in nodes]
        reached = kin.task.coordinates(tn.truth(ctl).platform_pose)
        assert np.abs(reached - goal_x).max() < 5e-4, (reached, goal_x)
        assert len(err) >= 800 and max(err) < 1e-3, max(err)
        c = ctl.loop.controller
        assert c.saturations == 0 and ctl.diag.safe_behaviour == "none" and ctl.diag.deadline_misses == 0
    finally:
        for node in list(ex.get_nodes()):
            ex.remove_node(node)
            node.destroy_node()
        ex.shutdown()
        rclpy.shutdown()
