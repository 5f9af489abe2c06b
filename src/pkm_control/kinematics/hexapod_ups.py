"""Analytic kinematics of 6-UPS hexapods: the Gough-Stewart platform (Taghirad) and PaLiDA (Abdellatif).

Each leg i runs from the base anchor A_i to the platform anchor B_i = p + R b_i:

* a universal joint at A_i: ``leg<i>_alpha`` about -y of the leg base frame S_i (origin A_i,
  orientation from ``base.leg_frame_rpy``), then ``leg<i>_beta`` about the rotated x axis;
* the actuated prismatic joint ``leg<i>_prismatic`` whose value is the strut length l_i (the
  strut lies along -z of S_i at alpha = beta = 0);
* a spherical joint at B_i, the cut joint of the tree (point closure
  ``leg<i>_tip`` = ``platform_anchor<i>``).

With the strut vector (x, y, z) = S_i^T (B_i - A_i) in the leg base frame the IK of one strut is
Abdellatif's eq. 29-31:

    l = sqrt(x^2 + y^2 + z^2),  alpha = atan2(x, -z),  beta = atan2(y, r),  r = sqrt(x^2 + z^2)

(the strut direction is u = Ry(-alpha) Rx(beta) (0, 0, -1) = (s_a c_b, s_b, -c_a c_b)). Rates
and accelerations follow by differentiating these closed forms with the velocity and
acceleration of B_i (Abdellatif eq. 2-3, Taghirad's v_bi, a_bi). The Jacobian is Taghirad's
J = [s_i^T, (b_i x s_i)^T] for the task velocity (v, omega) in the base frame; J_q = I, J_x = J.

Besides the tree-joint limits, the cone angle of each spherical joint (angle between the strut
axis u_i and the anchor's nominal axis R n_i, ``platform.anchor_axes``) is limited by
``limits.spherical_joint_max_angle``.

Speed: on 6 x 3 arrays a numpy call costs about as much as the arithmetic of a whole leg, so positions,
rates, accelerations, J and G (``inverse``, ``joint_jacobian``, the dynamics engine's state) come from one
compiled loop over the legs (hexapod_ups_kernels.ups_motion, 1-2 us a call), while ``inverse_batch`` is vectorized over
N poses and legs in numpy; the tests check both against each other, against the numeric family and against
finite differences.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, JointLimitError,
                      SingularConfigurationError, UnreachablePoseError)
from .base import NO_VECTOR, JointMotion, ParallelKinematics, fast_inputs
from .forward import FKResult, failure, finish
from .hexapod_ups_kernels import (UPS_GIMBAL, UPS_INPUT, UPS_OK, UPS_PITCH, ups_cone_angles, ups_cone_rows, ups_forward,
                                  ups_motion)
from .kernels import UPS_FK_INPUT, UPS_FK_OK
from .task_space import Pose, TaskSpace, rpy_to_matrix

#: below this horizontal strut component r = sqrt(x^2 + z^2) (m) the universal joint is in
#: gimbal lock (strut along its first axis) and alpha is undefined
_GIMBAL_EPS = 1e-9
#: no G for hexapod_ups_kernels.ups_motion
_NO_G = np.zeros((0, 6))
#: xddot = 0 (jacobian_dot_twist)
_ZERO_ACCEL = np.zeros(6)
_ZERO_ACCEL.setflags(write=False)


class Kinematics(ParallelKinematics):
    """6-UPS hexapod (any number of UPS legs, 6 for a 6-DoF platform)."""

    family = "hexapod_ups"

    def __init__(self, clm):
        cfg = clm.spec
        super().__init__(clm, TaskSpace(cfg.task_space))
        if self.task.kind != "spatial":
            raise InvalidModelError(f"hexapod_ups needs task_space: spatial, '{clm.name}' has {self.task.kind}")
        try:
            A = np.array(cfg.blocks["base"]["anchors"], dtype=float)
            rpy = np.array(cfg.blocks["base"]["leg_frame_rpy"], dtype=float)
            Bp = np.array(cfg.blocks["platform"]["anchors"], dtype=float)
            axes = np.array(cfg.blocks["platform"]["anchor_axes"], dtype=float)
            cone = float(cfg.limits["spherical_joint_max_angle"])
        except (KeyError, TypeError) as exc:
            raise InvalidModelError(f"robot '{clm.name}': hexapod_ups config lacks {exc}") from exc
        n = len(A)
        if A.shape != (n, 3) or rpy.shape != (n, 3) or Bp.shape != (n, 3) or axes.shape != (n, 3):
            raise InvalidModelError(f"robot '{clm.name}': base.anchors, base.leg_frame_rpy, platform.anchors and "
                                    f"platform.anchor_axes must all be {n} x 3")
        self.n_legs = n
        self._A = A
        self._RS = np.stack([rpy_to_matrix(*r) for r in rpy])          # S_i in base coordinates
        self._Bp = Bp
        self._axes = axes / np.linalg.norm(axes, axis=1)[:, None]
        self.spherical_joint_max_angle = cone
        self._cos_cone = math.cos(cone)
        ji = clm.joint_index
        try:
            self._ia = np.array([ji[f"leg{i + 1}_alpha"] for i in range(n)])
            self._ib = np.array([ji[f"leg{i + 1}_beta"] for i in range(n)])
            self._il = np.array([ji[f"leg{i + 1}_prismatic"] for i in range(n)])
            self._ip = np.array([ji[name] for name in ("platform_x", "platform_y", "platform_z",
                                                       "platform_yaw", "platform_pitch", "platform_roll")])
        except KeyError as exc:
            raise InvalidModelError(f"robot '{clm.name}' has no joint {exc} (hexapod_ups naming)") from exc
        # actuated joint k is the prismatic joint of leg act[k]
        pos = {int(j): i for i, j in enumerate(self._il)}
        try:
            self._act = np.array([pos[int(j)] for j in clm.actuated_idx])
        except KeyError as exc:
            raise InvalidModelError(f"robot '{clm.name}': hexapod_ups actuates the leg<i>_prismatic joints only, "
                                    f"got {clm.actuated_joints}") from exc
        self._act_identity = bool(np.array_equal(self._act, np.arange(n)))
        self._act_rows = self._il[self._act]             # the tree index of each actuated joint
        self._nv = clm.model.nv
        self._leg_rows, self._info = np.empty((len(A), 6)), np.zeros(4)     # tree_motion_into's scratch
        self._lo_eps, self._hi_eps = self.lower - 1e-12, self.upper + 1e-12
        self._iall = np.concatenate([self._ia, self._ib, self._il, self._ip])
        self._fk_index = np.concatenate([self._act_rows, self._act, self._iall])     # ups_forward's index
        # per leg: A_i, b_i, S_i (row-major), n_i, the lower and upper limits of alpha, beta, l (ups_motion)
        self._legdata = np.array([(*A[i], *Bp[i], *self._RS[i].ravel(), *self._axes[i],
                                   self._lo_eps[self._ia[i]], self._hi_eps[self._ia[i]],
                                   self._lo_eps[self._ib[i]], self._hi_eps[self._ib[i]],
                                   self._lo_eps[self._il[i]], self._hi_eps[self._il[i]]) for i in range(n)], float)
        for arr in (self._A, self._RS, self._Bp, self._axes, self._ia, self._ib, self._il, self._ip, self._act,
                    self._lo_eps, self._hi_eps, self._iall, self._legdata, self.lower, self.upper, self._act_rows,
                    self._fk_index):
            arr.setflags(write=False)          # immutable after construction

    # ------------------------------------------------------------------ helpers
    @staticmethod
    def _gimbal_check(r, s, first=0):
        bad = np.flatnonzero(~(r > _GIMBAL_EPS))
        if bad.size:
            k = bad[0]
            i = first + k
            raise UnreachablePoseError(
                f"leg{i + 1}: strut component normal to the first universal-joint axis r = {r[k]:.3g} m "
                f"(strut vector {np.array2string(s[k], precision=4)} in its base frame) is below {_GIMBAL_EPS:g} m: "
                "universal joint in gimbal lock, alpha undefined")

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The spherical joints' cones at B_i: leg<i>_spherical, angle <= spherical_joint_max_angle."""
        n = self.n_legs
        return (tuple(f"leg{i + 1}_spherical" for i in range(n)), np.full(n, -np.inf),
                np.full(n, self.spherical_joint_max_angle))

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        """Cone angle of each spherical joint: between the strut axis u_i and the anchor axis R n_i (one compiled
        call, hexapod_ups_kernels.ups_cone_angles: the simulated end stops' every stage)."""
        out = np.empty(self.n_legs)
        ups_cone_angles(np.asarray(pose.rotation, float), np.asarray(pose.position, float), self._legdata, out)
        return out

    def cut_joint_rows(self, pose: Pose) -> np.ndarray:
        """d(cone angle rates) / d(twist) of the spherical joints, in closed form (ups_cone_rows: the cut-joint
        end stops' rate map at every simulation stage in contact, instead of the base class's central differences of
        ``cut_joint_angles``, whose rounding they carry: test_end_stops)."""
        rows = np.empty((self.n_legs, 6))
        ups_cone_rows(np.asarray(pose.rotation, float), np.asarray(pose.position, float), self._legdata, rows)
        return rows

    def check_limits(self, q: np.ndarray) -> None:
        """As ParallelKinematics.check_limits, one vectorized test before building the message."""
        if (q < self._lo_eps).any() or (q > self._hi_eps).any():
            super().check_limits(q)

    def _solve(self, pose, twist, accel, check_limits, want_jacobian, want_g=False, validated=False):
        """q (and v, a with twist / accel, J, G when asked for) from one compiled pass over the legs
        (hexapod_ups_kernels.ups_motion: Abdellatif eq. 2-3, 29-31, Taghirad's J), the inputs checked as by ``validate``
        unless ``validated``. Returns (q, v, a, J, G), None for what was not asked for; the errors name the leg or
        joint."""
        if not (validated or fast_inputs(pose, twist, accel, 6)):
            pose, twist, accel = super().validate(pose, twist, accel)
            validated = True
        nv, rates = self._nv, twist is not None
        q, v, a = np.empty(nv), np.empty(nv if rates else 0), np.empty(nv if accel is not None else 0)
        J, G, info = np.empty((self.n_legs, 6)), np.zeros((nv if want_g else 0, 6)), np.zeros(4)
        status, leg, out_of_range, cone_leg = ups_motion(
            pose.rotation, pose.position, NO_VECTOR if twist is None else twist, NO_VECTOR if accel is None else accel,
            self._legdata, self._iall, _GIMBAL_EPS, self._cos_cone, check_limits, want_g, not validated,
            q, v, a, J, G, info)
        if status == UPS_INPUT:           # the generic validation names what is wrong (or accepts: then solve)
            return self._solve(*super().validate(pose, twist, accel), check_limits, want_jacobian, want_g, True)
        if status == UPS_GIMBAL:
            self._gimbal_check(info[:1], info[None, 1:], leg)
        if out_of_range:
            super().check_limits(q)
        if cone_leg >= 0:
            raise JointLimitError(f"leg{cone_leg + 1} spherical joint cone angle = "
                                  f"{math.acos(max(-1.0, min(1.0, info[0]))):.6g} rad exceeds "
                                  f"spherical_joint_max_angle = {self.spherical_joint_max_angle:.6g} rad")
        if status == UPS_PITCH:
            raise SingularConfigurationError(f"pitch = {info[0]:.6g} rad: ZYX Euler rates are singular at "
                                             "|pitch| = pi/2")
        if want_jacobian and not self._act_identity:
            J = J[self._act]
        return (q, v if twist is not None else None, a if accel is not None else None, J if want_jacobian else None,
                G if want_g else None)

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        return JointMotion(*self._solve(pose, twist, accel, check_limits, jacobian)[:4])

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, q, v, a and G from one pass over the legs."""
        q, v, a, _, G = self._solve(pose, twist, accel, False, False, want_g=True)
        return JointMotion(q, v, a), G

    def tree_motion(self, pose: Pose, twist):
        """(q, v) from one compiled pass over the legs (ups_motion), the inputs already validated; the errors
        of ``_solve`` where the kernel stops."""
        q, v = np.empty(self._nv), np.empty(self._nv)
        self.tree_motion_into(pose, twist, q, v, False)
        return q, v

    def tree_motion_into(self, pose: Pose, twist, q, v, validate: bool) -> bool:
        """As the base class's, the checks (shapes, motion_ok) and (q, v) in one ups_motion call; J and info go to
        write-only scratch arrays (the kernel holds the GIL, nothing reads them after it: ``_solve`` recomputes on an
        error). Raises TypeError or ValueError (numba's dispatch) or AttributeError for what is not a Pose of float64
        arrays or a float64 twist, when validating: the caller's full validation names it."""
        if validate and not (type(twist) is np.ndarray and twist.shape == (6,)):
            return False          # no twist, or one of another size (ups_motion takes length 0 as none), type
        status = ups_motion(pose.rotation, pose.position, twist, NO_VECTOR, self._legdata, self._iall, _GIMBAL_EPS,
                            self._cos_cone, False, False, validate, q, v, NO_VECTOR, self._leg_rows, _NO_G,
                            self._info)[0]
        if status == UPS_OK:
            return True
        if status == UPS_INPUT:
            return False
        q[:], v[:] = self._solve(pose, twist, None, False, False, validated=True)[:2]    # raises, naming the leg
        return True

    def tree_state(self, pose: Pose, twist, accel=None):
        q, v, a, _, G = self._solve(pose, twist, accel, False, False, want_g=True, validated=True)
        return q, v, a, G

    def actuated(self, pose: Pose) -> np.ndarray:
        return self.actuated_and_jacobian(self.validate(pose)[0])[0]

    def jacobian(self, pose: Pose) -> np.ndarray:
        """Taghirad's J: rows [s_i^T, (b_i x s_i)^T], qdot_a = J (v, omega)."""
        return self.actuated_and_jacobian(self.validate(pose)[0])[1]

    def actuated_and_jacobian(self, pose: Pose):
        """(l, J) from one compiled pass over the legs: the FK Newton step needs both.

        The inner call of the FK iteration: no input checks, the pose must come from ``validate``.
        """
        q, _, _, J, _ = self._solve(pose, None, None, False, True, validated=True)
        return q[self._il[self._act]], J

    def forward(self, q_actuated, guess: Pose, tol: float = 1e-12, max_iter: int = 50, damping: float = 1e-12,
                check_limits: bool = True) -> FKResult:
        """forward.forward_kinematics' damped Gauss-Newton in one compiled call (ups_forward: the same
        steps, tests and errors; forward_kinematics checks q_actuated and the guess, then calls this)."""
        state = self.forward_state(q_actuated, NO_VECTOR, guess, tol, max_iter, damping)
        if state is None:
            raise InvalidInputError("forward kinematics takes float64 arrays: the actuated positions and the guess")
        return finish(self, *state[:4], check_limits)

    def forward_state(self, q_actuated, qd_actuated, guess: Pose, tol: float = 1e-12, max_iter: int = 50,
                      damping: float = 1e-12):
        """The state estimator's platform state in one compiled call (ups_forward): (pose, iterations,
        residual, J: FKResult's fields, joint limits not checked; xdot = J^-1 qdot_a or None (no velocities, or
        redundant actuation: the caller solves), rcond of J (1-norm, exact; 0 with no xdot), the distance to the guess
        |task.difference(pose, guess)| in m and rad), flat: the estimator's trusted warm start builds no FKResult.
        None where the inputs are not float64 arrays of their sizes, or not finite, beyond MAGNITUDE_LIMIT, the guess
        no rotation: the checked path (forward_kinematics) then says what is wrong. ConvergenceError as
        forward_kinematics."""
        m = len(self._act)
        R, p, J, xd, out = np.empty((3, 3)), np.empty(3), np.empty((m, 6)), np.empty(6), np.empty(3)
        try:        # the kernel's signature takes 1-D / 2-D float64 arrays only (TypeError) and checks their sizes
            status, it = ups_forward(q_actuated, qd_actuated, guess.rotation, guess.position, self._legdata,
                                     self._fk_index, _GIMBAL_EPS, tol, max_iter, damping, MAGNITUDE_LIMIT, R, p, J,
                                     xd, out)
        except (TypeError, AttributeError):
            return None
        if status == UPS_FK_INPUT:
            return None
        if status != UPS_FK_OK:
            raise failure(status, it, out[0], tol)
        return Pose(p, R), it, out[0], J, xd if len(qd_actuated) and m == 6 else None, out[1], out[2]

    def forward_arguments(self, tol: float = 1e-12, max_iter: int = 50, damping: float = 1e-12):
        """(legs, index, [gimbal_eps, tol, max_iter, damping, MAGNITUDE_LIMIT]): ups_forward's arguments that do not
        change between calls, as ``forward_state`` passes them (the scalars in one array: control/
        hexapod_ups_period.py calls ups_forward inside the control period's one compiled call)."""
        return self._legdata, self._fk_index, np.array([_GIMBAL_EPS, tol, max_iter, damping, MAGNITUDE_LIMIT])

    def actuated_arguments(self):
        """(legs, iall, the tree index of each actuated joint, its leg (J's row), [gimbal_eps, cos_cone, nv]):
        ups_motion's arguments for ``actuated_and_jacobian`` that do not change between calls (control/
        jourdain_period.py calls it inside the control period's one compiled call)."""
        return (self._legdata, self._iall, self._il[self._act], self._act,
                np.array([_GIMBAL_EPS, self._cos_cone, self._nv], float))

    def jacobian_xq(self, pose: Pose):
        """(J_x, J_q) = (J, I): prismatic legs have no inverse-kinematic singularity (Taghirad)."""
        return self.jacobian(pose), np.eye(self.n_legs)

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        """G: per leg the rows [g^T, (b x g)^T] with g the gradient of alpha, beta, l w.r.t. B_i
        (base coordinates); the platform rows are the task's platform rate matrix (hexapod_ups_kernels.ups_motion)."""
        return self._solve(pose, None, None, False, False, want_g=True)[4]

    def jacobian_dot_twist(self, pose: Pose, twist) -> np.ndarray:
        """Jdot xdot: the struts' accelerations l'' at xddot = 0, one compiled pass (hexapod_ups_kernels.ups_motion)."""
        return self._solve(pose, twist, _ZERO_ACCEL, False, False)[2][self._act_rows]

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """dJ/dt along the twist: rows [u'^T, ((omega x b) x u + b x u')^T], u' = (v_B - l' u) / l."""
        pose, twist, _ = self.validate_motion(pose, twist)
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(pose.rotation, float).tolist()
        px, py, pz = np.asarray(pose.position, float).tolist()
        vx, vy, vz, ox, oy, oz = np.asarray(twist, float).tolist()
        rows = []
        for i, (ax, ay, az, bx, by, bz, *_) in enumerate(self._legdata.tolist()):
            wx = r00 * bx + r01 * by + r02 * bz
            wy = r10 * bx + r11 * by + r12 * bz
            wz = r20 * bx + r21 * by + r22 * bz
            dx, dy, dz = wx + px - ax, wy + py - ay, wz + pz - az
            l = math.sqrt(dx * dx + dy * dy + dz * dz)
            if not l > _GIMBAL_EPS:
                raise UnreachablePoseError(f"leg{i + 1}: strut length {l:.3g} m is below {_GIMBAL_EPS:g} m: "
                                           "the strut direction is undefined")
            ux, uy, uz = dx / l, dy / l, dz / l
            cx, cy, cz = oy * wz - oz * wy, oz * wx - ox * wz, ox * wy - oy * wx      # omega x b
            ex, ey, ez = vx + cx, vy + cy, vz + cz                                   # v_B
            ld = ux * ex + uy * ey + uz * ez
            tx, ty, tz = (ex - ld * ux) / l, (ey - ld * uy) / l, (ez - ld * uz) / l  # u'
            rows.append((tx, ty, tz,
                         cy * uz - cz * uy + wy * tz - wz * ty,
                         cz * ux - cx * uz + wz * tx - wx * tz,
                         cx * uy - cy * ux + wx * ty - wy * tx))
        Jd = np.array(rows)
        return Jd if self._act_identity else Jd[self._act]

    def inverse_batch(self, positions, rotations):
        P, Rs, usable = self.checked_batch(positions, rotations)
        N = P.shape[0]
        b = self._Bp @ Rs.transpose(0, 2, 1)                        # (N, n, 3)
        d = b + (P[:, None, :] - self._A)
        s = np.einsum("nki,kij->nkj", d, self._RS)
        x, y, z = s[..., 0], s[..., 1], s[..., 2]
        r2 = x * x + z * z
        l2 = r2 + y * y
        r = np.sqrt(r2)
        l = np.sqrt(l2)
        q = np.empty((N, self._nv))
        q[:, self._ia] = np.arctan2(x, -z)
        q[:, self._ib] = np.arctan2(y, r)
        q[:, self._il] = l
        q[:, self._ip[:3]] = P
        r00, r10, r20, r21, r22 = Rs[:, 0, 0], Rs[:, 1, 0], Rs[:, 2, 0], Rs[:, 2, 1], Rs[:, 2, 2]
        q[:, self._ip[3]] = np.arctan2(r10, r00)
        q[:, self._ip[4]] = np.arctan2(-r20, np.hypot(r00, r10))
        q[:, self._ip[5]] = np.arctan2(r21, r22)
        with np.errstate(invalid="ignore", divide="ignore"):
            n_base = self._axes @ Rs.transpose(0, 2, 1)                  # (N, n, 3)
            cos_cone = np.einsum("nki,nki->nk", d, n_base) / l
            valid = (usable & np.all(r > _GIMBAL_EPS, axis=1) & np.all(cos_cone >= self._cos_cone, axis=1)
                     & self.within_limits(q) & np.all(np.isfinite(q), axis=1))
        return q, valid

