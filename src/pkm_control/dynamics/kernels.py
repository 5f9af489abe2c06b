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


@numba.njit(cache=True)
def rk4_stage(q, v, vs, a, h, q_out, v_out):
    """One stage's state of classical RK4 in tree coordinates (simulation.ReducedSimulator): q_out = q + h vs,
    v_out = v + h a (vs, a the previous stage's rate and acceleration), into the caller's arrays."""
    for k in range(q.shape[0]):
        q_out[k] = q[k] + h * vs[k]
        v_out[k] = v[k] + h * a[k]


@numba.njit(cache=True)
def rk4_sum(x, k1, k2, k3, k4, h):
    """x + h / 6 (k1 + 2 k2 + 2 k3 + k4), RK4's weighted sum of the stages' rates, as a new array."""
    out = np.empty_like(x)
    for k in range(x.shape[0]):
        out[k] = x[k] + h / 6.0 * (k1[k] + 2.0 * k2[k] + 2.0 * k3[k] + k4[k])
    return out


@numba.njit(cache=True)
def min_norm_correction(K, r, v, with_v, q_out, v_out):
    """The minimum-norm corrections of the closure projection (simulation.ReducedSimulator._project):
    q_out -= K^T (K K^T)^-1 r and, with ``with_v``, v_out -= K^T (K K^T)^-1 K v (v onto null(K)); q_out and
    v_out hold q and v on entry. K K^T by Cholesky; False (nothing written) where it is not positive definite
    (K lost rank) or a correction is not finite."""
    m, n = K.shape
    L = np.zeros((m, m))
    for i in range(m):                     # L L^T = K K^T
        for j in range(i + 1):
            s = 0.0
            for k in range(n):
                s += K[i, k] * K[j, k]
            for k in range(j):
                s -= L[i, k] * L[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                L[i, i] = math.sqrt(s)
            else:
                L[i, j] = s / L[j, j]
    rhs = np.zeros((m, 2))
    for i in range(m):
        rhs[i, 0] = r[i]
        if with_v:
            s = 0.0
            for k in range(n):
                s += K[i, k] * v[k]
            rhs[i, 1] = s
    for c in range(2):                     # forward, then back substitution
        for i in range(m):
            s = rhs[i, c]
            for k in range(i):
                s -= L[i, k] * rhs[k, c]
            rhs[i, c] = s / L[i, i]
        for i in range(m - 1, -1, -1):
            s = rhs[i, c]
            for k in range(i + 1, m):
                s -= L[k, i] * rhs[k, c]
            rhs[i, c] = s / L[i, i]
    dq, dv = np.zeros(n), np.zeros(n)
    for k in range(n):
        for i in range(m):
            dq[k] += K[i, k] * rhs[i, 0]
            dv[k] += K[i, k] * rhs[i, 1]
    for k in range(n):
        if not (math.isfinite(dq[k]) and math.isfinite(dv[k])):
            return False
    for k in range(n):
        q_out[k] -= dq[k]
        if with_v:
            v_out[k] -= dv[k]
    return True
