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
    from pkm_control.benchmarks import demo as benchmark
    from pkm_control.graph import bringup

    seen = {}

    def run_recorded(options, progress=None, out=None):
        seen["set"] = options.overrides
        return dict({"goal_status": "finished", "missing_samples": 0, "deadline_misses": 0}, **events), None

    monkeypatch.setattr(bringup, "run_recorded", run_recorded)
    with pytest.raises(RuntimeError, match=refusal):
        benchmark.run_one("CF rb", "cf_rb", {"type": "circle"}, [0.0] * 6, 1.0, timeout=600.0, quiet=True)
    assert "joint_controller.lockstep_timeout=30.0" in seen["set"]


def test_the_demo_table_prints_the_same_figures_as_before():
    """``print_table`` on synthetic runs gives, below the machine line, the table `make demo` printed before it went
    through ``report.Table`` (the text below is the output of the earlier print_table on these runs): the same
    values to the same digits. The x SJ column is the RMS ratio, 10 and 200 by construction (every actuator's error
    scaled by 1/10 and 1/200)."""
    from pkm_control.benchmarks.report import Provenance

    sj = [3e-4, 2e-4, 4.12345e-4, 1e-4, 2.5e-4, 3.5e-4]
    metrics = [
        {"name": "SJ", "actuator_rms": sj, "actuator_max": [6e-4, 5e-4, 7.5e-4, 2e-4, 5e-4, 6.5e-4],
         "platform_position_rms": 2.2e-4, "platform_position_max": 5.01e-4, "platform_orientation_rms": 1.234e-3,
         "cycle": {"median_us": 87.25, "p99_us": 140.04}},
        {"name": "CF rb", "actuator_rms": [3e-5, 2e-5, 4.12345e-5, 1e-5, 2.5e-5, 3.5e-5],
         "actuator_max": [9e-5, 8e-5, 9.9e-5, 3e-5, 7e-5, 8.5e-5], "platform_position_rms": 3.3e-5,
         "platform_position_max": 7.7e-5, "platform_orientation_rms": 1.9e-4, "cycle": {"median_us": 101.15}},
        {"name": "CF rb+frict", "actuator_rms": [1.5e-6, 1e-6, 2.061725e-6, 5e-7, 1.25e-6, 1.75e-6],
         "actuator_max": [5e-6, 4e-6, 6e-6, 3e-6, 5.5e-6, 4.5e-6], "platform_position_rms": 1.5e-6,
         "platform_position_max": 4.4e-6, "platform_orientation_rms": 9.9e-6},
    ]
    bm.add_improvement(metrics)
    assert [m["improvement"] for m in metrics] == pytest.approx([1.0, 10.0, 200.0], rel=1e-12)
    machine = {"host": "bench-host", "cpu": "Test CPU", "cores": 2, "python": "3.11.7",
               "date": "2026-01-02 03:04:05 UTC"}
    text = bm.print_table(metrics, [f"drive{i}" for i in range(1, 7)], Provenance(machine, "pkm demo"))
    before = """\
PaLiDA benchmark (Abdellatif sec. V): circle inclined 30 deg, 1 m/s, simulated palida with friction in all joints
run            RMS drive1  RMS drive2  RMS drive3  RMS drive4  RMS drive5  RMS drive6   max |e|   pos RMS   pos max   ori RMS   x SJ cycle p50     p99
                       mm          mm          mm          mm          mm          mm        mm        mm        mm      mrad               us      us
SJ                 0.3000      0.2000      0.4123      0.1000      0.2500      0.3500    0.7500    0.2200    0.5010    1.2340    1.0      87.2   140.0
CF rb              0.0300      0.0200      0.0412      0.0100      0.0250      0.0350    0.0990    0.0330    0.0770    0.1900   10.0     101.2     nan
CF rb+frict        0.0015      0.0010      0.0021      0.0005      0.0013      0.0018    0.0060    0.0015    0.0044    0.0099  200.0       nan     nan"""  # noqa: E501
    lines = text.splitlines()
    assert lines[1] == ("robot palida; bench-host (Test CPU, 2 cores), Python 3.11.7, 2026-01-02 03:04:05 UTC; "
                        "pkm demo")
    assert "\n".join(lines[:1] + lines[2:]) == before


def test_the_demo_summary_file_carries_the_machine_block(report):
    import json

    summary = json.loads((report["out"] / "palida_benchmark.json").read_text())
    assert set(summary["machine"]) == {"host", "cpu", "cores", "python", "date"} and summary["command"]
    assert [r["improvement"] for r in summary["runs"]] == pytest.approx([m["improvement"] for m in report["metrics"]])


