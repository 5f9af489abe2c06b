"""Reproduction of Wu et al. 2009 (seed 003), sec. 5: Tables 1-2 and the driving forces of Fig. 2-3.

``pkm reproduce planar_redundant``. The platform moves on a straight line in (x, y, alpha) from
(0.3 m, 3.2 m, pi/3) to (0.9 m, 2.3 m, 0) through accelerating, constant-velocity and decelerating
phases (a trapezoidal velocity profile); the driving forces are Wu's pivotal-point virtual-work
dynamics (``dynamics.pivotal_virtual_work``): minimum norm (eq. 39) for the redundant robot
(Fig. 2), J_N^-T Omega_N p_NN (eq. 38) for the nonredundant one with strut E1B1 removed (Fig. 3).
Every sample is cross-checked against the generic engine (friction off, as in Wu's model).

Timing: the paper states neither the duration nor a velocity. We take the three phases in the
ratio 1 : 2 : 1 (ramps of T/4) and the shortest duration, rounded up to 0.1 s, for which every
joint of both robots stays within its velocity limit in the config (sliders, struts and
counterweights 1 m/s, revolutes 3 rad/s): that is a full-speed motion of the machine as modelled.
A quasi-static pass (same path, zero velocity and acceleration) separates the gravity part.
"""

from __future__ import annotations

import csv
import json
import math
import pathlib
import time

import numpy as np

from ..dynamics import robot_dynamics
from ..dynamics.pivotal_virtual_work import Formulation
from ..kinematics.task_space import Pose, rot_z
from ..trajectory.profiles import trapezoidal

ROBOT = "planar_redundant"
X_START = np.array([0.3, 3.2, math.pi / 3])      # Wu sec. 5
X_END = np.array([0.9, 2.3, 0.0])
RAMP_FRACTION = 0.25                               # accelerate : cruise : decelerate = 1 : 2 : 1
N_SAMPLES = 401

# Wu Table 1 (mm) and Table 2 (kg), printed beside the config values
PAPER_TABLE1 = {"d": 1200.0, "l": 1200.0, "l5": 250.0, "l6": 250.0}
PAPER_TABLE2 = {"m_N": 150.0, "m_i1 (slider)": 120.0, "m_i2 (constant-length link)": 220.0,
                "m_i3 (strut upper part)": 60.0, "m_i4 (strut lower part)": 20.0,
                "m_i5 (counterweight)": 495.0}


def _pose(X):
    return Pose(np.array([X[0], X[1], 0.0]), rot_z(-X[2]))    # Wu's alpha is clockwise


def _tables(cfg):
    geo, b = cfg["geometry"], cfg["bodies"]
    t1 = {"d": 1000.0 * (geo["column_x"][1] - geo["column_x"][0]), "l": 1000.0 * geo["l"],
          "l5": 1000.0 * geo["l5"], "l6": 1000.0 * geo["l6"]}
    t2 = {"m_N": b["platform"]["mass"], "m_i1 (slider)": b["slider"]["mass"],
          "m_i2 (constant-length link)": b["link"]["mass"], "m_i3 (strut upper part)": b["strut_upper"]["mass"],
          "m_i4 (strut lower part)": b["strut_lower"]["mass"], "m_i5 (counterweight)": b["counterweight"]["mass"]}
    return t1, t2


def _speed_ratio(kin, X, Xd):
    """max over joints of |qdot| / velocity limit at one state."""
    m = kin.inverse(_pose(X), Xd)
    lim = np.asarray(kin.model.model.velocityLimit, float)
    rest = kin.model.passive_idx.tolist() + kin.model.actuated_idx.tolist()
    return float(np.max(np.abs(m.v[rest]) / lim[rest]))


def choose_duration(kins, n=201):
    """Shortest T (0.1 s steps) with every joint speed within its limit (speeds scale as 1/T)."""
    s = np.linspace(0.0, 1.0, n)
    # unit-duration profile: the joint speeds at duration T are those at T = 1 divided by T
    _, ds, _ = trapezoidal(s, 1.0, RAMP_FRACTION)
    worst = 0.0
    for kin in kins:
        for si, dsi in zip(s, ds):
            ss, _, _ = trapezoidal(si, 1.0, RAMP_FRACTION)
            X = X_START + ss * (X_END - X_START)
            worst = max(worst, _speed_ratio(kin, X, (X_END - X_START) * dsi))
    return math.ceil(worst * 10.0 - 1e-9) / 10.0, worst


