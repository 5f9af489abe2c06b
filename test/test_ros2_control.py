"""The ros2_control bridge without ROS: the <ros2_control> block of every robot's xacro, the shipped
controller-manager YAMLs, and the JointState commands of the topic_based convention (the graph through the
bridge, with the hardware node standing in for a controller manager, is in test_nodes.py)."""

import xml.etree.ElementTree as ET
from types import SimpleNamespace

import numpy as np
import pinocchio as pin
import pytest
import xacro
import yaml

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import load_robot, robot_config
from pkm_control.errors import InvalidInputError
from pkm_control.description.paths import share_dir, urdf_xacro_path

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


def _urdf(robot, variant, **args):
    mappings = dict({"variant": variant} if variant else {}, **args)
    return xacro.process_file(str(urdf_xacro_path(robot)), mappings=mappings).toxml()


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_ros2_control_block_has_the_actuated_joints_only(robot, variant):
    """ros2_control:=true adds one <ros2_control> system: the actuated joints in model order, each with an effort
    command interface limited to the config's force limit and position/velocity/effort state interfaces; the tree
    is unchanged, and without the argument there is no block."""
    cfg = robot_config(robot, variant)
    plain, with_block = _urdf(robot, variant), _urdf(robot, variant, ros2_control="true")
    assert "<ros2_control" not in plain
    systems = ET.fromstring(with_block).findall("ros2_control")
    assert len(systems) == 1 and systems[0].get("type") == "system"
    assert systems[0].find("hardware/plugin").text == "mock_components/GenericSystem"
    joints = systems[0].findall("joint")
    actuated = list(cfg["actuated_joints"])
    assert [j.get("name") for j in joints] == actuated
    limits = np.broadcast_to(np.asarray(cfg["actuators"]["force_limit"], float), (len(actuated),))
    for j, limit in zip(joints, limits):
        (cmd,) = j.findall("command_interface")
        assert cmd.get("name") == "effort"
        params = {p.get("name"): float(p.text) for p in cmd.findall("param")}
        assert params == {"min": -limit, "max": limit}
        assert [s.get("name") for s in j.findall("state_interface")] == ["position", "velocity", "effort"]
    clm = load_robot(robot, variant)
    model = pin.buildModelFromXML(with_block)
    assert list(model.names)[1:] == list(clm.model.names)[1:]
    assert np.array_equal(model.inertias[-1].toDynamicParameters(), clm.model.inertias[-1].toDynamicParameters())


def test_ros2_control_plugin_argument():
    doc = ET.fromstring(_urdf("palida", None, ros2_control="true",
                              ros2_control_plugin="topic_based_ros2_control/TopicBasedSystem"))
    hw = doc.find("ros2_control/hardware")
    assert hw.find("plugin").text == "topic_based_ros2_control/TopicBasedSystem"
    assert {p.get("name"): p.text for p in hw.findall("param")}["joint_states_topic"] == "/robot_joint_states"


@pytest.mark.parametrize("robot,variant", ROBOTS, ids=IDS)
def test_controller_manager_yaml_matches_the_robot(robot, variant):
    """config/ros2_control/<robot>[_<variant>]_controllers.yaml: a joint_state_broadcaster and a
    forward_command_controller named effort_controller on the effort interface of the actuated joints, in the
    order joint_controller writes them (variants whose actuated joints are the default's share its file)."""
    default_joints = robot_config(robot, None)["actuated_joints"]
    joints = robot_config(robot, variant)["actuated_joints"]
    stem = robot if list(joints) == list(default_joints) else f"{robot}_{variant}"
    doc = yaml.safe_load((share_dir() / "config" / "ros2_control" / f"{stem}_controllers.yaml").read_text())
    cm = doc["controller_manager"]["ros__parameters"]
    assert cm["joint_state_broadcaster"]["type"] == "joint_state_broadcaster/JointStateBroadcaster"
    assert cm["effort_controller"]["type"] == "forward_command_controller/ForwardCommandController"
    assert cm["update_rate"] == 2000
    ec = doc["effort_controller"]["ros__parameters"]
    assert ec["joints"] == list(joints) and ec["interface_name"] == "effort"


def _joint_state(names, effort):
    return SimpleNamespace(name=list(names), effort=list(effort))


def test_topic_based_commands_parse_by_name_in_any_order():
    from pkm_control.ros.messages import parse_joint_commands

    act = ("a", "b", "c")
    assert np.array_equal(parse_joint_commands(_joint_state(["c", "a", "b"], [3.0, 1.0, 2.0]), act), [1, 2, 3])
    for names, effort, what in ((["a", "b"], [1, 2], "missing"), (["a", "b", "c", "d"], [1, 2, 3, 4], "unknown"),
                                (["a", "a", "c"], [1, 2, 3], "duplicate"), (["a", "b", "c"], [1, 2], "efforts"),
                                (["a", "b", "c"], [1, float("nan"), 3], "finite")):
        with pytest.raises(InvalidInputError, match=what):
            parse_joint_commands(_joint_state(names, effort), act)


def test_topic_conventions():
    from pkm_control.ros.hardware_io import TopicConvention

    s = {"topic_convention": "forward_command", "controller_name": "effort_controller",
         "joint_states_topic": "/robot_joint_states", "joint_commands_topic": "/robot_joint_command"}
    fc = TopicConvention.from_settings(s)
    assert (fc.states_topic, fc.commands_topic) == ("/joint_states", "/effort_controller/commands")
    tb = TopicConvention.from_settings(dict(s, topic_convention="topic_based"))
    assert (tb.states_topic, tb.commands_topic) == ("/robot_joint_states", "/robot_joint_command")
    msg = tb.command_msg(5, ("a", "b"), np.array([1.0, -2.0]))
    assert list(msg.name) == ["a", "b"] and list(msg.effort) == [1.0, -2.0] and len(msg.position) == 0
    assert np.array_equal(tb.parse_command(msg, ("b", "a")), [-2.0, 1.0])
    assert np.array_equal(fc.parse_command(fc.command_msg(5, ("a", "b"), np.array([1.0, -2.0])), ("a", "b")),
                          [1.0, -2.0])
    with pytest.raises(InvalidInputError, match="topic_convention"):
        TopicConvention.from_settings(dict(s, topic_convention="ethercat"))
