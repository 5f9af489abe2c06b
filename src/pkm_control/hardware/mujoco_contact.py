"""The contact environment (hardware/contact.py) in MuJoCo's own contact model: the independent check of the contact
forces of the simulated robot (issue 24).

Geometry. A sphere of radius ``TOOL_RADIUS`` centred on the tool point, on the platform's MuJoCo body; each plane a
MuJoCo ``plane`` (infinite for collision), each box a ``box``, in the world. The sphere's surface lies TOOL_RADIUS
beyond the tool point, so each plane is moved TOOL_RADIUS inward along its normal and each box shrunk by
TOOL_RADIUS: MuJoCo's contact distance is then the tool point's own (signed) distance from the surface, exactly for a
plane and a box face (at a box's edges and corners the shrunk box with the sphere is rounded by TOOL_RADIUS). Only
the explicit tool-surface ``pair``s collide (contype = conaffinity = 0 everywhere else; the mechanism has no geoms).

Normal force. MuJoCo's contact is a soft constraint: the normal row's force is f = (a_ref - a_1) / R with a_1 the
contact's normal acceleration, R = (1 - d) / d A (A = the row's ``efc_diagApprox``, d the impedance: solimp with
dmin = dmax = d is flat) and, for a negative ("direct") solref = (-s, -b_s), a_ref = -(b_s / d) v - (s / d^2) d r
(v the normal velocity, r = the signed distance, < 0 inside; MuJoCo's engine_core_constraint.c mj_makeImpedance).
So f = (-b_s v - s r) / ((1 - d) A) - a_1 d / ((1 - d) A). With

    s = k (1 - d) A,  b_s = c (1 - d) A                                                               (1)

this is f = k (-r) - c v - m_a a_1: the project's Kelvin-Voigt force k d + c d' (contact.py) plus an added mass
m_a = d / ((1 - d) A), d / (1 - d) = 1e-4 of the effective mass 1 / A at d = ``IMPEDANCE`` (MuJoCo's smallest).
Unilateral as ours: no pull (f >= 0), and no force while the distance is positive (margin 0). In a static press
(a_1 = 0) the two models give the same force at the same penetration; A is the platform body's translational
``body_invweight0`` (MuJoCo's diagonal approximation for a contact between the platform and the world, a model
constant), checked against the solver's efc_diagA in test_mujoco_contact.

Friction (mu > 0): an elliptic cone (condim 3), |f_t| <= mu f_n in force space. Below the cone MuJoCo's friction is
viscous: f_t = -beta v_t - impratio m_a a_t with beta = b_f impratio / ((1 - d) A) (the friction rows: K = 0, B from
``solreffriction`` = (0, -b_f), R_t = R / impratio; an added mass of impratio d / (1 - d) = 0.1 of the effective
mass while below the cone); ours is mu f_n tanh(|v_t| / eps), of slope mu f_n / eps. The slopes are equal at
f_n = ``FRICTION_REFERENCE_FORCE`` (beta = mu F_ref / eps); sliding faster than mu f_n / beta, both are Coulomb's
mu f_n (ours within 1 % beyond 2.6 eps): the ratio f_t / f_n is mu on both. Sliding on the cone, MuJoCo projects the
unconstrained (f_n0, f_t0) onto the cone in the metric (R, R / impratio): f_n = (f_n0 + mu |f_t0| / impratio) /
(1 + mu^2 / impratio), |f_t0| = beta |v_t|: its normal force exceeds the Kelvin-Voigt force at the same state by
about mu beta |v_t| / (impratio f_n) (0.47 % at 53 mm/s, 50 N, mu = 0.3 and ``IMPRATIO``). That is MuJoCo's
regularization, stated, not removed: a larger impratio shrinks it and grows the added mass below the cone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidInputError
from ..kinematics.task_space import Pose
from .contact import Box, ContactEnvironment, Plane

#: m: radius of the tool's sphere (the surfaces are offset by it: module docstring)
TOOL_RADIUS = 1e-4
#: MuJoCo's impedance d of the contacts (flat solimp): the added mass is d / (1 - d) of the effective mass
IMPEDANCE = 1e-4
#: N: MuJoCo's viscous friction below the cone has the slope of ours, mu f_n / eps, at this normal force
FRICTION_REFERENCE_FORCE = 50.0
#: MuJoCo's ratio of frictional to normal constraint impedance (global): the normal force while sliding
IMPRATIO = 1000.0


@dataclass(frozen=True)
class MujocoContact:
    """What the MuJoCo plant needs of its contact: the tool geom's id and body, the surfaces' geom ids, the platform
    body's translational inverse weight A of (1)."""

    tool_geom: int
    platform_body: int
    surface_geoms: tuple
    inverse_weight: float


