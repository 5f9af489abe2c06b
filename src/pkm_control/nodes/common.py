"""Shared plumbing of the rclpy nodes: settings, message conversion, validation, diagnostics.

Nothing here holds control logic: the nodes only turn messages and parameters
into calls of the ROS-free cores (trajectory/, control/, hardware/) and back.

Settings: every node takes ``robot``, ``variant``, ``controller`` and
``controller_config`` and resolves the controller YAML (config/controllers.yaml)
as ``defaults <- robots.<robot> <- controllers.<controller>``; each resolved key
is then declared as a ROS parameter with that value as its default, so a ROS
parameter (launch file, ``pkm bringup --set``) overrides the YAML.

Time: sim time is carried as integer nanoseconds (builtin_interfaces/Time),
so control-grid times k * dt compare exactly.

Validation: every incoming message goes through a ``parse_*`` function that
raises InvalidInputError (NaN/inf, wrong lengths, unknown joint names); the
node catches the project's exceptions in its callback, counts the rejection
in /diagnostics, logs it (throttled) and keeps its last safe output.
Every outgoing array goes through ``finite`` first: a node never publishes NaN.
"""

from __future__ import annotations

import bisect
import math
import os
import sys
import time
from dataclasses import dataclass

import numpy as np
import yaml

from ..errors import InvalidInputError, InvalidModelError, PkmError, check_number
from ..kinematics.task_space import Pose

#: keys whose values are floats (a YAML int such as 2000 must not make the ROS parameter an integer)
FLOAT_KEYS = {"control_rate", "state_timeout", "reference_timeout", "command_timeout", "lockstep_timeout",
              "lookahead", "start_delay", "display_rate", "measured_pose_rate", "diagnostics_period"}
GAIN_KEYS = ("kp", "kd")
MODES = ("pd", "pd_feedforward", "computed_torque")
FEEDFORWARD_MODELS = ("none", "rigid", "rigid+friction")
SAFE_BEHAVIOURS = ("hold", "zero")
PLATFORM_JOINT = "platform"      # the one "joint" of /platform_trajectory
LOG_THROTTLE = 1.0               # s between repeated warnings of one kind


# ----------------------------------------------------------------------------- settings

def default_controller_config() -> str:
    from ..paths import share_dir

    return str(share_dir() / "config" / "controllers.yaml")


def load_settings(robot: str, controller: str, controller_config: str = "", n_actuated: int | None = None) -> dict:
    """Resolved controller settings of one robot and named controller (see the module docstring).

    kp and kd are the gains of the mode's family (pd for pd / pd_feedforward); with
    ``n_actuated`` they are expanded to one float per actuated joint.
    """
    path = controller_config or default_controller_config()
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except OSError as exc:
        raise InvalidModelError(f"controller config {path!r} cannot be read: {exc}") from exc
    controllers = doc.get("controllers") or {}
    robots = doc.get("robots") or {}
    if controller not in controllers:
        raise InvalidInputError(f"controller '{controller}' is not in {path} (controllers: {list(controllers)})")
    if robot not in robots:
        raise InvalidInputError(f"robot '{robot}' has no section in {path} (robots: {list(robots)})")
    rob = dict(robots[robot] or {})
    gains = rob.pop("gains", {}) or {}
    out = dict(doc.get("defaults") or {})
    out.update(rob)
    out.update(controllers[controller] or {})
    out["controller"] = controller
    if out.get("mode") not in MODES:
        raise InvalidInputError(f"controller '{controller}': mode {out.get('mode')!r} is not one of {MODES}")
    if out.get("feedforward_model") not in FEEDFORWARD_MODELS:
        raise InvalidInputError(f"controller '{controller}': feedforward_model {out.get('feedforward_model')!r} "
                                f"is not one of {FEEDFORWARD_MODELS}")
    if out.get("safe_behaviour") not in SAFE_BEHAVIOURS:
        raise InvalidInputError(f"safe_behaviour {out.get('safe_behaviour')!r} is not one of {SAFE_BEHAVIOURS}")
    family = "computed_torque" if out["mode"] == "computed_torque" else "pd"
    if family not in gains or "pd" not in gains:
        raise InvalidInputError(f"robot '{robot}' in {path} needs gains.pd and gains.computed_torque")
    for key in GAIN_KEYS:
        out[key] = _gain(gains[family], key, n_actuated, robot)
        # the hold safe behaviour is a joint PD: always the pd gains
        out["hold_" + key] = _gain(gains["pd"], key, n_actuated, robot)
    for key in FLOAT_KEYS & out.keys():
        out[key] = float(out[key])
    if not out["control_rate"] > 0:
        raise InvalidInputError(f"control_rate = {out['control_rate']} Hz must be > 0")
    out["substeps"] = int(out.get("substeps", 1))
    out["controller_config"] = str(path)
    return out


