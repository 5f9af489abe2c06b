"""A robot that is not the model (issue 11, section 1): perturbed parameter sets (pkm perturb), the simulated robot
with its own "true" parameters, and its measurement (encoder quantization, force noise) with the ground truth exact.

Consistency is checked through the pseudo-inertia (a second formulation: the perturbation works on the second moments
and principal axes), the plant through its own integration (central differences of its twist against the perturbed
model's inverse dynamics), the noise through its sample statistics."""

import numpy as np
import pytest
import yaml
from conftest import home
from hypothesis import given, settings
from hypothesis import strategies as st

from pkm_control.cli import main as cli
from pkm_control.control.feedforward import FeedforwardModel, load_parameter_set
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.hardware import SimulatedRobot, simulated_robot
from pkm_control.hardware.noise import NoisyEncoders, Sensors
from pkm_control.identification.perturbation import body_inconsistency, perturbed_parameters
from pkm_control.control.settings import load_settings, robot_context

ROBOTS = ("stewart", "palida", "lopes", "delta", "planar_redundant")
DYN = {}


def dyn_of(robot):
    if robot not in DYN:
        DYN[robot] = robot_dynamics(robot)
    return DYN[robot]


def inertia(i):
    ixx, iyy, izz, ixy, ixz, iyz = i
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


def pseudo_inertia(mass, com, inertia_c):
    """J = [[Sigma + m c c^T, m c], [m c^T, m]], Sigma = tr(I_c)/2 1 - I_c (Wensing et al. 2017)."""
    c = np.asarray(com)
    S = 0.5 * np.trace(inertia_c) * np.eye(3) - inertia_c + mass * np.outer(c, c)
    return np.block([[S, mass * c[:, None]], [mass * c[None, :], np.array([[mass]])]])


@settings(max_examples=25)
@given(robot=st.sampled_from(ROBOTS), seed=st.integers(0, 2 ** 32 - 1), scale=st.floats(0.0, 0.6),
       identical=st.booleans())
def test_perturbed_sets_are_consistent_and_within_scale(robot, seed, scale, identical):
    dyn = dyn_of(robot)
    p = perturbed_parameters(dyn, scale, seed, identical)
    tol = 1e-9
    for j, link in zip(dyn._bodies, dyn.body_names()):
        nom = dyn.pin_model.inertias[j]
        if nom.mass == 0:
            assert link not in p.data["bodies"]
            continue
        b = p.data["bodies"][link]
        Ic = inertia(b["inertia"])
        J = pseudo_inertia(b["mass"], b["com"], Ic)
        assert b["mass"] > 0
        assert np.linalg.eigvalsh(J).min() >= -1e-12 * np.abs(J).max(), link
        lam, lam0 = np.linalg.eigvalsh(Ic), np.linalg.eigvalsh(np.array(nom.inertia))
        assert lam.min() >= -1e-12 * lam.sum()
        assert lam[0] + lam[1] >= lam[2] * (1 - 1e-12)                    # the triangle inequality
        if lam0.min() > 1e-9 * lam0.sum():                                 # positive definite stays so
            assert lam.min() > 0
        # within +-scale: mass, each first-moment component, each principal moment
        assert abs(b["mass"] / nom.mass - 1) <= scale + tol
        h0, h = nom.mass * np.array(nom.lever), b["mass"] * np.array(b["com"])
        assert np.all(np.abs(h - h0) <= (scale + tol) * np.abs(h0) + 1e-15)
        assert np.all(np.abs(lam - lam0) <= (scale + tol) * lam0 + 1e-12 * lam0.sum())
    nominal = dyn.model.config["friction"]
    for role, entry in nominal.items():
        for kind, v0 in entry.items():
            v = p.data["friction"][role][kind]
            assert np.shape(v) == np.shape(v0)
            assert np.all(np.abs(np.asarray(v) - v0) <= (scale + tol) * np.abs(v0))
    assert p.max_relative_change <= scale + tol
    if identical:                    # one draw per body kind: the legs identical
        legs = [k for k in p.data["bodies"] if k.startswith("leg2_")]
        for k in legs:
            assert p.data["bodies"][k] == p.data["bodies"]["leg1_" + k[5:]]


