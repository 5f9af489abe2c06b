"""One control cycle on the core: trajectory sample -> IK -> model -> control law -> force limits.

This is what Abdellatif (sec. V) times as the control cycle (0.15 ms at a 0.5 ms sample time);
the node graph spreads the same steps over several nodes, the demo times this function. It
creates only the arrays the steps return (no per-cycle object graph beyond the result).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..kinematics.task_space import Pose
from .feedforward import FeedforwardModel
from .safety import ForceLimits


@dataclass(frozen=True)
class CycleResult:
    tau: np.ndarray              # actuator forces to write (after the limits)
    saturated: np.ndarray        # bool per actuator
    q_d: np.ndarray              # desired actuated positions, velocities, accelerations
    qd_d: np.ndarray
    qdd_d: np.ndarray
    tau_ff: np.ndarray | None    # the feedforward (PD + feedforward only)
    pose_d: Pose


class ControlCycle:
    """trajectory.sample(t) -> kin.inverse -> feedforward / model -> law.compute -> limits.

    trajectory: any object with ``sample(t) -> (pose, twist, accel)`` (trajectory.TaskTrajectory).
    law: DecentralizedPD, PDFeedforward (needs ``feedforward``) or ComputedTorque (its own model,
    evaluated at the measured pose given to the call).
    """

    def __init__(self, kin, trajectory, law, feedforward: FeedforwardModel | None = None,
                 limits: ForceLimits | None = None, check_limits: bool = True):
        if getattr(law, "needs_feedforward", False) and feedforward is None:
            raise InvalidInputError(f"law {type(law).__name__} needs a FeedforwardModel")
        self.kin = kin
        self.trajectory = trajectory
        self.law = law
        self.feedforward = feedforward
        self.limits = limits
        self.check_limits = check_limits
        self._act = kin.model.actuated_idx

    def __call__(self, t: float, q, qd, pose: Pose | None = None, twist=None) -> CycleResult:
        pose_d, twist_d, accel_d = self.trajectory.sample(t)
        m = self.kin.inverse(pose_d, twist_d, accel_d, check_limits=self.check_limits)
        act = self._act
        q_d, qd_d, qdd_d = m.q[act], m.v[act], m.a[act]
        tau_ff = None
        if self.law.needs_feedforward:
            tau_ff = self.feedforward.tau(pose_d, twist_d, accel_d)
        tau = self.law.compute(q_d, qd_d, qdd_d, q, qd, tau_ff=tau_ff, pose=pose, twist=twist)
        if self.limits is not None:
            tau, sat = self.limits.apply(tau)
        else:
            sat = np.zeros(len(tau), bool)
        return CycleResult(tau, sat, q_d, qd_d, qdd_d, tau_ff, pose_d)
