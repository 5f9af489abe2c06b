"""Codourey 1998 (seed 002) sec. 5.2, Fig. 7: tracking errors of the four regulators on the DELTA.

"Four different types of regulators were tested: 1. an independent PD controller on each axis, 2. a PD
controller with an acceleration feedforward component, 3. a PD controller with a full dynamic-model
feedforward term with T_m = 0, and [4.] same as point 3 above, but with T_m = 2 msec, all without the use
of the mass matrix", on "a semiellipse trajectory with a sine-on-ramp profile"; "overall improved
performance was obtained in passing from regulator 1 to regulator 4. The maximal tracking error was found
to be reduced by a factor of 6", and "the use of the mass matrix in the control loop leads to equivalent
results" (the scheme of Fig. 6: regulator 4 with the eq. 50 mass matrix in series with the PD).

Here: the controllers of config/controllers.yaml (``pd``, ``pd_acceleration_feedforward``,
``cf_rb_friction``, ``cf_rb_friction_lead``, ``mass_matrix_decoupling`` with the same lead) through the
controller core and ControlLoop on the simulated DELTA, whose drives have the first-order current lag
T_m = 2 ms (``actuator_lag``: the physical reason for regulator 4), at the paper's 1 ms sampling interval.
The paper gives neither the ellipse nor the robot's numbers, but the speed: pick-and-place "between two points
distant by 250 mm" at "a working rhythm superior to 3 Hz" (sec. 6), with sine-on-ramp "acceleration and
deceleration maximums of 80 m/sec^2" (Fig. 8). SPEC is a 250 mm semi-ellipse, 60 mm high, in 0.22 s: 78 m/s^2 peak
acceleration (3.6 m/s peak speed) along the arc, the arms at 16.6 of their 20 rad/s limit (config/delta.yaml: the
paper's 3 Hz rhythm, 0.17 s per move, would take them beyond it). The robot is config/delta.yaml, so only the
ordering and the factors compare.
"""

from __future__ import annotations

import csv
import pathlib
import time

import numpy as np

from . import finish

T_M = 0.002                       # s, "the rise time of the current in the motor"
DT = 0.001                        # s, "the sampling interval was fixed at 1 msec"
PAPER_FACTOR = 6.0                # regulator 1 -> 4: "reduced by a factor of 6"
SPEC = {"type": "semi_ellipse", "start": [-0.125, 0.0, -0.32], "goal": [0.125, 0.0, -0.32], "height": 0.06,
        "duration": 0.22, "profile": "sine_on_ramp"}
REST = 0.1                        # s of hold after the arc
#: (name, controller of controllers.yaml, what it is), in the order of the JSON's ``regulators`` list
REGULATORS = (("1", "pd", "independent PD on each axis"),
              ("2", "pd_acceleration_feedforward", "PD + acceleration feedforward"),
              ("3", "cf_rb_friction", "PD + full-model feedforward, T_m = 0"),
              ("4", "cf_rb_friction_lead", "PD + full-model feedforward, T_m = 2 ms"),
              ("decoupling", "mass_matrix_decoupling", "Fig. 6: 4 + eq. 50 mass matrix in series with the PD"))


def simulate(dyn, controller: str, trajectory, lag: float = T_M, dt: float = DT, progress=None):
    """One regulator on the lagged plant along ``trajectory``: (t, actuated errors q_d - q) per period
    (tracking.track: the loop's own lookup, and its feedforward lead, applies)."""
    from ...hardware import SimulatedRobot
    from .tracking import track

    run = track(dyn, controller, trajectory, SimulatedRobot(dyn, dt, actuator_lag=lag), dt, REST, progress=progress)
    return run.t, run.error


