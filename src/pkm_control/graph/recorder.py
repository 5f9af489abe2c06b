"""Recording a run of the graph from outside it: an rclpy node in the caller's process.

``GraphRecorder`` subscribes what a run is judged by: the robot's joint states (the simulated
robot's ground truth when there is one, else the estimated joint states; with ``hardware: sim``
(or mujoco) joint_controller always publishes the ground truth, so only that is subscribed), the feedforward, the
trajectory generator's status (the goal's life cycle) and every node's /diagnostics. ``outcome``
turns a finished run into the summary of ``pkm bringup --exit-when-done`` and ``pkm demo``: the
tracking errors over the goal's own trajectory against the trajectory rebuilt from the goal's spec
(independent of the nodes that produced the commands; pkm_control.benchmarks.palida), the durations and
the real-time factor, safe-behaviour events and rejected inputs.

Its streams are bound to one publisher each, as the nodes' (ros/peers.Sources; ``sources``: topic=node pairs, '' =
the first publisher of each; `pkm bringup` names the graph's own): a peer's samples never enter the judgement, and its
refused messages are counted on /diagnostics (node pkm_graph_recorder: rejected_inputs, ``source <topic>`` with the
refused gids) and logged at most once a second. /diagnostics itself has a publisher per node and is not bound.
"""

from __future__ import annotations

import json
import time

import numpy as np

from ..description.loader import closure_residual
from ..errors import InvalidInputError
from ..identification.runs import RunRecord, last_of_each_instant, run_metrics
from ..hardware.plugin import hardware_plugin
from ..ros.topology import estimated_state_topic
from ..ros.topology import GROUND_TRUTH_TOPIC
from ..ros.messages import parse_joint_trajectory, to_ns
from ..ros.peers import Sources
from ..ros.qos import qos
from ..ros.runtime import Diagnostics, ServiceGuard
from .losses import stream_loss


