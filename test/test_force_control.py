"""Force and interaction control (issue 24; Taghirad, chapter Force Control): the contact environment of the
simulated robot (hardware/contact.py), its force/torque sensor, and the force laws on the controller core
(control/force.py), each checked against numbers from outside the code under test:

* the contact model: forces by hand (Kelvin-Voigt, no pulling, regularized Coulomb, the box's nearest face, the
  moment r x f); a free drop onto the plane conserves the mechanism's energy plus k d^2 / 2 without damping, within
  RK4's error (which falls > 4x per halving of the step), and loses it with damping;
* the sensor: bias, noise standard deviation, the first-order filter's step response 1 - a^k;
* stiffness control: the steady-state force equals the series-spring closed form kc k_e / (kc + k_e) (x_e - x_d)
  (derived in force.Stiffness);
* direct force control: the integral action takes the force to F_d on a static surface, with the plant's friction
  and the surface's friction the model does not have (Stewart with the F/T sensor and with the actuator forces as
  the measurement, Figs. 28 and 29; PaLiDA once); with z force-controlled and x moving, it slides along the surface
  holding the force;
* impedance control: the platform's motion is the designed M_d e'' + D_d e' + K_d e = F_e driven by the recorded
  contact force (scipy.signal.lsim, the same input), which an impedance with twice the inertia misses;
* admittance: at rest the reference offset is K_d dX = -F_m and the position reference is the IK of X_d (+) dX;
* contact switched on and off every period: no NaN, every command within the force limits, no end stop reached;
* the watchdog on the wrench (missing, stale, beyond the contact-force limit) and the force limit on F_d.

Sim time only; the Stewart platform (seed 004's robot) on the generic engine (~2 ms per period).
"""

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from scipy import signal

from pkm_control.control import CONTROL, References
from pkm_control.control.force import Admittance, ForceReference, WrenchMeasurement, force_settings, task_wrench
from pkm_control.control.settings import make_force_controller
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError, InvalidModelError
from pkm_control.hardware import JointMeasurement, SimulatedRobot
from pkm_control.hardware.contact import Box, ContactEnvironment, Plane, WrenchSensor, load_environment, wrench_sensor
from pkm_control.kinematics.task_space import Pose, rot_z

DT = 0.0005
Z_ONLY = np.array([False, False, True, False, False, False])


@pytest.fixture(scope="module")
def stewart():
    return robot_dynamics("stewart")


def _home(dyn):
    return dyn.kin.task.pose(dyn.model.config["home"])


def _plant(dyn, tool, gap, k=1e5, c=500.0, mu=0.0, friction=True, substeps=1):
    """The simulated robot with a horizontal plane ``gap`` m below the tool point at home, and an exact sensor."""
    z = _home(dyn).position[2] + tool[2] - gap
    env = ContactEnvironment(tool, [Plane(k, c, mu, point=[0.0, 0.0, z], normal=[0.0, 0.0, 1.0])])
    return SimulatedRobot(dyn, DT, substeps=substeps, friction=friction, environment=env,
                          wrench_sensor=WrenchSensor(tool)), z


def _run(dyn, robot, controller, pose_d, n, force=None, each=None):
    """n periods from rest at home through Controller.update with the reference pose_d (a Pose: constant; or a
    function of t giving (pose, twist, acceleration)) and ``force``; returns (the commands, the contact wrench on
    the platform after each period, the platform poses)."""
    act = dyn.model.actuated_idx
    motion = pose_d if callable(pose_d) else (lambda t: (pose_d, np.zeros(6), np.zeros(6)))
    robot.reset(_home(dyn))
    cmds, wrenches, poses = [], [], []
    for k in range(n):
        t = k * DT
        if each is not None:
            each(k, robot)
        m = dyn.kin.inverse(*motion(t))
        cmd = controller.update(t, robot.read(), References(m.q[act], m.v[act], m.a[act], force))
        robot.write(cmd.tau, t)
        robot.step()
        cmds.append(cmd)
        wrenches.append(robot.contact_wrench())
        poses.append(robot.ground_truth().platform_pose)
    return cmds, np.array(wrenches), poses


# ----------------------------------------------------------------------------- the contact model

