"""The simulated robot: reduced-coordinate forward dynamics of the closed-loop model.

Plant: M(x) xddot = J^T tau + S^T w - G^T (RNEA(q, v, Gdot xdot) + tau_f) (engine.forward_dynamics)
integrated by classical RK4 in the platform-joint coordinates (dynamics/simulation.py
ReducedSimulator); every tree joint follows from the analytic IK, so the closures hold exactly.
Friction acts in every joint (config ``friction``, active, passive and cut joints), with the sign
of the Coulomb term smoothed to tanh(qdot / eps) so that the right-hand side is Lipschitz and RK4
applies. The actuator forces are saturated at ``force_limits`` and held over the period (zero-order
hold, as a drive does); a step advances exactly ``dt`` in ``substeps`` RK4 steps.

End stops (dynamics/end_stops.py, config ``end_stops``): every limited tree joint (the strokes
and the limited passive joints) meets a stiff, damped, one-sided stop at its range, as a real
machine does, and so do the limited cut joints (ball-joint cones); inside the ranges they exert
exactly zero force. A command at the force limit pressed into a stop holds there with a
penetration of F / k minus the gravity share (palida: 2000 N against k = 2.17e6 N/m, 0.92 mm; at
impact from a full-force run 9 mm); the state stays finite and within the ranges plus the
compliance bound of end_stops eq. 1, whatever the accepted command (test_end_stops; the fuzz class
"simulated" checks it with end_stops.EnergyBound). So the plant stays in the configurations the machine can
be in, as a real one does: the delta, started at home at 50 m/s, stays on its IK branch. Only a start
far beyond any machine's speed (200 m/s) carries more energy than the stops absorb before the IK ends
(out of reach, singular): ``step`` then refuses with InvalidInputError and keeps the state (as for a
diverged step), the node stays alive; ``reset`` refuses starts outside the ranges and infinite energies.

Choice of eps and substeps (stability of explicit RK4 with the friction slope): at rest the
smoothed friction has the slope r1 / eps + r2, so the linearized plant has the eigenvalues
lambda of d xddot / d xdot, largest for the drives; RK4 is stable on the negative real axis for
|lambda| h < 2.785. Measured at home (``stability_factor``; eps in m/s or rad/s):

    robot             max|lambda| at eps = 1e-3, 3e-3, 1e-2 (1/s)
    palida            6456, 2161, 657
    stewart           3247, 1097, 344
    lopes             3382, 1149, 368
    delta             3876, 1292, 388
    planar_redundant   727,  243,  74

So the default eps = 2e-3 gives |lambda| h = 1.6 for palida at h = 0.5 ms with one substep
(about 3200 1/s x 0.5 ms), inside the limit with margin; below eps = 1.2e-3 palida needs
``substeps`` >= 2. tanh(qdot / eps) is within 1 % of sign(qdot) for |qdot| > 2.6 eps = 5 mm/s,
so the friction force along the benchmark circle (1 m/s) is the paper's. Stable is not accurate
for the fast friction mode itself (time constant 1/|lambda| ~ 0.3 ms at palida's drives): one
substep damps it by 0.27 per step where exp(-1.6) = 0.20; after 10 ms of motion the platform
position differs from a converged run (16 substeps) by ~2e-7 m and joint rates by ~3e-4, falling
by >10x per halving of the substep (test_hardware). Use substeps = 2..4 where friction transients
matter more than speed.

Actuator lag (``actuator_lag`` = T_m s, default 0 = none; SimulatedRobot): each drive's current loop as a
first-order lag of the commanded (saturated) force, tau_applied' = (tau_cmd - tau_applied) / T_m, integrated with the
plant's RK4 on the state augmented by tau_applied (ReducedSimulator.step_lagged; the generic engine, also for palida).
The measured effort is the applied force. Codourey (sec. 5.1) gives T_m = 2 ms, the rise time of the DELTA's motor
current: the physical reason for regulator 4 (the feedforward led by T_m, control/loop.py).

A robot that is not the model (``true_parameters``, setting ``true_parameters_file``): the plant's inertias and
friction are a parameter set's (control/feedforward.py ``dynamics_with_parameters``; ``pkm perturb`` writes one
with identification/perturbation.py), the controller keeps its own model; the safe behaviour ``hold`` keeps the
nominal model too (it is the drives' firmware, which knows the catalogue values).

Measurement (``sensors``, hardware/noise.py Sensors; settings ``encoder_resolution`` m per count on linear joints,
``encoder_counts_per_turn`` on rotary ones, ``effort_noise_std`` N or Nm, ``measurement_seed``; all off by default):
``read()`` gives the quantized positions and the applied force plus Gaussian noise as the effort, one draw per
control period (the robot is sampled at the control rate; the generator restarts at ``reset``, so a run repeats).
``ground_truth()`` stays exact. ``measurement_summary()`` states all of it for a run's summary.

Contact (``environment``, hardware/contact.py ContactEnvironment; None: free space): a compliant environment the tool
point of the platform touches (planes and boxes, Kelvin-Voigt normal force without pulling, regularized Coulomb
friction); its force enters the closed-loop dynamics as the external wrench on the platform (engine.forward_dynamics,
eq. 1), a function of the state evaluated at every RK4 stage (ReducedSimulator.step). On palida's compiled step
(without actuator lag) the contact is evaluated inside the compiled RK4 kernel (dynamics/point_contact.py, the same
equations as contact.py): a step in contact costs about what a free one does, not the generic engine's ~1 ms.
``wrench_sensor`` (contact.WrenchSensor) measures it at the tool point: ``read()`` carries the sample in
``sensors["wrench"]`` (control/force.py WrenchMeasurement), with the sensor's bias, noise (the measurement
generator) and low-pass.
``contact_wrench()`` is the exact contact wrench (ground truth). Public attributes: a test may switch the contact on
and off between periods. A surface stiffer than RK4 integrates at the step dt / substeps on the platform's effective
mass at the tool (contact.check_integrable, at home; half of RK4's k_max = 8 m / h^2 without damping: 5.0e8 N/m for
the Stewart platform at 0.5 ms) is refused at construction, naming the substeps that would do; ``stiffness_limits``
holds the accepted limit per surface.

Command timeout (sim time): when no command was written for more than ``command_timeout``, the
robot applies its safe behaviour (``hold``: gravity compensation at the pose where it engaged +
PD towards the actuated positions there; ``zero``: no force) and reports it in ``mode``, until
the next command. With command_timeout = 1.5 dt the behaviour is active in the second period
after the last command. Before the first command after ``reset`` it is active from the first
period (the robot waits for its controller holding still, not sagging); without a timeout the
force is zero until the first command.
"""

