"""Excitation trajectories (identification/excitation.py, trajectory type 'fourier'): the series' derivatives
against finite differences, its exact bounds, the limits on the designed trajectory at ten times the design's
check density, the condition number against the baseline's, the spec's round trip, bad specs."""

import dataclasses
import math

import numpy as np
import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pkm_control.cli import main
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.parameters import base_parameters
from pkm_control.errors import InvalidInputError, JointLimitError
from pkm_control.identification.excitation import check_excitation, design_excitation, excitation_limits
from pkm_control.kinematics.task_space import Pose, so3_log
from pkm_control.trajectory.paths import CHECK_STEP, FourierTrajectory, Sequence
from pkm_control.trajectory.spec import trajectory_from_spec
from pkm_control.trajectory.streaming import GoalScheduler, parse_goal

ROBOTS = ["stewart", "palida", "lopes", "delta", "planar_redundant"]


def at_rest(rng, n, K, scale):
    """Random coefficients (n, K) with sum_k a_k = 0 and sum_k k b_k = 0."""
    a, b = scale * rng.standard_normal((n, K)), scale * rng.standard_normal((n, K))
    a[:, 0] = -a[:, 1:].sum(axis=1)
    b[:, 0] = -(np.arange(2, K + 1) * b[:, 1:]).sum(axis=1)
    return a, b


@pytest.mark.parametrize("robot", ["palida", "delta", "planar_redundant"])   # spatial, translation, planar
def test_fourier_derivatives_equal_finite_differences(robot):
    kin = robot_dynamics(robot).kin
    a, b = at_rest(np.random.default_rng(3), kin.task.dim, 4, 0.05)
    traj = FourierTrajectory(kin.task, 2.0, kin.model.config["home"], a, b, periods=2)
    assert traj.duration == 4.0
    ts, h = np.linspace(0.05, 3.95, 23), 1e-5
    P, R, V, A = traj.sample_many(ts)
    (Pp, Rp, Vp, _), (Pm, Rm, Vm, _) = traj.sample_many(ts + h), traj.sample_many(ts - h)
    lin = (Pp - Pm) / (2 * h)
    ang = np.array([so3_log(rp @ rm.T) for rp, rm in zip(Rp, Rm)]) / (2 * h)
    fd = {"spatial": np.hstack([lin, ang]), "translation": lin,
          "planar": np.column_stack([lin[:, :2], kin.task.alpha_sign * ang[:, 2]])}[kin.task.kind]
    assert np.abs(V - fd).max() < 1e-8
    assert np.abs(A - (Vp - Vm) / (2 * h)).max() < 1e-6
    # the scalar path agrees with the batch, and the motion rests at both ends and beyond
    pose, twist, accel = traj.sample(ts[5])
    assert np.allclose(pose.position, P[5]) and np.allclose(twist, V[5]) and np.allclose(accel, A[5])
    for t in (-1.0, 0.0, traj.duration, traj.duration + 1.0):
        _, twist, accel = traj.sample(t)
        assert np.abs(twist).max() < 1e-12 and np.abs(accel).max() < 1e-12
    assert np.allclose(traj.start_pose.position, traj.end_pose.position, atol=1e-12)


def test_fourier_bounds_hold_and_are_reached_by_one_harmonic():
    kin = robot_dynamics("palida").kin
    a, b = at_rest(np.random.default_rng(4), 6, 5, 0.1)
    traj = FourierTrajectory(kin.task, 3.0, kin.model.config["home"], a, b)
    x, xd, xdd = traj.coordinates(np.linspace(0, 3.0, 30001))
    dev, speed, acc = traj.bounds()
    assert (np.abs(x - traj.offset).max(axis=0) <= dev).all()
    assert (np.abs(xd).max(axis=0) <= speed).all() and (np.abs(xdd).max(axis=0) <= acc).all()
    # a single sinusoid of amplitude c: the bounds are c / w, c, c w exactly (the second harmonic carries the
    # motion, the first one cancels its velocity and acceleration at t = 0, both at the same phase: c = |a_2|)
    one_a, one_b = np.zeros((6, 2)), np.zeros((6, 2))
    one_a[0] = [-0.3, 0.3]
    traj = FourierTrajectory(kin.task, 3.0, kin.model.config["home"], one_a, one_b)
    w = 2 * math.pi / 3.0
    dev, speed, acc = traj.bounds()
    assert dev[0] == pytest.approx(0.3 / w + 0.3 / (2 * w)) and speed[0] == pytest.approx(0.6)
    assert acc[0] == pytest.approx(0.3 * w + 0.3 * 2 * w)
    _, xd, _ = traj.coordinates(np.linspace(0, 3.0, 30001))
    assert np.abs(xd[:, 0]).max() == pytest.approx(0.6, rel=1e-6)       # reached at t = T / 2


