"""Launch files, RViz configs and `pkm bringup` (the same graph without launch_ros)."""

import importlib.util
import os
import subprocess
import sys
import types
from pathlib import Path

import pytest
import yaml

from pkm_control.description import robot_names
from pkm_control.nodes import NODES
from pkm_control.nodes import bringup
from pkm_control.paths import share_dir

ROOT = share_dir()
LAUNCH = ROOT / "launch" / "bringup.launch.py"
ROBOTS = robot_names()
PKM_NODES = set(NODES)


def _load_launch_module():
    spec = importlib.util.spec_from_file_location("pkm_bringup_launch", LAUNCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_five_robots():
    assert ROBOTS == ["delta", "lopes", "palida", "planar_redundant", "stewart"]


# ----------------------------------------------------------------------------- with launch_ros

def _has_launch_ros():
    try:
        import launch  # noqa: F401
        import launch_ros  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _has_launch_ros(), reason="launch_ros is not installed (not on PyPI)")
@pytest.mark.parametrize("robot", ROBOTS)
def test_launch_description_with_launch_ros(robot):
    from launch import LaunchContext
    from launch.actions import DeclareLaunchArgument, OpaqueFunction
    from launch_ros.actions import Node

    mod = _load_launch_module()
    ld = mod.generate_launch_description()
    declared = {e.name for e in ld.entities if isinstance(e, DeclareLaunchArgument)}
    assert {"robot", "controller", "variant", "rviz"} <= declared
    context = LaunchContext()
    for e in ld.entities:
        if isinstance(e, DeclareLaunchArgument):
            context.launch_configurations[e.name] = robot if e.name == "robot" else \
                "".join(s.perform(context) for s in e.default_value)
    opaque = [e for e in ld.entities if isinstance(e, OpaqueFunction)]
    assert len(opaque) == 1
    nodes = [n for n in mod.launch_setup(context) if isinstance(n, Node)]
    execs = [n.node_executable if isinstance(n.node_executable, str)
             else "".join(s.perform(context) for s in n.node_executable) for n in nodes]
    assert PKM_NODES <= set(execs)
    assert execs.count("robot_state_publisher") == 2 and "rviz2" in execs


# ----------------------------------------------------------------------------- without launch_ros

class _Recorder:
    """Stand-in for a launch / launch_ros class: records its constructor arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _Config:
    def __init__(self, name):
        self.name = name

    def perform(self, context):
        return context[self.name]


def _stub_launch(monkeypatch):
    """Minimal launch / launch_ros modules (only what the launch file touches) so launch_setup runs here."""
    mods = {name: types.ModuleType(name) for name in
            ("launch", "launch.actions", "launch.conditions", "launch.substitutions", "launch_ros",
             "launch_ros.actions", "launch_ros.parameter_descriptions")}
    mods["launch"].LaunchDescription = lambda entities: list(entities)
    for cls in ("DeclareLaunchArgument", "OpaqueFunction"):
        setattr(mods["launch.actions"], cls, type(cls, (_Recorder,), {}))
    mods["launch.conditions"].IfCondition = type("IfCondition", (_Recorder,), {})
    mods["launch.substitutions"].LaunchConfiguration = _Config
    mods["launch_ros.actions"].Node = type("Node", (_Recorder,), {})
    mods["launch_ros.parameter_descriptions"].ParameterValue = lambda value, value_type: value_type(value)
    for name, mod in mods.items():
        monkeypatch.setitem(sys.modules, name, mod)


@pytest.mark.parametrize("robot", ROBOTS)
def test_launch_setup_node_list_with_stub_launch(monkeypatch, robot):
    """The launch file's logic without launch_ros: the nodes, their parameters, the URDF and RViz file."""
    if _has_launch_ros():
        pytest.skip("launch_ros is installed: the real test covers it")
    _stub_launch(monkeypatch)
    mod = _load_launch_module()
    ld = mod.generate_launch_description()
    args = {e.args[0]: e.kwargs["default_value"] for e in ld if type(e).__name__ == "DeclareLaunchArgument"}
    assert set(args) == {"robot", "variant", "controller", "controller_config", "goal", "lockstep", "rviz"}
    context = dict(args, robot=robot, controller="pd", goal="{type: point_to_point, goal: [0, 0, 1], duration: 1}")
    nodes = mod.launch_setup(context)
    by_exec = {}
    for n in nodes:
        by_exec.setdefault(n.kwargs["executable"], []).append(n)
    assert set(by_exec) == PKM_NODES | {"robot_state_publisher", "static_transform_publisher", "rviz2"}
    for name in NODES:
        (node,) = by_exec[name]
        shared, own = node.kwargs["parameters"]
        assert node.kwargs["package"] == "pkm_control" and node.kwargs["name"] == name
        assert shared["robot"] == robot and shared["controller"] == "pd" and shared["lockstep"] is True
        assert own["use_sim_time"] is (name != "hardware")
    goal = by_exec["trajectory_generator"][0].kwargs["parameters"][1]["goal"]
    assert isinstance(goal, str) and goal.startswith("{type: point_to_point")
    measured, desired = by_exec["robot_state_publisher"]
    urdf = measured.kwargs["parameters"][0]["robot_description"]
    assert isinstance(urdf, str) and "<robot" in urdf and "platform" in urdf
    assert desired.kwargs["namespace"] == "desired"
    assert desired.kwargs["parameters"][0]["frame_prefix"] == "desired/"
    assert ("joint_states", "/desired_joint_states") in desired.kwargs["remappings"]
    rviz = by_exec["rviz2"][0]
    assert Path(rviz.kwargs["arguments"][1]) == ROOT / "rviz" / f"{robot}.rviz"
    assert Path(rviz.kwargs["arguments"][1]).is_file()


