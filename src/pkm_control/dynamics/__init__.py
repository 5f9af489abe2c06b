"""Closed-loop dynamics: generic engine (pinocchio tree + closures), friction, parameters,
forward dynamics, and each paper's own formulation (registered in formulations.py)."""

from __future__ import annotations

import functools

from ..kinematics import robot_kinematics
from .engine import ClosedLoopDynamics, IDResult
from .friction import FrictionModel


@functools.lru_cache(maxsize=None)
def robot_dynamics(robot: str, variant: str | None = None) -> ClosedLoopDynamics:
    """The generic closed-loop dynamics of a shipped robot (cached; see ClosedLoopDynamics on threads)."""
    return ClosedLoopDynamics(robot_kinematics(robot, variant))


__all__ = ["ClosedLoopDynamics", "FrictionModel", "IDResult", "robot_dynamics"]
