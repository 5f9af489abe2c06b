"""Signal processing of a recorded run for identification (Gautier 1997; Gautier and Khalil).

M. Gautier, "Dynamic identification of robots with power model", ICRA 1997, and the practice of
Gautier-Khalil identification:

* the measured joint positions are low-pass filtered without phase shift (Butterworth, forward and
  backward: ``lowpass``), then differentiated (``derivatives``: 7-point central differences, a
  Savitzky-Golay fit of order 6, exact for polynomials up to degree 6, so that a smooth motion's
  velocity and acceleration carry a truncation error of order (omega dt)^6);
* "parallel filtering": the forces y and every column of the observation matrix W go through the
  same low-pass filter and decimation (``parallel_decimate``: scipy's decimate, Chebyshev at 0.8 of
  the new Nyquist frequency, zero phase). The filter being linear, W p = y stays true sample by
  sample, while the high-frequency content (force ripple, noise, unmodelled dynamics) is removed;
* samples where a drive was at its force limit are not in the model (the force applied is not the
  force measured): ``saturated`` marks them, the estimation drops the rows they reach.
"""

from __future__ import annotations

import numpy as np
import scipy.signal

from ..errors import InvalidInputError

#: maximal decimation of one scipy.signal.decimate call (its documentation: call it repeatedly beyond)
MAX_DECIMATION = 13


def sample_rate(t: np.ndarray, tol: float = 1e-3) -> float:
    """The sampling rate (Hz) of uniformly sampled time stamps; InvalidInputError if the intervals vary by more
    than ``tol`` relative (filters and differences assume a uniform grid; the control rate is one)."""
    dt = np.diff(t)
    step = float(np.median(dt))
    worst = int(np.argmax(np.abs(dt - step)))
    if abs(dt[worst] - step) > tol * step:
        raise InvalidInputError(f"the samples are not uniform: interval {worst} is {dt[worst]:.6g} s, the median "
                                f"{step:.6g} s (tolerance {tol:g} relative); record every control period")
    return 1.0 / step


def lowpass(x: np.ndarray, fs: float, cutoff: float, order: int = 4) -> np.ndarray:
    """Zero-phase Butterworth low-pass along axis 0 (sosfiltfilt: the order doubles, no phase shift)."""
    if not 0 < cutoff < fs / 2:
        raise InvalidInputError(f"low-pass cutoff {cutoff:g} Hz must lie in (0, {fs / 2:g}) Hz (the Nyquist "
                                f"frequency of {fs:g} Hz sampling)")
    sos = scipy.signal.butter(order, cutoff, fs=fs, output="sos")
    return scipy.signal.sosfiltfilt(sos, x, axis=0)


def derivatives(x: np.ndarray, fs: float) -> tuple[np.ndarray, np.ndarray]:
    """(xdot, xddot) of uniformly sampled x along axis 0: 7-point central differences (module docstring)."""
    dt = 1.0 / fs
    return (scipy.signal.savgol_filter(x, 7, 6, deriv=1, delta=dt, axis=0),
            scipy.signal.savgol_filter(x, 7, 6, deriv=2, delta=dt, axis=0))


def parallel_decimate(x: np.ndarray, factor: int) -> np.ndarray:
    """Low-pass filter and keep every ``factor``-th sample along axis 0 (zero phase); apply to the forces and to
    the observation matrix alike (parallel filtering)."""
    steps, rest = [], int(factor)
    for k in range(MAX_DECIMATION, 1, -1):
        while rest % k == 0:
            steps.append(k)
            rest //= k
    if rest != 1:
        raise InvalidInputError(f"decimation {factor} has a prime factor above {MAX_DECIMATION}; choose a product "
                                f"of small factors")
    out = np.asarray(x, float)
    for k in steps:
        out = scipy.signal.decimate(out, k, axis=0, zero_phase=True)
    return out


def saturated(effort: np.ndarray, limit, margin: float = 1e-3) -> np.ndarray:
    """(N,) True where any drive's |effort| is within ``margin`` (relative) of its force limit."""
    lim = np.broadcast_to(np.asarray(limit, float), effort.shape[1:])
    return np.any(np.abs(effort) >= (1.0 - margin) * lim, axis=1)


def dilate(mask: np.ndarray, reach: int) -> np.ndarray:
    """mask widened by ``reach`` samples on each side (the samples a filter of that half-length contaminates)."""
    if reach <= 0 or not mask.any():
        return mask
    return np.convolve(mask.astype(float), np.ones(2 * reach + 1), mode="same") > 0
