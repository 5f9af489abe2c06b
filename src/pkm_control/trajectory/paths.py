"""Task-space trajectories: the desired platform motion (pose, twist, acceleration) over time.

Every trajectory implements ``TaskTrajectory``: ``task`` (the robot's TaskSpace), ``duration``,
``sample(t) -> (pose, twist, accel)`` and the vectorized ``sample_many(ts) -> (positions (N, 3),
rotations (N, 3, 3), twists (N, n), accels (N, n))``. Twists and accelerations are in the robot's
task velocity convention (kinematics/task_space.py): (v, omega) in the base frame and its time
derivative (p'', omega') for ``spatial``, v and p'' for ``translation``, (x', y', alpha') and its
derivative for ``planar``. Before t = 0 a trajectory rests at its start, after ``duration`` at its
end. All are immutable; the derivatives are analytic (the tests compare them with central finite
differences of the sampled poses).

Classes: ``PointToPoint`` (straight line, rotation about one fixed axis), ``Sequence`` (segments
back to back), ``Waypoints`` (rest-to-rest point-to-point segments), ``Circle`` (any plane, speed
ramp, laps), ``SemiEllipse`` (pick-and-place arc), ``FourierTrajectory`` (a periodic excitation motion, one
finite Fourier series per task coordinate); ``WaypointTrajectory`` interpolates plain
coordinate vectors (Lopes' [x y z psi theta phi] test motion) and is not a TaskTrajectory.
"""

from __future__ import annotations

import bisect
import math
from abc import ABC, abstractmethod

import numpy as np

from ..errors import MAGNITUDE_LIMIT, InvalidInputError, check_number, check_vector, excerpt
from ..kinematics.task_space import Pose, TaskSpace, so3_log
from .profiles import MAX_DURATION, _duration, profile_function, profile_integral, profile_name, trig_spline3

#: reachability checks sample a motion at this time step, with at most CHECK_SAMPLES samples
CHECK_STEP = 0.002
CHECK_SAMPLES = 20_001
#: m: the smallest circle (a micrometre, below any robot's repeatability): the angle sigma / r of a smaller one
#: (a denormal 1e-320) overflows
MIN_RADIUS = 1e-6
#: a sequence's segments share CHECK_SAMPLES, each with at least this many samples: its ends, its quarter points and
#: its middle (a rest-to-rest profile's peak speed), so 10,000 waypoints are checked at 50,000 samples, not 1,010,000
CHECK_SEGMENT_SAMPLES = 5

_I3 = np.eye(3)


def _pose_in_task(task: TaskSpace, pose, name: str) -> Pose:
    """The validated pose, or InvalidInputError if the task space cannot reach it (planar: z = 0 and
    rotation about z only; translation: identity rotation; xy: both)."""
    if not isinstance(pose, Pose):
        raise InvalidInputError(f"{name} must be a Pose, got {type(pose).__name__}")
    try:
        pose = pose.validated()
    except InvalidInputError as exc:
        raise InvalidInputError(f"{name}: {exc}") from exc
    R = pose.rotation
    if task.kind in ("translation", "xy"):
        err = float(np.abs(R - _I3).max())
        if err > 1e-9:
            raise InvalidInputError(f"{name}: a translation task space keeps the rotation at identity, "
                                    f"|R - I| = {err:.3g} (limit 1e-9)")
    if task.kind in ("planar", "xy"):
        err = max(abs(pose.position[2]), abs(R[2, 2] - 1.0))
        if err > 1e-9:
            raise InvalidInputError(f"{name}: a planar task space needs z = 0 and a rotation about z, "
                                    f"z = {pose.position[2]:.6g} m, R_zz = {R[2, 2]:.12g} (limit 1e-9)")
    return pose


def _unit(name, value, length_unit="") -> np.ndarray:
    v = check_vector(name, value, 3)
    n = float(np.linalg.norm(v))
    if n < 1e-9:
        raise InvalidInputError(f"{name} must be a nonzero direction, got |{name}| = {n:.3g}{length_unit} (limit 1e-9)")
    return v / n


def _positive(name, value, unit, allow_zero=False, low: float = 0.0) -> float:
    """A length, speed, count or time of a path: finite, > 0 (or >= 0; ``low``: at least it), and at most
    MAGNITUDE_LIMIT, so that no product of two of them overflows."""
    x = check_number(name, value)
    if low > 0.0 and not low <= x <= MAGNITUDE_LIMIT:
        raise InvalidInputError(f"{name} must be between {low:g} and {MAGNITUDE_LIMIT:g}{unit}, got {excerpt(value)}")
    if not ((x >= 0.0 if allow_zero else x > 0.0) and x <= MAGNITUDE_LIMIT):
        raise InvalidInputError(f"{name} must be {'>=' if allow_zero else '>'} 0 and at most {MAGNITUDE_LIMIT:g}"
                                f"{unit}, got {excerpt(value)}")
    return x


def _skew(k):
    return np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])


