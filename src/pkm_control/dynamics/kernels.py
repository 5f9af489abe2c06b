"""Compiled kernels of the generic engine (engine.py): the projection of the tree forces onto the task velocity by
virtual power and the actuator forces that balance them (eq. 1; non-redundant: project_and_solve, redundant:
redundant_actuation), the task mass matrix and the reduced forward dynamics (task_mass_matrix,
reduced_acceleration), the friction of every joint (friction_torque), and the tree-coordinate simulation's steps.
Each writes into the caller's arrays: boxing a returned array costs ~0.4 us, a numba call ~0.5 us.

A 6 x 6 SVD costs ~17 us from numpy and ~12 us from numba's LAPACK call (gesdd with its workspace queries),
four times pinocchio's whole rnea on a hexapod: the SVD here is the one-sided Jacobi method (Hestenes;
Demmel and Veselic 1992), which gets every singular value to high relative accuracy, so the conditioning
test sigma_min / sigma_max >= SINGULAR_TOL (kinematics.analysis.check_conditioning) decides as LAPACK's. Even
so it is ~2 us on a hexapod, so a well-conditioned J passes on a cheaper bound first (project_and_solve).
"""

from __future__ import annotations

import math

import numba
import numpy as np

from ..description.kernels import tree_body_inertias, tree_inverse_dynamics, tree_kinematics, tree_mass_matrix

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


_F64_1 = numba.types.Array(numba.float64, 1, "A", readonly=True)
_F64_2 = numba.types.Array(numba.float64, 2, "A", readonly=True)
_I64_1 = numba.types.Array(numba.int64, 1, "A", readonly=True)


@numba.njit(cache=True)
def gauss_jordan_inverse(J, X):
    """X = J^-1 (n x n) by Gauss-Jordan elimination with partial pivoting, into the caller's X; False (X not
    meaningful) where a pivot is zero or not finite."""
    n = J.shape[0]
    A = J.copy()
    for r in range(n):
        for c in range(n):
            X[r, c] = 1.0 if r == c else 0.0
    for k in range(n):
        p, best = k, abs(A[k, k])
        for r in range(k + 1, n):
            if abs(A[r, k]) > best:
                p, best = r, abs(A[r, k])
        if not (best > 0.0 and math.isfinite(best)):
            return False
        if p != k:
            for c in range(n):
                A[k, c], A[p, c] = A[p, c], A[k, c]
                X[k, c], X[p, c] = X[p, c], X[k, c]
        inv = 1.0 / A[k, k]
        for c in range(n):
            A[k, c] *= inv
            X[k, c] *= inv
        for r in range(n):
            if r != k and A[r, k] != 0.0:
                m = A[r, k]
                for c in range(n):
                    A[r, c] -= m * A[k, c]
                    X[r, c] -= m * X[k, c]
    return True


@numba.njit(cache=True)
def _task_force_and_jacobian(G, tau_tree, act, task_force, f):
    """engine.py eq. (1)'s two inputs: f = G^T tau_tree - task_force into the caller's f, and J = G[act] (returned)."""
    nv, n = G.shape
    for j in range(n):
        acc = 0.0
        for i in range(nv):
            acc += G[i, j] * tau_tree[i]
        f[j] = acc - task_force[j]
    J = np.empty((act.shape[0], n))
    for r in range(act.shape[0]):
        for j in range(n):
            J[r, j] = G[act[r], j]
    return J


