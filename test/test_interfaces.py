"""Declared interfaces instead of probing (issue 20): the paper formulations are ``dynamics.formulations.Formulation``s
whose missing computations raise a clear NotProvidedError and whose ``provides`` says which exist; every control law
is a ``control.laws.ControlLaw`` with ``reset()`` and ``estimates``; every hardware interface has
``measurement_summary()``. (test_packaging.py keeps hasattr probing from coming back.)"""

import numpy as np
import pytest

from pkm_control.control import FeedforwardModel
from pkm_control.control.laws import LAWS, ControlLaw, make_law
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.formulations import FORMULATIONS, Formulation, formulation
from pkm_control.dynamics.parameters import sample_states
from pkm_control.errors import InvalidModelError, NotProvidedError
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.noise import NoisyEncoders

INTERFACE = ("inverse_dynamics", "mass_matrix", "inverse_dynamics_fast", "inverse_dynamics_batch", "with_parameters")
#: what each paper's module implements (read off the modules): only Abdellatif's PaLiDA model has compiled kernels
#: (single, batch) and parameter vectors to replace
PROVIDES = {"jourdain": set(INTERFACE)} | {m: {"inverse_dynamics", "mass_matrix"} for m in FORMULATIONS
                                           if m != "jourdain"}
#: a call of each computation (the arguments are never looked at when it is not provided)
CALLS = {
    "inverse_dynamics": lambda f: f.inverse_dynamics(None, None, None),
    "mass_matrix": lambda f: f.mass_matrix(None),
    "inverse_dynamics_fast": lambda f: f.inverse_dynamics_fast(None, None, None),
    "inverse_dynamics_batch": lambda f: f.inverse_dynamics_batch(None, None, None, None),
    "with_parameters": lambda f: f.with_parameters(2.0),
}


@pytest.fixture(scope="module")
def forms():
    return {m: formulation(m, robot_dynamics(robots[0])) for m, (_, robots) in FORMULATIONS.items()}


@pytest.mark.parametrize("method", sorted(FORMULATIONS))
def test_each_paper_formulation_is_a_formulation_and_names_what_it_lacks(forms, method):
    form = forms[method]
    assert isinstance(form, Formulation) and form.method == method and form.paper
    assert form.provides == PROVIDES[method]
    for name in set(INTERFACE) - form.provides:
        with pytest.raises(NotProvidedError) as info:
            CALLS[name](form)
        assert isinstance(info.value, NotImplementedError)
        assert str(info.value) == f"{name} is not provided by the {method} formulation ({form.paper})"


@pytest.mark.parametrize("method", sorted(FORMULATIONS))
def test_what_a_formulation_provides_answers(forms, method):
    """At a random state: the forces of inverse_dynamics (and of the compiled paths where provided) are the engine's
    (friction as the formulation models it), the mass matrix is the engine's."""
    form = forms[method]
    dyn = robot_dynamics(FORMULATIONS[method][1][0])
    pose, twist, accel = sample_states(dyn, 1, np.random.default_rng(5))[0]
    fr = form.models_friction
    tau = dyn.inverse_dynamics(pose, twist, accel, friction=fr).tau
    tol = dict(rtol=0, atol=1e-8 * np.abs(tau).max())
    assert np.allclose(form.inverse_dynamics(pose, twist, accel, friction=fr), tau, **tol)
    M = dyn.mass_matrix(pose)
    assert np.allclose(form.mass_matrix(pose), M, rtol=0, atol=1e-8 * np.abs(M).max())
    if "inverse_dynamics_fast" in form.provides:
        assert np.allclose(form.inverse_dynamics_fast(pose, twist, accel, friction=fr), tau, **tol)
    if "inverse_dynamics_batch" in form.provides:
        batch = form.inverse_dynamics_batch(pose.position[None], pose.rotation[None], twist[None], accel[None],
                                            friction=fr)
        assert np.allclose(batch[0], tau, **tol)


def test_jourdain_with_parameters_scales_the_rigid_body_and_takes_a_friction_mapping(forms):
    """Eq. 14 is linear in the inertial parameters: with every one doubled the rigid-body forces double (gravity
    included, it is m g and m r g); the friction mapping's coefficients are the 14 the kernels use; a friction term
    outside Abdellatif's model is refused; the formulation itself is unchanged."""
    form = forms["jourdain"]
    dyn = robot_dynamics("palida")
    pose, twist, accel = sample_states(dyn, 1, np.random.default_rng(6))[0]
    rigid = dyn.inverse_dynamics(pose, twist, accel, friction=False).tau
    doubled = form.with_parameters(2.0)
    assert np.allclose(doubled.inverse_dynamics(pose, twist, accel, friction=False), 2 * rigid, rtol=0,
                       atol=1e-8 * np.abs(rigid).max())
    assert np.allclose(form.inverse_dynamics(pose, twist, accel, friction=False), rigid, rtol=0,
                       atol=1e-8 * np.abs(rigid).max())
    friction = {"prismatic": {"coulomb": [1, 2, 3, 4, 5, 6], "viscous": [7, 8, 9, 10, 11, 12]},
                "alpha": {"coulomb": 13}, "beta": {"coulomb": 14}}
    assert form.with_parameters(1.0, friction).friction_values.tolist() == list(range(1, 15))
    with pytest.raises(InvalidModelError, match="not in Abdellatif's 14-parameter model"):
        form.with_parameters(1.0, dict(friction, alpha={"coulomb": 13, "viscous": 1}))
    with pytest.raises(InvalidModelError, match="6 coulomb and 6 viscous"):
        form.with_parameters(1.0, dict(friction, prismatic={"coulomb": 1, "viscous": 2}))


ADAPTIVE = {"task_adaptive_idc", "joint_adaptive_idc"}


def test_every_law_has_reset_and_estimates():
    """Each law of LAWS (built for the DELTA, to which all apply) is a ControlLaw; reset() is there for all; the
    adaptive laws carry their base-parameter estimates (reset() goes back to the initial ones, reset(x) starts from
    x), every other law none."""
    delta = robot_dynamics("delta")
    model = FeedforwardModel(delta, "rigid")
    assert ADAPTIVE <= set(LAWS)
    for mode, cls in LAWS.items():
        assert issubclass(cls, ControlLaw), mode
        law = make_law(mode, 400.0, 28.0, model, delta.kin)
        assert law.reset() is None
        if mode not in ADAPTIVE:
            assert law.estimates is None, mode
            continue
        theta0 = law.base.base_values
        assert np.array_equal(law.estimates, theta0)
        law.reset(0.5 * theta0)
        assert np.array_equal(law.estimates, 0.5 * theta0)
        law.reset()
        assert np.array_equal(law.estimates, theta0)


def test_measurement_summary_is_declared_by_every_hardware_interface():
    """The simulated robot states its measurement; an interface with nothing to state says None (the default)."""
    dyn = robot_dynamics("delta")
    robot = SimulatedRobot(dyn, 0.0005)
    assert robot.measurement_summary()["sampling_rate"] == 2000.0
    assert NoisyEncoders(robot, 0.0, 0.0, 0.0).measurement_summary() is None
