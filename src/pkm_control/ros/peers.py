"""The nodes' side of trajectory.trust: subscriptions bound to one publisher, the clock a node believes, and a second
node of the same name (issue 22 §1, §2; docs/graph.md "Trust in the graph").

* ``Sources``: a node's bound subscriptions (``subscribe``): each takes its messages with their message info
  (rclpy passes ``(msg, info)`` to a callback of two arguments), and only the publisher its ``SourceBinding``
  believes reaches the callback; a refused message is counted in /diagnostics (rejected inputs) and logged with
  its publisher's gid at most once a second (``guarded``'s throttle). ``reset`` rebinds (the graph's reset). The
  diagnostics carry each binding (``source <topic>``: the bound gid and node, the refused gids with their
  counts), and an ERROR when another node of this node's name is in the graph (``get_node_names_and_namespaces``).
  With the node's ServiceGuard, ``~/rebind_sources`` (std_srvs/Trigger, rate-limited) rebinds every stream: the
  operator's way to move a binding while the bound publisher is still in the graph (a reset of the graph, or the
  bound publisher leaving it, rebinds by itself). A message from a publisher whose node the graph does not know
  by name yet (DDS discovery: the endpoint matched, the node's name comes on another topic, possibly later) is
  held, not lost: the bound publisher's held messages are taken at its next message or, for the subscriptions
  the node's executor takes, by the release timer (every RELEASE_PERIOD s) once the graph knows its name. A
  message published once (the first /platform_pose at sim time 0, latched) would otherwise wait for ever, and
  the graph with it: the generator for the pose, joint_controller for its first references (docs/graph.md
  "Start-up").
* ``GraphClock``: the newest /clock of the bound clock source that its ``ClockGuard`` believes, for a stream stage
  with no rclpy time source (IK, computed force): it tells the chunks the loop has passed; a clock back to the
  start (the graph's reset) calls ``on_reset``. It reads /clock best effort (the freshest wins), so a jump ahead
  is what it sees whenever the loop ran a burst of periods before it read: such a jump waits for the next clock
  to confirm it as everywhere, counted in the diagnostics (``clock_jumps_waited``), not as a rejected input.
The node parameter ``sources`` (``trajectory.trust.sources_setting``) names the node whose publisher a topic binds.
"""

from __future__ import annotations

import time
from functools import partial

from ..trajectory.trust import ClockGuard, ClockJump, SourceBinding, sources_setting
from .messages import to_ns
from .qos import qos
from .runtime import guarded

#: messages a stream holds while its publishers are not yet known by name (DDS discovery behind the data; 10 s at 2 kHz)
MAX_HELD = 20_000
#: s (wall) between two looks at the held messages' publishers (Sources.release)
RELEASE_PERIOD = 0.1


def publisher_gid(info) -> bytes:
    """The publisher gid of a message's info (rclpy MessageInfo), b'' when the middleware gives none."""
    gid = info.get("publisher_gid") if isinstance(info, dict) else None
    return bytes(gid["data"]) if gid else b""


