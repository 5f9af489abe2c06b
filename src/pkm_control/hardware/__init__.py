"""Robots behind one contract (ROS-free): read the actuated joints, write actuator commands.

interface.py  the contract (HardwareInterface, JointMeasurement; Simulated and RobotState for simulators)
simulated.py  the simulated closed-loop plant (SimulatedRobot) and what every simulated plant shares (SimulatedPlant)
contact.py    the compliant environment the tool touches (planes, boxes) and the 6-axis force/torque sensor
mujoco_robot.py  MuJoCo as the plant (MujocoRobot; imported on its own: it loads mujoco)
canopen_drives.py  CiA 402 drives on a CAN bus (CanopenDrives; imported on its own: it loads canopen)
canopen_emulator.py  emulated CiA 402 drives on python-can's virtual bus around a SimulatedRobot
"""

from .interface import COMMAND_INTERFACES, HardwareInterface, JointMeasurement, RobotState, Simulated
from .simulated import DEFAULT_SIGN_EPS, SimulatedRobot, simulated_robot

__all__ = ["COMMAND_INTERFACES", "DEFAULT_SIGN_EPS", "HardwareInterface", "JointMeasurement", "RobotState",
           "Simulated", "SimulatedRobot", "simulated_robot"]
