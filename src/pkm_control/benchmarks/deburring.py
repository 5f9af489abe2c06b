"""`pkm demo --deburring`: PaLiDA keeps a constant normal force along an edge at speed (issue 24; Abdellatif et al.
sec. IV: PaLiDA was built for "machining tasks with low process forces, like deburring").

The part is config/environment.yaml's box of palida (k_e 1e6 N/m, c 1000 N s/m, mu 0.2); the edge deburred is the
top edge of its face towards the robot (the face x = x_face, normal -x), the tool tip DEPTH below the top. The robot
starts GAP short of the face, the edge's first end; direct force control (control/force.py DirectForce, Taghirad
Figs. 28, 34: force PI in the outer loop, task PD + gravity in the inner loop, the 6-axis F/T sensor with its noise
and filter) presses along x with F_d (``force_reference``: x force-controlled, the other coordinates follow the
motion), holds DWELL s to make contact, then the motion runs along the edge (y) at ``speed`` (a trapezoidal profile
with RAMP s ramps) and holds TAIL s at the other end.

The whole graph runs in this process in lockstep (trajectory_generator -> inverse_kinematics -> computed_force ->
joint_controller with the simulated palida, friction in every joint, and the environment inside; as the fuzz
class ``peers``), on the ROS domain printed first: `pkm view --robot palida --domain-id N` in a second shell shows
the robot and the contact force as an arrow (/platform_wrench) while it runs.

Reported over the edge (the motion along y, from its start to its end), from the plant's exact contact force and
ground truth: the normal force error F_d - f_n (RMS, max; f_n the force the face exerts along its normal), the
path errors of the tool tip against the edge's line (the height z against the line: the deburring depth; along the
edge y - y_d; into the face: the penetration, f_n / k_e at rest), the friction along the edge over the normal
force (Coulomb's mu while sliding faster than 2.6 slip_speed: an independent check of the contact), the safe
behaviour and the contact state of the law. Outputs: the table, deburring.json, deburring.png.
"""

from __future__ import annotations

import json
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import InvalidInputError
from .demo import DemoOptions

ROBOT, CONTROLLER = "palida", "direct_force"
F_N = 30.0                  # N: the normal force (low process forces)
SPEED = 0.2                 # m/s: along the edge
DEPTH = 0.003               # m: the tool tip below the top of the face
GAP = 0.0005                # m: the tool tip short of the face at the start
MARGIN = 0.02               # m: the run stops this far from the ends of the edge
RAMP = 0.1                  # s: the speed ramps
DWELL = 0.2                 # s: pressing at the start before the motion (at least 2 RAMP: one waypoint segment)
TAIL = 0.1                  # s: holding at the end
IMPACT_WINDOW = 0.02        # s after the touch-down: the impact force
WAIT = 300.0                # s (wall): the longest the run may take (a loaded machine)


def edge(env):
    """(x_face, y_first, y_last, z_top) of the part's edge: config/environment.yaml's box of the robot (its face of
    smallest x, axis-aligned)."""
    from ..errors import InvalidModelError
    from ..hardware.contact import Box

    boxes = [s for s in env.surfaces if isinstance(s, Box)]
    if not boxes or not np.allclose(boxes[0].rotation, np.eye(3)):
        raise InvalidModelError("the deburring demo needs an axis-aligned box (the part) in config/environment.yaml")
    c, h = boxes[0].center, boxes[0].half_extents
    return float(c[0] - h[0]), float(c[1] - h[1] + MARGIN), float(c[1] + h[1] - MARGIN), float(c[2] + h[2])


