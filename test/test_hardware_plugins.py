"""Hardware kinds selected by name (pkm_control.plugins, hardware/plugin.py): pkm_control's own kinds are registered
in the entry-point group pkm_control.hardware, an unknown name is refused with the registered ones listed, and a kind
from another package is selectable without touching pkm_control: a distribution written here (a dist-info with its
entry_points.txt, and its module, in a directory put on sys.path, as `pip install` would leave them) registers a
``braked`` robot whose service, supervision and diagnostics status appear through joint_controller."""

import os
import sys
import textwrap

import numpy as np
import pytest

from pkm_control import plugins
from pkm_control.errors import InvalidInputError
from pkm_control.hardware.plugin import HardwarePlugin, hardware_names, hardware_plugin

BUILT_IN = ("canopen", "mujoco", "ros2_control", "sim", "topics")

#: another package's hardware kind: the simulated robot behind a brake. ~/engage_brake asks, the next supervision
#: engages it (between two periods), and from then on the robot gets no force: its own safe state
PLUGIN_MODULE = '''
import numpy as np

from pkm_control.hardware.interface import HardwareInterface, HardwareService, Simulated, Supervision
from pkm_control.hardware.plugin import HardwarePlugin
from pkm_control.hardware.simulated import simulated_robot


class BrakedRobot(HardwareInterface, Simulated):
    def __init__(self, robot):
        self.robot, self.requested, self.engaged = robot, False, False
        self.actuated_names = robot.actuated_names

    def __getattr__(self, name):          # snapshot, wrench_sensor, ...: the simulated robot's
        return getattr(self.robot, name)

    def read(self):
        return self.robot.read()

    def write(self, command, time=None):
        self.robot.write(np.zeros(len(self.actuated_names)) if self.engaged else command, time)

    def reset(self, pose, twist=None, time=0.0):
        return self.robot.reset(pose, twist, time)

    def step(self):
        return self.robot.step()

    def ground_truth(self, snapshot=None):
        return self.robot.ground_truth(snapshot)

    def services(self):
        return (HardwareService("~/engage_brake", "std_srvs/srv/Trigger", self.on_engage),)

    def on_engage(self, request, response):
        self.requested = True
        response.success, response.message = True, "engaging the brake"
        return response

    def supervise(self, time):
        if self.requested and not self.engaged:
            self.engaged = True
            return Supervision((("warning", f"brake engaged at {time:.4f} s"),), {"brake": "engaged"}, "brake")
        return Supervision(safe_behaviour="brake") if self.engaged else None

    def diagnostic_statuses(self):
        return [("brake", "warn" if self.engaged else "ok", "engaged" if self.engaged else "released",
                 {"engaged": str(self.engaged)})]


class Braked(HardwarePlugin):
    simulated = True

    def in_process(self, settings):
        return True

    def create(self, host):
        return BrakedRobot(simulated_robot(host.dyn, host.settings))
'''


