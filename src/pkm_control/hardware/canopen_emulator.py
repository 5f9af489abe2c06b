"""Emulated CiA 402 drives on a CAN bus: the robot for the ``canopen`` interface without hardware (tests, stand-in).

Each drive is a python-canopen ``LocalNode`` with the drive's EDS (config/canopen/<robot>.yaml ``eds``) on its own
``canopen.Network``: python-can's ``virtual`` bus in the master's process, or, as a real bus looks to the master, any
bus in another process (``serve`` / ``python -m pkm_control.hardware.canopen_emulator``, e.g. ``udp_multicast`` on
a loopback group). The master configures it over SDO like a real drive (its object dictionary takes the writes; motor
rated torque 0x6076 is the motor's, read-only, set from the configuration's ``rated_torque``); at NMT start it reads
its PDO mapping and its units (position factor 0x6093, velocity factor 0x6096, polarity 0x607E, home offset 0x607C:
DriveScaling's CiA 402 formulas) back from its object dictionary, so a wrong mapping or wrong units show up as wrong
data; its encoder counts ``increments_per_unit`` per m or rad of its joint, zero at the joint's zero. Together the
drives own one SimulatedRobot, stepped at each SYNC through one communication cycle in steps of the drives' own loop
(its period ``plant.dt``: ``drive_loop``, 0.5 ms or the cycle's whole fraction nearest to it; a real drive closes its
position and velocity loops at several kHz whatever the SYNC rate, and the hold law at a 4 ms SYNC would oscillate):

* SYNC: each drive takes the controlword and target of the RPDOs received before it, runs the CiA 402 state machine
  (canopen_drives.STATES; transitions 2-4, 5-12, 15, 16 of CiA 402; quick stop option 6: hold); a transition takes
  ``transition_time`` seconds of the drives' clock (a power stage, a brake). When every drive is in Operation
  enabled the robot gets the forces: CST the target torque clipped at max torque 0x6072 (per mille of 0x6076); CSP
  and CSV the drive's own loop, the plant's hold law (SafeBehaviour.command) around the torque it held at enable
  operation: tau_enable + Kp (0x607A - x) - Kd v (CSP), tau_enable - Kd (v - 0x60FF) (CSV), so a target that is not
  where the axis is makes it move. Otherwise the robot gets none: its command timeout (half a period) makes it hold
  (the ``hold`` safe behaviour: a drive's position loop holding the axis) from this period on. The robot steps one
  period, then each drive's TPDOs with the state at the end of the period (position and velocity in increments,
  the applied force in per mille): the quantization of a real drive. ``enable_targets`` keeps, per drive, the
  (0x607A, 0x6064, 0x60FF) of each enable operation since its last NMT reset. The mode (CST, CSP, CSV) is the
  drives' 0x6060, as the master configured it.
* The drives' clock: in the master's process, a period per SYNC (``run_free(n)`` lets it run n periods without
  SYNC: the master stopped); in a process of their own, the wall clock (``clock``), with heartbeats and SYNC
  supervision in a thread of their own, the threads at SCHED_FIFO (``realtime_priority``), and at a SYNC after
  periods the master skipped the robot first runs those periods under the targets in force (``coast``, by the
  SYNCs' reception stamps), as a real robot moves on while its master is late.
A drive in Operation enabled or Quick stop active that misses SYNC for more
  than ``sync_timeout`` (default 1.5 communication cycles 0x1006) goes to Fault with error code 0x8100
  (communication) and the robot holds from that period on.
* The master's heartbeat: a drive consumes it as configured in 0x1016:01 (read at NMT start; supervised from the
  first one received, CiA 301) and, when it is older than the consumer time in Operation enabled, applies the abort
  connection option 0x6007 (1 fault, 2 disable voltage, 3 quick stop) and sends EMCY 0x8130.
* Faults for tests: ``inject_fault`` (the drive goes to Fault with the given error code, EMCY sent; ``persistent``:
  a fault reset does not clear it until ``clear_fault``), ``pull_heartbeat`` (the drive stops producing heartbeats,
  as when its CAN controller is bus-off for heartbeats).
* NMT: reset communication / reset node -> boot-up message, pre-operational, Switch on disabled; start ->
  operational (PDOs on); heartbeats every producer time (0x1017) of the drives' clock.
"""

