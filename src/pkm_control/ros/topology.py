"""The graph's topology: which nodes run for a hardware mode and in which order, the names of the topics several
packages share, and the ROS domain of the graph tools. ROS-free (no rclpy)."""


from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path

from ..errors import InvalidInputError, excerpt
from ..hardware.plugin import hardware_names, hardware_plugin

#: the simulated robot's exact joint states (tests and plots, never the controller): trajectory_msgs/JointTrajectory
#: chunks of every joint, one point per sample (hardware_io.SimulationTopics)
GROUND_TRUTH_TOPIC = "/hardware/ground_truth/joint_trajectory"

#: the largest ROS domain id (ROS_DOMAIN_ID) rcl accepts
DOMAIN_MAX = 232


#: the domains an isolated run takes (``domain_id``: `pkm demo` and its variants, `pkm fuzz`, the first of `pkm bench
#: stress`), each under the run lock (``hold_domain``) until the process ends: none of the test suite's (the fixed
#: 141-151, the pool 160-182 and its empty-domain twins 210-232) nor `pkm bench loop`'s (200-209). Derived from the
#: process id alone (100 + pid % 100), without asking whether another run held it, such a run could land in a test
#: run's domain, where each graph hears the other's nodes of its names (docs/benchmarks.md: `pkm bench loop` in 163)
ISOLATED_DOMAINS = range(100, 141)
_isolated = []          # (domain, its open run lock) of the isolated domain this process took: held until it ends


def domain_id(requested: int | None = None, isolated: bool = True) -> int:
    """The ROS domain of `pkm demo` and of the graph tools (`pkm topics`, `echo`, `param`, `call`, `goal`):
    ``requested`` (their --domain-id), else ROS_DOMAIN_ID when it is set, else an isolated one (``isolated``: the
    demo, so that it meets no other graph; ``isolated_domain``) or ROS's default 0 (the tools: where `pkm bringup`
    and the launch file run without ROS_DOMAIN_ID). InvalidInputError for a ROS_DOMAIN_ID that is not a domain id."""
    if requested is not None:
        return requested
    env = os.environ.get("ROS_DOMAIN_ID", "").strip()
    if env:
        if not (env.isdigit() and int(env) <= DOMAIN_MAX):
            raise InvalidInputError(f"ROS_DOMAIN_ID={excerpt(env)!r} is not a ROS domain id (0 to {DOMAIN_MAX})")
        return int(env)
    return isolated_domain() if isolated else 0


def isolated_domain() -> int:
    """A domain of ISOLATED_DOMAINS that no other run holds, held by this process until it ends (the same one at
    every call): the first free one from a place the process id picks. InvalidInputError when every one is held."""
    if not _isolated:
        n = len(ISOLATED_DOMAINS)
        for i in range(n):
            domain = ISOLATED_DOMAINS[(os.getpid() + i) % n]
            lock = hold_domain(domain)
            if lock is not None:
                _isolated.append((domain, lock))
                break
        else:
            raise InvalidInputError(f"every ROS domain of {ISOLATED_DOMAINS.start}-{ISOLATED_DOMAINS.stop - 1} is held "
                                    "by another run: give one (--domain-id or ROS_DOMAIN_ID)")
    return _isolated[0][0]


def hold_domain(domain: int):
    """The run lock of ``domain`` (an open file, exclusively fcntl.flock-ed in the temporary directory; the domain is
    this run's until the file is closed or the process ends), or None when another run holds it. The test suite's
    runs (test/conftest.py) and `pkm bench loop` take their domains through it, so that no two of them share one:
    two graphs in one domain hear each other (each node binds its streams to one publisher and refuses the other's)."""
    lock = open(Path(tempfile.gettempdir()) / f"pkm_test_ros_domain_{domain}.lock", "w")
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return None
    return lock


#: the node executables, in start order (the clock source last, so every subscriber is up)
NODES = ("trajectory_generator", "inverse_kinematics", "computed_force", "joint_controller", "hardware")

def graph(hardware: str = "sim", stand_in: bool = False) -> list:
    """The nodes of the graph for a hardware mode, in start order. None follows /clock through rclpy's time source
    (use_sim_time), which believes any publisher of /clock: the clock source (the node that simulates the robot;
    joint_controller in front of ros2_control) has its own time, the generator, inverse kinematics, computed force
    and (hardware topics, real time) joint_controller read /clock themselves, bound to its source and guarded
    (trajectory.trust), and a robot behind topics gives joint_controller's lockstep periods their instants in its
    bound /joint_states stamps. ``stand_in`` (ros2_control): the ``hardware`` node plays the controller manager, on
    its own clock as one does; (canopen) the drives are emulated inside joint_controller, the graph is the same
    (HardwarePlugin.runs_hardware_node)."""
    return list(NODES if hardware_plugin(hardware).runs_hardware_node(stand_in) else NODES[:-1])


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


def robot_topics(s: dict) -> tuple:
    """(states topic, commands topic) of a robot behind topics for the settings ``s`` (topic_convention and its
    names): forward_command's /joint_states and /<controller_name>/commands, or topic_based's joint_states_topic and
    joint_commands_topic."""
    if s["topic_convention"] == "topic_based":
        return s["joint_states_topic"], s["joint_commands_topic"]
    return "/joint_states", f"/{s['controller_name']}/commands"


def trusted_sources(hardware: str = "sim", stand_in: bool = False,
                    topics=("/joint_states", "/effort_controller/commands")) -> str:
    """The ``sources`` parameter that `pkm bringup` and the launch file give every node (trajectory.trust): every
    stream a node of the graph takes, bound to its producer by name, so that no consumer binds first-come (a peer
    that starts first cannot take a stream): /clock to the clock source, /platform_trajectory and /force_references
    to the generator,
    /joint_references, /platform_pose and /desired_joint_states to inverse_kinematics, /feedforward to
    computed_force, the estimated joint states (and, but with ros2_control, /robot_description) to joint_controller,
    the generator's status to it, and, with a robot behind ``topics`` (its states and commands topics,
    ``robot_topics``), its states, /platform_wrench and the ground truth to the hardware node (hardware topics, or
    standing in for a controller manager) and its commands to joint_controller; the robot inside joint_controller
    (hosted hardware), its /platform_wrench and ground truth to joint_controller. The recorders take the same. A real
    controller manager's broadcaster is not named (its node's name is its user's): that stream binds its first
    publisher of a run."""
    kind = hardware_plugin(hardware)
    pairs = {"/clock": kind.time_source, "/platform_trajectory": "trajectory_generator",
             "/force_references": "trajectory_generator", "/joint_references": "inverse_kinematics",
             "/platform_pose": "inverse_kinematics", "/desired_joint_states": "inverse_kinematics",
             "/feedforward": "computed_force", estimated_state_topic(hardware): "joint_controller",
             "/trajectory_generator/status": "trajectory_generator"}
    if kind.publishes_description:
        pairs["/robot_description"] = "joint_controller"
    if kind.hosted:
        pairs["/platform_wrench"] = pairs[GROUND_TRUTH_TOPIC] = "joint_controller"
    else:
        states, commands = topics
        pairs[commands] = "joint_controller"
        if kind.runs_hardware_node(stand_in):
            pairs[states] = pairs["/platform_wrench"] = pairs[GROUND_TRUTH_TOPIC] = "hardware"
    return ",".join(f"{topic}={node}" for topic, node in pairs.items())
