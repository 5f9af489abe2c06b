"""Compiled kernels of the 6-PUS family (hexapod_pus.py, Lopes): the IK, rates, accelerations, J and G of a platform
motion in one pass over the legs, and the spherical joints' cone angles and their rate rows. A module of its own,
imported by the family (kernels.py: a process loads its robot's family's kernels only)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import MAGNITUDE_LIMIT
from .kernels import _M, _V, _cone_rate_gain, motion_ok, platform_joints


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
