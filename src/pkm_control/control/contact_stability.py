"""Sampled-data stability of a force law on a contact (issue 24): the stiffest environment a law's gains hold at
the control period h.

In closed loop a force law oscillates on a surface stiffer than its gains hold at the period, whatever the plant's
integrator (docs/force-control.md: Stewart with stiffness control at 2 kHz oscillated at 8e8..1e9 N/m, where the
contact mode sqrt(k_e / m) nears the Nyquist frequency pi / h). That is the sampled law's, not the simulation's: a
real controller at 2 kHz has it too.

The model (one direction, the surface's normal): the platform's effective mass m at the tool along the normal
(hardware.simulated.contact_mass), the surface's Kelvin-Voigt spring k_e and damper c_e, x the tool's penetration
(positive into the surface), the law's force u on the platform along -n held over each period (zero-order hold):

    m x'' = -c_e x' - k_e x + u,   u(t) = u_k for t_k <= t < t_k + h

Over one period the plant is exactly (ZOH discretization, A = [[0, 1], [-k_e / m, -c_e / m]], B = [0, 1 / m]^T)

    s_{k+1} = Phi s_k + Gamma u_k,   Phi = e^{A h},   Gamma = int_0^h e^{A r} dr B,   s = (x, x')

and the law, linearized about the pressing equilibrium along the normal, is a discrete linear system on the sampled
measurements y_k = (x_k, x'_k, f_k = k_e x_k + c_e x'_k) (the F/T sensor without its filter):

    z_{k+1} = A_c z_k + B_c y_k,   u_k = C_c z_k + D_c y_k

so the closed loop is (s, z)_{k+1} = [[Phi + Gamma D_c Y, Gamma C_c], [B_c Y, A_c]] (s, z)_k, Y = [[1, 0], [0, 1],
[k_e, c_e]]: stable exactly when its spectral radius is below 1 (``radius``). The laws' (A_c, B_c, C_c, D_c)
along the normal, with the gains of the task coordinate the normal is (kp, kd, ...; ``law_gains``):

* stiffness (Stiffness), impedance_no_force (M(X) e'' + D_d e' + K_d e = F_e): D_c = [-kp, -kd, 0] (K_d, D_d);
* direct_force (DirectForce, F_d the set-point, z = Ki int e_F, updated before use): e_F = -f,
  u = kp (kf e_F + z_{k+1} - x) - kd x', z_{k+1} = z_k + h ki e_F: A_c = 1, B_c = [0, 0, -h ki], C_c = kp,
  D_c = [-kp, -kd, -kp (kf + h ki)];
* inner_force (InnerForce, Fig. 31): u = (1 + Kf)(-kp x - kd x') - Kf f: D_c = [-(1 + Kf) kp, -(1 + Kf) kd, -Kf];
* impedance (Impedance, Fig. 36, an exact model m^ = m): u = m / m_d (-k_d x - d_d x' - f) + f:
  D_c = [-m k_d / m_d, -m d_d / m_d, 1 - m / m_d].

Not covered (``law_gains`` gives None: no check): the laws with the actuator forces as the measurement (Figs. 29,
30, 32, 33: the previous period's command in the loop), the joint-space motion loops and admittance (J^T Kp_q J along
the normal, a joint-space spring), and the sensor's low-pass filter (its lag lowers the bound of the laws that feed
the measured force back). The stable set in k_e is not an interval in general: past the first bound the sampled
loop may be stable again in bands (aliasing); ``largest_stable_stiffness`` gives the first bound, the stiffness
below which every value is stable, and ``check`` refuses a surface beyond it.
"""

from __future__ import annotations

import numpy as np
from scipy.linalg import expm

from ..errors import InvalidInputError


def zoh(mass: float, stiffness, damping: float, h: float) -> tuple[np.ndarray, np.ndarray]:
    """(Phi, Gamma) of m x'' + c x' + k x = u with u held over h (module docstring): the augmented exponential
    e^{[[A, B], [0, 0]] h} = [[Phi, Gamma], [0, 1]]; one per stiffness when ``stiffness`` is an array (N, 2, 2),
    (N, 2, 1)."""
    k = np.asarray(stiffness, float)
    E = np.zeros(k.shape + (3, 3))
    E[..., 0, 1], E[..., 1, 0], E[..., 1, 1], E[..., 1, 2] = 1.0, -k / mass, -damping / mass, 1.0 / mass
    F = expm(E * h)
    return F[..., :2, :2], F[..., :2, 2:]


def radius(mass: float, stiffness, damping: float, h: float, law):
    """The spectral radius of the sampled closed loop of ``law`` = (A_c, B_c, C_c, D_c) (module docstring) on the
    contact (mass kg, stiffness N/m, damping N s/m) at the period h (s); < 1: stable. One per stiffness when
    ``stiffness`` is an array."""
    Ac, Bc, Cc, Dc = (np.asarray(a, float) for a in law)
    k = np.asarray(stiffness, float)
    Phi, Gamma = zoh(mass, k, damping, h)
    Y = np.zeros(k.shape + (3, 2))
    Y[..., 0, 0], Y[..., 1, 1], Y[..., 2, 0], Y[..., 2, 1] = 1.0, 1.0, k, damping
    nz = Ac.shape[0]
    M = np.zeros(k.shape + (2 + nz, 2 + nz))
    M[..., :2, :2] = Phi + Gamma @ Dc @ Y
    M[..., :2, 2:] = Gamma @ Cc.reshape(1, nz)
    M[..., 2:, :2] = Bc.reshape(nz, 3) @ Y
    M[..., 2:, 2:] = Ac.reshape(nz, nz)
    r = np.abs(np.linalg.eigvals(M)).max(axis=-1)
    return float(r) if r.ndim == 0 else r


