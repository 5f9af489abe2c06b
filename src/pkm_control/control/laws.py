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

The motion-control family below (Taghirad, chapter Motion Control, task and joint space; Codourey sec. 5)
adds ``DESIRED_POSE``: the desired platform pose and twist, the state estimator's forward kinematics of the
references (the controller passes them). Each law's docstring gives the equations it implements.

Gains are scalars (every actuator) or one value per actuator (N/m, N s/m or Nm/rad, Nm s/rad for
the PD laws; 1/s^2, 1/s for computed torque and the IDC family); the task-space laws take one value per task
coordinate.
"""

from __future__ import annotations

import math

import numpy as np
import pinocchio as pin

from ..errors import InvalidInputError
from ..kinematics.task_space import Pose
from . import kernels
from .feedforward import FeedforwardModel, force_distribution, task_rates


FEEDFORWARD = "feedforward"
MEASURED_POSE = "measured_pose"
DESIRED_POSE = "desired_pose"
WRENCH = "wrench"                    # the measured platform wrench (force laws, force.py: a 6-axis F/T sensor)
_NO_VALUES = np.empty(0)             # kernels.pd without a feedforward


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


class ControlLaw:
    """What the controller (controller.py) asks of every law: its ``name``, the optional inputs it ``requires``,
    whether it ``uses_acceleration`` (qdd_d), ``compute`` (checked) and ``evaluate`` (the formula alone), and its
    state: ``reset()`` before a new run, ``estimates`` for a display. The defaults are those of a law without state."""

    name: str = ""
    requires: frozenset = frozenset()
    uses_acceleration = False

    def reset(self) -> None:
        """Back to the state of a new run (the hardware reset). Default: no state, nothing to do."""

    @property
    def estimates(self) -> np.ndarray | None:
        """The parameter estimates an adaptive law carries (a copy), None: the law estimates nothing."""
        return None

    def period_call(self):
        """The law's whole period in one compiled call with the 6-UPS front (control/jourdain_period.py): (the
        function, the size of the law kernel's output, the law's fixed arguments), or None (the default): the law's
        ``evaluate`` every period."""
        return None

    def period_arguments(self, t, force, w, point, tau_m):
        """The arguments of ``period_call``'s function that change from period to period, before its fixed ones, or
        None: the usual path in this period. ``force``: References.force; the measured wrench as the law kernels take
        it (jourdain_kernels._measured_wrench): the sensor's ``w`` and ``point``, or the actuator forces ``tau_m``,
        the others empty (all empty: no wrench). Default: the wrench."""
        return w, point, tau_m

    def period_done(self, t, pose, twist, out, force) -> bool:
        """The law's state after the period's call at t (``pose``, ``twist``: the measured estimate; ``out``: its
        kernel's output); False: the period's command is not the call's (the usual path then runs ``evaluate``, from
        the state this left). Default: no state, True."""
        return True


class _PD(ControlLaw):
    """Shared by the laws: gains, the checked ``compute`` and the unchecked ``evaluate``.

    ``compute`` checks every input it uses (one finite value per actuator; the ones the law
    ``requires`` present) and then evaluates. ``evaluate`` is the formula alone, for a caller that has
    checked the same inputs already (the Controller checks them once per period, and the gain sizes
    once with ``check_size``).
    """

    def __init__(self, kp, kd):
        self.kp, self.kd = _gain("kp", kp), _gain("kd", kd)
        self._gains = (self.kp, self.kd)

    def check_size(self, n: int) -> None:
        for name, g in (("kp", self.kp), ("kd", self.kd)):
            if g.ndim == 1 and len(g) != n:
                raise InvalidInputError(f"gain {name} has {len(g)} values for {n} actuators")

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
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
        if DESIRED_POSE in self.requires and desired is None:
            raise InvalidInputError(f"{self.name} needs the desired platform pose and twist (forward kinematics of the "
                                    "references)")
        return self.evaluate(q_d, qd_d, qdd_d, q, qd, tau_ff, pose, twist, desired, t)

    def pd(self, q_d, qd_d, q, qd, tau_ff=None) -> np.ndarray:
        """Kp (q_d - q) + Kd (qd_d - qd), plus tau_ff when given (float arrays of one size; compiled: kernels.pd)."""
        kp, kd = self._gains
        if kp.shape != q.shape or kd.shape != q.shape:   # one gain per joint (a scalar gain broadcast), this size
            kp, kd = self._gains = np.broadcast_to(self.kp, q.shape), np.broadcast_to(self.kd, q.shape)
        out = np.empty(q.shape)
        kernels.pd(kp, kd, q_d, qd_d, q, qd, _NO_VALUES if tau_ff is None else tau_ff, out)
        return out


class DecentralizedPD(_PD):
    """Single-joint PD ("SJ"): tau = Kp (q_d - q) + Kd (qd_d - qd)."""

    name = "pd"

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd)


class PDFeedforward(_PD):
    """tau = tau_ff + Kp (q_d - q) + Kd (qd_d - qd); tau_ff from the model on the desired trajectory."""

    name = "pd_feedforward"
    requires = frozenset({FEEDFORWARD})

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd, tau_ff)


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

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose: Pose = None, twist=None,
                 desired=None, t=None) -> np.ndarray:
        """pose: the measured platform pose (required: the state estimator's, estimator.py).
        twist: the measured platform twist if known, else J^-1 qd."""
        if twist is not None:
            twist = _vec("measured twist", twist, self.model.dyn.n)
        return super().compute(q_d, qd_d, qdd_d, q, qd, tau_ff, pose, twist, desired, t)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose: Pose = None, twist=None,
                 desired=None, t=None) -> np.ndarray:
        u = self.acceleration(q_d, qd_d, qdd_d, q, qd)
        xd, xdd = task_rates(self.model.kin, pose, qd, u, self._square, twist)
        return self.model.tau(pose, xd, xdd)


# ----------------------------------------------------------------------------- the motion-control family
# Taghirad (seed 004), chapter "Motion Control": section "Motion Control in Task Space" (decentralized PD, feed
# forward, inverse dynamics control, partial linearization IDC, robust and adaptive IDC) and "Motion Control in Joint
# Space" (the same in the actuated coordinates, eq:dynamics_joint_space: M_q qdd + C_q qd + G_q = tau, with the
# matrices taken on the desired trajectory X_d "instead of the true value" as the book recommends); Codourey (seed 002)
# sec. 5: regulators 1-4 and the mass-matrix decoupling of Fig. 6. The chapter's equations carry no printed numbers
# (labels as eq:dynamics_joint_space where it has one): the docstrings cite the section and the equation.
#
# Error conventions: e = X_d (-) X (task.difference: position difference and the rotation vector of R_d R^T, base
# frame; alpha_d - alpha for the planar robot), e' = xdot_d - xdot; the book's epsilon = [X~; X~'] = -[e; e'].


def lyapunov(kp, kd, n: int):
    """(P, B^T P) of the error dynamics eps' = A eps (Taghirad, Robust Inverse Dynamics Control):
    A = [[0, I], [-Kp, -Kd]], B = [0; I], A^T P + P A = -Q with Q = I (scipy's solver). Kp, Kd > 0 (A Hurwitz)."""
    from scipy.linalg import solve_continuous_lyapunov

    kp, kd = np.broadcast_to(kp, (n,)), np.broadcast_to(kd, (n,))
    if (kp <= 0).any() or (kd <= 0).any():
        raise InvalidInputError(f"robust and adaptive IDC need kp, kd > 0 (a Hurwitz error dynamics), got kp {kp}, "
                                f"kd {kd}")
    A = np.block([[np.zeros((n, n)), np.eye(n)], [-np.diag(kp), -np.diag(kd)]])
    P = solve_continuous_lyapunov(A.T, -np.eye(2 * n))
    return P, P[n:].copy()


class Robustifier:
    """The robustifying term of robust IDC (Taghirad, Robust Inverse Dynamics Control):

        delta_a = -rho v / |v|   if |v| > eps_b,   -rho v / eps_b   otherwise,   v = B^T P epsilon,

    rho: the stated bound on the model uncertainty |eta| = |M^-1 (M~ a_r + C~ xdot + G~)| (m/s^2, rad/s^2: the
    acceleration the model misses); eps_b: the boundary layer (its width trades chattering for error). With
    V = eps^T P eps: V' = -|eps|^2 + 2 v^T (eta + delta_a) <= -|eps|^2 + rho eps_b / 2 while |eta| <= rho, so the
    error stays in (or enters and stays in) V <= lambda_max(P) r^2, r^2 = rho eps_b / 2: |eps| <= ``bound()``.
    """

    def __init__(self, kp, kd, n: int, rho: float, boundary_layer: float):
        for what, x in (("rho (uncertainty bound)", rho), ("boundary_layer", boundary_layer)):
            if not (np.isfinite(x) and x > 0):
                raise InvalidInputError(f"robust IDC: {what} must be > 0, got {x}")
        self.rho, self.boundary_layer = float(rho), float(boundary_layer)
        self.P, self.BtP = lyapunov(kp, kd, n)

    def delta(self, e, ed) -> np.ndarray:
        v = -(self.BtP @ np.concatenate([e, ed]))          # B^T P epsilon, epsilon = -[e; e']
        nv = math.sqrt(float(v @ v))
        return -self.rho * v / max(nv, self.boundary_layer)

    def bound(self) -> float:
        """The predicted ultimate bound of |[e; e']| (class docstring), for |eta| <= rho and a start inside it."""
        lam = np.linalg.eigvalsh(self.P)
        return math.sqrt(lam[-1] / lam[0] * self.rho * self.boundary_layer / 2.0)


class _Desired:
    """Mixin: the desired task motion from the references: the controller passes ``desired`` = (pose_d, twist_d),
    the state estimator's forward kinematics of q_d, qd_d; xddot_d = J^-1 (qdd_d - Jdot xdot_d) (task_rates).
    ``known_jacobians``: ((pose, J at it), ...) of the state estimates of this period (Controller.update);
    ``known_acceleration``: (pose_d, xddot_d) when the controller interpolated the desired motion between two streamed
    samples (Controller._interpolated), else None."""

    known_jacobians = ()
    known_acceleration = None             # (pose_d, xddot_d) of this period when the controller has it (interpolated)

    def desired_motion(self, desired, qd_d, qdd_d):
        pose_d, twist_d = desired
        known = self.known_acceleration
        if known is not None and known[0] is pose_d:
            return pose_d, twist_d, known[1]
        return pose_d, twist_d, task_rates(self.kin, pose_d, qd_d, qdd_d, self._square, twist_d,
                                           self.jacobian(pose_d))[1]

    def jacobian(self, pose) -> np.ndarray:
        """J at ``pose``: the state estimator's at the measured or the desired pose (``known_jacobians``, set by
        Controller.update: the FK's last evaluation, the same numbers), else the kinematics'."""
        for known, J in self.known_jacobians:
            if known is pose:
                return J
        return self.kin.jacobian(pose)


class _TaskSpace(_Desired, _PD):
    """Task-space laws: the errors in task coordinates from the measured pose (state estimator) and the desired one;
    gains per task coordinate (``kin.task.names``), a scalar for all."""

    requires = frozenset({MEASURED_POSE, DESIRED_POSE})
    uses_acceleration = True
    joint_space = False                   # the errors are in task coordinates (JointAdaptiveIDC: in the joints)

    def __init__(self, kin, kp, kd):
        super().__init__(kp, kd)
        self.kin = kin
        self.dim = kin.task.dim
        self._square = kin.model.n_actuated == self.dim
        self._spatial = kin.task.kind == "spatial"
        # Kp, Kd per task coordinate (a scalar gain broadcast) for kernels.task_pd; a gain of another size keeps
        # numpy's broadcasting (its error), check_size refuses it
        self._task_gains = tuple(np.broadcast_to(g, (self.dim,)).astype(float) if g.ndim == 0 or g.shape == (self.dim,)
                                 else g for g in (self.kp, self.kd))

    def check_size(self, n: int) -> None:
        super().check_size(self.dim)          # gains per task coordinate, whatever the number of actuators

    def errors(self, pose, twist, pose_d, twist_d):
        """(e, e') = (X_d (-) X, xdot_d - xdot) in task coordinates (spatial: one compiled call, kernels.pose_error)."""
        if self._spatial:
            try:
                out = kernels.pose_error(pose_d.rotation, pose_d.position, pose.rotation, pose.position, twist_d,
                                         twist)
                return out[:6], out[6:]
            except TypeError:           # not float64 arrays: numpy below
                pass
        return self.kin.task.difference(pose_d, pose), twist_d - twist

    def task_pd(self, pose, twist, pose_d, twist_d) -> np.ndarray:
        """Kp e_x + Kd e_x' (spatial: one compiled call, kernels.task_pd; the same numbers as ``errors`` and the
        numpy expression)."""
        if self._spatial:
            try:
                return kernels.task_pd(pose_d.rotation, pose_d.position, pose.rotation, pose.position, twist_d, twist,
                                       *self._task_gains)
            except TypeError:           # not float64 arrays: numpy below
                pass
        e, ed = self.errors(pose, twist, pose_d, twist_d)
        return self.kp * e + self.kd * ed

    def distribute(self, pose, wrench) -> np.ndarray:
        """tau = J^-T F (Taghirad, Controller Topology, the force distribution block; minimum norm if redundant)."""
        return force_distribution(self.jacobian(pose), wrench, self._square)

    def distributed_pd(self, pose, twist, pose_d, twist_d, f_m=_NO_VALUES, kf: float = 0.0,
                       tau_0=_NO_VALUES) -> np.ndarray:
        """J^-T (F_a + kf (F_a - F_m)) + tau_0, F_a = Kp e_x + Kd e_x' (``task_pd``, ``distribute``; F_m empty:
        J^-T F_a; tau_0 empty: none, else the law's model part, e.g. G^(X)): a spatial task as many actuators as
        coordinates in one compiled call (kernels.task_pd_distribute, the same numbers); else, and for a singular J
        (the force distribution's error), the calls one by one."""
        if self._spatial and self._square:
            try:
                return kernels.task_pd_distribute(pose_d.rotation, pose_d.position, pose.rotation, pose.position,
                                                  twist_d, twist, *self._task_gains, self.jacobian(pose), f_m, kf,
                                                  tau_0)
            except (TypeError, np.linalg.LinAlgError):      # not float64 arrays, J singular: below
                pass
        f_a = self.task_pd(pose, twist, pose_d, twist_d)
        tau = self.distribute(pose, f_a if len(f_m) == 0 else f_a + kf * (f_a - f_m))
        return tau if len(tau_0) == 0 else tau + tau_0


class TaskPD(_TaskSpace):
    """Decentralized PD in task space (Taghirad, Motion Control in Task Space, Decentralized PD Control):
    F = Kp e_x + Kd e_x', tau = J^-T F. Kp, Kd in N/m and Nm/rad (N s/m, Nm s/rad) per task coordinate."""

    name = "task_pd"

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return self.distributed_pd(pose, twist, *desired)


class TaskPDFeedforward(TaskPD):
    """Feed forward control in task space (Taghirad, Motion Control in Task Space, Feed Forward Control):
    F = Kp e_x + Kd e_x' + F_ff, F_ff = M^(X_d) xdd_d + C^(X_d, xd_d) xd_d + G^(X_d): the computed force on the
    desired trajectory, streamed as tau_ff = J(X_d)^-T F_ff (feedforward.py); tau = J^-T (Kp e_x + Kd e_x') + tau_ff."""

    name = "task_pd_feedforward"
    requires = frozenset({MEASURED_POSE, DESIRED_POSE, FEEDFORWARD})

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return tau_ff + super().evaluate(q_d, qd_d, qdd_d, q, qd, None, pose, twist, desired)


def _model(model, law: str) -> FeedforwardModel:
    if not isinstance(model, FeedforwardModel) or model.model == "none":
        raise InvalidInputError(f"{law} needs a FeedforwardModel with a dynamic model ('rigid' or 'rigid+friction'), "
                                f"got {getattr(model, 'model', type(model).__name__)!r}")
    return model


#: the twist and acceleration of a platform at rest (G^(X) in control/jourdain_kernels.py); read-only
_REST = np.zeros(6)
_REST.setflags(write=False)


def compiled_model(model: FeedforwardModel, kin):
    """(control.jourdain_kernels, geo, prm) when ``model`` runs on Jourdain's compiled formulation and the task is
    spatial with as many actuators as coordinates: the laws' kernels with the model's part inside (G^(X), the inverse
    dynamics), with the formulation's constants (``Formulation.kernel_model``); else None (the model's call before
    the law's kernel)."""
    if model.path != "jourdain" or kin.task.kind != "spatial" or model.n_actuated != kin.task.dim:
        return None
    from . import jourdain_kernels

    return (jourdain_kernels, *model.formulation.kernel_model())


class TaskPDGravity(TaskPD):
    """Partial linearization IDC in task space (Taghirad, Partial Linearization IDC): F = Kp e_x + Kd e_x' + G^(X),
    gravity compensation at the measured pose only. With xdot_d = 0, V = 1/2 xdot^T M xdot + 1/2 e_x^T Kp e_x has
    V' = -xdot^T Kd xdot (the skew symmetry of Mdot - 2C), so regulation is asymptotically stable."""

    name = "task_pd_gravity"

    def __init__(self, model: FeedforwardModel, kp, kd):
        self.model = _model(model, "partial linearization")
        super().__init__(model.kin, kp, kd)
        self._compiled = compiled_model(model, model.kin)

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                t=None) -> np.ndarray:
        """The checked call (_PD.compute) with the measured pose checked first (kin.validate): G^(X) takes it as
        checked (``evaluate``)."""
        if pose is not None:
            pose = self.kin.validate(pose)[0]
        return super().compute(q_d, qd_d, qdd_d, q, qd, tau_ff, pose, twist, desired, t)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        # J^-T (Kp e_x + Kd e_x') + G^(X) in one call; the pose is the estimator's, or passed kin.validate (compute)
        compiled = self._compiled
        if compiled is not None:            # G^(X) inside the call (Jourdain's model)
            pose_d, twist_d = desired
            tau = np.empty(self.dim)        # written by the kernel (a returned array costs more: jourdain_kernels)
            try:
                compiled[0].pd_distribute(pose_d.rotation, pose_d.position, pose.rotation, pose.position, twist_d,
                                          twist, *self._task_gains, self.jacobian(pose), _NO_VALUES, _NO_VALUES,
                                          _NO_VALUES, 0.0, _REST, _REST, False, *compiled[1:], tau)
                return tau
            except (TypeError, ValueError, np.linalg.LinAlgError):  # not float64 arrays, the model failed, J singular
                pass
        return self.distributed_pd(pose, twist, *desired, tau_0=self.model.gravity(pose, validated=True))

    def period_call(self):
        """evaluate's kernel in the period's call (ControlLaw.period_call): G^(X), no measured wrench."""
        if self._compiled is None:
            return None
        from .jourdain_period import pd_distribute_period

        return pd_distribute_period, 6, (*self._task_gains, 0.0, False, False, *self._compiled[1:])


class TaskIDC(_TaskSpace):
    """Inverse dynamics control in task space (Taghirad, Motion Control in Task Space, Inverse Dynamics Control):
    F = M^(X) a + C^(X, xdot) xdot + G^(X), a = xdd_d + Kd e_x' + Kp e_x, at the measured pose X and twist (state
    estimator); tau = J^-T F = the model's inverse dynamics at (X, xdot, a). With an exact model the error obeys
    e_x'' + Kd e_x' + Kp e_x = 0 (position and planar angle exactly; the rotation vector to first order).
    Kp, Kd in 1/s^2, 1/s."""

    name = "task_idc"

    def __init__(self, model: FeedforwardModel, kp, kd):
        self.model = _model(model, "inverse dynamics control")
        super().__init__(model.kin, kp, kd)

    def acceleration(self, qd_d, qdd_d, pose, twist, desired):
        """(a, e, e'): the outer-loop acceleration a = xdd_d + Kd e' + Kp e and the errors."""
        pose_d, twist_d, xdd_d = self.desired_motion(desired, qd_d, qdd_d)
        e, ed = self.errors(pose, twist, pose_d, twist_d)
        return xdd_d + self.kd * ed + self.kp * e, e, ed

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        a, _, _ = self.acceleration(qd_d, qdd_d, pose, twist, desired)
        return self.model.tau(pose, twist, a)


class TaskRobustIDC(TaskIDC):
    """Robust IDC in task space (Taghirad, Robust Inverse Dynamics Control): a_r = xdd_d + Kd e' + Kp e + delta_a,
    F = M^ a_r + C^ xdot + G^, delta_a of ``Robustifier`` (rho, boundary_layer)."""

    name = "task_robust_idc"

    def __init__(self, model: FeedforwardModel, kp, kd, rho: float, boundary_layer: float):
        super().__init__(model, kp, kd)
        self.robust = Robustifier(self.kp, self.kd, self.dim, rho, boundary_layer)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        a, e, ed = self.acceleration(qd_d, qdd_d, pose, twist, desired)
        return self.model.tau(pose, twist, a + self.robust.delta(e, ed))


class TaskAdaptiveIDC(TaskIDC):
    """Adaptive IDC in task space (Taghirad, Adaptive Inverse Dynamics Control) on the base parameters theta:

        F = Upsilon(X, xdot, a) theta^ = M^ a + C^ xdot + G^,   a = xdd_d + Kd e' + Kp e,   tau = J^-T F,
        theta^' = -Gamma^-1 Phi^T B^T P epsilon,   Phi = M^^-1 Upsilon(X, xdot, xddot),

    Upsilon the base-parameter regressor (J^T tau = Omega p, engine.regressor, reduced to the base parameters of
    dynamics/parameters.py: identical legs share their parameters where they are equal), M^ = M(theta^) from the
    same regressor (its columns at unit accelerations), P of ``lyapunov`` (Q = I). The closed loop is
    eps' = A eps + B Phi theta~ (theta~ = theta^ - theta), and V = eps^T P eps + theta~^T Gamma theta~ gives V' =
    -|eps|^2. xddot is the measured twist's difference over the period just ended, so each period updates with the
    previous period's regressor and error (forward Euler over the period). Gamma^-1 = adaptation_gain diag((|theta_0|
    + f)^2), f = 1e-3 max|theta_0|: every parameter adapts at a similar relative rate. Projection: theta^ stays in
    the box theta_0 +- parameter_bound (|theta_0| + f) (clipped after each step), theta_0 the config's values.

    The law carries its estimate (``estimates``, ``reset``): the state of an adaptive controller.
    """

    name = "task_adaptive_idc"

    def __init__(self, model: FeedforwardModel, kp, kd, adaptation_gain: float, parameter_bound: float,
                 period: float, initial=None, base=None):
        super().__init__(model, kp, kd)
        from ..dynamics.parameters import base_parameters, share_across_legs

        for what, x in (("adaptation_gain", adaptation_gain), ("parameter_bound", parameter_bound),
                        ("period", period)):
            if not (np.isfinite(x) and x > 0):
                raise InvalidInputError(f"adaptive IDC: {what} must be > 0, got {x}")
        dyn = model.dyn
        self.dyn = dyn
        self.friction = model.friction
        if base is None:
            try:
                base = base_parameters(dyn, group=share_across_legs, friction=self.friction)
            except InvalidInputError:          # legs that differ: every parameter on its own
                base = base_parameters(dyn, friction=self.friction)
        self.base = base
        self.names = tuple(base.expressions())
        theta0 = base.base_values
        f = 1e-3 * np.abs(theta0).max()
        scale = np.abs(theta0) + f
        self.gamma_inv = float(adaptation_gain) * scale ** 2
        self.lower, self.upper = theta0 - parameter_bound * scale, theta0 + parameter_bound * scale
        self.period = float(period)
        self._sel = base.grouping[:, base.base]                 # standard (+ friction) -> base columns
        self._n_rigid = len(dyn._body_cols)
        self._cols = dyn._body_cols
        self._data = dyn.pin_model.createData()
        self.P, self.BtP = lyapunov(self.kp, self.kd, self.dim)
        self.initial = theta0.copy() if initial is None else _vec("initial estimate", initial, len(theta0))
        self.reset()

    def reset(self, initial=None) -> None:
        """Back to the initial estimate (or ``initial``); forget the previous period."""
        self._theta = (self.initial if initial is None else _vec("initial estimate", initial, len(self.initial))).copy()
        self._prev = None

    @property
    def estimates(self) -> np.ndarray:
        return self._theta.copy()

    def regressor_terms(self, pose, twist):
        """(Omega_0, D): Upsilon(X, xdot, a) = Omega_0 + sum_i a_i D_i on the base parameters, Omega_0 =
        Upsilon(X, xdot, 0) (velocity products, gravity, friction), D_i the mass matrix's columns, M e_i = D_i theta."""
        m = self.kin.inverse(pose, twist, np.zeros(self.dim), check_limits=False)
        G = self.kin.joint_jacobian(pose)
        pm, d, cols = self.dyn.pin_model, self._data, self._cols
        Y0 = pin.computeJointTorqueRegressor(pm, d, m.q, m.v, m.a)[:, cols]
        sel = self._sel
        if self.friction and len(self.dyn.friction):
            Y0 = np.hstack([Y0, self.dyn.friction.regressor(d, m.q, m.v, self.dyn.sign_eps)])
        omega0 = G.T @ (Y0 @ sel)
        z = np.zeros_like(m.v)
        sel_r = sel[:self._n_rigid]
        Yg = pin.computeJointTorqueRegressor(pm, d, m.q, z, z)[:, cols]
        D = np.stack([G.T @ ((pin.computeJointTorqueRegressor(pm, d, m.q, z, G[:, i])[:, cols] - Yg) @ sel_r)
                      for i in range(self.dim)])
        return omega0, D

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        self.adapt(t, twist)
        a, e, ed = self.acceleration(qd_d, qdd_d, pose, twist, desired)
        return self.command(t, pose, twist, a, e, ed)

    def adapt(self, t, twist) -> None:
        """The update law over the period just ended (its regressor and error, the measured xddot), projected."""
        prev = self._prev
        if prev is not None and t is not None and 0 < t - prev[0] <= 2.5 * self.period:
            dt = t - prev[0]
            _, tw0, omega0, D, M_hat, v, J = prev
            xdd = (twist - tw0) / dt
            phi = np.linalg.solve(M_hat, omega0 + np.tensordot(xdd, D, axes=1))
            if J is not None:                                          # joint space: qdd - a_q = J (xdd - xdd_a)
                phi = J @ phi
            self._theta = np.clip(self._theta - dt * self.gamma_inv * (phi.T @ v), self.lower, self.upper)

    def command(self, t, pose, twist, a, e, ed, J=None) -> np.ndarray:
        """tau = J^-T (Omega_0 theta^ + M(theta^) a); remembers this period for the next update."""
        omega0, D = self.regressor_terms(pose, twist)
        th = self._theta
        M_hat = (D @ th).T                                             # column i = D_i theta
        self._prev = (t, twist.copy(), omega0, D, M_hat, -(self.BtP @ np.concatenate([e, ed])), J)
        return self.distribute(pose, omega0 @ th + M_hat @ a)


class JointAdaptiveIDC(TaskAdaptiveIDC):
    """Adaptive IDC in joint space (Taghirad, Adaptive Inverse Dynamics Control, in the actuated coordinates): the
    task-space law's regressor and update with the errors e_q = q_d - q, e_q' and

        a_q = qdd_d + Kd e_q' + Kp e_q,   F = Upsilon(X, xdot, xdd_a) theta^,   xdd_a = J^-1 (a_q - Jdot xdot),
        theta^' = -Gamma^-1 Phi_q^T B^T P eps_q,   Phi_q = J M^^-1 Upsilon(X, xdot, xddot),

    since qdd - a_q = J (xddot - xdd_a) = Phi_q theta~. Unlike the other joint-space laws its matrices are at the
    measured state (the state estimator's X, xdot): with the desired trajectory's matrices the error equation the
    update law is derived from does not hold. Non-redundant robots (with redundant actuation a_q is not a
    consistent joint acceleration)."""

    name = "joint_adaptive_idc"
    requires = frozenset({MEASURED_POSE})
    joint_space = True

    def __init__(self, model: FeedforwardModel, kp, kd, adaptation_gain: float, parameter_bound: float,
                 period: float, initial=None, base=None):
        if isinstance(model, FeedforwardModel) and model.dyn.redundant:
            raise InvalidInputError("joint_adaptive_idc needs a non-redundant robot (redundant actuation: use "
                                    "task_adaptive_idc)")
        super().__init__(model, kp, kd, adaptation_gain, parameter_bound, period, initial, base)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        self.adapt(t, twist)
        e, ed = q_d - q, qd_d - qd
        xdd_a = task_rates(self.kin, pose, qd, qdd_d + self.kd * ed + self.kp * e, True, twist)[1]
        return self.command(t, pose, twist, xdd_a, e, ed, self.kin.jacobian(pose))


class _JointDesired(_Desired, _PD):
    """Joint-space laws with the dynamic matrices on the desired trajectory (Taghirad, Motion Control in Joint
    Space: "use the desired motion trajectory X_d instead of the true value"): X_d from the references by the state
    estimator's forward kinematics (the controller passes ``desired``)."""

    requires = frozenset({DESIRED_POSE})

    def __init__(self, model: FeedforwardModel, kp, kd, law: str):
        super().__init__(kp, kd)
        self.model = _model(model, law)
        self.kin = model.kin
        self._square = not model.dyn.redundant


class JointPDGravity(_JointDesired):
    """Partial linearization in joint space: tau = Kp e_q + Kd e_q' + G_q(X_d) (Taghirad, Partial Linearization IDC,
    in the actuated coordinates; G_q = J^-T G, eq:dynamics_joint_space). For a constant q_d,
    V = 1/2 qd^T M_q qd + 1/2 e^T Kp e + P(q) - P(q_d) + G_q(q_d)^T e has V' = -qd^T Kd qd (minus the friction's
    dissipation). Kp, Kd as the PD's (N/m ...)."""

    name = "joint_pd_gravity"

    def __init__(self, model: FeedforwardModel, kp, kd):
        super().__init__(model, kp, kd, "partial linearization")

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd) + self.model.gravity(desired[0])


