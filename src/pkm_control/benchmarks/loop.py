"""`pkm bench loop`: the real-time control path against the simulated robot, measured, beside the old path.

New path: the graph with `hardware: sim` in real-time mode (lockstep false): joint_controller runs
read -> update -> write and the plant step in one thread on absolute 0.5 ms deadlines, the
other nodes stream the benchmark circle ahead. Baseline, in the same run: the five-process path
(`hardware: topics`): the simulated robot in the `hardware` node on a 2 kHz wall timer, the
controller in another process, a DDS round trip per period.

Figures (from the nodes' own /diagnostics over the run; durations in 1 us bins, the upper edge reported):
  jitter        wake-up time of a period minus its deadline (new path: the loop's deadlines; baseline:
                the hardware node's 2 kHz timer, lateness after the grid period a call belongs to)
  compute       the controller's work per period: read, estimate, update, write (without the plant)
  deadline miss a 2 kHz period that did not get its control: new path, a period skipped because the
                cycle before it overran; baseline (since the first command), a period without a plant
                step that had a command computed since the previous step (the timer fell behind, or the
                command came late); in percent of all periods
  plant step    the simulated robot's step (forward dynamics with friction in every joint, RK4): median, p99
  safe behaviour the controller's periods commanded by its safe behaviour (an input missing: the streams ran
                dry), in percent: the loop's figures are those of a robot tracking only when this is ~0; with the
                controller's last reason and the chunks its stream nodes dropped because they arrived after the
                loop had passed them (inverse_kinematics, computed_force: the streams fell behind real time)
  streams       the streaming nodes' scheduling (real time: SCHED_FIFO stream_priority, ros.runtime.
                stream_stage_priority) and, for inverse_kinematics and computed_force, their thread CPU time per chunk
                (mean, max) beside the sim time a chunk covers: the stage's share of a core it needs
  start-up      from starting the joint_controller process to its first /joint_states (warm: the numba
                cache exists; measured twice, the second is reported)
  start-up floor the same probe timing a bare rclpy process with one /joint_states publisher, nothing of the
                project (BARE_PUBLISHER): what the interpreter, rclpy and DDS discovery cost any node here, now
  machine floor what this machine allows any periodic thread, measured in the same run: a bare
                ``realtime.PeriodicRunner`` at 2 kHz with the loop's real-time setup (SCHED_FIFO, timer slack,
                gc frozen) spinning each period for the loop's median compute + plant step, nothing else
                (the graph is down): its misses and jitter are the floor under the loop's
  compute floor how much of the node's compute median is the controller's own work and how much the host's wake-up
                adds, measured in the same run (the graph down, min(seconds, COMPUTE_FLOOR_SECONDS) each): the node's
                loop built in this process as the graph has it (its settings of the run's bringup, the simulated
                robot with a force law's contact and wrench sensor, the controller the node builds, the generator's
                500 Hz chunks of the run's goal through inverse kinematics and computed force, interpolated by the
                loop at 2 kHz: ``_in_process_loop``), ``ControlLoop.cycle`` timed as the node times it, the plant's
                step after it: back to back (no sleep between periods), then on a 2 kHz ``realtime.PeriodicRunner``
                with the node's real-time setup (sleep, then spin the last 100 us, as the node's period starts); the
                first is the controller's own work, the second minus the first what a period pays for starting after
                the runner's sleep, the node's minus the second the graph's (its other threads and processes, the
                node's work between the periods)

A force law (config/controllers.yaml force_controllers) runs palida's deburring task instead of the circle: the tool
on the part of config/environment.yaml, back and forth along its edge (``_force_task``): the law's wrench from the
contact, not a free-space run (a circle would drive the tool through the table, beyond contact_force_limit: the
wrench watchdog then holds the robot in every period).

Both paths run with `pkm bringup --realtime` (settings.REALTIME_SETTINGS: 5 ms chunks streamed 0.2 s ahead, the
estimated joint states and the simulated robot's ground truth sampled at 100 Hz, the ground truth sent in chunks of
ground_truth_chunk samples: observation topics, not part of the control path; a real drive has no ground truth).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from ..ros.qos import qos
from ..ros.topology import hold_domain
from .report import Column, Provenance, Table, document, print_json, ratio

#: m: a force law's reference into the part's face (_force_task): stiffness presses kc k_e / (kc + k_e) x 0.1 mm
#: = 27 N, the impedance laws K_d k_e / (K_d + k_e) x 0.1 mm = 3.5 N; direct force control its set-point
FORCE_DEPTH = 1e-4

#: the ROS domains the benchmark takes without ROS_DOMAIN_ID, each held by its run lock (ros.topology.hold_domain):
#: a graph of another run in the same domain (measured: a test run's in 163) feeds this one's nodes and steals its
#: diagnostics; none of the test suite's (160-182, their empty-domain twins 210-232, the fixed 141-151) or of
#: `pkm demo`'s isolated ones (ros.topology.ISOLATED_DOMAINS, 100-140)
BENCH_DOMAINS = range(200, 210)
#: what each streaming node reports of its scheduling and its CPU per chunk (ros.runtime: stream_stage_priority,
#: ChunkCost)
STREAM_KEYS = ("realtime", "chunk_cpu_mean_us", "chunk_cpu_max_us", "chunk_span_ms")
TARGETS = {"deadline_miss_percent": 0.1, "jitter_p99_us": 100.0, "compute_median_us": 50.0, "startup_s": 3.0}


def _goal(robot, seconds: float) -> str:
    """The benchmark circle with enough laps to last the run (palida, Abdellatif's benchmark); any other robot a
    horizontal circle about its home, of a fifth of its workspace box's smaller extent in the first two task
    coordinates as radius, one lap a second."""
    import math

    from . import palida as bm

    if robot != "palida":
        from ..kinematics import robot_kinematics
        from ..kinematics.workspace import workspace_box

        lo, hi = workspace_box(robot_kinematics(robot))
        radius = 0.2 * float(min(hi[:2] - lo[:2]))
        return json.dumps({"type": "circle", "radius": radius, "speed": 2 * math.pi * radius,
                           "laps": max(1.0, float(seconds)), "ramp_time": 0.4})
    laps = max(1.0, seconds * 1.0 / (2 * math.pi * 0.15))
    return json.dumps(bm.benchmark_spec(0.15, laps, 0.4))


def _force_task(robot, seconds):
    """A force law's run (`pkm demo --deburring`'s task, benchmarks/deburring.py): palida's tool on the part's face
    (the reference FORCE_DEPTH into it: the laws without a force set-point press too), back and forth along the edge
    at its speed for at least ``seconds``, direct force control's set-point 30 N into the face. Returns (the goal,
    the `pkm bringup` overrides: initial_pose and force_reference, a YAML string)."""
    from ..errors import InvalidInputError
    from ..hardware.contact import load_environment
    from ..kinematics import robot_kinematics
    from . import deburring

    if robot != "palida":
        raise InvalidInputError("pkm bench loop with a force controller runs palida's deburring task (its part in "
                                f"config/environment.yaml): --robot palida, got {robot}")
    one = deburring.task(robot_kinematics(robot), load_environment(robot)[0], gap=-FORCE_DEPTH)["edge_duration"]
    t = deburring.task(robot_kinematics(robot), load_environment(robot)[0], gap=-FORCE_DEPTH,
                       passes=max(1, int(seconds / one) + 2))
    return json.dumps(t["goal"]), (f"initial_pose={json.dumps(t['start'])}",
                                    f"joint_controller.force_reference={json.dumps(t['force_reference'])}")


def _options(robot, controller, hardware, seconds):
    """The run's `pkm bringup --realtime` (graph.bringup.BringupOptions): a force controller with palida's deburring
    task (``_force_task``), any other law with ``_goal``'s circle."""
    from ..control.settings import FORCE_MODES, load_settings
    from ..graph.bringup import BringupOptions

    goal, overrides = _force_task(robot, seconds) if load_settings(robot, controller)["mode"] in FORCE_MODES \
        else (_goal(robot, seconds), ())
    return BringupOptions(robot=robot, controller=controller, hardware=hardware, goal=goal, overrides=overrides,
                          realtime=True)


