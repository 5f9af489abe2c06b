"""Lopes' generalized-momentum dynamics of the 6-PUS manipulator (``lopes``), seed 001.

A. M. Lopes, "A computational efficient approach to the dynamic modeling of 6-DOF parallel
manipulators", eq. (10)-(67). An independent implementation of the paper's equations: the
kinematics object is used only to validate the input (``dyn.kin.validate``); every position,
velocity, Jacobian and Jacobian derivative below is written out here from the geometry in the
config (Lopes' velocity kinematics, after Merlet and Gosselin).

Method (sec. 3): each rigid body's generalized momentum q_c = I_c u_c (eq. 10-11) is written as
a matrix times Lopes' generalized velocity xdot_E = [v; psi' theta' phi'] (position rates and
Euler-angle rates, eq. 3, 5), through T = diag(I, J_A) (eq. 8, 9, 23). Its time derivative is the
kinetic force on the body (eq. 12); projected on the platform by the transpose of the body's
velocity Jacobian it is a wrench on {P} in {B}:

    platform        f_P = d/dt(I_P|B T) xdot_E + I_P|B T xddot_E                          (eq. 24, 27-28)
    actuators       tau_A = m_A (Jdot_E xdot_E + J_E xddot_E),  f_A = J_C^T tau_A          (eq. 32-35)
    link transl.    f_Lt = m_L J_B^T [d/dt(J_B T) xdot_E + J_B T xddot_E]                  (eq. 43-46)
    link rotation   f_Lr = J_D^T [d/dt(I_L|B J_D T) xdot_E + I_L|B J_D T xddot_E]           (eq. 59-62)
    gravity         f_gra = diag(I, J_A^-T) dP/dx_E,  P = potential energy                (eq. 63-67)

and the actuator forces are tau = J_C^-T sum(f) (eq. 2, 25). Eq. (1) in Lopes' form is

    I(x) xddot_E + V(x, xdot) xdot_E + G(x) = f = J_C^T tau,

with I = sum of eq. (27), (34), (45), (61), V = sum of eq. (28), (35), (46), (62) and G the
wrench of eq. (64)-(67). The left side is a wrench in {B} (force at the platform origin, moment),
the velocity is the Euler-rate vector: I(x) is NOT symmetric (the paper says so after eq. 28).
Relation to the generic engine (twist xi = T xdot_E, M xidot + C xi + G_x = J^T tau):

    I = M T,    V xdot_E = M Tdot xdot_E + C xi,    G = G_x;     M = I T^-1.

V itself differs from M Tdot + C T as a matrix (Lopes' V has no skew-symmetry property; only
V xdot_E is unique); the tests check exactly these relations.

Bodies and the paper's modelling assumptions (checked against the config at construction; the
generic engine, which uses the URDF built from the same numbers, then agrees exactly):

* platform: mass m_P, inertia about its com in {P} (eq. 16-17); the com at the origin of {P}
  (eq. 26: the force acts on the centre of mass of the platform);
* actuators: point masses m_A translating along z_B (sec. 3.2; their inertia does no work);
* fixed-length links: com on the link axis at b_cm from the spherical joint (eq. 36-37, Fig. 2;
  config com = [L - b_cm, 0, 0] in the link frame, whose origin is the U joint), inertia about the
  com in Lopes' {L_i} (eq. 49-53: x along a_i, y horizontal). Eq. (55) gives only the part of the
  link's angular velocity normal to a_i; the link does turn about a_i (at u1' a_iz / L, see
  kinematics/hexapod_pus.py), and that spin does no work only if I_L e_x = 0 and I_Lyy = I_Lzz
  (Table 2: diag(0, 0.1, 0.1)). Other link inertias raise InvalidModelError.

Lopes' Euler angles (eq. 3-4): psi about z, theta about y', phi about x'', R = Rz Ry Rx: our
(yaw, pitch, roll). J_A (eq. 9) is singular at cos(theta) = 0 (SingularConfigurationError).
Friction is not part of Lopes' model (``friction=True`` raises InvalidInputError).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError, InvalidModelError, SingularConfigurationError, UnreachablePoseError
from ..kinematics.analysis import check_conditioning
from ..kinematics.task_space import Pose
from . import formulations
from .formulations import formulation_kinematics

_ROBOT = "lopes"
_EZ = np.array([0.0, 0.0, 1.0])


def _skew(v):
    """[v]x for v (..., 3) -> (..., 3, 3)."""
    v = np.asarray(v)
    S = np.zeros(v.shape[:-1] + (3, 3), dtype=v.dtype)
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


def _cross(u, v):
    """u x v along the last axis (broadcasting); np.cross costs ~15 us per call on (6, 3)."""
    u0, u1, u2 = u[..., 0], u[..., 1], u[..., 2]
    v0, v1, v2 = v[..., 0], v[..., 1], v[..., 2]
    return np.stack([u1 * v2 - u2 * v1, u2 * v0 - u0 * v2, u0 * v1 - u1 * v0], axis=-1)


def _inertia(values):
    """[ixx, iyy, izz, ixy, ixz, iyz] -> symmetric 3 x 3."""
    ixx, iyy, izz, ixy, ixz, iyz = (float(x) for x in values)
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


@dataclass(frozen=True)
class LopesModel:
    """Eq. (1) in Lopes' form at one state: I xddot_E + V xdot_E + G = f = J_C^T tau."""

    I: np.ndarray          # 6 x 6, eq. (27) + (34) + sum (45) + (61)
    V: np.ndarray          # 6 x 6, eq. (28) + (35) + sum (46) + (62)
    G: np.ndarray          # 6, eq. (64)-(67), wrench in {B}
    T: np.ndarray          # 6 x 6, eq. (23)
    Tdot: np.ndarray       # 6 x 6
    JC: np.ndarray         # 6 x 6, eq. (6)
    euler_rates: np.ndarray  # xdot_E = [x' y' z' psi' theta' phi'] (eq. 3, 5)


