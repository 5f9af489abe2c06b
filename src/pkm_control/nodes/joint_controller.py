"""joint_controller: the real-time control path, read hardware -> estimate -> control law -> write hardware.

usage: joint_controller [--help] [--ros-args -p robot:=palida -p controller:=cf_rb_friction ...]

As ros2_control's controller manager, this node hosts the hardware interface and runs the loop of
pkm_control.control.ControlLoop in ONE thread at control_rate: read the actuated joints, estimate
the platform state (when the law or a publication needs it), update the controller
(pkm_control.control.Controller: law, watchdog, safe behaviour, force limits), write the command.
No DDS round trip happens inside a period: the references and the feedforward are streamed AHEAD
by the other nodes in time-stamped chunks and looked up at the period's instant.

hardware (parameter, read-only): a kind registered in the entry-point group pkm_control.hardware (hardware/plugin.py;
  another package adds its own, docs/hardware.md). What is specific to a kind (its supervision, its services, a
  status per device on /diagnostics) is its hardware interface's own (hardware/interface.py); pkm_control's kinds:
  sim      the simulated robot (pkm_control.hardware.SimulatedRobot) inside this process; this node
           is then the clock source (/clock) and publishes the robot's ground truth
  mujoco   MuJoCo as the robot (pkm_control.hardware.MujocoRobot, its model generated from the robot's
           description) inside this process, as sim; MuJoCo steps mujoco_timestep (default 0.1 ms) at a time
  topics   a robot behind topics, here the `hardware` node (the clock source): the actuated joints in,
           commands out, in the topic_convention below
  ros2_control  the same topics, the robot being a ros2_control controller manager (README "ros2_control
           bridge"); this node is then the time source: /clock carries the instants of its periods
           (the /joint_states stamps in lockstep, its own clock in real time)
  canopen  CiA 402 drives on a CAN bus (pkm_control.hardware.CanopenDrives; canopen_config, '' =
           config/canopen/<robot>.yaml), the master inside this process: real time only (lockstep is
           refused, the bus has its own clock), this node the time source (/clock: its periods'
           instants). The drives are configured at start-up (refused when the SYNC, PDOs and
           heartbeats exceed max_bus_load of the bitrate at control_rate) and enabled at the loop's
           first period. When the master latches a quick stop (heartbeat lost, drive fault, stale TPDOs)
           every drive gets quick stop instead of the command and holds (quick stop option 6), the
           reason is logged and in /diagnostics (drives_quick_stop), until ~/recover.
           canopen_emulate:=true: emulated drives around the simulated robot on python-can's virtual bus
           in this process (pkm_control.hardware.canopen_emulator.EmulatedCanopenRobot), as sim: lockstep
           or real time, /clock, ground truth, /hardware/reset (a new start-up of the drives)

topic_convention (hardware: topics | ros2_control)
  forward_command  joint_state_broadcaster + forward_command_controller: /joint_states in,
                   /<controller_name>/commands (std_msgs/Float64MultiArray) out
  topic_based      topic_based_ros2_control's JointState topics: joint_states_topic in, commands in the
                   effort field of a JointState on joint_commands_topic

Subscribes
  /joint_references        trajectory_msgs/JointTrajectory   actuated q_d, qd_d, qdd_d (chunks, buffered by time)
  /feedforward             trajectory_msgs/JointTrajectory   tau_ff as effort (laws that require it)
  /force_references        trajectory_msgs/JointTrajectory   (force laws) a hybrid goal's F_d and selection per
                                                             task coordinate (trajectory_generator): in place of
                                                             force_reference while streamed; in lockstep a period
                                                             waits for its sample
  /joint_states            sensor_msgs/JointState            (hardware: topics | ros2_control) the measured
                                                             actuated joints (topic_based: joint_states_topic)
  /platform_wrench         geometry_msgs/WrenchStamped       (hardware: topics | ros2_control, a force law with
                                                             the F/T sensor) the wrench at the tool; in lockstep a
                                                             period waits for the sample of its state's stamp
  /clock                   rosgraph_msgs/Clock               (hardware: topics, real time) the period's instant: the
                                                             hardware node's clock, bound to it and guarded
                                                             (trajectory.trust: forward by at most 0.1 s at once, back
                                                             only to the start, its reset); never through rclpy's time
                                                             source (use_sim_time is not used for the loop's time)
  Every stream is bound to one publisher (parameter sources; ros/peers.py); ~/rebind_sources rebinds them
Publishes
  /joint_states            sensor_msgs/JointState            (sim, mujoco, canopen) EVERY joint from the state
                                                             estimator (measured actuated joints, passive and
                                                             platform joints by forward kinematics), effort =
                                                             applied force, at state_publish_rate (sim time;
                                                             default 250 Hz, enough for RViz and TF)
  /estimated_joint_states  sensor_msgs/JointState            (hardware: topics | ros2_control) the same
  /clock                   rosgraph_msgs/Clock               (hardware: all but topics) the time of
                                                             the periods at clock_rate (default
                                                             200 Hz: every 5 ms of sim time)
  /hardware/ground_truth/joint_trajectory  trajectory_msgs/JointTrajectory  (sim, mujoco, emulated canopen) exact
                                                             state of every joint (positions, velocities, effort),
                                                             sampled at ground_truth_rate (default every period),
                                                             ground_truth_chunk samples per message (one point
                                                             each; a partial chunk when the lockstep loop waits
                                                             for a stream and at a reset)
  /hardware/platform_pose  geometry_msgs/PoseStamped         (sim, mujoco, emulated canopen) the exact platform pose at
                                                             state_publish_rate
  /platform_wrench         geometry_msgs/WrenchStamped       (sim, mujoco with an environment) the simulated 6-axis F/T
                                                             sensor at the tool (frame platform_tool: platform axes),
                                                             F_e the platform applies, at state_publish_rate
  /<controller_name>/commands   std_msgs/Float64MultiArray   (hardware: topics | ros2_control) actuator forces
                                                             (topic_based: a JointState on joint_commands_topic)
  /joint_controller/parameter_estimates  std_msgs/Float64MultiArray  (adaptive IDC modes) the estimated base
                                                             parameters at parameter_estimates_rate (sim time)
  /diagnostics             diagnostic_msgs/DiagnosticArray   rate, deadline misses, cycle time, plant step,
                                                             safe behaviour and its entries, saturations; (canopen)
                                                             a status per drive: state, error code, last EMCY
  /robot_description       std_msgs/String                   (hardware: all but ros2_control, whose URDF is the
                                                             controller manager's) the robot's URDF, once, latched
                                                             (robot_state_publisher's convention): it names the
                                                             robot of a recorded bag
Services
  /hardware/reset          std_srvs/Trigger                  (hardware: sim, mujoco, emulated canopen) back to
                                                             initial_pose at sim time 0; refused while the robot
                                                             moves (control.services.RESET_SPEED)
  /hardware/reset_force    std_srvs/Trigger                  the same, while it moves too
  ~/recover                std_srvs/Trigger                  (hardware: canopen) the drives back to Operation enabled
                                                             after a quick stop (CiA 402 state machine); the
                                                             controller then tracks the current references again
  Each service answers at most control.services.SERVICE_RATE calls/s (a burst of SERVICE_BURST); more are
  refused (success false), counted as service_refusals on /diagnostics

Timing
  lockstep:=true   deterministic: period k runs when the streams cover its instant k/control_rate (the
                   loop waits for them, bounded by lockstep_timeout wall seconds, then commands the
                   safe behaviour and counts a deadline miss); the run starts when the first reference
                   is there. With hardware: sim the plant steps right after the write and /clock
                   follows, so the graph runs as fast as the nodes stream (real-time factor > 1 when
                   they keep up). With a robot behind topics a period runs per received measurement, at its stamp;
                   the first one only once the robot's ends of the topics have matched (a command published
                   before would be lost), and when the robot re-sends the state a command answered (that command
                   was lost) the command is sent again, at most every 0.5 s (wall; pkm_control.control.lockstep).
                   No lockstep progress for 10 s (wall): /diagnostics WARN, 45 s: ERROR, the message and the key
                   waiting_for naming what it waits for (`pkm bringup --exit-when-done` then fails).
                   With wait_for_recorder the loop also keeps pace with its recorders: it runs at most
                   RECORDER_WINDOW periods whose /joint_states (or estimated joint states) and ground truth a
                   reliable reader has not acknowledged, then waits for the acknowledgements (a recorder that fell
                   behind: Fast DDS holds 5000 samples per reader whatever the depth, and a writer drops the oldest
                   unacknowledged ones beyond its history; neither is lost this way).
  lockstep:=false  real time: a dedicated thread runs the loop on absolute monotonic deadlines
                   (pkm_control.control.realtime: SCHED_FIFO at realtime_priority where permitted, pinned to
                   realtime_cpu if >= 0, the garbage collector frozen); a stream that ran dry repeats
                   its last sample for reference_timeout, then the safe behaviour engages. A
                   measurement older than state_timeout engages it too.

References outside the joint ranges, above the joints' velocity limits or jumping farther between two
periods than the velocity limit allows are refused (safe behaviour), as missing ones are.

Safe behaviour (`safe_behaviour`): hold = gravity compensation at the pose where it engaged + PD
(hold_kp, hold_kd) to the actuated positions there; zero = no force. It ends at the first period
whose inputs are valid again. Every command is limited to force_limit (<= the actuators' rating).

Node parameters (besides the common ones; run time: kp, kd, hold_kp, hold_kd, force_limit,
safe_behaviour, state_publish_rate and wait_for_recorder (`pkm record` sets 0, every period, and true while it
records in lockstep), force_reference; the others are read-only)
  hardware, control_rate, mode, feedforward_model (computed torque's model), kp, kd, hold_kp, hold_kd,
  force_limit, safe_behaviour, state_timeout, reference_timeout, lockstep, lockstep_timeout,
  controller_name, topic_convention, joint_states_topic, joint_commands_topic, initial_pose, state_publish_rate,
  ground_truth_rate, ground_truth_chunk (1 to 10000), clock_rate, substeps (sim), mujoco_timestep (mujoco),
  friction, command_timeout, actuator_lag (the simulated robot's), realtime_priority, realtime_cpu,
  wait_for_recorder (lockstep: start once the state is recorded, as launched; keep pace with the recorders),
  rho, boundary_layer (robust IDC), adaptation_gain,
  parameter_bound, parameter_estimates_rate (adaptive IDC), feedforward_lead (Codourey's T_m: the feedforward is
  looked up this long ahead of the regulator's references), canopen_config, canopen_emulate (hardware: canopen),
  true_parameters_file, encoder_resolution, encoder_counts_per_turn, effort_noise_std, measurement_seed (the
  simulated robot's own parameters and measurement: hardware/simulated.py), environment (sim, mujoco: '' = free
  space, default = config/environment.yaml, or a YAML path; mujoco: in MuJoCo's contact model,
  hardware/mujoco_contact.py), force_reference (run time; the force laws' set-point)

Force laws (controller: one of controllers.yaml force_controllers, control/force.py): kp, kd are the law's motion
gains, its other gains and limits (contact_force_limit, wrench_timeout, max_offset) in its section; the measured
wrench is the simulated sensor's (sim) or /platform_wrench's; a missing, stale, non-finite or excessive wrench
engages the safe behaviour. force_reference: {wrench: [F_d per task coordinate], selection: [force-controlled
coordinates]}, e.g. {wrench: [0, 0, -50, 0, 0, 0], selection: [z]}.
"""

