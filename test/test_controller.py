"""The controller core (control/controller.py) and the loop (control/loop.py), without ROS.

The state machine: first inputs, stale state, stale references, a stream running dry, entry into
and exit from the safe behaviour (a command that is never NaN whatever the inputs: the controller
campaign of pkm_control.fuzz, test_fuzz). Then the
whole real-time path in one process, read -> estimate -> update -> write against the simulated
robot, fed by the same streaming pieces the nodes use: lockstep runs reproduce themselves bitwise.
"""

import numpy as np
import pytest

from pkm_control.control import CONTROL, ControlLoop, FeedforwardModel, References, StateEstimator
from pkm_control.dynamics import robot_dynamics
from pkm_control.control.settings import make_controller
from pkm_control.hardware import JointMeasurement, SimulatedRobot
from pkm_control.control.settings import load_settings
from pkm_control.trajectory.streaming import GoalScheduler, SampleBuffer
from pkm_control.kinematics.task_space import Pose

DT = 0.0005
DT_NS = 500_000


def home_state(dyn):
    home = dyn.kin.task.pose(dyn.model.config["home"])
    q = dyn.kin.actuated(home)
    return home, q


def _filled(kernel, size, *args):
    """The ``size`` values a kernel writes into its last argument (control/kernels.py, jourdain_kernels.py)."""
    out = np.empty(size)
    kernel(*args, out)
    return out


def test_first_inputs_and_a_stale_state_engage_the_safe_behaviour(palida):
    c = make_controller(palida)
    home, q = home_state(palida)
    ref = References(q, np.zeros(6), np.zeros(6))
    ff = FeedforwardModel(palida, "rigid").gravity(home)
    cmd = c.update(0.0, None, ref, ff)
    assert cmd.mode == "hold" and "no measurement" in cmd.reason and np.all(cmd.tau == 0)
    meas = JointMeasurement(0.0, q, np.zeros(6), np.zeros(6))
    cmd = c.update(0.0, meas, ref, ff)
    assert cmd.mode == CONTROL and not cmd.engaged and np.allclose(cmd.tau, ff)     # at rest on the reference
    cmd = c.update(0.1, meas, ref, ff)                     # the measurement is 100 ms old (timeout 20 ms)
    assert cmd.mode == "hold" and cmd.engaged and "old" in cmd.reason
    # hold: gravity at the estimated pose + PD to the latched positions (here the same: tau = gravity)
    assert np.allclose(cmd.tau, FeedforwardModel(palida, "rigid").gravity(home), rtol=1e-9)
    assert c.safe_entries == 2            # before the first measurement, and now


def test_missing_references_then_their_return(palida):
    c = make_controller(palida)
    home, q = home_state(palida)
    meas = JointMeasurement(0.0, q + 1e-4, np.zeros(6), np.zeros(6))
    ff = np.zeros(6)
    cmd = c.update(0.0, meas, None, ff)
    assert cmd.mode == "hold" and "stream ran dry" in cmd.reason and cmd.engaged
    target = c.target
    assert np.allclose(target.q, q + 1e-4)
    cmd2 = c.update(0.0005, JointMeasurement(0.0005, q, np.zeros(6), np.zeros(6)), None, ff)
    assert not cmd2.engaged and c.target is target          # latched, not captured again
    kp = np.asarray(c.safe.kp)
    assert np.allclose(cmd2.tau, target.tau_gravity + kp * 1e-4, rtol=1e-9)
    cmd3 = c.update(0.001, JointMeasurement(0.001, q, np.zeros(6), np.zeros(6)),
                    References(q, np.zeros(6), np.zeros(6)), ff)
    assert cmd3.mode == CONTROL and c.target is None and cmd3.reason == ""
    assert c.update(0.0015, meas._replace(time=0.0015) if hasattr(meas, "_replace") else
                    JointMeasurement(0.0015, q, np.zeros(6), np.zeros(6)), References(q, np.zeros(6), np.zeros(6)),
                    None).mode == "hold"                    # the law requires the feedforward


def test_references_outside_the_limits_are_refused(palida):
    """A reference at 5 m (stroke 0.65-1.15 m), above the velocity limit (4 m/s) or jumping 10 cm in one period
    engages the safe behaviour; the limits come from the URDF, read independently here."""
    c = make_controller(palida, mode="pd")
    _, q = home_state(palida)
    z = np.zeros(6)
    meas = JointMeasurement(0.0, q, z, z)
    assert c.update(0.0, meas, References(q, z, z)).mode == CONTROL
    lim = palida.kin.model.config["limits"]
    far = q.copy()
    far[2] = 5.0
    cmd = c.update(0.0005, JointMeasurement(0.0005, q, z, z), References(far, z, z))
    assert cmd.mode == "hold" and "outside its range" in cmd.reason and str(lim["stroke"][1]) in cmd.reason
    fast = z.copy()
    fast[0] = 1.01 * lim["velocity"]["prismatic"]
    assert "exceeds its limit" in c.update(0.001, JointMeasurement(0.001, q, z, z), References(q, fast, z)).reason
    step = q + np.array([0.1, 0, 0, 0, 0, 0])
    assert "jumps" in c.update(0.0015, JointMeasurement(0.0015, q, z, z), References(step, z, z)).reason
    # back to a reference within reach: control again; 50 ms later a 0.1 m step is within 4 m/s
    assert c.update(0.002, JointMeasurement(0.002, q, z, z), References(q, z, z)).mode == CONTROL
    assert c.update(0.052, JointMeasurement(0.052, q, z, z), References(step, z, z)).mode == CONTROL