class GraphRecorder:
    """Records one run (module docstring); ``spin_once`` processes the pending messages. With
    ``samples=False`` it follows only the status and the diagnostics (a benchmark that needs no samples). With
    ``subscribe_truth=False`` the ground truth comes from whoever holds its subscription, through ``on_truth``
    (`pkm bringup --record`: the bag recorder, whose subscription starts the lockstep run). ``in_process``:
    joint_controller steps the robot in its process, whose ground truth is then the only state recorded (None: as the
    hardware kind does with its default settings, HardwarePlugin.in_process)."""

    def __init__(self, kin, hardware: str = "sim", samples: bool = True, in_process: bool | None = None,
                 subscribe_truth: bool = True, sources: str = ""):
        import rclpy
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions
        from sensor_msgs.msg import JointState
        from std_msgs.msg import String
        from trajectory_msgs.msg import JointTrajectory

        self.kin = kin
        self.act = list(kin.model.actuated_joints)
        self.plat = list(kin.model.platform_joints)
        self.context = rclpy.Context()
        rclpy.init(context=self.context, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node("pkm_graph_recorder", context=self.context)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)
        self.diag = Diagnostics(self.node)
        self.sources = Sources(self.node, self.diag, sources, ServiceGuard(self.node, self.diag))
        # topic -> recorded chunks (t ns, actuated positions, actuated efforts, platform joints), arrays of samples
        if in_process is None:
            in_process = hardware_plugin(hardware).in_process({})
        topics = [GROUND_TRUTH_TOPIC] + ([] if in_process
                                         else [estimated_state_topic(hardware)])
        self.states = {topic: [] for topic in topics} if samples else {}
        self._selection = {}
        for topic in self.states:
            if topic == GROUND_TRUTH_TOPIC:
                if subscribe_truth:
                    self.sources.subscribe(JointTrajectory, topic, self.on_truth, qos(topic, "sub"), "ground truth")
            else:      # joint_controller's estimate, on /joint_states when it hosts a robot without a ground truth
                self.sources.subscribe(JointState, topic, lambda m, t=topic: self._state(t, m),   # (canopen)
                                       qos(estimated_state_topic("topics"), "sub:recorder"), "joint states")
        #: the sample streams it subscribes itself (``losses``; the ground truth of `pkm bringup --record` is the bag's)
        self.own = [t for t in self.states if subscribe_truth or t != GROUND_TRUTH_TOPIC]
        self.ff = {}
        if samples:
            self.sources.subscribe(JointTrajectory, "/feedforward", self._feedforward,
                                   qos("/feedforward", "sub:recorder"), "feedforward")
        self.status = {}
        self.statuses = []
        self.sources.subscribe(String, "/trajectory_generator/status", self._status,
                               qos("/trajectory_generator/status", "sub"), "status")
        self.diagnostics = {}
        self.heard = {}                  # node -> when its last /diagnostics came (time.monotonic(), s)
        self.drives = {}                 # CANopen drive -> its last status on /diagnostics (values and message)
        self.node.create_subscription(DiagnosticArray, "/diagnostics", self._diagnostics, qos("/diagnostics", "sub"))
        self.latest = {}                 # topic -> newest sample time (s)
        self.closure_error_max = None    # the largest closure residual of the ground truth (m), as pinocchio has it
        self._pin = kin.model.create_data()

    @property
    def sim_time(self) -> float:
        """The newest sample time of the recorded stream (the ground truth when there is one): a run is over
        only when that stream has reached its end, whatever the other topics have delivered."""
        for topic in self.states:
            if topic in self.latest:
                return self.latest[topic]
        return 0.0

    def close(self):
        import rclpy

        self.executor.shutdown()
        self.node.destroy_node()
        rclpy.shutdown(context=self.context)

    def spin_once(self, timeout: float = 0.05):
        self.executor.spin_once(timeout_sec=timeout)

    @property
    def taken(self) -> int:
        """Sample messages taken so far (ground truth chunks, joint states)."""
        return sum(len(chunks) for chunks in self.states.values())

    # ------------------------------------------------------------------ callbacks
    def _select(self, names):
        """(actuated, platform) column indices of a name order (computed once per order), or None when it
        lacks one of them."""
        sel = self._selection.get(names)
        if sel is None:
            idx = {n: i for i, n in enumerate(names)}
            if any(n not in idx for n in self.act + self.plat):
                return None
            sel = self._selection[names] = (np.array([idx[n] for n in self.act], np.intp),
                                            np.array([idx[n] for n in self.plat], np.intp))
        return sel

    def _add(self, topic, t_ns, pos, eff, sel):
        """Record samples: t_ns (m,) int, pos (m, joints), eff (m, joints) or None (no efforts: zeros)."""
        self.latest[topic] = max(self.latest.get(topic, 0.0), int(t_ns.max()) * 1e-9)
        act, plat = sel
        eff = np.zeros((len(t_ns), len(act))) if eff is None else eff[:, act]
        self.states[topic].append((t_ns, pos[:, act], eff, pos[:, plat]))

    def _state(self, topic, msg):
        """A JointState: one sample."""
        names = tuple(msg.name)
        sel = self._select(names)
        n = len(names)
        if sel is None or len(msg.position) != n or len(msg.effort) not in (0, n):
            return
        eff = np.array(msg.effort, float).reshape(1, n) if len(msg.effort) else None
        self._add(topic, np.array([to_ns(msg.header.stamp)], np.int64), np.array(msg.position, float).reshape(1, n),
                  eff, sel)

    def on_truth(self, msg):
        """A JointTrajectory chunk of the ground truth (every joint): one sample per point."""
        try:
            c = parse_joint_trajectory(msg, self.kin.model.joint_names, ("positions", "effort"))
        except InvalidInputError:
            return                  # malformed: not a sample of this robot
        joints = self.kin.model.joint_names        # the parsed columns are in this order
        worst = max(float(np.abs(closure_residual(self.kin.model, self._pin, q)).max()) for q in c.positions)
        self.closure_error_max = max(worst, self.closure_error_max or 0.0)
        self._add(GROUND_TRUTH_TOPIC, c.times_ns, c.positions, c.efforts, self._select(tuple(joints)))

    def _feedforward(self, msg):
        try:
            c = parse_joint_trajectory(msg, self.act, ("effort",))
        except InvalidInputError:
            return
        # a later chunk replaces the overlapping samples of an earlier one
        self.ff.update(zip(c.times_ns.tolist(), c.efforts))

    def _status(self, msg):
        try:
            st = json.loads(msg.data)
        except ValueError:
            return
        self.status = st
        self.statuses.append(st)

    def _diagnostics(self, msg):
        for st in msg.status:
            values = {kv.key: kv.value for kv in st.values}
            self.diagnostics[st.name.lstrip("/")] = values
            self.heard[st.name.lstrip("/")] = time.monotonic()
            if "cia402_state" in values:      # a drive's own status (hardware canopen): its last one, with the words
                self.drives[st.name.lstrip("/")] = dict(values, message=st.message)

    # ------------------------------------------------------------------ results
    @property
    def recorded_topic(self) -> str | None:
        """The topic ``record`` takes the run's samples from: the first of ``states`` with a sample (the ground truth
        where the robot is simulated, else the estimated joint states); None before any sample."""
        return next((topic for topic, chunks in self.states.items() if chunks), None)

    def record(self, name: str, controller: str) -> RunRecord:
        """The run's samples: ground truth where the robot is simulated, else the estimated joint states."""
        chunks = self.states[self.recorded_topic] if self.recorded_topic is not None else []
        ff_t = np.array(sorted(self.ff), dtype=np.int64)
        ff = (ff_t * 1e-9, np.array([self.ff[k] for k in ff_t]) if len(ff_t) else np.zeros((0, 0)))
        if not chunks:
            return RunRecord(name, controller, np.array([]), np.array([]), np.array([]), np.array([]), *ff)
        t_ns, pos, eff, plat = (np.concatenate(a) for a in zip(*chunks))
        keep = last_of_each_instant(t_ns)      # re-offers: once each, the last one of an instant; in time order
        return RunRecord(name, controller, t_ns[keep] * 1e-9, pos[keep], eff[keep], plat[keep], *ff)

    def losses(self, slots: dict, end: float | None = None, start: float | None = None) -> list:
        """graph.losses.StreamLoss of each sample stream it subscribes itself whose slot (ns) ``slots`` gives, from the
        run's ``start`` (s: the samples it measures the run by; None: from its first sample) to its ``end`` (s; None:
        to its last sample)."""
        start_ns, end_ns = (None if x is None else int(round(x * 1e9)) for x in (start, end))
        return [stream_loss("run recorder", topic, np.concatenate([c[0] for c in self.states[topic]] or [[]]),
                            slots[topic], end_ns, start_ns) for topic in self.own if topic in slots]

    def events(self) -> dict:
        """Safe-behaviour entries, rejected inputs and deadline misses reported by the nodes' diagnostics."""
        ctl = self.diagnostics.get("joint_controller", {})
        rejected = {n: int(d.get("rejected_inputs", 0)) for n, d in self.diagnostics.items()}
        return {"safe_behaviour_entries": int(ctl.get("safe_entries", 0)),
                "saturated_periods": int(ctl.get("saturations", 0)),
                "deadline_misses": int(ctl.get("deadline_misses", 0)),
                "rejected_inputs": sum(rejected.values()), "rejected_inputs_per_node": rejected,
                "cycle_median_us": _float(ctl.get("cycle_median_us")),
                "real_time_factor": _float(ctl.get("real_time_factor")),
                "plant_step_median_us": _float(ctl.get("plant_step_median_us")),
                "observations_dropped": _float(ctl.get("observations_dropped")),
                "bus_load": ctl.get("bus_load"), "drives": dict(self.drives) or None,
                "closure_error_max": self.closure_error_max, "plant": self.plant()}

    def plant(self) -> dict | None:
        """The simulated robot's parameters and measurement (nodes.hardware_io.describe_plant), None without one."""
        import json

        for node in ("joint_controller", "hardware"):
            text = self.diagnostics.get(node, {}).get("plant")
            if text:
                return json.loads(text)
        return None


