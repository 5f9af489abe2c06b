"""Extended-URDF loader: spanning-tree URDF + closures YAML -> closed-loop model.

Convention (docs/architecture.md): the URDF is the spanning tree of the
mechanism with a frame on each side of every cut joint; a sidecar mapping lists

    closures:          # one entry per cut joint
      - {name: leg1, type: point, frames: [leg1_tip, platform_b1], axes: [x, y, z]}
      - {name: leg1f, type: frame, frames: [a_frame, b_frame]}
      - {name: cw1, type: coupling, joints: [cw1_joint, slider1], ratio: -1.0, offset: 0.0}
    actuated_joints: [...]
    platform_joints: [...]   # optional: tree joints that parametrize the platform

The mapping is parsed and checked once into a ``RobotSpec`` (description/spec.py), which the model carries as
``ClosedLoopModel.spec``.

``point`` keeps the (selected world components of the) position of both frame
origins equal (a spherical cut joint is a 3D point closure), ``frame`` keeps the
two frames equal (6 rows), ``coupling`` is a linear joint relation
q[joints[0]] = ratio * q[joints[1]] + offset (belts, pulleys, counterweights).

pinocchio holds two of these types itself (``constraint_models``): a ``point`` closure on all three
axes is a ``RigidConstraintModel`` of type ``CONTACT_3D``, a ``frame`` closure one of type
``CONTACT_6D``, both between the closure's two frames, rows in the LOCAL frame of the first one
(the same constraint as this module's rows, turned into that frame), so ``pinocchio.constraintDynamics``
runs on them. A ``point`` closure on two axes (a planar cut joint: pinocchio has no 2-D contact) and a
``coupling`` (a joint relation, no frames at all) have no pinocchio counterpart and stay this module's
own: ``closure_residual``, ``closure_jacobian`` and ``closure_bias`` cover every type.

The same mapping may instead be written in the convention of pinocchio's example parallel robots
(a ``robot.yaml`` beside the URDF), read as it is:

    closed_loop: [[frame_a, frame_b], ...]   # the cut joints' frame pairs
    type: ['3d', '6d', ...]                   # 3d: a point closure (all axes), 6d: a frame closure
    name_mot: [...]                           # the actuated joints

(closures named ``closure<i>``). Their revolute joints often carry a ``<limit>`` with effort and velocity
only; URDF parsers then read the range as [0, 0]: a revolute joint whose limit gives neither ``lower`` nor
``upper`` is unlimited here.
"""

from __future__ import annotations

import functools
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

import numpy as np
import pinocchio as pin

from ..errors import InvalidModelError
from .kernels import (PRISMATIC, REVOLUTE, closure_rows, closure_rows_bias, closure_rows_dot, tree_closure_bias,
                      tree_closure_rows)
from .spec import RobotSpec, parse_spec

_LWA = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
#: closure_rows' input without K
_NO_JACOBIAN = np.zeros((0, 0))
_ONE_DOF_JOINTS = ("JointModelRX", "JointModelRY", "JointModelRZ", "JointModelRevoluteUnaligned",
                   "JointModelPX", "JointModelPY", "JointModelPZ", "JointModelPrismaticUnaligned")
#: the unit axes of the aligned ones (the unaligned ones carry theirs)
_ALIGNED_AXES = {"X": (1.0, 0.0, 0.0), "Y": (0.0, 1.0, 0.0), "Z": (0.0, 0.0, 1.0)}


@dataclass(frozen=True)
class Closure:
    """One cut joint. See the module docstring for the types."""

    name: str
    type: str
    frames: tuple = ()          # (frame_a, frame_b) names, for point/frame
    frame_ids: tuple = ()       # pinocchio frame indices of ``frames``
    axes: tuple = (0, 1, 2)     # world components kept by a point closure
    joints: tuple = ()          # (dependent, reference) names, for coupling
    joint_idx: tuple = ()       # their velocity indices
    ratio: float = 1.0
    offset: float = 0.0

    @property
    def dim(self) -> int:
        return {"point": len(self.axes), "frame": 6, "coupling": 1}[self.type]

    @property
    def contact_type(self):
        """pinocchio's ContactType of this closure (module docstring), None where pinocchio has none."""
        if self.type == "frame":
            return pin.ContactType.CONTACT_6D
        if self.type == "point" and self.axes == (0, 1, 2):
            return pin.ContactType.CONTACT_3D
        return None


