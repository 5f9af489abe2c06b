"""Compiled kernels of the DELTA family (delta.py): all tree joints of a platform motion in one pass, the tree's
state and motion in calls with few arguments, and the IK of a batch of poses. A module of its own, imported by the
family (kernels.py: a process loads its robot's family's kernels only)."""

from __future__ import annotations

import math

import numba
import numpy as np

from ..errors import MAGNITUDE_LIMIT
from .kernels import _M, _V, motion_ok


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
