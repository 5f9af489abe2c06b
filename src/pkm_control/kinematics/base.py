"""Interface of the analytic kinematics of one robot family.

A family class (``hexapod_ups``, ``hexapod_pus``, ``delta``, ``planar_redundant``)
is built once from a ClosedLoopModel and is then immutable: every method takes
the state explicitly. Families implement the analytic methods marked
"family"; this base class adds validation, limits and everything generic
(forward kinematics by Newton, the Jacobian from the constraint model).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np

from ..description.loader import ClosedLoopModel, closure_jacobian
from ..errors import MAGNITUDE_LIMIT, InvalidInputError, JointLimitError, check_vector
from .kernels import motion_ok
from .task_space import Pose, TaskSpace


#: an empty array: no twist / acceleration for the kernels
NO_VECTOR = np.empty(0)


def fast_inputs(pose, twist, accel, dim: int) -> bool:
    """The pose, twist and acceleration are float64 arrays of the shapes the compiled kernels take (position (3,),
    rotation (3, 3), twist and accel (dim,); twist and accel may be None, accel only with a twist)."""
    p, R = getattr(pose, "position", None), getattr(pose, "rotation", None)
    return (type(p) is np.ndarray and type(R) is np.ndarray and p.shape == (3,) and R.shape == (3, 3)
            and p.dtype == np.float64 and R.dtype == np.float64
            and (twist is None or (type(twist) is np.ndarray and twist.shape == (dim,) and twist.dtype == np.float64))
            and (accel is None or (twist is not None and type(accel) is np.ndarray and accel.shape == (dim,)
                                   and accel.dtype == np.float64)))


@dataclass(frozen=True)
class JointMotion:
    """All tree joints (q order of the model) for one platform motion."""

    q: np.ndarray
    v: np.ndarray | None = None
    a: np.ndarray | None = None
    jacobian: np.ndarray | None = None   # J with qdot_a = J xdot, when asked for


class ParallelKinematics(ABC):
    """Analytic inverse kinematics of a parallel robot plus generic services."""

    #: family name, as written in config ``kinematics:``
    family = ""

    def __init__(self, clm: ClosedLoopModel, task: TaskSpace):
        self.model = clm
        self.task = task
        m = clm.model
        lower = np.array(m.lowerPositionLimit, dtype=float)
        upper = np.array(m.upperPositionLimit, dtype=float)
        # platform joints carry no limits: they only parametrize the free platform
        lower[clm.platform_idx] = -np.inf
        upper[clm.platform_idx] = np.inf
        self.lower, self.upper = lower, upper
        if len(clm.platform_idx) != task.dim:
            raise InvalidInputError(f"robot '{clm.name}' has {len(clm.platform_idx)} platform joints, "
                                    f"its task space {task.kind} needs {task.dim}")

    def home_pose(self) -> Pose:
        """The robot's home pose: spec ``home`` in this task space (the one place the YAML's home is converted)."""
        return self.task.pose(self.model.spec.require("home", f"robot '{self.model.name}'s home pose"))

    # ------------------------------------------------------------------ family
    @abstractmethod
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        """All joint positions (and rates, accelerations when twist/accel are given)."""

    @abstractmethod
    def actuated(self, pose: Pose) -> np.ndarray:
        """Actuated joint positions only, no limit check (the Newton FK inner loop)."""

    @abstractmethod
    def jacobian(self, pose: Pose) -> np.ndarray:
        """J (n_actuated x task dim) with qdot_a = J xdot."""

    @abstractmethod
    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        """G (nv x task dim) with qdot = G xdot for every tree joint."""

    @abstractmethod
    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """Jdot: qddot_a = J xddot + Jdot xdot."""

    @abstractmethod
    def jacobian_xq(self, pose: Pose):
        """Taghirad's (J_x, J_q): J_q qdot_a = J_x xdot, J = J_q^-1 J_x."""

    @abstractmethod
    def inverse_batch(self, positions, rotations):
        """Vectorized IK over N poses: (q (N, nv), valid (N,) bool); no exceptions per sample."""

    # ------------------------------------------------------------------ generic
    def jacobian_dot_twist(self, pose: Pose, twist) -> np.ndarray:
        """Jdot xdot: the actuated joints' acceleration of the motion (pose, twist) at xddot = 0 (qddot_a = J xddot +
        Jdot xdot)."""
        return self.jacobian_dot(pose, twist) @ np.asarray(twist, float)

    def actuated_and_jacobian(self, pose: Pose):
        """(q_a, J) without limit checks: what one Newton step of the FK needs.

        Families whose Jacobian computation yields q_a on the way override this.
        """
        return self.actuated(pose), self.jacobian(pose)

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """(JointMotion (no limit checks, no J), G): the tree state and G of a platform motion, what the dynamics
        needs. Families that obtain G on the way override this (kinematics.numeric: one assembly)."""
        return self.inverse(pose, twist, accel, check_limits=False), self.joint_jacobian(pose)

    def tree_motion(self, pose: Pose, twist):
        """(q, v) of the tree for a pose and twist that passed ``validate``, no limit checks: the inner call of the
        forward dynamics. Families whose IK validates its inputs again override this to skip that."""
        motion = self.inverse(pose, twist, check_limits=False)
        return motion.q, motion.v

    def tree_motion_into(self, pose: Pose, twist, q, v, validate: bool) -> bool:
        """``tree_motion`` written into the caller's (nv,) arrays q and v, the forward dynamics' inner call.
        ``validate``: first the types and shapes (``fast_inputs``, a twist required) and the numeric checks of
        ``validate_motion`` (motion_ok), False (nothing written) where they fail: the caller's full validation
        decides and names what is wrong. Families with a compiled pass override this to check and solve in it."""
        if validate and not (twist is not None and fast_inputs(pose, twist, None, self.task.dim)
                             and motion_ok(pose.rotation, pose.position, twist, NO_VECTOR, MAGNITUDE_LIMIT)):
            return False
        q[:], v[:] = self.tree_motion(pose, twist)
        return True

    def tree_state(self, pose: Pose, twist, accel=None):
        """(q, v, a, G) as ``motion_and_joint_jacobian`` (a None without accel) for inputs that passed ``validate``:
        the inner call of the inverse dynamics; families override this to skip checking the inputs again."""
        motion, G = self.motion_and_joint_jacobian(pose, twist, accel)
        return motion.q, motion.v, motion.a, G

    def end_stop_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """(lower, upper) of the simulated machine's end stops per tree joint (dynamics/end_stops.py):
        the joint ranges; a family whose cut joints limit a tree joint further narrows it."""
        return self.lower.copy(), self.upper.copy()

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """(names, lower, upper) of the limited cut joints (not tree joints: ball-joint cones, planar
        cut joints), in the order of ``cut_joint_angles``; a family with such limits overrides both."""
        return (), np.empty(0), np.empty(0)

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        """The limited angles of the cut joints at a pose (``cut_joint_limits`` order, no check)."""
        return np.empty(0)

    def cut_joint_rows(self, pose: Pose, step: float = 1e-7) -> np.ndarray:
        """d(cut-joint angle rates) / d xdot (n_cut x task dim): central differences of
        ``cut_joint_angles`` in the platform-joint coordinates c, times their rate map B (cdot = B xdot)."""
        task = self.task
        c0 = task.platform_joint_motion(pose)[0]
        D = np.empty((len(self.cut_joint_limits()[0]), len(c0)))
        for k in range(len(c0)):
            e = np.zeros(len(c0))
            e[k] = step
            D[:, k] = (self.cut_joint_angles(task.pose_from_platform_joints(c0 + e))
                       - self.cut_joint_angles(task.pose_from_platform_joints(c0 - e))) / (2 * step)
        return D @ task.platform_rate_matrix(pose)

    def check_limits(self, q: np.ndarray) -> None:
        """Raise JointLimitError naming the first joint outside its range."""
        bad = np.flatnonzero((q < self.lower - 1e-12) | (q > self.upper + 1e-12))
        if bad.size:
            i = bad[0]
            raise JointLimitError(f"joint '{self.model.joint_names[i]}' = {q[i]:.6g} is outside its range "
                                  f"[{self.lower[i]:.6g}, {self.upper[i]:.6g}]")

    def within_limits(self, q: np.ndarray) -> np.ndarray:
        """Batched limit test: q (..., nv) -> bool (...)."""
        return np.all((q >= self.lower - 1e-12) & (q <= self.upper + 1e-12), axis=-1)

    def validate(self, pose: Pose, twist=None, accel=None):
        """Checked pose, twist and acceleration (InvalidInputError names the bad one).

        Every component must be finite and within MAGNITUDE_LIMIT (errors.py): the bound that keeps
        the outputs of the kinematics and dynamics finite. Float64 arrays of the right shapes are checked by
        one compiled call (kernels.motion_ok, a little stricter: an L1 bound); anything else, and every
        failure, by the checks below, which name what is wrong.
        """
        if fast_inputs(pose, twist, accel, self.task.dim) and motion_ok(
                pose.rotation, pose.position, NO_VECTOR if twist is None else twist,
                NO_VECTOR if accel is None else accel, MAGNITUDE_LIMIT):
            return pose, twist, accel     # float64 arrays that pass the checks in one compiled call
        if not isinstance(pose, Pose):
            raise InvalidInputError(f"pose must be a Pose (position, rotation), got {type(pose).__name__}")
        pose = pose.validated()
        n = self.task.dim
        if twist is not None:
            twist = check_vector(f"twist ({' '.join(self.task.velocity_names)})", twist, n, MAGNITUDE_LIMIT)
        if accel is not None:
            if twist is None:
                raise InvalidInputError("an acceleration needs a twist as well")
            accel = check_vector("acceleration", accel, n, MAGNITUDE_LIMIT)
        return pose, twist, accel

    def validate_motion(self, pose: Pose, twist, accel=None, needs_accel: str = ""):
        """``validate`` for a computation that needs a twist and, when ``needs_accel`` names the computation,
        an acceleration: InvalidInputError if one is missing."""
        pose, twist, accel = self.validate(pose, twist, accel)
        if twist is None:
            raise InvalidInputError(f"{needs_accel or 'this computation'} needs a twist")
        if needs_accel and accel is None:
            raise InvalidInputError(f"{needs_accel} needs an acceleration")
        return pose, twist, accel

    def checked_batch(self, positions, rotations):
        """(P (N, 3), R (N, 3, 3), usable (N,)) for ``inverse_batch``: InvalidInputError on wrong shapes or
        types; usable is False for a sample whose position has a component that is not finite or beyond
        MAGNITUDE_LIMIT, or whose R is not a rotation (|R^T R - I| > 1e-9 or det R < 0, as Pose.validated):
        the batch reports such a sample as invalid instead of raising (its row of q is not meaningful)."""
        try:
            P = np.asarray(positions, dtype=float)
            R = np.asarray(rotations, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"inverse_batch needs numeric positions and rotations: {exc}") from exc
        if P.ndim != 2 or P.shape[1] != 3 or R.shape != (P.shape[0], 3, 3):
            raise InvalidInputError(f"inverse_batch needs positions (N, 3) and rotations (N, 3, 3), "
                                    f"got {P.shape} and {R.shape}")
        with np.errstate(invalid="ignore", over="ignore"):
            orthonormal = np.abs(np.einsum("nki,nkj->nij", R, R) - np.eye(3)).max(axis=(1, 2), initial=0.0) <= 1e-9
            right_handed = np.einsum("ni,ni->n", np.cross(R[:, :, 0], R[:, :, 1]), R[:, :, 2]) > 0.0
            usable = (np.abs(P) <= MAGNITUDE_LIMIT).all(axis=1) & orthonormal & right_handed
        # the family computes the unusable samples at the identity pose (no overflow), then marks them invalid
        return np.where(usable[:, None], P, 0.0), np.where(usable[:, None, None], R, np.eye(3)), usable

    def constraint_joint_jacobian(self, q: np.ndarray, data=None) -> np.ndarray:
        """G from the generic closure model: qdot = G xdot, solved from K qdot = 0.

        Independent of the family's analytic derivation: it only uses the URDF
        and the closures (pinocchio frame Jacobians).
        """
        clm = self.model
        data = data or clm.create_data()
        K = closure_jacobian(clm, data, q)
        p = clm.platform_idx
        rest = np.setdiff1d(np.arange(clm.model.nv), p)
        B = self.task.platform_rate_matrix(self.task.pose_from_platform_joints(q[p]))
        G = np.zeros((clm.model.nv, self.task.dim))
        G[p] = B
        G[rest] = -np.linalg.lstsq(K[:, rest], K[:, p] @ B, rcond=None)[0]
        return G