#: the longest wait for the graph to start and the motion to begin (wall seconds; start-up and the goal's
#: reachability check take several seconds on a loaded machine)
START_TIMEOUT = 60.0


def _run_graph(robot, controller, hardware, seconds, quiet):
    """The graph in real-time mode, measured for `seconds` wall seconds from the motion's start (the generator's
    diagnostics name it: motion_start). Returns the diagnostics of every node (at the motion's start, at the end):
    the loop holds (safe behaviour) from its first period until the first references arrive, which counted from the
    loop's start would be the graph's start-up, not the loop. The start is {} when the motion did not begin within
    START_TIMEOUT (then the figures count from the loop's start). The graph: ``_options``."""
    from ..kinematics import robot_kinematics
    from ..graph.bringup import Graph
    from ..graph.recorder import GraphRecorder

    options = _options(robot, controller, hardware, seconds)
    rec = GraphRecorder(robot_kinematics(robot), hardware, samples=False)
    g = Graph(options, open(os.devnull, "w") if quiet else sys.stderr)
    try:
        g.start()
        start, end_at = {}, time.monotonic() + START_TIMEOUT + seconds
        while time.monotonic() < end_at:
            rec.spin_once(0.1)
            if g.exited():
                raise RuntimeError(f"{g.exited()[0]} exited during the loop benchmark")
            if not start and "motion_start" in rec.diagnostics.get("trajectory_generator", {}):
                start = {node: dict(d) for node, d in rec.diagnostics.items()}
                end_at = time.monotonic() + seconds
        return start, dict(rec.diagnostics)
    finally:
        g.stop()
        rec.close()


