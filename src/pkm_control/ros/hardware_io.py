"""Hardware behind topics, both ways: the bridge a controller uses, and the simulated robot's own topics.

* ``TopicHardware``: the HardwareInterface of a robot that lives in another process (our
  ``hardware`` node, or a ros2_control controller manager), in one of two conventions
  (``TopicConvention``, parameter ``topic_convention``):
  - ``forward_command``: a joint_state_broadcaster and a forward_command_controller; the actuated joints
    from ``/joint_states``, the commands to ``/<controller_name>/commands`` (std_msgs/Float64MultiArray);
  - ``topic_based``: the topic_based_ros2_control plugin's JointState topics; the actuated joints from
    ``joint_states_topic`` (default /robot_joint_states), the commands in the ``effort`` field of a JointState
    (every actuated joint by name) on ``joint_commands_topic`` (default /robot_joint_command).
  Our ``hardware`` node takes the robot's side of either convention.
  The states (and the wrench) are bound to one publisher (the robot's: ros/peers.Sources) and their stamps pass a
  ``trajectory.trust.ClockGuard``: a stamp before the last one is refused (out of order), except 0 (the robot
  was reset), and so is one that jumps ahead by more than MAX_CLOCK_STEP_NS (a stamp in the future) unless the
  next one follows it; one with the last one's stamp is the robot re-sending it in lockstep (its answer, our
  command, was lost: ``on_repeat``, and ``resend`` sends the last command again); a stale one (older than
  state_timeout) engages the controller's safe behaviour. ``unmatched`` names the topics whose peer has
  not matched yet (a lockstep start waits for them: a command published before would be lost). A force law's
  F/T sensor comes on ``/platform_wrench`` (geometry_msgs/WrenchStamped) and rides in the measurement's
  ``sensors["wrench"]``; in lockstep a state waits for the wrench of its stamp.
* ``ClockPublisher``: ``/clock``, from the node that is the graph's time source (the one that hosts a
  simulated robot, or joint_controller in front of a ros2_control controller manager: the instants of its
  periods).
* ``SimulationTopics``: what a simulated robot publishes besides its measurement: its ground truth, every
  joint in chunks of samples on
  ``/hardware/ground_truth/joint_trajectory`` (trajectory_msgs/JointTrajectory: positions, velocities,
  effort, one point per sample) and the exact platform pose on ``/hardware/platform_pose`` (tests and
  plots, never the controller; the pose at the display rate of the estimated joint states).
* ``describe_plant``: the simulated robot's parameters and measurement stated at start-up (log, diagnostics).
* ``Topics``, ``Ros2Control``: the hardware kinds (hardware/plugin.py) of a robot behind topics: ``topics`` (our
  ``hardware`` node, the graph's clock source) and ``ros2_control`` (a controller manager; joint_controller is then
  the time source, and ``--stand-in`` runs our hardware node in its place).
"""

from __future__ import annotations

import dataclasses
from functools import partial
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError
from ..hardware.interface import CommandCheck, HardwareInterface
from ..hardware.plugin import HardwareHost, HardwarePlugin
from ..control.lockstep import unmatched
from ..control.settings import TOPIC_CONVENTIONS
from ..trajectory.trust import ClockGuard
from .messages import (command_stamp, commands_msg, joint_state_msg, joint_trajectory_msg, parse_commands,
    parse_joint_commands, parse_joint_state, parse_wrench_stamped, pose_stamped_msg, stamp_msg, to_ns)
from .topology import GROUND_TRUTH_TOPIC, robot_topics
from .qos import COMMANDS, WRENCH_TOPIC, qos
from ..control.laws import WRENCH


class TopicConvention(NamedTuple):
    """The topics of a robot behind topics, and how a command travels on them (module docstring)."""

    name: str                    # 'forward_command' | 'topic_based'
    states_topic: str            # sensor_msgs/JointState of the actuated joints
    commands_topic: str

    @classmethod
    def from_settings(cls, s: dict) -> "TopicConvention":
        name = s["topic_convention"]
        if name not in TOPIC_CONVENTIONS:
            raise InvalidInputError(f"topic_convention {name!r} is not one of {TOPIC_CONVENTIONS}")
        return cls(name, *robot_topics(s))

    @property
    def command_type(self):
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray

        return Float64MultiArray if self.name == "forward_command" else JointState

    def command_msg(self, t_ns: int, names, tau):
        """The actuator forces as this convention sends them, stamped with the state they answer."""
        return commands_msg(tau, t_ns) if self.name == "forward_command" else joint_state_msg(t_ns, names, effort=tau)

    def command_stamp(self, msg) -> int | None:
        """The stamp of the state a command answers (ns; None: a command stamped with none)."""
        return command_stamp(msg) if self.name == "forward_command" else to_ns(msg.header.stamp)

    def parse_command(self, msg, names) -> np.ndarray:
        """The actuator forces (``names`` order) of a command message of this convention."""
        return parse_commands(msg, len(names)) if self.name == "forward_command" else \
            parse_joint_commands(msg, names)


