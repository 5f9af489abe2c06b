"""Compiled kernels of the control period: the input checks, the PD family's formula, the hold behaviour's and
the force limits, the references between two streamed samples, the task-space force laws' PD with its force
distribution, impedance control's terms, admittance control's filter and direct force control's cascade.

Each replaces a sequence of small numpy calls on six-vectors (one ufunc dispatch, and often an
allocation, per operation) by one compiled call. In the real-time loop a period runs after the
other processes had the core, with cold caches: the ~40 numpy and Python-level operations of a
period then cost about three times what they cost run back to back, and the fewer distinct
operations a period touches the less it pays (docs/benchmarks.md).

The kernels compute exactly what the numpy expressions they replace compute, operation by operation
in the same order, without fast-math (no contraction into fused multiply-adds): the results are
bitwise identical (test/test_controller.py). The checks only decide whether everything is valid; when
something is not, the callers take their Python path, which says what is wrong.

Signatures are given (read-only 1-D float64 arrays of any layout, which every 1-D float64 array
converts to), so the kernels are compiled (or loaded from numba's cache) at import, never in a
period, and a call with other types raises TypeError instead of compiling: callers pass 1-D float64
arrays only.

An array a kernel returns costs its caller ~0.5-0.9 us hot (measured: a kernel loaded from numba's cache boxes it
through a Python-level call, numba.core.serialize._numba_unpickle, per array), three to eight times the np.empty of
an output array the caller passes in. The period's own kernels (the references between two samples, the limits, the
joint PD, admittance's filter; the force laws' of jourdain_kernels.py) therefore fill output arrays their callers
allocate.
"""

from __future__ import annotations

import math

import numpy as np

from ..kinematics.kernels import rodrigues

try:  # compiled when numba is available (it is in requirements.txt); the same functions run as Python otherwise
    import numba
except ImportError:  # pragma: no cover
    numba = None


def inputs_valid(q, qd, q_d, qd_d, qdd_d, tau_ff, lower, upper, vmax, step, q_prev, dt):
    """Every array has len(q) components, all finite, and the reference (q_d, qd_d) is inside the reference
    limits (safety.ReferenceLimits.problem, same comparisons; ``lower`` empty: no limits, ``q_prev`` empty or
    dt <= 0: no jump check; ``tau_ff`` empty: no feedforward)."""
    n = q.shape[0]
    if qd.shape[0] != n or q_d.shape[0] != n or qd_d.shape[0] != n or qdd_d.shape[0] != n:
        return False
    if tau_ff.shape[0] not in (0, n):
        return False
    for i in range(n):
        if not (math.isfinite(q[i]) and math.isfinite(qd[i]) and math.isfinite(q_d[i]) and math.isfinite(qd_d[i])
                and math.isfinite(qdd_d[i])):
            return False
    for i in range(tau_ff.shape[0]):
        if not math.isfinite(tau_ff[i]):
            return False
    if lower.shape[0] == n:
        for i in range(n):
            if not (lower[i] <= q_d[i] <= upper[i]) or not abs(qd_d[i]) <= vmax[i]:
                return False
        if q_prev.shape[0] == n and dt > 0:
            for i in range(n):
                if not abs(q_d[i] - q_prev[i]) <= step[i] * dt + 1e-9:
                    return False
    return True


def pd(kp, kd, q_d, qd_d, q, qd, tau_ff, out):
    """``out`` = Kp (q_d - q) + Kd (qd_d - qd), plus tau_ff when it is not empty (laws._PD.pd, PDFeedforward, the force
    laws' joint loop); kp, kd hold one gain per joint."""
    n = q.shape[0]
    if not (kp.shape[0] == kd.shape[0] == q_d.shape[0] == qd_d.shape[0] == qd.shape[0] == out.shape[0] == n
            and tau_ff.shape[0] in (0, n)):
        raise ValueError("pd: the gains and vectors differ in size")
    for i in range(n):
        out[i] = kp[i] * (q_d[i] - q[i]) + kd[i] * (qd_d[i] - qd[i])
    if tau_ff.shape[0] == n:
        for i in range(n):
            out[i] = tau_ff[i] + out[i]


