"""Force and interaction control (Taghirad, seed 004, chapter "Force Control"; issue 24), on the controller core.

The chapter's equations carry no printed numbers; the docstrings cite its sections and figures (Fig. 27 cascade
control, Figs. 28-30 force feedback in the outer loop, Figs. 31-33 in the inner loop, Fig. 34 direct force control,
Fig. 35 the mass-spring-damper impedance eq:mass_spring_damper_impedance, Fig. 36 impedance control). The sections
"Stiffness Control" and "Direct Force Control" of the seed are headings and a figure only: their laws below are the
standard ones those headings name, derived in the docstrings. The seed has no admittance control: ``Admittance`` is
the position-based dual of Fig. 36 (the impedance as a filter on the reference), for drives in position mode.

Conventions (the book's): F_e is the wrench the platform applies to the environment (force at the platform origin
and moment, base frame, as the task coordinates' generalized force, ``task_wrench``); the plant is
M(X) xdd + C xd + G = F - F_e. The sensor measures F_m = F_e (noise, bias and filter aside). The errors are those of
laws.py: e_x = X_d (-) X, e_x' = xd_d - xd.

* ``WrenchMeasurement``: a 6-axis force/torque sensor's sample (JointMeasurement.sensors["wrench"]), in the sensor
  frame: platform axes at the tool point. The key WRENCH ("wrench", laws.py) names it there and in a law's
  ``requires``.
* ``ForceReference``: the desired wrench F_d in task coordinates with the selection of force-controlled directions
  (References.force).
* ``ActuatorForces``: the measured actuator forces as the force measurement in joint space (Fig. 29: F = J^T tau).
* ``WrenchWatch``: the watchdog of the wrench (missing, stale beyond ``wrench_timeout``, not finite, a contact force
  beyond ``contact_force_limit``): the controller's safe behaviour, like a stale joint measurement. Its ``source``
  picks the topology's measurement: ``sensor`` (the F/T sensor, Fig. 28) or ``actuators`` (Fig. 29).
* the laws ``stiffness``, ``direct_force`` (Figs. 28, 29), ``direct_force_joint_space`` (Fig. 30), ``inner_force``
  (Figs. 31, 32), ``inner_force_joint_space`` (Fig. 33), ``impedance``, ``impedance_no_force``, ``admittance``
  (FORCE_LAWS), with
  their gains in config/controllers.yaml ``force_controllers`` (``force_settings``; the controller core
  around one: settings.make_force_controller).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import yaml

from ..errors import InvalidInputError, InvalidModelError, all_finite, check_vector
from ..kinematics.task_space import Pose
from .feedforward import FeedforwardModel
from .kernels import (admittance_filter, force_cascade, force_outer, impedance_terms, pd, sensor_admittance,
                      sensor_wrench)
from .laws import (_NO_VALUES, _REST, DESIRED_POSE, MEASURED_POSE, WRENCH, TaskPDGravity, _gain, _model, _TaskSpace,
                   _vec, compiled_model)

@dataclass(frozen=True)
class WrenchMeasurement:
    """One sample of a 6-axis force/torque sensor: (fx fy fz mx my mz) in N, Nm that the platform applies to the
    environment (F_e), in the sensor frame (platform axes, origin at ``point``, m in the platform frame)."""

    time: float
    wrench: np.ndarray
    point: np.ndarray


@dataclass(frozen=True)
class ActuatorForces:
    """The actuator forces measured at ``time`` (N or Nm, actuated-joint order; JointMeasurement.effort): the force
    measurement in joint space of Taghirad's Fig. 29 (the task-space force controller, F = J^T tau)."""

    time: float
    tau: np.ndarray


def _sensor_arrays(measured: WrenchMeasurement):
    """(wrench, point) of a sensor sample when the kernels take them as they are (float64 arrays of 6 and 3 values:
    the sensor's), else None."""
    w, p = measured.wrench, measured.point
    if type(w) is np.ndarray and type(p) is np.ndarray and w.dtype is _FLOAT64 and p.dtype is _FLOAT64 \
            and w.shape == (6,) and p.shape == (3,):
        return w, p
    return None


_FLOAT64 = np.dtype(np.float64)      # native float64's dtype, one object (``is``: no comparison's conversion)


def task_wrench(task, pose: Pose, measured: WrenchMeasurement) -> np.ndarray:
    """F_m in task coordinates: the sensor's wrench turned to the base axes (f = R f_s, m = R m_s) and moved to the
    platform origin (m_o = m + (R p) x f), then S^T w (TaskSpace.twist_map: the generalized force conjugate to the
    task velocity; engine.py eq. 1)."""
    w = sensor_wrench(np.asarray(pose.rotation, float), np.asarray(measured.wrench, float),
                      np.asarray(measured.point, float))     # one compiled call: the numpy ops cost 3-6 us each
    return w if task.kind == "spatial" else task.twist_map().T @ w      # S = I for spatial tasks


@dataclass(frozen=True)
class ForceReference:
    """The desired interaction wrench F_d (task coordinates, N or Nm, the wrench the platform applies to the
    environment) and the force-controlled directions (``selection``, True per task coordinate; the others follow the
    motion reference)."""

    wrench: np.ndarray
    selection: np.ndarray

    def checked(self, dim: int) -> "ForceReference":
        w = check_vector("desired wrench F_d", self.wrench, dim)
        s = np.asarray(self.selection)
        if s.shape != (dim,) or s.dtype != bool:
            raise InvalidInputError(f"force selection must be {dim} booleans (one per task coordinate), got "
                                    f"{np.asarray(self.selection).tolist()!r}")
        return ForceReference(w, s)


#: where a force law's wrench comes from: the 6-axis sensor (Fig. 28) or the actuator forces (Fig. 29)
WRENCH_SOURCES = ("sensor", "actuators")


class WrenchWatch:
    """The watchdog of the wrench sensor (the stale-state watchdog of the controller core applied to the wrench):
    ``check(t, measured)`` gives ('', WrenchMeasurement) or (what is wrong, None): no wrench in the measurement,
    a sample older than ``timeout`` s, not finite, or a contact force |f| beyond ``contact_force_limit`` N (the
    machine or the part is at risk: the safe behaviour). ``source`` = 'actuators': the measured actuator forces
    instead (ActuatorForces; their age is the joint measurement's, which the controller checks; not finite: the safe
    behaviour; the actuators' force limits bound them)."""

    def __init__(self, timeout: float, contact_force_limit: float, source: str = "sensor"):
        for what, x in (("wrench_timeout", timeout), ("contact_force_limit", contact_force_limit)):
            if not (np.isfinite(x) and x > 0):
                raise InvalidInputError(f"{what} must be > 0, got {x}")
        if source not in WRENCH_SOURCES:
            raise InvalidInputError(f"wrench_source must be one of {WRENCH_SOURCES}, got {source!r}")
        self.timeout, self.contact_force_limit = float(timeout), float(contact_force_limit)
        self.source = source

    def check(self, t: float, measured) -> tuple[str, WrenchMeasurement | ActuatorForces | None]:
        if self.source == "actuators":
            tau = np.asarray(measured.effort, float)
            if not all_finite(tau):
                return "measured actuator forces are not finite", None
            return "", ActuatorForces(measured.time, tau)
        w = measured.sensors.get(WRENCH)
        if not isinstance(w, WrenchMeasurement):
            return "no wrench measurement (force/torque sensor)", None
        age = t - w.time
        if not age <= self.timeout:
            return f"wrench measurement is {age * 1e3:.3g} ms old (wrench_timeout {self.timeout * 1e3:.3g} ms)", None
        x = w.wrench
        if type(x) is np.ndarray and x.shape == (6,) and x.dtype == np.float64:     # the sensor's: six floats at once
            fx, fy, fz, mx, my, mz = x.tolist()
            # finite: their sum is (all_finite's test; a sum beyond 1e308 of finite values takes the path below)
            if math.isfinite(fx + fy + fz + mx + my + mz) and math.hypot(fx, fy, fz) <= self.contact_force_limit:
                return "", w
        if np.shape(w.wrench) != (6,) or not all_finite(np.asarray(w.wrench, float)):
            return "wrench measurement is not 6 finite numbers", None
        f = math.hypot(*w.wrench[:3].tolist()) if type(w.wrench) is np.ndarray else float(np.linalg.norm(w.wrench[:3]))
        if f > self.contact_force_limit:
            return f"contact force {f:.6g} N is beyond contact_force_limit {self.contact_force_limit:.6g} N", None
        return "", w


