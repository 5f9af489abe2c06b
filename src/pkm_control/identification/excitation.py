"""Excitation trajectories for identification: a finite Fourier series per task coordinate (Swevers, Ganseman,
Tukel, De Schutter and Van Brussel 1997, "Optimal robot excitation and identification", IEEE T-RA 13(5)),
its coefficients optimized for the condition number of the stacked base regressor, inside every limit.

The series is ``trajectory.paths.FourierTrajectory``: x_i(t) = x_i0 + sum_k a_ik / (w_f k) sin(w_f k t) -
b_ik / (w_f k) cos(w_f k t), k = 1..K, around the home pose x_0, one period T = 2 pi / w_f. It rests at its ends
when sum_k a_ik = 0 and sum_k k b_ik = 0; the design keeps that exactly by eliminating a_i1 and b_i1. The free
coefficients (a_ik, b_ik), k = 2..K, are optimized (scipy's Powell method: derivative-free, as the objective is only
piecewise smooth where the scaling into the limits switches) for the condition number of the stacked base
regressor W = [Y_b(t_1); ...; Y_b(t_N)] at N evenly spaced times of the period, Y_b the columns of the base
parameters (``dynamics.parameters.base_parameters``, friction included) of the actuator regressor Y (tau = Y p;
redundant robots: the observation matrix Omega of J^T tau = Omega p, Wu et al. eq. 16). A small condition number
makes the least-squares estimate insensitive to noise on the measured forces (Gautier and Khalil).

How each limit holds on the whole trajectory, not only at samples (``check_excitation``):

* task workspace box (config ``workspace``), task speed and task acceleration: exact bounds of the series over
  all t (``FourierTrajectory.bounds``: |x_i - x_i0| <= sum_k |c_ik| / (w_f k), |x_i'| <= sum_k |c_ik|,
  |x_i''| <= sum_k w_f k |c_ik|); the coefficients are scaled so the bounds are inside the limits.
* joint positions (strokes of the actuated joints, the passive joints' ranges), actuated-joint velocities (the
  URDF's <limit velocity>) and actuator forces (config ``actuators.force_limit``): inverse kinematics and inverse
  dynamics every 2 ms over the period (``TaskTrajectory.check_times``, at most 20001 samples), each value kept
  inside its limit by a Lipschitz margin, the largest change of that value between two neighbouring samples. Any
  time lies within h / 2 of a sample, so the value there differs from the sample's by at most L h / 2, L the
  largest rate of change between samples; the margin takes L as twice the largest sampled rate (max |dy| / h),
  which holds while the rate changes by less than that within one step (2 ms against the fastest harmonic's
  period T / K; the tests check the IK at ten and the dynamics at three times that density).
* reachability and the cone limits of the spherical joints (no joint coordinate to put a margin on): the inverse
  kinematics' own check at the same 2 ms samples.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.optimize
from threadpoolctl import threadpool_limits

from ..errors import InvalidInputError, JointLimitError, PkmError, UnreachablePoseError, check_number, check_vector
from ..kinematics.task_space import Pose
from ..trajectory.paths import MAX_HARMONICS, FourierTrajectory
from ..trajectory.spec import check_reachable

#: defaults of the task-space limits of a design: (linear m/s, angular rad/s) and (m/s^2, rad/s^2)
MAX_VELOCITY = (0.5, 1.0)
MAX_ACCELERATION = (5.0, 10.0)
#: share of each limit an excitation may use (the rest absorbs tracking errors around the designed motion)
USE = 0.9
#: most samples of the condition number, most evaluations of the optimizer
MAX_SAMPLES = 2000
MAX_EVALUATIONS = 100_000


@dataclass(frozen=True)
class ExcitationLimits:
    """What an excitation of one robot must stay inside (task coordinates, model order of the joints)."""

    center: np.ndarray           # x_0 (n,): the home pose, the series' offset
    half_width: np.ndarray       # (n,) largest |x_i - x_i0| inside the workspace box
    max_velocity: np.ndarray     # (n,) |x_i'|
    max_acceleration: np.ndarray  # (n,) |x_i''|
    joints: np.ndarray           # indices in q of the limited joints (actuated and passive)
    joint_lower: np.ndarray
    joint_upper: np.ndarray
    velocity_limit: np.ndarray   # (n_actuated,) |qdot_a|
    force_limit: np.ndarray      # (n_actuated,) |tau|


@dataclass(frozen=True)
class ExcitationReport:
    """The design's numbers: condition numbers of the stacked base regressor, the optimizer's effort, and the
    largest share of each limit the designed trajectory uses (``check_excitation``)."""

    condition: float
    baseline_condition: float
    base_parameters: int
    samples: int
    evaluations: int
    seconds: float
    usage: dict
    baseline_spec: dict


def excitation_limits(dyn, max_velocity=MAX_VELOCITY, max_acceleration=MAX_ACCELERATION) -> ExcitationLimits:
    """The limits of ``dyn``'s robot from its config, with task speed and acceleration limits (linear, angular)."""
    kin, clm = dyn.kin, dyn.kin.model
    cfg = clm.spec
    mv = check_vector("max_velocity (linear, angular)", max_velocity, 2)
    ma = check_vector("max_acceleration (linear, angular)", max_acceleration, 2)
    if not (mv > 0).all() or not (ma > 0).all() or max(mv.max(), ma.max()) > 1e3:
        raise InvalidInputError(f"max_velocity {mv.tolist()} and max_acceleration {ma.tolist()} must be in (0, 1000] "
                                "(m/s, rad/s; m/s^2, rad/s^2)")
    angular = np.zeros(kin.task.dim, bool)
    angular[list(kin.task.angular)] = True
    center = cfg.require("home", "the excitation limits")
    lo, hi = cfg.require("workspace", "the excitation limits").lower, cfg.workspace.upper
    joints = np.sort(np.concatenate([clm.actuated_idx, clm.passive_idx])).astype(int)
    m = clm.model            # 1-DoF joints: velocity indices are the configuration indices
    force = cfg.require("actuators.force_limit", "the excitation limits")
    vmax = np.asarray(m.velocityLimit, float)[clm.actuated_idx]
    return ExcitationLimits(center, np.minimum(center - lo, hi - center), np.where(angular, mv[1], mv[0]),
                            np.where(angular, ma[1], ma[0]), joints, np.asarray(m.lowerPositionLimit)[joints],
                            np.asarray(m.upperPositionLimit)[joints], vmax, force.copy())


