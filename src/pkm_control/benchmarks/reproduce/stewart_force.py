"""Taghirad (seed 004), chapter Force Control, on the simulated Gough-Stewart platform (issue 24): a hybrid task with
direct force control (Figs. 28, 34), a sweep of the environment's stiffness with the gains held, and impedance
control (Fig. 36) beside its designed response.

The environment and the sensor are config/environment.yaml's (the table: k_e 1e5 N/m, c 500 N s/m, mu 0.3, its
surface 2 mm below the tool tip at home; the F/T sensor: 0.5 N rms noise per axis, 200 Hz low-pass), the plant the
simulated robot with the config's joint friction, 2 kHz; the gains are config/controllers.yaml ``force_controllers``.

* ``task`` (direct_force, the hybrid spec SPEC, trajectory/spec.py ``hybrid_from_spec``): approach until the tool
  tip touches the surface (0.2 s), contact: z force-controlled, F_d ramps to 50 N (0.2 s, quintic) and holds
  (0.2 s), follow: slide 30 mm along x at 50 N (0.4 s, peak 0.14 m/s, mu f_n = 15 N of friction against the
  motion), release: F_d to 0 (0.1 s), approach back to home in motion control (0.2 s). Reported: the normal force
  error (RMS, max) while z is force-controlled, in the hold and in the slide; the overshoot at contact (the peak
  normal force of the contact phase over 50 N); the impact force (the peak in the first 20 ms after touch-down); the
  path error along the surface while sliding.
* ``sweep``: the approach, the ramp and SWEEP_HOLD s of hold on planes of stiffness SWEEP (soft to stiff), the same
  gains: per stiffness the overshoot, the hold's force error, the mean error and the oscillation (std) left in the
  last 0.1 s; settled: the last 0.1 s within 5 % of 50 N; stable: finite, no safe behaviour, no oscillation of more
  than 5 % of 50 N (std) left in the last 0.1 s (a soft environment is slow, 1 / (Ki k_s), not unstable). The force
  loop's gain grows with the series stiffness k_s = kc k_e / (kc + k_e) (control/force.py DirectForce: time
  constant 1 / (Ki k_s)): the book's rule (the inner motion loop at least 5 times faster) holds up to k_e ~ 5e5 N/m
  with these gains. A stiffness beyond what the plant integrates at its step (hardware/contact.py check_integrable:
  the simulated robot's limit on this table, ``stiffness_limit_N_per_m``) is refused by the plant and reported as
  refused with its error, not simulated.
* ``mujoco``: the task again on the MuJoCo plant (hardware/mujoco_robot.py) with the same table in MuJoCo's own
  contact model (hardware/mujoco_contact.py), the same law, gains, sensor noise (seed 0) and joint friction: the
  independent check of the contact forces. Reported: the task's figures there; the largest normal-force difference
  from the native plant while holding and while sliding; f_t / f_n while sliding on both plants; MuJoCo's contact
  force against the project's law (k d + c d', mu f_n tanh) at MuJoCo's own states, holding and sliding.
* ``impedance``: no force reference; the motion goes 1 mm beyond the surface (0.3 s) and holds (0.3 s). The designed
  impedance M_d e'' + D_d e' + K_d e = F_e (Fig. 36, e = z_d - z, F_e the normal force the platform applies) is
  integrated (scipy.signal.lsim, from rest) with the measured contact force as its input: its response beside the
  measured e_z, the difference relative to the peak of e_z. On the plant without joint friction (the law's rigid model
  is then the plant's: the closed loop is exactly the design up to the sensor's filter and noise) and with it (the
  law's rigid model misses it: the drives' Coulomb friction acts as an unmodelled force and the design holds only
  as far as the model does).
"""

from __future__ import annotations

import pathlib
import time

import numpy as np

from ...errors import InvalidInputError
from . import finish

ROBOT = "stewart"
F_D = 50.0                                # N: the normal force of the task
SURFACE_GAP = 0.002                       # m: the table below the tool tip at home (config/environment.yaml)
SPEC = {"type": "hybrid", "phases": [
    {"phase": "approach", "goal": [0.0, 0.0, 1.198, 0.0, 0.0, 0.0], "duration": 0.2},
    {"phase": "contact", "force": [0.0, 0.0, -F_D, 0.0, 0.0, 0.0], "selection": ["z"], "duration": 0.2},
    {"phase": "hold", "duration": 0.2},
    {"phase": "follow", "goal": [0.03, 0.0, 1.198, 0.0, 0.0, 0.0], "duration": 0.4},
    {"phase": "release", "force": [0.0] * 6, "duration": 0.1},
    {"phase": "approach", "goal": [0.0, 0.0, 1.2, 0.0, 0.0, 0.0], "selection": [], "duration": 0.2}]}
