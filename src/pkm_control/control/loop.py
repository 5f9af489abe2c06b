"""The control loop of one period: read hardware -> estimate state -> control law -> write hardware.

ros2_control's controller manager does this in one thread at the control rate; so does this
class (ROS-free). The references (actuated q, qd, qdd) and the feedforward are computed ahead by
the other nodes and arrive in chunks of time-stamped samples (at the control rate or, with a lower
``stream_rate``, interpolated between: SampleBuffer); ``offer_references`` /
``offer_feedforward`` may be called from another thread (the ROS executor): they only append to
a deque, and the loop moves the chunks into its buffers at the start of a period, so the period
never waits on a lock or on a message.

Lockstep (deterministic) use: ``ready(t)`` tells whether the streams cover t; the caller waits
(processing messages) until they do, then ``cycle(t)`` and, for a simulated robot, ``step()``.
Real-time use: ``cycle(t)`` every period on the clock; a stream that ran dry for less than
``reference_timeout`` repeats its last sample, beyond that the controller's safe behaviour engages. Between periods
``prepare()`` does the controller's work for the streamed samples the next periods take, one item a call (without
it the first period between two samples does it: the same numbers).
"""

from __future__ import annotations

import bisect
import collections

import numpy as np

from ..errors import InvalidInputError
from ..trajectory.streaming import SampleBuffer
from . import kernels
from .controller import Command, Controller, References
from .force import ForceReference, _ForceLaw


#: the buffers drop their old samples once every this many ns of the loop's time (not every period: two calls less)
PRUNE_EVERY_NS = 100_000_000


