"""Streaming a goal ahead of the control loop (ROS-free): sample buffers and the goal scheduler.

The real-time path never waits for a trajectory, an IK or a model evaluation: those are computed
ahead, in chunks of time-stamped samples on the control grid k * dt, and the loop only looks up
the sample of its instant. Two pieces:

* ``SampleBuffer``: time-indexed rows (integer nanoseconds) with ros2_control's splice semantics
  (a chunk replaces every buffered sample at or after its first time, as a new
  JointTrajectory replaces the rest of the old one in joint_trajectory_controller). ``at(t)`` is
  exact on the grid and linear between samples. The consumer reads through ``use(t)``, which makes the samples
  it read final: a chunk that would rewrite one of them is refused (``fresh``).
* ``GoalScheduler``: what the trajectory_generator node does between its messages. It holds the
  pose to keep when no motion runs (initially the start pose, later the end of the last motion),
  loads a goal (spec -> trajectory, an approach move in front if it starts elsewhere, the whole
  motion checked for reachability), starts it on the grid ``start_delay`` after now, stops it,
  and tells which chunks to publish so that the published reference stays at least ``lead_n``
  periods ahead of now (and less than ``lead_n + chunk_n``). A start or stop never changes a
  sample already published (a consumer may have used it), so it takes effect at the published
  end when that is later than now + start_delay: a published sample is final, and the splice
  downstream only ever appends.
  Times are integer nanoseconds of the caller's clock (sim time in lockstep).
"""

from __future__ import annotations

import bisect
import collections
from dataclasses import dataclass

import numpy as np

from ..description.paths import bounded_yaml
from ..errors import InvalidInputError
from ..kinematics.task_space import Pose
from .trust import ClockGuard

#: a goal message longer than this is refused before parsing (a trajectory spec is a few hundred bytes)
MAX_GOAL_BYTES = 65536
#: a streamed sample equal to a buffered one within this tolerance, relative to the larger of 1 and the row's largest
#: magnitude, repeats it (SampleBuffer.fresh): a re-offered chunk is computed again by the stages downstream, with
#: the same inputs but not always to the last bit (numpy's vectorized sin/cos differ in the last bits with the
#: array's length), and rounding scales with the row's largest term, not with a component that crosses zero
REPEAT_TOLERANCE = 1e-9
#: s (wall) that sim time stands still, at least, before the generator offers its chunks again (ReofferPolicy)
REOFFER_AFTER = 0.5
#: sim time counts as stalled after standing this many times the graph's slowest recent clock step (ReofferPolicy)
REOFFER_PACE_FACTOR = 4.0
#: clock steps of which the slowest sets the pace (ReofferPolicy): 16 steps of lockstep's 200 Hz clock are 80 ms
REOFFER_WINDOW = 16
#: deepest nesting of flow collections ([...], {...}) in a goal (a spec needs 3)
MAX_GOAL_DEPTH = 32
#: a goal starting within this of the held pose in every actuated joint (m or rad) needs no approach move (the
#: ``approach_tolerance`` parameter): above the resolution of a measured pose (the shipped CANopen drives' encoder
#: increments, 1 um and 6 urad), so a held pose that is a quantized measurement of the goal's start is that start
APPROACH_TOLERANCE = 1e-5


def _repeats(buffered: np.ndarray, row: np.ndarray) -> bool:
    """``row`` repeats the buffered sample within REPEAT_TOLERANCE of the larger of 1 and its largest magnitude."""
    scale = max(1.0, float(np.abs(buffered).max(initial=0.0)))
    return buffered.shape == row.shape and bool(np.all(np.abs(buffered - row) <= REPEAT_TOLERANCE * scale))