def test_plane_and_box_forces_by_hand():
    """Plane z = 0, k = 1e4, c = 100, mu = 0.5, eps = 1e-3: at d = 2 mm moving in at 0.1 m/s f_n = 20 + 10 = 30 N;
    moving out at 0.5 m/s k d + c d' = 20 - 50 < 0: no pull (0); sliding at 0.2 m/s along x (tanh(200) = 1) the
    friction is -mu f_n = -10 N along x; outside: nothing. A box pushes out through its nearest face. The wrench on
    the platform carries r x f with r = R p_t."""
    plane = Plane(1e4, 100.0, 0.5, point=[0, 0, 0], normal=[0, 0, 2.0])
    np.testing.assert_allclose(plane.force(np.array([0, 0, -0.002]), np.array([0, 0, -0.1])), [0, 0, 30.0])
    np.testing.assert_allclose(plane.force(np.array([0, 0, -0.002]), np.array([0, 0, 0.5])), 0.0)
    np.testing.assert_allclose(plane.force(np.array([0, 0, -0.002]), np.array([0.2, 0, 0])), [-10.0, 0, 20.0])
    np.testing.assert_allclose(plane.force(np.array([0, 0, 0.001]), np.array([0, 0, -1.0])), 0.0)
    assert plane.potential(np.array([0, 0, -0.002])) == pytest.approx(0.5 * 1e4 * 0.002 ** 2)
    box = Box(1e5, center=[1.0, 0, 0], half_extents=[0.1, 0.2, 0.3])
    np.testing.assert_allclose(box.force(np.array([1.095, 0.0, 0.1]), np.zeros(3)), [500.0, 0, 0], atol=1e-9)
    np.testing.assert_allclose(box.force(np.array([1.0, -0.199, 0.0]), np.zeros(3)), [0, -100.0, 0], atol=1e-9)
    np.testing.assert_allclose(box.force(np.array([1.2, 0.0, 0.0]), np.zeros(3)), 0.0)
    env = ContactEnvironment([0.1, 0.0, -0.1], [plane])
    pose = Pose(np.array([0.0, 0.0, 0.098]), rot_z(np.pi / 2))        # tool at (0, 0.1, -0.002): d = 2 mm
    w = env.wrench(pose, np.zeros(6))
    np.testing.assert_allclose(w, [0, 0, 20.0, 0.1 * 20.0, 0, 0], atol=1e-9)      # (0, 0.1, -0.1) x (0, 0, 20)
    for bad in (dict(stiffness=0.0), dict(stiffness=1e4, damping=-1.0)):
        with pytest.raises(InvalidInputError, match="stiffness|damping"):
            Plane(**bad, point=[0, 0, 0], normal=[0, 0, 1])


def test_the_contact_wrench_enters_the_dynamics_as_the_engines_external_wrench(stewart):
    """The tool 1 mm into the plane at rest, no joint friction: the actuator forces of the engine's inverse dynamics
    with the contact's wrench (engine.inverse_dynamics, eq. 1) hold the simulated robot still (< 1e-9 m after a
    period); those without it (the actuators then carry the whole weight) lift it off."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], -0.001, friction=False)
    pose = _home(stewart)
    w = robot.environment.wrench(pose, np.zeros(6))
    assert w[2] == pytest.approx(100.0)                                # k d = 1e5 x 1 mm
    for wrench, still in ((w, True), (None, False)):
        tau = stewart.inverse_dynamics(pose, np.zeros(6), np.zeros(6), wrench=wrench, friction=False).tau
        robot.reset(pose)
        robot.write(tau)
        robot.step()
        moved = np.abs(robot.ground_truth().platform_pose.position - pose.position).max()
        assert (moved < 1e-9) == still, moved


def test_environment_yaml_has_a_plane_and_a_box_per_robot():
    for robot in ("stewart", "palida"):
        env, sensor = load_environment(robot)
        assert {type(s) for s in env.surfaces} == {Plane, Box}
        assert sensor["cutoff"] > 0
    with pytest.raises(InvalidInputError, match="no section"):
        load_environment("no_such_robot")
    with pytest.raises(InvalidModelError, match="shape"):
        ContactEnvironment.from_dict({"tool_point": [0, 0, 0], "surfaces": [{"shape": "sphere", "stiffness": 1.0}]})


@pytest.mark.parametrize("damping", [0.0, 500.0])
def test_free_drop_onto_the_plane(stewart, damping):
    """Stewart, no joint friction, zero actuator force, the tool 2 mm above a 1e5 N/m plane: it falls, hits and
    bounces. Without damping the mechanism's energy plus the contact's k d^2 / 2 stays constant within RK4's error:
    below 1e-4 of the largest energy stored in the contact, and > 4x smaller with two substeps (measured 7.4x: the force
    is continuous but its slope jumps at touch-down, which costs RK4 its fourth order across that step). With
    damping it loses energy: at least 10 % of the largest stored energy by 0.2 s, and it never gains more than the
    undamped run's integration error."""
    def drop(substeps):
        robot, _ = _plant(stewart, [0.0, 0.0, -0.1], 0.002, c=damping, friction=False, substeps=substeps)
        robot.reset(_home(stewart))
        env = robot.environment
        energy = [robot.energy() + env.potential(_home(stewart))]
        stored = []
        for _ in range(400):
            robot.write(np.zeros(6))
            robot.step()
            pose = robot.ground_truth().platform_pose
            stored.append(env.potential(pose))
            energy.append(robot.energy() + stored[-1])
        return np.array(energy), max(stored)

    energy, stored = drop(1)
    assert stored > 1.0                                     # it did hit: > 1 J in the spring (d > 4.5 mm)
    if damping == 0.0:
        drift = np.abs(energy - energy[0]).max()
        assert drift < 1e-4 * stored
        finer = np.abs(drop(2)[0] - energy[0]).max()
        assert finer < drift / 4
    else:
        assert energy[-1] < energy[0] - 0.1 * stored
        assert np.diff(energy).max() < 1e-4 * stored


