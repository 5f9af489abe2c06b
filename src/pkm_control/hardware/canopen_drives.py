"""CANopen CiA 402 drives behind the hardware contract (``hardware: canopen``), on python-canopen and python-can.

Start-up (``CanopenDrives.start``), as CiA 301 / CiA 402 prescribe for a master:

1. NMT reset communication to every drive, wait for each boot-up message (the drive is then pre-operational);
2. identification: device type 0x1000 (CiA 402 device profile), supported drive modes 0x6502 (the configured mode)
   and, where the configuration names them, the identity object 0x1018 (vendor id, product code): a drive that does
   not match is refused, naming its node; motor rated torque 0x6076 is read (a motor parameter, read-only on real
   drives) and becomes the drive's torque scaling (a configured ``rated_torque`` must agree with it);
3. SDO configuration: modes of operation 0x6060 (CST 10, CSP 8, CSV 9), max torque 0x6072 (per mille of the rated
   torque: the force limit), the units: the configuration's polarity 0x607E, home offset 0x607C, position factor
   0x6093 (or the factor group 0x608F, 0x6091, 0x6092) and velocity factor 0x6096 written where it gives them, then
   all read back: the conversion to SI (``DriveScaling``) uses the drive's; quick stop option code 0x605A = 6
   (stop on the quick stop ramp and stay in Quick stop active, holding), communication cycle period 0x1006 (the
   control period), synchronous window length 0x1007 = 0 (not used) where the drive has it: this master sends each
   period's RPDOs right before its SYNC, a cycle after the last SYNC, so a drive with a window shorter than the
   cycle (a vendor default) would discard every one of them (CiA 301: synchronous RPDOs after the window are
   discarded until the next SYNC) and keep its old targets; producer heartbeat time 0x1017. An
   SDO abort is an InvalidInputError naming the drive, the object (index:subindex) and the abort code with
   its CiA 301 meaning (CiA 301 §7.2.4.3.17);
4. PDO mapping over SDO (RPDO1 controlword 0x6040, modes of operation 0x6060, target torque 0x6071; RPDO2 target
   position 0x607A and velocity 0x60FF in CSP / CSV; TPDO1 statusword 0x6041, modes display 0x6061, torque actual
   0x6077, error code 0x603F; TPDO2 position actual 0x6064, velocity actual 0x606C), all synchronous (transmission
   type 1: an RPDO applies at the next SYNC, a TPDO answers each SYNC); every other PDO the drive has (RPDO2 in CST,
   PDOs 3 and 4 of a drive that offers them) is disabled;
5. the absolute encoders agree with an assembled pose (``check_assembly``, when the master has the robot's
   kinematics): each drive's position actual value 0x6064, read over SDO, in SI; forward kinematics from the robot's
   home must converge, the closure residual |q_a(x) - q_a| (the least-squares misfit of redundant actuation) stay
   within ``assembly_tolerance`` and every joint be inside its limits, or no drive is enabled and the error names
   the drives with their measured values and misfits (a mis-mounted encoder, a wrong home offset);
6. NMT start (operational), then the CiA 402 state machine (``recover``) to Operation enabled (``start(enable=False)``:
   left to the caller's first period, so a drive's SYNC supervision begins when the loop's SYNCs do).

Before all this (the constructor), the bus load (``BusLoad``): SYNC, PDOs and heartbeats at the control rate in bits
with worst-case stuffing against the bitrate; beyond ``max_bus_load`` (80 %) the configuration is refused with what
would fit (a lower rate, the drives over several buses, the PDO count of each mode). PaLiDA in CST on 1 Mbit/s: at
most 336 Hz (2 kHz would need 4.5 times the bitrate). python-can's ``virtual`` bus (in one process) has no bitrate.

Each period: ``write`` puts the controlword and the command in drive units into the RPDOs and sends SYNC; ``read``
waits for every drive's TPDOs answering that SYNC (``response_timeout``, wall clock) and converts them to SI units
(``DriveScaling``). From NMT start on, the master reads the bus in the caller's thread (``poll``, from ``read`` and
``recover``): python-canopen's bus thread only serves the start-up's SDO transfers, so nothing competes with a
real-time loop for the interpreter; both sides take only the frames CiA 301's predefined connection set sends them
(receive filters: a multicast bus echoes a node's own frames).
Supervision, checked at each ``read``: a drive whose last heartbeat is older than the consumer
time (CiA 301 §7.2.8.3.2.2: the consumer measures the interval since the last heartbeat it received, on its own
clock: ``clock``, the wall clock of this process on a real bus), a drive with the statusword's fault bit (or out of
Operation enabled on its own), a drive that sent a communication EMCY (0x81xx: it lost SYNC or the master's
heartbeat and acted on its own, even if the next enable operation took it back), a drive whose TPDOs did not come
(stale data): the interface latches ``safe_active``
with the first reason and sends quick stop (controlword 0x0002) to every drive from the next SYNC on; the drives hold
(quick stop option 6) and the measurement of a silent drive stays the last one, with its time, so the controller's
state_timeout engages its own safe behaviour too. Supervision goes on after the first reason: every later problem of
a drive, and every EMCY frame a drive sends (CiA 301 §7.2.7), is one line in ``events`` (drained by the caller).

The other way: each drive consumes the master's heartbeat (0x1016:01: ``heartbeat.master_node_id``, default 127, and
the consumer time), which the master produces from its loop (``_sync``, every producer time on ``clock``): a master
that hangs stops producing it, and the drives quick-stop by themselves (abort connection option 0x6007 = 3, CiA 402).

``recover`` follows the state machine back, every drive at the same SYNC: fault reset (rising edge of controlword
bit 7, transition 15) -> Switch on disabled -> shutdown (2) -> switch on (3); a drive in Quick stop active stays
there (quick stop) until every other drive is Switched on, then all get enable operation together (4, and 16 from
Quick stop active: back to Operation enabled without removing power). The targets on the way hold what the drive
does: the measured torque (CST), the actual position 0x6064 into 0x607A (CSP: the target is absolute), zero velocity
(CSV), so enabling moves nothing. A drive that makes no transition within ``transition_timeout`` seconds (a
persistent fault) stops the recovery: every other drive stays in (or is brought to) Quick stop active, none is
enabled, the quick stop stays latched (the loop's safe behaviour stays engaged), and the error names the drive. A
drive that stops receiving SYNC (the master hung, a stale command) supervises that itself: the emulated drives
(hardware/canopen_emulator.py) go to Fault after 1.5 communication cycles without SYNC.

Time: the measurement answering the SYNC sent by ``write(command, time)`` carries ``time + dt`` (lockstep: the drive
samples at the next SYNC; on a real bus the TPDO is sampled at this SYNC and is one period older, one period of
transport delay the emulation leaves out). Heartbeat ages and transition timeouts are on ``clock``: the wall clock
(time.monotonic) on a real bus, the drives' own clock for drives emulated in this process in lockstep.
"""

