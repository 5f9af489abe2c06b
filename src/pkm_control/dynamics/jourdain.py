"""Abdellatif's virtual-power (Jourdain) dynamics of PaLiDA: struts as MDH serial chains.

H. Abdellatif, M. Grotjahn, B. Heimann, "High efficient dynamics calculation approach for
computed-force control of robots with parallel structures" (seed 000), sec. II-IV. An
independent implementation of the paper's equations: the kinematics object is used only to
validate the input and to check reachability and joint limits (``kin.validate``,
``kin.inverse``); the strut joint positions, rates and accelerations (eq. 29-31 and their time
derivatives), the MDH recursion (eq. 4-10) and the dynamics (eq. 11-28, 32) are written out here.

Method. Generalized velocity theta_dot = (v_E, omega_E) in the base frame (the task twist).
Every strut j is a serial MDH chain A_j -> B_j whose end point moves with the platform (eq. 1-3);
the body velocities, accelerations (gravity included: v_0' = -g) and Jacobians
J_T = d v_i / d theta_dot, J_R = d omega_i / d theta_dot follow recursively (eq. 5-10). The
virtual power of all bodies gives the generalized rigid-body force (eq. 14)

    tau_rb = sum_i J_Ti^T (m_i v_i' + omega_i'~ s_i + omega_i~ omega_i~ s_i)
                 + J_Ri^T (I_i omega_i' + omega_i~ I_i omega_i + s_i~ v_i'),

friction of every joint is mapped by Q_f -> (d qdot / d theta_dot)^T Q_f (eq. 13), and the
actuator forces follow from the power balance (eq. 11-12) Q_a = (d qdot_a / d theta_dot)^-T tau
(the paper's J^-1 = d qdot_a / d theta_dot is the kinematics' J; ``J^T`` in eq. 12 is J^-T here).

Parameter-linear form (eq. 15-20): tau_rb = sum_i H_i Omega_i p_i with H_i = [J_Ti^T J_Ri^T],
p_i = [I_xx I_xy I_xz I_yy I_yz I_zz s_x s_y s_z m] (inertia about the frame origin, first
moment m r_C, both in the MDH body frame), Omega_i of eq. 19; friction eq. 24-28 with eq. 32:
Q_f = r1 sign(qdot) + r2 qdot; PaLiDA's 14 friction parameters (sec. IV-A): r1, r2 of each drive
l_j, one r1 for all alpha_j and one for all beta_j. Eq. 4's rotation is Craig's MDH matrix (the
printed first row lost the minus of -s_theta).

MDH frames of a strut (Fig. 4 is not in the text; these are the frames that give Table I):

    frame 0  at A_j, fixed: frame 1 at alpha = 0
    frame 1  (cardan ring, body 1)  theta_1 = alpha_j,          d = 0,   alpha = 0,     a = 0
    frame 2  (stator, body 2)       theta_2 = beta_j + pi/2,    d = 0,   alpha = +pi/2, a = 0
    frame 3  (slider, body 3)       theta_3 = 0,                d = l_j, alpha = -pi/2, a = 0

z_1 is the alpha axis, z_2 the beta axis, y_2 = z_3 the strut direction A_j -> B_j; frame 3 has
its origin at B_j. In the URDF link frames (urdf/hexapod_ups.xacro: ring, cylinder, piston; the
same origins) the MDH axes are x1 = z, y1 = -x, z1 = -y; x2 = -y, y2 = -z, z2 = x;
x3 = -y, y3 = -x, z3 = -z. The config's inertial data (mass, com, inertia about the com in the
link frame) are turned into p_i in these frames (parallel-axis theorem + rotation), so the model
uses exactly the numbers of the URDF.

Base parameters (Table I), under the paper's modelling assumptions:
 * identical struts (one parameter set for the 6 rings, stators and sliders);
 * the ring's centre of mass on the cardan centre A_j (s_x1 = s_y1 = 0);
 * stator and slider rotationally symmetric about the strut axis: centre of mass on the axis
   (s_x2 = s_z2 = 0, s_x3 = s_y3 = 0) and no products of inertia in the MDH frames;
 * platform: centre of mass on z_E, no products of inertia in E;
 * the platform anchors b_j symmetric: sum b_j = (0, 0, sum b_zj), sum b_j b_j^T diagonal
   (PaLiDA's 3-fold layout), so that the slider masses (points at B_j) group with the platform
   by Steiner's law with diagonal terms only.
Then tau = Y_base p_base with the 10 rigid-body parameters of Table I and the 14 friction ones.
``assumption_residuals`` reports how far a config is from these assumptions; the fast path uses
the base parameters when they hold (else the standard ones, exact for any config).

Fast path (computed-force control, simulation): ``inverse_dynamics`` (alias
``inverse_dynamics_fast``), ``inverse_dynamics_batch``, ``mass_matrix``, ``gravity_vector``,
``forward_dynamics`` and ``rk4_step`` run small compiled kernels (numba, pure Python if numba is
missing) with the same equations in recursive form: per strut the position level once (eq. 1,
29-31), then per motion the joint forces Q = d(v, omega)/d qdot^T (f, n) of the MDH chain (eq.
9-10 factored as J_T = (d v / d qdot)(d qdot / d theta_dot)), then (d qdot / d theta_dot)^T Q
(eq. 12-13) and a 6 x 6 Gaussian elimination for J^-T (as the paper, sec. IV-B). The forward
dynamics evaluates the same strut and platform terms for 7 motions at one pose, h (twist, gravity,
friction) and M e_k (eq. 14 is linear in the acceleration), and solves M xddot = J^T tau - h;
``rk4_step`` is a whole RK4 step of ``simulation.ReducedSimulator`` (its platform-joint
coordinates and 4 stages) in one call. Friction: sign(qdot) of eq. 32, or tanh(qdot / sign_eps)
for sign_eps > 0 (the simulator's smoothing, as the engine's ``sign_eps``).
``inverse_dynamics_reference`` / ``mass_matrix_reference`` / ``regressor`` are the numpy path with
the explicit Jacobians of eq. 9-10 and the standard parameters; the tests hold all of them to the
generic engine. Pure Python cannot reach 30 us here (the kernel's ~2000 scalar operations cost
~0.3 ms interpreted), hence numba.
"""

from __future__ import annotations

import copy
import math

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, SingularConfigurationError,
                      UnreachablePoseError, check_number, check_vector)
from ..kinematics.analysis import check_conditioning
from ..kinematics.kernels import rigid_point_motion
from ..kinematics.task_space import Pose, rpy_to_matrix
from . import formulations
from .point_contact import NO_SURFACES, _contact_wrench

try:  # the fast path is compiled when numba is available
    import numba
except ImportError:  # pragma: no cover - numba is in requirements.txt
    numba = None

_ROBOT = "palida"
#: parameter order of one body, eq. 16-17: p_i = [I_diamond, s, m]
PARAM_KEYS = ("I_xx", "I_xy", "I_xz", "I_yy", "I_yz", "I_zz", "s_x", "s_y", "s_z", "m")
BODIES = ("1", "2", "3", "E")          # ring, stator, slider, platform (the paper's indices)
#: MDH axes (columns x_i, y_i, z_i) in the URDF link frame of ring, cylinder, piston
MDH_AXES = {
    "1": np.array([[0.0, -1.0, 0.0], [0.0, 0.0, -1.0], [1.0, 0.0, 0.0]]),
    "2": np.array([[0.0, 0.0, 1.0], [-1.0, 0.0, 0.0], [0.0, -1.0, 0.0]]),
    "3": np.array([[0.0, -1.0, 0.0], [-1.0, 0.0, 0.0], [0.0, 0.0, -1.0]]),
    "E": np.eye(3),
}
_URDF_LINK = {"1": "ring", "2": "cylinder", "3": "piston"}
#: Table I: the 10 base rigid-body parameters (name, formula as printed)
TABLE_I = (
    ("p_rb1", "I_zz1 + I_yy2 + I_zz3"),
    ("p_rb2", "I_xx2 + I_xx3 - I_yy2 - I_zz3"),
    ("p_rb3", "I_zz2 + I_yy3"),
    ("p_rb4", "s_y2"),
    ("p_rb5", "s_z3"),
    ("p_rb6", "I_xxE + m_3 sum_j (r_Byj^2 + r_Bzj^2)"),
    ("p_rb7", "I_yyE + m_3 sum_j (r_Bxj^2 + r_Bzj^2)"),
    ("p_rb8", "I_zzE + m_3 sum_j (r_Bxj^2 + r_Byj^2)"),
    ("p_rb9", "s_zE + m_3 sum_j r_Bzj"),
    ("p_rb10", "m_E + 6 m_3"),
)
#: standard parameter kept as the representative column of each base parameter
_TABLE_I_COLUMN = ("I_zz1", "I_xx2", "I_zz2", "s_y2", "s_z3", "I_xxE", "I_yyE", "I_zzE", "s_zE", "m_E")
_GIMBAL_EPS = 1e-9
#: status codes of the compiled kernels (0: ok)
GIMBAL_LOCK, OUT_OF_LIMITS, SINGULAR, EULER_SINGULAR, DIVERGED, NOT_FINITE = 1, 2, 3, 4, 5, 6


def pname(key, body) -> str:
    """Paper-style name of a body parameter: I_xx1, s_y2, m_3, I_zzE, m_E."""
    return f"m_{body}" if key == "m" else f"{key}{body}"


