"""Compiled kernels of the generic engine's inverse dynamics: the projection of the tree forces onto the task
velocity by virtual power and the actuator forces that balance them (engine.py eq. 1), for a non-redundant robot.

A 6 x 6 SVD costs ~17 us from numpy and ~12 us from numba's LAPACK call (gesdd with its workspace queries),
four times pinocchio's whole rnea on a hexapod: the SVD here is the one-sided Jacobi method (Hestenes;
Demmel and Veselic 1992), which gets every singular value to high relative accuracy, so the conditioning
test sigma_min / sigma_max >= SINGULAR_TOL (kinematics.analysis.check_conditioning) decides as LAPACK's.
"""

from __future__ import annotations

import math

import numba
import numpy as np

#: the sweeps of the Jacobi SVD before it gives up (6 x 6: 5-7 sweeps reach rounding level)
_SWEEPS = 60


@numba.njit(cache=True)
def jacobi_svd(A):
    """(U (m x n), s (n), V (n x n)) with A = U diag(s) V^T, m >= n, by one-sided Jacobi rotations of the columns
    (unsorted s; a zero column gives s = 0 and a zero column of U)."""
    m, n = A.shape
    U = A.copy()
    V = np.eye(n)
    eps = 2.220446049250313e-16
    for _ in range(_SWEEPS):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                alpha = beta = gamma = 0.0
                for k in range(m):
                    alpha += U[k, i] * U[k, i]
                    beta += U[k, j] * U[k, j]
                    gamma += U[k, i] * U[k, j]
                if abs(gamma) <= eps * math.sqrt(alpha * beta):
                    continue
                rotated = True
                zeta = (beta - alpha) / (2.0 * gamma)
                t = 1.0 / (abs(zeta) + math.sqrt(1.0 + zeta * zeta))
                if zeta < 0.0:
                    t = -t
                c = 1.0 / math.sqrt(1.0 + t * t)
                s = c * t
                for k in range(m):
                    ui, uj = U[k, i], U[k, j]
                    U[k, i], U[k, j] = c * ui - s * uj, s * ui + c * uj
                for k in range(n):
                    vi, vj = V[k, i], V[k, j]
                    V[k, i], V[k, j] = c * vi - s * vj, s * vi + c * vj
        if not rotated:
            break
    sv = np.empty(n)
    for j in range(n):
        norm = 0.0
        for k in range(m):
            norm += U[k, j] * U[k, j]
        sv[j] = math.sqrt(norm)
        if sv[j] > 0.0:
            for k in range(m):
                U[k, j] /= sv[j]
    return U, sv, V


@numba.njit(cache=True)
def project_and_solve(G, tau_tree, act, task_force, tol, f, tau):
    """engine.py eq. (1) for a non-redundant robot into the caller's f and tau (boxing new arrays would cost more
    than the projection): f = G^T tau_tree - task_force, J = G[act] (square), tau with J^T tau = f from
    J = U S V^T (tau = U S^-1 V^T f) when ratio = sigma_min / sigma_max >= tol, else tau is NaN: the caller
    raises. Returns ratio (NaN where J is not finite)."""
    nv, n = G.shape
    for j in range(n):
        acc = 0.0
        for i in range(nv):
            acc += G[i, j] * tau_tree[i]
        f[j] = acc - task_force[j]
    J = np.empty((n, n))
    for r in range(n):
        for j in range(n):
            J[r, j] = G[act[r], j]
    tau[:] = np.nan
    if not np.isfinite(J).all():
        return np.nan
    U, s, V = jacobi_svd(J)
    smax, smin = s.max(), s.min()
    ratio = smin / smax if smax > 0.0 else 0.0
    if not ratio >= tol:
        return ratio
    y = np.empty(n)                      # S^-1 V^T f
    for j in range(n):
        acc = 0.0
        for k in range(n):
            acc += V[k, j] * f[k]
        y[j] = acc / s[j]
    for r in range(n):
        acc = 0.0
        for j in range(n):
            acc += U[r, j] * y[j]
        tau[r] = acc
    return ratio


@numba.njit((numba.types.Array(numba.float64, 1, "A", readonly=True),
             numba.types.Array(numba.int64, 1, "A", readonly=True), numba.float64, numba.float64[::1]), cache=True)
def tree_force(tau, act, limit, t):
    """S_a^T tau of the forward dynamics: the actuator forces tau (one per entry of act) written into the tree
    force vector t at the actuated joints act (the other entries untouched), and whether tau passes check_vector's
    numeric test in ``limit``'s L1 form (errors.MAGNITUDE_LIMIT; a NaN fails, a little stricter than the per-entry
    test: False sends the caller to check_vector, which decides and names what is wrong; a tau of another length
    fails, nothing written)."""
    if tau.shape[0] != act.shape[0]:
        return False
    total = 0.0
    for k in range(act.shape[0]):
        t[act[k]] = tau[k]
        total += abs(tau[k])
    return total <= limit
