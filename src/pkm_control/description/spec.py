"""The robot spec: a robot's YAML (after the variant merge) parsed once into typed, read-only values.

Every layer reads a robot through ``ClosedLoopModel.spec`` (a ``RobotSpec``), never through the raw mapping:
the home pose, the limits, the friction, the force limits are converted and checked here, once.

Keys (docs/add-a-robot.md lists them with their units):

    kinematics       family: hexapod_ups | hexapod_pus | delta | planar_redundant | numeric (the default)
    task_space       spatial (x y z roll pitch yaw) | translation (x y z) | planar (x y alpha) | xy (x y)
    alpha_sign       +1 | -1: planar alpha counter-clockwise | clockwise
    platform_frame   the URDF frame of the platform (default ``platform``)
    gravity          [gx, gy, gz] in the base frame (default [0, 0, -9.81])
    actuated_joints, platform_joints, closures    the closed loop (description/loader.py)
    home, demo_poses, singular_pose               task coordinates (one number per task coordinate)
    workspace        {lower: [...], upper: [...]}, task coordinates
    limits           {name: [lower, upper] | number | {name: ...}}: read by the family and the xacro
    friction         {role: {coulomb: c, viscous: v}}: a number or one per joint of the role
    actuators        {force_limit: f, stiffness: k}: a number or one per actuated joint
    end_stops        {natural_frequency: omega, damping_ratio: zeta}
    assembly_guess   {joint: value}: the numeric family's start of the assembly at home

the family's own geometry blocks (``geometry``, ``bodies``, ``base``, ``platform``, ``legs``, ``struts``,
``counterweight``, ``visual``) stay open, read-only mappings in ``RobotSpec.blocks``; ``name``, ``sources``,
``variants``, ``default_variant`` are documentation and the variant machinery, ``gains`` the controller gains of
a robot of one's own (control/settings.py). The convention of pinocchio's
example parallel robots (``closed_loop``, ``type``, ``name_mot``) is read into closures and actuated joints.

A missing or wrong key raises one InvalidModelError line naming the file, the key and what was expected
(``config/foo.yaml: home: expected 6 numbers (task_space spatial), got 5``); an unknown top-level key (or an
unknown key inside a typed block) is a ``RobotSpecWarning`` naming it and the file. Numbers written like
``2.0e7`` are strings to YAML 1.1 (PyYAML): a string that reads as a number is taken as one.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np

from ..errors import InvalidModelError, excerpt

#: task space kind -> number of task coordinates (kinematics/task_space.TaskSpace.COORDS, checked by the tests)
TASK_SPACE_DIM = MappingProxyType({"spatial": 6, "translation": 3, "planar": 3, "xy": 2})
#: the task space of a family whose YAML does not name one
_FAMILY_TASK_SPACE = {"delta": "translation", "planar_redundant": "planar"}
#: the family's own blocks: typed by the family that reads them (RobotSpec.blocks)
BLOCK_KEYS = ("geometry", "bodies", "base", "platform", "legs", "struts", "counterweight", "visual")
#: keys with no meaning to the model: documentation, the variant machinery (robots.py) and the controller gains of
#: a robot of one's own (control/settings.own_robot_section checks them)
DOC_KEYS = ("name", "sources", "variants", "default_variant", "variant", "gains")
#: the convention of pinocchio's example parallel robots (description/loader.py)
CONVENTION_KEYS = ("closed_loop", "type", "name_mot")
TYPED_KEYS = ("kinematics", "task_space", "alpha_sign", "platform_frame", "gravity", "actuated_joints",
              "platform_joints", "closures", "home", "demo_poses", "singular_pose", "workspace", "limits", "friction",
              "actuators", "end_stops", "assembly_guess")
KNOWN_KEYS = frozenset(TYPED_KEYS + BLOCK_KEYS + DOC_KEYS + CONVENTION_KEYS)
_AXES = {"x": 0, "y": 1, "z": 2}
_CONVENTION_TYPES = {"3d": "point", "6d": "frame"}


class RobotSpecWarning(UserWarning):
    """A robot YAML holds keys the suite does not read (a typo, or a key of another tool)."""


@dataclass(frozen=True)
class ClosureSpec:
    """One cut joint as written (description/loader.py resolves the frame and joint names)."""

    name: str
    type: str                   # point | frame | coupling
    frames: tuple = ()          # (frame_a, frame_b), point and frame
    axes: tuple = (0, 1, 2)     # world components kept by a point closure
    joints: tuple = ()          # (dependent, reference), coupling
    ratio: float = 1.0
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class Workspace:
    """A box in task coordinates, lower <= upper."""

    lower: np.ndarray
    upper: np.ndarray


@dataclass(frozen=True, eq=False)
class Actuators:
    """Per actuated joint (a scalar in the YAML applies to each): N or Nm, N/m or Nm/rad; None when not given."""

    force_limit: np.ndarray | None = None
    stiffness: np.ndarray | None = None


@dataclass(frozen=True)
class EndStopGains:
    """The simulated machine's joint stops (dynamics/end_stops.py): omega in rad/s, zeta."""

    natural_frequency: float
    damping_ratio: float


