"""End stops of the simulated machine: stiff, damped, one-sided limits on the joints.

Every tree joint with a finite range (the actuated strokes and the limited passive joints: cardan
and universal-joint angles, arm and elbow angles, sliders, counterweights; ``end_stop_limits`` of
the kinematics family) and every limited cut joint (the ball-joint cones of the hexapods, the
planar cut joints; ``cut_joint_limits``) gets a spring-damper stop at each end. With the
penetration d > 0 beyond a limit and ddot its rate (positive into the stop), the stop force on the
joint is

    f = max(0, k d + c ddot),   directed out of the stop, zero inside the range,

a Kelvin-Voigt contact (Hunt & Crossley 1975 discuss the model) with the pull-back part cut off:
the stop only pushes, it never becomes adhesive when the joint leaves it faster than k d / c. It
enters the reduced dynamics as a generalized force through the joint's velocity map, by virtual
power as friction does (engine eq. 1): for a tree joint the row g_j of G (qdot = G xdot,
kinematics ``joint_jacobian``; for the actuated joints the rows of J), M xddot = ... + G^T tau_stop;
for a cut joint the row of its angle rate (``cut_joint_rows``; a cone angle is a torque between the
strut and the platform about the axis of the cone angle).

Passivity: with U = 1/2 k d^2, the power into the stop is f ddot >= dU/dt (equality plus c ddot^2
while in contact; f = 0 >= k d ddot when the clamp is active, since then ddot < 0). The stops
therefore never create energy, and with the stored energy U = sum_j 1/2 k_j d_j^2 the energy
balance of the machine from any start reads

    U(t) <= U(0) + W_drives(t) - (E(t) - E(0)),                                                (1)

with E = kinetic + potential energy (gravity) and W_drives the work of the actuator forces. (1) is
the compliance bound the tests check: from rest inside the ranges d_j <= sqrt(2 (W_drives - Delta E)
/ k_j). Under a constant
force F pressing a joint into its stop at rest (static equilibrium, no friction at rest), the
stop carries F minus the joint's share of gravity, d = (F - F_gravity) / k.

Gains (config ``end_stops: {natural_frequency: omega, damping_ratio: zeta}``): per joint,
k_j = m_j omega^2 and c_j = 2 zeta m_j omega, with m_j = 1 / (g_j^T M^-1 g_j) the effective mass
(or inertia) of joint j (M the task-space mass matrix), the smallest over the home and demo poses
(config ``demo_poses``): the joint alone against its stop is an oscillator of frequency <= omega
there and damping ratio zeta. Classical RK4 is stable on the negative real axis for
|lambda| h < 2.785; the contact eigenvalues -zeta omega +- i omega
sqrt(1 - zeta^2) have |lambda| = omega, and near rest the smoothed friction adds its own fast real
mode (hardware/simulated.py: up to |lambda| h = 1.6 for palida at rest). omega = 600 rad/s
(h omega = 0.3 at h = 0.5 ms) and zeta = 0.7 leave room for the contact damping 2 zeta omega =
840 1/s on top of that mode and for several stops engaged at once (the joint stiffnesses add up).
Measured, max |lambda| h of the linearized reduced dynamics pressed into the stops by +-F_max
(test_end_stops): palida 0.34, stewart 0.01, lopes 1.34, delta 1.58, planar_redundant 0.18, all
below 2.785.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import InvalidModelError
from .kernels import stop_force, stops_engaged

#: below this cut-joint angle (rad) its rate map is not sampled for the gains (a cone angle is |.|-like at 0)
_SMOOTH_ANGLE = 1e-3
#: keys of the config section ``end_stops``
NATURAL_FREQUENCY = "natural_frequency"     # rad/s
DAMPING_RATIO = "damping_ratio"


@dataclass(frozen=True)
class EndStops:
    """The stops of one robot's tree and cut joints (immutable; tree arrays in the model's q order).

    lower, upper: stop positions (-inf / inf where the joint has none); stiffness k (N/m or Nm/rad),
    damping c (N s/m or Nm s/rad); zero gains on joints without a stop. cut_*: the same for the
    limited cut joints (kinematics ``cut_joint_limits`` order).
    """

    lower: np.ndarray
    upper: np.ndarray
    stiffness: np.ndarray
    damping: np.ndarray
    names: tuple
    cut_lower: np.ndarray
    cut_upper: np.ndarray
    cut_stiffness: np.ndarray
    cut_damping: np.ndarray
    cut_names: tuple

    @classmethod
    def from_config(cls, dyn) -> "EndStops":
        """Stops at the family's ``end_stop_limits`` and ``cut_joint_limits`` with the gains of config
        ``end_stops`` (module docstring: k = m omega^2, c = 2 zeta m omega, m the smallest effective
        mass over home and the demo poses)."""
        clm, kin = dyn.model, dyn.kin
        gains = clm.spec.require("end_stops", "the simulated robot's end stops")   # omega > 0, zeta >= 0: checked
        omega, zeta = gains.natural_frequency, gains.damping_ratio
        lower, upper = kin.end_stop_limits()
        cut_names, cut_lower, cut_upper = kin.cut_joint_limits()
        poses = [kin.home_pose(), *(kin.task.pose(x) for x in clm.spec.demo_poses)]
        tree_mass = np.full(len(lower), np.inf)
        cut_mass = np.full(len(cut_names), np.inf)
        for pose in poses:
            Minv = np.linalg.inv(dyn.mass_matrix(pose))
            G = kin.joint_jacobian(pose)
            tree_mass = np.minimum(tree_mass, 1.0 / np.einsum("ij,jk,ik->i", G, Minv, G))
            if cut_names:
                # a cone angle is not differentiable where it vanishes (home of a hexapod): rows there are skipped
                C = kin.cut_joint_rows(pose)
                smooth = np.abs(kin.cut_joint_angles(pose)) > _SMOOTH_ANGLE
                cut_mass[smooth] = np.minimum(cut_mass[smooth], 1.0 / np.einsum("ij,jk,ik->i", C, Minv, C)[smooth])
        if not np.isfinite(cut_mass).all():
            bad = [n for n, m in zip(cut_names, cut_mass) if not np.isfinite(m)]
            raise InvalidModelError(f"robot '{clm.name}': cut joints {bad} have a zero angle at home and every demo "
                                    "pose: no effective mass for their stops")
        tree_mass[~(np.isfinite(lower) | np.isfinite(upper))] = 0.0
        tree = (np.array(lower, float), np.array(upper, float), tree_mass * omega ** 2, 2.0 * zeta * omega * tree_mass)
        cut = (np.array(cut_lower, float), np.array(cut_upper, float), cut_mass * omega ** 2,
               2.0 * zeta * omega * cut_mass)
        for a in tree + cut:
            a.setflags(write=False)
        return cls(*tree, tuple(clm.joint_names), *cut, tuple(cut_names))

    def penetration(self, q: np.ndarray) -> np.ndarray:
        """d >= 0 per tree joint: how far q is beyond its stop (0 inside the range)."""
        return np.maximum(self.lower - q, 0.0) + np.maximum(q - self.upper, 0.0)

    def cut_penetration(self, angles: np.ndarray) -> np.ndarray:
        """d >= 0 per limited cut joint (kinematics ``cut_joint_angles``)."""
        return np.maximum(self.cut_lower - angles, 0.0) + np.maximum(angles - self.cut_upper, 0.0)

    def torque(self, q: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Tree generalized force of the tree-joint stops (module docstring), exactly zero inside the ranges (one
        compiled call, kernels.stop_force: the simulator's every RK4 stage)."""
        out = np.empty(len(self.lower))
        stop_force(np.asarray(q, float), np.asarray(v, float), self.lower, self.upper, self.stiffness, self.damping,
                   out)
        return out

    def cut_force(self, kin, pose, twist) -> np.ndarray | None:
        """Generalized force on the task velocity of the cut-joint stops, None while every cut joint is
        inside its range (the rows of ``cut_joint_rows`` are only computed in contact)."""
        if not self.cut_names:
            return None
        angles = kin.cut_joint_angles(pose)
        if not stops_engaged(angles, self.cut_lower, self.cut_upper):
            return None
        rows = kin.cut_joint_rows(pose)
        out = np.empty(len(angles))
        stop_force(angles, rows @ twist, self.cut_lower, self.cut_upper, self.cut_stiffness, self.cut_damping, out)
        return rows.T @ out


