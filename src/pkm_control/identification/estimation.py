"""Base parameters by least squares from a recorded run (Gautier and Khalil).

The inverse dynamics is linear in the base parameters p_b (dynamics/parameters.py ``BaseModel``):

    tau = Y_b(x, xdot, xddot) p_b                    (non-redundant robots)
    J^T tau = Omega_b(x, xdot, xddot) p_b             (Wu et al. eq. 16; planar_redundant)

The redundant robot's measured forces are not unique for a motion (internal forces lie in null(J^T)),
so its observation is the generalized force J^T tau, which is (Wu eq. 14-16; eq. 35-36 for this robot).

Observation (``observation``): the actuated joints' positions are low-pass filtered and differentiated
(signals.py); the platform pose follows by forward kinematics of the filtered positions (warm-started at
the previous sample), the twist and acceleration by qdot_a = J xdot, qddot_a = J xddot + Jdot xdot
(control/feedforward.task_rates). Forces and rows are filtered in parallel and decimated; the filters'
start-up samples at both ends and the rows a saturated sample reaches are dropped. Stacking the samples
joint equation by joint equation gives W p_b = y + rho.

Estimation (``identify``):

* OLS: p = W^+ y, sigma_rho^2 = |y - W p|^2 / (m - b), cov(p) = sigma_rho^2 (W^T W)^-1;
* WLS (Gautier and Khalil): each joint equation j gets the standard deviation sigma_j of its own OLS
  residual, sigma_j^2 = |rho_j|^2 / (m_j - b m_j / m); the rows are divided by sigma_j and solved again;
  cov(p) = (W_w^T W_w)^-1 |rho_w|^2 / (m - b);
* relative standard deviation 100 sigma_pk / |p_k| %;
* outliers: rows whose residual exceeds 5 robust standard deviations (1.4826 MAD of their joint
  equation) are dropped once and the system solved again; counted in the report;
* the condition number of W with columns scaled to unit norm; above ``max_condition`` the data do not
  excite the base parameters: InvalidInputError names the number and the parameters of the weakest
  direction.

Physical consistency (``consistency``): a base parameter that is a mass or a moment of inertia about a
body frame's axis, or a sum of them with positive coefficients, must be > 0 (>= 0 without a mass: a rod
about its axis); a friction coefficient on its own >= 0. Violations are reported beside the estimates, never clipped.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ..control.feedforward import task_rates
from ..dynamics.parameters import BaseModel
from ..errors import InvalidInputError, PkmError
from ..kinematics.forward import forward_kinematics
from ..progress import progress_bar
from .data import MeasuredRun
from .signals import derivatives, dilate, lowpass, parallel_decimate, sample_rate, saturated

METHODS = ("ols", "wls")
MAX_CONDITION = 1e8          # scaled condition number above which the data are called unexciting
OUTLIER_SIGMAS = 5.0


@dataclass(frozen=True)
class Identification:
    """Identified base parameters of one robot and what they rest on (see the module docstring)."""

    robot: str
    variant: str | None
    structure: str               # BaseModel structure: per-body | shared-legs | jourdain
    method: str                  # ols | wls
    names: tuple
    expressions: tuple           # each base parameter as a combination of standard ones
    values: np.ndarray
    std: np.ndarray              # standard deviation of each estimate
    condition_number: float      # of W with unit-norm columns
    rows: int                    # observation rows used
    sigma: np.ndarray            # residual standard deviation of each joint equation (N or Nm)
    rejected: dict               # {"saturated": samples, "outliers": rows}
    consistency: tuple           # violations of physical consistency (text), empty if none
    source: str = ""
    sign_eps: float = 0.0        # the Coulomb columns' sign: exact (0) or tanh(qdot / sign_eps)

    @property
    def relative_std(self) -> np.ndarray:
        """100 sigma_p / |p| (%), inf where the estimate is 0."""
        with np.errstate(divide="ignore"):
            return np.where(self.values != 0, 100.0 * self.std / np.abs(self.values), np.inf)

    def to_dict(self) -> dict:
        """The ``kind: base_parameters`` file that computed_force's parameters_file loads (control/feedforward)."""
        return {"kind": "base_parameters", "robot": self.robot, "variant": self.variant,
                "structure": self.structure, "method": self.method,
                "condition_number": float(self.condition_number), "rows": int(self.rows),
                "source": self.source, "sign_eps": float(self.sign_eps), "names": list(self.names),
                "expressions": list(self.expressions),
                "values": [float(v) for v in self.values],
                "relative_std": [float(v) if np.isfinite(v) else None for v in self.relative_std],
                "residual_std": [float(s) for s in self.sigma],
                "rejected": {k: int(v) for k, v in self.rejected.items()},
                "consistency": list(self.consistency)}

    def table(self) -> str:
        """The estimates as a text table with relative standard deviations and the consistency report."""
        w = max(len(n) for n in self.names)
        lines = [f"{self.robot}{f' ({self.variant})' if self.variant else ''}: {len(self.names)} base parameters "
                 f"({self.structure}), {self.method.upper()} on {self.rows} rows, condition number "
                 f"{self.condition_number:.3g}",
                 f"rejected: {self.rejected['saturated']} saturated samples, {self.rejected['outliers']} outlier rows; "
                 f"residual std per equation: {' '.join(f'{s:.3g}' for s in self.sigma)}",
                 f"{'name':<{w}}  {'value':>13}  {'rel. std %':>10}  expression"]
        for n, e, v, r in zip(self.names, self.expressions, self.values, self.relative_std):
            lines.append(f"{n:<{w}}  {v:>13.6g}  {r:>10.3g}  {e}")
        lines.append("physical consistency: " + ("ok" if not self.consistency else
                                                 "VIOLATED\n  " + "\n  ".join(self.consistency)))
        return "\n".join(lines)


