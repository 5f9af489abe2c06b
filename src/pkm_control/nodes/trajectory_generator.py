"""trajectory_generator: the desired platform motion, streamed ahead in chunks on sim time.

usage: trajectory_generator [--help] [--ros-args -p robot:=palida -p goal:='{type: circle, ...}' ...]

Subscribes
  /clock                   rosgraph_msgs/Clock          sim time (joint_controller's; lockstep-safe timing)
  /platform_pose           geometry_msgs/PoseStamped    the measured platform pose (state estimator of the
                                                        inverse_kinematics node): where references start
  ~/goal                   std_msgs/String              a trajectory spec in YAML or JSON, as taken by
                                                        pkm_control.trajectory.trajectory_from_spec, e.g.
                                                        "{type: point_to_point, goal: [0, 0, -0.8, 0, 0, 0],
                                                        duration: 1.0, profile: quintic}"
Publishes
  /platform_trajectory     trajectory_msgs/MultiDOFJointTrajectory   one joint 'platform'; transforms =
                           pose, velocities = twist (v, omega; base frame), accelerations; one point
                           per stream period on the sim-time grid k/stream_rate (0: control_rate;
                           joint_controller interpolates between the points); chunks of
                           `chunk_length` s, published while the published end is less than
                           `lookahead` s ahead of /clock
  /force_references        trajectory_msgs/JointTrajectory  a hybrid goal's force references (type: hybrid,
                           trajectory.spec.hybrid_from_spec), at the times of /platform_trajectory's chunks:
                           one "joint" per task coordinate, effort = F_d, positions = the selection (1
                           force-controlled, 0 motion); from the goal's start on (none during an approach
                           move), its last phase's after its end; a chunk without points ends the stream
                           (another goal began: the force laws' force_reference applies again)
  ~/status                 std_msgs/String (JSON; transient local)  the goal's life cycle: state
                           (accepted | rejected | started | finished | stopped), sim times
                           motion_start, goal_start, end (s) and the reason of a rejection
  /desired_platform_pose   geometry_msgs/PoseStamped    the desired pose now, at display_rate (sim time)
  /diagnostics             diagnostic_msgs/DiagnosticArray
Services
  ~/start                  std_srvs/Trigger   start the loaded goal (when auto_start is false); at most
                                              control.services.SERVICE_RATE calls/s (more are refused)
  ~/stop                   std_srvs/Trigger   stop: hold the desired pose of the next grid time after
                                              now + start_delay (a velocity step for the controller)

Behaviour (pkm_control.trajectory.streaming.GoalScheduler): idle, the reference is a hold at the
last desired pose, streamed like any trajectory, so the controllers always have a reference. The
references start from the MEASURED pose: nothing is published until a /platform_pose of the
current timeline has arrived, at start-up, after a restart of this node, and after a reset of the
time source (the clock back to zero, /hardware/reset); the goal parameter is loaded from there.
A goal is parsed, built and checked for reachability over its whole duration; a
goal that fails is rejected, logged and counted, and the robot keeps holding. A goal received while
a motion runs is rejected (call ~/stop first). If the goal starts away from the held pose, a quintic
approach move (peak speed approach_speed m/s, approach_rate rad/s) is put in front, unless every actuated joint
of the start is within approach_tolerance (m or rad) of the held pose (a measured pose is quantized). The motion
starts at the first grid time after now + start_delay. If sim time stands still for 0.5 s (wall), or
4 times the slowest of its last 16 steps if longer (a loaded machine's own pace: trajectory.streaming.ReofferPolicy),
the chunks from now are offered again (a subscriber that matched late would otherwise wait forever).

Node parameters (besides the common ones; run time: approach_speed, approach_rate, approach_tolerance,
display_rate)
  control_rate, stream_rate (0 = control_rate), chunk_length, lookahead,
  start_delay, display_rate, goal ('' = none), auto_start, initial_pose
  ('' = home), approach_speed, approach_rate, approach_tolerance, lockstep, stream_priority (real time: the
  process at SCHED_FIFO this priority where permitted, 0 = the default scheduler; ros.runtime.stream_stage_priority)
"""

