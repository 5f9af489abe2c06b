"""Codourey's virtual-work dynamics of the DELTA robot (Codourey 1998, IJRR 17(12), seed 002).

An implementation of the paper's own equations, independent of the generic engine
(``dynamics/engine.py``). The only thing it takes from the kinematics family is
the arm angles q_i of a plate position (the inverse geometric model) and input
validation. The Jacobian, the acceleration relation and all the dynamic terms
are written out here from the paper.

Notation (sec. 4.2-4.6). J is Codourey's Jacobian, Xdot_n = J qdot (eq. 25, 36).
It is the inverse of the project's J (qdot_a = J xdot). For leg i in the frame
{R_i} = Rz(theta_i) {R} (eq. 24):

    s_i = X_n - R_i ([R, 0, 0] + L_A [cos q_i, 0, -sin q_i])     (eq. 30, R = R_A - R_B)
    b_i = R_i L_A [sin q_i, 0, cos q_i]                            (eq. 34; the paper prints
          -L_A cos q_i as the z entry, but eq. 38 and 42 need +L_A cos q_i, used here)
    J   = -[s_i^T]^-1 diag(s_i . b_i)                              (eq. 36)
    v_u,i = -b_i qdot_i = J_u,i qdot                               (eq. 42-45: J_u,i has -b_i in column i)
    Xddot_n = Jdot qdot + J qddot                                   (eq. 37, bdot_i eq. 38)
    a_u,i = -(b_i qddot_i + bdot_i qdot_i)                         (eq. 56)

Models:

* ``full``: the paper's exact model under its own assumptions: a travelling plate
  that only translates (mass m_n), arms that only rotate about the motor axis
  (I_b = I_m + arm inertia about the axis + m_c L_A^2, eq. 41; gravity eq. 54),
  and forearms that are bars: uniform mass along a line, no inertia about the bar
  axis (eq. 10-13, 20-23). Mass matrix eq. 47, dynamics eq. 57 with eq. 55.
  The config (``bodies.forearm``: m L_B^2/12 across the bar, 0 along it, centre
  of mass at the middle) is exactly such a bar. So this model is exact and
  agrees with the generic tree model to rounding. This is a uniform bar, not
  point masses at the ends: its kinetic energy m/6 (v1^2 + v2^2 + v1.v2)
  (eq. 12) equals m/2 |v_c|^2 + 1/2 (m L^2/12) |omega_perp|^2.
* ``simplified``: the paper's reduced model. A third of each forearm's mass goes
  on the plate and two thirds at the elbow for inertia; for gravity, half goes at
  each end, which is exact. Mass matrix eq. 50, dynamics eq. 58-59.

Two points where this module does not follow the printed paper literally. Both
are kept as options and reported:

* Eq. 46-47 print the cross term of the bar as J_u,i^T J, a non-symmetric
  matrix (eq. 49 shows its single non-zero row). It gives the right kinetic
  energy (eq. 4), but the inertia matrix that multiplies qddot in the dynamics
  (eq. 55: 1/6 m_ab (J^T J_u,i + J_u,i^T J)) is its symmetric part. That is the
  default; ``mass_matrix(..., literal=True)`` returns the printed matrix.
* Eq. 50 prints I_bti = I_m + L_A^2 (m_b/2 + m_c + 2/3 m_ab). Eq. 41 has m_b/3
  for the same arm, and the simplification only concerns the forearms. Here the
  arm keeps its exact inertia about the motor axis (m_b L_A^2/3 for the config's
  uniform bar). The printed m_b/2 would add m_b L_A^2/6 to each diagonal term.
  It is reported by the reproduction, not used.

Inertial parameters are read once from the robot config (``bodies``) and
expressed in Codourey's terms. The rotor, arm and elbow bodies are fixed to the
arm link: the arm frame is at the motor axis, y along the axis, x towards the
elbow, and the elbow frame is at x = L_A. The forearm link has its bar along -z,
from the elbow to the plate joint. Where the config leaves Codourey's
assumptions (a centre of mass off the arm line, a forearm that is not a bar),
the constructor raises InvalidModelError and names the body.
"""

from __future__ import annotations

from math import cos, sin

import numpy as np

from ..errors import InvalidInputError, InvalidModelError, SingularConfigurationError, check_vector
from . import formulations
from .formulations import formulation_kinematics

METHOD = "virtual_work"
ROBOTS = ("delta",)
MODELS = ("full", "simplified")
_BAR_TOL = 1e-9          # relative tolerance on the bar assumptions of the config