#: the start-up floor's process (``_startup_seconds``): the interpreter, rclpy's import and start, one /joint_states
#: publisher with the QoS of joint_controller's (its depth, reliability and durability in argv), publishing every
#: 2 ms from its creation; nothing of the project
BARE_PUBLISHER = """
import sys
import rclpy
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
rclpy.init()
node = rclpy.create_node("pkm_startup_floor")
depth, reliability, durability = map(int, sys.argv[1:4])
pub = node.create_publisher(JointState, "/joint_states", QoSProfile(
    depth=depth, reliability=ReliabilityPolicy(reliability), durability=DurabilityPolicy(durability)))
message = JointState(name=["floor"], position=[0.0])
node.create_timer(0.002, lambda: pub.publish(message))
rclpy.spin(node)
"""


def _node_command(robot, controller) -> list:
    """joint_controller (hardware: sim, lockstep) as its own process."""
    return [sys.executable, "-m", "pkm_control.nodes.joint_controller", "--ros-args", "-p", f"robot:={robot}", "-p",
            f"controller:={controller}"]


def _floor_command() -> list:
    """The start-up floor's process (BARE_PUBLISHER) with the interpreter of joint_controller's."""
    q = qos("/joint_states", "pub")
    return [sys.executable, "-c", BARE_PUBLISHER, str(q.depth), str(q.reliability.value), str(q.durability.value)]


def _startup_seconds(command: list) -> float:
    """A process's start (``command``) to the first /joint_states this process receives, in seconds (nan after
    60 s)."""
    import rclpy
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState

    ctx = rclpy.Context()
    rclpy.init(context=ctx, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("pkm_startup_probe", context=ctx)
    got = []
    node.create_subscription(JointState, "/joint_states", lambda m: got.append(time.monotonic()),
                             qos("/joint_states", "sub"))
    ex = rclpy.executors.SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    try:
        t0 = time.monotonic()
        p = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            while not got and time.monotonic() - t0 < 60:
                ex.spin_once(timeout_sec=0.01)
        finally:
            p.terminate()
            p.wait(timeout=10)
        return got[0] - t0 if got else float("nan")
    finally:
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)


