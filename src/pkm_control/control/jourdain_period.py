"""A force law's whole period in one compiled call, on a 6-UPS robot with Jourdain's compiled model (PaLiDA): the front
of the period (hexapod_ups_period.period_front: the input checks, the desired motion between two streamed samples,
the measured state estimate), the law's kernel (control/jourdain_kernels.py) on the states the front wrote, and the
force limits (kernels.saturate).

After the loop's sleep between periods every compiled call and every Python step of a period costs several times what
it costs back to back (hexapod_ups_period.py; docs/force-control.md). The front and the law were two compiled calls
with the Python between them (the states as Pose objects, the law's ``evaluate``, its kernel's arguments, the limits'
call); here they are one, and the law keeps in Python only what is its state: its set-point, integrators and contact
state machine, before the call (``period_arguments``) and after it (``period_done``; force.py, laws.py).

The call computes the law only where the front trusts the estimate and interpolated the desired motion (the span of
the two streamed samples was prepared: Controller). Anything else (the front's other answers, a period on a streamed
sample, a law's kernel that raises: the model's pose out of reach, J singular; a command that is not finite) the
controller takes through its usual path from the start, which says what is wrong or recovers. The same compiled
functions on the same inputs: the same numbers (test_controller's bitwise test).

Each function takes period_front's arguments but ``out``, the law's (those that change from period to period first,
then the fixed ones: the law's ``period_call``), the force limits, then ``out``: [period_front's FRONT_SIZE, the law
kernel's output, the saturated command (6)] and ``sat`` (per actuator: at its limit). It returns period_front's
answer, or PERIOD_DONE / PERIOD_SATURATED (the command written, finite; some actuator at its limit) /
PERIOD_NOT_FINITE. The functions share their first and last steps (``_front``, ``_command``) and each names its law's
kernel: a numba first-class function argument costs 90-200 us a call (jourdain_kernels.py), so one function cannot
take the kernel. A module of its own: only a process with both (a 6-UPS robot on Jourdain's model) loads it.
"""

from __future__ import annotations

import numba
import numpy as np

from ..kinematics.hexapod_ups_kernels import UPS_OK, ups_motion
from ..kinematics.kernels import _I, _M, _V
from .hexapod_ups_period import period_front
from .jourdain_kernels import cascade, impedance, joint_pd, outer_joint, pd_distribute
from .kernels import (FRONT_SIZE, FRONT_TRUSTED, PERIOD_DONE, PERIOD_NOT_FINITE, PERIOD_SATURATED, _A, _A2, _OUT, pd,
                      saturate, sensor_admittance)

_C = numba.types.Array(numba.float64, 1, "C", readonly=True)
_f, _b = numba.float64, numba.boolean
#: period_front's arguments but ``out``
_FRONT = (_V, _V, _V, _V, _V, _V, _V, _f, _V, _f, _M, _V, _C, _f, _f, _M, _I, _C)
_SAT = numba.boolean[::1]


@numba.njit(cache=True)
def _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt, wrench, wrench_age, R0, p0, span, w, h, legs, index, params,
           out):
    """period_front into out[:FRONT_SIZE]; True where the law is to be computed: the estimate trusted and the desired
    motion known (``span`` given: interpolated between its samples, or with h = 0 its second sample's as it is, in
    task_hermite's order), with ``status`` period_front's answer."""
    on_sample = span.shape[0] == 48 and h == 0.0
    status = period_front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt, wrench, wrench_age, R0, p0,
                          span[:0] if on_sample else span, w, h, legs, index, params, out[:FRONT_SIZE])
    if status != FRONT_TRUSTED or span.shape[0] != 48:
        return False, status
    if on_sample:
        out[57:60] = span[33:36]
        out[60:69] = span[24:33]
        out[69:81] = span[36:48]
    return True, status


@numba.njit(cache=True)
def _command(tau, limits, out, sat):
    """The law's ``tau`` within the force limits into the last values of ``out`` (ForceLimits.saturate's kernel) and
    the period's answer."""
    n = tau.shape[0]
    any_sat, finite = saturate(tau, limits, out[out.shape[0] - n:], sat)
    return PERIOD_NOT_FINITE if not finite else PERIOD_SATURATED if any_sat else PERIOD_DONE