def hold(tau_g, kp, kd, q_hold, q, qd):
    """tau_g + Kp (q_hold - q) - Kd qd, evaluated left to right as numpy does (safety.SafeBehaviour.command)."""
    n = q.shape[0]
    if not (tau_g.shape[0] == kp.shape[0] == kd.shape[0] == q_hold.shape[0] == qd.shape[0] == n):
        raise ValueError("hold: the gains and vectors differ in size")
    out = np.empty(n)
    for i in range(n):
        out[i] = (tau_g[i] + kp[i] * (q_hold[i] - q[i])) - kd[i] * qd[i]
    return out


def saturate(tau, limits, out, sat):
    """(any saturated, tau finite), with ``out`` tau clipped to [-limits, limits] and ``sat`` |tau| > limits per
    actuator: one pass of safety.ForceLimits.apply and the finiteness check of the law's force (finite tau only: see
    ForceLimits.saturate)."""
    n = tau.shape[0]
    if not (limits.shape[0] == out.shape[0] == sat.shape[0] == n):
        raise ValueError("saturate: the forces, limits and outputs differ in size")
    finite, any_sat = True, False
    for i in range(n):
        x, lim = tau[i], limits[i]
        finite = finite and math.isfinite(x)
        out[i] = min(max(x, -lim), lim)
        sat[i] = abs(x) > lim
        any_sat = any_sat or sat[i]
    return any_sat, finite


def within(tau, bound):
    """len(tau) == len(bound), tau finite and |tau| <= bound (hardware.interface.CommandCheck's test)."""
    if tau.shape[0] != bound.shape[0]:
        return False
    for i in range(tau.shape[0]):
        if not (math.isfinite(tau[i]) and abs(tau[i]) <= bound[i]):
            return False
    return True


def hermite(r0, r1, w, h):
    """The references [q, qd, qdd] (n values each) at w in [0, 1] between two samples r0, r1 h seconds apart:
    cubic Hermite on q (from q and qd at both samples) and on qd (from qd, qdd), linear on qdd. The error is at
    most h^4 max|f^(4)| / 384 on q and qd (f the motion), h^2 max|qdd''| / 8 on qdd: streamed at 500 Hz, the
    benchmark circle's q within ~1e-11 m, where linear interpolation would be off by h^2 max|qdd| / 8, ~3 um.
    A new array, filled by the compiled ``hermite_into`` (a compiled call that returns an array costs more: module
    docstring)."""
    out = np.empty(r0.shape[0])
    hermite_into(r0, r1, w, h, out)
    return out


def hermite_into(r0, r1, w, h, out):
    """``hermite`` into ``out`` (3 n values, as r0 and r1)."""
    n = r0.shape[0] // 3
    if not (r0.shape[0] == r1.shape[0] == out.shape[0] == 3 * n):
        raise ValueError("hermite: the samples and the output differ in size")
    w2 = w * w
    w3 = w2 * w
    h00, h10, h01, h11 = 2 * w3 - 3 * w2 + 1, (w3 - 2 * w2 + w) * h, 3 * w2 - 2 * w3, (w3 - w2) * h
    for i in range(2 * n):
        out[i] = h00 * r0[i] + h01 * r1[i] + h10 * r0[i + n] + h11 * r1[i + n]
    for i in range(2 * n, 3 * n):
        out[i] = (1 - w) * r0[i] + w * r1[i]


