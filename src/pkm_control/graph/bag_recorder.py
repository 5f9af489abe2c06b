"""`pkm record` and `pkm bringup --record`: a run of the live graph into a rosbag2, written with ``rosbags``.

``BagRecorder`` subscribes each topic to record once a publisher of it appears, with ``raw=True``: the CDR bytes
rclpy receives are exactly what a rosbag2 stores, so nothing is deserialized and serialized again. Each
connection of the bag has its type's message definition (rosbags' Kilted typestore: ``ros2 bag info`` and MCAP
readers show the schemas) and the QoS its publishers offer; a message is recorded at its reception time (the
middleware's, wall clock), as ``ros2 bag record`` does. The header stamps are sim time (lockstep) or the
graph's clock.

Default topics: /joint_states, the actuator commands (every ``/<controller_name>/commands``,
std_msgs/Float64MultiArray, there with a robot behind topics or ros2_control), /joint_references,
/desired_joint_states, /feedforward, joint_controller's /diagnostics (the robot, variant and controller of
the run, about once a second) and /robot_description (the URDF, latched: it names the robot of a run too short
for a diagnostics message), and the trajectory generator's status (the goal's life cycle).

The control rate: /joint_states is joint_controller's state estimate at ``state_publish_rate`` (250 Hz by default,
100 Hz in real-time mode), while the identification needs every control period's sample. While it records,
`pkm record` sets joint_controller's state_publish_rate to 0 (every period; a run-time parameter) and puts the old
value back at the end; `pkm bringup --record` starts joint_controller with it. In lockstep `pkm record` also turns
joint_controller's wait_for_recorder on while it records (the loop keeps pace with the recorder's acknowledgements,
below), and off again. A robot behind topics (the
``hardware`` node, a ros2_control joint_state_broadcaster) publishes its own /joint_states, every period in
lockstep. In real time every period's publication costs the loop ~0.1 ms between periods: the summary counts the
periods without a sample.

Lockstep start (`pkm bringup --record`): with ``gated`` topics (the ground truth, the estimated joint states), the
recorder subscribes them only once it has received a /joint_states message: joint_controller's wait_for_recorder
waits for a subscriber on those, so the run starts only when /joint_states reaches the bag (joint_controller
offers the state at time 0 again every 0.1 s until then).

Durability: rosbags' sqlite3 writer holds every message in one transaction until the bag is closed; the recorder
commits it about once a second (COMMIT_PERIOD), so that a recorder killed before it closes the bag (SIGKILL of `pkm
bringup` or `pkm record`) leaves what it had committed, which ``identification.runs.reindex`` makes readable (it
writes the missing metadata.yaml when the bag is opened). An MCAP bag without its end is not readable.

One source per stream: every recorded topic but /diagnostics (a publisher per node) is bound to one publisher, as
the nodes' streams are (ros/peers.Sources; ``sources``: topic=node pairs, `pkm bringup --record` names the graph's
own, '' = the first publisher of each): a peer's messages (a second node of a graph's name, a replay) are not
recorded; they are counted on /diagnostics (the recorder's node: rejected_inputs, ``source <topic>`` with each
refused gid), logged at most once a second, and listed in the summary (``refused``).

Closing: ``close`` first drains the subscriptions (every message the middleware has already received is written:
a recorder that fell behind on a loaded machine catches up before the bag ends), then writes the bag's metadata.
`pkm record`'s drain cuts at the stop (what the graph sends after it is not recorded) but takes a stamped stream's
samples up to its newest stamp at the cut whenever they come: a reliable sample lost on the way comes again after
the samples behind it, and the drain waits for it (REPAIR_WAIT).
A reader's queue is bounded whatever its depth (Fast DDS: 5000 samples), so in lockstep joint_controller runs only
so far ahead of what its recorders acknowledged (wait_for_recorder, RECORDER_WINDOW), and `pkm bringup` lets the
bag work off its queue before it stops the nodes. The summary counts the samples the bag missed per stream
(graph.losses: /joint_states, and the ground truth at its rate); ``lost_samples`` turns them into one line (how
many, of which topics, where): `pkm bringup --record` and `pkm record` print it on stderr and exit non-zero, never a
silent gap.
"""

from __future__ import annotations

import json
import time
from functools import partial

import numpy as np

