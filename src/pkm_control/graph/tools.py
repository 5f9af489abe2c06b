"""The ros2cli tasks for pip-only installs: `pkm topics`, `pkm echo`, `pkm param`, `pkm call`, `pkm goal`.

A user of a full ROS 2 installation keeps using ros2cli (``ros2 topic echo``, ``ros2 param set``, ...); these
thin commands are for everyone else (ros2cli is not on PyPI). Each one opens a ROS context of its own on the
domain of `pkm demo` (``pkm_control.ros.topology.domain_id``: --domain-id, else ROS_DOMAIN_ID, else ROS's default 0,
where `pkm bringup` runs without ROS_DOMAIN_ID), with one node, and waits on graph events (a publisher appears,
a service becomes ready, a response arrives) up to its --timeout.

Failures: ``ToolFailure`` (exit status 1) when the graph does not answer as asked (no such topic, node or
service within the timeout, a refused parameter, a rejected goal, a Trigger that reports failure);
``InvalidInputError`` (exit status 2) for malformed input (a name that is not a ROS name, a value that is no
parameter type, a goal that is not a trajectory spec).
"""

from __future__ import annotations

import importlib
import json
import math
import os
import re
import time

import yaml

from ..errors import InvalidInputError, excerpt
from ..trajectory.streaming import parse_goal
from ..ros.qos import qos

#: the longest VALUE of `pkm param set` (characters): a ROS parameter here is a number, a name, a path or a flat array
MAX_VALUE_CHARS = 10_000
#: s without a change of the graph after which `pkm topics` takes it as discovered
SETTLE = 0.5
#: the trajectory generator whose goal topic `pkm goal` writes (launch file and `pkm bringup`)
GENERATOR = "/trajectory_generator"
TRIGGER = "std_srvs/srv/Trigger"


class ToolFailure(Exception):
    """The graph did not answer as asked (module docstring): exit status 1."""


class Session:
    """A ROS context of its own on one domain, with one node and an executor; ``close()`` ends it."""

    def __init__(self, domain: int, name: str):
        import rclpy
        from rclpy.context import Context
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.signals import SignalHandlerOptions

        self.domain = domain
        self.context = Context()
        # no rclpy signal handler: Ctrl-C is Python's KeyboardInterrupt, which the command turns into its exit
        rclpy.init(context=self.context, domain_id=domain, signal_handler_options=SignalHandlerOptions.NO)
        self.node = rclpy.create_node(f"pkm_{name}_{os.getpid()}", context=self.context, enable_rosout=False,
                                      start_parameter_services=False)
        self.executor = SingleThreadedExecutor(context=self.context)
        self.executor.add_node(self.node)

    def wait(self, condition, timeout: float) -> bool:
        """Spin until condition() holds (True) or ``timeout`` s (wall) have passed (False)."""
        deadline = time.monotonic() + timeout
        while not condition():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.executor.spin_once(timeout_sec=min(left, 0.05))
        return True

    def where(self) -> str:
        return f"ROS domain {self.domain}"

    def others(self):
        """Fully qualified names of the other nodes seen on the domain."""
        me = self.node.get_fully_qualified_name()
        names = (ns.rstrip("/") + "/" + n for n, ns in self.node.get_node_names_and_namespaces())
        return sorted(n for n in names if n != me)

    def close(self):
        self.executor.shutdown()
        self.node.destroy_node()
        self.context.try_shutdown()


def ros_name(kind: str, text: str) -> str:
    """A topic, service or node name as typed -> its fully qualified form (a relative name is under '/');
    InvalidInputError when it is not a valid ROS name."""
    from rclpy.exceptions import InvalidTopicNameException
    from rclpy.validate_full_topic_name import validate_full_topic_name

    name = text if text.startswith("/") else "/" + text
    try:
        validate_full_topic_name(name)
    except InvalidTopicNameException as exc:
        reason = str(exc).splitlines()[0]
        raise InvalidInputError(f"{kind} '{excerpt(text)}' is not a valid ROS name ({excerpt(reason, 120)})") \
            from None
    return name


