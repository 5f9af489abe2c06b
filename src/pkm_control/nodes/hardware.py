"""hardware: the simulated robot as its own process, behind ros2_control's topics.

usage: hardware [--help] [--ros-args -p robot:=palida -p controller:=pd ...]

The robot of joint_controller's `hardware: topics` mode: it behaves as a ros2_control controller
manager would, so the same controller drives it and a real ros2_control machine; it is also the
stand-in for one in `hardware: ros2_control` (`pkm bringup --hardware ros2_control --stand-in`:
publish_clock false, joint_controller is then the time source). (With `hardware: sim`, the default,
the simulated robot runs inside joint_controller instead and this node is not started.)

topic_convention: forward_command (a joint_state_broadcaster and a forward_command_controller named
controller_name) or topic_based (the topic_based_ros2_control plugin's JointState topics).

Subscribes
  /<controller_name>/commands   std_msgs/Float64MultiArray   actuator forces (actuated-joint order);
                                                             topic_based: sensor_msgs/JointState (name,
                                                             effort) on joint_commands_topic
Publishes
  /joint_states                 sensor_msgs/JointState       the ACTUATED joints only (what drives
                                                             measure); effort = applied force;
                                                             topic_based: on joint_states_topic. Stamped
                                                             with sim time, or (stand-in in real time) with
                                                             this node's clock, as a controller manager does
  /hardware/ground_truth/joint_trajectory  trajectory_msgs/JointTrajectory   every joint, exact (tests,
                                                             plots): ground_truth_chunk samples per message,
                                                             one point each (a partial chunk at a reset, before
                                                             the first command and when no command came for
                                                             a tick of the lockstep timer, <= 0.1 s wall)
  /hardware/platform_pose       geometry_msgs/PoseStamped    ground-truth platform pose (every sample)
  /platform_wrench              geometry_msgs/WrenchStamped  (environment set) the simulated 6-axis force/torque
                                                             sensor at the tool (frame platform_tool: platform
                                                             axes), what the platform applies to the environment,
                                                             with the state's stamp, just before it
  /clock                        rosgraph_msgs/Clock          sim time (this node is the clock source;
                                                             publish_clock false: not published)
  /diagnostics                  diagnostic_msgs/DiagnosticArray
Services
  /hardware/reset               std_srvs/Trigger             restart at initial_pose (default home), sim time 0;
                                                             refused while the robot moves (and more than
                                                             control.services.SERVICE_RATE calls/s)
  /hardware/reset_force         std_srvs/Trigger             the same, while it moves too

Modes
  lockstep:=true   publish state k, wait for the command, step exactly 1/control_rate, publish
                   state k+1; no wall-clock timer drives the simulation. Until the first command
                   the state at t=0 is re-published every 0.1 s (wall) so late subscribers get it.
                   A command missing for 0.25 s (wall; at most a quarter of lockstep_timeout) has
                   state k re-sent, again every 0.25 s (the same stamp: joint_controller re-sends its
                   command once it is 0.5 s old, it was lost; pkm_control.control.lockstep). A
                   command missing for lockstep_timeout (wall) lets the plant step without it: the
                   plant's command_timeout (sim time) then applies the safe behaviour. No command
                   for 10 s (wall): /diagnostics WARN, 45 s: ERROR, naming the topic it waits on
                   (`pkm bringup --exit-when-done` then fails).
  lockstep:=false  a wall timer at control_rate steps the plant with the latest command;
                   command_timeout is then effectively wall time (sim time follows the timer).

Node parameters (besides the common ones; all read-only)
  control_rate, substeps, friction, command_timeout, safe_behaviour, lockstep, lockstep_timeout,
  controller_name, hold_kp, hold_kd (the hold behaviour's joint PD), force_limit,
  initial_pose (task coordinates of the start; '' = home), wait_for_recorder (lockstep: step only once the
  ground truth has a subscriber), ground_truth_rate (Hz of the ground truth samples, sim time; 0 = every step),
  ground_truth_chunk (samples per ground truth message, 1 to 10000), topic_convention, joint_states_topic,
  joint_commands_topic, publish_clock, true_parameters_file, encoder_resolution, encoder_counts_per_turn,
  effort_noise_std, measurement_seed (the simulated robot's own parameters and measurement: hardware/simulated.py;
  /joint_states then carries the measured positions and forces), environment ('' = free space, default =
  config/environment.yaml, or a YAML path: the surfaces the tool touches and the force/torque sensor)
"""

from __future__ import annotations

import time

from rclpy.node import Node

