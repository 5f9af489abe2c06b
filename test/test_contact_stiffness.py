"""A stiff contact is integrated or refused (issue 24: hardware/contact.py largest_stiffness, check_integrable): each
plant (the simulated robot, RK4; the MuJoCo plant, semi-implicit Euler) accepts a surface only up to half the
stiffness its integrator is stable on at its step, on the platform's effective mass at the tool, and refuses a
stiffer one at construction with one error naming the stiffness, the step and the limit.

Independent references: the stability bounds against a hand-written step of each integrator on m x'' = -k x - c x'
(bounded just inside, growing just outside); the effective mass 1 / (u^T M^-1 u) against the tool's acceleration
under a unit force from the forward dynamics; and on the plants, for generated (k, c) from 3e5 to 1e12 N/m: either
a refusal, or the steady contact force of an open-loop push (the actuator forces that hold the platform at home
against F = 50 N at the tool, held constant) equal to F within 1e-3, no NaN. Below 3e5 N/m the push's penetration
(> 0.2 mm) moves the platform off the pose its forces were computed for, and the contact mode settles slowly; the
laws' tests (test_force_control, test_mujoco_contact) cover 1e5..1e6 N/m in closed loop.

Sim time only, in process.
"""

import numpy as np
import pytest

from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.contact import STIFFNESS_MARGIN, ContactEnvironment, Plane, largest_stiffness
from pkm_control.hardware.mujoco_robot import MujocoRobot
from pkm_control.hardware.simulated import contact_mass

DT = 5e-4
F = 50.0
TOOLS = {"stewart": [0.0, 0.0, -0.1], "palida": [0.0, 0.0, -0.05]}


@pytest.fixture(scope="module", params=["stewart", "palida"])
def dyn(request):
    return robot_dynamics(request.param)


def _rk4(x, v, m, c, k, h):
    def f(x, v):
        return v, (-k * x - c * v) / m
    k1 = f(x, v)
    k2 = f(x + 0.5 * h * k1[0], v + 0.5 * h * k1[1])
    k3 = f(x + 0.5 * h * k2[0], v + 0.5 * h * k2[1])
    k4 = f(x + h * k3[0], v + h * k3[1])
    return (x + h / 6 * (k1[0] + 2 * k2[0] + 2 * k3[0] + k4[0]),
            v + h / 6 * (k1[1] + 2 * k2[1] + 2 * k3[1] + k4[1]))


def _semi_implicit_euler(x, v, m, c, k, h):
    v = v + h * (-k * x - c * v) / m
    return x + h * v, v


@pytest.mark.parametrize("integrator, step", [("rk4", _rk4), ("semi-implicit euler", _semi_implicit_euler)])
@pytest.mark.parametrize("m, c", [(31.0, 0.0), (31.0, 500.0), (8.0, 2e4), (20.0, 1e5)])
def test_largest_stiffness_is_where_the_integrator_turns_unstable(integrator, step, m, c):
    """2000 steps of 0.5 ms (0.1 ms: semi-implicit Euler, MuJoCo's step) from x = 1 mm: bounded (|x| < 10 mm) at 0.98
    k_max, growing (beyond 1 m) at 1.05 k_max; RK4 at c = 0: k_max = 8 m / h^2 (|R(i 2 sqrt 2)| = 1)."""
    h = DT if integrator == "rk4" else 1e-4
    k_max = largest_stiffness(m, c, h, integrator)
    if integrator == "rk4" and c == 0:
        assert k_max == pytest.approx(8 * m / h ** 2, rel=1e-9)
    for factor, stable in ((0.98, True), (1.05, False)):
        x, v, peak = 1e-3, 0.0, 1e-3
        for _ in range(2000):
            x, v = step(x, v, m, c, factor * k_max, h)
            peak = max(peak, abs(x))
            if peak > 1.0:
                break
        assert (peak < 1e-2) == stable and (peak > 1.0) == (not stable)


def test_effective_mass_is_the_tools_acceleration_under_a_unit_force(dyn):
    """1 / m_eff = n . (tool acceleration) under a unit force n at the tool, from rest at home (forward dynamics with
    and without the force, no friction; the tool's acceleration a_o + alpha x r at rest)."""
    home, tool = dyn.kin.home_pose(), np.array(TOOLS[dyn.model.name])
    mass = contact_mass(dyn, tool)
    S, r = dyn.kin.task.twist_map(), home.rotation @ tool
    tau = np.zeros(dyn.model.n_actuated)
    for n in np.eye(3):
        w = np.concatenate([n, np.cross(r, n)])
        dx = S @ (dyn.forward_dynamics(home, np.zeros(6), tau, w, friction=False)
                  - dyn.forward_dynamics(home, np.zeros(6), tau, None, friction=False))
        assert 1.0 / mass(n) == pytest.approx(n @ (dx[:3] + np.cross(dx[3:], r)), rel=1e-6)


