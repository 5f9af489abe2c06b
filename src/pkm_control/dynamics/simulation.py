"""Forward simulation of the closed-loop dynamics.

Two integrators, cross-checked in the tests:

* ``ReducedSimulator`` integrates the task-space equations (ClosedLoopDynamics.
  forward_dynamics) with classical RK4 in the platform-joint coordinates; every
  tree joint is recomputed by the analytic IK, so the closures hold exactly at
  every step (projection onto the constraint manifold: zero drift). The machine's end stops
  (end_stops.EndStops) act in both paths. For palida
  (numba present) a step without external wrench is one compiled call
  (jourdain.Formulation.rk4_step: Abdellatif's model, the same equations as the
  engine to ~1e-13, the same state and RK4 stages): ~30 us instead of ~1.2 ms
  (median on a 2-core machine, ``pkm bench simulation``); so is a step in contact with a compliant
  environment (``contact``: dynamics/point_contact.py, its wrench at every stage inside the kernel).
  Where the IK is iterative (``kinematics: numeric``) the same RK4 runs in tree coordinates instead
  (``tree``): the stages' accelerations at (q, v) from ClosedLoopDynamics.tree_accelerations
  (pinocchio's constraintDynamics where it holds the closures; K a = -Kdot v: on the closures, the
  same ODE as the reduced one), no IK per stage; after each step (q, v) is projected back onto the closures
  (Newton on phi, minimum norm; v onto null(K)) and carried in the state to the next step. Where the engine's
  model is packed (the numeric family's square closures on the compiled tree) the whole step, stages and
  projection, is one compiled call (``tree_compiled``: dynamics/numeric_kernels.tree_plant_step, the same
  equations on the compiled tree's rnea, crba and closure rows): ~25-40 us instead of ~90-160 us of CPU a
  0.5 ms step on the 3-DoF robots (``pkm bench simulation``).
* ``constrained_forward_dynamics`` solves the tree with Lagrange multipliers,
  [M K^T; K 0] [a; -lambda] = [tau - h; -Kdot v - 2 a K v - b^2 phi],
  Baumgarte-stabilized (Baumgarte 1972): closure drift stays bounded.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pinocchio as pin

from ..description.loader import closure_bias, closure_jacobian, closure_residual, closure_residual_and_jacobian
from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, SingularConfigurationError,
                      UnreachablePoseError, check_vector)
from ..kinematics.task_space import Pose
from . import jourdain
from .kernels import min_norm_correction, rk4_stage, rk4_sum


@dataclass(frozen=True)
class SimState:
    """Platform-joint coordinates (tree order) and task velocity."""

    coords: np.ndarray
    twist: np.ndarray
    #: (q, v) of the tree at this state when a tree-coordinate step made it (ReducedSimulator ``tree``), else None
    tree: tuple | None = field(default=None, compare=False, repr=False)


def _compiled_model(dyn):
    """Abdellatif's compiled model (jourdain.Formulation) when ``dyn`` is palida and numba is there,
    else None. Formulation refuses (InvalidModelError) other robots and a palida config beyond the
    paper's model (e.g. friction terms outside its 14 parameters): those stay with the engine. So does a
    palida whose tree carries other inertias than its config (feedforward.dynamics_with_parameters: the
    formulation reads the config): its rigid-body forces must equal the engine's at a moving state."""
    if jourdain.numba is None:
        return None
    try:
        form = jourdain.Formulation(dyn)
    except InvalidModelError:
        return None
    pose = dyn.kin.home_pose()
    twist, accel = np.linspace(0.1, 0.6, dyn.n), np.linspace(-3.0, 2.0, dyn.n)
    a = form.inverse_dynamics_fast(pose, twist, accel, friction=False, check_limits=False)
    b = dyn.inverse_dynamics(pose, twist, accel, friction=False).tau
    return form if np.allclose(a, b, rtol=1e-9, atol=1e-9 * np.abs(b).max()) else None