def _positive(name, value, dim):
    g = _gain(name, value)
    g = np.broadcast_to(g, (dim,)).copy() if g.ndim == 0 or len(g) == dim else None
    if g is None or not (g > 0).all():
        raise InvalidInputError(f"{name} must be > 0, a scalar or {dim} values (one per task coordinate), got "
                                f"{value!r}")
    g.setflags(write=False)
    return g


class Stiffness(TaskPDGravity):
    """Stiffness control (Taghirad, Force Control, Stiffness Control; no force measurement): the task PD with gravity
    compensation at the measured pose, F = Kp e_x + Kd e_x' + G^(X), tau = J^-T F. Kp is the stiffness the platform
    shows the environment.

    Static contact (the closed form test_force_control checks): a plane of stiffness k_e with the outward normal n,
    positions along n s = x . n, the surface at s_e, the desired s_d beyond it (s_d < s_e). At rest the closed loop
    gives Kp e_x = F_e (M xdd = C xd = 0, G^ = G; the plant 0 = F - G - F_e), and the surface F_e = -k_e (s_e - s) n
    (the platform pushes it along -n). Along n: kc (s_d - s) = -k_e (s_e - s), so s = (kc s_d + k_e s_e) / (kc + k_e)
    and the force on the surface is |F_e| = k_e (s_e - s) = kc k_e / (kc + k_e) (s_e - s_d): the controller's
    stiffness and the environment's as two springs in series.
    """

    name = "stiffness"


class _ForceLaw(_TaskSpace):
    """Task-space force laws: the model (gravity, inverse dynamics), the wrench from the sensor (``WrenchWatch``
    checked by the controller), the force limit on F_d (each component clipped to +-force_limit)."""

    requires = frozenset({MEASURED_POSE, DESIRED_POSE, WRENCH})

    def __init__(self, model: FeedforwardModel, kp, kd, force_limit: float = np.inf):
        self.model = _model(model, self.name)
        super().__init__(model.kin, kp, kd)
        if not force_limit > 0:
            raise InvalidInputError(f"{self.name}: force_limit must be > 0 N, got {force_limit}")
        self.force_limit = float(force_limit)
        zeros = np.zeros(self.dim)
        zeros.setflags(write=False)
        self._no_reference = (zeros, zeros)
        self._last_reference = None          # (ForceReference, reference(), selected) of the last call
        self.selected = False                # the last reference() has a force-controlled direction
        self._last_gravity = None            # (pose, G^(pose)) of the last call of gravity()
        self._compiled = compiled_model(model, model.kin)      # the model inside the law's kernel (Jourdain's)

    def compute(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                wrench: WrenchMeasurement | None = None, force: ForceReference | None = None) -> np.ndarray:
        """Checked call (as laws._PD.compute) with the measured wrench and the force reference."""
        n = len(np.atleast_1d(q))
        q_d, qd_d, qdd_d = (_vec(f"desired {w}", v, n) for w, v in
                            (("positions", q_d), ("velocities", qd_d), ("accelerations", qdd_d)))
        q, qd = _vec("measured positions", q, n), _vec("measured velocities", qd, n)
        if pose is None or twist is None or desired is None:
            raise InvalidInputError(f"{self.name} needs the measured and the desired platform pose and twist")
        pose = self.kin.validate(pose)[0]
        if WRENCH in self.requires and not isinstance(wrench, (WrenchMeasurement, ActuatorForces)):
            raise InvalidInputError(f"{self.name} needs the measured wrench (WrenchMeasurement or ActuatorForces)")
        desired = (self.kin.validate(desired[0])[0], _vec("desired twist", desired[1], self.dim))
        return self.evaluate(q_d, qd_d, qdd_d, q, qd, None, pose, _vec("measured twist", twist, self.dim), desired,
                             t, wrench=wrench, force=force)

    def _dt(self, t) -> float:
        """The time since the last period (s) of a law with a state integrated over time (its control ``period``,
        ``_t`` the time of its last period): ``period`` at the first, without a time, or after a gap over 2.5
        periods."""
        return self.period if self._t is None or t is None or not 0 < t - self._t <= 2.5 * self.period else \
            t - self._t

    def gravity(self, pose: Pose) -> np.ndarray:
        """G^(X), the model's gravity forces at ``pose`` (FeedforwardModel.gravity), once per estimate: the laws on
        the actuator forces need it for F_m and for the command of the same period (the same Pose object)."""
        last = self._last_gravity
        if last is not None and last[0] is pose:
            return last[1]
        tau_g = self.model.gravity(pose, validated=True)        # evaluate's pose is checked (compute: here)
        self._last_gravity = (pose, tau_g)
        return tau_g

    def _joint_gains(self, joint_kp, joint_kd) -> None:
        """The joint-space position loop's gains (gains.joint: a scalar, or one value per actuator): ``joint_kp``,
        ``joint_kd`` as given, and one per actuator for ``joint_pd``."""
        self.joint_kp, self.joint_kd = _gain("joint kp", joint_kp), _gain("joint kd", joint_kd)
        n = self.model.n_actuated
        for what, g in (("joint kp", self.joint_kp), ("joint kd", self.joint_kd)):
            if g.ndim == 1 and len(g) != n:
                raise InvalidInputError(f"{self.name}: {what} has {len(g)} values for {n} actuators")
        self._joint_pd_gains = tuple(np.broadcast_to(g, (n,)).astype(float) for g in (self.joint_kp, self.joint_kd))

    def joint_pd(self, q_c, qd_c, q, qd, tau_0=_NO_VALUES) -> np.ndarray:
        """Kp_q (q_c - q) + Kd_q (qd_c - qd) + tau_0 (tau_0 empty: none): the joint position loop of the laws
        with their motion loop in the joints (Figs. 30, 33, admittance), one compiled call (kernels.pd: the numpy
        expression's numbers)."""
        out = np.empty(self.model.n_actuated)
        pd(*self._joint_pd_gains, q_c, qd_c, q, qd, tau_0, out)
        return out

    def measured_wrench(self, pose, wrench) -> np.ndarray:
        """F_m in task coordinates: the sensor's (``task_wrench``), or from the actuator forces (Fig. 29)
        F_m = J^T (tau - tau_g(X)), tau_g the model's gravity forces: at rest M xdd = C xd = 0 and the plant
        J^T tau = G + F_e gives F_e exactly (with an exact gravity model); in motion it also holds M xdd + C xd and
        the joint friction (a static estimate: DirectForce only)."""
        if isinstance(wrench, ActuatorForces):
            return self.jacobian(pose).T @ (wrench.tau - self.gravity(pose))
        arrays = _sensor_arrays(wrench) if self._spatial else None
        if arrays is not None:  # task_wrench's kernel on the estimator's R and the sensor's arrays as they are
            return sensor_wrench(pose.rotation, *arrays)
        return task_wrench(self.kin.task, pose, wrench)     # it converts them

    def fused(self, kernel, size: int, *args):
        """The ``size`` values ``kernel(*args, *model, out)`` writes: a law's one compiled call on Jourdain's model
        (control/jourdain_kernels.py, ``self._compiled``; into an array allocated here: a returned one costs more);
        None where the model's kernel failed (pose out of reach, forward singularity) or J is singular (LinAlgError, a
        ValueError): the caller's Python path then meets the case and names it."""
        out = np.empty(size)
        try:
            kernel(*args, *self._compiled[1:], out)
        except ValueError:
            return None
        return out

    def kernel_wrench(self, wrench):
        """(wrench, point, tau_m) for F_m inside a kernel of control/jourdain_kernels.py (``_measured_wrench``): the
        sensor's arrays or the actuator forces as they are (float64, their sizes), the others empty; None: arrays
        of other types or sizes (``measured_wrench`` converts them)."""
        if type(wrench) is ActuatorForces:
            tau = wrench.tau
            if type(tau) is np.ndarray and tau.dtype == np.float64 and tau.shape == (self.dim,):
                return _NO_VALUES, _NO_VALUES, tau
            return None
        arrays = _sensor_arrays(wrench)
        return None if arrays is None else (*arrays, _NO_VALUES)

    def reference(self, force: ForceReference | None):
        """(F_d clipped to +-force_limit, selection as floats; read-only); no reference: no force-controlled
        direction. The set-point's, kept while the same ForceReference comes again (the loop's, every period).
        ``selected``: some direction of it is force-controlled."""
        if force is None:
            self.selected = False
            return self._no_reference
        last = self._last_reference
        if last is not None and last[0] is force:
            self.selected = last[2]
            return last[1]
        checked = force.checked(self.dim)
        out = (np.clip(checked.wrench, -self.force_limit, self.force_limit), checked.selection.astype(float))
        for a in out:
            a.setflags(write=False)
        self.selected = bool(checked.selection.any())
        self._last_reference = (force, out, self.selected)
        return out


