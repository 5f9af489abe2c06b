"""Compiled closure rows: the point-closure residual and the closure Jacobian K of ClosureRows (loader.py) in one
call.

A Newton step of the numeric kinematics evaluates the closures once or twice; as vectorized numpy the frame
positions and K cost about 30 numpy calls (~25 us on a hexapod, four times pinocchio's computeJointJacobians),
compiled one call of ~1 us. The kernel is THE implementation of these rows (ClosureRows calls nothing else for
them); the tests check K against finite differences of the residual and against pinocchio's frame Jacobians.

The tree's kernels that the numeric family's solves call (tree_closure_rows and what it calls, the bias, crba and
rnea) are inlined into their compiled callers (inline="always"): a call between compiled functions increments and
decrements the reference count of each array it passes, atomic operations that numba's pruning removes only within
one function; inlined, the numeric forward dynamics (dynamics/numeric_kernels.py) runs ~0.6 us (of ~8) faster on
the 3-DoF robots (``pkm bench dynamics``). Called from Python they are ordinary compiled functions.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True, inline="always")
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


@numba.njit(cache=True, inline="always")
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


#: tree_kinematics' joint types: a revolute joint turns about its axis, a prismatic one slides along it
REVOLUTE, PRISMATIC = 0, 1


@numba.njit(cache=True, inline="always")
def tree_kinematics(parent, kind, frame, q, X, J):
    """Forward kinematics of a tree of 1-DoF joints (joint j = pinocchio's joint j + 1, its q and v index j) in one
    pass from the root: the world placements into X (3 x 4 n: X[:, 4 j] = p_j, X[:, 4 j + 1 : 4 j + 4] = R_j, the
    layout of ClosureRows.placements with scale 1) and, when J has 6 rows, the world joint Jacobian into J (6 x n,
    pinocchio's data.J of computeJointJacobians: column j the spatial velocity (linear, angular) at the world origin
    of a unit rate of joint j).

    parent[j]: the parent joint (-1: the world; parents precede their children); kind[j]: REVOLUTE or PRISMATIC;
    frame[j]: the joint placement in its parent, rotation row-major (9), translation (3), then the unit axis a_j (3)
    in the joint frame. With M_j0 = M_parent M_placement (R_0, p_0): a revolute joint gives R_j = R_0 Rot(a, q_j)
    (Rodrigues: c I + s [a]x + (1 - c) a a^T), p_j = p_0 and the column (p_j x w, w), w = R_0 a = R_j a; a prismatic
    one R_j = R_0, p_j = p_0 + w q_j and the column (w, 0)."""
    n = q.shape[0]
    R0 = np.empty((3, 3))
    p0 = np.empty(3)
    for j in range(n):
        f = frame[j]
        b = parent[j]
        if b < 0:
            for i in range(3):
                p0[i] = f[9 + i]
                for k in range(3):
                    R0[i, k] = f[3 * i + k]
        else:
            c = 4 * b
            for i in range(3):
                p0[i] = X[i, c] + X[i, c + 1] * f[9] + X[i, c + 2] * f[10] + X[i, c + 3] * f[11]
                for k in range(3):
                    R0[i, k] = X[i, c + 1] * f[k] + X[i, c + 2] * f[3 + k] + X[i, c + 3] * f[6 + k]
        ax, ay, az = f[12], f[13], f[14]
        wx = R0[0, 0] * ax + R0[0, 1] * ay + R0[0, 2] * az
        wy = R0[1, 0] * ax + R0[1, 1] * ay + R0[1, 2] * az
        wz = R0[2, 0] * ax + R0[2, 1] * ay + R0[2, 2] * az
        d = 4 * j
        if kind[j] == REVOLUTE:
            s, cq = math.sin(q[j]), math.cos(q[j])
            t = 1.0 - cq
            # Rot(a, q) = c I + s [a]x + (1 - c) a a^T
            E = ((cq + t * ax * ax, t * ax * ay - s * az, t * ax * az + s * ay),
                 (t * ay * ax + s * az, cq + t * ay * ay, t * ay * az - s * ax),
                 (t * az * ax - s * ay, t * az * ay + s * ax, cq + t * az * az))
            for i in range(3):
                X[i, d] = p0[i]
                for k in range(3):
                    X[i, d + 1 + k] = R0[i, 0] * E[0][k] + R0[i, 1] * E[1][k] + R0[i, 2] * E[2][k]
            if J.shape[0] == 6:
                J[0, j] = p0[1] * wz - p0[2] * wy
                J[1, j] = p0[2] * wx - p0[0] * wz
                J[2, j] = p0[0] * wy - p0[1] * wx
                J[3, j], J[4, j], J[5, j] = wx, wy, wz
        else:
            X[0, d], X[1, d], X[2, d] = p0[0] + wx * q[j], p0[1] + wy * q[j], p0[2] + wz * q[j]
            for i in range(3):
                for k in range(3):
                    X[i, d + 1 + k] = R0[i, k]
            if J.shape[0] == 6:
                J[0, j], J[1, j], J[2, j] = wx, wy, wz
                J[3, j] = J[4, j] = J[5, j] = 0.0


@numba.njit(cache=True, inline="always")
def tree_closure_rows(parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f, q, X, J, r, K):
    """The closures' residual r and K (K 0 x n: none) at q from the compiled tree (tree_kinematics into the scratch X
    and J): closure_rows' point rows, then the coupling rows cpl[i] = (row, dependent, reference) with
    cpl_f[i] = (ratio, offset): r = q_dep - ratio q_ref - offset, K row e_dep - ratio e_ref. r and K are written
    whole (a model without frame closures: CompiledTree)."""
    want_k = K.shape[0] > 0
    tree_kinematics(parent, kind, frame, q, X, J if want_k else J[:0])
    r[:] = 0.0
    if want_k:
        K[:, :] = 0.0
    closure_rows(X, 1.0, J, col, offset, mask, lin_rows, lin_sel, lin_rows[:0], lin_sel[:0], r, K)
    for i in range(cpl.shape[0]):
        row, dep, ref = cpl[i, 0], cpl[i, 1], cpl[i, 2]
        r[row] = q[dep] - cpl_f[i, 0] * q[ref] - cpl_f[i, 1]
        if want_k:
            K[row, dep] += 1.0
            K[row, ref] -= cpl_f[i, 0]


@numba.njit(cache=True, inline="always")
def _column_times(J, j, x):
    """Column j of the 6 x n J times x, as six scalars (a joint's spatial velocity S_j v_j)."""
    return J[0, j] * x, J[1, j] * x, J[2, j] * x, J[3, j] * x, J[4, j] * x, J[5, j] * x


@numba.njit(cache=True, inline="always")
def _row6(V, b):
    """Row b of an n x 6 array as six scalars."""
    return V[b, 0], V[b, 1], V[b, 2], V[b, 3], V[b, 4], V[b, 5]


@numba.njit(cache=True, inline="always")
def tree_closure_bias(parent, col, offset, lin_rows, lin_sel, X, J, v, out):
    """Kdot v into out (rows of tree_closure_rows, coupling rows 0) from that call's X and J at q and the rates v, in
    O(joints + frames): the bodies' spatial velocities V_j = V_parent + J[:, j] v_j and bias accelerations (at zero
    joint accelerations) A_j = sum over the supporting joints k of dJ_k v_k = A_parent + V_parent x J[:, j] v_j
    (dJ_k = V_k x J[:, k], the world column turning with its body; x the motion cross product (v, w) x (v', w') =
    (w x v' + v x w', w x w')), both at the world origin; a closure frame's origin p_f on body j then moves at
    v_f = V_j,lin + w_j x p_f with the bias acceleration a_f = A_j,lin + A_j,ang x p_f + w_j x v_f, and a point
    row's bias is (a_a - a_b)[axis]. The tests hold it to ClosureRows.bias on pinocchio's data.dJ."""
    n = v.shape[0]
    V, A = np.zeros((n, 6)), np.zeros((n, 6))
    for j in range(n):
        b = parent[j]
        s0, s1, s2, s3, s4, s5 = _column_times(J, j, v[j])
        if b >= 0:
            lx, ly, lz, wx, wy, wz = _row6(V, b)
            A[j, 0] = A[b, 0] + wy * s2 - wz * s1 + ly * s5 - lz * s4
            A[j, 1] = A[b, 1] + wz * s0 - wx * s2 + lz * s3 - lx * s5
            A[j, 2] = A[b, 2] + wx * s1 - wy * s0 + lx * s4 - ly * s3
            A[j, 3] = A[b, 3] + wy * s5 - wz * s4
            A[j, 4] = A[b, 4] + wz * s3 - wx * s5
            A[j, 5] = A[b, 5] + wx * s4 - wy * s3
            V[j, 0], V[j, 1], V[j, 2] = lx + s0, ly + s1, lz + s2
            V[j, 3], V[j, 4], V[j, 5] = wx + s3, wy + s4, wz + s5
        else:
            V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5] = s0, s1, s2, s3, s4, s5
    P = _frame_positions(X, 1.0, col, offset)
    F = col.shape[0]
    acc = np.empty((F, 3))
    for f in range(F):
        j = col[f] // 4
        px, py, pz = P[f, 0], P[f, 1], P[f, 2]
        wx, wy, wz = V[j, 3], V[j, 4], V[j, 5]
        vx = V[j, 0] + wy * pz - wz * py
        vy = V[j, 1] + wz * px - wx * pz
        vz = V[j, 2] + wx * py - wy * px
        acc[f, 0] = A[j, 0] + A[j, 4] * pz - A[j, 5] * py + wy * vz - wz * vy
        acc[f, 1] = A[j, 1] + A[j, 5] * px - A[j, 3] * pz + wz * vx - wx * vz
        acc[f, 2] = A[j, 2] + A[j, 3] * py - A[j, 4] * px + wx * vy - wy * vx
    out[:] = 0.0
    for i in range(lin_rows.shape[0]):
        fa, ax, _, _ = _pair_axis(lin_sel[i])
        out[lin_rows[i]] = acc[fa, ax] - acc[fa + 1, ax]