def skew(a):
    return np.array([[0.0, -a[2], a[1]], [a[2], 0.0, -a[0]], [-a[1], a[0], 0.0]])


def mdh_transform(theta, d, alpha, a):
    """(R^{i-1}_i, r^{i-1}_i) of eq. 4 (Craig's modified Denavit-Hartenberg)."""
    ct, st, ca, sa = math.cos(theta), math.sin(theta), math.cos(alpha), math.sin(alpha)
    R = np.array([[ct, -st, 0.0], [st * ca, ct * ca, -sa], [st * sa, ct * sa, ca]])
    return R, np.array([a, -d * sa, d * ca])


def mdh_parameters(inertial, axes) -> np.ndarray:
    """p_i (eq. 17) in a frame with the given axes (columns, link coordinates) and the link origin,
    from the config's {mass, com, inertia: [ixx, iyy, izz, ixy, ixz, iyz] about the com}."""
    m = float(inertial["mass"])
    c = np.asarray(inertial["com"], float)
    ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in inertial["inertia"])
    Ic = np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])
    Io = Ic + m * (c @ c * np.eye(3) - np.outer(c, c))        # parallel-axis theorem
    I = axes.T @ Io @ axes
    s = m * (axes.T @ c)
    return np.array([I[0, 0], I[0, 1], I[0, 2], I[1, 1], I[1, 2], I[2, 2], s[0], s[1], s[2], m])


def mdh_to_link_map(axes) -> np.ndarray:
    """T (10 x 10): pinocchio-order parameters in the link frame = T @ paper-order parameters in the
    MDH frame (same origin): m, m c = C s, I_link = C I C^T."""
    T = np.zeros((10, 10))
    T[0, 9] = 1.0
    T[1:4, 6:9] = axes
    pin_idx = {(0, 0): 4, (0, 1): 5, (1, 1): 6, (0, 2): 7, (1, 2): 8, (2, 2): 9}
    paper_idx = {(0, 0): 0, (0, 1): 1, (0, 2): 2, (1, 1): 3, (1, 2): 4, (2, 2): 5}
    for (a, b), k in pin_idx.items():
        for (c, d), col in paper_idx.items():
            # I_link[a, b] = sum_cd axes[a, c] I[c, d] axes[b, d] with I symmetric
            coef = axes[a, c] * axes[b, d] + (axes[a, d] * axes[b, c] if c != d else 0.0)
            T[k, col] += coef
    return T


def _omega_matrix(w, wd, vd):
    """Omega_i of eq. 19 (6 x 10) for p_i = [I_diamond, s, m]."""
    O = np.zeros((6, 10))
    ws, wds = skew(w), skew(wd)
    O[:3, 6:9] = wds + ws @ ws
    O[:3, 9] = vd

    def star(u):            # eq. 15: u^* I_diamond = I u
        return np.array([[u[0], u[1], u[2], 0, 0, 0], [0, u[0], 0, u[1], u[2], 0], [0, 0, u[0], 0, u[1], u[2]]])

    O[3:, :6] = star(wd) + ws @ star(w)
    O[3:, 6:9] = -skew(vd)
    return O