def sensor_wrench(R, w, p):
    """A 6-axis sensor's wrench w = (f_s, m_s) (sensor frame: platform axes at the point p, platform frame) in the
    base axes at the platform origin: f = R f_s, m = R m_s + (R p) x f (force.task_wrench). Row by row in the order
    of the numpy expressions; a matrix-vector product in numpy may sum in another order: equal to ~1 ulp."""
    out = np.empty(6)
    r = np.empty(3)
    for i in range(3):
        out[i] = R[i, 0] * w[0] + R[i, 1] * w[1] + R[i, 2] * w[2]
        out[3 + i] = R[i, 0] * w[3] + R[i, 1] * w[4] + R[i, 2] * w[5]
        r[i] = R[i, 0] * p[0] + R[i, 1] * p[1] + R[i, 2] * p[2]
    out[3] += r[1] * out[2] - r[2] * out[1]
    out[4] += r[2] * out[0] - r[0] * out[2]
    out[5] += r[0] * out[1] - r[1] * out[0]
    return out


def _so3_log(E):
    """so3_log(E) (task_space): the angle from the trace, th / (2 sin th) v (v the skew part), v / 2 below 1e-8 rad,
    the axis from the symmetric part within 1e-6 of pi. Returns (x, y, z)."""
    th = math.acos(min(max(((E[0, 0] + E[1, 1] + E[2, 2]) - 1) / 2, -1.0), 1.0))
    vx, vy, vz = E[2, 1] - E[1, 2], E[0, 2] - E[2, 0], E[1, 0] - E[0, 1]
    if th < 1e-8:
        return 0.5 * vx, 0.5 * vy, 0.5 * vz
    if math.pi - th < 1e-6:
        k = 0
        for i in range(1, 3):
            if (E[i, i] + 1) / 2 > (E[k, k] + 1) / 2:
                k = i
        root = math.sqrt((E[k, k] + 1) / 2)
        ax, ay, az = ((E[0, k] + (k == 0)) / 2 / root, (E[1, k] + (k == 1)) / 2 / root,
                      (E[2, k] + (k == 2)) / 2 / root)
        sign = 1.0 if ax * vx + ay * vy + az * vz >= 0 else -1.0
        return th * ax * sign, th * ay * sign, th * az * sign
    c = th / (2 * math.sin(th))
    return c * vx, c * vy, c * vz


def pose_error(R_d, p_d, R, p, twist_d, twist):
    """(e, e') of a spatial task in one array of 12: e = X_d (-) X = (p_d - p, so3_log(R_d R^T)) (task_space.
    TaskSpace.difference), e' = xdot_d - xdot (laws._TaskSpace.errors). R_d R^T row by row as numpy's matrix
    product (equal to ~1 ulp)."""
    out = np.empty(12)
    E = np.empty((3, 3))
    for i in range(3):
        out[i] = p_d[i] - p[i]
        out[6 + i] = twist_d[i] - twist[i]
        out[9 + i] = twist_d[3 + i] - twist[3 + i]
        for j in range(3):
            E[i, j] = R_d[i, 0] * R[j, 0] + R_d[i, 1] * R[j, 1] + R_d[i, 2] * R[j, 2]
    out[3], out[4], out[5] = _so3_log(E)
    return out


def task_pd(R_d, p_d, R, p, twist_d, twist, kp, kd):
    """Kp e + Kd e' of a spatial task (laws._TaskSpace.task_pd), (e, e') as pose_error: its formula element by
    element, the numpy expression's order (kp * e first)."""
    err = pose_error(R_d, p_d, R, p, twist_d, twist)
    out = np.empty(6)
    for i in range(6):
        out[i] = kp[i] * err[i] + kd[i] * err[6 + i]
    return out


