"""Compiled kernels of the 6-UPS family (hexapod_ups.py): the IK, rates, accelerations, J and G of a platform motion in
one pass over the legs, the spherical joints' cone angles and their rate rows, and the forward kinematics' damped
Gauss-Newton in one call. A module of its own, imported by the family (kernels.py: a process loads its robot's
family's kernels only)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import MAGNITUDE_LIMIT
from .kernels import (_I, _M, _V, UPS_FK_GUESS, UPS_FK_INPUT, UPS_FK_MAX_ITER, UPS_FK_OK, UPS_FK_SINGULAR,
                      UPS_FK_STALLED, _cone_rate_gain, motion_ok, platform_joints, rigid_point_motion, rodrigues)


#: ups_motion's status: solved; a universal joint in gimbal lock (info = r, x, y, z of that leg); ZYX Euler
#: rates singular (|pitch| = pi/2, info[0] = pitch); the inputs failed motion_ok (nothing computed)
UPS_OK, UPS_GIMBAL, UPS_PITCH, UPS_INPUT = 0, 1, 2, 3


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
    if not platform_joints(R, p, twist, accel, accs, rates, want_g, iall[3 * n:], q, v, a, G, info):
        return UPS_PITCH, -1, out_of_range, cone_leg
    return UPS_OK, -1, out_of_range, cone_leg


# ------------------------------------------------------------------------------------ 6-UPS forward kinematics


@numba.njit(cache=True, inline="always")
def _rotated_anchor_and_axis(R, L):
    """R b_i and R n_i of one leg's row of ups_motion's ``legs`` (A_i, b_i, S_i, n_i), as six scalars."""
    bx, by, bz, nx, ny, nz = 0.0, 0.0, 0.0, 0.0, 0.0, 0.0
    for k in range(3):
        bx += R[0, k] * L[3 + k]
        by += R[1, k] * L[3 + k]
        bz += R[2, k] * L[3 + k]
        nx += R[0, k] * L[15 + k]
        ny += R[1, k] * L[15 + k]
        nz += R[2, k] * L[15 + k]
    return bx, by, bz, nx, ny, nz


@numba.njit((_M, _V, _M, numba.float64[::1]), cache=True)
def ups_cone_angles(R, p, legs, out):
    """The spherical joints' cone angles of a 6-UPS pose into ``out`` (n), hexapod_ups.cut_joint_angles (the end
    stops' cut joints, every simulation stage): per leg (ups_motion's ``legs``: A_i, b_i, S_i, n_i) the angle
    between the strut d = R b_i + p - A_i and the anchor axis R n_i."""
    for i in range(legs.shape[0]):
        L = legs[i]
        bx, by, bz, nx, ny, nz = _rotated_anchor_and_axis(R, L)
        dx, dy, dz = bx + p[0] - L[0], by + p[1] - L[1], bz + p[2] - L[2]
        c = (dx * nx + dy * ny + dz * nz) / math.sqrt(dx * dx + dy * dy + dz * dz)
        out[i] = math.acos(max(-1.0, min(1.0, c)))

def ups_cone_rows(R, p, legs, rows):
    """d(cone angle rates) / d(twist) of a 6-UPS pose into ``rows`` (n x 6), hexapod_ups.cut_joint_rows (the cut-joint
    end stops' rate map, every simulation stage in contact). With b = R b_i, d = b + p - A_i, u = d / |d|, n = R n_i
    and c = n . u: d' = v + omega x b, n' = omega x n, so |d| c' = v . (n - c u) + omega . (b x n + n x d - c b x u),
    and theta' = -c' / sin(theta). A row is zero where sin(theta) <= 1e-12 (the angle is |.|-like at 0)."""
    for i in range(legs.shape[0]):
        L = legs[i]
        bx, by, bz, nx, ny, nz = _rotated_anchor_and_axis(R, L)
        dx, dy, dz = bx + p[0] - L[0], by + p[1] - L[1], bz + p[2] - L[2]
        dn = math.sqrt(dx * dx + dy * dy + dz * dz)
        ux, uy, uz = dx / dn, dy / dn, dz / dn
        c = max(-1.0, min(1.0, nx * ux + ny * uy + nz * uz))
        g = _cone_rate_gain(rows, i, c, dn)
        if g == 0.0:
            continue
        rows[i, 0], rows[i, 1], rows[i, 2] = g * (nx - c * ux), g * (ny - c * uy), g * (nz - c * uz)
        rows[i, 3] = g * ((by * nz - bz * ny) + (ny * dz - nz * dy) - c * (by * uz - bz * uy))
        rows[i, 4] = g * ((bz * nx - bx * nz) + (nz * dx - nx * dz) - c * (bz * ux - bx * uz))
        rows[i, 5] = g * ((bx * ny - by * nx) + (nx * dy - ny * dx) - c * (bx * uy - by * ux))


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
def _strut_lengths(R, p, legs, iall, gimbal_eps, q, Jl):
    """ups_motion's strut lengths l (into q) and J rows (into Jl) of a pose, its operations: the positions alone,
    without the universal joints' angles (two atan2 per leg) and the platform's Euler angles, which the residual of
    actuated struts does not read. False where a leg is in gimbal lock (ups_motion's UPS_GIMBAL)."""
    n = legs.shape[0]
    r00, r01, r02, r10, r11, r12, r20, r21, r22 = (R[0, 0], R[0, 1], R[0, 2], R[1, 0], R[1, 1], R[1, 2],
                                                   R[2, 0], R[2, 1], R[2, 2])
    px, py, pz = p[0], p[1], p[2]
    for i in range(n):
        L = legs[i]
        bx, by, bz = L[3], L[4], L[5]
        s00, s01, s02, s10, s11, s12, s20, s21, s22 = L[6], L[7], L[8], L[9], L[10], L[11], L[12], L[13], L[14]
        wx = r00 * bx + r01 * by + r02 * bz
        wy = r10 * bx + r11 * by + r12 * bz
        wz = r20 * bx + r21 * by + r22 * bz
        dx, dy, dz = wx + px - L[0], wy + py - L[1], wz + pz - L[2]
        x = s00 * dx + s10 * dy + s20 * dz
        y = s01 * dx + s11 * dy + s21 * dz
        z = s02 * dx + s12 * dy + s22 * dz
        r2 = x * x + z * z
        if not math.sqrt(r2) > gimbal_eps:
            return False
        l = math.sqrt(r2 + y * y)
        q[iall[2 * n + i]] = l
        ux, uy, uz = dx / l, dy / l, dz / l
        Jl[i, 0], Jl[i, 1], Jl[i, 2] = ux, uy, uz
        Jl[i, 3], Jl[i, 4], Jl[i, 5] = wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux
    return True


@numba.njit(cache=True)
def _ups_residual(R, p, qa, legs, iall, rows, act, gimbal_eps, q, Jl, J, r, none, none_g, info):
    """r = q_a(R, p) - qa and J (actuated rows) at a pose from ups_motion (no limits: the FK's inner evaluation; the
    struts' own part of it, ``_strut_lengths``, where every actuated joint is its leg's strut, as on every 6-UPS
    robot); returns |r|, or -1 where a leg is in gimbal lock (the pose is no assembly: forward.py's
    UnreachablePoseError). none, none_g, info: ups_motion's empty rates and G, its info (scratch)."""
    n = legs.shape[0]
    struts = True
    for k in range(rows.shape[0]):
        struts = struts and rows[k] == iall[2 * n + act[k]]
    if struts:
        if not _strut_lengths(R, p, legs, iall, gimbal_eps, q, Jl):
            return -1.0
    elif ups_motion(R, p, none, none, legs, iall, gimbal_eps, 0.0, False, False, False, q, none, none, Jl, none_g,
                    info)[0] == UPS_GIMBAL:
        return -1.0
    total = 0.0
    for k in range(rows.shape[0]):
        r[k] = q[rows[k]] - qa[k]
        total += r[k] * r[k]
        for j in range(6):
            J[k, j] = Jl[act[k], j]
    return math.sqrt(total)


@numba.njit((_V, _V, _M, _V, _M, _I, numba.float64, numba.float64, numba.int64, numba.float64,
             numba.float64, numba.float64[:, ::1], numba.float64[::1], numba.float64[:, ::1], numba.float64[::1],
             numba.float64[::1]), cache=True)
def ups_forward(qa, qd, R0, p0, legs, index, gimbal_eps, tol, max_iter, damping, limit, R, p, J, xd, out):
    """6-UPS forward kinematics from the guess (R0, p0): forward.forward_kinematics' damped Gauss-Newton in one
    compiled call (its steps, tests and errors; the same pose to the tolerance): r = q_a(x) - q_a, J from ups_motion
    (Taghirad's J, rows [u^T, (b x u)^T]); dx = -J^-1 r (square), or -(J^T J + damping I)^-1 J^T r (redundant
    actuation, or J singular); the step halved while it does not reduce |r| (least squares: by more than 1e-12
    relative) or a leg is in gimbal lock, down to 1e-6; the pose moved by task_space.retract: p + dx[:3],
    exp([dx[3:]]x) R (rodrigues). Converged at |r| <= tol
    (redundant: also at a step |dx| <= tol). With the actuated velocities qd (length 0: none) and square J, also the
    state estimator's twist (estimator.py: Taghirad's qdot_a = J xdot, xd = J^-1 qd) and the reciprocal condition
    number of J, 1 / (|J|_1 |J^-1|_1) (exact; LAPACK's dgecon estimates it).

    qa: the measured actuated positions; legs: ups_motion's; index: (rows, act, iall) in one array (two arguments fewer
    to dispatch, ~0.05 us each): rows the tree index of each actuated joint, act its leg (J's row), iall ups_motion's;
    their number m is J's rows. Writes the pose into R (3 x 3), p (3), J (actuated rows) at it, xd (6, or 0: not
    computed) and out = (|r| at the last pose reached, rcond, |task.difference(pose, guess)|: sqrt(|p - p0|^2 +
    theta^2), theta the angle of R R0^T). Returns (status UPS_FK_*, iterations); UPS_FK_INPUT: qa, qd or the guess
    failed the checks of forward_kinematics (finite, within ``limit``, the shapes, R0 a rotation: motion_ok), nothing
    computed."""
    m = J.shape[0]
    rows, act, iall = index[:m], index[m:2 * m], index[2 * m:]
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
            e00, e01, e02, e10, e11, e12, e20, e21, e22 = rodrigues(step * dx[3], step * dx[4], step * dx[5])
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
