"""Compiled kernels of the planar_redundant family (planar_redundant.py; Wu et al. 2009, seed 003): all tree joints of a
platform motion in one pass, and the IK of a batch of poses. A module of its own, imported by the family (kernels.py:
a process loads its robot's family's kernels only)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import MAGNITUDE_LIMIT
from .kernels import _M, _V, motion_ok


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
