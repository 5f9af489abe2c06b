"""The compiled spanning tree (description/kernels.tree_kinematics) against pinocchio on every shipped robot: joint
placements (data.oMi) and world joint Jacobian (computeJointJacobians' data.J) at 1e-12, the closure rows and bias
(Kdot v) the numeric family solves on against ClosureRows' pinocchio path (pinocchio's data.J and its time derivative
data.dJ), and the block-diagonal solves of the numeric family's square systems against numpy's dense solve."""

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.benchmarks.speed import robot_list
from pkm_control.description import load_model, load_robot
from pkm_control.description.kernels import tree_kinematics
from pkm_control.description.loader import tree_arrays
from pkm_control.kinematics.kernels import solve_columns
from pkm_control.kinematics.numeric import Kinematics

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


def _states(model, rng, n=5):
    """Random joint positions within +-1.5 (m or rad: any configuration, assembled or not) and rates."""
    return [(rng.uniform(-1.5, 1.5, model.nv), rng.uniform(-2.0, 2.0, model.nv)) for _ in range(n)]


@pytest.mark.parametrize("robot", ROBOTS, ids=IDS)
def test_tree_matches_pinocchio(robot):
    clm = load_robot(*robot)
    model = clm.model
    data = model.createData()
    parent, kind, frame = tree_arrays(model)
    nv = model.nv
    for q, _ in _states(model, np.random.default_rng(3)):
        X, J = np.empty((3, 4 * nv)), np.empty((6, nv))
        tree_kinematics(parent, kind, frame, q, X, J)
        pin.computeJointJacobians(model, data, q)
        for j in range(1, model.njoints):
            M = data.oMi[j]
            np.testing.assert_allclose(X[:, 4 * (j - 1)], M.translation, rtol=0, atol=1e-12)
            np.testing.assert_allclose(X[:, 4 * (j - 1) + 1:4 * j], M.rotation, rtol=0, atol=1e-12)
        np.testing.assert_allclose(J, data.J, rtol=0, atol=1e-12)


@pytest.mark.parametrize("robot", ROBOTS, ids=IDS)
def test_closure_rows_and_bias_match_the_pinocchio_path(robot):
    """tree_rows / tree_bias (no pinocchio) against evaluate / bias on pinocchio's placements, J and dJ."""
    clm = load_robot(*robot)
    rows, model = clm.closure_rows, clm.model
    assert rows.compiled
    data = model.createData()
    for q, v in _states(model, np.random.default_rng(4)):
        r, K = rows.tree_rows(q)
        pin.computeJointJacobians(model, data, q)
        r_ref, K_ref = rows.evaluate(data, q)
        np.testing.assert_allclose(r, r_ref, rtol=0, atol=1e-12)
        np.testing.assert_allclose(K, K_ref, rtol=0, atol=1e-12)
        np.testing.assert_array_equal(rows.tree_rows(q, jacobian=False)[0], r)
        pin.computeJointJacobiansTimeVariation(model, data, q, v)
        np.testing.assert_allclose(rows.tree_bias(q, v), rows.bias(data, q, v), rtol=0, atol=1e-11)


