"""The guards of the nodes' services, ROS-free (control/services.py): the token bucket's rate limit on a driven
clock, and the reset's motion check."""

import numpy as np
import pytest

from pkm_control.control.services import RESET_SPEED, SERVICE_BURST, SERVICE_RATE, TokenBucket, reset_refusal


class Clock:
    def __init__(self):
        self.t = 100.0

    def __call__(self):
        return self.t


def test_a_flood_gets_the_burst_then_the_rate():
    """62 calls/s for 15 s (issue 22's flood): the burst, then one call per 1/rate s; the rest refused."""
    clock = Clock()
    bucket = TokenBucket(clock=clock)
    accepted = 0
    for _ in range(62 * 15):
        accepted += bucket.take()
        clock.t += 1 / 62
    # tokens: the burst, plus rate x (the calls' span, 15 s less one interval); the last may not be whole
    span = (62 * 15 - 1) / 62
    assert accepted == SERVICE_BURST + int(SERVICE_RATE * span)
    assert bucket.refused == 62 * 15 - accepted


def test_the_bucket_refills_to_its_burst_and_no_further():
    clock = Clock()
    bucket = TokenBucket(rate=2.0, burst=4, clock=clock)
    assert [bucket.take() for _ in range(5)] == [True] * 4 + [False]
    clock.t += 0.5                     # one token at 2/s
    assert [bucket.take() for _ in range(2)] == [True, False]
    clock.t += 1000.0                  # a long pause fills it to the burst only
    assert sum(bucket.take() for _ in range(10)) == 4
    clock.t -= 50.0                    # a clock that steps back gives no tokens (and takes none)
    assert not bucket.take()
    assert "more than 2 calls/s" in bucket.refusal()
    with pytest.raises(ValueError):
        TokenBucket(rate=0.0)


def test_a_reset_is_refused_while_the_robot_moves():
    names = ["a", "b", "c"]
    assert reset_refusal(None, names) is None                     # no measurement yet: not started
    assert reset_refusal(np.zeros(3), names) is None
    assert reset_refusal([RESET_SPEED, -RESET_SPEED, 0.0], names) is None
    why = reset_refusal([0.0, -0.1, 0.05], names)
    assert "actuated joint b at 0.1" in why and "/hardware/reset_force" in why
    assert "joint c" in reset_refusal([0.0, 0.0, np.nan], names)  # a NaN speed is not a robot at rest