class Formulation(formulations.Formulation):
    """Abdellatif's Jourdain / virtual-power dynamics of ``palida`` (immutable after construction)."""

    method = "jourdain"
    paper = "Abdellatif, Grotjahn, Heimann, seed 000"
    models_friction = True          # eq. 24-28, 32: friction in every joint (14 parameters)

    def __init__(self, dyn, gravity=None):
        if isinstance(dyn, str):
            from . import robot_dynamics
            dyn = robot_dynamics(dyn)
        self.dyn = dyn
        self.kin = kin = dyn.kin
        clm = kin.model
        if clm.name != _ROBOT:
            raise InvalidModelError(f"the Jourdain formulation is Abdellatif's model of '{_ROBOT}', "
                                    f"not of '{clm.name}'")
        cfg = clm.spec
        if gravity is None:
            gravity = getattr(dyn, "gravity", None)
        self.gravity = check_vector("gravity", cfg.gravity if gravity is None else gravity, 3)
        try:
            self._A = np.array(cfg.blocks["base"]["anchors"], float)
            self._RS = np.stack([rpy_to_matrix(*r) for r in cfg.blocks["base"]["leg_frame_rpy"]])
            self._Bp = np.array(cfg.blocks["platform"]["anchors"], float)
            legs = cfg.blocks["legs"]
            self.standard = {b: mdh_parameters(legs[_URDF_LINK[b]]["inertial"], MDH_AXES[b]) for b in "123"}
            self.standard["E"] = mdh_parameters(cfg.blocks["platform"]["inertial"], MDH_AXES["E"])
            fr = cfg.friction
        except (KeyError, TypeError) as exc:
            raise InvalidModelError(f"palida config lacks {exc} (needed by the Jourdain formulation)") from exc
        self.n = len(self._A)
        if self.n != 6:
            raise InvalidModelError(f"Abdellatif's model (sec. IV-A) has 6 struts, the config has {self.n}")
        # 14 friction parameters (eq. 25-27, 32)
        self.friction_names = tuple([f"r1_l{j + 1}" for j in range(6)] + [f"r2_l{j + 1}" for j in range(6)]
                                    + ["r1_alpha", "r1_beta"])
        self.friction_values = friction_parameters(fr)
        # the strut base frame 0 (= frame 1 at alpha = 0) in base coordinates
        self._R0 = np.einsum("kij,jl->kil", self._RS, MDH_AXES["1"])
        self.standard_names = tuple(pname(k, b) for b in BODIES for k in PARAM_KEYS) + self.friction_names
        self.standard_values = np.concatenate([self.standard[b] for b in BODIES] + [self.friction_values])
        self.base_names = tuple(n for n, _ in TABLE_I) + self.friction_names
        self.base_formulas = tuple(f for _, f in TABLE_I) + self.friction_names
        self.base_values = np.concatenate([self._table_i_values(), self.friction_values])
        self.assumption_residuals = self._assumption_residuals()
        self.table_i_exact = max(self.assumption_residuals.values()) <= 1e-9
        self._base_cols = np.array([self.standard_names.index(n) for n in _TABLE_I_COLUMN]
                                   + [40 + k for k in range(14)])
        # fast path: kernel arrays (read-only), base parameters where Table I is exact
        lo, hi = kin.lower, kin.upper
        ji = clm.joint_index
        lim = []
        for j in range(6):
            for name in ("alpha", "beta", "prismatic"):
                k = ji[f"leg{j + 1}_{name}"]
                lim += [lo[k] - 1e-12, hi[k] + 1e-12]
        axes = np.array(cfg.blocks["platform"]["anchor_axes"], float)
        self._geo = np.ascontiguousarray(np.hstack([
            self._A, self._RS.reshape(6, 9), self._Bp, axes / np.linalg.norm(axes, axis=1)[:, None],
            np.array(lim).reshape(6, 6)]))                   # (6, 24)
        self._cos_cone = math.cos(float(cfg.limits["spherical_joint_max_angle"]))
        self._geo_free = self._geo.copy()                    # limits lifted (check_limits=False)
        self._geo_free[:, 18:24] = [-np.inf, np.inf, -np.inf, np.inf, -np.inf, np.inf]
        self._kparams = self._kernel_parameters(self.base_values if self.table_i_exact else None)
        self._no_stops = self.end_stop_table(None)
        for arr in (self._A, self._RS, self._Bp, self._R0, self.standard_values, self.base_values,
                    self.friction_values, self._geo, self._geo_free, self._kparams, self._base_cols, self.gravity,
                    *self.standard.values()):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ parameters
    def _table_i_values(self) -> np.ndarray:
        """Table I evaluated from the config's numbers."""
        P = {pname(k, b): v for b in BODIES for k, v in zip(PARAM_KEYS, self.standard[b])}
        m3 = P["m_3"]
        bx, by, bz = self._Bp.T
        return np.array([
            P["I_zz1"] + P["I_yy2"] + P["I_zz3"],
            P["I_xx2"] + P["I_xx3"] - P["I_yy2"] - P["I_zz3"],
            P["I_zz2"] + P["I_yy3"],
            P["s_y2"],
            P["s_z3"],
            P["I_xxE"] + m3 * np.sum(by ** 2 + bz ** 2),
            P["I_yyE"] + m3 * np.sum(bx ** 2 + bz ** 2),
            P["I_zzE"] + m3 * np.sum(bx ** 2 + by ** 2),
            P["s_zE"] + m3 * np.sum(bz),
            P["m_E"] + 6 * m3,
        ])

    def _assumption_residuals(self) -> dict:
        """Relative size of every term that Table I assumes zero (see the module docstring)."""
        P = {pname(k, b): v for b in BODIES for k, v in zip(PARAM_KEYS, self.standard[b])}
        inertia = max(abs(P[f"I_{a}{b}"]) for a in ("xx", "yy", "zz") for b in BODIES)
        moment = max(abs(P[f"s_{a}{b}"]) for a in "xyz" for b in BODIES) or 1.0
        out = {k: abs(P[k]) / moment for k in ("s_x1", "s_y1", "s_x2", "s_z2", "s_x3", "s_y3", "s_xE", "s_yE")}
        out.update({k: abs(P[k]) / inertia for b in "23E" for k in (f"I_xy{b}", f"I_xz{b}", f"I_yz{b}")})
        B = self._Bp
        lever = np.abs(B).max()
        out["sum b_x, b_y"] = np.abs(B[:, :2].sum(axis=0)).max() / lever
        S = B.T @ B
        out["sum b b^T off-diagonal"] = max(abs(S[0, 1]), abs(S[0, 2]), abs(S[1, 2])) / lever ** 2
        return out

    def parameters(self):
        """(names, values): the paper's standard parameter vector (eq. 17, 25): p_1, p_2, p_3 of the
        identical struts, p_E, then the 14 friction parameters."""
        return self.standard_names, self.standard_values.copy()

    def base_parameters(self):
        """(names, formulas, values): Table I's 10 rigid-body base parameters + 14 friction."""
        return self.base_names, self.base_formulas, self.base_values.copy()

    # ------------------------------------------------------------------ kinematics (eq. 1-10, 29-31)
    def _check(self, pose, twist, accel, check_limits=True):
        if twist is None or accel is None:
            raise InvalidInputError("inverse dynamics needs a twist and an acceleration")
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        self.kin.inverse(pose, check_limits=check_limits)   # reachability, joint limits, spherical cones
        return pose, twist, accel

    def _struts(self, pose, twist, accel):
        """Per strut: dict with the joint rows d qdot / d theta_dot (3 x 6), qdot, and per MDH body
        i = 1..3: (J_T, J_R, omega, omega', v') in body coordinates (eq. 5-10)."""
        p, R = pose.position, pose.rotation
        v, w = twist[:3], twist[3:]
        a, wd = accel[:3], accel[3:]
        out = []
        for j in range(self.n):
            RS, R0 = self._RS[j], self._R0[j]
            bw = R @ self._Bp[j]
            d = p + bw - self._A[j]                                   # eq. 1
            vB = v + np.cross(w, bw)                                  # eq. 2
            aB = a + np.cross(wd, bw) + np.cross(w, np.cross(w, bw))  # eq. 3
            x, y, z = RS.T @ d
            xd, yd, zd = RS.T @ vB
            xdd, ydd, zdd = RS.T @ aB
            r2 = x * x + z * z
            r = math.sqrt(r2)
            if not r > _GIMBAL_EPS:
                raise UnreachablePoseError(f"leg{j + 1}: universal joint in gimbal lock (r = {r:.3g} m)")
            l2 = r2 + y * y
            l = math.sqrt(l2)
            alpha, beta = math.atan2(x, -z), math.atan2(y, r)         # eq. 29-31
            # rates and accelerations: time derivatives of eq. 29-31
            ld = (x * xd + y * yd + z * zd) / l
            ldd = (xd * xd + yd * yd + zd * zd + x * xdd + y * ydd + z * zdd - ld * ld) / l
            rd = (x * xd + z * zd) / r
            rdd = (xd * xd + zd * zd + x * xdd + z * zdd - rd * rd) / r
            ad = (x * zd - z * xd) / r2
            add = (x * zdd - z * xdd) / r2 - 2.0 * ad * rd / r
            bd = (r * yd - y * rd) / l2
            bdd = (r * ydd - y * rdd) / l2 - 2.0 * bd * ld / l
            # d qdot / d theta_dot: gradients w.r.t. B_j (base coordinates), then eq. 2
            grads = (RS @ np.array([-z, 0.0, x]) / r2,
                     RS @ np.array([-x * y / r, r, -y * z / r]) / l2,
                     d / l)
            rows = np.array([np.concatenate([g, np.cross(bw, g)]) for g in grads])
            # MDH chain (eq. 4-10): (theta, d, alpha, a) and joint motion per frame
            joints = ((alpha, 0.0, 0.0, 0.0, "R", ad, add, rows[0]),
                      (beta + math.pi / 2, 0.0, math.pi / 2, 0.0, "R", bd, bdd, rows[1]),
                      (0.0, l, -math.pi / 2, 0.0, "P", ld, ldd, rows[2]))
            om, omd, vel, acc = np.zeros(3), np.zeros(3), np.zeros(3), R0.T @ (-self.gravity)
            JT, JR = np.zeros((3, 6)), np.zeros((3, 6))
            Rb = R0
            bodies = []
            ez = np.array([0.0, 0.0, 1.0])
            for theta, dd, al, aa, kind, qd, qdd, row in joints:
                Rp, rp = mdh_transform(theta, dd, al, aa)
                Rt = Rp.T
                om_in = Rt @ om                                        # omega_{i-1} in frame i
                acc = Rt @ (acc + np.cross(omd, rp) + np.cross(om, np.cross(om, rp)))
                vel = Rt @ (vel + np.cross(om, rp))
                JT = Rt @ (JT - skew(rp) @ JR)                        # eq. 9
                JR = Rt @ JR                                           # eq. 10
                if kind == "R":
                    om = om_in + ez * qd                               # eq. 7
                    omd = Rt @ omd + qd * np.cross(om_in, ez) + qdd * ez   # eq. 8
                    JR = JR + np.outer(ez, row)
                else:
                    om, omd = om_in, Rt @ omd
                    vel = vel + ez * qd                                # eq. 5
                    acc = acc + qdd * ez + 2.0 * qd * np.cross(om_in, ez)   # eq. 6
                    JT = JT + np.outer(ez, row)
                Rb = Rb @ Rp
                bodies.append((JT, JR, om, omd, acc, vel, Rb))
            out.append({"rows": rows, "qd": np.array([ad, bd, ld]), "bodies": bodies,
                        "q": np.array([alpha, beta, l])})
        return out

    def _platform(self, pose, twist, accel):
        """(H_E, omega, omega', v') of the platform in frame E: J_T = R^T [I 0], J_R = R^T [0 I]."""
        R = pose.rotation
        H = np.zeros((6, 6))
        H[:3, :3] = R           # H = [J_T^T J_R^T]
        H[3:, 3:] = R
        return H, R.T @ twist[3:], R.T @ accel[3:], R.T @ (accel[:3] - self.gravity)

    # ------------------------------------------------------------------ dynamics
    def generalized_force(self, pose: Pose, twist, accel, friction: bool = True) -> np.ndarray:
        """tau = tau_rb (eq. 14) + tau_f (eq. 13) on theta_dot = (v_E, omega_E) (reference path)."""
        pose, twist, accel = self._check(pose, twist, accel)
        return self._generalized(pose, twist, accel, friction)[0]

    def _generalized(self, pose, twist, accel, friction):
        struts = self._struts(pose, twist, accel)
        tau = np.zeros(6)

        def body_term(JT, JR, w, wd, vd, prm):           # eq. 14
            I = np.array([[prm[0], prm[1], prm[2]], [prm[1], prm[3], prm[4]], [prm[2], prm[4], prm[5]]])
            s, m = prm[6:9], prm[9]
            f = m * vd + np.cross(wd, s) + np.cross(w, np.cross(w, s))
            n = I @ wd + np.cross(w, I @ w) + np.cross(s, vd)
            return JT.T @ f + JR.T @ n

        for st in struts:
            for b, (JT, JR, w, wd, vd, _, _) in zip("123", st["bodies"]):
                tau += body_term(JT, JR, w, wd, vd, self.standard[b])
        H, w, wd, vd = self._platform(pose, twist, accel)
        tau += body_term(H[:, :3].T, H[:, 3:].T, w, wd, vd, self.standard["E"])
        if friction:
            tau += self._friction_regressor(struts) @ self.friction_values
        J = np.array([st["rows"][2] for st in struts])
        return tau, J

    def _friction_regressor(self, struts) -> np.ndarray:
        """(d qdot / d theta_dot)^T D_f (eq. 28 without J^-T): 6 x 14."""
        Y = np.zeros((6, 14))
        for j, st in enumerate(struts):
            ra, rb, rl = st["rows"]
            ad, bd, ld = st["qd"]
            Y[:, j] = rl * np.sign(ld)
            Y[:, 6 + j] = rl * ld
            Y[:, 12] += ra * np.sign(ad)
            Y[:, 13] += rb * np.sign(bd)
        return Y

    def _solve(self, J, rhs):
        """Q_a = J^-T tau (eq. 11-12); J = d qdot_a / d theta_dot is the paper's J^-1."""
        check_conditioning(J, "d qdot_a / d theta_dot (forward singularity)")
        return np.linalg.solve(J.T, rhs)

    def inverse_dynamics_reference(self, pose: Pose, twist, accel, friction: bool = True,
                                   check_limits: bool = True) -> np.ndarray:
        """Actuator forces Q_a (N, leg order) by eq. 14, 13, 12 with the Jacobians of eq. 9-10 and the
        standard parameters (reference path, numpy; ``inverse_dynamics`` is the fast one)."""
        pose, twist, accel = self._check(pose, twist, accel, check_limits)
        tau, J = self._generalized(pose, twist, accel, friction)
        return self._solve(J, tau)

    def mass_matrix_reference(self, pose: Pose) -> np.ndarray:
        """Task-space M (6 x 6) from eq. 14 with the generalized velocity theta_dot:
        M = sum_i m_i J_Ti^T J_Ti + J_Ti^T s~_i^T J_Ri + J_Ri^T s~_i J_Ti + J_Ri^T I_i J_Ri."""
        z = np.zeros(6)
        pose, _, _ = self._check(pose, z, z)
        struts = self._struts(pose, z, z)
        M = np.zeros((6, 6))

        def add(JT, JR, prm):
            I = np.array([[prm[0], prm[1], prm[2]], [prm[1], prm[3], prm[4]], [prm[2], prm[4], prm[5]]])
            S = skew(prm[6:9])
            return prm[9] * JT.T @ JT - JT.T @ S @ JR + JR.T @ S @ JT + JR.T @ I @ JR

        for st in struts:
            for b, body in zip("123", st["bodies"]):
                M += add(body[0], body[1], self.standard[b])
        H = self._platform(pose, z, z)[0]
        M += add(H[:, :3].T, H[:, 3:].T, self.standard["E"])
        return M

    # ------------------------------------------------------------------ parameter-linear form
    def _rb_regressor(self, pose, twist, accel, per_leg):
        """[H_1 Omega_1 ...] (eq. 17-19): 6 x (30 or 180) strut columns and 6 x 10 platform."""
        struts = self._struts(pose, twist, accel)
        Ys = np.zeros((6, 6, 30))
        for j, st in enumerate(struts):
            for k, (JT, JR, w, wd, vd, _, _) in enumerate(st["bodies"]):
                H = np.hstack([JT.T, JR.T])
                Ys[j, :, 10 * k:10 * k + 10] = H @ _omega_matrix(w, wd, vd)
        Hp, w, wd, vd = self._platform(pose, twist, accel)
        YE = Hp @ _omega_matrix(w, wd, vd)
        Yst = np.hstack(list(Ys)) if per_leg else Ys.sum(axis=0)
        return Yst, YE, struts

    def regressor(self, pose: Pose, twist, accel, friction: bool = True, per_leg: bool = False) -> np.ndarray:
        """Y (6 x 54) with Q_a = Y p for ``parameters()`` (eq. 20 and 28); per_leg: one set of strut
        columns per leg (6 x 204: legs 1..6 x [p_1 p_2 p_3], then p_E and friction)."""
        pose, twist, accel = self._check(pose, twist, accel)
        Yst, YE, struts = self._rb_regressor(pose, twist, accel, per_leg)
        Yf = self._friction_regressor(struts) if friction else np.zeros((6, 14))
        J = np.array([st["rows"][2] for st in struts])
        return self._solve(J, np.hstack([Yst, YE, Yf]))

    def base_regressor(self, pose: Pose, twist, accel, friction: bool = True) -> np.ndarray:
        """Y_base (6 x 24) with Q_a = Y_base p_base (Table I + 14 friction): the columns of the
        parameters that carry each group (exact when ``table_i_exact``)."""
        return self.regressor(pose, twist, accel, friction)[:, self._base_cols]

    # ------------------------------------------------------------------ fast path
    def _kernel_parameters(self, base=None) -> np.ndarray:
        """(40,) p_1, p_2, p_3, p_E for the kernel: standard, or Table I's base set placed in the
        representative slots (all grouped-away parameters zero)."""
        if base is None:
            return np.concatenate([self.standard[b] for b in BODIES])
        k = np.zeros(40)
        for col, val in zip(_TABLE_I_COLUMN, base[:10]):
            k[self.standard_names.index(col)] = val
        return k

    def with_parameters(self, inertia_scale: float = 1.0, friction=None) -> "Formulation":
        """This formulation with every inertial parameter times ``inertia_scale`` (eq. 14 is linear in them, eq.
        15-20) and the friction of a config-style mapping (``friction_parameters``; None: this one's), for the
        compiled kernels. InvalidModelError if the friction is not Abdellatif's 14-parameter model."""
        scale = check_number("inertia_scale", inertia_scale)
        fr = self.friction_values if friction is None else friction_parameters(friction)
        return self._carrying(self._kparams * scale, fr)

    def with_base_parameters(self, values) -> "Formulation":
        """This formulation carrying base parameters ``values`` (Table I's 10 rigid-body ones in their
        representative slots, the others zero; the 14 friction ones) for its compiled kernels."""
        values = check_vector("base parameters (Table I + friction)", values, len(self.base_names))
        return self._carrying(self._kernel_parameters(values[:10]), values[10:])

    def _carrying(self, kparams, friction_values) -> "Formulation":
        out = copy.copy(self)
        out._kparams, out.friction_values = np.array(kparams, float), np.array(friction_values, float)
        for arr in (out._kparams, out.friction_values):
            arr.setflags(write=False)
        return out

    def inverse_dynamics(self, pose: Pose, twist, accel, friction: bool = True,
                         check_limits: bool = True, validated: bool = False) -> np.ndarray:
        """Actuator forces Q_a (N, leg order) for the computed-force controller: the compiled kernel
        with Table I's base parameters (the same equations as ``inverse_dynamics_reference``). ``validated``: the
        caller passes a motion ``kin.validate`` accepted (float64 arrays, finite), e.g. the state estimator's pose;
        it is not checked again."""
        if twist is None or accel is None:
            raise InvalidInputError("inverse dynamics needs a twist and an acceleration")
        if not validated:
            pose, twist, accel = self.kin.validate(pose, twist, accel)
        out = np.empty(6)
        status = _KERNEL(pose.position, pose.rotation, twist, accel, self._geo if check_limits else self._geo_free,
                         self._cos_cone if check_limits else -2.0, self._kparams, self.gravity,
                         self.friction_values, friction, 0.0, True, out)
        if status:
            self._raise(pose, status, check_limits)
        return out

    #: the name used by the controller / benchmark for the compiled path
    inverse_dynamics_fast = inverse_dynamics

    def kernel_model(self) -> tuple[np.ndarray, np.ndarray]:
        """(geo, prm): what ``inverse_dynamics(..., check_limits=False)`` passes the compiled kernel, for a caller's
        own compiled code that calls it (control/jourdain_kernels.py): the geometry with the limits lifted and the
        parameters [p_1, p_2, p_3, p_E (40), gravity (3), friction (14)] in one read-only array."""
        prm = np.concatenate([self._kparams, self.gravity, self.friction_values])
        prm.setflags(write=False)
        return self._geo_free, prm

    def _kernel_generalized(self, pose, twist, accel, gravity):
        out = np.empty(6)
        status = _KERNEL(pose.position, pose.rotation, twist, accel, self._geo_free, -2.0, self._kparams,
                         gravity, self.friction_values, False, 0.0, False, out)
        if status:
            self._raise(pose, status, False)
        return out

    def mass_matrix(self, pose: Pose) -> np.ndarray:
        """Task-space M (6 x 6) on theta_dot = (v, omega): column k is the generalized force (eq. 14)
        of the unit acceleration e_k at rest without gravity (compiled kernel, base parameters)."""
        pose = self.kin.validate(pose)[0]
        z = np.zeros(6)
        M = np.empty((6, 6))
        for k in range(6):
            e = np.zeros(6)
            e[k] = 1.0
            M[:, k] = self._kernel_generalized(pose, z, e, z[:3])
        return M

    def gravity_vector(self, pose: Pose) -> np.ndarray:
        """G_x (6): the generalized force (eq. 14) at rest (M xddot + C xdot + G_x = J^T Q_a - ...)."""
        pose = self.kin.validate(pose)[0]
        z = np.zeros(6)
        return self._kernel_generalized(pose, z, z, self.gravity)

    def _raise(self, pose, status, check_limits=True):
        self.kin.inverse(pose, check_limits=check_limits)   # raises the precise reachability / limit error
        raise SingularConfigurationError("d qdot_a / d theta_dot is singular (Gaussian elimination pivot "
                                         "below 1e-12 of the largest entry): forward singularity")

    # ------------------------------------------------------------------ forward dynamics, simulation
    def end_stop_table(self, end_stops) -> np.ndarray:
        """The kernels' form of an ``end_stops.EndStops`` (None: no stops): per strut j the row
        (lower, upper, k, c) of alpha_j, of beta_j and of l_j, then (upper, k, c) of the cone angle of
        its spherical joint (read-only, 6 x 15)."""
        table = np.tile(_NO_STOP, (self.n, 1))
        if end_stops is not None:
            ji = self.kin.model.joint_index
            for j in range(self.n):
                for c, name in enumerate(("alpha", "beta", "prismatic")):
                    k = ji[f"leg{j + 1}_{name}"]
                    table[j, 4 * c:4 * c + 4] = (end_stops.lower[k], end_stops.upper[k], end_stops.stiffness[k],
                                                 end_stops.damping[k])
                c = end_stops.cut_names.index(f"leg{j + 1}_spherical")
                table[j, 12:] = end_stops.cut_upper[c], end_stops.cut_stiffness[c], end_stops.cut_damping[c]
        table.setflags(write=False)
        return table

    def forward_dynamics(self, pose: Pose, twist, tau, friction: bool = True, sign_eps: float = 0.0,
                         stops=None) -> np.ndarray:
        """Task acceleration xddot = M^-1 (J^T tau - h) on theta_dot = (v_E, omega_E) (eq. 11-14): h holds
        gravity, the velocity products, with ``friction`` eq. 32 in every joint with sign(qdot)
        smoothed to tanh(qdot / sign_eps) for sign_eps > 0, and the end stops of ``stops``
        (``end_stop_table``; None: none). As the engine's ``forward_dynamics`` with the same ``sign_eps``
        and stops (no joint-limit check); compiled kernel, base parameters."""
        if twist is None:
            raise InvalidInputError("forward dynamics needs a twist")
        pose, twist, _ = self.kin.validate(pose, twist)
        tau = check_vector("actuator forces", tau, self.n, MAGNITUDE_LIMIT)
        out = np.empty(6)
        status = _FD(pose.position, pose.rotation, twist, tau, _NO_WRENCH, self._geo_free, self._kparams, self.gravity,
                     self.friction_values, bool(friction), _check_eps(sign_eps),
                     self._no_stops if stops is None else stops, out)
        if status == GIMBAL_LOCK:
            self.kin.inverse(pose, check_limits=False)      # the family's precise message
            raise UnreachablePoseError(f"a universal joint is in gimbal lock (r < {_GIMBAL_EPS:g} m)")
        if status:
            raise SingularConfigurationError("task-space mass matrix is singular")
        return out

    def rk4_step(self, coords, twist, dt: float, tau, friction: bool = True,
                 sign_eps: float = 0.0, stops=None, contact=None) -> tuple[np.ndarray, np.ndarray]:
        """One classical RK4 step of ``forward_dynamics`` in one compiled call, tau held over the step,
        with the end stops of ``stops`` (``end_stop_table``; None: none) and the external wrench of a compliant
        ``contact`` at every stage (``point_contact``: (tool point, surface rows, max_slope), hardware/contact.py
        ``ContactEnvironment.kernel_form``; None: free space).

        State as ``simulation.ReducedSimulator``: the platform-joint coordinates of the generic tree
        coords = (x, y, z, yaw, pitch, roll) (kinematics/task_space: R = Rz(yaw) Ry(pitch) Rx(roll),
        coordinate rates B(coords) twist with the inverse Euler-rate matrix) and the twist (v, omega).
        Returns the new (coords, twist). Raises InvalidInputError (non-finite input, or the step
        diverged), UnreachablePoseError (gimbal lock of a universal joint) or
        SingularConfigurationError (|cos pitch| < 1e-9, singular mass matrix) at any of the 4 stages.
        """
        coords, twist, tau = _vec6("platform-joint coordinates", coords), _vec6("twist", twist), _vec6(
            "actuator forces", tau)
        c_out, t_out = np.empty(6), np.empty(6)
        tool, surfaces, max_slope = (_NO_WRENCH[:3], NO_SURFACES, np.inf) if contact is None else contact
        status = _RK4(coords, twist, check_number("dt", dt), tau, self._geo_free, self._kparams, self.gravity,
                      self.friction_values, bool(friction), _check_eps(sign_eps),
                      self._no_stops if stops is None else stops, tool, surfaces, float(max_slope), c_out, t_out)
        if status:
            _raise_step(status, coords, twist, dt, tau)
        return c_out, t_out

    def actuated_state(self, coords, twist) -> tuple[np.ndarray, np.ndarray]:
        """(q_a, qd_a) of a ``rk4_step`` state: the strut lengths l_j and qd_a = J twist (compiled)."""
        coords, twist = _vec6("platform-joint coordinates", coords), _vec6("twist", twist)
        q, qd = np.empty(6), np.empty(6)
        status = _ACTUATED(coords, twist, self._geo_free, q, qd)
        if status:
            _raise_step(status, coords, twist)
        return q, qd

    def inverse_dynamics_batch(self, positions, rotations, twists, accels, friction: bool = True,
                               return_valid: bool = False, check_limits: bool = True):
        """Q_a for N samples: positions (N, 3), rotations (N, 3, 3), twists (N, 6), accels (N, 6).

        Rows of unreachable, limit-violating or singular samples are NaN (``return_valid``: also the
        (N,) bool mask), as in ``inverse_batch`` of the kinematics."""
        P = np.ascontiguousarray(positions, dtype=float)
        if P.ndim != 2 or P.shape[1] != 3:
            raise InvalidInputError(f"positions must have shape (N, 3), got {P.shape}")
        N = P.shape[0]
        Rs = np.ascontiguousarray(rotations, dtype=float)
        T = np.ascontiguousarray(twists, dtype=float)
        Ac = np.ascontiguousarray(accels, dtype=float)
        for name, arr, shape in (("rotations", Rs, (N, 3, 3)), ("twists", T, (N, 6)), ("accels", Ac, (N, 6))):
            if arr.shape != shape:
                raise InvalidInputError(f"{name} must have shape {shape}, got {arr.shape}")
        for name, arr in (("positions", P), ("rotations", Rs), ("twists", T), ("accels", Ac)):
            if not np.isfinite(arr).all():
                row = np.flatnonzero(~np.isfinite(arr.reshape(N, -1)).all(axis=1))[0]
                raise InvalidInputError(f"{name} must be finite (row {row})")
        err = np.abs(np.einsum("nji,njk->nik", Rs, Rs) - np.eye(3)).max(axis=(1, 2)) if N else np.zeros(0)
        bad = np.flatnonzero((err > 1e-9) | (np.linalg.det(Rs) <= 0)) if N else []
        if len(bad):
            raise InvalidInputError(f"rotations[{bad[0]}] is not a rotation matrix (|R^T R - I| = {err[bad[0]]:.3g}, "
                                    "limit 1e-9)")
        out = np.empty((N, 6))
        status = np.zeros(N, np.int64)
        _BATCH(P, Rs, T, Ac, self._geo if check_limits else self._geo_free,
               self._cos_cone if check_limits else -2.0, self._kparams, self.gravity, self.friction_values,
               friction, out, status)
        valid = status == 0
        out[~valid] = np.nan
        return (out, valid) if return_valid else out