@numba.njit(cache=True)
def _actuated_motion(R_c, p_c, twist_c, legs, iall, pick, rows, ik, q_c, qd_c):
    """q_c = IK(X_c) and qd_c = J(X_c) xd_c of the actuated joints (hexapod_ups.actuated_and_jacobian: ups_motion
    without the limits, the actuated rows of J; then numpy's J_c @ xd_c); ``pick``, ``rows``, ``ik``: the
    kinematics' actuated_arguments. ValueError where ups_motion does not solve (the usual path then names it)."""
    none, J = np.empty(0), np.empty((legs.shape[0], 6))
    q = np.empty(int(ik[2]))
    status, _, _, _ = ups_motion(R_c, p_c, none, none, legs, iall, ik[0], ik[1], False, False, False, q, none, none,
                                 J, np.zeros((0, 6)), np.zeros(4))
    if status != UPS_OK:
        raise ValueError("the inverse kinematics of the commanded pose did not solve")
    J_c = np.empty((rows.shape[0], 6))
    for i in range(rows.shape[0]):
        q_c[i] = q[pick[i]]
        for j in range(6):
            J_c[i, j] = J[rows[i], j]
    qd_c[:] = np.dot(J_c, twist_c)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _A, _A, _A, _f, _A, _A, _f, _A, _A, _A2, _A, _A, _OUT, _SAT), cache=True)
def cascade_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h, legs,
                   index, params, f_d, w_s, point, tau_m, s, offset, dt, ki, kf, max_offset, kp, kd, geo, prm, limits,
                   out, sat):
    """Direct force control's period (force.DirectForce, Figs. 28, 29): jourdain_kernels.cascade,
    out[FRONT_SIZE:][:32]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 32]
    cascade(f_d, w_s, point, tau_m, s, offset, dt, ki, kf, max_offset, out[60:69].reshape((3, 3)), out[57:60],
            out[69:75], out[:9].reshape((3, 3)), out[9:12], out[12:18], kp, kd, out[18:54].reshape((6, 6)), geo, prm,
            law)
    return _command(law[26:], limits, out, sat)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _A, _A, _f, _b, _b, _A2, _A, _A, _OUT, _SAT), cache=True)
def pd_distribute_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h, legs,
                         index, params, w_s, point, tau_m, kp, kd, kf, inverse_dynamics, friction, geo, prm, limits,
                         out, sat):
    """The task PD distributed with the model's forces (jourdain_kernels.pd_distribute; laws.TaskPDGravity,
    force.InnerForce, force.ImpedanceNoForce): G^(X), or with ``inverse_dynamics`` the model's at the measured twist
    and the desired acceleration; out[FRONT_SIZE:][:6]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 6]
    rest = np.zeros(6)
    pd_distribute(out[60:69].reshape((3, 3)), out[57:60], out[:9].reshape((3, 3)), out[9:12], out[69:75], out[12:18],
                  kp, kd, out[18:54].reshape((6, 6)), w_s, point, tau_m, kf,
                  out[12:18] if inverse_dynamics else rest, out[75:81] if inverse_dynamics else rest, friction, geo,
                  prm, law)
    return _command(law, limits, out, sat)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _A, _A, _b, _A2, _A, _A, _OUT, _SAT), cache=True)