@numba.njit((_F64_2, _F64_1, _I64_1, _F64_1, numba.float64, numba.float64[::1], numba.float64[::1]), cache=True)
def project_and_solve(G, tau_tree, act, task_force, tol, f, tau):
    """engine.py eq. (1) for a non-redundant robot into the caller's f and tau (boxing new arrays would cost more
    than the projection): f = G^T tau_tree - task_force, J = G[act] (square), tau with J^T tau = f where
    ratio = sigma_min / sigma_max of J is at least tol (kinematics.analysis.check_conditioning), else tau is NaN:
    the caller raises. Returns ratio (NaN where J is not finite), or a lower bound of it that is already >= tol.

    The test first takes the bound 1 / (|J|_F |J^-1|_F) <= sigma_min / sigma_max (|J|_F >= sigma_max,
    |J^-1|_F >= 1 / sigma_min) from a Gauss-Jordan inverse X (tau = X^T f): where it reaches 2 tol (the margin
    covers the rounding of X, whose backward error is ~1e-15 |J|), J passes; below, the Jacobi SVD decides
    (tau = U S^-1 V^T f) as check_conditioning's LAPACK SVD does. A well-conditioned J thus costs one 6 x 6
    inverse (~0.3 us) instead of the SVD (~2 us)."""
    n = G.shape[1]
    J = _task_force_and_jacobian(G, tau_tree, act, task_force, f)
    tau[:] = np.nan
    if not np.isfinite(J).all():
        return np.nan
    X = np.empty((n, n))
    if gauss_jordan_inverse(J, X):
        nj = nx = 0.0
        for r in range(n):
            for c in range(n):
                nj += J[r, c] * J[r, c]
                nx += X[r, c] * X[r, c]
        bound = 1.0 / math.sqrt(nj * nx)
        if bound >= 2.0 * tol:
            for r in range(n):             # tau = J^-T f
                acc = 0.0
                for c in range(n):
                    acc += X[c, r] * f[c]
                tau[r] = acc
            return bound
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


@numba.njit((_F64_1, _I64_1, numba.float64, numba.float64[::1]), cache=True)
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


@numba.njit((_F64_1, _F64_1, _F64_1), cache=True)
def stops_engaged(x, lower, upper):
    """Whether a joint is beyond its stop: some x < lower or x > upper (dynamics.end_stops; a NaN is not)."""
    for k in range(x.shape[0]):
        if x[k] < lower[k] or x[k] > upper[k]:
            return True
    return False


@numba.njit((_F64_1, _F64_1, _F64_1, _F64_1, _F64_1, _F64_1, numba.float64[::1]), cache=True)
def stop_force(x, rate, lower, upper, k, c, out):
    """The end stops' force (dynamics.end_stops, Kelvin-Voigt without pull) into the caller's out: per joint
    max(0, k d + c ddot) out of its stop, d the penetration beyond lower or upper and ddot its rate, exactly zero
    inside [lower, upper] (a NaN force stays NaN, as numpy's maximum keeps it)."""
    for j in range(x.shape[0]):
        if x[j] < lower[j]:
            f = k[j] * (lower[j] - x[j]) - c[j] * rate[j]
            out[j] = 0.0 if f < 0.0 else f
        elif x[j] > upper[j]:
            f = k[j] * (x[j] - upper[j]) + c[j] * rate[j]
            out[j] = -(0.0 if f < 0.0 else f)
        else:
            out[j] = 0.0


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


@numba.njit(cache=True, inline="always")
def _cholesky(A, n):
    """A = L L^T in place (L in A's lower triangle, the upper one not read); False where A is not positive definite."""
    for i in range(n):
        for j in range(i + 1):
            s = A[i, j]
            for k in range(j):
                s -= A[i, k] * A[j, k]
            if i == j:
                if not s > 0.0:
                    return False
                A[i, i] = math.sqrt(s)
            else:
                A[i, j] = s / A[j, j]
    return True


@numba.njit(cache=True, inline="always")
def _cholesky_solve(L, x):
    """x = (L L^T)^-1 x in place."""
    n = x.shape[0]
    for i in range(n):
        s = x[i]
        for k in range(i):
            s -= L[i, k] * x[k]
        x[i] = s / L[i, i]
    for i in range(n - 1, -1, -1):
        s = x[i]
        for k in range(i + 1, n):
            s -= L[k, i] * x[k]
        x[i] = s / L[i, i]


