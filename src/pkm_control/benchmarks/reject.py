"""``pkm bench reject``: what a malformed message costs its consumer, against a valid one.

For each input of joint_controller (/joint_references, /feedforward, /joint_states behind topics),
the junk of the flood test (a NaN, a wrong size, a wrong name, a stale stamp) goes through the
node boundary as a callback of the node does: the message parse, the rejection in ``guarded`` and
``Diagnostics.reject`` (counted; logged at most once per second per kind). The baseline, measured
alongside, is the parse of a valid message of the same topic. The last figures are the consumer's
whole path for junk chunks of 1 and of 100 points in one process (a private topic on a domain of
its own): take from the queue, deserialize, reject, with the executor the nodes use
(SingleThreadedExecutor) beside rclpy's EventsExecutor; they bound the flood rate a consumer keeps
up with.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .report import Column, Provenance, Table, document, print_json

N = 20_000                   # messages per figure
BENCH_DOMAIN = 231           # a ROS domain of its own: the junk stays out of a running graph


def _per_message_us(fn, msgs, n=N):
    t0 = time.perf_counter()
    for i in range(n):
        fn(msgs[i % len(msgs)])
    return (time.perf_counter() - t0) / n * 1e6


def bench_reject(robot: str = "palida", as_json: bool = False) -> dict:
    import rclpy
    from builtin_interfaces.msg import Duration, Time
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.experimental import EventsExecutor
    from rclpy.signals import SignalHandlerOptions
    from sensor_msgs.msg import JointState
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    from ..kinematics import robot_kinematics
    from ..ros.hardware_io import TopicConvention, TopicHardware
    from ..ros.messages import parse_joint_trajectory
    from ..ros.qos import qos
    from ..ros.runtime import Diagnostics, guarded

    kin = robot_kinematics(robot)
    act = list(kin.model.actuated_joints)
    n = len(act)
    ctx = rclpy.Context()
    rclpy.init(context=ctx, domain_id=BENCH_DOMAIN, signal_handler_options=SignalHandlerOptions.NO)
    node = rclpy.create_node("pkm_bench_reject", context=ctx)
    diag = Diagnostics(node)

    def trajectory(values, names=act, points=100):     # 100: a 50 ms chunk at 2 kHz
        msg = JointTrajectory(joint_names=list(names))
        for k in range(points):
            pt = JointTrajectoryPoint(positions=list(values), velocities=[0.0] * n, accelerations=[0.0] * n)
            pt.time_from_start = Duration(nanosec=k * 500_000)
            msg.points.append(pt)
        return msg

    q = kin.inverse(kin.home_pose()).q

    def state(stamp_ns, names=kin.model.joint_names, position=q):
        msg = JointState(name=list(names), position=list(map(float, position)), velocity=[0.0] * len(names))
        msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
        return msg

    fields = ("positions", "velocities", "accelerations")
    qa = list(map(float, q[kin.model.actuated_idx]))
    references = {"valid": [trajectory(qa)],
                  "junk": [trajectory([math.nan] + qa[1:]), trajectory(qa[:-1]), trajectory(qa, ["x"] + act[1:])]}
    hw = TopicHardware(node, kin.model, TopicConvention("forward_command", "/pkm_bench_reject/joint_states",
                                                        "/pkm_bench_reject/commands"), diag)
    hw.measurement_ns = 10**12
    states = {"valid": [state(10**12 + k) for k in range(1, N + 1)],
              "junk": [state(1), state(5, names=list(kin.model.joint_names)[:-1], position=q[:-1]),
                       state(10**13, position=np.where(np.arange(len(q)) == kin.model.actuated_idx[0], np.nan, q))]}
    ref_cb = guarded(diag, "joint_references")(lambda m: parse_joint_trajectory(m, act, fields))
    state_cb = guarded(diag, "joint_states")(hw._on_state)
    out = {"robot": robot, "messages": N, "joint_references_valid_us": _per_message_us(ref_cb, references["valid"]),
           "joint_references_junk_us": _per_message_us(ref_cb, references["junk"])}
    out["joint_states_valid_us"] = _per_message_us(state_cb, states["valid"])
    hw.measurement_ns = 10**12
    out["joint_states_junk_us"] = _per_message_us(state_cb, states["junk"])

    # the consumer's whole path in one process: take, deserialize, reject (bursts of 500 published first)
    got = [0]

    def counted(msg):
        got[0] += 1
        ref_cb(msg)
    topic = "/pkm_bench_reject/joint_references"
    pub = node.create_publisher(JointTrajectory, topic, qos("/joint_references", "pub"))
    node.create_subscription(JointTrajectory, topic, counted, qos("/joint_references", "sub"))
    for name, executor in (("single_threaded", SingleThreadedExecutor), ("events", EventsExecutor)):
        ex = executor(context=ctx)
        ex.add_node(node)
        for points, junk in ((1, trajectory(qa, ["x"] + act[1:], points=1)), (100, references["junk"][2])):
            spent = 0.0
            for _ in range(4):
                got[0] = 0
                for _ in range(500):
                    pub.publish(junk)
                t0 = time.perf_counter()
                while got[0] < 500:
                    ex.spin_once(timeout_sec=1.0)
                spent += time.perf_counter() - t0
            out[f"junk_{points}_points_taken_us_{name}"] = spent / 2000 * 1e6
        ex.remove_node(node)
        ex.shutdown()
    node.destroy_node()
    rclpy.shutdown(context=ctx)
    provenance = Provenance.now()
    if as_json:
        return print_json(out, provenance)
    executors = {"single_threaded": "SingleThreadedExecutor", "events": "EventsExecutor"}
    # the boundary figures to 0.01 us, the whole path's to 0.1 us
    rows = [(f"{topic}, parse + reject", f"{out[topic + '_junk_us']:.2f}", 1e6 / out[topic + "_junk_us"],
             f"{out[topic + '_valid_us']:.2f}") for topic in ("joint_references", "joint_states")]
    rows += [(f"joint_references {points} point{'s' * (points > 1)}, taken + deserialized + rejected, {label}",
              f"{out[f'junk_{points}_points_taken_us_{x}']:.1f}", 1e6 / out[f"junk_{points}_points_taken_us_{x}"],
              None) for x, label in executors.items() for points in (1, 100)]
    columns = (Column("path", align="<"), Column("junk", "us"), Column("junk", "/s", ".0f"),
               Column("valid (baseline)", "us"))
    print(Table(f"rejecting a malformed message at the node boundary ({N} messages each; the baseline is the parse "
                "of a valid one; the last rows: the consumer's whole path in one process)", robot, columns,
                tuple(rows)).text(provenance))
    return document(out, provenance)
