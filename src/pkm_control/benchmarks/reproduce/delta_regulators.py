"""Codourey 1998 (seed 002) sec. 5.2, Fig. 7: tracking errors of the four regulators on the DELTA, run as the paper
ran them: the controllers have the paper's model, the plant is not that model.

The paper: "Four different types of regulators were tested: 1. an independent PD controller on each axis, 2. a PD
controller with an acceleration feedforward component, 3. a PD controller with a full dynamic-model feedforward term
with T_m = 0, and [4.] same as point 3 above, but with T_m = 2 msec, all without the use of the mass matrix", on "a
semiellipse trajectory with a sine-on-ramp profile"; "overall improved performance was obtained in passing from
regulator 1 to regulator 4. The maximal tracking error was found to be reduced by a factor of 6", and "the use of
the mass matrix in the control loop leads to equivalent results; that is, the error is not further decreased" (the
scheme of Fig. 6: regulator 4 with the eq. 50 mass matrix in series with the PD). Fig. 7 itself gives the error
curves only; those three statements are what it reports.

The controllers (what the paper's had, sec. 5.1):

* the feedforward is "the inverse-dynamic model of the robot ... calculated based on eq. (58)": the simplified
  model, a third of each forearm's mass on the plate and two thirds at the elbow, no friction
  (dynamics/virtual_work.py ``simplified``, on the config's nominal parameters); regulator 2's acceleration
  feedforward is the diagonal of the eq. 50 mass matrix at home times the desired arm acceleration;
* the decoupling uses "the inertia matrix, calculated with the formulation of eq. (50)" (control/laws.py
  MassMatrixDecoupling);
* gains by one stated rule (``gains``), the same PD for every regulator.

The plant (what the paper's robot was to its model):

* the full multi-body model with friction in every joint, its parameters perturbed by up to +-MODEL_ERROR, seeded
  and physically consistent (identification/perturbation.py);
* the drives: the paper says only "an interval of T_m = 2 msec, which corresponds to the rise time of the current
  in the motor" (sec. 5.1) and "the sampling interval was fixed at 1 msec", with the dynamics and the mass matrix
  taking 704 + 233 us on their transputer (Table 1). Here: a transport delay of one sampling period (the command
  computed from a sample goes out at the next one, hardware/latency.py) and a first-order current loop whose 10-90 %
  rise time is T_m (time constant T_m / ln 9 = 0.91 ms, hardware/simulated.py ``actuator_lag``). Regulator 4's
  lead of T_m approaches this drive (1.91 ms of low-frequency delay) but does not cancel it;
* encoders: ENCODER_COUNTS counts per turn (the paper names no encoder: a representative direct-drive encoder),
  the velocity a backward difference of the quantized angle, taken as white noise of std res / (dt sqrt 6)
  (hardware/noise.py Sensors).

The paper gives neither the ellipse nor the robot's numbers, but the speed: pick-and-place "between two points
distant by 250 mm" at "a working rhythm superior to 3 Hz" (sec. 6), with sine-on-ramp "acceleration and
deceleration maximums of 80 m/sec^2" (Fig. 8). SPEC is a 250 mm semi-ellipse, 60 mm high, in 0.22 s: 78 m/s^2 peak
acceleration (3.6 m/s peak speed) along the arc, the arms at 16.6 of their 20 rad/s limit (config/delta.yaml). The
robot is config/delta.yaml, so only the ordering and the factors compare.

Also reported: a sweep of the model error (SWEEP, SEEDS) and the upper bound of the factor, the controllers knowing
the plant exactly (full model with friction, the same parameters) on a drive that is the bare first-order 2 ms lag
the lead cancels, exact encoders: what this reproduction gave before issue 25.
"""

from __future__ import annotations

import csv
import pathlib
import time
from functools import partial

import numpy as np

from . import finish

