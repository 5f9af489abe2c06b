"""A recorded run as the identification sees it: measured actuated joints and forces on time stamps."""

from __future__ import annotations

import dataclasses
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

    def between(self, start: float | None = None, end: float | None = None) -> "MeasuredRun":
        """The samples with start <= t <= end (s, the run's clock; None: open), e.g. an excitation without the
        approach move before it and the rest after it, whose slow joints no friction model fits."""
        keep = np.ones(len(self.t), bool)
        if start is not None:
            keep &= self.t >= start
        if end is not None:
            keep &= self.t <= end
        if not keep.any():
            raise InvalidInputError(f"{self.source or 'run'}: no sample between {start} and {end} s (the run has "
                                    f"{self.t[0]:.6g} to {self.t[-1]:.6g} s)" if len(self.t) else
                                    f"{self.source or 'run'}: no samples")
        return dataclasses.replace(self, t=self.t[keep], position=self.position[keep], effort=self.effort[keep],
                                   velocity=None if self.velocity is None else self.velocity[keep],
                                   source=f"{self.source} [{start if start is not None else ''}, "
                                          f"{end if end is not None else ''}] s")
