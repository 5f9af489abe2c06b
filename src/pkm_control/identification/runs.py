"""Recorded runs: a rosbag2 or the demo's joints CSV as one object (ROS-free).

``load_run(path)`` returns a ``RecordedRun``: sample times (s), every tree joint's name (model order),
the measured position of every tree joint, the desired one where it was recorded, the actuated-joint
errors e = q_desired - q_measured (the sign of Abdellatif's Fig. 6, ``run_metrics``), and the
robot and controller when the recording says them.

Sources:

* rosbag2 (a bag directory, or its ``.db3`` / ``.mcap`` file), read with the ``rosbags`` library (no ROS
  install needed; it deserializes into its own message classes, whose fields have the ROS names). The
  measured robot is the simulated robot's ground truth (``/hardware/ground_truth/joint_trajectory``:
  JointTrajectory chunks of every joint, exact) when the bag has it, else the state estimator's
  ``/joint_states`` (sensor_msgs/JointState of every tree joint) or, with a robot behind topics,
  ``/estimated_joint_states``; the desired robot is ``/desired_joint_states`` (every tree joint, from the
  inverse kinematics node), linearly interpolated onto the measured times and held at its first / last
  sample outside its own time span. The robot, variant and controller are those joint_controller states in
  its ``/diagnostics`` when the bag has them; else the robot (and variant) of the bag's ``/robot_description``
  (std_msgs/String, the URDF that joint_controller and robot_state_publisher publish latched) when it is one of
  the shipped robots' (``recorded_robot``).
* the joints CSV that ``pkm demo`` writes per run (``write_joints_csv``): an optional first line
  ``# pkm_control run: robot=<id> variant=<name> controller=<name>``, a header ``t [s],q_<joint> [m|rad],
  ...,q_desired_<joint> [m|rad],...`` and one row per sample. Any subset of the tree joints that fixes the
  configuration may be given: every joint is kept as it is; with the platform joints the others come
  from the analytic inverse kinematics of the platform pose; with the actuated joints only, from the
  forward kinematics warm-started along the run (``control.estimator.StateEstimator``, as the state
  estimator of the control loop does).

Bad input (a missing file, a bag without the needed topics, a NaN row, mismatched sizes, times out of
order, an unknown joint) raises InvalidInputError naming the file, topic or column and the row.
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError, PkmError, excerpt
from ..kinematics.task_space import so3_log

#: samples a run may hold (a 500 s run at the 2 kHz control rate): a larger file is refused before it is read
MAX_SAMPLES = 1_000_000
#: topics of a bag holding every tree joint of the measured robot, the preferred first (module docstring)
MEASURED_TOPICS = ("/hardware/ground_truth/joint_trajectory", "/joint_states", "/estimated_joint_states")
DESIRED_TOPIC = "/desired_joint_states"
#: joint_controller's diagnostics name the robot, variant and controller of the run
DIAGNOSTICS_TOPIC = "/diagnostics"
#: the URDF (std_msgs/String, latched), recorded once: it names the robot when no diagnostics were recorded
DESCRIPTION_TOPIC = "/robot_description"
CSV_MAGIC = "# pkm_control run:"
_COLUMN = re.compile(r"^(q_desired|q)_(.+) \[(m|rad)\]$")


@dataclass(frozen=True)
class RecordedRun:
    """One recorded run (module docstring). Arrays are read-only; rows are samples in time order."""

    robot: str
    variant: str
    controller: str | None        # None when the recording does not say
    t: np.ndarray                 # (N,) s: sim time (bags) or time since the trajectory start (demo CSV)
    joint_names: tuple            # every tree joint, model order (kin.model.joint_names)
    q: np.ndarray                 # (N, nq) measured positions of every tree joint (m, rad)
    q_desired: np.ndarray | None  # (N, nq) desired positions on the same times, None when not recorded
    actuated_joints: tuple
    source: str                   # the file or bag it came from
    measured_from: str            # the topic (bag) or "csv"

    def __post_init__(self):
        for a in (self.t, self.q, self.q_desired):
            if a is not None:
                a.setflags(write=False)

    @property
    def kinematics(self):
        from ..kinematics import robot_kinematics

        return robot_kinematics(self.robot, self.variant)

    @property
    def errors(self) -> np.ndarray | None:
        """(N, n_a) e = q_desired - q_measured of the actuated joints (m, rad); None without a desired robot."""
        if self.q_desired is None:
            return None
        idx = self.kinematics.model.actuated_idx
        return self.q_desired[:, idx] - self.q[:, idx]


def load_run(path, robot: str | None = None, variant: str | None = None) -> RecordedRun:
    """A recorded run from a rosbag2 (directory, .db3, .mcap) or a joints CSV (module docstring).

    robot, variant: the robot when the recording does not name it; by default it is the one robot whose
    tree joints are the recorded names (an error when none or several fit).
    """
    p = _existing(path)
    if p.is_dir() or p.suffix in (".db3", ".mcap"):
        return load_bag(p, robot, variant)
    if p.suffix == ".csv":
        return load_csv(p, robot, variant)
    raise InvalidInputError(f"recorded run '{excerpt(str(path), 200)}': expected a rosbag2 (directory, .db3 or "
                            ".mcap) or a .csv file")


def _existing(path) -> Path:
    p = Path(path)
    if not p.exists():
        raise InvalidInputError(f"recorded run: no such file or directory: '{excerpt(str(path), 200)}'")
    return p


# ----------------------------------------------------------------------------- robot and joint tree

def _kinematics(robot, variant, names, source):
    """The kinematics of the named robot, or of the one robot whose tree has every recorded joint name."""
    from ..description.robots import robot_names, robot_variants
    from ..kinematics import robot_kinematics

    if robot is not None:
        kin = robot_kinematics(robot, variant)
        unknown = [n for n in names if n not in kin.model.joint_index]
        if unknown:
            raise InvalidInputError(f"{source}: joints {unknown[:5]} are not joints of robot '{robot}' "
                                    f"(variant '{kin.model.variant}'; its joints: {list(kin.model.joint_names)})")
        return kin
    fits = []
    for r in robot_names():
        for v in robot_variants(r):
            kin = robot_kinematics(r, v)
            if set(names) <= set(kin.model.joint_index):
                fits.append(kin)
    if len(fits) != 1:
        which = ", ".join(f"{k.model.name} (variant '{k.model.variant}')" for k in fits) or "no robot"
        raise InvalidInputError(f"{source}: the recorded joint names {list(names)[:8]}... fit {which}; "
                                "name the robot (and variant)")
    return fits[0]


def complete_tree(kin, names, positions, what: str = "positions") -> np.ndarray:
    """(N, nq) every tree joint (model order) from (N, k) positions of the joints ``names``.

    Given joints are kept. With every platform joint given, the others come from the analytic IK of the
    platform pose (``inverse_batch``); with the actuated joints only, from the forward kinematics
    warm-started at the previous sample (the first from the config's home and demo poses), as the state
    estimator does. Raises InvalidInputError when neither set is complete, or when the kinematics fail
    (naming the sample).
    """
    from ..control.estimator import StateEstimator

    model = kin.model
    names = list(names)
    positions = np.asarray(positions, float)
    col = {n: i for i, n in enumerate(names)}
    q = np.empty((len(positions), model.nq))
    if set(names) >= set(model.joint_names):
        return positions[:, [col[n] for n in model.joint_names]]
    if set(names) >= set(model.platform_joints):
        plat = positions[:, [col[n] for n in model.platform_joints]]
        poses = [kin.task.pose_from_platform_joints(x) for x in plat]
        q, ok = kin.inverse_batch(np.array([p.position for p in poses]), np.array([p.rotation for p in poses]))
        if not ok.all():
            k = int(np.flatnonzero(~ok)[0])
            raise InvalidInputError(f"{what}: the platform pose of sample {k} ({plat[k].tolist()}) is not reachable "
                                    f"by robot '{model.name}'")
    elif set(names) >= set(model.actuated_joints):
        qa = positions[:, [col[n] for n in model.actuated_joints]]
        est = StateEstimator(kin)
        guess = est.cold_starts["home"]
        zero = np.zeros(model.n_actuated)
        for k, x in enumerate(qa):
            try:
                e = est.estimate(x, zero, guess, joints=True)
            except PkmError as exc:
                raise InvalidInputError(f"{what}: forward kinematics of sample {k} failed: {exc}") from exc
            q[k], guess = e.q, e.pose
    else:
        missing = [n for n in model.actuated_joints if n not in col]
        raise InvalidInputError(f"{what}: neither every platform joint nor every actuated joint of '{model.name}' "
                                f"is recorded (missing actuated joints: {missing})")
    for n, i in col.items():
        q[:, model.joint_index[n]] = positions[:, i]
    return q


def _check_rows(what, t, q):
    """Finite values, strictly increasing times, at most MAX_SAMPLES rows; the message names the row."""
    bad = ~np.isfinite(q).all(axis=1) | ~np.isfinite(t)
    if bad.any():
        k = int(np.flatnonzero(bad)[0])
        raise InvalidInputError(f"{what}: sample {k} (t = {t[k]:.6g} s) is not finite: {q[k].tolist()[:8]} "
                                f"({int(bad.sum())} such rows)")
    if len(t) == 0:
        raise InvalidInputError(f"{what}: no samples")
    back = np.flatnonzero(np.diff(t) <= 0)
    if back.size:
        k = int(back[0]) + 1
        raise InvalidInputError(f"{what}: times not strictly increasing at sample {k} ({t[k - 1]:.9g} s, then "
                                f"{t[k]:.9g} s)")


def last_of_each_instant(t_ns: np.ndarray) -> np.ndarray:
    """Indices that keep one sample per time stamp (the last one recorded: a re-offer replaces it), in time order."""
    _, first_of_reversed = np.unique(t_ns[::-1], return_index=True)
    return len(t_ns) - 1 - first_of_reversed


# ----------------------------------------------------------------------------- rosbag2

@contextlib.contextmanager
def open_bag(path):
    """A rosbag2 (a bag directory, or its .db3 / .mcap file) opened with rosbags' AnyReader: yields (reader,
    source), source naming the bag for messages ("bag '<dir>'"); InvalidInputError when it is missing or no
    rosbag2."""
    from rosbags.highlevel import AnyReader
    from rosbags.typesys import Stores, get_typestore

    path = _existing(path)
    bag = path.parent if path.is_file() else path
    source = f"bag '{bag}'"
    try:
        reindex(bag)
        reader = AnyReader([bag], default_typestore=get_typestore(Stores.LATEST))
        reader.open()
    except Exception as exc:       # rosbags raises its own reader errors, and OS/format errors beneath them
        raise InvalidInputError(f"{source}: cannot be read as a rosbag2: {exc}") from exc
    try:
        yield reader, source
    finally:
        reader.close()


def reindex(bag: Path) -> bool:
    """Write the metadata.yaml of a sqlite3 rosbag2 that has none (its recorder was killed before it closed the bag:
    `ros2 bag reindex` does the same) from the database itself: its topics, and each one's message count and time
    span. What the recorder had committed is then readable (graph.bag_recorder commits about once a second).
    False when there is nothing to do (metadata there, or no single .db3)."""
    import sqlite3

    import yaml

    dbs = sorted(bag.glob("*.db3")) if bag.is_dir() else []
    if (bag / "metadata.yaml").exists() or len(dbs) != 1:
        return False
    con = sqlite3.connect(f"file:{dbs[0]}?mode=ro", uri=True)
    try:
        topics = con.execute("SELECT id, name, type, serialization_format, offered_qos_profiles, "
                             "type_description_hash FROM topics ORDER BY id").fetchall()
        stats = {tid: (n, lo, hi) for tid, n, lo, hi in con.execute(
            "SELECT topic_id, COUNT(*), MIN(timestamp), MAX(timestamp) FROM messages GROUP BY topic_id")}
    finally:
        con.close()
    count = sum(n for n, _, _ in stats.values())
    start = min((lo for _, lo, _ in stats.values()), default=0)
    duration = max((hi for _, _, hi in stats.values()), default=0) - start
    span = {"starting_time": {"nanoseconds_since_epoch": start}, "duration": {"nanoseconds": duration}}
    info = {"version": 9, "storage_identifier": "sqlite3", "relative_file_paths": [dbs[0].name], **span,
            "message_count": count,
            "topics_with_message_count": [
                {"topic_metadata": {"name": name, "type": kind, "serialization_format": fmt,
                                    "offered_qos_profiles": qos, "type_description_hash": digest},
                 "message_count": stats.get(tid, (0,))[0]} for tid, name, kind, fmt, qos, digest in topics],
            "compression_format": "", "compression_mode": "",
            "files": [{"path": dbs[0].name, **span, "message_count": count}],
            "custom_data": {"reindexed": "pkm_control: the recorder did not close the bag"}, "ros_distro": "rosbags"}
    (bag / "metadata.yaml").write_text(yaml.safe_dump({"rosbag2_bagfile_information": info}, sort_keys=False))
    return True


def message_counts(reader) -> dict:
    """topic -> messages in the bag (over all its connections)."""
    counts = {}
    for c in reader.connections:
        counts[c.topic] = counts.get(c.topic, 0) + c.msgcount
    return counts


def load_bag(path, robot: str | None = None, variant: str | None = None) -> RecordedRun:
    """A run from a rosbag2 (module docstring)."""
    with open_bag(path) as (reader, source):
        counts = message_counts(reader)
        measured = next((t for t in MEASURED_TOPICS if counts.get(t)), None)
        if measured is None:
            raise InvalidInputError(f"{source}: has no message on any of {', '.join(MEASURED_TOPICS)} (the measured "
                                    f"robot); its topics: {sorted(counts) or 'none'}")
        if counts[measured] > MAX_SAMPLES:
            raise InvalidInputError(f"{source}: {counts[measured]} messages on {measured}, more than {MAX_SAMPLES}")
        m = read_joint_topic(reader, measured, source)
        desired = read_joint_topic(reader, DESIRED_TOPIC, source) if counts.get(DESIRED_TOPIC) else None
        said = recorded_robot(reader, counts)
        bag = source[len("bag '"):-1]
    if robot is None and said.get("robot"):
        robot, variant = said["robot"], said.get("variant")
    kin = _kinematics(robot, variant, m.names, f"{source} {measured}")
    keep = last_of_each_instant(m.t_ns)
    t = m.t_ns[keep] * 1e-9
    q = complete_tree(kin, m.names, m.positions[keep], f"{source} {measured}")
    q_desired = None
    if desired is not None:
        keep = last_of_each_instant(desired.t_ns)
        d_q = complete_tree(kin, desired.names, desired.positions[keep], f"{source} {DESIRED_TOPIC}")
        q_desired = np.column_stack([np.interp(t, desired.t_ns[keep] * 1e-9, c) for c in d_q.T])
    controller = said.get("controller") if said.get("robot") == kin.model.name else None
    return RecordedRun(kin.model.name, kin.model.variant, controller or None, t, tuple(kin.model.joint_names), q,
                       q_desired, tuple(kin.model.actuated_joints), bag, measured)


def recorded_robot(reader, counts) -> dict:
    """What the bag says of its run: joint_controller's diagnostics (``controller_diagnostics``) when one names the
    robot, else ``described_robot``; {} when neither does."""
    said = controller_diagnostics(reader) if counts.get(DIAGNOSTICS_TOPIC) else {}
    if not said.get("robot") and counts.get(DESCRIPTION_TOPIC):
        said = described_robot(reader)
    return said


def described_robot(reader) -> dict:
    """{robot, variant} of the bag's last /robot_description when that URDF is a shipped robot's: its ``<robot
    name>`` is one, and it has one variant or the text is exactly one variant's (``robot_urdf``); else {}
    (a robot of one's own, an edited URDF of a robot with variants: the joint names or the caller name it)."""
    from xml.etree import ElementTree

    from ..description.robots import robot_names, robot_urdf, robot_variants

    conns = [c for c in reader.connections if c.topic == DESCRIPTION_TOPIC]
    urdf = None
    for conn, _, raw in reader.messages(connections=conns):
        try:
            urdf = reader.deserialize(raw, conn.msgtype).data
        except Exception:           # not a std_msgs/String: it does not name the robot
            continue
    try:
        name = ElementTree.fromstring(urdf).get("name") if isinstance(urdf, str) else None
    except ElementTree.ParseError:
        return {}
    if name not in robot_names():
        return {}
    variants = robot_variants(name)
    fits = [v for v in variants if robot_urdf(name, v) == urdf] if len(variants) > 1 else list(variants)
    return {"robot": name, "variant": fits[0]} if len(fits) == 1 else {}


def controller_diagnostics(reader) -> dict:
    """The key-values of joint_controller's first /diagnostics status (robot, variant, controller), or, when the
    bag has none of its (a short run: the nodes report about once a second), of the first status of another node
    that names the robot; {} if none does."""
    conns = [c for c in reader.connections if c.topic == DIAGNOSTICS_TOPIC]
    other = {}
    for conn, _, raw in reader.messages(connections=conns):
        try:
            msg = reader.deserialize(raw, conn.msgtype)
        except Exception:           # a foreign message on the topic: it does not name the run
            continue
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            if st.name.rstrip("/").endswith("joint_controller"):
                return values
            if not other and "robot" in values:
                other = values
    return other


class JointSamples(NamedTuple):
    """The samples of a JointState or ground-truth JointTrajectory topic, in time order (``read_joint_topic``)."""

    names: list                     # joint names, the first message's order (the columns)
    t_ns: np.ndarray                # (N,) int: the messages' stamps (header + time_from_start), ns
    positions: np.ndarray           # (N, k)
    velocities: np.ndarray | None   # (N, k) when every JointState message has them, else None
    efforts: np.ndarray | None      # (N, k) when every JointState message has them, else None
    log_ns: np.ndarray              # (N,) int: the bag's time of each sample's message (when it was recorded)


def read_joint_topic(reader, topic, source) -> JointSamples:
    """The samples of a JointState or ground-truth JointTrajectory topic (positions only for the latter).
    InvalidInputError naming the message for one that cannot be deserialized, has mismatched sizes, other joint
    names than the first, or a value that is not finite."""
    from ..ros.messages import parse_joint_trajectory, to_ns   # ROS-free (no rclpy import): message attributes only

    conns = [c for c in reader.connections if c.topic == topic]
    names, times, logs = None, [], []
    columns = {"position": [], "velocity": [], "effort": []}
    for k, (conn, log_ns, raw) in enumerate(reader.messages(connections=conns)):
        where = f"{source} {topic} message {k}"
        try:
            msg = reader.deserialize(raw, conn.msgtype)
        except Exception as exc:    # a truncated or foreign message: rosbags raises its own and struct errors
            raise InvalidInputError(f"{where}: cannot be deserialized as {conn.msgtype}: {exc}") from exc
        if conn.msgtype.endswith("JointTrajectory"):
            got = list(msg.joint_names)
            try:
                chunk = parse_joint_trajectory(msg, got, ("positions",))
            except InvalidInputError as exc:
                raise InvalidInputError(f"{where}: {exc}") from exc
            stamps, values = chunk.times_ns, {"position": chunk.positions, "velocity": None, "effort": None}
        elif conn.msgtype.endswith("JointState"):
            got = list(msg.name)
            values = {}
            for field in columns:
                v = np.asarray(getattr(msg, field), float).reshape(1, -1)
                if v.shape[1] not in ((len(got),) if field == "position" else (0, len(got))):
                    raise InvalidInputError(f"{where}: {v.shape[1]} {field}s for {len(got)} joint names")
                values[field] = v if v.shape[1] else None
            stamps = np.array([to_ns(msg.header.stamp)], np.int64)
        else:
            raise InvalidInputError(f"{where}: type {conn.msgtype}, expected sensor_msgs/msg/JointState or "
                                    "trajectory_msgs/msg/JointTrajectory")
        if names is None:
            names = got
            if len(set(names)) != len(names):
                raise InvalidInputError(f"{where}: duplicate joint names {names}")
        elif got != names:
            if sorted(got) != sorted(names):
                raise InvalidInputError(f"{where}: joint names {got[:8]} differ from the first message's {names[:8]}")
            cols = [got.index(n) for n in names]
            values = {f: None if v is None else v[:, cols] for f, v in values.items()}
        for field, v in values.items():
            if v is not None and not np.isfinite(v).all():
                j = int(np.flatnonzero(~np.isfinite(v).all(axis=1))[0])
                raise InvalidInputError(f"{where}" + (f" point {j}" if len(v) > 1 else "") +
                                        f" (t = {stamps[j] * 1e-9:.6f} s): {field} not finite: {v[j].tolist()[:8]}")
            columns[field].append(v)
        times.append(stamps)
        logs.append(np.full(len(stamps), log_ns, np.int64))
    t_ns = np.concatenate(times)
    order = np.argsort(t_ns, kind="stable")
    joined = {f: None if any(v is None for v in c) else np.concatenate(c)[order] for f, c in columns.items()}
    return JointSamples(names, t_ns[order], joined["position"], joined["velocity"], joined["effort"],
                        np.concatenate(logs)[order])


# ----------------------------------------------------------------------------- joints CSV

def write_joints_csv(path, kin, controller: str | None, t, names, q, q_desired=None) -> None:
    """The joints CSV of a run (module docstring): t (s), measured positions of the joints ``names``
    ((N, k), m or rad) and, when given, the desired ones; ``load_csv`` reads it back."""
    model = kin.model
    units = ["rad" if model.is_revolute(n) else "m" for n in names]
    columns = ["t [s]"] + [f"q_{n} [{u}]" for n, u in zip(names, units)]
    data = [np.asarray(t, float)[:, None], np.asarray(q, float)]
    if q_desired is not None:
        columns += [f"q_desired_{n} [{u}]" for n, u in zip(names, units)]
        data.append(np.asarray(q_desired, float))
    meta = f"{CSV_MAGIC} robot={model.name} variant={model.variant} controller={controller or ''}"
    np.savetxt(path, np.hstack(data), delimiter=",", fmt="%.12g", header=meta + "\n" + ",".join(columns),
               comments="")


def load_csv(path, robot: str | None = None, variant: str | None = None) -> RecordedRun:
    """A run from a joints CSV (module docstring); robot / variant override the file's own."""
    path = _existing(path)
    source = f"CSV '{path}'"
    try:
        with open(path) as f:
            header = f.readline().rstrip("\n")
            meta = {}
            if header.startswith(CSV_MAGIC):
                meta = dict(kv.split("=", 1) for kv in header[len(CSV_MAGIC):].split() if "=" in kv)
                header = f.readline().rstrip("\n")
            body = []
            for line in f:
                if line.strip():
                    body.append(line)
                if len(body) > MAX_SAMPLES:
                    raise InvalidInputError(f"{source}: more than {MAX_SAMPLES} samples")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"{source}: cannot be read: {exc}") from exc
    cols = [c.strip() for c in header.split(",")]
    if cols[0] != "t [s]":
        raise InvalidInputError(f"{source}: the header must start with 't [s]', got '{excerpt(header, 80)}'")
    if len(set(cols)) != len(cols):
        raise InvalidInputError(f"{source}: a column appears twice in the header")
    measured, desired = [], []              # (joint, column, unit)
    for i, c in enumerate(cols[1:], start=1):
        m = _COLUMN.match(c)
        if m is None:
            raise InvalidInputError(f"{source}: column {i} '{excerpt(c, 60)}' is not 'q_<joint> [m|rad]' or "
                                    "'q_desired_<joint> [m|rad]'")
        (measured if m.group(1) == "q" else desired).append((m.group(2), i, m.group(3)))
    data = np.empty((len(body), len(cols)))
    for k, line in enumerate(body):
        fields = line.split(",")
        if len(fields) != len(cols):
            raise InvalidInputError(f"{source}: sample {k} has {len(fields)} values, the header {len(cols)}")
        try:
            data[k] = [float(x) for x in fields]
        except ValueError as exc:
            raise InvalidInputError(f"{source}: sample {k}: {exc}") from exc
    t = data[:, 0]
    _check_rows(source, t, data[:, 1:])
    robot = robot or meta.get("robot") or None
    if variant is None and robot == meta.get("robot"):
        variant = meta.get("variant")
    kin = _kinematics(robot, variant, [n for n, _, _ in measured + desired], source)
    for n, _, unit in measured + desired:
        want = "rad" if kin.model.is_revolute(n) else "m"
        if unit != want:
            raise InvalidInputError(f"{source}: joint {n} is in {unit}, expected {want}")
    names = [n for n, _, _ in measured]
    q = complete_tree(kin, names, data[:, [i for _, i, _ in measured]], f"{source} measured")
    q_desired = None
    if desired:
        q_desired = complete_tree(kin, [n for n, _, _ in desired], data[:, [i for _, i, _ in desired]],
                                  f"{source} desired")
    return RecordedRun(kin.model.name, kin.model.variant, meta.get("controller") or None, t,
                       tuple(kin.model.joint_names), q, q_desired, tuple(kin.model.actuated_joints), str(path), "csv")


