"""Emulated CiA 402 drives on a CAN bus: the robot for the ``canopen`` interface without hardware (tests, stand-in).

Each drive is a python-canopen ``LocalNode`` with the drive's EDS (config/canopen/<robot>.yaml ``eds``) on its own
``canopen.Network`` (python-can's ``virtual`` bus: in one process, every bus on a channel hears the others). The
master configures it over SDO like a real drive (its object dictionary takes the writes); at NMT start it reads its
PDO mapping back from its object dictionary, so a wrong mapping shows up as wrong data. Together the drives own one
SimulatedRobot, stepped once per SYNC:

* SYNC: each drive takes the controlword and target torque of the RPDO received before it, runs the CiA 402 state
  machine (canopen_drives.STATES; transitions 2-4, 5-12, 15, 16 of CiA 402; quick stop option 6: hold), clips the
  torque at its max torque 0x6072; when every drive is in Operation enabled the robot gets the forces (per mille of
  0x6076), otherwise none: the robot's command timeout (half a period) makes it hold (its ``hold`` safe behaviour:
  gravity compensation + PD at the pose where it engaged, a drive's position loop holding the axis) from this
  period on. The robot steps one period, heartbeats that are due go out, then each drive's TPDOs with the state at
  the end of the period (position and velocity in increments, the applied force in per mille): the quantization
  of a real drive.
* The drives' clock: a period per SYNC; ``run_free(n)`` lets it run n periods without SYNC (the master stopped). A
  drive in Operation enabled or Quick stop active that misses SYNC for more than 1.5 communication cycles (0x1006)
  goes to Fault with error code 0x8100 (communication) and the robot holds from that period on.
* Faults for tests: ``inject_fault`` (the drive goes to Fault with the given error code, EMCY sent), ``pull_heartbeat``
  (the drive stops producing heartbeats, as when its CAN controller is bus-off for heartbeats).
* NMT: reset communication / reset node -> boot-up message, pre-operational, Switch on disabled; start ->
  operational (PDOs on); heartbeats every producer time (0x1017) of the drives' clock.
"""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np

from ..errors import InvalidInputError
from .canopen_drives import (ENABLE_OPERATION, FAULT_RESET, QUICK_STOP_OPTION_HOLD, STATUSWORD, CanopenConfig,
                             DriveScaling)
from .interface import HardwareInterface, JointMeasurement, RobotState, Simulated
from .simulated import SimulatedRobot

SYNC_LOSS = 0x8100            # EMCY error code of a drive that lost SYNC (CiA 301: communication, generic)
OVER_CURRENT = 0x2310         # a typical drive fault (CiA 402: continuous over-current), the default of inject_fault
SYNC_WINDOW = 1.5             # communication cycles without SYNC before a drive faults
NMT_CODES = {"INITIALISING": 0, "STOPPED": 4, "OPERATIONAL": 5, "PRE-OPERATIONAL": 127}   # heartbeat byte


class _Drive:
    """One emulated drive: its LocalNode and CiA 402 state."""

    def __init__(self, node, scaling: DriveScaling):
        self.node, self.scaling = node, scaling
        self.state = "switch on disabled"
        self.controlword = 0
        self.error_code = 0
        self.heartbeat_ms = 0
        self.heartbeat_on = True
        self.last_heartbeat = -np.inf
        self.pending_fault = None

    def command(self, word: int):
        """CiA 402 state machine: the transition a controlword asks for in the current state."""
        rising_reset = word & FAULT_RESET and not self.controlword & FAULT_RESET
        self.controlword = word
        s = self.state
        if s == "fault":
            if rising_reset:
                self.state, self.error_code = "switch on disabled", 0           # (15)
            return
        if not word & 0x02:                                                     # disable voltage (7, 9, 10, 12)
            self.state = "switch on disabled"
        elif not word & 0x04:                                                   # quick stop (7, 10, 11)
            self.state = "quick stop active" if s in ("operation enabled", "quick stop active") else \
                "switch on disabled"
        elif word & 0x0F == 0x06:                                               # shutdown (2, 6, 8)
            if s != "quick stop active":
                self.state = "ready to switch on"
        elif word & 0x0F == 0x07:                                               # switch on (3) / disable op. (5)
            if s in ("ready to switch on", "operation enabled"):
                self.state = "switched on"
        elif word & 0x0F == ENABLE_OPERATION:                                   # (4), (16) with option 5-8
            if s in ("switched on", "quick stop active"):
                self.state = "operation enabled"
            elif s == "ready to switch on":
                self.state = "switched on"

    def fault(self, code: int):
        self.state, self.error_code = "fault", code
        self.node.emcy.send(code, 0x01)


