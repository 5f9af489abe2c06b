"""Compiled per-leg loops of the hexapod families: the IK, rates, accelerations, J and G of 6-UPS, the actuated
positions and J of 6-PUS (the forward-kinematics Newton step).

As Python the leg loops cost 5-40 us a call, compiled 1-2 us (call overhead included): this keeps the
warm FK inside its budget and the generic dynamics engine (every state needs q, v, a and G) within a few
times pinocchio's rnea (issue 21 par. 7). The kernels are THE implementation of these formulas (the
families call nothing else for them); the tests check them against finite differences, the numeric family
and the papers' formulations.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import MAGNITUDE_LIMIT


#: ups_motion's status: solved; a universal joint in gimbal lock (info = r, x, y, z of that leg); ZYX Euler
#: rates singular (|pitch| = pi/2, info[0] = pitch); the inputs failed motion_ok (nothing computed)
UPS_OK, UPS_GIMBAL, UPS_PITCH, UPS_INPUT = 0, 1, 2, 3


@numba.njit(cache=True)
def _norm1(vec):
    total = 0.0
    for k in range(vec.shape[0]):
        total += abs(vec[k])
    return total


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


@numba.njit((_M, _V, _V, _V, _M, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64,
             numba.float64, numba.boolean, numba.boolean, numba.boolean, numba.float64[::1], numba.float64[::1],
             numba.float64[::1], numba.float64[:, ::1], numba.float64[:, ::1], numba.float64[::1]), cache=True)
def ups_motion(R, p, twist, accel, legs, iall, gimbal_eps, cos_cone, check, want_g, validate, q, v, a, J, G, info):
    """6-UPS (hexapod_ups): all tree joints of a platform motion in one pass over the legs.

    Positions by Abdellatif eq. 29-31 (strut vector (x, y, z) in the leg base frame S_i:
    l = |s|, alpha = atan2(x, -z), beta = atan2(y, r), r = sqrt(x^2 + z^2)), rates and accelerations by
    differentiating them with v_B = v + w x b, a_B = a + wd x b + w x (w x b) (Abdellatif eq. 2-3),
    Taghirad's J rows [u^T, (b x u)^T], and with ``want_g`` G: per leg [g^T, (b x g)^T], g the gradient of
    alpha, beta, l w.r.t. B_i (d alpha / d s = (-z, 0, x) / r^2, d beta / d s = (-x y / r, r, -y z / r) / l^2
    in S_i), the platform rows the ZYX Euler rate rows (omega = E [yaw' pitch' roll']).

    legs: (n, 24) rows (A_i, b_i, S_i row-major, n_i, alpha / beta / l lower and upper limits);
    iall: the tree indices of alpha (n), beta (n), l (n), then the platform's x y z yaw pitch roll.
    twist / accel of length 0: no rates / accelerations. ``check``: test the limits and the spherical joints'
    cones; ``validate``: first the shapes (R 3 x 3, p 3, twist 6 or 0, accel 6 or 0, only with a twist) and motion_ok
    (errors.MAGNITUDE_LIMIT), UPS_INPUT if they fail.
    Writes into the caller's arrays (returning new arrays would cost ~0.4 us each to box, more than a leg's
    arithmetic): q (nv), v and a (nv, or empty without twist / accel), J (n x 6, leg order), G (nv x 6, zeros
    on entry, or 0 x 6 without want_g), info (4). Returns (status, leg, out_of_range, cone_leg): status UPS_OK /
    UPS_GIMBAL (leg) / UPS_PITCH / UPS_INPUT; out_of_range: some joint outside its range; cone_leg: the first leg
    whose cone cosine info[0] is below cos_cone (-1: none).
    """
    n = legs.shape[0]
    rates = twist.shape[0] == 6
    accs = rates and accel.shape[0] == 6
    out_of_range = False
    cone_leg = -1
    if validate and not (R.shape[0] == 3 and R.shape[1] == 3 and p.shape[0] == 3 and twist.shape[0] in (0, 6)
                         and accel.shape[0] in (0, twist.shape[0]) and motion_ok(R, p, twist, accel, MAGNITUDE_LIMIT)):
        return UPS_INPUT, -1, out_of_range, cone_leg
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2],
                                                   R[2, 0], R[2, 1], R[2, 2])
    px, py, pz = p[0], p[1], p[2]
    vx = vy = vz = wx_ = wy_ = wz_ = 0.0
    ax_ = ay_ = az_ = wdx = wdy = wdz = 0.0
    if rates:
        vx, vy, vz, wx_, wy_, wz_ = twist[0], twist[1], twist[2], twist[3], twist[4], twist[5]
    if accs:
        ax_, ay_, az_, wdx, wdy, wdz = accel[0], accel[1], accel[2], accel[3], accel[4], accel[5]
    for i in range(n):
        L = legs[i]
        bx, by, bz = L[3], L[4], L[5]
        s00, s01, s02, s10, s11, s12, s20, s21, s22 = L[6], L[7], L[8], L[9], L[10], L[11], L[12], L[13], L[14]
        wx = r00 * bx + r01 * by + r02 * bz          # b_i in base coordinates
        wy = r10 * bx + r11 * by + r12 * bz
        wz = r20 * bx + r21 * by + r22 * bz
        dx, dy, dz = wx + px - L[0], wy + py - L[1], wz + pz - L[2]
        x = s00 * dx + s10 * dy + s20 * dz          # strut vector in S_i
        y = s01 * dx + s11 * dy + s21 * dz
        z = s02 * dx + s12 * dy + s22 * dz
        r2 = x * x + z * z
        r = math.sqrt(r2)
        if not r > gimbal_eps:
            info[0], info[1], info[2], info[3] = r, x, y, z
            return UPS_GIMBAL, i, out_of_range, cone_leg
        l2 = r2 + y * y
        l = math.sqrt(l2)
        alpha, beta = math.atan2(x, -z), math.atan2(y, r)
        q[iall[i]], q[iall[n + i]], q[iall[2 * n + i]] = alpha, beta, l
        ux, uy, uz = dx / l, dy / l, dz / l
        if check:
            if not (L[18] <= alpha <= L[19] and L[20] <= beta <= L[21] and L[22] <= l <= L[23]):
                out_of_range = True
            nx, ny, nz = L[15], L[16], L[17]
            c = (ux * (r00 * nx + r01 * ny + r02 * nz) + uy * (r10 * nx + r11 * ny + r12 * nz)
                 + uz * (r20 * nx + r21 * ny + r22 * nz))
            if cone_leg < 0 and c < cos_cone:
                cone_leg = i
                info[0] = c
        J[i, 0], J[i, 1], J[i, 2] = ux, uy, uz
        J[i, 3], J[i, 4], J[i, 5] = wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux
        if want_g:
            ga, gc = -z / r2, x / r2
            ha, hb, hc = -x * y / (r * l2), r / l2, -y * z / (r * l2)
            for k in range(2):
                if k == 0:
                    gx, gy, gz = s00 * ga + s02 * gc, s10 * ga + s12 * gc, s20 * ga + s22 * gc
                else:
                    gx = s00 * ha + s01 * hb + s02 * hc
                    gy = s10 * ha + s11 * hb + s12 * hc
                    gz = s20 * ha + s21 * hb + s22 * hc
                row = iall[k * n + i]
                G[row, 0], G[row, 1], G[row, 2] = gx, gy, gz
                G[row, 3], G[row, 4], G[row, 5] = wy * gz - wz * gy, wz * gx - wx * gz, wx * gy - wy * gx
            G[iall[2 * n + i]] = J[i]
        if rates:
            # v_B, a_B (zero without accs) and v_B's components in S_i
            ex, ey, ez, fx, fy, fz = rigid_point_motion(wx, wy, wz, vx, vy, vz, wx_, wy_, wz_,
                                                        ax_, ay_, az_, wdx, wdy, wdz)
            xd = s00 * ex + s10 * ey + s20 * ez
            yd = s01 * ex + s11 * ey + s21 * ez
            zd = s02 * ex + s12 * ey + s22 * ez
            rrd = x * xd + z * zd
            ld = (rrd + y * yd) / l
            ad = (x * zd - z * xd) / r2
            rd = rrd / r
            bd = (r * yd - y * rd) / l2
            v[iall[i]], v[iall[n + i]], v[iall[2 * n + i]] = ad, bd, ld
            if accs:
                xdd = s00 * fx + s10 * fy + s20 * fz
                ydd = s01 * fx + s11 * fy + s21 * fz
                zdd = s02 * fx + s12 * fy + s22 * fz
                xxd = xd * xd + zd * zd + x * xdd + z * zdd
                rdd = (xxd - rd * rd) / r
                a[iall[i]] = (x * zdd - z * xdd - 2.0 * ad * rrd) / r2
                a[iall[n + i]] = (r * ydd - y * rdd - 2.0 * bd * l * ld) / l2
                a[iall[2 * n + i]] = (xxd + yd * yd + y * ydd - ld * ld) / l
    # platform joints: x y z, then ZYX Euler angles, their rates and G's rows B (omega = E [yaw' pitch' roll'])
    ip = iall[3 * n:]
    qp, vp, ap, B, singular = zyx_platform_motion(R, p, twist, accel if accs else accel[:0])
    for k in range(6):
        q[ip[k]] = qp[k]
    if not (rates or want_g):
        return UPS_OK, -1, out_of_range, cone_leg
    if singular:
        info[0] = qp[4]
        return UPS_PITCH, -1, out_of_range, cone_leg
    for k in range(6):
        if want_g:
            G[ip[k]] = B[k]
        if rates:
            v[ip[k]] = vp[k]
        if accs:
            a[ip[k]] = ap[k]
    return UPS_OK, -1, out_of_range, cone_leg


@numba.njit(cache=True)
def pus_positions_jacobian(R, p, base, plat, L2, reach_tol):
    """6-PUS (Lopes): actuator positions l_i = z_B - sqrt(L^2 - rho_i^2) and J_C rows.

    base: (n, 2) actuator-axis points, plat: (n, 2) platform anchors (z = 0 in the platform).
    Returns (l, J, leg): leg = -1, or the first leg out of reach / with a horizontal link.
    """
    n = base.shape[0]
    l = np.empty(n)
    J = np.empty((n, 6))
    for i in range(n):
        rx = R[0, 0] * plat[i, 0] + R[0, 1] * plat[i, 1]
        ry = R[1, 0] * plat[i, 0] + R[1, 1] * plat[i, 1]
        rz = R[2, 0] * plat[i, 0] + R[2, 1] * plat[i, 1]
        dx, dy = p[0] + rx - base[i, 0], p[1] + ry - base[i, 1]
        s = L2 - (dx * dx + dy * dy)
        if s < 0.0:
            if s < -reach_tol * L2:
                return l, J, i
            s = 0.0
        h = math.sqrt(s)
        if h <= 0.0:
            return l, J, i
        l[i] = p[2] + rz - h
        J[i, 0], J[i, 1], J[i, 2] = dx / h, dy / h, 1.0
        J[i, 3], J[i, 4], J[i, 5] = (ry * h - rz * dy) / h, (rz * dx - rx * h) / h, (rx * dy - ry * dx) / h
    return l, J, -1


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