from __future__ import annotations

import math
import threading
import time as _time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from ..control.safety import ForceLimits
from ..description.paths import read_user_yaml
from ..errors import MAGNITUDE_LIMIT, InvalidInputError, InvalidModelError, PkmError, check_number, check_vector
from ..kinematics.forward import forward_kinematics
from .canopen_supervision import DriveSupervision
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
COMMUNICATION_ERRORS = 0x8100       # EMCY error codes 0x81xx (CiA 301): SYNC, heartbeat / life guard lost
NMT_OPERATIONAL = 5                 # the heartbeat's state byte (CiA 301)
ABORT_CONNECTION_QUICK_STOP = 3     # 0x6007 (CiA 402): on a lost connection (the master's heartbeat) quick stop
MASTER_NODE_ID = 127                # the master's node id for its heartbeat (0x700 + id), unless configured
#: states from which enable operation reaches Operation enabled (4 from Switched on, 16 from Quick stop active)
ENABLEABLE = ("switched on", "quick stop active", "operation enabled")
DEVICE_PROFILE = 402                # 0x1000 bits 0-15: the device profile number
#: 0x6502 supported drive modes: the bit of each mode of operation (CiA 402: bit 7 csp, 8 csv, 9 cst)
SUPPORTED_MODE_BIT = {"csp": 7, "csv": 8, "cst": 9}


#: the PDO mapping (module docstring, 4.): RPDO1, RPDO2 (CSP / CSV only), TPDO1, TPDO2
RPDOS = ((0x6040, 0x6060, 0x6071), (0x607A, 0x60FF))
TPDOS = ((0x6041, 0x6061, 0x6077, 0x603F), (0x6064, 0x606C))
#: bytes of each mapped object, its CiA 402 data type (UNSIGNED16 controlword / statusword / error code, INTEGER8
#: modes, INTEGER16 torques, INTEGER32 positions and velocities)
OBJECT_BYTES = {0x6040: 2, 0x6060: 1, 0x6071: 2, 0x607A: 4, 0x60FF: 4,
                0x6041: 2, 0x6061: 1, 0x6077: 2, 0x603F: 2, 0x6064: 4, 0x606C: 4}
#: what each side takes from the bus (python-can receive filters, kernel filters on SocketCAN): CiA 301's predefined
#: connection set by function code (COB-ID bits 7-10); everything else, its own frames among them (a multicast bus
#: such as udp_multicast echoes them), is dropped before python-canopen decodes it: the master EMCY (and SYNC),
#: TPDO1-4, SDO responses, heartbeats; a drive NMT, SYNC, RPDO1-4, SDO requests, heartbeats (its master's)
FUNCTION_CODE = 0x780
MASTER_RECEIVES = ((0x080, FUNCTION_CODE), (0x180, FUNCTION_CODE), (0x280, FUNCTION_CODE), (0x380, FUNCTION_CODE),
                   (0x480, FUNCTION_CODE), (0x580, FUNCTION_CODE), (0x700, FUNCTION_CODE))
DRIVE_RECEIVES = ((0x000, 0x7FF), (0x080, 0x7FF), (0x200, FUNCTION_CODE), (0x300, FUNCTION_CODE),
                  (0x400, FUNCTION_CODE), (0x500, FUNCTION_CODE), (0x600, FUNCTION_CODE), (0x700, FUNCTION_CODE))


RECEIVE_BUFFER = 4 << 20     # bytes: a socket's receive buffer (the kernel caps it at net.core.rmem_max)


def open_bus(network, kwargs: dict, receives) -> None:
    """Connect a python-canopen network and take only ``receives`` ((COB-ID, mask) pairs, 11-bit) from the bus.
    A socket bus (SocketCAN, udp_multicast) gets a receive buffer of RECEIVE_BUFFER: the default (~200 kB, ~250
    frames) fills while a loaded machine keeps the bus thread from running for ~50 ms, and the kernel then drops
    frames (a TPDO lost: the loop waited its response timeout). python-can has no option for it."""
    import socket

    network.connect(**kwargs)
    bus = network.bus
    bus.set_filters([{"can_id": can_id, "can_mask": mask, "extended": False} for can_id, mask in receives])
    sock = getattr(bus, "socket", None) or getattr(getattr(bus, "_multicast", None), "_socket", None)
    if isinstance(sock, socket.socket):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER)


ASSEMBLY_TOLERANCE = 1e-4   # m, rad: the encoders' closure residual allowed before enable (100 increments of 1 um)
MAX_BUS_LOAD = 0.8     # default share of the bitrate the cyclic traffic may take: the rest for SDO, EMCY, NMT


def frame_bits(data_bytes: int) -> int:
    """Bits on the bus of one classic CAN frame with an 11-bit identifier and ``data_bytes`` bytes, worst-case bit
    stuffing and the 3-bit interframe space: 47 + 8 n + floor((33 + 8 n) / 4) (Davis, Burns, Bril, Lukkien 2007,
    "Controller Area Network (CAN) schedulability analysis: refuted, revisited and revised", eq. (1) with g = 34;
    135 bits for 8 bytes)."""
    return 47 + 8 * data_bytes + (33 + 8 * data_bytes) // 4


