"""What the browser view draws, without ROS and without a browser: the robot's visual shapes from its URDF,
their placements for a joint vector, the platform frame, the actuator forces as arrows, the tracking error
and the traced path.

The shapes are pinocchio's visual GeometryModel of the description's URDF (``<visual>`` elements: box,
cylinder, sphere and mesh, with the material colour), so any robot in the extended-URDF convention is drawn
as its URDF says; their placements are the tree's forward kinematics at q (``updateGeometryPlacements``).
The closures hold when q comes from the graph (every tree joint, /joint_states and /desired_joint_states).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

import numpy as np
import pinocchio as pin

from ..description import ClosedLoopModel
from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, check_vector, excerpt

#: the link whose frame is drawn as the platform frame (the convention's platform body, docs/architecture.md)
PLATFORM_LINK = "platform"


@dataclass(frozen=True)
class Shape:
    """One visual element. size: box (x, y, z) edge lengths; cylinder (radius, length) along its z axis;
    sphere (radius,); mesh the scale (x, y, z) of the file at ``mesh_path``. rgba in [0, 1]."""

    name: str
    kind: str
    size: tuple
    rgba: tuple
    mesh_path: str = ""


@dataclass(frozen=True)
class Placements:
    """The world placement of every shape (positions (N, 3), quaternions w x y z (N, 4)) and of the platform
    frame, for one joint vector."""

    positions: np.ndarray
    wxyz: np.ndarray
    platform_position: np.ndarray
    platform_rotation: np.ndarray


def _shape(obj) -> Shape:
    g = obj.geometry
    kind = type(g).__name__
    rgba = tuple(float(c) for c in obj.meshColor)
    if kind == "Box":
        return Shape(obj.name, "box", tuple(2.0 * np.asarray(g.halfSide, float)), rgba)
    if kind == "Cylinder":
        return Shape(obj.name, "cylinder", (float(g.radius), 2.0 * float(g.halfLength)), rgba)
    if kind == "Sphere":
        return Shape(obj.name, "sphere", (float(g.radius),), rgba)
    if obj.meshPath and kind in ("BVHModelOBBRSS", "BVHModelOBB", "Convex", "ConvexBase"):
        return Shape(obj.name, "mesh", tuple(float(s) for s in obj.meshScale), rgba, obj.meshPath)
    raise InvalidModelError(f"visual '{obj.name}' has geometry {kind}, which the viewer does not draw "
                            "(box, cylinder, sphere or mesh)")


def wxyz(rotations: np.ndarray) -> np.ndarray:
    """(N, 3, 3) rotation matrices -> quaternions (w, x, y, z), viser's order."""
    from scipy.spatial.transform import Rotation

    xyzw = Rotation.from_matrix(rotations).as_quat()
    return xyzw[:, [3, 0, 1, 2]]


@dataclass(frozen=True, eq=False)
class RobotScene:
    """Immutable: the shapes of a robot and how to place them. Build it with ``robot_scene``."""

    model: ClosedLoopModel
    geometry: pin.GeometryModel
    shapes: tuple
    platform_frame: int
    force_limit: np.ndarray        # per actuated joint, for the arrow length
    size: float                    # extent of the robot at home (m), for the camera and the arrow scale

    @property
    def joint_names(self) -> tuple:
        return self.model.joint_names

    @property
    def up(self) -> np.ndarray:
        """The direction against gravity (the planar robot moves in a vertical x-y plane: +y)."""
        g = self.model.model.gravity.linear
        return -g / np.linalg.norm(g)

    def joint_vector(self, names, positions, what: str = "joint state") -> np.ndarray:
        """q of the tree (model order) from named positions that name every tree joint once, or
        InvalidInputError naming what is wrong (unknown, duplicate or missing joints, a size mismatch,
        a non-finite or absurd position)."""
        names = [str(n) for n in names]
        pos = np.asarray(positions, dtype=float).ravel()
        if len(pos) != len(names):
            raise InvalidInputError(f"{what}: {len(names)} names but {len(pos)} positions")
        if len(set(names)) != len(names):
            raise InvalidInputError(f"{what}: duplicate joint names")
        index = self.model.joint_index
        unknown = [n for n in names if n not in index]
        if unknown:
            raise InvalidInputError(f"{what}: unknown joints {[excerpt(n) for n in unknown[:5]]} "
                                    f"(robot {self.model.name} has {len(index)} joints)")
        missing = [n for n in self.joint_names if n not in set(names)]
        if missing:
            raise InvalidInputError(f"{what}: joints {missing[:5]} missing ({len(missing)} of {len(index)}); the "
                                    "viewer needs every tree joint, as joint_controller and inverse_kinematics "
                                    "publish them")
        check_vector(f"{what} positions", pos, len(pos), MAGNITUDE_LIMIT)
        q = np.empty(len(index))
        q[[index[n] for n in names]] = pos
        return q

    def placements(self, q) -> Placements:
        """World placements of every shape and of the platform frame at the tree configuration q."""
        model, geom = self.model.model, self.geometry
        q = check_vector("q", q, model.nq, MAGNITUDE_LIMIT)
        data, gdata = model.createData(), geom.createData()
        pin.updateGeometryPlacements(model, data, geom, gdata, q)
        pin.updateFramePlacement(model, data, self.platform_frame)
        poses = gdata.oMg
        pos = np.array([m.translation for m in poses])
        rot = np.array([m.rotation for m in poses])
        platform = data.oMf[self.platform_frame]
        return Placements(pos, wxyz(rot), platform.translation.copy(), platform.rotation.copy())

    def actuator_forces(self, q, effort) -> tuple[np.ndarray, np.ndarray]:
        """Arrows of the actuated joints' efforts: (tails (n, 3), vectors (n, 3)) in the world frame.

        A vector is the joint axis in the world times effort / force_limit: a force along a prismatic joint, a
        torque vector (right-hand rule) along a revolute one; its full length at the force limit is a quarter
        of the robot's size. It lies on the joint axis through the joint's child frame (the slider's end for a
        prismatic drive, the arm's pivot for a revolute one) on the side the axis points to, outside the strut
        that would hide it: a positive effort starts there, a negative one ends there."""
        model = self.model.model
        q = check_vector("q", q, model.nq, MAGNITUDE_LIMIT)
        effort = check_vector("effort", effort, self.model.n_actuated, MAGNITUDE_LIMIT)
        data = model.createData()
        pin.computeJointJacobians(model, data, q)
        lwa = pin.ReferenceFrame.LOCAL_WORLD_ALIGNED
        tails, vectors = [], []
        for k, name in enumerate(self.model.actuated_joints):
            jid = model.getJointId(name)
            col = pin.getJointJacobian(model, data, jid, lwa)[:, model.joints[jid].idx_v]
            axis = col[3:] if self.model.is_revolute(name) else col[:3]
            vector = axis / np.linalg.norm(axis) * effort[k] / self.force_limit[k] * 0.25 * self.size
            origin = data.oMi[jid].translation
            tails.append(origin if effort[k] >= 0 else origin - vector)
            vectors.append(vector)
        return np.array(tails), np.array(vectors)


