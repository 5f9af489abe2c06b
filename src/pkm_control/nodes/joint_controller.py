"""joint_controller: actuator forces from /joint_states and the buffered references, each control step.

usage: joint_controller [--help] [--ros-args -p robot:=palida -p mode:=pd_feedforward ...]

Subscribes
  /joint_states            sensor_msgs/JointState            measured joints: one control step each
  /joint_references        trajectory_msgs/JointTrajectory   actuated q_d, qd_d, qdd_d (buffered by time)
  /feedforward             trajectory_msgs/JointTrajectory   tau_ff as effort (mode pd_feedforward)
Publishes
  /<controller_name>/commands   std_msgs/Float64MultiArray   actuator forces (actuated-joint order),
                                                             saturated at actuators.force_limit
  /diagnostics             diagnostic_msgs/DiagnosticArray   rate, deadline misses, rejected inputs,
                                                             active safe behaviour, saturations

Laws (pkm_control.control, parameter `mode`)
  pd               tau = Kp (q_d - q) + Kd (qd_d - qd)                     (single joint, "SJ")
  pd_feedforward   tau = tau_ff(t) + PD, tau_ff from /feedforward           (computed force, "CF")
  computed_torque  tau = model(x, xd, J^-1 (qdd_d + Kp e + Kd e' - Jdot xd)) at the MEASURED
                   pose (forward kinematics of the measured joints, warm-started)

Timing. The references are looked up at the state's stamp (exact on the control grid, linear
between points). Lockstep (lockstep:=true): if the reference (or feedforward) for that time has
not arrived yet the step waits for it, bounded by lockstep_timeout (wall), so runs are
deterministic; after the timeout it commands the safe behaviour and counts a deadline miss.
Before the first reference ever arrives it waits without a bound (the run starts when the graph is up).
Real time: no waiting; the newest reference is used while it is younger than reference_timeout
(sim time), else the safe behaviour; a wall check every 10 ms commands the safe behaviour when
the last /joint_states is older than state_timeout (wall time: /clock stops with the hardware).

Safe behaviour (`safe_behaviour`): hold = gravity compensation at the pose where it engaged +
PD (hold_kp, hold_kd) to the actuated positions there; zero = no force. It ends with the next
valid step. A bad message is rejected (counted, logged) and the last output stays.
"""

from __future__ import annotations

import time

import numpy as np
from rclpy.node import Node

from ..errors import PkmError
from ..kinematics.forward import forward_kinematics
from .common import (COMMON_PARAMS, Diagnostics, SampleBuffer, commands_msg, declare_settings, guarded,
                     parse_joint_state, parse_joint_trajectory, period_ns, run_node)

__doc__ += "\n" + COMMON_PARAMS


class JointControllerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("joint_controller", **kwargs)
        from rclpy.clock import Clock, ClockType
        from sensor_msgs.msg import JointState
        from std_msgs.msg import Float64MultiArray
        from trajectory_msgs.msg import JointTrajectory

        from ..control import FeedforwardModel, ForceLimits, SafeBehaviour, make_law

        self.ctx, s = declare_settings(self)
        self.s = s
        n = self.ctx.n_actuated
        dyn = self.ctx.dynamics()
        self.mode = s["mode"]
        model = FeedforwardModel(dyn, s["feedforward_model"]) if self.mode == "computed_torque" else None
        self.law = make_law(self.mode, np.array(s["kp"]), np.array(s["kd"]), model)
        self.needs_ff = self.mode == "pd_feedforward"
        self.limits = ForceLimits.from_config(self.ctx.model)
        hold_model = FeedforwardModel(dyn, "rigid") if s["safe_behaviour"] == "hold" else None
        self.safe = SafeBehaviour(s["safe_behaviour"], hold_model, np.array(s["hold_kp"]), np.array(s["hold_kd"]))
        self.dt_ns = period_ns(s["control_rate"])
        self.refs = SampleBuffer()
        self.ffs = SampleBuffer()
        self.pending = None
        self.pending_since = 0.0
        self.last_t = None
        self.last_state_wall = None
        self._last_state = None           # the last state a command was computed for (real-time watchdog)
        self.guess = self.ctx.initial(s["initial_pose"])   # FK warm start (computed torque, hold capture)
        self.target = None                # hold target while the safe behaviour is active
        self.last_tau = np.zeros(n)
        self.cycle_us: list[float] = []
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.diag.extra.update(robot=self.ctx.robot, mode=self.mode, saturations=0)
        self.saturations = 0
        self.pub = self.create_publisher(Float64MultiArray, f"/{s['controller_name']}/commands", 10)
        self.sub_state = self.create_subscription(JointState, "/joint_states",
                                                  guarded(self.diag, "joint_states")(self.on_state), 10)
        self.sub_ref = self.create_subscription(JointTrajectory, "/joint_references",
                                                guarded(self.diag, "joint_references")(self.on_reference), 10)
        self.sub_ff = self.create_subscription(JointTrajectory, "/feedforward",
                                               guarded(self.diag, "feedforward")(self.on_feedforward), 10)
        wall = Clock(clock_type=ClockType.STEADY_TIME)
        check = min(0.01, s["lockstep_timeout"] / 4) if s["lockstep"] else 0.01
        self.timer = self.create_timer(check, self.on_timer, clock=wall)

    # ------------------------------------------------------------------ inputs
    def on_state(self, msg):
        st = parse_joint_state(msg, self.ctx)
        if self.last_t is not None and st.time_ns == self.last_t:
            return                         # the same state offered again (hardware start-up)
        if self.last_t is not None and st.time_ns < self.last_t:
            self.get_logger().info("sim time went back: hardware reset")
            self.target = None
        self.pending = st
        self.pending_since = time.monotonic()
        self.last_state_wall = self.pending_since
        self.try_step()

    def on_reference(self, msg):
        c = parse_joint_trajectory(msg, self.ctx.actuated_joints, ("positions", "velocities", "accelerations"))
        self.refs.add(c.times_ns, np.hstack([c.positions, c.velocities, c.accelerations]))
        self.try_step()

    def on_feedforward(self, msg):
        c = parse_joint_trajectory(msg, self.ctx.actuated_joints, ("effort",))
        self.ffs.add(c.times_ns, c.efforts)
        self.try_step()

    def on_timer(self):
        if self.s["lockstep"]:
            if self.pending is not None and (self.refs.end is None or (self.needs_ff and self.ffs.end is None)):
                # start-up: the lockstep run begins when the first reference is there (no safe-behaviour
                # steps while the graph is still being discovered), so every run starts the same way
                self.diag.warn("startup", "waiting for the first /joint_references" +
                               (" and /feedforward" if self.needs_ff else ""))
                return
            if self.pending is not None and time.monotonic() - self.pending_since >= self.s["lockstep_timeout"]:
                self.diag.miss("reference", f"no reference for sim time {self.pending.time_ns * 1e-9:.4f} s after "
                                            f"{self.s['lockstep_timeout']} s (wall): safe behaviour "
                                            f"'{self.safe.mode}'")
                self.try_step(force=True)
            return
        # real time: stale state -> command the safe behaviour from the last state. Wall time: if the
        # hardware stops, so does /clock, and a sim-time age would never grow.
        if self._last_state is not None and time.monotonic() - self.last_state_wall > self.s["state_timeout"]:
            self.diag.miss("state", f"no /joint_states for {self.s['state_timeout']} s (wall): safe behaviour "
                                    f"'{self.safe.mode}'")
            self.publish(self.safe_command(self._last_state))

    # ------------------------------------------------------------------ the step
    def lookup(self, t):
        """(reference row, feedforward) at t, or None where not available."""
        ref = self.refs.at(t)
        ff = self.ffs.at(t) if self.needs_ff else np.zeros(self.ctx.n_actuated)
        if not self.s["lockstep"]:
            timeout = int(self.s["reference_timeout"] * 1e9)
            if ref is None and self.refs.end is not None and 0 <= t - self.refs.end <= timeout:
                ref = self.refs.rows[-1]
            if ff is None and self.ffs.end is not None and 0 <= t - self.ffs.end <= timeout:
                ff = self.ffs.rows[-1]
        return ref, ff

    def try_step(self, force: bool = False):
        st = self.pending
        if st is None:
            return
        t0 = time.perf_counter()
        ref, ff = self.lookup(st.time_ns)
        if (ref is None or ff is None) and self.s["lockstep"] and not force:
            return                                     # wait for the reference of this time
        self.pending = None
        self.last_t = st.time_ns
        self._last_state = st
        if ref is None or ff is None:
            tau = self.safe_command(st)
        else:
            try:
                tau = self.control(st, ref, ff)
            except PkmError as exc:
                self.diag.reject("control step", exc)
                tau = self.safe_command(st)
        self.publish(tau)
        self.refs.prune(st.time_ns)
        self.ffs.prune(st.time_ns)
        us = (time.perf_counter() - t0) * 1e6
        self.cycle_us.append(us)
        if not self.s["lockstep"] and us * 1e3 > self.dt_ns:
            self.diag.miss("cycle", f"control step took {us:.0f} us > period {self.dt_ns / 1e3:.0f} us")
        if len(self.cycle_us) >= 1000:
            self.diag.extra["cycle_median_us"] = f"{np.median(self.cycle_us):.0f}"
            self.diag.extra["cycle_p99_us"] = f"{np.percentile(self.cycle_us, 99):.0f}"
            self.cycle_us.clear()

    def control(self, st, ref, ff):
        n = self.ctx.n_actuated
        q_d, qd_d, qdd_d = ref[:n], ref[n:2 * n], ref[2 * n:]
        pose = None
        if self.mode == "computed_torque":
            pose = self.measured_pose(st.position)
        tau = self.law.compute(q_d, qd_d, qdd_d, st.position, st.velocity, tau_ff=ff, pose=pose)
        if self.target is not None:
            self.get_logger().info("references back: leaving the safe behaviour")
        self.target = None
        self.diag.safe_behaviour = "none"
        return tau

    def measured_pose(self, q):
        self.guess = forward_kinematics(self.ctx.kin, q, self.guess, check_limits=False).pose
        return self.guess

    def safe_command(self, st):
        try:
            if self.target is None:
                pose = self.measured_pose(st.position) if self.safe.mode == "hold" else None
                self.target = self.safe.capture(st.position, pose)
                self.get_logger().warning(f"safe behaviour '{self.safe.mode}' engaged at sim time "
                                          f"{st.time_ns * 1e-9:.4f} s")
            self.diag.safe_behaviour = self.safe.mode
            return self.safe.command(self.target, st.position, st.velocity)
        except PkmError as exc:                       # even the safe behaviour failed: keep the last output
            self.diag.reject("safe behaviour", exc)
            return self.last_tau

    def publish(self, tau):
        tau, sat = self.limits.apply(np.asarray(tau, float))
        if sat.any():
            self.saturations += 1
            self.diag.extra["saturations"] = self.saturations
        if not np.all(np.isfinite(tau)):
            self.diag.reject("command", PkmError("computed a non-finite command; repeating the last one"))
            tau = self.last_tau
        self.last_tau = tau
        self.pub.publish(commands_msg(tau))
        self.diag.step()


def main(argv=None) -> int:
    return run_node(JointControllerNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
