"""Taghirad (seed 004), chapter Motion Control: every law of the sections "Motion Control in Task Space" and "Motion
Control in Joint Space" on the simulated Gough-Stewart platform, one demanding trajectory, three conditions: the
controllers have the model the chapter's laws assume, the plant is not that model (issue 25).

Laws (config/controllers.yaml, equations in control/laws.py): decentralized PD, PD + feedforward, partial
linearization (PD + gravity), inverse dynamics control (IDC), robust IDC and adaptive IDC, each in task space
(errors X_d (-) X of the state estimator's pose) and in joint space (errors q_d - q of the legs). 2 kHz control
rate (controllers.yaml ``control_rate``), the simulated robot with the config's friction and force limits.

Trajectory (SPEC): eight rest-to-rest quintic moves of 0.15 s through poses that mix all six coordinates
(+-11 mm, +-11 mrad roll/pitch, +-18 mrad yaw about home), then back home and 0.15 s of hold. Demanding because the
legs reach 0.448 m/s, 90 % of their 0.5 m/s velocity limit (the binding limit of this robot: at that speed the
platform accelerates at up to 7.9 m/s^2 and 10.6 rad/s^2, reversing every 0.15 s), while the motion stays in the
middle of the workspace and the strokes (legs 1.291-1.331 m of 1.0-1.75 m; ``check_reachable``). The forces stay
below 270 N of the 3000 N limit: this machine's drives are far stronger than its leg speed needs.

The controllers (what the chapter's laws assume: the dynamic model, known for IDC, with an uncertainty bound for
robust IDC, estimated for adaptive IDC): the config's nominal model, rigid body + friction (controllers.yaml
``feedforward_model``); the adaptive laws start from its base parameters. The chapter names no identified or
simplified model, so the controllers keep the nominal one.

The plant, per condition:

* ``perturbed`` (the headline): the config's parameters perturbed by up to +-MODEL_ERROR (identification/
  perturbation.py, as ``pkm perturb --robot stewart --scale 0.2 --seed 12 --identical-legs``, written to
  stewart_control_plant.yaml: every body kind's
  mass, first moment and rotational inertia, every friction coefficient, seeded and physically consistent); the
  legs stay identical, so the plant's base parameters exist in the adaptive law's parametrization;
* ``noise``: the same plant, read through hardware/noise.py NoisyEncoders: 1 um quantization after 2 um rms
  Gaussian position noise, 5 mm/s rms Gaussian velocity noise, about what a backward difference of that position
  gives at 2 kHz; seeded;
* ``exact``: the plant is the controllers' model, exact encoders: the upper bound of what a model buys.

The factor reported first (HEADLINE): the maximum leg error of PD over that of PD + feedforward, the same PD, in
joint and in task space, on the perturbed plant; the same factor on the exact plant is its upper bound.

Figures per law and condition: RMS and maximum platform position error (mm) and orientation error (mrad, the
rotation vector of R_d R^T) of the plant (ground truth), RMS and peak actuator force (N), and the time some
actuator spent at its force limit (s). For the adaptive laws the estimates are recorded every 10 ms; their error
is judged by the model's force prediction along the trajectory, |Upsilon (theta^ - theta)| / |Upsilon theta|, and
per parameter (theta^_i - theta_i) / (|theta_i| + f), theta the plant's base parameters.
"""

from __future__ import annotations

import csv
import pathlib
import time

import numpy as np

from . import finish

SPEC = {"type": "waypoints", "profile": "quintic", "durations": [0.15] * 9,
        "poses": [[0.0088, 0.0066, 1.2066, 0.011, -0.0066, 0.0176], [-0.0088, 0.011, 1.1934, -0.0088, 0.011, -0.0132],
                  [0.0066, -0.011, 1.2088, 0.0066, 0.0088, 0.0154], [-0.011, -0.0044, 1.1934, -0.011, -0.0088, -0.0176],
                  [0.011, 0.0088, 1.2044, 0.0088, 0.011, -0.011], [-0.0066, -0.0088, 1.2088, -0.0088, 0.0066, 0.0132],
                  [0.0044, 0.011, 1.1912, 0.011, -0.011, -0.0154], [-0.0088, 0.0044, 1.2066, -0.0066, -0.0088, 0.011],
                  [0.0, 0.0, 1.2, 0.0, 0.0, 0.0]]}
