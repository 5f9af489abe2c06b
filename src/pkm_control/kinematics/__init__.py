"""Kinematics: analytic IK per robot family, the numeric family for any closed-loop model, generic FK, Jacobians,
analysis, workspace."""

from __future__ import annotations

import importlib

from ..description import ClosedLoopModel, cached_per_robot, load_robot
from ..errors import InvalidModelError
from .base import JointMotion, ParallelKinematics
from .task_space import Pose, TaskSpace

#: config ``kinematics:`` value -> module defining ``Kinematics`` for that family
FAMILIES = {
    "hexapod_ups": "pkm_control.kinematics.hexapod_ups",
    "hexapod_pus": "pkm_control.kinematics.hexapod_pus",
    "delta": "pkm_control.kinematics.delta",
    "planar_redundant": "pkm_control.kinematics.planar_redundant",
    "numeric": "pkm_control.kinematics.numeric",     # any closed-loop model, no code per robot
}


def make_kinematics(clm: ClosedLoopModel) -> ParallelKinematics:
    """The kinematics object of a loaded robot (family from its config ``kinematics:``)."""
    family = clm.spec.kinematics
    if family not in FAMILIES:
        raise InvalidModelError(f"{clm.spec.source}: kinematics: expected one of {' | '.join(FAMILIES)}, got "
                                f"{family!r}")
    return importlib.import_module(FAMILIES[family]).Kinematics(clm)


@cached_per_robot
def robot_kinematics(robot: str, variant: str | None = None) -> ParallelKinematics:
    """Load a shipped robot and build its kinematics (cached; both are immutable)."""
    return make_kinematics(load_robot(robot, variant))


__all__ = ["FAMILIES", "JointMotion", "ParallelKinematics", "Pose", "TaskSpace", "make_kinematics",
           "robot_kinematics"]