def task_hermite(R0, p0, x0, R1, p1, x1, w, h, out):
    """The desired platform motion of a spatial task at w in [0, 1] between two streamed samples h seconds apart
    (control.loop: the references at the stream rate, the periods between them): the pose, twist and acceleration of
    the samples ((R, p) and x = [xd (6), xdd (6)]) as ``hermite`` takes q, qd, qdd. Position: cubic Hermite on p
    from p and v, on v from v and a, a linear. Rotation: R(w) = exp(phi(w)) R0 (base frame, task_space.retract),
    phi cubic Hermite from phi(0) = 0, phi(1) = log(R1 R0^T) and the rates phi'(0) = omega0, phi'(1) = dexp^-1(phi1)
    omega1 = omega1 - phi1 x omega1 / 2 + phi1 x (phi1 x omega1) / 12 (omega = dexp(phi) phi', the base-frame angular
    velocity of exp(phi) R0; the series to second order in |phi1| = |omega| h); omega cubic Hermite from omega and
    the angular acceleration, that linear. Returns [p (3), R row-major (9), xd (6), xdd (6)] (24). Against the
    forward kinematics of the interpolated joint references the difference is of the order of either
    interpolation's own error (h^4 |f^(4)| / 384; test_controller). Into ``out`` (24 values)."""
    if out.shape[0] != 24:
        raise ValueError("task_hermite: the output takes 24 values")
    w2 = w * w
    w3 = w2 * w
    h00, h10, h01, h11 = 2 * w3 - 3 * w2 + 1, (w3 - 2 * w2 + w) * h, 3 * w2 - 2 * w3, (w3 - w2) * h
    for i in range(3):
        out[i] = h00 * p0[i] + h01 * p1[i] + h10 * x0[i] + h11 * x1[i]
    for i in range(6):
        out[12 + i] = h00 * x0[i] + h01 * x1[i] + h10 * x0[6 + i] + h11 * x1[6 + i]
        out[18 + i] = (1 - w) * x0[6 + i] + w * x1[6 + i]
    E = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            E[i, j] = R1[i, 0] * R0[j, 0] + R1[i, 1] * R0[j, 1] + R1[i, 2] * R0[j, 2]
    fx, fy, fz = _so3_log(E)
    ox, oy, oz = x1[3], x1[4], x1[5]
    cx, cy, cz = fy * oz - fz * oy, fz * ox - fx * oz, fx * oy - fy * ox                  # phi1 x omega1
    dx, dy, dz = fy * cz - fz * cy, fz * cx - fx * cz, fx * cy - fy * cx                  # phi1 x (phi1 x omega1)
    rx = ox - cx / 2 + dx / 12
    ry = oy - cy / 2 + dy / 12
    rz = oz - cz / 2 + dz / 12
    X = rodrigues(h01 * fx + h10 * x0[3] + h11 * rx, h01 * fy + h10 * x0[4] + h11 * ry,
                  h01 * fz + h10 * x0[5] + h11 * rz)
    for i in range(3):
        for j in range(3):
            out[3 + 3 * i + j] = X[3 * i] * R0[0, j] + X[3 * i + 1] * R0[1, j] + X[3 * i + 2] * R0[2, j]


def force_outer(f_d, f_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d):
    """Direct force control's outer loop (force.DirectForce, Taghirad Fig. 28 / 34) in one call: e_F = S (F_d - F_m),
    the integral Ki int e_F dt one step on (clipped to +-max_offset, S applied), dX = Kf e_F + that, X_c = X_d (+) dX
    (task_space.retract of a spatial task: p_d + dX[:3], so3_exp(dX[3:]) R_d by
    kinematics.kernels.rodrigues), xd_c = (I - S) xd_d. Returns [offset (6), p_c (3), R_c row-major (9), xd_c (6),
    |S F_m|, |S F_d|] (26): the norms the contact state machine watches. Operation by operation as the numpy
    expressions it replaces (dt * Ki first); R_c row by row as numpy's product (equal to ~1 ulp)."""
    out = np.empty(26)
    dx = np.empty(6)
    nm = nd = 0.0
    for i in range(6):
        e = s[i] * (f_d[i] - f_m[i])
        o = s[i] * (offset[i] + dt * ki[i] * e)
        o = min(max(o, -max_offset), max_offset)
        out[i] = o
        dx[i] = kf[i] * e + o
        out[18 + i] = (1.0 - s[i]) * twist_d[i]
        nm += (s[i] * f_m[i]) ** 2
        nd += (s[i] * f_d[i]) ** 2
    E = rodrigues(dx[3], dx[4], dx[5])
    for i in range(3):
        out[6 + i] = p_d[i] + dx[i]
        for j in range(3):
            out[9 + 3 * i + j] = E[3 * i] * R_d[0, j] + E[3 * i + 1] * R_d[1, j] + E[3 * i + 2] * R_d[2, j]
    out[24], out[25] = math.sqrt(nm), math.sqrt(nd)
    return out