def test_wrench_sensor_bias_noise_and_filter():
    """Bias adds; the noise has its standard deviation (2000 draws: within 10 %); the low-pass of cut-off f_c answers
    a step of F with F (1 - a^k), a = exp(-2 pi f_c dt); the sample is F_e = -R^T f in the sensor frame."""
    pose = Pose(np.zeros(3), rot_z(0.3))
    rng = np.random.default_rng(1)
    f = np.array([3.0, -4.0, 20.0])
    s = WrenchSensor([0, 0, -0.1], bias=[1, 2, 3, 0, 0, 0])
    w = s.measure(0.0, pose, f, DT, rng)
    np.testing.assert_allclose(w.wrench, np.concatenate([-(pose.rotation.T @ f), [0, 0, 0]]) + [1, 2, 3, 0, 0, 0])
    noisy = WrenchSensor([0, 0, 0], noise_std=[0.5, 0.5, 0.5, 0.02, 0.02, 0.02])
    x = np.array([noisy.measure(k * DT, pose, f, DT, rng).wrench for k in range(2000)])
    np.testing.assert_allclose(x.std(axis=0), [0.5, 0.5, 0.5, 0.02, 0.02, 0.02], rtol=0.1)
    filt = WrenchSensor([0, 0, 0], cutoff=50.0)
    filt.measure(0.0, Pose.identity(), np.zeros(3), DT, rng)
    y = [filt.measure(k * DT, Pose.identity(), np.array([0, 0, -10.0]), DT, rng).wrench[2] for k in range(1, 41)]
    a = np.exp(-2 * np.pi * 50.0 * DT)
    np.testing.assert_allclose(y, 10.0 * (1 - a ** np.arange(1, 41)), rtol=1e-12)


# ----------------------------------------------------------------------------- the laws on the plant

def test_stiffness_control_steady_state_force_is_the_series_spring(stewart):
    """Stiffness control (no force measurement) with x_d 2 mm beyond the surface (the tool 2 mm above it at home,
    x_d 4 mm lower): the force settles at kc k_e / (kc + k_e) (x_e - x_d) (force.Stiffness), kc = the z gain of the
    settings, k_e = 1e5 N/m: 175.2 N, within 0.2 %. The plant has no joint friction here: Coulomb friction makes the
    equilibrium a set, not a point. The sensor measures F_e = -f (the contact force on the tool)."""
    robot, z_plane = _plant(stewart, [0.0, 0.0, -0.1], 0.002, friction=False)
    c = make_force_controller(stewart, "stiffness")
    pose_d = stewart.kin.task.retract(_home(stewart), [0, 0, -0.004, 0, 0, 0])
    cmds, wrenches, _ = _run(stewart, robot, c, pose_d, 600)
    kc = force_settings("stewart", "stiffness")["gains"]["motion"]["kp"][2]
    ke = 1e5
    x_d_tool = pose_d.position[2] - 0.1
    expected = kc * ke / (kc + ke) * (z_plane - x_d_tool)
    assert all(cmd.mode == CONTROL for cmd in cmds)
    assert wrenches[-1][2] == pytest.approx(expected, rel=2e-3)
    assert robot.read().sensors["wrench"].wrench[2] == pytest.approx(-wrenches[-1][2], rel=1e-9)


@pytest.mark.parametrize("name", ["inner_force", "inner_force_joint", "inner_force_joint_space"])
def test_force_in_the_inner_loop_settles_at_the_outer_loops_spring(stewart, name):
    """Force feedback in the inner loop (Figs. 31-33) with x_d 2 mm beyond the surface, as the stiffness test: at
    rest the inner loop makes F_e the outer motion loop's force, so the contact force is two springs in series, the
    outer loop's and the surface's: kc k_e / (kc + k_e) (x_e - x_d) with kc the task z gain (Figs. 31, 32), and with
    the joint loop of Fig. 33 kc = 1 / ((J^T Kp_q J)^-1)_zz, J at the final pose (the joint springs seen in the
    task, to first order in the 2 mm); within 0.5 %. In free space before the touch the command is the motion loop's
    with (1 + Kf) times its gains. Fig. 32 without an F/T sensor on the plant (the actuator forces only)."""
    robot, z_plane = _plant(stewart, [0.0, 0.0, -0.1], 0.002, friction=False)
    if name != "inner_force":
        robot.wrench_sensor = None
    c = make_force_controller(stewart, name)
    s = force_settings("stewart", name)
    pose_d = stewart.kin.task.retract(_home(stewart), [0, 0, -0.004, 0, 0, 0])
    cmds, wrenches, poses = _run(stewart, robot, c, pose_d, 600)
    assert all(cmd.mode == CONTROL and not cmd.saturated.any() for cmd in cmds)
    if name == "inner_force_joint_space":
        J = stewart.kin.jacobian(poses[-1])
        kc = 1.0 / np.linalg.inv(J.T @ (np.asarray(s["gains"]["joint"]["kp"]) * J))[2, 2]
    else:
        kc = s["gains"]["motion"]["kp"][2]
    ke = 1e5
    expected = kc * ke / (kc + ke) * (z_plane - (pose_d.position[2] - 0.1))
    assert wrenches[-1][2] == pytest.approx(expected, rel=5e-3)
    assert np.abs(wrenches[-1][:2]).max() < 1e-3 * expected
    if name == "inner_force":       # the first period, free space: (1 + Kf) times the motion PD's force + gravity
        law, home = c.law, _home(stewart)
        e = stewart.kin.task.difference(pose_d, home)
        f = (1 + s["inner_force_gain"]) * np.asarray(s["gains"]["motion"]["kp"]) * e
        np.testing.assert_allclose(cmds[0].tau, law.distribute(home, f) + law.model.gravity(home), rtol=1e-9)


@pytest.mark.parametrize("robot_name, name", [("stewart", "direct_force"), ("stewart", "direct_force_joint"),
                                              ("stewart", "direct_force_joint_space"), ("palida", "direct_force")])