REST = 0.15                               # s of hold after the motion
QUICK_SEGMENTS = 1                        # --quick: the first move only (a smoke test, not the README's numbers)
LAWS = (("task", "task_pd", "PD"), ("task", "task_pd_feedforward", "PD + feedforward"),
        ("task", "task_pd_gravity", "PD + gravity"), ("task", "task_idc", "IDC"),
        ("task", "task_robust_idc", "robust IDC"), ("task", "task_adaptive_idc", "adaptive IDC"),
        ("joint", "pd", "PD"), ("joint", "pd_feedforward", "PD + feedforward"),
        ("joint", "joint_pd_gravity", "PD + gravity"), ("joint", "joint_idc", "IDC"),
        ("joint", "joint_robust_idc", "robust IDC"), ("joint", "joint_adaptive_idc", "adaptive IDC"))
CONDITIONS = ("perturbed", "noise", "exact")
MODEL_ERROR = 0.2                         # the plant: every parameter within +-20 % of the controllers' model
SEED = 12                                 # of the perturbation and of the noise
#: (space, without the model, with it): the headline factor max |q_d - q| of the first / of the second (same PD)
HEADLINE = (("joint", "pd", "pd_feedforward"), ("task", "task_pd", "task_pd_feedforward"))
PERTURB_COMMAND = f"pkm perturb --robot stewart --seed {SEED} --scale {MODEL_ERROR:g} --identical-legs"
CONTROLLERS_MODEL = ("the config's nominal model, rigid body + friction (feedforward, IDC, robust IDC; the adaptive "
                     "laws' initial estimate)")
NOISE = {"resolution": 1e-6, "position_std": 2e-6, "velocity_std": 5e-3}   # m, m, m/s
ESTIMATE_EVERY = 20                       # periods between recorded adaptive estimates (10 ms)


def trajectory(kin, segments: int | None = None):
    """The SPEC trajectory (its first ``segments`` moves if given), checked against the joint ranges and velocity
    limits."""
    from ...trajectory import trajectory_from_spec
    from ...trajectory.spec import check_reachable

    spec = SPEC
    if segments is not None:
        spec = {**SPEC, "poses": SPEC["poses"][:segments], "durations": SPEC["durations"][:segments]}
    traj = trajectory_from_spec(kin, spec)
    check_reachable(kin, traj)
    return traj, spec


def perturbation(dyn, model_error: float = MODEL_ERROR, seed: int = SEED):
    """The plant's parameters (identification/perturbation.py Perturbation): the config's within +-model_error, one
    draw per body kind and friction role (identical legs), reproducible by ``seed``."""
    from ...identification.perturbation import perturbed_parameters

    return perturbed_parameters(dyn, model_error, seed, identical_legs=True)


def true_base_parameters(law, plant_dyn) -> np.ndarray:
    """The plant's base parameters in the adaptive law's base (the regressor depends on the kinematics only, so the
    same random states give the same base and combinations; checked)."""
    from ...dynamics.parameters import base_parameters, share_across_legs

    plant = base_parameters(plant_dyn, group=share_across_legs, friction=law.friction)
    if plant.names != law.base.names or not np.array_equal(plant.base, law.base.base):
        raise RuntimeError("the plant's base parameters are not in the adaptive law's base")
    return plant.base_values


def prediction_regressor(law, traj, n: int = 50) -> np.ndarray:
    """Upsilon(X_d, xdot_d, xddot_d) stacked over n instants of the trajectory (the law's base-parameter regressor):
    Upsilon theta is the generalized force the model predicts there."""
    rows = []
    for t in np.linspace(0.0, traj.duration, n):
        pose, tw, ac = traj.sample(t)
        omega0, D = law.regressor_terms(pose, tw)
        rows.append(omega0 + np.tensordot(ac, D, axes=1))
    return np.vstack(rows)


