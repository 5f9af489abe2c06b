"""Reproduction of Lopes (seed 001), sec. 5: Table 2, the P1 -> P2 -> P1 motion, Figs. 3-7.

``pkm reproduce lopes``. The platform moves in Lopes' coordinates [x y z psi theta phi] (eq. 3)
from P1 = [0, 0, 2000 mm, 0, 0, 0] to P2 = [-100, -200, 2500 mm, 15, -15, 15 deg] and back to P1,
each segment a straight line in these coordinates time-scaled by the 3rd-order trigonometric
rest-to-rest spline (``trajectory.profiles.trig_spline3``: C2 at P2, where the platform stops).
Actuator positions, velocities, accelerations (Fig. 3) come from the kinematics; the actuator
forces (Fig. 4) and the shares of the platform (Fig. 5), the six fixed-length links (Fig. 6) and
the six actuators (Fig. 7) from Lopes' generalized-momentum dynamics
(``dynamics.generalized_momentum``, gravity included in every share, no friction, as in the
paper). Every sample is cross-checked against the generic engine.

What the paper does not give, and what we chose: the text states no duration, no spline formula
and no force value (Figs. 3-7 are not in the text we have). We take T = 2 s per segment (4 s in
all): the actuators then stay below their 1 m/s velocity limit of the config; the spline is the
symmetric order-3 trigonometric rest-to-rest polynomial (profiles.py). The paper's one
quantitative statement about Figs. 5-7 is that the platform and link contributions are
"equivalent in magnitude"; the summary reports the ratio of their peaks.
"""

from __future__ import annotations

import csv
import math
import pathlib
import time

import numpy as np

from ...dynamics import robot_dynamics
from ...dynamics.generalized_momentum import Formulation
from ...trajectory import WaypointTrajectory, trig_spline3
from . import finish

ROBOT = "lopes"
DEG = math.pi / 180.0
P1 = np.array([0.0, 0.0, 2.0, 0.0, 0.0, 0.0])                      # [x y z psi theta phi], m and rad
P2 = np.array([-0.1, -0.2, 2.5, 15 * DEG, -15 * DEG, 15 * DEG])
SEGMENT_DURATION = 2.0                                               # s per segment (not in the paper)
DT = 0.002                                                           # s, sampling of the plots / CSV

# Lopes Table 2, printed beside the config values
PAPER_TABLE2 = {"r_B [m]": 1.500, "r_P [m]": 0.750, "L [m]": 1.837, "phi_B [deg]": 15.0, "phi_P [deg]": 0.0,
                "m_P [kg]": 1.430, "m_A [kg]": 0.123, "m_L [kg]": 0.389, "I_Pxx [kg m^2]": 0.2,
                "I_Pyy [kg m^2]": 0.2, "I_Pzz [kg m^2]": 0.4, "I_Lxx [kg m^2]": 0.0, "I_Lyy [kg m^2]": 0.1,
                "I_Lzz [kg m^2]": 0.1, "b_cm [m]": 0.918}


def _table2(cfg):
    geo, b = cfg.blocks["geometry"], cfg.blocks["bodies"]
    ang_b = geo["base_angles_deg"]
    ang_p = geo["platform_angles_deg"]
    return {"r_B [m]": geo["base_radius"], "r_P [m]": geo["platform_radius"], "L [m]": geo["link_length"],
            # phi: angle between the two connection points of a leg pair (config geometry notes)
            "phi_B [deg]": abs(ang_b[1] - ang_b[0]), "phi_P [deg]": abs(ang_p[1] - ang_p[0]),
            "m_P [kg]": b["platform"]["mass"], "m_A [kg]": b["actuator"]["mass"], "m_L [kg]": b["link"]["mass"],
            "I_Pxx [kg m^2]": b["platform"]["inertia"][0], "I_Pyy [kg m^2]": b["platform"]["inertia"][1],
            "I_Pzz [kg m^2]": b["platform"]["inertia"][2], "I_Lxx [kg m^2]": b["link"]["inertia"][0],
            "I_Lyy [kg m^2]": b["link"]["inertia"][1], "I_Lzz [kg m^2]": b["link"]["inertia"][2],
            "b_cm [m]": round(geo["link_length"] - b["link"]["com"][0], 12)}


