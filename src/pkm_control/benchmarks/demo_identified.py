"""`pkm demo --identified`: the PaLiDA benchmark against a robot that is not the model, with identified parameters.

What a team does on its machine (Abdellatif et al. sec. V: the control improvement "is always close-knit with
reliable model identification"), here against a simulated PaLiDA whose parameters are not the config's:

1. the "true" robot: the config's parameters perturbed by up to +-scale (``identification.perturbation``), and a
   measurement as a drive gives it (quantized encoders, noisy forces; ``hardware.simulated``);
2. excitation: a Fourier trajectory optimized for the condition number of the base regressor
   (``identification.excitation``, Swevers et al.);
3. recording: the excitation run through the node graph (computed force with the NOMINAL parameters, the best a
   team has before identifying), recorded into a rosbag2 (``bringup --record``);
4. identification: base parameters by weighted least squares from the bag (``identification.estimation``);
5. the benchmark circle (not used for identification) through the graph: SJ, then computed force (rigid body +
   friction) with the nominal, the identified and the true parameters. The SJ run is also recorded into a bag:
   its measured forces against the forces each parameter set predicts on its measured motion (the same filtering
   and differentiation as the identification) are Abdellatif's Fig. 5 for three models.

Writes ``palida_identification.json`` (``sets``: nominal / identified / true, each with ``force_prediction_rms``
in N and ``tracking_rms`` in m, the CF rb+frict run; the identified parameters with relative standard
deviations), the parameter files, the bags and two figures.
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from . import palida as bm
from ..identification.runs import run_metrics
from ..dynamics import robot_dynamics
from ..errors import InvalidInputError
from ..hardware.simulated import DEFAULT_SIGN_EPS
from ..trajectory import trajectory_from_spec
from ..ros.topology import domain_id
from .demo import ROBOT, DemoOptions, LostSamples, run_one
from .report import Column, Provenance, Table, write_json

#: (name in the table and JSON, controller, parameter set of computed_force)
RUNS = (("SJ", "pd", None), ("CF nominal", "cf_rb_friction", "nominal"),
        ("CF identified", "cf_rb_friction", "identified"), ("CF true", "cf_rb_friction", "true"))
SETS = ("nominal", "identified", "true")
#: what each CF run's model is to the plant (issue 25): the JSON's ``models``, the lines after the table
MODELS = {"nominal": "the config's nominal parameters (before identification)",
          "identified": "base parameters identified on the plant (the fair figure)",
          "true": "the plant's own parameters: the controllers know the plant exactly (an upper bound)"}
#: s dropped at both ends of the recorded circle for the force prediction (observation's default, 0.75 s at 20 Hz,
#: would leave a fraction of the 1.8 s circle; the bag's ends are the rest before the start and the ramp down)
PREDICTION_EDGE = 0.1
#: m/s: below this speed a joint's equation is left out of the identification (tanh(3) = 0.995: above it the
#: simulated robot's smoothed Coulomb friction is the model's sign to 0.5 %)
MIN_SPEED = 3 * DEFAULT_SIGN_EPS
#: task speed and acceleration limits of the excitation (m/s, rad/s; m/s^2, rad/s^2)
EXCITATION_VELOCITY, EXCITATION_ACCELERATION = (1.2, 2.0), (10.0, 20.0)
METHODS = ("ols", "wls")
#: recordings of the excitation before the demo gives up on a bag with gaps (each refusal is said on stderr)
EXCITATION_RECORDINGS = 3
STRUCTURES = ("jourdain", "per-body")


@dataclass(frozen=True)
class IdentifiedOptions:
    """What `pkm demo --identified` adds to the demo's options (cli.benchmarks.identified_options reads it from the
    command line); absurd values are refused as it is made, before anything runs (the later steps check theirs
    again, by name)."""

    perturb_seed: int = 1                  # seed of the true robot
    perturb_scale: float = 0.2             # largest relative change of a parameter of the true robot
    encoder_resolution: float = 1e-6       # m per count
    effort_noise_std: float = 2.0          # N, force measurement noise
    excitation_duration: float = 6.0       # s, the excitation's period
    harmonics: int = 5                     # of the excitation
    evaluations: int = 200                 # condition-number evaluations of the excitation design
    method: str = "wls"                    # least squares: ols or wls
    min_speed: float = MIN_SPEED           # m/s: slower joints' equations are left out of the identification
    structure: str = "jourdain"            # base parameters: jourdain (Table I) or per-body

    def __post_init__(self):
        for name, low, high in (("encoder_resolution", 0.0, 1e-2), ("effort_noise_std", 0.0, 1e3),
                                ("perturb_scale", 0.0, 0.99), ("excitation_duration", 0.5, 600.0),
                                ("min_speed", 0.0, 1.0)):
            value = getattr(self, name)
            if not (math.isfinite(value) and low <= value <= high):
                raise InvalidInputError(f"--{name.replace('_', '-')} must be within [{low:g}, {high:g}], "
                                        f"got {value!r}")
        for name, low, high in (("harmonics", 2, 100), ("evaluations", 1, 100_000), ("perturb_seed", 0, 2 ** 32 - 1)):
            if not low <= getattr(self, name) <= high:
                raise InvalidInputError(f"--{name.replace('_', '-')} must be within [{low}, {high}], "
                                        f"got {getattr(self, name)}")
        if self.method not in METHODS:
            raise InvalidInputError(f"--method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.structure not in STRUCTURES:
            raise InvalidInputError(f"--structure must be one of {', '.join(STRUCTURES)}, got {self.structure!r}")


def _measurement(options: IdentifiedOptions) -> tuple[str, ...]:
    """The simulated robot's measurement: bringup's --set items."""
    return (f"encoder_resolution={options.encoder_resolution!r}", f"effort_noise_std={options.effort_noise_std!r}",
            "measurement_seed=1")


def _log(demo: DemoOptions, text):
    if not demo.quiet:
        print(text, file=sys.stderr, flush=True)


def force_predictions(run, dyn, values: dict, base):
    """The measured forces and those each set of base ``values`` predicts on the run's measured motion.

    Same observation as the identification (identification.estimation.observation: filtered, differentiated,
    decimated in parallel). Returns (t (m,), measured (m, n), {set: predicted (m, n)}).
    """
    from ..identification.estimation import observation

    obs = observation(run, base, edge=PREDICTION_EDGE)
    n = dyn.model.n_actuated
    measured = obs.y.reshape(-1, n)
    return obs.t[::n], measured, {k: (obs.W @ v).reshape(-1, n) for k, v in values.items()}


def prediction_figure(t, measured, predicted: dict, units):
    """Abdellatif Fig. 5 for three models: measured forces and those each parameter set predicts."""
    import matplotlib.pyplot as plt

    n = measured.shape[1]
    fig, axes = plt.subplots(n, 2, figsize=(12, 1.5 * n + 1.4), sharex=True, squeeze=False, layout="constrained")
    for k in range(n):
        axes[k, 0].plot(t, measured[:, k], color="k", lw=1.2, label="measured")
        for name, f in predicted.items():
            axes[k, 0].plot(t, f[:, k], lw=0.9, ls="--", label=f"predicted, {name}")
            axes[k, 1].plot(t, f[:, k] - measured[:, k], lw=0.8, label=name)
        axes[k, 0].set_ylabel(f"F{k + 1} [{units[k][1]}]")
        axes[k, 1].set_ylabel(f"error F{k + 1} [{units[k][1]}]")
        axes[k, 1].axhline(0.0, color="0.6", lw=0.5)
    axes[0, 0].set_title("actuator forces", fontsize=10)
    axes[0, 1].set_title("predicted - measured", fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("t since trajectory start [s]")
    rms = ", ".join(f"{k} {np.sqrt(np.mean((f - measured) ** 2)):.3g}" for k, f in predicted.items())
    fig.suptitle(f"PaLiDA benchmark circle (SJ run): measured vs predicted forces (cf. Abdellatif Fig. 5); "
                 f"RMS prediction error [{units[0][1]}]: {rms}", fontsize=10)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=len(labels), fontsize=9, frameon=False)
    return fig


def run(demo: DemoOptions, options: IdentifiedOptions) -> dict:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ..control.feedforward import dynamics_with_parameters
    from ..dynamics.parameters import BaseModel
    from ..identification.estimation import identify, write_identification
    from ..identification.excitation import design_excitation, write_excitation
    from ..identification.perturbation import perturbed_parameters, write_perturbation
    from ..identification.recording import load_measured_run

    started = time.perf_counter()
    out = Path(demo.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ["ROS_DOMAIN_ID"] = str(domain_id(demo.domain_id))
    _log(demo, f"ROS_DOMAIN_ID={os.environ['ROS_DOMAIN_ID']} (watch with the same domain in a second shell)")
    dyn = robot_dynamics(ROBOT)
    kin = dyn.kin
    files = {}

    # 1. the true robot
    table_i = options.structure == "jourdain"
    truth = perturbed_parameters(dyn, options.perturb_scale, options.perturb_seed, identical_legs=table_i,
                                 keep_axes=table_i)
    files["true"] = out / "palida_true_parameters.yaml"
    write_perturbation(files["true"], truth, f"pkm perturb --robot palida --seed {options.perturb_seed} --scale "
                                             f"{options.perturb_scale:g}{' --identical-legs --keep-axes' * table_i} "
                                             f"(pkm demo --identified --structure {options.structure})")
    _log(demo, f"[1/5] true robot: {truth.summary()}")
    plant = {"true_parameters": str(files["true"]), "overrides": _measurement(options)}

    # 2. excitation
    # per-body: the Coulomb columns' sign smoothed as the simulated robot smooths it (identification.estimation
    # .identify); Table I takes the paper's exact sign (the smoothing differs only below a few mm/s)
    sign_eps = 0.0 if table_i else DEFAULT_SIGN_EPS
    base = BaseModel(dyn, options.structure, sign_eps=sign_eps)
    # up to the circle's speed and acceleration (1 m/s, 6.7 m/s^2): identified where the model will be used
    spec, report = design_excitation(dyn, options.excitation_duration, options.harmonics,
                                     evaluations=options.evaluations, max_velocity=EXCITATION_VELOCITY,
                                     max_acceleration=EXCITATION_ACCELERATION, progress=not demo.quiet)
    files["excitation"] = out / "palida_excitation.yaml"
    write_excitation(files["excitation"], dyn, spec, report, "pkm demo --identified")
    _log(demo, f"[2/5] excitation: {options.harmonics} harmonics, {options.excitation_duration:g} s, condition number "
               f"{report.condition:.4g} (baseline {report.baseline_condition:.4g})")

    # 3. recording the excitation run (computed force with the nominal parameters)
    files["excitation_bag"] = out / "palida_excitation_bag"
    excitation_traj = trajectory_from_spec(kin, spec)
    for attempt in range(1, EXCITATION_RECORDINGS + 1):
        try:     # a recording that lost samples is refused (run_one; load_measured_run: a gap in the window)
            _, exc_summary = run_one("excitation", "cf_rb_friction", spec, None, excitation_traj.duration + 1.0,
                                     demo.timeout, demo.quiet, **plant, record=str(files["excitation_bag"]))
            # the excitation itself: not the approach move to its start (slow joints, where no friction model fits)
            t0 = float(exc_summary["goal_start"])
            measured = load_measured_run(files["excitation_bag"], ROBOT, start=t0, end=t0 + excitation_traj.duration)
            break
        except (InvalidInputError, LostSamples) as exc:
            if attempt == EXCITATION_RECORDINGS or not (isinstance(exc, LostSamples) or "a gap of" in str(exc)):
                raise
            print(f"pkm demo --identified: recording {attempt} of the excitation is refused ({exc}); recording it "
                  f"again", file=sys.stderr, flush=True)
            shutil.rmtree(files["excitation_bag"])
    _log(demo, f"[3/5] recorded {files['excitation_bag']} (recording {attempt})")

    # 4. identification
    ident = identify(measured, dyn, method=options.method, base=base, sign_eps=sign_eps,
                     min_speed=options.min_speed, progress=not demo.quiet)
    files["identified"] = out / "palida_identified_parameters.yaml"
    write_identification(files["identified"], ident)
    _log(demo, f"[4/5] identified {len(ident.names)} base parameters ({options.method.upper()}), condition number "
               f"{ident.condition_number:.4g}; consistency: {'ok' if not ident.consistency else ident.consistency}")

    # 5. the benchmark circle against the true robot
    circle = bm.benchmark_spec(demo.radius, demo.laps, demo.ramp_time)
    traj = trajectory_from_spec(kin, circle)
    start = kin.task.coordinates(traj.start_pose).tolist()
    files["circle_bag"] = out / "palida_identification_sj_bag"
    metrics, records = [], []
    for name, controller, pset in RUNS:
        overrides = plant["overrides"]
        if pset not in (None, "nominal"):
            overrides += (f"computed_force.parameters_file={files[pset].resolve()}",)
        rec, summary = run_one(name, controller, circle, start, 0.5 + traj.duration, demo.timeout, demo.quiet,
                               overrides, true_parameters=plant["true_parameters"],
                               record=str(files["circle_bag"]) if name == "SJ" else None)
        m = run_metrics(kin, traj, rec, summary["goal_start"])
        m["parameters"] = pset
        if name == "SJ":
            sj_start = float(summary["goal_start"])
        metrics.append(m)
        records.append(rec)
    bm.add_improvement(metrics, "SJ")

    # the circle itself, as the identification takes the excitation: the bag also holds the stand-still after it
    # (until the graph stops), where a quantized velocity flips the Coulomb friction's sign in every prediction
    sj = load_measured_run(files["circle_bag"], ROBOT, start=sj_start, end=sj_start + traj.duration)
    values = {"nominal": base.values_of(dyn), "identified": np.asarray(ident.values),
              "true": base.values_of(dynamics_with_parameters(dyn, files["true"]))}
    t, f_measured, f_predicted = force_predictions(sj, dyn, values, base)
    units = bm.joint_units(ROBOT, kin.model.actuated_joints)
    fig = prediction_figure(t - sj_start, f_measured, f_predicted, units)
    fig.savefig(out / "palida_identification_forces.png", dpi=110)
    plt.close(fig)
    fig = bm.errors_figure(metrics, units)
    fig.savefig(out / "palida_identification_errors.png", dpi=110)
    plt.close(fig)

    def rms(x):
        return float(np.sqrt(np.mean(np.square(x))))

    by_set = {m["parameters"]: m for m in metrics if m["parameters"]}
    sets = {k: {"force_prediction_rms": rms(f_predicted[k] - f_measured),
                "force_prediction_rms_per_actuator": np.sqrt(np.mean((f_predicted[k] - f_measured) ** 2,
                                                                     axis=0)).tolist(),
                "tracking_rms": rms(by_set[k]["actuator_rms"]),
                "tracking_max": float(np.max(by_set[k]["actuator_max"])),
                "improvement_over_sj": by_set[k]["improvement"]} for k in SETS}
    summary = {
        "robot": ROBOT, "sets": sets,
        "sj": {"tracking_rms": rms(metrics[0]["actuator_rms"]),
               "tracking_max": float(np.max(metrics[0]["actuator_max"]))},
        "true_robot": {"seed": truth.seed, "scale": truth.scale, "max_relative_change": truth.max_relative_change,
                       "encoder_resolution_m": options.encoder_resolution,
                       "effort_noise_std_n": options.effort_noise_std},
        "excitation": {"spec": spec, "recordings": attempt, "condition": report.condition,
                       "baseline_condition": report.baseline_condition, "harmonics": options.harmonics,
                       "duration_s": options.excitation_duration},
        "identified": {"method": ident.method, "structure": ident.structure, "min_speed": options.min_speed,
                       "window_s": [t0, t0 + excitation_traj.duration], "condition_number":
                       ident.condition_number, "rows": ident.rows, "consistency": list(ident.consistency),
                       "parameters": [{"name": n, "value": float(v), "relative_std_percent": float(s),
                                       "true": float(tv), "expression": e}
                                      for n, v, s, tv, e in zip(ident.names, ident.values, ident.relative_std,
                                                                values["true"], ident.expressions)]},
        "models": {"controllers_model": MODELS,
                   "plant": f"the config's parameters perturbed by up to +-{100 * truth.scale:g} % (seed {truth.seed}, "
                            f"structure {options.structure}), encoders {options.encoder_resolution:g} m, force noise "
                            f"{options.effort_noise_std:g} N"},
        "runs": [{k: v for k, v in m.items() if not k.startswith("_")} for m in metrics],
        "circle": circle, "files": {k: str(v) for k, v in files.items()},
        "seconds": time.perf_counter() - started,
    }
    summary = write_json(out / "palida_identification.json", summary, Provenance.now())
    # with --json (the CLI prints the summary) the table goes to stderr: stdout is the JSON alone
    print(table(summary), file=sys.stderr if demo.json else sys.stdout)
    return summary


def table(s: dict) -> str:
    """The summary's table (``report.Table``): per parameter set the force prediction and the CF rb+frict run's
    tracking beside SJ's."""
    columns = (Column("parameters", align="<"), Column("force prediction RMS", "N", ".3f"),
               Column("CF rb+frict RMS", "mm", ".4f"), Column("max", "mm", ".4f"), Column("x SJ", "", ".1f"))
    rows = [(k, v["force_prediction_rms"], 1e3 * v["tracking_rms"], 1e3 * v["tracking_max"], v["improvement_over_sj"])
            for k, v in s["sets"].items()]
    rows.append(("SJ (no model)", None, 1e3 * s["sj"]["tracking_rms"], 1e3 * s["sj"]["tracking_max"], 1.0))
    notes = (f"identified: {len(s['identified']['parameters'])} base parameters, {s['identified']['method']}, "
             f"condition number {s['identified']['condition_number']:.4g}; excitation condition number "
             f"{s['excitation']['condition']:.4g} (baseline {s['excitation']['baseline_condition']:.4g})",
             f"results in {Path(s['files']['true']).parent}/: palida_identification.json, "
             f"palida_identification_forces.png (cf. Fig. 5), palida_identification_errors.png, parameter files "
             f"and bags ({s['seconds']:.0f} s)",
             "controllers' model (computed force): " + "; ".join(f"{k}: {v}" for k, v in MODELS.items()),
             f"fair improvement (identified) x SJ {s['sets']['identified']['improvement_over_sj']:.1f}; upper bound "
             f"(true) x SJ {s['sets']['true']['improvement_over_sj']:.1f}")
    title = (f"PaLiDA benchmark circle against a perturbed robot (up to +-{100 * s['true_robot']['scale']:g} %, seed "
             f"{s['true_robot']['seed']}; encoders {1e6 * s['true_robot']['encoder_resolution_m']:g} um, force noise "
             f"{s['true_robot']['effort_noise_std_n']:g} N)")
    return Table(title, s["robot"], columns, tuple(rows), notes).text(Provenance.of(s))
