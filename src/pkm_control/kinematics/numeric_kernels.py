"""Compiled solves of the numeric family (numeric.py) on the compiled tree (description/kernels.tree_closure_rows):
the damped Newton projection onto phi = 0 and, for the IK of a motion, the velocities and accelerations, in one call
each, no pinocchio Data.

The arithmetic is numeric.py's (module docstring there): the start of kernels.newton_start, the Newton step of
kernels.solve_square halved until |phi| decreases, G and v of kernels.closure_velocity, a of
kernels.closure_acceleration with the bias Kdot v of the compiled tree. Square systems only (as many closure rows
as free joints). A status other than SOLVED leaves the caller's warm start untouched and sends it to numeric.py's
Python loop on the same compiled rows, which meets the same failure and names it (SingularConfigurationError,
UnreachablePoseError, ConvergenceError): the messages have one implementation.

The Newton loop, the platform motion and the packed model's readers are inlined into their callers
(inline="always"), as the tree's kernels are (description/kernels.py: the reference counts of the arrays a call
passes).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..description.kernels import tree_closure_bias, tree_closure_rows
from .kernels import (closure_acceleration, closure_velocity, l1_nearer, motion_ok, newton_move, newton_start,
                      solve_square, zyx_platform_motion)

#: solved; the free joints' columns singular (or the step beyond the limit); the line search stalls; the iteration
#: limit reached; G or a singular or beyond the limit; the pose off a planar / translational task space or at a
#: singular pitch of the ZYX rates; the inputs failed motion_ok (numeric_motion with ``validate``)
SOLVED, SINGULAR, STALLED, NOT_CONVERGED, RATES_FAILED, OFF_TASK, INPUT = 0, 1, 2, 3, 4, 5, 6
#: the entry kernels' array types: the caller's inputs any layout, read-only (whatever arrays a caller passes convert
#: to these, so the signatures compile, or load from numba's cache, at import and never in a control period); the
#: model's arrays (C-contiguous, read-only or not), the outputs and the warm start C-contiguous
_V = numba.types.Array(numba.float64, 1, "A", readonly=True)
_M = numba.types.Array(numba.float64, 2, "A", readonly=True)
_CI = numba.types.Array(numba.int64, 1, "C", readonly=True)
_CV = numba.types.Array(numba.float64, 1, "C", readonly=True)
_CM = numba.types.Array(numba.float64, 2, "C", readonly=True)
_OUT_I, _OUT_V, _OUT_M = numba.int64[::1], numba.float64[::1], numba.float64[:, ::1]
#: the compiled tree and its closures (ClosureRows.tree)
_TREE = (_CI, _CI, _CM, _CI, _CM, _CM, _CI, _CI, numba.types.Array(numba.int64, 2, "C", readonly=True), _CM)
_F8, _I8 = numba.float64, numba.int64

#: numeric_motion's codes of the task spaces (task_space.TaskSpace.kind)
TASK_KINDS = {"spatial": 0, "translation": 1, "planar": 2, "xy": 3}
#: the largest distance (m, and entries of R) of a pose from a planar or translational task space
#: (numeric.Kinematics._platform_joints)
TASK_TOL = 1e-9
#: the warm-start flags (numeric._Scratch.warm): the last solution q, its closure Jacobian K, the factors of its
#: IK columns (LU, perm)
HAS_Q, HAS_K, HAS_LU = 0, 1, 2


@numba.njit(cache=True, inline="always")
def _norm(r):
    total = 0.0
    for i in range(r.shape[0]):
        total += r[i] * r[i]
    return math.sqrt(total)


@numba.njit(cache=True, inline="always")
def _platform_motion(task, alpha_sign, R, p, twist, accel):
    """(qc, vc, ac, B, ok): the platform joints of a motion in a task space (TASK_KINDS), their rates and
    accelerations (accel of length 0: ac empty) and the rate matrix B (vc = B xdot): task_space.TaskSpace's
    platform_joint_state; ok False off a planar or translational task space (beyond TASK_TOL: the pose
    pose_from_platform_joints(qc) rebuilds differs) or at a singular pitch (|pitch| = pi/2) of a spatial one."""
    if task == 0:
        qc, vc, ac, B, singular = zyx_platform_motion(R, p, twist, accel)
        return qc, vc, ac, B, not singular
    n = twist.shape[0]
    qc, B = np.empty(n), np.eye(n)
    qc[0], qc[1] = p[0], p[1]
    c, s, off = 1.0, 0.0, 0.0        # the rotation the coordinates give back: Rz(theta) (planar) or I
    if task == 1:
        qc[2] = p[2]
    else:
        off = abs(p[2])
        if task == 2:
            theta = math.atan2(R[1, 0], R[0, 0])
            qc[2] = alpha_sign * theta
            c, s = math.cos(theta), math.sin(theta)
    back = ((c, -s, 0.0), (s, c, 0.0), (0.0, 0.0, 1.0))
    for i in range(3):
        for k in range(3):
            off = max(off, abs(R[i, k] - back[i][k]))
    return qc, twist.copy(), accel.copy(), B, off <= TASK_TOL


@numba.njit(cache=True, inline="always")
def _newton(tree, q, free, rows, bounds, tol, max_iter, limit, X, J, r, K):
    """numeric.Kinematics._project's loop (square A = K[rows, free], block diagonal by bounds) from q, in place:
    (status, iterations, |phi|) with q, r and K those of the last accepted iterate; on SOLVED the scratch X and J
    hold the tree at that q (the last evaluation)."""
    parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f = tree
    tree_closure_rows(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, q, X, J, r, K)
    rn = _norm(r)
    rc, Kc = np.empty_like(r), np.empty_like(K)
    for it in range(max_iter):
        if rn <= tol:
            return SOLVED, it, rn
        dq, ok = solve_square(K, free, rows, bounds, r, limit)
        if not ok:
            return SINGULAR, it, rn
        step = 1.0
        while True:
            qc = newton_move(q, free, dq, step)
            tree_closure_rows(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, qc, X, J, rc, Kc)
            rcn = _norm(rc)
            if rcn < rn:
                break
            step *= 0.5
            if step < 1e-6:
                return STALLED, it, rn
        q[:] = qc
        r[:] = rc
        K[:, :] = Kc
        rn = rcn
    return (SOLVED if rn <= tol else NOT_CONVERGED), max_iter, rn


@numba.njit((*_TREE, _V, _CM, _CI, _V, _CI, _CI, _CI, _F8, _F8, _F8, _I8, _OUT_V, _OUT_V, _OUT_M), cache=True)
def numeric_project(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, q0, K0, fixed, values,
                    free, rows, bounds, predict_range, limit, tol, max_iter, q, r, K):
    """numeric.Kinematics._project for a square system: q0 with q[fixed] = values, the first step predicted along
    K0's tangent (K0 0 rows: none; kernels.newton_start), then _newton; q, r and K (the caller's) receive the result.
    Returns (status, iterations, |phi|)."""
    tree = (parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f)
    q[:] = newton_start(q0, K0, K0[:0, :0], fixed[:0], fixed, values, free, rows, bounds, predict_range, limit)
    X, J = np.empty((3, 4 * q.shape[0])), np.empty((6, q.shape[0]))
    return _newton(tree, q, free, rows, bounds, tol, max_iter, limit, X, J, r, K)


@numba.njit(cache=True)
def solve_motion(tree, reference, warm, wq, wK, wLU, wperm, c, free, rows, bounds, task, alpha_sign, R, p, twist,
                 accel, validate, predict_range, limit, tol, max_iter, q, v, a, G, X, J):
    """numeric_motion's solve (arguments as there, the tree as one tuple), X and J the caller's scratch (3 x 4 nv,
    6 x nv) of kernels.tree_kinematics: on SOLVED they hold the tree at the solution q."""
    if validate and not motion_ok(R, p, twist, accel, limit):
        return INPUT, 0, 0.0
    qc, _, ac, B, ok = _platform_motion(task, alpha_sign, R, p, twist, accel)
    if not ok:
        return OFF_TASK, 0, 0.0
    parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f = tree
    nv, m = q.shape[0], wK.shape[0]
    if warm[HAS_Q] and l1_nearer(wq, reference, c, qc):
        K0 = wK if warm[HAS_K] else wK[:0]
        LU0, perm0 = (wLU, wperm) if warm[HAS_K] and warm[HAS_LU] else (wLU[:0, :0], wperm[:0])
        q[:] = newton_start(wq, K0, LU0, perm0, c, qc, free, rows, bounds, predict_range, limit)
    else:
        q[:] = newton_start(reference, wK[:0], wLU[:0, :0], wperm[:0], c, qc, free, rows, bounds, predict_range,
                            limit)
    r, K = np.empty(m), np.empty((m, nv))
    status, it, rn = _newton(tree, q, free, rows, bounds, tol, max_iter, limit, X, J, r, K)
    if status != SOLVED:
        return status, it, rn
    Gs, vs, LU, perm, ok = closure_velocity(K, c, free, rows, bounds, B, twist, limit)
    if not ok:
        return RATES_FAILED, it, rn
    G[:, :] = Gs
    v[:] = vs
    if accel.shape[0]:
        # X and J are the tree at q: on SOLVED, _newton's last evaluation was its last accepted iterate (or the start)
        bias = np.empty(m)
        tree_closure_bias(parent, col, offset, lin_rows, lin_sel, X, J, vs, bias)
        acc, ok = closure_acceleration(K, LU, perm, bounds, c, free, ac, bias, limit)
        if not ok:
            return RATES_FAILED, it, rn
        a[:] = acc
    wq[:] = q
    wK[:, :] = K
    wLU[:, :] = LU
    wperm[:] = perm
    warm[HAS_Q] = warm[HAS_K] = warm[HAS_LU] = 1
    return SOLVED, it, rn


@numba.njit((*_TREE, _CV, _OUT_I, _OUT_V, _OUT_M, _OUT_M, _OUT_I, _CI, _CI, _CI, _CI, _I8, _F8, _M, _V, _V, _V,
             numba.boolean, _F8, _F8, _F8, _I8, _OUT_V, _OUT_V, _OUT_V, _OUT_M), cache=True)
def numeric_motion(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, reference, warm, wq, wK,
                   wLU, wperm, c, free, rows, bounds, task, alpha_sign, R, p, twist, accel, validate, predict_range,
                   limit, tol, max_iter, q, v, a, G):
    """The IK of a motion (numeric.Kinematics._motion, square closures) in one call: with ``validate`` first the
    numeric checks of the inputs (kernels.motion_ok, INPUT where they fail), the platform joints qc, their
    accelerations ac and B of the pose (R, p), twist and accel (length 0: none) in the task space ``task``
    (_platform_motion), the start (the warm start wq, with its K wK and factors wLU, wperm as ``warm`` flags them,
    when its platform joints c are nearer qc than the reference's; numeric.Kinematics._start), the projection with
    the platform joints c held at qc (A = K[rows, free] block diagonal by bounds), G = [B; -A^-1 K_c B] and
    v = G twist (kernels.closure_velocity), with accel a from K a + Kdot v = 0 (kernels.closure_acceleration; the
    bias from the compiled tree). Into the caller's q, v, a, G; on SOLVED the warm start becomes this solution (q,
    K, the factors of A).
    Returns (status, iterations, |phi|)."""
    tree = (parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f)
    nv = q.shape[0]
    X, J = np.empty((3, 4 * nv)), np.empty((6, nv))
    # accel as a C array: solve_motion then has the argument types of dynamics.numeric_kernels.numeric_forward_dynamics'
    # call, and compiles once for both
    return solve_motion(tree, reference, warm, wq, wK, wLU, wperm, c, free, rows, bounds, task, alpha_sign, R, p,
                        twist, accel.copy(), validate, predict_range, limit, tol, max_iter, q, v, a, G, X, J)


# ---------------------------------------------------------------- packed models: one compiled call, few arguments

#: the fields of a packed motion model (pack, unpack_motion) in their order: integer arrays, then float arrays;
#: ``settings`` (task kind, iteration limit) and (alpha_sign, predict range, magnitude limit, tolerance)
MOTION_INTS = ("parent", "kind", "col", "lin_rows", "lin_sel", "cpl", "c", "free", "rows", "bounds", "settings")
MOTION_FLOATS = ("frame", "offset", "mask", "cpl_f", "reference", "settings")


def pack(ints, floats):
    """(I, F): the arrays ``ints`` (integer) and ``floats`` flattened into one int64 and one float64 array (read-only)
    for a compiled call with few arguments (a numba call costs ~0.1 us an argument): I = [k, the k + 1 bounds of
    the integer arrays in I, the bounds of the float arrays in F, the integer arrays], F the float arrays;
    int_field / float_field read array i back (flat)."""
    k, nf = len(ints), len(floats)
    head = 1 + (k + 1) + (nf + 1)
    ib = head + np.cumsum([0] + [np.size(x) for x in ints])
    fb = np.cumsum([0] + [np.size(x) for x in floats])
    I = np.concatenate([[k], ib, fb, *[np.ravel(x) for x in ints]]).astype(np.int64)
    F = np.concatenate([np.ravel(np.asarray(x, float)) for x in floats]) if floats else np.zeros(0)
    for arr in (I, F):
        arr.setflags(write=False)
    return I, F


@numba.njit(cache=True, inline="always")
def int_field(I, i):
    """Integer array i of pack's I (flat)."""
    return I[I[1 + i]:I[2 + i]]


