"""Computed-force model: actuator forces of a platform motion, with a reloadable parameter set.

``FeedforwardModel(dyn, model, parameters)`` evaluates tau = f(pose, twist, accel) for

* ``none``: zero (the single-joint PD "SJ" of Abdellatif sec. V);
* ``rigid``: the rigid-body dynamics (Abdellatif eq. 14, "CF rb");
* ``rigid+friction``: rigid body plus friction of every joint (eq. 13, 32, "CF rb+frict").

It is evaluated on the desired trajectory for PD + feedforward and at the measured state for
computed torque (laws.py). The path is the fastest exact one available: a paper formulation
that exposes a compiled ``inverse_dynamics_fast`` (PaLiDA: Abdellatif's Jourdain kernel,
dynamics/jourdain.py, ~6 us) when it can represent the parameter set and agrees with the generic
engine on a few random states at construction, else the generic engine's virtual-power
projection (J^T tau = G^T (RNEA + tau_f), engine.py eq. 1) on a private copy of the pinocchio
model that carries the parameter set.

Parameter set YAML (``load_parameter_set``; all keys checked, unknown or missing ones and wrong
sizes raise InvalidInputError):

.. code-block:: yaml

    robot: palida          # required: the model the set belongs to (config ``name``)
    inertia_scale: 1.0     # required, > 0: factor on every body's mass, first moment and inertia
    friction:              # required: the config's ``friction`` schema, the same roles and kinds
      prismatic: {coulomb: [22, 25, 20, 24, 21, 23], viscous: [45, 50, 40, 48, 42, 46]}
      alpha: {coulomb: 0.3}   # a scalar is shared by the role's joints, a list is one per joint
      beta: {coulomb: 0.2}
    bodies:                # optional: inertial data replacing a body's (then scaled), the config's
      platform: {mass: 8.0, com: [0, 0, -0.02], inertia: [0.1256, 0.1256, 0.25, 0, 0, 0]}
      # <URDF link>: {mass: kg, com: [x, y, z] (link frame), inertia: [ixx, iyy, izz, ixy, ixz, iyz]
      # about the com}; links as ``ClosedLoopDynamics.body_names()``

``ParameterSet.nominal(dyn)`` is the config's own set (scale 1, the config's friction).

Base-parameter file (``kind: base_parameters``, written by ``pkm identify``, identification/estimation.py):
the forces are tau = Y_b(pose, twist, accel) p_b, the base regressor of ``dynamics.parameters.BaseModel``
with the file's ``structure``; J^T tau = Omega_b p_b with the minimum-norm distribution for redundant
actuation (Wu eq. 16, 39). PaLiDA's ``jourdain`` structure runs Abdellatif's compiled kernel with Table I's
values in their representative slots. ``names`` must be the model's base parameters of that structure (the
file is refused if the robot's description changed since). Required keys: kind, robot, structure, names,
values; the identification's report (variant, method, expressions, relative_std, condition_number, ...) may
stay in the file and is checked where it names the model (variant).

.. code-block:: yaml

    kind: base_parameters
    robot: palida
    structure: jourdain     # per-body | shared-legs | jourdain (BaseModel)
    names: [p_rb1, p_rb2, ..., r1_alpha, r1_beta]
    values: [0.061, ..., 0.31, 0.19]
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pinocchio as pin
from scipy.linalg.lapack import dgesv, dgetrf, dgetrs

from ..description.paths import read_user_yaml
from ..dynamics.engine import ClosedLoopDynamics
from ..dynamics.friction import FrictionModel
from ..errors import InvalidInputError, InvalidModelError, SingularConfigurationError, check_vector
from ..kinematics.task_space import Pose

MODELS = ("none", "rigid", "rigid+friction")
_TOP_KEYS = {"robot", "inertia_scale", "friction", "bodies"}
_REQUIRED = {"robot", "inertia_scale", "friction"}
_BODY_KEYS = {"mass", "com", "inertia"}
_BASE_REQUIRED = {"kind", "robot", "structure", "names", "values"}
_BASE_REPORT = {"variant", "method", "condition_number", "rows", "source", "sign_eps", "expressions", "relative_std",
                "residual_std", "rejected", "consistency"}


@dataclass(frozen=True)
class ParameterSet:
    """A validated model parameter set (see the module docstring for the YAML schema)."""

    robot: str
    inertia_scale: float
    friction: MappingProxyType                    # role -> {coulomb|viscous: float | tuple}
    bodies: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))
    source: str = ""                              # file it was read from ('' = built in code)

    @staticmethod
    def nominal(dyn: ClosedLoopDynamics) -> "ParameterSet":
        """The config's own parameters: scale 1, the config's friction, no body replaced."""
        return parameter_set_from_dict({"robot": dyn.model.name, "inertia_scale": 1.0,
                                        "friction": {r: dict(e) for r, e in dyn.model.spec.friction.items()}}, dyn)

    def is_nominal(self, dyn: ClosedLoopDynamics) -> bool:
        ref = ParameterSet.nominal(dyn)
        return (self.inertia_scale == 1.0 and not self.bodies
                and _friction_values(dyn, self) == _friction_values(dyn, ref))


@dataclass(frozen=True)
class BaseParameterSet:
    """Identified base parameters p_b of one robot (``kind: base_parameters``, module docstring) with the
    BaseModel whose regressor they multiply."""

    robot: str
    structure: str
    names: tuple
    values: tuple
    model: object = field(compare=False, repr=False)     # dynamics.parameters.BaseModel
    source: str = ""


def _check_keys_and_robot(where, data: dict, required: set, allowed: set, listed: str, dyn):
    """The mapping's keys (``listed``: which set the message lists) and robot checked; the model's ClosedLoopModel."""
    extra, missing = set(data) - allowed, required - set(data)
    if extra or missing:
        raise InvalidInputError(f"{where}: unknown keys {sorted(extra)}, missing keys {sorted(missing)} "
                                f"({listed}: {sorted(required if listed == 'required' else allowed)})")
    if data["robot"] != dyn.model.name:
        raise InvalidInputError(f"{where}: robot = {data['robot']!r}, but the model is {dyn.model.name!r}")
    return dyn.model


def base_parameter_set_from_dict(data: dict, dyn: ClosedLoopDynamics, source: str = "") -> BaseParameterSet:
    """Validate a ``kind: base_parameters`` mapping against a robot's model (InvalidInputError names the key)."""
    from ..dynamics.parameters import STRUCTURES, BaseModel

    where = source or "base-parameter set"
    clm = _check_keys_and_robot(where, data, _BASE_REQUIRED, _BASE_REQUIRED | _BASE_REPORT, "required", dyn)
    if data.get("variant") is not None and data["variant"] != clm.variant:
        raise InvalidInputError(f"{where}: variant = {data['variant']!r}, but the model is {clm.variant!r}")
    if data["structure"] not in STRUCTURES:
        raise InvalidInputError(f"{where}: structure = {data['structure']!r}, expected one of {STRUCTURES}")
    names, values = data["names"], data["values"]
    if not isinstance(names, list) or not isinstance(values, list) or len(names) != len(values):
        raise InvalidInputError(f"{where}: names and values must be lists of the same length, got "
                                f"{type(names).__name__} / {type(values).__name__}")
    values = tuple(_number(f"{where}: values[{i}] ({names[i]})", v) for i, v in enumerate(values))
    # the base columns as the identification chose them: with its Coulomb sign (pivoting may differ with it)
    eps = _number(f"{where}: sign_eps", data.get("sign_eps", 0.0), nonnegative=True)
    model = BaseModel(dyn, data["structure"], sign_eps=eps if data["structure"] != "jourdain" else None)
    if tuple(names) != model.names:
        diff = sorted(set(map(str, names)) ^ set(model.names))[:6]
        raise InvalidInputError(f"{where}: the names are not the {len(model)} base parameters of {clm.name} "
                                f"({data['structure']}; differing: {diff}): identified on another model?")
    return BaseParameterSet(clm.name, data["structure"], tuple(names), values, model, source)


