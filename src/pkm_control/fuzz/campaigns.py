"""The campaigns of ``pkm fuzz`` (the package docstring lists the classes and outcomes) and their driver.

A campaign is a class of input: ``setup()`` builds what it needs once (robot models), ``inputs(ctx)`` is a
hypothesis strategy, ``run(ctx, x)`` feeds one input to the real code and returns (accepted) or raises: an
``Outcome`` for what it found (NaN output, limit violation, ...), a PkmError (rejected cleanly), anything else
(crash); ``classify`` turns that into the counted kind.

How hypothesis is driven. ``run_campaign`` runs a @given-decorated inner function once, with
settings(max_examples=budget, database=None, deadline=None, phases=[generate]) under hypothesis.seed(seed). The
function records every outcome into the tally and never raises, so hypothesis generates the whole budget and
every input is counted (a raising test stops at the first failure). Hypothesis is used as the generation engine
it is; ``strategy.example()`` is meant for the REPL (it warns, is slow and does not explore the strategy). For a
campaign that failed, a second @given run with the same seed raises at the first input of the first failure's
kind: hypothesis generates the same inputs up to it (the function did the same until then), shrinks it and
replays the minimal one last, which is kept as the reproduction. The same seed gives the same inputs, so a run
repeats with ``--seed`` (``import_reachable`` keeps hypothesis's constants from the code the same).
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
import traceback
import warnings
from dataclasses import dataclass
from functools import partial

import numpy as np
from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st
from hypothesis import seed as hypothesis_seed

from ..control.settings import make_controller
from ..errors import PkmError
from .outcomes import ACCEPTED, CRASH, NAN, REJECTED, VIOLATION, Tally

class Outcome(Exception):
    """Raised by a campaign's run to classify its input other than accepted (NaN output, limit violation, ...)."""

    def __init__(self, kind: str, detail: str):
        super().__init__(detail)
        self.kind, self.detail = kind, detail


def expect_finite(what: str, values) -> None:
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)):
        raise Outcome(NAN, f"{what} is not finite: {np.array2string(arr.ravel()[:12], precision=6)}")


def expect(condition, detail: str) -> None:
    if not condition:
        raise Outcome(VIOLATION, detail)


@dataclass(frozen=True)
class Campaign:
    """One class of hostile input: ``setup()`` -> context (robot models, built once); ``inputs(ctx)`` -> a strategy;
    ``run(ctx, x)`` feeds x to the code and returns normally (accepted) or raises (``classify``); ``text(x)`` shows
    an input as a reproduction."""

    name: str
    setup: object
    inputs: object
    run: object
    text: object = repr


def classify(campaign: Campaign, ctx, x) -> tuple[str, str]:
    """(kind, detail) of one input: Outcome as raised, PkmError -> rejected cleanly, any other exception -> crash.
    Warnings are recorded and dropped, so that the outcome does not depend on which warnings were shown before."""
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            campaign.run(ctx, x)
        except Outcome as o:
            return o.kind, o.detail
        except PkmError as exc:
            return REJECTED, f"{type(exc).__name__}: {exc}"
        except Exception as exc:
            return CRASH, crash_text(exc)
    return ACCEPTED, ""


