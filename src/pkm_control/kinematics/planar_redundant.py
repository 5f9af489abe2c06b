"""Analytic kinematics of Wu et al.'s 3-DOF planar manipulator with actuation redundancy.

Wu, Wang, Wang, Li, Mechatronics 19 (2009), seed 003, sec. 3 and Fig. 1. Base frame
O-XY with Y vertical; task coordinates (x, y, alpha): A1 = (x, y), Wu's alpha clockwise
positive (``TaskSpace('planar', alpha_sign=-1)``, R = Rz(-alpha)).

For column i at X = c_i (config ``geometry.column_x``):

* slider (eq. 19, '-' root of eq. 20a-b): dx_i = x - c_i, h_i = sqrt(l^2 - dx_i^2) = l cos(beta_i),
  q_i = y - l5 - h_i, beta_i = atan2(dx_i, h_i); E_i = (c_i, q_i), D_i = E_i + (0, l5);
* strut (eq. 18, 20c-d): B = (x - l6 sin(alpha), y - l6 cos(alpha)), r_i = B - E_i = l_i (sin phi_i, cos phi_i);
* counterweight: q_cw,i = ratio q_i + offset (coupling closure).

Rates: qdot_i = ydot + t_i xdot (t_i = tan beta_i, eq. 21), betadot_i = xdot / h_i (eq. 23),
rdot_i = W_i xdot with W_i = [[1, 0, -l6 cos(alpha)], [-t_i, 0, l6 sin(alpha)]],
ldot_i = u_i . rdot_i, phidot_i = n_i . rdot_i / l_i (u = (sin phi, cos phi), n = (cos phi, -sin phi)), eq. 22.
Accelerations are the exact time derivatives of these (no finite differences).
"""

from __future__ import annotations

import math

import numpy as np

from ..description.loader import ClosedLoopModel
from ..errors import MAGNITUDE_LIMIT, InvalidModelError, JointLimitError, UnreachablePoseError
from .base import JointMotion, ParallelKinematics
from .task_space import Pose, TaskSpace

_PLANE_TOL = 1e-9


def _fast_vec3(v):
    """3 floats with |v|_1 within MAGNITUDE_LIMIT as a tuple, or None (then the base class validates and raises)."""
    if v is None:
        return None
    if type(v) is np.ndarray:
        if v.shape != (3,) or v.dtype != np.float64:
            return None
        v = v.tolist()
    elif type(v) in (list, tuple):
        if len(v) != 3 or not all(type(e) in (float, int) for e in v):
            return None
    else:
        return None
    a, b, c = float(v[0]), float(v[1]), float(v[2])
    return (a, b, c) if abs(a) + abs(b) + abs(c) <= MAGNITUDE_LIMIT else None


