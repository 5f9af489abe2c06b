"""The force laws' compiled calls on Jourdain's formulation (PaLiDA's compiled model, dynamics/jourdain.py): the
model's part of a law, G^(X) or the inverse dynamics at the measured state, inside the law's one call.

Each kernel here is a kernel of control/kernels.py with the model's actuator forces computed inside it by Jourdain's
kernel (``_model_forces``: what ``jourdain.Formulation.inverse_dynamics(..., check_limits=False)`` computes, the same
compiled code), and the measured wrench F_m with it where the law takes one (``_measured_wrench``). A law on another
model keeps its model's call before the kernel (``FeedforwardModel.gravity``, ``tau``). The model's call is the
largest Python-level step of a force law's period after the estimate: a Python call through the FeedforwardModel and
the formulation, and Jourdain's 13-argument kernel, ~2.9 us of a hot period; inside the law's kernel it costs its
arithmetic. The kernel is imported, not passed (a numba first-class function argument cost 90-200 us a call), so
this module is the one formulation's: Stewart's model is the generic engine's (pinocchio), which no kernel calls.

Each writes its result into the caller's ``out`` (the last argument) and returns nothing: numba boxes an array a kernel
loaded from its cache returns through a Python call (serialize._numba_unpickle of the ndarray class, ~0.5-0.9 us; one
per force law's period), and the caller's np.empty costs ~0.1 us (force._ForceLaw.fused allocates it).

numba's cache of these kernels does not track ``jourdain._id_kernel`` (another module, compiled into them): after a
change there, clear the cache (``make clean`` removes the ``__pycache__`` directories) or the kernels keep the old
code. The numbers are those of the calls they replace, operation by operation (test_controller's bitwise test).

Signatures are given as in control/kernels.py (compiled, or loaded from numba's cache, at import: this module is
imported by a law on Jourdain's model only, so no other robot's start-up loads it).
"""

from __future__ import annotations

import math

import numpy as np

from ..dynamics.jourdain import _KERNEL
from ..errors import MAGNITUDE_LIMIT
from .kernels import force_cascade, force_outer, impedance_terms, sensor_wrench, task_pd_distribute

try:  # compiled when numba is available (it is in requirements.txt); the same functions run as Python otherwise
    import numba
except ImportError:  # pragma: no cover
    numba = None

_REST = np.zeros(6)             # the twist and acceleration of G^(X)
_REST.setflags(write=False)


def _model_forces(p, R, twist, accel, friction, geo, prm):
    """Q_a(X, xd, xdd) of Jourdain's kernel as ``Formulation.inverse_dynamics(check_limits=False)`` (geo, prm:
    ``Formulation.kernel_model``); twist = accel = 0 without friction: G^(X). A failed kernel (pose out of reach,
    forward singularity) raises ValueError: the caller's Python path then says what is wrong."""
    out = np.empty(6)
    if _KERNEL(p, R, twist, accel, geo, -2.0, prm[:40], prm[40:43], prm[43:], friction, 0.0, True, out) != 0:
        raise ValueError("jourdain: the model's kernel failed")
    return out


def _actuator_wrench(J, tau, tau_0):
    """J^T (tau - tau_0): the wrench of actuator forces beyond the model's (numpy's product: the same numbers)."""
    n = tau.shape[0]
    d = np.empty(n)
    for i in range(n):
        d[i] = tau[i] - tau_0[i]
    return np.dot(np.ascontiguousarray(J).T, d)      # BLAS on J^T, as numpy's J.T @ d


def _measured_wrench(R, J, tau_g, w, point, tau_m):
    """F_m: the sensor's (``w`` 6 values at ``point``: ``sensor_wrench``), or from the actuator forces (``tau_m``,
    one per actuator) J^T (tau_m - G^) (force._ForceLaw.measured_wrench); neither: empty."""
    if w.shape[0] == 6:
        return sensor_wrench(R, w, point)
    if tau_m.shape[0] == 0:
        return np.empty(0)
    return _actuator_wrench(J, tau_m, tau_g)


def pd_distribute(R_d, p_d, R, p, twist_d, twist, kp, kd, J, w, point, tau_m, kf, model_twist, model_accel,
                  friction, geo, prm, out):
    """``kernels.task_pd_distribute`` with tau_0 = Q_a(X, model_twist, model_accel) (``_model_forces``: G^(X) at
    rest without friction; impedance_no_force's inverse dynamics at (X, xd, xdd_d)) and F_m from ``w``, ``point`` or
    ``tau_m`` (``_measured_wrench``, tau_0 as G^: at rest only; all empty: no F_m)."""
    tau_0 = _model_forces(p, R, model_twist, model_accel, friction, geo, prm)
    f_m = _measured_wrench(R, J, tau_0, w, point, tau_m)
    out[:] = task_pd_distribute(R_d, p_d, R, p, twist_d, twist, kp, kd, J, f_m, kf, tau_0)


def cascade(f_d, w, point, tau_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d, R, p, twist, kp, kd, J, geo,
            prm, out):
    """``kernels.force_cascade`` with G^(X) and F_m (``w``, ``point`` or ``tau_m``: ``_measured_wrench``) inside."""
    tau_g = _model_forces(p, R, _REST, _REST, False, geo, prm)
    f_m = _measured_wrench(R, J, tau_g, w, point, tau_m)
    out[:] = force_cascade(f_d, f_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d, R, p, twist, kp, kd, J,
                           tau_g)


