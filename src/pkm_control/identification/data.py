"""A recorded run as the identification sees it: measured actuated joints and forces on time stamps."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError


@dataclass(frozen=True)
class MeasuredRun:
    """Samples of the actuated joints of one robot, as its drives measured them.

    t: (N,) s, strictly increasing. position, effort: (N, n) in model order of the actuated joints (m or rad;
    N or Nm). velocity: (N, n) when the drives report it, else None (the identification differentiates the
    positions either way). source: where it came from (a bag path, "simulation", ...), for messages.
    """

    robot: str | None
    names: tuple
    t: np.ndarray
    position: np.ndarray
    effort: np.ndarray
    velocity: np.ndarray | None = None
    source: str = ""

    def __post_init__(self):
        n, rows = len(self.names), len(self.t)
        for what, x in (("position", self.position), ("effort", self.effort), ("velocity", self.velocity)):
            if x is not None and np.shape(x) != (rows, n):
                raise InvalidInputError(f"{self.source or 'run'}: {what} has shape {np.shape(x)}, "
                                        f"expected ({rows}, {n}) for {rows} time stamps and joints {self.names}")
        if rows > 1 and not np.all(np.diff(self.t) > 0):
            raise InvalidInputError(f"{self.source or 'run'}: time stamps are not strictly increasing")
