"""Control core: laws against hand values, the feedforward model and its parameter files, limits,
watchdog, safe behaviours, and the closed loop on the simulated plant (error dynamics in closed form)."""

import numpy as np
import pytest
from conftest import home

from pkm_control.control import (ComputedTorque, ControlCycle, DecentralizedPD, FeedforwardModel, ForceLimits,
                                 ParameterSet, PDFeedforward, SafeBehaviour, load_parameter_set,
                                 make_law)
from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError, UnreachablePoseError
from pkm_control.hardware import SimulatedRobot
from pkm_control.kinematics.task_space import Pose, rot_x, so3_exp
from pkm_control.kinematics.workspace import random_poses

DT = 5e-4




# ---------------------------------------------------------------------- laws, hand values
def test_pd_hand_values():
    law = DecentralizedPD([100.0, 200.0, 300.0], 10.0)
    tau = law.compute([1.0, 2.0, 3.0], [0.5, 0.0, -1.0], [0.0, 0.0, 0.0], [0.9, 2.0, 2.5], [0.0, 1.0, -1.0])
    # 100*(1-0.9) + 10*(0.5-0) ; 200*(2-2) + 10*(0-1) ; 300*(3-2.5) + 10*(-1+1)
    assert tau == pytest.approx([15.0, -10.0, 150.0], abs=1e-12)


def test_pd_feedforward_hand_values():
    law = PDFeedforward(4.0, [1.0, 2.0])
    tau = law.compute([0.1, -0.2], [1.0, 1.0], None, [0.0, 0.0], [0.0, 2.0], tau_ff=[10.0, -5.0])
    assert tau == pytest.approx([10.0 + 0.4 + 1.0, -5.0 - 0.8 - 2.0], abs=1e-12)
    with pytest.raises(InvalidInputError, match="tau_ff"):
        law.compute([0, 0], [0, 0], None, [0, 0], [0, 0])


def test_law_input_errors():
    law = DecentralizedPD([1.0, 2.0], 1.0)
    with pytest.raises(InvalidInputError, match="kp has 2 values for 3"):
        law.compute(np.zeros(3), np.zeros(3), None, np.zeros(3), np.zeros(3))
    with pytest.raises(InvalidInputError, match="finite"):
        law.compute([np.nan, 0], [0, 0], None, [0, 0], [0, 0])
    with pytest.raises(InvalidInputError, match="shape"):
        law.compute([0, 0, 0], [0, 0], None, [0, 0], [0, 0])
    with pytest.raises(InvalidInputError, match="gain kd"):
        DecentralizedPD(1.0, -1.0)
    with pytest.raises(InvalidInputError, match="controller mode"):
        make_law("pid", 1, 1)
    assert isinstance(make_law("pd", 1, 1), DecentralizedPD)


def test_computed_torque_acceleration_hand_value(palida):
    law = ComputedTorque(FeedforwardModel(palida, "rigid"), 400.0, 40.0)
    u = law.acceleration(np.full(6, 1.0), np.full(6, 0.1), np.full(6, 2.0), np.full(6, 0.99), np.zeros(6))
    assert u == pytest.approx(np.full(6, 2.0 + 400 * 0.01 + 40 * 0.1), abs=1e-12)
    with pytest.raises(InvalidInputError, match="pose"):
        law.compute(np.ones(6), np.zeros(6), np.zeros(6), np.ones(6), np.zeros(6))
    with pytest.raises(InvalidInputError, match="'none'"):
        ComputedTorque(FeedforwardModel(palida, "none"), 1, 1)


