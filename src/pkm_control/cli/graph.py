"""``pkm`` subcommands of the ROS 2 node graph: bringup, view, and the pip-only ros2cli tasks topics, echo, param,
call, goal and record (graph/tools.py, graph/bag_recorder.py)."""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
from functools import partial

from ..errors import InvalidInputError, excerpt
from .common import COMMON_FLAGS, add_command, count, domain, emit, kinematics_of, seconds, task_in

#: said by every graph tool's --help
TOOLS_NOTE = ("For pip-only installs (ros2cli is not on PyPI); where ROS 2 is installed, ros2cli does the same.\n"
              "Domain: --domain-id, else $ROS_DOMAIN_ID, else 0 (pkm bringup's without ROS_DOMAIN_ID).\n"
              "Exit status: 0 done, 1 the graph did not answer as asked, 2 malformed input.")


def cmd_view(args):
    from pathlib import Path

    from ..viewer.browser import BrowserView, HeadlessBrowser
    from ..viewer.scene import robot_scene

    run = None
    if args.replay is not None:
        from ..identification.runs import load_run

        run = load_run(args.replay, args.robot, args.variant)
        args.robot, args.variant = run.robot, run.variant
    elif args.robot is None:
        raise InvalidInputError("pkm view needs --robot (or --replay with a recording that names it)")
    kin = kinematics_of(args)
    scene = robot_scene(kin.model)
    q = None
    if args.pose is not None:
        q = kin.inverse(kin.task.pose(task_in(kin, args.pose, args.deg, "--pose"))).q
    if args.screenshot is not None:
        out = Path(args.screenshot)
        if out.suffix.lower() != ".png" or not out.parent.is_dir():
            raise InvalidInputError(f"--screenshot must name a .png file in an existing folder, got "
                                    f"'{excerpt(args.screenshot, 200)}'")
        from ..viewer.scene import home_q

        view = BrowserView(scene, host="127.0.0.1", port=0, controller=args.controller or "")
        try:
            if run is not None:        # the end of the recording, with its paths
                from ..viewer.replay import Replay

                view.controller = run.controller or view.controller
                view.show_frame(Replay(run, scene).frame(run.t[-1]))
            else:
                view.show(measured=home_q(kin.model) if q is None else q, trace=False)
            with HeadlessBrowser() as browser:
                browser.open(view, *args.size).screenshot(out)
        finally:
            view.stop()
        print(f"screenshot: {out}")
        return
    view = BrowserView(scene, host=args.host, port=args.port, controller=args.controller or "")
    if run is not None:
        from ..viewer.replay import Replay

        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, lambda *_: stop.set())
        try:
            view.attach_replay(Replay(run, scene))
            print(f"pkm view: {view.url}  (replay of {run.source}, {run.t[-1] - run.t[0]:.3f} s; Ctrl-C stops)",
                  flush=True)
            while not stop.wait(0.1):
                pass
        finally:
            view.stop()
        return
    from ..nodes import viewer

    try:
        if q is not None:
            view.show(measured=q, trace=False)
        print(f"pkm view: {view.url}  (robot {scene.model.name}; Ctrl-C stops)", flush=True)
        code = viewer.run(view, args.topic, args.sources)
    finally:
        view.stop()
    if code:
        raise SystemExit(code)


