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

Speed: every single-pose method and the dynamics' inner calls (``tree_state``) take q, v, a, J and G from one
compiled call (planar_redundant_motion, the input checks inside, errors as a status), ``inverse_batch``
from the same kernel looped over the poses; the tests hold it to Wu's formulas, the generic closure model and
finite differences.
"""

from __future__ import annotations

import math

import numpy as np

from ..description.loader import ClosedLoopModel
from ..errors import InvalidModelError, JointLimitError, UnreachablePoseError
from .base import NO_VECTOR, JointMotion, ParallelKinematics, fast_inputs
from .planar_redundant_kernels import (PR_INPUT, PR_LINK, PR_OK, PR_PLANE, PR_STRUT, planar_redundant_batch,
                                       planar_redundant_motion)
from .task_space import Pose, TaskSpace

_PLANE_TOL = 1e-9     # planar_redundant_kernels.planar_redundant_motion's tolerance of |z| and |R_zz - 1|
#: no G for planar_redundant_kernels.planar_redundant_motion
_NO_G = np.zeros((0, 3))


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
        self._lo_t = np.asarray(self.lower, float) - 1e-12
        self._hi_t = np.asarray(self.upper, float) + 1e-12
        self._cut_names = [f"leg{i}" for i in (1, 2)] + [f"leg{s + 2}" for s in self.struts]
        full_tree = self.i_slider + self.i_len
        self._act_tree = np.array([full_tree[r] for r in self._act_rows_list], dtype=np.int64)
        # planar_redundant_kernels.planar_redundant_motion's constants (its docstring)
        self._geo = np.array([self.l, self.l5, self.l6, *self.cx, self.cw_ratio, self.cw_offset, task.alpha_sign,
                              self.cut_link[0] - 1e-12, self.cut_link[1] + 1e-12, self.cut_strut[0] - 1e-12,
                              self.cut_strut[1] + 1e-12, *self._lo_t, *self._hi_t])
        self._idx = np.array([len(self.struts), self.na, *self.i_plat, *self.i_slider, *self.i_beta, *self.i_cw,
                              *self.strut_col, *self.i_len, *self.i_phi, *self._act_rows_list], dtype=np.int64)
        for arr in (self._act_tree, self._geo, self._idx, self.act_rows, self._lo_t, self._hi_t):
            arr.setflags(write=False)

    # ---------------------------------------------------------------- helpers
    def check_limits(self, q: np.ndarray) -> None:
        if ((q < self._lo_t) | (q > self._hi_t)).any():
            super().check_limits(q)

    def _xyalpha(self, pose: Pose):
        """(x, y, sin(alpha), cos(alpha)) of an in-plane pose; UnreachablePoseError otherwise (``jacobian_xq``)."""
        p, R = pose.position, pose.rotation
        if abs(p[2]) > _PLANE_TOL or abs(R[2, 2] - 1.0) > _PLANE_TOL:
            self._raise(PR_PLANE, (p[2], R[2, 2]))
        # R = Rz(alpha_sign * alpha): sin(alpha) = alpha_sign * R[1, 0], cos(alpha) = R[0, 0]
        return float(p[0]), float(p[1]), self.task.alpha_sign * float(R[1, 0]), float(R[0, 0])

    def _solve(self, pose, twist, accel, check_limits, want_g=False, validated=False):
        """(q, v, a, J, G) from one compiled pass (planar_redundant_motion: Wu eq. 18-23), the inputs checked
        as by ``validate`` unless ``validated``; v, a None without twist / accel, G None unless ``want_g``, J the
        actuated joints' rows. The errors name the link, strut or joint."""
        if not (validated or fast_inputs(pose, twist, accel, 3)):
            pose, twist, accel = super().validate(pose, twist, accel)
            validated = True
        nv, rates = self.nv, twist is not None
        q, v, a = np.empty(nv), np.empty(nv if rates else 0), np.empty(nv if accel is not None else 0)
        J, G, info = np.empty((self.na, 3)), np.zeros((nv, 3)) if want_g else _NO_G, np.zeros(2)
        status, out_of_range, cut = planar_redundant_motion(
            pose.rotation, pose.position, NO_VECTOR if twist is None else twist, NO_VECTOR if accel is None else accel,
            self._geo, self._idx, check_limits, want_g, not validated, q, v, a, J, G, info)
        if status == PR_INPUT:            # the generic validation names what is wrong (or accepts: then solve)
            return self._solve(*super().validate(pose, twist, accel), check_limits, want_g, True)
        if status != PR_OK:
            self._raise(status, info)
        if out_of_range:
            super().check_limits(q)
        if cut >= 0:
            self._raise_cut(cut, q)
        return q, v if rates else None, a if accel is not None else None, J, G if want_g else None

    def _raise(self, status, info):
        """The UnreachablePoseError of a kernel status PR_PLANE, PR_LINK or PR_STRUT (info: the kernel's)."""
        if status == PR_PLANE:
            raise UnreachablePoseError(f"pose leaves the mechanism plane: z = {info[0]:.6g} m, R_zz = {info[1]:.12g} "
                                       f"(planar robot: z = 0 and a rotation about z, tolerance {_PLANE_TOL:g})")
        if status == PR_LINK:
            i = int(info[0])
            raise UnreachablePoseError(
                f"link{i + 1}: horizontal distance |x - x_D{i + 1}| = {abs(info[1]):.6g} m from column {i + 1} "
                f"must be < l = {self.l:.6g} m")
        if status == PR_STRUT:
            raise UnreachablePoseError(f"strut{int(info[0]) + 1}: length |E{int(info[0]) + 1}B| = {info[1]:.3g} m "
                                       "must be > 0")

    def _raise_cut(self, m, q):
        """JointLimitError for cut joint m (0, 1 the links, 2 + k strut k) outside its range."""
        alpha = q[self.i_plat[2]]
        if m < 2:
            g = math.remainder(q[self.i_beta[m]] - alpha, 2 * math.pi)
            raise JointLimitError(f"cut joint '{self._cut_names[m]}' (link{m + 1}-platform angle beta_{m + 1} - "
                                  f"alpha at A1) = {g:.6g} rad is outside its range [{self.cut_link[0]:.6g}, "
                                  f"{self.cut_link[1]:.6g}]")
        s = self.struts[m - 2]
        g = math.remainder(q[self.i_phi[m - 2]] - alpha, 2 * math.pi)
        raise JointLimitError(f"cut joint 'leg{s + 2}' (strut{s}-platform angle phi_{s} - alpha at B) = "
                              f"{g:.6g} rad is outside its range [{self.cut_strut[0]:.6g}, {self.cut_strut[1]:.6g}]")

    def cut_joint_limits(self) -> tuple[tuple, np.ndarray, np.ndarray]:
        """The planar cut joints on the platform: leg1, leg2 (link-platform angle beta_i - alpha at A1)
        and leg<s + 2> (strut-platform angle phi_s - alpha at B), as ``_raise_cut``."""
        n = len(self.struts)
        return (tuple(self._cut_names), np.array([self.cut_link[0]] * 2 + [self.cut_strut[0]] * n),
                np.array([self.cut_link[1]] * 2 + [self.cut_strut[1]] * n))

    def cut_joint_angles(self, pose: Pose) -> np.ndarray:
        q = self._solve(pose, None, None, False)[0]
        alpha = q[self.i_plat[2]]
        return np.array([math.remainder(q[i] - alpha, 2 * math.pi) for i in self.i_beta + self.i_phi])

    # ---------------------------------------------------------------- family interface
    def inverse(self, pose: Pose, twist=None, accel=None, check_limits: bool = True,
                jacobian: bool = False) -> JointMotion:
        q, v, a, J, _ = self._solve(pose, twist, accel, check_limits)
        return JointMotion(q, v, a, J if jacobian else None)

    def motion_and_joint_jacobian(self, pose: Pose, twist, accel=None):
        """As the base class's, q, v, a and G from one compiled pass."""
        q, v, a, _, G = self._solve(pose, twist, accel, False, want_g=True)
        return JointMotion(q, v, a), G

    def tree_state(self, pose: Pose, twist, accel=None):
        q, v, a, _, G = self._solve(pose, twist, accel, False, want_g=True, validated=True)
        return q, v, a, G

    def tree_motion(self, pose: Pose, twist):
        """(q, v) from one compiled pass, the inputs already validated."""
        return self._solve(pose, twist, None, False, validated=True)[:2]

    def actuated(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False)[0][self._act_tree]

    def jacobian(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False)[3]

    def actuated_and_jacobian(self, pose: Pose):
        """(q_a, J) from one compiled pass: the FK Newton step needs both (no input checks: the pose comes from
        ``validate``)."""
        q, _, _, J, _ = self._solve(pose, None, None, False, validated=True)
        return q[self._act_tree], J

    def joint_jacobian(self, pose: Pose) -> np.ndarray:
        return self._solve(pose, None, None, False, want_g=True)[4]

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """dJ/dt along the twist from the state of one compiled pass: slider rows [tdot_i, 0, 0] with
        tdot_i = l^2 xdot / h_i^3 (eq. 21), strut rows d/dt (u^T W) = phidot n^T W + u^T Wdot,
        Wdot = [[0, 0, l6 sin(alpha) alphadot], [-tdot_i, 0, l6 cos(alpha) alphadot]] (eq. 22)."""
        pose, twist, _ = self.validate_motion(pose, twist)
        q, v, _, _, G = self._solve(pose, twist, None, False, want_g=True, validated=True)
        y, alpha = q[self.i_plat[1]], q[self.i_plat[2]]
        s, c = math.sin(alpha), math.cos(alpha)
        xd, ad = float(twist[0]), float(twist[2])
        l6 = self.l6
        tdot = []
        for i in (0, 1):
            h = y - self.l5 - q[self.i_slider[i]]
            tdot.append(self.l * self.l * xd / h ** 3)
        rows = [[tdot[0], 0.0, 0.0], [tdot[1], 0.0, 0.0]]
        for k, col in enumerate(self.strut_col):
            phi, phid = q[self.i_phi[k]], v[self.i_phi[k]]
            sp, cp = math.sin(phi), math.cos(phi)
            nW = G[self.i_phi[k]] * q[self.i_len[k]]             # n^T W (eq. 22: phidot = n.W xdot / l)
            rows.append([phid * nW[0] - cp * tdot[col], 0.0, phid * nW[2] + sp * l6 * s * ad + cp * l6 * c * ad])
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
        """(q (N, nv), valid (N,)) by one compiled loop of planar_redundant_motion over the poses
        (planar_redundant_batch): the rows of poses out of the plane or out of reach are NaN."""
        P, R, usable = self.checked_batch(positions, rotations)
        Q, valid = np.empty((P.shape[0], self.nv)), np.empty(P.shape[0], dtype=bool)
        planar_redundant_batch(np.ascontiguousarray(P), np.ascontiguousarray(R), np.ascontiguousarray(usable),
                               self._geo, self._idx, Q, valid)
        return Q, valid
