"""One conformance suite of the hardware contract (hardware/interface.py), the same tests for every interface:
``sim`` (SimulatedRobot), ``mujoco`` (MujocoRobot), ``ros2_control`` (TopicHardware in front of our ``hardware`` node
standing in for a controller manager, in this process) and ``canopen`` (CanopenDrives on python-can's virtual bus
against emulated CiA 402 drives; ``canopen_emulated``: the same as one simulated robot, EmulatedCanopenRobot, as
joint_controller hosts it with ``canopen_emulate``).

Each interface is driven through a small adapter: ``command(tau)`` writes and lets one period pass (a plant's
``step``; the stand-in's lockstep step on the command; the SYNC the drives answer), ``idle(n)`` lets n periods pass
with no command (a plant's step; the stand-in stepping on its lockstep timeout; the drives' clock without SYNC),
``robot`` is the simulated robot at the far end (where clipping and the safe behaviour are observable for an
interface that only carries commands). No wall-clock timing: every wait is on an event or a message."""

import itertools
import os

import numpy as np
import pytest

from pkm_control.dynamics import robot_dynamics
from pkm_control.errors import InvalidInputError
from pkm_control.hardware import SimulatedRobot
from pkm_control.hardware.canopen_drives import CanopenConfig
from pkm_control.hardware.canopen_emulator import EmulatedCanopenRobot, emulated_robot
from pkm_control.trajectory import home_pose

DT = 0.0005
ROBOT = "palida"
DYN = robot_dynamics(ROBOT)
HOME = home_pose(DYN.kin)
LIMITS = np.asarray(DYN.model.config["actuators"]["force_limit"], float) * np.ones(DYN.model.n_actuated)
_channels = itertools.count()


class PlantAdapter:
    dt = DT                             # the period of command and idle

    def __init__(self, plant):
        self.hw = self.robot = plant
        plant.reset(HOME)

    def command(self, tau):
        self.hw.write(tau)
        self.hw.step()

    def idle(self, n):
        for _ in range(n):
            self.hw.step()

    def saturated(self):
        return self.robot.saturated

    def reset(self):
        return self.hw.reset(HOME)

    def close(self):
        self.hw.close()


class CanopenAdapter(PlantAdapter):
    def __init__(self):
        cfg = CanopenConfig.for_robot(ROBOT, DYN.model.actuated_joints)
        self.hw, self.emu, self.robot = emulated_robot(DYN, cfg, DT, HOME, f"conformance_{next(_channels)}",
                                                       command_timeout=1.5 * DT)

    def command(self, tau):
        self.hw.write(tau)
        self.hw.read()                      # the drives answered the SYNC: the period passed

    def idle(self, n):
        self.emu.run_free(n)

    def saturated(self):
        return self.hw.saturated

    def reset(self):
        self.emu.inject_fault(DYN.model.actuated_joints[0])   # a start-up from a fault, the state machine's way
        self.command(np.zeros(len(LIMITS)))
        return self.hw.recover()

    def close(self):
        self.hw.close()
        self.emu.close()


class EmulatedCanopenAdapter(PlantAdapter):
    """joint_controller's ``hardware: canopen`` with ``canopen_emulate``: the master and the drives as one simulated
    robot (EmulatedCanopenRobot); its reset powers the drives up anew."""

    def __init__(self):
        cfg = CanopenConfig.for_robot(ROBOT, DYN.model.actuated_joints)
        self.robot = SimulatedRobot(DYN, DT, command_timeout=1.5 * DT)
        self.hw = EmulatedCanopenRobot(DYN, cfg, self.robot, f"conformance_{next(_channels)}")
        self.hw.reset(HOME)

    def idle(self, n):
        self.hw.emulator.run_free(n)

    def saturated(self):
        return self.hw.drives.saturated


class _PlantProxy:
    """The robot in the drives' process, read there (EmulatorProcess.call("plant", attribute))."""

    def __init__(self, emu):
        self._emu = emu

    def __getattr__(self, name):
        return self._emu.call("plant", name)


