"""Time-scaling profiles s(t): rest to rest from s = 0 to s = 1 on [0, T].

Every profile has the call form ``profile(t, duration, **options) -> (s, ds/dt, d2s/dt2)``;
t is a scalar (floats returned) or an array (arrays returned). Before t = 0 the profile
rests at s = 0, after t = T at s = 1 (ds = dds = 0 outside [0, T]). ``PROFILES`` maps the
names used in specs and parameters to the functions; ``profile_peaks`` gives the peak rate and
acceleration of a unit move in closed form; ``profile_integral`` the closed-form integral of s
(the circle uses a profile as the shape of its speed ramp, whose arc length is that integral).

Profiles, with tau = t / T:

``parabolic``
    Constant acceleration to T/2, then constant deceleration ("bang-bang"; Codourey's
    "parabolic profile", seed 002 Fig. 8): s = 2 tau^2, then 1 - 2 (1 - tau)^2.
    Peaks: |s'| = 2 / T, |s''| = 4 / T^2.
``trapezoidal``
    Velocity trapezoid: constant acceleration for ``ramp`` = ta (default T/4), cruise, constant
    deceleration for ta; cruise rate v = 1 / (T - ta), acceleration v / ta (ta = T/2: parabolic).
``sine_on_ramp``
    Codourey's "sine-on-ramp" (seed 002, sec. 6 and Fig. 8): the position is a ramp plus a sine,
    s = tau - sin(2 pi tau) / (2 pi), so the acceleration is one full sine period,
    s'' = (2 pi / T^2) sin(2 pi tau), zero at both ends (continuous acceleration, unlike the
    parabolic profile). Peaks: |s'| = 2 / T, |s''| = 2 pi / T^2. The seed does not print the
    formula (it cites Codourey 1991); this is the cycloidal form that the name describes, and it
    reproduces Fig. 8's numbers: for the same move and time the parabolic profile needs
    4 / T^2 and the sine-on-ramp 2 pi / T^2, a ratio of pi / 2 = 1.571, and Fig. 8 reports
    51 and 80 m/s^2 (ratio 1.569).
``asymmetric_sine_on_ramp``
    Codourey's "nonsymmetrical sine-on-ramp profile (with acceleration higher than deceleration)"
    (seed 002, sec. 6, Fig. 8 bottom right). The acceleration is a positive half sine over the
    acceleration time Ta = ``accel_fraction`` T and a negative half sine over Td = T - Ta:
    s'' = A1 sin(pi t / Ta) on [0, Ta], -A2 sin(pi (t - Ta) / Td) on [Ta, T]. Rest at both ends
    and s(T) = 1 give A1 Ta = A2 Td and A1 = pi / (Ta T), A2 = pi / (Td T); in closed form
        [0, Ta]: s = (t - Ta/pi sin(pi t / Ta)) / T,           s' = (1 - cos(pi t / Ta)) / T
        [Ta, T]: s = (Ta + u + Td/pi sin(pi u / Td)) / T,       s' = (1 + cos(pi u / Td)) / T,
                 u = t - Ta.
    The peak rate is 2 / T whatever Ta; acceleration and deceleration peaks are in the ratio
    Td / Ta. Ta = T/2 is ``sine_on_ramp``. The default accel_fraction = 1/3 is Fig. 8's example:
    acceleration 120 m/s^2, deceleration 60 m/s^2, i.e. 3 pi / T^2 and 3 pi / (2 T^2) with the
    same T^2 = 0.0785 s^2 as its sine-on-ramp (2 pi / T^2 = 80) and parabolic (4 / T^2 = 51)
    profiles. The acceleration is continuous; the jerk jumps at Ta (as it does at 0 and T).
``trig_spline3``
    Lopes' 3rd-order trigonometric spline (seed 001, sec. 5: "third order trigonometric splines
    were interpolated between the specified points, in order to obtain continuous and smooth
    trajectories"). The paper prints neither the formula nor the timing; the definition used is
    the standard one: a trigonometric polynomial of order 3 in theta = pi t / T,
    s(theta) = c0 + sum_{k=1..3} (c_k cos k theta + d_k sin k theta), with s = 0, 1 and
    s' = s'' = 0 at both ends. These force c2 = d2 = 0, d1 = -3 d3, c1 = -9 c3, c0 = 1/2,
    c3 = 1/16 and leave d3 (sin 3 theta - 3 sin theta) = -4 d3 sin^3 theta free; the symmetric
    choice d3 = 0 gives
        s   = 1/2 - 9/16 cos(theta) + 1/16 cos(3 theta)
        s'  = (pi / T)   (9/16 sin(theta) - 3/16 sin(3 theta))
        s'' = (pi / T)^2 (9/16) (cos(theta) - cos(3 theta))
    Consecutive segments join with continuous position, velocity and acceleration (C2).
    Peaks: |s'| = 3 pi / (4 T), |s''| = (pi / T)^2 * 3 / (2 sqrt 3).
``quintic``
    5th-order polynomial rest to rest (zero rate and acceleration at both ends):
    s = 10 tau^3 - 15 tau^4 + 6 tau^5. Peaks: |s'| = 15 / (8 T) at tau = 1/2,
    |s''| = 10 / (sqrt(3) T^2) at tau = 1/2 -+ sqrt(3)/6.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..errors import InvalidInputError

_TWO_PI = 2.0 * math.pi


#: durations a trajectory (or a ramp of one) may have: from two control periods at 2 kHz to an hour
MIN_DURATION = 1e-3
MAX_DURATION = 3600.0


def _duration(T, name="duration"):
    if isinstance(T, bool):
        raise InvalidInputError(f"{name} must be a number of seconds, got {T!r}")
    try:
        T = float(T)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be a number of seconds, got {T!r}") from exc
    if not (math.isfinite(T) and MIN_DURATION <= T <= MAX_DURATION):
        raise InvalidInputError(f"{name} must be between {MIN_DURATION} s and {MAX_DURATION} s, got {T!r}")
    return T


def _is_scalar(t):
    return isinstance(t, (float, int)) or (isinstance(t, np.ndarray) and t.ndim == 0) or isinstance(t, np.floating)


def _scalar_time(t, T):
    """Clipped scalar time (the scalar fast paths: ~10x cheaper than numpy on 0-d arrays, they run
    once per control cycle) and whether t lies outside [0, T]."""
    t = float(t)
    if not math.isfinite(t):
        raise InvalidInputError("time must be finite")
    return min(max(t, 0.0), T), (t < 0.0 or t > T)


def _times(t):
    t = np.asarray(t, dtype=float)
    if not np.isfinite(t).all():
        raise InvalidInputError("time must be finite")
    return t


def _finish(t, s, ds, dds, T):
    """Rest outside [0, T]; floats for a scalar t."""
    outside = (t < 0.0) | (t > T)
    if np.any(outside):
        ds = np.where(outside, 0.0, ds)
        dds = np.where(outside, 0.0, dds)
    if t.ndim == 0:
        return float(s), float(ds), float(dds)
    return s, ds, dds


def _ramp(T, ramp):
    ta = T / 4.0 if ramp is None else ramp
    try:
        ta = float(ta)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"ramp (acceleration time) must be a number of seconds, got {ramp!r}") from exc
    if not (math.isfinite(ta) and 0.0 < ta <= 0.5 * T):
        raise InvalidInputError(f"ramp (acceleration time) must be in (0, duration/2] = (0, {0.5 * T:g}] s, "
                                f"got {ramp!r}")
    return ta


def _accel_time(T, accel_fraction):
    try:
        f = float(accel_fraction)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"accel_fraction must be a number, got {accel_fraction!r}") from exc
    if not (math.isfinite(f) and 0.0 < f < 1.0):
        raise InvalidInputError("accel_fraction (acceleration time / duration) must be in (0, 1), got "
                                f"{accel_fraction!r}")
    return f * T


# ---------------------------------------------------------------------------- profiles
def parabolic(t, duration: float = 1.0):
    """(s, ds/dt, d2s/dt2) of the constant-acceleration / constant-deceleration profile."""
    T = _duration(duration)
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        tau = tc / T
        if tau < 0.5:
            s, ds, dds = 2.0 * tau * tau, 4.0 * tau / T, 4.0 / (T * T)
        else:
            r = 1.0 - tau
            s, ds, dds = 1.0 - 2.0 * r * r, 4.0 * r / T, -4.0 / (T * T)
        return (s, 0.0, 0.0) if out else (s, ds, dds)
    t = _times(t)
    tau = np.clip(t, 0.0, T) / T
    r = 1.0 - tau
    acc = tau < 0.5
    s = np.where(acc, 2.0 * tau * tau, 1.0 - 2.0 * r * r)
    ds = np.where(acc, tau, r) * (4.0 / T)
    dds = np.where(acc, 4.0, -4.0) / (T * T)
    return _finish(t, s, ds, dds, T)


def trapezoidal(t, duration: float = 1.0, ramp: float | None = None):
    """(s, ds/dt, d2s/dt2) of the trapezoidal velocity profile; ramp = ta (default duration / 4)."""
    T = _duration(duration)
    ta = _ramp(T, ramp)
    v = 1.0 / (T - ta)
    a = v / ta
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        tr = T - tc
        if tc < ta:
            s, ds, dds = 0.5 * a * tc * tc, a * tc, a
        elif tc > T - ta:
            s, ds, dds = 1.0 - 0.5 * a * tr * tr, a * tr, -a
        else:
            s, ds, dds = 0.5 * a * ta * ta + v * (tc - ta), v, 0.0
        return (s, 0.0, 0.0) if out else (s, ds, dds)
    t = _times(t)
    tc = np.clip(t, 0.0, T)
    tr = T - tc
    acc, dec = tc < ta, tc > T - ta
    s = np.where(acc, 0.5 * a * tc * tc, np.where(dec, 1.0 - 0.5 * a * tr * tr, 0.5 * a * ta * ta + v * (tc - ta)))
    ds = np.where(acc, a * tc, np.where(dec, a * tr, v))
    dds = np.where(acc, a, np.where(dec, -a, 0.0))
    return _finish(t, s, ds, dds, T)


def sine_on_ramp(t, duration: float = 1.0):
    """(s, ds/dt, d2s/dt2) of Codourey's sine-on-ramp profile s = tau - sin(2 pi tau) / (2 pi)."""
    T = _duration(duration)
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        x = _TWO_PI * tc / T
        sx = math.sin(x)
        s = (x - sx) / _TWO_PI
        return (s, 0.0, 0.0) if out else (s, (1.0 - math.cos(x)) / T, (_TWO_PI / (T * T)) * sx)
    t = _times(t)
    x = _TWO_PI * np.clip(t, 0.0, T) / T
    sx, cx = np.sin(x), np.cos(x)
    s = x / _TWO_PI - sx / _TWO_PI
    ds = (1.0 - cx) / T
    dds = (_TWO_PI / (T * T)) * sx
    return _finish(t, s, ds, dds, T)