def message_class(type_name: str):
    """'pkg/msg/Type' (or srv) -> the Python class; ToolFailure when its package is not installed here."""
    parts = type_name.split("/")
    if len(parts) != 3:
        raise ToolFailure(f"type '{type_name}' is not of the form package/msg/Type")
    pkg, kind, name = parts
    try:
        return getattr(importlib.import_module(f"{pkg}.{kind}"), name)
    except (ImportError, AttributeError):
        raise ToolFailure(f"type {type_name} is not installed here (its Python package '{pkg}'; from PyPI: "
                          f"ros-{pkg.replace('_', '-')}, where it exists)") from None


def plain(value):
    """A message (or a field of one) as plain Python: dicts in field order, lists, numbers, strings."""
    if hasattr(value, "get_fields_and_field_types"):
        return {name: plain(getattr(value, name)) for name in value.get_fields_and_field_types()}
    if isinstance(value, (bytes, bytearray)):
        return list(value)
    if hasattr(value, "tolist"):                # numpy arrays (fixed-size fields), array.array (sequences)
        value = value.tolist()
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def message_text(msg, as_json: bool = False) -> str:
    """One message as YAML (a document ending in '---', as ros2 topic echo prints it) or one line of JSON."""
    data = plain(msg)
    if as_json:
        return json.dumps(data)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False, width=120, allow_unicode=True) + "---"


# ----------------------------------------------------------------------------- topics

def topics(session: Session, settle: float = SETTLE, timeout: float = 5.0) -> list[dict]:
    """The topics of the other nodes: [{name, types, publishers, subscribers}], sorted by name.

    Waits for another node to appear (ToolFailure after ``timeout`` s), then until the graph has not changed for
    ``settle`` s (its endpoints are discovered after the node)."""
    from rclpy.topic_or_service_is_hidden import topic_or_service_is_hidden

    if not session.wait(lambda: session.others(), timeout):
        raise ToolFailure(f"no ROS node in {session.where()} within {timeout:g} s (is the graph running, with the "
                          "same ROS_DOMAIN_ID?)")
    node, me = session.node, session.node.get_name()
    seen = [None, time.monotonic()]

    def settled():
        now = node.get_topic_names_and_types(), session.others()
        if now != seen[0]:
            seen[:] = [now, time.monotonic()]
        return time.monotonic() - seen[1] >= settle

    session.wait(settled, timeout + settle)
    rows = []
    for name, types in node.get_topic_names_and_types():
        if topic_or_service_is_hidden(name):
            continue
        pubs = [i for i in node.get_publishers_info_by_topic(name) if i.node_name != me]
        subs = [i for i in node.get_subscriptions_info_by_topic(name) if i.node_name != me]
        if pubs or subs:
            rows.append({"name": name, "types": list(types), "publishers": len(pubs), "subscribers": len(subs)})
    return sorted(rows, key=lambda r: r["name"])


def format_topics(rows, verbose: bool) -> str:
    if not verbose:
        return "\n".join(f"{r['name']} [{', '.join(r['types'])}]" for r in rows)
    width = max(len(r["name"]) for r in rows)
    return "\n".join(f"{r['name']:{width}s}  {r['publishers']:3d} pub  {r['subscribers']:3d} sub  "
                     f"[{', '.join(r['types'])}]" for r in rows)


# ----------------------------------------------------------------------------- echo

def reader_qos(infos, depth: int = 100):
    """The QoS that receives what every publisher sends: reliable and transient local (a latched topic's last
    messages) only when all of them are; keep last ``depth``."""
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

    reliable = all(i.qos_profile.reliability == ReliabilityPolicy.RELIABLE for i in infos)
    latched = all(i.qos_profile.durability == DurabilityPolicy.TRANSIENT_LOCAL for i in infos)
    return QoSProfile(depth=depth,
                      reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
                      durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE)