@numba.njit(cache=True)
def min_norm_correction(K, r, v, with_v, q_out, v_out):
    """The minimum-norm corrections of the closure projection (simulation.ReducedSimulator._project):
    q_out -= K^T (K K^T)^-1 r and, with ``with_v``, v_out -= K^T (K K^T)^-1 K v (v onto null(K)); q_out and
    v_out hold q and v on entry. K K^T by Cholesky; False (nothing written) where it is not positive definite
    (K lost rank) or a correction is not finite."""
    m, n = K.shape
    L = np.zeros((m, m))
    for i in range(m):                     # K K^T's lower triangle
        for j in range(i + 1):
            s = 0.0
            for k in range(n):
                s += K[i, k] * K[j, k]
            L[i, j] = s
    if not _cholesky(L, m):
        return False
    x, y = r.copy(), np.zeros(m)           # (K K^T)^-1 r, (K K^T)^-1 K v
    if with_v:
        for i in range(m):
            s = 0.0
            for k in range(n):
                s += K[i, k] * v[k]
            y[i] = s
    _cholesky_solve(L, x)
    _cholesky_solve(L, y)
    dq, dv = np.zeros(n), np.zeros(n)
    for k in range(n):
        for i in range(m):
            dq[k] += K[i, k] * x[i]
            dv[k] += K[i, k] * y[i]
    for k in range(n):
        if not (math.isfinite(dq[k]) and math.isfinite(dv[k])):
            return False
    for k in range(n):
        q_out[k] -= dq[k]
        if with_v:
            v_out[k] -= dv[k]
    return True


@numba.njit(cache=True)
def _congruence(G, Mt, M):
    """M = G^T M_tree G into the caller's M, from the upper triangle of M_tree (crba's). M_tree's zeros (joints on
    different branches of the tree: most of a parallel robot's, its legs) are skipped."""
    nv, n = G.shape
    T = np.zeros((nv, n))                  # M_tree G
    for i in range(nv):
        for k in range(nv):
            m = Mt[i, k] if i <= k else Mt[k, i]
            if m != 0.0:
                for j in range(n):
                    T[i, j] += m * G[k, j]
    for r in range(n):
        for c in range(r, n):
            acc = 0.0
            for k in range(nv):
                acc += G[k, r] * T[k, c]
            M[r, c] = acc
            M[c, r] = acc


@numba.njit((_F64_2, _F64_2, numba.float64[:, ::1]), cache=True)
def task_mass_matrix(G, Mt, M):
    """M = G^T M_tree G (the task-space mass matrix, engine.py) into the caller's (n, n) M, from the upper triangle
    of M_tree as pinocchio's crba fills it (the lower one is not read)."""
    _congruence(G, Mt, M)


@numba.njit(cache=True)
def reduced_solve(G, Mt, act, tau, bias, task_force, xdd):
    """reduced_acceleration's arithmetic (below; any array types)."""
    nv, n = G.shape
    M = np.empty((n, n))
    _congruence(G, Mt, M)
    for j in range(n):                     # the right-hand side
        acc = task_force[j]
        for k in range(act.shape[0]):
            acc += G[act[k], j] * tau[k]
        for i in range(nv):
            acc -= G[i, j] * bias[i]
        xdd[j] = acc
    if not _cholesky(M, n):                # M = L L^T, L in M's lower triangle
        return False
    _cholesky_solve(M, xdd)
    for i in range(n):
        if not math.isfinite(xdd[i]):
            return False
    return True


@numba.njit((_F64_2, _F64_2, _I64_1, _F64_1, _F64_1, _F64_1, numba.float64[::1]), cache=True)
def reduced_acceleration(G, Mt, act, tau, bias, task_force, xdd):
    """The reduced forward dynamics (engine.forward_dynamics) into the caller's xdd: M xdd = G[act]^T tau + task_force
    - G^T bias, M = G^T M_tree G (upper triangle of M_tree read), solved by Cholesky (M is symmetric positive
    definite where G has full rank). False (xdd not meaningful) where M is not positive definite (singular) or
    xdd is not finite."""
    return reduced_solve(G, Mt, act, tau, bias, task_force, xdd)