def test_zero_safe_behaviour_and_law_failure(palida):
    c = make_controller(palida, mode="computed_torque", safe="zero")
    _, q = home_state(palida)
    far = q + 5.0                                            # no assembly: the estimator cannot converge
    cmd = c.update(0.0, JointMeasurement(0.0, far, np.zeros(6), np.zeros(6)), References(q, q * 0, q * 0))
    assert cmd.mode == "zero" and "ConvergenceError" in cmd.reason and np.all(cmd.tau == 0)


def test_the_stream_running_dry_repeats_then_holds(palida):
    """In the loop: a stream that ran dry repeats its last sample for reference_timeout, then the safe behaviour."""
    robot = SimulatedRobot(palida, DT)
    home, q = home_state(palida)
    robot.reset(home)
    c = make_controller(palida, mode="pd")
    loop = ControlLoop(robot, c, reference_timeout_ns=2_000_000)
    times = np.arange(0, 10) * DT_NS
    loop.offer_references(times, np.tile(q, (10, 1)), np.zeros((10, 6)), np.zeros((10, 6)))
    modes = []
    for k in range(16):
        modes.append(loop.cycle(k * DT_NS).mode)
        robot.step()
    # samples 0..9 (4.5 ms), then repeated up to 4.5 + 2 ms, then hold
    assert modes[:14] == [CONTROL] * 14 and modes[14:] == ["hold"] * 2


# ----------------------------------------------------------------------------- the whole path without ROS

def run_path(dyn, controller_name, seconds, spec, stream_dt_ns=DT_NS):
    """Scheduler -> IK -> model -> loop with the simulated robot, in lockstep (each period when the streams
    cover it), exactly as the nodes do, in one process; the streams sampled every stream_dt_ns (the stream_rate
    setting). Returns the measured positions of every period."""
    kin = dyn.kin
    home = kin.task.pose(kin.model.config["home"])
    mode = load_settings(dyn.model.name, controller_name)["mode"]
    c = make_controller(dyn, mode)
    robot = SimulatedRobot(dyn, DT)
    robot.reset(home)
    loop = ControlLoop(robot, c, 2_000_000)
    sched = GoalScheduler(kin, home, stream_dt_ns, 100, 10_000_000)
    sched.load(spec)
    sched.start()
    ff_model = FeedforwardModel(dyn, load_settings(dyn.model.name, controller_name)["feedforward_model"])
    act = kin.model.actuated_idx
    out = []
    for k in range(int(round(seconds / DT))):
        t = k * DT_NS
        chunks, _ = sched.advance(t)
        for ch in chunks:
            ms = [kin.inverse(Pose(p, R), tw, ac) for p, R, tw, ac in zip(ch.positions, ch.rotations, ch.twists,
                                                                           ch.accels)]
            loop.offer_references(ch.times_ns, np.array([m.q[act] for m in ms]), np.array([m.v[act] for m in ms]),
                                  np.array([m.a[act] for m in ms]))
            loop.offer_feedforward(ch.times_ns, np.array([ff_model.tau(Pose(p, R), tw, ac) for p, R, tw, ac in
                                                          zip(ch.positions, ch.rotations, ch.twists, ch.accels)]))
        assert loop.ready(t)
        cmd = loop.cycle(t)
        assert cmd.mode == CONTROL
        out.append(robot.step().position)
    return np.array(out)


def test_lockstep_reproduces_itself_bitwise_and_tracks(palida):
    spec = {"type": "point_to_point", "goal": [0.01, 0.0, -0.85, 0, 0, 0], "duration": 0.08}
    a = run_path(palida, "cf_rb_friction", 0.1, spec)
    b = run_path(palida, "cf_rb_friction", 0.1, spec)
    assert np.array_equal(a, b)
    # on the goal at the end (the trajectory ends at 90 ms; 10 ms later the error is well below 0.1 mm)
    goal = palida.kin.actuated(palida.kin.task.pose([0.01, 0.0, -0.85, 0, 0, 0]))
    assert np.abs(a[-1] - goal).max() < 1e-4