def _number(key, value) -> float:
    return check_number(f"parameter '{key}'", value)


def _gain(section, key, n, robot):
    value = section.get(key) if isinstance(section, dict) else None
    if value is None:
        raise InvalidInputError(f"robot '{robot}': gain '{key}' missing in the controller config")
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    if n is not None:
        if arr.size == 1:
            arr = np.full(n, arr[0])
        elif arr.size != n:
            raise InvalidInputError(f"robot '{robot}': gain '{key}' has {arr.size} values, the robot has "
                                    f"{n} actuated joints")
    if not np.all(np.isfinite(arr)) or np.any(arr < 0):
        raise InvalidInputError(f"robot '{robot}': gain '{key}' = {arr.tolist()} must be finite and >= 0")
    return [float(x) for x in arr]


@dataclass(frozen=True)
class RobotContext:
    """The robot a node works on: kinematics, names and index maps (immutable)."""

    robot: str
    variant: str | None
    kin: object

    @property
    def model(self):
        return self.kin.model

    @property
    def task(self):
        return self.kin.task

    @property
    def joint_names(self):
        return list(self.kin.model.joint_names)

    @property
    def actuated_joints(self):
        return list(self.kin.model.actuated_joints)

    @property
    def n_actuated(self):
        return self.kin.model.n_actuated

    def home(self) -> Pose:
        return self.kin.task.pose(np.asarray(self.kin.model.config["home"], float))

    def initial(self, value) -> Pose:
        """The start pose of the setting ``initial_pose``: '' / [] = home, else task coordinates
        (checked: reachable and inside the joint limits, else UnreachablePoseError / JointLimitError)."""
        if value is None or (isinstance(value, str) and not value.strip()) or \
                (not isinstance(value, str) and len(value) == 0):
            return self.home()
        if isinstance(value, str):
            value = yaml.safe_load(value)
        from ..errors import check_vector

        pose = self.kin.task.pose(check_vector(f"initial_pose ({' '.join(self.kin.task.names)})", value,
                                               self.kin.task.dim))
        self.kin.inverse(pose)
        return pose

    def dynamics(self):
        from ..dynamics import robot_dynamics

        return robot_dynamics(self.robot, self.variant)


def robot_context(robot: str, variant: str | None) -> RobotContext:
    from ..kinematics import robot_kinematics

    return RobotContext(robot, variant or None, robot_kinematics(robot, variant or None))


def declare_settings(node, extra: dict | None = None):
    """Declare robot/variant/controller/controller_config, then every resolved setting.

    Returns (RobotContext, settings dict with the node's parameter values).
    """
    robot = node.declare_parameter("robot", "palida").value
    variant = node.declare_parameter("variant", "").value
    controller = node.declare_parameter("controller", "pd_feedforward").value
    config = node.declare_parameter("controller_config", "").value
    ctx = robot_context(robot, variant)
    settings = load_settings(robot, controller, config, ctx.n_actuated)
    settings.update(extra or {})
    from rcl_interfaces.msg import ParameterDescriptor

    # dynamic typing: `control_rate:=1000` (an integer) or `kp:=[1, 2, 3]` must not kill the node on a
    # type mismatch with the YAML default; the values are coerced below
    loose = ParameterDescriptor(dynamic_typing=True)
    for key, value in list(settings.items()):
        if key in ("controller", "controller_config"):
            continue
        settings[key] = node.declare_parameter(key, value, loose).value
        if key in FLOAT_KEYS or (isinstance(value, float) and isinstance(settings[key], int)
                                 and not isinstance(settings[key], bool)):
            settings[key] = _number(key, settings[key])
    settings.update(robot=robot, variant=variant)
    for key in ("kp", "kd", "hold_kp", "hold_kd"):
        if key in settings:
            settings[key] = _gain({key: settings[key]}, key, ctx.n_actuated, robot)
    return ctx, settings


