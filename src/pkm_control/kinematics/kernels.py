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


# ----------------------------------------------------------------------------- 6-UPS forward kinematics

#: ups_forward's status: converged; the guess is no assembly (a leg in gimbal lock); the Jacobian is singular to
#: working precision (a step beyond the magnitude limit, or not finite); the line search stalled; no convergence in
#: max_iter iterations (forward.forward_kinematics' errors, same order); the inputs failed the checks
UPS_FK_OK, UPS_FK_GUESS, UPS_FK_SINGULAR, UPS_FK_STALLED, UPS_FK_MAX_ITER, UPS_FK_INPUT = 0, 1, 2, 3, 4, 5

_I = numba.types.Array(numba.int64, 1, "A", readonly=True)


@numba.njit(cache=True)
def _lu(A, M, perm):
    """M, perm: the LU factors of the square A with partial pivoting (P A = L U, L unit below the diagonal, U on and
    above it in M; LAPACK dgetrf's algorithm in scalar loops). False where a pivot is zero or not finite (A singular,
    as dgetrf's info > 0)."""
    n = A.shape[0]
    for i in range(n):
        perm[i] = i
        for j in range(n):
            M[i, j] = A[i, j]
    for c in range(n):
        piv = c
        for i in range(c + 1, n):
            if abs(M[i, c]) > abs(M[piv, c]):
                piv = i
        if not (M[piv, c] != 0.0 and math.isfinite(M[piv, c])):
            return False
        if piv != c:
            for j in range(n):
                M[c, j], M[piv, j] = M[piv, j], M[c, j]
            perm[c], perm[piv] = perm[piv], perm[c]
        for i in range(c + 1, n):
            f = M[i, c] / M[c, c]
            M[i, c] = f
            if f != 0.0:
                for j in range(c + 1, n):
                    M[i, j] -= f * M[c, j]
    return True


@numba.njit(cache=True)
def _lu_solve(M, perm, b, x):
    """x with A x = b from _lu's factors of A (dgetrs)."""
    n = M.shape[0]
    for i in range(n):
        x[i] = b[perm[i]]
    for c in range(n):
        for i in range(c + 1, n):
            x[i] -= M[i, c] * x[c]
    for c in range(n - 1, -1, -1):
        t = x[c]
        for j in range(c + 1, n):
            t -= M[c, j] * x[j]
        x[c] = t / M[c, c]


@numba.njit(cache=True)
def _gauss_solve(A, b, x, M, perm):
    """x with A x = b (A square; M, perm scratch for its factors: dgesv); False where A is singular."""
    if not _lu(A, M, perm):
        return False
    _lu_solve(M, perm, b, x)
    return True


@numba.njit(cache=True)
def _ups_residual(R, p, qa, legs, iall, rows, act, gimbal_eps, q, Jl, J, r, none, none_g, info):
    """r = q_a(R, p) - qa and J (actuated rows) at a pose from ups_motion (no limits: the FK's inner evaluation);
    returns |r|, or -1 where a leg is in gimbal lock (the pose is no assembly: forward.py's UnreachablePoseError).
    none, none_g, info: ups_motion's empty rates and G, its info (scratch)."""
    status = ups_motion(R, p, none, none, legs, iall, gimbal_eps, 0.0, False, False, False, q, none, none, Jl, none_g,
                        info)[0]
    if status == UPS_GIMBAL:
        return -1.0
    total = 0.0
    for k in range(rows.shape[0]):
        r[k] = q[rows[k]] - qa[k]
        total += r[k] * r[k]
        for j in range(6):
            J[k, j] = Jl[act[k], j]
    return math.sqrt(total)


@numba.njit((_V, _V, _M, _V, _M, _I, _I, _I, numba.float64, numba.float64, numba.int64, numba.float64,
             numba.float64, numba.float64[:, ::1], numba.float64[::1], numba.float64[:, ::1], numba.float64[::1],
             numba.float64[::1]), cache=True)
