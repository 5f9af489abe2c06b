"""Node plumbing shared by the executables: parameters, diagnostics, the callback guard and the runner.

Parameters: a node declares the settings it uses (pkm_control.control.settings.NODE_KEYS) with the values
resolved from the controller YAML as defaults; the keys of ``settings.RUNTIME_KEYS`` are applied when
set on the running node (validated by ``settings.validate``, then handed to the node's ``on_change``;
a refused value leaves everything as it was and the set call reports the reason), every other key is
declared read-only.

Callbacks: ``guarded`` catches every exception of a callback at the node boundary: it is counted in
/diagnostics (rejected inputs), logged at most once per second per kind, and the node keeps running
with its last safe output. A rejection is cheap, so that a flood of junk costs little more than its
delivery: a count, one dictionary look-up on (what, exception type) and a clock read; the log line
(with how many of its kind were not logged since) and the diagnostics' text are only formatted when
they are written.

Services: ``ServiceGuard`` creates a node's services behind a rate limit (control.services: a token bucket per
service; a refused call answers success False with the reason, counted as ``service_refusals`` and a rejected
input in /diagnostics and logged at most once a second).

Runner: ``run_node`` handles --help, starts rclpy without its signal handlers and installs its own
for SIGINT, SIGTERM and SIGHUP: each ends the spin (in the node's own process the first signal wakes it through a
guard condition, so that it waits for the node's events only; else within one wait period, 0.1 s) and the node
is destroyed cleanly, so every node exits within a second of any of them. Whatever the process is
doing when the signal comes (building the node, a long callback, a call into the middleware that
blocks), it is gone SHUTDOWN_LIMIT s after the first signal (saying where it was stuck), and at once on a
second one (launch_ros's SIGTERM after its SIGINT, `pkm bringup`'s second SIGTERM): ``_shutdown_watchdog``.
"""

from __future__ import annotations

import os
import signal
import sys
import time

from ..errors import InvalidInputError, PkmError, excerpt
from ..process import end_with_parent
from ..control.settings import (CHOICE_KEYS, FLOAT_KEYS, GAIN_KEYS, INT_KEYS, RANGES, RUNTIME_KEYS, check_stream_rate,
                                gain, integer, node_settings, range_text, validate)
from .dds import use_dds_profile
from .qos import qos

LOG_THROTTLE = 1.0               # s between repeated warnings of one kind
#: s: the longest an idle spin waits before it looks at the stop flag, in a caller's process (tests); a node's own
#: process waits for its events only (run_node)
SPIN_WAIT = 0.1
SHUTDOWN_LIMIT = 5.0             # s (wall) from the first stop signal to the end of a node's process (a hang's bound)


def declare_settings(node, node_name: str, on_change=None):
    """Declare the node's settings (module docstring); returns (RobotContext, settings dict).

    on_change(key, value): applies a validated run-time value; raising InvalidInputError refuses it.
    """
    from rcl_interfaces.msg import ParameterDescriptor, SetParametersResult

    fixed = ParameterDescriptor(read_only=True, dynamic_typing=True)
    robot = node.declare_parameter("robot", "palida", fixed).value
    variant = node.declare_parameter("variant", "", fixed).value
    controller = node.declare_parameter("controller", "pd_feedforward", fixed).value
    config = node.declare_parameter("controller_config", "", fixed).value
    ctx, resolved = node_settings(node_name, robot, variant, controller, config)
    runtime = RUNTIME_KEYS[node_name]
    settings = dict(resolved)
    for key, value in resolved.items():
        if key in ("robot", "variant", "controller", "controller_config"):
            continue
        settings[key] = _declare(node, key, value, key not in runtime)
    # coerce what a launch file or --set may give in another type (control_rate:=1000, kp:=5e5)
    for key in FLOAT_KEYS & settings.keys():
        settings[key] = validate(key, settings[key], ctx.n_actuated) if key in runtime else \
            _float(key, settings[key])
    for key in INT_KEYS.keys() & settings.keys():
        settings[key] = integer(f"parameter '{key}'", settings[key], *INT_KEYS[key])
    n_gains = ctx.gain_size(settings["mode"]) if "mode" in settings else ctx.n_actuated
    for key in set(GAIN_KEYS) & settings.keys():
        settings[key] = validate(key, settings[key], ctx.n_actuated, n_gains=n_gains) if key in runtime else \
            gain(key, settings[key], n_gains if key in ("kp", "kd") else ctx.n_actuated)
    if "force_limit" in settings:
        settings["force_limit"] = validate("force_limit", settings["force_limit"], ctx.n_actuated, ctx.force_limit)
    if {"stream_rate", "control_rate"} <= settings.keys():
        check_stream_rate(settings)

    def on_set(params):
        for p in params:
            if p.name not in runtime:
                continue
            try:
                value = validate(p.name, p.value, ctx.n_actuated, ctx.force_limit, n_gains)
                if on_change is not None:
                    on_change(p.name, value)
                settings[p.name] = value
                node.get_logger().info(f"parameter {p.name} = {value!r} applied")
            except PkmError as exc:
                return SetParametersResult(successful=False, reason=str(exc))
        return SetParametersResult(successful=True)

    node.add_on_set_parameters_callback(on_set)
    return ctx, settings