def task(kin, env, force: float = F_N, speed: float = SPEED, length: float | None = None, gap: float = GAP,
         passes: int = 1):
    """The run's numbers: the start pose's task coordinates, the goal spec (waypoints: DWELL at the start, then the
    edge at ``speed``, ``passes`` times, back and forth; ``length``: a shorter edge, m; ``gap``: the reference's
    tool tip short of the face, m, negative: into it), the force reference, the box, the edge's line."""
    x_face, y0, y1, z_top = edge(env)
    if length is not None:
        y1 = min(y1, y0 + float(length))
    tp = env.tool_point                        # the tool straight below the platform: home orientation
    home = np.array(kin.model.config["home"], float)
    start = home.copy()
    start[:3] = [x_face - gap - tp[0], y0 - tp[1], z_top - DEPTH - tp[2]]
    end = start.copy()
    end[1] = y1 - tp[1]
    duration = (y1 - y0) / speed + RAMP        # trapezoidal: the constant speed between the ramps
    poses = [start.tolist()] + [(end if k % 2 == 0 else start).tolist() for k in range(passes)]
    spec = {"type": "waypoints", "poses": poses, "durations": [DWELL] + [duration] * passes,
            "profile": {"name": "trapezoidal", "ramp": RAMP}}
    reference = f"{{wrench: [{float(force)}, 0, 0, 0, 0, 0], selection: [x]}}"
    return {"start": start.tolist(), "goal": spec, "force_reference": reference, "x_face": x_face, "y": (y0, y1),
            "z_edge": z_top - DEPTH, "edge_duration": duration, "tool_point": tp.tolist()}


def _params(**kw):
    from rclpy.parameter import Parameter

    kw.setdefault("lockstep_timeout", WAIT)
    return [Parameter(k, value=v) for k, v in {"robot": ROBOT, "controller": CONTROLLER, **kw}.items()]


def run_graph(t: dict, domain: int, tail: float = TAIL, progress=None) -> dict:
    """The run through the graph in this process (module docstring) of ``t``: its start (task coordinates), goal
    (a trajectory spec, also a hybrid one) and force_reference (joint_controller's parameter). Per period t, the
    contact force on the tool (base frame), the tool tip's position (ground truth), the controller's mode and
    contact state, the force reference the law got (F_d, selection); the goal's start (sim s); the node diagnostics
    that count rejections and deadline misses."""
    import rclpy
    from rclpy.context import Context
    from rclpy.executors import SingleThreadedExecutor

    from ..nodes.computed_force import ComputedForceNode
    from ..nodes.inverse_kinematics import InverseKinematicsNode
    from ..nodes.joint_controller import JointControllerNode
    from ..nodes.trajectory_generator import TrajectoryGeneratorNode

    context = Context()
    rclpy.init(context=context, domain_id=int(domain))
    ex = SingleThreadedExecutor(context=context)
    nodes = []
    start = json.dumps(t["start"])
    try:
        nodes = [TrajectoryGeneratorNode(context=context, parameter_overrides=_params(
                     goal=json.dumps(t["goal"]), initial_pose=start)),
                 InverseKinematicsNode(context=context, parameter_overrides=_params(hardware="sim",
                                                                                    initial_pose=start)),
                 ComputedForceNode(context=context, parameter_overrides=_params()),
                 JointControllerNode(context=context, parameter_overrides=_params(
                     hardware="sim", initial_pose=start, force_reference=t["force_reference"]))]
        gen, ctl = nodes[0], nodes[3]
        # what `pkm view` draws as the arrow: /platform_wrench, counted by a subscriber of its own
        from geometry_msgs.msg import WrenchStamped

        from ..ros.qos import WRENCH_TOPIC, qos

        watcher = rclpy.create_node("deburring_wrench_watch", context=context)
        wrenches = []
        watcher.create_subscription(WrenchStamped, WRENCH_TOPIC, lambda m: wrenches.append(m.wrench.force.x),
                                    qos(WRENCH_TOPIC, "sub:viewer"))
        nodes.append(watcher)
        for n in nodes:
            ex.add_node(n)
        plant, law = ctl.loop.hardware, ctl.loop.controller
        env = plant.environment
        out = {k: [] for k in ("t", "force", "tool", "mode", "contact", "f_d", "selection")}
        dim = ctl.ctx.task.dim
        period = ctl.period

        def traced(t_ns):
            ref = ctl.loop.force_at(t_ns)
            out["f_d"].append(np.zeros(dim) if ref is None else ref.wrench)
            out["selection"].append(np.zeros(dim, bool) if ref is None else ref.selection)
            period(t_ns)
            pose = plant.ground_truth().platform_pose
            out["t"].append(ctl.k * ctl.dt_ns * 1e-9)
            out["force"].append(plant.contact_wrench()[:3])
            out["tool"].append(pose.position + pose.rotation @ env.tool_point)
            out["mode"].append(ctl.diag.safe_behaviour)
            out["contact"].append(getattr(law.law, "contact", ""))
        ctl.period = traced
        events = {}
        status = gen.status
        gen.status = lambda state, **kw: (events.setdefault(state, kw), status(state, **kw))
        end = time.monotonic() + WAIT
        periods = None
        while time.monotonic() < end:
            if "rejected" in events:
                raise RuntimeError(f"the trajectory generator refused the edge: {events['rejected']}")
            if periods is None and "started" in events:
                periods = int(round((events["started"]["end"] + tail) / (ctl.dt_ns * 1e-9)))
            if periods is not None and ctl.k >= periods:
                break
            ex.spin_once(timeout_sec=0.01)
            if progress is not None:
                progress(ctl.k * ctl.dt_ns * 1e-9, periods)
        else:
            raise RuntimeError(f"the deburring run stalled at sim time {ctl.k * ctl.dt_ns * 1e-9:.4f} s (wall limit "
                               f"{WAIT:g} s)")
        rec = {k: np.array(v) for k, v in out.items()}
        rec.update(goal_start=events["started"]["goal_start"], safe_entries=law.safe_entries,
                   saturations=law.saturations, rejected=sum(n.diag.rejected for n in nodes[:4]),
                   deadline_misses=sum(n.diag.deadline_misses for n in nodes[:4]),
                   wrench_messages=len(wrenches), wrench_last_N=wrenches[-1] if wrenches else float("nan"),
                   stiffness=_box(env).stiffness,
                   friction=_box(env).friction, slip_speed=_box(env).slip_speed)
        return rec
    finally:
        for n in nodes:
            n.destroy_node()
        ex.shutdown()
        rclpy.shutdown(context=context)


