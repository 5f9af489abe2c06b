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

Models (issue 25, MODELS): Wu's sec. 5 runs no controller and no plant: its Fig. 2-3 are the forces the model
needs along the prescribed motion (inverse dynamics, open loop). So does this reproduction: the forces are the
pivotal virtual-work model on the config's nominal parameters (Table 2 masses, friction off as in Wu's model),
there is no tracking, so no improvement factor and no exact-model upper bound to label; the generic engine on the
same parameters is a cross-check of the formulation, not a plant.

Neither of Wu's two observations on Fig. 2-3 (redundant: F1 - F2 very small; nonredundant: F1 much bigger
than F2) shows with these inputs. ``planar_redundant_sensitivity`` finds out why: it varies every input the
paper does not give (inertias, duration and profile, column placement) and every reading of what Fig. 2-3 plot,
and reports it here (printed table, summary key ``sensitivity``, planar_redundant_sensitivity.png / .csv).
"""

from __future__ import annotations

import csv
import math
import pathlib
import time

import numpy as np

from ...dynamics import robot_dynamics
from ...dynamics.pivotal_virtual_work import Formulation
from ...kinematics.task_space import Pose, rot_z
from ...trajectory.profiles import trapezoidal
from ..report import Provenance, write_json
from . import finish
from .planar_redundant_sensitivity import DIFF_MAX, RATIO_MIN, plot_study, run_study

ROBOT = "planar_redundant"
X_START = np.array([0.3, 3.2, math.pi / 3])      # Wu sec. 5
X_END = np.array([0.9, 2.3, 0.0])
RAMP_FRACTION = 0.25                               # accelerate : cruise : decelerate = 1 : 2 : 1
N_SAMPLES = 401
#: what the forces are computed with (module docstring): the summary's ``models``, the lines after the title
MODELS = {"controllers_model": "none: Wu's sec. 5 and this reproduction run no controller",
          "model": "Wu's pivotal virtual-work dynamics (eq. 38-39) on the config's nominal parameters (Table 2), "
                   "friction off as in Wu's model",
          "plant": "none: the driving forces are the model's inverse dynamics along the prescribed motion (open "
                   "loop), so there is no tracking factor and no exact-model upper bound"}

# Wu Table 1 (mm) and Table 2 (kg), printed beside the config values
PAPER_TABLE1 = {"d": 1200.0, "l": 1200.0, "l5": 250.0, "l6": 250.0}
PAPER_TABLE2 = {"m_N": 150.0, "m_i1 (slider)": 120.0, "m_i2 (constant-length link)": 220.0,
                "m_i3 (strut upper part)": 60.0, "m_i4 (strut lower part)": 20.0,
                "m_i5 (counterweight)": 495.0}


def _pose(X):
    return Pose(np.array([X[0], X[1], 0.0]), rot_z(-X[2]))    # Wu's alpha is clockwise


def _tables(cfg):
    geo, b = cfg.blocks["geometry"], cfg.blocks["bodies"]
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

    dyn_r = robot_dynamics(ROBOT, "redundant")
    dyn_n = robot_dynamics(ROBOT, "nonredundant")
    F_r, F_n = Formulation(dyn_r), Formulation(dyn_n)
    t1, t2 = _tables(dyn_r.model.spec)

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
    sens, sens_plot = run_study(F_r, F_n, dyn_r, dyn_n, X_START, X_END, T, RAMP_FRACTION, progress=_progress(progress))
    sens["why"] = _why(sens, q_travel)
    sens_csv = out_dir / "planar_redundant_sensitivity.csv"
    _write_study_csv(sens_csv, sens)
    plot_study(out_dir / "planar_redundant_sensitivity.png", sens, sens_plot)
    b = sens["baseline"]
    summary = {
        "robot": ROBOT,
        "paper": "Wu, Wang, Wang, Li, Mechatronics 19 (2009), seed 003, sec. 5, Tables 1-2, Fig. 2-3",
        "models": MODELS,
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
            "redundant_F1_close_to_F2": {"paper": True, "ours": bool(b["diff_r"] < DIFF_MAX),
                                         "ours_if_F2_sign_flipped": bool(b["sum_r"] < DIFF_MAX),
                                         "diff_r": b["diff_r"], "sum_r": b["sum_r"]},
            "nonredundant_F1_much_bigger_than_F2": {"paper": True, "ours": bool(b["ratio_n"] > RATIO_MIN),
                                                    "ratio_n": b["ratio_n"]},
            "why_not": "see sensitivity.why",
        },
        "sensitivity": sens,
        "files": [p.name for p in (csv_path, tab_path, sens_csv)] + [
            "planar_redundant_fig2_redundant.png", "planar_redundant_fig3_nonredundant.png",
            "planar_redundant_motion.png", "planar_redundant_sensitivity.png"],
        "notes": [
            "The paper prints neither the duration nor the force values of Fig. 2-3 (the seed text has the "
            "captions only), so the forces can be compared in kind, not number by number.",
            "Column 1 is at X = 0 and column 2 at X = d (config sources.geometry): eq. 20a and 20b as printed "
            "are the same equation (both x + d/2); the reading with the columns at -d/2 and +d/2 makes Wu's test "
            "motion unreachable. The sensitivity study varies this placement.",
            "Redundant robot: the counterweights (2 x 495 kg) balance the weight of every other part for a "
            "vertical translation (Table 2: 150 + 2(120 + 220 + 60 + 20) = 990 kg), so F1 + F2 (the only "
            "actuators with a y component in J) carries no gravity: at rest F1 = -F2, equal in magnitude and "
            "opposite in sign; in motion F1 + F2 is the vertical inertia force.",
        ],
    }
    summary["files"].append("planar_redundant_summary.json")

    # ---- printed table
    lines = []
    say = lines.append
    say("Wu et al. 2009 (seed 003): planar 3-DOF manipulator, redundant / nonredundant")
    say(f"  controllers' model: {MODELS['controllers_model']}")
    say(f"  forces: {MODELS['model']}")
    say(f"  plant: {MODELS['plant']}")
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
    say(f"  redundant: F1 - F2 very small               yes     {'yes' if b['diff_r'] < DIFF_MAX else 'no'}: "
        f"rms(F1 - F2) / rms(F1, F2) = {b['diff_r']:.2f} (0: F1 = F2, 2: F1 = -F2; quasi-static F1 = -F2, "
        f"max |F1 + F2| = {obs_r['static_max_abs_F1_plus_F2_N']:.1e} N)")
    say(f"  nonredundant: F1 >> F2                      yes     {'yes' if b['ratio_n'] > RATIO_MIN else 'no'}: "
        f"rms F1/F2 = {obs_n['rms_ratio_F1_over_F2']:.2f}, peak {obs_n['peak_ratio_F1_over_F2']:.2f}; "
        f"quasi-static rms {obs_n['static_rms_ratio_F1_over_F2']:.2f}")
    _print_study(say, sens)
    say(f"engine cross-check (friction off): max relative difference {max(err_r, err_n):.2e}")
    finish(summary, lines, out_dir, t0, progress)
    write_json(out_dir / "planar_redundant_summary.json", summary, Provenance.of(summary))
    return summary


def _progress(on):
    if not on:
        return None
    from ...progress import progress_bar
    return lambda it: progress_bar(it, desc="sensitivity", unit="case", leave=False)


def _write_study_csv(path, sens):
    keys = ("ratio_r", "diff_r", "sum_r", "ratio_n")
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["input", "value", *keys])
        for name, sw in sens["sweeps"].items():
            for k, v in enumerate(sw["values"]):
                w.writerow([name, f"{v:.6g}", *(f"{sw[m][k]:.6g}" for m in keys)])
        for name, r in sens["readings"].items():
            w.writerow(["reading", name, *(f"{r[m]:.6g}" for m in keys)])


def _span(sw, key, band=None):
    v = np.array(sw[key])
    if band is not None:
        x = np.array(sw["values"])
        v = v[(x >= band[0] - 1e-12) & (x <= band[1] + 1e-12)]
    return f"{v.min():5.2f}-{v.max():<5.2f}"


def _print_study(say, sens):
    b, e = sens["baseline"], sens["baseline_engine"]
    keys = ("ratio_r", "diff_r", "sum_r", "ratio_n")
    say(f"why not: sensitivity study (rms over the motion, {sens['samples_per_motion']} samples; "
        f"ratio = rms F1 / rms F2, diff = rms(F1 - F2) / rms(F1, F2), sum = rms(F1 + F2) / rms(F1, F2))")
    say(f"  paper: redundant diff < {DIFF_MAX:g} (or sum < {DIFF_MAX:g} if Wu's F2 had the opposite sign) "
        f"and nonredundant F1/F2 > {RATIO_MIN:g}")
    say(f"  {'input':<44s}{'range':<22s}{'red. F1/F2':>12s}{'red. diff':>12s}{'red. sum':>12s}{'non. F1/F2':>12s}")
    say(f"  {'shipped inputs (pivotal virtual work)':<66s}" + "".join(f"{b[k]:12.3f}" for k in keys))
    say(f"  {'shipped inputs (generic engine)':<66s}" + "".join(f"{e[k]:12.3f}" for k in keys))
    for sw in sens["sweeps"].values():
        lo, hi = sw["plausible"]
        say(f"  {sw['label']:<44s}{f'plausible {lo:g}-{hi:g}':<22s}"
            + "".join(f"{_span(sw, k, sw['plausible']):>12s}" for k in keys))
        v = sw["values"]
        say(f"  {'':<44s}{f'sweep {v[0]:g}-{v[-1]:g}':<22s}" + "".join(f"{_span(sw, k):>12s}" for k in keys))
    for name, r in sens["readings"].items():
        say(f"  {'reading: ' + name:<66s}" + "".join(f"{r[k]:12.3f}" for k in keys))
    say("  joint search over the plausible box: fraction of points with      obs. 1 (eq. 21 signs / F2 flipped)"
        "   obs. 2   both (eq. 21 / flipped)   max non. F1/F2 where obs. 1")
    for name, j in sens["joint_search"]["readings"].items():
        a, f = j["eq21_signs"], j["F2_sign_flipped"]
        m = [x for x in (a["max_ratio_n_where_obs1"], f["max_ratio_n_where_obs1"]) if x is not None]
        say(f"    {name:<34s} {j['points']:6d} points {a['fraction_obs1']:20.3f} / {f['fraction_obs1']:.3f}"
            f"{j['fraction_obs2']:16.3f}{a['fraction_both']:14.3f} / {f['fraction_both']:.3f}"
            f"{(f'{max(m):.2f}' if m else '-'):>22s}")
    for line in sens["why"]:
        say("  - " + line)


def _num(x):
    return "-" if x is None else f"{x:.2f}"


def _duration_text(T):
    return T if isinstance(T, str) else f"T = {T:g} s"


def _why(sens, q_travel):
    """The answer, in sentences built from the study's numbers (the claims are checked in the tests)."""
    b, rd, sw = sens["baseline"], sens["readings"], sens["sweeps"]
    idn, js = sens["identity"], sens["joint_search"]["readings"]
    am = js["as modelled"]
    dur = sw["duration_s"]
    slow = next((T for T, v in zip(dur["values"], dur["sum_r"]) if v < DIFF_MAX), None)
    right = sw["column_offset_m_column1_right"]
    i0 = right["values"].index(0.0)
    izz = [sw[k] for k in ("link_izz_factor", "strut_izz_factor", "platform_izz_factor")]
    riding = rd["counterweights move with sliders"]
    flip = am["F2_sign_flipped"]
    close = flip["closest"]
    both = [n for n, r in rd.items() if r["ratio_n"] > RATIO_MIN and min(r["diff_r"], r["sum_r"]) < DIFF_MAX]
    out = [
        f"F1 + F2 = (Omega p)_Y in both robots: the slider rows of J have 1 in the Y column (eq. 21), the strut rows "
        f"0 (eq. 22). Along the test motion the two sums differ by rms {idn['rms_sum_r_minus_sum_n_N']:.0f} N, the "
        f"weight of strut E1B1 (80 kg x 9.81 = 785 N); redundancy can change F1 - F2 only (rms "
        f"{idn['rms_diff_r_N']:.0f} N redundant, {idn['rms_diff_n_N']:.0f} N nonredundant along the test motion).",
        f"Table 2's counterweights balance the weight exactly (2 x 495 = 150 + 2 (120 + 220 + 60 + 20) kg), so F1 + F2 "
        f"is the vertical inertia force and the redundant robot has F1 = -F2 at rest. With eq. 21's signs 'F1 - F2 "
        f"very small' holds at {am['eq21_signs']['fraction_obs1']:.0%} of the {am['points']} points of the joint "
        f"search (shipped: diff = {b['diff_r']:.2f}).",
        (f"Read with F2's sign flipped, observation 1 holds for slow motions (sum < {DIFF_MAX:g} from T = "
         f"{slow:.1f} s on), but the nonredundant F1/F2 then stays at or below "
         f"{_num(flip['max_ratio_n_where_obs1'])} in the plausible box; the closest point (column offset "
         f"{close['column_offset_m']:g} m, column 1 on the {close['column1']}, {_duration_text(close['duration_s'])}) "
         f"has link 1 at up to {close['beta_max_deg']:.1f} deg (limit 80 deg), next to the link-horizontal "
         f"singularity.") if slow is not None else
        "Read with F2's sign flipped, observation 1 does not hold for any duration in the sweep.",
        f"Nonredundant F1 >> F2 (F1/F2 > {RATIO_MIN:g}) occurs in the joint search only with column 1 on the "
        f"{'/'.join(am['obs2_column1'])} and T <= {am['obs2_max_duration_s']:g} s (slider 1 then travels "
        f"{abs(q_travel[1]):.2f} m, slider 2 {abs(q_travel[0]):.2f} m), and there the redundant F1/F2 is at least "
        f"{am['min_ratio_r_where_obs2']:.2f} (c0 = 0: {right['ratio_r'][i0]:.2f} redundant, "
        f"{right['ratio_n'][i0]:.2f} nonredundant): an inertia effect of the longer slider travel, not of redundancy.",
        f"No inertia gives it: I_zz factors up to {izz[0]['values'][-1]:g} (factor 3 puts all of a body's mass at "
        f"its ends, the bound for its size) keep the redundant F1/F2 at or below "
        f"{max(max(s['ratio_r']) for s in izz):.2f} with diff -> 2 (F1 = -F2) and the nonredundant F1/F2 at or below "
        f"{max(max(s['ratio_n']) for s in izz):.2f}.",
        f"Sliders that carry the weight come near observation 1 but not 2: with the counterweights moving with "
        f"their sliders (H_i5 = +H_i1) diff = {riding['diff_r']:.2f} (below {DIFF_MAX:g} at "
        f"{js['counterweights move with sliders']['eq21_signs']['fraction_obs1']:.0%} of the joint search) and the "
        f"nonredundant F1/F2 = {riding['ratio_n']:.2f} (at most "
        f"{_num(js['counterweights move with sliders']['eq21_signs']['max_ratio_n_where_obs1'])} where diff < "
        f"{DIFF_MAX:g}): the common vertical load makes F1 ~ F2 in both robots. That reading also contradicts "
        f"Table 2's balance.",
        f"Both observations together: {am['eq21_signs']['fraction_both']:.0%} (eq. 21 signs) and "
        f"{flip['fraction_both']:.0%} (F2 flipped) of the joint search. Among the readings: "
        + ("; ".join(f"'{n}' (sum = {rd[n]['sum_r']:.2f}, diff = {rd[n]['diff_r']:.2f}, F1/F2 = "
                     f"{rd[n]['ratio_n']:.2f})" for n in both) if both else "none")
        + (": a single motion component, not Wu's motion, which moves x, y and alpha together."
           if both and all(n.endswith("motion only") for n in both) else "."),
        "So no physically plausible choice of the inputs the paper leaves open reproduces Fig. 2-3's observations "
        "with Table 2's masses: they would need a common slider load much larger than F1 - F2 in the redundant "
        "robot and slider 2 nearly unloaded in the nonredundant one, which the statics of eq. 21-22 with balanced "
        "counterweights does not give. The seed has no curves, so which of Wu's inputs differs stays open.",
    ]
    return out


if __name__ == "__main__":   # pragma: no cover
    import sys
    run(pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "results/planar_redundant"))
