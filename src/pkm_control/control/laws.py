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
    requires: frozenset = frozenset()

    def __init__(self, kp, kd):
        self.kp, self.kd = _gain("kp", kp), _gain("kd", kd)

    def _check(self, q_d, qd_d, q, qd):
        n = len(np.atleast_1d(q))
        for name, g in (("kp", self.kp), ("kd", self.kd)):
            if g.ndim == 1 and len(g) != n:
                raise InvalidInputError(f"gain {name} has {len(g)} values for {n} actuators")
        return (_vec("desired positions", q_d, n), _vec("desired velocities", qd_d, n),
                _vec("measured positions", q, n), _vec("measured velocities", qd, n))

    def pd(self, q_d, qd_d, q, qd) -> np.ndarray:
        """Kp (q_d - q) + Kd (qd_d - qd)."""
        q_d, qd_d, q, qd = self._check(q_d, qd_d, q, qd)
        return self.kp * (q_d - q) + self.kd * (qd_d - qd)


class DecentralizedPD(_PD):
    """Single-joint PD ("SJ"): tau = Kp (q_d - q) + Kd (qd_d - qd)."""

    name = "pd"

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd)


class PDFeedforward(_PD):
    """tau = tau_ff + Kp (q_d - q) + Kd (qd_d - qd); tau_ff from the model on the desired trajectory."""

    name = "pd_feedforward"
    requires = frozenset({FEEDFORWARD})

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None) -> np.ndarray:
        tau = self.pd(q_d, qd_d, q, qd)
        if tau_ff is None:
            raise InvalidInputError("PD + feedforward needs tau_ff (the computed force on the desired trajectory)")
        return tau + _vec("feedforward forces tau_ff", tau_ff, len(tau))


class ComputedTorque(_PD):
    """Inverse-dynamics control at the measured state: tau = model(x, xdot, J^-1 (u - Jdot xdot)),
    u = qdd_d + Kp e + Kd e' (see the module docstring). Kp, Kd in 1/s^2, 1/s."""

    name = "computed_torque"
    requires = frozenset({MEASURED_POSE})

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
        return _vec("desired accelerations", qdd_d, len(np.atleast_1d(q))) + self.pd(q_d, qd_d, q, qd)

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose: Pose = None, twist=None) -> np.ndarray:
        """pose: the measured platform pose (required: the state estimator's, estimator.py).
        twist: the measured platform twist if known, else J^-1 qd."""
        if pose is None:
            raise InvalidInputError("computed torque needs the measured platform pose (hardware or forward "
                                    "kinematics of the measured joints)")
        u = self.acceleration(q_d, qd_d, qdd_d, q, qd)
        kin = self.model.kin
        if twist is not None:
            twist = _vec("measured twist", twist, self.model.dyn.n)
        xd, xdd = task_rates(kin, pose, np.asarray(qd, float), u, self._square, twist)
        return self.model.tau(pose, xd, xdd)


LAWS = {"pd": DecentralizedPD, "pd_feedforward": PDFeedforward, "computed_torque": ComputedTorque}


def make_law(mode: str, kp, kd, model: FeedforwardModel | None = None):
    """The law of a controller mode (config/controllers.yaml ``mode``)."""
    if mode not in LAWS:
        raise InvalidInputError(f"controller mode must be one of {sorted(LAWS)}, got {mode!r}")
    if mode == "computed_torque":
        return ComputedTorque(model, kp, kd)
    return LAWS[mode](kp, kd)