def _declare(node, key: str, value, read_only: bool):
    """``node.declare_parameter`` of a setting with its ``descriptor``. rclpy checks a scalar against the declared
    range at the declaration (a launch file's, ``--set``'s or an override's value), before the node's own checks:
    its refusal (InvalidParameterValueException) becomes the project's InvalidInputError naming the parameter, the
    refused value (read again under a descriptor without the range) and the range, so the node exits cleanly."""
    from rcl_interfaces.msg import ParameterDescriptor
    from rclpy.exceptions import InvalidParameterValueException

    try:
        return node.declare_parameter(key, value, descriptor(key, value, read_only)).value
    except InvalidParameterValueException:
        pass
    given = node.declare_parameter(key, value, ParameterDescriptor(read_only=True, dynamic_typing=True)).value
    raise InvalidInputError(f"parameter '{key}' = {excerpt(given)} is outside its range {range_text(key)}")


def descriptor(key: str, value, read_only: bool):
    """The ParameterDescriptor of a setting: its declared range (settings.RANGES, INT_KEYS), which ROS 2 applies
    to a scalar only; a list (per-joint gains) says in ``additional_constraints`` that each element is checked; a
    choice (settings.CHOICE_KEYS) names its values there."""
    from rcl_interfaces.msg import FloatingPointRange, IntegerRange, ParameterDescriptor

    desc = ParameterDescriptor(read_only=read_only, dynamic_typing=True)
    if key in RANGES:
        r = RANGES[key]
        if isinstance(value, (list, tuple)):
            desc.additional_constraints = (f"each element in {r.text()} (checked per element: ROS 2 ranges apply to "
                                           f"scalars only): {r.reason}")
        else:
            desc.floating_point_range = [FloatingPointRange(from_value=r.low, to_value=r.high, step=0.0)]
            desc.additional_constraints = f"{r.text()}: {r.reason}"
    elif key in INT_KEYS:
        low, high = INT_KEYS[key]
        desc.integer_range = [IntegerRange(from_value=low, to_value=high, step=1)]
    elif key in CHOICE_KEYS:
        choices = CHOICE_KEYS[key]
        desc.additional_constraints = choices if isinstance(choices, str) else f"one of {', '.join(choices)}"
    return desc


def log_at(logger, level: str, line: str) -> None:
    """``line`` at ``level`` ("info" | "warning" | "error"; a plugin's log, HardwareHost.log): one call site per level,
    as rclpy's logger requires (its severity is fixed per call site)."""
    if level == "error":
        logger.error(line)
    elif level == "warning":
        logger.warning(line)
    else:
        logger.info(line)


def service_type(name: str):
    """The ROS service class of a type name, "std_srvs/srv/Trigger" (or "std_srvs/Trigger"): InvalidInputError when
    the name is malformed or its package is not installed."""
    import importlib

    package, _, rest = name.partition("/")
    kind = rest.rpartition("/")[2]
    try:
        cls = getattr(importlib.import_module(f"{package}.srv"), kind, None) if package and kind else None
    except ImportError as exc:
        raise InvalidInputError(f"service type {name!r}: {exc}") from exc
    if cls is None:
        raise InvalidInputError(f"service type {name!r} is not a ROS service type (package/srv/Type)")
    return cls