from ..identification.recording import bag_writer, rosbag_qos, typestore
from ..ros.qos import OBSERVATION_DEPTH
from ..ros.topology import GROUND_TRUTH_TOPIC
from .losses import loss_json, loss_line, slot_ns, stream_loss

JOINT_STATES = "/joint_states"
STATUS_TOPIC = "/trajectory_generator/status"
DEFAULT_TOPICS = (JOINT_STATES, "/joint_references", "/desired_joint_states", "/feedforward", "/diagnostics",
                  "/robot_description", STATUS_TOPIC)
#: recorded as they come from every publisher: a status per node
UNBOUND = ("/diagnostics",)
COMMANDS_TYPE = "std_msgs/msg/Float64MultiArray"
COMMIT_PERIOD = 1.0     # s (wall) between two commits of the sqlite3 bag's transaction
#: s (wall) a cut drain waits at most for the samples of a stamped stream that are missing below the cut (drain): a
#: reliable sample lost on the way comes again after the writer's next heartbeat (measured in a bag of an attached
#: `pkm record` under load: 0.06 s of /joint_states delivered ~0.5 s after the samples behind them)
REPAIR_WAIT = 5.0
CONTROLLER = "/joint_controller"


def _joint_state():
    from sensor_msgs.msg import JointState

    return JointState


def _joint_trajectory():
    from trajectory_msgs.msg import JointTrajectory

    return JointTrajectory


#: topic -> its message class (imported when first needed): the streams whose samples a recorder counts (losses)
STAMPED = {JOINT_STATES: _joint_state, GROUND_TRUTH_TOPIC: _joint_trajectory}


def is_commands_topic(name: str, types) -> bool:
    """``/<controller_name>/commands`` carrying Float64MultiArray: ros2_control's forward_command_controller."""
    parts = name.split("/")
    return len(parts) == 3 and parts[2] == "commands" and COMMANDS_TYPE in types