from __future__ import annotations

import threading
import time as _time
import sys
from dataclasses import replace

import numpy as np

from ..control.safety import HoldTarget
from ..errors import InvalidInputError
from .canopen_drives import (DRIVE_RECEIVES, ENABLE_OPERATION, FAULT_RESET, MODES, QUICK_STOP_OPTION_HOLD,
                             STATUSWORD, CanopenConfig, DriveScaling, open_bus)
from .canopen_supervision import DriveSupervision
from .interface import HardwareInterface, JointMeasurement, RobotState, Simulated
from .simulated import SimulatedRobot

SYNC_LOSS = 0x8100            # EMCY error code of a drive that lost SYNC (CiA 301: communication, generic)
HEARTBEAT_LOSS = 0x8130       # EMCY error code of a drive that lost its master's heartbeat (CiA 301: life guard
                              # error or heartbeat error)
OVER_CURRENT = 0x2310         # a typical drive fault (CiA 402: continuous over-current), the default of inject_fault
SYNC_WINDOW = 1.5             # communication cycles without SYNC before a drive faults
REALTIME_PRIORITY = 70        # SCHED_FIFO of emulated drives on the wall clock (joint_controller's loop: 80)
DRIVE_LOOP = 0.0005           # s: the period of the drives' own loops (CSP / CSV, the hold), at most the SYNC's
OPERATION_MODES = {value: name for name, value in MODES.items()}
NMT_CODES = {"INITIALISING": 0, "STOPPED": 4, "OPERATIONAL": 5, "PRE-OPERATIONAL": 127}   # heartbeat byte


def transition(state: str, word: int, last: int) -> str:
    """CiA 402 state machine: the state a controlword asks for from ``state`` (``last``: the controlword before, for
    the rising edge of fault reset)."""
    if state == "fault":
        return "switch on disabled" if word & FAULT_RESET and not last & FAULT_RESET else state      # (15)
    if not word & 0x02:                                                     # disable voltage (7, 9, 10, 12)
        return "switch on disabled"
    if not word & 0x04:                                                     # quick stop (7, 10, 11)
        return "quick stop active" if state in ("operation enabled", "quick stop active") else "switch on disabled"
    if word & 0x0F == 0x06:                                                 # shutdown (2, 6, 8)
        return state if state == "quick stop active" else "ready to switch on"
    if word & 0x0F == 0x07:                                                 # switch on (3) / disable operation (5)
        return "switched on" if state in ("ready to switch on", "operation enabled") else state
    if word & 0x0F == ENABLE_OPERATION:                                     # (4), (16) with option 5-8
        if state in ("switched on", "quick stop active"):
            return "operation enabled"
        return "switched on" if state == "ready to switch on" else state
    return state


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
        self.persistent = False          # a fault reset does not clear the fault
        self.moving = None               # (state, due time): a transition under way
        self.tau_enable = 0.0            # the force it held at enable operation (its loop's integrator)
        self.consumer = None             # (master node id, s) of its heartbeat consumer 0x1016:01, from NMT start
        self.master_seen = None          # drives' time of the master's last heartbeat (None: not yet: not supervised)
        self.enable_targets = []         # (0x607A, 0x6064, 0x60FF) at each enable operation
        self.encoder_offset = 0.0        # m or rad its encoder reads beyond the joint (a mis-mounted encoder: tests)
        # read from its dictionary at NMT start (the configuration the master wrote in pre-operational)
        self.mode = "cst"                # modes of operation 0x6060
        self.max_torque = 0              # 0x6072, per mille of 0x6076
        self.abort_option = 0            # abort connection option code 0x6007

    def command(self, word: int, now: float, transition_time: float):
        """The transition the controlword asks for, done ``transition_time`` after it was first asked."""
        target = transition(self.state, word, self.controlword)
        if self.persistent and self.state == "fault":
            target = "fault"
        self.controlword = word
        if target == self.state and not (self.state == "fault" and self.moving):   # fault reset: an edge, it goes on
            self.moving = None
            return
        target = self.moving[0] if target == self.state else target
        if self.moving is None or self.moving[0] != target:
            self.moving = (target, now + transition_time)
        if now >= self.moving[1] - 1e-12:
            self.state, self.moving = target, None
            if target == "switch on disabled":
                self.error_code = 0

    def units(self) -> DriveScaling:
        """Its scaling with the units its dictionary holds now (as the master configured them: factors, polarity,
        home offset; DriveScaling's formulas, CiA 402)."""
        od = self.node.sdo
        return self.scaling.with_units(lambda index, sub: od[index][sub].raw if sub else od[index].raw)

    def fault(self, code: int):
        self.state, self.error_code, self.moving = "fault", code, None
        self.node.emcy.send(code, 0x01)


