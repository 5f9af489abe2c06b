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
from .laws import FEEDFORWARD
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
    check_limits: the full IK of every joint with the joint-limit checks (JointLimitError,
    UnreachablePoseError), as the inverse_kinematics node does before it publishes a reference;
    by default only the actuated joints (q_a, J, Jdot), the reference being checked upstream.
    """

    def __init__(self, kin, trajectory, law, feedforward: FeedforwardModel | None = None,
                 limits: ForceLimits | None = None, check_limits: bool = False):
        if FEEDFORWARD in law.requires and feedforward is None:
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
        if self.check_limits:
            m = self.kin.inverse(pose_d, twist_d, accel_d, check_limits=True)
            act = self._act
            q_d, qd_d, qdd_d = m.q[act], m.v[act], m.a[act]
        else:
            # the actuated joints only (what the law needs): q_a, J; qdd_a = J xdd + Jdot xd
            q_d, J = self.kin.actuated_and_jacobian(self.kin.validate(pose_d)[0])
            qd_d = J @ twist_d
            qdd_d = J @ accel_d + self.kin.jacobian_dot(pose_d, twist_d) @ twist_d
        tau_ff = None
        if FEEDFORWARD in self.law.requires:
            tau_ff = self.feedforward.tau(pose_d, twist_d, accel_d)
        tau = self.law.compute(q_d, qd_d, qdd_d, q, qd, tau_ff=tau_ff, pose=pose, twist=twist)
        if self.limits is not None:
            tau, sat = self.limits.apply(tau)
        else:
            sat = np.zeros(len(tau), bool)
        return CycleResult(tau, sat, q_d, qd_d, qdd_d, tau_ff, pose_d)