class BagRecorder:
    """Records topics of the graph on ``session`` (tools.Session) into a new rosbag2 at ``output`` (module
    docstring). topics: the names to record (None: DEFAULT_TOPICS and the command topics); gated: recorded only
    after the first /joint_states message. ``spin_once`` processes what arrived and subscribes new publishers'
    topics; ``close`` finishes the bag (also after Ctrl-C: the messages written so far are in it)."""

    def __init__(self, session, output, topics=None, storage: str = "sqlite3", gated=(), sources: str = ""):
        from ..ros.peers import Sources
        from ..ros.runtime import Diagnostics, ServiceGuard
        from .tools import ros_name

        self.session = session
        self.output = str(output)
        self.commands = topics is None
        wanted = DEFAULT_TOPICS if topics is None else topics
        self.topics = list(dict.fromkeys(ros_name("topic", t) for t in list(wanted) + list(gated)))
        self.gated = {ros_name("topic", t) for t in gated}
        self.writer = bag_writer(output, storage)
        self.typestore = typestore()
        self.connections = {}              # topic -> rosbags connection
        self.counts = {}                   # topic -> messages recorded
        self.skipped = {}                  # topic -> why it is not recorded
        self.stamps = []                   # /joint_states header stamps (ns), in arrival order
        self.truth_stamps = []             # the ground truth's sample times (ns), in arrival order
        self.status = {}                   # the generator's last status event
        self.statuses = []
        self._subscriptions = []
        self._closed = False
        self.received = 0                  # messages taken (all topics)
        self.listeners = {}                # topic -> f(message), called with each recorded message of STAMPED
        self._taken = {}                   # topic -> (monotonic s when the last one was taken, its reception ns)
        self._committed = (time.monotonic(), 0)     # (when, messages received) at the last commit (sqlite3)
        self._cut_ns = None                # drain(cut=True): messages received after this (ns) are not recorded,
        self._cut_stamps = {}              # but a stamped stream's samples up to its newest stamp then (ns) are
        self.slots = {}                    # topic -> its slot (ns, losses.slot_ns) where known: the drain's repair wait
        self.diag = Diagnostics(session.node)
        self.sources = Sources(session.node, self.diag, sources, ServiceGuard(session.node, self.diag))

    @property
    def ready(self) -> bool:
        """A /joint_states message has been recorded (or /joint_states is not recorded): the gated topics follow."""
        return JOINT_STATES not in self.topics or bool(self.stamps)

    @property
    def taken(self) -> int:
        """Messages taken from the middleware: recorded, and refused (another publisher's: a drain goes on past
        them)."""
        return self.received + sum(b.refused + b.unidentified for b in self.sources.bindings.values())

    @property
    def sim_time(self) -> float:
        """The newest /joint_states stamp recorded (s); 0 before the first."""
        return max(self.stamps) * 1e-9 if self.stamps else 0.0

    def spin_once(self, timeout: float = 0.05, budget: float = 0.05):
        """Wait up to ``timeout`` s for a message, then take the ones waiting (rclpy's spin_once takes one) for up
        to ``budget`` s (wall): at the control rate the messages come faster than one per call."""
        self.subscribe_new()
        executor = self.session.executor
        executor.spin_once(timeout_sec=timeout)
        deadline = time.monotonic() + budget
        while time.monotonic() < deadline:
            before = self.taken
            executor.spin_once(timeout_sec=0.0)
            if self.taken == before:
                break
        self.commit()

    def commit(self, force: bool = False):
        """sqlite3: commit what was written since the last commit, at most every COMMIT_PERIOD s unless ``force``
        (module docstring: durability). rosbags' writer has no flush of its own: its storage's connection."""
        conn = getattr(self.writer.storage, "conn", None)
        at, received = self._committed
        if conn is not None and self.received != received and (force or time.monotonic() - at >= COMMIT_PERIOD):
            conn.commit()
            self._committed = (time.monotonic(), self.received)

    def subscribe_new(self):
        """Subscribe the wanted topics that have a publisher now and are not recorded yet."""
        node = self.session.node
        for name, types in node.get_topic_names_and_types():
            if name in self.connections or name in self.skipped:
                continue
            if name in self.topics or (self.commands and is_commands_topic(name, types)):
                if name in self.gated and not self.ready:
                    continue
                infos = [i for i in node.get_publishers_info_by_topic(name) if i.node_name != node.get_name()]
                if infos:
                    self._subscribe(name, infos)

    def _subscribe(self, topic, infos):
        from rclpy.qos import DurabilityPolicy, ReliabilityPolicy

        from .tools import ToolFailure, message_class, reader_qos

        types = sorted({i.topic_type for i in infos})
        if len(types) != 1:
            self.skipped[topic] = f"published with {len(types)} types ({', '.join(types)})"
            return
        try:
            cls = message_class(types[0])
        except ToolFailure as exc:
            self.skipped[topic] = str(exc)
            return
        offered = [rosbag_qos(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE,
                              i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL, i.qos_profile.depth)
                   for i in infos]
        try:
            conn = self.writer.add_connection(topic, types[0], typestore=self.typestore,
                                              offered_qos_profiles=offered)
        except KeyError:                  # a type the typestore does not know: no definition to store
            self.skipped[topic] = f"type {types[0]} is not in the ROS 2 Kilted message definitions of rosbags"
            return
        self.connections[topic] = conn
        self.counts[topic] = 0
        node, profile = self.session.node, reader_qos(infos, OBSERVATION_DEPTH)
        if topic in UNBOUND:
            self._subscriptions.append(node.create_subscription(
                cls, topic, lambda raw, info, t=topic: self._on_message(t, raw, info), profile, raw=True))
        else:          # bound to one publisher (module docstring)
            self._subscriptions.append(self.sources.subscribe(
                cls, topic, lambda raw, info, t=topic: self._on_message(t, raw, info), profile, topic,
                create=partial(node.create_subscription, raw=True), with_info=True))

    def _on_message(self, topic, raw, info):
        self.received += 1
        received = int(info["received_timestamp"])
        self._taken[topic] = (time.monotonic(), received)
        if self._closed:
            return
        if topic in STAMPED:              # the streams whose samples are counted (summary)
            from rclpy.serialization import deserialize_message

            from ..ros.messages import to_ns

            msg = deserialize_message(raw, STAMPED[topic]())
            t0 = to_ns(msg.header.stamp)
            stamps = [t0] if topic == JOINT_STATES else [t0 + to_ns(p.time_from_start) for p in msg.points]
            # after a cut, a sample up to the stream's newest stamp at the cut fills a gap (a repaired one, late
            # on the wire); a later one is what the graph sends after the stop
            if self._cut_ns is not None and received > self._cut_ns and \
                    not (stamps and max(stamps) <= self._cut_stamps.get(topic, -1)):
                return
            self._write(topic, received, raw)
            (self.stamps if topic == JOINT_STATES else self.truth_stamps).extend(stamps)
            if topic in self.listeners:
                self.listeners[topic](msg)
            return
        if self._cut_ns is not None and received > self._cut_ns:
            return
        self._write(topic, received, raw)
        if topic == STATUS_TOPIC:
            from rclpy.serialization import deserialize_message
            from std_msgs.msg import String

            try:
                event = json.loads(deserialize_message(raw, String).data)
            except ValueError:
                return
            if isinstance(event, dict):
                self.status = event
                self.statuses.append(event)

    def _write(self, topic, received, raw):
        self.writer.write(self.connections[topic], received, raw)
        self.counts[topic] += 1

    def goal_done(self) -> bool:
        """The trajectory generator reported its goal finished (or rejected), and /joint_states has reached its
        end; a finished event from before the first recorded sample (an earlier goal, latched) does not count."""
        st = self.status
        if st.get("state") == "rejected":
            return True
        if st.get("state") != "finished" or not self.stamps:
            return False
        end = float(st.get("end", 0.0))
        return end * 1e9 >= min(self.stamps) and self.sim_time >= end

    def drain(self, abort=lambda: False, quiet: float = 0.2, cut: bool = False):
        """Take what the middleware has received so far: until a wait of ``quiet`` s (wall) brings nothing (the
        publishers stopped), or every topic has delivered a message received after the drain began or nothing for
        ``quiet`` s (a live graph: caught up), or abort() (`pkm bringup`: a second signal). ``cut``: the messages
        received after the drain began are not recorded (`pkm record` leaves a live graph: the recording ends at
        the stop, not with what the graph sends after it, e.g. at the state_publish_rate put back), except a stamped
        stream's samples up to its newest stamp then: the drain waits up to REPAIR_WAIT s for the ones missing below
        it (a stream whose slot is known, ``slots``; a reliable sample lost on the way comes again later)."""
        began_ns, executor = time.time_ns(), self.session.executor
        if cut and self._cut_ns is None:
            self._cut_ns = began_ns
            self._cut_stamps = {JOINT_STATES: max(self.stamps, default=-1),
                                GROUND_TRUTH_TOPIC: max(self.truth_stamps, default=-1)}
        repair_until = time.monotonic() + REPAIR_WAIT
        last = time.monotonic()             # when a message was last taken
        while not abort():
            before = self.taken
            executor.spin_once(timeout_sec=quiet)
            now = time.monotonic()
            if self.taken != before:
                last = now
            # not one spin without a message (the spin may have run a timer: Sources' release of held messages while
            # messages still wait), or every topic caught up
            done = now - last >= quiet or (self._taken and all(rx >= began_ns or now - at > quiet
                                                               for at, rx in self._taken.values()))
            if done and (now >= repair_until or not self._cut_holes()):
                return

    def _cut_holes(self) -> bool:
        """A stamped stream of known slot misses samples below its stamp at the cut (drain)."""
        streams = ((JOINT_STATES, self.stamps), (GROUND_TRUTH_TOPIC, self.truth_stamps))
        return any(stream_loss("cut", topic, stamps, self.slots[topic], None).missed > 0
                   for topic, stamps in streams if topic in self.slots and self._cut_stamps.get(topic, -1) >= 0
                   and stamps)

    def close(self, abort=lambda: False):
        """Drain (``drain``; after a cut one if there was one), then finish the bag: its metadata written, readable
        by any rosbag2 reader."""
        if not self._closed:
            try:
                self.drain(abort, cut=self._cut_ns is not None)
            finally:
                self._closed = True
                self.writer.close()

    def summary(self, control_rate: float | None = None, end: float | None = None,
                ground_truth_rate: float | None = None, state_rate: float = 0.0) -> dict:
        """Messages per topic, the topics not recorded and why, and the samples of the counted streams (/joint_states
        at ``state_rate``, and the ground truth when its rate is given: Hz, 0 = every period): how many distinct
        instants, their time span, the median period and (with the control rate) the slots without one
        (graph.losses) from the first sample to the last, or to ``end`` (s: the goal's end, when known) if that is
        later; ``lost_samples`` lists the streams that miss samples (losses.loss_json)."""
        out = {"bag": self.output, "messages": dict(sorted(self.counts.items())), "skipped": self.skipped,
               "not_published": [t for t in self.topics if t not in self.counts and t not in self.skipped],
               "refused": {t: b.summary() for t, b in self.sources.bindings.items() if b.refused}}
        losses = []
        streams = ((JOINT_STATES, self.stamps, state_rate), (GROUND_TRUTH_TOPIC, self.truth_stamps, ground_truth_rate))
        for topic, stamps, rate in streams:
            if not stamps or (topic != JOINT_STATES and rate is None):
                continue
            t = np.unique(np.array(stamps, np.int64)) * 1e-9
            s = {"samples": len(t), "span_s": float(t[-1] - t[0]),
                 "median_period_s": float(np.median(np.diff(t))) if len(t) > 1 else None}
            if control_rate:
                slot = slot_ns(rate, control_rate)
                loss = stream_loss(f"bag {self.output}", topic, stamps, slot,
                                   None if end is None else int(round(end * 1e9)))
                losses.append(loss)
                s.update(control_rate_hz=control_rate, rate_hz=1e9 / slot, missing_periods=loss.missed,
                         gaps=[list(g) for g in loss.gaps])
            out[topic] = s
        out["lost_samples"] = loss_json(losses)
        return out