def friction_parameters(friction) -> np.ndarray:
    """Abdellatif's 14 friction parameters (sec. IV-A, eq. 25-27, 32: r1, r2 of each drive l_j, one r1 for all alpha_j,
    one for all beta_j) of a config-style friction mapping: prismatic {coulomb: 6, viscous: 6}, alpha {coulomb},
    beta {coulomb}. InvalidModelError for anything else."""
    try:
        pc, pv = friction["prismatic"]["coulomb"], friction["prismatic"]["viscous"]
        ac, bc = friction["alpha"]["coulomb"], friction["beta"]["coulomb"]
        extra = {(r, k) for r, e in friction.items() for k in (e or {})} - {
            ("prismatic", "coulomb"), ("prismatic", "viscous"), ("alpha", "coulomb"), ("beta", "coulomb")}
    except (KeyError, TypeError, AttributeError) as exc:
        raise InvalidModelError(f"friction lacks {exc} (Abdellatif's 14-parameter model)") from exc
    if np.shape(pc) != (6,) or np.shape(pv) != (6,) or np.ndim(ac) or np.ndim(bc):
        raise InvalidModelError("Abdellatif's friction model (sec. IV-A) needs 6 coulomb and 6 viscous values for the "
                                "drives and one coulomb value each for alpha and beta")
    if extra:
        raise InvalidModelError(f"friction terms {sorted(extra)} are not in Abdellatif's 14-parameter model")
    return np.array(list(pc) + list(pv) + [ac, bc], float)