@pytest.mark.parametrize("robot", ["palida", "delta", "stewart", "planar_redundant"])
def test_computed_torque_gives_the_commanded_joint_acceleration(robot):
    """Plant forward dynamics under the CT force: qdd_a = J xdd + Jdot xd must equal u, with Jdot by
    central differences of J along the motion (independent of the kinematics' jacobian_dot).
    Redundant actuation: u need not be reachable; the platform gets the least-squares
    acceleration, J^T (J xdd + Jdot xd - u) = 0."""
    dyn = robot_dynamics(robot)
    kin = dyn.kin
    rng = np.random.default_rng(3)
    law = ComputedTorque(FeedforwardModel(dyn, "rigid+friction", sign_eps=1e-3, path="generic"), 900.0, 60.0)
    plant = dyn.with_gravity(dyn.gravity)
    plant = type(plant)(kin, gravity=dyn.gravity, sign_eps=1e-3)
    for pose in random_poses(kin, 3, rng):
        xd = 0.3 * rng.standard_normal(dyn.n)
        J = kin.jacobian(pose)
        q, qd = kin.actuated(pose), J @ xd
        q_d, qd_d, qdd_d = q + 1e-3 * rng.standard_normal(len(q)), qd + 0.01, rng.standard_normal(len(q))
        tau = law.compute(q_d, qd_d, qdd_d, q, qd, pose=pose)
        xdd = plant.forward_dynamics(pose, xd, tau)
        h = 1e-6
        Jdot = (kin.jacobian(kin.task.retract(pose, h * xd)) - kin.jacobian(kin.task.retract(pose, -h * xd))) / (2 * h)
        u = qdd_d + 900.0 * (q_d - q) + 60.0 * (qd_d - qd)
        if dyn.redundant:
            r = J @ xdd + Jdot @ xd - u
            assert np.abs(J.T @ r).max() < 1e-6 * np.abs(J.T @ u).max()
            assert np.abs(r).max() > 1e-3                 # u was not reachable: the check is not empty
            continue
        assert J @ xdd + Jdot @ xd == pytest.approx(u, rel=1e-6, abs=1e-6 * np.abs(u).max())
        # the measured twist given directly gives the same force
        assert law.compute(q_d, qd_d, qdd_d, q, qd, pose=pose, twist=xd) == pytest.approx(tau, rel=1e-10, abs=1e-9)


# ---------------------------------------------------------------------- feedforward model
def test_palida_uses_the_jourdain_kernel_and_equals_the_engine(palida):
    rng = np.random.default_rng(1)
    for model, friction in (("rigid", False), ("rigid+friction", True)):
        ff = FeedforwardModel(palida, model)
        assert ff.path == "jourdain"
        for pose in random_poses(palida.kin, 4, rng):
            tw, ac = rng.standard_normal(6), 5 * rng.standard_normal(6)
            ref = palida.inverse_dynamics(pose, tw, ac, friction=friction).tau
            assert ff.tau(pose, tw, ac) == pytest.approx(ref, rel=1e-9, abs=1e-9)
    assert FeedforwardModel(palida, "none").tau(home(palida), np.zeros(6), np.zeros(6)).tolist() == [0.0] * 6
    # a smooth friction sign is not the kernel's: the generic path is taken
    assert FeedforwardModel(palida, "rigid+friction", sign_eps=1e-3).path == "generic"
    assert FeedforwardModel(palida, "rigid", sign_eps=1e-3).path == "jourdain"


@pytest.mark.parametrize("robot", ["stewart", "planar_redundant"])
def test_generic_path_equals_the_engine(robot):
    dyn = robot_dynamics(robot)
    ff = FeedforwardModel(dyn, "rigid+friction")
    rng = np.random.default_rng(2)
    for pose in random_poses(dyn.kin, 3, rng):
        tw, ac = rng.standard_normal(dyn.n), rng.standard_normal(dyn.n)
        assert ff.tau(pose, tw, ac) == pytest.approx(dyn.inverse_dynamics(pose, tw, ac).tau, rel=1e-10, abs=1e-9)


def _set(dyn, **changes):
    ps = ParameterSet.nominal(dyn)
    d = {"robot": dyn.model.name, "inertia_scale": 1.0,
         "friction": {r: {k: (list(v) if isinstance(v, tuple) else v) for k, v in e.items()}
                      for r, e in ps.friction.items()}}
    d.update(changes)
    return d


