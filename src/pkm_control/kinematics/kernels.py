"""Compiled per-leg loops of the hexapod families: the IK, rates, accelerations, J and G of 6-UPS and of 6-PUS.

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

#: ups_forward's status: converged; the guess is no assembly (a leg in gimbal lock); the Jacobian is singular to
#: working precision (a step beyond the magnitude limit, or not finite); the line search stalled; no convergence in
#: max_iter iterations (forward.forward_kinematics' errors, same order); the inputs failed the checks
UPS_FK_OK, UPS_FK_GUESS, UPS_FK_SINGULAR, UPS_FK_STALLED, UPS_FK_MAX_ITER, UPS_FK_INPUT = 0, 1, 2, 3, 4, 5

_I = numba.types.Array(numba.int64, 1, "A", readonly=True)


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


@numba.njit((_M, _V, _M, numba.float64[:, ::1]), cache=True)
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


# ---------------------------------------------------------------------------------------------------- 6-PUS (Lopes)

#: pus_motion's status: solved; a leg out of reach (info[0] = rho^2); a link horizontal where J_q must be inverted
#: (J, rates, G; info[0] = h); a link vertical where the universal joint's rates are needed (rates, G; info[0] =
#: rho^2); ZYX Euler rates singular (|pitch| = pi/2, info[0] = pitch); the inputs failed motion_ok (nothing computed)
PUS_OK, PUS_REACH, PUS_HORIZONTAL, PUS_VERTICAL, PUS_PITCH, PUS_INPUT = 0, 1, 2, 3, 4, 5
#: relative tolerance on L^2 - rho^2 < 0 still treated as the boundary of the reach (h = 0)
PUS_REACH_TOL = 1e-12
#: at or below this rho^2 (m^2) a link is vertical: the universal joint is gimbal-locked, u1 undefined
PUS_VERTICAL_RHO2 = 1e-24


@numba.njit(cache=True)
def _pus_leg(R, p, C, L2):
    """One 6-PUS leg (C: its row of pus_motion's ``legs``) at the pose (R, p): r = R p_i, d_x, d_y of
    d = p + r - b_i, rho^2 and h = a_z = sqrt(L^2 - rho^2), h = -1 where the link cannot reach (L^2 - rho^2 below
    -PUS_REACH_TOL L^2; above it and below 0: the boundary, h = 0)."""
    rx = R[0, 0] * C[2] + R[0, 1] * C[3]
    ry = R[1, 0] * C[2] + R[1, 1] * C[3]
    rz = R[2, 0] * C[2] + R[2, 1] * C[3]
    dx = p[0] + rx - C[0]
    dy = p[1] + ry - C[1]
    rho2 = dx * dx + dy * dy
    s = L2 - rho2
    if s < 0.0:
        if s < -PUS_REACH_TOL * L2:
            return rx, ry, rz, dx, dy, rho2, -1.0
        s = 0.0
    return rx, ry, rz, dx, dy, rho2, math.sqrt(s)


@numba.njit(cache=True)
def _pus_cone_cosine(R, dx, dy, h, L):
    """Cosine of a spherical joint's cone angle: between the link a = (d_x, d_y, h) (|a| = L) and the platform
    normal R e_z."""
    return (R[0, 2] * dx + R[1, 2] * dy + R[2, 2] * h) / L


@numba.njit((_M, _V, _M, numba.float64, numba.float64[::1]), cache=True)
def pus_cone_angles(R, p, legs, L, out):
    """The spherical joints' cone angles of a 6-PUS pose into ``out`` (n), hexapod_pus.cut_joint_angles (the end
    stops' cut joints, every simulation stage). Returns -1, or the first leg that cannot reach (``out`` then
    incomplete)."""
    L2 = L * L
    for i in range(legs.shape[0]):
        _, _, _, dx, dy, _, h = _pus_leg(R, p, legs[i], L2)
        if h < 0.0:
            return i
        out[i] = math.acos(max(-1.0, min(1.0, _pus_cone_cosine(R, dx, dy, h, L))))
    return -1


@numba.njit((_M, _V, _M, numba.float64, numba.float64[:, ::1]), cache=True)
def pus_cone_rows(R, p, legs, L, rows):
    """d(cone angle rates) / d(twist) of a 6-PUS pose into ``rows`` (n x 6), hexapod_pus.cut_joint_rows (the cut-joint
    end stops' rate map, every simulation stage in contact). With n = R e_z, a = (d_x, d_y, h) (|a| = L) and the
    actuator rate l' = a . d' / h (a . a' = 0, a' = d' - l' z_B, d' = v + omega x r), the cone cosine c = n . a / L
    moves as L c' = v . (n - n_z a / h) + omega . (n x a + r x n - n_z (r x a) / h), and the angle as
    theta' = -c' / sin(theta). A row is zero where sin(theta) <= 1e-12 (a cone angle is |.|-like at 0: no
    derivative there). Returns -1, or the first leg that cannot reach or whose link is horizontal (h = 0: the
    actuator rate is unbounded; ``rows`` then incomplete)."""
    L2 = L * L
    nx, ny, nz = R[0, 2], R[1, 2], R[2, 2]
    for i in range(legs.shape[0]):
        rx, ry, rz, ax, ay, _, h = _pus_leg(R, p, legs[i], L2)
        if h <= 0.0:
            return i
        c = max(-1.0, min(1.0, _pus_cone_cosine(R, ax, ay, h, L)))
        g = _cone_rate_gain(rows, i, c, L)
        if g == 0.0:
            continue
        m = nz / h
        rows[i, 0], rows[i, 1], rows[i, 2] = g * (nx - m * ax), g * (ny - m * ay), g * (nz - m * h)
        # n x a + r x n - m (r x a)
        rows[i, 3] = g * ((ny * h - nz * ay) + (ry * nz - rz * ny) - m * (ry * h - rz * ay))
        rows[i, 4] = g * ((nz * ax - nx * h) + (rz * nx - rx * nz) - m * (rz * ax - rx * h))
        rows[i, 5] = g * ((nx * ay - ny * ax) + (rx * ny - ry * nx) - m * (rx * ay - ry * ax))
    return -1


@numba.njit((_M, _V, _V, _V, _M, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64,
             numba.float64, numba.boolean, numba.boolean, numba.float64[::1], numba.float64[::1],
             numba.float64[::1], numba.float64[:, ::1], numba.float64[:, ::1], numba.float64[::1]), cache=True)
def pus_motion(R, p, twist, accel, legs, iall, L, cos_cone, check, validate, q, v, a, J, G, info):
    """6-PUS (hexapod_pus, Lopes): all tree joints of a platform motion in one pass over the legs (the formulas of
    hexapod_pus's module docstring).

    Per leg, with r = R p_i, d = p + r - b_i, rho^2 = d_x^2 + d_y^2, h = a_z = sqrt(L^2 - rho^2):
    l = d_z - h, u1 = atan2(d_y, d_x) - g0 (wrapped to (-pi, pi]), u2 = atan2(h, rho); J = J_q^-1 J_x (Lopes'
    J_C, eq. 6) rows [a^T, (r x a)^T] / h, a = (d_x, d_y, h); rates from a . a' = 0 with a' = d' - l' z_B,
    d' = v + w x r, accelerations by differentiating once more (d'' = p'' + w' x r + w x (w x r)); G (with G of
    nv rows): the rows of J, of u1' = (d_x d_y' - d_y d_x') / rho^2 and u2' = (rho a_z' - h rho') / L^2 as maps of
    (v, w) (d' = D (v, w), D = [I, -[r]x]), the platform rows the ZYX Euler rate rows.

    legs: (n, 11) rows (b_x, b_y, p_x, p_y (p_i in the platform frame, z = 0), g0 (u1's zero direction), then the
    lower and upper limits of l, u1, u2); iall: the tree indices of l (n), u1 (n), u2 (n), then the platform's
    x y z yaw pitch roll. twist / accel of length 0: no rates / accelerations; J of 0 rows: no J; G of 0 rows: no G
    (else nv x 6, zeros on entry). ``check``: test the limits and the spherical joints' cones (angle between the
    link a and the platform normal R e_z); ``validate``: first the shapes (R 3 x 3, p 3, twist 6 or 0, accel 6 or 0,
    only with a twist) and motion_ok (errors.MAGNITUDE_LIMIT), PUS_INPUT if they fail.
    Writes into the caller's arrays: q (nv), v and a (nv, or empty), J (n x 6 or 0 x 6), G, info (4). Returns
    (status, leg, out_of_range, cone_leg): status as PUS_OK ... PUS_INPUT, leg the leg it names; out_of_range: some
    joint outside its range; cone_leg: the leg with the smallest cone cosine info[1] when that is below cos_cone
    (-1: none). The first leg that fails stops the pass (leg order), as the errors are raised in that order.
    """
    n = legs.shape[0]
    rates = twist.shape[0] == 6
    accs = rates and accel.shape[0] == 6
    want_j, want_g = J.shape[0] > 0, G.shape[0] > 0
    need_h = rates or want_j or want_g
    out_of_range = False
    cone_leg = -1
    if validate and not (R.shape[0] == 3 and R.shape[1] == 3 and p.shape[0] == 3 and twist.shape[0] in (0, 6)
                         and accel.shape[0] in (0, twist.shape[0]) and motion_ok(R, p, twist, accel, MAGNITUDE_LIMIT)):
        return PUS_INPUT, -1, out_of_range, cone_leg
    z = p[2]
    L2 = L * L
    v0 = v1 = v2 = w0 = w1 = w2 = 0.0
    a0 = a1 = a2 = e0 = e1 = e2 = 0.0
    if rates:
        v0, v1, v2, w0, w1, w2 = twist[0], twist[1], twist[2], twist[3], twist[4], twist[5]
    if accs:
        a0, a1, a2, e0, e1, e2 = accel[0], accel[1], accel[2], accel[3], accel[4], accel[5]
    cone_min = cos_cone
    for i in range(n):
        C = legs[i]
        rx, ry, rz, dx, dy, rho2, h = _pus_leg(R, p, C, L2)
        if h < 0.0:
            info[0] = rho2
            return PUS_REACH, i, out_of_range, cone_leg
        rho = math.sqrt(rho2)
        l = z + rz - h
        u1 = math.atan2(dy, dx) - C[4]
        if u1 > math.pi:
            u1 -= 2.0 * math.pi
        elif u1 <= -math.pi:
            u1 += 2.0 * math.pi
        u2 = math.atan2(h, rho)
        il, i1, i2 = iall[i], iall[n + i], iall[2 * n + i]
        q[il], q[i1], q[i2] = l, u1, u2
        if check:
            if not (C[5] <= l <= C[6] and C[7] <= u1 <= C[8] and C[9] <= u2 <= C[10]):
                out_of_range = True
            c = _pus_cone_cosine(R, dx, dy, h, L)
            if c < cone_min:
                cone_min, cone_leg = c, i
                info[1] = c
        if not need_h:
            continue
        if not h > 0.0:
            info[0] = h
            return PUS_HORIZONTAL, i, out_of_range, cone_leg
        if (rates or want_g) and not rho2 > PUS_VERTICAL_RHO2:
            info[0] = rho2
            return PUS_VERTICAL, i, out_of_range, cone_leg
        ih = 1.0 / h
        j0, j1 = dx * ih, dy * ih
        j3, j4, j5 = (ry * h - rz * dy) * ih, (rz * dx - rx * h) * ih, (rx * dy - ry * dx) * ih
        if want_j:
            J[i, 0], J[i, 1], J[i, 2], J[i, 3], J[i, 4], J[i, 5] = j0, j1, 1.0, j3, j4, j5
        if want_g:
            Jrow = (j0, j1, 1.0, j3, j4, j5)
            Dx = (1.0, 0.0, 0.0, 0.0, rz, -ry)          # rows of d' = D (v, w), D = [I, -[r]x]
            Dy = (0.0, 1.0, 0.0, -rz, 0.0, rx)
            Dz = (0.0, 0.0, 1.0, ry, -rx, 0.0)
            for k in range(6):
                rhod = (dx * Dx[k] + dy * Dy[k]) / rho
                G[il, k] = Jrow[k]
                G[i1, k] = (dx * Dy[k] - dy * Dx[k]) / rho2
                G[i2, k] = (rho * (Dz[k] - Jrow[k]) - h * rhod) / L2
        if rates:
            # r' = w x r; a' = (d'_x, d'_y, d'_z - l') with d' = v + w x r
            wr0 = w1 * rz - w2 * ry
            wr1 = w2 * rx - w0 * rz
            wr2 = w0 * ry - w1 * rx
            ad0 = v0 + wr0
            ad1 = v1 + wr1
            dd2 = v2 + wr2
            ld = (dx * ad0 + dy * ad1 + h * dd2) * ih
            ad2 = dd2 - ld
            u1d = (dx * ad1 - dy * ad0) / rho2
            rhod = (dx * ad0 + dy * ad1) / rho
            u2d = (rho * ad2 - h * rhod) / L2
            v[il], v[i1], v[i2] = ld, u1d, u2d
            if accs:
                # c = p'' + w' x r + w x (w x r);  a'' = (c_x, c_y, c_z - l'')
                c0 = a0 + (e1 * rz - e2 * ry) + (w1 * wr2 - w2 * wr1)
                c1 = a1 + (e2 * rx - e0 * rz) + (w2 * wr0 - w0 * wr2)
                c2 = a2 + (e0 * ry - e1 * rx) + (w0 * wr1 - w1 * wr0)
                adsq = ad0 * ad0 + ad1 * ad1
                ldd = (dx * c0 + dy * c1 + h * c2 + adsq + ad2 * ad2) * ih
                add2 = c2 - ldd
                rhodd = (adsq + dx * c0 + dy * c1 - rhod * rhod) / rho
                a[il] = ldd
                a[i1] = (dx * c1 - dy * c0) / rho2 - 2.0 * u1d * rhod / rho
                a[i2] = (rho * add2 - h * rhodd) / L2
    if not platform_joints(R, p, twist, accel, accs, rates, want_g, iall[3 * n:], q, v, a, G, info):
        return PUS_PITCH, -1, out_of_range, cone_leg
    return PUS_OK, -1, out_of_range, cone_leg


@numba.njit((_M, _V, _V, _V, _M, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64,
             numba.float64[::1], numba.float64[::1], numba.float64[::1], numba.float64[:, ::1]), cache=True)
def pus_tree_state(R, p, twist, accel, legs, iall, L, q, v, a, G):
    """pus_motion's q, v, a and G (nv x 6, zeros on entry) of a validated motion without limit checks, the dynamics'
    state (hexapod_pus.tree_state), in eleven arguments instead of sixteen (numba's dispatch costs ~0.06 us an
    array argument). Returns pus_motion's status."""
    return pus_motion(R, p, twist, accel, legs, iall, L, -1.0, False, False, q, v, a, np.empty((0, 6)), G,
                      np.empty(4))[0]


@numba.njit((_M, _V, _V, _M, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64, numba.boolean,
             numba.float64[::1], numba.float64[::1]), cache=True)
def pus_tree_motion(R, p, twist, legs, iall, L, validate, q, v):
    """pus_motion's (q, v) without limit checks, the forward dynamics' inner call (hexapod_pus.tree_motion_into), in
    nine arguments; ``validate``: PUS_INPUT also for a twist of a length other than 6 (pus_motion takes length 0 as
    none). Returns pus_motion's status."""
    if validate and twist.shape[0] != 6:
        return PUS_INPUT
    empty = np.empty(0)
    return pus_motion(R, p, twist, empty, legs, iall, L, -1.0, False, validate, q, v, empty, np.empty((0, 6)),
                      np.empty((0, 6)), np.empty(4))[0]


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


# ---------------------------------------------------------------- planar_redundant (Wu et al. 2009, seed 003)

#: planar_redundant_motion's status: solved; the pose leaves the plane (info = z, R_zz); a link's column too far
#: (|x - x_D| >= l, info = column, x - x_D); a strut of zero length (info = column, length); the inputs failed the
#: shape checks or motion_ok (nothing computed)
PR_OK, PR_PLANE, PR_LINK, PR_STRUT, PR_INPUT = 0, 1, 2, 3, 4


@numba.njit(cache=True)
def _wrapped(angle):
    """angle - 2 pi n (n the nearest integer, ties to even): math.remainder(angle, 2 pi), which numba lacks."""
    return angle - 2.0 * math.pi * round(angle / (2.0 * math.pi))


@numba.njit((_M, _V, _V, _V, _V, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.boolean,
             numba.boolean, numba.boolean, numba.float64[::1], numba.float64[::1], numba.float64[::1],
             numba.float64[:, ::1], numba.float64[:, ::1], numba.float64[::1]), cache=True)
def planar_redundant_motion(R, p, twist, accel, geo, idx, check, want_g, validate, q, v, a, J, G, info):
    """planar_redundant (Wu et al., seed 003): all tree joints of a platform motion (x, y, alpha) in one pass.

    Positions by Wu eq. 18-20 ('-' root of eq. 20a-b): dx_i = x - c_i, h_i = sqrt(l^2 - dx_i^2), slider
    q_i = y - l5 - h_i, link angle beta_i = atan2(dx_i, h_i); strut from E_i = (c_i, q_i) to B = (x - l6 sin alpha,
    y - l6 cos alpha), r = l (sin phi, cos phi); counterweight ratio q_i + offset. Rates by eq. 21-23
    (qdot_i = ydot + t_i xdot, t_i = tan beta_i, betadot_i = xdot / h_i, ldot = u . W xdot, phidot = n . W xdot / l,
    W = [[1, 0, -l6 cos alpha], [-t_i, 0, l6 sin alpha]], u = (sin phi, cos phi), n = (cos phi, -sin phi)) and
    accelerations as their exact time derivatives. J rows: sliders [t_i, 1, 0], struts u^T W; G: every tree joint's
    row (the platform's the identity).

    geo: l, l5, l6, c_1, c_2, counterweight ratio and offset, alpha_sign (R = Rz(alpha_sign alpha)), the cut
    joints' ranges (link-platform lower, upper, strut-platform lower, upper; widened by the caller's tolerance),
    then the tree joints' lower and upper limits (nv each, widened).
    idx: ns (struts), na (actuators), the tree indices of x, y, alpha, slider 1-2, beta 1-2, counterweight 1-2,
    then per strut its column (0 / 1), its length's and its angle's tree indices (ns each), then the rows of the
    actuated joints in [q1, q2, l_strut...] (na).
    twist / accel of length 0: no rates / accelerations. ``check``: test the limits and the cut joints;
    ``validate``: first the shapes (R 3 x 3, p 3, twist 3 or 0, accel 3 or 0 and only with a twist) and motion_ok
    (errors.MAGNITUDE_LIMIT), PR_INPUT if they fail.
    Writes into the caller's arrays: q (nv), v and a (nv, or empty without twist / accel), J (na x 3), G (nv x 3,
    or 0 x 3 without want_g), info (2). Returns (status, out_of_range, cut): out_of_range some tree joint outside
    its range, cut the first cut joint outside its range (0, 1 the links, 2 + k strut k; -1 none).
    """
    out_of_range = False
    cut = -1
    if validate and not (R.shape[0] == 3 and R.shape[1] == 3 and p.shape[0] == 3 and twist.shape[0] in (0, 3)
                         and accel.shape[0] in (0, twist.shape[0]) and motion_ok(R, p, twist, accel, MAGNITUDE_LIMIT)):
        return PR_INPUT, out_of_range, cut
    if abs(p[2]) > 1e-9 or abs(R[2, 2] - 1.0) > 1e-9:
        info[0], info[1] = p[2], R[2, 2]
        return PR_PLANE, out_of_range, cut
    l, l5, l6, ratio, offset = geo[0], geo[1], geo[2], geo[5], geo[6]
    x, y = p[0], p[1]
    s, c = geo[7] * R[1, 0], R[0, 0]
    alpha = math.atan2(s, c)
    ns, na = idx[0], idx[1]
    nv = q.shape[0]
    i_sl, i_beta, i_cw = idx[5:7], idx[7:9], idx[9:11]
    cols, i_len, i_phi = idx[11:11 + ns], idx[11 + ns:11 + 2 * ns], idx[11 + 2 * ns:11 + 3 * ns]
    rows = idx[11 + 3 * ns:]
    dx1, dx2 = x - geo[3], x - geo[4]
    for i in range(2):
        d = dx1 if i == 0 else dx2
        if not l * l - d * d > 0.0:
            info[0], info[1] = i, d
            return PR_LINK, out_of_range, cut
    h1, h2 = math.sqrt(l * l - dx1 * dx1), math.sqrt(l * l - dx2 * dx2)
    q1, q2 = y - l5 - h1, y - l5 - h2
    t1, t2 = dx1 / h1, dx2 / h2
    q[idx[2]], q[idx[3]], q[idx[4]] = x, y, alpha
    q[i_sl[0]], q[i_sl[1]] = q1, q2
    q[i_beta[0]], q[i_beta[1]] = math.atan2(dx1, h1), math.atan2(dx2, h2)
    q[i_cw[0]], q[i_cw[1]] = ratio * q1 + offset, ratio * q2 + offset
    rates = twist.shape[0] == 3
    accs = rates and accel.shape[0] == 3
    xd = yd = ad = xdd = ydd = add = 0.0
    if rates:
        xd, yd, ad = twist[0], twist[1], twist[2]
        v[idx[2]], v[idx[3]], v[idx[4]] = xd, yd, ad
        qd1, qd2 = yd + t1 * xd, yd + t2 * xd
        v[i_sl[0]], v[i_sl[1]] = qd1, qd2
        v[i_beta[0]], v[i_beta[1]] = xd / h1, xd / h2
        v[i_cw[0]], v[i_cw[1]] = ratio * qd1, ratio * qd2
    qdd1 = qdd2 = 0.0
    if accs:
        xdd, ydd, add = accel[0], accel[1], accel[2]
        a[idx[2]], a[idx[3]], a[idx[4]] = xdd, ydd, add
        qdd1 = ydd + t1 * xdd + l * l * xd * xd / (h1 * h1 * h1)
        qdd2 = ydd + t2 * xdd + l * l * xd * xd / (h2 * h2 * h2)
        a[i_sl[0]], a[i_sl[1]] = qdd1, qdd2
        a[i_beta[0]] = xdd / h1 + dx1 * xd * xd / (h1 * h1 * h1)
        a[i_beta[1]] = xdd / h2 + dx2 * xd * xd / (h2 * h2 * h2)
        a[i_cw[0]], a[i_cw[1]] = ratio * qdd1, ratio * qdd2
    # B and its acceleration (r_k'' = B'' - (0, q_col''))
    xb, yb = x - l6 * s, y - l6 * c
    bxdd = xdd - l6 * c * add + l6 * s * ad * ad
    bydd = ydd + l6 * s * add + l6 * c * ad * ad
    for r in range(na):
        if rows[r] < 2:
            J[r, 0], J[r, 1], J[r, 2] = t1 if rows[r] == 0 else t2, 1.0, 0.0
    if want_g:
        G[idx[2], 0] = G[idx[3], 1] = G[idx[4], 2] = 1.0
        G[i_sl[0], 0], G[i_sl[0], 1], G[i_sl[1], 0], G[i_sl[1], 1] = t1, 1.0, t2, 1.0
        G[i_beta[0], 0], G[i_beta[1], 0] = 1.0 / h1, 1.0 / h2
        G[i_cw[0], 0], G[i_cw[0], 1], G[i_cw[1], 0], G[i_cw[1], 1] = ratio * t1, ratio, ratio * t2, ratio
    for k in range(ns):
        col = cols[k]
        qc, tk, qddc = (q1, t1, qdd1) if col == 0 else (q2, t2, qdd2)
        ex, ey = xb - geo[3 + col], yb - qc
        ln = math.sqrt(ex * ex + ey * ey)
        if ln < 1e-9:
            info[0], info[1] = col, ln
            return PR_STRUT, out_of_range, cut
        sp, cp = ex / ln, ey / ln
        q[i_len[k]], q[i_phi[k]] = ln, math.atan2(ex, ey)
        j0, j2 = sp - cp * tk, -l6 * c * sp + l6 * s * cp              # u^T W
        g0, g2 = (cp + sp * tk) / ln, (-l6 * c * cp - l6 * s * sp) / ln   # n^T W / l
        for r in range(na):
            if rows[r] == 2 + k:
                J[r, 0], J[r, 1], J[r, 2] = j0, 0.0, j2
        if want_g:
            G[i_len[k], 0], G[i_len[k], 2] = j0, j2
            G[i_phi[k], 0], G[i_phi[k], 2] = g0, g2
        if rates:
            ld, pd = j0 * xd + j2 * ad, g0 * xd + g2 * ad
            v[i_len[k]], v[i_phi[k]] = ld, pd
            if accs:
                rx, ry = bxdd, bydd - qddc
                a[i_len[k]] = sp * rx + cp * ry + ln * pd * pd
                a[i_phi[k]] = (cp * rx - sp * ry - 2.0 * ld * pd) / ln
    if check:
        lo, hi = geo[12:12 + nv], geo[12 + nv:12 + 2 * nv]
        for j in range(nv):
            if not lo[j] <= q[j] <= hi[j]:
                out_of_range = True
        for m in range(2 + ns):
            angle = q[i_beta[m]] if m < 2 else q[i_phi[m - 2]]
            g = _wrapped(angle - alpha)
            lower, upper = (geo[8], geo[9]) if m < 2 else (geo[10], geo[11])
            if not lower <= g <= upper:
                cut = m
                break
    return PR_OK, out_of_range, cut


@numba.njit((numba.float64[:, ::1], numba.float64[:, :, ::1], numba.boolean[::1], _V,
             numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64[:, ::1], numba.boolean[::1]),
            cache=True)
def planar_redundant_batch(P, Rs, usable, geo, idx, Q, valid):
    """planar_redundant_motion's positions of N poses (P (N, 3), Rs (N, 3, 3)) into Q (N, nv) and valid (N): valid =
    usable, in the plane, reachable, every joint and cut joint within its range; the rows of the poses that are not
    usable, leave the plane or are out of reach are NaN, those that only break a limit keep their joint values."""
    no = np.empty(0)
    J, G, info = np.empty((idx[1], 3)), np.empty((0, 3)), np.empty(2)
    for n in range(P.shape[0]):
        status, out_of_range, cut = planar_redundant_motion(Rs[n], P[n], no, no, geo, idx, True, False, False, Q[n],
                                                            no, no, J, G, info)
        solved = usable[n] and status == PR_OK
        valid[n] = solved and not out_of_range and cut < 0
        if not solved:
            Q[n, :] = np.nan
    return None


# ---------------------------------------------------------------------------------------------- DELTA (delta.py)
#: delta_motion's status: solved; the inputs failed the shape checks or motion_ok (nothing computed); the plate is
#: rotated (st[0, 0] = max |R - I|); leg ``leg`` out of reach (st[leg, 0:2] = G, sqrt(E^2 + F^2)); a joint outside its
#: range (q complete: the caller names the joint); leg ``leg``'s plate ball joint beyond its cone (|elbow2|); leg
#: ``leg``'s arm and forearm aligned (st[leg, 6] = s.b, at most DELTA_SINGULAR_TOL L_A L_B)
DELTA_OK, DELTA_INPUT, DELTA_ROTATION, DELTA_UNREACHABLE, DELTA_LIMIT, DELTA_CONE, DELTA_SINGULAR = range(7)
#: |G| / sqrt(E^2 + F^2) may exceed 1 by this much (rounding at the boundary of the workspace)
DELTA_REACH_TOL = 1e-12
#: the plate cannot rotate: max |R - I| above this is unreachable
DELTA_ROT_TOL = 1e-9
#: s.b at most this times L_A L_B: the arm and the forearm are aligned (inverse singularity)
DELTA_SINGULAR_TOL = 1e-12
#: delta_motion's ``geo`` layout: cos theta_i (3), sin theta_i (3), R = R_A - R_B, L_A, L_B, L_A^2 - L_B^2, the cone
#: limit of elbow2, the lower then the upper limits (tolerance included) of arm 1-3, elbow1 1-3, elbow2 1-3
DELTA_GEO_SIZE = 29


@numba.njit((_M, _V, _V, _V, _V, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.boolean, numba.boolean,
             numba.float64[::1], numba.float64[::1], numba.float64[::1], numba.float64[:, ::1], numba.float64[:, ::1],
             numba.float64[:, ::1]), cache=True)
def delta_motion(R, p, twist, accel, geo, iall, check, validate, q, v, a, J, G, st):
    """DELTA (delta.py, Codourey 1998): all tree joints of a plate motion in one pass over the three arms.

    Per arm, in {R_i} = Rz(theta_i) {R} (eq. 24) with (X, y, z) = (x_i - R, y_i, z) the plate centre moved in:
    the arm angle q = atan2(F, E) - acos(G / sqrt(E^2 + F^2)) of eq. 29 (E = 2 L_A X, F = -2 L_A z,
    G = X^2 + y^2 + z^2 + L_A^2 - L_B^2; elbow-out branch, reported in (-pi, pi]), the forearm s = P - C (eq. 28,
    30), elbow1 = atan2(-s_x, -s_z) - q and elbow2 = asin(s_y / L_B) (the universal joint at the elbow); with the
    rates: J_i = -(R_i s)^T / (s . b) (eq. 31-36, b = L_A [sin q, 0, cos q]), qdot = J_i xdot, sdot = xdot + b qdot
    (eq. 33) and the elbow rates from it; with accelerations d/dt (s . sdot) = 0 for qddot (bdot of eq. 38) and
    the elbow accelerations from sddot; G's rows the gradients of q, elbow1, elbow2 w.r.t. the plate position.

    geo: DELTA_GEO_SIZE floats (its layout above); iall: the tree indices of arm 1-3, elbow1 1-3, elbow2 1-3, then
    platform x y z. twist / accel of length 0: no rates / accelerations. ``check``: test the joint ranges and the
    plate ball joints' cones; ``validate``: first the shapes (R 3 x 3, p 3, twist 3 or 0, accel 3 or 0, only with
    a twist) and motion_ok (errors.MAGNITUDE_LIMIT). Writes into the caller's arrays: q (12), v and a (12, or
    empty without twist / accel), J (3 x 3, or 0 x 3 when neither J, rates nor G are wanted), G (12 x 3, or 0 x 3),
    st (3 x 7: per arm q, cos q, sin q, s_x, s_y, s_z in {R_i} and s.b). Returns (status, leg), the status
    DELTA_OK ... DELTA_SINGULAR; the positions are all written before a limit, cone or singularity is reported.
    """
    rates = twist.shape[0] == 3
    accs = rates and accel.shape[0] == 3
    if validate and not (R.shape[0] == 3 and R.shape[1] == 3 and p.shape[0] == 3 and twist.shape[0] in (0, 3)
                         and accel.shape[0] in (0, twist.shape[0]) and motion_ok(R, p, twist, accel, MAGNITUDE_LIMIT)):
        return DELTA_INPUT, -1
    err = max(abs(R[0, 0] - 1.0), abs(R[1, 1] - 1.0), abs(R[2, 2] - 1.0), abs(R[0, 1]), abs(R[0, 2]),
              abs(R[1, 0]), abs(R[1, 2]), abs(R[2, 0]), abs(R[2, 1]))
    if not err <= DELTA_ROT_TOL:
        st[0, 0] = err
        return DELTA_ROTATION, -1
    px, py, pz = p[0], p[1], p[2]
    Rr, LA, LB, g0, cone = geo[6], geo[7], geo[8], geo[9], geo[10]
    for k in range(3):
        q[iall[9 + k]] = p[k]
    # positions (eq. 28-30), every arm before any limit or singularity is reported
    F = -2.0 * LA * pz
    out_of_range = False
    cone_leg = -1
    for i in range(3):
        c, s = geo[i], geo[3 + i]
        X = c * px + s * py - Rr
        y = c * py - s * px
        E = 2.0 * LA * X
        Gc = X * X + y * y + pz * pz + g0
        r = math.sqrt(E * E + F * F)
        if not (r > 0.0 and abs(Gc) <= (1.0 + DELTA_REACH_TOL) * r):
            st[i, 0], st[i, 1] = Gc, r
            return DELTA_UNREACHABLE, i
        kk = min(1.0, max(-1.0, Gc / r))
        qa = math.atan2(F, E) - math.acos(kk)
        if qa <= -math.pi:                      # (-2 pi, pi] -> (-pi, pi]: no jump at the horizontal arm
            qa += 2.0 * math.pi
        # cos and sin of q = atan2(F, E) - acos(k) from (E, F) / r and (k, sqrt(1 - k^2)): no cos(q), sin(q) calls
        sk = math.sqrt(1.0 - kk * kk)
        cq, sq = (E * kk + F * sk) / r, (F * kk - E * sk) / r
        sx = X - LA * cq
        sz = pz + LA * sq
        e1 = math.atan2(-sx, -sz) - qa
        if e1 <= -math.pi:
            e1 += 2.0 * math.pi
        elif e1 > math.pi:
            e1 -= 2.0 * math.pi
        e2 = math.asin(min(1.0, max(-1.0, y / LB)))
        q[iall[i]], q[iall[3 + i]], q[iall[6 + i]] = qa, e1, e2
        st[i, 0], st[i, 1], st[i, 2], st[i, 3], st[i, 4], st[i, 5] = qa, cq, sq, sx, y, sz
        st[i, 6] = LA * (sx * sq + sz * cq)
        if check:
            if not (geo[11 + i] <= qa <= geo[20 + i] and geo[14 + i] <= e1 <= geo[23 + i]
                    and geo[17 + i] <= e2 <= geo[26 + i]):
                out_of_range = True
            if cone_leg < 0 and abs(e2) > cone:
                cone_leg = i
    if out_of_range:
        return DELTA_LIMIT, -1
    if cone_leg >= 0:
        return DELTA_CONE, cone_leg
    want_g = G.shape[0] > 0
    if not (rates or want_g or J.shape[0] == 3):
        return DELTA_OK, -1
    if rates:
        wx, wy, wz = twist[0], twist[1], twist[2]
        for k in range(3):
            v[iall[9 + k]] = twist[k]
    if accs:
        for k in range(3):
            a[iall[9 + k]] = accel[k]
    if want_g:
        for k in range(3):
            G[iall[9 + k], k] = 1.0
    dtol = DELTA_SINGULAR_TOL * LA * LB
    iL = 1.0 / LB
    for i in range(3):
        c, s = geo[i], geo[3 + i]
        qa, cq, sq, sx, sy, sz, d = st[i, 0], st[i, 1], st[i, 2], st[i, 3], st[i, 4], st[i, 5], st[i, 6]
        if not abs(d) > dtol:
            return DELTA_SINGULAR, i
        inv = -1.0 / d
        J0, J1, J2 = (c * sx - s * sy) * inv, (s * sx + c * sy) * inv, sz * inv     # J_i = -(R_i s)^T / (s.b)
        if J.shape[0] == 3:
            J[i, 0], J[i, 1], J[i, 2] = J0, J1, J2
        n2 = sx * sx + sz * sz                       # (L_B cos elbow2)^2
        if want_g:
            # d(s in {R_i})/dx = R_i^T + b_i J_i, b_i = L_A [sin q, 0, cos q] in {R_i}
            ia, i1, i2 = iall[i], iall[3 + i], iall[6 + i]
            G[ia, 0], G[ia, 1], G[ia, 2] = J0, J1, J2
            G[i1, 0] = (sz * (c + LA * sq * J0) - sx * LA * cq * J0) / n2 - J0
            G[i1, 1] = (sz * (s + LA * sq * J1) - sx * LA * cq * J1) / n2 - J1
            G[i1, 2] = (sz * LA * sq * J2 - sx * (1.0 + LA * cq * J2)) / n2 - J2
            ir = 1.0 / math.sqrt(n2)
            G[i2, 0], G[i2, 1], G[i2, 2] = -s * ir, c * ir, 0.0
        if rates:
            qd = J0 * wx + J1 * wy + J2 * wz
            sdx = c * wx + s * wy + LA * sq * qd     # sdot = xdot + b qdot in {R_i} (eq. 33)
            sdy = c * wy - s * wx
            sdz = wz + LA * cq * qd
            rho2 = n2 * iL * iL
            rho = math.sqrt(rho2)
            ad = (sz * sdx - sx * sdz) * iL * iL / rho2      # d/dt (q + elbow1)
            bd = sdy * iL / rho
            v[iall[i]], v[iall[3 + i]], v[iall[6 + i]] = qd, ad - qd, bd
            if accs:
                aix = c * accel[0] + s * accel[1]
                aiy = c * accel[1] - s * accel[0]
                az = accel[2]
                # d/dt (s . sdot) = 0: s.a + d qdd + qd s.bdot + sdot.sdot = 0, bdot = L_A [cq, 0, -sq] qd (eq. 38)
                qdd = -(sx * aix + sy * aiy + sz * az + LA * (sx * cq - sz * sq) * qd * qd
                        + sdx * sdx + sdy * sdy + sdz * sdz) / d
                sddx = aix + LA * (sq * qdd + cq * qd * qd)
                sddz = az + LA * (cq * qdd - sq * qd * qd)
                rho2d = 2.0 * (sx * sdx + sz * sdz) * iL * iL
                add = ((sz * sddx - sx * sddz) * iL * iL - ad * rho2d) / rho2
                bdd = (aiy * iL + sy * iL * bd * bd) / rho
                a[iall[i]], a[iall[3 + i]], a[iall[6 + i]] = qdd, add - qdd, bdd
    return DELTA_OK, -1


@numba.njit((_M, _V, _V, _V, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.boolean, numba.float64[::1],
             numba.float64[::1]), cache=True)
def delta_tree_motion(R, p, twist, geo, iall, validate, q, v):
    """delta_motion's (q, v), no limit checks, for the forward dynamics' inner call (delta.tree_motion_into): 8
    arguments instead of 14 (numba's dispatch costs ~0.06 us an array argument, a third of this call). With
    ``validate`` a twist of another length than 3 is DELTA_INPUT (delta_motion takes length 0 as no twist). Returns
    delta_motion's status."""
    if validate and twist.shape[0] != 3:
        return DELTA_INPUT
    st = np.empty((3, 7))
    return delta_motion(R, p, twist, twist[:0], geo, iall, False, validate, q, v, q[:0], st[:0], st[:0], st)[0]


@numba.njit((_M, _V, _V, _V, _V, numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64[::1],
             numba.float64[::1], numba.float64[::1], numba.float64[:, ::1]), cache=True)
def delta_tree_state(R, p, twist, accel, geo, iall, q, v, a, G):
    """delta_motion's (q, v, a, G) of validated inputs, no limit checks, for the inverse dynamics' inner call
    (delta.tree_state): 10 arguments instead of 14 (delta_tree_motion). Returns delta_motion's status."""
    st = np.empty((3, 7))
    return delta_motion(R, p, twist, accel, geo, iall, False, False, q, v, a, st[:0], G, st)[0]


@numba.njit((numba.float64[:, ::1], numba.float64[:, :, ::1], numba.boolean[::1], _V,
             numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64[:, ::1], numba.boolean[::1]),
            cache=True)
def delta_inverse_batch(P, Rs, usable, geo, iall, Q, valid):
    """delta_motion's positions of N plate poses (P (N, 3), Rs (N, 3, 3)) into Q (N, 12) and valid (N): valid =
    usable, not rotated, reachable, every joint within its range and cone; the rows of the poses that are not
    usable, rotated or out of reach are NaN, those that only break a limit keep their joint values."""
    no = np.empty(0)
    J, G, st = np.empty((0, 3)), np.empty((0, 3)), np.empty((3, 7))
    for n in range(P.shape[0]):
        status = delta_motion(Rs[n], P[n], no, no, geo, iall, True, False, Q[n], no, no, J, G, st)[0]
        ok = usable[n] and status in (DELTA_OK, DELTA_LIMIT, DELTA_CONE)
        finite = True
        for k in range(Q.shape[1]):
            finite = finite and math.isfinite(Q[n, k])
        valid[n] = ok and finite and status == DELTA_OK
        if not (ok and finite):
            Q[n, :] = np.nan
    return None