class ServiceGuard:
    """A node's services, each behind its own TokenBucket (module docstring). ``clock``: seconds of a monotonic
    clock, the wall's steady time (a flood is calls per wall second; a test drives its own)."""

    def __init__(self, node, diag: Diagnostics, clock=time.monotonic):
        self.node = node
        self.diag = diag
        self.clock = clock
        self.buckets: dict = {}
        diag.extra["service_refusals"] = 0

    def service(self, srv_type, name: str, callback):
        """``node.create_service`` whose callback runs only with a token of the service's bucket."""
        from ..control.services import TokenBucket

        bucket = self.buckets[name] = TokenBucket(clock=lambda: self.clock())

        def limited(request, response):
            if bucket.take():
                return callback(request, response)
            response.success = False
            response.message = bucket.refusal()
            self.diag.extra["service_refusals"] += 1
            self.diag.reject(f"service {name}", InvalidInputError(response.message))
            return response

        return self.node.create_service(srv_type, name, limited)

    def reset_services(self, reset, velocity, names=()):
        """/hardware/reset, refused while the robot moves (control.services.reset_refusal of ``velocity()``, the
        measured actuated velocity or None), and /hardware/reset_force, ``reset`` regardless: both rate-limited.
        Returns the two services."""
        from std_srvs.srv import Trigger

        from ..control.services import reset_refusal

        def checked(request, response):
            refusal = reset_refusal(velocity(), names)
            if refusal is None:
                return reset(request, response)
            response.success = False
            response.message = refusal
            self.diag.reject("service /hardware/reset", InvalidInputError(refusal))
            return response

        return self.service(Trigger, "/hardware/reset", checked), self.service(Trigger, "/hardware/reset_force", reset)


def _float(key, value):
    if isinstance(value, bool):
        raise InvalidInputError(f"parameter '{key}' must be a number, got {value!r}")
    try:
        return float(value)
    except (TypeError, ValueError) as exc:
        raise InvalidInputError(f"parameter '{key}' must be a number, got {value!r}") from exc