@numba.njit((_F64_2, _F64_1, _F64_1, _F64_1, _F64_2, _F64_1, _F64_1, numba.float64, numba.float64[::1]), cache=True)
def friction_torque(Jw, v, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps, out):
    """The tree generalized friction force (dynamics.friction, Abdellatif eq. 32) into the caller's (nv,) out: per tree
    joint coulomb sign(v) + viscous v (sign: tanh(v / eps) for eps > 0), and per cut joint (a point closure)
    W^T (r1 w / sqrt(w.w + eps^2) + r2 w), w = W v the relative angular velocity of its two frames.

    Jw is pinocchio's data.J after computeJointJacobians (6 x nv, WORLD): a frame turns with its parent joint, so the
    angular rows of its Jacobian are Jw's angular rows over the joint's support, and W = Jw[3:] diag(cut_sign[k]),
    cut_sign[k] = +1 on the support of the first frame's joint, -1 on the second's, 0 on both (common ancestors)."""
    nv = v.shape[0]
    for i in range(nv):
        if eps > 0.0:
            s = math.tanh(v[i] / eps)
        else:
            s = 1.0 if v[i] > 0.0 else (-1.0 if v[i] < 0.0 else 0.0)
        out[i] = coulomb[i] * s + viscous[i] * v[i]
    for k in range(cut_sign.shape[0]):
        w0 = w1 = w2 = 0.0
        for c in range(nv):
            sc = cut_sign[k, c]
            if sc != 0.0:
                w0 += sc * Jw[3, c] * v[c]
                w1 += sc * Jw[4, c] * v[c]
                w2 += sc * Jw[5, c] * v[c]
        nw = math.sqrt(w0 * w0 + w1 * w1 + w2 * w2 + eps * eps)
        gain = cut_viscous[k] + (cut_coulomb[k] / nw if nw > 0.0 else 0.0)
        t0, t1, t2 = gain * w0, gain * w1, gain * w2
        for c in range(nv):
            sc = cut_sign[k, c]
            if sc != 0.0:
                out[c] += sc * (Jw[3, c] * t0 + Jw[4, c] * t1 + Jw[5, c] * t2)


@numba.njit(cache=True)
def _svd_solve(U, s, V, b, x):
    """x = V S^-1 U^T b into the caller's x: the solution of A x = b from A = U S V^T (square, every s > 0)."""
    n = s.shape[0]
    x[:] = 0.0
    for j in range(n):
        acc = 0.0
        for k in range(U.shape[0]):
            acc += U[k, j] * b[k]
        acc /= s[j]
        for r in range(n):
            x[r] += V[r, j] * acc


@numba.njit((_F64_2, _F64_1, _I64_1, _F64_1, _F64_1, numba.float64, numba.float64, numba.float64[::1],
             numba.float64[::1], numba.float64[:, ::1]), cache=True)