def add_bringup_arguments(p: argparse.ArgumentParser) -> None:
    """The options of `pkm bringup` besides --robot and --variant (bringup_options reads them)."""
    from ..hardware.plugin import hardware_names
    from ..graph.bringup import RECORD_STORAGES, BringupOptions as defaults

    p.add_argument("--controller", default=defaults.controller,
                   help="named controller of the controller YAML: pd, pd_feedforward, cf_rb, cf_rb_friction, "
                        "computed_torque, and the motion-control family (task_pd, task_pd_feedforward, "
                        "task_pd_gravity, task_idc, task_robust_idc, task_adaptive_idc, joint_pd_gravity, joint_idc, "
                        "joint_robust_idc, pd_acceleration_feedforward, cf_rb_friction_lead, mass_matrix_decoupling "
                        "(delta)); default pd_feedforward")
    p.add_argument("--controller-config", default=defaults.controller_config, metavar="YAML",
                   help="controller YAML (default <share>/config/controllers.yaml)")
    p.add_argument("--hardware", choices=hardware_names(), default=defaults.hardware,
                   help="sim: the simulated robot inside joint_controller (one process: read, update, write); "
                        "mujoco: MuJoCo as the robot, inside joint_controller as sim (its step: --set "
                        "joint_controller.mujoco_timestep=...); topics: the robot in the `hardware` node behind "
                        "/joint_states and commands; ros2_control: your controller manager is the robot "
                        "(joint_state_broadcaster + effort_controller, README 'ros2_control bridge'); canopen: "
                        "CiA 402 drives on a CAN bus (config/canopen/<robot>.yaml, or --set "
                        "joint_controller.canopen_config=YAML), the master inside joint_controller, real time only "
                        "(--realtime) unless --stand-in; or a kind another package registers (entry-point group "
                        "pkm_control.hardware, docs/hardware.md) (default sim)")
    p.add_argument("--stand-in", action="store_true",
                   help="a simulated robot in place of the real one, as the kind defines it: with --hardware "
                        "ros2_control: start the `hardware` node in the controller manager's "
                        "place (the simulated robot behind the same topics), to try the bridge without one; with "
                        "--hardware canopen: emulated drives around the simulated robot on python-can's virtual bus "
                        "inside joint_controller (joint_controller.canopen_emulate: true; lockstep works)")
    p.add_argument("--goal", default=None, metavar="SPEC",
                   help="trajectory spec (YAML/JSON) the trajectory_generator starts with, e.g. "
                        "\"{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}\"")
    p.add_argument("--true-parameters", default=None, metavar="YAML",
                   help="the simulated robot's own parameter set (`pkm perturb` writes one): a robot that is not the "
                        "controller's model (setting true_parameters_file; its measurement: --set "
                        "encoder_resolution=1e-6 encoder_counts_per_turn=1048576 effort_noise_std=2 "
                        "measurement_seed=1)")
    p.add_argument("--set", action="append", default=[], metavar="[NODE.]KEY=VALUE",
                   help="override a parameter (YAML value) for all nodes or one node, e.g. lockstep=false, "
                        "joint_controller.kp=5e5; repeatable")
    p.add_argument("--realtime", action="store_true",
                   help="real-time mode (the loop on the wall clock) with the settings it needs: lockstep=false, "
                        "chunk_length=0.02, lookahead=0.2, clock_rate=50, ground_truth_rate=100, "
                        "state_publish_rate=100, stream_rate=500, each rate a whole fraction of the control rate "
                        "(settings.realtime_settings; --set overrides each)")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop the graph after S seconds (wall); default: run until stopped")
    p.add_argument("--exit-when-done", action="store_true",
                   help="end when the goal's trajectory has finished (or at once, status 1, when it is rejected) "
                        "and print a summary of the run")
    p.add_argument("--json", action="store_true",
                   help="with --exit-when-done: the summary as one JSON object on stdout (node output to stderr)")
    p.add_argument("--timeout", type=float, default=defaults.timeout, metavar="S",
                   help="with --exit-when-done: give up after S seconds (wall), status 3 (default 600)")
    p.add_argument("--record", default=None, metavar="BAG",
                   help="record the run into a new rosbag2 at BAG (`pkm record`'s topics and the simulated robot's "
                        "ground truth; /joint_states every control period: joint_controller.state_publish_rate=0); "
                        "a lockstep run starts once the recorder receives /joint_states")
    p.add_argument("--record-storage", choices=RECORD_STORAGES, default=defaults.record_storage,
                   help="with --record: the bag's storage (default sqlite3)")
    p.add_argument("--rviz", action="store_true",
                   help="also start robot_state_publisher and rviz2 (needs a ROS 2 installation)")
    p.add_argument("--dry-run", action="store_true", help="print the commands and the parameter file, start nothing")