def _realtime_thread(work, name: str, priority: int = 80, cpu: int | None = None):
    """``work(setup)`` in a thread of this process with the loop's real-time setup (realtime.prepare_realtime of
    ``priority``, ``cpu``), undone after; returns what it returns (raises what it raises)."""
    import threading

    from ..control.realtime import prepare_realtime, release_realtime

    out = {}

    def run():
        setup = prepare_realtime(priority, cpu)
        try:
            out["result"] = work(setup)
        except BaseException as exc:      # noqa: BLE001 - raised again in the caller's thread
            out["error"] = exc
        finally:
            release_realtime(setup)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    thread.join()
    if "error" in out:
        raise out["error"]
    return out["result"]


def _machine_floor(seconds: float, work_us: float) -> dict:
    """The machine floor (module docstring): a thread of this process, its real-time setup undone after."""
    from ..control.realtime import PeriodicRunner

    def spin(_k):
        end = time.monotonic_ns() + int(work_us * 1e3)
        while time.monotonic_ns() < end:
            pass

    def run(setup):
        stats = PeriodicRunner(500_000).run(spin, cycles=int(seconds * 2000))
        return dict({k: float(v) for k, v in stats.summary().items()}, realtime=setup.summary())

    return dict(_realtime_thread(run, "pkm_machine_floor"), work_us=work_us, seconds=seconds)


#: s: the compute floor's phases last at most this each (``_compute_floor``)
COMPUTE_FLOOR_SECONDS = 5.0


def _node_settings(params: dict, node: str, robot: str, controller: str):
    """(RobotContext, ``node``'s settings) in the bringup of ``params`` (graph.bringup.parameters): the controller
    YAML's (settings.node_settings), with the bringup's shared and own parameters of the node's keys over them."""
    from ..control.settings import node_settings

    ctx, s = node_settings(node, robot, None, controller)
    for section in ("/**", node):
        s.update({k: v for k, v in params.get(section, {}).get("ros__parameters", {}).items() if k in s})
    return ctx, s


def _in_process_loop(options, seconds: float):
    """joint_controller's loop of the bringup ``options`` (``_options``) built in this process, and its streams for
    ``seconds``: (ControlLoop, its settings, the chunks [(sim ns the generator publishes it, times ns, q, qd, qdd,
    feedforward or None)]). The node's settings as the bringup gives them (``_node_settings``); its robot
    (hardware.simulated.simulated_robot: with the environment and the wrench sensor of a force law's) reset to the
    initial pose; its controller (settings.make_force_controller, make_controller: the law, limits, safe behaviour,
    estimator the node builds); the loop's reference timeout, feedforward lead and force_reference. The streams: the
    generator's GoalScheduler of its settings (stream_rate, chunk_length, lookahead, start_delay) with the goal
    loaded and started, advanced at the node's clock_rate (the generator publishes on /clock); each chunk's inverse
    kinematics as inverse_kinematics does it; the feedforward of computed_force's model when the law takes it."""
    from ..control import ControlLoop, FeedforwardModel
    from ..control.force import parse_force_reference
    from ..control.settings import FORCE_MODES, make_controller, make_force_controller
    from ..graph.bringup import parameters
    from ..hardware.simulated import simulated_robot
    from ..kinematics.task_space import Pose
    from ..trajectory.streaming import GoalScheduler, parse_goal
    import numpy as np

    params = parameters(options)
    ctx, s = _node_settings(params, "joint_controller", options.robot, options.controller)
    dyn, kin = ctx.dynamics(), ctx.kin
    robot = simulated_robot(dyn, s)
    robot.reset(ctx.initial(s["initial_pose"]))
    if s["mode"] in FORCE_MODES:
        c = make_force_controller(dyn, options.controller, s["safe_behaviour"], s["state_timeout"])
    else:
        c = make_controller(dyn, s["mode"], s["safe_behaviour"], s["state_timeout"], controller=options.controller)
    loop = ControlLoop(robot, c, int(round(s["reference_timeout"] * 1e9)), int(round(s["feedforward_lead"] * 1e9)))
    loop.force_reference = parse_force_reference(s["force_reference"], kin.task)
    _, g = _node_settings(params, "trajectory_generator", options.robot, options.controller)
    dt_ns = int(round(1e9 / (g["stream_rate"] or g["control_rate"])))
    n = {key: max(1, int(round(g[key] * 1e9 / dt_ns))) for key in ("chunk_length", "lookahead")}
    sched = GoalScheduler(kin, ctx.initial(g["initial_pose"]), dt_ns, n["chunk_length"],
                          int(round(g["start_delay"] * 1e9)), g["approach_speed"], g["approach_rate"],
                          n["lookahead"], g["approach_tolerance"])
    sched.load(parse_goal(params["trajectory_generator"]["ros__parameters"]["goal"]))
    sched.start()
    ff = None
    if c.needs_feedforward:
        _, f = _node_settings(params, "computed_force", options.robot, options.controller)
        ff = FeedforwardModel(dyn, f["feedforward_model"], f["parameters_file"] or None)
    act = kin.model.actuated_idx
    chunks = []
    clock_ns = int(round(1e9 / s["clock_rate"]))
    for now in range(0, int(seconds * 1e9) + clock_ns, clock_ns):
        for ch in sched.advance(now)[0]:
            poses = [Pose(p, r) for p, r in zip(ch.positions, ch.rotations)]
            ms = [kin.inverse(p, v, a) for p, v, a in zip(poses, ch.twists, ch.accels)]
            chunks.append((now, ch.times_ns, *(np.array([getattr(m, x)[act] for m in ms]) for x in "qva"),
                           None if ff is None else np.array([ff.tau(*x) for x in zip(poses, ch.twists, ch.accels)])))
    return loop, s, chunks


