"""Exceptions of the pkm_control core.

Every failure names the quantity, its value and the limit it broke, so that a
node can log it verbatim and a script can act on the type.
"""

import math

import numpy as np


class PkmError(Exception):
    """Base class of all pkm_control errors."""


class InvalidModelError(PkmError):
    """A description (URDF, closures YAML, config) is inconsistent or incomplete."""


class InvalidInputError(PkmError, ValueError):
    """An argument has the wrong size, is not finite, or is otherwise malformed."""


class UnreachablePoseError(PkmError):
    """The pose cannot be reached by the mechanism geometry (e.g. a leg too short)."""


class JointLimitError(UnreachablePoseError):
    """The pose is geometrically reachable but a joint leaves its range."""


class SingularConfigurationError(PkmError):
    """The configuration is (numerically) singular for the requested operation."""


class ConvergenceError(PkmError):
    """An iterative solver did not converge; the message gives iterations and residual."""


class NotProvidedError(PkmError, NotImplementedError):
    """A model object does not provide the computation asked of it (e.g. a paper formulation without a compiled
    batch path); the message names the computation and the object."""


#: the largest magnitude accepted for a component of a platform pose, twist, acceleration or wrench, and of a
#: joint position, in SI units (m, rad, m/s, rad/s, m/s^2, rad/s^2, N, Nm). Six orders of magnitude above
#: anything the robots here do (workspaces of a few metres, speeds of a few m/s, forces of kN), and small
#: enough that the products the kinematics and dynamics form (squared rates, omega x (omega x b), rates over
#: a near-singular pivot) stay far from float overflow: a finite input then gives a finite output.
MAGNITUDE_LIMIT = 1e6


def excerpt(value, limit: int = 40) -> str:
    """``value`` for an error message (a string as it is, anything else as its repr), cut after ``limit``
    characters: a 5000-character name keeps the message short."""
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"


def all_finite(a: np.ndarray) -> bool:
    """Every component of the float array ``a`` is finite. A small vector (the per-period checks of the control
    loop) is summed as Python floats first: NaN and inf make the sum non-finite, with no numpy call and no
    floating-point warning, a tenth of ``np.isfinite(a).all()``'s cost; only when the sum is not finite (or the
    array is large) does the exact per-component test decide (a sum of finite values beyond 1e308 overflows)."""
    if a.size <= 64 and math.isfinite(sum(a.reshape(-1).tolist())):
        return True
    return bool(np.isfinite(a).all())


def check_vector(name, value, size, bound: float | None = None):
    """Return ``value`` as a float array of shape ``size`` (int or tuple) or raise InvalidInputError.

    bound: the largest magnitude accepted for each component (e.g. MAGNITUDE_LIMIT), or None.
    """
    if type(value) is np.ndarray and value.dtype == np.float64:      # the common case: no conversion
        arr = value
    else:
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"{name} must be numeric, got {excerpt(value)}") from exc
    shape = (size,) if isinstance(size, int) else tuple(size)
    if arr.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {arr.shape}")
    if not all_finite(arr):
        raise InvalidInputError(f"{name} must be finite, got {np.array2string(arr, precision=6)}")
    if bound is not None and arr.size and np.abs(arr).max() > bound:
        raise InvalidInputError(f"{name} has a component of magnitude {np.abs(arr).max():.6g}, beyond the limit "
                                f"{bound:g} (SI units)")
    return arr


def check_number(what: str, value) -> float:
    """``value`` as a finite float, or InvalidInputError saying ``what`` must be a finite number."""
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a number, got {excerpt(value)!r}") from exc
    except OverflowError as exc:    # an int of thousands of digits
        digits = int(value.bit_length() * 0.30103) + 1 if isinstance(value, int) else "many"
        raise InvalidInputError(f"{what} must be a finite number, got an integer of about {digits} digits") from exc
    if not np.isfinite(x):
        raise InvalidInputError(f"{what} must be finite, got {value!r}")
    return x
