"""Singularity, dexterity and stiffness at a pose.

Singularities follow Taghirad (ch. Jacobian, after Gosselin and Angeles) with
J_q qdot_a = J_x xdot: J_q losing rank is an *inverse* singularity (an actuator
can move while the platform stands still: workspace boundary, a leg stretched
out), J_x losing rank a *forward* singularity (the platform can move with the
actuators locked), both at once *combined*. Rank loss is judged on the
singular values: sigma_min / sigma_max below ``tol``. Determinants are reported
for square matrices (they carry units, so they are not used as a test).
"""

from __future__ import annotations

import math

from dataclasses import dataclass

import numpy as np

from ..errors import SingularConfigurationError
from .base import ParallelKinematics
from .task_space import Pose

SINGULAR_TOL = 1e-6


@dataclass(frozen=True)
class SingularityReport:
    classification: str            # regular | inverse | forward | combined
    inverse_det: float | None       # det J_q (None if not square)
    inverse_sigma_min: float
    inverse_ratio: float            # sigma_min / sigma_max of J_q
    forward_det: float | None       # det J_x (None if not square: a redundant robot's J_x)
    forward_sigma_min: float
    forward_ratio: float            # sigma_min / sigma_max of J_x
    condition_number: float         # kappa(J), J = J_q^-1 J_x (inf where J is singular: J_q, or sigma_min(J_x) = 0)

    @property
    def dexterity(self) -> float:
        """1 / kappa(J), in [0, 1]."""
        return 0.0 if not np.isfinite(self.condition_number) else 1.0 / self.condition_number

    @property
    def singular(self) -> bool:
        return self.classification != "regular"


def _svd_stats(A):
    s = np.linalg.svd(A, compute_uv=False)
    det = float(np.linalg.det(A)) if A.shape[0] == A.shape[1] else None
    return det, float(s[-1]), float(s[-1] / s[0]) if s[0] > 0 else 0.0


def singularity(kin: ParallelKinematics, pose: Pose, tol: float = SINGULAR_TOL) -> SingularityReport:
    """Classify the pose (see module docstring). Does not check joint limits."""
    Jx, Jq = kin.jacobian_xq(pose)
    fdet, fmin, fratio = _svd_stats(Jx)
    idet, imin, iratio = _svd_stats(Jq)
    inv, fwd = iratio < tol, fratio < tol
    cls = "combined" if inv and fwd else "inverse" if inv else "forward" if fwd else "regular"
    if inv:
        kappa = float("inf")
    else:
        kappa = float(np.linalg.cond(np.linalg.solve(Jq, Jx) if Jq.shape[0] == Jq.shape[1]
                                     else np.linalg.lstsq(Jq, Jx, rcond=None)[0]))
    return SingularityReport(cls, idet, imin, iratio, fdet, fmin, fratio, kappa)


def check_conditioning(J: np.ndarray, what: str, tol: float = SINGULAR_TOL) -> None:
    """SingularConfigurationError unless sigma_min / sigma_max of J is at least ``tol``.

    The rank test of ``singularity``, applied to the matrix that a force computation inverts
    (tau = J^-T f): a pose the classification calls singular gets no actuator forces. Near Fichter's
    singularity of the Stewart platform (yaw 90 deg, config ``singular_pose``) J^-T f reaches 1e18 N.
    """
    if not np.isfinite(J).all():
        raise conditioning_error(what, float("nan"), tol)
    s = np.linalg.svd(J, compute_uv=False)
    ratio = float(s[-1] / s[0]) if s[0] > 0 else 0.0
    if not ratio >= tol:
        raise conditioning_error(what, ratio, tol)


def conditioning_error(what: str, ratio: float, tol: float = SINGULAR_TOL) -> SingularConfigurationError:
    """check_conditioning's error for a matrix with sigma_min / sigma_max = ``ratio`` (NaN: not finite)."""
    if math.isnan(ratio):
        return SingularConfigurationError(f"{what} is not finite (singular configuration)")
    return SingularConfigurationError(f"{what} is singular: sigma_min / sigma_max = {ratio:.3g} is below "
                                      f"{tol:g} (kinematics.analysis.SINGULAR_TOL)")


def dexterity(kin: ParallelKinematics, pose: Pose) -> float:
    """1 / kappa(J) with J in SI units (m, rad): 1 is isotropic, 0 singular."""
    s = np.linalg.svd(kin.jacobian(pose), compute_uv=False)
    return float(s[-1] / s[0]) if s[0] > 0 else 0.0


def actuator_stiffness(kin: ParallelKinematics) -> np.ndarray:
    """Per-actuator stiffness k_i (N/m or Nm/rad) from config ``actuators: {stiffness: ...}``."""
    return kin.model.spec.require("actuators.stiffness", "the stiffness analysis").copy()   # > 0: checked


def stiffness(kin: ParallelKinematics, pose: Pose) -> np.ndarray:
    """Cartesian stiffness K = J^T diag(k) J (Taghirad, ch. Jacobian: stiffness analysis)."""
    J = kin.jacobian(pose)
    return J.T @ (actuator_stiffness(kin)[:, None] * J)


def compliance(kin: ParallelKinematics, pose: Pose) -> np.ndarray:
    """C = K^-1; raises SingularConfigurationError where K is singular (forward singularity)."""
    K = stiffness(kin, pose)
    s = np.linalg.svd(K, compute_uv=False)
    if s[-1] <= SINGULAR_TOL * s[0]:
        raise SingularConfigurationError(f"stiffness matrix is singular: sigma_min/sigma_max = "
                                         f"{s[-1] / s[0]:.3g} < {SINGULAR_TOL:g}")
    return np.linalg.inv(K)