def _vec6(name, x) -> np.ndarray:
    """x as a contiguous float (6,) array; the finiteness check is left to the kernels (cheap path)."""
    if type(x) is np.ndarray and x.shape == (6,) and x.dtype == np.float64 and x.flags.c_contiguous:
        return x
    return np.ascontiguousarray(check_vector(name, x, 6))


def _check_eps(sign_eps) -> float:
    eps = float(sign_eps)
    if not (math.isfinite(eps) and eps >= 0.0):
        raise InvalidInputError(f"sign_eps must be >= 0 (0: sign, > 0: tanh(qdot / sign_eps)), got {sign_eps!r}")
    return eps


def _raise_step(status, coords, twist, dt=None, tau=None):
    """The error of a non-zero status of ``_RK4`` / ``_ACTUATED`` (state as in ``rk4_step``)."""
    at = f"coordinates {np.array2string(coords, precision=6)}, twist {np.array2string(twist, precision=6)}"
    if status == NOT_FINITE:          # check_vector names the non-finite input
        for name, x in (("platform-joint coordinates", coords), ("twist", twist), ("actuator forces", tau)):
            if x is not None:
                check_vector(name, x, 6)
    if status == GIMBAL_LOCK:
        raise UnreachablePoseError(f"a universal joint reached gimbal lock (r < {_GIMBAL_EPS:g} m) in the step "
                                   f"from {at}")
    if status == EULER_SINGULAR:
        raise SingularConfigurationError(f"|cos pitch| < 1e-9 in the step from {at}: the ZYX Euler rates of "
                                         "the platform joints are singular at |pitch| = pi/2")
    if status == SINGULAR:
        raise SingularConfigurationError(f"task-space mass matrix is singular in the step from {at}")
    raise InvalidInputError(f"the simulation diverged (non-finite state) in the step of dt = {dt} s from {at}")


# ---------------------------------------------------------------------- compiled kernel
_NO_STRUT = (0.0,) * 16      # the position-level tuple of a failed strut (see _strut_pose)
#: the end-stop row of a strut without stops (see ``Formulation.end_stop_table``)
_NO_STOP = np.array([-np.inf, np.inf, 0.0, 0.0] * 3 + [np.inf, 0.0, 0.0])
#: no external wrench (``_fd_kernel``'s ext), no tool point (``_rk4_kernel`` without surfaces)
_NO_WRENCH = np.zeros(6)
_NO_WRENCH.setflags(write=False)


