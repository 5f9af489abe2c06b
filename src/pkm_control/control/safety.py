"""Actuator force limits and the safe behaviours (the watchdog on stale inputs is the controller's,
controller.py).

* ``ForceLimits``: per-actuator saturation |tau_i| <= limit_i (config ``actuators.force_limit``),
  reporting which actuators saturated.
* ``ReferenceLimits``: what a reference of the actuated joints may ask: positions inside the joint (stroke)
  ranges, velocities inside the joints' velocity limits, and no jump between two periods larger than the
  velocity limit allows (URDF <limit lower upper velocity>).
* ``SafeBehaviour``: what a controller or the hardware does when its inputs are stale:
  ``hold`` = gravity compensation at the last measured pose + PD towards the last measured
  actuated positions (the robot stops and stays), ``zero`` = zero force (the robot falls; only
  for brakes or gravity-free robots).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, check_vector
from ..kinematics.task_space import Pose
from . import kernels


class ForceLimits:
    """Symmetric per-actuator force limits (immutable)."""

    def __init__(self, limits, n: int | None = None):
        lim = np.array(limits, dtype=float)
        if lim.ndim == 0:
            if n is None:
                raise InvalidInputError("a scalar force limit needs the number of actuators n")
            lim = np.full(n, float(lim))
        if lim.ndim != 1 or (n is not None and len(lim) != n):
            raise InvalidInputError(f"force limits must be a scalar or {n} values, got shape {lim.shape}")
        if not (lim > 0).all() or np.isnan(lim).any():
            raise InvalidInputError(f"force limits must be > 0, got {lim.tolist()}")
        lim.setflags(write=False)
        self.limits = lim
        self._lower = -lim
        self._n = len(lim)

    @classmethod
    def from_config(cls, model) -> "ForceLimits":
        """From ``actuators.force_limit`` of a ClosedLoopModel's config (scalar or per actuator)."""
        return cls(model.spec.require("actuators.force_limit", "the force limits"), model.n_actuated)

    def apply(self, tau):
        """(saturated tau, bool mask of the actuators at their limit)."""
        return self.saturate(tau)[:2]

    def saturate(self, tau):
        """(saturated tau, bool mask of the actuators at their limit, any of them at its limit, tau finite): one
        compiled pass (kernels.saturate) for a finite tau; NaN and inf are clipped as numpy's minimum and maximum
        do (NaN stays NaN)."""
        tau = np.asarray(tau, dtype=float)
        n = self._n
        if tau.shape != (n,):
            raise InvalidInputError(f"actuator forces must have shape {self.limits.shape}, got {tau.shape}")
        out, sat = np.empty(n), np.empty(n, bool)
        any_sat, finite = kernels.saturate(tau, self.limits, out, sat)
        if not finite:
            out, sat = np.minimum(np.maximum(tau, self._lower), self.limits), np.abs(tau) > self.limits
            any_sat = bool(sat.any())
        return out, sat, any_sat, finite


@dataclass(frozen=True)
class ReferenceLimits:
    """Position range, velocity limit and the largest step per period of the actuated joints (immutable)."""

    lower: np.ndarray
    upper: np.ndarray
    velocity: np.ndarray
    names: tuple

    def __post_init__(self):
        # the bounds as compared every period, tolerances included, as Python floats: six scalar comparisons
        # cost less than one numpy call on a six-vector
        object.__setattr__(self, "_bounds", ((np.asarray(self.lower, float) - 1e-9).tolist(),
                                             (np.asarray(self.upper, float) + 1e-9).tolist(),
                                             (np.asarray(self.velocity, float) * (1 + 1e-6)).tolist(),
                                             (1.5 * np.asarray(self.velocity, float)).tolist()))

    @classmethod
    def from_kinematics(cls, kin) -> "ReferenceLimits":
        clm = kin.model
        act = clm.actuated_idx
        v = np.array([clm.model.velocityLimit[clm.model.joints[clm.model.getJointId(n)].idx_v]
                      for n in clm.actuated_joints], float)
        return cls(np.array(kin.lower[act], float), np.array(kin.upper[act], float), v, tuple(clm.actuated_joints))

    def problem(self, q, qd, q_prev=None, dt: float = 0.0) -> str:
        """'' when the reference (q, qd), coming dt s after q_prev, is inside the limits; else what breaks."""
        lo, hi, vmax, step = self._bounds
        q, qd = np.asarray(q, float).tolist(), np.asarray(qd, float).tolist()
        for i, (x, a, b) in enumerate(zip(q, lo, hi)):
            if not a <= x <= b:
                return (f"reference of {self.names[i]} = {x:.6g} is outside its range [{self.lower[i]:.6g}, "
                        f"{self.upper[i]:.6g}]")
        for i, (v, m) in enumerate(zip(qd, vmax)):
            if not abs(v) <= m:
                return f"reference velocity of {self.names[i]} = {v:.6g} exceeds its limit {self.velocity[i]:.6g}"
        if q_prev is not None and dt > 0:
            for i, (x, x0, m) in enumerate(zip(q, np.asarray(q_prev, float).tolist(), step)):
                if not abs(x - x0) <= m * dt + 1e-9:
                    return (f"reference of {self.names[i]} jumps by {x - x0:.6g} in {dt * 1e3:.3g} ms (limit "
                            f"1.5 x velocity limit x period = {m * dt:.6g})")
        return ""


