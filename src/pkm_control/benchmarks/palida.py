"""The PaLiDA computed-force benchmark (Abdellatif et al., sec. V): metrics, timing, report.

The runs themselves go through the ROS 2 node graph (benchmarks/demo.py); this module is
ROS-free: it turns recorded joint states into tracking errors against the desired
trajectory (sampled again from the same trajectory spec, so the reference is independent
of the nodes that produced the commands), times the control cycle on the core, and
writes the table, CSV, JSON and plots.
"""

from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..identification.runs import RunRecord, desired_tree
from .report import Column, Provenance, Table, ratio, write_json

#: (run name as in Abdellatif's Figs. 5-6, controller of config/controllers.yaml)
RUNS = (("SJ", "pd"), ("CF rb", "cf_rb"), ("CF rb+frict", "cf_rb_friction"))
PAPER_CYCLE_US = 150.0       # Abdellatif sec. V: 0.15 ms per cycle at 0.5 ms sample time
TARGET_CYCLE_US = {"median": 150.0, "p99": 500.0}


def benchmark_spec(radius: float = 0.15, laps: float = 1.0, ramp_time: float = 0.4) -> dict:
    """Trajectory spec of the benchmark: circle inclined 30 deg, 1 m/s, centred at home."""
    return {"type": "benchmark_circle", "radius": radius, "speed": 1.0, "inclination_deg": 30.0,
            "laps": laps, "ramp_time": ramp_time}


def add_improvement(metrics: list[dict], baseline: str = "SJ") -> None:
    """improvement factor = RMS error of the baseline / RMS error of the run (per actuator, and overall): the
    "x SJ" column, ``report.ratio`` (none where the run's error is zero)."""
    base = next(m for m in metrics if m["name"] == baseline)
    b = np.array(base["actuator_rms"])
    for m in metrics:
        r = np.array(m["actuator_rms"])
        m["improvement_per_actuator"] = [ratio(x, y) for x, y in zip(b, r)]
        m["improvement"] = ratio(np.sqrt(np.mean(b ** 2)), np.sqrt(np.mean(r ** 2)))


def cycle_timing(robot: str, settings: dict, trajectory, n: int = 4000) -> dict:
    """Median and p99 (us) of one control cycle on the core (trajectory sample + IK + model + law).

    settings: the resolved controller settings (mode, feedforward_model, kp, kd).
    """
    from ..control import ControlCycle, FeedforwardModel, ForceLimits, make_law
    from ..dynamics import robot_dynamics

    dyn = robot_dynamics(robot)
    ff = FeedforwardModel(dyn, model=settings["feedforward_model"])
    n_a = dyn.model.n_actuated
    kp = np.broadcast_to(np.asarray(settings["kp"], float), (n_a,)) if np.size(settings["kp"]) == 1 \
        else np.asarray(settings["kp"], float)
    kd = np.broadcast_to(np.asarray(settings["kd"], float), (n_a,)) if np.size(settings["kd"]) == 1 \
        else np.asarray(settings["kd"], float)
    law = make_law(settings["mode"], kp, kd, ff)
    cycle = ControlCycle(dyn.kin, trajectory, law, ff, ForceLimits.from_config(dyn.model))
    ts = np.linspace(0.0, trajectory.duration, n)
    q0 = dyn.kin.actuated(trajectory.sample(0.0)[0])
    qd0 = np.zeros_like(q0)
    for t in ts[:50]:                       # warm-up (JIT, caches)
        cycle(t, q0, qd0)
    out = np.empty(n)
    for i, t in enumerate(ts):
        t1 = time.perf_counter()
        cycle(t, q0, qd0)
        out[i] = (time.perf_counter() - t1) * 1e6
    return {"median_us": float(np.median(out)), "p99_us": float(np.percentile(out, 99)),
            "max_us": float(out.max()), "samples": n}