class EmulatedDrives:
    """CiA 402 drives emulated on a CAN bus around a SimulatedRobot (module docstring). Mutable: it is the robot.

    The robot must be reset to its start pose before; its command timeout is set to half a period here (a period
    without forces from the drives makes it hold). clock: None (the drives' clock counts periods, one per SYNC or
    ``run_free``), or a wall clock in seconds (time.monotonic: heartbeats and SYNC supervision run in a thread)."""

    def __init__(self, config: CanopenConfig, plant: SimulatedRobot, channel: str | None = None,
                 transition_time: float = 0.0, sync_timeout: float | None = None, clock=None,
                 cycle: float | None = None, encoder_offsets=None, realtime_priority: int = 0, coast: bool = True):
        import canopen

        self.config, self.plant = config, plant
        plant.command_timeout = 0.5 * plant.dt
        self.dt = plant.dt if cycle is None else float(cycle)
        self.loop_steps = int(round(self.dt / plant.dt))     # the robot's steps (the drives' loop) per SYNC
        if self.loop_steps < 1 or abs(self.loop_steps * plant.dt - self.dt) > 1e-12:
            raise InvalidInputError(f"the communication cycle {self.dt} s must be a whole number of the robot's "
                                    f"period {plant.dt} s (the drives' own loop)")
        self.transition_time = float(transition_time)
        self.sync_timeout = SYNC_WINDOW * self.dt if sync_timeout is None else float(sync_timeout)
        self.clock = clock
        self.coast = bool(coast)           # on the wall clock: run the periods a late master skipped (_on_sync)
        self.time = 0.0 if clock is None else clock()
        self._ticks = 0
        self._last_sync = None             # drives' time of the last SYNC (None: none yet)
        self._sync_stamp = None            # the bus's reception time of the last SYNC (wall clock)
        self._applied = None               # the RPDOs taken at the last SYNC (``_received``): the targets in force
        self._lock = threading.Lock()
        self.errors = []                    # exceptions in the bus thread (python-canopen only logs them)
        self.network = canopen.Network()
        open_bus(self.network, config.bus_kwargs(channel), DRIVE_RECEIVES)
        self.drives = []
        for d in config.drives:
            node = canopen.LocalNode(d.node_id, canopen.import_od(d.eds or config.eds, d.node_id))
            node.sdo[0x6076].raw = int(round(d.rated_torque * 1000.0))     # the motor's (mN m or mN), read-only
            self.network.add_node(node)
            drive = _Drive(node, d)
            drive.encoder_offset = float(dict(encoder_offsets or {}).get(d.joint, 0.0))
            node.add_read_callback(lambda index, subindex, od, drive=drive: self._sdo_read(drive, index))
            node.nmt.start_heartbeat = lambda ms, drive=drive: setattr(drive, "heartbeat_ms", int(ms))
            self.drives.append(drive)
        self._masters = set()               # node ids whose heartbeat the drives consume
        self.network.subscribe(0, self._guard(self._on_nmt))
        self.network.subscribe(0x80, self._guard(self._on_sync))
        self._stop = threading.Event()
        self._watch = None
        self.realtime = "default scheduler"
        if clock is not None:
            self._watch = threading.Thread(target=self._guard(self._watchdog), name="emulated_drives", daemon=True)
            self._watch.start()
            if realtime_priority > 0:
                self.realtime = self._realtime(int(realtime_priority))

    @staticmethod
    def _realtime(priority: int) -> str:
        """On the wall clock, as a drive's firmware runs: every thread of this process (the bus thread that steps
        the robot at SYNC, the watchdog) at SCHED_FIFO ``priority`` and a 50 us interpreter switch interval, the
        objects made so far out of the collector's way (control/realtime.py). Without this, a loaded machine left
        the drives' answer to a SYNC waiting for the CPU for longer than a period. What was set, or why not."""
        import gc

        from ..control.realtime import fifo_priority

        sys.setswitchinterval(5e-5)
        gc.collect()
        gc.freeze()
        return fifo_priority(priority, whole_process=True) or f"SCHED_FIFO priority {priority}"

    def _sdo_read(self, drive, index: int):
        """An SDO upload of the position actual value 0x6064: where the drive's encoder says its joint is now (an
        absolute encoder, before any SYNC); every other object from the dictionary."""
        if index != 0x6064:
            return None
        with self._lock:
            i = self.drives.index(drive)
            return drive.units().to_position(self.plant.read().position[i] + drive.encoder_offset)

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
        with self._lock:
            for drive in self.drives:
                if node_id not in (0, drive.node.id):
                    continue
                if cmd in (0x81, 0x82):                      # reset node / communication: boot-up, pre-operational
                    drive.state, drive.controlword, drive.error_code = "switch on disabled", 0, 0
                    drive.persistent, drive.moving, drive.heartbeat_on, drive.enable_targets = False, None, True, []
                    self.network.send_message(0x700 + drive.node.id, [0])
                    drive.node.nmt.state = "PRE-OPERATIONAL"
                    drive.last_heartbeat = self.time
                    self._sync_stamp = self._applied = None
                elif cmd == 0x01:                            # start: the PDO mapping, units from the dictionary
                    drive.scaling = drive.units()
                    drive.node.rpdo.read()
                    drive.node.tpdo.read()
                    drive.node.nmt.state = "OPERATIONAL"
                    consumer = drive.node.sdo[0x1016][1].raw
                    master, ms = consumer >> 16 & 0x7F, consumer & 0xFFFF
                    drive.consumer, drive.master_seen = ((master, ms * 1e-3) if master and ms else None), None
                    if drive.consumer and master not in self._masters:
                        self._masters.add(master)
                        self.network.subscribe(0x700 + master, self._guard(self._on_master_heartbeat))
                    od = drive.node.sdo
                    drive.mode, drive.max_torque = OPERATION_MODES.get(od[0x6060].raw), od[0x6072].raw
                    drive.abort_option = od[0x6007].raw
                    cycle = od[0x1006].raw * 1e-6
                    if od[0x605A].raw != QUICK_STOP_OPTION_HOLD or abs(cycle - self.dt) > 1e-9 or drive.mode is None:
                        raise InvalidInputError(f"emulated drive {drive.node.id}: quick stop option code "
                                                f"{od[0x605A].raw} (only {QUICK_STOP_OPTION_HOLD}: hold), "
                                                f"cycle 0x1006 {cycle} s (the communication cycle {self.dt} s), "
                                                f"modes of operation 0x6060 {od[0x6060].raw} (only {MODES})")
                elif cmd == 0x80:
                    drive.node.nmt.state = "PRE-OPERATIONAL"

    def _on_master_heartbeat(self, can_id, _data, _ts):
        with self._lock:
            for drive in self.drives:
                if drive.consumer and 0x700 + drive.consumer[0] == can_id:
                    drive.master_seen = self.time

    # ------------------------------------------------------------------ the drives' clock
    def _on_sync(self, _can_id, _data, stamp):
        """A SYNC. On the wall clock the robot first runs the periods the master skipped (the time since the last
        SYNC by the bus's reception stamps, in whole periods: a late loop skips its lost periods), under the targets
        taken at the last SYNC, as a real robot moves on while its master is late; at most until the drives' SYNC
        supervision has faulted them (the robot holds from then on)."""
        periods = 1
        if self.clock is not None and self.coast:
            stamp = stamp or self.clock()
            if self._sync_stamp is not None:
                periods = min(max(1, round((stamp - self._sync_stamp) / self.dt)), 2 + int(self.sync_timeout / self.dt))
            self._sync_stamp = stamp
        for _ in range(periods - 1):
            self.tick(sync=False)
        self.tick(sync=True)

    def run_free(self, periods: int = 1):
        """The drives' clock runs ``periods`` periods without SYNC (the master stopped sending it)."""
        for _ in range(int(periods)):
            self.tick(sync=False)

    def _now(self) -> float:
        return self._ticks * self.dt if self.clock is None else self.clock()

    def _housekeeping(self):
        """Injected faults, SYNC supervision, heartbeats that are due (under the lock)."""
        for drive in self.drives:
            if drive.pending_fault is not None:
                drive.fault(drive.pending_fault)
                drive.pending_fault = None
            elif (self._last_sync is not None and self.time - self._last_sync > self.sync_timeout + 1e-12
                  and drive.state in ("operation enabled", "quick stop active")):
                drive.fault(SYNC_LOSS)
            elif (drive.consumer and drive.master_seen is not None and drive.state == "operation enabled"
                  and self.time - drive.master_seen > drive.consumer[1] + 1e-12):
                self._connection_lost(drive)
        for drive in self.drives:
            due = drive.heartbeat_ms > 0 and self.time - drive.last_heartbeat >= drive.heartbeat_ms * 1e-3 - 1e-9
            if due and drive.heartbeat_on:
                self.network.send_message(0x700 + drive.node.id, [NMT_CODES[drive.node.nmt.state]])
                drive.last_heartbeat = self.time

    @staticmethod
    def _connection_lost(drive):
        """The master's heartbeat lost in Operation enabled: the abort connection option 0x6007 (CiA 402: 1 fault,
        2 disable voltage, 3 quick stop; 0 nothing), said by EMCY 0x8130."""
        option = drive.abort_option
        if option == 1:
            drive.fault(HEARTBEAT_LOSS)
            return
        if option in (2, 3):
            drive.state, drive.moving = ("switch on disabled" if option == 2 else "quick stop active"), None
            drive.node.emcy.send(HEARTBEAT_LOSS, 0x11)            # error register: generic, communication

    def _watchdog(self):
        """Wall clock: heartbeats and SYNC supervision between SYNCs."""
        while not self._stop.wait(0.001):
            with self._lock:
                self.time = self.clock()
                self._housekeeping()

    def _received(self) -> tuple:
        """Per drive, what its RPDOs hold (drive units, 0 where not mapped): controlword 0x6040, target torque
        0x6071, target position 0x607A, target velocity 0x60FF."""
        out = []
        for drive in self.drives:
            values = {var.index: var.raw for pdo in (drive.node.rpdo[1], drive.node.rpdo[2]) for var in pdo.map}
            out.append(tuple(values.get(index, 0) for index in (0x6040, 0x6071, 0x607A, 0x60FF)))
        return tuple(out)

    def _forces(self, received) -> np.ndarray:
        """Every drive enabled: the forces it applies (module docstring), ``received``: ``_received()``."""
        meas = self.plant.read()
        scale = [d.scaling for d in self.drives]
        limit = np.abs([d.from_permille(drive.max_torque) for d, drive in zip(scale, self.drives)])
        mode = self.drives[0].mode                                        # as the master configured them
        if mode == "cst":
            return np.clip([d.from_permille(r[1]) for d, r in zip(scale, received)], -limit, limit)
        x = np.array([d.from_position(r[2]) for d, r in zip(scale, received)]) if mode == "csp" \
            else meas.position
        v = np.array([d.from_velocity(r[3]) for d, r in zip(scale, received)]) if mode == "csv" \
            else np.zeros(len(scale))
        tau_enable = np.array([drive.tau_enable for drive in self.drives])
        return np.clip(self.plant.safe_behaviour.command(HoldTarget(x, tau_enable), meas.position, meas.velocity - v),
                       -limit, limit)

    def tick(self, sync: bool):
        """One period of the drives (module docstring)."""
        with self._lock:
            self._ticks += 1
            self.time = self._now()
            if sync:
                self._last_sync = self.time
            operational = [d.node.nmt.state == "OPERATIONAL" for d in self.drives]
            before = self.plant.read()
            received = self._received() if sync or self._applied is None else self._applied
            if sync:
                self._applied = received
            for i, (drive, op) in enumerate(zip(self.drives, operational)):
                if sync and op and drive.node.rpdo[1].is_received:
                    was = drive.state
                    drive.command(received[i][0], self.time, self.transition_time)
                    if drive.state == "operation enabled" and was != drive.state:
                        drive.tau_enable = before.effort[i]
                        drive.enable_targets.append((received[i][2], drive.scaling.to_position(before.position[i]),
                                                     received[i][3]))
            self._housekeeping()
            for _ in range(self.loop_steps):         # the drives' own loop, faster than SYNC
                if all(d.state == "operation enabled" for d in self.drives):
                    self.plant.write(self._forces(received), self.plant.time)
                meas = self.plant.step()
            if not sync:
                return
            for i, (drive, op) in enumerate(zip(self.drives, operational)):
                if not op:
                    continue
                d, t1, t2 = drive.scaling, drive.node.tpdo[1], drive.node.tpdo[2]
                t1[0x6041].raw = STATUSWORD[drive.state] | 0x0200             # bit 9: remote
                t1[0x6061].raw = MODES[drive.mode]
                t1[0x6077].raw = d.to_permille(meas.effort[i])
                t1[0x603F].raw = drive.error_code
                t2[0x6064].raw = d.to_position(meas.position[i] + drive.encoder_offset)
                t2[0x606C].raw = d.to_velocity(meas.velocity[i])
                t1.transmit()
                t2.transmit()

    # ------------------------------------------------------------------ faults for tests
    def _drive(self, joint: str) -> _Drive:
        for drive in self.drives:
            if drive.scaling.joint == joint:
                return drive
        raise InvalidInputError(f"no emulated drive for joint {joint!r}")

    def inject_fault(self, joint: str, code: int = OVER_CURRENT, persistent: bool = False):
        """The drive of ``joint`` goes to Fault at its next period (``persistent``: until ``clear_fault``)."""
        with self._lock:
            drive = self._drive(joint)
            drive.pending_fault, drive.persistent = int(code), bool(persistent)

    def clear_fault(self, joint: str):
        """The cause of a persistent fault is gone: a fault reset clears it."""
        with self._lock:
            self._drive(joint).persistent = False

    def pull_heartbeat(self, joint: str, on: bool = False):
        """The drive of ``joint`` stops (``on``: resumes) producing heartbeats."""
        self._drive(joint).heartbeat_on = bool(on)

    def states(self) -> dict:
        return {d.scaling.joint: d.state for d in self.drives}

    def enable_targets(self) -> dict:
        """Per joint, (0x607A, 0x6064, 0x60FF) in the drive's units at each enable operation."""
        return {d.scaling.joint: list(d.enable_targets) for d in self.drives}

    def close(self):
        self._stop.set()
        if self._watch is not None:
            self._watch.join()
        self.network.disconnect()