from __future__ import annotations

import threading
import time
from functools import partial

import numpy as np
from rclpy.duration import Duration
from rclpy.node import Node

from ..control import (CONTROL, Controller, ControlLoop, FeedforwardModel, ForceLimits, ReferenceLimits, SafeBehaviour,
                       StateEstimator)
from ..control.force import FORCE_LAWS, force_law, force_settings, parse_force_reference, wrench_watch
from ..control.laws import MODEL_FREE, WRENCH, law_from_settings
from ..control.lockstep import RECORDER_WAIT, RESEND_AFTER, LockstepWatch
from ..errors import PkmError
from ..control.realtime import (LatencyHistogram, PeriodicRunner, SlicedWork, fifo_priority, prepare_realtime,
    release_realtime)
from ..ros.topology import estimated_state_topic
from ..hardware.interface import Simulated
from ..hardware.plugin import HardwareHost, hardware_plugin
from ..hardware.simulated import SimulatedRobot
from ..ros.cdr import JointTrajectoryReader
from ..ros.hardware_io import ClockPublisher, SimulationTopics, TopicHardware
from ..ros.messages import (joint_state_msg, parse_force_references, parse_joint_trajectory, period_ns,
                            wrench_stamped_msg)
from ..ros.peers import GraphClock, Sources
from ..ros.qos import ESTIMATES_TOPIC, FORCE_REFERENCES_TOPIC, WRENCH_TOPIC, qos
from ..ros.runtime import (COMMON_PARAMS, Diagnostics, PolledSubscriptions, ServiceGuard, declare_settings, guarded,
                           log_at, run_node, service_type)