def _sign(x, eps):
    """sign(x) of eq. 32 for eps = 0, the smooth tanh(x / eps) for eps > 0 (simulation: RK4 needs a
    Lipschitz right-hand side; the generic engine's ``sign_eps``)."""
    if eps > 0.0:
        return math.tanh(x / eps)
    return 1.0 if x > 0 else (-1.0 if x < 0 else 0.0)


def _body_wrench(P, wx, wy, wz, ox, oy, oz, ax, ay, az):
    """Newton-Euler wrench of one body about its frame origin (eq. 14), body coordinates.

    P = (Ixx, Ixy, Ixz, Iyy, Iyz, Izz, s_x, s_y, s_z, m) about the origin; omega, omega' and the
    acceleration of the origin (gravity included) in body coordinates. Returns (f, n).
    """
    sx, sy, sz, m = P[6], P[7], P[8], P[9]
    fx = m * ax + oy * sz - oz * sy + wy * (wx * sy - wy * sx) - wz * (wz * sx - wx * sz)
    fy = m * ay + oz * sx - ox * sz + wz * (wy * sz - wz * sy) - wx * (wx * sy - wy * sx)
    fz = m * az + ox * sy - oy * sx + wx * (wz * sx - wx * sz) - wy * (wy * sz - wz * sy)
    ix = P[0] * wx + P[1] * wy + P[2] * wz
    iy = P[1] * wx + P[3] * wy + P[4] * wz
    iz = P[2] * wx + P[4] * wy + P[5] * wz
    nx = P[0] * ox + P[1] * oy + P[2] * oz + wy * iz - wz * iy + sy * az - sz * ay
    ny = P[1] * ox + P[3] * oy + P[4] * oz + wz * ix - wx * iz + sz * ax - sx * az
    nz = P[2] * ox + P[4] * oy + P[5] * oz + wx * iy - wy * ix + sx * ay - sy * ax
    return fx, fy, fz, nx, ny, nz


def _strut_pose(p, R, G, cos_cone, Jt, j):
    """Position level of strut j at the pose (p, R): (status, k), status 0, GIMBAL_LOCK or OUT_OF_LIMITS.

    G: the strut's geometry row (see ``_id_kernel``). k = (b_x, b_y, b_z) = R b_j (base), (x, y, z) =
    A_j B_j in S_j (eq. 1), r^2, r, l^2, l, cos, sin of alpha_j and of theta_2 = beta_j + pi/2
    (eq. 29-31, from the ratios), alpha_j, beta_j. Writes column j of J^T:
    (u_j, b_j x u_j), u_j = A_j B_j / l_j (the rows of d l_dot / d theta_dot).
    """
    r00, r01, r02 = R[0, 0], R[0, 1], R[0, 2]
    r10, r11, r12 = R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22 = R[2, 0], R[2, 1], R[2, 2]
    s00, s01, s02, s10, s11, s12, s20, s21, s22 = G[3], G[4], G[5], G[6], G[7], G[8], G[9], G[10], G[11]
    bx = r00 * G[12] + r01 * G[13] + r02 * G[14]
    by = r10 * G[12] + r11 * G[13] + r12 * G[14]
    bz = r20 * G[12] + r21 * G[13] + r22 * G[14]
    ex, ey, ez = p[0] + bx - G[0], p[1] + by - G[1], p[2] + bz - G[2]     # eq. 1
    x = s00 * ex + s10 * ey + s20 * ez
    y = s01 * ex + s11 * ey + s21 * ez
    z = s02 * ex + s12 * ey + s22 * ez
    r2 = x * x + z * z
    r = math.sqrt(r2)
    if not r > _GIMBAL_EPS:
        return GIMBAL_LOCK, _NO_STRUT
    l2 = r2 + y * y
    l = math.sqrt(l2)
    al = math.atan2(x, -z)                          # eq. 29-31
    be = math.atan2(y, r)
    if al < G[18] or al > G[19] or be < G[20] or be > G[21] or l < G[22] or l > G[23]:
        return OUT_OF_LIMITS, _NO_STRUT
    nx = r00 * G[15] + r01 * G[16] + r02 * G[17]
    ny = r10 * G[15] + r11 * G[16] + r12 * G[17]
    nz = r20 * G[15] + r21 * G[16] + r22 * G[17]
    if (ex * nx + ey * ny + ez * nz) < cos_cone * l:
        return OUT_OF_LIMITS, _NO_STRUT
    ux, uy, uz = ex / l, ey / l, ez / l
    Jt[0, j] = ux
    Jt[1, j] = uy
    Jt[2, j] = uz
    Jt[3, j] = by * uz - bz * uy
    Jt[4, j] = bz * ux - bx * uz
    Jt[5, j] = bx * uy - by * ux
    # cos, sin of alpha = atan2(x, -z); of theta_2 = beta + pi/2: (-sin beta, cos beta), beta = atan2(y, r)
    return 0, (bx, by, bz, x, y, z, r2, r, l2, l, -z / r, x / r, -y / l, r / l, al, be)


def _stop_force(q, qd, lo, hi, k, c):
    """End-stop force on a joint at q, qd (dynamics/end_stops.py): max(0, k d + c ddot) out of the stop."""
    if q > hi:
        f = k * (q - hi) + c * qd
        return -f if f > 0.0 else 0.0
    if q < lo:
        f = k * (lo - q) - c * qd
        return f if f > 0.0 else 0.0
    return 0.0


def _cone_force(R, G, k, tw, stop, t):
    """t (the bias h of ``_fd_kernel``) -= the generalized force of strut j's spherical-joint cone stop
    (dynamics/end_stops.py).

    Cone angle theta = acos(u . n), u = A_j B_j / l_j, n = R n_j (hexapod_ups.cut_joint_angles); its rate
    theta' = g . (v, omega) with g = -(w, b x w + n x u) / sin theta, w = (n - cos theta u) / l_j, from
    u' = (1 - u u^T) v_B / l_j, n' = omega x n and v_B = v + omega x b (eq. 2). The stop's torque
    -max(0, k d + c theta') about the cone axis acts on the task velocity as -f g.
    """
    upper = stop[12]
    if stop[13] == 0.0:                                 # no stop (``_NO_STOP``)
        return
    bx, by, bz, x, y, z, l = k[0], k[1], k[2], k[3], k[4], k[5], k[9]
    ux = (G[3] * x + G[4] * y + G[5] * z) / l          # u = RS_j (x, y, z) / l
    uy = (G[6] * x + G[7] * y + G[8] * z) / l
    uz = (G[9] * x + G[10] * y + G[11] * z) / l
    nx = R[0, 0] * G[15] + R[0, 1] * G[16] + R[0, 2] * G[17]
    ny = R[1, 0] * G[15] + R[1, 1] * G[16] + R[1, 2] * G[17]
    nz = R[2, 0] * G[15] + R[2, 1] * G[16] + R[2, 2] * G[17]
    c = ux * nx + uy * ny + uz * nz
    if not c < math.cos(upper):
        return
    th = math.acos(max(-1.0, c))
    s = max(math.sqrt(max(0.0, 1.0 - c * c)), 1e-12)
    wx, wy, wz = (nx - c * ux) / l, (ny - c * uy) / l, (nz - c * uz) / l
    g0, g1, g2 = -wx / s, -wy / s, -wz / s
    g3 = -(by * wz - bz * wy + ny * uz - nz * uy) / s
    g4 = -(bz * wx - bx * wz + nz * ux - nx * uz) / s
    g5 = -(bx * wy - by * wx + nx * uy - ny * ux) / s
    rate = g0 * tw[0] + g1 * tw[1] + g2 * tw[2] + g3 * tw[3] + g4 * tw[4] + g5 * tw[5]
    f = stop[13] * (th - upper) + stop[14] * rate
    if f > 0.0:
        t[0] += f * g0
        t[1] += f * g1
        t[2] += f * g2
        t[3] += f * g3
        t[4] += f * g4
        t[5] += f * g5


