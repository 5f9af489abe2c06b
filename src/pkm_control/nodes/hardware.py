"""hardware: the simulated robot node (pkm_control.hardware.SimulatedRobot behind topics).

usage: hardware [--help] [--ros-args -p robot:=palida -p controller:=pd ...]

Subscribes
  /<controller_name>/commands   std_msgs/Float64MultiArray   actuator forces (actuated-joint order)
Publishes
  /joint_states                 sensor_msgs/JointState       all tree joints (platform joints too);
                                                             effort = actuator forces applied
  /hardware/platform_pose       geometry_msgs/PoseStamped    ground-truth platform pose
  /clock                        rosgraph_msgs/Clock          sim time (this node is the clock source)
  /diagnostics                  diagnostic_msgs/DiagnosticArray
Services
  ~/reset                       std_srvs/Trigger             restart at initial_pose (default home), sim time 0

Modes
  lockstep:=true   publish state k, wait for the command, step exactly 1/control_rate, publish
                   state k+1; no wall-clock timer drives the simulation. Until the first command
                   the state at t=0 is re-published every 0.1 s (wall) so late subscribers get it.
                   A command missing for lockstep_timeout (wall) lets the plant step without
                   it: the plant's command_timeout (sim time) then applies the safe behaviour.
  lockstep:=false  a wall timer at control_rate steps the plant with the latest command;
                   command_timeout is then effectively wall time (sim time follows the timer).

Node parameters (besides the common ones)
  control_rate, substeps, friction, command_timeout, safe_behaviour, lockstep, lockstep_timeout,
  controller_name, hold_kp, hold_kd (the hold behaviour's joint PD),
  initial_pose (task coordinates of the start; '' = home)
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node

from .common import (COMMON_PARAMS, Diagnostics, declare_settings, guarded, joint_state_msg,
                     parse_commands, period_ns, pose_stamped_msg, run_node, stamp_msg)

__doc__ += "\n" + COMMON_PARAMS


def make_plant(ctx, s):
    """The SimulatedRobot of the hardware core, configured from the node settings."""
    from ..control import FeedforwardModel, SafeBehaviour
    from ..hardware.simulated import SimulatedRobot

    dyn = ctx.dynamics()
    if s["safe_behaviour"] == "hold":
        safe = SafeBehaviour("hold", FeedforwardModel(dyn, "rigid"), np.asarray(s["hold_kp"]),
                             np.asarray(s["hold_kd"]))
    else:
        safe = SafeBehaviour("zero")
    return SimulatedRobot(dyn, 1.0 / s["control_rate"], substeps=s["substeps"], friction=s["friction"],
                          command_timeout=s["command_timeout"], safe_behaviour=safe)


class HardwareNode(Node):
    def __init__(self, plant=None, **kwargs):
        super().__init__("hardware", **kwargs)
        from rclpy.clock import Clock, ClockType
        from rosgraph_msgs.msg import Clock as ClockMsg
        from geometry_msgs.msg import PoseStamped
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from std_srvs.srv import Trigger

        self.ctx, s = declare_settings(self)
        self.s = s
        self.dt_ns = period_ns(s["control_rate"])
        self.plant = plant if plant is not None else make_plant(self.ctx, s)
        self.initial = self.ctx.initial(s["initial_pose"])
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra.update(robot=self.ctx.robot, mode="lockstep" if s["lockstep"] else "real-time")
        self.pub_clock = self.create_publisher(ClockMsg, "/clock", 10)
        self.pub_state = self.create_publisher(JointState, "/joint_states", 10)
        self.pub_pose = self.create_publisher(PoseStamped, "/hardware/platform_pose", 10)
        topic = f"/{s['controller_name']}/commands"
        self.sub_cmd = self.create_subscription(Float64MultiArray, topic,
                                                guarded(self.diag, "command")(self.on_command), 10)
        self.srv_reset = self.create_service(Trigger, "~/reset", self.on_reset)
        self._wall = Clock(clock_type=ClockType.STEADY_TIME)
        self.k = 0                      # steps taken: sim time = k * dt exactly
        self.pending = None             # latest valid command not yet applied
        self.got_first = False
        self.waiting_since = time.monotonic()
        self.step_us: list[float] = []
        self.plant.reset(self.initial)
        if s["lockstep"]:
            self.timer = self.create_timer(min(0.1, s["lockstep_timeout"] / 4),
                                           guarded(self.diag, "step")(self.on_lockstep_timer), clock=self._wall)
        else:
            self.timer = self.create_timer(self.dt_ns * 1e-9, guarded(self.diag, "step")(self.on_realtime_timer),
                                           clock=self._wall)
        self.publish_state()

    # ------------------------------------------------------------------ io
    @property
    def sim_time_ns(self) -> int:
        return self.k * self.dt_ns

    def publish_state(self):
        from rosgraph_msgs.msg import Clock as ClockMsg

        st = self.plant.read()
        t = self.sim_time_ns
        # the clock first: a node handling /joint_states already sees its sim time
        self.pub_clock.publish(ClockMsg(clock=stamp_msg(t)))
        try:
            msg = joint_state_msg(t, st.names, st.position, st.velocity, st.effort)
            pose = pose_stamped_msg(t, "base_link",
                                    st.platform_pose)
        except Exception as exc:    # a diverged plant: never publish NaN
            self.diag.reject("plant state", exc)
            return
        self.pub_state.publish(msg)
        self.pub_pose.publish(pose)
        self.diag.safe_behaviour = self.plant.mode if self.plant.safe_active else "none"
        self.waiting_since = time.monotonic()

    def advance(self):
        """Apply the pending command (if any), step the plant by dt, publish the new state."""
        t = self.sim_time_ns * 1e-9
        if self.pending is not None:
            self.plant.write(self.pending, t)
            self.pending = None
        t0 = time.perf_counter()
        self.plant.step()
        self.step_us.append((time.perf_counter() - t0) * 1e6)
        self.k += 1
        self.diag.step()
        if len(self.step_us) >= 2000:
            self.diag.extra["plant_step_median_us"] = f"{np.median(self.step_us):.0f}"
            self.step_us.clear()
        self.publish_state()

    # ------------------------------------------------------------------ callbacks
    def on_command(self, msg):
        tau = parse_commands(msg, self.ctx.n_actuated)
        self.pending = tau
        self.got_first = True
        if self.s["lockstep"]:
            self.advance()

    def on_lockstep_timer(self):
        if not self.got_first:
            self.publish_state()          # nobody listening yet: offer state 0 again
            return
        if time.monotonic() - self.waiting_since >= self.s["lockstep_timeout"]:
            self.diag.miss("command", f"no command for {self.s['lockstep_timeout']} s (wall) at sim time "
                                      f"{self.sim_time_ns * 1e-9:.4f} s: stepping without it (plant command "
                                      f"timeout {self.s['command_timeout']} s sim time applies)")
            self.advance()

    def on_realtime_timer(self):
        self.advance()

    def on_reset(self, request, response):
        self.plant.reset(self.initial)
        self.k = 0
        self.pending = None
        self.got_first = False
        self.publish_state()
        response.success = True
        response.message = "reset to the initial pose (initial_pose, default home) at sim time 0"
        return response


def main(argv=None) -> int:
    return run_node(HardwareNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
