"""Trajectories from plain dicts (YAML, goal messages), reachability checks, the PaLiDA benchmark circle.

Spec format (``trajectory_from_spec``); poses are the robot's task coordinates (x y z roll pitch yaw
for spatial robots, x y z for the DELTA, x y alpha for the planar robot; SI units, radians); the
start defaults to the robot's home pose (config ``home``); ``profile`` is a name of ``PROFILES``
or a dict ``{name: ..., <option>: ...}``, options may also be given as ``profile_options``:

    {type: point_to_point, goal: [...], duration: 1.0, profile: quintic, start: [...]}
    {type: waypoints, poses: [[...], ...], durations: [...], profile: quintic}
        len(durations) == len(poses) - 1: poses[0] is the start; == len(poses): starts at ``start``
    {type: circle, radius: 0.1, normal: [0, 0, 1], speed: 1.0, laps: 2, ramp_time: 0.3,
     profile: sine_on_ramp, center: [...] (default start), start_angle: 0.0}
    {type: semi_ellipse, goal: [...], height: 0.05, duration: 0.8, profile: sine_on_ramp,
     up: [0, 0, 1] (default: against the robot's gravity)}
    {type: benchmark_circle, radius: 0.15, speed: 1.0, inclination_deg: 30, laps: 1, ramp_time: 0.5,
     tilt_axis: y}                                    (``palida_benchmark_circle``)
    {type: fourier, period: 10.0, periods: 1, offset: [...] (default home), a: [[a_11 .. a_1K], ...],
     b: [[...], ...]}                                 (``FourierTrajectory``: an excitation, ``pkm excite``)
        one row of K harmonics per task coordinate, at rest at its ends (sum_k a_ik = 0, sum_k k b_ik = 0)

``FIXED_START``: the types whose start the spec fixes itself (no ``start`` field; a scheduler moves there first).

Hybrid (motion + force) tasks (``hybrid_from_spec``; Taghirad, chapter Force Control; issue 24): phases, each with
a label out of HYBRID_PHASES, a duration, and optionally the pose it ends at (``goal``, default the previous one),
the desired wrench it ends at (``force``: F_d per task coordinate, what the platform applies to the environment;
default the previous one, at first zero) and the force-controlled task coordinates (``selection``, names; default
the previous phase's, at first none). The motion is rest-to-rest between the goals and the force goes from the
previous phase's to this one's, both with the phase's profile (default quintic):

    {type: hybrid, start: [...], profile: quintic, phases: [
      {phase: approach, goal: [0, 0, 1.1985, 0, 0, 0], duration: 0.2},
      {phase: contact, force: [0, 0, -50, 0, 0, 0], selection: [z], duration: 0.2},     (ramp, then hold)
      {phase: follow, goal: [0.03, 0, 1.1985, 0, 0, 0], duration: 0.4},                 (slide at 50 N)
      {phase: release, force: [0, 0, 0, 0, 0, 0], duration: 0.1},
      {phase: approach, goal: [0, 0, 1.2, 0, 0, 0], selection: [], duration: 0.2}]}    (away, in motion control)

A hybrid goal sent to the trajectory generator streams both: the motion on /platform_trajectory, the force references
on /force_references (streaming.GoalScheduler.load, Chunk.forces) to joint_controller, whose force law takes them in
place of its ``force_reference`` parameter while they are streamed.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import (MAGNITUDE_LIMIT, InvalidInputError, JointLimitError, UnreachablePoseError, check_number,
                      check_vector, excerpt)
from ..kinematics.task_space import Pose, rot_x, rot_y
from .paths import (MAX_HARMONICS, Circle, FourierTrajectory, PointToPoint, SemiEllipse, Sequence, TaskTrajectory,
                    Waypoints)
from .profiles import PROFILES


def home_pose(kin) -> Pose:
    """The robot's home pose (config ``home``)."""
    return kin.home_pose()


