"""viewer: the running graph in the browser view (``pkm view --robot R``, live mode).

Subscribes
  /joint_states            sensor_msgs/JointState   every tree joint of the measured robot (joint_controller's
                                                    state estimate; effort = the applied actuator forces, drawn
                                                    as arrows along the actuated joints); the stamp is the sim time
  /platform_wrench         geometry_msgs/WrenchStamped  the contact force (force laws), an arrow at the tool
  /desired_joint_states    sensor_msgs/JointState   every tree joint of the desired robot (inverse_kinematics),
                                                    drawn as a translucent ghost
All as sensor data: the view shows the newest state and skips the rest. Each topic is bound to one publisher
(ros/peers.py; ``sources``, default: the joint states to joint_controller, the desired ones to inverse_kinematics, a
topic not named to its first publisher): the others' messages are refused, counted on /diagnostics with their gid and
logged at most once a second; ~/rebind_sources (std_srvs/Trigger) binds them again. The contact force arrow
(orange) ends at the tool point of the robot's config/environment.yaml section, a quarter of the robot's size at
100 N. The controller's name is read from joint_controller's ``controller`` parameter unless given. The page is
redrawn at ``rate`` (wall clock) when a state arrived.
"""

from __future__ import annotations

import threading

from rclpy.node import Node

from ..ros.qos import qos
from ..ros.runtime import Diagnostics, ServiceGuard, guarded

DISPLAY_RATE = 30.0           # Hz (wall): redraws of the page, at most


class ViewerNode(Node):
    def __init__(self, view, rate: float = DISPLAY_RATE, topic: str = "/joint_states", sources: str | None = None,
                 **kwargs):
        super().__init__("viewer", **kwargs)
        from sensor_msgs.msg import JointState

        from ..ros.peers import Sources

        self.view = view
        self.scene = view.scene
        self.diag = Diagnostics(self)
        self.diag.extra["robot"] = self.scene.model.name
        self.pending = {}               # what arrived since the last redraw: measured, desired, effort, t
        self.drawn = threading.Event()  # set after each redraw (tests wait on it)
        self.sources = Sources(self, self.diag, default_sources(topic) if sources is None else sources,
                               ServiceGuard(self, self.diag))
        self.sources.subscribe(JointState, topic, self.on_measured, qos("/joint_states", "sub:viewer"), "joint_states")
        self.sources.subscribe(JointState, "/desired_joint_states", self.on_desired,
                               qos("/desired_joint_states", "sub:viewer"), "desired_joint_states")
        # the contact force as an arrow at the tool (force laws: /platform_wrench; the tool point from the robot's
        # section of config/environment.yaml, the platform origin without one)
        from geometry_msgs.msg import WrenchStamped

        from ..errors import PkmError
        from ..hardware.contact import load_environment
        from ..ros.qos import WRENCH_TOPIC

        try:
            view.tool_point = load_environment(self.scene.model.name)[0].tool_point
        except PkmError:
            pass                        # no environment for this robot: the sensor at the platform origin
        self.sources.subscribe(WrenchStamped, WRENCH_TOPIC, self.on_wrench, qos(WRENCH_TOPIC, "sub:viewer"),
                               "platform_wrench")
        self.create_timer(1.0 / rate, guarded(self.diag, "redraw")(self.redraw))
        self._controller_query = None
        if not view.controller:
            from rclpy.parameter_client import AsyncParameterClient

            self._params = AsyncParameterClient(self, "joint_controller")
            self._controller_timer = self.create_timer(1.0, self._ask_controller)

    def _state(self, msg, what):
        from ..ros.messages import to_ns

        return self.scene.joint_vector(msg.name, msg.position, what), to_ns(msg.header.stamp) * 1e-9

    def on_measured(self, msg):
        q, t = self._state(msg, "joint_states")
        effort = None
        if len(msg.effort):
            efforts = dict(zip(msg.name, msg.effort))
            effort = [efforts[n] for n in self.scene.model.actuated_joints]
            self.scene.actuator_forces(q, effort)          # refuses a non-finite or absurd effort here
        self.pending.update(measured=q, effort=effort, t=t)
        self.diag.step()

    def on_wrench(self, msg):
        from ..ros.messages import parse_wrench_stamped

        self.pending["contact"] = parse_wrench_stamped(msg, self.view.tool_point).wrench[:3]   # refuses NaN

    def on_desired(self, msg):
        q, _ = self._state(msg, "desired_joint_states")
        self.pending["desired"] = q

    def redraw(self):
        if not self.pending:
            return
        p, self.pending = self.pending, {}
        self.view.show(measured=p.get("measured"), desired=p.get("desired"), effort=p.get("effort"), t=p.get("t"),
                       contact=p.get("contact"))
        self.drawn.set()

    def _ask_controller(self):
        if self._controller_query is None and self._params.services_are_ready():
            self._controller_query = self._params.get_parameters(["controller"])
            self._controller_query.add_done_callback(self._got_controller)

    def _got_controller(self, future):
        values = future.result().values if future.result() is not None else []
        if values and values[0].string_value:
            self.view.controller = values[0].string_value
            self._controller_timer.cancel()
        else:
            self._controller_query = None


def default_sources(topic: str) -> str:
    """The viewer's ``sources``: the measured joint states (``topic``) bound to joint_controller (its state estimate),
    the desired ones to inverse_kinematics; /platform_wrench (joint_controller or the hardware node) is not named."""
    return f"{topic}=joint_controller,/desired_joint_states=inverse_kinematics"


def run(view, topic: str = "/joint_states", sources: str | None = None) -> int:
    """Spin a ViewerNode drawing into ``view`` until SIGINT, SIGTERM or SIGHUP (runtime.run_node)."""
    from ..ros.runtime import run_node

    return run_node(lambda: ViewerNode(view, topic=topic, sources=sources), __doc__, ["pkm-view"])
