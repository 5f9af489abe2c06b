"""Message conversion: standard ROS 2 messages <-> the core's numpy arrays, with validation.

Every incoming message goes through a ``parse_*`` function that raises InvalidInputError (NaN/inf,
wrong lengths, unknown or duplicate joint names, times out of order); every outgoing array goes
through ``finite`` first, so a node never publishes NaN. Rotations use scipy's Rotation for batches
and pinocchio's (Eigen's) quaternion for one matrix (quaternions x, y, z, w as in geometry_msgs).
Time is carried as integer nanoseconds (builtin_interfaces/Time), so control-grid times k * dt
compare exactly.
"""

from __future__ import annotations

import array
from dataclasses import dataclass

import numpy as np
import pinocchio as pin
from scipy.spatial.transform import Rotation

from ..errors import InvalidInputError
from ..hardware.interface import JointMeasurement
from ..trajectory.streaming import Chunk

PLATFORM_JOINT = "platform"      # the one "joint" of /platform_trajectory
#: a trajectory chunk with more points than this is refused (the generator sends lookahead / dt ~ 100)
MAX_POINTS = 100_000


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
    if not np.isfinite(arr).all():
        bad = np.flatnonzero(~np.isfinite(arr.ravel()))
        raise InvalidInputError(f"{name} is not finite ({bad.size} of {arr.size} entries, first at index "
                                f"{bad[0]}: {arr.ravel()[bad[0]]}; limit: finite)")
    return arr


def _vector(name, values, n):
    arr = finite(name, list(values))
    if arr.shape != (n,):
        raise InvalidInputError(f"{name} has {arr.size} entries, expected {n}")
    return arr


def parse_joint_state(msg, joint_names, actuated) -> JointMeasurement:
    """The actuated joints of a JointState naming some or all tree joints (``joint_names``)."""
    names = list(msg.name)
    n = len(names)
    if len(set(names)) != n:
        raise InvalidInputError(f"joint_states: duplicate joint names {names}")
    known = set(joint_names)
    unknown = [x for x in names if x not in known]
    if unknown:
        raise InvalidInputError(f"joint_states: unknown joint names {unknown[:10]}")
    if len(msg.position) != n or len(msg.velocity) != n:
        raise InvalidInputError(f"joint_states: {n} names but {len(msg.position)} positions and "
                                f"{len(msg.velocity)} velocities (expected {n} each)")
    if len(msg.effort) not in (0, n):
        raise InvalidInputError(f"joint_states: {len(msg.effort)} efforts for {n} joints")
    index = {x: i for i, x in enumerate(names)}
    missing = [a for a in actuated if a not in index]
    if missing:
        raise InvalidInputError(f"joint_states: actuated joints {missing} missing")
    sel = [index[a] for a in actuated]
    pos = finite("joint_states.position", np.asarray(msg.position, float)[sel])
    vel = finite("joint_states.velocity", np.asarray(msg.velocity, float)[sel])
    eff = finite("joint_states.effort", np.asarray(msg.effort, float)[sel]) if len(msg.effort) \
        else np.zeros(len(sel))
    return JointMeasurement(to_ns(msg.header.stamp) * 1e-9, pos, vel, eff)


def parse_commands(msg, n: int) -> np.ndarray:
    """Float64MultiArray of n actuator commands."""
    return _vector("commands", msg.data, n)


def parse_joint_commands(msg, actuated) -> np.ndarray:
    """The actuator forces of a JointState command (topic_based_ros2_control's convention: ``name`` and ``effort``
    of every commanded joint, in any order), in ``actuated`` order."""
    names = list(msg.name)
    if len(set(names)) != len(names):
        raise InvalidInputError(f"joint commands: duplicate joint names {names[:10]}")
    if len(msg.effort) != len(names):
        raise InvalidInputError(f"joint commands: {len(names)} names but {len(msg.effort)} efforts")
    index = {x: i for i, x in enumerate(names)}
    missing = [a for a in actuated if a not in index]
    unknown = [x for x in names if x not in set(actuated)]
    if missing or unknown:
        raise InvalidInputError(f"joint commands: actuated joints {missing} missing, unknown joints {unknown[:10]}")
    return finite("joint commands.effort", np.asarray(msg.effort, float)[[index[a] for a in actuated]])