def bringup_options(args):
    """The BringupOptions of `pkm bringup`'s command line (checked there: InvalidInputError naming the option)."""
    from ..graph.bringup import BringupOptions

    return BringupOptions(robot=args.robot or BringupOptions.robot, variant=args.variant, controller=args.controller,
                          controller_config=args.controller_config, hardware=args.hardware, stand_in=args.stand_in,
                          goal=args.goal, true_parameters=args.true_parameters, overrides=tuple(args.set),
                          realtime=args.realtime, duration=args.duration, exit_when_done=args.exit_when_done,
                          json=args.json, timeout=args.timeout, record=args.record,
                          record_storage=args.record_storage, rviz=args.rviz, dry_run=args.dry_run)


def cmd_bringup(args):
    from ..description import robot_config
    from ..graph import bringup

    options = bringup_options(args)
    bringup.parameters(options)                   # a bad --set or --true-parameters fails here,
    robot_config(options.robot, options.variant)  # and an unknown robot or variant, not in five nodes
    code = bringup.run(options)
    if code:
        raise SystemExit(code)


def _graph_tool(run):
    """A command of graph.tools (the ros2cli tasks): its own ROS session on the domain of `pkm demo` (without
    its isolated fallback); exit 1 when the graph does not answer as asked, 0 on Ctrl-C for `pkm echo` (its way
    to end) and 1 for the others."""
    def cmd(args):
        from ..ros.topology import domain_id

        domain = domain_id(args.domain_id, isolated=False)
        try:
            from ..graph.tools import Session, ToolFailure
        except ImportError as exc:
            raise SystemExit(f"pkm {args.command}: needs rclpy ({exc}): pip install -r requirements-ros.txt, or "
                             "source a ROS 2 installation") from None
        session = Session(domain, args.command)
        try:
            run(args, session)
        except ToolFailure as exc:
            print(f"pkm {args.command}: {excerpt(str(exc), 600)}", file=sys.stderr)
            raise SystemExit(1) from None
        except KeyboardInterrupt:
            raise SystemExit(0 if args.command == "echo" else 1) from None
        finally:
            session.close()
    return cmd


def _topics(args, session):
    from ..graph.tools import format_topics, topics

    rows = topics(session, timeout=args.timeout)
    emit(args, {"domain": session.domain, "topics": rows}, format_topics(rows, args.verbose))


def _echo(args, session):
    from ..graph.tools import echo, message_text

    echo(session, args.topic, 1 if args.once else args.count, args.timeout,
         lambda msg: print(message_text(msg, args.json), flush=True))


def _param(args, session):
    from ..graph.tools import format_value, param_get, param_set

    if args.action == "get":
        value, kind = param_get(session, args.node, args.name, args.timeout)
    else:
        value = param_set(session, args.node, args.name, args.value, args.timeout)
        kind = None
    emit(args, {"node": args.node, "name": args.name, "value": value, **({"type": kind} if kind else {})},
          format_value(value) if kind else f"{args.name} = {format_value(value)} (set on {args.node})")


def _call(args, session):
    from ..graph.tools import trigger

    success, message = trigger(session, args.service, args.timeout)
    emit(args, {"service": args.service, "success": success, "message": message},
          f"success: {str(success).lower()}\nmessage: {message}")
    if not success:
        raise SystemExit(1)


def _goal(args, session):
    from ..graph.tools import format_answer, send_goal

    event = send_goal(session, args.spec, args.node, args.timeout)
    if args.json:
        print(json.dumps(event, indent=2))
    elif event["state"] == "accepted":
        print(format_answer(event))
    else:
        print(f"pkm goal: {excerpt(format_answer(event), 2000)}", file=sys.stderr)
    if event["state"] != "accepted":
        raise SystemExit(1)


