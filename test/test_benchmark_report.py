"""The benchmark's report (benchmark.write_results) on synthetic runs, without ROS.

Two runs with known errors and forces: SJ (no model) and CF rb+frict (feedforward published
past the end of the measurement). The CSV files carry units in their headers and let Figs. 5-6
be re-plotted from them alone; the error sign is e = q_desired - q_measured.
"""

import csv

import numpy as np
import pytest

from pkm_control.benchmarks import palida as bm
from pkm_control.identification.runs import RunRecord, desired_motion, run_metrics
from pkm_control.kinematics import robot_kinematics
from pkm_control.trajectory import trajectory_from_spec

T0 = 0.01           # the trajectory starts 10 ms after the first recorded sample
DT = 0.0005


def forces(t):
    return 50.0 * np.sin(np.outer(t, np.arange(1, 7))) - 40.0


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    kin = robot_kinematics("palida")
    spec = bm.benchmark_spec(laps=0.05, ramp_time=0.05)
    traj = trajectory_from_spec(kin, spec)
    t = np.arange(0.0, T0 + traj.duration, DT)
    q_d, P, R = desired_motion(kin, traj, t, T0)
    platform = kin.inverse_batch(P, R)[0][:, kin.model.platform_idx]
    errors = {"SJ": 3e-4 * np.sin(np.outer(t, np.arange(1, 7)) + 1.0),
              "CF rb+frict": 2e-6 * np.cos(np.outer(t, np.arange(1, 7)))}
    ff_t = np.arange(T0, T0 + traj.duration + 0.05, DT)         # published ahead, past the last measurement
    records = [RunRecord("SJ", "pd", t, q_d - errors["SJ"], forces(t) + 1.0, platform),
               RunRecord("CF rb+frict", "cf_rb_friction", t, q_d - errors["CF rb+frict"], forces(t) + 0.5,
                            platform, ff_t, forces(ff_t))]
    metrics = [run_metrics(kin, traj, r, T0) for r in records]
    bm.add_improvement(metrics)
    out = tmp_path_factory.mktemp("report")
    bm.write_results(out, "palida", kin.model.actuated_joints, records, metrics, {"t0": T0, "trajectory": spec})
    return {"out": out, "t": t, "errors": errors, "names": kin.model.actuated_joints, "metrics": metrics,
            "q_desired": q_d}


def read_csv(path):
    with open(path) as f:
        rows = list(csv.reader(f))
    return rows[0], np.array(rows[1:], float)


def test_errors_csv_has_units_and_the_sign_convention(report):
    names = report["names"]
    for slug, run in (("pd", "SJ"), ("cf_rb_friction", "CF rb+frict")):
        header, data = read_csv(report["out"] / f"palida_benchmark_{slug}_errors.csv")
        assert header == ["t [s]"] + [f"error_{n} [m]" for n in names]
        inside = report["t"] >= T0
        np.testing.assert_allclose(data[:, 0], report["t"][inside] - T0, atol=1e-9)
        np.testing.assert_allclose(data[:, 1:], report["errors"][run][inside], rtol=1e-7, atol=1e-12)


def test_forces_csv_holds_measured_and_aligned_computed_forces(report):
    names, t = report["names"], report["t"]
    header, data = read_csv(report["out"] / "palida_benchmark_pd_forces.csv")
    assert header == ["t [s]"] + [f"tau_measured_{n} [N]" for n in names]      # SJ: no model, no computed forces
    header, data = read_csv(report["out"] / "palida_benchmark_cf_rb_friction_forces.csv")
    assert header == (["t [s]"] + [f"tau_measured_{n} [N]" for n in names]
                      + [f"tau_computed_{n} [N]" for n in names])
    assert len(data) == len(t)                            # every measured sample, none of the later feedforward
    np.testing.assert_allclose(data[:, 0], t - T0, atol=1e-9)
    np.testing.assert_allclose(data[:, 1:7], forces(t) + 0.5, rtol=1e-7)
    published = t >= T0
    np.testing.assert_allclose(data[published, 7:], forces(t[published]), rtol=1e-6, atol=1e-6)
    assert np.isnan(data[~published, 7:]).all()           # before the first feedforward sample