def add_environment(spec, environment: ContactEnvironment, platform_body, tool_in_body: np.ndarray,
                    inverse_weight: float) -> None:
    """Add the tool sphere (at ``tool_in_body``, the tool point in the platform body's frame), the surfaces and their
    pairs with the parameters (1) to an MjSpec (module docstring); contacts enabled, elliptic cones."""
    import mujoco

    if not (np.isfinite(inverse_weight) and inverse_weight > 0):
        raise InvalidInputError(f"the platform's inverse weight must be > 0, got {inverse_weight}")
    spec.option.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    spec.option.cone = mujoco.mjtCone.mjCONE_ELLIPTIC
    spec.option.impratio = IMPRATIO
    platform_body.add_geom(name="tool", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[TOOL_RADIUS, 0, 0],
                           pos=tool_in_body, contype=0, conaffinity=0)
    scale = (1.0 - IMPEDANCE) * inverse_weight
    for i, s in enumerate(environment.surfaces):
        name = f"surface_{i}"
        if isinstance(s, Plane):
            spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 1],
                                    pos=s.point - TOOL_RADIUS * s.normal, quat=_quat_z_to(s.normal),
                                    contype=0, conaffinity=0)
        elif isinstance(s, Box):
            if not (s.half_extents > TOOL_RADIUS).all():
                raise InvalidInputError(f"box half_extents must exceed the tool sphere's radius {TOOL_RADIUS} m in "
                                        f"MuJoCo, got {s.half_extents.tolist()}")
            spec.worldbody.add_geom(name=name, type=mujoco.mjtGeom.mjGEOM_BOX, size=s.half_extents - TOOL_RADIUS,
                                    pos=s.center, quat=_quat(s.rotation), contype=0, conaffinity=0)
        else:
            raise InvalidInputError(f"surface {i}: MuJoCo takes a Plane or a Box, got {type(s).__name__}")
        beta = s.friction * FRICTION_REFERENCE_FORCE / s.slip_speed
        spec.add_pair(name=name, geomname1=name, geomname2="tool", condim=3 if s.friction > 0 else 1,
                      friction=[s.friction, s.friction, 0.0, 0.0, 0.0],
                      solref=[-s.stiffness * scale, -s.damping * scale],
                      solreffriction=[0.0, -beta * scale / IMPRATIO],
                      solimp=[IMPEDANCE, IMPEDANCE, 0.001, 0.5, 2.0], margin=0.0, gap=0.0)


def contact_wrench(model, data, tool_geom: int, origin: np.ndarray, tool: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """([f; m], m_t): the wrench of MuJoCo's contacts on the tool at the point ``origin`` (base frame, the platform
    origin), and their moment about ``tool`` (the tool point), from mj_contactForce (contact frame: its first axis
    the normal from geom1 to geom2; the force is geom1's on geom2)."""
    import mujoco

    f, m, m_t = np.zeros(3), np.zeros(3), np.zeros(3)
    local = np.zeros(6)
    for i in range(data.ncon):
        con = data.contact[i]
        if tool_geom not in (con.geom1, con.geom2):
            continue
        mujoco.mj_contactForce(model, data, i, local)
        fi = con.frame.reshape(3, 3).T @ local[:3]
        if con.geom1 == tool_geom:
            fi = -fi
        f += fi
        m += np.cross(con.pos - origin, fi)
        m_t += np.cross(con.pos - tool, fi)
    return np.concatenate([f, m]), m_t


def _quat(R: np.ndarray) -> np.ndarray:
    import pinocchio as pin

    q = pin.Quaternion(np.asarray(R, float))
    return np.array([q.w, q.x, q.y, q.z])


def _quat_z_to(n: np.ndarray) -> np.ndarray:
    """The rotation (wxyz) taking z to the unit vector n (a MuJoCo plane's normal is its z axis)."""
    z = np.array([0.0, 0.0, 1.0])
    axis = np.cross(z, n)
    s, c = np.linalg.norm(axis), float(z @ n)
    if s < 1e-12:
        return np.array([1.0, 0.0, 0.0, 0.0]) if c > 0 else np.array([0.0, 1.0, 0.0, 0.0])
    half = 0.5 * np.arctan2(s, c)
    return np.concatenate([[np.cos(half)], np.sin(half) * axis / s])


def tool_in_body(pose: Pose, body_placement, tool_point: np.ndarray) -> np.ndarray:
    """The tool point in the frame of the platform's MuJoCo body, from the platform ``pose`` and the body's placement
    (pinocchio SE3, the same configuration)."""
    return body_placement.actInv(pose.position + pose.rotation @ tool_point)