class DirectForce(_ForceLaw):
    """Direct force control (Taghirad, Force Control, Fig. 34; the cascade of Fig. 28: force feedback in the outer
    loop, motion in the inner loop, F and X measured in the task space):

        e_F = S (F_d - F_m)                                   force error in the force-controlled directions S
        dX = Kf e_F + Ki int e_F dt                            the force controller: PI, m/N and m/(N s)
        X_c = X_d (+) dX,   xd_c = (I - S) xd_d               "the generated desired motion trajectory for the inner
                                                               loop" (Cascade Control, Force Feedback in Outer Loop)
        F = Kp (X_c (-) X) + Kd (xd_c - xd) + G^(X),   tau = J^-T F    the motion controller + force distribution

    In the directions not selected the law is the stiffness law on X_d. At rest in contact the integral stops only
    where e_F = 0: the force reaches F_d whatever the environment's stiffness (k_e) and the model's gravity error.
    Fig. 29 (``wrench_source: actuators``): F_m from the measured actuator forces instead of an F/T sensor
    (_ForceLaw.measured_wrench, J^T (tau - tau_g)); the force then reaches F_d as far as the gravity model is exact
    (its error enters F_m directly). F_m is then the previous period's own command less gravity, so the
    proportional path is an algebraic loop, F(k) = -Kp kf F(k-1) + ...: stable only for Kp kf < 1 per direction.
    The force loop is a first-order one with the time constant 1 / (Ki k_s), k_s = kc k_e / (kc + k_e) the series
    stiffness (Stiffness): the book's rule, the inner loop at least 5 times faster, bounds Ki for the stiffest
    environment. Anti-windup: |Ki int e_F| <= max_offset per direction (m or rad, the integral stops growing).

    Contact loss and the safe retreat: without a surface the force loop drives the platform on towards where it was
    (up to max_offset beyond X_d). ``contact`` tells the state: 'free' until the measured force in the
    force-controlled directions, |S F_m|, stayed at ``contact_force`` N or above for ``contact_loss_time`` s (a
    transient at the start is no contact); 'contact' then; 'retreat' once it stayed below
    contact_force for ``contact_loss_time`` s: the law then holds the pose at which the force first dropped, backed
    off by ``retreat_distance`` (m) against the pushing direction (-sign(F_d) in the selected coordinates), with the
    same PD + gravity, the integral cleared, until ``reset()`` (a new run). Contact that comes back within
    contact_loss_time (chatter) is no loss, nor is a release: while |S F_d| < contact_force the state is 'free'."""

    name = "direct_force"
    cascade = True          # the inner loop is the task PD (``inner``): one compiled call with the outer (``_outer``)

    def __init__(self, model: FeedforwardModel, kp, kd, kf, ki, max_offset: float, period: float,
                 force_limit: float = np.inf, contact_force: float = 5.0, contact_loss_time: float = 0.01,
                 retreat_distance: float = 0.005):
        super().__init__(model, kp, kd, force_limit)
        self.kf, self.ki = _gain("kf", kf), _gain("ki", ki)
        self._kf, self._ki = (np.broadcast_to(g, (self.dim,)).astype(float) for g in (self.kf, self.ki))
        for what, x in (("max_offset", max_offset), ("period", period), ("contact_force", contact_force),
                        ("contact_loss_time", contact_loss_time), ("retreat_distance", retreat_distance)):
            if not (np.isfinite(x) and x > 0):
                raise InvalidInputError(f"direct_force: {what} must be > 0, got {x}")
        self.max_offset, self.period = float(max_offset), float(period)
        self.contact_force, self.contact_loss_time = float(contact_force), float(contact_loss_time)
        self.retreat_distance = float(retreat_distance)
        self.reset()

    def reset(self) -> None:
        self._offset = np.zeros(self.dim)           # Ki int e_F dt
        self._t = None
        self.contact = "free"
        self._pressed = None                        # t since |S F_m| >= contact_force, not yet in contact
        self._dropped = None                        # (t, pose) when |S F_m| fell below contact_force in contact
        self._retreat = None                        # the pose held in retreat

    def _watch_contact(self, t, pose, pressed: float, asked: float, f_d, s) -> None:
        """The contact state machine (class docstring) on |S F_m| (``pressed``) and |S F_d| (``asked``)."""
        pressing = pressed >= self.contact_force
        if asked < self.contact_force:      # no push asked for (a release): free
            self.contact, self._pressed, self._dropped = "free", None, None
        elif self.contact == "free":
            if not pressing:
                self._pressed = None
            elif self._pressed is None:
                self._pressed = t
            elif t is not None and self._pressed is not None and \
                    t - self._pressed >= self.contact_loss_time - 1e-12:
                self.contact, self._dropped = "contact", None
        elif self.contact == "contact":
            if pressing:
                self._dropped = None
            elif self._dropped is None:
                self._dropped = (t, pose)
            elif t is not None and self._dropped[0] is not None and \
                    t - self._dropped[0] >= self.contact_loss_time - 1e-12:
                back = -s * np.sign(f_d)
                n = float(np.linalg.norm(back))
                back = back / n * self.retreat_distance if n > 0 else back
                self._retreat = self.kin.task.retract(self._dropped[1], back)
                self.contact, self._offset = "retreat", np.zeros(self.dim)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        f_d, s = self.reference(force)
        if self.contact == "retreat":
            return self.inner(q, qd, pose, twist, self._retreat, np.zeros(self.dim))
        pose_d, twist_d = desired
        outer, f_m = self._outer(f_d, wrench, s, self._dt(t), pose_d, twist_d, pose, twist, t)
        if not self._advance(t, pose, outer, f_d, s,
                             self.pressed(t, pose, twist, wrench, f_m, s, outer) if self.selected else 0.0):
            return self.inner(q, qd, pose, twist, self._retreat, np.zeros(self.dim))
        if len(outer) == 32:            # the inner loop's J^-T (Kp e_x + Kd e_x') + G^(X) came with it
            return outer[26:]
        return self.inner(q, qd, pose, twist, Pose(outer[6:9], outer[9:18].reshape(3, 3)), outer[18:24])

    def _advance(self, t, pose, outer, f_d, s, pressed: float) -> bool:
        """The law's state after the outer loop of the period at t (``outer``: _outer's): the contact state machine
        on |S F_c| (``pressed``) and |S F_d| while a direction is force-controlled, then the integral and the time.
        False: the contact was lost in this period (the command is the retreat's, the integral cleared)."""
        if self.selected:
            self._watch_contact(t, pose, pressed, outer[25], f_d, s)
            if self.contact == "retreat":
                return False
        self._t = t
        self._offset = outer[:6]
        return True

    def period_call(self):
        """The cascade's kernel in the period's call (ControlLaw.period_call; the inner loop in the task: not
        DirectForceJointSpace's)."""
        if not self.cascade or self._compiled is None:
            return None
        from .jourdain_period import cascade_period

        return cascade_period, 32, (self._ki, self._kf, self.max_offset, *self._task_gains, *self._compiled[1:])

    def period_arguments(self, t, force, w, point, tau_m):
        f_d, s = self.reference(force)
        if self.contact == "retreat":
            return None
        return f_d, w, point, tau_m, s, self._offset, self._dt(t)

    def period_done(self, t, pose, twist, out, force) -> bool:
        return self._advance(t, pose, out, *self.reference(force), out[24])

    def _outer(self, f_d, wrench, s, dt, pose_d, twist_d, pose, twist, t=None):
        """The outer force loop of one period (kernels.force_outer, spatial tasks; numpy otherwise) on F_m
        (``measured_wrench``): e_F = S (F_d - F_m), the integral (anti-windup), X_c = X_d (+) (Kf e_F + Ki int e_F dt),
        xd_c = (I - S) xd_d. Returns ([offset, p_c, R_c (row-major), xd_c, |S F_m|, |S F_d|] as kernels.force_outer,
        F_m); with the inner task loop (``cascade``) of a spatial task with as many actuators, its
        J^-T (Kp e_x + Kd e_x') + G^(X) on X_c, xd_c after them (kernels.force_cascade: ``inner``, the same
        numbers); on Jourdain's model F_m and G^(X) inside that call too (jourdain_kernels.cascade; F_m None)."""
        compiled = self._compiled
        if self.cascade and compiled is not None:
            arrays = self.kernel_wrench(wrench)
            out = None if arrays is None else self.fused(
                compiled[0].cascade, 32, f_d, *arrays, s, self._offset, dt, self._ki, self._kf, self.max_offset,
                pose_d.rotation, pose_d.position, twist_d, pose.rotation, pose.position, twist, *self._task_gains,
                self.jacobian(pose))
            if out is not None:
                return out, None
        f_m = self.measured_wrench(pose, wrench)
        return self._outer_on(f_d, f_m, s, dt, pose_d, twist_d, pose, twist), f_m

    def _outer_on(self, f_d, f_m, s, dt, pose_d, twist_d, pose, twist):
        """``_outer`` on F_m."""
        if self._spatial:
            try:
                if self.cascade and self._square:
                    return force_cascade(f_d, f_m, s, self._offset, dt, self._ki, self._kf, self.max_offset,
                                         pose_d.rotation, pose_d.position, twist_d, pose.rotation, pose.position,
                                         twist, *self._task_gains, self.jacobian(pose), self.gravity(pose))
                return force_outer(f_d, f_m, s, self._offset, dt, self._ki, self._kf, self.max_offset,
                                   pose_d.rotation, pose_d.position, twist_d)
            except (TypeError, np.linalg.LinAlgError):     # not float64 arrays, J singular: below
                pass
        e_f = s * (f_d - f_m)
        offset = np.clip(s * (self._offset + dt * self.ki * e_f), -self.max_offset, self.max_offset)
        pose_c = self.kin.task.retract(pose_d, self.kf * e_f + offset)
        return np.concatenate([offset, pose_c.position, np.ravel(pose_c.rotation), (1.0 - s) * twist_d,
                               [np.linalg.norm(s * f_m), np.linalg.norm(s * f_d)]])

    def pressed(self, t, pose, twist, wrench, f_m, s, outer) -> float:
        """|S F_c|, F_c the wrench the contact state machine watches: F_m (``outer``'s |S F_m|)."""
        return outer[24]

    def inner(self, q, qd, pose, twist, pose_c, twist_c) -> np.ndarray:
        """The inner motion loop on (X_c, xd_c): task PD + gravity, tau = J^-T (Kp e_x + Kd e_x') + G^ (Fig. 28)."""
        return self.distributed_pd(pose, twist, pose_c, twist_c, tau_0=self.gravity(pose))