def palida_benchmark_circle(kin, radius: float, speed: float = 1.0, inclination_deg: float = 30.0,
                            laps: float = 1.0, ramp_time: float = 0.5, profile="sine_on_ramp",
                            tilt_axis: str = "y", profile_options=None) -> Circle:
    """Abdellatif et al. (seed 000, sec. V) benchmark: "a circle in the middle of the workspace with
    an inclination of 30 deg in respect to the cartesian x-axis", end-effector speed 1 m/s.

    Reading used (tilt_axis = "y", default): the circle plane contains the y-axis and makes
    ``inclination_deg`` with the x-axis, i.e. its normal is the z-axis turned by the inclination
    about y, n = (sin i, 0, cos i); the x-axis meets the plane at exactly that angle
    (asin |x . n| = i). tilt_axis = "x" gives the other common reading, the plane turned about the
    x-axis (it contains the x-axis; n = (0, -sin i, cos i)). Centre: the home pose (the middle of
    the workspace), orientation held there. The paper gives no radius; the caller chooses it.
    The speed ramps up and down over ``ramp_time`` (profile shape) around ``laps`` turns at
    ``speed``.
    """
    inc_deg = float(_number("inclination_deg", inclination_deg))
    if abs(inc_deg) > 90.0:      # the circle's plane turned about the tilt axis: +-90 deg covers every plane
        raise InvalidInputError(f"trajectory spec field 'inclination_deg' must be within [-90, 90] deg, got "
                                f"{excerpt(inclination_deg)}")
    inc = math.radians(inc_deg)
    if tilt_axis == "y":
        normal = rot_y(inc) @ np.array([0.0, 0.0, 1.0])
    elif tilt_axis == "x":
        normal = rot_x(inc) @ np.array([0.0, 0.0, 1.0])
    else:
        raise InvalidInputError(f"tilt_axis must be 'x' or 'y', got {tilt_axis!r}")
    return Circle(kin.task, home_pose(kin), radius, normal, speed, laps, ramp_time, profile, profile_options)


def check_reachable(kin, traj: TaskTrajectory, n: int | None = None, velocity_limits: bool = True):
    """Check that the motion stays reachable, inside the joint limits and, with ``velocity_limits``, inside
    the actuated joints' velocity limits (the URDF's <limit velocity>, qdot_a = J xdot).

    Samples: ``traj.check_times()`` (a bounded number, every 2 ms up to 20001 samples, a sequence's shared among
    its segments with at least 5 each; one lap of a circle stands for all its laps), or n evenly spaced samples.
    Returns (times (n,), q (n, nv)) or raises UnreachablePoseError naming the first offending time (with the IK's
    own reason for that pose), or JointLimitError for a joint velocity above its limit.
    """
    if n is None:
        ts = traj.check_times()
    else:
        if int(n) < 2:
            raise InvalidInputError(f"check_reachable needs n >= 2 samples, got {n!r}")
        ts = np.linspace(0.0, traj.duration, int(n))
    P, R, V, _ = traj.sample_many(ts)
    q, valid = kin.inverse_batch(P, R)
    if not valid.all():
        i = int(np.flatnonzero(~valid)[0])
        pose = Pose(P[i], R[i])
        try:
            kin.inverse(pose)
            why = "the batched IK flags it"
        except Exception as exc:  # the IK names the joint/limit; report it verbatim
            why = f"{type(exc).__name__}: {exc}"
        coords = kin.task.coordinates(pose)
        raise UnreachablePoseError(
            f"trajectory leaves the workspace at t = {ts[i]:.6g} s (sample {i} of {len(ts)}, duration "
            f"{traj.duration:.6g} s): task coordinates ({' '.join(kin.task.names)}) = "
            f"{np.array2string(coords, precision=6)}; {why}")
    if velocity_limits:
        # qdot_a by central differences of the batched IK along the trajectory itself (h = 1e-5 s: the
        # truncation error h^2 |d3q/dt3| / 6 is far below the limits' scale), vectorized over the samples
        clm = kin.model
        act = clm.actuated_idx
        h = 1e-5
        lo, hi = np.clip(ts - h, 0.0, traj.duration), np.clip(ts + h, 0.0, traj.duration)
        (Pl, Rl, _, _), (Ph, Rh, _, _) = traj.sample_many(lo), traj.sample_many(hi)
        (ql, okl), (qh, okh) = kin.inverse_batch(Pl, Rl), kin.inverse_batch(Ph, Rh)
        qd = (qh[:, act] - ql[:, act]) / np.where(hi > lo, hi - lo, 1.0)[:, None]
        vmax = np.asarray(clm.model.velocityLimit, float)[_actuated_v(clm)]
        over = (np.abs(qd) > vmax * (1 + 1e-6)) & (okl & okh)[:, None]
        if over.any():
            i, j = (int(x[0]) for x in np.nonzero(over))
            raise JointLimitError(
                f"trajectory too fast at t = {ts[i]:.6g} s: joint {clm.actuated_joints[j]} velocity "
                f"{qd[i, j]:.6g} exceeds its limit {vmax[j]:.6g} (m/s or rad/s)")
    return ts, q