class Diagnostics:
    """Counters of one node, published as diagnostic_msgs/DiagnosticArray on /diagnostics.

    rate: handled control steps (or messages) per wall second over the last period;
    deadline_misses, rejected_inputs, safe_behaviour (active or 'none'); extra key-values
    per node. Published on a wall timer (``period`` s) and on demand (``publish()``), or, once the node takes the
    timing over (``take_timing``), when ``due`` says so, by the node's own thread. A node that sets
    ``starting`` (its hook: what it waits for before it takes part, None once it does) reports it while it
    starts: key started (false, true), key waiting_for and the status message "starting: waiting for ...".
    """

    def __init__(self, node, period: float = 1.0, clock=time.monotonic):
        from diagnostic_msgs.msg import DiagnosticArray
        from rclpy.clock import Clock, ClockType

        self.node = node
        self.pub = node.create_publisher(DiagnosticArray, "/diagnostics", qos("/diagnostics", "pub"))
        self.steps = 0
        self.rejected = 0
        self.deadline_misses = 0
        self.safe_behaviour = "none"
        self.extra: dict = {}
        self.errors: dict = {}          # kind -> message: the node's status is ERROR while one is set (ros/peers.py)
        self.clock = clock              # s, monotonic: the log throttle's time
        self._last = (time.monotonic(), 0)
        self._last_reject = None        # (what, exception), formatted when read
        self._throttle: dict = {}       # kind -> [time of the last log line, messages of the kind not logged since]
        self.before_publish = []        # a node's hooks that refresh its figures in ``extra`` (each one slice)
        self.statuses = None            # a node's hook: further statuses [(name, "ok" | "warn" | "error", message,
                                        # {key: value})], one per device (hardware canopen: per drive)
        self.watch = None               # lockstep: the LockstepWatch whose stall raises the level (WARN, ERROR)
        self.starting = None            # a node's hook: what it waits for at start-up, in words (None once it runs)
        self._stall_level = "ok"        # the stall level last published (its changes are logged)
        self.sent = None                # the last message published
        self._due_at = float("inf")     # take_timing: when due() says so next (monotonic s)
        self.period = float(period)
        self.timer = node.create_timer(period, self.publish, clock=Clock(clock_type=ClockType.STEADY_TIME))

    def step(self):
        self.steps += 1

    def take_timing(self) -> None:
        """The node publishes from now on when ``due`` (a real-time loop, between its periods: publish_slices); the
        timer is gone, so that the executor's thread no longer wakes to take the interpreter lock for it."""
        if self.timer is not None:
            self.node.destroy_timer(self.timer)
            self.timer = None
        self._due_at = time.monotonic() + self.period

    def due(self, now: float) -> bool:
        """``take_timing``: ``period`` s (monotonic ``now``) have passed since it last said so."""
        if now < self._due_at:
            return False
        self._due_at = now + self.period
        return True

    def reject(self, what: str, exc: Exception) -> None:
        """Count a rejected input and log it (at most once per LOG_THROTTLE per kind: what and exception type)."""
        self.rejected += 1
        self._last_reject = (what, exc)
        suppressed = self._due((what, type(exc)))
        if suppressed is not None:
            self.node.get_logger().warning(f"rejected {what}: {type(exc).__name__}: {str(exc)[:500]}"
                                           + _suppressed(suppressed))

    @property
    def last_reject(self) -> str:
        if self._last_reject is None:
            return ""
        what, exc = self._last_reject
        return f"{what}: {str(exc)[:300]}"

    def miss(self, what: str, message: str) -> None:
        self.deadline_misses += 1
        suppressed = self._due(("miss", what))
        if suppressed is not None:
            self.node.get_logger().warning(message + _suppressed(suppressed))

    def _due(self, kind) -> int | None:
        """None while ``kind`` was logged less than LOG_THROTTLE ago (the message is counted as not logged),
        else how many of its kind were not logged since the last line (the caller logs now)."""
        now = self.clock()
        entry = self._throttle.get(kind)
        if entry is None:
            self._throttle[kind] = [now, 0]
            return 0
        if now - entry[0] < LOG_THROTTLE:
            entry[1] += 1
            return None
        suppressed = entry[1]
        entry[0], entry[1] = now, 0
        return suppressed

    def publish(self):
        """Publish now; returns the message."""
        for _ in self.publish_slices():
            pass
        return self.sent

    def publish_slices(self):
        """``publish`` as a job of slices (control.realtime.SlicedWork): each hook of the node's figures
        (``before_publish``), the message, its publication; the message published is in ``sent`` after the last.
        (A real-time loop runs them between its periods: measured there, the figures and the message in one slice each
        took 340 us at the median, 464 us at p99, long enough to delay the next period past its own deadline.)"""
        from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue

        for refresh in self.before_publish:
            refresh()
            yield
        now = time.monotonic()
        t_last, steps_last = self._last
        rate = (self.steps - steps_last) / max(now - t_last, 1e-9)
        self._last = (now, self.steps)
        st = DiagnosticStatus()
        st.name = self.node.get_fully_qualified_name()
        st.hardware_id = str(self.extra.get("robot", ""))
        bad = self.safe_behaviour != "none" or self.rejected or self.deadline_misses
        st.level = DiagnosticStatus.WARN if bad else DiagnosticStatus.OK
        st.message = (f"safe behaviour '{self.safe_behaviour}' active" if self.safe_behaviour != "none"
                      else (f"last rejected input: {self.last_reject}" if self.rejected else "ok"))
        values = {"rate": f"{rate:.1f}", "steps": str(self.steps), "deadline_misses": str(self.deadline_misses),
                  "rejected_inputs": str(self.rejected), "safe_behaviour": self.safe_behaviour}
        if self.watch is not None:      # a lockstep stall outranks the rest: it names what the node waits for
            stall, message = self.watch.report(self.clock())
            values.update(lockstep_stall=stall, waiting_for=self.watch.waiting_for,
                          lockstep_idle_s=f"{self.watch.idle(self.clock()):.1f}",
                          lockstep_resends=str(self.watch.resends))
            if stall != "ok":
                st.level = DiagnosticStatus.ERROR if stall == "error" else DiagnosticStatus.WARN
                st.message = message
            if stall != self._stall_level:   # one call site per severity (rclpy's logger requires it)
                if stall == "error":
                    self.node.get_logger().error(message)
                elif stall == "warn":
                    self.node.get_logger().warning(message)
                else:
                    self.node.get_logger().info("lockstep progressing again")
                self._stall_level = stall
        try:
            waiting = self.starting() if self.starting is not None else None
        except Exception as exc:      # noqa: BLE001 - a report never ends the node: the failure is counted and said
            self.reject("start-up wait", exc)
            waiting = f"? ({type(exc).__name__} while asking)"
        if self.starting is not None:   # start-up: what the node waits for before it takes part (docs/graph.md)
            values["started"] = "false" if waiting else "true"
        if waiting:
            values["waiting_for"] = waiting
            if st.level == DiagnosticStatus.OK:
                st.message = f"starting: waiting for {waiting}"
        if self.errors:                 # outranks the rest: the graph is not what this node may trust
            st.level = DiagnosticStatus.ERROR
            st.message = "; ".join(self.errors.values())
        values.update({k: str(v) for k, v in self.extra.items()})
        st.values = [KeyValue(key=k, value=v) for k, v in values.items()]
        msg = DiagnosticArray()
        msg.header.stamp = self.node.get_clock().now().to_msg()
        msg.status = [st] + [_status(f"{st.name}/{name}", level, message, values) for name, level, message, values
                             in (self.statuses() if self.statuses is not None else ())]
        yield
        self.pub.publish(msg)
        self.sent = msg