def _strut_force(j, G, k, tw, ac, g, prm, fr, use_fric, eps, stop):
    """Force F at B_j (base coordinates) that carries strut j's share of the generalized force:
    tau += (F, b_j x F). The strut's joint forces Q (eq. 14 projected recursively on the MDH joints,
    plus eq. 13, 32 friction with use_fric, minus the end-stop forces) mapped by F = sum_k Q_k grad q_k
    (eq. 12-13).

    k from ``_strut_pose``; motion: twist tw (6), acceleration ac (6), gravity g (3); fr: the 14
    friction parameters (r1 of l_1..l_6, r2 of l_1..l_6, r1 alpha, r1 beta); stop: the strut's row of
    ``Formulation.end_stop_table`` (``_NO_STOP``: none).
    """
    bx, by, bz, x, y, z, r2, r, l2, l, ca, sa, ct, st, al, be = k
    s00, s01, s02, s10, s11, s12, s20, s21, s22 = G[3], G[4], G[5], G[6], G[7], G[8], G[9], G[10], G[11]
    # eq. 2-3 in S_j coordinates
    ux, uy, uz, fx, fy, fz = rigid_point_motion(bx, by, bz, tw[0], tw[1], tw[2], tw[3], tw[4], tw[5],
                                                ac[0], ac[1], ac[2], ac[3], ac[4], ac[5])
    xd = s00 * ux + s10 * uy + s20 * uz
    yd = s01 * ux + s11 * uy + s21 * uz
    zd = s02 * ux + s12 * uy + s22 * uz
    xdd = s00 * fx + s10 * fy + s20 * fz
    ydd = s01 * fx + s11 * fy + s21 * fz
    zdd = s02 * fx + s12 * fy + s22 * fz
    # joint rates and accelerations: time derivatives of eq. 29-31
    ld = (x * xd + y * yd + z * zd) / l
    ldd = (xd * xd + yd * yd + zd * zd + x * xdd + y * ydd + z * zdd - ld * ld) / l
    rd = (x * xd + z * zd) / r
    rdd = (xd * xd + zd * zd + x * xdd + z * zdd - rd * rd) / r
    ad = (x * zd - z * xd) / r2
    add = (x * zdd - z * xdd) / r2 - 2.0 * ad * rd / r
    bd = (r * yd - y * rd) / l2
    bdd = (r * ydd - y * rdd) / l2 - 2.0 * bd * ld / l
    # gravity in frame 1: -g in S_j, frame 0 = (z, -x, -y), then Rz(alpha)^T
    gsx = s00 * g[0] + s10 * g[1] + s20 * g[2]
    gsy = s01 * g[0] + s11 * g[1] + s21 * g[2]
    gsz = s02 * g[0] + s12 * g[1] + s22 * g[2]
    g0x, g0y, g0z = -gsz, gsx, gsy                # -g in frame 0
    a1x = ca * g0x + sa * g0y                    # v_1' (frame 1; origin A fixed)
    a1y = -sa * g0x + ca * g0y
    a1z = g0z
    # frame 2: theta_2 = beta + pi/2, (ct, st) = (cos, sin) theta_2; R^2_1 w = (c wx + s wz, -s wx + c wz, -wy)
    w2x, w2y, w2z = st * ad, ct * ad, bd                                  # eq. 7
    o2x, o2y, o2z = st * add + bd * ct * ad, ct * add - bd * st * ad, bdd  # eq. 8
    a2x, a2y, a2z = ct * a1x + st * a1z, -st * a1x + ct * a1z, -a1y
    # frame 3: R^3_2 w = (wx, -wz, wy); r = (0, l, 0) in frame 2
    w3x, w3y, w3z = w2x, -w2z, w2y
    o3x, o3y, o3z = o2x, -o2z, o2y
    # v_2' + omega_2' x r + omega_2 x (omega_2 x r)
    tx = a2x - o2z * l + w2y * w2x * l
    ty = a2y - (w2x * w2x + w2z * w2z) * l
    tz = a2z + o2x * l + w2y * w2z * l
    a3x = tx + 2.0 * ld * w3y                                              # eq. 6
    a3y = -tz - 2.0 * ld * w3x
    a3z = ty + ldd
    # body 3 (slider) wrench about B_j, eq. 14
    f3x, f3y, f3z, n3x, n3y, n3z = _body_wrench(prm[20:30], w3x, w3y, w3z, o3x, o3y, o3z, a3x, a3y, a3z)
    Ql = f3z
    # body 2 (stator) moment about A, eq. 14
    _, _, _, n2x, n2y, n2z = _body_wrench(prm[10:20], w2x, w2y, w2z, o2x, o2y, o2z, a2x, a2y, a2z)
    # body 3's wrench moved to frame 2: R^2_3 (a, b, c) = (a, c, -b), plus r x F (r = (0, l, 0))
    N2x = n2x + n3x - l * f3y
    N2y = n2y + n3z
    N2z = n2z - n3y - l * f3x
    Qb = N2z
    # body 1 (ring) about its fixed axis: only I_zz1 and s_1 act (omega_1 = (0, 0, alpha'))
    P = prm[0:10]
    n1z = P[5] * add + P[6] * a1y - P[7] * a1x
    Qa = n1z + st * N2x + ct * N2y                 # z_1 . (n_1 + R^1_2 N_2)
    if use_fric:                                   # eq. 32 (sign smoothed for eps > 0)
        Ql += fr[j] * _sign(ld, eps) + fr[6 + j] * ld
        Qa += fr[12] * _sign(ad, eps)
        Qb += fr[13] * _sign(bd, eps)
    Qa -= _stop_force(al, ad, stop[0], stop[1], stop[2], stop[3])
    Qb -= _stop_force(be, bd, stop[4], stop[5], stop[6], stop[7])
    Ql -= _stop_force(l, ld, stop[8], stop[9], stop[10], stop[11])
    # force at B_j: F = sum_k Q_k grad q_k (base coordinates); gradients in S_j, then RS
    ga_x, ga_z = -z / r2, x / r2
    hx, hy, hz = -x * y / (r * l2), r / l2, -y * z / (r * l2)
    Sx = Qa * ga_x + Qb * hx + Ql * x / l
    Sy = Qb * hy + Ql * y / l
    Sz = Qa * ga_z + Qb * hz + Ql * z / l
    return (s00 * Sx + s01 * Sy + s02 * Sz, s10 * Sx + s11 * Sy + s12 * Sz, s20 * Sx + s21 * Sy + s22 * Sz)


def _add_force(t, k, Fx, Fy, Fz):
    """t += (F, b x F): the generalized force of a force F at B_j (virtual power with eq. 2)."""
    bx, by, bz = k[0], k[1], k[2]
    t[0] += Fx
    t[1] += Fy
    t[2] += Fz
    t[3] += by * Fz - bz * Fy
    t[4] += bz * Fx - bx * Fz
    t[5] += bx * Fy - by * Fx


def _add_platform(t, R, tw, ac, g, P):
    """t += the platform's term of eq. 14 (frame E: omega, omega' and v' = R^T (a - g); H = R)."""
    r00, r01, r02 = R[0, 0], R[0, 1], R[0, 2]
    r10, r11, r12 = R[1, 0], R[1, 1], R[1, 2]
    r20, r21, r22 = R[2, 0], R[2, 1], R[2, 2]
    wx, wy, wz, dx_, dy_, dz_ = tw[3], tw[4], tw[5], ac[3], ac[4], ac[5]
    qx, qy, qz = r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz, r02 * wx + r12 * wy + r22 * wz
    ox, oy, oz = r00 * dx_ + r10 * dy_ + r20 * dz_, r01 * dx_ + r11 * dy_ + r21 * dz_, r02 * dx_ + r12 * dy_ + r22 * dz_
    hx_, hy_, hz_ = ac[0] - g[0], ac[1] - g[1], ac[2] - g[2]
    aex = r00 * hx_ + r10 * hy_ + r20 * hz_
    aey = r01 * hx_ + r11 * hy_ + r21 * hz_
    aez = r02 * hx_ + r12 * hy_ + r22 * hz_
    fEx, fEy, fEz, nEx, nEy, nEz = _body_wrench(P, qx, qy, qz, ox, oy, oz, aex, aey, aez)
    t[0] += r00 * fEx + r01 * fEy + r02 * fEz
    t[1] += r10 * fEx + r11 * fEy + r12 * fEz
    t[2] += r20 * fEx + r21 * fEy + r22 * fEz
    t[3] += r00 * nEx + r01 * nEy + r02 * nEz
    t[4] += r10 * nEx + r11 * nEy + r12 * nEz
    t[5] += r20 * nEx + r21 * nEy + r22 * nEz


def _gauss_solve(A, b, out):
    """out = A^-1 b by Gaussian elimination with partial pivoting (A, b overwritten); returns 0, or
    SINGULAR when a pivot is below 1e-12 of the largest entry of A."""
    scale = 0.0
    for i in range(6):
        for k in range(6):
            scale = max(scale, abs(A[i, k]))
    for k in range(6):
        piv = k
        for i in range(k + 1, 6):
            if abs(A[i, k]) > abs(A[piv, k]):
                piv = i
        if not abs(A[piv, k]) > 1e-12 * scale:
            return SINGULAR
        if piv != k:
            for c in range(k, 6):
                t = A[k, c]
                A[k, c] = A[piv, c]
                A[piv, c] = t
            t = b[k]
            b[k] = b[piv]
            b[piv] = t
        for i in range(k + 1, 6):
            f = A[i, k] / A[k, k]
            for c in range(k + 1, 6):
                A[i, c] -= f * A[k, c]
            b[i] -= f * b[k]
    for k in range(5, -1, -1):
        t = b[k]
        for c in range(k + 1, 6):
            t -= A[k, c] * out[c]
        out[k] = t / A[k, k]
    return 0


def _id_kernel(p, R, tw, ac, geo, cos_cone, prm, g, fr, use_fric, eps, solve, out):
    """One sample: out = Q_a (solve) or the generalized force tau (not solve). Returns 0, GIMBAL_LOCK,
    OUT_OF_LIMITS (joint limit / cone) or SINGULAR.

    geo rows: A (3), RS (9, row-major), b (3), anchor axis (3), limits (alpha lo hi, beta lo hi,
    l lo hi). prm: p_1, p_2, p_3, p_E in the paper's order (eq. 17). eps: friction sign smoothing
    (0: sign, eq. 32). Scalar code, eq. 2-3, 5-8, 14 (recursive projection onto the strut joints),
    13, 32, 12.
    """
    Jt = np.empty((6, 6))      # J^T (columns = rows of d l_dot / d theta_dot)
    tau = np.zeros(6)
    for j in range(6):
        status, k = _strut_pose(p, R, geo[j], cos_cone, Jt, j)
        if status:
            return status
        Fx, Fy, Fz = _strut_force(j, geo[j], k, tw, ac, g, prm, fr, use_fric, eps, _NO_STOP)
        _add_force(tau, k, Fx, Fy, Fz)
    _add_platform(tau, R, tw, ac, g, prm[30:40])
    if not solve:
        for i in range(6):
            out[i] = tau[i]
        return 0
    return _gauss_solve(Jt, tau, out)            # J^T Q_a = tau (eq. 12)


