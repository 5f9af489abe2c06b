"""A transport delay between the controller and the drives: what a controller writes reaches the robot later.

``CommandDelay(robot, periods)`` passes each command on ``periods`` writes (control periods) after it was written,
as a sampled controller does whose computation takes most of its period and whose output goes out at the next
sampling instant (Codourey 1998, seed 002, sec. 5.1, Table 1: on the DELTA's controller the dynamics and the mass
matrix take 704 + 233 us of the 1 ms sampling interval). Before ``periods`` commands have been written the robot
gets the first one (the controller was holding the start before the run). Reads pass through. With the plant's own
first-order current lag (hardware/simulated.py ``actuator_lag``) it models a drive as a delay plus a lag, which a
feedforward lead (control/loop.py ``feedforward_lead``) approaches but cannot cancel exactly.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from ..errors import InvalidInputError
from .interface import HardwareInterface, JointMeasurement


class CommandDelay(HardwareInterface):
    """``robot`` behind a delay of ``periods`` writes (module docstring)."""

    def __init__(self, robot: HardwareInterface, periods: int):
        if isinstance(periods, bool) or int(periods) != periods or periods < 0:
            raise InvalidInputError(f"command delay must be a whole number of control periods >= 0, got {periods!r}")
        self.robot = robot
        self.periods = int(periods)
        self._queue: deque = deque()

    def read(self) -> JointMeasurement:
        return self.robot.read()

    def write(self, command, time: float | None = None) -> None:
        """Queue ``command``; the robot gets the one written ``periods`` writes ago."""
        command = np.array(command, float)
        if not self._queue:
            self._queue.extend([command] * self.periods)
        self._queue.append(command)
        self.robot.write(self._queue.popleft(), time)
