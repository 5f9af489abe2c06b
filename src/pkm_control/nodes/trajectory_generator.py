"""trajectory_generator: the desired platform motion, streamed in chunks on sim time.

usage: trajectory_generator [--help] [--ros-args -p robot:=palida -p goal:='{type: circle, ...}' ...]

Subscribes
  /clock                   rosgraph_msgs/Clock          sim time (the hardware's; lockstep-safe timing)
  ~/goal                   std_msgs/String              a trajectory spec in YAML or JSON, as taken by
                                                        pkm_control.trajectory.trajectory_from_spec, e.g.
                                                        "{type: point_to_point, goal: [0, 0, -0.8, 0, 0, 0],
                                                        duration: 1.0, profile: quintic}"
Publishes
  /platform_trajectory     trajectory_msgs/MultiDOFJointTrajectory   one joint 'platform'; transforms =
                           pose, velocities = twist (v, omega; base frame), accelerations; one point
                           per control period on the sim-time grid k/control_rate; chunks of
                           `lookahead` s, kept two chunks ahead of /clock
  /desired_platform_pose   geometry_msgs/PoseStamped    the desired pose now, at display_rate (sim time)
  /diagnostics             diagnostic_msgs/DiagnosticArray
Services
  ~/start                  std_srvs/Trigger   start the loaded goal (when auto_start is false)
  ~/stop                   std_srvs/Trigger   stop: hold the desired pose of the next grid time after
                                              now + start_delay (a velocity step for the controller)

Behaviour
  Idle, the reference is a hold at the last desired pose (initially home), streamed like any
  trajectory, so the controllers always have a reference. A goal is parsed, built and checked
  for reachability over its whole duration (trajectory.check_reachable with the batched IK);
  a goal that fails is rejected, logged and counted, and the robot keeps holding. A goal
  received while a motion runs is rejected (call ~/stop first). If the goal starts away from
  the current desired pose, a quintic approach move (peak speed approach_speed m/s,
  approach_rate rad/s) is put in front. The motion starts at the first grid time after
  now + start_delay; that chunk replaces the buffered hold downstream (splice semantics).
  The start times are logged and reported in /diagnostics (motion_start; goal_start = where the
  goal's own trajectory begins, after the approach). To start ON a trajectory (no approach), give
  every node initial_pose = its start pose (`pkm bringup --set initial_pose=[...]`).
  If sim time stands still for 0.5 s (wall), the chunks from now are offered again (a subscriber
  that matched late would otherwise wait forever in lockstep).

Node parameters (besides the common ones)
  goal ('' = none), auto_start, initial_pose ('' = home), lookahead, start_delay, display_rate, control_rate,
  approach_speed [0.1], approach_rate [0.5]
"""

from __future__ import annotations

import time

import numpy as np
import yaml
from rclpy.node import Node

from ..errors import InvalidInputError, PkmError
from ..kinematics.task_space import Pose
from .common import (COMMON_PARAMS, Diagnostics, declare_settings, guarded, period_ns, platform_trajectory_msg,
                     pose_stamped_msg, run_node, to_ns)

__doc__ += "\n" + COMMON_PARAMS


def parse_goal(text: str) -> dict:
    """YAML (a superset of JSON) mapping -> dict; InvalidInputError otherwise."""
    try:
        spec = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInputError(f"goal is not valid YAML/JSON: {exc}") from exc
    if not isinstance(spec, dict):
        raise InvalidInputError(f"goal must be a mapping (trajectory spec), got {type(spec).__name__}: {text!r}")
    return spec