def test_direct_force_control_converges_to_the_reference(robot_name, name, request):
    """Direct force control (Fig. 28/34) pressing F_d = 50 N down on a static 1e5 N/m surface 0.2 mm below the tool
    (PaLiDA: touching it; its drives' Coulomb friction makes the integral wind up on the way, which then takes
    seconds to unwind), with the plant's joint friction and mu = 0.3 on the surface (neither in the controller's
    model): the integral action takes the force to 50 N (within 1 % over the last 50 ms); the motion directions stay
    at X_d (< 0.1 mm); without the integral action the force stays short of the reference. direct_force_joint: the
    force measured by the actuator forces (Fig. 29, F = J^T (tau - tau_g)), no F/T sensor read, on a plant without
    joint friction: the actuator forces count the friction as contact force, and the plant's regularized Coulomb
    friction (a steep viscous slope at creep speed) then slows the force loop (measured: 26 N of 50 after 0.6 s).
    It converges more slowly than with the sensor (it counts its own damping force Kd xd as contact): 0.8 s here.
    direct_force_joint_space (Fig. 30): the same measurement, the motion loop in the joint space (IK of X_c, joint
    PD + gravity), integral only; without the integral its force is the joint loop's spring, far short."""
    dyn = request.getfixturevalue("stewart") if robot_name == "stewart" else robot_dynamics("palida")
    tool = [0.0, 0.0, -0.1] if robot_name == "stewart" else [0.0, 0.0, -0.05]
    joint = name.startswith("direct_force_joint")
    robot, _ = _plant(dyn, tool, 0.0002 if robot_name == "stewart" else 0.0, mu=0.3, friction=not joint)
    c = make_force_controller(dyn, name)
    if joint:
        robot.wrench_sensor = None                  # nothing but the drives' measurement
    force = ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY)
    cmds, wrenches, poses = _run(dyn, robot, c, _home(dyn), 1600 if joint else 1200, force)
    assert all(cmd.mode == CONTROL for cmd in cmds)
    last = wrenches[-100:, 2]
    np.testing.assert_allclose(last, 50.0, rtol=1e-2)
    assert np.abs(poses[-1].position[:2]).max() < 1e-4
    # the same run without integral action stops short of the reference
    c = make_force_controller(dyn, name, overrides={"gains": {**force_settings(robot_name, name)["gains"], "force": {
        "kf": 0.0 if name == "direct_force_joint_space" else 1e-6, "ki": 0.0}}})
    assert _run(dyn, robot, c, _home(dyn), 200, force)[1][-1, 2] < 40.0


def test_direct_force_control_slides_along_the_surface(stewart):
    """Hybrid: z force-controlled (F_d = 50 N), x motion-controlled (a 10 mm move along the surface, 1 - cos in
    0.3 s, peak 52 mm/s), on the surface with mu = 0.3 (15 N of friction against the motion) and the plant's joint
    friction, from rest in contact: x follows the reference within 0.2 mm, the normal force stays within 5 % of
    50 N while sliding (measured 50.4-51.0 N) and within 1 % at the end (49.7 N, the integral recovering the dip at
    the stop); the friction along x acts against the motion (measured -15.1 to -15.3 N = mu f_n)."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], 0.0, mu=0.3)
    c = make_force_controller(stewart, "direct_force")
    force = ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY)
    home, task = _home(stewart), stewart.kin.task
    settle, move, w = 0.4, 0.3, np.pi / 0.3

    def motion(t):
        s = min(max(t - settle, 0.0), move)
        active = 0.0 < t - settle < move
        x = 0.005 * (1 - np.cos(w * s))
        v = 0.005 * w * np.sin(w * s) if active else 0.0
        a = 0.005 * w ** 2 * np.cos(w * s) if active else 0.0
        return task.retract(home, [x, 0, 0, 0, 0, 0]), np.array([v, 0, 0, 0, 0, 0]), np.array([a, 0, 0, 0, 0, 0])

    n = int((settle + move + 0.2) / DT)
    cmds, wrenches, poses = _run(stewart, robot, c, motion, n, force)
    assert all(cmd.mode == CONTROL for cmd in cmds)
    t = np.arange(1, n + 1) * DT
    x_err = np.array([motion(ti)[0].position[0] - p.position[0] for ti, p in zip(t, poses)])
    assert np.abs(x_err).max() < 2e-4
    sliding = (t > settle + 0.05) & (t < settle + move - 0.05)
    np.testing.assert_allclose(wrenches[sliding, 2], 50.0, rtol=0.05)
    np.testing.assert_allclose(wrenches[-50:, 2], 50.0, rtol=1e-2)
    assert (wrenches[sliding, 0] < -10.0).all()                       # friction against +x motion: mu f_n = 15 N
    assert abs(poses[-1].position[0] - 0.01) < 1e-4


def test_direct_force_control_with_the_configured_environment_and_sensor(stewart):
    """config/environment.yaml's Stewart: the table (1e5 N/m, mu 0.3) 2 mm below the tool, the box beside, and the
    sensor with 0.5 N noise and a 200 Hz low-pass, the plant's joint friction: direct force control approaches (the
    integral at ki F_d = 5 mm/s), touches and settles at F_d = 50 N, the mean over the last 0.1 s within 1 %, every
    sample within 5 %; the measurement is noisy (its std about the true force > 0.1 N)."""
    env, sensor = load_environment("stewart")
    robot = SimulatedRobot(stewart, DT, environment=env, wrench_sensor=wrench_sensor(env, sensor), measurement_seed=3)
    c = make_force_controller(stewart, "direct_force")
    force = ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY)
    measured = []
    cmds, wrenches, _ = _run(stewart, robot, c, _home(stewart), 2000, force,
                             each=lambda k, r: measured.append(-r.read().sensors["wrench"].wrench[2]))
    assert all(cmd.mode == CONTROL for cmd in cmds)
    last = wrenches[-200:, 2]
    assert last.mean() == pytest.approx(50.0, rel=1e-2)
    np.testing.assert_allclose(last, 50.0, rtol=5e-2)
    assert np.std(np.array(measured[-200:]) - wrenches[-201:-1, 2]) > 0.1


def test_impedance_control_reproduces_the_designed_impedance(stewart):
    """Impedance control with force measurement (Fig. 36), exact model (plant without joint friction), x_d 4 mm
    down, the tool 2 mm above a 1e5 N/m, c = 200 surface: approach, touch-down and settling. The platform's error
    e = z_d - z is the response of the designed M_d e'' + D_d e' + K_d e = F_e to the recorded contact force F_e
    (the same input, held over each period as the controller samples it; scipy.signal.lsim) within 2 % of the
    largest error; the design with twice the inertia is off by more than 10 %; x, y and the angles stay < 1e-6."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], 0.002, c=200.0, friction=False)
    c = make_force_controller(stewart, "impedance")
    pose_d = stewart.kin.task.retract(_home(stewart), [0, 0, -0.004, 0, 0, 0])
    cmds, wrenches, poses = _run(stewart, robot, c, pose_d, 500)
    assert all(cmd.mode == CONTROL for cmd in cmds)
    assert wrenches[:, 2].max() > 40.0                                # it made contact
    z = np.array([p.position[2] for p in poses])
    e = np.concatenate([[pose_d.position[2] - 1.2], pose_d.position[2] - z])
    f_e = np.concatenate([[0.0], -wrenches[:, 2]])                    # the wrench the platform applies, F_e
    imp = force_settings("stewart", "impedance")["gains"]["impedance"]
    t = np.arange(len(e)) * DT

    def designed(m):
        d, k = imp["d_d"][2], imp["k_d"][2]
        sys = signal.StateSpace([[0, 1], [-k / m, -d / m]], [[0], [1 / m]], [[1, 0]], [[0]])
        return signal.lsim(sys, f_e, t, X0=[e[0], 0.0], interp=False)[1]

    m_d = imp["m_d"][2]
    scale = np.abs(e).max()
    assert np.abs(designed(m_d) - e).max() < 0.02 * scale
    assert np.abs(designed(2 * m_d) - e).max() > 0.1 * scale
    drift = np.array([stewart.kin.task.difference(p, pose_d) for p in poses])
    assert np.abs(drift[:, [0, 1, 3, 4, 5]]).max() < 1e-6


