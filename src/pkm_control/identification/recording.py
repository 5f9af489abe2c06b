"""Recorded runs for the identification: rosbag2 <-> ``MeasuredRun`` (ROS-free, with the ``rosbags`` library).

``load_measured_run(path)`` reads any rosbag2 (sqlite3 or MCAP; ours from `pkm record` / `pkm bringup --record`, or
one that `ros2 bag record` made on a real machine) with the standard topics:

* ``/joint_states`` (sensor_msgs/JointState): position and effort of the actuated joints (any other joints in the
  message are ignored; the names are matched to the robot's actuated joints, the robot inferred as
  ``runs.load_bag`` does: joint_controller's /diagnostics, else /robot_description, else the one robot whose
  joints the names are);
  velocity too when every message has it;
* when the JointState messages carry no efforts: the forces of the command topic ``/<controller_name>/commands``
  (std_msgs/Float64MultiArray, one force per actuated joint in the robot's order, as ros2_control's
  forward_command_controller takes them), matched by the bag's record time: at each sample the last command
  recorded before it, the force the drives were applying then (zero-order hold, the convention of the
  simulated robot's own measured effort: the force applied over the period that ended at the sample). Samples
  before the first command are dropped.

Every control period's sample belongs in the bag: the identification filters and differentiates at the control
rate (`pkm record` makes joint_controller publish /joint_states every period while it records). A window (``start``,
``end``: the samples the identification is to use) with a gap is refused, the gap named (topic, start, length):
an interval between two samples longer than 1.5 of the topic's median periods, or a window end further than that
from the first or last sample inside it. A recording that lost samples cannot pass for one of the run.

``write_measured_run(path, run)`` writes a run as such a bag (one JointState per sample): tests and tools.

Bad input raises InvalidInputError: a bag without the needed topics (naming what is missing and what is there), a
NaN (naming the topic and message index), fewer than MIN_SAMPLES samples, joints missing.
"""

from __future__ import annotations

import numpy as np

from ..errors import InvalidInputError
from .runs import (MAX_SAMPLES, _kinematics, last_of_each_instant, message_counts, open_bag, read_joint_topic,
    recorded_robot)
from .data import MeasuredRun

JOINT_STATES = "/joint_states"
#: the actuator commands of a ros2_control forward_command_controller: /<controller_name>/commands
COMMANDS_SUFFIX = "/commands"
COMMANDS_TYPE = "std_msgs/msg/Float64MultiArray"
#: fewer samples can be neither filtered zero-phase (scipy's filtfilt pads 3 (order + 1) samples at each end:
#: 15 for a 4th-order Butterworth) nor differentiated twice with a margin
MIN_SAMPLES = 30
STORAGES = ("sqlite3", "mcap")