def _actuated_v(clm):
    """Velocity indices of the actuated joints (1-DoF joints: the same as their configuration indices)."""
    return np.array([clm.model.joints[clm.model.getJointId(n)].idx_v for n in clm.actuated_joints])


# ---------------------------------------------------------------------------- specs
MAX_WAYPOINTS = 10_000
_COMMON = {"type", "profile", "profile_options", "start"}
_FIELDS = {
    "point_to_point": {"goal", "duration"},
    "waypoints": {"poses", "durations"},
    "circle": {"radius", "normal", "speed", "laps", "ramp_time", "center", "start_angle"},
    "semi_ellipse": {"goal", "height", "duration", "up"},
    "benchmark_circle": {"radius", "speed", "inclination_deg", "laps", "ramp_time", "tilt_axis"},
    "fourier": {"period", "periods", "offset", "a", "b"},
}
_ALIASES = {"ptp": "point_to_point", "point-to-point": "point_to_point", "semi-ellipse": "semi_ellipse",
            "semiellipse": "semi_ellipse", "palida_benchmark": "benchmark_circle"}
FIXED_START = frozenset({"benchmark_circle", "palida_benchmark", "fourier"})


def _number(field, value):
    if isinstance(value, bool):      # YAML 'yes' is not a length
        raise InvalidInputError(f"trajectory spec field '{field}' must be a number, got {value!r}")
    return check_number(f"trajectory spec field '{field}'", value)


def _coords_pose(kin, field, value) -> Pose:
    names = " ".join(kin.task.names)
    x = check_vector(f"trajectory spec field '{field}' ({names})", value, kin.task.dim)
    return kin.task.pose(x)


def _profile(spec, default):
    p = spec.get("profile", default)
    options = spec.get("profile_options") or {}
    if not isinstance(options, dict):
        raise InvalidInputError(f"trajectory spec field 'profile_options' must be a mapping, got {options!r}")
    if isinstance(p, dict):
        p = dict(p)
        if "name" not in p:
            raise InvalidInputError(f"trajectory spec field 'profile' as a mapping needs 'name', got {p!r}")
        name = p.pop("name")
        options = {**p, **options}
        p = name
    if not isinstance(p, str):
        raise InvalidInputError(f"trajectory spec field 'profile' must be a profile name, got {p!r}")
    return p, options


def trajectory_from_spec(kin, spec: dict) -> TaskTrajectory:
    """Build a TaskTrajectory for robot ``kin`` from a plain dict (module docstring); errors name the field."""
    if not isinstance(spec, dict):
        raise InvalidInputError(f"trajectory spec must be a mapping, got {type(spec).__name__}")
    kind = spec.get("type")
    if not isinstance(kind, str):
        raise InvalidInputError(f"trajectory spec field 'type' must be one of {sorted(_FIELDS)}, got {kind!r}")
    kind = _ALIASES.get(kind, kind)
    if kind not in _FIELDS:
        raise InvalidInputError(f"trajectory spec field 'type' must be one of {sorted(_FIELDS)}, got {spec['type']!r}")
    unknown = sorted(set(spec) - _COMMON - _FIELDS[kind])
    if unknown:
        raise InvalidInputError(f"trajectory spec of type '{kind}' has unknown field(s) {unknown}; "
                                f"allowed: {sorted(_COMMON | _FIELDS[kind])}")

    def need(field):
        if spec.get(field) is None:
            raise InvalidInputError(f"trajectory spec of type '{kind}' needs field '{field}'")
        return spec[field]

    def opt_num(field, default):
        return default if spec.get(field) is None else _number(field, spec[field])

    if kind == "fourier":
        return _fourier(kin, spec, need)
    start = home_pose(kin) if kind == "benchmark_circle" or spec.get("start") is None \
        else _coords_pose(kin, "start", spec["start"])
    task = kin.task
    if kind == "point_to_point":
        profile, options = _profile(spec, "quintic")
        return PointToPoint(task, start, _coords_pose(kin, "goal", need("goal")), _number("duration", need("duration")),
                            profile, options)
    if kind == "waypoints":
        profile, options = _profile(spec, "quintic")
        raw = need("poses")
        if not isinstance(raw, (list, tuple)) or not raw or len(raw) > MAX_WAYPOINTS:
            raise InvalidInputError(f"trajectory spec field 'poses' must be a list of 1 to {MAX_WAYPOINTS} poses, "
                                    f"got {str(raw)[:200]}")
        poses = [_coords_pose(kin, f"poses[{i}]", p) for i, p in enumerate(raw)]
        durs = need("durations")
        durs = [durs] if np.isscalar(durs) else list(durs)
        durs = [_number(f"durations[{i}]", d) for i, d in enumerate(durs)]
        if len(durs) == len(poses):
            poses = [start] + poses
        elif len(durs) != len(poses) - 1:
            raise InvalidInputError(f"trajectory spec field 'durations' has {len(durs)} entries; {len(poses)} poses "
                                    f"need {len(poses)} (from start) or {len(poses) - 1} (poses[0] is the start)")
        return Waypoints(task, poses, durs, profile, options)
    if kind == "circle":
        profile, options = _profile(spec, "sine_on_ramp")
        center = start if spec.get("center") is None else _coords_pose(kin, "center", spec["center"])
        normal = check_vector("trajectory spec field 'normal'", spec.get("normal", [0.0, 0.0, 1.0]), 3)
        return Circle(task, center, _number("radius", need("radius")), normal, opt_num("speed", 1.0),
                      opt_num("laps", 1.0), opt_num("ramp_time", 0.5), profile, options, opt_num("start_angle", 0.0))
    if kind == "semi_ellipse":
        profile, options = _profile(spec, "sine_on_ramp")
        if spec.get("up") is None:
            g = kin.model.spec.gravity
            up = -g
        else:
            up = check_vector("trajectory spec field 'up'", spec["up"], 3)
        return SemiEllipse(task, start, _coords_pose(kin, "goal", need("goal")), _number("height", need("height")),
                           _number("duration", need("duration")), profile, options, up)
    # benchmark_circle
    profile, options = _profile(spec, "sine_on_ramp")
    if spec.get("start") is not None:
        raise InvalidInputError("trajectory spec of type 'benchmark_circle' takes no field 'start' "
                                "(its centre is the home pose)")
    return palida_benchmark_circle(kin, _number("radius", need("radius")), opt_num("speed", 1.0),
                                   opt_num("inclination_deg", 30.0), opt_num("laps", 1.0), opt_num("ramp_time", 0.5),
                                   profile, spec.get("tilt_axis", "y"), options)


