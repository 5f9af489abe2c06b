"""Base parameters by QR with column pivoting (Gautier and Khalil, numerical method).

The regressor stacked over random states, W = [Omega(s_1); ...; Omega(s_N)], has
rank r. With W P = Q R (columns pivoted by decreasing norm), the first r pivot
columns are independent (base) and the others are combinations of them:
W_d = W_b beta with beta = R_11^-1 R_12. Then W p = W_b (p_b + beta p_d), so the
base parameters are p_b + beta p_d: named linear combinations of the standard ones.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from ..errors import InvalidInputError
from ..kinematics.workspace import random_poses


@dataclass(frozen=True)
class BaseParameters:
    names: tuple                 # the parameters considered (after grouping / exclusion)
    values: np.ndarray           # their values
    grouping: np.ndarray         # P: standard parameters p_std = P p (grouped columns: Y_g = Y P)
    base: np.ndarray             # indices into names of the base (independent) parameters
    dependent: np.ndarray        # indices of the others
    beta: np.ndarray             # (r x n_dep): p_base = p[base] + beta p[dependent]
    rank: int

    @property
    def base_values(self) -> np.ndarray:
        return self.values[self.base] + self.beta @ self.values[self.dependent]

    def expressions(self, tol: float = 1e-9) -> list[str]:
        """p_base_i as text: 'name_b + c * name_d + ...'."""
        out = []
        for i, b in enumerate(self.base):
            terms = [self.names[b]]
            for k, d in enumerate(self.dependent):
                c = self.beta[i, k]
                if abs(c) > tol:
                    terms.append(f"{'-' if c < 0 else '+'} {abs(c):.6g} {self.names[d]}"
                                 if abs(abs(c) - 1) > tol else f"{'-' if c < 0 else '+'} {self.names[d]}")
            out.append(" ".join(terms))
        return out

    def base_values_of(self, standard: np.ndarray) -> np.ndarray:
        """The base parameters of another standard-parameter vector (same robot, ``grouping``'s order of
        standard parameters; grouped members take their first member's value)."""
        g = np.array([standard[np.flatnonzero(col)[0]] for col in self.grouping.T])
        return g[self.base] + self.beta @ g[self.dependent]

    def reduce(self, omega: np.ndarray) -> np.ndarray:
        """Base columns of a regressor over the standard parameters: Omega p = Omega_b p_base."""
        return (omega @ self.grouping)[:, self.base]


def share_across_legs(name: str) -> str:
    """Group key for identical legs: 'leg3_piston.m' -> 'leg_piston.m' (friction names unchanged)."""
    return name if name.startswith("friction.") else re.sub(r"^leg\d+_", "leg_", name)


def sample_states(dyn, n: int, rng: np.random.Generator, speed: float = 1.0, accel: float = 5.0):
    """n random (pose, twist, accel) in the robot's workspace with the given scales."""
    poses = random_poses(dyn.kin, n, rng)
    return [(p, speed * rng.standard_normal(dyn.n), accel * rng.standard_normal(dyn.n)) for p in poses]


def base_parameters(dyn, n_samples: int = 100, rng=None, group=None, exclude=(), friction: bool = True,
                    tol: float = 1e-8) -> BaseParameters:
    """Numerical base parameters of a robot.

    group: callable name -> key; parameters with the same key share one value (their
    columns are summed), e.g. ``share_across_legs`` for identical legs. Members of
    a group must have equal values in the model.
    exclude: regular expressions of parameters assumed zero (modelling assumptions).
    """
    rng = rng if rng is not None else np.random.default_rng(0)
    names, values = dyn.parameters()
    if not friction:
        keep0 = [i for i, n in enumerate(names) if not n.startswith("friction.")]
        names, values = [names[i] for i in keep0], values[keep0]
    keep = [i for i, n in enumerate(names) if not any(re.fullmatch(e, n) for e in exclude)]
    keys = {}
    for i in keep:
        keys.setdefault(group(names[i]) if group else names[i], []).append(i)
    P = np.zeros((len(names), len(keys)))
    gvalues = np.zeros(len(keys))
    for k, (key, members) in enumerate(keys.items()):
        P[members, k] = 1.0
        vals = values[members]
        if np.ptp(vals) > 1e-9 * max(1.0, np.abs(vals).max()):
            raise InvalidInputError(f"parameters grouped as '{key}' differ: "
                                    f"{dict(zip([names[i] for i in members], vals))}")
        gvalues[k] = vals[0]
    states = sample_states(dyn, n_samples, rng)
    W = np.vstack([dyn.regressor(p, t, a, friction=friction)[:, :len(names)] @ P for p, t, a in states])
    # columns scaled to unit norm so the rank decision does not depend on units; columns at the rounding level
    # (a parameter that acts on nothing, e.g. a first moment along a link's spin axis) are zero, not unit noise
    scale = np.linalg.norm(W, axis=0)
    nonzero = scale > 1e-10 * scale.max()
    Ws = W[:, nonzero] / scale[nonzero]
    _, R, piv = scipy.linalg.qr(Ws, mode="economic", pivoting=True)
    d = np.abs(np.diag(R))
    r = int(np.sum(d > tol * d[0]))
    cols = np.flatnonzero(nonzero)
    base = cols[piv[:r]]
    dependent = np.concatenate([cols[piv[r:]], np.flatnonzero(~nonzero)])
    beta_s = scipy.linalg.solve_triangular(R[:r, :r], R[:r, r:])
    # undo the column scaling: W_d = W_b beta  with W = Ws * scale
    beta = np.zeros((r, len(dependent)))
    beta[:, :len(piv) - r] = beta_s * scale[cols[piv[r:]]][None, :] / scale[base][:, None]
    order = np.argsort(base)
    return BaseParameters(tuple(keys), gvalues, P, base[order], dependent, beta[order], r)


def per_joint_friction(dyn):
    """The same robot with one friction parameter per joint (and per cut joint) wherever its config shares one
    value among a role's joints: a plant whose joints differ (``pkm perturb``) is then in the model's span."""
    import dataclasses

    from ..kinematics import make_kinematics
    from .engine import ClosedLoopDynamics

    clm = dyn.model
    members = {p.name: len(p.members) for p in dyn.friction.parameters}
    spec = {}
    for role, entry in clm.spec.friction.items():
        spec[role] = {kind: ([float(val)] * members[f"friction.{role}.{kind}"] if np.ndim(val) == 0 else list(val))
                      for kind, val in (entry or {}).items()}
    clm = dataclasses.replace(clm, spec=clm.spec.with_friction(spec))
    return ClosedLoopDynamics(make_kinematics(clm), gravity=dyn.gravity, sign_eps=dyn.sign_eps)


#: how the standard parameters are tied before the base parameters are formed (BaseModel)
STRUCTURES = ("per-body", "shared-legs", "jourdain")


class BaseModel:
    """The base parameters of a robot and their regressor: tau = Y_b(pose, twist, accel) p_b (non-redundant),
    J^T tau = Omega_b p_b (Wu eq. 16) for every robot. Immutable apart from pinocchio scratch data.

    structure
      ``per-body``: every body its own 10 inertial parameters and every joint its own friction parameters
      (``per_joint_friction``); numerical base parameters (``base_parameters``): exact for any plant of this
      kinematics, whatever its bodies and joints (``pkm perturb``).
      ``shared-legs``: identical legs (``share_across_legs``) and the config's friction sharing.
      ``jourdain``: PaLiDA only, Abdellatif's Table I (10 rigid-body base parameters under the paper's
      assumptions of identical, symmetric struts) + 14 friction parameters, with its compiled kernel
      (dynamics/jourdain.py).
    sign_eps > 0: tanh(qdot / eps) for sign(qdot) in the Coulomb columns (None: dyn's).
    """

    def __init__(self, dyn, structure: str = "per-body", sign_eps: float | None = None):
        from .engine import ClosedLoopDynamics

        if structure not in STRUCTURES:
            raise InvalidInputError(f"base-parameter structure must be one of {STRUCTURES}, got {structure!r}")
        self.robot, self.variant = dyn.model.name, dyn.model.variant
        self.structure = structure
        self.kin = dyn.kin
        self.redundant = dyn.redundant
        eps = dyn.sign_eps if sign_eps is None else float(sign_eps)
        if structure == "jourdain":
            from .formulations import formulation

            self.form = formulation("jourdain", dyn)
            self.names, self.expressions = self.form.base_names, self.form.base_formulas
            self.standard = None
            self.dyn = dyn
            return
        self.form = None
        base = dyn if eps == dyn.sign_eps else ClosedLoopDynamics(dyn.kin, gravity=dyn.gravity, sign_eps=eps)
        self.dyn = per_joint_friction(base) if structure == "per-body" else base
        self.standard = base_parameters(self.dyn, group=share_across_legs if structure == "shared-legs" else None)
        self.names = tuple(self.standard.names[i] for i in self.standard.base)
        self.expressions = tuple(self.standard.expressions())

    def __len__(self):
        return len(self.names)

    def with_sign_eps(self, sign_eps: float) -> "BaseModel":
        """The same base parameters (names, relation to the standard ones) with the Coulomb columns' sign taken as
        tanh(qdot / sign_eps) (0: exact). Which columns are base is decided once: the pivoting of
        ``base_parameters`` may pick other representatives of a group of dependent columns for another sign_eps,
        and the parameters of a file must keep their meaning."""
        from .engine import ClosedLoopDynamics

        if self.form is not None or sign_eps == self.dyn.sign_eps:
            return self
        out = copy.copy(self)
        dyn = ClosedLoopDynamics(self.kin, gravity=self.dyn.gravity, sign_eps=float(sign_eps))
        out.dyn = per_joint_friction(dyn) if self.structure == "per-body" else dyn
        return out

    def is_positive(self) -> np.ndarray:
        """True where a base parameter must be > 0: a mass, a moment of inertia (I_xx, I_yy, I_zz about a body
        frame's origin), or a sum of them with positive coefficients (Table I: p_rb1, p_rb3, p_rb6-8, p_rb10)."""
        if self.form is not None:
            return np.array([n in ("p_rb1", "p_rb3", "p_rb6", "p_rb7", "p_rb8", "p_rb10") for n in self.names])
        return np.array([" - " not in e and all(t.endswith((".m", ".Ixx", ".Iyy", ".Izz")) for t in e.split(" + "))
                         for e in self.expressions])

    def has_mass(self) -> np.ndarray:
        """True where a base parameter's combination contains a mass (m_E + 6 m_3 of Table I, '<link>.m')."""
        if self.form is not None:
            return np.array([n == "p_rb10" for n in self.names])
        return np.array([any(t.split(" ")[-1].endswith(".m") for t in e.replace(" - ", " + ").split(" + "))
                         for e in self.expressions])

    def is_friction(self) -> np.ndarray:
        """True where a base parameter is a friction coefficient alone: it must be >= 0."""
        if self.form is not None:
            return np.array([n.startswith("r") for n in self.names])
        return np.array([e.startswith("friction.") and " " not in e for e in self.expressions])

    def generalized_regressor(self, pose, twist, accel, friction: bool = True) -> np.ndarray:
        """Omega_b (n x b): the generalized force on the task velocity J^T tau = Omega_b p_b (Wu eq. 16)."""
        if self.form is not None:
            return self.kin.jacobian(pose).T @ self.form.base_regressor(pose, twist, accel, friction)
        return self.standard.reduce(self.dyn.regressor(pose, twist, accel, friction))

    def actuator_regressor(self, pose, twist, accel, friction: bool = True) -> np.ndarray:
        """Y_b (n_actuated x b) with tau = Y_b p_b (non-redundant robots; Jourdain: Abdellatif eq. 20, 28)."""
        if self.form is not None:
            return self.form.base_regressor(pose, twist, accel, friction)
        return self.standard.reduce(self.dyn.actuator_regressor(pose, twist, accel, friction))

    def observation_rows(self, poses, twists, accels, friction: bool = True) -> np.ndarray:
        """(N, rows, b): ``actuator_regressor`` (non-redundant) or ``generalized_regressor`` (redundant) of N
        states. Jourdain: one compiled batch call per base parameter (tau is linear in p_b: the column of p_k is
        the kernel's force with p_b = e_k), about 1 us per sample and parameter."""
        if self.form is not None:
            P = np.array([p.position for p in poses])
            R = np.array([p.rotation for p in poses])
            out = np.empty((len(poses), self.kin.model.n_actuated, len(self)))
            for k, form in enumerate(self._unit_forms()):
                out[:, :, k] = form.inverse_dynamics_batch(P, R, twists, accels, friction, check_limits=False)
            return out
        if self.redundant:
            return np.array([self.generalized_regressor(p, t, a, friction) for p, t, a in zip(poses, twists, accels)])
        # tau = J^-T Omega_b p_b; J regular where the caller's task rates came from it
        return np.array([np.linalg.solve(self.kin.jacobian(p).T, self.generalized_regressor(p, t, a, friction))
                         for p, t, a in zip(poses, twists, accels)])

    def formulation_with(self, values):
        """Jourdain: the formulation carrying base parameters ``values`` (Table I's representative slots, the
        others zero; the 14 friction values) for its compiled kernels."""
        return self.form.with_base_parameters(values)

    def _unit_forms(self):
        return [self.formulation_with(e) for e in np.eye(len(self))]

    def values_of(self, plant, n_states: int = 30) -> np.ndarray:
        """The base parameters of a plant's ClosedLoopDynamics (same kinematics, its own inertias and friction).

        Numerical structures: the standard values (friction of a shared role copied to each joint) through the
        base relation p_b = p[base] + beta p[dependent]. ``jourdain``: the least-squares fit of Omega_b p_b to the
        plant's generalized forces at random states; InvalidInputError if the plant breaks Table I's assumptions
        (relative residual above 1e-9).
        """
        names, values = plant.parameters()
        index = dict(zip(names, values))
        if self.form is None:
            std_names = self.dyn.parameters()[0]
            p = np.array([index[n] if n in index else index[n.rsplit(".", 1)[0]] for n in std_names])
            return self.standard.base_values_of(p)
        states = sample_states(self.dyn, n_states, np.random.default_rng(7))
        A = np.vstack([self.generalized_regressor(*s) for s in states])
        b = np.concatenate([plant.regressor(*s) @ values for s in states])
        x = np.linalg.lstsq(A, b, rcond=None)[0]
        res = np.linalg.norm(A @ x - b) / np.linalg.norm(b)
        if res > 1e-9:
            raise InvalidInputError(f"the plant is not in the span of Abdellatif's Table I (relative residual "
                                    f"{res:.3g}): its struts differ or are not symmetric; use structure 'per-body'")
        return x