def _friction_values(dyn, ps):
    return tuple(FrictionModel(_with_friction(dyn.model, ps.friction)).values.tolist())


def _with_friction(clm, friction):
    """The closed-loop model with another friction section (FrictionModel reads it from the spec)."""
    return dataclasses.replace(clm, spec=clm.spec.with_friction({r: dict(e) for r, e in friction.items()}))


def _number(where, value, positive=False, nonnegative=False):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
        raise InvalidInputError(f"{where} must be a finite number, got {value!r}")
    if positive and value <= 0:
        raise InvalidInputError(f"{where} = {value} must be > 0")
    if nonnegative and value < 0:
        raise InvalidInputError(f"{where} = {value} must be >= 0")
    return float(value)


def parameter_set_from_dict(data, dyn: ClosedLoopDynamics, source: str = "") -> ParameterSet | BaseParameterSet:
    """Validate a parameter-set mapping against a robot's model (InvalidInputError names the key); a mapping
    with ``kind: base_parameters`` is a BaseParameterSet."""
    where = source or "parameter set"
    if isinstance(data, dict) and "kind" in data:
        if data["kind"] != "base_parameters":
            raise InvalidInputError(f"{where}: kind = {data['kind']!r}; the only kind is 'base_parameters' "
                                    f"(a per-body set has no kind)")
        return base_parameter_set_from_dict(data, dyn, source)
    if not isinstance(data, dict):
        raise InvalidInputError(f"{where}: must be a mapping with keys {sorted(_TOP_KEYS)}, got {type(data).__name__}")
    clm = _check_keys_and_robot(where, data, _REQUIRED, _TOP_KEYS, "allowed", dyn)
    scale = _number(f"{where}: inertia_scale", data["inertia_scale"], positive=True)
    # friction: the config's roles and kinds exactly; values >= 0, a scalar or one per joint
    nominal = clm.spec.friction
    fr = data["friction"] if data["friction"] is not None else {}
    if not isinstance(fr, dict):
        raise InvalidInputError(f"{where}: friction must be a mapping role -> {{coulomb, viscous}}")
    want = {(r, k) for r, e in nominal.items() for k in (e or {})}
    have = set()
    for role, entry in fr.items():
        if not isinstance(entry, dict):
            raise InvalidInputError(f"{where}: friction.{role} must be a mapping {{coulomb, viscous}}")
        have |= {(role, k) for k in entry}
    if want != have:
        raise InvalidInputError(f"{where}: friction terms missing {sorted(want - have)}, unknown "
                                f"{sorted(have - want)} (the model's: {sorted(want)})")
    friction = {}
    for role, entry in fr.items():
        friction[role] = {}
        for kind, val in entry.items():
            name = f"{where}: friction.{role}.{kind}"
            if np.ndim(val) == 0:
                friction[role][kind] = _number(name, val, nonnegative=True)
            else:
                friction[role][kind] = tuple(_number(f"{name}[{i}]", v, nonnegative=True)
                                             for i, v in enumerate(val))
    try:
        FrictionModel(_with_friction(clm, friction))   # sizes of the per-joint lists
    except InvalidModelError as exc:
        raise InvalidInputError(f"{where}: {exc}") from exc
    # bodies
    bodies = data.get("bodies") or {}
    if not isinstance(bodies, dict):
        raise InvalidInputError(f"{where}: bodies must be a mapping link -> {{mass, com, inertia}}")
    known = dyn.body_names()
    checked = {}
    for link, spec in bodies.items():
        if link not in known:
            raise InvalidInputError(f"{where}: bodies.{link} is not a body of {clm.name} (bodies: {known})")
        if not isinstance(spec, dict) or set(spec) != _BODY_KEYS:
            got = sorted(spec) if isinstance(spec, dict) else spec
            raise InvalidInputError(f"{where}: bodies.{link} must have exactly the keys {sorted(_BODY_KEYS)}, "
                                    f"got {got}")
        mass = _number(f"{where}: bodies.{link}.mass", spec["mass"], positive=True)
        com = check_vector(f"{where}: bodies.{link}.com", spec["com"], 3)
        inertia = check_vector(f"{where}: bodies.{link}.inertia (ixx iyy izz ixy ixz iyz)", spec["inertia"], 6)
        I = _inertia_matrix(inertia)
        lam = np.linalg.eigvalsh(I)
        if lam[0] < -1e-12 * abs(lam).sum():      # a rod's zero moment turned by round-off into -1e-18 is one
            raise InvalidInputError(f"{where}: bodies.{link}.inertia {inertia.tolist()} is not positive semidefinite")
        checked[link] = MappingProxyType({"mass": mass, "com": tuple(com.tolist()), "inertia": tuple(inertia.tolist())})
    return ParameterSet(clm.name, scale, MappingProxyType({r: MappingProxyType(e) for r, e in friction.items()}),
                        MappingProxyType(checked), source)


