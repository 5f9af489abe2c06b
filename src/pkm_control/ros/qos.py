"""The QoS of every topic of the graph, in one table (``TABLE``), each choice with its reason.

Profiles:
  stream       reliable, volatile, keep last STREAM_DEPTH: a stream whose every message is needed
               (a lost chunk or, in lockstep, a lost measurement or command stalls the loop). The
               depth is what a flood on the same topic must push through the queue before it evicts
               a real message: at 5 kHz of junk, STREAM_DEPTH lasts 0.2 s, twice joint_controller's
               longest callback (MAX_BURST lockstep periods, ~0.1 s). It covers a burst; a flood
               faster than the consumer takes messages (~4 000 small ones a second through
               rclpy's SingleThreadedExecutor here, ``pkm bench reject``) fills any depth.
  sensor       rclpy's sensor-data profile (best effort, volatile, keep last 5): freshest wins, a
               subscriber that falls behind skips to the newest sample instead of working off a backlog.
  latched      reliable, transient local, keep last ``depth``: state; a late joiner gets the last one(s).
  display      reliable, volatile, keep last 10: display and monitoring; the next message replaces a lost one.
  observation  reliable, volatile, keep last ``depth`` (deep): samples a recorder must not lose when it
               falls behind on a loaded machine.

Publishers are reliable throughout: a reliable writer matches reliable and best-effort readers alike
(RViz, robot_state_publisher and ros2_control's forward_command_controller subscribe reliable); a
reader that wants freshest-wins asks for best effort itself.

The limit: a keep-last queue is shared by every writer of its topic, so a peer that publishes on
the same topic faster than the consumer takes messages evicts real ones at any depth, and a
well-formed message from it is indistinguishable from the trusted producer's. The depths make a
flood of junk cost CPU, not real messages, while the consumer keeps up; on a domain you do not
trust, access control is the defence (SROS2, docs/security.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from .topology import GROUND_TRUTH_TOPIC

STREAM_DEPTH = 1000
OBSERVATION_DEPTH = 50_000    # recorded messages (ground truth: 250 s at 2 kHz in chunks of 10 samples)
FEEDFORWARD_HISTORY = 100     # /feedforward chunks (5 s at the default lookahead) kept for a late recorder
STATUS_HISTORY = 10           # goal status events kept for a late `pkm bringup`
COMMANDS = "/<controller_name>/commands"
ESTIMATES_TOPIC = "/joint_controller/parameter_estimates"
WRENCH_TOPIC = "/platform_wrench"
FORCE_REFERENCES_TOPIC = "/force_references"


@dataclass(frozen=True)
class TopicQoS:
    profile: str
    depth: int
    why: str


def _row(profile, why, depth=None):
    return TopicQoS(profile, {"stream": STREAM_DEPTH, "sensor": 5, "display": 10}.get(profile, depth), why)


#: (topic, end) -> TopicQoS; end is "pub", "sub", or "sub:<node>" for a consumer with needs of its own
TABLE = {
    ("/platform_trajectory", "pub"): _row("stream", "chunks ahead; a lost one stalls lockstep"),
    ("/platform_trajectory", "sub"): _row("stream", "IK, computed force: every chunk; a flood must not evict one"),
    ("/joint_references", "pub"): _row("stream", "chunks ahead; a lost one stalls lockstep"),
    ("/joint_references", "sub"): _row("stream", "the loop: every chunk; a flood must not evict one"),
    ("/feedforward", "pub"): _row("latched", "chunks ahead; the last ones kept for a recorder that joins late",
                                  FEEDFORWARD_HISTORY),
    ("/feedforward", "sub"): _row("stream", "the loop: every chunk; a flood must not evict one"),
    (FORCE_REFERENCES_TOPIC, "pub"): _row("stream", "a hybrid goal's force references, chunks ahead; a lost one "
                                                    "stalls lockstep"),
    (FORCE_REFERENCES_TOPIC, "sub"): _row("stream", "the loop: every chunk; a flood must not evict one"),
    ("/feedforward", "sub:recorder"): _row("latched", "the chunks published before it matched", FEEDFORWARD_HISTORY),
    ("/joint_states", "pub"): _row("observation", "the hardware node's measurement (one lockstep step each); "
                                                  "joint_controller's estimate, recorded every period: none lost "
                                                  "when a recorder falls behind", OBSERVATION_DEPTH),
    ("/joint_states", "sub"): _row("stream", "joint_controller (hardware: topics): one lockstep period per message"),
    ("/joint_states", "sub:inverse_kinematics"): _row("sensor", "the measured pose only: the freshest state wins"),
    ("/joint_states", "sub:viewer"): _row("sensor", "the browser view: the newest state wins"),
    ("/estimated_joint_states", "pub"): _row("observation", "recorded (hardware: topics); as /joint_states",
                                             OBSERVATION_DEPTH),
    ("/estimated_joint_states", "sub:recorder"): _row("observation", "no sample lost when the recorder falls "
                                                      "behind", OBSERVATION_DEPTH),
    (COMMANDS, "pub"): _row("stream", "one lockstep step each; ros2_control's forward_command_controller "
                                      "subscribes reliable"),
    (COMMANDS, "sub"): _row("stream", "hardware node: one lockstep step per command"),
    ("/clock", "pub"): _row("stream", "sim time from the loop"),
    ("/clock", "sub"): _row("stream", "paces the generator; in lockstep a lost clock stalls the streams"),
    ("/clock", "sub:stream_stage"): _row("sensor", "IK, computed force: the newest time only, which chunks the loop "
                                                   "has passed"),
    ("/trajectory_generator/goal", "pub"): _row("stream", "`pkm goal`: reliable, as the generator's reader"),
    ("/trajectory_generator/goal", "sub"): _row("stream", "a user's goal must outlive a flood of junk goals"),
    ("/trajectory_generator/status", "pub"): _row("latched", "the goal's life cycle for a late `pkm bringup`",
                                                  STATUS_HISTORY),
    ("/trajectory_generator/status", "sub"): _row("latched", "the events published before it matched",
                                                  STATUS_HISTORY),
    ("/platform_pose", "pub"): _row("latched", "the measured pose; the generator starts from the last one", 1),
    ("/platform_pose", "sub"): _row("latched", "the last measured pose, also one published before matching", 1),
    ("/desired_platform_pose", "pub"): _row("display", "RViz; the next message replaces a lost one"),
    ("/desired_joint_states", "pub"): _row("display", "robot_state_publisher (desired/)"),
    ("/desired_joint_states", "sub:viewer"): _row("sensor", "the browser view: the newest state wins"),
    ("/tf", "pub"): _row("display", "TF listeners (tf2_ros subscribes reliable, volatile); the next transform "
                                    "replaces a lost one"),
    ("/hardware/platform_pose", "pub"): _row("display", "plots and tests"),
    (GROUND_TRUTH_TOPIC, "pub"): _row("observation", "recorded chunks of samples; none lost when the recorder falls "
                                      "behind", OBSERVATION_DEPTH),
    (GROUND_TRUTH_TOPIC, "sub"): _row("observation", "the recorder", OBSERVATION_DEPTH),
    (WRENCH_TOPIC, "pub"): _row("stream", "the force/torque sensor (geometry_msgs/WrenchStamped), one sample per "
                                          "lockstep step from the hardware node"),
    (WRENCH_TOPIC, "sub:viewer"): _row("sensor", "the browser view: the newest contact force wins"),
    (WRENCH_TOPIC, "sub"): _row("stream", "joint_controller (hardware: topics, a force law): the wrench of each "
                                          "lockstep period"),
    (ESTIMATES_TOPIC, "pub"): _row("display", "adaptive IDC's estimates for plots; the next replaces a lost one"),
    ("/robot_description", "pub"): _row("latched", "the URDF once, for late joiners (recorders, ros2_control), as "
                                                    "robot_state_publisher offers it", 1),
    ("/diagnostics", "pub"): _row("display", "monitoring, 1 Hz per node"),
    ("/diagnostics", "sub"): _row("observation", "the recorder: every node's last figures", OBSERVATION_DEPTH),
}


def qos(topic: str, end: str):
    """The QoSProfile of one end of a topic (``TABLE``; the commands topic is ``COMMANDS``)."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy, qos_profile_sensor_data

    row = TABLE[(topic, end)]
    if row.profile == "sensor":
        return qos_profile_sensor_data
    durability = DurabilityPolicy.TRANSIENT_LOCAL if row.profile == "latched" else DurabilityPolicy.VOLATILE
    return QoSProfile(depth=row.depth, reliability=ReliabilityPolicy.RELIABLE, durability=durability)
