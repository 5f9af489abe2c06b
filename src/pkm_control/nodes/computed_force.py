"""computed_force: feedforward actuator forces of the desired platform motion, streamed ahead.

usage: computed_force [--help] [--ros-args -p robot:=palida -p feedforward_model:=rigid+friction ...]

Input choice: this node subscribes the PLATFORM trajectory, not /joint_references. The
computed-force model is a task-space model (Abdellatif eq. 14: pose, twist and acceleration of
the platform); /platform_trajectory carries exactly those, whereas /joint_references would need
a forward kinematics and J^-1 per point to recover them. The points (times) are the same, so
/feedforward lines up with /joint_references sample by sample.

Subscribes
  /platform_trajectory   trajectory_msgs/MultiDOFJointTrajectory   desired platform motion (chunks)
  /clock                 rosgraph_msgs/Clock                        the newest time: a chunk whose samples the
                                                                    loop has all passed (this node fell behind)
                                                                    is dropped, counted in /diagnostics
Publishes
  /feedforward           trajectory_msgs/JointTrajectory            actuated joints, effort = tau_ff,
                                                                    same header stamp and point times
  /diagnostics           diagnostic_msgs/DiagnosticArray
Services
  ~/reload_parameters    std_srvs/Trigger   re-read parameters_file (after editing it) and rebuild the model; at
                                            most control.services.SERVICE_RATE calls/s (more are refused)

Node parameters (besides the common ones; the first two are run time: setting one rebuilds the model,
a model that cannot be built is refused with the reason and the old one stays)
  feedforward_model  none | rigid | rigid+friction     (default: the controller's)
  parameters_file    model parameter YAML (pkm_control.control.feedforward schema); '' = the config's.
                     At start-up any path; at run time only a file inside parameters_dir (a peer on the
                     domain must not make this node read an arbitrary file)
  parameters_dir     read-only; '' (default) = parameters_file cannot change at run time
  lockstep, stream_priority   real time (lockstep false): the process at SCHED_FIFO stream_priority where
                     permitted, 0 = the default scheduler (ros.runtime.stream_stage_priority)
/diagnostics: chunk_cpu_mean_us, chunk_cpu_max_us (thread CPU per chunk) beside chunk_span_ms (the sim time a chunk
covers).
A point whose motion the model rejects (unreachable, singular) is counted, logged and replaced
by the last valid forces (never NaN).
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node

from ..control.feedforward import FeedforwardModel
from ..errors import InvalidInputError, PkmError
from ..control.settings import inside
from ..kinematics.task_space import Pose
from ..ros.messages import joint_trajectory_msg, parse_platform_trajectory, to_ns
from ..ros.qos import qos
from ..ros.peers import GraphClock, Sources
from ..ros.runtime import (COMMON_PARAMS, ChunkCost, Diagnostics, ServiceGuard, declare_settings, run_node,
    stream_stage_priority)

__doc__ += "\n" + COMMON_PARAMS


class ComputedForceNode(Node):
    def __init__(self, **kwargs):
        super().__init__("computed_force", **kwargs)
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self, "computed_force", self.on_change)
        self.s = s
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        self.dyn = self.ctx.dynamics()
        self.ff = self.build(s["feedforward_model"], s["parameters_file"])
        self.last_tau = None
        # kept for late subscribers (a recorder that matches after the run started gets the chunks it missed)
        self.pub = self.create_publisher(JointTrajectory, "/feedforward", qos("/feedforward", "pub"))
        # every stream bound to one publisher; the graph's reset (the clock back to the start) rebinds the trajectory
        self.guard = ServiceGuard(self, self.diag)
        self.sources = Sources(self, self.diag, s["sources"], self.guard)
        # a chunk the loop has passed is dropped, not worked off (real time on an overloaded machine)
        self.clock = GraphClock(self.sources, on_reset=lambda: self.sources.reset(self.sub.topic_name))
        self.diag.extra["passed_chunks_dropped"] = 0
        self.sub = self.sources.subscribe(MultiDOFJointTrajectory, "/platform_trajectory", self.on_trajectory,
                                          qos("/platform_trajectory", "sub"), "platform_trajectory")
        self.srv = self.guard.service(Trigger, "~/reload_parameters", self.on_reload)
        self.cost = ChunkCost(self.diag)
        self.diag.starting = lambda: self.sources.awaiting(self.sub.topic_name)
        stream_stage_priority(self, s, self.diag)

    def build(self, model: str, path: str) -> FeedforwardModel:
        try:
            ff = FeedforwardModel(self.dyn, model, path or None)
        except OSError as exc:
            raise InvalidInputError(f"parameters_file {path!r} cannot be read: {exc}") from exc
        self.diag.extra.update(model=model, parameters_file=path or "(config)", path=ff.path)
        return ff

    def on_change(self, key, value):
        """feedforward_model / parameters_file set at run time: the new model, or the set is refused."""
        if key == "parameters_file" and value:
            root = self.s["parameters_dir"]
            if not root:
                raise InvalidInputError("parameters_file can change at run time only inside parameters_dir, which is "
                                        "not set (set it at start-up)")
            if not inside(value, root):
                raise InvalidInputError(f"parameters_file {value!r} is outside parameters_dir {root!r}")
        model = value if key == "feedforward_model" else self.s["feedforward_model"]
        path = value if key == "parameters_file" else self.s["parameters_file"]
        self.ff = self.build(model, path)

    def on_reload(self, request, response):
        try:
            self.ff = self.build(self.s["feedforward_model"], self.s["parameters_file"])
        except PkmError as exc:
            self.diag.reject("parameters_file", exc)
            response.success = False
            response.message = f"kept the previous model: {type(exc).__name__}: {exc}"
            return response
        response.success = True
        response.message = (f"model {self.ff.model} via {self.ff.path}, parameters "
                            f"{self.s['parameters_file'] or '(config)'}")
        self.get_logger().info(response.message)
        return response

    def on_trajectory(self, msg):
        cpu = time.thread_time_ns()
        c = parse_platform_trajectory(msg, self.ctx.task)
        if self.clock.passed(c):                  # fell behind: the loop is past all of it
            self.diag.extra["passed_chunks_dropped"] += 1
            return
        taus = np.empty((len(c.times_ns), self.ctx.n_actuated))
        for k in range(len(c.times_ns)):
            try:
                tau = np.asarray(self.ff.tau(Pose(c.positions[k], c.rotations[k]), c.twists[k], c.accels[k]), float)
                if not np.isfinite(tau).all():
                    raise InvalidInputError(f"feedforward at point {k} is not finite")
                self.last_tau = tau
            except PkmError as exc:
                self.diag.reject("trajectory point", exc)
                if self.last_tau is None:
                    # nothing valid yet: gravity compensation at home is the safest guess, zero if even that fails
                    try:
                        self.last_tau = np.asarray(self.ff.gravity(self.ctx.home()), float)
                    except PkmError:
                        self.last_tau = np.zeros(self.ctx.n_actuated)
            taus[k] = self.last_tau
            self.diag.step()
        self.pub.publish(joint_trajectory_msg(to_ns(msg.header.stamp), self.ctx.actuated_joints,
                                              c.times_ns, efforts=taus))
        self.cost.add(time.thread_time_ns() - cpu, c.times_ns)


def main(argv=None) -> int:
    return run_node(ComputedForceNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
