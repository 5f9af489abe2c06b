"""Guards of a node's services (ROS-free): a rate limit and the reset's motion check.

A node's service answers at most ``SERVICE_RATE`` calls a second on average (a burst of ``SERVICE_BURST``):
each service has a ``TokenBucket``; a call without a token is refused (success False, the reason), counted in
the node's diagnostics and logged at most once a second, so a flood of calls costs the node a refusal each and
cannot make it reset the robot dozens of times a second.

``/hardware/reset`` sends the robot home at sim time 0. It is refused while the robot moves (any measured actuated
speed above ``RESET_SPEED``: ``reset_refusal``), so a peer cannot yank a robot out of a motion; the operator who
means it calls ``/hardware/reset_force`` (rate-limited like every service).
"""

from __future__ import annotations

import time

import numpy as np

#: calls a second a service answers on average, and at once: an operator's or a script's pace (a reset, a
#: reload), far below the 62 calls/s of the flood in issue 22. The burst lets a script (the tests, `pkm call` in a
#: shell loop) make a few calls in a row: the suite calls one service at most 3 times in a row
SERVICE_RATE = 1.0
SERVICE_BURST = 5
#: m/s or rad/s: a measured actuated speed above it is a robot in motion (the approach's peak is 0.1 m/s, 0.5
#: rad/s; a held robot's measured speed is its encoders' noise, 1 um and 6 urad steps per 0.5 ms period at most
#: 2e-3 m/s and 1.2e-2 rad/s on the shipped CANopen drives: the threshold is above both)
RESET_SPEED = 0.02


class TokenBucket:
    """``burst`` tokens, refilled at ``rate`` a second; a call takes one or is refused (``take``).

    clock: seconds of a monotonic clock (a test drives its own); ``refused`` counts the refusals."""

    def __init__(self, rate: float = SERVICE_RATE, burst: int = SERVICE_BURST, clock=time.monotonic):
        if not (rate > 0 and burst >= 1):
            raise ValueError(f"token bucket needs rate > 0 and burst >= 1, got rate {rate}, burst {burst}")
        self.rate = float(rate)
        self.burst = float(burst)
        self.clock = clock
        self.tokens = self.burst
        self.refused = 0
        self._last = clock()

    def take(self) -> bool:
        now = self.clock()
        self.tokens = min(self.burst, self.tokens + max(now - self._last, 0.0) * self.rate)
        self._last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        self.refused += 1
        return False

    def refusal(self) -> str:
        return f"refused: more than {self.rate:g} calls/s on average (a burst of {self.burst:g}); call again later"


def reset_refusal(velocity, names=(), threshold: float = RESET_SPEED) -> str | None:
    """Why a reset is refused while the robot moves (the measured actuated velocity; ``names`` of its joints), or
    None when it may reset (no measurement yet is a robot at rest: it has not started)."""
    if velocity is None:
        return None
    v = np.abs(np.asarray(velocity, float))
    if v.size and not np.all(v <= threshold):          # NaN counts as moving
        i = int(np.argmax(np.where(np.isfinite(v), v, np.inf)))
        joint = names[i] if i < len(names) else f"#{i}"
        return (f"refused: the robot moves (actuated joint {joint} at {v[i]:.3g} m/s or rad/s, above {threshold:g}); "
                "stop it first, or call /hardware/reset_force")
    return None
