"""Trapezoidal velocity profile: accelerate, cruise, decelerate (rest to rest).

s(t) in [0, 1] on [0, T] with a constant acceleration phase of length ta, a constant-velocity
phase of length T - 2 ta and a constant deceleration phase of length ta (0 < ta <= T/2;
ta = T/2 is the triangular profile). Cruise rate v = 1 / (T - ta), acceleration a = v / ta.
Same call form as ``profiles.trig_spline3`` (``profile(t, duration) -> (s, ds, dds)``) once ta
is bound, e.g. ``functools.partial(trapezoidal, ramp=0.5)``.
"""

from __future__ import annotations

import math

import numpy as np

from ..errors import InvalidInputError


def trapezoidal(t, duration: float = 1.0, ramp: float | None = None):
    """(s, ds/dt, d2s/dt2) of the trapezoidal profile; ramp = ta (default duration / 4).

    t may be a scalar or an array; before 0 the profile rests at s = 0, after ``duration`` at 1.
    """
    try:
        T = float(duration)
        ta = T / 4.0 if ramp is None else float(ramp)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"duration and ramp must be numbers, got {duration!r}, {ramp!r}") from exc
    if not (math.isfinite(T) and T > 0.0):
        raise InvalidInputError(f"duration must be finite and > 0 s, got {duration!r}")
    if not (math.isfinite(ta) and 0.0 < ta <= 0.5 * T):
        raise InvalidInputError(f"ramp (acceleration time) must be in (0, duration/2] = (0, {0.5 * T:g}] s, got {ta!r}")
    t = np.asarray(t, dtype=float)
    if not np.isfinite(t).all():
        raise InvalidInputError("time must be finite")
    v = 1.0 / (T - ta)
    a = v / ta
    tc = np.clip(t, 0.0, T)
    tr = T - tc
    acc, dec = tc < ta, tc > T - ta
    s = np.where(acc, 0.5 * a * tc * tc, np.where(dec, 1.0 - 0.5 * a * tr * tr, 0.5 * a * ta * ta + v * (tc - ta)))
    ds = np.where(acc, a * tc, np.where(dec, a * tr, v))
    dds = np.where(acc, a, np.where(dec, -a, 0.0))
    outside = (t < 0.0) | (t > T)
    ds = np.where(outside, 0.0, ds)
    dds = np.where(outside, 0.0, dds)
    if t.ndim == 0:
        return float(s), float(ds), float(dds)
    return s, ds, dds