@dataclass(frozen=True, eq=False)
class RobotSpec:
    """A robot's YAML, typed and checked (module docstring). Immutable: arrays are read-only, mappings are
    ``MappingProxyType``; ``raw`` is the YAML as read (variant merged), for the xacro side and documentation."""

    source: str                          # the file it was read from (or what built it)
    kinematics: str                      # the family (numeric when the YAML names none)
    task_space: str
    alpha_sign: float
    platform_frame: str
    gravity: np.ndarray                  # (3,)
    actuated_joints: tuple
    platform_joints: tuple
    closures: tuple                      # ClosureSpec
    home: np.ndarray | None              # (task_dim,)
    demo_poses: tuple                    # (task_dim,) arrays
    singular_pose: np.ndarray | None
    workspace: Workspace | None
    limits: Mapping                      # name -> (lower, upper) | float | mapping
    friction: Mapping                    # role -> {coulomb | viscous: float | tuple}
    actuators: Actuators
    end_stops: EndStopGains | None
    assembly_guess: Mapping              # joint -> float
    blocks: Mapping                      # the family's own blocks (BLOCK_KEYS), read-only
    raw: Mapping = field(repr=False)

    @property
    def task_dim(self) -> int:
        return TASK_SPACE_DIM[self.task_space]

    def require(self, key: str, why: str):
        """The value of an optional key (dotted for a block's: ``actuators.force_limit``) that ``why`` needs;
        InvalidModelError naming key and file without it."""
        value = self
        for part in key.split("."):
            value = getattr(value, part)
        if value is None:
            raise InvalidModelError(f"{self.source}: {key}: missing ({why} needs it)")
        return value

    def with_friction(self, friction) -> "RobotSpec":
        """The same spec with another ``friction`` block (checked as the YAML's is)."""
        raw = dict(self.raw)
        raw["friction"] = friction
        return dataclasses.replace(self, friction=_friction(self.source, friction), raw=_ro(raw))


# --------------------------------------------------------------------------- parsing


def _ro(obj):
    """Recursively read-only view of a YAML mapping (lists become tuples)."""
    if isinstance(obj, Mapping):
        return MappingProxyType({k: _ro(v) for k, v in obj.items()})
    if isinstance(obj, (list, tuple)):
        return tuple(_ro(v) for v in obj)
    return obj


def _fail(src, key, expected, value):
    raise InvalidModelError(f"{src}: {key}: expected {expected}, got {excerpt(value)}")


