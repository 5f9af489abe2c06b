"""CANopen CiA 402 drives behind the hardware contract (``hardware: canopen``), on python-canopen and python-can.

Start-up (``CanopenDrives.start``), as CiA 301 / CiA 402 prescribe for a master:

1. NMT reset communication to every drive, wait for each boot-up message (the drive is then pre-operational);
2. SDO configuration: modes of operation 0x6060 (CST 10, CSP 8, CSV 9), motor rated torque 0x6076 (mN m or mN),
   max torque 0x6072 (per mille of the rated torque: the force limit), quick stop option code 0x605A = 6 (stop on
   the quick stop ramp and stay in Quick stop active, holding), communication cycle period 0x1006 (the control
   period), producer heartbeat time 0x1017;
3. PDO mapping over SDO (RPDO1 controlword 0x6040, modes of operation 0x6060, target torque 0x6071; RPDO2 target
   position 0x607A and velocity 0x60FF in CSP / CSV; TPDO1 statusword 0x6041, modes display 0x6061, torque actual
   0x6077, error code 0x603F; TPDO2 position actual 0x6064, velocity actual 0x606C), all synchronous (transmission
   type 1: an RPDO applies at the next SYNC, a TPDO answers each SYNC);
4. NMT start (operational), then the CiA 402 state machine (``next_controlword``) through Switch on disabled ->
   Ready to switch on -> Switched on -> Operation enabled, one SYNC per step.

Each period: ``write`` puts the controlword and the command in drive units into the RPDOs and sends SYNC; ``read``
waits for every drive's TPDOs answering that SYNC (``response_timeout``, wall clock) and converts them to SI units
(``DriveScaling``). Supervision, checked at each ``read``: a drive whose heartbeat is older than the consumer time, a
drive with the statusword's fault bit (or out of Operation enabled on its own), a drive whose TPDOs did not come
(stale data): the interface latches ``safe_active`` with the reason and sends quick stop (controlword 0x0002) to
every drive from the next SYNC on; the drives hold (quick stop option 6) and the measurement of a silent drive stays
the last one, with its time, so the controller's state_timeout engages its own safe behaviour too. ``recover``
follows the state machine back: fault reset (rising edge of controlword bit 7) -> Switch on disabled -> shutdown ->
switch on -> enable operation. A drive that stops receiving SYNC (the master hung, a stale command) supervises that
itself: the emulated drives (hardware/canopen_emulator.py) go to Fault after 1.5 communication cycles without SYNC.

Time: the measurement answering the SYNC sent by ``write(command, time)`` carries ``time + dt`` (lockstep: the drive
samples at the next SYNC; on a real bus the TPDO is sampled at this SYNC and is one period older, one period of
transport delay the emulation leaves out). Heartbeat ages are measured on the same clock (the times of the SYNCs),
so a lockstep run supervises in sim time, deterministically; in real time the loop's clock is the wall clock.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import yaml

from ..control.safety import ForceLimits
from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, check_number, check_vector
from .interface import CommandCheck, HardwareInterface, JointMeasurement

# ---------------------------------------------------------------------------------------------- CiA 402 (DS 402)
#: modes of operation 0x6060
MODES = {"csp": 8, "csv": 9, "cst": 10}
COMMAND_INTERFACE = {"cst": "effort", "csp": "position", "csv": "velocity"}
#: controlword 0x6040 commands (bits 0 switch on, 1 enable voltage, 2 quick stop (active low), 3 enable operation,
#: 7 fault reset), CiA 402 table "command coding"
SHUTDOWN, SWITCH_ON, ENABLE_OPERATION, DISABLE_VOLTAGE, QUICK_STOP, FAULT_RESET = 0x06, 0x07, 0x0F, 0x00, 0x02, 0x80
#: statusword 0x6041 states: (mask, value), CiA 402 table "state coding"
STATES = (("not ready to switch on", 0x4F, 0x00), ("switch on disabled", 0x4F, 0x40),
          ("ready to switch on", 0x6F, 0x21), ("switched on", 0x6F, 0x23), ("operation enabled", 0x6F, 0x27),
          ("quick stop active", 0x6F, 0x07), ("fault reaction active", 0x4F, 0x0F), ("fault", 0x4F, 0x08))
STATUSWORD = {name: value for name, _, value in STATES}
FAULT_BIT = 0x08
QUICK_STOP_OPTION_HOLD = 6          # 0x605A: stop on the quick stop ramp, stay in Quick stop active


def drive_state(statusword: int) -> str:
    """The CiA 402 state a statusword codes."""
    for name, mask, value in STATES:
        if statusword & mask == value:
            return name
    return f"unknown (statusword 0x{statusword:04X})"


def next_controlword(state: str, last: int = 0) -> int:
    """The controlword that moves a drive in ``state`` one transition towards Operation enabled (``last``: the
    controlword sent before, for the rising edge of fault reset)."""
    if state in ("fault", "fault reaction active"):
        return DISABLE_VOLTAGE if last & FAULT_RESET else FAULT_RESET      # bit 7 needs a rising edge (15)
    if state in ("switch on disabled", "not ready to switch on", "quick stop active"):
        return SHUTDOWN if state == "switch on disabled" else DISABLE_VOLTAGE   # (2); (12) back to SOD
    if state == "ready to switch on":
        return SWITCH_ON                          # (3)
    return ENABLE_OPERATION                      # switched on (4), operation enabled (stays)


# ---------------------------------------------------------------------------------------------- configuration
@dataclass(frozen=True)
class DriveScaling:
    """One drive: its node id and the scaling from SI units to drive units."""

    joint: str
    node_id: int
    rated_torque: float          # N or N m (0x6076 holds it in mN or mN m); torques travel in per mille of it
    increments_per_unit: float   # encoder increments per m or rad (positions in inc, velocities in inc/s)

    def to_permille(self, tau: float) -> int:
        return int(round(tau / self.rated_torque * 1000.0))

    def from_permille(self, value: int) -> float:
        return value * self.rated_torque / 1000.0

    def to_increments(self, x: float) -> int:
        return int(round(x * self.increments_per_unit))

    def from_increments(self, value: int) -> float:
        return value / self.increments_per_unit


@dataclass(frozen=True)
class CanopenConfig:
    """config/canopen/<robot>.yaml for the model's actuated joints (README "CANopen CiA 402 drives")."""

    interface: str
    channel: str
    bitrate: int
    eds: str
    mode: str
    producer_time: float
    consumer_time: float
    drives: tuple                 # DriveScaling per actuated joint, model order

    @classmethod
    def load(cls, path, actuated_names) -> "CanopenConfig":
        path = Path(path)
        try:
            doc = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise InvalidModelError(f"CANopen config {str(path)!r} cannot be read: {exc}") from exc
        return cls.from_dict(doc, actuated_names, path.parent)

    @classmethod
    def for_robot(cls, robot: str, actuated_names, path: str = "") -> "CanopenConfig":
        """The robot's shipped config/canopen/<robot>.yaml, or ``path``."""
        from ..description.paths import share_dir

        return cls.load(path or share_dir() / "config" / "canopen" / f"{robot}.yaml", actuated_names)

    @classmethod
    def from_dict(cls, doc: dict, actuated_names, base: Path = Path(".")) -> "CanopenConfig":
        def need(d, key, where):
            if not isinstance(d, dict) or key not in d:
                raise InvalidModelError(f"CANopen config: {where} needs '{key}'")
            return d[key]

        bus, hb, drives = (need(doc, key, "the file") for key in ("bus", "heartbeat", "drives"))
        mode = str(doc.get("mode", "cst"))
        if mode not in MODES:
            raise InvalidModelError(f"CANopen config: mode {mode!r} is not one of {tuple(MODES)}")
        eds = Path(need(doc, "eds", "the file"))
        eds = eds if eds.is_absolute() else base / eds
        if not eds.is_file():
            raise InvalidModelError(f"CANopen config: EDS file {str(eds)!r} does not exist")
        out, ids = [], set()
        for name in actuated_names:
            d = drives.get(name) if isinstance(drives, dict) else None
            if d is None:
                raise InvalidModelError(f"CANopen config: no drive for actuated joint {name!r} under 'drives'")
            node_id = need(d, "node_id", f"drive {name}")
            if isinstance(node_id, bool) or not isinstance(node_id, int) or not 1 <= node_id <= 127 or node_id in ids:
                raise InvalidModelError(f"CANopen config: drive {name} node_id {node_id!r} must be a distinct "
                                        "integer in 1..127")
            ids.add(node_id)
            rated = check_number(f"drive {name} rated_torque", need(d, "rated_torque", f"drive {name}"))
            inc = check_number(f"drive {name} increments_per_unit", need(d, "increments_per_unit", f"drive {name}"))
            if not (rated > 0 and inc > 0):
                raise InvalidModelError(f"CANopen config: drive {name} rated_torque {rated} and increments_per_unit "
                                        f"{inc} must be > 0")
            out.append(DriveScaling(name, node_id, rated, inc))
        producer = check_number("heartbeat producer_time", need(hb, "producer_time", "heartbeat"))
        consumer = check_number("heartbeat consumer_time", need(hb, "consumer_time", "heartbeat"))
        if not 0 < producer < consumer:
            raise InvalidModelError(f"CANopen config: heartbeat needs 0 < producer_time ({producer}) < consumer_time "
                                    f"({consumer})")
        return cls(str(need(bus, "interface", "bus")), str(need(bus, "channel", "bus")),
                   int(need(bus, "bitrate", "bus")), str(eds), mode, producer, consumer, tuple(out))

    def bus_kwargs(self, channel: str | None = None) -> dict:
        return {"interface": self.interface, "channel": channel or self.channel, "bitrate": self.bitrate}