class Kinematics(ParallelKinematics):
    """Kinematics of the ``planar_redundant`` robot (variants redundant / nonredundant)."""

    family = "planar_redundant"

    def __init__(self, clm: ClosedLoopModel):
        cfg = clm.spec
        try:
            task = TaskSpace(cfg.task_space, alpha_sign=cfg.alpha_sign)
            geo = cfg.blocks["geometry"]
            self.l = float(geo["l"])
            self.l5 = float(geo["l5"])
            self.l6 = float(geo["l6"])
            self.cx = tuple(float(c) for c in geo["column_x"])
            self.struts = tuple(int(s) for s in cfg.blocks["struts"])
            cw = cfg.blocks["counterweight"]
            self.cw_ratio, self.cw_offset = float(cw["ratio"]), float(cw["offset"])
            cut = cfg.limits["cut_joint"]
            self.cut_link = tuple(float(v) for v in cut["link_platform"])
            self.cut_strut = tuple(float(v) for v in cut["strut_platform"])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidModelError(f"robot '{clm.name}': planar_redundant config incomplete: {exc!r}") from exc
        super().__init__(clm, task)
        if float(geo.get("branch", -1)) != -1:
            raise InvalidModelError("planar_redundant implements the '-' root of Wu eq. 20a-b only (branch: -1)")
        if len(self.cx) != 2 or not set(self.struts) <= {1, 2} or not self.struts:
            raise InvalidModelError(f"planar_redundant: need 2 columns and struts within [1, 2], got "
                                    f"{self.cx}, {self.struts}")
        ji = clm.joint_index
        try:
            self.i_plat = tuple(int(i) for i in clm.platform_idx)
            self.i_slider = tuple(ji[f"slider{i}"] for i in (1, 2))
            self.i_beta = tuple(ji[f"link{i}_beta"] for i in (1, 2))
            self.i_cw = tuple(ji[f"counterweight{i}"] for i in (1, 2))
            self.i_phi = tuple(ji[f"strut{i}_phi"] for i in self.struts)
            self.i_len = tuple(ji[f"strut{i}"] for i in self.struts)
        except KeyError as exc:
            raise InvalidModelError(f"robot '{clm.name}' has no joint {exc.args[0]!r}") from exc
        self.nv = clm.model.nv
        # rows of the "full" actuated vector [q1, q2, l_s for s in struts] -> actuated_joints order
        full = [f"slider{i}" for i in (1, 2)] + [f"strut{i}" for i in self.struts]
        try:
            self.act_rows = np.array([full.index(n) for n in clm.actuated_joints], dtype=int)
        except ValueError as exc:
            raise InvalidModelError(f"planar_redundant: actuated joints {clm.actuated_joints} must be among "
                                    f"{full}") from exc
        self._act_rows_list = [int(r) for r in self.act_rows]
        self.na = len(self.act_rows)
        # strut k belongs to column s-1
        self.strut_col = tuple(s - 1 for s in self.struts)
        # vectorized constants
        self._cx = np.array(self.cx)
        self._scol = np.array(self.strut_col, dtype=int)
        self._lo = np.asarray(self.lower, float)
        self._hi = np.asarray(self.upper, float)
        self._lo_t = self._lo - 1e-12
        self._hi_t = self._hi + 1e-12
        self._cut_names = [f"leg{i}" for i in (1, 2)] + [f"leg{s + 2}" for s in self.struts]

    # ---------------------------------------------------------------- helpers
    def validate(self, pose: Pose, twist=None, accel=None):
        """Same checks and errors as ParallelKinematics.validate, with a fast path.

        The fast path accepts a pose whose arrays are already float64 of the right shape,
        finite, with R orthonormal (|R^T R - I| <= 1e-9) and det R > 0, and a twist /
        acceleration of 3 floats (the position's, twist's and acceleration's |.|_1 within
        MAGNITUDE_LIMIT), using scalar arithmetic; anything else goes through the base
        class, which raises the errors.
        """
        p, R = getattr(pose, "position", None), getattr(pose, "rotation", None)
        if (type(p) is np.ndarray and type(R) is np.ndarray and p.shape == (3,) and R.shape == (3, 3)
                and p.dtype == np.float64 and R.dtype == np.float64 and (accel is None or twist is not None)):
            a, b, c, d, e, f, g, h, i = R.ravel().tolist()
            x0, x1, x2 = p.tolist()
            tw = _fast_vec3(twist)
            ac = _fast_vec3(accel)
            if (math.isfinite(a + b + c + d + e + f + g + h + i) and abs(x0) + abs(x1) + abs(x2) <= MAGNITUDE_LIMIT
                    and (twist is None or tw is not None) and (accel is None or ac is not None)):
                err = max(abs(a * a + d * d + g * g - 1.0), abs(b * b + e * e + h * h - 1.0),
                          abs(c * c + f * f + i * i - 1.0), abs(a * b + d * e + g * h),
                          abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
                det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
                if err <= 1e-9 and det >= 0.0:
                    return pose, tw, ac
        return super().validate(pose, twist, accel)

    def check_limits(self, q: np.ndarray) -> None:
        if ((q < self._lo_t) | (q > self._hi_t)).any():
            super().check_limits(q)

    def _xyalpha(self, pose: Pose):
        """(x, y, sin(alpha), cos(alpha)) of an in-plane pose; UnreachablePoseError otherwise."""
        p, R = pose.position, pose.rotation
        if abs(p[2]) > _PLANE_TOL or abs(R[2, 2] - 1.0) > _PLANE_TOL:
            raise UnreachablePoseError(f"pose leaves the mechanism plane: z = {p[2]:.6g} m, R_zz = {R[2, 2]:.12g} "
                                       f"(planar robot: z = 0 and a rotation about z, tolerance {_PLANE_TOL:g})")
        # R = Rz(alpha_sign * alpha): sin(alpha) = alpha_sign * R[1, 0], cos(alpha) = R[0, 0]
        return float(p[0]), float(p[1]), self.task.alpha_sign * float(R[1, 0]), float(R[0, 0])

    def _geometry(self, x, y, s, c):
        """Scalar closed-form positions; raises UnreachablePoseError."""
        l, l5, l6 = self.l, self.l5, self.l6
        xb, yb = x - l6 * s, y - l6 * c
        dx, h, q, beta = [], [], [], []
        for i in (0, 1):
            d = x - self.cx[i]
            h2 = l * l - d * d
            if h2 <= 0.0:
                raise UnreachablePoseError(
                    f"link{i + 1}: horizontal distance |x - x_D{i + 1}| = {abs(d):.6g} m from column {i + 1} "
                    f"must be < l = {l:.6g} m")
            hh = math.sqrt(h2)
            dx.append(d)
            h.append(hh)
            q.append(y - l5 - hh)
            beta.append(math.atan2(d, hh))
        ex, ey, ln, phi = [], [], [], []
        for k in self.strut_col:
            a, b = xb - self.cx[k], yb - q[k]
            li = math.sqrt(a * a + b * b)
            if li < 1e-9:
                raise UnreachablePoseError(f"strut{k + 1}: length |E{k + 1}B| = {li:.3g} m must be > 0")
            ex.append(a)
            ey.append(b)
            ln.append(li)
            phi.append(math.atan2(a, b))
        return dx, h, q, beta, ex, ey, ln, phi

    def _assemble_q(self, x, y, alpha, q, beta, ln, phi):
        out = np.empty(self.nv)
        ip = self.i_plat
        out[ip[0]], out[ip[1]], out[ip[2]] = x, y, alpha
        for i in (0, 1):
            out[self.i_slider[i]] = q[i]
            out[self.i_beta[i]] = beta[i]
            out[self.i_cw[i]] = self.cw_ratio * q[i] + self.cw_offset
        for k in range(len(self.struts)):
            out[self.i_len[k]] = ln[k]
            out[self.i_phi[k]] = phi[k]
        return out

    def _check_cut(self, alpha, beta, phi):
        for i in (0, 1):
            g = math.remainder(beta[i] - alpha, 2 * math.pi)
            if not (self.cut_link[0] - 1e-12 <= g <= self.cut_link[1] + 1e-12):
                raise JointLimitError(f"cut joint '{self._cut_names[i]}' (link{i + 1}-platform angle beta_{i + 1} - "
                                      f"alpha at A1) = {g:.6g} rad is outside its range [{self.cut_link[0]:.6g}, "
                                      f"{self.cut_link[1]:.6g}]")
        for k, s in enumerate(self.struts):
            g = math.remainder(phi[k] - alpha, 2 * math.pi)
            if not (self.cut_strut[0] - 1e-12 <= g <= self.cut_strut[1] + 1e-12):
                raise JointLimitError(f"cut joint 'leg{s + 2}' (strut{s}-platform angle phi_{s} - alpha at B) = "
                                      f"{g:.6g} rad is outside its range [{self.cut_strut[0]:.6g}, "
                                      f"{self.cut_strut[1]:.6g}]")

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The planar cut joints on the platform: leg1, leg2 (link-platform angle beta_i - alpha at A1)
        and leg<s + 2> (strut-platform angle phi_s - alpha at B), as ``_check_cut``."""
        n = len(self.struts)
        return (tuple(self._cut_names), np.array([self.cut_link[0]] * 2 + [self.cut_strut[0]] * n),
                np.array([self.cut_link[1]] * 2 + [self.cut_strut[1]] * n))

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        x, y, s, c = self._xyalpha(pose)
        alpha = math.atan2(s, c)
        _, _, _, beta, _, _, _, phi = self._geometry(x, y, s, c)
        return np.array([math.remainder(b - alpha, 2 * math.pi) for b in list(beta) + list(phi)])

    def _rows(self, dx, h, ex, ey, ln, s, c):
        """Jacobian rows of the full actuated vector, the beta rates and the strut-angle rows."""
        l6 = self.l6
        t = (dx[0] / h[0], dx[1] / h[1])
        J = [[t[0], 1.0, 0.0], [t[1], 1.0, 0.0]]
        Gphi = []
        for k, col in enumerate(self.strut_col):
            sp, cp = ex[k] / ln[k], ey[k] / ln[k]
            tk = t[col]
            # W = [[1, 0, -l6 c], [-t, 0, l6 s]];  ldot = u.W, phidot = n.W / l
            J.append([sp - cp * tk, 0.0, -l6 * c * sp + l6 * s * cp])
            inv = 1.0 / ln[k]
            Gphi.append([(cp + sp * tk) * inv, 0.0, (-l6 * c * cp - l6 * s * sp) * inv])
        return t, J, Gphi

    # ---------------------------------------------------------------- family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        pose, twist, accel = self.validate(pose, twist, accel)
        x, y, s, c = self._xyalpha(pose)
        alpha = math.atan2(s, c)
        dx, h, q, beta, ex, ey, ln, phi = self._geometry(x, y, s, c)
        qv = self._assemble_q(x, y, alpha, q, beta, ln, phi)
        if check_limits:
            self.check_limits(qv)
            self._check_cut(alpha, beta, phi)
        Jout = v = a = None
        if jacobian or twist is not None:
            t, Jfull, Gphi = self._rows(dx, h, ex, ey, ln, s, c)
            if jacobian:
                Jout = np.array([Jfull[r] for r in self._act_rows_list])
        if twist is not None:
            xd, yd, ad = float(twist[0]), float(twist[1]), float(twist[2])
            v = np.empty(self.nv)
            ip = self.i_plat
            v[ip[0]], v[ip[1]], v[ip[2]] = xd, yd, ad
            qd = [yd + t[0] * xd, yd + t[1] * xd]
            bd = [xd / h[0], xd / h[1]]
            for i in (0, 1):
                v[self.i_slider[i]] = qd[i]
                v[self.i_beta[i]] = bd[i]
                v[self.i_cw[i]] = self.cw_ratio * qd[i]
            ld, pd = [], []
            for k in range(len(self.struts)):
                row, grow = Jfull[2 + k], Gphi[k]
                ld.append(row[0] * xd + row[2] * ad)
                pd.append(grow[0] * xd + grow[2] * ad)
                v[self.i_len[k]] = ld[k]
                v[self.i_phi[k]] = pd[k]
            if accel is not None:
                xdd, ydd, add = float(accel[0]), float(accel[1]), float(accel[2])
                l2 = self.l * self.l
                l6 = self.l6
                a = np.empty(self.nv)
                a[ip[0]], a[ip[1]], a[ip[2]] = xdd, ydd, add
                qdd = []
                for i in (0, 1):
                    h3 = h[i] ** 3
                    qa = ydd + t[i] * xdd + l2 * xd * xd / h3
                    qdd.append(qa)
                    a[self.i_slider[i]] = qa
                    a[self.i_beta[i]] = xdd / h[i] + dx[i] * xd * xd / h3
                    a[self.i_cw[i]] = self.cw_ratio * qa
                # r_i'' = B'' - (0, q_i'')
                bxdd = xdd - l6 * c * add + l6 * s * ad * ad
                bydd = ydd + l6 * s * add + l6 * c * ad * ad
                for k, col in enumerate(self.strut_col):
                    sp, cp = ex[k] / ln[k], ey[k] / ln[k]
                    rx, ry = bxdd, bydd - qdd[col]
                    a[self.i_len[k]] = sp * rx + cp * ry + ln[k] * pd[k] * pd[k]
                    a[self.i_phi[k]] = (cp * rx - sp * ry - 2.0 * ld[k] * pd[k]) / ln[k]
        return JointMotion(qv, v, a, Jout)

    def actuated(self, pose: Pose) -> np.ndarray:
        x, y, s, c = self._xyalpha(self.validate(pose)[0])
        _, _, q, _, _, _, ln, _ = self._geometry(x, y, s, c)
        full = q + ln
        return np.array([full[r] for r in self._act_rows_list])

    def jacobian(self, pose: Pose) -> np.ndarray:
        x, y, s, c = self._xyalpha(self.validate(pose)[0])
        dx, h, _, _, ex, ey, ln, _ = self._geometry(x, y, s, c)
        _, Jfull, _ = self._rows(dx, h, ex, ey, ln, s, c)
        return np.array([Jfull[r] for r in self._act_rows_list])

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        pose = self.validate(pose)[0]
        x, y, s, c = self._xyalpha(pose)
        dx, h, _, _, ex, ey, ln, _ = self._geometry(x, y, s, c)
        t, Jfull, Gphi = self._rows(dx, h, ex, ey, ln, s, c)
        G = np.zeros((self.nv, 3))
        G[list(self.i_plat)] = self.task.platform_rate_matrix(pose)
        for i in (0, 1):
            G[self.i_slider[i]] = Jfull[i]
            G[self.i_beta[i], 0] = 1.0 / h[i]
            G[self.i_cw[i]] = [self.cw_ratio * t[i], self.cw_ratio, 0.0]
        for k in range(len(self.struts)):
            G[self.i_len[k]] = Jfull[2 + k]
            G[self.i_phi[k]] = Gphi[k]
        return G

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        pose, twist, _ = self.validate_motion(pose, twist)
        x, y, s, c = self._xyalpha(pose)
        dx, h, _, _, ex, ey, ln, _ = self._geometry(x, y, s, c)
        t, Jfull, Gphi = self._rows(dx, h, ex, ey, ln, s, c)
        xd, ad = float(twist[0]), float(twist[2])
        l6 = self.l6
        tdot = [self.l * self.l * xd / h[i] ** 3 for i in (0, 1)]
        rows = [[tdot[0], 0.0, 0.0], [tdot[1], 0.0, 0.0]]
        for k, col in enumerate(self.strut_col):
            sp, cp = ex[k] / ln[k], ey[k] / ln[k]
            tk = t[col]
            phid = Gphi[k][0] * xd + Gphi[k][2] * ad
            # d/dt (u^T W) = phidot n^T W + u^T Wdot, Wdot = [[0, 0, l6 s ad], [-tdot, 0, l6 c ad]]
            nW = (cp + sp * tk, 0.0, -l6 * c * cp - l6 * s * sp)
            rows.append([phid * nW[0] - cp * tdot[col], 0.0,
                         phid * nW[2] + sp * l6 * s * ad + cp * l6 * c * ad])
        return np.array([rows[r] for r in self._act_rows_list])

    def jacobian_xq(self, pose: Pose):
        """J_q qdot_a = J_x xdot from the closure equations (no division, finite at singularities).

        slider i:  h_i qdot_i = dx_i xdot + h_i ydot                              (|A1 - D_i| = l)
        strut k:   l_k ldot_k + ey_k qdot_col = r_k . Bdot                        (|B - E_k| = l_k)
        det J_q = h_1 h_2 prod(l_k): zero when a link is horizontal (beta_i = +-90 deg).
        """
        x, y, s, c = self._xyalpha(self.validate(pose)[0])
        l, l6 = self.l, self.l6
        dx = [x - self.cx[0], x - self.cx[1]]
        h = [math.sqrt(max(l * l - d * d, 0.0)) for d in dx]
        if any(l * l - d * d < 0.0 for d in dx):
            raise UnreachablePoseError(f"link horizontal distances {dx} exceed l = {l:.6g} m")
        q = [y - self.l5 - hh for hh in h]
        xb, yb = x - l6 * s, y - l6 * c
        Jxf = [[dx[0], h[0], 0.0], [dx[1], h[1], 0.0]]
        n = 2 + len(self.struts)
        Jqf = np.zeros((n, n))
        Jqf[0, 0], Jqf[1, 1] = h[0], h[1]
        for k, col in enumerate(self.strut_col):
            ex, ey = xb - self.cx[col], yb - q[col]
            Jxf.append([ex, ey, -l6 * c * ex + l6 * s * ey])
            Jqf[2 + k, 2 + k] = math.sqrt(ex * ex + ey * ey)
            Jqf[2 + k, col] = ey
        r = self.act_rows
        Jx = np.array(Jxf)[r]
        Jq = Jqf[np.ix_(r, r)]
        return Jx, Jq

    def inverse_batch(self, positions, rotations):
        P, R, usable = self.checked_batch(positions, rotations)
        N = P.shape[0]
        sa = self.task.alpha_sign
        x, y = P[:, 0], P[:, 1]
        s = sa * R[:, 1, 0]
        c = R[:, 0, 0]
        ok = (np.abs(P[:, 2]) <= _PLANE_TOL) & (np.abs(R[:, 2, 2] - 1.0) <= _PLANE_TOL)
        ok &= usable
        l, l5, l6 = self.l, self.l5, self.l6
        dx = x[:, None] - self._cx[None, :]                       # (N, 2)
        h2 = l * l - dx * dx
        ok &= np.all(h2 > 0.0, axis=1)
        h = np.sqrt(np.maximum(h2, 0.0))
        q = y[:, None] - l5 - h
        beta = np.arctan2(dx, h)
        xb, yb = x - l6 * s, y - l6 * c
        ex = xb[:, None] - self._cx[self._scol][None, :]          # (N, ns)
        ey = yb[:, None] - q[:, self._scol]
        ln = np.sqrt(ex * ex + ey * ey)
        ok &= np.all(ln > 1e-9, axis=1)
        phi = np.arctan2(ex, ey)
        alpha = np.arctan2(s, c)
        out = np.empty((N, self.nv))
        out[:, list(self.i_plat)] = np.column_stack([x, y, alpha])
        out[:, list(self.i_slider)] = q
        out[:, list(self.i_beta)] = beta
        out[:, list(self.i_cw)] = self.cw_ratio * q + self.cw_offset
        out[:, list(self.i_len)] = ln
        out[:, list(self.i_phi)] = phi
        ok &= np.all((out >= self._lo - 1e-12) & (out <= self._hi + 1e-12), axis=1)
        g = np.remainder(beta - alpha[:, None] + np.pi, 2 * np.pi) - np.pi
        ok &= np.all((g >= self.cut_link[0] - 1e-12) & (g <= self.cut_link[1] + 1e-12), axis=1)
        g = np.remainder(phi - alpha[:, None] + np.pi, 2 * np.pi) - np.pi
        ok &= np.all((g >= self.cut_strut[0] - 1e-12) & (g <= self.cut_strut[1] + 1e-12), axis=1)
        return out, ok