def test_unaligned_and_prismatic_joints():
    """Unaligned revolute and prismatic axes (no shipped robot has them) against pinocchio."""
    urdf = """<robot name="t"><link name="base"/><link name="a"/><link name="b"/><link name="c"/>
      <joint name="j1" type="revolute"><parent link="base"/><child link="a"/>
        <origin xyz="0.1 0.2 0.3" rpy="0.3 -0.2 0.5"/>
        <axis xyz="0 0.6 0.8"/><limit lower="-3" upper="3" effort="1" velocity="1"/></joint>
      <joint name="j2" type="prismatic"><parent link="a"/><child link="b"/><origin xyz="0.4 0 -0.1" rpy="0.1 0.2 0.3"/>
        <axis xyz="0.48 0.6 0.64"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint>
      <joint name="j3" type="prismatic"><parent link="base"/><child link="c"/><origin xyz="0 0 1" rpy="0 0 0"/>
        <axis xyz="0 1 0"/><limit lower="-1" upper="1" effort="1" velocity="1"/></joint></robot>"""
    clm = load_model(urdf, {"closures": [{"name": "bc", "type": "point", "frames": ["b", "c"]}],
                            "actuated_joints": ["j1"]}, name="t")
    model, rows = clm.model, clm.closure_rows
    assert [model.joints[j].shortname() for j in (1, 2, 3)] == ["JointModelRevoluteUnaligned",
                                                                 "JointModelPrismaticUnaligned", "JointModelPY"]
    data = model.createData()
    parent, kind, frame = tree_arrays(model)
    q, v = np.array([0.7, -0.3, 0.2]), np.array([1.1, 0.4, -0.9])
    X, J = np.empty((3, 12)), np.empty((6, 3))
    tree_kinematics(parent, kind, frame, q, X, J)
    pin.computeJointJacobiansTimeVariation(model, data, q, v)
    for j in (1, 2, 3):
        np.testing.assert_allclose(X[:, 4 * (j - 1):4 * j], np.column_stack([data.oMi[j].translation,
                                                                             data.oMi[j].rotation]), atol=1e-12)
    np.testing.assert_allclose(J, data.J, atol=1e-12)
    r_ref, K_ref = rows.evaluate(data, q)
    r, K = rows.tree_rows(q)
    np.testing.assert_allclose(r, r_ref, atol=1e-12)
    np.testing.assert_allclose(K, K_ref, atol=1e-12)
    np.testing.assert_allclose(rows.tree_bias(q, v), rows.bias(data, q, v), atol=1e-12)


@pytest.mark.parametrize("robot", ROBOTS, ids=IDS)
def test_block_diagonal_solves(robot):
    """The numeric family's square systems factored block by block (numeric._blocks, kernels.lu_columns): K[rows,
    cols] vanishes off its diagonal blocks at random (unassembled) configurations, and the block solve equals
    numpy's dense solve of K[:, cols]."""
    kin = Kinematics(load_robot(*robot))
    rows_of = kin.model.closure_rows
    rng = np.random.default_rng(6)
    for cols, (rows, bounds) in ((kin._ik_free, kin._ik_blocks), (kin._fk_free, kin._fk_blocks)):
        if len(cols) != rows_of.n_rows:
            continue
        inside = np.zeros((len(rows), len(cols)), dtype=bool)
        for s, e in zip(bounds[:-1], bounds[1:]):
            inside[s:e, s:e] = True
        for _ in range(3):
            K = rows_of.tree_rows(kin.reference + rng.uniform(-0.2, 0.2, rows_of.nv))[1]
            A = K[np.ix_(rows, cols)]
            assert not A[~inside].any()
            B = rng.normal(size=(len(rows), 2))
            X, ok = solve_columns(K, cols, rows, bounds, B)
            assert ok
            np.testing.assert_allclose(X, np.linalg.solve(K[:, cols], B), rtol=1e-10, atol=1e-12)
    assert len(kin._ik_blocks[1]) > 2          # every shipped robot's IK splits into its legs


def test_any_float_arrays_take_the_compiled_motion():
    """Read-only and strided pose and twist arrays (a ROS message's buffers, slices of a state) run the one compiled
    signature of numeric_motion (none compiled in a control period) and give the contiguous inputs' result."""
    from pkm_control.kinematics.numeric_kernels import numeric_motion, numeric_project
    from pkm_control.kinematics.task_space import Pose

    kin = Kinematics(load_robot("stewart", "6-6"))
    pose = kin.home_pose()
    twist, accel = np.array([0.01, -0.02, 0.03, 0.1, -0.05, 0.02]), np.array([0.1, 0.2, -0.1, 0.3, 0.1, -0.2])
    ref = kin.tree_state(pose, twist, accel)
    R, p = np.asfortranarray(pose.rotation), np.repeat(pose.position, 2)[::2]
    tw, ac = np.repeat(twist, 2)[::2], np.repeat(accel, 2)[::2]
    for arr in (R, p, tw, ac):
        arr.setflags(write=False)
    odd = kin.tree_state(Pose(p, R), tw, ac)
    for a, b in zip(odd, ref):
        np.testing.assert_allclose(a, b, rtol=0, atol=1e-12)
    assert len(numeric_motion.signatures) == 1 and len(numeric_project.signatures) == 1