def asymmetric_sine_on_ramp(t, duration: float = 1.0, accel_fraction: float = 1.0 / 3.0):
    """(s, ds/dt, d2s/dt2) of Codourey's nonsymmetrical sine-on-ramp; Ta = accel_fraction * T."""
    T = _duration(duration)
    Ta = _accel_time(T, accel_fraction)
    Td = T - Ta
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        if tc < Ta:
            x = math.pi * tc / Ta
            sx = math.sin(x)
            s, ds, dds = (tc - (Ta / math.pi) * sx) / T, (1.0 - math.cos(x)) / T, math.pi / (Ta * T) * sx
        else:
            u = tc - Ta
            x = math.pi * u / Td
            sx = math.sin(x)
            s, ds, dds = (Ta + u + (Td / math.pi) * sx) / T, (1.0 + math.cos(x)) / T, -math.pi / (Td * T) * sx
        return (s, 0.0, 0.0) if out else (s, ds, dds)
    t = _times(t)
    tc = np.clip(t, 0.0, T)
    acc = tc < Ta
    u = np.where(acc, tc, tc - Ta)
    x = np.where(acc, math.pi / Ta, math.pi / Td) * u          # phase of the half sine
    sx, cx = np.sin(x), np.cos(x)
    s = np.where(acc, u - (Ta / math.pi) * sx, Ta + u + (Td / math.pi) * sx) / T
    ds = np.where(acc, 1.0 - cx, 1.0 + cx) / T
    dds = np.where(acc, math.pi / (Ta * T), -math.pi / (Td * T)) * sx
    return _finish(t, s, ds, dds, T)