# ----------------------------------------------------------------------------- time

def to_ns(stamp) -> int:
    """builtin_interfaces Time/Duration -> integer nanoseconds."""
    return int(stamp.sec) * 1_000_000_000 + int(stamp.nanosec)


def stamp_msg(ns: int, cls=None):
    from builtin_interfaces.msg import Time

    cls = cls or Time
    return cls(sec=int(ns // 1_000_000_000), nanosec=int(ns % 1_000_000_000))


def duration_msg(ns: int):
    from builtin_interfaces.msg import Duration

    return stamp_msg(ns, Duration)


def period_ns(rate_hz: float) -> int:
    return int(round(1e9 / rate_hz))


# ----------------------------------------------------------------------------- validation

def finite(name: str, values) -> np.ndarray:
    """values as a float array, or InvalidInputError if any entry is NaN or infinite."""
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        bad = np.flatnonzero(~np.isfinite(arr.ravel()))
        raise InvalidInputError(f"{name} is not finite ({bad.size} of {arr.size} entries, first at index "
                                f"{bad[0]}: {arr.ravel()[bad[0]]}; limit: finite)")
    return arr


def _vector(name, values, n):
    arr = finite(name, list(values))
    if arr.shape != (n,):
        raise InvalidInputError(f"{name} has {arr.size} entries, expected {n}")
    return arr


@dataclass(frozen=True)
class MeasuredState:
    time_ns: int
    position: np.ndarray         # actuated joints (model order)
    velocity: np.ndarray
    effort: np.ndarray | None


def parse_joint_state(msg, ctx: RobotContext) -> MeasuredState:
    """Actuated positions / velocities from a JointState naming some or all tree joints."""
    names = list(msg.name)
    n = len(names)
    if len(set(names)) != n:
        raise InvalidInputError(f"joint_states: duplicate joint names {names}")
    unknown = [x for x in names if x not in ctx.model.joint_index] if hasattr(ctx.model, "joint_index") \
        else [x for x in names if x not in ctx.joint_names]
    if unknown:
        raise InvalidInputError(f"joint_states: unknown joint names {unknown} (robot '{ctx.robot}')")
    if len(msg.position) != n or len(msg.velocity) != n:
        raise InvalidInputError(f"joint_states: {n} names but {len(msg.position)} positions and "
                                f"{len(msg.velocity)} velocities (expected {n} each)")
    if len(msg.effort) not in (0, n):
        raise InvalidInputError(f"joint_states: {len(msg.effort)} efforts for {n} joints")
    pos = finite("joint_states.position", msg.position)
    vel = finite("joint_states.velocity", msg.velocity)
    eff = finite("joint_states.effort", msg.effort) if len(msg.effort) else None
    index = {x: i for i, x in enumerate(names)}
    missing = [a for a in ctx.actuated_joints if a not in index]
    if missing:
        raise InvalidInputError(f"joint_states: actuated joints {missing} missing")
    sel = [index[a] for a in ctx.actuated_joints]
    return MeasuredState(to_ns(msg.header.stamp), pos[sel], vel[sel], None if eff is None else eff[sel])


def parse_commands(msg, n: int) -> np.ndarray:
    """Float64MultiArray of n actuator forces."""
    return _vector("commands", msg.data, n)


def pose_from_msg(p, q, task) -> Pose:
    """geometry Point + Quaternion -> Pose; the quaternion must have unit norm (1e-6)."""
    pos = finite("pose position", [p.x, p.y, p.z])
    quat = finite("pose orientation", [q.x, q.y, q.z, q.w])
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > 1e-6:
        raise InvalidInputError(f"pose orientation quaternion has norm {norm:.9g} (limit |norm - 1| <= 1e-6)")
    return Pose(pos, quat_to_matrix(quat / norm))


def quat_to_matrix(q) -> np.ndarray:
    x, y, z, w = q
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
                     [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
                     [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)]])


