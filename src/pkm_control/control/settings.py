"""Settings of the control graph (ROS-free): config/controllers.yaml resolved for one robot and controller.

A controller's settings resolve as ``defaults <- robots.<robot> <- controllers.<controller>`` (a robot given by
the path of its YAML and absent from controllers.yaml: ``robots.<robot>`` is ``{gains: ...}`` of its YAML); the
gains of the mode's family come from ``robots.<robot>.gains``: ``computed_torque`` (acceleration gains, 1/s^2
and 1/s) for the inverse-dynamics family (control.laws.ACCELERATION_MODES), ``task_pd`` (force gains per task
coordinate) for the task-space PD laws, ``pd`` (force gains per actuated joint) for the others; the hold safe
behaviour always uses ``pd``. Gains of the task-space laws have one value per task coordinate, the others one
per actuated joint (``gain_size``). The nodes
then declare each key they use (``NODE_KEYS``) as a ROS parameter with the resolved value as its
default, so a ROS parameter (launch file, ``pkm bringup --set``) overrides the YAML.

``RUNTIME_KEYS`` are the parameters a running node applies when set (each validated by
``validate``; a wrong type, shape or sign, or a number outside its declared range ``RANGES``, is refused with the
reason); every other parameter is read-only once the node runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import math

import numpy as np
import yaml

from ..errors import InvalidInputError, InvalidModelError, check_number, check_vector, excerpt
from ..plugins import HARDWARE_GROUP, names
from .feedforward import FeedforwardModel
from .force import FORCE_LAWS, force_law, force_settings, wrench_watch
from .laws import ACCELERATION_MODES, LAWS, MODEL_FREE, TASK_MODES, law_from_settings
from ..kinematics.task_space import Pose

#: keys whose values are floats (a YAML int such as 2000 must not make the ROS parameter an integer)
FLOAT_KEYS = {"control_rate", "state_timeout", "reference_timeout", "command_timeout", "lockstep_timeout",
              "lookahead", "chunk_length", "stream_rate", "start_delay", "display_rate", "measured_pose_rate",
              "diagnostics_period",
              "approach_speed", "approach_rate", "approach_tolerance", "state_publish_rate", "tf_rate",
              "ground_truth_rate", "clock_rate", "mujoco_timestep", "rho", "boundary_layer", "adaptation_gain",
              "parameter_bound", "feedforward_lead", "actuator_lag", "parameter_estimates_rate", "encoder_resolution",
              "effort_noise_std"}
#: integer keys: (smallest, largest) accepted value
INT_KEYS = {"ground_truth_chunk": (1, 10_000), "stream_priority": (0, 99), "encoder_counts_per_turn": (0, 2 ** 40),
            "measurement_seed": (0, 2 ** 32 - 1)}
#: the simulated robot's "true" parameters and its measurement (hardware/simulated.py; off by default)
PLANT_KEYS = ("true_parameters_file", "encoder_resolution", "encoder_counts_per_turn", "effort_noise_std",
              "measurement_seed")
#: samples of the simulated robot's ground truth per message when the YAML does not say
GROUND_TRUTH_CHUNK = 10
GAIN_KEYS = ("kp", "kd", "hold_kp", "hold_kd")
MODES = tuple(LAWS)
#: the force laws (control/force.py), named in controllers.yaml ``force_controllers`` (load_settings)
FORCE_MODES = tuple(FORCE_LAWS)
FEEDFORWARD_MODELS = ("none", "rigid", "rigid+friction")
SAFE_BEHAVIOURS = ("hold", "zero")
#: how a robot behind topics is talked to (hardware: topics | ros2_control): ros2_control's joint_state_broadcaster
#: and forward_command_controller (/joint_states, /<controller_name>/commands as Float64MultiArray), or the
#: topic_based_ros2_control plugin's JointState topics (joint_states_topic, joint_commands_topic)
TOPIC_CONVENTIONS = ("forward_command", "topic_based")

#: real-time mode (``pkm bringup --realtime``): the loop on the wall clock takes each streamed chunk between two
#: periods, so the chunks are short (10 samples: ~0.1 ms to take, 100 ~0.9 ms); the streams carry 500 samples a
#: second and the loop interpolates them at its 2 kHz (cubic Hermite on q, qd: SampleBuffer): measured here with
#: 2 kHz streams, the generator, IK and computed force took 0.33 + 0.49 + 0.33 of a core (rclpy's per-sample
#: message conversion), which with the loop's 0.7 left the 2-core machine no margin, and IK fell behind; the
#: generator streams 0.2 s ahead (the latency margin of three processes on a busy machine); /clock at 50 Hz (the
#: generator publishes the chunks of 20 ms per clock); the observation topics at 100 Hz (each costs the loop
#: 0.1-0.2 ms, between periods)
REALTIME_SETTINGS = {"lockstep": False, "stream_rate": 500.0, "chunk_length": 0.02, "lookahead": 0.2,
                     "clock_rate": 50.0, "ground_truth_rate": 100.0, "state_publish_rate": 100.0}
#: the settings every node takes (the robot and the controller it runs)
COMMON_KEYS = ("robot", "variant", "controller", "controller_config", "diagnostics_period", "sources")
#: the settings each node uses, besides COMMON_KEYS
NODE_KEYS = {
    "trajectory_generator": ("control_rate", "stream_rate", "chunk_length", "lookahead", "start_delay",
                             "display_rate", "goal", "auto_start", "initial_pose", "approach_speed", "approach_rate",
                             "approach_tolerance", "lockstep", "stream_priority"),
    "inverse_kinematics": ("display_rate", "measured_pose_rate", "tf_rate", "initial_pose", "hardware",
                           "topic_convention", "controller_name", "joint_states_topic", "joint_commands_topic",
                           "lockstep", "stream_priority"),
    "computed_force": ("feedforward_model", "parameters_file", "parameters_dir", "lockstep", "stream_priority"),
    "joint_controller": ("hardware", "control_rate", "mode", "feedforward_model", "kp", "kd", "hold_kp", "hold_kd",
                         "force_limit", "safe_behaviour", "state_timeout", "reference_timeout", "lockstep",
                         "lockstep_timeout", "controller_name", "initial_pose", "state_publish_rate",
                         "ground_truth_rate", "ground_truth_chunk", "clock_rate", "substeps", "mujoco_timestep",
                         "friction", "command_timeout", "realtime_priority", "realtime_cpu", "wait_for_recorder",
                         "topic_convention", "joint_states_topic", "joint_commands_topic",
                         "rho", "boundary_layer", "adaptation_gain", "parameter_bound", "feedforward_lead",
                         "actuator_lag", "parameter_estimates_rate", "canopen_config", "canopen_emulate",
                         "environment", "force_reference", *PLANT_KEYS),
    "hardware": ("control_rate", "substeps", "friction", "command_timeout", "actuator_lag", "safe_behaviour", "hold_kp",
                 "hold_kd",
                 "lockstep", "lockstep_timeout", "controller_name", "initial_pose", "force_limit", "wait_for_recorder",
                 "ground_truth_rate", "ground_truth_chunk", "topic_convention", "joint_states_topic",
                 "joint_commands_topic", "publish_clock", "environment", *PLANT_KEYS),
}


@dataclass(frozen=True)
class ParameterRange:
    """The accepted values of a numeric run-time parameter, [low, high] (``open_low``: (low, high]), and why.

    A node declares it in the parameter's descriptor (``floating_point_range``, shown by ``ros2 param describe``);
    ROS 2 applies such a range to scalar doubles only, so ``validate`` enforces it on every element of a
    per-joint list too."""

    low: float
    high: float
    reason: str
    open_low: bool = False

    def text(self) -> str:
        return f"{'(' if self.open_low else '['}{self.low:g}, {self.high:g}]"

    def contains(self, x: float) -> bool:
        return (self.low < x if self.open_low else self.low <= x) and x <= self.high


# the discrete loop's bounds (a PD on one actuated inertia m at the period dt, the force held over dt): the
# damping alone gives v+ = (1 - kd dt / m) v, unstable for kd dt / m > 2; the stiffness alone, with kd = 0,
# unstable for kp dt^2 / m > 4 (config/controllers.yaml, the gains' comment). The bounds below take the heaviest
# m any robot here may have (1000 kg or kg m^2 per actuated joint, 4x planar_redundant's 252) at the shipped
# 2 kHz: kp <= 4 m / dt^2 = 1.6e10, kd <= 2 m / dt = 4e6; a larger gain is unstable on every robot of the suite
# (the acceleration gains of the computed-torque family, m = 1: kp <= 1.6e7 1/s^2, kd <= 4000 1/s, lie inside).
_KP = ParameterRange(0.0, 1.6e10, "kp dt^2 / m < 4 (discrete PD, dt at 2 kHz) for an actuated inertia m of "
                     "at most 1000 kg (kg m^2): above it the loop is unstable on every robot")
_KD = ParameterRange(0.0, 4.0e6, "kd dt / m < 2 (discrete PD, dt at 2 kHz) for an actuated inertia m of at most "
                     "1000 kg (kg m^2): above it the loop is unstable on every robot")
# a topic's rate: 0 = every period (or none); above the control rate every period is published, so the bound
# only keeps the number meaningful: 10 kHz, 5x the shipped 2 kHz loop
_RATE = ParameterRange(0.0, 1.0e4, "Hz (sim time), 0 = every period or none; a rate above the control rate "
                       "(2 kHz shipped) publishes every period: 10 kHz bounds the meaningful values")
#: the declared range of every numeric run-time parameter (``RUNTIME_KEYS``)
RANGES = {
    "kp": _KP, "hold_kp": _KP, "kd": _KD, "hold_kd": _KD,
    "force_limit": ParameterRange(0.0, 1.0e6, "N or Nm per actuator, > 0; a run-time value may lower the "
                                  "actuators' rating (config actuators.force_limit), never raise it; 1e6 bounds "
                                  "every rating (the largest shipped is 8000 N)", open_low=True),
    "state_publish_rate": _RATE, "display_rate": _RATE, "measured_pose_rate": _RATE, "tf_rate": _RATE,
    "approach_speed": ParameterRange(0.0, 10.0, "m/s, > 0: the approach move's peak speed; 10 m/s is above the "
                                     "fastest parallel robots' (delta pickers, ~10 m/s)", open_low=True),
    "approach_rate": ParameterRange(0.0, 20.0, "rad/s, > 0: the approach move's peak angular rate; 20 rad/s "
                                    "(1150 deg/s) is above any parallel robot's platform", open_low=True),
    "approach_tolerance": ParameterRange(0.0, 1.0e-3, "m or rad: a goal starting this close to the held pose gets "
                                         "no approach, so the reference steps by up to it; 1 mm (100x the "
                                         "default) bounds a step the loop takes without saturating"),
}
#: run-time parameters whose value is one of a set (a tuple), or a path or a structure (its form, a string), instead
#: of a number in RANGES
CHOICE_KEYS = {"safe_behaviour": SAFE_BEHAVIOURS, "feedforward_model": FEEDFORWARD_MODELS,
               "parameters_file": "a YAML file inside parameters_dir",
               "wait_for_recorder": "true or false (lockstep: the loop keeps pace with its recorders)",
               "force_reference": "'' or {wrench: [F_d per task coordinate], selection: [force-controlled "
                                  "coordinates]} (control/force.py parse_force_reference)"}
#: parameters applied at run time (validated); all others are read-only
RUNTIME_KEYS = {
    "joint_controller": ("kp", "kd", "hold_kp", "hold_kd", "force_limit", "safe_behaviour",
                         "state_publish_rate", "wait_for_recorder",     # `pkm record`: every period, in step with it
                         "force_reference"),
    "computed_force": ("feedforward_model", "parameters_file"),
    "trajectory_generator": ("approach_speed", "approach_rate", "approach_tolerance", "display_rate"),
    "inverse_kinematics": ("display_rate", "measured_pose_rate", "tf_rate"),
    "hardware": (),
}


def default_controller_config() -> str:
    from ..description.paths import share_dir

    return str(share_dir() / "config" / "controllers.yaml")


def gain_family(mode: str) -> str:
    """The section of ``robots.<robot>.gains`` a mode takes its kp, kd from (module docstring)."""
    return "computed_torque" if mode in ACCELERATION_MODES else "task_pd" if mode in TASK_MODES or mode in FORCE_MODES \
        else "pd"


def gain_size(mode: str, n_actuated: int | None, n_task: int | None) -> int | None:
    """How many values kp and kd of a mode have: one per task coordinate (task-space laws) or per actuated joint."""
    return n_task if mode in TASK_MODES or mode in FORCE_MODES else n_actuated


def load_settings(robot: str, controller: str, controller_config: str = "", n_actuated: int | None = None,
                  force_limit=None, n_task: int | None = None) -> dict:
    """Resolved controller settings of one robot and named controller (module docstring).

    With ``n_actuated`` (and ``n_task``, the task coordinates) the gains are expanded to one float per actuated joint
    (task-space laws: per task coordinate); ``force_limit``
    (the robot config's ``actuators.force_limit``) is the default of the ``force_limit`` key.
    """
    from ..description.paths import read_user_yaml

    path = controller_config or default_controller_config()
    doc = read_user_yaml(path, "controller config", InvalidModelError) or {}
    if not isinstance(doc, dict):
        raise InvalidModelError(f"controller config {path!r} must be a mapping, got {type(doc).__name__}")
    controllers = doc.get("controllers") or {}
    robots = doc.get("robots") or {}
    force = None
    if controller not in controllers and controller in ((doc.get("force_controllers") or {}).get("controllers")
                                                        or {}):
        # a force controller (control/force.py force_settings): its mode, model and environment; kp, kd its motion
        # gains (the inner loop of stiffness and direct_force); the law's other settings stay in its section
        force = force_settings(robot, controller, str(path))
        controllers = {controller: {"mode": force["mode"], "feedforward_model": force["feedforward_model"],
                                    "environment": force.get("environment", "")}}
    if controller not in controllers:
        raise InvalidInputError(f"controller '{controller}' is not in {path} (controllers: {list(controllers)})")
    rob = dict(robots[robot] or {}) if robot in robots else own_robot_section(robot)
    if rob is None:
        raise InvalidInputError(f"robot '{robot}' has no section in {path} (robots: {list(robots)}) and its own "
                                "config no 'gains' (a robot of one's own: gains: {pd: ..., computed_torque: ..., "
                                "task_pd: ...} in its YAML)")
    gains = rob.pop("gains", {}) or {}
    out = dict(doc.get("defaults") or {})
    out.update(rob)
    out.update(controllers[controller] or {})
    out["controller"] = controller
    for key, allowed in (("mode", MODES + FORCE_MODES), ("feedforward_model", FEEDFORWARD_MODELS),
                         ("safe_behaviour", SAFE_BEHAVIOURS), ("hardware", names(HARDWARE_GROUP)),
                         ("topic_convention", TOPIC_CONVENTIONS)):
        if out.get(key) not in allowed:
            raise InvalidInputError(f"controller '{controller}': {key} {out.get(key)!r} is not one of {allowed}")
    family = gain_family(out["mode"])
    if force is not None:
        gains = {"pd": gains.get("pd"), family: force["gains"]["motion"]}
    if family not in gains or "pd" not in gains:
        raise InvalidInputError(f"robot '{robot}' in {path} needs gains.pd and gains.{family} (controller "
                                f"'{controller}', mode {out['mode']})")
    for key in ("kp", "kd"):
        out[key] = gain(key, (gains[family] or {}).get(key), gain_size(out["mode"], n_actuated, n_task))
        # the hold safe behaviour is a joint PD: always the pd gains
        out["hold_" + key] = gain("hold_" + key, (gains["pd"] or {}).get(key), n_actuated)
    if force_limit is not None:
        out["force_limit"] = gain("force_limit", force_limit, n_actuated, positive=True)
    for key in FLOAT_KEYS & out.keys():
        out[key] = check_number(f"setting '{key}'", out[key])
    out.setdefault("ground_truth_chunk", GROUND_TRUTH_CHUNK)
    for key in INT_KEYS.keys() & out.keys():
        out[key] = integer(f"setting '{key}'", out[key], *INT_KEYS[key])
    if not out["control_rate"] > 0:
        raise InvalidInputError(f"control_rate = {out['control_rate']} Hz must be > 0")
    out.setdefault("stream_rate", 0.0)
    check_stream_rate(out)
    out["substeps"] = int(out.get("substeps", 1))
    out["controller_config"] = str(path)
    return out


def check_stream_rate(settings: dict) -> None:
    """The streamed samples are at most as frequent as the periods that use them: stream_rate in [0, control_rate]
    (0: the control rate); InvalidInputError otherwise."""
    if not 0 <= settings["stream_rate"] <= settings["control_rate"]:
        raise InvalidInputError(f"stream_rate = {settings['stream_rate']} Hz must be in [0, control_rate = "
                                f"{settings['control_rate']} Hz] (0: the control rate)")


def realtime_settings(control_rate: float) -> dict:
    """REALTIME_SETTINGS for a loop at ``control_rate`` (Hz): each rate (the streams', /clock's, the observation
    topics') the highest whole fraction of the control rate at or below the preset's, control_rate / ceil(control_rate
    / rate): the same at 2 kHz; at 250 Hz (a CAN bus) the streams at 250 Hz, not 500 (samples between the periods
    only cost the stream stages), and /joint_states and the ground truth at 83.3 Hz, every third period, not at
    100 Hz, which a 4 ms period serves 8 and 12 ms apart (the recorder, judging by the median spacing, counted a
    quarter of the samples as missing)."""
    out = dict(REALTIME_SETTINGS)
    for key in ("stream_rate", "clock_rate", "ground_truth_rate", "state_publish_rate"):
        out[key] = float(control_rate) / math.ceil(float(control_rate) / out[key] - 1e-9)
    return out


def own_robot_section(robot: str) -> dict | None:
    """The ``robots.<robot>`` section of a robot given by its YAML path (description/robots.py): {gains: its
    config's ``gains``}; None for a shipped robot id or a config without gains."""
    from ..description.robots import is_robot_path, robot_config

    if not is_robot_path(robot):
        return None
    gains = robot_config(robot).get("gains")
    return {"gains": gains} if gains else None


def gain(key: str, value, n: int | None = None, positive: bool = False) -> list:
    """A gain (or force limit) as a list of floats, one per actuated joint when ``n`` is given; a scalar
    applies to every joint. Refused (InvalidInputError naming the key) when missing, not numeric, of
    the wrong length, not finite or negative (``positive``: <= 0)."""
    if value is None or isinstance(value, (str, bool)):
        raise InvalidInputError(f"'{key}' must be a number or a list of numbers, got {value!r}")
    try:
        arr = np.atleast_1d(np.asarray(value, dtype=float))
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"'{key}' must be a number or a list of numbers, got {value!r}") from exc
    if arr.ndim != 1 or arr.size == 0:
        raise InvalidInputError(f"'{key}' must be a number or a flat list of numbers, got {value!r}")
    if n is not None:
        if arr.size == 1:
            arr = np.full(n, arr[0])
        elif arr.size != n:
            raise InvalidInputError(f"'{key}' has {arr.size} values, the robot has {n} actuated joints")
    if not np.all(np.isfinite(arr)) or np.any(arr <= 0 if positive else arr < 0):
        raise InvalidInputError(f"'{key}' = {arr.tolist()} must be finite and {'> 0' if positive else '>= 0'}")
    return [float(x) for x in arr]


def integer(what: str, value, lo: int, hi: int) -> int:
    """``value`` as an int in [lo, hi] (a float with an integer value is taken), or InvalidInputError saying
    ``what`` must be one."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) or \
            not np.isfinite(value) or value != int(value) or not lo <= int(value) <= hi:
        raise InvalidInputError(f"{what} must be an integer in [{lo}, {hi}], got {excerpt(value)}")
    return int(value)


def inside(path: str, directory: str) -> bool:
    """The real path of ``path`` lies inside the real path of ``directory`` (links resolved)."""
    import os

    real, root = os.path.realpath(path), os.path.realpath(directory)
    return os.path.commonpath([real, root]) == root


def validate(key: str, value, n_actuated: int, force_limit=None, n_gains: int | None = None):
    """A run-time value of a RUNTIME_KEYS parameter, checked (module docstring; a number against its RANGES entry,
    every element of a per-joint list); InvalidInputError if not.

    force_limit: the robot's rated limits (config); a run-time force_limit may lower them, not raise them.
    n_gains: the size of kp and kd (``gain_size``; default n_actuated).
    """
    if key in GAIN_KEYS or key == "force_limit":
        n = n_gains if key in ("kp", "kd") and n_gains is not None else n_actuated
        out = in_range(key, gain(key, value, n, positive=key == "force_limit"))
        if key == "force_limit" and force_limit is not None and \
                np.any(np.array(out) > np.asarray(force_limit) * (1 + 1e-12)):
            raise InvalidInputError(f"force_limit {out} exceeds the actuators' rating {list(force_limit)} "
                                    "(config actuators.force_limit)")
        return out
    if key in ("safe_behaviour", "feedforward_model"):
        if value not in CHOICE_KEYS[key]:
            raise InvalidInputError(f"{key} must be one of {CHOICE_KEYS[key]}, got {excerpt(value)}")
        return value
    if key == "wait_for_recorder":
        if not isinstance(value, bool):
            raise InvalidInputError(f"wait_for_recorder must be true or false, got {excerpt(value)}")
        return value
    if key == "force_reference":         # parsed against the robot's task by the node (force.parse_force_reference)
        if not isinstance(value, str) or len(value) > 4096:
            raise InvalidInputError(f"force_reference must be a string of at most 4096 characters, got "
                                    f"{str(value)[:80]!r}")
        return value
    if key == "parameters_file":
        if not isinstance(value, str) or len(value) > 4096:
            raise InvalidInputError(f"parameters_file must be a path string, got {str(value)[:100]!r}")
        return value
    if key in RANGES:
        return in_range(key, [check_number(f"'{key}'", value)])[0]
    raise InvalidInputError(f"parameter '{key}' cannot change at run time")


def range_text(key: str) -> str:
    """The declared range of a numeric setting (RANGES with its reason, or INT_KEYS), as a refusal states it."""
    if key in RANGES:
        return f"{RANGES[key].text()} ({RANGES[key].reason})"
    low, high = INT_KEYS[key]
    return f"[{low}, {high}] (an integer)"


def in_range(key: str, values: list) -> list:
    """``values`` (floats) if each lies in ``RANGES[key]``, else InvalidInputError naming the parameter, the value,
    the range and its reason."""
    r = RANGES[key]
    bad = [x for x in values if not r.contains(x)]
    if bad:
        raise InvalidInputError(f"'{key}' = {bad[0]:g} is outside its range {range_text(key)}")
    return values


@dataclass(frozen=True)
class RobotContext:
    """The robot a node works on: kinematics, names and index maps (immutable)."""

    robot: str
    variant: str | None
    kin: object

    @property
    def model(self):
        return self.kin.model

    @property
    def task(self):
        return self.kin.task

    @property
    def joint_names(self):
        return list(self.kin.model.joint_names)

    @property
    def actuated_joints(self):
        return list(self.kin.model.actuated_joints)

    @property
    def n_actuated(self):
        return self.kin.model.n_actuated

    @property
    def force_limit(self):
        from .safety import ForceLimits

        return ForceLimits.from_config(self.kin.model).limits.tolist()

    def gain_size(self, mode: str) -> int:
        """kp and kd of ``mode``: one value per task coordinate or per actuated joint (``gain_size``)."""
        return gain_size(mode, self.n_actuated, self.task.dim)

    def home(self) -> Pose:
        return self.kin.home_pose()

    def initial(self, value) -> Pose:
        """The start pose of the setting ``initial_pose``: '' / [] = home, else task coordinates
        (checked: reachable and inside the joint limits, else UnreachablePoseError / JointLimitError)."""
        if value is None or (isinstance(value, str) and not value.strip()) or \
                (not isinstance(value, str) and len(value) == 0):
            return self.home()
        if isinstance(value, str):
            try:
                value = yaml.safe_load(value)
            except yaml.YAMLError as exc:
                raise InvalidInputError(f"initial_pose is not a YAML list: {exc}") from exc
        pose = self.kin.task.pose(check_vector(f"initial_pose ({' '.join(self.kin.task.names)})", value,
                                               self.kin.task.dim))
        self.kin.inverse(pose)
        return pose

    def dynamics(self):
        from ..dynamics import robot_dynamics

        return robot_dynamics(self.robot, self.variant)


def robot_context(robot: str, variant: str | None) -> RobotContext:
    from ..kinematics import robot_kinematics

    return RobotContext(robot, variant or None, robot_kinematics(robot, variant or None))


def node_settings(node_name: str, robot: str, variant: str | None, controller: str, controller_config: str = ""):
    """(RobotContext, {key: value} of the keys ``node_name`` uses, resolved from the YAML)."""
    ctx = robot_context(robot, variant)
    s = load_settings(robot, controller, controller_config, ctx.n_actuated, ctx.force_limit, ctx.task.dim)
    out = {k: s.get(k) for k in NODE_KEYS[node_name]}
    missing = [k for k, v in out.items() if v is None]
    if missing:
        raise InvalidModelError(f"controller config {s['controller_config']} lacks {missing} (node {node_name})")
    out.update(robot=robot, variant=variant or "", controller=controller,
               controller_config=s["controller_config"], diagnostics_period=s["diagnostics_period"],
               sources=s["sources"])
    return ctx, out


def make_controller(dyn, mode="pd_feedforward", safe="hold", state_timeout=0.02, parts=None, controller=None,
                    overrides=None):
    """The controller of a named mode as the joint_controller node builds it (the robot's controller settings of
    ``controller``, default the one named like the mode, cf_rb_friction for pd_feedforward, with ``overrides`` of
    its keys as a node's ROS parameters would; force limits from the config, reference limits from the URDF);
    ``parts`` caches its immutable pieces (a law with a state of its own is reset)."""
    from . import Controller, FeedforwardModel, ForceLimits, ReferenceLimits, SafeBehaviour, StateEstimator

    parts = {} if parts is None else parts
    overrides = dict(overrides or {})
    key = (dyn.model.name, mode, safe, controller, tuple(sorted(overrides.items())))
    if key not in parts:
        s = load_settings(dyn.model.name, controller or {"pd_feedforward": "cf_rb_friction"}.get(mode, mode),
                          n_actuated=dyn.model.n_actuated, n_task=dyn.kin.task.dim)
        s = {**s, **overrides}
        model = None if mode in MODEL_FREE else FeedforwardModel(dyn, s["feedforward_model"])
        law = law_from_settings(s, model, dyn.kin)
        hold = SafeBehaviour("hold", FeedforwardModel(dyn, "rigid"), np.array(s["hold_kp"]), np.array(s["hold_kd"])) \
            if safe == "hold" else SafeBehaviour("zero")
        parts[key] = (law, ForceLimits.from_config(dyn.model), hold, ReferenceLimits.from_kinematics(dyn.kin))
    law, limits, hold, ref_limits = parts[key]
    law.reset()
    home = dyn.kin.home_pose()
    return Controller(law, limits, hold, StateEstimator(dyn.kin), home, state_timeout, ref_limits)


def make_force_controller(dyn, controller: str, safe: str = "hold", state_timeout: float = 0.02, overrides=None,
                          controller_config: str = ""):
    """The controller core running the force controller named ``controller`` (``force_settings`` with
    ``overrides`` of its keys) on ``dyn``: the model (feedforward_model of the settings), force limits from the
    config, the hold safe behaviour with the robot's pd gains, the WrenchWatch of wrench_timeout and
    contact_force_limit, the period of the robot's control_rate (controllers.yaml defaults)."""
    from .controller import Controller
    from .estimator import StateEstimator
    from .safety import ForceLimits, ReferenceLimits, SafeBehaviour
    s = {**force_settings(dyn.model.name, controller, controller_config), **dict(overrides or {})}
    pd = load_settings(dyn.model.name, "pd", controller_config, dyn.model.n_actuated)
    law = force_law(s, FeedforwardModel(dyn, s["feedforward_model"]), 1.0 / pd["control_rate"])
    hold = SafeBehaviour("hold", FeedforwardModel(dyn, "rigid"), np.array(pd["kp"]), np.array(pd["kd"])) \
        if safe == "hold" else SafeBehaviour("zero")
    watch = wrench_watch(s, law)
    home = dyn.kin.home_pose()
    return Controller(law, ForceLimits.from_config(dyn.model), hold, StateEstimator(dyn.kin), home, state_timeout,
                      ReferenceLimits.from_kinematics(dyn.kin), wrench_watch=watch)
