"""The rclpy nodes over loopback: lockstep timing, bad messages into every node, unreachable goals,
a controller that stops mid-run. Real nodes in one process, one executor; its own ROS domain."""

import math
import os
import subprocess
import sys
import time

os.environ["ROS_DOMAIN_ID"] = "141"          # before rclpy.init: no cross-talk with other test modules
os.environ.setdefault("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")

import numpy as np
import pytest

rclpy = pytest.importorskip("rclpy")

from builtin_interfaces.msg import Duration, Time  # noqa: E402
from diagnostic_msgs.msg import DiagnosticArray  # noqa: E402
from geometry_msgs.msg import PoseStamped, Quaternion, Transform, Twist, Vector3  # noqa: E402
from rclpy.executors import SingleThreadedExecutor  # noqa: E402
from rclpy.parameter import Parameter  # noqa: E402
from rosgraph_msgs.msg import Clock  # noqa: E402
from sensor_msgs.msg import JointState  # noqa: E402
from std_msgs.msg import Float64MultiArray, String  # noqa: E402
from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,  # noqa: E402
                                 MultiDOFJointTrajectoryPoint)

from pkm_control.kinematics import robot_kinematics  # noqa: E402
from pkm_control.nodes import NODES  # noqa: E402
from pkm_control.nodes.common import SampleBuffer, load_settings, matrix_to_quat, quat_to_matrix  # noqa: E402
from pkm_control.nodes.computed_force import ComputedForceNode  # noqa: E402
from pkm_control.nodes.hardware import HardwareNode  # noqa: E402
from pkm_control.nodes.inverse_kinematics import InverseKinematicsNode  # noqa: E402
from pkm_control.nodes.joint_controller import JointControllerNode  # noqa: E402
from pkm_control.nodes.trajectory_generator import TrajectoryGeneratorNode  # noqa: E402

ROBOT = "palida"
KIN = robot_kinematics(ROBOT)
DT_NS = 500_000                       # 2 kHz (config/controllers.yaml)
HOME = KIN.task.pose(KIN.model.config["home"])
Q_HOME = KIN.inverse(HOME).q
QA_HOME = Q_HOME[KIN.model.actuated_idx]

# every topic a node publishes: the spy checks every float in every message
OUTPUTS = {"/joint_states": JointState, "/hardware/platform_pose": PoseStamped, "/clock": Clock,
           "/effort_controller/commands": Float64MultiArray, "/joint_references": JointTrajectory,
           "/desired_joint_states": JointState, "/platform_pose": PoseStamped, "/feedforward": JointTrajectory,
           "/platform_trajectory": MultiDOFJointTrajectory, "/desired_platform_pose": PoseStamped,
           "/diagnostics": DiagnosticArray}


@pytest.fixture
def ros():
    rclpy.init()
    ex = SingleThreadedExecutor()
    yield ex
    ex.shutdown()
    rclpy.shutdown()


def params(sim_time=True, **kw):
    # lockstep waits of 5 s (wall): a loaded machine must not turn a slow step into a safe-behaviour step
    kw.setdefault("lockstep_timeout", 5.0)
    p = [Parameter("robot", value=ROBOT), Parameter("controller", value=kw.pop("controller", "pd"))]
    if sim_time:
        p.append(Parameter("use_sim_time", value=True))
    p += [Parameter(k, value=v) for k, v in kw.items()]
    return p


def floats(msg):
    """Every float in a message, recursively (sequences and nested messages)."""
    if isinstance(msg, float):
        yield msg
    elif isinstance(msg, (list, tuple)) or (hasattr(msg, "__array__") and not isinstance(msg, str)):
        for x in msg:
            yield from floats(x)
    elif hasattr(msg, "get_fields_and_field_types"):
        for name in msg.get_fields_and_field_types():
            yield from floats(getattr(msg, name))