def tf_hint(topic: str) -> str:
    """Why /tf may be missing: tf2_msgs is not on PyPI, and inverse_kinematics publishes /tf only where it is
    installed (`make tf2-msgs` builds it into the venv)."""
    if topic not in ("/tf", "/tf_static"):
        return ""
    try:
        import tf2_msgs.msg  # noqa: F401
    except ImportError:
        return "; tf2_msgs is not installed here, so no node publishes /tf: run `make tf2-msgs`, then start the graph"
    return ""


def echo(session: Session, topic: str, count: int | None, timeout: float, emit) -> int:
    """Print the messages of ``topic`` (emit(msg) per message) until ``count`` were printed (None: until
    interrupted). Its type comes from the graph; ToolFailure when no publisher appears within ``timeout`` s,
    or (with a count) when the first message does not come within ``timeout`` s after that. One message (--once)
    is the newest: the reader keeps the last one only, so that of a latched topic's history (a goal's accepted,
    started, finished) it gets the last, not the oldest."""
    name = ros_name("topic", topic)
    node = session.node
    if not session.wait(lambda: node.get_publishers_info_by_topic(name), timeout):
        known = [n for n, _ in node.get_topic_names_and_types()]
        hint = "exists but has no publisher" if name in known else "does not exist"
        raise ToolFailure(f"topic {name} {hint} in {session.where()} (waited {timeout:g} s; `pkm topics` lists "
                          f"the topics){tf_hint(name)}")
    types = sorted({i.topic_type for i in node.get_publishers_info_by_topic(name)})
    if len(types) != 1:
        raise ToolFailure(f"topic {name} is published with {len(types)} types ({', '.join(types)}); pkm echo "
                          "takes one")
    cls = message_class(types[0])
    received = [0]

    def on_message(msg):
        if count is None or received[0] < count:
            received[0] += 1
            emit(msg)

    node.create_subscription(cls, name, on_message,
                             reader_qos(node.get_publishers_info_by_topic(name), 1 if count == 1 else 100))
    if count is None:
        session.wait(lambda: False, math.inf)
    if not session.wait(lambda: received[0] >= 1, timeout):
        raise ToolFailure(f"no message on {name} ({types[0]}) within {timeout:g} s")
    session.wait(lambda: received[0] >= count, math.inf)
    return received[0]


# ----------------------------------------------------------------------------- services

def _call(session: Session, srv_type, service: str, request, timeout: float):
    """The response of one service call; ToolFailure when the service is not ready or does not answer."""
    client = session.node.create_client(srv_type, service)
    try:
        if not session.wait(client.service_is_ready, timeout):
            raise ToolFailure(f"service {service} is not available in {session.where()} (waited {timeout:g} s)")
        future = client.call_async(request)
        if not session.wait(future.done, timeout):
            raise ToolFailure(f"no response from {service} within {timeout:g} s")
        return future.result()
    finally:
        session.node.destroy_client(client)


def _node_services(session: Session, node: str, timeout: float):
    """Wait for the parameter services of ``node``; ToolFailure naming the nodes seen when it does not appear."""
    name = ros_name("node", node)
    wanted = f"{name}/get_parameters"
    if not session.wait(lambda: any(s == wanted for s, _ in session.node.get_service_names_and_types()), timeout):
        others = session.others()
        raise ToolFailure(f"node {name} not found in {session.where()} (waited {timeout:g} s; nodes: "
                          f"{', '.join(others) if others else 'none'})")
    return name


def trigger(session: Session, service: str, timeout: float):
    """Call a std_srvs/Trigger service: (success, message). InvalidInputError when the service is of another
    type, ToolFailure when it is not there."""
    from std_srvs.srv import Trigger

    name = ros_name("service", service)

    def types():
        return dict(session.node.get_service_names_and_types()).get(name)

    if not session.wait(types, timeout):
        raise ToolFailure(f"service {name} not found in {session.where()} (waited {timeout:g} s)")
    if TRIGGER not in types():
        raise InvalidInputError(f"service {name} is a {', '.join(types())} service; pkm call calls {TRIGGER} "
                                "services only")
    response = _call(session, Trigger, name, Trigger.Request(), timeout)
    return bool(response.success), str(response.message)


