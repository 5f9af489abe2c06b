"""Imperfect sensors: what a controller reads is not what the robot does.

``Sensors(resolution, position_std, velocity_std, effort_std)`` measures the actuated joints as drives do: position
= resolution * round((q + n_q) / resolution) (an incremental encoder; one resolution per joint, m per count for a
linear joint, 2 pi / counts per turn for a rotary one, 0: not quantized), n_q ~ N(0, position_std^2); velocity = qd +
n_v, n_v ~ N(0, velocity_std^2); effort = the applied force + n_f, n_f ~ N(0, effort_std^2) (the force or current
measurement). One draw per period from a seeded numpy Generator: runs repeat exactly.

``NoisyEncoders(robot, resolution, position_std, velocity_std, seed)`` puts them in front of any robot (it passes
commands through); the simulated plants also take them directly (hardware/simulated.py ``sensors``, the settings
``encoder_resolution``, ``encoder_counts_per_turn``, ``effort_noise_std``, ``measurement_seed``). The robot itself
(its ``ground_truth``) stays exact: that is what tracking is judged by.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from .interface import HardwareInterface, JointMeasurement


def _nonnegative(what, x):
    x = np.asarray(x, float)
    if not (np.all(np.isfinite(x)) and np.all(x >= 0)):
        raise InvalidInputError(f"{what} must be finite and >= 0, got {x.tolist()}")
    return x


@dataclass(frozen=True)
class Sensors:
    """Encoders, velocity estimate and force measurement of the actuated joints (module docstring); m or rad, m/s or
    rad/s, N or Nm as the joints. ``resolution``: one value for every joint or one per joint."""

    resolution: np.ndarray
    position_std: float = 0.0
    velocity_std: float = 0.0
    effort_std: float = 0.0

    def __post_init__(self):
        res = _nonnegative("encoder resolution", self.resolution)
        object.__setattr__(self, "resolution", res)
        res.setflags(write=False)
        for what in ("position_std", "velocity_std", "effort_std"):
            object.__setattr__(self, what, float(_nonnegative(f"encoder {what}" if what != "effort_std" else what,
                                                              getattr(self, what))))

    @staticmethod
    def for_joints(revolute, encoder_resolution: float = 0.0, counts_per_turn: int = 0,
                   effort_std: float = 0.0) -> "Sensors":
        """The drives of joints that are ``revolute`` (a bool per joint, else linear): ``encoder_resolution`` m per
        count on a linear joint, ``counts_per_turn`` counts per turn (resolution 2 pi / counts) on a rotary one;
        0 = not quantized."""
        _nonnegative("encoder_resolution", encoder_resolution)
        if int(counts_per_turn) != counts_per_turn or counts_per_turn < 0:
            raise InvalidInputError(f"encoder_counts_per_turn must be an integer >= 0, got {counts_per_turn}")
        rotary = 2 * np.pi / counts_per_turn if counts_per_turn else 0.0
        return Sensors(np.where(np.asarray(revolute, bool), rotary, float(encoder_resolution)), effort_std=effort_std)

    @property
    def exact(self) -> bool:
        """True when the measurement equals the robot's state (nothing quantized, no noise)."""
        return not (self.resolution.any() or self.position_std or self.velocity_std or self.effort_std)

    def measure(self, raw: JointMeasurement, rng: np.random.Generator) -> JointMeasurement:
        """The measurement of ``raw`` (exact), with this period's draws from ``rng``."""
        n = len(raw.position)
        q = raw.position + self.position_std * rng.standard_normal(n)
        res = self.resolution
        if res.any():
            q = np.where(res > 0, res * np.round(q / np.where(res > 0, res, 1.0)), q)
        qd = raw.velocity + self.velocity_std * rng.standard_normal(n)
        out = dataclasses.replace(raw, position=q, velocity=qd)
        if self.effort_std:
            out = dataclasses.replace(out, effort=raw.effort + self.effort_std * rng.standard_normal(len(raw.effort)))
        return out


class NoisyEncoders(HardwareInterface):
    """The robot's actuated joints measured through ``Sensors`` (module docstring); resolution 0: no
    quantization."""

    def __init__(self, robot: HardwareInterface, resolution: float, position_std: float, velocity_std: float,
                 seed: int = 0, effort_std: float = 0.0):
        self.robot = robot
        self.sensors = Sensors(resolution, position_std, velocity_std, effort_std)
        self._rng = np.random.default_rng(seed)
        self._raw = self._noisy = None

    def read(self) -> JointMeasurement:
        """The measurement of this period (the same one until the robot's own measurement changes)."""
        raw = self.robot.read()
        if raw is not self._raw:
            self._raw, self._noisy = raw, self.sensors.measure(raw, self._rng)
        return self._noisy

    def write(self, command, time: float | None = None) -> None:
        self.robot.write(command, time)
