"""The contact environment in MuJoCo's own contact model (hardware/mujoco_contact.py; issue 24 §1): the independent
check of the simulated robot's contact forces.

Independent references: the project's contact law (hardware/contact.py: Kelvin-Voigt k d + c d', Coulomb mu f_n)
evaluated at MuJoCo's own state, against the forces of MuJoCo's constraint solver; MuJoCo's own solver quantities
(efc_diagA, efc_R) against the mapping (1) of mujoco_contact.py; the series-spring closed form of stiffness control
(force.Stiffness); the native plant running the same law. The differences allowed are the ones mujoco_contact.py
derives: an added mass d / (1 - d) = 1e-4 of the effective mass on the normal force, and while sliding the cone's
projection, mu beta |v_t| / (impratio f_n).

Sim time only, in process.
"""

import numpy as np
import pytest

from pkm_control.control import CONTROL, References
from pkm_control.control.force import ForceReference, force_settings
from pkm_control.control.settings import make_force_controller
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.contact import Box, ContactEnvironment, Plane, WrenchSensor, load_environment
from pkm_control.hardware.mujoco_contact import FRICTION_REFERENCE_FORCE, IMPEDANCE, IMPRATIO, TOOL_RADIUS
from pkm_control.hardware.mujoco_robot import MujocoRobot
from pkm_control.kinematics.task_space import rpy_to_matrix

DT = 5e-4
Z_ONLY = np.array([False, False, True, False, False, False])
TOOLS = {"stewart": [0.0, 0.0, -0.1], "palida": [0.0, 0.0, -0.05]}


@pytest.fixture(scope="module")
def stewart():
    return robot_dynamics("stewart")


def _home(dyn):
    return dyn.kin.task.pose(dyn.model.config["home"])


def _environments(tool_tip):
    """Surfaces around the tool tip at home (base frame), the tip inside each: (name, surface, depth)."""
    n = rpy_to_matrix(0.15, -0.1, 0.0) @ [0.0, 0.0, 1.0]
    R = rpy_to_matrix(0.05, 0.1, 0.3)
    h = np.array([0.04, 0.03, 0.02])
    top = tool_tip - R @ [0.005, -0.004, h[2] - 0.0004]                 # the tip 0.4 mm inside the top face
    side = tool_tip - R @ [h[0] - 0.0003, 0.002, -0.003]                # 0.3 mm inside the +x face
    return [("tilted plane", Plane(1e5, 500.0, point=tool_tip + 0.0005 * n, normal=n), 0.0005),
            ("box top", Box(1e6, 1000.0, center=top, half_extents=h, rotation=R), 0.0004),
            ("box side", Box(2e5, 300.0, center=side, half_extents=h, rotation=R), 0.0003)]


@pytest.mark.parametrize("name", ["stewart", "palida"])
def test_mujoco_contact_force_is_the_contact_law_at_the_same_state(name):
    """At rest at home with the tool tip inside a tilted plane, a rotated box's top face and its side face: the wrench
    of MuJoCo's contacts on the platform equals the project's law [f; r x f] at the same state, f = k d n, within
    1e-3 of |f| (the added mass d / (1 - d) of mujoco_contact.py, 2e-3 kg on stewart's platform, times the contact's
    acceleration at rest under gravity: measured 1.6e-5 to 3e-4); the solver's own diagonal (efc_diagA) is the
    inverse weight the mapping (1) assumes and its regularizer R = (1 - d) / d A. The sensor reads -f in platform
    axes."""
    dyn = robot_dynamics(name)
    home = _home(dyn)
    tool = np.array(TOOLS[name])
    tip = home.position + home.rotation @ tool
    for what, surface, depth in _environments(tip):
        env = ContactEnvironment(tool, [surface])
        robot = MujocoRobot(dyn, DT, environment=env, wrench_sensor=WrenchSensor(tool))
        meas = robot.reset(home)
        law = env.wrench(home, np.zeros(6))
        assert np.linalg.norm(law[:3]) == pytest.approx(surface.stiffness * depth, rel=1e-12)
        w = robot.contact_wrench()
        scale = np.linalg.norm(law[:3])
        assert np.abs(w - law).max() < 1e-3 * scale, (what, w, law)
        d = robot.data
        rows = slice(d.ne + d.nf + d.nl, d.nefc)
        assert d.efc_diagA[rows] == pytest.approx([robot.contact.inverse_weight], rel=1e-9), what
        assert d.efc_R[rows] == pytest.approx([(1 - IMPEDANCE) / IMPEDANCE * robot.contact.inverse_weight],
                                              rel=1e-9), what
        F_e = meas.sensors["wrench"].wrench
        assert F_e[:3] == pytest.approx(-(home.rotation.T @ w[:3]), abs=1e-9 * scale)
        assert np.abs(F_e[3:]).max() < 1e-9 * scale                 # the contact point on the normal through the tip


