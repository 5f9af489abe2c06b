"""One controller of config/controllers.yaml tracking a task trajectory on a simulated plant, ROS-free: the
joint_controller node's real-time path (control/loop.py ControlLoop: read -> estimate -> law -> write) in lockstep,
with the references (IK of the trajectory) and the computed force (rigid + friction, on the desired motion) of the
whole motion offered up front, so the loop's own lookup (and its feedforward lead) applies. Shared by the
reproductions of tracking experiments (delta_regulators, stewart_control)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Tracking:
    """What a run records per control period k (time k dt)."""

    t: np.ndarray                 # (n,) s
    error: np.ndarray             # (n, n_act) q_d - q of the plant's actuated joints (the robot's own, exact)
    task_error: np.ndarray | None  # (n, dim) X_d (-) X of the plant's platform (ground truth), if asked
    tau: np.ndarray               # (n, n_act) the command written (after the force limits)
    saturated: np.ndarray         # (n,) bool: some actuator at its force limit


def track(dyn, controller: str, trajectory, robot, dt: float, rest: float = 0.0, hardware=None,
          task_errors: bool = False, observe=None, progress=None, overrides=None, feedforward=None) -> Tracking:
    """``controller`` (a name of config/controllers.yaml, built as the joint_controller node builds it on ``dyn``,
    the controller's model) on ``robot`` (a SimulatedRobot, reset to the trajectory's start; its dynamics may differ
    from ``dyn``: the plant) along ``trajectory`` and ``rest`` s of hold after it, one period of ``dt`` s each.
    hardware: what the loop reads and writes (default the robot; e.g. hardware/noise.py NoisyEncoders around it).
    observe(k, controller): called after each period's update (e.g. to record an adaptive law's estimates).
    overrides: settings of the controller replaced (as a node's ROS parameters would; e.g. adaptation_gain).
    feedforward(pose, twist, accel) -> tau: the streamed computed force (default the rigid + friction model of
    ``dyn``); e.g. a paper's simplified model, the one its controllers had.
    RuntimeError when the controller's safe behaviour engages (the law failed)."""
    from ...control import ControlLoop, FeedforwardModel
    from ...control.settings import make_controller
    from ...control.settings import load_settings

    kin, act = dyn.kin, dyn.model.actuated_idx
    s = load_settings(dyn.model.name, controller)
    s = {**s, **(overrides or {})}
    c = make_controller(dyn, s["mode"], safe="hold", controller=controller, overrides=overrides)
    robot.reset(trajectory.sample(0.0)[0])
    dt_ns = int(round(dt * 1e9))
    n = int(round((trajectory.duration + rest) / dt))
    times = np.arange(n + int(round(s["feedforward_lead"] / dt)) + 2) * dt_ns
    ff_tau = FeedforwardModel(dyn, "rigid+friction").tau if feedforward is None else feedforward
    poses, q, qd, qdd, ff = [], [], [], [], []
    for t_ns in times:
        pose, tw, ac = trajectory.sample(min(t_ns * 1e-9, trajectory.duration))
        m = kin.inverse(pose, tw, ac)
        poses.append(pose), q.append(m.q[act]), qd.append(m.v[act]), qdd.append(m.a[act])
        ff.append(ff_tau(pose, tw, ac))
    loop = ControlLoop(robot if hardware is None else hardware, c, 2 * dt_ns, int(round(s["feedforward_lead"] * 1e9)))
    loop.offer_references(times, np.array(q), np.array(qd), np.array(qdd))
    loop.offer_feedforward(times, np.array(ff))
    err, tau = np.empty((n, len(act))), np.empty((n, len(act)))
    sat = np.zeros(n, bool)
    e_x = np.empty((n, kin.task.dim)) if task_errors else None
    for k in range(n):
        cmd = loop.cycle(k * dt_ns)
        if cmd.mode != "control":
            raise RuntimeError(f"{controller}: safe behaviour at t = {k * dt:.4f} s: {cmd.reason}")
        err[k] = q[k] - robot.read().position
        if task_errors:
            e_x[k] = kin.task.difference(poses[k], robot.ground_truth().platform_pose)
        tau[k], sat[k] = cmd.tau, cmd.saturated.any()
        if observe is not None:
            observe(k, c)
        robot.step()
        if progress is not None:
            progress.update(1)
    return Tracking(np.arange(n) * dt, err, e_x, tau, sat)