def test_admittance_offsets_the_position_reference(stewart):
    """Admittance control (position-based) pressing on the surface: at rest the admittance filter's offset is
    K_d dX = -F_m (1e-3), and the position reference for the drives is the IK of X_d (+) dX."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], 0.002, friction=False)
    c = make_force_controller(stewart, "admittance")
    pose_d = stewart.kin.task.retract(_home(stewart), [0, 0, -0.004, 0, 0, 0])
    cmds, wrenches, _ = _run(stewart, robot, c, pose_d, 600)
    law = c.law
    assert isinstance(law, Admittance) and all(cmd.mode == CONTROL for cmd in cmds)
    f_m = task_wrench(stewart.kin.task, robot.ground_truth().platform_pose, robot.read().sensors["wrench"])
    assert f_m[2] < -40.0
    np.testing.assert_allclose(law.k_d * law._dx, -f_m, rtol=1e-3, atol=1e-3)
    q_c = stewart.kin.inverse(stewart.kin.task.retract(pose_d, law._dx)).q[stewart.model.actuated_idx]
    np.testing.assert_allclose(law.position_reference[0], q_c, atol=1e-12)


@pytest.mark.parametrize("name", ["stiffness", "direct_force", "direct_force_joint_space", "inner_force",
                                  "inner_force_joint_space", "impedance", "impedance_no_force", "admittance"])
def test_contact_switching_every_period_stays_bounded(stewart, name):
    """A stiff (1e6 N/m) surface the tool presses 1 mm into, switched on and off every period (the force jumps by
    ~1 kN each period): every command finite and within the force limits, the state finite, no end stop reached,
    the platform within 5 mm of its start."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], -0.001, k=1e6, c=2000.0, mu=0.3)
    env = robot.environment
    c = make_force_controller(stewart, name)

    def switch(k, robot):
        robot.environment = env if k % 2 == 0 else None

    force = ForceReference(np.array([0, 0, -100.0, 0, 0, 0]), Z_ONLY)
    cmds, wrenches, poses = _run(stewart, robot, c, _home(stewart), 200, force, switch)
    limits = c.limits.limits
    assert np.abs(wrenches[::2, 2]).max() > 500.0 and np.abs(wrenches[1::2]).max() == 0.0
    for cmd in cmds:
        assert np.isfinite(cmd.tau).all() and (np.abs(cmd.tau) <= limits).all()
    gt = robot.ground_truth()
    assert np.isfinite(gt.position).all() and np.isfinite(gt.velocity).all()
    tree, cut = robot.penetrations(gt)
    assert not tree.any() and not cut.any()
    assert np.abs(poses[-1].position - _home(stewart).position).max() < 5e-3


# ----------------------------------------------------------------------------- safety

