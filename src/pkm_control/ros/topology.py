"""The graph's topology: which nodes run for a hardware mode and in which order, the names of the topics several
packages share, and the ROS domain of the graph tools. ROS-free (no rclpy)."""


from __future__ import annotations

import os

from ..errors import InvalidInputError, excerpt
from ..hardware.plugin import hardware_names, hardware_plugin

#: the simulated robot's exact joint states (tests and plots, never the controller): trajectory_msgs/JointTrajectory
#: chunks of every joint, one point per sample (hardware_io.SimulationTopics)
GROUND_TRUTH_TOPIC = "/hardware/ground_truth/joint_trajectory"

#: the largest ROS domain id (ROS_DOMAIN_ID) rcl accepts
DOMAIN_MAX = 232


def domain_id(requested: int | None = None, isolated: bool = True) -> int:
    """The ROS domain of `pkm demo` and of the graph tools (`pkm topics`, `echo`, `param`, `call`, `goal`):
    ``requested`` (their --domain-id), else ROS_DOMAIN_ID when it is set, else an isolated one derived from the
    process id (``isolated``: the demo, so that it meets no other graph) or ROS's default 0 (the tools: where
    `pkm bringup` and the launch file run without ROS_DOMAIN_ID). InvalidInputError for a ROS_DOMAIN_ID that is
    not a domain id."""
    if requested is not None:
        return requested
    env = os.environ.get("ROS_DOMAIN_ID", "").strip()
    if env:
        if not (env.isdigit() and int(env) <= DOMAIN_MAX):
            raise InvalidInputError(f"ROS_DOMAIN_ID={excerpt(env)!r} is not a ROS domain id (0 to {DOMAIN_MAX})")
        return int(env)
    return 100 + os.getpid() % 100 if isolated else 0


#: the node executables, in start order (the clock source last, so every subscriber is up)
NODES = ("trajectory_generator", "inverse_kinematics", "computed_force", "joint_controller", "hardware")

#: nodes that work on the stamps of their input messages and need no clock of their own
STAMP_DRIVEN = ("inverse_kinematics", "computed_force")
#: nodes that subscribe /clock themselves and take the sim time from its messages
CLOCK_READERS = ("trajectory_generator",)


def graph(hardware: str = "sim", stand_in: bool = False) -> list:
    """(node, use_sim_time) of the graph for a hardware mode, in start order. The clock source (the node that
    simulates the robot; joint_controller in front of ros2_control) does not follow /clock, nor do the nodes whose
    outputs carry their inputs' stamps (STAMP_DRIVEN: they would only pay for every /clock message) and those that
    read /clock themselves (CLOCK_READERS: rclpy's time source would take every /clock message a second time).
    The nodes without sim time stamp only their /diagnostics with the wall clock. ``stand_in`` (ros2_control):
    the ``hardware`` node plays the controller manager, on its own clock as one does; (canopen) the drives are
    emulated inside joint_controller, the graph is the same."""
    kind = hardware_plugin(hardware)
    names = NODES if kind.runs_hardware_node(stand_in) else NODES[:-1]
    clock = kind.time_source
    return [(n, n not in (clock, "hardware") and n not in STAMP_DRIVEN + CLOCK_READERS) for n in names]


def stand_in_parameters(hardware: str, stand_in: bool) -> dict:
    """{node: {key: value}}: the parameters a graph's nodes take for the kind's ``--stand-in`` (HardwarePlugin.stand_in;
    none without it). InvalidInputError for a kind that has no stand-in, naming the kinds that have one."""
    if not stand_in:
        return {}
    kind = hardware_plugin(hardware)
    if kind.stand_in is None:
        having = [name for name in hardware_names() if _stands_in(name)]
        raise InvalidInputError(f"--stand-in: hardware {hardware!r} has no stand-in (a simulated robot in place of the "
                                f"real one); the kinds that have one: {', '.join(having)}")
    return {node: dict(params) for node, params in kind.stand_in.items()}


def _stands_in(name: str) -> bool:
    try:
        return hardware_plugin(name).stand_in is not None
    except InvalidInputError:           # a kind that does not load has no stand-in to offer
        return False


def estimated_state_topic(hardware: str = "sim") -> str:
    """Where joint_controller publishes every joint from its state estimator (robot_state_publisher's input):
    /joint_states when it hosts the robot; beside the robot's own /joint_states otherwise."""
    return "/joint_states" if hardware_plugin(hardware).hosted else "/estimated_joint_states"


def trusted_sources(hardware: str = "sim", stand_in: bool = False) -> str:
    """The ``sources`` parameter that `pkm bringup` and the launch file give every node (trajectory.trust): each
    stream the graph's own nodes produce bound to its producer by name, so that a peer that starts first cannot take
    it: /clock to the clock source (``graph``), /platform_trajectory to the generator, /joint_references and
    /platform_pose to inverse_kinematics, /feedforward to computed_force, and /joint_states to the node that measures
    the robot (joint_controller when it hosts it, the hardware node with topics or standing in; not a controller
    manager's broadcaster, whose name is its user's). Other streams bind their first publisher of a run."""
    kind = hardware_plugin(hardware)
    pairs = {"/clock": kind.time_source, "/platform_trajectory": "trajectory_generator",
             "/joint_references": "inverse_kinematics", "/platform_pose": "inverse_kinematics",
             "/feedforward": "computed_force"}
    if kind.hosted:
        pairs["/joint_states"] = "joint_controller"
    elif kind.runs_hardware_node(stand_in):
        pairs["/joint_states"] = "hardware"
    return ",".join(f"{topic}={node}" for topic, node in pairs.items())
