"""`pkm demo`: the PaLiDA computed-force benchmark through the node graph.

For each run (SJ, CF rb, CF rb+frict; Abdellatif sec. V) it runs the graph with
`pkm bringup --exit-when-done` (pkm_control.graph.bringup.run_recorded: the trajectory generator,
inverse kinematics and computed-force nodes stream ahead; joint_controller runs the simulated
palida with friction in every joint inside its real-time loop, in lockstep), starting on the
benchmark circle (initial_pose, so no approach move), records the robot's ground truth and the
feedforward from this process until the circle is done, and stops the graph. The metrics, timing
and report are ROS-free (pkm_control.benchmarks.palida).

ROS domain: ROS_DOMAIN_ID when it is set in the environment (watch from a second shell with the
same domain), else an isolated one no other run holds (ros.topology.isolated_domain); the domain is printed.
"""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

from . import palida as bm
from .report import Provenance
from ..errors import InvalidInputError
from ..graph.losses import loss_line
from ..identification.runs import run_metrics
from ..kinematics import robot_kinematics
from ..progress import progress_bar
from ..control.settings import load_settings
from ..trajectory import trajectory_from_spec
from ..ros.topology import domain_id

ROBOT = "palida"
#: s (wall): how long a lockstep period waits for a missing input before it runs without it (the controller's
#: safe behaviour). The demo's figures must be the lockstep ones on a loaded machine too (1 s, the default in
#: config/controllers.yaml, was exceeded on a 2-core machine running the test suite beside it); a dead node
#: still ends the run, after this and --timeout.
LOCKSTEP_TIMEOUT = 30.0
#: what the controllers' model is to the plant (issue 25): the JSON's ``models``, the lines after the table
MODELS = {"controllers_model": "the config's nominal model (CF rb: rigid body; CF rb+frict: rigid body + friction; "
                               "SJ: none)",
          "plant": "the simulated palida with the config's nominal parameters and friction in every joint: the "
                   "controllers' model = the plant (CF rb's without the friction)",
          "improvement": "x SJ is an upper bound on the improvement (the controllers know the plant exactly)",
          "fair_figure": {"command": "pkm demo --identified",
                          "what": "the controllers use base parameters identified on a perturbed robot"}}


def models_lines() -> list[str]:
    """What the controllers' model and the plant are (MODELS), as the lines after the demo's table."""
    fair = MODELS["fair_figure"]
    return [f"controllers' model: {MODELS['controllers_model']}", f"plant: {MODELS['plant']}",
            f"{MODELS['improvement']}; the fair figure is `{fair['command']}` ({fair['what']})"]


@dataclass(frozen=True)
class DemoOptions:
    """What `pkm demo` runs (cli.benchmarks.demo_options reads it from the command line); checked as it is made."""

    out: str = "results"                   # output folder
    radius: float = 0.15                   # m, the circle's
    laps: float = 1.0                      # at 1 m/s
    ramp_time: float = 0.4                 # s, speed ramp up and down
    runs: tuple[str, ...] = tuple(c for _, c in bm.RUNS)     # the controllers, in order
    timeout: float = 600.0                 # s (wall) per run
    domain_id: int | None = None           # ROS domain (None: $ROS_DOMAIN_ID, else an isolated one)
    animations: bool = True                # an animation per run
    quiet: bool = False                    # no progress bar, no node output
    json: bool = False                     # the CLI prints the summary as JSON on stdout: the table goes to stderr

    def __post_init__(self):
        if not self.runs:
            raise InvalidInputError("--runs needs at least one controller")
        if not self.timeout > 0.0:
            raise InvalidInputError(f"--timeout must be more than 0 s, got {self.timeout!r}")


