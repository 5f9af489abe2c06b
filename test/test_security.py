"""The SROS2 policy (config/sros2/pkm_control.policy.xml) against the nodes as they are: every topic a node
publishes or subscribes and every service it offers, in both hardware modes, is allowed in its enclave."""

import os
import xml.etree.ElementTree as ET

import pytest

os.environ["ROS_DOMAIN_ID"] = "146"
rclpy = pytest.importorskip("rclpy")

from rclpy.parameter import Parameter  # noqa: E402

from pkm_control.description.paths import share_dir  # noqa: E402

pytestmark = pytest.mark.ros
POLICY = share_dir() / "config" / "sros2" / "pkm_control.policy.xml"


def allowed():
    """{node: {(kind, mode): set of names}} from the policy, names made absolute ("~/x" -> "/node/x")."""
    out = {}
    for enclave in ET.parse(POLICY).getroot().iter("enclave"):
        for prof in enclave.iter("profile"):
            node = prof.get("node")
            assert enclave.get("path") == f"/pkm_control/{node}" and prof.get("ns") == "/"
            rules = out.setdefault(node, {})
            for group in prof:
                (mode, value), = group.attrib.items()
                assert value == "ALLOW"
                names = {("/" + node + x[1:]) if x.startswith("~") else "/" + x for x in (e.text for e in group)}
                rules.setdefault((group.tag, mode), set()).update(names)
    return out


def test_policy_covers_every_node_in_both_hardware_modes():
    from pkm_control.nodes.computed_force import ComputedForceNode
    from pkm_control.nodes.hardware import HardwareNode
    from pkm_control.nodes.inverse_kinematics import InverseKinematicsNode
    from pkm_control.nodes.joint_controller import JointControllerNode
    from pkm_control.nodes.trajectory_generator import TrajectoryGeneratorNode

    rules = allowed()
    rclpy.init()
    try:
        for cls, kw in ((TrajectoryGeneratorNode, {}), (InverseKinematicsNode, {}), (ComputedForceNode, {}),
                        (JointControllerNode, {}), (JointControllerNode, {"hardware": "topics"}),
                        (JointControllerNode, {"controller": "direct_force"}),
                        (JointControllerNode, {"controller": "direct_force", "hardware": "topics"}),
                        (HardwareNode, {})):
            node = cls(parameter_overrides=[Parameter("use_sim_time", value=cls is not HardwareNode)]
                       + [Parameter(k, value=v) for k, v in kw.items()])
            name = node.get_name()
            try:
                r = rules[name]
                pubs = {p.topic_name for p in node.publishers}
                subs = {s.topic_name for s in node.subscriptions}
                srvs = {s.srv_name if s.srv_name.startswith("/") else "/" + s.srv_name.replace("~", name)
                        for s in node.services}
                assert pubs <= r[("topics", "publish")], (name, pubs - r[("topics", "publish")])
                assert subs <= r[("topics", "subscribe")], (name, subs - r[("topics", "subscribe")])
                assert srvs <= r[("services", "reply")], (name, srvs - r[("services", "reply")])
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown()