def _lipschitz_check(name, what, ts, y, lower, upper, names):
    """Raise JointLimitError unless lower + d <= y <= upper - d at every sample, d the largest change of each column
    between neighbouring samples (the Lipschitz margin of the module docstring)."""
    d = np.abs(np.diff(y, axis=0)).max(axis=0) if len(y) > 1 else np.zeros(y.shape[1])
    over = np.maximum(lower + d - y, y - (upper - d))
    i, j = np.unravel_index(int(np.argmax(over)), over.shape)
    if over[i, j] > 0:
        raise JointLimitError(f"excitation leaves the {what} of {names[j]} at t = {ts[i]:.6g} s: {name} "
                              f"{y[i, j]:.6g}, range [{lower[j]:.6g}, {upper[j]:.6g}] less the margin {d[j]:.3g} "
                              "(the largest change between samples)")


def check_excitation(dyn, traj: FourierTrajectory, limits: ExcitationLimits) -> dict:
    """Check a Fourier trajectory against every limit (module docstring); returns the largest share of each limit it
    uses, or raises JointLimitError / UnreachablePoseError naming the limit, the time and the value."""
    kin, clm = dyn.kin, dyn.kin.model
    names = kin.task.names
    dev, speed, acc = traj.bounds()
    dx = np.abs(traj.offset - limits.center) + dev
    for what, bound, lim in (("workspace box (|x - home| bound)", dx, limits.half_width),
                             ("task speed bound", speed, limits.max_velocity),
                             ("task acceleration bound", acc, limits.max_acceleration)):
        i = int(np.argmax(bound / lim))
        if bound[i] > lim[i] * (1 + 1e-9):
            raise JointLimitError(f"excitation exceeds the {what} of {names[i]}: {bound[i]:.6g} > {lim[i]:.6g}")
    ts, _ = check_reachable(kin, traj, velocity_limits=False)
    P, R, V, A = traj.sample_many(ts)
    q, qd, tau = [], [], []
    for i in range(len(ts)):
        try:
            r = dyn.inverse_dynamics(Pose(P[i], R[i]), V[i], A[i])
        except PkmError as exc:
            raise UnreachablePoseError(f"excitation at t = {ts[i]:.6g} s: {exc}") from exc
        q.append(r.q)
        qd.append(r.v[clm.actuated_idx])
        tau.append(r.tau)
    q, qd, tau = np.array(q)[:, limits.joints], np.array(qd), np.array(tau)
    joint_names = [clm.joint_names[j] for j in limits.joints]
    act = list(clm.actuated_joints)
    _lipschitz_check("position", "range", ts, q, limits.joint_lower, limits.joint_upper, joint_names)
    _lipschitz_check("velocity", "velocity limit", ts, qd, -limits.velocity_limit, limits.velocity_limit, act)
    _lipschitz_check("force", "force limit", ts, tau, -limits.force_limit, limits.force_limit, act)
    span = limits.joint_upper - limits.joint_lower
    mid = 0.5 * (limits.joint_upper + limits.joint_lower)
    return {"workspace": float((dx / limits.half_width).max()),
            "task_velocity": float((speed / limits.max_velocity).max()),
            "task_acceleration": float((acc / limits.max_acceleration).max()),
            "joint_range": float((np.abs(q - mid) / (0.5 * span)).max()),
            "joint_velocity": float((np.abs(qd) / limits.velocity_limit).max()),
            "force": float((np.abs(tau) / limits.force_limit).max())}


