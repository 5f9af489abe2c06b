"""A streamed trajectory_msgs/JointTrajectory read straight from its serialized bytes, in one compiled call.

The real-time loop takes its streams' chunks between two periods, in its own thread (nodes/joint_controller.py).
Through rclpy a chunk of 10 points costs two steps: ``deserialize_message`` builds a Python object per point and
array (~70 us back to back, 170-200 us in the loop's thread with cold caches), and ``parse_joint_trajectory`` joins
them into arrays (~30 us, 150 us there). ``JointTrajectoryReader.parse`` reads the same bytes (the middleware's
CDR, OMG DDS-XTypes 1.3 sec. 7.4.1: little-endian encapsulation 0x0001, each primitive aligned to its size from the
end of the 4-byte encapsulation header, a sequence as a uint32 count then its elements, a string as a uint32 length
with its NUL) in one compiled call (``joint_trajectory_layout``) into the chunk's arrays.

The fast path only ever accepts, once the full path read a first message to the same chunk: a message on exactly
the joint names (any order; the bytes after the last point are not read: rclpy's serialize_message leaves 4-76 of
them), every required field with one value per joint, the others empty or full, finite values where required,
strictly increasing times, 1 to MAX_POINTS points. Anything else (the first message, a big-endian writer, junk)
takes the full path: rclpy's deserialization and ``parse_joint_trajectory``, which returns the same chunk or raises
the same InvalidInputError as before (one implementation of the messages); ``fallbacks`` counts those messages.
"""

from __future__ import annotations

import dataclasses
import math

import numba
import numpy as np

from .messages import _FIELDS, MAX_POINTS, JointChunk, parse_joint_trajectory

#: joint_trajectory_layout's status: the fast path read the message; anything else sends it to the full path
OK = 0


def _u32(u8, o):
    """The little-endian uint32 at byte o."""
    return np.int64(u8[o]) | (np.int64(u8[o + 1]) << 8) | (np.int64(u8[o + 2]) << 16) | (np.int64(u8[o + 3]) << 24)


def _aligned(o, size):
    """o rounded up to a multiple of ``size`` from the end of the encapsulation header (byte 4)."""
    return 4 + (o - 4 + size - 1) // size * size


def joint_trajectory_layout(u8, f64, names, ends, need, max_points):
    """(status, times (m,), values (4, m, n)) of a serialized JointTrajectory ``u8`` (its bytes; ``f64`` the same
    bytes as float64 from byte 4) on the joints ``names`` (their UTF-8 bytes with the NUL, concatenated; name j ends
    at ends[j]), in any order: values[f] the points' field f of _FIELDS (positions, velocities, accelerations, effort;
    zeros where a point has none), its columns in ``names`` order. ``need``: bit f set = field f required (n values
    in every point, all finite). status OK or 1 + the step that failed (module docstring: the full path then says
    what is wrong). An empty sequence of float64 has no alignment (Fast CDR's, which rmw_fastrtps writes)."""
    n = ends.shape[0]
    empty_t, empty_v = np.empty(0, np.int64), np.empty((4, 0, n))
    size = u8.shape[0]
    if size < 16 or u8[0] != 0 or u8[1] != 1:             # CDR little-endian (plain, not parameter lists)
        return 1, empty_t, empty_v
    o = 4
    sec = _u32(u8, o)
    sec = sec - (np.int64(1) << 32) if sec >= (np.int64(1) << 31) else sec          # int32
    t0 = sec * 1_000_000_000 + _u32(u8, o + 4)
    o += 8
    o = o + 4 + _u32(u8, o)                               # header.frame_id
    o = _aligned(o, 4)
    if o + 4 > size or _u32(u8, o) != n:
        return 2, empty_t, empty_v
    o += 4
    column = np.full(n, -1, np.int64)                     # message column k -> its joint's index in names
    taken = np.zeros(n, np.bool_)
    for k in range(n):
        o = _aligned(o, 4)
        if o + 4 > size:
            return 3, empty_t, empty_v
        length = _u32(u8, o)
        o += 4
        if o + length > size:
            return 3, empty_t, empty_v
        for j in range(n):
            start = 0 if j == 0 else ends[j - 1]
            if taken[j] or ends[j] - start != length:
                continue
            same = True
            for b in range(length):
                if u8[o + b] != names[start + b]:
                    same = False
                    break
            if same:
                column[k] = j
                taken[j] = True
                break
        if column[k] < 0:
            return 4, empty_t, empty_v
        o += length
    o = _aligned(o, 4)
    if o + 4 > size:
        return 5, empty_t, empty_v
    m = _u32(u8, o)
    o += 4
    if m < 1 or m > max_points or m * 20 > size:           # a point takes at least 5 uint32
        return 6, empty_t, empty_v
    times = np.empty(m, np.int64)
    values = np.zeros((4, m, n))
    for p in range(m):
        for f in range(4):
            o = _aligned(o, 4)
            if o + 4 > size:
                return 7, empty_t, empty_v
            count = _u32(u8, o)
            o += 4
            required = (need >> f) & 1
            if count == 0:
                if required:
                    return 8, empty_t, empty_v
                continue
            if count != n:
                return 9, empty_t, empty_v
            o = _aligned(o, 8)
            if o + 8 * n > size:
                return 10, empty_t, empty_v
            j = (o - 4) // 8
            for k in range(n):
                v = f64[j + k]
                if required and not math.isfinite(v):
                    return 11, empty_t, empty_v
                values[f, p, column[k]] = v
            o += 8 * n
        o = _aligned(o, 4)
        if o + 8 > size:
            return 12, empty_t, empty_v
        s = _u32(u8, o)
        s = s - (np.int64(1) << 32) if s >= (np.int64(1) << 31) else s
        times[p] = t0 + s * 1_000_000_000 + _u32(u8, o + 4)
        o += 8
        if p > 0 and times[p] <= times[p - 1]:
            return 13, empty_t, empty_v
    return OK, times, values


