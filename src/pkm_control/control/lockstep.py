"""The lockstep handshake's watchdog (ROS-free): a bounded re-send of a lost message and an honest report of a stall.

In lockstep two participants wait for each other: the robot publishes its state k and waits for the command; the
controller waits for the state, computes the command, sends it and waits for state k+1 (the same between the
controller's /clock and the streams of references it waits for). One lost message stalls both for ever, every node
still busy and "ok". ``LockstepWatch`` is what each participant keeps of that exchange:

* ``progress(now)``: the exchange moved on (a period ran, a command came);
* ``sent(now)``: a message went out whose answer is awaited; ``resend_due(now)``: ``resend_after`` wall seconds
  passed since then without progress, re-send the last message now (then again after as long, at most
  ``max_resends`` times in one wait). The receiver must take a message a second time without effect: the
  lockstep messages carry the stamp of their instant (a state already handled is not handled again; a command,
  the stamp of the state it answers: ``CommandStamps``), and the controller re-sends its command only when the
  robot re-sends the state the command answered and its own command is ``resend_after`` old. A command in flight
  longer than that (a loaded machine: one waiting in the robot's queue) arrives twice; applied twice, it stepped the
  plant once more with the old command, and every later command came one period late;
* ``waiting_for``: what it waits for, in the field's words (which topic from which peer, for which instant);
* ``report(now)``: (level, message): OK while the exchange moves, WARN after ``warn_after`` wall seconds without
  progress, ERROR after ``error_after``, the message naming what it waits for.

``unmatched(counts)`` is the start-up gate: the ends of the peers' topics that have not matched yet (a message
published before its subscription matched is lost on a volatile topic), so that the first step waits for them.
"""

from __future__ import annotations

from ..errors import InvalidInputError

OK, WARN, ERROR = "ok", "warn", "error"
#: s (wall) without progress before a participant re-sends its last lockstep message (and never sooner than half
#: of lockstep_timeout: a message merely slow is not duplicated)
RESEND_AFTER = 0.5
#: s (wall) without lockstep progress before the diagnostics say WARN, then ERROR (`pkm bringup --exit-when-done`
#: then fails); the start-up of the other nodes (imports, models: ~5 s alone, ~15 s on a loaded 2-core machine) is
#: inside this budget
STALL_WARN = 10.0
STALL_ERROR = 45.0
#: how joint_controller's waiting_for begins while its loop waits for its recorders' acknowledgements
RECORDER_WAIT = "the recorders' acknowledgement"
MAX_RESENDS = 100


class LockstepWatch:
    """The progress of one lockstep participant (module docstring). Times are wall seconds from one monotonic
    clock, passed in (``now``), so a test drives it without waiting."""

    def __init__(self, now: float, resend_after: float = RESEND_AFTER, warn_after: float = STALL_WARN,
                 error_after: float = STALL_ERROR, max_resends: int = MAX_RESENDS):
        if not resend_after > 0:
            raise InvalidInputError(f"resend_after = {resend_after} s must be > 0")
        if not 0 < warn_after < error_after:
            raise InvalidInputError(f"warn_after = {warn_after} s and error_after = {error_after} s must satisfy "
                                    "0 < warn_after < error_after")
        if not max_resends >= 0:
            raise InvalidInputError(f"max_resends = {max_resends} must be >= 0")
        self.resend_after = float(resend_after)
        self.warn_after = float(warn_after)
        self.error_after = float(error_after)
        self.max_resends = int(max_resends)
        self.waiting_for = "the first lockstep message"
        self.resends = 0                 # in all
        self._progress = now             # the last progress (or the start)
        self._sent = None                # when the message awaiting an answer went out (or was re-sent)
        self._resends_this_wait = 0

    def progress(self, now: float) -> None:
        self._progress = now
        self._sent = None
        self._resends_this_wait = 0

    def sent(self, now: float) -> None:
        self._sent = now

    def resend_due(self, now: float) -> bool:
        """True (and counted as a re-send at ``now``) when the message sent awaits its answer for resend_after."""
        if self._sent is None or now - self._sent < self.resend_after or self._resends_this_wait >= self.max_resends:
            return False
        self._sent = now
        self._resends_this_wait += 1
        self.resends += 1
        return True

    def idle(self, now: float) -> float:
        """Wall seconds since the last progress."""
        return now - self._progress

    def level(self, now: float) -> str:
        idle = self.idle(now)
        return ERROR if idle >= self.error_after else WARN if idle >= self.warn_after else OK

    def report(self, now: float) -> tuple[str, str]:
        level = self.level(now)
        if level == OK:
            return OK, "ok"
        return level, f"no lockstep progress for {self.idle(now):.1f} s (wall): waiting for {self.waiting_for}"


class CommandStamps:
    """The robot's side of a re-sent command (module docstring): ``copy(stamp)`` is True for a command stamped as the
    one applied last (the stamp of the state it answers, ns; None: a controller that stamps none, taken as it comes).
    The controller re-sends only its last command, and a copy comes before its next one (one writer, in order), so
    equality suffices; a command of another timeline (late across a reset) is no copy. ``applied(stamp)`` after the
    robot stepped with it; ``reset()`` with the robot's time. Copies are counted in ``copies``."""

    def __init__(self):
        self.copies = 0
        self._applied = None

    def copy(self, stamp: int | None) -> bool:
        if stamp is None or stamp != self._applied:
            return False
        self.copies += 1
        return True

    def applied(self, stamp: int | None) -> None:
        self._applied = stamp

    def reset(self) -> None:
        self._applied = None


def unmatched(counts: dict) -> list[str]:
    """The names (``counts``: name -> matched peers, e.g. a publisher's subscription count) with no match yet."""
    return [name for name, n in counts.items() if n == 0]