T_M = 0.002                       # s, "the rise time of the current in the motor" (sec. 5.1)
DT = 0.001                        # s, "the sampling interval was fixed at 1 msec" (sec. 5.1)
DELAY_PERIODS = 1                 # command out one sampling period after its sample (Table 1: 704 + 233 us of 1 ms)
CURRENT_LAG = T_M / np.log(9.0)   # s, first-order current loop whose 10-90 % rise time is T_M
ENCODER_COUNTS = 2 ** 16          # counts per turn (representative; the paper names no encoder)
PAPER_FACTOR = 6.0                # regulator 1 -> 4: "reduced by a factor of 6"
MODEL_ERROR = 0.2                 # the headline plant: every parameter within +-20 % of the controllers' model
SEED = 0                          # its perturbation seed
SWEEP = (0.0, 0.1, 0.2, 0.4)      # model errors of the sweep
SEEDS = (0, 1, 2)                 # perturbation seeds per model error of the sweep (one plant at 0)
DAMPING = 1.0                     # zeta of the gain rule (critically damped)
SPEC = {"type": "semi_ellipse", "start": [-0.125, 0.0, -0.32], "goal": [0.125, 0.0, -0.32], "height": 0.06,
        "duration": 0.22, "profile": "sine_on_ramp"}
REST = 0.1                        # s of hold after the arc
#: (name, controller of controllers.yaml, streamed feedforward, lead (s), what it is); gains from ``gains``
REGULATORS = (("1", "pd", None, 0.0, "independent PD on each axis"),
              ("2", "pd_feedforward", "acceleration", 0.0, "PD + diag(A(home), eq. 50) qdd_d"),
              ("3", "pd_feedforward", "eq58", 0.0, "PD + eq. 58 feedforward, T_m = 0"),
              ("4", "pd_feedforward", "eq58", T_M, "PD + eq. 58 feedforward, T_m = 2 ms"),
              ("decoupling", "mass_matrix_decoupling", "eq58", T_M, "Fig. 6: 4 + eq. 50 mass matrix in series"))


def gains(form, dt: float = DT) -> dict:
    """The PD of every regulator by one rule: closed-loop natural frequency omega = 1 / (4 T_sigma), T_sigma the sum
    of the loop's small time constants (the transport delay, the current loop's time constant and dt / 2 for the
    zero-order hold), damping DAMPING; on the inertia each axis sees at home by eq. 50 (A_ii, the same for the three
    axes there): kp = A_ii omega^2, kd = 2 zeta A_ii omega (Nm/rad, Nm s/rad); the decoupling's acceleration gains
    omega^2, 2 zeta omega. Also the phase margin of one axis, L(s) = (kd s + kp) / (A_ii s^2) e^(-s (delay + dt/2))
    / (1 + s T_c), at its crossover."""
    home = form.kin.home_pose()
    inertia = float(np.diag(form.joint_mass_matrix(home, "simplified")).mean())
    t_sigma = DELAY_PERIODS * dt + CURRENT_LAG + dt / 2
    w = 1.0 / (4.0 * t_sigma)
    kp_a, kd_a = w ** 2, 2 * DAMPING * w
    s = 1j * np.logspace(0, 5, 20001)
    loop = (kd_a * s + kp_a) / s ** 2 * np.exp(-s * (DELAY_PERIODS * dt + dt / 2)) / (1 + s * CURRENT_LAG)
    k = int(np.argmin(np.abs(np.abs(loop) - 1.0)))
    margin = 180.0 + np.degrees(np.angle(loop[k]))
    return {"rule": "omega = 1/(4 T_sigma), zeta = 1, on A_ii(home) of eq. 50", "t_sigma_s": t_sigma,
            "omega_rad_s": w, "zeta": DAMPING, "inertia_kg_m2": inertia, "kp": inertia * kp_a, "kd": inertia * kd_a,
            "kp_acceleration": kp_a, "kd_acceleration": kd_a, "crossover_rad_s": float(s[k].imag),
            "phase_margin_deg": float(margin)}


def feedforward(form, kind):
    """The streamed force of a regulator, on the controllers' model ``form`` (virtual_work.Formulation): eq. 58, or
    the acceleration feedforward diag(A(home), eq. 50) qdd_d (eq. 37 for qdd_d); None: the regulator has none."""
    if kind == "eq58":
        return partial(form.inverse_dynamics, model="simplified")
    if kind == "acceleration":
        home = form.kin.home_pose()
        inertia = np.diag(form.joint_mass_matrix(home, "simplified")).copy()
        return lambda pose, twist, accel: inertia * form.joint_motion(pose, twist, accel)[2]
    return lambda pose, twist, accel: np.zeros(3)