def load_measured_run(path, robot: str | None = None, variant: str | None = None, start: float | None = None,
                      end: float | None = None) -> MeasuredRun:
    """The measured actuated joints of a rosbag2 (module docstring); robot and variant as in ``runs.load_bag``;
    start, end: the window of the bag's clock (s; None: from the first sample, to the last), refused with a gap."""
    with open_bag(path) as (reader, source):
        counts = message_counts(reader)
        if not counts.get(JOINT_STATES):
            raise InvalidInputError(f"{source}: no message on {JOINT_STATES} (sensor_msgs/JointState: the measured "
                                    f"joints); its topics: {_listing(counts)}")
        if counts[JOINT_STATES] > MAX_SAMPLES:
            raise InvalidInputError(f"{source}: {counts[JOINT_STATES]} messages on {JOINT_STATES}, more than "
                                    f"{MAX_SAMPLES}")
        states = read_joint_topic(reader, JOINT_STATES, source)
        commands = None
        if states.efforts is None:
            commands = _read_commands(reader, counts, source)
        said = recorded_robot(reader, counts)
    if robot is None and said.get("robot"):
        robot, variant = said["robot"], said.get("variant")
    kin = _kinematics(robot, variant, states.names, f"{source} {JOINT_STATES}")
    act = list(kin.model.actuated_joints)
    missing = [n for n in act if n not in states.names]
    if missing:
        raise InvalidInputError(f"{source} {JOINT_STATES}: the actuated joints {missing} of '{kin.model.name}' are "
                                f"not in the messages (their joints: {states.names[:12]})")
    cols = [states.names.index(n) for n in act]
    keep = last_of_each_instant(states.t_ns)        # a sample offered again (lockstep start-up): its last record
    t, q = states.t_ns[keep] * 1e-9, states.positions[keep][:, cols]
    v = None if states.velocities is None else states.velocities[keep][:, cols]
    if commands is None:
        effort = states.efforts[keep][:, cols]
    else:
        topic, log_ns, forces = commands
        if forces.shape[1] != len(act):
            raise InvalidInputError(f"{source} {topic}: {forces.shape[1]} forces per command, robot "
                                    f"'{kin.model.name}' has {len(act)} actuated joints {act}")
        j = np.searchsorted(log_ns, states.log_ns[keep], side="right") - 1   # the last command recorded before
        first = int(np.searchsorted(j, 0))             # j is nondecreasing: samples before the first command
        if first == len(j):
            raise InvalidInputError(f"{source}: no {JOINT_STATES} sample was recorded after the first command on "
                                    f"{topic} (no force to pair a sample with)")
        t, q, effort = t[first:], q[first:], forces[j[first:]]
        v = None if v is None else v[first:]
    if len(t) > 1:
        inside = window(t, start, end, f"{source} {JOINT_STATES}")
        t, q, effort = t[inside], q[inside], effort[inside]
        v = None if v is None else v[inside]
        if start is not None or end is not None:
            source = f"{source} [{'' if start is None else start}, {'' if end is None else end}] s"
    if len(t) < MIN_SAMPLES:
        span = t[-1] - t[0] if len(t) else 0.0
        raise InvalidInputError(f"{source}: {len(t)} samples of the actuated joints ({span:.4g} s), too short a run: "
                                f"the identification needs at least {MIN_SAMPLES}")
    return MeasuredRun(kin.model.name, tuple(act), t, q, effort, v, source)


def window(t: np.ndarray, start: float | None, end: float | None, where: str) -> np.ndarray:
    """The indices of the sorted sample times t inside [start, end] (None: the first, the last sample);
    InvalidInputError naming the first gap there and how many there are (module docstring)."""
    dt = float(np.median(np.diff(t)))
    lo, hi = t[0] if start is None else start, t[-1] if end is None else end
    inside = np.flatnonzero((t >= lo) & (t <= hi))
    if not len(inside):
        raise InvalidInputError(f"{where}: no sample between {lo:.6g} and {hi:.6g} s (the samples cover "
                                f"{t[0]:.6g} to {t[-1]:.6g} s)")
    s = t[inside]
    found = [(lo, s[0] - lo)] if s[0] - lo > 1.5 * dt else []
    step = np.diff(s)
    found += [(s[i] + dt, step[i] - dt) for i in np.flatnonzero(step > 1.5 * dt)]
    if hi - s[-1] > 1.5 * dt:
        found.append((s[-1] + dt, hi - s[-1]))
    if found:
        first, length = found[0]
        raise InvalidInputError(
            f"{where}: a gap of {length:.6g} s (about {length / dt:.0f} samples at the period {dt:.6g} s) from "
            f"t = {first:.6g} s inside the window [{lo:.6g}, {hi:.6g}] s"
            + (f", and {len(found) - 1} more gaps" if len(found) > 1 else "")
            + ": the recording lost samples; record the run again, or choose a window without a gap")
    return inside


def _listing(counts: dict) -> str:
    return ", ".join(f"{t} ({n} messages)" for t, n in sorted(counts.items())) or "none"


