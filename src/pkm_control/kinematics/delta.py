"""Analytic kinematics of the DELTA robot with revolute arms (Codourey 1998, seed 002).

Notation of Codourey (sec. 4.2-4.4, Fig. 3). The frame {R} is at the centre of
the triangle of the motor axes, z up; arm i works in the vertical plane of the
frame {R_i} = Rz(theta_i) {R} (eq. 24, theta_i = 0, 120, 240 deg; the config
key ``geometry.arm_azimuths``). The plate only translates, so it reduces to its
centre P when the motors are moved in by the plate radius: R = R_A - R_B. In
{R_i} the elbow (moved in by R_B) is

    C_i = [R + L_A cos q_i, 0, -L_A sin q_i]              (eq. 30)

with q_i the actuated arm angle (joint ``leg<i>_arm``, 0 = horizontal outward,
positive = arm down), and the forearm (parallelogram) vector s_i = P - C_i has
the constant length L_B (eq. 28-29).

Inverse geometric model (closed form, no 0/0): with (x, y, z) = P in {R_i},
X = x - R, eq. 29 reads E cos q + F sin q = G with

    E = 2 L_A X,  F = -2 L_A z,  G = X^2 + y^2 + z^2 + L_A^2 - L_B^2,

so q = atan2(F, E) - acos(G / sqrt(E^2 + F^2)) on the elbow-out branch (the
elbow on the outer side of the line from the motor to P); |G| > sqrt(E^2 + F^2)
means unreachable, G = sqrt(E^2 + F^2) the stretched arm (inverse singularity).
That expression lies in (-2 pi, pi]: it is reported in (-pi, pi] (2 pi added below
-pi), so that the arm angle is continuous through the horizontal arm (atan2(F, E)
jumps from -pi to pi where the plate crosses the motors' plane inside the arm, z = 0
with X < 0: the angle read -6.28 there instead of 0) and comparable with the range.

Velocity (eq. 31-36): s_i . (xdot + b_i qdot_i) = 0 with
b_i = R_i [L_A sin q_i, 0, L_A cos q_i] (eq. 34 prints -L_A cos q_i as the last
entry; its derivative eq. 38 and eq. 42 fix the sign used here). In the
interface convention (qdot = J xdot, Taghirad's J_q qdot = J_x xdot):

    J_x = [s_i^T],  J_q = -diag(s_i . b_i),  J = J_q^-1 J_x,

and Codourey's Jacobian (eq. 36, xdot = J_c qdot) is J_c = J_x^-1 J_q = J^-1
(``forward_jacobian``); eq. 37 is ``forward_jacobian_dot``.

Passive joints: the forearm is one bar hung on a universal joint at the elbow,
``leg<i>_elbow1`` about the arm axis (y of {R_i} and of the arm) and
``leg<i>_elbow2`` about the new x; its bar points along -z of its frame, so in
{R_i} the unit forearm vector is u = s / L_B = (-sin a cos b, sin b, -cos a cos b)
with a = q_i + elbow1, b = elbow2. The frame so obtained is the frame of the
parallelogram (x normal to its plane, which contains the elbow axis), which is
the parallelogram's no-spin property. |b| is also the cone angle of the
plate-side ball joints (sockets along the elbow axis), checked against
``limits.plate_ball_joint_cone`` (not a tree joint; ``end_stop_limits`` puts its stop on elbow2).

Branch: s . b = -L_A L_B cos(elbow1) cos(elbow2), so the elbow-out branch is elbow1 in (-90, 90) deg,
ending at the stretched (-90) and the folded (+90) arm, where J_q is singular and the IK of a pose
beyond is unreachable or jumps branch. The elbow1 range [-60, 80] deg (config) keeps the joint-limited
workspace, and with its end stops the simulated robot, 30 and 10 deg off them.

Direct geometric model (``direct_geometric_model``): P is the intersection of
the three spheres of radius L_B about the C_i (Clavel 1989), the solution below
the plane of the elbows.

The IK, rates, accelerations, J and G above run in one compiled call
(delta_kernels.delta_motion), for a single pose and, looped, for ``inverse_batch``.
"""

from __future__ import annotations

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidModelError, JointLimitError, SingularConfigurationError,
                      UnreachablePoseError, check_vector)
