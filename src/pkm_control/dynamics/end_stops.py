"""End stops of the simulated machine: stiff, damped, one-sided limits on the tree joints.

Every tree joint with a finite range (the actuated strokes and the limited passive joints: cardan
and universal-joint angles, arm and elbow angles, sliders, counterweights; ``end_stop_limits`` of
the kinematics family) gets a spring-damper stop at each end. With the penetration d > 0 beyond a
limit and ddot its rate (positive into the stop), the stop force on the joint is

    f = max(0, k d + c ddot),   directed out of the stop, zero inside the range,

a Kelvin-Voigt contact (Hunt & Crossley 1975 discuss the model) with the pull-back part cut off:
the stop only pushes, it never becomes adhesive when the joint leaves it faster than k d / c. It
enters the reduced dynamics as a generalized force through the joint's velocity map, the row g_j
of G (qdot = G xdot, kinematics ``joint_jacobian``; for the actuated joints the rows of J), by
virtual power as friction does (engine eq. 1): M xddot = ... + G^T tau_stop.

Passivity: with U = 1/2 k d^2, the power into the stop is f ddot >= dU/dt (equality plus c ddot^2
while in contact; f = 0 >= k d ddot when the clamp is active, since then ddot < 0). The stops
therefore never create energy, and the energy balance of the machine from rest reads

    E(t) - E(0) + sum_j 1/2 k_j d_j^2 <= W_drives(t),                                          (1)

with E = kinetic + potential energy and W_drives the work of the actuator forces. (1) is the
compliance bound the tests check: d_j <= sqrt(2 (W_drives - Delta E) / k_j). Under a constant
force F pressing a joint into its stop at rest (static equilibrium, no friction at rest), the
stop carries F minus the joint's share of gravity, d = (F - F_gravity) / k.

Gains (config ``end_stops: {natural_frequency: omega, damping_ratio: zeta}``): per joint,
k_j = m_j omega^2 and c_j = 2 zeta m_j omega, with m_j = 1 / (g_j^T M^-1 g_j) the effective mass
(or inertia) of joint j at the home pose (M the task-space mass matrix): the joint alone against
its stop is an oscillator of frequency omega and damping ratio zeta. Classical RK4 is stable on
the negative real axis for |lambda| h < 2.785; the contact eigenvalues -zeta omega +- i omega
sqrt(1 - zeta^2) have |lambda| = omega, and near rest the smoothed friction adds its own fast real
mode (hardware/simulated.py: |lambda| h = 1.6 for palida). omega = 600 rad/s (h omega = 0.3 at
h = 0.5 ms) and zeta = 0.7 keep the sum of the contact damping 2 zeta omega = 840 1/s and the
friction mode inside the stability limit with several stops engaged at once (measured by
``SimulatedRobot.stability_factor`` against the stops: test_end_stops).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InvalidModelError

#: keys of the config section ``end_stops``
NATURAL_FREQUENCY = "natural_frequency"     # rad/s
DAMPING_RATIO = "damping_ratio"


@dataclass(frozen=True)
class EndStops:
    """The stops of one robot's tree joints (immutable; arrays in the model's q order).

    lower, upper: stop positions (-inf / inf where the joint has none); stiffness k (N/m or Nm/rad),
    damping c (N s/m or Nm s/rad); zero gains on joints without a stop.
    """

    lower: np.ndarray
    upper: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    names: tuple

    @classmethod
    def from_config(cls, dyn) -> "EndStops":
        """Stops at the family's ``end_stop_limits`` with the gains of config ``end_stops`` (module
        docstring: k = m omega^2, c = 2 zeta m omega with the effective mass m at home)."""
        clm, kin = dyn.model, dyn.kin
        spec = clm.config.get("end_stops") or {}
        try:
            omega, zeta = float(spec[NATURAL_FREQUENCY]), float(spec[DAMPING_RATIO])
        except (KeyError, TypeError, ValueError) as exc:
            raise InvalidModelError(f"robot '{clm.name}': config end_stops needs {NATURAL_FREQUENCY} (rad/s) and "
                                    f"{DAMPING_RATIO}, got {spec!r}") from exc
        if not (math.isfinite(omega) and omega > 0 and math.isfinite(zeta) and zeta >= 0):
            raise InvalidModelError(f"robot '{clm.name}': end_stops natural_frequency must be > 0 and damping_ratio "
                                    f">= 0, got {omega}, {zeta}")
        lower, upper = kin.end_stop_limits()
        home = kin.task.pose(clm.config["home"])
        G = kin.joint_jacobian(home)
        Minv = np.linalg.inv(dyn.mass_matrix(home))
        limited = np.isfinite(lower) | np.isfinite(upper)
        mass = np.zeros(len(lower))
        for j in np.flatnonzero(limited):
            mass[j] = 1.0 / float(G[j] @ Minv @ G[j])
        arrays = (np.array(lower, float), np.array(upper, float), mass * omega ** 2, 2.0 * zeta * omega * mass)
        for a in arrays:
            a.setflags(write=False)
        return cls(*arrays, tuple(clm.joint_names))

    def penetration(self, q: np.ndarray) -> np.ndarray:
        """d >= 0 per joint: how far q is beyond its stop (0 inside the range)."""
        return np.maximum(self.lower - q, 0.0) + np.maximum(q - self.upper, 0.0)

    def torque(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Tree generalized force of the stops (module docstring), exactly zero inside the ranges."""
        below, above = q < self.lower, q > self.upper
        out = np.zeros(len(q))
        if below.any():
            k, c = self.stiffness[below], self.damping[below]
            out[below] = np.maximum(k * (self.lower[below] - q[below]) - c * v[below], 0.0)
        if above.any():
            k, c = self.stiffness[above], self.damping[above]
            out[above] = -np.maximum(k * (q[above] - self.upper[above]) + c * v[above], 0.0)
        return out