def _read_commands(reader, counts, source):
    """(topic, record times ns (M,), forces (M, n)) of the bag's one command topic; InvalidInputError naming what
    is there when it has none (or several), a message that is not Float64MultiArray-shaped or not finite."""
    topics = sorted({c.topic for c in reader.connections
                     if c.topic.endswith(COMMANDS_SUFFIX) and c.msgtype == COMMANDS_TYPE and counts.get(c.topic)})
    if len(topics) != 1:
        raise InvalidInputError(
            f"{source}: {JOINT_STATES} has no efforts, and the forces must then come from one command topic "
            f"/<controller_name>{COMMANDS_SUFFIX} ({COMMANDS_TYPE}); "
            + (f"it has several: {topics}" if topics else f"it has none; its topics: {_listing(counts)}"))
    topic = topics[0]
    conns = [c for c in reader.connections if c.topic == topic]
    times, rows = [], []
    for k, (conn, log_ns, raw) in enumerate(reader.messages(connections=conns)):
        where = f"{source} {topic} message {k}"
        try:
            data = np.asarray(reader.deserialize(raw, conn.msgtype).data, float)
        except Exception as exc:    # a truncated message: rosbags raises its own and struct errors
            raise InvalidInputError(f"{where}: cannot be deserialized as {conn.msgtype}: {exc}") from exc
        if rows and len(data) != len(rows[0]):
            raise InvalidInputError(f"{where}: {len(data)} forces, the first message has {len(rows[0])}")
        if not np.isfinite(data).all():
            raise InvalidInputError(f"{where}: forces not finite: {data.tolist()[:8]}")
        times.append(log_ns)
        rows.append(data)
    return topic, np.array(times, np.int64), np.array(rows)


# ----------------------------------------------------------------------------- writing

def rosbag_qos(reliable: bool = True, transient_local: bool = False, depth: int = 10):
    """A QoS profile as a rosbag2's metadata offers it (rosbags' Qos): keep last ``depth``, the rest default."""
    from rosbags.interfaces import Qos, QosDurability, QosHistory, QosLiveliness, QosReliability, QosTime

    forever = QosTime(sec=0, nsec=0)
    return Qos(QosHistory.KEEP_LAST, depth, QosReliability.RELIABLE if reliable else QosReliability.BEST_EFFORT,
               QosDurability.TRANSIENT_LOCAL if transient_local else QosDurability.VOLATILE, forever, forever,
               QosLiveliness.AUTOMATIC, forever, False)


def bag_writer(path, storage: str = "sqlite3"):
    """An open rosbags Writer of a new rosbag2 (format version 9, as ROS 2 Kilted's ros2 bag writes) at ``path``;
    InvalidInputError for an unknown storage or a path that exists."""
    from rosbags.rosbag2 import StoragePlugin, Writer
    from rosbags.rosbag2.errors import WriterError

    if storage not in STORAGES:
        raise InvalidInputError(f"storage must be one of {STORAGES}, got {storage!r}")
    try:
        writer = Writer(path, version=9, storage_plugin=StoragePlugin[storage.upper()])
        writer.open()
    except WriterError as exc:
        raise InvalidInputError(f"bag '{path}': {exc}") from exc
    return writer


def typestore():
    """rosbags' message types of the ROS 2 distribution of the wheels (Kilted): the definitions a bag stores."""
    from rosbags.typesys import Stores, get_typestore

    return get_typestore(Stores.ROS2_KILTED)


def write_measured_run(path, run: MeasuredRun, storage: str = "sqlite3") -> None:
    """Write ``run`` as a rosbag2 (sqlite3 or mcap) of sensor_msgs/JointState on /joint_states, one message per
    sample (names, position, velocity when the run has it, effort; stamped and recorded at its time), offered with
    the QoS of the graph's /joint_states; ``load_measured_run`` reads back the same arrays."""
    from ..ros.qos import STREAM_DEPTH       # ROS-free: the QoS table

    ts = typestore()
    T = ts.types
    writer = bag_writer(path, storage)
    try:
        conn = writer.add_connection(JOINT_STATES, "sensor_msgs/msg/JointState", typestore=ts,
                                     offered_qos_profiles=[rosbag_qos(depth=STREAM_DEPTH)])
        empty = np.zeros(0)
        position, effort = (np.ascontiguousarray(a, float) for a in (run.position, run.effort))
        velocity = None if run.velocity is None else np.ascontiguousarray(run.velocity, float)
        for k, tk in enumerate(run.t):
            ns = int(round(float(tk) * 1e9))
            header = T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=ns // 10**9,
                                                                                     nanosec=ns % 10**9), frame_id="")
            msg = T["sensor_msgs/msg/JointState"](
                header=header, name=list(run.names), position=position[k],
                velocity=empty if velocity is None else velocity[k], effort=effort[k])
            writer.write(conn, ns, ts.serialize_cdr(msg, conn.msgtype))
    finally:
        writer.close()
