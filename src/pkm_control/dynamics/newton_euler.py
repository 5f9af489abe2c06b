"""Taghirad's Newton-Euler dynamics of the Gough-Stewart platform in closed form (seed 004).

Book sections used (the seed text carries no equation numbers; labels are the book's LaTeX labels
or section titles):

* "Acceleration Analysis": v_bi = v_p + omega x b_i, l_i' = s_i . v_bi, omega_i = s_i x v_bi / l_i,
  p_i1 = a_i + c_i1 s_i, p_i2 = a_i + (l_i - c_i2) s_i.
* "Closed-Form Dynamics of the Limbs": with the intermediate coordinate x_i (position of B_i)
  M_i x_i'' + C_i x_i' + G_i = F_i,  F_i = -f_bi + tau_i s_i, and

      M_i = m_i2 s s^T - (1/l^2) I_xx s_x^2
      C_i = -(2/l) m_co l' s_x^2 - (1/l^2) m_i2 c_i2 s x_i'^T s_x^2
      G_i = (m_ge s_x^2 - m_i2 s s^T) g
      m_co = (1/l) m_i2 c_i2 - (1/l^2)(I_xx + l^2 m_ce),  m_ge = (1/l)(m_i1 c_i1 + m_i2 (l - c_i2)).

* "Closed-Form Dynamics of the Moving Platform": M_p = diag(m I, ^A I_p), C_p = [0 0; 0 omega_x ^A I_p],
  G_p = [-m g; 0], ^A I_p = R ^B I_p R^T.
* "Closed-Form Dynamics of the Stewart-Gough Manipulator" (eq:jacobian_intermediate,
  eq:closed_form_stewart_manipulator): J_i = [I, -b_i x], M_li = J_i^T M_i J_i,
  C_li = J_i^T M_i J_i' + J_i^T C_i J_i, G_li = J_i^T G_i, M = M_p + sum M_li, C = C_p + sum C_li,
  G = G_p + sum G_li.
* "Inverse Dynamics Simulation": tau = J^-T (M X'' + C X' + G - F_d), J rows [s_i^T, (b_i x s_i)^T].
* "Dynamic Formation in the Joint Space" (eq:dynamics_joint_space): M_q = J^-T M J^-1,
  C_q = J^-T (C - M J^-1 J') J^-1, G_q = J^-T G.

Where this module generalizes the book so that it is exact for our model (the URDF built from
config/stewart.yaml, same bodies and inertias as the generic engine):

1. Limb spin. The book assumes omega_i . s_i = 0 (no spin of the limb about its axis). In our tree the
   base joint is a universal joint (leg<i>_alpha about k1 = -y of S_i, then leg<i>_beta), which forces
   the limb angular velocity into span(k1, k2); it then has a spin component
   sigma = omega_leg . s = c (k1 . omega_perp) / (1 - c^2), c = k1 . s, omega_perp = s x v_b / l
   (Taghirad's omega_i). So omega_leg = omega_i + sigma s and sigma = w_i . x_i' with
   w_i = c / ((1 - c^2) l) (k1 x s). The spin adds the kinetic energy 1/2 I_zz sigma^2 (I_zz = axial
   inertia of cylinder + piston), i.e. M_i += I_zz w w^T, plus the matching Coriolis terms below.
2. Limb inertia and the seed's symbols. With p_i1, p_i2 as above, the exact transverse moment of inertia
   of the limb about A_i is I_A = I_xx,cyl + I_xx,pis + m_i1 c_i1^2 + m_i2 (l - c_i2)^2 (I_xx of each part
   about its own centre of mass, the config's inertia). The seed's expressions are consistent with that
   only if (a) "I_xx" in M_i stands for the whole I_A, and (b) in m_ce (and so in m_co) "c_i2" stands for
   the distance l - c_i2 from A_i to the piston centre of mass, while the term m_i2 c_i2 |s'|^2 s of C_i x'
   keeps c_i2 measured from B_i. We use the exact quantities: M_i transverse = I_A / l^2,
   m_co = m_i2 (l - c_i2) / l - I_A / l^2, m_ge as written; C_i x' = 2 m_co l' s' + m_i2 c_i2 |s'|^2 s then
   equals the Lagrange equations of the limb (checked against the engine to 1e-15).
   Cylinder and piston must be axisymmetric about the limb axis with the centre of mass on it (the
   book's "symmetric about their axes") and the universal-joint cross massless; other configs raise
   InvalidModelError.
3. Coriolis matrix. The book's C_i gives the exact C_i x_i' but M_i' - 2 C_i is not skew-symmetric.
   ``form="christoffel"`` (default) splits the l' term in two halves,
   C_i = -(m_co l'/l) s_x^2 - (m_i2 c_i2 / l^2) s x'^T s_x^2 - (m_co / l) (s_x^2 x') s^T
   (same C_i x_i' since s^T x' = l'), which is the Christoffel matrix of M_i(x_i); the spin term uses its
   Christoffel matrix (I_zz / 2)(w' w^T + w w'^T + sigma (W - W^T) + w (W^T x')^T - (W^T x') w^T),
   W = dw/dx_i. The platform term omega_x I_p of the book is replaced by its Christoffel-consistent
   form 1/2 (omega_x I_p - I_p omega_x - (I_p omega)_x) (same C_p X'). ``form="book"`` gives the
   book's C_i (plus the spin term) and C_p. Both have the same C X'; only the Christoffel one makes
   M' - 2C skew-symmetric and equals the Christoffel matrix in Euler coordinates.
4. Platform centre of mass. The book puts it at P; an offset r_c (config platform.inertial.com) is
   handled by the centre-of-mass Jacobian J_c = [I, -r_c x] (M_p = m J_c^T J_c + diag(0, I_c),
   C_p = m J_c^T J_c' + diag(0, C_rot), G_p = -m J_c^T g); with r_c = 0 these are the book's terms.

Friction is not part of the book's Stewart-Gough model (its assumptions neglect it): ``friction=True``
raises InvalidInputError.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, SingularConfigurationError, check_vector
from ..kinematics.analysis import check_conditioning
from ..kinematics.task_space import Pose, rpy_to_matrix
from . import formulations
from .formulations import formulation_kinematics

#: below this 1 - (k1 . s)^2 the universal joint is in gimbal lock (limb along its first axis)
_GIMBAL_EPS = 1e-12


def _skew(v):
    """[v x] for v (..., 3) -> (..., 3, 3)."""
    v = np.asarray(v, float)
    S = np.zeros(v.shape[:-1] + (3, 3))
    S[..., 0, 1], S[..., 0, 2] = -v[..., 2], v[..., 1]
    S[..., 1, 0], S[..., 1, 2] = v[..., 2], -v[..., 0]
    S[..., 2, 0], S[..., 2, 1] = -v[..., 1], v[..., 0]
    return S


def _cross(a, b):
    """a x b over the last axis (np.cross costs more than the arithmetic on 6 x 3 arrays)."""
    a0, a1, a2 = a[..., 0], a[..., 1], a[..., 2]
    b0, b1, b2 = b[..., 0], b[..., 1], b[..., 2]
    return np.stack([a1 * b2 - a2 * b1, a2 * b0 - a0 * b2, a0 * b1 - a1 * b0], axis=-1)


def _outer(a, b):
    return a[..., :, None] * b[..., None, :]


def _body(cfg, *keys):
    spec = cfg
    for k in keys:
        spec = spec[k]
    if spec is None:
        return 0.0, np.zeros(3), np.zeros((3, 3))
    ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in spec["inertia"])
    return (float(spec["mass"]), np.array(spec["com"], float),
            np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]]))


class Formulation(formulations.Formulation):
    """Taghirad's closed-form Newton-Euler dynamics of a 6-UPS Stewart-Gough platform.

    ``Formulation(dyn)`` with ``dyn`` from ``robot_dynamics`` (or a kinematics object, or a robot name
    plus variant). Immutable; every method takes the state (pose, twist (v, omega), accel
    (p'', omega'), base frame) explicitly.
    """

    method = "newton_euler"
    paper = "Taghirad, Parallel Robots, seed 004"
    robots = ("stewart",)

    def __init__(self, dyn, variant: str | None = None):
        kin = formulation_kinematics(dyn, self.method, None, variant)   # any 6-UPS with a massless U cross
        self.kin = kin
        cfg = kin.model.spec
        try:
            A = np.array(cfg.blocks["base"]["anchors"], float)
            rpy = np.array(cfg.blocks["base"]["leg_frame_rpy"], float)
            Bp = np.array(cfg.blocks["platform"]["anchors"], float)
            m, rc, Ic = _body(cfg.blocks, "platform", "inertial")
            m1, com1, I1 = _body(cfg.blocks, "legs", "cylinder", "inertial")
            m2, com2, I2 = _body(cfg.blocks, "legs", "piston", "inertial")
            ring = cfg.blocks["legs"].get("ring", {}).get("inertial")
            gravity = np.array(cfg.gravity, float)
            if getattr(dyn, "gravity", None) is not None and not isinstance(dyn, str):
                gravity = np.array(dyn.gravity, float)       # a ClosedLoopDynamics built with_gravity
        except (KeyError, TypeError, AttributeError) as exc:
            raise InvalidModelError(f"robot '{kin.model.name}': newton_euler needs a hexapod_ups config, "
                                    f"missing {exc}") from exc
        if ring is not None and float(ring.get("mass", 0.0)) != 0.0:
            raise InvalidModelError(f"robot '{kin.model.name}': newton_euler models the universal-joint cross as "
                                    "massless (Taghirad's two-body limb), legs.ring.inertial must be null")
        for name, com, I in (("cylinder", com1, I1), ("piston", com2, I2)):
            if (abs(com[0]) > 1e-12 or abs(com[1]) > 1e-12 or abs(I[0, 0] - I[1, 1]) > 1e-12 * max(1.0, I[0, 0])
                    or np.abs(I[[0, 0, 1], [1, 2, 2]]).max() > 1e-12):
                raise InvalidModelError(f"robot '{kin.model.name}': legs.{name} must be symmetric about the limb "
                                        f"axis (com on z, Ixx = Iyy, no products): com {com}, inertia {I.ravel()}")
        n = len(A)
        self.n_legs = n
        RS = np.stack([rpy_to_matrix(*r) for r in rpy])
        self._A = A                                   # a_i (base)
        self._Bp = Bp                                 # b_i (platform frame)
        self._k1 = -RS[:, :, 1]                       # first universal-joint axis: -y of S_i
        self._m, self._rc, self._Ic = m, rc, Ic       # platform: mass, com (platform frame), I about com
        self._m1, self._c1 = m1, -com1[2]             # cylinder com at a_i + c1 s (cylinder frame -z = s)
        self._m2, self._c2 = m2, com2[2]              # piston com at b_i - c2 s (piston frame origin B_i)
        self._It = I1[0, 0] + I2[0, 0]                # transverse inertia about the coms (sum of both parts)
        self._Ia = I1[2, 2] + I2[2, 2]                # axial inertia (both parts spin together)
        self.gravity = gravity
        self._nact = kin.model.n_actuated
        self._rc_t = tuple(float(v) for v in rc)
        self._Ic_t = tuple(tuple(float(v) for v in r) for r in Ic)
        self._legdata = tuple(tuple(float(v) for v in (*A[i], *Bp[i], *self._k1[i])) for i in range(n))
        for arr in (self._A, self._Bp, self._k1, self._rc, self._Ic, self.gravity):
            arr.setflags(write=False)

    # ------------------------------------------------------------------ input
    def _check(self, pose, twist=None, accel=None, required=()):
        """The kinematics' validate; ``required`` names the motion arguments that must be given
        ("twist", "acceleration")."""
        if not isinstance(pose, Pose):
            raise InvalidInputError(f"pose must be a Pose, got {type(pose).__name__}")
        missing = [name for name, value in (("twist", twist), ("acceleration", accel))
                   if name in required and value is None]
        if missing:
            raise InvalidInputError(f"this computation needs {' and '.join(missing)}")
        return self.kin.validate(pose, twist, accel)

    def _gravity(self, gravity):
        return self.gravity if gravity is None else check_vector("gravity", gravity, 3)

    # ------------------------------------------------------------------ limbs
    def _legs(self, pose: Pose, twist=None):
        """Per-limb geometry (and rates): dict of (n, ...) arrays."""
        p, R = pose.position, pose.rotation
        b = self._Bp @ R.T                            # b_i in the base frame
        d = p + b - self._A
        l = np.linalg.norm(d, axis=1)
        if not (l > 1e-9).all():
            raise SingularConfigurationError(f"limb length {l.min():.3g} m: the limb direction s_i is undefined")
        s = d / l[:, None]
        k1 = self._k1
        c = np.einsum("ij,ij->i", k1, s)
        den = 1.0 - c * c
        if not (den > _GIMBAL_EPS).all():
            i = int(np.argmin(den))
            raise SingularConfigurationError(f"leg{i + 1}: limb axis along the first universal-joint axis "
                                             f"(1 - (k1.s)^2 = {den[i]:.3g} <= {_GIMBAL_EPS:g}): gimbal lock")
        ks = _cross(k1, s)
        f = c / (den * l)
        P = np.eye(3) - _outer(s, s)                  # -s_x^2
        I_A = self._It + self._m1 * self._c1 ** 2 + self._m2 * (l - self._c2) ** 2
        out = dict(b=b, l=l, s=s, P=P, c=c, den=den, ks=ks, f=f, w=f[:, None] * ks, I_A=I_A)
        if twist is not None:
            v, om = twist[:3], twist[3:]
            vb = v + _cross(om, b)                  # v_bi = v_p + omega x b_i
            ld = np.einsum("ij,ij->i", s, vb)         # l_i' = s_i . v_bi
            sd = (vb - ld[:, None] * s) / l[:, None]  # s_i' = omega_i x s_i
            out.update(vb=vb, ld=ld, sd=sd, om=om)
        return out

    def limb_terms(self, pose: Pose, twist=None, gravity=None, form: str = "christoffel"):
        """Taghirad's limb terms in the intermediate coordinate x_i = B_i: (M_i, C_i, G_i), (n, 3, 3) and (n, 3).

        C_i is None without a twist. See the module docstring for the generalizations (spin, I_A).
        """
        if form not in ("christoffel", "book"):
            raise InvalidInputError(f"form must be 'christoffel' or 'book', got {form!r}")
        pose, twist, _ = self._check(pose, twist)
        return self._limb_terms(self._legs(pose, twist), self._gravity(gravity), form)

    def _limb_terms(self, L, g, form="christoffel"):
        m2, c2, Ia = self._m2, self._c2, self._Ia
        l, s, P, w, I_A = L["l"], L["s"], L["P"], L["w"], L["I_A"]
        ss = _outer(s, s)
        # M_i = m_i2 s s^T - (1/l^2) I_xx s_x^2 (I_xx -> I_A), + spin: I_zz w w^T
        Mi = m2 * ss + (I_A / l ** 2)[:, None, None] * P + Ia * _outer(w, w)
        # G_i = (m_ge s_x^2 - m_i2 s s^T) g, m_ge = (m_i1 c_i1 + m_i2 (l - c_i2)) / l
        m_ge = (self._m1 * self._c1 + m2 * (l - c2)) / l
        Gi = -m_ge[:, None] * (P @ g) - m2 * s * (s @ g)[:, None]
        if "vb" not in L:
            return Mi, None, Gi
        vb, ld, sd = L["vb"], L["ld"], L["sd"]
        m_co = m2 * (l - c2) / l - I_A / l ** 2
        if form == "book":
            # C_i = -(2/l) m_co l' s_x^2 - (1/l^2) m_i2 c_i2 s x'^T s_x^2 ; s_x^2 x' = -l s'
            Ci = (2.0 * m_co * ld / l)[:, None, None] * P + (m2 * c2 / l)[:, None, None] * _outer(s, sd)
        else:
            Ci = ((m_co * ld / l)[:, None, None] * P + (m2 * c2 / l)[:, None, None] * _outer(s, sd)
                  + m_co[:, None, None] * _outer(sd, s))
        if Ia != 0.0:
            # spin sigma = w . x', w = f (k1 x s), f = c / ((1 - c^2) l); W = dw/dx
            k1, c, den, ks, f = self._k1, L["c"], L["den"], L["ks"], L["f"]
            f_c = (1.0 + c * c) / (den * den * l)
            f_l = -c / (den * l * l)
            row = f_c[:, None] * np.einsum("nij,nj->ni", P, k1) / l[:, None] + f_l[:, None] * s
            W = _outer(ks, row) + (f / l)[:, None, None] * (_skew(k1) @ P)
            sigma = np.einsum("ij,ij->i", w, vb)
            wd = np.einsum("nij,nj->ni", W, vb)
            Wtv = np.einsum("nji,nj->ni", W, vb)
            Ci = Ci + 0.5 * Ia * (_outer(wd, w) + _outer(w, wd) + sigma[:, None, None] * (W - W.transpose(0, 2, 1))
                                  + _outer(w, Wtv) - _outer(Wtv, w))
        return Mi, Ci, Gi

    # ------------------------------------------------------------------ platform
    def platform_terms(self, pose: Pose, twist=None, gravity=None, form: str = "christoffel"):
        """Moving-platform terms (M_p, C_p, G_p) in the task velocity (v, omega); C_p None without twist."""
        pose, twist, _ = self._check(pose, twist)
        return self._platform_terms(pose.rotation, twist, self._gravity(gravity), form)

    def _platform_terms(self, R, twist, g, form="christoffel"):
        m = self._m
        rc = R @ self._rc
        Ic = R @ self._Ic @ R.T                       # ^A I = R ^B I R^T
        Jc = np.hstack([np.eye(3), -_skew(rc)])       # v_c = J_c X'
        Mp = m * Jc.T @ Jc
        Mp[3:, 3:] += Ic
        Gp = -m * Jc.T @ g                            # [-m g; -m r_c x g]
        if twist is None:
            return Mp, None, Gp
        om = twist[3:]
        Jcd = np.zeros((3, 6))
        Jcd[:, 3:] = -_skew(_cross(om, rc))
        Cp = m * Jc.T @ Jcd
        if form == "book":
            Cp[3:, 3:] += _skew(om) @ Ic              # omega_x ^A I_p
        else:
            W = _skew(om)
            Cp[3:, 3:] += 0.5 * (W @ Ic - Ic @ W - _skew(Ic @ om))
        return Mp, Cp, Gp

    # ------------------------------------------------------------------ assembly
    @staticmethod
    def _Ji(b):
        J = np.zeros((len(b), 3, 6))
        J[:, :, :3] = np.eye(3)
        J[:, :, 3:] = -_skew(b)                       # J_i = [I, -b_i x]
        return J

    def _assemble(self, pose, twist, g, form="christoffel", want_c=True):
        L = self._legs(pose, twist if want_c else None)
        Mi, Ci, Gi = self._limb_terms(L, g, form)
        Mp, Cp, Gp = self._platform_terms(pose.rotation, twist if want_c else None, g, form)
        Ji = self._Ji(L["b"])
        JiT = Ji.transpose(0, 2, 1)
        M = Mp + np.einsum("nia,nij,njb->ab", Ji, Mi, Ji)          # M_p + sum J_i^T M_i J_i
        G = Gp + np.einsum("nia,ni->a", Ji, Gi)                    # G_p + sum J_i^T G_i
        C = None
        if want_c:
            Jid = np.zeros_like(Ji)
            Jid[:, :, 3:] = -_skew(_cross(twist[3:], L["b"]))    # J_i' = [0, -(omega x b_i) x]
            C = Cp + np.einsum("nai,nij,njb->ab", JiT, Mi, Jid) + np.einsum("nai,nij,njb->ab", JiT, Ci, Ji)
        return L, M, C, G

    def mass_matrix(self, pose: Pose) -> np.ndarray:
        """Task-space M(X) = M_p + sum J_i^T M_i J_i (6 x 6)."""
        pose, _, _ = self._check(pose)
        return self._assemble(pose, None, self.gravity, want_c=False)[1]

    def coriolis_matrix(self, pose: Pose, twist, form: str = "christoffel") -> np.ndarray:
        """Task-space C(X, X') = C_p + sum (J_i^T M_i J_i' + J_i^T C_i J_i)."""
        if form not in ("christoffel", "book"):
            raise InvalidInputError(f"form must be 'christoffel' or 'book', got {form!r}")
        pose, twist, _ = self._check(pose, twist, required=("twist",))
        return self._assemble(pose, twist, self.gravity, form)[2]

    def gravity_vector(self, pose: Pose, gravity=None) -> np.ndarray:
        """Task-space G(X) = G_p + sum J_i^T G_i."""
        pose, _, _ = self._check(pose)
        return self._assemble(pose, None, self._gravity(gravity), want_c=False)[3]

    def jacobian(self, pose: Pose) -> np.ndarray:
        """Taghirad's J, rows [s_i^T, (b_i x s_i)^T] (l' = J X'), actuated-joint order."""
        pose, _, _ = self._check(pose)
        L = self._legs(pose)
        return self._act(np.hstack([L["s"], _cross(L["b"], L["s"])]))

    def jacobian_dot(self, pose: Pose, twist) -> np.ndarray:
        """J' along the twist: rows [s_i'^T, ((omega x b_i) x s_i + b_i x s_i')^T]."""
        pose, twist, _ = self._check(pose, twist, required=("twist",))
        L = self._legs(pose, twist)
        ob = _cross(twist[3:], L["b"])
        return self._act(np.hstack([L["sd"], _cross(ob, L["s"]) + _cross(L["b"], L["sd"])]))

    def _act(self, rows):
        # the actuated joints are the leg prismatic joints, in the model's actuated order
        kin = self.kin
        order = getattr(kin, "_act", None)
        return rows if order is None else rows[np.asarray(order)]

    def _solve_JT(self, J, F):
        check_conditioning(J, "Jacobian J (tau = J^-T F)")
        return np.linalg.solve(J.T, F)

    def generalized_force(self, pose: Pose, twist, accel, wrench=None, gravity=None) -> np.ndarray:
        """F = M X'' + C X' + G - F_d (the task-space force the actuators must supply, J^T tau), from the
        assembled matrices."""
        pose, twist, accel = self._check(pose, twist, accel, ("twist", "acceleration"))
        _, M, C, G = self._assemble(pose, twist, self._gravity(gravity))
        F = M @ accel + C @ twist + G
        if wrench is not None:
            F = F - check_vector("wrench (fx fy fz mx my mz)", wrench, 6, MAGNITUDE_LIMIT)
        return F

    def inverse_dynamics(self, pose: Pose, twist, accel, friction: bool = False, wrench=None,
                         gravity=None) -> np.ndarray:
        """Actuator forces tau = J^-T (M X'' + C X' + G - F_d) ("Inverse Dynamics Simulation").

        Evaluated body by body in scalar arithmetic, the order in which Newton-Euler evaluates the same
        sums (eq:closed_form_stewart_manipulator): with x_i'' = a_bi = J_i X'' + J_i' X', limb i adds
        J_i^T h_i = [h_i; b_i x h_i] with h_i = M_i a_bi + C_i v_bi + G_i, where (C_i v_bi exact)
        C_i v_bi = 2 m_co l' s' + m_i2 c_i2 |s'|^2 s + I_zz (sigma w' + w (v_bi . w') - sigma W^T v_bi);
        the platform adds m (a_c - g) and r_c x m (a_c - g) + I omega' + omega x I omega
        (eq:dyn_form_implicit_trans / _rot). ``generalized_force`` assembles the matrices instead.
        """
        if friction:
            raise InvalidInputError("friction=True: Taghirad's Stewart-Gough model neglects friction "
                                    "(use the generic engine for the friction terms)")
        pose, twist, accel = self._check(pose, twist, accel, ("twist", "acceleration"))
        gx, gy, gz = self._gravity(gravity).tolist()
        (r00, r01, r02), (r10, r11, r12), (r20, r21, r22) = pose.rotation.tolist()
        px, py, pz = pose.position.tolist()
        vx, vy, vz, ox, oy, oz = twist.tolist()
        ax_, ay_, az_, wx, wy, wz = accel.tolist()
        m1c1, m2, c2, It, Ia = self._m1 * self._c1, self._m2, self._c2, self._It, self._Ia
        m1c1c1 = m1c1 * self._c1
        sqrt = math.sqrt
        Fx = Fy = Fz = Nx = Ny = Nz = 0.0
        rows = []
        for Ax, Ay, Az, Bx, By, Bz, kx, ky, kz in self._legdata:
            bx = r00 * Bx + r01 * By + r02 * Bz
            by = r10 * Bx + r11 * By + r12 * Bz
            bz = r20 * Bx + r21 * By + r22 * Bz
            dx, dy, dz = px + bx - Ax, py + by - Ay, pz + bz - Az
            l = sqrt(dx * dx + dy * dy + dz * dz)
            if not l > 1e-9:
                raise SingularConfigurationError(f"limb length {l:.3g} m: the limb direction s_i is undefined")
            sx, sy, sz = dx / l, dy / l, dz / l
            rows.append((sx, sy, sz, by * sz - bz * sy, bz * sx - bx * sz, bx * sy - by * sx))
            # v_bi = v + omega x b, a_bi = a + omega' x b + omega x (omega x b)
            cx, cy, cz = oy * bz - oz * by, oz * bx - ox * bz, ox * by - oy * bx
            vbx, vby, vbz = vx + cx, vy + cy, vz + cz
            abx = ax_ + wy * bz - wz * by + oy * cz - oz * cy
            aby = ay_ + wz * bx - wx * bz + oz * cx - ox * cz
            abz = az_ + wx * by - wy * bx + ox * cy - oy * cx
            ld = sx * vbx + sy * vby + sz * vbz
            sdx, sdy, sdz = (vbx - ld * sx) / l, (vby - ld * sy) / l, (vbz - ld * sz) / l
            I_A = It + m1c1c1 + m2 * (l - c2) ** 2
            mt = I_A / (l * l)
            m_co = m2 * (l - c2) / l - mt
            m_ge = (m1c1 + m2 * (l - c2)) / l
            sa, sg = sx * abx + sy * aby + sz * abz, sx * gx + sy * gy + sz * gz
            sd2 = sdx * sdx + sdy * sdy + sdz * sdz
            # M_i a_b + C_i v_b + G_i (no-spin part): axial and transverse components
            ax_s = m2 * sa + m2 * c2 * sd2 - m2 * sg + m_ge * sg       # along s (G_i: -m_ge P g - m2 s s.g)
            hx = ax_s * sx + mt * (abx - sa * sx) + 2.0 * m_co * ld * sdx - m_ge * gx
            hy = ax_s * sy + mt * (aby - sa * sy) + 2.0 * m_co * ld * sdy - m_ge * gy
            hz = ax_s * sz + mt * (abz - sa * sz) + 2.0 * m_co * ld * sdz - m_ge * gz
            if Ia != 0.0:
                c = kx * sx + ky * sy + kz * sz
                den = 1.0 - c * c
                if not den > _GIMBAL_EPS:
                    raise SingularConfigurationError(f"limb axis along the first universal-joint axis "
                                                     f"(1 - (k1.s)^2 = {den:.3g} <= {_GIMBAL_EPS:g}): gimbal lock")
                f = c / (den * l)
                f_c = (1.0 + c * c) / (den * den * l)
                f_l = -c / (den * l * l)
                ksx, ksy, ksz = ky * sz - kz * sy, kz * sx - kx * sz, kx * sy - ky * sx      # k1 x s
                ksv, ksa = ksx * vbx + ksy * vby + ksz * vbz, ksx * abx + ksy * aby + ksz * abz
                sigma = f * ksv
                kd = kx * sdx + ky * sdy + kz * sdz
                e = f_c * kd + f_l * ld
                # w' = W v_b = (k1 x s)(f_c k1.s' + f_l l') + f k1 x s'
                wdx = ksx * e + f * (ky * sdz - kz * sdy)
                wdy = ksy * e + f * (kz * sdx - kx * sdz)
                wdz = ksz * e + f * (kx * sdy - ky * sdx)
                # W^T v_b = (f_c P k1 / l + f_l s)(k1 x s . v_b) - (f / l) P (k1 x v_b)
                sk = c                                                       # s . k1
                qx, qy, qz = ky * vbz - kz * vby, kz * vbx - kx * vbz, kx * vby - ky * vbx
                sq = sx * qx + sy * qy + sz * qz
                u = f_c / l * ksv
                wtx = u * (kx - sk * sx) + f_l * ksv * sx - f / l * (qx - sq * sx)
                wty = u * (ky - sk * sy) + f_l * ksv * sy - f / l * (qy - sq * sy)
                wtz = u * (kz - sk * sz) + f_l * ksv * sz - f / l * (qz - sq * sz)
                # M_spin a_b + C_spin v_b = I_zz (w (w.a_b) + sigma w' + w (v_b.w') - sigma W^T v_b)
                coef = Ia * (f * ksa + vbx * wdx + vby * wdy + vbz * wdz) * f
                hx += coef * ksx + Ia * sigma * (wdx - wtx)
                hy += coef * ksy + Ia * sigma * (wdy - wty)
                hz += coef * ksz + Ia * sigma * (wdz - wtz)
            Fx += hx
            Fy += hy
            Fz += hz
            Nx += by * hz - bz * hy
            Ny += bz * hx - bx * hz
            Nz += bx * hy - by * hx
        # platform: m (a_c - g), r_c x m (a_c - g) + I omega' + omega x I omega (I, r_c in the base frame)
        m = self._m
        Bx, By, Bz = self._rc_t
        rx = r00 * Bx + r01 * By + r02 * Bz
        ry = r10 * Bx + r11 * By + r12 * Bz
        rz = r20 * Bx + r21 * By + r22 * Bz
        cx, cy, cz = oy * rz - oz * ry, oz * rx - ox * rz, ox * ry - oy * rx
        fx = m * (ax_ + wy * rz - wz * ry + oy * cz - oz * cy - gx)
        fy = m * (ay_ + wz * rx - wx * rz + oz * cx - ox * cz - gy)
        fz = m * (az_ + wx * ry - wy * rx + ox * cy - oy * cx - gz)
        # I omega' + omega x I omega with I = R I_c R^T: rotate omega, omega' into the platform frame
        Io = self._Ic_t
        o_b = (r00 * ox + r10 * oy + r20 * oz, r01 * ox + r11 * oy + r21 * oz, r02 * ox + r12 * oy + r22 * oz)
        w_b = (r00 * wx + r10 * wy + r20 * wz, r01 * wx + r11 * wy + r21 * wz, r02 * wx + r12 * wy + r22 * wz)
        h = [Io[k][0] * o_b[0] + Io[k][1] * o_b[1] + Io[k][2] * o_b[2] for k in range(3)]
        t = [Io[k][0] * w_b[0] + Io[k][1] * w_b[1] + Io[k][2] * w_b[2]
             + o_b[(k + 1) % 3] * h[(k + 2) % 3] - o_b[(k + 2) % 3] * h[(k + 1) % 3] for k in range(3)]
        tx = r00 * t[0] + r01 * t[1] + r02 * t[2]
        ty = r10 * t[0] + r11 * t[1] + r12 * t[2]
        tz = r20 * t[0] + r21 * t[1] + r22 * t[2]
        F = np.array([Fx + fx, Fy + fy, Fz + fz, Nx + ry * fz - rz * fy + tx, Ny + rz * fx - rx * fz + ty,
                      Nz + rx * fy - ry * fx + tz])
        if wrench is not None:
            F = F - check_vector("wrench (fx fy fz mx my mz)", wrench, 6, MAGNITUDE_LIMIT)
        return self._solve_JT(self._act(np.array(rows)), F)

    def joint_space(self, pose: Pose, twist, form: str = "christoffel"):
        """(M_q, C_q, G_q) with M_q = J^-T M J^-1, C_q = J^-T (C - M J^-1 J') J^-1, G_q = J^-T G."""
        pose, twist, _ = self._check(pose, twist, required=("twist",))
        _, M, C, G = self._assemble(pose, twist, self.gravity, form)
        J = self.jacobian(pose)
        Jd = self.jacobian_dot(pose, twist)
        Ji = self._solve_JT(J.T, np.eye(J.shape[0]))      # J^-1 (raises at a singular J)
        JiT = Ji.T
        return JiT @ M @ Ji, JiT @ (C - M @ Ji @ Jd) @ Ji, JiT @ G