def load_parameter_set(path, dyn: ClosedLoopDynamics) -> ParameterSet | BaseParameterSet:
    """Read and validate a parameter-set or base-parameter YAML file (module docstring) for ``dyn``'s robot."""
    path = os.fspath(path)
    return parameter_set_from_dict(read_user_yaml(path, "parameter set"), dyn, source=path)


def as_parameter_set(parameters, dyn: ClosedLoopDynamics) -> ParameterSet | BaseParameterSet:
    """A ParameterSet, a mapping (``parameter_set_from_dict``) or a YAML path (``load_parameter_set``) as a
    ParameterSet (a BaseParameterSet for ``kind: base_parameters``); anything else raises InvalidInputError."""
    if isinstance(parameters, (str, os.PathLike)):
        return load_parameter_set(parameters, dyn)
    if isinstance(parameters, dict):
        return parameter_set_from_dict(parameters, dyn)
    if not isinstance(parameters, (ParameterSet, BaseParameterSet)):
        raise InvalidInputError(f"parameters must be a ParameterSet, a mapping or a YAML path, got "
                                f"{type(parameters).__name__}")
    return parameters


def _inertia_matrix(i):
    ixx, iyy, izz, ixy, ixz, iyz = i
    return np.array([[ixx, ixy, ixz], [ixy, iyy, iyz], [ixz, iyz, izz]])


