"""Exceptions of the pkm_control core.

Every failure names the quantity, its value and the limit it broke, so that a
node can log it verbatim and a script can act on the type.
"""

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


def check_vector(name, value, size):
    """Return ``value`` as a float array of shape ``size`` (int or tuple) or raise InvalidInputError."""
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{name} must be numeric, got {value!r}") from exc
    shape = (size,) if isinstance(size, int) else tuple(size)
    if arr.shape != shape:
        raise InvalidInputError(f"{name} must have shape {shape}, got {arr.shape}")
    if not np.isfinite(arr).all():
        raise InvalidInputError(f"{name} must be finite, got {np.array2string(arr, precision=6)}")
    return arr


def check_number(what: str, value) -> float:
    """``value`` as a finite float, or InvalidInputError saying ``what`` must be a finite number."""
    try:
        x = float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a number, got {value!r}") from exc
    if not np.isfinite(x):
        raise InvalidInputError(f"{what} must be finite, got {value!r}")
    return x