# ----------------------------------------------------------------------------- poses and twists

def quaternions(rotations) -> np.ndarray:
    """(N, 3, 3) or (3, 3) rotation matrices -> (x, y, z, w) with w >= 0. One matrix goes through pinocchio's
    Eigen quaternion (2 us; scipy's per-call overhead is ~70 us, too much for a control period), a batch
    through scipy's vectorized conversion."""
    R = np.asarray(rotations, float)
    q = pin.Quaternion(R).coeffs() if R.ndim == 2 else Rotation.from_matrix(R).as_quat()
    return np.where(q[..., 3:4] < 0, -q, q)


def rotations(quats) -> np.ndarray:
    """(N, 4) or (4,) unit quaternions (x, y, z, w; norm within 1e-6 of 1) -> rotation matrices."""
    q = finite("orientation quaternion", quats)
    norm = np.linalg.norm(q, axis=-1)
    if np.any(np.abs(norm - 1.0) > 1e-6):
        raise InvalidInputError(f"orientation quaternion has norm {np.ravel(norm)[np.argmax(np.abs(norm - 1))]:.9g} "
                                "(limit |norm - 1| <= 1e-6)")
    return Rotation.from_quat(q).as_matrix()


def task_from_spatial(task, v) -> np.ndarray:
    """Task velocities/accelerations from physical (v, omega) rows (geometry Twist/Accel): S^T [v; w].

    S (TaskSpace.twist_map) has orthonormal columns, so S^T is its left inverse.
    """
    return np.asarray(v, float) @ task.twist_map()


def spatial_from_task(task, x) -> np.ndarray:
    return np.asarray(x, float) @ task.twist_map().T


def parse_platform_trajectory(msg, task) -> Chunk:
    """MultiDOFJointTrajectory with the one joint 'platform': poses, twists (v, omega), accelerations."""
    if list(msg.joint_names) != [PLATFORM_JOINT]:
        raise InvalidInputError(f"platform_trajectory: joint_names {list(msg.joint_names)[:10]}, expected "
                                f"['{PLATFORM_JOINT}']")
    pts = msg.points
    if not pts or len(pts) > MAX_POINTS:
        raise InvalidInputError(f"platform_trajectory: {len(pts)} points (expected 1 to {MAX_POINTS})")
    n = len(pts)
    none = (0.0,) * 6
    rows = []                    # per point: position, quaternion, twist, acceleration (19 floats)
    rel = []
    for k, pt in enumerate(pts):
        tfs, vel, acc = pt.transforms, pt.velocities, pt.accelerations
        if len(tfs) != 1 or len(vel) > 1 or len(acc) > 1:
            raise InvalidInputError(f"platform_trajectory point {k}: {len(tfs)} transforms, "
                                    f"{len(vel)} velocities, {len(acc)} accelerations "
                                    f"(expected 1, 0-1, 0-1)")
        tr = tfs[0]
        p, r = tr.translation, tr.rotation
        if vel:
            a, b = vel[0].linear, vel[0].angular
            v = (a.x, a.y, a.z, b.x, b.y, b.z)
        else:
            v = none
        if acc:
            a, b = acc[0].linear, acc[0].angular
            w = (a.x, a.y, a.z, b.x, b.y, b.z)
        else:
            w = none
        rows.append((p.x, p.y, p.z, r.x, r.y, r.z, r.w) + v + w)
        rel.append(to_ns(pt.time_from_start))
    M = np.array(rows, float)
    P, Q, V, A = (np.ascontiguousarray(M[:, i:j]) for i, j in ((0, 3), (3, 7), (7, 13), (13, 19)))
    times = np.array(rel, np.int64) + to_ns(msg.header.stamp)
    finite("platform_trajectory positions", P)
    finite("platform_trajectory twists", V)
    finite("platform_trajectory accelerations", A)
    R = rotations(Q)
    if n > 1 and np.any(np.diff(times) <= 0):
        raise InvalidInputError("platform_trajectory: point times are not strictly increasing")
    return Chunk(times, P, R.reshape(n, 3, 3), task_from_spatial(task, V), task_from_spatial(task, A))