class DirectForceJointSpace(DirectForce):
    """Direct force control with force and motion measured in the joint space (Taghirad, Force Control, Fig. 30:
    "the inner loop is based on measured motion variable in the joint space, and the outer loop uses the measured
    actuator force vector ... the force controller is designed in the task space, and the Jacobian transpose mapping
    is used to project the measured actuator force vector into its corresponding wrench in the task space ... the
    desired motion variable X_d is mapped into joint space using inverse kinematic solution"):

        F_m = J^T (tau - tau_g(X))                              the actuator forces as the wrench (Fig. 29's)
        X_c = X_d (+) (Kf e_F + Ki int e_F dt),  xd_c = (I - S) xd_d      the task-space force controller (DirectForce)
        q_c = IK(X_c),  qd_c = J(X_c) xd_c                      into the joint space
        tau = Kp_q (q_c - q) + Kd_q (qd_c - qd) + tau_g(X)      the joint-space position controller (gains.joint)

    At rest in contact the integral stops where e_F = 0 (as DirectForce). F_m is the previous period's own command
    less gravity, so the proportional path is an algebraic loop (DirectForce): its gain is Kf times the joint
    loop's stiffness seen in the task, J^T Kp_q J; config/controllers.yaml gives it Kf = 0 (integral only).

    Contact loss and the retreat (DirectForce's state machine) on the actuator forces: they also carry the robot's
    own motion forces, M xdd + C xd (the static F_m took the start of a motion for a contact, then for its loss), so
    the state machine watches the contact wrench of the inverse dynamics instead,

        F_c = J^T (tau_m - tau_id(X, xd, xdd^)),   xdd^ = (xd(k) - xd(k-1)) / h

    (the plant J^T tau = M xdd + C xd + G + F_e): tau_m is the force applied over the last period and xdd^ that
    period's mean acceleration, so F_c is the contact wrench but for the model's errors (the joints' friction when
    it is not in the model) and M times the acceleration's change over a period. The first period (no previous
    twist) or a gap over 2.5 periods: F_m. With the F/T sensor (wrench_source: sensor) F_c = F_m."""

    name = "direct_force_joint_space"
    cascade = False         # the inner loop is in the joints (``inner``)

    def __init__(self, model: FeedforwardModel, kp, kd, kf, ki, max_offset: float, period: float, joint_kp, joint_kd,
                 force_limit: float = np.inf, contact_force: float = 5.0, contact_loss_time: float = 0.01,
                 retreat_distance: float = 0.005):
        super().__init__(model, kp, kd, kf, ki, max_offset, period, force_limit, contact_force, contact_loss_time,
                         retreat_distance)
        self._joint_gains(joint_kp, joint_kd)

    def reset(self) -> None:
        super().reset()
        self._last_twist = None                     # (t, xd) of the previous period: xdd^ for F_c

    def _outer(self, f_d, wrench, s, dt, pose_d, twist_d, pose, twist, t=None):
        """DirectForce's outer loop; on Jourdain's model with the actuator forces G^(X), F_m and |S F_c| in the same
        call (jourdain_kernels.outer_joint: [force_outer's 26, G^, |S F_c|], F_m None; G^ kept for ``inner``)."""
        compiled = self._compiled
        arrays = None if compiled is None else self.kernel_wrench(wrench)
        if arrays is None or len(arrays[2]) == 0:       # the sensor's wrench, or arrays the kernel does not take
            return super()._outer(f_d, wrench, s, dt, pose_d, twist_d, pose, twist, t)
        last = self._last_twist
        h = 0.0                             # xdd^ over the last period (``contact_wrench``), while force-controlled
        if self.selected:
            self._last_twist = (t, twist)
            if last is not None and t is not None and 0 < t - last[0] <= 2.5 * self.period:
                h = t - last[0]
        out = self.fused(compiled[0].outer_joint, 33, f_d, arrays[2], s, self._offset, dt, self._ki, self._kf,
                         self.max_offset, pose_d.rotation, pose_d.position, twist_d, pose.rotation, pose.position,
                         self.jacobian(pose), twist, last[1] if h > 0 else twist, h, self.model.friction)
        if out is None:                     # the model failed: the calls one by one
            self._last_twist = last
            return super()._outer(f_d, wrench, s, dt, pose_d, twist_d, pose, twist, t)
        self._last_gravity = (pose, out[26:32])
        return out, None

    def period_call(self):
        """The outer loop on the actuator forces, X_c into the joints and the joint PD in the period's call
        (ControlLaw.period_call; jourdain_period.joint_space_cascade_period)."""
        if self._compiled is None:
            return None
        from .jourdain_period import joint_space_cascade_period

        return joint_space_cascade_period, 51, (self._ki, self._kf, self.max_offset, self.model.friction,
                                                *self._joint_pd_gains, *self.kin.actuated_arguments(),
                                                *self._compiled[1:])

    def period_arguments(self, t, force, w, point, tau_m):
        """``_outer``'s arguments of outer_joint (xdd^ over the last period while force-controlled); the F/T sensor's
        wrench, or in retreat: None."""
        f_d, s = self.reference(force)
        if self.contact == "retreat" or not len(tau_m):
            return None
        last, h = self._last_twist, 0.0
        if self.selected and last is not None and t is not None and 0 < t - last[0] <= 2.5 * self.period:
            h = t - last[0]
        return f_d, tau_m, s, self._offset, last[1] if h > 0 else _NO_VALUES, self._dt(t), h

    def period_done(self, t, pose, twist, out, force) -> bool:
        if self.selected:
            self._last_twist = (t, twist)
        return self._advance(t, pose, out, *self.reference(force), out[32])

    def pressed(self, t, pose, twist, wrench, f_m, s, outer) -> float:
        """|S F_c| (``contact_wrench``; outer_joint's, F_m None)."""
        if f_m is None:
            return outer[32]
        f_c = self.contact_wrench(t, pose, twist, wrench, f_m)
        return outer[24] if f_c is f_m else float(np.linalg.norm(s * f_c))

    def contact_wrench(self, t, pose, twist, wrench, f_m) -> np.ndarray:
        """F_c = J^T (tau_m - tau_id(X, xd, xdd^)) (class docstring)."""
        last, self._last_twist = self._last_twist, (t, twist)
        if not isinstance(wrench, ActuatorForces) or last is None or t is None or \
                not 0 < t - last[0] <= 2.5 * self.period:
            return f_m
        xdd = (twist - last[1]) / (t - last[0])
        return self.jacobian(pose).T @ (wrench.tau - self.model.tau(pose, twist, xdd))

    def inner(self, q, qd, pose, twist, pose_c, twist_c) -> np.ndarray:
        q_c, J_c = self.kin.actuated_and_jacobian(pose_c)
        return self.joint_pd(q_c, J_c @ twist_c, q, qd, self.gravity(pose))


