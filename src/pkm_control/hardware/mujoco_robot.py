"""MuJoCo as the plant: an independent physics engine behind the hardware contract (``hardware: mujoco``).

The robot's MuJoCo model is generated from its ClosedLoopModel (description/mjcf.py: the tree with massless bodies
merged, the closures as site-to-site ``connect`` and joint equalities, contacts off). MuJoCo integrates the tree
in its joint coordinates with the closures as stiff soft constraints; nothing of the engine's reduced-coordinate
simulation (analytic IK, projection onto the closures) is used after ``reset``, so the closures hold only as well
as MuJoCo keeps them (``closure_error``).

What it shares with the native plant (hardware/simulated.SimulatedPlant): the checks of ``write`` (NaN, size,
refusal beyond REFUSE_FACTOR x the force limit), saturation at the force limits, the command timeout and its safe
behaviour, the start checks of ``reset`` and sim time. ``read()`` gives the actuated joints (MuJoCo's qpos, qvel of
those joints, the applied force); ``ground_truth()`` every tree joint straight from MuJoCo and the platform pose and
twist from the platform joints.

Friction and end stops: the engine's own models (dynamics/friction.py: Coulomb with the smoothed sign
tanh(qdot / sign_eps) + viscous in every tree joint and the cut joints' friction on the relative angular velocity of
the closure frames; dynamics/end_stops.py: the tree joints' stops) are applied as ``qfrc_applied``, evaluated at
the state of each MuJoCo step and held over it. Not MuJoCo's joint ``damping`` / ``frictionloss``: these have no
cut joints to act on (the closures are equality constraints, not joints), and frictionloss is an exact dry-friction
constraint where the native plant smooths the sign; with the same model on both sides the tracking comparison
with the native plant measures the engines, not two friction laws. Applied explicitly, friction needs
|lambda| h < 2 (semi-implicit Euler on the friction slope, at most ~3200 1/s at palida's drives for sign_eps =
2e-3): the 0.1 ms MuJoCo step gives 0.32. The cut joints' cone stops are not modelled (the native plant has them:
they act only beyond the ball joints' ranges, which no tracking run reaches).

Contact stiffness: MuJoCo's contact force is a function of the state at the start of its step, followed by
semi-implicit Euler (implicitfast treats only the passive and actuator forces implicitly): stable on the contact
mode for h^2 k / m + 2 h c / m < 4 (hardware/contact.py), m the platform body's mass at the contact, 1 / A of
mujoco_contact (1), a model constant (20 kg for the Stewart platform, 8 kg for PaLiDA). A surface beyond half of it
(contact.STIFFNESS_MARGIN; 4e9 N/m and 1.6e9 N/m at the 0.1 ms step) is refused at construction, naming the
largest step that would do; measured without the check, PaLiDA's contact bounced at 3e9 N/m (0.94 of the bound: the
platform body is coupled to the legs through the soft closures, which 1 / A leaves out) and held at 2e9.
"""

from __future__ import annotations

import numpy as np

from ..description.loader import closure_residual
from ..description.mjcf import DEFAULT_TIMESTEP, mujoco_model
from ..dynamics.engine import ClosedLoopDynamics
from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, check_vector
from ..kinematics.task_space import Pose
from .contact import ContactEnvironment, WrenchSensor, check_integrable
from .interface import RobotState
from .mujoco_contact import MujocoContact, add_environment, contact_wrench, tool_in_body
from .simulated import DEFAULT_SIGN_EPS, SimulatedPlant