class EmulatedDrives:
    """CiA 402 drives emulated on a CAN bus around a SimulatedRobot (module docstring). Mutable: it is the robot.

    The robot must be reset to its start pose before; its command timeout is set to half a period here (a period
    without forces from the drives makes it hold)."""

    def __init__(self, config: CanopenConfig, plant: SimulatedRobot, channel: str | None = None):
        import canopen

        if config.mode != "cst":
            raise InvalidInputError(f"the emulated drives run cyclic synchronous torque only, config mode is "
                                    f"{config.mode!r}")
        self.config, self.plant = config, plant
        plant.command_timeout = 0.5 * plant.dt
        self.dt = plant.dt
        self.time = 0.0
        self._ticks = 0
        self._since_sync = 0
        self._lock = threading.Lock()
        self.errors = []                    # exceptions in the bus thread (python-canopen only logs them)
        self.network = canopen.Network()
        self.network.connect(**config.bus_kwargs(channel))
        self.drives = []
        for d in config.drives:
            node = canopen.LocalNode(d.node_id, canopen.import_od(config.eds, d.node_id))
            self.network.add_node(node)
            drive = _Drive(node, d)
            node.nmt.start_heartbeat = lambda ms, drive=drive: setattr(drive, "heartbeat_ms", int(ms))
            self.drives.append(drive)
        self.network.subscribe(0, self._guard(self._on_nmt))
        self.network.subscribe(0x80, self._guard(self._on_sync))

    def _guard(self, fn):
        def call(*args):
            try:
                fn(*args)
            except Exception as exc:       # noqa: BLE001 - kept for the tests: python-canopen would only log it
                self.errors.append(exc)
                raise
        return call

    # ------------------------------------------------------------------ NMT
    def _on_nmt(self, _can_id, data, _ts):
        cmd, node_id = data[0], data[1]
        for drive in self.drives:
            if node_id not in (0, drive.node.id):
                continue
            if cmd in (0x81, 0x82):                          # reset node / communication: boot-up, pre-operational
                drive.state, drive.controlword, drive.error_code = "switch on disabled", 0, 0
                self.network.send_message(0x700 + drive.node.id, [0])
                drive.node.nmt.state = "PRE-OPERATIONAL"
                drive.last_heartbeat = self.time
            elif cmd == 0x01:                                # start: the PDO mapping from the object dictionary
                drive.node.rpdo.read()
                drive.node.tpdo.read()
                if drive.node.sdo[0x605A].raw != QUICK_STOP_OPTION_HOLD:
                    raise InvalidInputError(f"emulated drive {drive.node.id}: quick stop option code "
                                            f"{drive.node.sdo[0x605A].raw} (only {QUICK_STOP_OPTION_HOLD}: hold)")

    # ------------------------------------------------------------------ the drives' clock
    def _on_sync(self, _can_id, _data, _ts):
        self.tick(sync=True)

    def run_free(self, periods: int = 1):
        """The drives' clock runs ``periods`` periods without SYNC (the master stopped sending it)."""
        for _ in range(int(periods)):
            self.tick(sync=False)

    def tick(self, sync: bool):
        """One period of the drives (module docstring)."""
        with self._lock:
            self._since_sync = 0 if sync else self._since_sync + 1
            operational = [d.node.nmt.state == "OPERATIONAL" for d in self.drives]
            for drive, op in zip(self.drives, operational):
                if sync and op and drive.node.rpdo[1].is_received:
                    drive.command(drive.node.rpdo[1][0x6040].raw)
                if drive.pending_fault is not None:
                    drive.fault(drive.pending_fault)
                    drive.pending_fault = None
                elif self._since_sync > SYNC_WINDOW and drive.state in ("operation enabled", "quick stop active"):
                    drive.fault(SYNC_LOSS)
            if all(d.state == "operation enabled" for d in self.drives):
                tau = np.empty(len(self.drives))
                for i, drive in enumerate(self.drives):
                    limit = drive.node.sdo[0x6072].raw
                    permille = int(np.clip(drive.node.rpdo[1][0x6071].raw, -limit, limit))
                    tau[i] = drive.scaling.from_permille(permille)
                self.plant.write(tau, self.plant.time)
            meas = self.plant.step()
            self._ticks += 1
            self.time = self._ticks * self.dt
            for drive in self.drives:
                due = drive.heartbeat_ms > 0 and self.time - drive.last_heartbeat >= drive.heartbeat_ms * 1e-3 - 1e-9
                if due and drive.heartbeat_on:
                    self.network.send_message(0x700 + drive.node.id, [NMT_CODES[drive.node.nmt.state]])
                    drive.last_heartbeat = self.time
            if not sync:
                return
            for i, (drive, op) in enumerate(zip(self.drives, operational)):
                if not op:
                    continue
                d, t1, t2 = drive.scaling, drive.node.tpdo[1], drive.node.tpdo[2]
                t1[0x6041].raw = STATUSWORD[drive.state] | 0x0200             # bit 9: remote
                t1[0x6061].raw = drive.node.sdo[0x6060].raw
                t1[0x6077].raw = d.to_permille(meas.effort[i])
                t1[0x603F].raw = drive.error_code
                t2[0x6064].raw = d.to_increments(meas.position[i])
                t2[0x606C].raw = d.to_increments(meas.velocity[i])
                t1.transmit()
                t2.transmit()

    # ------------------------------------------------------------------ faults for tests
    def _drive(self, joint: str) -> _Drive:
        for drive in self.drives:
            if drive.scaling.joint == joint:
                return drive
        raise InvalidInputError(f"no emulated drive for joint {joint!r}")

    def inject_fault(self, joint: str, code: int = OVER_CURRENT):
        """The drive of ``joint`` goes to Fault at its next period."""
        self._drive(joint).pending_fault = int(code)

    def pull_heartbeat(self, joint: str, on: bool = False):
        """The drive of ``joint`` stops (``on``: resumes) producing heartbeats."""
        self._drive(joint).heartbeat_on = bool(on)

    def states(self) -> dict:
        return {d.scaling.joint: d.state for d in self.drives}

    def close(self):
        self.network.disconnect()