def run(out_dir: pathlib.Path, progress: bool = True) -> dict:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...dynamics import robot_dynamics
    from ...progress import progress_bar
    from ...trajectory import trajectory_from_spec

    t0 = time.perf_counter()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    dyn = robot_dynamics("delta")
    traj = trajectory_from_spec(dyn.kin, SPEC)
    n = int(round((traj.duration + REST) / DT))
    runs = {}
    with progress_bar(total=n * (len(REGULATORS) + 2), desc="delta regulators", disable=not progress) as bar:
        for label, controller, _ in REGULATORS:
            runs[label] = simulate(dyn, controller, traj, progress=bar)
        no_lag = {label: float(np.abs(simulate(dyn, controller, traj, lag=0.0, progress=bar)[1]).max())
                  for label, controller, _ in REGULATORS[2:4]}
    t = runs["1"][0]
    summary = {"robot": "delta", "paper": "Codourey 1998, IJRR 17(12), sec. 5.2, Fig. 7", "trajectory": SPEC,
               "rest_s": REST, "actuator_lag_s": T_M, "sampling_s": DT, "paper_factor_1_to_4": PAPER_FACTOR,
               "regulators": [], "files": []}
    lines = [f"Codourey Fig. 7: DELTA tracking errors, semi-ellipse {SPEC['start']} -> {SPEC['goal']} m, height "
             f"{SPEC['height']} m, {SPEC['duration']} s sine-on-ramp; plant with T_m = {T_M * 1e3:g} ms current lag, "
             f"{DT * 1e3:g} ms sampling",
             f"  {'regulator':9s} {'controller':28s} {'max |e| [mrad]':>15s} {'rms [mrad]':>11s}"]
    for label, controller, what in REGULATORS:
        e = runs[label][1]
        mx, rms = float(np.abs(e).max()), float(np.sqrt(np.mean(e ** 2)))
        summary["regulators"].append({"name": label, "controller": controller, "what": what, "max_error": mx,
                                      "rms_error": rms})              # rad, over every actuated joint
        lines.append(f"  {label:9s} {controller:28s} {1e3 * mx:15.4f} {1e3 * rms:11.4f}")
    mx = [r["max_error"] for r in summary["regulators"][:4]]
    factor = mx[0] / mx[3]
    summary["factor_1_to_4"] = factor
    summary["improves_from_1_to_4"] = bool(all(a > b for a, b in zip(mx, mx[1:])))
    summary["decoupling_over_4"] = summary["regulators"][4]["max_error"] / mx[3]
    lines.append(f"  max error regulator 1 / regulator 4: {factor:.2f} (paper: {PAPER_FACTOR:g}); each regulator "
                 f"better than the one before: {'yes' if summary['improves_from_1_to_4'] else 'no'} (paper: yes); "
                 f"mass-matrix decoupling / regulator 4: {summary['decoupling_over_4']:.2f} (paper: 'equivalent')")
    summary["without_lag_max_error_rad"] = no_lag
    lines.append(f"  without the current lag (T_m = 0 in the plant): regulator 3 {1e3 * no_lag['3']:.4f}, regulator 4 "
                 f"{1e3 * no_lag['4']:.4f} mrad: the lead helps only where the drive lags")
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    for j, ax in enumerate(axes):
        for label, controller, _ in REGULATORS:
            ax.plot(t, 1e3 * runs[label][1][:, j], label=f"{label}: {controller}", lw=1)
        ax.set_ylabel(f"e{j + 1} [mrad]")
        ax.grid(True, alpha=0.3)
    fig.legend(*axes[0].get_legend_handles_labels(), loc="upper center", ncol=3, fontsize=7,
               bbox_to_anchor=(0.5, 0.95))
    axes[-1].set_xlabel("t [s]")
    fig.suptitle(f"Codourey Fig. 7: tracking errors of regulators 1-4 (DELTA, T_m = {T_M * 1e3:g} ms current lag)")
    fig.savefig(out_dir / "delta_regulators.png", dpi=90)
    plt.close(fig)
    with open(out_dir / "delta_regulators.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t_s"] + [f"e{j + 1}_rad_regulator_{label}" for label, _, _ in REGULATORS for j in range(3)])
        for k in range(len(t)):
            w.writerow([t[k]] + [runs[label][1][k, j] for label, _, _ in REGULATORS for j in range(3)])
    summary["files"] = ["delta_regulators.png", "delta_regulators.csv"]
    return finish(summary, lines, out_dir, t0, progress)