@numba.njit(cache=True, inline="always")
def tree_body_inertias(X, inertia, I):
    """Each joint's body inertia in world coordinates at the world origin, into I (n x 10): mass m, first moment
    h = m c (c the world centre of mass) and the rotational inertia about the world origin I_O = R I_c R^T
    + m (|c|^2 E - c c^T) (its upper triangle row by row: xx, xy, xz, yy, yz, zz), from the placements X of
    tree_kinematics and ``inertia`` (n x 13: pinocchio's model.inertias[j + 1], mass, lever (the centre of mass in
    the joint frame), the inertia about the centre of mass in the joint frame, row-major 3 x 3;
    loader.tree_inertias)."""
    for j in range(inertia.shape[0]):
        d = 4 * j
        m = inertia[j, 0]
        cx = X[0, d] + X[0, d + 1] * inertia[j, 1] + X[0, d + 2] * inertia[j, 2] + X[0, d + 3] * inertia[j, 3]
        cy = X[1, d] + X[1, d + 1] * inertia[j, 1] + X[1, d + 2] * inertia[j, 2] + X[1, d + 3] * inertia[j, 3]
        cz = X[2, d] + X[2, d + 1] * inertia[j, 1] + X[2, d + 2] * inertia[j, 2] + X[2, d + 3] * inertia[j, 3]
        cc = cx * cx + cy * cy + cz * cz
        I[j, 0], I[j, 1], I[j, 2], I[j, 3] = m, m * cx, m * cy, m * cz
        e = 4
        for i in range(3):
            ci = cx if i == 0 else (cy if i == 1 else cz)
            for k in range(i, 3):
                ck = cx if k == 0 else (cy if k == 1 else cz)
                # (R I_c R^T)[i, k] = sum_ab R[i, a] I_c[a, b] R[k, b]
                rot = 0.0
                for a in range(3):
                    t = 0.0
                    for b in range(3):
                        t += inertia[j, 4 + 3 * a + b] * X[k, d + 1 + b]
                    rot += X[i, d + 1 + a] * t
                I[j, e] = rot + m * ((cc if i == k else 0.0) - ci * ck)
                e += 1