class JointIDC(_JointDesired):
    """Inverse dynamics control in joint space on the desired trajectory (Taghirad, Motion Control in Joint Space,
    Inverse Dynamics Control: tau = M^_q a_q + C^_q qdot + G^_q, a_q = qdd_d + Kd e_q' + Kp e_q, the matrices at X_d):

        tau = tau_ff + M_q(X_d) (Kp e_q + Kd e_q'),   tau_ff = M_q qdd_d + C_q(X_d, xd_d) qd_d + G_q (+ friction)

    tau_ff is the computed force on the desired trajectory streamed by the computed_force node (feedforward.py), so a
    period costs the forward kinematics of q_d and M_q(X_d) only. The one departure from the book: the velocity
    product is taken on the desired velocity (C_q qd_d, not C_q qd); the difference C_q (qd - qd_d) is a
    velocity-error term that a per-period Coriolis matrix would cost. This is also Codourey's scheme (Fig. 6): the
    full-model feedforward with the mass matrix in series with the PD. Kp, Kd in 1/s^2, 1/s."""

    name = "joint_idc"
    requires = frozenset({DESIRED_POSE, FEEDFORWARD})

    def __init__(self, model: FeedforwardModel, kp, kd):
        super().__init__(model, kp, kd, "inverse dynamics control")

    def mass_matrix(self, pose_d) -> np.ndarray:
        return self.model.joint_mass_matrix(pose_d)

    def outer(self, q_d, qd_d, q, qd) -> np.ndarray:
        """The PD's acceleration (a_q - qdd_d)."""
        return self.pd(q_d, qd_d, q, qd)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return tau_ff + self.mass_matrix(desired[0]) @ self.outer(q_d, qd_d, q, qd)