class _AxisRotation:
    """R(s) = exp(s theta [k]x) R0 from R0 to R1 = exp(theta [k]x) R0 (k fixed, theta = |log(R1 R0^T)|).

    The axis is fixed in the base frame, so omega = k theta s' and omega' = k theta s'' exactly.
    """

    def __init__(self, R0, R1):
        w = so3_log(R1 @ R0.T)
        self.angle = float(np.linalg.norm(w))
        self.axis = w / self.angle if self.angle > 1e-15 else np.zeros(3)
        self.R0 = R0
        K = _skew(self.axis)
        self.K, self.K2 = K @ R0, K @ K @ R0

    def __call__(self, s, ds, dds):
        phi = self.angle * s
        R = self.R0 + np.sin(phi)[:, None, None] * self.K + (1.0 - np.cos(phi))[:, None, None] * self.K2
        return R, np.outer(ds * self.angle, self.axis), np.outer(dds * self.angle, self.axis)

    def at(self, s: float, ds: float, dds: float):
        """The same for one (s, s', s'') (floats)."""
        phi = self.angle * s
        R = self.R0 + math.sin(phi) * self.K + (1.0 - math.cos(phi)) * self.K2
        return R, (ds * self.angle) * self.axis, (dds * self.angle) * self.axis


class TaskTrajectory(ABC):
    """A desired platform motion over [0, duration] in a robot's task space."""

    def __init__(self, task: TaskSpace, duration: float):
        if not isinstance(task, TaskSpace):
            raise InvalidInputError(f"task must be a TaskSpace, got {type(task).__name__}")
        self.task = task
        self.duration = _duration(duration)

    @abstractmethod
    def _motion(self, t: np.ndarray):
        """Base-frame motion at times t (N,): positions (N, 3), rotations (N, 3, 3), velocities,
        angular velocities, accelerations, angular accelerations (each (N, 3))."""

    def _motion1(self, t: float):
        """``_motion`` at one time, each part without the leading axis. Subclasses override it with
        scalar arithmetic: ``sample`` runs once per control cycle, where numpy's per-call overhead on
        1-element arrays would dominate (about 100 us against 10-20 us)."""
        return tuple(x[0] for x in self._motion(np.array([t])))

    def _to_task1(self, lin, ang):
        k = self.task.kind
        if k == "spatial":
            return np.concatenate([lin, ang])
        if k == "translation":
            return lin
        if k == "xy":
            return lin[:2]
        return np.array([lin[0], lin[1], self.task.alpha_sign * ang[2]])

    def _to_task(self, lin, ang):
        k = self.task.kind
        if k == "spatial":
            return np.concatenate([lin, ang], axis=1)
        if k == "translation":
            return lin
        if k == "xy":
            return lin[:, :2]
        return np.column_stack([lin[:, 0], lin[:, 1], self.task.alpha_sign * ang[:, 2]])

    def sample_many(self, ts):
        """(positions (N, 3), rotations (N, 3, 3), twists (N, n), accels (N, n)) at times ts (N,)."""
        t = np.asarray(ts, dtype=float)
        if t.ndim != 1:
            raise InvalidInputError(f"sample times must be a 1-D array, got shape {t.shape}")
        if not np.isfinite(t).all():
            raise InvalidInputError("sample times must be finite")
        P, R, v, w, a, dw = self._motion(t)
        return P, R, self._to_task(v, w), self._to_task(a, dw)

    def sample(self, t: float):
        """(pose, twist, accel) at time t (seconds from the start)."""
        try:
            t = float(t)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"sample time must be a number, got {t!r}") from exc
        if not math.isfinite(t):
            raise InvalidInputError(f"sample time must be finite, got {t!r}")
        P, R, v, w, a, dw = self._motion1(t)
        return Pose(P, R), self._to_task1(v, w), self._to_task1(a, dw)

    def check_times(self, step: float = CHECK_STEP, max_samples: int = CHECK_SAMPLES) -> np.ndarray:
        """Times whose poses and velocities stand for the whole motion in a reachability check: every ``step``
        s (at least 101 samples), at most ``max_samples`` (bounded cost whatever the duration; periodic
        paths override this with one period, which covers every pose they visit)."""
        n = int(min(max_samples, max(101, math.ceil(self.duration / step) + 1)))
        return np.linspace(0.0, self.duration, n)

    @property
    def start_pose(self) -> Pose:
        return self.sample(0.0)[0]

    @property
    def end_pose(self) -> Pose:
        return self.sample(self.duration)[0]