def matrix_to_quat(R) -> np.ndarray:
    """(x, y, z, w) with w >= 0 (Shepperd's method: the largest diagonal term is the pivot)."""
    R = np.asarray(R, float)
    tr = R[0, 0] + R[1, 1] + R[2, 2]
    if tr > 0:
        s = 2.0 * math.sqrt(tr + 1.0)
        q = [(R[2, 1] - R[1, 2]) / s, (R[0, 2] - R[2, 0]) / s, (R[1, 0] - R[0, 1]) / s, 0.25 * s]
    else:
        i = int(np.argmax(np.diag(R)))
        j, k = (i + 1) % 3, (i + 2) % 3
        s = 2.0 * math.sqrt(max(1.0 + R[i, i] - R[j, j] - R[k, k], 1e-300))
        q = [0.0, 0.0, 0.0, (R[k, j] - R[j, k]) / s]
        q[i] = 0.25 * s
        q[j] = (R[j, i] + R[i, j]) / s
        q[k] = (R[k, i] + R[i, k]) / s
    q = np.array(q)
    return q if q[3] >= 0 else -q


def task_from_spatial(task, linear, angular) -> np.ndarray:
    """Task velocity/acceleration from a physical (v, omega) pair (geometry Twist/Accel): S^T [v; w].

    S (TaskSpace.twist_map) has orthonormal columns, so S^T is its left inverse.
    """
    return task.twist_map().T @ np.concatenate([linear, angular])


def spatial_from_task(task, x) -> np.ndarray:
    return task.twist_map() @ np.asarray(x, float)


@dataclass(frozen=True)
class PlatformChunk:
    """A platform trajectory message: absolute times (ns) and the motion at each."""

    times_ns: np.ndarray
    poses: list
    twists: np.ndarray
    accels: np.ndarray


def parse_platform_trajectory(msg, ctx: RobotContext) -> PlatformChunk:
    """MultiDOFJointTrajectory with the one joint 'platform': poses, twists, accelerations."""
    if list(msg.joint_names) != [PLATFORM_JOINT]:
        raise InvalidInputError(f"platform_trajectory: joint_names {list(msg.joint_names)}, expected "
                                f"['{PLATFORM_JOINT}']")
    if not msg.points:
        raise InvalidInputError("platform_trajectory: no points")
    t0 = to_ns(msg.header.stamp)
    task = ctx.task
    times, poses, twists, accels = [], [], [], []
    zero = np.zeros(3)
    for k, pt in enumerate(msg.points):
        if len(pt.transforms) != 1 or len(pt.velocities) not in (0, 1) or len(pt.accelerations) not in (0, 1):
            raise InvalidInputError(f"platform_trajectory point {k}: {len(pt.transforms)} transforms, "
                                    f"{len(pt.velocities)} velocities, {len(pt.accelerations)} accelerations "
                                    f"(expected 1, 0-1, 0-1)")
        tr = pt.transforms[0]
        poses.append(pose_from_msg(tr.translation, tr.rotation, task))
        if pt.velocities:
            v = pt.velocities[0]
            tw = task_from_spatial(task, finite("twist", [v.linear.x, v.linear.y, v.linear.z]),
                                   finite("twist", [v.angular.x, v.angular.y, v.angular.z]))
        else:
            tw = task_from_spatial(task, zero, zero)
        if pt.accelerations:
            a = pt.accelerations[0]
            ac = task_from_spatial(task, finite("acceleration", [a.linear.x, a.linear.y, a.linear.z]),
                                   finite("acceleration", [a.angular.x, a.angular.y, a.angular.z]))
        else:
            ac = np.zeros(task.dim)
        times.append(t0 + to_ns(pt.time_from_start))
        twists.append(tw)
        accels.append(ac)
    times = np.array(times, dtype=np.int64)
    if np.any(np.diff(times) <= 0):
        raise InvalidInputError("platform_trajectory: point times are not strictly increasing")
    return PlatformChunk(times, poses, np.array(twists), np.array(accels))