def emulated_robot(dyn, config: CanopenConfig, dt: float, pose, channel: str, force_limits="config",
                   response_timeout: float = 5.0, plant: SimulatedRobot | None = None, **plant_options):
    """(CanopenDrives started, EmulatedDrives, the SimulatedRobot) of a robot at ``pose`` on the virtual bus
    ``channel``: the master side and the drives in this process (tests, ``hardware: canopen`` with
    ``canopen_emulate``). ``plant``: this simulated robot (period ``dt``, its own force limits) instead of one made
    of ``force_limits`` and ``plant_options``."""
    from ..control.safety import ForceLimits
    from .canopen_drives import CanopenDrives

    if plant is None:
        plant = SimulatedRobot(dyn, dt, force_limits=force_limits, **plant_options)
        limits = ForceLimits.from_config(dyn.model) if isinstance(force_limits, str) else plant.force_limits
    else:
        limits = plant.force_limits
    plant.reset(pose)
    emu = EmulatedDrives(config, plant, channel)
    hw = CanopenDrives(config, dt, limits, response_timeout=response_timeout, channel=channel)
    try:
        hw.start()
    except BaseException:
        emu.close()
        hw.close()
        raise
    return hw, emu, plant


class EmulatedCanopenRobot(HardwareInterface, Simulated):
    """``hardware: canopen`` with ``canopen_emulate``: the CAN master (CanopenDrives) and the emulated drives around
    a SimulatedRobot in one process, as a simulated robot for the control loop. ``read``/``write`` are the master's
    (the controller talks CiA 402 over the virtual bus); the SYNC that ``write`` sends steps the robot (in the bus
    thread); ``step`` completes the period: it waits for the drives' TPDOs answering that SYNC and returns the
    measurement, which the next ``read`` returns again. ``reset(pose)`` powers the drives up anew around the robot at
    ``pose`` (NMT reset, SDO configuration, state machine: ``emulated_robot``). Mutable: it is the robot."""

    def __init__(self, dyn, config: CanopenConfig, plant: SimulatedRobot, channel: str,
                 response_timeout: float = 5.0):
        self.dyn, self.plant, self.channel = dyn, plant, channel
        self.config = replace(config, interface="virtual")        # the site's drives, emulated in this process
        self.response_timeout = float(response_timeout)
        self.actuated_names = tuple(d.joint for d in config.drives)
        self.drives = self.emulator = None

    def _require(self) -> None:
        if self.drives is None:
            raise InvalidInputError("the emulated CANopen robot is not started: call reset(pose) first")

    def read(self) -> JointMeasurement:
        self._require()
        return self.drives.read()

    def write(self, command, time: float | None = None) -> None:
        self._require()
        self.drives.write(command, time)

    @property
    def safe_reason(self):
        return None if self.drives is None else self.drives.safe_reason

    def recover(self) -> JointMeasurement:
        self._require()
        return self.drives.recover()

    def step(self) -> JointMeasurement:
        return self.read()

    def reset(self, pose, twist=None, time: float = 0.0) -> JointMeasurement:
        if twist is not None or time != 0.0:
            raise InvalidInputError("the emulated CANopen robot starts at rest at sim time 0 (no twist, no time)")
        self.close()
        self.drives, self.emulator, _ = emulated_robot(self.dyn, self.config, self.plant.dt, pose, self.channel,
                                                       response_timeout=self.response_timeout, plant=self.plant)
        return self.read()

    def snapshot(self):
        self._require()
        with self.emulator._lock:                 # the bus thread steps the robot at each SYNC
            return self.plant.snapshot()

    def ground_truth(self, snapshot=None) -> RobotState:
        return self.plant.ground_truth(self.snapshot() if snapshot is None else snapshot)

    def close(self) -> None:
        drives, emulator, self.drives, self.emulator = self.drives, self.emulator, None, None
        try:
            if drives is not None:
                drives.close()
        finally:
            if emulator is not None:
                emulator.close()
