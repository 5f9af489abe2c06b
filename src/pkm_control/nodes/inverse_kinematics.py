"""inverse_kinematics: desired platform motion -> joint references; measured joints -> platform pose.

usage: inverse_kinematics [--help] [--ros-args -p robot:=palida ...]

Subscribes
  /platform_trajectory     trajectory_msgs/MultiDOFJointTrajectory   desired platform motion (chunks)
  /joint_states            sensor_msgs/JointState                     measured joints
Publishes
  /joint_references        trajectory_msgs/JointTrajectory   actuated joints: positions, velocities,
                                                             accelerations (same stamp and point times)
  /desired_joint_states    sensor_msgs/JointState            ALL tree joints (passive and platform joints
                                                             too, so RViz draws the closed loops) at
                                                             display_rate (sim time)
  /platform_pose           geometry_msgs/PoseStamped         measured pose: forward kinematics of the
                                                             measured actuated joints, warm-started at
                                                             the previous solution (measured_pose_rate;
                                                             0 = every /joint_states)
  /diagnostics             diagnostic_msgs/DiagnosticArray
A point that is unreachable, violates a joint limit or is singular is logged, counted and
replaced by the last valid reference held at rest (zero velocity and acceleration).
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node

from ..errors import PkmError
from ..kinematics.forward import forward_kinematics
from .common import (COMMON_PARAMS, Diagnostics, declare_settings, guarded, joint_state_msg,
                     joint_trajectory_msg, parse_joint_state, parse_platform_trajectory, pose_stamped_msg,
                     run_node, to_ns)

__doc__ += "\n" + COMMON_PARAMS


class InverseKinematicsNode(Node):
    def __init__(self, **kwargs):
        super().__init__("inverse_kinematics", **kwargs)
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self)
        self.s = s
        self.frame = "base_link"      # the core's base frame (planar_redundant: RViz views it from 'world')
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        kin = self.ctx.kin
        self.act = kin.model.actuated_idx
        self.initial = self.ctx.initial(s["initial_pose"])
        home = kin.inverse(self.initial)
        self.last_q = home.q              # last valid reference (all joints)
        self.guess = self.initial         # FK warm start
        self.display_ns = int(1e9 / s["display_rate"]) if s["display_rate"] > 0 else 0
        self.pose_ns = int(1e9 / s["measured_pose_rate"]) if s["measured_pose_rate"] > 0 else 0
        self._last_display = None
        self._last_pose = None
        self.pub_ref = self.create_publisher(JointTrajectory, "/joint_references", 10)
        self.pub_desired = self.create_publisher(JointState, "/desired_joint_states", 10)
        self.pub_pose = self.create_publisher(PoseStamped, "/platform_pose", 10)
        self.sub_traj = self.create_subscription(MultiDOFJointTrajectory, "/platform_trajectory",
                                                 guarded(self.diag, "platform_trajectory")(self.on_trajectory), 10)
        self.sub_state = self.create_subscription(JointState, "/joint_states",
                                                  guarded(self.diag, "joint_states")(self.on_state), 10)

    def on_trajectory(self, msg):
        chunk = parse_platform_trajectory(msg, self.ctx)
        kin = self.ctx.kin
        n, nv = len(chunk.times_ns), kin.model.model.nv
        q, v, a = np.empty((n, nv)), np.zeros((n, nv)), np.zeros((n, nv))
        for k, (pose, tw, ac) in enumerate(zip(chunk.poses, chunk.twists, chunk.accels)):
            try:
                m = kin.inverse(pose, tw, ac)
                if not (np.all(np.isfinite(m.q)) and np.all(np.isfinite(m.v)) and np.all(np.isfinite(m.a))):
                    raise PkmError("inverse kinematics returned a non-finite joint motion")
                q[k], v[k], a[k] = m.q, m.v, m.a
                self.last_q = m.q
            except PkmError as exc:
                self.diag.reject("trajectory point", exc)
                q[k] = self.last_q        # hold the last valid reference at rest
            self.diag.step()
        t0 = to_ns(msg.header.stamp)
        self.pub_ref.publish(joint_trajectory_msg(t0, self.ctx.actuated_joints, chunk.times_ns,
                                                  q[:, self.act], v[:, self.act], a[:, self.act]))
        for k, t in enumerate(chunk.times_ns):
            if self._due("_last_display", int(t), self.display_ns):
                self.pub_desired.publish(joint_state_msg(int(t), self.ctx.joint_names, q[k], v[k]))

    def _due(self, attr, t, period):
        """True when t is in another display period than the last published one (sim time; a reset
        to an earlier time publishes again)."""
        slot = t // period if period else t
        if getattr(self, attr) == slot:
            return False
        setattr(self, attr, slot)
        return True

    def on_state(self, msg):
        st = parse_joint_state(msg, self.ctx)
        if not self._due("_last_pose", st.time_ns, self.pose_ns):
            return
        fk = forward_kinematics(self.ctx.kin, st.position, self.guess, check_limits=False)
        self.guess = fk.pose
        self.pub_pose.publish(pose_stamped_msg(st.time_ns, self.frame, fk.pose))


def main(argv=None) -> int:
    return run_node(InverseKinematicsNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