class Spy:
    """Subscribes every output topic (but those the test injects into, ``skip``); counts messages
    and non-finite floats. ``watch(nodes)`` also checks every message those nodes publish, at the
    publisher (covers the injected topics too)."""

    def __init__(self, ex, skip=()):
        self.node = rclpy.create_node("spy")
        self.count = {t: 0 for t in OUTPUTS}
        self.nonfinite = []
        self.last = {}
        self.published = 0
        for topic, cls in OUTPUTS.items():
            if topic not in skip:
                self.node.create_subscription(cls, topic, self._cb(topic), 100)
        ex.add_node(self.node)

    def watch(self, nodes):
        for node in nodes:
            for pub in node.publishers:
                pub.publish = self._wrap(node.get_name(), pub.topic_name, pub.publish)

    def _wrap(self, name, topic, publish):
        def checked(msg):
            self.published += 1
            bad = [x for x in floats(msg) if not math.isfinite(x)]
            if bad:
                self.nonfinite.append((f"{name} -> {topic}", bad[:3]))
            return publish(msg)
        return checked

    def _cb(self, topic):
        def cb(msg):
            self.count[topic] += 1
            self.last[topic] = msg
            bad = [x for x in floats(msg) if not math.isfinite(x)]
            if bad:
                self.nonfinite.append((topic, bad[:3]))
        return cb


def spin_until(ex, cond, timeout=10.0):
    t = time.monotonic()
    while not cond():
        if time.monotonic() - t > timeout:
            return False
        ex.spin_once(timeout_sec=0.01)
    return True


def spin_for(ex, seconds):
    t = time.monotonic()
    while time.monotonic() - t < seconds:
        ex.spin_once(timeout_sec=0.01)