def test_streams_at_a_quarter_of_the_control_rate_track_as_the_full_rate(palida):
    """References and feedforward streamed at 500 Hz, interpolated by the loop at 2 kHz (real-time mode's
    stream_rate), along a circle at 0.3 m/s: the RMS tracking error of the actuators (against the exact
    references, the 2 kHz stream's samples) is that of the 2 kHz-stream run within 1 %."""
    kin = palida.kin
    spec = {"type": "circle", "radius": 0.02, "normal": [0, 0, 1], "speed": 0.3, "laps": 2, "ramp_time": 0.05}
    seconds = 0.9
    home = kin.task.pose(kin.model.config["home"])
    sched = GoalScheduler(kin, home, DT_NS, 100, 10_000_000)
    sched.load(spec)
    sched.start()
    exact = SampleBuffer()
    for k in range(int(round(seconds / DT)) + 1):
        for ch in sched.advance(k * DT_NS)[0]:
            exact.add(ch.times_ns, [kin.actuated(Pose(p, R)) for p, R in zip(ch.positions, ch.rotations)])
    desired = np.array([exact.at((k + 1) * DT_NS) for k in range(int(round(seconds / DT)))])
    rms = {}
    for stream_dt_ns in (DT_NS, 4 * DT_NS):
        e = run_path(palida, "cf_rb_friction", seconds, spec, stream_dt_ns) - desired
        rms[stream_dt_ns] = np.sqrt(np.mean(e ** 2))
    assert rms[DT_NS] > 1e-7                    # the robot moves and lags its references
    assert abs(rms[4 * DT_NS] / rms[DT_NS] - 1) < 0.01, rms


# ----------------------------------------------------------------------------- the estimator on the plant

@pytest.mark.parametrize("robot, variant", [("stewart", "6-6"), ("stewart", "3-6"), ("palida", None), ("lopes", None),
                                            ("delta", None), ("planar_redundant", "redundant"),
                                            ("planar_redundant", "nonredundant")])
def test_estimator_equals_the_plant_ground_truth(robot, variant):
    """200 states of the simulated robot (random reachable pose and twist): what its drives measure, estimated
    with a warm start 1 mm / 1 mrad away, gives the plant's exact platform pose and twist to 1e-9."""
    from pkm_control.kinematics.workspace import random_poses

    dyn = robot_dynamics(robot, variant)
    kin = dyn.kin
    plant = SimulatedRobot(dyn, DT)
    est = StateEstimator(kin)
    rng = np.random.default_rng(7)
    for pose in random_poses(kin, 200, rng):
        meas = plant.reset(pose, 0.2 * rng.standard_normal(kin.task.dim))
        truth = plant.ground_truth()
        guess = kin.task.retract(pose, 1e-3 * rng.standard_normal(kin.task.dim))
        e = est.estimate(meas.position, meas.velocity, guess, joints=True)
        assert np.abs(e.pose.position - truth.platform_pose.position).max() < 1e-9
        assert np.abs(e.pose.rotation - truth.platform_pose.rotation).max() < 1e-9
        assert np.abs(e.twist - truth.platform_twist).max() < 1e-9 * max(1.0, np.abs(truth.platform_twist).max())
        assert np.abs(e.q - truth.position).max() < 1e-9


def test_pose_error_kernel_is_the_task_difference():
    """kernels.pose_error (the spatial task-space laws' e, e' in one call) against TaskSpace.difference (so3_log of
    R_d R^T) and xdot_d - xdot: random rotations, angles below so3_log's 1e-8 rad series and within 1e-6 of pi (its
    axis from the symmetric part)."""
    from scipy.spatial.transform import Rotation

    from pkm_control.control import kernels
    from pkm_control.kinematics.task_space import TaskSpace

    task = TaskSpace("spatial")
    rng = np.random.default_rng(3)
    for trial in range(600):
        R = Rotation.random(random_state=rng.integers(1 << 30)).as_matrix()
        axis = rng.standard_normal(3)
        angle = (rng.uniform(0, np.pi), 1e-9 * rng.uniform(), np.pi - 1e-7 * rng.uniform())[trial % 3]
        R_d = Rotation.from_rotvec(angle * axis / np.linalg.norm(axis)).as_matrix() @ R
        p, p_d, xd, xd_d = (rng.standard_normal(n) for n in (3, 3, 6, 6))
        out = kernels.pose_error(R_d, p_d, R, p, xd_d, xd)
        # towards pi the angle from the trace, th / (2 sin th) v, acos(-1 + d) and the axis from sqrt(A_kk) turn an ulp
        # of R_d R^T (numpy's product sums in another order) into ~1e-16 / sin(th), ~1e-8 within 1e-6 of pi, in both
        tol = min(1e-12 + 1e-12 / np.sin(angle), 1e-7) if angle > 1e-6 else 1e-12
        np.testing.assert_allclose(out[:6], task.difference(Pose(p_d, R_d), Pose(p, R)), rtol=0, atol=tol)
        np.testing.assert_array_equal(out[6:], xd_d - xd)


def test_jacobian_dot_twist_is_jdot_times_the_twist():
    """hexapod_ups.jacobian_dot_twist (the struts' l'' at xddot = 0 from ups_motion) against jacobian_dot
    (Jdot's rows written out) times the twist, on random poses and twists of palida and stewart."""
    from pkm_control.kinematics import robot_kinematics
    from pkm_control.kinematics.workspace import random_poses

    rng = np.random.default_rng(4)
    for robot in ("palida", "stewart"):
        kin = robot_kinematics(robot)
        for pose in random_poses(kin, 100, rng):
            xd = rng.uniform(-1.0, 1.0, 6)
            np.testing.assert_allclose(kin.jacobian_dot_twist(pose, xd), kin.jacobian_dot(pose, xd) @ xd,
                                       rtol=1e-10, atol=1e-12)