class InnerForce(_ForceLaw):
    """Force feedback in the inner loop, motion feedback in the outer loop (Taghirad, Force Control, Cascade Control,
    "Force Feedback in Inner Loop", Fig. 31: F and X measured in the task space; Fig. 32, ``wrench_source:
    actuators``: F = J^T tau from the measured actuator forces). "The outer loop generates a desired force trajectory
    for the inner loop": the motion controller's output is the wrench F_a the inner force loop tracks,

        F_a = Kp e_x + Kd e_x'                                the motion controller (outer, primary loop)
        e_F = F_a - F_m                                       the inner loop's force error
        F = F_a + Kf e_F + G^(X),   tau = J^-T F              the force controller (P, Kf dimensionless) + force
                                                              distribution

    (Kf = 0: stiffness control; the force reference F_d is not used: "force tracking is not the primary objective").
    Closed loop with F_m = F_e and an exact G^ (plant M xdd + C xd + G = F - F_e, xdd_d = 0):
    M xdd + C xd = (1 + Kf)(F_a - F_e), i.e.

        M / (1 + Kf) e_x'' + Kd e_x' + Kp e_x = F_e  (C xd aside)

    the force-motion relation the book says this structure controls: the stiffness Kp and damping Kd of the outer
    loop, the robot's inertia seen by the environment divided by 1 + Kf. At rest F_e = F_a = Kp e_x (the stiffness
    law's series-spring closed form, Stiffness), and a gravity-model error dG enters F_e divided by 1 + Kf. Free
    space (F_e = 0): the motion loop with the gains (1 + Kf) Kp, (1 + Kf) Kd.

    Fig. 32 in the simulated robot: the measured actuator forces are the applied ones, F_m = J^T (tau - tau_g) is the
    previous period's F less gravity, and the inner loop F(k) = (1 + Kf) F_a - Kf F(k-1) is a first-order filter with
    the pole -Kf: stable only for Kf < 1 (force_law refuses more); its steady state is F_a, as Fig. 31's. Its gain
    (1 + Kf) / (1 + Kf z^-1) is 1 at rest and (1 + Kf) / (1 - Kf) at the Nyquist frequency (z = -1): it multiplies
    the outer loop's sampled gains there (Kf = 0.5: 3x, and Stewart's joint PD of Fig. 33 grew into saturation;
    config/controllers.yaml has 0.2: 1.5x)."""

    name = "inner_force"

    def __init__(self, model: FeedforwardModel, kp, kd, kf, force_limit: float = np.inf):
        super().__init__(model, kp, kd, force_limit)
        if not (np.isfinite(kf) and kf >= 0):
            raise InvalidInputError(f"{self.name}: inner_force_gain must be >= 0, got {kf}")
        self.kf = float(kf)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        compiled = self._compiled
        arrays = None if compiled is None else self.kernel_wrench(wrench)
        if arrays is not None:          # F_m and G^(X) inside the call (Jourdain's model)
            pose_d, twist_d = desired
            tau = self.fused(compiled[0].pd_distribute, self.dim, pose_d.rotation, pose_d.position, pose.rotation,
                             pose.position, twist_d, twist, *self._task_gains, self.jacobian(pose), *arrays, self.kf,
                             _REST, _REST, False)
            if tau is not None:
                return tau
        f_m = self.measured_wrench(pose, wrench)
        return self.distributed_pd(pose, twist, *desired, f_m, self.kf, self.gravity(pose))

    def period_call(self):
        """evaluate's kernel in the period's call (ControlLaw.period_call)."""
        if self._compiled is None:
            return None
        from .jourdain_period import pd_distribute_period

        return pd_distribute_period, 6, (*self._task_gains, self.kf, False, False, *self._compiled[1:])