class FeedforwardModel:
    """Actuator forces tau(pose, twist, accel) of one model and parameter set (immutable).

    ``path`` says what evaluates it: ``'none'``, ``'generic'`` or a formulation's method name
    (``'jourdain'``). ``sign_eps`` > 0 replaces sign(qdot) of the Coulomb friction by
    tanh(qdot / eps) (the simulated plant's smooth sign; the formulations use the exact sign, so a
    nonzero eps selects the generic path for ``rigid+friction``). One instance per thread
    (pinocchio scratch data).
    """

    def __init__(self, dyn: ClosedLoopDynamics, model: str = "rigid+friction", parameters=None,
                 sign_eps: float | None = None, path: str = "auto"):
        if model not in MODELS:
            raise InvalidInputError(f"feedforward model must be one of {MODELS}, got {model!r}")
        if path not in ("auto", "generic"):
            raise InvalidInputError(f"path must be 'auto' or 'generic', got {path!r}")
        self.dyn = dyn
        self.kin = dyn.kin
        self.model = model
        self.friction = model == "rigid+friction"
        self.sign_eps = float(dyn.sign_eps if sign_eps is None else sign_eps)
        self.parameters = as_parameter_set(parameters, dyn) if parameters is not None else ParameterSet.nominal(dyn)
        if self.parameters.robot != dyn.model.name:
            raise InvalidInputError(f"parameter set is for {self.parameters.robot!r}, the model is {dyn.model.name!r}")
        self.n_actuated = dyn.model.n_actuated
        self._act = dyn.model.actuated_idx
        self._square = not dyn.redundant
        self._fast = None
        self._base = None
        if isinstance(self.parameters, BaseParameterSet):
            self._init_base(model, path)
            return
        # generic path: a private pinocchio model with the set's inertias, a FrictionModel with its friction
        pm = tree_with_parameters(dyn, self.parameters)
        self._pin_model = pm
        self._data = pm.createData()
        self._friction = FrictionModel(_with_friction(dyn.model, self.parameters.friction))
        self.path = "none" if model == "none" else "generic"
        if model != "none" and path == "auto":
            self._fast = self._fast_path()
            if self._fast is not None:
                self.path = self._fast[0]

    def _init_base(self, model, path):
        """Base parameters: tau = Y_b p_b (module docstring); Jourdain's kernel where the structure is Table I."""

        ps = self.parameters
        base = ps.model
        base = base.with_sign_eps(self.sign_eps)
        if ps.structure == "jourdain" and self.friction and self.sign_eps > 0:
            raise InvalidInputError("Table I base parameters (structure 'jourdain') use the paper's exact sign of "
                                    f"the friction, not tanh(qdot / {self.sign_eps:g}); identify with 'per-body'")
        self._base, self._p_base = base, np.array(ps.values)
        self._pin_model = self._data = self._friction = None
        self.path = "none" if model == "none" else "base-regressor"
        if model != "none" and path == "auto" and ps.structure == "jourdain":
            form = base.formulation_with(self._p_base)
            if self._agrees(form):
                self._fast, self.path = ("jourdain", form), "jourdain"

    # ------------------------------------------------------------------ paths
    def _fast_path(self):
        """(method, formulation) of a compiled paper formulation that reproduces this model, or None."""
        from ..dynamics.formulations import formulation, methods_for

        if self.friction and self.sign_eps > 0:
            return None
        for method in methods_for(self.dyn.model.name):
            try:
                form = formulation(method, self.dyn)
            except Exception:           # a formulation being built elsewhere must not break control
                continue
            if "inverse_dynamics_fast" not in form.provides or (self.friction and not form.models_friction):
                continue
            form = self._with_parameters(form)
            if form is not None and self._agrees(form):
                return method, form
        return None

    def _with_parameters(self, form):
        """The formulation carrying this parameter set, or None if it cannot represent it.

        A formulation's ``with_parameters`` takes the set's common inertia scale (the dynamics is
        linear in the inertial parameters) and its friction mapping, or refuses a friction outside
        the paper's model (InvalidModelError); per-body replacements break the papers'
        identical-leg assumptions and stay on the generic path. The result is checked against
        the generic engine (``_agrees``) before it is used.
        """
        ps = self.parameters
        if ps.is_nominal(self.dyn):
            return form
        if ps.bodies or "with_parameters" not in form.provides:
            return None
        try:
            return form.with_parameters(ps.inertia_scale, ps.friction)
        except InvalidModelError:
            return None

    def _agrees(self, form, n: int = 3, rtol: float = 1e-8) -> bool:
        """The formulation equals the generic path at n random workspace states."""
        from ..kinematics.workspace import random_poses

        rng = np.random.default_rng(12345)
        try:
            for pose in random_poses(self.kin, n, rng):
                tw, ac = rng.standard_normal(self.dyn.n), 5 * rng.standard_normal(self.dyn.n)
                a = form.inverse_dynamics_fast(pose, tw, ac, friction=self.friction, check_limits=False)
                b = self._generic(pose, tw, ac, self.friction)
                if not np.allclose(a, b, rtol=rtol, atol=rtol * max(1.0, np.abs(b).max())):
                    return False
        except Exception:
            return False
        return True

    def _generic(self, pose, twist, accel, friction):
        """Engine eq. (1) with this set: J^T tau = G^T (RNEA(q, v, a) + tau_f); base parameters:
        J^T tau = Omega_b p_b (Wu eq. 16)."""
        if self._base is not None:
            f = self._base.generalized_regressor(pose, twist, accel, friction) @ self._p_base
            return self._solve(self.kin.jacobian(pose), f)
        m, G = self.kin.motion_and_joint_jacobian(pose, twist, accel)
        tau_tree = pin.rnea(self._pin_model, self._data, m.q, m.v, m.a)
        if friction and len(self._friction):
            tau_tree = tau_tree + self._friction.torque(self._data, m.q, m.v, self.sign_eps)
        return self._solve(G[self._act], G.T @ tau_tree)

    def _solve(self, J, f):
        return force_distribution(J, f, self._square)

    # ------------------------------------------------------------------ API
    @property
    def formulation(self):
        """The compiled paper formulation that evaluates this model (``path``: its method name), or None (the generic
        engine, or no model)."""
        return None if self._fast is None else self._fast[1]

    def tau(self, pose: Pose, twist, accel) -> np.ndarray:
        """Actuator forces (actuated-joint order) for the platform motion (pose, twist, accel)."""
        if self.model == "none":
            return np.zeros(self.n_actuated)
        if twist is None or accel is None:
            raise InvalidInputError("the feedforward needs a twist and an acceleration")
        if self._fast is not None:      # the formulation checks pose, twist and accel (kin.validate) itself
            return self._fast[1].inverse_dynamics_fast(pose, twist, accel, friction=self.friction, check_limits=False)
        pose, twist, accel = self.kin.validate(pose, twist, accel)
        return self._generic(pose, twist, accel, self.friction)

    __call__ = tau

    def gravity(self, pose: Pose, validated: bool = False) -> np.ndarray:
        """Actuator forces that hold the platform at rest at ``pose`` (rigid-body model of this set,
        whatever ``model`` is: the safe behaviour 'hold' needs it even when the feedforward is 'none').
        ``validated``: ``pose`` passed kin.validate already (the state estimator's): the compiled formulation does not
        check it again."""
        z = _ZEROS if self.dyn.n == 6 else np.zeros(self.dyn.n)
        if self._fast is not None:      # the formulation checks the pose (kin.validate) itself
            return self._fast[1].inverse_dynamics_fast(pose, z, z, friction=False, check_limits=False,
                                                       validated=validated)
        return self._generic(self.kin.validate(pose)[0], z, z, False)

    def joint_mass_matrix(self, pose: Pose) -> np.ndarray:
        """M_q = J^-T M J^-1 (n_actuated x n_actuated) at ``pose`` with this parameter set (Taghirad, Motion Control in
        Joint Space, eq:dynamics_joint_space; M = G^T M_tree G, engine.py); J^+ for redundant actuation (rank n)."""
        pose = self.kin.validate(pose)[0]
        G = self.kin.joint_jacobian(pose)
        J = G[self._act]
        if self._base is not None:
            # M e_k = Omega_b(pose, 0, e_k) p_b - Omega_b(pose, 0, 0) p_b: the generalized force is affine in xddot
            z = np.zeros(self.dyn.n)
            g = self._base.generalized_regressor(pose, z, z, False) @ self._p_base
            M = np.column_stack([self._base.generalized_regressor(pose, z, e, False) @ self._p_base - g
                                 for e in np.eye(self.dyn.n)])
        else:
            q = self.kin.inverse(pose, check_limits=False).q
            Mt = pin.crba(self._pin_model, self._data, q)
            Mt = np.triu(Mt) + np.triu(Mt, 1).T
            M = G.T @ Mt @ G
        if self._square:
            X = np.linalg.solve(J.T, M)                     # J^-T M
            return np.linalg.solve(J.T, X.T).T               # (J^-T (J^-T M)^T)^T = J^-T M J^-1
        Ji = np.linalg.pinv(J)
        return Ji.T @ M @ Ji

    def from_joints(self, q_actuated, qd_actuated, qdd_actuated, guess: Pose):
        """(tau, pose, twist, accel) from an actuated-joint motion: FK (warm-started at ``guess``) for the
        pose, then xdot = J^-1 qdot_a, xddot = J^-1 (qddot_a - Jdot xdot) (least squares if redundant)."""
        from ..kinematics.forward import forward_kinematics

        n = self.n_actuated
        qd = check_vector("actuated joint velocities", qd_actuated, n)
        qdd = check_vector("actuated joint accelerations", qdd_actuated, n)
        pose = forward_kinematics(self.kin, q_actuated, guess, check_limits=False).pose
        twist, accel = task_rates(self.kin, pose, qd, qdd, self._square)
        return self.tau(pose, twist, accel), pose, twist, accel

    def with_parameters(self, parameters) -> "FeedforwardModel":
        """The same model with another parameter set (ParameterSet, mapping or YAML path): the reload.
        Invalid sets raise InvalidInputError and leave this model as it is (it is immutable)."""
        return FeedforwardModel(self.dyn, self.model, parameters, self.sign_eps)

    def with_model(self, model: str) -> "FeedforwardModel":
        return FeedforwardModel(self.dyn, model, self.parameters, self.sign_eps)