# ----------------------------------------------------------------------------- parameters

class _ValueLoader(yaml.SafeLoader):
    """YAML as ros2 param set reads VALUE (safe_load), plus a float with an exponent and no dot (3e5), a string
    for YAML 1.1; quoted ('3e5') it stays a string."""


_ValueLoader.add_implicit_resolver("tag:yaml.org,2002:float",
                                   re.compile(r"^[-+]?[0-9][0-9_]*(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
                                   list("-+0123456789"))


def parameter_value(text: str):
    """VALUE of `pkm param set` as typed -> a Python value of a ROS parameter type, inferred as ros2 param set
    does (YAML: true -> bool, 3 -> integer, 3.0 or 3e5 -> double, [1.0, 2.0] -> double array, anything else a string),
    except that a list mixing integers and doubles is a double array (a ROS array has one type). InvalidInputError
    for what no ROS parameter holds: a non-finite number, an integer beyond 64 bits, a mapping, a nested or
    mixed list."""
    if len(text) > MAX_VALUE_CHARS:
        raise InvalidInputError(f"VALUE has {len(text)} characters (limit {MAX_VALUE_CHARS})")
    try:
        value = yaml.load(text, _ValueLoader)
    except (yaml.YAMLError, RecursionError):
        value = text                           # not YAML: the text is the string
    if value is None:
        value = text                           # '' or 'null' as typed
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and any(isinstance(v, float) for v in items) and \
            all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in items):
        value = items = [float(v) for v in items]
    kinds = {type(v) for v in items}
    if not kinds <= {bool, int, float, str} or len(kinds) > 1:
        raise InvalidInputError(f"VALUE {excerpt(text)!r} is no ROS parameter value (a bool, integer, double, "
                                "string, or a flat list of one of these)")
    for v in items:
        if isinstance(v, float) and not math.isfinite(v):
            raise InvalidInputError(f"VALUE {excerpt(text)!r} is not finite")
        if isinstance(v, int) and not isinstance(v, bool) and not -2**63 <= v < 2**63:
            raise InvalidInputError(f"VALUE {excerpt(text)!r} is beyond a 64-bit integer")
    return value


def _parameter(session: Session, full: str, name: str, timeout: float):
    """The ParameterValue of parameter ``name`` of node ``full`` (its services ready), None when it is not set."""
    from rcl_interfaces.msg import ParameterType
    from rcl_interfaces.srv import GetParameters

    response = _call(session, GetParameters, f"{full}/get_parameters", GetParameters.Request(names=[name]), timeout)
    if not response.values or response.values[0].type == ParameterType.PARAMETER_NOT_SET:
        return None
    return response.values[0]


def _python(value):
    """A ParameterValue as plain Python: a list for an array."""
    from rclpy.parameter import parameter_value_to_python

    out = parameter_value_to_python(value)
    return out.tolist() if hasattr(out, "tolist") else list(out) if isinstance(out, (tuple, list)) else out


def param_get(session: Session, node: str, name: str, timeout: float):
    """(value, type name) of a node's parameter; ToolFailure when the node or the parameter does not exist."""
    from rclpy.parameter import Parameter

    full = _node_services(session, node, timeout)
    value = _parameter(session, full, name, timeout)
    if value is None:
        raise ToolFailure(f"node {full} has no parameter '{excerpt(name)}'")
    return _python(value), Parameter.Type(value.type).name.lower()