SWEEP = (1.0e4, 1.0e5, 1.0e6, 3.0e6, 1.0e7, 1.0e9)    # N/m (1e9: beyond the plant's limit, refused)
QUICK_SWEEP = (1.0e6, 1.0e9)
SWEEP_HOLD = 0.5                          # s of hold in the sweep
IMPEDANCE_SPEC = {"type": "hybrid", "phases": [
    {"phase": "approach", "goal": [0.0, 0.0, 1.2 - SURFACE_GAP - 0.001, 0.0, 0.0, 0.0], "duration": 0.3},
    {"phase": "hold", "duration": 0.3}]}
#: the impedance runs: the plant without or with its joint friction (overrides of the law's force_controllers settings)
IMPEDANCE_CONDITIONS = {"no_friction": None, "friction": None}
IMPACT_WINDOW = 0.02                      # s after touch-down: the impact force
TOUCH = 1.0                               # N: touch-down is the first normal force above this


def _rms(x) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if len(x) else 0.0


def simulate(dyn, controller: str, hybrid, stiffness: float | None = None, friction: bool = True, tail: float = 0.0,
             overrides=None, plant: str = "sim"):
    """One run of ``controller`` (force_controllers) on the hybrid task; the environment config/environment.yaml's
    (``stiffness``: the table's, if given), its sensor; ``plant`` sim (SimulatedRobot) or mujoco (MujocoRobot, the
    contact in MuJoCo's model). Returns a dict of arrays per period: t, the normal force f_n (N, on the tool: the
    plant's contact force along z) and f_x (along x), the project's contact law at the plant's state (law_n, law_x),
    the normal force's reference (NaN where z is not force-controlled), phase labels, the desired and the measured
    platform positions, modes; ``stiffness_limit``: the stiffest table the plant accepts (N/m). A stiffness beyond it
    raises InvalidInputError (hardware/contact.py check_integrable)."""
    import dataclasses

    from ...control import References
    from ...control.force import ForceReference
    from ...control.settings import load_settings, make_force_controller
    from ...hardware import SimulatedRobot
    from ...hardware.contact import ContactEnvironment, load_environment, wrench_sensor

    env, sensor_settings = load_environment(ROBOT)
    if stiffness is not None:
        table = dataclasses.replace(env.surfaces[0], stiffness=float(stiffness))
        env = ContactEnvironment(env.tool_point, (table,) + env.surfaces[1:])
    c = make_force_controller(dyn, controller, overrides=overrides)
    dt = 1.0 / load_settings(ROBOT, "pd")["control_rate"]
    if plant == "mujoco":
        from ...hardware.mujoco_robot import MujocoRobot as Plant
    else:
        Plant = SimulatedRobot
    robot = Plant(dyn, dt, friction=friction, environment=env, wrench_sensor=wrench_sensor(env, sensor_settings))
    kin, act = dyn.kin, dyn.model.actuated_idx
    home = kin.home_pose()
    robot.reset(home)
    n = int(round((hybrid.duration + tail) / dt))
    out = {k: [] for k in ("t", "f_n", "f_x", "law_n", "law_x", "f_d", "phase", "p_d", "p", "mode")}
    for k in range(n):
        t = k * dt
        pose_d, twist_d, acc_d = hybrid.sample(t)
        m = kin.inverse(pose_d, twist_d, acc_d)
        f_d, sel = hybrid.force(t)
        cmd = c.update(t, robot.read(), References(m.q[act], m.v[act], m.a[act],
                                                   ForceReference(f_d, sel) if sel.any() else None))
        robot.write(cmd.tau, t)
        robot.step()
        truth = robot.ground_truth()
        w, law = robot.contact_wrench(), env.force(truth.platform_pose, kin.task.twist_map() @ truth.platform_twist)
        out["t"].append(t + dt)
        out["f_n"].append(w[2])
        out["f_x"].append(w[0])
        out["law_n"].append(law[2])
        out["law_x"].append(law[0])
        out["f_d"].append(-f_d[2] if sel[2] else np.nan)
        out["phase"].append(hybrid.phase(t))
        out["p_d"].append(pose_d.position)
        out["p"].append(truth.platform_pose.position)
        out["mode"].append(cmd.mode)
    run = {k: np.array(v) for k, v in out.items()}
    run["controller"], run["stiffness_limit"] = c, robot.stiffness_limits[0]
    return run


