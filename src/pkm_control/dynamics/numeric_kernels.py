"""The numeric family's forward dynamics in one compiled call (engine.forward_dynamics; issue 21 par. 7): the warm IK
of kinematics/numeric_kernels.py, the tree's crba and rnea of description/kernels.py and the reduced solve of
kernels.py; and the simulated plant's tree-coordinate RK4 step with its projection onto the closures in one compiled
call (tree_plant_step: simulation.ReducedSimulator, the 2 kHz loop's plant). A module of its own, imported by the
engine when it builds a numeric engine: its imports (the numeric family's kernels, compiled at their import) are not
paid by every process that imports the dynamics.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..description.kernels import (tree_body_inertias, tree_closure_bias, tree_closure_rows, tree_inverse_dynamics,
                                   tree_mass_matrix)
from ..kinematics.kernels import zyx_platform_force
from ..kinematics.numeric_kernels import (INPUT, MOTION_FLOATS, MOTION_INTS, SOLVED, TASK_KINDS, float_field,
                                          int_field, solve_motion, unpack_motion, unpack_warm)
from .kernels import (_F64_1, _F64_2, _cholesky, _cholesky_solve, friction_torque, min_norm_correction, reduced_solve,
                      rk4_stage, stop_force)


#: numeric_forward_dynamics' status beyond numeric_kernels' (SOLVED ... INPUT): the task mass matrix is not positive
#: definite or the acceleration is not finite
DYNAMICS_FAILED = 7
#: the fields of numeric_forward_dynamics' packed model after the motion's (numeric_kernels.pack)
DYNAMICS_INTS = ("act", "task_dim")
DYNAMICS_FLOATS = ("inertia", "armature", "gravity")
_C_I64 = numba.types.Array(numba.int64, 1, "C", readonly=True)
_C_F64 = numba.types.Array(numba.float64, 1, "C", readonly=True)


#: numeric_forward_dynamics' one signature (compiled_forward_dynamics)
_FD_SIGNATURE = (_C_I64, _C_F64, numba.int64[::1], numba.float64[::1], _F64_2, _F64_1, _F64_1, _F64_1,
                 numba.float64[::1])


def compiled_forward_dynamics():
    """numeric_forward_dynamics compiled for its one signature (the caller's arrays read-only of any layout convert
    to it, nothing compiles in a control period), on the first call of this: a numeric engine's construction, not
    the import of this module that every process pays (the kernel costs ~20 s CPU to compile cold, then loads from
    numba's cache)."""
    if not numeric_forward_dynamics.signatures:
        numeric_forward_dynamics.compile(_FD_SIGNATURE)
        numeric_forward_dynamics.disable_compile()
    return numeric_forward_dynamics


@numba.njit(cache=True, inline="always")
def _within_limit(tau, limit):
    """sum |tau_i| <= limit (the packed model's magnitude limit on the actuator forces); False for NaN."""
    total = 0.0
    for i in range(tau.shape[0]):
        total += abs(tau[i])
    return total <= limit


@numba.njit(cache=True)
def numeric_forward_dynamics(I, F, iwork, work, R, p, twist, tau, xdd):
    """The forward dynamics of the engine (engine.forward_dynamics, no wrench, friction or end stops) for the numeric
    family's square closures on the compiled tree, in one call. I, F: the packed model (numeric_kernels.pack of
    MOTION_INTS + DYNAMICS_INTS and MOTION_FLOATS + DYNAMICS_FLOATS: numeric.Kinematics.packed_motion, the actuated
    joints, the task dimension, loader.tree_inertias, pinocchio's armature and gravity); iwork, work: the family's
    warm start (numeric_kernels.unpack_warm).

    First the shapes and tau's check (tree_force's), then the IK of the motion with zero task acceleration
    (numeric_kernels.solve_motion, its input checks included): q, v = G xdot, G and a0 = Gdot xdot; then the reduced
    dynamics M xddot = G_a^T tau - G^T rnea(q, v, a0), M = G^T crba(q) G (reduced_solve), crba and rnea compiled on
    the tree (description.kernels.tree_mass_matrix, tree_inverse_dynamics) from the placements and joint Jacobian
    of the IK's last evaluation. These are the equations pinocchio's constraintDynamics solves on the tree
    (engine.py), so xddot is the same to rounding.

    Returns the status: SOLVED (xdd written); INPUT where the shapes, tau, the pose or the twist fail the checks;
    numeric_kernels' failures of the IK; DYNAMICS_FAILED. Where it is not SOLVED the caller's generic path meets
    the same failure and names it."""
    k = len(MOTION_INTS)
    act, task_dim = int_field(I, k), int_field(I, k + 1)[0]
    k = len(MOTION_FLOATS)
    inertia, armature, gravity = float_field(I, F, k), float_field(I, F, k + 1), float_field(I, F, k + 2)
    tree, reference, c, free, rows, bounds, task, alpha_sign, predict_range, limit, tol, max_iter = unpack_motion(I, F)
    parent = tree[0]
    nv, n_rows, n_free, n = parent.shape[0], rows.shape[0], free.shape[0], task_dim
    shapes_ok = (R.shape[0] == R.shape[1] == p.shape[0] == 3 and twist.shape[0] == task_dim
                 and tau.shape[0] == act.shape[0])
    if not shapes_ok:
        return INPUT
    if not _within_limit(tau, limit):
        return INPUT
    warm, wq, wK, wLU, wperm = unpack_warm(iwork, work, nv, n_rows, n_free)
    q, v, a, G = np.empty(nv), np.empty(nv), np.empty(nv), np.empty((nv, n))
    X, J = np.empty((3, 4 * nv)), np.empty((6, nv))
    zero = np.zeros(n)
    # validate = shapes_ok (True here) as a run-time bool, not the literal True: solve_motion then has the argument
    # types of numeric_kernels.numeric_motion's call and compiles once for both
    status = solve_motion(tree, reference, warm, wq, wK, wLU, wperm, c, free, rows, bounds, task, alpha_sign, R, p,
                          twist, zero, shapes_ok, predict_range, limit, tol, max_iter, q, v, a, G, X, J)[0]
    if status != SOLVED:
        return status
    body, composite = np.empty((nv, 10)), np.empty((nv, 10))
    tree_body_inertias(X, inertia.reshape((nv, 13)), body)
    bias, M = np.empty(nv), np.empty((nv, nv))
    tree_inverse_dynamics(parent, J, body, armature, gravity, v, a, bias)
    tree_mass_matrix(parent, J, body, armature, composite, M)
    return SOLVED if reduced_solve(G, M, act, tau, bias, zero, xdd) else DYNAMICS_FAILED


#: tree_plant_step's status beyond SOLVED: the KKT system or the projection's K K^T is singular (K lost rank, or M
#: not positive definite); the projection did not reach the closures in its steps; the state is not finite; tau of
#: another length than the actuated joints or beyond the magnitude limit
STEP_SINGULAR, STEP_UNREACHABLE, STEP_DIVERGED, STEP_INPUT = 1, 2, 3, 4


@numba.njit(cache=True)
def _tree_accelerations(tree, act, c, inertia, armature, gravity, q, v, tau, force, spatial, friction, coulomb,
                        viscous, cut_sign, cut_coulomb, cut_viscous, eps, stops, lower, upper, stiffness, damping,
                        X, J, r, K, body, composite, M, h, t, a):
    """engine.ClosedLoopDynamics.tree_accelerations on the compiled tree, into a: M a + h = S_a^T tau - tau_f
    + tau_stop + tau_p + K^T lambda, K a = -Kdot v (pinocchio's forwardDynamics with the closures' K and Kdot v, or
    its constraintDynamics on the same closures: the same equations), tau_p = B^-T force on the platform joints c.
    The KKT system by its Schur complement: a_0 = M^-1 (t - h), (K M^-1 K^T) lambda = -Kdot v - K a_0,
    a = a_0 + M^-1 K^T lambda. False where M or K M^-1 K^T is not positive definite or a is not finite."""
    parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f = tree
    nv, m = q.shape[0], r.shape[0]
    tree_closure_rows(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, q, X, J, r, K)
    gamma = np.empty(m)
    tree_closure_bias(parent, col, offset, lin_rows, lin_sel, X, J, v, gamma)
    tree_body_inertias(X, inertia, body)
    a[:] = 0.0
    tree_inverse_dynamics(parent, J, body, armature, gravity, v, a, h)       # h = rnea(q, v, 0)
    tree_mass_matrix(parent, J, body, armature, composite, M)
    t[:] = 0.0
    for k in range(act.shape[0]):
        t[act[k]] = tau[k]
    if friction:
        friction_torque(J, v, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps, a)
        for i in range(nv):
            t[i] -= a[i]
    if stops:
        stop_force(q, v, lower, upper, stiffness, damping, a)
        for i in range(nv):
            t[i] += a[i]
    if force.shape[0]:
        qc, fc = np.empty(c.shape[0]), np.empty(c.shape[0])
        for k in range(c.shape[0]):
            qc[k] = q[c[k]]
        if spatial:
            zyx_platform_force(qc, force, fc)
        else:
            fc[:] = force
        for k in range(c.shape[0]):
            t[c[k]] += fc[k]
    if not _cholesky(M, nv):
        return False
    for i in range(nv):
        a[i] = t[i] - h[i]
    _cholesky_solve(M, a)                                                    # a_0
    Y = np.empty((m, nv))                                                    # rows: (M^-1 K^T)^T
    for i in range(m):
        for k in range(nv):
            Y[i, k] = K[i, k]
        _cholesky_solve(M, Y[i])
    S = np.empty((m, m))
    lam = np.empty(m)
    for i in range(m):
        s = -gamma[i]
        for k in range(nv):
            s -= K[i, k] * a[k]
        lam[i] = s
        for j in range(i + 1):
            s = 0.0
            for k in range(nv):
                s += K[i, k] * Y[j, k]
            S[i, j] = s
    if not _cholesky(S, m):
        return False
    _cholesky_solve(S, lam)
    for k in range(nv):
        s = a[k]
        for i in range(m):
            s += Y[i, k] * lam[i]
        if not math.isfinite(s):
            return False
        a[k] = s
    return True


_SPATIAL = TASK_KINDS["spatial"]
#: tree_plant_step's one signature (compiled_plant_step)
_STEP_SIGNATURE = (_C_I64, _C_F64, _F64_1, _F64_1, _F64_1, numba.float64, _F64_1, numba.boolean, _F64_1, _F64_1,
                   _F64_2, _F64_1, _F64_1, numba.float64, numba.boolean, _F64_1, _F64_1, _F64_1, _F64_1,
                   numba.float64, numba.int64, numba.float64[::1], numba.float64[::1])


def compiled_plant_step():
    """tree_plant_step compiled for its one signature on the first call of this (a simulator's construction; cold
    ~20 s of CPU, then numba's cache), as compiled_forward_dynamics."""
    if not tree_plant_step.signatures:
        tree_plant_step.compile(_STEP_SIGNATURE)
        tree_plant_step.disable_compile()
    return tree_plant_step


@numba.njit(cache=True)
def tree_plant_step(I, F, q, v, tau, dt, force, friction, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps,
                    stops, lower, upper, stiffness, damping, linear, max_iter, q_out, v_out):
    """simulation.ReducedSimulator's step in tree coordinates in one call: classical RK4 on (q, v) with the stages'
    accelerations of _tree_accelerations (actuator forces tau and the generalized force ``force`` on the task
    velocity, length 0: none, held over the step; ``friction``: the joints' friction, eps its smoothing; ``stops``:
    the tree joints' end stops), then the projection onto the closures, Newton on phi with the minimum-norm steps
    of kernels.min_norm_correction, the last one (|phi| <= ``linear``) with v onto null(K), at most ``max_iter``
    evaluations (ReducedSimulator._project). I, F: the packed model of numeric_forward_dynamics; q, v a state on the
    closures. Into q_out, v_out; returns SOLVED or STEP_SINGULAR, STEP_UNREACHABLE, STEP_DIVERGED, STEP_INPUT, where
    the caller's Python step meets the same case and names it (or, diverged, returns its NaN state)."""
    k = len(MOTION_INTS)
    act = int_field(I, k)
    k = len(MOTION_FLOATS)
    inertia, armature, gravity = float_field(I, F, k), float_field(I, F, k + 1), float_field(I, F, k + 2)
    tree, _, c, _, rows, _, task, _, _, limit, _, _ = unpack_motion(I, F)
    nv, m = q.shape[0], rows.shape[0]
    if tau.shape[0] != act.shape[0] or v.shape[0] != nv or q_out.shape[0] != nv or v_out.shape[0] != nv:
        return STEP_INPUT
    if not _within_limit(tau, limit):
        return STEP_INPUT
    inertia = inertia.reshape((nv, 13))
    spatial = task == _SPATIAL
    X, J, r, K = np.empty((3, 4 * nv)), np.empty((6, nv)), np.empty(m), np.empty((m, nv))
    body, composite, M, h, t = np.empty((nv, 10)), np.empty((nv, 10)), np.empty((nv, nv)), np.empty(nv), np.empty(nv)
    vel, acc = np.empty((4, nv)), np.empty((4, nv))
    qs = np.empty(nv)
    for stage in range(4):            # ReducedSimulator._step_tree's stages: q_k = q + h v_(k-1), v_k = v + h a_(k-1)
        if stage == 0:
            qs[:] = q
            vel[0, :] = v
        else:
            rk4_stage(q, v, vel[stage - 1], acc[stage - 1], dt if stage == 3 else 0.5 * dt, qs, vel[stage])
        if not _tree_accelerations(tree, act, c, inertia, armature, gravity, qs, vel[stage], tau, force, spatial,
                                   friction, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps, stops, lower,
                                   upper, stiffness, damping, X, J, r, K, body, composite, M, h, t, acc[stage]):
            return STEP_SINGULAR
    finite = True
    for i in range(nv):
        q_out[i] = q[i] + dt / 6.0 * (vel[0, i] + 2.0 * vel[1, i] + 2.0 * vel[2, i] + vel[3, i])
        v_out[i] = v[i] + dt / 6.0 * (acc[0, i] + 2.0 * acc[1, i] + 2.0 * acc[2, i] + acc[3, i])
        finite = finite and math.isfinite(q_out[i]) and math.isfinite(v_out[i])
    if not finite:
        return STEP_DIVERGED
    parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f = tree
    for _ in range(max_iter):
        tree_closure_rows(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, q_out, X, J, r, K)
        rn = 0.0
        for i in range(m):
            rn += r[i] * r[i]
        last = math.sqrt(rn) <= linear
        if not min_norm_correction(K, r, v_out, last, q_out, v_out):
            return STEP_SINGULAR
        if last:
            return SOLVED
    return STEP_UNREACHABLE