def fitted(value, current):
    """VALUE as sent to a parameter whose value is ``current`` (plain Python, None when not set): a scalar set on
    a non-empty array parameter becomes an array of its length with that value everywhere (a number on a double
    array a double), as a node that takes either applies it; anything else is sent as it is (the node decides)."""
    if not isinstance(current, list) or not current or isinstance(value, list):
        return value
    if isinstance(current[0], float) and isinstance(value, int) and not isinstance(value, bool):
        value = float(value)
    return [value] * len(current)


def param_set(session: Session, node: str, name: str, text: str, timeout: float):
    """Set a node's parameter from VALUE as typed (``parameter_value``, ``fitted`` to the parameter's current
    value); returns the value sent. ToolFailure with the node's reason when it refuses the value."""
    from rcl_interfaces.srv import SetParameters
    from rclpy.parameter import Parameter

    value = parameter_value(text)
    full = _node_services(session, node, timeout)
    current = _parameter(session, full, name, timeout)
    value = fitted(value, None if current is None else _python(current))
    request = SetParameters.Request(parameters=[Parameter(name, value=value).to_parameter_msg()])
    response = _call(session, SetParameters, f"{full}/set_parameters", request, timeout)
    result = response.results[0]
    if not result.successful:
        raise ToolFailure(f"node {full} refused {name} = {excerpt(text, 200)}: {result.reason or 'no reason given'}")
    return value


def format_value(value) -> str:
    """A parameter value as `pkm param set` reads it back: a string as it is, anything else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


# ----------------------------------------------------------------------------- goals

def send_goal(session: Session, spec: str, generator: str, timeout: float) -> dict:
    """Send a trajectory spec to the trajectory generator's goal topic and wait for its answer on the status
    topic: the event dict (state 'accepted' or 'rejected', with duration and approach or the reason).

    The spec is parsed here first with the generator's own parser (``parse_goal``: a malformed one is
    InvalidInputError, exit 2); whether the robot can follow it is the generator's decision. The status topic is
    latched, so the answer is the first accepted/rejected event whose source timestamp (the publisher's wall
    clock) is not before the goal was sent: one that the live delivery missed still arrives with the history,
    and the events of earlier goals are told apart. Across machines their clocks must agree (NTP)."""
    from std_msgs.msg import String

    try:
        parse_goal(spec)
    except InvalidInputError as exc:        # the YAML parser's message spans lines: one line here
        raise InvalidInputError(" ".join(str(exc).split())) from None
    name = ros_name("node", generator)
    node = session.node
    pub = node.create_publisher(String, f"{name}/goal", qos("/trajectory_generator/goal", "pub"))
    sent = [None]
    answers = []

    def on_status(msg, info):
        try:
            event = json.loads(msg.data)
        except ValueError:
            return
        if sent[0] is not None and info["source_timestamp"] >= sent[0] and \
                event.get("state") in ("accepted", "rejected"):
            answers.append(event)

    sub = node.create_subscription(String, f"{name}/status", on_status, qos("/trajectory_generator/status", "sub"))
    if not session.wait(lambda: pub.get_subscription_count() > 0 and sub.get_publisher_count() > 0, timeout):
        raise ToolFailure(f"no trajectory generator in {session.where()}: nothing subscribes {name}/goal and "
                          f"publishes {name}/status (waited {timeout:g} s)")
    # the generator's reader matches this writer on its own schedule, and a volatile reader that matches after a
    # sample drops it: give its side the settle time of `pkm topics` before sending
    matched = time.monotonic()
    session.wait(lambda: time.monotonic() - matched >= SETTLE, SETTLE)
    sent[0] = time.time_ns()
    pub.publish(String(data=spec))
    if not session.wait(lambda: answers, timeout):
        raise ToolFailure(f"the goal was sent, but {name} did not answer on {name}/status within {timeout:g} s")
    return answers[0]


def format_answer(event: dict) -> str:
    if event["state"] == "rejected":
        return f"goal rejected: {event.get('reason', '')}"
    approach = event.get("approach") or 0.0
    return f"goal accepted: {event.get('duration', 0.0):.4g} s" + \
        (f" (after an approach move of {approach:.4g} s)" if approach else "")
