"""A MuJoCo model (MJCF, built through ``mujoco.MjSpec``) of any closed-loop model, with no file per robot.

The pinocchio tree of the ClosedLoopModel is walked, not its URDF text imported, because MuJoCo's URDF import
does what these mechanisms cannot take: it fuses the static closure frames away (``fusestatic``), takes inertia
from collision geometry where a link has none (``inertiafromgeom``) and refuses massless links. Here:

* Bodies. A massless tree body (zero mass and zero rotational inertia: the platform-joint chain's links,
  stewart's U-joint rings, lopes' and delta's U-joint crosses) is merged into its only child: the child's MuJoCo
  body carries the joints of the whole chain, in order, each with its axis and anchor written in the child's frame
  at q = 0. MuJoCo composes the joints of one body in that order about those anchors, which is the same motion as
  pinocchio's chain M_1 J_1(q_1) ... M_n J_n(q_n) (with B_i = oMi_child(0)^-1 oMi_i(0):
  oMi_child = oMi_child(0) prod_i B_i J_i B_i^-1). A massless body with no child or several children cannot be
  merged and is refused. Inertias are pinocchio's (fixed links already added by its URDF parser, Inertia
  addition), principal axes as ``iquat``; a principal moment below ``INERTIA_FLOOR`` (the bars of delta and lopes
  about their own axis, lopes' point-mass carriages) is raised to it, since MuJoCo refuses zero eigenvalues: the
  joint-space mass matrix changes by at most INERTIA_FLOOR (kg m^2), below 1e-9 of its norm on every robot
  (test_mujoco compares with pinocchio's CRBA of the unfloored model).
* Closures. Each closure frame becomes a site on its body; a ``point`` closure is a ``connect`` between the two
  sites (site to site: the all-zero configuration is not assembled, so a body-plus-anchor connect would be wrong).
  A point closure on two axes (the planar robot's cut revolutes) has no connect equivalent; it is represented
  exactly when the omitted world components of the frame difference are constant over the whole tree (all joint
  axes normal to that plane): site b is then moved along the omitted axes by that constant, which keeps its
  offset invariant under every body rotation of the tree, and the connect's extra rows hold identically (checked
  at random tree configurations; refused otherwise). A ``coupling`` closure is a joint equality with polycoef
  (offset, ratio) (MuJoCo: q1 - q1_0 = poly(q2 - q2_0), qpos0 = 0 here). ``frame`` closures (6D) are refused: no
  robot here has one, so no weld export was checked against the engine.
* Stiffness of the closures: MuJoCo's constraints are soft. Default solref/solimp leave 1-2 mm closure gaps; here
  solref = (2 timestep, 1) (the stiffest MuJoCo accepts: refsafe) and solimp = (0.9999, 0.9999, ...), with the
  implicit-fast integrator at ``DEFAULT_TIMESTEP`` (closure error measured in test_mujoco and in docs/hardware.md).
* Contacts are switched off (``disableflags`` contact): no geometry is generated, the mechanisms' collision shapes
  would overlap at every joint. A contact environment (the tool and the surfaces it touches) is added by the plant
  (hardware/mujoco_contact.py), which switches contacts on for its pairs only.
* Actuators: a ``motor`` (gear 1, no control limits: the plant saturates) on each actuated joint.
* Friction and end stops are not in the MJCF: the plant applies the engine's own models as ``qfrc_applied``
  (hardware/mujoco_robot.py says why).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..errors import InvalidModelError
from .loader import ClosedLoopModel

#: smallest principal moment of inertia given to MuJoCo (kg m^2); MuJoCo refuses zero ones
INERTIA_FLOOR = 1e-12
#: MuJoCo time step (s): 5 steps per 0.5 ms control period
DEFAULT_TIMESTEP = 1e-4
#: MuJoCo's largest impedance (mjMAXIMP): the constraint is as hard as MuJoCo allows
SOLIMP = (0.9999, 0.9999, 0.001, 0.5, 2.0)
#: a merged or planar-closure check at random tree configurations must hold to this (m)
_EXACT = 1e-9


@dataclass(frozen=True, eq=False)
class MujocoModel:
    """A compiled MuJoCo model of a ClosedLoopModel and the map between the two coordinate orders.

    ``qpos_index[i]``, ``dof_index[i]``: MuJoCo's qpos and dof of pinocchio joint i (model q order; the
    actuators are in ``actuated_joints`` order). ``merged``: the massless tree bodies merged into their child (by
    the name of their joint);
    ``floored``: (joint, smallest principal moment before the floor) of the bodies raised to INERTIA_FLOOR;
    ``planar_shift``: (closure, shift of site b in the world at q = 0) of the two-axis point closures.
    """

    model: object                  # mujoco.MjModel (compiled; the plant owns its own MjData)
    xml: str                       # the MJCF (mujoco.MjSpec.to_xml), to save and load elsewhere
    qpos_index: np.ndarray
    dof_index: np.ndarray          # MuJoCo dof (qvel, qfrc) of pinocchio joint i
    merged: tuple
    floored: tuple
    planar_shift: tuple


def _massless(inertia: pin.Inertia) -> bool:
    return inertia.mass == 0.0 and not np.any(inertia.inertia)


def _joint_axis(clm: ClosedLoopModel, data: pin.Data, jid: int) -> tuple[bool, np.ndarray]:
    """(revolute, axis in the joint's own frame) from its motion subspace at q = 0."""
    col = pin.getJointJacobian(clm.model, data, jid, pin.ReferenceFrame.LOCAL)[:, clm.model.joints[jid].idx_v]
    revolute = clm.is_revolute(clm.model.names[jid])
    axis = col[3:] if revolute else col[:3]
    return revolute, axis / np.linalg.norm(axis)


def _principal(inertia: pin.Inertia) -> tuple[np.ndarray, np.ndarray, float]:
    """(principal moments floored at INERTIA_FLOOR, their axes as a quaternion wxyz, smallest moment before)."""
    moments, axes = np.linalg.eigh(inertia.inertia)
    if np.linalg.det(axes) < 0:
        axes[:, 0] = -axes[:, 0]
    q = pin.Quaternion(axes)
    return np.maximum(moments, INERTIA_FLOOR), np.array([q.w, q.x, q.y, q.z]), float(moments[0])


def _random_configurations(clm: ClosedLoopModel, n: int = 8) -> list:
    rng = np.random.default_rng(0)
    return [rng.uniform(-1.0, 1.0, clm.nq) for _ in range(n)]


def mujoco_model(clm: ClosedLoopModel, timestep: float = DEFAULT_TIMESTEP, integrator: str = "implicitfast",
                 name: str | None = None) -> MujocoModel:
    """The MuJoCo model of ``clm`` (module docstring). InvalidModelError for what has no faithful MuJoCo form."""
    import mujoco

    if not (np.isfinite(timestep) and 0 < timestep <= 0.01):
        raise InvalidModelError(f"MuJoCo timestep must be in (0, 0.01] s, got {timestep}")
    integrators = {"euler": mujoco.mjtIntegrator.mjINT_EULER, "rk4": mujoco.mjtIntegrator.mjINT_RK4,
                   "implicit": mujoco.mjtIntegrator.mjINT_IMPLICIT,
                   "implicitfast": mujoco.mjtIntegrator.mjINT_IMPLICITFAST}
    if integrator not in integrators:
        raise InvalidModelError(f"MuJoCo integrator must be one of {sorted(integrators)}, got {integrator!r}")
    m = clm.model
    data = m.createData()
    q0 = pin.neutral(m)
    pin.computeJointJacobians(m, data, q0)
    pin.updateFramePlacements(m, data)
    children = {j: [] for j in range(m.njoints)}
    for j in range(1, m.njoints):
        children[m.parents[j]].append(j)

    # groups: each MuJoCo body = a chain of massless pinocchio bodies ending at a massive one
    body_of = {0: 0}                  # pinocchio joint -> the pinocchio joint whose frame is its MuJoCo body
    groups = {}                       # last joint -> joints of its chain, root first
    merged, pending = [], {}
    for j in range(1, m.njoints):     # parents come before children in pinocchio's order
        chain = pending.pop(j, []) + [j]
        if _massless(m.inertias[j]):
            if len(children[j]) != 1:
                raise InvalidModelError(
                    f"'{clm.name}': massless body of joint '{m.names[j]}' has {len(children[j])} child bodies; "
                    "MuJoCo needs mass there and only a massless body with one child can be merged into it")
            pending[children[j][0]] = chain
            merged.append(m.names[j])
            continue
        groups[j] = chain
        for k in chain:
            body_of[k] = j

    spec = mujoco.MjSpec()
    spec.modelname = name or clm.name
    spec.compiler.inertiafromgeom = mujoco.mjtInertiaFromGeom.mjINERTIAFROMGEOM_FALSE
    spec.compiler.fusestatic = False
    spec.option.timestep = timestep
    spec.option.integrator = integrators[integrator]
    spec.option.gravity = np.array(m.gravity.linear)
    spec.option.disableflags |= mujoco.mjtDisableBit.mjDSBL_CONTACT
    spec.option.jacobian = mujoco.mjtJacobian.mjJAC_DENSE
    solref = np.array([2.0 * timestep, 1.0])

    bodies = {0: spec.worldbody}
    floored = []
    for last, chain in groups.items():
        parent = body_of[m.parents[chain[0]]]
        oMb = data.oMi[last]
        rel = data.oMi[parent].actInv(oMb)
        quat = pin.Quaternion(rel.rotation)
        body = bodies[parent].add_body(name=m.names[last], pos=rel.translation, quat=[quat.w, quat.x, quat.y, quat.z])
        bodies[last] = body
        inertia = m.inertias[last]
        moments, iquat, smallest = _principal(inertia)
        if smallest < INERTIA_FLOOR:
            floored.append((m.names[last], smallest))
        body.explicitinertial = True
        body.mass, body.ipos, body.iquat, body.inertia = inertia.mass, inertia.lever, iquat, moments
        for k in chain:
            B = oMb.actInv(data.oMi[k])
            revolute, axis = _joint_axis(clm, data, k)
            body.add_joint(name=m.names[k], pos=B.translation, axis=B.rotation @ axis,
                           type=mujoco.mjtJoint.mjJNT_HINGE if revolute else mujoco.mjtJoint.mjJNT_SLIDE)

    def site(frame_id: int, shift=np.zeros(3)):
        f = m.frames[frame_id]
        if body_of[f.parentJoint] != f.parentJoint:
            raise InvalidModelError(f"'{clm.name}': closure frame '{f.name}' is on the massless body of joint "
                                    f"'{m.names[f.parentJoint]}', merged into its child: it has no MuJoCo body")
        oMb = data.oMi[f.parentJoint]
        bodies[f.parentJoint].add_site(name=f.name, pos=oMb.actInv(data.oMf[frame_id]).translation
                                       + oMb.rotation.T @ shift)
        return f.name

    planar_shift = []
    for c in clm.closures:
        if c.type == "point":
            shift = np.zeros(3)
            omitted = [k for k in range(3) if k not in c.axes]
            if omitted:
                shift = _planar_shift(clm, c, omitted, data)
                planar_shift.append((c.name, shift))
            spec.add_equality(name=c.name, type=mujoco.mjtEq.mjEQ_CONNECT, objtype=mujoco.mjtObj.mjOBJ_SITE,
                              name1=site(c.frame_ids[0]), name2=site(c.frame_ids[1], shift), solref=solref,
                              solimp=SOLIMP)
        elif c.type == "coupling":
            eq = spec.add_equality(name=c.name, type=mujoco.mjtEq.mjEQ_JOINT, name1=c.joints[0],
                                   name2=c.joints[1], solref=solref, solimp=SOLIMP)
            poly = np.zeros(len(eq.data))       # MjsEquality.data: polycoef in the first five
            poly[:2] = c.offset, c.ratio
            eq.data = poly
        else:
            raise InvalidModelError(f"'{clm.name}': closure '{c.name}' is a {c.type} closure; the MuJoCo export "
                                    "takes point and coupling closures (no robot here has a 6D frame closure, so "
                                    "a weld export is not checked against the engine)")
    for name_ in clm.actuated_joints:
        spec.add_actuator(name=name_, target=name_, trntype=mujoco.mjtTrn.mjTRN_JOINT)
    try:
        model = spec.compile()
    except Exception as exc:            # mujoco raises ValueError with the compiler's message
        raise InvalidModelError(f"MuJoCo refused the model of '{clm.name}': {exc}") from exc
    ids = [model.joint(n).id for n in clm.joint_names]
    return MujocoModel(model, spec.to_xml(), model.jnt_qposadr[ids].copy(), model.jnt_dofadr[ids].copy(),
                       tuple(merged), tuple(floored), tuple(planar_shift))


def _planar_shift(clm: ClosedLoopModel, c, omitted: list, data0: pin.Data) -> np.ndarray:
    """World shift of site b (at q = 0) that makes a two-axis point closure's omitted rows hold identically, or
    InvalidModelError when the omitted components of the frame difference are not constant over the tree."""
    m = clm.model
    fa, fb = c.frame_ids
    shift = np.zeros(3)
    shift[omitted] = (data0.oMf[fa].translation - data0.oMf[fb].translation)[omitted]
    local = data0.oMf[fb].rotation.T @ shift         # in frame b: moves with the body
    d = m.createData()
    for q in _random_configurations(clm):
        pin.framesForwardKinematics(m, d, q)
        gap = (d.oMf[fa].translation - d.oMf[fb].translation - d.oMf[fb].rotation @ local)[omitted]
        if np.abs(gap).max() > _EXACT:
            raise InvalidModelError(
                f"'{clm.name}': closure '{c.name}' constrains axes {[('x', 'y', 'z')[k] for k in c.axes]} only, "
                f"and its other components vary over the tree (by {np.abs(gap).max():.3g} m at a random "
                "configuration): MuJoCo's connect constrains all three, so it has no faithful MuJoCo form")
    return shift
