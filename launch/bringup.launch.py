"""The pkm_control node graph on a full ROS 2 installation (launch_ros).

    ros2 launch pkm_control bringup.launch.py robot:=palida controller:=cf_rb_friction rviz:=true

Arguments (ARGUMENTS below; docs/parameters.md lists them beside every node parameter)
  robot              a robot id (`pkm info` lists them) or the path of a robot YAML [palida]
  variant            robot variant ('' = the robot's default)                     ['']
  controller         named controller of the controller YAML (its controllers:     [pd_feedforward]
                     section; config/controllers.yaml ships these):
                       single-joint PD and computed force (Abdellatif): pd, pd_feedforward, cf_rb,
                         cf_rb_friction, computed_torque
                       Codourey's regulators 1-4 and Fig. 6: pd, pd_acceleration_feedforward,
                         cf_rb_friction, cf_rb_friction_lead, mass_matrix_decoupling (delta only)
                       Taghirad, joint space: joint_pd_gravity, joint_idc, joint_robust_idc,
                         joint_adaptive_idc
                       Taghirad, task space: task_pd, task_pd_feedforward, task_pd_gravity, task_idc,
                         task_robust_idc, task_adaptive_idc
                     (each law's equations: pkm_control.control.laws; docs/graph.md "Controllers")
  controller_config  controller YAML ('' = <share>/config/controllers.yaml)       ['']
  goal               trajectory spec (YAML/JSON) started by trajectory_generator ['']
  hardware           sim: the simulated robot inside joint_controller (one process,  [sim]
                     read-update-write); mujoco: MuJoCo as the robot, inside
                     joint_controller as sim; topics: the robot in the `hardware` node;
                     ros2_control: your controller manager is the robot; canopen:
                     CiA 402 drives on a CAN bus, the master inside joint_controller
                     (config/canopen/<robot>.yaml; a real bus needs lockstep:=false)
  stand_in           with hardware ros2_control: the `hardware` node stands in     [false]
                     for the controller manager; with hardware canopen: emulated
                     drives on a virtual bus inside joint_controller (canopen_emulate)
  topic_convention   forward_command | topic_based (hardware topics, ros2_control) [forward_command]
  lockstep           true: deterministic lockstep on sim time; false: real time    [true]
                     (with the stream and observation rates of settings.REALTIME_SETTINGS)
  true_parameters_file  the simulated robot's own parameter set (pkm perturb)      ['']
  rviz               start rviz2 with rviz/<robot>.rviz                           [false]

Starts the pkm_control nodes of pkm_control.ros.topology.graph(hardware) with the same parameters
`pkm bringup` gives them (use_sim_time false: the nodes read /clock bound to the graph's clock source, never
through rclpy's time source, which believes any publisher; `sources` names every stream's producer:
pkm_control.ros.topology), robot_state_publisher with the
xacro-processed URDF (pkm_control.description.robots.robot_urdf: xacro's Python API with the
robot's config and variant, exactly what the core loads) drawing the estimated joint states
(pkm_control.ros.topology.estimated_state_topic), a second one in namespace `desired` with frame prefix
`desired/` drawing /desired_joint_states (a static transform puts desired/base_link on
base_link), and optionally RViz.
"""

import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, SetEnvironmentVariable
from launch.conditions import IfCondition
from launch.substitutions import LaunchConfiguration
from launch_ros.actions import Node
from launch_ros.parameter_descriptions import ParameterValue

ARGUMENTS = {
    "robot": ("palida", "robot id (`pkm info` lists them: stewart, palida, lopes, delta, planar_redundant, "
                        "planar_3rrr, five_bar, orthoglide, tsai_3upu) or the path of a robot YAML"),
    "variant": ("", "robot variant ('' = default)"),
    "controller": ("pd_feedforward", "named controller of the controller YAML's controllers: section (config/"
                                     "controllers.yaml: pd, cf_rb_friction, joint_idc, task_idc, ...; "
                                     "docs/parameters.md)"),
    "controller_config": ("", "controller YAML ('' = <share>/config/controllers.yaml)"),
    "goal": ("", "trajectory spec (YAML/JSON) the trajectory_generator starts with"),
    "hardware": ("sim", "sim: the robot inside joint_controller; mujoco: MuJoCo as the robot, inside "
                        "joint_controller; topics: the robot in the hardware node; ros2_control: a ros2_control "
                        "controller manager is the robot; canopen: CiA 402 drives on a CAN bus (real bus: "
                        "lockstep:=false)"),
    "stand_in": ("false", "hardware ros2_control: the hardware node stands in for the controller manager; hardware "
                          "canopen: emulated drives on a virtual bus inside joint_controller"),
    "topic_convention": ("forward_command", "forward_command (joint_state_broadcaster + forward_command_controller)"
                                            " | topic_based (topic_based_ros2_control's JointState topics)"),
    "lockstep": ("true", "deterministic lockstep on sim time (false: real time)"),
    "true_parameters_file": ("", "the simulated robot's own parameter set (`pkm perturb` writes one; '' = the "
                                 "model's)"),
    "rviz": ("false", "start rviz2 with rviz/<robot>.rviz"),
}


