"""The compiled form of hardware/contact.py's compliant surfaces, for the compiled palida step (jourdain ``rk4_step``
with a contact): the force of planes and boxes on a tool point of the platform, evaluated inside the RK4 kernel at
every stage, as ``ContactEnvironment.force`` / ``wrench`` are at every stage of the generic step.

The equations of hardware/contact.py's module docstring (whose surfaces and environment evaluate their forces
here: one law for every plant): per surface the penetration d >= 0 of the tool
point p and the outward normal n (a plane: d = n . (point - p); a box: the nearest face of the point inside it, the
first of equal depths as numpy's argmin); Kelvin-Voigt without pulling, f_n = max(0, k d - c n . v), only while
d > 0; regularized Coulomb friction f_t = -mu f_n tanh(|v_t| / eps) v_t / |v_t|, eps = max(slip_speed,
mu f_n / max_slope). The wrench on the platform at its origin is [f; r x f], r = R p_t (base frame).

A surface is a row of ``SURFACE_COLUMNS`` numbers (``plane_row``, ``box_row``); an environment is (tool point,
rows (n x SURFACE_COLUMNS), max_slope), ``ContactEnvironment.kernel_form``. test_fast_simulation holds the kernel
to a plain numpy evaluation of those equations on generated points and velocities.
"""

from __future__ import annotations

import math

import numpy as np

try:  # compiled when numba is available, as jourdain's kernels
    import numba
except ImportError:  # pragma: no cover - numba is in requirements.txt
    numba = None

PLANE, BOX = 0.0, 1.0
#: a row: kind, stiffness, damping, friction, slip_speed, a (3: plane point, box center), b (3: plane normal, box
#: half extents), the box's rotation (9, row-major; identity for a plane)
SURFACE_COLUMNS = 20


def plane_row(stiffness, damping, friction, slip_speed, point, normal) -> np.ndarray:
    """The kernel's row of a plane (``normal`` unit, outward)."""
    return np.concatenate([[PLANE, stiffness, damping, friction, slip_speed], point, normal, np.eye(3).ravel()])


def box_row(stiffness, damping, friction, slip_speed, center, half_extents, rotation) -> np.ndarray:
    """The kernel's row of a box."""
    return np.concatenate([[BOX, stiffness, damping, friction, slip_speed], center, half_extents,
                           np.asarray(rotation, float).ravel()])


def _surface_force(s, p, v, max_slope, f):
    """f += the force of surface row ``s`` on the tool at p moving with v (module docstring)."""
    n0 = n1 = n2 = 0.0
    if s[0] == PLANE:
        n0, n1, n2 = s[8], s[9], s[10]
        d = n0 * (s[5] - p[0]) + n1 * (s[6] - p[1]) + n2 * (s[7] - p[2])
    else:
        d = math.inf
        i, sign = -1, 1.0
        for a in range(3):            # local = R^T (p - center); depth = h - |local|; the first smallest depth
            local = s[11 + a] * (p[0] - s[5]) + s[14 + a] * (p[1] - s[6]) + s[17 + a] * (p[2] - s[7])
            depth = s[8 + a] - abs(local)
            if not depth > 0:
                return
            if depth < d:
                d, i, sign = depth, a, (1.0 if local >= 0 else -1.0)
        n0, n1, n2 = sign * s[11 + i], sign * s[14 + i], sign * s[17 + i]
    if not d > 0:
        return
    vn = n0 * v[0] + n1 * v[1] + n2 * v[2]
    fn = max(0.0, s[1] * d - s[2] * vn)
    g0, g1, g2 = fn * n0, fn * n1, fn * n2
    mu = s[3]
    if mu != 0.0 and fn > 0:
        t0, t1, t2 = v[0] - vn * n0, v[1] - vn * n1, v[2] - vn * n2
        speed = math.sqrt(t0 * t0 + t1 * t1 + t2 * t2)
        if speed > 0:
            eps = max(s[4], mu * fn / max_slope)
            scale = mu * fn * math.tanh(speed / eps) / speed
            g0, g1, g2 = g0 - scale * t0, g1 - scale * t1, g2 - scale * t2
    f[0] += g0
    f[1] += g1
    f[2] += g2


def _contact_wrench(p, R, twist, tool, surfaces, max_slope, w):
    """w = [f; r x f]: the contact's wrench on the platform at its origin (base frame) with the platform at (p, R)
    moving with ``twist`` (v_o, omega; base frame), r = R tool."""
    r = np.empty(3)
    for i in range(3):
        r[i] = R[i, 0] * tool[0] + R[i, 1] * tool[1] + R[i, 2] * tool[2]
    pt = np.empty(3)
    vt = np.empty(3)
    pt[0], pt[1], pt[2] = p[0] + r[0], p[1] + r[1], p[2] + r[2]
    vt[0] = twist[0] + twist[4] * r[2] - twist[5] * r[1]
    vt[1] = twist[1] + twist[5] * r[0] - twist[3] * r[2]
    vt[2] = twist[2] + twist[3] * r[1] - twist[4] * r[0]
    f = np.zeros(3)
    for k in range(surfaces.shape[0]):
        _surface_force(surfaces[k], pt, vt, max_slope, f)
    w[0], w[1], w[2] = f[0], f[1], f[2]
    w[3] = r[1] * f[2] - r[2] * f[1]
    w[4] = r[2] * f[0] - r[0] * f[2]
    w[5] = r[0] * f[1] - r[1] * f[0]


if numba is not None:
    _surface_force = numba.njit(cache=True)(_surface_force)
    _contact_wrench = numba.njit(cache=True)(_contact_wrench)

#: no surface: the kernels' form of free space
NO_SURFACES = np.zeros((0, SURFACE_COLUMNS))
NO_SURFACES.setflags(write=False)


def surface_force(row, p, v, max_slope=math.inf) -> np.ndarray:
    """The force (base frame) of one surface row on the tool at p moving with v."""
    f = np.zeros(3)
    _surface_force(np.asarray(row, float), np.asarray(p, float), np.asarray(v, float), float(max_slope), f)
    return f


def contact_wrench(position, rotation, twist, form) -> np.ndarray:
    """[f; r x f] (base frame) of the environment's kernel ``form`` (tool point, rows, max_slope) with the platform
    at (position, rotation) moving with ``twist`` (v_o, omega)."""
    tool, surfaces, max_slope = form
    w = np.empty(6)
    _contact_wrench(np.asarray(position, float), np.asarray(rotation, float), np.asarray(twist, float), tool,
                    surfaces, float(max_slope), w)
    return w