from __future__ import annotations

import dataclasses
import time as _time
from abc import abstractmethod

import numpy as np

from ..control.feedforward import FeedforwardModel, as_parameter_set, dynamics_with_parameters
from ..control.laws import WRENCH
from ..control.safety import ForceLimits, SafeBehaviour
from ..dynamics.end_stops import EndStops, EnergyBound
from ..dynamics import point_contact
from ..dynamics.engine import ClosedLoopDynamics
from ..dynamics.simulation import ReducedSimulator, SimState
from ..errors import InvalidInputError, PkmError, SingularConfigurationError, UnreachablePoseError, all_finite
from ..kinematics.task_space import Pose
from .interface import REFUSE_FACTOR, CommandCheck, HardwareInterface, JointMeasurement, RobotState, Simulated  # noqa: F401
from .contact import ContactEnvironment, WrenchSensor, check_integrable
from .noise import Sensors

DEFAULT_SIGN_EPS = 2e-3
RK4_REAL_AXIS_LIMIT = 2.785


class SimulatedPlant(HardwareInterface, Simulated):
    """What every simulated plant shares (this one and hardware/mujoco_robot.py): the checks of ``write`` (NaN, size,
    REFUSE_FACTOR), the force limits with saturation, the command timeout and its safe behaviour, the start checks of
    ``reset`` (the pose reachable and inside the joint ranges, no cut joint beyond its stop), sim time and the step
    cost. A plant supplies ``_start`` (the state at a pose and twist, not yet applied), ``_set``, ``_advance`` (one
    period with the held force; InvalidInputError keeping the state), ``_actuated`` and ``_platform_pose``.
    ``sensors`` (hardware/noise.py Sensors or None: exact) measure what ``read`` gives, drawn from
    ``measurement_seed``. ``environment`` (contact.ContactEnvironment or None) is what the tool touches, in the plant's
    own contact model; ``wrench_sensor`` (contact.WrenchSensor or None) measures the plant's ``contact_wrench`` at the
    tool point: ``read()`` carries its sample in ``sensors["wrench"]``."""

    def __init__(self, dyn: ClosedLoopDynamics, dt: float, force_limits="config", command_timeout: float | None = None,
                 safe_behaviour="hold", cost_window: int = 8192, end_stops="config", sensors: Sensors | None = None,
                 measurement_seed: int = 0, environment: ContactEnvironment | None = None,
                 wrench_sensor: WrenchSensor | None = None):
        if environment is not None and not isinstance(environment, ContactEnvironment):
            raise InvalidInputError(f"environment must be a ContactEnvironment or None, got "
                                    f"{type(environment).__name__}")
        if wrench_sensor is not None and not isinstance(wrench_sensor, WrenchSensor):
            raise InvalidInputError(f"wrench_sensor must be a WrenchSensor or None, got {type(wrench_sensor).__name__}")
        self.environment, self.wrench_sensor = environment, wrench_sensor
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"dt must be > 0 s, got {dt}")
        if command_timeout is not None and not (np.isfinite(command_timeout) and command_timeout > 0):
            raise InvalidInputError(f"command_timeout must be > 0 s or None, got {command_timeout}")
        self.dt = float(dt)
        self.kin = dyn.kin
        clm = dyn.model
        self.names = tuple(clm.joint_names)
        self.actuated_names = tuple(clm.actuated_joints)
        self.n_actuated = clm.n_actuated
        self._act = clm.actuated_idx
        if isinstance(end_stops, str) and end_stops == "config":
            end_stops = EndStops.from_config(dyn)
        elif end_stops is not None and not isinstance(end_stops, EndStops):
            raise InvalidInputError(f"end_stops must be 'config', None or an EndStops, got {end_stops!r}")
        self.end_stops = end_stops
        if isinstance(force_limits, str) and force_limits == "config":
            force_limits = ForceLimits.from_config(clm)
        elif force_limits is not None and not isinstance(force_limits, ForceLimits):
            force_limits = ForceLimits(force_limits, self.n_actuated)
        self.force_limits = force_limits
        self._check = CommandCheck(self.actuated_names, force_limits)
        self.command_timeout = None if command_timeout is None else float(command_timeout)
        if isinstance(safe_behaviour, str):
            model = FeedforwardModel(dyn, "rigid") if safe_behaviour == "hold" else None
            safe_behaviour = SafeBehaviour.for_model(safe_behaviour, model) if model is not None \
                else SafeBehaviour(safe_behaviour)
        if not isinstance(safe_behaviour, SafeBehaviour):
            raise InvalidInputError(f"safe_behaviour must be 'hold', 'zero' or a SafeBehaviour, got {safe_behaviour!r}")
        self.safe_behaviour = safe_behaviour
        if sensors is not None and not isinstance(sensors, Sensors):
            raise InvalidInputError(f"sensors must be a hardware.noise.Sensors or None, got {type(sensors).__name__}")
        self.sensors = None if sensors is None or sensors.exact else sensors
        if isinstance(measurement_seed, bool) or int(measurement_seed) != measurement_seed or measurement_seed < 0:
            raise InvalidInputError(f"measurement_seed must be an integer >= 0, got {measurement_seed}")
        self.measurement_seed = int(measurement_seed)
        self._costs = np.zeros(int(cost_window))
        self._n_steps = 0
        self._state = None

    # ------------------------------------------------------------------ what a plant supplies
    @abstractmethod
    def _start(self, pose: Pose, twist):
        """The plant's state at rest (or moving with ``twist``) at a checked ``pose``, not applied yet;
        InvalidInputError for a start it cannot take."""

    def _set(self, state) -> None:
        self._state = state

    @abstractmethod
    def _advance(self, tau: np.ndarray) -> None:
        """Advance exactly dt with ``tau`` held; InvalidInputError (state kept) when the plant cannot."""

    @abstractmethod
    def _actuated(self) -> tuple[np.ndarray, np.ndarray]:
        """(positions, velocities) of the actuated joints now."""

    @abstractmethod
    def _platform_pose(self) -> Pose:
        """The platform's exact pose now."""

    @abstractmethod
    def contact_wrench(self) -> np.ndarray:
        """The exact wrench of the contact on the platform now ([f; m] at its origin, base frame; zero without an
        environment)."""

    def _tool_moment(self):
        """The contact's moment about the tool point now (base frame), None: none (a point contact at the tool
        point)."""
        return None

    # ------------------------------------------------------------------ interface
    def reset(self, pose: Pose, twist=None, time: float = 0.0) -> JointMeasurement:
        """Place the robot at ``pose`` moving with ``twist`` (default at rest). A start the machine cannot be in
        (a coordinate or rate beyond errors.MAGNITUDE_LIMIT, unreachable, a joint outside its range or a cut joint
        beyond its stop: the project's error as the cause) is refused with InvalidInputError; the state stays as
        it was."""
        if self.wrench_sensor is not None:
            self.wrench_sensor.reset()
        try:
            pose = self.kin.validate(pose)[0]
            self.kin.inverse(pose)                     # reachable and inside the joint limits
        except PkmError as exc:                        # beyond the bound, unreachable, JointLimitError
            raise InvalidInputError(f"start pose refused: {exc}") from exc
        try:
            state = self._start(pose, np.zeros(self.kin.task.dim) if twist is None else twist)
        except InvalidInputError as exc:
            raise InvalidInputError(f"start refused: {exc}") from exc
        if self.end_stops is not None:
            cut = self.end_stops.cut_penetration(self.kin.cut_joint_angles(pose))
            if cut.any():
                i = int(np.flatnonzero(cut)[0])
                raise InvalidInputError(f"start pose refused: cut joint {self.end_stops.cut_names[i]} is "
                                        f"{cut[i]:.6g} beyond its stop")
        self._set(state)
        self.time = self._t0 = float(time)
        self._tau_cmd = np.zeros(self.n_actuated)
        self._last_command = None            # no command yet: the safe behaviour (if a timeout is set)
        self.tau_applied = np.zeros(self.n_actuated)
        self.saturated = np.zeros(self.n_actuated, bool)
        self.mode = "command"
        self._target = None
        self._n_steps = 0
        self._read = None
        self._rng = np.random.default_rng(self.measurement_seed)      # the sensors' draws: a reset run repeats
        return self.read()

    def read(self) -> JointMeasurement:
        """The drives' measurement and, with a wrench sensor, its sample in sensors["wrench"]."""
        self._require()
        if self._read is None:
            q, qd = self._actuated()
            self._read = JointMeasurement(self.time, q, qd, self.tau_applied.copy())
            if self.sensors is not None:
                self._read = self.sensors.measure(self._read, self._rng)
            if self.wrench_sensor is not None:
                w = self.wrench_sensor.measure(self.time, self._platform_pose(), self.contact_wrench()[:3], self.dt,
                                               self._rng, self._tool_moment())
                self._read = dataclasses.replace(self._read, sensors={**self._read.sensors, WRENCH: w})
        return self._read

    def write(self, tau, time: float | None = None) -> None:
        """Command actuator forces; NaN, infinite or wrong-size commands, and commands beyond
        REFUSE_FACTOR times the force limit (not a saturation: a broken or hostile controller), raise
        InvalidInputError and are not applied (the previous command and the timeout stay in force).
        Between the limit and that, the force saturates at the limit (``saturated``)."""
        self._require()
        self._tau_cmd = self._check(tau).copy()
        self._last_command = self.time if time is None else float(time)
        if self.mode != "command":
            self.mode, self._target = "command", None

    def step(self) -> JointMeasurement:
        """Advance exactly dt: the command (or the safe behaviour) held and saturated."""
        self._require()
        t0 = _time.perf_counter()
        if self.command_timeout is not None and (self._last_command is None or
                                                 self.time - self._last_command > self.command_timeout + 1e-12):
            meas = self.read()
            if self.mode == "command":
                self.mode = self.safe_behaviour.mode
                self._target = self.safe_behaviour.capture(meas.position, self._platform_pose())
            tau = self.safe_behaviour.command(self._target, meas.position, meas.velocity)
        else:
            tau = self._tau_cmd
        if self.force_limits is not None:
            tau, self.saturated = self.force_limits.apply(tau)
        self.tau_applied = tau
        self._advance(tau)
        self._n_steps += 1
        self.time = self._t0 + self._n_steps * self.dt     # no accumulated rounding over long runs
        self._read = None
        out = self.read()
        self._costs[(self._n_steps - 1) % len(self._costs)] = _time.perf_counter() - t0
        return out

    @property
    def safe_active(self) -> bool:
        return self.mode != "command"

    def step_cost_us(self) -> np.ndarray:
        """Wall time of the recorded steps (us), the plant's own cost per control period."""
        n = min(self._n_steps, len(self._costs))
        return self._costs[:n] * 1e6

    def _require(self):
        if self._state is None:
            raise InvalidInputError("the simulated robot has no state yet: call reset(pose) first")