class InnerForceJointSpace(InnerForce):
    """Force feedback in the inner loop with force and motion measured in the joint space (Taghirad, Force Control,
    Fig. 33: "the inner loop is based on the measured actuator force vector tau, and the outer loop is based on the
    measured actuated joint position vector q ... the desired motion in the task space is mapped into the joint
    space using inverse kinematic solution, and both the position and force feedback controllers are designed in the
    joint space. Thus, independent controllers for each joint"):

        q_d = IK(X_d), qd_d                                   the references (the IK node's)
        tau_a = Kp_q (q_d - q) + Kd_q (qd_d - qd)             the joint position controller (outer; gains.joint)
        e_tau = tau_a - (tau_m - tau_g(X))                    the joint force error, tau_m the measured actuator forces
        tau = tau_a + Kf e_tau + tau_g(X)                     the joint force controller (inner, P per joint)

    (with an F/T sensor instead, tau_m - tau_g = J^-T F_m). At rest the inner loop gives tau - tau_g = tau_a, and the
    contact wrench J^T tau_a: the joint springs seen in the task, J^T Kp_q J, in series with the environment. As
    Fig. 32 in the simulated robot, tau_m is the previous period's command: the loop tau(k) - tau_g =
    (1 + Kf) tau_a - Kf (tau(k-1) - tau_g) is stable for Kf < 1."""

    name = "inner_force_joint_space"

    def __init__(self, model: FeedforwardModel, joint_kp, joint_kd, kf, force_limit: float = np.inf):
        super().__init__(model, 1.0, 1.0, kf, force_limit)      # no task-space gains: the loops are in the joints
        self._joint_gains(joint_kp, joint_kd)

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        compiled = self._compiled
        if compiled is not None and isinstance(wrench, ActuatorForces):
            tau = self.kernel_wrench(wrench)
            if tau is not None:         # the joint PD, G^(X) and the inner loop in one call (Jourdain's model)
                out = self.fused(compiled[0].joint_pd, self.dim, *self._joint_pd_gains, q_d, qd_d, q, qd, tau[2],
                                 self.kf, pose.position, pose.rotation)
                if out is not None:
                    return out
        tau_a = self.joint_pd(q_d, qd_d, q, qd)
        tau_g = self.gravity(pose)
        tau_m = wrench.tau - tau_g if isinstance(wrench, ActuatorForces) else \
            self.distribute(pose, task_wrench(self.kin.task, pose, wrench))
        return tau_a + self.kf * (tau_a - tau_m) + tau_g

    def period_call(self):
        """evaluate's kernel on the actuator forces in the period's call (ControlLaw.period_call)."""
        if self._compiled is None:
            return None
        from .jourdain_period import joint_pd_period

        return joint_pd_period, 6, (*self._joint_pd_gains, self.kf, *self._compiled[1:])

    def period_arguments(self, t, force, w, point, tau_m):
        return (tau_m,) if len(tau_m) else None          # the F/T sensor's wrench: evaluate


class _Impedance(_ForceLaw):
    """The desired impedance Z_d(s) = M_d s + D_d + K_d / s (Taghirad, Impedance Control Concept; the book's C_d is
    D_d here), diagonal, one value per task coordinate."""

    def __init__(self, model: FeedforwardModel, m_d, d_d, k_d, force_limit: float = np.inf):
        dim = model.kin.task.dim
        super().__init__(model, _positive("k_d", k_d, dim), _positive("d_d", d_d, dim), force_limit)
        self.m_d = _positive("m_d", m_d, dim)
        self.k_d, self.d_d = self.kp, self.kd


class Impedance(_Impedance):
    """Impedance control with force measurement (Taghirad, Impedance Control Structure, Fig. 36: motion feedback in
    the outer loop, force feedback in the inner loop):

        F = M^ M_d^-1 e_F + F_fl,   e_F = F_a - F_m,   F_a = M_d xdd_d + D_d e_x' + K_d e_x,
        F_fl = C^(X, xd) xd + G^(X) + F_m,

    i.e. tau = J^-T (M^ a + C^ xd + G^) + J^-T F_m with a = xdd_d + M_d^-1 (D_d e_x' + K_d e_x - F_m): the model's
    inverse dynamics at the measured state (FeedforwardModel.tau) plus the measured wrench distributed. With an exact
    model and F_m = F_e the closed loop is the designed impedance

        M_d e_x'' + D_d e_x' + K_d e_x = F_e

    (positions exactly; the rotation vector to first order, as TaskIDC)."""

    name = "impedance"

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        pose_d, twist_d, xdd_d = self.desired_motion(desired, qd_d, qdd_d)
        compiled = self._compiled
        arrays = None if compiled is None or not isinstance(wrench, WrenchMeasurement) else _sensor_arrays(wrench)
        if arrays is not None:          # F_m, a, J^-T F_m and the inverse dynamics in one call (Jourdain's model)
            tau = self.fused(compiled[0].impedance, 6, pose_d.rotation, pose_d.position, pose.rotation, pose.position,
                             twist_d, twist, *self._task_gains, xdd_d, *arrays, self.m_d, self.jacobian(pose),
                             self.model.friction)
            if tau is not None:
                return tau
        f_m = self.measured_wrench(pose, wrench)
        if self._spatial and self._square:      # a and J^-T F_m in one compiled call (kernels.impedance_terms)
            # the arrays are float64: the estimator's or compute's checked ones, the law's gains, F_m of
            # measured_wrench, xdd_d of the controller's interpolation or task_rates
            try:
                terms = impedance_terms(pose_d.rotation, pose_d.position, pose.rotation, pose.position, twist_d,
                                        twist, *self._task_gains, xdd_d, f_m, self.m_d, self.jacobian(pose))
                return self.model.tau(pose, twist, terms[:6]) + terms[6:]
            except np.linalg.LinAlgError:       # J singular: below
                pass
        # D_d e_x' + K_d e_x as task_pd's K_d e_x + D_d e_x' (kp = K_d, kd = D_d; the sum of two numbers either way)
        a = xdd_d + (self.task_pd(pose, twist, pose_d, twist_d) - f_m) / self.m_d
        return self.model.tau(pose, twist, a) + self.distribute(pose, f_m)

    def period_call(self):
        """evaluate's kernel on the sensor's wrench in the period's call (ControlLaw.period_call)."""
        if self._compiled is None:
            return None
        from .jourdain_period import impedance_period

        return impedance_period, 6, (*self._task_gains, self.m_d, self.model.friction, *self._compiled[1:])

    def period_arguments(self, t, force, w, point, tau_m):
        return (w, point) if len(w) else None            # the actuator forces: evaluate


