"""Which messages a consumer of the graph believes (ROS-free; issue 22 §1, §2).

A ROS domain is open: any process in it may publish well-formed messages on any topic, and a second node of a
graph's name, a replay of its own traffic or a foreign /clock move the robot as surely as the real ones. Two rules,
kept here so that tests reach them without ROS; the nodes only wire them (ros/peers.py):

* ``SourceBinding``: one publisher per stream. A consumer binds each stream it takes to one publisher, named by its
  publisher gid (ROS 2 gives it with every message): the first publisher of a run, or, when the node names the
  one it trusts (parameter ``sources``), that node's. Every other publisher's message is refused, counted per gid
  (with its node's name from the graph). The binding moves only at a reset of the graph (the consumer's reset,
  /hardware/reset) or when the bound publisher has left the graph (a restarted node): then the first publisher
  after it binds (the named node's, if one is named).
* ``ClockGuard``: time moves forward in bounded steps. A time (of /clock, of a measurement's stamp) is believed
  when it moves forward by at most ``max_step_ns`` (MAX_CLOCK_STEP_NS: five clock periods at the real-time clock
  rate of 50 Hz, twenty at lockstep's 200 Hz), or back to within ``max_step_ns`` of zero: that is a reset, which
  the graph's clock source does only in its reset service (/hardware/reset). A jump further forward is refused,
  unless the next time follows it (within ``max_step_ns``): the source did move on while this consumer stalled
  (real time on an overloaded machine); a step back elsewhere is refused. A refused time changes nothing.

A refusal is an InvalidInputError (the nodes count and log it once a second at most per kind, ros/runtime.guarded).
"""

from __future__ import annotations

from ..errors import InvalidInputError, excerpt

#: the largest step of a clock accepted forward at once, and how near zero a step back is a reset (ns)
MAX_CLOCK_STEP_NS = 100_000_000
#: s (monotonic) between two looks at the graph for a refused publisher (has the bound one left?)
RECHECK_S = 1.0
#: refused publishers remembered by gid (each counted); more are counted in ``refused`` only
MAX_REMEMBERED = 64
#: the node name of a publisher the graph does not know by name yet (rmw's placeholder while discovery completes)
UNKNOWN_NODE = ("", "_NODE_NAME_UNKNOWN_")


def sources_setting(text: str) -> dict:
    """{topic: node name} of the ``sources`` parameter (``topic=node`` pairs separated by commas, e.g.
    ``/clock=joint_controller``; a topic not named binds its first publisher of a run); InvalidInputError if
    malformed."""
    out = {}
    for item in filter(None, (part.strip() for part in str(text).split(","))):
        topic, sep, name = (p.strip() for p in item.partition("="))
        if not (sep and topic.startswith("/") and name):
            raise InvalidInputError(f"parameter 'sources': {excerpt(item)!r} is not topic=node (e.g. "
                                    "/clock=joint_controller)")
        out[topic] = name.lstrip("/")
    return out


class ClockJump(InvalidInputError):
    """A time refused for jumping ahead by more than the guard's step (accepted if the next time follows it)."""


def gid_text(gid: bytes) -> str:
    """A publisher gid as diagnostics show it (hex, as `ros2 topic info -v` prints its bytes)."""
    return bytes(gid).hex(".") if gid else "?"


