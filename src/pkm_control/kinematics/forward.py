"""Forward kinematics: actuated joint positions -> platform pose, by damped Newton.

The iteration uses only the family's analytic ``actuated`` and ``jacobian``, so
it works for every robot (least squares when actuation is redundant). It starts
from a guess and takes the small steps of a local solver, so it converges to the
assembly branch nearest the guess; warm-starting from the last pose costs one or
two iterations. A family may bring its own ``forward`` (numeric.py; hexapod_ups.py: this iteration in one
compiled call, hexapod_ups_kernels.ups_forward).
"""

from __future__ import annotations

from typing import NamedTuple

import math

import numpy as np
from scipy.linalg.lapack import dgesv

from ..errors import MAGNITUDE_LIMIT, ConvergenceError, UnreachablePoseError, check_vector
from .base import ParallelKinematics
from .kernels import UPS_FK_GUESS as GUESS, UPS_FK_MAX_ITER as MAX_ITER, UPS_FK_SINGULAR as SINGULAR, \
    UPS_FK_STALLED as STALLED
from .task_space import Pose


class FKResult(NamedTuple):
    """The forward kinematics' solution (a named tuple: immutable, and cheap to build in every control period)."""

    pose: Pose
    iterations: int
    residual: float          # |q_a(pose) - q_a| (m or rad), Euclidean
    jacobian: np.ndarray     # J at ``pose`` (qdot_a = J xdot), from the last Newton evaluation


def forward_kinematics(kin: ParallelKinematics, q_actuated, guess: Pose, tol: float = 1e-12,
                       max_iter: int = 50, damping: float = 1e-12, check_limits: bool = True) -> FKResult:
    """Platform pose whose actuated joints equal ``q_actuated``, nearest to ``guess``.

    Each step needs q_a and J at one pose: ``kin.actuated_and_jacobian``.
    Damped Gauss-Newton: dx = -(J^T J + lambda I)^-1 J^T r with r = q_a(x) - q_a,
    halving the step while it does not reduce |r| or leaves the reachable set.
    Converged when |r| <= tol (redundant robots: when the step is below
    tol as well, the residual then being the least-squares misfit). The result
    carries J at the solution, which the last evaluation computed anyway (the
    state estimator's twist needs it).
    """
    qa = check_vector(f"actuated joint positions ({', '.join(kin.model.actuated_joints)})",
                      q_actuated, kin.model.n_actuated, MAGNITUDE_LIMIT)
    pose = kin.validate(guess)[0]
    solve = getattr(kin, "forward", None)
    if solve is not None:
        # a family with its own iteration: the closures solved directly (numeric.py, no nested IK), or this iteration
        # compiled (hexapod_ups.py)
        return solve(qa, pose, tol=tol, max_iter=max_iter, check_limits=check_limits)
    task = kin.task
    n = task.dim

    def residual(p):
        try:
            qa_p, J = kin.actuated_and_jacobian(p)
        except UnreachablePoseError:
            return None, None
        return qa_p - qa, J

    r, J = residual(pose)
    if r is None:
        raise failure(GUESS, 0, 0.0, tol)
    rn = math.sqrt(r.dot(r))
    square = kin.model.n_actuated == n
    for it in range(1, max_iter + 1):
        if rn <= tol:
            return finish(kin, pose, it - 1, rn, J, check_limits)
        # LAPACK gesv directly: np.linalg.solve costs 4x more on a 6x6 (call overhead)
        info = 1
        if square:
            _, _, dx, info = dgesv(J, -r)
        if info != 0:
            _, _, dx, info = dgesv(J.T @ J + damping * np.eye(n), -(J.T @ r))
        # a step beyond MAGNITUDE_LIMIT (or not finite): J is singular to working precision
        if info != 0 or not np.abs(dx).max() <= MAGNITUDE_LIMIT:
            raise failure(SINGULAR, it, rn, tol)
        step = 1.0
        while step > 1e-6:
            cand = task.retract(pose, step * dx)
            rc, Jc = residual(cand)
            if rc is not None:
                rcn = math.sqrt(rc.dot(rc))
                if rcn < rn or (not square and rcn <= rn * (1 + 1e-12)):
                    break
            step *= 0.5
        else:
            raise failure(STALLED, it, rn, tol)
        pose, r, rn, J = cand, rc, rcn, Jc
        if not square and math.sqrt(dx.dot(dx)) * step <= tol:
            return finish(kin, pose, it, rn, J, check_limits)
    if rn <= tol:
        return finish(kin, pose, max_iter, rn, J, check_limits)
    raise failure(MAX_ITER, max_iter, rn, tol)


def failure(why: int, it: int, rn: float, tol: float) -> ConvergenceError:
    """The ConvergenceError of a failed iteration: ``why`` (GUESS, SINGULAR, STALLED, MAX_ITER: the statuses of the
    compiled iteration hexapod_ups_kernels.ups_forward, too) at iteration ``it`` with the residual rn."""
    if why == GUESS:
        return ConvergenceError("forward kinematics: the initial guess is not an assembly of the mechanism")
    if why == SINGULAR:
        return ConvergenceError(f"forward kinematics: singular Jacobian at iteration {it} (residual {rn:.3g})")
    if why == STALLED:
        return ConvergenceError(f"forward kinematics stalled after {it} iterations: residual {rn:.3g} "
                                f"> tolerance {tol:.3g} (singular configuration or no assembly nearby)")
    return ConvergenceError(f"forward kinematics did not converge in {it} iterations: residual {rn:.3g} "
                            f"> tolerance {tol:.3g}")


def finish(kin, pose, iterations, rn, J, check_limits):
    if check_limits:
        kin.inverse(pose)  # raises JointLimitError if a passive joint is out of range
    return FKResult(pose, iterations, rn, J)