def redundant_actuation(G, tau_tree, act, task_force, w_inv, tol, tol_a, f, tau, null):
    """engine.py eq. (1) for a redundant robot (n_a actuators > n task coordinates) into the caller's f, tau and
    null: f = G^T tau_tree - task_force, J = G[act] (n_a x n), the weighted minimum-norm actuation (Wu eq. 39)
    tau = W^-1 J (J^T W^-1 J)^-1 f (w_inv the diagonal of W^-1), and null (n_a x (n_a - n)) an orthonormal basis
    of null(J^T), the internal forces.

    Returns (ratio_j, ratio_a): sigma_min / sigma_max of J (check_conditioning's test: it must reach tol; NaN where J
    is not finite) and of A = J^T W^-1 J (it must exceed tol_a); both by the Jacobi SVD (LAPACK's values to
    rounding). Where either fails, tau and null are not meaningful: the caller raises."""
    n = G.shape[1]
    na = act.shape[0]
    J = _task_force_and_jacobian(G, tau_tree, act, task_force, f)
    if not np.isfinite(J).all():
        return np.nan, np.nan
    U, s, V = jacobi_svd(J)
    smax, smin = s.max(), s.min()
    ratio_j = smin / smax if smax > 0.0 else 0.0
    if not ratio_j >= tol:
        return ratio_j, np.nan
    A = np.zeros((n, n))                 # J^T W^-1 J
    for r in range(n):
        for c in range(n):
            acc = 0.0
            for k in range(na):
                acc += J[k, r] * w_inv[k] * J[k, c]
            A[r, c] = acc
    Ua, sa, Va = jacobi_svd(A)
    amax, amin = sa.max(), sa.min()
    ratio_a = amin / amax if amax > 0.0 else 0.0
    if not ratio_a > tol_a:
        return ratio_j, ratio_a
    y = np.empty(n)
    _svd_solve(Ua, sa, Va, f, y)
    for r in range(na):                  # tau = W^-1 J y
        acc = 0.0
        for j in range(n):
            acc += J[r, j] * y[j]
        tau[r] = w_inv[r] * acc
    # null(J^T): the complement of range(J) = span(U), by Gram-Schmidt (twice) of the unit vectors, the one with
    # the largest part outside span(U) and the accepted columns first
    basis = np.zeros((na, n + null.shape[1]))
    basis[:, :n] = U
    have = n
    while have < n + null.shape[1]:
        best, pick = -1.0, 0
        for i in range(na):
            out = 1.0
            for c in range(have):
                out -= basis[i, c] * basis[i, c]
            if out > best:
                best, pick = out, i
        x = np.zeros(na)
        x[pick] = 1.0
        for _ in range(2):
            for c in range(have):
                d = 0.0
                for k in range(na):
                    d += basis[k, c] * x[k]
                for k in range(na):
                    x[k] -= d * basis[k, c]
        norm = math.sqrt((x * x).sum())
        for k in range(na):
            basis[k, have] = x[k] / norm
        have += 1
    null[:, :] = basis[:, n:]
    return ratio_j, ratio_a


@numba.njit(cache=True)
def plant_forward_dynamics(parent, kind, frame, inertia, armature, gravity, act, q, v, a0, G, tau, task_force,
                           friction, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps, stops, lower, upper,
                           stiffness, damping, X, J, body, composite, Mt, bias, extra, xdd):
    """The reduced forward dynamics with friction and the tree-joint end stops (engine._forward_dynamics_reduced) on
    the compiled tree, in one call: M xdd = G[act]^T tau + task_force - G^T (rnea(q, v, a0) + tau_f - tau_stop),
    M = G^T crba(q) G, from the family's tree state (q, v, a0 = Gdot xdot, G). The tree's placements and world joint
    Jacobian (description.kernels.tree_kinematics, pinocchio's data.J), its rnea and crba (tree_inverse_dynamics,
    tree_mass_matrix: pinocchio's, armature included), the friction (``friction``: friction_torque's, eps its
    smoothing) and the stops (``stops``: stop_force's) are the equations of the engine's pinocchio calls, so xdd
    equals them to rounding. X (3 x 4 nv), J (6 x nv), body and composite (nv x 10), Mt (nv x nv), bias and extra
    (nv): the caller's scratch. False where M is not positive definite or xdd is not finite (reduced_solve)."""
    tree_kinematics(parent, kind, frame, q, X, J)
    tree_body_inertias(X, inertia, body)
    tree_inverse_dynamics(parent, J, body, armature, gravity, v, a0, bias)
    nv = q.shape[0]
    if friction:
        friction_torque(J, v, coulomb, viscous, cut_sign, cut_coulomb, cut_viscous, eps, extra)
        for i in range(nv):
            bias[i] += extra[i]
    if stops:
        stop_force(q, v, lower, upper, stiffness, damping, extra)
        for i in range(nv):
            bias[i] -= extra[i]
    tree_mass_matrix(parent, J, body, armature, composite, Mt)
    return reduced_solve(G, Mt, act, tau, bias, task_force, xdd)