class SampleBuffer:
    """Time-indexed samples (ns -> row of floats) with splice semantics (module docstring).

    ``at(t)`` returns the sample at t: exact on the grid, between neighbours ``interpolate(r0, r1, w, h)``
    (rows, w in [0, 1] the position between them, h their spacing in s; default linear; the control loop's
    references use cubic Hermite, ``control.kernels.hermite``), None when t is outside the buffered span (not
    arrived yet, or pruned). ``hold(t, max_age)`` is ``at(t)`` or, past the end, the last row while t is at
    most ``max_age`` ns after it (a stream that ran dry for less than its timeout). ``use(t, max_age)`` is ``hold``
    for the consumer: it also records in ``used_ns`` the latest buffered sample it read, the last that a chunk may no
    longer rewrite (``fresh``).
    """

    def __init__(self, keep_ns: int = 1_000_000_000, interpolate=None):
        self.times: list[int] = []
        self.rows: list[np.ndarray] = []
        self.keep_ns = int(keep_ns)
        self.interpolate = interpolate or _linear
        self.used_ns = None             # the latest buffered sample a use() read (None: none yet)

    def add(self, times_ns, rows) -> None:
        if len(times_ns) == 0:
            return
        cut = bisect.bisect_left(self.times, int(times_ns[0]))
        del self.times[cut:], self.rows[cut:]
        self.times.extend(int(t) for t in times_ns)
        self.rows.extend(np.asarray(r, float) for r in rows)

    def fresh(self, times_ns, rows):
        """The part of a chunk to splice. A chunk that starts after the buffered end is new throughout. One that
        overlaps the buffer may repeat buffered samples (a re-offer of what was published, e.g. the generator's after
        a stall, or a replay of the graph's own recent traffic): only what follows the samples it repeats is spliced
        (possibly nothing), so a repeat never deletes the samples buffered after it. A chunk whose first new sample
        is at or before ``used_ns`` (stamped in the past with other values, or from before the buffered span) is
        refused with InvalidInputError: its splice would rewrite samples the consumer read and delete the real
        samples after them. Samples after the buffered end rewrite nothing, even where the consumer's time is past
        them (it did not wait for this stream, or held its last sample): they are spliced."""
        times = np.asarray(times_ns, np.int64)
        if len(times) == 0 or not self.times or self.times[-1] < int(times[0]):
            return times_ns, rows
        rows = np.asarray(rows, float)
        k = 0                        # samples of the chunk that repeat buffered ones
        while k < len(times):
            i = bisect.bisect_left(self.times, int(times[k]))
            if i == len(self.times) or self.times[i] != times[k] or \
                    not _repeats(self.rows[i], rows[k]):
                break
            k += 1
        if self.used_ns is not None and k < len(times) and times[k] <= self.used_ns:
            raise InvalidInputError(f"a chunk from {times[0] * 1e-9:.6f} s would rewrite the sample at "
                                    f"{times[k] * 1e-9:.6f} s, already used (up to {self.used_ns * 1e-9:.6f} s): "
                                    "refused")
        return times[k:], rows[k:]

    @property
    def end(self) -> int | None:
        return self.times[-1] if self.times else None

    def covers(self, t_ns: int) -> bool:
        """A sample exists for t (exact or between two samples)."""
        return bool(self.times) and self.times[0] <= t_ns <= self.times[-1]

    def at(self, t_ns: int):
        i = bisect.bisect_left(self.times, t_ns)
        if i < len(self.times) and self.times[i] == t_ns:
            return self.rows[i]
        if i == 0 or i == len(self.times):
            return None
        t0, t1 = self.times[i - 1], self.times[i]
        return self.interpolate(self.rows[i - 1], self.rows[i], (t_ns - t0) / (t1 - t0), (t1 - t0) * 1e-9)

    def between(self, t_ns: int):
        """(row before, row after, w, h) of the two samples that ``at(t)`` interpolates between (w in (0, 1), h their
        spacing in s), or None: t on a sample, or outside the buffered span."""
        i = bisect.bisect_left(self.times, t_ns)
        if i == 0 or i == len(self.times) or self.times[i] == t_ns:
            return None
        t0, t1 = self.times[i - 1], self.times[i]
        return self.rows[i - 1], self.rows[i], (t_ns - t0) / (t1 - t0), (t1 - t0) * 1e-9

    def hold(self, t_ns: int, max_age_ns: int):
        row = self.at(t_ns)
        if row is None and self.times and 0 <= t_ns - self.times[-1] <= max_age_ns:
            row = self.rows[-1]
        return row

    def use(self, t_ns: int, max_age_ns: int):
        """``hold(t, max_age)`` for the consumer: the buffered samples the row comes from (the one at t, or the two
        around it, or the last one past the end) are used, final from now on (``fresh``)."""
        return self.use_between(t_ns, max_age_ns)[0]

    def use_between(self, t_ns: int, max_age_ns: int):
        """(``use(t, max_age)``, ``between(t)``) with one search of the buffer (the control loop's period)."""
        times = self.times
        n = len(times)
        i = bisect.bisect_left(times, t_ns)
        span = None
        if i < n and times[i] == t_ns:
            row = self.rows[i]
        elif 0 < i < n:
            t0, t1 = times[i - 1], times[i]
            r0, r1, w, h = self.rows[i - 1], self.rows[i], (t_ns - t0) / (t1 - t0), (t1 - t0) * 1e-9
            span = r0, r1, w, h
            row = self.interpolate(r0, r1, w, h)
        elif n and 0 <= t_ns - times[-1] <= max_age_ns:
            row = self.rows[-1]
            i = n - 1
        else:
            return None, None
        read = times[i]                 # the latest sample read (the one at t, after it, or the last)
        used = self.used_ns
        if used is None or read > used:
            self.used_ns = read
        return row, span

    def prune(self, now_ns: int) -> None:
        """Drop samples older than keep_ns before now (keeps one before, for interpolation)."""
        i = bisect.bisect_left(self.times, now_ns - self.keep_ns)
        if i > 1:
            del self.times[:i - 1], self.rows[:i - 1]

    def clear(self) -> None:
        self.times.clear()
        self.rows.clear()
        self.used_ns = None