@pytest.mark.parametrize("robot", ROBOTS)
def test_rviz_config(robot):
    cfg = yaml.safe_load((ROOT / "rviz" / f"{robot}.rviz").read_text())
    vm = cfg["Visualization Manager"]
    assert vm["Global Options"]["Fixed Frame"] == ("world" if robot == "planar_redundant" else "base_link")
    displays = vm["Displays"]
    classes = [d["Class"] for d in displays]
    assert "rviz_default_plugins/TF" in classes
    models = {d["Description Topic"]["Value"] for d in displays if d["Class"] == "rviz_default_plugins/RobotModel"}
    assert models == {"/robot_description", "/desired/robot_description"}
    poses = {d["Topic"]["Value"] for d in displays if d["Class"] == "rviz_default_plugins/Pose"}
    assert {"/desired_platform_pose", "/platform_pose"} <= poses


# ----------------------------------------------------------------------------- pkm bringup

def test_bringup_dry_run_lists_the_five_nodes():
    r = subprocess.run([sys.executable, "-m", "pkm_control.cli", "bringup", "--robot", "palida", "--controller",
                        "pd", "--dry-run"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stdout.splitlines() if not ln.startswith("#")]
    started = [ln.split(":")[0] for ln in lines]
    assert started == list(NODES)
    for name, ln in zip(NODES, lines):
        assert f"-m pkm_control.nodes.{name} --ros-args -r __node:={name} --params-file" in ln
    params = yaml.safe_load("\n".join(ln[4:] for ln in r.stdout.splitlines() if ln.startswith("#   ")))
    assert params["/**"]["ros__parameters"] == {"robot": "palida", "controller": "pd"}
    assert params["hardware"]["ros__parameters"]["use_sim_time"] is False
    assert all(params[n]["ros__parameters"]["use_sim_time"] for n in NODES if n != "hardware")


def test_bringup_parameters_and_set():
    args = bringup.build_parser().parse_args(
        ["--robot", "delta", "--controller", "computed_torque", "--goal", "{type: circle, radius: 0.02}",
         "--set", "lockstep=false", "--set", "joint_controller.lockstep_timeout=0.5"])
    doc = bringup.parameters(args)
    shared = doc["/**"]["ros__parameters"]
    assert shared == {"robot": "delta", "controller": "computed_torque", "lockstep": False}
    assert doc["joint_controller"]["ros__parameters"]["lockstep_timeout"] == 0.5
    assert doc["trajectory_generator"]["ros__parameters"]["goal"] == "{type: circle, radius: 0.02}"
    with pytest.raises(SystemExit, match="unknown node"):
        bringup.parameters(bringup.build_parser().parse_args(["--set", "nobody.x=1"]))


def test_bringup_runs_the_graph_and_stops_on_ctrl_c():
    """Five processes from one parameter file: a short goal runs to its end in lockstep; then SIGINT
    to `pkm bringup` (what Ctrl-C sends; the children run in their own session) stops every node
    within the grace period: exit status 0, every node's output forwarded with its prefix."""
    import signal
    import time

    env = dict(os.environ, ROS_DOMAIN_ID="142", PYTHONUNBUFFERED="1")
    p = subprocess.Popen([sys.executable, "-m", "pkm_control.cli", "bringup", "--robot", "delta", "--controller", "pd",
                          "--goal", "{type: point_to_point, goal: [0.0, 0.0, -0.28], duration: 0.05}",
                          "--duration", "50"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    lines = []
    t = time.monotonic()
    try:
        while time.monotonic() - t < 40:
            line = p.stdout.readline()
            lines.append(line)
            if "motion finished" in line or not line:
                break
    finally:
        p.send_signal(signal.SIGINT)
        out, _ = p.communicate(timeout=30)
    out = "".join(lines) + out
    assert p.returncode == 0, out[-2000:]
    for name in NODES:
        assert f"[bringup] started {name}" in out
    assert "[trajectory_generator]" in out and "goal accepted" in out
    assert "motion finished" in out, out[-2000:]
    assert "Ctrl-C: stopping the graph" in out
    assert "still running" not in out and "Traceback" not in out


def test_bringup_rviz_commands(capsys):
    """--rviz adds what the launch file starts besides the five nodes; without ROS 2 it says so."""
    import shutil

    args = bringup.build_parser().parse_args(["--robot", "planar_redundant", "--rviz", "--dry-run"])
    cmds = dict(bringup.commands(args, "/nonexistent/parameters.yaml"))
    assert list(cmds)[:5] == list(NODES)
    assert {"robot_state_publisher", "desired_state_publisher", "desired_root", "rviz2"} <= set(cmds)
    assert "joint_states:=/desired_joint_states" in cmds["desired_state_publisher"]
    assert str(ROOT / "rviz" / "planar_redundant.rviz") in cmds["rviz2"]
    if shutil.which("ros2") is None:
        assert bringup.run(args) == 2
        assert "needs a ROS 2 installation" in capsys.readouterr().err