def test_the_compiled_kernels_compute_bitwise_what_numpy_computes():
    """control/kernels.py replaces numpy expressions in the period: the same bits (no fused multiply-add), and the
    same decisions as the checks one by one, on random vectors spanning magnitudes, saturated forces and non-finite
    values."""
    from scipy.spatial.transform import Rotation

    from pkm_control.control import ForceLimits, ReferenceLimits, kernels
    from pkm_control.control.feedforward import force_distribution
    from pkm_control.control.force import WrenchMeasurement, WrenchWatch
    from pkm_control.kinematics.task_space import TaskSpace

    spatial = TaskSpace("spatial")

    rng = np.random.default_rng(7)
    limits = ForceLimits(np.full(6, 2000.0))
    ref_limits = ReferenceLimits(np.full(6, -0.5), np.full(6, 0.5), np.full(6, 1.0), tuple("abcdef"))
    bounds = [np.array(b) for b in ref_limits._bounds]
    rows = np.array(bounds)           # as the controller passes them to period_inputs_valid
    empty = np.empty(0)
    watch = WrenchWatch(0.02, 500.0)
    for trial in range(3000):
        kp, kd, q_d, qd_d, q, qd, ff = (rng.standard_normal(6) * 10.0 ** rng.integers(-8, 5) for _ in range(7))
        pd = kp * (q_d - q) + kd * (qd_d - qd)
        np.testing.assert_array_equal(_filled(kernels.pd, 6, kp, kd, q_d, qd_d, q, qd, ff), ff + pd)
        np.testing.assert_array_equal(_filled(kernels.pd, 6, kp, kd, q_d, qd_d, q, qd, empty), pd)
        np.testing.assert_array_equal(kernels.hold(ff, kp, kd, q_d, q, qd), ff + kp * (q_d - q) - kd * qd)
        tau = rng.standard_normal(6) * 10.0 ** rng.integers(0, 5)
        if trial % 7 == 0:
            tau[rng.integers(6)] = rng.choice([np.nan, np.inf, -np.inf])
        out, sat, any_sat, finite = limits.saturate(tau)
        np.testing.assert_array_equal(out, np.minimum(np.maximum(tau, -limits.limits), limits.limits))
        np.testing.assert_array_equal(sat, np.abs(tau) > limits.limits)
        assert any_sat == bool(sat.any()) and finite == bool(np.isfinite(tau).all())
        # the input check: valid exactly when the checks one by one find nothing
        x = [rng.uniform(-0.6, 0.6, 6), rng.uniform(-1.1, 1.1, 6)] + [rng.standard_normal(6) for _ in range(4)]
        if trial % 5 == 0:
            x[rng.integers(6)][rng.integers(6)] = rng.choice([np.nan, np.inf])
        q_prev, dt = x[0] + rng.uniform(-1e-3, 1e-3, 6), 5e-4
        one_by_one = all(np.isfinite(v).all() for v in x) and not ref_limits.problem(x[0], x[1], q_prev, dt)
        assert kernels.inputs_valid(x[2], x[3], x[0], x[1], x[4], x[5], *bounds, q_prev, dt) == one_by_one
        # with the wrench watch's checks (force.WrenchWatch.check: finite, not older than its timeout, |f| within
        # contact_force_limit; the magnitude's rounding aside, never within 1e-9 of the limit here)
        wrench = rng.standard_normal(6) * rng.uniform(0, 1000) / np.sqrt(3)
        if abs(np.linalg.norm(wrench[:3]) / watch.contact_force_limit - 1) < 1e-9:
            wrench *= 0.5
        if trial % 11 == 0:
            wrench[rng.integers(6)] = rng.choice([np.nan, np.inf])
        w_time = rng.uniform(-0.03, 0.01)
        measured = JointMeasurement(0.0, x[2], x[3], x[5], sensors={"wrench": WrenchMeasurement(w_time, wrench,
                                                                                                np.zeros(3))})
        watched = not watch.check(0.0, measured)[0]
        assert kernels.period_inputs_valid(x[2], x[3], x[0], x[1], x[4], x[5], rows, q_prev, dt, 6, wrench, 6, -w_time,
                                           watch.timeout, watch.contact_force_limit) == (one_by_one and watched)
        actuators = not WrenchWatch(0.02, 500.0, "actuators").check(0.0, measured)[0]
        assert kernels.period_inputs_valid(x[2], x[3], x[0], x[1], x[4], x[5], rows, q_prev, dt, 6, x[5], 6, 0.0,
                                           np.inf, np.inf) == (one_by_one and actuators)
        # six values each where the controller has five actuators
        assert not kernels.period_inputs_valid(x[2], x[3], x[0], x[1], x[4], x[5], rows, q_prev, dt, 5, empty, 0, 0.0,
                                               0.0, np.inf)
    # the force laws' (force.py): admittance control's filter, impedance control's terms, the distributed task PD with
    # the model's part of tau added, against their numpy expressions and feedforward.force_distribution (LAPACK)
    for trial in range(500):
        f_m, dx, dxd, m_d, d_d, k_d, xd_d, xd, xdd_d, kp, kd, tau_0 = (rng.standard_normal(6) * 10.0 **
                                                                        rng.integers(-3, 4) for _ in range(12))
        m_d, d_d, k_d, kp, kd = np.abs(m_d) + 0.1, np.abs(d_d), np.abs(k_d), np.abs(kp), np.abs(kd)
        dt = 5e-4
        v = dxd + dt * (-f_m - d_d * dxd - k_d * dx) / m_d
        np.testing.assert_array_equal(kernels.admittance_filter(f_m, dx, dxd, dt, m_d, d_d, k_d, xd_d),
                                      np.concatenate([v, dx + dt * v, xd_d + v]))
        R_d, R = Rotation.random(2, random_state=rng).as_matrix()
        p_d, p = rng.standard_normal(3), rng.standard_normal(3)
        J = rng.standard_normal((6, 6)) + 3 * np.eye(6)
        f = kernels.task_pd(R_d, p_d, R, p, xd_d, xd, kp, kd)
        terms = kernels.impedance_terms(R_d, p_d, R, p, xd_d, xd, kp, kd, xdd_d, f_m, m_d, J)
        np.testing.assert_array_equal(terms[:6], xdd_d + (f - f_m) / m_d)
        np.testing.assert_array_equal(terms[6:], force_distribution(J, f_m))
        tau = kernels.task_pd_distribute(R_d, p_d, R, p, xd_d, xd, kp, kd, J, empty, 0.0, tau_0)
        np.testing.assert_array_equal(tau, force_distribution(J, f) + tau_0)
        w, point = rng.standard_normal(6) * 10.0 ** rng.integers(-1, 3), rng.standard_normal(3) * 0.1
        dx = dx * 1e-3                  # an offset of the reference (m, rad)
        out = _filled(kernels.sensor_admittance, 30, R, w, point, dx, dxd, dt, m_d, d_d, k_d, xd_d, p_d)
        np.testing.assert_array_equal(out[:18], kernels.admittance_filter(kernels.sensor_wrench(R, w, point), dx, dxd,
                                                                          dt, m_d, d_d, k_d, xd_d))
        X_c = spatial.retract(Pose(p_d, R_d), out[6:12])
        np.testing.assert_array_equal(out[18:21], X_c.position)
        np.testing.assert_array_equal(out[21:].reshape(3, 3) @ R_d, X_c.rotation)