__doc__ += "\n" + COMMON_PARAMS
#: real time: a slice of work between two periods (of a streamed chunk, of an observation) starts only while this
#: much remains before the next deadline. Measured in the loop's thread (per-period trace, planar_3rrr and five_bar,
#: load 3-8, median / p99 us): a streamed 10-sample chunk read from its bytes and spliced 90-116 / 140-166 (through
#: rclpy's deserialization and parse_joint_trajectory it was two slices, 155-222 / 244-293 each), the state estimate's
#: FK 186-214 / 231-274 (palida 51 / 83), its message 142-179 / 214-270, /clock 154-183 / 207-223
BACKGROUND_BUDGET_NS = 150_000
REFERENCE_FIELDS = ("positions", "velocities", "accelerations")     # of a /joint_references chunk
MAX_BURST = 400              # lockstep periods run in one callback before the executor gets the thread back
#: lockstep with wait_for_recorder: periods run at most before every reliable reader of the recorded observations has
#: acknowledged them (their check starts at half of it). Fast DDS holds 5000 samples per reader by default whatever
#: the QoS depth (measured here: a reliable reader of depth 50 000 that did not take got the first 5000 of 8000, keep
#: last and keep all alike), and acknowledges no more while it holds them: with a writer in another process that
#: waited for the acknowledgements every 1000 messages, a reader that did not take for 15 s got all 12 000. Without
#: that wait a loaded bringup recorded /joint_states for its first 0.55 s while the ground truth reached 4.4 s
RECORDER_WINDOW = 2000
NO_WAIT = Duration(seconds=0)