class CanopenProcessAdapter(CanopenAdapter):
    """The master against drives in another process on udp_multicast, on the wall clock (test_canopen.udp_config).
    ``idle(n)``: no SYNC for n periods: within the drives' SYNC window for the first; from the second on, beyond it
    (the window is seconds there: the adapter waits for every drive's EMCY 0x8100), and the robot steps at the next
    SYNC, its drives faulted: it holds. The drives' process is the module's (``drives_process``): a master of its
    own per test, the robot back at home."""

    def __init__(self, drives_process):
        from test_canopen import PROCESS_DT

        from pkm_control.control import ForceLimits
        from pkm_control.hardware.canopen_drives import CanopenDrives

        cfg, self.emu = drives_process
        self.dt = PROCESS_DT                 # what the 1 Mbit/s bus carries (canopen_drives.BusLoad)
        self.emu.call("reset_robot")
        self.hw = CanopenDrives(cfg, PROCESS_DT, ForceLimits.from_config(DYN.model), response_timeout=10.0)
        self.robot = _PlantProxy(self.emu)
        try:
            self.hw.start()
        except BaseException:
            self.close()
            raise

    _idle = 0                   # periods without SYNC since the last command

    def command(self, tau):
        self._idle = 0
        super().command(tau)

    def idle(self, n):
        from test_canopen import wait_for

        self._idle += n
        if self._idle < 2 or self._idle - n >= 2:
            return
        self.hw.drain_events()
        wait_for(lambda: self.hw.poll() and sum("EMCY 0x8100" in e for e in self.hw.events) == len(LIMITS),
                 "EMCY 0x8100")
        steps = self.emu.call("plant", "_n_steps")
        self.hw.network.sync.transmit()              # one period: the robot steps at this SYNC
        wait_for(lambda: self.emu.call("plant", "_n_steps") > steps, "the robot's step at SYNC")

    def close(self):
        self.hw.close()

    def reset(self):
        self.emu.call("inject_fault", DYN.model.actuated_joints[0])
        wait_for_fault = __import__("test_canopen").wait_for
        wait_for_fault(lambda: (self.command(np.zeros(len(LIMITS))), self.hw.safe_active)[1], "the fault")
        return self.hw.recover()


class Ros2ControlAdapter(PlantAdapter):
    def __init__(self):
        rclpy = pytest.importorskip("rclpy")
        from rclpy.executors import SingleThreadedExecutor
        from rclpy.node import Node
        from rclpy.parameter import Parameter

        from pkm_control.nodes.hardware import HardwareNode
        from pkm_control.ros.hardware_io import TopicConvention, TopicHardware
        from pkm_control.ros.peers import Sources
        from pkm_control.ros.runtime import Diagnostics
        from pkm_control.control.settings import load_settings

        self.rclpy = rclpy
        rclpy.init(domain_id=int(os.environ.get("PKM_TEST_ROS_DOMAIN_ID", "141")))
        self.ex = SingleThreadedExecutor()
        p = [Parameter("robot", value=ROBOT), Parameter("controller", value="pd"), Parameter("lockstep", value=True),
             Parameter("publish_clock", value=False), Parameter("command_timeout", value=1.5 * DT),
             Parameter("lockstep_timeout", value=3600.0)]
        self.node = HardwareNode(parameter_overrides=p)
        self.robot = self.node.plant
        self.client = Node("conformance_controller")
        s = load_settings(ROBOT, "pd", n_actuated=DYN.model.n_actuated)
        self.hw = TopicHardware(self.client, self.node.ctx, TopicConvention.from_settings(s),
                                Sources(self.client, Diagnostics(self.client, 1.0)))
        for n in (self.node, self.client):
            self.ex.add_node(n)
        self._spin_until(lambda: self.hw.read() is not None)

    def _spin_until(self, cond, timeout=60.0):
        import time
        t = time.monotonic()
        while not cond():
            assert time.monotonic() - t < timeout, "no message within the (generous) timeout"
            self.ex.spin_once(timeout_sec=0.01)

    def command(self, tau):
        k = self.node.k
        self.hw.write(tau, k * DT)
        self._spin_until(lambda: self.node.k > k and self.hw.measurement_ns == self.node.k * self.node.dt_ns)

    def idle(self, n):
        for _ in range(n):
            self.node.advance()            # the stand-in's lockstep timeout: a step without a command
        self._spin_until(lambda: self.hw.measurement_ns == self.node.k * self.node.dt_ns)

    def saturated(self):
        return self.robot.saturated

    def reset(self):
        from std_srvs.srv import Trigger
        self.node.on_reset(Trigger.Request(), Trigger.Response())
        self._spin_until(lambda: self.hw.measurement_ns == 0)
        return self.hw.read()

    def close(self):
        for n in (self.node, self.client):
            self.ex.remove_node(n)
            n.destroy_node()
        self.ex.shutdown()
        self.rclpy.shutdown()


