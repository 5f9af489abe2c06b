"""Base parameters by QR with column pivoting (Gautier and Khalil, numerical method).

The regressor stacked over random states, W = [Omega(s_1); ...; Omega(s_N)], has
rank r. With W P = Q R (columns pivoted by decreasing norm), the first r pivot
columns are independent (base) and the others are combinations of them:
W_d = W_b beta with beta = R_11^-1 R_12. Then W p = W_b (p_b + beta p_d), so the
base parameters are p_b + beta p_d: named linear combinations of the standard ones.
"""

from __future__ import annotations

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
    # columns scaled to unit norm so the rank decision does not depend on units
    scale = np.linalg.norm(W, axis=0)
    nonzero = scale > 1e-10 * scale.max()   # a column of round-off (1e-15 against 1e2) is zero, not a parameter
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