class JointControllerNode(Node):
    def __init__(self, **kwargs):
        super().__init__("joint_controller", **kwargs)
        self.loop = None                # None until the constructor built the loop: destroy_node has nothing to stop
        self._runner = None             # real time: the PeriodicRunner of the loop's thread
        from rclpy.clock import Clock as WallClock, ClockType
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from trajectory_msgs.msg import JointTrajectory

        from ..description.robots import robot_urdf

        self.ctx, s = declare_settings(self, "joint_controller", self.on_change)
        self.s = s
        self.dyn = self.ctx.dynamics()
        self.dt_ns = period_ns(s["control_rate"])
        self.initial = self.ctx.initial(s["initial_pose"])
        self.diag = Diagnostics(self, s["diagnostics_period"])
        self.guard = ServiceGuard(self, self.diag)
        # robot, variant and controller also name the run in a recorded bag (pkm_control.identification.runs)
        self.diag.extra.update(robot=self.ctx.robot, variant=self.ctx.kin.model.variant,
                               controller=self.get_parameter("controller").value, mode=s["mode"],
                               hardware=s["hardware"], feedforward_lead=s["feedforward_lead"],
                               timing="lockstep" if s["lockstep"] else "real-time", safe_entries=0, safe_periods=0,
                               safe_reason="", saturations=0)
        self.diag.before_publish += [self.timing, self.runner_timing]
        # every stream bound to one publisher (ros/peers.py); the reset rebinds the references and the feedforward
        self.sources = Sources(self, self.diag, s["sources"], self.guard)
        # the time of a period in real time (issue 22 §2): with hardware topics the graph's /clock (the hardware node
        # is the time source), bound and guarded as every node's (GraphClock); else this node's own system clock (it
        # is the time source). Never rclpy's time source (use_sim_time), which follows any /clock, unbound; in
        # lockstep a robot behind topics gives the period's time in its bound, guarded /joint_states stamps
        kind = hardware_plugin(s["hardware"])
        self.graph_clock = GraphClock(self.sources) if kind.time_source != "joint_controller" and not s["lockstep"] \
            else None
        self.system_clock = WallClock(clock_type=ClockType.SYSTEM_TIME)
        self.model = None if s["mode"] in MODEL_FREE else FeedforwardModel(self.dyn, s["feedforward_model"])
        law = self.make_law(s)
        controller = Controller(law, ForceLimits(s["force_limit"]), self.make_safe(s["safe_behaviour"]),
                                StateEstimator(self.ctx.kin), self.initial, s["state_timeout"],
                                ReferenceLimits.from_kinematics(self.ctx.kin),
                                wrench_watch=wrench_watch(self.force_settings(s), law) if self.force else None)
        # the robot, of the kind the hardware setting names (hardware/plugin.py): what is specific to it (supervision,
        # services, a status per device) stays behind the hardware contract (hardware/interface.py)
        self._new_measurement = None
        hardware = kind.create(HardwareHost(
            s, self.ctx, self.dyn, lambda: self.system_clock.now().nanoseconds * 1e-9,
            partial(log_at, self.get_logger()), self.diag.extra, node=self,
            sources=self.sources, on_measurement=self.on_measurement, on_repeated_state=self.on_repeated_state,
            wrench_point=self.wrench_point(s, law)))
        # the plant steps in this process, lockstep with the loop
        self.sim = isinstance(hardware, Simulated)
        self.diag.extra["actuator_lag"] = s["actuator_lag"] if isinstance(hardware, SimulatedRobot) else "n/a"
        if self.sim:
            hardware.reset(self.initial)
            self.sim_topics = SimulationTopics(self, self.ctx.joint_names, s["ground_truth_chunk"])
            self.srv_reset = self.guard.reset_services(self.on_reset, self.measured_velocity,
                                                       self.ctx.actuated_joints)
        self._enable = True                          # the hardware's enable hook at the loop's first period
        self.hardware_services = [self.guard.service(service_type(svc.type), svc.name, self.hardware_handler(svc))
                                  for svc in hardware.services()]
        self.diag.statuses = hardware.diagnostic_statuses          # a status per device (canopen: one per drive)
        # the graph's time source: the simulated robot inside, or the instants of the periods in front of a robot
        # that has no clock of its own for the graph (ros2_control, canopen); with hardware: topics, the hardware node
        self.clock = ClockPublisher(self) if kind.time_source == "joint_controller" else None
        self.check_contact(law, hardware, s)
        self.loop = ControlLoop(hardware, controller, int(round(s["reference_timeout"] * 1e9)),
                                int(round(s["feedforward_lead"] * 1e9)))
        self.loop.force_reference = parse_force_reference(s["force_reference"], self.ctx.task)
        # /platform_wrench: the simulated robot's force/torque sensor (the hardware side of this process)
        self.pub_wrench = None
        if self.sim and getattr(hardware, "wrench_sensor", None) is not None:
            from geometry_msgs.msg import WrenchStamped

            self.pub_wrench = self.create_publisher(WrenchStamped, WRENCH_TOPIC, qos(WRENCH_TOPIC, "pub"))
        self.pub_estimates = None
        if controller.law.estimates is not None:
            from std_msgs.msg import Float64MultiArray

            self.pub_estimates = self.create_publisher(Float64MultiArray, ESTIMATES_TOPIC, qos(ESTIMATES_TOPIC, "pub"))
        if kind.publishes_description:        # else the robot's side owns it (ros2_control's robot_state_publisher)
            self.pub_description = self.create_publisher(String, "/robot_description",
                                                         qos("/robot_description", "pub"))
            self.pub_description.publish(String(data=robot_urdf(self.ctx.robot, self.ctx.kin.model.variant)))
        state_topic = estimated_state_topic(s["hardware"])
        self.pub_state = self.create_publisher(JointState, state_topic, qos(state_topic, "pub"))
        # real time: the loop's thread takes the streams between its periods (one thread: no other thread holds
        # the interpreter lock while rclpy deserializes a chunk); lockstep: the executor runs them
        self.streams = PolledSubscriptions()
        self.work = SlicedWork()          # the observation topics (observe)
        self.reports = SlicedWork(1)      # real time: the diagnostics, published by the loop's thread (background)
        self._clock_due = None            # sim time to publish on /clock (observe)
        subscribe = self.create_subscription if s["lockstep"] else partial(self.streams.create, self)
        stream = partial(self.sources.subscribe, create=subscribe, release_held=s["lockstep"])
        self.sub_ref = self.chunk_stream(stream, "/joint_references", REFERENCE_FIELDS, self.on_reference,
                                         "joint_references")
        self.sub_ff = self.chunk_stream(stream, "/feedforward", ("effort",), self.on_feedforward, "feedforward")
        self.sub_force = stream(JointTrajectory, FORCE_REFERENCES_TOPIC, self.on_force_references,
                                qos(FORCE_REFERENCES_TOPIC, "sub"), "force_references") \
            if self.loop.takes_forces else None
        self.k = 0                      # sim: periods stepped, sim time = k * dt exactly
        self._publish_slots = {}
        self._cycle_us = LatencyHistogram()       # preallocated: no allocation in the loop
        self._step_us = LatencyHistogram()
        self._reset_request = threading.Event()
        self._handled = None
        self._started = False
        #: lockstep: the run starts only once the state is recorded (wait_for_recorder as launched; set at run time by
        #: `pkm record`, it paces the running loop only: a recorder attached later does not gate a restart)
        self._start_gated = s["wait_for_recorder"]
        self._unacked = 0               # periods run since the recorded observations were last all acknowledged
        self._run_start = None          # (wall s, sim ns) of the first period: the real-time factor
        self._last_t = None
        self._offered = self._waiting_since = time.monotonic()
        self.watch = LockstepWatch(self._offered, min(RESEND_AFTER, s["lockstep_timeout"] / 2))
        if s["lockstep"]:
            self.diag.watch = self.watch
            self.diag.starting = lambda: None if self._started else self.awaited(self.next_instant())
        wall = WallClock(clock_type=ClockType.STEADY_TIME)
        if s["lockstep"]:
            self.timer = self.create_timer(0.01, guarded(self.diag, "lockstep")(self.on_lockstep_timer), clock=wall)
            if self.sim:
                self.publish_observations(0)
        else:
            self.start_realtime()

    # ------------------------------------------------------------------ hardware
    def hardware_handler(self, svc):
        """A service of the hardware (HardwareService): its handler, then in lockstep the periods it lets run (the
        work it asked for is done between two periods, in ``supervise``)."""
        def handle(request, response):
            response = svc.handler(request, response)
            if self.s["lockstep"]:
                self.advance_ready()
            return response
        return handle

    def enable_hardware(self, t_ns: int):
        """The loop's first period: the hardware's enable hook (canopen: the drives to Operation enabled). A failure
        is reported; the hardware's own supervision holds the robot."""
        self._enable = False
        try:
            line = self.loop.hardware.enable(t_ns * 1e-9)
        except PkmError as exc:
            self.diag.reject("enable hardware", exc)
            return
        if line:
            self.get_logger().info(line)

    def supervise(self, t_ns: int):
        """Each period: the hardware's supervision (HardwareInterface.supervise) logged and in the diagnostics; a hold
        of the hardware's own shown as the safe behaviour."""
        report = self.loop.hardware.supervise(t_ns * 1e-9)
        if report is None:
            return
        for level, line in report.log:
            log_at(self.get_logger(), level, line)
        for key, value in report.diagnostics.items():
            if value is None:
                self.diag.extra.pop(key, None)
            else:
                self.diag.extra[key] = value
        if report.safe_behaviour is not None:
            self.diag.safe_behaviour = report.safe_behaviour

    # ------------------------------------------------------------------ settings
    @property
    def force(self) -> bool:
        """The controller is a force law (control/force.py; controllers.yaml force_controllers)."""
        return self.s["mode"] in FORCE_LAWS

    def force_settings(self, s):
        """The force law's own settings (force_settings), its motion gains the node's kp, kd."""
        fs = force_settings(self.dyn.model.name, s["controller"], s["controller_config"])
        fs["gains"]["motion"].update(kp=s["kp"], kd=s["kd"])
        return fs

    def wrench_point(self, s, law):
        """A robot behind topics: the F/T sensor's origin (platform frame) when the law reads /platform_wrench (the
        environment's tool point; no environment: the platform origin), else None."""
        if WRENCH not in law.requires or self.force_settings(s).get("wrench_source", "sensor") != "sensor":
            return None
        if not s["environment"]:
            return np.zeros(3)
        from ..hardware.simulated import plant_environment

        return plant_environment(self.dyn, s)[0].tool_point

    def check_contact(self, law, hardware, s) -> None:
        """A force law on a simulated environment: refuse (InvalidInputError) a surface stiffer than the law's gains
        hold at the control period (control/contact_stability.py)."""
        env = getattr(hardware, "environment", None)
        if not self.force or env is None:
            return
        from ..control.contact_stability import check
        from ..hardware.simulated import contact_mass

        check(law, env, contact_mass(self.dyn, env.tool_point), 1.0 / s["control_rate"],
              self.force_settings(s).get("wrench_source", "sensor"))

    def make_law(self, s):
        if s["mode"] in FORCE_LAWS:
            return force_law(self.force_settings(s), self.model, 1.0 / s["control_rate"])
        return law_from_settings(s, self.model, self.ctx.kin)

    def make_safe(self, mode):
        if mode == "zero":
            return SafeBehaviour("zero")
        return SafeBehaviour("hold", FeedforwardModel(self.dyn, "rigid"), np.array(self.s["hold_kp"]),
                             np.array(self.s["hold_kd"]))

    def on_change(self, key, value):
        """A run-time parameter (validated): the controller takes it from the next period on."""
        c = self.loop.controller
        s = dict(self.s, **{key: value})
        if key in ("kp", "kd"):
            law = self.make_law(s)
            self.check_contact(law, self.loop.hardware, s)
            if c.law.estimates is not None:       # adaptive: new gains, the same estimates
                law.reset(c.law.estimates)
            c.law = law
        elif key == "force_limit":
            c.limits = ForceLimits(value)
        elif key in ("state_publish_rate", "wait_for_recorder"):   # observe(), recorder_behind() at the next period
            self.s = s
        elif key == "force_reference":          # the force laws' set-point from the next period on
            self.loop.force_reference = parse_force_reference(value, self.ctx.task)
        else:                       # hold_kp, hold_kd, safe_behaviour
            self.s = s
            c.safe = self.make_safe(s["safe_behaviour"])
            c.target = None

    # ------------------------------------------------------------------ streams
    def chunk_stream(self, stream, topic: str, fields, on_chunk, what: str):
        """A bound JointTrajectory stream whose chunks (JointChunk, the actuated joints' ``fields``) go to
        ``on_chunk``: in lockstep the executor's messages, parsed; in real time the loop's thread takes the serialized
        bytes and reads them in one compiled call (ros.cdr.JointTrajectoryReader: one short slice between two
        periods instead of rclpy's deserialization and the parse, two of ~0.2 ms each there)."""
        from trajectory_msgs.msg import JointTrajectory

        names = self.ctx.actuated_joints
        if self.s["lockstep"]:
            return stream(JointTrajectory, topic, lambda msg: on_chunk(parse_joint_trajectory(msg, names, fields)),
                          qos(topic, "sub"), what)
        reader = JointTrajectoryReader(names, fields)
        return stream(JointTrajectory, topic, lambda data: on_chunk(reader.parse(data)), qos(topic, "sub"), what,
                      create=partial(self.streams.create, self, raw=True))

    def on_reference(self, c):
        self.loop.offer_references(c.times_ns, c.positions, c.velocities, c.accelerations)
        if self.s["lockstep"]:
            self.advance_ready()
        else:             # taken by the loop's thread between two periods: spliced now, not in the next period
            self.loop.drain()

    def on_force_references(self, msg):
        times, wrench, selection = parse_force_references(msg, self.ctx.task.names)
        self.loop.offer_forces(times, wrench, selection)
        if self.s["lockstep"]:
            self.advance_ready()
        else:
            self.loop.drain()

    def on_feedforward(self, c):
        self.loop.offer_feedforward(c.times_ns, c.efforts)
        if self.s["lockstep"]:
            self.advance_ready()
        else:
            self.loop.drain()

    def on_measurement(self, t_ns):
        self._new_measurement = t_ns
        if self.s["lockstep"]:
            self.advance_ready()

    def on_repeated_state(self, t_ns):
        """The robot re-sent a state (lockstep: it still waits for its command): the command for it, if one was
        sent and no newer state came for resend_after, was lost: sent again."""
        if self.s["lockstep"] and t_ns == self._handled and self.watch.resend_due(time.monotonic()):
            self.loop.hardware.resend()

    def measured_velocity(self):
        """The actuated velocity of the last period's measurement (None before the first)."""
        measured = self.loop.measured
        return None if measured is None else measured.velocity

    def on_reset(self, request, response):
        """/hardware/reset_force, and /hardware/reset of a robot at rest (ServiceGuard.reset_services): handled by
        the loop's thread between two periods (the plant is not stepped concurrently)."""
        self._reset_request.set()
        if self.s["lockstep"]:
            self.advance_ready()
        response.success = True
        response.message = "reset to the initial pose (initial_pose, default home) at sim time 0"
        return response

    def _apply_reset(self):
        self._reset_request.clear()
        self._handled = None
        self._started = False
        self._unacked = 0               # periods run since the recorded observations were last all acknowledged
        self._run_start = None
        self.loop.hardware.reset(self.initial)
        self.loop.clear_streams()
        self.sources.reset(self.sub_ref.topic_name, self.sub_ff.topic_name)
        c = self.loop.controller
        c.pose, c.pose_d, c.target, c.mode = self.initial, self.initial, None, "control"
        c.law.reset()
        self.k = 0
        self.flush_truth()               # the old timeline's last samples before the new one's first
        self.get_logger().info("hardware reset: initial pose at sim time 0")
        self.work.clear()
        self.publish_observations(0)

    # ------------------------------------------------------------------ one period
    def period(self, t_ns: int):
        """read -> estimate -> update -> write (and, simulated, step the plant); then the observations: published at
        once in lockstep, between the periods in real time."""
        if self._run_start is None:
            self._run_start = (time.monotonic(), t_ns)
        self._last_t = t_ns
        if self._enable:
            self.enable_hardware(t_ns)
        t0 = time.perf_counter()
        cmd = self.loop.cycle(t_ns)
        t1 = time.perf_counter()
        if self.sim:
            self.loop.hardware.step()
            self.k += 1
            t_ns = self.k * self.dt_ns
        t2 = time.perf_counter()
        self.record(cmd, (t1 - t0) * 1e6, (t2 - t1) * 1e6)
        self.supervise(t_ns)
        self.observe(t_ns)
        self.diag.step()
        if self.s["lockstep"]:
            self.flush_observations()

    def guarded_period(self, t_ns: int):
        try:
            self.period(t_ns)
        except Exception as exc:      # noqa: BLE001 - the loop never dies; the failure is counted and logged
            self.diag.reject("control period", exc)

    def record(self, cmd, cycle_us, step_us):
        c = self.loop.controller
        if cmd.engaged:
            self.get_logger().warning(f"safe behaviour '{cmd.mode}' engaged: {cmd.reason}")
        self.diag.safe_behaviour = "none" if cmd.mode == "control" else cmd.mode
        # safe_reason: why the safe behaviour commands now (or last did): the figure a benchmark explains itself with
        self.diag.extra.update(safe_entries=c.safe_entries, safe_periods=c.safe_periods, saturations=c.saturations)
        if cmd.mode != "control":
            self.diag.extra["safe_reason"] = cmd.reason
        contact = getattr(c.law, "contact", None)          # direct_force: free | contact | retreat (contact lost)
        if contact is not None:
            if contact == "retreat" and self.diag.extra.get("contact") != "retreat":
                self.get_logger().warning("contact lost: retreating (control/force.py DirectForce)")
            self.diag.extra["contact"] = contact
        self._cycle_us.add(cycle_us)
        self._step_us.add(step_us)

    def timing(self):
        """The period's timing figures into the diagnostics (before each publication, about once a second)."""
        cyc = self._cycle_us
        if cyc.n == 0:
            return
        median, p99 = cyc.percentiles(50, 99)
        self.diag.extra.update(cycle_median_us=f"{median:.0f}", cycle_p99_us=f"{p99:.0f}", periods=cyc.n)
        wall = 0.0 if self._run_start is None else time.monotonic() - self._run_start[0]
        if wall > 0:       # sim seconds per wall second since the first period
            self.diag.extra["real_time_factor"] = f"{(self._last_t - self._run_start[1]) * 1e-9 / wall:.4f}"
        if self.sim:
            median, p99 = self._step_us.percentiles(50, 99)
            self.diag.extra.update(plant_step_median_us=f"{median:.0f}", plant_step_p99_us=f"{p99:.0f}")

    def runner_timing(self):
        """Real time: the runner's figures (jitter, compute, deadline misses) into the diagnostics, a slice of their
        own between two periods (each histogram's percentiles sum its 20 000 bins)."""
        runner = self._runner
        if runner is None or self._cycle_us.n == 0:
            return
        self.diag.extra["observations_dropped"] = self.work.dropped     # real time: the loop had no slack for them
        st = runner.stats().summary()
        self.diag.deadline_misses = st["deadline_misses"]
        self.diag.extra.update({k: (f"{v:.2f}" if isinstance(v, float) else v) for k, v in st.items()
                                if k != "deadline_misses"})

    def _due(self, what: str, t_ns: int, rate: float, force: bool) -> bool:
        """t_ns is in another period of ``rate`` (Hz, sim time; 0 = every call) than the last publication."""
        slot = t_ns // int(1e9 / rate) if rate > 0 else t_ns
        if slot == self._publish_slots.get(what) and not force:
            return False
        self._publish_slots[what] = slot
        return True

    def observe(self, t_ns: int, force: bool = False):
        """Queue the observation topics due at sim time t_ns (``force``: all of them), as jobs of slices that fit
        between two periods (realtime.SlicedWork): /clock at clock_rate and the simulated robot's ground truth at
        ground_truth_rate, every joint from the state estimator at state_publish_rate."""
        hw = self.loop.hardware
        if self.clock is not None and self._due("clock", t_ns, self.s["clock_rate"], force):
            self._clock_due = t_ns        # the time source: never dropped, only the newest is sent
        state_due = self._due("state", t_ns, self.s["state_publish_rate"], force)
        if self.sim and self._due("truth", t_ns, self.s["ground_truth_rate"], force):
            self.work.add(self._truth_job(t_ns, hw.snapshot(), state_due, force))
        meas = hw.read()
        if state_due and meas is not None:
            self.work.add(self._state_job(t_ns, meas))
        if self.pub_estimates is not None and self._due("estimates", t_ns, self.s["parameter_estimates_rate"], force):
            self.work.add(self._estimates_job(self.loop.controller.law.estimates))

    def publish_observations(self, t_ns: int):
        """Every observation topic at t_ns, now (time offered to the graph, a reset)."""
        self.observe(t_ns, force=True)
        self.flush_observations()

    def flush_observations(self):
        """What observe() queued, sent now (lockstep: after each period)."""
        self.publish_clock()
        self.work.finish()

    def publish_clock(self) -> bool:
        if self._clock_due is None:
            return False
        t, self._clock_due = self._clock_due, None
        self.clock.publish(t)
        return True

    def _truth_job(self, t_ns, snapshot, pose: bool, flush: bool):
        state = self.loop.hardware.ground_truth(snapshot)
        yield
        self.sim_topics.ground_truth(t_ns, state, pose=pose, flush=flush)

    def _state_job(self, t_ns, meas):
        # three slices: the estimate (forward kinematics), every joint of it (inverse kinematics: with the numeric
        # family each is ~0.1 ms, together more than a slice's budget), the message
        try:
            est = self.loop.controller.estimate(meas)
            yield
            joints = self.ctx.kin.inverse(est.pose, est.twist, check_limits=False)
        except PkmError as exc:
            self.diag.reject("state estimate", exc)
            return
        yield
        q, v = joints.q, joints.v
        effort = np.zeros(len(q))
        effort[self.ctx.model.actuated_idx] = meas.effort
        self.pub_state.publish(joint_state_msg(t_ns, self.ctx.joint_names, q, v, effort))
        wrench = meas.sensors.get(WRENCH)
        if self.pub_wrench is not None and wrench is not None:
            self.pub_wrench.publish(wrench_stamped_msg(int(round(wrench.time * 1e9)), wrench))

    def _estimates_job(self, estimates):
        from std_msgs.msg import Float64MultiArray, MultiArrayDimension, MultiArrayLayout

        yield
        n = len(estimates)
        self.pub_estimates.publish(Float64MultiArray(
            layout=MultiArrayLayout(dim=[MultiArrayDimension(label="base_parameters", size=n, stride=n)]),
            data=estimates.tolist()))

    # ------------------------------------------------------------------ lockstep (event driven)
    def next_instant(self):
        """The instant of the next period: sim time k * dt, or the newest unhandled measurement (topics)."""
        if self.sim:
            return self.k * self.dt_ns
        return None if self._new_measurement == self._handled else self._new_measurement

    def started(self) -> bool:
        """A lockstep run starts with the first reference (and, with wait_for_recorder, once the robot's state is
        recorded: a subscriber on the ground truth, or on the estimated joint states for a robot behind topics);
        once started it runs until a reset."""
        if self._started:
            return True
        if self._start_gated:
            pub = self.sim_topics.pub_truth if self.sim else self.pub_state
            if pub.get_subscription_count() == 0:
                return False
        if isinstance(self.loop.hardware, TopicHardware) and self.loop.hardware.unmatched():
            return False                 # the first command would be lost
        self._started = self.loop.started()
        return self._started

    def flush_truth(self):
        """Send the ground truth samples of a partial chunk (hardware: sim)."""
        if self.sim:
            try:
                self.sim_topics.flush()
            except PkmError as exc:
                self.diag.reject("ground truth", exc)

    def advance_ready(self):
        """Run every period whose streams are there (at most MAX_BURST, then back to the executor). When the
        loop goes idle (it waits for a stream) the ground truth of a partial chunk is sent: a sample never
        waits for periods that may not come."""
        if self._reset_request.is_set():
            self._apply_reset()
        for _ in range(MAX_BURST):
            t = self.next_instant()
            if t is None or not self.started() or not self.loop.ready(t) or self.recorder_behind():
                self.flush_truth()
                return
            self.guarded_period(t)
            self._unacked += 1
            self._handled = t
            self._waiting_since = time.monotonic()
            self.watch.progress(self._waiting_since)
            self.watch.sent(self._waiting_since)        # the command (a robot behind topics answers it)

    def recorded(self) -> list:
        """The publishers of the observations a recorder must not lose (wait_for_recorder): the state estimate and,
        with a simulated robot in this process, its ground truth."""
        return [self.pub_state] + ([self.sim_topics.pub_truth] if self.sim else [])

    def recorder_behind(self) -> bool:
        """wait_for_recorder: RECORDER_WINDOW periods have run since every reliable reader of the recorded
        observations last acknowledged all of them, and they still have not (asked without waiting, from half the
        window on): the loop waits for its recorders (module constant RECORDER_WINDOW)."""
        if not self.s["wait_for_recorder"] or self._unacked < RECORDER_WINDOW // 2:
            return False
        if all(p.wait_for_all_acked(NO_WAIT) for p in self.recorded()):
            self._unacked = 0
            return False
        return self._unacked >= RECORDER_WINDOW

    def awaited(self, t) -> str:
        """What the lockstep loop waits for before the period at t (None: a robot behind topics, the next state)."""
        streams = "/joint_references (inverse_kinematics)" + (" and /feedforward (computed_force)"
                                                              if self.loop.controller.needs_feedforward else "")
        hw = self.loop.hardware
        if isinstance(hw, TopicHardware):
            robot = hw.robot
            missing = hw.unmatched()
            if missing:
                return f"{robot} on its topics: {', '.join(missing)}"
            if hw.measurement_ns is None:
                return f"the first {hw.convention.states_topic} from {robot}"
            if t is None:
                return (f"{hw.convention.states_topic} after sim time {hw.measurement_ns * 1e-9:.4f} s from {robot}, "
                        f"its answer to the command on {hw.convention.commands_topic}")
        if self._start_gated and not self._started:
            pub = self.sim_topics.pub_truth if self.sim else self.pub_state
            if pub.get_subscription_count() == 0:
                return f"a recorder on {pub.topic_name} (wait_for_recorder)"
        if self._unacked >= RECORDER_WINDOW:
            return (f"{RECORDER_WAIT} of {' and '.join(p.topic_name for p in self.recorded())} "
                    f"(wait_for_recorder: at most {RECORDER_WINDOW} periods ahead of them)")
        if t is None:
            return "the robot's next measurement (the next period's instant)"
        return f"{'the first ' if not self._started else ''}{streams} covering sim time {t * 1e-9:.4f} s"

    def on_lockstep_timer(self):
        """Wall-clock duties of lockstep: offer time 0 until the graph is up, announce the time again while the
        loop waits for a stream (a node that starts later, such as a restarted generator, learns it), bound the
        wait, say what it waits for once it waits long."""
        now = time.monotonic()
        t = self.next_instant()
        if self.watch.idle(now) >= self.watch.resend_after:
            self.watch.waiting_for = self.awaited(t)
        if t is None or not self.started():
            self._waiting_since = now
            if self.clock is not None and t is not None and now - self._offered > 0.1:
                self._offered = now                         # nobody listening yet: offer the time again
                self.publish_observations(t)
            return
        self.advance_ready()
        t = self.next_instant()
        if self.clock is not None and t is not None and now - self._waiting_since > 0.1 and \
                now - self._offered > 0.1:
            self._offered = now
            self.clock.publish(t)
        if t is not None and self._unacked >= RECORDER_WINDOW:
            self._waiting_since = now         # waiting for the recorders, not for a stream: no period without input
        elif t is not None and now - self._waiting_since >= self.s["lockstep_timeout"]:
            self.diag.miss("reference", f"no reference for sim time {t * 1e-9:.4f} s after "
                                        f"{self.s['lockstep_timeout']} s (wall): safe behaviour "
                                        f"'{self.loop.controller.safe.mode}'")
            self.guarded_period(t)
            self._handled = t
            self._waiting_since = time.monotonic()

    # ------------------------------------------------------------------ real time (own thread)
    def start_realtime(self):
        # every other thread of this process, below the loop: the executor (this one) shares the interpreter lock
        # with the loop, and the DDS threads the locks a publish takes; no other process may preempt one of them
        # while it holds a lock the loop waits for (measured: a publish from the loop then took 0.5 ms, up to 8 ms)
        why = fifo_priority(max(1, int(self.s["realtime_priority"]) - 10), whole_process=True)
        if why:
            self.get_logger().info(f"executor and DDS threads: {why}")
        self._runner = PeriodicRunner(self.dt_ns)
        # the loop's thread publishes the diagnostics between its periods: the executor's thread, which shares the
        # interpreter lock, then runs Python only for a service call or a parameter (measured: its wake-ups, ten a
        # second and the diagnostics' timer, held the lock 0.2-0.5 ms each, and the period they fell in overran)
        self.diag.take_timing()
        self._rt_thread = threading.Thread(target=guarded(self.diag, "real-time loop")(self._realtime),
                                           name="pkm_rt_loop", daemon=True)
        self._rt_thread.start()

    def realtime_instant(self):
        """Real time: the instant of the next period (ns): sim time k * dt with the robot inside, the graph's believed
        /clock with hardware topics (None before the first), else this node's system clock."""
        if self.sim:
            return self.k * self.dt_ns
        if self.graph_clock is not None:
            return self.graph_clock.ns
        return self.system_clock.now().nanoseconds

    def background(self) -> bool:
        """Between two periods, one slice: the clock (the other nodes' time), a streamed chunk (the loop needs it),
        the desired motion of the streamed samples the next periods take (ControlLoop.prepare: one sample's FK, ~30
        us, or a span packed; else the first period between two samples computes it), else the diagnostics (when
        due, a job of slices: never dropped behind the observations), else an observation."""
        try:
            if self.diag.due(time.monotonic()):
                self.reports.add(self.diag.publish_slices())
            return self.publish_clock() or self.streams.step() or self.loop.prepare() or self.reports.step() or \
                self.work.step()
        except Exception as exc:      # noqa: BLE001 - the loop never dies; the failure is counted and logged
            self.diag.reject("between periods", exc)
            return True

    def _realtime(self):
        setup = prepare_realtime(int(self.s["realtime_priority"]),
                                 None if self.s["realtime_cpu"] < 0 else int(self.s["realtime_cpu"]))
        self.get_logger().info(f"real-time loop at {self.s['control_rate']:.0f} Hz: {setup.summary()}")
        self.diag.extra["realtime"] = setup.summary()
        for note in setup.notes:
            self.get_logger().info(note)

        measuring = False

        def cycle(_k):
            nonlocal measuring
            if self._reset_request.is_set() and self.sim:
                self._apply_reset()
            t = self.realtime_instant()
            if t is None:                   # no believed /clock yet: nothing to command at
                return
            self.guarded_period(t)
            if not measuring and self.loop.command is not None and self.loop.command.mode == CONTROL:
                # the figures start with the run, at the first period the law controls (a lockstep run starts with
                # the first reference for its instant): the periods before it (the graph coming up, first calls,
                # the streams catching up with the clock) hold the robot and are not counted
                measuring = True
                self._runner.restart_stats()
                self._cycle_us.clear()
                self._step_us.clear()
                self.loop.controller.reset_counters()
        try:
            stats = self._runner.run(cycle, background=self.background, background_budget_ns=BACKGROUND_BUDGET_NS,
                                     warm=guarded(self.diag, "warm-up")(self.loop.rehearse))
        finally:
            release_realtime(setup)
        self.get_logger().info(f"real-time loop stopped: {stats.cycles} periods, {stats.misses} deadline misses "
                               f"({stats.miss_percent:.3f} %)")

    def destroy_node(self):
        if self.loop is None:          # the constructor refused a setting (rclpy.shutdown destroys it): nothing was
            return super().destroy_node()      # started, nothing to flush
        if self._runner is not None:
            self._runner.stop()
            self._rt_thread.join(timeout=1.0)
        if not (self._runner is not None and self._rt_thread.is_alive()):
            try:         # what the loop queued and the partial ground-truth chunk: no sample lost at shutdown
                self.flush_observations()
                self.flush_truth()
            except Exception as exc:      # noqa: BLE001 - shutting down: said, not raised
                self.get_logger().warning(f"observations not sent at shutdown: {type(exc).__name__}: {exc}")
            try:         # canopen: the drives disabled, the bus closed
                self.loop.hardware.close()
            except Exception as exc:      # noqa: BLE001 - shutting down: said, not raised
                self.get_logger().warning(f"hardware not closed at shutdown: {type(exc).__name__}: {exc}")
        return super().destroy_node()


def main(argv=None) -> int:
    return run_node(JointControllerNode, __doc__, argv)


if __name__ == "__main__":
    raise SystemExit(main())