class MujocoRobot(SimulatedPlant):
    """The robot simulated by MuJoCo (module docstring). Mutable: it is the robot.

    dt: control period; MuJoCo steps ``round(dt / timestep)`` times per period (dt must be a whole multiple).
    """

    def __init__(self, dyn: ClosedLoopDynamics, dt: float, timestep: float = DEFAULT_TIMESTEP, friction: bool = True,
                 sign_eps: float = DEFAULT_SIGN_EPS, force_limits="config", command_timeout: float | None = None,
                 safe_behaviour="hold", cost_window: int = 8192, end_stops="config", integrator: str = "implicitfast",
                 environment: ContactEnvironment | None = None, wrench_sensor: WrenchSensor | None = None,
                 measurement_seed: int = 0):
        import mujoco

        super().__init__(dyn, dt, force_limits, command_timeout, safe_behaviour, cost_window, end_stops,
                         measurement_seed=measurement_seed, environment=environment, wrench_sensor=wrench_sensor)
        if not (np.isfinite(timestep) and 0 < timestep <= self.dt):
            raise InvalidInputError(f"MuJoCo timestep must be in (0, dt = {self.dt:g}] s, got {timestep}")
        steps = round(self.dt / timestep)
        if abs(steps * timestep - self.dt) > 1e-9 * self.dt:
            raise InvalidInputError(f"the control period {self.dt:g} s must be a whole number of MuJoCo steps "
                                    f"({timestep:g} s)")
        if not (np.isfinite(sign_eps) and sign_eps > 0):
            raise InvalidInputError(f"sign_eps must be > 0 (smooth friction sign), got {sign_eps}")
        self.substeps, self.sign_eps = steps, float(sign_eps)
        self.dyn = dyn
        self.clm = dyn.model
        self.mj = mujoco_model(self.clm, timestep=self.dt / steps, integrator=integrator)
        self._mujoco = mujoco
        self.contact, self._contact_cache, self.stiffness_limits = None, None, ()
        if environment is not None:
            self.mj, self.contact = self._with_environment(environment)
            self.stiffness_limits = check_integrable(
                environment, lambda n: 1.0 / self.contact.inverse_weight, self.dt / steps, "semi-implicit euler",
                "the MuJoCo plant")
        self.data = mujoco.MjData(self.mj.model)
        self.friction = bool(friction) and len(dyn.friction) > 0
        self._pin = self.clm.model.createData()
        self._qi, self._di = self.mj.qpos_index, self.mj.dof_index
        self._act_q, self._act_d = self._qi[self._act], self._di[self._act]
        self._plat_q, self._plat_d = self._qi[self.clm.platform_idx], self._di[self.clm.platform_idx]

    def _with_environment(self, environment: ContactEnvironment):
        """The model with the tool sphere, the surfaces and their contact pairs (hardware/mujoco_contact.py), and the
        MujocoContact; the joints (and so qpos_index, dof_index) are the model's without them."""
        import dataclasses

        import pinocchio as pin

        mj = self._mujoco
        base = self.mj.model
        last = self.clm.platform_joints[-1]
        body = base.body(int(base.jnt_bodyid[base.joint(last).id])).name
        home = self.kin.home_pose()
        q = self.kin.inverse(home, check_limits=False).q
        pdata = self.clm.model.createData()
        pin.forwardKinematics(self.clm.model, pdata, q)
        placement = pdata.oMi[self.clm.model.getJointId(body)]
        weight = float(base.body_invweight0[base.body(body).id, 0])
        spec = mj.MjSpec.from_string(self.mj.xml)
        add_environment(spec, environment, spec.body(body), tool_in_body(home, placement, environment.tool_point),
                        weight)
        model = spec.compile()
        ids = [model.joint(n).id for n in self.clm.joint_names]
        if not (np.array_equal(model.jnt_qposadr[ids], self.mj.qpos_index)
                and np.array_equal(model.jnt_dofadr[ids], self.mj.dof_index)):
            raise InvalidModelError(f"'{self.clm.name}': the MuJoCo model with the environment has other joints")
        contact = MujocoContact(model.geom("tool").id, model.body(body).id,
                                tuple(model.geom(f"surface_{i}").id for i in range(len(environment.surfaces))), weight)
        return dataclasses.replace(self.mj, model=model, xml=spec.to_xml()), contact

    def contact_wrench(self) -> np.ndarray:
        """The wrench of MuJoCo's contacts on the platform now ([f; m] at its origin, base frame; zero without an
        environment), from the contact forces of the solver at the current state (mujoco_contact.contact_wrench)."""
        self._require()
        if self.contact is None:
            return np.zeros(6)
        return self._contact_now()[0]

    def _tool_moment(self):
        return None if self.contact is None else self._contact_now()[1]

    def _contact_now(self):
        if self._contact_cache is None:
            pose = self._platform_pose()
            tool = pose.position + pose.rotation @ self.environment.tool_point
            self._contact_cache = contact_wrench(self.mj.model, self.data, self.contact.tool_geom, pose.position,
                                                 tool)
        return self._contact_cache

    # ------------------------------------------------------------------ SimulatedPlant
    def _start(self, pose: Pose, twist):
        twist = check_vector("twist", twist, self.kin.task.dim, MAGNITUDE_LIMIT)
        m = self.kin.inverse(pose, twist, check_limits=False)       # every joint, assembled
        return m.q, m.v

    def _set(self, state) -> None:
        q, v = state
        d = self.data
        self._mujoco.mj_resetData(self.mj.model, d)
        d.qpos[self._qi], d.qvel[self._di] = q, v
        self._mujoco.mj_forward(self.mj.model, d)
        self._state = state
        self._contact_cache = None

    def _advance(self, tau: np.ndarray) -> None:
        mj, model, d = self._mujoco, self.mj.model, self.data
        saved = (d.qpos.copy(), d.qvel.copy(), d.qacc_warmstart.copy(), d.time)
        d.ctrl[:] = tau
        for _ in range(self.substeps):
            q, v = d.qpos[self._qi], d.qvel[self._di]
            f = np.zeros(len(q))
            if self.friction:
                f -= self.dyn.friction.torque(self._pin, q, v, self.sign_eps)
            if self.end_stops is not None:
                f += self.end_stops.torque(q, v)
            d.qfrc_applied[self._di] = f
            mj.mj_step(model, d)
        if not (np.isfinite(d.qpos).all() and np.isfinite(d.qvel).all()) or d.warning[
                mj.mjtWarning.mjWARN_BADQACC].number:
            d.qpos[:], d.qvel[:], d.qacc_warmstart[:], d.time = saved
            d.warning[mj.mjtWarning.mjWARN_BADQACC].number = 0
            mj.mj_forward(model, d)
            raise InvalidInputError(f"MuJoCo diverged at t = {self.time:.6g} s (timestep {model.opt.timestep:g} s): "
                                    "state kept, reset to go on")
        if self.contact is not None:         # the contacts and their forces at the new state (mj_step's are the old)
            mj.mj_forward(model, d)
        self._state = (d.qpos[self._qi].copy(), d.qvel[self._di].copy())
        self._contact_cache = None

    def _actuated(self):
        return self.data.qpos[self._act_q].copy(), self.data.qvel[self._act_d].copy()

    def _platform_pose(self) -> Pose:
        return self.kin.task.pose_from_platform_joints(self._state[0][self.clm.platform_idx])

    # ------------------------------------------------------------------ ground truth
    def snapshot(self):
        """The state as of now (its parts are never changed in place): ``ground_truth(snapshot)`` later."""
        self._require()
        return self.time, self._state, self.tau_applied

    def ground_truth(self, snapshot=None) -> RobotState:
        """Every tree joint as MuJoCo has it, the platform pose and twist from the platform joints."""
        time, (q, v), tau = self.snapshot() if snapshot is None else snapshot
        task = self.kin.task
        pose = task.pose_from_platform_joints(q[self.clm.platform_idx])
        twist = np.linalg.solve(task.platform_rate_matrix(pose), v[self.clm.platform_idx])
        effort = np.zeros(len(self.names))
        effort[self._act] = tau
        return RobotState(time, self.names, q.copy(), v.copy(), effort, pose, twist)

    def closure_error(self) -> float:
        """The largest closure residual now (m; rad for coupling rows), by pinocchio on MuJoCo's joints."""
        self._require()
        return float(np.abs(closure_residual(self.clm, self._pin, self._state[0])).max())


def mujoco_robot(dyn: ClosedLoopDynamics, settings: dict) -> MujocoRobot:
    """The MuJoCo plant of the node settings (control_rate, mujoco_timestep, friction, command_timeout,
    safe_behaviour with hold_kp / hold_kd, force_limit, environment, measurement_seed)."""
    from .simulated import plant_environment, plant_safe_behaviour

    environment, sensor = plant_environment(dyn, settings)
    return MujocoRobot(dyn, 1.0 / settings["control_rate"], timestep=settings["mujoco_timestep"],
                       friction=settings["friction"], command_timeout=settings["command_timeout"],
                       safe_behaviour=plant_safe_behaviour(dyn, settings),
                       force_limits=settings.get("force_limit", "config"), environment=environment,
                       wrench_sensor=sensor, measurement_seed=settings.get("measurement_seed", 0))