@numba.njit(cache=True, inline="always")
def _inertia_times(I, j, x0, x1, x2, x3, x4, x5, out):
    """out = I_j x for the spatial inertia I[j] of tree_body_inertias and a motion x = (linear at the origin,
    angular): (m x_lin + x_ang x h, h x x_lin + I_O x_ang) (the momentum of the motion x)."""
    m, hx, hy, hz = I[j, 0], I[j, 1], I[j, 2], I[j, 3]
    out[0] = m * x0 + x4 * hz - x5 * hy
    out[1] = m * x1 + x5 * hx - x3 * hz
    out[2] = m * x2 + x3 * hy - x4 * hx
    out[3] = hy * x2 - hz * x1 + I[j, 4] * x3 + I[j, 5] * x4 + I[j, 6] * x5
    out[4] = hz * x0 - hx * x2 + I[j, 5] * x3 + I[j, 7] * x4 + I[j, 8] * x5
    out[5] = hx * x1 - hy * x0 + I[j, 6] * x3 + I[j, 8] * x4 + I[j, 9] * x5


@numba.njit(cache=True, inline="always")
def tree_mass_matrix(parent, J, body, armature, C, M):
    """The joint-space mass matrix of the tree (pinocchio's crba with model.armature on the diagonal, both triangles)
    into M (n x n), from the world joint Jacobian J of tree_kinematics at q and the bodies' inertias there (body:
    tree_body_inertias): the composite-rigid-body algorithm in world coordinates (Featherstone, Rigid Body Dynamics
    Algorithms, sec. 6.2, every spatial quantity at the world origin), the composite inertia C_j of the subtree of
    joint j (its bodies' inertias summed from the leaves; C: n x 10 scratch), then M[i, j] = M[j, i] = S_i . (C_j S_j)
    for j and each of its ancestors i, S_j = J[:, j]."""
    n = parent.shape[0]
    C[:, :] = body
    for j in range(n - 1, -1, -1):            # parents precede their children
        b = parent[j]
        if b >= 0:
            for e in range(10):
                C[b, e] += C[j, e]
    M[:, :] = 0.0                             # the entries of joints on different branches
    F = np.empty(6)
    for j in range(n):
        _inertia_times(C, j, J[0, j], J[1, j], J[2, j], J[3, j], J[4, j], J[5, j], F)
        i = j
        while i >= 0:
            s = 0.0
            for e in range(6):
                s += J[e, i] * F[e]
            M[i, j] = s
            M[j, i] = s
            i = parent[i]
        M[j, j] += armature[j]