def platform_trajectory_msg(t0_ns: int, frame: str, times_ns, poses, twists, accels, task):
    """MultiDOFJointTrajectory (joint 'platform') from absolute times and the motion at each."""
    from geometry_msgs.msg import Quaternion, Transform, Twist, Vector3
    from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

    msg = MultiDOFJointTrajectory()
    msg.header.stamp = stamp_msg(t0_ns)
    msg.header.frame_id = frame
    msg.joint_names = [PLATFORM_JOINT]
    for t, pose, tw, ac in zip(times_ns, poses, twists, accels):
        p = finite("platform position", pose.position)
        q = finite("platform orientation", matrix_to_quat(pose.rotation))
        v = finite("platform twist", spatial_from_task(task, tw))
        a = finite("platform acceleration", spatial_from_task(task, ac))
        pt = MultiDOFJointTrajectoryPoint()
        pt.transforms = [Transform(translation=Vector3(x=p[0], y=p[1], z=p[2]),
                                   rotation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))]
        pt.velocities = [Twist(linear=Vector3(x=v[0], y=v[1], z=v[2]), angular=Vector3(x=v[3], y=v[4], z=v[5]))]
        pt.accelerations = [Twist(linear=Vector3(x=a[0], y=a[1], z=a[2]),
                                  angular=Vector3(x=a[3], y=a[4], z=a[5]))]
        pt.time_from_start = duration_msg(int(t) - t0_ns)
        msg.points.append(pt)
    return msg


def pose_stamped_msg(t_ns: int, frame: str, pose: Pose):
    from geometry_msgs.msg import PoseStamped

    p = finite("pose position", pose.position)
    q = finite("pose orientation", matrix_to_quat(pose.rotation))
    msg = PoseStamped()
    msg.header.stamp = stamp_msg(t_ns)
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(x) for x in p)
    (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
     msg.pose.orientation.w) = (float(x) for x in q)
    return msg


@dataclass(frozen=True)
class JointChunk:
    """A JointTrajectory message on the actuated joints: absolute times and the requested fields."""

    times_ns: np.ndarray
    positions: np.ndarray | None
    velocities: np.ndarray | None
    accelerations: np.ndarray | None
    efforts: np.ndarray | None


def parse_joint_trajectory(msg, names, fields) -> JointChunk:
    """JointTrajectory on exactly ``names`` (any order); ``fields`` must be present in every point."""
    got = list(msg.joint_names)
    if sorted(got) != sorted(names) or len(got) != len(names):
        raise InvalidInputError(f"joint trajectory names {got}, expected {list(names)}")
    if not msg.points:
        raise InvalidInputError("joint trajectory: no points")
    order = [got.index(x) for x in names]
    n = len(names)
    t0 = to_ns(msg.header.stamp)
    out = {f: [] for f in ("positions", "velocities", "accelerations", "effort")}
    times = []
    for k, pt in enumerate(msg.points):
        for f in out:
            values = getattr(pt, f)
            if f in fields:
                arr = _vector(f"joint trajectory point {k} {f}", values, n)
                out[f].append(arr[order])
            elif len(values) not in (0, n):
                raise InvalidInputError(f"joint trajectory point {k}: {len(values)} {f} for {n} joints")
            elif len(values):
                finite(f"joint trajectory point {k} {f}", values)
        times.append(t0 + to_ns(pt.time_from_start))
    times = np.array(times, dtype=np.int64)
    if np.any(np.diff(times) <= 0):
        raise InvalidInputError("joint trajectory: point times are not strictly increasing")
    arr = {f: (np.array(v) if f in fields else None) for f, v in out.items()}
    return JointChunk(times, arr["positions"], arr["velocities"], arr["accelerations"], arr["effort"])