class PointToPoint(TaskTrajectory):
    """Straight line from start to goal, rotation about the fixed axis of R_goal R_start^T.

    p(t) = p0 + s(t) (p1 - p0); R(t) = exp(s(t) theta [k]x) R0 with k theta = log(R1 R0^T)
    (the shortest rotation, so a planar turn of more than pi needs waypoints); omega = k theta s',
    omega' = k theta s''. profile: a name of
    ``PROFILES`` or one of its functions, with ``profile_options`` (e.g. {"ramp": 0.2}).
    """

    def __init__(self, task: TaskSpace, start: Pose, goal: Pose, duration: float, profile="quintic",
                 profile_options=None):
        name, options = profile_name(profile), dict(profile_options or {})
        f = profile_function(name, options)
        f(0.0, _duration(duration))                       # profile options checked here, not at run time
        self._set(task, _pose_in_task(task, start, "start pose"), _pose_in_task(task, goal, "goal pose"), duration,
                  name, options, f)

    @classmethod
    def checked(cls, task: TaskSpace, start: Pose, goal: Pose, duration: float, profile: str, profile_options: dict,
                f):
        """A segment of poses (``_pose_in_task``) and a profile (``f`` = profile_function of the name and options,
        called once at ``duration``) its caller checked already: Waypoints checks each pose once, not twice, and
        the profile once per distinct duration."""
        self = cls.__new__(cls)
        self._set(task, start, goal, duration, profile, profile_options, f)
        return self

    def _set(self, task, start, goal, duration, profile, profile_options, f):
        super().__init__(task, duration)
        self.start, self.goal = start, goal
        self.profile, self.profile_options, self._f = profile, profile_options, f
        self._dp = self.goal.position - self.start.position
        self._rot = _AxisRotation(self.start.rotation, self.goal.rotation)

    def _motion(self, t):
        s, ds, dds = self._f(t, self.duration)
        P = self.start.position + np.outer(s, self._dp)
        R, w, dw = self._rot(s, ds, dds)
        return P, R, np.outer(ds, self._dp), w, np.outer(dds, self._dp), dw

    def _motion1(self, t):
        s, ds, dds = self._f(t, self.duration)
        R, w, dw = self._rot.at(s, ds, dds)
        return self.start.position + s * self._dp, R, ds * self._dp, w, dds * self._dp, dw