def _float(value):
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def outcome(kin, spec: dict, initial, record: RunRecord, status: dict, slot: int) -> dict:
    """Tracking figures of the goal's own trajectory (from status goal_start to its end), and ``missing_samples``: the
    slots of the recorded stream (``slot`` ns, graph.losses) within it that have no sample.

    The trajectory is rebuilt from the spec as the generator builds it (start = the held initial pose
    unless the spec gives one), so the reference does not come from the graph.
    """
    from ..trajectory.spec import FIXED_START, trajectory_from_spec

    spec = dict(spec)
    if spec.get("start") is None and spec.get("type") not in FIXED_START:
        spec["start"] = kin.task.coordinates(initial).tolist()
    traj = trajectory_from_spec(kin, spec)
    try:
        m = run_metrics(kin, traj, record, float(status["goal_start"]))
    except InvalidInputError as exc:       # nothing recorded within the motion: said, not a traceback
        return {"tracking": str(exc)}
    out = {k: v for k, v in m.items() if not k.startswith("_")}
    # by the publisher's slots, not a grid of the median sample spacing from time 0: on the wall clock (a real-time
    # run) the samples have a phase of their own, and a slot's sample may come at any of its periods
    t0 = float(status["goal_start"])
    start_ns, end_ns = round(t0 * 1e9), round((t0 + traj.duration) * 1e9)
    t_ns = np.round(record.t * 1e9).astype(np.int64)
    out["missing_samples"] = stream_loss("run recorder", "", t_ns[t_ns // slot <= end_ns // slot], slot, end_ns,
                                         start_ns).missed
    out["_metrics"] = m
    return out