def task_figures(run) -> dict:
    """The task's figures (module docstring)."""
    t, f, f_d, phase = run["t"], run["f_n"], run["f_d"], run["phase"]
    on = ~np.isnan(f_d)
    err = f_d[on] - f[on]
    hold, follow, contact = phase == "hold", phase == "follow", phase == "contact"
    touched = np.flatnonzero(f > TOUCH)
    t_touch = float(t[touched[0]]) if touched.size else None
    impact = float(f[(t >= t_touch) & (t <= t_touch + IMPACT_WINDOW)].max()) if touched.size else 0.0
    path = np.linalg.norm((run["p_d"] - run["p"])[follow, :2], axis=1)
    return {"force_error_rms_N": _rms(err), "force_error_max_N": float(np.abs(err).max()),
            "hold_error_rms_N": _rms(F_D - f[hold]), "hold_error_max_N": float(np.abs(F_D - f[hold]).max()),
            "follow_error_rms_N": _rms(F_D - f[follow]), "follow_error_max_N": float(np.abs(F_D - f[follow]).max()),
            "overshoot_N": float(f[contact | hold].max() - F_D),
            "overshoot_percent": float(100 * (f[contact | hold].max() - F_D) / F_D),
            "touch_down_s": t_touch, "impact_force_N": impact,
            "path_error_rms_mm": 1e3 * _rms(path), "path_error_max_mm": 1e3 * float(path.max()),
            "safe_periods": int(np.sum(run["mode"] != "control")),
            "finite": bool(np.isfinite(f).all())}


def plant_agreement(native, mj) -> dict:
    """How far the MuJoCo plant's contact agrees with the native plant's on the same task (module docstring): the
    normal-force differences between the plants, f_t / f_n while sliding (mean over the slide's middle, away from its
    start and stop), MuJoCo's contact force against the project's law at MuJoCo's states (relative to the law's
    normal force, where it exceeds 1 N)."""
    phase, t = native["phase"], native["t"]
    hold, follow = phase == "hold", phase == "follow"
    span = t[follow]
    middle = follow & (t > span[0] + 0.1) & (t < span[-1] - 0.1)
    touching = mj["law_n"] > TOUCH

    def law_diff(mask):
        m = mask & touching
        return float(np.abs(mj["f_n"][m] / mj["law_n"][m] - 1).max())

    return {"hold_max_diff_N": float(np.abs(mj["f_n"] - native["f_n"])[hold].max()),
            "follow_max_diff_N": float(np.abs(mj["f_n"] - native["f_n"])[follow].max()),
            "ratio_native": float(np.mean(-native["f_x"][middle] / native["f_n"][middle])),
            "ratio_mujoco": float(np.mean(-mj["f_x"][middle] / mj["f_n"][middle])),
            "law_hold_max_rel": law_diff(hold), "law_follow_max_rel": law_diff(middle)}


def sampled_bound(dyn, name: str) -> float:
    """The stiffest table (N/m, config/environment.yaml's damping and tool) that the law ``name`` holds at the control
    period along z by the sampled-data model (control/contact_stability.py)."""
    from ...control.contact_stability import largest_stable_stiffness, law_gains
    from ...control.settings import load_settings, make_force_controller
    from ...hardware.contact import load_environment
    from ...hardware.simulated import contact_mass

    env, _ = load_environment(ROBOT)
    h = 1.0 / load_settings(ROBOT, "pd", "", dyn.model.n_actuated)["control_rate"]
    m = float(contact_mass(dyn, env.tool_point)(np.array([0.0, 0.0, 1.0])))
    return largest_stable_stiffness(m, env.surfaces[0].damping, h,
                                    law_gains(make_force_controller(dyn, name).law, 2, m, h))