@pytest.mark.parametrize("path", ["auto", "generic"])
def test_parameter_set_scale_and_friction_are_linear(palida, path, tmp_path):
    """tau is linear in the parameters: scale s multiplies the rigid part, doubled friction doubles
    the friction part (both paths; the kernel carries the set, not the config's numbers)."""
    import yaml
    rng = np.random.default_rng(4)
    pose = random_poses(palida.kin, 1, rng)[0]
    tw, ac = rng.standard_normal(6), 5 * rng.standard_normal(6)
    nom_rb = FeedforwardModel(palida, "rigid", path=path).tau(pose, tw, ac)
    nom_fr = FeedforwardModel(palida, "rigid+friction", path=path).tau(pose, tw, ac) - nom_rb
    d = _set(palida, inertia_scale=1.7)
    for e in d["friction"].values():
        for k in e:
            e[k] = np.multiply(e[k], 2.0).tolist()
    f = tmp_path / "set.yaml"
    f.write_text(yaml.safe_dump(d))
    ps = load_parameter_set(f, palida)
    assert ps.source == str(f) and ps.inertia_scale == 1.7
    rb = FeedforwardModel(palida, "rigid", ps, path=path)
    full = FeedforwardModel(palida, "rigid+friction", str(f), path=path)
    assert rb.path == full.path == ("jourdain" if path == "auto" else "generic")
    assert rb.tau(pose, tw, ac) == pytest.approx(1.7 * nom_rb, rel=1e-9, abs=1e-9)
    assert full.tau(pose, tw, ac) - rb.tau(pose, tw, ac) == pytest.approx(2 * nom_fr, rel=1e-8, abs=1e-8)
    # the reload keeps the model and swaps the set
    back = full.with_parameters(ParameterSet.nominal(palida))
    assert back.model == "rigid+friction"
    assert back.tau(pose, tw, ac) == pytest.approx(nom_rb + nom_fr, rel=1e-10, abs=1e-9)
    assert full.gravity(pose) == pytest.approx(1.7 * FeedforwardModel(palida, "none").gravity(pose), rel=1e-9)


def test_parameter_set_body_replacement_closed_form(palida):
    """Extra platform mass dm (same com c): at rest the actuators carry its weight,
    tau - tau_0 = -J^-T [dm g; (R c) x dm g] (static balance J^T tau + w = 0)."""
    cfg = palida.model.config["platform"]["inertial"]
    dm = 2.5
    body = {"mass": cfg["mass"] + dm, "com": list(cfg["com"]), "inertia": list(cfg["inertia"])}
    ff = FeedforwardModel(palida, "rigid", _set(palida, bodies={"platform": body}))
    assert ff.path == "generic"             # per-body data: not the identical-strut kernel
    ff0 = FeedforwardModel(palida, "rigid")
    pose = Pose(np.array([0.05, -0.03, -0.8]), so3_exp(np.array([0.1, -0.05, 0.2])))
    g = np.array(palida.gravity)
    f = dm * g
    w = np.concatenate([f, np.cross(pose.rotation @ np.array(cfg["com"]), f)])
    J = palida.kin.jacobian(pose)
    dtau = ff.tau(pose, np.zeros(6), np.zeros(6)) - ff0.tau(pose, np.zeros(6), np.zeros(6))
    assert dtau == pytest.approx(-np.linalg.solve(J.T, w), rel=1e-9, abs=1e-9)