def test_the_identified_table_prints_the_same_figures_as_before():
    """``demo_identified.table`` on a synthetic summary: the rows' figures as the earlier table printed them (its
    rows below), the SJ row without a force prediction ("-"), and the summary's machine line."""
    from pkm_control.benchmarks.demo_identified import table

    def run(force, rms, mx, x):
        return {"force_prediction_rms": force, "tracking_rms": rms, "tracking_max": mx, "improvement_over_sj": x}

    s = {"robot": "palida", "command": "pkm demo --identified",
         "machine": {"host": "h", "cpu": "c", "cores": 2, "python": "3.11.7", "date": "2026-01-02 03:04:05 UTC"},
         "true_robot": {"scale": 0.2, "seed": 1, "encoder_resolution_m": 1e-6, "effort_noise_std_n": 2.0},
         "sets": {"nominal": run(12.3456, 4.2e-5, 9.1e-5, 7.25), "identified": run(2.0004, 3.1e-6, 7.7e-6, 98.04),
                  "true": run(1.9996, 2.9e-6, 6.6e-6, 104.96)},
         "sj": {"tracking_rms": 3.05e-4, "tracking_max": 6.9e-4},
         "identified": {"parameters": [0] * 24, "method": "wls", "condition_number": 123.456789},
         "excitation": {"condition": 45.678912, "baseline_condition": 456.78912},
         "files": {"true": "results/palida_true_parameters.yaml"}, "seconds": 321.4}
    lines = table(s).splitlines()
    assert lines[1] == "robot palida; h (c, 2 cores), Python 3.11.7, 2026-01-02 03:04:05 UTC; pkm demo --identified"
    before = ["nominal                         12.346                0.0420    0.0910    7.2",
              "identified                       2.000                0.0031    0.0077   98.0",
              "true                             2.000                0.0029    0.0066  105.0",
              "SJ (no model)                                          0.3050    0.6900    1.0"]
    rows = lines[4:8]
    assert [r.split() for r in rows[:3]] == [b.split() for b in before[:3]]
    assert rows[3].split() == ["SJ", "(no", "model)", "-"] + before[3].split()[3:]
    assert lines[8].startswith("identified: 24 base parameters, wls, condition number 123.5;")
    # which model the controllers have (issue 25): the fair figure and the upper bound, from this summary's sets
    assert lines[10].startswith("controllers' model (computed force): nominal: ")
    assert lines[11] == "fair improvement (identified) x SJ 98.0; upper bound (true) x SJ 105.0"


def test_the_demo_progress_says_what_a_run_waits_for():
    """The progress bar of a demo run names its phase: the nodes starting (no goal status yet: seconds of wall time
    at 0 s of sim time), the goal accepted, the approach (before the goal's start), the motion, its end."""
    from pkm_control.benchmarks.demo import run_phase

    assert "starting the nodes" in run_phase(0.0, {})
    assert "accepted" in run_phase(0.0, {"state": "accepted"})
    started = {"state": "started", "motion_start": 0.0, "goal_start": 0.4, "end": 2.0}
    assert run_phase(0.2, started) == "approach to the start"
    assert run_phase(0.5, started) == "motion"
    assert run_phase(2.0, {**started, "state": "finished"}) == "motion finished"


def test_a_run_without_samples_within_its_motion_is_said_not_a_traceback():
    """A real-time run whose recorder got no sample (or none within the motion): run_metrics names the run, the
    motion's span and what was recorded (it was a numpy broadcast error, shapes (0,3) (0,)); the bringup summary
    carries the sentence (graph.recorder.outcome)."""
    from pkm_control.errors import InvalidInputError
    from pkm_control.graph.recorder import outcome

    kin = robot_kinematics("palida")
    spec = {"type": "point_to_point", "start": [0, 0, -0.85, 0, 0, 0], "goal": [0.02, 0, -0.85, 0, 0, 0],
            "duration": 1.0}
    traj = trajectory_from_spec(kin, spec)
    empty = RunRecord("canopen", "pd", np.array([]), np.zeros((0, 6)), np.zeros((0, 6)), np.zeros((0, 6)))
    with pytest.raises(InvalidInputError, match=r"no sample of the run 'canopen' was recorded within its motion, "
                                                r"5\.000 s to 6\.000 s \(0 samples recorded, none at all\)"):
        run_metrics(kin, traj, empty, 5.0)
    early = RunRecord("canopen", "pd", np.array([1.0, 2.0]), np.zeros((2, 6)), np.zeros((2, 6)), np.zeros((2, 6)))
    with pytest.raises(InvalidInputError, match=r"\(2 samples recorded, from 1\.000 s to 2\.000 s\)"):
        run_metrics(kin, traj, early, 5.0)
    out = outcome(kin, spec, None, empty, {"goal_start": 5.0}, 4_000_000)
    assert out["tracking"].startswith("no sample of the run") and "actuator_rms" not in out