# ----------------------------------------------------------------------------- a run of the graph and its errors

@dataclass
class RunRecord:
    """What one run recorded: measured joint states and the feedforward the model computed."""

    name: str
    controller: str
    t: np.ndarray                     # (N,) sim time of each /joint_states
    q: np.ndarray                     # (N, n_a) measured actuated positions
    tau: np.ndarray                   # (N, n_a) applied actuator forces (JointState.effort)
    platform: np.ndarray              # (N, n_platform) measured platform-joint positions
    ff_t: np.ndarray = field(default_factory=lambda: np.zeros(0))       # feedforward sample times
    ff: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))    # (M, n_a) computed forces


def desired_tree(kin, trajectory, t, t0: float):
    """Desired positions of every tree joint and platform poses at the recorded times (trajectory starts at t0)."""
    P, R, V, A = trajectory.sample_many(np.clip(t - t0, 0.0, trajectory.duration))
    q, ok = kin.inverse_batch(P, R)
    if not ok.all():
        raise ValueError(f"desired trajectory unreachable at t = {t[np.flatnonzero(~ok)[0]]:.4f} s")
    return q, P, R


def desired_motion(kin, trajectory, t, t0: float):
    """Desired actuated positions and platform poses at the recorded times (trajectory starts at t0)."""
    q, P, R = desired_tree(kin, trajectory, t, t0)
    return q[:, kin.model.actuated_idx], P, R


