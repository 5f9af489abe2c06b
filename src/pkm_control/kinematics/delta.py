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
"""

from __future__ import annotations

from math import acos, asin, atan2, cos, pi, sin, sqrt

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, JointLimitError,
                      SingularConfigurationError, UnreachablePoseError, check_vector)
from .analysis import check_conditioning
from .base import JointMotion, ParallelKinematics
from .task_space import Pose, TaskSpace

_REACH_TOL = 1e-12      # |G| / sqrt(E^2 + F^2) may exceed 1 by this much (rounding at the boundary)
_ROT_TOL = 1e-9         # the plate cannot rotate: |R - I| above this is unreachable


class Kinematics(ParallelKinematics):
    """Analytic kinematics of the DELTA (3 revolute arms, parallelogram forearms)."""

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
        if self.nv != 12:
            raise InvalidModelError(f"delta: expected 12 tree joints (3 x arm, elbow1, elbow2 + 3 platform), "
                                    f"got {self.nv}")
        # scalar single-pose path: canonical order [arm1..3, elbow1 1..3, elbow2 1..3, x, y, z]
        canon = [int(i) for i in np.concatenate([self._ia, self._ie1, self._ie2, self._ip])]
        self._slot = tuple(canon.index(m) for m in range(self.nv))
        self._lo = tuple(float(self.lower[m]) - 1e-12 for m in canon[:9])
        self._hi = tuple(float(self.upper[m]) + 1e-12 for m in canon[:9])
        self._cs = tuple((float(c), float(s)) for c, s in zip(self._c, self._s))
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
        q = np.where(q <= -np.pi, q + 2.0 * np.pi, q)          # (-2 pi, pi] -> (-pi, pi] (module docstring)
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

    # ------------------------------------------------------------------ single pose (scalar math, 3 legs)
    # One pose is 3 legs: plain Python floats are several times faster than numpy
    # arrays of 3 here (each numpy call costs ~0.5-1 us); inverse_batch is the
    # numpy path, vectorized over poses and legs.
    def _reach_error(self, i, G, r):
        ratio = abs(G) / r if r > 0 else float("inf")
        what = "inside the folded arm" if G < 0 else "beyond the stretched arm"
        return UnreachablePoseError(
            f"leg{i + 1}: the plate point is out of reach of the forearm ({what}): reach ratio "
            f"|G|/sqrt(E^2+F^2) = {ratio:.6g} > 1 (arm L_A = {self.LA:g} m, forearm L_B = {self.LB:g} m)")

    def _check_rotation(self, Rm):
        err = np.abs(Rm - np.eye(3)).max()
        if err > _ROT_TOL:
            raise UnreachablePoseError(f"the DELTA plate only translates: plate rotation |R - I| = {err:.3g} "
                                       f"exceeds {_ROT_TOL:g}")

    def _pxyz(self, pose):
        """(px, py, pz) floats of a checked pose (InvalidInputError / UnreachablePoseError as validate)."""
        p, Rm = getattr(pose, "position", None), getattr(pose, "rotation", None)
        if (type(p) is np.ndarray and p.shape == (3,) and p.dtype.char == "d"
                and type(Rm) is np.ndarray and Rm.shape == (3, 3) and Rm.dtype.char == "d"):
            px, py, pz = p.tolist()
            (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = Rm.tolist()
            t = _ROT_TOL
            if (abs(px) + abs(py) + abs(pz) <= MAGNITUDE_LIMIT
                    and abs(r00 - 1.0) <= t and abs(r11 - 1.0) <= t and abs(r22 - 1.0) <= t
                    and abs(r01) <= t and abs(r02) <= t and abs(r10) <= t and abs(r12) <= t
                    and abs(r20) <= t and abs(r21) <= t):
                return px, py, pz
        pose = self.validate(pose)[0]          # raises InvalidInputError on malformed input
        self._check_rotation(pose.rotation)
        return tuple(pose.position.tolist())

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

    def _state(self, px, py, pz):
        """Per leg (q, cos q, sin q, s_x, s_y, s_z in {R_i}, d = s.b); UnreachablePoseError if out of reach."""
        LA, R, g0 = self.LA, self.R, self._g0
        F = -2.0 * LA * pz
        out = []
        for i, (c, s) in enumerate(self._cs):
            X = c * px + s * py - R
            y = c * py - s * px
            E = 2.0 * LA * X
            G = X * X + y * y + pz * pz + g0
            r = sqrt(E * E + F * F)
            if not (r > 0.0 and abs(G) <= (1.0 + _REACH_TOL) * r):
                raise self._reach_error(i, G, r)
            k = G / r
            q = atan2(F, E) - acos(1.0 if k > 1.0 else -1.0 if k < -1.0 else k)
            if q <= -pi:                 # (-2 pi, pi] -> (-pi, pi]: the arm angle does not jump at horizontal
                q += 2.0 * pi
            cq, sq = cos(q), sin(q)
            sx = X - LA * cq
            sz = pz + LA * sq
            out.append((q, cq, sq, sx, y, sz, LA * (sx * sq + sz * cq)))
        return out

    def _jrows(self, st):
        """Rows J_i = -s_i^T / (s_i . b_i) in the base frame."""
        rows = []
        for i, (q, cq, sq, sx, sy, sz, d) in enumerate(st):
            if abs(d) <= self._dtol:
                raise SingularConfigurationError(
                    f"leg{i + 1}: arm and forearm are aligned (inverse singularity): s.b = {d:.3g} "
                    f"(limit {self._dtol:.3g})")
            c, s = self._cs[i]
            inv = -1.0 / d
            rows.append(((c * sx - s * sy) * inv, (s * sx + c * sy) * inv, sz * inv))
        return rows

    def _passive1(self, q, sx, sy, sz):
        iL = 1.0 / self.LB
        uy = sy * iL
        e1 = atan2(-sx, -sz) - q
        if e1 <= -pi:
            e1 += 2.0 * pi
        elif e1 > pi:
            e1 -= 2.0 * pi
        return e1, asin(1.0 if uy > 1.0 else -1.0 if uy < -1.0 else uy)

    def _assemble(self, vals):
        """Model-order vector from [arm1..3, elbow1 1..3, elbow2 1..3, x, y, z]."""
        return np.array([vals[j] for j in self._slot])

    # ------------------------------------------------------------------ family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        """All joints (and rates, accelerations) of a plate position; see the module docstring.

        Inputs are checked as ``validate`` does (a fast path for float arrays, ``validate``
        itself otherwise): InvalidInputError for NaN or wrong sizes.
        """
        px, py, pz = self._pxyz(pose)
        if twist is not None:
            twist = self.vector3("twist (vx vy vz)", twist)
        if accel is not None:
            if twist is None:
                raise InvalidInputError("an acceleration needs a twist as well")
            accel = self.vector3("acceleration", accel)
        st = self._state(px, py, pz)
        qa, e1, e2 = [0.0] * 3, [0.0] * 3, [0.0] * 3
        for i, (q, cq, sq, sx, sy, sz, d) in enumerate(st):
            qa[i] = q
            e1[i], e2[i] = self._passive1(q, sx, sy, sz)
        vals = qa + e1 + e2 + [px, py, pz]
        if check_limits:
            lo, hi = self._lo, self._hi
            for j in range(9):
                if not lo[j] <= vals[j] <= hi[j]:
                    self.check_limits(self._assemble(vals))      # raises, naming the joint
            cm = self.cone_max + 1e-12
            for i in range(3):
                if abs(e2[i]) > cm:
                    raise JointLimitError(
                        f"leg{i + 1}: plate ball joint cone angle = {abs(e2[i]):.6g} rad exceeds its limit "
                        f"{self.cone_max:.6g} rad (limits.plate_ball_joint_cone)")
        q = self._assemble(vals)
        rows = self._jrows(st) if (jacobian or twist is not None) else None
        v = a = None
        if twist is not None:
            LA, iL = self.LA, 1.0 / self.LB
            wx, wy, wz = twist
            vv = [0.0] * 12
            vv[9:] = twist
            av = [0.0] * 12
            for i, (qi, cq, sq, sx, sy, sz, d) in enumerate(st):
                c, s = self._cs[i]
                Ji = rows[i]
                qd = Ji[0] * wx + Ji[1] * wy + Ji[2] * wz
                sdx = c * wx + s * wy + LA * sq * qd       # sdot = v + b qdot in {R_i}
                sdy = c * wy - s * wx
                sdz = wz + LA * cq * qd
                rho2 = (sx * sx + sz * sz) * iL * iL
                rho = sqrt(rho2)
                ad = (sz * sdx - sx * sdz) * iL * iL / rho2      # a = q + elbow1
                bd = sdy * iL / rho
                vv[i], vv[3 + i], vv[6 + i] = qd, ad - qd, bd
                if accel is not None:
                    ax, ay, az = accel
                    aix = c * ax + s * ay
                    aiy = c * ay - s * ax
                    # d/dt (s . sdot) = 0: s.a + d qdd + qd s.bdot + sdot.sdot = 0, bdot = L_A [cq, 0, -sq] qd
                    qdd = -(sx * aix + sy * aiy + sz * az + LA * (sx * cq - sz * sq) * qd * qd
                            + sdx * sdx + sdy * sdy + sdz * sdz) / d
                    sddx = aix + LA * (sq * qdd + cq * qd * qd)
                    sddz = az + LA * (cq * qdd - sq * qd * qd)
                    rho2d = 2.0 * (sx * sdx + sz * sdz) * iL * iL
                    add = ((sz * sddx - sx * sddz) * iL * iL - ad * rho2d) / rho2
                    bdd = (aiy * iL + sy * iL * bd * bd) / rho
                    av[i], av[3 + i], av[6 + i] = qdd, add - qdd, bdd
            v = self._assemble(vv)
            if accel is not None:
                av[9:] = accel
                a = self._assemble(av)
        return JointMotion(q, v, a, np.array(rows) if jacobian else None)

    def actuated(self, pose: Pose) -> np.ndarray:
        return np.array([leg[0] for leg in self._state(*self._pxyz(pose))])

    def jacobian(self, pose: Pose) -> np.ndarray:
        return np.array(self._jrows(self._state(*self._pxyz(pose))))

    def end_stop_limits(self) -> tuple[np.ndarray, np.ndarray]:
        """The joint ranges, with elbow2 narrowed to the plate ball-joint cone: |elbow2| is that cone
        angle (module docstring), so the ball joint's stop acts on elbow2."""
        lower, upper = super().end_stop_limits()
        lower[self._ie2] = np.maximum(lower[self._ie2], -self.cone_max)
        upper[self._ie2] = np.minimum(upper[self._ie2], self.cone_max)
        return lower, upper

    def jacobian_xq(self, pose: Pose):
        st = self._state(*self._pxyz(pose))
        Jx = [((c * sx - s * sy), (s * sx + c * sy), sz) for (c, s), (q, cq, sq, sx, sy, sz, d) in zip(self._cs, st)]
        Jq = np.zeros((3, 3))
        Jq[0, 0], Jq[1, 1], Jq[2, 2] = (-leg[6] for leg in st)
        return np.array(Jx), Jq

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        st = self._state(*self._pxyz(pose))
        rows = self._jrows(st)
        LA = self.LA
        G = [None] * 12
        for i, (q, cq, sq, sx, sy, sz, d) in enumerate(st):
            c, s = self._cs[i]
            J0, J1, J2 = rows[i]
            # d(s in {R_i})/dx = R_i^T + b_i J_i, b_i = L_A [sq, 0, cq] in {R_i}
            dsx = (c + LA * sq * J0, s + LA * sq * J1, LA * sq * J2)
            dsz = (LA * cq * J0, LA * cq * J1, 1.0 + LA * cq * J2)
            n2 = sx * sx + sz * sz                     # (rho L_B)^2
            G[i] = rows[i]
            G[3 + i] = tuple((sz * dsx[j] - sx * dsz[j]) / n2 - rows[i][j] for j in range(3))
            ir = 1.0 / sqrt(n2)
            G[6 + i] = (-s * ir, c * ir, 0.0)
        G[9:] = [(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]
        return np.array([G[j] for j in self._slot])

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        wx, wy, wz = self.vector3("twist (vx vy vz)", twist)
        st = self._state(*self._pxyz(pose))
        rows = self._jrows(st)
        LA = self.LA
        out = []
        for i, (q, cq, sq, sx, sy, sz, d) in enumerate(st):
            c, s = self._cs[i]
            J0, J1, J2 = rows[i]
            qd = J0 * wx + J1 * wy + J2 * wz
            bx, by, bz = c * LA * sq, s * LA * sq, LA * cq          # b_i in the base frame
            sdx, sdy, sdz = wx + bx * qd, wy + by * qd, wz + bz * qd
            dd = sdx * bx + sdy * by + sdz * bz + LA * (sx * cq - sz * sq) * qd      # d/dt (s . b)
            out.append((-(sdx + dd * J0) / d, -(sdy + dd * J1) / d, -(sdz + dd * J2) / d))
        return np.array(out)

    def inverse_batch(self, positions, rotations):
        """Vectorized IK of N plate poses: (q (N, 12), valid (N,)).

        valid = reachable, plate not rotated, every tree-joint limit and the plate
        ball-joint cone. Rows that are geometrically unreachable (or not finite)
        are NaN; rows that only break a limit keep their joint values.
        """
        P, Rm, usable = self.checked_batch(positions, rotations)
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
            ok = usable & reach & rot_ok & np.all(np.isfinite(q), axis=1)
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
        st = self._state(*self._pxyz(pose))
        q, cq, sq, sx, sy, sz, d = (np.array(col) for col in zip(*st))
        c, s, LA = self._c, self._s, self.LA
        Sx = np.column_stack([c * sx - s * sy, s * sx + c * sy, sz])
        check_conditioning(Sx, "[s_i^T] (forward singularity: the forearms are coplanar)")
        Jc = np.linalg.solve(Sx, np.diag(-d))
        xd = Jc @ qdot
        b = np.column_stack([c * LA * sq, s * LA * sq, LA * cq])
        bd = np.column_stack([c * LA * cq, s * LA * cq, -LA * sq]) * qdot[:, None]
        sd = xd[None, :] + b * qdot[:, None]
        diag = np.einsum("ij,ij->i", sd, b) + np.einsum("ij,ij->i", Sx, bd)
        return -np.linalg.solve(Sx, sd @ Jc + np.diag(diag))