@pytest.mark.parametrize("mutate, match", [
    (lambda d: d.pop("friction"), "missing keys \\['friction'\\]"),
    (lambda d: d.update(gains=1), "unknown keys \\['gains'\\]"),
    (lambda d: d.update(robot="delta"), "robot = 'delta'"),
    (lambda d: d.update(inertia_scale=0.0), "inertia_scale = 0.0 must be > 0"),
    (lambda d: d.update(inertia_scale="big"), "inertia_scale must be a finite number"),
    (lambda d: d["friction"]["prismatic"].update(coulomb=[1.0] * 5), "5 values for 6 joints"),
    (lambda d: d["friction"]["alpha"].update(viscous=0.1), "unknown \\[\\('alpha', 'viscous'\\)\\]"),
    (lambda d: d["friction"].pop("beta"), "missing \\[\\('beta', 'coulomb'\\)\\]"),
    (lambda d: d["friction"]["beta"].update(coulomb=-0.2), "must be >= 0"),
    (lambda d: d.update(bodies={"leg9_ring": {"mass": 1, "com": [0, 0, 0], "inertia": [1, 1, 1, 0, 0, 0]}}),
     "not a body of palida"),
    (lambda d: d.update(bodies={"platform": {"mass": 1, "com": [0, 0]}}), "exactly the keys"),
    (lambda d: d.update(bodies={"platform": {"mass": 1, "com": [0, 0], "inertia": [1, 1, 1, 0, 0, 0]}}),
     "com must have shape"),
    (lambda d: d.update(bodies={"platform": {"mass": 1, "com": [0, 0, 0], "inertia": [1, 1, -1, 0, 0, 0]}}),
     "not positive semidefinite"),
])
def test_bad_parameter_files(palida, tmp_path, mutate, match):
    import yaml
    d = _set(palida)
    mutate(d)
    f = tmp_path / "bad.yaml"
    f.write_text(yaml.safe_dump(d))
    with pytest.raises(InvalidInputError, match=match):
        load_parameter_set(f, palida)


def test_unreadable_parameter_files(palida, tmp_path):
    f = tmp_path / "broken.yaml"
    f.write_text("robot: [palida\n")
    with pytest.raises(InvalidInputError, match="not valid YAML"):
        load_parameter_set(f, palida)
    with pytest.raises(InvalidInputError, match="cannot be read"):
        load_parameter_set(tmp_path / "missing.yaml", palida)
    f.write_text("- 1\n- 2\n")
    with pytest.raises(InvalidInputError, match="must be a mapping"):
        load_parameter_set(f, palida)
    with pytest.raises(InvalidInputError, match="YAML path"):
        FeedforwardModel(palida, "rigid", 3.0)


def test_feedforward_from_joint_motion(palida):
    rng = np.random.default_rng(6)
    pose = random_poses(palida.kin, 1, rng)[0]
    tw, ac = rng.standard_normal(6), rng.standard_normal(6)
    m = palida.kin.inverse(pose, tw, ac)
    act = palida.model.actuated_idx
    ff = FeedforwardModel(palida, "rigid+friction")
    guess = Pose(pose.position + 0.01, pose.rotation)
    tau, p, x1, x2 = ff.from_joints(m.q[act], m.v[act], m.a[act], guess)
    assert p.position == pytest.approx(pose.position, abs=1e-10)
    assert x1 == pytest.approx(tw, abs=1e-9) and x2 == pytest.approx(ac, abs=1e-8)
    assert tau == pytest.approx(ff.tau(pose, tw, ac), rel=1e-8, abs=1e-8)


# ---------------------------------------------------------------------- limits, watchdog, safe behaviour
def test_force_limits():
    lim = ForceLimits([10.0, 20.0, 30.0])
    tau, sat = lim.apply([5.0, -25.0, 30.0])
    assert tau.tolist() == [5.0, -20.0, 30.0] and sat.tolist() == [False, True, False]
    assert ForceLimits(2.0, 2).apply([3.0, -3.0])[0].tolist() == [2.0, -2.0]
    with pytest.raises(InvalidInputError, match="> 0"):
        ForceLimits([1.0, 0.0])
    with pytest.raises(InvalidInputError, match="shape"):
        lim.apply([1.0, 2.0])
    assert ForceLimits.from_config(robot_dynamics("palida").model).limits.tolist() == [2000.0] * 6
    pr = robot_dynamics("planar_redundant").model
    assert ForceLimits.from_config(pr).limits.tolist() == [8000.0, 8000.0, 5000.0, 5000.0]