def test_wrench_watchdog_and_force_limit(stewart):
    """The controller's safe behaviour engages on a missing wrench, a stale one (older than wrench_timeout), a
    non-finite one and a contact force beyond contact_force_limit, and releases on a fresh one; F_d beyond
    force_limit acts as F_d at the limit; non-finite actuator forces where they are the measurement (Fig. 29) engage
    it too; an unknown wrench source, the actuator forces for a law that needs the contact wrench itself, or an
    inner force gain >= 1 on the actuator forces (Fig. 32: the inner loop's pole -Kf), are refused."""
    c = make_force_controller(stewart, "direct_force")
    s = force_settings("stewart", "direct_force")
    act = stewart.model.actuated_idx
    m = stewart.kin.inverse(_home(stewart), np.zeros(6), np.zeros(6))
    q, z = m.q[act], np.zeros(6)
    refs = References(q, z, z, ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY))
    point = np.array([0, 0, -0.1])

    def meas(t, wrench=None, age=0.0):
        sensors = {} if wrench is None else {"wrench": WrenchMeasurement(t - age, np.asarray(wrench, float), point)}
        return JointMeasurement(t, q, z, z, sensors)

    assert c.update(0.0, meas(0.0, np.zeros(6)), refs).mode == CONTROL
    assert "no wrench" in c.update(DT, meas(DT), refs).reason
    assert "ms old" in c.update(2 * DT, meas(2 * DT, np.zeros(6), age=2 * s["wrench_timeout"]), refs).reason
    assert "finite" in c.update(3 * DT, meas(3 * DT, [0, 0, np.nan, 0, 0, 0]), refs).reason
    too_much = [0, 0, -1.01 * s["contact_force_limit"], 0, 0, 0]
    assert "contact_force_limit" in c.update(4 * DT, meas(4 * DT, too_much), refs).reason
    assert c.update(5 * DT, meas(5 * DT, np.zeros(6)), refs).mode == CONTROL
    law = c.law
    pose = _home(stewart)
    w = WrenchMeasurement(0.0, np.zeros(6), point)
    out = []
    for f_d in (s["force_limit"], 10 * s["force_limit"]):
        law.reset()
        out.append(law.compute(q, z, z, q, z, None, pose, z, (pose, z), 0.0, wrench=w,
                               force=ForceReference(np.array([0, 0, -f_d, 0, 0, 0]), Z_ONLY)))
    np.testing.assert_allclose(out[0], out[1])
    with pytest.raises(InvalidInputError, match="selection"):
        law.compute(q, z, z, q, z, None, pose, z, (pose, z), 0.0, wrench=w,
                    force=ForceReference(np.zeros(6), np.ones(6)))
    with pytest.raises(InvalidInputError, match="not in"):
        force_settings("stewart", "no_such_controller")
    joint = make_force_controller(stewart, "direct_force_joint")           # Fig. 29: the actuator forces measured
    assert "actuator forces are not finite" in joint.update(0.0, JointMeasurement(0.0, q, z, np.full(6, np.nan)),
                                                            refs).reason
    with pytest.raises(InvalidInputError, match="is for direct_force, .* only"):
        make_force_controller(stewart, "impedance", overrides={"wrench_source": "actuators"})
    with pytest.raises(InvalidInputError, match="inner_force_gain 1 .* must be < 1"):     # Fig. 32's pole -Kf
        make_force_controller(stewart, "inner_force_joint", overrides={"inner_force_gain": 1.0})
    with pytest.raises(InvalidInputError, match="wrench_source"):
        make_force_controller(stewart, "direct_force", overrides={"wrench_source": "strain_gauges"})


@pytest.mark.parametrize("name", ["direct_force", "direct_force_joint_space"])
def test_contact_loss_leads_to_the_retreat(stewart, name):
    """Direct force control pressing 50 N on the plane; at 0.5 s the surface vanishes (robot.environment = None):
    without a retreat the force loop would drive on towards max_offset (2 cm) below X_d. The law sees |S F_m| below
    contact_force (5 N) for contact_loss_time (10 ms), state 'retreat', and holds the pose where the force dropped
    backed off by retreat_distance (5 mm) up, away from where the surface was: the platform ends there (within
    0.2 mm: the PD against the plant's joint friction) and never goes more than 3 mm below that pose (the fall
    during the 10 ms of detection: g t^2 / 2 and the force loop's last push). Chatter is no loss: contact switched
    on and off every period keeps the state 'contact'. direct_force_joint_space (Fig. 30): the force and the motion
    measured by the drives alone (no F/T sensor, no joint friction: the model has none), the state on the actuator
    forces less the motion's own inverse dynamics: the approach and the press are no loss (state 'contact' at the
    loss, 50 N within 5 %: its integral-only loop is slower), the loss is."""
    joint = name == "direct_force_joint_space"
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], 0.0002, friction=not joint)
    if joint:
        robot.wrench_sensor = None
    c = make_force_controller(stewart, name)
    force = ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY)
    env = robot.environment
    at_loss, states = [], []

    def vanish(k, r):
        states.append(c.law.contact)
        if k == 1000:
            r.environment = None
            at_loss.append(r.ground_truth().platform_pose.position.copy())
    cmds, wrenches, poses = _run(stewart, robot, c, _home(stewart), 1600, force, each=vanish)
    assert wrenches[999, 2] == pytest.approx(50.0, rel=0.05 if joint else 0.02)
    assert "retreat" not in states[:1001] and states[1000] == "contact"
    assert c.law.contact == "retreat"
    z = np.array([p.position[2] for p in poses])
    assert z[-1] == pytest.approx(at_loss[0][2] + 0.005, abs=2e-4)
    assert z[1000:].min() > at_loss[0][2] - 0.003
    assert all(np.isfinite(cmd.tau).all() for cmd in cmds)
    # chatter: the surface there every other period only
    robot.environment = env

    def chatter(k, r):
        r.environment = env if k < 600 or k % 2 else None
    c = make_force_controller(stewart, name)
    cmds, wrenches, _ = _run(stewart, robot, c, _home(stewart), 1000, force, each=chatter)
    assert c.law.contact == "contact" and all(cmd.mode == CONTROL for cmd in cmds)