from __future__ import annotations

import json
import time

from rclpy.node import Node

from ..errors import InvalidInputError, PkmError
from ..kinematics.task_space import Pose
from ..trajectory.streaming import GoalScheduler, ReofferPolicy, parse_goal
from ..ros.messages import (MAX_POINTS, finite, force_references_msg, period_ns, platform_trajectory_msg,
                            pose_stamped_msg, rotations, to_ns)
from ..ros.qos import FORCE_REFERENCES_TOPIC, qos
from ..ros.peers import Sources
from ..ros.runtime import (COMMON_PARAMS, Diagnostics, ServiceGuard, declare_settings, guarded, run_node,
    stream_stage_priority)

__doc__ += "\n" + COMMON_PARAMS
#: a measured pose may be stamped this much after the last clock seen (the clock is published at a lower rate)
MEASURED_SLACK_NS = 100_000_000
#: the longest lookahead, in control periods (5 s at 2 kHz)
MAX_LEAD_PERIODS = 10_000


class TrajectoryGeneratorNode(Node):
    def __init__(self, **kwargs):
        super().__init__("trajectory_generator", **kwargs)
        from geometry_msgs.msg import PoseStamped
        from rclpy.clock import Clock as WallClock, ClockType
        from rosgraph_msgs.msg import Clock
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self, "trajectory_generator", self.on_change)
        self.s = s
        self.frame = "base_link"      # the core's base frame (planar_redundant: RViz views it from 'world')
        dt_ns = period_ns(s["stream_rate"] or s["control_rate"])      # the streamed samples' grid
        samples = {key: max(1, int(round(s[key] * 1e9 / dt_ns))) for key in ("chunk_length", "lookahead")}
        for key, most in (("chunk_length", MAX_POINTS), ("lookahead", MAX_LEAD_PERIODS)):
            if samples[key] > most:
                raise InvalidInputError(f"{key} = {s[key]:g} s is {samples[key]} stream periods; at most {most}")
        self.sched = GoalScheduler(self.ctx.kin, self.ctx.initial(s["initial_pose"]), dt_ns, samples["chunk_length"],
                                   int(round(s["start_delay"] * 1e9)), s["approach_speed"], s["approach_rate"],
                                   samples["lookahead"], s["approach_tolerance"])
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        self._display_slot = None
        self._goal_loaded = False
        self.reoffer_policy = ReofferPolicy()   # when standing sim time counts as a stall (wall time)
        self._clock_seen = None          # (last /clock ns, time.monotonic() when it arrived)
        self.reoffers = 0
        self.pub_traj = self.create_publisher(MultiDOFJointTrajectory, "/platform_trajectory",
                                               qos("/platform_trajectory", "pub"))
        self.pub_force = self.create_publisher(JointTrajectory, FORCE_REFERENCES_TOPIC,
                                               qos(FORCE_REFERENCES_TOPIC, "pub"))
        self._forcing = False            # force references streamed (a hybrid goal): a chunk without ends them
        self.pub_desired = self.create_publisher(PoseStamped, "/desired_platform_pose",
                                                  qos("/desired_platform_pose", "pub"))
        self.pub_status = self.create_publisher(String, "~/status", qos("/trajectory_generator/status", "pub"))
        # /clock and the measured pose bound to one publisher each (the graph's reset rebinds the pose)
        self.guard = ServiceGuard(self, self.diag)
        self.sources = Sources(self, self.diag, s["sources"], self.guard)
        self.sub_clock = self.sources.subscribe(Clock, "/clock", self.on_clock, qos("/clock", "sub"), "clock")
        self.measured = None             # (stamp ns, Pose): the latest measured platform pose
        self.awaiting_measurement = True
        self.sub_pose = self.sources.subscribe(PoseStamped, "/platform_pose", self.on_pose,
                                               qos("/platform_pose", "sub"), "platform_pose")
        self.sub_goal = self.create_subscription(String, "~/goal", guarded(self.diag, "goal")(self.on_goal),
                                                 qos("/trajectory_generator/goal", "sub"))
        self.reoffer_timer = self.create_timer(0.25, guarded(self.diag, "re-offer")(self.on_reoffer),
                                               clock=WallClock(clock_type=ClockType.STEADY_TIME))
        self.srv_start = self.guard.service(Trigger, "~/start", self.on_start)
        # a stop is never refused: it only holds the robot, and an operator must always be able to
        self.srv_stop = self.create_service(Trigger, "~/stop", self.on_stop)
        self.diag.starting = self.starting
        stream_stage_priority(self, s, self.diag)

    def starting(self):
        """What the generator waits for before it streams (the diagnostics' start-up wait): the first /clock and a
        measured /platform_pose of the clock's timeline; None once it streams."""
        if not self.awaiting_measurement:
            return None
        first = self.sources.awaiting(self.sub_clock.topic_name, self.sub_pose.topic_name)
        if first is not None or self._clock_seen is None:
            return first
        return (f"a /platform_pose ({self.sources.bindings[self.sub_pose.topic_name].trusted or 'its first publisher'})"
                f" stamped at most sim time {(self._clock_seen[0] + MEASURED_SLACK_NS) * 1e-9:.4f} s (this timeline's)")

    def on_change(self, key, value):
        if key in ("approach_speed", "approach_rate", "approach_tolerance"):
            setattr(self.sched, key, value)

    # ------------------------------------------------------------------ goals
    def status(self, state: str, **fields):
        from std_msgs.msg import String

        self.pub_status.publish(String(data=json.dumps({"state": state, **fields})))

    def load(self, text: str, what: str = "goal"):
        """Parse, build and check a goal; queue it (and start it if auto_start); a bad goal is rejected."""
        try:
            spec = parse_goal(text)
            traj, approach = self.sched.load(spec)
        except PkmError as exc:
            self.diag.reject(what, exc)
            self.status("rejected", reason=f"{type(exc).__name__}: {exc}"[:2000])
            return
        self.get_logger().info(f"goal accepted: {spec.get('type')} of {traj.duration:.4g} s"
                               + (f" (with an approach of {approach:.4g} s)" if approach else ""))
        self.status("accepted", duration=traj.duration, approach=approach)
        if self.s["auto_start"]:
            self.announce(self.start_motion())

    def announce(self, motion):
        """Log and report when the motion (and the goal's own trajectory, after an approach) starts."""
        if motion is None:
            return
        start, goal_start, end = motion.start_ns * 1e-9, motion.goal_start_ns * 1e-9, motion.end_ns * 1e-9
        self.diag.extra.update(motion_start=f"{start:.6f}", goal_start=f"{goal_start:.6f}")
        self.get_logger().info(f"motion starts at sim time {start:.6f} s; the goal's trajectory at {goal_start:.6f} s")
        self.status("started", motion_start=start, goal_start=goal_start, end=end)

    def on_goal(self, msg):
        self.load(msg.data)

    def on_start(self, request, response):
        motion = self.start_motion()
        self.announce(motion)
        response.success = motion is not None or self.sched.pending
        response.message = "started" if response.success else \
            ("a motion is running" if self.sched.active is not None else "no goal loaded")
        return response

    def on_stop(self, request, response):
        t_stop = self.sched.stop()
        response.success = True
        if t_stop is None:
            response.message = "idle (holding)"
        else:
            response.message = f"stopped at sim time {t_stop * 1e-9:.4f} s"
            self.status("stopped", end=t_stop * 1e-9)
        return response

    # ------------------------------------------------------------------ time
    def on_pose(self, msg):
        p = msg.pose.position
        q = msg.pose.orientation
        pose = Pose(finite("platform_pose position", [p.x, p.y, p.z]), rotations([q.x, q.y, q.z, q.w]))
        self.measured = (to_ns(msg.header.stamp), self.ctx.kin.validate(pose)[0])

    def start_motion(self):
        """Start the loaded goal. In real time (lockstep false) sim time runs on the wall clock while this node is
        busy (a goal's reachability check takes seconds on a loaded machine, and the clocks queued meanwhile are
        old): the start is counted from the last clock plus the wall time since it arrived, so the motion never
        starts in the loop's past. In lockstep the clock waits for the streams: the last clock, deterministic."""
        if self.s["lockstep"] or self._clock_seen is None:
            return self.sched.start()
        now, seen = self._clock_seen
        return self.sched.start(now + int((time.monotonic() - seen) * 1e9))

    def on_clock(self, msg):
        now = to_ns(msg.clock)
        changed = now != self.sched.now_ns
        # a refused time (trajectory.trust.ClockGuard) raises: nothing changes; before the first measured pose of a
        # timeline the scheduler has no time, and the clock is taken as it comes once the pose is there
        if self.sched.now_ns is not None and self.sched.clock.admit(now):
            # the time source was reset (the robot is back at its start): start over from the measured pose
            self._display_slot = None
            self.sched.reset(self.sched.hold)
            self.sources.reset(self.sub_pose.topic_name)
            self.awaiting_measurement = True
            if self.measured is not None and self.measured[0] > now:
                # a pose of the old timeline must not seed the new one; one of the new timeline may be here
                # before this clock (the pose's path from /joint_states can be quicker than this queue)
                self.measured = None
            self.get_logger().info("clock reset: references start again from the measured pose")
        self._clock_seen = (now, time.monotonic())
        if changed:
            self.reoffer_policy.clock_step(time.monotonic())
        if self.awaiting_measurement:
            if self.measured is None or self.measured[0] > now + MEASURED_SLACK_NS:
                return                   # no measurement of this timeline yet: publish nothing
            self.sched.hold = self.measured[1]
            self.awaiting_measurement = False
            if self.s["goal"] and not self._goal_loaded:
                self._goal_loaded = True
                self.load(self.s["goal"], "goal parameter")
        chunks, events = self.sched.advance(now)
        for kind, motion in events:
            if kind == "started":
                self.announce(motion)
            else:
                self.get_logger().info("motion finished; holding")
                self.status("finished", motion_start=motion.start_ns * 1e-9, goal_start=motion.goal_start_ns * 1e-9,
                            end=motion.end_ns * 1e-9)
        self.publish(chunks)
        self.publish_display(now)

    def on_reoffer(self):
        if self.sched.now_ns is None or not self.reoffer_policy.due(time.monotonic()):
            return
        self.publish(self.sched.reoffer())
        self.reoffers += 1
        self.diag.extra["reoffers"] = self.reoffers

    def publish(self, chunks):
        for c in chunks:
            # the force references first: the loop has them when the motion's references (through IK) arrive
            if c.forces is not None or self._forcing:
                self.pub_force.publish(force_references_msg(int(c.times_ns[0]), self.ctx.task.names, c.times_ns,
                                                            c.forces))
                self._forcing = c.forces is not None
            self.pub_traj.publish(platform_trajectory_msg(int(c.times_ns[0]), self.frame, c.times_ns, c.positions,
                                                          c.rotations, c.twists, c.accels, self.ctx.task))
            self.diag.step()

    def publish_display(self, now):
        rate = self.s["display_rate"]
        slot = now // int(1e9 / rate) if rate > 0 else now
        if slot == self._display_slot:
            return
        self._display_slot = slot
        self.pub_desired.publish(pose_stamped_msg(now, self.frame, self.sched.desired_at(now)[0]))


def main(argv=None) -> int:
    return run_node(TrajectoryGeneratorNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