def tree_with_parameters(dyn: ClosedLoopDynamics, parameters: ParameterSet) -> pin.Model:
    """A copy of the robot's pinocchio tree carrying a parameter set's inertias (bodies replaced, then scaled)."""
    pm = pin.Model(dyn.pin_model)
    s = parameters.inertia_scale
    for j, link in zip(dyn._bodies, dyn.body_names()):
        if link in parameters.bodies:
            b = parameters.bodies[link]
            inert = pin.Inertia(b["mass"], np.array(b["com"]), _inertia_matrix(b["inertia"]))
        elif s == 1.0:
            continue
        else:
            inert = pm.inertias[j]
        # m, c, I_c -> s m, c, s I_c scales every standard parameter (m, m c, I_origin) by s;
        # written this way because the dynamic-parameter form divides by m (massless links)
        pm.inertias[j] = pin.Inertia(s * inert.mass, np.array(inert.lever), s * np.array(inert.inertia))
    return pm


def dynamics_with_parameters(dyn: ClosedLoopDynamics, parameters) -> ClosedLoopDynamics:
    """The closed-loop dynamics of the same mechanism with a parameter set's inertias and friction (ParameterSet,
    mapping or YAML path): a plant that differs from the model the controller keeps (SimulatedRobot of the result;
    the simulated robot's ``true_parameters_file``)."""
    from ..kinematics import make_kinematics

    parameters = as_parameter_set(parameters, dyn)
    if isinstance(parameters, BaseParameterSet):
        raise InvalidInputError(f"{parameters.source or 'parameters'}: a plant needs every body's parameters; base "
                                "parameters (kind: base_parameters) only give the forces of a model")
    clm = dataclasses.replace(_with_friction(dyn.model, parameters.friction),
                              model=tree_with_parameters(dyn, parameters))
    return ClosedLoopDynamics(make_kinematics(clm), gravity=dyn.gravity, sign_eps=dyn.sign_eps)