@dataclass(frozen=True)
class HoldTarget:
    """What the safe behaviour holds: the actuated positions and the forces that balance gravity there."""

    q: np.ndarray
    tau_gravity: np.ndarray
    pose: Pose | None = None


class SafeBehaviour:
    """'hold' (gravity compensation + PD to the captured positions) or 'zero' (no force).

    Usage: ``target = safe.capture(q, pose)`` when the inputs go stale (the last measured
    actuated positions and platform pose), then every period ``safe.command(target, q, qd)``.
    """

    MODES = ("hold", "zero")

    def __init__(self, mode: str, model=None, kp=None, kd=None):
        if mode not in self.MODES:
            raise InvalidInputError(f"safe behaviour must be one of {self.MODES}, got {mode!r}")
        self.mode = mode
        self.model = model
        self.n = None if model is None else model.n_actuated
        if mode == "hold":
            if model is None or kp is None or kd is None:
                raise InvalidInputError("safe behaviour 'hold' needs a FeedforwardModel (gravity) and PD gains kp, kd")
            self.kp = np.array(kp, float) * np.ones(self.n)
            self.kd = np.array(kd, float) * np.ones(self.n)
            if not (np.isfinite(self.kp).all() and np.isfinite(self.kd).all() and (self.kp >= 0).all()
                    and (self.kd >= 0).all()):
                raise InvalidInputError(f"hold gains must be finite and >= 0, got kp {kp}, kd {kd}")
        else:
            self.kp = self.kd = None

    @classmethod
    def for_model(cls, mode: str, model, bandwidth: float = 30.0, damping: float = 1.0, pose: Pose | None = None):
        """Hold gains from the joint-space inertia at ``pose`` (default: home): per actuator
        kp = M_q,ii w^2, kd = 2 zeta M_q,ii w (a second-order joint with natural frequency w)."""
        if mode == "zero":
            return cls("zero", model)
        kin = model.kin
        pose = pose if pose is not None else kin.home_pose()
        Mq = model.dyn.joint_space(pose, np.zeros(model.dyn.n))[0]
        m = np.abs(np.diag(Mq))
        return cls(mode, model, m * bandwidth ** 2, 2 * damping * m * bandwidth)

    def capture(self, q, pose: Pose | None) -> HoldTarget:
        """The hold target at the moment the behaviour engages."""
        if self.mode == "zero":
            z = np.zeros(len(np.atleast_1d(q)))
            return HoldTarget(z, z, pose)
        q = check_vector("actuated joint positions to hold", q, self.n)
        if pose is None:
            raise InvalidInputError("safe behaviour 'hold' needs the measured platform pose for gravity compensation")
        return HoldTarget(q.copy(), self.model.gravity(pose), pose)

    def command(self, target: HoldTarget, q, qd) -> np.ndarray:
        """Actuator forces of the behaviour: hold: tau_g + Kp (q_hold - q) - Kd qd; zero: 0."""
        if self.mode == "zero":
            return np.zeros(len(np.atleast_1d(q)))
        q, qd = np.asarray(q, float), np.asarray(qd, float)
        if q.ndim != 1 or qd.ndim != 1:
            raise InvalidInputError(f"hold needs actuated positions and velocities as vectors, got shapes {q.shape}, "
                                    f"{qd.shape}")
        return kernels.hold(target.tau_gravity, self.kp, self.kd, target.q, q, qd)    # compiled, the same bits