def joint_trajectory_msg(t0_ns: int, names, times_ns, positions=None, velocities=None, accelerations=None,
                         efforts=None):
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory()
    msg.header.stamp = stamp_msg(t0_ns)
    msg.joint_names = list(names)
    for k, t in enumerate(times_ns):
        pt = JointTrajectoryPoint()
        if positions is not None:
            pt.positions = finite("positions", positions[k]).tolist()
        if velocities is not None:
            pt.velocities = finite("velocities", velocities[k]).tolist()
        if accelerations is not None:
            pt.accelerations = finite("accelerations", accelerations[k]).tolist()
        if efforts is not None:
            pt.effort = finite("efforts", efforts[k]).tolist()
        pt.time_from_start = duration_msg(int(t) - t0_ns)
        msg.points.append(pt)
    return msg


def joint_state_msg(t_ns: int, names, position, velocity=None, effort=None):
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.header.stamp = stamp_msg(t_ns)
    msg.name = list(names)
    msg.position = finite("joint positions", position).tolist()
    if velocity is not None:
        msg.velocity = finite("joint velocities", velocity).tolist()
    if effort is not None:
        msg.effort = finite("joint efforts", effort).tolist()
    return msg


def commands_msg(tau):
    from std_msgs.msg import Float64MultiArray

    return Float64MultiArray(data=finite("actuator commands", tau).tolist())


# ----------------------------------------------------------------------------- buffers

class SampleBuffer:
    """Time-indexed samples (ns -> row of floats) with ros2_control splice semantics.

    A new chunk replaces every buffered sample at or after its first time (a newer
    trajectory overrides the rest of the older one). ``at(t)`` returns the sample at
    t: exact on the grid, linear interpolation between neighbours, None when t is
    outside the buffered span (not arrived yet, or pruned).
    """

    def __init__(self, keep_ns: int = 1_000_000_000):
        self.times: list[int] = []
        self.rows: list[np.ndarray] = []
        self.keep_ns = keep_ns

    def add(self, times_ns, rows) -> None:
        if len(times_ns) == 0:
            return
        cut = bisect.bisect_left(self.times, int(times_ns[0]))
        del self.times[cut:], self.rows[cut:]
        self.times.extend(int(t) for t in times_ns)
        self.rows.extend(np.asarray(r, float) for r in rows)

    @property
    def end(self) -> int | None:
        return self.times[-1] if self.times else None

    def at(self, t_ns: int):
        i = bisect.bisect_left(self.times, t_ns)
        if i < len(self.times) and self.times[i] == t_ns:
            return self.rows[i]
        if i == 0 or i == len(self.times):
            return None
        t0, t1 = self.times[i - 1], self.times[i]
        w = (t_ns - t0) / (t1 - t0)
        return (1 - w) * self.rows[i - 1] + w * self.rows[i]

    def prune(self, now_ns: int) -> None:
        """Drop samples older than keep_ns before now (keeps one before, for interpolation)."""
        i = bisect.bisect_left(self.times, now_ns - self.keep_ns)
        if i > 1:
            del self.times[:i - 1], self.rows[:i - 1]


# ----------------------------------------------------------------------------- diagnostics