class Formulation(formulations.Formulation):
    """Lopes' generalized-momentum dynamics of ``lopes``.

    ``Formulation(dyn)`` with a ``ClosedLoopDynamics`` (or anything with ``.kin``, or the
    kinematics itself), or ``Formulation("lopes")``. Immutable after construction.
    """

    method = "generalized_momentum"
    paper = "Lopes, seed 001"
    robots = (_ROBOT,)
    models_friction = False      # Lopes' model has no friction terms

    def __init__(self, dyn=_ROBOT, variant: str | None = None):
        kin = formulation_kinematics(dyn, self.method, self.robots, variant)
        clm = kin.model
        cfg = clm.spec
        self.kin = kin
        try:
            geo = cfg.blocks["geometry"]
            rb, rp, L = float(geo["base_radius"]), float(geo["platform_radius"]), float(geo["link_length"])
            gb = np.radians(np.asarray(geo["base_angles_deg"], float))
            gp = np.radians(np.asarray(geo["platform_angles_deg"], float))
            bodies = cfg.blocks["bodies"]
            plat, act, link = bodies["platform"], bodies["actuator"], bodies["link"]
            self.m_P = float(plat["mass"])
            I_P = _inertia(plat["inertia"])
            c_P = np.asarray(plat["com"], float)
            self.m_A = float(act["mass"])
            self.m_L = float(link["mass"])
            c_L = np.asarray(link["com"], float)
            I_L = _inertia(link["inertia"])
            self.gravity = np.asarray(cfg.gravity, float)
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidModelError(f"robot '{clm.name}': incomplete config for generalized_momentum ({exc!r})") \
                from exc
        if gb.shape != (6,) or gp.shape != (6,) or self.gravity.shape != (3,):
            raise InvalidModelError("generalized_momentum needs six base/platform angles and a gravity 3-vector")
        if np.abs(c_P).max() > 0.0:
            raise InvalidModelError(f"Lopes' platform model (eq. 13-26) has its com at the origin of {{P}}; "
                                    f"config bodies.platform.com = {c_P.tolist()}")
        if abs(c_L[1]) > 0.0 or abs(c_L[2]) > 0.0:
            raise InvalidModelError(f"Lopes' link com lies on the link axis (eq. 36-37, Fig. 2); config "
                                    f"bodies.link.com = {c_L.tolist()}")
        if np.abs(I_L[:, 0]).max() > 1e-12 * max(1.0, np.abs(I_L).max()) or \
                abs(I_L[1, 1] - I_L[2, 2]) > 1e-12 * max(1.0, abs(I_L[1, 1])) or abs(I_L[1, 2]) > 0.0:
            raise InvalidModelError(
                "Lopes' eq. (55) drops the link's spin about its own axis; that is exact only for a link "
                f"inertia diag(0, I, I) in {{L_i}} (Table 2), config bodies.link.inertia = {list(link['inertia'])}")
        self.L = L
        self.L2 = L * L
        self.b_cm = L - float(c_L[0])                                     # eq. (36), Fig. 2
        self.I_P = I_P                                                    # eq. (16), about the com, in {P}
        self.I_L = I_L                                                    # eq. (53), in {L_i}
        self.base_points = np.column_stack([rb * np.cos(gb), rb * np.sin(gb), np.zeros(6)])      # b_i (6, 3)
        self.platform_points = np.column_stack([rp * np.cos(gp), rp * np.sin(gp), np.zeros(6)])  # p_i in {P}
        self.actuated_joints = tuple(clm.actuated_joints)
        for arr in (self.I_P, self.I_L, self.base_points, self.platform_points, self.gravity):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ Euler angles
    @staticmethod
    def _euler(R):
        """(psi, theta, phi) of R = Rz(psi) Ry(theta) Rx(phi) (eq. 4)."""
        return (math.atan2(R[1, 0], R[0, 0]), math.atan2(-R[2, 0], math.hypot(R[0, 0], R[1, 0])),
                math.atan2(R[2, 1], R[2, 2]))

    @staticmethod
    def _JA(psi, theta):
        """J_A of eq. (9): omega = J_A [psi' theta' phi']."""
        sps, cps, sth, cth = math.sin(psi), math.cos(psi), math.sin(theta), math.cos(theta)
        return np.array([[0.0, -sps, cth * cps], [0.0, cps, cth * sps], [1.0, 0.0, -sth]])

    @staticmethod
    def _JA_dot(psi, theta, psid, thetad):
        """Time derivative of eq. (9)."""
        sps, cps, sth, cth = math.sin(psi), math.cos(psi), math.sin(theta), math.cos(theta)
        return np.array([[0.0, -cps * psid, -sth * cps * thetad - cth * sps * psid],
                         [0.0, -sps * psid, -sth * sps * thetad + cth * cps * psid],
                         [0.0, 0.0, -cth * thetad]])

    def _T(self, R):
        psi, theta, phi = self._euler(R)
        if abs(math.cos(theta)) < 1e-9:
            raise SingularConfigurationError(f"theta = {theta:.6g} rad: J_A (Lopes eq. 9) is singular at "
                                             "|theta| = pi/2")
        T = np.eye(6)
        T[3:, 3:] = self._JA(psi, theta)                                  # eq. (23)
        return T, psi, theta

    def euler_rates(self, pose: Pose, twist, accel=None):
        """Lopes' xdot_E (and xddot_E) from the twist (v, omega) and its derivative (p'', omega')."""
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        T, psi, theta = self._T(pose.rotation)
        xd = np.concatenate([twist[:3], np.linalg.solve(T[3:, 3:], twist[3:])])
        if accel is None:
            return xd
        Td3 = self._JA_dot(psi, theta, xd[3], xd[4])
        xdd = np.concatenate([accel[:3], np.linalg.solve(T[3:, 3:], accel[3:] - Td3 @ xd[3:])])
        return xd, xdd

    def twist_from_euler(self, x_E, xd_E, xdd_E=None):
        """(pose, twist, accel) from Lopes' [x y z psi theta phi] and their rates (eq. 4, 8, 9).

        omega = J_A [psi' theta' phi'], omega' = J_A [psi'' theta'' phi''] + J_A' [psi' theta' phi'].
        """
        x_E, xd_E = np.asarray(x_E, float), np.asarray(xd_E, float)
        xdd_E = np.zeros(6) if xdd_E is None else np.asarray(xdd_E, float)
        for name, val in (("position", x_E), ("velocity", xd_E), ("acceleration", xdd_E)):
            if val.shape != (6,) or not np.isfinite(val).all():
                raise InvalidInputError(f"Lopes' generalized {name} must be a finite 6-vector, got {val!r}")
        pose = self.kin.pose_from_lopes(x_E)
        JA = self._JA(x_E[3], x_E[4])
        JAd = self._JA_dot(x_E[3], x_E[4], xd_E[3], xd_E[4])
        twist = np.concatenate([xd_E[:3], JA @ xd_E[3:]])
        accel = np.concatenate([xdd_E[:3], JA @ xdd_E[3:] + JAd @ xd_E[3:]])
        return pose, twist, accel

    # ------------------------------------------------------------------ the model
    def _terms(self, p, R, xd, xdd=None, gravity=None):
        """Every body's matrices of eq. (24)-(67) at (x, xdot_E); with xddot_E the forces too."""
        T, psi, theta = self._T(R)
        Td = np.zeros((6, 6))
        Td[3:, 3:] = self._JA_dot(psi, theta, xd[3], xd[4])
        xi = T @ xd                                                      # [v; omega] (eq. 8)
        v, w = xi[:3], xi[3:]
        g = self.gravity if gravity is None else gravity
        L, L2 = self.L, self.L2
        # legs (eq. 5-7, 36-57): r_i = R p_i, a_i = P_i - (b_i + l_i z_B), |a_i| = L, a_iz > 0
        r = self.platform_points @ R.T                                   # (6, 3)
        d = p + r - self.base_points
        rho2 = d[:, 0] ** 2 + d[:, 1] ** 2
        h2 = L2 - rho2
        if h2.min() < 0.0:
            i = int(np.argmin(h2))
            raise UnreachablePoseError(f"leg {i + 1}: horizontal distance {math.sqrt(rho2[i]):.6g} m from the "
                                       f"actuator axis to P_i exceeds the link length L = {L:.6g} m")
        h = np.sqrt(h2)
        if h.min() <= 1e-9 * L:
            raise SingularConfigurationError(f"leg {int(np.argmin(h)) + 1}: link horizontal (a_z = {h.min():.3g} m):"
                                             " J_C is unbounded (inverse singularity)")
        if rho2.min() <= 1e-18 * L2:
            raise SingularConfigurationError(f"leg {int(np.argmin(rho2)) + 1}: link vertical: y_L of eq. (51) "
                                             "is undefined")
        a = np.column_stack([d[:, 0], d[:, 1], h])
        # J_C (eq. 6): a_i . (v + omega x r_i - l_i' z_B) = 0  ->  rows [a_i, r_i x a_i] / a_iz
        JC = np.hstack([a, _cross(r, a)]) / h[:, None]
        ld = JC @ xi
        rd = _cross(w, r)                                             # r_i' = omega x r_i
        ad = v + rd - ld[:, None] * _EZ                                  # a_i'
        JCd = (np.hstack([ad, _cross(rd, a) + _cross(r, ad)]) - JC * ad[:, 2:3]) / h[:, None]
        JE = JC @ T                                                      # eq. (5) = J_C T (eq. 31)
        JEd = JCd @ T + JC @ Td
        # D_i = d(v + omega x r_i)/d xi = [I, -[r_i]x]
        Sr, Srd = _skew(r), _skew(rd)
        D = np.zeros((6, 3, 6))
        D[:, :, :3] = np.eye(3)
        D[:, :, 3:] = -Sr
        Dd = np.zeros((6, 3, 6))
        Dd[:, :, 3:] = -Srd
        ez_JC = _EZ[None, :, None] * JC[:, None, :]                      # z_B J_Ci (6, 3, 6)
        ez_JCd = _EZ[None, :, None] * JCd[:, None, :]

        # ---- platform (eq. 13-28)
        IPr = R @ self.I_P @ R.T                                         # eq. (17)
        IP = np.zeros((6, 6))
        IP[:3, :3] = self.m_P * np.eye(3)                                # eq. (14)
        IP[3:, 3:] = IPr                                                 # eq. (19)
        IPd = np.zeros((6, 6))
        Sw = _skew(w)
        IPd[3:, 3:] = Sw @ IPr - IPr @ Sw                                # d/dt (R I R^T), R' = [omega]x R
        A_P = IP @ T                                                     # eq. (27)
        V_P = IPd @ T + IP @ Td                                          # eq. (28)
        # ---- actuators (eq. 29-35)
        A_A = self.m_A * JC.T @ JE                                       # eq. (34)
        V_A = self.m_A * JC.T @ JEd                                      # eq. (35)
        # ---- links, translation (eq. 36-46): p_Li' = (1 - b/L)(v + omega x r_i) + (b/L) l_i' z_B
        c1, c2 = 1.0 - self.b_cm / L, self.b_cm / L
        JB = c1 * D + c2 * ez_JC                                         # eq. (39-40)
        JBd = c1 * Dd + c2 * ez_JCd
        JBT = JB @ T
        JBTd = JBd @ T + JB @ Td                                         # d/dt (J_B T)
        JBt = JB.transpose(0, 2, 1)
        A_Lt = self.m_L * np.einsum("kij,kjl->il", JBt, JBT)            # sum of eq. (45)
        V_Lt = self.m_L * np.einsum("kij,kjl->il", JBt, JBTd)           # sum of eq. (46)
        # ---- links, rotation (eq. 47-62)
        x = a / L                                                        # eq. (50)
        rho = np.sqrt(rho2)
        y = np.column_stack([-a[:, 1], a[:, 0], np.zeros(6)]) / rho[:, None]   # eq. (51)
        z = _cross(x, y)                                               # eq. (52)
        RL = np.stack([x, y, z], axis=2)                                 # eq. (49), columns
        xdot = ad / L
        rhod = (a[:, 0] * ad[:, 0] + a[:, 1] * ad[:, 1]) / rho
        ydot = np.column_stack([-ad[:, 1], ad[:, 0], np.zeros(6)]) / rho[:, None] - y * (rhod / rho)[:, None]
        zdot = _cross(xdot, y) + _cross(x, ydot)
        RLd = np.stack([xdot, ydot, zdot], axis=2)
        RLt = RL.transpose(0, 2, 1)
        IL = RL @ self.I_L @ RLt                                         # eq. (48)
        ILd = RLd @ self.I_L @ RLt + RL @ self.I_L @ RLd.transpose(0, 2, 1)
        # omega_Li = (1/L^2) a_i x (v + omega x r_i - l_i' z_B) = J_Di xi   (eq. 55-57)
        E = D - ez_JC                                                    # a_i' = E_i xi
        Ed = Dd - ez_JCd
        Sa, Sad = _skew(a), _skew(ad)
        JD = Sa @ E / L2
        JDd = (Sad @ E + Sa @ Ed) / L2
        JDt = JD.transpose(0, 2, 1)
        A_Lr = np.einsum("kij,kjl->il", JDt, IL @ JD @ T)                # sum of eq. (61)
        V_Lr = np.einsum("kij,kjl->il", JDt, ILd @ JD @ T + IL @ JDd @ T + IL @ JD @ Td)   # sum of eq. (62)
        # ---- gravity (eq. 63-67): P = -m g . p_com; dP/dx_E = -m (dp_com/dx_E)^T g, dp_com/dx_E = J T
        Tg = np.eye(6)
        Tg[3:, 3:] = np.linalg.inv(T[3:, 3:]).T                          # eq. (67)
        dPP = -self.m_P * T[:3].T @ g                                    # eq. (64): p_com = x_pos
        dPA = -self.m_A * g[2] * JE.sum(axis=0)                          # eq. (65): p_com = b_i + l_i z_B (+ const)
        dPL = -self.m_L * np.einsum("kij,i->j", JBT, g)                  # eq. (66): p_com of eq. (37)
        G_P, G_A, G_L = Tg @ dPP, Tg @ dPA, Tg @ dPL
        out = dict(T=T, Td=Td, JC=JC, JE=JE, JEd=JEd, xi=xi, ld=ld,
                   A=dict(platform=A_P, actuators=A_A, links_translation=A_Lt, links_rotation=A_Lr),
                   V=dict(platform=V_P, actuators=V_A, links_translation=V_Lt, links_rotation=V_Lr),
                   G=dict(platform=G_P, actuators=G_A, links=G_L))
        return out

    # ------------------------------------------------------------------ public
    def _check(self, pose, twist, accel, friction):
        if friction:
            raise InvalidInputError("generalized_momentum: Lopes' model has no friction (friction must be False, "
                                    "pkm id --no-friction; the generic engine has the friction terms)")
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        if twist is None or accel is None:
            raise InvalidInputError("inverse dynamics needs a twist and an acceleration")
        return pose, twist, accel

    def _gravity(self, gravity):
        if gravity is None:
            return None
        g = np.asarray(gravity, float)
        if g.shape != (3,) or not np.isfinite(g).all():
            raise InvalidInputError(f"gravity must be a finite 3-vector, got {gravity!r}")
        return g

    def _solve(self, JC, f):
        check_conditioning(JC, "J_C (forward singularity: the actuators cannot balance the platform)")
        return np.linalg.solve(JC.T, f)                                  # eq. (2), (25)

    def contributions_euler(self, pose: Pose, xd, xdd, gravity=None) -> dict:
        """Actuator forces split by body, from Lopes' xdot_E, xddot_E (eq. 24-25, 32, 44, 60, 64-67).

        Keys ``platform``, ``actuators``, ``links`` (each kinetic + gravity; they sum to ``total``),
        and the finer ``<body>_kinetic`` / ``<body>_gravity``, ``links_translation`` /
        ``links_rotation`` (kinetic parts of the links).
        """
        pose = self.kin.validate(pose)[0]
        xd = np.asarray(xd, float)
        xdd = np.asarray(xdd, float)
        if xd.shape != (6,) or xdd.shape != (6,) or not (np.isfinite(xd).all() and np.isfinite(xdd).all()):
            raise InvalidInputError(f"Euler-rate velocity and acceleration must be finite 6-vectors, got "
                                    f"{xd.shape} and {xdd.shape}")
        t = self._terms(pose.position, pose.rotation, xd, gravity=self._gravity(gravity))
        A, V, G, JC = t["A"], t["V"], t["G"], t["JC"]
        kin = {k: V[k] @ xd + A[k] @ xdd for k in A}
        tau = {}
        tau["platform_kinetic"] = self._solve(JC, kin["platform"])                        # eq. (25)
        tau["actuators_kinetic"] = self.m_A * (t["JEd"] @ xd + t["JE"] @ xdd)              # eq. (32)
        tau["links_translation"] = self._solve(JC, kin["links_translation"])              # eq. (44)
        tau["links_rotation"] = self._solve(JC, kin["links_rotation"])                    # eq. (60)
        tau["links_kinetic"] = tau["links_translation"] + tau["links_rotation"]
        for k in ("platform", "actuators", "links"):
            tau[f"{k}_gravity"] = self._solve(JC, G[k])                                   # eq. (64)-(67)
            tau[k] = tau[f"{k}_kinetic"] + tau[f"{k}_gravity"]
        tau["total"] = tau["platform"] + tau["actuators"] + tau["links"]
        return tau

    def contributions(self, pose: Pose, twist, accel, gravity=None) -> dict:
        """Actuator forces due to the platform, the actuators and the fixed-length links (sum = total)."""
        pose, twist, accel = self._check(pose, twist, accel, False)
        xd, xdd = self.euler_rates(pose, twist, accel)
        return self.contributions_euler(pose, xd, xdd, gravity)

    def inverse_dynamics(self, pose: Pose, twist, accel, friction: bool = False, gravity=None) -> np.ndarray:
        """Actuator forces tau (N, actuated-joint order) for the platform motion (twist basis)."""
        pose, twist, accel = self._check(pose, twist, accel, friction)
        xd, xdd = self.euler_rates(pose, twist, accel)
        m = self._model(pose, xd, gravity)
        return self._solve(m.JC, m.I @ xdd + m.V @ xd + m.G)                              # eq. (1)-(2)

    def inverse_dynamics_euler(self, x_E, xd_E, xdd_E, gravity=None) -> np.ndarray:
        """Actuator forces from Lopes' own coordinates [x y z psi theta phi] and their derivatives."""
        x_E = np.asarray(x_E, float)
        if x_E.shape != (6,) or not np.isfinite(x_E).all():
            raise InvalidInputError(f"Lopes' generalized position must be a finite 6-vector, got {x_E!r}")
        return self.contributions_euler(self.kin.pose_from_lopes(x_E), xd_E, xdd_E, gravity)["total"]

    def _model(self, pose, xd, gravity=None) -> LopesModel:
        t = self._terms(pose.position, pose.rotation, xd, gravity=self._gravity(gravity))
        return LopesModel(I=sum(t["A"].values()), V=sum(t["V"].values()), G=sum(t["G"].values()),
                          T=t["T"], Tdot=t["Td"], JC=t["JC"], euler_rates=xd)

    def lopes_model(self, pose: Pose, twist, gravity=None) -> LopesModel:
        """I(x), V(x, xdot), G(x) of eq. (1) in Lopes' form (velocity = Euler-angle rates xdot_E)."""
        xd = self.euler_rates(pose, twist)
        return self._model(self.kin.validate(pose)[0], xd, gravity)

    def inertia_matrix(self, pose: Pose) -> np.ndarray:
        """Lopes' I(x) (6 x 6, not symmetric): maps xddot_E to a wrench in {B}."""
        return self.lopes_model(pose, np.zeros(6)).I

    def mass_matrix(self, pose: Pose) -> np.ndarray:
        """Task-space M on the twist (v, omega): M = I(x) T^-1 (symmetric, = the engine's M)."""
        m = self.lopes_model(pose, np.zeros(6))
        return np.linalg.solve(m.T.T, m.I.T).T

    def gravity_vector(self, pose: Pose, gravity=None) -> np.ndarray:
        """G(x) of eq. (64)-(67): the gravity wrench in {B} (= the engine's G_x)."""
        return self.lopes_model(pose, np.zeros(6), gravity).G