_U8 = numba.types.Array(numba.uint8, 1, "C", readonly=True)
_F8 = numba.types.Array(numba.float64, 1, "C", readonly=True)
_u32 = numba.njit(numba.int64(_U8, numba.int64), cache=True)(_u32)
_aligned = numba.njit(numba.int64(numba.int64, numba.int64), cache=True)(_aligned)
joint_trajectory_layout = numba.njit(
    numba.types.Tuple((numba.int64, numba.int64[::1], numba.float64[:, :, ::1]))(
        _U8, _F8, _U8, numba.types.Array(numba.int64, 1, "C", readonly=True), numba.int64, numba.int64),
    cache=True)(joint_trajectory_layout)


class JointTrajectoryReader:
    """``parse(data)``: the JointChunk of a serialized JointTrajectory on exactly ``names`` (any order) with ``fields``
    in every point, as ``parse_joint_trajectory`` of the deserialized message (module docstring)."""

    def __init__(self, names, fields):
        self.names, self.fields = tuple(names), tuple(fields)
        self.need = sum(1 << _FIELDS.index(f) for f in self.fields)
        encoded = [name.encode() + b"\0" for name in self.names]
        self._bytes = np.frombuffer(b"".join(encoded), np.uint8)
        self._ends = np.cumsum([len(e) for e in encoded]).astype(np.int64)
        self.checked = False         # the full path read a message to the same chunk (else no fast path)
        self.fallbacks = 0

    def _layout(self, data: bytes):
        size = len(data)
        u8 = np.frombuffer(data, np.uint8)
        f64 = np.frombuffer(data, np.float64, count=max(size - 4, 0) // 8, offset=min(size, 4))
        return joint_trajectory_layout(u8, f64, self._bytes, self._ends, self.need, MAX_POINTS)

    def parse(self, data: bytes) -> JointChunk:
        status, times, values = self._layout(data)
        if status != OK or not self.checked:
            return self._full(data, status == OK and self._chunk(times, values))
        return self._chunk(times, values)

    def _chunk(self, times, values) -> JointChunk:
        return JointChunk(times, *(values[f] if (self.need >> f) & 1 else None for f in range(4)))

    def _full(self, data: bytes, fast) -> JointChunk:
        """rclpy's deserialization and parse_joint_trajectory (raises InvalidInputError for a bad message); the fast
        path's chunk ``fast`` of a message it accepts, when the same, opens the fast path."""
        from rclpy.serialization import deserialize_message
        from trajectory_msgs.msg import JointTrajectory

        from ..errors import InvalidInputError

        self.fallbacks += 1
        try:
            msg = deserialize_message(data, JointTrajectory)
        except Exception as exc:         # noqa: BLE001 - rclpy raises its own types for bytes that are no message
            raise InvalidInputError(f"joint trajectory: {len(data)} bytes that are no JointTrajectory ({exc})") \
                from exc
        chunk = parse_joint_trajectory(msg, self.names, self.fields)
        if fast and not self.checked:
            self.checked = self._same(chunk, fast)
        return chunk

    @staticmethod
    def _same(a: JointChunk, b: JointChunk) -> bool:
        pairs = ((getattr(a, f.name), getattr(b, f.name)) for f in dataclasses.fields(a))
        return all((x is None and y is None) or (x is not None and y is not None and np.array_equal(x, y))
                   for x, y in pairs)