class JointRobustIDC(JointIDC):
    """Robust IDC in joint space: JointIDC with a_r = a_q + delta_a (``Robustifier`` on e_q, e_q'; Taghirad, Robust
    Inverse Dynamics Control, in the actuated coordinates). eta here also holds what the desired-trajectory matrices
    miss (M_q(X) against M_q(X_d), C_q (qd - qd_d)); rho must bound it."""

    name = "joint_robust_idc"

    def __init__(self, model: FeedforwardModel, kp, kd, rho: float, boundary_layer: float):
        super().__init__(model, kp, kd)
        self.robust = Robustifier(self.kp, self.kd, model.n_actuated, rho, boundary_layer)

    def outer(self, q_d, qd_d, q, qd) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd) + self.robust.delta(q_d - q, qd_d - qd)


class MassMatrixDecoupling(JointIDC):
    """Codourey sec. 5.1, Fig. 6 (DELTA only): the full-model feedforward (eq. 58, streamed) plus the PD regulator
    in series with the simplified mass matrix of eq. 50, A = I_bt + m_nt J^T J (dynamics/virtual_work.py), taken at
    the desired pose: tau = tau_ff + A(X_d) (Kp e + Kd e'). Kp, Kd in 1/s^2, 1/s."""

    name = "mass_matrix_decoupling"

    def __init__(self, model: FeedforwardModel, kp, kd):
        super().__init__(model, kp, kd)
        if model.dyn.model.name != "delta":
            raise InvalidInputError(f"mass_matrix_decoupling is Codourey's DELTA scheme (eq. 50), not for "
                                    f"{model.dyn.model.name!r}: use joint_idc")
        from ..dynamics.formulations import formulation

        self.codourey = formulation("virtual_work", model.dyn)

    def mass_matrix(self, pose_d) -> np.ndarray:
        return self.codourey.joint_mass_matrix(pose_d, model="simplified")


