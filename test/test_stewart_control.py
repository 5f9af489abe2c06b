"""`pkm reproduce stewart-control` (reproduce/stewart_control.py): every Taghirad motion law, task and joint space, on
the simulated Gough-Stewart platform; exact model, +-20 % masses, noisy encoders.

* the command (--quick --json) runs and gives one entry per law with finite figures per condition;
* the trajectory is as demanding as stated (legs at 90 % of their velocity limit), inside the ranges;
* the mismatched plant is the stated one: its inverse dynamics is the nominal one with each body kind's inertias
  scaled (checked by scaling the nominal tree's per-body contributions, not through the code under test);
* with the exact model IDC tracks far better than PD, in task and in joint space;
* the adaptive law's estimate moves towards the plant's: the force it predicts along the trajectory approaches the
  plant's inverse dynamics (the generic engine on the plant's own tree, not the law's regressor).
"""

import json

import numpy as np
import pytest

from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.parameters import share_across_legs
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.noise import NoisyEncoders
from pkm_control.benchmarks.reproduce import stewart_control as sc
from pkm_control.benchmarks.reproduce.tracking import track

DT = 0.0005


@pytest.fixture(scope="module")
def dyn():
    return robot_dynamics("stewart")


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    import io
    from contextlib import redirect_stdout

    from pkm_control.cli import main

    out = tmp_path_factory.mktemp("stewart_control")
    buf = io.StringIO()
    with redirect_stdout(buf):
        assert main(["reproduce", "stewart-control", "--quick", "--json", "--out", str(out)]) in (None, 0)
    return json.loads(buf.getvalue()), out


def test_quick_run_gives_every_law_and_condition_with_finite_figures(quick):
    s, out = quick
    assert set(s["laws"]) == {law for _, law, _ in sc.LAWS}
    assert {e["space"] for e in s["laws"].values()} == {"task", "joint"}
    for law, e in s["laws"].items():
        assert set(e["conditions"]) == set(sc.CONDITIONS), law
        for cond, f in e["conditions"].items():
            for key in ("position_rms_mm", "position_max_mm", "orientation_rms_mrad", "orientation_max_mrad",
                        "force_rms_N", "force_peak_N", "saturation_s"):
                assert np.isfinite(f[key]) and f[key] >= 0, (law, cond, key)
            assert f["position_rms_mm"] <= f["position_max_mm"] and f["force_rms_N"] <= f["force_peak_N"]
            if "adaptive" in law:
                assert np.isfinite(f["estimates"]["prediction_error"]).all()
    assert all((out / f).stat().st_size > 0 for f in s["files"])


def test_exact_model_idc_beats_pd_in_both_spaces(quick):
    """With the exact model IDC's error obeys e'' + Kd e' + Kp e = 0 from e(0) = 0 (it stays at the level of the
    zero-order hold); PD needs an error to make any force: its error is at least ten times larger."""
    laws = quick[0]["laws"]
    for pd, idc in (("task_pd", "task_idc"), ("pd", "joint_idc")):
        a, b = laws[pd]["conditions"]["exact"], laws[idc]["conditions"]["exact"]
        assert b["position_max_mm"] < 0.1 * a["position_max_mm"], (pd, a, idc, b)
        assert b["position_rms_mm"] < 0.1 * a["position_rms_mm"], (pd, a, idc, b)


def test_the_trajectory_is_demanding_and_inside_the_limits(dyn):
    traj, _ = sc.trajectory(dyn.kin)                  # check_reachable: ranges and velocity limits
    act, kin = dyn.model.actuated_idx, dyn.kin
    v = np.array([kin.inverse(*traj.sample(t)).v[act] for t in np.linspace(0, traj.duration, 1351)])
    assert 0.85 * 0.5 < np.abs(v).max() <= 0.5


def test_the_mismatched_plant_scales_each_body_kind(dyn):
    """tau_tree is linear in each body's inertial parameters: the plant's generalized force is the sum of the nominal
    bodies' contributions, each scaled by its kind's factor (the contribution of a body: the regressor's columns of
    that body times its parameters)."""
    plant, factors = sc.mismatched_plant(dyn)
    assert sorted(factors) == ["leg_cylinder", "leg_piston", "platform"]
    assert all(abs(abs(f - 1.0) - 0.2) < 1e-12 for f in factors.values())
    names, values = dyn.parameters()
    scale = np.array([factors.get(share_across_legs(n.split(".")[0]), 1.0) for n in names[:len(dyn._body_cols)]])
    rng = np.random.default_rng(5)
    pose = dyn.kin.task.pose(dyn.model.config["home"])
    for _ in range(3):
        tw, ac = rng.standard_normal(6), 5 * rng.standard_normal(6)
        Y = dyn.regressor(pose, tw, ac, friction=False)[:, :len(scale)]
        f = plant.inverse_dynamics(pose, tw, ac, friction=False).generalized
        assert np.allclose(f, Y @ (scale * values[:len(scale)]), rtol=0, atol=1e-9 * np.abs(f).max())


def test_noisy_encoders_have_the_stated_statistics(dyn):
    robot = SimulatedRobot(dyn, DT)
    robot.reset(dyn.kin.task.pose(dyn.model.config["home"]))
    hw = NoisyEncoders(robot, **sc.NOISE, seed=1)
    dq, dv = [], []
    for _ in range(400):
        m = hw.read()
        assert hw.read() is m                                  # one draw per period
        res = sc.NOISE["resolution"]
        assert np.allclose(m.position / res, np.round(m.position / res), atol=1e-6)
        dq.append(m.position - robot.read().position), dv.append(m.velocity - robot.read().velocity)
        robot.write(robot.read().effort, robot.time)
        robot.step()
    # quantization adds res^2 / 12 to the variance
    sq = np.sqrt(sc.NOISE["position_std"] ** 2 + sc.NOISE["resolution"] ** 2 / 12)
    assert abs(np.std(dq) / sq - 1) < 0.1 and abs(np.std(dv) / sc.NOISE["velocity_std"] - 1) < 0.1


@pytest.mark.parametrize("controller", ["task_adaptive_idc"])
def test_adaptive_estimate_approaches_the_plant(dyn, controller):
    """The whole trajectory on the mismatched plant (without friction: the law's model has none, as configured):
    the force the final estimate predicts along the trajectory is closer to the plant's inverse dynamics than that
    of the initial (nominal) estimate. Truth: the generic engine on the plant's tree; the estimate's prediction: the
    engine's standard regressor reduced to the law's base parameters."""
    plant, _ = sc.mismatched_plant(dyn)
    traj, _ = sc.trajectory(dyn.kin)
    laws = []
    track(dyn, controller, traj, SimulatedRobot(plant, DT, friction=False), DT, sc.REST,
          observe=lambda k, c: laws.append(c.law) if k == 0 else None, overrides={"adaptation_gain": 1e5})
    law = laws[0]
    errs = {"initial": 0.0, "final": 0.0}
    for t in np.linspace(0.0, traj.duration, 40):
        pose, tw, ac = traj.sample(t)
        truth = plant.inverse_dynamics(pose, tw, ac, friction=False).generalized
        Yb = law.base.reduce(dyn.regressor(pose, tw, ac, friction=False)[:, :law.base.grouping.shape[0]])
        for key, theta in (("initial", law.initial), ("final", law.estimates)):
            errs[key] += float(np.sum((Yb @ theta - truth) ** 2))
    assert errs["final"] < 0.25 ** 2 * errs["initial"], errs      # the norm of the error falls 4x
