"""Time-scaling profiles s(t) in [0, 1] with their derivatives, and rest-to-rest waypoint trajectories.

``trig_spline3``: the 3rd-order trigonometric spline of Lopes (seed 001, sec. 5: "third order
trigonometric splines were interpolated between the specified points, in order to obtain
continuous and smooth trajectories"). The paper prints neither the formula nor the timing, so the
definition used here is the standard one: on each segment a trigonometric polynomial of order 3
in theta = pi t / T,

    s(theta) = c0 + sum_{k=1..3} (c_k cos k theta + d_k sin k theta),

with the six boundary conditions of a rest-to-rest segment, s = 0, 1 and s' = s'' = 0 at both
ends. These force c2 = d2 = 0, d1 = -3 d3, c1 = -9 c3, c0 = 1/2, c3 = 1/16 and leave the term
d3 (sin 3 theta - 3 sin theta) = -4 d3 sin^3 theta free; the symmetric choice d3 = 0 gives

    s   = 1/2 - 9/16 cos(theta) + 1/16 cos(3 theta)
    s'  = (pi / T)   (9/16 sin(theta) - 3/16 sin(3 theta))
    s'' = (pi / T)^2 (9/16) (cos(theta) - cos(3 theta))

Consecutive segments then join with continuous position, velocity and acceleration (C2), which is
what the paper asks of its splines. Peak |s'| = 3 pi / (4 T) at t = T/2, peak |s''| =
(pi / T)^2 * 3 / (2 sqrt 3) ~ 0.866 (pi / T)^2 (``trig_spline3_peaks``).
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError


def _duration(T):
    try:
        T = float(T)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"duration must be a number, got {T!r}") from exc
    if not (math.isfinite(T) and T > 0.0):
        raise InvalidInputError(f"duration must be finite and > 0 s, got {T!r}")
    return T


def trig_spline3(t, duration: float = 1.0):
    """(s, ds/dt, d2s/dt2) of the 3rd-order trigonometric rest-to-rest spline on [0, duration].

    t may be a scalar or an array; before 0 the profile rests at s = 0, after ``duration`` at 1.
    """
    T = _duration(duration)
    t = np.asarray(t, dtype=float)
    if not np.isfinite(t).all():
        raise InvalidInputError("time must be finite")
    tc = np.clip(t, 0.0, T)
    th = math.pi * tc / T
    w = math.pi / T
    c1, c3 = np.cos(th), np.cos(3.0 * th)
    s = 0.5 - 0.5625 * c1 + 0.0625 * c3
    ds = w * (0.5625 * np.sin(th) - 0.1875 * np.sin(3.0 * th))
    dds = w * w * 0.5625 * (c1 - c3)
    outside = (t < 0.0) | (t > T)
    if np.any(outside):
        ds = np.where(outside, 0.0, ds)
        dds = np.where(outside, 0.0, dds)
    if t.ndim == 0:
        return float(s), float(ds), float(dds)
    return s, ds, dds


def trig_spline3_peaks(duration: float = 1.0):
    """(max |ds/dt|, max |d2s/dt2|) of ``trig_spline3`` over [0, duration], in closed form.

    s' peaks at theta = pi/2 with 3 pi / (4 T). s'' = (pi/T)^2 9/16 (cos th - cos 3 th) =
    (pi/T)^2 9/16 * 4 cos th sin^2 th, extreme at cos th = 1/sqrt(3): (pi/T)^2 9/16 * 8 / (3 sqrt 3).
    """
    T = _duration(duration)
    w = math.pi / T
    return 0.75 * w, w * w * 0.5625 * 8.0 / (3.0 * math.sqrt(3.0))


class WaypointTrajectory:
    """Rest-to-rest trajectory through waypoints, each segment time-scaled by a profile.

    x(t) = x_k + s_k(t - t_k) (x_{k+1} - x_k) on segment k (straight line in the coordinates
    given, e.g. Lopes' [x y z psi theta phi]); profile(t, T) -> (s, ds, dds) such as
    ``trig_spline3``. Immutable.
    """

    def __init__(self, waypoints, durations, profile=trig_spline3):
        W = np.array(waypoints, dtype=float)
        if W.ndim != 2 or W.shape[0] < 2 or not np.isfinite(W).all():
            raise InvalidInputError(f"waypoints must be a finite (n >= 2, dim) array, got shape {W.shape}")
        D = np.atleast_1d(np.array(durations, dtype=float))
        if D.shape != (W.shape[0] - 1,):
            raise InvalidInputError(f"need {W.shape[0] - 1} segment durations, got {D.shape[0]}")
        for T in D:
            _duration(T)
        self.waypoints = W
        self.durations = D
        self.times = np.concatenate([[0.0], np.cumsum(D)])
        self.profile = profile
        for a in (W, D, self.times):
            a.setflags(write=False)

    @property
    def duration(self) -> float:
        return float(self.times[-1])

    def evaluate(self, t):
        """(x, xd, xdd) at times t (array (N,) -> arrays (N, dim); scalar -> (dim,))."""
        t = np.asarray(t, dtype=float)
        scalar = t.ndim == 0
        tt = np.atleast_1d(t)
        if not np.isfinite(tt).all():
            raise InvalidInputError("time must be finite")
        k = np.clip(np.searchsorted(self.times, tt, side="right") - 1, 0, len(self.durations) - 1)
        x = np.empty((tt.size, self.waypoints.shape[1]))
        xd, xdd = np.empty_like(x), np.empty_like(x)
        for seg in range(len(self.durations)):
            m = k == seg
            if not m.any():
                continue
            s, ds, dds = self.profile(tt[m] - self.times[seg], self.durations[seg])
            dx = self.waypoints[seg + 1] - self.waypoints[seg]
            x[m] = self.waypoints[seg] + np.outer(s, dx)
            xd[m] = np.outer(ds, dx)
            xdd[m] = np.outer(dds, dx)
        if scalar:
            return x[0], xd[0], xdd[0]
        return x, xd, xdd
