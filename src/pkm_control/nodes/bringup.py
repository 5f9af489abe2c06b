"""`pkm bringup`: run the node graph without launch_ros (pip-only installs).

Starts the five nodes (pkm_control.nodes.NODES) as separate processes with the same
parameters a launch file gives them: one generated ROS parameter file (``/**`` for the
shared keys, a section per node for its own), forwards their output line by line with a
``[node]`` prefix, and stops them cleanly on Ctrl-C (SIGINT to each, then SIGTERM and
SIGKILL after a grace period). If one node exits on its own, the others are stopped and
its exit status is returned.

With --rviz (needs a ROS 2 installation: ros2, robot_state_publisher, tf2_ros, rviz2) it also
starts, as the launch file does, robot_state_publisher with the xacro-processed URDF for
/joint_states, a second one in namespace /desired (frame prefix desired/) for
/desired_joint_states with a static transform base_link -> desired/base_link, and RViz with
rviz/<robot>.rviz.
This module imports no ROS package (the children do).
"""

from __future__ import annotations

import argparse
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import yaml

from . import NODES

GRACE = 5.0     # s between SIGINT and SIGTERM (and SIGTERM and SIGKILL)


def add_arguments(p: argparse.ArgumentParser, robot: bool = True) -> None:
    if robot:
        p.add_argument("--robot", default=None, help="robot id (default palida)")
        p.add_argument("--variant", default=None, help="robot variant (default: the robot's default)")
    p.add_argument("--controller", default="pd_feedforward",
                   help="named controller of the controller YAML: pd, pd_feedforward, cf_rb, cf_rb_friction, "
                        "computed_torque (default pd_feedforward)")
    p.add_argument("--controller-config", default="", metavar="YAML",
                   help="controller YAML (default <share>/config/controllers.yaml)")
    p.add_argument("--goal", default=None, metavar="SPEC",
                   help="trajectory spec (YAML/JSON) the trajectory_generator starts with, e.g. "
                        "\"{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}\"")
    p.add_argument("--set", action="append", default=[], metavar="[NODE.]KEY=VALUE",
                   help="override a parameter (YAML value) for all nodes or one node, e.g. lockstep=false, "
                        "joint_controller.mode=pd; repeatable")
    p.add_argument("--duration", type=float, default=None, metavar="S",
                   help="stop the graph after S seconds (wall); default: run until Ctrl-C")
    p.add_argument("--rviz", action="store_true",
                   help="also start robot_state_publisher and rviz2 (needs a ROS 2 installation)")
    p.add_argument("--dry-run", action="store_true", help="print the commands and the parameter file, start nothing")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pkm bringup", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def parameters(args) -> dict:
    """The ROS parameter file content: shared keys under /**, per-node keys under the node name."""
    shared = {"robot": args.robot or "palida", "controller": args.controller}
    if args.variant:
        shared["variant"] = args.variant
    if args.controller_config:
        shared["controller_config"] = os.path.abspath(args.controller_config)
    per_node = {name: {} for name in NODES}
    for name in NODES:
        # every node but the clock source follows /clock
        per_node[name]["use_sim_time"] = name != "hardware"
    if args.goal:
        per_node["trajectory_generator"]["goal"] = args.goal
    for item in args.set:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SystemExit(f"pkm bringup: --set needs [NODE.]KEY=VALUE, got {item!r}")
        node, dot, key = key.rpartition(".")
        if dot and node not in NODES:
            raise SystemExit(f"pkm bringup: --set {item!r}: unknown node {node!r} (nodes: {', '.join(NODES)})")
        (per_node[node] if dot else shared)[key] = yaml.safe_load(value)
    doc = {"/**": {"ros__parameters": shared}}
    for name, values in per_node.items():
        doc[name] = {"ros__parameters": values}
    return doc