class Formulation(formulations.Formulation):
    """Codourey's virtual-work dynamics and kinetic-energy mass matrix of the DELTA (immutable).

    Build with ``Formulation(dyn)``, where dyn is ``robot_dynamics("delta")``.
    Its kinematics object or the robot name ``"delta"`` also work.
    """

    method = METHOD
    paper = "Codourey 1998, IJRR 17(12), seed 002"
    robots = ROBOTS

    def __init__(self, source="delta"):
        kin = formulation_kinematics(source, METHOD, ROBOTS)
        cfg = kin.model.spec
        try:
            geo, bodies = cfg.blocks["geometry"], cfg.blocks["bodies"]
            RA, RB = float(geo["base_radius"]), float(geo["plate_radius"])
            LA, LB = float(geo["arm_length"]), float(geo["forearm_length"])
            theta = np.array(geo["arm_azimuths"], float)
            plate, rotor, arm, elbow, forearm = (bodies[k] for k in ("plate", "rotor", "arm", "elbow", "forearm"))
            gvec = check_vector("gravity (config)", cfg.gravity, 3)
        except KeyError as exc:
            raise InvalidModelError(f"robot '{kin.model.name}' config lacks {exc.args[0]!r} "
                                    f"(needed by Codourey's virtual-work model)") from exc

        def body(b, name):
            m = float(b["mass"])
            c = np.array(b["com"], float)
            ixx, iyy, izz, ixy, ixz, iyz = (float(v) for v in b["inertia"])
            if m < 0 or c.shape != (3,):
                raise InvalidModelError(f"bodies.{name}: needs mass >= 0 and a 3-vector com")
            return m, c, np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])

        m_n = body(plate, "plate")[0]                              # eq. 40: the plate only translates
        # bodies on the arm link (arm frame: origin on the motor axis, y = axis, x towards the elbow)
        m_r, c_r, I_r = body(rotor, "rotor")
        m_b, c_b, I_bc = body(arm, "arm")
        m_c, c_c, I_cc = body(elbow, "elbow")
        c_c = c_c + np.array([LA, 0.0, 0.0])                      # elbow frame at the arm tip
        arm_bodies = (("rotor", m_r, c_r, I_r), ("arm", m_b, c_b, I_bc), ("elbow", m_c, c_c, I_cc))
        # eq. 41: inertia of each arm about its motor axis (y), by the parallel-axis theorem;
        # rotor: I_m; arm: m_b L_A^2 / 3 for a uniform bar; elbow: m_c L_A^2.
        I_axis = {n: I[1, 1] + m * (c[0] ** 2 + c[2] ** 2) for n, m, c, I in arm_bodies}
        # eq. 54: gravity needs the first moment m_br r_Gb along the arm line (x), none across it (z)
        for n, m, c, _ in arm_bodies:
            if abs(m * c[2]) > _BAR_TOL * max(m, 1.0) * LA:
                raise InvalidModelError(
                    f"bodies.{n}: centre of mass {c[2]:.6g} m off the arm line (z of the arm frame); "
                    f"Codourey's gravity term (eq. 54) needs it on the line motor axis - elbow")
        first_moment = sum(m * c[0] for _, m, c, _ in arm_bodies)
        # the forearm as Codourey's bar (eq. 10-13): com at the middle, m L_B^2/12 across, nothing along
        m_ab, c_f, I_f = body(forearm, "forearm")
        bar_I = np.diag([m_ab * LB ** 2 / 12.0, m_ab * LB ** 2 / 12.0, 0.0])
        dev = max(np.abs(c_f - [0.0, 0.0, -LB / 2.0]).max() / LB, np.abs(I_f - bar_I).max() / max(bar_I.max(), 1e-300))
        if m_ab > 0 and dev > _BAR_TOL:
            raise InvalidModelError(
                f"bodies.forearm is not Codourey's bar (eq. 10-13): com {c_f.tolist()} (bar: [0, 0, {-LB / 2:g}]), "
                f"inertia {np.round(I_f, 12).tolist()} (bar: m L_B^2/12 = {m_ab * LB ** 2 / 12:.6g} across, 0 along); "
                f"relative deviation {dev:.3g} > {_BAR_TOL:g}")

        self.kin = kin
        self.LA, self.LB, self.R = LA, LB, RA - RB
        self.theta = theta
        self.gravity = gvec
        self.m_n = m_n                                             # plate (+ payload), eq. 40
        self.m_b, self.m_c, self.m_ab = m_b, m_c, m_ab
        self.I_m = I_axis["rotor"]                                 # motor rotor, eq. 41
        self.I_b = I_axis["rotor"] + I_axis["arm"] + I_axis["elbow"]      # eq. 41
        self.mr_Gb = first_moment                                  # m_br r_Gb, eq. 54
        # simplified model (eq. 50, 58-59): 1/3 of each forearm on the plate, 2/3 at the elbow (inertia),
        # 1/2 at each end (gravity)
        self.m_nt = m_n + m_ab                                     # eq. 50 (printed "m_nt = m_n = m_ab")
        self.I_bt = self.I_b + 2.0 / 3.0 * m_ab * LA ** 2          # eq. 50 (arm kept exact, see docstring)
        self.I_bt_printed = self.I_m + LA ** 2 * (m_b / 2.0 + m_c + 2.0 / 3.0 * m_ab)   # eq. 50 as printed
        self.m_ng = m_n + 1.5 * m_ab                               # eq. 58
        self.mr_Gbg = first_moment + 0.5 * m_ab * LA               # eq. 59
        # R_i (eq. 24) enters through its first column (cos theta_i, sin theta_i, 0) and e_z
        self._cs = tuple((float(np.cos(t)), float(np.sin(t))) for t in theta)
        self._g = tuple(float(e) for e in gvec)
        for a in (self.theta, self.gravity):
            a.setflags(write=False)
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ kinematics (sec. 4.3-4.4)
    def _inputs(self, pose, twist=None, accel=None):
        """Arm angles (the family's IK, which checks the pose) and the plate motion as floats."""
        q = self.kin.actuated(pose)                  # InvalidInputError / UnreachablePoseError as validate
        X = [float(e) for e in pose.position]
        Xd = self.kin.vector3("twist (vx vy vz)", twist) if twist is not None else None
        if accel is not None:
            if twist is None:
                raise InvalidInputError("an acceleration needs a twist as well")
            accel = self.kin.vector3("acceleration", accel)
        return X, q.tolist(), Xd, accel

    # One pose is 3 legs and 3 x 3 matrices: plain floats (the inverse of [s_i^T] by its
    # adjugate) are several times faster than numpy calls on arrays this small.
    def _geometry(self, X, q):
        """Rows s_i (eq. 30), b_i (eq. 34), d_i = s_i . b_i, [s_i^T]^-1 and J (eq. 36) as nested lists."""
        LA, R = self.LA, self.R
        S, B, d, trig = [], [], [], []
        for i, (c, s) in enumerate(self._cs):
            cq, sq = cos(q[i]), sin(q[i])
            e = R + LA * cq
            Si = (X[0] - c * e, X[1] - s * e, X[2] + LA * sq)              # eq. 30
            Bi = (c * LA * sq, s * LA * sq, LA * cq)                         # eq. 34
            S.append(Si)
            B.append(Bi)
            d.append(Si[0] * Bi[0] + Si[1] * Bi[1] + Si[2] * Bi[2])
            trig.append((c, s, cq, sq))
        tol = 1e-12 * LA * self.LB
        for i in range(3):
            if abs(d[i]) <= tol:
                raise SingularConfigurationError(f"leg{i + 1}: arm and forearm aligned (inverse singularity): "
                                                 f"s.b = {d[i]:.3g} (limit {tol:.3g})")
        (a, b, c), (e, f, g), (h, k, m) = S
        cof = ((f * m - g * k, g * h - e * m, e * k - f * h),
               (c * k - b * m, a * m - c * h, b * h - a * k),
               (b * g - c * f, c * e - a * g, a * f - b * e))
        det = a * cof[0][0] + b * cof[0][1] + c * cof[0][2]
        if abs(det) <= 1e-12 * self.LB ** 3:
            raise SingularConfigurationError(f"forearms coplanar/parallel (direct singularity): det[s_i^T] = "
                                             f"{det:.3g} (limit {1e-12 * self.LB ** 3:.3g})")
        Si = [[cof[j][r] / det for j in range(3)] for r in range(3)]          # [s_i^T]^-1 (adjugate / det)
        J = [[-Si[r][j] * d[j] for j in range(3)] for r in range(3)]          # eq. 36
        return S, B, d, Si, J, trig

    def _motion(self, X, q, Xd, Xdd):
        """qdot (eq. 35), Jdot qdot (eq. 37-38), qddot (eq. 37) and a_u,i (eq. 56)."""
        S, B, d, Si, J, trig = self._geometry(X, q)
        LA = self.LA
        qd = [-(S[i][0] * Xd[0] + S[i][1] * Xd[1] + S[i][2] * Xd[2]) / d[i] for i in range(3)]   # eq. 35
        w = [0.0] * 3
        Bd = []
        for i, (c, s, cq, sq) in enumerate(trig):
            Bdi = (c * LA * cq * qd[i], s * LA * cq * qd[i], -LA * sq * qd[i])                    # eq. 38
            Sd = (Xd[0] + B[i][0] * qd[i], Xd[1] + B[i][1] * qd[i], Xd[2] + B[i][2] * qd[i])    # eq. 33
            diag = (Sd[0] * B[i][0] + Sd[1] * B[i][1] + Sd[2] * B[i][2]
                    + S[i][0] * Bdi[0] + S[i][1] * Bdi[1] + S[i][2] * Bdi[2])
            # eq. 37: Jdot = -[s^T]^-1 ([sdot^T] J + diag(.)); with J qdot = Xdot, Jdot qdot = -[s^T]^-1 w
            w[i] = Sd[0] * Xd[0] + Sd[1] * Xd[1] + Sd[2] * Xd[2] + diag * qd[i]
            Bd.append(Bdi)
        Jdqd = [-(Si[r][0] * w[0] + Si[r][1] * w[1] + Si[r][2] * w[2]) for r in range(3)]
        rhs = [Xdd[r] - Jdqd[r] for r in range(3)]
        # eq. 37 solved for qddot; J^-1 = -diag(1/d) [s_i^T] (eq. 35)
        qdd = [-(S[i][0] * rhs[0] + S[i][1] * rhs[1] + S[i][2] * rhs[2]) / d[i] for i in range(3)]
        au = [tuple(-(B[i][r] * qdd[i] + Bd[i][r] * qd[i]) for r in range(3)) for i in range(3)]  # eq. 56
        return S, B, d, J, qd, qdd, au, Jdqd

    @staticmethod
    def _Jt(J, v):
        """J^T v for nested-list J."""
        return [J[0][i] * v[0] + J[1][i] * v[1] + J[2][i] * v[2] for i in range(3)]

    @staticmethod
    def _Ju(B, i):
        """J_u,i (eq. 43-45): v_u,i = -b_i qdot_i."""
        Ju = np.zeros((3, 3))
        Ju[:, i] = -np.asarray(B[i])
        return Ju

    def codourey_jacobian(self, pose):
        """Codourey's J (eq. 36): Xdot_n = J qdot (the inverse of the project's J)."""
        X, q, _, _ = self._inputs(pose)
        return np.array(self._geometry(X, q)[4])

    def joint_motion(self, pose, twist, accel):
        """(q, qdot, qddot) of the arms from the plate motion (eq. 35, 37)."""
        X, q, Xd, Xdd = self._inputs(pose, twist, accel)
        if Xd is None or Xdd is None:
            raise InvalidInputError("joint_motion needs a twist and an acceleration")
        _, _, _, _, qd, qdd, _, _ = self._motion(X, q, Xd, Xdd)
        return np.array(q), np.array(qd), np.array(qdd)

    # ------------------------------------------------------------------ mass matrix (sec. 4.5)
    @staticmethod
    def _model(model):
        if model not in MODELS:
            raise InvalidInputError(f"model must be one of {MODELS}, got {model!r}")
        return model

    def _joint_mass(self, S, B, d, J, model, literal=False):
        J = np.array(J)
        JtJ = J.T @ J
        if model == "simplified":
            A = self.m_nt * JtJ                                                       # eq. 50
            A[np.diag_indices(3)] += self.I_bt
            return A
        A = (self.m_n + self.m_ab) * JtJ                                              # eq. 40 + first terms of eq. 46
        A[np.diag_indices(3)] += self.I_b + self.m_ab / 3.0 * self.LA ** 2            # eq. 41, eq. 48
        Bm = np.array(B)
        for i in range(3):
            # eq. 46: J_u,i^T J has the single non-zero row -b_i^T J (eq. 49)
            row = -(self.m_ab / 3.0) * (Bm[i] @ J)
            if literal:
                A[i] += row
            else:
                A[i] += 0.5 * row
                A[:, i] += 0.5 * row
        return A

    def joint_mass_matrix(self, pose, model: str = "full", literal: bool = False) -> np.ndarray:
        """Codourey's mass matrix A (joint space, "inertia seen from the motor", kg m^2).

        full: eq. 47, A = I_b + m_n J^T J + sum_i m_ab/3 (J^T J + J_u,i^T J_u,i + sym(J_u,i^T J)).
        The bar's cross term is symmetrized (eq. 4 and 55). ``literal=True`` gives the printed,
        non-symmetric J_u,i^T J (eq. 46-47, 49): the same kinetic energy, a different matrix.
        simplified: eq. 50, A = I_bt + m_nt J^T J.
        """
        model = self._model(model)
        X, q, _, _ = self._inputs(pose)
        S, B, d, Si, J, trig = self._geometry(X, q)
        return self._joint_mass(S, B, d, J, model, literal)

    def mass_matrix(self, pose, model: str = "full", space: str = "task") -> np.ndarray:
        """Mass matrix in the task space (default; the engine's ``mass_matrix``) or the joint space.

        task: M_x = J^-T A J^-1 with Codourey's J (Xdot = J qdot), so that
        1/2 Xdot^T M_x Xdot = 1/2 qdot^T A qdot (eq. 4). joint: A itself (eq. 47 / 50).
        """
        if space not in ("task", "joint"):
            raise InvalidInputError(f"space must be 'task' or 'joint', got {space!r}")
        model = self._model(model)
        X, q, _, _ = self._inputs(pose)
        S, B, d, Si, J, trig = self._geometry(X, q)
        A = self._joint_mass(S, B, d, J, model)
        if space == "joint":
            return A
        Jinv = -np.array(S) / np.array(d)[:, None]                  # J^-1 = -diag(1/d) [s_i^T] (eq. 35)
        return Jinv.T @ A @ Jinv

    # ------------------------------------------------------------------ dynamics (sec. 4.6)
    def inverse_dynamics(self, pose, twist, accel, model: str = "full", wrench=None, gravity=None,
                         friction: bool = False) -> np.ndarray:
        """Motor torques tau (actuated-joint order) for the plate motion (X_n, Xdot_n, Xddot_n).

        full: eq. 57, tau = I_b qddot + J^T m_n Xddot_n - G_b - J^T G_n + sum_i tau_ab,i (eq. 55).
        simplified: eq. 58, tau = I_bt qddot + J^T m_nt Xddot_n - J^T m_ng g - G_bg (eq. 59).
        wrench: an external force f on the plate (base frame) adds -J^T f (eq. 19).
        gravity: None uses the config gravity; np.zeros(3) switches it off. For g = [0, 0, -g]
        the arm term -m r (b_i . g) / L_A is eq. 54's m r g cos q_i.
        Codourey models no friction (friction=True raises).
        """
        model = self._model(model)
        if friction:
            raise InvalidInputError("virtual_work: Codourey's model has no friction (friction must be False; "
                                    "the generic engine has the friction terms)")
        g = self._g if gravity is None else check_vector("gravity", gravity, 3).tolist()
        X, q, Xd, Xdd = self._inputs(pose, twist, accel)
        if Xd is None or Xdd is None:
            raise InvalidInputError("inverse dynamics needs a twist and an acceleration")
        f = [0.0, 0.0, 0.0] if wrench is None else check_vector("wrench (fx fy fz)", wrench, 3).tolist()
        S, B, d, J, qd, qdd, au, _ = self._motion(X, q, Xd, Xdd)
        Bg = [B[i][0] * g[0] + B[i][1] * g[1] + B[i][2] * g[2] for i in range(3)]      # b_i . g
        if model == "full":
            # eq. 57 with eq. 52 (plate), 53-54 (arms) and eq. 55 summed over the forearms: the J^T parts
            # of eq. 55 add up to J^T (m_ab Xddot + m_ab/6 sum_i a_u,i - 3/2 m_ab g); J_u,i^T v = -b_i . v in row i
            mn, mab, m3 = self.m_n, self.m_ab, self.m_ab / 3.0
            F = [(mn + mab) * Xdd[r] - (mn + 1.5 * mab) * g[r] + mab / 6.0 * (au[0][r] + au[1][r] + au[2][r]) - f[r]
                 for r in range(3)]
            JF = self._Jt(J, F)
            k = self.mr_Gb / self.LA + 0.5 * mab
            tau = [self.I_b * qdd[i] + JF[i] + k * Bg[i]
                   - m3 * sum(B[i][r] * (au[i][r] + 0.5 * Xdd[r]) for r in range(3)) for i in range(3)]
        else:
            F = [self.m_nt * Xdd[r] - self.m_ng * g[r] - f[r] for r in range(3)]          # eq. 58
            JF = self._Jt(J, F)
            k = self.mr_Gbg / self.LA                                                      # eq. 59
            tau = [self.I_bt * qdd[i] + JF[i] + k * Bg[i] for i in range(3)]
        return np.array(tau)


