"""Engine-wide energy and Christoffel checks of the task-space M and C, every robot and variant.

(a) kinetic energy summed body by body (1/2 m v_c^2 + 1/2 w^T I_c w with the link velocities pinocchio
    gives at the IK state) equals 1/2 xdot^T M xdot (rel 1e-9): an independent check of M;
(b) Mdot - 2C is skew-symmetric, Mdot by central differences along the motion (rel 1e-6);
(c) C against finite differences of M in Christoffel form: in the task coordinates for the translation
    and planar task spaces; for spatial robots in Euler coordinates e = (x, y, z, yaw, pitch, roll):
    M_e = T^T M T with twist = T edot, T = blockdiag(I, E(yaw, pitch)), and
    C_e = T^T C T + T^T M Tdot must equal the Christoffel matrix of M_e(e) (rel 1e-6).
For the stewart the same checks run on the Newton-Euler formulation (its C is built in Christoffel form).
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.dynamics import robot_dynamics
from pkm_control.dynamics.newton_euler import Formulation as NewtonEuler
from pkm_control.kinematics.task_space import euler_rate_matrix, euler_rate_matrix_dot, matrix_to_rpy
from pkm_control.kinematics.workspace import random_poses, workspace_box
from body_energy import kinetic_energy_bodies

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


def _twists(kin, rng, n):
    """Random task velocities scaled to the robot: each component ~ half the workspace box width per second."""
    lo, hi = workspace_box(kin)
    scale = 0.5 * (hi - lo)
    if kin.task.kind == "spatial":                       # box coordinates x y z roll pitch yaw -> (v, omega)
        scale = np.concatenate([scale[:3], np.full(3, np.mean(scale[3:]))])
    return [scale * rng.normal(size=kin.task.dim) for _ in range(n)]



# ---------------------------------------------------------------------------- coordinates for (c)
def _coords(task, pose):
    """Coordinates e whose rates relate to the task velocity by twist = T(e) edot."""
    if task.kind == "spatial":
        roll, pitch, yaw = matrix_to_rpy(pose.rotation)
        return np.array([*pose.position, yaw, pitch, roll])
    return task.coordinates(pose)


def _pose(task, e):
    if task.kind == "spatial":
        return task.pose([e[0], e[1], e[2], e[5], e[4], e[3]])
    return task.pose(e)


def _T(task, e):
    T = np.eye(task.dim)
    if task.kind == "spatial":
        T[3:, 3:] = euler_rate_matrix(e[3], e[4])
    return T


def _Tdot(task, e, ed):
    Td = np.zeros((task.dim, task.dim))
    if task.kind == "spatial":
        Td[3:, 3:] = euler_rate_matrix_dot(e[3], e[4], ed[3], ed[4])
    return Td


def christoffel_error(kin, mass_matrix, coriolis_matrix, pose, twist, h=1e-5):
    """max |C_e - Christoffel(M_e)| / max |Christoffel(M_e)|."""
    task = kin.task
    n = task.dim
    e = _coords(task, pose)
    T = _T(task, e)
    ed = np.linalg.solve(T, twist)
    Ce = T.T @ coriolis_matrix(pose, twist) @ T + T.T @ mass_matrix(pose) @ _Tdot(task, e, ed)
    dM = np.empty((n, n, n))                             # dM[i] = dM_e / de_i
    for i in range(n):
        de = np.zeros(n)
        de[i] = h
        Mp = _T(task, e + de).T @ mass_matrix(_pose(task, e + de)) @ _T(task, e + de)
        Mm = _T(task, e - de).T @ mass_matrix(_pose(task, e - de)) @ _T(task, e - de)
        dM[i] = (Mp - Mm) / (2 * h)
    # C_kj = 1/2 sum_i (dM_kj/de_i + dM_ki/de_j - dM_ij/de_k) edot_i
    chris = 0.5 * (np.einsum("ikj,i->kj", dM, ed) + np.einsum("jki,i->kj", dM, ed) - np.einsum("kij,i->kj", dM, ed))
    return np.abs(Ce - chris).max() / np.abs(chris).max()


def skew_error(kin, mass_matrix, coriolis_matrix, pose, twist):
    """max |S + S^T| / max |Mdot| for S = Mdot - 2C, Mdot by central differences along the motion. Step 1e-6, or
    1e-4 for the numeric family: its IK ends within its 1e-12 tolerance (joints repeat to ~5e-12 from one start to
    another), which at a step of 1e-6 alone is ~1e-6 of Mdot; at 1e-4 the truncation is ~1e-8."""
    h = 1e-4 if kin.family == "numeric" else 1e-6
    task = kin.task
    Md = (mass_matrix(task.retract(pose, h * twist)) - mass_matrix(task.retract(pose, -h * twist))) / (2 * h)
    S = Md - 2 * coriolis_matrix(pose, twist)
    return np.abs(S + S.T).max() / np.abs(Md).max()


# ---------------------------------------------------------------------------- tests
@pytest.fixture(scope="module", params=ROBOTS, ids=IDS)
def robot(request):
    robot, variant = request.param
    dyn = robot_dynamics(robot, variant)
    rng = np.random.default_rng(100 + ROBOTS.index(request.param))
    poses = random_poses(dyn.kin, 40, rng)
    return dyn, poses, rng


def test_kinetic_energy_body_by_body(robot):
    dyn, poses, rng = robot
    worst = 0.0
    for pose in poses:
        M = dyn.mass_matrix(pose)
        for twist in _twists(dyn.kin, rng, 3):
            T = kinetic_energy_bodies(dyn.kin, pose, twist)
            worst = max(worst, abs(0.5 * twist @ M @ twist - T) / T)
    assert worst <= 1e-9


def test_mdot_minus_2c_skew(robot):
    dyn, poses, rng = robot
    errs = [skew_error(dyn.kin, dyn.mass_matrix, dyn.coriolis_matrix, pose, twist)
            for pose, twist in zip(poses[:10], _twists(dyn.kin, rng, 10))]
    assert max(errs) <= 1e-6


def test_coriolis_christoffel(robot):
    dyn, poses, rng = robot
    errs = [christoffel_error(dyn.kin, dyn.mass_matrix, dyn.coriolis_matrix, pose, twist)
            for pose, twist in zip(poses[:5], _twists(dyn.kin, rng, 5))]
    assert max(errs) <= 1e-6


@pytest.mark.parametrize("variant", ["6-6", "3-6"])
def test_newton_euler_energy_and_christoffel(variant):
    """The same three checks on Taghirad's Newton-Euler formulation of the stewart."""
    dyn = robot_dynamics("stewart", variant)
    ne = NewtonEuler(dyn)
    rng = np.random.default_rng(5)
    poses = random_poses(dyn.kin, 10, rng)
    for pose, twist in zip(poses, _twists(dyn.kin, rng, 10)):
        T = kinetic_energy_bodies(dyn.kin, pose, twist)
        assert abs(0.5 * twist @ ne.mass_matrix(pose) @ twist - T) <= 1e-9 * T
        assert skew_error(dyn.kin, ne.mass_matrix, ne.coriolis_matrix, pose, twist) <= 1e-6
    for pose, twist in zip(poses[:4], _twists(dyn.kin, rng, 4)):
        assert christoffel_error(dyn.kin, ne.mass_matrix, ne.coriolis_matrix, pose, twist) <= 1e-6
        # the book's literal C (same C xdot, omega_x I_p and the whole l' term on s_x^2) is not the
        # Christoffel matrix: the check can tell them apart
        book = functools.partial(ne.coriolis_matrix, form="book")
        assert christoffel_error(dyn.kin, ne.mass_matrix, book, pose, twist) > 1e-2