def hold_reference(t0_ns=0, t1_ns=10_000_000_000, q=QA_HOME):
    """A two-point JointTrajectory holding q from t0 to t1 (linear interpolation = constant)."""
    msg = JointTrajectory()
    msg.header.stamp = Time(sec=t0_ns // 10**9, nanosec=t0_ns % 10**9)
    msg.joint_names = list(KIN.model.actuated_joints)
    for dt in (0, t1_ns - t0_ns):
        pt = JointTrajectoryPoint(positions=list(map(float, q)), velocities=[0.0] * len(q),
                                  accelerations=[0.0] * len(q))
        pt.time_from_start = Duration(sec=dt // 10**9, nanosec=dt % 10**9)
        msg.points.append(pt)
    return msg


def add(ex, *nodes):
    for n in nodes:
        ex.add_node(n)
    return nodes


# ----------------------------------------------------------------------------- pure helpers

def test_quaternion_round_trip_and_sample_buffer():
    rng = np.random.default_rng(3)
    for _ in range(50):
        q = rng.normal(size=4)
        q /= np.linalg.norm(q)
        R = quat_to_matrix(q)
        assert np.allclose(R @ R.T, np.eye(3), atol=1e-14)
        q2 = matrix_to_quat(R)
        assert np.allclose(q2, q * np.sign(q[3]), atol=1e-12)
    buf = SampleBuffer()
    buf.add([0, 10, 20], [[0.0], [1.0], [2.0]])
    assert buf.at(10)[0] == 1.0 and buf.at(15)[0] == 1.5 and buf.at(25) is None and buf.at(-1) is None
    buf.add([10, 20, 30], [[5.0], [6.0], [7.0]])          # a newer chunk replaces from its first time
    assert [r[0] for r in buf.rows] == [0.0, 5.0, 6.0, 7.0] and buf.end == 30


def test_settings_resolution():
    s = load_settings("palida", "cf_rb", n_actuated=6)
    assert s["mode"] == "pd_feedforward" and s["feedforward_model"] == "rigid"
    assert s["kp"] == [4.0e5] * 6 and s["hold_kp"] == [4.0e5] * 6
    ct = load_settings("delta", "computed_torque", n_actuated=3)
    assert ct["kp"] == [22500.0] * 3 and ct["hold_kp"] == [1.35e3] * 3
    with pytest.raises(Exception, match="controller 'nope'"):
        load_settings("palida", "nope")


# ----------------------------------------------------------------------------- lockstep

def test_lockstep_hardware_controller_sim_time_exact(ros):
    """hardware <-> joint_controller in lockstep: N commands -> N steps, sim time N * dt exactly."""
    hw, ctl = add(ros, HardwareNode(parameter_overrides=params(sim_time=False)),
                  JointControllerNode(parameter_overrides=params()))
    spy = Spy(ros)
    pub = spy.node.create_publisher(JointTrajectory, "/joint_references", 10)
    spin_until(ros, lambda: pub.get_subscription_count() > 0, 5)
    pub.publish(hold_reference())
    N = 300
    assert spin_until(ros, lambda: hw.k >= N, 15), f"only {hw.k} steps"
    k = hw.k
    assert hw.sim_time_ns == k * DT_NS
    assert hw.plant.time == pytest.approx(k * DT_NS * 1e-9, abs=1e-12)
    spin_until(ros, lambda: spy.last.get("/clock") is not None and
               spy.last["/clock"].clock.sec * 10**9 + spy.last["/clock"].clock.nanosec >= N * DT_NS, 5)
    clk = spy.last["/clock"].clock
    assert (clk.sec * 10**9 + clk.nanosec) % DT_NS == 0          # on the control grid, exactly
    # one command per step (plus possibly the one for the newest state), no waiting misses
    assert ctl.diag.steps in (hw.k, hw.k + 1)
    assert hw.diag.deadline_misses == 0 and ctl.diag.deadline_misses == 0
    assert hw.diag.safe_behaviour == "none" and not hw.plant.safe_active
    # the PD holds home against gravity: sag = G_q / kp ~ 37.5 / 4e5 m
    st = hw.plant.read()
    assert np.abs(st.position[KIN.model.actuated_idx] - QA_HOME).max() < 2e-4
    assert not spy.nonfinite


@pytest.mark.parametrize("controller", ["cf_rb_friction", "computed_torque"])
def test_full_graph_tracks_a_goal(ros, controller):
    """All five nodes, PD + computed-force feedforward or computed torque: a 0.2 s move of 2 cm is
    tracked to < 0.5 mm, and the hardware's ground truth agrees with the IK node's forward kinematics."""
    goal = "{type: point_to_point, goal: [0.02, 0.0, -0.85, 0.0, 0.0, 0.0], duration: 0.2, profile: quintic}"
    hw, ctl, ik, cf, gen = add(
        ros, HardwareNode(parameter_overrides=params(sim_time=False, controller=controller)),
        JointControllerNode(parameter_overrides=params(controller=controller)),
        InverseKinematicsNode(parameter_overrides=params(controller=controller)),
        ComputedForceNode(parameter_overrides=params(controller=controller)),
        TrajectoryGeneratorNode(parameter_overrides=params(controller=controller, goal=goal)))
    assert ctl.mode == ("computed_torque" if controller == "computed_torque" else "pd_feedforward")
    spy = Spy(ros)
    err = []

    def record():
        st = hw.plant.read()
        ref = ctl.refs.at(hw.sim_time_ns)
        if ref is not None:
            err.append(np.abs(st.position[KIN.model.actuated_idx] - ref[:6]).max())
        return hw.k >= 560 and gen.active is None
    assert spin_until(ros, record, 30), f"only {hw.k} steps"
    assert gen.diag.steps > 5
    diag = {n.get_name(): (n.diag.rejected, n.diag.deadline_misses, n.diag.safe_behaviour, n.diag.last_reject)
            for n in (hw, ctl, ik, cf, gen)}
    assert gen.active is None and gen.diag.rejected == 0, diag
    assert np.allclose(gen.hold.position, [0.02, 0, -0.85], atol=1e-12)
    assert hw.plant.read().platform_pose.position[0] == pytest.approx(0.02, abs=5e-4)
    assert max(err) < 5e-4, (max(err), diag)
    assert all(n.diag.rejected == 0 for n in (hw, ctl, ik, cf, gen)), diag
    assert ctl.diag.deadline_misses == 0 and ctl.diag.safe_behaviour == "none"
    spin_until(ros, lambda: "/platform_pose" in spy.last and "/desired_joint_states" in spy.last, 5)
    p = spy.last["/platform_pose"].pose.position
    truth = spy.last["/hardware/platform_pose"].pose.position
    assert abs(p.x - truth.x) < 1e-3 and abs(p.z - truth.z) < 1e-3
    assert list(spy.last["/desired_joint_states"].name) == list(KIN.model.joint_names)
    assert not spy.nonfinite


# ----------------------------------------------------------------------------- robustness

def _bad_multidof(kind):
    msg = MultiDOFJointTrajectory()
    msg.header.stamp = Time(sec=0, nanosec=0)
    msg.joint_names = ["platform"] if kind != "name" else ["leg1"]
    q = matrix_to_quat(HOME.rotation)
    p = HOME.position
    tr = Transform(translation=Vector3(x=float(p[0]), y=float(p[1]), z=float(p[2])),
                   rotation=Quaternion(x=q[0], y=q[1], z=q[2], w=q[3]))
    if kind == "nan":
        tr.translation.x = float("nan")
    if kind == "quat":
        tr.rotation.w = 2.0
    tw = Twist()
    if kind == "inf":
        tw.linear.y = float("inf")
    pt = MultiDOFJointTrajectoryPoint(transforms=[tr], velocities=[tw], accelerations=[Twist()])
    pt.time_from_start = Duration(sec=0, nanosec=1_000_000)
    msg.points = [pt] if kind != "empty" else []
    if kind == "two":
        pt.transforms = [tr, tr]
        msg.points = [pt]
    return msg


def _bad_joint_states(kind):
    names = list(KIN.model.joint_names)
    pos = list(map(float, Q_HOME))
    vel = [0.0] * len(names)
    if kind == "nan":
        pos[3] = float("nan")
    elif kind == "inf":
        vel[0] = float("-inf")
    elif kind == "short":
        pos = pos[:-1]
    elif kind == "name":
        names[0] = "no_such_joint"
    msg = JointState(name=names, position=pos, velocity=vel)
    msg.header.stamp = Time(sec=100, nanosec=0)
    return msg


def _bad_joint_trajectory(kind, field):
    """A JointTrajectory on the actuated joints with one bad entry in ``field`` (positions or effort)."""
    msg = hold_reference(0, 10**9)
    if field == "effort":
        for p in msg.points:
            p.positions, p.velocities, p.accelerations, p.effort = [], [], [], [0.0] * 6
    pt = msg.points[0]
    values = list(getattr(pt, field))
    if kind == "nan":
        values[0] = float("nan")
    elif kind == "inf":
        values[1] = float("inf")
    elif kind == "short":
        values = values[:-1]
    elif kind == "name":
        msg.joint_names = ["x"] + list(msg.joint_names)[1:]
    setattr(pt, field, values)
    return msg


def test_bad_messages_into_every_node(ros):
    """NaN, inf, wrong lengths and unknown names into every input of every node: no crash, each
    counted as rejected, and no non-finite float in anything any node publishes."""
    nodes = add(ros, HardwareNode(parameter_overrides=params(sim_time=False, controller="cf_rb",
                                                              lockstep_timeout=0.05, command_timeout=0.00075)),
                JointControllerNode(parameter_overrides=params(controller="cf_rb", lockstep_timeout=0.05)),
                InverseKinematicsNode(parameter_overrides=params(controller="cf_rb")),
                ComputedForceNode(parameter_overrides=params(controller="cf_rb")),
                TrajectoryGeneratorNode(parameter_overrides=params(controller="cf_rb")))
    hw, ctl, ik, cf, gen = nodes
    injected = ("/effort_controller/commands", "/joint_states", "/joint_references", "/feedforward",
                "/platform_trajectory")
    spy = Spy(ros, skip=injected)
    spy.watch(nodes)
    n = rclpy.create_node("injector")
    ros.add_node(n)
    pubs = {
        "cmd": n.create_publisher(Float64MultiArray, "/effort_controller/commands", 10),
        "js": n.create_publisher(JointState, "/joint_states", 10),
        "ref": n.create_publisher(JointTrajectory, "/joint_references", 10),
        "ff": n.create_publisher(JointTrajectory, "/feedforward", 10),
        "traj": n.create_publisher(MultiDOFJointTrajectory, "/platform_trajectory", 10),
        "goal": n.create_publisher(String, "/trajectory_generator/goal", 10),
    }
    assert spin_until(ros, lambda: all(p.get_subscription_count() > 0 for p in pubs.values()) and hw.k > 20, 15)
    spin_for(ros, 0.2)
    before = {x.get_name(): x.diag.rejected for x in nodes}
    bad = {
        "cmd": [Float64MultiArray(data=[float("nan")] * 6), Float64MultiArray(data=[float("inf")] + [0.0] * 5),
                Float64MultiArray(data=[0.0] * 5), Float64MultiArray(data=[])],
        "js": [_bad_joint_states(k) for k in ("nan", "inf", "short", "name")],
        "ref": [_bad_joint_trajectory(k, "positions") for k in ("nan", "inf", "short", "name")],
        "ff": [_bad_joint_trajectory(k, "effort") for k in ("nan", "inf", "short")],
        "traj": [_bad_multidof(k) for k in ("nan", "inf", "quat", "name", "empty", "two")],
        "goal": [String(data="{type: point_to_point, goal: [.nan, 0, -0.85, 0, 0, 0], duration: 1}"),
                 String(data="{type: point_to_point, goal: [0, 0], duration: 1}"),
                 String(data="[not, a, mapping"), String(data="{type: warp_drive}"),
                 String(data="{type: point_to_point, goal: [0, 0, -0.85, 0, 0, 0], duration: .inf}")],
    }
    for key, msgs in bad.items():
        for m in msgs:
            pubs[key].publish(m)
            spin_for(ros, 0.02)
    spin_for(ros, 0.5)
    got = {x.get_name(): x.diag.rejected - before[x.get_name()] for x in nodes}
    # the hardware sees the commands; joint_states go to the controller and the IK node; trajectories
    # to the IK and computed-force nodes; the goals to the generator
    assert got["hardware"] >= len(bad["cmd"])
    assert got["joint_controller"] >= len(bad["js"]) + len(bad["ref"]) + len(bad["ff"])
    assert got["inverse_kinematics"] >= len(bad["js"]) + len(bad["traj"])
    assert got["computed_force"] >= len(bad["traj"])
    assert got["trajectory_generator"] == len(bad["goal"])
    # the diagnostics carry the counts
    msg = ctl.diag.publish()
    values = {kv.key: kv.value for kv in msg.status[0].values}
    assert int(values["rejected_inputs"]) == ctl.diag.rejected
    # everything still runs: the loop keeps stepping and holds home
    k = hw.k
    assert spin_until(ros, lambda: hw.k > k + 50, 10)
    assert np.abs(hw.plant.read().platform_pose.position - HOME.position).max() < 1e-3
    assert not spy.nonfinite, spy.nonfinite[:3]
    assert spy.published > 100 and spy.count["/hardware/platform_pose"] > 50


def test_unreachable_goal_rejected_robot_holds(ros):
    hw, ctl, ik, cf, gen = add(
        ros, HardwareNode(parameter_overrides=params(sim_time=False)),
        JointControllerNode(parameter_overrides=params()),
        InverseKinematicsNode(parameter_overrides=params()),
        ComputedForceNode(parameter_overrides=params()),
        TrajectoryGeneratorNode(parameter_overrides=params()))
    spy = Spy(ros)
    pub = spy.node.create_publisher(String, "/trajectory_generator/goal", 10)
    assert spin_until(ros, lambda: pub.get_subscription_count() > 0 and hw.k > 20, 15)
    # 1.5 m below the base: beyond the 1.15 m stroke
    pub.publish(String(data="{type: point_to_point, goal: [0.0, 0.0, -1.5, 0, 0, 0], duration: 0.5}"))
    assert spin_until(ros, lambda: gen.diag.rejected >= 1, 5)
    assert "UnreachablePoseError" in gen.diag.last_reject or "JointLimitError" in gen.diag.last_reject
    assert gen.active is None and gen.loaded is None
    k = hw.k
    assert spin_until(ros, lambda: hw.k > k + 200, 15)
    drift = np.abs(hw.plant.read().platform_pose.position - HOME.position).max()
    assert drift < 2e-4, (drift, ctl.diag.deadline_misses, ctl.diag.safe_behaviour, ctl.diag.last_reject)
    assert ik.diag.rejected == 0 and ctl.diag.safe_behaviour == "none"
    # a reachable goal afterwards is accepted
    pub.publish(String(data="{type: point_to_point, goal: [0.0, 0.0, -0.84, 0, 0, 0], duration: 0.1}"))
    assert spin_until(ros, lambda: gen.active is not None, 5)
    assert not spy.nonfinite


@pytest.mark.parametrize("behaviour", ["hold", "zero"])
def test_controller_stops_hardware_safe_within_two_periods(ros, behaviour):
    hw, ctl = add(ros, HardwareNode(parameter_overrides=params(sim_time=False, safe_behaviour=behaviour,
                                                               lockstep_timeout=0.02)),
                  JointControllerNode(parameter_overrides=params()))
    spy = Spy(ros)
    pub = spy.node.create_publisher(JointTrajectory, "/joint_references", 10)
    spin_until(ros, lambda: pub.get_subscription_count() > 0, 5)
    pub.publish(hold_reference())
    assert spin_until(ros, lambda: hw.k >= 100, 15)
    modes = []
    advance = hw.advance

    def traced():          # (sim time at which the step starts, what the plant applied over it)
        t = hw.sim_time_ns
        advance()
        modes.append((t, hw.plant.mode))
    hw.advance = traced
    ros.remove_node(ctl)
    ctl.destroy_node()
    t_last = hw.plant._last_command            # sim time of the last command written
    assert spin_until(ros, lambda: len(modes) >= 12, 10)
    first = next(t for t, m in modes if m != "command")
    assert {m for t, m in modes if t > first} == {behaviour}
    # the last command acts over [t_last, t_last + dt], is held one more period, then the behaviour
    assert round(first - t_last * 1e9) <= 2 * DT_NS
    assert hw.diag.deadline_misses >= 1
    assert hw.diag.safe_behaviour == behaviour
    z = hw.plant.read().platform_pose.position[2]
    if behaviour == "hold":
        assert abs(z - HOME.position[2]) < 1e-3
    else:
        assert z < HOME.position[2] - 1e-5       # falls without force
    assert not spy.nonfinite


# ----------------------------------------------------------------------------- executables

def test_help_of_every_executable():
    for name in NODES:
        r = subprocess.run([sys.executable, "-m", f"pkm_control.nodes.{name}", "--help"], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        assert "Subscribes" in r.stdout or "Publishes" in r.stdout
        assert "controller_config" in r.stdout and "/diagnostics" in r.stdout


# ----------------------------------------------------------------------------- every robot, services

# a short motion of each robot's own: 1 cm (and 0.02 rad where it rotates) from home in 0.1 s
MOTIONS = {"stewart": [0.01, 0.0, 1.2, 0.0, 0.0, 0.02], "palida": [0.01, 0.0, -0.85, 0.0, 0.0, 0.02],
           "lopes": [0.01, 0.0, 2.0, 0.0, 0.0, 0.02], "delta": [0.01, 0.0, -0.29],
           "planar_redundant": [0.61, 2.75, 0.02]}


@pytest.mark.parametrize("robot", sorted(MOTIONS))
def test_every_robot_runs_the_graph(ros, robot):
    """PD + computed-force feedforward (rigid + friction) through all five nodes on each robot:
    the platform ends at the goal (the plant's ground truth) and tracks the reference closely."""
    kin = robot_kinematics(robot)
    goal = f"{{type: point_to_point, goal: {MOTIONS[robot]}, duration: 0.1, profile: quintic}}"

    def p(sim_time=True, **kw):
        return [Parameter("robot", value=robot), Parameter("controller", value="pd_feedforward"),
                Parameter("lockstep_timeout", value=5.0)] + \
            ([Parameter("use_sim_time", value=True)] if sim_time else []) + \
            [Parameter(k, value=v) for k, v in kw.items()]
    hw, ctl, ik, cf, gen = add(ros, HardwareNode(parameter_overrides=p(False)), JointControllerNode(parameter_overrides=p()),
                               InverseKinematicsNode(parameter_overrides=p()), ComputedForceNode(parameter_overrides=p()),
                               TrajectoryGeneratorNode(parameter_overrides=p(goal=goal)))
    act = kin.model.actuated_idx
    err = []

    def record():
        ref = ctl.refs.at(hw.sim_time_ns)
        if ref is not None:
            err.append(np.abs(hw.plant.read().position[act] - ref[:len(act)]).max())
        return hw.k >= 500 and gen.active is None
    assert spin_until(ros, record, 40), f"{robot}: {hw.k} steps"
    end = kin.task.coordinates(hw.plant.read().platform_pose)
    goal_x = np.array(MOTIONS[robot])
    assert np.abs(end - goal_x).max() < 2e-4, (end, goal_x)
    assert max(err) < 2e-4, max(err)         # single-joint PD alone: 3e-4 .. 2e-3 (m, rad) here
    assert all(n.diag.rejected == 0 for n in (hw, ctl, ik, cf, gen))
    assert ctl.diag.safe_behaviour == "none" and not hw.plant.safe_active


def _call(ros, client, timeout=5.0):
    from std_srvs.srv import Trigger

    assert client.wait_for_service(timeout_sec=timeout)
    fut = client.call_async(Trigger.Request())
    assert spin_until(ros, fut.done, timeout)
    return fut.result()


def test_computed_force_reload_parameters(ros, tmp_path):
    """~/reload_parameters: an inertia scale of 2 doubles the rigid-body forces at rest (pure gravity);
    a bad file is refused and the previous model kept."""
    from std_srvs.srv import Trigger

    from pkm_control.nodes.common import platform_trajectory_msg

    cf, = add(ros, ComputedForceNode(parameter_overrides=params(model="rigid")))
    spy = Spy(ros)
    pub = spy.node.create_publisher(MultiDOFJointTrajectory, "/platform_trajectory", 10)
    client = spy.node.create_client(Trigger, "/computed_force/reload_parameters")
    z = np.zeros(6)

    def ff():
        n0 = spy.count["/feedforward"]
        times = np.array([0, DT_NS], np.int64)
        msg = platform_trajectory_msg(0, "base_link", times, [HOME, HOME], [z, z], [z, z], KIN.task)
        assert spin_until(ros, lambda: pub.get_subscription_count() > 0, 5)
        pub.publish(msg)
        assert spin_until(ros, lambda: spy.count["/feedforward"] > n0, 5)
        return np.array(spy.last["/feedforward"].points[0].effort)
    tau1 = ff()
    assert np.allclose(tau1, cf.ff.gravity(HOME), rtol=1e-12)
    good = tmp_path / "scaled.yaml"
    friction = KIN.model.config["friction"]
    good.write_text(yaml_dump({"robot": "palida", "inertia_scale": 2.0, "friction": friction}))
    cf.set_parameters([Parameter("parameters_file", value=str(good))])
    assert _call(ros, client).success
    tau2 = ff()
    assert np.allclose(tau2, 2 * tau1, rtol=1e-9, atol=1e-9)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml_dump({"robot": "palida", "inertia_scale": -1.0, "friction": friction}))
    cf.set_parameters([Parameter("parameters_file", value=str(bad))])
    r = _call(ros, client)
    assert not r.success and "kept the previous model" in r.message
    assert np.allclose(ff(), tau2, rtol=1e-12)


def yaml_dump(data):
    import yaml
    from collections.abc import Mapping

    def plain(x):
        if isinstance(x, Mapping):
            return {k: plain(v) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [plain(v) for v in x]
        return x
    return yaml.safe_dump(plain(data))


def test_generator_start_stop_services(ros):
    """auto_start false: a goal waits for ~/start; ~/stop holds the desired pose where it stopped."""
    from std_srvs.srv import Trigger

    gen, = add(ros, TrajectoryGeneratorNode(parameter_overrides=params(auto_start=False)))
    spy = Spy(ros)
    clock = spy.node.create_publisher(Clock, "/clock", 10)
    goal = spy.node.create_publisher(String, "/trajectory_generator/goal", 10)
    start = spy.node.create_client(Trigger, "/trajectory_generator/start")
    stop = spy.node.create_client(Trigger, "/trajectory_generator/stop")
    assert spin_until(ros, lambda: clock.get_subscription_count() > 0 and goal.get_subscription_count() > 0, 5)

    def tick(t_ns):
        clock.publish(Clock(clock=Time(sec=t_ns // 10**9, nanosec=t_ns % 10**9)))
        spin_until(ros, lambda: gen.now_ns == t_ns, 5)
    tick(0)
    assert spy.count["/platform_trajectory"] == 0 or True
    goal.publish(String(data="{type: point_to_point, goal: [0.05, 0, -0.85, 0, 0, 0], duration: 1.0}"))
    assert spin_until(ros, lambda: gen.loaded is not None, 5)
    assert gen.active is None
    assert _call(ros, start).success
    t0 = gen.active[1]
    assert t0 == 10_000_000                     # the first grid time after now + start_delay (10 ms)
    tick(500_000_000)                           # half way (quintic: s(0.5) = 0.5)
    r = _call(ros, stop)
    assert r.success and gen.active is None
    t_stop = 510_000_000
    s = (t_stop - t0) * 1e-9                    # the hold is the desired pose at the stop time
    quintic = 10 * s**3 - 15 * s**4 + 6 * s**5
    assert gen.hold.position[0] == pytest.approx(0.05 * quintic, abs=1e-12)
    tick(600_000_000)
    assert spin_until(ros, lambda: spy.count["/platform_trajectory"] > 0, 5)
    P, R, V, A = gen.sample(np.array([t_stop, 600_000_000]))
    assert np.allclose(P, gen.hold.position) and not V.any() and not A.any()
    assert not _call(ros, start).success        # nothing loaded any more
    assert not spy.nonfinite


def test_benchmark_circle_from_its_start_pose(ros):
    """initial_pose on every node: the hardware starts ON the benchmark circle, the generator puts
    no approach in front, and the goal's trajectory starts at start_delay (announced in diagnostics)."""
    from pkm_control.trajectory import trajectory_from_spec

    spec = {"type": "benchmark_circle", "radius": 0.1, "speed": 1.0, "laps": 1, "ramp_time": 0.2}
    start = KIN.task.coordinates(trajectory_from_spec(KIN, spec).start_pose).tolist()
    goal = str(spec).replace("'", "")
    kw = dict(controller="cf_rb_friction", initial_pose=start)
    hw, ctl, ik, cf, gen = add(ros, HardwareNode(parameter_overrides=params(sim_time=False, **kw)),
                               JointControllerNode(parameter_overrides=params(**kw)),
                               InverseKinematicsNode(parameter_overrides=params(**kw)),
                               ComputedForceNode(parameter_overrides=params(**kw)),
                               TrajectoryGeneratorNode(parameter_overrides=params(goal=goal, **kw)))
    p0 = hw.plant.read().platform_pose
    assert np.allclose(KIN.task.coordinates(p0), start, atol=1e-12)
    assert gen.approach == 0.0
    assert spin_until(ros, lambda: hw.k >= 300, 20)
    assert gen.diag.extra["goal_start"] == gen.diag.extra["motion_start"] == "0.010000"
    # the platform follows the circle: compare with the trajectory sampled independently at 0.14 s
    t = hw.sim_time_ns * 1e-9
    want = trajectory_from_spec(KIN, spec).sample(t - 0.01)[0].position
    assert np.linalg.norm(hw.plant.read().platform_pose.position - want) < 5e-4
    assert all(n.diag.rejected == 0 for n in (hw, ctl, ik, cf, gen))


def test_real_time_mode(ros):
    """lockstep:=false: a wall timer steps the plant, the controller uses the newest reference; when the
    controller goes away the plant's command timeout engages the safe behaviour."""
    kw = dict(lockstep=False, command_timeout=0.005)      # 2 kHz: the rate the gains are made for
    hw, ctl = add(ros, HardwareNode(parameter_overrides=params(sim_time=False, **kw)),
                  JointControllerNode(parameter_overrides=params(**kw)))
    spy = Spy(ros)
    pub = spy.node.create_publisher(JointTrajectory, "/joint_references", 10)
    spin_until(ros, lambda: pub.get_subscription_count() > 0, 5)
    pub.publish(hold_reference())
    assert spin_until(ros, lambda: ctl.diag.steps > 100, 15)
    assert not hw.plant.safe_active and ctl.diag.safe_behaviour == "none"
    assert np.abs(hw.plant.read().position[KIN.model.actuated_idx] - QA_HOME).max() < 2e-4
    ros.remove_node(ctl)
    ctl.destroy_node()
    assert spin_until(ros, lambda: hw.plant.mode == "hold", 5)
    k = hw.k
    assert spin_until(ros, lambda: hw.k > k + 50, 10)          # the timer keeps stepping, holding
    assert hw.plant.mode == "hold" and hw.diag.safe_behaviour == "hold"
    assert abs(hw.plant.read().platform_pose.position[2] - HOME.position[2]) < 1e-3
    assert not spy.nonfinite
