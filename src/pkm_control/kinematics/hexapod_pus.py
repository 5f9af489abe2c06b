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

Implementation: one pose (``inverse``, ``actuated``, ``jacobian``: the real-time
calls) runs per-leg float arithmetic, which for six legs is 2-3x faster than
numpy's per-call overhead (measured: inverse + J 13 us against 27-37 us with the
legs vectorized in numpy); ``inverse_batch``, ``joint_jacobian``, ``jacobian_dot``
and ``jacobian_xq`` are vectorized numpy over legs (and samples).

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

from ..errors import (MAGNITUDE_LIMIT, InvalidModelError, JointLimitError,
                      SingularConfigurationError, UnreachablePoseError)
from .base import JointMotion, ParallelKinematics
from .kernels import pus_positions_jacobian
from .task_space import Pose, TaskSpace

#: relative tolerance on L^2 - rho^2 < 0 still treated as the boundary (h = 0)
_REACH_TOL = 1e-12


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
        self._cos_cone_L = self._cos_cone * L
        # scalar single-pose path (6 legs: per-leg float arithmetic beats numpy's per-call overhead)
        tol = 1e-12
        self._base_xy = np.ascontiguousarray(np.column_stack(self.base_points[:2]))
        self._plat_xy = np.ascontiguousarray(np.column_stack(self.platform_points[:2]))
        self._leg_consts = tuple(zip(self.base_points[0].tolist(), self.base_points[1].tolist(),
                                     self.platform_points[0].tolist(), self.platform_points[1].tolist(),
                                     g0.tolist(), (self._lo_ip - tol).tolist(), (self._hi_ip + tol).tolist(),
                                     (self._lo_u1 - tol).tolist(), (self._hi_u1 + tol).tolist(),
                                     (self._lo_u2 - tol).tolist(), (self._hi_u2 + tol).tolist()))
        std = list(range(3 * n)) == [int(k) for k in np.column_stack([self.idx_prismatic, self.idx_u1,
                                                                        self.idx_u2]).ravel()]
        self._standard_layout = std and list(self.idx_platform) == list(range(3 * n, 3 * n + 6)) \
            and self.nv == 3 * n + 6
        for arr in (self.base_points, self.platform_points, self.u1_offset, self._c0, self._s0):
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
            if s[i] < -_REACH_TOL * self.L2:
                raise UnreachablePoseError(
                    f"leg {i + 1}: horizontal distance rho = {math.sqrt(rho2[i]):.6g} m from the actuator axis to "
                    f"the spherical joint exceeds the link length L = {self.L:.6g} m (the link cannot reach)")
            s = np.maximum(s, 0.0)
        return r, d, rho2, np.sqrt(s)

    def _check_cone(self, R, a):
        """Spherical-joint cone: angle between the link a_i (3, 6) and the platform normal R e_z."""
        c = R[:, 2] @ a
        if min(c.tolist()) < self._cos_cone_L:
            c = c * (1.0 / self.L)
            i = int(np.argmin(c))
            ang = math.acos(max(-1.0, min(1.0, c[i])))
            raise JointLimitError(f"spherical joint of leg {i + 1}: cone angle between link and platform normal "
                                  f"= {math.degrees(ang):.6g} deg exceeds the limit "
                                  f"{math.degrees(self.cone_limit):.6g} deg (config limits.spherical_cone)")

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The spherical joints' cones: leg<i>_spherical, angle <= limits.spherical_cone."""
        n = self.base_points.shape[1]
        return tuple(f"leg{i + 1}_spherical" for i in range(n)), np.full(n, -np.inf), np.full(n, self.cone_limit)

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        """Cone angle of each spherical joint: between the link a_i = (d_ix, d_iy, h_i) and the platform
        normal R e_z (as ``_check_cone``)."""
        R = np.asarray(pose.rotation, float)
        _, d, _, h = self._legs(np.asarray(pose.position, float), R)
        d[2] = h
        return np.arccos(np.clip(R[:, 2] @ d / self.L, -1.0, 1.0))

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
    def validate(self, pose: Pose, twist=None, accel=None):
        """Same checks and errors as ParallelKinematics.validate, with a fast path for float arrays.

        Inputs that pass the fast test (shapes, finite values, |R^T R - I| <= 1e-9, det R > 0, each
        vector's |.|_1 within MAGNITUDE_LIMIT)
        are returned as they are; anything else goes through the base class, which raises
        InvalidInputError naming the bad quantity.
        """
        p, R = getattr(pose, "position", None), getattr(pose, "rotation", None)
        if (type(p) is np.ndarray and type(R) is np.ndarray and p.shape == (3,) and R.shape == (3, 3)
                and p.dtype == np.float64 and R.dtype == np.float64
                and (twist is None or (type(twist) is np.ndarray and twist.shape == (6,) and twist.dtype == np.float64))
                and (accel is None or (twist is not None and type(accel) is np.ndarray and accel.shape == (6,)
                                       and accel.dtype == np.float64))):
            (a, b, c), (d, e, f), (g, h, i) = R.tolist()
            err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0),
                      abs(c * c + f * f + i * i - 1.0), abs(a * b + d * e + g * h),
                      abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
            det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
            x, y, z = p.tolist()
            small = abs(x) + abs(y) + abs(z) <= MAGNITUDE_LIMIT        # False for NaN too
            if twist is not None:
                small = small and sum(map(abs, twist.tolist())) <= MAGNITUDE_LIMIT
                if accel is not None:
                    small = small and sum(map(abs, accel.tolist())) <= MAGNITUDE_LIMIT
            if err <= 1e-9 and det > 0.0 and small:
                return pose, twist, accel
        return super().validate(pose, twist, accel)

    def _inverse_scalar(self, p, R, check_limits, jacobian, twist=None, accel=None):
        """IK of one pose by per-leg float arithmetic (6 legs: faster than numpy's per-call overhead).

        Positions, optionally J, and with a twist / acceleration the rates and accelerations of
        every joint; the formulas are those of the module docstring (same as inverse_batch,
        joint_jacobian and jacobian_dot, which are vectorized).
        """
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
        x, y, z = p.tolist()
        L2, pi, inv_L2 = self.L2, math.pi, self._inv_L2
        sqrt, atan2 = math.sqrt, math.atan2
        cosL = self._cos_cone_L
        rates = twist is not None
        if rates:
            v0, v1, v2, w0, w1, w2 = twist.tolist()
            acc = accel is not None
            if acc:
                a0, a1, a2, e0, e1, e2 = accel.tolist()
            qd, qdd = [], []
        q = []
        rows = [] if jacobian else None
        bad_limit = False
        bad_cone = False
        for i, (bx, by, px, py, g0, lo_l, hi_l, lo_1, hi_1, lo_2, hi_2) in enumerate(self._leg_consts):
            rx = r00 * px + r01 * py
            ry = r10 * px + r11 * py
            rz = r20 * px + r21 * py
            dx = x + rx - bx
            dy = y + ry - by
            rho2 = dx * dx + dy * dy
            s = L2 - rho2
            if s < 0.0:
                if s < -_REACH_TOL * L2:
                    raise UnreachablePoseError(
                        f"leg {i + 1}: horizontal distance rho = {sqrt(rho2):.6g} m from the actuator axis to "
                        f"the spherical joint exceeds the link length L = {self.L:.6g} m (the link cannot reach)")
                s = 0.0
            h = sqrt(s)
            rho = sqrt(rho2)
            l = z + rz - h
            u1 = atan2(dy, dx) - g0
            if u1 > pi:
                u1 -= 2 * pi
            elif u1 <= -pi:
                u1 += 2 * pi
            u2 = atan2(h, rho)
            q += (l, u1, u2)
            if check_limits:
                if not (lo_l <= l <= hi_l and lo_1 <= u1 <= hi_1 and lo_2 <= u2 <= hi_2):
                    bad_limit = True
                if r02 * dx + r12 * dy + r22 * h < cosL:
                    bad_cone = True
            if jacobian or rates:
                if h <= 0.0:
                    raise SingularConfigurationError(f"leg {i + 1}: link horizontal (a_z = {h:.3g} m, limit > 0): "
                                                     "J_q is singular, the actuator rate is unbounded")
                ih = 1.0 / h
                if jacobian:
                    rows.append((dx * ih, dy * ih, 1.0, (ry * h - rz * dy) * ih, (rz * dx - rx * h) * ih,
                                 (rx * dy - ry * dx) * ih))
            if rates:
                if rho2 <= 1e-24:
                    raise SingularConfigurationError(f"leg {i + 1}: link vertical (rho = 0 m): the universal joint "
                                                     "is gimbal-locked, its rates are undefined")
                # r' = w x r; a' = (d'_x, d'_y, d'_z - l') with d' = v + w x r
                wr0 = w1 * rz - w2 * ry
                wr1 = w2 * rx - w0 * rz
                wr2 = w0 * ry - w1 * rx
                ad0 = v0 + wr0
                ad1 = v1 + wr1
                dd2 = v2 + wr2
                ld = (dx * ad0 + dy * ad1 + h * dd2) * ih
                ad2 = dd2 - ld
                u1d = (dx * ad1 - dy * ad0) / rho2
                rhod = (dx * ad0 + dy * ad1) / rho
                u2d = (rho * ad2 - h * rhod) * inv_L2
                qd += (ld, u1d, u2d)
                if acc:
                    # c = p'' + w' x r + w x (w x r);  a'' = (c_x, c_y, c_z - l'')
                    c0 = a0 + (e1 * rz - e2 * ry) + (w1 * wr2 - w2 * wr1)
                    c1 = a1 + (e2 * rx - e0 * rz) + (w2 * wr0 - w0 * wr2)
                    c2 = a2 + (e0 * ry - e1 * rx) + (w0 * wr1 - w1 * wr0)
                    adsq = ad0 * ad0 + ad1 * ad1
                    ldd = (dx * c0 + dy * c1 + h * c2 + adsq + ad2 * ad2) * ih
                    add2 = c2 - ldd
                    u1dd = (dx * c1 - dy * c0) / rho2 - 2.0 * u1d * rhod / rho
                    rhodd = (adsq + dx * c0 + dy * c1 - rhod * rhod) / rho
                    u2dd = (rho * add2 - h * rhodd) * inv_L2
                    qdd += (ldd, u1dd, u2dd)
        roll = atan2(r21, r22)
        pitch = atan2(-r20, sqrt(r00 * r00 + r10 * r10))
        yaw = atan2(r10, r00)
        q += (x, y, z, yaw, pitch, roll)
        q = self._model_order(q)
        if bad_limit:
            self.check_limits(q)
        if bad_cone:
            r, d, rho2, h = self._legs(p, R)
            d[2] = h
            self._check_cone(R, d)
        J = np.array(rows) if jacobian else None
        if not rates:
            return JointMotion(q, None, None, J)
        # platform joints: Euler rates [yaw' pitch' roll'] = E^-1 omega (E = euler_rate_matrix(yaw, pitch))
        sy, cy, sp, cp = math.sin(yaw), math.cos(yaw), math.sin(pitch), math.cos(pitch)
        if abs(cp) < 1e-9:
            raise SingularConfigurationError(f"pitch = {pitch:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        rolld = (cy * w0 + sy * w1) / cp
        pitchd = -sy * w0 + cy * w1
        yawd = w2 + sp * rolld
        qd += (v0, v1, v2, yawd, pitchd, rolld)
        qd = self._model_order(qd)
        if not acc:
            return JointMotion(q, qd, None, J)
        # E [yaw'' pitch'' roll''] = omega' - E' [yaw' pitch' roll']
        f0 = e0 - (-cy * yawd * pitchd + (-sy * cp * yawd - cy * sp * pitchd) * rolld)
        f1 = e1 - (-sy * yawd * pitchd + (cy * cp * yawd - sy * sp * pitchd) * rolld)
        f2 = e2 + cp * pitchd * rolld
        rolldd = (cy * f0 + sy * f1) / cp
        pitchdd = -sy * f0 + cy * f1
        yawdd = f2 + sp * rolldd
        qdd += (a0, a1, a2, yawdd, pitchdd, rolldd)
        return JointMotion(q, qd, self._model_order(qdd), J)

    def _model_order(self, vals):
        """Leg-major list (l, u1, u2 per leg, then x y z yaw pitch roll) -> array in the model's q order."""
        arr = np.array(vals)
        if self._standard_layout:
            return arr
        out = np.empty(self.nv)
        out[self.idx_prismatic] = arr[0:18:3]
        out[self.idx_u1] = arr[1:18:3]
        out[self.idx_u2] = arr[2:18:3]
        out[self.idx_platform] = arr[18:]
        return out

    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        """All tree joints (model q order), optionally their rates / accelerations and J."""
        pose, twist, accel = self.validate(pose, twist, accel)
        return self._inverse_scalar(pose.position, pose.rotation, check_limits, jacobian, twist, accel)

    def actuated(self, pose: Pose) -> np.ndarray:
        return self.actuated_and_jacobian(self.validate(pose)[0])[0]

    def jacobian(self, pose: Pose) -> np.ndarray:
        """J = J_C (Lopes eq. 6): qdot_a = J [v; omega]."""
        return self.actuated_and_jacobian(self.validate(pose)[0])[1]

    def actuated_and_jacobian(self, pose: Pose):
        """(q_a, J_C) from one compiled pass over the legs: the FK Newton step needs both.

        The inner call of the FK iteration: no input checks, the pose must come from ``validate``.
        """
        p, R = np.asarray(pose.position, float), np.asarray(pose.rotation, float)
        l, J, leg = pus_positions_jacobian(R, p, self._base_xy, self._plat_xy, self.L2, _REACH_TOL)
        if leg >= 0:     # out of reach or link horizontal: the scalar path raises the named error
            self._inverse_scalar(p, R, False, True)
        return l, J

    def jacobian_xq(self, pose: Pose):
        """(J_x, J_q): J_q qdot_a = J_x [v; omega]; J_q = diag(a_iz) is singular when a link is horizontal."""
        pose = self.validate(pose)[0]
        r, d, rho2, h = self._legs(pose.position, pose.rotation)
        dx, dy = d[0], d[1]
        Jx = np.array([dx, dy, h, r[1] * h - r[2] * dy, r[2] * dx - r[0] * h, r[0] * dy - r[1] * dx]).T
        return Jx, np.diag(h)

    def _euler_inverse(self, R):
        """E^-1 with [yaw' pitch' roll'] = E^-1 omega."""
        roll, pitch, yaw = self._rpy(R)
        sy, cy, sp, cp = math.sin(yaw), math.cos(yaw), math.sin(pitch), math.cos(pitch)
        if abs(cp) < 1e-9:
            raise SingularConfigurationError(f"pitch = {pitch:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        return np.array([[sp * cy / cp, sp * sy / cp, 1.0], [-sy, cy, 0.0], [cy / cp, sy / cp, 0.0]])

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        """G (nv x 6): qdot = G [v; omega] for every tree joint (platform rows: Euler rates)."""
        pose = self.validate(pose)[0]
        p, R = pose.position, pose.rotation
        r, d, rho2, h = self._legs(p, R)
        if h.min() <= 0.0 or rho2.min() <= 1e-24:
            raise SingularConfigurationError("joint_jacobian: a link is horizontal (J_q singular) or vertical "
                                             "(U joint gimbal lock)")
        J = self._jacobian_from(r, d, h)
        dx, dy = d[0][:, None], d[1][:, None]
        n = self.n_legs
        z, o = np.zeros(n), np.ones(n)
        # rows of d' = D [v; omega], D = [I, -[r]x]
        Dx = np.array([o, z, z, z, r[2], -r[1]]).T
        Dy = np.array([z, o, z, -r[2], z, r[0]]).T
        Dz = np.array([z, z, o, r[1], -r[0], z]).T
        rho = np.sqrt(rho2)[:, None]
        u1 = (dx * Dy - dy * Dx) / rho2[:, None]
        rhod = (dx * Dx + dy * Dy) / rho
        u2 = (rho * (Dz - J) - h[:, None] * rhod) * self._inv_L2
        G = np.zeros((self.nv, 6))
        G[self.idx_prismatic] = J
        G[self.idx_u1] = u1
        G[self.idx_u2] = u2
        G[self.idx_platform[:3], :3] = np.eye(3)
        G[self.idx_platform[3:], 3:] = self._euler_inverse(R)
        return G

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