@dataclass(frozen=True, eq=False)
class ClosedLoopModel:
    """Immutable closed-loop mechanism: pinocchio tree + closures + actuation.

    All tree joints are 1-DoF (revolute or prismatic), so q and v share indices:
    ``joint_index[name]`` is the index of that joint in q, v and a.
    """

    name: str
    variant: str
    model: pin.Model
    closures: tuple
    actuated_joints: tuple
    platform_joints: tuple
    joint_names: tuple          # tree joints in q order
    joint_index: MappingProxyType
    actuated_idx: np.ndarray    # indices of actuated joints in q
    platform_idx: np.ndarray    # indices of platform joints in q
    passive_idx: np.ndarray     # every other joint
    spec: RobotSpec = field(repr=False)
    urdf: str = field(repr=False, default="")

    @property
    def config(self) -> MappingProxyType:
        """The YAML as read (variant merged, read-only): for documentation and tests; layers read ``spec``."""
        return self.spec.raw

    @property
    def nq(self) -> int:
        return self.model.nq

    @property
    def n_actuated(self) -> int:
        return len(self.actuated_joints)

    @property
    def n_constraints(self) -> int:
        return sum(c.dim for c in self.closures)

    @property
    def dof(self) -> int:
        """Gruebler's count nv - rows: the mobility only when the closure Jacobian has full row rank (planar loops
        written with 3-D points have dependent rows); the numeric kinematics' ``mobility`` counts at an assembly."""
        return self.model.nv - self.n_constraints

    def create_data(self) -> pin.Data:
        return self.model.createData()

    def neutral(self) -> np.ndarray:
        return pin.neutral(self.model)

    @functools.cached_property
    def closure_rows(self) -> "ClosureRows":
        """The closures' residual and K rows, vectorized over the frames (built once per model)."""
        return ClosureRows(self)

    def is_revolute(self, joint: str) -> bool:
        """True for a revolute tree joint, False for a prismatic one."""
        return self.model.joints[self.model.getJointId(joint)].shortname().startswith("JointModelR")


def _unlimit_revolutes(model: pin.Model, urdf_xml: str) -> None:
    """A revolute joint whose URDF limit gives neither lower nor upper is unlimited (module docstring)."""
    lower, upper = model.lowerPositionLimit.copy(), model.upperPositionLimit.copy()
    for joint in ET.fromstring(urdf_xml).iter("joint"):
        limit = joint.find("limit")
        if (joint.get("type") == "revolute" and model.existJointName(joint.get("name", ""))
                and (limit is None or (limit.get("lower") is None and limit.get("upper") is None))):
            i = model.joints[model.getJointId(joint.get("name"))].idx_q
            lower[i], upper[i] = -np.inf, np.inf
    model.lowerPositionLimit, model.upperPositionLimit = lower, upper