def task_pd_distribute(R_d, p_d, R, p, twist_d, twist, kp, kd, J, f_m, kf, tau_0):
    """tau = J^-T (F_a + kf (F_a - F_m)) + tau_0, F_a = Kp e + Kd e' (``task_pd``) of a spatial task with as many
    actuators as task coordinates: the task-space laws' force distribution (feedforward.force_distribution, Taghirad's
    J^-T F) of their PD in one call; with F_m (``f_m`` 6 values, else empty) the inner force loop of force.InnerForce
    (Fig. 31), without it F_a alone (kf unused). ``tau_0`` (6 values, else empty: none) is added to the distributed
    force: the model's part of the law computed before (G^(X) of the laws with gravity compensation, Partial
    Linearization IDC; the inverse dynamics of impedance control without force measurement), so that the call gives
    the law's tau. The solve is numpy's (LAPACK gesv, as force_distribution's: the same numbers); a singular J raises
    numpy's LinAlgError (the caller's Python path then says what is wrong)."""
    f = task_pd(R_d, p_d, R, p, twist_d, twist, kp, kd)
    if f_m.shape[0] == 6:
        for i in range(6):
            f[i] = f[i] + kf * (f[i] - f_m[i])
    tau = np.linalg.solve(J.T, f)
    if tau_0.shape[0] == tau.shape[0]:
        for i in range(tau.shape[0]):
            tau[i] = tau[i] + tau_0[i]
    return tau


def impedance_terms(R_d, p_d, R, p, twist_d, twist, k_d, d_d, xdd_d, f_m, m_d, J):
    """Impedance control's terms around the model's inverse dynamics (force.Impedance, Taghirad Fig. 36) of a spatial
    task with as many actuators as task coordinates in one call: a = xdd_d + M_d^-1 (K_d e_x + D_d e_x' - F_m)
    (``task_pd`` with the gains K_d, D_d; element by element as the numpy expression) and J^-T F_m (numpy's solve,
    LAPACK gesv as feedforward.force_distribution's: the same numbers). Returns [a (6), J^-T F_m (6)] (12); a singular
    J raises numpy's LinAlgError."""
    out = np.empty(12)
    f = task_pd(R_d, p_d, R, p, twist_d, twist, k_d, d_d)
    for i in range(6):
        out[i] = xdd_d[i] + (f[i] - f_m[i]) / m_d[i]
    out[6:] = np.linalg.solve(J.T, f_m)
    return out


def admittance_filter(f_m, dx, dxd, dt, m_d, d_d, k_d, twist_d):
    """Admittance control's filter one period on (force.Admittance): M_d dX'' + D_d dX' + K_d dX = -F_m by
    semi-implicit Euler, dX' += dt (-F_m - D_d dX' - K_d dX) / M_d, then dX += dt dX', and xd_c = xd_d + dX'; element
    by element as the numpy expressions. Returns [dX' (n), dX (n), xd_c (n)] (3 n)."""
    n = f_m.shape[0]
    if not (dx.shape[0] == dxd.shape[0] == m_d.shape[0] == d_d.shape[0] == k_d.shape[0] == twist_d.shape[0] == n):
        raise ValueError("admittance_filter: the vectors differ in size")
    out = np.empty(3 * n)
    for i in range(n):
        v = dxd[i] + dt * ((-f_m[i] - d_d[i] * dxd[i]) - k_d[i] * dx[i]) / m_d[i]
        out[i] = v
        out[n + i] = dx[i] + dt * v
        out[2 * n + i] = twist_d[i] + v
    return out