def _check_run(run: MeasuredRun, dyn) -> MeasuredRun:
    """The run in model joint order, finite, for this robot."""
    clm = dyn.model
    where = run.source or "run"
    if run.robot is not None and run.robot != clm.name:
        raise InvalidInputError(f"{where} is a run of {run.robot!r}, the model is {clm.name!r}")
    names = tuple(clm.actuated_joints)
    if set(run.names) != set(names) or len(run.names) != len(names):
        raise InvalidInputError(f"{where}: joints {tuple(run.names)} are not the actuated joints {names} of "
                                f"{clm.name}")
    order = [list(run.names).index(n) for n in names]
    for what, x in (("position", run.position), ("effort", run.effort)):
        bad = ~np.isfinite(np.asarray(x, float))
        if bad.any():
            i, j = np.argwhere(bad)[0]
            raise InvalidInputError(f"{where}: {what} of {run.names[j]} is {x[i, j]} at sample {i} "
                                    f"(t = {run.t[i]:.6g} s); {int(bad.any(axis=1).sum())} samples are not finite")
    if not np.isfinite(run.t).all():
        raise InvalidInputError(f"{where}: time stamp {int(np.flatnonzero(~np.isfinite(run.t))[0])} is not finite")
    return MeasuredRun(clm.name, names, np.asarray(run.t, float), np.asarray(run.position, float)[:, order],
                       np.asarray(run.effort, float)[:, order], None, where)


def _force_limit(dyn):
    return dyn.model.spec.actuators.force_limit


class Observation(NamedTuple):
    """The stacked observation W p_b = y + rho of a run (``observation``)."""

    W: np.ndarray                # (m, b) observation matrix, rows grouped by sample (one per joint equation)
    y: np.ndarray                # (m,) measured forces (J^T tau for redundant actuation), filtered as W
    equation: np.ndarray         # (m,) index of the joint equation of each row
    saturated: int               # samples at the force limit (their neighbourhood dropped)
    t: np.ndarray                # (m,) the run's time of each row's sample