def load_model(urdf_xml: str, spec: Mapping | RobotSpec, name: str | None = None, variant: str = "",
               source: str = "closures mapping") -> ClosedLoopModel:
    """Build a ClosedLoopModel from URDF text and a robot spec (or the mapping it is parsed from, ``source``
    naming it in the messages; module docstring)."""
    if not isinstance(spec, RobotSpec):
        spec = parse_spec(spec, source)
    try:
        model = pin.buildModelFromXML(urdf_xml)
    except Exception as exc:  # pinocchio raises plain RuntimeError/ValueError
        raise InvalidModelError(f"URDF could not be parsed by pinocchio: {exc}") from exc
    name = name or model.name
    model.name = name
    _unlimit_revolutes(model, urdf_xml)
    model.gravity.linear = spec.gravity

    joint_names = []
    for jid in range(1, model.njoints):
        jm = model.joints[jid]
        if jm.shortname() not in _ONE_DOF_JOINTS:
            raise InvalidModelError(
                f"joint '{model.names[jid]}' is {jm.shortname()}; the convention allows only 1-DoF "
                "revolute/prismatic tree joints (write a spherical joint as three revolutes, "
                "use 'revolute' with limits instead of 'continuous')")
        joint_names.append(model.names[jid])
    joint_index = {n: model.joints[model.getJointId(n)].idx_q for n in joint_names}

    def joint_id(n, what):
        if n not in joint_index:
            raise InvalidModelError(f"{spec.source}: {what} '{n}' is not a joint of the URDF (joints: {joint_names})")
        return joint_index[n]

    def frame_id(n, what):
        if not model.existFrame(n):
            raise InvalidModelError(f"{spec.source}: {what} frame '{n}' is not in the URDF")
        return model.getFrameId(n)

    closures = []
    for c in spec.closures:
        if c.type in ("point", "frame"):
            closures.append(Closure(c.name, c.type, frames=c.frames,
                                    frame_ids=tuple(frame_id(f, f"closure '{c.name}'") for f in c.frames),
                                    axes=c.axes))
        else:
            closures.append(Closure(c.name, c.type, joints=c.joints,
                                    joint_idx=tuple(joint_id(j, f"closure '{c.name}'") for j in c.joints),
                                    ratio=c.ratio, offset=c.offset))

    actuated, platform = spec.actuated_joints, spec.platform_joints
    act_idx = np.array([joint_id(n, "actuated joint") for n in actuated], dtype=int)
    plat_idx = np.array([joint_id(n, "platform joint") for n in platform], dtype=int)
    if set(actuated) & set(platform):
        raise InvalidModelError(f"{spec.source}: joints {sorted(set(actuated) & set(platform))} are both actuated "
                                "and platform joints")
    taken = set(act_idx) | set(plat_idx)
    passive_idx = np.array([i for i in range(model.nv) if i not in taken], dtype=int)

    return ClosedLoopModel(
        name=name, variant=variant, model=model, closures=tuple(closures),
        actuated_joints=actuated, platform_joints=platform, joint_names=tuple(joint_names),
        joint_index=MappingProxyType(joint_index), actuated_idx=act_idx, platform_idx=plat_idx,
        passive_idx=passive_idx, spec=spec, urdf=urdf_xml)


# --------------------------------------------------------------------------- closures


def constraint_models(clm: ClosedLoopModel) -> pin.StdVec_RigidConstraintModel:
    """The closures as pinocchio ``RigidConstraintModel``s, in closure order (module docstring).

    Each joins the parent joints of the closure's two frames at the frames' placements, LOCAL
    reference frame, named after the closure. InvalidModelError names the closures pinocchio cannot
    hold (planar points, couplings): a model with any of them has no pinocchio constraint set.
    A fresh vector each call (pinocchio's models are mutable); pass it and
    ``[m.createData() for m in models]`` (as a ``StdVec_RigidConstraintData``) to
    ``pinocchio.initConstraintDynamics`` and ``constraintDynamics``.
    """
    left = [f"{c.name} ({c.type}, {len(c.axes) if c.type == 'point' else c.dim} rows)"
            for c in clm.closures if c.contact_type is None]
    if left:
        raise InvalidModelError(f"robot '{clm.name}': closures {', '.join(left)} have no pinocchio constraint "
                                "model (only 3-axis point and frame closures do)")
    model = clm.model
    out = pin.StdVec_RigidConstraintModel()
    for c in clm.closures:
        fa, fb = (model.frames[f] for f in c.frame_ids)
        cm = pin.RigidConstraintModel(c.contact_type, model, fa.parentJoint, fa.placement, fb.parentJoint,
                                      fb.placement, pin.ReferenceFrame.LOCAL)
        cm.name = c.name
        out.append(cm)
    return out


