"""The numeric family's forward dynamics in one compiled call (engine.forward_dynamics; issue 21 par. 7): the warm IK
of kinematics/numeric_kernels.py, the tree's crba and rnea of description/kernels.py and the reduced solve of
kernels.py. A module of its own, imported by the engine when it builds a numeric engine: its imports (the numeric
family's kernels, compiled at their import) are not paid by every process that imports the dynamics.
"""

from __future__ import annotations

import numba
import numpy as np

from ..description.kernels import tree_body_inertias, tree_inverse_dynamics, tree_mass_matrix
from ..kinematics.numeric_kernels import (INPUT, MOTION_FLOATS, MOTION_INTS, SOLVED, float_field, int_field,
                                          solve_motion, unpack_motion, unpack_warm)
from .kernels import _F64_1, _F64_2, reduced_solve


#: numeric_forward_dynamics' status beyond numeric_kernels' (SOLVED ... INPUT): the task mass matrix is not positive
#: definite or the acceleration is not finite
DYNAMICS_FAILED = 7
#: the fields of numeric_forward_dynamics' packed model after the motion's (numeric_kernels.pack)
DYNAMICS_INTS = ("act", "task_dim")
DYNAMICS_FLOATS = ("inertia", "armature", "gravity")
_C_I64 = numba.types.Array(numba.int64, 1, "C", readonly=True)
_C_F64 = numba.types.Array(numba.float64, 1, "C", readonly=True)


#: numeric_forward_dynamics' one signature (compiled_forward_dynamics)
_FD_SIGNATURE = (_C_I64, _C_F64, numba.int64[::1], numba.float64[::1], _F64_2, _F64_1, _F64_1, _F64_1,
                 numba.float64[::1])


def compiled_forward_dynamics():
    """numeric_forward_dynamics compiled for its one signature (the caller's arrays read-only of any layout convert
    to it, nothing compiles in a control period), on the first call of this: a numeric engine's construction, not
    the import of this module that every process pays (the kernel costs ~20 s CPU to compile cold, then loads from
    numba's cache)."""
    if not numeric_forward_dynamics.signatures:
        numeric_forward_dynamics.compile(_FD_SIGNATURE)
        numeric_forward_dynamics.disable_compile()
    return numeric_forward_dynamics


@numba.njit(cache=True)
def numeric_forward_dynamics(I, F, iwork, work, R, p, twist, tau, xdd):
    """The forward dynamics of the engine (engine.forward_dynamics, no wrench, friction or end stops) for the numeric
    family's square closures on the compiled tree, in one call. I, F: the packed model (numeric_kernels.pack of
    MOTION_INTS + DYNAMICS_INTS and MOTION_FLOATS + DYNAMICS_FLOATS: numeric.Kinematics.packed_motion, the actuated
    joints, the task dimension, loader.tree_inertias, pinocchio's armature and gravity); iwork, work: the family's
    warm start (numeric_kernels.unpack_warm).

    First the shapes and tau's check (tree_force's), then the IK of the motion with zero task acceleration
    (numeric_kernels.solve_motion, its input checks included): q, v = G xdot, G and a0 = Gdot xdot; then the reduced
    dynamics M xddot = G_a^T tau - G^T rnea(q, v, a0), M = G^T crba(q) G (reduced_solve), crba and rnea compiled on
    the tree (description.kernels.tree_mass_matrix, tree_inverse_dynamics) from the placements and joint Jacobian
    of the IK's last evaluation. These are the equations pinocchio's constraintDynamics solves on the tree
    (engine.py), so xddot is the same to rounding.

    Returns the status: SOLVED (xdd written); INPUT where the shapes, tau, the pose or the twist fail the checks;
    numeric_kernels' failures of the IK; DYNAMICS_FAILED. Where it is not SOLVED the caller's generic path meets
    the same failure and names it."""
    k = len(MOTION_INTS)
    act, task_dim = int_field(I, k), int_field(I, k + 1)[0]
    k = len(MOTION_FLOATS)
    inertia, armature, gravity = float_field(I, F, k), float_field(I, F, k + 1), float_field(I, F, k + 2)
    tree, reference, c, free, rows, bounds, task, alpha_sign, predict_range, limit, tol, max_iter = unpack_motion(I, F)
    parent = tree[0]
    nv, n_rows, n_free, n = parent.shape[0], rows.shape[0], free.shape[0], task_dim
    shapes_ok = (R.shape[0] == R.shape[1] == p.shape[0] == 3 and twist.shape[0] == task_dim
                 and tau.shape[0] == act.shape[0])
    if not shapes_ok:
        return INPUT
    total = 0.0
    for i in range(tau.shape[0]):
        total += abs(tau[i])
    if not total <= limit:
        return INPUT
    warm, wq, wK, wLU, wperm = unpack_warm(iwork, work, nv, n_rows, n_free)
    q, v, a, G = np.empty(nv), np.empty(nv), np.empty(nv), np.empty((nv, n))
    X, J = np.empty((3, 4 * nv)), np.empty((6, nv))
    zero = np.zeros(n)
    # validate = shapes_ok (True here) as a run-time bool, not the literal True: solve_motion then has the argument
    # types of numeric_kernels.numeric_motion's call and compiles once for both
    status = solve_motion(tree, reference, warm, wq, wK, wLU, wperm, c, free, rows, bounds, task, alpha_sign, R, p,
                          twist, zero, shapes_ok, predict_range, limit, tol, max_iter, q, v, a, G, X, J)[0]
    if status != SOLVED:
        return status
    body, composite = np.empty((nv, 10)), np.empty((nv, 10))
    tree_body_inertias(X, inertia.reshape((nv, 13)), body)
    bias, M = np.empty(nv), np.empty((nv, nv))
    tree_inverse_dynamics(parent, J, body, armature, gravity, v, a, bias)
    tree_mass_matrix(parent, J, body, armature, composite, M)
    return SOLVED if reduced_solve(G, M, act, tau, bias, zero, xdd) else DYNAMICS_FAILED
