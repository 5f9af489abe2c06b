"""Compiled per-leg loops for the forward-kinematics Newton step of the hexapod families.

The Newton step needs the actuated positions and J at one pose, three times per warm
solve. As Python the leg loops cost 5-8 us a call, compiled about 1 us (call overhead
included), which is what keeps the warm FK inside its budget. The formulas are those of
the families' single-pose methods (and tested against them and finite differences).
"""

from __future__ import annotations

import math

import numba
import numpy as np


@numba.njit(cache=True)
def ups_lengths_jacobian(R, p, A, B):
    """6-UPS: strut lengths l_i = |p + R b_i - a_i| and Taghirad's J rows [u_i, (R b_i) x u_i]."""
    n = A.shape[0]
    lengths = np.empty(n)
    J = np.empty((n, 6))
    for i in range(n):
        wx = R[0, 0] * B[i, 0] + R[0, 1] * B[i, 1] + R[0, 2] * B[i, 2]
        wy = R[1, 0] * B[i, 0] + R[1, 1] * B[i, 1] + R[1, 2] * B[i, 2]
        wz = R[2, 0] * B[i, 0] + R[2, 1] * B[i, 1] + R[2, 2] * B[i, 2]
        dx, dy, dz = wx + p[0] - A[i, 0], wy + p[1] - A[i, 1], wz + p[2] - A[i, 2]
        l = math.sqrt(dx * dx + dy * dy + dz * dz)
        ux, uy, uz = dx / l, dy / l, dz / l
        lengths[i] = l
        J[i, 0], J[i, 1], J[i, 2] = ux, uy, uz
        J[i, 3], J[i, 4], J[i, 5] = wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux
    return lengths, J


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
