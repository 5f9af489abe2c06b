"""The hardware contract: what the control loop reads from and writes to a robot, simulated or real.

As a ros2_control hardware interface, a robot exports state interfaces of its ACTUATED joints only
(position, velocity, effort, as a drive measures them) plus optional sensors (a force/torque sensor,
...), and command interfaces on the same joints (effort; position and velocity for drives that close
their own loops, CiA 402 CSP/CSV). The platform pose and twist and the passive joints are not
measured: the state estimator of the core computes them (control/estimator.py).

The loop calls, every period (control/loop.py): ``read()`` -> estimate -> law -> ``write(command)``.
What is specific to one kind of robot stays behind this contract, in optional hooks the hosting node calls without
knowing the kind (nodes/joint_controller.py): ``enable`` at the loop's first period, ``supervise`` after every
period (its findings logged, in the node's diagnostics, a hold of its own shown as the safe behaviour),
``services`` (offered by the node: a CANopen robot's ~/recover) and ``diagnostic_statuses`` (one status per
device on /diagnostics: a CANopen drive each). A kind is selected by name (hardware/plugin.py).
A simulated robot also implements ``Simulated`` (``step()`` advances exactly one period, so
lockstep runs are deterministic; ``ground_truth()`` is every joint and the exact platform motion,
for tests and plots, never for the controller).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Callable

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


@dataclass(frozen=True)
class HardwareService:
    """A service a hardware interface offers through its node: ``name`` (``~/`` = under the node's name), the ROS
    service ``type`` ("std_srvs/srv/Trigger"), ``handler(request, response) -> response`` (called in the node's
    executor, rate-limited as every service: ros/runtime.py ServiceGuard; work on the robot itself belongs between two
    periods: the handler asks, ``supervise`` does it)."""

    name: str
    type: str
    handler: Callable


@dataclass(frozen=True)
class Supervision:
    """What a hardware interface's supervision reports after a period (``HardwareInterface.supervise``)."""

    log: tuple = ()              # (level "info" | "warning" | "error", line) to log now
    diagnostics: dict = field(default_factory=dict)   # keys of the node's own status on /diagnostics (None: removed)
    safe_behaviour: str | None = None   # the robot is held by the hardware itself (CANopen: "drives quick stop")


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

    def enable(self, time: float) -> str | None:
        """Called once, at the loop's first period before its read: a robot that waited for its loop is enabled now
        (CANopen: the drives to Operation enabled). Returns a line for the log, or None. A PkmError is reported by
        the node and the loop goes on (the interface's own supervision holds the robot). Default: nothing."""
        return None

    def supervise(self, time: float) -> Supervision | None:
        """Called after every period (the loop's thread): the interface's own checks and the work its services
        asked for. Default: None, nothing to report."""
        return None

    def services(self) -> tuple:
        """The HardwareService s the node offers for this robot. Default: none."""
        return ()

    def diagnostic_statuses(self) -> list:
        """Statuses of the robot's devices for /diagnostics, one per device: (name, level "ok" | "warn" | "error",
        message, {key: value}). Default: none."""
        return []


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