def dense_limits(dyn, traj, limits):
    """Every limit, denser than the design's check (2 ms), by the test's own inverse kinematics and dynamics."""
    kin, clm = dyn.kin, dyn.kin.model
    ts = np.arange(0.0, traj.period, CHECK_STEP / 10)
    P, R, V, A = traj.sample_many(ts)
    x, xd, xdd = traj.coordinates(ts)
    assert (np.abs(x - limits.center) <= limits.half_width + 1e-12).all()
    assert (np.abs(xd) <= limits.max_velocity + 1e-12).all() and (np.abs(xdd) <= limits.max_acceleration + 1e-12).all()
    q, ok = kin.inverse_batch(P, R)
    assert ok.all()
    lo, hi = clm.model.lowerPositionLimit, clm.model.upperPositionLimit
    j = limits.joints
    assert ((q[:, j] >= lo[j]) & (q[:, j] <= hi[j])).all()
    vmax = np.asarray(clm.model.velocityLimit)[clm.actuated_idx]
    force = np.broadcast_to(np.asarray(clm.config["actuators"]["force_limit"], float), (clm.n_actuated,))
    for i in range(0, len(ts), 3):        # the dynamics every 0.6 ms (IK and the bounds above: every 0.2 ms)
        r = dyn.inverse_dynamics(Pose(P[i], R[i]), V[i], A[i])
        assert (np.abs(r.v[clm.actuated_idx]) <= vmax).all() and (np.abs(r.tau) <= force).all()


def stacked(dyn, base, traj, n):
    """The test's own stacked base regressor at n times that are not the design's samples (tau = Y p; redundant
    robots: J^T tau = Omega p)."""
    ts = (np.arange(n) + 0.37) * traj.period / n
    P, R, V, A = traj.sample_many(ts)
    rows = dyn.regressor if dyn.redundant else dyn.actuator_regressor
    return base.reduce(np.vstack([rows(Pose(P[i], R[i]), V[i], A[i]) for i in range(n)]))


@pytest.mark.parametrize("robot", ROBOTS)
@settings(max_examples=2)
@given(seed=st.integers(0, 2**31))
def test_designed_excitation_keeps_every_limit_densely(robot, seed):
    dyn = robot_dynamics(robot)
    base = base_parameters(dyn)
    samples = math.ceil(base.rank / (dyn.kin.task.dim if dyn.redundant else dyn.model.n_actuated)) + 4
    spec, report = design_excitation(dyn, 1.5, 3, seed=seed, samples=samples, evaluations=15, base=base)
    traj = trajectory_from_spec(dyn.kin, spec)
    dense_limits(dyn, traj, excitation_limits(dyn))
    assert max(report.usage.values()) <= 1.0
    # every base parameter is excited: full rank, far from round-off (an unexcitable "base" column made lopes' 1e16)
    W = stacked(dyn, base, traj, samples + 7)
    s = np.linalg.svd(W / np.linalg.norm(W, axis=0), compute_uv=False)
    assert s[-1] / s[0] > 1e-9, f"{robot}: column-scaled condition number {s[0] / s[-1]:.3g}"




def test_optimized_condition_number_below_baseline_and_spec_round_trip(palida):
    base = base_parameters(palida)
    spec, report = design_excitation(palida, 3.0, 4, seed=1, samples=40, evaluations=250, base=base)
    assert report.condition < report.baseline_condition
    # the spec as the CLI writes it (YAML) and as a goal message reads it
    again = parse_goal(yaml.safe_dump(spec, default_flow_style=None))
    traj = trajectory_from_spec(palida.kin, again)
    assert again == spec and isinstance(traj, FourierTrajectory) and traj.duration == 3.0
    # independently of the design's samples: the optimized series is better conditioned than the baseline
    cond = np.linalg.cond(stacked(palida, base, traj, 120))
    cond0 = np.linalg.cond(stacked(palida, base, trajectory_from_spec(palida.kin, report.baseline_spec), 120))
    assert cond < cond0
    # the trajectory generator takes it like any spec: an approach move from where the robot holds to its start
    kin = palida.kin
    hold = kin.task.pose(np.array(kin.model.config["home"]) + [0.02, 0, 0, 0, 0, 0])
    sched = GoalScheduler(kin, hold, 1_000_000, 10, 0)
    loaded, approach = sched.load(again)
    assert isinstance(loaded, Sequence) and approach > 0
    assert np.allclose(loaded.sample(approach)[0].position, traj.start_pose.position)