def emulated_robot(dyn, config: CanopenConfig, dt: float, pose, channel: str, force_limits="config",
                   response_timeout: float = 5.0, plant: SimulatedRobot | None = None, transition_time: float = 0.0,
                   encoder_offsets=None, **plant_options):
    """(CanopenDrives started, EmulatedDrives, the SimulatedRobot) of a robot at ``pose`` on the virtual bus
    ``channel``: the master side and the drives in this process (tests, ``hardware: canopen`` with
    ``canopen_emulate``), the master's heartbeat consumer and transition timeouts on the drives' clock. ``plant``:
    this simulated robot (period ``dt``, its own force limits) instead of one made of ``force_limits`` and
    ``plant_options``. The master checks the encoders against an assembled pose of ``dyn.kin`` before enable;
    ``encoder_offsets``: {joint: m or rad} a drive's encoder reads beyond its joint (tests)."""
    from ..control.safety import ForceLimits
    from .canopen_drives import CanopenDrives

    if plant is None:
        plant = SimulatedRobot(dyn, dt, force_limits=force_limits, **plant_options)
        limits = ForceLimits.from_config(dyn.model) if isinstance(force_limits, str) else plant.force_limits
    else:
        limits = plant.force_limits
    plant.reset(pose)
    emu = EmulatedDrives(config, plant, channel, transition_time, encoder_offsets=encoder_offsets)
    hw = CanopenDrives(config, dt, limits, response_timeout=response_timeout, channel=channel,
                       clock=lambda: emu.time, kin=dyn.kin)
    try:
        hw.start()
    except BaseException:
        emu.close()
        hw.close()
        raise
    return hw, emu, plant


