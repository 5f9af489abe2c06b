"""What the CANopen interfaces (CanopenDrives, EmulatedCanopenRobot) add to the hardware contract (interface.py):
supervision of the master's quick stop, the ~/recover service, and their first-period enable.

When the master latches a quick stop (``safe_reason``: heartbeat lost, drive fault, stale TPDOs; canopen_drives.py)
every drive gets quick stop instead of the command and holds (quick stop option 6, CiA 402 0x605A), until ~/recover
brings them back to Operation enabled along the state machine. ``supervise`` reports the quick stop once (an error
line and the node's diagnostics key drives_quick_stop) and every later drive problem and EMCY as it comes; while it
holds, the node shows "drives quick stop" as its safe behaviour. ~/recover only asks: the state machine is walked by
the loop's thread, in the next ``supervise``, between two periods.
"""

from __future__ import annotations

import threading
from functools import cached_property

from ..errors import PkmError
from .interface import HardwareService, Supervision

TRIGGER = "std_srvs/srv/Trigger"
#: the safe behaviour the node shows while the drives hold in quick stop
QUICK_STOP = "drives quick stop"


class DriveSupervision:
    """The supervision hooks of a CANopen interface; it provides ``safe_reason``, ``drain_events()`` and
    ``recover()`` (module docstring)."""

    _quick_stop = None          # the reason last reported (a new one is logged once)

    @cached_property
    def _recover_request(self) -> threading.Event:
        return threading.Event()

    def services(self) -> tuple:
        return (HardwareService("~/recover", TRIGGER, self._on_recover),)

    def _on_recover(self, request, response):
        """~/recover: the drives back to Operation enabled after a quick stop (done by the next ``supervise``)."""
        if self._quick_stop is None:
            response.success, response.message = False, "the drives are not quick-stopped: nothing to recover"
            return response
        self._recover_request.set()
        response.success = True
        response.message = f"recovering the drives from: {self._quick_stop}"
        return response

    def supervise(self, time: float) -> Supervision | None:
        log, diagnostics = [], {}
        if self._recover_request.is_set():
            self._recover_request.clear()
            try:
                self.recover()
                log.append(("info", "drives recovered: operation enabled, the controller commands them again"))
            except PkmError as exc:
                log.append(("error", f"recover refused: {exc}"))
        log += [("error", f"drives: {event}") for event in self.drain_events()]  # later faults and EMCY too
        reason = self.safe_reason
        if reason is not None and reason != self._quick_stop:
            log.append(("error", f"drives quick-stopped, holding; call ~/recover once the cause is fixed: {reason}"))
            diagnostics["drives_quick_stop"] = reason
        elif reason is None and self._quick_stop is not None:
            diagnostics["drives_quick_stop"] = None
        self._quick_stop = reason
        if not log and not diagnostics and reason is None:
            return None
        return Supervision(tuple(log), diagnostics, QUICK_STOP if reason is not None else None)