def ups_forward(qa, qd, R0, p0, legs, iall, rows, act, gimbal_eps, tol, max_iter, damping, limit, R, p, J, xd, out):
    """6-UPS forward kinematics from the guess (R0, p0): forward.forward_kinematics' damped Gauss-Newton in one
    compiled call (its steps, tests and errors; the same pose to the tolerance): r = q_a(x) - q_a, J from ups_motion
    (Taghirad's J, rows [u^T, (b x u)^T]); dx = -J^-1 r (square), or -(J^T J + damping I)^-1 J^T r (redundant
    actuation, or J singular); the step halved while it does not reduce |r| (least squares: by more than 1e-12
    relative) or a leg is in gimbal lock, down to 1e-6; the pose moved by task_space.retract: p + dx[:3],
    exp([dx[3:]]x) R (so3_exp's Rodrigues formula, its series below |w|^2 = 1e-16). Converged at |r| <= tol
    (redundant: also at a step |dx| <= tol). With the actuated velocities qd (length 0: none) and square J, also the
    state estimator's twist (estimator.py: Taghirad's qdot_a = J xdot, xd = J^-1 qd) and the reciprocal condition
    number of J, 1 / (|J|_1 |J^-1|_1) (exact; LAPACK's dgecon estimates it).

    qa: the measured actuated positions; legs, iall: ups_motion's; rows: the tree index of each actuated joint, act
    its leg (J's row). Writes the pose into R (3 x 3), p (3), J (actuated rows) at it, xd (6, or 0: not computed) and
    out = (|r| at the last pose reached, rcond, |task.difference(pose, guess)|: sqrt(|p - p0|^2 + theta^2), theta
    the angle of R R0^T). Returns (status UPS_FK_*, iterations); UPS_FK_INPUT: qa, qd or the guess failed the checks
    of forward_kinematics (finite, within ``limit``, the shapes, R0 a rotation: motion_ok), nothing computed."""
    m = rows.shape[0]
    square = m == 6
    none, none_g, info = np.empty(0), np.zeros((0, 6)), np.zeros(4)
    if not (qa.shape[0] == m and qd.shape[0] in (0, m) and R0.shape[0] == 3 and R0.shape[1] == 3
            and p0.shape[0] == 3 and motion_ok(R0, p0, none, none, limit)):
        return UPS_FK_INPUT, 0
    for k in range(m):
        if not abs(qa[k]) <= limit:
            return UPS_FK_INPUT, 0
    for k in range(qd.shape[0]):
        if not abs(qd[k]) <= limit:
            return UPS_FK_INPUT, 0
    nv = iall.shape[0]
    q = np.empty(nv)
    Jl = np.empty((legs.shape[0], 6))
    r, rc = np.empty(m), np.empty(m)
    Jc = np.empty((m, 6))
    Rc, pc = np.empty((3, 3)), np.empty(3)
    M, perm = np.empty((6, 6)), np.empty(6, np.int64)
    for i in range(3):
        p[i] = p0[i]
        for j in range(3):
            R[i, j] = R0[i, j]
    rn = _ups_residual(R, p, qa, legs, iall, rows, act, gimbal_eps, q, Jl, J, r, none, none_g, info)
    out[0] = 0.0
    if rn < 0.0:
        return UPS_FK_GUESS, 0
    out[0] = rn
    dx, rhs = np.empty(6), np.empty(6)
    N = np.empty((6, 6))
    status, it = UPS_FK_MAX_ITER, max_iter
    for k_it in range(1, max_iter + 1):
        if rn <= tol:
            status, it = UPS_FK_OK, k_it - 1
            break
        ok = False
        if square:
            for k in range(6):
                rhs[k] = -r[k]
            ok = _gauss_solve(J, rhs, dx, M, perm)
        if not ok:
            for i in range(6):
                acc = 0.0
                for k in range(m):
                    acc -= J[k, i] * r[k]
                rhs[i] = acc
                for j in range(6):
                    acc = 0.0
                    for k in range(m):
                        acc += J[k, i] * J[k, j]
                    N[i, j] = acc + (damping if i == j else 0.0)
            ok = _gauss_solve(N, rhs, dx, M, perm)
        big = 0.0
        for k in range(6):
            big = max(big, abs(dx[k])) if math.isfinite(dx[k]) else math.inf
        if not ok or not big <= limit:
            return UPS_FK_SINGULAR, k_it
        step = 1.0
        rcn = -1.0
        while step > 1e-6:
            x, y, z = step * dx[3], step * dx[4], step * dx[5]
            t2 = x * x + y * y + z * z
            if t2 < 1e-16:
                a, b = 1.0 - t2 / 6.0, 0.5 - t2 / 24.0
            else:
                t = math.sqrt(t2)
                a, b = math.sin(t) / t, (1.0 - math.cos(t)) / t2
            e00, e01, e02 = 1.0 - b * (y * y + z * z), b * x * y - a * z, b * x * z + a * y
            e10, e11, e12 = b * x * y + a * z, 1.0 - b * (x * x + z * z), b * y * z - a * x
            e20, e21, e22 = b * x * z - a * y, b * y * z + a * x, 1.0 - b * (x * x + y * y)
            for j in range(3):
                Rc[0, j] = e00 * R[0, j] + e01 * R[1, j] + e02 * R[2, j]
                Rc[1, j] = e10 * R[0, j] + e11 * R[1, j] + e12 * R[2, j]
                Rc[2, j] = e20 * R[0, j] + e21 * R[1, j] + e22 * R[2, j]
                pc[j] = p[j] + step * dx[j]
            rcn = _ups_residual(Rc, pc, qa, legs, iall, rows, act, gimbal_eps, q, Jl, Jc, rc, none, none_g, info)
            if rcn >= 0.0 and (rcn < rn or (not square and rcn <= rn * (1 + 1e-12))):
                break
            step *= 0.5
        if not step > 1e-6:
            return UPS_FK_STALLED, k_it
        R[:, :] = Rc
        p[:] = pc
        J[:, :] = Jc
        r[:] = rc
        rn = rcn
        out[0] = rn
        if not square:
            s2 = 0.0
            for k in range(6):
                s2 += dx[k] * dx[k]
            if math.sqrt(s2) * step <= tol:
                status, it = UPS_FK_OK, k_it
                break
    if status != UPS_FK_OK and not rn <= tol:
        return UPS_FK_MAX_ITER, max_iter
    # the distance to the guess (estimator._pose_distance: the angle from the trace of R R0^T)
    d2 = 0.0
    c = 0.0
    for i in range(3):
        d2 += (p[i] - p0[i]) ** 2
        for j in range(3):
            c += R[i, j] * R0[i, j]
    th = math.acos(min(1.0, max(-1.0, 0.5 * (c - 1.0))))
    out[2] = math.sqrt(d2 + th * th)
    out[1] = 0.0
    if qd.shape[0] == 0 or not square or not _lu(J, M, perm):
        return UPS_FK_OK, it
    _lu_solve(M, perm, qd, xd)
    # rcond = 1 / (|J|_1 |J^-1|_1), J^-1 column by column
    norm_j = norm_inv = 0.0
    col = np.empty(6)
    for j in range(6):
        sj = 0.0
        for i in range(6):
            sj += abs(J[i, j])
            rhs[i] = 1.0 if i == j else 0.0
        norm_j = max(norm_j, sj)
        _lu_solve(M, perm, rhs, col)
        si = 0.0
        for i in range(6):
            si += abs(col[i])
        norm_inv = max(norm_inv, si)
    if norm_j > 0.0 and norm_inv < math.inf:
        out[1] = 1.0 / (norm_j * norm_inv)
    return UPS_FK_OK, it


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
def lu_columns(K, cols):
    """(LU, perm, ok): A = K[:, cols] (square) factored by Gaussian elimination with partial pivoting (LAPACK's
    dgetrf in scalar loops: numba's np.linalg costs ~10 s of compilation per signature), L (unit, below the
    diagonal) and U in one array, perm the row order (P A = L U). ok False where a pivot is zero (singular, as
    dgetrf's info > 0) or the matrix is not finite."""
    n = cols.shape[0]
    A = np.empty((n, n))
    perm = np.arange(n)
    for j in range(n):
        for i in range(n):
            A[i, j] = K[i, cols[j]]
    for c in range(n):
        piv = c
        for i in range(c + 1, n):
            if abs(A[i, c]) > abs(A[piv, c]):
                piv = i
        if not (A[piv, c] != 0.0 and math.isfinite(A[piv, c])):
            return A, perm, False
        if piv != c:
            for j in range(n):
                A[c, j], A[piv, j] = A[piv, j], A[c, j]
            perm[c], perm[piv] = perm[piv], perm[c]
        for i in range(c + 1, n):
            f = A[i, c] / A[c, c]
            A[i, c] = f
            if f != 0.0:
                for j in range(c + 1, n):
                    A[i, j] -= f * A[c, j]
    return A, perm, True