def _linear(r0, r1, w, h):
    return (1 - w) * r0 + w * r1


def parse_goal(text: str) -> dict:
    """A goal message (YAML, a superset of JSON) -> trajectory spec mapping; InvalidInputError otherwise.

    Bounded before parsing (description.paths.bounded_yaml): at most MAX_GOAL_BYTES and MAX_GOAL_DEPTH nested flow
    collections.
    """
    if not isinstance(text, str):
        raise InvalidInputError(f"goal must be a string (YAML/JSON trajectory spec), got {type(text).__name__}")
    spec = bounded_yaml(text, "goal", MAX_GOAL_BYTES, MAX_GOAL_DEPTH)
    if not isinstance(spec, dict):
        raise InvalidInputError(f"goal must be a mapping (trajectory spec), got {type(spec).__name__}: "
                                f"{text[:200]!r}")
    return spec


@dataclass(frozen=True)
class Chunk:
    """Samples of the desired platform motion at absolute grid times (ns); ``forces``: the force references of a
    hybrid goal at the same times, (N, 2 task dim): F_d per task coordinate, then the selection (1.0: force
    controlled, 0.0: motion), or None (no hybrid goal: the force laws' own set-point applies)."""

    times_ns: np.ndarray
    positions: np.ndarray        # (N, 3)
    rotations: np.ndarray        # (N, 3, 3)
    twists: np.ndarray           # (N, task dim)
    accels: np.ndarray
    forces: np.ndarray | None = None

    def passed(self, now_ns: int) -> bool:
        """Every sample is before now: no consumer can use any of them (the loop's instant is past them). A stream
        stage that fell behind (real-time mode on an overloaded machine) drops such a chunk instead of working
        off a backlog of them, so its output is back at the present as soon as it catches up with its input; in
        lockstep the clock waits for the streams and no chunk the loop needs has passed."""
        return len(self.times_ns) > 0 and int(self.times_ns[-1]) < int(now_ns)


@dataclass(frozen=True)
class Motion:
    """A started motion: the trajectory and its start time on the grid (ns)."""

    trajectory: object
    start_ns: int
    approach_s: float            # the approach move in front of the goal's own trajectory

    @property
    def goal_start_ns(self) -> int:
        return self.start_ns + int(round(self.approach_s * 1e9))

    @property
    def end_ns(self) -> int:
        return self.start_ns + int(round(self.trajectory.duration * 1e9))