def force_cascade(f_d, f_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d, R, p, twist, kp, kd, J, tau_g):
    """Direct force control's period (force.DirectForce, Taghirad Figs. 28 / 34) after the contact state in one call:
    ``force_outer`` (the outer force loop: X_c, xd_c), then the inner motion loop's J^-T (Kp (X_c (-) X) +
    Kd (xd_c - xd)) + G^(X) (``task_pd_distribute``, G^ = ``tau_g``). Returns [force_outer's 26, tau (6)] (32)."""
    out = np.empty(32)
    outer = force_outer(f_d, f_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d)
    out[:26] = outer
    R_c = np.empty((3, 3))
    for i in range(3):
        for j in range(3):
            R_c[i, j] = outer[9 + 3 * i + j]
    out[26:] = task_pd_distribute(R_c, outer[6:9], R, p, outer[18:24], twist, kp, kd, J, outer[:0], 0.0, tau_g)
    return out


if numba is not None:
    _A = numba.types.Array(numba.float64, 1, "A", readonly=True)    # any 1-D float64 array converts to it
    _OUT = numba.float64[::1]
    inputs_valid = numba.njit(numba.boolean(*[_A] * 11, numba.float64), cache=True)(inputs_valid)
    pd = numba.njit(numba.void(*[_A] * 7, _OUT), cache=True)(pd)
    hold = numba.njit(_OUT(*[_A] * 6), cache=True)(hold)
    saturate = numba.njit(numba.types.UniTuple(numba.boolean, 2)(_A, _A, _OUT, numba.boolean[::1]),
                          cache=True)(saturate)
    within = numba.njit(numba.boolean(_A, _A), cache=True)(within)
    hermite_into = numba.njit(numba.none(_A, _A, numba.float64, numba.float64, _OUT), cache=True)(hermite_into)
    _A2 = numba.types.Array(numba.float64, 2, "A", readonly=True)
    sensor_wrench = numba.njit(_OUT(_A2, _A, _A), cache=True)(sensor_wrench)
    _so3_log = numba.njit(cache=True)(_so3_log)
    pose_error = numba.njit(_OUT(_A2, _A, _A2, _A, _A, _A), cache=True)(pose_error)
    task_pd = numba.njit(_OUT(_A2, _A, _A2, _A, _A, _A, _A, _A), cache=True)(task_pd)
    task_hermite = numba.njit(numba.none(_A2, _A, _A, _A2, _A, _A, numba.float64, numba.float64, _OUT),
                              cache=True)(task_hermite)
    force_outer = numba.njit(_OUT(_A, _A, _A, _A, numba.float64, _A, _A, numba.float64, _A2, _A, _A),
                             cache=True)(force_outer)
    task_pd_distribute = numba.njit(_OUT(_A2, _A, _A2, _A, _A, _A, _A, _A, _A2, _A, numba.float64, _A),
                                    cache=True)(task_pd_distribute)
    impedance_terms = numba.njit(_OUT(_A2, _A, _A2, _A, _A, _A, _A, _A, _A, _A, _A, _A2), cache=True)(impedance_terms)
    admittance_filter = numba.njit(_OUT(_A, _A, _A, numba.float64, _A, _A, _A, _A), cache=True)(admittance_filter)
    force_cascade = numba.njit(_OUT(_A, _A, _A, _A, numba.float64, _A, _A, numba.float64, _A2, _A, _A, _A2, _A, _A,
                                    _A, _A, _A2, _A), cache=True)(force_cascade)