def _floor_phase(options, seconds: float, periodic: bool) -> dict:
    """One phase of the compute floor (module docstring): ``_in_process_loop`` for ``seconds`` at its control rate,
    its ``ControlLoop.cycle`` timed as joint_controller times it (the node's period: the cycle, then the plant's
    step, the time k dt), the chunks the generator published by a period's end offered and spliced after it, then the
    desired motion of the streamed samples the next periods take prepared (ControlLoop.prepare: the node does both
    between two periods, the second in its background slices); back to back, or ``periodic``: on a PeriodicRunner at
    the control rate (prepare as the node's background, while BACKGROUND_BUDGET_NS remain).
    Both in a thread with the node's real-time setup (realtime_priority, realtime_cpu). Returns the cycle's
    median and p99 (us, the node's 1 us bins: realtime.LatencyHistogram), the periods, the controller's periods in
    its safe behaviour, its law (class name) and, for a law with one, its contact state at the end."""
    import collections

    from ..control.realtime import LatencyHistogram, PeriodicRunner
    from ..nodes.joint_controller import BACKGROUND_BUDGET_NS

    loop, s, chunks = _in_process_loop(options, seconds)
    dt_ns = int(round(1e9 / s["control_rate"]))
    periods = int(round(seconds * s["control_rate"]))
    pending = collections.deque(chunks)
    cycle_us = LatencyHistogram()
    clock = time.perf_counter_ns
    k = 0

    def offer(t_ns):
        while pending and pending[0][0] <= t_ns:
            _, times, q, qd, qdd, ff = pending.popleft()
            loop.offer_references(times, q, qd, qdd)
            if ff is not None:
                loop.offer_feedforward(times, ff)
            loop.drain()

    def period(_k):
        nonlocal k
        t0 = clock()
        loop.cycle(k * dt_ns)
        t1 = clock()
        loop.hardware.step()
        k += 1
        cycle_us.add((t1 - t0) * 1e-3)
        offer(k * dt_ns)

    def run(_setup):
        offer(0)
        if periodic:
            PeriodicRunner(dt_ns).run(period, cycles=periods, background=loop.prepare,
                                      background_budget_ns=BACKGROUND_BUDGET_NS, warm=loop.rehearse)    # the node's
        else:
            for j in range(periods):
                period(j)
                while loop.prepare():
                    pass

    _realtime_thread(run, "pkm_compute_floor", int(s["realtime_priority"]),
                     None if s["realtime_cpu"] < 0 else int(s["realtime_cpu"]))
    median, p99 = cycle_us.percentiles(50, 99)
    c = loop.controller
    return {"median_us": median, "p99_us": p99, "periods": cycle_us.n, "safe_periods": c.safe_periods,
            "law": type(c.law).__name__, "contact": getattr(c.law, "contact", None) or ""}