def test_stewart_force_reproduction_impedance_matches_its_design(stewart):
    """`pkm reproduce stewart-force`'s impedance run (benchmarks/reproduce/stewart_force.py), plant without joint
    friction: the measured e_z follows the designed M_d e'' + D_d e' + K_d e = F_e driven by the measured contact
    force (scipy lsim, independent of the law's code) within 3 % of its peak (the sensor's 200 Hz filter and noise
    are the gap), and the steady force is the closed form of two springs in series, K_d k_e / (K_d + k_e) x 1 mm =
    36000 x 1e5 / 136000 x 1e-3 = 26.47 N, within 1 %."""
    from pkm_control.benchmarks.reproduce import stewart_force as sf
    from pkm_control.trajectory.spec import hybrid_from_spec

    run = sf.simulate(stewart, "impedance", hybrid_from_spec(stewart.kin, sf.IMPEDANCE_SPEC), friction=False)
    f = sf.impedance_figures(stewart, run)
    assert f["relative_difference"] < 0.03
    assert f["steady_force_N"] == pytest.approx(36000 * 1e5 / 136000 * 1e-3, rel=0.01)
    assert np.all(run["mode"] == CONTROL)


def test_a_step_far_from_every_surface_is_the_step_without_contact(stewart):
    """ContactEnvironment.free: the clearance of the tool from a plane and a box against |v| h + 0.1 mm; a step of
    the simulated robot far from the surfaces (the compiled path where there is one) equals the step with the
    contact's wrench function (0 at every stage there) to rounding; near the surface it is not taken."""
    env = ContactEnvironment([0, 0, -0.1], [Plane(1e5, point=[0, 0, 1.0], normal=[0, 0, 1]),
                                            Box(1e6, center=[0.5, 0, 1.1], half_extents=[0.1, 0.1, 0.1])])
    home = _home(stewart)                                # tool tip at z = 1.1: 0.1 m above the plane, 0.4 m off the box
    assert env.surfaces[0].clearance(np.array([0, 0, 1.1])) == pytest.approx(0.1)
    assert env.surfaces[1].clearance(np.array([0.0, 0, 1.1])) == pytest.approx(0.4)
    assert env.surfaces[1].clearance(np.array([0.5, 0, 1.1])) == 0.0
    assert env.free(home, np.zeros(6), 0.0005)
    assert not env.free(home, np.array([0, 0, -250.0, 0, 0, 0]), 0.0005)        # 0.125 m in one step
    near = Pose(home.position - [0, 0, 0.09995], home.rotation)                   # 50 um above the plane
    assert not env.free(near, np.zeros(6), 0.0005)
    robot = SimulatedRobot(stewart, DT, environment=env)
    robot.reset(home, np.array([0.01, 0.0, -0.02, 0.0, 0.0, 0.05]))
    tau = np.full(6, 100.0)
    robot.write(tau)
    robot.step()
    fast = robot.ground_truth()
    robot.reset(home, np.array([0.01, 0.0, -0.02, 0.0, 0.0, 0.05]))
    ref = robot.sim.step(robot.state, DT, tau, env.wrench)
    assert np.allclose(fast.platform_twist, ref.twist, atol=1e-12, rtol=1e-12)


@settings(max_examples=6, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.sampled_from(["stiffness", "direct_force", "direct_force_joint", "direct_force_joint_space",
                             "inner_force", "inner_force_joint", "inner_force_joint_space", "impedance",
                             "impedance_no_force", "admittance"]),
       k=st.floats(1e3, 1e7), c=st.floats(0.0, 3000.0), mu=st.floats(0.0, 1.0), depth=st.floats(-0.002, 0.003),
       f_d=st.floats(-500.0, 500.0), pattern=st.lists(st.booleans(), min_size=2, max_size=8),
       junk=st.sampled_from([None, np.nan, np.inf, 1e9]))
def test_generated_contact_switching_and_junk_wrenches_stay_safe(stewart, name, k, c, mu, depth, f_d, pattern, junk):
    """Generated contact parameters (stiffness 1e3-1e7 N/m, damping, friction, the surface up to 3 mm into the tool
    or 2 mm away), a generated on/off pattern of the contact repeated every few periods, a generated F_d within
    +-force_limit and, every 7th period, a junk wrench sample (NaN, inf, 1e9 N): every command finite and within the
    force limits, the state finite, a junk sample engages the safe behaviour for that period (law with a sensor)."""
    robot, _ = _plant(stewart, [0.0, 0.0, -0.1], depth, k=k, c=c, mu=mu)
    env = robot.environment
    ctl = make_force_controller(stewart, name)
    junked = []

    def each(i, r):
        r.environment = env if pattern[i % len(pattern)] else None
        if junk is not None and i % 7 == 6 and r.wrench_sensor is not None:
            meas = r.read()
            bad = WrenchMeasurement(meas.time, np.full(6, junk), np.zeros(3))
            r._read = JointMeasurement(meas.time, meas.position, meas.velocity, meas.effort, {"wrench": bad})
            junked.append(i)

    cmds, _, _ = _run(stewart, robot, ctl, _home(stewart), 60, ForceReference(np.array([0, 0, f_d, 0, 0, 0]), Z_ONLY),
                      each)
    for cmd in cmds:
        assert np.isfinite(cmd.tau).all() and (np.abs(cmd.tau) <= ctl.limits.limits).all()
    gt = robot.ground_truth()
    assert np.isfinite(gt.position).all() and np.isfinite(gt.velocity).all()
    if ctl.wrench_watch is not None and ctl.wrench_watch.source == "sensor":
        assert all(cmds[i].mode != CONTROL for i in junked)