def _status(name: str, level: str, message: str, values: dict):
    from diagnostic_msgs.msg import DiagnosticStatus, KeyValue

    levels = {"ok": DiagnosticStatus.OK, "warn": DiagnosticStatus.WARN, "error": DiagnosticStatus.ERROR}
    return DiagnosticStatus(name=name, level=levels[level], message=message,
                            values=[KeyValue(key=k, value=str(v)) for k, v in values.items()])


def _suppressed(n: int) -> str:
    return f" ({n} more of this kind not logged)" if n else ""


def guarded(diag: Diagnostics, what: str):
    """Decorator for callbacks: any exception is counted and logged (throttled per kind), never raised
    into the executor; the node keeps its last safe output."""

    def wrap(fn):
        def cb(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except Exception as exc:          # noqa: BLE001 - the node boundary: nothing may kill the node
                diag.reject(what, exc)
            return None

        return cb

    return wrap


def stream_stage_priority(node, settings: dict, diag) -> None:
    """A streaming node (trajectory_generator, inverse_kinematics, computed_force) in real time (``lockstep`` false):
    every thread of its process at SCHED_FIFO ``stream_priority`` (0: the default scheduler), below the loop's threads
    (joint_controller: realtime_priority - 10). The streams are part of the real-time path: on a machine busy with
    other work a stage at the default scheduler gets a share of a core that its chunks do not fit in (measured on the
    2 shared cores at load 13-16: the generator's chunks reached the stages 0.2-3 s after the loop had passed them, the
    loop held 100 % of its periods; with the three stages at SCHED_FIFO 60, 0.015 %, docs/benchmarks.md). What was set,
    or why not, goes to /diagnostics (``realtime``); lockstep runs keep the default scheduler (their clock waits for
    the streams)."""
    from ..control.realtime import fifo_priority

    priority = int(settings["stream_priority"])
    if settings["lockstep"] or priority <= 0:
        diag.extra["realtime"] = "default scheduler"
        return
    why = fifo_priority(priority, whole_process=True)
    diag.extra["realtime"] = why or f"SCHED_FIFO priority {priority}"
    node.get_logger().info(f"streaming at {diag.extra['realtime']}")


class ChunkCost:
    """The thread CPU time a stream stage spends per chunk it computes (parse to publish), for /diagnostics:
    ``chunk_cpu_mean_us`` over the node's life and ``chunk_cpu_max_us``, beside the sim time a chunk covers
    (``chunk_span_ms``: its samples times their spacing): a stage whose mean approaches the span cannot keep real time
    even with a core of its own."""

    def __init__(self, diag):
        self.diag = diag
        self.count = 0
        self.total_ns = 0
        self.max_ns = 0

    def add(self, cpu_ns: int, times_ns) -> None:
        n = len(times_ns)
        span_ns = (int(times_ns[-1]) - int(times_ns[0])) * n / (n - 1) if n > 1 else 0
        self.count += 1
        self.total_ns += cpu_ns
        self.max_ns = max(self.max_ns, cpu_ns)
        self.diag.extra.update(chunk_cpu_mean_us=f"{self.total_ns / self.count * 1e-3:.0f}",
                               chunk_cpu_max_us=f"{self.max_ns * 1e-3:.0f}", chunk_span_ms=f"{span_ns * 1e-6:.1f}")


class PolledSubscriptions:
    """Subscriptions that no executor runs: their owner takes the messages itself, a slice at a time
    (``step``), in the thread and at the moments it chooses (the real-time loop, between two periods).

    rclpy's executors skip every entity whose callback group answers ``can_execute`` with False; this
    group always does. A message is handled in three slices, each short enough for the slack of a
    period: take its serialized bytes, deserialize them, call the subscription's usual callback (guard it
    with ``guarded``). A subscription created ``raw`` hands its callback the serialized bytes, in one slice (a
    reader of its own, e.g. ros.cdr.JointTrajectoryReader, parses them: rclpy's deserialization of a streamed
    chunk was the longest slice of the loop's thread). The subscriptions are taken in turn.
    """

    def __init__(self, max_pending: int = 1000):
        from rclpy.callback_groups import CallbackGroup

        from ..control.realtime import SlicedWork

        class _Polled(CallbackGroup):
            def can_execute(self, entity) -> bool:
                return False

            def beginning_execution(self, entity) -> bool:
                return False

            def ending_execution(self, entity) -> None:
                pass

        self.group = _Polled()
        self.subscriptions = []
        self.raw = set()                            # the subscriptions whose callback takes the serialized bytes
        self.pending = SlicedWork(max_pending)      # taken messages not yet handled
        self._next = 0

    def create(self, node, msg_type, topic, callback, qos_profile, raw: bool = False):
        sub = node.create_subscription(msg_type, topic, callback, qos_profile, callback_group=self.group, raw=True)
        self.subscriptions.append(sub)
        if raw:
            self.raw.add(sub)
        return sub

    def step(self) -> bool:
        """One slice: of a message taken before, else take the next waiting one; False when nothing waits."""
        return self.pending.step() or self._take()

    def _take(self) -> bool:
        from rclpy.exceptions import InvalidHandle

        subs = self.subscriptions
        for i in range(len(subs)):
            sub = subs[(self._next + i) % len(subs)]
            try:
                with sub.handle:
                    taken = sub.handle.take_message(sub.msg_type, True)
            except InvalidHandle:          # destroyed while the node shuts down
                return False
            if taken is not None:
                self._next = (self._next + i + 1) % len(subs)
                self.pending.add(self._handle(sub, *taken, sub in self.raw))
                return True
        return False

    @staticmethod
    def _handle(sub, data: bytes, info, raw: bool):
        from rclpy.serialization import deserialize_message
        from rclpy.subscription import Subscription

        msg = data
        if not raw:
            msg = deserialize_message(data, sub.msg_type)
            yield
        if sub._callback_type == Subscription.CallbackType.WithMessageInfo:     # a callback that takes the info
            sub.callback(msg, info)
        else:
            sub.callback(msg)


def wants_help(argv) -> bool:
    """--help / -h before any --ros-args (rclpy is not initialized for it)."""
    args = list(argv)
    if "--ros-args" in args:
        args = args[:args.index("--ros-args")]
    return "--help" in args or "-h" in args


def _shutdown_watchdog(wake: list) -> None:
    """Bound the clean stop (module docstring). Python runs a signal handler only when the main thread returns to
    the interpreter, which a main thread blocked in C (a middleware call) may not do for seconds; the C-level handler
    writes the signal's number to the wakeup fd at once, though. A daemon thread sleeps on that fd: at the first
    signal it starts faulthandler's timer (a C thread that needs no interpreter lock), which SHUTDOWN_LIMIT s later
    prints where every thread of the node is (the reason a stop hung) and ends the process (status 1); a second
    signal ends it at once (128 + the first's number). It says so in one line on stderr."""
    import faulthandler
    import threading

    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)

    def watch():
        first = os.read(r, 1)[0]                     # blocks until the first signal
        faulthandler.dump_traceback_later(SHUTDOWN_LIMIT, exit=True)
        for guard in list(wake):                     # the spin's wait returns: the main thread sees the signal
            try:
                guard.trigger()
            except Exception:         # noqa: BLE001 - the main thread saw it first and destroyed the node: it stops
                pass
        try:
            sys.stderr.write(f"{signal.Signals(first).name}: stopping (the process ends within {SHUTDOWN_LIMIT:g} s, "
                             "at once on a second signal)\n")
            sys.stderr.flush()
        except OSError:       # stderr a pipe nobody reads any more (launch died): the second signal still counts
            pass
        os.read(r, 1)                                # a second one: the process ends now
        os._exit(128 + first)

    threading.Thread(target=watch, name="pkm_shutdown_watchdog", daemon=True).start()