class SimulatedRobot(SimulatedPlant):
    """The closed-loop model as a plant (see the module docstring). Mutable: it is the robot.

    Measures like a machine: ``read()`` gives the actuated joints only (position, velocity, the applied
    force as effort; through ``sensors`` when given); ``ground_truth()`` gives every joint and the exact platform
    motion.
    end_stops: ``"config"`` (``EndStops.from_config``, the machine's stops), an EndStops, or None (none).
    true_parameters: a parameter set (ParameterSet, mapping or YAML path) the plant has instead of ``dyn``'s
    (module docstring); the safe behaviour ``hold`` keeps ``dyn``'s.
    environment, wrench_sensor: the contact and the force/torque sensor (module docstring), None: none.
    """

    def __init__(self, dyn: ClosedLoopDynamics, dt: float, substeps: int = 1, friction: bool = True,
                 sign_eps: float = DEFAULT_SIGN_EPS, force_limits="config", command_timeout: float | None = None,
                 safe_behaviour="hold", cost_window: int = 8192, end_stops="config", actuator_lag: float = 0.0,
                 true_parameters=None, sensors: Sensors | None = None, measurement_seed: int = 0,
                 environment: ContactEnvironment | None = None, wrench_sensor: WrenchSensor | None = None):
        if int(substeps) != substeps or substeps < 1:
            raise InvalidInputError(f"substeps must be an integer >= 1, got {substeps}")
        if not (np.isfinite(sign_eps) and sign_eps > 0):
            raise InvalidInputError(f"sign_eps must be > 0 (smooth friction sign for RK4), got {sign_eps}")
        if not (np.isfinite(actuator_lag) and actuator_lag >= 0):
            raise InvalidInputError(f"actuator_lag must be >= 0 s (0: none), got {actuator_lag}")
        self.actuator_lag = float(actuator_lag)
        self.substeps, self.sign_eps = int(substeps), float(sign_eps)
        self.true_parameters = None if true_parameters is None else as_parameter_set(true_parameters, dyn)
        plant = dyn if self.true_parameters is None else dynamics_with_parameters(dyn, self.true_parameters)
        self.dyn = ClosedLoopDynamics(plant.kin, gravity=dyn.gravity, sign_eps=self.sign_eps)
        super().__init__(dyn, dt, force_limits, command_timeout, safe_behaviour, cost_window, end_stops, sensors,
                         measurement_seed, environment, wrench_sensor)
        self.friction = bool(friction)
        self.sim = ReducedSimulator(self.dyn, friction=self.friction, end_stops=self.end_stops)
        self._kernel_of = self._kernel_form = None
        self.stiffness_limits = () if environment is None else check_integrable(
            environment, contact_mass(self.dyn, environment.tool_point), self.dt / self.substeps, "rk4",
            "the simulated robot", period=self.dt)
        if environment is not None:       # the friction's slope within RK4's stability (contact.friction_limited)
            from .contact import friction_limited

            self.environment = friction_limited(environment, contact_mass(self.dyn, environment.tool_point),
                                                self.dt / self.substeps)

    def _start(self, pose: Pose, twist) -> SimState:
        self._lagged = np.zeros(self.n_actuated)     # the force the lagging drives apply (actuator_lag > 0)
        return self.sim.state(pose, twist)

    def _actuated(self):
        return self.sim.actuated(self._state)

    def reset(self, pose: Pose, twist=None, time: float = 0.0) -> JointMeasurement:
        """As SimulatedPlant.reset; with an environment, a start with the tool deeper than contact.MAX_START_DEPTH
        inside a surface is refused (InvalidInputError)."""
        if self.environment is not None:
            from .contact import MAX_START_DEPTH

            depth, i = self.environment.depth(self.kin.validate(pose)[0])
            if depth > MAX_START_DEPTH:
                raise InvalidInputError(f"the tool starts {depth:.6g} m inside contact surface {i} (at most "
                                        f"{MAX_START_DEPTH:g} m): the environment or the start pose is wrong")
        return super().reset(pose, twist, time)

    def _kernel_contact(self):
        """The environment in the compiled step's form (ContactEnvironment.kernel_form, made again when a test swaps
        the public ``environment``) where the compiled palida step runs without actuator lag, else None: the
        generic step with ContactEnvironment.wrench at every stage."""
        env = self.environment
        if env is None or not self.sim.compiled or self.actuator_lag > 0:
            return None
        if self._kernel_of is not env:
            self._kernel_of, self._kernel_form = env, env.kernel_form()
        return self._kernel_form

    def contact_wrench(self) -> np.ndarray:
        """The exact wrench of the contact on the platform now ([f; m] at its origin, base frame; zero without an
        environment; the compiled kernel's where the step is compiled, ``_kernel_contact``)."""
        self._require()
        if self.environment is None:
            return np.zeros(6)
        pose, twist = self.sim.pose(self._state), self.kin.task.twist_map() @ self._state.twist
        contact = self._kernel_contact()
        if contact is not None:
            return point_contact.contact_wrench(pose.position, pose.rotation, twist, contact)
        return self.environment.wrench(pose, twist)

    def _platform_pose(self) -> Pose:
        return self.sim.pose(self._state)

    def snapshot(self):
        """The state as of now, cheaply (its parts are never changed in place): ``ground_truth(snapshot)`` later."""
        self._require()
        return self.time, self._state, self.tau_applied

    def ground_truth(self, snapshot=None) -> RobotState:
        """Every joint and the platform motion, now or at a ``snapshot()``: a state of the tree-coordinate step carries
        its joints (the plant's own, on the closures), any other's come from the inverse kinematics of its pose."""
        time, s, tau = self.snapshot() if snapshot is None else snapshot
        pose = self.sim.pose(s)
        if s.tree is not None:
            q, v = s.tree[0].copy(), s.tree[1].copy()
        else:
            m = self.kin.inverse(pose, s.twist, check_limits=False)
            q, v = m.q, m.v
        effort = np.zeros(len(self.names))
        effort[self._act] = tau
        return RobotState(time, self.names, q, v, effort, pose, s.twist.copy())

    def _advance(self, tau):
        """RK4 substeps (module docstring)."""
        h = self.dt / self.substeps
        s, applied = self._state, self._lagged
        env = self.environment
        contact = self._kernel_contact()
        try:
            for _ in range(self.substeps):
                if contact is not None:      # the compiled palida step, the contact's wrench inside at every stage
                    s = self.sim.step(s, h, tau, contact=contact)
                    continue
                # no surface within reach of the tool during the substep (ContactEnvironment.free): the step without
                # the contact (its wrench would be 0 at every stage), on the compiled path where there is one
                wrench = None if env is None or env.free(self.sim.pose(s), self.kin.task.twist_map() @ s.twist, h) \
                    else env.wrench
                if self.actuator_lag > 0:
                    s, applied = self.sim.step_lagged(s, h, applied, tau, self.actuator_lag, wrench)
                else:
                    s = self.sim.step(s, h, tau, wrench)
        except (UnreachablePoseError, SingularConfigurationError) as exc:
            raise InvalidInputError(
                f"the simulated robot left the configurations the machine can be in at t = {self.time:.6g} s "
                f"(energy {self.energy():.6g} J, more than its end stops absorb on the way there: a start far too "
                f"fast for the machine): {exc}; state kept, reset to go on") from exc
        if not (all_finite(s.coords) and all_finite(s.twist)):
            raise InvalidInputError(f"the simulation diverged at t = {self.time:.6g} s (dt {self.dt}, substeps "
                                    f"{self.substeps}, sign_eps {self.sign_eps}: see stability_factor)")
        self._state = s
        if self.actuator_lag > 0:          # the drives applied the lagged force, not the command
            self._lagged = self.tau_applied = applied

    # ------------------------------------------------------------------ extras
    def measurement_summary(self) -> dict:
        """What this robot is and how it measures, for a run's summary (module docstring): true_parameters (the
        file, or 'model'), encoder resolution per actuated joint (m or rad per count, 0 = exact), effort noise std,
        actuator lag, the measurement seed and the sampling rate (the control rate)."""
        sensors = self.sensors
        ps = self.true_parameters
        return {"true_parameters": "model" if ps is None else (ps.source or "in code"),
                "encoder_resolution": [] if sensors is None else sensors.resolution.tolist(),
                "effort_noise_std": 0.0 if sensors is None else sensors.effort_std,
                "actuator_lag": self.actuator_lag, "measurement_seed": self.measurement_seed,
                "sampling_rate": 1.0 / self.dt}

    @property
    def state(self) -> SimState:
        self._require()
        return self._state

    def energy(self) -> float:
        """Kinetic + potential energy of the whole mechanism (J)."""
        return self.sim.energy(self._state)

    def penetrations(self, truth: RobotState | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(tree, cut) penetrations of the ground truth (``truth``: that of the current state, if already at
        hand) beyond the end stops' ranges (``EndStops.penetration``, ``cut_penetration``; from the joint
        positions, not from the stop forces)."""
        es = self._stops_required()
        gt = self.ground_truth() if truth is None else truth
        return es.penetration(gt.position), es.cut_penetration(self.kin.cut_joint_angles(gt.platform_pose))

    def energy_bound(self) -> EnergyBound:
        """The energy bound of the end stops (end_stops.EnergyBound) started at the current state; after each
        ``step`` feed it with ``update_energy_bound`` and ask ``violation(*penetrations())``."""
        return EnergyBound(self._stops_required(), self.energy(), self._actuated()[0], *self.penetrations())

    def update_energy_bound(self, bound: EnergyBound) -> None:
        """Feed ``bound`` the period just stepped: the held force, the actuated positions, the energy."""
        bound.update(self.tau_applied, self._actuated()[0], self.energy())

    def _stops_required(self) -> EndStops:
        self._require()
        if self.end_stops is None:
            raise InvalidInputError("the simulated robot has no end stops (end_stops=None): no penetrations to check")
        return self.end_stops

    def stability_factor(self, pose: Pose | None = None) -> float:
        """max |lambda| h of d xddot / d xdot at rest at ``pose`` (default: the current pose):
        RK4 is stable for < 2.785 on the real axis (module docstring)."""
        pose = self.sim.pose(self._state) if pose is None else pose
        n = self.dyn.n
        tau = np.zeros(self.n_actuated)               # the slope in xdot does not depend on tau
        A = np.zeros((n, n))
        d = 1e-3 * self.sign_eps
        for k in range(n):
            e = np.zeros(n)
            e[k] = d
            A[:, k] = (self.dyn.forward_dynamics(pose, e, tau, friction=self.friction, end_stops=self.end_stops)
                       - self.dyn.forward_dynamics(pose, -e, tau, friction=self.friction,
                                                   end_stops=self.end_stops)) / (2 * d)
        return float(np.abs(np.linalg.eigvals(A)).max() * self.dt / self.substeps)


def contact_mass(dyn: ClosedLoopDynamics, tool_point, pose: Pose | None = None):
    """n -> the platform's effective mass (kg) at the tool point along the unit normal n (base frame) at ``pose``
    (default home): 1 / (u^T M^-1 u), u = S^T [n; (R p_t) x n] (contact.py, module docstring)."""
    pose = dyn.kin.home_pose() if pose is None else pose
    M, S = dyn.mass_matrix(pose), dyn.kin.task.twist_map()
    r = pose.rotation @ np.asarray(tool_point, float)

    def mass(n):
        u = S.T @ np.concatenate([n, np.cross(r, n)])
        return 1.0 / float(u @ np.linalg.solve(M, u))
    return mass


def measurement_text(summary: dict) -> str:
    """One line of ``SimulatedRobot.measurement_summary()`` (the log line at start-up)."""
    res = summary["encoder_resolution"]
    enc = "exact" if not any(res) else "quantized " + ", ".join(f"{r:.3g}" for r in sorted(set(res)))
    return (f"simulated robot: parameters {summary['true_parameters']}; encoders {enc} (m or rad per count); effort "
            f"noise std {summary['effort_noise_std']:g} N or Nm; actuator lag {summary['actuator_lag']:g} s; "
            f"measurement seed {summary['measurement_seed']}; sampled at {summary['sampling_rate']:g} Hz")


def plant_safe_behaviour(dyn: ClosedLoopDynamics, settings: dict) -> SafeBehaviour:
    """The plant's safe behaviour of the node settings (safe_behaviour, hold_kp, hold_kd)."""
    if settings["safe_behaviour"] == "hold":
        return SafeBehaviour("hold", FeedforwardModel(dyn, "rigid"), np.asarray(settings["hold_kp"]),
                             np.asarray(settings["hold_kd"]))
    return SafeBehaviour("zero")