def crash_text(exc: BaseException) -> str:
    """The exception and where it was raised (file:line of the innermost frame)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = f" at {frames[-1].filename.rsplit('/src/', 1)[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(exc).__name__}: {str(exc)[:300]}{where}"


def _settings(budget: int, phases) -> settings:
    return settings(max_examples=budget, deadline=None, database=None, phases=phases, print_blob=False,
                    suppress_health_check=list(HealthCheck))


def import_reachable() -> None:
    """Import every pkm_control module a campaign can reach (all but the ROS nodes) before generating: hypothesis
    mixes constants from the source of the local modules imported so far into the inputs it draws, so a module
    imported on first use (or by the campaign before) would change what one seed generates."""
    import importlib
    import pkgutil

    from .. import __name__ as package, __path__ as path
    from ..ros.topology import NODES

    ros_nodes = {f"{package}.nodes.{n}" for n in NODES}
    for module in pkgutil.walk_packages(path, f"{package}."):
        if module.name not in ros_nodes:
            importlib.import_module(module.name)


def run_campaign(campaign: Campaign, budget: int, seed: int, step=None, shrink: bool = True) -> Tally:
    """``budget`` generated inputs of ``campaign`` (module docstring); ``step()`` is called after each input (a
    progress bar). With ``shrink``, a failure is searched again and minimized (``first_failure``)."""
    import_reachable()
    ctx = campaign.setup()
    tally = Tally(campaign.name)
    strategy = campaign.inputs(ctx)

    @hypothesis_seed(seed)
    @_settings(budget, [Phase.generate])
    @given(strategy)
    def explore(x):
        kind, detail = classify(campaign, ctx, x)
        tally.add(kind, campaign.text(x), detail)
        if step:
            step()

    explore()
    if shrink and tally.first_failure:
        tally.first_failure = _minimal(campaign, ctx, strategy, budget, seed, tally.first_failure[0]) \
            or tally.first_failure
    return tally


class _Found(Exception):
    """The input of the kind ``_minimal`` searches for (raised to make hypothesis shrink it)."""


def _minimal(campaign, ctx, strategy, budget, seed, kind) -> tuple | None:
    """(kind, text, detail) of the smallest input of ``kind`` hypothesis finds from ``seed`` (module docstring), or
    None if the search does not meet one again (an outcome that depends on more than the input)."""
    found = []

    @hypothesis_seed(seed)
    @settings(_settings(budget, [Phase.generate, Phase.shrink]), verbosity=Verbosity.quiet)
    @given(strategy)
    def search(x):
        k, detail = classify(campaign, ctx, x)
        if k == kind:
            found.append((kind, campaign.text(x), detail))
            raise _Found

    with contextlib.suppress(_Found):
        search()
    return found[-1] if found else None


# ----------------------------------------------------------------------------- shared strategies

#: numbers an attacker or a broken sender puts where a float belongs
HOSTILE = st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                    st.sampled_from([0.0, -0.0, 5e-324, 1e-300, 1e300, -1e300, 1e9, -1e9, 1e5]))


def vectors(center, spread) -> st.SearchStrategy:
    """Lists near ``center`` (within +-spread per entry), the same with one hostile entry, wrong sizes, and
    hostile numbers throughout: the values reach deep into the code and its edges."""
    center = np.asarray(center, float)
    n = len(center)
    near = st.lists(st.floats(-1, 1), min_size=n, max_size=n).map(lambda u: (center + spread * np.asarray(u)).tolist())
    spoiled = st.tuples(near, st.integers(0, max(n - 1, 0)), HOSTILE).map(
        lambda t: t[0][:t[1]] + [t[2]] + t[0][t[1] + 1:])
    wrong = st.lists(st.one_of(st.floats(-2, 2), HOSTILE), max_size=n + 3).filter(lambda v: len(v) != n)
    return st.one_of(near, near, spoiled, wrong, st.lists(HOSTILE, min_size=n, max_size=n))


def _robots():
    from ..description import robot_names

    return robot_names()


# ----------------------------------------------------------------------------- (1) goals

GOAL_FIELDS = ("type", "goal", "duration", "radius", "laps", "speed", "ramp_time", "normal", "poses", "durations",
               "height", "profile", "start", "inclination_deg", "center", "start_angle", "up", "tilt_axis", "period",
               "periods", "offset", "a", "b")
GOAL_TYPES = ("point_to_point", "circle", "waypoints", "semi_ellipse", "benchmark_circle", "fourier", "quintic",
              "sine_on_ramp", "trig_spline3")


def _goals_setup():
    from ..kinematics import robot_kinematics

    return {r: robot_kinematics(r) for r in _robots()}


def _goals_inputs(kins):
    numbers = st.one_of(HOSTILE, st.integers(-10**12, 10**12), st.floats(-1, 1))
    value = st.one_of(numbers, st.lists(numbers, max_size=8), st.lists(st.lists(numbers, max_size=7), max_size=5),
                      st.text(max_size=20), st.sampled_from(GOAL_TYPES))

    # a field of a plausible spec: mostly a sensible size, sometimes anything (tiny, huge, negative, NaN)
    size = st.one_of(st.floats(0.01, 2), st.floats(0.01, 2), numbers)

    def for_robot(robot):
        home = kins[robot].model.spec.home
        near = vectors(home, 0.02)
        dim, coefficient = len(home), st.one_of(st.floats(-0.05, 0.05), numbers)
        plausible = st.one_of(
            st.fixed_dictionaries({"type": st.just("point_to_point"), "goal": near, "duration": size}),
            st.fixed_dictionaries({"type": st.just("circle"), "radius": size.map(lambda r: r / 50),
                                   "normal": vectors([0, 0, 1], 1), "speed": size, "laps": size,
                                   "ramp_time": size}),
            st.fixed_dictionaries({"type": st.just("waypoints"), "poses": st.lists(near, max_size=5),
                                   "durations": st.lists(size, max_size=5)}),
            st.fixed_dictionaries({"type": st.just("semi_ellipse"), "goal": near, "height": size.map(lambda h: h / 50),
                                   "duration": size}),
            st.fixed_dictionaries({"type": st.just("benchmark_circle"), "radius": size.map(lambda r: r / 10),
                                   "speed": size, "laps": size, "ramp_time": size, "inclination_deg": numbers}),
            # two harmonics at rest at the ends: a = (x, -x), b = (2 y, -y) (sum_k a_k = 0, sum_k k b_k = 0)
            st.fixed_dictionaries({"type": st.just("fourier"), "period": size, "periods": size.map(lambda p: p * 5),
                                   "a": st.lists(coefficient, min_size=dim, max_size=dim).map(
                                       lambda v: [[x, -x] for x in v]),
                                   "b": st.lists(coefficient, min_size=dim, max_size=dim).map(
                                       lambda v: [[2 * y, -y] for y in v])}))
        spec = st.one_of(plausible, st.dictionaries(st.sampled_from(GOAL_FIELDS), value, max_size=8))
        bomb = st.builds(lambda n, c: c[0] * n + c[1] * n, st.integers(0, 40000),
                         st.sampled_from([("[", "]"), ("{a: ", "}"), ("- ", ""), ("&a [*a, ", "]")]))
        text = st.one_of(st.text(max_size=300), bomb, spec.map(repr),
                         st.sampled_from(["x" * 70000, "!!python/object/apply:os.system [ls]", "a: &a [*a]", "~"]))
        clocks = st.lists(st.one_of(st.integers(0, 2_000_000_000), st.integers(-2**63, 2**63 - 1)), max_size=4)
        return st.fixed_dictionaries({"robot": st.just(robot), "goal": st.one_of(spec, text), "clock_ns": clocks})

    return st.sampled_from(sorted(kins)).flatmap(for_robot)


def _goals_run(kins, x):
    """A goal as the trajectory generator gets it (text is parsed first), loaded, started and advanced over the
    clock: a motion within the duration limits, checked in bounded cost, whose chunks are finite."""
    from ..trajectory.paths import CHECK_SAMPLES
    from ..trajectory.profiles import MAX_DURATION, MIN_DURATION
    from ..trajectory.streaming import GoalScheduler, parse_goal

    kin = kins[x["robot"]]
    goal = parse_goal(x["goal"]) if isinstance(x["goal"], str) else x["goal"]
    s = GoalScheduler(kin, kin.home_pose(), 500_000, 100, 10_000_000)
    traj, _ = s.load(goal)
    expect(MIN_DURATION <= traj.duration <= 2 * MAX_DURATION,
           f"motion of {traj.duration:.6g} s (limits {MIN_DURATION:g} to 2 x {MAX_DURATION:g} s)")
    expect(traj.check_times().size <= 3 * CHECK_SAMPLES,
           f"reachability checked at {traj.check_times().size} samples (limit 3 x {CHECK_SAMPLES})")
    s.start()
    for t in [0, *x["clock_ns"]]:
        for chunk in s.advance(t)[0]:
            for what in ("positions", "rotations", "twists", "accels"):
                expect_finite(f"chunk {what} at t = {t} ns", getattr(chunk, what))


# ----------------------------------------------------------------------------- (2) controller

class _ScriptedHardware:
    """A robot that measures what the input says and records what the loop writes."""

    def __init__(self, measurements):
        self.measurements, self.k, self.written = measurements, 0, []

    def read(self):
        m = self.measurements[min(self.k, len(self.measurements) - 1)]
        self.k += 1
        return m

    def write(self, tau, time=None):
        self.written.append(np.array(tau, float))


def _controller_setup():
    from ..dynamics import robot_dynamics

    dyns = {r: robot_dynamics(r) for r in ("palida", "stewart", "delta")}
    return {"dyn": dyns, "q": {r: d.kin.actuated(d.kin.home_pose()) for r, d in dyns.items()},
            "parts": {}}


def _controller_inputs(ctx):
    times = st.one_of(st.floats(-1, 1), HOSTILE)

    def for_robot(robot):
        q = ctx["q"][robot]
        zero = np.zeros(len(q))
        optional = st.one_of(st.none(), vectors(zero, 1.0))
        period = st.fixed_dictionaries({
            "t": times, "measured_at": times,
            "measured": st.one_of(st.none(), st.tuples(vectors(q, 0.05), vectors(zero, 0.5))),
            "references": st.one_of(st.none(), st.tuples(vectors(q, 0.05), optional.map(lambda v: v or [0.0] * len(q)),
                                                         vectors(zero, 5.0))),
            "feedforward": st.one_of(st.none(), vectors(zero, 1e3))})
        return st.fixed_dictionaries({
            "robot": st.just(robot), "mode": st.sampled_from(modes(robot)),
            "safe": st.sampled_from(["hold", "zero"]), "through_loop": st.booleans(),
            "periods": st.lists(period, min_size=1, max_size=6)})

    return st.sampled_from(sorted(ctx["dyn"])).flatmap(for_robot)


def modes(robot: str) -> list:
    """The control laws (modes) that apply to a robot (default variant): all of control.laws.LAWS,
    mass_matrix_decoupling on the DELTA only, joint_adaptive_idc not on the redundant planar robot."""
    from ..control.laws import LAWS

    return [m for m in LAWS if (m != "mass_matrix_decoupling" or robot == "delta")
            and (m != "joint_adaptive_idc" or robot != "planar_redundant")]


def _controller_run(ctx, x):
    """Periods of Controller.update, or of ControlLoop.cycle with the inputs streamed as one-sample chunks at t (the
    loop's own lookup, ready/started, stale and back-dated times): every command finite and within the limits."""
    from ..control import ControlLoop, References
    from ..hardware import JointMeasurement

    c = make_controller(ctx["dyn"][x["robot"]], x["mode"], x["safe"], parts=ctx["parts"])
    limits = c.limits.limits
    measured = [None if p["measured"] is None else
                JointMeasurement(p["measured_at"], np.asarray(p["measured"][0], float),
                                 np.asarray(p["measured"][1], float), np.zeros(c.n)) for p in x["periods"]]
    hardware = _ScriptedHardware(measured)
    loop = ControlLoop(hardware, c, 2_000_000)
    commands = []
    for p, m in zip(x["periods"], measured):
        refs = None if p["references"] is None else References(*(np.asarray(v, float) for v in p["references"]))
        ff = None if p["feedforward"] is None else np.asarray(p["feedforward"], float)
        if not x["through_loop"]:
            commands.append(c.update(p["t"], m, refs, ff).tau)
            continue
        t_ns = int(np.clip(np.nan_to_num(p["t"]) * 1e9, -2**62, 2**62))
        if refs is not None:
            loop.offer_references([t_ns], np.atleast_2d(refs.q), np.atleast_2d(refs.qd), np.atleast_2d(refs.qdd))
        if ff is not None:
            loop.offer_feedforward([t_ns], np.atleast_2d(ff))
        loop.ready(t_ns)
        loop.started()
        commands.append(loop.cycle(t_ns).tau)
    for k, tau in enumerate(commands + hardware.written):
        expect_finite(f"command {k}", tau)
        expect(np.shape(tau) == limits.shape and np.all(np.abs(tau) <= limits),
               f"command {k} = {np.array2string(np.asarray(tau), precision=6)} beyond the force limits "
               f"{np.array2string(limits, precision=6)}")


# ----------------------------------------------------------------------------- (3) ROS messages

def _messages_setup():
    try:
        import sensor_msgs.msg  # noqa: F401
    except ImportError as exc:
        raise PkmError(f"the messages class needs the ROS 2 message packages (requirements-ros.txt): {exc}") from exc

    from ..dynamics import robot_dynamics

    dyn = robot_dynamics("palida")
    kin = dyn.kin
    return {"kin": kin, "dyn": dyn, "names": list(kin.model.joint_names), "actuated": list(kin.model.actuated_joints)}


def _messages_inputs(ctx):
    """Messages as a correct sender writes them (consistent names, sizes and increasing times) with hostile values,
    and messages with wrong names, sizes, stamps and times."""
    names, actuated = ctx["names"], ctx["actuated"]
    n = len(actuated)
    floats = st.one_of(st.floats(-2, 2), HOSTILE)
    stamp = st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(0, 2**32 - 1))
    name_lists = st.one_of(st.permutations(actuated), st.permutations(names),
                           st.lists(st.sampled_from(names + ["", "platform", "leg1", "x" * 300]), max_size=n + 3))

    def sized(k):
        return st.one_of(vectors(np.zeros(k), 1.0), st.lists(floats, max_size=k + 2))

    def times(m):
        """m point times (sec, nanosec): increasing on a grid, or anything a message can hold."""
        grid = st.lists(st.integers(1, 10**8), min_size=m, max_size=m).map(
            lambda d: [divmod(int(t), 10**9) for t in np.cumsum(d)])
        raw = st.lists(st.tuples(st.integers(-2**31, 2**31 - 1), st.integers(0, 2**32 - 1)), min_size=m, max_size=m)
        return st.one_of(grid, grid, raw)

    joint_state = name_lists.flatmap(lambda nm: st.fixed_dictionaries({
        "kind": st.just("joint_state"), "stamp": stamp, "name": st.just(list(nm)), "position": sized(len(nm)),
        "velocity": sized(len(nm)), "effort": st.one_of(st.just([]), sized(len(nm)))}))
    commands = st.fixed_dictionaries({"kind": st.just("commands"), "data": sized(n)})

    def joint_trajectory(nm, m):
        point = st.fixed_dictionaries({f: st.one_of(sized(len(nm)), st.just([]))
                                       for f in ("positions", "velocities", "accelerations", "effort")})
        return st.fixed_dictionaries({
            "kind": st.just("joint_trajectory"), "stamp": stamp, "joint_names": st.just(list(nm)),
            "fields": st.sampled_from([("positions", "velocities", "accelerations"), ("effort",)]),
            "points": st.lists(point, min_size=m, max_size=m), "t": times(m)})

    quaternion = st.one_of(st.lists(floats, min_size=4, max_size=4),
                           st.lists(st.floats(-1, 1), min_size=4, max_size=4).filter(lambda q: np.linalg.norm(q) > 0.1)
                           .map(lambda q: (np.asarray(q) / np.linalg.norm(q)).tolist()))
    six = st.one_of(vectors(np.zeros(6), 1.0).filter(lambda v: len(v) == 6), st.lists(floats, min_size=6, max_size=6))
    platform_point = st.fixed_dictionaries({
        "transforms": st.sampled_from([1, 1, 1, 0, 2]), "translation": st.lists(floats, min_size=3, max_size=3),
        "rotation": quaternion, "twists": st.lists(six, max_size=2), "accels": st.lists(six, max_size=2)})

    def platform(m):
        return st.fixed_dictionaries({
            "kind": st.just("platform_trajectory"), "stamp": stamp,
            "joint_names": st.sampled_from([["platform"], ["platform"], [], ["platform", "platform"], ["Platform"]]),
            "points": st.lists(platform_point, min_size=m, max_size=m), "t": times(m)})

    # /platform_wrench (the force laws' F/T sensor): six values, any of them hostile
    wrench = st.fixed_dictionaries({"kind": st.just("platform_wrench"), "stamp": stamp,
                                    "values": st.one_of(st.lists(st.floats(-2000, 2000), min_size=6, max_size=6),
                                                        st.lists(floats, min_size=6, max_size=6))})
    # /force_references (a hybrid goal's F_d and selection per task coordinate): well formed with absurd forces (up
    # to the largest double, subnormal, beyond every force limit), or malformed (NaN, selections other than 0 / 1,
    # wrong names and sizes, times out of order)
    task = list(ctx["kin"].task.names)
    absurd = st.one_of(st.floats(-600, 600), st.sampled_from([1.7e308, -1.7e308, 1e300, -1e300, 1e12, -1e9, 1e6,
                                                              5e-324, -0.0]), st.floats(-1e308, 1e308))
    well_formed = st.fixed_dictionaries({"selection": st.lists(st.sampled_from([0.0, 1.0]), min_size=6, max_size=6),
                                         "wrench": st.lists(absurd, min_size=6, max_size=6)})
    malformed = st.fixed_dictionaries({
        "selection": st.one_of(sized(6), st.lists(st.sampled_from([0.5, 2.0, -1.0, 1.0]), min_size=6, max_size=6)),
        "wrench": st.one_of(st.lists(absurd, min_size=6, max_size=6), sized(6))})
    grid = st.lists(st.integers(1, 10**7), min_size=1, max_size=6).map(
        lambda d: [divmod(int(t), 10**9) for t in np.cumsum(d)])

    def force_references(ok):
        if ok:        # as the generator writes them: the task's names, increasing times, 0 / 1 selections
            return grid.flatmap(lambda t: st.fixed_dictionaries({
                "kind": st.just("force_references"), "stamp": stamp,
                "joint_names": st.one_of(st.just(task), st.permutations(task)),
                "points": st.lists(well_formed, min_size=len(t), max_size=len(t)), "t": st.just(t)}))
        return st.integers(0, 6).flatmap(lambda m: st.fixed_dictionaries({
            "kind": st.just("force_references"), "stamp": stamp,
            "joint_names": st.one_of(st.just(task), st.lists(st.sampled_from(task + ["", "platform", "fz"]),
                                                             max_size=8)),
            "points": st.lists(st.one_of(well_formed, malformed), min_size=m, max_size=m), "t": times(m)}))

    points = st.integers(0, 6)
    return st.one_of(joint_state, commands, st.tuples(name_lists, points).flatmap(lambda a: joint_trajectory(*a)),
                     points.flatmap(platform), wrench, st.booleans().flatmap(force_references))