def _record(args, session):
    from ..graph.bag_recorder import format_summary, lost_samples, record

    summary = record(session, args.output, lambda msg: print(f"pkm record: {msg}", file=sys.stderr, flush=True),
                     topics=args.topics, storage=args.storage, duration=args.duration, until_done=args.until_done,
                     timeout=args.timeout, sources=args.sources)
    emit(args, summary, format_summary(summary))
    if args.until_done and summary["goal_status"] != "finished":
        print(f"pkm record: the goal did not finish while recording ({summary['goal_status']})", file=sys.stderr)
        raise SystemExit(1)
    lost = lost_samples(summary)
    if lost is not None:                 # never a silent gap; a recording meant to be whole fails (bringup's 5)
        print(f"pkm record: {lost}", file=sys.stderr)
        if args.until_done or args.duration is not None:
            raise SystemExit(5)


def register(sub) -> None:
    """bringup, view, topics, echo, param, call, goal and record under ``sub`` (the subparsers of pkm)."""
    add = partial(add_command, sub)
    from ..graph import bringup
    sp = add("bringup", cmd_bringup, "run the ROS 2 node graph (a process per node) without launch_ros",
             bringup.__doc__, robot_required=False, common=())
    add_bringup_arguments(sp)

    sp = add("view", cmd_view, "browser 3D view of a robot: live from the ROS graph, or a screenshot",
             "Serves a 3D view of the robot (viser) at http://HOST:PORT: the robot from its URDF's visuals, live\n"
             "from /joint_states (effort drawn as arrows along the actuated joints), the desired robot from\n"
             "/desired_joint_states as a translucent ghost, both platform frames and paths, and a panel with the\n"
             "robot, the controller, the sim time and the tracking error. Ctrl-C stops it.\n"
             "With --screenshot, draws the robot at --pose (default: home) in headless Chromium, writes the PNG\n"
             "and exits (no ROS; needs Debian's chromium and the playwright package).\n"
             "With --replay, plays a recorded run (a rosbag2 or the demo's joints CSV) with a time slider,\n"
             "play / pause and speed; the robot then comes from the recording.",
             common=("deg",), robot_required=False)
    sp.add_argument("--replay", metavar="RUN", help="a recorded run to replay: a rosbag2 (directory, .db3, .mcap) "
                                                    "or a joints CSV of pkm demo")
    sp.add_argument("--host", default="127.0.0.1", help="address to serve on (default 127.0.0.1; 0.0.0.0: every "
                                                        "interface)")
    sp.add_argument("--port", type=count(0, 65535), default=8080, help="port (default 8080; 0: any free one)")
    sp.add_argument("--controller", help="controller name shown on the page (default: joint_controller's "
                                         "'controller' parameter, once it answers)")
    sp.add_argument("--topic", default="/joint_states",
                    help="measured joint states: every tree joint (default /joint_states; with --hardware topics "
                         "/estimated_joint_states)")
    sp.add_argument("--sources", metavar="TOPIC=NODE,...",
                    help="the node whose publisher each topic is bound to (others' messages are refused, counted on "
                         "/diagnostics; default: --topic to joint_controller, /desired_joint_states to "
                         "inverse_kinematics; a topic not named, /platform_wrench, binds its first publisher)")
    sp.add_argument("--pose", nargs="+", type=float, metavar="X",
                    help="draw the robot at these task coordinates (default home; with --deg in degrees)")
    sp.add_argument("--screenshot", metavar="PNG", help="write a screenshot of the page to this PNG file and exit")
    sp.add_argument("--size", nargs=2, type=count(200, 4096), default=(1280, 800), metavar=("W", "H"),
                    help="screenshot size in pixels (default 1280 800)")

    def tool(parent, name, run, help_, desc, examples):
        sp = parent.add_parser(name, help=help_, description=desc + "\n\n" + TOOLS_NOTE, epilog=examples,
                               formatter_class=argparse.RawDescriptionHelpFormatter)
        sp.add_argument("--timeout", type=seconds, default=10.0, metavar="S",
                        help="seconds (wall) to wait for the graph: a publisher, node or service to appear, an answer "
                             "(default 10)")
        sp.add_argument("--domain-id", type=domain, default=None, metavar="N",
                        help="ROS domain (default: $ROS_DOMAIN_ID if set, else 0, where pkm bringup runs without it)")
        sp.add_argument("--json", action="store_true", help=COMMON_FLAGS["json"])
        sp.set_defaults(func=_graph_tool(run))
        return sp

    sp = tool(sub, "topics", _topics, "list the running graph's topics with their types (pip-only ros2 topic list)",
              "Lists the topics of the other nodes on the domain with their types; -v adds the number of\n"
              "publishers and subscribers. Waits for a node to appear, then until the graph is unchanged for 0.5 s.",
              "examples:\n  pkm topics\n  pkm topics -v --domain-id 7")
    sp.add_argument("-v", "--verbose", action="store_true", help="also the publisher and subscriber counts")

    sp = tool(sub, "echo", _echo, "print the messages of a topic as YAML (pip-only ros2 topic echo)",
              "Prints each message of TOPIC as a YAML document ending in '---' (with --json: one JSON object per\n"
              "line). The type comes from the graph; the QoS follows the publishers (a latched topic's last message\n"
              "arrives at once). Runs until Ctrl-C, or --once / --count N messages. Exit 1 when no publisher appears\n"
              "(or, with --once / --count, no message comes) within --timeout.",
              "examples:\n  pkm echo /platform_pose --once\n  pkm echo /trajectory_generator/status\n"
              "  pkm echo /diagnostics --count 5 --json")
    sp.add_argument("topic", metavar="TOPIC", help="topic name, e.g. /joint_states")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--once", action="store_true", help="print one message and exit")
    group.add_argument("-n", "--count", type=count(1, 10**9), default=None, metavar="N",
                       help="print N messages and exit")

    sp = sub.add_parser("param", help="get or set a parameter of a running node (pip-only ros2 param get|set)",
                        description="Get or set a parameter of a running node through its parameter services.\n\n"
                        + TOOLS_NOTE, formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  pkm param get /joint_controller kp\n"
                               "  pkm param set /joint_controller kp 3e5\n"
                               "  pkm param set /computed_force feedforward_model rigid")
    actions = sp.add_subparsers(dest="action", metavar="ACTION", required=True)
    sp = tool(actions, "get", _param, "print a parameter's value", "Prints the value of parameter NAME of NODE "
              "(a string as it is, anything else as JSON,\nso that `pkm param set` reads it back).",
              "examples:\n  pkm param get /joint_controller kp\n  pkm param get /inverse_kinematics tf_rate --json")
    sp.add_argument("node", metavar="NODE", help="node name, e.g. /joint_controller")
    sp.add_argument("name", metavar="NAME", help="parameter name")
    sp = tool(actions, "set", _param, "set a parameter (the node may refuse it, with its reason)",
              "Sets parameter NAME of NODE to VALUE. VALUE is read as ros2 param set reads it (YAML): true/false a\n"
              "bool, 3 an integer, 3.0 or 3e5 a double, [1.0, 2] a double array, [a, b] a string array, anything\n"
              "else a string (quote it, '3e5', to send a number as a string). Exit 1 with the node's reason when it\n"
              "refuses the value (read-only, wrong type, out of range); exit 2 for a VALUE no parameter holds.",
              "examples:\n  pkm param set /joint_controller kp 3e5\n"
              "  pkm param set /joint_controller kd '[900, 900, 900, 900, 900, 900]'\n"
              "  pkm param set /joint_controller safe_behaviour zero")
    sp.add_argument("node", metavar="NODE", help="node name, e.g. /joint_controller")
    sp.add_argument("name", metavar="NAME", help="parameter name")
    sp.add_argument("value", metavar="VALUE", help="the new value (YAML, see above)")

    sp = tool(sub, "call", _call, "call a std_srvs/Trigger service (pip-only ros2 service call)",
              "Calls SERVICE (a std_srvs/srv/Trigger service) and prints its success and message. Exit 1 when it\n"
              "answers success: false, or is not there within --timeout; exit 2 for a service of another type.",
              "examples:\n  pkm call /hardware/reset\n  pkm call /trajectory_generator/stop")
    sp.add_argument("service", metavar="SERVICE", help="service name, e.g. /trajectory_generator/start")

    sp = tool(sub, "goal", _goal, "send a trajectory goal to the running trajectory_generator; wait for its answer",
              "Sends SPEC (a trajectory spec in YAML or JSON, as pkm bringup --goal takes it) to the trajectory\n"
              "generator's goal topic and waits for its answer on its status topic: exit 0 when it accepted the\n"
              "goal (printing its duration), 1 when it rejected it (printing the reason) or did not answer within\n"
              "--timeout, 2 when SPEC is not a trajectory spec. The motion itself is followed with\n"
              "`pkm echo /trajectory_generator/status`.",
              "examples:\n  pkm goal \"{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}\"\n"
              "  pkm goal \"{type: circle, radius: 0.1, normal: [0, 0, 1], speed: 0.5, laps: 2, ramp_time: 0.3}\"")
    sp.add_argument("spec", metavar="SPEC", help="trajectory spec (YAML/JSON)")
    sp.add_argument("--node", default="/trajectory_generator",
                    help="the trajectory generator's node name (default /trajectory_generator)")

    sp = tool(sub, "record", _record, "record the running graph into a rosbag2 (sqlite3 or MCAP) for ros2 bag and "
              "pkm identify",
              "Records topics of the running graph into a new rosbag2 at BAG with the rosbags library (readable by\n"
              "ros2 bag, with the message definitions and the publishers' QoS): by default /joint_states, the\n"
              "actuator commands (/<controller_name>/commands), /joint_references, /desired_joint_states,\n"
              "/feedforward, /diagnostics and the trajectory generator's status. While it records, joint_controller\n"
              "publishes /joint_states every control period (its state_publish_rate set to 0, the old value back at\n"
              "the end): the identification needs the control rate; in lockstep it also keeps pace with the\n"
              "recorder (its wait_for_recorder on while recording: a recorder that falls behind loses nothing).\n"
              "Stops after --duration seconds of recorded\n"
              "/joint_states time (sim time in lockstep), when the goal is done (--until-done), or at Ctrl-C; the\n"
              "bag is closed cleanly each time (what was received until then drained into it first). Prints the\n"
              "messages per topic and the periods without a sample; when /joint_states misses some, one line on\n"
              "stderr says how many and where (exit status 5 with --until-done or --duration).\n"
              "To record a run from its first period, use `pkm bringup --record BAG` instead.",
              "examples:\n  pkm record --output run1 --until-done\n"
              "  pkm record --output run2 --storage mcap --duration 5\n"
              "  pkm record --output states --topics /joint_states /hardware/ground_truth/joint_trajectory")
    sp.add_argument("--output", required=True, metavar="BAG", help="the bag directory to create (must not exist)")
    sp.add_argument("--topics", nargs="+", default=None, metavar="TOPIC",
                    help="the topics to record instead of the default ones")
    sp.add_argument("--storage", choices=("sqlite3", "mcap"), default="sqlite3",
                    help="rosbag2 storage: sqlite3 (.db3, the default) or mcap")
    sp.add_argument("--sources", default="", metavar="TOPIC=NODE,...",
                    help="the node whose publisher each recorded topic is bound to (another publisher's messages "
                         "are not recorded, and counted); a topic not named binds its first publisher (default: all)")
    group = sp.add_mutually_exclusive_group()
    group.add_argument("--duration", type=seconds, default=None, metavar="S",
                       help="stop after S seconds of /joint_states stamps (sim time in lockstep)")
    group.add_argument("--until-done", action="store_true",
                       help="stop when the trajectory generator reports its goal finished (or rejected) and "
                            "/joint_states has reached its end")
