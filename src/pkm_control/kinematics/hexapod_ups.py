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

Speed: on 6 x 3 arrays a numpy call costs about as much as the arithmetic of a whole leg, so the
positions / J path of ``inverse`` (the hot call of controllers) is a scalar loop over the legs,
while rates, accelerations, G, Jdot and ``inverse_batch`` (vectorized over N poses and legs) use
numpy; the tests check both paths against each other and against finite differences.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidModelError, JointLimitError,
                      SingularConfigurationError, UnreachablePoseError)
from .base import JointMotion, ParallelKinematics
from .kernels import ups_lengths_jacobian
from .task_space import Pose, TaskSpace, rpy_to_matrix

#: below this horizontal strut component r = sqrt(x^2 + z^2) (m) the universal joint is in
#: gimbal lock (strut along its first axis) and alpha is undefined
_GIMBAL_EPS = 1e-9


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
        self._nv = clm.model.nv
        self._lo_eps, self._hi_eps = self.lower - 1e-12, self.upper + 1e-12
        self._iall = np.concatenate([self._ia, self._ib, self._il, self._ip])
        nb = self._axes
        self._legdata = tuple(
            tuple(float(v) for v in (*A[i], *Bp[i], *self._RS[i].ravel(), *nb[i],
                                     self._lo_eps[self._ia[i]], self._hi_eps[self._ia[i]],
                                     self._lo_eps[self._ib[i]], self._hi_eps[self._ib[i]],
                                     self._lo_eps[self._il[i]], self._hi_eps[self._il[i]]))
            for i in range(n))
        for arr in (self._A, self._RS, self._Bp, self._axes, self._ia, self._ib, self._il, self._ip, self._act,
                    self._lo_eps, self._hi_eps, self._iall, self.lower, self.upper):
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

    def validate(self, pose: Pose, twist=None, accel=None):
        """As ParallelKinematics.validate (same checks, same errors), with a scalar fast path.

        A float64 pose of the right shapes is checked with explicit scalar arithmetic (finite,
        |R^T R - I| <= 1e-9, det R > 0, |x| + |y| + |z| within MAGNITUDE_LIMIT); anything else, and
        every failure, goes to the generic validation, which builds the error message.
        """
        p, R = getattr(pose, "position", None), getattr(pose, "rotation", None)
        if (type(p) is np.ndarray and type(R) is np.ndarray and p.shape == (3,) and R.shape == (3, 3)
                and p.dtype == np.float64 and R.dtype == np.float64
                and (twist is None or self._fast_vector(twist))
                and (accel is None or (twist is not None and self._fast_vector(accel)))):
            (a, b, c), (d, e, f), (g, h, i) = R.tolist()
            x, y, z = p.tolist()
            if math.isfinite(a + b + c + d + e + f + g + h + i) and abs(x) + abs(y) + abs(z) <= MAGNITUDE_LIMIT:
                err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0),
                          abs(c * c + f * f + i * i - 1.0), abs(a * b + d * e + g * h),
                          abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
                det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
                if err <= 1e-9 and det > 0.0:
                    return pose, twist, accel
        return super().validate(pose, twist, accel)

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The spherical joints' cones at B_i: leg<i>_spherical, angle <= spherical_joint_max_angle."""
        n = self.n_legs
        return (tuple(f"leg{i + 1}_spherical" for i in range(n)), np.full(n, -np.inf),
                np.full(n, self.spherical_joint_max_angle))

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        """Cone angle of each spherical joint: between the strut axis u_i and the anchor axis R n_i."""
        R = np.asarray(pose.rotation, float)
        d = self._Bp @ R.T + (np.asarray(pose.position, float) - self._A)
        c = np.einsum("ij,ij->i", d, self._axes @ R.T) / np.linalg.norm(d, axis=1)
        return np.arccos(np.clip(c, -1.0, 1.0))

    @staticmethod
    def _fast_vector(v) -> bool:
        """A float64 array of shape (6,) with |v|_1 within MAGNITUDE_LIMIT (else the generic validation decides)."""
        return (type(v) is np.ndarray and v.shape == (6,) and v.dtype == np.float64
                and sum(map(abs, v.tolist())) <= MAGNITUDE_LIMIT)

    def check_limits(self, q: np.ndarray) -> None:
        """As ParallelKinematics.check_limits, one vectorized test before building the message."""
        if (q < self._lo_eps).any() or (q > self._hi_eps).any():
            super().check_limits(q)

    def _solve(self, p, R, twist, accel, check_limits, want_jacobian, want_g=False):
        """Scalar loop over the legs (numpy calls on 6 x 3 arrays cost more than the arithmetic).

        Positions by eq. 29-31, rates and accelerations by differentiating them with
        v_B = v + w x b, a_B = a + wd x b + w x (w x b) (Abdellatif eq. 2-3), J rows [u^T, (b x u)^T].
        With ``want_g`` also G (``joint_jacobian``'s rows from the same pass). Returns (q, v, a, J, G) (v, a None
        without twist / accel, J, G None unless asked for).
        """
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = R.tolist()
        px, py, pz = p.tolist()
        rates = twist is not None
        accs = accel is not None
        if rates:
            vx, vy, vz, wx_, wy_, wz_ = twist.tolist()
        if accs:
            ax_, ay_, az_, wdx, wdy, wdz = accel.tolist()
        sqrt, atan2 = math.sqrt, math.atan2
        qa, qb, ql, rows, ga, gb = [], [], [], [], [], []
        va, vb, vl, aa, ab, al_ = [], [], [], [], [], []
        out_of_range = False
        cone_bad = None
        for i, (ax, ay, az, bx, by, bz, s00, s01, s02, s10, s11, s12, s20, s21, s22,
                nx, ny, nz, alo, ahi, blo, bhi, llo, lhi) in enumerate(self._legdata):
            wx = r00 * bx + r01 * by + r02 * bz          # b_i in base coordinates
            wy = r10 * bx + r11 * by + r12 * bz
            wz = r20 * bx + r21 * by + r22 * bz
            dx, dy, dz = wx + px - ax, wy + py - ay, wz + pz - az
            x = s00 * dx + s10 * dy + s20 * dz          # strut vector in S_i
            y = s01 * dx + s11 * dy + s21 * dz
            z = s02 * dx + s12 * dy + s22 * dz
            r2 = x * x + z * z
            r = sqrt(r2)
            if not r > _GIMBAL_EPS:
                self._gimbal_check(np.array([r]), np.array([[x, y, z]]), i)
            l2 = r2 + y * y
            l = sqrt(l2)
            alpha, beta = atan2(x, -z), atan2(y, r)
            qa.append(alpha)
            qb.append(beta)
            ql.append(l)
            ux, uy, uz = dx / l, dy / l, dz / l
            if check_limits:
                if not (alo <= alpha <= ahi and blo <= beta <= bhi and llo <= l <= lhi):
                    out_of_range = True
                c = ux * (r00 * nx + r01 * ny + r02 * nz) + uy * (r10 * nx + r11 * ny + r12 * nz) \
                    + uz * (r20 * nx + r21 * ny + r22 * nz)
                if cone_bad is None and c < self._cos_cone:
                    cone_bad = (i, c)
            if want_jacobian or want_g:
                rows.append((ux, uy, uz, wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux))
            if want_g:
                _gradient_rows(x, y, z, r, r2, l2, wx, wy, wz, s00, s01, s02, s10, s11, s12, s20, s21, s22, ga, gb)
            if rates:
                # w x b, v_B and its components in S_i
                cx, cy, cz = wy_ * wz - wz_ * wy, wz_ * wx - wx_ * wz, wx_ * wy - wy_ * wx
                ex, ey, ez = vx + cx, vy + cy, vz + cz
                xd = s00 * ex + s10 * ey + s20 * ez
                yd = s01 * ex + s11 * ey + s21 * ez
                zd = s02 * ex + s12 * ey + s22 * ez
                rrd = x * xd + z * zd
                ld = (rrd + y * yd) / l
                ad = (x * zd - z * xd) / r2
                rd = rrd / r
                bd = (r * yd - y * rd) / l2
                va.append(ad)
                vb.append(bd)
                vl.append(ld)
                if accs:
                    # a_B = a + wd x b + w x (w x b)
                    fx = ax_ + wdy * wz - wdz * wy + wy_ * cz - wz_ * cy
                    fy = ay_ + wdz * wx - wdx * wz + wz_ * cx - wx_ * cz
                    fz = az_ + wdx * wy - wdy * wx + wx_ * cy - wy_ * cx
                    xdd = s00 * fx + s10 * fy + s20 * fz
                    ydd = s01 * fx + s11 * fy + s21 * fz
                    zdd = s02 * fx + s12 * fy + s22 * fz
                    xxd = xd * xd + zd * zd + x * xdd + z * zdd
                    aa.append((x * zdd - z * xdd - 2.0 * ad * rrd) / r2)
                    al_.append((xxd + yd * yd + y * ydd - ld * ld) / l)
                    rdd = (xxd - rd * rd) / r
                    ab.append((r * ydd - y * rdd - 2.0 * bd * l * ld) / l2)
        # platform joints: x y z, then ZYX Euler angles and their rates (omega = E [yaw' pitch' roll'])
        yaw = atan2(r10, r00)
        cp = math.hypot(r00, r10)
        pitch = atan2(-r20, cp)
        roll = atan2(r21, r22)
        q = np.empty(self._nv)
        q[self._iall] = qa + qb + ql + [px, py, pz, yaw, pitch, roll]
        if out_of_range:
            super().check_limits(q)
        if cone_bad is not None:
            i, c = cone_bad
            raise JointLimitError(f"leg{i + 1} spherical joint cone angle = {math.acos(max(-1.0, min(1.0, c))):.6g} "
                                  f"rad exceeds spherical_joint_max_angle = {self.spherical_joint_max_angle:.6g} rad")
        J = G = None
        if want_jacobian:
            J = np.array(rows)
            if not self._act_identity:
                J = J[self._act]
        if want_g:
            G = self._g_matrix(ga, gb, rows, r00, r10, r20)
        if not rates:
            return q, None, None, J, G
        if cp < 1e-9:
            raise SingularConfigurationError(f"pitch = {pitch:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        cy, sy = r00 / cp, r10 / cp
        sp = -r20
        rolld = (cy * wx_ + sy * wy_) / cp
        pitchd = -sy * wx_ + cy * wy_
        yawd = wz_ + sp * rolld
        v = np.empty(self._nv)
        v[self._iall] = va + vb + vl + [vx, vy, vz, yawd, pitchd, rolld]
        if not accs:
            return q, v, None, J, G
        # E e'' = wd - E' e'
        gx = wdx - (-cy * yawd * pitchd + (-sy * cp * yawd - cy * sp * pitchd) * rolld)
        gy = wdy - (-sy * yawd * pitchd + (cy * cp * yawd - sy * sp * pitchd) * rolld)
        gz = wdz + cp * pitchd * rolld
        rolldd = (cy * gx + sy * gy) / cp
        a = np.empty(self._nv)
        a[self._iall] = aa + ab + al_ + [ax_, ay_, az_, gz + sp * rolldd, -sy * gx + cy * gy, rolldd]
        return q, v, a, J, G

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        pose, twist, accel = self.validate(pose, twist, accel)
        return JointMotion(*self._solve(pose.position, pose.rotation, twist, accel, check_limits, jacobian)[:4])

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, q, v, a and G from one pass over the legs."""
        pose, twist, accel = self.validate(pose, twist, accel)
        q, v, a, _, G = self._solve(pose.position, pose.rotation, twist, accel, False, False, want_g=True)
        return JointMotion(q, v, a), G

    def actuated(self, pose: Pose) -> np.ndarray:
        return self.actuated_and_jacobian(self.validate(pose)[0])[0]

    def jacobian(self, pose: Pose) -> np.ndarray:
        """Taghirad's J: rows [s_i^T, (b_i x s_i)^T], qdot_a = J (v, omega)."""
        return self.actuated_and_jacobian(self.validate(pose)[0])[1]

    def actuated_and_jacobian(self, pose: Pose):
        """(l, J) from one compiled pass over the legs: the FK Newton step needs both.

        The inner call of the FK iteration: no input checks, the pose must come from ``validate``.
        """
        l, J = ups_lengths_jacobian(np.asarray(pose.rotation, float), np.asarray(pose.position, float),
                                    self._A, self._Bp)
        return (l, J) if self._act_identity else (l[self._act], J[self._act])

    def jacobian_xq(self, pose: Pose):
        """(J_x, J_q) = (J, I): prismatic legs have no inverse-kinematic singularity (Taghirad)."""
        return self.jacobian(pose), np.eye(self.n_legs)

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        """G: per leg the rows [g^T, (b x g)^T] with g the gradient of alpha, beta, l w.r.t. B_i
        (base coordinates); the platform rows are the task's platform rate matrix."""
        pose = self.validate(pose)[0]
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(pose.rotation, float).tolist()
        px, py, pz = np.asarray(pose.position, float).tolist()
        ra, rb, rl = [], [], []
        for i, (ax, ay, az, bx, by, bz, s00, s01, s02, s10, s11, s12, s20, s21, s22,
                *_) in enumerate(self._legdata):
            wx = r00 * bx + r01 * by + r02 * bz
            wy = r10 * bx + r11 * by + r12 * bz
            wz = r20 * bx + r21 * by + r22 * bz
            dx, dy, dz = wx + px - ax, wy + py - ay, wz + pz - az
            x = s00 * dx + s10 * dy + s20 * dz
            y = s01 * dx + s11 * dy + s21 * dz
            z = s02 * dx + s12 * dy + s22 * dz
            r2 = x * x + z * z
            r = math.sqrt(r2)
            if not r > _GIMBAL_EPS:
                self._gimbal_check(np.array([r]), np.array([[x, y, z]]), i)
            l2 = r2 + y * y
            l = math.sqrt(l2)
            _gradient_rows(x, y, z, r, r2, l2, wx, wy, wz, s00, s01, s02, s10, s11, s12, s20, s21, s22, ra, rb)
            ux, uy, uz = dx / l, dy / l, dz / l
            rl.append((ux, uy, uz, wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux))
        return self._g_matrix(ra, rb, rl, r00, r10, r20)

    def _g_matrix(self, ra, rb, rl, r00, r10, r20) -> np.ndarray:
        """G from the legs' rows (alpha, beta, l) and the platform's ZYX Euler rate rows."""
        cp = math.hypot(r00, r10)
        if cp < 1e-9:
            raise SingularConfigurationError(f"pitch = {math.atan2(-r20, cp):.6g} rad: ZYX Euler rates are "
                                             "singular at |pitch| = pi/2")
        cy, sy, sp = r00 / cp, r10 / cp, -r20
        G = np.zeros((self._nv, 6))
        G[self._iall[:3 * self.n_legs]] = ra + rb + rl
        ip = self._ip
        G[ip[0], 0] = G[ip[1], 1] = G[ip[2], 2] = 1.0
        G[ip[3], 3:] = (sp * cy / cp, sp * sy / cp, 1.0)     # yaw'   (omega = E [yaw' pitch' roll'])
        G[ip[4], 3:] = (-sy, cy, 0.0)                       # pitch'
        G[ip[5], 3:] = (cy / cp, sy / cp, 0.0)              # roll'
        return G

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """dJ/dt along the twist: rows [u'^T, ((omega x b) x u + b x u')^T], u' = (v_B - l' u) / l."""
        pose, twist, _ = self.validate_motion(pose, twist)
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = np.asarray(pose.rotation, float).tolist()
        px, py, pz = np.asarray(pose.position, float).tolist()
        vx, vy, vz, ox, oy, oz = np.asarray(twist, float).tolist()
        rows = []
        for i, (ax, ay, az, bx, by, bz, *_) in enumerate(self._legdata):
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


def _gradient_rows(x, y, z, r, r2, l2, wx, wy, wz, s00, s01, s02, s10, s11, s12, s20, s21, s22, ra, rb):
    """G's rows of one leg's alpha and beta, appended to ra and rb: [g^T, (b x g)^T] with g the gradient w.r.t. B_i
    (base coordinates); d alpha / d s = (-z, 0, x) / r^2, d beta / d s = (-x y / r, r, -y z / r) / l^2 in S_i."""
    gx, gz = -z / r2, x / r2
    hx, hy, hz = -x * y / (r * l2), r / l2, -y * z / (r * l2)
    for (ux, uy, uz), out in (((s00 * gx + s02 * gz, s10 * gx + s12 * gz, s20 * gx + s22 * gz), ra),
                              ((s00 * hx + s01 * hy + s02 * hz, s10 * hx + s11 * hy + s12 * hz,
                                s20 * hx + s21 * hy + s22 * hz), rb)):
        out.append((ux, uy, uz, wy * uz - wz * uy, wz * ux - wx * uz, wx * uy - wy * ux))