def test_the_force_laws_kernels_on_jourdains_model_compute_bitwise_the_calls_they_replace():
    """control/jourdain_kernels.py: a force law's kernel with PaLiDA's model inside (G^(X), the inverse dynamics at the
    measured state) and F_m (the sensor's, or J^T (tau_m - G^) from the actuator forces) gives the bits of the calls
    it replaces (|S F_c| of direct_force_joint_space's contact state to 1e-14): the model's (FeedforwardModel.gravity,
    tau: Jourdain's formulation), the law's kernel of control/kernels.py, numpy's expressions; at random reachable
    poses, motions and gains spanning magnitudes. A pose the model's kernel cannot take raises ValueError (the law's
    Python path then says what is wrong)."""
    from scipy.spatial.transform import Rotation

    from pkm_control.control import jourdain_kernels as jk, kernels
    from pkm_control.control.laws import _REST, compiled_model
    from pkm_control.kinematics.workspace import random_poses

    dyn = robot_dynamics("palida")
    rng = np.random.default_rng(11)
    empty = np.empty(0)
    for name in ("rigid", "rigid+friction"):
        model = FeedforwardModel(dyn, name)
        assert model.path == "jourdain"
        geo, prm = compiled_model(model, dyn.kin)[1:]
        for pose in random_poses(dyn.kin, 60, rng):
            R, p = pose.rotation, pose.position
            J = dyn.kin.jacobian(pose)
            G = model.gravity(pose)
            R_d = Rotation.from_rotvec(0.01 * rng.standard_normal(3)).as_matrix() @ R
            p_d = p + 1e-3 * rng.standard_normal(3)
            xd_d, xd, xdd_d, w, tau_m, f_d, offset = (rng.standard_normal(6) * 10.0 ** rng.integers(-2, 3)
                                                      for _ in range(7))
            kp, kd, ki, kf = (np.abs(rng.standard_normal(6)) * 10.0 ** rng.integers(-5, 4) for _ in range(4))
            m_d = np.abs(rng.standard_normal(6)) * 10.0 ** rng.integers(0, 3) + 1.0
            point, s, kf_s = rng.standard_normal(3) * 0.05, (rng.random(6) < 0.5).astype(float), float(rng.random())
            f_s = kernels.sensor_wrench(R, w, point)
            f_a = J.T @ (tau_m - G)
            for args, f_m, tau_0 in (((empty, empty, empty, 0.0, _REST, _REST, False), empty, G),
                                     ((w, point, empty, kf_s, _REST, _REST, False), f_s, G),
                                     ((empty, empty, tau_m, kf_s, _REST, _REST, False), f_a, G),
                                     ((empty, empty, empty, 0.0, xd, xdd_d, model.friction), empty,
                                      model.tau(pose, xd, xdd_d))):
                np.testing.assert_array_equal(_filled(jk.pd_distribute, 6, R_d, p_d, R, p, xd_d, xd, kp, kd, J, *args,
                                                      geo, prm),
                                              kernels.task_pd_distribute(R_d, p_d, R, p, xd_d, xd, kp, kd, J, f_m,
                                                                         args[3], tau_0))
            for wrench, f_m in (((w, point, empty), f_s), ((empty, empty, tau_m), f_a)):
                np.testing.assert_array_equal(
                    _filled(jk.cascade, 32, f_d, *wrench, s, offset, 5e-4, ki, kf, 0.02, R_d, p_d, xd_d, R, p, xd, kp,
                            kd, J, geo, prm),
                    kernels.force_cascade(f_d, f_m, s, offset, 5e-4, ki, kf, 0.02, R_d, p_d, xd_d, R, p, xd, kp, kd,
                                          J, G))
            last, h = xd + 1e-3 * rng.standard_normal(6), 5e-4
            for lag, f_c in ((h, J.T @ (tau_m - model.tau(pose, xd, (xd - last) / h))), (0.0, f_a)):
                out = _filled(jk.outer_joint, 33, f_d, tau_m, s, offset, 5e-4, ki, kf, 0.02, R_d, p_d, xd_d, R, p, J,
                              xd, last, lag, model.friction, geo, prm)
                np.testing.assert_array_equal(out[:26], kernels.force_outer(f_d, f_a, s, offset, 5e-4, ki, kf, 0.02,
                                                                            R_d, p_d, xd_d))
                np.testing.assert_array_equal(out[26:32], G)
                # |S F_c| the contact state machine compares with contact_force: numpy's norm sums in BLAS (another
                # build than numba's dot), equal to an ulp
                assert out[32] == pytest.approx(float(np.linalg.norm(s * f_c)), rel=1e-14)
            terms = kernels.impedance_terms(R_d, p_d, R, p, xd_d, xd, kp, kd, xdd_d, f_s, m_d, J)
            np.testing.assert_array_equal(
                _filled(jk.impedance, 6, R_d, p_d, R, p, xd_d, xd, kp, kd, xdd_d, w, point, m_d, J, model.friction,
                        geo, prm),
                model.tau(pose, xd, terms[:6]) + terms[6:])
            q_c, qd_c, q, qd = (rng.standard_normal(6) * 10.0 ** rng.integers(-4, 1) for _ in range(4))
            np.testing.assert_array_equal(_filled(jk.joint_pd, 6, kp, kd, q_c, qd_c, q, qd, empty, 0.0, p, R, geo, prm),
                                          _filled(kernels.pd, 6, kp, kd, q_c, qd_c, q, qd, G))
            tau_a = _filled(kernels.pd, 6, kp, kd, q_c, qd_c, q, qd, empty)
            np.testing.assert_array_equal(_filled(jk.joint_pd, 6, kp, kd, q_c, qd_c, q, qd, tau_m, kf_s, p, R, geo,
                                                  prm),
                                          tau_a + kf_s * (tau_a - (tau_m - G)) + G)
        with pytest.raises(ValueError):         # the platform in the base plane: singular, the model's kernel fails
            _filled(jk.joint_pd, 6, kp, kd, q_c, qd_c, q, qd, empty, 0.0, np.zeros(3), dyn.kin.home_pose().rotation,
                    geo, prm)


