"""Robots behind one interface (ROS-free): the simulated closed-loop plant first."""

from .interface import HardwareInterface, RobotState
from .simulated import DEFAULT_SIGN_EPS, SimulatedRobot

__all__ = ["DEFAULT_SIGN_EPS", "HardwareInterface", "RobotState", "SimulatedRobot"]