# ---------------------------------------------------------------------- simplification error
def random_states(kin, n: int, rng: np.random.Generator, v_scale=0.5, a_scale=5.0):
    """n random reachable regular poses with random twists (|v| ~ v_scale) and accelerations (|a| ~ a_scale)."""
    from ..kinematics.workspace import random_poses
    poses = random_poses(kin, n, rng)
    twists = rng.normal(size=(n, 3)) * (v_scale / np.sqrt(3.0))
    accels = rng.normal(size=(n, 3)) * (a_scale / np.sqrt(3.0))
    return poses, twists, accels


def simplification_error(n: int, rng: np.random.Generator, form: Formulation | None = None,
                         v_scale: float = 0.5, a_scale: float = 5.0) -> dict:
    """How far the simplified models (eq. 50, 58) are from the full ones (eq. 47, 57) over the workspace.

    Random reachable states (``random_states``). Per state, relative errors
    |A_s - A_f|_2 / |A_f|_2 (matrix 2-norm, joint space), the worst diagonal term
    |dA_ii| / A_ii, and |tau_s - tau_f| / |tau_f| (vector 2-norm) with gravity
    and without it (inertial part only; the simplified gravity term is exact).
    Returns max and RMS of each, in a JSON-able dict.
    """
    form = form or Formulation("delta")
    poses, twists, accels = random_states(form.kin, n, rng, v_scale, a_scale)
    eA, eD, eT, eT0, eG = (np.empty(n) for _ in range(5))
    zero = np.zeros(3)
    for k, (pose, v, a) in enumerate(zip(poses, twists, accels)):
        Af = form.joint_mass_matrix(pose, "full")
        As = form.joint_mass_matrix(pose, "simplified")
        eA[k] = np.linalg.norm(As - Af, 2) / np.linalg.norm(Af, 2)
        eD[k] = np.max(np.abs(np.diag(As - Af)) / np.diag(Af))
        tf, ts = form.inverse_dynamics(pose, v, a, "full"), form.inverse_dynamics(pose, v, a, "simplified")
        eT[k] = np.linalg.norm(ts - tf) / np.linalg.norm(tf)
        tf0 = form.inverse_dynamics(pose, v, a, "full", gravity=zero)
        ts0 = form.inverse_dynamics(pose, v, a, "simplified", gravity=zero)
        eT0[k] = np.linalg.norm(ts0 - tf0) / np.linalg.norm(tf0)
        gf = form.inverse_dynamics(pose, zero, zero, "full")
        gs = form.inverse_dynamics(pose, zero, zero, "simplified")
        eG[k] = np.linalg.norm(gs - gf) / np.linalg.norm(gf)

    def stats(e):
        return {"max": float(e.max()), "rms": float(np.sqrt(np.mean(e ** 2))), "median": float(np.median(e))}

    return {"n_states": n, "v_scale_m_s": v_scale, "a_scale_m_s2": a_scale,
            "mass_matrix": stats(eA), "mass_matrix_diagonal": stats(eD), "tau": stats(eT),
            "tau_inertial": stats(eT0), "tau_gravity": stats(eG)}


def format_simplification_error(rep: dict) -> str:
    rows = [("mass matrix A (eq. 50 vs 47), |dA|_2/|A|_2", rep["mass_matrix"]),
            ("diagonal inertias A_ii, worst |dA_ii|/A_ii", rep["mass_matrix_diagonal"]),
            ("torque tau (eq. 58 vs 57), with gravity", rep["tau"]),
            ("torque tau, inertial part (gravity off)", rep["tau_inertial"]),
            ("torque tau, gravity only (static)", rep["tau_gravity"])]
    out = [f"simplified vs full model over {rep['n_states']} random states "
           f"(|v| ~ {rep['v_scale_m_s']} m/s, |a| ~ {rep['a_scale_m_s2']} m/s^2), relative error:",
           f"  {'quantity':48s} {'max':>10s} {'rms':>10s} {'median':>10s}"]
    for name, s in rows:
        out.append(f"  {name:48s} {s['max']:10.3e} {s['rms']:10.3e} {s['median']:10.3e}")
    return "\n".join(out)