@pytest.mark.parametrize("robot", ["palida", "stewart"])
def test_the_desired_motion_between_streamed_samples_is_the_fk_of_the_interpolated_references(robot):
    """Streamed at 500 Hz (real-time mode's stream_rate), the periods between two samples take the desired motion
    interpolated from the samples' own (Controller._interpolated, kernels.task_hermite), not the FK of the
    interpolated joint references: along a motion that turns the platform (waypoints, 0.06 rad in roll, pitch and yaw,
    quintic), the interpolated pose is that FK's (the estimator's, to its 1e-12 tolerance) within 1e-10 m and rad,
    and against the exact motion (the generator's own samples at 2 kHz) the interpolated twist and acceleration are
    off by no more than the FK path's (J^-1 qd_d, J^-1 (qdd_d - Jdot xd_d) of the interpolated references): both
    interpolate the same samples, and both are off where a corner of the trapezoid lies between two samples."""
    from pkm_control.control.feedforward import task_rates
    from pkm_control.control.kernels import hermite
    from pkm_control.control.settings import make_force_controller

    dyn = robot_dynamics(robot)
    kin = dyn.kin
    home = np.array(kin.model.config["home"], float)
    goal = home + [0.006, -0.005, 0.003, 0.06, -0.06, 0.06]
    spec = {"type": "waypoints", "poses": [home.tolist(), goal.tolist()], "durations": [0.3],
            "profile": {"name": "quintic"}}
    act = kin.model.actuated_idx
    streams = {}
    for h_ns in (DT_NS, 4 * DT_NS):
        sched = GoalScheduler(kin, kin.task.pose(home), h_ns, 100, 10_000_000)
        sched.load(spec)
        sched.start()
        streams[h_ns] = buf = SampleBuffer(interpolate=hermite), SampleBuffer()
        for k in range(0, 700, 4):
            for ch in sched.advance(k * DT_NS)[0]:
                ms = [kin.inverse(Pose(p, R), tw, ac) for p, R, tw, ac in zip(ch.positions, ch.rotations, ch.twists,
                                                                               ch.accels)]
                buf[0].add(ch.times_ns, [np.concatenate([m.q[act], m.v[act], m.a[act]]) for m in ms])
                buf[1].add(ch.times_ns, [np.concatenate([p, R.ravel(), tw, ac]) for p, R, tw, ac in
                                         zip(ch.positions, ch.rotations, ch.twists, ch.accels)])
    refs, exact = streams[4 * DT_NS][0], streams[DT_NS][1]
    c = make_force_controller(dyn, "impedance")
    est, n = c.estimator, len(act)
    guess, periods = kin.home_pose(), 0
    pose_gap, err = 0.0, {"interpolated": np.zeros(2), "fk": np.zeros(2)}
    for k in range(1, 640):
        t = k * DT_NS
        between = refs.between(t)
        if between is None:
            continue
        periods += 1
        (pose, twist), accel = c._interpolated(*between)
        row = refs.at(t)
        fk = est.estimate(row[:n], row[n:2 * n], guess)
        guess = fk.pose
        accel_fk = task_rates(kin, fk.pose, row[n:2 * n], row[2 * n:], True, fk.twist, fk.jacobian)[1]
        pose_gap = max(pose_gap, np.abs(kin.task.difference(pose, fk.pose)).max())
        x = exact.at(t)
        for what, (tw, ac) in (("interpolated", (twist, accel)), ("fk", (fk.twist, accel_fk))):
            err[what] = np.maximum(err[what], [np.abs(tw - x[12:18]).max(), np.abs(ac - x[18:]).max()])
    assert periods > 400
    assert pose_gap < 1e-10, pose_gap
    assert (err["interpolated"] <= 1.5 * err["fk"] + 1e-12).all(), err


