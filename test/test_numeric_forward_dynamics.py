"""The numeric family's forward dynamics in one compiled call (dynamics.numeric_kernels.numeric_forward_dynamics,
issue 21 par. 7) against independent references on every shipped robot:

* the compiled crba and rnea on the spanning tree (description.kernels.tree_mass_matrix, tree_inverse_dynamics)
  against pinocchio's crba and rnea at random (unassembled) states, with armature and another gravity;
* the task acceleration against pinocchio's constraintDynamics with the robot's constraint models at the tree state
  of an independent IK, along a 1 kHz trajectory (the warm start) and at random states and forces;
* the same call through the generic path (pinocchio's constraintDynamics, or the reduced M xddot = f for planar
  closures), and the same errors for bad inputs.
No timing here: ``pkm bench dynamics`` measures the speed.
"""

from __future__ import annotations

import numpy as np
import pinocchio as pin
import pytest

from pkm_control.benchmarks.speed import _trajectory, robot_list
from pkm_control.description import load_robot
from pkm_control.description.kernels import (tree_body_inertias, tree_inverse_dynamics, tree_kinematics,
                                             tree_mass_matrix)
from pkm_control.description.loader import constraint_models, tree_arrays, tree_inertias
from pkm_control.dynamics import ClosedLoopDynamics
from pkm_control.dynamics.parameters import sample_states
from pkm_control.errors import PkmError
from pkm_control.kinematics.numeric import Kinematics as Numeric
from pkm_control.kinematics.numeric_kernels import HAS_Q
from pkm_control.kinematics.task_space import Pose

ROBOTS = robot_list()
IDS = [f"{r}-{v}" if v else r for r, v in ROBOTS]


def _rel(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max()) / max(1.0, float(np.abs(b).max()))


def tree_dynamics(model, q, v, a):
    """(M, rnea(q, v, a)) of the compiled tree."""
    parent, kind, frame = tree_arrays(model)
    nv = model.nv
    X, J = np.empty((3, 4 * nv)), np.empty((6, nv))
    tree_kinematics(parent, kind, frame, q, X, J)
    body, composite, M, tau = np.empty((nv, 10)), np.empty((nv, 10)), np.empty((nv, nv)), np.empty(nv)
    tree_body_inertias(X, tree_inertias(model), body)
    tree_inverse_dynamics(parent, J, body, model.armature, model.gravity.linear, v, a, tau)
    tree_mass_matrix(parent, J, body, model.armature, composite, M)
    return M, tau


@pytest.mark.parametrize("robot", ROBOTS, ids=IDS)
def test_compiled_crba_and_rnea_match_pinocchio(robot):
    rng = np.random.default_rng(21)
    model = pin.Model(load_robot(*robot).model)
    model.armature[:] = rng.uniform(0.0, 0.2, model.nv)
    model.gravity.linear = np.array([0.3, -1.2, -9.7])
    data = model.createData()
    for _ in range(4):
        q, v, a = (rng.uniform(-1.5, 1.5, model.nv), rng.uniform(-2, 2, model.nv), rng.uniform(-5, 5, model.nv))
        M, tau = tree_dynamics(model, q, v, a)
        M_ref = pin.crba(model, data, q)
        M_ref = np.triu(M_ref) + np.triu(M_ref, 1).T
        assert _rel(M, M_ref) <= 1e-12
        assert _rel(tau, pin.rnea(model, data, q, v, a)) <= 1e-12


def _engines(robot):
    """(compiled, generic): two numeric engines of a robot, the second without the compiled call."""
    fast = ClosedLoopDynamics(Numeric(load_robot(*robot)))
    slow = ClosedLoopDynamics(Numeric(load_robot(*robot)))
    assert fast._compiled_fd is not None       # every shipped robot: square closures on the compiled tree
    slow._compiled_fd = None
    return fast, slow


@pytest.mark.parametrize("robot", ROBOTS, ids=IDS)
def test_forward_dynamics_matches_constraint_dynamics_and_the_generic_path(robot):
    """Along a 1 kHz trajectory (each call warm-started by the last) and at random states with random forces:
    pinocchio's constraintDynamics at the tree state of a separate IK where pinocchio holds the closures (1e-9),
    and the generic path of the same call (1e-12)."""
    fast, slow = _engines(robot)
    rng = np.random.default_rng(7)
    ik = Numeric(load_robot(*robot))
    m = fast.pin_model
    try:
        models = constraint_models(fast.model)
    except PkmError:
        models = None                          # planar closures: the generic path is the reduced M xddot = f
    if models is not None:
        datas = [cm.createData() for cm in models]
        cd = m.createData()
        pin.initConstraintDynamics(m, cd, models, datas)
    states = _trajectory(fast.kin, 40) + sample_states(fast, 8, rng)
    for pose, twist, _ in states:
        tau = rng.normal(scale=20.0, size=fast.model.n_actuated)
        xdd = fast.forward_dynamics(pose, twist, tau, friction=False)
        assert _rel(xdd, slow.forward_dynamics(pose, twist, tau, friction=False)) <= 1e-12
        if models is None:
            continue
        q, v = ik.tree_motion(pose, twist)
        t = np.zeros(m.nv)
        t[fast.model.actuated_idx] = tau
        a = pin.constraintDynamics(m, cd, q, v, t, models, datas)
        ref, finite = ik.task.tree_task_acceleration(q, v, a, fast.model.platform_idx)
        assert finite
        assert _rel(xdd, ref) <= 1e-9
    sc = fast.kin._scratch                   # the call keeps the family's warm start (one for every solve)
    assert sc.warm[HAS_Q] == 1
    np.testing.assert_allclose(sc.q, fast.kin.tree_motion(*states[-1][:2])[0], rtol=0, atol=1e-12)


def _outcome(fn, *args):
    try:
        return fn(*args, friction=False)
    except PkmError as exc:
        return type(exc), str(exc)


@pytest.mark.parametrize("robot", [("orthoglide", None), ("stewart", "6-6"), ("five_bar", None)],
                         ids=["orthoglide", "stewart-6-6", "five_bar"])
def test_bad_inputs_get_the_generic_paths_errors(robot):
    fast, slow = _engines(robot)
    home = fast.kin.home_pose()
    n, na = fast.n, fast.model.n_actuated
    zero, tau = np.zeros(n), np.ones(na)
    tilted = Pose(home.position, home.rotation @ np.array([[1.0, 0, 0], [0, 0.8, -0.6], [0, 0.6, 0.8]]))
    cases = [(home, zero, np.ones(na + 1)), (home, zero, np.full(na, np.nan)), (home, zero, [1.0] * na),
             (home, zero, tau.astype(np.float32)), (home, None, tau), (home, np.zeros(n + 1), tau),
             (home, [0.0] * n, tau), (home, np.full(n, 1e200), tau), (tilted, zero, tau),
             (Pose(home.position, 2 * home.rotation), zero, tau),
             (Pose(home.position + 10.0, home.rotation), zero, tau),
             (Pose(home.position.astype(int), home.rotation), zero, tau), (home, zero, tau)]
    for pose, twist, t in cases:
        got, want = _outcome(fast.forward_dynamics, pose, twist, t), _outcome(slow.forward_dynamics, pose, twist, t)
        if isinstance(want, tuple):
            assert got == want
        else:
            assert _rel(got, want) <= 1e-12