def _write_csv(path, header, rows):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        for r in rows:
            w.writerow([f"{x:.10g}" for x in r])


def _plot(path, t, series, ylabels, title, t_via):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, axes = plt.subplots(len(series), 1, figsize=(9, 2.6 * len(series) + 0.6), sharex=True, squeeze=False)
    for ax, y, lab in zip(axes[:, 0], series, ylabels):
        for i in range(y.shape[1]):
            ax.plot(t, y[:, i], label=f"actuator {i + 1}", lw=1.3)
        ax.axvline(t_via, color="0.6", ls=":", lw=1)
        ax.axhline(0.0, color="0.8", lw=0.8)
        ax.set_ylabel(lab)
        ax.grid(alpha=0.3)
    axes[0, 0].set_title(title)
    axes[0, 0].legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    axes[-1, 0].set_xlabel("t [s]   (dotted: platform at P2)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _peak(a):
    """(max |a|, leg 1-based, time index)."""
    k = np.unravel_index(np.argmax(np.abs(a)), a.shape)
    return float(np.abs(a).max()), int(k[1]) + 1, int(k[0])


def run(out_dir: pathlib.Path, progress: bool = True) -> dict:
    out = pathlib.Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    dyn = robot_dynamics(ROBOT)
    kin = dyn.kin
    gm = Formulation(dyn)
    cfg = dyn.model.spec
    act = dyn.model.actuated_idx

    table = _table2(cfg)
    lines = ["Lopes Table 2 (config value | paper):"]
    lines += [f"  {k:16s} {v:10.4g} | {PAPER_TABLE2[k]:.4g}" for k, v in table.items()]

    traj = WaypointTrajectory([P1, P2, P1], [SEGMENT_DURATION, SEGMENT_DURATION], profile=trig_spline3)
    t = np.arange(0.0, traj.duration + 0.5 * DT, DT)
    X, Xd, Xdd = traj.evaluate(t)
    n = len(t)
    l, ld, ldd = np.empty((n, 6)), np.empty((n, 6)), np.empty((n, 6))
    keys = ("total", "platform", "links", "actuators", "platform_gravity", "links_gravity", "actuators_gravity")
    F = {k: np.empty((n, 6)) for k in keys}
    worst_engine = 0.0
    it = range(n)
    if progress:
        from ...progress import progress_bar
        it = progress_bar(it, desc="lopes P1-P2-P1", unit="sample", leave=False)
    for k in it:
        pose, twist, accel = gm.twist_from_euler(X[k], Xd[k], Xdd[k])
        m = kin.inverse(pose, twist, accel)                     # joint limits checked along the motion
        l[k], ld[k], ldd[k] = m.q[act], m.v[act], m.a[act]
        c = gm.contributions_euler(pose, Xd[k], Xdd[k])
        for key in keys:
            F[key][k] = c[key]
        ref = dyn.inverse_dynamics(pose, twist, accel, friction=False).tau
        worst_engine = max(worst_engine, float(np.abs(c["total"] - ref).max() / np.abs(ref).max()))

    legs = [f"{i}" for i in range(1, 7)]
    _write_csv(out / "lopes_trajectory.csv", ["t", "x", "y", "z", "psi", "theta", "phi"],
               np.column_stack([t, X]))
    _write_csv(out / "lopes_fig3_actuators.csv",
               ["t"] + [f"l{i}" for i in legs] + [f"ld{i}" for i in legs] + [f"ldd{i}" for i in legs],
               np.column_stack([t, l, ld, ldd]))
    figs = {"fig4_forces": ("total", "Fig. 4: developed actuator forces"),
            "fig5_platform": ("platform", "Fig. 5: mobile-platform contribution to the actuator forces"),
            "fig6_links": ("links", "Fig. 6: fixed-length links contribution to the actuator forces"),
            "fig7_actuators": ("actuators", "Fig. 7: actuators contribution to the actuator forces")}
    for name, (key, _) in figs.items():
        cols = [f"tau{i}" for i in legs]
        data = [t, F[key]]
        if key != "total":
            cols += [f"tau{i}_gravity" for i in legs]
            data.append(F[f"{key}_gravity"])
        _write_csv(out / f"lopes_{name}.csv", ["t"] + cols, np.column_stack(data))

    t_via = SEGMENT_DURATION
    _plot(out / "lopes_fig3_actuators.png", t, [l, ld, ldd], ["l [m]", "l' [m/s]", "l'' [m/s^2]"],
          "Fig. 3: actuator trajectories (a) position (b) velocity (c) acceleration", t_via)
    for name, (key, title) in figs.items():
        _plot(out / f"lopes_{name}.png", t, [F[key]], ["force [N]"], title + " (gravity included)", t_via)

    pk = {k: _peak(F[k]) for k in ("total", "platform", "links", "actuators")}
    kin_part = {k: float(np.abs(F[k] - F[f"{k}_gravity"]).max()) for k in ("platform", "links", "actuators")}
    ratio = pk["links"][0] / pk["platform"][0]
    summary = {
        "robot": ROBOT,
        "trajectory": {"P1": P1.tolist(), "P2": P2.tolist(), "units": "m, rad ([x y z psi theta phi])",
                       "profile": "3rd-order trigonometric rest-to-rest spline per segment",
                       "segment_duration_s": SEGMENT_DURATION, "samples": n, "dt_s": DT},
        "table2_config": table, "table2_paper": PAPER_TABLE2,
        "actuator_position_range_m": [float(l.min()), float(l.max())],
        "peak_actuator_velocity_m_s": _peak(ld)[0],
        "peak_actuator_acceleration_m_s2": _peak(ldd)[0],
        "peak_force_N": {k: {"value": v[0], "actuator": v[1], "t_s": float(t[v[2]])} for k, v in pk.items()},
        "peak_kinetic_part_N": kin_part,
        "static_force_at_P1_N": F["total"][0].tolist(),
        "links_to_platform_peak_ratio": ratio,
        "max_relative_difference_vs_engine": worst_engine,
        "paper_numbers": "the text states no force, velocity or timing values (Figs. 3-7 are not in the text); "
                         "its claim: platform and link contributions are equivalent in magnitude",
        "files": sorted(p.name for p in out.glob("lopes_*")),
    }
    lines += [f"\nP1 -> P2 -> P1, {SEGMENT_DURATION:g} s per segment, {n} samples "
              f"(3rd-order trigonometric splines; duration not given in the paper)",
              f"  actuator positions      {l.min():.4f} .. {l.max():.4f} m",
              f"  peak |l'|  {_peak(ld)[0]:8.4f} m/s     peak |l''| {_peak(ldd)[0]:8.4f} m/s^2   (Fig. 3)",
              f"  {'contribution':12s} {'peak |tau| [N]':>15s} {'actuator':>9s} {'t [s]':>7s} "
              f"{'kinetic part [N]':>17s}"]
    for k, (v, i, j) in pk.items():
        kp = kin_part.get(k, float(np.abs(F["total"] - sum(F[f"{b}_gravity"] for b in kin_part)).max()))
        lines.append(f"  {k:12s} {v:15.4f} {i:9d} {t[j]:7.3f} {kp:17.4f}")
    lines += [f"  links / platform peak ratio: {ratio:.3f}   (paper: 'equivalent in magnitude')",
              f"  max relative difference vs the generic engine: {worst_engine:.2e}"]
    return finish(summary, lines, out, t0, progress)