def _batch_kernel(P, Rs, T, Ac, geo, cos_cone, prm, g, fr, use_fric, out, status):
    row = np.empty(6)
    for i in range(P.shape[0]):
        status[i] = _KERNEL(P[i], Rs[i], T[i], Ac[i], geo, cos_cone, prm, g, fr, use_fric, 0.0, True, row)
        for k in range(6):
            out[i, k] = row[k]


def _fd_kernel(p, R, tw, tau_a, ext, geo, prm, g, fr, use_fric, eps, stops, xdd):
    """Forward dynamics xdd = M^-1 (J^T tau_a + w - h) on theta_dot = (v_E, omega_E), no joint-limit check; ``ext``
    the external wrench w on the platform ([f at its origin; moment], base frame: on theta_dot its own generalized
    force, the engine's S^T w with S = I).

    The same strut and platform terms as ``_id_kernel``, evaluated for 7 motions at one pose (the
    position level once per strut): h = tau(twist, 0, gravity, friction, end stops ``stops``
    (``Formulation.end_stop_table``)) and the columns M e_c =
    tau(0, e_c, 0, no friction) (eq. 14 is linear in the acceleration); eq. 11-12 give J^T tau_a.
    Returns 0, GIMBAL_LOCK or SINGULAR (M).
    """
    Jt = np.empty((6, 6))
    C = np.zeros((7, 6))       # rows: M e_0 .. M e_5, h
    zero = np.zeros(6)         # no velocity, no acceleration, no gravity (first 3 entries)
    e = np.zeros(6)
    for j in range(6):
        status, k = _strut_pose(p, R, geo[j], -2.0, Jt, j)
        if status:
            return status
        Fx, Fy, Fz = _strut_force(j, geo[j], k, tw, zero, g, prm, fr, use_fric, eps, stops[j])
        _add_force(C[6], k, Fx, Fy, Fz)
        _cone_force(R, geo[j], k, tw, stops[j], C[6])
        for c in range(6):
            e[c] = 1.0
            Fx, Fy, Fz = _strut_force(j, geo[j], k, zero, e, zero, prm, fr, False, 0.0, _NO_STOP)
            _add_force(C[c], k, Fx, Fy, Fz)
            e[c] = 0.0
    _add_platform(C[6], R, tw, zero, g, prm[30:40])
    for c in range(6):
        e[c] = 1.0
        _add_platform(C[c], R, zero, e, zero, prm[30:40])
        e[c] = 0.0
    M = np.empty((6, 6))
    rhs = np.empty(6)
    for i in range(6):
        s = ext[i] - C[6, i]
        for j in range(6):
            s += Jt[i, j] * tau_a[j]
            M[i, j] = C[j, i]
        rhs[i] = s
    return _gauss_solve(M, rhs, xdd)


def _platform_pose(c, p, R):
    """(p, R) of the platform-joint coordinates c = (x, y, z, yaw, pitch, roll) (kinematics/task_space:
    prismatic x, y, z, revolute z, y, x; R = Rz(yaw) Ry(pitch) Rx(roll)). Returns (cos, sin) of yaw
    and pitch for the Euler rates."""
    cy, sy = math.cos(c[3]), math.sin(c[3])
    cp, sp = math.cos(c[4]), math.sin(c[4])
    cr, sr = math.cos(c[5]), math.sin(c[5])
    p[0], p[1], p[2] = c[0], c[1], c[2]
    R[0, 0], R[0, 1], R[0, 2] = cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr
    R[1, 0], R[1, 1], R[1, 2] = sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr
    R[2, 0], R[2, 1], R[2, 2] = -sp, cp * sr, cp * cr
    return cy, sy, cp, sp


def _rk4_kernel(c, t, dt, tau_a, geo, prm, g, fr, use_fric, eps, stops, tool, surfaces, max_slope, c_out, t_out):
    """One classical RK4 step of (platform-joint coordinates c, twist t) with tau_a held:
    c' = B(c) t (B = diag(I, E^-1), omega = E (yaw', pitch', roll')), t' = ``_fd_kernel`` with the external wrench
    of the contact of the tool point ``tool`` with the ``surfaces`` (point_contact: rows, max_slope; no rows: free
    space) at the stage's state.

    Returns 0, NOT_FINITE (input), GIMBAL_LOCK, SINGULAR, EULER_SINGULAR (|cos pitch| < 1e-9) or
    DIVERGED (a non-finite stage or result); the outputs are valid only for 0.
    """
    for i in range(6):
        if not (math.isfinite(c[i]) and math.isfinite(t[i]) and math.isfinite(tau_a[i])):
            return NOT_FINITE
    p = np.empty(3)
    R = np.empty((3, 3))
    cs = np.empty(6)
    ts = np.empty(6)
    kc = np.zeros((4, 6))
    kt = np.zeros((4, 6))
    w = np.zeros(6)
    for s in range(4):
        h = 0.0 if s == 0 else (dt if s == 3 else 0.5 * dt)
        for i in range(6):
            cs[i] = c[i] + h * kc[s - 1, i]
            ts[i] = t[i] + h * kt[s - 1, i]
            if not (math.isfinite(cs[i]) and math.isfinite(ts[i])):
                return DIVERGED
        cy, sy, cp, sp = _platform_pose(cs, p, R)
        if not abs(cp) > 1e-9:
            return EULER_SINGULAR
        # E^-1 omega of task_space.euler_rate_matrix: roll' = (cy wx + sy wy) / cp, pitch' = cy wy - sy wx,
        # yaw' = wz + sp roll'
        rr = (cy * ts[3] + sy * ts[4]) / cp
        kc[s, 0], kc[s, 1], kc[s, 2] = ts[0], ts[1], ts[2]
        kc[s, 3], kc[s, 4], kc[s, 5] = ts[5] + sp * rr, cy * ts[4] - sy * ts[3], rr
        if surfaces.shape[0]:
            _contact_wrench(p, R, ts, tool, surfaces, max_slope, w)
        status = _FD(p, R, ts, tau_a, w, geo, prm, g, fr, use_fric, eps, stops, kt[s])
        if status:
            return status
    for i in range(6):
        c_out[i] = c[i] + dt / 6 * (kc[0, i] + 2 * kc[1, i] + 2 * kc[2, i] + kc[3, i])
        t_out[i] = t[i] + dt / 6 * (kt[0, i] + 2 * kt[1, i] + 2 * kt[2, i] + kt[3, i])
        if not (math.isfinite(c_out[i]) and math.isfinite(t_out[i])):
            return DIVERGED
    return 0


def _actuated_kernel(c, t, geo, q, qd):
    """Actuated joints of the state (c, t): q = strut lengths l_j, qd = J t. Returns 0, NOT_FINITE or
    GIMBAL_LOCK."""
    for i in range(6):
        if not (math.isfinite(c[i]) and math.isfinite(t[i])):
            return NOT_FINITE
    p = np.empty(3)
    R = np.empty((3, 3))
    Jt = np.empty((6, 6))
    _platform_pose(c, p, R)
    for j in range(6):
        status, k = _strut_pose(p, R, geo[j], -2.0, Jt, j)
        if status:
            return status
        q[j] = k[9]
        s = 0.0
        for i in range(6):
            s += Jt[i, j] * t[i]
        qd[j] = s
    return 0


if numba is not None:
    _sign = numba.njit(cache=True, inline="always")(_sign)
    _stop_force = numba.njit(cache=True, inline="always")(_stop_force)
    _cone_force = numba.njit(cache=True)(_cone_force)
    _body_wrench = numba.njit(cache=True, inline="always")(_body_wrench)
    _add_force = numba.njit(cache=True, inline="always")(_add_force)
    _strut_pose = numba.njit(cache=True)(_strut_pose)
    _strut_force = numba.njit(cache=True)(_strut_force)
    _add_platform = numba.njit(cache=True)(_add_platform)
    _gauss_solve = numba.njit(cache=True)(_gauss_solve)
    _platform_pose = numba.njit(cache=True)(_platform_pose)
    _KERNEL = numba.njit(cache=True)(_id_kernel)
    _BATCH = numba.njit(cache=True)(_batch_kernel)
    _FD = numba.njit(cache=True)(_fd_kernel)
    _RK4 = numba.njit(cache=True)(_rk4_kernel)
    _ACTUATED = numba.njit(cache=True)(_actuated_kernel)
else:  # pragma: no cover
    _KERNEL, _BATCH, _FD, _RK4, _ACTUATED = _id_kernel, _batch_kernel, _fd_kernel, _rk4_kernel, _actuated_kernel

#: the pure-Python kernel (same code, not compiled) for tests of the compiled one
id_kernel_python = _id_kernel