def stacked_base_regressor(dyn, base, traj, samples: int) -> np.ndarray:
    """W (samples * n_actuated or n, n_base): the base regressor at ``samples`` evenly spaced times of one period
    (tau = Y p for non-redundant robots, J^T tau = Omega p for redundant ones)."""
    ts = np.arange(samples) * (traj.period / samples)
    return base.reduce(np.vstack(_regressors(dyn, traj, ts)[0]))


def _regressors(dyn, traj, ts):
    """Full regressors (list of (rows, n_params)) and actuator forces (N, n_actuated) at times ts."""
    P, R, V, A = traj.sample_many(ts)
    _, p = dyn.parameters()
    Ys, taus = [], []
    for i in range(len(ts)):
        pose = Pose(P[i], R[i])
        if dyn.redundant:
            Y = dyn.regressor(pose, V[i], A[i])
            tau = np.linalg.pinv(dyn.kin.jacobian(pose).T) @ (Y @ p)     # minimum norm, Wu eq. 39
        else:
            Y = dyn.actuator_regressor(pose, V[i], A[i])
            tau = Y @ p
        Ys.append(Y)
        taus.append(tau)
    return Ys, np.array(taus)


def condition_number(W: np.ndarray) -> float:
    """2-norm condition number sigma_max / sigma_min (inf when rank deficient)."""
    s = np.linalg.svd(W, compute_uv=False)
    return float(s[0] / s[-1]) if s[-1] > 0 else math.inf