class TopicHardware(HardwareInterface):
    """A robot behind a TopicConvention's topics (module docstring)."""

    def __init__(self, node, ctx, convention: TopicConvention, sources, on_measurement=None, on_repeat=None,
                 wrench_point=None, lockstep: bool = True, robot: str = "the robot"):
        from sensor_msgs.msg import JointState

        self.ctx = ctx
        self.robot = robot               # what is at the other end of the topics (what a lockstep loop waits for)
        self.convention = convention
        self.actuated_names = tuple(ctx.actuated_joints)
        self.measurement = None
        self._check = CommandCheck(self.actuated_names)      # the limits are the robot's: it clips and reports
        self._on_measurement = on_measurement
        self._on_repeat = on_repeat
        self._last_command = None        # the message last sent (resend)
        # its time is the last state's stamp; the robot's reset restarts at exactly 0 (a reliable stream)
        self._stamps = ClockGuard(what="joint_states stamp", reset_window_ns=0)
        self._pub = node.create_publisher(convention.command_type, convention.commands_topic, qos(COMMANDS, "pub"))
        self._sub = sources.subscribe(JointState, convention.states_topic, self._on_state, qos("/joint_states", "sub"),
                                      "joint_states")
        # a force law's wrench (``wrench_point``: the sensor's origin in the platform frame; None: not read): the
        # F/T sensor's samples on /platform_wrench, carried as the measurement's sensors["wrench"]. Lockstep: a
        # state is handled once the wrench of its stamp is there too (either may come first); real time: the
        # newest sample (the controller's WrenchWatch checks its age)
        self.wrench_point, self._match = wrench_point, bool(lockstep)
        self.wrench = None
        self._wrench_ns = None
        self._waiting = None             # (measurement, stamp) of a state that waits for its wrench (lockstep)
        self._sub_wrench = None
        if wrench_point is not None:
            from geometry_msgs.msg import WrenchStamped

            self._sub_wrench = sources.subscribe(WrenchStamped, WRENCH_TOPIC, self._on_wrench, qos(WRENCH_TOPIC, "sub"),
                                                 "platform_wrench")

    @property
    def measurement_ns(self) -> int | None:
        """The stamp of the last state taken (ns; None before the first)."""
        return self._stamps.now_ns

    @measurement_ns.setter
    def measurement_ns(self, t_ns) -> None:
        self._stamps.now_ns = t_ns

    def _on_wrench(self, msg):
        self.wrench, self._wrench_ns = parse_wrench_stamped(msg, self.wrench_point), to_ns(msg.header.stamp)
        if self._waiting is not None and self._waiting[1] == self._wrench_ns:
            (meas, t), self._waiting = self._waiting, None
            self._accept(self._with_wrench(meas), t)

    def _with_wrench(self, meas):
        if self.wrench is None:
            return meas
        return dataclasses.replace(meas, sensors={**meas.sensors, WRENCH: self.wrench})

    def _on_state(self, msg):
        meas = parse_joint_state(msg, self.ctx.joint_names, self.ctx.actuated_joints)
        t = to_ns(msg.header.stamp)
        if self._waiting is not None and self._waiting[1] == t:
            return                       # re-sent while it waits for its wrench
        if self.measurement is not None and t == self.measurement_ns:
            last = self.measurement
            if not all(np.array_equal(a, b) for a, b in zip((meas.position, meas.velocity, meas.effort),
                                                               (last.position, last.velocity, last.effort))):
                raise InvalidInputError(f"joint_states stamp {t * 1e-9:.6f} s is the last one's with other values "
                                        "(a re-sent state is the same state)")
            if self._on_repeat is not None:  # the robot re-sent its state: it still waits for the answer
                self._on_repeat(t)
            return
        self._stamps.admit(t)            # out of order, or in the future: refused (nothing changes)
        if self.wrench_point is not None:
            if self._match and self._wrench_ns != t:
                self._waiting = (meas, t)    # handled when the wrench of its stamp comes (_on_wrench)
                return
            meas = self._with_wrench(meas)
        self._accept(meas, t)

    def _accept(self, meas, t):
        self.measurement = meas
        if self._on_measurement is not None:
            self._on_measurement(self.measurement_ns)

    def read(self):
        return self.measurement

    def write(self, command, time=None) -> None:
        command = self._check(command)       # NaN or the wrong size: InvalidInputError, nothing sent
        t_ns = self.measurement_ns if time is None else int(round(time * 1e9))
        self._last_command = self.convention.command_msg(t_ns, self.actuated_names, command)
        self._pub.publish(self._last_command)

    def resend(self) -> bool:
        """Publish the last command again (lockstep: the robot re-sent the state it answers); False if none."""
        if self._last_command is None:
            return False
        self._pub.publish(self._last_command)
        return True

    def unmatched(self) -> list[str]:
        """The topics of this convention whose peer (the robot) has not matched yet."""
        ends = {f"a subscriber on {self.convention.commands_topic}": self._pub.get_subscription_count(),
                f"a publisher on {self.convention.states_topic}": self._sub.get_publisher_count()}
        if self._sub_wrench is not None:
            ends[f"a publisher on {WRENCH_TOPIC}"] = self._sub_wrench.get_publisher_count()
        return unmatched(ends)