def plant_sensors(dyn: ClosedLoopDynamics, settings: dict) -> Sensors:
    """The drives' sensors of the node settings (encoder_resolution on linear actuated joints, encoder_counts_per_turn
    on rotary ones, effort_noise_std; absent keys: exact)."""
    clm = dyn.model
    return Sensors.for_joints([clm.is_revolute(j) for j in clm.actuated_joints],
                              settings.get("encoder_resolution", 0.0), settings.get("encoder_counts_per_turn", 0),
                              settings.get("effort_noise_std", 0.0))


def describe_plant(plant, log, diagnostics: dict) -> None:
    """State what the simulated robot is and how it measures (``measurement_summary``): ``log("info", line)`` and the
    key ``plant`` (JSON) of the diagnostics, which a recorded run's summary carries. A plant with nothing to state
    (``measurement_summary()`` None) leaves both out."""
    import json

    summary = plant.measurement_summary()
    if summary is None:
        return
    log("info", measurement_text(summary))
    diagnostics["plant"] = json.dumps(summary)


def plant_environment(dyn: ClosedLoopDynamics, settings: dict):
    """(environment, wrench sensor) of the node setting ``environment``: '' = free space (None, None), ``default`` =
    the robot's section of config/environment.yaml, else the path of such a YAML (contact.load_environment)."""
    from .contact import load_environment, wrench_sensor

    where = settings.get("environment") or ""
    if not where:
        return None, None
    env, sensor = load_environment(dyn.model.name, "" if where == "default" else where)
    return env, wrench_sensor(env, sensor)


def simulated_robot(dyn: ClosedLoopDynamics, settings: dict) -> SimulatedRobot:
    """The simulated robot of the node settings (control_rate, substeps, friction, command_timeout,
    safe_behaviour with hold_kp / hold_kd, force_limit, actuator_lag, true_parameters_file ('' = the model's),
    encoder_resolution, encoder_counts_per_turn, effort_noise_std, measurement_seed, environment)."""
    environment, sensor = plant_environment(dyn, settings)
    return SimulatedRobot(dyn, 1.0 / settings["control_rate"], substeps=settings["substeps"],
                          friction=settings["friction"], command_timeout=settings["command_timeout"],
                          safe_behaviour=plant_safe_behaviour(dyn, settings),
                          force_limits=settings.get("force_limit", "config"),
                          actuator_lag=settings.get("actuator_lag", 0.0),
                          true_parameters=settings.get("true_parameters_file") or None,
                          sensors=plant_sensors(dyn, settings), measurement_seed=settings.get("measurement_seed", 0),
                          environment=environment, wrench_sensor=sensor)
