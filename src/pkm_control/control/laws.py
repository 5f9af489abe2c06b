"""Joint-space control laws on the actuated joints (plain classes, numpy arrays in model order).

All laws share one call, ``compute(q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None)``,
and declare in ``requires`` which optional inputs they need (``FEEDFORWARD``: the computed force on
the desired trajectory, streamed by the computed_force node; ``MEASURED_POSE``: the platform pose and
twist from the state estimator); the controller (controller.py) provides exactly those:

* ``DecentralizedPD`` ("SJ", Abdellatif sec. V): tau = Kp (q_d - q) + Kd (qd_d - qd), every
  actuator on its own, no model.
* ``PDFeedforward``: tau = tau_ff + Kp e + Kd e', with tau_ff the computed-force model evaluated on
  the desired trajectory (feedforward.py; "CF rb" / "CF rb+frict" of sec. V).
* ``ComputedTorque``: inverse dynamics at the measured state (Taghirad, joint-space inverse
  dynamics control): the model is asked for the forces that give the actuated joints the
  acceleration  u = qdd_d + Kp e + Kd e'. For a parallel robot the model lives on the platform:
  the measured pose (hardware, or forward kinematics of the measured joints), the twist
  xdot = J^-1 qdot and xddot = J^-1 (u - Jdot xdot), from qddot_a = J xddot + Jdot xdot
  (least squares for redundant actuation). With a perfect model the error obeys
  e'' + Kd e' + Kp e = 0 exactly.

Gains are scalars (every actuator) or one value per actuator (N/m, N s/m or Nm/rad, Nm s/rad for
the PD laws; 1/s^2, 1/s for computed torque).
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from ..kinematics.task_space import Pose
from .feedforward import FeedforwardModel, task_rates


FEEDFORWARD = "feedforward"
MEASURED_POSE = "measured_pose"


def _gain(name, value):
    g = np.array(value, dtype=float)
    if g.ndim > 1 or not np.isfinite(g).all() or (g < 0).any():
        raise InvalidInputError(f"gain {name} must be a finite scalar or vector >= 0, got {value!r}")
    g.setflags(write=False)
    return g


def _vec(name, value, n):
    a = np.asarray(value, dtype=float)
    if a.shape != (n,):
        raise InvalidInputError(f"{name} must have shape ({n},), got {a.shape}")
    if not np.isfinite(a).all():
        raise InvalidInputError(f"{name} must be finite, got {np.array2string(a, precision=6)}")
    return a


class _PD:
    """Shared by the laws: gains, the checked ``compute`` and the unchecked ``evaluate``.

    ``compute`` checks every input it uses (one finite value per actuator; the ones the law
    ``requires`` present) and then evaluates. ``evaluate`` is the formula alone, for a caller that has
    checked the same inputs already (the Controller checks them once per period, and the gain sizes
    once with ``check_size``).
    """

    requires: frozenset = frozenset()
    uses_acceleration = False

    def __init__(self, kp, kd):
        self.kp, self.kd = _gain("kp", kp), _gain("kd", kd)

    def check_size(self, n: int) -> None:
        for name, g in (("kp", self.kp), ("kd", self.kd)):
            if g.ndim == 1 and len(g) != n:
                raise InvalidInputError(f"gain {name} has {len(g)} values for {n} actuators")

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None) -> np.ndarray:
        n = len(np.atleast_1d(q))
        self.check_size(n)
        q_d, qd_d = _vec("desired positions", q_d, n), _vec("desired velocities", qd_d, n)
        q, qd = _vec("measured positions", q, n), _vec("measured velocities", qd, n)
        if self.uses_acceleration:
            qdd_d = _vec("desired accelerations", qdd_d, n)
        if FEEDFORWARD in self.requires:
            if tau_ff is None:
                raise InvalidInputError(f"{self.name} needs tau_ff (the computed force on the desired trajectory)")
            tau_ff = _vec("feedforward forces tau_ff", tau_ff, n)
        if MEASURED_POSE in self.requires and pose is None:
            raise InvalidInputError(f"{self.name} needs the measured platform pose (hardware or forward kinematics "
                                    "of the measured joints)")
        return self.evaluate(q_d, qd_d, qdd_d, q, qd, tau_ff, pose, twist)

    def pd(self, q_d, qd_d, q, qd) -> np.ndarray:
        """Kp (q_d - q) + Kd (qd_d - qd)."""
        return self.kp * (q_d - q) + self.kd * (qd_d - qd)


class DecentralizedPD(_PD):
    """Single-joint PD ("SJ"): tau = Kp (q_d - q) + Kd (qd_d - qd)."""

    name = "pd"

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd)


class PDFeedforward(_PD):
    """tau = tau_ff + Kp (q_d - q) + Kd (qd_d - qd); tau_ff from the model on the desired trajectory."""

    name = "pd_feedforward"
    requires = frozenset({FEEDFORWARD})

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None) -> np.ndarray:
        return tau_ff + self.pd(q_d, qd_d, q, qd)


class ComputedTorque(_PD):
    """Inverse-dynamics control at the measured state: tau = model(x, xdot, J^-1 (u - Jdot xdot)),
    u = qdd_d + Kp e + Kd e' (see the module docstring). Kp, Kd in 1/s^2, 1/s."""

    name = "computed_torque"
    requires = frozenset({MEASURED_POSE})
    uses_acceleration = True

    def __init__(self, model: FeedforwardModel, kp, kd):
        super().__init__(kp, kd)
        if not isinstance(model, FeedforwardModel):
            raise InvalidInputError(f"computed torque needs a FeedforwardModel, got {type(model).__name__}")
        if model.model == "none":
            raise InvalidInputError("computed torque needs a dynamic model ('rigid' or 'rigid+friction'), got 'none'")
        self.model = model
        self._square = not model.dyn.redundant

    def acceleration(self, q_d, qd_d, qdd_d, q, qd) -> np.ndarray:
        """u = qdd_d + Kp (q_d - q) + Kd (qd_d - qd): the commanded actuated-joint acceleration."""
        return qdd_d + self.pd(q_d, qd_d, q, qd)

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose: Pose = None, twist=None) -> np.ndarray:
        """pose: the measured platform pose (required: the state estimator's, estimator.py).
        twist: the measured platform twist if known, else J^-1 qd."""
        if twist is not None:
            twist = _vec("measured twist", twist, self.model.dyn.n)
        return super().compute(q_d, qd_d, qdd_d, q, qd, tau_ff, pose, twist)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose: Pose = None, twist=None) -> np.ndarray:
        u = self.acceleration(q_d, qd_d, qdd_d, q, qd)
        xd, xdd = task_rates(self.model.kin, pose, qd, u, self._square, twist)
        return self.model.tau(pose, xd, xdd)


LAWS = {"pd": DecentralizedPD, "pd_feedforward": PDFeedforward, "computed_torque": ComputedTorque}


def make_law(mode: str, kp, kd, model: FeedforwardModel | None = None):
    """The law of a controller mode (config/controllers.yaml ``mode``)."""
    if mode not in LAWS:
        raise InvalidInputError(f"controller mode must be one of {sorted(LAWS)}, got {mode!r}")
    if mode == "computed_torque":
        return ComputedTorque(model, kp, kd)
    return LAWS[mode](kp, kd)