def impedance_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h, legs,
                     index, params, w_s, point, k_d, d_d, m_d, friction, geo, prm, limits, out, sat):
    """Impedance control's period (force.Impedance, Fig. 36): jourdain_kernels.impedance, out[FRONT_SIZE:][:6]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 6]
    impedance(out[60:69].reshape((3, 3)), out[57:60], out[:9].reshape((3, 3)), out[9:12], out[69:75], out[12:18], k_d,
              d_d, out[75:81], w_s, point, m_d, out[18:54].reshape((6, 6)), friction, geo, prm, law)
    return _command(law, limits, out, sat)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _f, _A2, _A, _A, _OUT, _SAT), cache=True)
def joint_pd_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h, legs,
                    index, params, tau_m, kp, kd, kf, geo, prm, limits, out, sat):
    """The joint loops with G^(X) on the references (force.InnerForceJointSpace, Fig. 33): jourdain_kernels.joint_pd,
    out[FRONT_SIZE:][:6]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 6]
    joint_pd(kp, kd, q_d, qd_d, q, qd, tau_m, kf, out[9:12], out[:9].reshape((3, 3)), geo, prm, law)
    return _command(law, limits, out, sat)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _A, _A, _f, _f, _A, _A, _f, _b, _A, _A, _M, _I, _I, _I, _A, _A2, _A, _A,
                        _OUT, _SAT), cache=True)
def joint_space_cascade_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                               legs, index, params, f_d, tau_m, s, offset, last_twist, dt, h_twist, ki, kf, max_offset,
                               friction, kp_q, kd_q, legs_ik, iall, pick, rows, ik, geo, prm, limits, out, sat):
    """Direct force control in the joint space on the actuator forces (force.DirectForceJointSpace, Fig. 30):
    jourdain_kernels.outer_joint, X_c into the joints (q_c, qd_c: _actuated_motion) and the joint PD with G^(X)
    (kernels.pd, as _ForceLaw.joint_pd); out[FRONT_SIZE:] [outer_joint's 33, q_c, qd_c, tau]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 51]
    outer_joint(f_d, tau_m, s, offset, dt, ki, kf, max_offset, out[60:69].reshape((3, 3)), out[57:60], out[69:75],
                out[:9].reshape((3, 3)), out[9:12], out[18:54].reshape((6, 6)), out[12:18], last_twist, h_twist,
                friction, geo, prm, law[:33])
    _actuated_motion(law[9:18].reshape((3, 3)), law[6:9], law[18:24], legs_ik, iall, pick, rows, ik, law[33:39],
                     law[39:45])
    pd(kp_q, kd_q, law[33:39], law[39:45], q, qd, law[26:32], law[45:51])
    return _command(law[45:51], limits, out, sat)


@numba.njit(numba.int64(*_FRONT, _A, _A, _A, _A, _f, _A, _A, _A, _A, _A, _M, _I, _I, _I, _A, _A2, _A, _A, _OUT, _SAT),
            cache=True)
def admittance_period(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h, legs,
                      index, params, w_s, point, dx, dxd, dt, m_d, d_d, k_d, kp_q, kd_q, legs_ik, iall, pick, rows, ik,
                      geo, prm, limits, out, sat):
    """Admittance control on the sensor's wrench (force.Admittance): kernels.sensor_admittance, X_c = exp(dX) X_d
    (task_space.retract's product) into the joints (q_c, qd_c: _actuated_motion) and the joint PD with G^(X)
    (jourdain_kernels.joint_pd); out[FRONT_SIZE:] [sensor_admittance's 30, q_c, qd_c, tau]."""
    ready, status = _front(q, qd, q_d, qd_d, qdd_d, tau_ff, q_prev, dt_ref, wrench, wrench_age, R0, p0, span, w, h,
                           legs, index, params, out)
    if not ready:
        return status
    law = out[FRONT_SIZE:FRONT_SIZE + 48]
    sensor_admittance(out[:9].reshape((3, 3)), w_s, point, dx, dxd, dt, m_d, d_d, k_d, out[69:75], out[57:60],
                      law[:30])
    _actuated_motion(np.dot(law[21:30].reshape((3, 3)), out[60:69].reshape((3, 3))), law[18:21], law[12:18],
                     legs_ik, iall, pick, rows, ik, law[30:36], law[36:42])
    joint_pd(kp_q, kd_q, law[30:36], law[36:42], q, qd, np.empty(0), 0.0, out[9:12], out[:9].reshape((3, 3)), geo,
             prm, law[42:48])
    return _command(law[42:48], limits, out, sat)