#: slack of the energy bound (``EnergyBound``): relative to the energy that went through the system, and absolute (J)
BOUND_RELATIVE_SLACK = 1e-4
BOUND_ABSOLUTE_SLACK = 1e-6


class EnergyBound:
    """Running check of the energy bound (1) of the module docstring along one simulated run (mutable).

    Start it at a state of the plant with that state's energy E(0) = kinetic + potential, its actuated
    positions and its penetrations (the stop energy U(0) = sum 1/2 k d^2 there); then feed it every period
    with the actuator force held over the period (zero-order hold, after saturation), the actuated positions
    and the energy at its end (``update``). The drives' work over a period is then exact: W += tau . Delta q_a.
    ``violation`` compares penetrations with the bound

        U(t) <= B(t) = U(0) + W(t) - (E(t) - E(0)) + slack,      d_j <= sqrt(2 B(t) / k_j) per limited joint,

    derived from the energy balance, not from the stop code: the stops are passive (storage U, dissipation
    >= 0) and friction dissipates. Slack: classical RK4 does not conserve energy exactly; on an undamped
    oscillator its amplification is |R(i h omega)|^2 = 1 - (h omega)^6 / 72 + ..., a loss of 1e-5 of the
    energy per step at the stops' h omega = 0.3, dissipative (it only helps the bound); the other truncation
    errors (the smoothed friction's fast mode, the contact transients) are covered by BOUND_RELATIVE_SLACK of
    the energy that went through the system (|E(0)| + U(0) + sum |Delta W|) plus BOUND_ABSOLUTE_SLACK.
    """

    def __init__(self, stops: EndStops, energy: float, actuated, penetration, cut_penetration):
        self.stops = stops
        self.energy0 = self.energy = float(energy)
        self.stored0 = self.stored_energy(penetration, cut_penetration)
        self.work = 0.0
        self.through = abs(self.energy0) + self.stored0
        self._actuated = np.array(actuated, float)

    def stored_energy(self, penetration, cut_penetration) -> float:
        """U = sum_j 1/2 k_j d_j^2 over the tree and cut stops."""
        d, dc = np.asarray(penetration, float), np.asarray(cut_penetration, float)
        return 0.5 * float(self.stops.stiffness @ d ** 2 + self.stops.cut_stiffness @ dc ** 2)

    def update(self, tau, actuated, energy: float) -> None:
        """One period: ``tau`` the actuator forces held over it, ``actuated`` the actuated positions and
        ``energy`` the plant's kinetic + potential energy at its end."""
        q = np.array(actuated, float)
        dw = float(np.dot(tau, q - self._actuated))
        self.work += dw
        self.through += abs(dw)
        self._actuated = q
        self.energy = float(energy)

    @property
    def budget(self) -> float:
        """B(t) (J) with the slack: the most energy the stops can hold now."""
        return (self.stored0 + self.work - (self.energy - self.energy0) + BOUND_RELATIVE_SLACK * self.through
                + BOUND_ABSOLUTE_SLACK)

    def allowed(self) -> tuple[np.ndarray, np.ndarray]:
        """(tree, cut) largest penetration each stop may show now, sqrt(2 B / k_j) (inf without a stop)."""
        b = max(self.budget, 0.0)
        return tuple(np.where(k > 0, np.sqrt(2.0 * b / np.where(k > 0, k, 1.0)), np.inf)
                     for k in (self.stops.stiffness, self.stops.cut_stiffness))

    def violation(self, penetration, cut_penetration) -> str | None:
        """None while the penetrations (``EndStops.penetration``, ``cut_penetration``) are within the bound, else
        what broke it: the first joint beyond its limit plus its allowed penetration, or the stop energy."""
        d, dc = np.asarray(penetration, float), np.asarray(cut_penetration, float)
        es = self.stops
        if not (np.isfinite(d).all() and np.isfinite(dc).all()):
            return f"penetrations not finite: tree {d.tolist()}, cut {dc.tolist()}"
        for pen, allowed, names in zip((d, dc), self.allowed(), (es.names, es.cut_names)):
            out = np.flatnonzero(pen > allowed)
            if out.size:
                i = int(out[0])
                return (f"{names[i]} is {pen[i]:.6g} beyond its limit, more than the energy bound allows: "
                        f"sqrt(2 B / k) = {allowed[i]:.6g} (B = {self.budget:.6g} J)")
        u = self.stored_energy(d, dc)
        if u > self.budget:
            return f"stop energy {u:.6g} J exceeds the energy put in {self.budget:.6g} J"
        return None