def outer_joint(f_d, tau_m, s, offset, dt, ki, kf, max_offset, R_d, p_d, twist_d, R, p, J, twist, last_twist, h,
                friction, geo, prm, out):
    """Direct force control's outer loop on the actuator forces (force.DirectForceJointSpace, Fig. 30) with its model
    parts in one call: G^(X), F_m = J^T (tau_m - G^), ``kernels.force_outer``, and the wrench the contact state
    machine watches, F_c = J^T (tau_m - tau_id(X, xd, xdd^)), xdd^ = (xd - ``last_twist``) / h (h > 0; else F_m), as
    |S F_c| (numpy's norm: sqrt of the dot product). Writes [force_outer's 26, G^ (6), |S F_c|] (33) into ``out``. An
    xdd^ beyond errors.MAGNITUDE_LIMIT (the model's input check) raises ValueError, as a failed model kernel."""
    if out.shape[0] != 33:
        raise ValueError("outer_joint: out needs 33 values")
    tau_g = _model_forces(p, R, _REST, _REST, False, geo, prm)
    out[:26] = force_outer(f_d, _actuator_wrench(J, tau_m, tau_g), s, offset, dt, ki, kf, max_offset, R_d, p_d,
                           twist_d)
    out[26:32] = tau_g
    if h > 0:
        xdd = np.empty(6)
        size = 0.0
        for i in range(6):
            xdd[i] = (twist[i] - last_twist[i]) / h
            size += abs(xdd[i])
        if not size <= MAGNITUDE_LIMIT:
            raise ValueError("outer_joint: the acceleration is beyond the model's input limit")
        f_c = _actuator_wrench(J, tau_m, _model_forces(p, R, twist, xdd, friction, geo, prm))
        for i in range(6):
            f_c[i] = s[i] * f_c[i]
        out[32] = math.sqrt(np.dot(f_c, f_c))
    else:
        out[32] = out[24]


def impedance(R_d, p_d, R, p, twist_d, twist, k_d, d_d, xdd_d, w, point, m_d, J, friction, geo, prm, out):
    """Impedance control's tau (force.Impedance) in one call: F_m (the sensor's), ``kernels.impedance_terms``' a and
    J^-T F_m, the model's inverse dynamics at (X, xd, a) plus J^-T F_m."""
    terms = impedance_terms(R_d, p_d, R, p, twist_d, twist, k_d, d_d, xdd_d, sensor_wrench(R, w, point), m_d, J)
    tau = _model_forces(p, R, twist, terms[:6], friction, geo, prm)
    if out.shape[0] != 6:
        raise ValueError("impedance: out needs 6 values")
    for i in range(6):
        out[i] = tau[i] + terms[6 + i]


def joint_pd(kp, kd, q_c, qd_c, q, qd, tau_m, kf, p, R, geo, prm, out):
    """The joint position loop with G^(X) (force._ForceLaw.joint_pd with tau_0 = G^): tau_a = Kp_q (q_c - q) +
    Kd_q (qd_c - qd), then G^ + tau_a; with the actuator forces ``tau_m`` (inner_force_joint_space, Fig. 33)
    tau_a + kf (tau_a - (tau_m - G^)) + G^. Element by element as the numpy expressions."""
    n = q.shape[0]
    if not (kp.shape[0] == kd.shape[0] == q_c.shape[0] == qd_c.shape[0] == qd.shape[0] == out.shape[0] == n
            and tau_m.shape[0] in (0, n)):
        raise ValueError("joint_pd: the gains and vectors differ in size")
    tau_g = _model_forces(p, R, _REST, _REST, False, geo, prm)
    for i in range(n):
        a = kp[i] * (q_c[i] - q[i]) + kd[i] * (qd_c[i] - qd[i])
        if tau_m.shape[0] == n:
            out[i] = (a + kf * (a - (tau_m[i] - tau_g[i]))) + tau_g[i]
        else:
            out[i] = tau_g[i] + a


if numba is not None:
    _A = numba.types.Array(numba.float64, 1, "A", readonly=True)    # as control/kernels.py
    _A2 = numba.types.Array(numba.float64, 2, "A", readonly=True)
    _OUT = numba.float64[::1]
    _f, _b = numba.float64, numba.boolean
    _model_forces = numba.njit(cache=True)(_model_forces)
    _actuator_wrench = numba.njit(cache=True)(_actuator_wrench)
    _measured_wrench = numba.njit(cache=True)(_measured_wrench)
    _v = numba.void
    pd_distribute = numba.njit(_v(_A2, _A, _A2, _A, _A, _A, _A, _A, _A2, _A, _A, _A, _f, _A, _A, _b, _A2, _A, _OUT),
                               cache=True)(pd_distribute)
    cascade = numba.njit(_v(_A, _A, _A, _A, _A, _A, _f, _A, _A, _f, _A2, _A, _A, _A2, _A, _A, _A, _A, _A2, _A2, _A,
                            _OUT), cache=True)(cascade)
    outer_joint = numba.njit(_v(_A, _A, _A, _A, _f, _A, _A, _f, _A2, _A, _A, _A2, _A, _A2, _A, _A, _f, _b, _A2, _A,
                                _OUT), cache=True)(outer_joint)
    impedance = numba.njit(_v(_A2, _A, _A2, _A, _A, _A, _A, _A, _A, _A, _A, _A, _A2, _b, _A2, _A, _OUT),
                           cache=True)(impedance)
    joint_pd = numba.njit(_v(_A, _A, _A, _A, _A, _A, _A, _f, _A, _A2, _A2, _A, _OUT), cache=True)(joint_pd)