class ImpedanceNoForce(_Impedance):
    """Impedance control without force measurement (Taghirad, Impedance Control: "in stiffness control ... no force
    measurement is required"; Fig. 36 without the inner force loop): F = M^ xdd_d + C^ xd + G^ + D_d e_x' + K_d e_x,
    tau = FeedforwardModel.tau(X, xd, xdd_d) + J^-T (D_d e_x' + K_d e_x). With an exact model the closed loop is

        M(X) e_x'' + D_d e_x' + K_d e_x = F_e:

    the damping and stiffness are assigned, the inertia stays the robot's own M(X) (m_d of the settings is not used:
    reshaping the inertia takes F_m). A stiffness law with inverse-dynamics feedforward."""

    name = "impedance_no_force"
    requires = frozenset({MEASURED_POSE, DESIRED_POSE})

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        pose_d, twist_d, xdd_d = self.desired_motion(desired, qd_d, qdd_d)
        # D_d e_x' + K_d e_x: task_pd with kp = K_d, kd = D_d
        compiled = self._compiled
        if compiled is not None:        # the inverse dynamics inside the call (Jourdain's model)
            tau = self.fused(compiled[0].pd_distribute, self.dim, pose_d.rotation, pose_d.position, pose.rotation,
                             pose.position, twist_d, twist, *self._task_gains, self.jacobian(pose), _NO_VALUES,
                             _NO_VALUES, _NO_VALUES, 0.0, twist, xdd_d, self.model.friction)
            if tau is not None:
                return tau
        return self.distributed_pd(pose, twist, pose_d, twist_d, tau_0=self.model.tau(pose, twist, xdd_d))

    def period_call(self):
        """evaluate's kernel in the period's call (ControlLaw.period_call): the model's inverse dynamics at the
        measured state and the desired acceleration."""
        if self._compiled is None:
            return None
        from .jourdain_period import pd_distribute_period

        return pd_distribute_period, 6, (*self._task_gains, 0.0, True, self.model.friction, *self._compiled[1:])


class Admittance(_Impedance):
    """Admittance control, position-based (the dual of Fig. 36 for drives in position mode, CiA 402 CSP; not in the
    seed): the desired impedance filters the measured wrench into an offset dX of the reference,

        M_d dX'' + D_d dX' + K_d dX = -F_m,   X_c = X_d (+) dX,   xd_c = xd_d + dX',

    (so that, with the inner loop tracking X_c, e_x = X_d (-) X = -dX obeys M_d e_x'' + D_d e_x' + K_d e_x = F_e:
    Impedance's closed loop), integrated once per period by semi-implicit Euler (dX' first). The inner loop is the
    drive's position loop on the actuated joints, q_c = IK(X_c), qd_c = J(X_c) xd_c, with gravity compensation:
    tau = Kp_q (q_c - q) + Kd_q (qd_c - qd) + G_q(X) (joint gains, N/m and N s/m). ``position_reference`` holds
    (q_c, qd_c) of the last period: what a CSP interface sends to the drives instead of tau."""

    name = "admittance"

    def __init__(self, model: FeedforwardModel, m_d, d_d, k_d, joint_kp, joint_kd, period: float,
                 force_limit: float = np.inf):
        super().__init__(model, m_d, d_d, k_d, force_limit)
        if not (np.isfinite(period) and period > 0):
            raise InvalidInputError(f"admittance: period must be > 0 s, got {period}")
        self.period = float(period)
        self._joint_gains(joint_kp, joint_kd)
        self.reset()

    def reset(self) -> None:
        self._dx = np.zeros(self.dim)
        self._dxd = np.zeros(self.dim)
        self._t = None
        self.position_reference = None

    def evaluate(self, q_d, qd_d, qdd_d, q, qd, tau_ff=None, pose=None, twist=None, desired=None, t=None,
                 wrench=None, force=None) -> np.ndarray:
        dt = self._dt(t)
        self._t = t
        pose_d, twist_d = desired
        arrays = _sensor_arrays(wrench) if self._spatial and isinstance(wrench, WrenchMeasurement) else None
        if arrays is not None:  # F_m, the filter, xd_c and X_c but for R_d's product in one call (spatial task)
            out = np.empty(30)
            sensor_admittance(pose.rotation, *arrays, self._dx, self._dxd, dt, self.m_d, self.d_d, self.k_d, twist_d,
                              pose_d.position, out)
            self._dxd, self._dx, twist_c = out[:6], out[6:12], out[12:18]
            pose_c = Pose(out[18:21], out[21:].reshape(3, 3) @ pose_d.rotation)     # task_space.retract's
        else:
            f_m = self.measured_wrench(pose, wrench)
            try:        # the filter and xd_c = xd_d + dX' in one compiled call
                out = admittance_filter(f_m, self._dx, self._dxd, dt, self.m_d, self.d_d, self.k_d, twist_d)
                n = self.dim
                self._dxd, self._dx, twist_c = out[:n], out[n:2 * n], out[2 * n:]
            except TypeError:       # not float64 arrays: numpy
                self._dxd = self._dxd + dt * (-f_m - self.d_d * self._dxd - self.k_d * self._dx) / self.m_d
                self._dx = self._dx + dt * self._dxd
                twist_c = twist_d + self._dxd
            pose_c = self.kin.task.retract(pose_d, self._dx)
        q_c, J_c = self.kin.actuated_and_jacobian(pose_c)
        qd_c = J_c @ twist_c
        self.position_reference = (q_c, qd_c)
        compiled = self._compiled
        if compiled is not None:        # the joint PD and G^(X) in one call (Jourdain's model)
            tau = self.fused(compiled[0].joint_pd, self.dim, *self._joint_pd_gains, q_c, qd_c, q, qd, _NO_VALUES, 0.0,
                             pose.position, pose.rotation)
            if tau is not None:
                return tau
        return self.joint_pd(q_c, qd_c, q, qd, self.gravity(pose))

    def period_call(self):
        """The filter on the sensor's wrench, X_c into the joints and the joint PD in the period's call
        (ControlLaw.period_call; jourdain_period.admittance_period)."""
        if self._compiled is None:
            return None
        from .jourdain_period import admittance_period

        return admittance_period, 48, (self.m_d, self.d_d, self.k_d, *self._joint_pd_gains,
                                       *self.kin.actuated_arguments(), *self._compiled[1:])

    def period_arguments(self, t, force, w, point, tau_m):
        return (w, point, self._dx, self._dxd, self._dt(t)) if len(w) else None     # the actuator forces: evaluate

    def period_done(self, t, pose, twist, out, force) -> bool:
        self._t = t
        self._dxd, self._dx = out[:6], out[6:12]
        self.position_reference = (out[30:36], out[36:42])
        return True


