"""The front of a control period on a 6-UPS robot (kinematics/hexapod_ups.py) in one compiled call: the input checks,
the desired motion between two streamed samples and the measured state estimate of a law that needs the measured pose
(control/controller.py).

After the loop's sleep between periods every Python step and every compiled call of the period costs several times
what it costs back to back (kernels.py; a call ~0.2 us more per array argument). This call does what the controller
otherwise does in three calls and their Python glue: kernels.period_inputs_valid, kernels.task_hermite (as
Controller._interpolated calls it, on the span's samples packed once) and the state estimator's compiled FK
(hexapod_ups_kernels.ups_forward, as StateEstimator.estimate calls it through Kinematics.forward_state) with its trust
test of the warm start. The same compiled functions on the same inputs: the same numbers. Anything it does not trust
(an input check fails, the FK fails or its warm start is not trusted) the controller takes through its usual path
from the start, which says what is wrong or recovers. A module of its own: only a 6-UPS robot's process loads it
(kernels.py)."""

from __future__ import annotations

import numba

from ..kinematics.hexapod_ups_kernels import ups_forward
from ..kinematics.kernels import _I, _M, _V, UPS_FK_OK
from .kernels import FRONT_INVALID, FRONT_SIZE, FRONT_TRUSTED, FRONT_VALID, period_inputs_valid, task_hermite

_C = numba.types.Array(numba.float64, 1, "C", readonly=True)     # reshaped inside: contiguous


@numba.njit(numba.int64(_V, _V, _V, _V, _V, _V, _V, numba.float64, _V, numba.float64, _M, _V, _C, numba.float64,
                        numba.float64, _M, _I, _C, numba.float64[::1]), cache=True)
def period_front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt, wrench, wrench_age, R0, p0, span, w, h, legs, index,
                 params, out):
    """kernels.period_inputs_valid, then the desired motion between two streamed samples (kernels.task_hermite, when
    ``span`` holds the samples' [R0 (9), p0 (3), x0 (12), R1 (9), p1 (3), x1 (12)]; empty: none) and the measured
    platform state from the guess (R0, p0) by ups_forward and the estimator's test of it (StateEstimator.estimate:
    converged, |r| <= max_residual, distance to the guess <= max_step, rcond >= _MIN_RCOND; the twist is solved: six
    actuators). FRONT_INVALID (nothing computed), FRONT_VALID (the inputs are valid, the estimate is not to be used)
    or FRONT_TRUSTED: ``out`` holds [R (9), p (3), xdot (6), J (36), |r|, rcond, step, task_hermite's 24].

    params (one array: one argument): [n, wrench size, wrench timeout, contact force limit (period_inputs_valid's
    scalars), gimbal_eps, tol, max_iter, damping, magnitude limit (Kinematics.forward_arguments), max_residual,
    max_step, min_rcond (StateEstimator.front_arguments), then the reference limits' rows lower, upper, vmax, step
    (period_inputs_valid's bounds; none: no limits)]."""
    nb = (params.shape[0] - 12) // 4
    bounds = params[12:12 + 4 * nb].reshape((4, nb))
    if out.shape[0] != FRONT_SIZE or not period_inputs_valid(q, qd, q_d, qd_d, qdd_d, tau_ff, bounds, q_prev, dt,
                                                             int(params[0]), wrench, int(params[1]), wrench_age,
                                                             params[2], params[3]):
        return FRONT_INVALID
    if span.shape[0] == 48:
        task_hermite(span[:9].reshape((3, 3)), span[9:12], span[12:24], span[24:33].reshape((3, 3)), span[33:36],
                     span[36:], w, h, out[57:])
    J = out[18:54].reshape((6, 6))
    fit = out[54:]
    status, _ = ups_forward(q, qd, R0, p0, legs, index, params[4], params[5], int(params[6]), params[7], params[8],
                            out[:9].reshape((3, 3)), out[9:12], J, out[12:18], fit)
    if status == UPS_FK_OK and fit[0] <= params[9] and fit[2] <= params[10] and fit[1] >= params[11]:
        return FRONT_TRUSTED
    return FRONT_VALID