def _push(dyn, plant, k, c, n=300, swap=False):
    """The plant with a plane of (k, c) touching the tool at home, pushed by the constant actuator forces that hold
    the platform at home against F at the tool (inverse dynamics, no friction): (the plant, the contact force per
    period). swap: the plant built with a 1e5 N/m plane, the (k, c) one swapped in after (no check)."""
    home, tool = dyn.kin.home_pose(), np.array(TOOLS[dyn.model.name])
    z = home.position[2] + tool[2]
    env = ContactEnvironment(tool, [Plane(k, c, point=[0.0, 0.0, z], normal=[0.0, 0.0, 1.0])])
    soft = ContactEnvironment(tool, [Plane(1e5, c, point=[0.0, 0.0, z], normal=[0.0, 0.0, 1.0])])
    robot = plant(dyn, DT, friction=False, environment=soft if swap else env)
    robot.environment = env
    w = np.concatenate([[0.0, 0.0, F], np.cross(home.rotation @ tool, [0.0, 0.0, F])])
    tau = dyn.inverse_dynamics(home, np.zeros(6), np.zeros(6), wrench=w, friction=False).tau
    robot.reset(home)
    f = []
    for i in range(n):
        robot.write(tau, i * DT)
        robot.step()
        f.append(robot.contact_wrench()[2])
    return robot, np.array(f)


def _generated():
    rng = np.random.default_rng(24)
    ks = np.concatenate([np.logspace(np.log10(3e5), 12, 6), 10 ** rng.uniform(np.log10(3e5), 12, 2)])
    return [(float(k), float(z)) for k, z in zip(ks, rng.uniform(0.7, 0.9, len(ks)))]


@pytest.mark.parametrize("plant", [SimulatedRobot, MujocoRobot])
@pytest.mark.parametrize("k, zeta", _generated())
def test_a_stiff_contact_holds_the_push_or_is_refused(dyn, plant, k, zeta):
    """Generated k (log-spaced and random, 3e5..1e12 N/m), c = 2 zeta sqrt(k m) for a 20 kg platform (zeta 0.7..0.9:
    settled within the run): refused with the stiffness, the step and the limit named (the limit itself accepted), or
    the contact force after 0.15 s is F within 1e-3, finite throughout."""
    c = 2 * zeta * np.sqrt(k * 20.0)
    try:
        robot, f = _push(dyn, plant, k, c)
    except InvalidInputError as exc:
        msg = str(exc)
        limit = float(msg.split("the largest stiffness there is ")[1].split(" N/m")[0])
        assert f"stiffness {k:.4g} N/m" in msg and "step" in msg and limit < k
        if limit > 0:                                  # 0: the damping alone is beyond the step's bound
            _push(dyn, plant, 0.99 * limit, c, n=1)    # the stated limit is accepted
        return
    assert np.isfinite(f).all()
    assert f[-20:] == pytest.approx(F, rel=1e-3)


def test_beyond_the_limit_the_native_plant_would_not_hold_the_push():
    """What the refusal prevents: the Stewart platform's plane at 1.1 RK4's bound (c = 500 N s/m) is refused, naming
    the substeps that integrate it; swapped in after construction (the check bypassed) the force is not F (the tool
    bounces off or oscillates), finite. The accepted limit is STIFFNESS_MARGIN times the bound."""
    dyn = robot_dynamics("stewart")
    k_max = largest_stiffness(contact_mass(dyn, TOOLS["stewart"])(np.array([0.0, 0.0, 1.0])), 500.0, DT, "rk4")
    robot, _ = _push(dyn, SimulatedRobot, 1e5, 500.0, n=1)
    assert robot.stiffness_limits == pytest.approx((STIFFNESS_MARGIN * k_max,), rel=1e-9)
    with pytest.raises(InvalidInputError, match="substeps >= 2"):
        _push(dyn, SimulatedRobot, 1.1 * k_max, 500.0, n=1)
    _, f = _push(dyn, SimulatedRobot, 1.1 * k_max, 500.0, swap=True)
    assert np.isfinite(f).all()
    assert np.abs(f[-20:] - F).max() > 0.1 * F
