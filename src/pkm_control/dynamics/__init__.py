"""Closed-loop dynamics: generic engine (pinocchio tree + closures), friction, parameters,
forward dynamics, and each paper's own formulation (registered in formulations.py)."""

from __future__ import annotations


from ..description import cached_per_robot
from ..kinematics import robot_kinematics
from .engine import ClosedLoopDynamics, IDResult
from .friction import FrictionModel


@cached_per_robot
def robot_dynamics(robot: str, variant: str | None = None) -> ClosedLoopDynamics:
    """The generic closed-loop dynamics of a shipped robot (cached; see ClosedLoopDynamics on threads)."""
    return ClosedLoopDynamics(robot_kinematics(robot, variant))


__all__ = ["ClosedLoopDynamics", "FrictionModel", "IDResult", "robot_dynamics"]
