"""A compliant environment the tool of the simulated robot touches, and the 6-axis force/torque sensor that measures
the contact (issue 24; Taghirad, seed 004, chapter "Force Control": the "stiff environment" the platform interacts
with, Fig. 35's spring and damper as its impedance).

Contact (a point contact at the tool point p = x + R p_t of the platform, velocity v = v_o + omega x R p_t):

* every surface (``Plane``, ``Box``) gives the penetration d >= 0 of p and the outward normal n there;
* normal force, Kelvin-Voigt without pulling: f_n = max(0, k d + c d'), d' = -n . v, only while d > 0. At touch-down
  the force jumps from 0 to c v_n (v_n the approach speed): the impact force is bounded by c v_n + k d, and the
  force never pulls the tool into the surface on the way out;
* Coulomb friction along the surface, regularized: f_t = -mu f_n tanh(|v_t| / eps) v_t / |v_t| (v_t = v - (n . v) n,
  0 at v_t = 0), as the plant's joint friction (simulated.py, tanh(qdot / eps)): the force is Lipschitz in the
  state, so the ODE is well posed and RK4 applies; within 1 % of Coulomb's for |v_t| > 2.6 eps; stiction is the
  viscous slope mu f_n / eps below that (the tool creeps under a tangential load, it does not stick).

The sum over the surfaces, f, acts on the platform as the wrench [f; (R p_t) x f] at its origin (base frame), which
the plant's forward dynamics takes as its external wrench (engine.forward_dynamics: S^T w, eq. 1), evaluated at
every RK4 stage (dynamics/simulation.py ReducedSimulator: a wrench function of the state). The contact's potential
energy is sum k d^2 / 2 (``potential``): with c = mu = 0 the plant's energy plus it is conserved.

Stiffness and stability (``largest_stiffness``, ``check_integrable``): a contact of stiffness k and damping c on
the effective mass m of the platform at the tool along the normal (m = 1 / (u^T M^-1 u), u = S^T [n; (R p_t) x n]:
the generalized force of a unit normal force at the tool, M the plant's mass matrix on the task velocity,
engine.mass_matrix) is the mode m s^2 + c s + k = 0. A plant's integrator at the step h is stable on it only up to a
largest stiffness:

* explicit RK4 (the native plant): |R(lambda h)| <= 1 at both roots lambda, R(z) = 1 + z + z^2/2 + z^3/6 + z^4/24;
  for c = 0, sqrt(k / m) h <= 2 sqrt(2), k_max = 8 m / h^2 (the imaginary-axis limit); the damping alone needs
  c h / m <= 2.785 (the real-axis limit). Found by bisection in log k;
* semi-implicit (symplectic) Euler (MuJoCo's contact force, evaluated at the start of its step): v+ = v + h a,
  x+ = x + h v+ on m a = -k x - c v is stable for h^2 k / m + 2 h c / m < 4 (Jury's test of the 2 x 2 step matrix:
  trace 2 - h^2 k / m - h c / m, determinant 1 - h c / m), k_max = (4 m - 2 h c) / h^2.

Beyond k_max the plant's force is not the contact's: the tool bounces off (0 N) or oscillates, all finite. At k_max
itself the step cancels the physical damping (|R| = 1, no decay: measured, the Stewart platform at 1.0e9 N/m had
not settled after 0.2 s), so a plant accepts a surface only up to ``STIFFNESS_MARGIN`` k_max (RK4 at c = 0:
sqrt(k / m) h <= 2, |R| = 0.75 per step). Each plant computes that limit per surface once at configuration (the
effective mass at home, the smallest over the surface's normals) and refuses a stiffer surface
(``check_integrable``: one InvalidInputError naming the stiffness, the step, the largest stiffness and the largest
step that would integrate it); docs/force-control.md has the numbers.
The regularized friction adds the slope mu f_n / eps along the surface (the real-axis bound, not checked here).

Parameters in YAML (config/environment.yaml: one section per robot, the tool point, the surfaces and the sensor).

``WrenchSensor``: the 6-axis force/torque sensor at the tool point (platform axes): what the platform applies to the
environment, F_e = -[R^T f; R^T m_t] (m_t the contact's moment about the tool point: 0 for the point contact here,
MuJoCo's contact points lie off it, hardware/mujoco_contact.py), plus a constant ``bias``,
Gaussian noise (``noise_std`` per axis) and a first-order low-pass of cut-off ``cutoff`` Hz, discretized exactly for
a sample held over the period: y+ = a y + (1 - a) x, a = exp(-2 pi f_c dt) (0: no filter). The filter starts at the
first sample (no start transient). One draw per control period from the robot's measurement generator.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass

import numpy as np
import yaml

from ..control.force import WrenchMeasurement
from ..dynamics import point_contact
from ..errors import InvalidInputError, InvalidModelError, check_vector
from ..kinematics.task_space import Pose, rpy_to_matrix

#: eps (m/s) of the regularized Coulomb friction when the YAML does not say
DEFAULT_SLIP_SPEED = 1e-3
#: m: the largest tool offset (each component of tool_point) accepted
MAX_TOOL = 10.0
#: m: ContactEnvironment.free's margin beyond the distance the tool travels at its speed in one step
FREE_MARGIN = 1e-4


def _nonnegative(what: str, x) -> float:
    try:
        x = float(x)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"{what} must be a number, got {str(x)[:80]!r}") from exc
    if not (np.isfinite(x) and x >= 0):
        raise InvalidInputError(f"{what} must be finite and >= 0, got {x}")
    return x


@dataclass(frozen=True)
class Surface(ABC):
    """A compliant surface: normal stiffness (N/m), damping (N s/m), Coulomb friction coefficient mu, slip speed
    eps (m/s) of the regularized friction (module docstring)."""

    stiffness: float
    damping: float = 0.0
    friction: float = 0.0
    slip_speed: float = DEFAULT_SLIP_SPEED

    def __post_init__(self):
        for what in ("stiffness", "damping", "friction", "slip_speed"):
            object.__setattr__(self, what, _nonnegative(f"surface {what}", getattr(self, what)))
        if not self.stiffness > 0 or not self.slip_speed > 0:
            raise InvalidInputError(f"surface stiffness and slip_speed must be > 0, got {self.stiffness}, "
                                    f"{self.slip_speed}")

    @abstractmethod
    def penetration(self, p: np.ndarray) -> tuple[float, np.ndarray]:
        """(d, n): the depth d >= 0 of the point p inside the surface (0: outside) and the outward normal there."""

    def force(self, p: np.ndarray, v: np.ndarray, max_slope: float = np.inf) -> np.ndarray:
        """The force (N, base frame) on the tool at p moving with v (module docstring); ``max_slope`` (N s/m): the
        friction's viscous slope mu f_n / eps is held at most this (ContactEnvironment.max_slope). One law for every
        plant: the compiled kernel of dynamics/point_contact.py."""
        return point_contact.surface_force(self.kernel_row(), p, v, max_slope)

    @abstractmethod
    def kernel_row(self) -> np.ndarray:
        """The surface as a row of the compiled kernel (dynamics/point_contact.py)."""

    @abstractmethod
    def clearance(self, p: np.ndarray) -> float:
        """The distance (m) of the point p from the surface, 0 inside it."""

    @abstractmethod
    def normals(self) -> tuple:
        """The outward normals the surface can push the tool along (base frame; a box's three axes, either
        sign)."""

    def potential(self, p: np.ndarray) -> float:
        """k d^2 / 2 (J)."""
        d = self.penetration(p)[0]
        return 0.5 * self.stiffness * d * d


@dataclass(frozen=True)
class Plane(Surface):
    """The half-space below the plane through ``point`` with the outward unit ``normal`` (base frame)."""

    point: np.ndarray = None
    normal: np.ndarray = None

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "point", check_vector("plane point", self.point, 3))
        n = check_vector("plane normal", self.normal, 3)
        if not np.linalg.norm(n) > 1e-9:
            raise InvalidInputError(f"plane normal must not be zero, got {n.tolist()}")
        object.__setattr__(self, "normal", n / np.linalg.norm(n))

    def penetration(self, p):
        d = float(self.normal @ (self.point - p))
        return max(d, 0.0), self.normal

    def clearance(self, p):
        return max(float(self.normal @ (p - self.point)), 0.0)

    def kernel_row(self):
        return point_contact.plane_row(self.stiffness, self.damping, self.friction, self.slip_speed, self.point,
                                       self.normal)

    def normals(self):
        return (self.normal,)


@dataclass(frozen=True)
class Box(Surface):
    """A solid box: ``center`` (base frame), ``half_extents`` (m, > 0) along the axes of ``rotation``. A point inside
    is pushed out through the nearest face (its depth and that face's normal)."""

    center: np.ndarray = None
    half_extents: np.ndarray = None
    rotation: np.ndarray = None

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "center", check_vector("box center", self.center, 3))
        h = check_vector("box half_extents", self.half_extents, 3)
        if not (h > 0).all():
            raise InvalidInputError(f"box half_extents must be > 0 m, got {h.tolist()}")
        object.__setattr__(self, "half_extents", h)
        R = np.eye(3) if self.rotation is None else np.asarray(self.rotation, float)
        if R.shape != (3, 3) or not np.allclose(R.T @ R, np.eye(3), atol=1e-9):
            raise InvalidInputError("box rotation must be a 3 x 3 rotation matrix")
        object.__setattr__(self, "rotation", R)

    def penetration(self, p):
        local = self.rotation.T @ (p - self.center)
        depth = self.half_extents - np.abs(local)
        if not (depth > 0).all():
            return 0.0, self.rotation[:, 2]
        i = int(np.argmin(depth))
        return float(depth[i]), self.rotation[:, i] * (1.0 if local[i] >= 0 else -1.0)

    def clearance(self, p):
        local = self.rotation.T @ (p - self.center)
        return float(np.linalg.norm(np.maximum(np.abs(local) - self.half_extents, 0.0)))

    def kernel_row(self):
        return point_contact.box_row(self.stiffness, self.damping, self.friction, self.slip_speed, self.center,
                                     self.half_extents, self.rotation)

    def normals(self):
        return tuple(self.rotation.T)


