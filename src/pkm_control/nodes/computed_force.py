"""computed_force: feedforward actuator forces of the desired platform motion.

usage: computed_force [--help] [--ros-args -p robot:=palida -p model:=rigid+friction ...]

Input choice: this node subscribes the PLATFORM trajectory, not /joint_references. The
computed-force model is a task-space model (Abdellatif eq. 14: pose, twist and acceleration of
the platform); /platform_trajectory carries exactly those, whereas /joint_references would need
a forward kinematics and J^-1 per point to recover them. The points (times) are the same, so
/feedforward lines up with /joint_references sample by sample.

Subscribes
  /platform_trajectory   trajectory_msgs/MultiDOFJointTrajectory   desired platform motion (chunks)
Publishes
  /feedforward           trajectory_msgs/JointTrajectory            actuated joints, effort = tau_ff,
                                                                    same header stamp and point times
  /diagnostics           diagnostic_msgs/DiagnosticArray
Services
  ~/reload_parameters    std_srvs/Trigger   re-read `model` and `parameters_file` and rebuild the model

Node parameters (besides the common ones)
  model             none | rigid | rigid+friction     (default: the controller's feedforward_model)
  parameters_file   model parameter YAML (pkm_control.control.feedforward schema); '' = the config's
A point whose motion the model rejects (unreachable, singular) is counted, logged and replaced
by the last valid forces (never NaN).
"""

from __future__ import annotations

import numpy as np
from rclpy.node import Node

from ..errors import InvalidInputError, PkmError
from .common import (COMMON_PARAMS, FEEDFORWARD_MODELS, Diagnostics, declare_settings, guarded,
                     joint_trajectory_msg, parse_platform_trajectory, run_node, to_ns)

__doc__ += "\n" + COMMON_PARAMS


class ComputedForceNode(Node):
    def __init__(self, **kwargs):
        super().__init__("computed_force", **kwargs)
        from std_srvs.srv import Trigger
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        self.ctx, s = declare_settings(self)
        self.s = s
        self.declare_parameter("model", s["feedforward_model"])
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra["robot"] = self.ctx.robot
        self.dyn = self.ctx.dynamics()
        self.ff = self._build()
        self.last_tau = None
        self.pub = self.create_publisher(JointTrajectory, "/feedforward", 10)
        self.sub = self.create_subscription(MultiDOFJointTrajectory, "/platform_trajectory",
                                            guarded(self.diag, "platform_trajectory")(self.on_trajectory), 10)
        self.srv = self.create_service(Trigger, "~/reload_parameters", self.on_reload)

    def _build(self):
        from ..control.feedforward import FeedforwardModel

        model = self.get_parameter("model").value
        path = self.get_parameter("parameters_file").value
        if model not in FEEDFORWARD_MODELS:
            raise InvalidInputError(f"parameter model = {model!r} is not one of {FEEDFORWARD_MODELS}")
        ff = FeedforwardModel(self.dyn, model, path or None)
        self.diag.extra.update(model=model, parameters_file=path or "(config)", path=ff.path)
        return ff

    def on_reload(self, request, response):
        try:
            self.ff = self._build()
        except (PkmError, OSError) as exc:
            self.diag.reject("parameters_file", exc)
            response.success = False
            response.message = f"kept the previous model: {type(exc).__name__}: {exc}"
            return response
        response.success = True
        response.message = f"model {self.ff.model} via {self.ff.path}, parameters " \
                           f"{self.get_parameter('parameters_file').value or '(config)'}"
        self.get_logger().info(response.message)
        return response

    def on_trajectory(self, msg):
        chunk = parse_platform_trajectory(msg, self.ctx)
        taus = np.empty((len(chunk.times_ns), self.ctx.n_actuated))
        for k, (pose, tw, ac) in enumerate(zip(chunk.poses, chunk.twists, chunk.accels)):
            try:
                tau = np.asarray(self.ff.tau(pose, tw, ac), float)
                if not np.all(np.isfinite(tau)):
                    raise InvalidInputError(f"feedforward at point {k} is not finite")
                self.last_tau = tau
            except PkmError as exc:
                self.diag.reject("trajectory point", exc)
                if self.last_tau is None:
                    # nothing valid yet: gravity compensation at the point is the safest guess, zero if even
                    # that fails (pose outside the model's domain)
                    try:
                        self.last_tau = np.asarray(self.ff.gravity(self.ctx.home()), float)
                    except PkmError:
                        self.last_tau = np.zeros(self.ctx.n_actuated)
            taus[k] = self.last_tau
            self.diag.step()
        self.pub.publish(joint_trajectory_msg(to_ns(msg.header.stamp), self.ctx.actuated_joints,
                                              chunk.times_ns, efforts=taus))


def main(argv=None) -> int:
    return run_node(ComputedForceNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
