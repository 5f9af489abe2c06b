"""Wu et al.'s virtual-work dynamics in linear form with pivotal points (``planar_redundant``).

Wu, Wang, Wang, Li, "Dynamic formulation of redundant and nonredundant parallel manipulators
for dynamic parameter identification", Mechatronics 19 (2009), seed 003, eq. 1-16, 26-39.
An independent implementation of the paper's equations: it uses the kinematics object only to
validate the input and to check reachability and joint limits (``dyn.kin.validate``,
``kin.inverse``); every position, rate and acceleration below is Wu's eq. 18-23 and their
time derivatives, written out here.

Method (sec. 2): for every moving part choose a *pivotal point* P whose partial velocity matrix
H_P (eq. 1, 2 x 3: v_P = H_P xdot) and whose part's partial angular velocity matrix G (eq. 2,
1 x 3: omega = G xdot) contain no dynamic parameter (sec. 3.4); move the inertia wrench of the
part from its mass centre to P (eq. 3-10); the virtual-work principle (eq. 11-15) then gives

    J^T tau + sum_parts (H_P^T F_P + G^T M_P) = 0          (eq. 15, 35, 37)

with (F_P, M_P) the inertia force (gravity included) and moment about P (eq. 30-32). Both are
linear in the part's parameters p_part = [m, m c_x, m c_y, I_P] (eq. 33), so that

    J^T tau = Omega p                                        (eq. 16, 36, 38)

with the observation matrix Omega = sum_parts [H_P^T G^T] [[a_P - g, A, 0], [0, B, thetaddot]]
(eq. 34). Redundant robot: the minimum-norm driving forces tau = J (J^T J)^-1 Omega p (eq. 39),
or the weighted minimum norm (minimize tau^T W tau: tau = W^-1 J (J^T W^-1 J)^-1 Omega p).

Conventions (config/planar_redundant.yaml header): base O-XY with Y up, gravity from the config;
task coordinates (x, y, alpha) with A1 = (x, y) and Wu's alpha, beta_i, phi_i clockwise positive.
Here every angle is handled as a counter-clockwise angle theta about +z (theta = -alpha, -beta_i,
-phi_i), every moment as a counter-clockwise moment; G rows are d(theta)/d(xdot, ydot, alphadot).
Wu's E of eq. 22, 31-33 is the clockwise quarter turn E = [[0, 1], [-1, 0]] (the printed
transpose is inconsistent with eq. 31 and 32: d/dbeta (sin beta, cos beta) = E (sin beta, cos beta)).

Pivotal points (sec. 3.4) and parts; each pivotal point is the origin of the part's URDF link
frame, so p_part is read from the config as m, m c (com in the link frame) and
I_P = I_zz,com + m (c_x^2 + c_y^2) (parallel-axis theorem; only I_zz about P does work in the plane):

    slider i          E_i = (c_i, q_i)       translation only          p = [m_i1]          (eq. 26-27, 30)
    link A_iD_i       D_i = E_i + (0, l5)    theta = -beta_i           p = [m, mc_x, mc_y, I] (eq. 28-29, 31-33)
    strut upper part  E_i                    theta = -phi_i            p = [m, mc_x, mc_y, I]
    strut lower part  B                      theta = -phi_i            p = [m, mc_x, mc_y, I]
    counterweight i   its frame origin       translation only, y = ratio q_i + offset,  p = [m_i5]
    platform          A1 = (x, y) (O_N)      theta = -alpha            p = [m, mc_x, mc_y, I]

Wu's p_i2 = [m, m s, I] is the case c = (0, s) (com on the link axis); the perpendicular first
moment is kept here so that the model is exact for any com the config gives. The counterweights
move with their sliders through the coupling ratio of the config (``counterweight.ratio``), as in
the URDF's coupling closure. Friction is not part of Wu's model (``friction=True`` raises).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError, InvalidModelError, SingularConfigurationError
from ..kinematics.analysis import check_conditioning
from . import formulations
from .formulations import formulation_kinematics

_ROBOT = "planar_redundant"


def _body_params(body: dict, name: str, rotating: bool):
    """[m, m c_x, m c_y, I_zz about the link-frame origin] (or [m]) of one config body."""
    try:
        m = float(body["mass"])
        cx, cy = float(body["com"][0]), float(body["com"][1])
        izz = float(body["inertia"][2])
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise InvalidModelError(f"{_ROBOT}: body '{name}' needs mass, com and inertia: {exc!r}") from exc
    if not rotating:
        return [m]
    return [m, m * cx, m * cy, izz + m * (cx * cx + cy * cy)]


class Formulation(formulations.Formulation):
    """Wu's pivotal-point virtual-work dynamics of ``planar_redundant`` (both variants).

    ``Formulation(dyn)`` with a ``ClosedLoopDynamics`` (or anything with ``.kin``), or
    ``Formulation("planar_redundant", variant)``. Immutable after construction.
    """

    method = "pivotal_virtual_work"
    paper = "Wu, Wang, Wang, Li, Mechatronics 19 (2009), seed 003"
    robots = (_ROBOT,)
    models_friction = False      # Wu's model has no friction terms

    def __init__(self, dyn=_ROBOT, variant: str | None = None):
        kin = formulation_kinematics(dyn, self.method, self.robots, variant)
        clm = kin.model
        cfg = clm.spec
        self.kin = kin
        self.variant = clm.variant
        try:
            geo = cfg.blocks["geometry"]
            self._l = float(geo["l"])
            self._l5 = float(geo["l5"])
            self._l6 = float(geo["l6"])
            self._cx = tuple(float(c) for c in geo["column_x"])
            self.struts = tuple(int(s) for s in cfg.blocks["struts"])
            self._ratio = float(cfg.blocks["counterweight"]["ratio"])
            self._g = np.array([float(cfg.gravity[0]), float(cfg.gravity[1])])
            if abs(float(cfg.gravity[2])) > 0.0:
                raise InvalidModelError(f"{_ROBOT}: gravity must lie in the mechanism plane, got {cfg.gravity}")
            bodies = cfg.blocks["bodies"]
            self.actuated_joints = tuple(clm.actuated_joints)
            if float(cfg.alpha_sign) != -1.0:
                raise InvalidModelError(f"{_ROBOT}: Wu's alpha is clockwise (alpha_sign -1), config has "
                                        f"{cfg.alpha_sign}")
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidModelError(f"{_ROBOT}: config incomplete for pivotal_virtual_work: {exc!r}") from exc
        # rows of tau: Wu's tau = [F1 F2 F3 F4] (sliders 1, 2, struts 1, 2; eq. 35), restricted to
        # the struts present and put in actuated_joints order
        full = ["slider1", "slider2"] + [f"strut{s}" for s in self.struts]
        try:
            self._rows = tuple(full.index(n) for n in self.actuated_joints)
        except ValueError as exc:
            raise InvalidModelError(f"{_ROBOT}: actuated joints {self.actuated_joints} must be among {full}") from exc
        self.n_actuated = len(self._rows)
        self.redundant = self.n_actuated > 3

        # parameter vector p (eq. 36, 38), Wu's order: sliders, links, strut upper parts, strut
        # lower parts, counterweights, platform
        names, values, parts = [], [], []

        def add(part, body, kind, pivot, side):
            vals = _body_params(bodies[body], body, kind == "rotating")
            suffix = ["m", "mx", "my", "Izz"][:len(vals)]
            start = len(values)
            names.extend(f"{part}.{s}" for s in suffix)
            values.extend(vals)
            parts.append((part, kind, pivot, side, start))

        try:
            for i in (1, 2):
                add(f"slider{i}_body", "slider", "slider", "E", i)
            for i in (1, 2):
                add(f"link{i}", "link", "rotating", "D", i)
            for s in self.struts:
                add(f"strut{s}_upper", "strut_upper", "rotating", "E", s)
            for s in self.struts:
                add(f"strut{s}_lower", "strut_lower", "rotating", "B", s)
            for i in (1, 2):
                add(f"counterweight{i}_body", "counterweight", "counterweight", "CW", i)
            add("platform", "platform", "rotating", "A", 0)
        except KeyError as exc:
            raise InvalidModelError(f"{_ROBOT}: config has no body {exc.args[0]!r}") from exc
        self.parameter_names = tuple(names)
        self._p = np.array(values)
        self._p.flags.writeable = False
        self._parts = tuple(parts)

    # ------------------------------------------------------------------ parameters
    def parameters(self) -> np.ndarray:
        """Wu's parameter vector p (eq. 36 / 38) from the config, in ``parameter_names`` order."""
        return self._p.copy()

    # ------------------------------------------------------------------ kinematics (eq. 18-29)
    def _state(self, pose, twist, accel, check: bool = True):
        """Positions, partial velocity / angular velocity matrices and accelerations of every part.

        Returns (x-dependent quantities) as a dict of scalars and small arrays.
        """
        kin = self.kin
        if twist is None:
            twist = np.zeros(3)
        if accel is None:
            accel = np.zeros(3)
        pose, twist, accel = kin.validate(pose, twist, accel)
        if check:
            kin.inverse(pose)       # reachability, joint and cut-joint limits (raises)
        p, R = pose.position, pose.rotation
        x, y = float(p[0]), float(p[1])
        sa, ca = -float(R[1, 0]), float(R[0, 0])          # R = Rz(-alpha): Wu's clockwise alpha
        xd, yd, ad = (float(v) for v in twist)
        xdd, ydd, add = (float(v) for v in accel)
        l, l5, l6 = self._l, self._l5, self._l6

        st = {"xdot": np.array([xd, yd, ad])}
        # ---- sliders and links, eq. 19-21, 23, 27-29
        for i in (1, 2):
            sb = (x - self._cx[i - 1]) / l                       # sin beta_i (eq. 19)
            if not abs(sb) < 1.0:
                raise SingularConfigurationError(f"link{i}: sin(beta_{i}) = {sb:.6g}, |.| must be < 1")
            cb = math.sqrt(1.0 - sb * sb)                        # '-' root of eq. 20a-b: cos beta_i > 0
            tb = sb / cb
            q = y - l5 - l * cb                                  # eq. 20a-b
            bd = xd / (l * cb)                                   # eq. 23
            bdd = xdd / (l * cb) + xd * xd * sb / (l * l * cb ** 3)
            qd = yd + tb * xd                                    # eq. 21
            qdd = ydd + tb * xdd + xd * xd / (l * cb ** 3)
            HE = np.array([[0.0, 0.0, 0.0], [tb, 1.0, 0.0]])     # eq. 27: [0 1]^T J_i
            st[f"E{i}"] = (np.array([self._cx[i - 1], q]), HE, np.array([0.0, qdd]))
            st[f"D{i}"] = (np.array([self._cx[i - 1], q + l5]), HE, np.array([0.0, qdd]))   # eq. 29
            st[f"CW{i}"] = (None, self._ratio * HE, np.array([0.0, self._ratio * qdd]))
            # link angle: theta = -beta, G = -[1 / (l cos beta), 0, 0] (eq. 28)
            st[f"link{i}"] = (-beta_from(sb, cb), np.array([-1.0 / (l * cb), 0.0, 0.0]), -bd, -bdd)
            st[f"J{i}"] = np.array([tb, 1.0, 0.0])                # eq. 21
            st[f"q{i}"] = (q, qd, qdd)
        # ---- point B (eq. 17, 20c-d): B = A1 + R r'_B, r'_B = (0, -l6)
        B = np.array([x - l6 * sa, y - l6 * ca])
        HB = np.array([[1.0, 0.0, -l6 * ca], [0.0, 1.0, l6 * sa]])   # [e1^T; e2^T] + E R r'_B e3^T (eq. 22)
        aB = np.array([xdd - l6 * ca * add + l6 * sa * ad * ad, ydd + l6 * sa * add + l6 * ca * ad * ad])
        st["B"] = (B, HB, aB)
        st["A"] = (np.array([x, y]), np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]), np.array([xdd, ydd]))
        st["platform"] = (-math.atan2(sa, ca), np.array([0.0, 0.0, -1.0]), -ad, -add)
        # ---- struts, eq. 18, 22
        for s in self.struts:
            E, HE, aE = st[f"E{s}"]
            r = B - E
            ls = math.hypot(r[0], r[1])
            if ls < 1e-9:
                raise SingularConfigurationError(f"strut{s}: length |E{s}B| = {ls:.3g} m must be > 0")
            sp, cp = r[0] / ls, r[1] / ls                              # eq. 18
            u, n = np.array([sp, cp]), np.array([cp, -sp])             # n = du/dphi
            Hr = HB - HE
            Jl = u @ Hr                                                # eq. 22: J_{i+2}
            Gphi = n @ Hr / ls                                         # phidot = Gphi xdot
            rd = Hr @ st["xdot"]
            ld, phid = float(u @ rd), float(n @ rd) / ls
            rdd = aB - aE
            # r'' = l'' u + 2 l' phi' n + l phi'' n - l phi'^2 u
            phidd = (float(n @ rdd) - 2.0 * ld * phid) / ls
            st[f"strut{s}"] = (-math.atan2(sp, cp), -Gphi, -phid, -phidd)
            st[f"J{s + 2}"] = Jl
        return st

    # ------------------------------------------------------------------ Wu eq. 21-25
    def jacobian(self, pose) -> np.ndarray:
        """Wu's J (eq. 24, redundant) or J_N (eq. 25, nonredundant), rows in actuated_joints order."""
        st = self._state(pose, None, None)
        return self._jac(st)

    def _jac(self, st):
        full = [st["J1"], st["J2"]] + [st[f"J{s + 2}"] for s in self.struts]
        return np.array([full[r] for r in self._rows])

    def partial_matrices(self, pose) -> dict:
        """{part: (H_P (2 x 3), G (3,) or None)}: partial velocity matrix of the pivotal point
        (eq. 1, 27, 29) and partial angular velocity matrix of the part (eq. 2, 26, 28), with G
        the counter-clockwise angular rate row (= minus Wu's clockwise one)."""
        st = self._state(pose, None, None)
        out = {}
        for part, kind, pivot, side, _ in self._parts:
            H = st[pivot if pivot in ("A", "B") else f"{pivot}{side}"][1]
            G = None
            if kind == "rotating":
                key = "platform" if part == "platform" else part.split("_")[0]
                G = st[key][1]
            out[part] = (H.copy(), None if G is None else G.copy())
        return out

    # ------------------------------------------------------------------ Omega (eq. 30-38)
    def observation_matrix(self, pose, twist, accel, gravity=None):
        """(Omega (3 x n_p), parameter names) with J^T tau = Omega p (eq. 16, 36, 38).

        gravity: None uses the config gravity; a 3-vector (in-plane) replaces it.
        """
        st = self._state(pose, twist, accel)
        return self._omega(st, self._gravity(gravity)), self.parameter_names

    def _gravity(self, gravity):
        if gravity is None:
            return self._g
        from ..errors import check_vector
        g = check_vector("gravity", gravity, 3)
        if g[2] != 0.0:
            raise InvalidInputError(f"gravity must lie in the mechanism plane (z = 0), got {g}")
        return g[:2]

    def _omega(self, st, g):
        Om = np.zeros((3, len(self._p)))
        for part, kind, pivot, side, k in self._parts:
            key = pivot if pivot in ("A", "B") else f"{pivot}{side}"
            _, H, aP = st[key]
            ag = aP - g
            if kind != "rotating":
                # translating part (slider eq. 30, counterweight): F = -m (a_P - g), M = 0
                Om[:, k] += H.T @ ag
                continue
            gkey = "platform" if part == "platform" else part.split("_")[0]
            th, G, thd, thdd = st[gkey]
            c, s = math.cos(th), math.sin(th)
            Rth = np.array([[c, -s], [s, c]])                 # body frame -> base (counter-clockwise theta)
            # inertia force about P (eq. 9-10, 31, 33), as the applied force it balances:
            #   f = m (a_P - g) + (thetadd S R - thetad^2 R) (m c),  S = quarter turn (k x .)
            # moment about P (eq. 9, 32, 33): n = I_P thetadd + (R m c) x (a_P - g)
            SR = np.array([[-Rth[1, 0], -Rth[1, 1]], [Rth[0, 0], Rth[0, 1]]])
            A = thdd * SR - thd * thd * Rth                     # A_i2 of eq. 33 (2 x 2: columns m c_x, m c_y)
            Bn = np.array([Rth[0, 0] * ag[1] - Rth[1, 0] * ag[0], Rth[0, 1] * ag[1] - Rth[1, 1] * ag[0]])  # B_i2
            # Omega_part = [H^T G^T] [[a_P - g, A, 0], [0, B, thetadd]]  (eq. 34)
            Om[:, k] += H.T @ ag
            Om[:, k + 1:k + 3] += H.T @ A + np.outer(G, Bn)
            Om[:, k + 3] += G * thdd
        return Om

    def generalized_force(self, pose, twist, accel, gravity=None) -> np.ndarray:
        """Omega p = J^T tau: the task-space generalized force (x, y, alpha) of the driving forces.

        Evaluated directly as sum_parts (H_P^T F_P + G^T M_P) (eq. 15, 35, 37) in scalar
        arithmetic, without forming Omega (the same equations as ``observation_matrix``).
        """
        return np.array(self._fast(pose, twist, accel, self._gravity(gravity))[0])

    def _fast(self, pose, twist, accel, g):
        """(Q = Omega p as a list, J rows as lists) in scalars; same equations as _state/_omega."""
        kin = self.kin
        if twist is None:
            twist = (0.0, 0.0, 0.0)
        if accel is None:
            accel = (0.0, 0.0, 0.0)
        pose, twist, accel = kin.validate(pose, twist, accel)
        kin.inverse(pose)       # reachability, joint and cut-joint limits (raises)
        p, R = pose.position, pose.rotation
        x, y = float(p[0]), float(p[1])
        sa, ca = -float(R[1, 0]), float(R[0, 0])
        xd, yd, ad = (float(v) for v in twist)
        xdd, ydd, add = (float(v) for v in accel)
        gx, gy = float(g[0]), float(g[1])
        l, l6, ratio = self._l, self._l6, self._ratio
        P = self._p.tolist()
        Q = [0.0, 0.0, 0.0]

        def rotating(k, H, ax, ay, c, s, thd, thdd, G):
            # eq. 9-10, 31-33 with p = [m, m c_x, m c_y, I_P] = P[k:k+4], theta counter-clockwise
            m, mcx, mcy, ip = P[k], P[k + 1], P[k + 2], P[k + 3]
            rx, ry = c * mcx - s * mcy, s * mcx + c * mcy
            agx, agy = ax - gx, ay - gy
            fx = m * agx - thdd * ry - thd * thd * rx
            fy = m * agy + thdd * rx - thd * thd * ry
            n = ip * thdd + rx * agy - ry * agx
            for j in range(3):
                Q[j] += H[0][j] * fx + H[1][j] * fy + G[j] * n

        start = {part: k for part, _, _, _, k in self._parts}
        col, tb_, qdd_, Jrows = self._cx, [], [], []
        for i in (1, 2):
            sb = (x - col[i - 1]) / l
            if not abs(sb) < 1.0:
                raise SingularConfigurationError(f"link{i}: sin(beta_{i}) = {sb:.6g}, |.| must be < 1")
            cb = math.sqrt(1.0 - sb * sb)
            tb = sb / cb
            bd = xd / (l * cb)
            bdd = xdd / (l * cb) + xd * xd * sb / (l * l * cb ** 3)
            qdd = ydd + tb * xdd + xd * xd / (l * cb ** 3)
            tb_.append(tb)
            qdd_.append(qdd)
            Jrows.append([tb, 1.0, 0.0])
            # slider (eq. 30) and counterweight: translation only, H = [0 1]^T J_i (times ratio)
            fy = P[start[f"slider{i}_body"]] * (qdd - gy)
            fc = P[start[f"counterweight{i}_body"]] * (ratio * qdd - gy)
            Q[0] += tb * (fy + ratio * fc)
            Q[1] += fy + ratio * fc
            rotating(start[f"link{i}"], ((0.0, 0.0, 0.0), (tb, 1.0, 0.0)), 0.0, qdd, cb, -sb, -bd, -bdd,
                     (-1.0 / (l * cb), 0.0, 0.0))
        bx, by = x - l6 * sa, y - l6 * ca
        HB = ((1.0, 0.0, -l6 * ca), (0.0, 1.0, l6 * sa))
        aBx = xdd - l6 * ca * add + l6 * sa * ad * ad
        aBy = ydd + l6 * sa * add + l6 * ca * ad * ad
        rotating(start["platform"], ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0)), xdd, ydd, ca, -sa, -ad, -add, (0.0, 0.0, -1.0))
        for s in self.struts:
            k = s - 1
            rx, ry = bx - col[k], by - (y - self._l5 - l * math.sqrt(1.0 - ((x - col[k]) / l) ** 2))
            ls = math.hypot(rx, ry)
            if ls < 1e-9:
                raise SingularConfigurationError(f"strut{s}: length |E{s}B| = {ls:.3g} m must be > 0")
            sp, cp = rx / ls, ry / ls
            Hr = (HB[0], (HB[1][0] - tb_[k], 0.0, HB[1][2]))        # H_B - H_E
            Jl = [sp * Hr[0][j] + cp * Hr[1][j] for j in range(3)]
            Gp = [(cp * Hr[0][j] - sp * Hr[1][j]) / ls for j in range(3)]
            ld = Jl[0] * xd + Jl[2] * ad
            phid = Gp[0] * xd + Gp[2] * ad
            rddx, rddy = aBx, aBy - qdd_[k]
            phidd = (cp * rddx - sp * rddy - 2.0 * ld * phid) / ls
            G = (-Gp[0], -Gp[1], -Gp[2])
            rotating(start[f"strut{s}_upper"], ((0.0, 0.0, 0.0), (tb_[k], 1.0, 0.0)), 0.0, qdd_[k], cp, -sp,
                     -phid, -phidd, G)
            rotating(start[f"strut{s}_lower"], HB, aBx, aBy, cp, -sp, -phid, -phidd, G)
            Jrows.append(Jl)
        return Q, [Jrows[r] for r in self._rows]

    # ------------------------------------------------------------------ eq. 39
    def inverse_dynamics(self, pose, twist, accel, weights=None, friction: bool = False, gravity=None) -> np.ndarray:
        """Driving forces tau (actuated_joints order) of J^T tau = Omega p.

        Nonredundant: the unique tau = J_N^-T Omega_N p_NN (eq. 38). Redundant: the minimum-norm
        tau = J (J^T J)^-1 Omega p (eq. 39); with ``weights`` (a positive vector w, or a symmetric
        positive definite matrix W) the weighted minimum norm minimizing tau^T W tau,
        tau = W^-1 J (J^T W^-1 J)^-1 Omega p.
        """
        if friction:
            raise InvalidInputError("pivotal_virtual_work: Wu's model has no friction (friction must be False; "
                                    "the generic engine has the friction terms)")
        Q, J = self._fast(pose, twist, accel, self._gravity(gravity))
        if weights is None:
            # well-conditioned 3 x 3 systems in scalars (Cramer); anything doubtful goes to _solve
            if self.redundant:
                A = [[sum(r[i] * r[j] for r in J) for j in range(3)] for i in range(3)]     # J^T J
            else:
                A = [[J[j][i] for j in range(3)] for i in range(3)]                         # J_N^T
            x = _solve3(A, Q)
            if x is not None:
                return np.array([sum(r[j] * x[j] for j in range(3)) for r in J]) if self.redundant else np.array(x)
        return self._solve(np.array(J), np.array(Q), weights)

    def _solve(self, J, f, weights):
        n = self.n_actuated
        check_conditioning(J, f"Jacobian J ({n} x 3)")
        if not self.redundant:
            if weights is not None:
                raise InvalidInputError("weights apply to the redundant variant only")
            return np.linalg.solve(J.T, f)
        if weights is None:
            return J @ np.linalg.solve(J.T @ J, f)           # eq. 39
        W = np.asarray(weights, dtype=float)
        if W.shape == (n,):
            if not (np.isfinite(W).all() and (W > 0).all()):
                raise InvalidInputError(f"weights must be finite and positive, got {W}")
            Wi = np.diag(1.0 / W)
        elif W.shape == (n, n):
            if not np.isfinite(W).all() or not np.allclose(W, W.T):
                raise InvalidInputError("weight matrix must be finite and symmetric")
            try:
                np.linalg.cholesky(W)
            except np.linalg.LinAlgError as exc:
                raise InvalidInputError("weight matrix must be positive definite") from exc
            Wi = np.linalg.inv(W)
        else:
            raise InvalidInputError(f"weights must have shape ({n},) or ({n}, {n}), got {W.shape}")
        WJ = Wi @ J
        return WJ @ np.linalg.solve(J.T @ WJ, f)

    def null_space(self, pose) -> np.ndarray:
        """Unit basis (n_actuated x (n_actuated - 3)) of the internal forces: J^T t = 0."""
        J = self.jacobian(pose)
        _, _, Vt = np.linalg.svd(J.T)
        return Vt[3:].T.copy()

    # ------------------------------------------------------------------ task-space matrices
    def mass_matrix(self, pose) -> np.ndarray:
        """Task-space M (3 x 3): column k = Omega(pose, 0, e_k, g = 0) p (Omega is linear in xddot)."""
        zero = (0.0, 0.0)
        return np.array([self._fast(pose, (0.0, 0.0, 0.0), e, zero)[0]
                         for e in ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0))]).T

    def gravity_vector(self, pose, gravity=None) -> np.ndarray:
        """Task-space gravity term G_x (Omega p at rest)."""
        return np.array(self._fast(pose, None, None, self._gravity(gravity))[0])


def _solve3(A, b):
    """x with A x = b for a 3 x 3 A (lists) by Cramer's rule, or None when A is not clearly regular."""
    (a, b_, c), (d, e, f), (g, h, i) = A
    c0, c1, c2 = e * i - f * h, f * g - d * i, d * h - e * g
    det = a * c0 + b_ * c1 + c * c2
    fro = math.sqrt(sum(v * v for row in A for v in row))
    if not abs(det) > 1e-6 * fro ** 3:
        return None
    u, v, w = b
    x0 = (u * c0 + v * (c * h - b_ * i) + w * (b_ * f - c * e)) / det
    x1 = (u * c1 + v * (a * i - c * g) + w * (c * d - a * f)) / det
    x2 = (u * c2 + v * (b_ * g - a * h) + w * (a * e - b_ * d)) / det
    return [x0, x1, x2]


def beta_from(s: float, c: float) -> float:
    return math.atan2(s, c)
