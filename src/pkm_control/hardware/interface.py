"""The hardware interface: what a controller reads from and writes to a robot (simulated or real).

Lockstep use: ``write(tau, time)`` then ``step()`` advances exactly one period; ``read()`` returns
the state at the current (sim) time. A real driver implements ``step()`` as "wait for the next
sample".
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..kinematics.task_space import Pose


@dataclass(frozen=True)
class RobotState:
    """The robot at one instant: ALL tree joints (platform joints included, so
    robot_state_publisher / RViz draw the closed loops) in model order, and the platform motion."""

    time: float                  # s (sim time for the simulated robot)
    names: tuple                 # model joint names (JointState.name)
    position: np.ndarray         # every tree joint
    velocity: np.ndarray
    effort: np.ndarray           # applied actuator forces at the actuated joints, 0 elsewhere
    platform_pose: Pose
    platform_twist: np.ndarray   # task velocity (twist (v, omega) for spatial robots)


class HardwareInterface(ABC):
    """A robot behind the controller."""

    #: model joint names (all tree joints) and the actuated ones, model order
    names: tuple = ()
    actuated_names: tuple = ()

    @abstractmethod
    def reset(self, pose: Pose, twist=None, time: float = 0.0) -> RobotState:
        """Put the robot at rest (or moving with ``twist``) at ``pose``; return its state."""

    @abstractmethod
    def read(self) -> RobotState:
        """The current state."""

    @abstractmethod
    def write(self, tau, time: float | None = None) -> None:
        """Command actuator forces (actuated-joint order) for the period starting at ``time``."""

    @abstractmethod
    def step(self) -> RobotState:
        """Advance one period with the last command (or the safe behaviour); return the new state."""
