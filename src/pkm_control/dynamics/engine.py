"""Generic closed-loop dynamics: pinocchio on the spanning tree + closures, by virtual power.

Every tree joint follows the platform: q, v = G xdot, a = G xddot + Gdot xdot, all
from the family's analytic IK. The tree's inverse dynamics at that consistent
state (RNEA) is projected onto the task velocity by virtual power (Jourdain;
Abdellatif eq. 11-14; Wu eq. 14-15):

    J^T tau_a = G^T (tau_tree + tau_friction) - S^T w           (1)

G = dq/dxdot, J = its actuated rows, S the platform twist map, w the external
wrench on the platform. The closure (cut-joint) forces follow from the tree
equations M a + h = S_a^T tau_a - tau_f + J_w^T w + K^T lambda.

Task-space matrices (docs/architecture.md): M = G^T M_tree G,
C = G^T (M_tree Gdot + C_tree G), G_x = G^T g_tree, with Gdot from the closures
(K G = 0 => K Gdot = -Kdot G) so that Mdot - 2C is skew-symmetric.

Forward dynamics rides on pinocchio's ``constraintDynamics`` where every closure is a pinocchio
constraint model (3-axis points as CONTACT_3D, frames as CONTACT_6D: description.loader.constraint_models):
at the consistent tree state (q, v) from the IK it solves M a + h = tau_tree + K^T lambda with
K a = -Kdot v, the same equations as the reduced M xddot = ... (so the same xddot to rounding;
the platform rows of a give xddot). Planar points and couplings keep the reduced path. Where friction, end stops or
a wrench enter (the simulated plant's every RK4 stage) and an analytic family gives G in closed form, the reduced
path runs instead, its tree part (rnea, crba, friction, stops) and the solve in one compiled call on the compiled
tree (kernels.plant_forward_dynamics; measured on lopes at load 2: 11 us a call with the family's state against
25 us for constraintDynamics with pinocchio's friction Jacobians and the stops in numpy). The numeric family on the
compiled tree (numeric.Kinematics.packed_motion) solves the whole call, IK and reduced dynamics, in one compiled
call (numeric_kernels.numeric_forward_dynamics) where no wrench, friction or end stop enters; where that does not solve,
the paths above decide and name the error.
"""

from __future__ import annotations

import threading
from typing import NamedTuple

import numpy as np
import pinocchio as pin

from ..description.loader import closure_jacobian, closure_jacobian_dot, constraint_models
from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, SingularConfigurationError,
                      check_vector)
from ..kinematics.analysis import SINGULAR_TOL, check_conditioning, conditioning_error
from ..kinematics.base import ParallelKinematics, fast_inputs
from ..kinematics.kernels import motion_ok
from ..kinematics.task_space import Pose
from .friction import FrictionModel
from ..description.loader import tree_arrays, tree_inertias
from .kernels import (plant_forward_dynamics, project_and_solve, reduced_acceleration, redundant_actuation,
                      task_mass_matrix, tree_force)

_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
#: J^T W^-1 J of a redundant robot's weighted minimum norm is singular where sigma_min / sigma_max is at most this
_WEIGHTED_TOL = 1e-12


class IDResult(NamedTuple):
    """The inverse dynamics' result (immutable; a named tuple: a third of a frozen dataclass's construction time)."""

    tau: np.ndarray              # actuator forces / torques (actuated-joint order)
    generalized: np.ndarray      # f = J^T tau, the generalized force on the task velocity
    q: np.ndarray                # the consistent tree state used
    v: np.ndarray
    a: np.ndarray
    closure_forces: np.ndarray | None = None   # lambda, rows as closure_jacobian (when asked)
    internal_forces: np.ndarray | None = None  # basis of null(J^T) (redundant robots)


def _constant(a) -> np.ndarray:
    """A read-only C copy, as the friction's and the end stops' arrays are: one signature of a kernel (numba compiles
    one per set of argument types, ~25 s cold, and matches a call's types exactly only then)."""
    a = np.array(a)
    a.setflags(write=False)
    return a