class PDAccelerationFeedforward(_PD):
    """Codourey sec. 5.2, regulator 2: PD with an acceleration feedforward, tau = Kp e + Kd e' + diag(m_a) qdd_d,
    m_a the diagonal of M_q at the config's home pose (the inertia each axis sees there; constant, no model per
    period). Kp, Kd as the PD's."""

    name = "pd_acceleration_feedforward"
    uses_acceleration = True

    def __init__(self, model: FeedforwardModel, kp, kd):
        super().__init__(kp, kd)
        model = _model(model, "acceleration feedforward")
        home = model.kin.home_pose()
        self.inertia = np.diag(model.joint_mass_matrix(home)).copy()
        self.inertia.setflags(write=False)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None,
                 t=None) -> np.ndarray:
        return self.pd(q_d, qd_d, q, qd) + self.inertia * qdd_d


LAWS = {law.name: law for law in (DecentralizedPD, PDFeedforward, ComputedTorque, PDAccelerationFeedforward,
                                  JointPDGravity, JointIDC, JointRobustIDC, MassMatrixDecoupling, TaskPD,
                                  TaskPDFeedforward, TaskPDGravity, TaskIDC, TaskRobustIDC, TaskAdaptiveIDC,
                                  JointAdaptiveIDC)}
#: modes whose gains are per task coordinate (the others: per actuated joint)
TASK_MODES = frozenset(name for name, law in LAWS.items() if issubclass(law, _TaskSpace) and not law.joint_space)
#: modes whose gains are accelerations (1/s^2, 1/s: robots.<robot>.gains.computed_torque); the others are forces
ACCELERATION_MODES = frozenset({"computed_torque", "joint_idc", "joint_robust_idc", "mass_matrix_decoupling",
                                "task_idc", "task_robust_idc", "task_adaptive_idc", "joint_adaptive_idc"})