class _Design:
    """The optimization problem: free coefficients z -> a feasible series -> log cond(W)."""

    def __init__(self, dyn, base, limits, period, harmonics, samples):
        self.dyn, self.base, self.limits = dyn, base, limits
        self.period, self.K, self.n = period, harmonics, dyn.kin.task.dim
        self.ts = np.arange(samples) * (period / samples)
        self.unit = limits.max_velocity / harmonics
        self.best = (math.inf, None)
        self.evaluations = 0

    def coefficients(self, z):
        """(a, b) (n, K) from the free coefficients, at rest at the ends, inside the analytic bounds with USE."""
        z = z.reshape(2, self.n, self.K - 1)
        k = np.arange(2, self.K + 1)
        a = np.column_stack([np.zeros(self.n), z[0] * self.unit[:, None]])
        b = np.column_stack([np.zeros(self.n), z[1] * self.unit[:, None]])
        a[:, 0] = -a[:, 1:].sum(axis=1)                  # x'(0) = sum_k a_k = 0
        b[:, 0] = -(b[:, 1:] * k).sum(axis=1)            # x''(0) = w_f sum_k k b_k = 0
        traj = FourierTrajectory(self.dyn.kin.task, self.period, self.limits.center, a, b)
        dev, speed, acc = traj.bounds()
        L = self.limits
        ratios = [USE * lim / np.maximum(bound, 1e-300) for lim, bound in
                  ((L.half_width, dev), (L.max_velocity, speed), (L.max_acceleration, acc))]
        s = min(1.0, float(np.min(ratios)))
        return s * a, s * b

    def trajectory(self, a, b):
        return FourierTrajectory(self.dyn.kin.task, self.period, self.limits.center, a, b)

    def _joints_ok(self, traj) -> bool:
        """Coarse check at the design samples (the dense one is ``check_excitation``): reachable, joint ranges and
        actuated velocities (central differences of the batched IK) inside USE of the limits."""
        kin, L = self.dyn.kin, self.limits
        h = 1e-5
        out = []
        for ts in (self.ts, self.ts - h, self.ts + h):
            P, R, _, _ = traj.sample_many(ts)
            q, ok = kin.inverse_batch(P, R)
            if not ok.all():
                return False
            out.append(q)
        q = out[0][:, L.joints]
        mid, half = 0.5 * (L.joint_upper + L.joint_lower), 0.5 * (L.joint_upper - L.joint_lower)
        qd = (out[2] - out[1])[:, kin.model.actuated_idx] / (2 * h)
        return bool((np.abs(q - mid) <= USE * half).all() and (np.abs(qd) <= USE * L.velocity_limit).all())

    def feasible(self, a, b):
        """The coefficients scaled down (factors 0.8) until the coarse checks and the forces pass; with the
        trajectory's stacked base regressor. At zero amplitude the robot rests at home, inside every limit."""
        for _ in range(60):
            traj = self.trajectory(a, b)
            if self._joints_ok(traj):
                try:
                    Ys, tau = _regressors(self.dyn, traj, self.ts)
                except PkmError:
                    Ys, tau = None, None
                if tau is not None and (np.abs(tau) <= USE * self.limits.force_limit).all():
                    return a, b, self.base.reduce(np.vstack(Ys))
            a, b = 0.8 * a, 0.8 * b
        raise UnreachablePoseError("no feasible excitation around the home pose (the home pose itself fails the "
                                   "limits with this robot's forces or joint ranges)")

    def objective(self, z):
        self.evaluations += 1
        a, b, W = self.feasible(*self.coefficients(z))
        f = math.log(condition_number(W))
        if f < self.best[0]:
            self.best = (f, (a, b))
        return f


class _Budget(Exception):
    pass


def design_excitation(dyn, duration: float, harmonics: int, seed: int = 0, samples: int = 100,
                      evaluations: int = 2000, max_velocity=MAX_VELOCITY, max_acceleration=MAX_ACCELERATION,
                      base=None, progress: bool = False):
    """Design an excitation trajectory of one period ``duration`` s with ``harmonics`` harmonics per task coordinate.

    Returns (spec, report): ``spec`` a trajectory spec of type ``fourier`` (``trajectory_from_spec``), the optimized
    series after the dense check of every limit (``check_excitation``; the coefficients shrink by 0.9 until it
    passes); ``report`` an ExcitationReport whose baseline is the optimizer's initial guess (seeded random
    coefficients made feasible the same way) at the same duration. base: the BaseParameters whose columns make W
    (default ``base_parameters(dyn)``, friction included); samples: times of W over the period; evaluations: budget
    of objective evaluations (each one costs ``samples`` regressors).
    """
    duration = check_number("excitation duration", duration)
    if not 0.1 <= duration <= 600.0:
        raise InvalidInputError(f"excitation duration must be within [0.1, 600] s, got {duration:g} s")
    for name, value, lo, hi in (("harmonics", harmonics, 2, MAX_HARMONICS), ("samples", samples, 2, MAX_SAMPLES),
                                ("evaluations", evaluations, 1, MAX_EVALUATIONS)):
        if isinstance(value, bool) or not float(check_number(f"excitation {name}", value)).is_integer() \
                or not lo <= value <= hi:
            raise InvalidInputError(f"excitation {name} must be a whole number from {lo} to {hi}, got {value!r} "
                                    "(harmonics >= 2: the first harmonic keeps the series at rest at its ends)")
    # one BLAS thread: the matrices are small (hundreds of rows), where OpenBLAS's workers only wait for each other,
    # and on a loaded machine they made each SVD 40 times slower
    with threadpool_limits(1):
        return _design(dyn, duration, int(harmonics), int(samples), int(evaluations), seed, max_velocity,
                       max_acceleration, base, progress)


