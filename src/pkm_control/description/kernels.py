"""Compiled closure rows: the point-closure residual and the closure Jacobian K of ClosureRows (loader.py) in one
call.

A Newton step of the numeric kinematics evaluates the closures once or twice; as vectorized numpy the frame
positions and K cost about 30 numpy calls (~25 us on a hexapod, four times pinocchio's computeJointJacobians),
compiled one call of ~1 us. The kernel is THE implementation of these rows (ClosureRows calls nothing else for
them); the tests check K against finite differences of the residual and against pinocchio's frame Jacobians.
"""

from __future__ import annotations

import numba
import numpy as np


@numba.njit(cache=True)
def _frame_positions(X, scale, col, offset):
    """(frames, 3) world positions of the closure frames, p_f = p_j + R_j t_f, from X (3 x 4 (joints - 1)):
    X[:, col_f] = p_j / scale, X[:, col_f + 1 : col_f + 4] = R_j / scale for the frame's parent joint j
    (loader.ClosureRows.placements), offset (frames, 4) the frame origins t_f (homogeneous) in j's frame."""
    F = col.shape[0]
    P = np.empty((F, 3))
    for f in range(F):
        b = col[f]
        for i in range(3):
            P[f, i] = scale * (X[i, b] + X[i, b + 1] * offset[f, 0] + X[i, b + 2] * offset[f, 1]
                               + X[i, b + 3] * offset[f, 2])
    return P