class TrajectoryGeneratorNode(Node):
    def __init__(self, **kwargs):
        super().__init__("trajectory_generator", **kwargs)
        from geometry_msgs.msg import PoseStamped
        from rosgraph_msgs.msg import Clock
        from std_msgs.msg import String
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self, {"approach_speed": 0.1, "approach_rate": 0.5})
        self.s = s
        self.frame = "base_link"      # the core's base frame (planar_redundant: RViz views it from 'world')
        self.dt_ns = period_ns(s["control_rate"])
        self.chunk_n = max(1, int(round(s["lookahead"] * 1e9 / self.dt_ns)))
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        self.hold = self.ctx.initial(s["initial_pose"])   # pose held when no motion runs
        self.active = None                   # (trajectory, start time ns) of the running motion
        self.approach = 0.0                  # s of approach move in front of the loaded goal
        self.loaded = None                   # accepted goal waiting for ~/start
        self.published_until = None          # time of the last published point (ns)
        self.now_ns = None
        self._display_slot = None
        self.pub_traj = self.create_publisher(MultiDOFJointTrajectory, "/platform_trajectory", 10)
        self.pub_desired = self.create_publisher(PoseStamped, "/desired_platform_pose", 10)
        self.sub_clock = self.create_subscription(Clock, "/clock", guarded(self.diag, "clock")(self.on_clock), 10)
        self.sub_goal = self.create_subscription(String, "~/goal", guarded(self.diag, "goal")(self.on_goal), 10)
        from rclpy.clock import Clock as RosClock, ClockType

        self._clock_changed = time.monotonic()
        self.reoffers = 0
        self.reoffer_timer = self.create_timer(0.25, guarded(self.diag, "re-offer")(self.on_reoffer),
                                               clock=RosClock(clock_type=ClockType.STEADY_TIME))
        self.srv_start = self.create_service(Trigger, "~/start", self.on_start)
        self.srv_stop = self.create_service(Trigger, "~/stop", self.on_stop)
        if s["goal"]:
            try:
                self.load(s["goal"])
            except PkmError as exc:
                self.diag.reject("goal parameter", exc)

    # ------------------------------------------------------------------ goals
    def load(self, text: str):
        """Parse, build and check a goal; queue it (and start it if auto_start)."""
        from ..trajectory import PointToPoint, Sequence, check_reachable, trajectory_from_spec

        if self.active is not None:
            raise InvalidInputError("a motion is running: goal rejected (call ~/stop first)")
        spec = parse_goal(text)
        kin = self.ctx.kin
        if spec.get("start") is None and spec.get("type") not in ("benchmark_circle", "palida_benchmark"):
            spec["start"] = kin.task.coordinates(self.hold).tolist()
        traj = trajectory_from_spec(kin, spec)
        d = kin.task.difference(traj.start_pose, self.hold)
        lin, ang = self._split(d)
        self.approach = 0.0
        if lin > 1e-9 or ang > 1e-9:
            # quintic peak speed 15/8 distance / T
            T = max(0.2, 1.875 * lin / self.s["approach_speed"], 1.875 * ang / self.s["approach_rate"])
            traj = Sequence([PointToPoint(kin.task, self.hold, traj.start_pose, T, "quintic"), traj])
            self.approach = T
        check_reachable(kin, traj)
        self.loaded = traj
        self.get_logger().info(f"goal accepted: {spec.get('type')} of {traj.duration:.4g} s"
                               + (f" (with an approach of {self.approach:.4g} s)" if self.approach else ""))
        if self.s["auto_start"]:
            self.start()

    def _split(self, d):
        task = self.ctx.task
        ang = np.zeros(len(d), bool)
        ang[list(task.angular)] = True
        return float(np.linalg.norm(d[~ang])), float(np.linalg.norm(d[ang]))

    def start(self) -> bool:
        if self.loaded is None or self.active is not None:
            return False
        t0 = self._next_grid(self.now_ns) if self.now_ns is not None else None
        self.active = (self.loaded, t0)       # t0 None: fixed at the first /clock
        self.loaded = None
        if t0 is not None:
            self._announce(t0)
        if t0 is not None and self.published_until is not None:
            self.published_until = min(self.published_until, t0 - self.dt_ns)
        return True

    def _announce(self, t0):
        """Log and report when the motion (and the goal's own trajectory, after an approach) starts:
        a recorder compares the measured motion with the goal from that sim time on."""
        goal_start = t0 + int(round(self.approach * 1e9))
        self.diag.extra.update(motion_start=f"{t0 * 1e-9:.6f}", goal_start=f"{goal_start * 1e-9:.6f}")
        self.get_logger().info(f"motion starts at sim time {t0 * 1e-9:.6f} s; the goal's trajectory at "
                               f"{goal_start * 1e-9:.6f} s")

    def _next_grid(self, now_ns):
        t = now_ns + int(round(self.s["start_delay"] * 1e9))
        return -(-t // self.dt_ns) * self.dt_ns

    def on_goal(self, msg):
        self.load(msg.data)

    def on_start(self, request, response):
        response.success = self.start()
        response.message = "started" if response.success else \
            ("a motion is running" if self.active is not None else "no goal loaded")
        return response

    def on_stop(self, request, response):
        if self.active is None:
            self.loaded = None
            response.success, response.message = True, "idle (holding)"
            return response
        t_stop = self._next_grid(self.now_ns if self.now_ns is not None else 0)
        self.hold = self.desired_at(t_stop)[0]
        self.active = None
        if self.published_until is not None:
            self.published_until = min(self.published_until, t_stop - self.dt_ns)
        response.success, response.message = True, f"stopped at sim time {t_stop * 1e-9:.4f} s"
        return response

    # ------------------------------------------------------------------ sampling
    def sample(self, times_ns):
        """Poses, twists, accels at absolute grid times (the hold before/after the motion)."""
        n, dim = len(times_ns), self.ctx.task.dim
        P = np.tile(self.hold.position, (n, 1))
        R = np.tile(self.hold.rotation, (n, 1, 1))
        V, A = np.zeros((n, dim)), np.zeros((n, dim))
        if self.active is not None:
            traj, t0 = self.active
            tau = (np.asarray(times_ns, np.int64) - t0) * 1e-9
            m = (tau >= 0) & (tau <= traj.duration)
            if m.any():
                P[m], R[m], V[m], A[m] = traj.sample_many(tau[m])
            after = tau > traj.duration
            if after.any():
                end = traj.end_pose
                P[after], R[after] = end.position, end.rotation
        return P, R, V, A

    def desired_at(self, t_ns):
        P, R, V, A = self.sample([t_ns])
        return Pose(P[0], R[0]), V[0], A[0]

    def on_clock(self, msg):
        now = to_ns(msg.clock)
        if self.now_ns is not None and now < self.now_ns:      # hardware reset: start over
            self.published_until = None
            self._display_slot = None
        if now != self.now_ns:
            self._clock_changed = time.monotonic()
        self.now_ns = now
        if self.active is not None and self.active[1] is None:
            self.active = (self.active[0], self._next_grid(now))
            self._announce(self.active[1])
        if self.published_until is None:
            self.published_until = -(-now // self.dt_ns) * self.dt_ns - self.dt_ns
        self.fill(now)
        if self.active is not None:
            traj, t0 = self.active
            if now > t0 + traj.duration * 1e9:
                self.hold = traj.end_pose          # finished: hold its end from now on
                self.active = None
                self.get_logger().info("motion finished; holding")
        self.publish_display(now)

    def fill(self, now):
        """Publish chunks until the published reference reaches two chunks ahead of now."""
        while self.published_until - now < self.chunk_n * self.dt_ns:
            self.publish_chunk()

    def on_reoffer(self):
        """Sim time stuck for 0.5 s (wall): offer the chunks from now again. In lockstep nothing else
        would re-send a chunk that a late-matched subscriber missed, and the graph would wait forever;
        the chunks are identical, so the receivers' splice makes this idempotent."""
        if self.now_ns is None or time.monotonic() - self._clock_changed < 0.5:
            return
        self._clock_changed = time.monotonic()
        self.published_until = -(-self.now_ns // self.dt_ns) * self.dt_ns - self.dt_ns
        self.fill(self.now_ns)
        self.reoffers += 1
        self.diag.extra["reoffers"] = self.reoffers

    def publish_chunk(self):
        t0 = self.published_until + self.dt_ns
        times = t0 + self.dt_ns * np.arange(self.chunk_n, dtype=np.int64)
        P, R, V, A = self.sample(times)
        poses = [Pose(p, r) for p, r in zip(P, R)]
        self.pub_traj.publish(platform_trajectory_msg(int(t0), self.frame, times, poses, V, A, self.ctx.task))
        self.published_until = int(times[-1])
        self.diag.step()

    def publish_display(self, now):
        period = int(1e9 / self.s["display_rate"]) if self.s["display_rate"] > 0 else 0
        slot = now // period if period else now
        if slot == self._display_slot:
            return
        self._display_slot = slot
        self.pub_desired.publish(pose_stamped_msg(now, self.frame, self.desired_at(now)[0]))


def main(argv=None) -> int:
    return run_node(TrajectoryGeneratorNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