def _design(dyn, duration, harmonics, samples, evaluations, seed, max_velocity, max_acceleration, base, progress):
    from ..dynamics.parameters import base_parameters

    started = time.monotonic()
    base = base_parameters(dyn) if base is None else base
    rows = samples * (dyn.kin.task.dim if dyn.redundant else dyn.kin.model.n_actuated)
    if rows < base.rank:
        raise InvalidInputError(f"{samples} samples give {rows} regressor rows, fewer than the {base.rank} base "
                                f"parameters; use at least {math.ceil(base.rank * samples / rows)} samples")
    limits = excitation_limits(dyn, max_velocity, max_acceleration)
    design = _Design(dyn, base, limits, duration, harmonics, samples)
    z0 = np.random.default_rng(seed).standard_normal(2 * design.n * (harmonics - 1))
    baseline = _verified(dyn, design, *design.feasible(*design.coefficients(z0))[:2])

    bar = None
    if progress:
        from ..progress import progress_bar

        bar = progress_bar(total=evaluations, desc=f"excite {dyn.model.name}", unit="eval")

    def fun(z):
        if design.evaluations >= evaluations:
            raise _Budget
        f = design.objective(z)
        if bar is not None:
            bar.update(1)
            bar.set_postfix(cond=f"{math.exp(design.best[0]):.4g}", refresh=False)
        return f

    try:
        scipy.optimize.minimize(fun, z0, method="Powell", options={"maxfev": evaluations})
    except _Budget:
        pass
    finally:
        if bar is not None:
            bar.close()
    a, b = design.best[1]
    traj, usage = _verified(dyn, design, a, b)
    base_traj = baseline[0]
    cond = condition_number(stacked_base_regressor(dyn, base, traj, samples))
    cond0 = condition_number(stacked_base_regressor(dyn, base, base_traj, samples))
    report = ExcitationReport(cond, cond0, base.rank, samples, design.evaluations, time.monotonic() - started, usage,
                              _spec(base_traj))
    return _spec(traj), report


def _spec(traj: FourierTrajectory) -> dict:
    """The trajectory spec (type fourier) of a series, plain floats."""
    return {"type": "fourier", "period": traj.period, "periods": traj.periods, "offset": traj.offset.tolist(),
            "a": traj.a.tolist(), "b": traj.b.tolist()}


def _verified(dyn, design, a, b):
    """(trajectory, usage) after ``check_excitation``, the coefficients shrunk by 0.9 until it passes."""
    for _ in range(40):
        traj = design.trajectory(a, b)
        try:
            return traj, check_excitation(dyn, traj, design.limits)
        except (JointLimitError, UnreachablePoseError):
            a, b = 0.9 * a, 0.9 * b
    raise UnreachablePoseError("no excitation passes the dense check of the limits even at 1.5 % of its amplitude")


def write_excitation(path, dyn, spec: dict, report: ExcitationReport, command: str) -> None:
    """The designed spec as YAML (what the trajectory_generator takes), headed by how it was made."""
    import yaml

    robot = dyn.model.name + (f" ({dyn.model.variant})" if dyn.model.variant else "")
    header = (f"# excitation of {robot}: {command}\n"
              f"# {len(spec['a'][0])} harmonics per task coordinate ({' '.join(dyn.kin.task.names)}), period "
              f"{spec['period']:g} s\n"
              f"# condition number of the stacked base regressor ({report.base_parameters} base parameters, "
              f"{report.samples} samples): {report.condition:.6g}, baseline {report.baseline_condition:.6g}\n")
    Path(path).write_text(header + yaml.safe_dump(spec, default_flow_style=None, sort_keys=False))
