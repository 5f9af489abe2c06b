"""The papers' own dynamics formulations (each checked against the generic engine): their interface and registry.

``Formulation`` declares what a caller may ask of a paper formulation; each paper's module defines a subclass
``Formulation(dyn)``. FORMULATIONS maps the method name -> (that module, robots it applies to).
"""

from __future__ import annotations

import importlib

from ..errors import InvalidInputError, InvalidModelError, NotProvidedError, excerpt


class Formulation:
    """A paper's dynamics formulation of one robot: the interface the controller, the simulator and the benchmarks
    use. Every computation has a default that raises NotProvidedError naming it, the formulation and its paper;
    ``provides`` lists the ones a subclass implements (set at class creation from what it overrides), so that a
    caller chooses its path before the hot loop instead of trying.

    * ``inverse_dynamics(pose, twist, accel, friction)``: actuator forces (actuated-joint order) of a platform motion;
    * ``mass_matrix(pose)``: the task-space mass matrix on the platform twist;
    * ``inverse_dynamics_fast(pose, twist, accel, friction, check_limits, validated)``: the same forces from compiled
      code (``validated``: the motion passed kin.validate already, not checked again), for
      the control loop (the computed-force feedforward);
    * ``inverse_dynamics_batch(positions, rotations, twists, accels, friction, return_valid, check_limits)``: the
      forces of N samples in one call (rows of unreachable or singular samples NaN);
    * ``with_parameters(inertia_scale, friction)``: the same formulation carrying another parameter set (every
      inertial parameter scaled, a config-style friction mapping), for a feedforward with identified parameters.
    """

    #: the method name (FORMULATIONS key) and the paper it implements (author, seed document)
    method: str = ""
    paper: str = ""
    #: the formulation has friction terms (``friction=True`` is meaningful)
    models_friction: bool = False
    #: the computations of the interface this class implements (``__init_subclass__``)
    provides: frozenset = frozenset()

    _INTERFACE = ("inverse_dynamics", "mass_matrix", "inverse_dynamics_fast", "inverse_dynamics_batch",
                  "with_parameters")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.provides = frozenset(name for name in cls._INTERFACE
                                 if getattr(cls, name) is not getattr(Formulation, name))

    def _not_provided(self, what: str):
        return NotProvidedError(f"{what} is not provided by the {self.method} formulation ({self.paper})")

    def inverse_dynamics(self, pose, twist, accel, friction: bool = False):
        raise self._not_provided("inverse_dynamics")

    def mass_matrix(self, pose):
        raise self._not_provided("mass_matrix")

    def inverse_dynamics_fast(self, pose, twist, accel, friction: bool = False, check_limits: bool = True,
                              validated: bool = False):
        raise self._not_provided("inverse_dynamics_fast")

    def inverse_dynamics_batch(self, positions, rotations, twists, accels, friction: bool = False,
                               return_valid: bool = False, check_limits: bool = True):
        raise self._not_provided("inverse_dynamics_batch")

    def with_parameters(self, inertia_scale: float = 1.0, friction=None) -> "Formulation":
        raise self._not_provided("with_parameters")


FORMULATIONS = {
    "jourdain": ("pkm_control.dynamics.jourdain", ("palida",)),
    "generalized_momentum": ("pkm_control.dynamics.generalized_momentum", ("lopes",)),
    "newton_euler": ("pkm_control.dynamics.newton_euler", ("stewart",)),
    "pivotal_virtual_work": ("pkm_control.dynamics.pivotal_virtual_work", ("planar_redundant",)),
    "virtual_work": ("pkm_control.dynamics.virtual_work", ("delta",)),
}


def formulation(method: str, dyn):
    """Build the named paper formulation for a robot's ClosedLoopDynamics."""
    if method not in FORMULATIONS:
        raise InvalidInputError(f"unknown dynamics method '{excerpt(method)}' "
                                f"(methods: generic, {', '.join(FORMULATIONS)})")
    module, robots = FORMULATIONS[method]
    if dyn.model.name not in robots:
        raise InvalidInputError(f"method '{method}' is the formulation of {', '.join(robots)}, "
                                f"not of '{dyn.model.name}'")
    return importlib.import_module(module).Formulation(dyn)


def methods_for(robot: str) -> list[str]:
    return [m for m, (_, robots) in FORMULATIONS.items() if robot in robots]


def formulation_kinematics(source, method: str, robots=None, variant=None):
    """The kinematics a paper formulation works on.

    source: a ClosedLoopDynamics (its ``.kin``), a kinematics object, or a robot name (with variant).
    robots: names of the robots the formulation models (None: any robot whose config fits).
    """
    if isinstance(source, str):
        if robots is not None and source not in robots:
            raise InvalidModelError(f"{method} models {', '.join(robots)} only, got '{source}'")
        from ..kinematics import robot_kinematics

        return robot_kinematics(source, variant)
    kin = getattr(source, "kin", source)
    if robots is not None and kin.model.name not in robots:
        raise InvalidModelError(f"{method} models {', '.join(robots)} only, got '{kin.model.name}'")
    return kin
