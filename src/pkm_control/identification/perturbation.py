"""A robot that is not the model: a seeded, physically consistent perturbation of a robot's parameters.

``perturbed_parameters(dyn, scale, seed)`` changes every body's mass, first moment and rotational inertia and every
friction coefficient of the config by a factor drawn uniformly in [1 - scale, 1 + scale] and returns the set in the
``parameters_file`` schema of control/feedforward.py (``load_parameter_set`` reads it; the simulated robot takes it
as its true parameters, setting ``true_parameters_file``; computed_force may take it as its model).

Physical consistency (Wensing, Kim and Slotine, "Linear matrix inequalities for physically consistent inertial
parameter identification", 2017): a body is realizable when its pseudo-inertia

    J = [[Sigma + m c c^T, m c], [m c^T, m]],   Sigma = 1/2 tr(I_c) 1 - I_c   (the second moment of the mass
                                                                               distribution about the COM)

is positive semidefinite, i.e. m > 0 and Sigma >= 0, i.e. the principal moments of I_c are >= 0 and satisfy the
triangle inequalities I_1 + I_2 >= I_3. So the rotational inertia is perturbed through Sigma: its principal values
sigma_k are each multiplied by a factor (they stay >= 0, so every triangle inequality holds: I_j + I_k - I_i =
2 sigma_i) and its principal axes turned by a rotation of at most ``scale`` rad; I_c = tr(Sigma) 1 - Sigma. Each
principal moment I_i = sigma_j + sigma_k then changes by a weighted mean of two factors, also within +-scale. A point
mass (Sigma = 0) or a thin rod (one sigma nonzero) stays one: a body that is only semidefinite stays semidefinite.
The mass and each component of the first moment m c are multiplied by their own factors (c = m c / m). Massless
links stay massless (they are not in the file).

``identical_legs``: one draw per body kind (``dynamics.parameters.share_across_legs``: leg1_piston and leg2_piston
share theirs) and per friction role, so the legs stay identical (the assumption of Jourdain's model of the PaLiDA);
by default every body and every per-joint friction value draws its own. A friction term the config gives as one
value shared by a role's joints stays one value (the identification's friction parameters are the model's).
``keep_axes``: the principal axes are not turned (products of inertia that are zero in the config stay zero, as
Table I of Abdellatif's PaLiDA model assumes); the other draws are the same as without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pinocchio as pin

from ..control.feedforward import ParameterSet, _inertia_matrix, parameter_set_from_dict
from ..dynamics.parameters import share_across_legs
from ..errors import InvalidInputError, InvalidModelError

#: relative tolerance of the consistency checks (of the trace of the inertia)
CONSISTENCY_TOL = 1e-12


@dataclass(frozen=True)
class Perturbation:
    """A perturbed parameter set: ``data`` in the parameters_file schema, ``parameters`` validated for the robot,
    ``n_parameters`` the values changed (nonzero nominal ones), ``max_relative_change`` the largest |factor - 1| of a
    mass, first-moment component, principal moment of inertia or friction coefficient."""

    data: dict
    parameters: ParameterSet
    n_parameters: int
    max_relative_change: float
    scale: float
    seed: int

    def summary(self) -> str:
        return (f"{self.data['robot']}: {self.n_parameters} parameters changed by up to +-{100 * self.scale:.4g} % "
                f"(seed {self.seed}), largest relative change {100 * self.max_relative_change:.3f} %; "
                f"{len(self.data['bodies'])} bodies, every friction coefficient")


def body_inconsistency(mass: float, inertia) -> str | None:
    """Why a body (mass, inertia about its COM as ixx iyy izz ixy ixz iyz) is not physically realizable, or None:
    mass > 0, principal moments >= 0 and the triangle inequalities (module docstring)."""
    if not (np.isfinite(mass) and mass > 0):
        return f"mass {mass} is not > 0"
    lam = np.linalg.eigvalsh(_inertia_matrix(inertia))
    tol = CONSISTENCY_TOL * max(lam.sum(), 1e-300)
    if lam[0] < -tol:
        return f"principal moment {lam[0]:.6g} < 0"
    if lam[0] + lam[1] < lam[2] - tol:
        return f"principal moments {lam.tolist()} violate the triangle inequality I1 + I2 >= I3"
    return None


def _check_scale(scale):
    if isinstance(scale, bool) or not isinstance(scale, (int, float, np.floating)) or not np.isfinite(scale) \
            or not 0 <= scale < 1:
        raise InvalidInputError(f"scale must be a finite number in [0, 1) (a relative change: 0.2 = +-20 %), "
                                f"got {scale!r}")
    return float(scale)


def perturbed_parameters(dyn, scale: float = 0.2, seed: int = 0, identical_legs: bool = False,
                         keep_axes: bool = False) -> Perturbation:
    """The robot's parameters changed by up to +-scale (module docstring), reproducible by ``seed``."""
    scale = _check_scale(scale)
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InvalidInputError(f"seed must be an integer >= 0, got {seed!r}")
    rng = np.random.default_rng(int(seed))
    draws = {}

    def factors(key, n):
        """n factors in [1 - scale, 1 + scale] per key: the same key (identical legs) gets the same ones."""
        if key not in draws:
            draws[key] = 1.0 + scale * rng.uniform(-1.0, 1.0, n)
        return draws[key]

    changes = []
    bodies = {}
    for j, link in zip(dyn._bodies, dyn.body_names()):
        inert = dyn.pin_model.inertias[j]
        if inert.mass <= 0:
            continue
        key = share_across_legs(link) if identical_legs else link
        f = factors(key, 10)           # mass, first moment (3), sigma (3), rotation (3)
        m, h = inert.mass, inert.mass * np.array(inert.lever)
        Ic = np.array(inert.inertia)
        Sigma0 = 0.5 * np.trace(Ic) * np.eye(3) - Ic
        if np.count_nonzero(Sigma0 - np.diag(np.diag(Sigma0))) == 0:     # principal axes = the link's (exactly)
            sigma, axes = np.diag(Sigma0).copy(), np.eye(3)
        else:
            sigma, axes = np.linalg.eigh(Sigma0)
        sigma = np.clip(sigma, 0.0, None)            # round-off of a point mass or a rod
        R = np.eye(3) if keep_axes else pin.exp3((f[7:10] - 1.0) / np.sqrt(3))     # a turn of at most scale rad
        Sigma = R @ axes @ np.diag(sigma * f[4:7]) @ axes.T @ R.T
        Ic_new = np.trace(Sigma) * np.eye(3) - Sigma
        m_new, h_new = m * f[0], h * f[1:4]
        inertia = [Ic_new[0, 0], Ic_new[1, 1], Ic_new[2, 2], Ic_new[0, 1], Ic_new[0, 2], Ic_new[1, 2]]
        why = body_inconsistency(m_new, inertia)
        if why is not None:               # cannot happen by construction; a guard against a wrong edit
            raise InvalidModelError(f"perturbed body {link} is not physically consistent: {why}")
        bodies[link] = {"mass": float(m_new), "com": [float(x) for x in h_new / m_new],
                        "inertia": [float(x) for x in inertia]}
        lam, lam_new = np.linalg.eigvalsh(Ic), np.linalg.eigvalsh(Ic_new)
        changes += [f[0] - 1.0] + [fi - 1.0 for fi, hi in zip(f[1:4], h) if hi != 0.0] + \
            [b / a - 1.0 for a, b in zip(lam, lam_new) if a > CONSISTENCY_TOL * lam.sum()]
    friction = {}
    nominal = ParameterSet.nominal(dyn).friction
    for role, entry in nominal.items():
        friction[role] = {}
        for kind, value in entry.items():
            vals = np.atleast_1d(np.asarray(value, float))
            f = factors(f"friction.{role}.{kind}", 1 if identical_legs or np.ndim(value) == 0 else len(vals))
            new = vals * f
            friction[role][kind] = float(new[0]) if np.ndim(value) == 0 else [float(x) for x in new]
            changes += [fi - 1.0 for fi, v in zip(np.broadcast_to(f, vals.shape), vals) if v != 0.0]
    data = {"robot": dyn.model.name, "inertia_scale": 1.0, "friction": friction, "bodies": bodies}
    ps = parameter_set_from_dict(data, dyn, source=f"perturbation seed {seed}")
    return Perturbation(data, ps, len(changes), float(np.max(np.abs(changes))) if changes else 0.0, scale, int(seed))


def write_perturbation(path, perturbation: Perturbation, command: str) -> None:
    """The set as a YAML parameters_file, headed by the command that made it and its summary."""
    import yaml

    header = (f"# {command}\n# {perturbation.summary()}\n# a parameters_file (control/feedforward.py) for the "
              f"simulated robot's true_parameters_file or computed_force\n")
    Path(path).write_text(header + yaml.safe_dump(perturbation.data, sort_keys=False))