def lost_samples(summary: dict) -> str | None:
    """One line saying how many samples of which topics a recording misses, and where (None when none): `pkm bringup
    --record` and `pkm record` print it and exit non-zero."""
    return loss_line(summary.get("lost_samples", []))


def format_summary(s: dict) -> str:
    width = max([len(t) for t in s["messages"]] + [10])
    lines = [f"bag {s['bag']}:"] + [f"  {t:{width}s} {n:8d} messages" for t, n in s["messages"].items()]
    lines += [f"  {t:{width}s} not recorded: {why}" for t, why in s["skipped"].items()]
    lines += [f"  {t:{width}s} refused messages of other publishers: bound to {why}"
              for t, why in s.get("refused", {}).items()]
    if s["not_published"]:
        lines.append(f"  not published while recording: {', '.join(s['not_published'])}")
    for topic in STAMPED:
        js = s.get(topic)
        if not js:
            continue
        line = f"{topic}: {js['samples']} samples over {js['span_s']:.4f} s"
        if js["median_period_s"]:
            line += f", median period {1e3 * js['median_period_s']:.4g} ms"
        if "missing_periods" in js:
            line += (f"; {js['rate_hz']:g} Hz: " + ("every one recorded" if js["missing_periods"] <= 0 else
                                                     f"{js['missing_periods']} without a sample"))
        lines.append(line)
    return "\n".join(lines)