def _deburring_loop(palida, law="direct_force"):
    """A force law's loop on PaLiDA's deburring face (the bench's task), its references streamed every fourth period
    (500 Hz, interpolated between), 52 samples 1 cm/s along the face: (loop, robot, kin, x0, q, qd)."""
    from pkm_control.benchmarks import deburring
    from pkm_control.benchmarks.loop import FORCE_DEPTH
    from pkm_control.control.force import parse_force_reference
    from pkm_control.control.settings import make_force_controller
    from pkm_control.hardware.contact import load_environment, wrench_sensor

    kin = palida.kin
    env, sensor = load_environment("palida")
    task = deburring.task(kin, env, gap=-FORCE_DEPTH)
    x0 = np.array(task["start"])
    xs = np.tile(x0, (52, 1))
    xs[:, 1] += 0.01 * np.arange(52) * 4 * DT                     # 1 cm/s along the face
    q = np.array([kin.actuated(kin.task.pose(x)) for x in xs])
    qd = np.gradient(q, 4 * DT, axis=0)
    robot = SimulatedRobot(palida, DT, environment=env, wrench_sensor=wrench_sensor(env, sensor))
    robot.reset(kin.task.pose(x0))
    loop = ControlLoop(robot, make_force_controller(palida, law), 2_000_000)
    loop.force_reference = parse_force_reference(task["force_reference"], kin.task)
    loop.offer_references(np.arange(52) * 4 * DT_NS, q, qd, 0 * q)
    return loop, robot, kin, x0, q, qd


#: every force controller of config/controllers.yaml (force_controllers.controllers)
FORCE_CONTROLLERS = ("stiffness", "direct_force", "direct_force_joint", "direct_force_joint_space", "inner_force",
                     "inner_force_joint", "inner_force_joint_space", "impedance", "impedance_no_force", "admittance")