def plant(dyn, model_error: float, seed: int, dt: float = DT):
    """The robot the controllers drive: (SimulatedRobot, what the loop reads and writes, Perturbation or None).
    model_error 0: the full model with the config's own parameters (still not the controllers' eq. 58)."""
    from ...hardware import SimulatedRobot
    from ...hardware.latency import CommandDelay
    from ...hardware.noise import Sensors
    from ...identification.perturbation import perturbed_parameters

    pert = perturbed_parameters(dyn, model_error, seed) if model_error > 0 else None
    res = 2 * np.pi / ENCODER_COUNTS
    sensors = Sensors(np.full(dyn.model.n_actuated, res), velocity_std=res / (dt * np.sqrt(6.0)))
    robot = SimulatedRobot(dyn, dt, actuator_lag=CURRENT_LAG, true_parameters=None if pert is None else pert.parameters,
                           sensors=sensors, measurement_seed=seed)
    return robot, CommandDelay(robot, DELAY_PERIODS), pert


def run_regulator(dyn, form, regulator, trajectory, gain, model_error=MODEL_ERROR, seed=SEED, progress=None):
    """One regulator (a row of REGULATORS) on the plant of ``model_error``, ``seed``: (t, q_d - q) per period."""
    from .tracking import track

    _, controller, kind, lead, _ = regulator
    robot, hardware, _ = plant(dyn, model_error, seed)
    decoupling = controller == "mass_matrix_decoupling"
    overrides = {"kp": gain["kp_acceleration" if decoupling else "kp"],
                 "kd": gain["kd_acceleration" if decoupling else "kd"], "feedforward_lead": lead}
    r = track(dyn, controller, trajectory, robot, DT, REST, hardware, progress=progress, overrides=overrides,
              feedforward=feedforward(form, kind))
    return r.t, r.error


def upper_bound(dyn, regulator, trajectory, gain, progress=None) -> float:
    """Max |q_d - q| of regulator 1 or 3-4 (the full model with friction as their feedforward: the controllers know
    the plant exactly, the plant = the model) on a bare first-order T_m lag and exact encoders."""
    from ...hardware import SimulatedRobot
    from .tracking import track

    _, controller, _, lead, _ = regulator
    overrides = {"kp": gain["kp"], "kd": gain["kd"], "feedforward_lead": lead}
    r = track(dyn, controller, trajectory, SimulatedRobot(dyn, DT, actuator_lag=T_M), DT, REST, progress=progress,
              overrides=overrides)
    return float(np.abs(r.error).max())


