"""The sampled-data bound of a force law on a contact (control/contact_stability.py; issue 24): the stiffest surface
a law's gains hold at the control period, checked against what the simulated robot does.

* the zero-order-hold discretization against scipy.signal.cont2discrete (a second formulation);
* generated stiffnesses (a seeded draw below and above each law's bound, away from it by 25 % or more), each pressed
  by the law on the full Stewart platform (the simulated robot with RK4 substeps fine enough for the surface, an
  exact sensor, no joint friction): the contact force's oscillation dies out (its peak-to-peak halves from 50-75 ms
  to 100-125 ms, the tool in contact) where the bound says stable, and does not (the tool bouncing off, or a
  peak-to-peak beyond half the force) where it says unstable. The outcome is the simulation's, not the bound's;
* the node's check (``check``) refuses a surface beyond the bound with the numbers named, accepts one below.

Sim time only.
"""

import numpy as np
import pytest
from scipy import signal

from pkm_control.control import contact_stability as cs
from pkm_control.control.force import ForceReference
from pkm_control.control.settings import make_force_controller
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.hardware.contact import ContactEnvironment, Plane
from pkm_control.hardware.simulated import contact_mass

from test_force_control import DT, Z_ONLY, _home, _plant, _run

TOOL = [0.0, 0.0, -0.1]


@pytest.fixture(scope="module")
def stewart():
    return robot_dynamics("stewart")


def test_zoh_is_scipys():
    m, k, c, h = 20.0, 3e7, 500.0, 0.0005
    A, B = np.array([[0.0, 1.0], [-k / m, -c / m]]), np.array([[0.0], [1.0 / m]])
    Phi, Gamma, *_ = signal.cont2discrete((A, B, np.eye(2), np.zeros((2, 1))), h, method="zoh")
    P, G = cs.zoh(m, k, c, h)
    np.testing.assert_allclose(P, Phi, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(G, Gamma, rtol=1e-9, atol=1e-15)


def _draws():
    """(law, factor of its bound): one factor below (0.3..0.75) and one above (1.4..3) per law, seeded."""
    rng = np.random.default_rng(24)
    return [(law, float(rng.uniform(*span))) for law in ("direct_force", "inner_force", "impedance")
            for span in ((0.3, 0.75), (1.4, 3.0))]


@pytest.mark.parametrize("law, factor", _draws())
def test_generated_stiffnesses_are_stable_where_the_bound_says(stewart, law, factor):
    m = float(contact_mass(stewart, TOOL)(np.array([0.0, 0.0, 1.0])))
    c = make_force_controller(stewart, law)
    bound = cs.largest_stable_stiffness(m, 500.0, DT, cs.law_gains(c.law, 2, m, DT))
    k = factor * bound
    substeps = 2 * int(np.ceil(DT / np.sqrt(4.0 * m / k)))   # RK4 well inside its own bound (8 m / h^2)
    robot, _ = _plant(stewart, TOOL, 0.0, k=k, c=500.0, friction=False, substeps=substeps)
    pose_d = stewart.kin.task.retract(_home(stewart), [0, 0, -0.001, 0, 0, 0])
    _, wrenches, _ = _run(stewart, robot, c, pose_d, 250, ForceReference(np.array([0, 0, -50.0, 0, 0, 0]), Z_ONLY))
    f = wrenches[:, 2]
    assert np.isfinite(f).all()
    early, late = f[100:150], f[200:]
    decaying = late.min() > 0.0 and np.ptp(late) < 0.5 * np.ptp(early)       # in contact, the oscillation dying
    assert decaying == (factor < 1.0), (law, f"k_e {k:.3g} N/m, bound {bound:.3g}", late.min(), np.ptp(early),
                                        np.ptp(late))
    if not decaying:          # unstable: a large oscillation, not a slow one
        assert late.min() == 0.0 or np.ptp(late) > 0.5 * late.mean()


def test_the_check_refuses_a_surface_beyond_the_bound(stewart):
    m_of = contact_mass(stewart, TOOL)
    law = make_force_controller(stewart, "direct_force").law
    m = float(m_of(np.array([0.0, 0.0, 1.0])))
    bound = cs.largest_stable_stiffness(m, 500.0, DT, cs.law_gains(law, 2, m, DT))

    def env(k):
        return ContactEnvironment(TOOL, [Plane(k, 500.0, 0.0, point=[0.0, 0.0, 1.0], normal=[0.0, 0.0, 1.0])])
    assert cs.check(law, env(0.9 * bound), m_of, DT) == pytest.approx((bound,))
    with pytest.raises(InvalidInputError, match=r"too stiff for direct_force .* unstable from"):
        cs.check(law, env(1.1 * bound), m_of, DT)
    assert cs.check(law, env(1.1 * bound), m_of, DT, "actuators") == (None,)        # not modelled: no check
    joint = make_force_controller(stewart, "direct_force_joint_space").law
    assert cs.check(joint, env(1e12), m_of, DT) == (None,)