def test_joints_csv_replays_the_run(report):
    """The joints CSV gives back every recorded sample: measured and desired robots and the actuator errors."""
    from pkm_control.identification.runs import load_run

    run = load_run(report["out"] / "palida_benchmark_cf_rb_friction_joints.csv")
    assert (run.robot, run.controller) == ("palida", "cf_rb_friction")
    np.testing.assert_allclose(run.t, report["t"] - T0, atol=1e-9)
    np.testing.assert_allclose(run.errors, report["errors"]["CF rb+frict"], rtol=1e-7, atol=1e-11)
    kin = robot_kinematics("palida")
    np.testing.assert_allclose(run.q_desired[:, kin.model.actuated_idx], report["q_desired"], atol=1e-11)
    # measured platform = desired one (the synthetic runs err in the actuated joints only)
    np.testing.assert_allclose(run.q[:, kin.model.platform_idx], run.q_desired[:, kin.model.platform_idx],
                               atol=1e-11)


def test_plots_are_written(report):
    for f in ("palida_benchmark_errors.png", "palida_benchmark_forces.png", "palida_benchmark.json"):
        assert (report["out"] / f).stat().st_size > 1000


def test_errors_figure_reads_every_run():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = np.linspace(0.0, 1.0, 50)
    metrics = [{"name": "SJ", "_t": t, "_error": 1e-4 * np.ones((50, 2))},
               {"name": "CF rb+frict", "_t": t, "_error": 1e-7 * np.ones((50, 2))}]
    fig = bm.errors_figure(metrics, [("m", "N"), ("rad", "N m")])
    axes = np.array(fig.axes).reshape(2, 2)
    assert [ax.get_ylabel() for ax in axes[:, 0]] == ["e1 [mm]", "e2 [mrad]"]
    assert all(ax.get_yscale() == "log" for ax in axes[:, 1])
    lo, hi = axes[0, 1].get_ylim()
    assert lo <= 1e-4 and hi >= 0.1                       # both runs inside the log panel (values in mm)
    assert all(ax.get_legend() is None for ax in fig.axes) and len(fig.legends) == 1   # legend above, not on data
    assert "e = q_desired - q_measured" in fig.get_suptitle()
    plt.close(fig)


def test_joint_units_follow_the_joint_type():
    assert bm.joint_units("delta", robot_kinematics("delta").model.actuated_joints) == [("rad", "N m")] * 3


@pytest.mark.parametrize("events,refusal", [({"missing_samples": 3}, "lost 3 samples"),
                                            ({"deadline_misses": 1}, "waited more than 30.0 s")])
def test_the_demo_refuses_a_run_that_is_not_the_lockstep_one(monkeypatch, events, refusal):
    """A run whose recorder lost samples, or whose controller ran a period without an input after waiting
    LOCKSTEP_TIMEOUT, would give figures that differ from the deterministic lockstep ones: refused."""
    from types import SimpleNamespace

    from pkm_control.benchmarks import demo as benchmark
    from pkm_control.graph import bringup

    seen = {}

    def run_recorded(bargs, progress=None, out=None):
        seen["set"] = bargs.set
        return dict({"goal_status": "finished", "missing_samples": 0, "deadline_misses": 0}, **events), None

    monkeypatch.setattr(bringup, "run_recorded", run_recorded)
    args = SimpleNamespace(timeout=600.0, quiet=True)
    with pytest.raises(RuntimeError, match=refusal):
        benchmark.run_one("CF rb", "cf_rb", {"type": "circle"}, [0.0] * 6, 1.0, args)
    assert "joint_controller.lockstep_timeout=30.0" in seen["set"]