class EveryPeriod:
    """joint_controller's state_publish_rate at 0 (every period) while recording and, in lockstep, its
    wait_for_recorder on (the loop keeps pace with the recorder's acknowledgements: a recorder that falls behind
    loses nothing, module docstring); the old values back on exit. ``control_rate`` is joint_controller's (None when
    there is none on the graph)."""

    def __init__(self, session, timeout: float, log):
        self.session, self.timeout, self.log = session, timeout, log
        self.control_rate = None
        self.ground_truth_rate = None      # joint_controller's (a simulated robot's ground truth), None without one
        self.state_rate = 0.0              # /joint_states' rate while recording (0: every period)
        self._old = {}                     # parameter -> its value before recording (as param_set takes it)

    def _set(self, name: str, text: str, old: str, failed: str) -> bool:
        """joint_controller's ``name`` set to ``text``, ``old`` put back on exit; False and ``failed`` said after the
        refusal if it fails. The old value is noted before the call: a Ctrl-C during it puts it back too."""
        from .tools import ToolFailure, param_set

        self._old[name] = old
        try:
            param_set(self.session, CONTROLLER, name, text, self.timeout)
            return True
        except ToolFailure as exc:
            del self._old[name]
            self.log(f"{exc}: {failed}")
            return False

    def __enter__(self):
        try:
            self._apply()
        except BaseException:      # Ctrl-C (Stopped) while the parameters are set: the ones set are put back
            self.__exit__()
            raise
        return self

    def _apply(self):
        from .tools import ToolFailure, param_get

        try:
            self.control_rate = float(param_get(self.session, CONTROLLER, "control_rate", self.timeout)[0])
            old = float(param_get(self.session, CONTROLLER, "state_publish_rate", self.timeout)[0])
            lockstep, paced = (param_get(self.session, CONTROLLER, key, self.timeout)[0]
                               for key in ("lockstep", "wait_for_recorder"))
        except ToolFailure as exc:
            self.log(f"{exc}: /joint_states is recorded at the rate it is published")
            return
        try:
            self.ground_truth_rate = float(param_get(self.session, CONTROLLER, "ground_truth_rate", self.timeout)[0])
        except ToolFailure:
            pass                          # no simulated robot in joint_controller: no ground truth of its to count
        if lockstep is True and paced is False and \
                self._set("wait_for_recorder", "true", "false", "a recorder that falls behind may lose samples"):
            self.log(f"{CONTROLLER} keeps pace with the recorder while it records (wait_for_recorder)")
        if old != 0.0:
            if self._set("state_publish_rate", "0.0", repr(old),
                         f"/joint_states is recorded at {old:g} Hz, not every control period"):
                self.log(f"{CONTROLLER} publishes /joint_states every period ({self.control_rate:g} Hz) while "
                         f"recording (state_publish_rate {old:g} Hz before)")
            else:
                self.state_rate = old

    def __exit__(self, *exc):
        from .tools import ToolFailure, param_set

        for name, text in self._old.items():
            try:
                param_set(self.session, CONTROLLER, name, text, self.timeout)
            except ToolFailure as e:
                self.log(f"{e}: {CONTROLLER} {name} is not back to {text}")
        return False