def test_missing_samples_are_the_publishers_empty_slots_whatever_the_clocks_phase():
    """A real-time run on the wall clock (CI: a CAN run counted 1 missing sample where none was lost): the 250 Hz
    loop's periods have a phase and a jitter of their own, joint_controller publishes the first period of each 12 ms
    slot (graph.losses), so the samples are 8, 12 or 16 ms apart and their count within the 1 s goal is 83 or 84.
    None is missing, for any phase and goal start; a slot whose sample is taken out is one missing, wherever it is."""
    from pkm_control.graph.recorder import outcome

    kin = robot_kinematics("palida")
    spec = {"type": "point_to_point", "start": [0, 0, -0.85, 0, 0, 0], "goal": [0.02, 0, -0.85, 0, 0, 0],
            "duration": 1.0}
    slot, period = 12_000_000, 4_000_000
    rng = np.random.default_rng(7)
    for _ in range(40):
        t0_ns = 1_795_792_000_000_000_000 + int(rng.integers(0, 10**9))
        periods = t0_ns - 10**9 + int(rng.integers(0, period)) + np.arange(750) * period
        periods += rng.integers(-300_000, 300_000, len(periods))           # the wall clock's jitter
        first = periods[np.r_[True, np.diff(periods // slot) > 0]]
        keep = [np.ones(len(first), bool)]
        inside = np.flatnonzero((first // slot >= t0_ns // slot) & (first // slot <= (t0_ns + 10**9) // slot))
        lost = np.ones(len(first), bool)
        lost[rng.choice(inside)] = False
        keep.append(lost)
        for mask, missing in zip(keep, (0, 1)):
            t = first[mask] * 1e-9
            rec = RunRecord("canopen", "pd", t, np.zeros((len(t), 6)), np.zeros((len(t), 6)), np.zeros((len(t), 6)))
            assert outcome(kin, spec, None, rec, {"goal_start": t0_ns * 1e-9}, slot)["missing_samples"] == missing


def test_the_loop_benchmark_counts_from_the_loops_first_controlled_period_when_it_comes_after_the_start():
    """benchmarks.loop._figures: the counters over the motion are end minus start; joint_controller restarts its
    counters at its first controlled period, and when that came after the motion's start (the end's count below the
    start's) the figures count from there."""
    from pkm_control.benchmarks.loop import _figures

    def diag(cycles, safe, misses):
        return {"joint_controller": {"cycles": str(cycles), "safe_periods": str(safe), "deadline_misses": str(misses)}}

    plain = _figures((diag(1000, 10, 2), diag(21_000, 30, 12)), True)
    assert (plain["periods"], plain["deadline_misses"], plain["safe_percent"]) == (20_000, 10, 0.1)
    assert not plain["from_first_control"]
    later = _figures((diag(9000, 8000, 40), diag(4000, 40, 4)), True)
    assert (later["periods"], later["deadline_misses"], later["safe_percent"]) == (4000, 4, 1.0)
    assert later["from_first_control"] and 100 * 4 / 4004 == pytest.approx(later["deadline_miss_percent"])


@pytest.mark.parametrize("controller, mode", [("direct_force", "direct_force"), ("cf_rb_friction", "pd_feedforward")])
def test_the_loop_benchmarks_compute_floor_runs_the_nodes_controller_in_control(controller, mode):
    """benchmarks.loop._compute_floor on 300 periods: both phases (back to back, on the 2 kHz runner) timed every
    period, finite, the controller in control in every period (the run's streams reached it: no safe behaviour), its
    law the class controllers.yaml's mode names (control/force.py FORCE_LAWS, control/laws.py LAWS): what
    joint_controller builds; direct force control on the deburring face is in contact."""
    from pkm_control.benchmarks.loop import _compute_floor
    from pkm_control.control.force import FORCE_LAWS
    from pkm_control.control.laws import LAWS

    floor = _compute_floor("palida", controller, 0.15)
    assert floor["periods"] == floor["periodic_periods"] == 300
    for phase in ("back_to_back", "periodic"):
        median, p99 = floor[f"{phase}_median_us"], floor[f"{phase}_p99_us"]
        assert 0 < median <= p99 < float("inf")
        assert floor[f"{phase}_safe_periods"] == 0
    assert floor["law"] == {**LAWS, **FORCE_LAWS}[mode].__name__
    assert floor["contact"] == ("contact" if controller == "direct_force" else "")