def test_identical_legs_with_kept_axes_stay_in_jourdains_model():
    """palida with --identical-legs --keep-axes: every strut the same, products of inertia and the first-moment
    components that Table I assumes zero stay zero; the masses are the draws without --keep-axes."""
    dyn = dyn_of("palida")
    p = perturbed_parameters(dyn, 0.2, 5, identical_legs=True, keep_axes=True)
    turned = perturbed_parameters(dyn, 0.2, 5, identical_legs=True)
    bodies = p.data["bodies"]
    for link, b in bodies.items():
        assert b["inertia"][3:] == [0.0, 0.0, 0.0]
        nominal = dyn.pin_model.inertias[dyn._bodies[dyn.body_names().index(link)]]
        assert [c == 0 for c in b["com"]] == [c == 0 for c in nominal.lever]
        assert b["mass"] == turned.data["bodies"][link]["mass"] and b["com"] == turned.data["bodies"][link]["com"]
        assert turned.data["bodies"][link]["inertia"][3:] != [0.0, 0.0, 0.0] or link.endswith("ring")
        if link.startswith("leg"):
            assert b == bodies["leg1_" + link.split("_", 1)[1]]
    assert p.data["friction"]["prismatic"]["coulomb"] == pytest.approx(
        np.array(dyn.model.config["friction"]["prismatic"]["coulomb"]) *
        p.data["friction"]["prismatic"]["coulomb"][0] / dyn.model.config["friction"]["prismatic"]["coulomb"][0])


@pytest.mark.parametrize("robot", ROBOTS)
def test_perturbation_is_reproducible_and_loads(robot, tmp_path):
    dyn = dyn_of(robot)
    a, b, c = (perturbed_parameters(dyn, 0.2, s) for s in (7, 7, 8))
    assert a.data == b.data and a.data != c.data
    # every mass changes, by up to 20 %, and some by more than 10 %
    ratios = [a.data["bodies"][k]["mass"] / dyn.pin_model.inertias[j].mass
              for j, k in zip(dyn._bodies, dyn.body_names()) if k in a.data["bodies"]]
    assert all(r != 1.0 for r in ratios) and max(abs(r - 1) for r in ratios) > 0.1
    out = tmp_path / "true.yaml"
    assert cli(["perturb", "--robot", robot, "--seed", "7", "--output", str(out)]) == 0
    ps = load_parameter_set(out, dyn)
    assert yaml.safe_load(out.read_text()) == a.data
    assert dict(ps.bodies).keys() == a.data["bodies"].keys() and not ps.is_nominal(dyn)


def test_perturb_cli_summary_and_bad_input(tmp_path, capsys):
    out = tmp_path / "p.yaml"
    assert cli(["perturb", "--robot", "delta", "--seed", "3", "--scale", "0.1", "--output", str(out), "--json"]) == 0
    import json

    got = json.loads(capsys.readouterr().out)
    p = perturbed_parameters(dyn_of("delta"), 0.1, 3)
    assert got["n_parameters"] == p.n_parameters > 20 and 0.05 < got["max_relative_change"] <= 0.1
    for scale in ("1", "1.5", "-0.1"):
        assert cli(["perturb", "--robot", "delta", "--seed", "3", "--scale", scale, "--output", str(out)]) == 2
        assert "scale must be a finite number in [0, 1)" in capsys.readouterr().err
    for argv in (["--scale", "nan"], ["--robot", "nope"], ["--seed", "-1"]):
        base = {"--robot": "delta", "--seed": "3", "--scale": "0.2"}
        base[argv[0]] = argv[1]
        with pytest.raises(SystemExit) as exc:
            cli(["perturb", *sum(base.items(), ()), "--output", str(out)])
        assert exc.value.code == 2
    assert cli(["perturb", "--robot", "delta", "--seed", "3", "--output", str(tmp_path / "no" / "p.yaml")]) == 2
    assert "does not exist" in capsys.readouterr().err
    with pytest.raises(InvalidInputError, match="seed"):
        perturbed_parameters(dyn_of("delta"), 0.2, -1)
    assert body_inconsistency(1.0, [1, 1, 3, 0, 0, 0]).startswith("principal moments")     # 1 + 1 < 3
    assert body_inconsistency(0.0, [1, 1, 1, 0, 0, 0]).startswith("mass")