#: the labels of a hybrid task's phases (module docstring)
HYBRID_PHASES = ("approach", "contact", "follow", "release", "hold")
_HYBRID_FIELDS = {"phase", "goal", "force", "selection", "duration", "profile"}
MAX_PHASES = 1000


class HybridTrajectory:
    """A motion (``motion``: a TaskTrajectory, rest-to-rest through the phases' goals) and the force references of
    its phases (module docstring). ``sample(t)`` is the motion's; ``force(t)`` gives (F_d, selection) at t (before
    the start the first phase's, after the end the last one's); ``phase(t)`` its label; ``phases`` the table
    (label, start s, end s, F_d at the start, at the end, selection)."""

    def __init__(self, task, motion: TaskTrajectory, phases, profiles):
        self.task, self.motion, self.phases, self._profiles = task, motion, tuple(phases), tuple(profiles)
        self.duration = motion.duration
        self._ends = np.array([p[2] for p in self.phases])

    def sample(self, t: float):
        return self.motion.sample(t)

    def _index(self, t: float) -> int:
        return int(min(np.searchsorted(self._ends, t, side="left"), len(self.phases) - 1))

    def phase(self, t: float) -> str:
        return self.phases[self._index(t)][0]

    def force(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """(F_d (task coordinates), selection (booleans)) at t."""
        i = self._index(t)
        _, t0, t1, f0, f1, sel = self.phases[i]
        profile, options = self._profiles[i]
        s = PROFILES[profile](min(max(t - t0, 0.0), t1 - t0), t1 - t0, **options)[0] if t1 > t0 else 1.0
        return f0 + (f1 - f0) * s, sel.copy()


def hybrid_from_spec(kin, spec: dict) -> HybridTrajectory:
    """A HybridTrajectory from a plain dict (module docstring); errors name the phase and the field."""
    if not isinstance(spec, dict) or spec.get("type") != "hybrid":
        raise InvalidInputError(f"a hybrid spec is a mapping with type: hybrid, got {excerpt(spec)}")
    unknown = sorted(set(spec) - {"type", "start", "profile", "phases"})
    if unknown:
        raise InvalidInputError(f"hybrid spec has unknown field(s) {unknown}; allowed: start, profile, phases")
    raw = spec.get("phases")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_PHASES:
        raise InvalidInputError(f"hybrid spec field 'phases' must be a list of 1 to {MAX_PHASES} phases, got "
                                f"{excerpt(raw)}")
    task, names = kin.task, list(kin.task.names)
    pose = home_pose(kin) if spec.get("start") is None else _coords_pose(kin, "start", spec["start"])
    poses, durations, phases, profiles = [pose], [], [], []
    force, selection, t = np.zeros(task.dim), np.zeros(task.dim, bool), 0.0
    for i, ph in enumerate(raw):
        where = f"phases[{i}]"
        if not isinstance(ph, dict):
            raise InvalidInputError(f"hybrid spec {where} must be a mapping, got {excerpt(ph)}")
        unknown = sorted(set(ph) - _HYBRID_FIELDS)
        if unknown:
            raise InvalidInputError(f"hybrid spec {where} has unknown field(s) {unknown}; allowed: "
                                    f"{sorted(_HYBRID_FIELDS)}")
        if ph.get("phase") not in HYBRID_PHASES:
            raise InvalidInputError(f"hybrid spec {where}.phase must be one of {HYBRID_PHASES}, got "
                                    f"{excerpt(ph.get('phase'))}")
        duration = _number(f"{where}.duration", ph.get("duration"))
        if not duration > 0:
            raise InvalidInputError(f"hybrid spec {where}.duration must be > 0 s, got {duration}")
        if ph.get("goal") is not None:
            pose = _coords_pose(kin, f"{where}.goal", ph["goal"])
        f0 = force
        if ph.get("force") is not None:
            force = check_vector(f"hybrid spec {where}.force ({' '.join(names)})", ph["force"], task.dim)
        if "selection" in ph:
            sel = ph["selection"] or []
            if not isinstance(sel, list) or not all(isinstance(n, str) and n in names for n in sel):
                raise InvalidInputError(f"hybrid spec {where}.selection must be a list of task coordinates out of "
                                        f"{names}, got {excerpt(sel)}")
            selection = np.array([n in sel for n in names])
        profile = _profile({"profile": ph.get("profile", spec.get("profile", "quintic"))}, "quintic")
        if profile[0] not in PROFILES:
            raise InvalidInputError(f"hybrid spec {where}.profile must be one of {sorted(PROFILES)}, got "
                                    f"{profile[0]!r}")
        poses.append(pose)
        durations.append(duration)
        phases.append((ph["phase"], t, t + duration, f0, force, selection))
        profiles.append(profile)
        t += duration
    motion = Sequence([PointToPoint(task, poses[i], poses[i + 1], durations[i], *profiles[i])
                       for i in range(len(durations))])
    return HybridTrajectory(task, motion, phases, profiles)


def _harmonics(kin, field, value) -> np.ndarray:
    """A (n, K) coefficient table of a fourier spec: one row per task coordinate, 1..MAX_HARMONICS columns."""
    n, names = kin.task.dim, " ".join(kin.task.names)
    rows = value if isinstance(value, (list, tuple)) else None
    K = len(rows[0]) if rows and isinstance(rows[0], (list, tuple)) else 0
    if rows is None or len(rows) != n or not 1 <= K <= MAX_HARMONICS:
        raise InvalidInputError(f"trajectory spec field '{field}' must be {n} rows ({names}) of 1 to {MAX_HARMONICS} "
                                f"harmonics, got {excerpt(value, 200)}")
    return check_vector(f"trajectory spec field '{field}' ({n} x {K})", rows, (n, K), MAGNITUDE_LIMIT)


def _fourier(kin, spec, need) -> FourierTrajectory:
    for field in ("start", "profile", "profile_options"):
        if spec.get(field) is not None:
            raise InvalidInputError(f"trajectory spec of type 'fourier' takes no field '{field}' (its series fixes "
                                    "where it starts and how it moves)")
    names = " ".join(kin.task.names)
    offset = kin.model.spec.require("home", "a trajectory without an offset") if spec.get("offset") is None else \
        check_vector(f"trajectory spec field 'offset' ({names})", spec["offset"], kin.task.dim, MAGNITUDE_LIMIT)
    a = _harmonics(kin, "a", need("a"))
    b = _harmonics(kin, "b", need("b"))
    if a.shape != b.shape:
        raise InvalidInputError(f"trajectory spec fields 'a' and 'b' must have the same shape, got {a.shape} and "
                                f"{b.shape}")
    periods = 1 if spec.get("periods") is None else _number("periods", spec["periods"])
    return FourierTrajectory(kin.task, _number("period", need("period")), offset, a, b, periods)
