"""Imperfect sensors in front of a robot: what a controller reads is not what the robot does.

``NoisyEncoders(robot, resolution, position_std, velocity_std, seed)`` passes commands through and measures the
actuated joints as an incremental encoder with a velocity estimate would: position = resolution *
round((q + n_q) / resolution), n_q ~ N(0, position_std^2); velocity = qd + n_v, n_v ~ N(0, velocity_std^2); one
draw per period (a seeded numpy Generator: runs repeat exactly). The robot itself (its ``read``, ``ground_truth``)
stays exact: that is what tracking is judged by.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from ..errors import InvalidInputError
from .interface import HardwareInterface, JointMeasurement


class NoisyEncoders(HardwareInterface):
    """The robot's actuated joints measured with quantization and Gaussian noise (module docstring); m or rad,
    m/s or rad/s as the joints. resolution 0: no quantization."""

    def __init__(self, robot: HardwareInterface, resolution: float, position_std: float, velocity_std: float,
                 seed: int = 0):
        for what, x in (("resolution", resolution), ("position_std", position_std), ("velocity_std", velocity_std)):
            if not (np.isfinite(x) and x >= 0):
                raise InvalidInputError(f"encoder {what} must be finite and >= 0, got {x}")
        self.robot = robot
        self.resolution, self.position_std, self.velocity_std = float(resolution), float(position_std), \
            float(velocity_std)
        self._rng = np.random.default_rng(seed)
        self._raw = self._noisy = None

    def read(self) -> JointMeasurement:
        """The measurement of this period (the same one until the robot's own measurement changes)."""
        raw = self.robot.read()
        if raw is not self._raw:
            n = len(raw.position)
            q = raw.position + self.position_std * self._rng.standard_normal(n)
            if self.resolution > 0:
                q = self.resolution * np.round(q / self.resolution)
            qd = raw.velocity + self.velocity_std * self._rng.standard_normal(n)
            self._raw, self._noisy = raw, dataclasses.replace(raw, position=q, velocity=qd)
        return self._noisy

    def write(self, command, time: float | None = None) -> None:
        self.robot.write(command, time)