def _number(src, key, value, lo=-math.inf, positive=False) -> float:
    if isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            _fail(src, key, "a number", value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        _fail(src, key, "a number", value)
    value = float(value)
    if not math.isfinite(value) or value < lo or (positive and value <= 0):
        _fail(src, key, "a finite number" + (" > 0" if positive else f" >= {lo:g}" if lo > -math.inf else ""),
              value)
    return value


def _numbers(src, key, value, n=None, what="", lo=-math.inf, positive=False) -> np.ndarray:
    """A read-only float vector; ``n`` numbers when given (``what`` says why in the message)."""
    expected = f"{n} numbers{f' ({what})' if what else ''}" if n is not None else "a list of numbers"
    if not isinstance(value, (list, tuple)):
        _fail(src, key, expected, value)
    if n is not None and len(value) != n:
        raise InvalidModelError(f"{src}: {key}: expected {expected}, got {len(value)}")
    out = np.array([_number(src, f"{key}[{i}]", v, lo, positive) for i, v in enumerate(value)], float)
    out.setflags(write=False)
    return out


def _per_actuator(src, key, value, n, positive=True) -> np.ndarray:
    """A number for every actuated joint, or one each."""
    if isinstance(value, (list, tuple)):
        out = _numbers(src, key, value, n, "one per actuated joint", positive=positive)
    else:
        out = np.full(n, _number(src, key, value, positive=positive))
        out.setflags(write=False)
    return out


def _mapping(src, key, value, allowed=None):
    if not isinstance(value, Mapping):
        _fail(src, key, "a mapping", value)
    if allowed is not None:
        unknown = sorted(str(k) for k in value if k not in allowed)
        if unknown:
            warnings.warn(f"{src}: {key}: unknown keys {', '.join(unknown)} (ignored; known: {', '.join(allowed)})",
                          RobotSpecWarning, stacklevel=4)
    return value


def _name(src, key, value) -> str:
    if not isinstance(value, str) or not value:
        _fail(src, key, "a name (a non-empty string)", value)
    return value


def _names(src, key, value) -> tuple:
    if value is None:
        return ()
    if not isinstance(value, (list, tuple)):
        _fail(src, key, "a list of joint names", value)
    return tuple(_name(src, f"{key}[{i}]", v) for i, v in enumerate(value))


def _closure(src, i, c) -> ClosureSpec:
    key = f"closures[{i}]"
    _mapping(src, key, c, ("name", "type", "frames", "axes", "joints", "ratio", "offset"))
    name = _name(src, f"{key}.name", c.get("name", f"closure{i}"))
    ctype = c.get("type")
    if ctype in ("point", "frame"):
        frames = c.get("frames")
        if not isinstance(frames, (list, tuple)) or len(frames) != 2:
            _fail(src, f"{key}.frames", f"two frame names [a, b] (closure '{name}')", frames)
        axes = (0, 1, 2)
        if ctype == "point" and "axes" in c:
            ax = c["axes"]
            if isinstance(ax, str):
                ax = list(ax)
            if (not isinstance(ax, (list, tuple)) or not ax or any(a not in _AXES for a in ax)
                    or len(set(ax)) != len(ax)):
                _fail(src, f"{key}.axes", f"distinct axes of x, y, z (closure '{name}')", c["axes"])
            axes = tuple(_AXES[a] for a in ax)
        return ClosureSpec(name, ctype, frames=tuple(_name(src, f"{key}.frames", f) for f in frames), axes=axes)
    if ctype == "coupling":
        joints = c.get("joints")
        if not isinstance(joints, (list, tuple)) or len(joints) != 2:
            _fail(src, f"{key}.joints", f"two joint names [dependent, reference] (closure '{name}')", joints)
        return ClosureSpec(name, ctype, joints=tuple(_name(src, f"{key}.joints", j) for j in joints),
                           ratio=_number(src, f"{key}.ratio", c.get("ratio", 1.0)),
                           offset=_number(src, f"{key}.offset", c.get("offset", 0.0)))
    _fail(src, f"{key}.type", f"point, frame or coupling (closure '{name}')", ctype)


def _convention(src, cfg) -> dict:
    """``cfg`` with the example-parallel-robots keys (closed_loop, type, name_mot) read into closures and
    actuated_joints (description/loader.py); unchanged without them."""
    if "closed_loop" not in cfg:
        return cfg
    for ours in ("closures", "actuated_joints"):
        if ours in cfg:
            raise InvalidModelError(f"{src}: closed_loop: the file has both closed_loop (example-parallel-robots "
                                    f"convention) and {ours}: write one convention")
    pairs = cfg["closed_loop"] or ()
    if not isinstance(pairs, (list, tuple)):
        _fail(src, "closed_loop", "a list of frame pairs [a, b]", pairs)
    types = cfg.get("type")
    if not isinstance(types, (list, tuple)) or len(types) != len(pairs):
        raise InvalidModelError(f"{src}: type: expected {len(pairs)} of '3d' | '6d' (one per closed_loop pair), "
                                f"got {excerpt(types)}")
    closures = []
    for i, (pair, kind) in enumerate(zip(pairs, types)):
        if str(kind).lower() not in _CONVENTION_TYPES:
            _fail(src, f"type[{i}]", "'3d' or '6d'", kind)
        closures.append({"name": f"closure{i}", "type": _CONVENTION_TYPES[str(kind).lower()], "frames": pair})
    out = {k: v for k, v in cfg.items() if k not in CONVENTION_KEYS}
    return dict(out, closures=closures, actuated_joints=list(cfg.get("name_mot") or ()))


def _limits(src, key, value):
    """name -> (lower, upper) | number | nested mapping, every number finite, lower <= upper."""
    out = {}
    for name, v in _mapping(src, key, value).items():
        k = f"{key}.{name}"
        if isinstance(v, Mapping):
            out[name] = _limits(src, k, v)
        elif isinstance(v, (list, tuple)):
            lo, hi = _numbers(src, k, v, 2, "[lower, upper]")
            if lo > hi:
                _fail(src, k, "lower <= upper", list(v))
            out[name] = (float(lo), float(hi))
        else:
            out[name] = _number(src, k, v)
    return MappingProxyType(out)


def _friction(src, value):
    out = {}
    for role, entry in _mapping(src, "friction", value or {}).items():
        key = f"friction.{role}"
        entry = _mapping(src, key, entry or {}, ("coulomb", "viscous"))
        terms = {}
        for kind in ("coulomb", "viscous"):
            if kind in entry:
                v = entry[kind]
                terms[kind] = (tuple(_numbers(src, f"{key}.{kind}", v, lo=0.0).tolist())
                               if isinstance(v, (list, tuple)) else _number(src, f"{key}.{kind}", v, lo=0.0))
        out[role] = MappingProxyType(terms)
    return MappingProxyType(out)


def parse_spec(config: Mapping, source: str = "robot spec") -> RobotSpec:
    """The typed, checked spec of a robot's (variant-merged) YAML mapping; ``source`` names the file in the
    messages (module docstring)."""
    src = source
    if not isinstance(config, Mapping):
        raise InvalidModelError(f"{src}: expected a mapping of keys, got {type(config).__name__}")
    unknown = sorted(str(k) for k in config if k not in KNOWN_KEYS)
    if unknown:
        warnings.warn(f"{src}: unknown keys {', '.join(unknown)} (ignored; docs/add-a-robot.md lists the keys)",
                      RobotSpecWarning, stacklevel=3)
    cfg = _convention(src, dict(config))

    family = _name(src, "kinematics", cfg.get("kinematics", "numeric"))   # numeric: needs no code of the robot's
    task_space = cfg.get("task_space", _FAMILY_TASK_SPACE.get(family, "spatial"))
    if task_space not in TASK_SPACE_DIM:
        _fail(src, "task_space", " | ".join(TASK_SPACE_DIM), task_space)
    dim, what = TASK_SPACE_DIM[task_space], f"task_space {task_space}"
    alpha_sign = _number(src, "alpha_sign", cfg.get("alpha_sign", 1.0))
    if alpha_sign not in (1.0, -1.0):
        _fail(src, "alpha_sign", "1 or -1", cfg["alpha_sign"])

    actuated = _names(src, "actuated_joints", cfg.get("actuated_joints"))
    if not actuated:
        raise InvalidModelError(f"{src}: actuated_joints: missing (expected the list of actuated joints"
                                f"{', or name_mot' if 'closed_loop' in config else ''})")
    closures = cfg.get("closures") or ()
    if not isinstance(closures, (list, tuple)):
        _fail(src, "closures", "a list of closures", closures)

    def pose(key, value):
        return None if value is None else _numbers(src, key, value, dim, what)

    demo = cfg.get("demo_poses") or ()
    if not isinstance(demo, (list, tuple)):
        _fail(src, "demo_poses", f"a list of poses of {dim} numbers", demo)
    workspace = None
    if cfg.get("workspace") is not None:
        ws = _mapping(src, "workspace", cfg["workspace"], ("lower", "upper"))
        if "lower" not in ws or "upper" not in ws:
            _fail(src, "workspace", "lower and upper", ws)
        lo, hi = pose("workspace.lower", ws["lower"]), pose("workspace.upper", ws["upper"])
        if np.any(hi < lo):
            _fail(src, "workspace", "lower <= upper in every coordinate", ws)
        workspace = Workspace(lo, hi)
    act = _mapping(src, "actuators", cfg.get("actuators") or {}, ("force_limit", "stiffness"))
    actuators = Actuators(*(None if act.get(k) is None else _per_actuator(src, f"actuators.{k}", act[k], len(actuated))
                            for k in ("force_limit", "stiffness")))
    end_stops = None
    if cfg.get("end_stops") is not None:
        es = _mapping(src, "end_stops", cfg["end_stops"], ("natural_frequency", "damping_ratio"))
        for k in ("natural_frequency", "damping_ratio"):
            if k not in es:
                _fail(src, f"end_stops.{k}", "a number", None)
        end_stops = EndStopGains(_number(src, "end_stops.natural_frequency", es["natural_frequency"], positive=True),
                                 _number(src, "end_stops.damping_ratio", es["damping_ratio"], lo=0.0))
    guess = {_name(src, "assembly_guess", k): _number(src, f"assembly_guess.{k}", v)
             for k, v in _mapping(src, "assembly_guess", cfg.get("assembly_guess") or {}).items()}
    blocks = {}
    for k in BLOCK_KEYS:
        if k in cfg:
            if k == "struts":
                if not isinstance(cfg[k], (list, tuple)):
                    _fail(src, k, "a list", cfg[k])
            else:
                _mapping(src, k, cfg[k])
            blocks[k] = _ro(cfg[k])
    return RobotSpec(
        source=src, kinematics=family, task_space=task_space, alpha_sign=alpha_sign,
        platform_frame=_name(src, "platform_frame", cfg.get("platform_frame", "platform")),
        gravity=_numbers(src, "gravity", cfg.get("gravity", [0.0, 0.0, -9.81]), 3, "gx gy gz"),
        actuated_joints=actuated, platform_joints=_names(src, "platform_joints", cfg.get("platform_joints")),
        closures=tuple(_closure(src, i, c) for i, c in enumerate(closures)),
        home=pose("home", cfg.get("home")),
        demo_poses=tuple(pose(f"demo_poses[{i}]", x) for i, x in enumerate(demo)),
        singular_pose=pose("singular_pose", cfg.get("singular_pose")), workspace=workspace,
        limits=_limits(src, "limits", cfg.get("limits") or {}), friction=_friction(src, cfg.get("friction")),
        actuators=actuators, end_stops=end_stops, assembly_guess=MappingProxyType(guess),
        blocks=MappingProxyType(blocks), raw=_ro(cfg))
