"""pkm_control's own hardware kinds of the ROS-free side (plugin.py; registered in setup.py, entry-point group
``pkm_control.hardware``): the robots joint_controller hosts in its own process. The robots behind topics (topics,
ros2_control) are in ros/hardware_io.py. Each module a kind needs beyond the simulated robot (mujoco, canopen) is
imported when the kind builds its robot, not when it is listed.
"""

from __future__ import annotations

import contextlib

from ..control.settings import PLANT_KEYS
from ..errors import InvalidInputError
from .plugin import HardwareHost, HardwarePlugin
from .simulated import describe_plant, simulated_robot


def _simulated_robot(host: HardwareHost):
    plant = simulated_robot(host.dyn, host.settings)
    describe_plant(plant, host.log, host.diagnostics)
    return plant


class Sim(HardwarePlugin):
    """``sim``: the simulated robot (SimulatedRobot) inside joint_controller, stepped with the loop; joint_controller
    is then the clock source (/clock) and publishes the robot's ground truth."""

    simulated = True

    def in_process(self, settings: dict) -> bool:
        return True

    def create(self, host: HardwareHost):
        return _simulated_robot(host)


class Mujoco(HardwarePlugin):
    """``mujoco``: MuJoCo as the robot (MujocoRobot, its model generated from the robot's description) inside
    joint_controller, as sim; MuJoCo steps mujoco_timestep at a time (an environment in MuJoCo's contact model). The
    simulated robot's own parameters and measurement (PLANT_KEYS) are not MuJoCo's: refused."""

    def in_process(self, settings: dict) -> bool:
        return True

    def create(self, host: HardwareHost):
        from .mujoco_robot import mujoco_robot

        s = host.settings
        changed = [k for k in PLANT_KEYS if s.get(k)]
        if changed:
            raise InvalidInputError(f"{', '.join(changed)}: settings of the simulated robot (hardware sim, topics, "
                                    "canopen with emulated drives), not of MuJoCo's")
        return mujoco_robot(host.dyn, s)


class Canopen(HardwarePlugin):
    """``canopen``: CiA 402 drives on a CAN bus (CanopenDrives; canopen_config, '' = config/canopen/<robot>.yaml), the
    master inside joint_controller: real time only (the bus has its own clock), enabled at the loop's first period.
    ``canopen_emulate`` (``--stand-in``): emulated drives around the simulated robot on python-can's virtual bus in
    the same process (EmulatedCanopenRobot), stepped as sim. Supervision, ~/recover and a status per drive are the
    interfaces' own (canopen_supervision.py)."""

    stand_in = {"joint_controller": {"canopen_emulate": True}}

    def in_process(self, settings: dict) -> bool:
        return settings.get("canopen_emulate") is True

    def create(self, host: HardwareHost):
        from ..control.safety import ForceLimits
        from .canopen_drives import CanopenConfig, CanopenDrives

        s, ctx = host.settings, host.ctx
        if self.in_process(s):
            from .canopen_emulator import EmulatedCanopenRobot

            config = CanopenConfig.for_robot(ctx.robot, ctx.actuated_joints, s["canopen_config"])
            return EmulatedCanopenRobot(host.dyn, config, _simulated_robot(host), f"pkm_emulated_{ctx.robot}")
        if s["lockstep"]:
            raise InvalidInputError("hardware: canopen on a real bus runs in real time (lockstep: false, pkm bringup "
                                    "--realtime): the bus has its own clock; canopen_emulate (--stand-in) runs "
                                    "lockstep")
        config = CanopenConfig.for_robot(ctx.robot, ctx.actuated_joints, s["canopen_config"])
        drives = CanopenDrives(config, 1.0 / s["control_rate"], ForceLimits(s["force_limit"]), kin=host.dyn.kin)
        try:       # enabled at the loop's first period (CanopenDrives.enable): SYNC from then on, every period
            drives.start(host.now(), enable=False)
        except BaseException:
            with contextlib.suppress(Exception):       # the bus released; the start-up's error is the one to tell
                drives.close()
            raise
        host.diagnostics["bus_load"] = drives.bus_load.summary()
        host.log("info", drives.bus_load.summary())
        host.log("info", f"CANopen drives configured on {config.interface}:{config.channel}: "
                         f"{', '.join(f'{d.joint} (node {d.node_id})' for d in config.drives)}")
        return drives