class Sequence(TaskTrajectory):
    """Trajectories back to back; each must start where the previous one ends (1e-9 m / rad; ``joined``: they do by
    construction, Waypoints' segments from one pose to the next, and are not sampled to check it)."""

    def __init__(self, segments, joined: bool = False):
        segments = list(segments)
        if not segments or not all(isinstance(s, TaskTrajectory) for s in segments):
            raise InvalidInputError("a sequence needs at least one TaskTrajectory segment")
        task = segments[0].task
        for i, seg in enumerate(segments[1:], 1):
            if seg.task.kind != task.kind:
                raise InvalidInputError(f"segment {i} is in task space {seg.task.kind}, segment 0 in {task.kind}")
            if joined:
                continue
            a, b = segments[i - 1].end_pose, seg.start_pose
            gap = max(float(np.linalg.norm(a.position - b.position)),
                      float(np.linalg.norm(so3_log(b.rotation @ a.rotation.T))))
            if gap > 1e-9:
                raise InvalidInputError(f"segment {i} starts {gap:.3g} m/rad away from where segment {i - 1} "
                                        f"ends (limit 1e-9)")
        self.segments = tuple(segments)
        self.times = np.concatenate([[0.0], np.cumsum([s.duration for s in segments])])
        self.times.setflags(write=False)
        self._times_list = self.times.tolist()
        super().__init__(task, self.times[-1])

    def _motion(self, t):
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.segments) - 1)
        if len(self.segments) == 1 or (t.size and (k == k[0]).all()):
            return self.segments[k[0]]._motion(t - self.times[k[0]])
        N = t.size
        out = [np.empty((N, 3)), np.empty((N, 3, 3))] + [np.empty((N, 3)) for _ in range(4)]
        for i in np.unique(k):
            m = k == i
            for o, part in zip(out, self.segments[i]._motion(t[m] - self.times[i])):
                o[m] = part
        return tuple(out)

    def _motion1(self, t):
        k = min(max(bisect.bisect_right(self._times_list, t) - 1, 0), len(self.segments) - 1)
        return self.segments[k]._motion1(t - self.times[k])

    def check_times(self, step: float = CHECK_STEP, max_samples: int = CHECK_SAMPLES) -> np.ndarray:
        """Each segment's check times, offset to its start (the budget shared among the segments)."""
        per = max(CHECK_SEGMENT_SAMPLES, max_samples // len(self.segments))
        return np.concatenate([t0 + seg.check_times(step, per) for t0, seg in zip(self.times, self.segments)])


class Waypoints(Sequence):
    """Rest-to-rest point-to-point segments through poses[0], poses[1], ... (durations: one per segment).

    Sampled in one pass over every segment (``_motion``): each sample's segment found by one search, the profile
    evaluated once per distinct segment duration, the segments' start positions and axis rotations gathered by
    index, so 10,000 waypoints sample and check like one segment (a loop over the segments took minutes)."""

    def __init__(self, task: TaskSpace, poses, durations, profile="quintic", profile_options=None):
        poses = list(poses)
        D = np.atleast_1d(np.asarray(durations, dtype=float))
        if len(poses) < 2:
            raise InvalidInputError(f"waypoints need at least 2 poses, got {len(poses)}")
        if D.shape != (len(poses) - 1,):
            raise InvalidInputError(f"waypoints: {len(poses)} poses need {len(poses) - 1} durations, got {D.size}")
        poses = [_pose_in_task(task, p, f"waypoint {i}") for i, p in enumerate(poses)]
        name, options = profile_name(profile), dict(profile_options or {})
        f = profile_function(name, options)
        for T in np.unique(D):
            f(0.0, _duration(T))                          # profile options checked once per duration
        super().__init__([PointToPoint.checked(task, poses[i], poses[i + 1], D[i], name, options, f)
                          for i in range(len(D))], joined=True)
        self.poses = tuple(seg.start for seg in self.segments) + (self.segments[-1].goal,)
        segs = self.segments
        self._f = segs[0]._f
        self._durations = np.array([seg.duration for seg in segs])
        self._p0 = np.array([seg.start.position for seg in segs])
        self._dp = np.array([seg._dp for seg in segs])
        self._angle = np.array([seg._rot.angle for seg in segs])
        self._axis = np.array([seg._rot.axis for seg in segs])
        self._R0, self._K, self._K2 = (np.array([getattr(seg._rot, a) for seg in segs]) for a in ("R0", "K", "K2"))

    def _motion(self, t):
        """Sequence._motion of point-to-point segments (PointToPoint._motion's formulas), vectorized over them."""
        k = np.clip(np.searchsorted(self.times, t, side="right") - 1, 0, len(self.segments) - 1)
        local = t - self.times[k]
        T = self._durations[k]
        s, ds, dds = np.empty_like(t), np.empty_like(t), np.empty_like(t)
        order = np.argsort(T, kind="stable")              # the samples grouped by their segment's duration
        edges = np.flatnonzero(np.diff(T[order])) + 1
        for group in np.split(order, edges):
            if group.size:
                s[group], ds[group], dds[group] = self._f(local[group], T[group[0]])
        phi = self._angle[k] * s
        R = self._R0[k] + np.sin(phi)[:, None, None] * self._K[k] + (1.0 - np.cos(phi))[:, None, None] * self._K2[k]
        w_dir = self._axis[k] * self._angle[k][:, None]
        return (self._p0[k] + s[:, None] * self._dp[k], R, ds[:, None] * self._dp[k], ds[:, None] * w_dir,
                dds[:, None] * self._dp[k], dds[:, None] * w_dir)

    def check_times(self, step: float = CHECK_STEP, max_samples: int = CHECK_SAMPLES) -> np.ndarray:
        """Sequence.check_times of point-to-point segments (TaskTrajectory.check_times of each), vectorized."""
        per = max(CHECK_SEGMENT_SAMPLES, max_samples // len(self.segments))
        n = np.minimum(per, np.maximum(101, np.ceil(self._durations / step).astype(np.int64) + 1))
        seg = np.repeat(np.arange(n.size), n)
        first = np.repeat(np.cumsum(n) - n, n)
        frac = (np.arange(seg.size) - first) / (n[seg] - 1)
        return self.times[seg] + frac * self._durations[seg]


class Circle(TaskTrajectory):
    """The platform origin on a circle in the plane normal to ``normal`` through center.position.

    Orientation held at center.rotation. Arc length sigma(t): the speed ramps from rest to
    ``speed`` over ``ramp_time`` with the chosen profile as its shape (sigma' = V s(t), so the
    acceleration V s' is continuous for every profile), then ``laps`` full turns at constant speed,
    then ramps down (sigma' = V (1 - s)). The ramps cover V I(Tr) and V (Tr - I(Tr)) of arc, I the
    closed-form integral of the profile (``profile_integral``); duration = 2 Tr + laps 2 pi r / V.
    In-plane basis: u = the x-axis projected on the plane (the y-axis if the normal is along x),
    w = n x u; p = c + r (cos phi u + sin phi w), phi = start_angle + sigma / r (counterclockwise
    about n). Planar robots: the normal must be +-z.
    """

    def __init__(self, task: TaskSpace, center: Pose, radius: float, normal=(0.0, 0.0, 1.0), speed: float = 1.0,
                 laps: float = 1.0, ramp_time: float = 0.5, profile="sine_on_ramp", profile_options=None,
                 start_angle: float = 0.0):
        self.center = _pose_in_task(task, center, "circle center")
        self.radius = _positive("circle radius", radius, " m", low=MIN_RADIUS)
        self.normal = _unit("circle normal", normal)
        self.speed = _positive("circle speed", speed, " m/s")
        self.laps = _positive("circle laps", laps, "", allow_zero=True)
        self.ramp_time = _positive("circle ramp_time", ramp_time, " s")
        self.start_angle = check_number("circle start_angle", start_angle)
        if abs(self.start_angle) > 2.0 * math.pi:    # beyond a turn an angle only loses digits
            raise InvalidInputError(f"circle start_angle must be within [-2 pi, 2 pi] rad, got {excerpt(start_angle)}")
        if task.kind in ("planar", "xy") and abs(abs(self.normal[2]) - 1.0) > 1e-9:
            raise InvalidInputError(f"circle normal: a planar robot's circle lies in the x-y plane, normal must be "
                                    f"+-z, got {np.array2string(self.normal, precision=6)}")
        self.profile = profile_name(profile)
        self.profile_options = dict(profile_options or {})
        self._f = profile_function(self.profile, self.profile_options)
        self._f(0.0, self.ramp_time)
        n = self.normal
        u = np.array([1.0, 0.0, 0.0]) - n[0] * n
        if np.linalg.norm(u) < 1e-6:
            u = np.array([0.0, 1.0, 0.0]) - n[1] * n
        self.u = u / np.linalg.norm(u)
        self.w = np.cross(n, self.u)
        Tr, V = self.ramp_time, self.speed
        self._I_Tr = profile_integral(self.profile, Tr, Tr, **self.profile_options)
        self._lap_time = 2.0 * math.pi * self.radius / V
        self._t2 = Tr + self.laps * self._lap_time
        self._sigma1 = V * self._I_Tr
        if not self._t2 + Tr <= MAX_DURATION:
            raise InvalidInputError(f"circle of {self.laps:g} laps of {self._lap_time:.4g} s lasts "
                                    f"{self._t2 + Tr:.4g} s (limit {MAX_DURATION:g} s)")
        super().__init__(task, self._t2 + Tr)

    def check_times(self, step: float = CHECK_STEP, max_samples: int = CHECK_SAMPLES) -> np.ndarray:
        """The ramps and the first lap: every pose of the circle is on one lap (the orientation is held), and the
        speed is at most the cruise speed, so later laps visit nothing new."""
        spans = [(0.0, self.ramp_time), (self.ramp_time, min(self._t2, self.ramp_time + self._lap_time)),
                 (self._t2, self.duration)]
        per = max(101, max_samples // 3)
        return np.concatenate([np.linspace(a, b, int(min(per, max(2, math.ceil((b - a) / step) + 1))))
                               for a, b in spans if b > a])

    def arc_length(self, t):
        """(sigma, sigma', sigma'') at times t (N,): the distance travelled along the circle."""
        Tr, V, t2 = self.ramp_time, self.speed, self._t2
        t = np.clip(np.asarray(t, float), 0.0, self.duration)
        up, down = t < Tr, t > t2
        tau = np.where(up, t, np.where(down, t - t2, 0.0))
        s, ds, dds = self._f(tau, Tr)
        I = profile_integral(self.profile, tau, Tr, **self.profile_options)
        cruise_sigma = self._sigma1 + V * (t - Tr)
        sigma = np.where(up, V * I, np.where(down, self._sigma1 + V * (t2 - Tr) + V * (tau - I), cruise_sigma))
        dsig = np.where(up, V * s, np.where(down, V * (1.0 - s), V))
        ddsig = np.where(up, V * ds, np.where(down, -V * ds, 0.0))
        return sigma, dsig, ddsig

    def _arc1(self, t: float):
        Tr, V, t2 = self.ramp_time, self.speed, self._t2
        t = min(max(t, 0.0), self.duration)
        if t < Tr:
            s, ds, _ = self._f(t, Tr)
            return V * profile_integral(self.profile, t, Tr, **self.profile_options), V * s, V * ds
        if t > t2:
            tau = t - t2
            s, ds, _ = self._f(tau, Tr)
            I = profile_integral(self.profile, tau, Tr, **self.profile_options)
            return self._sigma1 + V * (t2 - Tr) + V * (tau - I), V * (1.0 - s), -V * ds
        return self._sigma1 + V * (t - Tr), V, 0.0

    def _motion1(self, t):
        sig, dsig, ddsig = self._arc1(t)
        r = self.radius
        phi = self.start_angle + sig / r
        c, s = math.cos(phi), math.sin(phi)
        radial = c * self.u + s * self.w
        tangent = c * self.w - s * self.u
        zero = np.zeros(3)
        return (self.center.position + r * radial, self.center.rotation.copy(), dsig * tangent, zero,
                ddsig * tangent - (dsig * dsig / r) * radial, zero.copy())

    def _motion(self, t):
        sig, dsig, ddsig = self.arc_length(t)
        r = self.radius
        phi = self.start_angle + sig / r
        c, s = np.cos(phi), np.sin(phi)
        radial = np.outer(c, self.u) + np.outer(s, self.w)
        tangent = np.outer(-s, self.u) + np.outer(c, self.w)
        P = self.center.position + r * radial
        v = dsig[:, None] * tangent
        a = ddsig[:, None] * tangent - (dsig * dsig / r)[:, None] * radial
        N = t.size
        zero = np.zeros((N, 3))
        return P, np.broadcast_to(self.center.rotation, (N, 3, 3)).copy(), v, zero, a, zero.copy()


class SemiEllipse(TaskTrajectory):
    """Pick-and-place arc: the upper half of an ellipse from start to goal in the vertical plane.

    Major axis the segment start-goal (semi-axis a = |p1 - p0| / 2, centre c at its midpoint),
    semi-minor axis ``height`` along e2 = the part of ``up`` (the direction against gravity,
    default +z) normal to the segment. p(phi) = c - a cos(phi) e1 + h sin(phi) e2 with the
    ellipse angle phi = pi s(t) driven by the profile (so the path parameter, not the arc length,
    follows the profile; at the ends the speed is pi s' h, in the middle pi s' a). The apex
    c + h e2 is reached at s = 1/2. The rotation turns from start to goal about a fixed axis with
    the same s(t), as in PointToPoint. Codourey (seed 002, sec. 6) drives his semi-ellipse with a
    sine-on-ramp profile, the default here.
    """

    def __init__(self, task: TaskSpace, start: Pose, goal: Pose, height: float, duration: float,
                 profile="sine_on_ramp", profile_options=None, up=(0.0, 0.0, 1.0)):
        super().__init__(task, duration)
        self.start = _pose_in_task(task, start, "semi-ellipse start")
        self.goal = _pose_in_task(task, goal, "semi-ellipse goal")
        self.height = _positive("semi-ellipse height", height, " m")
        self.up = _unit("semi-ellipse up", up)
        d = self.goal.position - self.start.position
        self.a = 0.5 * float(np.linalg.norm(d))
        if self.a < 1e-9:
            raise InvalidInputError(f"semi-ellipse: goal must differ from start, |goal - start| = {2 * self.a:.3g} m "
                                    f"(limit 1e-9 m)")
        self.e1 = d / (2.0 * self.a)
        e2 = self.up - (self.up @ self.e1) * self.e1
        if np.linalg.norm(e2) < 1e-6:
            raise InvalidInputError("semi-ellipse: the segment start-goal is parallel to 'up' "
                                    f"({np.array2string(self.up, precision=6)}); the arc plane is undefined")
        self.e2 = e2 / np.linalg.norm(e2)
        if task.kind in ("planar", "xy") and abs(self.e2[2]) > 1e-9:
            raise InvalidInputError(f"semi-ellipse up: a planar robot's arc lies in the x-y plane, 'up' must have "
                                    f"no z component, got {np.array2string(self.up, precision=6)}")
        self.center = 0.5 * (self.start.position + self.goal.position)
        self.profile = profile_name(profile)
        self.profile_options = dict(profile_options or {})
        self._f = profile_function(self.profile, self.profile_options)
        self._f(0.0, self.duration)
        self._rot = _AxisRotation(self.start.rotation, self.goal.rotation)

    @property
    def apex(self) -> np.ndarray:
        return self.center + self.height * self.e2

    def _motion(self, t):
        s, ds, dds = self._f(t, self.duration)
        phi = math.pi * s
        c, sn = np.cos(phi), np.sin(phi)
        a, h = self.a, self.height
        P = self.center + np.outer(-a * c, self.e1) + np.outer(h * sn, self.e2)
        dP = np.outer(a * sn, self.e1) + np.outer(h * c, self.e2)       # dp/dphi
        ddP = np.outer(a * c, self.e1) + np.outer(-h * sn, self.e2)     # d2p/dphi2
        dphi, ddphi = math.pi * ds, math.pi * dds
        v = dphi[:, None] * dP
        acc = (dphi * dphi)[:, None] * ddP + ddphi[:, None] * dP
        R, w, dw = self._rot(s, ds, dds)
        return P, R, v, w, acc, dw

    def _motion1(self, t):
        s, ds, dds = self._f(t, self.duration)
        phi = math.pi * s
        c, sn = math.cos(phi), math.sin(phi)
        a, h, e1, e2 = self.a, self.height, self.e1, self.e2
        dP = (a * sn) * e1 + (h * c) * e2
        dphi, ddphi = math.pi * ds, math.pi * dds
        R, w, dw = self._rot.at(s, ds, dds)
        return (self.center - (a * c) * e1 + (h * sn) * e2, R, dphi * dP, w,
                (dphi * dphi) * ((a * c) * e1 - (h * sn) * e2) + ddphi * dP, dw)


#: most harmonics per coordinate of a FourierTrajectory (an excitation uses 2-10; more is a typo or an attack)
MAX_HARMONICS = 100


class FourierTrajectory(TaskTrajectory):
    """Periodic motion, a finite Fourier series per task coordinate (Swevers, Ganseman, Tukel, De Schutter and
    Van Brussel 1997, "Optimal robot excitation and identification", the excitation parametrization):

        x_i(t)   = x_i0 + sum_k  a_ik / (w_f k) sin(w_f k t) - b_ik / (w_f k) cos(w_f k t)
        x_i'(t)  =        sum_k  a_ik cos(w_f k t) + b_ik sin(w_f k t)
        x_i''(t) =        sum_k -a_ik w_f k sin(w_f k t) + b_ik w_f k cos(w_f k t)

    k = 1..K, w_f = 2 pi / period; x are the robot's task coordinates (x y z roll pitch yaw | x y z | x y alpha),
    offset = x_0, a and b (n, K) in m/s or rad/s. It runs ``periods`` periods (duration = periods * period); at the
    ends it rests, which needs x'(0) = sum_k a_ik = 0 and x''(0) = w_f sum_k k b_ik = 0 (checked to 1e-9; it then
    starts and ends at x_i0 - sum_k b_ik / (w_f k)). Spatial robots: R = Rz(yaw) Ry(pitch) Rx(roll), omega =
    E [yaw' pitch' roll'] and omega' = E [yaw'' pitch'' roll''] + E' [yaw' pitch' roll'] (``euler_rate_matrix``).

    ``bounds()`` gives the exact bounds of the series over all t (no sampling): |x_i - x_i0| <= sum_k |c_ik| /
    (w_f k), |x_i'| <= sum_k |c_ik|, |x_i''| <= sum_k w_f k |c_ik| with |c_ik| = sqrt(a_ik^2 + b_ik^2), the amplitude
    of harmonic k (a sin + b cos has amplitude sqrt(a^2 + b^2)).
    """

    def __init__(self, task: TaskSpace, period: float, offset, a, b, periods: int = 1):
        n = task.dim
        self.period = _positive("fourier period", period, " s")
        count = _positive("fourier periods", periods, "") if not isinstance(periods, bool) else 0.5
        if not (count.is_integer() and count <= MAX_DURATION):
            raise InvalidInputError(f"fourier periods must be a whole number >= 1, got {periods!r}")
        self.periods = int(count)
        try:
            A = np.asarray(a, dtype=float)
        except (TypeError, ValueError):
            A = np.zeros((0, 0))
        K = A.shape[1] if A.ndim == 2 else 0
        if A.ndim != 2 or A.shape[0] != n or not 1 <= K <= MAX_HARMONICS:
            raise InvalidInputError(f"fourier a must be {n} rows (one per task coordinate) of 1 to {MAX_HARMONICS} "
                                    f"harmonics, got shape {np.shape(a)}")
        self.a = check_vector("fourier a", A, (n, K), MAGNITUDE_LIMIT)
        self.b = check_vector("fourier b", b, (n, K), MAGNITUDE_LIMIT)
        self.offset = check_vector("fourier offset", offset, n, MAGNITUDE_LIMIT)
        self.harmonics = K
        self.w = 2.0 * math.pi / self.period
        self._wk = self.w * np.arange(1, K + 1)
        v0, acc0 = self.a.sum(axis=1), self.b @ self._wk
        i = int(np.argmax(np.maximum(np.abs(v0), np.abs(acc0))))
        if max(abs(v0[i]), abs(acc0[i])) > 1e-9:
            raise InvalidInputError(f"fourier trajectory must start and end at rest: coordinate {task.names[i]} has "
                                    f"velocity sum_k a_k = {v0[i]:.6g} and acceleration w_f sum_k k b_k = "
                                    f"{acc0[i]:.6g} at t = 0 (limit 1e-9)")
        if self.period * self.periods > MAX_DURATION:
            raise InvalidInputError(f"fourier trajectory of {self.periods} periods of {self.period:g} s lasts "
                                    f"{self.period * self.periods:g} s (limit {MAX_DURATION:g} s)")
        for arr in (self.a, self.b, self.offset):
            arr.setflags(write=False)
        super().__init__(task, self.period * self.periods)

    def bounds(self):
        """(deviation, speed, acceleration) (n,): exact bounds over all t of |x_i - x_i0|, |x_i'| and |x_i''|."""
        c = np.hypot(self.a, self.b)
        return (c / self._wk).sum(axis=1), c.sum(axis=1), (c * self._wk).sum(axis=1)

    def coordinates(self, t):
        """(x, x', x'') (N, n) at times t (N,): the series above; at rest at its ends outside [0, duration]."""
        t = np.clip(np.asarray(t, dtype=float), 0.0, self.duration)
        ph = np.multiply.outer(t, self._wk)                       # (N, K)
        s, c = np.sin(ph), np.cos(ph)
        x = self.offset + (s / self._wk) @ self.a.T - (c / self._wk) @ self.b.T
        xd = c @ self.a.T + s @ self.b.T
        xdd = (-s * self._wk) @ self.a.T + (c * self._wk) @ self.b.T
        return x, xd, xdd

    def check_times(self, step: float = CHECK_STEP, max_samples: int = CHECK_SAMPLES) -> np.ndarray:
        """One period: every later period repeats it exactly."""
        n = int(min(max_samples, max(101, math.ceil(self.period / step) + 1)))
        return np.linspace(0.0, self.period, n)

    def _motion(self, t):
        x, xd, xdd = self.coordinates(t)
        N, zero = len(x), np.zeros((len(x), 3))
        kind = self.task.kind
        if kind == "translation":
            return x, np.broadcast_to(_I3, (N, 3, 3)).copy(), xd, zero, xdd, zero.copy()
        if kind == "xy":
            def in_plane(c):
                return np.column_stack([c, np.zeros(N)])
            return in_plane(x), np.broadcast_to(_I3, (N, 3, 3)).copy(), in_plane(xd), zero, in_plane(xdd), zero.copy()
        if kind == "planar":
            sign = self.task.alpha_sign
            ang = sign * x[:, 2]
            c, s = np.cos(ang), np.sin(ang)
            R = np.zeros((N, 3, 3))
            R[:, 0, 0], R[:, 0, 1], R[:, 1, 0], R[:, 1, 1], R[:, 2, 2] = c, -s, s, c, 1.0
            P = np.column_stack([x[:, :2], np.zeros(N)])
            w, dw = zero.copy(), zero.copy()
            w[:, 2], dw[:, 2] = sign * xd[:, 2], sign * xdd[:, 2]
            v, a = np.column_stack([xd[:, :2], np.zeros(N)]), np.column_stack([xdd[:, :2], np.zeros(N)])
            return P, R, v, w, a, dw
        roll, pitch, yaw = x[:, 3], x[:, 4], x[:, 5]
        cr, sr, cp, sp, cy, sy = np.cos(roll), np.sin(roll), np.cos(pitch), np.sin(pitch), np.cos(yaw), np.sin(yaw)
        R = np.empty((N, 3, 3))                                   # Rz(yaw) Ry(pitch) Rx(roll)
        R[:, 0] = np.column_stack([cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr])
        R[:, 1] = np.column_stack([sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr])
        R[:, 2] = np.column_stack([-sp, cp * sr, cp * cr])
        dr, dp, dy = xd[:, 3], xd[:, 4], xd[:, 5]
        ddr, ddp, ddy = xdd[:, 3], xdd[:, 4], xdd[:, 5]
        # columns of E (omega = E [yaw' pitch' roll']): e_z, (-sy, cy, 0), (cy cp, sy cp, -sp); E' their rates
        w = np.column_stack([-sy * dp + cy * cp * dr, cy * dp + sy * cp * dr, dy - sp * dr])
        dw = np.column_stack([-sy * ddp + cy * cp * ddr - cy * dy * dp + (-sy * cp * dy - cy * sp * dp) * dr,
                              cy * ddp + sy * cp * ddr - sy * dy * dp + (cy * cp * dy - sy * sp * dp) * dr,
                              ddy - sp * ddr - cp * dp * dr])
        return x[:, :3].copy(), R, xd[:, :3].copy(), w, xdd[:, :3].copy(), dw


class WaypointTrajectory:
    """Rest-to-rest trajectory through waypoints in plain coordinates, each segment time-scaled.

    x(t) = x_k + s_k(t - t_k) (x_{k+1} - x_k) on segment k (straight line in the coordinates
    given, e.g. Lopes' [x y z psi theta phi]); profile(t, T) -> (s, ds, dds) such as
    ``trig_spline3``. Immutable. (For platform poses use ``Waypoints``, which interpolates the
    rotation about a fixed axis instead of the Euler angles.)
    """

    def __init__(self, waypoints, durations, profile=trig_spline3):
        W = np.array(waypoints, dtype=float)
        if W.ndim != 2 or W.shape[0] < 2 or not np.isfinite(W).all():
            raise InvalidInputError(f"waypoints must be a finite (n >= 2, dim) array, got shape {W.shape}")
        D = np.atleast_1d(np.array(durations, dtype=float))
        if D.shape != (W.shape[0] - 1,):
            raise InvalidInputError(f"need {W.shape[0] - 1} segment durations, got {D.shape[0]}")
        for T in D:
            _duration(T)
        self.waypoints = W
        self.durations = D
        self.times = np.concatenate([[0.0], np.cumsum(D)])
        self.profile = profile
        for arr in (W, D, self.times):
            arr.setflags(write=False)

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def evaluate(self, t):
        """(x, xd, xdd) at times t (array (N,) -> arrays (N, dim); scalar -> (dim,))."""
        t = np.asarray(t, dtype=float)
        scalar = t.ndim == 0
        tt = np.atleast_1d(t)
        if not np.isfinite(tt).all():
            raise InvalidInputError("time must be finite")
        k = np.clip(np.searchsorted(self.times, tt, side="right") - 1, 0, len(self.durations) - 1)
        x = np.empty((tt.size, self.waypoints.shape[1]))
        xd, xdd = np.empty_like(x), np.empty_like(x)
        for seg in range(len(self.durations)):
            m = k == seg
            if not m.any():
                continue
            s, ds, dds = self.profile(tt[m] - self.times[seg], self.durations[seg])
            dx = self.waypoints[seg + 1] - self.waypoints[seg]
            x[m] = self.waypoints[seg] + np.outer(s, dx)
            xd[m] = np.outer(ds, dx)
            xdd[m] = np.outer(dds, dx)
        if scalar:
            return x[0], xd[0], xdd[0]
        return x, xd, xdd