def observation(run: MeasuredRun, base: BaseModel, cutoff: float = 20.0, decimation: int | None = None,
                force_limit=None, progress: bool = False, edge: float | None = None,
                min_speed: float = 0.0) -> Observation:
    """The observation of a run (``Observation``; module docstring).

    Rows are grouped by sample (one per joint equation). ``cutoff``: low-pass of the positions (Hz);
    ``decimation``: the parallel filter's factor (default: the largest that keeps 5 samples per period of
    ``cutoff``, at most 13). force_limit: per drive (default: the config's ``actuators.force_limit``). edge: s
    dropped at both ends (default: 10 periods of ``cutoff`` and 50 decimated samples, where the filters' start-up
    has surely died out; a prediction over a whole short run takes less, at the price of some start-up error).
    min_speed: m/s or rad/s; a joint's equation is dropped where its filtered speed is below (0: none dropped).
    """
    kin = base.kin
    run = _check_run(run, base.dyn)
    n_samples = len(run.t)
    if n_samples < 50:
        raise InvalidInputError(f"{run.source}: {n_samples} samples are too few to filter and differentiate "
                                f"(at least 50, and enough to excite {len(base)} base parameters)")
    fs = sample_rate(run.t)
    if decimation is None:
        decimation = int(max(1, min(13, fs // (5.0 * 2 * cutoff))))
    if not (isinstance(decimation, (int, np.integer)) and decimation >= 1):
        raise InvalidInputError(f"decimation must be an integer >= 1, got {decimation!r}")
    q = lowpass(run.position, fs, cutoff)
    qd, qdd = derivatives(q, fs)
    # edges: the filters' start-up; the parallel filter's reach around a saturated sample
    edge = int(np.ceil(10.0 * fs / cutoff)) + 50 * decimation if edge is None else int(np.ceil(edge * fs))
    reach = int(np.ceil(2.0 * fs / cutoff)) + 5 * decimation
    lim = force_limit if force_limit is not None else _force_limit(base.dyn)
    sat = saturated(run.effort, lim) if lim is not None else np.zeros(n_samples, bool)
    from ..trajectory.spec import home_pose

    pose = home_pose(kin)
    poses, twists, accels = [], np.zeros((n_samples, kin.task.dim)), np.zeros((n_samples, kin.task.dim))
    it = range(n_samples)
    for i in (progress_bar(it, desc="forward kinematics", unit="sample") if progress else it):
        try:
            pose = forward_kinematics(kin, q[i], pose, check_limits=False).pose
            twists[i], accels[i] = task_rates(kin, pose, qd[i], qdd[i], not base.redundant)
        except PkmError as exc:
            raise InvalidInputError(f"{run.source}: sample {i} (t = {run.t[i]:.6g} s): {exc}") from exc
        poses.append(pose)
    W = base.observation_rows(poses, twists, accels)
    if base.redundant:
        # Wu eq. 16: the observation is the generalized force J^T tau
        y = np.array([kin.jacobian(p).T @ f for p, f in zip(poses, run.effort)])
    else:
        y = run.effort
    n_eq, b = W.shape[1:]
    keep = ~dilate(sat, reach)
    keep[:edge] = keep[len(keep) - edge:] = False
    Wd = parallel_decimate(W.reshape(n_samples, -1), decimation).reshape(-1, n_eq, b)
    yd = parallel_decimate(y, decimation)
    kd = keep[::decimation][:len(yd)]          # scipy's decimate keeps samples 0, factor, 2 factor, ...
    Wd, yd = Wd[kd], yd[kd]
    rows = np.ones(yd.shape, bool)
    if min_speed > 0:
        # near zero speed no Coulomb model holds (the sign flips inside the filters' reach; a real joint sticks,
        # the simulated one has tanh): a joint's equation is dropped there (every equation for redundant actuation)
        fast = np.abs(qd[::decimation][:len(kd)][kd]) >= min_speed
        rows = fast if not base.redundant else np.repeat(fast.all(axis=1, keepdims=True), n_eq, axis=1)
    sel = rows.reshape(-1)
    eq = np.tile(np.arange(n_eq), len(yd))
    t = np.repeat(run.t[::decimation][:len(kd)][kd], n_eq)
    return Observation(Wd.reshape(-1, b)[sel], yd.reshape(-1)[sel], eq[sel], int(sat.sum()), t[sel])


def _scaled_condition(W, names):
    """cond(W D) with D scaling the columns to unit norm; InvalidInputError for unexcited columns."""
    norms = np.linalg.norm(W, axis=0)
    dead = norms <= 1e-12 * max(norms.max(), 1e-300)
    if dead.any():
        idle = [names[k] for k in np.flatnonzero(dead)]
        raise InvalidInputError(f"the data do not excite {len(idle)} base parameters (condition number inf: their "
                                f"observation columns are zero): {idle[:6]}{' ...' if len(idle) > 6 else ''}; move "
                                f"every joint both ways (pkm excite)")
    s, vt = np.linalg.svd(W / norms, full_matrices=False)[1:]
    return s[0] / s[-1], vt[-1]


def consistency(base: BaseModel, values, std) -> tuple:
    """Violations of physical consistency among the identified base parameters (text), see module docstring.

    A moment of inertia may be 0 (a rod about its axis), a mass may not: sums of moments must be >= 0, sums
    with a mass > 0. Values within rounding of 0 (1e-12 of the largest) count as 0.
    """
    values = np.asarray(values, float)
    tol = 1e-12 * np.abs(values).max()
    mass = base.has_mass()
    out = []
    for k in np.flatnonzero(base.is_positive() & ((values < -tol) | (mass & (values <= tol)))):
        out.append(f"{base.names[k]} = {values[k]:.6g} (std {std[k]:.3g}) is a mass or moment of inertia (or a "
                   f"positive sum of them) and must be {'> 0' if mass[k] else '>= 0'}: {base.expressions[k]}")
    for k in np.flatnonzero(base.is_friction() & (values < -tol)):
        out.append(f"{base.names[k]} = {values[k]:.6g} (std {std[k]:.3g}) is a friction coefficient and must "
                   f"be >= 0")
    return tuple(out)


def _least_squares(W, y):
    """(p, (W^T W)^-1) by the SVD of W with unit-norm columns (squaring the condition number in W^T W, whose
    unscaled value mixes kg, kg m and kg m^2 columns, would lose the covariance to rounding)."""
    d = np.linalg.norm(W, axis=0)
    u, s, vt = np.linalg.svd(W / d, full_matrices=False)
    p = vt.T @ ((u.T @ y) / s) / d
    V = vt.T / s
    return p, (V @ V.T) / np.outer(d, d)


def _solve(W, y, eq, n_eq, method):
    """(p, cov, sigma per equation) by OLS or Gautier-Khalil WLS."""
    m, b = W.shape
    p, inv = _least_squares(W, y)
    r = y - W @ p
    sigma = np.array([np.sqrt(np.sum(r[eq == j] ** 2) / max(np.sum(eq == j) * (1 - b / m), 1.0))
                      for j in range(n_eq)])
    if method == "ols":
        return p, np.sum(r ** 2) / (m - b) * inv, sigma
    floor = 1e-12 * max(np.abs(y).max(), 1e-300)
    w = 1.0 / np.maximum(sigma, floor)[eq]
    Ww, yw = W * w[:, None], y * w
    p, inv = _least_squares(Ww, yw)
    rw = yw - Ww @ p
    return p, np.sum(rw ** 2) / (m - b) * inv, sigma


def identify(run: MeasuredRun, dyn, method: str = "wls", structure: str = "per-body", cutoff: float = 20.0,
             decimation: int | None = None, force_limit=None, max_condition: float = MAX_CONDITION,
             base: BaseModel | None = None, sign_eps: float = 0.0, min_speed: float = 0.0,
             progress: bool = False) -> Identification:
    """Base parameters of ``dyn``'s robot from a recorded run (module docstring).

    structure: see dynamics/parameters.BaseModel ('per-body' fits any plant; 'jourdain' is PaLiDA's
    Table I). base: a BaseModel to reuse (building one costs up to 2 s). sign_eps > 0: the Coulomb columns take
    tanh(qdot / sign_eps) for sign(qdot), as the simulated robot does (hardware/simulated.py, 2e-3); 0: the exact
    sign of a real machine. min_speed: a joint's equation is left out where its speed is below (``observation``).
    InvalidInputError for runs that
    are too short, not finite, or do not excite the base parameters (the message names the condition
    number and the weakest parameters).
    """
    if method not in METHODS:
        raise InvalidInputError(f"method must be one of {METHODS}, got {method!r}")
    if not (np.isfinite(sign_eps) and sign_eps >= 0):
        raise InvalidInputError(f"sign_eps must be a finite number >= 0 (0: the exact sign), got {sign_eps}")
    if base is None:
        if structure == "jourdain" and sign_eps > 0:
            raise InvalidInputError("Table I (structure 'jourdain') has the paper's exact friction sign; "
                                    f"sign_eps = {sign_eps:g} needs structure 'per-body' or 'shared-legs'")
        base = BaseModel(dyn, structure, sign_eps=sign_eps)
    if not (np.isfinite(min_speed) and min_speed >= 0):
        raise InvalidInputError(f"min_speed must be a finite number >= 0, got {min_speed}")
    W, y, eq, n_sat, _ = observation(run, base, cutoff, decimation, force_limit, progress, min_speed=min_speed)
    m, b = W.shape
    if m < 2 * b:
        raise InvalidInputError(f"{run.source or 'run'}: {m} observation rows after filtering, decimation and "
                                f"rejection ({n_sat} saturated samples) for {b} base parameters: record longer "
                                f"(at least {2 * b} rows)")
    cond, weakest = _scaled_condition(W, base.names)
    if not cond < max_condition:
        top = np.argsort(-np.abs(weakest))[:4]
        raise InvalidInputError(f"{run.source or 'run'}: the data do not excite the base parameters: condition "
                                f"number {cond:.3g} (limit {max_condition:.3g}); the weakest direction involves "
                                f"{[base.names[k] for k in top]}; use an exciting trajectory (pkm excite)")
    n_eq = int(eq.max()) + 1
    p, _, sigma = _solve(W, y, eq, n_eq, method)
    # outliers: 5 robust standard deviations of the row's joint equation, dropped once
    r = y - W @ p
    mad = np.array([1.4826 * np.median(np.abs(r[eq == j])) for j in range(n_eq)])
    out = np.abs(r) > OUTLIER_SIGMAS * np.maximum(mad[eq], 1e-9 * np.abs(y).max())
    if out.any():
        W, y, eq = W[~out], y[~out], eq[~out]
    p, cov, sigma = _solve(W, y, eq, n_eq, method)
    std = np.sqrt(np.maximum(np.diag(cov), 0.0))
    return Identification(base.robot, base.variant, base.structure, method, base.names, base.expressions, p, std,
                          float(cond), len(y), sigma, {"saturated": n_sat, "outliers": int(out.sum())},
                          consistency(base, p, std), run.source, base.dyn.sign_eps if base.form is None else 0.0)


def write_identification(path, ident: Identification) -> None:
    """The identification as a ``kind: base_parameters`` YAML file (computed_force's parameters_file)."""
    import yaml

    with open(path, "w", encoding="utf-8") as f:
        f.write(f"# base parameters identified by pkm identify ({ident.method.upper()}, {ident.structure}); "
                f"tau = Y_base(pose, twist, accel) p_base\n")
        yaml.safe_dump(ident.to_dict(), f, sort_keys=False, width=120)