class ControlLoop:
    """hardware + controller + the streamed references of one robot (module docstring).

    hardware: a HardwareInterface (``read()``, ``write(command, time)``); controller: a Controller;
    reference_timeout_ns: how long a stream that ran dry repeats its last sample;
    feedforward_lead_ns: T_m, the feedforward is looked up at t + T_m while the regulator's references are at t
    (Codourey sec. 5.1: "the trajectory signal input to the robot regulator is phase shifted with respect to the
    feedforward", T_m = 2 ms, the rise time of the motor current; regulator 4 of sec. 5.2).
    """

    def __init__(self, hardware, controller: Controller, reference_timeout_ns: int, feedforward_lead_ns: int = 0):
        self.hardware = hardware
        self.controller = controller
        self.n = controller.n
        self.reference_timeout_ns = int(reference_timeout_ns)
        if not feedforward_lead_ns >= 0:
            raise InvalidInputError(f"feedforward_lead must be >= 0 s, got {feedforward_lead_ns * 1e-9}")
        self.feedforward_lead_ns = int(feedforward_lead_ns)
        self.references = SampleBuffer(interpolate=kernels.hermite)      # rows [q, qd, qdd]
        self.feedforward = SampleBuffer()
        # a hybrid goal's force references (rows [F_d, selection as 0/1], task coordinates), streamed: in place of
        # force_reference from their first sample until the stream's end (force_end_ns)
        self.forces = SampleBuffer()
        self.force_end_ns = None
        self.takes_forces = isinstance(getattr(controller, "law", None), _ForceLaw)
        # the controller interpolates the desired motion between streamed samples (Controller._interpolated)
        self._between = bool(getattr(controller, "_interpolates", False))
        self._inbox = collections.deque()
        self.measured = None
        self.force_reference = None     # force.ForceReference of the force laws' set-point (References.force), or None
        self.command: Command | None = None
        self._next_prune = 0
        self._t_ns = None               # the instant of the last period (prepare)

    # ------------------------------------------------------------------ streams (any thread)
    def offer_references(self, times_ns, q, qd, qdd) -> None:
        """A chunk of desired actuated motion (times (N,), each (N, n)); spliced at its first time. A chunk of
        other sizes raises InvalidInputError here, in the caller's thread, never later in a period; so does a chunk
        that would rewrite samples a period has read from that buffer (``SampleBuffer.fresh``: stamped in the past, a
        replay; of a repeat only the new part is kept), checked against the buffer as drained (the node drains after
        each offer, in the loop's own thread). A period reads the references at t, the feedforward at t + T_m; a
        sample after a buffer's end was not read (the period held the last one), so a late chunk that brings it is
        spliced."""
        self._offer(self.references, times_ns, q, qd, qdd)

    def offer_feedforward(self, times_ns, tau) -> None:
        """A chunk of feedforward actuator forces (checked as ``offer_references``). A law that takes none (the
        force laws, the PD laws) leaves it out after the size check: the loop does not wait for that stream, so
        computed_force may run behind the periods, and its late chunks are no rewrite of anything the law used."""
        if not self.controller.needs_feedforward:
            self._rows(times_ns, tau)
            return
        self._offer(self.feedforward, times_ns, tau)

    def offer_forces(self, times_ns, wrench, selection) -> None:
        """A chunk of a hybrid goal's force references (F_d and the selection per task coordinate, (N, dim) each;
        checked as ``offer_references``); ``wrench`` None: the stream ends at ``times_ns`` (an instant, ns): from
        there on the set-point is ``force_reference`` again. A law without force references leaves it out."""
        if not self.takes_forces:
            return
        if wrench is None:
            self._inbox.append((None, int(times_ns), None))
            return
        w, sel = np.asarray(wrench, float), np.asarray(selection, bool)
        if w.ndim != 2 or w.shape != sel.shape or len(w) != len(times_ns):
            raise InvalidInputError(f"force references: {len(times_ns)} times need F_d and selection rows of one "
                                    f"shape, got {w.shape} and {sel.shape}")
        times, rows = self.forces.fresh(times_ns, np.hstack([w, sel.astype(float)]))
        if len(times):
            self._inbox.append((self.forces, times, rows))

    def streamed_force(self, t_ns: int) -> bool:
        """The force references of t come from the stream (a hybrid goal's, not ended before t)."""
        return self.forces.end is not None and (self.force_end_ns is None or t_ns < self.force_end_ns)

    def _offer(self, buffer, times_ns, *fields) -> None:
        times, rows = buffer.fresh(times_ns, np.hstack([self._rows(times_ns, x) for x in fields]))
        if len(times):
            self._inbox.append((buffer, times, rows))

    def _rows(self, times_ns, rows) -> np.ndarray:
        rows, shape = np.asarray(rows, dtype=float), (len(times_ns), self.n)
        if rows.shape != shape:
            raise InvalidInputError(f"a chunk of {shape[0]} times needs rows of shape {shape}, got {rows.shape}")
        return rows

    def clear_streams(self) -> None:
        """Forget every buffered sample (after a reset of the time source)."""
        self.drain()
        self.references.clear()
        self.feedforward.clear()
        self.forces.clear()
        self.force_end_ns = None
        self._next_prune = 0
        self._t_ns = None

    def drain(self) -> None:
        """Move the offered chunks into the buffers (the period does it first; the loop's own thread may do it
        between two periods, so that a chunk's splice does not cost the next period)."""
        while self._inbox:
            buf, times, rows = self._inbox.popleft()
            if buf is None:                       # the end of the force references' stream
                self.force_end_ns = times
                continue
            if buf is self.forces:
                self.force_end_ns = None
            buf.add(times, rows)

    def prepare(self) -> bool:
        """Between two periods (the real-time node's background, one slice): one item of the controller's work for the
        streamed references the next periods take (Controller.prepare: a sample's desired motion, ~30 us, or a span
        packed), so that the first period between two samples finds them done as the others do. The spans up to the
        one after the last period's: the samples from the one at or before its instant, three. False: nothing to do.
        The numbers of the periods are the same with or without it."""
        t = self._t_ns
        if not self._between or t is None:
            return False
        i = bisect.bisect_right(self.references.times, t) - 1
        rows = self.references.rows[max(i, 0):i + 3]
        return len(rows) > 1 and self.controller.prepare(rows)

    # ------------------------------------------------------------------ the period
    def rehearse(self) -> None:
        """Controller.rehearse: the runner's warm-up just before the next period (realtime.PeriodicRunner)."""
        self.controller.rehearse()

    def ready(self, t_ns: int) -> bool:
        """The streams the law needs cover t (lockstep waits for this)."""
        self.drain()
        return self.references.covers(t_ns) and (not self.controller.needs_feedforward
                                                 or self.feedforward.covers(t_ns + self.feedforward_lead_ns)) \
            and (not self.streamed_force(t_ns) or self.forces.covers(t_ns))

    def started(self) -> bool:
        """A first reference has arrived (a lockstep run starts then)."""
        self.drain()
        return self.references.end is not None and (not self.controller.needs_feedforward
                                                    or self.feedforward.end is not None)

    def force_at(self, t_ns: int):
        """References.force of t: the streamed force references (linear between their samples, a direction
        force-controlled where the interpolated selection is above 1/2; a stream that ran dry repeats its last
        sample for reference_timeout, then none), else the ``force_reference`` set-point."""
        if not self.streamed_force(t_ns):
            return self.force_reference
        row = self.forces.use(t_ns, self.reference_timeout_ns)
        if row is None:
            return None
        dim = len(row) // 2
        return ForceReference(row[:dim], row[dim:] > 0.5)

    def cycle(self, t_ns: int) -> Command:
        """read -> (estimate) -> update -> write, for the period starting at t_ns."""
        self.drain()
        self._t_ns = t_ns
        measured = self.hardware.read()
        self.measured = measured
        row, between = self.references.use_between(t_ns, self.reference_timeout_ns)
        n = self.n
        t = t_ns * 1e-9
        # force_at(t_ns), without its call while no force reference was streamed
        if not self._between:
            between = sample = None
        else:                           # on a streamed sample: its row (Controller's desired motion of the sample)
            sample = row if between is None else None
        refs = None if row is None else References(row[:n], row[n:2 * n], row[2 * n:],
                                                   self.force_at(t_ns) if self.forces.times else self.force_reference,
                                                   between, sample)
        ff = self.feedforward.use(t_ns + self.feedforward_lead_ns, self.reference_timeout_ns) \
            if self.controller.needs_feedforward else None
        cmd = self.controller.update(t, measured, refs, ff)
        self.hardware.write(cmd.tau, t)
        self.command = cmd
        if not t_ns < self._next_prune:       # the samples older than the buffers keep, every PRUNE_EVERY_NS
            self._next_prune = t_ns + PRUNE_EVERY_NS
            self.references.prune(t_ns)
            self.feedforward.prune(t_ns)
            self.forces.prune(t_ns)
        return cmd