@numba.njit(cache=True)
def lu_solve(LU, perm, B):
    """X with A X = B (n x k) from lu_columns' factors of A."""
    n, k = LU.shape[0], B.shape[1]
    X = np.empty((n, k))
    for i in range(n):
        for j in range(k):
            X[i, j] = B[perm[i], j]
    for c in range(n):
        for i in range(c + 1, n):
            f = LU[i, c]
            if f != 0.0:
                for j in range(k):
                    X[i, j] -= f * X[c, j]
    for c in range(n - 1, -1, -1):
        for j in range(k):
            t = X[c, j]
            for i in range(c + 1, n):
                t -= LU[c, i] * X[i, j]
            X[c, j] = t / LU[c, c]
    return X


@numba.njit(cache=True)
def solve_columns(K, cols, B):
    """(X, ok): X with K[:, cols] X = B (square; B n x k) by lu_columns and lu_solve (dgesv): the numeric family's
    Newton steps and velocity maps. ok False where K[:, cols] is singular or not finite (X then undefined)."""
    LU, perm, ok = lu_columns(K, cols)
    if not ok:
        return B.copy(), False
    return lu_solve(LU, perm, B), True


@numba.njit(cache=True)
def _bounded(X, limit):
    """Every entry of X within +-limit (a NaN fails)."""
    for i in range(X.shape[0]):
        for j in range(X.shape[1]):
            if not abs(X[i, j]) <= limit:
                return False
    return True