def run(out_dir: pathlib.Path, progress: bool = True) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...dynamics import robot_dynamics
    from ...dynamics.formulations import formulation
    from ...progress import progress_bar
    from ...trajectory import trajectory_from_spec

    t0 = time.perf_counter()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dyn = robot_dynamics("delta")
    form = formulation("virtual_work", dyn)
    gain = gains(form)
    traj = trajectory_from_spec(dyn.kin, SPEC)
    n = int(round((traj.duration + REST) / DT))
    sweep_plants = [(e, s) for e in SWEEP for s in (SEEDS if e > 0 else SEEDS[:1]) if (e, s) != (MODEL_ERROR, SEED)]
    reg1, reg4 = REGULATORS[0], REGULATORS[3]
    runs, sweep = {}, {}
    with progress_bar(total=n * (len(REGULATORS) + 2 + 2 * len(sweep_plants)), desc="delta regulators",
                      disable=not progress) as bar:
        for reg in REGULATORS:
            runs[reg[0]] = run_regulator(dyn, form, reg, traj, gain, progress=bar)
        bound = {reg[0]: upper_bound(dyn, reg, traj, gain, progress=bar) for reg in (reg1, reg4)}
        for e, s in sweep_plants:
            sweep[e, s] = [float(np.abs(run_regulator(dyn, form, reg, traj, gain, e, s, progress=bar)[1]).max())
                           for reg in (reg1, reg4)]
    t = runs["1"][0]
    mx = {label: float(np.abs(runs[label][1]).max()) for label in runs}
    sweep[MODEL_ERROR, SEED] = [mx["1"], mx["4"]]
    factor = mx["1"] / mx["4"]
    bound_factor = bound["1"] / bound["4"]
    order = [mx[reg[0]] for reg in REGULATORS[:4]]
    by_error = {e: [sweep[k][0] / sweep[k][1] for k in sorted(sweep) if k[0] == e] for e in SWEEP}
    summary = {"robot": "delta", "paper": "Codourey 1998, IJRR 17(12), sec. 5.2, Fig. 7", "trajectory": SPEC,
               "rest_s": REST, "sampling_s": DT, "paper_factor_1_to_4": PAPER_FACTOR,
               "controllers_model": "eq. 58 simplified model (feedforward), eq. 50 (decoupling), nominal parameters, "
                                    "no friction",
               "plant": {"model": "full multi-body model with friction", "model_error": MODEL_ERROR, "seed": SEED,
                         "transport_delay_s": DELAY_PERIODS * DT, "current_lag_s": CURRENT_LAG,
                         "current_rise_time_10_90_s": T_M, "encoder_counts_per_turn": ENCODER_COUNTS},
               "gains": gain, "regulators": [], "factor_1_to_4": factor,
               "improves_from_1_to_4": bool(all(a > b for a, b in zip(order, order[1:]))),
               "decoupling_over_4": mx["decoupling"] / mx["4"],
               "factor_1_to_4_mean_over_seeds": float(np.mean(by_error[MODEL_ERROR])),
               "upper_bound": {"max_error_rad": bound, "factor_1_to_4": bound_factor},
               "sweep": [{"model_error": e, "factors": by_error[e]} for e in SWEEP], "files": []}
    lines = [f"Codourey Fig. 7: DELTA tracking errors, semi-ellipse {SPEC['start']} -> {SPEC['goal']} m, height "
             f"{SPEC['height']} m, {SPEC['duration']} s sine-on-ramp, {DT * 1e3:g} ms sampling",
             "  controllers' model: eq. 58 (simplified: 1/3 of each forearm on the plate, 2/3 at the elbow), eq. 50 "
             "for the decoupling, the config's nominal parameters, no friction",
             f"  plant: full multi-body model with friction, every parameter within +-{100 * MODEL_ERROR:g} % (seed "
             f"{SEED}); drive {DELAY_PERIODS * DT * 1e3:g} ms transport delay + first-order current loop "
             f"T_c = {CURRENT_LAG * 1e3:.2f} ms (10-90 % rise {T_M * 1e3:g} ms, the paper's T_m); encoders "
             f"{ENCODER_COUNTS} counts/turn",
             f"  gains ({gain['rule']}): T_sigma {gain['t_sigma_s'] * 1e3:.2f} ms, omega {gain['omega_rad_s']:.1f} "
             f"rad/s, A_ii {gain['inertia_kg_m2']:.4g} kg m^2 -> kp {gain['kp']:.4g} Nm/rad, kd {gain['kd']:.4g} "
             f"Nm s/rad (decoupling {gain['kp_acceleration']:.4g} 1/s^2, {gain['kd_acceleration']:.4g} 1/s); "
             f"crossover {gain['crossover_rad_s']:.0f} rad/s, phase margin {gain['phase_margin_deg']:.0f} deg",
             f"  {'regulator':10s} {'what':40s} {'max |e| [mrad]':>15s} {'rms [mrad]':>11s}"]
    for label, controller, kind, lead, what in REGULATORS:
        e = runs[label][1]
        rms = float(np.sqrt(np.mean(e ** 2)))
        summary["regulators"].append({"name": label, "controller": controller, "feedforward": kind,
                                      "feedforward_lead_s": lead, "what": what, "max_error": mx[label],
                                      "rms_error": rms})              # rad, over every actuated joint
        lines.append(f"  {label:10s} {what:40s} {1e3 * mx[label]:15.4f} {1e3 * rms:11.4f}")
    seeds = by_error[MODEL_ERROR]
    lines += [f"  max error regulator 1 / regulator 4: {factor:.2f} on this plant; on the {len(seeds)} plants of "
              f"+-{100 * MODEL_ERROR:g} %: {min(seeds):.2f} to {max(seeds):.2f}, mean {np.mean(seeds):.2f} (paper: "
              f"'reduced by a factor of {PAPER_FACTOR:g}'); each regulator better than the one before: "
              f"{'yes' if summary['improves_from_1_to_4'] else 'no'} (paper: 'the more complete the model was made, "
              f"the better'); decoupling / regulator 4: {summary['decoupling_over_4']:.2f} (paper: 'equivalent "
              f"results; that is, the error is not further decreased')",
              "  model error sweep, factor regulator 1 / 4 per seed " + "; ".join(
                  f"+-{100 * e:g} %: " + ", ".join(f"{f:.2f}" for f in by_error[e]) for e in SWEEP),
              f"  upper bound (controllers' model = plant: full model + friction, bare {T_M * 1e3:g} ms lag the lead "
              f"cancels, exact encoders): regulator 1 {1e3 * bound['1']:.3f}, regulator 4 {1e3 * bound['4']:.4f} "
              f"mrad, factor {bound_factor:.1f}",
              "  what differs from the paper beyond the model: the ellipse's size and duration, the robot's masses and "
              "lengths, the gains, the encoder and the current loop are not in the paper (all representative here); "
              "its accelerations came from numerical differentiation, here from the trajectory"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for j, ax in enumerate(axes):
        for label, _, _, _, what in REGULATORS:
            ax.plot(t, 1e3 * runs[label][1][:, j], label=f"{label}: {what}", lw=1)
        ax.set_ylabel(f"e{j + 1} = q_d - q [mrad]")
        ax.grid(True, alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=2, fontsize=7,
               bbox_to_anchor=(0.5, 0.94))
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"Codourey Fig. 7: tracking errors of regulators 1-4 (DELTA; plant +-{100 * MODEL_ERROR:g} % from the "
                 f"controllers' eq. 58 model)", fontsize=10)
    fig.savefig(out_dir / "delta_regulators.png", dpi=90)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(7, 4.5))
    pct = [100 * e for e in SWEEP]
    for k, s in enumerate(SEEDS):
        pts = [(100 * e, sweep[e, s][0] / sweep[e, s][1]) for e in SWEEP if (e, s) in sweep]
        ax.plot(*zip(*pts), "o", ms=5, alpha=0.7, label="one perturbation seed each" if k == 0 else None,
                color="tab:blue")
    ax.plot(pct, [np.mean(by_error[e]) for e in SWEEP], "-", color="tab:blue", label="mean over the seeds")
    ax.axhline(PAPER_FACTOR, color="tab:green", ls="--", label=f"paper: factor {PAPER_FACTOR:g}")
    ax.axhline(bound_factor, color="tab:red", ls=":", label=f"upper bound {bound_factor:.0f}: controllers' model = "
                                                              f"plant, lag cancelled by the lead")
    ax.set_xlabel("model error: plant parameters within +- [%] of the controllers' model")
    ax.set_ylabel("max |e| regulator 1 / max |e| regulator 4 [-]")
    ax.set_yscale("log")
    ax.set_ylim(4.0, 100.0)
    ax.set_yticks([5, 10, 20, 50, 100], ["5", "10", "20", "50", "100"])
    ax.set_xticks(pct)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    ax.set_title("Codourey sec. 5.2: improvement from regulator 1 to 4 vs model error (DELTA)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_dir / "delta_regulators_model_error.png", dpi=90)
    plt.close(fig)
    with open(out_dir / "delta_regulators.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s"] + [f"e{j + 1}_rad_regulator_{reg[0]}" for reg in REGULATORS for j in range(3)])
        for k in range(len(t)):
            w.writerow([t[k]] + [runs[reg[0]][1][k, j] for reg in REGULATORS for j in range(3)])
    summary["files"] = ["delta_regulators.png", "delta_regulators_model_error.png", "delta_regulators.csv"]
    return finish(summary, lines, out_dir, t0, progress)