def test_absurd_contact_parameters_are_refused(stewart):
    """Contact parameters the plant cannot integrate, or that are not parameters at all, are refused with the
    project's error before any step: NaN, negative or non-numeric stiffness and damping; a surface whose contact mode
    is beyond RK4 at 0.5 ms (1e12 N/m: sqrt(k / m) h ~ 100 on the Stewart platform's ~26 kg; 1e7 N s/m: c h / m
    ~ 200), while 1e7 N/m (~0.3) and 1e4 N s/m (~0.2) pass; a box that holds the whole robot (the tool starts deep
    inside it). The shipped environments pass on both robots."""
    tool = [0.0, 0.0, -0.1]
    for bad in (float("nan"), -1.0, "stiff", None):
        with pytest.raises(InvalidInputError):
            Plane(bad, point=[0.0, 0.0, 1.0], normal=[0.0, 0.0, 1.0])
        with pytest.raises(InvalidInputError):
            Plane(1e5, bad if bad is not None else -5.0, point=[0.0, 0.0, 1.0], normal=[0.0, 0.0, 1.0])
    with pytest.raises(InvalidInputError, match="beyond what the simulated robot integrates"):
        _plant(stewart, tool, 0.002, k=1e12)
    with pytest.raises(InvalidInputError, match="beyond what the simulated robot integrates"):
        _plant(stewart, tool, 0.002, c=1e7)
    _plant(stewart, tool, 0.002, k=1e7)
    _plant(stewart, tool, 0.002, c=1e4)
    giant = ContactEnvironment(tool, [Box(1e5, center=[0.0, 0.0, 0.0], half_extents=[1e3, 1e3, 1e3])])
    robot = SimulatedRobot(stewart, DT, environment=giant)
    with pytest.raises(InvalidInputError, match="inside contact surface"):
        robot.reset(_home(stewart))
    with pytest.raises(InvalidModelError):
        ContactEnvironment.from_dict({"tool_point": tool, "surfaces": "table"})
    for name in ("stewart", "palida"):
        dyn = stewart if name == "stewart" else robot_dynamics(name)
        env, sensor = load_environment(name)
        SimulatedRobot(dyn, DT, environment=env, wrench_sensor=wrench_sensor(env, sensor)).reset(_home(dyn))


def _force_laws():
    """Every force controller of config/controllers.yaml (force_controllers.controllers)."""
    import yaml

    from pkm_control.description.paths import share_dir

    with open(share_dir() / "config" / "controllers.yaml") as f:
        return tuple(yaml.safe_load(f)["force_controllers"]["controllers"])


@pytest.mark.parametrize("name", _force_laws())
def test_every_force_law_presses_the_part_in_the_one_process_loop(name):
    """The one-process loop's core (control/loop.py ControlLoop: read -> update -> write, then the plant's step, in
    sim time) with each force law on PaLiDA's deburring start (`pkm bench loop --controller NAME`'s task,
    benchmarks/deburring.py: the tool at the part's face of config/environment.yaml, the reference 0.1 mm into it,
    direct force control's set-point 30 N along the face's normal), the plant's compiled step with the contact, 0.4 s:
    the law commands every period (no safe behaviour), the tool stays on the face (its normal force above 1 N over
    the last 0.1 s and steady there, within 15 % of its mean: the sensor's 0.5 N noise on the impedance laws' ~3.5 N,
    K_d k_e / (K_d + k_e) x 0.1 mm) and direct force control holds its 30 N within 3 %."""
    from pkm_control.benchmarks import deburring
    from pkm_control.benchmarks.loop import FORCE_DEPTH
    from pkm_control.control.force import parse_force_reference
    from pkm_control.control.loop import ControlLoop

    dyn = robot_dynamics("palida")
    env, sensor = load_environment("palida")
    t = deburring.task(dyn.kin, env, gap=-FORCE_DEPTH)
    start = dyn.kin.task.pose(np.array(t["start"]))
    robot = SimulatedRobot(dyn, DT, environment=env, wrench_sensor=wrench_sensor(env, sensor))
    assert robot.sim.compiled
    robot.reset(start)
    loop = ControlLoop(robot, make_force_controller(dyn, name), 2_000_000)
    loop.force_reference = parse_force_reference(t["force_reference"], dyn.kin.task)
    n = 800
    q = np.tile(dyn.kin.actuated(start), (n, 1))
    loop.offer_references(np.arange(n) * int(DT * 1e9), q, 0 * q, 0 * q)
    modes, normal = [], []
    for k in range(n):
        modes.append(loop.cycle(k * int(DT * 1e9)).mode)
        robot.step()
        normal.append(-robot.contact_wrench()[0])          # the face's outward normal is -x
    assert set(modes) == {CONTROL}
    last = np.array(normal[-200:])
    assert last.min() > 1.0 and np.abs(last - last.mean()).max() < 0.15 * last.mean(), (last.min(), last.max())
    if name == "direct_force":
        np.testing.assert_allclose(last, 30.0, rtol=0.03)