def _compute_floor(robot: str, controller: str, seconds: float) -> dict:
    """The compute floor (module docstring): ``_floor_phase`` back to back, then on the runner, ``seconds`` each."""
    options = _options(robot, controller, "sim", seconds)
    a, b = _floor_phase(options, seconds, False), _floor_phase(options, seconds, True)
    return {"back_to_back_median_us": a["median_us"], "back_to_back_p99_us": a["p99_us"],
            "periodic_median_us": b["median_us"], "periodic_p99_us": b["p99_us"], "periods": a["periods"],
            "periodic_periods": b["periods"], "back_to_back_safe_periods": a["safe_periods"],
            "periodic_safe_periods": b["safe_periods"], "law": b["law"], "contact": b["contact"],
            "seconds": seconds}


def _figures(diags: tuple, new: bool) -> dict:
    """The table's figures from (diagnostics at the motion's start, at the end) (_run_graph): the counted ones
    (periods, deadline misses, safe-behaviour periods) over the motion, the distributions (jitter, compute, plant
    step) as the nodes report them, since their start."""
    start, diag = diags

    def f(d, key):
        try:
            return float(d.get(key))
        except (TypeError, ValueError):
            return float("nan")

    def counted(node, key):
        """A cumulative counter over the motion: at the end minus at its start (from the loop's start without one).
        joint_controller restarts its counters at the loop's first controlled period (real time: the periods before
        it held the robot while the graph came up): when that came after the motion's start was announced, the
        counter at the end is below the one at the start, and it counts from that period on."""
        end, first = f(diag.get(node, {}), key), f(start.get(node, {}), key)
        if first == first and end < first:
            restarted.add(node)
            return end
        return end - first if first == first else end

    restarted = set()

    ctl = diag.get("joint_controller", {})
    cycles = counted("joint_controller", "cycles")
    # the controller's periods commanded by its safe behaviour (inputs missing: the streams ran dry), in percent
    safe = 100.0 * counted("joint_controller", "safe_periods") / cycles if cycles > 0 else float("nan")
    if new:
        misses = counted("joint_controller", "deadline_misses")
        # a skipped period has no cycle: the misses in percent of all periods (cycles + skipped), as the node counts
        return {"deadline_miss_percent": 100.0 * misses / (cycles + misses) if cycles > 0 else float("nan"),
                "deadline_misses": misses, "periods": cycles, "jitter_median_us": f(ctl, "jitter_median_us"),
                "jitter_p99_us": f(ctl, "jitter_p99_us"), "jitter_max_us": f(ctl, "jitter_max_us"),
                "compute_median_us": f(ctl, "cycle_median_us"), "compute_p99_us": f(ctl, "cycle_p99_us"),
                "plant_step_median_us": f(ctl, "plant_step_median_us"),
                "plant_step_p99_us": f(ctl, "plant_step_p99_us"), "realtime": ctl.get("realtime", ""),
                "safe_percent": safe, "observations_dropped": f(ctl, "observations_dropped"),
                "safe_reason": ctl.get("safe_reason", ""), "from_motion_start": bool(start),
                "from_first_control": "joint_controller" in restarted,
                "contact": ctl.get("contact", ""),
                "late_chunks": {node: counted(node, "passed_chunks_dropped")
                                for node in ("inverse_kinematics", "computed_force")},
                "streams": {node: {key: diag.get(node, {}).get(key, "") for key in STREAM_KEYS}
                            for node in ("trajectory_generator", "inverse_kinematics", "computed_force")}}
    hw = diag.get("hardware", {})
    periods = counted("hardware", "command_periods")           # 2 kHz periods since the first command
    missed = periods - counted("hardware", "fresh_command_steps")
    return {"deadline_miss_percent": 100.0 * missed / periods if periods > 0 else float("nan"),
            "deadline_misses": missed, "periods": periods, "jitter_median_us": f(hw, "jitter_median_us"),
            "jitter_p99_us": f(hw, "jitter_p99_us"), "jitter_max_us": f(hw, "jitter_max_us"),
            "compute_median_us": f(ctl, "cycle_median_us"), "compute_p99_us": f(ctl, "cycle_p99_us"),
            "plant_step_median_us": f(hw, "plant_step_median_us"), "plant_step_p99_us": f(hw, "plant_step_p99_us"),
            "safe_percent": safe}