def _time(cls, sec_ns):
    return cls(sec=sec_ns[0], nanosec=sec_ns[1])


def _messages_run(ctx, x):
    """The message as a node receives it, through its parse_* function: the parsed arrays finite and of the declared
    size, times strictly increasing, rotations orthonormal."""
    from builtin_interfaces.msg import Duration, Time
    from geometry_msgs.msg import Transform, Twist, Vector3
    from sensor_msgs.msg import JointState
    from std_msgs.msg import Float64MultiArray
    from trajectory_msgs.msg import (JointTrajectory, JointTrajectoryPoint, MultiDOFJointTrajectory,
                                     MultiDOFJointTrajectoryPoint)

    from ..ros import messages as m

    n = len(ctx["actuated"])
    kind = x["kind"]
    if kind == "joint_state":
        msg = JointState(name=x["name"], position=x["position"], velocity=x["velocity"], effort=x["effort"])
        msg.header.stamp = _time(Time, x["stamp"])
        out = m.parse_joint_state(msg, ctx["names"], ctx["actuated"])
        for what in ("position", "velocity", "effort"):
            expect_finite(f"joint_state {what}", getattr(out, what))
            expect(getattr(out, what).shape == (n,), f"joint_state {what} has shape {getattr(out, what).shape}")
        expect_finite("joint_state time", out.time)
    elif kind == "platform_wrench":
        from geometry_msgs.msg import WrenchStamped

        msg = WrenchStamped()
        msg.header.stamp = _time(Time, x["stamp"])
        (msg.wrench.force.x, msg.wrench.force.y, msg.wrench.force.z, msg.wrench.torque.x, msg.wrench.torque.y,
         msg.wrench.torque.z) = x["values"]
        out = m.parse_wrench_stamped(msg, np.zeros(3))
        expect_finite("platform_wrench", out.wrench)
        expect(out.wrench.shape == (6,), f"platform_wrench has shape {out.wrench.shape}")
        expect_finite("platform_wrench time", out.time)
    elif kind == "force_references":
        msg = JointTrajectory(joint_names=x["joint_names"])
        msg.header.stamp = _time(Time, x["stamp"])
        msg.points = [JointTrajectoryPoint(positions=p["selection"], effort=p["wrench"],
                                           time_from_start=_time(Duration, t)) for p, t in zip(x["points"], x["t"])]
        times, wrench, selection = m.parse_force_references(msg, list(ctx["kin"].task.names))
        if wrench is not None:
            _check_times(times)
            expect_finite("force references F_d", wrench)
            _force_stream(ctx, times, wrench, selection)
    elif kind == "commands":
        out = m.parse_commands(Float64MultiArray(data=x["data"]), n)
        expect_finite("commands", out)
        expect(out.shape == (n,), f"commands have shape {out.shape}")
    elif kind == "joint_trajectory":
        msg = JointTrajectory(joint_names=x["joint_names"])
        msg.header.stamp = _time(Time, x["stamp"])
        msg.points = [JointTrajectoryPoint(positions=p["positions"], velocities=p["velocities"],
                                           accelerations=p["accelerations"], effort=p["effort"],
                                           time_from_start=_time(Duration, t)) for p, t in zip(x["points"], x["t"])]
        out = m.parse_joint_trajectory(msg, ctx["actuated"], x["fields"])
        _check_times(out.times_ns)
        for f, a in zip(m._FIELDS, (out.positions, out.velocities, out.accelerations, out.efforts)):
            if f in x["fields"]:
                expect_finite(f"joint trajectory {f}", a)
                expect(a.shape == (len(x["points"]), n), f"joint trajectory {f} has shape {a.shape}")
    else:
        msg = MultiDOFJointTrajectory(joint_names=x["joint_names"])
        msg.header.stamp = _time(Time, x["stamp"])
        msg.points = [_platform_point(p, t, MultiDOFJointTrajectoryPoint, Transform, Twist, Vector3, Duration)
                      for p, t in zip(x["points"], x["t"])]
        out = m.parse_platform_trajectory(msg, ctx["kin"].task)
        _check_times(out.times_ns)
        for what in ("positions", "rotations", "twists", "accels"):
            expect_finite(f"platform trajectory {what}", getattr(out, what))
        R = out.rotations
        err = np.abs(np.einsum("nji,njk->nik", R, R) - np.eye(3)).max()
        expect(err <= 1e-6, f"platform trajectory rotation not orthonormal (|R^T R - I| = {err:.3g})")