@pytest.mark.parametrize("robot", ROBOTS)
def test_simulated_robot_follows_the_true_parameters(robot):
    """Central differences of the plant's own twist (RK4, true parameters) against the perturbed model's inverse
    dynamics: the applied force is what the true set needs, not what the nominal one does."""
    dyn = dyn_of(robot)
    p = perturbed_parameters(dyn, 0.2, 11)
    h = 1e-5
    robot_ = SimulatedRobot(dyn, h, force_limits=None, end_stops=None, true_parameters=p.parameters)
    if robot == "palida":                  # the compiled step reads the config's inertias: not this plant's
        assert not robot_.sim.compiled
    rng = np.random.default_rng(3)
    twist = 0.3 * rng.standard_normal(dyn.n)
    nominal = FeedforwardModel(dyn, "rigid+friction", sign_eps=robot_.sign_eps, path="generic")
    true = nominal.with_parameters(p.parameters)
    tau = nominal.gravity(home(dyn)) * 1.1 + 5.0 * rng.standard_normal(dyn.model.n_actuated)
    robot_.reset(home(dyn), twist)
    v = []
    for _ in range(2):
        v.append(robot_.state.twist.copy())
        if _ == 1:
            mid = robot_.ground_truth()
        robot_.write(tau)
        robot_.step()
    v.append(robot_.state.twist.copy())
    accel = (v[2] - v[0]) / (2 * h)
    # compared as the platform's generalized force J^T tau (planar_redundant's tau is not unique: a null space)
    Jt = dyn.kin.jacobian(mid.platform_pose).T
    err_true = np.abs(Jt @ (true.tau(mid.platform_pose, mid.platform_twist, accel) - tau)).max()
    err_nominal = np.abs(Jt @ (nominal.tau(mid.platform_pose, mid.platform_twist, accel) - tau)).max()
    scale = np.abs(Jt @ tau).max()
    assert err_true < 1e-5 * scale, (err_true, err_nominal)
    assert err_nominal > 1e-3 * scale and err_nominal > 100 * err_true


def _run(robot_, n, tau):
    meas, truth = [], []
    for _ in range(n):
        robot_.write(tau)
        meas.append(robot_.step())
        truth.append(robot_.ground_truth())
    return meas, truth


def test_quantization_and_effort_noise_are_what_was_asked():
    # palida: linear drives, 1 um; delta: rotary drives, 2^20 counts per turn
    for robot, rev in (("palida", False), ("delta", True)):
        dyn = dyn_of(robot)
        ctx = robot_context(robot, None)
        s = load_settings(robot, "pd", n_actuated=ctx.n_actuated, force_limit=ctx.force_limit, n_task=ctx.task.dim)
        s.update(encoder_resolution=1e-6, encoder_counts_per_turn=2 ** 20, effort_noise_std=2.0, measurement_seed=5,
                 command_timeout=None)
        robot_ = simulated_robot(dyn, s)
        res = 2 * np.pi / 2 ** 20 if rev else 1e-6
        assert robot_.sensors.resolution.tolist() == [res] * dyn.model.n_actuated
        robot_.reset(home(dyn))
        tau = FeedforwardModel(dyn, "rigid").gravity(home(dyn))
        meas, truth = _run(robot_, 400, tau)
        act = dyn.model.actuated_idx
        q = np.array([m.position for m in meas])
        q_true = np.array([t.position[act] for t in truth])
        counts = q / res
        assert np.abs(counts - np.round(counts)).max() < 1e-6          # whole counts
        assert np.abs(q - q_true).max() <= res / 2 * (1 + 1e-9)          # the nearest count
        noise = np.array([m.effort for m in meas]) - np.array([t.effort[act] for t in truth])
        assert np.array([t.effort[act] for t in truth]) == pytest.approx(np.tile(tau, (400, 1)), abs=0)
        n = noise.size
        assert abs(noise.std() / 2.0 - 1) < 4 / np.sqrt(2 * n)            # 4 sigma of the sample std
        assert abs(noise.mean()) < 4 * 2.0 / np.sqrt(n)
        assert [m.time for m in meas] == pytest.approx(np.arange(1, 401) * robot_.dt)      # one sample per period
        # the same seed repeats the run, a reset repeats it too; another seed does not
        again = simulated_robot(dyn, s)
        again.reset(home(dyn))
        m2, _ = _run(again, 400, tau)
        assert all(np.array_equal(a.effort, b.effort) and np.array_equal(a.position, b.position)
                   for a, b in zip(meas, m2))
        again.reset(home(dyn))
        assert np.array_equal(_run(again, 3, tau)[0][2].effort, meas[2].effort)
        other = simulated_robot(dyn, {**s, "measurement_seed": 6})
        other.reset(home(dyn))
        assert not np.array_equal(_run(other, 3, tau)[0][2].effort, meas[2].effort)
        summary = robot_.measurement_summary()
        assert summary["effort_noise_std"] == 2.0 and summary["measurement_seed"] == 5
        assert summary["sampling_rate"] == pytest.approx(s["control_rate"])


