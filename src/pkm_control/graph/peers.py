"""Peers that attack a running graph, and the judgement of what the robot did (issue 22 §6): the class ``peers`` of
`pkm fuzz` and the tests (test_nodes.py).

A run is the whole graph in this process, lockstep (deterministic): trajectory_generator, inverse_kinematics,
computed_force and joint_controller on palida with cf_rb_friction (with ``hardware: topics`` the robot in the
``hardware`` node), one goal (GOAL). An attack (``Attack``) starts once the run is ``START`` periods in and goes on
to its end:

  second_generator   a second trajectory_generator (the same name) streams another goal
  second_controller  a second joint_controller (the same name) with a simulated robot of its own: /clock from 0,
                     /joint_states of its robot
  clock              a foreign /clock: the times of ``values`` (0, 2^31 - 1 s, random), one every ``every`` periods
  past_chunk         a reference chunk stamped ``every`` periods in the past, AHEAD periods beyond now, 5 mm off,
                     published through inverse_kinematics' own writer (the publisher the loop trusts: only the rule
                     on used samples stops it)
  replay             the graph's own traffic (its streams and /clock), recorded from the start, played back by a
                     foreign node, ``every`` messages per period
  future_stamps      hardware topics: /joint_states of the robot's joints stamped in the future (``values``, s
                     ahead) or 0 by a foreign node

``judge`` applies the pass criterion of issue 22 §6 against the run without the attack: the robot's tracking
error (ground truth against the references of the run without the attack, at the same instants) within twice
that run's own, no safe-behaviour entry (no attack here should cause one), and nothing lost: every period run, no
deadline miss, the goal finished.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

ROBOT, CONTROLLER = "palida", "cf_rb_friction"
GOAL = "{type: point_to_point, goal: [0.01, 0.0, -0.85, 0.0, 0.0, 0.0], duration: 0.2}"
#: the second generator's goal: 3 cm elsewhere, fast
OTHER_GOAL = "{type: point_to_point, goal: [0.0, 0.03, -0.83, 0.0, 0.0, 0.0], duration: 0.1}"
PERIODS = 700                # lockstep periods of a run (0.35 s at 2 kHz: the goal, its approach delay and a hold)
START = 100                  # the period at which the attack starts
#: periods a past chunk reaches beyond now: more than the generator's lookahead (100), so the loop cannot have run
#: past it before it arrives
AHEAD = 200
WAIT = 300.0                 # s (wall): the longest a run may take before it counts as stalled (a loaded machine)
ATTACKS = ("second_generator", "second_controller", "clock", "past_chunk", "replay", "future_stamps")


@dataclass(frozen=True)
class Attack:
    """One attack (module docstring): ``kind`` of ATTACKS, ``values`` its numbers (clock: ns; future_stamps: s
    ahead), ``every`` its pace (periods between two messages; replay: messages per period)."""

    kind: str
    values: tuple = ()
    every: int = 20


@dataclass(frozen=True)
class Run:
    """What the robot did in one run: ``truth`` and ``references`` {instant ns: actuated positions}."""

    periods: int
    truth: dict
    references: dict
    safe_entries: int
    saturations: int
    deadline_misses: int
    refused: int                  # messages the graph's nodes refused (rejected inputs, all nodes)
    finished: bool
    errors: tuple = ()            # the ERRORs of the graph's nodes' diagnostics at the end (a second node of a name)
    #: what the graph believed, for a failure's message: each node's bound publisher per topic and its refusals
    #: (ros/peers.Sources), the generator's goal events, the node names in the domain at the end
    evidence: tuple = ()

    def tracking_error(self, references=None) -> float:
        """max |truth - reference| over the actuated joints and the common instants (the run's own references, or
        ``references`` of another run)."""
        refs = self.references if references is None else references
        common = sorted(self.truth.keys() & refs.keys())
        if not common:
            return float("inf")
        return float(max(np.abs(self.truth[t] - refs[t]).max() for t in common))


def judge(run: Run, baseline: Run, periods: int = PERIODS) -> str | None:
    """The pass criterion (module docstring): None, or what failed."""
    problems = []
    if run.periods < periods:
        problems.append(f"stalled after {run.periods} of {periods} periods")
    if not run.finished:
        problems.append("the goal did not finish")
    if run.deadline_misses:
        problems.append(f"{run.deadline_misses} deadline misses")
    if run.safe_entries:
        problems.append(f"{run.safe_entries} safe-behaviour entries")
    error, allowed = run.tracking_error(baseline.references), 2 * baseline.tracking_error()
    if not error <= allowed:
        problems.append(f"tracking error {error * 1e3:.4g} mm > 2 x {allowed / 2 * 1e3:.4g} mm without the attack")
    return "; ".join(problems) or None


def check_ros() -> None:
    """ImportError where ROS 2 (rclpy, the message packages) is not installed."""
    import rclpy  # noqa: F401
    import rosgraph_msgs.msg  # noqa: F401
    import trajectory_msgs.msg  # noqa: F401


def _params(**kw):
    from rclpy.parameter import Parameter

    kw.setdefault("lockstep_timeout", WAIT)
    return [Parameter(k, value=v) for k, v in {"robot": ROBOT, "controller": CONTROLLER, **kw}.items()]


def _graph(context, hardware: str):
    from ..hardware.plugin import hardware_plugin
    from ..nodes.computed_force import ComputedForceNode
    from ..nodes.hardware import HardwareNode
    from ..nodes.inverse_kinematics import InverseKinematicsNode
    from ..nodes.joint_controller import JointControllerNode
    from ..nodes.trajectory_generator import TrajectoryGeneratorNode

    kind = hardware_plugin(hardware)
    nodes = [TrajectoryGeneratorNode(context=context, parameter_overrides=_params(goal=GOAL)),
             InverseKinematicsNode(context=context, parameter_overrides=_params(hardware=hardware)),
             ComputedForceNode(context=context, parameter_overrides=_params()),
             JointControllerNode(context=context, parameter_overrides=_params(hardware=hardware))]
    if kind.runs_hardware_node():          # the robot is the hardware node, the graph's clock source
        nodes.append(HardwareNode(context=context, parameter_overrides=_params(publish_clock=True)))
    return nodes


class _Attacker:
    """The attack's own node(s) in the run's context (module docstring)."""

    def __init__(self, attack: Attack, context, nodes, dt_ns: int):
        import rclpy
        from rosgraph_msgs.msg import Clock
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory, MultiDOFJointTrajectory

        from ..nodes.joint_controller import JointControllerNode
        from ..nodes.trajectory_generator import TrajectoryGeneratorNode
        from ..ros.qos import qos

        self.attack, self.nodes, self.dt_ns = attack, nodes, dt_ns
        self.node = rclpy.create_node("peer_attacker", context=context)
        self.extra = []              # nodes of the graph's names the attack starts
        self.sent = 0
        self._last = None            # the period of the last message
        self.recorded = []           # replay: (publisher, message) in the order received
        kind = attack.kind
        if kind == "second_generator":
            self.extra.append(TrajectoryGeneratorNode(context=context, parameter_overrides=_params(goal=OTHER_GOAL)))
        elif kind == "second_controller":
            self.extra.append(JointControllerNode(context=context, parameter_overrides=_params()))
        elif kind == "clock":
            self.pub = self.node.create_publisher(Clock, "/clock", qos("/clock", "pub"))
        elif kind == "future_stamps":
            self.pub = self.node.create_publisher(JointState, "/joint_states", qos("/joint_states", "pub"))
        elif kind == "replay":
            for topic, cls in (("/platform_trajectory", MultiDOFJointTrajectory), ("/clock", Clock),
                               ("/joint_references", JointTrajectory), ("/feedforward", JointTrajectory)):
                pub = self.node.create_publisher(cls, topic, qos("/clock" if topic == "/clock" else topic, "pub"))
                self.node.create_subscription(cls, topic, lambda m, p=pub: self.recorded.append((p, m)),
                                              qos(topic, "sub"))

    def step(self, k: int) -> None:
        """The attack's messages due at period k."""
        a = self.attack
        if k < START or a.kind in ("second_generator", "second_controller") or k == self._last:
            return
        if a.kind == "replay":
            for _ in range(a.every):
                if self.sent < len(self.recorded):
                    pub, msg = self.recorded[self.sent]
                    pub.publish(msg)
                    self.sent += 1
            self._last = k
            return
        if self._last is not None and k - self._last < a.every:
            return
        self._last = k
        getattr(self, "_" + a.kind)(k)
        self.sent += 1

    def _clock(self, k):
        from rosgraph_msgs.msg import Clock

        from ..ros.messages import stamp_msg

        values = self.attack.values or (0,)
        self.pub.publish(Clock(clock=stamp_msg(int(values[self.sent % len(values)]))))

    def _future_stamps(self, k):
        from ..ros.messages import joint_state_msg

        hw = self.nodes[-1]
        values = self.attack.values or (1000.0, 0.0)
        ahead = float(values[self.sent % len(values)])
        stamp = 0 if ahead == 0 else k * self.dt_ns + int(ahead * 1e9)
        meas = hw.plant.read()
        self.pub.publish(joint_state_msg(stamp, hw.ctx.actuated_joints, meas.position + 0.005, meas.velocity,
                                         meas.effort))

    def _past_chunk(self, k):
        """Through inverse_kinematics' own writer (the trusted publisher): from ``every`` periods ago to AHEAD periods
        ahead, 5 mm off the references it stamps over."""
        from ..ros.messages import joint_trajectory_msg

        ik, ctl = self.nodes[1], self.nodes[3]
        t0 = max(0, k - self.attack.every) * self.dt_ns
        n = (k - t0 // self.dt_ns) + AHEAD
        times = t0 + self.dt_ns * np.arange(n, dtype=np.int64)
        q = np.tile(ctl.loop.references.rows[-1][:len(ik.act)] + 0.005, (n, 1))
        ik.pub_ref.publish(joint_trajectory_msg(int(t0), ik.ctx.actuated_joints, times, q, np.zeros_like(q),
                                                np.zeros_like(q)))

    def destroy(self):
        for n in [*self.extra, self.node]:
            n.destroy_node()


def run(attack: Attack | None, domain: int, hardware: str = "sim", periods: int = PERIODS) -> Run:
    """One run of the graph in this process on ROS domain ``domain``, under ``attack`` (None: without one)."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    context = Context()
    rclpy.init(context=context, domain_id=int(domain))
    ex = SingleThreadedExecutor(context=context)
    nodes, attacker = [], None
    try:
        nodes = _graph(context, hardware)
        gen, ctl = nodes[0], nodes[3]
        clock_node = nodes[-1]               # the one whose k counts the periods (the robot's)
        for n in nodes:
            ex.add_node(n)
        truth, references = {}, {}
        robot = (lambda: clock_node.plant.ground_truth()) if clock_node is not ctl else ctl.loop.hardware.ground_truth
        act = ctl.ctx.model.actuated_idx
        period = ctl.period

        def traced(t_ns):
            ref = ctl.loop.references.at(t_ns)
            if ref is not None:
                references[t_ns] = np.array(ref[:len(act)])
                truth[t_ns] = np.array(robot().position[act])
            period(t_ns)
        ctl.period = traced
        events = []                          # the generator's goal events: (state, fields)
        status = gen.status
        gen.status = lambda state, **kw: (events.append((state, kw)), status(state, **kw))
        end = time.monotonic() + WAIT
        while clock_node.k < periods and time.monotonic() < end:
            if attack is not None and attacker is None and (attack.kind == "replay" or clock_node.k >= START):
                attacker = _Attacker(attack, context, nodes, ctl.dt_ns)
                for n in [*attacker.extra, attacker.node]:
                    ex.add_node(n)
            if attacker is not None:
                attacker.step(clock_node.k)
            ex.spin_once(timeout_sec=0.01)
        c = ctl.loop.controller
        for n in nodes:
            n.sources.refresh()
        evidence = (*(f"{n.get_name()} {topic}: {b.summary()}" for n in nodes
                      for topic, b in n.sources.bindings.items()),
                    f"goal events: {events}", f"nodes in the domain: {sorted(gen.get_node_names())}")
        return Run(min(clock_node.k, periods), truth, references, c.safe_entries, c.saturations,
                   sum(n.diag.deadline_misses for n in nodes), sum(n.diag.rejected for n in nodes),
                   any(state == "finished" for state, _ in events),
                   tuple(e for n in nodes for e in n.diag.errors.values()), evidence)
    finally:
        if attacker is not None:
            attacker.destroy()
        for n in nodes:
            n.destroy_node()
        ex.shutdown()
        rclpy.shutdown(context=context)
