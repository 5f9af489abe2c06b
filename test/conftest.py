"""Shared fixtures and markers of the test suite.

Markers (``make test-fast`` leaves out ros, slow and packaging; ``make test`` runs everything):
  ros        starts rclpy nodes or node processes
  slow       takes more than ~20 s on a loaded 2-core machine
  packaging  builds the package with colcon in temporary workspaces

The ROS domain of a run (PKM_TEST_ROS_DOMAIN_ID, which the test modules that start nodes read): two test runs in one
domain hear each other's graphs. A node of one run then rejects, and counts, the other's messages (measured:
test_conformance's ros2_control tests running beside test_nodes' delta graph, whose inverse_kinematics rejected the
palida hardware node's /joint_states, "unknown joint names"; its rejected-input check failed), so each run takes a
domain no other run on this machine holds: the one asked for if it is free, else the first free one of TEST_DOMAINS,
held by an exclusive lock (fcntl.flock on a file in the temporary directory, released when the run ends however it
ends). Named in the report header. Nodes started outside pytest (``pkm bringup``) hold no lock: give them a domain
of their own.
"""

import os

import pytest
from hypothesis import settings

from pkm_control.dynamics import robot_dynamics
from pkm_control.fuzz import FUZZ_BUDGET
from pkm_control.ros.dds import PROFILE_VARIABLE, use_dds_profile
from pkm_control.ros.topology import hold_domain

# generated-input tests: a budget for `make test`, the one of `make fuzz` with PKM_FUZZ=1 (test_fuzz then runs each
# campaign as `make fuzz` does); no deadline, a loaded CI machine must not turn a slow example into a failure
settings.register_profile("suite", max_examples=60, deadline=None)
settings.register_profile("fuzz", max_examples=FUZZ_BUDGET, deadline=None)
settings.load_profile("fuzz" if os.environ.get("PKM_FUZZ") else "suite")


#: domains a run takes when the one asked for is held by another run (or none is asked for): test_tools' empty domain
#: (its DOMAIN + 50) stays below 233, and the fixed domains of test_launch (142-145) and test_security (146) are
#: outside
TEST_DOMAINS = range(160, 183)
_domain_lock = None          # the open lock file of this run's domain, held until the run ends


def _hold_domain(domain: int) -> bool:
    """Take the run lock of ``domain`` (ros.topology.hold_domain); False when another run holds it."""
    global _domain_lock
    lock = hold_domain(domain)
    if lock is None:
        return False
    _domain_lock = lock
    return True


def _run_domain() -> tuple[int, str]:
    """This run's ROS domain and why (module docstring)."""
    asked = os.environ.get("PKM_TEST_ROS_DOMAIN_ID")
    if asked is not None and not (asked.isdigit() and int(asked) <= 232):
        raise pytest.UsageError(f"PKM_TEST_ROS_DOMAIN_ID={asked!r} is not a ROS domain id (0 to 232)")
    if asked is not None and _hold_domain(int(asked)):
        return int(asked), "PKM_TEST_ROS_DOMAIN_ID"
    for domain in TEST_DOMAINS:
        if _hold_domain(domain):
            why = "the first free one" if asked is None else f"PKM_TEST_ROS_DOMAIN_ID={asked} is held by another run"
            return domain, why
    raise pytest.UsageError(f"every ROS domain of {TEST_DOMAINS} is held by another test run: set "
                            "PKM_TEST_ROS_DOMAIN_ID to a free one")


RUN_DOMAIN, RUN_DOMAIN_WHY = _run_domain()
os.environ["PKM_TEST_ROS_DOMAIN_ID"] = str(RUN_DOMAIN)
# the test's own participants and the node processes it starts run with the project's Fast DDS profile, as `pkm`'s
# (ros.dds), unless the user chose one
use_dds_profile(os.environ)


def pytest_report_header(config):
    profile = os.environ.get(PROFILE_VARIABLE) or "none (Fast DDS's defaults)"
    return f"ROS domain of this run: {RUN_DOMAIN} ({RUN_DOMAIN_WHY}); Fast DDS profile: {profile}"


def pytest_unconfigure(config):
    if _domain_lock is not None:       # the run is over: its domain is free again
        _domain_lock.close()


def pytest_configure(config):
    for name, text in (("ros", "starts rclpy nodes or node processes"),
                       ("slow", "takes more than ~20 s on a loaded 2-core machine"),
                       ("packaging", "builds the package with colcon in temporary workspaces")):
        config.addinivalue_line("markers", f"{name}: {text}")


@pytest.fixture(scope="module")
def palida():
    """The PaLiDA closed-loop dynamics (generic engine), shared by a module's tests."""
    return robot_dynamics("palida")


def home(dyn):
    """The robot's home pose (config ``home``)."""
    return dyn.kin.task.pose(dyn.model.config["home"])