def drive_loop(cycle: float) -> float:
    """The period of the emulated drives' own loop for a communication cycle: DRIVE_LOOP or the cycle's whole
    fraction nearest to it (a real drive closes its loops at several kHz, whatever the SYNC rate)."""
    return cycle / max(1, round(cycle / DRIVE_LOOP))


def _serve(config: CanopenConfig, robot: str, variant, dt: float, pose, channel, transition_time, sync_timeout,
           priority, coast, conn):
    """The drives in this process on the wall clock, commanded through ``conn`` (``EmulatorProcess``)."""
    from ..dynamics import robot_dynamics
    from ..trajectory import home_pose

    dyn = robot_dynamics(robot, variant) if variant else robot_dynamics(robot)
    plant = SimulatedRobot(dyn, drive_loop(dt))
    plant.reset(home_pose(dyn.kin) if pose is None else pose)
    emu = EmulatedDrives(config, plant, channel, transition_time, sync_timeout, clock=_time.monotonic, cycle=dt,
                         realtime_priority=priority, coast=coast)
    try:
        conn.send(("ready", None))
        while True:
            name, args = conn.recv()
            if name == "close":
                break
            try:
                if name == "plant":                  # the robot's attribute (called when a method: read)
                    with emu._lock:
                        result = getattr(plant, args[0])
                        result = result() if callable(result) else result
                elif name == "reset_robot":          # back at its start pose, at rest (the next master's test)
                    with emu._lock:
                        plant.reset(home_pose(dyn.kin) if pose is None else pose)
                        result = None
                else:
                    result = getattr(emu, name)(*args)
                conn.send(("ok", result))
            except Exception as exc:       # noqa: BLE001 - told to the caller, which raises it
                conn.send(("error", f"{type(exc).__name__}: {exc}"))
    finally:
        errors = list(emu.errors)
        emu.close()
        conn.send(("closed", [f"{type(e).__name__}: {e}" for e in errors]))