def platform_trajectory_msg(t0_ns: int, frame: str, times_ns, positions, rots, twists, accels, task):
    """MultiDOFJointTrajectory (joint 'platform') from absolute times and the motion at each. The values go into
    the nested messages' own default children (a message's constructor builds them anyway): no message is built
    only to be replaced."""
    from geometry_msgs.msg import Transform, Twist
    from trajectory_msgs.msg import MultiDOFJointTrajectory, MultiDOFJointTrajectoryPoint

    P = finite("platform positions", positions)
    Q = finite("platform orientations", quaternions(np.asarray(rots, float)))
    V = finite("platform twists", spatial_from_task(task, twists))
    A = finite("platform accelerations", spatial_from_task(task, accels))
    msg = MultiDOFJointTrajectory()
    msg.header.stamp = stamp_msg(t0_ns)
    msg.header.frame_id = frame
    msg.joint_names = [PLATFORM_JOINT]
    points = []
    rel = (np.asarray(times_ns, np.int64) - int(t0_ns)).tolist()
    for dt, p, q, v, a in zip(rel, P.tolist(), Q.tolist(), V.tolist(), A.tolist()):
        tr = Transform()
        x = tr.translation
        x.x, x.y, x.z = p
        x = tr.rotation
        x.x, x.y, x.z, x.w = q
        tw, ac = Twist(), Twist()
        x = tw.linear
        x.x, x.y, x.z = v[:3]
        x = tw.angular
        x.x, x.y, x.z = v[3:]
        x = ac.linear
        x.x, x.y, x.z = a[:3]
        x = ac.angular
        x.x, x.y, x.z = a[3:]
        pt = MultiDOFJointTrajectoryPoint(transforms=[tr], velocities=[tw], accelerations=[ac])
        x = pt.time_from_start
        x.sec, x.nanosec = divmod(dt, 1_000_000_000)
        points.append(pt)
    msg.points = points
    return msg


def pose_stamped_msg(t_ns: int, frame: str, pose):
    from geometry_msgs.msg import PoseStamped

    p = finite("pose position", pose.position)
    q = finite("pose orientation", quaternions(pose.rotation))
    msg = PoseStamped()
    msg.header.stamp = stamp_msg(t_ns)
    msg.header.frame_id = frame
    msg.pose.position.x, msg.pose.position.y, msg.pose.position.z = (float(x) for x in p)
    (msg.pose.orientation.x, msg.pose.orientation.y, msg.pose.orientation.z,
     msg.pose.orientation.w) = (float(x) for x in q)
    return msg


def transform_stamped_msg(t_ns: int, parent: str, child: str, pose):
    """geometry_msgs/TransformStamped of ``child`` in ``parent`` at a pose (the pose of the child's frame in the
    parent's, as TF takes it)."""
    from geometry_msgs.msg import TransformStamped

    p = finite("pose position", pose.position)
    q = finite("pose orientation", quaternions(pose.rotation))
    msg = TransformStamped()
    msg.header.stamp = stamp_msg(t_ns)
    msg.header.frame_id = parent
    msg.child_frame_id = child
    t, r = msg.transform.translation, msg.transform.rotation
    t.x, t.y, t.z = (float(x) for x in p)
    r.x, r.y, r.z, r.w = (float(x) for x in q)
    return msg


# ----------------------------------------------------------------------------- joint trajectories

@dataclass(frozen=True)
class JointChunk:
    """A JointTrajectory message on the requested joints: absolute times and the requested fields."""

    times_ns: np.ndarray
    positions: np.ndarray | None
    velocities: np.ndarray | None
    accelerations: np.ndarray | None
    efforts: np.ndarray | None


_FIELDS = ("positions", "velocities", "accelerations", "effort")