def _forces(F, dyn, X, Xd, Xdd, static=False):
    tau, err = [], 0.0
    for x, xd, xdd in zip(X, Xd, Xdd):
        if static:
            xd, xdd = np.zeros(3), np.zeros(3)
        pose = _pose(x)
        t = F.inverse_dynamics(pose, xd, xdd)
        ref = dyn.inverse_dynamics(pose, xd, xdd, friction=False).tau
        err = max(err, float(np.abs(t - ref).max() / max(np.abs(ref).max(), 1e-300)))
        tau.append(t)
    return np.array(tau), err


def _plot(path, t, tau, labels, title, static=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    styles = ["-", "--", "-.", ":"]
    for k, lab in enumerate(labels):
        ax.plot(t, tau[:, k], styles[k % 4], lw=1.8, label=lab)
    if static is not None:
        for k, lab in enumerate(labels[:2]):
            ax.plot(t, static[:, k], color="grey", lw=0.8, ls=styles[k], label=f"{lab} quasi-static")
    ax.axhline(0.0, color="k", lw=0.5)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("driving force (N)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _plot_motion(path, t, X, Xd):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axs = plt.subplots(2, 2, figsize=(9, 5.5), sharex=True)
    axs[0, 0].plot(t, X[:, 0], label="x")
    axs[0, 0].plot(t, X[:, 1], label="y")
    axs[0, 0].set_ylabel("position (m)")
    axs[0, 0].set_title("platform point A1", fontsize=10)
    axs[0, 1].plot(t, X[:, 2], color="C2", label="alpha (clockwise)")
    axs[0, 1].set_ylabel("angle (rad)")
    axs[0, 1].set_title("platform angle", fontsize=10)
    axs[1, 0].plot(t, np.hypot(Xd[:, 0], Xd[:, 1]), label="|(x', y')|")
    axs[1, 0].set_ylabel("speed (m/s)")
    axs[1, 0].set_title("accelerate / constant velocity / decelerate", fontsize=10)
    axs[1, 1].plot(t, Xd[:, 2], color="C2", label="alpha'")
    axs[1, 1].set_ylabel("angular rate (rad/s)")
    for a in axs.ravel():
        a.grid(alpha=0.3)
        a.legend(fontsize=8)
    for a in axs[1]:
        a.set_xlabel("time (s)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _rms(a):
    return float(np.sqrt(np.mean(np.square(a))))


def run(out_dir: pathlib.Path, progress: bool = True, duration: float | None = None) -> dict:
    """Compute Tables 1-2 and Fig. 2-3; write CSV/PNG into out_dir; return a JSON-able summary."""
    t0 = time.perf_counter()
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    say = print if progress else (lambda *a, **k: None)

    dyn_r = robot_dynamics(ROBOT, "redundant")
    dyn_n = robot_dynamics(ROBOT, "nonredundant")
    F_r, F_n = Formulation(dyn_r), Formulation(dyn_n)
    t1, t2 = _tables(dyn_r.model.config)

    if duration is None:
        T, worst = choose_duration([dyn_r.kin, dyn_n.kin])
        how = (f"shortest duration (0.1 s steps) within the config's joint velocity limits "
               f"(limiting joint at {worst:.3g} x its limit for T = 1 s)")
    else:
        T, how = float(duration), "given"
    ta = RAMP_FRACTION * T
    t = np.linspace(0.0, T, N_SAMPLES)
    s, ds, dds = trapezoidal(t, T, ta)
    dX = X_END - X_START
    X = X_START + np.outer(s, dX)
    Xd, Xdd = np.outer(ds, dX), np.outer(dds, dX)

    tau_r, err_r = _forces(F_r, dyn_r, X, Xd, Xdd)
    tau_n, err_n = _forces(F_n, dyn_n, X, Xd, Xdd)
    st_r, _ = _forces(F_r, dyn_r, X, Xd, Xdd, static=True)
    st_n, _ = _forces(F_n, dyn_n, X, Xd, Xdd, static=True)

    # ---- files
    csv_path = out_dir / "planar_redundant_forces.csv"
    with open(csv_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["t_s", "x_m", "y_m", "alpha_rad", "xd", "yd", "alphad", "xdd", "ydd", "alphadd",
                    "red_F1_N", "red_F2_N", "red_F3_N", "red_F4_N", "non_F1_N", "non_F2_N", "non_F4_N",
                    "red_static_F1_N", "red_static_F2_N", "red_static_F3_N", "red_static_F4_N",
                    "non_static_F1_N", "non_static_F2_N", "non_static_F4_N"])
        for k in range(len(t)):
            w.writerow([f"{v:.9g}" for v in (t[k], *X[k], *Xd[k], *Xdd[k], *tau_r[k], *tau_n[k], *st_r[k], *st_n[k])])
    tab_path = out_dir / "planar_redundant_tables.csv"
    with open(tab_path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["table", "parameter", "config", "paper"])
        for k, v in t1.items():
            w.writerow(["1", f"{k} (mm)", v, PAPER_TABLE1[k]])
        for k, v in t2.items():
            w.writerow(["2", f"{k} (kg)", v, PAPER_TABLE2[k]])
    _plot(out_dir / "planar_redundant_fig2_redundant.png", t, tau_r, ["F1 (slider 1)", "F2 (slider 2)",
          "F3 (strut E1B1)", "F4 (strut E2B2)"],
          f"Fig. 2: driving forces, redundant robot, minimum norm (eq. 39), T = {T:g} s", static=st_r)
    _plot(out_dir / "planar_redundant_fig3_nonredundant.png", t, tau_n, ["F1 (slider 1)", "F2 (slider 2)",
          "F4 (strut E2B2)"], f"Fig. 3: driving forces, nonredundant robot (E1B1 removed), T = {T:g} s",
          static=st_n)
    _plot_motion(out_dir / "planar_redundant_motion.png", t, X, Xd)

    # ---- summary and Wu's qualitative observations
    q0, q1 = dyn_r.kin.actuated(_pose(X_START)), dyn_r.kin.actuated(_pose(X_END))
    q_travel = (q1 - q0)[:2]
    peak_r = np.abs(tau_r).max(axis=0)
    peak_n = np.abs(tau_n).max(axis=0)
    rms_r, rms_n = np.sqrt(np.mean(tau_r ** 2, axis=0)), np.sqrt(np.mean(tau_n ** 2, axis=0))
    obs_r = {
        "rms_F1_minus_F2_N": _rms(tau_r[:, 0] - tau_r[:, 1]),
        "rms_absF1_minus_absF2_N": _rms(np.abs(tau_r[:, 0]) - np.abs(tau_r[:, 1])),
        "rms_F1_plus_F2_N": _rms(tau_r[:, 0] + tau_r[:, 1]),
        "static_rms_absF1_minus_absF2_N": _rms(np.abs(st_r[:, 0]) - np.abs(st_r[:, 1])),
        "static_max_abs_F1_plus_F2_N": float(np.abs(st_r[:, 0] + st_r[:, 1]).max()),
        "rms_slider_force_N": _rms(tau_r[:, :2]),
    }
    obs_n = {"peak_ratio_F1_over_F2": float(peak_n[0] / peak_n[1]), "rms_ratio_F1_over_F2": float(rms_n[0] / rms_n[1]),
             "static_rms_ratio_F1_over_F2": _rms(st_n[:, 0]) / _rms(st_n[:, 1])}
    redundant_equal = obs_r["rms_absF1_minus_absF2_N"] < 0.2 * obs_r["rms_slider_force_N"]
    summary = {
        "robot": ROBOT,
        "paper": "Wu, Wang, Wang, Li, Mechatronics 19 (2009), seed 003, sec. 5, Tables 1-2, Fig. 2-3",
        "table1_mm": {"config": t1, "paper": PAPER_TABLE1},
        "table2_kg": {"config": t2, "paper": PAPER_TABLE2},
        "motion": {"start": X_START.tolist(), "end": X_END.tolist(), "profile": "trapezoidal velocity",
                   "duration_s": T, "accelerate_s": ta, "constant_s": T - 2 * ta, "decelerate_s": ta,
                   "duration_choice": how,
                   "peak_speed_m_per_s": float(np.hypot(Xd[:, 0], Xd[:, 1]).max()),
                   "peak_accel_m_per_s2": float(np.hypot(Xdd[:, 0], Xdd[:, 1]).max()),
                   "peak_alpha_rate_rad_per_s": float(np.abs(Xd[:, 2]).max()), "samples": N_SAMPLES},
        "redundant": {"actuators": ["F1 slider1", "F2 slider2", "F3 strut1", "F4 strut2"],
                      "peak_abs_N": peak_r.tolist(), "rms_N": rms_r.tolist(),
                      "min_N": tau_r.min(axis=0).tolist(), "max_N": tau_r.max(axis=0).tolist(),
                      "observation": obs_r, "engine_max_rel_diff": err_r},
        "slider_travel_m": q_travel.tolist(),
        "nonredundant": {"actuators": ["F1 slider1", "F2 slider2", "F4 strut2"],
                         "peak_abs_N": peak_n.tolist(), "rms_N": rms_n.tolist(),
                         "min_N": tau_n.min(axis=0).tolist(), "max_N": tau_n.max(axis=0).tolist(),
                         "observation": obs_n, "engine_max_rel_diff": err_n},
        "paper_observations": {
            "redundant_F1_close_to_F2": {"paper": True, "ours_in_magnitude": bool(redundant_equal),
                                         "ours_in_sign": False},
            "nonredundant_F1_much_bigger_than_F2": {"paper": True, "ours": bool(obs_n["rms_ratio_F1_over_F2"] > 2.0)},
        },
        "files": [p.name for p in (csv_path, tab_path)] + ["planar_redundant_fig2_redundant.png",
                                                           "planar_redundant_fig3_nonredundant.png",
                                                           "planar_redundant_motion.png"],
        "notes": [
            "The paper prints neither the duration nor the force values of Fig. 2-3 (the seed text has the "
            "captions only), so the forces can be compared in kind, not number by number.",
            "Column 1 is at X = 0 and column 2 at X = d (config sources.geometry): eq. 20 as printed puts the "
            "columns at -d/2 and +d/2, which makes Wu's test motion unreachable.",
            "Redundant robot: the counterweights (2 x 495 kg) balance the weight of every other part for a "
            "vertical translation (Table 2: 150 + 2(120 + 220 + 60 + 20) = 990 kg), so F1 + F2 (the only "
            "actuators with a y component in J) carries no gravity: at rest F1 = -F2, equal in magnitude and "
            "opposite in sign; in motion F1 + F2 is the vertical inertia force.",
        ],
        "seconds": None,
    }
    summary["seconds"] = round(time.perf_counter() - t0, 2)
    (out_dir / "planar_redundant_summary.json").write_text(json.dumps(summary, indent=2))
    summary["files"].append("planar_redundant_summary.json")

    # ---- printed table
    say("Wu et al. 2009 (seed 003): planar 3-DOF manipulator, redundant / nonredundant")
    say("Table 1  geometric parameters            config    paper")
    for k, v in t1.items():
        say(f"  {k + ' (mm)':<36s} {v:8.0f} {PAPER_TABLE1[k]:8.0f}")
    say("Table 2  inertia parameters              config    paper")
    for k, v in t2.items():
        say(f"  {k + ' (kg)':<36s} {v:8.0f} {PAPER_TABLE2[k]:8.0f}")
    say(f"motion (0.3 m, 3.2 m, pi/3) -> (0.9 m, 2.3 m, 0): trapezoidal, T = {T:g} s "
        f"(accelerate {ta:g} s, constant {T - 2 * ta:g} s, decelerate {ta:g} s; {how})")
    say(f"  peak speed {summary['motion']['peak_speed_m_per_s']:.3g} m/s, peak acceleration "
        f"{summary['motion']['peak_accel_m_per_s2']:.3g} m/s^2, peak alpha rate "
        f"{summary['motion']['peak_alpha_rate_rad_per_s']:.3g} rad/s")
    say("driving forces (N)          F1 slider1  F2 slider2  F3 strut1  F4 strut2")
    say("  Fig. 2 redundant  peak  " + "".join(f"{v:11.0f}" for v in peak_r))
    say("                    rms   " + "".join(f"{v:11.0f}" for v in rms_r))
    say("  Fig. 3 nonredund. peak  " + f"{peak_n[0]:11.0f}{peak_n[1]:11.0f}{'-':>11s}{peak_n[2]:11.0f}")
    say("                    rms   " + f"{rms_n[0]:11.0f}{rms_n[1]:11.0f}{'-':>11s}{rms_n[2]:11.0f}")
    say("paper's observations                          paper   ours")
    say(f"  redundant: F1 ~ F2 (small difference)       yes     |F1| ~ |F2|: "
        f"{'yes' if redundant_equal else 'no'} (rms ||F1|-|F2|| = {obs_r['rms_absF1_minus_absF2_N']:.0f} N "
        f"of rms {obs_r['rms_slider_force_N']:.0f} N);")
    say(f"                                                      quasi-static: F1 = -F2 exactly "
        f"(max |F1+F2| = {obs_r['static_max_abs_F1_plus_F2_N']:.1e} N, counterweights balance the weight)")
    say(f"  nonredundant: F1 >> F2                      yes     rms F1/F2 = {obs_n['rms_ratio_F1_over_F2']:.2f}, "
        f"peak {obs_n['peak_ratio_F1_over_F2']:.2f}; quasi-static rms {obs_n['static_rms_ratio_F1_over_F2']:.2f}")
    say(f"  (slider 2 travels {abs(q_travel[1]):.2f} m, slider 1 {abs(q_travel[0]):.2f} m: the inertia of slider 2 "
        f"with its counterweight dominates F2 at full speed)")
    say(f"engine cross-check (friction off): max relative difference {max(err_r, err_n):.2e}")
    say(f"files in {out_dir}: {', '.join(summary['files'])}  ({summary['seconds']} s)")
    return summary


if __name__ == "__main__":   # pragma: no cover
    import sys
    run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/planar_redundant"))