@numba.njit(cache=True)
def solve_square(K, cols, b, limit):
    """(x, ok): x with K[:, cols] x = b (square, solve_columns), ok False where that is singular or x leaves +-limit
    (errors.MAGNITUDE_LIMIT): the numeric family's Newton step."""
    X, ok = solve_columns(K, cols, b.reshape((b.shape[0], 1)))
    return X[:, 0], ok and _bounded(X, limit)


@numba.njit(cache=True)
def newton_start(q0, K0, LU0, perm0, fixed, values, free, predict_range, limit):
    """The start of the numeric family's Newton projection (numeric.Kinematics._project): q0 with q[fixed] = values,
    and with K0 (0 rows: none) the first step predicted along the tangent of the closures, q[free] -= A^-1
    K0[:, fixed] (values - q0[fixed]) (A = K0[:, free], square; LU0, perm0 its lu_columns factors, or 0 x 0 to
    factor it here), when |values - q0[fixed]|_1 <= predict_range and the step is defined and within +-limit."""
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
        X, ok = lu_solve(LU0, perm0, rhs), True
    else:
        X, ok = solve_columns(K0, free, rhs)
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
def closure_velocity(K, c, free, B, twist, limit):
    """(G, v, LU, perm, ok) at an assembly with closure Jacobian K (A = K[:, free] square): G[c] = B,
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
    LU, perm, ok = lu_columns(K, free)
    G = np.zeros((nv, n))
    if not ok:
        return G, np.zeros(nv), LU, perm, False
    X = lu_solve(LU, perm, rhs)
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
def closure_acceleration(K, LU, perm, c, free, ac, bias, limit):
    """(a, ok): the tree accelerations with a[c] = ac and K a + bias = 0 (bias = Kdot v; A = K[:, free] square,
    LU and perm its lu_columns factors), numeric.py, Accelerations; ok False where a[free] leaves +-limit."""
    m, nv = K.shape[0], K.shape[1]
    rhs = np.zeros((m, 1))
    for i in range(m):
        acc = -bias[i]
        for k in range(c.shape[0]):
            acc -= K[i, c[k]] * ac[k]
        rhs[i, 0] = acc
    X = lu_solve(LU, perm, rhs)
    a = np.empty(nv)
    for k in range(c.shape[0]):
        a[c[k]] = ac[k]
    for k in range(free.shape[0]):
        a[free[k]] = X[k, 0]
    return a, _bounded(X, limit)