def launch_setup(context, *args, **kwargs):
    """The nodes for the resolved arguments (an OpaqueFunction: the URDF depends on robot and variant)."""
    from pkm_control.description.robots import robot_rviz, robot_urdf
    from pkm_control.control.settings import load_settings
    from pkm_control.ros.dds import PROFILE_VARIABLE, dds_profile
    from pkm_control.ros.topology import (estimated_state_topic, graph, robot_topics, stand_in_parameters,
                                          trusted_sources)

    arg = {name: LaunchConfiguration(name).perform(context) for name in ARGUMENTS}
    robot, variant, hardware = arg["robot"], arg["variant"], arg["hardware"]
    shared = {"robot": robot, "variant": variant, "controller": arg["controller"],
              "controller_config": arg["controller_config"], "hardware": hardware,
              "lockstep": arg["lockstep"].lower() in ("true", "1", "yes"),
              "topic_convention": arg["topic_convention"],
              "true_parameters_file": ParameterValue(arg["true_parameters_file"], value_type=str)}
    defaults = load_settings(robot, arg["controller"], arg["controller_config"])
    if not shared["lockstep"]:       # real time: the stream and observation rates of `pkm bringup --realtime`
        from pkm_control.control.settings import realtime_settings

        shared.update(realtime_settings(defaults["control_rate"]))
    stand_in = arg["stand_in"].lower() in ("true", "1", "yes")
    # every stream bound to the graph's own node by name (pkm_control.ros.topology.trusted_sources)
    settings = {**defaults, **shared}
    shared["sources"] = trusted_sources(hardware, stand_in, robot_topics(settings))
    overrides = stand_in_parameters(hardware, stand_in)          # what the kind's stand-in sets (HardwarePlugin)
    # every process below with the project's Fast DDS profile (pkm_control.ros.dds: announcements every 0.5 s), unless
    # the user chose one
    profile = dds_profile(os.environ)
    nodes = [] if profile is None else [SetEnvironmentVariable(PROFILE_VARIABLE, str(profile))]
    for name in graph(hardware, stand_in):
        own = {"use_sim_time": False}      # /clock is read bound to its source, never through rclpy's time source
        if name == "trajectory_generator":
            own["goal"] = ParameterValue(arg["goal"], value_type=str)
        own.update(overrides.get(name, {}))
        # stopped as `pkm bringup` stops them: SIGTERM 2 s after the SIGINT (a pkm node then exits at once,
        # ros.runtime.run_node), SIGKILL 1 s later (launch's defaults: 5 s and 5 s)
        nodes.append(Node(package="pkm_control", executable=name, name=name, output="screen",
                          parameters=[shared, own], sigterm_timeout="2", sigkill_timeout="1"))
    urdf = robot_urdf(robot, variant or None)
    description = ParameterValue(urdf, value_type=str)
    nodes.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                      name="robot_state_publisher", output="screen",
                      parameters=[{"robot_description": description, "use_sim_time": True}],
                      remappings=[("joint_states", estimated_state_topic(hardware))]))
    nodes.append(Node(package="robot_state_publisher", executable="robot_state_publisher",
                      name="robot_state_publisher", namespace="desired", output="screen",
                      parameters=[{"robot_description": description, "use_sim_time": True,
                                   "frame_prefix": "desired/"}],
                      remappings=[("joint_states", "/desired_joint_states")]))
    # the desired tree's root coincides with the measured one
    nodes.append(Node(package="tf2_ros", executable="static_transform_publisher", name="desired_root",
                      arguments=["--frame-id", "base_link", "--child-frame-id", "desired/base_link"]))
    rviz = robot_rviz(robot)
    nodes.append(Node(package="rviz2", executable="rviz2", name="rviz2", output="screen",
                      arguments=[] if rviz is None else ["-d", str(rviz)],
                      parameters=[{"use_sim_time": True}],
                      condition=IfCondition(arg["rviz"])))
    return nodes


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(name, default_value=default, description=text)
         for name, (default, text) in ARGUMENTS.items()]
        + [OpaqueFunction(function=launch_setup)])
