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
``limits.plate_ball_joint_cone`` (not a tree joint).

Direct geometric model (``direct_geometric_model``): P is the intersection of
the three spheres of radius L_B about the C_i (Clavel 1989), the solution below
the plane of the elbows.
"""

from __future__ import annotations

import numpy as np

from ..errors import (InvalidInputError, InvalidModelError, JointLimitError, SingularConfigurationError,
                      UnreachablePoseError, check_vector)
from .base import JointMotion, ParallelKinematics
from .task_space import Pose, TaskSpace

_REACH_TOL = 1e-12      # |G| / sqrt(E^2 + F^2) may exceed 1 by this much (rounding at the boundary)
_ROT_TOL = 1e-9         # the plate cannot rotate: |R - I| above this is unreachable


class Kinematics(ParallelKinematics):
    """Analytic kinematics of the DELTA (3 revolute arms, parallelogram forearms)."""

    family = "delta"

    def __init__(self, clm):
        cfg = clm.config
        task = TaskSpace(cfg.get("task_space", "translation"))
        if task.kind != "translation":
            raise InvalidModelError(f"the delta family needs task_space: translation, got {task.kind!r}")
        super().__init__(clm, task)
        try:
            geo, lim = cfg["geometry"], cfg["limits"]
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
        self._g0 = self.LA ** 2 - self.LB ** 2
        self._dtol = 1e-12 * self.LA * self.LB
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
        # rows of the passive joints [elbow1 x 3, elbow2 x 3] and G row layout
        for a in (self._c, self._s, self.theta, self._ia, self._ie1, self._ie2, self._ip, self.lower, self.upper):
            a.setflags(write=False)
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ core (vectorized over legs)
    def _legs(self, px, py, pz):
        """Per-leg IK quantities; px, py, pz scalars (legs: shape (3,)) or (N, 1) (shape (N, 3))."""
        c, s, LA = self._c, self._s, self.LA
        X = c * px + s * py - self.R
        y = c * py - s * px
        z = pz + 0.0 * X
        E = (2.0 * LA) * X
        F = (-2.0 * LA) * z
        G = X * X + y * y + z * z + self._g0
        r = np.sqrt(E * E + F * F)
        with np.errstate(divide="ignore", invalid="ignore"):
            k = np.where(r > 0.0, G / np.where(r > 0.0, r, 1.0), np.inf)
        q = np.arctan2(F, E) - np.arccos(np.clip(k, -1.0, 1.0))
        cq, sq = np.cos(q), np.sin(q)
        sx = X - LA * cq
        sz = z + LA * sq
        d = LA * (sx * sq + sz * cq)     # s . b (frame independent)
        return k, q, cq, sq, sx, y, sz, d

    def _passive(self, q, sx, sy, sz):
        """elbow1 and elbow2 angles from the forearm vector s in {R_i}."""
        iL = 1.0 / self.LB
        ux, uy, uz = sx * iL, sy * iL, sz * iL
        beta = np.arcsin(np.clip(uy, -1.0, 1.0))
        e1 = np.arctan2(-ux, -uz) - q
        e1 = (e1 + np.pi) % (2.0 * np.pi) - np.pi
        return e1, beta

    def _reach_error(self, k):
        bad = np.flatnonzero(~(np.abs(k) <= 1.0 + _REACH_TOL))
        i = int(bad[0])
        what = "beyond the stretched arm" if not k[i] < -1.0 else "inside the folded arm"
        return UnreachablePoseError(
            f"leg{i + 1}: the plate point is out of reach of the forearm ({what}): reach ratio "
            f"|G|/sqrt(E^2+F^2) = {abs(k[i]):.6g} > 1 (arm L_A = {self.LA:g} m, forearm L_B = {self.LB:g} m)")

    def _check_rotation(self, Rm):
        err = np.abs(Rm - np.eye(3)).max()
        if err > _ROT_TOL:
            raise UnreachablePoseError(f"the DELTA plate only translates: plate rotation |R - I| = {err:.3g} "
                                       f"exceeds {_ROT_TOL:g}")

    def _position(self, pose, validate=False):
        if validate:
            pose = pose.validated()
        p = np.asarray(pose.position, dtype=float)
        if p.shape != (3,):
            raise InvalidInputError(f"pose position must have shape (3,), got {p.shape}")
        self._check_rotation(np.asarray(pose.rotation, dtype=float))
        return p

    def _solve(self, p):
        legs = self._legs(p[0], p[1], p[2])
        if not np.all(np.abs(legs[0]) <= 1.0 + _REACH_TOL):
            raise self._reach_error(legs[0])
        return legs

    def _jac(self, sx, sy, sz, d):
        if np.any(np.abs(d) <= self._dtol):
            i = int(np.argmin(np.abs(d)))
            raise SingularConfigurationError(
                f"leg{i + 1}: arm and forearm are aligned (inverse singularity): s.b = {d[i]:.3g} "
                f"(limit {self._dtol:.3g})")
        c, s = self._c, self._s
        inv = -1.0 / d
        J = np.empty((3, 3))
        J[:, 0] = (c * sx - s * sy) * inv
        J[:, 1] = (s * sx + c * sy) * inv
        J[:, 2] = sz * inv
        return J

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        pose, twist, accel = self.validate(pose, twist, accel)
        p = self._position(pose)
        k, qa, cq, sq, sx, sy, sz, d = self._solve(p)
        e1, beta = self._passive(qa, sx, sy, sz)
        q = np.empty(self.nv)
        q[self._ia] = qa
        q[self._ie1] = e1
        q[self._ie2] = beta
        q[self._ip] = p
        if check_limits:
            self.check_limits(q)
            self._check_cone(beta)
        J = self._jac(sx, sy, sz, d) if (jacobian or twist is not None) else None
        v = a = None
        if twist is not None:
            c, s, LA, iL = self._c, self._s, self.LA, 1.0 / self.LB
            vx = c * twist[0] + s * twist[1]      # twist in {R_i}
            vy = c * twist[1] - s * twist[0]
            vz = twist[2]
            qd = J @ twist
            sdx = vx + LA * sq * qd               # sdot = v + b qdot in {R_i}
            sdz = vz + LA * cq * qd
            sdy = vy
            ux, uy, uz = sx * iL, sy * iL, sz * iL
            rho2 = ux * ux + uz * uz
            rho = np.sqrt(rho2)
            udx, udy, udz = sdx * iL, sdy * iL, sdz * iL
            ad = (uz * udx - ux * udz) / rho2     # a = q + elbow1
            bd = udy / rho
            v = np.empty(self.nv)
            v[self._ia] = qd
            v[self._ie1] = ad - qd
            v[self._ie2] = bd
            v[self._ip] = twist
            if accel is not None:
                ax = c * accel[0] + s * accel[1]
                ay = c * accel[1] - s * accel[0]
                az = accel[2]
                # d/dt (s . sdot) = 0:  s.a + d qdd + qd s.bdot + sdot.sdot = 0, bdot = L_A [cq, 0, -sq] qd
                sbd = LA * (sx * cq - sz * sq) * qd
                qdd = -(sx * ax + sy * ay + sz * az + sbd + sdx * sdx + sdy * sdy + sdz * sdz) / d
                sddx = ax + LA * (sq * qdd + cq * qd * qd)
                sddy = ay
                sddz = az + LA * (cq * qdd - sq * qd * qd)
                uddx, uddy, uddz = sddx * iL, sddy * iL, sddz * iL
                rho2d = 2.0 * (ux * udx + uz * udz)
                add = (uz * uddx - ux * uddz - ad * rho2d) / rho2
                bdd = (uddy + uy * bd * bd) / rho
                a = np.empty(self.nv)
                a[self._ia] = qdd
                a[self._ie1] = add - qdd
                a[self._ie2] = bdd
                a[self._ip] = accel
        return JointMotion(q, v, a, J if jacobian else None)

    def _check_cone(self, beta):
        bad = np.flatnonzero(np.abs(beta) > self.cone_max + 1e-12)
        if bad.size:
            i = int(bad[0])
            raise JointLimitError(f"leg{i + 1}: plate ball joint cone angle = {abs(beta[i]):.6g} rad exceeds its "
                                  f"limit {self.cone_max:.6g} rad (limits.plate_ball_joint_cone)")

    def actuated(self, pose: Pose) -> np.ndarray:
        return self._solve(self._position(pose))[1]

    def jacobian(self, pose: Pose) -> np.ndarray:
        k, q, cq, sq, sx, sy, sz, d = self._solve(self._position(pose))
        return self._jac(sx, sy, sz, d)

    def jacobian_xq(self, pose: Pose):
        k, q, cq, sq, sx, sy, sz, d = self._solve(self._position(pose))
        c, s = self._c, self._s
        Jx = np.empty((3, 3))
        Jx[:, 0] = c * sx - s * sy
        Jx[:, 1] = s * sx + c * sy
        Jx[:, 2] = sz
        return Jx, np.diag(-d)

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        k, q, cq, sq, sx, sy, sz, d = self._solve(self._position(pose))
        J = self._jac(sx, sy, sz, d)
        c, s, LA, iL = self._c, self._s, self.LA, 1.0 / self.LB
        # du/dx in {R_i}: (R_i^T + b_i J_i) / L_B, rows for x, y, z components of u
        dux = (np.column_stack([c, s, np.zeros(3)]) + (LA * sq)[:, None] * J) * iL
        duy = np.column_stack([-s, c, np.zeros(3)]) * iL
        duz = (np.array([[0.0, 0.0, 1.0]]) + (LA * cq)[:, None] * J) * iL
        ux, uy, uz = sx * iL, sy * iL, sz * iL
        rho2 = ux * ux + uz * uz
        G = np.zeros((self.nv, 3))
        G[self._ia] = J
        G[self._ie1] = (uz[:, None] * dux - ux[:, None] * duz) / rho2[:, None] - J
        G[self._ie2] = duy / np.sqrt(rho2)[:, None]
        G[self._ip] = np.eye(3)
        return G

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        twist = check_vector("twist (vx vy vz)", twist, 3)
        k, q, cq, sq, sx, sy, sz, d = self._solve(self._position(pose))
        J = self._jac(sx, sy, sz, d)
        c, s, LA = self._c, self._s, self.LA
        qd = J @ twist
        # in the base frame: sdot = v + b qdot, ddot = sdot.b + s.bdot
        bx, by, bz = c * LA * sq, s * LA * sq, LA * cq
        sdx, sdy, sdz = twist[0] + bx * qd, twist[1] + by * qd, twist[2] + bz * qd
        dd = sdx * bx + sdy * by + sdz * bz + LA * (sx * cq - sz * sq) * qd
        Jd = np.empty((3, 3))
        Jd[:, 0] = sdx
        Jd[:, 1] = sdy
        Jd[:, 2] = sdz
        return -(Jd + dd[:, None] * J) / d[:, None]

    def inverse_batch(self, positions, rotations):
        P = np.asarray(positions, dtype=float)
        if P.ndim != 2 or P.shape[1] != 3:
            raise InvalidInputError(f"positions must have shape (N, 3), got {P.shape}")
        Rm = np.asarray(rotations, dtype=float)
        if Rm.shape != (P.shape[0], 3, 3):
            raise InvalidInputError(f"rotations must have shape ({P.shape[0]}, 3, 3), got {Rm.shape}")
        with np.errstate(invalid="ignore"):
            k, qa, cq, sq, sx, sy, sz, d = self._legs(P[:, 0:1], P[:, 1:2], P[:, 2:3])
            e1, beta = self._passive(qa, sx, sy, sz)
            reach = np.all(np.abs(k) <= 1.0 + _REACH_TOL, axis=1)
            rot_ok = np.abs(Rm - np.eye(3)).reshape(len(P), 9).max(axis=1) <= _ROT_TOL if len(P) else reach
            q = np.empty((len(P), self.nv))
            q[:, self._ia] = qa
            q[:, self._ie1] = e1
            q[:, self._ie2] = beta
            q[:, self._ip] = P
            ok = reach & rot_ok & np.all(np.isfinite(q), axis=1)
            valid = ok & self.within_limits(q) & np.all(np.abs(beta) <= self.cone_max + 1e-12, axis=1)
        q[~ok] = np.nan
        return q, valid

    # ------------------------------------------------------------------ Codourey's models
    def direct_geometric_model(self, theta) -> np.ndarray:
        """Plate position from the three arm angles (closed form, three-sphere intersection).

        theta: the arm angles q_1, q_2, q_3 of Codourey's eq. 30 (joints leg<i>_arm).
        The plate is the intersection of the spheres of radius L_B about the
        elbows C_i moved in by R_B, on the side below the plane of the elbows.
        """
        q = check_vector("arm angles theta (leg1_arm leg2_arm leg3_arm)", theta, 3)
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
        return np.linalg.solve(Jx, Jq)

    def forward_jacobian_dot(self, pose: Pose, qdot) -> np.ndarray:
        """Codourey's eq. 37: xddot = J_c qddot + Jdot_c qdot with
        Jdot_c = -[s_i^T]^-1 ([sdot_i^T] J_c + diag(sdot_i . b_i + s_i . bdot_i)),
        sdot_i = J_c qdot + b_i qdot_i (eq. 33), bdot_i from eq. 38."""
        qdot = check_vector("arm rates qdot", qdot, 3)
        k, q, cq, sq, sx, sy, sz, d = self._solve(self._position(pose))
        c, s, LA = self._c, self._s, self.LA
        Sx = np.column_stack([c * sx - s * sy, s * sx + c * sy, sz])
        Jc = np.linalg.solve(Sx, np.diag(-d))
        xd = Jc @ qdot
        b = np.column_stack([c * LA * sq, s * LA * sq, LA * cq])
        bd = np.column_stack([c * LA * cq, s * LA * cq, -LA * sq]) * qdot[:, None]
        sd = xd[None, :] + b * qdot[:, None]
        diag = np.einsum("ij,ij->i", sd, b) + np.einsum("ij,ij->i", Sx, bd)
        return -np.linalg.solve(Sx, sd @ Jc + np.diag(diag))