class _PressingRobot:
    """palida at rest at home, its F/T sensor measuring 20 N down at the tool at the loop's instant ``time``."""

    def __init__(self, q, n):
        from ..hardware import JointMeasurement

        self.time, self.q, self.n, self.JointMeasurement = 0.0, q, n, JointMeasurement
        self.written = []

    def read(self):
        from ..control.force import WrenchMeasurement

        w = WrenchMeasurement(self.time, np.array([0.0, 0.0, 20.0, 0.0, 0.0, 0.0]), np.array([0.0, 0.0, -0.05]))
        return self.JointMeasurement(self.time, self.q, np.zeros(self.n), np.zeros(self.n), {"wrench": w})

    def write(self, tau, time=None):
        self.written.append(np.array(tau, float))


def _force_stream(ctx, times, wrench, selection):
    """A parsed /force_references chunk as joint_controller takes it: ControlLoop.offer_forces to direct force
    control on palida (at rest at home, 20 N measured), then periods at the chunk's instants and between them (the
    loop's linear interpolation): F_d as the law takes it (reference: clipped to force_limit) finite and within it,
    or refused by the law (a PkmError: the controller's safe behaviour for that period); every command finite and
    within the force limits."""
    from ..control import ControlLoop
    from ..control.settings import make_force_controller

    dyn = ctx["dyn"]
    c = make_force_controller(dyn, "direct_force")
    q = dyn.kin.actuated(dyn.kin.home_pose())
    robot = _PressingRobot(q, c.n)
    loop = ControlLoop(robot, c, 2_000_000)
    loop.offer_forces(times, wrench, selection)
    instants = sorted(set(times.tolist()) | {int(a // 2 + b // 2) for a, b in zip(times[:-1], times[1:])})[:12]
    zero = np.zeros((1, c.n))
    for t_ns in instants:
        loop.offer_references([t_ns], q[None, :], zero, zero)
        robot.time = t_ns * 1e-9
        loop.ready(t_ns)
        loop.started()
        ref = loop.force_at(t_ns)
        if ref is not None:
            try:
                f_d, _ = c.law.reference(ref)
            except PkmError:
                f_d = None
            if f_d is not None:
                expect_finite(f"F_d at {t_ns} ns", f_d)
                expect(np.all(np.abs(f_d) <= c.law.force_limit), f"F_d at {t_ns} ns {f_d.tolist()} beyond force_limit")
        cmd = loop.cycle(t_ns)
        expect_finite(f"command at {t_ns} ns", cmd.tau)
        expect(np.all(np.abs(cmd.tau) <= c.limits.limits), f"command at {t_ns} ns {cmd.tau.tolist()} beyond the limits")


def _platform_point(p, t, Point, Transform, Twist, Vector3, Duration):
    def twist(v):
        return Twist(linear=Vector3(x=v[0], y=v[1], z=v[2]), angular=Vector3(x=v[3], y=v[4], z=v[5]))

    tr = Transform()
    tr.translation.x, tr.translation.y, tr.translation.z = p["translation"]
    tr.rotation.x, tr.rotation.y, tr.rotation.z, tr.rotation.w = p["rotation"]
    return Point(transforms=[tr] * p["transforms"], velocities=[twist(v) for v in p["twists"]],
                 accelerations=[twist(v) for v in p["accels"]], time_from_start=_time(Duration, t))


def _check_times(times_ns):
    expect(np.all(np.diff(times_ns) > 0), f"point times not strictly increasing: {times_ns[:8].tolist()}")


# ----------------------------------------------------------------------------- (4) the simulated robot

def _simulated_setup():
    from ..dynamics import robot_dynamics
    from ..hardware import SimulatedRobot
    from ..kinematics.workspace import workspace_box

    out = {}
    for r in _robots():
        dyn = robot_dynamics(r)
        robot = SimulatedRobot(dyn, 0.0005, command_timeout=0.00075)
        lo, hi = workspace_box(dyn.kin)
        out[r] = (robot, dyn.model.spec.home, (hi - lo) / 2)
    return out


def _simulated_inputs(ctx):
    from ..hardware.simulated import REFUSE_FACTOR

    def for_robot(name):
        robot, home, half = ctx[name]
        limits = robot.force_limits.limits
        command = st.one_of(vectors(np.zeros(len(limits)), 1.25 * REFUSE_FACTOR * limits),
                            st.lists(st.sampled_from([-1, 1]), min_size=len(limits), max_size=len(limits))
                            .map(lambda s: (REFUSE_FACTOR * limits * s).tolist()))
        return st.fixed_dictionaries({
            "robot": st.just(name), "start": vectors(home, half).filter(lambda v: len(v) == len(home)),
            "twist": st.lists(st.floats(-2, 2), min_size=len(home), max_size=len(home)),
            "commands": st.lists(st.tuples(st.one_of(st.none(), command), st.integers(1, 100)), min_size=1,
                                 max_size=6)})

    return st.sampled_from(sorted(ctx)).flatmap(for_robot)


def _simulated_run(ctx, x):
    """Reset at a start pose and twist, then (command, periods) pairs: write the command and step, every period
    (None: nothing written, the command timeout's safe behaviour takes over). A command is refused exactly when it
    is not finite, of the wrong size or beyond REFUSE_FACTOR x its force limit; the applied force is within the
    limits; the state stays finite and every limited joint (strokes, passive joints, cut joints) within its end
    stop's limit plus the penetration the energy bound allows (dynamics/end_stops.py ``EnergyBound``: the stops
    only store or dissipate what the drives, the start's kinetic energy and gravity put in)."""
    from ..hardware.simulated import REFUSE_FACTOR

    robot = ctx[x["robot"]][0]
    kin = robot.kin
    robot.reset(kin.task.pose(np.asarray(x["start"], float)), np.asarray(x["twist"], float))
    bound = robot.energy_bound()
    limits = robot.force_limits.limits
    periods = [tau for tau, repeat in x["commands"] for _ in range(repeat)]
    for k, tau in enumerate(periods):
        if tau is not None:
            a = np.asarray(tau, float)
            valid = a.shape == limits.shape and np.all(np.isfinite(a)) and np.all(np.abs(a) <= REFUSE_FACTOR * limits)
            try:
                robot.write(a, robot.time)
                expect(valid, f"period {k}: command {tau} applied (refuse: not finite, wrong size or beyond "
                              f"{REFUSE_FACTOR:g} x the limits {limits.tolist()})")
            except PkmError as exc:
                expect(not valid, f"period {k}: valid command {tau} refused: {exc}")
        try:
            meas = robot.step()
            truth = robot.ground_truth()
        except PkmError as exc:          # the plant must advance (it raises when its state went non-finite too)
            raise Outcome(CRASH, f"period {k}: step() raised {type(exc).__name__}: {exc}") from exc
        expect_finite(f"period {k}: measured positions", meas.position)
        expect_finite(f"period {k}: measured velocities", meas.velocity)
        expect_finite(f"period {k}: joint positions (ground truth)", truth.position)
        expect_finite(f"period {k}: platform twist (ground truth)", truth.platform_twist)
        expect(np.all(np.abs(robot.tau_applied) <= limits), f"period {k}: applied force {robot.tau_applied.tolist()} "
                                                            f"beyond the limits {limits.tolist()}")
        robot.update_energy_bound(bound)
        broken = bound.violation(*robot.penetrations(truth))
        expect(broken is None, f"period {k}: {broken}")


# ----------------------------------------------------------------------------- (5) the CLI

#: subcommands that run in milliseconds: called through pkm's main; the others (seconds to minutes, nodes, ROS) are
#: parsed only (argument types and choices), the part that hostile arguments reach before any work starts
RUN_COMMANDS = ("info", "ik", "fk", "jacobian", "id", "workspace")
PARSE_COMMANDS = ("reproduce", "bench", "bringup", "tour", "demo", "fuzz", "animate", "view")
#: a number printed as nan or inf (not inside a word)
NONFINITE_TEXT = re.compile(r"(?<![A-Za-z_])[-+]?(nan|inf|infinity)(?![A-Za-z_])", re.IGNORECASE)
NUMBER_TEXTS = ("nan", "-inf", "inf", "1e400", "-1e400", "1e-400", "0x10", "1_0", "", "--", "abc", "\u0663",
                "1e308", "-0", "+1", ".5", "-.5e-3", "1,5", "None", "[1]")


@dataclass(frozen=True)
class CommandLine:
    """The context of the class cli: the robots' kinematics (inputs near their home poses) and pkm's parser and
    entry point, handed in by the command line (the layer above: this one does not import it)."""

    kins: dict
    build_parser: object
    main: object


def _cli_setup(build_parser, main) -> CommandLine:
    from ..kinematics import robot_kinematics

    return CommandLine({r: robot_kinematics(r) for r in _robots()}, build_parser, main)


def _cli_inputs(ctx: CommandLine):
    from ..benchmarks.reproduce import REPRODUCTIONS

    number = st.one_of(st.floats(-2, 2).map(repr), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                       st.sampled_from(NUMBER_TEXTS), st.text(max_size=6))
    kins = ctx.kins
    robot = st.sampled_from([*kins, "", "nope", "../config/palida", "Palida", "palida;ls"])

    def numbers(base, spread):
        plain = vectors(base, spread).map(lambda v: [repr(float(a)) for a in v])
        return st.one_of(plain, plain, st.lists(number, max_size=len(base) + 2))

    def flag(name, values):
        """Absent, or the option with the tokens of ``values`` (a strategy of lists)."""
        return st.one_of(st.just([]), values.map(lambda v: [name, *v]))

    def one(*tokens):
        return st.sampled_from(tokens).map(lambda v: [v])

    def for_robot(r):
        kin = kins[r]
        home, dim = kin.model.spec.home.tolist(), kin.task.dim
        qa = kin.actuated(kin.task.pose(home)).tolist()
        base = st.tuples(st.just(["--robot", r]), flag("--variant", one("", "x", "3-6", "redundant")),
                         flag("--deg", st.just([])), flag("--json", st.just([])))
        pose, rates = numbers(home, 0.05), numbers([0.0] * dim, 1.0)
        per_command = {
            "info": st.tuples(flag("--robot", st.just([r])), flag("--json", st.just([]))),
            "ik": st.tuples(base, st.just(["--pose"]), pose, flag("--twist", rates), flag("--accel", rates)),
            "fk": st.tuples(base, st.just(["--joints"]), numbers(qa, 0.05), flag("--guess", pose)),
            "jacobian": st.tuples(base, st.just(["--pose"]), pose),
            "id": st.tuples(base, st.just(["--pose"]), pose, flag("--twist", rates), flag("--accel", rates),
                            flag("--wrench", numbers([0.0] * 6, 100.0)), flag("--no-friction", st.just([])),
                            flag("--method", one("generic", "newton_euler", "jourdain", "generalized_momentum",
                                                 "virtual_work", "pivotal_virtual_work", "nope"))),
            # resolution: small grids and hostile spellings only (a large grid is a long run, not a hostile input)
            "workspace": st.tuples(base, flag("--vary", st.lists(st.sampled_from([*kin.task.names, "w", ""]),
                                                                 max_size=4)),
                                   flag("--volume", st.just([])), flag("--fixed", pose),
                                   flag("--resolution", one("2", "3", "4", "1e0", "0", "-1", "2.5", "nan", "1e400")),
                                   flag("--scale", st.lists(number, min_size=1, max_size=1))),
            "reproduce": st.tuples(st.just([]), one(*REPRODUCTIONS, "nope"),
                                   flag("--out", st.text(max_size=10).map(lambda v: [v]))),
            "bench": st.tuples(one("kinematics", "dynamics", "simulation", "loop", "x"),
                               flag("--samples", st.lists(number, min_size=1, max_size=1)),
                               flag("--seconds", st.lists(number, min_size=1, max_size=1))),
            "bringup": st.tuples(flag("--robot", robot.map(lambda v: [v])),
                                 flag("--controller", one("pd", "pd_feedforward", "cf_rb_friction", "x")),
                                 st.just(["--dry-run"])),
            "tour": st.tuples(flag("--json", st.just([])), flag("--deg", st.just([]))),
            "demo": st.tuples(flag("--json", st.just([]))),
            "animate": st.tuples(st.one_of(st.just([]), one("--bag", "--csv")),
                                 st.text(max_size=10).map(lambda v: [v]),
                                 flag("--fps", st.lists(number, min_size=1, max_size=1)),
                                 flag("--speed", st.lists(number, min_size=1, max_size=1))),
            "view": st.tuples(flag("--robot", robot.map(lambda v: [v])), flag("--pose", pose),
                              flag("--port", st.lists(number, min_size=1, max_size=1)),
                              flag("--size", st.lists(number, min_size=2, max_size=2)),
                              flag("--replay", st.text(max_size=10).map(lambda v: [v])),
                              flag("--screenshot", st.text(max_size=10).map(lambda v: [v]))),
            "fuzz": st.tuples(flag("--budget", st.lists(number, min_size=1, max_size=1)),
                              flag("--classes", st.text(max_size=12).map(lambda v: [v])),
                              flag("--seed", st.lists(number, min_size=1, max_size=1))),
        }
        return st.sampled_from(sorted(per_command)).flatmap(
            lambda c: per_command[c].map(lambda parts: [c, *(t for p in parts for t in _flatten(p))]))

    return st.one_of(st.sampled_from(sorted(kins)).flatmap(for_robot),
                     st.lists(st.one_of(number, st.text(max_size=8)), max_size=4))


def _flatten(p):
    if isinstance(p, (list, tuple)):
        for q in p:
            yield from _flatten(q)
    else:
        yield p


def _cli_run(ctx: CommandLine, argv):
    """``pkm ARGV`` in this process: exit 0 with no nan/inf printed, or exit 2 with one line on stderr. A
    subcommand of PARSE_COMMANDS only goes through the parser."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            if argv and argv[0] in PARSE_COMMANDS:
                ctx.build_parser().parse_args(argv)
                code = 0
            else:
                code = ctx.main(argv)
        except SystemExit as exc:
            code = exc.code
    message = err.getvalue().strip()
    if code == 2:
        if "\n" in message or not message:
            raise Outcome(CRASH, f"exit 2 with {len(message.splitlines())} lines on stderr: {message[-300:]!r}")
        raise Outcome(REJECTED, message)
    if code not in (0, None):
        raise Outcome(CRASH, f"exit status {code!r}: {message[-300:]!r}")
    printed = NONFINITE_TEXT.search(out.getvalue())
    if printed:
        around = out.getvalue()[max(printed.start() - 80, 0):printed.end()]
        raise Outcome(NAN, f"exit 0 and printed {printed.group()!r}: ...{around!r}")


def _cli_text(argv) -> str:
    return "pkm " + shlex.join(argv)


def cli_campaign(build_parser, main) -> Campaign:
    """The campaign of the class cli against pkm's ``build_parser`` and ``main``."""
    return Campaign("cli", partial(_cli_setup, build_parser, main), _cli_inputs, _cli_run, _cli_text)


# ----------------------------------------------------------------------------- (6) the Python API

API_CALLS = ("inverse", "forward_kinematics", "jacobian", "singularity", "inverse_dynamics", "forward_dynamics",
             "mass_matrix", "joint_space", "inverse_dynamics_joint", "formulation")


def _api_setup():
    from ..dynamics import robot_dynamics

    return {r: robot_dynamics(r) for r in _robots()}


def _api_inputs(dyns):
    def for_robot(r):
        dyn = dyns[r]
        kin = dyn.kin
        home = dyn.model.spec.home.tolist()
        qa = kin.actuated(kin.task.pose(home)).tolist()
        dim, n = kin.task.dim, dyn.model.n_actuated
        raw_pose = st.tuples(vectors(kin.task.pose(home).position, 0.05), vectors(np.eye(3).ravel(), 0.01))
        return st.fixed_dictionaries({
            "robot": st.just(r), "call": st.sampled_from(API_CALLS),
            "pose": st.one_of(vectors(home, 0.05), raw_pose),
            "twist": vectors([0.0] * dim, 1.0), "accel": vectors([0.0] * dim, 10.0),
            "joints": st.tuples(vectors(qa, 0.05), vectors([0.0] * n, 1.0), vectors([0.0] * n, 10.0)),
            "tau": vectors([0.0] * n, 1e3), "wrench": st.one_of(st.none(), vectors([0.0] * 6, 100.0))})

    return st.sampled_from(sorted(dyns)).flatmap(for_robot)


def _api_run(dyns, x):
    """One public call: a finite result, or one of the project's errors."""
    from ..dynamics.formulations import formulation, methods_for
    from ..kinematics.analysis import singularity
    from ..kinematics.forward import forward_kinematics
    from ..kinematics.task_space import Pose

    dyn = dyns[x["robot"]]
    kin = dyn.kin
    p = x["pose"]
    if isinstance(p, tuple):                 # a raw Pose: 3 + 9 numbers, or a wrong size the call must refuse
        R = np.asarray(p[1], float)
        pose = Pose(np.asarray(p[0], float), R.reshape(3, 3) if R.size == 9 else R)
    else:
        pose = kin.task.pose(np.asarray(p, float))
    twist, accel = np.asarray(x["twist"], float), np.asarray(x["accel"], float)
    q, qd, qdd = (np.asarray(v, float) for v in x["joints"])
    call = x["call"]
    if call == "inverse":
        m = kin.inverse(pose, twist, accel)
        results = [m.q, m.v, m.a]
    elif call == "forward_kinematics":
        r = forward_kinematics(kin, q, pose)
        results = [r.pose.position, r.pose.rotation, r.residual]
    elif call == "jacobian":
        results = [kin.jacobian(pose)]
    elif call == "singularity":
        rep = singularity(kin, pose)
        # kappa(J) is inf exactly where J is singular, by definition (SingularityReport); finite elsewhere
        if not np.isfinite(rep.condition_number) and not rep.singular:
            raise Outcome(NAN, f"condition number {rep.condition_number} at a pose classified regular")
        results = [v for k, v in vars(rep).items() if isinstance(v, (int, float, np.ndarray))
                   and k != "condition_number"] + [rep.dexterity]
    elif call == "inverse_dynamics":
        results = [dyn.inverse_dynamics(pose, twist, accel, wrench=x["wrench"]).tau]
    elif call == "forward_dynamics":
        results = [dyn.forward_dynamics(pose, twist, np.asarray(x["tau"], float), wrench=x["wrench"])]
    elif call == "mass_matrix":
        results = [dyn.mass_matrix(pose)]
    elif call == "joint_space":
        results = list(dyn.joint_space(pose, twist))
    elif call == "inverse_dynamics_joint":
        results = [dyn.inverse_dynamics_joint(q, qd, qdd, pose).tau]
    else:
        results = [formulation(m, dyn).inverse_dynamics(pose, twist, accel) for m in methods_for(x["robot"])]
    for k, r in enumerate(results):
        if r is not None:
            expect_finite(f"{call} result {k}", r)


# ----------------------------------------------------------------------------- (7) peers

#: the largest time a message can carry (builtin_interfaces/Time: int32 seconds)
MAX_STAMP_NS = (2**31 - 1) * 10**9


def _peers_setup():
    """The domain of the runs (an isolated one, or ROS_DOMAIN_ID) and a cache of the runs without an attack."""
    from ..graph import peers
    from ..ros.topology import domain_id

    try:
        peers.check_ros()
    except ImportError as exc:
        raise PkmError(f"the peers class needs ROS 2 (rclpy and the message packages): {exc}") from exc
    return {"domain": domain_id(isolated=True), "baseline": {}}


def _peers_inputs(ctx):
    """A second node of each kind, a foreign /clock, a chunk in the past, a replay, /joint_states stamps in the
    future or 0 (graph/peers.py ATTACKS), at a generated pace, with generated times."""
    from ..graph.peers import Attack

    clock = st.one_of(st.sampled_from([0, MAX_STAMP_NS, 1, 10**9]), st.integers(0, MAX_STAMP_NS))
    ahead = st.one_of(st.just(0.0), st.floats(1e-3, 1e9))
    every = st.integers(1, 40)
    return st.one_of(
        st.tuples(st.just("sim"), st.just(Attack("second_generator"))),
        st.tuples(st.sampled_from(["sim", "topics"]), st.just(Attack("second_controller"))),
        st.tuples(st.sampled_from(["sim", "topics"]), st.builds(Attack, st.just("clock"), st.lists(
            clock, min_size=1, max_size=20).map(tuple), every)),
        st.tuples(st.just("sim"), st.builds(Attack, st.just("past_chunk"), st.just(()), st.integers(1, 80))),
        st.tuples(st.just("sim"), st.builds(Attack, st.just("replay"), st.just(()), st.integers(1, 20))),
        st.tuples(st.just("topics"), st.builds(Attack, st.just("future_stamps"),
                                               st.lists(ahead, min_size=1, max_size=5).map(tuple), every)))


def _peers_run(ctx, x):
    """One run of the graph under the attack, judged against the run without it (graph/peers.py ``judge``: tracking
    error within twice its own, no safe-behaviour entry, nothing lost): a violation if it fails; the attack's
    messages refused (counted in the nodes' diagnostics): rejected cleanly; none refused: accepted."""
    from ..graph import peers

    hardware, attack = x
    if hardware not in ctx["baseline"]:
        ctx["baseline"][hardware] = peers.run(None, ctx["domain"], hardware)
    run = peers.run(attack, ctx["domain"], hardware)
    failed = peers.judge(run, ctx["baseline"][hardware])
    expect(failed is None, f"{attack.kind} ({hardware}): {failed}")
    if run.refused:
        raise Outcome(REJECTED, f"{run.refused} messages refused")


def _peers_text(x) -> str:
    hardware, a = x
    return f"hardware {hardware}: Attack({a.kind!r}, values={a.values!r}, every={a.every})"


# ----------------------------------------------------------------------------- the campaigns

#: the campaign of each class of pkm_control.fuzz.CLASSES, in that order, but cli (``cli_campaign``: pkm hands in
#: its parser and entry point)
# ----------------------------------------------------------------------------- (8) contact parameters

#: periods of a contact run: the law presses from the start (40 ms)
CONTACT_PERIODS = 80


def _contact_setup():
    from ..dynamics import robot_dynamics

    dyn = robot_dynamics("palida")
    return {"dyn": dyn, "home": dyn.kin.home_pose()}


def _contact_inputs(ctx):
    """An environment as config/environment.yaml writes it (palida's tool point, a plane just below the tool and a
    box) with hostile or absurd values: stiffness and damping from 0 and negative to 1e20 and NaN, friction and slip
    speed out of range, a zero normal, a box that holds the whole robot, junk types; a sensor with negative or NaN
    noise, bias and cut-off; and the pressing force of direct force control."""
    tip = float(ctx["home"].position[2]) - 0.05
    num = st.one_of(HOSTILE, st.sampled_from([-1.0, -1e5, 1e12, 1e20, "stiff", None, [1.0]]))

    def good_or(good):
        return st.one_of(good, good, good, num)

    plane = st.fixed_dictionaries({
        "shape": st.sampled_from(["plane", "plane", "plane", "sphere", None]),
        "point": st.one_of(st.just([0.0, 0.0, tip - 0.002]), vectors([0.0, 0.0, tip], 0.02)),
        "normal": st.one_of(st.just([0.0, 0.0, 1.0]), vectors([0.0, 0.0, 1.0], 1.0), st.just([0.0, 0.0, 0.0])),
        "stiffness": good_or(st.floats(1e3, 1e9)), "damping": good_or(st.floats(0, 1e5)),
        "friction": good_or(st.floats(0, 3)), "slip_speed": good_or(st.floats(1e-6, 1e-1))})
    box = st.fixed_dictionaries({
        "shape": st.just("box"),
        "center": st.one_of(st.just([0.1, 0.0, tip - 0.02]), vectors([0.0, 0.0, tip], 0.5)),
        "half_extents": st.one_of(st.just([0.04, 0.1, 0.03]), st.just([1e6, 1e6, 1e6]), st.just([10.0, 10.0, 10.0]),
                                  vectors([0.05, 0.05, 0.05], 0.1)),
        "stiffness": good_or(st.floats(1e3, 1e9)), "damping": good_or(st.floats(0, 1e5)),
        "friction": good_or(st.floats(0, 3))})
    environment = st.fixed_dictionaries({
        "tool_point": st.one_of(st.just([0.0, 0.0, -0.05]), vectors([0.0, 0.0, -0.05], 0.1)),
        "surfaces": st.one_of(st.lists(st.one_of(plane, box), min_size=1, max_size=3), st.just("table"),
                              st.lists(st.integers(), max_size=2))})
    sensor = st.fixed_dictionaries({"noise_std": good_or(st.floats(0, 5)), "bias": good_or(st.floats(-5, 5)),
                                    "cutoff": good_or(st.floats(0, 1000))})
    return st.fixed_dictionaries({"environment": environment, "sensor": sensor, "force": st.floats(0, 200),
                                  "depth": st.floats(0, 0.005)})


def _contact_run(ctx, x):
    """Build the environment and the sensor (ContactEnvironment.from_dict, wrench_sensor) and the simulated palida
    with them, reset at home, then direct force control presses F_d down along z with the reference ``depth`` below
    home for CONTACT_PERIODS: a wrong parameter is refused (PkmError) before the run; an accepted one runs with every
    command finite and within the force limits, every state, contact wrench and sensor sample finite, every limited
    joint within its end stop's energy bound."""
    from ..control import References
    from ..control.force import ForceReference
    from ..control.settings import make_force_controller
    from ..hardware import SimulatedRobot
    from ..hardware.contact import ContactEnvironment, wrench_sensor

    dyn, home = ctx["dyn"], ctx["home"]
    env = ContactEnvironment.from_dict(x["environment"], "fuzzed environment")
    sensor = wrench_sensor(env, x["sensor"])
    robot = SimulatedRobot(dyn, 0.0005, environment=env, wrench_sensor=sensor)
    robot.reset(home)
    c = make_force_controller(dyn, "direct_force")
    kin, act = dyn.kin, dyn.model.actuated_idx
    goal = kin.inverse(kin.task.retract(home, np.array([0.0, 0.0, -x["depth"], 0.0, 0.0, 0.0])))
    press = ForceReference(np.array([0.0, 0.0, -x["force"], 0.0, 0.0, 0.0]), np.array([0, 0, 1, 0, 0, 0], bool))
    bound = robot.energy_bound()
    limits = robot.force_limits.limits
    zero = np.zeros(len(act))
    for k in range(CONTACT_PERIODS):
        t = k * 0.0005
        meas = robot.read()
        w = meas.sensors.get("wrench")
        expect_finite(f"period {k}: wrench sample", w.wrench)
        cmd = c.update(t, meas, References(goal.q[act], zero, zero, press))
        expect_finite(f"period {k}: command", cmd.tau)
        expect(np.all(np.abs(cmd.tau) <= limits), f"period {k}: command {cmd.tau.tolist()} beyond the limits")
        robot.write(cmd.tau, t)
        try:
            robot.step()
            truth = robot.ground_truth()
        except PkmError as exc:          # an accepted environment must not stop the plant
            raise Outcome(CRASH, f"period {k}: step() raised {type(exc).__name__}: {exc}") from exc
        expect_finite(f"period {k}: joint positions (ground truth)", truth.position)
        expect_finite(f"period {k}: contact wrench", robot.contact_wrench())
        robot.update_energy_bound(bound)
        broken = bound.violation(*robot.penetrations(truth))
        expect(broken is None, f"period {k}: {broken}")


CAMPAIGNS = {c.name: c for c in (
    Campaign("goals", _goals_setup, _goals_inputs, _goals_run),
    Campaign("controller", _controller_setup, _controller_inputs, _controller_run),
    Campaign("messages", _messages_setup, _messages_inputs, _messages_run),
    Campaign("simulated", _simulated_setup, _simulated_inputs, _simulated_run),
    Campaign("api", _api_setup, _api_inputs, _api_run),
    Campaign("peers", _peers_setup, _peers_inputs, _peers_run, _peers_text),
    Campaign("contact", _contact_setup, _contact_inputs, _contact_run),
)}