#: the twist and acceleration of a spatial platform at rest (gravity); read-only
_ZEROS = np.zeros(6)
_ZEROS.setflags(write=False)

def force_distribution(J, f, square: bool = True) -> np.ndarray:
    """tau with J^T tau = f (Taghirad, Controller Topology: tau = J^-T F): exact, or the minimum norm
    tau = J (J^T J)^-1 f (Wu eq. 39) for redundant actuation."""
    if square:      # LAPACK gesv directly (np.linalg.solve's LU, without its ~4x call overhead on a 6 x 6)
        tau, info = dgesv(J.T, f)[2:]
    else:
        x, info = dgesv(J.T @ J, f)[2:]
        tau = J @ x
    if info != 0:
        raise SingularConfigurationError("J^T J is singular: the actuators cannot balance the platform "
                                         "(forward singularity)")
    return tau


def task_rates(kin, pose: Pose, qd_a, qdd_a, square: bool = True, twist=None, J=None):
    """(xdot, xddot) from actuated-joint rates: qdot_a = J xdot, qddot_a = J xddot + Jdot xdot
    (least squares for redundant actuation); a known ``twist`` replaces J^-1 qdot_a, a known J (at ``pose``) the
    kinematics' (kin.jacobian_dot_twist: Jdot xdot)."""
    J = kin.jacobian(pose) if J is None else J
    if square:
        # LAPACK gesv directly: np.linalg.solve costs ~4x more on a 6 x 6 (call overhead)
        lu, piv, info = dgetrf(J)
        if info == 0:
            xd = dgetrs(lu, piv, qd_a)[0] if twist is None else twist
            return xd, dgetrs(lu, piv, qdd_a - kin.jacobian_dot_twist(pose, xd))[0]
        raise SingularConfigurationError("J is singular: the platform rates do not follow from the "
                                         "actuated-joint rates (forward singularity)")
    xd = np.linalg.lstsq(J, qd_a, rcond=None)[0] if twist is None else twist
    xdd = np.linalg.lstsq(J, qdd_a - kin.jacobian_dot_twist(pose, xd), rcond=None)[0]
    return xd, xdd
