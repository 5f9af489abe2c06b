"""Analytic kinematics of Lopes' 6-PUS manipulator (seed 001), family ``hexapod_pus``.

Six vertical linear actuators fixed in the base (actuated prismatic joints,
value l_i = position of the actuator top along z_B), a universal joint on each
actuator, a fixed-length link L and a spherical joint at the platform (the cut
joint of the spanning tree).

Geometry (base frame {B}, platform frame {P}; config ``geometry:``)::

    b_i      base point of actuator i (base plane z = 0), actuator top s_i = b_i + l_i z_B
    p_i      spherical-joint centre in {P};  r_i = R p_i;  P_i = p + r_i
    d_i      = P_i - b_i
    a_i      = P_i - s_i = d_i - l_i z_B      (Lopes' a_i, |a_i| = L)

IK (closed form, per leg): rho_i^2 = d_ix^2 + d_iy^2 <= L^2 and, on the branch with
the links going UP from the actuators to the platform (config ``link_branch: up``;
the platform at Lopes' P1, z = 2 m, lies above the actuators),

    h_i = a_iz = sqrt(L^2 - rho_i^2),      l_i = d_iz - h_i.

Universal joint: u1 about the actuator axis z (zero = horizontal direction from
b_i to P_i at the home pose, angle offset g0_i), u2 about the horizontal -y axis
of the cross (u2 = elevation of the link above the horizontal). The link frame
Rz(g0 + u1) Ry(-u2) is then exactly Lopes' {L_i} (eqs. 49-52: x_L = a_i / L,
y_L horizontal, z_L . z_B >= 0):

    u1 = atan2(a_y, a_x) - g0 (wrapped),       u2 = atan2(h, rho)  (in (0, pi/2)).

The tree is gimbal-locked when a link is vertical (rho = 0); the u2 range keeps
away from it. Because y_L stays horizontal, the link does turn about its own axis
(at the rate u1' a_iz / L): Lopes' eq. (55) gives only the part of the link's
angular velocity normal to the link. That is all the dynamics needs, since
I_Lxx = 0 (Table 2); the tests check both statements against pinocchio.

Velocity (Taghirad J_x, J_q; Lopes' J_C of eq. 6): a_i . a_i = L^2 gives
a_i . (v + omega x r_i - l_i' z_B) = 0, i.e.

    h_i l_i' = a_i . v + (r_i x a_i) . omega,   J_q = diag(h_i), J_x rows [a_i^T, (r_i x a_i)^T].

So J_q is singular (inverse singularity: the actuator rate blows up) when a link
becomes horizontal, h_i = 0, i.e. rho_i = L: the boundary of the reachable set.

Implementation: one pose (``inverse``, ``actuated``, ``jacobian``, ``joint_jacobian``,
and the dynamics engine's state: ``tree_state``, ``tree_motion_into``) comes from one
compiled pass over the legs, hexapod_pus_kernels.pus_motion: positions, rates, accelerations, J and G,
the inputs and limits checked inside, the errors returned as a status that ``_solve`` turns
into the project's exceptions (on six legs numpy's per-call overhead costs more than a
leg's arithmetic: issue 21 par. 7), and the spherical joints' cone angles (``cut_joint_angles``,
the simulated end stops' every stage) from hexapod_pus_kernels.pus_cone_angles, the same leg geometry and
cone, their rate map (``cut_joint_rows``, the cone stops' force in contact) in closed form from
pus_cone_rows; ``inverse_batch``, ``jacobian_dot`` and ``jacobian_xq`` are vectorized numpy over legs
(and samples). The tests hold both to each other, to finite differences and to the constraint
model.

Lopes' Euler angles (eqs. 3-4): [x y z psi theta phi] with psi about z, theta about
the new y', phi about the new x'': R = Rz(psi) Ry(theta) Rx(phi), the same matrix as
our ZYX rpy with yaw = psi, pitch = theta, roll = phi (only the order of the
coordinates differs: ours is [x y z roll pitch yaw]). J_A (eq. 9) maps
[psi' theta' phi'] to omega, T = blockdiag(I, J_A) (eq. 23) and the Euler-angle
Jacobian of eq. (5) is J_E = J_C T (used so in eqs. 31-32).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidModelError, JointLimitError, SingularConfigurationError, UnreachablePoseError
from .base import NO_VECTOR, JointMotion, ParallelKinematics, fast_inputs
from .hexapod_pus_kernels import (PUS_HORIZONTAL, PUS_INPUT, PUS_OK, PUS_PITCH, PUS_REACH, PUS_REACH_TOL, PUS_VERTICAL,
                                  pus_cone_angles, pus_cone_rows, pus_motion, pus_tree_motion, pus_tree_state)
from .task_space import Pose, TaskSpace

#: no J / no G for hexapod_pus_kernels.pus_motion
_NO_J = np.zeros((0, 6))


class Kinematics(ParallelKinematics):
    """Lopes' 6-PUS manipulator: vertical actuators, U joint, fixed-length link, S joint."""

    family = "hexapod_pus"

    def __init__(self, clm):
        cfg = clm.spec
        task = TaskSpace(cfg.task_space)
        if task.kind != "spatial":
            raise InvalidModelError(f"hexapod_pus needs task_space: spatial, got {task.kind!r}")
        super().__init__(clm, task)
        try:
            geo = cfg.blocks["geometry"]
            rb, rp, L = float(geo["base_radius"]), float(geo["platform_radius"]), float(geo["link_length"])
            gb = np.radians(np.asarray(geo["base_angles_deg"], float))
            gp = np.radians(np.asarray(geo["platform_angles_deg"], float))
            branch = geo.get("link_branch", "up")
            home = np.asarray(cfg.home, float)
            cone = float(cfg.limits["spherical_cone"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidModelError(f"robot '{clm.name}': incomplete hexapod_pus config ({exc!r})") from exc
        n = 6
        if gb.shape != (n,) or gp.shape != (n,):
            raise InvalidModelError("hexapod_pus needs six base_angles_deg and six platform_angles_deg")
        if branch != "up":
            raise InvalidModelError(f"hexapod_pus implements link_branch 'up' only, got {branch!r}")
        self.n_legs = n
        self.L = L
        self.L2 = L * L
        self._inv_L2 = 1.0 / (L * L)
        self.base_points = np.array([rb * np.cos(gb), rb * np.sin(gb), np.zeros(n)])      # (3, 6)
        self.platform_points = np.array([rp * np.cos(gp), rp * np.sin(gp), np.zeros(n)])  # (3, 6) in {P}
        # u1 zero direction: horizontal direction from b_i to P_i at home (same formula as the xacro)
        g0 = np.arctan2(home[1] + rp * np.sin(gp + home[5]) - self.base_points[1],
                        home[0] + rp * np.cos(gp + home[5]) - self.base_points[0])
        self.u1_offset = g0
        self._c0, self._s0 = np.cos(g0), np.sin(g0)
        self.cone_limit = cone
        self._cos_cone = math.cos(cone)
        ji = clm.joint_index
        try:
            self.idx_prismatic = np.array([ji[f"leg{i}_prismatic"] for i in range(1, n + 1)])
            self.idx_u1 = np.array([ji[f"leg{i}_u1"] for i in range(1, n + 1)])
            self.idx_u2 = np.array([ji[f"leg{i}_u2"] for i in range(1, n + 1)])
            self.idx_platform = np.array([ji[f"platform_{c}"] for c in ("x", "y", "z", "yaw", "pitch", "roll")])
        except KeyError as exc:
            raise InvalidModelError(f"robot '{clm.name}' has no joint {exc.args[0]} (hexapod_pus naming)") from exc
        if list(clm.actuated_idx) != list(self.idx_prismatic):
            raise InvalidModelError("hexapod_pus: actuated_joints must be leg1_prismatic ... leg6_prismatic in order")
        self.nv = clm.model.nv
        self._lo_ip, self._hi_ip = self.lower[self.idx_prismatic], self.upper[self.idx_prismatic]
        self._lo_u1, self._hi_u1 = self.lower[self.idx_u1], self.upper[self.idx_u1]
        self._lo_u2, self._hi_u2 = self.lower[self.idx_u2], self.upper[self.idx_u2]
        # pus_motion's constants: per leg b_x, b_y, p_x, p_y, g0, then the lower and upper limits of l, u1, u2
        # (1e-12 outside, as check_limits); the tree indices of l, u1, u2 (leg order), then of the platform joints
        tol = 1e-12
        self._legdata = np.column_stack([self.base_points[0], self.base_points[1], self.platform_points[0],
                                         self.platform_points[1], g0, self._lo_ip - tol, self._hi_ip + tol,
                                         self._lo_u1 - tol, self._hi_u1 + tol, self._lo_u2 - tol, self._hi_u2 + tol])
        self._iall = np.concatenate([self.idx_prismatic, self.idx_u1, self.idx_u2, self.idx_platform]).astype(np.int64)
        self._info = np.zeros(4)           # actuated_and_jacobian's scratch
        for arr in (self.base_points, self.platform_points, self.u1_offset, self._c0, self._s0, self._legdata,
                    self._iall, self.lower, self.upper):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ core geometry
    def _legs(self, p, R):
        """r (3,6), d (3,6), rho2 (6,), h (6,) for one pose; raises UnreachablePoseError."""
        r = R @ self.platform_points
        d = r - self.base_points
        d += p[:, None]
        dx, dy = d[0], d[1]
        rho2 = dx * dx + dy * dy
        s = self.L2 - rho2
        if s.min() < 0.0:
            i = int(np.argmin(s))
            if s[i] < -PUS_REACH_TOL * self.L2:
                raise self._unreachable(i, rho2[i])
            s = np.maximum(s, 0.0)
        return r, d, rho2, np.sqrt(s)

    def _unreachable(self, leg, rho2):
        return UnreachablePoseError(
            f"leg {leg + 1}: horizontal distance rho = {math.sqrt(rho2):.6g} m from the actuator axis to "
            f"the spherical joint exceeds the link length L = {self.L:.6g} m (the link cannot reach)")

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The spherical joints' cones: leg<i>_spherical, angle <= limits.spherical_cone."""
        n = self.base_points.shape[1]
        return tuple(f"leg{i + 1}_spherical" for i in range(n)), np.full(n, -np.inf), np.full(n, self.cone_limit)

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        """Cone angle of each spherical joint: between the link a_i = (d_ix, d_iy, h_i) and the platform
        normal R e_z (hexapod_pus_kernels.pus_cone_angles, the cone of pus_motion's check)."""
        R, p = np.asarray(pose.rotation, float), np.asarray(pose.position, float)
        out = np.empty(self.n_legs)
        if pus_cone_angles(R, p, self._legdata, self.L, out) >= 0:
            self._legs(p, R)              # raises, naming the leg
        return out

    def cut_joint_rows(self, pose: Pose) -> np.ndarray:
        """d(cone angle rates) / d(twist) of the spherical joints, in closed form (pus_cone_rows: the cut-joint
        end stops' rate map at every simulation stage in contact; the base class's central differences of
        ``cut_joint_angles`` cost ~40 us and agree to their rounding, test_end_stops)."""
        R, p = np.asarray(pose.rotation, float), np.asarray(pose.position, float)
        rows = np.empty((self.n_legs, 6))
        leg = pus_cone_rows(R, p, self._legdata, self.L, rows)
        if leg >= 0:
            r, d, rho2, h = self._legs(p, R)     # raises, naming the leg, where it cannot reach
            raise SingularConfigurationError(f"leg {leg + 1}: link horizontal (a_z = {h[leg]:.3g} m): the actuator "
                                             "rate is unbounded, so are the cone angle rates")
        return rows

    @staticmethod
    def _rpy(R):
        """(roll, pitch, yaw) of R = Rz(yaw) Ry(pitch) Rx(roll), |pitch| < pi/2."""
        r00, r10, r20 = float(R[0, 0]), float(R[1, 0]), float(R[2, 0])
        return (math.atan2(float(R[2, 1]), float(R[2, 2])), math.atan2(-r20, math.sqrt(r00 * r00 + r10 * r10)),
                math.atan2(r10, r00))

    def _jacobian_from(self, r, d, h):
        """J rows [a_i^T, (r_i x a_i)^T] / a_iz with a_i = (d_ix, d_iy, h_i)."""
        dx, dy = d[0], d[1]
        r0, r1, r2 = r
        Jt = np.array((dx, dy, h, r1 * h - r2 * dy, r2 * dx - r0 * h, r0 * dy - r1 * dx))
        Jt /= h
        return Jt.T

    # ------------------------------------------------------------------ family interface
    def _solve(self, pose, twist, accel, check_limits, want_jacobian, want_g=False, validated=False):
        """q (and v, a with twist / accel, J, G when asked for) from one compiled pass over the legs
        (pus_motion), the inputs checked as by ``validate`` unless ``validated``. Returns (q, v, a, J, G),
        None for what was not asked for; the errors name the leg or joint."""
        if not (validated or fast_inputs(pose, twist, accel, 6)):
            pose, twist, accel = self.validate(pose, twist, accel)
            validated = True
        nv, rates = self.nv, twist is not None
        q, v, a = np.empty(nv), np.empty(nv if rates else 0), np.empty(nv if accel is not None else 0)
        J = np.empty((self.n_legs, 6)) if want_jacobian else _NO_J
        G, info = (np.zeros((nv, 6)) if want_g else _NO_J), np.zeros(4)
        status, leg, out_of_range, cone_leg = pus_motion(
            pose.rotation, pose.position, NO_VECTOR if twist is None else twist, NO_VECTOR if accel is None else accel,
            self._legdata, self._iall, self.L, self._cos_cone, check_limits, not validated, q, v, a, J, G, info)
        if status == PUS_INPUT:           # the generic validation names what is wrong (or accepts: then solve)
            return self._solve(*self.validate(pose, twist, accel), check_limits, want_jacobian, want_g, True)
        if status == PUS_REACH:
            raise self._unreachable(leg, info[0])
        if status == PUS_HORIZONTAL:
            raise SingularConfigurationError(f"leg {leg + 1}: link horizontal (a_z = {info[0]:.3g} m, limit > 0): "
                                             "J_q is singular, the actuator rate is unbounded")
        if status == PUS_VERTICAL:
            raise SingularConfigurationError(f"leg {leg + 1}: link vertical (rho = {math.sqrt(info[0]):.3g} m): the "
                                             "universal joint is gimbal-locked, its rates are undefined")
        if out_of_range:
            self.check_limits(q)
        if cone_leg >= 0:
            raise JointLimitError(f"spherical joint of leg {cone_leg + 1}: cone angle between link and platform normal "
                                  f"= {math.degrees(math.acos(max(-1.0, min(1.0, info[1])))):.6g} deg exceeds the "
                                  f"limit {math.degrees(self.cone_limit):.6g} deg (config limits.spherical_cone)")
        if status == PUS_PITCH:
            raise SingularConfigurationError(f"pitch = {info[0]:.6g} rad: ZYX Euler rates are singular at "
                                             "|pitch| = pi/2")
        return q, v if rates else None, a if accel is not None else None, J if want_jacobian else None, \
            G if want_g else None

    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        """All tree joints (model q order), optionally their rates / accelerations and J."""
        return JointMotion(*self._solve(pose, twist, accel, check_limits, jacobian)[:4])

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, q, v, a and G from one pass over the legs."""
        q, v, a, _, G = self._solve(pose, twist, accel, False, False, want_g=True)
        return JointMotion(q, v, a), G

    def tree_state(self, pose: Pose, twist, accel=None):
        """(q, v, a, G) from one compiled call with few arguments (pus_tree_state); ``_solve`` names an
        error."""
        nv, rates = self.nv, twist is not None
        q, v, a, G = np.empty(nv), np.empty(nv if rates else 0), np.empty(nv if accel is not None else 0), \
            np.zeros((nv, 6))
        status = pus_tree_state(pose.rotation, pose.position, twist if rates else NO_VECTOR,
                                NO_VECTOR if accel is None else accel, self._legdata, self._iall, self.L, q, v, a, G)
        if status != PUS_OK:
            q, v, a, _, G = self._solve(pose, twist, accel, False, False, want_g=True, validated=True)   # raises
        return q, v if rates else None, a if accel is not None else None, G

    def tree_motion(self, pose: Pose, twist):
        """(q, v) from one compiled pass over the legs, the inputs already validated."""
        q, v = np.empty(self.nv), np.empty(self.nv)
        self.tree_motion_into(pose, twist, q, v, False)
        return q, v

    def tree_motion_into(self, pose: Pose, twist, q, v, validate: bool) -> bool:
        """As the base class's, the checks (shapes, a twist of 6, motion_ok) and (q, v) in one compiled call
        (pus_tree_motion; ``_solve`` recomputes on an error to name it). Raises TypeError or ValueError
        (numba's dispatch) or AttributeError for what is not a Pose of float64 arrays or a float64 twist, when
        validating: the caller's full validation names it."""
        if validate and twist is None:
            return False
        status = pus_tree_motion(pose.rotation, pose.position, twist, self._legdata, self._iall, self.L, validate, q,
                                 v)
        if status == PUS_OK:
            return True
        if status == PUS_INPUT:
            return False
        q[:], v[:] = self._solve(pose, twist, None, False, False, validated=True)[:2]    # raises, naming the leg
        return True

    def actuated(self, pose: Pose) -> np.ndarray:
        return self.actuated_and_jacobian(self.validate(pose)[0])[0]

    def jacobian(self, pose: Pose) -> np.ndarray:
        """J = J_C (Lopes eq. 6): qdot_a = J [v; omega]."""
        return self.actuated_and_jacobian(self.validate(pose)[0])[1]

    def actuated_and_jacobian(self, pose: Pose):
        """(q_a, J_C) from one compiled pass over the legs: the FK Newton step needs both.

        The inner call of the FK iteration: no input checks, the pose must come from ``validate``; the kernel called
        directly (info to a write-only scratch array: the kernel holds the GIL), ``_solve`` raising on an error.
        """
        q, J = np.empty(self.nv), np.empty((self.n_legs, 6))
        if pus_motion(pose.rotation, pose.position, NO_VECTOR, NO_VECTOR, self._legdata, self._iall, self.L,
                      self._cos_cone, False, False, q, NO_VECTOR, NO_VECTOR, J, _NO_J, self._info)[0] != PUS_OK:
            self._solve(pose, None, None, False, True, validated=True)
        return q[self.idx_prismatic], J

    def jacobian_xq(self, pose: Pose):
        """(J_x, J_q): J_q qdot_a = J_x [v; omega]; J_q = diag(a_iz) is singular when a link is horizontal."""
        pose = self.validate(pose)[0]
        r, d, rho2, h = self._legs(pose.position, pose.rotation)
        dx, dy = d[0], d[1]
        Jx = np.array([dx, dy, h, r[1] * h - r[2] * dy, r[2] * dx - r[0] * h, r[0] * dy - r[1] * dx]).T
        return Jx, np.diag(h)

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        """G (nv x 6): qdot = G [v; omega] for every tree joint (platform rows: Euler rates), pus_motion."""
        return self._solve(pose, None, None, False, False, want_g=True)[4]

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """Jdot with qddot_a = J [p''; omega'] + Jdot [v; omega]."""
        pose, twist, _ = self.validate_motion(pose, twist)
        r, d, rho2, h = self._legs(pose.position, pose.rotation)
        if h.min() <= 0.0:
            raise SingularConfigurationError(f"leg {int(np.argmin(h)) + 1}: link horizontal (a_z = 0 m): "
                                             "J_q is singular, Jdot is unbounded")
        J = self._jacobian_from(r, d, h)
        v, w = twist[:3], twist[3:]
        w0, w1, w2 = w
        rd0 = w1 * r[2] - w2 * r[1]
        rd1 = w2 * r[0] - w0 * r[2]
        rd2 = w0 * r[1] - w1 * r[0]
        dx, dy = d[0], d[1]
        ad0, ad1, dd2 = rd0 + v[0], rd1 + v[1], rd2 + v[2]
        ld = J @ twist
        ad2 = dd2 - ld
        # d/dt [a, r x a] / h
        a = (dx, dy, h)
        crx = rd1 * a[2] - rd2 * a[1] + r[1] * ad2 - r[2] * ad1
        cry = rd2 * a[0] - rd0 * a[2] + r[2] * ad0 - r[0] * ad2
        crz = rd0 * a[1] - rd1 * a[0] + r[0] * ad1 - r[1] * ad0
        inv_h = 1.0 / h
        return (np.array([ad0, ad1, ad2, crx, cry, crz]) * inv_h).T - J * (ad2 * inv_h)[:, None]

    def inverse_batch(self, positions, rotations):
        """Vectorized IK: (q (N, nv), valid (N,)); valid = reachable and within every limit."""
        P, R, usable = self.checked_batch(positions, rotations)
        N = P.shape[0]
        r = R @ self.platform_points                    # (N, 3, 6)
        d = r - self.base_points
        d += P[:, :, None]
        dx, dy, dz = d[:, 0], d[:, 1], d[:, 2]
        rho2 = dx * dx + dy * dy
        s = self.L2 - rho2
        ok = np.all(s >= 0.0, axis=1)
        h = np.sqrt(np.maximum(s, 0.0))
        l = dz - h
        c0, s0 = self._c0, self._s0
        u1 = np.arctan2(c0 * dy - s0 * dx, c0 * dx + s0 * dy)
        u2 = np.arctan2(h, np.sqrt(rho2))
        cone = (R[:, 0, 2, None] * dx + R[:, 1, 2, None] * dy + R[:, 2, 2, None] * h) * (1.0 / self.L)
        ok &= np.all(cone >= self._cos_cone, axis=1)
        q = np.empty((N, self.nv))
        q[:, self.idx_prismatic] = l
        q[:, self.idx_u1] = u1
        q[:, self.idx_u2] = u2
        ip = self.idx_platform
        q[:, ip[:3]] = P
        q[:, ip[3]] = np.arctan2(R[:, 1, 0], R[:, 0, 0])
        q[:, ip[4]] = np.arctan2(-R[:, 2, 0], np.sqrt(R[:, 0, 0] ** 2 + R[:, 1, 0] ** 2))
        q[:, ip[5]] = np.arctan2(R[:, 2, 1], R[:, 2, 2])
        ok &= np.all((l >= self._lo_ip - 1e-12) & (l <= self._hi_ip + 1e-12)
                     & (u1 >= self._lo_u1 - 1e-12) & (u1 <= self._hi_u1 + 1e-12)
                     & (u2 >= self._lo_u2 - 1e-12) & (u2 <= self._hi_u2 + 1e-12), axis=1)
        return q, ok & usable

    # ------------------------------------------------------------------ Lopes' Euler-angle forms
    @staticmethod
    def lopes_coordinates(pose: Pose) -> np.ndarray:
        """Lopes' generalized position [x y z psi theta phi] (eq. 3) of a pose."""
        R = pose.rotation
        roll, pitch, yaw = Kinematics._rpy(R)
        p = pose.position
        return np.array([p[0], p[1], p[2], yaw, pitch, roll])

    @staticmethod
    def pose_from_lopes(x) -> Pose:
        """Pose from Lopes' [x y z psi theta phi]: R = Rz(psi) Ry(theta) Rx(phi) (eq. 4)."""
        x = np.asarray(x, float)
        cps, sps = math.cos(x[3]), math.sin(x[3])
        cth, sth = math.cos(x[4]), math.sin(x[4])
        cph, sph = math.cos(x[5]), math.sin(x[5])
        R = np.array([[cps * cth, cps * sth * sph - sps * cph, cps * sth * cph + sps * sph],
                      [sps * cth, sps * sth * sph + cps * cph, sps * sth * cph - cps * sph],
                      [-sth, cth * sph, cth * cph]])
        return Pose(x[:3].copy(), R)

    def euler_rate_map(self, pose: Pose) -> np.ndarray:
        """Lopes' J_A (eq. 9): omega = J_A [psi' theta' phi']."""
        pose = self.validate(pose)[0]
        roll, pitch, yaw = self._rpy(pose.rotation)
        sps, cps, sth, cth = math.sin(yaw), math.cos(yaw), math.sin(pitch), math.cos(pitch)
        return np.array([[0.0, -sps, cth * cps], [0.0, cps, cth * sps], [1.0, 0.0, -sth]])

    def jacobian_euler(self, pose: Pose) -> np.ndarray:
        """Lopes' J_E (eq. 5): l' = J_E [x' y' z' psi' theta' phi'], J_E = J_C T, T = diag(I, J_A) (eq. 23)."""
        JC = self.jacobian(pose)
        JE = JC.copy()
        JE[:, 3:] = JC[:, 3:] @ self.euler_rate_map(pose)
        return JE