# ---------------------------------------------------------------------------------------------- the master
class CanopenDrives(HardwareInterface):
    """The robot's CiA 402 drives on a CAN bus (module docstring). ``start()`` brings them to Operation enabled.

    force_limits: a ForceLimits (the command's saturation, written as 0x6072 max torque), or None (the rated
    torques' int16 range). response_timeout: wall seconds ``read`` waits for the TPDOs of the last SYNC.
    """

    def __init__(self, config: CanopenConfig, dt: float, force_limits: ForceLimits | None = None,
                 response_timeout: float = 1.0, channel: str | None = None, sdo_timeout: float = 1.0):
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"dt must be > 0 s, got {dt}")
        self.config, self.dt = config, float(dt)
        self.drives = config.drives
        self.actuated_names = tuple(d.joint for d in self.drives)
        self.command_interface = COMMAND_INTERFACE[config.mode]
        self.force_limits = force_limits
        self._check = CommandCheck(self.actuated_names, force_limits)
        self.response_timeout, self.sdo_timeout = float(response_timeout), float(sdo_timeout)
        self.channel = channel
        n = len(self.drives)
        self.saturated = np.zeros(n, bool)
        self.statusword = np.zeros(n, int)
        self.error_code = np.zeros(n, int)
        self.safe_reason = None            # why the drives were quick-stopped (latched until recover)
        self.network = None
        self.time = None                   # time of the latest SYNC
        self._meas = None                  # the measurement answering the last SYNC, once read
        self._last = None                  # the latest measurement (a silent drive keeps its values)
        self._cond = threading.Condition()
        self._received = np.zeros(n, int)  # TPDOs of the last SYNC received per drive
        self._heartbeat = np.full(n, -np.inf)
        self._booted = [threading.Event() for _ in range(n)]
        self._controlword = np.zeros(n, int)

    # ------------------------------------------------------------------ start-up
    def start(self, time: float = 0.0, max_steps: int = 16) -> JointMeasurement:
        """NMT, SDO configuration, PDO mapping, NMT start, state machine to Operation enabled (module docstring);
        the drives' first measurement. InvalidInputError when a drive does not answer or refuses a step."""
        import canopen

        self.time = float(time) - self.dt        # the first SYNC at ``time``
        net = canopen.Network()
        try:
            net.connect(**self.config.bus_kwargs(self.channel))
        except Exception as exc:       # noqa: BLE001 - python-can raises many types for an absent bus
            raise InvalidInputError(f"CAN bus {self.config.interface}:{self.channel or self.config.channel} cannot be "
                                    f"opened: {type(exc).__name__}: {exc}") from exc
        self.network = net
        self.nodes = []
        for i, d in enumerate(self.drives):
            node = canopen.RemoteNode(d.node_id, canopen.import_od(self.config.eds, d.node_id))
            node.sdo.RESPONSE_TIMEOUT = self.sdo_timeout
            net.add_node(node)
            node.nmt.add_heartbeat_callback(lambda state, i=i: self._on_heartbeat(i, state))
            node.tpdo[1].add_callback(self._on_tpdo)
            node.tpdo[2].add_callback(self._on_tpdo)
            self.nodes.append(node)
        for i, node in enumerate(self.nodes):                   # 1. boot-up
            self._booted[i].clear()
            node.nmt.send_command(0x82)                         # reset communication
            if not self._booted[i].wait(self.sdo_timeout):
                raise InvalidInputError(f"drive {self.drives[i].joint} (node {self.drives[i].node_id}) sent no boot-up "
                                        f"within {self.sdo_timeout} s after NMT reset communication")
        try:
            for node, d in zip(self.nodes, self.drives):       # 2., 3. SDO configuration, PDO mapping
                self._configure(node, d)
        except canopen.SdoError as exc:
            raise InvalidInputError(f"SDO configuration of the drives failed: {exc}") from exc
        for node in self.nodes:                                 # 4. operational
            node.nmt.send_command(0x01)
        self._heartbeat[:] = self.time + self.dt                # supervision starts now
        return self.recover(max_steps)

    def _configure(self, node, d: DriveScaling):
        cfg = self.config
        limit = None if self.force_limits is None else self.force_limits.limits[self.actuated_names.index(d.joint)]
        node.sdo[0x6060].raw = MODES[cfg.mode]
        node.sdo[0x6076].raw = int(round(d.rated_torque * 1000.0))             # mN m or mN
        node.sdo[0x6072].raw = min(0xFFFF, 32767 if limit is None else d.to_permille(limit))
        node.sdo[0x605A].raw = QUICK_STOP_OPTION_HOLD
        node.sdo[0x1006].raw = int(round(self.dt * 1e6))                       # us
        node.sdo[0x1017].raw = int(round(cfg.producer_time * 1000.0))          # ms
        rpdo = [[0x6040, 0x6060, 0x6071], [0x607A, 0x60FF]]
        tpdo = [[0x6041, 0x6061, 0x6077, 0x603F], [0x6064, 0x606C]]
        for pdo, maps, used in ((node.rpdo, rpdo, (True, cfg.mode != "cst")), (node.tpdo, tpdo, (True, True))):
            pdo.read()
            for k, (objects, on) in enumerate(zip(maps, used), start=1):
                m = pdo[k]
                m.clear()
                for index in objects:
                    m.add_variable(index)
                m.trans_type, m.enabled = 1, on
            pdo.save()

    def _on_heartbeat(self, i: int, state: int):
        if state == 0:
            self._booted[i].set()
        self._heartbeat[i] = self.time if self.time is not None else -np.inf

    def _on_tpdo(self, _map):
        node_id = _map.cob_id & 0x7F
        with self._cond:
            for i, d in enumerate(self.drives):
                if d.node_id == node_id:
                    self._received[i] += 1
            self._cond.notify_all()

    # ------------------------------------------------------------------ one period
    def _sync(self, controlwords, targets=None, time: float | None = None):
        """RPDOs (controlword, target in drive units) then SYNC: the drives apply them and answer."""
        with self._cond:
            self._received[:] = 0
        self.time = self.time + self.dt if time is None else float(time)
        for i, node in enumerate(self.nodes):
            r1 = node.rpdo[1]
            r1[0x6040].raw = int(controlwords[i])
            r1[0x6060].raw = MODES[self.config.mode]
            r1[0x6071].raw = 0 if targets is None or self.command_interface != "effort" else int(targets[i])
            r1.transmit()
            if self.command_interface != "effort":
                r2 = node.rpdo[2]
                key = 0x607A if self.command_interface == "position" else 0x60FF
                r2[key].raw = 0 if targets is None else int(targets[i])
                r2.transmit()
        self._controlword[:] = controlwords
        self.network.sync.transmit()
        self._meas = None

    def _collect(self) -> np.ndarray:
        """Wait for the TPDOs of the last SYNC; the mask of the drives that answered in full."""
        with self._cond:
            self._cond.wait_for(lambda: (self._received >= 2).all(), self.response_timeout)
            return self._received >= 2

    def read(self) -> JointMeasurement:
        self._require()
        if self._meas is not None:
            return self._meas
        fresh = self._collect()
        prev = self._last
        q = np.zeros(len(self.drives)) if prev is None else prev.position.copy()
        qd = np.zeros_like(q) if prev is None else prev.velocity.copy()
        tau = np.zeros_like(q) if prev is None else prev.effort.copy()
        for i, (node, d) in enumerate(zip(self.nodes, self.drives)):
            if not fresh[i]:
                continue
            t1, t2 = node.tpdo[1], node.tpdo[2]
            self.statusword[i], self.error_code[i] = t1[0x6041].raw, t1[0x603F].raw
            tau[i] = d.from_permille(t1[0x6077].raw)
            q[i], qd[i] = d.from_increments(t2[0x6064].raw), d.from_increments(t2[0x606C].raw)
        self._supervise(fresh)
        t = self.time + self.dt if fresh.all() or prev is None else prev.time
        self._meas = self._last = JointMeasurement(t, q, qd, tau)
        return self._meas

    def _supervise(self, fresh):
        """Latch the first reason to quick-stop (module docstring)."""
        if self.safe_reason is not None:
            return
        for i, d in enumerate(self.drives):
            name = f"drive {d.joint} (node {d.node_id})"
            age = self.time - self._heartbeat[i]
            state = drive_state(int(self.statusword[i]))
            if not fresh[i]:
                why = f"{name}: no TPDO within {self.response_timeout} s of the SYNC at {self.time:.6f} s (stale data)"
            elif age > self.config.consumer_time:
                why = f"{name}: heartbeat lost ({age:.4f} s > consumer time {self.config.consumer_time} s)"
            elif self.statusword[i] & FAULT_BIT:
                why = f"{name}: fault, error code 0x{int(self.error_code[i]):04X} ({state})"
            elif state != "operation enabled":
                why = f"{name}: left operation enabled ({state})"
            else:
                continue
            self.safe_reason = f"quick stop at {self.time:.6f} s: {why}"
            return

    @property
    def safe_active(self) -> bool:
        return self.safe_reason is not None

    @property
    def states(self) -> tuple:
        """The CiA 402 state of every drive as of the last read."""
        return tuple(drive_state(int(s)) for s in self.statusword)

    def write(self, command, time: float | None = None) -> None:
        """Command the drives (``command_interface``) and send SYNC. Efforts: checked (CommandCheck: NaN, size,
        beyond REFUSE_FACTOR x the limit raise and send nothing), saturated at the force limits (``saturated``),
        in per mille of the rated torque. Positions / velocities (CSP / CSV): finite, in increments. After a
        supervision event every drive gets quick stop instead (``safe_reason``) until ``recover``."""
        self._require()
        if self.command_interface == "effort":
            tau = self._check(command)
            if self.force_limits is not None:
                tau, self.saturated = self.force_limits.apply(tau)
            targets = [d.to_permille(x) for d, x in zip(self.drives, tau)]
        else:
            x = check_vector(f"target {self.command_interface}s", command, len(self.drives), MAGNITUDE_LIMIT)
            targets = [d.to_increments(v) for d, v in zip(self.drives, x)]
        words = np.full(len(self.drives), QUICK_STOP if self.safe_active else ENABLE_OPERATION)
        self._sync(words, None if self.safe_active else targets, time)

    def recover(self, max_steps: int = 16) -> JointMeasurement:
        """Back to Operation enabled along the CiA 402 state machine (``next_controlword``, one SYNC per step, the
        torque each drive measured as the target: enabled, it goes on holding), clearing the latched quick stop;
        InvalidInputError if a drive does not get there."""
        self._require()
        if self._last is None:                  # nothing heard yet: disable voltage is allowed in every state
            self._sync([DISABLE_VOLTAGE] * len(self.drives))
        for _ in range(max_steps):
            meas = self.read()
            self.safe_reason = None             # on the way through the states: supervised again once enabled
            if all(s == "operation enabled" for s in self.states):
                return meas
            hold = [d.to_permille(x) for d, x in zip(self.drives, meas.effort)]   # bumpless: the force holding now
            self._sync([next_controlword(s, int(c)) for s, c in zip(self.states, self._controlword)], hold)
        raise InvalidInputError(f"drives not in operation enabled after {max_steps} SYNC periods: "
                                f"{dict(zip(self.actuated_names, self.states))}")

    def _require(self):
        if self.network is None:
            raise InvalidInputError("the CANopen drives are not started: call start() first")

    def close(self) -> None:
        """Disable voltage on every drive (one last SYNC), NMT pre-operational (PDOs off), the bus closed."""
        if self.network is None:
            return
        try:
            self._sync([DISABLE_VOLTAGE] * len(self.drives))
            for node in self.nodes:
                node.nmt.send_command(0x80)                    # pre-operational: PDOs off
        finally:
            self.network.disconnect()
            self.network = None