def test_safe_behaviour_commands(palida):
    ff = FeedforwardModel(palida, "none")
    hold = SafeBehaviour("hold", ff, 1000.0, [10.0] * 6)
    pose = home(palida)
    q = palida.kin.actuated(pose)
    target = hold.capture(q, pose)
    # gravity compensation = the rigid model at rest (even with feedforward 'none')
    assert target.tau_gravity == pytest.approx(palida.inverse_dynamics(pose, np.zeros(6), np.zeros(6)).tau, rel=1e-9)
    tau = hold.command(target, q - 0.001, np.full(6, 0.1))
    assert tau == pytest.approx(target.tau_gravity + 1.0 - 1.0, abs=1e-9)
    zero = SafeBehaviour("zero")
    assert zero.command(zero.capture(q, pose), q, q).tolist() == [0.0] * 6
    with pytest.raises(InvalidInputError, match="needs a FeedforwardModel"):
        SafeBehaviour("hold")
    with pytest.raises(InvalidInputError, match="one of"):
        SafeBehaviour("brake")


@pytest.mark.parametrize("mode", ["hold", "zero"])
def test_safe_behaviour_on_the_plant(palida, mode):
    """Engaged while the platform moves at ~0.1 m/s: hold stops it within 1.5 mm and keeps it there
    under gravity for 0.5 s (the smoothed Coulomb friction slows the return to the captured joints);
    zero lets it fall (> 10 cm in 0.5 s). Engaged at rest, hold is exact (drift < 1e-9 m)."""
    act = palida.model.actuated_idx
    safe = SafeBehaviour.for_model(mode, FeedforwardModel(palida, "rigid"))
    for twist in (np.array([0.1, -0.05, 0.08, 0.1, 0.0, 0.2]), np.zeros(6)):
        robot = SimulatedRobot(palida, DT, safe_behaviour="zero")
        robot.reset(home(palida), twist)
        st = robot.ground_truth()
        target = safe.capture(st.position[act], st.platform_pose)
        excursion = 0.0
        for _ in range(1000):
            robot.write(safe.command(target, st.position[act], st.velocity[act]))
            robot.step()
            st = robot.ground_truth()
            excursion = max(excursion, np.abs(st.platform_pose.position - home(palida).position).max())
        if mode == "zero":
            assert st.platform_pose.position[2] < home(palida).position[2] - 0.1
        elif twist.any():
            assert excursion < 1.5e-3
            assert np.abs(st.position[act] - target.q).max() < 5e-4
            assert np.abs(st.platform_twist).max() < 2e-3
        else:
            assert excursion < 1e-9 and np.abs(st.platform_twist).max() < 1e-9


# ---------------------------------------------------------------------- closed loop on the plant
def _second_order(t, e0, kp, kd, dt):
    """(continuous, sampled) responses of e'' + kd e' + kp e = 0, e(0) = e0, e'(0) = 0 (0 < zeta < 1):
    e0 exp(-z w t) (cos wd t + z w / wd sin wd t), and the exact sampled loop, x = (e, e'),
    x+ = A x with u = -kp e - kd e' held over dt (a double integrator under zero-order hold)."""
    w, zeta = np.sqrt(kp), kd / (2 * np.sqrt(kp))
    wd = w * np.sqrt(1 - zeta ** 2)
    closed = e0 * np.exp(-zeta * w * t) * (np.cos(wd * t) + zeta * w / wd * np.sin(wd * t))
    A = np.array([[1 - kp * dt ** 2 / 2, dt - kd * dt ** 2 / 2], [-kp * dt, 1 - kd * dt]])
    x, sampled = np.array([e0, 0.0]), []
    for _ in t:
        sampled.append(x[0])
        x = A @ x
    return closed, np.array(sampled)