def trig_spline3(t, duration: float = 1.0):
    """(s, ds/dt, d2s/dt2) of the 3rd-order trigonometric rest-to-rest spline on [0, duration]."""
    T = _duration(duration)
    w = math.pi / T
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        th = w * tc
        c1, c3 = math.cos(th), math.cos(3.0 * th)
        s = 0.5 - 0.5625 * c1 + 0.0625 * c3
        if out:
            return s, 0.0, 0.0
        return s, w * (0.5625 * math.sin(th) - 0.1875 * math.sin(3.0 * th)), w * w * 0.5625 * (c1 - c3)
    t = _times(t)
    th = math.pi * np.clip(t, 0.0, T) / T
    c1, c3 = np.cos(th), np.cos(3.0 * th)
    s = 0.5 - 0.5625 * c1 + 0.0625 * c3
    ds = w * (0.5625 * np.sin(th) - 0.1875 * np.sin(3.0 * th))
    dds = w * w * 0.5625 * (c1 - c3)
    return _finish(t, s, ds, dds, T)


def quintic(t, duration: float = 1.0):
    """(s, ds/dt, d2s/dt2) of the quintic rest-to-rest polynomial s = 10 tau^3 - 15 tau^4 + 6 tau^5."""
    T = _duration(duration)
    if _is_scalar(t):
        tc, out = _scalar_time(t, T)
        x = tc / T
        x2 = x * x
        s = x2 * x * (10.0 + x * (-15.0 + 6.0 * x))
        if out:
            return s, 0.0, 0.0
        return s, x2 * (30.0 + x * (-60.0 + 30.0 * x)) / T, x * (60.0 + x * (-180.0 + 120.0 * x)) / (T * T)
    t = _times(t)
    x = np.clip(t, 0.0, T) / T
    x2 = x * x
    s = x2 * x * (10.0 + x * (-15.0 + 6.0 * x))
    ds = x2 * (30.0 + x * (-60.0 + 30.0 * x)) / T
    dds = x * (60.0 + x * (-180.0 + 120.0 * x)) / (T * T)
    return _finish(t, s, ds, dds, T)