class ReducedSimulator:
    """RK4 on (platform-joint coordinates, task velocity); state passed in and returned.

    compiled: None picks the compiled palida step when available (``_compiled_model``) and, in tree coordinates,
    the tree step in one compiled call where the engine's model is packed (``tree_compiled``); False forces the
    generic engine's Python stages; True requires palida's compiled step (InvalidModelError otherwise).
    end_stops: the machine's end stops (``end_stops.EndStops``, in both paths), None: none.
    tree: None steps in tree coordinates (module docstring) when the generic engine runs and the kinematics is
    numeric; False never; True whenever the generic engine runs.
    """

    #: closure residual (m, rad) below which the tree-coordinate step's projection takes its last Newton step, and
    #: the most evaluations it makes
    PROJECTION_LINEAR, PROJECTION_ITER = 1e-8, 6
    _NO_FORCE = np.zeros(0)

    def __init__(self, dyn, friction: bool = True, compiled: bool | None = None, end_stops=None,
                 tree: bool | None = None):
        self.dyn = dyn
        self.task = dyn.kin.task
        self.friction = bool(friction)
        self.end_stops = end_stops
        if not (math.isfinite(dyn.sign_eps) and dyn.sign_eps >= 0):
            raise InvalidInputError(f"sign_eps of the dynamics must be >= 0 (0: sign, > 0: tanh(qdot / sign_eps)), "
                                    f"got {dyn.sign_eps}")
        self._fast = None if compiled is False else _compiled_model(dyn)
        if compiled and self._fast is None:
            raise InvalidModelError(f"no compiled simulation step for '{dyn.model.name}' (palida only, needs numba)")
        self._stops = None if self._fast is None else self._fast.end_stop_table(end_stops)
        self._tree = self._fast is None and (bool(tree) or (tree is None and dyn.kin.family == "numeric"))
        self._scratch = dyn.pin_model.createData()
        self._tree_step = self._compiled_tree_step() if self._tree and compiled is not False else None
        if self._fast is not None or not self._tree or self._tree_step is not None:
            # the step's kernels compiled (numba: seconds when not in its cache; the generic engine's
            # kernels.plant_forward_dynamics) here, not in a run's first period: the controller's first lockstep
            # period took them, and a stop signal then waited for them (issue 22 §5)
            at_rest = self.state(dyn.kin.home_pose(), np.zeros(self.task.dim))
            self.actuated(self.step(at_rest, 1e-3, np.zeros(dyn.model.n_actuated)))

    def _compiled_tree_step(self):
        """(numeric_kernels.tree_plant_step, its arguments before q, its arguments after the force, its status
        SOLVED) where the engine's model is packed (the numeric family's square closures on the compiled tree) and no
        cut joint has a stop (their force needs the family's cut-joint angles), else None: the step's Python
        stages."""
        dyn, stops = self.dyn, self.end_stops
        if dyn.packed_model is None or (stops is not None and len(stops.cut_names) > 0):
            return None
        from .numeric_kernels import SOLVED, compiled_plant_step    # the numeric family's kernels: numeric engines only

        none = np.zeros(0)
        limits = (none,) * 4 if stops is None else (stops.lower, stops.upper, stops.stiffness, stops.damping)
        return (compiled_plant_step(), dyn.packed_model,
                (self.friction and len(dyn.friction) > 0, *dyn.friction_arrays, dyn.sign_eps, stops is not None,
                 *limits, self.PROJECTION_LINEAR, self.PROJECTION_ITER), SOLVED)

    @property
    def tree(self) -> bool:
        """True when ``step`` (without a wrench function) runs in tree coordinates (module docstring)."""
        return self._tree

    @property
    def tree_compiled(self) -> bool:
        """True when the tree-coordinate ``step`` (without a wrench function) is one compiled call
        (numeric_kernels.tree_plant_step)."""
        return self._tree_step is not None

    @property
    def compiled(self) -> bool:
        """True when ``step`` (without wrench) and ``actuated`` run the compiled palida kernels."""
        return self._fast is not None

    def state(self, pose: Pose, twist) -> SimState:
        qp = self.task.platform_joint_motion(pose)[0]
        return SimState(qp, check_vector("twist", twist, self.task.dim, MAGNITUDE_LIMIT).copy())

    def pose(self, s: SimState) -> Pose:
        return self.task.pose_from_platform_joints(s.coords)

    def _deriv(self, coords, twist, tau, wrench):
        pose, rates = self.task.platform_pose_and_rates(coords, twist)
        if callable(wrench):                 # a wrench of the state (a contact): evaluated at every RK4 stage
            wrench = wrench(pose, self.task.twist_map() @ twist)
        xdd = self.dyn.forward_dynamics(pose, twist, tau, wrench, friction=self.friction, end_stops=self.end_stops)
        return rates, xdd

    def actuated(self, s: SimState) -> tuple[np.ndarray, np.ndarray]:
        """(q_a, qd_a): actuated joint positions and velocities qd_a = J xdot of a state."""
        if self._fast is not None:
            return self._fast.actuated_state(s.coords, s.twist)
        if s.tree is not None:
            a = self.dyn.model.actuated_idx
            return s.tree[0][a].copy(), s.tree[1][a].copy()
        q_a, J = self.dyn.kin.actuated_and_jacobian(self.pose(s))
        return q_a, J @ s.twist

    def step(self, s: SimState, dt: float, tau, wrench=None, contact=None) -> SimState:
        """One RK4 step with actuator forces held over the step and the external wrench on the platform (force at its
        origin, moment; base frame): a 6-vector held over the step, or a function wrench(pose, platform twist (v,
        omega)) of the state evaluated at every stage (hardware/contact.py); compiled without wrench. ``contact``:
        a compliant contact in the compiled kernel's form (dynamics/point_contact.py, hardware/contact.py
        ``ContactEnvironment.kernel_form``), its wrench at every stage inside the compiled step (``compiled`` only,
        without ``wrench``)."""
        if contact is not None and (self._fast is None or wrench is not None):
            raise InvalidInputError("a contact in the kernel's form needs the compiled step (palida) and no wrench")
        if self._fast is not None and wrench is None:
            return SimState(*self._fast.rk4_step(s.coords, s.twist, dt, tau, self.friction, self.dyn.sign_eps,
                                                 self._stops, contact))
        if self._tree and not callable(wrench):
            return self._step_tree(s, dt, tau, wrench)
        # classical RK4, the stages' states by one compiled call each (kernels.rk4_stage, rk4_sum)
        c, t = s.coords, s.twist
        c2, t2, c3, t3, c4, t4 = (np.empty(len(c)) for _ in range(6))
        k1c, k1t = self._deriv(c, t, tau, wrench)
        rk4_stage(c, t, k1c, k1t, 0.5 * dt, c2, t2)
        k2c, k2t = self._deriv(c2, t2, tau, wrench)
        rk4_stage(c, t, k2c, k2t, 0.5 * dt, c3, t3)
        k3c, k3t = self._deriv(c3, t3, tau, wrench)
        rk4_stage(c, t, k3c, k3t, dt, c4, t4)
        k4c, k4t = self._deriv(c4, t4, tau, wrench)
        return SimState(rk4_sum(c, k1c, k2c, k3c, k4c, dt), rk4_sum(t, k1t, k2t, k3t, k4t, dt))

    def _step_tree(self, s: SimState, dt: float, tau, wrench) -> SimState:
        """``step`` in tree coordinates (module docstring); all tree joints are 1-DoF, so q integrates as q + h v."""
        dyn, task, c = self.dyn, self.task, self.dyn.model.platform_idx
        tau = check_vector("actuator forces", tau, dyn.model.n_actuated, MAGNITUDE_LIMIT)
        if s.tree is None:
            m = dyn.kin.inverse(self.pose(s), s.twist, check_limits=False)
            q, v = m.q, m.v
        else:
            q, v = s.tree
        f = None if wrench is None else dyn._wrench(wrench)
        if self._tree_step is not None:
            # the whole step in one compiled call (numeric_kernels.tree_plant_step); where it does not solve, the
            # stages below meet the same case and name it
            kernel, (I, F), after, solved = self._tree_step
            qn, vn = np.empty(len(q)), np.empty(len(q))
            if kernel(I, F, q, v, tau, dt, self._NO_FORCE if f is None else f, *after, qn, vn) == solved:
                return SimState(qn[c].copy(), task.task_velocity(qn[c], vn[c]), (qn, vn))
        stops = self.end_stops
        cut = stops is not None and len(stops.cut_names) > 0

        def acc(q, v):
            ff = f
            if cut:
                pose = task.pose_from_platform_joints(q[c])
                fc = stops.cut_force(dyn.kin, pose, task.task_velocity(q[c], v[c]))
                if fc is not None:
                    ff = fc if ff is None else ff + fc
            return dyn.tree_accelerations(q, v, tau, self.friction, stops, ff)
        # classical RK4, the stages' states by one compiled call each (kernels.rk4_stage, rk4_sum)
        n = len(q)
        q2, v2, q3, v3, q4, v4 = (np.empty(n) for _ in range(6))
        a1 = acc(q, v)
        rk4_stage(q, v, v, a1, 0.5 * dt, q2, v2)
        a2 = acc(q2, v2)
        rk4_stage(q, v, v2, a2, 0.5 * dt, q3, v3)
        a3 = acc(q3, v3)
        rk4_stage(q, v, v3, a3, dt, q4, v4)
        a4 = acc(q4, v4)
        q, v = self._project(rk4_sum(q, v, v2, v3, v4, dt), rk4_sum(v, a1, a2, a3, a4, dt))
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return SimState(q[c], np.full(self.task.dim, np.nan))
        return SimState(q[c].copy(), task.task_velocity(q[c], v[c]), (q, v))

    def _project(self, q, v):
        """(q, v) onto the closures: Newton on phi with minimum-norm steps dq = -K^T (K K^T)^-1 phi; once |phi| is
        below PROJECTION_LINEAR the last step and v's projection onto null(K) share one evaluation of K (the
        residual left is second order in |phi|)."""
        clm, d = self.dyn.model, self._scratch
        if not (np.isfinite(q).all() and np.isfinite(v).all()):
            return q, v                    # diverged: the caller reports it
        q, v = q.copy(), v.copy()          # the corrections are applied in place (kernels.min_norm_correction)
        for _ in range(self.PROJECTION_ITER):
            r, K = closure_residual_and_jacobian(clm, d, q)
            rn = math.sqrt(r.dot(r))
            last = rn <= self.PROJECTION_LINEAR
            if not min_norm_correction(K, r, v, last, q, v):
                raise SingularConfigurationError(f"'{clm.name}': the closure Jacobian lost rank in the simulation "
                                                 "(a singular configuration)")
            if last:
                return q, v
        raise UnreachablePoseError(f"'{clm.name}': the simulated state left the closures (residual {rn:.3g} after "
                                   f"{self.PROJECTION_ITER} projection steps)")

    def step_lagged(self, s: SimState, dt: float, tau, tau_cmd, lag: float,
                    wrench=None) -> tuple[SimState, np.ndarray]:
        """One RK4 step of the plant with a first-order actuator lag, the state augmented by the applied forces:
        tau' = (tau_cmd - tau) / lag (the current loop of a drive, time constant ``lag`` s), tau_cmd held over the
        step; ``wrench`` as in ``step``. Returns (state, applied forces) at the end of the step (always the generic
        engine)."""
        c, t = s.coords, s.twist

        def f(c, t, tau):
            return (*self._deriv(c, t, tau, wrench), (tau_cmd - tau) / lag)
        k1c, k1t, k1f = f(c, t, tau)
        k2c, k2t, k2f = f(c + 0.5 * dt * k1c, t + 0.5 * dt * k1t, tau + 0.5 * dt * k1f)
        k3c, k3t, k3f = f(c + 0.5 * dt * k2c, t + 0.5 * dt * k2t, tau + 0.5 * dt * k2f)
        k4c, k4t, k4f = f(c + dt * k3c, t + dt * k3t, tau + dt * k3f)
        return (SimState(c + dt / 6 * (k1c + 2 * k2c + 2 * k3c + k4c), t + dt / 6 * (k1t + 2 * k2t + 2 * k3t + k4t)),
                tau + dt / 6 * (k1f + 2 * k2f + 2 * k3f + k4f))

    def energy(self, s: SimState) -> float:
        kin, pot = self.dyn.energy(self.pose(s), s.twist)
        return kin + pot