def print_table(metrics: list[dict], names, provenance: Provenance | None = None, notes=()) -> str:
    """The demo's table (``report.Table``): per run the RMS error of each actuator, the largest, the platform's, the
    improvement over SJ and the control cycle; ``notes``: lines after it."""
    columns = ([Column("run", width=13, align="<")] + [Column("RMS " + n[:6], "mm", ".4f", 11) for n in names]
               + [Column("max |e|", "mm", ".4f", 9), Column("pos RMS", "mm", ".4f", 9),
                  Column("pos max", "mm", ".4f", 9), Column("ori RMS", "mrad", ".4f", 9), Column("x SJ", "", ".1f", 6),
                  Column("cycle p50", "us", ".1f", 9), Column("p99", "us", ".1f", 7)])
    nan = float("nan")
    rows = [(m["name"], *(1e3 * v for v in m["actuator_rms"]), 1e3 * max(m["actuator_max"]),
             1e3 * m["platform_position_rms"], 1e3 * m["platform_position_max"], 1e3 * m["platform_orientation_rms"],
             m["improvement"], m.get("cycle", {}).get("median_us", nan), m.get("cycle", {}).get("p99_us", nan))
            for m in metrics]
    return Table("PaLiDA benchmark (Abdellatif sec. V): circle inclined 30 deg, 1 m/s, simulated palida with "
                 "friction in all joints", "palida", tuple(columns), tuple(rows), tuple(notes)
                 ).text(provenance or Provenance.now())


def joint_units(robot: str, names) -> list[tuple[str, str]]:
    """(position unit, force unit) of each named actuated joint: ("m", "N") prismatic, ("rad", "N m") revolute."""
    from ..kinematics import robot_kinematics

    model = robot_kinematics(robot).model
    return [("rad", "N m") if model.is_revolute(n) else ("m", "N") for n in names]


def aligned_feedforward(rec: RunRecord):
    """The computed (feedforward) forces at the measured time stamps, NaN where none was published.

    None for a run without a model (no feedforward, or only zeros). The feedforward is published
    ahead of the motion; aligned on ``rec.t`` it ends where the measurement ends.
    """
    if not (rec.ff.size and np.abs(rec.ff).max() > 0):
        return None
    return np.column_stack([np.interp(rec.t, rec.ff_t, f, left=np.nan, right=np.nan) for f in rec.ff.T])


def _write_csv(path: Path, columns: dict) -> None:
    """One CSV with the header names (units in brackets) and the columns (1-D arrays of one length)."""
    np.savetxt(path, np.column_stack(list(columns.values())), delimiter=",", fmt="%.9g",
               header=",".join(columns), comments="")


def _fig_legend(fig, axes_with_lines, ncol):
    """One legend for the figure, below the axes (constrained layout keeps it out of the data)."""
    handles, labels = axes_with_lines.get_legend_handles_labels()
    fig.legend(handles, labels, loc="outside lower center", ncol=ncol, fontsize=9, frameon=False)