def sweep_figures(run) -> dict:
    if "refused" in run:
        return {"refused": run["refused"], "settled": False, "stable": False}
    t, f, phase = run["t"], run["f_n"], run["phase"]
    hold = phase == "hold"
    last = t > t[-1] - 0.1
    stable = bool(np.isfinite(f).all() and np.all(run["mode"] == "control") and np.std(f[last]) < 0.05 * F_D)
    return {"overshoot_percent": float(100 * (f[(phase == "contact") | hold].max() - F_D) / F_D),
            "hold_error_rms_N": _rms(F_D - f[hold]), "hold_error_max_N": float(np.abs(F_D - f[hold]).max()),
            "last_100ms_error_N": float(np.mean(F_D - f[last])), "last_100ms_std_N": float(np.std(f[last])),
            "settled": bool(np.abs(f[last] - F_D).max() < 0.05 * F_D), "stable": stable}


def impedance_figures(dyn, run) -> dict:
    """e_z = z_d - z measured, and the designed impedance's response to the measured F_e,z = -f_n (module
    docstring)."""
    from scipy import signal

    from ...control.force import force_settings

    imp = force_settings(ROBOT, "impedance")["gains"]["impedance"]
    m, d, k = (float(imp[key][2]) for key in ("m_d", "d_d", "k_d"))
    t = np.concatenate([[0.0], run["t"]])
    e = np.concatenate([[0.0], run["p_d"][:, 2] - run["p"][:, 2]])
    f_e = np.concatenate([[0.0], -run["f_n"]])
    _, e_model, _ = signal.lsim(([1.0], [m, d, k]), f_e, t)
    diff = np.abs(e - e_model)
    return {"t": t, "e": e, "e_model": e_model, "f_e": f_e, "m_d": m, "d_d": d, "k_d": k,
            "max_difference_mm": 1e3 * float(diff.max()), "peak_e_mm": 1e3 * float(np.abs(e).max()),
            "relative_difference": float(diff.max() / np.abs(e).max()),
            "steady_force_N": float(run["f_n"][-1]),
            "steady_force_closed_form_N": float(k * 1e5 / (k + 1e5) * 0.001)}


