"""Platform poses, task coordinates and the platform joints of the spanning tree.

Inside the core a platform pose is a position p (3,) and a rotation R (3, 3) in
the base frame. Each robot has its own task coordinates and task velocity:

=============  =========================  ==============================
kind           coordinates (edges only)   task velocity / acceleration
=============  =========================  ==============================
``spatial``    x y z roll pitch yaw       twist (v, omega), (p'', omega')
``translation`` x y z                      v, p''
``planar``     x y alpha                  (x', y', alpha'), second derivative
``xy``         x y                        (x', y'), (x'', y'')
=============  =========================  ==============================

``xy`` is a point moving in the base x-y plane without an orientation of its own (the end effector of a
five-bar linkage: the common point of its two distal links).

roll/pitch/yaw are ZYX Euler angles: R = Rz(yaw) Ry(pitch) Rx(roll), the URDF
``rpy`` convention. v is the velocity of the platform origin, omega the angular
velocity, both in the base frame (Taghirad's twist).

The spanning tree carries the platform on 1-DoF "platform joints" (prismatic x,
y, z then revolute z, y, x for ``spatial``; prismatic x, y, revolute z for
``planar``; prismatic x, y, z for ``translation``; prismatic x, y for ``xy``); they carry no force and have
no limits, they only parametrize the platform's free motion. Their rates for
``spatial`` are Euler rates, related to omega by omega = E(yaw, pitch) [yaw' pitch' roll'].
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import MAGNITUDE_LIMIT, InvalidInputError, SingularConfigurationError, check_vector
from .kernels import rodrigues, zyx_platform_force, zyx_platform_motion, zyx_pose_rates, zyx_task_acceleration

#: no twist / acceleration for kernels.zyx_platform_motion
_NO_RATES = np.empty(0)
#: the platform joints of a spatial task's own vectors (qp, vp, ap): all six, in order
_PLATFORM_ROWS = np.arange(6, dtype=np.int64)
_PLATFORM_ROWS.setflags(write=False)


@dataclass(frozen=True)
class Pose:
    """Platform pose in the base frame."""

    position: np.ndarray
    rotation: np.ndarray

    @staticmethod
    def identity() -> "Pose":
        return Pose(np.zeros(3), np.eye(3))

    def validated(self) -> "Pose":
        """This pose with float arrays, or InvalidInputError naming what is wrong."""
        p = check_vector("pose position", self.position, 3, MAGNITUDE_LIMIT)
        R = check_vector("pose rotation", self.rotation, (3, 3))
        # columns orthonormal and right-handed, in scalars (this runs once per IK/FK call)
        (a, b, c), (d, e, f), (g, h, i) = R.tolist()
        err = max(abs(a * a + d * d + g * g - 1), abs(b * b + e * e + h * h - 1), abs(c * c + f * f + i * i - 1),
                  abs(a * b + d * e + g * h), abs(a * c + d * f + g * i), abs(b * c + e * f + h * i))
        det = a * (e * i - f * h) - b * (d * i - f * g) + c * (d * h - e * g)
        if err > 1e-9 or det < 0:
            raise InvalidInputError(f"pose rotation is not a rotation matrix (|R^T R - I| = {err:.3g}, "
                                    f"det = {det:.3g}; limit 1e-9)")
        return Pose(p, R)


def rot_x(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[1.0, 0, 0], [0, c, -s], [0, s, c]])


def rot_y(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, 0, s], [0, 1.0, 0], [-s, 0, c]])


def rot_z(a):
    c, s = np.cos(a), np.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1.0]])


def rpy_to_matrix(roll, pitch, yaw):
    """R = Rz(yaw) Ry(pitch) Rx(roll) (ZYX Euler, URDF rpy)."""
    return rot_z(yaw) @ rot_y(pitch) @ rot_x(roll)


def matrix_to_rpy(R):
    """Inverse of rpy_to_matrix for |pitch| < pi/2; returns (roll, pitch, yaw)."""
    pitch = np.arctan2(-R[2, 0], np.hypot(R[0, 0], R[1, 0]))
    roll = np.arctan2(R[2, 1], R[2, 2])
    yaw = np.arctan2(R[1, 0], R[0, 0])
    return roll, pitch, yaw


def euler_rate_matrix(yaw, pitch):
    """E with omega = E [yaw', pitch', roll'] for R = Rz(yaw) Ry(pitch) Rx(roll)."""
    cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    return np.array([[0.0, -sy, cy * cp], [0.0, cy, sy * cp], [1.0, 0.0, -sp]])


def euler_rate_matrix_inverse(yaw, pitch):
    """E^-1: [yaw', pitch', roll'] = E^-1 omega (closed form, singular at cos(pitch) = 0)."""
    cy, sy, cp, sp = math.cos(yaw), math.sin(yaw), math.cos(pitch), math.sin(pitch)
    return np.array([[cy * sp / cp, sy * sp / cp, 1.0], [-sy, cy, 0.0], [cy / cp, sy / cp, 0.0]])


def euler_rate_matrix_dot(yaw, pitch, yaw_rate, pitch_rate):
    """Time derivative of euler_rate_matrix."""
    cy, sy, cp, sp = np.cos(yaw), np.sin(yaw), np.cos(pitch), np.sin(pitch)
    return np.array([[0.0, -cy * yaw_rate, -sy * cp * yaw_rate - cy * sp * pitch_rate],
                     [0.0, -sy * yaw_rate, cy * cp * yaw_rate - sy * sp * pitch_rate],
                     [0.0, 0.0, -cp * pitch_rate]])


def so3_exp(w):
    """Rotation matrix exp([w]x) (kernels.rodrigues, in scalar arithmetic: it sits in the FK loop)."""
    x, y, z = (w.tolist() if isinstance(w, np.ndarray) else map(float, w))
    return np.array(rodrigues(x, y, z)).reshape(3, 3)


def so3_log(R):
    """Rotation vector w with so3_exp(w) = R."""
    th = math.acos(min(max((float(R[0, 0] + R[1, 1] + R[2, 2]) - 1) / 2, -1.0), 1.0))    # scalars: math, not numpy
    v = np.array([R[2, 1] - R[1, 2], R[0, 2] - R[2, 0], R[1, 0] - R[0, 1]])
    if th < 1e-8:
        return 0.5 * v
    if math.pi - th < 1e-6:
        # near pi: axis from the symmetric part
        A = (R + np.eye(3)) / 2
        k = np.argmax(np.diag(A))
        axis = A[:, k] / np.sqrt(A[k, k])
        return th * axis * (1 if axis @ v >= 0 else -1)
    return th / (2 * math.sin(th)) * v


class TaskSpace:
    """Task coordinates of one robot; see the module docstring."""

    COORDS = {"spatial": ("x", "y", "z", "roll", "pitch", "yaw"),
              "translation": ("x", "y", "z"),
              "planar": ("x", "y", "alpha"),
              "xy": ("x", "y")}
    VELOCITY = {"spatial": ("vx", "vy", "vz", "wx", "wy", "wz"),
                "translation": ("vx", "vy", "vz"),
                "planar": ("vx", "vy", "alpha_dot"),
                "xy": ("vx", "vy")}
    ANGULAR = {"spatial": (3, 4, 5), "translation": (), "planar": (2,), "xy": ()}

    def __init__(self, kind: str, alpha_sign: float = 1.0):
        # alpha_sign = -1: a planar robot whose paper measures alpha clockwise
        # (the platform joint then turns about -z and R = Rz(-alpha)).
        self.alpha_sign = float(alpha_sign)
        if kind not in self.COORDS:
            raise InvalidInputError(f"task space kind must be one of {list(self.COORDS)}, got {kind!r}")
        self.kind = kind
        self.names = self.COORDS[kind]
        self.velocity_names = self.VELOCITY[kind]
        self.dim = len(self.names)
        self.angular = self.ANGULAR[kind]

    def __repr__(self):
        return f"TaskSpace({self.kind!r})"

    # -- edges: coordinates <-> pose ------------------------------------------------
    def pose(self, coords) -> Pose:
        """Pose from task coordinates (radians for the angles)."""
        x = check_vector(f"task coordinates ({' '.join(self.names)})", coords, self.dim, MAGNITUDE_LIMIT)
        if self.kind == "spatial":
            return Pose(x[:3].copy(), rpy_to_matrix(x[3], x[4], x[5]))
        if self.kind == "translation":
            return Pose(x.copy(), np.eye(3))
        if self.kind == "xy":
            return Pose(np.array([x[0], x[1], 0.0]), np.eye(3))
        return Pose(np.array([x[0], x[1], 0.0]), rot_z(self.alpha_sign * x[2]))

    def coordinates(self, pose: Pose) -> np.ndarray:
        """Task coordinates of a pose (inverse of ``pose``)."""
        p, R = pose.position, pose.rotation
        if self.kind == "spatial":
            roll, pitch, yaw = matrix_to_rpy(R)
            return np.array([p[0], p[1], p[2], roll, pitch, yaw])
        if self.kind == "translation":
            return np.array(p, dtype=float)
        if self.kind == "xy":
            return np.array(p[:2], dtype=float)
        return np.array([p[0], p[1], self.alpha_sign * np.arctan2(R[1, 0], R[0, 0])])

    # -- the platform joints of the tree --------------------------------------------
    def platform_joint_motion(self, pose: Pose, twist=None, accel=None):
        """Platform-joint positions, rates and accelerations (tree order) of a platform motion."""
        if self.kind != "spatial":
            return self.coordinates(pose), (None if twist is None else np.asarray(twist, float)), \
                (None if accel is None else np.asarray(accel, float))
        qp, vp, ap, _ = self._spatial(pose, twist, accel)
        return qp, vp, ap

    def platform_joint_state(self, pose: Pose, twist=None, accel=None):
        """(qp, vp, ap, B): platform_joint_motion and platform_rate_matrix from one call (the spatial task's kernel
        gives all four); SingularConfigurationError at |pitch| = pi/2 with a twist."""
        if self.kind != "spatial":
            return (*self.platform_joint_motion(pose, twist, accel), np.eye(self.dim))
        return self._spatial(pose, twist, accel)

    @staticmethod
    def _spatial(pose: Pose, twist=None, accel=None):
        """(qp, vp, ap, B) of a spatial task (kernels.zyx_platform_motion; vp, ap None without twist / accel);
        SingularConfigurationError at |pitch| = pi/2 unless only qp is asked for."""
        qp, vp, ap, B, singular = zyx_platform_motion(
            np.asarray(pose.rotation, float), np.asarray(pose.position, float),
            _NO_RATES if twist is None else np.asarray(twist, float),
            _NO_RATES if accel is None else np.asarray(accel, float))
        if singular and twist is not None:
            raise SingularConfigurationError(f"pitch = {qp[4]:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        return qp, (None if twist is None else vp), (None if accel is None else ap), B

    def task_acceleration(self, qp, vp, ap) -> np.ndarray:
        """xddot from platform-joint positions, rates and accelerations: the inverse of platform_joint_motion's
        a = B xddot + Bdot xdot (spatial: omegadot = E e'' + Edot e', e the ZYX angles)."""
        return self.tree_task_acceleration(np.asarray(qp, float), np.asarray(vp, float), np.asarray(ap, float),
                                           _PLATFORM_ROWS[:self.dim])[0]

    def tree_task_acceleration(self, q, v, a, c):
        """(xddot, finite) from the whole tree's q, v, a (float64) with the platform joints at c (int64): one
        compiled call for the spatial task (kernels.zyx_task_acceleration), no copies of the platform rows."""
        if self.kind != "spatial":
            x = a[c]
            return x, all(map(math.isfinite, x.tolist()))       # 0.5 us, np.isfinite(x).all() 1.6 us
        x = np.empty(6)
        return x, zyx_task_acceleration(q, v, a, c, x)

    def task_velocity(self, qp, vp) -> np.ndarray:
        """xdot from platform-joint positions and rates: the inverse of B (spatial: omega = E e')."""
        if self.kind != "spatial":
            return np.array(vp, float)
        return np.concatenate([vp[:3], euler_rate_matrix(qp[3], qp[4]) @ vp[3:]])

    def platform_joint_force(self, qp, f) -> np.ndarray:
        """Platform-joint forces tau_p with B^T tau_p = f: a generalized force f on the task velocity as forces on
        the platform joints (spatial: B^-T = diag(I, E^T))."""
        if self.kind != "spatial":
            return np.array(f, float)
        out = np.empty(6)
        zyx_platform_force(np.asarray(qp, float), np.asarray(f, float), out)     # one compiled call (kernels)
        return out

    def platform_rate_matrix(self, pose: Pose) -> np.ndarray:
        """B with (platform-joint rates) = B (task velocity)."""
        if self.kind != "spatial":
            return np.eye(self.dim)
        qp, _, _, B, singular = zyx_platform_motion(np.asarray(pose.rotation, float),
                                                    np.asarray(pose.position, float), _NO_RATES, _NO_RATES)
        if singular:
            raise SingularConfigurationError(f"pitch = {qp[4]:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        return B

    def platform_rate_matrix_dot(self, pose: Pose, twist) -> np.ndarray:
        """d/dt of platform_rate_matrix along the motion with this twist."""
        if self.kind != "spatial":
            return np.zeros((self.dim, self.dim))
        roll, pitch, yaw = matrix_to_rpy(pose.rotation)
        Einv = euler_rate_matrix_inverse(yaw, pitch)
        rates = Einv @ np.asarray(twist, float)[3:]
        Bd = np.zeros((6, 6))
        Bd[3:, 3:] = -Einv @ euler_rate_matrix_dot(yaw, pitch, rates[0], rates[1]) @ Einv
        return Bd

    def twist_map(self) -> np.ndarray:
        """S (6 x dim): platform twist (v, omega) in the base frame = S (task velocity).

        Its transpose maps a wrench (force at the platform origin, moment; base frame)
        to the generalized force conjugate to the task velocity.
        """
        if self.kind == "spatial":
            return np.eye(6)
        S = np.zeros((6, self.dim))
        S[0, 0] = S[1, 1] = 1.0
        if self.kind == "translation":
            S[2, 2] = 1.0
        elif self.kind == "planar":
            S[5, 2] = self.alpha_sign
        return S

    def pose_from_platform_joints(self, qp) -> Pose:
        """Pose from the platform-joint positions (tree order)."""
        if self.kind == "spatial":
            p, R = np.empty(3), np.empty((3, 3))
            if zyx_pose_rates(np.asarray(qp, float), _NO_RATES, R, p, _NO_RATES):
                raise InvalidInputError(f"platform-joint positions must be 6 numbers, got {np.shape(qp)}")
            return Pose(p, R)
        return self.pose(qp)

    def platform_pose_and_rates(self, qp, twist) -> tuple[Pose, np.ndarray]:
        """(pose_from_platform_joints(qp), platform_rate_matrix(pose) @ twist): the platform pose and the
        platform-joint rates of a state of the reduced simulation (its every RK4 stage; spatial: one compiled call,
        kernels.zyx_pose_rates); SingularConfigurationError at |pitch| = pi/2."""
        if self.kind != "spatial":
            return self.pose(qp), np.array(twist, float)
        p, R, vp = np.empty(3), np.empty((3, 3)), np.empty(6)
        status = zyx_pose_rates(qp, twist, R, p, vp)
        if status == 1:
            raise SingularConfigurationError(f"pitch = {qp[4]:.6g} rad: ZYX Euler rates are singular at |pitch| = pi/2")
        if status:
            raise InvalidInputError(f"platform-joint positions and task velocity must be 6 numbers each, got "
                                    f"{np.shape(qp)} and {np.shape(twist)}")
        return Pose(p, R), vp

    # -- small steps on the pose manifold (Newton updates) -------------------------
    def retract(self, pose: Pose, dx) -> Pose:
        """Pose moved by a task-velocity-like increment dx (rotation applied in the base frame)."""
        if self.kind == "spatial":
            return Pose(pose.position + dx[:3], so3_exp(dx[3:]) @ pose.rotation)
        if self.kind == "translation":
            return Pose(pose.position + dx, pose.rotation)
        if self.kind == "xy":
            return Pose(pose.position + np.array([dx[0], dx[1], 0.0]), pose.rotation)
        return Pose(pose.position + np.array([dx[0], dx[1], 0.0]), rot_z(self.alpha_sign * dx[2]) @ pose.rotation)

    def difference(self, a: Pose, b: Pose) -> np.ndarray:
        """dx with retract(b, dx) = a."""
        d = a.position - b.position
        if self.kind == "spatial":
            return np.concatenate([d, so3_log(a.rotation @ b.rotation.T)])
        if self.kind == "translation":
            return d
        if self.kind == "xy":
            return d[:2]
        return np.array([d[0], d[1], self.alpha_sign * so3_log(a.rotation @ b.rotation.T)[2]])
