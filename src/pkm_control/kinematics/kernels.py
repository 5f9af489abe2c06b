"""Compiled kernels the kinematics families share: the platform's ZYX motion and forces of a spatial task, the input
checks (motion_ok), the hexapods' platform joints, and the numeric family's block-diagonal LU solves of the closures.

Each analytic family's own kernels are in a module of its own (hexapod_ups_kernels, hexapod_pus_kernels,
delta_kernels, planar_redundant_kernels), imported by its family module: a kernel with an eager signature loads from
numba's cache at its module's import (3-25 ms each), so a process pays for its robot's family only (the node's
start-up, issue 21 par. 7). As Python the leg loops cost 5-40 us a call, compiled 1-2 us (call overhead included):
this keeps the warm FK inside its budget and the generic dynamics engine (every state needs q, v, a and G) within a
few times pinocchio's rnea (issue 21 par. 7). The kernels are THE implementation of these formulas (the families call
nothing else for them); the tests check them against finite differences, the numeric family and the papers'
formulations.
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def _norm1(vec):
    total = 0.0
    for k in range(vec.shape[0]):
        total += abs(vec[k])
    return total


@numba.njit(cache=True)
def rodrigues(x, y, z):
    """exp([w]x) of the rotation vector w = (x, y, z), Rodrigues' formula I + a [w]x + b [w]x^2 with a = sin t / t,
    b = (1 - cos t) / t^2 (t = |w|; their series below |w|^2 = 1e-16), as its nine entries row by row."""
    t2 = x * x + y * y + z * z
    if t2 < 1e-16:
        a, b = 1.0 - t2 / 6.0, 0.5 - t2 / 24.0
    else:
        t = math.sqrt(t2)
        a, b = math.sin(t) / t, (1.0 - math.cos(t)) / t2
    return (1.0 - b * (y * y + z * z), b * x * y - a * z, b * x * z + a * y,
            b * x * y + a * z, 1.0 - b * (x * x + z * z), b * y * z - a * x,
            b * x * z - a * y, b * y * z + a * x, 1.0 - b * (x * x + y * y))


#: any float64 array converts to these (read-only, any layout): the signatures below compile (or load from numba's
#: cache) at import, never in a control period, whatever arrays a caller passes
_V = numba.types.Array(numba.float64, 1, "A", readonly=True)
_M = numba.types.Array(numba.float64, 2, "A", readonly=True)


@numba.njit(cache=True)
def rigid_point_motion(bx, by, bz, vx, vy, vz, wx, wy, wz, ax, ay, az, wdx, wdy, wdz):
    """Velocity and acceleration of the point of a rigid body at b from its reference point (base coordinates),
    the body's twist (v, w) and acceleration (a, wd) given at that reference point (Abdellatif eq. 2-3):
    v_B = v + w x b, a_B = a + wd x b + w x (w x b). Returns the six scalars of v_B, then of a_B."""
    cx, cy, cz = wy * bz - wz * by, wz * bx - wx * bz, wx * by - wy * bx
    return (vx + cx, vy + cy, vz + cz,
            ax + wdy * bz - wdz * by + wy * cz - wz * cy,
            ay + wdz * bx - wdx * bz + wz * cx - wx * cz,
            az + wdx * by - wdy * bx + wx * cy - wy * cx)


@numba.njit((_M, _V, _V, _V, numba.float64), cache=True)
def motion_ok(R, p, twist, accel, limit):
    """The numeric checks of ParallelKinematics.validate on a float64 pose, twist and acceleration (length 0:
    absent), in scalar arithmetic: R finite with |R^T R - I| <= 1e-9 and det R > 0, |p|_1, |twist|_1 and
    |accel|_1 within ``limit`` (errors.MAGNITUDE_LIMIT; a NaN fails). False sends the caller to the generic
    validation, which decides and names what is wrong."""
    a, b, c, d, e, f, g, h, i = R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2], R[2, 0], R[2, 1], R[2, 2]
    if not math.isfinite(a + b + c + d + e + f + g + h + i):
        return False
    if not abs(p[0]) + abs(p[1]) + abs(p[2]) <= limit:
        return False
    if not (_norm1(twist) <= limit and _norm1(accel) <= limit):
        return False
    err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0), abs(c * c + f * f + i * i - 1.0),
              abs(a * b + d * e + g * h), abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
    return err <= 1e-9 and a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g) > 0.0


@numba.njit((_M, _V, _V, _V), cache=True)
def zyx_platform_motion(R, p, twist, accel):
    """The platform joints of a spatial task (x y z, then ZYX Euler yaw pitch roll: R = Rz(yaw) Ry(pitch) Rx(roll))
    of a platform motion: (qp, vp, ap, B, singular). omega = E [yaw' pitch' roll'] gives vp = B xdot,
    E e'' = omegadot - Edot e' gives ap; B = diag(I, E^-1) (task_space.euler_rate_matrix_inverse). twist / accel
    of length 0: vp / ap empty. ``singular``: |pitch| = pi/2 (cos(pitch) < 1e-9), where E is singular: then only
    qp is computed (B, vp, ap zero / empty)."""
    r00, r10, r20, r21, r22 = R[0, 0], R[1, 0], R[2, 0], R[2, 1], R[2, 2]
    cp = math.hypot(r00, r10)
    qp = np.empty(6)
    qp[0], qp[1], qp[2] = p[0], p[1], p[2]
    qp[3], qp[4], qp[5] = math.atan2(r10, r00), math.atan2(-r20, cp), math.atan2(r21, r22)
    rates, accs = twist.shape[0] == 6, accel.shape[0] == 6
    B = np.zeros((6, 6))
    if cp < 1e-9:
        return qp, np.empty(0), np.empty(0), B, True
    cy, sy, sp = r00 / cp, r10 / cp, -r20
    B[0, 0] = B[1, 1] = B[2, 2] = 1.0
    B[3, 3], B[3, 4], B[3, 5] = sp * cy / cp, sp * sy / cp, 1.0     # yaw'
    B[4, 3], B[4, 4] = -sy, cy                                      # pitch'
    B[5, 3], B[5, 4] = cy / cp, sy / cp                             # roll'
    vp = np.empty(6 if rates else 0)
    ap = np.empty(6 if rates and accs else 0)
    if not rates:
        return qp, vp, ap, B, False
    wx, wy, wz = twist[3], twist[4], twist[5]
    rolld = (cy * wx + sy * wy) / cp
    pitchd = -sy * wx + cy * wy
    yawd = wz + sp * rolld
    vp[0], vp[1], vp[2], vp[3], vp[4], vp[5] = twist[0], twist[1], twist[2], yawd, pitchd, rolld
    if accs:
        # E e'' = wd - E' e'
        gx = accel[3] - (-cy * yawd * pitchd + (-sy * cp * yawd - cy * sp * pitchd) * rolld)
        gy = accel[4] - (-sy * yawd * pitchd + (cy * cp * yawd - sy * sp * pitchd) * rolld)
        gz = accel[5] + cp * pitchd * rolld
        rolldd = (cy * gx + sy * gy) / cp
        ap[0], ap[1], ap[2] = accel[0], accel[1], accel[2]
        ap[3], ap[4], ap[5] = gz + sp * rolldd, -sy * gx + cy * gy, rolldd
    return qp, vp, ap, B, False


@numba.njit((_V, _V, numba.float64[:, ::1], numba.float64[::1], numba.float64[::1]), cache=True)
def zyx_pose_rates(qp, twist, R, p, vp):
    """The platform pose at a spatial task's platform joints qp (x y z, then ZYX Euler yaw pitch roll) into the
    caller's p and R = Rz(yaw) Ry(pitch) Rx(roll) (task_space.rpy_to_matrix), and with a twist (length 6; 0: none)
    the platform-joint rates vp = B xdot, B that of zyx_platform_motion at this R (the simulator's every RK4 stage:
    one call instead of three numpy rotations and a matrix product). Returns 0; 1 where the rates are asked and
    |pitch| = pi/2 (cos(pitch) < 1e-9), where B is singular (vp not written); 2 for a qp not of 6 or a twist not of 0
    or 6 (nothing written)."""
    if qp.shape[0] != 6 or twist.shape[0] not in (0, 6):
        return 2
    yaw, pitch, roll = qp[3], qp[4], qp[5]
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    cr, sr = math.cos(roll), math.sin(roll)
    p[0], p[1], p[2] = qp[0], qp[1], qp[2]
    R[0, 0], R[0, 1], R[0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    R[1, 0], R[1, 1], R[1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    R[2, 0], R[2, 1], R[2, 2] = -sp, cp * sr, cp * cr
    if twist.shape[0] != 6:
        return 0
    r00, r10 = R[0, 0], R[1, 0]
    c = math.hypot(r00, r10)
    if c < 1e-9:
        return 1
    ky, ny, s = r00 / c, r10 / c, -R[2, 0]
    wx, wy, wz = twist[3], twist[4], twist[5]
    vp[0], vp[1], vp[2] = twist[0], twist[1], twist[2]
    vp[3] = s * ky / c * wx + s * ny / c * wy + wz          # B's rows of zyx_platform_motion, B xdot written out
    vp[4] = -ny * wx + ky * wy
    vp[5] = ky / c * wx + ny / c * wy
    return 0


@numba.njit((_V, _V, numba.float64[::1]), cache=True)
def zyx_platform_force(qp, f, out):
    """The platform-joint forces tau_p with B^T tau_p = f of a spatial task (f a generalized force on the twist):
    tau_p = (f_v, E^T f_omega), E = task_space.euler_rate_matrix(yaw, pitch) at the platform joints qp (x y z, yaw
    pitch roll), into the caller's out (6)."""
    cy, sy, cp, sp = math.cos(qp[3]), math.sin(qp[3]), math.cos(qp[4]), math.sin(qp[4])
    out[0], out[1], out[2] = f[0], f[1], f[2]
    out[3] = f[5]
    out[4] = -sy * f[3] + cy * f[4]
    out[5] = cy * cp * f[3] + sy * cp * f[4] - sp * f[5]


@numba.njit(cache=True)
def platform_joints(R, p, twist, accel, accs, rates, want_g, ip, q, v, a, G, info):
    """The platform joints ip of a hexapod family's tree (x y z, then ZYX Euler angles) into q, with their rates,
    accelerations and G's rows B (omega = E [yaw' pitch' roll']) where asked (zyx_platform_motion). False where the
    rates are asked and |pitch| = pi/2 (info[0] = pitch): the caller's pitch status."""
    qp, vp, ap, B, singular = zyx_platform_motion(R, p, twist, accel if accs else accel[:0])
    for k in range(6):
        q[ip[k]] = qp[k]
    if not (rates or want_g):
        return True
    if singular:
        info[0] = qp[4]
        return False
    for k in range(6):
        if want_g:
            G[ip[k]] = B[k]
        if rates:
            v[ip[k]] = vp[k]
        if accs:
            a[ip[k]] = ap[k]
    return True


@numba.njit((_V, _V, _V, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64[::1]), cache=True)
def zyx_task_acceleration(q, v, a, c, x):
    """xddot of a spatial task from the tree's positions, rates and accelerations at its platform joints c (x y z,
    then ZYX Euler yaw pitch roll): the inverse of zyx_platform_motion's ap, omegadot = E e'' + Edot e' written out
    (task_space.euler_rate_matrix, euler_rate_matrix_dot), into the caller's x (6). Returns ``finite``: False where
    a component is not finite (a singular constrained mass matrix: the caller raises)."""
    yaw, pitch = q[c[3]], q[c[4]]
    yd, pd, rd = v[c[3]], v[c[4]], v[c[5]]
    ya, pa, ra = a[c[3]], a[c[4]], a[c[5]]
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    x[0], x[1], x[2] = a[c[0]], a[c[1]], a[c[2]]
    x[3] = -sy * pa + cy * cp * ra - cy * yd * pd + (-sy * cp * yd - cy * sp * pd) * rd
    x[4] = cy * pa + sy * cp * ra - sy * yd * pd + (cy * cp * yd - sy * sp * pd) * rd
    x[5] = ya - sp * ra - cp * pd * rd
    return math.isfinite(x[0] + x[1] + x[2] + x[3] + x[4] + x[5])


#: hexapod_ups_kernels.ups_forward's status: converged; the guess is no assembly (a leg in gimbal
#: lock); the Jacobian is singular to working precision (a step beyond the magnitude limit, or not finite); the
#: line search stalled; no convergence in max_iter iterations (forward.forward_kinematics' errors, same order,
#: which reads them here without loading the 6-UPS kernels); the inputs failed the checks
UPS_FK_OK, UPS_FK_GUESS, UPS_FK_SINGULAR, UPS_FK_STALLED, UPS_FK_MAX_ITER, UPS_FK_INPUT = 0, 1, 2, 3, 4, 5

_I = numba.types.Array(numba.int64, 1, "A", readonly=True)


@numba.njit(inline="always")
def _cone_rate_gain(rows, i, c, length):
    """-1 / (length sin theta), the factor of a cone angle theta = acos(c)'s rate row (its cosine's rate times length
    over -sin theta); 0 with row i of ``rows`` zeroed where sin theta <= 1e-12 (the angle is |.|-like at 0: no
    derivative there)."""
    sin_theta = math.sqrt(1.0 - c * c)
    if sin_theta <= 1e-12:
        for k in range(rows.shape[1]):
            rows[i, k] = 0.0
        return 0.0
    return -1.0 / (length * sin_theta)


@numba.njit(cache=True)
def lu_columns(K, cols, rows, bounds):
    """(LU, perm, ok): A = K[rows, cols] (square) factored by Gaussian elimination with partial pivoting (LAPACK's
    dgetrf in scalar loops: numba's np.linalg costs ~10 s of compilation per signature), L (unit, below the
    diagonal) and U in one array, perm the rows of K in the order of LU's (P A = L U). ok False where a pivot is zero
    (singular, as dgetrf's info > 0) or the matrix is not finite.

    A is block diagonal: the blocks A[bounds[b]:bounds[b + 1]] (square, on the diagonal; the rest of A zero by
    structure: numeric.Kinematics._blocks orders rows and cols so, e.g. one 3 x 3 block per leg of a hexapod's IK)
    are factored one by one, pivots searched within the block: the arithmetic of the whole matrix's elimination
    without its zeros. bounds = [0, n]: one block, the whole matrix."""
    n = cols.shape[0]
    A = np.zeros((n, n))
    perm = rows.copy()
    for b in range(bounds.shape[0] - 1):
        s, e = bounds[b], bounds[b + 1]
        for i in range(s, e):
            for j in range(s, e):
                A[i, j] = K[rows[i], cols[j]]
        for c in range(s, e):
            piv = c
            for i in range(c + 1, e):
                if abs(A[i, c]) > abs(A[piv, c]):
                    piv = i
            if not (A[piv, c] != 0.0 and math.isfinite(A[piv, c])):
                return A, perm, False
            if piv != c:
                for j in range(s, e):
                    A[c, j], A[piv, j] = A[piv, j], A[c, j]
                perm[c], perm[piv] = perm[piv], perm[c]
            for i in range(c + 1, e):
                f = A[i, c] / A[c, c]
                A[i, c] = f
                if f != 0.0:
                    for j in range(c + 1, e):
                        A[i, j] -= f * A[c, j]
    return A, perm, True


@numba.njit(cache=True)
def lu_solve(LU, perm, bounds, B):
    """X with A X = B (B: rows of K, m x k; X: n x k in the order of A's columns) from lu_columns' factors of A,
    block by block."""
    n, k = LU.shape[0], B.shape[1]
    X = np.empty((n, k))
    for i in range(n):
        for j in range(k):
            X[i, j] = B[perm[i], j]
    for b in range(bounds.shape[0] - 1):
        s, e = bounds[b], bounds[b + 1]
        for c in range(s, e):
            for i in range(c + 1, e):
                f = LU[i, c]
                if f != 0.0:
                    for j in range(k):
                        X[i, j] -= f * X[c, j]
        for c in range(e - 1, s - 1, -1):
            for j in range(k):
                t = X[c, j]
                for i in range(c + 1, e):
                    t -= LU[c, i] * X[i, j]
                X[c, j] = t / LU[c, c]
    return X


@numba.njit(cache=True)
def solve_columns(K, cols, rows, bounds, B):
    """(X, ok): X with K[rows, cols] X = B[rows] (square, block diagonal by bounds; B m x k) by lu_columns and
    lu_solve (dgesv): the numeric family's Newton steps and velocity maps. ok False where K[rows, cols] is singular
    or not finite (X then undefined)."""
    LU, perm, ok = lu_columns(K, cols, rows, bounds)
    if not ok:
        return np.zeros((cols.shape[0], B.shape[1])), False
    return lu_solve(LU, perm, bounds, B), True


@numba.njit(cache=True)
def _bounded(X, limit):
    """Every entry of X within +-limit (a NaN fails)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not abs(X[i, j]) <= limit:
                return False
    return True


@numba.njit(cache=True)
def solve_square(K, cols, rows, bounds, b, limit):
    """(x, ok): x with K[rows, cols] x = b[rows] (square, solve_columns), ok False where that is singular or x leaves
    +-limit (errors.MAGNITUDE_LIMIT): the numeric family's Newton step."""
    X, ok = solve_columns(K, cols, rows, bounds, b.reshape((b.shape[0], 1)))
    return X[:, 0], ok and _bounded(X, limit)


@numba.njit(cache=True)
def newton_start(q0, K0, LU0, perm0, fixed, values, free, rows, bounds, predict_range, limit):
    """The start of the numeric family's Newton projection (numeric.Kinematics._project): q0 with q[fixed] = values,
    and with K0 (0 rows: none) the first step predicted along the tangent of the closures, q[free] -= A^-1
    K0[:, fixed] (values - q0[fixed]) (A = K0[rows, free], square, block diagonal by bounds; LU0, perm0 its
    lu_columns factors, or 0 x 0 to factor it here), when |values - q0[fixed]|_1 <= predict_range and the step is
    defined and within +-limit."""
    q = q0.copy()
    change = np.empty(fixed.shape[0])
    total = 0.0
    for k in range(fixed.shape[0]):
        change[k] = values[k] - q0[fixed[k]]
        total += abs(change[k])
        q[fixed[k]] = values[k]
    if K0.shape[0] == 0 or not total <= predict_range:
        return q
    rhs = np.zeros((K0.shape[0], 1))
    for i in range(K0.shape[0]):
        acc = 0.0
        for k in range(fixed.shape[0]):
            acc += K0[i, fixed[k]] * change[k]
        rhs[i, 0] = acc
    if LU0.shape[0] == free.shape[0]:
        X, ok = lu_solve(LU0, perm0, bounds, rhs), True
    else:
        X, ok = solve_columns(K0, free, rows, bounds, rhs)
    if ok and _bounded(X, limit):
        for k in range(free.shape[0]):
            q[free[k]] -= X[k, 0]
    return q


@numba.njit(cache=True)
def newton_move(q, free, dq, step):
    """q with q[free] -= step dq (a new array)."""
    out = q.copy()
    for k in range(free.shape[0]):
        out[free[k]] -= step * dq[k]
    return out


@numba.njit(cache=True)
def l1_nearer(q_a, q_b, c, qc):
    """|q_a[c] - qc|_1 <= |q_b[c] - qc|_1: the numeric family's choice of start (numeric.Kinematics._start)."""
    da = db = 0.0
    for k in range(c.shape[0]):
        da += abs(q_a[c[k]] - qc[k])
        db += abs(q_b[c[k]] - qc[k])
    return da <= db


@numba.njit(cache=True)
def closure_velocity(K, c, free, rows, bounds, B, twist, limit):
    """(G, v, LU, perm, ok) at an assembly with closure Jacobian K (A = K[rows, free] square, block diagonal by
    bounds: lu_columns): G[c] = B,
    G[free] = -A^-1 K_c B (K G = 0), v = G twist (numeric.py, Velocities), A's lu_columns factors; ok False where
    A is singular or G leaves +-limit."""
    m, n, nv = K.shape[0], B.shape[1], K.shape[1]
    rhs = np.zeros((m, n))
    for i in range(m):
        for j in range(n):
            acc = 0.0
            for k in range(c.shape[0]):
                acc -= K[i, c[k]] * B[k, j]
            rhs[i, j] = acc
    LU, perm, ok = lu_columns(K, free, rows, bounds)
    G = np.zeros((nv, n))
    if not ok:
        return G, np.zeros(nv), LU, perm, False
    X = lu_solve(LU, perm, bounds, rhs)
    for k in range(c.shape[0]):
        for j in range(n):
            G[c[k], j] = B[k, j]
    for k in range(free.shape[0]):
        for j in range(n):
            G[free[k], j] = X[k, j]
    v = np.zeros(nv)
    for i in range(nv):
        acc = 0.0
        for j in range(n):
            acc += G[i, j] * twist[j]
        v[i] = acc
    return G, v, LU, perm, _bounded(X, limit)


@numba.njit(cache=True)
def closure_acceleration(K, LU, perm, bounds, c, free, ac, bias, limit):
    """(a, ok): the tree accelerations with a[c] = ac and K a + bias = 0 (bias = Kdot v; A = K[rows, free] square,
    LU, perm and bounds its lu_columns factors), numeric.py, Accelerations; ok False where a[free] leaves +-limit."""
    m, nv = K.shape[0], K.shape[1]
    rhs = np.zeros((m, 1))
    for i in range(m):
        acc = -bias[i]
        for k in range(c.shape[0]):
            acc -= K[i, c[k]] * ac[k]
        rhs[i, 0] = acc
    X = lu_solve(LU, perm, bounds, rhs)
    a = np.empty(nv)
    for k in range(c.shape[0]):
        a[c[k]] = ac[k]
    for k in range(free.shape[0]):
        a[free[k]] = X[k, 0]
    return a, _bounded(X, limit)
