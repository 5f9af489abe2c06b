"""`pkm bringup`: run the node graph without launch_ros (pip-only installs).

Starts the nodes of the graph (pkm_control.ros.topology.graph: four with the simulated robot inside
joint_controller, `--hardware sim`, the default; five with the robot in the `hardware` node,
`--hardware topics`) as separate processes with the same parameters a launch file gives them: one
generated ROS parameter file (``/**`` for the shared keys, a section per node for its own). It
forwards their output line by line with a ``[node]`` prefix and stops them cleanly on Ctrl-C,
SIGTERM or SIGHUP, at any moment (while they start, run or stop): SIGTERM to each node's process
group, again after 2 s (a node exits at once on a second signal, ros.runtime.run_node), SIGKILL 1 s
later. A second signal while it stops kills the nodes still running at once (SIGKILL);
a third ends bringup itself at once.
Killed itself (SIGKILL), its children get SIGTERM from the kernel (process.die_with_parent). If one
node exits on its own, the others are stopped and its exit status is returned.

With --exit-when-done (needs --goal) it records the run from this process and ends when the goal's
trajectory has finished (exit 0), or at once when the goal is rejected (exit 1), or when the graph
stalls (exit 4): at start-up (sim time still 0) after 60 s (wall) in which no node came up or
started and neither the goal's state nor sim time changed (progress-free time: a slow start-up on a
loaded machine is no stall), later when a node's lockstep has made no progress for 45 s (its
/diagnostics at ERROR) or a node's /diagnostics stopped for 45 s (stuck); the reason and the summary
name what each node waits for (its /diagnostics' waiting_for). It prints a summary of the run: goal status, sim and wall
durations, real-time factor (sim seconds per wall second, from the first motion to the end),
actuator tracking errors (RMS and max per actuated joint), platform position and orientation
errors, safe-behaviour entries and rejected inputs.
With --json the summary is one JSON object on stdout (the nodes' output then goes to stderr).

With --record the bag takes every message the nodes sent before they stopped (the recorder's queue
is drained before the bag is closed; in lockstep joint_controller runs at most 2000 periods ahead of
what its recorders acknowledged) and is closed with its metadata whatever ends the run (the goal,
a signal, a node that exits or is killed). A run whose recorders (the bag's /joint_states and ground
truth, the run recorder's samples) still miss samples (slots of the stream's rate without one between
its first sample and the goal's end) ends with exit status 5 (when it would have been 0) and one line
on stderr saying how many of which topics, as the JSON's lost_samples; a finished run whose tracking
could not be measured (nothing recorded within its motion) with exit status 6 and one line.

With --rviz (needs a ROS 2 installation: ros2, robot_state_publisher, tf2_ros, rviz2) it also
starts, as the launch file does, robot_state_publisher with the xacro-processed URDF for the
estimated joint states, a second one in namespace /desired (frame prefix desired/) for
/desired_joint_states with a static transform base_link -> desired/base_link, and RViz with
rviz/<robot>.rviz. This module's parent imports no ROS package before the graph runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass

import yaml

from ..errors import InvalidInputError
from ..control.lockstep import RECORDER_WAIT, STALL_ERROR
from ..control.settings import load_settings
from ..hardware.plugin import hardware_plugin
from ..ros.topology import estimated_state_topic, graph, robot_topics, stand_in_parameters, trusted_sources
from ..process import die_with_parent
from .signals import Stopped, signals_raise_stopped

#: the stop: (signal to every node's process group, s to wait for them before the next). SIGTERM, not SIGINT: a node
#: still starting its interpreter (no handler yet) ends quietly, not with a KeyboardInterrupt traceback; the second
#: SIGTERM ends a pkm node at once (ros.runtime.run_node)
STOP_SEQUENCE = ((signal.SIGTERM, 2.0), (signal.SIGTERM, 1.0), (signal.SIGKILL, 10.0))
LOST_SAMPLES = 5    # exit status of a run whose recording misses samples (when it would have been 0)
NOT_MEASURED = 6    # exit status of a finished run whose tracking could not be measured (when it would have been 0)
RECORD_STORAGES = ("sqlite3", "mcap")
#: s (wall) of start-up without progress (StartupWatch) before --exit-when-done gives the run up as stalled: a hang
#: guard, generous for a loaded 2-core machine (the longest step of a start-up there, a node's imports and models or
#: the generator's reachability check of the goal, takes ~15 s; a whole start-up 7-11 s at load 5)
STARTUP_STALL = 60.0


@dataclass(frozen=True)
class BringupOptions:
    """What one bringup runs: the options of `pkm bringup` (cli.graph.bringup_options reads them from its command
    line; the demo and the loop benchmark build their own). Checked as they are made: InvalidInputError naming the
    option."""

    robot: str = "palida"
    variant: str | None = None
    controller: str = "pd_feedforward"
    controller_config: str = ""            # the controller YAML ("": <share>/config/controllers.yaml)
    hardware: str = "sim"
    stand_in: bool = False
    goal: str | None = None                # trajectory spec (YAML/JSON) of the trajectory_generator
    true_parameters: str | None = None     # the simulated robot's own parameter set (YAML)
    overrides: tuple[str, ...] = ()        # --set [NODE.]KEY=VALUE, in order
    realtime: bool = False
    duration: float | None = None          # s (wall) until the graph is stopped; None: until stopped
    exit_when_done: bool = False
    json: bool = False
    timeout: float = 600.0                 # s (wall) with exit_when_done
    record: str | None = None              # the bag to record into
    record_storage: str = "sqlite3"
    rviz: bool = False
    dry_run: bool = False

    def __post_init__(self):
        hardware_plugin(self.hardware)                   # a registered kind (else the registered ones are listed)
        if self.record_storage not in RECORD_STORAGES:
            raise InvalidInputError(f"--record-storage must be one of {', '.join(RECORD_STORAGES)}, "
                                    f"got {self.record_storage!r}")
        stand_in_parameters(self.hardware, self.stand_in)       # the kind has a stand-in (else those that have)
        if not self.timeout > 0.0:
            raise InvalidInputError(f"--timeout must be more than 0 s, got {self.timeout!r}")
        if self.duration is not None and not self.duration >= 0.0:
            raise InvalidInputError(f"--duration must be at least 0 s, got {self.duration!r}")
        if self.exit_when_done and not self.goal:
            raise InvalidInputError("--exit-when-done needs --goal (the trajectory whose end ends the run)")
        if self.json and not self.exit_when_done:
            raise InvalidInputError("--json goes with --exit-when-done (the summary is the JSON)")


def parameters(options: BringupOptions) -> dict:
    """The ROS parameter file content: shared keys under /**, per-node keys under the node name."""
    shared = {"robot": options.robot, "controller": options.controller}
    if options.variant:
        shared["variant"] = options.variant
    if options.controller_config:
        shared["controller_config"] = os.path.abspath(options.controller_config)
    shared["hardware"] = options.hardware
    stand_in = options.stand_in
    # no node follows /clock through rclpy's time source, which believes any publisher (ros.topology.graph)
    per_node = {name: {"use_sim_time": False} for name in graph(options.hardware, stand_in)}
    for name, own in stand_in_parameters(options.hardware, stand_in).items():     # the kind's stand-in
        per_node[name].update(own)
    if options.goal:
        per_node["trajectory_generator"]["goal"] = options.goal
    if options.exit_when_done or options.record:     # recorded from its first sample
        shared["wait_for_recorder"] = True
    if options.record:                               # the identification needs every period (bag_recorder)
        per_node["joint_controller"]["state_publish_rate"] = 0.0
    if options.true_parameters:
        if not hardware_plugin(options.hardware).simulated_robot(stand_in):
            raise InvalidInputError(f"--true-parameters sets the simulated robot's parameters: --hardware "
                                    f"{options.hardware}{' with --stand-in' if stand_in else ''} has none (sim, "
                                    "topics, or a kind with --stand-in: ros2_control, canopen)")
        shared["true_parameters_file"] = true_parameters_file(options.true_parameters, options.robot, options.variant)
    for item in options.overrides:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"--set needs [NODE.]KEY=VALUE, got {item!r}")
        node, dot, key = key.rpartition(".")
        if dot and node not in per_node:
            raise InvalidInputError(f"--set {item!r}: unknown node {node!r} (nodes: {', '.join(per_node)})")
        try:
            parsed = yaml.safe_load(value)
        except yaml.YAMLError as exc:
            raise InvalidInputError(f"--set {item!r}: the value is not YAML ({str(exc)[:100]})") from exc
        if isinstance(parsed, list) and parsed and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                      for x in parsed):
            parsed = [float(x) for x in parsed]     # ROS parameter arrays have one type: [0, 0.5] -> doubles
        (per_node[node] if dot else shared)[key] = parsed
    defaults = load_settings(shared["robot"], shared["controller"], shared.get("controller_config", ""))
    if options.realtime:          # the real-time rates (settings.realtime_settings), each overridden by a --set
        from ..control.settings import realtime_settings

        rate = {**defaults, **shared}["control_rate"]
        shared.update({key: value for key, value in realtime_settings(rate).items() if key not in shared})
    if "sources" not in shared:          # every stream bound to the graph's own node by name (ros.topology)
        s = {**defaults, **shared, **per_node["joint_controller"]}
        shared["sources"] = trusted_sources(options.hardware, stand_in, robot_topics(s))
    doc = {"/**": {"ros__parameters": shared}}
    for name, values in per_node.items():
        doc[name] = {"ros__parameters": values}
    return doc


def true_parameters_file(path: str, robot: str, variant: str | None) -> str:
    """The absolute path of a parameter set for the simulated robot, read and checked for ``robot`` before any node
    starts (InvalidInputError naming what is wrong)."""
    from ..control.feedforward import load_parameter_set
    from ..dynamics import robot_dynamics

    load_parameter_set(path, robot_dynamics(robot, variant))
    return os.path.abspath(path)


def commands(options: BringupOptions, params_file: str) -> list[tuple[str, list[str]]]:
    """(name, argv) of every process to start."""
    out = [(name, [sys.executable, "-m", f"pkm_control.nodes.{name}", "--ros-args", "-r", f"__node:={name}",
                   "--params-file", params_file]) for name in graph(options.hardware, options.stand_in)]
    if options.rviz:
        from ..description.robots import robot_rviz, robot_urdf

        robot = options.robot
        rsp = os.path.join(os.path.dirname(params_file), "robot_state_publisher.yaml")
        if not options.dry_run:
            urdf = robot_urdf(robot, options.variant)
            with open(rsp, "w") as f:
                yaml.safe_dump({"/robot_state_publisher": {"ros__parameters": {
                                   "robot_description": urdf, "use_sim_time": True}},
                                "/desired/robot_state_publisher": {"ros__parameters": {
                                    "robot_description": urdf, "use_sim_time": True,
                                    "frame_prefix": "desired/"}}}, f)
        rsp_cmd = ["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args"]
        out.append(("robot_state_publisher", rsp_cmd + ["-r",
                                                        f"joint_states:={estimated_state_topic(options.hardware)}",
                                                        "--params-file", rsp]))
        # the desired robot (as in launch/bringup.launch.py): /desired_joint_states with frame prefix desired/
        out.append(("desired_state_publisher", rsp_cmd + ["-r", "__ns:=/desired", "-r",
                                                          "joint_states:=/desired_joint_states", "--params-file", rsp]))
        out.append(("desired_root", ["ros2", "run", "tf2_ros", "static_transform_publisher", "--frame-id",
                                     "base_link", "--child-frame-id", "desired/base_link"]))
        rviz = robot_rviz(robot)
        out.append(("rviz2", ["ros2", "run", "rviz2", "rviz2", *([] if rviz is None else ["-d", str(rviz)]),
                              "--ros-args", "-p", "use_sim_time:=true"]))
    return out


def _forward(name: str, stream, lock: threading.Lock, out) -> None:
    for line in iter(stream.readline, ""):
        with lock:
            out.write(f"[{name}] {line}" if line.endswith("\n") else f"[{name}] {line}\n")
            out.flush()
    stream.close()


def _signal_group(p, sig) -> None:
    """sig to the process group of p (its own session: the node and whatever it started), unless p was reaped."""
    if p.returncode is None:
        try:
            os.killpg(p.pid, sig)
        except (ProcessLookupError, PermissionError):      # gone already
            pass


class Graph:
    """The node processes of one bringup, started from a parameter file in a temporary folder."""

    def __init__(self, options: BringupOptions, out=None):
        self.options = options
        self.out = out or (sys.stderr if options.json else sys.stdout)
        self.lock = threading.Lock()
        self.tmp = tempfile.mkdtemp(prefix="pkm_bringup_")
        self.params_file = os.path.join(self.tmp, "parameters.yaml")
        with open(self.params_file, "w") as f:
            f.write(yaml.safe_dump(parameters(options), sort_keys=False))
        self.procs = []
        self.names = graph(options.hardware, options.stand_in)      # the pkm nodes (not RViz and its helpers)
        self.killed_on = None       # the signal that made the stop kill the nodes (``kill``)
        self.kills = 0

    def log(self, msg):
        with self.lock:
            print(f"[bringup] {msg}", file=self.out, flush=True)

    def start(self, stop=None):
        """Start every node; ``stop``: the StopRequest whose signal waits until a node being started is known."""
        env = dict(os.environ, PYTHONUNBUFFERED="1")
        for name, argv in commands(self.options, self.params_file):
            # own session: a terminal Ctrl-C reaches bringup only, which then stops the children in order; each
            # gets SIGTERM when this process dies, killed (SIGKILL) or not. A signal waits until the child is in
            # self.procs: the stop knows every node started
            with contextlib.nullcontext() if stop is None else stop.held():
                p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                     start_new_session=True, preexec_fn=die_with_parent())
                self.procs.append((name, p))
            threading.Thread(target=_forward, args=(name, p.stdout, self.lock, self.out), daemon=True).start()
            self.log(f"started {name} (pid {p.pid})")

    def exited(self):
        """(name, status) of the first child that exited, or None."""
        return next(((n, p.returncode) for n, p in self.procs if p.poll() is not None), None)

    def kill(self, name: str) -> None:
        """A signal during the stop (StopRequest.escalate, run in a signal handler: no lock taken): SIGKILL to every
        node still running, now; the third ends bringup itself at once (whatever it was waiting for)."""
        self.killed_on = name
        self.kills += 1
        for _, p in self.procs:
            _signal_group(p, signal.SIGKILL)
        if self.kills >= 3:
            os.write(2, f"[bringup] {name} a third time while stopping: exiting now\n".encode())
            os._exit(128 + signal.Signals[name])

    def stop(self):
        """The nodes stopped (STOP_SEQUENCE; at once with SIGKILL after a second signal, ``kill``), each reaped."""
        t0, running = time.monotonic(), [(n, p) for n, p in self.procs if p.poll() is None]
        for sig, wait in STOP_SEQUENCE:
            alive = [(n, p) for n, p in self.procs if p.poll() is None]
            if not alive:
                break
            for _, p in alive:
                _signal_group(p, sig)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and any(p.poll() is None for _, p in alive):
                time.sleep(0.02)
            left = [n for n, p in alive if p.poll() is None]
            if left and sig != signal.SIGKILL and self.killed_on is None:
                self.log(f"still running {wait:g} s after {signal.Signals(sig).name}: {', '.join(left)}")
        if self.killed_on is not None:
            self.log(f"{self.killed_on} while stopping: the nodes still running were killed (SIGKILL)")
        if running:
            self.log(f"{len(running)} nodes stopped in {time.monotonic() - t0:.2f} s: "
                     + ", ".join(f"{n} {p.returncode}" for n, p in running))
        shutil.rmtree(self.tmp, ignore_errors=True)


def run(options: BringupOptions) -> int:
    if options.rviz and shutil.which("ros2") is None:
        print("pkm bringup: --rviz needs a ROS 2 installation (ros2, robot_state_publisher, rviz2 on PATH); "
              "without it run the graph without --rviz", file=sys.stderr)
        return 2
    if options.dry_run:
        params_file = os.path.join(tempfile.gettempdir(), "pkm_bringup_XXXX", "parameters.yaml")
        print(f"# parameter file {params_file}:")
        print("\n".join("#   " + line for line in yaml.safe_dump(parameters(options), sort_keys=False).splitlines()))
        for name, argv in commands(options, params_file):
            print(f"{name}: {shlex.join(argv)}")
        return 0
    if options.exit_when_done:
        summary = run_recorded(options)[0]
        if options.json:
            print(json.dumps({k: v for k, v in summary.items() if not k.startswith("_")}, indent=2))
        else:
            print(format_summary(summary))
        code = {"finished": 0, "rejected": 1, "stalled": 4}.get(summary["goal_status"], 3)
        return _measured(summary, _lost(summary["lost_samples"], code))
    bag = _bag_recorder(options)       # before the graph: a bag that cannot be created fails here
    g = Graph(options)
    code = 0
    with signals_raise_stopped() as stop:
        stop.escalate = g.kill
        try:
            g.start(stop)
            t_end = None if options.duration is None else time.monotonic() + options.duration
            while True:
                stop.check()
                done = g.exited()
                if done:
                    code, stop.stopping = done[1], True      # a signal from here on hastens the stop
                    g.log(f"{done[0]} exited with status {done[1]}: stopping the graph")
                    break
                if t_end is not None and time.monotonic() >= t_end:
                    stop.stopping = True
                    g.log(f"--duration {options.duration} s reached: stopping the graph")
                    break
                if bag is None:
                    time.sleep(0.1)
                else:
                    bag.spin_once(0.1)
            stop.stopping = True      # from here a signal hastens the stop (signals.StopRequest), never cuts it
        except Stopped as exc:
            g.log(f"{exc}: stopping the graph")
        finally:
            stop.stopping = True
            g.stop()
            summary = None
            if bag is not None:
                from .bag_recorder import format_summary as bag_lines

                summary = _close_bag(bag, options, stop)
                g.log(bag_lines(summary))
    return _lost([] if summary is None else summary["lost_samples"], code)


def _close_bag(bag, options: BringupOptions, stop, end: float | None = None) -> dict:
    """The bag drained and closed (a signal during the drain cuts it short), its summary (``end``: the goal's end;
    the ground truth counted at its rate, ``stream_slots``)."""
    try:
        bag.close(abort=lambda: stop.again > 0)
    finally:
        bag.session.close()
    return bag.summary(_control_rate(options), end, _truth_rate(options))


def _lost(lost: list, code: int) -> int:
    """The exit status: LOST_SAMPLES instead of 0 when a recording misses samples (``lost``: graph.losses.loss_json's
    entries), said in one line on stderr."""
    from .losses import loss_line

    line = loss_line(lost)
    if line is None:
        return code
    print(f"pkm bringup: {line}", file=sys.stderr, flush=True)
    return code or LOST_SAMPLES


def _measured(summary: dict, code: int) -> int:
    """The exit status: NOT_MEASURED instead of 0 when a finished run's tracking could not be measured (nothing
    recorded within its motion), said in one line on stderr."""
    if summary["goal_status"] != "finished" or not summary.get("tracking"):
        return code
    print(f"pkm bringup: the run's tracking was not measured: {summary['tracking']}", file=sys.stderr, flush=True)
    return code or NOT_MEASURED


def _bag_recorder(options: BringupOptions):
    """The BagRecorder of --record (None without it), on the domain the nodes take from the environment; the
    ground truth and the estimated joint states are its gated topics (bag_recorder: the lockstep run starts
    when /joint_states reaches the bag); its streams bound to the graph's nodes (``sources``, as theirs)."""
    if not options.record:
        return None
    from ..ros.topology import GROUND_TRUTH_TOPIC, domain_id
    from .bag_recorder import BagRecorder
    from .tools import Session

    session = Session(domain_id(None, isolated=False), "bringup_record")
    try:
        return BagRecorder(session, options.record, storage=options.record_storage,
                           gated=(GROUND_TRUTH_TOPIC, "/estimated_joint_states"),
                           sources=parameters(options)["/**"]["ros__parameters"]["sources"])
    except BaseException:
        session.close()
        raise


def _in_process(options: BringupOptions) -> bool:
    """joint_controller steps the robot in its process (its ground truth only): its own settings decide."""
    params = parameters(options)
    return hardware_plugin(options.hardware).in_process({**params["/**"]["ros__parameters"],
                                                         **params["joint_controller"]["ros__parameters"]})


def _setting(options: BringupOptions, key: str, node: str = "joint_controller") -> float:
    """A node's numeric setting in this bringup: --set (the node's own, then the shared one), else the controller
    YAML's."""
    params = parameters(options)
    for section in (node, "/**"):
        value = params.get(section, {}).get("ros__parameters", {}).get(key)
        if value is not None:
            return float(value)
    return float(load_settings(options.robot, options.controller, options.controller_config)[key])


def _control_rate(options: BringupOptions) -> float:
    """joint_controller's control_rate in this bringup."""
    return _setting(options, "control_rate")


def stream_slots(options: BringupOptions) -> dict:
    """topic -> slot (ns, graph.losses) of the sample streams whose losses the recorders count: the simulated robot's
    ground truth at the ground_truth_rate of the node that steps it (joint_controller in process, else the hardware
    node, if the graph has one) and joint_controller's estimated joint states at its state_publish_rate."""
    from ..ros.topology import GROUND_TRUTH_TOPIC
    from .losses import slot_ns

    rate, truth = _control_rate(options), _truth_rate(options)
    slots = {estimated_state_topic(options.hardware): slot_ns(_setting(options, "state_publish_rate"), rate)}
    if truth is not None:
        slots[GROUND_TRUTH_TOPIC] = slot_ns(truth, rate)
    return slots


def _truth_rate(options: BringupOptions) -> float | None:
    """The ground_truth_rate of the node that steps the simulated robot (joint_controller in process, else the hardware
    node), None when the graph has neither."""
    node = "joint_controller" if _in_process(options) else "hardware"
    return _setting(options, "ground_truth_rate", node) if node in parameters(options) else None


def run_recorded(options: BringupOptions, progress=None, out=None):
    """Run the graph until the goal has finished (or was rejected, or the graph failed); record it.

    Returns (summary dict, RunRecord or None). progress(sim_time, status) is called while it runs;
    out: where the nodes' output goes (default stdout, stderr with --json). The real-time factor is
    joint_controller's own (sim time advanced per wall second since its first period).
    """
    import math

    from ..kinematics import robot_kinematics
    from ..control.settings import robot_context
    from ..trajectory.streaming import parse_goal
    from .losses import loss_json
    from .recorder import GraphRecorder, outcome

    robot = options.robot
    kin = robot_kinematics(robot, options.variant)
    spec = parse_goal(options.goal)     # the generator's own reading: a bad goal is an InvalidInputError here too
    params = parameters(options)
    initial_value = params["trajectory_generator"]["ros__parameters"].get(
        "initial_pose", params["/**"]["ros__parameters"].get("initial_pose", ""))
    initial = robot_context(robot, options.variant).initial(initial_value)
    in_process = _in_process(options)
    bag = _bag_recorder(options)
    from .bag_recorder import REPAIR_WAIT
    # with --record the bag's ground truth subscription starts the lockstep run (wait_for_recorder: one subscriber
    # is enough, so there is one) and the run's recorder takes the ground truth from the bag
    rec = GraphRecorder(kin, options.hardware, in_process=in_process, subscribe_truth=bag is None,
                        sources=params["/**"]["ros__parameters"]["sources"])     # bound as the nodes' streams
    if bag is not None:
        from ..ros.topology import GROUND_TRUTH_TOPIC

        bag.listeners[GROUND_TRUTH_TOPIC] = rec.on_truth
    g = Graph(options, out)
    t_wall0 = time.monotonic()
    startup = StartupWatch(t_wall0)
    t_motion = None            # wall time when sim time first passed the motion start
    status, reason = "timeout", ""
    recorders = (None, t_wall0)        # (messages the recorders had taken, wall s when that count last moved)
    record = None
    bag_summary = None
    with signals_raise_stopped() as stop:
        stop.escalate = g.kill
        try:
            g.start(stop)
            while True:
                stop.check()
                rec.spin_once(0.05 if bag is None else 0.0)
                if bag is not None:
                    bag.spin_once(0.05)
                st = rec.status
                sim = rec.sim_time
                # the first look at sim time past the motion's start; a short lockstep goal may be finished by then
                if st.get("state") in ("started", "finished") and t_motion is None and sim >= st["motion_start"]:
                    t_motion = time.monotonic()
                if progress is not None:
                    progress(sim, st)
                if st.get("state") == "rejected":
                    status, reason = "rejected", st.get("reason", "")
                    break
                if st.get("state") == "finished" and sim >= st["end"]:
                    status = "finished"
                    # the counters of the nodes after the end: wait for the next diagnostics (published at 1 Hz)
                    rec.diagnostics.pop("joint_controller", None)
                    t_wait = time.monotonic()
                    while "joint_controller" not in rec.diagnostics and time.monotonic() - t_wait < 3.0:
                        rec.spin_once(0.05)
                    # the bag too has /joint_states up to the end, taken while its publisher lives (a recorder
                    # behind the run works off its queue: what a reader holds unread is gone with a stopped writer);
                    # given up once it takes nothing for REPAIR_WAIT s (what is missing then is counted,
                    # graph.losses): a reliable sample lost on the way comes again at the writer's next heartbeat
                    # (Fast DDS: every 3 s) and every sample behind it waits for it. Given up after 3 s, a loaded
                    # make test recorded /joint_states to 0.0395 s of a goal ending at 0.11 s (142 periods lost)
                    # while the bag's ground truth, from the same node, had every period to 0.34 s
                    moved = (None, time.monotonic())
                    while bag is not None and bag.sim_time < st["end"] and \
                            time.monotonic() - moved[1] < REPAIR_WAIT and \
                            time.monotonic() - t_wall0 < options.timeout:
                        stop.check()
                        bag.spin_once(0.05)
                        if bag.taken != moved[0]:
                            moved = (bag.taken, time.monotonic())
                    break
                done = g.exited()
                if done:
                    status, reason = "graph exited", f"{done[0]} exited with status {done[1]}"
                    break
                taken = (bag.taken if bag is not None else 0, rec.taken)
                if taken != recorders[0]:
                    recorders = (taken, time.monotonic())
                now = time.monotonic()
                startup.observe(now, rec.diagnostics, sim, st.get("state"))
                # before sim time moves the start-up's own progress decides (a slow start is not a stall), after it
                # the lockstep watches of the nodes
                stall = startup.stalled(now, g.names) if sim <= 0.0 else \
                    stalled(rec.diagnostics, now - recorders[1] < STALL_ERROR) or silent(rec.heard, now)
                if stall:
                    status, reason, stop.stopping = "stalled", stall, True
                    g.log(f"stalled: {stall}: stopping the graph")
                    break
                if time.monotonic() - t_wall0 > options.timeout:
                    reason = f"no end after {options.timeout:.0f} s (wall) at sim time {sim:.3f} s"
                    break
            stop.stopping = True      # from here a signal hastens the stop (signals.StopRequest), never cuts it
        except Stopped as exc:
            g.log(f"{exc}: stopping the graph")
            status, reason = "interrupted", str(exc)
        finally:
            stop.stopping = True
            g.stop()
            if bag is not None:
                bag_summary = _close_bag(bag, options, stop, rec.status.get("end") if status == "finished" else None)
    wall = time.monotonic() - t_wall0
    summary = {"robot": robot, "controller": options.controller, "hardware": options.hardware, "goal": spec,
               "goal_status": status, "reason": reason, "wall_duration_s": wall, "sim_duration_s": rec.sim_time}
    if bag_summary is not None:
        summary["bag"] = bag_summary
    summary.update(rec.events())
    if status != "finished":             # what each node of the graph waits for (its last /diagnostics)
        summary["waiting"] = waits(rec.diagnostics, g.names)
    try:
        if status == "finished":
            st = rec.status
            summary.update(motion_start=st["motion_start"], goal_start=st["goal_start"], end=st["end"],
                           startup_s=(t_motion - t_wall0) if t_motion is not None else math.nan)
            record = rec.record(options.controller, options.controller)
            summary.update(outcome(kin, spec, initial, record, st, stream_slots(options)[rec.recorded_topic]))
        # the samples the run's recorder and the bag missed (graph.losses); the run recorder's within the goal (from
        # its start to its end) when it finished: before it the graph comes up (a real-time loop's first periods)
        finished = status == "finished"
        lost = rec.losses(stream_slots(options), rec.status.get("end") if finished else None,
                          rec.status.get("goal_start") if finished else None)
        summary["lost_samples"] = loss_json(lost) + (bag_summary["lost_samples"] if bag_summary is not None else [])
    finally:
        rec.close()
    return summary, record


class StartupWatch:
    """The graph's start-up as bringup sees it (ROS-free; wall seconds passed in, so a test drives it without waiting).
    Progress is a node that came up (its first /diagnostics), a node whose start-up wait ended (started: true) or
    began again, the goal's state or sim time changing; ``stalled`` once none came for ``patience`` s: the length of
    a start-up on a loaded machine is not bounded, its progress-free time is."""

    def __init__(self, now: float, patience: float = STARTUP_STALL):
        if not patience > 0:
            raise InvalidInputError(f"patience = {patience} s must be > 0")
        self.patience = float(patience)
        self._state = None               # (sim time, goal state, ((node, started), ...)) at the last progress
        self._since = now
        self._diagnostics: dict = {}     # node -> its last /diagnostics values

    def observe(self, now: float, diagnostics: dict, sim_time: float, goal_state=None) -> None:
        state = (sim_time, goal_state, tuple(sorted((node, values.get("started")) for node, values in
                                                    diagnostics.items())))
        self._diagnostics = diagnostics
        if state != self._state:
            self._state, self._since = state, now

    def idle(self, now: float) -> float:
        """Wall seconds since the last start-up progress."""
        return now - self._since

    def stalled(self, now: float, nodes) -> str | None:
        """None while the start-up progresses, else one line: how long it has not, and what each of ``nodes`` (the
        graph's) waits for (``waits``)."""
        if self.idle(now) < self.patience:
            return None
        return (f"no start-up progress for {self.idle(now):.1f} s (wall), sim time still 0: "
                + "; ".join(f"{node}: {wait}" for node, wait in waits(self._diagnostics, nodes).items()))


def waits(diagnostics: dict, nodes) -> dict:
    """{node: what it waits for} of ``nodes`` from their last /diagnostics (``diagnostics``: node -> values): its
    start-up wait or its stalled lockstep's waiting_for, 'no /diagnostics yet' for a node not heard from (its process
    still starting, or stuck before it publishes), 'running' for one that waits for nothing."""
    out = {}
    for node in nodes:
        values = diagnostics.get(node)
        if values is None:
            out[node] = "no /diagnostics yet (still starting its process, or stuck before it publishes)"
        elif values.get("started") == "false" or values.get("lockstep_stall", "ok") != "ok":
            out[node] = f"waiting for {values.get('waiting_for', '?')}"
        else:
            out[node] = "running"
    return out


def stalled(diagnostics: dict, recording: bool = False) -> str | None:
    """One line naming the first node whose lockstep reports ERROR (no progress for STALL_ERROR wall seconds) and
    what it waits for (``diagnostics``: node -> its last /diagnostics values), None while none does. ``recording``:
    this process's recorders took messages within the last STALL_ERROR s, so a loop that waits for their
    acknowledgements (joint_controller's RECORDER_WINDOW) goes at their pace, and is not stalled."""
    for node, values in sorted(diagnostics.items()):
        if recording and str(values.get("waiting_for", "")).startswith(RECORDER_WAIT):
            continue
        if values.get("lockstep_stall") == "error":
            return (f"{node}: no lockstep progress for {values.get('lockstep_idle_s', '?')} s (wall), waiting for "
                    f"{values.get('waiting_for', '?')}")
    return None


def silent(heard: dict, now: float, limit: float = STALL_ERROR) -> str | None:
    """One line naming the nodes whose /diagnostics (1 Hz) have not come for ``limit`` wall seconds (``heard``: node ->
    when the last came, time.monotonic()): a node stuck in a call (its process alive, its timers dead) reports no
    stall of its own. None while every node is heard."""
    quiet = {node: now - t for node, t in sorted(heard.items()) if now - t >= limit}
    if not quiet:
        return None
    return "; ".join(f"{node}: no /diagnostics for {idle:.1f} s (wall): stuck" for node, idle in quiet.items())


def format_summary(s: dict) -> str:
    lines = [f"goal {s['goal_status']}" + (f" ({s['reason']})" if s.get("reason") else ""),
             f"sim {s['sim_duration_s']:.3f} s, wall {s['wall_duration_s']:.2f} s"]
    if "startup_s" in s:
        lines[-1] += f" (start-up {s['startup_s']:.2f} s)"
    if s.get("real_time_factor") is not None:
        lines[-1] += f", real-time factor {s['real_time_factor']:.2f}"
    if "actuator_rms" in s:
        lines.append("actuator RMS error [mm or mrad]: " + " ".join(f"{1e3 * v:.4f}" for v in s["actuator_rms"]))
        lines.append("actuator max error [mm or mrad]: " + " ".join(f"{1e3 * v:.4f}" for v in s["actuator_max"]))
        lines.append(f"platform position error RMS {1e3 * s['platform_position_rms']:.4f} mm, max "
                     f"{1e3 * s['platform_position_max']:.4f} mm; orientation RMS "
                     f"{1e3 * s['platform_orientation_rms']:.4f} mrad, max "
                     f"{1e3 * s['platform_orientation_max']:.4f} mrad")
    for key in ("tracking", "bus_load"):
        if s.get(key):
            lines.append(s[key])
    for node, wait in (s.get("waiting") or {}).items():
        lines.append(f"{node}: {wait}")
    for name, d in (s.get("drives") or {}).items():
        lines.append(f"{name}: {d['cia402_state']}, error code {d['error_code']}, last EMCY {d['last_emcy']}")
    if s.get("closure_error_max") is not None:
        lines.append(f"closure error of the robot's ground truth: max {1e6 * s['closure_error_max']:.4g} um")
    if s.get("plant"):
        from ..hardware.simulated import measurement_text

        lines.append(measurement_text(s["plant"]))
    if "safe_behaviour_entries" in s:
        lines.append(f"safe behaviour entries {s['safe_behaviour_entries']}, rejected inputs {s['rejected_inputs']}, "
                     f"deadline misses {s['deadline_misses']}, saturated periods {s['saturated_periods']}")
    if "bag" in s:
        from .bag_recorder import format_summary as bag_lines

        lines.append(bag_lines(s["bag"]))
    return "\n".join(lines)