@pytest.fixture
def braked(tmp_path, monkeypatch):
    """A distribution ``pkm-test-braked`` on sys.path registering hardware ``braked``."""
    module = f"pkm_test_braked_{os.getpid()}"
    (tmp_path / f"{module}.py").write_text(PLUGIN_MODULE)
    info = tmp_path / "pkm_test_braked-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: pkm-test-braked\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [pkm_control.hardware]
        braked = {module}:Braked
        """))
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.rescan()
    yield module
    monkeypatch.undo()
    sys.modules.pop(module, None)
    plugins.rescan()


def test_the_built_in_kinds_are_registered_and_an_unknown_one_is_refused_with_the_list():
    assert set(BUILT_IN) <= set(hardware_names())
    for name in BUILT_IN:
        assert isinstance(hardware_plugin(name), HardwarePlugin)
    with pytest.raises(InvalidInputError, match="hardware 'nope' is not registered; registered: canopen, mujoco, "
                                                "ros2_control, sim, topics"):
        hardware_plugin("nope")


def test_an_entry_point_that_is_no_buildable_plugin_is_refused(monkeypatch):
    """create is abstract: a plugin class without it, or an entry point that is no HardwarePlugin, is a clear error
    when the kind is selected, and the abstract class itself cannot be instantiated."""
    import pkm_control.hardware.plugin as plugin_module

    class Unbuilt(HardwarePlugin):
        simulated = True

    with pytest.raises(TypeError, match="create"):
        Unbuilt()
    for entry, message in ((Unbuilt, "Unbuilt does not implement create"), (object(), "not a pkm_control")):
        monkeypatch.setattr(plugin_module, "load", lambda *_, entry=entry: entry)
        with pytest.raises(InvalidInputError, match=f"hardware 'unbuilt': its entry point .*{message}"):
            hardware_plugin("unbuilt")


def _bringup(*argv):
    """`pkm bringup ARGV`'s typed options (the CLI's edge)."""
    from pkm_control.cli import build_parser
    from pkm_control.cli.graph import bringup_options

    return bringup_options(build_parser().parse_args(["bringup", *argv]))


def test_a_kind_without_a_stand_in_refuses_stand_in_naming_those_that_have_one():
    with pytest.raises(InvalidInputError, match="hardware 'mujoco' has no stand-in.*: canopen, ros2_control"):
        _bringup("--hardware", "mujoco", "--stand-in")


def test_another_package_registers_a_kind_that_the_graph_and_the_cli_select_by_name(braked, capsys):
    from pkm_control.graph.bringup import BringupOptions, parameters
    from pkm_control.ros.topology import estimated_state_topic, graph

    assert "braked" in hardware_names() and type(hardware_plugin("braked")).__module__ == braked
    # hosted in joint_controller as sim: the same four nodes, joint_controller the clock source
    assert graph("braked") == graph("sim") and estimated_state_topic("braked") == "/joint_states"
    assert parameters(_bringup("--hardware", "braked", "--dry-run"))["/**"]["ros__parameters"]["hardware"] == "braked"
    with pytest.raises(SystemExit):
        _bringup("--hardware", "nope")
    assert "invalid choice: 'nope'" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="hardware 'nope' is not registered; registered: braked, canopen"):
        BringupOptions(hardware="nope")           # the options made without the CLI are checked too


@pytest.mark.ros
def test_joint_controller_offers_the_service_supervision_and_status_of_a_plugged_in_kind(braked):
    """joint_controller runs the plugged-in robot as it runs sim (lockstep in its process); the robot's service is
    on the ROS graph (called here through a client), its supervision's finding is logged into the node's diagnostics
    with the robot's own safe state, and its device status is a status of /diagnostics."""
    import rclpy
    from diagnostic_msgs.msg import DiagnosticStatus
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from std_srvs.srv import Trigger

    from pkm_control.nodes.joint_controller import JointControllerNode

    context = rclpy.Context()
    rclpy.init(context=context, domain_id=int(os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "147")))
    node = JointControllerNode(context=context, parameter_overrides=[
        Parameter("robot", value="palida"), Parameter("controller", value="pd"), Parameter("hardware", value="braked")])
    client_node = rclpy.create_node("pkm_test_braked_client", context=context)
    ex = SingleThreadedExecutor(context=context)
    try:
        ex.add_node(node)
        ex.add_node(client_node)
        hw = node.loop.hardware
        assert node.sim and type(hw).__module__ == braked and node.clock is not None
        statuses = {st.name: st for st in node.diag.publish().status[1:]}
        assert statuses["/joint_controller/brake"].level == DiagnosticStatus.OK
        for _ in range(3):
            node.period(node.k * node.dt_ns)
        assert node.diag.safe_behaviour == "hold"          # no references streamed: the controller holds
        assert np.all(np.abs(hw.read().effort) > 1.0)        # against gravity
        client = client_node.create_client(Trigger, "/joint_controller/engage_brake")
        assert client.wait_for_service(timeout_sec=30.0)
        future = client.call_async(Trigger.Request())
        ex.spin_until_future_complete(future, timeout_sec=30.0)
        assert future.result().success and future.result().message == "engaging the brake"
        assert "brake" not in node.diag.extra                # asked, done by the next period's supervision
        node.period(node.k * node.dt_ns)
        assert node.diag.extra["brake"] == "engaged" and node.diag.safe_behaviour == "brake"
        node.period(node.k * node.dt_ns)                      # the first command the brake holds back
        assert np.array_equal(hw.read().effort, np.zeros(len(hw.actuated_names)))
        brake = {st.name: st for st in node.diag.publish().status[1:]}["/joint_controller/brake"]
        assert brake.level == DiagnosticStatus.WARN and brake.message == "engaged"
        assert {kv.key: kv.value for kv in brake.values} == {"engaged": "True"}
    finally:
        ex.shutdown()
        client_node.destroy_node()
        node.destroy_node()
        rclpy.shutdown(context=context)
