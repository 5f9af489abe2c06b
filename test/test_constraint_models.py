"""The closures as pinocchio RigidConstraintModels (description.loader.constraint_models).

pinocchio's ``constraintDynamics`` on the emitted models is a second formulation of the closed-loop forward
dynamics (a KKT system on the spanning tree, Featherstone/Carpentier's proximal Cholesky), independent of the
project's reduced one (ClosedLoopDynamics.forward_dynamics: the task-space equations projected with G, the
tree accelerations from the analytic IK). The two agree on every shipped robot whose closures pinocchio can hold.
The constraint Jacobians pinocchio forms are checked against finite differences of the closure residual.
"""

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import closure_residual, constraint_models, load_model
from pkm_control.dynamics.engine import ClosedLoopDynamics
from pkm_control.dynamics.simulation import constrained_forward_dynamics
from pkm_control.errors import InvalidModelError
from pkm_control.kinematics import robot_kinematics
from pkm_control.kinematics.workspace import random_poses

#: the shipped robots whose closures are all 3-axis points (config/<robot>.yaml): spherical cut joints
POINT_ROBOTS = [rv for rv in robot_list() if rv[0] in ("stewart", "palida", "lopes", "delta")]


def _datas(models):
    datas = pin.StdVec_RigidConstraintData()
    for cm in models:
        datas.append(cm.createData())
    return datas


def _fd_rows(clm, data, q, v, h=1e-6):
    """d/dt of the closure residual along v, by central differences (all tree joints are 1-DoF: q + h v)."""
    return (closure_residual(clm, data, q + h * v) - closure_residual(clm, data, q - h * v)) / (2 * h)


@pytest.mark.parametrize("robot,variant", POINT_ROBOTS, ids=[f"{r}-{v}" if v else r for r, v in POINT_ROBOTS])
def test_constraint_dynamics_agrees_with_the_engine(robot, variant):
    """pinocchio.constraintDynamics (tree torques = actuator forces on the actuated joints) gives the tree
    accelerations G xddot + Gdot xdot of the engine's xddot, and those of the project's Lagrange-multiplier
    solution (constrained_forward_dynamics without Baumgarte terms), at random assembled states.

    Tolerance: relative 1e-9 of max |a|. The three solutions differ by rounding amplified by the conditioning
    of the constrained mass matrix (kappa(G^T M G) below 1e4 at these poses, random_poses keeps J away from
    singularity), so 1e-9 leaves a margin of 1e3 over the ~1e-15 seen; a sign, index or frame error in a
    constraint gives O(1)."""
    kin = robot_kinematics(robot, variant)
    clm = kin.model
    dyn = ClosedLoopDynamics(kin)
    m = clm.model
    data = m.createData()
    models = constraint_models(clm)
    assert [cm.name for cm in models] == [c.name for c in clm.closures]
    assert all(cm.type == pin.ContactType.CONTACT_3D and cm.reference_frame == pin.ReferenceFrame.LOCAL
               for cm in models)
    datas = _datas(models)
    pin.initConstraintDynamics(m, data, models, datas)
    rng = np.random.default_rng(21)
    for pose in random_poses(kin, 4, rng):
        twist = rng.normal(scale=0.3, size=kin.task.dim)
        tau = rng.normal(scale=50.0, size=clm.n_actuated)
        xdd = dyn.forward_dynamics(pose, twist, tau, friction=False)
        motion = kin.inverse(pose, twist, xdd)
        tau_tree = np.zeros(m.nv)
        tau_tree[clm.actuated_idx] = tau
        a_pin = pin.constraintDynamics(m, data, motion.q, motion.v, tau_tree, models, datas)
        scale = np.abs(motion.a).max()
        np.testing.assert_allclose(a_pin, motion.a, rtol=0, atol=1e-9 * scale)
        a_kkt, _ = constrained_forward_dynamics(dyn, motion.q, motion.v, tau_tree, alpha=0.0, beta=0.0)
        np.testing.assert_allclose(a_pin, a_kkt, rtol=0, atol=1e-9 * scale)

        # the constraint Jacobian pinocchio used (its datas updated by constraintDynamics): rows of closure c are
        # the velocity of frame a minus that of frame b in the LOCAL frame of a; turned into the world they are
        # the time derivative of the closure residual, for any v (not only a consistent one)
        Jc = pin.getConstraintsJacobian(m, data, models, datas)
        v = rng.normal(size=m.nv)
        fd = _fd_rows(clm, m.createData(), motion.q, v)
        world = np.concatenate([data.oMi[cm.joint1_id].rotation @ cm.joint1_placement.rotation
                                @ (Jc[3 * i:3 * i + 3] @ v) for i, cm in enumerate(models)])
        np.testing.assert_allclose(world, fd, rtol=0, atol=1e-7 * max(1.0, np.abs(fd).max()))


def test_frame_closure_is_contact_6d_with_the_residual_derivative():
    """A 6-D frame closure (two coaxial revolutes welded, at an assembled state ja = jb) is a CONTACT_6D
    model; its Jacobian in the LOCAL frame of a, turned into the world, is the derivative of the residual."""
    link = '<link name="{0}"><inertial><mass value="1"/><inertia ixx="1" iyy="1" izz="1" ixy="0" ixz="0" ' \
           'iyz="0"/></inertial></link>'
    joint = ('<joint name="{0}" type="revolute"><parent link="base"/><child link="{1}"/><origin xyz="0.1 0.2 0" '
             'rpy="0.3 0 0"/><axis xyz="0 1 1"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>')
    urdf = ('<robot name="pair"><link name="base"/>' + link.format("a") + link.format("b")
            + joint.format("ja", "a") + joint.format("jb", "b") + "</robot>")
    clm = load_model(urdf, {"closures": [{"name": "weld", "type": "frame", "frames": ["a", "b"]}],
                            "actuated_joints": ["ja"]})
    (cm,) = constraint_models(clm)
    assert cm.type == pin.ContactType.CONTACT_6D and cm.name == "weld"
    m, data = clm.model, clm.model.createData()
    q, v = np.array([0.4, 0.4]), np.array([0.7, -1.1])
    assert np.abs(closure_residual(clm, data, q)).max() < 1e-15
    cd = cm.createData()
    pin.computeJointJacobians(m, data, q)
    cm.calc(m, data, cd)        # the constraint's placements: without it the Jacobian is stale (DESIGN.md)
    Jc = pin.getConstraintJacobian(m, data, cm, cd)
    R = data.oMi[cm.joint1_id].rotation @ cm.joint1_placement.rotation
    world = np.concatenate([R @ (Jc[:3] @ v), R @ (Jc[3:] @ v)])
    np.testing.assert_allclose(world, _fd_rows(clm, m.createData(), q, v), atol=1e-8)
    assert np.abs(world).max() > 0.1      # the rows are not trivially zero


def test_planar_points_and_couplings_have_no_constraint_model():
    """planar_redundant's closures are 2-axis points and counterweight couplings: refused by name."""
    clm = robot_kinematics("planar_redundant").model
    with pytest.raises(InvalidModelError, match=r"leg1 \(point, 2 rows\).*counterweight1 \(coupling, 1 rows\)"):
        constraint_models(clm)