def run_phase(sim_time: float, status: dict) -> str:
    """What a run is doing, for its progress bar: before the trajectory generator has accepted the goal, the nodes
    are starting (processes, DDS discovery, the first lockstep exchange), which takes seconds of wall time at 0 s of
    sim time on a loaded machine; then the approach to the start (status ``goal_start``), then the motion."""
    state = status.get("state")
    if state is None:
        return "starting the nodes: waiting for the trajectory generator to accept the goal"
    if state == "accepted":
        return "goal accepted: waiting for the first streamed samples"
    if state == "started" and sim_time < status.get("goal_start", 0.0):
        return "approach to the start"
    return {"started": "motion", "finished": "motion finished"}.get(state, state)


class LostSamples(RuntimeError):
    """A run whose recording lost samples (graph.losses): its figures, or its bag, would not be the run's."""


def run_one(name, controller, spec, start, t_end, timeout, quiet, overrides=(), **options):
    """One run through the graph; returns (RunRecord, summary of run_recorded). start: the initial pose's task
    coordinates (None: the config's, and an approach move to the trajectory); timeout: s (wall) for the run; quiet:
    no progress bar, no node output; overrides, options: more of the run's BringupOptions (its --set items after the
    demo's own, true_parameters, record)."""
    from ..graph.bringup import BringupOptions, run_recorded

    bringup = BringupOptions(robot=ROBOT, controller=controller, goal=json.dumps(spec), exit_when_done=True,
                             timeout=timeout, overrides=(f"joint_controller.lockstep_timeout={LOCKSTEP_TIMEOUT}",
                                                         *([] if start is None else
                                                           [f"initial_pose={json.dumps(start)}"]),
                                                         *overrides), **options)
    devnull = open(os.devnull, "w") if quiet else None
    bar = None if quiet else progress_bar(total=round(t_end, 3), desc=f"{name:12s}", unit="s sim",
                                               bar_format="{l_bar}{bar}| {n:.3f}/{total:.3f} s sim [{elapsed}]"
                                                          "{postfix}")
    if bar is not None:
        bar.set_postfix_str(run_phase(0.0, {}))

    def progress(sim_time, status):
        if bar is not None:      # update() honours the bar's refresh interval (refresh() would not)
            phase = run_phase(sim_time, status)
            if phase != bar.postfix:
                bar.set_postfix_str(phase, refresh=False)
            bar.update(round(min(sim_time, t_end), 3) - bar.n)

    try:
        summary, record = run_recorded(bringup, progress, out=devnull)
    finally:
        if bar is not None:
            bar.close()
        if devnull is not None:
            devnull.close()
    if summary["goal_status"] != "finished":
        raise RuntimeError(f"run '{name}' ({controller}) did not finish: {summary['goal_status']} "
                           f"{summary.get('reason', '')}")
    if summary.get("missing_samples"):
        raise LostSamples(f"run '{name}' ({controller}): the recorder lost {summary['missing_samples']} samples of "
                          "the ground truth (machine overloaded?): its figures would not be comparable")
    lost = loss_line(summary.get("lost_samples", []))
    if lost is not None:            # the run's recorder or its bag (graph.losses): never used with a gap
        raise LostSamples(f"run '{name}' ({controller}): {lost}")
    if summary.get("deadline_misses"):
        raise RuntimeError(f"run '{name}' ({controller}): {summary['deadline_misses']} period(s) waited more than "
                           f"{LOCKSTEP_TIMEOUT} s (wall) for an input and ran without it (machine overloaded?): its "
                           "figures would not be the lockstep ones")
    record.name = name
    return record, summary