def _write(fig, path: pathlib.Path, title: str) -> None:
    """A figure's end: every axis gridded with its legend, the title above them, written at 90 dpi and closed."""
    import matplotlib.pyplot as plt

    for a in fig.axes:
        a.grid(True, alpha=0.3)
        a.legend(fontsize=8)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def run(out_dir: pathlib.Path, progress: bool = True, quick: bool = False) -> dict:
    """The task, the stiffness sweep and the impedance comparison (module docstring); quick: two stiffnesses and the
    frictionless impedance run only (a smoke test, not the documented figures)."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from ...dynamics import robot_dynamics
    from ...trajectory.spec import hybrid_from_spec

    t0 = time.perf_counter()
    dyn = robot_dynamics(ROBOT)
    hybrid = hybrid_from_spec(dyn.kin, SPEC)
    task = simulate(dyn, "direct_force", hybrid)
    tf = task_figures(task)
    mj_task = simulate(dyn, "direct_force", hybrid, plant="mujoco")
    mf, agree = task_figures(mj_task), plant_agreement(task, mj_task)
    sweep_spec = {"type": "hybrid", "phases": SPEC["phases"][:2] + [{"phase": "hold", "duration": SWEEP_HOLD}]}
    stiffnesses = QUICK_SWEEP if quick else SWEEP
    sweep = {}
    for k in stiffnesses:
        try:
            sweep[k] = simulate(dyn, "direct_force", hybrid_from_spec(dyn.kin, sweep_spec), stiffness=k)
        except InvalidInputError as exc:           # beyond what the plant integrates at its step: refused
            sweep[k] = {"refused": str(exc)}
    sf = {k: sweep_figures(r) for k, r in sweep.items()}
    limits = {"native": task["stiffness_limit"], "mujoco": mj_task["stiffness_limit"],
              "control": sampled_bound(dyn, "direct_force")}
    imp_hybrid = hybrid_from_spec(dyn.kin, IMPEDANCE_SPEC)
    imp = {cond: impedance_figures(dyn, simulate(dyn, "impedance", imp_hybrid, friction=cond != "no_friction",
                                                 overrides=IMPEDANCE_CONDITIONS[cond]))
           for cond in (("no_friction",) if quick else IMPEDANCE_CONDITIONS)}
    summary = {"robot": ROBOT, "quick": quick, "spec": SPEC, "task": tf, "mujoco": {"task": mf, "agreement": agree},
               "sweep": {f"{k:g}": v for k, v in sf.items()}, "stiffness_limit_N_per_m": limits,
               "impedance": {c: {k: v for k, v in f.items() if not isinstance(v, np.ndarray)} for c, f in imp.items()},
               "files": []}
    lines = [f"Taghirad, Force Control: the Gough-Stewart platform presses {F_D:g} N on config/environment.yaml's "
             f"table (k_e 1e5 N/m, mu 0.3), noisy filtered F/T sensor, 2 kHz"
             + (" (--quick: not the documented figures)" if quick else ""),
             f"  direct force control (Figs. 28, 34), the hybrid task approach -> contact (ramp to {F_D:g} N) -> hold "
             f"-> slide 30 mm -> release:",
             f"    normal force error while force-controlled: RMS {tf['force_error_rms_N']:.2f} N, max "
             f"{tf['force_error_max_N']:.2f} N; hold RMS {tf['hold_error_rms_N']:.2f} N; slide RMS "
             f"{tf['follow_error_rms_N']:.2f} N, max {tf['follow_error_max_N']:.2f} N",
             f"    overshoot at contact {tf['overshoot_N']:.2f} N ({tf['overshoot_percent']:.1f} %), impact force "
             f"{tf['impact_force_N']:.2f} N (peak within {IMPACT_WINDOW * 1e3:g} ms of touch-down at "
             f"{tf['touch_down_s']:.4f} s); path error while sliding RMS {tf['path_error_rms_mm']:.3f} mm, max "
             f"{tf['path_error_max_mm']:.3f} mm",
             f"  MuJoCo plant (the table in MuJoCo's own contact model), the same task: force error RMS "
             f"{mf['force_error_rms_N']:.2f} N, max {mf['force_error_max_N']:.2f} N; overshoot {mf['overshoot_N']:.2f} "
             f"N, impact {mf['impact_force_N']:.2f} N; normal force against the native plant's: max difference "
             f"{agree['hold_max_diff_N']:.3f} N holding, {agree['follow_max_diff_N']:.3f} N sliding; f_t / f_n sliding "
             f"{agree['ratio_mujoco']:.4f} (native {agree['ratio_native']:.4f}); MuJoCo's contact force against the "
             f"project's law at MuJoCo's states: max relative difference {agree['law_hold_max_rel']:.1e} holding, "
             f"{agree['law_follow_max_rel']:.1e} sliding (the cone's projection, hardware/mujoco_contact.py)",
             f"  environment stiffness sweep, gains held (approach, ramp, {SWEEP_HOLD:g} s hold); the plant "
             f"integrates the table up to k_e {limits['native']:.3g} N/m at its step (the MuJoCo plant "
             f"{limits['mujoco']:.3g}), refuses a stiffer one; direct force control's sampled loop at 2 kHz is "
             f"stable up to {limits['control']:.3g} N/m (control/contact_stability.py: the table's damping, the "
             f"sensor's filter left out):",
             f"    {'k_e [N/m]':>10s} {'overshoot [%]':>14s} {'hold rms [N]':>13s} {'hold max [N]':>13s} "
             f"{'last 0.1 s: error [N]':>22s} {'std [N]':>8s} {'settled':>8s} {'stable':>7s}"]
    for k, f in sf.items():
        if "refused" in f:
            lines.append(f"    {k:10.3g} refused by the plant: {f['refused']}")
            continue
        lines.append(f"    {k:10.3g} {f['overshoot_percent']:14.1f} {f['hold_error_rms_N']:13.2f} "
                     f"{f['hold_error_max_N']:13.2f} {f['last_100ms_error_N']:22.2f} {f['last_100ms_std_N']:8.2f} "
                     f"{'yes' if f['settled'] else 'no':>8s} {'yes' if f['stable'] else 'NO':>7s}")
    for cond, f in imp.items():
        lines.append(f"  impedance control (Fig. 36), {cond.replace('_', ' ')}: M_d {f['m_d']:g} kg, D_d "
                     f"{f['d_d']:g} N s/m, K_d {f['k_d']:g} N/m; measured e_z vs the designed response to the "
                     f"measured F_e: max difference {f['max_difference_mm']:.4f} mm of a {f['peak_e_mm']:.3f} mm peak "
                     f"({100 * f['relative_difference']:.1f} %); steady force {f['steady_force_N']:.2f} N (closed "
                     f"form K_d k_e / (K_d + k_e) x 1 mm = {f['steady_force_closed_form_N']:.2f} N)")
    # figure 1: the task
    t = task["t"]
    fig, axes = plt.subplots(3, 1, figsize=(9, 8), sharex=True)
    ax = axes[0]
    ax.plot(t, task["f_n"], lw=1, label="normal force (plant)")
    ax.plot(mj_task["t"], mj_task["f_n"], lw=1, ls=":", color="C2", label="normal force (MuJoCo plant)")
    ax.plot(t, task["f_d"], "k--", lw=1.2, label="F_d (force-controlled)")
    ax.set_ylabel("f_n [N]")
    axes[1].plot(t, 1e3 * task["p_d"][:, 0], "k--", lw=1.2, label="x_d")
    axes[1].plot(t, 1e3 * task["p"][:, 0], lw=1, label="x")
    axes[1].set_ylabel("x [mm]")
    axes[2].plot(t, 1e3 * (task["p_d"][:, 2] - 1.2), "k--", lw=1.2, label="z_d - z_home")
    axes[2].plot(t, 1e3 * (task["p"][:, 2] - 1.2), lw=1, label="z - z_home")
    axes[2].axhline(-1e3 * SURFACE_GAP, color="brown", lw=0.8, label="surface (tool tip)")
    axes[2].set_ylabel("z [mm]")
    axes[2].set_xlabel("t [s]")
    starts = [p[1] for p in hybrid.phases]
    for a in axes:
        for (name, t_a, t_b, *_), shade in zip(hybrid.phases, [0.0, 0.08] * len(starts)):
            a.axvspan(t_a, t_b, color="grey", alpha=shade, lw=0)
    for name, t_a, t_b, *_ in hybrid.phases:
        axes[0].text((t_a + t_b) / 2, axes[0].get_ylim()[1] * 0.92, name, ha="center", fontsize=7)
    _write(fig, out_dir / "stewart_force_task.png",
           f"Direct force control (Taghirad Fig. 34): approach, {F_D:g} N ramp and hold, slide, release")
    # figure 2: the sweep
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for k, r in sweep.items():
        if "refused" in r:
            continue
        ax.plot(r["t"], r["f_n"], lw=1, label=f"k_e = {k:.0e} N/m" + ("" if sf[k]["stable"] else " (unstable)"))
    ax.plot(sweep[stiffnesses[0]]["t"], sweep[stiffnesses[0]]["f_d"], "k--", lw=1.2, label="F_d")
    ax.set_xlabel("t [s]")
    ax.set_ylabel("f_n [N]")
    ax.set_ylim(-5, 2.5 * F_D)
    _write(fig, out_dir / "stewart_force_sweep.png",
           "Direct force control over the environment's stiffness, the gains held")
    # figure 3: impedance
    fig, axes = plt.subplots(2, 1, figsize=(9, 6), sharex=True)
    for (cond, f), color in zip(imp.items(), ("C0", "C3")):
        label = cond.replace("_", " ")
        axes[0].plot(f["t"], 1e3 * f["e"], color=color, lw=1.5, label=f"measured e_z ({label})")
        axes[0].plot(f["t"], 1e3 * f["e_model"], "--", color=color, lw=1.2, alpha=0.8,
                     label=f"designed: M_d e'' + D_d e' + K_d e = F_e, F_e measured ({label})")
        axes[1].plot(f["t"], f["f_e"], color=color, lw=1, label=f"F_e,z ({label})")
    axes[0].set_ylabel("e_z = z_d - z [mm]")
    axes[1].set_ylabel("F_e,z [N]")
    axes[1].set_xlabel("t [s]")
    _write(fig, out_dir / "stewart_force_impedance.png",
           "Impedance control (Taghirad Fig. 36): the measured error beside the designed impedance's response")
    summary["files"] = ["stewart_force_task.png", "stewart_force_sweep.png", "stewart_force_impedance.png"]
    return finish(summary, lines, out_dir, t0, progress)