class EmulatorProcess:
    """Emulated drives in a process of their own (a bus that is not the master's process: udp_multicast), on the
    wall clock. Their robot starts at ``pose`` (None: home); ``call(name, *args)`` runs an EmulatedDrives method
    there (inject_fault, clear_fault, pull_heartbeat, states, enable_targets; "reset_robot": the robot back at its
    start pose, at rest, for the next master; "plant", attribute: the robot's
    attribute, called when a method: "plant", "read" is its exact measurement). Construction returns once the
    drives listen on the bus."""

    def __init__(self, config: CanopenConfig, robot: str, dt: float, pose=None, variant=None, channel=None,
                 transition_time: float = 0.0, sync_timeout: float | None = None, timeout: float = 120.0,
                 realtime_priority: int = REALTIME_PRIORITY, coast: bool = True):
        import multiprocessing

        ctx = multiprocessing.get_context("spawn")
        self._conn, child = ctx.Pipe()
        self.timeout = float(timeout)
        self.process = ctx.Process(target=_serve, args=(config, robot, variant, dt, pose, channel, transition_time,
                                                        sync_timeout, realtime_priority, coast, child), daemon=True)
        self.process.start()
        self._answer("ready")
        self.errors = None

    def _answer(self, expected: str):
        if not self._conn.poll(self.timeout):
            raise InvalidInputError(f"the emulated drives' process sent no {expected!r} within {self.timeout} s")
        kind, value = self._conn.recv()
        if kind == "error":
            raise InvalidInputError(f"emulated drives: {value}")
        return value

    def call(self, name: str, *args):
        self._conn.send((name, args))
        return self._answer(name)

    def close(self):
        """Stop the drives; their bus thread's exceptions in ``errors``."""
        if self.process.is_alive():
            self._conn.send(("close", ()))
            self.errors = self._answer("closed")
        self.process.join(self.timeout)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join()


