"""`pkm demo`: the PaLiDA computed-force benchmark through the whole node graph.

For each run (SJ, CF rb, CF rb+frict; Abdellatif sec. V) it starts the five nodes with
`pkm bringup` (separate processes, lockstep on /clock, the simulated palida with friction in
every joint), starts the hardware on the benchmark circle (initial_pose, so no approach move),
records /joint_states and /feedforward with a recorder node in this process until the circle
is done, and stops the graph. The metrics, timing and report are ROS-free
(pkm_control.benchmark).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from .. import benchmark as bm
from ..kinematics import robot_kinematics
from ..trajectory import trajectory_from_spec
from .common import load_settings

ROBOT = "palida"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pkm demo", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(p)
    return p


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", default="results", help="output folder (default results/)")
    p.add_argument("--radius", type=float, default=0.15, help="circle radius in m (default 0.15)")
    p.add_argument("--laps", type=float, default=1.0, help="laps at 1 m/s (default 1)")
    p.add_argument("--ramp-time", type=float, default=0.4, help="speed ramp up/down in s (default 0.4)")
    p.add_argument("--runs", nargs="+", default=[c for _, c in bm.RUNS],
                   help="controllers to run (default: pd cf_rb cf_rb_friction)")
    p.add_argument("--timeout", type=float, default=600.0, help="wall-clock limit per run in s")
    p.add_argument("--domain-id", type=int, default=None, help="ROS_DOMAIN_ID (default: a free one from the pid)")
    p.add_argument("--quiet", action="store_true", help="no progress bar, no node output")


class _Recorder:
    """Collects /joint_states and /feedforward (this process's only rclpy node)."""

    def __init__(self, node, kin):
        from sensor_msgs.msg import JointState
        from trajectory_msgs.msg import JointTrajectory
        from rclpy.qos import QoSProfile, ReliabilityPolicy

        qos = QoSProfile(depth=10000, reliability=ReliabilityPolicy.RELIABLE)
        self.kin = kin
        self.act = list(kin.model.actuated_joints)
        self.plat = list(kin.model.platform_joints)
        self.states, self.ff = [], {}
        node.create_subscription(JointState, "/joint_states", self._state, qos)
        node.create_subscription(JointTrajectory, "/feedforward", self._feedforward, qos)

    def _state(self, msg):
        idx = {n: i for i, n in enumerate(msg.name)}
        t = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        self.states.append((t, [msg.position[idx[n]] for n in self.act], [msg.effort[idx[n]] for n in self.act],
                            [msg.position[idx[n]] for n in self.plat]))

    def _feedforward(self, msg):
        t0 = msg.header.stamp.sec + 1e-9 * msg.header.stamp.nanosec
        order = [list(msg.joint_names).index(n) for n in self.act]
        for pt in msg.points:       # a later chunk replaces the overlapping samples of an earlier one
            t = round(t0 + pt.time_from_start.sec + 1e-9 * pt.time_from_start.nanosec, 9)
            self.ff[t] = [pt.effort[k] for k in order]

    @property
    def sim_time(self) -> float:
        return self.states[-1][0] if self.states else 0.0

    def record(self, name, controller) -> bm.RunRecord:
        t = np.array([s[0] for s in self.states])
        ff_t = np.array(sorted(self.ff))
        return bm.RunRecord(name, controller, t, np.array([s[1] for s in self.states]),
                            np.array([s[2] for s in self.states]), np.array([s[3] for s in self.states]),
                            ff_t, np.array([self.ff[k] for k in ff_t]) if len(ff_t) else np.zeros((0, 0)))


def run_one(name, controller, spec, start, t_end, args, env):
    import rclpy
    from rclpy.executors import SingleThreadedExecutor

    kin = robot_kinematics(ROBOT)
    goal = json.dumps(spec)
    cmd = [sys.executable, "-m", "pkm_control.cli", "bringup", "--robot", ROBOT, "--controller", controller,
           "--goal", goal, "--set", f"initial_pose={json.dumps(start)}"]
    ctx = rclpy.Context()
    rclpy.init(context=ctx)
    node = rclpy.create_node("pkm_benchmark_recorder", context=ctx)
    rec = _Recorder(node, kin)
    ex = SingleThreadedExecutor(context=ctx)
    ex.add_node(node)
    out = subprocess.DEVNULL if args.quiet else None
    proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=out, start_new_session=True)
    bar = None
    if not args.quiet:
        from tqdm import tqdm
        bar = tqdm(total=round(t_end, 3), desc=f"{name:12s}", unit="s sim", file=sys.stderr,
                   bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s sim [{elapsed}]")
    t_wall = time.monotonic()
    try:
        while rec.sim_time < t_end:
            ex.spin_once(timeout_sec=0.05)
            if bar is not None:
                bar.n = round(min(rec.sim_time, t_end), 3)
                bar.refresh()
            if proc.poll() is not None:
                raise RuntimeError(f"the node graph of run '{name}' exited early (status {proc.returncode})")
            if time.monotonic() - t_wall > args.timeout:
                raise RuntimeError(f"run '{name}' did not finish in {args.timeout:.0f} s wall "
                                   f"(sim time {rec.sim_time:.3f} of {t_end:.3f} s)")
        for _ in range(20):                     # the last /feedforward chunk is already out; drain
            ex.spin_once(timeout_sec=0.01)
    finally:
        if bar is not None:
            bar.close()
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        ex.shutdown()
        node.destroy_node()
        rclpy.shutdown(context=ctx)
    return rec.record(name, controller), time.monotonic() - t_wall


def run(args) -> dict:
    kin = robot_kinematics(ROBOT)
    spec = bm.benchmark_spec(args.radius, args.laps, args.ramp_time)
    traj = trajectory_from_spec(kin, spec)
    start = kin.task.coordinates(traj.start_pose).tolist()
    names = dict((c, n) for n, c in bm.RUNS)
    env = dict(os.environ, ROS_DOMAIN_ID=str(args.domain_id if args.domain_id is not None else 100 + os.getpid() % 100),
               PYTHONUNBUFFERED="1")
    os.environ["ROS_DOMAIN_ID"] = env["ROS_DOMAIN_ID"]
    records, metrics, settings = [], [], []
    t0 = None
    for controller in args.runs:
        settings.append(load_settings(ROBOT, controller))
        t0 = float(settings[-1]["start_delay"])     # the goal starts start_delay after sim time 0
        rec, wall = run_one(names.get(controller, controller), controller, spec, start, t0 + traj.duration, args, env)
        m = bm.run_metrics(kin, traj, rec, t0)
        m["wall_s"] = wall
        records.append(rec)
        metrics.append(m)
    # timed once every node process is gone, so they do not share the cores with the measurement
    for m, st in zip(metrics, settings):
        m["cycle"] = bm.cycle_timing(ROBOT, st, traj)
    baseline = metrics[0]["name"]
    bm.add_improvement(metrics, baseline)
    table = bm.print_table(metrics, kin.model.actuated_joints)
    extra = {"trajectory": spec, "duration_s": traj.duration, "t0": t0, "control_period_s": 0.0005,
             "paper_cycle_us": bm.PAPER_CYCLE_US, "target_cycle_us": bm.TARGET_CYCLE_US,
             "improvement_baseline": baseline}
    for m in metrics:
        m["control_cycle_median_us"] = m["cycle"]["median_us"]
        m["control_cycle_p99_us"] = m["cycle"]["p99_us"]
    summary = bm.write_results(Path(args.out), ROBOT, kin.model.actuated_joints, records, metrics, extra)
    print(table)
    print(f"\ncircle: radius {args.radius} m, plane inclined 30 deg to the x-axis, 1 m/s for {args.laps:g} lap(s), "
          f"speed ramps {args.ramp_time} s; {traj.duration:.3f} s at 0.5 ms steps, lockstep through the 5 nodes")
    print("x SJ: RMS actuator error of SJ / of the run. Control cycle (trajectory sample + IK + model + law, "
          f"on the core): paper {bm.PAPER_CYCLE_US:.0f} us at 0.5 ms; target median <= "
          f"{bm.TARGET_CYCLE_US['median']:.0f} us, p99 <= {bm.TARGET_CYCLE_US['p99']:.0f} us")
    print(f"results in {args.out}/: palida_benchmark.json, palida_benchmark_errors.png (Fig. 6), "
          "palida_benchmark_forces.png (Fig. 5), CSV per run")
    return summary


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    run(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