def law_gains(law, axis: int, mass: float, h: float):
    """(A_c, B_c, C_c, D_c) of a force law (control/force.py) along the task coordinate ``axis`` (the surface's
    normal), or None for a law the model does not cover (module docstring)."""
    from .force import DirectForce, DirectForceJointSpace, Impedance, ImpedanceNoForce, InnerForce, \
        InnerForceJointSpace, Stiffness

    none = (np.zeros((0, 0)), np.zeros((0, 3)), np.zeros((1, 0)))
    if isinstance(law, (DirectForceJointSpace, InnerForceJointSpace)):
        return None
    kp, kd = float(np.broadcast_to(law.kp, (law.dim,))[axis]), float(np.broadcast_to(law.kd, (law.dim,))[axis])
    if isinstance(law, (Stiffness, ImpedanceNoForce)):
        return (*none, np.array([[-kp, -kd, 0.0]]))
    if isinstance(law, DirectForce):
        kf, ki = (float(np.broadcast_to(g, (law.dim,))[axis]) for g in (law.kf, law.ki))
        return (np.array([[1.0]]), np.array([[0.0, 0.0, -h * ki]]), np.array([[kp]]),
                np.array([[-kp, -kd, -kp * (kf + h * ki)]]))
    if isinstance(law, InnerForce):
        return (*none, np.array([[-(1 + law.kf) * kp, -(1 + law.kf) * kd, -law.kf]]))
    if isinstance(law, Impedance):
        r = mass / float(law.m_d[axis])
        return (*none, np.array([[-r * kp, -r * kd, 1.0 - r]]))
    return None


def largest_stable_stiffness(mass: float, damping: float, h: float, law, k_max: float = 1e13) -> float:
    """The first environment stiffness (N/m) at which the sampled closed loop is no longer stable (radius >= 1),
    scanning k_e upwards from 1 N/m (40 points per decade and the stiffnesses whose contact mode is a multiple of
    the Nyquist frequency, sqrt(k / m - (c / 2m)^2) h = j pi, where Phi = +-I and a narrow unstable band sits: for
    Stewart's stiffness control at 2 kHz 1.17e9..1.23e9 N/m, stable again up to 1.36e9), then bisection to 1e-4
    relative; a band narrower than the scan's 6 % step elsewhere may be missed); k_max when stable up to it, 0 when
    unstable in free space (k_e -> 0)."""
    if radius(mass, 1e-6, damping, h, law) >= 1.0:
        return 0.0
    j = np.arange(1, int(np.sqrt(k_max / mass) * h / np.pi) + 2)
    nyquist = mass * ((j * np.pi / h) ** 2 + (damping / (2.0 * mass)) ** 2)
    grid = np.union1d(np.logspace(0.0, np.log10(k_max), int(40 * np.log10(k_max)) + 1), nyquist[nyquist < k_max])
    unstable = np.flatnonzero(radius(mass, grid, damping, h, law) >= 1.0)
    if not len(unstable):
        return float(k_max)
    lo, hi = grid[unstable[0] - 1], grid[unstable[0]]
    while hi / lo - 1.0 > 1e-4:
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if radius(mass, mid, damping, h, law) < 1.0 else (lo, mid)
    return float(hi)


def check(law, environment, effective_mass, h: float, wrench_source: str = "sensor") -> tuple:
    """Refuse (InvalidInputError) a surface of ``environment`` stiffer than ``law`` holds at the period h along its
    normal (largest_stable_stiffness on the smallest effective_mass(n) over the surface's normals, the law's gains of
    the task coordinate nearest the normal; direct_force as if force-controlled along it); the bounds per surface
    (None for a law the model does not cover, or the actuator forces as the measurement)."""
    if wrench_source != "sensor":
        return tuple(None for _ in environment.surfaces)
    bounds = []
    for i, s in enumerate(environment.surfaces):
        worst = None
        for n in s.normals():
            m = float(effective_mass(n))
            gains = law_gains(law, int(np.argmax(np.abs(n))), m, h)
            if gains is None:
                return tuple(None for _ in environment.surfaces)
            k = largest_stable_stiffness(m, s.damping, h, gains)
            worst = k if worst is None else min(worst, k)
        bounds.append(worst)
        if s.stiffness >= worst:
            raise InvalidInputError(
                f"surface {i} ({type(s).__name__.lower()}, stiffness {s.stiffness:.4g} N/m, damping {s.damping:.4g} "
                f"N s/m) is too stiff for {law.name} at the control period {h * 1e3:.4g} ms: its sampled closed loop "
                f"is unstable from {worst:.4g} N/m on (control/contact_stability.py: the contact mode sqrt(k / m) "
                f"nears the Nyquist frequency pi / h; lower the gains, the period, or the stiffness)")
    return tuple(bounds)