class Diagnostics:
    """Counters of one node, published as diagnostic_msgs/DiagnosticArray on /diagnostics.

    rate: handled control steps (or messages) per wall second over the last period;
    deadline_misses, rejected_inputs, safe_behaviour (active or 'none'); extra key-values
    per node. Published on a wall timer (``period`` s) and on demand (``publish()``).
    """

    def __init__(self, node, period: float = 1.0):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.clock import Clock, ClockType

        self.node = node
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", 10)
        self.steps = 0
        self.rejected = 0
        self.deadline_misses = 0
        self.safe_behaviour = "none"
        self.last_reject = ""
        self.extra: dict = {}
        self._last = (time.monotonic(), 0)
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.timer = node.create_timer(period, self.publish, clock=self._wall)
        self._log_times: dict = {}

    def step(self):
        self.steps += 1

    def reject(self, what: str, exc: Exception) -> None:
        """Count a rejected input and log it (at most once per second per kind)."""
        self.rejected += 1
        self.last_reject = f"{what}: {exc}"
        self.warn(what, f"rejected {what}: {type(exc).__name__}: {exc}")

    def miss(self, what: str, message: str) -> None:
        self.deadline_misses += 1
        self.warn("miss:" + what, message)

    def warn(self, kind: str, message: str) -> None:
        now = time.monotonic()
        if now - self._log_times.get(kind, -1e9) >= LOG_THROTTLE:
            self._log_times[kind] = now
            self.node.get_logger().warning(message)

    def publish(self):
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        now = time.monotonic()
        t_last, steps_last = self._last
        rate = (self.steps - steps_last) / max(now - t_last, 1e-9)
        self._last = (now, self.steps)
        st = DiagnosticStatus()
        st.name = self.node.get_fully_qualified_name()
        st.hardware_id = str(self.extra.get("robot", ""))
        bad = self.safe_behaviour != "none" or self.rejected or self.deadline_misses
        st.level = DiagnosticStatus.WARN if bad else DiagnosticStatus.OK
        st.message = (f"safe behaviour '{self.safe_behaviour}' active" if self.safe_behaviour != "none"
                      else (f"last rejected input: {self.last_reject}" if self.rejected else "ok"))
        values = {"rate": f"{rate:.1f}", "steps": str(self.steps), "deadline_misses": str(self.deadline_misses),
                  "rejected_inputs": str(self.rejected), "safe_behaviour": self.safe_behaviour}
        values.update({k: str(v) for k, v in self.extra.items()})
        st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.status = [st]
        self.pub.publish(msg)
        return msg


def guarded(diag: Diagnostics, what: str):
    """Decorator for callbacks: a PkmError (bad input, unreachable, singular) is counted and logged,
    never raised into the executor; the node keeps its last safe output."""

    def wrap(fn):
        def cb(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except PkmError as exc:
                diag.reject(what, exc)
            except (ValueError, TypeError, IndexError, np.linalg.LinAlgError) as exc:
                # malformed data the parsers did not anticipate: still a rejected input
                diag.reject(what, exc)
            return None

        return cb

    return wrap


# ----------------------------------------------------------------------------- executables

def wants_help(argv) -> bool:
    """--help / -h before any --ros-args (rclpy is not initialized for it)."""
    args = list(argv)
    if "--ros-args" in args:
        args = args[:args.index("--ros-args")]
    return "--help" in args or "-h" in args


def run_node(make_node, doc: str, argv=None) -> int:
    """Entry point of an executable: --help, rclpy.init, spin, clean shutdown on Ctrl-C / SIGTERM."""
    import signal

    argv = list(sys.argv if argv is None else argv)
    if wants_help(argv[1:]):
        print(doc.strip())
        return 0
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor

    rclpy.init(args=argv)
    # SIGTERM (bringup stopping its children) ends the spin like Ctrl-C does
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    node = None
    code = 0
    try:
        node = make_node()
        ex = SingleThreadedExecutor()
        ex.add_node(node)
        ex.spin()
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except RuntimeError:
        # rclpy's SIGINT handler shuts the context down while the executor may be taking a message;
        # that take then fails inside rclpy: a normal shutdown, not an error of this node
        if rclpy.ok():
            raise
    except PkmError as exc:
        print(f"{os.path.basename(argv[0])}: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 2
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    return code


COMMON_PARAMS = """\
common parameters (ROS: --ros-args -p name:=value):
  robot               robot id (stewart, palida, lopes, delta, planar_redundant)   [palida]
  variant             robot variant ('' = the robot's default)                      ['']
  controller          named controller in the controller YAML (pd, pd_feedforward, cf_rb,
                      cf_rb_friction, computed_torque)                              [pd_feedforward]
  controller_config   controller YAML path ('' = <share>/config/controllers.yaml)
  use_sim_time        follow /clock (true for every node but hardware)
  any key of the controller YAML (control_rate, lockstep, lookahead, ...) overrides it.
  every node publishes diagnostic_msgs/DiagnosticArray on /diagnostics (1 Hz wall).
"""