#: profile name (as used in specs, YAML and node parameters) -> function
PROFILES = {
    "parabolic": parabolic,
    "trapezoidal": trapezoidal,
    "sine_on_ramp": sine_on_ramp,
    "asymmetric_sine_on_ramp": asymmetric_sine_on_ramp,
    "trig_spline3": trig_spline3,
    "quintic": quintic,
}

#: options each profile accepts besides (t, duration)
PROFILE_OPTIONS = {"trapezoidal": ("ramp",), "asymmetric_sine_on_ramp": ("accel_fraction",)}


def profile_name(profile) -> str:
    """The registered name of a profile given by name or as one of the PROFILES functions."""
    if isinstance(profile, str):
        if profile not in PROFILES:
            raise InvalidInputError(f"profile must be one of {sorted(PROFILES)}, got {profile!r}")
        return profile
    for name, f in PROFILES.items():
        if f is profile:
            return name
    raise InvalidInputError(f"profile must be a name in {sorted(PROFILES)} or one of their functions, got {profile!r}")


def profile_function(profile, options=None):
    """profile(t, duration) -> (s, ds, dds) for a name (or registered function) and its options."""
    name = profile_name(profile)
    options = dict(options or {})
    allowed = PROFILE_OPTIONS.get(name, ())
    bad = sorted(set(options) - set(allowed))
    if bad:
        raise InvalidInputError(f"profile '{name}' takes options {list(allowed)}, got unknown {bad}")
    f = PROFILES[name]
    if not options:
        return f
    return lambda t, duration: f(t, duration, **options)


# ---------------------------------------------------------------------------- closed forms
class ProfilePeaks(NamedTuple):
    """Peaks of a unit move (s from 0 to 1) over [0, T]: max s', max s'' > 0, max -s''."""

    velocity: float
    acceleration: float
    deceleration: float


def profile_peaks(name, duration: float = 1.0, **options) -> ProfilePeaks:
    """Peak rate, acceleration and deceleration of a unit move, in closed form (module docstring)."""
    name = profile_name(name)
    T = _duration(duration)
    if name == "parabolic":
        return ProfilePeaks(2.0 / T, 4.0 / T ** 2, 4.0 / T ** 2)
    if name == "trapezoidal":
        ta = _ramp(T, options.get("ramp"))
        v = 1.0 / (T - ta)
        return ProfilePeaks(v, v / ta, v / ta)
    if name == "sine_on_ramp":
        return ProfilePeaks(2.0 / T, _TWO_PI / T ** 2, _TWO_PI / T ** 2)
    if name == "asymmetric_sine_on_ramp":
        Ta = _accel_time(T, options.get("accel_fraction", 1.0 / 3.0))
        return ProfilePeaks(2.0 / T, math.pi / (Ta * T), math.pi / ((T - Ta) * T))
    if name == "trig_spline3":
        v, a = trig_spline3_peaks(T)
        return ProfilePeaks(v, a, a)
    # quintic
    return ProfilePeaks(15.0 / (8.0 * T), 10.0 / (math.sqrt(3.0) * T ** 2), 10.0 / (math.sqrt(3.0) * T ** 2))


def trig_spline3_peaks(duration: float = 1.0):
    """(max |ds/dt|, max |d2s/dt2|) of ``trig_spline3`` over [0, duration], in closed form.

    s' peaks at theta = pi/2 with 3 pi / (4 T). s'' = (pi/T)^2 9/16 (cos th - cos 3 th) =
    (pi/T)^2 9/16 * 4 cos th sin^2 th, extreme at cos th = 1/sqrt(3): (pi/T)^2 9/16 * 8 / (3 sqrt 3).
    """
    T = _duration(duration)
    w = math.pi / T
    return 0.75 * w, w * w * 0.5625 * 8.0 / (3.0 * math.sqrt(3.0))


