"""inverse_kinematics: desired platform motion -> joint references; measured joints -> platform pose.

usage: inverse_kinematics [--help] [--ros-args -p robot:=palida ...]

Subscribes
  /platform_trajectory     trajectory_msgs/MultiDOFJointTrajectory   desired platform motion (chunks)
  /joint_states            sensor_msgs/JointState                     measured joints (the actuated ones
                                                                      are used); with a robot behind topics
                                                                      in the topic_based convention,
                                                                      joint_states_topic
  /clock                   rosgraph_msgs/Clock                        the newest time: a chunk whose samples
                                                                      the loop has all passed (this node fell
                                                                      behind) is dropped, counted in /diagnostics
Publishes
  /joint_references        trajectory_msgs/JointTrajectory   actuated joints: positions, velocities,
                                                             accelerations (same stamp and point times)
  /desired_joint_states    sensor_msgs/JointState            ALL tree joints (passive and platform joints
                                                             too, so RViz draws the closed loops) at
                                                             display_rate (sim time)
  /platform_pose           geometry_msgs/PoseStamped         measured pose: the state estimator
                                                             (pkm_control.control.StateEstimator: forward
                                                             kinematics of the measured actuated joints,
                                                             warm-started at the previous estimate) at
                                                             measured_pose_rate (0 = every /joint_states)
  /tf                      tf2_msgs/TFMessage                base_link -> platform_measured (the state
                                                             estimator's pose) and base_link -> platform_desired
                                                             (the trajectory's) at tf_rate (sim time; 0 = none);
                                                             only where tf2_msgs is installed (docs/graph.md "TF")
  /diagnostics             diagnostic_msgs/DiagnosticArray
A point that is unreachable, violates a joint limit or is singular is logged, counted and
replaced by the last valid reference held at rest (zero velocity and acceleration).

Node parameters (besides the common ones; run time: display_rate, measured_pose_rate, tf_rate)
  display_rate, measured_pose_rate, tf_rate, initial_pose ('' = home); hardware, topic_convention, controller_name,
  joint_states_topic, joint_commands_topic (where the measured joints are: joint_controller's); lockstep,
  stream_priority (real time: the process at SCHED_FIFO this priority where permitted, 0 = the default scheduler;
  ros.runtime.stream_stage_priority). /diagnostics: chunk_cpu_mean_us, chunk_cpu_max_us (thread CPU per chunk)
  beside chunk_span_ms (the sim time a chunk covers)
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node

from ..control.estimator import StateEstimator
from ..errors import PkmError
from ..kinematics.task_space import Pose
from ..hardware.plugin import hardware_plugin
from ..ros.hardware_io import TopicConvention
from ..ros.messages import (joint_state_msg, joint_trajectory_msg, parse_joint_state, parse_platform_trajectory,
    pose_stamped_msg, to_ns, transform_stamped_msg)
from ..ros.qos import qos
from ..ros.peers import GraphClock, Sources
from ..ros.runtime import (COMMON_PARAMS, ChunkCost, Diagnostics, ServiceGuard, declare_settings, run_node,
    stream_stage_priority)

__doc__ += "\n" + COMMON_PARAMS
#: the TF frames of the platform poses: child frame ids that robot_state_publisher never publishes (it publishes the
#: URDF's links, and desired/<link> for the desired robot), so no frame gets a second parent
MEASURED_FRAME = "platform_measured"
DESIRED_FRAME = "platform_desired"


def tf_message_type():
    """tf2_msgs/TFMessage, or None where tf2_msgs is not installed (it is not on PyPI; README "TF")."""
    try:
        from tf2_msgs.msg import TFMessage
    except ImportError:
        return None
    return TFMessage


class InverseKinematicsNode(Node):
    def __init__(self, **kwargs):
        super().__init__("inverse_kinematics", **kwargs)
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self, "inverse_kinematics")
        self.s = s
        self.frame = "base_link"      # the core's base frame (planar_redundant: RViz views it from 'world')
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        kin = self.ctx.kin
        self.act = kin.model.actuated_idx
        initial = self.ctx.initial(s["initial_pose"])
        self.last_q = kin.inverse(initial).q       # last valid reference (all joints)
        self.estimator = StateEstimator(kin)
        self.guess = initial                       # the estimator's warm start
        self._slots = {}
        self.pub_ref = self.create_publisher(JointTrajectory, "/joint_references", qos("/joint_references", "pub"))
        self.pub_desired = self.create_publisher(JointState, "/desired_joint_states",
                                                 qos("/desired_joint_states", "pub"))
        # latched: a node that starts later (the trajectory generator waits for it) gets the last measured pose
        self.pub_pose = self.create_publisher(PoseStamped, "/platform_pose", qos("/platform_pose", "pub"))
        self.tf_type = tf_message_type()
        self.pub_tf = None if self.tf_type is None else self.create_publisher(self.tf_type, "/tf", qos("/tf", "pub"))
        if self.pub_tf is None:
            self.get_logger().info("tf2_msgs is not installed: no /tf (run `make tf2-msgs`; the poses are on "
                                   "/platform_pose and /desired_platform_pose)")
        # every stream bound to one publisher; the graph's reset (the clock back to the start) rebinds the trajectory
        self.sources = Sources(self, self.diag, s["sources"], ServiceGuard(self, self.diag))
        # a chunk the loop has passed is dropped, not worked off (real time on an overloaded machine)
        self.clock = GraphClock(self.sources, on_reset=lambda: self.sources.reset(self.sub_traj.topic_name))
        self.diag.extra["passed_chunks_dropped"] = 0
        self.sub_traj = self.sources.subscribe(MultiDOFJointTrajectory, "/platform_trajectory", self.on_trajectory,
                                               qos("/platform_trajectory", "sub"), "platform_trajectory")
        # the measured joints: the estimated ones of joint_controller, or where a robot behind topics publishes them
        behind_topics = not hardware_plugin(s["hardware"]).hosted
        states = TopicConvention.from_settings(s).states_topic if behind_topics else "/joint_states"
        self.sub_state = self.sources.subscribe(JointState, states, self.on_state,
                                                qos("/joint_states", "sub:inverse_kinematics"), "joint_states")
        self.cost = ChunkCost(self.diag)
        self.diag.starting = lambda: self.sources.awaiting(self.sub_state.topic_name, self.sub_traj.topic_name)
        stream_stage_priority(self, s, self.diag)

    def on_trajectory(self, msg):
        cpu = time.thread_time_ns()
        c = parse_platform_trajectory(msg, self.ctx.task)
        if self.clock.passed(c):                  # fell behind: the loop is past all of it
            self.diag.extra["passed_chunks_dropped"] += 1
            return
        kin = self.ctx.kin
        n, nv = len(c.times_ns), kin.model.model.nv
        q, v, a = np.empty((n, nv)), np.zeros((n, nv)), np.zeros((n, nv))
        for k in range(n):
            try:
                m = kin.inverse(Pose(c.positions[k], c.rotations[k]), c.twists[k], c.accels[k])
                if not (np.isfinite(m.q).all() and np.isfinite(m.v).all() and np.isfinite(m.a).all()):
                    raise PkmError("inverse kinematics returned a non-finite joint motion")
                q[k], v[k], a[k] = m.q, m.v, m.a
                self.last_q = m.q
            except PkmError as exc:
                self.diag.reject("trajectory point", exc)
                q[k] = self.last_q        # hold the last valid reference at rest
            self.diag.step()
        t0 = to_ns(msg.header.stamp)
        self.pub_ref.publish(joint_trajectory_msg(t0, self.ctx.actuated_joints, c.times_ns,
                                                  q[:, self.act], v[:, self.act], a[:, self.act]))
        for k, t in enumerate(c.times_ns):
            if self._due("display", int(t), self.s["display_rate"]):
                self.pub_desired.publish(joint_state_msg(int(t), self.ctx.joint_names, q[k], v[k]))
            if self._tf_due("desired", int(t)):
                self.publish_tf(int(t), DESIRED_FRAME, Pose(c.positions[k], c.rotations[k]))
        self.cost.add(time.thread_time_ns() - cpu, c.times_ns)

    def _due(self, what, t, rate):
        """True when t is in another period of ``rate`` (Hz, sim time; 0 = always) than the last
        published one (a reset to an earlier time publishes again)."""
        slot = t // int(1e9 / rate) if rate > 0 else t
        if self._slots.get(what) == slot:
            return False
        self._slots[what] = slot
        return True

    def _tf_due(self, what, t):
        """A transform of ``what`` is due at t: /tf exists and tf_rate > 0 (0 = no /tf)."""
        return self.pub_tf is not None and self.s["tf_rate"] > 0 and self._due("tf " + what, t, self.s["tf_rate"])

    def publish_tf(self, t, child, pose):
        self.pub_tf.publish(self.tf_type(transforms=[transform_stamped_msg(t, self.frame, child, pose)]))

    def on_state(self, msg):
        meas = parse_joint_state(msg, self.ctx.joint_names, self.ctx.actuated_joints)
        t = to_ns(msg.header.stamp)
        pose_due, tf_due = self._due("pose", t, self.s["measured_pose_rate"]), self._tf_due("measured", t)
        if not (pose_due or tf_due):
            return
        est = self.estimator.estimate(meas.position, meas.velocity, self.guess)
        self.guess = est.pose
        if pose_due:
            self.pub_pose.publish(pose_stamped_msg(t, self.frame, est.pose))
        if tf_due:
            self.publish_tf(t, MEASURED_FRAME, est.pose)


def main(argv=None) -> int:
    return run_node(InverseKinematicsNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