def test_mujoco_plant_has_the_configured_environment_for_each_robot():
    """config/environment.yaml's plane and box per robot compile into MuJoCo (a geom each, one pair each, contacts
    on); far from them (at home, the table 2 mm below the tool tip) no contact and no force. A box thinner than the
    tool sphere has no MuJoCo form here (it is shrunk by the radius): refused."""
    for name in ("stewart", "palida"):
        dyn = robot_dynamics(name)
        env, _ = load_environment(name)
        robot = MujocoRobot(dyn, DT, environment=env)
        assert robot.mj.model.npair == len(env.surfaces) == len(robot.contact.surface_geoms) == 2
        robot.reset(_home(dyn))
        assert robot.data.ncon == 0 and not robot.contact_wrench().any()
    thin = Box(1e5, center=[0.0, 0.0, 0.0], half_extents=[0.1, 0.1, 0.5 * TOOL_RADIUS])
    with pytest.raises(InvalidInputError, match="tool sphere's radius"):
        MujocoRobot(dyn, DT, environment=ContactEnvironment([0.0, 0.0, -0.05], [thin]))


def _press(dyn, robot, controller, motion, n, force=None):
    """n periods from rest at home; returns per period the plant's contact wrench, the law's at the plant's state,
    the platform twists and the commands' modes."""
    act, task = dyn.model.actuated_idx, dyn.kin.task
    robot.reset(_home(dyn))
    out = {"w": [], "law": [], "twist": [], "mode": []}
    for k in range(n):
        t = k * DT
        m = dyn.kin.inverse(*motion(t))
        cmd = controller.update(t, robot.read(), References(m.q[act], m.v[act], m.a[act], force))
        robot.write(cmd.tau, t)
        robot.step()
        gt = robot.ground_truth()
        out["w"].append(robot.contact_wrench())
        out["law"].append(robot.environment.wrench(gt.platform_pose, task.twist_map() @ gt.platform_twist))
        out["twist"].append(gt.platform_twist)
        out["mode"].append(cmd.mode)
    return {k: np.array(v) for k, v in out.items()}