def _ct_run(dyn, robot, law, traj, e0, n):
    """CT on the plant from the trajectory's start, reference = IK(trajectory) + e0 on every actuator."""
    act = dyn.model.actuated_idx
    robot.reset(*traj(0.0)[:2])
    st = robot.ground_truth()
    errs = []
    for k in range(n + 1):
        m = dyn.kin.inverse(*traj(st.time))
        q_d = m.q[act] + e0
        errs.append(q_d - st.position[act])
        if k == n:
            break
        robot.write(law.compute(q_d, m.v[act], m.a[act], st.position[act], st.velocity[act], pose=st.platform_pose,
                                twist=st.platform_twist))
        robot.step()
        st = robot.ground_truth()
    return np.array(errs)


def test_computed_torque_step_response_is_the_pd_error_dynamics(palida):
    """Perfect rigid model, plant without friction, a 1 mm step of every reference at rest: the
    error is the sampled PD loop to 3e-5 of e0 and the continuous closed form to 3e-3 (the
    zero-order hold over 0.5 ms, w dt = 0.01, is the difference)."""
    kp, kd, e0 = 400.0, 28.0, 1e-3                    # w = 20 rad/s, zeta = 0.7
    robot = SimulatedRobot(palida, DT, friction=False, safe_behaviour="zero")
    law = ComputedTorque(FeedforwardModel(palida, "rigid"), kp, kd)
    pose0 = home(palida)
    errs = _ct_run(palida, robot, law, lambda t: (pose0, np.zeros(6), np.zeros(6)), e0, 300)
    closed, sampled = _second_order(DT * np.arange(len(errs)), e0, kp, kd, DT)
    assert np.abs(errs - sampled[:, None]).max() < 3e-5 * e0
    assert np.abs(errs - closed[:, None]).max() < 3e-3 * e0
    assert np.abs(errs[-1]).max() < 0.05 * e0                                # and it settles


def test_computed_torque_tracks_with_the_pd_error_dynamics_under_friction(palida):
    """Plant with friction in every joint, the model with the same friction and smooth sign, the
    platform moving with a constant twist (every joint away from zero velocity, where the held
    force meets the steep smoothed Coulomb slope), a 5 mm offset of the references: e(t) follows
    the closed form to ~1e-3 of e0 at 0.25 ms; a model without friction misses it by far."""
    kp, kd, e0, dt = 400.0, 28.0, 5e-3, 2.5e-4
    pose0 = home(palida)
    v, om = np.array([0.2, 0.1, 0.25]), np.array([0.3, -0.2, 0.5])

    def traj(t):
        return Pose(pose0.position + v * t, so3_exp(om * t) @ pose0.rotation), np.concatenate([v, om]), np.zeros(6)

    robot = SimulatedRobot(palida, dt, safe_behaviour="zero")
    assert np.abs(palida.kin.inverse(*traj(0.0)).v[:18]).min() > 0.05
    closed, sampled = _second_order(dt * np.arange(601), e0, kp, kd, dt)
    good = ComputedTorque(FeedforwardModel(palida, "rigid+friction", sign_eps=robot.sign_eps), kp, kd)
    errs = _ct_run(palida, robot, good, traj, e0, 600)
    assert np.abs(errs - closed[:, None]).max() < 1.5e-3 * e0
    assert np.abs(errs - sampled[:, None]).max() < 1e-3 * e0
    no_friction = ComputedTorque(FeedforwardModel(palida, "rigid"), kp, kd)
    assert np.abs(_ct_run(palida, robot, no_friction, traj, e0, 600) - closed[:, None]).max() > 0.1 * e0


class _Cosine:
    """p(t) = p0 + a (1 - cos w t) d: starts at rest, smooth; fixed orientation."""

    def __init__(self, pose, amp, w, direction):
        self.p0, self.R, self.a, self.w = pose.position, pose.rotation, amp, w
        self.d = np.asarray(direction, float) / np.linalg.norm(direction)
        self.duration = 10.0

    def sample(self, t):
        c, s = np.cos(self.w * t), np.sin(self.w * t)
        z = np.zeros(3)
        return (Pose(self.p0 + self.a * (1 - c) * self.d, self.R), np.concatenate([self.a * self.w * s * self.d, z]),
                np.concatenate([self.a * self.w ** 2 * c * self.d, z]))