class GoalScheduler:
    """The goal's life cycle and chunking on the control grid (module docstring). Mutable: it is the
    state of one trajectory generator; every time is passed in.

    dt_ns: control period; chunk_n: samples per chunk; start_delay_ns: a started motion begins on the
    first grid time at or after now + start_delay; approach_speed (m/s), approach_rate (rad/s): peak
    speeds of the quintic approach move; lead_n: periods the published end stays ahead of now at least
    (default chunk_n: between one and two chunks ahead); approach_tolerance (m or rad): a goal that starts within
    it of the held pose in every actuated joint starts from there without an approach move (APPROACH_TOLERANCE).
    """

    def __init__(self, kin, hold: Pose, dt_ns: int, chunk_n: int, start_delay_ns: int,
                 approach_speed: float = 0.1, approach_rate: float = 0.5, lead_n: int | None = None,
                 approach_tolerance: float = APPROACH_TOLERANCE):
        lead_n = chunk_n if lead_n is None else lead_n
        if dt_ns <= 0 or chunk_n < 1 or start_delay_ns < 0 or lead_n < 1:
            raise InvalidInputError(f"dt_ns {dt_ns} > 0, chunk_n {chunk_n} >= 1, lead_n {lead_n} >= 1 and "
                                    f"start_delay_ns {start_delay_ns} >= 0 are required")
        if not (approach_speed > 0 and approach_rate > 0):
            raise InvalidInputError(f"approach_speed {approach_speed} m/s and approach_rate {approach_rate} "
                                    "rad/s must be > 0")
        if not approach_tolerance >= 0:
            raise InvalidInputError(f"approach_tolerance {approach_tolerance} must be >= 0 (m or rad)")
        self.kin = kin
        self.dt_ns, self.chunk_n, self.start_delay_ns = int(dt_ns), int(chunk_n), int(start_delay_ns)
        self.lead_n = int(lead_n)
        self.approach_speed, self.approach_rate = float(approach_speed), float(approach_rate)
        self.approach_tolerance = float(approach_tolerance)
        self.hold = hold                 # pose held when no motion runs
        self.loaded = None               # (trajectory, approach s, HybridTrajectory | None) accepted, not started
        self.active: Motion | None = None
        self._pending_start = False      # start() before the first clock: fixed at the first advance()
        self._not_before = None          # start()'s estimate of now (real time), ns
        self.published_until = None      # grid time of the last published sample (ns)
        self.clock = ClockGuard()        # the time believed (trajectory.trust)
        # the force references of the last hybrid goal begun: (HybridTrajectory, its goal start ns, held from ns or
        # None); they go on after its end (its last phase's) until another goal begins or a reset
        self.force_plan = None

    @property
    def now_ns(self) -> int | None:
        return self.clock.now_ns

    # ------------------------------------------------------------------ goals
    def load(self, spec: dict):
        """Build and check a goal from its spec; returns (trajectory, approach s). A running motion, an
        invalid spec or an unreachable motion raise (the robot keeps holding). A ``type: hybrid`` spec
        (spec.hybrid_from_spec) is its motion here, and its force references go with the chunks (Chunk.forces)
        from the goal's start on; during an approach move in front of it, no force-controlled direction."""
        from .paths import PointToPoint, Sequence
        from .spec import FIXED_START, check_reachable, hybrid_from_spec, trajectory_from_spec

        if self.active is not None or self._pending_start:
            raise InvalidInputError("a motion is running: goal rejected (stop it first)")
        kin = self.kin
        spec = dict(spec)
        if spec.get("start") is None and spec.get("type") not in FIXED_START:
            spec["start"] = kin.task.coordinates(self.hold).tolist()
        hybrid = hybrid_from_spec(kin, spec) if spec.get("type") == "hybrid" else None
        traj = trajectory_from_spec(kin, spec) if hybrid is None else hybrid.motion
        lin, ang = self._distance(kin.task.difference(traj.start_pose, self.hold))
        gap = float(np.abs(kin.actuated(traj.start_pose) - kin.actuated(self.hold)).max())
        approach = 0.0
        # within approach_tolerance the reference steps by at most that (a quantized measurement of the start):
        # a quintic approach over such a distance creeps at um/s, where the friction feedforward's exact sign
        # pushes with the full Coulomb force that the robot's friction near rest does not oppose (docs/hardware.md)
        if (lin > 1e-9 or ang > 1e-9) and gap > self.approach_tolerance:
            # quintic: peak speed 15/8 distance / T
            approach = max(0.2, 1.875 * lin / self.approach_speed, 1.875 * ang / self.approach_rate)
            traj = Sequence([PointToPoint(kin.task, self.hold, traj.start_pose, approach, "quintic"), traj])
        check_reachable(kin, traj)
        self.loaded = (traj, approach, hybrid)
        return traj, approach

    def _distance(self, d):
        ang = np.zeros(len(d), bool)
        ang[list(self.kin.task.angular)] = True
        return float(np.linalg.norm(d[~ang])), float(np.linalg.norm(d[ang]))

    def start(self, not_before_ns: int | None = None) -> Motion | None:
        """Start the loaded goal on the grid start_delay after now (at the first advance() if no time
        is known yet). Returns the motion (None: nothing loaded, or already running, or pending).

        ``not_before_ns``: a later estimate of now than the last clock seen, for a real-time caller whose time
        source ran on while it was busy (a goal's reachability check can take seconds of a loaded machine): the
        motion starts start_delay after it, not in the past of the loop. A lockstep caller passes None (its clock
        waits for it, and its runs stay deterministic)."""
        if self.loaded is None or self.active is not None or self._pending_start:
            return None
        self._not_before = None if not_before_ns is None else int(not_before_ns)
        if self.now_ns is None:
            self._pending_start = True
            return None
        return self._begin(self.now_ns)

    @property
    def pending(self) -> bool:
        """start() was called before the first clock: the motion begins at the first advance()."""
        return self._pending_start

    def _begin(self, now_ns) -> Motion:
        traj, approach, hybrid = self.loaded
        self.loaded = None
        self._pending_start = False
        if self._not_before is not None:
            now_ns = max(now_ns, self._not_before)
        self.active = Motion(traj, self.change_time(now_ns), approach)
        self.force_plan = None if hybrid is None else (hybrid, self.active.goal_start_ns, None)
        return self.active

    def change_time(self, now_ns: int) -> int:
        """When a change of the reference (start, stop) takes effect: the first grid time start_delay after
        now, and never inside what is already published (a consumer may have used it: the lockstep loop
        runs ahead of the clock the generator saw, up to the published end)."""
        t = self.next_grid(now_ns + self.start_delay_ns)
        return t if self.published_until is None else max(t, self.published_until + self.dt_ns)

    def stop(self) -> int | None:
        """Stop the motion: hold the desired pose of the grid time start_delay after now (a velocity
        step for the controller). Returns that time (ns), or None when idle (a loaded goal is dropped)."""
        self.loaded, self._pending_start = None, False
        if self.active is None:
            return None
        t_stop = self.change_time(self.now_ns or 0)
        self.hold = self.desired_at(t_stop)[0]
        self.active = None
        if self.force_plan is not None:            # the force of the stop's instant held with its pose
            self.force_plan = self.force_plan[:2] + (t_stop,)
        return t_stop

    def reset(self, hold: Pose) -> None:
        """Start over from ``hold`` (the measured pose after a hardware reset or a restart): no motion,
        nothing published, time unknown."""
        self.hold = hold
        self.loaded, self.active, self._pending_start = None, None, False
        self.published_until = None
        self.force_plan = None
        self.clock.reset()

    def next_grid(self, t_ns: int) -> int:
        return -(-int(t_ns) // self.dt_ns) * self.dt_ns

    # ------------------------------------------------------------------ time
    def advance(self, now_ns: int):
        """Time is now_ns: returns (chunks to publish, events). Events: 'started' (Motion) when a pending
        start got its time, 'finished' (Motion) when the motion ended. The time passes ``self.clock``
        (trajectory.trust.ClockGuard): a clock back to the start (a reset of the time source) restarts the
        publication from there; a refused time (back elsewhere, a jump ahead not followed) raises
        InvalidInputError and changes nothing; a jump the next clock confirms goes on from now, never in the past."""
        events = []
        now_ns = int(now_ns)
        if self.clock.admit(now_ns):
            self.published_until = None
        if self._pending_start:
            events.append(("started", self._begin(now_ns)))
        if self.published_until is None or self.published_until < now_ns - self.dt_ns:
            self.published_until = self.next_grid(now_ns) - self.dt_ns
        chunks = []
        while self.published_until - now_ns < self.lead_n * self.dt_ns:
            chunks.append(self.next_chunk())
        if self.active is not None and now_ns > self.active.end_ns:
            done = self.active
            self.hold = done.trajectory.end_pose
            self.active = None
            events.append(("finished", done))
        return chunks, events

    def reoffer(self) -> list:
        """The chunks from now again (a late-matched subscriber missed them; the splice makes it idempotent)."""
        if self.now_ns is None:
            return []
        self.published_until = self.next_grid(self.now_ns) - self.dt_ns
        return self.advance(self.now_ns)[0]

    def next_chunk(self) -> Chunk:
        t0 = self.published_until + self.dt_ns
        times = t0 + self.dt_ns * np.arange(self.chunk_n, dtype=np.int64)
        P, R, V, A = self.sample(times)
        self.published_until = int(times[-1])
        return Chunk(times, P, R, V, A, self.sample_forces(times))

    def sample_forces(self, times_ns) -> np.ndarray | None:
        """The force references at absolute grid times (Chunk.forces), None without a hybrid goal (load)."""
        if self.force_plan is None:
            return None
        hybrid, t0, held = self.force_plan
        dim = self.kin.task.dim
        out = np.zeros((len(times_ns), 2 * dim))
        for k, t in enumerate(times_ns):
            t = int(t) if held is None else min(int(t), held)
            if t >= t0:                            # before: the approach move, no force-controlled direction
                f, sel = hybrid.force((t - t0) * 1e-9)
                out[k, :dim], out[k, dim:] = f, sel
        return out

    # ------------------------------------------------------------------ sampling
    def sample(self, times_ns):
        """Positions, rotations, twists, accels at absolute grid times (the hold before and after a motion)."""
        n, dim = len(times_ns), self.kin.task.dim
        P = np.tile(self.hold.position, (n, 1))
        R = np.tile(self.hold.rotation, (n, 1, 1))
        V, A = np.zeros((n, dim)), np.zeros((n, dim))
        if self.active is not None:
            traj, t0 = self.active.trajectory, self.active.start_ns
            tau = (np.asarray(times_ns, np.int64) - t0) * 1e-9
            m = (tau >= 0) & (tau <= traj.duration)
            if m.any():
                P[m], R[m], V[m], A[m] = traj.sample_many(tau[m])
            after = tau > traj.duration
            if after.any():
                end = traj.end_pose
                P[after], R[after] = end.position, end.rotation
        return P, R, V, A

    def desired_at(self, t_ns):
        P, R, V, A = self.sample([t_ns])
        return Pose(P[0], R[0]), V[0], A[0]


class ReofferPolicy:
    """When the trajectory generator offers its chunks from now again (a consumer that matched late missed them, and
    sim time stands still waiting for it). Wall times in s are passed in (time.monotonic() in the node).

    In lockstep sim time also stands still while the graph computes, and on a loaded machine one clock step can take
    longer than REOFFER_AFTER by itself: a re-offer then makes inverse_kinematics and computed_force compute the whole
    lookahead again, which slows the next step, which draws the next re-offer (test_every_robot_runs_the_graph
    [lopes-task_idc] on 2 busy cores: 70 re-offers, 4400 IK solutions for 500 periods that need 700, 82 s of the
    test's 120). So sim time counts as stalled after standing for the larger of ``after_s`` and ``factor`` times the
    slowest of the last ``window`` clock steps (the graph's own pace), counted from the last step or re-offer.
    """

    def __init__(self, after_s: float = REOFFER_AFTER, factor: float = REOFFER_PACE_FACTOR,
                 window: int = REOFFER_WINDOW):
        if not (after_s > 0 and factor >= 0 and window >= 1):
            raise InvalidInputError(f"after_s {after_s} > 0, factor {factor} >= 0 and window {window} >= 1 are "
                                    "required")
        self.after_s, self.factor = float(after_s), float(factor)
        self._steps = collections.deque(maxlen=int(window))      # wall s between consecutive clock steps
        self._moved = None               # wall time of the last clock step
        self._since = None               # wall time from which standing counts (the last step or re-offer)

    def clock_step(self, wall_s: float) -> None:
        """Sim time moved (a /clock with another time) at ``wall_s``."""
        if self._moved is not None:
            self._steps.append(wall_s - self._moved)
        self._moved = self._since = float(wall_s)

    def patience(self) -> float:
        """s (wall) of standing sim time that count as a stall now."""
        return max(self.after_s, self.factor * max(self._steps, default=0.0))

    def due(self, wall_s: float) -> bool:
        """Sim time has stood still for the patience (and a clock was seen): re-offer now (the wait starts again)."""
        if self._since is None or wall_s - self._since < self.patience():
            return False
        self._since = float(wall_s)
        return True