def test_a_static_press_gives_the_same_force_on_both_plants(stewart):
    """Stiffness control (no force measurement) with x_d 4 mm below home, the plane 2 mm below the tool tip (k_e 1e5
    N/m, c 500 N s/m), no joint friction: on both plants the force settles at the series spring kc k_e / (kc + k_e)
    (x_e - x_d) within 0.2 % (test_force_control's bound on the native plant); MuJoCo's contact force at rest is
    k_e times its own penetration within 1e-5 (the added mass times the remaining acceleration); the two plants'
    forces agree within 1e-4 at rest (the closures are soft in MuJoCo: measured 2e-5) and within 2 % of the final
    force over the transient (measured 0.6 %: MuJoCo's first-order integration, the added mass)."""
    home, tool = _home(stewart), [0.0, 0.0, -0.1]
    z = home.position[2] - 0.1 - 0.002
    env = ContactEnvironment(tool, [Plane(1e5, 500.0, point=[0.0, 0.0, z], normal=[0.0, 0.0, 1.0])])
    pose_d = stewart.kin.task.retract(home, [0, 0, -0.004, 0, 0, 0])
    zero = np.zeros(6)
    runs = {}
    for plant in (MujocoRobot, SimulatedRobot):
        robot = plant(stewart, DT, friction=False, environment=env, wrench_sensor=WrenchSensor(tool))
        runs[plant] = _press(stewart, robot, make_force_controller(stewart, "stiffness"),
                             lambda t: (pose_d, zero, zero), 500)
    kc = force_settings("stewart", "stiffness")["gains"]["motion"]["kp"][2]
    expected = kc * 1e5 / (kc + 1e5) * (z - (pose_d.position[2] - 0.1))
    mj, native = runs[MujocoRobot], runs[SimulatedRobot]
    for run in (mj, native):
        assert (run["mode"] == CONTROL).all()
        assert run["w"][-1, 2] == pytest.approx(expected, rel=2e-3)
    assert mj["w"][-1, 2] == pytest.approx(mj["law"][-1, 2], rel=1e-5)
    assert mj["w"][-1, 2] == pytest.approx(native["w"][-1, 2], rel=1e-4)
    assert np.abs(mj["w"][:, 2] - native["w"][:, 2]).max() < 0.02 * expected


def test_sliding_with_friction_keeps_the_ratio_and_the_normal_force(stewart):
    """Direct force control pressing 50 N (z force-controlled) on a plane with mu = 0.3 while x slides 10 mm (1 - cos
    in 0.3 s, peak 52 mm/s), the plant's joint friction on: while sliding the tangential force over the normal is mu
    (within 1e-6: on MuJoCo's cone) and against the motion, as the project's law gives at the same state; MuJoCo's
    normal force exceeds the law's k d + c d' at its state by the cone's projection mu beta |v_t| / (impratio f_n)
    (mujoco_contact.py, beta = mu F_ref / eps), within 1e-3 (measured 0.23-0.47 %)."""
    home, task, tool = _home(stewart), stewart.kin.task, [0.0, 0.0, -0.1]
    mu, eps = 0.3, 1e-3
    env = ContactEnvironment(tool, [Plane(1e5, 500.0, mu, eps, point=[0.0, 0.0, home.position[2] - 0.1],
                                          normal=[0.0, 0.0, 1.0])])
    settle, move, w = 0.3, 0.3, np.pi / 0.3

    def motion(t):
        s = min(max(t - settle, 0.0), move)
        active = 0.0 < t - settle < move
        return (task.retract(home, [0.005 * (1 - np.cos(w * s)), 0, 0, 0, 0, 0]),
                np.array([0.005 * w * np.sin(w * s) if active else 0.0, 0, 0, 0, 0, 0]),
                np.array([0.005 * w ** 2 * np.cos(w * s) if active else 0.0, 0, 0, 0, 0, 0]))

    robot = MujocoRobot(stewart, DT, environment=env, wrench_sensor=WrenchSensor(tool))
    force = ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY)
    n = int((settle + move) / DT)
    run = _press(stewart, robot, make_force_controller(stewart, "direct_force"), motion, n, force)
    assert (run["mode"] == CONTROL).all()
    t = np.arange(1, n + 1) * DT
    sliding = (t > settle + 0.05) & (t < settle + move - 0.05)
    f, law, v = run["w"][sliding], run["law"][sliding], run["twist"][sliding, 0]
    assert (v > 0.02).all()
    np.testing.assert_allclose(-f[:, 0] / f[:, 2], mu, rtol=1e-6)
    np.testing.assert_allclose(-law[:, 0] / law[:, 2], mu, rtol=1e-6)
    beta = mu * FRICTION_REFERENCE_FORCE / eps
    predicted = mu * beta * v / (IMPRATIO * f[:, 2]) - mu ** 2 / IMPRATIO
    np.testing.assert_allclose(f[:, 2] / law[:, 2] - 1, predicted, atol=1e-3)
    assert (f[:, 2] > 40.0).all()
