"""Shared fixtures and markers of the test suite.

Markers (``make test-fast`` leaves out ros, slow and packaging; ``make test`` runs everything):
  ros        starts rclpy nodes or node processes
  slow       takes more than ~20 s on a loaded 2-core machine
  packaging  builds the package with colcon in temporary workspaces
"""

import pytest

from pkm_control.dynamics import robot_dynamics


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