# ----------------------------------------------------------------------------- the force laws' own calls
def sensor_admittance(R, w, point, dx, dxd, dt, m_d, d_d, k_d, twist_d, p_d, out):
    """Admittance control's period before the IK of X_c (force.Admittance) of a spatial task with the sensor's
    wrench in one call: F_m (``sensor_wrench``), ``admittance_filter``, and of X_c = X_d (+) dX (task_space.retract)
    the position p_d + dX[:3] and exp(dX[3:]) (``rodrigues``, row-major; the caller multiplies R_d). Writes
    [dX' (6), dX (6), xd_c (6), p_c (3), exp(dX[3:]) (9)] (30) into ``out``."""
    if out.shape[0] != 30:
        raise ValueError("sensor_admittance: out needs 30 values")
    out[:18] = admittance_filter(sensor_wrench(R, w, point), dx, dxd, dt, m_d, d_d, k_d, twist_d)
    for i in range(3):
        out[18 + i] = p_d[i] + out[6 + i]
    E = rodrigues(out[9], out[10], out[11])
    for i in range(9):
        out[21 + i] = E[i]


if numba is not None:
    sensor_admittance = numba.njit(numba.void(_A2, _A, _A, _A, _A, numba.float64, _A, _A, _A, _A, _A, _OUT),
                                   cache=True)(sensor_admittance)


# ---------------------------------------------------------------------------------------------------- the period's own
# (control/controller.py, control/loop.py): the inputs' and the wrench's checks in one call


#: hexapod_ups_period.period_front's answer (the checks and the 6-UPS estimate in one call): an input failed the
#: checks; the inputs are valid, the estimate is not trusted (or not computed); both valid and trusted
FRONT_INVALID, FRONT_VALID, FRONT_TRUSTED = 0, 1, 2
#: a law's whole period in one call (control/jourdain_period.py), beyond period_front's answers: the command written,
#: finite; the same with some actuator at its force limit; the law's command not finite (nothing to use)
PERIOD_DONE, PERIOD_SATURATED, PERIOD_NOT_FINITE = 3, 4, 5
#: period_front's output: R (row-major), p, xdot, J (6 x 6, row-major), then |r|, rcond, the distance to the guess
#: (ups_forward's out), then task_hermite's [p, R, xd, xdd]
FRONT_SIZE = 81


def period_inputs_valid(q, qd, q_d, qd_d, qdd_d, tau_ff, bounds, q_prev, dt, n, wrench, wrench_size, wrench_age,
                        wrench_timeout, force_limit):
    """``inputs_valid`` for n actuators (``bounds``: its lower, upper, vmax and step as the rows of one array), and
    the measured wrench as force.WrenchWatch.check takes it: ``wrench`` (``wrench_size`` values; 0: no wrench to
    check) finite, ``wrench_age`` <= ``wrench_timeout`` s, and with a finite ``force_limit`` (the sensor's
    contact_force_limit) the force's magnitude |f| of its first three values below it by more than the rounding:
    sqrt(f . f) <= (1 - 1e-12) force_limit (WrenchWatch's math.hypot may round otherwise; so near the limit the watch
    decides). False: the checks one by one decide (and say what is wrong)."""
    if q.shape[0] != n or wrench.shape[0] != wrench_size:
        return False
    if bounds.shape[0] != 4 or not inputs_valid(q, qd, q_d, qd_d, qdd_d, tau_ff, bounds[0], bounds[1], bounds[2],
                                                bounds[3], q_prev, dt):
        return False
    if wrench_size == 0:
        return True
    if not wrench_age <= wrench_timeout:
        return False
    for i in range(wrench_size):
        if not math.isfinite(wrench[i]):
            return False
    if math.isfinite(force_limit):
        if wrench_size < 3:
            return False
        f = math.sqrt(wrench[0] * wrench[0] + wrench[1] * wrench[1] + wrench[2] * wrench[2])
        if not f <= (1 - 1e-12) * force_limit:
            return False
    return True


if numba is not None:
    period_inputs_valid = numba.njit(numba.boolean(*[_A] * 6, _A2, _A, numba.float64, numba.int64, _A, numba.int64,
                                                   numba.float64, numba.float64, numba.float64),
                                     cache=True)(period_inputs_valid)
