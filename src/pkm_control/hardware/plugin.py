"""Hardware kinds selected by name (ROS-free), as pluginlib selects a ros2_control hardware interface by the
``<plugin>`` of the URDF's ``<ros2_control>`` block.

The ``hardware`` setting names a HardwarePlugin registered in the entry-point group ``pkm_control.hardware``
(plugins.py; pkm_control's own in setup.py: sim, mujoco, canopen here in kinds.py, topics and ros2_control in
ros/hardware_io.py). A plugin says how the graph runs around its robot (its class attributes: which node hosts it,
which is the time source, what ``--stand-in`` means) and builds the robot for joint_controller (``create``, from a
HardwareHost). Everything else specific to the kind (supervision, services, per-device diagnostics) is the hardware
interface's own (interface.py hooks). A new kind is one plugin and one entry point, also from another package
(docs/hardware.md, "Add your own hardware interface").
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import Callable

from ..errors import InvalidInputError
from ..plugins import HARDWARE_GROUP, load, names
from .interface import HardwareInterface


@dataclass(frozen=True)
class HardwareHost:
    """What joint_controller gives a plugin to build its robot: the node's settings (control/settings.py, with
    ``control_rate``, ``lockstep``, the plant keys, the kind's own keys), the robot (``ctx``: RobotContext, ``dyn``:
    its ClosedLoopDynamics), its clock (``now()``, s), its log (``log(level, line)``) and its diagnostics keys
    (``diagnostics``, a dict the plugin may add to). A robot behind ROS topics also takes the ``node``, its stream
    ``sources`` (ros/peers.py) and the loop's callbacks: ``on_measurement(t_ns)``, ``on_repeated_state(t_ns)``,
    and ``wrench_point`` (the F/T sensor's origin, platform frame, when the law reads a wrench; else None)."""

    settings: dict
    ctx: object
    dyn: object
    now: Callable
    log: Callable
    diagnostics: dict = field(default_factory=dict)
    node: object = None
    sources: object = None
    on_measurement: Callable | None = None
    on_repeated_state: Callable | None = None
    wrench_point: object = None


class HardwarePlugin(abc.ABC):
    """A kind of hardware (module docstring). The class attributes describe the graph around it; a subclass builds
    the robot in ``create`` (abstract: a subclass without it cannot be instantiated)."""

    #: joint_controller talks to the robot from its own process (publishes every joint on /joint_states); False: the
    #: robot is behind topics, its own /joint_states, joint_controller's estimate on /estimated_joint_states
    hosted: bool = True
    #: the node whose /clock the graph follows: "joint_controller" (a simulated robot inside it, or the instants of its
    #: periods), or "hardware" (the hardware node simulating a robot behind topics)
    time_source: str = "joint_controller"
    #: joint_controller publishes /robot_description (False: the robot's side owns it, ros2_control's URDF)
    publishes_description: bool = True
    #: the hardware node is in every graph (it is the robot)
    hardware_node: bool = False
    #: ``--stand-in``: a simulated robot stands in for the real one, with these node parameters ({node: {key:
    #: value}}; the hardware node among them: it is in the graph); None: the kind has no stand-in
    stand_in: dict | None = None
    #: the graph's robot is pkm_control's simulated robot (its true parameters, encoders, noise apply)
    simulated: bool = False

    def runs_hardware_node(self, stand_in: bool = False) -> bool:
        """The graph runs the hardware node."""
        return self.hardware_node or (stand_in and "hardware" in (self.stand_in or {}))

    def simulated_robot(self, stand_in: bool = False) -> bool:
        """The graph's robot is pkm_control's simulated robot (itself, or standing in)."""
        return self.simulated or (stand_in and self.stand_in is not None)

    def in_process(self, settings: dict) -> bool:
        """joint_controller steps the robot in its own process (lockstep, /clock, the ground truth, /hardware/reset)
        with these settings. The robot ``create`` returns then implements ``Simulated``."""
        return False

    @abc.abstractmethod
    def create(self, host: HardwareHost) -> HardwareInterface:
        """The robot, ready for the loop (a simulated one not yet reset: the node puts it at its initial pose).
        Refused settings raise InvalidInputError."""


def hardware_names() -> tuple:
    """The registered hardware kinds (entry-point group ``pkm_control.hardware``), sorted."""
    return names(HARDWARE_GROUP)


def hardware_plugin(name: str) -> HardwarePlugin:
    """The HardwarePlugin registered as ``name``: InvalidInputError for an unknown name (listing the registered ones),
    an entry point that is not a HardwarePlugin or a plugin class without ``create`` (a class is instantiated)."""
    plugin = load(HARDWARE_GROUP, name, "hardware")
    if isinstance(plugin, type) and issubclass(plugin, HardwarePlugin):
        if plugin.__abstractmethods__:
            raise InvalidInputError(f"hardware {name!r}: its entry point {plugin.__qualname__} does not implement "
                                    f"{', '.join(sorted(plugin.__abstractmethods__))}")
        plugin = plugin()
    if not isinstance(plugin, HardwarePlugin):
        raise InvalidInputError(f"hardware {name!r}: its entry point is {plugin!r}, not a "
                                "pkm_control.hardware.plugin.HardwarePlugin")
    return plugin
