"""Registry of the papers' own dynamics formulations (each checked against the generic engine).

method name -> (module defining ``Formulation(dyn)``, robots it applies to).
"""

from __future__ import annotations

import importlib

from ..errors import InvalidInputError, InvalidModelError, excerpt

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