def run(options: DemoOptions) -> dict:
    kin = robot_kinematics(ROBOT)
    spec = bm.benchmark_spec(options.radius, options.laps, options.ramp_time)
    traj = trajectory_from_spec(kin, spec)
    start = kin.task.coordinates(traj.start_pose).tolist()
    names = dict((c, n) for n, c in bm.RUNS)
    os.environ["ROS_DOMAIN_ID"] = str(domain_id(options.domain_id))
    print(f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} (watch with the same domain in a second shell)",
          file=sys.stderr, flush=True)
    records, metrics, settings = [], [], []
    t0 = None
    for controller in options.runs:
        settings.append(load_settings(ROBOT, controller))
        name = names.get(controller, controller)
        rec, summary = run_one(name, controller, spec, start, float(settings[-1]["start_delay"]) + traj.duration,
                               options.timeout, options.quiet)
        t0 = summary["goal_start"]
        plant = summary.get("plant")           # the simulated robot of the runs (the same in each)
        m = run_metrics(kin, traj, rec, t0)
        m.update(wall_s=summary["wall_duration_s"], real_time_factor=summary["real_time_factor"],
                 startup_s=summary["startup_s"], safe_behaviour_entries=summary["safe_behaviour_entries"],
                 loop_cycle_median_us=summary["cycle_median_us"],
                 plant_step_median_us=summary["plant_step_median_us"])
        records.append(rec)
        metrics.append(m)
    # timed once every node process is gone, so they do not share the cores with the measurement
    for m, st in zip(metrics, settings):
        m["cycle"] = bm.cycle_timing(ROBOT, st, traj)
    baseline = metrics[0]["name"]
    bm.add_improvement(metrics, baseline)
    extra = {"trajectory": spec, "duration_s": traj.duration, "t0": t0, "control_period_s": 0.0005,
             "paper_cycle_us": bm.PAPER_CYCLE_US, "target_cycle_us": bm.TARGET_CYCLE_US,
             "improvement_baseline": baseline, "ros_domain_id": int(os.environ["ROS_DOMAIN_ID"]),
             "plant": plant, "models": MODELS}
    for m in metrics:
        m["control_cycle_median_us"] = m["cycle"]["median_us"]
        m["control_cycle_p99_us"] = m["cycle"]["p99_us"]
    provenance = Provenance.now()
    out = Path(options.out)
    summary = bm.write_results(out, ROBOT, kin.model.actuated_joints, records, metrics, extra, provenance)
    animations = [animate(out, m["controller"], options.quiet) for m in metrics] if options.animations else []
    notes = [*models_lines(), "",
             f"circle: radius {options.radius} m, plane inclined 30 deg to the x-axis, 1 m/s for {options.laps:g} "
             f"lap(s), speed ramps {options.ramp_time} s; {traj.duration:.3f} s at 0.5 ms steps, lockstep through the "
             "node graph",
             "x SJ: RMS actuator error of SJ / of the run. Control cycle (trajectory sample + IK + model + law, "
             f"on the core): paper {bm.PAPER_CYCLE_US:.0f} us at 0.5 ms; target median <= "
             f"{bm.TARGET_CYCLE_US['median']:.0f} us, p99 <= {bm.TARGET_CYCLE_US['p99']:.0f} us",
             "graph: " + "; ".join(f"{m['name']} real-time factor {m['real_time_factor']:.2f} (wall {m['wall_s']:.1f} "
                                   f"s, start-up {m['startup_s']:.1f} s)" for m in metrics),
             f"results in {options.out}/: palida_benchmark.json, palida_benchmark_errors.png (Fig. 6), "
             "palida_benchmark_forces.png (Fig. 5), CSV per run"
             + "".join(f", {a.name}" for a in animations) + (" (animations)" if animations else "")]
    # with --json (the CLI prints the summary) the table goes to stderr: stdout is the JSON alone
    print(bm.print_table(metrics, kin.model.actuated_joints, provenance, notes),
          file=sys.stderr if options.json else sys.stdout)
    return summary


def animate(out: Path, controller: str, quiet: bool) -> Path:
    """The animation of one run from its joints CSV (pkm_control.identification.runs, pkm_control.viewer.animation)."""
    from ..viewer.animation import write_animation
    from ..identification.runs import load_run

    run = load_run(out / f"palida_benchmark_{controller}_joints.csv")
    return write_animation(run, out / f"palida_benchmark_{controller}", quiet=quiet)