class SourceBinding:
    """The one publisher a consumer believes on one topic (module docstring).

    ``trusted``: the node name whose publisher binds ('' = the first publisher of a run). ``admit(gid, publishers,
    now)`` tells whether a message from the publisher ``gid`` is believed: True, False (refused), or None when the
    binding waits for a node named in ``trusted`` and the graph does not know this publisher's node yet (discovery
    is not complete: the message is dropped, counted in ``unidentified``, not refused); ``publishers()`` is the
    graph's {gid: node name} of the topic, asked only when needed (a named node, a publisher not bound), ``now`` a
    monotonic time in s. Refusals are counted in ``refused`` and per gid in ``refused_by`` (gid -> [node name,
    count])."""

    def __init__(self, topic: str, trusted: str = "", recheck_s: float = RECHECK_S):
        self.topic = topic
        self.trusted = trusted.lstrip("/")
        self.recheck_s = float(recheck_s)
        self.bound = None               # gid (bytes) of the publisher believed
        self.bound_name = ""
        self.refused = 0
        self.unidentified = 0            # messages dropped while the graph did not know their node's name yet
        self.refused_by: dict = {}       # gid -> [node name, refusals]
        self._checked: dict = {}         # gid -> when the graph was last asked about it (s)

    def admit(self, gid: bytes, publishers, now: float) -> bool | None:
        gid = bytes(gid)
        if gid == self.bound:
            return True
        last = self._checked.get(gid)
        if self.bound is not None and last is not None and now - last < self.recheck_s:
            return self._refuse(gid, None)
        if self.bound is None and not self.trusted:         # the first publisher of a run
            return self._bind(gid, "")
        graph = publishers()
        name = graph.get(gid, "")
        free = self.bound is None or self.bound not in graph
        if free and (not self.trusted or name == self.trusted):
            return self._bind(gid, name)
        if free and name in UNKNOWN_NODE:      # perhaps the named node, not known by name yet: ask again next time
            self.unidentified += 1
            return None
        self._checked[gid] = now
        self.bound_name = self.bound_name or graph.get(self.bound, "")
        return self._refuse(gid, name)

    def _bind(self, gid, name) -> bool:
        self.bound, self.bound_name = gid, name
        self._checked.pop(gid, None)
        return True

    def _refuse(self, gid, name) -> bool:
        self.refused += 1
        entry = self.refused_by.get(gid)
        if entry is None and len(self.refused_by) < MAX_REMEMBERED:
            entry = self.refused_by[gid] = [name or "", 0]
        if entry is not None:
            entry[1] += 1
            if name:
                entry[0] = name
        return False

    def reset(self) -> None:
        """A reset of the graph: the next publisher binds (the named node's, if one is named)."""
        self.bound, self.bound_name = None, ""
        self._checked.clear()

    def refusal(self, gid: bytes) -> InvalidInputError:
        """The error that reports a refused message of ``gid`` (raised by the node's guarded callback)."""
        name = (self.refused_by.get(bytes(gid)) or ["", 0])[0]
        return InvalidInputError(f"{self.topic} from publisher {gid_text(gid)}{f' ({name})' if name else ''} "
                                 f"refused: bound to {self.describe()}")

    def describe(self) -> str:
        if self.bound is None:
            return f"nothing yet (binds {self.trusted or 'the first publisher'})"
        return gid_text(self.bound) + (f" ({self.bound_name})" if self.bound_name else "")

    def summary(self) -> str:
        """For the diagnostics: the bound publisher and the refused ones with their counts."""
        refused = ", ".join(f"{gid_text(g)}{f' ({n})' if n else ''}: {c}" for g, (n, c) in self.refused_by.items())
        return f"{self.describe()}; refused {self.refused}" + (f" [{refused}]" if refused else "") + \
            (f"; dropped {self.unidentified} of publishers not yet known by name" if self.unidentified else "")


class ClockGuard:
    """The time a consumer believes (module docstring): ``admit(t_ns)`` returns True for a reset (back to the start),
    False for a step forward (or none), and raises InvalidInputError for a time it refuses (nothing changes).
    ``reset_window_ns``: how near zero a step back is a reset (default max_step_ns, for a reader that may miss the
    reset's own message; 0 where the source's reset message cannot be lost: it restarts at exactly 0)."""

    def __init__(self, max_step_ns: int = MAX_CLOCK_STEP_NS, what: str = "clock", reset_window_ns: int | None = None):
        if not max_step_ns > 0:
            raise InvalidInputError(f"max_step_ns = {max_step_ns} must be > 0")
        self.max_step_ns = int(max_step_ns)
        self.reset_window_ns = self.max_step_ns if reset_window_ns is None else int(reset_window_ns)
        self.what = what
        self.now_ns = None
        self._jump = None                # a refused forward jump (ns): accepted if the next time follows it

    def admit(self, t_ns: int) -> bool:
        t = int(t_ns)
        if t < 0:
            raise InvalidInputError(f"{self.what} {t * 1e-9:.9g} s is negative")
        now = self.now_ns
        if now is None:
            self.now_ns = t
            return False
        if t < now:
            if t > self.reset_window_ns:
                raise InvalidInputError(f"{self.what} went back from {now * 1e-9:.6f} s to {t * 1e-9:.6f} s (only a "
                                        f"reset, back to within {self.reset_window_ns * 1e-9:g} s of 0, is accepted)")
            self.now_ns, self._jump = t, None
            return True
        if t - now > self.max_step_ns:
            confirmed = self._jump is not None and 0 <= t - self._jump <= self.max_step_ns
            self._jump = t
            if not confirmed:
                raise ClockJump(f"{self.what} jumped ahead by {(t - now) * 1e-9:.6g} s (limit "
                                        f"{self.max_step_ns * 1e-9:g} s; accepted if the next time follows it)")
        self.now_ns, self._jump = t, None
        return False

    def reset(self) -> None:
        """Forget the time (the owner starts over): the next one is believed as it comes."""
        self.now_ns = self._jump = None