def test_check_excitation_names_each_violated_limit():
    dyn = robot_dynamics("delta")
    limits = excitation_limits(dyn)
    a, b = at_rest(np.random.default_rng(8), 3, 3, 0.02)
    traj = FourierTrajectory(dyn.kin.task, 1.0, limits.center, a, b)
    usage = check_excitation(dyn, traj, limits)
    assert 0 < max(usage.values()) < 1
    big = FourierTrajectory(dyn.kin.task, 1.0, limits.center, 20 * a, 20 * b)
    with pytest.raises(JointLimitError, match="bound"):
        check_excitation(dyn, big, limits)
    # a force limit just above the largest sampled force fails by the Lipschitz margin, one well above passes
    tau = max(abs(dyn.inverse_dynamics(*traj.sample(t)).tau).max() for t in traj.check_times())
    for field, value in (("force_limit", tau * (1 + 1e-6)), ("velocity_limit", 1e-3)):
        tight = dataclasses.replace(limits, **{field: np.full(3, value)})
        with pytest.raises(JointLimitError, match=field.replace("_", " ")):
            check_excitation(dyn, traj, tight)
    loose = dataclasses.replace(limits, force_limit=np.full(3, 2 * tau))
    assert check_excitation(dyn, traj, loose)["force"] == pytest.approx(0.5)


BAD = [
    ({"a": [[0.0, 0.0]] * 5}, "6 rows"),
    ({"a": [[1.0, float("nan")]] * 6}, "finite"),
    ({"a": [[1e300, -1e300]] * 6}, "1e\\+06|magnitude|limit"),
    ({"a": [[0.0] * 101] * 6, "b": [[0.0] * 101] * 6}, "1 to 100 harmonics"),
    ({"a": [[0.1, 0.0]] * 6}, "rest"),
    ({"b": [[0.0, 0.0, 0.0]] * 6}, "same shape"),
    ({"period": float("nan")}, "period"),
    ({"period": -1.0}, "period"),
    ({"periods": 1.5}, "whole number"),
    ({"period": 3000.0, "periods": 2}, "3600"),
    ({"offset": [0, 0, -0.85]}, "offset"),
    ({"start": [0, 0, -0.85, 0, 0, 0]}, "no field 'start'"),
    ({"speed": 1.0}, "unknown field"),
    ({"a": "many"}, "6 rows"),
    ({"a": [[0.0, 0.0]] * 5 + [[0.0]]}, "6 rows|numeric|shape"),
]


@pytest.mark.parametrize("change, message", BAD)
def test_bad_fourier_specs_are_refused_by_name(palida, change, message):
    spec = {"type": "fourier", "period": 2.0, "a": [[0.1, -0.1]] * 6, "b": [[0.0, 0.0]] * 6, **change}
    with pytest.raises(InvalidInputError, match=message):
        trajectory_from_spec(palida.kin, spec)


def test_design_refuses_bad_arguments(palida):
    for kwargs, message in (({"harmonics": 1}, "harmonics"), ({"duration": float("nan")}, "finite"),
                            ({"duration": 1e9}, "duration"), ({"samples": 3}, "regressor rows"),
                            ({"max_velocity": (0.0, 1.0)}, "max_velocity")):
        args = {"duration": 2.0, "harmonics": 3, **kwargs}
        with pytest.raises(InvalidInputError, match=message):
            design_excitation(palida, **args, evaluations=1)


def test_cli_writes_a_runnable_spec_and_prints_both_condition_numbers(tmp_path, capsys):
    out = tmp_path / "exc.yaml"
    code = main(["excite", "--robot", "delta", "--duration", "1.5", "--harmonics", "3", "--output", str(out),
                 "--evaluations", "20", "--samples", "30"])
    text = capsys.readouterr().out
    assert code == 0 and "optimized" in text and "baseline" in text
    spec = yaml.safe_load(out.read_text())
    assert isinstance(trajectory_from_spec(robot_dynamics("delta").kin, spec), FourierTrajectory)
    for argv, message in ((["--harmonics", "1"], "whole number from 2"), (["--duration", "nan"], "finite"),
                          (["--duration", "-2"], "duration"),
                          (["--output", str(tmp_path / "no" / "x.yaml")], "folder")):
        args = ["excite", "--robot", "delta", "--duration", "1.5", "--harmonics", "3", "--output", str(out), *argv]
        try:
            code = main(args)
        except SystemExit as exc:
            code = exc.code
        err = capsys.readouterr().err
        assert code == 2 and message in err and "Traceback" not in err