def run_node(make_node, doc: str, argv=None) -> int:
    """Entry point of an executable (module docstring): spin until a signal, then destroy the node; with ``argv`` None
    (the process is the node) the process then ends at once."""
    import rclpy
    from rclpy.executors import ExternalShutdownException, SingleThreadedExecutor
    from rclpy.signals import SignalHandlerOptions

    argv_given, argv = argv, list(sys.argv if argv is None else argv)
    if wants_help(argv[1:]):
        print(doc.strip())
        return 0
    # the signals that asked to stop: a plain list, no lock (a threading.Event's lock deadlocks when a second signal
    # comes while the handler of the first holds it: SIGINT from pkm bringup, then SIGTERM as bringup dies)
    stop = []
    building = [True]

    def on_signal(signum, _frame):
        stop.append(signum)
        if building and len(stop) == 1:
            # the node is being built (rclpy's start, a kernel's first compilation: seconds): nothing to finish, the
            # build is given up where the main thread is. Once it spins, a callback ends before the spin looks
            raise KeyboardInterrupt

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, on_signal)
    wake = []                      # the guard condition the watchdog triggers at the first signal
    if argv_given is None:         # the node's own process (not a caller's: tests)
        _shutdown_watchdog(wake)
        end_with_parent()          # launch 3.7 leaves its nodes running when it ends on SIGTERM
    node = None
    code = 0
    try:
        use_dds_profile()              # the project's Fast DDS profile unless the user chose one
        rclpy.init(args=argv, signal_handler_options=SignalHandlerOptions.NO)
        node = make_node()
        if argv_given is None:         # before the build ends: a signal before this interrupts the build
            wake.append(node.create_guard_condition(lambda: None))
        building.clear()
        ex = SingleThreadedExecutor()
        ex.add_node(node)
        while not stop:
            # the node's own process waits for its events only (the watchdog's guard condition wakes it at a signal):
            # a wait that timed out every SPIN_WAIT rebuilt rclpy's wait set in Python, ~0.2 ms holding the
            # interpreter lock ten times a second, which a real-time loop's thread in the process then waited for
            ex.spin_once(timeout_sec=None if wake else SPIN_WAIT)
    except (KeyboardInterrupt, ExternalShutdownException):
        pass
    except PkmError as exc:
        print(f"{os.path.basename(argv[0])}: {type(exc).__name__}: {exc}", file=sys.stderr)
        code = 2
    finally:
        if node is not None:
            node.destroy_node()
        if rclpy.ok():
            rclpy.shutdown()
    if argv_given is None:
        # the node's own process (its command line, not a caller's argv): everything it owns is released above, so
        # the interpreter's finalization (~2 s here, most of it the compiled kernels' teardown) is skipped: a node
        # stopped by a signal, or by its parent's death (process.die_with_parent), is gone at once
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except OSError:   # a pipe nobody reads any more (the parent died)
                pass
        os._exit(code)
    return code


COMMON_PARAMS = """\
common parameters (ROS: --ros-args -p name:=value):
  robot               robot id (stewart, palida, lopes, delta, planar_redundant)   [palida]
  variant             robot variant ('' = the robot's default)                      ['']
  controller          named controller in the controller YAML (pd, pd_feedforward, cf_rb,
                      cf_rb_friction, computed_torque)                              [pd_feedforward]
  controller_config   controller YAML path ('' = <share>/config/controllers.yaml)
  use_sim_time        rclpy's time source follows /clock: stamps only the diagnostics; the nodes read /clock
                      themselves, bound to its source (pkm bringup and the launch file set it false)
  sources             the node each stream is bound to, topic=node pairs (pkm bringup and the launch file
                      name every stream's; a topic not named binds its first publisher of a run)
  a node declares the keys of the controller YAML it uses (its list below) and takes them as
  ROS parameters; only the ones marked 'run time' can be set on the running node.
  every node publishes diagnostic_msgs/DiagnosticArray on /diagnostics (1 Hz wall), and serves
  ~/rebind_sources (std_srvs/Trigger, rate-limited as its other services): its streams bind again at their
  next message (the node named in sources, else the first publisher from then on).
"""