from .analysis import check_conditioning
from .base import NO_VECTOR, JointMotion, ParallelKinematics
from .delta_kernels import (DELTA_CONE, DELTA_GEO_SIZE, DELTA_INPUT, DELTA_LIMIT, DELTA_OK, DELTA_ROT_TOL,
                            DELTA_ROTATION, DELTA_SINGULAR, DELTA_SINGULAR_TOL, DELTA_UNREACHABLE, delta_inverse_batch,
                            delta_motion, delta_tree_motion, delta_tree_state)
from .task_space import Pose, TaskSpace

#: no J / no G for delta_kernels.delta_motion (0 x 3: nothing is written to it)
_NONE = np.zeros((0, 3))


class Kinematics(ParallelKinematics):
    """Analytic kinematics of the DELTA (3 revolute arms, parallelogram forearms).

    The IK of every tree joint, its rates, accelerations, J and G are one compiled pass over the arms
    (delta_kernels.delta_motion: the formulas of the module docstring live there); this class builds its inputs,
    turns its status into the project's errors and derives J_x, J_q, Jdot and Codourey's models from it.
    """

    family = "delta"

    def __init__(self, clm):
        cfg = clm.spec
        task = TaskSpace(cfg.task_space)
        if task.kind != "translation":
            raise InvalidModelError(f"the delta family needs task_space: translation, got {task.kind!r}")
        super().__init__(clm, task)
        try:
            geo, lim = cfg.blocks["geometry"], cfg.limits
            self.RA = float(geo["base_radius"])
            self.RB = float(geo["plate_radius"])
            self.LA = float(geo["arm_length"])
            self.LB = float(geo["forearm_length"])
            theta = np.array(geo["arm_azimuths"], dtype=float)
            branch = geo.get("branch", "elbow_out")
            self.cone_max = float(lim["plate_ball_joint_cone"])
        except KeyError as exc:
            raise InvalidModelError(f"robot '{clm.name}' config lacks {exc.args[0]!r} (delta family)") from exc
        if branch != "elbow_out":
            raise InvalidModelError(f"delta: only the elbow_out branch is implemented, config asks {branch!r}")
        if theta.shape != (3,) or min(self.LA, self.LB) <= 0:
            raise InvalidModelError("delta: geometry needs 3 arm_azimuths and positive arm/forearm lengths")
        self.R = self.RA - self.RB
        self.theta = theta
        self._c = np.cos(theta)
        self._s = np.sin(theta)
        ji = clm.joint_index
        try:
            self._ia = np.array([ji[f"leg{i}_arm"] for i in (1, 2, 3)])
            self._ie1 = np.array([ji[f"leg{i}_elbow1"] for i in (1, 2, 3)])
            self._ie2 = np.array([ji[f"leg{i}_elbow2"] for i in (1, 2, 3)])
            self._ip = np.array([ji[n] for n in ("platform_x", "platform_y", "platform_z")])
        except KeyError as exc:
            raise InvalidModelError(f"delta: joint {exc.args[0]!r} is missing from the URDF") from exc
        if list(clm.actuated_idx) != list(self._ia):
            raise InvalidModelError(f"delta: actuated_joints must be leg1_arm, leg2_arm, leg3_arm in that order, "
                                    f"got {clm.actuated_joints}")
        self.nv = clm.model.nv
        if self.nv != 12:
            raise InvalidModelError(f"delta: expected 12 tree joints (3 x arm, elbow1, elbow2 + 3 platform), "
                                    f"got {self.nv}")
        # delta_motion's inputs: the tree indices [arm 1-3, elbow1 1-3, elbow2 1-3, x y z] and the geometry
        self._iall = np.concatenate([self._ia, self._ie1, self._ie2, self._ip]).astype(np.int64)
        arms = self._iall[:9]
        self._geo = np.concatenate([self._c, self._s, [self.R, self.LA, self.LB, self.LA ** 2 - self.LB ** 2,
                                                       self.cone_max + 1e-12],
                                    self.lower[arms] - 1e-12, self.upper[arms] + 1e-12])
        assert self._geo.shape == (DELTA_GEO_SIZE,)
        for a in (self._c, self._s, self.theta, self._ia, self._ie1, self._ie2, self._ip, self.lower, self.upper,
                  self._iall, self._geo):
            a.setflags(write=False)
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ the compiled pass
    @staticmethod
    def vector3(name, v):
        """3 floats (a list) of a checked twist or acceleration: finite, within MAGNITUDE_LIMIT (a fast path
        for float arrays and lists; check_vector raises, naming ``name``, otherwise)."""
        if type(v) is np.ndarray and v.shape == (3,) and v.dtype.char == "d":
            x = v.tolist()
        elif type(v) in (list, tuple) and len(v) == 3 and all(type(e) in (float, int) for e in v):
            x = [float(e) for e in v]
        else:
            return check_vector(name, v, 3, MAGNITUDE_LIMIT).tolist()
        if not abs(x[0]) + abs(x[1]) + abs(x[2]) <= MAGNITUDE_LIMIT:
            check_vector(name, v, 3, MAGNITUDE_LIMIT)             # raises, naming the value
        return x

    def _solve(self, pose, twist, accel, check_limits, want_j, want_g, validated=False):
        """(q, v, a, J, G, st) from one delta_motion call, the inputs checked inside it unless ``validated``
        (where they fail, ``validate`` names what is wrong); v, a, J, G None where not asked for, st the per-arm
        state (q, cos q, sin q, s in {R_i}, s.b). Raises the kernel's status as the project's errors."""
        rates = twist is not None
        q, st = np.empty(12), np.empty((3, 7))
        v = np.empty(12) if rates else NO_VECTOR
        a = np.empty(12) if accel is not None else NO_VECTOR
        J = np.empty((3, 3)) if want_j else _NONE
        G = np.zeros((12, 3)) if want_g else _NONE
        args = (self._geo, self._iall, check_limits, not validated, q, v, a, J, G, st)
        try:
            status, leg = delta_motion(pose.rotation, pose.position, twist if rates else NO_VECTOR,
                                       NO_VECTOR if accel is None else accel, *args)
        except (TypeError, ValueError, AttributeError):
            if validated:
                raise
            # not float64 arrays / not a Pose: numba's dispatch (TypeError, ValueError), no position (AttributeError)
            status, leg = DELTA_INPUT, -1
        if status == DELTA_INPUT:
            return self._solve(*self.validate(pose, twist, accel), check_limits, want_j, want_g, True)
        if status != DELTA_OK:
            self._raise(status, leg, q, st)
        return q, v if rates else None, a if accel is not None else None, J if want_j else None, \
            G if want_g else None, st

    def _raise(self, status, i, q, st):
        """The project's error of a delta_kernels.delta_motion status (module docstring)."""
        if status == DELTA_ROTATION:
            raise UnreachablePoseError(f"the DELTA plate only translates: plate rotation |R - I| = {st[0, 0]:.3g} "
                                       f"exceeds {DELTA_ROT_TOL:g}")
        if status == DELTA_UNREACHABLE:
            G, r = st[i, 0], st[i, 1]
            ratio = abs(G) / r if r > 0 else float("inf")
            what = "inside the folded arm" if G < 0 else "beyond the stretched arm"
            raise UnreachablePoseError(
                f"leg{i + 1}: the plate point is out of reach of the forearm ({what}): reach ratio "
                f"|G|/sqrt(E^2+F^2) = {ratio:.6g} > 1 (arm L_A = {self.LA:g} m, forearm L_B = {self.LB:g} m)")
        if status == DELTA_LIMIT:
            self.check_limits(q)                 # raises, naming the joint
        if status == DELTA_CONE:
            raise JointLimitError(
                f"leg{i + 1}: plate ball joint cone angle = {abs(q[self._ie2[i]]):.6g} rad exceeds its limit "
                f"{self.cone_max:.6g} rad (limits.plate_ball_joint_cone)")
        if status == DELTA_SINGULAR:
            raise SingularConfigurationError(
                f"leg{i + 1}: arm and forearm are aligned (inverse singularity): s.b = {st[i, 6]:.3g} "
                f"(limit {DELTA_SINGULAR_TOL * self.LA * self.LB:.3g})")
        raise AssertionError(f"delta_kernels.delta_motion status {status}")

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        """All joints (and rates, accelerations) of a plate position; see the module docstring.

        Inputs are checked as ``validate`` does (inside the compiled pass for float64 arrays, ``validate``
        itself otherwise): InvalidInputError for NaN or wrong sizes.
        """
        return JointMotion(*self._solve(pose, twist, accel, check_limits, jacobian, False)[:4])

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, q, v, a and G from one compiled pass over the arms."""
        q, v, a, _, G, _ = self._solve(pose, twist, accel, False, False, True)
        return JointMotion(q, v, a), G

    def tree_state(self, pose: Pose, twist, accel=None):
        """As the base class's, in one delta_kernels.delta_tree_state call (``_solve`` recomputes on an error, to name
        it; and without a twist)."""
        if twist is None:
            q, v, a, _, G, _ = self._solve(pose, twist, accel, False, False, True, validated=True)
            return q, v, a, G
        q, v, a, G = np.empty(12), np.empty(12), NO_VECTOR if accel is None else np.empty(12), np.zeros((12, 3))
        if delta_tree_state(pose.rotation, pose.position, twist, NO_VECTOR if accel is None else accel, self._geo,
                            self._iall, q, v, a, G) != DELTA_OK:
            self._solve(pose, twist, accel, False, False, True, validated=True)        # raises, naming the arm
        return q, v, a if accel is not None else None, G

    def tree_motion(self, pose: Pose, twist):
        q, v = self._solve(pose, twist, None, False, False, False, validated=True)[:2]
        return q, v

    def tree_motion_into(self, pose: Pose, twist, q, v, validate: bool) -> bool:
        """As the base class's, the checks (shapes, motion_ok) and (q, v) in one compiled call
        (delta_kernels.delta_tree_motion; ``_solve`` recomputes on an error, to name it). Raises TypeError or ValueError
        (numba's dispatch) or AttributeError for what is not a Pose of float64 arrays or a float64 twist, when
        validating: the caller's full validation names it."""
        status = delta_tree_motion(pose.rotation, pose.position, twist, self._geo, self._iall, validate, q, v)
        if status == DELTA_OK:
            return True
        if status == DELTA_INPUT:
            return False
        q[:], v[:] = self.tree_motion(pose, twist)                # raises, naming the arm
        return True

    def actuated(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False, False, False)[0][self._ia]

    def jacobian(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False, True, False)[3]

    def actuated_and_jacobian(self, pose: Pose):
        q, _, _, J, _, _ = self._solve(pose, None, None, False, True, False)
        return q[self._ia], J

    def end_stop_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """The joint ranges, with elbow2 narrowed to the plate ball-joint cone: |elbow2| is that cone
        angle (module docstring), so the ball joint's stop acts on elbow2."""
        lower, upper = super().end_stop_limits()
        lower[self._ie2] = np.maximum(lower[self._ie2], -self.cone_max)
        upper[self._ie2] = np.minimum(upper[self._ie2], self.cone_max)
        return lower, upper

    def _forearms(self, st):
        """[s_i^T] in the base frame (J_x of the module docstring) from the per-arm state."""
        c, s, sx, sy = self._c, self._s, st[:, 3], st[:, 4]
        return np.column_stack([c * sx - s * sy, s * sx + c * sy, st[:, 5]])

    def jacobian_xq(self, pose: Pose):
        st = self._solve(pose, None, None, False, False, False)[5]
        return self._forearms(st), np.diag(-st[:, 6])

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False, False, True)[4]

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """dJ/dt along the twist: J_i = -s_i^T / d_i, d = s.b, so Jdot_i = -(sdot_i^T + ddot_i J_i) / d_i with
        sdot = xdot + b qdot (eq. 33) and ddot = sdot.b + s.bdot (bdot of eq. 38)."""
        pose, twist, _ = self.validate_motion(pose, twist)
        _, v, _, J, _, st = self._solve(pose, twist, None, False, True, False, validated=True)
        qd, LA = v[self._ia], self.LA
        cq, sq, d = st[:, 1], st[:, 2], st[:, 6]
        b = np.column_stack([self._c * LA * sq, self._s * LA * sq, LA * cq])       # b_i in the base frame
        sd = twist[None, :] + b * qd[:, None]
        dd = np.einsum("ij,ij->i", sd, b) + LA * (st[:, 3] * cq - st[:, 5] * sq) * qd
        return -(sd + dd[:, None] * J) / d[:, None]

    def inverse_batch(self, positions, rotations):
        """Vectorized IK of N plate poses: (q (N, 12), valid (N,)), delta_kernels.delta_motion over the poses.

        valid = reachable, plate not rotated, every tree-joint limit and the plate
        ball-joint cone. Rows that are geometrically unreachable (or not finite)
        are NaN; rows that only break a limit keep their joint values.
        """
        P, Rm, usable = self.checked_batch(positions, rotations)
        q = np.empty((len(P), self.nv))
        valid = np.empty(len(P), dtype=bool)
        delta_inverse_batch(np.ascontiguousarray(P), np.ascontiguousarray(Rm), np.ascontiguousarray(usable),
                            self._geo, self._iall, q, valid)
        return q, valid

    # ------------------------------------------------------------------ Codourey's models
    def direct_geometric_model(self, theta) -> np.ndarray:
        """Plate position from the three arm angles (closed form, three-sphere intersection).

        theta: the arm angles q_1, q_2, q_3 of Codourey's eq. 30 (joints leg<i>_arm).
        The plate is the intersection of the spheres of radius L_B about the
        elbows C_i moved in by R_B, on the side below the plane of the elbows.
        """
        q = check_vector("arm angles theta (leg1_arm leg2_arm leg3_arm)", theta, 3, MAGNITUDE_LIMIT)
        e = self.R + self.LA * np.cos(q)
        cx, cy, cz = self._c * e, self._s * e, -self.LA * np.sin(q)
        d2 = (cx[1] - cx[0], cy[1] - cy[0], cz[1] - cz[0])
        d3 = (cx[2] - cx[0], cy[2] - cy[0], cz[2] - cz[0])
        n = (d2[1] * d3[2] - d2[2] * d3[1], d2[2] * d3[0] - d2[0] * d3[2], d2[0] * d3[1] - d2[1] * d3[0])
        nn = n[0] * n[0] + n[1] * n[1] + n[2] * n[2]
        if nn <= (1e-12 * self.LA ** 2) ** 2:
            raise SingularConfigurationError(f"direct geometric model: the three elbows are collinear "
                                             f"(|n|^2 = {nn:.3g})")
        a2 = d2[0] ** 2 + d2[1] ** 2 + d2[2] ** 2
        a3 = d3[0] ** 2 + d3[1] ** 2 + d3[2] ** 2
        # w0 = (|d2|^2 (d3 x n) + |d3|^2 (n x d2)) / (2 |n|^2): the point of the elbow plane equidistant from the elbows
        w = [(a2 * (d3[(j + 1) % 3] * n[(j + 2) % 3] - d3[(j + 2) % 3] * n[(j + 1) % 3])
              + a3 * (n[(j + 1) % 3] * d2[(j + 2) % 3] - n[(j + 2) % 3] * d2[(j + 1) % 3])) / (2.0 * nn)
             for j in range(3)]
        h2 = (self.LB ** 2 - (w[0] ** 2 + w[1] ** 2 + w[2] ** 2)) / nn
        if h2 < 0.0:
            raise UnreachablePoseError(f"direct geometric model: no assembly for theta = {np.round(q, 6)}: "
                                       f"the elbows' circumradius {np.sqrt(w[0]**2 + w[1]**2 + w[2]**2):.6g} m "
                                       f"exceeds the forearm length L_B = {self.LB:g} m")
        t = -np.copysign(np.sqrt(h2), n[2])
        return np.array([cx[0] + w[0] + t * n[0], cy[0] + w[1] + t * n[1], cz[0] + w[2] + t * n[2]])

    def forward_jacobian(self, pose: Pose) -> np.ndarray:
        """Codourey's Jacobian, eq. 36: xdot = J_c qdot, J_c = -[s_i^T]^-1 diag(s_i . b_i)."""
        Jx, Jq = self.jacobian_xq(pose)
        check_conditioning(Jx, "[s_i^T] (forward singularity: the forearms are coplanar)")
        return np.linalg.solve(Jx, Jq)

    def forward_jacobian_dot(self, pose: Pose, qdot) -> np.ndarray:
        """Codourey's eq. 37: xddot = J_c qddot + Jdot_c qdot with
        Jdot_c = -[s_i^T]^-1 ([sdot_i^T] J_c + diag(sdot_i . b_i + s_i . bdot_i)),
        sdot_i = J_c qdot + b_i qdot_i (eq. 33), bdot_i from eq. 38."""
        qdot = check_vector("arm rates qdot", qdot, 3, MAGNITUDE_LIMIT)
        st = self._solve(pose, None, None, False, False, False)[5]
        cq, sq, d, c, s, LA = st[:, 1], st[:, 2], st[:, 6], self._c, self._s, self.LA
        Sx = self._forearms(st)
        check_conditioning(Sx, "[s_i^T] (forward singularity: the forearms are coplanar)")
        Jc = np.linalg.solve(Sx, np.diag(-d))
        xd = Jc @ qdot
        b = np.column_stack([c * LA * sq, s * LA * sq, LA * cq])
        bd = np.column_stack([c * LA * cq, s * LA * cq, -LA * sq]) * qdot[:, None]
        sd = xd[None, :] + b * qdot[:, None]
        diag = np.einsum("ij,ij->i", sd, b) + np.einsum("ij,ij->i", Sx, bd)
        return -np.linalg.solve(Sx, sd @ Jc + np.diag(diag))