@pytest.mark.parametrize("controller", FORCE_CONTROLLERS)
def test_the_period_in_one_call_commands_bitwise_what_its_steps_do(palida, controller):
    """On a 6-UPS robot a law on the measured pose takes the input checks, the desired motion between streamed samples
    and the measured estimate from one compiled call (hexapod_ups_period.period_front), and on Jourdain's model the
    law's kernel and the force limits in the same call (jourdain_period.py: ControlLaw.period_call); the same
    controller without the law in it, and without either (its steps one by one), commands bitwise the same: along the
    deburring face with references streamed every fourth period (interpolated between), and for a measurement that
    jumps beyond the estimator's max_step (its recovery), a non-finite one (the safe behaviour) and the return to
    valid inputs. Three periods of four take the one call (the fourth, a span's first, packs the span); every one
    after the first with the real-time node's work between periods: the desired motion prepared (ControlLoop.prepare)
    and the runner's warm-up (ControlLoop.rehearse: the last call again into scratch arrays), which change nothing."""
    from dataclasses import replace

    runs = []
    for calls in ("period", "prepared", "front", "steps"):
        loop, robot, kin, x0, q, qd = _deburring_loop(palida, controller)
        c = loop.controller
        assert c._front is not None
        assert c._period is not None
        if calls in ("front", "steps"):
            c._period = None
        if calls == "steps":
            c._front = None
        whole = c._whole_period
        done = []
        c._whole_period = lambda *args: done.append(whole(*args)) or done[-1]
        cmds = []
        for k in range(200):
            if calls == "prepared":
                loop.rehearse()
            cmds.append(loop.cycle(k * DT_NS))
            robot.step()
            while calls == "prepared" and loop.prepare():
                pass
        assert (c._rehearsal is not None) == (calls in ("period", "prepared"))
        if c._rehearsal is not None:           # the last period (199: between two samples) took the call: again
            c._scratch[0][:] = np.nan
            loop.rehearse()
            assert c._scratch[0][-6:].tobytes() == cmds[-1].tau.tobytes()
        if calls in ("period", "prepared"):
            # every period but the first (no span yet) and, not prepared, each span's first (50 spans)
            assert sum(cmd is not None for cmd in done) == (199 if calls == "prepared" else 149), \
                sum(cmd is not None for cmd in done)
        else:
            assert not done
        m = robot.read()
        far = kin.actuated(kin.task.pose(x0 + [0.15, 0, 0, 0, 0, 0]))         # 15 cm off: beyond max_step 0.1
        ref = References(q[50], qd[50] * 0, qd[50] * 0, loop.force_reference)
        t = m.time
        for position in (far, m.position * np.nan, m.position):
            t += DT
            cmds.append(c.update(t, replace(m, time=t, position=position), ref))
        runs.append(cmds)
    assert {cmd.mode for cmd in runs[0][:200]} == {CONTROL} and runs[0][-2].mode != CONTROL
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert a.tau.tobytes() == b.tau.tobytes() and (a.mode, a.reason, a.engaged) == (b.mode, b.reason, b.engaged)
            assert a.saturated.tobytes() == b.saturated.tobytes()


@pytest.mark.parametrize("controller", ["direct_force_joint", "direct_force_joint_space"])
def test_a_contact_lost_in_the_periods_one_call_retreats_bitwise_as_its_steps_do(palida, controller):
    """Direct force control's contact state machine runs after the period's one call (force.DirectForce.period_done);
    the period where it finds the contact lost is the retreat's, which the usual path then computes: the same
    commands as without the call. Along the deburring face, in contact after ~30 periods; at period 60 the set-point
    asks for 450 N and contact_force is 400 N, so the measured force stays below it for contact_loss_time: retreat."""
    from pkm_control.control.force import ForceReference

    runs = []
    for fused in (True, False):
        loop, robot, *_ = _deburring_loop(palida, controller)
        c = loop.controller
        if not fused:
            c._period = None
        f = loop.force_reference
        cmds, states = [], []
        for k in range(200):
            if k == 60:
                c.law.contact_force = 400.0
                loop.force_reference = ForceReference(f.wrench * 15, f.selection)
            cmds.append(loop.cycle(k * DT_NS))
            robot.step()
            while loop.prepare():
                pass
            states.append(c.law.contact)
        assert states[50] == "contact" and states[-1] == "retreat", states[::10]
        runs.append((cmds, states))
    assert runs[0][1] == runs[1][1]
    for a, b in zip(runs[0][0], runs[1][0]):
        assert a.tau.tobytes() == b.tau.tobytes() and a.mode == b.mode == CONTROL


@pytest.mark.parametrize("front", [True, False])
def test_the_desired_motion_prepared_between_periods_commands_bitwise_what_the_periods_compute(palida, front):
    """Between periods the loop prepares the desired motion of the streamed samples the next periods take
    (ControlLoop.prepare: each sample's FK, from the warm start the period would take, and the span packed): with it
    no period after the first span computes a sample's motion itself (Controller._sample, counted), without it the
    first period of every span does; the commands are bitwise the same, with the compiled front of the period
    (hexapod_ups_period.period_front) and without it. Along the deburring face, references every fourth period; the
    loop prepares as much as it finds to do, or one item, between two periods."""
    runs = []
    for items in (0, 1, 100):
        loop, robot, *_ = _deburring_loop(palida)
        c = loop.controller
        if not front:
            c._front = c._period = None
        calls, sample = [], c._sample

        def counted(*args, sample=sample, calls=calls):
            calls.append(k)
            return sample(*args)

        c._sample = counted
        cmds = []
        for k in range(200):
            cmds.append(loop.cycle(k * DT_NS))
            robot.step()
            done = 0
            while done < items and loop.prepare():
                done += 1
        assert {cmd.mode for cmd in cmds} == {CONTROL}
        late = [k for k in calls if k > 4]
        assert late == [] if items else len(late) >= 45, (items, late)      # 49 spans after the first: one each
        runs.append(cmds)
    for a, b, d in zip(*runs):
        assert a.tau.tobytes() == b.tau.tobytes() == d.tau.tobytes()
        assert a.saturated.tobytes() == b.saturated.tobytes() == d.saturated.tobytes()