def _mujoco():
    pytest.importorskip("mujoco")
    from pkm_control.hardware.mujoco_robot import MujocoRobot
    return PlantAdapter(MujocoRobot(DYN, DT, command_timeout=1.5 * DT))


FACTORIES = {"sim": lambda: PlantAdapter(SimulatedRobot(DYN, DT, command_timeout=1.5 * DT)), "mujoco": _mujoco,
             "ros2_control": Ros2ControlAdapter, "canopen": CanopenAdapter,
             "canopen_emulated": EmulatedCanopenAdapter, "canopen_process": CanopenProcessAdapter}


@pytest.fixture(scope="module")
def drives_process():
    """(config, EmulatorProcess): the drives in a process of their own, one for the module (its start-up takes
    seconds), on udp_multicast (test_canopen.udp_config)."""
    from test_canopen import PROCESS_DT, SYNC_TIMEOUT, udp_config

    from pkm_control.hardware.canopen_emulator import EmulatorProcess

    cfg = udp_config()
    emu = EmulatorProcess(cfg, ROBOT, PROCESS_DT, sync_timeout=SYNC_TIMEOUT)
    yield cfg, emu
    emu.close()
    assert emu.errors == []


@pytest.fixture(params=list(FACTORIES))
def iface(request):
    a = FACTORIES[request.param](*([request.getfixturevalue("drives_process")]
                                   if request.param == "canopen_process" else []))
    yield a
    a.close()



def test_sizes_and_names(iface):
    assert tuple(iface.hw.actuated_names) == tuple(DYN.model.actuated_joints)
    assert iface.hw.command_interface == "effort"
    m = iface.hw.read()
    assert m.position.shape == m.velocity.shape == m.effort.shape == (DYN.model.n_actuated,)


def test_reads_are_finite_and_at_the_start_pose(iface):
    iface.idle(3)
    m = iface.hw.read()
    assert np.isfinite(m.position).all() and np.isfinite(m.velocity).all() and np.isfinite(m.effort).all()
    assert np.isfinite(m.time)
    assert np.allclose(m.position, DYN.kin.actuated(HOME), atol=1e-3)      # holding near home (not falling)


def test_commands_beyond_the_force_limits_are_clipped_and_reported(iface):
    """For ros2_control the clipping is the robot's (the controller manager's hardware): observable there."""
    iface.command(1.5 * LIMITS)
    assert iface.saturated().all()
    assert np.allclose(iface.robot.tau_applied, LIMITS, rtol=1e-9, atol=0.5)    # canopen: per mille of rated


def test_nan_and_wrong_size_commands_are_refused(iface):
    before = iface.robot.time
    for bad in ([np.nan] * 6, [np.inf] + [0.0] * 5, [0.0] * 5):
        with pytest.raises(InvalidInputError):
            iface.hw.write(bad)
    assert iface.robot.time == before                    # nothing went out, nothing stepped


def test_command_timeout_leads_to_the_safe_behaviour_within_two_periods(iface):
    """Stated periods: the robot holds from the second period without a command (sim, mujoco, ros2_control: the
    plant's command_timeout = 1.5 periods; canopen: the drives fault after 1.5 communication cycles without SYNC)."""
    m = iface.hw.read()
    iface.command(m.effort)
    iface.command(m.effort)
    assert iface.robot.mode == "command"
    iface.idle(1)
    assert iface.robot.mode == "command"
    iface.idle(1)
    assert iface.robot.mode == "hold"


def test_reset_and_start_up(iface):
    iface.command(0.5 * LIMITS * (DT / iface.dt) ** 2)     # the same displacement in one period, F dt^2 / 2m
    iface.idle(3)
    m = iface.reset()
    assert np.isfinite(m.position).all()
    assert np.allclose(m.position, DYN.kin.actuated(HOME), atol=2e-3)
    iface.command(m.effort)                              # accepted and applied again after the start-up
    assert iface.robot.mode == "command"