class _PackedArguments(threading.local):
    """This thread's leading arguments of numeric_kernels.numeric_forward_dynamics, built once per thread: the packed
    model and the kinematics' warm start in this thread (numeric.Kinematics.work_arrays, arrays it keeps), so that
    a call passes one tuple instead of joining two."""

    def __init__(self, packed, work_arrays):
        self.args = (*packed, *work_arrays())


class ClosedLoopDynamics:
    """Closed-loop dynamics of one robot (immutable apart from a private pinocchio scratch Data).

    One instance per thread: the scratch Data makes calls cheap (creating a Data
    costs ~80 us) but is not shared safely between threads.
    """

    def __init__(self, kin: ParallelKinematics, gravity=None, sign_eps: float = 0.0):
        self.kin = kin
        self.model = kin.model
        clm = kin.model
        self.pin_model = clm.model
        if gravity is not None:
            self.pin_model = pin.Model(clm.model)
            self.pin_model.gravity.linear = check_vector("gravity", gravity, 3)
        self.gravity = np.array(self.pin_model.gravity.linear)
        self.friction = FrictionModel(clm)
        self._has_friction = len(self.friction) > 0
        self.sign_eps = float(sign_eps)   # > 0: smooth sign tanh(x / eps) (simulation)
        self._data = self.pin_model.createData()
        self._act = clm.actuated_idx
        self._tau_shape = (clm.n_actuated,)
        self._tau_tree = np.zeros(self.pin_model.nv)     # scratch of tree_accelerations (pinocchio copies it)
        self._q, self._v = np.empty(self.pin_model.nv), np.empty(self.pin_model.nv)   # forward_dynamics' (q, v)
        self._tree_motion_into = kin.tree_motion_into
        self._task_acceleration = kin.task.tree_task_acceleration
        self._c = clm.platform_idx
        self._S = kin.task.twist_map()
        self._task = kin.task
        self.n = kin.task.dim
        self._zero = np.zeros(self.n)
        self.redundant = clm.n_actuated > self.n
        self._ones_actuated = np.ones(clm.n_actuated)
        self._ones_actuated.setflags(write=False)
        # physical bodies: every joint's body except the massless links of the platform-joint chain
        m = self.pin_model
        plat_q = set(clm.platform_idx.tolist())
        plat_joint = m.frames[m.getFrameId(clm.spec.platform_frame)].parentJoint
        self._bodies = [j for j in range(1, m.njoints) if m.joints[j].idx_q not in plat_q or j == plat_joint]
        self._body_cols = np.concatenate([np.arange(10 * (j - 1), 10 * j) for j in self._bodies])
        self._constraints = self._pinocchio_constraints()
        self._compiled_fd = self._packed_forward_dynamics()
        self._plant_tree = self._compiled_tree()

    def _compiled_tree(self):
        """(the tree's arrays, their scratch) of kernels.plant_forward_dynamics where every tree joint is a 1-DoF
        joint of the compiled tree (loader.tree_arrays) and the family is analytic (its tree_state gives G in closed
        form; the numeric family's would solve for it), else None: pinocchio's calls."""
        if self.kin.family == "numeric":
            return None
        try:
            parent, kind, frame = tree_arrays(self.pin_model)
        except InvalidModelError:
            return None
        m, nv = self.pin_model, self.pin_model.nv
        model = tuple(_constant(a) for a in (parent, kind, frame, tree_inertias(m), m.armature, m.gravity.linear,
                                             self._act))
        scratch = (np.empty((3, 4 * nv)), np.empty((6, nv)), np.empty((nv, 10)), np.empty((nv, 10)),
                   np.empty((nv, nv)), np.empty(nv), np.empty(nv))
        return model, self.friction_arrays, scratch, _constant(np.zeros(nv))

    @property
    def friction_arrays(self) -> tuple:
        """The friction's arguments of kernels.friction_torque (coulomb, viscous, cut_sign, cut_coulomb,
        cut_viscous) as read-only C arrays."""
        fr = self.friction
        return tuple(_constant(a) for a in (fr._coulomb, fr._viscous, fr._cut_sign, fr._cut_coulomb, fr._cut_viscous))

    @property
    def packed_model(self):
        """(I, F): the packed model of numeric_kernels.numeric_forward_dynamics and tree_plant_step where the family
        solves compiled and packed (numeric.Kinematics.packed_motion), else None."""
        return self._compiled_fd

    def _packed_forward_dynamics(self):
        """The packed model of numeric_kernels.numeric_forward_dynamics where the family solves compiled and packed
        (numeric.Kinematics.packed_motion), else None."""
        packed = getattr(self.kin, "packed_motion", None)
        motion = packed() if packed is not None else None
        if motion is None:
            return None
        from ..kinematics.numeric_kernels import SOLVED, pack     # the numeric family's kernels: numeric engines only
        from .numeric_kernels import compiled_forward_dynamics

        m = self.pin_model
        self._fd_solved = SOLVED
        self._numeric_fd = compiled_forward_dynamics()
        packed = pack([*motion[0], self._act, np.array([self.n])],
                      [*motion[1], tree_inertias(m), m.armature, m.gravity.linear])
        self._fd_arguments = _PackedArguments(packed, self.kin.work_arrays)
        return packed

    def _pinocchio_constraints(self):
        """(constraint models, their datas, a Data set up by initConstraintDynamics) when every closure is a
        pinocchio constraint model, else None (module docstring)."""
        try:
            models = constraint_models(self.model)
        except InvalidModelError:
            return None
        datas = pin.StdVec_RigidConstraintData()
        for cm in models:
            datas.append(cm.createData())
        data = self.pin_model.createData()
        pin.initConstraintDynamics(self.pin_model, data, models, datas)
        return models, datas, data

    @property
    def uses_constraint_dynamics(self) -> bool:
        """True when forward_dynamics runs pinocchio's constraintDynamics (module docstring)."""
        return self._constraints is not None

    def with_gravity(self, gravity) -> "ClosedLoopDynamics":
        return ClosedLoopDynamics(self.kin, gravity=gravity, sign_eps=self.sign_eps)

    # ------------------------------------------------------------------ state
    def state(self, pose: Pose, twist, accel=None):
        """(q, v, a, G) of the tree for a platform motion; a is None without accel."""
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        return self.kin.tree_state(pose, twist, accel)

    def _wrench(self, wrench):
        if wrench is None:
            return 0.0
        return self._S.T @ check_vector("wrench (fx fy fz mx my mz, base frame)", wrench, 6, MAGNITUDE_LIMIT)

    def _weights_inverse(self, weights):
        """The diagonal of W^-1 for the weighted minimum norm tau^T W tau of a redundant robot (Wu eq. 39)."""
        if weights is None:
            return self._ones_actuated
        w = check_vector("weights", weights, self.model.n_actuated, MAGNITUDE_LIMIT)
        if not (w >= 1.0 / MAGNITUDE_LIMIT).all():
            raise InvalidInputError(f"weights must be at least {1.0 / MAGNITUDE_LIMIT:g}, got {w}")
        return 1.0 / w

    # ------------------------------------------------------------------ inverse dynamics
    def inverse_dynamics(self, pose: Pose, twist, accel, wrench=None, friction: bool = True,
                         closure_forces: bool = False, weights=None) -> IDResult:
        """Actuator forces for a platform motion (task space), eq. (1).

        wrench: external wrench applied to the platform (force at its origin, moment), base frame.
        weights: for redundant robots, W of the weighted minimum norm tau^T W tau (default I).
        """
        pose, twist, accel = self.kin.validate_motion(pose, twist, accel, "inverse dynamics")
        d = self._data
        q, v, a, G = self.kin.tree_state(pose, twist, accel)
        tau_tree = pin.rnea(self.pin_model, d, q, v, a)
        if friction and self._has_friction:
            tau_tree += self.friction.torque(d, q, v, self.sign_eps)     # rnea's tau is a new array
        task_force = self._zero if wrench is None else self._wrench(wrench)
        f, ratio_a = np.empty(self.n), None
        if self.redundant:
            # the (weighted) minimum norm (Wu eq. 39) and the internal forces null(J^T), compiled
            n_a = self.model.n_actuated
            tau, null = np.empty(n_a), np.empty((n_a, n_a - self.n))
            ratio, ratio_a = redundant_actuation(G, tau_tree, self._act, task_force, self._weights_inverse(weights),
                                                 SINGULAR_TOL, _WEIGHTED_TOL, f, tau, null)
        else:
            # f = G^T tau_tree - S^T w and J^T tau = f with the conditioning test of check_conditioning, compiled
            tau, null = np.empty(self.n), None
            ratio = project_and_solve(G, tau_tree, self._act, task_force, SINGULAR_TOL, f, tau)
        # SingularConfigurationError where J fails check_conditioning's test (the actuators cannot balance the
        # platform there) or, redundant, the weighted J^T W^-1 J is singular
        if not ratio >= SINGULAR_TOL:
            raise conditioning_error("J (qdot_a = J xdot)", ratio)
        if ratio_a is not None and not ratio_a > _WEIGHTED_TOL:
            raise SingularConfigurationError(f"J^T W^-1 J is singular (sigma_min/sigma_max = {ratio_a:.3g})")
        lam = None
        if closure_forces:
            # K^T lambda = M a + h + tau_f - S_a^T tau - J_w^T w  (tree equations)
            rhs = tau_tree.copy()
            rhs[self._act] -= tau
            if wrench is not None:
                rhs -= self._platform_wrench_jacobian(q).T @ np.asarray(wrench, float)
            K = closure_jacobian(self.model, d, q)
            lam = np.linalg.lstsq(K.T, rhs, rcond=None)[0]
        return IDResult(tau, f, q, v, a, lam, null)

    def inverse_dynamics_joint(self, q_actuated, qd_actuated, qdd_actuated, guess: Pose, **kwargs) -> IDResult:
        """Inverse dynamics from actuated-joint motion: FK for the pose, J for the task rates."""
        from ..kinematics.forward import forward_kinematics

        n_a = self.model.n_actuated
        qd = check_vector("actuated joint velocities", qd_actuated, n_a)
        qdd = check_vector("actuated joint accelerations", qdd_actuated, n_a)
        pose = forward_kinematics(self.kin, q_actuated, guess, check_limits=False).pose
        J = self.kin.jacobian(pose)
        twist = np.linalg.lstsq(J, qd, rcond=None)[0]
        accel = np.linalg.lstsq(J, qdd - self.kin.jacobian_dot(pose, twist) @ twist, rcond=None)[0]
        return self.inverse_dynamics(pose, twist, accel, **kwargs)

    def _platform_wrench_jacobian(self, q):
        """J_w (6 x nv): twist of the platform frame (LOCAL_WORLD_ALIGNED, [v; omega])."""
        m, d = self.pin_model, self._data
        pin.computeJointJacobians(m, d, q)
        pin.updateFramePlacements(m, d)
        fid = m.getFrameId(self.model.spec.platform_frame)
        return pin.getFrameJacobian(m, d, fid, _LWA)

    # ------------------------------------------------------------------ matrices
    def gdot(self, q, v, G, pose, twist):
        """Gdot = dG/dt: platform rows from the task space, the rest from K Gdot = -Kdot G."""
        m, d = self.pin_model, self._data
        clm = self.model
        K = closure_jacobian(clm, d, q)
        Kd = closure_jacobian_dot(clm, d, q, v)
        p = clm.platform_idx
        rest = np.setdiff1d(np.arange(m.nv), p)
        Gd = np.zeros_like(G)
        Gd[p] = self.kin.task.platform_rate_matrix_dot(pose, twist)
        Gd[rest] = -np.linalg.lstsq(K[:, rest], Kd @ G + K[:, p] @ Gd[p], rcond=None)[0]
        return Gd

    def mass_matrix(self, pose: Pose) -> np.ndarray:
        """M (n x n) on the task velocity: kinetic energy = 1/2 xdot^T M xdot."""
        pose = self.kin.validate(pose)[0]
        q, _, _, G = self.kin.tree_state(pose, self._zero)     # q and G from one pass of the family
        M = np.empty((self.n, self.n))
        task_mass_matrix(G, pin.crba(self.pin_model, self._data, q), M)
        return M

    def coriolis_matrix(self, pose: Pose, twist) -> np.ndarray:
        """C (n x n) with Mdot - 2C skew-symmetric; C xdot is the velocity-product force."""
        pose, twist, _ = self.kin.validate_motion(pose, twist)
        q, v, _, G = self.kin.tree_state(pose, twist)
        m, d = self.pin_model, self._data
        Mt = pin.crba(m, d, q)
        Mt = np.triu(Mt) + np.triu(Mt, 1).T
        Ct = pin.computeCoriolisMatrix(m, d, q, v)
        return G.T @ (Mt @ self.gdot(q, v, G, pose, twist) + Ct @ G)

    def gravity_vector(self, pose: Pose) -> np.ndarray:
        """G_x (n): generalized gravity force on the task velocity."""
        pose = self.kin.validate(pose)[0]
        q, _, _, G = self.kin.tree_state(pose, self._zero)     # q and G from one pass of the family
        return G.T @ pin.computeGeneralizedGravity(self.pin_model, self._data, q)

    def joint_space(self, pose: Pose, twist):
        """(M_q, C_q, G_q) on the actuated joints (Taghirad: M_q = J^-T M J^-1, ...).

        For redundant robots J^+ replaces J^-1 (M_q then has rank n).
        """
        M = self.mass_matrix(pose)
        C = self.coriolis_matrix(pose, twist)
        Gx = self.gravity_vector(pose)
        J = self.kin.jacobian(pose)
        Jd = self.kin.jacobian_dot(pose, twist)
        check_conditioning(J, "J (qdot_a = J xdot)")
        Ji = np.linalg.inv(J) if not self.redundant else np.linalg.pinv(J)
        return Ji.T @ M @ Ji, Ji.T @ (C - M @ Ji @ Jd) @ Ji, Ji.T @ Gx

    # ------------------------------------------------------------------ forward dynamics
    def forward_dynamics(self, pose: Pose, twist, tau, wrench=None, friction: bool = True,
                         end_stops=None) -> np.ndarray:
        """Task acceleration xddot from actuator forces (reduced coordinates):
        M xddot = J^T tau + S^T w - G^T (RNEA(q, v, Gdot xdot) + tau_f - tau_stop) + f_cut,
        tau_stop and f_cut the forces of the tree- and cut-joint ``end_stops`` (dynamics/end_stops.EndStops;
        None: no stops).
        """
        if self._compiled_fd is not None and wrench is None and end_stops is None and not (friction
                                                                                           and self._has_friction):
            # the numeric family's square closures: IK and dynamics in one compiled call that checks the inputs
            # (numeric_kernels.numeric_forward_dynamics); where it does not solve, the path below decides and names why
            xdd = np.empty(self.n)
            try:
                solved = self._numeric_fd(*self._fd_arguments.args, pose.rotation, pose.position, twist, tau,
                                          xdd) == self._fd_solved
            except (TypeError, ValueError, AttributeError):      # as below: not float64 arrays / not a Pose
                solved = False
            if solved:
                return xdd
        cons = self._constraints
        if cons is None or (self._plant_tree is not None
                            and (wrench is not None or end_stops is not None or (friction and self._has_friction))):
            if not self._fd_inputs_ok(pose, twist, tau):
                pose, twist, _ = self.kin.validate_motion(pose, twist)
                tau = check_vector("actuator forces", tau, self.model.n_actuated, MAGNITUDE_LIMIT)
            return self._forward_dynamics_reduced(pose, twist, tau, wrench, friction, end_stops)
        # pinocchio's constraintDynamics on the tree (module docstring): the task force S^T w + f_cut enters as
        # platform-joint forces B^-T (S^T w + f_cut), xddot from the platform rows of a. The inputs are checked
        # by the compiled calls that use them (tau by kernels.tree_force as it writes the tree forces, pose and
        # twist by the family's pass for (q, v)); where one fails, the full validation names the error
        q, v, t = self._q, self._v, self._tau_tree
        try:
            ok = (tree_force(tau, self._act, MAGNITUDE_LIMIT, t)
                  and self._tree_motion_into(pose, twist, q, v, True))
        except (TypeError, ValueError, AttributeError):
            # not float64 arrays / not a Pose: numba's dispatch (TypeError; ValueError for an empty list, whose
            # type it cannot fingerprint), the family's (AttributeError)
            ok = False
        if not ok:
            pose, twist, _ = self.kin.validate_motion(pose, twist)
            tau = check_vector("actuator forces", tau, self.model.n_actuated, MAGNITUDE_LIMIT)
            self._tree_motion_into(pose, twist, q, v, False)
            t[self._act] = tau
        if wrench is None and end_stops is None and not (friction and self._has_friction):
            a = pin.constraintDynamics(self.pin_model, cons[2], q, v, t, cons[0], cons[1])
        else:
            force = None if wrench is None and end_stops is None else self._task_force(pose, twist, wrench, end_stops)
            a = self.tree_accelerations(q, v, tau, friction, end_stops, force)
        xdd, finite = self._task_acceleration(q, v, a, self._c)
        if not finite:
            raise SingularConfigurationError("constraint dynamics: the constrained mass matrix is singular")
        return xdd

    def _fd_inputs_ok(self, pose, twist, tau) -> bool:
        """A float64 pose, twist and tau that pass the checks of validate_motion and check_vector in one compiled
        call (kinematics.kernels.motion_ok, tau in the acceleration's place: an L1 bound, a little stricter);
        False sends them to those checks, which decide and name what is wrong."""
        return (twist is not None and type(tau) is np.ndarray and tau.shape == self._tau_shape
                and tau.dtype == np.float64 and fast_inputs(pose, twist, None, self.n)
                and motion_ok(pose.rotation, pose.position, twist, tau, MAGNITUDE_LIMIT))

    def _task_force(self, pose, twist, wrench, end_stops):
        """S^T w + f_cut (the cut-joint end stops' force), None when both are absent."""
        f = None if wrench is None else self._wrench(wrench)
        f_cut = None if end_stops is None else end_stops.cut_force(self.kin, pose, twist)
        if f_cut is not None:
            f = f_cut if f is None else f + f_cut
        return f

    def tree_accelerations(self, q, v, tau, friction: bool = True, end_stops=None, task_force=None) -> np.ndarray:
        """Tree accelerations a at a tree state (q, v): M a + h = S_a^T tau - tau_f + tau_stop + tau_p + K^T lambda,
        K a = -Kdot v; tau_p the platform-joint forces of a generalized force ``task_force`` on the task velocity
        (B^T tau_p = task_force). pinocchio's constraintDynamics where it holds the closures, else pinocchio's
        KKT forwardDynamics with the closures' own K and Kdot v. No input checks: the inner call of
        the simulator's tree-coordinate step (simulation.ReducedSimulator)."""
        t = self._tau_tree                          # S_a^T tau: only the actuated entries are ever written
        t[self._act] = tau
        friction = friction and self._has_friction
        if friction or end_stops is not None or task_force is not None:
            t = t.copy()
        if friction:
            t -= self.friction.torque(self._data, q, v, self.sign_eps)
        if end_stops is not None:
            t += end_stops.torque(q, v)
        if task_force is not None:
            c = self.model.platform_idx
            t[c] += self.kin.task.platform_joint_force(q[c], task_force)
        if self._constraints is not None:
            models, datas, cd = self._constraints
            return pin.constraintDynamics(self.pin_model, cd, q, v, t, models, datas)
        # K and Kdot v from one tree pass: computeJointJacobiansTimeVariation gives data.J with data.dJ, the
        # placements are read once (ClosureRows.placements) for both
        d, rows = self._data, self.model.closure_rows
        pin.computeJointJacobiansTimeVariation(self.pin_model, d, q, v)
        H = rows.placements(d, q)
        K = rows.evaluate(d, q, H=H)[1]
        bias = rows.bias(d, q, v, H=H)
        # pinocchio's KKT forward dynamics with our K: [M K^T; K 0] [a; -lambda] = [t - h; -Kdot v]
        a = pin.forwardDynamics(self.pin_model, d, q, v, t, K, bias)
        if not np.isfinite(a).all():
            raise SingularConfigurationError("constrained mass matrix [M K^T; K 0] is singular")
        return a

    def _forward_dynamics_reduced(self, pose, twist, tau, wrench, friction, end_stops):
        """forward_dynamics in reduced coordinates (M = G^T M_tree G), for every closure type; on the compiled tree
        where there is one (``_compiled_tree``)."""
        m, d = self.pin_model, self._data
        q, v, a0, G = self.kin.tree_state(pose, twist, self._zero)          # a0 = Gdot xdot
        if self._plant_tree is not None:
            model, fr, scratch, no_stop = self._plant_tree
            task_force = self._task_force(pose, twist, wrench, end_stops)
            stops = () if end_stops is None else (end_stops.lower, end_stops.upper, end_stops.stiffness,
                                                   end_stops.damping)
            xdd = np.empty(self.n)
            if not plant_forward_dynamics(
                    *model, q, v, a0, G, tau, self._zero if task_force is None else task_force,
                    friction and self._has_friction, *fr, self.sign_eps, bool(stops), *(stops or (no_stop,) * 4),
                    *scratch, xdd):
                raise SingularConfigurationError("task-space mass matrix is singular")
            return xdd
        bias = pin.rnea(m, d, q, v, a0)                                     # a new array
        if friction and self._has_friction:
            bias += self.friction.torque(d, q, v, self.sign_eps)
        if end_stops is not None:
            bias -= end_stops.torque(q, v)
        task_force = self._task_force(pose, twist, wrench, end_stops)
        xdd = np.empty(self.n)
        # M xddot = G_a^T tau + S^T w + f_cut - G^T bias, M = G^T M_tree G: one compiled call (Cholesky)
        if not reduced_acceleration(G, pin.crba(m, d, q), self._act, tau, bias,
                                    self._zero if task_force is None else task_force, xdd):
            raise SingularConfigurationError("task-space mass matrix is singular")
        return xdd

    def energy(self, pose: Pose, twist) -> tuple[float, float]:
        """(kinetic, potential) energy; potential = -sum m_i g . c_i over the bodies."""
        pose, twist, _ = self.kin.validate_motion(pose, twist)
        q, v, _, _ = self.kin.tree_state(pose, twist)
        m, d = self.pin_model, self._data
        return float(pin.computeKineticEnergy(m, d, q, v)), float(pin.computePotentialEnergy(m, d, q))

    # ------------------------------------------------------------------ parameter-linear form
    def body_names(self) -> list[str]:
        """URDF link of each physical body (the platform-joint chain's massless links excluded)."""
        m = self.pin_model
        names = []
        for j in self._bodies:
            frames = [f.name for f in m.frames if f.parentJoint == j and f.type == pin.FrameType.BODY]
            names.append(frames[0] if frames else m.names[j])
        return names

    def parameters(self):
        """(names, values) of the standard parameters: 10 per body (pinocchio order) + friction."""
        names, values = [], []
        keys = ("m", "mx", "my", "mz", "Ixx", "Ixy", "Iyy", "Ixz", "Iyz", "Izz")
        for j, body in zip(self._bodies, self.body_names()):
            names += [f"{body}.{k}" for k in keys]
            values.append(self.pin_model.inertias[j].toDynamicParameters())
        names += list(self.friction.names)
        return names, np.concatenate(values + [self.friction.values])

    def regressor(self, pose: Pose, twist, accel, friction: bool = True) -> np.ndarray:
        """Observation matrix Omega (n x n_params) of J^T tau = Omega p (Wu eq. 16);
        for non-redundant robots, tau = J^-T Omega p: use ``actuator_regressor``."""
        pose, twist, accel = self.kin.validate_motion(pose, twist, accel, "the regressor")
        m, d = self.pin_model, self._data
        q, v, a, G = self.kin.tree_state(pose, twist, accel)
        Y = pin.computeJointTorqueRegressor(m, d, q, v, a)[:, self._body_cols]
        if len(self.friction):
            Yf = self.friction.regressor(d, q, v, self.sign_eps)
            Y = np.hstack([Y, Yf if friction else np.zeros_like(Yf)])
        return G.T @ Y

    def actuator_regressor(self, pose: Pose, twist, accel, friction: bool = True) -> np.ndarray:
        """Y (n_actuated x n_params) with tau = Y p (non-redundant robots)."""
        if self.redundant:
            raise InvalidInputError("a redundant robot has no unique actuator regressor; use regressor() "
                                    "(J^T tau = Omega p)")
        J = self.kin.jacobian(pose)
        check_conditioning(J, "J (qdot_a = J xdot)")
        return np.linalg.solve(J.T, self.regressor(pose, twist, accel, friction))