def profile_integral(name, t, duration: float = 1.0, **options):
    """Closed-form I(t) = integral_0^t s(t') dt' (t scalar or array; t > T continues with s = 1).

    The symmetric profiles (all but the asymmetric sine-on-ramp) satisfy s(T - t) = 1 - s(t),
    hence I(t) = t - T/2 + I(T - t) for t > T/2; their first-half forms are below.
    """
    name = profile_name(name)
    T = _duration(duration)
    if _is_scalar(t):
        return _integral_scalar(name, float(t), T, options)
    t = _times(t)
    tc = np.clip(t, 0.0, T)
    if name == "sine_on_ramp":
        x = tc / T
        I = T * (0.5 * x * x + (np.cos(_TWO_PI * x) - 1.0) / (_TWO_PI * _TWO_PI))
    elif name == "trig_spline3":
        th = math.pi * tc / T
        I = (T / math.pi) * (0.5 * th - 0.5625 * np.sin(th) + np.sin(3.0 * th) / 48.0)
    elif name == "quintic":
        x = tc / T
        I = T * x ** 4 * (2.5 + x * (-3.0 + x))
    elif name == "asymmetric_sine_on_ramp":
        Ta = _accel_time(T, options.get("accel_fraction", 1.0 / 3.0))
        Td = T - Ta
        acc = tc < Ta
        u = np.where(acc, tc, tc - Ta)
        kA, kD = Ta / math.pi, Td / math.pi
        I_Ta = (0.5 * Ta * Ta - 2.0 * kA * kA) / T
        I = np.where(acc, (0.5 * u * u + kA * kA * (np.cos(u / kA) - 1.0)) / T,
                     I_Ta + (Ta * u + 0.5 * u * u + kD * kD * (1.0 - np.cos(u / kD))) / T)
    else:
        h = np.minimum(tc, T - tc)                                   # first-half time
        if name == "parabolic":
            I1 = (2.0 / 3.0) * h ** 3 / T ** 2
        else:  # trapezoidal
            ta = _ramp(T, options.get("ramp"))
            v = 1.0 / (T - ta)
            a = v / ta
            c = h - ta
            I1 = np.where(h < ta, a * h ** 3 / 6.0, a * ta ** 3 / 6.0 + 0.5 * a * ta * ta * c + 0.5 * v * c * c)
        I = np.where(tc <= 0.5 * T, I1, tc - 0.5 * T + I1)
    I = I + np.maximum(t - T, 0.0)
    return float(I) if t.ndim == 0 else I


def _integral_scalar(name, t, T, options):
    """``profile_integral`` for one time, in math (same formulas)."""
    if not math.isfinite(t):
        raise InvalidInputError("time must be finite")
    tc = min(max(t, 0.0), T)
    if name == "sine_on_ramp":
        x = tc / T
        I = T * (0.5 * x * x + (math.cos(_TWO_PI * x) - 1.0) / (_TWO_PI * _TWO_PI))
    elif name == "trig_spline3":
        th = math.pi * tc / T
        I = (T / math.pi) * (0.5 * th - 0.5625 * math.sin(th) + math.sin(3.0 * th) / 48.0)
    elif name == "quintic":
        x = tc / T
        I = T * x ** 4 * (2.5 + x * (-3.0 + x))
    elif name == "asymmetric_sine_on_ramp":
        Ta = _accel_time(T, options.get("accel_fraction", 1.0 / 3.0))
        kA, kD = Ta / math.pi, (T - Ta) / math.pi
        if tc < Ta:
            I = (0.5 * tc * tc + kA * kA * (math.cos(tc / kA) - 1.0)) / T
        else:
            u = tc - Ta
            I = (0.5 * Ta * Ta - 2.0 * kA * kA + Ta * u + 0.5 * u * u + kD * kD * (1.0 - math.cos(u / kD))) / T
    else:
        h = min(tc, T - tc)
        if name == "parabolic":
            I1 = (2.0 / 3.0) * h ** 3 / T ** 2
        else:  # trapezoidal
            ta = _ramp(T, options.get("ramp"))
            v = 1.0 / (T - ta)
            a = v / ta
            c = h - ta
            I1 = a * h ** 3 / 6.0 if h < ta else a * ta ** 3 / 6.0 + 0.5 * a * ta * ta * c + 0.5 * v * c * c
        I = I1 if tc <= 0.5 * T else tc - 0.5 * T + I1
    return I + max(t - T, 0.0)