class ClockPublisher:
    """/clock of the graph's time source (module docstring)."""

    def __init__(self, node):
        from rosgraph_msgs.msg import Clock

        self._cls = Clock
        self._pub = node.create_publisher(Clock, "/clock", qos("/clock", "pub"))

    def publish(self, t_ns: int) -> None:
        self._pub.publish(self._cls(clock=stamp_msg(t_ns)))


class SimulationTopics:
    """The ground truth of a simulated robot (module docstring).

    The ground truth goes out in chunks: ``ground_truth`` adds one sample (every joint's position, velocity and
    effort at its sim time) to a buffer of ``chunk`` samples, sent as one trajectory_msgs/JointTrajectory (one
    point per sample, ``time_from_start`` relative to ``header.stamp``, the first sample's time) when it is
    full; ``flush`` sends a partial one (the owner calls it when its loop goes idle and before a reset, so no
    sample waits for samples that may never come)."""

    def __init__(self, node, names, chunk: int = 1, frame: str = "base_link"):
        from geometry_msgs.msg import PoseStamped
        from trajectory_msgs.msg import JointTrajectory

        self.frame = frame
        self.names = list(names)
        self.pub_truth = node.create_publisher(JointTrajectory, GROUND_TRUTH_TOPIC, qos(GROUND_TRUTH_TOPIC, "pub"))
        self.pub_pose = node.create_publisher(PoseStamped, "/hardware/platform_pose",
                                              qos("/hardware/platform_pose", "pub"))
        self.chunk = int(chunk)
        n = len(self.names)
        self._t = np.zeros(self.chunk, np.int64)      # preallocated: a sample is three row copies
        self._q, self._v, self._e = (np.zeros((self.chunk, n)) for _ in range(3))
        self.pending = 0                              # samples buffered, not yet sent

    def ground_truth(self, t_ns: int, state, pose: bool = True, flush: bool = False) -> None:
        """One sample of every joint (sent with the chunk it completes, or now with ``flush``); with ``pose`` also
        the platform pose (a display topic: the joint states carry it too)."""
        k = self.pending
        self._t[k] = t_ns
        self._q[k], self._v[k], self._e[k] = state.position, state.velocity, state.effort
        self.pending = k + 1
        if flush or self.pending == self.chunk:
            self.flush()
        if pose and self.pub_pose.get_subscription_count():      # a display topic: built only for a reader
            self.pub_pose.publish(pose_stamped_msg(t_ns, self.frame, state.platform_pose))

    def flush(self) -> None:
        """Send the buffered samples (if any) as one JointTrajectory."""
        m = self.pending
        if m == 0:
            return
        self.pending = 0
        t = self._t[:m]
        self.pub_truth.publish(joint_trajectory_msg(int(t[0]), self.names, t, self._q[:m], self._v[:m],
                                                    efforts=self._e[:m]))


def describe_plant(node, plant) -> None:
    """State what the simulated robot is and how it measures (``SimulatedRobot.measurement_summary``): a log line at
    start-up and the key ``plant`` (JSON) of the node's diagnostics, which a recorded run's summary carries. A plant
    with nothing to state (``measurement_summary()`` None) leaves both out."""
    from ..hardware.simulated import describe_plant as describe

    from .runtime import log_at

    describe(plant, partial(log_at, node.get_logger()), node.diag.extra)


class Topics(HardwarePlugin):
    """``topics``: a robot behind topics, here the ``hardware`` node (the graph's clock source): the actuated joints
    in, commands out, in the node's topic_convention (TopicHardware)."""

    hosted = False
    time_source = "hardware"
    hardware_node = True
    simulated = True
    robot = "the robot (hardware node)"

    def create(self, host: HardwareHost):
        s = host.settings
        return TopicHardware(host.node, host.ctx, TopicConvention.from_settings(s), host.sources, host.on_measurement,
                             host.on_repeated_state, host.wrench_point, s["lockstep"], self.robot)


class Ros2Control(Topics):
    """``ros2_control``: the same topics, the robot a ros2_control controller manager (README "ros2_control
    bridge"), whose robot_state_publisher owns /robot_description; joint_controller is the time source (/clock: the
    instants of its periods). ``--stand-in``: our hardware node plays the controller manager, on its own clock as one
    does (publish_clock false)."""

    time_source = "joint_controller"
    publishes_description = False
    hardware_node = False
    simulated = False
    stand_in = {"hardware": {"publish_clock": False}}
    robot = "the robot (controller manager, or the hardware node standing in for one)"
