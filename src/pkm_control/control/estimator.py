"""State estimator: platform pose, twist and passive joints from the measured actuated joints (ROS-free).

A drive measures the actuated joints only (q_a, qdot_a). When the active joint variables are the
measurement, the forward kinematics gives the motion variable X from them (Taghirad, seed 004,
"Motion Control - Controller Topology", Fig. 16), and the joint-space laws need xdot = J^-1 qdot_a
("Motion Control in Joint Space"). The estimator computes that platform state:

* pose: forward kinematics of q_a (kinematics/forward.py, damped Newton) warm-started from the
  caller's guess, normally the last estimate: one or two iterations per control period;
* twist: Taghirad's Jacobian (seed 004, "Jacobian Matrices of a Parallel Manipulator":
  J_x xdot = J_q qdot_a, J = J_q^-1 J_x, qdot_a = J xdot), so xdot = J^-1 qdot_a for a square
  J and the least-squares xdot = J^+ qdot_a for redundant actuation (m > n, J_x of full column
  rank away from forward singularities). J comes from the last Newton evaluation (FKResult.jacobian);
* a family with a compiled estimate (hexapod_ups.forward_state: the FK, xdot = J^-1 qdot_a, the reciprocal
  condition number of J and the distance to the guess in one call) gives them directly; its rcond is the exact
  1 / (|J|_1 |J^-1|_1), the other families' LAPACK's estimate of it (dgecon, at least the exact value);
* on request (``joints=True``) every tree joint q, v from the analytic IK at that pose and
  twist, for /joint_states and RViz (not needed by the control laws, so not computed by default).

Recovery. A warm start is trusted when it converges (residual <= ``tol``; redundant
actuation: least-squares misfit <= ``max_residual``) within ``max_step`` of the guess. Otherwise
(the measurements jumped, or the guess is poor) the estimator solves again from each cold start
(the config's ``home`` and ``demo_poses`` unless given) and keeps, among the solutions inside
every joint limit (the warm one included when it converged), the one nearest the guess. The
guess itself is not retried (the warm start was that solve). A parallel robot may have several
assembly modes for one q_a; near the guess Newton follows the mode continuous with it, after a
jump the nearest one inside the joint limits is the answer, which the measurements alone cannot
tell from another mode inside the limits. If nothing converges: ConvergenceError naming the
measured joints and each attempt's residual. No estimate is ever NaN.

Distances (``max_step`` and the choice after a jump) are |task.difference| in m and rad:
sqrt(|p_a - p_b|^2 + theta^2), theta the angle of R_a R_b^T.
"""

from __future__ import annotations

import math
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
from scipy.linalg.lapack import dgecon, dgels, dgesv, dlange, dtrcon

from ..errors import (ConvergenceError, InvalidInputError, PkmError, SingularConfigurationError,
                      UnreachablePoseError, check_number, check_vector)
from ..kinematics.base import ParallelKinematics
from ..kinematics.forward import FKResult, forward_kinematics
from ..kinematics.task_space import Pose

#: smallest reciprocal condition number of J (1-norm estimate) accepted at the estimate: below it the
#: twist J^-1 qdot_a loses more than eps / 1e-10 ~ 1e-6 of its relative accuracy and the pose is fixed
#: only to about |J^-1| times the FK residual (a forward singularity). Regular workspace poses have
#: sigma_min / sigma_max >= 1e-3 (kinematics.workspace.random_poses).
_MIN_RCOND = 1e-10


class StateEstimate(NamedTuple):
    """Platform state estimated from the actuated joints (``StateEstimator.estimate``); a named tuple (immutable; two
    per control period: a frozen dataclass costs ~1 us more to build)."""

    pose: Pose
    twist: np.ndarray            # task velocity (kin.task.velocity_names), qdot_a = J twist
    iterations: int              # Newton iterations of the solve that gave the pose
    residual: float              # |q_a(pose) - q_a| (m or rad): the least-squares misfit for redundant actuation
    rcond: float                 # reciprocal condition number of J at the pose (1-norm; 0 = singular)
    recovered: bool              # the warm start was not trusted and the recovery search gave the pose
    q: np.ndarray | None = None  # every tree joint (kin.model.joint_names order), joints=True only
    v: np.ndarray | None = None
    jacobian: np.ndarray | None = None      # J at the pose (qdot_a = J twist), the FK's last evaluation