FORCE_LAWS = {law.name: law for law in (Stiffness, DirectForce, DirectForceJointSpace, InnerForce,
                                         InnerForceJointSpace, Impedance, ImpedanceNoForce, Admittance)}


def parse_force_reference(text: str, task) -> ForceReference | None:
    """The force set-point of the node parameter ``force_reference`` (a YAML mapping in a string; '' = none):
    ``{wrench: [F_d per task coordinate], selection: [names of the force-controlled task coordinates]}``, e.g.
    ``{wrench: [0, 0, -50, 0, 0, 0], selection: [z]}`` (press 50 N down along z, the other coordinates follow the
    motion reference; F_d is the wrench the platform applies to the environment, task coordinates ``task.names``).
    InvalidInputError names what is wrong."""
    if not isinstance(text, str) or len(text) > 4096:
        raise InvalidInputError(f"force_reference must be a YAML mapping in a string of at most 4096 characters, "
                                f"got {str(text)[:80]!r}")
    if not text.strip():
        return None
    try:
        doc = yaml.safe_load(text)
    except (yaml.YAMLError, RecursionError, ValueError) as exc:   # ValueError: an int of 5000 digits, 2020-13-45
        raise InvalidInputError(f"force_reference is not YAML: {str(exc)[:200]}") from exc
    if not isinstance(doc, dict) or set(doc) != {"wrench", "selection"}:
        raise InvalidInputError(f"force_reference must be {{wrench: [...], selection: [...]}}, got {text[:80]!r}")
    names = list(task.names)
    sel = doc["selection"]
    if not isinstance(sel, list) or not all(isinstance(n, str) and n in names for n in sel):
        raise InvalidInputError(f"force_reference selection must be a list of task coordinates out of {names}, got "
                                f"{sel!r}")
    return ForceReference(check_vector("force_reference wrench", doc["wrench"], task.dim),
                          np.array([n in sel for n in names])).checked(task.dim)


# ----------------------------------------------------------------------------- settings (config/controllers.yaml)

def force_settings(robot: str, controller: str, controller_config: str = "") -> dict:
    """The settings of a force controller (controllers.yaml ``force_controllers``): ``defaults`` <- the
    controller's entry (``mode`` and overrides) <- ``robots.<robot>`` (the robot's gains, by family: ``motion``
    kp/kd per task coordinate, ``force`` kf/ki, ``impedance`` m_d/d_d/k_d, ``joint`` kp/kd per actuator; a
    controller's own ``<family>`` mapping overrides them)."""
    from ..description.paths import share_dir

    path = controller_config or str(share_dir() / "config" / "controllers.yaml")
    try:
        with open(path) as f:
            doc = (yaml.safe_load(f) or {}).get("force_controllers") or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidModelError(f"controller config {path!r} cannot be read: {exc}") from exc
    laws = doc.get("controllers") or {}
    robots = doc.get("robots") or {}
    if controller not in laws:
        raise InvalidInputError(f"force controller '{controller}' is not in {path} (force_controllers.controllers: "
                                f"{list(laws)})")
    if robot not in robots:
        raise InvalidInputError(f"robot '{robot}' has no section in {path} force_controllers.robots "
                                f"({list(robots)})")
    out = dict(doc.get("defaults") or {})
    entry = dict(laws[controller] or {})
    gains = {family: dict(values or {}) for family, values in (robots[robot] or {}).items()}
    for family in ("motion", "force", "impedance", "joint"):
        gains.setdefault(family, {}).update(entry.pop(family, None) or {})
    out.update(entry)
    out.update(gains=gains, controller=controller, controller_config=str(path))
    if out.get("mode") not in FORCE_LAWS:
        raise InvalidInputError(f"force controller '{controller}': mode {out.get('mode')!r} is not one of "
                                f"{sorted(FORCE_LAWS)}")
    return out


def _family(s, family, *keys):
    values = s["gains"][family]
    missing = [k for k in keys if k not in values]
    if missing:
        raise InvalidInputError(f"force controller '{s['controller']}' ({s['mode']}) needs gains.{family}."
                                f"{', gains.'.join(family + '.' + k for k in missing)} in {s['controller_config']}")
    return [values[k] for k in keys]


def force_law(s: dict, model: FeedforwardModel, period: float):
    """The law of resolved force settings (``force_settings``) on ``model`` at the control ``period`` (s)."""
    mode, limit = s["mode"], float(s.get("force_limit", np.inf))
    if mode == "stiffness":
        return Stiffness(model, *_family(s, "motion", "kp", "kd"))
    if mode == "direct_force":
        return DirectForce(model, *_family(s, "motion", "kp", "kd"), *_family(s, "force", "kf", "ki"),
                           float(s["max_offset"]), period, limit, float(s["contact_force"]),
                           float(s["contact_loss_time"]), float(s["retreat_distance"]))
    if mode == "direct_force_joint_space":
        return DirectForceJointSpace(model, *_family(s, "motion", "kp", "kd"), *_family(s, "force", "kf", "ki"),
                                     float(s["max_offset"]), period, *_family(s, "joint", "kp", "kd"), limit,
                                     float(s["contact_force"]), float(s["contact_loss_time"]),
                                     float(s["retreat_distance"]))
    if mode in ("inner_force", "inner_force_joint_space"):
        kf = float(s["inner_force_gain"])
        if s.get("wrench_source", "sensor") == "actuators" and not kf < 1.0:
            raise InvalidInputError(f"force controller '{s['controller']}': inner_force_gain {kf:g} with the actuator "
                                    "forces as the measurement must be < 1 (they are the previous period's command: "
                                    "the inner loop's pole is -inner_force_gain; InnerForce)")
        if mode == "inner_force":
            return InnerForce(model, *_family(s, "motion", "kp", "kd"), kf, limit)
        return InnerForceJointSpace(model, *_family(s, "joint", "kp", "kd"), kf, limit)
    impedance = _family(s, "impedance", "m_d", "d_d", "k_d")
    if mode == "admittance":
        return Admittance(model, *impedance, *_family(s, "joint", "kp", "kd"), period, limit)
    return FORCE_LAWS[mode](model, *impedance, limit)


#: the laws that may take the measured actuator forces as their force measurement (Figs. 29, 30, 32, 33)
ACTUATOR_FORCE_MODES = ("direct_force", "direct_force_joint_space", "inner_force", "inner_force_joint_space")


def wrench_watch(s: dict, law) -> WrenchWatch | None:
    """The WrenchWatch of resolved force settings (wrench_timeout, contact_force_limit, wrench_source) for ``law``;
    None for a law that measures no wrench."""
    source = s.get("wrench_source", "sensor")
    if source != "sensor" and s["mode"] not in ACTUATOR_FORCE_MODES:
        raise InvalidInputError(f"force controller '{s['controller']}': wrench_source {source!r} is for "
                                f"{', '.join(ACTUATOR_FORCE_MODES)} only (a static estimate: the impedance and "
                                "admittance laws need the contact wrench itself)")
    return WrenchWatch(s["wrench_timeout"], s["contact_force_limit"], source) if WRENCH in law.requires else None
