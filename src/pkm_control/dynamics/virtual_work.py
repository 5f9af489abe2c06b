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

import numpy as np

from ..errors import InvalidInputError, InvalidModelError, SingularConfigurationError, check_vector

METHOD = "virtual_work"
ROBOTS = ("delta",)
MODELS = ("full", "simplified")
_BAR_TOL = 1e-9          # relative tolerance on the bar assumptions of the config


def _kinematics(source):
    """The DELTA kinematics from a ClosedLoopDynamics (``.kin``), a kinematics object or a robot name."""
    if isinstance(source, str):
        from ..kinematics import robot_kinematics
        return robot_kinematics(source)
    kin = getattr(source, "kin", source)
    if getattr(kin, "family", None) != "delta":
        raise InvalidModelError(f"virtual_work (Codourey) is the DELTA formulation; got kinematics family "
                                f"{getattr(kin, 'family', type(kin).__name__)!r}")
    return kin


class Formulation:
    """Codourey's virtual-work dynamics and kinetic-energy mass matrix of the DELTA (immutable).

    Build with ``Formulation(dyn)``, where dyn is ``robot_dynamics("delta")``.
    Its kinematics object or the robot name ``"delta"`` also work.
    """

    method = METHOD
    robots = ROBOTS

    def __init__(self, source="delta"):
        kin = _kinematics(source)
        cfg = kin.model.config
        try:
            geo, bodies = cfg["geometry"], cfg["bodies"]
            RA, RB = float(geo["base_radius"]), float(geo["plate_radius"])
            LA, LB = float(geo["arm_length"]), float(geo["forearm_length"])
            theta = np.array(geo["arm_azimuths"], float)
            plate, rotor, arm, elbow, forearm = (bodies[k] for k in ("plate", "rotor", "arm", "elbow", "forearm"))
            gvec = check_vector("gravity (config)", cfg.get("gravity", [0.0, 0.0, -9.81]), 3)
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
        c, s = np.cos(theta), np.sin(theta)
        # R_i (eq. 24) as (3, 3, 3)
        self._Ri = np.array([[[ci, -si, 0.0], [si, ci, 0.0], [0.0, 0.0, 1.0]] for ci, si in zip(c, s)])
        for a in (self.theta, self.gravity, self._Ri):
            a.setflags(write=False)
        self._frozen = True

    def __setattr__(self, name, value):
        if getattr(self, "_frozen", False):
            raise AttributeError(f"{type(self).__name__} is immutable (tried to set {name!r})")
        object.__setattr__(self, name, value)

    # ------------------------------------------------------------------ kinematics (sec. 4.3-4.4)
    def _inputs(self, pose, twist=None, accel=None):
        """Checked pose/twist/accel (the family's validate) and the arm angles (its IK, limits checked)."""
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        q = self.kin.actuated(pose)
        return pose.position, q, twist, accel

    def _geometry(self, X, q):
        """s_i (rows, eq. 30), b_i (rows, eq. 34), d_i = s_i . b_i and J (eq. 36)."""
        LA = self.LA
        cq, sq = np.cos(q), np.sin(q)
        Ri = self._Ri
        C = np.einsum("ijk,ik->ij", Ri, np.column_stack([self.R + LA * cq, np.zeros(3), -LA * sq]))
        S = X[None, :] - C                                                    # eq. 30
        B = np.einsum("ijk,ik->ij", Ri, np.column_stack([LA * sq, np.zeros(3), LA * cq]))   # eq. 34
        d = np.einsum("ij,ij->i", S, B)
        tol = 1e-12 * LA * self.LB
        k = int(np.argmin(np.abs(d)))
        if abs(d[k]) <= tol:
            raise SingularConfigurationError(f"leg{k + 1}: arm and forearm aligned (inverse singularity): "
                                             f"s.b = {d[k]:.3g} (limit {tol:.3g})")
        detS = np.linalg.det(S)
        if abs(detS) <= 1e-12 * self.LB ** 3:
            raise SingularConfigurationError(f"forearms coplanar/parallel (direct singularity): det[s_i^T] = "
                                             f"{detS:.3g} (limit {1e-12 * self.LB ** 3:.3g})")
        J = -np.linalg.solve(S, np.diag(d))                                   # eq. 36
        return S, B, d, J, cq, sq

    def _motion(self, X, q, Xd, Xdd):
        """qdot (eq. 35), Jdot (eq. 37-38), qddot (eq. 37), bdot_i rows (eq. 38)."""
        S, B, d, J, cq, sq = self._geometry(X, q)
        qd = -(S @ Xd) / d                                                    # eq. 35 row by row
        LA = self.LA
        Bd = np.einsum("ijk,ik->ij", self._Ri, np.column_stack([LA * cq, np.zeros(3), -LA * sq])) * qd[:, None]  # eq. 38
        Sd = Xd[None, :] + B * qd[:, None]                                    # eq. 33
        diag = np.einsum("ij,ij->i", Sd, B) + np.einsum("ij,ij->i", S, Bd)
        Jd = -np.linalg.solve(S, Sd @ J + np.diag(diag))                      # eq. 37: the term multiplying qdot
        qdd = np.linalg.solve(J, Xdd - Jd @ qd)                               # eq. 37 solved for qddot
        return S, B, d, J, qd, qdd, Bd, Jd

    @staticmethod
    def _Ju(B, i):
        """J_u,i (eq. 43-45): v_u,i = -b_i qdot_i."""
        Ju = np.zeros((3, 3))
        Ju[:, i] = -B[i]
        return Ju

    def codourey_jacobian(self, pose):
        """Codourey's J (eq. 36): Xdot_n = J qdot (the inverse of the project's J)."""
        X, q, _, _ = self._inputs(pose)
        return self._geometry(X, q)[3]

    def joint_motion(self, pose, twist, accel):
        """(q, qdot, qddot) of the arms from the plate motion (eq. 35, 37)."""
        X, q, Xd, Xdd = self._inputs(pose, twist, accel)
        _, _, _, _, qd, qdd, _, _ = self._motion(X, q, Xd, Xdd)
        return q, qd, qdd

    # ------------------------------------------------------------------ mass matrix (sec. 4.5)
    @staticmethod
    def _model(model):
        if model not in MODELS:
            raise InvalidInputError(f"model must be one of {MODELS}, got {model!r}")
        return model

    def joint_mass_matrix(self, pose, model: str = "full", literal: bool = False) -> np.ndarray:
        """Codourey's mass matrix A (joint space, "inertia seen from the motor", kg m^2).

        full: eq. 47, A = I_b + m_n J^T J + sum_i m_ab/3 (J^T J + J_u,i^T J_u,i + sym(J_u,i^T J)).
        The bar's cross term is symmetrized (eq. 4 and 55). ``literal=True`` gives the printed,
        non-symmetric J_u,i^T J (eq. 46-47, 49): the same kinetic energy, a different matrix.
        simplified: eq. 50, A = I_bt + m_nt J^T J.
        """
        model = self._model(model)
        X, q, _, _ = self._inputs(pose)
        S, B, d, J, cq, sq = self._geometry(X, q)
        JtJ = J.T @ J
        if model == "simplified":
            return np.diag(np.full(3, self.I_bt)) + self.m_nt * JtJ                   # eq. 50
        A = np.diag(np.full(3, self.I_b)) + self.m_n * JtJ                           # eq. 40, 41
        for i in range(3):
            Ju = self._Ju(B, i)
            cross = Ju.T @ J if literal else 0.5 * (Ju.T @ J + J.T @ Ju)
            A += self.m_ab / 3.0 * (JtJ + Ju.T @ Ju + cross)                          # eq. 46-47
        return A

    def mass_matrix(self, pose, model: str = "full", space: str = "task") -> np.ndarray:
        """Mass matrix in the task space (default; the engine's ``mass_matrix``) or the joint space.

        task: M_x = J^-T A J^-1 with Codourey's J (Xdot = J qdot), so that
        1/2 Xdot^T M_x Xdot = 1/2 qdot^T A qdot (eq. 4). joint: A itself (eq. 47 / 50).
        """
        if space not in ("task", "joint"):
            raise InvalidInputError(f"space must be 'task' or 'joint', got {space!r}")
        A = self.joint_mass_matrix(pose, model)
        if space == "joint":
            return A
        X, q, _, _ = self._inputs(pose)
        Jinv = np.linalg.inv(self._geometry(X, q)[3])
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
        g = self.gravity if gravity is None else check_vector("gravity", gravity, 3)
        X, q, Xd, Xdd = self._inputs(pose, twist, accel)
        if Xd is None or Xdd is None:
            raise InvalidInputError("inverse dynamics needs a twist and an acceleration")
        S, B, d, J, qd, qdd, Bd, Jd = self._motion(X, q, Xd, Xdd)
        Bg = B @ g                                                  # b_i . g per arm
        if model == "full":
            tau = self.I_b * qdd + J.T @ (self.m_n * Xdd) + self.mr_Gb / self.LA * Bg - J.T @ (self.m_n * g)  # eq. 52-54, 57
            au = -(B * qdd[:, None] + Bd * qd[:, None])               # eq. 56 (bdot_i qdot_i), rows a_u,i
            m3 = self.m_ab / 3.0
            for i in range(3):
                # eq. 55: J_u,i^T v = -b_i . v in row i only
                tau += m3 * (J.T @ (Xdd + 0.5 * au[i])) - 0.5 * self.m_ab * (J.T @ g)
                tau[i] += -m3 * (B[i] @ (au[i] + 0.5 * Xdd)) + 0.5 * self.m_ab * Bg[i]
        else:
            tau = (self.I_bt * qdd + J.T @ (self.m_nt * Xdd) - J.T @ (self.m_ng * g)
                   + self.mr_Gbg / self.LA * Bg)                      # eq. 58-59
        if wrench is not None:
            tau -= J.T @ check_vector("wrench (fx fy fz)", wrench, 3)    # eq. 19, external force on the plate
        return tau


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