def constrained_forward_dynamics(dyn, q, v, tau_tree, alpha: float = 20.0, beta: float = 20.0):
    """Tree accelerations a and closure forces lambda (Baumgarte-stabilized).

    tau_tree: applied generalized forces on the tree (actuators, friction, wrench).
    Returns (a, lambda) with M a + h = tau_tree + K^T lambda, K a = -Kdot v - 2 alpha K v - beta^2 phi.
    """
    clm, m, d = dyn.model, dyn.pin_model, dyn._data
    M = pin.crba(m, d, q)
    M = np.triu(M) + np.triu(M, 1).T
    h = pin.nonLinearEffects(m, d, q, v)
    K = closure_jacobian(clm, d, q)
    phi = closure_residual(clm, d, q)
    gamma = -closure_bias(clm, d, q, v) - 2 * alpha * (K @ v) - beta ** 2 * phi
    nv, nc = m.nv, K.shape[0]
    A = np.zeros((nv + nc, nv + nc))
    A[:nv, :nv], A[:nv, nv:], A[nv:, :nv] = M, K.T, K
    sol = np.linalg.lstsq(A, np.concatenate([tau_tree - h, gamma]), rcond=None)[0]
    return sol[:nv], -sol[nv:]


def simulate_constrained(dyn, q0, v0, t_end: float, dt: float, tau_fn=None, alpha=20.0, beta=20.0):
    """Semi-implicit Euler on the constrained tree; returns (times, q history, closure drift history).

    tau_fn(t, q, v) -> tree generalized forces (default zero).
    """
    q, v = np.array(q0, float), np.array(v0, float)
    ts, qs, drift = [0.0], [q.copy()], [float(np.abs(closure_residual(dyn.model, dyn._data, q)).max())]
    n = int(round(t_end / dt))
    for k in range(n):
        tau = np.zeros_like(v) if tau_fn is None else tau_fn(k * dt, q, v)
        a, _ = constrained_forward_dynamics(dyn, q, v, tau, alpha, beta)
        v = v + dt * a
        q = pin.integrate(dyn.pin_model, q, v * dt)
        ts.append((k + 1) * dt)
        qs.append(q.copy())
        drift.append(float(np.abs(closure_residual(dyn.model, dyn._data, q)).max()))
    return np.array(ts), np.array(qs), np.array(drift)