def errors_figure(metrics: list[dict], units):
    """Fig. 6: e = q_desired - q_measured per actuator and run; left linear, right |e| on a log scale.

    The log panels show every run at once, also where the best one is orders of magnitude below SJ.
    """
    import matplotlib.pyplot as plt

    n = len(units)
    fig, axes = plt.subplots(n, 2, figsize=(11, 1.45 * n + 1.3), sharex=True, squeeze=False, layout="constrained")
    for m in metrics:
        for k in range(n):
            axes[k, 0].plot(m["_t"], 1e3 * m["_error"][:, k], lw=0.9, label=m["name"])
            axes[k, 1].semilogy(m["_t"], 1e3 * np.abs(m["_error"][:, k]), lw=0.7)
    abs_e = np.abs(np.concatenate([m["_error"].ravel() for m in metrics])) * 1e3
    top = abs_e.max()
    bottom = max(np.percentile(abs_e[abs_e > 0], 1), 1e-5 * top) if top > 0 else 1e-6
    for k, (u, _) in enumerate(units):
        axes[k, 0].set_ylabel(f"e{k + 1} [m{u}]")
        axes[k, 0].axhline(0.0, color="0.6", lw=0.5)
        axes[k, 1].set_ylabel(f"|e{k + 1}| [m{u}]")
        axes[k, 1].set_ylim(bottom, 2 * top)
    axes[0, 0].set_title("tracking error e", fontsize=10)
    axes[0, 1].set_title("|e|, log scale", fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("t since trajectory start [s]")
    fig.suptitle("actuator tracking errors, e = q_desired - q_measured (cf. Abdellatif Fig. 6)")
    _fig_legend(fig, axes[0, 0], len(metrics))
    return fig


def forces_figure(runs, units):
    """Fig. 5: applied (measured) and computed actuator forces; runs = [(name, t, measured, computed)]."""
    import matplotlib.pyplot as plt

    n = len(units)
    fig, axes = plt.subplots(n, len(runs), figsize=(5 * len(runs) + 1, 1.45 * n + 1.3), sharex=True,
                             squeeze=False, layout="constrained")
    for j, (name, t, measured, computed) in enumerate(runs):
        for k, (_, u) in enumerate(units):
            ax = axes[k, j]
            ax.plot(t, measured[:, k], lw=0.9, label="applied (measured)")
            ax.plot(t, computed[:, k], lw=0.9, ls="--", label="computed (model)")
            if j == 0:
                ax.set_ylabel(f"F{k + 1} [{u}]")
        axes[0, j].set_title(name, fontsize=10)
    for ax in axes[-1]:
        ax.set_xlabel("t since trajectory start [s]")
    fig.suptitle("measured vs computed actuator forces (cf. Abdellatif Fig. 5)")
    _fig_legend(fig, axes[0, 0], 2)
    return fig


def write_results(out_dir: Path, robot: str, names, records: list[RunRecord], metrics: list[dict],
                  extra: dict, provenance: Provenance | None = None) -> dict:
    """JSON summary, CSV per run, Fig. 6 (actuator errors) and Fig. 5 (measured vs computed forces).

    Times in the CSV files and plots are seconds since the trajectory start (sim time - extra["t0"]).
    ``palida_benchmark_<controller>_errors.csv``: t and e = q_desired - q_measured per actuator over the
    motion. ``..._forces.csv``: t, the applied (measured) forces of every recorded sample and, for a run
    with a model, the computed forces aligned on the same time stamps (``aligned_feedforward``).
    ``..._joints.csv``: t, the measured actuated and platform joints of every recorded sample and the desired
    ones (the trajectory ``extra["trajectory"]`` sampled again), what a replay needs (``runs.load_run`` gives
    every tree joint back).
    """
    from ..kinematics import robot_kinematics
    from ..identification.runs import write_joints_csv
    from ..trajectory import trajectory_from_spec

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_dir.mkdir(parents=True, exist_ok=True)
    units = joint_units(robot, names)
    t0 = extra.get("t0", 0.0)
    kin = robot_kinematics(robot)
    trajectory = trajectory_from_spec(kin, extra["trajectory"])
    replay = list(kin.model.actuated_joints) + list(kin.model.platform_joints)
    replay_idx = [kin.model.joint_index[n] for n in replay]
    runs, with_model = [], []
    for rec, m in zip(records, metrics):
        slug = m["controller"]
        _write_csv(out_dir / f"palida_benchmark_{slug}_errors.csv",
                   {"t [s]": m["_t"], **{f"error_{n} [{u}]": e for n, (u, _), e in zip(names, units, m["_error"].T)}})
        computed = aligned_feedforward(rec)
        forces = {"t [s]": rec.t - t0,
                  **{f"tau_measured_{n} [{u}]": f for n, (_, u), f in zip(names, units, rec.tau.T)}}
        if computed is not None:
            forces.update({f"tau_computed_{n} [{u}]": f for n, (_, u), f in zip(names, units, computed.T)})
            with_model.append((rec.name, rec.t - t0, rec.tau, computed))
        _write_csv(out_dir / f"palida_benchmark_{slug}_forces.csv", forces)
        q_desired = desired_tree(kin, trajectory, rec.t, t0)[0][:, replay_idx]
        write_joints_csv(out_dir / f"palida_benchmark_{slug}_joints.csv", kin, rec.controller, rec.t - t0, replay,
                         np.hstack([rec.q, rec.platform]), q_desired)
        runs.append({k: v for k, v in m.items() if not k.startswith("_")})
    summary = write_json(out_dir / "palida_benchmark.json",
                         {"robot": robot, "actuated_joints": list(names), "runs": runs, **extra},
                         provenance or Provenance.now())

    figures = [("palida_benchmark_errors.png", errors_figure(metrics, units))]
    if with_model:
        figures.append(("palida_benchmark_forces.png", forces_figure(with_model, units)))
    for name, fig in figures:
        fig.savefig(out_dir / name, dpi=110)
        plt.close(fig)
    return summary