def closure_residual(clm: ClosedLoopModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Stacked residuals of all closures at q (metres, radians)."""
    pin.forwardKinematics(clm.model, data, q)
    return clm.closure_rows.evaluate(data, q, jacobian=False)[0]


def closure_jacobian(clm: ClosedLoopModel, data: pin.Data, q: np.ndarray) -> np.ndarray:
    """Velocity-level closure Jacobian K (rows as in closure_residual): K v = 0.

    Point rows are the world-frame velocity difference of the two frame origins,
    frame rows add the angular velocity difference; both are the exact time
    derivative of closure_residual where the closure holds.
    """
    pin.computeJointJacobians(clm.model, data, q)
    return clm.closure_rows.evaluate(data, q)[1]


def closure_residual_and_jacobian(clm: ClosedLoopModel, data: pin.Data, q: np.ndarray):
    """(closure_residual, closure_jacobian) at q from one pass of the tree kinematics (a Newton step needs both)."""
    pin.computeJointJacobians(clm.model, data, q)      # includes the forward kinematics
    return clm.closure_rows.evaluate(data, q)


def closure_jacobian_dot(clm: ClosedLoopModel, data: pin.Data, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Kdot = dK/dt along v (rows as in closure_jacobian; coupling rows are constant): Kdot v = closure_bias."""
    pin.computeJointJacobiansTimeVariation(clm.model, data, q, v)
    return clm.closure_rows.jacobian_dot(data, q, v)


def tree_arrays(model: pin.Model):
    """(parent, kind, frame): the spanning tree as kernels.tree_kinematics reads it, from pinocchio's model (joint
    j + 1 is the kernel's joint j: parents, REVOLUTE / PRISMATIC, placement in the parent and unit axis).
    InvalidModelError for a joint that is not one of the 1-DoF types load_model admits or whose q and v index is not
    its place in the tree."""
    n = model.njoints - 1
    parent, kind, frame = np.empty(n, dtype=np.int64), np.empty(n, dtype=np.int64), np.empty((n, 15))
    for j in range(1, model.njoints):
        jm, name = model.joints[j], model.joints[j].shortname()
        if name not in _ONE_DOF_JOINTS or jm.idx_q != j - 1 or jm.idx_v != j - 1:
            raise InvalidModelError(f"joint '{model.names[j]}' ({name}, q index {jm.idx_q}) is not a 1-DoF "
                                    "revolute or prismatic joint at its place in the tree")
        kind[j - 1] = REVOLUTE if name.startswith("JointModelR") else PRISMATIC
        axis = jm.extract().axis if name.endswith("Unaligned") else _ALIGNED_AXES[name[-1]]
        M = model.jointPlacements[j]
        parent[j - 1] = model.parents[j] - 1
        frame[j - 1] = np.concatenate([M.rotation.ravel(), M.translation, np.asarray(axis, float)])
    return parent, kind, frame


def tree_inertias(model: pin.Model) -> np.ndarray:
    """(n, 13): each joint's body inertia as kernels.tree_mass_matrix and tree_inverse_dynamics read it (joint j + 1
    of pinocchio's model is the kernels' joint j): mass, lever (the centre of mass in the joint frame), the inertia
    about the centre of mass in the joint frame (row-major 3 x 3)."""
    out = np.array([[I.mass, *I.lever, *np.asarray(I.inertia).ravel()] for I in model.inertias[1:]]).reshape(-1, 13)
    out.setflags(write=False)
    return out


class ClosureRows:
    """Residual and K of a model's closures from one tree pass, vectorized over the closure frames.

    A pinocchio call per frame costs more than the arithmetic (twelve frames for a hexapod): the frame
    positions come from the placements of their (distinct) parent joints, p_f = p_j + R_j t_f, and the
    velocity of a frame origin from the world joint Jacobian data.J (columns: spatial velocity at the
    world origin, masked to the joints supporting the frame), v_f = v_O + omega x p_f, all in one compiled
    call (kernels.closure_rows). Only a frame closure's rotation residual (a log3 per closure) is computed
    closure by closure.

    Without frame closures (``compiled``) the tree's placements and J come from the compiled tree as well
    (kernels.tree_kinematics, the arrays of ``tree_arrays``): ``tree_rows`` and ``tree_bias`` are then one compiled
    call each, no pinocchio Data; the numeric kinematics solves on them (kinematics/numeric_kernels.py).
    """

    def __init__(self, clm: ClosedLoopModel):
        model = clm.model
        nv = model.nv
        frames = [f for c in clm.closures if c.type in ("point", "frame") for f in c.frame_ids]
        parents = [model.frames[f].parentJoint for f in frames]
        # the columns of each frame's parent joint in ``placements``
        self.col = np.array([4 * (j - 1) for j in parents], dtype=int)
        self._model = model
        self._mass = float(sum(inertia.mass for inertia in model.inertias[1:]))
        # frame origins in homogeneous coordinates of their parent joints
        self.offset = np.array([[*model.frames[f].placement.translation, 1.0] for f in frames]).reshape(-1, 4)
        self.mask = np.zeros((len(frames), nv))
        for i, j in enumerate(parents):
            for k in model.supports[j]:
                if k > 0:
                    self.mask[i, model.joints[k].idx_v] = 1.0
        lin_rows, lin_sel, ang_rows, ang_sel, self.frame_closures = [], [], [], [], []
        cpl_rows, cpl_dep, cpl_ref, cpl_ratio, cpl_offset = [], [], [], [], []
        row = pair = 0
        for c in clm.closures:
            if c.type == "coupling":
                cpl_rows.append(row)
                cpl_dep.append(c.joint_idx[0])
                cpl_ref.append(c.joint_idx[1])
                cpl_ratio.append(c.ratio)
                cpl_offset.append(c.offset)
            else:
                axes = c.axes if c.type == "point" else (0, 1, 2)
                lin_rows += range(row, row + len(axes))
                lin_sel += [3 * pair + a for a in axes]
                if c.type == "frame":
                    ang_rows += range(row + 3, row + 6)
                    ang_sel += [3 * pair + a for a in range(3)]
                    fa, fb = (model.frames[f] for f in c.frame_ids)
                    self.frame_closures.append((row + 3, fa.parentJoint, fa.placement, fb.parentJoint, fb.placement))
                pair += 1
            row += c.dim
        self.n_rows, self.nv = row, nv
        self.lin_rows, self.lin_sel = np.array(lin_rows, int), np.array(lin_sel, int)
        self.ang_rows, self.ang_sel = np.array(ang_rows, int), np.array(ang_sel, int)
        self.cpl_rows = np.array(cpl_rows, int)
        self.cpl_dep, self.cpl_ref = np.array(cpl_dep, int), np.array(cpl_ref, int)
        self.cpl_ratio, self.cpl_offset = np.array(cpl_ratio, float), np.array(cpl_offset, float)
        self.cpl_K = np.zeros((len(cpl_rows), nv))
        self.cpl_K[np.arange(len(cpl_rows)), self.cpl_dep] += 1.0
        self.cpl_K[np.arange(len(cpl_rows)), self.cpl_ref] -= self.cpl_ratio
        self.parent, self.kind, self.frame = tree_arrays(model)
        self.cpl = np.column_stack([self.cpl_rows, self.cpl_dep, self.cpl_ref]).astype(np.int64).reshape(-1, 3)
        self.cpl_f = np.column_stack([self.cpl_ratio, self.cpl_offset]).reshape(-1, 2)
        self.compiled = not self.frame_closures
        for arr in (self.col, self.offset, self.mask, self.lin_rows, self.lin_sel, self.ang_rows, self.ang_sel,
                    self.cpl_rows, self.cpl_dep, self.cpl_ref, self.cpl_ratio, self.cpl_offset, self.cpl_K,
                    self.parent, self.kind, self.frame, self.cpl, self.cpl_f):
            arr.setflags(write=False)

    def structure(self) -> np.ndarray:
        """(n_rows, nv) bool: the entries of K not zero by structure, a frame pair's rows on the joints supporting
        either frame, a coupling row on its two joints."""
        S = np.zeros((self.n_rows, self.nv), dtype=bool)
        for rows, sel in ((self.lin_rows, self.lin_sel), (self.ang_rows, self.ang_sel)):
            for row, pair in zip(rows, sel // 3):
                S[row] = (self.mask[2 * pair] != 0) | (self.mask[2 * pair + 1] != 0)
        S[self.cpl_rows, self.cpl_dep] = S[self.cpl_rows, self.cpl_ref] = True
        return S

    @property
    def tree(self) -> tuple:
        """The compiled tree and its closures, the leading arguments of kernels.tree_closure_rows."""
        return (self.parent, self.kind, self.frame, self.col, self.offset, self.mask, self.lin_rows, self.lin_sel,
                self.cpl, self.cpl_f)

    def tree_rows(self, q: np.ndarray, jacobian: bool = True):
        """(residual, K or None) at q from the compiled tree (``compiled`` models; kernels.tree_closure_rows)."""
        r, K = np.empty(self.n_rows), np.empty((self.n_rows if jacobian else 0, self.nv))
        tree_closure_rows(*self.tree, q, np.empty((3, 4 * self.nv)), np.empty((6, self.nv)), r, K)
        return r, (K if jacobian else None)

    def tree_bias(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Kdot v at (q, v) from the compiled tree (``compiled`` models; kernels.tree_closure_bias)."""
        X, J = np.empty((3, 4 * self.nv)), np.empty((6, self.nv))
        tree_closure_rows(*self.tree, q, X, J, np.empty(self.n_rows), np.empty((self.n_rows, self.nv)))
        out = np.empty(self.n_rows)
        tree_closure_bias(self.parent, self.col, self.offset, self.lin_rows, self.lin_sel, X, J, v, out)
        return out

    def placements(self, data: pin.Data, q: np.ndarray):
        """(X, scale): every joint's world placement at q, X[:, 4 (j - 1) : 4 j] = [p_j R_j] / scale (the kernels'
        input). pinocchio's static regressor (computeStaticRegressor: the forward kinematics at q, then the
        placements divided by the model's mass, in one matrix) gives them in one call, ~1.6 us against ~4.6 us for
        reading a hexapod's seven closure joints from data.oMi one by one; a massless model reads data.oMi."""
        if self._mass > 0.0:
            return pin.computeStaticRegressor(self._model, data, q), self._mass
        pin.forwardKinematics(self._model, data, q)
        oMi = data.oMi.tolist()[1:]
        return np.hstack([np.column_stack([M.translation, M.rotation]) for M in oMi]), 1.0

    def evaluate(self, data: pin.Data, q: np.ndarray, jacobian: bool = True, H=None):
        """(closure_residual, closure_jacobian or None) at q from the joint placements (and with ``jacobian`` the
        world joint Jacobian data.J: computeJointJacobians at q) in ``data``: one compiled call
        (kernels.closure_rows) for the point and frame rows, then the frame closures' rotations and the couplings.
        H: ``placements`` at q when the caller has them."""
        X, scale = self.placements(data, q) if H is None else H
        r, K = np.zeros(self.n_rows), np.zeros((self.n_rows if jacobian else 0, self.nv))
        closure_rows(X, scale, data.J if jacobian else _NO_JACOBIAN, self.col, self.offset, self.mask, self.lin_rows,
                     self.lin_sel, self.ang_rows, self.ang_sel, r, K)
        oMi = data.oMi
        for row, ja, Ma, jb, Mb in self.frame_closures:
            Ra, Rb = (oMi[ja] * Ma).rotation, (oMi[jb] * Mb).rotation
            r[row:row + 3] = Rb @ pin.log3(Rb.T @ Ra)
        if len(self.cpl_rows):
            r[self.cpl_rows] = q[self.cpl_dep] - self.cpl_ratio * q[self.cpl_ref] - self.cpl_offset
            if jacobian:
                K[self.cpl_rows] = self.cpl_K
        return r, (K if jacobian else None)

    def jacobian_dot(self, data: pin.Data, q: np.ndarray, v: np.ndarray, H=None) -> np.ndarray:
        """Kdot along v from the joint placements at q, data.J and data.dJ (computeJointJacobiansTimeVariation at
        (q, v)) in ``data``: one compiled call (kernels.closure_rows_dot). H: ``placements`` at q when the caller
        has them."""
        X, scale = self.placements(data, q) if H is None else H
        return closure_rows_dot(X, scale, data.J, data.dJ, np.asarray(v, float), self.col, self.offset, self.mask,
                                self.lin_rows, self.lin_sel, self.ang_rows, self.ang_sel, self.n_rows)

    def bias(self, data: pin.Data, q: np.ndarray, v: np.ndarray, H=None) -> np.ndarray:
        """Kdot v as ``jacobian_dot(...) @ v`` in one compiled call that does not form Kdot
        (kernels.closure_rows_bias); coupling rows 0."""
        X, scale = self.placements(data, q) if H is None else H
        return closure_rows_bias(X, scale, data.J, data.dJ, np.asarray(v, float), self.col, self.offset, self.mask,
                                 self.lin_rows, self.lin_sel, self.ang_rows, self.ang_sel, self.n_rows)


def closure_bias(clm: ClosedLoopModel, data: pin.Data, q: np.ndarray, v: np.ndarray) -> np.ndarray:
    """K̇ v: with it, the closures at acceleration level read K a + K̇ v = 0 (ClosureRows.bias: K̇ not formed)."""
    pin.computeJointJacobiansTimeVariation(clm.model, data, q, v)
    return clm.closure_rows.bias(data, q, v)