def make_law(mode: str, kp, kd, model: FeedforwardModel | None = None, kin=None, rho: float = 1.0,
             boundary_layer: float = 0.01, adaptation_gain: float = 1.0, parameter_bound: float = 0.5,
             period: float = 5e-4):
    """The law of a controller mode (config/controllers.yaml ``mode``). model: the FeedforwardModel the model-based
    laws use; kin: the kinematics (task_pd, task_pd_feedforward; else the model's); rho, boundary_layer: robust IDC;
    adaptation_gain, parameter_bound, period (the control period, s): adaptive IDC."""
    if mode not in LAWS:
        raise InvalidInputError(f"controller mode must be one of {sorted(LAWS)}, got {mode!r}")
    law = LAWS[mode]
    if law in (DecentralizedPD, PDFeedforward):
        return law(kp, kd)
    if law in (TaskPD, TaskPDFeedforward):
        kin = kin if kin is not None else getattr(model, "kin", None)
        if kin is None:
            raise InvalidInputError(f"{mode} needs the robot's kinematics")
        return law(kin, kp, kd)
    if law in (TaskRobustIDC, JointRobustIDC):
        return law(model, kp, kd, rho, boundary_layer)
    if law in (TaskAdaptiveIDC, JointAdaptiveIDC):
        return law(model, kp, kd, adaptation_gain, parameter_bound, period)
    return law(model, kp, kd)


#: modes whose law takes no dynamic model (the feedforward, if any, is streamed)
MODEL_FREE = frozenset({"pd", "pd_feedforward", "task_pd", "task_pd_feedforward"})


def law_from_settings(s: dict, model: FeedforwardModel | None, kin):
    """The law of resolved controller settings (settings.load_settings: mode, kp, kd, rho, boundary_layer,
    adaptation_gain, parameter_bound, control_rate); ``model`` for the modes not in MODEL_FREE."""
    return make_law(s["mode"], np.array(s["kp"]), np.array(s["kd"]), model, kin, rho=s["rho"],
                    boundary_layer=s["boundary_layer"], adaptation_gain=s["adaptation_gain"],
                    parameter_bound=s["parameter_bound"], period=1.0 / s["control_rate"])