def record(session, output: str, log, topics=None, storage: str = "sqlite3", duration: float | None = None,
           until_done: bool = False, timeout: float = 10.0, sources: str = "") -> dict:
    """`pkm record` (cli): record into a new bag at ``output`` until ``duration`` s of /joint_states stamps, the
    goal's end (``until_done``) or Ctrl-C; returns the summary. ``topics``: instead of the default ones;
    ``timeout``: s (wall) to wait for joint_controller's parameter services; ``sources``: topic=node pairs binding
    the recorded topics (BagRecorder); ``log(line)``: what it says."""
    from ..progress import progress_bar

    topics = topics or None
    if until_done and topics is not None and STATUS_TOPIC not in topics:
        topics = list(topics) + [STATUS_TOPIC]
    from .signals import Stopped, signals_raise_stopped

    rec = BagRecorder(session, output, topics, storage, sources=sources)
    every = EveryPeriod(session, timeout, log)
    try:
        with signals_raise_stopped() as stop, every:
            if every.control_rate:           # the counted streams' slots: the cut drain's repair wait
                rec.slots[JOINT_STATES] = slot_ns(every.state_rate, every.control_rate)
                if every.ground_truth_rate is not None:
                    rec.slots[GROUND_TRUTH_TOPIC] = slot_ns(every.ground_truth_rate, every.control_rate)
            start = None
            bar = progress_bar(total=duration, unit="s", desc="recording",
                               bar_format=None if duration else "{desc}: {n:.3f} s {postfix}")
            try:
                while True:
                    stop.check()
                    rec.spin_once(0.05)
                    if rec.stamps and start is None:
                        start = min(rec.stamps) * 1e-9
                        log(f"recording {JOINT_STATES} from sim time {start:.4f} s")
                    elapsed = rec.sim_time - start if start is not None else 0.0
                    bar.set_postfix_str(" ".join(f"{t.rsplit('/', 1)[-1]}={n}" for t, n in rec.counts.items()),
                                        refresh=False)
                    bar.update((min(elapsed, duration) if duration else elapsed) - bar.n)  # its interval
                    if duration is not None and elapsed >= duration:
                        break
                    if until_done and rec.goal_done():
                        break
            except Stopped as exc:
                log(f"{exc}: closing the bag")
            finally:
                bar.close()
                rec.drain(cut=True)   # what was received until now, before the publish rate is put back
    except (KeyboardInterrupt, Stopped) as exc:   # anywhere until here (the rate is put back leaving ``every``)
        log(f"{exc if isinstance(exc, Stopped) else 'Ctrl-C'}: closing the bag")
    finally:
        rec.close()
    done = rec.status.get("state") == "finished" and until_done
    s = rec.summary(every.control_rate, float(rec.status["end"]) if done else None, every.ground_truth_rate,
                    every.state_rate)
    if until_done:
        s["goal_status"] = rec.status.get("state", "none seen")
    return s