def _rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x))))


def _figures(run, dt) -> dict:
    """The table's figures of one run (module docstring), and the largest leg error (the headline factor's)."""
    e = run.task_error
    pos, rot = np.linalg.norm(e[:, :3], axis=1), np.linalg.norm(e[:, 3:], axis=1)
    return {"position_rms_mm": 1e3 * _rms(pos), "position_max_mm": 1e3 * float(pos.max()),
            "orientation_rms_mrad": 1e3 * _rms(rot), "orientation_max_mrad": 1e3 * float(rot.max()),
            "leg_max_mm": 1e3 * float(np.abs(run.error).max()),
            "force_rms_N": _rms(run.tau), "force_peak_N": float(np.abs(run.tau).max()),
            "saturation_s": float(run.saturated.sum() * dt)}


def run(out_dir: pathlib.Path, progress: bool = True, quick: bool = False) -> dict:
    """Every law in every condition (module docstring); quick: the first move only (a smoke test)."""
    conditions = CONDITIONS
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...dynamics import robot_dynamics
    from ...hardware import SimulatedRobot
    from ...hardware.noise import NoisyEncoders
    from ...progress import progress_bar
    from ...control.feedforward import dynamics_with_parameters
    from ...identification.perturbation import write_perturbation
    from ...control.settings import load_settings
    from .tracking import track

    t0 = time.perf_counter()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dyn = robot_dynamics("stewart")
    dt = 1.0 / load_settings("stewart", "pd")["control_rate"]
    traj, spec = trajectory(dyn.kin, QUICK_SEGMENTS if quick else None)
    rest = 0.0 if quick else REST
    pert = perturbation(dyn)
    write_perturbation(out_dir / "stewart_control_plant.yaml", pert, f"{PERTURB_COMMAND} (stewart-control)")
    n = int(round((traj.duration + rest) / dt))
    runs, estimates, adaptive = {}, {}, {}
    with progress_bar(total=n * len(LAWS) * len(conditions), desc="stewart control", disable=not progress) as bar:
        for space, controller, _ in LAWS:
            for cond in conditions:
                robot = SimulatedRobot(dyn, dt, true_parameters=None if cond == "exact" else pert.parameters)
                hardware = NoisyEncoders(robot, **NOISE, seed=SEED) if cond == "noise" else None
                rec = []

                def observe(k, c, rec=rec):
                    if k % ESTIMATE_EVERY == 0 and (est := c.law.estimates) is not None:
                        rec.append((k * dt, est))
                        adaptive.setdefault(controller, c.law)
                runs[controller, cond] = track(dyn, controller, traj, robot, dt, rest, hardware, task_errors=True,
                                               observe=observe, progress=bar)
                if rec:
                    estimates[controller, cond] = rec
    summary = {"robot": "stewart", "paper": "Taghirad, Parallel Robots (seed 004), chapter Motion Control",
               "trajectory": spec, "rest_s": rest, "control_period_s": dt, "quick": quick,
               "controllers_model": CONTROLLERS_MODEL,
               "plant": {"model_error": MODEL_ERROR, "seed": SEED, "identical_legs": True,
                         "perturbation": pert.summary(),
                         "command": PERTURB_COMMAND},
               "conditions": {"perturbed": f"plant: the config's parameters within +-{100 * MODEL_ERROR:g} % (seed "
                                           f"{SEED}, identical legs); the controllers keep the nominal model",
                              "noise": f"the perturbed plant, encoders: {NOISE['resolution'] * 1e6:g} um quantization, "
                                       f"{NOISE['position_std'] * 1e6:g} um and {NOISE['velocity_std'] * 1e3:g} mm/s "
                                       f"rms Gaussian noise (seed {SEED})",
                              "exact": "upper bound: the plant is the controllers' model, exact encoders"},
               "noise": NOISE, "laws": {}, "files": []}
    theta = {}
    if adaptive:
        law = next(iter(adaptive.values()))
        true = true_base_parameters(law, dynamics_with_parameters(dyn, pert.parameters))
        theta = {"exact": law.initial, "noise": true, "perturbed": true}
        Y = prediction_regressor(law, traj)
        scale = np.abs(true) + 1e-3 * np.abs(true).max()
        summary["base_parameters"] = {"names": list(law.names), "nominal": law.initial, "true_perturbed": true}
    for space, controller, what in LAWS:
        entry = {"space": space, "law": what, "conditions": {}}
        for cond in conditions:
            fig = _figures(runs[controller, cond], dt)
            if (controller, cond) in estimates:
                th = theta[cond]
                ts, est = zip(*estimates[controller, cond])
                pred = [float(np.linalg.norm(Y @ (e - th)) / np.linalg.norm(Y @ th)) for e in est]
                fig["estimates"] = {"t_s": list(ts), "prediction_error": pred, "final": est[-1],
                                    "initial_prediction_error": pred[0], "final_prediction_error": pred[-1],
                                    "final_relative_error": (est[-1] - th) / scale}
            entry["conditions"][cond] = fig
        summary["laws"][controller] = entry
    leg_max = {c: {cond: summary["laws"][c]["conditions"][cond]["leg_max_mm"] for cond in conditions}
               for _, pd, ff in HEADLINE for c in (pd, ff)}
    factors = {cond: {space: leg_max[pd][cond] / leg_max[ff][cond] for space, pd, ff in HEADLINE}
               for cond in conditions}
    summary["headline"] = {"what": "max |q_d - q| of PD / of PD + feedforward (the same PD), perturbed plant",
                           "factor": factors["perturbed"], "noise": factors["noise"]}
    summary["upper_bound"] = {"what": "the same factor, the plant = the controllers' model", "factor": factors["exact"]}

    def by_space(f):
        return ", ".join(f"{space} space x {f[space]:.1f}" for space, _, _ in HEADLINE)

    lines = [f"Taghirad, Motion Control: the Gough-Stewart platform, {len(spec['poses'])} quintic moves of "
             f"{spec['durations'][0]:g} s (legs up to 90 % of their 0.5 m/s limit) + {rest:g} s hold, "
             f"{1 / dt:g} Hz" + (" (--quick: the first move only, not the documented figures)" if quick else ""),
             f"  controllers' model: {CONTROLLERS_MODEL}",
             f"  plant: {pert.summary()} ({PERTURB_COMMAND}, stewart_control_plant.yaml); condition 'exact': the "
             f"plant = the controllers' model",
             f"  PD + feedforward over PD (max leg error, the same PD), perturbed plant: "
             f"{by_space(factors['perturbed'])}; with noisy encoders {by_space(factors['noise'])}",
             f"  upper bound (the controllers know the plant exactly): {by_space(factors['exact'])}",
             f"  {'space':5s} {'law':17s} {'condition':9s} {'pos rms':>8s} {'pos max':>8s} {'rot rms':>8s} "
             f"{'rot max':>8s} {'F rms':>7s} {'F peak':>7s} {'sat':>6s}",
             f"  {'':33s} {'[mm]':>8s} {'[mm]':>8s} {'[mrad]':>8s} {'[mrad]':>8s} {'[N]':>7s} {'[N]':>7s} "
             f"{'[s]':>6s}"]
    for space, controller, what in LAWS:
        for cond in conditions:
            f = summary["laws"][controller]["conditions"][cond]
            lines.append(f"  {space:5s} {what:17s} {cond:9s} {f['position_rms_mm']:8.4f} {f['position_max_mm']:8.4f} "
                         f"{f['orientation_rms_mrad']:8.4f} {f['orientation_max_mrad']:8.4f} {f['force_rms_N']:7.1f} "
                         f"{f['force_peak_N']:7.1f} {f['saturation_s']:6.3f}")
    for controller in adaptive:
        for cond in conditions:
            est = summary["laws"][controller]["conditions"][cond]["estimates"]
            lines.append(f"  {controller} ({cond}): force prediction error of the estimate "
                         f"{100 * est['initial_prediction_error']:.1f} % -> "
                         f"{100 * est['final_prediction_error']:.1f} %")
    # figure 1: tracking errors, one panel per condition
    colors = dict(zip(dict.fromkeys(what for _, _, what in LAWS), plt.rcParams["axes.prop_cycle"].by_key()["color"]))
    fig, axes = plt.subplots(len(conditions), 1, figsize=(10, 3.2 * len(conditions) + 1), sharex=True, squeeze=False)
    for ax, cond in zip(axes[:, 0], conditions):
        for space, controller, what in LAWS:
            r = runs[controller, cond]
            ax.semilogy(r.t, 1e3 * np.linalg.norm(r.task_error[:, :3], axis=1) + 1e-6, color=colors[what],
                        ls="-" if space == "task" else "--", lw=1, label=f"{space}: {what}")
        ax.set_ylabel("|p_d - p| [mm]")
        ax.set_title(f"{cond}: {summary['conditions'][cond]}", fontsize=8)
        ax.grid(True, which="both", alpha=0.3)
    axes[-1, 0].set_xlabel("t [s]")
    fig.suptitle("Platform position error of each law (solid: task space, dashed: joint space)")
    fig.tight_layout(rect=(0, 0, 1, 0.9))
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="upper center", ncol=6, fontsize=7,
               bbox_to_anchor=(0.5, 0.955))
    fig.savefig(out_dir / "stewart_control_errors.png", dpi=90)
    plt.close(fig)
    files = ["stewart_control_plant.yaml", "stewart_control_errors.png"]
    # figure 2: the adaptive estimates
    if adaptive:
        fig, axes = plt.subplots(2, len(adaptive), figsize=(10, 7), sharex=True, squeeze=False)
        for col, controller in enumerate(adaptive):
            top, bottom = axes[0, col], axes[1, col]
            for cond in conditions:
                est = summary["laws"][controller]["conditions"][cond]["estimates"]
                top.plot(est["t_s"], 100 * np.array(est["prediction_error"]), label=cond)
            top.set_ylabel("|Y (theta^ - theta)| / |Y theta| [%]")
            top.set_title(f"{controller}: force prediction error of the estimate", fontsize=9)
            top.legend(fontsize=8)
            ts, est = zip(*estimates[controller, "perturbed"])
            rel = (np.array(est) - theta["perturbed"]) / scale
            for i in range(rel.shape[1]):
                bottom.plot(ts, 100 * rel[:, i], lw=0.8)
            bottom.axhline(0.0, color="k", lw=0.8)
            bottom.set_title(f"{controller}, perturbed plant: each base parameter's error", fontsize=9)
            bottom.set_ylabel("(theta^_i - theta_i) / (|theta_i| + f) [%]")
            bottom.set_xlabel("t [s]")
            for ax in (top, bottom):
                ax.grid(True, alpha=0.3)
        fig.suptitle("Adaptive IDC: the estimates against the plant's true base parameters")
        fig.tight_layout()
        fig.savefig(out_dir / "stewart_control_adaptive.png", dpi=90)
        plt.close(fig)
        files.append("stewart_control_adaptive.png")
    with open(out_dir / "stewart_control.csv", "w", newline="") as f:
        w = csv.writer(f)
        keys = [k for k in summary["laws"][LAWS[0][1]]["conditions"][conditions[0]] if k != "estimates"]
        w.writerow(["space", "controller", "condition"] + keys)
        for space, controller, _ in LAWS:
            for cond in conditions:
                fig_ = summary["laws"][controller]["conditions"][cond]
                w.writerow([space, controller, cond] + [fig_[k] for k in keys])
    files.append("stewart_control.csv")
    summary["files"] = files
    return finish(summary, lines, out_dir, t0, progress)