def _pose_distance(a: Pose, b: Pose) -> float:
    """|task.difference(a, b)| in m and rad: sqrt(|p_a - p_b|^2 + theta^2), theta the angle of R_a R_b^T.

    a: a pose from the FK (float arrays), b: a checked pose (arrays or nested sequences). The angle
    comes from the trace, tr(R_a R_b^T) = sum of R_a * R_b elementwise (a few operations: it runs
    every control period); it resolves angles down to about 1e-8 rad, far below any jump.
    """
    d = a.position - b.position
    c = 0.5 * (float(np.vdot(a.rotation, b.rotation)) - 1.0)
    th = math.acos(min(1.0, max(-1.0, c)))
    return math.sqrt(float(d.dot(d)) + th * th)


def _singular(rcond: float) -> SingularConfigurationError:
    return SingularConfigurationError(
        f"J at the estimated pose is singular: reciprocal condition number {rcond:.3g} < {_MIN_RCOND:g} "
        "(forward-kinematic singularity, Taghirad: J_x rank deficient); the platform twist does not follow "
        "from the actuated-joint velocities")


class StateEstimator:
    """Platform pose and twist (and optionally every joint) from measured actuated joints; immutable.

    Like a pinocchio model (the model / data split) it holds the kinematics and the settings only;
    the state, the last estimate, is the ``guess`` the caller passes to ``estimate``, so one
    estimator serves any number of robots of the same model and threads.

    kin: the robot's kinematics (``robot_kinematics(robot, variant)``).
    tol: FK convergence tolerance on |q_a(x) - q_a| (m or rad).
    max_iter: Newton iterations per solve (warm start and each cold start).
    max_residual: largest least-squares misfit |q_a(x) - q_a| accepted with redundant actuation
        (inconsistent measurements: noise, calibration); square robots always solve to ``tol``.
    max_step: largest distance (m and rad) between the guess and a warm-started estimate trusted
        without the recovery search. One 1 kHz period at 1 m/s and 1 rad/s is 1 mm / 1 mrad; the
        default 0.1 leaves a wide margin, and a false alarm costs only the search (``recovered``).
    cold_starts: {name: Pose} for the recovery search; default the config's ``home`` and
        ``demo_poses`` (names ``home``, ``demo1``, ...). Each must be reachable inside the limits.
    """

    def __init__(self, kin: ParallelKinematics, tol: float = 1e-12, max_iter: int = 50, max_residual: float = 1e-6,
                 max_step: float = 0.1, cold_starts=None):
        if not isinstance(kin, ParallelKinematics):
            raise InvalidInputError(f"the state estimator needs a ParallelKinematics, got {type(kin).__name__}")
        for what, value in (("tol", tol), ("max_residual", max_residual), ("max_step", max_step)):
            if not check_number(f"state estimator {what}", value) > 0:
                raise InvalidInputError(f"state estimator {what} = {value} must be > 0")
        if isinstance(max_iter, bool) or not isinstance(max_iter, int) or max_iter < 1:
            raise InvalidInputError(f"state estimator max_iter must be an integer >= 1, got {max_iter!r}")
        if cold_starts is None:
            cfg = kin.model.spec
            cold_starts = {"home": kin.home_pose()}
            cold_starts.update({f"demo{i + 1}": kin.task.pose(np.asarray(x, float))
                                for i, x in enumerate(cfg.demo_poses)})
        starts = {}
        for name, pose in dict(cold_starts).items():
            try:
                pose = kin.validate(pose)[0]
                kin.inverse(pose)
            except PkmError as exc:
                raise InvalidInputError(f"state estimator cold start {name!r} is not a reachable pose inside the "
                                        f"joint limits: {exc}") from exc
            p, R = pose.position.copy(), pose.rotation.copy()
            p.setflags(write=False)
            R.setflags(write=False)
            starts[str(name)] = Pose(p, R)
        if not starts:
            raise InvalidInputError("the state estimator needs at least one cold start")
        clm = kin.model
        self.kin = kin
        self.tol = float(tol)
        self.max_iter = max_iter
        self.max_residual = float(max_residual)
        self.max_step = float(max_step)
        self.cold_starts = MappingProxyType(starts)
        self._square = clm.n_actuated == kin.task.dim
        # a family's compiled estimate (hexapod_ups.forward_state: the FK, twist, rcond and the distance to the guess
        # in one call), or None: forward_kinematics, then _twist
        self._state = getattr(kin, "forward_state", None)
        # the same compiled FK and the trust test of its warm start (estimate: residual, step, rcond) as a control
        # period's one compiled call takes them (control/hexapod_ups_period.py): (legs, index, [its scalars,
        # max_residual, max_step, _MIN_RCOND]), or None (no compiled FK, or redundant actuation: no twist from it)
        arguments = getattr(kin, "forward_arguments", None)
        self.front_arguments = None
        if arguments is not None and self._square:
            legs, index, scalars = arguments(self.tol, self.max_iter)
            self.front_arguments = (legs, index, np.concatenate((scalars, (self.max_residual, self.max_step,
                                                                           _MIN_RCOND))))
        self._velocity_name = f"actuated joint velocities ({', '.join(clm.actuated_joints)})"
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")
        object.__setattr__(self, name, value)

    def estimate(self, q_a, qd_a, guess: Pose, joints: bool = False) -> StateEstimate:
        """The platform state of the measured actuated positions ``q_a`` and velocities ``qd_a``.

        guess: the last estimate (or any pose near the platform): the warm start, and the pose the
        answer must be nearest to after a jump (see the module docstring).
        joints: also every tree joint q, v (model order) from ``kin.inverse(pose, twist)``.
        Raises InvalidInputError (wrong size, NaN / inf in q_a, qd_a or the guess), ConvergenceError
        (no assembly inside the joint limits matches q_a) and SingularConfigurationError (J singular
        at the estimated pose, so the twist does not follow from qd_a).
        """
        kin = self.kin
        why = fast = None
        if self._state is not None:
            try:
                fast = self._state(q_a, qd_a, guess, self.tol, self.max_iter)
            except ConvergenceError as exc:     # the inputs passed its checks: recovery, as below
                qd_a, why = np.asarray(qd_a, float), str(exc)
        if fast is not None:
            pose, iterations, residual, J, twist, rcond, step = fast
            if twist is not None and not joints and residual <= self.max_residual and step <= self.max_step \
                    and rcond >= _MIN_RCOND:     # every control period: the trusted warm start, in one test
                return StateEstimate(pose, twist, iterations, residual, rcond, False, jacobian=J)
            fk = FKResult(pose, iterations, residual, J)
            why = self._distrust(fk, step)
            if why is None and twist is not None:
                if rcond < _MIN_RCOND:
                    raise _singular(rcond)
                return self._result(fk, twist, rcond, False, joints)
            fk = None if fk.residual > self.max_residual else fk
        elif why is None:
            qd_a = check_vector(self._velocity_name, qd_a, kin.model.n_actuated)
            try:  # forward_kinematics checks q_a and the guess before it iterates
                fk = forward_kinematics(kin, q_a, guess, tol=self.tol, max_iter=self.max_iter, check_limits=False)
            except ConvergenceError as exc:
                fk, why = None, str(exc)
            else:
                why = self._distrust(fk, _pose_distance(fk.pose, guess))
                fk = None if fk.residual > self.max_residual else fk
        else:
            fk = None
        recovered = why is not None
        if recovered:
            fk = self._recover(np.asarray(q_a, float), guess, fk, why)
        twist, rcond = self._twist(fk.jacobian, qd_a)
        return self._result(fk, twist, rcond, recovered, joints)

    def _distrust(self, fk: FKResult, step: float) -> str | None:
        """Why a warm-started solution is not trusted (a least-squares misfit beyond max_residual, a step beyond
        max_step from the guess), or None."""
        if fk.residual > self.max_residual:
            return f"least-squares residual {fk.residual:.3g} > max_residual {self.max_residual:.3g}"
        if step > self.max_step:
            return f"converged {step:.3g} (m, rad) from the guess, beyond max_step {self.max_step:.3g}"
        return None

    def _result(self, fk: FKResult, twist, rcond: float, recovered: bool, joints: bool) -> StateEstimate:
        if not joints:
            return StateEstimate(fk.pose, twist, fk.iterations, fk.residual, rcond, recovered, jacobian=fk.jacobian)
        m = self.kin.inverse(fk.pose, twist, check_limits=False)
        return StateEstimate(fk.pose, twist, fk.iterations, fk.residual, rcond, recovered, m.q, m.v, fk.jacobian)

    def _twist(self, J, qd_a):
        """(xdot, rcond(J)) from qdot_a = J xdot: J^-1 qdot_a, or the least-squares J^+ qdot_a (redundant actuation).

        LAPACK directly (gesv: LU, gels: QR; np.linalg costs several times more on these sizes), with
        the reciprocal condition number of J estimated from the factors (gecon / trcon, 1-norm).
        """
        n = self.kin.task.dim
        if self._square:
            lu, _, xd, info = dgesv(J, qd_a)
            rcond = dgecon(lu, dlange("1", J), norm="1")[0] if info == 0 else 0.0
        else:
            qr, x, info = dgels(J, qd_a)
            xd = x[:n]
            rcond = dtrcon(qr[:n], norm="1", uplo="U")[0] if info == 0 else 0.0
        if rcond < _MIN_RCOND:
            raise _singular(rcond)
        return xd, rcond

    def _recover(self, qa, guess: Pose, warm: FKResult | None, why: str) -> FKResult:
        """Solve from every cold start; the solution inside the joint limits nearest the guess (warm one included)."""
        kin = self.kin
        attempts = [("warm start", warm)] if warm is not None else []
        failures = [f"warm start from the guess: {why}"]
        for name, start in self.cold_starts.items():
            try:
                fk = forward_kinematics(kin, qa, start, tol=self.tol, max_iter=self.max_iter, check_limits=False)
            except ConvergenceError as exc:
                failures.append(f"cold start {name}: {exc}")
                continue
            if fk.residual > self.max_residual:
                failures.append(f"cold start {name}: least-squares residual {fk.residual:.3g} > max_residual "
                                f"{self.max_residual:.3g}")
                continue
            attempts.append((f"cold start {name}", fk))
        best, best_d = None, math.inf
        for name, fk in attempts:
            try:
                kin.inverse(fk.pose)          # every joint limit (recovery only: a full IK)
            except UnreachablePoseError as exc:
                failures.append(f"{name}: converged outside the joint limits ({exc})")
                continue
            d = _pose_distance(fk.pose, guess)
            if d < best_d:
                best, best_d = fk, d
        if best is None:
            act = kin.model.actuated_joints
            measured = ", ".join(f"{n} = {v:.6g}" for n, v in zip(act, qa))
            limit = f"tolerance {self.tol:.3g}" if self._square else f"least-squares misfit {self.max_residual:.3g}"
            raise ConvergenceError(f"state estimator of '{kin.model.name}': no assembly inside the joint limits "
                                   f"matches the measured actuated joints ({measured}) to the {limit}; "
                                   + "; ".join(failures))
        return best