def main(argv=None) -> int:
    """``python -m pkm_control.hardware.canopen_emulator``: a robot's drives on the bus of a CANopen configuration,
    on the wall clock, until SIGINT / SIGTERM (a bus in another process for ``pkm bringup --hardware canopen``)."""
    import argparse
    import signal

    from ..dynamics import robot_dynamics

    p = argparse.ArgumentParser(prog="python -m pkm_control.hardware.canopen_emulator", description=main.__doc__)
    p.add_argument("--robot", required=True)
    p.add_argument("--canopen-config", required=True, help="config/canopen/<robot>.yaml with the bus to use")
    p.add_argument("--rate", type=float, default=2000.0, help="Hz, the master's SYNC rate (0x1006 is checked)")
    p.add_argument("--transition-time", type=float, default=0.0, help="s per CiA 402 state transition")
    p.add_argument("--realtime-priority", type=int, default=REALTIME_PRIORITY,
                   help="SCHED_FIFO priority of the drives' threads (0: the default scheduler)")
    p.add_argument("--sync-timeout", type=float, default=None, help="s without SYNC before the drives fault "
                   "(default 1.5 communication cycles)")
    a = p.parse_args(argv)
    dyn = robot_dynamics(a.robot)
    config = CanopenConfig.load(a.canopen_config, dyn.model.actuated_joints)
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    from ..trajectory import home_pose

    plant = SimulatedRobot(dyn, drive_loop(1.0 / a.rate))
    plant.reset(home_pose(dyn.kin))
    emu = EmulatedDrives(config, plant, None, a.transition_time, a.sync_timeout, clock=_time.monotonic,
                         realtime_priority=a.realtime_priority,
                         cycle=1.0 / a.rate)
    print(f"emulated drives of {a.robot} on {config.interface}:{config.channel}: "
          f"{', '.join(d.name for d in config.drives)}; {emu.realtime}", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        emu.close()
    for exc in emu.errors:
        print(f"emulated drives: {type(exc).__name__}: {exc}", file=sys.stderr)
    return 1 if emu.errors else 0


class EmulatedCanopenRobot(DriveSupervision, HardwareInterface, Simulated):
    """``hardware: canopen`` with ``canopen_emulate``: the CAN master (CanopenDrives) and the emulated drives around
    a SimulatedRobot in one process, as a simulated robot for the control loop. ``read``/``write`` are the master's
    (the controller talks CiA 402 over the virtual bus); the SYNC that ``write`` sends steps the robot (in the bus
    thread); ``step`` completes the period: it waits for the drives' TPDOs answering that SYNC and returns the
    measurement, which the next ``read`` returns again. ``reset(pose)`` powers the drives up anew around the robot at
    ``pose`` (NMT reset, SDO configuration, state machine: ``emulated_robot``). Mutable: it is the robot."""

    def __init__(self, dyn, config: CanopenConfig, plant: SimulatedRobot, channel: str,
                 response_timeout: float = 5.0):
        self.dyn, self.plant, self.channel = dyn, plant, channel
        self.config = replace(config, interface="virtual", bus_options=())  # the site's drives, emulated here
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

    def drain_events(self) -> list:
        return [] if self.drives is None else self.drives.drain_events()

    def status(self) -> str:
        return "" if self.drives is None else self.drives.status()

    def diagnostic_statuses(self) -> list:
        return [] if self.drives is None else self.drives.diagnostic_statuses()

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


if __name__ == "__main__":
    raise SystemExit(main())