def _box(env):
    from ..hardware.contact import Box

    return next(s for s in env.surfaces if isinstance(s, Box))


def figures(kin, t: dict, rec: dict, force: float) -> dict:
    """The errors over the edge (module docstring) and the series of the figure."""
    from ..trajectory import trajectory_from_spec

    traj = trajectory_from_spec(kin, dict(t["goal"], start=t["start"]))
    t0 = rec["goal_start"]
    on_edge = (rec["t"] >= t0 + DWELL) & (rec["t"] <= t0 + DWELL + t["edge_duration"])
    y_d = np.array([traj.sample(min(max(s - t0, 0.0), traj.duration))[0].position[1] for s in rec["t"]])
    y_d = y_d + t["tool_point"][1]                                  # the tool's y (home orientation)
    f_n = -rec["force"][:, 0]                                       # the face's normal is -x
    speed = np.gradient(rec["tool"][:, 1], rec["t"])
    sliding = on_edge & (np.abs(speed) > 2.6 * rec["slip_speed"]) & (f_n > 1.0)
    e_f = force - f_n[on_edge]
    e_z = (rec["tool"][:, 2] - t["z_edge"])[on_edge]
    e_y = (rec["tool"][:, 1] - y_d)[on_edge]
    depth = (rec["tool"][:, 0] - t["x_face"])[on_edge]
    mu = np.abs(rec["force"][sliding, 1]) / f_n[sliding]
    touch = np.flatnonzero(f_n > 1.0)
    impact = float(f_n[touch[0]:touch[0] + int(round(IMPACT_WINDOW / (rec["t"][1] - rec["t"][0])))].max()) \
        if touch.size else 0.0

    def rms(x):
        return float(np.sqrt(np.mean(np.square(x))))
    return {"force_error_rms_N": rms(e_f), "force_error_max_N": float(np.abs(e_f).max()),
            "force_mean_N": float(f_n[on_edge].mean()),
            "height_error_rms_um": 1e6 * rms(e_z), "height_error_max_um": 1e6 * float(np.abs(e_z).max()),
            "along_error_rms_um": 1e6 * rms(e_y), "along_error_max_um": 1e6 * float(np.abs(e_y).max()),
            "impact_N": impact, "touch_down_s": float(rec["t"][touch[0]]) if touch.size else None,
            "penetration_mean_um": 1e6 * float(depth.mean()), "penetration_max_um": 1e6 * float(depth.max()),
            "penetration_static_um": 1e6 * force / rec["stiffness"],
            "peak_speed_m_s": float(np.abs(speed[on_edge]).max()),
            "friction_ratio_mean": float(mu.mean()) if mu.size else float("nan"), "friction_mu": rec["friction"],
            "edge_s": float(t["edge_duration"]), "edge_mm": 1e3 * float(t["y"][1] - t["y"][0]),
            "wrench_messages": int(rec["wrench_messages"]), "wrench_last_N": float(rec["wrench_last_N"]),
            "contact_lost": bool(np.any(rec["contact"] == "retreat")),
            "contact_at_edge_start": str(rec["contact"][np.flatnonzero(on_edge)[0]]),
            "safe_entries": int(rec["safe_entries"]), "safe_periods": int(np.sum(rec["mode"] != "none")),
            "saturations": int(rec["saturations"]), "rejected": int(rec["rejected"]),
            "deadline_misses": int(rec["deadline_misses"]),
            "finite": bool(np.isfinite(rec["force"]).all() and np.isfinite(rec["tool"]).all()),
            "series": {"t": rec["t"], "f_n": f_n, "f_t": np.abs(rec["force"][:, 1]), "y_d": y_d,
                       "on_edge": on_edge, "speed": speed}}