@numba.njit(cache=True)
def _pair_axis(sel):
    """A row's selector sel = 3 pair + axis: the row of its frame a in P (frame b the next), the axis and the
    two others in cyclic order (for (omega x p)[ax] = omega[a1] p[a2] - omega[a2] p[a1])."""
    ax = sel % 3
    return 2 * (sel // 3), ax, (ax + 1) % 3, (ax + 2) % 3


@numba.njit(cache=True)
def _angular_rows(out, W, mask, ang_rows, ang_sel):
    """Fill the angular rows of out (K from J, Kdot from dJ): the difference of the two frames' mask_k W_w[:, k]."""
    for i in range(ang_rows.shape[0]):
        fa, ax, _, _ = _pair_axis(ang_sel[i])
        row = ang_rows[i]
        for k in range(out.shape[1]):
            out[row, k] = (mask[fa, k] - mask[fa + 1, k]) * W[3 + ax, k]


@numba.njit(cache=True)
def closure_rows(X, scale, J, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, r, K):
    """r and K of the point and frame closures from one tree pass, into the caller's zeroed r (n_rows) and K
    (n_rows x nv, or 0 x nv: no K), arrays it allocates for ~0.1 us where returning them would box them for ~0.4.

    X, scale, col: the placements of the closure frames' parent joints (_frame_positions); J: data.J (6 x nv, world
    joint Jacobian: columns the spatial velocity at the world origin) or 0 x nv (no K); offset: (frames, 4) the
    frame origins in homogeneous coordinates of their parent joints; mask: (frames, nv) the columns of the joints
    supporting each frame. Frames come in pairs (a, b) per closure.

    Writes, from the frame positions p_f = p_j + R_j t_f: r the rows lin_rows = (p_a - p_b)[axis], with
    lin_sel = 3 pair + axis (the other rows 0: the caller fills frame-closure rotations and couplings); K: lin rows
    the velocity difference of the two origins, v_f = mask (v_O + omega x p_f), ang rows (ang_sel likewise) the
    angular velocity difference (K 0 x nv without J; coupling rows 0).
    """
    nv = mask.shape[1]
    P = _frame_positions(X, scale, col, offset)
    for i in range(lin_rows.shape[0]):
        fa, ax, _, _ = _pair_axis(lin_sel[i])
        r[lin_rows[i]] = P[fa, ax] - P[fa + 1, ax]
    if K.shape[0] == 0:
        return
    for i in range(lin_rows.shape[0]):
        fa, ax, a1, a2 = _pair_axis(lin_sel[i])
        row = lin_rows[i]
        for k in range(nv):
            wa1, wa2 = J[3 + a1, k], J[3 + a2, k]
            va = J[ax, k] + wa1 * P[fa, a2] - wa2 * P[fa, a1]
            vb = J[ax, k] + wa1 * P[fa + 1, a2] - wa2 * P[fa + 1, a1]
            K[row, k] = mask[fa, k] * va - mask[fa + 1, k] * vb
    _angular_rows(K, J, mask, ang_rows, ang_sel)


@numba.njit(cache=True)
def closure_rows_dot(X, scale, J, dJ, v, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, n_rows):
    """Kdot = dK/dt along the tree velocity v (rows and inputs as closure_rows; dJ = data.dJ of
    computeJointJacobiansTimeVariation, the time derivative of data.J): ``_closure_dot``'s matrix."""
    Kd = np.zeros((n_rows, mask.shape[1]))
    _closure_dot(X, scale, J, dJ, v, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, False, Kd)
    return Kd


@numba.njit(cache=True)
def closure_rows_bias(X, scale, J, dJ, v, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, n_rows):
    """Kdot v, the closures' bias at acceleration level (K a + Kdot v = 0), without forming Kdot (inputs as
    closure_rows_dot): ``_closure_dot``'s rows times v, accumulated as they are computed."""
    b = np.zeros((n_rows, 1))
    _closure_dot(X, scale, J, dJ, v, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, True, b)
    return b[:, 0]


@numba.njit(cache=True)
def _closure_dot(X, scale, J, dJ, v, col, offset, mask, lin_rows, lin_sel, ang_rows, ang_sel, times_v, out):
    """Kdot along v into out (n_rows x nv, zeros), or with ``times_v`` Kdot v into out (n_rows x 1, zeros).

    Differentiating closure_rows' v_f = sum_k mask_k (J_v[:, k] + J_w[:, k] x p_f) v_k gives the column
    mask_k (dJ_v[:, k] + dJ_w[:, k] x p_f + J_w[:, k] x pdot_f) with pdot_f = v_f; an angular row's column is
    the difference of mask_k dJ_w[:, k]. Coupling rows are constant (0).
    """
    F = col.shape[0]
    nv = mask.shape[1]
    P = _frame_positions(X, scale, col, offset)
    Pd = np.zeros((F, 3))
    for f in range(F):
        for k in range(nv):
            if mask[f, k] != 0.0:
                for ax in range(3):
                    a1, a2 = (ax + 1) % 3, (ax + 2) % 3
                    Pd[f, ax] += (J[ax, k] + J[3 + a1, k] * P[f, a2] - J[3 + a2, k] * P[f, a1]) * v[k]
    for i in range(lin_rows.shape[0]):
        fa, ax, a1, a2 = _pair_axis(lin_sel[i])
        row = lin_rows[i]
        for k in range(nv):
            da = (dJ[ax, k] + dJ[3 + a1, k] * P[fa, a2] - dJ[3 + a2, k] * P[fa, a1]
                  + J[3 + a1, k] * Pd[fa, a2] - J[3 + a2, k] * Pd[fa, a1])
            db = (dJ[ax, k] + dJ[3 + a1, k] * P[fa + 1, a2] - dJ[3 + a2, k] * P[fa + 1, a1]
                  + J[3 + a1, k] * Pd[fa + 1, a2] - J[3 + a2, k] * Pd[fa + 1, a1])
            entry = mask[fa, k] * da - mask[fa + 1, k] * db
            if times_v:
                out[row, 0] += entry * v[k]
            else:
                out[row, k] = entry
    if not times_v:
        _angular_rows(out, dJ, mask, ang_rows, ang_sel)
        return
    for i in range(ang_rows.shape[0]):
        fa, ax, _, _ = _pair_axis(ang_sel[i])
        row = ang_rows[i]
        for k in range(nv):
            out[row, 0] += (mask[fa, k] - mask[fa + 1, k]) * dJ[3 + ax, k] * v[k]