from ..control.lockstep import RESEND_AFTER, CommandStamps, LockstepWatch
from ..hardware.simulated import simulated_robot
from ..control.realtime import LatencyHistogram
from ..ros.hardware_io import ClockPublisher, SimulationTopics, TopicConvention, describe_plant
from ..control.laws import WRENCH
from ..ros.messages import joint_state_msg, period_ns, wrench_stamped_msg
from ..ros.peers import Sources
from ..ros.qos import COMMANDS, WRENCH_TOPIC, qos
from ..ros.runtime import COMMON_PARAMS, Diagnostics, ServiceGuard, declare_settings, guarded, run_node

__doc__ += "\n" + COMMON_PARAMS


class HardwareNode(Node):
    def __init__(self, plant=None, **kwargs):
        super().__init__("hardware", **kwargs)
        from rclpy.clock import Clock, ClockType
        from sensor_msgs.msg import JointState

        self.ctx, s = declare_settings(self, "hardware")
        self.s = s
        self.dt_ns = period_ns(s["control_rate"])
        self.plant = plant if plant is not None else simulated_robot(self.ctx.dynamics(), s)
        self.initial = self.ctx.initial(s["initial_pose"])
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra.update(robot=self.ctx.robot, mode="lockstep" if s["lockstep"] else "real-time")
        describe_plant(self, self.plant)
        self.topics = SimulationTopics(self, self.ctx.joint_names, s["ground_truth_chunk"])
        self.convention = TopicConvention.from_settings(s)
        self.clock = ClockPublisher(self) if s["publish_clock"] else None
        # a stand-in in real time stamps as a controller manager does, with its clock; else with sim time
        self.wall_stamps = not (s["publish_clock"] or s["lockstep"])
        self.pub_state = self.create_publisher(JointState, self.convention.states_topic, qos("/joint_states", "pub"))
        self.pub_wrench = None           # the simulated F/T sensor (parameter environment)
        if getattr(self.plant, "wrench_sensor", None) is not None:
            from geometry_msgs.msg import WrenchStamped

            self.pub_wrench = self.create_publisher(WrenchStamped, WRENCH_TOPIC, qos(WRENCH_TOPIC, "pub"))
        # the commands bound to one publisher (ros/peers.py; a second joint_controller's are refused); a reset rebinds
        self.guard = ServiceGuard(self, self.diag)
        self.sources = Sources(self, self.diag, s["sources"], self.guard)
        self.sub_cmd = self.sources.subscribe(self.convention.command_type, self.convention.commands_topic,
                                              self.on_command, qos(COMMANDS, "sub"), "command")
        self.measured = None            # the last published measurement: a reset is refused while it moves
        self.srv_reset = self.guard.reset_services(
            self.on_reset, lambda: None if self.measured is None else self.measured.velocity, self.ctx.actuated_joints)
        self.k = 0                      # steps taken: sim time = k * dt exactly
        self._truth_slot = None
        self.pending = None             # latest valid command not yet applied
        self.got_first = False
        self.waiting_since = time.monotonic()
        # twice as often as joint_controller's re-send: its answer comes before lockstep_timeout
        self.watch = LockstepWatch(self.waiting_since, min(RESEND_AFTER, s["lockstep_timeout"] / 2) / 2)
        self.command_stamps = CommandStamps()     # lockstep: a re-sent copy of a command applied is taken once
        if s["lockstep"]:
            self.diag.watch = self.watch
            self.diag.starting = lambda: None if self.got_first else self.awaited()
        self.step_us = LatencyHistogram()
        self.plant.reset(self.initial)
        wall = Clock(clock_type=ClockType.STEADY_TIME)
        if s["lockstep"]:
            self.timer = self.create_timer(min(0.1, s["lockstep_timeout"] / 4),
                                           guarded(self.diag, "step")(self.on_lockstep_timer), clock=wall)
        else:
            self.timer = self.create_timer(self.dt_ns * 1e-9, guarded(self.diag, "step")(self.on_wall_timer),
                                           clock=wall)
            self.jitter_us = LatencyHistogram()
            self.fresh = 0                # steps with a command computed since the previous step
            self.t_first = None           # the timer's first call: its period grid
            self.first_command_slot = None
            self.command_periods = 0      # grid periods since the first command
            self.diag_timer = self.create_timer(0.5, self.timing, clock=wall)
        self.publish_state()

    # ------------------------------------------------------------------ io
    def publish_state(self):
        t = self.k * self.dt_ns
        meas = self.measured = self.plant.read()
        if self.clock is not None:        # the clock first: a node handling /joint_states already sees its sim time
            self.clock.publish(t)
        stamp = self.get_clock().now().nanoseconds if self.wall_stamps else t
        wrench = meas.sensors.get(WRENCH)
        if self.pub_wrench is not None and wrench is not None:      # before the state it belongs to
            self.pub_wrench.publish(wrench_stamped_msg(stamp, wrench))
        self.pub_state.publish(joint_state_msg(stamp, self.ctx.actuated_joints, meas.position, meas.velocity,
                                               meas.effort))
        rate = self.s["ground_truth_rate"]
        slot = t // int(1e9 / rate) if rate > 0 else t
        if slot != self._truth_slot:
            self._truth_slot = slot
            # before the first command (state 0 offered) a sample goes out at once, later in chunks
            self.topics.ground_truth(t, self.plant.ground_truth(), flush=not self.got_first)
        self.diag.safe_behaviour = self.plant.mode if self.plant.safe_active else "none"
        self.watch.sent(time.monotonic())

    def advance(self):
        """Apply the pending command (if any), step the plant by dt, publish the new state."""
        if self.pending is not None:
            self.plant.write(self.pending, self.k * self.dt_ns * 1e-9)
            self.pending = None
        t0 = time.perf_counter()
        self.plant.step()
        self.step_us.add((time.perf_counter() - t0) * 1e6)
        self.k += 1
        self.diag.step()
        self.waiting_since = time.monotonic()
        self.publish_state()

    def on_wall_timer(self):
        """Real time: one step per timer call. The timer's period grid starts at its first call; a call's jitter
        is its lateness after the grid time it belongs to (a timer that falls behind skips grid periods). Since
        the first command, a grid period counts as met when a step in it had a command computed since the
        previous step (``fresh_command_steps`` of ``command_periods``)."""
        now = time.monotonic_ns()
        if self.t_first is None:
            self.t_first = now
        slot, late = divmod(now - self.t_first, self.dt_ns)
        self.jitter_us.add(late * 1e-3)
        if self.got_first:
            if self.first_command_slot is None:
                self.first_command_slot = slot
            self.command_periods = slot - self.first_command_slot + 1
            self.fresh += self.pending is not None
        self.advance()

    def timing(self):
        if self.jitter_us.n:
            self.diag.extra.update(fresh_command_steps=self.fresh, timer_steps=self.k,
                                   command_periods=self.command_periods,
                                   jitter_median_us=f"{self.jitter_us.percentile(50):.0f}",
                                   jitter_p99_us=f"{self.jitter_us.percentile(99):.0f}",
                                   jitter_max_us=f"{self.jitter_us.max:.0f}",
                                   plant_step_median_us=f"{self.step_us.percentile(50):.0f}",
                                   plant_step_p99_us=f"{self.step_us.percentile(99):.0f}")

    # ------------------------------------------------------------------ callbacks
    def on_command(self, msg):
        command = self.convention.parse_command(msg, self.ctx.actuated_joints)
        stamp = self.convention.command_stamp(msg)
        if self.s["lockstep"] and self.command_stamps.copy(stamp):
            self.diag.extra["repeated_commands"] = self.command_stamps.copies
            return                        # a re-sent copy of the command applied last (control.lockstep)
        self.pending = command
        if self.s["wait_for_recorder"] and self.topics.pub_truth.get_subscription_count() == 0:
            return                        # lockstep waits for the recorder: state 0 is offered again meanwhile
        self.got_first = True
        self.watch.progress(time.monotonic())
        if self.s["lockstep"]:
            self.command_stamps.applied(stamp)
            self.advance()

    def awaited(self) -> str:
        """What the lockstep waits for (the diagnostics' waiting_for)."""
        return (f"{'the first' if not self.got_first else 'a'} command on {self.convention.commands_topic} "
                f"(joint_controller) for sim time {self.k * self.dt_ns * 1e-9:.4f} s"
                + ("" if self.pub_state.get_subscription_count() else
                   f"; no subscriber on {self.convention.states_topic} yet"))

    def on_lockstep_timer(self):
        if self.watch.idle(time.monotonic()) >= self.watch.resend_after:
            self.watch.waiting_for = self.awaited()
        if not self.got_first:
            self.publish_state()          # nobody listening yet: offer state 0 again
            return
        self.topics.flush()               # waiting for a command: the samples of a partial chunk go out
        now = time.monotonic()
        if self.watch.resend_due(now):    # the command is late: state k again (joint_controller re-sends it)
            self.publish_state()
        if now - self.waiting_since >= self.s["lockstep_timeout"]:
            self.diag.miss("command", f"no command for {self.s['lockstep_timeout']} s (wall) at sim time "
                                      f"{self.k * self.dt_ns * 1e-9:.4f} s: stepping without it (plant command "
                                      f"timeout {self.s['command_timeout']} s sim time applies)")
            self.advance()

    def on_reset(self, request, response):
        self.topics.flush()               # the old timeline's last samples before the new one's first
        self.plant.reset(self.initial)
        self.k = 0
        self.pending = None
        self.got_first = False
        self.command_stamps.reset()
        self.sources.reset()
        self.waiting_since = time.monotonic()
        self.publish_state()
        response.success = True
        response.message = "reset to the initial pose (initial_pose, default home) at sim time 0"
        return response


def main(argv=None) -> int:
    return run_node(HardwareNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