def contact_force_arrow(platform_position, platform_rotation, tool_point, force, full_scale: float,
                        size: float) -> tuple[np.ndarray, np.ndarray]:
    """The arrow of the measured contact force (issue 24): (tail, vector) in the world frame. ``force``: the force
    the platform applies to the environment, F_e (N, sensor frame: platform axes at ``tool_point``, m in the platform
    frame; /platform_wrench); the vector is R F_e scaled to a quarter of the robot's ``size`` at ``full_scale`` N,
    its head at the tool point (the force pushes the surface there)."""
    R = np.asarray(platform_rotation, float)
    force = check_vector("contact force", force, 3, MAGNITUDE_LIMIT)
    if not full_scale > 0:
        raise InvalidInputError(f"full_scale must be > 0 N, got {full_scale}")
    tip = np.asarray(platform_position, float) + R @ np.asarray(tool_point, float)
    vector = R @ force / full_scale * 0.25 * size
    return tip - vector, vector


def robot_scene(clm: ClosedLoopModel) -> RobotScene:
    """The scene of a closed-loop model: its URDF's visual shapes, the platform frame, the force limits."""
    geom = pin.buildGeomFromUrdfString(clm.model, clm.urdf, pin.GeometryType.VISUAL)
    if geom.ngeoms == 0:
        raise InvalidModelError(f"robot {clm.name}: the URDF has no <visual> element to draw")
    shapes = tuple(_shape(o) for o in geom.geometryObjects)
    if not clm.model.existFrame(PLATFORM_LINK):
        raise InvalidModelError(f"robot {clm.name}: no link '{PLATFORM_LINK}' to draw the platform frame of")
    limit = clm.spec.actuators.force_limit
    limit = np.ones(clm.n_actuated) if limit is None else limit.copy()
    scene = RobotScene(clm, geom, shapes, clm.model.getFrameId(PLATFORM_LINK), limit, 1.0)
    home = scene.placements(home_q(clm)).positions
    extent = float(np.ptp(home, axis=0).max()) if len(home) > 1 else 1.0
    return RobotScene(clm, geom, shapes, scene.platform_frame, limit, max(extent, 0.1))


def home_q(clm: ClosedLoopModel) -> np.ndarray:
    """The tree configuration at the robot's home pose (config ``home``), by the analytic IK."""
    from ..kinematics import robot_kinematics

    kin = robot_kinematics(clm.name, clm.variant)
    return kin.inverse(kin.home_pose()).q


def tracking_error(scene: RobotScene, q_measured, q_desired) -> dict:
    """e = q_desired - q_measured of the actuated joints (as the benchmark, Abdellatif Fig. 6) and the
    platform's position error |p_desired - p_measured|: {'actuated': e (n,), 'platform_position': m}."""
    a = scene.model.actuated_idx
    e = np.asarray(q_desired, float)[a] - np.asarray(q_measured, float)[a]
    dp = scene.placements(q_desired).platform_position - scene.placements(q_measured).platform_position
    return {"actuated": e, "platform_position": float(np.linalg.norm(dp))}


class PathTrace:
    """The last ``capacity`` platform positions, as line segments for the view (explicit state, one per
    drawn path)."""

    def __init__(self, capacity: int = 2000):
        self.points = deque(maxlen=capacity)

    def add(self, p) -> None:
        self.points.append(np.asarray(p, float).copy())

    def clear(self) -> None:
        self.points.clear()

    def segments(self) -> np.ndarray:
        """(N - 1, 2, 3) segments joining consecutive points."""
        if len(self.points) < 2:
            return np.zeros((0, 2, 3))
        p = np.array(self.points)
        return np.stack([p[:-1], p[1:]], axis=1)