@numba.njit(cache=True, inline="always")
def float_field(I, F, i):
    """Float array i of pack's F (flat)."""
    k = I[0]
    return F[I[2 + k + i]:I[3 + k + i]]


@numba.njit(cache=True, inline="always")
def unpack_motion(I, F):
    """The arguments of solve_motion from a packed motion model (MOTION_INTS, MOTION_FLOATS): (tree, reference, c,
    free, rows, bounds, task, alpha_sign, predict_range, limit, tol, max_iter)."""
    parent, col, cpl = int_field(I, 0), int_field(I, 2), int_field(I, 5)
    n, frames, couplings = parent.shape[0], col.shape[0], cpl.shape[0] // 3      # n = nv: 1-DoF joints
    tree = (parent, int_field(I, 1), float_field(I, F, 0).reshape((n, 15)), col,
            float_field(I, F, 1).reshape((frames, 4)), float_field(I, F, 2).reshape((frames, n)), int_field(I, 3),
            int_field(I, 4), cpl.reshape((couplings, 3)), float_field(I, F, 3).reshape((couplings, 2)))
    si, sf = int_field(I, 10), float_field(I, F, 5)
    return (tree, float_field(I, F, 4), int_field(I, 6), int_field(I, 7), int_field(I, 8), int_field(I, 9),
            si[0], sf[0], sf[1], sf[2], sf[3], si[1])


@numba.njit(cache=True, inline="always")
def unpack_warm(iwork, work, nv, n_rows, n_free):
    """(warm, q, K, LU, perm): the warm start of a numeric solve in its two work arrays (numeric._Scratch): iwork =
    [the flags HAS_Q, HAS_K, HAS_LU, perm], work = [q, K (rows x nv), LU (free x free)]."""
    e = nv + n_rows * nv
    return (iwork[:3], work[:nv], work[nv:e].reshape((n_rows, nv)), work[e:e + n_free * n_free].reshape((n_free,
            n_free)), iwork[3:3 + n_free])