class Sources:
    """The bound subscriptions of one node (module docstring)."""

    def __init__(self, node, diag, spec: str = "", guard=None):
        self.node, self.diag = node, diag
        self.trusted = sources_setting(spec)
        self.bindings: dict = {}            # resolved topic name -> SourceBinding
        self.duplicates = 0                 # other nodes of this node's name in the graph, at the last look
        self.rebinds = 0
        self.taken: dict = {}               # resolved topic name -> messages handed on to the node
        self._held: dict = {}               # resolved topic name -> (held messages, release or None)
        # made with the first subscription whose held messages it may release (subscribe): a node without one (a
        # real-time joint_controller with the robot inside: only its loop's polled streams) has no timer waking its
        # executor's thread ten times a second to take the interpreter lock from the loop's
        self.release_timer = None
        diag.before_publish.append(self.refresh)
        if guard is not None:               # ~/rebind_sources, rate-limited as the node's other services
            from std_srvs.srv import Trigger

            self.srv_rebind = guard.service(Trigger, "~/rebind_sources", self.on_rebind)

    def on_rebind(self, request, response):
        """~/rebind_sources (std_srvs/Trigger): every stream of this node binds again at its next message, to the
        node named in ``sources`` or, for a topic not named, to its first publisher from now on; the clocks keep
        their time (a rebound /clock is still guarded against the last believed one)."""
        before = "; ".join(f"{topic}: {b.describe()}" for topic, b in self.bindings.items())
        self.reset()
        self.rebinds += 1
        self.diag.extra["rebinds"] = self.rebinds
        self.node.get_logger().info(f"sources rebound at their next message (bound before: {before or 'none'})")
        response.success = True
        response.message = f"every stream binds again at its next message; bound before: {before or 'none'}"
        return response

    def subscribe(self, msg_type, topic: str, callback, qos_profile, what: str, create=None, with_info: bool = False,
                  release_held: bool = True):
        """A subscription whose ``callback(msg)`` (guarded as ``what``; ``with_info``: ``callback(msg, info)``) gets
        only the bound publisher's messages; ``create``: the factory (default the node's create_subscription; real
        time: PolledSubscriptions.create; a recorder: raw ones). ``release_held``: the node's executor takes the
        subscription's messages, so that the release timer may hand on the held ones (not a real-time loop's
        polled streams, which only that loop's thread takes; their next message hands them on)."""
        handle = guarded(self.diag, what)(callback)
        binding = SourceBinding(topic)
        refused = f"{what} (another publisher)"

        held = []     # (gid, msg, info) of publishers the graph did not know by name yet: taken if theirs binds

        def admit(gid):        # binding.admit: True, False or None (trajectory.trust.SourceBinding)
            return binding.admit(gid, partial(self.publishers, binding.topic), time.monotonic())

        def deliver(gid):
            """The held messages of the bound publisher ``gid``, in their order (discovery lagged behind them)."""
            mine = [h for h in held if h[0] == gid]
            held.clear()
            self.taken[binding.topic] += len(mine)
            for _, m, i in mine:
                handle(m, i) if with_info else handle(m)

        def take(msg, info):       # two arguments: rclpy passes the message info
            gid = publisher_gid(info)
            try:
                admitted = admit(gid)
            except Exception as exc:      # noqa: BLE001 - the node boundary (a graph query as the node shuts down)
                self.diag.reject(what, exc)
                return
            if admitted:
                deliver(gid)
                self.taken[binding.topic] += 1
                handle(msg, info) if with_info else handle(msg)
            elif admitted is None:          # a publisher the graph does not know by name yet: held, bounded
                if len(held) < MAX_HELD:
                    held.append((gid, msg, info))
            else:
                self.diag.reject(refused, binding.refusal(gid))

        def release() -> None:
            """The held messages asked about again (``release_held``): a publisher the graph now knows by name binds
            and its held messages are taken without waiting for its next message, which may never come (a latched
            state published once: the generator's first /platform_pose at sim time 0); a refused one's are dropped."""
            for gid in dict.fromkeys(h[0] for h in held):
                try:
                    admitted = admit(gid)
                except Exception as exc:      # noqa: BLE001 - the node boundary (as in take)
                    self.diag.reject(what, exc)
                    return
                if admitted:
                    deliver(gid)
                    return
                if admitted is False:
                    held[:] = [h for h in held if h[0] != gid]
                    self.diag.reject(refused, binding.refusal(gid))

        sub = (create or self.node.create_subscription)(msg_type, topic, take, qos_profile)
        self.taken[sub.topic_name] = 0
        self._held[sub.topic_name] = (held, release if release_held else None)
        if release_held and self.release_timer is None:
            from rclpy.clock import Clock, ClockType

            self.release_timer = self.node.create_timer(RELEASE_PERIOD, self.release,
                                                        clock=Clock(clock_type=ClockType.STEADY_TIME))
        binding.topic = sub.topic_name
        binding.trusted = self.trusted.get(sub.topic_name, self.trusted.get(topic, ""))
        self.bindings[sub.topic_name] = binding
        return sub

    def release(self) -> None:
        """Every subscription's held messages asked about again (the release timer, every RELEASE_PERIOD s)."""
        for held, release in self._held.values():
            if held and release is not None:
                release()

    def awaiting(self, *topics) -> str | None:
        """What of ``topics`` (resolved names of this node's bound subscriptions) has handed on no message yet, in
        words (the node's start-up wait in its diagnostics): the publisher each waits for, and the messages held
        until the graph knows that publisher's node by name; None when every one has."""
        waits = []
        for topic in topics:
            if self.taken.get(topic, 0):
                continue
            trusted = self.bindings[topic].trusted if topic in self.bindings else ""
            held = len(self._held[topic][0]) if topic in self._held else 0
            waits.append(f"the first {topic} ({trusted or 'its first publisher'})"
                         + (f", {held} held until the graph knows its publisher's node" if held else ""))
        return "; ".join(waits) or None

    def publishers(self, topic: str) -> dict:
        """{gid: node name} of the publishers on ``topic`` now (the graph)."""
        return {bytes(i.endpoint_gid): i.node_name for i in self.node.get_publishers_info_by_topic(topic)}

    def reset(self, *topics) -> None:
        """Rebind ``topics`` (resolved names; all when none is given) at their next message."""
        for topic, binding in self.bindings.items():
            if not topics or topic in topics:
                binding.reset()

    def refresh(self) -> None:
        """The bindings into the diagnostics, and an ERROR while another node of this name is in the graph."""
        for topic, binding in self.bindings.items():
            self.diag.extra[f"source {topic}"] = binding.summary()
        me = (self.node.get_name(), self.node.get_namespace())
        duplicates = sum(1 for n in self.node.get_node_names_and_namespaces() if n == me) - 1
        if duplicates > 0:
            name = self.node.get_fully_qualified_name()
            self.diag.errors["duplicate"] = f"{duplicates + 1} nodes named {name} in the graph"
            if self.duplicates == 0:
                self.node.get_logger().error(self.diag.errors["duplicate"] + ": only one may run (its streams are "
                                             "bound to one publisher; the others' are refused)")
        else:
            self.diag.errors.pop("duplicate", None)
        self.duplicates = max(duplicates, 0)


class GraphClock:
    """The graph's time as a stream stage believes it (module docstring): ``ns`` (None before the first clock)."""

    def __init__(self, sources: Sources, on_reset=None):
        from rosgraph_msgs.msg import Clock

        self.guard = ClockGuard()
        self.on_reset = on_reset
        self.diag = sources.diag
        self.diag.extra["clock_jumps_waited"] = 0
        self.sub = sources.subscribe(Clock, "/clock", self.on_clock, qos("/clock", "sub:stream_stage"), "clock")

    @property
    def ns(self):
        return self.guard.now_ns

    def on_clock(self, msg) -> None:
        try:
            reset = self.guard.admit(to_ns(msg.clock))
        except ClockJump:
            self.diag.extra["clock_jumps_waited"] += 1
            return
        if reset and self.on_reset is not None:
            self.on_reset()

    def passed(self, chunk) -> bool:
        return self.ns is not None and chunk.passed(self.ns)
