"""The controller core: one object per running controller, ``update(t, measured, references, feedforward)``.

What a ros2_control controller's ``update`` is, for the laws of laws.py, without ROS. It holds
the state a law needs between periods (the last platform estimate that warm-starts the state
estimator, the safe behaviour and its latched target, counters), checks its inputs every period
and never returns a NaN command.

Inputs of one period at time t (s, the loop's clock: sim time in lockstep):

* ``measured``: the hardware's JointMeasurement of the actuated joints (or None before the first);
  stale when ``t - measured.time > state_timeout``.
* ``references``: the desired actuated motion at t (``References``), or None when the stream has
  no sample for t (it ran dry longer than its timeout: the loop decides, see loop.py). With
  ``reference_limits`` a reference outside the joint ranges, above the velocity limits or jumping
  farther since the last accepted one than the velocity limit allows is refused like a missing one.
* ``feedforward``: the computed force at t, or None; needed only by laws that require it.

Every array holds one value per actuated joint; one of another size is refused like a non-finite one.

The law declares what else it needs (``law.requires``): the measured platform pose and twist come
from the state estimator (estimator.py), warm-started from the last estimate; the desired platform pose and
twist (laws on the desired trajectory's matrices, task-space errors) from the same estimator on the references
q_d, qd_d, warm-started from the last desired pose. Between two streamed samples (the loop interpolates the
references at a stream rate below the control rate, References.between) a spatial task's desired motion is
interpolated from the two samples' own instead (their FK, xddot_d = J^-1 (qdd_d - Jdot xdot_d), each sample's once:
kernels.task_hermite), within ~1e-11 of the FK of the interpolated references and as close to the exact motion
(test_controller); on a sample, and at the full rate, it is that FK. A sample's motion and the span's are computed by
the first period between the two samples, or ahead of it between periods (``prepare``, ControlLoop.prepare: the
real-time node's background), from the same warm start in the same order: the same numbers. Laws with a state of
their own (adaptive IDC) get the time t.

The period in one compiled call: on a 6-UPS robot the checks, the measured estimate and the desired motion between two
samples are one call (hexapod_ups_period.period_front); on PaLiDA (a 6-UPS robot on Jourdain's compiled model) a force
law's kernel and the force limits are in it too (jourdain_period.py, ControlLaw.period_call: the law's state is kept
in Python before and after the call), in every period whose span's motion is known (the last period's span, a
prepared one, or on its second sample). Anything the call does not take or trust the usual path recomputes from the
start: bitwise the same commands (test_controller). ``rehearse`` runs the last such call again into scratch arrays:
the real-time runner's warm-up just before the next period (realtime.PeriodicRunner).

Safe behaviour (safety.py): when an input is missing, stale or not finite, the estimator or the law
fails, or the law's output is not finite, the controller engages the configured behaviour
('hold': gravity compensation at the pose where it engaged + PD to the actuated positions there;
'zero': no force). The target is latched at entry and kept while the behaviour is active; the
controller leaves it at the first period whose inputs are all valid again. Every command goes
through the force limits; a command that still is not finite is replaced by zero force.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError, PkmError, all_finite
from ..kinematics.task_space import Pose
from . import kernels
from .kernels import FRONT_INVALID, FRONT_SIZE, FRONT_TRUSTED, PERIOD_DONE, PERIOD_SATURATED
from .feedforward import task_rates
from .force import ActuatorForces, WrenchMeasurement, _sensor_arrays
from .laws import _NO_VALUES, DESIRED_POSE, FEEDFORWARD, MEASURED_POSE, WRENCH, _Desired
from .safety import ForceLimits, ReferenceLimits, SafeBehaviour

#: Command.mode while the law runs
CONTROL = "control"
#: what a law or the estimator may raise on absurd input (the project's errors, and numerical ones that
#: numpy/math raise before a check could: overflow in a Newton step, a singular solve)
COMPUTE_ERRORS = (PkmError, ArithmeticError, ValueError, np.linalg.LinAlgError)


class References(NamedTuple):
    """The desired actuated-joint motion at one instant (model order)."""

    q: np.ndarray
    qd: np.ndarray
    qdd: np.ndarray
    force: object = None         # force.ForceReference (F_d, force-controlled directions) for the force laws, or None
    between: object = None       # (row before, row after, w, h): the streamed samples [q, qd, qdd] the loop
                                 # interpolated these between (SampleBuffer.between), or None (on a sample)
    sample: object = None        # on a streamed sample: its row (these are its views), or None


class Command(NamedTuple):
    """What the controller commands for one period."""

    tau: np.ndarray              # actuator forces to write (after the limits; finite)
    saturated: np.ndarray        # bool per actuator: the law asked for more than the limit
    mode: str                    # 'control', or the safe behaviour ('hold' | 'zero')
    reason: str = ""             # why the safe behaviour is active
    engaged: bool = False        # the safe behaviour engaged in this period


class Controller:
    """The control law with its input checks, watchdog and safe behaviour (module docstring).

    law: a law of laws.py; limits: ForceLimits; safe: SafeBehaviour; estimator: a StateEstimator
    (needed for 'hold' and for laws that require the measured pose); initial_pose: the first warm
    start of the estimator; state_timeout: s. wrench_watch: the force laws' (force.py, law.requires WRENCH) checks
    of the measured wrench (JointMeasurement.sensors): a missing, stale or excessive one engages the safe behaviour.
    """

    def __init__(self, law, limits: ForceLimits, safe: SafeBehaviour, estimator=None,
                 initial_pose: Pose | None = None, state_timeout: float = 0.02,
                 reference_limits: ReferenceLimits | None = None, wrench_watch=None):
        if not (np.isfinite(state_timeout) and state_timeout > 0):
            raise InvalidInputError(f"state_timeout must be > 0 s, got {state_timeout}")
        needs_estimator = bool({MEASURED_POSE, DESIRED_POSE} & law.requires) or safe.mode == "hold"
        if needs_estimator and (estimator is None or initial_pose is None):
            raise InvalidInputError(f"law '{law.name}' with safe behaviour '{safe.mode}' needs a state estimator "
                                    "and an initial pose")
        if WRENCH in law.requires and wrench_watch is None:
            raise InvalidInputError(f"law '{law.name}' uses the measured wrench: it needs a wrench_watch "
                                    "(force.WrenchWatch)")
        law.check_size(len(limits.limits))
        self.law = law
        self.wrench_watch = wrench_watch if WRENCH in law.requires else None
        # the wrench watch's checks as kernels.period_inputs_valid takes them: the wrench from the sensor, its size
        # (0: no watch), its timeout, the contact force limit (the actuator forces: their age is the measurement's,
        # no limit)
        watch = self.wrench_watch
        self._wrench_check = (False, 0, 0.0, np.inf) if watch is None else \
            (True, 6, watch.timeout, watch.contact_force_limit) if watch.source == "sensor" else \
            (False, len(limits.limits), np.inf, np.inf)
        self.limits = limits
        self.reference_limits = reference_limits
        # the reference limits as kernels.period_inputs_valid takes them: the rows lower, upper, velocity, largest step
        # rate (no columns: none); the tolerances of ReferenceLimits.problem included
        self._limit_arrays = np.empty((4, 0)) if reference_limits is None else np.array(reference_limits._bounds,
                                                                                         float)
        self._last_ref = None               # (t, q) of the last accepted reference: the jump check
        self.safe = safe
        self.estimator = estimator
        self.state_timeout = float(state_timeout)
        self.n = len(limits.limits)
        self._shape = (self.n,)
        self.needs_feedforward = FEEDFORWARD in law.requires
        self.needs_pose = MEASURED_POSE in law.requires
        self.needs_desired = DESIRED_POSE in law.requires
        # the laws on the desired motion take J at the measured and desired poses from the estimates (laws._Desired)
        self._share_jacobians = isinstance(law, _Desired)
        # a law on the measured pose with the compiled 6-UPS estimate (StateEstimator.front_arguments): the input
        # checks and the estimate in one compiled call (hexapod_ups_period.period_front: its function, legs, index
        # and scalars, the reference limits' rows after them), else None
        self._front = None
        front = estimator.front_arguments if self.needs_pose and estimator is not None else None
        if front is not None:
            from .hexapod_ups_period import period_front     # a 6-UPS robot's process only (its module docstring)
            legs, index, scalars = front
            sensor, size, timeout, limit = self._wrench_check
            params = np.concatenate(((self.n, size, timeout, limit), scalars, self._limit_arrays.ravel()))
            params.setflags(write=False)
            self._front = (period_front, legs, index, params)
        # the law's whole period in one compiled call with that front (ControlLaw.period_call, control/
        # jourdain_period.py): its function, the law's fixed arguments and the force limits, the size of its output;
        # else None
        call = None if self._front is None else law.period_call()
        self._period = None if call is None else (call[0], call[2] + (limits.limits,), FRONT_SIZE + call[1] + self.n)
        # (the function, its arguments) of the last period's call that commanded, for ``rehearse``; its scratch output
        self._rehearsal = None
        self._scratch = None if call is None else (np.empty(self._period[2]), np.empty(self.n, bool))
        self.pose = initial_pose            # last platform estimate (warm start)
        self.pose_d = initial_pose          # last desired pose from the references (warm start of its FK)
        # the desired motion of the last two reference samples whose FK ran: [(q_d, qd_d) as lists, (X_d, xdot_d),
        # J(X_d), [xdot_d, xddot_d] or None, the streamed row or None], the newest last
        self._desired = []
        # (row before, row after, their entries, with period_front: their motion packed as it takes it) of the last
        # interpolated period
        self._span = (None, None, None, None)
        # the desired motion prepared between periods (prepare) for the streamed samples the next periods take, in the
        # order they take them: [(warm start, row, entry or None: its FK failed)], each from the pose before it (the
        # first from pose_d); and the spans prepared, as self._span holds the last period's
        self._ahead = []
        self._spans = []
        # between two streamed samples the desired motion is interpolated from theirs (a spatial task: kernels.
        # task_hermite), not the FK of the interpolated references (module docstring)
        self._interpolates = self.needs_desired and estimator is not None and estimator.kin.task.kind == "spatial"
        self._square = estimator is not None and estimator.kin.model.n_actuated == estimator.kin.task.dim
        self.target = None                  # latched hold target while the safe behaviour is active
        self.mode = CONTROL
        self.reason = ""
        self.last_tau = np.zeros(self.n)
        self.safe_entries = 0
        self.safe_periods = 0               # periods commanded by the safe behaviour
        self.saturations = 0

    def reset_counters(self) -> None:
        """Safe-behaviour entries and periods, saturated periods: counted from now on."""
        self.safe_entries = self.safe_periods = self.saturations = 0

    # ------------------------------------------------------------------ state estimate
    def estimate(self, measured, joints: bool = False):
        """The state estimator on a measurement, warm-started from (and updating) the last estimate."""
        est = self.estimator.estimate(measured.position, measured.velocity, self.pose, joints=joints)
        self.pose = est.pose
        return est

    # ------------------------------------------------------------------ the period
    def update(self, t: float, measured, references: References | None, feedforward=None) -> Command:
        if self._period is not None:
            command = self._whole_period(t, measured, references, feedforward)
            if command is not None:
                return command
        reason, inputs, wrench, state = self._checked_inputs(t, measured, references, feedforward)
        tau = None
        if not reason:
            try:
                pose = twist = J = desired = J_d = accel_d = None
                if self.needs_pose:         # self.estimate(measured), without its call, unless the checks gave it
                    if state is None:
                        est = self.estimator.estimate(inputs[3], inputs[4], self.pose)
                        pose, twist, J = est.pose, est.twist, est.jacobian
                    else:                   # with the desired motion between two samples, or None
                        pose, twist, J, desired, accel_d = state
                    self.pose = pose
                if self.needs_desired:
                    if desired is None and references.between is not None and self._interpolates:
                        desired, accel_d = self._interpolated(*references.between)
                    if desired is None:          # X_d, xdot_d: the estimator's FK of the references, once a sample
                        last = self._desired[-1] if self._desired else None
                        key = (inputs[0].tolist(), inputs[1].tolist())         # floats: no numpy call
                        if last is not None and last[0] == key:
                            desired, J_d = last[1], last[2]
                        else:
                            desired, J_d = self._sample(key, inputs[0], inputs[1])[1:3]
                if self._share_jacobians:
                    self.law.known_jacobians = (() if pose is None else ((pose, J),)) + \
                        (() if J_d is None else ((desired[0], J_d),))
                    self.law.known_acceleration = None if accel_d is None else (desired[0], accel_d)
                if wrench is None:               # inputs checked: the law's formula alone
                    tau = self.law.evaluate(*inputs, pose, twist, desired, t)
                else:
                    tau = self.law.evaluate(*inputs, pose, twist, desired, t, wrench=wrench,
                                            force=references.force)
                limited = self.limits.saturate(tau)
                if not limited[3]:
                    reason = "the control law gave a non-finite command"
            except COMPUTE_ERRORS as exc:
                reason = f"{type(exc).__name__}: {exc}"
        engaged = False
        if reason:
            engaged = self.mode == CONTROL
            self.safe_periods += 1
            limited = self.limits.saturate(self._safe_command(measured, reason))
        elif self.mode != CONTROL:
            self.mode, self.reason, self.target = CONTROL, "", None
        tau, sat, any_sat, _ = limited
        if any_sat:
            self.saturations += 1
        if reason and not all_finite(tau):        # the law's force was checked above; a safe command may not be
            tau = np.zeros(self.n)
        self.last_tau = tau
        return Command(tau, sat, self.mode, self.reason, engaged)

    def _whole_period(self, t, measured, references, feedforward):
        """The period in the law's one compiled call (``self._period``: the checks, the estimate, the desired motion
        of the last period's span or a prepared one (``prepare``): between its two samples or on the last span's
        second, the law and the force limits), or None: the usual path decides (the first period of a span not
        prepared, an input the call does not take or trust, a law's kernel that fails or a command that is not
        finite: the usual path recomputes the period and says what is wrong)."""
        if measured is None or references is None or not t - measured.time <= self.state_timeout:
            return None
        between, span, k = references.between, self._span, 0
        if between is None:         # on a sample: the last span's second
            if span[1] is None or references.sample is not span[1]:
                return None
            w, h = 1.0, 0.0
        else:
            if not (span[0] is between[0] and span[1] is between[1]):
                span, k = self._ready_span(between[0], between[1])      # prepared between periods
                if span is None:
                    return None
            w, h = between[2], between[3]
        wrench, values, wrench_age = self._wrench_values(t, measured)
        if self._wrench_check[0]:         # the sensor's arrays as the kernels take them (else the usual path)
            arrays = _sensor_arrays(wrench) if type(wrench) is WrenchMeasurement else None
            if arrays is None:
                return None
            arrays = (*arrays, _NO_VALUES)
        else:
            arrays = (_NO_VALUES, _NO_VALUES, values)
        force = references.force
        law = self.law
        arguments = law.period_arguments(t, force, *arrays)
        if arguments is None:
            return None
        function, fixed, size = self._period
        out, sat = np.empty(size), np.empty(self.n, bool)
        arguments = (*self._front_arguments(t, measured, references, feedforward, values, wrench_age, span[3], w, h),
                     *arguments, *fixed)
        try:
            answer = function(*arguments, out, sat)
        except (TypeError, *COMPUTE_ERRORS):
            return None
        if answer != PERIOD_DONE and answer != PERIOD_SATURATED:
            return None
        self._rehearsal = (function, arguments)
        pose = Pose(out[9:12], out[:9].reshape(3, 3))
        if not law.period_done(t, pose, out[12:18], out[FRONT_SIZE:], force):
            return None
        if span is not self._span:          # the period takes the prepared span
            self._take(k)
            self._span = span
        self.pose = pose
        if self.reference_limits is not None:
            self._last_ref = (t, references.q)
        if self.mode != CONTROL:
            self.mode, self.reason, self.target = CONTROL, "", None
        if answer == PERIOD_SATURATED:
            self.saturations += 1
        tau = out[size - self.n:]
        self.last_tau = tau
        return Command(tau, sat, CONTROL, "", False)

    def rehearse(self) -> None:
        """The last period's compiled call (``_whole_period``) once more on its inputs, into scratch arrays: nothing
        of the controller changes. Just before the next period starts (realtime.PeriodicRunner's ``warm``, in the wait
        it spins) it brings the call's code and data back into the CPU's caches, which the sleep between the periods
        emptied: the next period's call then costs what it costs back to back (docs/force-control.md). The inputs are
        those of a call that commanded (the same steps again: its duration); none yet: nothing."""
        rehearsal = self._rehearsal
        if rehearsal is not None:
            try:
                rehearsal[0](*rehearsal[1], *self._scratch)
            except (TypeError, *COMPUTE_ERRORS):        # the same inputs again: not expected; never into the loop
                self._rehearsal = None

    def _wrench_values(self, t, measured):
        """(the sensor's sample or None, the values kernels.period_inputs_valid checks: the sensor's wrench, the
        measured actuator forces, or none, their age)."""
        sensor, size = self._wrench_check[:2]
        if sensor:                    # the sensor's sample (WrenchWatch.check: a WrenchMeasurement)
            wrench = measured.sensors.get(WRENCH)
            if type(wrench) is WrenchMeasurement:
                return wrench, wrench.wrench, t - wrench.time
            return wrench, _NO_VALUES, 0.0
        return None, measured.effort if size else _NO_VALUES, 0.0

    def _front_arguments(self, t, measured, references, feedforward, values, wrench_age, span, w, h):
        """period_front's arguments but ``out``; ``span``, ``w``, ``h``: the packed span whose samples' motion is
        interpolated in the call (``_interpolated``) and where (empty: none)."""
        last, guess, front = self._last_ref, self.pose, self._front
        return (measured.position, measured.velocity, references.q, references.qd, references.qdd,
                feedforward if self.needs_feedforward else _NO_VALUES,
                _NO_VALUES if last is None else last[1], 0.0 if last is None else t - last[0],
                values, wrench_age, guess.rotation, guess.position, span, w, h, front[1], front[2], front[3])

    def _sample(self, key, q_d, qd_d, row=None):
        """The desired motion of one reference sample, [key, (X_d, xdot_d), J(X_d), [xdot_d, xddot_d] or None, row]:
        the estimator's FK of (q_d, qd_d), warm-started from the last desired pose; kept as the newest of the last two.
        ``row``: the streamed sample [q, qd, qdd] (interpolation, which finds the entry by it), with xddot_d =
        J^-1 (qdd_d - Jdot xdot_d) (task_rates)."""
        est_d = self.estimator.estimate(q_d, qd_d, self.pose_d)
        self.pose_d = est_d.pose
        entry = self._entry(key, est_d, qd_d, row)
        self._desired = self._desired[-1:] + [entry]
        return entry

    def _entry(self, key, est_d, qd_d, row):
        """_sample's entry from the estimate ``est_d`` of the sample (q_d, qd_d)."""
        accel = None
        if row is not None:
            accel = np.concatenate((est_d.twist, task_rates(self.estimator.kin, est_d.pose, qd_d, row[2 * self.n:],
                                                            self._square, est_d.twist, est_d.jacobian)[1]))
        return [key, (est_d.pose, est_d.twist), est_d.jacobian, accel, row]

    def prepare(self, rows) -> bool:
        """Between periods, one item of the work that the first period between two streamed samples would do, ahead of
        it (ControlLoop.prepare): ``rows``, the streamed samples [q, qd, qdd] the next periods take, in order (rows of
        the loop's SampleBuffer: the spans between consecutive ones). The item is a sample's desired motion (what
        _sample computes, from the warm start it would take then: the last desired pose, or the sample's before it
        when that one is prepared too: the same FK in the same order, the same numbers) or a span's motion packed as
        _interpolated packs it. A period takes them only while its warm start is still the one they were prepared
        from (no other FK of the references ran in between: else it computes them itself, as without prepare).
        False: nothing to do (every span prepared, a sample whose FK failed from its warm start: the period meets the
        failure itself, or the law does not interpolate)."""
        if not self._interpolates:
            return False
        ends, k, pose = self._prepared_ends(rows)
        span = self._span
        for j in range(len(ends) - 1):
            row0, row1 = rows[j], rows[j + 1]
            if not (span[0] is row0 and span[1] is row1) and self._prepared_span(row0, row1, ends[j:j + 2]) is None:
                self._spans = self._spans[-1:] + [self._packed(row0, row1, ends[j:j + 2])]
                return True
        if len(ends) == len(rows):
            return False
        row, ahead = rows[len(ends)], self._ahead
        if k < len(ahead) and ahead[k][1] is row and ahead[k][0] is pose:     # its FK failed from this warm start
            return False
        del ahead[k:]
        n = self.n
        q, qd = row[:n], row[n:2 * n]
        try:
            entry = self._entry((q.tolist(), qd.tolist()), self.estimator.estimate(q, qd, pose), qd, row)
        except COMPUTE_ERRORS:
            entry = None
        ahead.append((pose, row, entry))
        return True

    def _prepared_ends(self, rows):
        """(entries, k, pose): the desired motion of the streamed samples ``rows`` as the periods take it in that order
        without a FK (each from the last two samples' or, next, the next prepared one when it was prepared from the
        warm start the period would have then), up to the first sample that would need its FK; k: the prepared ones
        taken (the first k of self._ahead), pose: the warm start after them."""
        desired, pose, ahead, k, ends = self._desired, self.pose_d, self._ahead, 0, []
        for row in rows:
            for entry in desired:
                if entry[4] is row:
                    break
            else:
                if k == len(ahead) or ahead[k][1] is not row or ahead[k][0] is not pose or ahead[k][2] is None:
                    break
                entry = ahead[k][2]
                k += 1
                pose, desired = entry[1][0], desired[-1:] + [entry]
            ends.append(entry)
        return ends, k, pose

    def _prepared_span(self, row0, row1, ends):
        """The prepared span (row0, row1, ends, packed) of these two samples with these entries, or None."""
        for span in self._spans:
            if span[0] is row0 and span[1] is row1 and span[2][0] is ends[0] and span[2][1] is ends[1]:
                return span
        return None

    def _packed(self, row0, row1, ends):
        """(row0, row1, ends, with period_front: their motion packed as it takes it, else None)."""
        a, b = ends
        return row0, row1, ends, None if self._front is None else np.concatenate(
            (a[1][0].rotation.ravel(), a[1][0].position, a[3], b[1][0].rotation.ravel(), b[1][0].position, b[3]))

    def _take(self, k):
        """The first k prepared samples' desired motion, taken as _sample keeps its own (pose_d, the last two)."""
        for _, _, entry in self._ahead[:k]:
            self.pose_d = entry[1][0]
            self._desired = self._desired[-1:] + [entry]
        del self._ahead[:k]

    def _ready_span(self, row0, row1):
        """(the prepared span of two streamed samples, the prepared samples its period takes) when the period takes it
        without a FK, else (None, 0)."""
        ends, k, _ = self._prepared_ends((row0, row1))
        span = self._prepared_span(row0, row1, ends) if len(ends) == 2 else None
        return span, 0 if span is None else k

    def _interpolated(self, row0, row1, w, h):
        """((X_d, xdot_d), xddot_d) between two streamed samples (kernels.task_hermite) from the samples' own desired
        motion (their FK, xddot = J^-1 (qdd - Jdot xdot): task_rates; each sample's once, found again by its row
        object: the buffer's rows are not written), or (None, None) when a sample's FK fails (the FK of the
        interpolated references then decides). The span prepared between periods (prepare), if it was, else the
        samples' motion now: the last two samples', the prepared ones, or their FK (_sample)."""
        span = self._span
        if not (span[0] is row0 and span[1] is row1):       # not the span of the last period
            ends, k, _ = self._prepared_ends((row0, row1))
            self._take(k)
            n = self.n
            for row in (row0, row1)[len(ends):]:
                for entry in self._desired:
                    if entry[4] is row:
                        break
                else:
                    q, qd = row[:n], row[n:2 * n]
                    try:
                        entry = self._sample((q.tolist(), qd.tolist()), q, qd, row)
                    except COMPUTE_ERRORS:
                        return None, None
                ends.append(entry)
            self._span = span = self._prepared_span(row0, row1, ends) or self._packed(row0, row1, ends)
        a, b = span[2]
        p0, p1 = a[1][0], b[1][0]
        out = np.empty(24)
        kernels.task_hermite(p0.rotation, p0.position, a[3], p1.rotation, p1.position, b[3], w, h, out)
        return (Pose(out[:3], out[3:12].reshape(3, 3)), out[12:18]), out[18:]

    def _checked_inputs(self, t, measured, references, feedforward):
        """('', (q_d, qd_d, qdd_d, q, qd, tau_ff) as float arrays, the measured wrench or None, the measured state or
        None) when every input the law needs is there, fresh and finite, and the wrench passes the wrench watch; else
        (what is wrong, None, None, None). Valid float arrays and a valid wrench pass in one compiled check (kernels.
        period_inputs_valid), with the compiled 6-UPS estimate in the same call (hexapod_ups_period.period_front:
        the measured state (pose, twist, J, and between two samples of the last period's span or of one prepared
        (prepare) the desired motion (X_d, xdot_d), xddot_d as _interpolated gives it, else None, None) when the
        estimator would trust it, else None: the estimator decides);
        anything else takes the checks one by one, then the watch's (force.WrenchWatch.check), which say what is
        wrong."""
        if measured is None:
            return "no measurement yet", None, None, None
        age = t - measured.time
        if not age <= self.state_timeout:
            return (f"measurement is {age * 1e3:.3g} ms old (state_timeout {self.state_timeout * 1e3:.3g} ms)", None,
                    None, None)
        watch = self.wrench_watch
        if references is not None and (feedforward is not None or not self.needs_feedforward):
            lim, last, (sensor, size, timeout, limit) = self._limit_arrays, self._last_ref, self._wrench_check
            wrench, values, wrench_age = self._wrench_values(t, measured)
            front, state = self._front, None
            try:
                if front is None:
                    valid = kernels.period_inputs_valid(
                        measured.position, measured.velocity, references.q, references.qd, references.qdd,
                        feedforward if self.needs_feedforward else _NO_VALUES, lim,
                        _NO_VALUES if last is None else last[1], 0.0 if last is None else t - last[0], self.n,
                        values, size, wrench_age, timeout, limit)
                else:       # between two samples of a prepared span: their motion interpolated in the call
                    out, between, span, k = np.empty(FRONT_SIZE), references.between, self._span, 0
                    if between is not None and not (span[0] is between[0] and span[1] is between[1]):
                        span, k = self._ready_span(between[0], between[1])      # prepared between periods
                        if span is None:
                            between = None
                    status = front[0](*self._front_arguments(
                        t, measured, references, feedforward, values, wrench_age,
                        *((_NO_VALUES, 0.0, 0.0) if between is None else (span[3], between[2], between[3]))), out)
                    valid = status != FRONT_INVALID
                    if status == FRONT_TRUSTED:      # views of the one output array
                        if between is not None and span is not self._span:      # the period takes the prepared span
                            self._take(k)
                            self._span = span
                        state = (Pose(out[9:12], out[:9].reshape(3, 3)), out[12:18], out[18:54].reshape(6, 6)) + \
                            ((None, None) if between is None else
                             ((Pose(out[57:60], out[60:69].reshape(3, 3)), out[69:75]), out[75:]))
            except TypeError:             # not 1-D float arrays: checked one by one below
                valid = False
            if valid:
                if self.reference_limits is not None:
                    self._last_ref = (t, references.q)
                if size and not sensor:
                    wrench = ActuatorForces(measured.time, values)
                return "", (references.q, references.qd, references.qdd, measured.position, measured.velocity,
                            feedforward), wrench, state
        why, q, qd = self._vectors(measured.position, measured.velocity)
        if why:
            return f"measurement {why}", None, None, None
        if references is None:
            return "no reference for this instant (stream ran dry)", None, None, None
        why, q_d, qd_d, qdd_d = self._vectors(references.q, references.qd, references.qdd)
        if why:
            return f"reference {why}", None, None, None
        if self.reference_limits is not None:
            prev_t, prev_q = self._last_ref if self._last_ref is not None else (t, None)
            why = self.reference_limits.problem(q_d, qd_d, prev_q, t - prev_t)
            if why:
                return why, None, None, None
            self._last_ref = (t, q_d)
        if self.needs_feedforward:
            if feedforward is None:
                return "no feedforward for this instant (stream ran dry)", None, None, None
            why, feedforward = self._vectors(feedforward)
            if why:
                return f"feedforward {why}", None, None, None
        wrench = None
        if watch is not None:
            why, wrench = watch.check(t, measured)
            if why:
                return why, None, None, None
        return "", (q_d, qd_d, qdd_d, q, qd, feedforward), wrench, None

    def _vectors(self, *arrays):
        """('', *arrays as float arrays) when each holds one finite number per actuator; else (what is wrong with the
        first that does not, None, ...). Runs on six arrays every period: float arrays pass without a copy."""
        out = []
        for a in arrays:
            if type(a) is not np.ndarray or a.dtype != np.float64:
                try:
                    a = np.asarray(a, dtype=float)
                except (TypeError, ValueError) as exc:
                    return (f"is not an array of numbers ({exc})",) + (None,) * len(arrays)
            if a.shape != self._shape:
                return (f"has shape {a.shape}, expected ({self.n},)",) + (None,) * len(arrays)
            if not all_finite(a):
                return ("is not finite",) + (None,) * len(arrays)
            out.append(a)
        return ("", *out)

    def _safe_command(self, measured, reason) -> np.ndarray:
        """The safe behaviour's force; the target is latched at entry (module docstring)."""
        if self.mode == CONTROL:
            self.safe_entries += 1
        self.mode, self.reason = self.safe.mode, reason
        usable = measured is not None and all_finite(np.asarray(measured.position, float)) and \
            all_finite(np.asarray(measured.velocity, float))
        if not usable:
            return self.last_tau if self.target is None else self.target.tau_gravity
        try:
            if self.target is None:
                pose = None
                if self.safe.mode == "hold":
                    try:
                        pose = self.estimate(measured).pose
                    except COMPUTE_ERRORS:
                        pose = self.pose            # the last good estimate: gravity there
                self.target = self.safe.capture(measured.position, pose)
            return self.safe.command(self.target, measured.position, measured.velocity)
        except COMPUTE_ERRORS:
            return self.last_tau