def bench_loop(robot: str = "palida", controller: str = "cf_rb_friction", seconds: float = 60.0,
               baseline_seconds: float | None = None, as_json: bool = False, quiet: bool = True) -> dict:
    lock = None
    if not os.environ.get("ROS_DOMAIN_ID", "").strip():
        lock = next((held for held in map(hold_domain, BENCH_DOMAINS) if held is not None), None)
        if lock is None:
            raise RuntimeError(f"every ROS domain of {BENCH_DOMAINS} is held by another run: set ROS_DOMAIN_ID")
        os.environ["ROS_DOMAIN_ID"] = Path(lock.name).stem.rsplit("_", 1)[1]
    try:
        return _bench_loop(robot, controller, seconds, baseline_seconds, as_json, quiet)
    finally:
        if lock is not None:
            lock.close()


def _bench_loop(robot, controller, seconds, baseline_seconds, as_json, quiet) -> dict:
    say = (lambda *a: print(*a, file=sys.stderr, flush=True)) if as_json else print
    say(f"pkm bench loop: {robot}, {controller}, 2 kHz real-time mode for {seconds:g} s, then the baseline "
        f"(ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']})")
    _startup_seconds(_node_command(robot, controller))     # warms the numba cache
    startup_floor = _startup_seconds(_floor_command())
    startup = _startup_seconds(_node_command(robot, controller))
    new = _figures(_run_graph(robot, controller, "sim", seconds, quiet), True)
    work = new["compute_median_us"] + new["plant_step_median_us"]
    floor = _machine_floor(min(seconds, 20.0), work if work == work else 100.0)
    floor_s = min(seconds, COMPUTE_FLOOR_SECONDS)
    print(f"pkm bench loop: compute floor, {controller}'s loop in this process, {floor_s:g} s back to back, then "
          f"{floor_s:g} s at 2 kHz", file=sys.stderr, flush=True)
    compute = _compute_floor(robot, controller, floor_s)
    base = _figures(_run_graph(robot, controller, "topics", baseline_seconds or min(seconds, 20.0), quiet), False)
    out = dict(new, startup_s=startup, startup_floor_s=startup_floor, robot=robot, controller=controller,
               seconds=seconds, targets=TARGETS, machine_floor=floor,
               compute_floor=compute, baseline=base)
    provenance = Provenance.now()
    if as_json:
        return print_json(out, provenance)
    from ..control.settings import FORCE_MODES, load_settings

    controller_is_force = load_settings(robot, controller)["mode"] in FORCE_MODES
    rows = [("deadline misses [%]", "deadline_miss_percent", "{:.3f}"),
            ("jitter median [us]", "jitter_median_us", "{:.1f}"),
            ("jitter p99 [us]", "jitter_p99_us", "{:.1f}"), ("jitter max [us]", "jitter_max_us", "{:.0f}"),
            ("compute median [us]", "compute_median_us", "{:.1f}"), ("compute p99 [us]", "compute_p99_us", "{:.1f}"),
            ("plant step median [us]", "plant_step_median_us", "{:.1f}"),
            ("plant step p99 [us]", "plant_step_p99_us", "{:.1f}"), ("periods", "periods", "{:.0f}"),
            ("safe behaviour [% periods]", "safe_percent", "{:.2f}")]
    columns = (Column("", align="<"), Column("one process"), Column("5 processes"), Column("x 5 processes", fmt=".2f"),
               Column("target"))
    target = {key: f"<= {TARGETS[key]:g}" for key in TARGETS}
    table = Table(f"pkm bench loop: {controller}, 2 kHz real-time mode for {seconds:g} s, beside the five-process "
                  "path measured in the same run", robot, columns,
                  tuple((label, fmt.format(new[key]), fmt.format(base[key]), ratio(base[key], new[key]),
                         target.get(key, "")) for label, key, fmt in rows)
                  + (("start-up to /joint_states [s]", f"{startup:.2f}", "", None, target["startup_s"]),),
                  (f"real-time setup: {new['realtime'] or 'unknown'}; observations dropped (no slack): "
                   f"{new['observations_dropped']:.0f}",
                   f"machine floor (a bare 2 kHz loop spinning {floor['work_us']:.0f} us a period, same setup, nothing "
                   f"else, {floor['seconds']:g} s): misses {floor['deadline_miss_percent']:.3f} %, jitter p99 "
                   f"{floor['jitter_p99_us']:.0f} us, max {floor['jitter_max_us']:.0f} us",
                   f"compute floor (joint_controller's controller, loop and simulated robot built in this process "
                   f"with the run's settings and streams, the graph down, {compute['seconds']:g} s each): cycle median "
                   f"{compute['back_to_back_median_us']:.0f} us (p99 {compute['back_to_back_p99_us']:.0f}) back to "
                   f"back, {compute['periodic_median_us']:.0f} us (p99 {compute['periodic_p99_us']:.0f}) on a 2 kHz "
                   f"runner with the loop's real-time setup: the node's compute median {new['compute_median_us']:.0f} "
                   f"us = {compute['back_to_back_median_us']:.0f} the controller's own work "
                   f"{compute['periodic_median_us'] - compute['back_to_back_median_us']:+.0f} the wake-up after the "
                   f"runner's sleep {new['compute_median_us'] - compute['periodic_median_us']:+.0f} the graph's",
                   f"start-up floor (a bare rclpy process publishing /joint_states, nothing of the project, the same "
                   f"probe): {startup_floor:.2f} s",
                   ("periods, deadline misses and safe behaviour counted from the motion's start (the generator's "
                    "motion_start) to the end; jitter, compute and plant step as the nodes report them (since their "
                    "start)" + (" (the loop's counters from its first controlled period, after the motion's start "
                                "was announced)" if new["from_first_control"] else "")
                    if new["from_motion_start"] else "the motion did not start within "
                    f"{START_TIMEOUT:g} s: every figure counted from the loop's start (start-up included)"),
                   f"safe behaviour (one process): last reason '{new['safe_reason'] or 'none'}'; chunks that reached "
                   f"their node after the loop had passed them (dropped: the stream fell behind real time): "
                   f"inverse_kinematics {new['late_chunks']['inverse_kinematics']:.0f}, computed_force "
                   f"{new['late_chunks']['computed_force']:.0f}",
                   "streaming nodes (one process run): " + "; ".join(
                       f"{node} {d['realtime'] or '?'}" + (f", CPU per chunk mean {d['chunk_cpu_mean_us']} us, max "
                                                           f"{d['chunk_cpu_max_us']} us, a chunk covers "
                                                           f"{d['chunk_span_ms']} ms" if d["chunk_span_ms"] else "")
                       for node, d in new["streams"].items()))
                  + ((f"force law: palida's deburring task (`pkm demo --deburring`, the reference "
                      f"{FORCE_DEPTH * 1e3:g} mm into the part's face, back and forth along its edge); direct "
                      f"force control's contact state at the end: {new['contact'] or '-'}",)
                     if controller_is_force else ()))
    print(table.text(provenance))
    return document(out, provenance)