def run_metrics(kin, trajectory, rec: RunRecord, t0: float) -> dict:
    """RMS and maximum errors per actuator and of the platform over the motion. InvalidInputError when no sample
    was recorded within it (a real-time run whose loop had no slack to publish its measurements)."""
    inside = (rec.t >= t0) & (rec.t <= t0 + trajectory.duration)
    if not inside.any():
        span = f"from {rec.t[0]:.3f} s to {rec.t[-1]:.3f} s" if len(rec.t) else "none at all"
        raise InvalidInputError(f"no sample of the run {rec.name!r} was recorded within its motion, {t0:.3f} s to "
                                f"{t0 + trajectory.duration:.3f} s ({len(rec.t)} samples recorded, {span}): "
                                "its tracking cannot be measured")
    t = rec.t[inside]
    q_d, P_d, R_d = desired_motion(kin, trajectory, t, t0)
    e = q_d - rec.q[inside]
    poses = [kin.task.pose_from_platform_joints(x) for x in rec.platform[inside]]
    pos_err = np.linalg.norm(P_d - np.array([p.position for p in poses]), axis=1)
    ori_err = np.array([np.linalg.norm(so3_log(Rd @ p.rotation.T)) for Rd, p in zip(R_d, poses)])
    return {
        "name": rec.name, "controller": rec.controller, "samples": int(inside.sum()),
        "actuator_rms": np.sqrt(np.mean(e ** 2, axis=0)).tolist(),
        "actuator_max": np.abs(e).max(axis=0).tolist(),
        "platform_position_rms": float(np.sqrt(np.mean(pos_err ** 2))),
        "platform_position_max": float(pos_err.max()),
        "platform_orientation_rms": float(np.sqrt(np.mean(ori_err ** 2))),
        "platform_orientation_max": float(ori_err.max()),
        "_error": e, "_t": t - t0,
    }