def parse_joint_trajectory(msg, names, fields) -> JointChunk:
    """JointTrajectory on exactly ``names`` (any order); ``fields`` must be present in every point."""
    got = list(msg.joint_names)
    if len(got) != len(names) or sorted(got) != sorted(names):
        raise InvalidInputError(f"joint trajectory names {got[:10]}, expected {list(names)}")
    pts = msg.points
    if not pts or len(pts) > MAX_POINTS:
        raise InvalidInputError(f"joint trajectory: {len(pts)} points (expected 1 to {MAX_POINTS})")
    order = [got.index(x) for x in names]
    n, m = len(names), len(pts)
    out = {}
    for f in _FIELDS:            # a field at a time: the points' float arrays joined in one buffer
        values = [getattr(pt, f) for pt in pts]
        allowed = (n,) if f in fields else (0, n)
        bad = next((k for k, v in enumerate(values) if len(v) not in allowed), None)
        if bad is not None:
            raise InvalidInputError(f"joint trajectory point {bad}: {len(values[bad])} {f} for {n} joints")
        if f in fields:
            rows = np.frombuffer(b"".join(values), float).reshape(m, n)
            out[f] = finite(f"joint trajectory {f}", rows)[:, order]
    t0 = to_ns(msg.header.stamp)
    times = np.fromiter((t0 + to_ns(pt.time_from_start) for pt in pts), np.int64, m)
    if m > 1 and np.any(np.diff(times) <= 0):
        raise InvalidInputError("joint trajectory: point times are not strictly increasing")
    return JointChunk(times, *(out.get(f) for f in _FIELDS))


