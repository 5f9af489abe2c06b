"""Shared fixtures and markers of the test suite.

Markers (``make test-fast`` leaves out ros, slow and packaging; ``make test`` runs everything):
  ros        starts rclpy nodes or node processes
  slow       takes more than ~20 s on a loaded 2-core machine
  packaging  builds the package with colcon in temporary workspaces
"""

import os

import pytest
from hypothesis import settings

from pkm_control.dynamics import robot_dynamics
from pkm_control.fuzz import FUZZ_BUDGET

# generated-input tests: a budget for `make test`, the one of `make fuzz` with PKM_FUZZ=1 (test_fuzz then runs each
# campaign as `make fuzz` does); no deadline, a loaded CI machine must not turn a slow example into a failure
settings.register_profile("suite", max_examples=60, deadline=None)
settings.register_profile("fuzz", max_examples=FUZZ_BUDGET, deadline=None)
settings.load_profile("fuzz" if os.environ.get("PKM_FUZZ") else "suite")


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