def test_defaults_measure_exactly_and_keep_the_compiled_plant(palida):
    ctx = robot_context("palida", None)
    s = load_settings("palida", "cf_rb_friction", n_actuated=6, force_limit=ctx.force_limit, n_task=6)
    assert s["true_parameters_file"] == "" and s["encoder_resolution"] == 0 and s["effort_noise_std"] == 0
    robot_ = simulated_robot(palida, s)
    plain = SimulatedRobot(palida, 1 / s["control_rate"], command_timeout=s["command_timeout"])
    assert robot_.sensors is None and robot_.true_parameters is None
    from pkm_control.dynamics import jourdain

    assert robot_.sim.compiled is plain.sim.compiled is (jourdain.numba is not None)     # palida's compiled step
    for r in (robot_, plain):
        r.reset(home(palida))
    tau = np.array([300.0, -200, 100, 50, -20, 400])
    a, ta = _run(robot_, 50, tau)
    b, _ = _run(plain, 50, tau)
    for m, n, t in zip(a, b, ta):       # bitwise: the robot's own state, as before the measurement options
        assert np.array_equal(m.position, n.position) and np.array_equal(m.effort, n.effort)
        assert np.array_equal(m.position, t.position[palida.model.actuated_idx])
    assert robot_.measurement_summary()["true_parameters"] == "model"


def test_settings_and_sensors_refuse_bad_values(palida, tmp_path):
    with pytest.raises(InvalidInputError, match="encoder_resolution"):
        Sensors.for_joints([False], -1e-6)
    with pytest.raises(InvalidInputError, match="encoder_counts_per_turn"):
        Sensors.for_joints([True], 0.0, 2.5)
    with pytest.raises(InvalidInputError, match="effort_std"):
        Sensors([0.0], effort_std=float("nan"))
    with pytest.raises(InvalidInputError, match="measurement_seed"):
        SimulatedRobot(palida, 5e-4, measurement_seed=-2)
    with pytest.raises(InvalidInputError, match="cannot be read"):
        SimulatedRobot(palida, 5e-4, true_parameters=str(tmp_path / "missing.yaml"))
    other = tmp_path / "delta.yaml"
    cli(["perturb", "--robot", "delta", "--seed", "1", "--output", str(other)])
    with pytest.raises(InvalidInputError, match="robot = 'delta'"):
        SimulatedRobot(palida, 5e-4, true_parameters=str(other))
    # NoisyEncoders keeps its draws (the stewart-control reproduction's noise): position, then velocity
    robot_ = SimulatedRobot(palida, 5e-4)
    robot_.reset(home(palida))
    enc = NoisyEncoders(robot_, 1e-6, 2e-6, 1e-4, seed=4)
    raw, got = robot_.read(), enc.read()
    rng = np.random.default_rng(4)
    q = raw.position + 2e-6 * rng.standard_normal(6)
    assert np.array_equal(got.position, 1e-6 * np.round(q / 1e-6))
    assert np.array_equal(got.velocity, raw.velocity + 1e-4 * rng.standard_normal(6))