def test_pd_feedforward_with_a_perfect_model_stays_on_the_trajectory(palida):
    """Starting on a smooth trajectory, PD + the plant's own model keeps the actuator error at the
    zero-order-hold level (< 2 um), 100x below single-joint PD with the same gains."""
    traj = _Cosine(Pose(home(palida).position, rot_x(0.05)), 0.05, 2 * np.pi * 2.0, [1.0, 0.5, 0.3])
    ff = FeedforwardModel(palida, "rigid+friction", sign_eps=2e-3)
    limits = ForceLimits.from_config(palida.model)
    worst = {}
    for name, law in (("sj", DecentralizedPD(4.0e5, 5.3e3)), ("ff", PDFeedforward(4.0e5, 5.3e3))):
        robot = SimulatedRobot(palida, DT, safe_behaviour="zero")
        cycle = ControlCycle(palida.kin, traj, law, ff, limits)
        robot.reset(*traj.sample(0.0)[:2])
        st = robot.ground_truth()
        errs = []
        for _ in range(300):
            out = cycle(st.time, st.position[palida.model.actuated_idx], st.velocity[palida.model.actuated_idx])
            errs.append(np.abs(out.q_d - st.position[palida.model.actuated_idx]).max())
            robot.write(out.tau, st.time)
            robot.step()
            st = robot.ground_truth()
        worst[name] = max(errs)
    assert worst["ff"] < 2e-6
    assert worst["ff"] < 0.01 * worst["sj"]


def test_control_cycle_with_computed_torque(palida):
    """The cycle's pieces: desired joints = IK of the sample, the CT law at the measured pose."""
    traj = _Cosine(home(palida), 0.02, 3.0, [0, 0, 1])
    ff = FeedforwardModel(palida, "rigid")
    law = ComputedTorque(ff, 400.0, 40.0)
    cycle = ControlCycle(palida.kin, traj, law, limits=ForceLimits.from_config(palida.model))
    pose, tw, ac = traj.sample(0.3)
    m = palida.kin.inverse(pose, tw, ac)
    act = palida.model.actuated_idx
    out = cycle(0.3, m.q[act], m.v[act], pose=pose)
    assert out.q_d == pytest.approx(m.q[act]) and out.qdd_d == pytest.approx(m.a[act])
    assert out.tau == pytest.approx(ff.tau(pose, tw, ac), rel=1e-9)     # on the trajectory: u = qdd_d
    assert out.tau_ff is None and not out.saturated.any()
    with pytest.raises(InvalidInputError, match="needs a FeedforwardModel"):
        ControlCycle(palida.kin, traj, PDFeedforward(1.0, 1.0))


def test_checked_references(palida):
    """The cycle's full IK path equals the fast path and checks the joint limits."""
    traj = _Cosine(home(palida), 0.02, 3.0, [0, 0, 1])
    fast = ControlCycle(palida.kin, traj, DecentralizedPD(1.0, 1.0))
    full = ControlCycle(palida.kin, traj, DecentralizedPD(1.0, 1.0), check_limits=True)
    a, b = fast(0.4, np.zeros(6), np.zeros(6)), full(0.4, np.zeros(6), np.zeros(6))
    for x, y in ((a.q_d, b.q_d), (a.qd_d, b.qd_d), (a.qdd_d, b.qdd_d), (a.tau, b.tau)):
        assert x == pytest.approx(y, rel=1e-10, abs=1e-12)
    far = _Cosine(home(palida), 0.5, 3.0, [0, 0, 1])       # 1 m below home at t = 1.05 s: beyond the stroke
    with pytest.raises(UnreachablePoseError):
        ControlCycle(palida.kin, far, DecentralizedPD(1.0, 1.0), check_limits=True)(1.05, np.zeros(6), np.zeros(6))