@numba.njit(cache=True, inline="always")
def tree_inverse_dynamics(parent, J, body, armature, gravity, v, a, tau):
    """The joint forces of the tree's inverse dynamics, pinocchio's rnea(q, v, a) (gravity and model.armature
    included), into tau (n), from the world joint Jacobian J of tree_kinematics at q and the bodies' inertias there
    (body: tree_body_inertias): the recursive Newton-Euler algorithm in world coordinates (Featherstone sec. 5.3,
    every spatial quantity at the world origin). Outward, the body velocities V_j = V_parent + S_j v_j and
    accelerations A_j = A_parent + S_j a_j + V_j x S_j v_j from A_base = (-g, 0) (gravity as an upward acceleration
    of the base), the body forces f_j = I_j A_j + V_j x* I_j V_j; inward, tau_j = S_j . f_j + armature_j a_j with
    f_parent += f_j. x: the motion cross product (v, w) x (v', w') = (w x v' + v x w', w x w'), x* its dual
    (v, w) x* (f, n) = (w x f, w x n + v x f)."""
    n = parent.shape[0]
    V, A, F = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    h = np.empty(6)
    for j in range(n):
        b = parent[j]
        s0, s1, s2, s3, s4, s5 = _column_times(J, j, v[j])
        if b >= 0:
            lx, ly, lz, wx, wy, wz = _row6(V, b)
            ax, ay, az, bx, by, bz = A[b, 0], A[b, 1], A[b, 2], A[b, 3], A[b, 4], A[b, 5]
        else:
            lx = ly = lz = wx = wy = wz = 0.0
            ax, ay, az, bx, by, bz = -gravity[0], -gravity[1], -gravity[2], 0.0, 0.0, 0.0
        # V_j x S_j v_j = V_parent x S_j v_j (S_j v_j x S_j v_j = 0)
        A[j, 0] = ax + J[0, j] * a[j] + wy * s2 - wz * s1 + ly * s5 - lz * s4
        A[j, 1] = ay + J[1, j] * a[j] + wz * s0 - wx * s2 + lz * s3 - lx * s5
        A[j, 2] = az + J[2, j] * a[j] + wx * s1 - wy * s0 + lx * s4 - ly * s3
        A[j, 3] = bx + J[3, j] * a[j] + wy * s5 - wz * s4
        A[j, 4] = by + J[4, j] * a[j] + wz * s3 - wx * s5
        A[j, 5] = bz + J[5, j] * a[j] + wx * s4 - wy * s3
        vx, vy, vz, wx, wy, wz = lx + s0, ly + s1, lz + s2, wx + s3, wy + s4, wz + s5
        V[j, 0], V[j, 1], V[j, 2], V[j, 3], V[j, 4], V[j, 5] = vx, vy, vz, wx, wy, wz
        if body[j, 0] == 0.0 and body[j, 4] == 0.0 and body[j, 7] == 0.0 and body[j, 9] == 0.0:
            F[j, :] = 0.0                    # a massless body (I_O, positive semidefinite, has a zero diagonal)
            continue
        _inertia_times(body, j, A[j, 0], A[j, 1], A[j, 2], A[j, 3], A[j, 4], A[j, 5], F[j])
        _inertia_times(body, j, vx, vy, vz, wx, wy, wz, h)
        F[j, 0] += wy * h[2] - wz * h[1]
        F[j, 1] += wz * h[0] - wx * h[2]
        F[j, 2] += wx * h[1] - wy * h[0]
        F[j, 3] += wy * h[5] - wz * h[4] + vy * h[2] - vz * h[1]
        F[j, 4] += wz * h[3] - wx * h[5] + vz * h[0] - vx * h[2]
        F[j, 5] += wx * h[4] - wy * h[3] + vx * h[1] - vy * h[0]
    for j in range(n - 1, -1, -1):
        s = armature[j] * a[j]
        for e in range(6):
            s += J[e, j] * F[j, e]
        tau[j] = s
        b = parent[j]
        if b >= 0:
            for e in range(6):
                F[b, e] += F[j, e]