def test_bringup_passes_the_true_parameters(tmp_path):
    from pkm_control.cli import build_parser
    from pkm_control.cli.graph import bringup_options
    from pkm_control.graph.bringup import format_summary, parameters

    def options(*argv):
        return bringup_options(build_parser().parse_args(["bringup", *argv]))

    f = tmp_path / "true.yaml"
    cli(["perturb", "--robot", "delta", "--seed", "1", "--output", str(f)])
    shared = parameters(options("--robot", "delta", "--true-parameters", str(f), "--set", "effort_noise_std=2.0",
                                "--dry-run"))["/**"]["ros__parameters"]
    assert shared["true_parameters_file"] == str(f.resolve()) and shared["effort_noise_std"] == 2.0
    bad = options("--robot", "palida", "--true-parameters", str(f))
    with pytest.raises(InvalidInputError, match="robot = 'delta'"):
        parameters(bad)
    for hw in ("mujoco", "ros2_control"):
        bad = options("--robot", "delta", "--hardware", hw, "--true-parameters", str(f))
        with pytest.raises(InvalidInputError, match="has none"):
            parameters(bad)
    ok = options("--robot", "delta", "--hardware", "ros2_control", "--stand-in", "--true-parameters", str(f))
    assert parameters(ok)["/**"]["ros__parameters"]["true_parameters_file"] == str(f.resolve())
    text = format_summary({"goal_status": "finished", "sim_duration_s": 1.0, "wall_duration_s": 2.0,
                           "safe_behaviour_entries": 0, "rejected_inputs": 0, "deadline_misses": 0,
                           "saturated_periods": 0,
                           "plant": {"true_parameters": str(f), "encoder_resolution": [1e-6] * 3,
                                     "effort_noise_std": 2.0, "actuator_lag": 0.0, "measurement_seed": 1,
                                     "sampling_rate": 2000.0}})
    assert f"parameters {f}; encoders quantized 1e-06" in text and "effort noise std 2 N" in text


@pytest.mark.ros
def test_nodes_host_the_true_robot_and_publish_what_it_measures(tmp_path, monkeypatch):
    """The hardware node publishes the measured positions (whole counts) and forces (noise) on /joint_states and
    states the plant in its diagnostics; joint_controller hosting the robot (hardware sim) builds the same plant."""
    import json
    import os
    import time

    import rclpy
    from rclpy.executors import SingleThreadedExecutor
    from rclpy.parameter import Parameter
    from sensor_msgs.msg import JointState

    from pkm_control.nodes.hardware import HardwareNode
    from pkm_control.nodes.joint_controller import JointControllerNode

    domain = int(os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "143"))
    monkeypatch.setenv("ROS_DOMAIN_ID", str(domain))
    f = tmp_path / "true.yaml"
    cli(["perturb", "--robot", "palida", "--seed", "2", "--output", str(f)])
    plant = {"true_parameters_file": str(f), "encoder_resolution": 1e-6, "effort_noise_std": 3.0,
             "measurement_seed": 9}
    over = [Parameter("robot", value="palida"), Parameter("controller", value="pd")] + \
        [Parameter(k, value=v) for k, v in plant.items()]
    rclpy.init(domain_id=domain)
    ex = SingleThreadedExecutor()
    try:
        hw = HardwareNode(parameter_overrides=over)
        ctl = JointControllerNode(parameter_overrides=over + [Parameter("hardware", value="sim")])
        got = []
        spy = rclpy.create_node("plant_spy")
        spy.create_subscription(JointState, "/joint_states", got.append, 10)
        for n in (hw, spy):
            ex.add_node(n)
        t0 = time.monotonic()
        while not got and time.monotonic() - t0 < 60:            # an event, with a bound for a broken node
            ex.spin_once(timeout_sec=0.05)
        assert got, "no /joint_states from the hardware node"
        msg = got[0]
        q, effort = np.array(msg.position), np.array(msg.effort)
        assert np.abs(q / 1e-6 - np.round(q / 1e-6)).max() < 1e-6
        truth = hw.plant.ground_truth()
        act = hw.plant._act
        assert np.abs(q - truth.position[act]).max() <= 0.5e-6 * (1 + 1e-9)
        assert np.all(effort != truth.effort[act]) and np.abs(effort - truth.effort[act]).max() < 6 * 3.0
        for node in (hw, ctl):
            stated = json.loads(node.diag.extra["plant"])
            assert stated["true_parameters"] == str(f) and stated["effort_noise_std"] == 3.0
            assert stated["encoder_resolution"] == [1e-6] * 6 and stated["measurement_seed"] == 9
        assert ctl.loop.hardware.true_parameters.bodies == hw.plant.true_parameters.bodies
        for node in (hw, ctl, spy):
            node.destroy_node()
    finally:
        ex.shutdown()
        rclpy.shutdown()
