"""Numerical kinematics of any closed-loop model (``kinematics: numeric``): no code per robot.

Everything follows from the spanning tree and its closures (description/loader.py): the closure
residual phi(q) = 0 and its Jacobian K (K v = 0), from pinocchio's frame Jacobians. The tree joints
split into the platform joints c (they parametrize the platform: a pose fixes them, task_space.py),
the actuated joints and the passive ones.

* Assembly: damped Newton projection onto phi = 0 over the free joints, the others held:
  dq = -A^+ phi, A the columns of K of the free joints, A^+ its inverse (square), its minimum-norm
  right inverse (wide: idle motions) or its least-squares left inverse (tall: redundant actuation
  in the FK); the step is halved until |phi| decreases (the safeguard of Levenberg-Marquardt in its
  simplest form). Small steps from a guess stay on the assembly branch nearest the guess.
* IK: the platform joints from the pose, free = actuated + passive joints.
* FK: the actuated joints held, free = passive + platform joints.
* Velocities: K v = 0 with v_c = B xdot (B the task's platform rate matrix): G has the rows B and
  -A^+ K_c B, J = the actuated rows of G (qdot_a = J xdot).
* Accelerations: K a + Kdot v = 0 gives a = G xddot + Gdot xdot, Gdot (free rows)
  = -A^+ (Kdot G + K_c Bdot), Jdot its actuated rows.
* Taghirad's J_q qdot_a = J_x xdot: K v = 0 projected onto the left null space N of the passive
  columns K_p (N K_p = 0): J_q = N K_a, J_x = -N K_c B, so that J = J_q^-1 J_x.
* Mobility: the null space of K at an assembly; idle motions are the null-space directions that
  move neither an actuated joint nor the platform (a rod spinning about its own axis), each named
  by the joints it moves.

Errors as the analytic families: UnreachablePoseError where no assembly is found near the guess
(the Newton iteration stalls with phi != 0) or the pose leaves the task space (a rotated DELTA plate),
JointLimitError for a tree joint outside its URDF range (passive joints included),
SingularConfigurationError where A loses rank beyond the idle motions, ConvergenceError when the
iteration limit is reached. A cut joint (a ball joint's cone) has no range in the description, so
this family checks none; an analytic family may.

Warm start: each thread keeps its last solution (tree q and K there). A solve starts from it or from
the reference assembly (``reference``: home, from ``assembly_guess``), whichever has the platform
nearer the target, so a trajectory follows one branch and a far jump falls back to the home branch;
from the last solution the first step is predicted along its tangent (no evaluation), so a warm IK
costs two evaluations of the closures. The result does not depend on that cache beyond the solver
tolerance while the poses stay on one branch; ``inverse(..., guess=q)`` chooses the start explicitly.
FK starts from the last solution when the guess is its pose (an estimator's last estimate), else
from the IK at the guess.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
import scipy.linalg
import scipy.sparse
import scipy.sparse.csgraph

from ..description.loader import ClosedLoopModel, closure_jacobian_dot, closure_residual_and_jacobian
from ..errors import (MAGNITUDE_LIMIT, ConvergenceError, InvalidModelError,
                      SingularConfigurationError, UnreachablePoseError, check_vector)
from .base import JointMotion, ParallelKinematics, fast_inputs
from .forward import FKResult
from .kernels import (closure_acceleration, closure_velocity, l1_nearer, newton_move, newton_start, solve_columns,
                      solve_square)
from .numeric_kernels import HAS_K, HAS_LU, HAS_Q, INPUT, SOLVED, TASK_KINDS, TASK_TOL, numeric_motion, numeric_project
from .task_space import Pose, TaskSpace

#: relative singular-value threshold of the rank decisions (mobility, Taghirad's projection)
RANK_TOL = 1e-9
#: the largest change of the held joints (sum of |change|, m and rad) for which a solve predicts its first step
#: from the previous solution's tangent (``Kinematics._project``); beyond it Newton starts from that solution
PREDICT_RANGE = 0.05
#: no closure Jacobian to predict from (kernels.newton_start)
_NO_K = np.zeros((0, 0))
_NO_PERM = np.zeros(0, dtype=np.int64)
_NO_VECTOR = np.zeros(0)


@dataclass(frozen=True)
class Mobility:
    """Degrees of freedom of the assembled mechanism: dof = dim null(K) = moving + len(idle).

    ``moving`` counts the motions that move the platform or an actuator: the task dimension for a
    robot whose platform is fully actuated (a non-redundant one then has as many actuators, a
    redundantly actuated one more). ``idle`` names the others, each by the joints it moves ("a+b").
    """

    dof: int
    idle: tuple

    @property
    def moving(self) -> int:
        return self.dof - len(self.idle)


class _Scratch(threading.local):
    """Per-thread pinocchio Data and last solution (the warm start), in arrays the compiled solves update in place
    (numeric_kernels.numeric_motion): ``warm`` flags which hold a solution (HAS_Q), its closure Jacobian (HAS_K)
    and the factors of its IK columns that _motion computed (HAS_LU). They are views of two work arrays, ``iwork``
    (warm, perm) and ``work`` (q, K, LU), in the order of numeric_kernels.unpack_warm, which a packed compiled call
    (dynamics.numeric_kernels.numeric_forward_dynamics) takes whole."""

    def __init__(self, model, rows, n_ik, dim):
        self.data = model.createData()
        self.a, self.G = np.empty(model.nv), np.empty((model.nv, dim))   # tree_motion_into's unread outputs
        nv = model.nv
        self.iwork, self.work = np.zeros(3 + n_ik, dtype=np.int64), np.zeros(nv + rows * nv + n_ik * n_ik)
        self.warm, self.perm = self.iwork[:3], self.iwork[3:]
        self.q, self.K = self.work[:nv], self.work[nv:nv + rows * nv].reshape(rows, nv)
        self.LU = self.work[nv + rows * nv:].reshape(n_ik, n_ik)
        self.arrays = self.iwork, self.work
        self.H = None                        # the closure placements at q (ClosureRows.placements; pinocchio path)


def _blocks(structure: np.ndarray, free: np.ndarray):
    """(cols, rows, bounds): the free joints and the closure rows in an order where A = K[rows, cols] is block
    diagonal, block b A[bounds[b]:bounds[b + 1]] (kernels.lu_columns): the connected components of A's structure (a
    row and a joint joined where the row can depend on the joint; ClosureRows.structure), e.g. one block per leg in
    a hexapod's IK, the whole matrix in its FK. One block (free, every row) where a component is not square (no
    square A, or a singular one)."""
    m, n = structure.shape[0], len(free)
    whole = free, np.arange(m), np.array([0, n])
    if m != n:
        return whole
    S = structure[:, free]
    graph = scipy.sparse.bmat([[None, scipy.sparse.csr_matrix(S)], [scipy.sparse.csr_matrix(S.T), None]])
    _, labels = scipy.sparse.csgraph.connected_components(graph, directed=False)
    cols, rows, bounds = [], [], [0]
    for comp in dict.fromkeys(labels[m:]):          # the components in the order of their first joints
        r, c = np.flatnonzero(labels[:m] == comp), np.flatnonzero(labels[m:] == comp)
        if len(r) != len(c):
            return whole
        rows += r.tolist()
        cols += free[c].tolist()
        bounds.append(len(cols))
    if len(rows) != m:
        return whole
    return np.array(cols), np.array(rows), np.array(bounds)


def _solve(K, cols, blocks, B):
    """X with A X = B, A = K[:, cols]: exact for square A (compiled LU on the diagonal blocks of K[rows, cols],
    blocks = (rows, bounds) of _blocks; kernels.solve_columns), least squares / minimum norm otherwise. None where A
    is singular (rank below min(rows, columns)) or not finite, or the solution is beyond MAGNITUDE_LIMIT."""
    m, n = K.shape[0], len(cols)
    if m == n and B.ndim == 1:
        x, ok = solve_square(K, cols, *blocks, B, MAGNITUDE_LIMIT)
        return x if ok else None
    if m == n:
        X, ok = solve_columns(K, cols, *blocks, B if B.ndim == 2 else B[:, None])
        return (X if B.ndim == 2 else X[:, 0]) if ok and np.abs(X).max(initial=0.0) <= MAGNITUDE_LIMIT else None
    X, _, rank, _ = np.linalg.lstsq(K[:, cols], B, rcond=None)
    return X if rank == min(m, n) and np.abs(X).max(initial=0.0) <= MAGNITUDE_LIMIT else None


class Kinematics(ParallelKinematics):
    """Numerical kinematics of any ClosedLoopModel (module docstring)."""

    family = "numeric"

    def __init__(self, clm: ClosedLoopModel, tol: float = 1e-12, max_iter: int = 50):
        cfg = clm.spec
        super().__init__(clm, TaskSpace(cfg.task_space, alpha_sign=cfg.alpha_sign))
        self.tol, self.max_iter = float(tol), int(max_iter)
        nv = clm.model.nv
        self._c, self._a, self._p = clm.platform_idx, clm.actuated_idx, clm.passive_idx
        structure = clm.closure_rows.structure()
        # the free joints in the order of the diagonal blocks of their columns (_blocks), the rows and block bounds
        self._ik_free, *ik_blocks = _blocks(structure, np.setdiff1d(np.arange(nv), self._c))
        self._fk_free, *fk_blocks = _blocks(structure, np.setdiff1d(np.arange(nv), self._a))
        self._ik_blocks, self._fk_blocks = tuple(ik_blocks), tuple(fk_blocks)
        self._rows, start = [], 0
        for c in clm.closures:
            self._rows.append((c.name, start, start + c.dim))
            start += c.dim
        # square Newton systems (as many closure rows as free joints) take the compiled steps (kernels.newton_start,
        # closure_velocity, closure_acceleration)
        self._square_ik, self._square_fk = start == len(self._ik_free), start == len(self._fk_free)
        # without frame closures the closures are evaluated on the compiled tree (ClosureRows.compiled), and square
        # systems solve in one compiled call (numeric_kernels)
        self._tree = clm.closure_rows.tree if clm.closure_rows.compiled else None
        self._task_kind = TASK_KINDS[self.task.kind]
        self._no_twist = np.zeros(self.task.dim)
        self._scratch = _Scratch(clm.model, start, len(self._ik_free), self.task.dim)
        self.reference = self._reference_assembly()
        for arr in (self._ik_free, self._fk_free, *self._ik_blocks, *self._fk_blocks, self.reference, self.lower,
                    self.upper):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ assembly
    def _reference_assembly(self) -> np.ndarray:
        """The tree at ``home`` from the start guess: mid-range of each limited joint, 0 for an unlimited one,
        config ``assembly_guess: {joint: value}`` where given (it picks the branch)."""
        clm = self.model
        lo, hi = self.lower, self.upper
        limited = np.isfinite(lo) & np.isfinite(hi)
        q0 = np.zeros(len(lo))
        q0[limited] = 0.5 * (lo[limited] + hi[limited])
        for name, value in clm.spec.assembly_guess.items():
            if name not in clm.joint_index:
                raise InvalidModelError(f"robot '{clm.name}': assembly_guess names '{name}', not a joint of the URDF")
            q0[clm.joint_index[name]] = value
        home = self.task.pose(clm.spec.require("home", "the numeric kinematics' reference assembly"))
        try:
            return self._assemble(home, q0)[0]
        except (UnreachablePoseError, ConvergenceError, SingularConfigurationError) as exc:
            raise InvalidModelError(f"robot '{clm.name}' does not assemble at home from its assembly guess "
                                    f"(mid-range joints, config assembly_guess): {exc}") from exc

    def _platform_joints(self, pose: Pose) -> np.ndarray:
        """Platform-joint positions of a checked pose; UnreachablePoseError off the task space."""
        task = self.task
        qc = task.platform_joint_motion(pose)[0]
        if task.kind != "spatial":
            back = task.pose_from_platform_joints(qc)
            off = max(np.abs(back.position - pose.position).max(), np.abs(back.rotation - pose.rotation).max())
            if off > TASK_TOL:
                raise UnreachablePoseError(f"robot '{self.model.name}' moves its platform in the {task.kind} task "
                                           f"space ({' '.join(task.names)}): the pose is {off:.3g} off it "
                                           f"(limit {TASK_TOL:g})")
        return qc

    def _start(self, qc: np.ndarray, guess):
        """(q, K) to start a solve for platform joints qc from: ``guess`` (K None), else the warm start (the last
        solution and its K) or the reference (K None), whichever has its platform joints nearer qc."""
        if guess is not None:
            return check_vector("guess (tree joint positions)", guess, self.model.model.nv, MAGNITUDE_LIMIT), None
        sc, c = self._scratch, self._c
        if sc.warm[HAS_Q] and l1_nearer(sc.q, self.reference, c, qc):
            return sc.q, (sc.K if sc.warm[HAS_K] else None)
        return self.reference, None

    def _project(self, start, fixed, values, stall_error, what, tol=None, max_iter=None):
        """Damped Newton on phi over the joints not in ``fixed`` (module docstring), q[fixed] = values.

        start: (q, K) of the start, K its closure Jacobian when q is an assembly (a previous solution), else None.
        With K, the first step is predicted without evaluating phi: the previous solution moved along the
        tangent of the closures, q[free] -= A^+ K_fixed (values - q[fixed]) (a step of Newton on the linearized
        closures, exact to first order), when the change is small (|values - q[fixed]|_1 <= PREDICT_RANGE).
        Returns (q, phi, K, H, iterations), H the closure placements at q (ClosureRows.placements).
        """
        tol = self.tol if tol is None else float(tol)
        max_iter = self.max_iter if max_iter is None else int(max_iter)
        ik = fixed is self._c
        free, blocks = (self._ik_free, self._ik_blocks) if ik else (self._fk_free, self._fk_blocks)
        tall = len(self._rows) and self._rows[-1][2] > len(free)
        q0, K0 = start
        square = self._square_ik if ik else self._square_fk
        if square and self._tree is not None:
            nv, m = len(q0), self._scratch.K.shape[0]
            q, r, K = np.empty(nv), np.empty(m), np.empty((m, nv))
            status, it, _ = numeric_project(*self._tree, q0, _NO_K if K0 is None else K0, fixed, values, free,
                                            *blocks, PREDICT_RANGE, MAGNITUDE_LIMIT, tol, max_iter, q, r, K)
            if status == SOLVED:
                return q, r, K, None, it
            # the loop below meets the same failure on the same rows and names it
        if square:
            sc = self._scratch
            LU, perm = (sc.LU, sc.perm) if ik and K0 is not None and sc.warm[HAS_LU] else (_NO_K, _NO_PERM)
            q = newton_start(q0, _NO_K if K0 is None else K0, LU, perm, fixed, values, free, *blocks, PREDICT_RANGE,
                             MAGNITUDE_LIMIT)
        else:
            q = q0.copy()
            q[fixed] = values
            if K0 is not None:
                change = values - q0[fixed]
                if np.abs(change).sum() <= PREDICT_RANGE:
                    dq = _solve(K0, free, blocks, K0[:, fixed] @ change)
                    if dq is not None:
                        q[free] -= dq
        r, K, H = self._evaluate(q)
        rn = math.sqrt(r.dot(r))
        for it in range(max_iter):
            if rn <= tol:
                return q, r, K, H, it
            dq = _solve(K, free, blocks, r)
            if dq is None:
                raise SingularConfigurationError(f"{what}: the closure Jacobian of the free joints is singular at "
                                                 f"iteration {it} (residual {rn:.3g})")
            step = 1.0
            while True:
                qc = newton_move(q, free, dq, step)
                rc, Kc, Hc = self._evaluate(qc)
                rcn = math.sqrt(rc.dot(rc))
                if rcn < rn or (tall and rcn <= rn * (1 + 1e-12)):
                    break
                step *= 0.5
                if step < 1e-6:
                    raise stall_error(f"{what}: no assembly near the guess, the Newton iteration stalls at residual "
                                      f"{rn:.3g} (tolerance {tol:g}; worst closure {self._worst(r)})")
            q, r, K, H, rn = qc, rc, Kc, Hc, rcn
            if tall and step * math.sqrt(dq.dot(dq)) <= tol:
                return q, r, K, H, it + 1
        if rn <= tol:
            return q, r, K, H, max_iter
        raise ConvergenceError(f"{what} did not converge in {max_iter} iterations: residual {rn:.3g} > "
                               f"tolerance {tol:g} (worst closure {self._worst(r)})")

    def _evaluate(self, q):
        """(phi, K, H) at q from one forward kinematics pass, H the placements they come from
        (ClosureRows.placements: the accelerations at the solution reuse them); on the compiled tree
        (ClosureRows.tree_rows, H None) when the model has one."""
        clm, data = self.model, self._scratch.data
        if self._tree is not None:
            return (*clm.closure_rows.tree_rows(q), None)
        H = clm.closure_rows.placements(data, q)           # includes the forward kinematics at q
        pin.computeJointJacobians(clm.model, data)         # data.J from those placements (~1 us less than with q)
        r, K = clm.closure_rows.evaluate(data, q, H=H)
        return r, K, H

    def _worst(self, r) -> str:
        name, a, b = max(self._rows, key=lambda row: np.abs(r[row[1]:row[2]]).max(initial=0.0))
        return f"'{name}', |phi| = {np.abs(r[a:b]).max():.3g}"

    def _assemble(self, pose: Pose, guess=None, qc=None):
        """(q, K) of the tree at a checked pose (IK by projection), the warm start updated; qc: the platform joints
        of the pose when the caller has them."""
        qc = self._platform_joints(pose) if qc is None else qc
        q, _, K, H, _ = self._project(self._start(qc, guess), self._c, qc, UnreachablePoseError,
                                      f"IK of '{self.model.name}'")
        self._remember(q, K, H)
        return q, K

    def _remember(self, q, K, H):
        """The warm start of this thread's next solve (and the placements its accelerations reuse)."""
        sc = self._scratch
        sc.q[:], sc.K[:], sc.H = q, K, H
        sc.warm[HAS_Q], sc.warm[HAS_K], sc.warm[HAS_LU] = 1, 1, 0

    # ------------------------------------------------------------------ velocity maps
    def _ik_solve(self, K, rhs, what):
        X = _solve(K, self._ik_free, self._ik_blocks, rhs)
        if X is None:
            raise SingularConfigurationError(f"{what}: the closure Jacobian of the actuated and passive joints of "
                                             f"'{self.model.name}' loses rank (inverse-kinematic singularity)")
        return X

    def _joint_jacobian(self, K, pose: Pose) -> np.ndarray:
        """G at an assembly with closure Jacobian K (square closures: one compiled call, kernels.closure_velocity)."""
        B = self.task.platform_rate_matrix(pose)
        if self._square_ik:
            G, _, _, _, ok = closure_velocity(K, self._c, self._ik_free, *self._ik_blocks, B, self._no_twist,
                                              MAGNITUDE_LIMIT)
            if ok:
                return G
        G = np.empty((self.model.model.nv, self.task.dim))
        G[self._c] = B
        G[self._ik_free] = self._ik_solve(K, -(K[:, self._c] @ B), "G")
        return G

    def _gdot(self, q, K, G, pose: Pose, twist) -> np.ndarray:
        Kd = closure_jacobian_dot(self.model, self._scratch.data, q, G @ twist)
        Bd = self.task.platform_rate_matrix_dot(pose, twist)
        Gd = np.empty_like(G)
        Gd[self._c] = Bd
        Gd[self._ik_free] = self._ik_solve(K, -(Kd @ G + K[:, self._c] @ Bd), "Gdot")
        return Gd

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True, jacobian: bool = False,
                guess=None) -> JointMotion:
        """All tree joints at a pose (rates and accelerations with twist / accel); ``guess`` (tree q): the start."""
        pose, twist, accel = self.validate(pose, twist, accel)
        if guess is None and (twist is not None or jacobian):        # q, v, a and G from one assembly
            q, v, a, G = self._motion(pose, self._no_twist if twist is None else twist, accel)
            if check_limits:
                self.check_limits(q)
            return JointMotion(q, None if twist is None else v, a, G[self._a] if jacobian else None)
        q, K = self._assemble(pose, guess)
        if check_limits:
            self.check_limits(q)
        if twist is None and not jacobian:
            return JointMotion(q)
        G = self._joint_jacobian(K, pose)
        J = G[self._a] if jacobian else None
        if twist is None:
            return JointMotion(q, jacobian=J)
        return JointMotion(q, *self._rates(q, K, G, pose, twist, accel), J)

    def _rates(self, q, K, G, pose: Pose, twist, accel):
        """(v, a) at an assembly q with closure Jacobian K and G (a None without accel): K a + Kdot v = 0."""
        v = G @ twist
        if accel is None:
            return v, None
        a = np.empty_like(v)
        ac = self.task.platform_joint_motion(pose, twist, accel)[2]
        a[self._c] = ac
        rhs = -(K[:, self._c] @ ac + self._bias(q, v))
        a[self._ik_free] = self._ik_solve(K, rhs, "accelerations")
        return v, a

    def _bias(self, q, v):
        """Kdot v at this thread's last solution q (loader.closure_bias, its placements reused; ClosureRows.tree_bias
        on the compiled tree)."""
        if self._tree is not None:
            return self.model.closure_rows.tree_bias(q, v)
        data = self._scratch.data
        pin.computeJointJacobiansTimeVariation(self.model.model, data, q, v)
        return self.model.closure_rows.bias(data, q, v, H=self._scratch.H)

    def _motion(self, pose: Pose, twist, accel):
        """(q, v, a, G) of a checked motion (twist given; a None without accel) from one assembly: for square
        closures, the platform joints, their rates and B from one call and G, v and a from one factorization
        (kernels.closure_velocity, closure_acceleration) around Kdot v."""
        if not self._square_ik:
            q, K = self._assemble(pose)
            G = self._joint_jacobian(K, pose)
            return (q, *self._rates(q, K, G, pose, twist, accel), G)
        if self._tree is not None:
            nv = len(self.reference)
            q, v, a, G = np.empty(nv), np.empty(nv), np.empty(nv), np.empty((nv, self.task.dim))
            if self._compiled_motion(pose, twist, accel, False, q, v, a, G) == SOLVED:
                return q, v, (None if accel is None else a), G
            # below, the same solve meets the same failure and names it
        qc, _, ac, B = self.task.platform_joint_state(pose, twist, accel)
        if self.task.kind != "spatial":
            qc = self._platform_joints(pose)          # the same coordinates, checked to lie in the task space
        c, free, sc = self._c, self._ik_free, self._scratch
        q, K = self._assemble(pose, qc=qc)
        G, v, LU, perm, ok = closure_velocity(K, c, free, *self._ik_blocks, B, twist, MAGNITUDE_LIMIT)
        if not ok:
            self._ik_solve(K, -(K[:, c] @ B), "G")               # raises, naming the singularity
        sc.LU[:], sc.perm[:], sc.warm[HAS_LU] = LU, perm, 1      # the next solve's prediction reuses them
        if accel is None:
            return q, v, None, G
        a, ok = closure_acceleration(K, LU, perm, self._ik_blocks[1], c, free, ac, self._bias(q, v), MAGNITUDE_LIMIT)
        if not ok:
            self._ik_solve(K, -(K[:, c] @ ac + self._bias(q, v)), "accelerations")
        return q, v, a, G

    def _compiled_motion(self, pose: Pose, twist, accel, validate, q, v, a, G):
        """numeric_kernels.numeric_motion's status for this pose, twist and accel (None: none) into q, v, a, G."""
        sc = self._scratch
        return numeric_motion(*self._tree, self.reference, sc.warm, sc.q, sc.K, sc.LU, sc.perm, self._c,
                              self._ik_free, *self._ik_blocks, self._task_kind, self.task.alpha_sign, pose.rotation,
                              pose.position, twist, _NO_VECTOR if accel is None else accel, validate, PREDICT_RANGE,
                              MAGNITUDE_LIMIT, self.tol, self.max_iter, q, v, a, G)[0]

    def packed_motion(self):
        """(ints, floats): this model's arrays of a packed compiled motion solve in the order of
        numeric_kernels.MOTION_INTS and MOTION_FLOATS (numeric_kernels.pack), or None where the solves are not
        compiled (frame closures, or not as many closure rows as IK joints)."""
        if self._tree is None or not self._square_ik:
            return None
        parent, kind, frame, col, offset, mask, lin_rows, lin_sel, cpl, cpl_f = self._tree
        ints = [parent, kind, col, lin_rows, lin_sel, cpl, self._c, self._ik_free, *self._ik_blocks,
                np.array([self._task_kind, self.max_iter])]
        floats = [frame, offset, mask, cpl_f, self.reference,
                  np.array([self.task.alpha_sign, PREDICT_RANGE, MAGNITUDE_LIMIT, self.tol])]
        return ints, floats

    def work_arrays(self):
        """(iwork, work): this thread's warm start as a packed compiled call takes it (_Scratch)."""
        return self._scratch.arrays

    def tree_motion_into(self, pose: Pose, twist, q, v, validate: bool) -> bool:
        """As the base class's, the checks (shapes, motion_ok) and (q, v) in one numeric_motion call (square
        closures on the compiled tree); where it fails, ``_motion`` names the failure."""
        if self._tree is None or not self._square_ik:
            return super().tree_motion_into(pose, twist, q, v, validate)
        if validate and not (twist is not None and fast_inputs(pose, twist, None, self.task.dim)):
            return False
        sc = self._scratch
        status = self._compiled_motion(pose, twist, None, validate, q, v, sc.a, sc.G)
        if status == INPUT:
            return False
        if status != SOLVED:
            q[:], v[:] = self._motion(pose, twist, None)[:2]      # raises, naming the failure
        return True

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, from one assembly."""
        pose, twist, accel = self.validate(pose, twist, accel)
        q, v, a, G = self._motion(pose, twist, accel)
        return JointMotion(q, v, a), G

    def tree_motion(self, pose: Pose, twist):
        return self._motion(pose, twist, None)[:2]

    def tree_state(self, pose: Pose, twist, accel=None):
        return self._motion(pose, twist, accel)

    def actuated(self, pose: Pose) -> np.ndarray:
        return self._assemble(self.validate(pose)[0])[0][self._a]

    def actuated_and_jacobian(self, pose: Pose):
        q, K = self._assemble(pose)
        return q[self._a], self._joint_jacobian(K, pose)[self._a]

    def jacobian(self, pose: Pose) -> np.ndarray:
        return self.joint_jacobian(pose)[self._a]

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        pose = self.validate(pose)[0]
        return self._joint_jacobian(self._assemble(pose)[1], pose)

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        pose, twist, _ = self.validate_motion(pose, twist)
        q, K = self._assemble(pose)
        G = self._joint_jacobian(K, pose)
        return self._gdot(q, K, G, pose, twist)[self._a]

    def joint_jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """Gdot: qddot = G xddot + Gdot xdot for every tree joint."""
        pose, twist, _ = self.validate_motion(pose, twist)
        q, K = self._assemble(pose)
        return self._gdot(q, K, self._joint_jacobian(K, pose), pose, twist)

    def jacobian_xq(self, pose: Pose):
        """(J_x, J_q) by projecting K v = 0 onto the left null space of the passive columns (module docstring)."""
        pose = self.validate(pose)[0]
        K = self._assemble(pose)[1]
        Kp = K[:, self._p]
        U, s, _ = np.linalg.svd(Kp)
        rank = int((s > RANK_TOL * s[0]).sum()) if s.size else 0
        N = U[:, rank:].T
        return -(N @ K[:, self._c]) @ self.task.platform_rate_matrix(pose), N @ K[:, self._a]

    def inverse_batch(self, positions, rotations):
        """IK pose by pose (each warm-started from the last), (q (N, nv), valid (N,))."""
        P, R, usable = self.checked_batch(positions, rotations)
        q = np.zeros((len(P), self.model.model.nv))
        valid = np.zeros(len(P), dtype=bool)
        for i in np.flatnonzero(usable):
            try:
                q[i] = self._assemble(Pose(P[i], R[i]))[0]
            except (UnreachablePoseError, SingularConfigurationError, ConvergenceError):
                continue
            valid[i] = True
        return q, valid & self.within_limits(q)

    def forward(self, q_actuated, guess: Pose, tol: float | None = None, max_iter: int | None = None,
                check_limits: bool = True) -> FKResult:
        """FK by projection with the actuated joints held, from the tree assembled at ``guess`` (warm start).

        The result's residual is |phi| (m, rad) at the solution (redundant actuation: the least-squares misfit of
        inconsistent actuated positions); its Jacobian is J there. kinematics.forward.forward_kinematics calls this.
        """
        clm = self.model
        qa = check_vector(f"actuated joint positions ({', '.join(clm.actuated_joints)})", q_actuated,
                          clm.n_actuated, MAGNITUDE_LIMIT)
        pose = self.validate(guess)[0]
        sc, c = self._scratch, self._c
        if sc.warm[HAS_Q] and np.abs(sc.q[c] - self._platform_joints(pose)).sum() <= 1e-9:
            start = sc.q, sc.K          # the guess is this thread's last solution (an estimator's last estimate)
        else:
            try:
                start = self._assemble(pose)
            except UnreachablePoseError as exc:     # as forward.forward_kinematics: the guess must assemble
                raise ConvergenceError(f"forward kinematics: the initial guess is not an assembly of the mechanism "
                                       f"({exc})") from exc
        q, r, K, H, it = self._project(start, self._a, qa, ConvergenceError, f"forward kinematics of '{clm.name}'",
                                       tol, max_iter)
        self._remember(q, K, H)
        pose = self.task.pose_from_platform_joints(q[self._c])
        if check_limits:
            self.check_limits(q)
        return FKResult(pose, it, math.sqrt(r.dot(r)), self._joint_jacobian(K, pose)[self._a])

    # ------------------------------------------------------------------ analysis
    def mobility(self, q=None) -> Mobility:
        """Mobility at an assembly q (default: the reference assembly), module docstring."""
        clm = self.model
        q = self.reference if q is None else check_vector("q", q, clm.model.nv, MAGNITUDE_LIMIT)
        K = closure_residual_and_jacobian(clm, self._scratch.data, q)[1]
        nv = clm.model.nv
        if K.shape[0]:
            _, s, Vt = np.linalg.svd(K)
            rank = int((s > RANK_TOL * s[0]).sum())
        else:
            rank, Vt = 0, np.eye(nv)
        null = Vt[rank:].T                                        # nv x dof
        seen = np.concatenate([self._c, self._a])
        if null.shape[1] == 0:
            return Mobility(0, ())
        _, s2, Wt = np.linalg.svd(null[seen], full_matrices=True)
        r2 = int((s2 > RANK_TOL * max(s2[0], 1.0)).sum()) if s2.size else 0
        idle = null @ Wt[r2:].T                                   # nv x k: moves neither platform nor actuators
        if idle.shape[1] == 0:
            return Mobility(null.shape[1], ())
        # one idle motion per pivot joint: column-pivoted QR picks k joints, the basis is made unit on them
        _, _, piv = scipy.linalg.qr(idle.T, pivoting=True)
        k = idle.shape[1]
        idle = idle @ np.linalg.inv(idle[piv[:k]])
        names = []
        for j in range(k):
            moved = [piv[j]] + [i for i in np.flatnonzero(np.abs(idle[:, j]) > RANK_TOL) if i != piv[j]]
            names.append("+".join(clm.joint_names[i] for i in moved))
        return Mobility(null.shape[1], tuple(names))