@dataclass(frozen=True)
class ContactEnvironment:
    """The surfaces the tool point (m, platform frame) can touch (module docstring). Immutable."""

    tool_point: np.ndarray
    surfaces: tuple
    max_slope: float = np.inf        # N s/m: the friction's viscous slope at most (friction_limited; inf: none)

    def __post_init__(self):
        # m, platform frame: a tool longer than MAX_TOOL is no tool of these machines (a typo, a unit error)
        object.__setattr__(self, "tool_point", check_vector("tool_point (m)", self.tool_point, 3, MAX_TOOL))
        object.__setattr__(self, "surfaces", tuple(self.surfaces))
        bad = [s for s in self.surfaces if not isinstance(s, Surface)]
        if bad:
            raise InvalidInputError(f"surfaces must be Plane or Box, got {type(bad[0]).__name__}")
        rows = np.array([s.kernel_row() for s in self.surfaces]).reshape(-1, point_contact.SURFACE_COLUMNS)
        tool = self.tool_point.copy()
        rows.setflags(write=False)
        tool.setflags(write=False)
        object.__setattr__(self, "_form", (tool, rows, float(self.max_slope)))

    def kernel_form(self) -> tuple:
        """(tool point, surface rows, max_slope): the environment in the compiled kernel's form
        (dynamics/point_contact.py; read-only arrays), built once."""
        return self._form

    def tool(self, pose: Pose, platform_twist: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(R p_t, p, v): the tool point's offset from the platform origin, its position and velocity (base frame);
        platform_twist (v_o, omega) in the base frame (6; TaskSpace.twist_map of the task velocity)."""
        r = pose.rotation @ self.tool_point
        return r, pose.position + r, platform_twist[:3] + np.cross(platform_twist[3:], r)

    def force(self, pose: Pose, platform_twist) -> np.ndarray:
        """f (N, base frame): the force of all surfaces on the tool."""
        return self.wrench(pose, platform_twist)[:3]

    def wrench(self, pose: Pose, platform_twist) -> np.ndarray:
        """[f; (R p_t) x f]: the contact's wrench on the platform at its origin (base frame; the plant's external
        wrench), by the compiled kernel every plant uses (dynamics/point_contact.py)."""
        return point_contact.contact_wrench(pose.position, pose.rotation, platform_twist, self._form)

    def free(self, pose: Pose, platform_twist, h: float, margin: float = FREE_MARGIN) -> bool:
        """No surface can touch the tool within a step of h s: every surface farther than |v| h + ``margin`` from
        the tool point (v its velocity now). Over one step the tool moves |v| h + a h^2 / 2 at most; to cover the
        margin (0.1 mm) within a 0.5 ms step takes a = 800 m/s^2, far beyond any machine here: the contact force is
        then 0 at every stage of the step, and the plant may take its step without the contact (its compiled
        path)."""
        _, p, v = self.tool(pose, platform_twist)
        reach = float(np.linalg.norm(v)) * h + margin
        return all(s.clearance(p) > reach for s in self.surfaces)

    def depth(self, pose: Pose) -> tuple[float, int]:
        """(the deepest penetration of the tool point at ``pose``, m, the index of its surface)."""
        p = pose.position + pose.rotation @ self.tool_point
        depths = [s.penetration(p)[0] for s in self.surfaces]
        i = int(np.argmax(depths)) if depths else -1
        return (depths[i] if depths else 0.0), i

    def potential(self, pose: Pose) -> float:
        """sum k d^2 / 2 (J): the energy stored in the contact."""
        p = pose.position + pose.rotation @ self.tool_point
        return float(sum(s.potential(p) for s in self.surfaces))

    @staticmethod
    def from_dict(doc: dict, where: str = "environment") -> "ContactEnvironment":
        """From a YAML mapping: tool_point [x, y, z] and surfaces, each {shape: plane, point, normal} or {shape: box,
        center, half_extents, rpy (rad, optional)} with stiffness, damping, friction, slip_speed."""
        if not isinstance(doc, dict) or "tool_point" not in doc:
            raise InvalidModelError(f"{where} needs tool_point and surfaces, got {doc!r}")
        raw = doc.get("surfaces") or []
        if not isinstance(raw, list):
            raise InvalidModelError(f"{where} surfaces must be a list of planes and boxes, got {str(raw)[:80]!r}")
        surfaces = []
        for i, entry in enumerate(raw):
            if not isinstance(entry, dict):
                raise InvalidModelError(f"{where} surface {i} must be a mapping, got {str(entry)[:80]!r}")
            entry = dict(entry)
            shape = entry.pop("shape", None)
            try:
                if shape == "plane":
                    surfaces.append(Plane(**entry))
                elif shape == "box":
                    rpy = entry.pop("rpy", None)
                    surfaces.append(Box(**entry, rotation=None if rpy is None else rpy_to_matrix(*rpy)))
                else:
                    raise InvalidModelError(f"{where} surface {i}: shape must be plane or box, got {shape!r}")
            except TypeError as exc:
                raise InvalidModelError(f"{where} surface {i} ({shape}): {exc}") from exc
        return ContactEnvironment(doc["tool_point"], surfaces)


def _rk4_stable(mass: float, damping: float, stiffness: float, h: float) -> bool:
    """|R(lambda h)| <= 1 at both roots of m s^2 + c s + k (module docstring)."""
    z = np.roots([mass, damping, stiffness]) * h
    return bool((np.abs(1 + z + z ** 2 / 2 + z ** 3 / 6 + z ** 4 / 24) <= 1 + 1e-12).all())


#: a plant accepts a surface up to this fraction of ``largest_stiffness`` (module docstring)
STIFFNESS_MARGIN = 0.5
#: the plants' integrators of a contact mode (module docstring)
INTEGRATORS = ("rk4", "semi-implicit euler")


def largest_stiffness(mass: float, damping: float, h: float, integrator: str) -> float:
    """k_max (N/m): the stiffest contact of damping c (N s/m) on the effective mass m (kg) that ``integrator`` at the
    step h (s) integrates stably (module docstring); 0 where the damping alone is beyond its bound."""
    if integrator == "semi-implicit euler":
        return max(0.0, (4.0 * mass - 2.0 * h * damping) / h ** 2)
    if integrator != "rk4":
        raise InvalidInputError(f"integrator must be one of {INTEGRATORS}, got {integrator!r}")
    lo, hi = 0.0, 8.0 * mass / h ** 2          # c = 0: stable up to 8 m / h^2 (inclusive)
    if not _rk4_stable(mass, damping, 1e-12 * hi, h):
        return 0.0
    while _rk4_stable(mass, damping, hi, h):  # damping widens the range a little beyond the imaginary axis
        lo, hi = hi, 2.0 * hi
    lo = max(lo, 1e-12 * hi)
    for _ in range(60):
        mid = np.sqrt(lo * hi)
        lo, hi = (mid, hi) if _rk4_stable(mass, damping, mid, h) else (lo, mid)
    return float(lo)


def largest_step(mass: float, damping: float, stiffness: float, integrator: str) -> float:
    """The largest step (s) at which ``integrator`` integrates the contact (k, c) on the mass m stably."""
    lo, hi = 0.0, 1.0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if largest_stiffness(mass, damping, mid, integrator) >= stiffness else (lo, mid)
    return lo


def check_integrable(environment: ContactEnvironment, effective_mass, h: float, integrator: str, plant: str,
                     margin: float = STIFFNESS_MARGIN, period: float | None = None) -> tuple:
    """The largest stiffness (N/m) per surface that the plant integrates at its step h (``margin`` times
    ``largest_stiffness`` on the smallest effective_mass(n) over the surface's normals); a stiffer surface is refused
    with InvalidInputError naming its stiffness, the step, the largest stiffness and the largest step for it (and,
    given the control ``period``, the substeps per period that make the step so)."""
    limits = []
    for i, s in enumerate(environment.surfaces):
        m = min(float(effective_mass(n)) for n in s.normals())
        k_max = margin * largest_stiffness(m, s.damping, h, integrator)
        if s.stiffness > k_max:
            h_max = largest_step(m, s.damping, s.stiffness / margin, integrator)
            raise InvalidInputError(
                f"surface {i} ({type(s).__name__.lower()}): stiffness {s.stiffness:.4g} N/m (damping "
                f"{s.damping:.4g} N s/m, effective mass {m:.4g} kg at the tool) is beyond what {plant} integrates at "
                f"its step {h:.4g} s ({integrator}): the largest stiffness there is {k_max:.4g} N/m"
                + (" (the damping alone is beyond the step's bound)" if k_max == 0 else "") + "; this one needs "
                f"a step <= {h_max:.4g} s"
                + ("" if period is None else f" (substeps >= {int(np.ceil(period / h_max - 1e-9))})")
                + " (docs/force-control.md)")
        limits.append(k_max)
    return tuple(limits)


@dataclass
class WrenchSensor:
    """The 6-axis force/torque sensor at the tool point (module docstring). Mutable: it holds its filter state."""

    point: np.ndarray
    noise_std: np.ndarray = 0.0
    bias: np.ndarray = 0.0
    cutoff: float = 0.0

    def __post_init__(self):
        self.point = check_vector("sensor point", self.point, 3)
        try:
            self.noise_std = np.broadcast_to(np.asarray(self.noise_std, float), (6,)).copy()
            self.bias = np.broadcast_to(np.asarray(self.bias, float), (6,)).copy()
        except (TypeError, ValueError) as exc:
            raise InvalidInputError(f"wrench sensor noise_std and bias must be a number or 6 numbers (N, Nm per "
                                    f"axis), got {str(self.noise_std)[:60]!r}, {str(self.bias)[:60]!r}") from exc
        if not (np.isfinite(self.noise_std).all() and (self.noise_std >= 0).all() and np.isfinite(self.bias).all()):
            raise InvalidInputError(f"wrench sensor noise_std must be >= 0 and bias finite, got "
                                    f"{self.noise_std.tolist()}, {self.bias.tolist()}")
        self.cutoff = _nonnegative("wrench sensor cutoff (Hz)", self.cutoff)
        self.reset()

    def reset(self) -> None:
        self._y = None

    def measure(self, time: float, pose: Pose, contact_force, dt: float, rng: np.random.Generator, moment=None):
        """The sample of this period: the contact force f (base frame, on the tool) and its moment about the sensor's
        point (base frame; None: 0, a point contact there) as F_e in the sensor frame, with bias, noise and the
        filter; a WrenchMeasurement."""
        m = np.zeros(3) if moment is None else -(pose.rotation.T @ moment)
        x = np.concatenate([-(pose.rotation.T @ contact_force), m]) + self.bias
        if self.noise_std.any():
            x = x + self.noise_std * rng.standard_normal(6)
        if self.cutoff > 0 and self._y is not None:
            a = np.exp(-2 * np.pi * self.cutoff * dt)
            x = a * self._y + (1 - a) * x
        self._y = x
        return WrenchMeasurement(float(time), x, self.point)


def load_environment(robot: str, path: str = "") -> tuple[ContactEnvironment, dict]:
    """(environment, sensor settings) of ``robot`` from the environment YAML (default config/environment.yaml)."""
    from ..description.paths import share_dir

    path = path or str(share_dir() / "config" / "environment.yaml")
    try:
        with open(path) as f:
            doc = yaml.safe_load(f) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidModelError(f"environment config {path!r} cannot be read: {exc}") from exc
    if robot not in doc:
        raise InvalidInputError(f"robot '{robot}' has no section in {path} (robots: {list(doc)})")
    section = dict(doc[robot])
    sensor = dict(section.pop("sensor", None) or {})
    return ContactEnvironment.from_dict(section, f"{path} {robot}"), sensor


def wrench_sensor(environment: ContactEnvironment, settings: dict) -> WrenchSensor:
    """The sensor at the environment's tool point with the YAML's noise_std, bias, cutoff."""
    return WrenchSensor(environment.tool_point, settings.get("noise_std", 0.0), settings.get("bias", 0.0),
                        settings.get("cutoff", 0.0))


#: the largest |lambda| h the friction's viscous slope may give: RK4 is stable up to 2.785 on the real axis, a margin
#: of 1.4 for the effective mass's change over the workspace (it is taken at home)
RK4_MARGIN = 2.0
#: m: the deepest the tool may start inside a surface (a start inside a part is a wrong environment or start pose:
#: its spring would fire k d at the first step)
MAX_START_DEPTH = 1e-3


def friction_limited(environment: ContactEnvironment, effective_mass, h: float) -> ContactEnvironment:
    """The environment with the regularized friction's slope bounded for the plant's RK4 step h (s): mu f_n / eps
    grows with the normal force, which no parameter bounds; it is held at max_slope = RK4_MARGIN m / h, m the
    smallest effective mass at the tool along the base axes (``effective_mass(n)``, simulated.contact_mass): above
    that force the slip speed widens to mu f_n / max_slope (the tool creeps faster under a tangential load, the
    integration stays stable). At the shipped parameters (config/environment.yaml, 2 kHz, one substep) that starts
    above about 340 N of normal force on the Stewart table, 300 N on PaLiDA's surfaces."""
    m = min(float(effective_mass(n)) for n in np.eye(3))
    return ContactEnvironment(environment.tool_point, environment.surfaces, RK4_MARGIN * m / h)
