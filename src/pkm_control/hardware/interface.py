"""The hardware contract: what the control loop reads from and writes to a robot, simulated or real.

As a ros2_control hardware interface, a robot exports state interfaces of its ACTUATED joints only
(position, velocity, effort, as a drive measures them) plus optional sensors (a force/torque sensor,
...), and command interfaces on the same joints (effort; position and velocity for drives that close
their own loops, CiA 402 CSP/CSV). The platform pose and twist and the passive joints are not
measured: the state estimator of the core computes them (control/estimator.py).

The loop calls, every period (control/loop.py): ``read()`` -> estimate -> law -> ``write(command)``.
A simulated robot also implements ``Simulated`` (``step()`` advances exactly one period, so
lockstep runs are deterministic; ``ground_truth()`` is every joint and the exact platform motion,
for tests and plots, never for the controller).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field

import numpy as np

from ..control import kernels
from ..errors import InvalidInputError, check_vector
from ..kinematics.task_space import Pose

COMMAND_INTERFACES = ("effort", "position", "velocity")
#: a command beyond this multiple of the force limit is refused (not clipped and applied)
REFUSE_FACTOR = 2.0


@dataclass(frozen=True)
class JointMeasurement:
    """What the drives measured at one instant, actuated joints in model order."""

    time: float                  # s (sim time for a simulated robot, the loop's clock otherwise)
    position: np.ndarray         # m or rad
    velocity: np.ndarray         # m/s or rad/s
    effort: np.ndarray           # N or Nm: the force the drive applied (measured or commanded)
    sensors: dict = field(default_factory=dict)   # optional extra measurements by name: "wrench", a 6-axis
    #                                               force/torque sensor (control/force.py WrenchMeasurement)


@dataclass(frozen=True)
class RobotState:
    """Ground truth of a simulated robot: ALL tree joints in model order and the platform motion."""

    time: float
    names: tuple                 # model joint names (JointState.name)
    position: np.ndarray         # every tree joint (platform joints included)
    velocity: np.ndarray
    effort: np.ndarray           # applied actuator forces at the actuated joints, 0 elsewhere
    platform_pose: Pose
    platform_twist: np.ndarray


class HardwareInterface(ABC):
    """A robot behind the control loop (module docstring)."""

    #: actuated joint names (model order) and the command interface written by ``write``
    actuated_names: tuple = ()
    command_interface: str = "effort"

    @abstractmethod
    def read(self) -> JointMeasurement:
        """The latest measurement of the actuated joints."""

    @abstractmethod
    def write(self, command, time: float | None = None) -> None:
        """Command the actuated joints (``command_interface``; actuated-joint order) for the period
        starting at ``time``. NaN, infinite or wrong-size commands raise InvalidInputError and are not
        applied."""

    def close(self) -> None:
        """Release the hardware (stop drives, close the bus). Default: nothing to release."""

    def measurement_summary(self) -> dict | None:
        """What this robot is and how it measures, for a run's summary and the start-up log (a simulated robot: its
        true parameters, encoders, effort noise, lag, seed and rate; ``SimulatedRobot``). Default: None, nothing
        to state."""
        return None


class CommandCheck:
    """The checks every interface applies to an actuator-force command before it goes anywhere: finite, the right
    size, and not beyond REFUSE_FACTOR x the force limit (a broken or hostile controller, not a saturation): each
    raises InvalidInputError naming the joint, and nothing is applied. Between the limit and that, the interface
    saturates at the limit and reports it (``saturated``)."""

    def __init__(self, names, force_limits=None):
        self.names = tuple(names)
        self.force_limits = force_limits
        self._refused_beyond = None if force_limits is None else REFUSE_FACTOR * force_limits.limits
        self._command_name = f"actuator forces ({', '.join(self.names)})"      # formed once, not every period

    def __call__(self, tau) -> np.ndarray:
        if self._refused_beyond is not None and type(tau) is np.ndarray and tau.dtype == np.float64 \
                and tau.ndim == 1 and kernels.within(tau, self._refused_beyond):
            return tau                 # a valid command in one compiled check; anything else is examined below
        tau = check_vector(self._command_name, tau, len(self.names))
        if self._refused_beyond is not None:
            far = np.abs(tau) > self._refused_beyond
            if far.any():
                i = int(np.flatnonzero(far)[0])
                raise InvalidInputError(f"command of {self.names[i]} = {tau[i]:.6g} is beyond "
                                        f"{REFUSE_FACTOR:g} x its force limit {self.force_limits.limits[i]:.6g}: "
                                        "refused")
        return tau


class Simulated(ABC):
    """The extra interface of a simulated robot (lockstep stepping and ground truth)."""

    @abstractmethod
    def reset(self, pose: Pose, twist=None, time: float = 0.0) -> JointMeasurement:
        """Put the robot at rest (or moving with ``twist``) at ``pose``; return its measurement."""

    @abstractmethod
    def step(self) -> JointMeasurement:
        """Advance one period with the last command (or the safe behaviour); return the new measurement."""

    @abstractmethod
    def ground_truth(self) -> RobotState:
        """Every joint and the exact platform pose and twist now (tests and plots only)."""