def plot(path: Path, t: dict, rec: dict, f: dict, force: float) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = f["series"]
    tt = s["t"]
    t_a, t_b = rec["goal_start"] + DWELL, rec["goal_start"] + DWELL + t["edge_duration"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8.5), sharex=True)
    ax = axes[0]
    ax.plot(tt, s["f_n"], lw=1, label="normal force f_n (plant)")
    ax.axhline(force, color="k", ls="--", lw=1.2, label=f"F_d = {force:g} N")
    ax.plot(tt, s["f_t"], lw=1, color="C2", label="friction along the edge |f_y|")
    ax.set_ylabel("force [N]")
    ax.set_ylim(-2, 1.6 * force)
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"normal force: error RMS {f['force_error_rms_N']:.2f} N, max {f['force_error_max_N']:.2f} N "
                 "over the edge", fontsize=9)
    ax = axes[1]
    ax.plot(tt, 1e6 * (rec["tool"][:, 2] - t["z_edge"]), lw=1, label="height z - z_edge (deburring depth error)")
    ax.plot(tt, 1e6 * (rec["tool"][:, 1] - s["y_d"]), lw=1, label="along the edge y - y_d")
    touched = np.cumsum(s["f_n"] > 1.0) > 0                       # before the touch-down: the gap, off the scale
    ax.plot(tt, np.where(touched, 1e6 * (rec["tool"][:, 0] - t["x_face"]), np.nan), lw=1,
            label="into the face x - x_face (from the touch-down)")
    ax.set_ylabel("tool tip error [um]")
    ax.legend(fontsize=8, loc="lower right")
    ax.set_title(f"path: height RMS {f['height_error_rms_um']:.1f} um, along RMS {f['along_error_rms_um']:.1f} um, "
                 f"penetration {f['penetration_mean_um']:.1f} um (F_d / k_e = {f['penetration_static_um']:.1f} um)",
                 fontsize=9)
    ax = axes[2]
    ax.plot(tt, s["speed"], lw=1, label="tool speed along the edge")
    ax.set_ylabel("dy/dt [m/s]")
    ax.set_xlabel("t [s] (sim)")
    ax.legend(fontsize=8, loc="lower right")
    for a in axes:
        a.grid(True, alpha=0.3)
        a.axvspan(t_a, t_b, color="grey", alpha=0.1, lw=0)
    fig.suptitle(f"PaLiDA deburring: {force:g} N on the part's edge, {f['edge_mm']:.0f} mm at "
                 f"{f['peak_speed_m_s']:.2f} m/s (shaded)\ndirect force control (Taghirad Figs. 28, 34), impact "
                 f"{f['impact_N']:.1f} N at the touch-down", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


@dataclass(frozen=True)
class DeburringOptions:
    """What `pkm demo --deburring` adds to the demo's options (cli.benchmarks.deburring_options reads it from the
    command line); checked as it is made."""

    force: float = F_N                     # N, the normal force
    edge_speed: float = SPEED              # m/s along the edge
    edge_length: float | None = None       # m of the edge to run (None: the part's length less MARGIN at each end)

    def __post_init__(self):
        if not (0 < self.force <= 200 and 0 < self.edge_speed <= 1.0
                and (self.edge_length is None or 0 < self.edge_length)):
            raise InvalidInputError(f"--force must be in (0, 200] N and --edge-speed in (0, 1] m/s, --edge-length > 0, "
                                    f"got {self.force}, {self.edge_speed}, {self.edge_length}")


def run(demo: DemoOptions, options: DeburringOptions) -> dict:
    """The deburring demo (module docstring) with the demo's output folder, domain, quiet and json."""
    from ..hardware.contact import load_environment
    from ..kinematics import robot_kinematics
    from ..progress import progress_bar
    from ..ros.topology import domain_id
    from .report import Provenance, document

    t_wall = time.perf_counter()
    kin = robot_kinematics(ROBOT)
    env = load_environment(ROBOT)[0]
    t = task(kin, env, options.force, options.edge_speed, options.edge_length)
    domain = domain_id(demo.domain_id)
    print(f"ROS_DOMAIN_ID={domain}: watch with `pkm view --robot palida --domain-id {domain}` in a second shell",
          file=sys.stderr, flush=True)
    bar = None if demo.quiet else progress_bar(total=1.0, desc="deburring", unit="s sim")

    def progress(sim, periods):
        if bar is not None and periods:
            bar.total = round(periods * 5e-4, 3)
            bar.update(round(sim, 3) - bar.n)
    try:
        rec = run_graph(t, domain, progress=progress)
    finally:
        if bar is not None:
            bar.close()
    f = figures(kin, t, rec, options.force)
    out = Path(demo.out)
    out.mkdir(parents=True, exist_ok=True)
    plot(out / "deburring.png", t, rec, f, options.force)
    figs = {k: v for k, v in f.items() if k != "series"}
    summary = {"robot": ROBOT, "controller": CONTROLLER, "force_N": options.force, "speed_m_s": options.edge_speed,
               "start": t["start"], "goal": t["goal"], "force_reference": t["force_reference"],
               "environment": {"stiffness": rec["stiffness"], "friction": rec["friction"]}, "figures": figs,
               "ros_domain_id": domain, "wall_s": time.perf_counter() - t_wall,
               "files": ["deburring.json", "deburring.png"]}
    provenance = Provenance.now()
    doc = document(summary, provenance)
    (out / "deburring.json").write_text(json.dumps(doc, indent=2))
    lines = [f"pkm demo --deburring: PaLiDA presses {options.force:g} N on the part's edge (config/environment.yaml: "
             f"k_e {rec['stiffness']:.0e} N/m, mu {rec['friction']:g}) along {figs['edge_mm']:.0f} mm at "
             f"{options.edge_speed:g} m/s, direct force control, the graph in one process in lockstep",
             provenance.line(ROBOT),
             f"  {'':34s} {'RMS':>10s} {'max':>10s}",
             f"  {'normal force error [N]':34s} {figs['force_error_rms_N']:10.3f} {figs['force_error_max_N']:10.3f}",
             f"  {'height error (depth) [um]':34s} {figs['height_error_rms_um']:10.2f} "
             f"{figs['height_error_max_um']:10.2f}",
             f"  {'along the edge y - y_d [um]':34s} {figs['along_error_rms_um']:10.2f} "
             f"{figs['along_error_max_um']:10.2f}",
             f"  impact at the touch-down {figs['impact_N']:.2f} N (the peak within {IMPACT_WINDOW * 1e3:g} ms, at "
             f"{figs['touch_down_s']:.4f} s)",
             f"  penetration into the face {figs['penetration_mean_um']:.2f} um mean (F_d / k_e = "
             f"{figs['penetration_static_um']:.2f} um); friction / normal force while sliding "
             f"{figs['friction_ratio_mean']:.3f} (mu {figs['friction_mu']:g}); peak speed "
             f"{figs['peak_speed_m_s']:.3f} m/s",
             f"  /platform_wrench: {figs['wrench_messages']} samples (the last {figs['wrench_last_N']:.2f} N along the "
             f"normal, the sensor with its noise and filter)",
             f"  contact lost: {'YES' if figs['contact_lost'] else 'no'}; safe-behaviour entries "
             f"{figs['safe_entries']}; saturations {figs['saturations']}; rejected inputs {figs['rejected']}",
             f"  files in {out}: deburring.json, deburring.png ({summary['wall_s']:.1f} s)"]
    print("\n".join(lines), file=sys.stderr if demo.json else sys.stdout)
    return doc