def joint_trajectory_msg(t0_ns: int, names, times_ns, positions=None, velocities=None, accelerations=None,
                         efforts=None):
    """JointTrajectory from absolute times (``time_from_start`` relative to ``t0_ns``, the header stamp) and
    (points, joints) arrays of the fields given. Each array is checked once and copied into the points as
    slices of one flat array.array (no Python float per value)."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    msg = JointTrajectory()
    msg.header.stamp = stamp_msg(t0_ns)
    msg.joint_names = list(names)
    n = len(msg.joint_names)
    rel = (np.asarray(times_ns, np.int64) - int(t0_ns)).tolist()
    cols = []
    for f, a in zip(_FIELDS, (positions, velocities, accelerations, efforts)):
        if a is not None:
            arr = finite(f, a)
            if arr.shape != (len(rel), n):
                raise InvalidInputError(f"joint trajectory {f}: shape {arr.shape}, expected {(len(rel), n)}")
            cols.append((f, array.array("d", np.ascontiguousarray(arr).tobytes())))
    points = []
    for k, dt in enumerate(rel):
        pt = JointTrajectoryPoint(**{f: flat[k * n:(k + 1) * n] for f, flat in cols})
        d = pt.time_from_start
        d.sec, d.nanosec = divmod(dt, 1_000_000_000)
        points.append(pt)
    msg.points = points
    return msg


def joint_state_msg(t_ns: int, names, position=None, velocity=None, effort=None):
    """A JointState; the fields given (a command of topic_based_ros2_control's convention: effort only)."""
    from sensor_msgs.msg import JointState

    msg = JointState()
    msg.header.stamp = stamp_msg(t_ns)
    msg.name = list(names)
    if position is not None:
        msg.position = finite("joint positions", position).tolist()
    if velocity is not None:
        msg.velocity = finite("joint velocities", velocity).tolist()
    if effort is not None:
        msg.effort = finite("joint efforts", effort).tolist()
    return msg


#: the label of a Float64MultiArray command's one dimension that carries the stamp of the state it answers (ns),
#: ``actuators@<ns>``: ros2_control's forward_command_controller reads ``data`` only
COMMAND_LABEL = "actuators@"


def commands_msg(tau, t_ns: int | None = None):
    """Float64MultiArray of the actuator commands; with ``t_ns``, its layout names one dimension of them, labelled
    with the stamp of the state they answer (COMMAND_LABEL: a lockstep robot takes a re-sent copy without effect)."""
    from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

    data = finite("actuator commands", tau).tolist()
    if t_ns is None:
        return Float64MultiArray(data=data)
    dim = MultiArrayDimension(label=f"{COMMAND_LABEL}{int(t_ns)}", size=len(data), stride=len(data))
    return Float64MultiArray(layout=MultiArrayLayout(dim=[dim]), data=data)


def command_stamp(msg) -> int | None:
    """The stamp (ns) a Float64MultiArray command carries (commands_msg), None when it carries none."""
    dims = msg.layout.dim
    label = dims[0].label if len(dims) == 1 else ""
    digits = label[len(COMMAND_LABEL):] if label.startswith(COMMAND_LABEL) else ""
    return int(digits) if digits.isascii() and digits.isdigit() and len(digits) <= 20 else None


#: frame_id of /platform_wrench: the force/torque sensor's frame, platform axes at the tool point
#: (hardware/contact.py WrenchSensor; control/force.py WrenchMeasurement)
WRENCH_FRAME = "platform_tool"


def wrench_stamped_msg(t_ns: int, measured, frame: str = WRENCH_FRAME):
    """geometry_msgs/WrenchStamped of a force/torque sample (control/force.py WrenchMeasurement: F_e, what the
    platform applies to the environment, N and Nm in the sensor frame), stamped with its own time."""
    from geometry_msgs.msg import WrenchStamped

    w = finite("wrench", measured.wrench)
    msg = WrenchStamped()
    msg.header.stamp = stamp_msg(t_ns)
    msg.header.frame_id = frame
    msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z = (float(x) for x in w[:3])
    msg.wrench.torque.x, msg.wrench.torque.y, msg.wrench.torque.z = (float(x) for x in w[3:])
    return msg


def parse_wrench_stamped(msg, point):
    """A WrenchMeasurement of a geometry_msgs/WrenchStamped from /platform_wrench (``point``: the sensor's origin in
    the platform frame, the environment's tool_point); a non-finite value raises InvalidInputError."""
    from ..control.force import WrenchMeasurement

    f, m = msg.wrench.force, msg.wrench.torque
    w = finite("wrench", [f.x, f.y, f.z, m.x, m.y, m.z])
    return WrenchMeasurement(to_ns(msg.header.stamp) * 1e-9, w, np.asarray(point, float))


def force_references_msg(t0_ns: int, names, times_ns, forces):
    """/force_references (trajectory_msgs/JointTrajectory): the force references of a hybrid goal on the task
    coordinates ``names`` (one "joint" per task coordinate), ``forces`` (N, 2 dim) as streaming.Chunk.forces: each
    point's ``effort`` is F_d, its ``positions`` the selection (1.0 force-controlled, 0.0 motion). ``forces`` None:
    the end of the stream (no point; from ``t0_ns`` on the force laws' own set-point applies again)."""
    if forces is None:
        return joint_trajectory_msg(t0_ns, names, [])
    dim = len(names)
    forces = np.asarray(forces, float)
    return joint_trajectory_msg(t0_ns, names, times_ns, positions=forces[:, dim:], efforts=forces[:, :dim])


def parse_force_references(msg, names):
    """(times ns, F_d (N, dim), selection (N, dim) bools) of a /force_references chunk on the task coordinates
    ``names``, or (its stamp, None, None) for the end of the stream (no point). InvalidInputError names what is
    wrong (a selection other than 0 or 1, the names, non-finite values)."""
    if len(msg.points) == 0:
        got = list(msg.joint_names)
        if sorted(got) != sorted(names):
            raise InvalidInputError(f"force references names {got[:10]}, expected {list(names)}")
        return to_ns(msg.header.stamp), None, None
    c = parse_joint_trajectory(msg, names, ("positions", "effort"))
    if not np.all((c.positions == 0.0) | (c.positions == 1.0)):
        raise InvalidInputError("force references: the selection (positions) must be 0 or 1 per task coordinate")
    return c.times_ns, c.efforts, c.positions == 1.0