@dataclass(frozen=True)
class BusLoad:
    """The cyclic traffic of the drives on one bus at one control rate (``of``)."""

    rate: float            # Hz, SYNC and PDOs once per period
    bitrate: int           # bit/s
    drives: int
    pdos: int              # PDOs per drive and period (RPDOs and TPDOs)
    drive_bits: int        # bits per drive and period (its PDOs, worst-case stuffing)
    heartbeat_bits: float  # bit/s of one heartbeat (each drive's and the master's)
    limit: float           # the share of the bitrate allowed (max_bus_load)

    @classmethod
    def of(cls, config: "CanopenConfig", rate: float) -> "BusLoad":
        pdos = (RPDOS if config.mode != "cst" else RPDOS[:1]) + TPDOS
        return cls(float(rate), config.bitrate, len(config.drives), len(pdos),
                   sum(frame_bits(sum(OBJECT_BYTES[i] for i in pdo)) for pdo in pdos),
                   frame_bits(1) / config.producer_time, config.max_bus_load)

    def _bits_per_second(self, drives: int, rate: float) -> float:
        return (frame_bits(0) + drives * self.drive_bits) * rate + (drives + 1) * self.heartbeat_bits

    @property
    def load(self) -> float:
        """The share of the bitrate taken: SYNC and PDOs every period, the heartbeats."""
        return self._bits_per_second(self.drives, self.rate) / self.bitrate

    @property
    def max_rate(self) -> float:
        """Hz: the highest control rate within the limit on this bus."""
        budget = self.limit * self.bitrate - (self.drives + 1) * self.heartbeat_bits
        return max(0.0, budget / (frame_bits(0) + self.drives * self.drive_bits))

    def summary(self) -> str:
        return (f"CAN bus load {100 * self.load:.0f} % of {self.bitrate / 1e6:g} Mbit/s at {self.rate:g} Hz (SYNC and "
                f"{self.pdos} PDOs of each of {self.drives} drives per period, "
                f"{frame_bits(0) + self.drives * self.drive_bits} bits with worst-case stuffing, and the heartbeats of "
                f"the drives and the master; "
                f"limit {100 * self.limit:.0f} %: at most {self.max_rate:.0f} Hz)")

    def check(self):
        """InvalidInputError saying what fits when the traffic exceeds the limit."""
        if self.load <= self.limit:
            return
        per_bus = int((self.limit * self.bitrate - frame_bits(0) * self.rate - self.heartbeat_bits)
                      // (self.drive_bits * self.rate + self.heartbeat_bits))
        split = (f"the drives split over {math.ceil(self.drives / per_bus)} buses of {self.bitrate / 1e6:g} Mbit/s "
                 f"({per_bus} drives each, a SYNC on each)" if per_bus > 0 else
                 f"not even one drive per bus of {self.bitrate / 1e6:g} Mbit/s")
        raise InvalidInputError(
            f"{self.summary()}: the configuration cannot run. It fits with control_rate <= {self.max_rate:.0f} Hz "
            f"on this bus; or {split}; or a faster bus; mode cst needs {1 + len(TPDOS)} PDOs per drive and period, "
            f"csp / csv {len(RPDOS) + len(TPDOS)}; CAN FD (one 64-byte PDO each way per drive) is not supported by "
            "python-canopen")


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
    if state == "switch on disabled":
        return SHUTDOWN                           # (2)
    if state == "not ready to switch on":
        return DISABLE_VOLTAGE                    # the drive moves on by itself (1)
    if state == "ready to switch on":
        return SWITCH_ON                          # (3)
    return ENABLE_OPERATION                      # switched on (4), quick stop active (16), operation enabled


def sdo_abort_text(exc) -> str:
    """An SDO failure in words: the abort code with its CiA 301 meaning (§7.2.4.3.17, python-canopen's table), or
    the communication error (no answer)."""
    code = getattr(exc, "code", None)
    if code is None:
        return f"no SDO answer ({exc})"
    meaning = type(exc).CODES.get(code, "no meaning in CiA 301's table (manufacturer-specific)")
    return f"abort code 0x{code:08X}: {meaning}"


def check_assembly(kin, drives, q_actuated, tolerance: float):
    """The platform pose the measured actuated positions ``q_actuated`` (SI, one per drive of ``drives``, model order)
    assemble to: forward kinematics from the robot's home pose (as the state estimator's cold start) converges, the
    closure residual |q_a(x) - q_a| is within ``tolerance`` (m and rad; nonzero only under redundant actuation: more
    encoders than the platform's freedoms) and every joint is inside its limits (kin.inverse). InvalidInputError
    naming every drive with its measured position and its misfit q_a - q_a(x) otherwise."""
    q = np.asarray(q_actuated, float)
    try:
        fk = forward_kinematics(kin, q, kin.home_pose(), tol=1e-10, max_iter=100, check_limits=False)
        misfit = q - kin.actuated(fk.pose)
        if fk.residual <= tolerance:
            kin.inverse(fk.pose)                    # JointLimitError: a joint outside its limits
            return fk.pose
        why = f"closure residual {fk.residual:.6g} > assembly_tolerance {tolerance:g} (m, rad)"
    except PkmError as exc:
        misfit, why = None, f"{type(exc).__name__}: {exc}"
    values = "; ".join(f"{d.name} = {x:.6f}" + ("" if misfit is None else f" (misfit {m:+.6f})")
                       for d, x, m in zip(drives, q, q if misfit is None else misfit))
    raise InvalidInputError(f"the absolute encoders do not agree with an assembled pose, no drive enabled: {why}; "
                            f"measured position actual values 0x6064 (m or rad): {values}")


# ---------------------------------------------------------------------------------------------- configuration
#: CiA 301 identity object 0x1018: the subindex of each entry a configuration may require
IDENTITY = {"vendor_id": 1, "product_code": 2, "revision_number": 3}


def _units(name: str, d: dict) -> tuple:
    """The unit objects a drive's entry writes ((index, subindex, value), ...): ``polarity`` 0x607E (bits 7, 6),
    ``home_offset`` 0x607C (position units), ``velocity_factor`` 0x6096 [numerator, divisor], and either
    ``position_factor`` 0x6093 [numerator, divisor] or the factor group (``FACTOR_GROUP``, all three) with 0x6093 =
    0x608F x 0x6091 / 0x6092 (CiA 402), reduced. Keys left out: the drive's own values, read at start-up."""
    def integer(key, value, low, high):
        if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
            raise InvalidModelError(f"CANopen config: drive {name} {key} {value!r} must be an integer in "
                                    f"{low}..{high}")
        return value

    def ratio(key):
        value = d[key]
        if not isinstance(value, (list, tuple)) or len(value) != 2:
            raise InvalidModelError(f"CANopen config: drive {name} {key} must be [subindex 1, subindex 2], got "
                                    f"{value!r}")
        return tuple(integer(key, v, 1, 0xFFFFFFFF) for v in value)

    out = []
    if "polarity" in d:
        out.append((POLARITY, 0, integer("polarity", d["polarity"], 0, POSITION_POLARITY | VELOCITY_POLARITY)))
    if "home_offset" in d:
        out.append((HOME_OFFSET, 0, integer("home_offset", d["home_offset"], -2 ** 31, 2 ** 31 - 1)))
    group = [key for key in FACTOR_GROUP if key in d]
    if group and (len(group) < len(FACTOR_GROUP) or "position_factor" in d):
        raise InvalidModelError(f"CANopen config: drive {name} takes either position_factor or all of "
                                f"{tuple(FACTOR_GROUP)}, got {tuple(k for k in d if k in FACTOR_GROUP)}"
                                f"{' and position_factor' if 'position_factor' in d else ''}")
    if group:
        (inc, motor), (gear_motor, shaft), (feed, feed_shaft) = (ratio(key) for key in FACTOR_GROUP)
        for key, (a, b) in zip(FACTOR_GROUP, ((inc, motor), (gear_motor, shaft), (feed, feed_shaft))):
            out += [(FACTOR_GROUP[key], 1, a), (FACTOR_GROUP[key], 2, b)]
        num, div = inc * gear_motor * feed_shaft, motor * shaft * feed
        g = math.gcd(num, div)
        factor = (integer("position factor (from the factor group)", num // g, 1, 0xFFFFFFFF),
                  integer("position factor (from the factor group)", div // g, 1, 0xFFFFFFFF))
    else:
        factor = ratio("position_factor") if "position_factor" in d else None
    if factor is not None:
        out += [(POSITION_FACTOR, 1, factor[0]), (POSITION_FACTOR, 2, factor[1])]
    if "velocity_factor" in d:
        num, div = ratio("velocity_factor")
        out += [(VELOCITY_FACTOR, 1, num), (VELOCITY_FACTOR, 2, div)]
    return tuple(out)

#: CiA 402 polarity 0x607E: bit 7 position polarity (0x6064, 0x607A multiplied by -1; the torques 0x6071, 0x6077
#: follow it, as drives implement it: the torque's positive sense is the position's), bit 6 velocity polarity
#: (0x606C, 0x60FF multiplied by -1)
POSITION_POLARITY, VELOCITY_POLARITY = 0x80, 0x40
#: the CiA 402 factor group a drive's entry may set (key: index; each [subindex 1, subindex 2]): position encoder
#: resolution 0x608F (encoder increments, motor revolutions), gear ratio 0x6091 (motor revolutions, shaft
#: revolutions), feed constant 0x6092 (feed in position units, shaft revolutions); position factor 0x6093
#: = 0x608F x 0x6091 / 0x6092 (increments per position unit), velocity factor 0x6096 (increments/s per velocity unit)
FACTOR_GROUP = {"position_encoder_resolution": 0x608F, "gear_ratio": 0x6091, "feed_constant": 0x6092}
POSITION_FACTOR, VELOCITY_FACTOR, POLARITY, HOME_OFFSET = 0x6093, 0x6096, 0x607E, 0x607C


@dataclass(frozen=True)
class DriveScaling:
    """One drive: its node id and the conversion between SI units and its units, the one place where it is done.

    The drive's internal position is its encoder's, in increments (``increments_per_unit`` per m or rad of the
    joint, zero at the joint's zero); it speaks in position units (CiA 402 factor group):
        0x6064 = s_p * increments / position factor + home offset 0x607C,  position factor = 0x6093:01 / 0x6093:02
        0x606C = s_v * increments per second / velocity factor,              velocity factor = 0x6096:01 / 0x6096:02
        0x6077 = s_p * 1000 * torque / rated torque 0x6076
    with s_p = -1 when polarity 0x607E bit 7 is set, s_v likewise with bit 6 (else +1). The factors, polarity and home
    offset are the drive's: read at start-up (``with_units``), after writing those the configuration gives (``units``).
    """

    joint: str
    node_id: int
    rated_torque: float | None   # N or N m (0x6076 holds it in mN or mN m); torques travel in per mille of it;
                                 # None: the drive's 0x6076, read at start-up (the master's copy has it then)
    increments_per_unit: float   # encoder increments per m or rad of the joint
    eds: str = ""                # this drive's EDS or DCF ('': the configuration's ``eds``)
    position_factor: tuple = (1, 1)   # 0x6093 (numerator, divisor): increments per position unit
    velocity_factor: tuple = (1, 1)   # 0x6096 (numerator, divisor): increments/s per velocity unit
    polarity: int = 0                 # 0x607E
    home_offset: int = 0              # 0x607C, position units
    units: tuple = ()                 # ((index, subindex, value), ...): what the configuration writes to the drive

    @property
    def name(self) -> str:
        return f"drive {self.joint} (node {self.node_id})"

    def with_units(self, read) -> "DriveScaling":
        """This drive with the factors, polarity and home offset that ``read(index, subindex)`` finds (its object
        dictionary: an SDO upload from the master, the emulated drive's own)."""
        return replace(self, position_factor=(read(POSITION_FACTOR, 1), read(POSITION_FACTOR, 2)),
                       velocity_factor=(read(VELOCITY_FACTOR, 1), read(VELOCITY_FACTOR, 2)),
                       polarity=read(POLARITY, 0), home_offset=read(HOME_OFFSET, 0))

    @property
    def _sp(self) -> float:
        return -1.0 if self.polarity & POSITION_POLARITY else 1.0

    @property
    def _sv(self) -> float:
        return -1.0 if self.polarity & VELOCITY_POLARITY else 1.0

    def to_permille(self, tau: float) -> int:
        return int(round(self._sp * tau / self.rated_torque * 1000.0))

    def from_permille(self, value: int) -> float:
        return self._sp * value * self.rated_torque / 1000.0

    def to_position(self, x: float) -> int:
        num, div = self.position_factor
        return int(round(self._sp * x * self.increments_per_unit * div / num)) + self.home_offset

    def from_position(self, value: int) -> float:
        num, div = self.position_factor
        return self._sp * (value - self.home_offset) * num / div / self.increments_per_unit

    def to_velocity(self, v: float) -> int:
        num, div = self.velocity_factor
        return int(round(self._sv * v * self.increments_per_unit * div / num))

    def from_velocity(self, value: int) -> float:
        num, div = self.velocity_factor
        return self._sv * value * num / div / self.increments_per_unit


@dataclass(frozen=True)
class CanopenConfig:
    """config/canopen/<robot>.yaml for the model's actuated joints (docs/hardware.md "CANopen CiA 402 drives")."""

    interface: str
    channel: str
    bitrate: int
    eds: str
    mode: str
    producer_time: float
    consumer_time: float
    drives: tuple                 # DriveScaling per actuated joint, model order
    identity: tuple = ()          # ((0x1018 subindex, value), ...) every drive must show: vendor id, product code
    transition_timeout: float = 1.0   # s a drive may take for one CiA 402 transition (power stage, brake)
    bus_options: tuple = ()       # further python-can bus arguments ((name, value), ...): udp_multicast's port
    max_bus_load: float = MAX_BUS_LOAD   # share of the bitrate the SYNC, PDOs and heartbeats may take
    master_node_id: int = MASTER_NODE_ID  # the master's heartbeat, which the drives consume (0x1016)
    assembly_tolerance: float = ASSEMBLY_TOLERANCE   # m, rad: closure residual of the encoders at start-up

    @classmethod
    def load(cls, path, actuated_names) -> "CanopenConfig":
        path = Path(path)
        doc = read_user_yaml(path, "CANopen config", InvalidModelError) or {}
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
            rated = d.get("rated_torque")
            rated = None if rated is None else check_number(f"drive {name} rated_torque", rated)
            inc = check_number(f"drive {name} increments_per_unit", need(d, "increments_per_unit", f"drive {name}"))
            if not ((rated is None or rated > 0) and inc > 0):
                raise InvalidModelError(f"CANopen config: drive {name} rated_torque {rated} and increments_per_unit "
                                        f"{inc} must be > 0")
            own = d.get("eds", "")
            if own:
                own = Path(str(own)) if Path(str(own)).is_absolute() else base / str(own)
                if not own.is_file():
                    raise InvalidModelError(f"CANopen config: drive {name} EDS / DCF file {str(own)!r} does not exist")
            out.append(DriveScaling(name, node_id, rated, inc, str(own), units=_units(name, d)))
        producer = check_number("heartbeat producer_time", need(hb, "producer_time", "heartbeat"))
        consumer = check_number("heartbeat consumer_time", need(hb, "consumer_time", "heartbeat"))
        if not 0 < producer < consumer:
            raise InvalidModelError(f"CANopen config: heartbeat needs 0 < producer_time ({producer}) < consumer_time "
                                    f"({consumer})")
        master = hb.get("master_node_id", MASTER_NODE_ID)
        if isinstance(master, bool) or not isinstance(master, int) or not 1 <= master <= 127 or master in ids:
            raise InvalidModelError(f"CANopen config: heartbeat master_node_id {master!r} must be an integer in 1..127 "
                                    "that no drive has")
        identity = doc.get("identity") or {}
        unknown = set(identity) - set(IDENTITY)
        if not isinstance(identity, dict) or unknown:
            raise InvalidModelError(f"CANopen config: identity takes {tuple(IDENTITY)}, got {identity!r}")
        timeout = check_number("transition_timeout", doc.get("transition_timeout", 1.0))
        if not 0 < timeout <= 60:
            raise InvalidModelError(f"CANopen config: transition_timeout {timeout} s must be in (0, 60] s")
        max_load = check_number("max_bus_load", doc.get("max_bus_load", MAX_BUS_LOAD))
        if not 0 < max_load <= 1:
            raise InvalidModelError(f"CANopen config: max_bus_load {max_load} must be in (0, 1]")
        assembly = check_number("assembly_tolerance", doc.get("assembly_tolerance", ASSEMBLY_TOLERANCE))
        if not assembly > 0:
            raise InvalidModelError(f"CANopen config: assembly_tolerance {assembly} must be > 0 (m, rad)")
        options = tuple(sorted((str(k), v) for k, v in bus.items() if k not in ("interface", "channel", "bitrate")))
        return cls(str(need(bus, "interface", "bus")), str(need(bus, "channel", "bus")),
                   int(need(bus, "bitrate", "bus")), str(eds), mode, producer, consumer, tuple(out),
                   tuple((IDENTITY[k], int(v)) for k, v in sorted(identity.items())), timeout, options, max_load,
                   master, assembly)

    def bus_kwargs(self, channel: str | None = None) -> dict:
        return {"interface": self.interface, "channel": channel or self.channel, "bitrate": self.bitrate,
                **dict(self.bus_options)}


# ---------------------------------------------------------------------------------------------- the master
class CanopenDrives(DriveSupervision, HardwareInterface):
    """The robot's CiA 402 drives on a CAN bus (module docstring). ``start()`` brings them to Operation enabled.

    force_limits: a ForceLimits (the command's saturation, written as 0x6072 max torque), or None (the rated
    torques' int16 range). response_timeout: wall seconds ``read`` waits for the TPDOs of the last SYNC. clock: the
    heartbeat consumer's and the transition timeouts' clock in seconds (time.monotonic on a real bus). kin: the
    robot's ParallelKinematics: the encoders are checked against an assembled pose before enable (``check_assembly``);
    None: not checked.
    """

    def __init__(self, config: CanopenConfig, dt: float, force_limits: ForceLimits | None = None,
                 response_timeout: float = 1.0, channel: str | None = None, sdo_timeout: float = 1.0,
                 clock=_time.monotonic, kin=None):
        if not (np.isfinite(dt) and dt > 0):
            raise InvalidInputError(f"dt must be > 0 s, got {dt}")
        self.config, self.dt = config, float(dt)
        self.bus_load = BusLoad.of(config, 1.0 / self.dt)
        if config.interface != "virtual":       # python-can's in-process bus has no bitrate
            self.bus_load.check()
        self.drives = config.drives
        self.actuated_names = tuple(d.joint for d in self.drives)
        self.command_interface = COMMAND_INTERFACE[config.mode]
        self.force_limits = force_limits
        self._check = CommandCheck(self.actuated_names, force_limits)
        self.response_timeout, self.sdo_timeout = float(response_timeout), float(sdo_timeout)
        self.channel, self.clock, self.kin = channel, clock, kin
        self.assembled = None              # the pose the encoders assembled to at start-up (kin given)
        n = len(self.drives)
        self.saturated = np.zeros(n, bool)
        self.statusword = np.zeros(n, int)
        self.error_code = np.zeros(n, int)
        self.position_raw = np.zeros(n, int)  # 0x6064 as the drives sent it (CSP: the target that holds)
        self.safe_reason = None            # why the drives were quick-stopped (latched until recover)
        self.events = []                   # every drive problem and EMCY since the caller last drained it
        self.last_emcy = [None] * n        # per drive: (clock s, error code, register, words) of its last EMCY
        self.network = None
        self.time = None                   # time of the latest SYNC
        self._meas = None                  # the measurement answering the last SYNC, once read
        self._last = None                  # the latest measurement (a silent drive keeps its values)
        self._received = np.zeros(n, int)  # TPDOs of the last SYNC received per drive
        self._heartbeat = np.full(n, -np.inf)   # clock time of each drive's last heartbeat
        self._produced = -np.inf           # clock time of the master's last heartbeat
        self._lost = [0] * n               # per drive: the communication EMCY (0x81xx) it sent, until recover
        self._problem = [None] * n         # each drive's current supervision finding (a change is an event)
        self._booted = [threading.Event() for _ in range(n)]
        self._controlword = np.zeros(n, int)
        self._sdo_object = None            # (index, subindex) of the SDO transfer under way
        self._recovering = False           # recover() walks the state machine: its own timeout supervises

    # ------------------------------------------------------------------ start-up
    def start(self, time: float = 0.0, enable: bool = True) -> JointMeasurement | None:
        """NMT, identification, SDO configuration, PDO mapping, NMT start, state machine to Operation enabled
        (module docstring); the drives' first measurement. InvalidInputError when a drive does not answer, does not
        match the configuration or refuses a step. ``enable=False``: the drives stay in Switch on disabled (NMT
        operational, no SYNC sent yet, returns None) until the caller's loop enables them with ``recover(time)`` at
        its first period: a drive supervises SYNC once enabled (a window of about 1.5 communication cycles), and
        between a start-up and a loop that is still setting itself up nothing would send it."""
        import canopen

        self.time = float(time) - self.dt        # the first SYNC at ``time``
        net = canopen.Network()
        net.NOTIFIER_CYCLE = 0.02                # s: its bus thread stops within this once start-up is done
        try:
            open_bus(net, self.config.bus_kwargs(self.channel), MASTER_RECEIVES)
        except Exception as exc:       # noqa: BLE001 - python-can raises many types for an absent bus
            raise InvalidInputError(f"CAN bus {self.config.interface}:{self.channel or self.config.channel} cannot be "
                                    f"opened: {type(exc).__name__}: {exc}") from exc
        self.network = net
        self.nodes = []
        for i, d in enumerate(self.drives):
            node = canopen.RemoteNode(d.node_id, canopen.import_od(d.eds or self.config.eds, d.node_id))
            node.sdo.RESPONSE_TIMEOUT = self.sdo_timeout
            net.add_node(node)
            node.nmt.add_heartbeat_callback(lambda state, i=i: self._on_heartbeat(i, state))
            node.emcy.add_callback(lambda err, i=i: self._on_emcy(i, err))
            node.tpdo[1].add_callback(self._on_tpdo)
            node.tpdo[2].add_callback(self._on_tpdo)
            for name in ("upload", "download"):      # which object an SDO failure was about
                setattr(node.sdo, name, self._recording(getattr(node.sdo, name)))
            self.nodes.append(node)
        for i, node in enumerate(self.nodes):                   # 1. boot-up
            self._booted[i].clear()
            node.nmt.send_command(0x82)                         # reset communication
            if not self._booted[i].wait(self.sdo_timeout):
                raise InvalidInputError(f"{self.drives[i].name} sent no boot-up within {self.sdo_timeout} s after "
                                        "NMT reset communication")
        drives, q = [], []
        for node, d in zip(self.nodes, self.drives):            # 2.-4. identification, configuration, PDO mapping
            try:
                drives.append(self._configure(node, self._identify(node, d)))
                q.append(drives[-1].from_position(node.sdo[0x6064].raw))     # position actual, for 5.
            except (canopen.SdoAbortedError, canopen.SdoCommunicationError) as exc:
                index, sub = self._sdo_object or (0, 0)
                raise InvalidInputError(f"{d.name}: SDO access to object 0x{index:04X}:{sub:02X} failed, "
                                        f"{sdo_abort_text(exc)}") from exc
            except KeyError as exc:           # python-canopen: the object is not in the master's copy of the EDS
                raise InvalidInputError(f"{d.name}: {exc.args[0]} of its EDS / DCF {d.eds or self.config.eds!r}: "
                                        "the master configures it (docs/hardware.md, CANopen)") from exc
        self.drives = tuple(drives)
        if self.kin is not None:                                # 5. the encoders assemble
            self.assembled = check_assembly(self.kin, self.drives, q, self.config.assembly_tolerance)
        for node in self.nodes:                                 # 6. operational
            node.nmt.send_command(0x01)
        notifier, net.notifier = net.notifier, None             # from now on the loop reads the bus (``poll``)
        notifier.stop()
        self._heartbeat[:] = self.clock()                       # supervision starts now
        return self.recover() if enable else None

    def enable(self, time: float) -> str | None:
        """The hardware contract's first-period hook: drives started with ``enable=False`` to Operation enabled at
        the loop's first SYNC (``recover(time)``)."""
        if self._last is not None:         # enabled by start() already
            return None
        self.recover(time)
        return "CANopen drives in operation enabled"

    def _recording(self, transfer):
        def call(index, subindex, *args, **kwargs):
            self._sdo_object = (index, subindex)
            return transfer(index, subindex, *args, **kwargs)
        return call

    def _identify(self, node, d: DriveScaling) -> DriveScaling:
        """The drive is the configured one (device type 0x1000, supported modes 0x6502, identity 0x1018); its
        scaling with the rated torque 0x6076 it holds."""
        device_type, modes = node.sdo[0x1000].raw, node.sdo[0x6502].raw
        if device_type & 0xFFFF != DEVICE_PROFILE:
            raise InvalidInputError(f"{d.name}: device type 0x1000 = 0x{device_type:08X}, not a CiA 402 drive "
                                    f"(profile {device_type & 0xFFFF}, expected {DEVICE_PROFILE})")
        bit = SUPPORTED_MODE_BIT[self.config.mode]
        if not modes >> bit & 1:
            raise InvalidInputError(f"{d.name}: supported drive modes 0x6502 = 0x{modes:08X} lack {self.config.mode} "
                                    f"(bit {bit}), the configured mode")
        for sub, expected in self.config.identity:       # UNSIGNED32; the drive's, whatever the EDS lists
            value = int.from_bytes(node.sdo.upload(0x1018, sub)[:4], "little")
            if value != expected:
                raise InvalidInputError(f"{d.name}: identity 0x1018:{sub:02X} = 0x{value:08X}, the configuration "
                                        f"expects 0x{expected:08X}")
        rated = node.sdo[0x6076].raw / 1000.0                                   # mN m or mN
        if not rated > 0 or (d.rated_torque is not None and abs(rated - d.rated_torque) > 5e-4 * d.rated_torque):
            raise InvalidInputError(f"{d.name}: motor rated torque 0x6076 = {rated} (N or N m), the configuration "
                                    f"says {d.rated_torque}")
        return replace(d, rated_torque=rated)

    def _configure(self, node, d: DriveScaling) -> DriveScaling:
        """The SDO configuration and PDO mapping (module docstring, 3. and 4.); the drive with the units it holds
        (``DriveScaling.with_units``) after the configuration's were written."""
        cfg = self.config
        for index, sub, value in d.units:
            if sub:
                node.sdo[index][sub].raw = value
            else:
                node.sdo[index].raw = value
        d = d.with_units(lambda index, sub: node.sdo[index][sub].raw if sub else node.sdo[index].raw)
        limit = None if self.force_limits is None else self.force_limits.limits[self.actuated_names.index(d.joint)]
        node.sdo[0x6060].raw = MODES[cfg.mode]
        node.sdo[0x6072].raw = min(0xFFFF, 32767 if limit is None else abs(d.to_permille(limit)))
        node.sdo[0x605A].raw = QUICK_STOP_OPTION_HOLD
        node.sdo[0x1006].raw = int(round(self.dt * 1e6))                       # us
        if 0x1007 in node.object_dictionary:         # synchronous window length (optional, CiA 301): not used
            node.sdo[0x1007].raw = 0
        node.sdo[0x1017].raw = int(round(cfg.producer_time * 1000.0))          # ms
        # the drive consumes the master's heartbeat (CiA 301 0x1016: node id in bits 16-23, time in ms) and quick-stops
        # when it is lost in Operation enabled (CiA 402 0x6007): a master that hangs stops its drives
        node.sdo[0x1016][1].raw = cfg.master_node_id << 16 | int(round(cfg.consumer_time * 1000.0))
        node.sdo[0x6007].raw = ABORT_CONNECTION_QUICK_STOP
        for pdo, maps, used in ((node.rpdo, RPDOS, 1 if cfg.mode == "cst" else 2), (node.tpdo, TPDOS, 2)):
            pdo.read()
            for k, m in pdo.map.items():           # every PDO the drive has: the unused ones disabled
                m.clear()
                for index in maps[k - 1] if k <= len(maps) else ():
                    m.add_variable(index)
                m.trans_type, m.enabled = 1, k <= used
            pdo.save()
        return d

    def _on_heartbeat(self, i: int, state: int):
        if state == 0:
            self._booted[i].set()
        self._heartbeat[i] = self.clock()

    def _on_emcy(self, i: int, err):
        self.last_emcy[i] = (self.clock(), err.code, err.register, str(err))
        if err.code & 0xFF00 == COMMUNICATION_ERRORS:     # the drive lost SYNC or the master: it acted on its own
            self._lost[i] = err.code
        if err.code:                                # 0x0000: error reset / no error
            self.events.append(f"{self.drives[i].name}: EMCY 0x{err.code:04X} ({err.get_desc() or 'no class'}), "
                               f"error register 0x{err.register:02X}")

    def _on_tpdo(self, _map):
        node_id = _map.cob_id & 0x7F
        for i, d in enumerate(self.drives):
            if d.node_id == node_id:
                self._received[i] += 1

    # ------------------------------------------------------------------ one period
    def _hold_targets(self) -> list:
        """Per drive, the target that keeps it where it is (drive units): the torque it measures (CST), its actual
        position 0x6064 (CSP), zero velocity (CSV)."""
        if self.command_interface == "position":
            return [int(x) for x in self.position_raw]
        if self.command_interface == "velocity" or self._last is None:
            return [0] * len(self.drives)
        return [d.to_permille(x) for d, x in zip(self.drives, self._last.effort)]

    def _sync(self, controlwords, targets, time: float | None = None):
        """RPDOs (controlword, target in drive units) then SYNC: the drives apply them and answer."""
        self._received[:] = 0
        self.time = self.time + self.dt if time is None else float(time)
        for i, node in enumerate(self.nodes):
            r1 = node.rpdo[1]
            r1[0x6040].raw = int(controlwords[i])
            r1[0x6060].raw = MODES[self.config.mode]
            r1[0x6071].raw = int(targets[i]) if self.command_interface == "effort" else 0
            r1.transmit()
            if self.command_interface != "effort":
                r2 = node.rpdo[2]
                r2[0x607A].raw = int(targets[i]) if self.command_interface == "position" else int(self.position_raw[i])
                r2[0x60FF].raw = int(targets[i]) if self.command_interface == "velocity" else 0
                r2.transmit()
        self._controlword[:] = controlwords
        now = self.clock()
        if now - self._produced >= self.config.producer_time - 1e-9:   # the master heartbeat, from its loop
            self.network.send_message(0x700 + self.config.master_node_id, [NMT_OPERATIONAL])
            self._produced = now
        self.network.sync.transmit()
        self._meas = None

    def _collect(self) -> np.ndarray:
        """Wait for the TPDOs of the last SYNC; the mask of the drives that answered in full."""
        self.poll(lambda: (self._received >= 2).all(), self.response_timeout)
        return self._received >= 2

    def poll(self, done=None, timeout: float = 0.0) -> bool:
        """Take what the bus received (TPDOs, heartbeats, EMCY: their callbacks run here, in the caller's thread);
        with ``done``, wait for it (at most ``timeout`` wall seconds; whether it came). From NMT start on the master
        reads the bus only here, from its loop (``read``, ``recover``): no bus thread competes with the loop for the
        interpreter, and frames wait in the socket's buffer between two periods (heartbeats are timed when taken,
        at most a period late). During start-up, python-canopen's bus thread answers the SDO transfers."""
        bus, notify = self.network.bus, self.network.notify
        end = _time.monotonic() + timeout
        while True:
            msg = bus.recv(0.0)
            while msg is not None:
                notify(msg.arbitration_id, msg.data, msg.timestamp)
                msg = bus.recv(0.0)
            if done is None or done():
                return True
            left = end - _time.monotonic()
            if left <= 0:
                return False
            msg = bus.recv(left)
            if msg is not None:
                notify(msg.arbitration_id, msg.data, msg.timestamp)

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
            self.position_raw[i] = t2[0x6064].raw
            q[i], qd[i] = d.from_position(self.position_raw[i]), d.from_velocity(t2[0x606C].raw)
        if not self._recovering:
            self._supervise(fresh)
        t = self.time + self.dt if fresh.all() or prev is None else prev.time
        self._meas = self._last = JointMeasurement(t, q, qd, tau)
        return self._meas

    def _findings(self, fresh) -> list:
        """Per drive, what supervision finds wrong now (None: nothing): stale TPDOs, heartbeat older than the consumer
        time, fault, out of Operation enabled (Quick stop active is expected once the master quick-stopped)."""
        now, out = self.clock(), []
        expected = ENABLEABLE[1:] if self.safe_active else ENABLEABLE[2:]
        for i, d in enumerate(self.drives):
            age = now - self._heartbeat[i]
            state = drive_state(int(self.statusword[i]))
            if not fresh[i]:
                why = f"no TPDO within {self.response_timeout} s of the SYNC at {self.time:.6f} s (stale data)"
            elif age > self.config.consumer_time:
                why = f"heartbeat lost ({age:.4f} s since the last one > consumer time {self.config.consumer_time} s)"
            elif self.statusword[i] & FAULT_BIT:
                why = f"fault, error code 0x{int(self.error_code[i]):04X} ({state})"
            elif self._lost[i]:
                why = (f"EMCY 0x{self._lost[i]:04X}: it lost its connection and acted on its own (abort connection "
                       f"option 0x6007), now {state}")
            elif state not in expected:
                why = f"left operation enabled ({state})"
            else:
                why = None
            out.append(why)
        return out

    def drain_events(self) -> list:
        """The lines of ``events`` (drive problems, EMCY frames) since the last call, oldest first."""
        out = []
        while self.events:
            out.append(self.events.pop(0))
        return out

    def _supervise(self, fresh):
        """The first finding latches the quick stop; every new finding of a drive is an event (module docstring)."""
        for i, why in enumerate(self._findings(fresh)):
            if why is not None and why != self._problem[i]:
                text = f"{self.drives[i].name}: {why}"
                self.events.append(f"at {self.time:.6f} s: {text}")
                if self.safe_reason is None:
                    self.safe_reason = f"quick stop at {self.time:.6f} s: {text}"
            self._problem[i] = why

    @property
    def safe_active(self) -> bool:
        return self.safe_reason is not None

    def diagnostic_statuses(self) -> list:
        """One status per drive for /diagnostics (diagnostic_msgs: a DiagnosticStatus each): (name, level, message,
        values). Level "error": the drive faulted or supervision finds it wrong (heartbeat lost, stale TPDOs, a
        communication EMCY, out of Operation enabled on its own); "warn": held by the master's quick stop or not
        (yet) enabled; "ok": Operation enabled. Values: CiA 402 state, statusword, error code 0x603F, last EMCY, age
        of its last heartbeat, node id, joint."""
        out, now = [], self.clock()
        for i, (d, state) in enumerate(zip(self.drives, self.states)):
            emcy = self.last_emcy[i]
            last = "none" if emcy is None else f"0x{emcy[1]:04X} ({emcy[3]}) at {emcy[0]:.3f} s"
            problem = self._problem[i]
            level = ("error" if problem is not None or self.statusword[i] & FAULT_BIT else
                     "ok" if state == "operation enabled" and not self.safe_active else "warn")
            message = problem or (f"{state}; the master's quick stop: {self.safe_reason}" if self.safe_active
                                  else state)
            out.append((d.name, level, message,
                        {"joint": d.joint, "node_id": str(d.node_id), "cia402_state": state,
                         "statusword": f"0x{int(self.statusword[i]):04X}",
                         "error_code": f"0x{int(self.error_code[i]):04X}", "last_emcy": last,
                         "heartbeat_age_s": f"{now - self._heartbeat[i]:.3f}"}))
        return out

    def status(self) -> str:
        """Every drive's CiA 402 state, error code 0x603F and last EMCY in one line (the bringup summary)."""
        return "; ".join(f"{name}: {v['cia402_state']}, error code {v['error_code']}, last EMCY {v['last_emcy']}"
                         for name, _, _, v in self.diagnostic_statuses())

    @property
    def states(self) -> tuple:
        """The CiA 402 state of every drive as of the last read."""
        return tuple(drive_state(int(s)) for s in self.statusword)

    def write(self, command, time: float | None = None) -> None:
        """Command the drives (``command_interface``) and send SYNC. Efforts: checked (CommandCheck: NaN, size,
        beyond REFUSE_FACTOR x the limit raise and send nothing), saturated at the force limits (``saturated``),
        in per mille of the rated torque. Positions / velocities (CSP / CSV): finite, in increments. After a
        supervision event every drive gets quick stop instead (``safe_reason``), its target what holds it, until
        ``recover``."""
        self._require()
        if self.command_interface == "effort":
            tau = self._check(command)
            if self.force_limits is not None:
                tau, self.saturated = self.force_limits.apply(tau)
            targets = [d.to_permille(x) for d, x in zip(self.drives, tau)]
        else:
            x = check_vector(f"target {self.command_interface}s", command, len(self.drives), MAGNITUDE_LIMIT)
            convert = DriveScaling.to_position if self.command_interface == "position" else DriveScaling.to_velocity
            targets = [convert(d, v) for d, v in zip(self.drives, x)]
        if self.safe_active:
            self._sync([QUICK_STOP] * len(self.drives), self._hold_targets(), time)
        else:
            self._sync([ENABLE_OPERATION] * len(self.drives), targets, time)

    def _recovery_words(self) -> list:
        """One SYNC of ``recover``: the next transition of every drive, enable operation only when every drive can
        take it (module docstring)."""
        states = self.states
        if all(s in ENABLEABLE for s in states):
            return [ENABLE_OPERATION] * len(states)
        hold = {"switched on": SWITCH_ON, "quick stop active": QUICK_STOP, "operation enabled": QUICK_STOP}
        return [hold[s] if s in hold else next_controlword(s, int(c)) for s, c in zip(states, self._controlword)]

    def recover(self, time: float | None = None) -> JointMeasurement:
        """Back to Operation enabled along the CiA 402 state machine, every drive together (module docstring),
        clearing the latched quick stop. InvalidInputError, with the quick stop latched and no drive enabled, when a
        drive makes no transition within ``transition_timeout`` s (on ``clock``). ``time``: the caller's time of the
        first SYNC (None: one period after the last); on a real bus the SYNCs of the walk are stamped with the time
        passed on ``clock`` since, so the measurement it ends with is as recent as the caller's clock says."""
        self._require()
        if time is not None:
            self.time = float(time) - self.dt
        if self._last is None:                  # nothing heard yet: disable voltage is allowed in every state
            self._sync([DISABLE_VOLTAGE] * len(self.drives), [0] * len(self.drives))
        reason, self.safe_reason = self.safe_reason, None
        self._lost = [0] * len(self.drives)
        self._recovering = True
        try:
            meas = self._walk_states(reason)
        finally:
            self._recovering = False
        self._problem = [None] * len(self.drives)
        return meas

    def _walk_states(self, reason) -> JointMeasurement:
        moved, before = self.clock(), None
        wall, base = self.clock is _time.monotonic, self.time + self.dt - self.clock()
        while True:
            meas = self.read()
            states = self.states
            if all(s == "operation enabled" for s in states):
                return meas
            if states != before:
                moved, before = self.clock(), states
            elif self.clock() - moved > self.config.transition_timeout:
                stuck = {d.name: (s, f"0x{int(e):04X}") for d, s, e in zip(self.drives, states, self.error_code)
                         if s not in ENABLEABLE}
                self.safe_reason = (f"recovery failed after {self.config.transition_timeout} s without a transition: "
                                    f"{stuck} (state, error code); every other drive holds in quick stop"
                                    + (f"; first: {reason}" if reason else ""))
                self._sync([QUICK_STOP if s in ENABLEABLE[1:] else c for s, c in
                            zip(states, self._recovery_words())], self._hold_targets())
                self.read()
                raise InvalidInputError(self.safe_reason)
            if wall:                            # a real bus: SYNC at most once a communication cycle (0x1006)
                _time.sleep(self.dt)
            self._sync(self._recovery_words(), self._hold_targets(), base + self.clock() if wall else None)

    def _require(self):
        if self.network is None:
            raise InvalidInputError("the CANopen drives are not started: call start() first")

    def close(self) -> None:
        """Disable voltage on every drive (one last SYNC), NMT pre-operational (PDOs off), the bus closed."""
        if self.network is None:
            return
        try:
            if self._last is not None:                         # PDOs mapped: the drives answered a SYNC
                self._sync([DISABLE_VOLTAGE] * len(self.drives), self._hold_targets())
            for node in self.nodes:
                node.nmt.send_command(0x80)                    # pre-operational: PDOs off
        finally:
            self.network.disconnect()
            self.network = None