def commands(args, params_file: str) -> list[tuple[str, list[str]]]:
    """(name, argv) of every process to start."""
    out = [(name, [sys.executable, "-m", f"pkm_control.nodes.{name}", "--ros-args", "-r", f"__node:={name}",
                   "--params-file", params_file]) for name in NODES]
    if args.rviz:
        from ..description.robots import robot_urdf
        from ..paths import share_dir

        robot = args.robot or "palida"
        urdf_file = os.path.join(os.path.dirname(params_file), f"{robot}.urdf")
        if not args.dry_run:
            with open(urdf_file, "w") as f:
                f.write(robot_urdf(robot, args.variant))
        rsp = os.path.join(os.path.dirname(params_file), "robot_state_publisher.yaml")
        if not args.dry_run:
            urdf = open(urdf_file).read()
            with open(rsp, "w") as f:
                yaml.safe_dump({"/robot_state_publisher": {"ros__parameters": {
                                   "robot_description": urdf, "use_sim_time": True}},
                                "/desired/robot_state_publisher": {"ros__parameters": {
                                    "robot_description": urdf, "use_sim_time": True,
                                    "frame_prefix": "desired/"}}}, f)
        rsp_cmd = ["ros2", "run", "robot_state_publisher", "robot_state_publisher", "--ros-args"]
        out.append(("robot_state_publisher", rsp_cmd + ["--params-file", rsp]))
        # the desired robot (as in launch/bringup.launch.py): /desired_joint_states with frame prefix desired/
        out.append(("desired_state_publisher", rsp_cmd + ["-r", "__ns:=/desired", "-r",
                                                          "joint_states:=/desired_joint_states", "--params-file", rsp]))
        out.append(("desired_root", ["ros2", "run", "tf2_ros", "static_transform_publisher", "--frame-id",
                                     "base_link", "--child-frame-id", "desired/base_link"]))
        out.append(("rviz2", ["ros2", "run", "rviz2", "rviz2", "-d", str(share_dir() / "rviz" / f"{robot}.rviz"),
                              "--ros-args", "-p", "use_sim_time:=true"]))
    return out


def _forward(name: str, stream, lock: threading.Lock) -> None:
    for line in iter(stream.readline, ""):
        with lock:
            sys.stdout.write(f"[{name}] {line}" if line.endswith("\n") else f"[{name}] {line}\n")
            sys.stdout.flush()
    stream.close()


def _stop(procs, log) -> None:
    """SIGINT every running child, then SIGTERM, then SIGKILL, each after GRACE seconds."""
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGKILL):
        alive = [(n, p) for n, p in procs if p.poll() is None]
        if not alive:
            return
        for name, p in alive:
            try:
                p.send_signal(sig)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + GRACE
        while time.monotonic() < deadline and any(p.poll() is None for _, p in alive):
            time.sleep(0.05)
        left = [n for n, p in alive if p.poll() is None]
        if left and sig != signal.SIGKILL:
            log(f"still running after {signal.Signals(sig).name}: {', '.join(left)}")


def run(args) -> int:
    if args.rviz and shutil.which("ros2") is None:
        print("pkm bringup: --rviz needs a ROS 2 installation (ros2, robot_state_publisher, rviz2 on PATH); "
              "without it run the graph without --rviz", file=sys.stderr)
        return 2
    tmp = os.path.join(tempfile.gettempdir(), "pkm_bringup_XXXX") if args.dry_run else \
        tempfile.mkdtemp(prefix="pkm_bringup_")
    params_file = os.path.join(tmp, "parameters.yaml")
    doc = parameters(args)
    text = yaml.safe_dump(doc, sort_keys=False)
    cmds = commands(args, params_file)
    if args.dry_run:
        print(f"# parameter file {params_file}:")
        print("\n".join("#   " + line for line in text.splitlines()))
        for name, argv in cmds:
            print(f"{name}: {shlex.join(argv)}")
        return 0
    with open(params_file, "w") as f:
        f.write(text)
    lock = threading.Lock()

    def log(msg):
        with lock:
            print(f"[bringup] {msg}", flush=True)

    procs = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    code = 0
    try:
        for name, argv in cmds:
            # own process group: a terminal Ctrl-C reaches bringup only, which then stops the children in order
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                                 start_new_session=True)
            procs.append((name, p))
            threading.Thread(target=_forward, args=(name, p.stdout, lock), daemon=True).start()
            log(f"started {name} (pid {p.pid})")
        t_end = None if args.duration is None else time.monotonic() + args.duration
        while True:
            done = [(n, p.returncode) for n, p in procs if p.poll() is not None]
            if done:
                name, code = done[0]
                log(f"{name} exited with status {code}: stopping the graph")
                break
            if t_end is not None and time.monotonic() >= t_end:
                log(f"--duration {args.duration} s reached: stopping the graph")
                break
            time.sleep(0.1)
    except KeyboardInterrupt:
        log("Ctrl-C: stopping the graph")
    finally:
        _stop(procs, log)
        shutil.rmtree(tmp, ignore_errors=True)
    return code


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    return run(args)


if __name__ == "__main__":
    raise SystemExit(main())
